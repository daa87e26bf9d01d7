// pool_alloc_size: the pool sizes of each rebuild plan (acl::rebuild::pool_alloc_size, CPU twin):
// thread t < D = rebuild.num_dirty writes plan t's sizes (points, blocks, watched pairs, terms;
// acl::rebuild::plan_sizes) to alloc_dest[k(D + 1) + t], thread D zeros each quarter's last entry.
// An exclusive scan of alloc_dest then gives pool_alloc the offsets. Loop bound per thread: 4.

#import layout
#import acl
#import acl_rebuild

@group(0) @binding(0) var<uniform> rebuild: RebuildParams;
@group(0) @binding(1) var<storage, read> plans: array<RebuildPlan>;
@group(0) @binding(2) var<storage, read_write> alloc_dest: array<u32>;

@compute @workgroup_size(64)
fn pool_alloc_size(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
    @builtin(local_invocation_index) lid: u32,
) {
    let nd = rebuild.num_dirty;
    let t = thread_index(wid, nwg, lid, 64u);
    if t > nd {
        return;
    }
    var s = vec4<u32>(0u);
    if t < nd {
        let p = plans[t];
        if (p.flags & PLAN_DELETE) == 0u {
            let zero = (p.flags & PLAN_ZERO) != 0u;
            s = vec4<u32>(p.n_cp, select(tri_len(p.n_cp), 0u, zero), p.n_watch, select(p.touching, 0u, zero));
        }
    }
    for (var k = 0u; k < 4u; k = k + 1u) {
        alloc_dest[k * (nd + 1u) + t] = s[k];
    }
}
