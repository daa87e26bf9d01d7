// integrate_velocity: v += h M⁻¹ f for every control point (CPU twin: step::integrate_velocity),
// then, with air drag, v *= 1 / (1 + h c) (implicit, so stable for any c; params.air_factor).
// A non-finite force raises ERROR_NAN_FORCE and lowers counters.first_bad_point to its point
// (shared/velocity.wgsl). In a scene without glued points or ties the step dispatches
// integrate_velocity_setup instead, which also makes length_setup's work.
// One thread per control point; no loops.

#import layout
#import velocity

@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read> inv_mass: array<f32>;
@group(0) @binding(2) var<storage, read> force: array<vec4<f32>>;
@group(0) @binding(3) var<storage, read_write> vel: array<vec4<f32>>;
@group(0) @binding(4) var<storage, read_write> counters: Counters;

@compute @workgroup_size(256)
fn integrate_velocity(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
    @builtin(local_invocation_index) lid: u32,
) {
    let p = thread_index(wid, nwg, lid, 256u);
    if p >= params.num_points {
        return;
    }
    integrate_velocity_at(p);
}
