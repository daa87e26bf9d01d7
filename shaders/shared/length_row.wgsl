// length_row: row i of a yarn's block of level 0 of length_sys (length::length_assemble's per-edge
// work), shared by length_assemble and length_error_assemble: (diagonal w_a + w_b, coupling to the
// previous row −w_a t_prev·t, r = C, z = 0); an inert row (both ends immovable) is (1, 0, 0, 0),
// a yarn's first row has no coupling; for a closed yarn of 3 or more edges, with sm = (γ, corner)
// of cyclic_terms, the first diagonal gets −γ and z = γ, the last gets −corner²/γ and z = corner.
// dk is the edge's (t, C); t_prev and sm are read only where they apply. No loops.

#import vec

fn length_row(i: u32, y: Yarn, wa: f32, wb: f32, dk: vec4<f32>, t_prev: vec3<f32>, sm: vec2<f32>) -> vec4<f32> {
    var d = 1.0;
    var r = 0.0;
    if wa + wb > 0.0 {
        d = wa + wb;
        r = dk.w;
    }
    var o = 0.0;
    if i > 0u {
        o = -wa * dot3(t_prev, dk.xyz);
    }
    var z = 0.0;
    if y.closed != 0u && y.num_edges >= 3u {
        let gamma = sm.x;
        let corner = sm.y;
        if i == 0u {
            d = d - gamma;
            z = gamma;
        }
        if i == y.num_edges - 1u {
            d = d - corner * corner / gamma;
            z = corner;
        }
    }
    return vec4<f32>(d, o, r, z);
}
