// set_evaluate: the first half of ACL's evaluation (src/acl/evaluate.rs; CPU twin
// acl::evaluate::set_evaluate): for every clean set of at most ACL_MAX_SET_POINTS control points,
// the centre of mass of its points, the rotation of F = Σ (q_t − c) d̄_tᵀ by the warm-started polar
// decomposition (the header's quaternion as the warm start, the result stored back), the deviations
// Δ_t = Rᵀ(q_t − c) − d̄_t into dev_pool, and the invalidation: eq. 6 (max_t M_t 2r |Δ_t| / ε² > τ),
// then with ACL_EXTRA_INVALIDATION the guards and the watched pairs' crossing budget. An invalid
// model gets SET_DIRTY, a non-finite rotation SET_NOT_FINITE (set_force reports it).
// Four sets per workgroup of 64, 16 lanes each (set 4 w + lid / 16, w the workgroup index on the
// 2-D grid), in three phases between workgroup barriers:
// 1. lane t < 16 loads the set's point t (through cp_pool) and d̄_t into workgroup memory;
// 2. lane 0 sums the centre and F over t = 0 … n − 1 in order (the twin's order) and decomposes F;
// 3. lane l computes the deviations of points l, l + 16, … and the maxima of M_t |Δ_t| and |Δ_t|
//    over them; lane 0 takes the maxima over the lanes (a maximum is exact in any order, so these
//    are the twin's) and decides.
// Points t ≥ 16 of a larger set are read from the storage buffers where they are used. Why lanes:
// a thread per set left the GPU nearly empty (the relaxed scarf's 19,889 sets are some 5 warps per
// multiprocessor of an H200) and its chain of dependent loads (cp_pool, then pos, for every point,
// before the sums) exposed to memory latency; now the loads are issued at once, the chain reads
// workgroup memory. No return before the last barrier (barriers need uniform control flow).
// The watch pools may be in pages (src/acl/pages.rs, uniform watch_pool_page): the kernel is then
// dispatched once per page, and evaluates only the sets whose watched pairs live in that page (a
// set without any: page 0), so each set once.
// Loop bound per thread: lane 0: 2 n (centre, F; n ≤ 1,008) + the polar decomposition's 2,600 + 16
// (maxima) + 32 watched pairs + ⌈n / 16⌉ (deviations) ≤ 4,727 iterations.

#import layout
#import vec
#import polar
#import acl
#import pool_page

@group(0) @binding(0) var<uniform> acl: AclUniform;
@group(0) @binding(1) var<storage, read> pos: array<vec4<f32>>;
@group(0) @binding(2) var<storage, read> cp_pool: array<u32>;
@group(0) @binding(3) var<storage, read> dbar_pool: array<vec4<f32>>;
@group(0) @binding(4) var<storage, read> m_pool: array<f32>;
@group(0) @binding(5) var<storage, read> watch_pool: array<WatchPair>;
@group(0) @binding(6) var<storage, read> watch_loc_pool: array<WatchLoc>;
@group(0) @binding(7) var<storage, read_write> sets: array<ContactSet>;
@group(0) @binding(8) var<storage, read_write> dev_pool: array<vec4<f32>>;
@group(0) @binding(9) var<uniform> watch_pool_page: PoolPage;

const GROUP_SETS: u32 = 4u;

// Phase 1's points and d̄ (set g's point t < 16 at 16 g + t), phase 2's results for phase 3 (Rᵀ, and
// the centre with w = 1 when the set goes on to its deviations), phase 3's per-lane maxima.
var<workgroup> w_point: array<vec4<f32>, 64>;
var<workgroup> w_dbar: array<vec4<f32>, 64>;
var<workgroup> w_rt: array<mat3x3<f32>, GROUP_SETS>;
var<workgroup> w_centre: array<vec4<f32>, GROUP_SETS>;
var<workgroup> w_worst: array<f32, 64>;
var<workgroup> w_maxdev: array<f32, 64>;

// Set g's t-th control point (its pools at o).
fn set_point(g: u32, o: u32, t: u32) -> vec3<f32> {
    if t < ACL_SET_LANES {
        return w_point[g * ACL_SET_LANES + t].xyz;
    }
    return pos[cp_pool[o + t]].xyz;
}

fn set_dbar(g: u32, o: u32, t: u32) -> vec3<f32> {
    if t < ACL_SET_LANES {
        return w_dbar[g * ACL_SET_LANES + t].xyz;
    }
    return dbar_pool[o + t].xyz;
}

// Quadrature point i from set g's points, slots c0..c0 + 4 of the packed loc (the arithmetic of
// the exact path's quadrature points).
fn quad_point_local(g: u32, o: u32, loc: WatchLoc, c0: u32, i: u32) -> vec3<f32> {
    let w = acl.weights[i % acl.quadrature];
    return set_point(g, o, watch_loc_slot(loc, c0)) * w.x + set_point(g, o, watch_loc_slot(loc, c0 + 1u)) * w.y
        + set_point(g, o, watch_loc_slot(loc, c0 + 2u)) * w.z + set_point(g, o, watch_loc_slot(loc, c0 + 3u)) * w.w;
}

// EvalCtx::crossing_error: the force the watched pairs that crossed 2r may be missing.
fn crossing_error(g: u32, s: ContactSet, bound: f32) -> f32 {
    let r = acl.radius;
    var err = 0.0;
    let w0 = s.w_off - page_base(watch_pool_page);
    for (var t = 0u; t < s.n_watch; t++) {
        let w = watch_pool[w0 + t];
        if abs(w.gap) > bound {
            break;
        }
        let loc = watch_loc_pool[w0 + t];
        let d = norm3(quad_point_local(g, s.cp_off, loc, 0u, w.i) - quad_point_local(g, s.cp_off, loc, 4u, w.j));
        if (d < 2.0 * r) != (w.gap < 0.0) {
            let dm = 2.0 * r - abs(d - 2.0 * r);
            let df = penalty_df(dm * dm, r);
            err += 2.0 * w.kw * abs(df) * dm;
        }
    }
    return err;
}

@compute @workgroup_size(64)
fn set_evaluate(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
    @builtin(local_invocation_index) lid: u32,
) {
    let g = lid / ACL_SET_LANES;
    let lane = lid % ACL_SET_LANES;
    let k = thread_index(wid, nwg, g, GROUP_SETS);
    var s: ContactSet;
    var live_set = false;
    if k < acl.num_sets {
        s = sets[k];
        live_set = set_is_clean(s.flags) && s.n_cp <= ACL_MAX_SET_POINTS
            && page_holds_range(watch_pool_page, s.w_off, s.n_watch);
    }
    let o = s.cp_off;
    let n = s.n_cp;
    if live_set && lane < n {
        w_point[lid] = vec4<f32>(pos[cp_pool[o + lane]].xyz, 0.0);
        w_dbar[lid] = dbar_pool[o + lane];
    }
    workgroupBarrier();
    if live_set && lane == 0u {
        // model::centre, model::set_rotation.
        var c = vec3<f32>(0.0);
        for (var t = 0u; t < n; t++) {
            c = c + set_point(g, o, t);
        }
        c = c / f32(max(n, 1u));
        var f = mat3x3<f32>(vec3<f32>(0.0), vec3<f32>(0.0), vec3<f32>(0.0));
        for (var t = 0u; t < n; t++) {
            f = f + m3_outer(set_point(g, o, t) - c, set_dbar(g, o, t));
        }
        let polar = polar_decompose(f, s.quat);
        if polar.error != 0u {
            sets[k].flags = s.flags | SET_NOT_FINITE;
            w_centre[g] = vec4<f32>(c, 0.0);
        } else {
            sets[k].quat = polar.q;
            w_rt[g] = transpose(polar.r);
            w_centre[g] = vec4<f32>(c, 1.0);
        }
    }
    workgroupBarrier();
    // model::set_deviation and set_metric_and_max_deviation, this lane's points.
    let go = live_set && w_centre[g].w != 0.0;
    var worst = 0.0;
    var maxdev = 0.0;
    if go {
        let rt = w_rt[g];
        let c = w_centre[g].xyz;
        for (var t = lane; t < n; t += ACL_SET_LANES) {
            let dev = m3_mul_v(rt, set_point(g, o, t) - c) - set_dbar(g, o, t);
            dev_pool[o + t] = vec4<f32>(dev, 0.0);
            let norm = norm3(dev);
            worst = max(worst, m_pool[o + t] * norm);
            maxdev = max(maxdev, norm);
        }
    }
    w_worst[lid] = worst;
    w_maxdev[lid] = maxdev;
    workgroupBarrier();
    if !(go && lane == 0u) {
        return;
    }
    for (var l = 1u; l < ACL_SET_LANES; l++) {
        worst = max(worst, w_worst[lid + l]);
        maxdev = max(maxdev, w_maxdev[lid + l]);
    }
    let metric = worst * 2.0 * acl.radius / (s.eps * s.eps);
    var dirty = !(metric <= acl.tolerance);
    if !dirty && (acl.flags & ACL_EXTRA_INVALIDATION) != 0u {
        // A member pair's distance changed by at most 2 · 1.25 · max|Δ| since the rebuild.
        let bound = 2.0 * BASIS_ABS_SUM_MAX * maxdev;
        if bound >= s.guard_far {
            dirty = true;
        } else if bound >= s.guard_near && crossing_error(g, s, bound) > acl.tolerance * s.f_ref {
            dirty = true;
        }
    }
    if dirty {
        sets[k].flags = s.flags | SET_DIRTY;
    }
}
