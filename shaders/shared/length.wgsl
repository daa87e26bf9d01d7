// length: what the length projection's solver kernels share (src/length.rs): the partition
// block size and the zero-preserving products that keep a NaN inside its own yarn.

#import vec

const BLOCK: u32 = 32u;

// a b, but exactly 0 when either factor is 0 even if the other is not finite (length::mul0): the
// products that cross a zero coupling (between yarns) keep a NaN in its own yarn.
fn mul0(a: f32, b: f32) -> f32 {
    if a == 0.0 || b == 0.0 {
        return 0.0;
    }
    return a * b;
}

// a / b, but exactly 0 when a is 0 (length::div0).
fn div0(a: f32, b: f32) -> f32 {
    if a == 0.0 {
        return 0.0;
    }
    return a / b;
}
