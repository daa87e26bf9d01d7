// nonrigid_damping_integrate: nonrigid_damping, object_contact and integrate_position in one
// dispatch, for a scene without free balls (their kernels change yarn velocities between the
// damping and the positions): workgroup g damps block params.first_block + g as nonrigid_damping
// does (shared/damping.wgsl), then each thread takes the points of the block it updated (i = t,
// t + 64, …, over the whole block, a block of fewer than 2 points included) through object_contact's
// velocity update and q += h v, as object_contact_integrate does (shared/contact_integrate.wgsl).
// Every phase's blocks partition the control points (Sim::from_build gives each point one block
// per phase), so every point is moved once; a point's contact and position need its own damped
// velocity only, which its thread wrote, and no block reads another's points, so the dispatch
// gives bit for bit what the three give one after the other (CPU twin:
// step::nonrigid_damping_integrate, the twins in turn).
// Loop bound per thread: nonrigid_damping's 4 ⌈k / 64⌉ + 72, then ⌈k / 64⌉ points × (1 +
// params.num_obstacles): the step dispatches this kernel only while that stays within lavapipe's
// 65,535 (step::damping_integrate_iterations), and the three kernels otherwise.

#import layout
#import damping
#import contact_integrate

@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read> block_start: array<u32>;
@group(0) @binding(2) var<storage, read> block_points: array<u32>;
@group(0) @binding(3) var<storage, read> mass: array<f32>;
@group(0) @binding(4) var<storage, read> inv_mass: array<f32>;
@group(0) @binding(5) var<storage, read> obstacles: array<ObstacleShape>;
@group(0) @binding(6) var<storage, read_write> pos: array<vec4<f32>>;
@group(0) @binding(7) var<storage, read_write> vel: array<vec4<f32>>;

@compute @workgroup_size(64)
fn nonrigid_damping_integrate(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
    @builtin(local_invocation_index) t: u32,
) {
    let run = damp_block(wid.y * nwg.x + wid.x, t);
    for (var i = run.x + t; i < run.y; i += WG) {
        contact_integrate(block_points[i]);
    }
}
