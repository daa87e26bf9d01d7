// bend_gradient: per bending element, the gradient of its bending and twisting energy on its three
// vertices, written to bend_grad[3 b + role] (CPU twin: rod::bend_gradient, which runs
// BendLocal::<f32>::gather/geometry/gradient; ported here op for op). One thread per bending
// element; loop bound: 2 iterations (the element's two edges).

#import rod

@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read> bends: array<Bend>;
@group(0) @binding(2) var<storage, read> bend_rest: array<BendRest>;
@group(0) @binding(3) var<storage, read> frames: array<EdgeFrame>;
@group(0) @binding(4) var<storage, read> pos: array<vec4<f32>>;
@group(0) @binding(5) var<storage, read_write> bend_grad: array<vec4<f32>>;

@compute @workgroup_size(256)
fn bend_gradient(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
    @builtin(local_invocation_index) lid: u32,
) {
    let i = thread_index(wid, nwg, lid, 256u);
    if i >= params.num_bends {
        return;
    }
    // BendLocal::gather.
    let b = bends[i];
    let r = bend_rest[i];
    let f0 = frames[b.e[0]];
    let f1 = frames[b.e[1]];
    let x0 = pos[b.v[0]].xyz;
    let x1 = pos[b.v[1]].xyz;
    let x2 = pos[b.v[2]].xyz;

    // BendLocal::geometry.
    let e0 = x1 - x0;
    let e1 = x2 - x1;
    let len0 = norm3(e0);
    let len1 = norm3(e1);
    let t0 = e0 / len0;
    let t1 = e1 / len1;
    let kbd = curvature_binormal(e0, e1, b.rest_len[0], b.rest_len[1]);
    let kb = kbd.xyz;
    let denom = kbd.w;
    let mf0 = material_frame(t0, f0.u.xyz, f0.u.w);
    let mf1 = material_frame(t1, f1.u.xyz, f1.u.w);
    let m1 = array<vec3<f32>, 2>(mf0.m1, mf1.m1);
    let m2 = array<vec3<f32>, 2>(mf0.m2, mf1.m2);
    let lbar = b.rest_len[0] + b.rest_len[1];

    // bending_gradient_at: dE = s Σ_j (ωʲ − ω̄ʲ)·dωʲ = gv·dκb.
    let s = params.bending / lbar;
    var gv = vec3<f32>(0.0);
    for (var j = 0u; j < 2u; j++) {
        let w0 = dot3(kb, m2[j]);
        let w1 = -dot3(kb, m1[j]);
        let d0 = w0 - r.kappa[j][0];
        let d1 = w1 - r.kappa[j][1];
        gv += (m2[j] * d0 - m1[j] * d1) * s;
    }
    // kb_gradient_transpose.
    let kg = dot3(kb, gv);
    let gb0 = (e1 * kg - cross3(e1, gv) * 2.0) / denom;
    let gb2 = (-(cross3(e0, gv) * 2.0) - e0 * kg) / denom;
    let gb1 = -(gb0 + gb2);

    // twisting_gradient_at (the holonomy gradient through ψ), twist m = θ₁ − θ₀ + ψ.
    let twist = f1.u.w - f0.u.w + r.ref_twist;
    let dm = 2.0 * params.twisting * (twist - r.twist) / lbar;
    let h = cross3(t0, t1) / (1.0 + dot3(t0, t1));
    let gt0 = h * (-dm / len0);
    let gt2 = h * (dm / len1);
    let gt1 = -(gt0 + gt2);

    bend_grad[3u * i] = vec4<f32>(gb0 + gt0, 0.0);
    bend_grad[3u * i + 1u] = vec4<f32>(gb1 + gt1, 0.0);
    bend_grad[3u * i + 2u] = vec4<f32>(gb2 + gt2, 0.0);
}
