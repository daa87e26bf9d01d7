// newcomer_count: grid item i (of the sorted scheduler grid's first min(count, capacity) items) whose
// cell is not in its segment's previous cell box is a newcomer: it counts the other segments of that
// cell — the items of its hash run (binary search) with the same cell — whose pair it writes
// (newcomer_emits: one item a pair, at its first cell new to either) into newcomer_offsets[i]
// (0 for the other items; the slots past the items are left as they were: newcomer_write reads
// none), and itself into sched_counters.newcomers; a hash run longer than SCHED_MAX_CELL_RUN raises
// ERROR_GRID_CELL_FULL and lowers sched_counters.first_bad_segment to the item's segment. CPU
// twin: sched::newcomer_count. One thread per grid slot, plus one (the grid capacity's); a
// workgroup wholly past the items returns at once and writes no group sum (newcomer_write's
// workgroups there do not read them).
// Loop bound: 32 halvings + SCHED_MAX_CELL_RUN (4096) items of the run, then write_scan_group's
// 8 halving steps.
// Each workgroup also writes the sum of its threads' counts into scan_groups
// (shared/scan_groups.wgsl), from which newcomer_write places each item's pairs (group_prefix:
// no scan between the two), and adds it to sched_counters.cand.count (0 at the step's start;
// integer atomics, so the total is the same whatever the order): the candidates' total.

#import layout
#import sched

@group(0) @binding(0) var<uniform> sched: SchedUniform;
@group(0) @binding(1) var<storage, read> cells: array<CellBox>;
@group(0) @binding(2) var<storage, read> prev_cells: array<CellBox>;
@group(0) @binding(3) var<storage, read> sched_grid: array<KeyValue>;
@group(0) @binding(4) var<storage, read_write> newcomer_offsets: array<u32>;
@group(0) @binding(5) var<storage, read_write> sched_counters: SchedCounters;
@group(0) @binding(6) var<storage, read_write> scan_groups: array<u32>;

#import sched_grid
#import scan_groups

// The live items, read once by the workgroup.
var<workgroup> wg_items: u32;

// Item i's newcomer count (of n items), written to newcomer_offsets[i] (nothing past the items).
fn newcomer_count_one(i: u32, n: u32) -> u32 {
    if i >= n {
        return 0u;
    }
    let kv = sched_grid[i];
    let s = kv.value;
    let cs = cells[s];
    let ps = prev_cells[s];
    let c = box_cell(cs, kv.key_hi);
    if box_contains(ps, c) {
        newcomer_offsets[i] = 0u;
        return 0u;
    }
    atomicAdd(&sched_counters.newcomers, 1u);
    let h = kv.key_lo;
    let lo = grid_run_start(h, n);
    let end = min(n, lo + SCHED_MAX_CELL_RUN);
    var count = 0u;
    var k = lo;
    for (; k < end; k = k + 1u) {
        let o = sched_grid[k];
        if o.key_lo != h {
            break;
        }
        let ct = cells[o.value];
        if o.value != s && all(box_cell(ct, o.key_hi) == c)
            && newcomer_emits(s, o.value, c, cs, ps, ct, prev_cells[o.value]) {
            count = count + 1u;
        }
    }
    if k == end && end < n && sched_grid[end].key_lo == h {
        atomicOr(&sched_counters.errors, ERROR_GRID_CELL_FULL);
        atomicMin(&sched_counters.first_bad_segment, s);
    }
    newcomer_offsets[i] = count;
    return count;
}

@compute @workgroup_size(256)
fn newcomer_count(
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
    if g * 256u >= n {
        return;
    }
    let v = newcomer_count_one(thread_index(wid, nwg, lid, 256u), n);
    let group = write_scan_group(wid, nwg, lid, v);
    if lid == 0u && group != 0u {
        atomicAdd(&sched_counters.cand.count, group);
    }
}
