// length_edge: an edge's unit direction t and constraint value C = |x_b − x_a| − ℓ at
// x = q + length_disp (length::length_error's per-edge work), shared by length_error and
// length_error_assemble, which also computes its neighbours' directions with it. The edge vector is
// formed from differences (q_b − q_a plus d_b − d_a) so it keeps its precision far from the origin.
// The importing kernel binds `edges`, `pos` and `length_disp`. No loops.

fn edge_direction(k: u32) -> vec4<f32> {
    let e = edges[k];
    let v = (pos[e.b].xyz - pos[e.a].xyz) + (length_disp[e.b].xyz - length_disp[e.a].xyz);
    let len = sqrt(v.x * v.x + v.y * v.y + v.z * v.z);
    let c = len - e.rest_length;
    var t = v;
    if len > 0.0 {
        t = v / len;
    }
    return vec4<f32>(t, c);
}
