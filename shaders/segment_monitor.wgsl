// segment_monitor: per spline segment, the cell box it keeps, with hysteresis (box_kept, twin
// CellBox::kept): last step's, prev_cells[s], while the box aabb_raster_movement wrote into cells[s]
// (padded by r) is valid and within it, else that box with its margin bits applied, written back
// into cells[s]; then its SegmentMotion record: the movement mv1, the reference
// change of movement mv2_ref (reset to mv2, and the segment monitored, when mv2 left it by more than
// ω/2; at the first step, mv2 itself), and whether it left a cell (prev_cells not within the box
// kept). Counts into sched_counters.monitored / .left, and the segments that entered a cell (the
// box kept not within prev_cells) into .entered, each listed in movers at the slot its count took
// (the first NEWCOMER_LIST_MAX; the order is the threads', which nothing downstream depends on:
// newcomer_list_write's candidates are sorted). CPU twin: sched::segment_monitor (in segment
// order). One thread per segment. Loop bound: 3 axes (drift), fixed.

#import layout
#import sched

@group(0) @binding(0) var<uniform> sched: SchedUniform;
@group(0) @binding(1) var<storage, read> mv1: array<Interval>;
@group(0) @binding(2) var<storage, read> mv2: array<Interval>;
@group(0) @binding(3) var<storage, read_write> cells: array<CellBox>;
@group(0) @binding(4) var<storage, read> prev_cells: array<CellBox>;
@group(0) @binding(5) var<storage, read_write> motion: array<SegmentMotion>;
@group(0) @binding(6) var<storage, read_write> sched_counters: SchedCounters;
@group(0) @binding(7) var<storage, read_write> movers: array<u32>;

@compute @workgroup_size(256)
fn segment_monitor(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
    @builtin(local_invocation_index) lid: u32,
) {
    let s = thread_index(wid, nwg, lid, 256u);
    if s >= sched.num_segments {
        return;
    }
    var m = motion[s];
    let cur = mv2[s];
    var mon = 0u;
    if sched.bins_due == 0xFFFFFFFFu {
        m.mv2_ref = cur;
    } else if (sched.switches & SCHED_NO_MONITORING) == 0u
        && drift_from(cur, m.mv2_ref) > 0.5 * sched.omega {
        m.mv2_ref = cur;
        mon = 1u;
    }
    m.mv1 = mv1[s];
    m.mon = mon;
    let prev = prev_cells[s];
    let kept = box_kept(cells[s], prev);
    cells[s] = kept;
    m.left = select(1u, 0u, box_within(prev, kept));
    motion[s] = m;
    if mon != 0u {
        atomicAdd(&sched_counters.monitored, 1u);
    }
    if m.left != 0u {
        atomicAdd(&sched_counters.left, 1u);
    }
    if !box_within(kept, prev) {
        let slot = atomicAdd(&sched_counters.entered, 1u);
        if slot < NEWCOMER_LIST_MAX {
            movers[slot] = s;
        }
    }
}
