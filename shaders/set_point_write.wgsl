// set_point_write: slot r < record_capacity of point_slots gets the r-th record of the sets listed in
// order (set_offsets scanned: set k's records start at set_offsets[k], the total is
// set_offsets[num_sets]): key = its control point, value = its pool index; slots past the total get
// the sentinel (key num_points, value 0xffffffff), which the stable sort by key keeps last. Slot 0
// records the total in acl_counters.records and ACL_ERROR_RECORDS_FULL beyond the capacity
// (src/acl/gather.rs; CPU twin acl::gather::set_point_write).
// One thread per slot. Loop bound per thread: one binary search over the sets, ≤ 32 steps.

#import layout
#import acl

@group(0) @binding(0) var<uniform> acl: AclUniform;
@group(0) @binding(1) var<storage, read> sets: array<ContactSet>;
@group(0) @binding(2) var<storage, read> cp_pool: array<u32>;
@group(0) @binding(3) var<storage, read> set_offsets: array<u32>;
@group(0) @binding(4) var<storage, read_write> point_slots: array<KeyValue>;
@group(0) @binding(5) var<storage, read_write> acl_counters: AclCounters;

@compute @workgroup_size(256)
fn set_point_write(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
    @builtin(local_invocation_index) lid: u32,
) {
    let r = thread_index(wid, nwg, lid, 256u);
    if r >= acl.record_capacity {
        return;
    }
    let n = acl.num_sets;
    let total = set_offsets[n];
    if r == 0u {
        atomicStore(&acl_counters.records, total);
        if total > acl.record_capacity {
            atomicOr(&acl_counters.errors, ACL_ERROR_RECORDS_FULL);
        }
    }
    var kv: KeyValue;
    kv._pad = 0u;
    kv.key_hi = 0u;
    if r < total {
        // contact::grid::upper_segment: the largest k ≤ n with set_offsets[k] ≤ r.
        var lo = 0u;
        var hi = n;
        while hi - lo > 1u {
            let mid = (lo + hi) / 2u;
            if set_offsets[mid] <= r {
                lo = mid;
            } else {
                hi = mid;
            }
        }
        let at = sets[lo].cp_off + (r - set_offsets[lo]);
        kv.key_lo = cp_pool[at];
        kv.value = at;
    } else {
        kv.key_lo = acl.num_points;
        kv.value = 0xffffffffu;
    }
    point_slots[r] = kv;
}
