// length: what the length projection's solver kernels (length_reduce, length_back, length_top)
// share (src/length.rs): the partition block size, the zero-preserving products that keep a NaN
// inside its own yarn, the workgroup copy of the rows they sweep, and the work of one workgroup of
// length_reduce and of length_back on SOLVER_BLOCKS blocks of a level (reduce_chunk, back_chunk),
// which length_top repeats over the top levels in one workgroup.

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
// length_top's first level has at most LENGTH_TOP_ROWS rows (length::TOP_ROWS): two chunks of
// SOLVER_BLOCKS blocks.
const LENGTH_TOP_ROWS: u32 = 1024u;

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

// A solver workgroup's first block on the level of length_level (.y its offset, .z its rows), or
// NO_CHUNK when the workgroup is past the level's blocks or the projection is not wanted: the
// entry of length_reduce, length_back and length_error_assemble_reduce, which return at NO_CHUNK.
// The same answer for every thread of the workgroup. Call in uniform control flow.
const NO_CHUNK: u32 = 0xffffffffu;
fn solver_chunk(wid: vec3<u32>, nwg: vec3<u32>, lid: u32) -> u32 {
    let nb = (length_level.z + BLOCK - 1u) / BLOCK;
    let j0 = solver_first_block(wid, nwg);
    if j0 >= nb {
        return NO_CHUNK;
    }
    if !projection_wanted(lid) {
        return NO_CHUNK;
    }
    return j0;
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

// One workgroup's share of length_reduce on the level at length_sys[off ..] (n rows, nb blocks):
// its SOLVER_BLOCKS blocks from block j0 (< nb). The workgroup stages their rows and the next
// block's (a barrier), then thread lid < SOLVER_BLOCKS writes row j0 + lid of the next level
// (right after this one) from a forward sweep over its block's interior and a backward sweep over
// the next block's; when the next level has one row, thread 0 writes its solution (d, 0, r/d, z/d)
// instead. Call in uniform control flow; rows is free again after the caller's next barrier.
// Loop bound: 9 (stage_rows), then 2 (BLOCK − 2) = 60.
fn reduce_chunk(off: u32, n: u32, j0: u32, lid: u32) {
    let r0 = j0 * BLOCK;
    stage_rows(off, r0, min(r0 + SOLVER_ROWS, n), lid);
    reduce_staged(off, n, j0, lid);
}

// reduce_chunk once rows[0 ..] holds the level's rows j0 BLOCK .. min((j0 + SOLVER_BLOCKS + 1)
// BLOCK, n) and a barrier has passed (length_error_assemble_reduce computes them there itself).
// Loop bound: 2 (BLOCK − 2) = 60.
fn reduce_staged(off: u32, n: u32, j0: u32, lid: u32) {
    let nb = (n + BLOCK - 1u) / BLOCK;
    let r0 = j0 * BLOCK;
    let j = j0 + lid;
    if lid < SOLVER_BLOCKS && j < nb {
        // Indices into rows (the level's row r0 is rows[0]).
        let s = lid * BLOCK;
        let sep = min(j * BLOCK + BLOCK, n) - 1u - r0;
        let row = rows[sep];
        var dd = row.x;
        var rr = row.z;
        var zz = row.w;
        var oo = row.y; // no interior: the previous separator is the row before
        if sep > s {
            // Block j's interior s .. sep, top-down: beta, rho, zeta end as the last interior
            // row's pivot and right-hand sides; g / beta is (T⁻¹)[last, first].
            let first = rows[s];
            var beta = first.x;
            var rho = first.z;
            var zeta = first.w;
            var g = 1.0;
            for (var i = s + 1u; i < sep; i = i + 1u) {
                let ri = rows[i];
                let w = div0(ri.y, beta);
                beta = ri.x - mul0(ri.y, w);
                rho = ri.z - mul0(w, rho);
                zeta = ri.w - mul0(w, zeta);
                g = -mul0(w, g);
            }
            let cr = row.y;
            let q = div0(cr, beta);
            dd = dd - mul0(q, cr);
            rr = rr - mul0(q, rho);
            zz = zz - mul0(q, zeta);
            oo = -mul0(first.y, mul0(q, g));
        }
        if j + 1u < nb {
            // Block j+1's interior s2 .. sep2, bottom-up: beta, rho, zeta end as its first row's.
            let s2 = sep + 1u;
            let sep2 = min(s2 + r0 + BLOCK, n) - 1u - r0;
            if sep2 > s2 {
                let last = rows[sep2 - 1u];
                var beta = last.x;
                var rho = last.z;
                var zeta = last.w;
                var below = last.y;
                for (var i = sep2 - 1u; i > s2; i = i - 1u) {
                    let ri = rows[i - 1u];
                    let w = div0(below, beta);
                    beta = ri.x - mul0(below, w);
                    rho = ri.z - mul0(w, rho);
                    zeta = ri.w - mul0(w, zeta);
                    below = ri.y;
                }
                // below is now the coupling of separator j to row s2.
                let q = div0(below, beta);
                dd = dd - mul0(q, below);
                rr = rr - mul0(q, rho);
                zz = zz - mul0(q, zeta);
            }
        }
        if nb == 1u {
            length_sys[off + n] = vec4<f32>(dd, 0.0, rr / dd, zz / dd);
        } else {
            length_sys[off + n + j] = vec4<f32>(dd, oo, rr, zz);
        }
    }
}

// One workgroup's share of length_back on the level at length_sys[off ..] (n rows, nb blocks),
// once the next level (right after it) holds its solution: its SOLVER_BLOCKS blocks from block j0
// (< nb). The workgroup stages their rows (a barrier), thread lid < SOLVER_BLOCKS solves block
// j0 + lid there (solve_block), and after a barrier all copy the rows back. Call in uniform control
// flow; rows is free again after the caller's next barrier.
// Loop bound: 8 (stage_rows), 2 (BLOCK − 1) − 1 = 61 (solve_block), 8 (the copy back).
fn back_chunk(off: u32, n: u32, j0: u32, lid: u32) {
    let nb = (n + BLOCK - 1u) / BLOCK;
    let r0 = j0 * BLOCK;
    let r1 = min(r0 + SOLVER_BLOCKS * BLOCK, n);
    // rows[0 ..] holds the level's rows r0 .. r1.
    stage_rows(off, r0, r1, lid);
    let j = j0 + lid;
    if lid < SOLVER_BLOCKS && j < nb {
        solve_block(j, lid * BLOCK, min(j * BLOCK + BLOCK, n) - 1u - r0, off + n);
    }
    workgroupBarrier();
    for (var i = r0 + lid; i < r1; i = i + SOLVER_GROUP) {
        length_sys[off + i] = rows[i - r0];
    }
}

// Block j at rows[s ..= sep] (its separator last), the next level's solution at length_sys[next ..].
fn solve_block(j: u32, s: u32, sep: u32, next: u32) {
    let xr = length_sys[next + j];
    var xl = vec4<f32>(0.0);
    if j > 0u {
        xl = length_sys[next + j - 1u];
    }
    let rs = rows[sep];
    rows[sep] = vec4<f32>(rs.x, rs.y, xr.z, xr.w);
    if sep == s {
        return;
    }
    let cl = rows[s].y;
    let cr = rs.y;
    // Forward: rows s .. sep get (pivot, coupling, eliminated r, eliminated z).
    var prev = vec4<f32>(0.0);
    for (var i = s; i < sep; i = i + 1u) {
        var ri = rows[i];
        var r = ri.z;
        var z = ri.w;
        if i == s {
            r = r - mul0(cl, xl.z);
            z = z - mul0(cl, xl.w);
        }
        if i == sep - 1u {
            r = r - mul0(cr, xr.z);
            z = z - mul0(cr, xr.w);
        }
        if i > s {
            let w = div0(ri.y, prev.x);
            ri.x = ri.x - mul0(ri.y, w);
            r = r - mul0(w, prev.z);
            z = z - mul0(w, prev.w);
        }
        prev = vec4<f32>(ri.x, ri.y, r, z);
        rows[i] = prev;
    }
    // Backward: the solution into r and z.
    var x = prev.z / prev.x;
    var xz = prev.w / prev.x;
    rows[sep - 1u] = vec4<f32>(prev.x, prev.y, x, xz);
    var o = prev.y;
    for (var i = sep - 1u; i > s; i = i - 1u) {
        let bi = rows[i - 1u];
        x = (bi.z - mul0(o, x)) / bi.x;
        xz = (bi.w - mul0(o, xz)) / bi.x;
        rows[i - 1u] = vec4<f32>(bi.x, bi.y, x, xz);
        o = bi.y;
    }
}
