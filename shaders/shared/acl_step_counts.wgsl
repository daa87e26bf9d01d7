// The GPU ACL step's counts that a kernel moves from its one thread that has them final, instead of
// a dispatch of acl_counts of their own (src/acl/counts.rs, CPU twins of the same names there). The
// importing kernel declares acl_sizes and merge_counters (read_write storage) and imports acl.
// No loops.

// The verdict on the merge invocation (a merge chain's passes) that ran last: its last pass still
// merged (merge_counters.edges counts each pass's pairs), so the step reruns with more passes
// (ACL_SIZES_MORE_PASSES in acl_sizes.errors, sticky over the step). Taken where the next
// invocation has not yet reset the count: at the start of each rebuild round (set_dirty_write;
// after the step's last round, last_round_merge_verdict).
fn last_merge_verdict() {
    if atomicLoad(&merge_counters.edges.count) != 0u {
        atomicOr(&acl_sizes.errors, ACL_SIZES_MORE_PASSES);
    }
}

// The verdict on the step's last merge invocation, which ends at its first overlap search
// (MergeGpu::dispatches_to_first_search): pairs found there would have been merged into roots that
// are dirty, as merge_apply leaves them, so the step reruns with more passes and more rounds
// (ACL_SIZES_MORE_PASSES | ACL_SIZES_MORE_ROUNDS), as it did when the pass merged them and
// set_compact then found those roots dirty. Taken in set_compact.
fn last_round_merge_verdict() {
    if atomicLoad(&merge_counters.edges.count) != 0u {
        atomicOr(&acl_sizes.errors, ACL_SIZES_MORE_PASSES | ACL_SIZES_MORE_ROUNDS);
    }
}

// In set_compact (the thread of the last slot, which has the live sets' number from the group sums
// and its workgroup's scan): that number is the table length, in
// acl_sizes and (unless the table overflowed, when its count is what was needed) in
// merge_counters.
fn compacted_counts(live: u32) {
    acl_sizes.num_sets = live;
    if atomicLoad(&merge_counters.sets.overflow) == 0u {
        atomicStore(&merge_counters.sets.count, live);
    }
}
