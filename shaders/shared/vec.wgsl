// vec: small vector helpers whose operation order the CPU twins mirror exactly (WGSL's `dot` may
// sum in another order or fuse; these do what the Rust `V3::dot` does).

fn dot3(a: vec3<f32>, b: vec3<f32>) -> f32 {
    return a.x * b.x + a.y * b.y + a.z * b.z;
}
