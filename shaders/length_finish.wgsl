// length_finish: last kernel of stage length_projection. First the check of the recording's last
// evaluation, iteration it = length_level.x, which length_check would make (length::length_check,
// only while counters.length_iterations equals it): converged (it > 0, error below
// params.length_tolerance), or ERROR_LENGTH_NOT_CONVERGED at the cap params.length_max_iterations,
// or else length_iterations = it + 1 (the host's sign that the recorded iterations were too few) and
// the error cleared. Workgroup 0's thread 0 writes what it decides; every workgroup decides the
// flag from its own one read of the counters, and as the writes only ever leave
// length_iterations ≠ it or a cleared error after a continue, a workgroup that reads them after
// decides the same (no flag). Then vel = length_disp / h (w 0) for every control point, unless the
// flag is raised: then vel is left as it came, for the error report, and thread k < num_edges
// lowers counters.first_unconverged_edge to k by atomicMin where edge k's relative error in
// length_dir (the evaluation that failed: later iterations' kernels return at once) reaches the
// smaller of the tolerance and length_error_bits (both as bits, which order like the non-negative
// floats): the first edge not within the tolerance, or the first of the largest error when all
// are (a cap of 0), which the host's error names by its yarn; and thread p whose velocity came in
// not finite raises ERROR_NAN_VELOCITY and lowers counters.first_bad_point to p (a NaN fails its
// yarn's every edge; the point names the cause) (CPU twin: length::length_finish).
// One thread per control point (num_edges ≤ num_points); no loops.

#import layout

@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<uniform> length_level: vec4<u32>;
@group(0) @binding(2) var<storage, read> edges: array<Edge>;
@group(0) @binding(3) var<storage, read> length_dir: array<vec4<f32>>;
@group(0) @binding(4) var<storage, read> length_disp: array<vec4<f32>>;
@group(0) @binding(5) var<storage, read_write> vel: array<vec4<f32>>;
@group(0) @binding(6) var<storage, read_write> counters: Counters;

// Whether the workgroup leaves vel as it came: the flag, raised before or by the last check.
var<workgroup> wg_failed: u32;
// On failure, the error bits an edge's must reach to be named: min(tolerance, largest error).
var<workgroup> wg_reach: u32;

@compute @workgroup_size(256)
fn length_finish(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
    @builtin(local_invocation_index) lid: u32,
) {
    // One read of the counters per workgroup, not one per thread: they all read one address.
    if lid == 0u {
        let it = length_level.x;
        var failed = (atomicLoad(&counters.errors) & ERROR_LENGTH_NOT_CONVERGED) != 0u;
        let first = wid.x == 0u && wid.y == 0u;
        if atomicLoad(&counters.length_iterations) == it {
            let err = bitcast<f32>(atomicLoad(&counters.length_error_bits));
            if !(it > 0u && err < params.length_tolerance) {
                if it >= params.length_max_iterations {
                    failed = true;
                    if first {
                        atomicOr(&counters.errors, ERROR_LENGTH_NOT_CONVERGED);
                    }
                } else if first {
                    atomicStore(&counters.length_iterations, it + 1u);
                    atomicStore(&counters.length_error_bits, 0u);
                }
            }
        }
        wg_failed = u32(failed);
        if failed {
            let err = atomicLoad(&counters.length_error_bits);
            wg_reach = min(bitcast<u32>(params.length_tolerance), err);
        }
    }
    workgroupBarrier();
    let p = thread_index(wid, nwg, lid, 256u);
    if wg_failed != 0u {
        if p < params.num_edges {
            let bits = min(bitcast<u32>(abs(length_dir[p].w / edges[p].rest_length)), 0x7f800000u);
            if bits >= wg_reach {
                atomicMin(&counters.first_unconverged_edge, p);
            }
        }
        if p < params.num_points && !finite3(vel[p].xyz) {
            atomicOr(&counters.errors, ERROR_NAN_VELOCITY);
            atomicMin(&counters.first_bad_point, p);
        }
        return;
    }
    if p >= params.num_points {
        return;
    }
    let inv_h = 1.0 / params.h;
    let d = length_disp[p];
    vel[p] = vec4<f32>(d.x * inv_h, d.y * inv_h, d.z * inv_h, 0.0);
}
