// bend_twist: second stage of material_frames: per bending element, the reference twist ψ (in
// bend_rest, accumulated from its previous value) and κb at the current positions (bend_kb: xyz, w =
// l̄ = l₀ + l₁), after frame_transport (CPU twin: rod::bend_twist, per element
// rod::twist_and_binormal). One thread per bending element; no loops.

#import rod

@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read> bends: array<Bend>;
@group(0) @binding(2) var<storage, read> frames: array<EdgeFrame>;
@group(0) @binding(3) var<storage, read> pos: array<vec4<f32>>;
@group(0) @binding(4) var<storage, read_write> bend_rest: array<BendRest>;
@group(0) @binding(5) var<storage, read_write> bend_kb: array<vec4<f32>>;

@compute @workgroup_size(256)
fn bend_twist(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
    @builtin(local_invocation_index) lid: u32,
) {
    let i = thread_index(wid, nwg, lid, 256u);
    if i >= params.num_bends {
        return;
    }
    let b = bends[i];
    let f0 = frames[b.e[0]];
    let f1 = frames[b.e[1]];
    bend_rest[i].ref_twist = reference_twist(
        f0.u.xyz,
        f0.t.xyz,
        f1.u.xyz,
        f1.t.xyz,
        bend_rest[i].ref_twist,
    );
    let x0 = pos[b.v[0]].xyz;
    let x1 = pos[b.v[1]].xyz;
    let x2 = pos[b.v[2]].xyz;
    let l0 = b.rest_len[0];
    let l1 = b.rest_len[1];
    let kb = curvature_binormal(x1 - x0, x2 - x1, l0, l1).xyz;
    bend_kb[i] = vec4<f32>(kb, l0 + l1);
}
