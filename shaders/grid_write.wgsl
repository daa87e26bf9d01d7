// grid_write: entry slot i of the grid's capacity gets entry i — (cell key, segment) in segment
// order, a segment's cells x-fastest — found by binary search of the scanned grid_offsets; slots
// past the total grid_offsets[num_segments] get the sentinel key (all ones), so the sort keeps
// them last. Thread 0 records the total in counters.grid_entries.count and its overflow flag
// (total > capacity: entries past the capacity are dropped; the host grows and reruns).
// CPU twin: contact::grid::grid_write. One thread per slot of counters.grid_entries.capacity.
// Loop bound: the binary search, ceil(log2(num_segments + 1)) ≤ 32 steps.

#import layout
#import grid

@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read> seg_box: array<SegmentBox>;
@group(0) @binding(2) var<storage, read> grid_offsets: array<u32>;
@group(0) @binding(3) var<storage, read_write> grid_entries: array<KeyValue>;
@group(0) @binding(4) var<storage, read_write> counters: Counters;

@compute @workgroup_size(256)
fn grid_write(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
    @builtin(local_invocation_index) lid: u32,
) {
    let i = thread_index(wid, nwg, lid, 256u);
    let n = params.num_segments;
    let total = grid_offsets[n];
    let cap = counters.grid_entries.capacity;
    if i == 0u {
        atomicStore(&counters.grid_entries.count, total);
        if total > cap {
            atomicStore(&counters.grid_entries.overflow, 1u);
        }
    }
    if i >= cap {
        return;
    }
    if i >= total {
        grid_entries[i] = KeyValue(GRID_SENTINEL, GRID_SENTINEL, GRID_SENTINEL, 0u);
        return;
    }
    // The largest s with grid_offsets[s] <= i (grid_offsets[0] = 0 <= i < grid_offsets[n]).
    var lo = 0u;
    var hi = n;
    for (var step = 0u; step < 32u && hi - lo > 1u; step = step + 1u) {
        let mid = (lo + hi) / 2u;
        if grid_offsets[mid] <= i {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    let b = seg_box[lo];
    let j = i - grid_offsets[lo];
    let ex = u32(b.cell_hi.x - b.cell_lo.x + 1);
    let ey = u32(b.cell_hi.y - b.cell_lo.y + 1);
    let c = vec3<i32>(
        b.cell_lo.x + i32(j % ex),
        b.cell_lo.y + i32(j / ex % ey),
        b.cell_lo.z + i32(j / (ex * ey)),
    );
    let k = pack_key(c);
    grid_entries[i] = KeyValue(k.x, k.y, lo, 0u);
}
