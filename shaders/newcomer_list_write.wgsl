// newcomer_list_write: the listed newcomer search, for a step on which few segments entered a cell
// (sched_counters.entered ≤ NEWCOMER_LIST_MAX, listed in movers by segment_monitor): in place of
// the grid and newcomer_count / newcomer_write, each segment t tests its kept box (cells[t])
// against each listed segment m ≠ t: the pair is a candidate when the two boxes share a cell that
// is not in m's previous box (prev_cells[m]), which is when the grid would have found t in a cell
// new to m. Each candidate key (cand_key, as newcomer_write's) is appended to sched_cand at the slot
// an atomicAdd on sched_counters.cand.count takes (overflow flagged past the capacity); the order
// varies from run to run, and the counted sort after it puts the keys in order, so the step's new
// entries do not depend on it. A pair of two listed segments is found from both sides (the sort
// and newcomer_keep make them one; the grid writes each pair once). With more than
// NEWCOMER_LIST_MAX listed, nothing is written: the step must run with the grid, which the host
// reads from the count. CPU twin: sched::newcomer_list_write. One thread per segment; the
// workgroup reads the listed count once (not every thread: one address).
// Loop bound: NEWCOMER_LIST_MAX (256) listed segments.

#import layout
#import sched

@group(0) @binding(0) var<uniform> sched: SchedUniform;
@group(0) @binding(1) var<storage, read> cells: array<CellBox>;
@group(0) @binding(2) var<storage, read> prev_cells: array<CellBox>;
@group(0) @binding(3) var<storage, read> movers: array<u32>;
@group(0) @binding(4) var<storage, read_write> sched_cand: array<KeyValue>;
@group(0) @binding(5) var<storage, read_write> sched_counters: SchedCounters;

// The workgroup's copy of sched_counters.entered.
var<workgroup> wg_entered: u32;

@compute @workgroup_size(256)
fn newcomer_list_write(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
    @builtin(local_invocation_index) lid: u32,
) {
    if lid == 0u {
        wg_entered = atomicLoad(&sched_counters.entered);
    }
    workgroupBarrier();
    let t = thread_index(wid, nwg, lid, 256u);
    let n = wg_entered;
    if t >= sched.num_segments || n > NEWCOMER_LIST_MAX {
        return;
    }
    let ct = cells[t];
    if !box_valid(ct) {
        return;
    }
    let kb = cand_key_bits(sched.num_segments);
    let ccap = sched_counters.cand.capacity;
    for (var i = 0u; i < n; i = i + 1u) {
        let m = movers[i];
        let cm = cells[m];
        if m == t || !box_intersects(cm, ct) {
            continue;
        }
        var shared_cells = cm;
        shared_cells.lo = vec4<i32>(max(cm.lo.xyz, ct.lo.xyz), 1);
        shared_cells.hi = vec4<i32>(min(cm.hi.xyz, ct.hi.xyz), 0);
        if box_within(shared_cells, prev_cells[m]) {
            continue;
        }
        let slot = atomicAdd(&sched_counters.cand.count, 1u);
        if slot < ccap {
            sched_cand[slot] = cand_key(min(m, t), max(m, t), kb);
        } else {
            atomicStore(&sched_counters.cand.overflow, 1u);
        }
    }
}
