// dirty_overlap_count: the first pass of the overlap list of the first merge pass after a rebuild
// round, searching the round's dirty list instead of the set index (dirty_overlap.wgsl). Thread
// m < sets.count writes edge_offsets[m] = the pairs [k, m] it lists (k a moved dirty set
// overlapping live set m), else 0; threads up to sets.capacity write 0 (the exclusive scan over
// capacity + 1 elements gives each set's first edge and, last, the edge count).
// CPU twin: acl::coalesce::dirty_overlap_count. One thread per set slot, plus one.
// Loop bound: DIRTY_OVERLAP_MAX (the list, checked) + 11 (the binary search), then
// write_scan_group's 8 halving steps.
// Each workgroup also writes the sum of its threads' counts into scan_groups
// (shared/scan_groups.wgsl): the scan is grouped, its block sums written here.

#import layout
#import merge
#import dirty_overlap
#import scan_groups

@group(0) @binding(0) var<uniform> rebuild: RebuildParams;
@group(0) @binding(1) var<storage, read> sets: array<ContactSet>;
@group(0) @binding(2) var<storage, read> dirty: array<u32>;
@group(0) @binding(3) var<storage, read_write> edge_offsets: array<u32>;
@group(0) @binding(4) var<storage, read_write> merge_counters: MergeCounters;
@group(0) @binding(5) var<storage, read_write> scan_groups: array<u32>;

// Slot m's count, written to edge_offsets[m] (0 past the capacity, where nothing is written).
fn dirty_count_one(m: u32) -> u32 {
    let cap = merge_counters.sets.capacity;
    if m > cap {
        return 0u;
    }
    let n = min(atomicLoad(&merge_counters.sets.count), cap);
    if m >= n {
        edge_offsets[m] = 0u;
        return 0u;
    }
    let len = dirty_overlap_len(m);
    let s = sets[m];
    let moved = dirty_overlap_moved(s.flags);
    var count = 0u;
    for (var d = 0u; d < len; d = d + 1u) {
        if dirty_overlap_pair(m, s.bx, moved, d) != NO_SET {
            count = count + 1u;
        }
    }
    edge_offsets[m] = count;
    return count;
}

@compute @workgroup_size(256)
fn dirty_overlap_count(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
    @builtin(local_invocation_index) lid: u32,
) {
    let v = dirty_count_one(thread_index(wid, nwg, lid, 256u));
    write_scan_group(wid, nwg, lid, v);
}
