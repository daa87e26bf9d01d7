// dirty_overlap: the overlap search of the first merge pass after a rebuild round
// (acl::coalesce::dirty_overlap_write), without the set index: the thread of
// live set m tests every set on the round's dirty list (list_overlap.wgsl). After a rebuild round
// every live moved set is on that list (the round rebuilt it and its box changed: a completed merge
// invocation leaves no set moved, and merge_apply's moved roots are dirty, so the next round lists
// them); the search checks that for its own set and raises MERGE_DIRTY_LIMIT when it does not hold,
// or when the list is longer than DIRTY_OVERLAP_MAX (the step then reruns with the index pass).
// Needs the importing kernel to bind `rebuild: RebuildParams` (num_dirty), `dirty: array<u32>` (in
// slot order, set_dirty_write) and what list_overlap.wgsl needs, and to import layout and merge.

#import list_overlap

// Whether slot m is on the dirty list (binary search of the list, which is in slot order).
// Loop bound: log2(num_dirty) + 1 ≤ 11.
fn dirty_overlap_listed(m: u32, nd: u32) -> bool {
    var lo = 0u;
    var hi = nd;
    while lo < hi {
        let mid = (lo + hi) / 2u;
        if dirty[mid] < m {
            lo = mid + 1u;
        } else {
            hi = mid;
        }
    }
    return lo < nd && dirty[lo] == m;
}

// The dirty entries live set m searches: num_dirty, or 0 for a slot that lists nothing (not live,
// or the search cannot run, which raises MERGE_DIRTY_LIMIT).
fn dirty_overlap_len(m: u32) -> u32 {
    let nd = rebuild.num_dirty;
    let f = sets[m].flags;
    if (f & SET_LIVE) == 0u {
        return 0u;
    }
    if nd > DIRTY_OVERLAP_MAX || (list_overlap_moved(f) && !dirty_overlap_listed(m, nd)) {
        atomicOr(&merge_counters.errors, MERGE_DIRTY_LIMIT);
        return 0u;
    }
    return nd;
}
