// moved_overlap_write: the overlap list of a merge pass after the first, searching the roots the
// pass before grew (moved_sets[..moved], merge_apply) instead of the set index (list_overlap.wgsl),
// in one dispatch. merge_hull cleared every moved flag and merge_apply set it on exactly the roots
// it listed, so every moved set is on the list, and sets not moved are pairwise disjoint (the pass
// before merged every overlapping pair it had, each with a moved set): this lists the index pass's
// pairs. Every live set m appends the pairs [k, m] it finds at slots taken with atomicAdd on
// edges.count (cleared by the pass before's merge_hull, merge_round.clear_edges), in an order
// that varies and that nothing downstream depends on (as dirty_overlap_write's). A list longer
// than DIRTY_OVERLAP_MAX raises MERGE_DIRTY_LIMIT and lists nothing (the step reruns with the
// index pass). Every thread m < sets.count also starts the merge state of slot m, and thread 0
// the pass's label_rounds (list_overlap_start); `moved` stays the list's length until this
// pass's merge_hull. CPU twin: acl::coalesce::moved_overlap_write. One thread per set slot.
// Loop bound: DIRTY_OVERLAP_MAX (the list, checked).

#import layout
#import merge
#import list_overlap

@group(0) @binding(0) var<storage, read> sets: array<ContactSet>;
@group(0) @binding(1) var<storage, read> moved_sets: array<u32>;
@group(0) @binding(2) var<storage, read_write> edges: array<vec2<u32>>;
@group(0) @binding(3) var<storage, read_write> labels: array<u32>;
@group(0) @binding(4) var<storage, read_write> set_hull: array<vec4<u32>>;
@group(0) @binding(5) var<storage, read_write> merge_counters: MergeCounters;

@compute @workgroup_size(256)
fn moved_overlap_write(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
    @builtin(local_invocation_index) lid: u32,
) {
    let m = thread_index(wid, nwg, lid, 256u);
    if m >= list_overlap_start(m) {
        return;
    }
    let s = sets[m];
    if (s.flags & SET_LIVE) == 0u {
        return;
    }
    let len = atomicLoad(&merge_counters.moved);
    if len > DIRTY_OVERLAP_MAX {
        atomicOr(&merge_counters.errors, MERGE_DIRTY_LIMIT);
        return;
    }
    let moved = list_overlap_moved(s.flags);
    for (var d = 0u; d < len; d = d + 1u) {
        let k = list_overlap_pair(m, s.bx, moved, moved_sets[d]);
        if k != NO_SET {
            list_overlap_append(k, m);
        }
    }
}
