// set_bin_count: the first pass of the set index (acl::sets::SetIndex, built on the GPU as count →
// scan → write in set order → stable sort by bin → set_bin_index). Thread x < sets.count writes
// bin_offsets[x] = the number of bins (of MERGE_BIN along the first axis) live set x meets, 0 when
// not live; threads up to sets.capacity write 0 (the exclusive scan over capacity + 1 elements
// gives each set's first item and, last, the item count). Thread 0 also starts a merge pass:
// label_rounds and moved back to 0. CPU twin: acl::coalesce::set_bin_count.
// One thread per set slot, plus one. Loop bound: write_scan_group's 8 halving steps.
// Each workgroup also writes the sum of its threads' counts into scan_groups
// (shared/scan_groups.wgsl): the scan is grouped, its block sums written here.

#import layout
#import merge
#import scan_groups

@group(0) @binding(0) var<uniform> acl_merge: MergeUniform;
@group(0) @binding(1) var<storage, read> sets: array<ContactSet>;
@group(0) @binding(2) var<storage, read_write> bin_offsets: array<u32>;
@group(0) @binding(3) var<storage, read_write> merge_counters: MergeCounters;
@group(0) @binding(4) var<storage, read_write> scan_groups: array<u32>;

// Slot x's count, written to bin_offsets[x] (0 past the capacity, where nothing is written).
fn bin_count_one(x: u32) -> u32 {
    let cap = merge_counters.sets.capacity;
    if x > cap {
        return 0u;
    }
    if x == 0u {
        atomicStore(&merge_counters.label_rounds, 0u);
        atomicStore(&merge_counters.moved, 0u);
    }
    let n = min(atomicLoad(&merge_counters.sets.count), cap);
    var c = 0u;
    if x < n {
        let s = sets[x];
        if (s.flags & SET_LIVE) != 0u {
            c = s.bx.y / MERGE_BIN - s.bx.x / MERGE_BIN + 1u;
        }
    }
    bin_offsets[x] = c;
    return c;
}

@compute @workgroup_size(256)
fn set_bin_count(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
    @builtin(local_invocation_index) lid: u32,
) {
    let v = bin_count_one(thread_index(wid, nwg, lid, 256u));
    write_scan_group(wid, nwg, lid, v);
}
