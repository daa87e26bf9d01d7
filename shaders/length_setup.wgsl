// length_setup: first kernel of stage length_projection: length_disp = h vel (w 0) for every control
// point, the displacement x − q that the Fast Projection iterations move; with length_level.w = 1
// (the recording has a projection and the cap allows one: length::first_committed) thread 0 also
// sets counters.length_iterations = 1, what length_check of iteration 0 would decide whatever the
// error (no convergence before a projection), so that check is not dispatched (CPU twin:
// length::length_setup). One thread per control point; no loops.

#import layout
#import length_setup_point

@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<uniform> length_level: vec4<u32>;
@group(0) @binding(2) var<storage, read> vel: array<vec4<f32>>;
@group(0) @binding(3) var<storage, read_write> length_disp: array<vec4<f32>>;
@group(0) @binding(4) var<storage, read_write> counters: Counters;

@compute @workgroup_size(256)
fn length_setup(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
    @builtin(local_invocation_index) lid: u32,
) {
    let p = thread_index(wid, nwg, lid, 256u);
    length_commit(p);
    if p >= params.num_points {
        return;
    }
    length_disp_from(p, vel[p]);
}
