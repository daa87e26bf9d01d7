// length_reduce: stage length_projection, projection length_level.x + 1 (only while
// counters.length_iterations equals it), on the level of length_sys at rows
// length_level.y .. length_level.y + length_level.z: one level of the partitioned tridiagonal solver
// (CPU twin: length::length_reduce). Rows are (diagonal, coupling to the previous row, r, z). The
// level is cut into blocks of BLOCK rows, the last row of each being its separator; thread j writes
// row j of the next level (right after this one), the Schur complement on the separators: separator
// j's row minus what block j's interior gives it (forward sweep, which also gives the coupling to
// separator j − 1) and what block j+1's interior gives it (backward sweep). When the next level has
// one row, thread 0 writes its solution (d, 0, r/d, z/d) instead.
// Each workgroup covers SOLVER_BLOCKS blocks (shaders/shared/length.wgsl): its SOLVER_GROUP threads
// first copy the rows its sweeps read (its blocks and the next block) into workgroup memory, with
// coalesced loads; then thread k sweeps block j0 + k from there. A sweep is a chain of dependent
// steps, so reading each step's row from the storage buffer (rows BLOCK apart across a warp) made
// every step wait for memory.
// Loop bound: ⌈SOLVER_ROWS / SOLVER_GROUP⌉ = 9 iterations of the copy, then 2 (BLOCK − 2) = 60 (two
// sweeps over at most BLOCK − 1 interior rows), whatever the number of rows.

#import layout
#import length

@group(0) @binding(0) var<uniform> length_level: vec4<u32>;
@group(0) @binding(1) var<storage, read_write> length_sys: array<vec4<f32>>;
@group(0) @binding(2) var<storage, read_write> counters: Counters;

@compute @workgroup_size(64)
fn length_reduce(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
    @builtin(local_invocation_index) lid: u32,
) {
    let off = length_level.y;
    let n = length_level.z;
    let nb = (n + BLOCK - 1u) / BLOCK;
    let j0 = solver_first_block(wid, nwg);
    if j0 >= nb {
        return;
    }
    if !projection_wanted(lid) {
        return;
    }
    let r0 = j0 * BLOCK;
    let r1 = min(r0 + SOLVER_ROWS, n);
    // rows[0 ..] holds the level's rows r0 .. r1.
    stage_rows(off, r0, r1, lid);
    let j = j0 + lid;
    if lid >= SOLVER_BLOCKS || j >= nb {
        return;
    }
    // Indices into rows (the level's row r0 is rows[0]).
    let s = lid * BLOCK;
    let sep = min(j * BLOCK + BLOCK, n) - 1u - r0;
    let row = rows[sep];
    var dd = row.x;
    var rr = row.z;
    var zz = row.w;
    var oo = row.y; // no interior: the previous separator is the row before
    if sep > s {
        // Block j's interior s .. sep, top-down: beta, rho, zeta end as the last interior row's
        // pivot and right-hand sides; g / beta is (T⁻¹)[last, first].
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
