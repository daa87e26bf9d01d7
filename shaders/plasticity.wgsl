// plasticity: per bending element, each rest curvature ω̄ʲ dragged to within p_plastic of the current
// ωʲ = (κb·m₂ʲ, −κb·m₁ʲ), then bounded by max(p_max, kappa_start), kappa_start the element's |ω̄| at
// the start, so a model's own sharper bends are never clipped (seed §3.1; κb from bend_kb as
// material_frames left it). Returns at once when both bounds are infinite, like its CPU twin (rod::plasticity, per element
// rod::plastic_rest); an infinite bound alone never acts (the comparison never holds). One thread
// per bending element; loop bound: 2 iterations (the element's two edges).

#import rod

@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read> bends: array<Bend>;
@group(0) @binding(2) var<storage, read> frames: array<EdgeFrame>;
@group(0) @binding(3) var<storage, read> bend_kb: array<vec4<f32>>;
@group(0) @binding(4) var<storage, read_write> bend_rest: array<BendRest>;

@compute @workgroup_size(256)
fn plasticity(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
    @builtin(local_invocation_index) lid: u32,
) {
    let i = thread_index(wid, nwg, lid, 256u);
    let pp = params.plastic_radius;
    let pm = params.plastic_max;
    if i >= params.num_bends || (is_infinite(pp) && is_infinite(pm)) {
        return;
    }
    let b = bends[i];
    let kb = bend_kb[i].xyz;
    var kappa = bend_rest[i].kappa;
    // rod::plastic_kappa: the bound is the larger of p_max and the starting curvature.
    let bound = select(pm, bend_rest[i].kappa_start, bend_rest[i].kappa_start > pm);
    for (var j = 0u; j < 2u; j++) {
        let f = frames[b.e[j]];
        let mf = material_frame(f.t.xyz, f.u.xyz, f.u.w);
        let w0 = dot3(kb, mf.m2);
        let w1 = -dot3(kb, mf.m1);
        let k = plastic_kappa(vec2<f32>(kappa[j][0], kappa[j][1]), w0, w1, pp, bound);
        kappa[j] = array<f32, 2>(k.x, k.y);
    }
    bend_rest[i].kappa = kappa;
}
