// length_error_assemble: iteration 0's length_error and projection 1's length_assemble in one
// dispatch, for the step whose length_setup committed projection 1 (length::first_committed; then
// no check stands between them and iteration 0 keeps no error): only while
// counters.length_iterations equals length_level.x + 1 = 1, per edge k, its direction and constraint
// value into length_dir[k] as length_error writes them, and row k of level 0 of length_sys as
// length_assemble writes it. The row needs the previous edge's direction, and a closed yarn's
// Sherman–Morrison terms its last and first edges' (shared/length_row.wgsl,
// length_cyclic_terms.wgsl); this thread computes those itself (shared/length_edge_row.wgsl, the
// same operations), as other threads of the dispatch write them. So the dispatch gives bit for bit what
// the two give (CPU twin: length::length_error_assemble, the two twins in turn). One thread per
// edge; no loops.

#import layout
#import vec
#import length_edge_row

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

// The workgroup's copy of counters.length_iterations.
var<workgroup> wg_iterations: u32;

@compute @workgroup_size(256)
fn length_error_assemble(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
    @builtin(local_invocation_index) lid: u32,
) {
    if lid == 0u {
        wg_iterations = atomicLoad(&counters.length_iterations);
    }
    workgroupBarrier();
    let k = thread_index(wid, nwg, lid, 256u);
    if k >= params.num_edges || wg_iterations != length_level.x + 1u {
        return;
    }
    let dk = edge_direction(k);
    length_dir[k] = dk;
    length_sys[k] = edge_row(k, dk);
}
