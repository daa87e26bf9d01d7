// integrate_velocity_setup: integrate_velocity and length_setup in one dispatch, for a step in which
// nothing changes the velocities between them (no glued points, no ties; free balls change only
// their own): v += h M⁻¹ f (with drag) as integrate_velocity computes it (shared/velocity.wgsl),
// then length_disp = h v (w 0) from the velocity just written, and with length_level.w = 1 thread 0
// commits projection 1 (counters.length_iterations = 1), as length_setup does
// (shared/length_setup_point.wgsl; CPU twin:
// step::integrate_velocity_setup, the two twins in turn). Each thread reads and writes only its own
// point, so the dispatch gives bit for bit what the two give one after the other.
// One thread per control point; no loops.

#import layout
#import velocity
#import length_setup_point

@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<uniform> length_level: vec4<u32>;
@group(0) @binding(2) var<storage, read> inv_mass: array<f32>;
@group(0) @binding(3) var<storage, read> force: array<vec4<f32>>;
@group(0) @binding(4) var<storage, read_write> vel: array<vec4<f32>>;
@group(0) @binding(5) var<storage, read_write> length_disp: array<vec4<f32>>;
@group(0) @binding(6) var<storage, read_write> counters: Counters;

@compute @workgroup_size(256)
fn integrate_velocity_setup(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
    @builtin(local_invocation_index) lid: u32,
) {
    let p = thread_index(wid, nwg, lid, 256u);
    length_commit(p);
    if p >= params.num_points {
        return;
    }
    length_disp_from(p, integrate_velocity_at(p));
}
