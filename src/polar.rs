//! Polar decomposition `F = R S` of a 3×3 matrix, warm-started from the previous rotation.
//!
//! Used by the corotational contact model (seed §4, DESIGN §4): each step every contact set matches its
//! current control points against its reference ones, `F = Σ_i (q_i − c)(q̄_i − c̄)ᵀ`, and needs the
//! rotation `R` of `F`. Contacts rotate little from one step to the next, so the previous step's rotation
//! is an excellent starting point.
//!
//! # Method: rotation maximizing `tr(Rᵀ F)`, by Newton iteration on a unit quaternion
//!
//! The rotational polar factor of `F` (for `det F > 0`) is the rotation that maximizes
//! `E(R) = tr(Rᵀ F)` over SO(3) (with `F = U Σ Vᵀ` the maximum is `U Vᵀ`). Instead of the seed's Jacobi
//! eigen-decomposition of `FᵀF` (which squares the condition number — harmful in f32 — and needs case
//! work to turn a rank-deficient or reflected `F` into a proper rotation), we follow the idea of Müller
//! et al. 2016, *A robust method to extract the rotational part of deformations*: keep `R` as a unit
//! quaternion and rotate it towards the maximum. Written out here:
//!
//! Perturb `R ← exp([θ]×) R`. With `N = F Rᵀ = Σ_i a_i r_iᵀ` (`a_i`, `r_i` the columns of `F`, `R`)
//!
//! ```text
//! E(θ) ≈ E + gᵀθ − ½ θᵀ H θ,   g = Σ_i r_i × a_i,   H = tr(N) I − sym(N).
//! ```
//!
//! * Müller et al. take the step `θ = g / |tr N|` (`H` replaced by `tr(N) I`). That converges only
//!   linearly (slowly when one singular value dominates) and can overshoot and oscillate when `H` has
//!   eigenvalues above `tr N` (a reflected `F`, or a start far from the maximum).
//! * We choose the direction `n` of the Newton step `H⁻¹ g` where `H` is positive definite (always
//!   true near the maximum when `det F > 0`: `H` then has eigenvalues `σ_j + σ_k > 0`), and of the
//!   gradient `g` elsewhere, and then take the *exact* maximum of `E` along that axis. For a rotation
//!   by `φ` about a fixed unit axis `n`, `E` is exactly the sinusoid
//!   `E(φ) = E₀ + (n·g) sin φ − (nᵀHn)(1 − cos φ)`, maximal at `φ = atan2(n·g, nᵀHn) ∈ (0, π)`. So
//!   every step increases `E` (no overshoot), and along the Newton direction `φ` agrees with the Newton
//!   step to second order (quadratic convergence). At an exactly stationary point that is not a maximum
//!   (a saddle, or the minimum, e.g. `R = I` for `F = −I`) `E` increases monotonically for a half turn
//!   about the eigenvector of `H`'s negative eigenvalue, which the iteration then takes.
//!
//! Why this method:
//! * **Always a proper rotation.** `R` is the matrix of a unit quaternion, renormalized after every
//!   step, so `RᵀR = I` and `det R = +1` hold to rounding for *every* input, including collinear,
//!   coplanar, reflected and zero matrices (no sign fix-ups, no division by a vanishing singular value).
//! * **Degenerate inputs are benign.** For `F = 0`, `g = 0` and the warm start is returned. For a
//!   rank-1 `F` the maximizer is not unique and the iteration stops at one of them; for a reflected `F`
//!   (`det F < 0`) it finds the maximizer `U diag(1, 1, −1) Vᵀ`, whose `S = RᵀF` is symmetric but
//!   indefinite.
//! * **Warm starts pay off.** From the previous step's rotation the first Newton step is already at
//!   rounding level for a near-rigid contact: typically one or two iterations.
//! * `tr(Rᵀ F)` has no local maxima other than the global one (its other critical points `U D Vᵀ`,
//!   `D = diag(±1)`, are saddles or minima), so the ascent cannot get stuck on a wrong rotation.
//!
//! `S = sym(Rᵀ F)`; for `det F > 0` at convergence `Rᵀ F` is symmetric to rounding, so `F = R S`.
//!
//! Quaternions are stored `[x, y, z, w]` (the vector part first, as a WGSL `vec4<f32>`).
//!
//! # On the GPU
//!
//! `shaders/shared/polar.wgsl` is this module in f32, function for function and in the same order of
//! operations, for kernels to import. The tool kernel `polar_test` runs it on a list of
//! [`PolarInput`] records (binding `polar_in`) into [`PolarOutput`] records (`polar_out`); its CPU
//! twin is [`polar_test`], which calls [`polar_decompose`]`::<f32>` per record and writes an error as
//! the kernel does (flag [`POLAR_NOT_FINITE`], the normalized warm start, `S = 0`).

// Negated comparisons (`!(x > 0)`) are deliberate: they also reject NaN. Index loops mirror the
// element-wise kernels.
#![allow(clippy::neg_cmp_op_on_partial_ord, clippy::needless_range_loop)]

use crate::layout::{PolarInput, PolarOutput};
use crate::math::{Real, M3, V3};

/// Iteration cap. Newton converges in a handful of steps; the cap only bounds the linear gradient
/// ascent on degenerate inputs, where any iterate is still a proper rotation.
pub const MAX_ITERATIONS: u32 = 40;

/// Why a decomposition could not be formed.
#[derive(Debug, thiserror::Error, PartialEq)]
pub enum PolarError {
    #[error("polar decomposition of a matrix with a non-finite entry (row {row}, column {col})")]
    NotFinite { row: usize, col: usize },
}

/// `F = R S` with `R` a proper rotation and `S` symmetric.
#[derive(Clone, Copy, Debug)]
pub struct Polar<T> {
    pub r: M3<T>,
    pub s: M3<T>,
    /// `R` as a unit quaternion `[x, y, z, w]`, to warm-start the next decomposition.
    pub quat: [T; 4],
    /// Iterations used (0 when the warm start was already the answer).
    pub iterations: u32,
}

/// The identity quaternion `[0, 0, 0, 1]`.
pub fn quat_identity<T: Real>() -> [T; 4] {
    [T::zero(), T::zero(), T::zero(), T::one()]
}

/// Unit quaternion `q / |q|`; a zero or non-finite `q` becomes the identity.
pub fn quat_normalize<T: Real>(q: [T; 4]) -> [T; 4] {
    let n2 = q[0] * q[0] + q[1] * q[1] + q[2] * q[2] + q[3] * q[3];
    if !(n2 > T::zero()) || !n2.is_finite() {
        return quat_identity();
    }
    let inv = T::one() / n2.sqrt();
    [q[0] * inv, q[1] * inv, q[2] * inv, q[3] * inv]
}

/// Hamilton product `a b` (apply `b`, then `a`).
pub fn quat_mul<T: Real>(a: [T; 4], b: [T; 4]) -> [T; 4] {
    let (av, aw) = (V3::new(a[0], a[1], a[2]), a[3]);
    let (bv, bw) = (V3::new(b[0], b[1], b[2]), b[3]);
    let v = bv * aw + av * bw + av.cross(bv);
    [v.x, v.y, v.z, aw * bw - av.dot(bv)]
}

/// The unit quaternion of the rotation by `|θ|` about `θ/|θ|`.
pub fn quat_from_rotation_vector<T: Real>(theta: V3<T>) -> [T; 4] {
    let angle = theta.norm();
    let half = angle * T::from_f64(0.5);
    // sin(½|θ|)/|θ| without a 0/0 at θ = 0 (series below 1e-4 rad, exact to rounding in f64).
    let k = if angle < T::from_f64(1e-4) {
        T::from_f64(0.5) - angle * angle / T::from_f64(48.0)
    } else {
        half.sin() / angle
    };
    quat_normalize([theta.x * k, theta.y * k, theta.z * k, half.cos()])
}

/// Rotation matrix of a unit quaternion `[x, y, z, w]`.
pub fn quat_to_matrix<T: Real>(q: [T; 4]) -> M3<T> {
    let [x, y, z, w] = q;
    let two = T::from_f64(2.0);
    let one = T::one();
    M3::from_cols(
        V3::new(
            one - two * (y * y + z * z),
            two * (x * y + z * w),
            two * (x * z - y * w),
        ),
        V3::new(
            two * (x * y - z * w),
            one - two * (x * x + z * z),
            two * (y * z + x * w),
        ),
        V3::new(
            two * (x * z + y * w),
            two * (y * z - x * w),
            one - two * (x * x + y * y),
        ),
    )
}

/// Solves `H θ = g` for a symmetric `H`, if `H` is positive definite with a margin relative to `scale`
/// (Sylvester's criterion on the leading minors); `None` otherwise.
pub(crate) fn solve_spd<T: Real>(h: &M3<T>, g: V3<T>, scale: T) -> Option<V3<T>> {
    let margin = T::from_f64(1e-6) * scale;
    let m1 = h.at(0, 0);
    let m2 = h.at(0, 0) * h.at(1, 1) - h.at(0, 1) * h.at(1, 0);
    let det = h.det();
    if !(m1 > margin && m2 > margin * scale && det > margin * scale * scale) {
        return None;
    }
    // H⁻¹ = adj(H)ᵀ / det; for symmetric H the cofactor matrix is symmetric too.
    let c0 = h.c[1].cross(h.c[2]);
    let c1 = h.c[2].cross(h.c[0]);
    let c2 = h.c[0].cross(h.c[1]);
    // Rows of H⁻¹ are c_i / det.
    Some(V3::new(c0.dot(g), c1.dot(g), c2.dot(g)) / det)
}

/// The gradient `g` and Hessian `H` of `tr(Rᵀ A)`, for rotation `r` and matrix `a`. At the polar
/// factor of `A = R S`, `H = R (tr S · I − S) Rᵀ` also maps a small turn `δθ` of the factor to the
/// change of `A` that makes it (`H δθ = Σ_i r_i × δa_i`), which the stiction springs' force uses
/// ([`crate::acl::stiction`]).
#[inline]
pub(crate) fn ascent_terms<T: Real>(r: &M3<T>, a: &M3<T>) -> (V3<T>, M3<T>) {
    let mut g = V3::zero();
    let mut tr = T::zero();
    let mut n = M3::zero();
    for i in 0..3 {
        g += r.c[i].cross(a.c[i]);
        tr += r.c[i].dot(a.c[i]);
        n = n.add_m(&a.c[i].outer(r.c[i]));
    }
    let half = T::from_f64(0.5);
    let sym = n.add_m(&n.transpose()).scale(half);
    let h = M3::diag(tr).sub_m(&sym);
    (g, h)
}

/// A unit direction `n` with `nᵀ H n < −margin` for a symmetric `H`, if there is one: the eigenvector of
/// the smallest eigenvalue, by power iteration on `c I − H` (`c = |H|_F` makes it positive
/// semidefinite). Only used at exactly stationary points, which are rare.
fn negative_curvature_direction<T: Real>(h: &M3<T>, margin: T) -> Option<V3<T>> {
    let c = h.norm();
    if !(c > T::zero()) {
        return None;
    }
    let m = M3::diag(c).sub_m(h);
    // Start from the largest column of M (not orthogonal to the dominant eigenvector unless M = 0).
    let mut v = m.c[0];
    for k in 1..3 {
        if m.c[k].norm2() > v.norm2() {
            v = m.c[k];
        }
    }
    v = v.normalized();
    for _ in 0..64 {
        let w = m.mul_v(v).normalized();
        if w.norm2() == T::zero() {
            return None;
        }
        v = w;
    }
    if v.dot(h.mul_v(v)) < -margin {
        Some(v)
    } else {
        None
    }
}

/// Polar decomposition `F = R S`, starting the iteration from the rotation `warm` (`[x, y, z, w]`; pass
/// [`quat_identity`] without a previous rotation). Returns a proper rotation for every finite `F`.
pub fn polar_decompose<T: Real>(f: &M3<T>, warm: [T; 4]) -> Result<Polar<T>, PolarError> {
    for col in 0..3 {
        for row in 0..3 {
            if !f.at(row, col).is_finite() {
                return Err(PolarError::NotFinite { row, col });
            }
        }
    }
    let mut q = quat_normalize(warm);
    let scale = f.norm();
    if scale == T::zero() {
        // F = 0: every rotation is a polar factor of 0; keep the warm start.
        return Ok(Polar {
            r: quat_to_matrix(q),
            s: M3::zero(),
            quat: q,
            iterations: 0,
        });
    }
    // Work on F / |F|_F so tolerances are relative. If |F|_F overflowed although every entry is
    // finite, scale by the largest entry instead.
    let inv = if scale.is_finite() {
        T::one() / scale
    } else {
        let mut m = T::zero();
        for c in 0..3 {
            for r in 0..3 {
                m = m.max(f.at(r, c).abs());
            }
        }
        T::one() / m
    };
    let a = f.scale(inv);
    let tol = T::eps() * T::from_f64(8.0);
    let mut iterations = 0;
    for it in 0..MAX_ITERATIONS {
        let r = quat_to_matrix(q);
        let (g, h) = ascent_terms(&r, &a);
        let newton = solve_spd(&h, g, T::one());
        let mut last = false;
        let axis = if g.norm() <= tol {
            // Stationary: a maximum where H is positive definite. Otherwise H may have a direction
            // of negative curvature (a saddle or the minimum, e.g. the identity for F = −I): then E
            // grows monotonically all the way to a half turn about that direction.
            if newton.is_some() {
                break;
            }
            match negative_curvature_direction(&h, tol) {
                Some(n) => n * T::from_f64(std::f64::consts::PI),
                None => break,
            }
        } else {
            // Newton direction where H is positive definite, steepest ascent otherwise. Both are
            // ascent directions (n·g > 0), and along a fixed axis n, E is exactly the sinusoid
            // E(φ) = E₀ + (n·g) sin φ − (nᵀHn)(1 − cos φ), maximal at φ = atan2(n·g, nᵀHn) ∈ (0, π):
            // an exact line search, so every step increases E. Near the maximum, along the Newton
            // direction φ equals the Newton step length to second order (quadratic convergence).
            let dir = newton.unwrap_or(g);
            let n = dir.normalized();
            let phi = n.dot(g).atan2(n.dot(h.mul_v(n)));
            if !(phi > tol) {
                break;
            }
            // Quadratic convergence: after a Newton step of φ the error is of order φ², so a step
            // with φ² below the tolerance is the last one (saves re-evaluating at the answer).
            last = newton.is_some() && phi * phi < tol;
            n * phi
        };
        q = quat_normalize(quat_mul(quat_from_rotation_vector(axis), q));
        iterations = it + 1;
        if last {
            break;
        }
    }
    let r = quat_to_matrix(q);
    let rtf = r.transpose().mul_m(f);
    let s = rtf.add_m(&rtf.transpose()).scale(T::from_f64(0.5));
    Ok(Polar {
        r,
        s,
        quat: q,
        iterations,
    })
}

/// [`PolarOutput::error`]: `F` has a non-finite entry ([`PolarError::NotFinite`]).
pub const POLAR_NOT_FINITE: u32 = 1;
/// [`PolarOutput::bad_entry`] when every entry of `F` is finite.
pub const POLAR_NO_ENTRY: u32 = u32::MAX;

fn cols4(m: &M3<f32>) -> [[f32; 4]; 3] {
    [m.c[0].to4(0.0), m.c[1].to4(0.0), m.c[2].to4(0.0)]
}

/// CPU twin of the `polar_test` kernel: `polar_out[i]` is the decomposition of `polar_in[i]` by
/// [`polar_decompose`]`::<f32>` (records past the shorter slice are left alone). On a non-finite
/// entry the record holds the error flag, the entry (`3 col + row`), the normalized warm start with
/// its matrix, `S = 0` and no iterations.
pub fn polar_test(polar_in: &[PolarInput], polar_out: &mut [PolarOutput]) {
    for (inp, out) in polar_in.iter().zip(polar_out.iter_mut()) {
        let f = M3::from_cols(
            V3::from4(inp.f[0]),
            V3::from4(inp.f[1]),
            V3::from4(inp.f[2]),
        );
        *out = match polar_decompose::<f32>(&f, inp.warm) {
            Ok(p) => PolarOutput {
                quat: p.quat,
                r: cols4(&p.r),
                s: cols4(&p.s),
                iterations: p.iterations,
                error: 0,
                bad_entry: POLAR_NO_ENTRY,
                _pad: 0,
            },
            Err(PolarError::NotFinite { row, col }) => {
                let q = quat_normalize(inp.warm);
                PolarOutput {
                    quat: q,
                    r: cols4(&quat_to_matrix(q)),
                    s: cols4(&M3::zero()),
                    iterations: 0,
                    error: POLAR_NOT_FINITE,
                    bad_entry: (3 * col + row) as u32,
                    _pad: 0,
                }
            }
        };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quaternion_matrix_round_trip_is_a_rotation() {
        let q = quat_from_rotation_vector(V3::new(0.3f64, -1.2, 0.7));
        let r = quat_to_matrix(q);
        let rtr = r.transpose().mul_m(&r);
        assert!(rtr.sub_m(&M3::identity()).norm() < 1e-14);
        assert!((r.det() - 1.0).abs() < 1e-14);
        // Rotating the axis leaves it fixed.
        let axis = V3::new(0.3f64, -1.2, 0.7);
        assert!((r.mul_v(axis) - axis).norm() < 1e-14);
    }

    #[test]
    fn warm_start_at_the_answer_takes_no_iteration() {
        let q = quat_from_rotation_vector(V3::new(0.1f64, 0.2, -0.3));
        let f = quat_to_matrix(q).mul_m(&M3::diag(2.0));
        let p = polar_decompose(&f, q).unwrap();
        assert!(p.iterations <= 1, "{}", p.iterations);
    }
}
