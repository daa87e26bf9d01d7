// pool_release_count: which dirty sets give pairs back to empty space this rebuild round
// (acl::rebuild::pool_release_count, CPU twin). After set_rebuild_size, before set_rebuild_headers
// (it reads the dirty sets' old headers). Thread t < D = rebuild.num_dirty: release_dest[t + 1] = 1
// when set dirty[t] is deleted by plan t or its box changes, else 0; thread D: release_dest[0] =
// acl_sizes.released.count (the list's length before this round) and release_dest[D + 1] = 0. The
// exclusive scan of release_dest[..D + 2] then gives release t's slot at [t + 1] and the new length
// at [D + 1], the base included (read here, a dispatch before pool_release_write updates it).
// One thread per dirty set, plus one. No loops.

#import layout
#import acl
#import acl_rebuild

@group(0) @binding(0) var<uniform> rebuild: RebuildParams;
@group(0) @binding(1) var<storage, read> sets: array<ContactSet>;
@group(0) @binding(2) var<storage, read> dirty: array<u32>;
@group(0) @binding(3) var<storage, read> plans: array<RebuildPlan>;
@group(0) @binding(4) var<storage, read_write> release_dest: array<u32>;
@group(0) @binding(5) var<storage, read_write> acl_sizes: AclSizes;

@compute @workgroup_size(64)
fn pool_release_count(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
    @builtin(local_invocation_index) lid: u32,
) {
    let nd = rebuild.num_dirty;
    let t = thread_index(wid, nwg, lid, 64u);
    if t < nd {
        let plan = plans[t];
        let old_bx = sets[dirty[t]].bx;
        let releases = (plan.flags & PLAN_DELETE) != 0u || any(plan.new_bx != old_bx);
        release_dest[t + 1u] = select(0u, 1u, releases);
    } else if t == nd {
        release_dest[0] = atomicLoad(&acl_sizes.released.count);
        release_dest[nd + 1u] = 0u;
    }
}
