// spline: the Catmull-Rom segment (src/spline.rs) in f32, in the same order of operations as the
// Rust generic code evaluated at f32: the basis, a point of a segment, and its exact AABB from the
// roots of y'(t) (`spline::segment_aabb`, `spline::quadratic_roots_01`).

// Basis weights B_0..B_3 at t (`spline::basis`).
fn spline_basis(t: f32) -> vec4<f32> {
    let t2 = t * t;
    let t3 = t2 * t;
    return vec4<f32>(
        0.5 * (-t + 2.0 * t2 - t3),
        0.5 * (2.0 - 5.0 * t2 + 3.0 * t3),
        0.5 * (t + 4.0 * t2 - 3.0 * t3),
        0.5 * (-t2 + t3),
    );
}

// The segment with control points q0..q3 at t (`spline::eval`).
fn spline_eval(q0: vec3<f32>, q1: vec3<f32>, q2: vec3<f32>, q3: vec3<f32>, t: f32) -> vec3<f32> {
    let b = spline_basis(t);
    return q0 * b.x + q1 * b.y + q2 * b.z + q3 * b.w;
}

// Roots in (0, 1) of a t² + b t + c, as (count, t0, t1) (`spline::quadratic_roots_01`).
fn quadratic_roots_01(a: f32, b: f32, c: f32) -> vec3<f32> {
    var n = 0.0;
    var r = vec2<f32>(0.0, 0.0);
    let scale = max(max(abs(a), abs(b)), abs(c));
    if scale == 0.0 {
        return vec3<f32>(0.0, 0.0, 0.0);
    }
    if abs(a) <= 1e-12 * scale {
        if abs(b) > 0.0 {
            let t = -c / b;
            if t > 0.0 && t < 1.0 {
                return vec3<f32>(1.0, t, 0.0);
            }
        }
        return vec3<f32>(0.0, 0.0, 0.0);
    }
    let disc = b * b - 4.0 * a * c;
    if disc < 0.0 {
        return vec3<f32>(0.0, 0.0, 0.0);
    }
    let sq = sqrt(disc);
    var qv: f32;
    if b >= 0.0 {
        qv = -0.5 * (b + sq);
    } else {
        qv = -0.5 * (b - sq);
    }
    let t0 = qv / a;
    if t0 > 0.0 && t0 < 1.0 {
        r.x = t0;
        n = 1.0;
    }
    if qv != 0.0 {
        let t1 = c / qv;
        if t1 > 0.0 && t1 < 1.0 {
            if n == 0.0 {
                r.x = t1;
            } else {
                r.y = t1;
            }
            n = n + 1.0;
        }
    }
    return vec3<f32>(n, r.x, r.y);
}

// Exact axis-aligned bounds of the segment curve, not padded (`spline::segment_aabb`): lo, hi.
struct Aabb {
    lo: vec3<f32>,
    hi: vec3<f32>,
};

fn segment_aabb(q0: vec3<f32>, q1: vec3<f32>, q2: vec3<f32>, q3: vec3<f32>) -> Aabb {
    var lo = min(q1, q2);
    var hi = max(q1, q2);
    // y'(t) = A t² + B t + C per axis.
    let c = (q2 - q0) * 0.5;
    let b = (q0 * 4.0 - q1 * 10.0 + q2 * 8.0 - q3 * 2.0) * 0.5;
    let a = (q0 * -3.0 + q1 * 9.0 - q2 * 9.0 + q3 * 3.0) * 0.5;
    for (var axis = 0u; axis < 3u; axis = axis + 1u) {
        let roots = quadratic_roots_01(a[axis], b[axis], c[axis]);
        for (var k = 0u; k < u32(roots.x); k = k + 1u) {
            let y = spline_eval(q0, q1, q2, q3, roots[k + 1u])[axis];
            lo[axis] = min(lo[axis], y);
            hi[axis] = max(hi[axis], y);
        }
    }
    return Aabb(lo, hi);
}
