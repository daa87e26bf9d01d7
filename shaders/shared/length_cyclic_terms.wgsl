// length_cyclic_terms: the Sherman–Morrison terms of a closed yarn's cyclic tridiagonal system
// (src/length.rs), shared by length_assemble, which folds them into the system, and
// length_update, which applies the correction. The importing kernel binds `edges`, `inv_mass`
// and `length_dir`. No loops.

#import vec

// length::cyclic_terms: (γ, corner) of closed yarn y (at least 3 edges): γ = −d₀ with d₀ the first row's diagonal
// (1 when both ends are immovable), corner = −w_a (t_last · t_first).
fn cyclic_terms(y: Yarn) -> vec2<f32> {
    let f = y.first_edge;
    let l = f + y.num_edges - 1u;
    let ef = edges[f];
    let wfa = inv_mass[ef.a];
    let wf = wfa + inv_mass[ef.b];
    var d0 = 1.0;
    if wf > 0.0 {
        d0 = wf;
    }
    let corner = -wfa * dot3(length_dir[l].xyz, length_dir[f].xyz);
    return vec2<f32>(-d0, corner);
}
