// set_point_start: from the point slots sorted by key (point, then set), the first
// n = min(acl_counters.records, record_capacity) of them (set_point_write's; the slots past them are
// nobody's): for p ≤ num_points, point_start[p] = the first of those slots whose key is at least p
// (so point_start[num_points] = n); for i < n, point_records[i] = slot i's value
// (src/acl/gather.rs; CPU twin acl::gather::set_point_start).
// One thread per max(num_points + 1, record_capacity). Loop bound per thread: one binary search,
// ≤ 32 steps.

#import layout
#import acl

@group(0) @binding(0) var<uniform> acl: AclUniform;
@group(0) @binding(1) var<storage, read> point_slots: array<KeyValue>;
@group(0) @binding(2) var<storage, read_write> point_start: array<u32>;
@group(0) @binding(3) var<storage, read_write> point_records: array<u32>;
@group(0) @binding(4) var<storage, read_write> acl_counters: AclCounters;

@compute @workgroup_size(256)
fn set_point_start(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
    @builtin(local_invocation_index) lid: u32,
) {
    let i = thread_index(wid, nwg, lid, 256u);
    let n = min(atomicLoad(&acl_counters.records), acl.record_capacity);
    if i <= acl.num_points {
        var lo = 0u;
        var hi = n;
        while lo < hi {
            let mid = lo + (hi - lo) / 2u;
            if point_slots[mid].key_lo < i {
                lo = mid + 1u;
            } else {
                hi = mid;
            }
        }
        point_start[i] = lo;
    }
    if i < n {
        point_records[i] = point_slots[i].value;
    }
}
