// pool_release_write: the releases and garbage of this rebuild round's dirty sets
// (acl::rebuild::pool_release_write, CPU twin), after pool_release_count and the exclusive scan of
// release_dest[..D + 2], D = rebuild.num_dirty; before set_rebuild_headers (it reads the old
// headers). Thread t < D, set k = dirty[t]: adds k's old model sizes (model_sizes) to
// acl_sizes.garbage_cp / _k / _w (integer atomicAdd: the same sums in any order); when plan t
// deletes the set or changes its box, writes Release(old box, new box or EMPTY_BOX) at slot
// release_dest[t + 1] of `released`, only below acl_sizes.released.capacity. Thread D: the new
// length release_dest[D + 1] into released.count, and released.overflow when it passes the
// capacity. One thread per dirty set, plus one. No loops.

#import layout
#import acl
#import acl_rebuild

// sched::EMPTY_BOX: the box that holds no pair.
const EMPTY_BOX: vec4<u32> = vec4<u32>(1u, 0u, 1u, 0u);

@group(0) @binding(0) var<uniform> rebuild: RebuildParams;
@group(0) @binding(1) var<storage, read> sets: array<ContactSet>;
@group(0) @binding(2) var<storage, read> dirty: array<u32>;
@group(0) @binding(3) var<storage, read> plans: array<RebuildPlan>;
@group(0) @binding(4) var<storage, read> release_dest: array<u32>;
@group(0) @binding(5) var<storage, read_write> released: array<Release>;
@group(0) @binding(6) var<storage, read_write> acl_sizes: AclSizes;

@compute @workgroup_size(64)
fn pool_release_write(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
    @builtin(local_invocation_index) lid: u32,
) {
    let nd = rebuild.num_dirty;
    let t = thread_index(wid, nwg, lid, 64u);
    let cap = acl_sizes.released.capacity;
    if t == nd {
        let count = release_dest[nd + 1u];
        atomicStore(&acl_sizes.released.count, count);
        if count > cap {
            atomicStore(&acl_sizes.released.overflow, 1u);
        }
        return;
    }
    if t > nd {
        return;
    }
    let old = sets[dirty[t]];
    let g = model_sizes(old);
    atomicAdd(&acl_sizes.garbage_cp, g.x);
    atomicAdd(&acl_sizes.garbage_k, g.y);
    atomicAdd(&acl_sizes.garbage_w, g.z);
    let plan = plans[t];
    let deleted = (plan.flags & PLAN_DELETE) != 0u;
    if deleted || any(plan.new_bx != old.bx) {
        let slot = release_dest[t + 1u];
        if slot < cap {
            released[slot] = Release(old.bx, select(plan.new_bx, EMPTY_BOX, deleted));
        }
    }
}
