// length_edge_row: row k of level 0 of the length solver (length_assemble's per-edge work) from
// edge k's direction and value dk, computing the previous edge's direction and a closed yarn's
// last and first edges' itself (shared/length_edge.wgsl, the operations length_error makes), for
// the kernels that write length_dir in the same dispatch: length_error_assemble and
// length_error_assemble_reduce. The importing kernel binds `yarns`, `edges`, `inv_mass`, `pos`,
// `length_disp` and `length_dir` (read by length_cyclic_terms' other function). No loops.

#import layout
#import length_edge
#import length_cyclic_terms
#import length_row

fn edge_row(k: u32, dk: vec4<f32>) -> vec4<f32> {
    let e = edges[k];
    let y = yarns[e.yarn];
    let i = k - y.first_edge;
    var t_prev = vec3<f32>(0.0);
    if i > 0u {
        t_prev = edge_direction(k - 1u).xyz;
    }
    var sm = vec2<f32>(0.0);
    if y.closed != 0u && y.num_edges >= 3u {
        let l = y.first_edge + y.num_edges - 1u;
        sm = cyclic_terms_from(y, edge_direction(l).xyz, edge_direction(y.first_edge).xyz);
    }
    return length_row(i, y, inv_mass[e.a], inv_mass[e.b], dk, t_prev, sm);
}
