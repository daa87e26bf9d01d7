// pair_compensated_test: the point-pair terms of shaders/shared/acl_pair.wgsl on a list of inputs,
// for its tests (CPU twin: contact::pair_compensated_test, i.e. contact::point_pair_compensated per
// pair). Pair p reads pair_in[2p] = (y_i, κw) and pair_in[2p + 1] = (y_j, r) and writes
// pair_out[4p] = (∂E/∂y_i, E), pair_out[4p + 1 + c] = (column c of ∂²E/∂y_i², 1 if touching else 0
// in c = 0's w); all zero when the pair does not touch. One thread per pair.
// Loop bound: 4 (clearing an output).

#import layout
#import acl_pair

@group(0) @binding(0) var<storage, read> pair_in: array<vec4<f32>>;
@group(0) @binding(1) var<storage, read_write> pair_out: array<vec4<f32>>;

@compute @workgroup_size(64)
fn pair_compensated_test(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
    @builtin(local_invocation_index) lid: u32,
) {
    let p = thread_index(wid, nwg, lid, 64u);
    if 2u * p + 1u >= arrayLength(&pair_in) || 4u * p + 3u >= arrayLength(&pair_out) {
        return;
    }
    let a = pair_in[2u * p];
    let b = pair_in[2u * p + 1u];
    // A run-time 0 (κw ≥ 0), for the pair term's opaque error-free transformations.
    let zero = select(0u, 1u, a.w < 0.0);
    let pp = point_pair_compensated(a.xyz, b.xyz, a.w, b.w, zero);
    if !pp.touching {
        for (var c = 0u; c < 4u; c = c + 1u) {
            pair_out[4u * p + c] = vec4<f32>(0.0);
        }
        return;
    }
    pair_out[4u * p] = vec4<f32>(pp.grad_i, pp.energy);
    pair_out[4u * p + 1u] = vec4<f32>(pp.hess_ii[0], 1.0);
    pair_out[4u * p + 2u] = vec4<f32>(pp.hess_ii[1], 0.0);
    pair_out[4u * p + 3u] = vec4<f32>(pp.hess_ii[2], 0.0);
}
