// sched_merged: the sizes of a scheduler GPU step once its table is kept and its new entries and
// releases counted (sched_sizes' phase 1, which the ACL step makes in release_scan_sizes): the new
// entries that fit (fresh and entry capacities, overflow flagged) into sched_p1.num_fresh, sched_p2
// = sched_step with the merged length (also sched_state[0], the next step's table length), and
// `slots`, the releases' segment-pair slots (the scan's total), into sched_counters.release (overflow
// above its capacity). The importing kernel declares `sched_step` (uniform), `sched_counters`,
// `sched_state`, `sched_p1` and `sched_p2` (read_write storage) as sched_sizes does, and calls it
// from one thread. No loops.

fn sched_merged(slots: u32) {
    var base = sched_step;
    base.num_entries = 0u;
    base.num_fresh = 0u;
    let kept = sched_p1.num_entries;
    let fresh = atomicLoad(&sched_counters.fresh.count);
    var m = min(fresh, sched_counters.fresh.capacity);
    // (Saturating sums, as the twin's.)
    var all = kept + fresh;
    if all < kept {
        all = 0xffffffffu;
    }
    atomicStore(&sched_counters.entries.count, all);
    let cap = sched_counters.entries.capacity;
    if kept + m < kept || kept + m > cap {
        atomicStore(&sched_counters.entries.overflow, 1u);
        m = select(0u, cap - kept, cap > kept);
    }
    sched_p1.num_fresh = m;
    base.num_entries = kept + m;
    sched_p2 = base;
    sched_state[0] = kept + m;
    atomicStore(&sched_counters.release.count, slots);
    if slots > sched_counters.release.capacity {
        atomicStore(&sched_counters.release.overflow, 1u);
    }
}
