//! A topology oracle: Gauss linking numbers between closed yarn loops, and the linking certificate.
//!
//! Knitted cloth holds together because its yarns cannot pass through each other. For closed loops
//! that is checkable: the Gauss linking number `Lk(a, b) = (1/4π) ∮∮ (a−b)·(da×db)/|a−b|³` is an
//! integer that cannot change unless the two curves cross. A run whose contact lets yarns pass through
//! each other changes the certificate.
//!
//! Each closed Catmull-Rom curve (from [`Curve`] control points) is sampled densely into a closed
//! polyline (`SAMPLES_PER_SEGMENT` points per spline segment). The Gauss integral over two closed
//! polylines is a sum over segment pairs of the exact solid-angle form of Klenin & Langowski (2000): for
//! segments `p1→p2`, `p3→p4` the contribution is `Ω/4π` with
//! `Ω = ±(asin(n1·n2) + asin(n2·n3) + asin(n3·n4) + asin(n4·n1))`, the `n` the unit normals of the
//! four faces of the tetrahedron `p1 p2 p3 p4` seen from inside. The sum is rounded to the nearest
//! integer; a sum farther than [`INTEGER_TOLERANCE`] from an integer means the curves (nearly) intersect
//! and is an error, not a guess.
//!
//! Pairs of curves whose bounding boxes do not overlap are separated by a plane and have `Lk = 0`; a
//! sweep over the boxes sorted by their lower x skips them, so a scene of thousands of loops costs
//! only its overlapping pairs.
//!
//! Certificate format ([`certificate`]): the first line is the number of closed curves, then one line
//! `i,j,Lk` per pair with a non-zero linking number, `i < j` 0-based indices among the closed curves
//! (in input order), sorted.

use crate::math::V3;
use crate::spline;
use crate::state::Curve;
use rayon::prelude::*;
use std::fmt::Write as _;
use std::path::Path;

type V = V3<f64>;

/// Polyline points per Catmull-Rom segment when a closed curve is sampled.
pub const SAMPLES_PER_SEGMENT: usize = 6;
/// Largest distance of a computed linking number from the nearest integer that is accepted.
pub const INTEGER_TOLERANCE: f64 = 0.05;

/// Why a linking number or certificate could not be computed.
#[derive(Debug, thiserror::Error)]
pub enum LinkError {
    #[error("closed curves {i} and {j}: Gauss integral {value} is not near an integer (the curves intersect or nearly touch)")]
    NotInteger { i: usize, j: usize, value: f64 },
    #[error("curve {curve}, control point {point} is not finite")]
    NotFinite { curve: usize, point: usize },
    #[error("curve {curve} is closed but has {points} control points (at least 3 needed)")]
    TooFewPoints { curve: usize, points: usize },
    #[error(transparent)]
    Bcc(#[from] crate::bcc::BccError),
}

/// Contribution of segment `p1→p2` against segment `p3→p4` to the Gauss integral, `Ω/4π`.
#[inline]
pub fn segment_pair_linking(p1: V, p2: V, p3: V, p4: V) -> f64 {
    let r13 = p3 - p1;
    let r14 = p4 - p1;
    let r23 = p3 - p2;
    let r24 = p4 - p2;
    let n1 = r13.cross(r14).normalized();
    let n2 = r14.cross(r24).normalized();
    let n3 = r24.cross(r23).normalized();
    let n4 = r23.cross(r13).normalized();
    let asin = |x: f64| x.clamp(-1.0, 1.0).asin();
    let omega = asin(n1.dot(n2)) + asin(n2.dot(n3)) + asin(n3.dot(n4)) + asin(n4.dot(n1));
    let r34 = p4 - p3;
    let r12 = p2 - p1;
    let s = r34.cross(r12).dot(r13);
    let sign = if s > 0.0 {
        1.0
    } else if s < 0.0 {
        -1.0
    } else {
        0.0
    };
    sign * omega / (4.0 * std::f64::consts::PI)
}

/// The Gauss integral of two closed polylines (last point joins the first), unrounded.
pub fn polyline_linking(a: &[V], b: &[V]) -> f64 {
    let mut sum = 0.0;
    for i in 0..a.len() {
        let (p1, p2) = (a[i], a[(i + 1) % a.len()]);
        for j in 0..b.len() {
            sum += segment_pair_linking(p1, p2, b[j], b[(j + 1) % b.len()]);
        }
    }
    sum
}

/// A closed Catmull-Rom curve through `points` sampled into a closed polyline, `per_segment` points a
/// segment (the control points themselves among them).
pub fn sample_closed(points: &[[f32; 3]], per_segment: usize) -> Vec<V> {
    let n = points.len();
    let mut out = Vec::with_capacity(n * per_segment);
    for i in 0..n {
        let q = [n - 1, 0, 1, 2].map(|o| V::from3(points[(i + o) % n]));
        for s in 0..per_segment {
            out.push(spline::eval(&q, s as f64 / per_segment as f64));
        }
    }
    out
}

/// The linking number of two closed curves (Catmull-Rom through their control points), checked to be
/// near an integer. `i`, `j` only name the curves in an error.
pub fn linking_number(a: &Curve, b: &Curve, i: usize, j: usize) -> Result<i64, LinkError> {
    let pa = sample_closed(&a.points, SAMPLES_PER_SEGMENT);
    let pb = sample_closed(&b.points, SAMPLES_PER_SEGMENT);
    round_checked(polyline_linking(&pa, &pb), i, j)
}

fn round_checked(value: f64, i: usize, j: usize) -> Result<i64, LinkError> {
    let r = value.round();
    if !value.is_finite() || (value - r).abs() > INTEGER_TOLERANCE {
        return Err(LinkError::NotInteger { i, j, value });
    }
    Ok(r as i64)
}

/// The linking certificate of a scene: the closed curves among `curves` (open ones are ignored), their
/// count on the first line, then `i,j,Lk` for every pair with non-zero linking number.
pub fn certificate(curves: &[Curve]) -> Result<String, LinkError> {
    let closed: Vec<(usize, &Curve)> = curves
        .iter()
        .enumerate()
        .filter(|(_, c)| c.closed)
        .collect();
    // Each loop as a dense polyline with its bounding box; the boxes let the pair search skip most
    // pairs.
    let mut polys = Vec::with_capacity(closed.len());
    for &(ci, c) in &closed {
        if c.points.len() < 3 {
            return Err(LinkError::TooFewPoints {
                curve: ci,
                points: c.points.len(),
            });
        }
        if let Some(p) = c
            .points
            .iter()
            .position(|p| !p.iter().all(|v| v.is_finite()))
        {
            return Err(LinkError::NotFinite {
                curve: ci,
                point: p,
            });
        }
        let pts = sample_closed(&c.points, SAMPLES_PER_SEGMENT);
        let (lo, hi) = pts.iter().fold(
            (V::splat(f64::INFINITY), V::splat(f64::NEG_INFINITY)),
            |(lo, hi), p| (lo.min_el(*p), hi.max_el(*p)),
        );
        polys.push((pts, lo, hi));
    }
    // Sweep and prune along x: loops with disjoint boxes are separated by a plane, so they cannot
    // link and only pairs whose boxes overlap are integrated.
    let mut order: Vec<usize> = (0..polys.len()).collect();
    order.sort_by(|&a, &b| polys[a].1.x.total_cmp(&polys[b].1.x).then(a.cmp(&b)));
    let mut pairs = Vec::new();
    for (oi, &a) in order.iter().enumerate() {
        for &b in &order[oi + 1..] {
            if polys[b].1.x > polys[a].2.x {
                break;
            }
            let overlap = (0..3).all(|k| {
                polys[a].1.get(k) <= polys[b].2.get(k) && polys[b].1.get(k) <= polys[a].2.get(k)
            });
            if overlap {
                pairs.push((a.min(b), a.max(b)));
            }
        }
    }
    pairs.sort_unstable();
    let lks: Vec<Result<i64, LinkError>> = pairs
        .par_iter()
        .map(|&(a, b)| round_checked(polyline_linking(&polys[a].0, &polys[b].0), a, b))
        .collect();
    let mut out = String::new();
    let _ = writeln!(out, "{}", closed.len());
    for (&(a, b), lk) in pairs.iter().zip(lks) {
        let lk = lk?;
        if lk != 0 {
            let _ = writeln!(out, "{a},{b},{lk}");
        }
    }
    Ok(out)
}

/// `yarnsim links FILE.bcc`: the certificate of the curves in a BCC file.
pub fn links_command(path: &Path) -> Result<String, LinkError> {
    let curves = crate::bcc::read(path)?;
    certificate(&curves)
}
