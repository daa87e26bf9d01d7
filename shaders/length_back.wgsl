// length_back: stage length_projection, projection length_level.x + 1 (only while
// counters.length_iterations equals it), on the level of length_sys at rows
// length_level.y .. length_level.y + length_level.z, once the next level (right after it) holds its
// solution in r and z: back-substitution of the partitioned tridiagonal solver (CPU twin:
// length::length_back). Thread j gives block j's separator (its last row) its value from the next
// level and solves the block's interior with the separators on either side known (Thomas: pivots to
// the diagonal, solution to r and z).
// Each workgroup covers SOLVER_BLOCKS blocks (shaders/shared/length.wgsl): its SOLVER_GROUP threads
// copy the blocks' rows into workgroup memory (coalesced), thread k solves block j0 + k there (the
// sweeps are chains of dependent steps, which read from the storage buffer waited on memory at every
// step), and all of them copy the rows back.
// Loop bound: ⌈SOLVER_BLOCKS BLOCK / SOLVER_GROUP⌉ = 8 iterations of each copy, and
// 2 (BLOCK − 1) − 1 = 61 of the sweeps (a forward and a backward sweep over at most BLOCK − 1
// interior rows), whatever the number of rows.

#import layout
#import length

@group(0) @binding(0) var<uniform> length_level: vec4<u32>;
@group(0) @binding(1) var<storage, read_write> length_sys: array<vec4<f32>>;
@group(0) @binding(2) var<storage, read_write> counters: Counters;

@compute @workgroup_size(64)
fn length_back(
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
