// set_point_write: the point table (src/acl/gather.rs; CPU twin acl::gather::set_point_write),
// after set_point_count and the exclusive scan of point_start. 16 lanes per set k < acl.num_sets
// (16 sets per workgroup): each record of a live set (pool index at = cp_off + t, point
// p = cp_pool[at]) goes to slot point_start[p] + point_rank[at] of point_records as (k, at), lane l
// writing records l, l + 16, …; a slot past record_capacity is not written. The first thread
// records the total, point_start[num_points], in acl_counters.records, and ACL_ERROR_RECORDS_FULL
// when it exceeds the capacity (the host grows the table and reruns). The lowest set whose rotation
// was not finite (first_bad_set, final since set_force) puts its first control point,
// cp_pool[cp_off], in first_bad_point: the CPU step names that point (acl::evaluate), and the
// error reads the same on both paths (set_gather then leaves first_bad_point alone). Lanes, not a thread per set:
// each record is a chain of dependent loads (cp_pool, then point_start), which one thread took
// record after record (some 9 a set), with few threads to hide them (the relaxed scarf's 19,889
// sets); the records' slots do not depend on who writes them.
// Loop bound per thread: ⌈ACL_MAX_SET_POINTS / 16⌉ = 63.

#import layout
#import acl

@group(0) @binding(0) var<uniform> acl: AclUniform;
@group(0) @binding(1) var<storage, read> sets: array<ContactSet>;
@group(0) @binding(2) var<storage, read> cp_pool: array<u32>;
@group(0) @binding(3) var<storage, read> point_start: array<u32>;
@group(0) @binding(4) var<storage, read> point_rank: array<u32>;
@group(0) @binding(5) var<storage, read_write> point_records: array<vec2<u32>>;
@group(0) @binding(6) var<storage, read_write> acl_counters: AclCounters;

@compute @workgroup_size(256)
fn set_point_write(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
    @builtin(local_invocation_index) lid: u32,
) {
    let k = thread_index(wid, nwg, lid / ACL_SET_LANES, 256u / ACL_SET_LANES);
    let lane = lid % ACL_SET_LANES;
    if k == 0u && lane == 0u {
        let total = point_start[acl.num_points];
        atomicStore(&acl_counters.records, total);
        if total > acl.record_capacity {
            atomicOr(&acl_counters.errors, ACL_ERROR_RECORDS_FULL);
        }
    }
    if k >= acl.num_sets {
        return;
    }
    let s = sets[k];
    if lane == 0u && k == atomicLoad(&acl_counters.first_bad_set) && s.n_cp > 0u {
        atomicStore(&acl_counters.first_bad_point, cp_pool[s.cp_off]);
    }
    let n = set_record_count(s);
    for (var t = lane; t < n; t += ACL_SET_LANES) {
        let at = s.cp_off + t;
        let slot = point_start[cp_pool[at]] + point_rank[at];
        if slot < acl.record_capacity {
            point_records[slot] = vec2<u32>(k, at);
        }
    }
}
