// length_cyclic_terms: the Sherman–Morrison terms of a closed yarn's cyclic tridiagonal system
// (src/length.rs), shared by length_assemble and length_error_assemble, which fold them into the
// system, and length_update, which applies the correction. The importing kernel binds `edges`,
// `inv_mass` and `length_dir`. No loops.

#import vec

// length::cyclic_terms: (γ, corner) of closed yarn y (at least 3 edges): γ = −d₀ with d₀ the first row's diagonal
// (1 when both ends are immovable), corner = −w_a (t_last · t_first).
fn cyclic_terms(y: Yarn) -> vec2<f32> {
    let l = y.first_edge + y.num_edges - 1u;
    return cyclic_terms_from(y, length_dir[l].xyz, length_dir[y.first_edge].xyz);
}

// cyclic_terms with the last and first edges' directions given (length_error_assemble computes
// them, as length_dir is being written in the same dispatch).
fn cyclic_terms_from(y: Yarn, t_last: vec3<f32>, t_first: vec3<f32>) -> vec2<f32> {
    let ef = edges[y.first_edge];
    let wfa = inv_mass[ef.a];
    let wf = wfa + inv_mass[ef.b];
    var d0 = 1.0;
    if wf > 0.0 {
        d0 = wf;
    }
    let corner = -wfa * dot3(t_last, t_first);
    return vec2<f32>(-d0, corner);
}
