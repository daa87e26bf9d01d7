// rod: the Discrete Elastic Rods helpers of the rod kernels, ported from src/rod.rs in f32 with the
// operation order of the f32 instantiation of the generic Rust code (math.rs `V3`), so a kernel and
// its CPU twin agree to rounding. Dot and cross products are vec.wgsl's written-out ones (not the
// `dot`/`cross` builtins, whose evaluation order is the driver's). No loops but element_gradient's
// 2 iterations.

#import layout
#import vec

// An empty slot of the index tables (point_bends, edge_bends): rod::NONE.
const NONE: u32 = 0xffffffffu;

// rod::parallel_transport: u rotated about a × b taking unit a to unit b.
fn parallel_transport(u: vec3<f32>, a: vec3<f32>, b: vec3<f32>) -> vec3<f32> {
    let k = cross3(a, b);
    let ku = cross3(k, u);
    return u + ku + cross3(k, ku) / (1.0 + dot3(a, b));
}

// rod::curvature_binormal: κb = 2 e⁰ × e¹ / d (xyz) and d = l₀ l₁ + e⁰·e¹ (w).
fn curvature_binormal(e0: vec3<f32>, e1: vec3<f32>, l0: f32, l1: f32) -> vec4<f32> {
    let d = l0 * l1 + dot3(e0, e1);
    return vec4<f32>(cross3(e0, e1) * (2.0 / d), d);
}

// The material frame (m₁, m₂) of an edge.
struct MaterialFrame {
    m1: vec3<f32>,
    m2: vec3<f32>,
};

// rod::material_frame: (m₁, m₂) of an edge with unit tangent t, reference director u and angle θ.
fn material_frame(t: vec3<f32>, u: vec3<f32>, theta: f32) -> MaterialFrame {
    let v = cross3(t, u);
    let s = sin(theta);
    let c = cos(theta);
    return MaterialFrame(u * c + v * s, v * c - u * s);
}

// rod::reference_twist: ψ after the directors were transported, accumulated from `previous`.
fn reference_twist(u0: vec3<f32>, t0: vec3<f32>, u1: vec3<f32>, t1: vec3<f32>, previous: f32) -> f32 {
    let p = parallel_transport(u0, t0, t1);
    let s = sin(previous);
    let c = cos(previous);
    let w = p * c + cross3(t1, p) * s;
    return previous + atan2(dot3(cross3(w, u1), t1), dot3(w, u1));
}

// rod::theta_terms: one bending element's (∂E/∂θ, ∂²E/∂θ², twisting part of ∂²E/∂θ²) for the angle of
// its edge `role` (0: e⁰, 1: e¹).
fn theta_terms(
    bending: f32,
    twisting: f32,
    kb: vec3<f32>,
    m1: vec3<f32>,
    m2: vec3<f32>,
    r0: f32,
    r1: f32,
    lbar: f32,
    twist_excess: f32,
    role: u32,
) -> vec3<f32> {
    let s = bending / lbar;
    let w0 = dot3(kb, m2);
    let w1 = -dot3(kb, m1);
    var dm = 2.0 * twisting * twist_excess / lbar;
    let ht = 2.0 * twisting / lbar;
    if role == 0u {
        dm = -dm;
    }
    return vec3<f32>(dm + s * (r1 * w0 - r0 * w1), ht + s * (r0 * w0 + r1 * w1), ht);
}

// theta_terms of the element r (κb and l̄ in kb) whose edges e⁰, e¹ have angles theta0, theta1, for
// the edge `role` of it with material frame mf (what theta_sweep and frame_solve sum per side;
// rod::theta_newton_step_of), with the stiffnesses EI and GJ.
fn element_terms(
    bending: f32,
    twisting: f32,
    theta0: f32,
    theta1: f32,
    r: BendRest,
    kb: vec4<f32>,
    mf: MaterialFrame,
    role: u32,
) -> vec3<f32> {
    let twist = theta1 - theta0 + r.ref_twist;
    return theta_terms(
        bending,
        twisting,
        kb.xyz,
        mf.m1,
        mf.m2,
        r.kappa[role][0],
        r.kappa[role][1],
        kb.w,
        twist - r.twist,
        role,
    );
}

// rod::newton_angle_step: the safeguarded Newton step −g/h, within one radian (same selections as
// the twin's, NaN cases included).
fn newton_angle_step(g: f32, h_in: f32, ht: f32) -> f32 {
    var h = h_in;
    if !(h > 0.5 * ht) {
        let ah = abs(h);
        if ah > ht || ht != ht {
            h = ah;
        } else {
            h = ht;
        }
    }
    if h != h || h <= 0.0 || g == 0.0 {
        return 0.0;
    }
    var s = -g / h;
    if s < -1.0 {
        s = -1.0;
    }
    if s > 1.0 {
        s = 1.0;
    }
    return s;
}

// f32::is_infinite (NaN is not).
fn is_infinite(x: f32) -> bool {
    return abs(x) > 3.4028235e38;
}

// rod::plastic_kappa for one edge j of an element: its rest curvature k dragged to within pp of
// the current (w0, w1) = (κb·m₂ʲ, −κb·m₁ʲ), then bounded by `bound` (the larger of p_max and the
// element's starting |ω̄|). The same selections as the twin's.
fn plastic_kappa(k: vec2<f32>, w0: f32, w1: f32, pp: f32, bound: f32) -> vec2<f32> {
    var k0 = k.x;
    var k1 = k.y;
    let d0 = k0 - w0;
    let d1 = k1 - w1;
    let dn = sqrt(d0 * d0 + d1 * d1);
    if dn > pp {
        let s = pp / dn;
        k0 = w0 + d0 * s;
        k1 = w1 + d1 * s;
    }
    let kn = sqrt(k0 * k0 + k1 * k1);
    if kn > bound {
        let s = bound / kn;
        k0 = k0 * s;
        k1 = k1 * s;
    }
    return vec2<f32>(k0, k1);
}

// The gradient of a bending element's bending and twisting energy on its three vertices, from what
// BendLocal::gather reads: the element b, its rest state r, its edges' frames f0, f1 and its
// vertices x0, x1, x2 (rod::BendLocal::<f32>::geometry and gradient, op for op; bend_gradient and
// bend_forces). Loop bound: 2 iterations (the element's two edges).
fn element_gradient(
    b: Bend,
    r: BendRest,
    f0: EdgeFrame,
    f1: EdgeFrame,
    x0: vec3<f32>,
    x1: vec3<f32>,
    x2: vec3<f32>,
    bending: f32,
    twisting: f32,
) -> array<vec3<f32>, 3> {
    // BendLocal::geometry.
    let e0 = x1 - x0;
    let e1 = x2 - x1;
    let len0 = norm3(e0);
    let len1 = norm3(e1);
    let t0 = e0 / len0;
    let t1 = e1 / len1;
    let kbd = curvature_binormal(e0, e1, b.rest_len[0], b.rest_len[1]);
    let kb = kbd.xyz;
    let denom = kbd.w;
    let mf0 = material_frame(t0, f0.u.xyz, f0.u.w);
    let mf1 = material_frame(t1, f1.u.xyz, f1.u.w);
    let m1 = array<vec3<f32>, 2>(mf0.m1, mf1.m1);
    let m2 = array<vec3<f32>, 2>(mf0.m2, mf1.m2);
    let lbar = b.rest_len[0] + b.rest_len[1];

    // bending_gradient_at: dE = s Σ_j (ωʲ − ω̄ʲ)·dωʲ = gv·dκb.
    let s = bending / lbar;
    var gv = vec3<f32>(0.0);
    for (var j = 0u; j < 2u; j++) {
        let w0 = dot3(kb, m2[j]);
        let w1 = -dot3(kb, m1[j]);
        let d0 = w0 - r.kappa[j][0];
        let d1 = w1 - r.kappa[j][1];
        gv += (m2[j] * d0 - m1[j] * d1) * s;
    }
    // kb_gradient_transpose.
    let kg = dot3(kb, gv);
    let gb0 = (e1 * kg - cross3(e1, gv) * 2.0) / denom;
    let gb2 = (-(cross3(e0, gv) * 2.0) - e0 * kg) / denom;
    let gb1 = -(gb0 + gb2);

    // twisting_gradient_at (the holonomy gradient through ψ), twist m = θ₁ − θ₀ + ψ.
    let twist = f1.u.w - f0.u.w + r.ref_twist;
    let dm = 2.0 * twisting * (twist - r.twist) / lbar;
    let h = cross3(t0, t1) / (1.0 + dot3(t0, t1));
    let gt0 = h * (-dm / len0);
    let gt2 = h * (dm / len1);
    let gt1 = -(gt0 + gt2);

    return array<vec3<f32>, 3>(gb0 + gt0, gb1 + gt1, gb2 + gt2);
}
