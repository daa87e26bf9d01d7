// length_finish: last kernel of stage length_projection: vel = length_disp / h (w 0) for every
// control point, unless counters.errors has ERROR_LENGTH_NOT_CONVERGED (then vel is left as it came,
// for the error report) (CPU twin: length::length_finish). One thread per control point; no loops.

#import layout

@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read> length_disp: array<vec4<f32>>;
@group(0) @binding(2) var<storage, read_write> vel: array<vec4<f32>>;
@group(0) @binding(3) var<storage, read_write> counters: Counters;

// The workgroup's copy of counters.errors.
var<workgroup> wg_errors: u32;

@compute @workgroup_size(256)
fn length_finish(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
    @builtin(local_invocation_index) lid: u32,
) {
    // One atomic read of the errors per workgroup, not one per thread: they all read one address.
    if lid == 0u {
        wg_errors = atomicLoad(&counters.errors);
    }
    workgroupBarrier();
    let p = thread_index(wid, nwg, lid, 256u);
    if p >= params.num_points || (wg_errors & ERROR_LENGTH_NOT_CONVERGED) != 0u {
        return;
    }
    let inv_h = 1.0 / params.h;
    let d = length_disp[p];
    vel[p] = vec4<f32>(d.x * inv_h, d.y * inv_h, d.z * inv_h, 0.0);
}
