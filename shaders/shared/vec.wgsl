// vec: small vector helpers whose operation order the CPU twins mirror exactly (WGSL's `dot` and
// `cross` may sum in another order or fuse; these do what the Rust `V3` methods of src/math.rs do).

fn dot3(a: vec3<f32>, b: vec3<f32>) -> f32 {
    return a.x * b.x + a.y * b.y + a.z * b.z;
}

// V3::cross.
fn cross3(a: vec3<f32>, b: vec3<f32>) -> vec3<f32> {
    return vec3<f32>(a.y * b.z - a.z * b.y, a.z * b.x - a.x * b.z, a.x * b.y - a.y * b.x);
}

// V3::norm.
fn norm3(a: vec3<f32>) -> f32 {
    return sqrt(dot3(a, a));
}

// V3::normalized: divided by the norm; the zero vector stays zero.
fn normalized3(a: vec3<f32>) -> vec3<f32> {
    let n = norm3(a);
    if n > 0.0 {
        return a / n;
    }
    return a;
}

// 3×3 matrices are `mat3x3<f32>` by columns, like math::M3. Sums, differences, scalar products and
// `transpose` are the builtins (one rounding per entry, as in M3); products are written out below.

// M3::diag.
fn m3_diag(s: f32) -> mat3x3<f32> {
    return mat3x3<f32>(vec3<f32>(s, 0.0, 0.0), vec3<f32>(0.0, s, 0.0), vec3<f32>(0.0, 0.0, s));
}

// V3::outer: a bᵀ.
fn m3_outer(a: vec3<f32>, b: vec3<f32>) -> mat3x3<f32> {
    return mat3x3<f32>(a * b.x, a * b.y, a * b.z);
}

// M3::mul_v.
fn m3_mul_v(m: mat3x3<f32>, v: vec3<f32>) -> vec3<f32> {
    return m[0] * v.x + m[1] * v.y + m[2] * v.z;
}

// M3::mul_m.
fn m3_mul_m(a: mat3x3<f32>, b: mat3x3<f32>) -> mat3x3<f32> {
    return mat3x3<f32>(m3_mul_v(a, b[0]), m3_mul_v(a, b[1]), m3_mul_v(a, b[2]));
}

// M3::det: c₀ · (c₁ × c₂).
fn m3_det(m: mat3x3<f32>) -> f32 {
    return dot3(m[0], cross3(m[1], m[2]));
}

// M3::norm (Frobenius).
fn m3_norm(m: mat3x3<f32>) -> f32 {
    return sqrt(dot3(m[0], m[0]) + dot3(m[1], m[1]) + dot3(m[2], m[2]));
}
