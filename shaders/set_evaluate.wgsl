// set_evaluate: the first half of ACL's evaluation (src/acl/evaluate.rs; CPU twin
// acl::evaluate::set_evaluate): for every clean set of at most ACL_MAX_SET_POINTS control points,
// the centre of mass of its points, the rotation of F = Σ (q_t − c) d̄_tᵀ by the warm-started polar
// decomposition (the header's quaternion as the warm start, the result stored back), the deviations
// Δ_t = Rᵀ(q_t − c) − d̄_t into dev_pool, and the invalidation: eq. 6 (max_t M_t 2r |Δ_t| / ε² > τ),
// then with ACL_EXTRA_INVALIDATION the guards and the watched pairs' crossing budget. An invalid
// model gets SET_DIRTY, a non-finite rotation SET_NOT_FINITE (set_force reports it).
// One thread per set. Loop bound per thread: 3 n (centre, F, deviations; n ≤ 1,008) + the polar
// decomposition's 2,600 + 32 watched pairs ≤ 5,656 iterations.

#import layout
#import vec
#import polar
#import acl

@group(0) @binding(0) var<uniform> acl: AclUniform;
@group(0) @binding(1) var<storage, read> pos: array<vec4<f32>>;
@group(0) @binding(2) var<storage, read> cp_pool: array<u32>;
@group(0) @binding(3) var<storage, read> dbar_pool: array<vec4<f32>>;
@group(0) @binding(4) var<storage, read> m_pool: array<f32>;
@group(0) @binding(5) var<storage, read> watch_pool: array<WatchPair>;
@group(0) @binding(6) var<storage, read> watch_loc_pool: array<WatchLoc>;
@group(0) @binding(7) var<storage, read_write> sets: array<ContactSet>;
@group(0) @binding(8) var<storage, read_write> dev_pool: array<vec4<f32>>;

// The set's t-th control point.
fn set_point(o: u32, t: u32) -> vec3<f32> {
    return pos[cp_pool[o + t]].xyz;
}

// Quadrature point i from the set's points, slots c0..c0 + 4 of the packed loc (the arithmetic of
// the exact path's quadrature points).
fn quad_point_local(o: u32, loc: WatchLoc, c0: u32, i: u32) -> vec3<f32> {
    let w = acl.weights[i % acl.quadrature];
    return set_point(o, watch_loc_slot(loc, c0)) * w.x + set_point(o, watch_loc_slot(loc, c0 + 1u)) * w.y
        + set_point(o, watch_loc_slot(loc, c0 + 2u)) * w.z + set_point(o, watch_loc_slot(loc, c0 + 3u)) * w.w;
}

// EvalCtx::crossing_error: the force the watched pairs that crossed 2r may be missing.
fn crossing_error(s: ContactSet, bound: f32) -> f32 {
    let r = acl.radius;
    var err = 0.0;
    for (var t = 0u; t < s.n_watch; t++) {
        let w = watch_pool[s.w_off + t];
        if abs(w.gap) > bound {
            break;
        }
        let loc = watch_loc_pool[s.w_off + t];
        let d = norm3(quad_point_local(s.cp_off, loc, 0u, w.i) - quad_point_local(s.cp_off, loc, 4u, w.j));
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
    let k = thread_index(wid, nwg, lid, 64u);
    if k >= acl.num_sets {
        return;
    }
    let s = sets[k];
    if !set_is_clean(s.flags) || s.n_cp > ACL_MAX_SET_POINTS {
        return;
    }
    let o = s.cp_off;
    let n = s.n_cp;
    // model::centre, model::set_rotation.
    var c = vec3<f32>(0.0);
    for (var t = 0u; t < n; t++) {
        c = c + set_point(o, t);
    }
    c = c / f32(max(n, 1u));
    var f = mat3x3<f32>(vec3<f32>(0.0), vec3<f32>(0.0), vec3<f32>(0.0));
    for (var t = 0u; t < n; t++) {
        f = f + m3_outer(set_point(o, t) - c, dbar_pool[o + t].xyz);
    }
    let polar = polar_decompose(f, s.quat);
    if polar.error != 0u {
        sets[k].flags = s.flags | SET_NOT_FINITE;
        return;
    }
    sets[k].quat = polar.q;
    // model::set_deviation and set_metric_and_max_deviation.
    let rt = transpose(polar.r);
    var worst = 0.0;
    var maxdev = 0.0;
    for (var t = 0u; t < n; t++) {
        let dev = m3_mul_v(rt, set_point(o, t) - c) - dbar_pool[o + t].xyz;
        dev_pool[o + t] = vec4<f32>(dev, 0.0);
        let norm = norm3(dev);
        worst = max(worst, m_pool[o + t] * norm);
        maxdev = max(maxdev, norm);
    }
    let metric = worst * 2.0 * acl.radius / (s.eps * s.eps);
    var dirty = !(metric <= acl.tolerance);
    if !dirty && (acl.flags & ACL_EXTRA_INVALIDATION) != 0u {
        // A member pair's distance changed by at most 2 · 1.25 · max|Δ| since the rebuild.
        let bound = 2.0 * BASIS_ABS_SUM_MAX * maxdev;
        if bound >= s.guard_far {
            dirty = true;
        } else if bound >= s.guard_near && crossing_error(s, bound) > acl.tolerance * s.f_ref {
            dirty = true;
        }
    }
    if dirty {
        sets[k].flags = s.flags | SET_DIRTY;
    }
}
