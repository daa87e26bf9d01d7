// length_setup_point: length_setup's per-point work, shared with integrate_velocity_setup: thread 0
// commits projection 1 (counters.length_iterations = 1) when length_level.w = 1, and point p's
// displacement is length_disp[p] = h v (w 0). The importing kernel declares `params`,
// `length_level`, `length_disp` and `counters` as length_setup does. No loops.

fn length_commit(p: u32) {
    if p == 0u && length_level.w != 0u {
        atomicStore(&counters.length_iterations, 1u);
    }
}

fn length_disp_from(p: u32, v: vec4<f32>) {
    length_disp[p] = vec4<f32>(params.h * v.x, params.h * v.y, params.h * v.z, 0.0);
}
