// set_bin_write: every live set x writes one item (key = bin, value = x) per bin its box meets,
// in bin order, from slot bin_offsets[x] of set_bin_sort (bin_offsets: the exclusive scan of
// set_bin_count): all items in set order, which the stable radix sort by bin (src/sort.rs) turns
// into the bins' lists in set order. Slots past the item count are left as they were: the counted
// sort and set_bin_index stop at the count. An item at or beyond index.capacity is not written
// and raises index.overflow; thread 0 writes index.count. CPU twin:
// acl::coalesce::set_bin_write. One thread per set slot.
// Loop bound: the bins of one box, at most num_bins.

#import layout
#import merge

@group(0) @binding(0) var<uniform> acl_merge: MergeUniform;
@group(0) @binding(1) var<storage, read> sets: array<ContactSet>;
@group(0) @binding(2) var<storage, read> bin_offsets: array<u32>;
@group(0) @binding(3) var<storage, read_write> set_bin_sort: array<KeyValue>;
@group(0) @binding(4) var<storage, read_write> merge_counters: MergeCounters;

@compute @workgroup_size(256)
fn set_bin_write(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
    @builtin(local_invocation_index) lid: u32,
) {
    let t = thread_index(wid, nwg, lid, 256u);
    let cap = merge_counters.sets.capacity;
    let icap = merge_counters.index.capacity;
    let total = bin_offsets[cap];
    if t == 0u {
        atomicStore(&merge_counters.index.count, total);
    }
    let n = min(atomicLoad(&merge_counters.sets.count), cap);
    if t >= n {
        return;
    }
    let s = sets[t];
    if (s.flags & SET_LIVE) == 0u {
        return;
    }
    var slot = bin_offsets[t];
    let b1 = s.bx.y / MERGE_BIN;
    for (var b = s.bx.x / MERGE_BIN; b <= b1; b = b + 1u) {
        if slot < icap {
            set_bin_sort[slot] = KeyValue(b, 0u, t, 0u);
        } else {
            atomicStore(&merge_counters.index.overflow, 1u);
        }
        slot = slot + 1u;
    }
}
