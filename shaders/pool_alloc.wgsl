// pool_alloc: the rebuild round's pool ranges, releases and garbage (acl::rebuild::pool_alloc, CPU
// twin), after pool_alloc_size and the exclusive scan of alloc_dest (its five regions: see
// pool_alloc_size); before set_rebuild_headers (it reads the dirty sets' old headers).
// Thread t < D = rebuild.num_dirty, set k = dirty[t]:
// - adds k's old model sizes (model_sizes) to acl_sizes.garbage_cp / _k / _w (integer atomicAdd:
//   the same sums in any order);
// - when plan t deletes the set or changes its box, writes Release(old box, new box or EMPTY_BOX)
//   at its slot of `released`, only below acl_sizes.released.capacity;
// - unless plan t deletes the set: its cp_off, k_off (0 for a zero-force plan), w_off and
//   term_off, appended at pool_counters.base, and POOL_TOO_MUCH_WORK with the first such t when
//   the plan is beyond MAX_REBUILD_WORK.
// Thread D: the pools' new lengths, and bit k of errors when pool k's passes its capacity; the
// release list's new length into released.count, and released.overflow past its capacity.
// One thread per dirty set, plus one. Loop bound per thread: 4.

#import layout
#import acl
#import acl_rebuild

const POOL_TOO_MUCH_WORK: u32 = 16u;
// sched::EMPTY_BOX: the box that holds no pair.
const EMPTY_BOX: vec4<u32> = vec4<u32>(1u, 0u, 1u, 0u);

@group(0) @binding(0) var<uniform> rebuild: RebuildParams;
@group(0) @binding(1) var<storage, read> sets: array<ContactSet>;
@group(0) @binding(2) var<storage, read> dirty: array<u32>;
@group(0) @binding(3) var<storage, read> alloc_dest: array<u32>;
@group(0) @binding(4) var<storage, read_write> plans: array<RebuildPlan>;
@group(0) @binding(5) var<storage, read_write> pool_counters: PoolAlloc;
@group(0) @binding(6) var<storage, read_write> released: array<Release>;
@group(0) @binding(7) var<storage, read_write> acl_sizes: AclSizes;

// Where pool k's range of plan t starts (t = D: the pool's new length).
fn alloc_offset(k: u32, t: u32) -> u32 {
    let base = k * (rebuild.num_dirty + 1u);
    return pool_counters.base[k] + (alloc_dest[base + t] - alloc_dest[base]);
}

// Release t's slot (t = D: the list's new length).
fn release_slot(t: u32) -> u32 {
    let r = 4u * (rebuild.num_dirty + 1u);
    return alloc_dest[r + t + 1u] - alloc_dest[r];
}

@compute @workgroup_size(64)
fn pool_alloc(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
    @builtin(local_invocation_index) lid: u32,
) {
    let nd = rebuild.num_dirty;
    let t = thread_index(wid, nwg, lid, 64u);
    if t > nd {
        return;
    }
    let cap = acl_sizes.released.capacity;
    if t == nd {
        for (var k = 0u; k < 4u; k = k + 1u) {
            let len = alloc_offset(k, nd);
            pool_counters.len[k] = len;
            if len > pool_counters.cap[k] {
                atomicOr(&pool_counters.errors, 1u << k);
            }
        }
        let count = release_slot(nd);
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
    let deleted = (p.flags & PLAN_DELETE) != 0u;
    if deleted || any(p.new_bx != old.bx) {
        let slot = release_slot(t);
        if slot < cap {
            released[slot] = Release(old.bx, select(p.new_bx, EMPTY_BOX, deleted));
        }
    }
    if deleted {
        return;
    }
    p.cp_off = alloc_offset(0u, t);
    p.k_off = select(alloc_offset(1u, t), 0u, (p.flags & PLAN_ZERO) != 0u);
    p.w_off = alloc_offset(2u, t);
    p.term_off = alloc_offset(3u, t);
    plans[t] = p;
    if rebuild_work(p.n_cp, p.touching) > MAX_REBUILD_WORK {
        atomicOr(&pool_counters.errors, POOL_TOO_MUCH_WORK);
        atomicMin(&pool_counters.first_too_large, t);
    }
}
