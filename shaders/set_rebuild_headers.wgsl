// set_rebuild_headers: the header of each dirty set (acl::rebuild::set_rebuild_headers, CPU twin),
// last of the write pass. One thread per dirty set t < rebuild.num_dirty, set dirty[t]: a deleted
// set's header cleared; a built set's from its plan (box, ranges, ε, touching count, guards),
// flags SET_LIVE (| SET_ZERO, | SET_MOVED when the box changed; SET_DIRTY cleared), rebuilt_step,
// f_ref = Σ |∇E| over the touching pairs' list in order, the identity rotation and the reference
// centre (the points' mean, summed as set_rebuild_points sums it).
// The pair terms may be in pages (src/acl/pages.rs): dispatched once per terms page (uniform
// term_page); a thread writes its header in the dispatch of its plan's terms page (page 0 for a
// plan with no terms: deleted, zero-force or not built).
// Loop bound per thread: 512 (centre, n_cp ≤ MAX_BOX_CPS) + 16,384 (the list, at most
// MAX_REBUILD_WORK entries) = 16,896.

#import layout
#import vec
#import acl
#import polar
#import acl_rebuild
#import pool_page

@group(0) @binding(0) var<uniform> rebuild: RebuildParams;
@group(0) @binding(1) var<storage, read> pos: array<vec4<f32>>;
@group(0) @binding(2) var<storage, read> dirty: array<u32>;
@group(0) @binding(3) var<storage, read> plans: array<RebuildPlan>;
@group(0) @binding(4) var<storage, read> cp_pool: array<u32>;
@group(0) @binding(5) var<storage, read> rebuild_terms: array<RebuildTerm>;
@group(0) @binding(6) var<storage, read_write> sets: array<ContactSet>;
@group(0) @binding(7) var<uniform> term_page: PoolPage;

@compute @workgroup_size(64)
fn set_rebuild_headers(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
    @builtin(local_invocation_index) lid: u32,
) {
    let t = thread_index(wid, nwg, lid, 64u);
    if t >= rebuild.num_dirty {
        return;
    }
    let k = dirty[t];
    let plan = plans[t];
    let listed = plan_built(plan) && (plan.flags & PLAN_ZERO) == 0u;
    if !select(term_page.page == 0u, page_holds(term_page, plan.term_off), listed) {
        return;
    }
    var s: ContactSet;
    if (plan.flags & PLAN_DELETE) != 0u {
        sets[k] = s;
        return;
    }
    if !plan_built(plan) {
        return;
    }
    let zero = (plan.flags & PLAN_ZERO) != 0u;
    let n = min(plan.n_cp, MAX_BOX_CPS);
    var f_ref = 0.0;
    if !zero {
        for (var e = 0u; e < min(plan.touching, MAX_REBUILD_WORK); e = e + 1u) {
            let term = rebuild_terms[plan.term_off - page_base(term_page) + e];
            if term.i == NONE {
                break;
            }
            let g = term.grad.xyz;
            f_ref = f_ref + sqrt(dot3(g, g));
        }
    }
    var c = vec3<f32>(0.0);
    for (var i = 0u; i < n; i = i + 1u) {
        c = c + pos[cp_pool[plan.cp_off + i]].xyz;
    }
    c = c / f32(n);
    let old_bx = sets[k].bx;
    s.bx = plan.new_bx;
    s.cp_off = plan.cp_off;
    s.n_cp = plan.n_cp;
    s.k_off = plan.k_off;
    s.flags = SET_LIVE | select(0u, SET_ZERO, zero) | select(0u, SET_MOVED, any(plan.new_bx != old_bx));
    s.eps = plan.eps;
    s.touching = plan.touching;
    s.rebuilt_step = rebuild.step;
    s.w_off = plan.w_off;
    s.n_watch = plan.n_watch;
    s.guard_near = plan.guard_near;
    s.guard_far = plan.guard_far;
    s.f_ref = f_ref;
    s.quat = quat_identity();
    s.centre = vec4<f32>(c, 0.0);
    sets[k] = s;
}
