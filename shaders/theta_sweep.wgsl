// theta_sweep: third stage of material_frames, dispatched frame_sweeps × 3 times (colour 0, 1, 2 in
// turn; the colour_range uniform names the colour's slice of edge_order): one safeguarded Newton step
// of the material angle θ of every edge of the colour, from the derivatives of the energy of its one
// or two bending elements (κb and l̄ from bend_kb), written to theta_step and added to θ
// (frames[e].u.w) in place. Edges of one colour share no bending element, so a thread reads only its
// own θ and θs of other colours, which no thread of this dispatch writes (CPU twin:
// rod::theta_sweep, per edge rod::theta_newton_step). One thread per edge of the colour;
// loop bound: 2 iterations (the edge's two bending elements).

#import rod

@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<uniform> color_range: ColorRange;
@group(0) @binding(2) var<storage, read> bends: array<Bend>;
@group(0) @binding(3) var<storage, read> bend_rest: array<BendRest>;
@group(0) @binding(4) var<storage, read> bend_kb: array<vec4<f32>>;
@group(0) @binding(5) var<storage, read> edge_bends: array<vec2<u32>>;
@group(0) @binding(6) var<storage, read> edge_order: array<u32>;
@group(0) @binding(7) var<storage, read_write> theta_step: array<f32>;
@group(0) @binding(8) var<storage, read_write> frames: array<EdgeFrame>;

@compute @workgroup_size(256)
fn theta_sweep(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
    @builtin(local_invocation_index) lid: u32,
) {
    let i = thread_index(wid, nwg, lid, 256u);
    if i >= color_range.count {
        return;
    }
    let slot = color_range.first + i;
    let e = edge_order[slot];
    let f = frames[e];
    let mf = material_frame(f.t.xyz, f.u.xyz, f.u.w);
    var g = 0.0;
    var h = 0.0;
    var ht = 0.0;
    let eb = edge_bends[e];
    for (var side = 0u; side < 2u; side++) {
        let bi = eb[side];
        if bi == NONE {
            continue;
        }
        // side 0: this edge is e¹ of the element; side 1: it is e⁰.
        let role = 1u - side;
        let b = bends[bi];
        let terms = element_terms(
            params.bending,
            params.twisting,
            frames[b.e[0]].u.w,
            frames[b.e[1]].u.w,
            bend_rest[bi],
            bend_kb[bi],
            mf,
            role,
        );
        g += terms.x;
        h += terms.y;
        ht += terms.z;
    }
    let step = newton_angle_step(g, h, ht);
    theta_step[slot] = step;
    frames[e].u.w = f.u.w + step;
}
