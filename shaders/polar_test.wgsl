// polar_test: the polar decomposition of shaders/shared/polar.wgsl on a list of inputs, so tests can
// check it on the GPU (CPU twin: polar::polar_test, i.e. polar::polar_decompose::<f32> per record).
// One thread per record: polar_in[i] (F by columns, warm-start quaternion) gives polar_out[i] (the
// quaternion, R, S = sym(Rᵀ F), the iteration count, the error flag and the first bad entry).
// Threads past either array's length do nothing (the arrays may be padded by the host).
// Loop bound per thread: polar_decompose's, at most 40 × 65 = 2,600 iterations.

#import layout
#import polar

@group(0) @binding(0) var<storage, read> polar_in: array<PolarInput>;
@group(0) @binding(1) var<storage, read_write> polar_out: array<PolarOutput>;

@compute @workgroup_size(64)
fn polar_test(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
    @builtin(local_invocation_index) lid: u32,
) {
    let i = thread_index(wid, nwg, lid, 64u);
    if i >= arrayLength(&polar_in) || i >= arrayLength(&polar_out) {
        return;
    }
    let rec = polar_in[i];
    let f = mat3x3<f32>(rec.f[0].xyz, rec.f[1].xyz, rec.f[2].xyz);
    let p = polar_decompose(f, rec.warm);
    var o: PolarOutput;
    o.quat = p.q;
    o.r = array<vec4<f32>, 3>(vec4<f32>(p.r[0], 0.0), vec4<f32>(p.r[1], 0.0), vec4<f32>(p.r[2], 0.0));
    o.s = array<vec4<f32>, 3>(vec4<f32>(p.s[0], 0.0), vec4<f32>(p.s[1], 0.0), vec4<f32>(p.s[2], 0.0));
    o.iterations = p.iterations;
    o.error = p.error;
    o.bad_entry = p.bad_entry;
    o._pad = 0u;
    polar_out[i] = o;
}
