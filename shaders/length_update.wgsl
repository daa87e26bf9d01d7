// length_update: stage length_projection, projection length_level.x + 1 (only while
// counters.length_iterations equals it): x −= W ∇Cᵀ λ, gathered per control point: with
// λ_k = y_k − f q_k (y, q: r and z of level 0 of length_sys; f: length_fact of edge k's yarn), point p
// moves by inv_mass[p] (λ_a t_a − λ_b t_b) over the edge it starts (a) and the edge it ends (b), from
// point_edges (x: the edge it starts, y: the edge it ends, z: its yarn) (CPU twin:
// length::length_update). One thread per control point; no loops.

#import layout

const NO_EDGE: u32 = 0xffffffffu;

@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<uniform> length_level: vec4<u32>;
@group(0) @binding(2) var<storage, read> point_edges: array<vec4<u32>>;
@group(0) @binding(3) var<storage, read> inv_mass: array<f32>;
@group(0) @binding(4) var<storage, read> length_dir: array<vec4<f32>>;
@group(0) @binding(5) var<storage, read> length_sys: array<vec4<f32>>;
@group(0) @binding(6) var<storage, read> length_fact: array<f32>;
@group(0) @binding(7) var<storage, read_write> length_disp: array<vec4<f32>>;
@group(0) @binding(8) var<storage, read_write> counters: Counters;

@compute @workgroup_size(256)
fn length_update(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
    @builtin(local_invocation_index) lid: u32,
) {
    let p = thread_index(wid, nwg, lid, 256u);
    if p >= params.num_points || atomicLoad(&counters.length_iterations) != length_level.x + 1u {
        return;
    }
    let w = inv_mass[p];
    let pe = point_edges[p];
    let f = length_fact[pe.z];
    var dx = vec3<f32>(0.0);
    if pe.y != NO_EDGE {
        let row = length_sys[pe.y];
        dx = dx - (row.z - f * row.w) * length_dir[pe.y].xyz;
    }
    if pe.x != NO_EDGE {
        let row = length_sys[pe.x];
        dx = dx + (row.z - f * row.w) * length_dir[pe.x].xyz;
    }
    let d = length_disp[p];
    length_disp[p] = vec4<f32>(d.xyz + w * dx, d.w);
}
