// set_gather: force[p] (xyz) += fout_pool[r] for the records r of control point p in the point
// table's order (point_records[point_start[p]..point_start[p + 1]]: by set), p < num_points; never
// a scatter, so the sums are the same every run (src/acl/gather.rs; CPU twin acl::gather::set_gather).
// A non-finite term raises ACL_ERROR_NOT_FINITE (smallest such point in first_bad_point); more
// than ACL_MAX_POINT_RECORDS records raise ACL_ERROR_GATHER_FULL and the rest are not added.
// One thread per point. Loop bound per thread: ACL_MAX_POINT_RECORDS = 16,384 iterations.

#import layout
#import acl

@group(0) @binding(0) var<uniform> acl: AclUniform;
@group(0) @binding(1) var<storage, read> point_start: array<u32>;
@group(0) @binding(2) var<storage, read> point_records: array<u32>;
@group(0) @binding(3) var<storage, read> fout_pool: array<vec4<f32>>;
@group(0) @binding(4) var<storage, read_write> acl_counters: AclCounters;
@group(0) @binding(5) var<storage, read_write> force: array<vec4<f32>>;

@compute @workgroup_size(256)
fn set_gather(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
    @builtin(local_invocation_index) lid: u32,
) {
    let p = thread_index(wid, nwg, lid, 256u);
    if p >= acl.num_points {
        return;
    }
    let a = point_start[p];
    var end = point_start[p + 1u];
    if end - a > ACL_MAX_POINT_RECORDS {
        atomicOr(&acl_counters.errors, ACL_ERROR_GATHER_FULL);
        end = a + ACL_MAX_POINT_RECORDS;
    }
    var f = force[p];
    var ok = true;
    for (var i = a; i < end; i++) {
        let v = fout_pool[point_records[i]];
        ok = ok && finite3(v.xyz);
        f.x += v.x;
        f.y += v.y;
        f.z += v.z;
    }
    force[p] = f;
    if !ok {
        atomicOr(&acl_counters.errors, ACL_ERROR_NOT_FINITE);
        atomicMin(&acl_counters.first_bad_point, p);
    }
}
