// acl_step_reset: the reset at the start of a GPU ACL step (acl_counts' PHASE_STEP, which the step
// makes in acl_step_start): the step's counters cleared (capacities, the table length and the pool
// lengths kept; set_compact sums acl_sizes.touching anew), merge_counters.sets.count = the table
// length. The released list is emptied too: the last step's releases stay in `released` for this
// step's scheduler, which takes their number from sched_step.num_released (copied from
// acl_sizes.released.count before the step's first dispatch), and the next to write the list is
// the first rebuild round's pool_alloc, after the scheduler. The importing kernel declares `acl_sizes`,
// `merge_counters`, `pool_counters` and `acl_counters` (read_write storage) as acl_counts does, and
// calls it from one thread. No loops.

fn acl_step_reset() {
    atomicStore(&acl_sizes.lookup.count, 0u);
    atomicStore(&acl_sizes.lookup.overflow, 0u);
    atomicStore(&acl_sizes.released.count, 0u);
    atomicStore(&acl_sizes.released.overflow, 0u);
    acl_sizes.num_dirty = 0u;
    acl_sizes.rebuilds = 0u;
    acl_sizes.rounds_used = 0u;
    atomicStore(&acl_sizes.touching, 0u);
    atomicStore(&acl_sizes.garbage_cp, 0u);
    atomicStore(&acl_sizes.garbage_k, 0u);
    atomicStore(&acl_sizes.garbage_w, 0u);
    atomicStore(&acl_sizes.errors, 0u);
    atomicStore(&merge_counters.sets.count, acl_sizes.num_sets);
    atomicStore(&merge_counters.sets.overflow, 0u);
    atomicStore(&merge_counters.edges.count, 0u);
    atomicStore(&merge_counters.edges.overflow, 0u);
    atomicStore(&merge_counters.index.count, 0u);
    atomicStore(&merge_counters.index.overflow, 0u);
    atomicStore(&merge_counters.touching.count, 0u);
    atomicStore(&merge_counters.touching.overflow, 0u);
    merge_counters.coalesce_base = 0u;
    atomicStore(&merge_counters.label_rounds, 0u);
    atomicStore(&merge_counters.more_rounds, 0u);
    atomicStore(&merge_counters.moved, 0u);
    atomicStore(&merge_counters.merged, 0u);
    atomicStore(&merge_counters.garbage_cp, 0u);
    atomicStore(&merge_counters.garbage_k, 0u);
    atomicStore(&merge_counters.garbage_w, 0u);
    atomicStore(&merge_counters.errors, 0u);
    atomicStore(&pool_counters.errors, 0u);
    atomicStore(&pool_counters.first_too_large, 0xffffffffu);
    atomicStore(&acl_counters.errors, 0u);
    atomicStore(&acl_counters.first_bad_set, 0xffffffffu);
    atomicStore(&acl_counters.first_bad_point, 0xffffffffu);
    atomicStore(&acl_counters.records, 0u);
}
