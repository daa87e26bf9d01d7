// polar: the polar decomposition F = R S of src/polar.rs (`polar_decompose`: Newton ascent of
// tr(Rᵀ F) on a unit quaternion, warm-started, with an exact line search along each step's axis), and
// the quaternion helpers it needs, for any kernel that imports it (the polar_test tool kernel; ACL's
// set evaluation). Plain functions on values: no bindings here.
//
// Ported in f32 with the operation order of the f32 instantiation of the Rust code (sums and
// products written out through vec.wgsl), so on a GPU that rounds like the CPU the arithmetic is the
// same. sin, cos and atan2 are the driver's, which are not the Rust library's (WGSL only bounds their
// error loosely): they steer the iteration but do not decide its accuracy, which is fixed by the
// stopping tests on the gradient and on the step angle. So R agrees with the CPU twin to the
// convergence tolerance; the iteration count may differ by one where a step lands at the
// tolerance, and by more from a start near a half turn away, where rounding picks the path
// (tests/gpu_polar.rs states the bounds).
//
// Quaternions are vec4 [x, y, z, w] (vector part first), like the Rust `[T; 4]`.
// Loop bound per call: at most POLAR_MAX_ITERATIONS (40) ascent iterations, each running at most one
// power iteration of 64 steps (only at a stationary point that is not a maximum): ≤ 40 × 65 = 2,600.

#import layout
#import vec

// polar::MAX_ITERATIONS.
const POLAR_MAX_ITERATIONS: u32 = 40u;
// polar::POLAR_NOT_FINITE: F has a non-finite entry (the CPU's PolarError::NotFinite).
const POLAR_NOT_FINITE: u32 = 1u;
// polar::POLAR_NO_ENTRY: `bad_entry` when every entry is finite.
const POLAR_NO_ENTRY: u32 = 0xffffffffu;
// 8 f32::EPSILON = 2⁻²⁰, the tolerance of the f32 iteration (relative: F is scaled to |F| = 1).
const POLAR_TOL: f32 = 9.5367431640625e-7;

// polar::Polar, plus the error of the Result.
struct Polar {
    r: mat3x3<f32>,
    s: mat3x3<f32>,
    q: vec4<f32>,
    iterations: u32,
    // 0 or POLAR_NOT_FINITE; on error q is the normalized warm start, r its matrix, s zero.
    error: u32,
    // 3 col + row of the first non-finite entry in column-major order (the CPU's error), else
    // POLAR_NO_ENTRY.
    bad_entry: u32,
};

// polar::quat_identity.
fn quat_identity() -> vec4<f32> {
    return vec4<f32>(0.0, 0.0, 0.0, 1.0);
}

// polar::quat_normalize: q / |q|; a zero or non-finite q becomes the identity.
fn quat_normalize(q: vec4<f32>) -> vec4<f32> {
    let n2 = q.x * q.x + q.y * q.y + q.z * q.z + q.w * q.w;
    // Negated so that NaN is rejected too.
    if !(n2 > 0.0) || !finite3(vec3<f32>(n2)) {
        return quat_identity();
    }
    let inv = 1.0 / sqrt(n2);
    return q * inv;
}

// polar::quat_mul: Hamilton product a b (apply b, then a).
fn quat_mul(a: vec4<f32>, b: vec4<f32>) -> vec4<f32> {
    let v = b.xyz * a.w + a.xyz * b.w + cross3(a.xyz, b.xyz);
    return vec4<f32>(v, a.w * b.w - dot3(a.xyz, b.xyz));
}

// polar::quat_from_rotation_vector: the rotation by |θ| about θ/|θ|.
fn quat_from_rotation_vector(theta: vec3<f32>) -> vec4<f32> {
    let angle = norm3(theta);
    let half = angle * 0.5;
    // sin(½|θ|)/|θ| without a 0/0 at θ = 0.
    var k: f32;
    if angle < 1e-4 {
        k = 0.5 - angle * angle / 48.0;
    } else {
        k = sin(half) / angle;
    }
    return quat_normalize(vec4<f32>(theta * k, cos(half)));
}

// polar::quat_to_matrix: the rotation matrix of a unit quaternion.
fn quat_to_matrix(q: vec4<f32>) -> mat3x3<f32> {
    let x = q.x;
    let y = q.y;
    let z = q.z;
    let w = q.w;
    return mat3x3<f32>(
        vec3<f32>(1.0 - 2.0 * (y * y + z * z), 2.0 * (x * y + z * w), 2.0 * (x * z - y * w)),
        vec3<f32>(2.0 * (x * y - z * w), 1.0 - 2.0 * (x * x + z * z), 2.0 * (y * z + x * w)),
        vec3<f32>(2.0 * (x * z + y * w), 2.0 * (y * z - x * w), 1.0 - 2.0 * (x * x + y * y)),
    );
}

// polar::solve_spd: H⁻¹ g (xyz, w = 1) if the symmetric H is positive definite with a margin
// relative to `scale` (Sylvester's criterion); w = 0 otherwise.
fn polar_solve_spd(h: mat3x3<f32>, g: vec3<f32>, scale: f32) -> vec4<f32> {
    let margin = 1e-6 * scale;
    let m1 = h[0].x;
    let m2 = h[0].x * h[1].y - h[1].x * h[0].y;
    let det = m3_det(h);
    if !(m1 > margin && m2 > margin * scale && det > margin * scale * scale) {
        return vec4<f32>(0.0);
    }
    // Rows of H⁻¹ are the cofactor columns over det (H symmetric).
    let c0 = cross3(h[1], h[2]);
    let c1 = cross3(h[2], h[0]);
    let c2 = cross3(h[0], h[1]);
    return vec4<f32>(vec3<f32>(dot3(c0, g), dot3(c1, g), dot3(c2, g)) / det, 1.0);
}

// Gradient g and Hessian H of tr(Rᵀ A) (polar::ascent_terms).
struct PolarAscent {
    g: vec3<f32>,
    h: mat3x3<f32>,
};

// polar::ascent_terms, its 3-term sums unrolled (from zero, in the Rust order).
fn polar_ascent_terms(r: mat3x3<f32>, a: mat3x3<f32>) -> PolarAscent {
    var g = vec3<f32>(0.0);
    var tr = 0.0;
    var n = m3_diag(0.0);
    g = g + cross3(r[0], a[0]);
    tr = tr + dot3(r[0], a[0]);
    n = n + m3_outer(a[0], r[0]);
    g = g + cross3(r[1], a[1]);
    tr = tr + dot3(r[1], a[1]);
    n = n + m3_outer(a[1], r[1]);
    g = g + cross3(r[2], a[2]);
    tr = tr + dot3(r[2], a[2]);
    n = n + m3_outer(a[2], r[2]);
    let sym = (n + transpose(n)) * 0.5;
    return PolarAscent(g, m3_diag(tr) - sym);
}

// polar::negative_curvature_direction: a unit n with nᵀ H n < −margin (xyz, w = 1), by power
// iteration on c I − H, c = |H|_F; w = 0 when there is none. Loop bound: 64.
fn polar_negative_curvature_direction(h: mat3x3<f32>, margin: f32) -> vec4<f32> {
    let c = m3_norm(h);
    if !(c > 0.0) {
        return vec4<f32>(0.0);
    }
    let m = m3_diag(c) - h;
    var v = m[0];
    if dot3(m[1], m[1]) > dot3(v, v) {
        v = m[1];
    }
    if dot3(m[2], m[2]) > dot3(v, v) {
        v = m[2];
    }
    v = normalized3(v);
    for (var k = 0u; k < 64u; k++) {
        let w = normalized3(m3_mul_v(m, v));
        if dot3(w, w) == 0.0 {
            return vec4<f32>(0.0);
        }
        v = w;
    }
    if dot3(v, m3_mul_v(h, v)) < -margin {
        return vec4<f32>(v, 1.0);
    }
    return vec4<f32>(0.0);
}

// The row (0, 1, 2) of the first non-finite entry of a column, or 3.
fn polar_non_finite_row(c: vec3<f32>) -> u32 {
    if !finite3(vec3<f32>(c.x)) {
        return 0u;
    }
    if !finite3(vec3<f32>(c.y)) {
        return 1u;
    }
    if !finite3(vec3<f32>(c.z)) {
        return 2u;
    }
    return 3u;
}

// 3 col + row of the first non-finite entry in column-major order (the CPU's scan), or
// POLAR_NO_ENTRY.
fn polar_first_non_finite(f: mat3x3<f32>) -> u32 {
    let r0 = polar_non_finite_row(f[0]);
    if r0 < 3u {
        return r0;
    }
    let r1 = polar_non_finite_row(f[1]);
    if r1 < 3u {
        return 3u + r1;
    }
    let r2 = polar_non_finite_row(f[2]);
    if r2 < 3u {
        return 6u + r2;
    }
    return POLAR_NO_ENTRY;
}

// polar::polar_decompose: F = R S, iterating from the rotation `warm` (quat_identity() without a
// previous rotation). A proper rotation for every finite F; on a non-finite entry, `error` is
// POLAR_NOT_FINITE (see Polar).
fn polar_decompose(f: mat3x3<f32>, warm: vec4<f32>) -> Polar {
    let zero = m3_diag(0.0);
    var q = quat_normalize(warm);
    let bad = polar_first_non_finite(f);
    if bad != POLAR_NO_ENTRY {
        return Polar(quat_to_matrix(q), zero, q, 0u, POLAR_NOT_FINITE, bad);
    }
    let scale = m3_norm(f);
    if scale == 0.0 {
        // F = 0: every rotation is a polar factor of 0; keep the warm start.
        return Polar(quat_to_matrix(q), zero, q, 0u, 0u, POLAR_NO_ENTRY);
    }
    // Work on F / |F|_F; if |F|_F overflowed although every entry is finite, scale by the largest
    // entry instead.
    var inv: f32;
    if finite3(vec3<f32>(scale)) {
        inv = 1.0 / scale;
    } else {
        let mx = max(max(abs(f[0]), abs(f[1])), abs(f[2]));
        inv = 1.0 / max(max(mx.x, mx.y), mx.z);
    }
    let a = f * inv;
    var iterations = 0u;
    for (var it = 0u; it < POLAR_MAX_ITERATIONS; it++) {
        let r = quat_to_matrix(q);
        let t = polar_ascent_terms(r, a);
        let newton = polar_solve_spd(t.h, t.g, 1.0);
        var last = false;
        var axis: vec3<f32>;
        if norm3(t.g) <= POLAR_TOL {
            // Stationary: the maximum where H is positive definite; else a saddle or the minimum,
            // left by a half turn about a direction of negative curvature.
            if newton.w != 0.0 {
                break;
            }
            let d = polar_negative_curvature_direction(t.h, POLAR_TOL);
            if d.w == 0.0 {
                break;
            }
            axis = d.xyz * 3.14159265358979;
        } else {
            // Newton direction where H is positive definite, steepest ascent otherwise; the exact
            // maximum of the sinusoid E(φ) along it.
            var dir = t.g;
            if newton.w != 0.0 {
                dir = newton.xyz;
            }
            let n = normalized3(dir);
            let phi = atan2(dot3(n, t.g), dot3(n, m3_mul_v(t.h, n)));
            if !(phi > POLAR_TOL) {
                break;
            }
            // After a Newton step of φ the error is of order φ²: below the tolerance, stop.
            last = newton.w != 0.0 && phi * phi < POLAR_TOL;
            axis = n * phi;
        }
        q = quat_normalize(quat_mul(quat_from_rotation_vector(axis), q));
        iterations = it + 1u;
        if last {
            break;
        }
    }
    let r = quat_to_matrix(q);
    let rtf = m3_mul_m(transpose(r), f);
    return Polar(r, (rtf + transpose(rtf)) * 0.5, q, iterations, 0u, POLAR_NO_ENTRY);
}
