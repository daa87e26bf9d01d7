// sched_bits: the bitmap of the quadrature pairs of one segment pair that a box holds.

// sched::box_bits: bitmap (bit ka·b + kb) of the pairs (sa·b + ka, sb·b + kb) inside box bx with i < j.
// Loop bound: b² ≤ 121.
fn box_bits(bx: vec4<u32>, sa: u32, sb: u32, b: u32) -> vec4<u32> {
    var bits = vec4<u32>(0u);
    let a0 = sa * b;
    let b0 = sb * b;
    let ka0 = max(bx.x, a0);
    let ka1 = min(bx.y, a0 + b - 1u);
    let kb0 = max(bx.z, b0);
    let kb1 = min(bx.w, b0 + b - 1u);
    if ka0 > ka1 || kb0 > kb1 {
        return bits;
    }
    for (var i = ka0; i <= ka1; i = i + 1u) {
        for (var j = kb0; j <= kb1; j = j + 1u) {
            if i < j {
                let bit = (i - a0) * b + (j - b0);
                bits[bit / 32u] = bits[bit / 32u] | (1u << (bit % 32u));
            }
        }
    }
    return bits;
}
