// set_bin_index: the set index from the items sorted by bin (set_bin_sort after the stable sort):
// thread b ≤ num_bins writes set_bin_start[b] = the first item whose bin is at least b (a binary
// search), thread t < the item count writes set_bin_items[t] = its set. Bin b then lists
// set_bin_items[set_bin_start[b] .. set_bin_start[b + 1]], in set order, as SetIndex::build does.
// CPU twin: acl::coalesce::set_bin_index. One thread per bin (plus one) and per index slot.
// Loop bound: 32 halvings (binary search).

#import layout

@group(0) @binding(0) var<uniform> acl_merge: MergeUniform;
@group(0) @binding(1) var<storage, read> set_bin_sort: array<KeyValue>;
@group(0) @binding(2) var<storage, read_write> set_bin_start: array<u32>;
@group(0) @binding(3) var<storage, read_write> set_bin_items: array<u32>;
@group(0) @binding(4) var<storage, read_write> merge_counters: MergeCounters;

@compute @workgroup_size(256)
fn set_bin_index(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
    @builtin(local_invocation_index) lid: u32,
) {
    let t = thread_index(wid, nwg, lid, 256u);
    let total = min(atomicLoad(&merge_counters.index.count), merge_counters.index.capacity);
    if t < total {
        set_bin_items[t] = set_bin_sort[t].value;
    }
    if t <= acl_merge.num_bins {
        var lo = 0u;
        var hi = total;
        for (var it = 0u; it < 32u && lo < hi; it = it + 1u) {
            let mid = (lo + hi) / 2u;
            if set_bin_sort[mid].key_lo < t {
                lo = mid + 1u;
            } else {
                hi = mid;
            }
        }
        set_bin_start[t] = lo;
    }
}
