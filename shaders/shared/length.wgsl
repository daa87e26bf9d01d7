// length: what the length projection's solver kernels (length_reduce, length_back) share
// (src/length.rs): the partition block size, the zero-preserving products that keep a NaN inside
// its own yarn, and the workgroup copy of the rows they sweep.

#import vec

const BLOCK: u32 = 32u;

// The solver kernels (length_reduce, length_back) run SOLVER_GROUP threads per workgroup, and each
// workgroup covers SOLVER_BLOCKS consecutive blocks of a level (one thread sweeps each block; the
// others help stage the rows): the sweeps are chains of dependent steps, so their rows are first
// copied into workgroup memory with coalesced loads instead of being read one strided row at a time
// from the storage buffer (length::SOLVER_GROUP, length::SOLVER_BLOCKS).
const SOLVER_GROUP: u32 = 64u;
const SOLVER_BLOCKS: u32 = 16u;
// Rows one workgroup stages: its blocks, and for length_reduce the block after them.
const SOLVER_ROWS: u32 = 544u; // (SOLVER_BLOCKS + 1) BLOCK

// Workgroup g's first block when each workgroup covers SOLVER_BLOCKS (grids of 2-D workgroups, as
// thread_index counts them).
fn solver_first_block(wid: vec3<u32>, nwg: vec3<u32>) -> u32 {
    return (wid.y * nwg.x + wid.x) * SOLVER_BLOCKS;
}

// The solver kernels' workgroup copy of the rows they sweep (length_reduce: its blocks and the
// next one; length_back: its blocks), and whether the projection is wanted. The importing kernel
// binds length_level, length_sys and counters.
var<workgroup> rows: array<vec4<f32>, SOLVER_ROWS>;
var<workgroup> live: u32;

// Whether projection length_level.x + 1 runs (counters.length_iterations equals it), the same
// answer for every thread of the workgroup. Call in uniform control flow.
fn projection_wanted(lid: u32) -> bool {
    if lid == 0u {
        live = u32(atomicLoad(&counters.length_iterations) == length_level.x + 1u);
    }
    return workgroupUniformLoad(&live) != 0u;
}

// Rows r0 .. r1 of the level at length_sys[off ..] into rows[0 ..], SOLVER_GROUP at a time
// (coalesced), then a barrier. Call in uniform control flow.
// Loop bound: ⌈SOLVER_ROWS / SOLVER_GROUP⌉ = 9 iterations.
fn stage_rows(off: u32, r0: u32, r1: u32, lid: u32) {
    for (var i = r0 + lid; i < r1; i = i + SOLVER_GROUP) {
        rows[i - r0] = length_sys[off + i];
    }
    workgroupBarrier();
}

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
