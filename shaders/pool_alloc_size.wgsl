// pool_alloc_size: the rebuild round's allocation and release counts (acl::rebuild::pool_alloc_size,
// CPU twin), after set_rebuild_size and before set_rebuild_headers (it reads the dirty sets' old
// headers). alloc_dest holds five regions for D = rebuild.num_dirty dirty sets:
// - quarter k < 4 at k(D + 1): thread t < D writes plan t's size in pool k (points, blocks,
//   watched pairs, terms; acl::rebuild::plan_sizes) at k(D + 1) + t, thread D a 0 at k(D + 1) + D;
// - the releases at R = 4(D + 1): thread t < D writes 1 at R + t + 1 when set dirty[t] is deleted
//   by plan t or its box changes, else 0; thread D the list's length before this round,
//   acl_sizes.released.count, at R, and 0 at R + D + 1.
// One exclusive scan of alloc_dest[..5D + 6] then gives pool_alloc every offset as a difference
// within its region: a plan's ranges (less its quarter's first value), a release's slot and the
// list's new length (less the value at R, the base included). Reading the base here, a dispatch
// before pool_alloc updates it, keeps the count's read and write in separate dispatches.
// One thread per dirty set, plus one. Loop bound per thread: 4.

#import layout
#import acl
#import acl_rebuild

@group(0) @binding(0) var<uniform> rebuild: RebuildParams;
@group(0) @binding(1) var<storage, read> sets: array<ContactSet>;
@group(0) @binding(2) var<storage, read> dirty: array<u32>;
@group(0) @binding(3) var<storage, read> plans: array<RebuildPlan>;
@group(0) @binding(4) var<storage, read_write> alloc_dest: array<u32>;
@group(0) @binding(5) var<storage, read_write> acl_sizes: AclSizes;

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
    let r = 4u * (nd + 1u);
    var s = vec4<u32>(0u);
    if t < nd {
        let p = plans[t];
        let deleted = (p.flags & PLAN_DELETE) != 0u;
        if !deleted {
            let zero = (p.flags & PLAN_ZERO) != 0u;
            s = vec4<u32>(p.n_cp, select(tri_len(p.n_cp), 0u, zero), p.n_watch, select(p.touching, 0u, zero));
        }
        let releases = deleted || any(p.new_bx != sets[dirty[t]].bx);
        alloc_dest[r + t + 1u] = select(0u, 1u, releases);
    } else {
        alloc_dest[r] = atomicLoad(&acl_sizes.released.count);
        alloc_dest[r + nd + 1u] = 0u;
    }
    for (var k = 0u; k < 4u; k = k + 1u) {
        alloc_dest[k * (nd + 1u) + t] = s[k];
    }
}
