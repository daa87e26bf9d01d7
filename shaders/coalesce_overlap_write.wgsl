// coalesce_overlap_write: the overlap list of the first merge pass after coalescing, searching the
// sets coalescing made (slots coalesce_base .. sets.count, contact_coalesce) instead of the set
// index (list_overlap.wgsl), in one dispatch. The table before coalescing is the last step's final
// one, no two sets overlapping and none moved (set_compact clears the flags), so every overlapping
// pair has a new set, and the new sets are all moved: this lists the index pass's pairs. Every live
// set m appends the pairs [k, m] it finds at slots taken with atomicAdd on edges.count (0 at the
// step's start, acl_counts), in an order that varies and that nothing downstream depends on (as
// dirty_overlap_write's). More new sets than DIRTY_OVERLAP_MAX, or a live moved set below
// coalesce_base, raise MERGE_DIRTY_LIMIT and list nothing (the step reruns with the index pass).
// Every thread m < sets.count also starts the merge state of slot m, and thread 0 the pass's
// counts (list_overlap_start). CPU twin: acl::coalesce::coalesce_overlap_write. One thread per set
// slot. Loop bound: DIRTY_OVERLAP_MAX (the new sets, checked).

#import layout
#import merge
#import list_overlap

@group(0) @binding(0) var<storage, read> sets: array<ContactSet>;
@group(0) @binding(1) var<storage, read_write> edges: array<vec2<u32>>;
@group(0) @binding(2) var<storage, read_write> labels: array<u32>;
@group(0) @binding(3) var<storage, read_write> set_hull: array<vec4<u32>>;
@group(0) @binding(4) var<storage, read_write> merge_counters: MergeCounters;

@compute @workgroup_size(256)
fn coalesce_overlap_write(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
    @builtin(local_invocation_index) lid: u32,
) {
    let m = thread_index(wid, nwg, lid, 256u);
    let n = list_overlap_start(m);
    if m >= n {
        return;
    }
    let s = sets[m];
    if (s.flags & SET_LIVE) == 0u {
        return;
    }
    let base = min(merge_counters.coalesce_base, n);
    let moved = list_overlap_moved(s.flags);
    if n - base > DIRTY_OVERLAP_MAX || (moved && m < base) {
        atomicOr(&merge_counters.errors, MERGE_DIRTY_LIMIT);
        return;
    }
    for (var k = base; k < n; k = k + 1u) {
        let o = list_overlap_pair(m, s.bx, moved, k);
        if o != NO_SET {
            list_overlap_append(o, m);
        }
    }
}
