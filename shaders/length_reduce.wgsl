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
    let j0 = solver_chunk(wid, nwg, lid);
    if j0 == NO_CHUNK {
        return;
    }
    let off = length_level.y;
    let n = length_level.z;
    reduce_chunk(off, n, j0, lid);
}
