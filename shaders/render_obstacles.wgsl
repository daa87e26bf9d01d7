// render_obstacles: planes (as finite checkered squares), spheres and capsules as lit triangle meshes.
//
// The meshes are built on the CPU (src/render/mesh.rs `obstacle_mesh`) in world space. `Uniforms` and
// `shade` are copies of those in render_tubes.wgsl (WGSL has no include; both pipelines share one
// uniform buffer): tests/gpu_harness.rs `render_shaders_share_uniforms_and_lighting` checks that the
// copies agree, comments aside.

struct Uniforms {
    view_proj: mat4x4<f32>,
    eye: vec4<f32>,
    key_dir: vec4<f32>,
    fill_dir: vec4<f32>,
    tube: vec4<f32>,
};

@group(0) @binding(0) var<uniform> u: Uniforms;

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

fn shade(albedo_srgb: vec3<f32>, normal: vec3<f32>, world: vec3<f32>) -> vec4<f32> {
    let v = normalize(u.eye.xyz - world);
    var n = normalize(normal);
    if dot(n, v) < 0.0 {
        n = -n;
    }
    let albedo = pow(albedo_srgb, vec3<f32>(2.2));
    let l = u.key_dir.xyz;
    let diffuse = 0.72 * max(dot(n, l), 0.0) + 0.25 * max(dot(n, u.fill_dir.xyz), 0.0);
    let h = normalize(l + v);
    let spec = 0.12 * pow(max(dot(n, h), 0.0), 40.0);
    let c = albedo * (0.16 + diffuse) + vec3<f32>(spec);
    return vec4<f32>(pow(clamp(c, vec3<f32>(0.0), vec3<f32>(1.0)), vec3<f32>(1.0 / 2.2)), 1.0);
}

@fragment
fn fs_obstacle(v_in: VsOut) -> @location(0) vec4<f32> {
    return shade(v_in.color.rgb, v_in.normal, v_in.world);
}
