// quadrature: quadrature point i = s·b + k of quadrature_points (its per-element work, which
// segment_windows_quadrature also does): qpts[i] = Σ_m quad_weights[k][m] pos[cp[m]] of segment s,
// with w = quad_arc[i]. The importing kernel declares `params` (uniform), `segments`, `pos`,
// `quad_weights`, `quad_arc` and `qpts` (read_write) as quadrature_points does. No loops.

fn quadrature_point(i: u32) {
    let b = params.quadrature;
    let seg = segments[i / b];
    let w = quad_weights[i % b];
    let y = pos[seg.cp[0]].xyz * w.x + pos[seg.cp[1]].xyz * w.y + pos[seg.cp[2]].xyz * w.z
        + pos[seg.cp[3]].xyz * w.w;
    qpts[i] = vec4<f32>(y, quad_arc[i]);
}
