// acl_scheduled_counts: the counts the GPU ACL step moves after its scheduler (acl_counts'
// PHASE_SCHEDULED, which a step without coalescing makes in acl_scheduled_plan): the released list
// emptied (this step's scheduler has read it), merge_counters.touching.count = the scheduler's
// touching pairs (at most its capacity). The importing kernel declares `sched_counters`,
// `acl_sizes` and `merge_counters` (read_write storage) as acl_counts does, and calls it from one
// thread. No loops.

fn acl_scheduled_counts() {
    atomicStore(&acl_sizes.released.count, 0u);
    atomicStore(&acl_sizes.released.overflow, 0u);
    let touching = min(atomicLoad(&sched_counters.touching.count), sched_counters.touching.capacity);
    atomicStore(&merge_counters.touching.count, touching);
}
