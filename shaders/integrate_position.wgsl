// integrate_position: q += h v for every control point (CPU twin: step::integrate_position).
// One thread per control point; no loops.

#import layout

@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read> vel: array<vec4<f32>>;
@group(0) @binding(2) var<storage, read_write> pos: array<vec4<f32>>;

@compute @workgroup_size(256)
fn integrate_position(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
    @builtin(local_invocation_index) lid: u32,
) {
    let p = thread_index(wid, nwg, lid, 256u);
    if p >= params.num_points {
        return;
    }
    let q = pos[p];
    pos[p] = vec4<f32>(q.xyz + params.h * vel[p].xyz, q.w);
}
