// sched_grid_write: slot i of the scheduler grid's capacity gets item i — (cell hash, cell index j
// in the segment's box, segment), segments in order, a segment's cells x-fastest — its segment found
// by binary search of the scanned sched_grid_offsets; slots past the total
// sched_grid_offsets[num_segments] get the sentinel (all ones), which the stable sort keeps last.
// Thread 0 records the total in sched_counters.grid.count and its overflow flag (total > capacity:
// items past the capacity are dropped; the host grows and reruns), and plans the counted sort of
// the items from it (plan_counted into plan_out: no count_plan dispatch).
// CPU twin: sched::sched_grid_write. One thread per slot of sched_counters.grid.capacity.
// Loop bound: the binary search, ceil(log2(num_segments + 1)) ≤ 32 steps; thread 0's plan, 8
// passes and 4 scan levels (plan_counted).

#import layout
#import sched

@group(0) @binding(0) var<uniform> sched: SchedUniform;
@group(0) @binding(1) var<storage, read> cells: array<CellBox>;
@group(0) @binding(2) var<storage, read> sched_grid_offsets: array<u32>;
@group(0) @binding(3) var<storage, read_write> sched_grid: array<KeyValue>;
@group(0) @binding(4) var<storage, read_write> sched_counters: SchedCounters;
@group(0) @binding(5) var<uniform> plan_spec: CountPlan;
@group(0) @binding(6) var<storage, read_write> plan_out: array<u32>;

#import counted_plan

@compute @workgroup_size(256)
fn sched_grid_write(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
    @builtin(local_invocation_index) lid: u32,
) {
    let i = thread_index(wid, nwg, lid, 256u);
    let n = sched.num_segments;
    let total = sched_grid_offsets[n];
    let cap = sched_counters.grid.capacity;
    if i == 0u {
        atomicStore(&sched_counters.grid.count, total);
        if total > cap {
            atomicStore(&sched_counters.grid.overflow, 1u);
        }
        plan_counted(total);
    }
    if i >= cap {
        return;
    }
    if i >= total {
        sched_grid[i] = KeyValue(SCHED_SENTINEL, SCHED_SENTINEL, SCHED_SENTINEL, 0u);
        return;
    }
    // The largest s with sched_grid_offsets[s] <= i (offsets[0] = 0 <= i < offsets[n]).
    var lo = 0u;
    var hi = n;
    for (var step = 0u; step < 32u && hi - lo > 1u; step = step + 1u) {
        let mid = (lo + hi) / 2u;
        if sched_grid_offsets[mid] <= i {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    let j = i - sched_grid_offsets[lo];
    sched_grid[i] = KeyValue(cell_hash(box_cell(cells[lo], j)), j, lo, 0u);
}
