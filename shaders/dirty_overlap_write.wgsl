// dirty_overlap_write: every live set m writes the pairs [k, m] dirty_overlap_count counted (in
// dirty-list order) from slot edge_offsets[m] of `edges` (edge_offsets: the exclusive scan of
// dirty_overlap_count). A slot at or beyond edges.capacity is not written and raises
// edges.overflow; thread 0 writes edges.count. Every thread m < sets.count also starts the merge
// state of slot m for merge_label and merge_hull: label m in both halves of `labels`, an empty hull
// accumulator (as set_overlap_write does). CPU twin: acl::coalesce::dirty_overlap_write.
// One thread per set slot. Loop bound: DIRTY_OVERLAP_MAX (the list, checked) + 11 (the binary
// search).

#import layout
#import merge
#import dirty_overlap

@group(0) @binding(0) var<uniform> rebuild: RebuildParams;
@group(0) @binding(1) var<storage, read> sets: array<ContactSet>;
@group(0) @binding(2) var<storage, read> dirty: array<u32>;
@group(0) @binding(3) var<storage, read> edge_offsets: array<u32>;
@group(0) @binding(4) var<storage, read_write> edges: array<vec2<u32>>;
@group(0) @binding(5) var<storage, read_write> labels: array<u32>;
@group(0) @binding(6) var<storage, read_write> set_hull: array<vec4<u32>>;
@group(0) @binding(7) var<storage, read_write> merge_counters: MergeCounters;

@compute @workgroup_size(256)
fn dirty_overlap_write(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
    @builtin(local_invocation_index) lid: u32,
) {
    let m = thread_index(wid, nwg, lid, 256u);
    let cap = merge_counters.sets.capacity;
    if m == 0u {
        atomicStore(&merge_counters.edges.count, edge_offsets[cap]);
    }
    let n = min(atomicLoad(&merge_counters.sets.count), cap);
    if m >= n {
        return;
    }
    labels[m] = m;
    labels[cap + m] = m;
    set_hull[m] = vec4<u32>(0u);
    let len = dirty_overlap_len(m);
    let s = sets[m];
    let moved = dirty_overlap_moved(s.flags);
    let ecap = merge_counters.edges.capacity;
    var slot = edge_offsets[m];
    for (var d = 0u; d < len; d = d + 1u) {
        let k = dirty_overlap_pair(m, s.bx, moved, d);
        if k == NO_SET {
            continue;
        }
        if slot < ecap {
            edges[slot] = vec2<u32>(k, m);
        } else {
            atomicStore(&merge_counters.edges.overflow, 1u);
        }
        slot = slot + 1u;
    }
}
