// pool_alloc: the rebuild round's pool ranges, releases and garbage (acl::rebuild::pool_alloc, CPU
// twin), after pool_alloc_size, whose group sums (alloc_groups) and a workgroup scan give each
// dirty set t < D = rebuild.num_dirty the values of the sets before it (shared/alloc_group.wgsl:
// their sizes in the four pools and their releases), with no scan dispatch between; before
// set_rebuild_headers (it reads the dirty sets' old headers). Thread t < D, set k = dirty[t]:
// - adds k's old model sizes (model_sizes) to acl_sizes.garbage_cp / _k / _w (integer atomicAdd:
//   the same sums in any order);
// - when plan t deletes the set or changes its box, writes Release(old box, new box or EMPTY_BOX)
//   at its slot of `released` (the list's length before the round plus the releases before it),
//   only below acl_sizes.released.capacity;
// - unless plan t deletes the set: its cp_off, k_off (0 for a zero-force plan), w_off and
//   term_off, appended at pool_counters.base, and POOL_TOO_MUCH_WORK with the first such t when
//   the plan is beyond MAX_REBUILD_WORK;
// - POOL_BOX_TOO_LARGE with the first such t when plan t is PLAN_TOO_LARGE (set_rebuild_size:
//   a box beyond its bounds).
// Thread D: the pools' new lengths, and bit k of errors when pool k's passes its capacity; the
// release list's new length into released.count, and released.overflow past its capacity.
// 256-thread workgroups over the dirty sets plus one; a workgroup wholly past thread D returns at
// once. Loop bounds: 22 group-sum loads a thread (at most 2²⁷ / 96 set slots fit a binding, so
// 5,462 groups), alloc_prefix's 8 + 8 steps, 4 (pools).

#import layout
#import acl
#import acl_rebuild
#import alloc_group

const POOL_TOO_MUCH_WORK: u32 = 16u;
// acl::rebuild::POOL_BOX_TOO_LARGE: a plan set_rebuild_size gave PLAN_TOO_LARGE (no model: the set
// stays dirty, so the host must stop the step, not add rebuild rounds).
const POOL_BOX_TOO_LARGE: u32 = 32u;
// sched::EMPTY_BOX: the box that holds no pair.
const EMPTY_BOX: vec4<u32> = vec4<u32>(1u, 0u, 1u, 0u);

@group(0) @binding(0) var<uniform> rebuild: RebuildParams;
@group(0) @binding(1) var<storage, read> sets: array<ContactSet>;
@group(0) @binding(2) var<storage, read> dirty: array<u32>;
@group(0) @binding(3) var<storage, read> alloc_groups: array<AllocGroup>;
@group(0) @binding(4) var<storage, read_write> plans: array<RebuildPlan>;
@group(0) @binding(5) var<storage, read_write> pool_counters: PoolAlloc;
@group(0) @binding(6) var<storage, read_write> released: array<Release>;
@group(0) @binding(7) var<storage, read_write> acl_sizes: AclSizes;

@compute @workgroup_size(256)
fn pool_alloc(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
    @builtin(local_invocation_index) lid: u32,
) {
    let nd = rebuild.num_dirty;
    let group = wid.y * nwg.x + wid.x;
    // The same for every thread of the workgroup, so alloc_prefix's barriers stay in uniform
    // control flow.
    if group > nd / 256u {
        return;
    }
    let t = group * 256u + lid;
    let before = alloc_prefix(group, lid, alloc_values(t));
    if t > nd {
        return;
    }
    let released_base = alloc_groups[group].released_base;
    let cap = acl_sizes.released.capacity;
    if t == nd {
        for (var k = 0u; k < 4u; k = k + 1u) {
            let len = pool_counters.base[k] + before.sizes[k];
            pool_counters.len[k] = len;
            if len > pool_counters.cap[k] {
                atomicOr(&pool_counters.errors, 1u << k);
            }
        }
        let count = released_base + before.releases;
        atomicStore(&acl_sizes.released.count, count);
        if count > cap {
            atomicStore(&acl_sizes.released.overflow, 1u);
        }
        return;
    }
    let old = sets[dirty[t]];
    let g = model_sizes(old);
    atomicAdd(&acl_sizes.garbage_cp, g.x);
    atomicAdd(&acl_sizes.garbage_k, g.y);
    atomicAdd(&acl_sizes.garbage_w, g.z);
    var p = plans[t];
    if (p.flags & PLAN_TOO_LARGE) != 0u {
        atomicOr(&pool_counters.errors, POOL_BOX_TOO_LARGE);
        atomicMin(&pool_counters.first_too_large, t);
    }
    let deleted = (p.flags & PLAN_DELETE) != 0u;
    if deleted || any(p.new_bx != old.bx) {
        let slot = released_base + before.releases;
        if slot < cap {
            released[slot] = Release(old.bx, select(p.new_bx, EMPTY_BOX, deleted));
        }
    }
    if deleted {
        return;
    }
    let off = pool_counters.base + before.sizes;
    p.cp_off = off.x;
    p.k_off = select(off.y, 0u, (p.flags & PLAN_ZERO) != 0u);
    p.w_off = off.z;
    p.term_off = off.w;
    plans[t] = p;
    if rebuild_work(p.n_cp, p.touching) > MAX_REBUILD_WORK {
        atomicOr(&pool_counters.errors, POOL_TOO_MUCH_WORK);
        atomicMin(&pool_counters.first_too_large, t);
    }
}
