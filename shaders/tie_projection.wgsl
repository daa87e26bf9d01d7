// tie_projection: one colour of the ties (CPU twin: ties::tie_projection, which visits the colours in
// order). A tie keeps two control points at most its length apart: when the predicted distance
// |x_b − x_a| (x = q + h v) exceeds it, both velocities change along the line between them, weighted
// by inverse mass, so the predicted distance is the length again. No two ties of a colour share a
// point, so threads never write the same velocity. One thread per tie of the colour
// (color_range.first + i, i < color_range.count); no loops.

#import layout
#import vec

@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<uniform> color_range: ColorRange;
@group(0) @binding(2) var<storage, read> ties: array<vec2<u32>>;
@group(0) @binding(3) var<storage, read> tie_length: array<f32>;
@group(0) @binding(4) var<storage, read> inv_mass: array<f32>;
@group(0) @binding(5) var<storage, read> pos: array<vec4<f32>>;
@group(0) @binding(6) var<storage, read_write> vel: array<vec4<f32>>;

@compute @workgroup_size(256)
fn tie_projection(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
    @builtin(local_invocation_index) lid: u32,
) {
    let i = thread_index(wid, nwg, lid, 256u);
    if i >= color_range.count {
        return;
    }
    let k = color_range.first + i;
    let a = ties[k].x;
    let b = ties[k].y;
    let wa = inv_mass[a];
    let wb = inv_mass[b];
    if wa + wb == 0.0 {
        return;
    }
    let h = params.h;
    let va = vel[a].xyz;
    let vb = vel[b].xyz;
    let xa = pos[a].xyz + va * h;
    let xb = pos[b].xyz + vb * h;
    let d = xb - xa;
    let l = norm3(d);
    let len = tie_length[k];
    if l <= len {
        return;
    }
    let n = d / l;
    let dv = n * ((l - len) / ((wa + wb) * h));
    vel[a] = vec4<f32>(va + dv * wa, vel[a].w);
    vel[b] = vec4<f32>(vb - dv * wb, vel[b].w);
}
