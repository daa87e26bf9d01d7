// candidate_count: cand_offsets[i] = the candidate segment pairs that entry i of the sorted grid
// entries (sorted by their key's lo word; the first min(count, capacity) are live, 0 for the slots
// past them) emits: pairs with each later entry of the same cell (the
// same lo and hi, within the run of equal lo) whose padded box overlaps its own,
// counted only in the lowest cell both boxes cover (grid.wgsl pair_here), so every pair is
// emitted once. cand_offsets[capacity] = 0 (the scan's trailing element). A cell run longer than
// MAX_CELL_RUN raises ERROR_GRID_CELL_FULL. CPU twin: contact::grid::candidate_count.
// One thread per slot of counters.grid_entries.capacity, plus one.
// Loop bound: MAX_CELL_RUN = 4096 later entries of the run, then write_scan_group's 8 halving
// steps.
// Each workgroup also writes the sum of its threads' counts into scan_groups
// (shared/scan_groups.wgsl): the scan is grouped, its block sums written here.

#import layout
#import grid
#import scan_groups

@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read> grid_entries: array<KeyValue>;
@group(0) @binding(2) var<storage, read> seg_box: array<SegmentBox>;
@group(0) @binding(3) var<storage, read_write> cand_offsets: array<u32>;
@group(0) @binding(4) var<storage, read_write> counters: Counters;
@group(0) @binding(5) var<storage, read_write> scan_groups: array<u32>;

// The workgroup's copy of counters.grid_entries.count (one atomic read per workgroup, not one per
// thread: they all read one address).
var<workgroup> wg_entries: u32;

// Slot i's candidate count, written to cand_offsets[i] (none past the capacity).
fn candidate_count_one(i: u32) -> u32 {
    let cap = counters.grid_entries.capacity;
    if i >= cap {
        if i == cap {
            cand_offsets[i] = 0u;
        }
        return 0u;
    }
    // The live entries: the sort leaves the slots past them as they were.
    let n = min(wg_entries, cap);
    var count = 0u;
    if i < n && grid_entries[i].key_hi != GRID_SENTINEL {
        let e = grid_entries[i];
        let ba = seg_box[e.value];
        var j = i + 1u;
        for (var steps = 0u; j < n; steps = steps + 1u) {
            let o = grid_entries[j];
            // The run of equal lo (the sort key) ends at another lo or at the sentinels; its
            // entries of another cell (other hi) are skipped.
            if o.key_lo != e.key_lo || o.key_hi == GRID_SENTINEL {
                break;
            }
            if steps == MAX_CELL_RUN {
                atomicOr(&counters.errors, ERROR_GRID_CELL_FULL);
                break;
            }
            if o.key_hi == e.key_hi && pair_here(e, ba, seg_box[o.value]) {
                count = count + 1u;
            }
            j = j + 1u;
        }
    }
    cand_offsets[i] = count;
    return count;
}

@compute @workgroup_size(256)
fn candidate_count(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
    @builtin(local_invocation_index) lid: u32,
) {
    if lid == 0u {
        wg_entries = atomicLoad(&counters.grid_entries.count);
    }
    workgroupBarrier();
    let v = candidate_count_one(thread_index(wid, nwg, lid, 256u));
    write_scan_group(wid, nwg, lid, v);
}
