// sched: the space-time scheduler's arithmetic shared by its kernels (src/sched/), in the CPU twins'
// order of operations.

// A segment may cover at most this many grid cells (sched::MAX_CELLS_PER_SEGMENT).
const SCHED_MAX_CELLS_PER_SEGMENT: u32 = 4096u;
// The cell boxes' hysteresis, in units of r (sched::CELL_MARGIN).
const SCHED_CELL_MARGIN: f32 = 0.0625;
// Cells on either side of 0 a cell coordinate may reach (sched::raster::CELL_RANGE = 2^30).
const SCHED_CELL_RANGE: f32 = 1073741824.0;
// max_t |B_0(t)| = max_t |B_3(t)| = 2/27 (raster::HANDLE_BASIS_MAX).
const HANDLE_BASIS_MAX: f32 = 0.074074075;
// f32::EPSILON.
const F32_EPSILON: f32 = 1.1920929e-7;

// raster::basis_field_bounds: conservative (lo, hi) of Σ_k B_k(t) d_k over t ∈ [0, 1] on one axis.
fn basis_field_bounds(d: vec4<f32>) -> vec2<f32> {
    let m = max(d.y, d.z);
    let hi = m + HANDLE_BASIS_MAX * (max(m - d.x, 0.0) + max(m - d.w, 0.0));
    let n = min(d.y, d.z);
    let lo = n - HANDLE_BASIS_MAX * (max(d.x - n, 0.0) + max(d.w - n, 0.0));
    return vec2<f32>(lo, hi);
}

// raster::movement_interval: the field's per-axis interval widened by 4 ε times the largest
// coordinate norm (mag2: its square).
fn movement_interval(d0: vec3<f32>, d1: vec3<f32>, d2: vec3<f32>, d3: vec3<f32>, mag2: f32) -> Interval {
    let pad = 4.0 * F32_EPSILON * sqrt(mag2);
    var out: Interval;
    out.lo = vec4<f32>(0.0);
    out.hi = vec4<f32>(0.0);
    for (var axis = 0u; axis < 3u; axis = axis + 1u) {
        let b = basis_field_bounds(vec4<f32>(d0[axis], d1[axis], d2[axis], d3[axis]));
        out.lo[axis] = b.x - pad;
        out.hi[axis] = b.y + pad;
    }
    return out;
}

// Interval::rel_norm: the largest norm of x − y for x in a, y in b, per axis.
fn rel_norm(a: Interval, b: Interval) -> f32 {
    var s = 0.0;
    for (var axis = 0u; axis < 3u; axis = axis + 1u) {
        let m = max(abs(a.hi[axis] - b.lo[axis]), abs(a.lo[axis] - b.hi[axis]));
        s = s + m * m;
    }
    return sqrt(s);
}

// Interval::drift_from: the norm of the vector by which a sticks out of reference per axis.
fn drift_from(a: Interval, reference: Interval) -> f32 {
    var s = 0.0;
    for (var axis = 0u; axis < 3u; axis = axis + 1u) {
        let m = max(max(reference.lo[axis] - a.lo[axis], a.hi[axis] - reference.hi[axis]), 0.0);
        s = s + m * m;
    }
    return sqrt(s);
}

// CellBox::valid.
fn box_valid(c: CellBox) -> bool {
    return c.lo.w == 1;
}

// CellBox::within: o covers every cell of c (an invalid c is within anything).
fn box_within(c: CellBox, o: CellBox) -> bool {
    return !box_valid(c)
        || (box_valid(o) && all(o.lo.xyz <= c.lo.xyz) && all(c.hi.xyz <= o.hi.xyz));
}

// CellBox::with_margin: the box with the margin bits of hi.w (sched::CELL_MARGIN_BITS) applied,
// the bits cleared.
fn box_with_margin(c: CellBox) -> CellBox {
    let bits = c.hi.w;
    var o = c;
    o.lo = vec4<i32>(c.lo.xyz - vec3<i32>(bits & 1, (bits >> 1u) & 1, (bits >> 2u) & 1), c.lo.w);
    o.hi = vec4<i32>(c.hi.xyz + vec3<i32>((bits >> 3u) & 1, (bits >> 4u) & 1, (bits >> 5u) & 1), 0);
    return o;
}

// CellBox::kept: last step's box while this step's (padded by r) is valid and within it, else this
// step's with its margin.
fn box_kept(c: CellBox, prev: CellBox) -> CellBox {
    // (box_within asks prev to be valid when c is.)
    if box_valid(c) && box_within(c, prev) {
        return prev;
    }
    return box_with_margin(c);
}

// CellBox::intersects.
fn box_intersects(c: CellBox, o: CellBox) -> bool {
    return box_valid(c) && box_valid(o) && all(c.lo.xyz <= o.hi.xyz) && all(o.lo.xyz <= c.hi.xyz);
}

// SchedEntry::bin_flags (sched::ENTRY_*).
const ENTRY_BIN: u32 = 0xffu;
const ENTRY_MIXED: u32 = 0x100u;
const ENTRY_DUE: u32 = 0x200u;
const ENTRY_TOUCH_SHIFT: u32 = 16u;
const ENTRY_TOUCH: u32 = 0xff0000u;

// The touching count schedule_process recorded in an entry (sched::entry_touching).
fn entry_touching(en: SchedEntry) -> u32 {
    return (en.bin_flags & ENTRY_TOUCH) >> ENTRY_TOUCH_SHIFT;
}
// sched::FAR: the bound of an entry with no unowned pair left.
const SCHED_FAR: f32 = 3.4028235e38;
// sched::lookup::MAX_LOOKUP.
const MAX_LOOKUP: u32 = 256u;

// sched::bin_for(sched::earliest_contact_steps(d, m, acc), max_bin): the bin of an entry with gap
// bound d, last-step relative movement m and relative change of movement bounded by acc.
fn sched_bin(d: f32, m: f32, acc: f32, max_bin: u32) -> u32 {
    if !(d > 0.0) {
        return 0u;
    }
    if d >= SCHED_FAR {
        return max_bin;
    }
    let p = m + 0.5 * acc;
    let den = p + sqrt(p * p + 2.0 * acc * d);
    if !(den > 0.0) {
        return max_bin;
    }
    let k = 2.0 * d / den;
    if !(k >= 2.0) {
        return 0u;
    }
    if !(k <= SCHED_FAR) {
        return max_bin;
    }
    // ⌊log₂ k⌋: the binary exponent of a normal float k ≥ 2.
    let l = ((bitcast<u32>(k) >> 23u) & 0xffu) - 127u;
    return min(l, max_bin);
}

// sched::release_rect: the rectangle of segment pairs of a released box, (sa0, sb0, width, rows);
// 0 rows for an empty box.
fn release_rect(bx: vec4<u32>, b: u32, nseg: u32) -> vec4<u32> {
    if bx.x > bx.y || bx.z > bx.w || nseg == 0u {
        return vec4<u32>(0u);
    }
    let last = nseg - 1u;
    let sa0 = bx.x / b;
    let sa1 = min(bx.y / b, last);
    let sb0 = bx.z / b;
    let sb1 = min(bx.w / b, last);
    if sa0 > sa1 || sb0 > sb1 {
        return vec4<u32>(0u);
    }
    return vec4<u32>(sa0, sb0, sb1 - sb0 + 1u, sa1 - sa0 + 1u);
}

// The segment-pair slots of a released box `bx`: its rectangle's width × rows (what release_count
// counts and release_scan_sizes scans).
fn release_slots(bx: vec4<u32>, b: u32, nseg: u32) -> u32 {
    let rect = release_rect(bx, b, nseg);
    return rect.z * rect.w;
}

// CellBox::contains.
fn box_contains(c: CellBox, p: vec3<i32>) -> bool {
    return box_valid(c) && all(c.lo.xyz <= p) && all(p <= c.hi.xyz);
}

// sched::first_new_shared: the first cell (x fastest, then y, then z) that the valid boxes cs and
// ct share and that is not in both ps and pt (their boxes of the last step); w = 1 when there is
// one, 0 when every shared cell is in both.
fn first_new_shared(cs: CellBox, ps: CellBox, ct: CellBox, pt: CellBox) -> vec4<i32> {
    let lo = max(cs.lo.xyz, ct.lo.xyz);
    let hi = min(cs.hi.xyz, ct.hi.xyz);
    if !(box_valid(ps) && box_valid(pt)) {
        return vec4<i32>(lo, 1);
    }
    let plo = max(ps.lo.xyz, pt.lo.xyz);
    let phi = min(ps.hi.xyz, pt.hi.xyz);
    if !(all(plo <= lo) && all(lo <= phi)) {
        return vec4<i32>(lo, 1);
    }
    if phi.x < hi.x {
        return vec4<i32>(phi.x + 1, lo.y, lo.z, 1);
    }
    if phi.y < hi.y {
        return vec4<i32>(lo.x, phi.y + 1, lo.z, 1);
    }
    if phi.z < hi.z {
        return vec4<i32>(lo.x, lo.y, phi.z + 1, 1);
    }
    return vec4<i32>(0);
}

// sched::newcomer_emits: whether segment s's grid item at cell c (new to s; ct, t's box, holds it
// too) writes the candidate pair (s, t): c is the pair's first_new_shared cell, and s the one
// segment it is new to or the lower of the two.
fn newcomer_emits(s: u32, t: u32, c: vec3<i32>, cs: CellBox, ps: CellBox, ct: CellBox, pt: CellBox) -> bool {
    let f = first_new_shared(cs, ps, ct, pt);
    return f.w == 1 && all(f.xyz == c) && (s < t || box_contains(pt, c));
}

// sched::box_cell_count: the cells of a box (0 when invalid).
fn box_cell_count(c: CellBox) -> u32 {
    if !box_valid(c) {
        return 0u;
    }
    let e = vec3<u32>(c.hi.xyz - c.lo.xyz + vec3<i32>(1));
    return e.x * e.y * e.z;
}

// sched::box_cell: cell j of a box, x-fastest.
fn box_cell(c: CellBox, j: u32) -> vec3<i32> {
    let ex = u32(c.hi.x - c.lo.x + 1);
    let ey = u32(c.hi.y - c.lo.y + 1);
    return vec3<i32>(c.lo.x + i32(j % ex), c.lo.y + i32(j / ex % ey), c.lo.z + i32(j / (ex * ey)));
}

// sched::SCHED_HASH_BITS: bits of cell_hash.
const SCHED_HASH_BITS: u32 = 23u;

// sched::cell_hash: the SCHED_HASH_BITS-bit hash of a cell (wrapping u32 arithmetic, as on the CPU).
fn cell_hash(c: vec3<i32>) -> u32 {
    var h = bitcast<u32>(c.x) * 0x9E3779B1u;
    h = h ^ (h >> 15u);
    h = (h + bitcast<u32>(c.y)) * 0x85EBCA77u;
    h = h ^ (h >> 13u);
    h = (h + bitcast<u32>(c.z)) * 0xC2B2AE3Du;
    h = h ^ (h >> 16u);
    return h >> (32u - SCHED_HASH_BITS);
}

// sched::SCHED_MAX_CELL_RUN: items of one hash run a grid lookup scans at most.
const SCHED_MAX_CELL_RUN: u32 = 4096u;
// sched::SCHED_GRID_SENTINEL's key words.
const SCHED_SENTINEL: u32 = 0xffffffffu;

// sched::cand_key_bits: bits of a segment index in a candidate key.
fn cand_key_bits(num_segments: u32) -> u32 {
    return 32u - countLeadingZeros(max(num_segments, 2u) - 1u);
}

// sched::cand_key: the sort record of pair a < b, key a << k | b (k ≤ 32).
fn cand_key(a: u32, b: u32, k: u32) -> KeyValue {
    var lo = b;
    var hi = 0u;
    if k >= 32u {
        hi = a;
    } else {
        lo = (a << k) | b;
        hi = a >> (32u - k);
    }
    return KeyValue(lo, hi, 0u, 0u);
}

// sched::cand_pair: the pair (a, b) of a candidate key.
fn cand_pair(kv: KeyValue, k: u32) -> vec2<u32> {
    if k >= 32u {
        return vec2<u32>(kv.key_hi, kv.key_lo);
    }
    let a = (kv.key_lo >> k) | (kv.key_hi << (32u - k));
    let b = kv.key_lo & ((1u << k) - 1u);
    return vec2<u32>(a, b);
}
