// object_contact_integrate: object_contact and integrate_position in one dispatch, for a scene
// without free balls (their kernels change yarn velocities between the two): the velocity after
// contact with the placed obstacles as object_contact computes it (shared/object_velocity.wgsl; glued
// points, inv_mass = 0, and a step without obstacles keep theirs), then q += h v as
// integrate_position computes it (shared/contact_integrate.wgsl) (CPU twin: step::object_contact_integrate, the two twins in turn).
// Each thread reads and writes only its own point, so the dispatch gives bit for bit what the two
// give one after the other.
// Loop bound per thread: params.num_obstacles iterations (object_velocity's), no other loops.

#import layout
#import contact_integrate

@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read> obstacles: array<ObstacleShape>;
@group(0) @binding(2) var<storage, read> inv_mass: array<f32>;
@group(0) @binding(3) var<storage, read_write> pos: array<vec4<f32>>;
@group(0) @binding(4) var<storage, read_write> vel: array<vec4<f32>>;

@compute @workgroup_size(256)
fn object_contact_integrate(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
    @builtin(local_invocation_index) lid: u32,
) {
    let p = thread_index(wid, nwg, lid, 256u);
    if p >= params.num_points {
        return;
    }
    contact_integrate(p);
}
