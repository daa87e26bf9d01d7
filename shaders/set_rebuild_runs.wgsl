// set_rebuild_runs: where the K̄ blocks pool or the rebuild's pair terms are in pages, the run of
// dirty indices whose plans each pair of a blocks page and a terms page holds
// (acl::rebuild::set_rebuild_runs, CPU twin), after pool_alloc; set_rebuild_args turns them into
// set_rebuild's grids. Thread t < rebuild.num_dirty: a built plan (set_rebuild builds it in the
// dispatch of its pair: its blocks page and its terms page, a zero-force plan's pages 0 and 0)
// marks its pair with integer atomics, rebuild_runs[2 pair] = max(t + 1) and
// rebuild_runs[2 pair + 1] = max(!t) (the same maxima in any order), so that the pair's plans lie
// in the dirty indices [!word 1, word 0). pool_alloc gives the plans their ranges in dirty order,
// so a pair's plans are one run, and the runs of all pairs cover each dirty index about once. A
// plan whose page is past the pages (a pool that overflowed: the step reruns) marks none. The
// same for set_rebuild_watch's pairs of a watched-pair scratch page (by dirty index: t / its
// stride) and a watch pools page (w_off / its stride; a plan without watched pairs: page 0), in
// the words after set_rebuild's pairs (pool_alloc appends w_off in dirty order too).
// set_rebuild_args clears the words after reading them.
// 64-thread workgroups over the dirty sets (set_rebuild_springs' grid). No loops.

#import layout
#import acl
#import acl_rebuild

@group(0) @binding(0) var<uniform> rebuild: RebuildParams;
@group(0) @binding(1) var<uniform> page_pairs: PagePairs;
@group(0) @binding(2) var<storage, read> plans: array<RebuildPlan>;
@group(0) @binding(3) var<storage, read_write> rebuild_runs: array<atomic<u32>>;

@compute @workgroup_size(64)
fn set_rebuild_runs(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
    @builtin(local_invocation_index) lid: u32,
) {
    let t = thread_index(wid, nwg, lid, 64u);
    if t >= rebuild.num_dirty {
        return;
    }
    let plan = plans[t];
    if !plan_built(plan) {
        return;
    }
    var b = 0u;
    var m = 0u;
    if (plan.flags & PLAN_ZERO) == 0u {
        b = plan.k_off / page_pairs.block_stride;
        m = plan.term_off / page_pairs.term_stride;
    }
    if b < page_pairs.block_pages && m < page_pairs.term_pages {
        mark(b * page_pairs.term_pages + m, t);
    }
    let s = t / page_pairs.scratch_stride;
    var w = 0u;
    if plan.n_watch > 0u {
        w = plan.w_off / page_pairs.watch_stride;
    }
    if s < page_pairs.scratch_pages && w < page_pairs.watch_pages {
        mark(page_pairs.block_pages * page_pairs.term_pages + s * page_pairs.watch_pages + w, t);
    }
}

fn mark(pair: u32, t: u32) {
    atomicMax(&rebuild_runs[2u * pair], t + 1u);
    atomicMax(&rebuild_runs[2u * pair + 1u], ~t);
}
