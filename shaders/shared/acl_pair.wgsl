// acl_pair: the point-pair terms of ACL's rebuild with a compensated depth
// (contact::point_pair_compensated), in the Rust order of operations. The depth t = |y_i − y_j|² − 4r²
// cancels for a pair near the contact distance, so it is computed from error-free transformations:
// TwoSum per axis for y_i − y_j = h + l, exact squares of h and of 2r, and a compensated sum.
// Both are written so that no compiler rewrite can break them (see `opaque` and `two_square`);
// tests/gpu_acl_rebuild.rs checks the result on inputs built to cancel, against the CPU and f64.

struct PairTerms {
    // ∂E/∂y_i; ∂E/∂y_j is its negative.
    grad_i: vec3<f32>,
    // ∂²E/∂y_i² (symmetric).
    hess_ii: mat3x3<f32>,
    energy: f32,
    // False when the pair does not touch by the compensated depth (t ≥ 0 or NaN).
    touching: bool,
};

// `x` unchanged, through bits the compiler cannot see through: `zero` is a run-time 0 the caller
// loads (a uniform or buffer value it knows is 0). Vulkan compilers may apply inexact algebra to
// plain float expressions (lavapipe's NIR folds (a + b) − a to b unless told otherwise, and WGSL
// cannot tell it), which would erase TwoSum's error term.
fn opaque(x: f32, zero: u32) -> f32 {
    return bitcast<f32>(bitcast<u32>(x) ^ zero);
}

// a + b = s + e exactly (Knuth's TwoSum), its intermediate sums made opaque.
fn two_sum(a: f32, b: f32, zero: u32) -> vec2<f32> {
    let s = opaque(a + b, zero);
    let bb = opaque(s - a, zero);
    return vec2<f32>(s, (a - (s - bb)) + (b - bb));
}

// a² = p + e exactly (Dekker's product). The split a = hi + lo into 12-bit halves is done on the
// bits (hi: a with its 12 low mantissa bits cleared), so no float expression can be contracted or
// folded; every partial product is then exact, fused or not, and e is the exact a² − p, the same
// number the CPU's Veltkamp split gives. (fma() is no help: Vulkan lets it round twice.)
fn two_square(a: f32, zero: u32) -> vec2<f32> {
    let p = a * a;
    let hi = bitcast<f32>(bitcast<u32>(a) & 0xfffff000u);
    let lo = opaque(a - hi, zero);
    return vec2<f32>(p, ((hi * hi - p) + 2.0 * hi * lo) + lo * lo);
}

// `zero`: a run-time 0 (see `opaque`).
fn point_pair_compensated(yi: vec3<f32>, yj: vec3<f32>, kappa_w: f32, r: f32, zero: u32) -> PairTerms {
    var out: PairTerms;
    let sx = two_sum(yi.x, -yj.x, zero);
    let sy = two_sum(yi.y, -yj.y, zero);
    let sz = two_sum(yi.z, -yj.z, zero);
    let hx = sx.x;
    let hy = sy.x;
    let hz = sz.x;
    let lx = sx.y;
    let ly = sy.y;
    let lz = sz.y;
    let px = two_square(hx, zero);
    let py = two_square(hy, zero);
    let pz = two_square(hz, zero);
    let c = two_square(2.0 * r, zero);
    let a1 = two_sum(px.x, py.x, zero);
    let a2 = two_sum(a1.x, pz.x, zero);
    let a3 = two_sum(a2.x, -c.x, zero);
    let small = (2.0 * hx * lx + lx * lx) + (2.0 * hy * ly + ly * ly) + (2.0 * hz * lz + lz * lz);
    let t = a3.x + (((((a1.y + a2.y) + a3.y) + ((px.y + py.y) + pz.y)) - c.y) + small);
    out.touching = t < 0.0;
    if !out.touching {
        return out;
    }
    let x = vec3<f32>(hx, hy, hz);
    let s = (hx * hx + hy * hy) + hz * hz;
    let four_r2 = 4.0 * r * r;
    let df = t * (s + four_r2) / (four_r2 * s * s);
    let inv = 1.0 / s;
    let ddf = 2.0 * four_r2 * inv * inv * inv;
    let d = 2.0 * kappa_w * df;
    let o = 4.0 * kappa_w * ddf;
    out.hess_ii = mat3x3<f32>(
        vec3<f32>(d, 0.0, 0.0) + (x * x.x) * o,
        vec3<f32>(0.0, d, 0.0) + (x * x.y) * o,
        vec3<f32>(0.0, 0.0, d) + (x * x.z) * o,
    );
    out.energy = kappa_w * (t * t / (four_r2 * s));
    out.grad_i = x * (2.0 * kappa_w * df);
    return out;
}
