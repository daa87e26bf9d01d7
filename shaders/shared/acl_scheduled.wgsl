// acl_scheduled_counts: the count the GPU ACL step moves after its scheduler (acl_counts'
// PHASE_SCHEDULED, which a step makes in coalesce_heads with coalescing and in acl_scheduled_plan
// without): merge_counters.touching.count = the scheduler's touching pairs (at most its capacity).
// (The released list, which the scheduler also reads, is emptied at the step's start by
// acl_step_reset: the scheduler reads its length from sched_step.num_released, copied before the
// step's first dispatch, and the list is next written by the rebuild rounds' pool_alloc.) The
// importing kernel declares `sched_counters` and `merge_counters` (read_write storage) as
// acl_counts does, and calls it from one thread. No loops.

fn acl_scheduled_counts() {
    let touching = min(atomicLoad(&sched_counters.touching.count), sched_counters.touching.capacity);
    atomicStore(&merge_counters.touching.count, touching);
}
