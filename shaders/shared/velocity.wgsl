// velocity: one control point's velocity update from its force (integrate_velocity's per-point work,
// which integrate_velocity_setup repeats before length_setup's): v += h M⁻¹ f, then with air drag
// v *= params.air_factor; a non-finite force raises ERROR_NAN_FORCE and lowers
// counters.first_bad_point to p. The importing kernel declares `params`, `inv_mass`, `force`,
// `vel` (read_write) and `counters` as integrate_velocity does. No loops.

fn integrate_velocity_at(p: u32) -> vec4<f32> {
    let f = force[p].xyz;
    let v = vel[p];
    var nv = v.xyz + params.h * inv_mass[p] * f;
    if params.air_factor != 1.0 {
        nv = nv * params.air_factor;
    }
    let out = vec4<f32>(nv, v.w);
    vel[p] = out;
    if !finite3(f) {
        atomicOr(&counters.errors, ERROR_NAN_FORCE);
        atomicMin(&counters.first_bad_point, p);
    }
    return out;
}
