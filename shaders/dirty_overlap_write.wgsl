// dirty_overlap_write: the overlap list of the first merge pass after a rebuild round, searching
// the round's dirty list instead of the set index (dirty_overlap.wgsl), in one dispatch: every live
// set m appends the pairs [k, m] it finds (k a moved dirty set overlapping m) at slots taken with
// atomicAdd on edges.count (reset by set_dirty_write at the round's start), so the list's order
// varies from run to run. Nothing downstream depends on it: merge_label's hooking and pointer
// jumping take minima (atomicMin), merge_hull maxima (atomicMax), the same for any order of the
// pairs, and the pairs are the index pass's (tests compare them as sorted lists). A slot at or
// beyond edges.capacity is not written and raises edges.overflow (edges.count is then the pairs
// found). Every thread m < sets.count also starts the merge state of slot m for merge_label and
// merge_hull, and thread 0 the pass's counts (list_overlap_start). CPU twin:
// acl::coalesce::dirty_overlap_write. One thread per set slot.
// Loop bound: DIRTY_OVERLAP_MAX (the list, checked) + 11 (the binary search).

#import layout
#import merge
#import dirty_overlap

@group(0) @binding(0) var<uniform> rebuild: RebuildParams;
@group(0) @binding(1) var<storage, read> sets: array<ContactSet>;
@group(0) @binding(2) var<storage, read> dirty: array<u32>;
@group(0) @binding(3) var<storage, read_write> edges: array<vec2<u32>>;
@group(0) @binding(4) var<storage, read_write> labels: array<u32>;
@group(0) @binding(5) var<storage, read_write> set_hull: array<vec4<u32>>;
@group(0) @binding(6) var<storage, read_write> merge_counters: MergeCounters;

@compute @workgroup_size(256)
fn dirty_overlap_write(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
    @builtin(local_invocation_index) lid: u32,
) {
    let m = thread_index(wid, nwg, lid, 256u);
    if m >= list_overlap_start(m) {
        return;
    }
    let len = dirty_overlap_len(m);
    let s = sets[m];
    let moved = list_overlap_moved(s.flags);
    for (var d = 0u; d < len; d = d + 1u) {
        let k = list_overlap_pair(m, s.bx, moved, dirty[d]);
        if k != NO_SET {
            list_overlap_append(k, m);
        }
    }
}
