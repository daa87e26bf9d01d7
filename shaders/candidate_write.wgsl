// candidate_write: the pairs of candidate_count, as [min, max] segment indices, written from
// cand_offsets[i] (scanned) on, those within counters.candidate_pairs.capacity; thread 0 records
// the total cand_offsets[capacity of the entries] and its overflow flag in
// counters.candidate_pairs. Reads the first min(count, capacity) entries only (the live ones).
// CPU twin: contact::grid::candidate_write.
// One thread per slot of counters.grid_entries.capacity.
// Loop bound: MAX_CELL_RUN = 4096 later entries of the cell (as candidate_count).

#import layout
#import grid

@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read> grid_entries: array<KeyValue>;
@group(0) @binding(2) var<storage, read> seg_box: array<SegmentBox>;
@group(0) @binding(3) var<storage, read> cand_offsets: array<u32>;
@group(0) @binding(4) var<storage, read_write> candidates: array<vec2<u32>>;
@group(0) @binding(5) var<storage, read_write> counters: Counters;

// The workgroup's copy of counters.grid_entries.count (one atomic read per workgroup, not one per
// thread: they all read one address).
var<workgroup> wg_entries: u32;

@compute @workgroup_size(256)
fn candidate_write(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
    @builtin(local_invocation_index) lid: u32,
) {
    if lid == 0u {
        wg_entries = atomicLoad(&counters.grid_entries.count);
    }
    workgroupBarrier();
    let i = thread_index(wid, nwg, lid, 256u);
    let cap = counters.grid_entries.capacity;
    let cap_c = counters.candidate_pairs.capacity;
    if i == 0u {
        let total = cand_offsets[cap];
        atomicStore(&counters.candidate_pairs.count, total);
        if total > cap_c {
            atomicStore(&counters.candidate_pairs.overflow, 1u);
        }
    }
    // The live entries: the sort leaves the slots past them as they were.
    let n = min(wg_entries, cap);
    if i >= n {
        return;
    }
    let e = grid_entries[i];
    if e.key_hi == GRID_SENTINEL {
        return;
    }
    let ba = seg_box[e.value];
    var k = cand_offsets[i];
    var j = i + 1u;
    for (var steps = 0u; j < n && steps < MAX_CELL_RUN; steps = steps + 1u) {
        let o = grid_entries[j];
        // As candidate_count: the run of equal lo, its entries of other cells skipped.
        if o.key_lo != e.key_lo || o.key_hi == GRID_SENTINEL {
            break;
        }
        if o.key_hi == e.key_hi && pair_here(e, ba, seg_box[o.value]) {
            if k < cap_c {
                candidates[k] = vec2<u32>(min(e.value, o.value), max(e.value, o.value));
            }
            k = k + 1u;
        }
        j = j + 1u;
    }
}
