// set_gather: force[p] (xyz) += fout_pool[at] for the records (k, at) of control point p
// (point_records[point_start[p]..][..point_count[p]], in the order set_point_count's atomics gave
// them), p < num_points, added in set order (k, then at: the CPU table's order) by selection; never
// a scatter, so the sums are the same every run (src/acl/gather.rs; CPU twin acl::gather::set_gather).
// Thread p then clears point_start[p] and point_count[p] (thread 0 also point_start[num_points]):
// only thread p reads them, and the next step's set_point_count counts from zero.
// A non-finite term raises ACL_ERROR_NOT_FINITE (smallest such point in first_bad_point, unless a
// set's rotation was not finite: set_point_write named that set's point there already); more than
// ACL_MAX_POINT_RECORDS records raise ACL_ERROR_GATHER_FULL and only that many are looked at.
// One thread per point. Loop bound per thread: n (n + 1) ≤ 128 · 129 = 16,512 iterations
// (n = the point's records, at most ACL_MAX_POINT_RECORDS).

#import layout
#import acl

@group(0) @binding(0) var<uniform> acl: AclUniform;
@group(0) @binding(1) var<storage, read_write> point_start: array<u32>;
@group(0) @binding(2) var<storage, read_write> point_count: array<u32>;
@group(0) @binding(3) var<storage, read> point_records: array<vec2<u32>>;
@group(0) @binding(4) var<storage, read> fout_pool: array<vec4<f32>>;
@group(0) @binding(5) var<storage, read_write> acl_counters: AclCounters;
@group(0) @binding(6) var<storage, read_write> force: array<vec4<f32>>;

// (a.x, a.y) < (b.x, b.y), lexicographically.
fn record_less(a: vec2<u32>, b: vec2<u32>) -> bool {
    return a.x < b.x || (a.x == b.x && a.y < b.y);
}

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
    var n = point_count[p];
    point_start[p] = 0u;
    point_count[p] = 0u;
    if p == 0u {
        point_start[acl.num_points] = 0u;
    }
    if n > ACL_MAX_POINT_RECORDS {
        atomicOr(&acl_counters.errors, ACL_ERROR_GATHER_FULL);
        n = ACL_MAX_POINT_RECORDS;
    }
    // Past the table's capacity set_point_write wrote nothing (and the step reruns larger).
    n = min(n, acl.record_capacity - min(a, acl.record_capacity));
    var f = force[p];
    var ok = true;
    // The records in (set, pool index) order: each round picks the smallest one above the last
    // pick (records are distinct: a pool index is one record).
    var last = vec2<u32>(0u, 0u);
    for (var j = 0u; j < n; j++) {
        var best = vec2<u32>(0xffffffffu, 0xffffffffu);
        for (var i = 0u; i < n; i++) {
            let r = point_records[a + i];
            if (j == 0u || record_less(last, r)) && record_less(r, best) {
                best = r;
            }
        }
        // The all-ones pair is no record: a set index below the table's capacity.
        if best.x == 0xffffffffu {
            break;
        }
        last = best;
        let v = fout_pool[best.y];
        ok = ok && finite3(v.xyz);
        f.x += v.x;
        f.y += v.y;
        f.z += v.z;
    }
    force[p] = f;
    if !ok {
        atomicOr(&acl_counters.errors, ACL_ERROR_NOT_FINITE);
        if atomicLoad(&acl_counters.first_bad_set) == 0xffffffffu {
            atomicMin(&acl_counters.first_bad_point, p);
        }
    }
}
