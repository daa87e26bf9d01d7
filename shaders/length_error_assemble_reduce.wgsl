// length_error_assemble_reduce: length_error_assemble and projection 1's length_reduce of level 0
// in one dispatch, for a step whose length_setup committed projection 1 and whose level 0 has more
// rows than length_top takes (length::top_level > 0). Only while counters.length_iterations equals
// length_level.x + 1 = 1 (both kernels' condition). Each workgroup covers length_reduce's
// SOLVER_BLOCKS blocks of level 0 (row k is edge k; length_level.y = 0, .z = the edges) and the
// block after them: its threads compute those rows themselves into workgroup memory (edge_row,
// shared/length_edge_row.wgsl: each edge's direction and its neighbours', the operations
// length_error_assemble makes), where length_reduce would load them from length_sys; for the rows
// of its own blocks they also write length_dir and length_sys as length_error_assemble does (the
// block after them is the next workgroup's to write). After a barrier, the workgroup's
// length_reduce (reduce_staged). So the dispatch gives bit for bit what the two give (CPU twin:
// length::length_error_assemble_reduce, the two twins in turn).
// Loop bound: ⌈SOLVER_ROWS / SOLVER_GROUP⌉ = 9 rows a thread, then reduce_staged's 60.

#import layout
#import vec
#import length_edge_row
#import length

@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<uniform> length_level: vec4<u32>;
@group(0) @binding(2) var<storage, read> yarns: array<Yarn>;
@group(0) @binding(3) var<storage, read> edges: array<Edge>;
@group(0) @binding(4) var<storage, read> inv_mass: array<f32>;
@group(0) @binding(5) var<storage, read> pos: array<vec4<f32>>;
@group(0) @binding(6) var<storage, read> length_disp: array<vec4<f32>>;
@group(0) @binding(7) var<storage, read_write> length_dir: array<vec4<f32>>;
@group(0) @binding(8) var<storage, read_write> length_sys: array<vec4<f32>>;
@group(0) @binding(9) var<storage, read_write> counters: Counters;

@compute @workgroup_size(64)
fn length_error_assemble_reduce(
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
    let r0 = j0 * BLOCK;
    let r1 = min(r0 + SOLVER_ROWS, n);
    let own = min(r0 + SOLVER_BLOCKS * BLOCK, n);
    for (var r = r0 + lid; r < r1; r = r + SOLVER_GROUP) {
        let dk = edge_direction(r);
        let row = edge_row(r, dk);
        rows[r - r0] = row;
        if r < own {
            length_dir[r] = dk;
            length_sys[off + r] = row;
        }
    }
    workgroupBarrier();
    reduce_staged(off, n, j0, lid);
}
