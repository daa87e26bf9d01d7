// quadrature_points: qpts[s * b + k] = Σ_m quad_weights[k][m] pos[cp[m]] for every quadrature
// point k of every segment s (b = params.quadrature), with w = quad_arc[s * b + k], the point's
// arc position along its yarn (read by the exclusion rule). CPU twin: contact::quadrature_points
// (shared/quadrature.wgsl). The ACL step computes them in segment_windows_quadrature instead.
// One thread per quadrature point; no loops.

#import layout
#import quadrature

@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read> segments: array<Segment>;
@group(0) @binding(2) var<storage, read> pos: array<vec4<f32>>;
@group(0) @binding(3) var<storage, read> quad_weights: array<vec4<f32>>;
@group(0) @binding(4) var<storage, read> quad_arc: array<f32>;
@group(0) @binding(5) var<storage, read_write> qpts: array<vec4<f32>>;

@compute @workgroup_size(256)
fn quadrature_points(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
    @builtin(local_invocation_index) lid: u32,
) {
    let i = thread_index(wid, nwg, lid, 256u);
    if i < params.num_segments * params.quadrature {
        quadrature_point(i);
    }
}
