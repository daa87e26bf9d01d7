// newcomer_write: the pairs of newcomer_count (items with a nonzero count are the newcomers with
// partners; each writes the partners newcomer_emits names, as newcomer_count counted them) as
// candidate keys (cand_key: a << k | b, a < b) into sched_cand, those below
// sched_counters.cand.capacity, each item's from its first slot on: the counts of the items
// before it, from the group sums newcomer_count wrote into scan_groups and a workgroup scan of the
// counts (group_prefix; no scan dispatch between the two). The slots past the total (which
// newcomer_count added into sched_counters.cand.count) are left as they were: the counted sort and
// its readers stop at the total. Thread 0 raises the total's overflow flag and plans
// newcomer_keep's and newcomer_compact's grid over the candidates from it (plan_counted_grids into
// plan_out: no count_plan dispatch). CPU twin: sched::newcomer_write. One thread per grid slot
// (the grid capacity's); a workgroup wholly past the items, but the first (whose thread 0 plans),
// returns before the prefix, whose loads grow with the workgroup's index.
// Loop bound: 32 halvings + SCHED_MAX_CELL_RUN (4096) items of the run; 128 group-sum loads (a
// binding holds at most 2^27 / 16 = 2^23 grid items, 32,768 groups), 8 + 8 (group_prefix);
// plan_counted_grids is unrolled.

#import layout
#import sched
#import workgroup_sum
#import workgroup_scan
#import group_prefix

@group(0) @binding(0) var<uniform> sched: SchedUniform;
@group(0) @binding(1) var<storage, read> cells: array<CellBox>;
@group(0) @binding(2) var<storage, read> prev_cells: array<CellBox>;
@group(0) @binding(3) var<storage, read> sched_grid: array<KeyValue>;
@group(0) @binding(4) var<storage, read> newcomer_offsets: array<u32>;
@group(0) @binding(5) var<storage, read> scan_groups: array<u32>;
@group(0) @binding(6) var<storage, read_write> sched_cand: array<KeyValue>;
@group(0) @binding(7) var<storage, read_write> sched_counters: SchedCounters;
@group(0) @binding(8) var<uniform> plan_spec: CountPlan;
@group(0) @binding(9) var<storage, read_write> plan_out: array<u32>;

#import sched_grid
#import counted_plan

// The live items, read once by the workgroup.
var<workgroup> wg_items: u32;

@compute @workgroup_size(256)
fn newcomer_write(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
    @builtin(local_invocation_index) lid: u32,
) {
    if lid == 0u {
        wg_items = grid_items();
    }
    // (One value for the whole workgroup, so that its return keeps the barriers below in uniform
    // control flow.)
    let n = workgroupUniformLoad(&wg_items);
    let g = wid.y * nwg.x + wid.x;
    if g > 0u && g * 256u >= n {
        return;
    }
    let i = thread_index(wid, nwg, lid, 256u);
    let ccap = sched_counters.cand.capacity;
    if i == 0u {
        let total = atomicLoad(&sched_counters.cand.count);
        if total > ccap {
            atomicStore(&sched_counters.cand.overflow, 1u);
        }
        plan_counted_grids(total);
    }
    var count = 0u;
    if i < n {
        count = newcomer_offsets[i];
    }
    // Every thread of the workgroup reaches the prefix (it has barriers).
    var slot = group_prefix(g, lid, count);
    if count == 0u {
        return;
    }
    let kb = cand_key_bits(sched.num_segments);
    let kv = sched_grid[i];
    let s = kv.value;
    let cs = cells[s];
    let ps = prev_cells[s];
    let c = box_cell(cs, kv.key_hi);
    let h = kv.key_lo;
    let lo = grid_run_start(h, n);
    let end = min(n, lo + SCHED_MAX_CELL_RUN);
    for (var k = lo; k < end; k = k + 1u) {
        let o = sched_grid[k];
        if o.key_lo != h {
            break;
        }
        let ct = cells[o.value];
        if o.value != s && all(box_cell(ct, o.key_hi) == c)
            && newcomer_emits(s, o.value, c, cs, ps, ct, prev_cells[o.value]) {
            if slot < ccap {
                sched_cand[slot] = cand_key(min(s, o.value), max(s, o.value), kb);
            }
            slot = slot + 1u;
        }
    }
}
