// frame_solve: stage material_frames after frame_transport, when the rod has tiles
// (rod::frame_tiles), in one dispatch instead of bend_twist, frame_sweeps × 3 of theta_sweep and
// plasticity. Each tile of 256 slots of frame_tiles is a workgroup; slot j's thread has one edge:
// 1. bend_twist of the element where its edge is e¹ (its ψ from rest_start, κb and l̄ from pos);
// 2. the safeguarded Newton steps of the material angles, colour 0, 1, 2 in turn, frame_sweeps
//    times, the angles in workgroup memory from theta_start, a barrier after each colour step;
// 3. for an edge the tile owns: its θ to frames, and plasticity of that element (unless both
//    bounds are infinite) with its new ψ to bend_rest, its κb and l̄ to bend_kb.
// Every element is the e¹ element of one edge, so each is written once. A tile's other slots are
// its halo, 3 · frame_sweeps edges of the yarn either side of its own: a halo edge whose element
// reaches out of the tile is frozen, and the error that makes spreads one edge per colour step, so
// the owned angles are the sweeps' over the whole rod. Nothing a tile reads is written by another
// meanwhile: the starting angles and rest states come from theta_start and rest_start, which
// frame_transport copied, and of frames only the tangents and directors are read (CPU twin:
// rod::frame_solve: bend_twist, the sweeps, plasticity).
// A slot is (edge, element where it is e¹, element where it is e⁰, packed: the other edge's slot of
// each element in bits 0–8 and 9–17, its colour in 18–19, FRAME_OWNED, FRAME_FROZEN); NONE: empty.
// Dispatched over 256 threads per tile (a 2-D grid). Loop bound: 3 · frame_sweeps ≤ 96 colour steps
// (rod::FRAME_SOLVE_MAX_SWEEPS; more sweeps are dispatched stage by stage), 2 (plasticity's edges).

#import rod

const FRAME_TILE: u32 = 256u;
const FRAME_NO_SLOT: u32 = 0x1ffu;
const FRAME_OWNED: u32 = 0x100000u;
const FRAME_FROZEN: u32 = 0x200000u;

@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read> frame_tiles: array<vec4<u32>>;
@group(0) @binding(2) var<storage, read> bends: array<Bend>;
@group(0) @binding(3) var<storage, read> pos: array<vec4<f32>>;
@group(0) @binding(4) var<storage, read> theta_start: array<f32>;
@group(0) @binding(5) var<storage, read> rest_start: array<BendRest>;
@group(0) @binding(6) var<storage, read_write> frames: array<EdgeFrame>;
@group(0) @binding(7) var<storage, read_write> bend_rest: array<BendRest>;
@group(0) @binding(8) var<storage, read_write> bend_kb: array<vec4<f32>>;

// The tile's angles, and each slot's e¹ element's new ψ and κb, l̄ (the e⁰ element of the slot
// before reads them), slot by slot.
var<workgroup> wg_theta: array<f32, FRAME_TILE>;
var<workgroup> wg_psi: array<f32, FRAME_TILE>;
var<workgroup> wg_kb: array<vec4<f32>, FRAME_TILE>;

// Edge x's tangent and director from frames, without its angle u.w: tiles that own an edge write
// that word meanwhile, so it is not loaded (component by component, not as a vector).
fn frame_of(x: u32) -> EdgeFrame {
    let u = vec3<f32>(frames[x].u.x, frames[x].u.y, frames[x].u.z);
    return EdgeFrame(vec4<f32>(u, 0.0), frames[x].t);
}

@compute @workgroup_size(256)
fn frame_solve(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
    @builtin(local_invocation_index) lid: u32,
) {
    let i = thread_index(wid, nwg, lid, FRAME_TILE);
    var w = vec4<u32>(NONE, NONE, NONE, 0u);
    if i < arrayLength(&frame_tiles) {
        w = frame_tiles[i];
    }
    let e = w.x;
    let solving = e != NONE && (w.w & FRAME_FROZEN) == 0u;
    var own = EdgeFrame(vec4<f32>(0.0), vec4<f32>(0.0));
    var start = 0.0;
    if e != NONE {
        own = frame_of(e);
        start = theta_start[e];
    }
    wg_theta[lid] = start;
    // 1. bend_twist of the e¹ element (side 0), the other edge e⁰ read from frames wherever it is.
    var r0 = BendRest();
    var kb0 = vec4<f32>(0.0);
    var b0 = Bend();
    var other = EdgeFrame(vec4<f32>(0.0), vec4<f32>(0.0));
    if e != NONE && w.y != NONE {
        b0 = bends[w.y];
        other = frame_of(b0.e[0]);
        r0 = rest_start[w.y];
        r0.ref_twist = reference_twist(
            other.u.xyz,
            other.t.xyz,
            own.u.xyz,
            own.t.xyz,
            r0.ref_twist,
        );
        let x0 = pos[b0.v[0]].xyz;
        let x1 = pos[b0.v[1]].xyz;
        let x2 = pos[b0.v[2]].xyz;
        let l0 = b0.rest_len[0];
        let l1 = b0.rest_len[1];
        kb0 = vec4<f32>(curvature_binormal(x1 - x0, x2 - x1, l0, l1).xyz, l0 + l1);
    }
    wg_psi[lid] = r0.ref_twist;
    wg_kb[lid] = kb0;
    workgroupBarrier();
    // The e⁰ element (side 1) is the e¹ element of the slot o1 holding its other edge.
    let o0 = w.w & FRAME_NO_SLOT;
    let o1 = (w.w >> 9u) & FRAME_NO_SLOT;
    let colour = (w.w >> 18u) & 3u;
    var r1 = BendRest();
    var kb1 = vec4<f32>(0.0);
    if solving && w.z != NONE {
        r1 = rest_start[w.z];
        r1.ref_twist = wg_psi[o1];
        kb1 = wg_kb[o1];
    }
    // 2. The sweeps.
    let bending = params.bending;
    let twisting = params.twisting;
    for (var s = 0u; s < params.frame_sweeps; s++) {
        for (var c = 0u; c < 3u; c++) {
            // Slots of one colour share no element: each reads only other colours' angles.
            if solving && colour == c {
                let theta = wg_theta[lid];
                let mf = material_frame(own.t.xyz, own.u.xyz, theta);
                var terms = vec3<f32>(0.0);
                if w.y != NONE {
                    terms += element_terms(bending, twisting, wg_theta[o0], theta, r0, kb0, mf, 1u);
                }
                if w.z != NONE {
                    terms += element_terms(bending, twisting, theta, wg_theta[o1], r1, kb1, mf, 0u);
                }
                wg_theta[lid] = theta + newton_angle_step(terms.x, terms.y, terms.z);
            }
            workgroupBarrier();
        }
    }
    if e == NONE || (w.w & FRAME_OWNED) == 0u {
        return;
    }
    // 3. What the tile owns: θ, and the e¹ element after plasticity (rod::plastic_rest; its e⁰ is
    // in the tile, at most a halo's width in).
    let theta = wg_theta[lid];
    frames[e].u.w = theta;
    if w.y == NONE {
        return;
    }
    let pp = params.plastic_radius;
    let pm = params.plastic_max;
    if !(is_infinite(pp) && is_infinite(pm)) {
        let bound = select(pm, r0.kappa_start, r0.kappa_start > pm);
        let mfs = array<MaterialFrame, 2>(
            material_frame(other.t.xyz, other.u.xyz, wg_theta[o0]),
            material_frame(own.t.xyz, own.u.xyz, theta),
        );
        for (var j = 0u; j < 2u; j++) {
            let mf = mfs[j];
            let w0 = dot3(kb0.xyz, mf.m2);
            let w1 = -dot3(kb0.xyz, mf.m1);
            let k = plastic_kappa(vec2<f32>(r0.kappa[j][0], r0.kappa[j][1]), w0, w1, pp, bound);
            r0.kappa[j] = array<f32, 2>(k.x, k.y);
        }
    }
    bend_rest[w.y] = r0;
    bend_kb[w.y] = kb0;
}
