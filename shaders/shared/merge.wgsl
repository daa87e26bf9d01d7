// merge: the contact sets' flags and box arithmetic (acl::sets, acl::coalesce), for the
// coalescing and set-merge kernels. The SET_* flags are acl's.

#import acl

const MERGE_BIN: u32 = 8u;
const NO_SET: u32 = 0xffffffffu;

// sets::boxes_overlap: the boxes share a member pair (i, j), i < j.
fn boxes_overlap(a: vec4<u32>, b: vec4<u32>) -> bool {
    let u0 = max(a.x, b.x);
    let u1 = min(a.y, b.y);
    let v0 = max(a.z, b.z);
    let v1 = min(a.w, b.w);
    return u0 <= u1 && v0 <= v1 && u0 < v1;
}

// sets::box_hull.
fn box_hull(a: vec4<u32>, b: vec4<u32>) -> vec4<u32> {
    return vec4<u32>(min(a.x, b.x), max(a.y, b.y), min(a.z, b.z), max(a.w, b.w));
}

// sets::padded_box of one pair (i, j), i < j: [i ± α] × [j ± α] clamped to [0, nq), trimmed.
fn padded_box(i: u32, j: u32, alpha: u32, nq: u32) -> vec4<u32> {
    var bx = vec4<u32>(select(0u, i - alpha, i >= alpha), min(i + alpha, nq - 1u),
                       select(0u, j - alpha, j >= alpha), min(j + alpha, nq - 1u));
    bx.z = max(bx.z, bx.x + 1u);
    bx.y = min(bx.y, bx.w - 1u);
    return bx;
}

// A box as the hull accumulator stores it (coalesce::hull_code): [!u0, u1, !v0, v1], so that
// atomicMax on every word is the hull and all-zero words are the empty hull (its own inverse).
fn hull_code(bx: vec4<u32>) -> vec4<u32> {
    return vec4<u32>(~bx.x, bx.y, ~bx.z, bx.w);
}
