// list_overlap: the overlap search of a merge pass that tests a short list of sets instead of the
// set index (acl::coalesce::for_each_listed_overlap): after a rebuild round the round's dirty list
// (dirty_overlap_write), after coalescing the new sets (coalesce_overlap_write), after a merge
// pass the roots it grew (moved_overlap_write). Sets without
// SET_MOVED are pairwise disjoint, so every overlapping pair has a moved set; the thread of live
// set m tests every listed set and appends the pairs it finds, each pair once, as the index pass
// lists them ([moved, other]; of two moved sets, [smaller slot, larger]). The kernel checks that
// every live moved set is on its list (the search would miss its pairs otherwise).
// Needs the importing kernel to bind `sets: array<ContactSet>`, `edges: array<vec2<u32>>`,
// `labels: array<u32>`, `set_hull: array<vec4<u32>>` and `merge_counters: MergeCounters`
// (read_write but sets), and to import layout and merge. No loops.

fn list_overlap_moved(flags: u32) -> bool {
    return (flags & (SET_LIVE | SET_MOVED)) == (SET_LIVE | SET_MOVED);
}

// The pass's start for slot m: thread 0 clears label_rounds (as set_bin_count starts an index
// pass: an earlier pass's count would make merge_hull see unconverged labels that this pass does
// not have; `moved`, the last pass's moved list, merge_hull empties), and every used slot m gets
// label m in both halves of `labels` and an empty hull accumulator (as set_overlap_write does).
// Returns the used slots (min(sets.count, capacity)).
fn list_overlap_start(m: u32) -> u32 {
    if m == 0u {
        atomicStore(&merge_counters.label_rounds, 0u);
    }
    let cap = merge_counters.sets.capacity;
    let n = min(atomicLoad(&merge_counters.sets.count), cap);
    if m < n {
        labels[m] = m;
        labels[cap + m] = m;
        set_hull[m] = vec4<u32>(0u);
    }
    return n;
}

// Listed set k when it pairs with live set m (box mbx, moved or not): live and moved, not m, boxes
// overlapping, and for two moved sets only from the larger slot's thread; else NO_SET.
fn list_overlap_pair(m: u32, mbx: vec4<u32>, m_moved: bool, k: u32) -> u32 {
    if k == m || (m_moved && k > m) {
        return NO_SET;
    }
    let o = sets[k];
    if !list_overlap_moved(o.flags) || !boxes_overlap(o.bx, mbx) {
        return NO_SET;
    }
    return k;
}

// Appends the pair [k, m] at a slot taken with atomicAdd on edges.count; a slot at or beyond
// edges.capacity is not written and raises edges.overflow (edges.count is then the pairs found).
fn list_overlap_append(k: u32, m: u32) {
    let slot = atomicAdd(&merge_counters.edges.count, 1u);
    if slot < merge_counters.edges.capacity {
        edges[slot] = vec2<u32>(k, m);
    } else {
        atomicStore(&merge_counters.edges.overflow, 1u);
    }
}
