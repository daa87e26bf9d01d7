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
    let j0 = solver_chunk(wid, nwg, lid);
    if j0 == NO_CHUNK {
        return;
    }
    let off = length_level.y;
    let n = length_level.z;
    back_chunk(off, n, j0, lid);
}
