// set_overlap_count: the first pass of a merge pass's overlap list. Thread x < sets.count writes,
// for a live moved set, edge_offsets[x] = the overlapping pairs it lists (merge_overlap: each pair
// once), else 0; threads up to sets.capacity write 0 (the exclusive scan over capacity + 1
// elements gives each set's first edge and, last, the edge count). A search over more than
// acl_merge.scan_limit iterations (index items plus bins) lists nothing and raises MERGE_SCAN_LIMIT.
// CPU twin: acl::coalesce::set_overlap_count. One thread per set slot, plus one.
// Loop bound: acl_merge.scan_limit (checked: overlap_cost in merge_overlap), then
// write_scan_group's 8 halving steps.
// Each workgroup also writes the sum of its threads' counts into scan_groups
// (shared/scan_groups.wgsl): the scan is grouped, its block sums written here.

#import layout
#import merge
#import merge_overlap
#import scan_groups

@group(0) @binding(0) var<uniform> acl_merge: MergeUniform;
@group(0) @binding(1) var<storage, read> sets: array<ContactSet>;
@group(0) @binding(2) var<storage, read> set_bin_start: array<u32>;
@group(0) @binding(3) var<storage, read> set_bin_items: array<u32>;
@group(0) @binding(4) var<storage, read_write> edge_offsets: array<u32>;
@group(0) @binding(5) var<storage, read_write> merge_counters: MergeCounters;
@group(0) @binding(6) var<storage, read_write> scan_groups: array<u32>;

// Slot x's count, written to edge_offsets[x] (0 past the capacity, where nothing is written).
fn overlap_count_one(x: u32) -> u32 {
    let cap = merge_counters.sets.capacity;
    if x > cap {
        return 0u;
    }
    let n = min(atomicLoad(&merge_counters.sets.count), cap);
    if x >= n {
        edge_offsets[x] = 0u;
        return 0u;
    }
    var count = 0u;
    let f = sets[x].flags;
    if (f & (SET_LIVE | SET_MOVED)) == (SET_LIVE | SET_MOVED) {
        var c = overlap_begin(x);
        if overlap_cost(c) > acl_merge.scan_limit {
            atomicOr(&merge_counters.errors, MERGE_SCAN_LIMIT);
        } else {
            while overlap_next(&c) != NO_SET {
                count = count + 1u;
            }
        }
    }
    edge_offsets[x] = count;
    return count;
}

@compute @workgroup_size(256)
fn set_overlap_count(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
    @builtin(local_invocation_index) lid: u32,
) {
    let v = overlap_count_one(thread_index(wid, nwg, lid, 256u));
    write_scan_group(wid, nwg, lid, v);
}
