// length_back: stage length_projection, projection length_level.x + 1 (only while
// counters.length_iterations equals it), on the level of length_sys at rows
// length_level.y .. length_level.y + length_level.z, once the next level (right after it) holds its
// solution in r and z: back-substitution of the partitioned tridiagonal solver (CPU twin:
// length::length_back). Thread j gives block j's separator (its last row) its value from the next
// level and solves the block's interior with the separators on either side known (Thomas: pivots to
// the diagonal, solution to r and z).
// Loop bound: 2 (BLOCK − 1) − 1 = 61 iterations per thread (a forward and a backward sweep over at
// most BLOCK − 1 interior rows), whatever the number of rows.

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
    let j = thread_index(wid, nwg, lid, 64u);
    let off = length_level.y;
    let n = length_level.z;
    let nb = (n + BLOCK - 1u) / BLOCK;
    if j >= nb || atomicLoad(&counters.length_iterations) != length_level.x + 1u {
        return;
    }
    let s = off + j * BLOCK;
    let sep = off + min(j * BLOCK + BLOCK, n) - 1u;
    let xr = length_sys[off + n + j];
    var xl = vec4<f32>(0.0);
    if j > 0u {
        xl = length_sys[off + n + j - 1u];
    }
    let rs = length_sys[sep];
    length_sys[sep] = vec4<f32>(rs.x, rs.y, xr.z, xr.w);
    if sep == s {
        return;
    }
    let cl = length_sys[s].y;
    let cr = rs.y;
    // Forward: rows s .. sep get (pivot, coupling, eliminated r, eliminated z).
    var prev = vec4<f32>(0.0);
    for (var i = s; i < sep; i = i + 1u) {
        var ri = length_sys[i];
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
        length_sys[i] = prev;
    }
    // Backward: the solution into r and z.
    var x = prev.z / prev.x;
    var xz = prev.w / prev.x;
    length_sys[sep - 1u] = vec4<f32>(prev.x, prev.y, x, xz);
    var o = prev.y;
    for (var i = sep - 1u; i > s; i = i - 1u) {
        let bi = length_sys[i - 1u];
        x = (bi.z - mul0(o, x)) / bi.x;
        xz = (bi.w - mul0(o, xz)) / bi.x;
        length_sys[i - 1u] = vec4<f32>(bi.x, bi.y, x, xz);
        o = bi.y;
    }
}
