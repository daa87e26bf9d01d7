// set_point_count: the point table's counts (src/acl/gather.rs; CPU twin
// acl::gather::set_point_count). A thread per set slot; for set k < acl.num_sets, each record of a
// live set (its point t < n_cp: pool index at = cp_off + t, control point p = cp_pool[at]):
// point_rank[at] = atomicAdd(point_count[p], 1), the record's rank among p's records (in the order
// the threads come: set_gather sums them in set order whatever it is), and atomicAdd(point_start[p],
// 1), the input of the exclusive scan that gives each point its first slot and, at num_points, the
// total. Both arrays are zero when this runs: new buffers are, and set_gather clears what it read.
// Each workgroup also writes its live sets' number into scan_groups (shared/scan_groups.wgsl), from
// which set_compact, later in the step, finds each live set's slot in the compacted table (the
// table does not change in between). Dispatched over every set slot (the set capacity's grid); a
// workgroup wholly past acl.num_sets returns at once and writes no group sum (set_compact's
// workgroups there do not read them: both kernels' counts are the table length that
// acl_counts / acl_coalesced_plan write into acl and rebuild together).
// Loop bound per thread: ACL_MAX_SET_POINTS = 1,008 (a larger set fails the step in set_evaluate),
// 8 (write_scan_group).

#import layout
#import acl
#import scan_groups

@group(0) @binding(0) var<uniform> acl: AclUniform;
@group(0) @binding(1) var<storage, read> sets: array<ContactSet>;
@group(0) @binding(2) var<storage, read> cp_pool: array<u32>;
@group(0) @binding(3) var<storage, read_write> point_start: array<atomic<u32>>;
@group(0) @binding(4) var<storage, read_write> point_count: array<atomic<u32>>;
@group(0) @binding(5) var<storage, read_write> point_rank: array<u32>;
@group(0) @binding(6) var<storage, read_write> scan_groups: array<u32>;

@compute @workgroup_size(256)
fn set_point_count(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
    @builtin(local_invocation_index) lid: u32,
) {
    // (acl is a uniform: the test is uniform, and the barriers below stay in uniform control flow.)
    if (wid.y * nwg.x + wid.x) * 256u >= acl.num_sets {
        return;
    }
    let k = thread_index(wid, nwg, lid, 256u);
    var live = 0u;
    if k < acl.num_sets {
        let s = sets[k];
        live = select(0u, 1u, (s.flags & SET_LIVE) != 0u);
        let n = set_record_count(s);
        for (var t = 0u; t < n; t++) {
            let at = s.cp_off + t;
            let p = cp_pool[at];
            point_rank[at] = atomicAdd(&point_count[p], 1u);
            atomicAdd(&point_start[p], 1u);
        }
    }
    write_scan_group(wid, nwg, lid, live);
}
