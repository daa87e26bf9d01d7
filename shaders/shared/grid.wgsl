// grid: the exact contact grid's keys and pair rule (src/contact/grid.rs), shared by
// aabb_raster, grid_write, candidate_count and candidate_write. Needs `layout`.

const GRID_HALF_RANGE: i32 = 131072; // 2^17 cells each side of the origin
const MAX_CELLS_PER_SEGMENT: u32 = 65536u;
const MAX_CELL_RUN: u32 = 4096u;
const GRID_SENTINEL: u32 = 0xFFFFFFFFu;
// r · PAD_FACTOR pads the segment boxes (1 + 2^-13, exact in f32).
const PAD_FACTOR: f32 = 1.0001220703125;

// The packed key (lo, hi) of cell c (`grid::pack_key`): 18 bits per axis offset by 2^17; lo the
// low 8 bits of x, y, z (the 24-bit sort key), hi the rest (below 2^30).
fn pack_key(c: vec3<i32>) -> vec2<u32> {
    let u = vec3<u32>(c + vec3<i32>(GRID_HALF_RANGE)) & vec3<u32>(0x3FFFFu);
    return vec2<u32>(
        (u.x & 0xFFu) | ((u.y & 0xFFu) << 8u) | ((u.z & 0xFFu) << 16u),
        (u.x >> 8u) | ((u.y >> 8u) << 10u) | ((u.z >> 8u) << 20u),
    );
}

// Whether entries ea (first) and eb (after it, same cell) form a candidate emitted from this cell
// (`grid::pair_here`): overlapping padded boxes, and this is the lowest cell both cover.
fn pair_here(ea: KeyValue, ba: SegmentBox, bb: SegmentBox) -> bool {
    let overlap = all(ba.lo.xyz <= bb.hi.xyz) && all(bb.lo.xyz <= ba.hi.xyz);
    if !overlap {
        return false;
    }
    let k = pack_key(max(ba.cell_lo.xyz, bb.cell_lo.xyz));
    return k.x == ea.key_lo && k.y == ea.key_hi;
}
