//! The linear model of one contact set and its corotational evaluation, generic over [`Real`] so tests
//! run the same code in f64 (seed §4, DESIGN §4).
//!
//! A set touching `n` control points stores, about its reference configuration `q̄`:
//! - `d̄_i = q̄_i − c̄` (`c̄` the mean of the `q̄_i`),
//! - `f0_i = f(q̄)_i`, the exact contact force of the set's pairs at the reference,
//! - `K̄ = ∂f/∂q` at `q̄` (= −∇²E), as the upper triangle of `n × n` blocks of 3×3. Every block is itself
//!   symmetric — each pair contributes `c_k c_l H` with the symmetric point Hessian `H` — so a block is 6
//!   numbers `[xx, yy, zz, xy, xz, yz]` and block `(q, p)` equals block `(p, q)`: both symmetries of the
//!   seed's "dense triangular format",
//! - `M_i = ∫_{u-range}|B_i| + ∫_{v-range}|B_i|`, the invalidation weights.
//!
//! # Corotational evaluation
//!
//! With `c` the current centre of mass and `R` the rotation of `F = Σ_i (q_i − c) d̄_iᵀ` (polar
//! decomposition, warm-started), the current configuration moved rigidly back to the reference frame is
//! `q̃_i = Rᵀ(q_i − c) + c̄`, and its deviation from the reference `Δ_i = q̃_i − q̄_i = Rᵀ(q_i − c) − d̄_i`.
//! The seed's force (5), `f ≈ R f̃(q̃)` with the linear model `f̃(x) = f0 + K̄(x − q̄)`, is
//!
//! ```text
//! f_i = R (f0_i + Σ_j K̄_ij Δ_j)  =  R f̄_i + R Σ_j K̄_ij Rᵀ (q_j − c),   f̄ = f0 − K̄ d̄.
//! ```
//!
//! (The two forms agree because `K̄` annihilates translations, `Σ_j K̄_ij = 0`, so the constant shifts
//! `c`, `c̄` drop out; this is the seed's `R f̄ + R K̄ Rᵀ q` with `q` taken relative to the centre of mass.)
//! We evaluate the left form: `Δ` is small and well-conditioned, whereas `K̄ d̄` and `K̄ Rᵀ(q − c)` are
//! large and nearly cancel in f32. It is exact for rigid motions: if `q_i = Q q̄_i + t` then `c = Q c̄ + t`,
//! `F = Q Σ d̄ d̄ᵀ` has polar factor `R = Q`, `Δ = 0`, and `f = Q f0` — the reference force rotated.
//!
//! # Invalidation (seed eq. 6)
//!
//! `metric = max_i M_i · 2r · |Δ_i| / ε²`, with `ε` the smallest pair distance at the last rebuild.

use crate::math::{Real, M3, V3};
use crate::polar::{polar_decompose, Polar, PolarError};

/// A symmetric 3×3 block `[xx, yy, zz, xy, xz, yz]`.
pub type SymBlock<T> = [T; 6];

/// `K v` for a symmetric block.
#[inline]
pub fn sym_mul<T: Real>(k: &SymBlock<T>, v: V3<T>) -> V3<T> {
    V3::new(
        k[0] * v.x + k[3] * v.y + k[4] * v.z,
        k[3] * v.x + k[1] * v.y + k[5] * v.z,
        k[4] * v.x + k[5] * v.y + k[2] * v.z,
    )
}

/// `k += s H` for a symmetric `H`.
#[inline]
pub fn sym_add_scaled<T: Real>(k: &mut SymBlock<T>, h: &M3<T>, s: T) {
    k[0] += s * h.at(0, 0);
    k[1] += s * h.at(1, 1);
    k[2] += s * h.at(2, 2);
    k[3] += s * h.at(0, 1);
    k[4] += s * h.at(0, 2);
    k[5] += s * h.at(1, 2);
}

/// The full matrix of a symmetric block.
pub fn sym_to_m3<T: Real>(k: &SymBlock<T>) -> M3<T> {
    M3::from_cols(
        V3::new(k[0], k[3], k[4]),
        V3::new(k[3], k[1], k[5]),
        V3::new(k[4], k[5], k[2]),
    )
}

/// Index of block `(p, q)`, `p ≤ q`, in the row-major upper triangle of `n × n` blocks.
#[inline]
pub fn tri_index(n: usize, p: usize, q: usize) -> usize {
    debug_assert!(p <= q && q < n);
    // Rows 0..p hold n, n−1, …, n−p+1 blocks: p(2n − p + 1)/2 in all.
    p * (2 * n - p + 1) / 2 + (q - p)
}

/// Number of blocks in the upper triangle of `n × n` blocks.
#[inline]
pub fn tri_len(n: usize) -> usize {
    n * (n + 1) / 2
}

/// `∫_{t0}^{t1} |B_k(t)| dt` on one segment (`0 ≤ t0 ≤ t1 ≤ 1`). On `[0, 1]` the Catmull-Rom basis has
/// fixed signs (`B_0 = −½t(1−t)² ≤ 0`, `B_1 = ½(1−t)(2+2t−3t²) ≥ 0`, `B_2 = ½t(1+4t−3t²) ≥ 0`,
/// `B_3 = −½t²(1−t) ≤ 0`), so `|B_k|` has the polynomial antiderivatives below.
pub fn basis_abs_integral<T: Real>(k: usize, t0: T, t1: T) -> T {
    let c = T::from_f64;
    let anti = |t: T| -> T {
        let t2 = t * t;
        let t3 = t2 * t;
        let t4 = t3 * t;
        let h = c(0.5);
        match k {
            0 => h * (t2 * c(0.5) - t3 * c(2.0 / 3.0) + t4 * c(0.25)),
            1 => h * (t * c(2.0) - t3 * c(5.0 / 3.0) + t4 * c(0.75)),
            2 => h * (t2 * c(0.5) + t3 * c(4.0 / 3.0) - t4 * c(0.75)),
            _ => h * (t3 * c(1.0 / 3.0) - t4 * c(0.25)),
        }
    };
    anti(t1) - anti(t0)
}

/// A point as the model functions read and write it: a [`V3`], or a pool entry `[f32; 4]` (w = 0),
/// so the evaluation works on the pools in place with the same arithmetic (the conversions are
/// exact).
pub trait Point<T: Real>: Copy {
    fn v(self) -> V3<T>;
    fn from_v(v: V3<T>) -> Self;
}

impl<T: Real> Point<T> for V3<T> {
    #[inline(always)]
    fn v(self) -> V3<T> {
        self
    }
    #[inline(always)]
    fn from_v(v: V3<T>) -> Self {
        v
    }
}

impl Point<f32> for [f32; 4] {
    #[inline(always)]
    fn v(self) -> V3<f32> {
        V3::from4(self)
    }
    #[inline(always)]
    fn from_v(v: V3<f32>) -> Self {
        v.to4(0.0)
    }
}

/// Centre of mass of the points (equal weights).
pub fn centre<T: Real>(q: &[V3<T>]) -> V3<T> {
    let mut c = V3::zero();
    for p in q {
        c += *p;
    }
    c / T::from_f64(q.len().max(1) as f64)
}

/// Stage `set_rotation`: centre of mass `c` of the current points and the rotation of
/// `F = Σ_i (q_i − c) d̄_iᵀ`, warm-started from `warm`.
pub fn set_rotation<T: Real, D: Point<T>>(
    q: &[V3<T>],
    dbar: &[D],
    warm: [T; 4],
) -> Result<(V3<T>, Polar<T>), PolarError> {
    let c = centre(q);
    let mut f = M3::zero();
    for (p, d) in q.iter().zip(dbar) {
        f = f.add_m(&(*p - c).outer(d.v()));
    }
    Ok((c, polar_decompose(&f, warm)?))
}

/// `Δ_i = Rᵀ(q_i − c) − d̄_i` into `dev`.
pub fn set_deviation<T: Real, P: Point<T>, D: Point<T>>(
    q: &[V3<T>],
    c: V3<T>,
    r: &M3<T>,
    dbar: &[D],
    dev: &mut [P],
) {
    let rt = r.transpose();
    for i in 0..q.len() {
        dev[i] = P::from_v(rt.mul_v(q[i] - c) - dbar[i].v());
    }
}

/// Seed eq. 6: `max_i M_i · 2r · |Δ_i| / ε²`.
pub fn set_metric<T: Real, P: Point<T>>(dev: &[P], m: &[T], radius: T, eps: T) -> T {
    let mut worst = T::zero();
    for (d, w) in dev.iter().zip(m) {
        worst = worst.max(*w * d.v().norm());
    }
    worst * T::from_f64(2.0) * radius / (eps * eps)
}

/// [`set_metric`] and `max_i |Δ_i|` (the invalidation's deviation bound) from one pass over the
/// deviations: the same arithmetic as each alone, the norms computed once.
pub fn set_metric_and_max_deviation<T: Real, P: Point<T>>(
    dev: &[P],
    m: &[T],
    radius: T,
    eps: T,
) -> (T, T) {
    let mut worst = T::zero();
    let mut maxdev = T::zero();
    for (d, w) in dev.iter().zip(m) {
        let norm = d.v().norm();
        worst = worst.max(*w * norm);
        maxdev = maxdev.max(norm);
    }
    (worst * T::from_f64(2.0) * radius / (eps * eps), maxdev)
}

/// Stage `corotational_force`: `f_i = R (f0_i + Σ_j K̄_ij Δ_j)` into `out` (n points), with `K̄` the
/// upper-triangular symmetric blocks `k`.
pub fn corotational_force<T: Real, P: Point<T>>(
    r: &M3<T>,
    f0: &[P],
    k: &[SymBlock<T>],
    dev: &[P],
    out: &mut [P],
) {
    let n = f0.len();
    out[..n].copy_from_slice(&f0[..n]);
    let mut idx = 0;
    for p in 0..n {
        // Diagonal block, then (p, q) and its mirror (q, p) — equal, since every block is symmetric.
        // Row p's sum stays in a register: through `out[p]` every iteration would wait on the store
        // of the one before (the compiler cannot tell `out[p]` from `out[q]`). Same additions, same
        // order: each `out[q]` is `f0_q` plus its terms in column order `j = 0, 1, …, n − 1`
        // ([`corotational_row`] sums one row in that order).
        let dp = dev[p].v();
        let mut acc = out[p].v() + sym_mul(&k[idx], dp);
        idx += 1;
        for q in p + 1..n {
            let blk = &k[idx];
            acc += sym_mul(blk, dev[q].v());
            out[q] = P::from_v(out[q].v() + sym_mul(blk, dp));
            idx += 1;
        }
        out[p] = P::from_v(acc);
    }
    for o in out[..n].iter_mut() {
        *o = P::from_v(r.mul_v(o.v()));
    }
}

/// Row `p` of [`corotational_force`] alone (before the rotation): `f0_p + Σ_j K̄_pj Δ_j`, summed in
/// the order `j = 0, …, n − 1` that `corotational_force` adds them in (block `(min, max)` of the
/// upper triangle), so it gives the same value; one GPU thread per row computes it so.
pub fn corotational_row<T: Real, P: Point<T>>(
    p: usize,
    f0: &[P],
    k: &[SymBlock<T>],
    dev: &[P],
) -> V3<T> {
    let n = f0.len();
    let mut acc = f0[p].v();
    for j in 0..n {
        let blk = &k[if j < p {
            tri_index(n, j, p)
        } else {
            tri_index(n, p, j)
        }];
        acc += sym_mul(blk, dev[j].v());
    }
    acc
}

/// Adds one touching quadrature pair to a model being built: `grad_i` and `hess_ii` are the point-level
/// terms of `E` (from the contact module), `c` the coefficients of `y_i − y_j` on the 8 slots
/// (`wa`, `−wb`), `loc` the model-local index of each slot's control point. The force gets `−c_s grad`,
/// the stiffness `−c_s c_t H` (only blocks with `loc[s] ≤ loc[t]`: the upper triangle; for `loc[s] =
/// loc[t]` both orderings of a slot pair land in the diagonal block, as they must).
pub fn accumulate_pair<T: Real>(
    n: usize,
    loc: &[usize; 8],
    c: &[T; 8],
    grad_i: V3<T>,
    hess_ii: &M3<T>,
    f: &mut [V3<T>],
    k: &mut [SymBlock<T>],
) {
    for s in 0..8 {
        f[loc[s]] -= grad_i * c[s];
    }
    for s in 0..8 {
        for t in 0..8 {
            let (ls, lt) = (loc[s], loc[t]);
            if ls <= lt {
                sym_add_scaled(&mut k[tri_index(n, ls, lt)], hess_ii, -(c[s] * c[t]));
            }
        }
    }
}
