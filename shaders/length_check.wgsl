// length_check: stage length_projection, iteration it = length_level.x (only while
// counters.length_iterations equals it): stops the iterations when converged (it > 0 and the error
// of length_error is below params.length_tolerance: nothing more is written, so every later kernel of
// the stage returns early), raises ERROR_LENGTH_NOT_CONVERGED at the cap params.length_max_iterations,
// or else sets length_iterations = it + 1 (projection it + 1 runs) and clears the error for the next
// evaluation (CPU twin: length::length_check). One thread; no loops.

#import layout

@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<uniform> length_level: vec4<u32>;
@group(0) @binding(2) var<storage, read_write> counters: Counters;

@compute @workgroup_size(1)
fn length_check(@builtin(workgroup_id) wid: vec3<u32>) {
    let it = length_level.x;
    if wid.x != 0u || atomicLoad(&counters.length_iterations) != it {
        return;
    }
    let err = bitcast<f32>(atomicLoad(&counters.length_error_bits));
    if it > 0u && err < params.length_tolerance {
        return;
    }
    if it >= params.length_max_iterations {
        atomicOr(&counters.errors, ERROR_LENGTH_NOT_CONVERGED);
        return;
    }
    atomicStore(&counters.length_iterations, it + 1u);
    atomicStore(&counters.length_error_bits, 0u);
}
