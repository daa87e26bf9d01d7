// object_contact: velocity-level contact of the control points with the placed obstacles (CPU twin:
// step::object_contact). One thread per control point p < params.num_points; glued points
// (inv_mass = 0) are left alone. For each obstacle in order, if the predicted position q + h v lies
// closer than the yarn radius r to its surface: the inward normal relative velocity (relative to the
// surface there: a capsule's ends move at vel and vel_b) is removed, the
// tangential relative velocity shrinks by friction × the removed normal speed (never reversing),
// then the normal velocity that puts q + h v at distance r is added (shared/object_velocity.wgsl).
// In a scene without free balls the step dispatches object_contact_integrate instead, which also
// integrates the positions.
// Loop bound per thread: params.num_obstacles iterations (one per obstacle; a scene has a few, and
// each walking figure adds 14), no other loops.

#import layout
#import object_velocity

@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read> obstacles: array<ObstacleShape>;
@group(0) @binding(2) var<storage, read> inv_mass: array<f32>;
@group(0) @binding(3) var<storage, read> pos: array<vec4<f32>>;
@group(0) @binding(4) var<storage, read_write> vel: array<vec4<f32>>;

@compute @workgroup_size(256)
fn object_contact(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
    @builtin(local_invocation_index) lid: u32,
) {
    let p = thread_index(wid, nwg, lid, 256u);
    if p >= params.num_points || params.num_obstacles == 0u || inv_mass[p] == 0.0 {
        return;
    }
    let v = object_contact_velocity(pos[p].xyz, vel[p].xyz);
    vel[p] = vec4<f32>(v, 0.0);
}
