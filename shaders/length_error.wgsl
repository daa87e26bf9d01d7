// length_error: stage length_projection, iteration length_level.x (only while
// counters.length_iterations equals it, or it + 1 with length_level.w = 1: iteration 0 when
// length_setup committed projection 1): per edge, the unit direction t and the constraint value
// C = |x_b − x_a| − ℓ at x = q + length_disp into length_dir (xyz: t, w: C), and, unless
// length_level.w = 1 (no check reads it then), the largest relative error |C / ℓ| into
// counters.length_error_bits by atomicMax on its bits (NaN and ∞ as +∞)
// (CPU twin: length::length_error). The edge vector is formed from differences (q_b − q_a plus
// d_b − d_a) so it keeps its precision far from the origin (shared/length_edge.wgsl). When
// length_setup committed projection 1, the step dispatches length_error_assemble in place of
// iteration 0's length_error and projection 1's length_assemble. One thread per edge; the workgroup reads
// the iteration count once and takes the maximum of its edges' errors in workgroup memory before its
// one atomicMax on counters (one address that every edge's thread otherwise updated, twice a
// step). No loops.

#import layout
#import length_edge

@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<uniform> length_level: vec4<u32>;
@group(0) @binding(2) var<storage, read> edges: array<Edge>;
@group(0) @binding(3) var<storage, read> pos: array<vec4<f32>>;
@group(0) @binding(4) var<storage, read> length_disp: array<vec4<f32>>;
@group(0) @binding(5) var<storage, read_write> length_dir: array<vec4<f32>>;
@group(0) @binding(6) var<storage, read_write> counters: Counters;

// The workgroup's copy of counters.length_iterations, and the largest error bits of its edges.
var<workgroup> wg_iterations: u32;
var<workgroup> wg_error_bits: atomic<u32>;

@compute @workgroup_size(256)
fn length_error(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
    @builtin(local_invocation_index) lid: u32,
) {
    if lid == 0u {
        wg_iterations = atomicLoad(&counters.length_iterations);
        atomicStore(&wg_error_bits, 0u);
    }
    workgroupBarrier();
    let k = thread_index(wid, nwg, lid, 256u);
    let committed = length_level.w != 0u;
    let live = k < params.num_edges && wg_iterations == length_level.x + u32(committed);
    if live {
        atomicMax(&wg_error_bits, edge_error(k));
    }
    workgroupBarrier();
    if live && lid == 0u && !committed {
        atomicMax(&counters.length_error_bits, atomicLoad(&wg_error_bits));
    }
}

// Edge k's direction and constraint value into length_dir; the bits of its relative error.
fn edge_error(k: u32) -> u32 {
    let dk = edge_direction(k);
    length_dir[k] = dk;
    // Bits of the non-negative error order like the floats; anything above +∞'s bits is a NaN.
    return min(bitcast<u32>(abs(dk.w / edges[k].rest_length)), 0x7f800000u);
}
