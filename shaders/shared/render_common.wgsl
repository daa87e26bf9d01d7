// render_common: what both render pipelines share (they bind one uniform buffer): the camera and
// light uniforms and the lighting function, so yarn and obstacles are lit alike.

struct Uniforms {
    view_proj: mat4x4<f32>,
    eye: vec4<f32>,      // xyz: camera position
    key_dir: vec4<f32>,  // xyz: unit direction towards the key light
    fill_dir: vec4<f32>, // xyz: unit direction towards the fill light
    tube: vec4<f32>,     // x: radius, y: samples per segment, z: sides, w: unused
};

@group(0) @binding(0) var<uniform> u: Uniforms;

// Two directional lights fixed to the camera, ambient, a little specular; lit in linear space.
fn shade(albedo_srgb: vec3<f32>, normal: vec3<f32>, world: vec3<f32>) -> vec4<f32> {
    let v = normalize(u.eye.xyz - world);
    var n = normalize(normal);
    // Triangles are drawn from both sides: light the side that faces the eye.
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
