// pool_alloc: the pool ranges of each rebuild plan (acl::rebuild::pool_alloc, CPU twin), after
// pool_alloc_size and the exclusive scan of alloc_dest. Thread t < D = rebuild.num_dirty: plan t's
// cp_off, k_off (0 for a zero-force plan), w_off and term_off, appended at pool_counters.base
// (a deleted plan is left alone), and POOL_TOO_MUCH_WORK with the first such t when the plan is
// beyond MAX_REBUILD_WORK; thread D: the pools' new lengths, and bit k of errors when pool k's
// passes its capacity. Loop bound per thread: 4.

#import layout
#import acl
#import acl_rebuild

const POOL_TOO_MUCH_WORK: u32 = 16u;

@group(0) @binding(0) var<uniform> rebuild: RebuildParams;
@group(0) @binding(1) var<storage, read> alloc_dest: array<u32>;
@group(0) @binding(2) var<storage, read_write> plans: array<RebuildPlan>;
@group(0) @binding(3) var<storage, read_write> pool_counters: PoolAlloc;

// Where pool k's range of plan t starts (t = D: the pool's new length).
fn alloc_offset(k: u32, t: u32) -> u32 {
    let base = k * (rebuild.num_dirty + 1u);
    return pool_counters.base[k] + (alloc_dest[base + t] - alloc_dest[base]);
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
    if t == nd {
        for (var k = 0u; k < 4u; k = k + 1u) {
            let len = alloc_offset(k, nd);
            pool_counters.len[k] = len;
            if len > pool_counters.cap[k] {
                atomicOr(&pool_counters.errors, 1u << k);
            }
        }
        return;
    }
    var p = plans[t];
    if (p.flags & PLAN_DELETE) != 0u {
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
