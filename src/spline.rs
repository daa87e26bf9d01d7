//! Uniform cubic Catmull-Rom splines through the control points, and the quadrature on them.
//!
//! Segment `s` of a yarn interpolates between control points `cp[1]` and `cp[2]` of its
//! [`Segment`](crate::state::Segment) record (`q_{i-1..i+2}`), with local parameter `t ∈ [0, 1]`:
//! `y(t) = Σ_k B_k(t) q_k`. Quadrature point `k` of a segment (of `b` per segment) sits at
//! `t_k = (k + ½)/b` (midpoint rule) and carries the arc length `ℓ_seg / b`, where `ℓ_seg` is the rest
//! length of the segment's central polyline edge. Its global index is `segment * b + k`; that index
//! space is the `S` of DESIGN §3, and contact sets are boxes in `S × S`.
//!
//! The axis-aligned bound of a segment comes from the roots of `y'(t)`, one quadratic per axis.

use crate::math::{Real, V3};

/// Catmull-Rom basis weights `B_0..B_3` at local parameter `t`.
#[inline]
pub fn basis<T: Real>(t: T) -> [T; 4] {
    let h = T::from_f64(0.5);
    let t2 = t * t;
    let t3 = t2 * t;
    let c = T::from_f64;
    [
        h * (-t + c(2.0) * t2 - t3),
        h * (c(2.0) - c(5.0) * t2 + c(3.0) * t3),
        h * (t + c(4.0) * t2 - c(3.0) * t3),
        h * (-t2 + t3),
    ]
}

/// Derivatives `B_k'(t)` of the basis.
#[inline]
pub fn basis_deriv<T: Real>(t: T) -> [T; 4] {
    let h = T::from_f64(0.5);
    let t2 = t * t;
    let c = T::from_f64;
    [
        h * (-T::one() + c(4.0) * t - c(3.0) * t2),
        h * (-c(10.0) * t + c(9.0) * t2),
        h * (T::one() + c(8.0) * t - c(9.0) * t2),
        h * (-c(2.0) * t + c(3.0) * t2),
    ]
}

/// Point on the segment with control points `q` at parameter `t`.
#[inline]
pub fn eval<T: Real>(q: &[V3<T>; 4], t: T) -> V3<T> {
    let b = basis(t);
    q[0] * b[0] + q[1] * b[1] + q[2] * b[2] + q[3] * b[3]
}

/// Tangent `y'(t)` of the segment.
#[inline]
pub fn eval_deriv<T: Real>(q: &[V3<T>; 4], t: T) -> V3<T> {
    let b = basis_deriv(t);
    q[0] * b[0] + q[1] * b[1] + q[2] * b[2] + q[3] * b[3]
}

/// Local parameter of quadrature point `k` out of `b` per segment (midpoint rule).
#[inline]
pub fn quad_param<T: Real>(k: u32, b: u32) -> T {
    T::from_f64((k as f64 + 0.5) / b as f64)
}

/// Basis weights at every quadrature parameter of a segment, computed once per scene.
#[derive(Clone, Debug)]
pub struct QuadratureTable {
    pub b: u32,
    /// `weights[k]` = `basis(quad_param(k, b))`.
    pub weights: Vec<[f32; 4]>,
}

impl QuadratureTable {
    pub fn new(b: u32) -> Self {
        let weights = (0..b).map(|k| basis::<f32>(quad_param(k, b))).collect();
        QuadratureTable { b, weights }
    }
}

/// Roots in the open interval (0, 1) of `a t² + b t + c`, written into `out`; returns how many.
pub fn quadratic_roots_01<T: Real>(a: T, b: T, c: T, out: &mut [T; 2]) -> usize {
    let mut n = 0;
    let mut push = |t: T, n: &mut usize| {
        if t > T::zero() && t < T::one() && *n < 2 {
            out[*n] = t;
            *n += 1;
        }
    };
    let scale = a.abs().max(b.abs()).max(c.abs());
    if scale == T::zero() {
        return 0;
    }
    if a.abs() <= T::from_f64(1e-12) * scale {
        if b.abs() > T::zero() {
            push(-c / b, &mut n);
        }
        return n;
    }
    let disc = b * b - T::from_f64(4.0) * a * c;
    if disc < T::zero() {
        return 0;
    }
    let sq = disc.sqrt();
    // The numerically stable pair of roots.
    let qv = if b >= T::zero() {
        -T::from_f64(0.5) * (b + sq)
    } else {
        -T::from_f64(0.5) * (b - sq)
    };
    push(qv / a, &mut n);
    if qv != T::zero() {
        push(c / qv, &mut n);
    }
    n
}

/// Exact axis-aligned bounds `(min, max)` of the segment curve (not padded).
///
/// Each coordinate of `y'(t)` is a quadratic in `t`; the extremes lie at the ends or at its roots.
pub fn segment_aabb<T: Real>(q: &[V3<T>; 4]) -> (V3<T>, V3<T>) {
    let p0 = q[1];
    let p1 = q[2];
    let mut lo = p0.min_el(p1);
    let mut hi = p0.max_el(p1);
    // y'(t) = A t² + B t + C with, from basis_deriv,
    // C = ½(q2 − q0), B = ½(4q0 − 10q1 + 8q2 − 2q3), A = ½(−3q0 + 9q1 − 9q2 + 3q3).
    let h = T::from_f64(0.5);
    let c = (q[2] - q[0]) * h;
    let b = (q[0] * T::from_f64(4.0) - q[1] * T::from_f64(10.0) + q[2] * T::from_f64(8.0)
        - q[3] * T::from_f64(2.0))
        * h;
    let a = (q[0] * T::from_f64(-3.0) + q[1] * T::from_f64(9.0) - q[2] * T::from_f64(9.0)
        + q[3] * T::from_f64(3.0))
        * h;
    for axis in 0..3 {
        let mut roots = [T::zero(); 2];
        let n = quadratic_roots_01(a.get(axis), b.get(axis), c.get(axis), &mut roots);
        for &t in &roots[..n] {
            let y = eval(q, t).get(axis);
            lo.set(axis, lo.get(axis).min(y));
            hi.set(axis, hi.get(axis).max(y));
        }
    }
    (lo, hi)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::math::V3d;

    #[test]
    fn basis_partition_of_unity_and_interpolation() {
        for i in 0..=10 {
            let t = i as f64 / 10.0;
            let b = basis(t);
            assert!((b.iter().sum::<f64>() - 1.0).abs() < 1e-14);
            let d = basis_deriv(t);
            assert!(d.iter().sum::<f64>().abs() < 1e-14);
        }
        assert_eq!(basis(0.0f64), [0.0, 1.0, 0.0, 0.0]);
        assert_eq!(basis(1.0f64), [0.0, 0.0, 1.0, 0.0]);
    }

    #[test]
    fn basis_deriv_matches_finite_differences() {
        for i in 1..10 {
            let t = i as f64 / 10.0;
            let e = 1e-6;
            let (bp, bm, d) = (basis(t + e), basis(t - e), basis_deriv(t));
            for k in 0..4 {
                assert!(((bp[k] - bm[k]) / (2.0 * e) - d[k]).abs() < 1e-8);
            }
        }
    }

    #[test]
    fn aabb_contains_dense_samples_and_is_tight() {
        let q = [
            V3d::new(0.0, 0.0, 0.0),
            V3d::new(1.0, 2.0, -1.0),
            V3d::new(2.0, -1.0, 0.5),
            V3d::new(0.0, 3.0, 2.0),
        ];
        let (lo, hi) = segment_aabb(&q);
        let mut slo = V3d::splat(f64::INFINITY);
        let mut shi = V3d::splat(f64::NEG_INFINITY);
        for i in 0..=10000 {
            let p = eval(&q, i as f64 / 10000.0);
            slo = slo.min_el(p);
            shi = shi.max_el(p);
        }
        for a in 0..3 {
            assert!(lo.get(a) <= slo.get(a) + 1e-12 && hi.get(a) >= shi.get(a) - 1e-12);
            assert!(slo.get(a) - lo.get(a) < 1e-6 && hi.get(a) - shi.get(a) < 1e-6);
        }
    }
}
