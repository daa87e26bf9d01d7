// frame_transport: first stage of material_frames: each edge's reference director transported
// through time onto the edge's new tangent, re-orthonormalised; θ kept, and copied to theta_start,
// and the rest state of the element where the edge is e¹ (edge_bends[i].x; each element has one)
// copied to rest_start: what frame_solve starts from, since its tiles write the angles and rest
// states they own while others read them (CPU twin: rod::frame_transport, per edge
// rod::transport_frame). One thread per edge; no loops.

#import rod

@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read> edges: array<Edge>;
@group(0) @binding(2) var<storage, read> pos: array<vec4<f32>>;
@group(0) @binding(3) var<storage, read_write> frames: array<EdgeFrame>;
@group(0) @binding(4) var<storage, read_write> theta_start: array<f32>;
@group(0) @binding(5) var<storage, read> edge_bends: array<vec2<u32>>;
@group(0) @binding(6) var<storage, read> bend_rest: array<BendRest>;
@group(0) @binding(7) var<storage, read_write> rest_start: array<BendRest>;

@compute @workgroup_size(256)
fn frame_transport(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
    @builtin(local_invocation_index) lid: u32,
) {
    let i = thread_index(wid, nwg, lid, 256u);
    if i >= params.num_edges {
        return;
    }
    let e = edges[i];
    let f = frames[i];
    let t = normalized3(pos[e.b].xyz - pos[e.a].xyz);
    let u = parallel_transport(f.u.xyz, f.t.xyz, t);
    let un = normalized3(u - t * dot3(u, t));
    frames[i] = EdgeFrame(vec4<f32>(un, f.u.w), vec4<f32>(t, 0.0));
    theta_start[i] = f.u.w;
    let b = edge_bends[i].x;
    if b != NONE {
        rest_start[b] = bend_rest[b];
    }
}
