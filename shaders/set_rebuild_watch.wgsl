// set_rebuild_watch: each rebuilt set's watched pairs copied from its plan's slot to its range
// of the watch pools, and its force for this step, f0, into fout_pool (acl::rebuild::
// set_rebuild_watch, CPU twin), after set_rebuild. One workgroup of 64 threads per dirty set
// t < rebuild.num_dirty (a deleted plan or one without points is left alone).
// Pages (src/acl/pages.rs): the watched-pair scratch by dirty index (as in set_rebuild_size) and
// the watch pools by offset may each be in pages; the kernel is dispatched once per pair of a
// scratch page and a pools page (uniform watch_pages: [scratch, pools]) over the run of dirty
// indices set_rebuild_runs found for the pair (watch_run: workgroup k takes plan first + k, up to
// end; unpaged, the round's grid and the run of all), and a workgroup acts only for a dirty set
// of the scratch page whose watched pairs live in the pools page (a set without any: pools page
// 0), so each set once.
// Loop bound per thread: 1 (n_watch ≤ MAX_WATCH = 32) + 8 (n_cp ≤ MAX_BOX_CPS = 512).

#import layout
#import vec
#import penalty
#import acl
#import acl_rebuild
#import pool_page

@group(0) @binding(0) var<uniform> rebuild: RebuildParams;
@group(0) @binding(1) var<storage, read> plans: array<RebuildPlan>;
@group(0) @binding(2) var<storage, read> plan_watch: array<WatchPair>;
@group(0) @binding(3) var<storage, read> plan_watch_loc: array<WatchLoc>;
@group(0) @binding(4) var<storage, read> f0_pool: array<vec4<f32>>;
@group(0) @binding(5) var<storage, read_write> watch_pool: array<WatchPair>;
@group(0) @binding(6) var<storage, read_write> watch_loc_pool: array<WatchLoc>;
@group(0) @binding(7) var<storage, read_write> fout_pool: array<vec4<f32>>;
@group(0) @binding(8) var<uniform> watch_pages: array<PoolPage, 2>;
@group(0) @binding(9) var<storage, read> watch_run: RebuildRun;

@compute @workgroup_size(64)
fn set_rebuild_watch(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
    @builtin(local_invocation_index) lid: u32,
) {
    let t = watch_run.first + wid.y * nwg.x + wid.x;
    let scratch_page = watch_pages[0];
    let pool_page = watch_pages[1];
    if t >= rebuild.num_dirty || t >= watch_run.end || !page_holds(scratch_page, t) {
        return;
    }
    let plan = plans[t];
    if !page_holds_range(pool_page, plan.w_off, plan.n_watch) {
        return;
    }
    let slot0 = (t - page_base(scratch_page)) * MAX_WATCH;
    let w0 = plan.w_off - page_base(pool_page);
    if !plan_built(plan) {
        return;
    }
    for (var e = lid; e < min(plan.n_watch, MAX_WATCH); e = e + 64u) {
        watch_pool[w0 + e] = plan_watch[slot0 + e];
        watch_loc_pool[w0 + e] = plan_watch_loc[slot0 + e];
    }
    for (var e = lid; e < min(plan.n_cp, MAX_BOX_CPS); e = e + 64u) {
        fout_pool[plan.cp_off + e] = f0_pool[plan.cp_off + e];
    }
}
