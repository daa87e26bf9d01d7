// set_overlap_write: every live moved set x writes its overlapping pairs [x, m] (merge_overlap, in
// index order) from slot edge_offsets[x] of `edges` (edge_offsets: the exclusive scan of
// set_overlap_count): all pairs in set order. A slot at or beyond edges.capacity is not written and
// raises edges.overflow; thread 0 writes edges.count. Every thread x < sets.count also starts the
// merge state of slot x for merge_label and merge_hull: label x in both halves of `labels`, an
// empty hull accumulator. CPU twin: acl::coalesce::set_overlap_write. One thread per set slot.
// Loop bound: acl_merge.scan_limit (checked: overlap_cost in merge_overlap).

#import layout
#import merge
#import merge_overlap

@group(0) @binding(0) var<uniform> acl_merge: MergeUniform;
@group(0) @binding(1) var<storage, read> sets: array<ContactSet>;
@group(0) @binding(2) var<storage, read> set_bin_start: array<u32>;
@group(0) @binding(3) var<storage, read> set_bin_items: array<u32>;
@group(0) @binding(4) var<storage, read> edge_offsets: array<u32>;
@group(0) @binding(5) var<storage, read_write> edges: array<vec2<u32>>;
@group(0) @binding(6) var<storage, read_write> labels: array<u32>;
@group(0) @binding(7) var<storage, read_write> set_hull: array<vec4<u32>>;
@group(0) @binding(8) var<storage, read_write> merge_counters: MergeCounters;

@compute @workgroup_size(256)
fn set_overlap_write(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
    @builtin(local_invocation_index) lid: u32,
) {
    let x = thread_index(wid, nwg, lid, 256u);
    let cap = merge_counters.sets.capacity;
    if x == 0u {
        atomicStore(&merge_counters.edges.count, edge_offsets[cap]);
    }
    let n = min(atomicLoad(&merge_counters.sets.count), cap);
    if x >= n {
        return;
    }
    labels[x] = x;
    labels[cap + x] = x;
    set_hull[x] = vec4<u32>(0u);
    let f = sets[x].flags;
    if (f & (SET_LIVE | SET_MOVED)) != (SET_LIVE | SET_MOVED) {
        return;
    }
    var c = overlap_begin(x);
    if overlap_cost(c) > acl_merge.scan_limit {
        return;
    }
    let ecap = merge_counters.edges.capacity;
    var slot = edge_offsets[x];
    loop {
        let m = overlap_next(&c);
        if m == NO_SET {
            break;
        }
        if slot < ecap {
            edges[slot] = vec2<u32>(x, m);
        } else {
            atomicStore(&merge_counters.edges.overflow, 1u);
        }
        slot = slot + 1u;
    }
}
