// glue_projection: Fast Projection of the glue constraints q_p + h v_p = target_p, which is diagonal
// and exact: v_p = (target_p − q_p) / h (CPU twin: step::glue_projection). Glue points are distinct,
// so threads never write the same velocity. One thread per glued point; no loops.

#import layout

@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read> glue_points: array<u32>;
@group(0) @binding(2) var<storage, read> glue_target: array<vec4<f32>>;
@group(0) @binding(3) var<storage, read> pos: array<vec4<f32>>;
@group(0) @binding(4) var<storage, read_write> vel: array<vec4<f32>>;

@compute @workgroup_size(256)
fn glue_projection(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
    @builtin(local_invocation_index) lid: u32,
) {
    let i = thread_index(wid, nwg, lid, 256u);
    if i >= params.num_glue {
        return;
    }
    let p = glue_points[i];
    let v = (glue_target[i].xyz - pos[p].xyz) / params.h;
    vel[p] = vec4<f32>(v, vel[p].w);
}
