// render_obstacles: planes (as finite checkered squares), spheres and capsules as lit triangle meshes.
//
// The meshes are built on the CPU (src/render/mesh.rs `obstacle_mesh`) in world space. `Uniforms` and
// `shade` come from shaders/shared/render_common.wgsl (both pipelines share one uniform buffer).

#import render_common

struct Vertex {
    @location(0) pos: vec3<f32>,
    @location(1) normal: vec3<f32>,
    @location(2) color: vec4<f32>,
};

struct VsOut {
    @builtin(position) clip: vec4<f32>,
    @location(0) world: vec3<f32>,
    @location(1) normal: vec3<f32>,
    @location(2) color: vec4<f32>,
};

@vertex
fn vs_obstacle(v: Vertex) -> VsOut {
    var out: VsOut;
    out.clip = u.view_proj * vec4<f32>(v.pos, 1.0);
    out.world = v.pos;
    out.normal = v.normal;
    out.color = v.color;
    return out;
}

@fragment
fn fs_obstacle(v_in: VsOut) -> @location(0) vec4<f32> {
    return shade(v_in.color.rgb, v_in.normal, v_in.world);
}
