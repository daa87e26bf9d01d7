// theta_solve: third stage of material_frames when the rod has tiles (rod::theta_tiles), one
// dispatch instead of frame_sweeps × 3 of theta_sweep: the same safeguarded Newton steps of the
// material angles, colour 0, 1, 2 in turn, frame_sweeps times, within each tile of 256 slots of
// theta_tiles (a workgroup each; slot j's thread keeps its edge's θ in workgroup memory, a barrier
// after each colour step), from the angles theta_start that frame_transport copied. Each tile then
// writes θ of the edges it owns to frames. Its other slots are the halo, 3 · frame_sweeps edges of
// the yarn either side of its own: a halo edge whose element reaches out of the tile is frozen, and
// the error that makes spreads one edge per colour step, so the owned angles are the sweeps' over
// the whole rod (CPU twin: rod::theta_solve). Neighbours' angles come from theta_start, never from
// frames, which other tiles write meanwhile; frames' tangents and directors are only read.
// A slot is (edge, element where it is e¹, element where it is e⁰, packed: the other edge's slot of
// each element in bits 0–8 and 9–17, its colour in 18–19, THETA_OWNED, THETA_FROZEN); NONE: empty.
// Dispatched over 256 threads per tile (a 2-D grid). Loop bound: 3 · frame_sweeps ≤ 96 colour steps
// (rod::THETA_SOLVE_MAX_SWEEPS; more sweeps are dispatched as theta_sweep), no other loops.

#import rod

const THETA_TILE: u32 = 256u;
const THETA_NO_SLOT: u32 = 0x1ffu;
const THETA_OWNED: u32 = 0x100000u;
const THETA_FROZEN: u32 = 0x200000u;

@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read> theta_tiles: array<vec4<u32>>;
@group(0) @binding(2) var<storage, read> bend_rest: array<BendRest>;
@group(0) @binding(3) var<storage, read> bend_kb: array<vec4<f32>>;
@group(0) @binding(4) var<storage, read> theta_start: array<f32>;
@group(0) @binding(5) var<storage, read_write> frames: array<EdgeFrame>;

// The tile's angles, slot by slot.
var<workgroup> wg_theta: array<f32, THETA_TILE>;

// theta_terms of the element r (κb and l̄ in kb) whose edges e⁰, e¹ have angles theta0, theta1, for
// the edge `role` of it with material frame mf (what theta_sweep sums per side).
fn element_terms(
    theta0: f32,
    theta1: f32,
    r: BendRest,
    kb: vec4<f32>,
    mf: MaterialFrame,
    role: u32,
) -> vec3<f32> {
    let twist = theta1 - theta0 + r.ref_twist;
    return theta_terms(
        params.bending,
        params.twisting,
        kb.xyz,
        mf.m1,
        mf.m2,
        r.kappa[role][0],
        r.kappa[role][1],
        kb.w,
        twist - r.twist,
        role,
    );
}

@compute @workgroup_size(256)
fn theta_solve(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
    @builtin(local_invocation_index) lid: u32,
) {
    let i = thread_index(wid, nwg, lid, THETA_TILE);
    var w = vec4<u32>(NONE, NONE, NONE, 0u);
    if i < arrayLength(&theta_tiles) {
        w = theta_tiles[i];
    }
    let e = w.x;
    let solving = e != NONE && (w.w & THETA_FROZEN) == 0u;
    var t = vec3<f32>(0.0);
    var u = vec3<f32>(0.0);
    var start = 0.0;
    if e != NONE {
        let f = frames[e];
        t = f.t.xyz;
        u = f.u.xyz;
        start = theta_start[e];
    }
    wg_theta[lid] = start;
    // Side 0: the element where the edge is e¹ (its other edge e⁰ in slot o0); side 1: where it is
    // e⁰ (its other edge e¹ in slot o1).
    let o0 = w.w & THETA_NO_SLOT;
    let o1 = (w.w >> 9u) & THETA_NO_SLOT;
    let colour = (w.w >> 18u) & 3u;
    var r0 = BendRest();
    var kb0 = vec4<f32>(0.0);
    var r1 = BendRest();
    var kb1 = vec4<f32>(0.0);
    if solving && w.y != NONE {
        r0 = bend_rest[w.y];
        kb0 = bend_kb[w.y];
    }
    if solving && w.z != NONE {
        r1 = bend_rest[w.z];
        kb1 = bend_kb[w.z];
    }
    workgroupBarrier();
    for (var s = 0u; s < params.frame_sweeps; s++) {
        for (var c = 0u; c < 3u; c++) {
            // Slots of one colour share no element: each reads only other colours' angles.
            if solving && colour == c {
                let theta = wg_theta[lid];
                let mf = material_frame(t, u, theta);
                var terms = vec3<f32>(0.0);
                if w.y != NONE {
                    terms += element_terms(wg_theta[o0], theta, r0, kb0, mf, 1u);
                }
                if w.z != NONE {
                    terms += element_terms(theta, wg_theta[o1], r1, kb1, mf, 0u);
                }
                let g = terms.x;
                let h = terms.y;
                let ht = terms.z;
                wg_theta[lid] = theta + newton_angle_step(g, h, ht);
            }
            workgroupBarrier();
        }
    }
    if e != NONE && (w.w & THETA_OWNED) != 0u {
        frames[e].u.w = wg_theta[lid];
    }
}
