// sched_start: the start of a scheduler GPU step (sched_sizes' phase 0, which the ACL step makes in
// acl_step_start): the counters reset (capacities kept), sched_p0 = sched_step with the table
// length of the last step (sched_state[0]) and no fresh entries. The importing kernel declares
// `sched_step` (uniform), `sched_counters`, `sched_state` and `sched_p0` (read_write storage) as
// sched_sizes does, and calls it from one thread. No loops.

fn sched_start() {
    var base = sched_step;
    base.num_fresh = 0u;
    atomicStore(&sched_counters.errors, 0u);
    atomicStore(&sched_counters.first_bad_point, 0xffffffffu);
    atomicStore(&sched_counters.first_bad_segment, 0xffffffffu);
    atomicStore(&sched_counters.examined, 0u);
    atomicStore(&sched_counters.processed, 0u);
    atomicStore(&sched_counters.monitored, 0u);
    atomicStore(&sched_counters.left, 0u);
    atomicStore(&sched_counters.lookup_overflow, 0u);
    atomicStore(&sched_counters.touching.count, 0u);
    atomicStore(&sched_counters.touching.overflow, 0u);
    atomicStore(&sched_counters.grid.count, 0u);
    atomicStore(&sched_counters.grid.overflow, 0u);
    atomicStore(&sched_counters.cand.count, 0u);
    atomicStore(&sched_counters.cand.overflow, 0u);
    atomicStore(&sched_counters.fresh.count, 0u);
    atomicStore(&sched_counters.fresh.overflow, 0u);
    atomicStore(&sched_counters.entries.count, 0u);
    atomicStore(&sched_counters.entries.overflow, 0u);
    atomicStore(&sched_counters.release.count, 0u);
    atomicStore(&sched_counters.release.overflow, 0u);
    atomicStore(&sched_counters.newcomers, 0u);
    atomicStore(&sched_counters.entered, 0u);
    base.num_entries = sched_state[0];
    sched_p0 = base;
}
