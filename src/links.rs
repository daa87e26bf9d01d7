//! A topology oracle: Gauss linking numbers between closed yarn loops, and the linking certificate.
//!
//! Knitted cloth holds together because its yarns cannot pass through each other. For closed loops
//! that is checkable: the Gauss linking number `Lk(a, b) = (1/4π) ∮∮ (a−b)·(da×db)/|a−b|³` is an
//! integer that cannot change unless the two curves cross. A run whose contact lets yarns pass through
//! each other changes the certificate.
//!
//! Each closed Catmull-Rom curve (from [`Curve`] control points) is sampled into a closed polyline
//! (`SAMPLES_PER_SEGMENT` points per spline segment); the certificate holds the linking numbers of
//! these polylines. Two methods compute them, with the same answer:
//!
//! * **Crossings** (the default, [`projected_crossings`]). Project both polylines along a direction
//!   `d`. Every segment pair whose projections cross is a preimage of `±d` under the Gauss map
//!   `(s, t) ↦ (a(s) − b(t))/|a(s) − b(t)|`, counted with the sign of the map's Jacobian, which is the
//!   sign of `(r34 × r12)·r13` for segments `p1→p2` of `a` and `p3→p4` of `b` (`rij = pj − pi`). The
//!   linking number is the degree of that map, so the signed count of crossings where `b` lies on the
//!   `+d` side of `a` is `Lk`, and so is the count where it lies on the `−d` side. Both are integers by
//!   construction and both are computed: they must agree (a free check). The crossing segment pairs
//!   are found with a uniform grid over the overlap of the two projections, so a pair of loops costs
//!   about `O(n log n)` in their segment count instead of the `n²` of the integral.
//!
//!   Exactness. Every decision is a sign: four 2-D orientations (do the projections cross?) and one
//!   3-D triple product (which way?). The projected coordinates are rounded, so each orientation is
//!   accepted only when it exceeds a bound on its error that covers the rounding of the projection
//!   (`η = 4ε·max|p|₁` per coordinate) and of the arithmetic; the triple product is computed from the
//!   samples themselves and accepted beyond `16ε` times its permanent. With every sign certain, the
//!   count is the exact linking number of the sampled polylines. If any sign of a segment pair that
//!   may cross is uncertain (a vertex projecting onto a segment, parallel projections, curves that
//!   touch), the next of [`PROJECTIONS`] is tried; if all of them are uncertain, or the two counts
//!   disagree, the pair falls back to the direct sum below, with its integer check.
//!
//! * **Direct** ([`polyline_linking`], the oracle and the fallback). The Gauss integral over two closed
//!   polylines as a sum over all segment pairs of the exact solid-angle form of Klenin & Langowski
//!   (2000): for segments `p1→p2`, `p3→p4` the contribution is `Ω/4π` with
//!   `Ω = ±(asin(n1·n2) + asin(n2·n3) + asin(n3·n4) + asin(n4·n1))`, the `n` the unit normals of the
//!   four faces of the tetrahedron `p1 p2 p3 p4` seen from inside. The sum is rounded to the nearest
//!   integer; a sum farther than [`INTEGER_TOLERANCE`] from an integer means the curves (nearly)
//!   intersect and is an error, not a guess.
//!
//! Pairs of curves whose bounding boxes do not overlap are separated by a plane and have `Lk = 0`; a
//! sweep over the boxes sorted by their lower x skips them, so a scene of thousands of loops costs
//! only its overlapping pairs, which run in parallel.
//!
//! Certificate format ([`Certificate`]): the first line is the number of closed curves, then one line
//! `i,j,Lk` per pair with a non-zero linking number, `i < j` 0-based indices among the closed curves
//! (in input order), sorted.

use crate::math::V3;
use crate::spline;
use crate::state::Curve;
use rayon::prelude::*;
use std::collections::BTreeMap;
use std::fmt;
use std::path::Path;

type V = V3<f64>;

/// Polyline points per Catmull-Rom segment when a closed curve is sampled.
pub const SAMPLES_PER_SEGMENT: usize = 6;
/// Largest distance of a directly summed linking number from the nearest integer that is accepted.
pub const INTEGER_TOLERANCE: f64 = 0.05;
/// Projection directions the crossing count tries, in order, before a pair of loops falls back to
/// direct summation. Generic (no simple ratios between components), so that the axis-aligned and
/// symmetric geometry of generated cloth does not project degenerately; a second one is only needed
/// when a sign of the first is uncertain, which on real models is rare.
pub const PROJECTIONS: [[f64; 3]; 4] = [
    [0.321_1, 0.852_7, 0.412_1],
    [-0.735_1, 0.229_0, 0.638_3],
    [0.512_2, -0.371_9, 0.774_1],
    [0.189_3, 0.450_7, -0.872_4],
];

/// Why a linking number or certificate could not be computed.
#[derive(Debug, thiserror::Error)]
pub enum LinkError {
    #[error("closed curves {i} and {j}: Gauss integral {value} is not near an integer (the curves intersect or nearly touch)")]
    NotInteger { i: usize, j: usize, value: f64 },
    #[error("curve {curve}, control point {point} is not finite")]
    NotFinite { curve: usize, point: usize },
    #[error("curve {curve} is closed but has {points} control points (at least 3 needed)")]
    TooFewPoints { curve: usize, points: usize },
    #[error("certificate line {line}: {message}")]
    Parse { line: usize, message: String },
    #[error(transparent)]
    Bcc(#[from] crate::bcc::BccError),
}

/// How the certificate's linking numbers are computed (both give the same certificate).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Method {
    /// Signed crossings of a projection (module doc), near-linear per pair of loops.
    #[default]
    Crossings,
    /// The Gauss integral summed over every segment pair: quadratic, the test oracle.
    Direct,
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
    } else if segments_touch(p1, p2, p3, p4) {
        // Coplanar segments that meet: the integral is undefined there, and counting the pair
        // as 0 certified two identical or crossing coplanar rings as unlinked.
        return f64::NAN;
    } else {
        0.0
    };
    sign * omega / (4.0 * std::f64::consts::PI)
}

/// Whether segments `p1→p2` and `p3→p4` meet: their closest points lie within rounding
/// (`1e-12` of the largest coordinate) of each other.
fn segments_touch(p1: V, p2: V, p3: V, p4: V) -> bool {
    let (d1, d2, r) = (p2 - p1, p4 - p3, p1 - p3);
    let (a, e, f) = (d1.dot(d1), d2.dot(d2), d2.dot(r));
    let (mut sp, mut tq);
    if a == 0.0 && e == 0.0 {
        (sp, tq) = (0.0, 0.0);
    } else if a == 0.0 {
        sp = 0.0;
        tq = (f / e).clamp(0.0, 1.0);
    } else {
        let c = d1.dot(r);
        if e == 0.0 {
            tq = 0.0;
            sp = (-c / a).clamp(0.0, 1.0);
        } else {
            let b = d1.dot(d2);
            let denom = a * e - b * b;
            sp = if denom > 0.0 {
                ((b * f - c * e) / denom).clamp(0.0, 1.0)
            } else {
                0.0
            };
            tq = (b * sp + f) / e;
            if tq < 0.0 {
                tq = 0.0;
                sp = (-c / a).clamp(0.0, 1.0);
            } else if tq > 1.0 {
                tq = 1.0;
                sp = ((b - c) / a).clamp(0.0, 1.0);
            }
        }
    }
    let gap = (p1 + d1 * sp) - (p3 + d2 * tq);
    let scale = [p1, p2, p3, p4]
        .iter()
        .flat_map(|p| [p.x.abs(), p.y.abs(), p.z.abs()])
        .fold(1.0f64, f64::max);
    gap.norm() <= 1e-12 * scale
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

/// The signed crossings of one projection of two closed polylines ([`projected_crossings`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Crossings {
    /// Sum of the crossing signs where `b` lies on the `+d` side of `a` (`d` the projection axis).
    pub b_above: i64,
    /// The same where `b` lies on the `−d` side. Equal to `b_above`: both are the linking number.
    pub b_below: i64,
    /// Segment pairs whose projections cross.
    pub count: usize,
}

/// An orthonormal pair `e1`, `e2` with `e1 × e2` along `d`: the plane the curves are projected onto.
/// The projection `p ↦ (e1·p, e2·p)` is exactly a parallel projection along `e1 × e2` of the rounded
/// `e1`, `e2`, which is all the count needs.
fn projection_frame(d: V) -> (V, V) {
    let d = d.normalized();
    // Cross with the axis least aligned with d, so the product is well conditioned.
    let (ax, ay, az) = (d.x.abs(), d.y.abs(), d.z.abs());
    let axis = if ax <= ay && ax <= az {
        V::new(1.0, 0.0, 0.0)
    } else if ay <= az {
        V::new(0.0, 1.0, 0.0)
    } else {
        V::new(0.0, 0.0, 1.0)
    };
    let e1 = d.cross(axis).normalized();
    (e1, d.cross(e1))
}

/// Sign of the 2-D orientation of `c` against the line `a→b` (`+1` left, `−1` right), or `0` when
/// its magnitude does not exceed the bound on its error. The bound covers coordinates that are each
/// off by up to `eta` (the rounding of the projection) and the rounding of the arithmetic:
/// `3η(|u|₁+|v|₁) + 10η² + 8ε(|ux·vy| + |uy·vx|)` for `u = b − a`, `v = c − a`, about twice what a
/// first-order analysis gives.
#[inline]
fn orient(a: [f64; 2], b: [f64; 2], c: [f64; 2], eta: f64) -> i8 {
    let (ux, uy) = (b[0] - a[0], b[1] - a[1]);
    let (vx, vy) = (c[0] - a[0], c[1] - a[1]);
    let (l, r) = (ux * vy, uy * vx);
    let det = l - r;
    let bound = 3.0 * eta * (ux.abs() + uy.abs() + vx.abs() + vy.abs())
        + 10.0 * eta * eta
        + 8.0 * f64::EPSILON * (l.abs() + r.abs());
    if det > bound {
        1
    } else if det < -bound {
        -1
    } else {
        0
    }
}

/// Sign of `(r34 × r12)·r13` for the samples themselves (Klenin & Langowski's sign), or `0` when it
/// does not exceed `16ε` times its permanent (the sum of the magnitudes of its six products), about
/// twice its rounding error.
#[inline]
fn triple_sign(p1: V, p2: V, p3: V, p4: V) -> i8 {
    let (r12, r34, r13) = (p2 - p1, p4 - p3, p3 - p1);
    let det = r34.cross(r12).dot(r13);
    let perm = r13.x.abs() * ((r34.y * r12.z).abs() + (r34.z * r12.y).abs())
        + r13.y.abs() * ((r34.z * r12.x).abs() + (r34.x * r12.z).abs())
        + r13.z.abs() * ((r34.x * r12.y).abs() + (r34.y * r12.x).abs());
    let bound = 16.0 * f64::EPSILON * perm;
    if det > bound {
        1
    } else if det < -bound {
        -1
    } else {
        0
    }
}

/// Bounding rectangle `[xmin, xmax, ymin, ymax]`.
type Rect = [f64; 4];

fn overlaps(a: &Rect, b: &Rect) -> bool {
    a[0] <= b[1] && b[0] <= a[1] && a[2] <= b[3] && b[2] <= a[3]
}

/// Projected points and per-segment rectangles (grown by `eta`, so they hold the exact projection).
fn project(p: &[V], e1: V, e2: V, eta: f64) -> (Vec<[f64; 2]>, Vec<Rect>) {
    let pts: Vec<[f64; 2]> = p.iter().map(|q| [e1.dot(*q), e2.dot(*q)]).collect();
    let n = pts.len();
    let rects = (0..n)
        .map(|i| {
            let (s, t) = (pts[i], pts[(i + 1) % n]);
            [
                s[0].min(t[0]) - eta,
                s[0].max(t[0]) + eta,
                s[1].min(t[1]) - eta,
                s[1].max(t[1]) + eta,
            ]
        })
        .collect();
    (pts, rects)
}

/// Most grid cells along one side: keeps cell keys in 32 bits and bounds a cell's size from below.
const MAX_CELLS_PER_SIDE: f64 = (1u64 << 20) as f64;

/// The signed crossings of closed polylines `a` and `b` projected along `d` (module doc), or `None`
/// when a sign that decides a crossing is uncertain (see `orient`, `triple_sign`): then the
/// projection is not regular enough to trust and another direction must be used.
///
/// Only segments whose rectangles meet the overlap of the two projections can cross. Those of `b`
/// are binned into a uniform grid over that overlap, with cells about as large as a segment (grown
/// until the rectangles cover at most 8 cells a segment on average); each segment of `a` meets the
/// segments of `b` in the cells it covers, and a pair met in several cells is tested only in the cell
/// of the lower corner of the intersection of their rectangles.
pub fn projected_crossings(a: &[V], b: &[V], d: V) -> Option<Crossings> {
    let mut out = Crossings::default();
    if a.is_empty() || b.is_empty() {
        return Some(out);
    }
    let (e1, e2) = projection_frame(d);
    // Each projected coordinate is a 3-term dot product with |e_k| ≤ 1: its rounding error is below
    // 3u·|p|₁ (u the unit roundoff); eta allows 8u.
    let m1 = a
        .iter()
        .chain(b)
        .map(|p| p.x.abs() + p.y.abs() + p.z.abs())
        .fold(0.0, f64::max);
    if !m1.is_finite() {
        // Nothing about non-finite points is certain; the direct sum reports them as not an integer.
        return None;
    }
    let eta = 4.0 * f64::EPSILON * m1;
    let (pa, ra) = project(a, e1, e2, eta);
    let (pb, rb) = project(b, e1, e2, eta);
    let union = |rs: &[Rect]| {
        rs.iter().fold(
            [
                f64::INFINITY,
                f64::NEG_INFINITY,
                f64::INFINITY,
                f64::NEG_INFINITY,
            ],
            |u, r| {
                [
                    u[0].min(r[0]),
                    u[1].max(r[1]),
                    u[2].min(r[2]),
                    u[3].max(r[3]),
                ]
            },
        )
    };
    let (ua, ub) = (union(&ra), union(&rb));
    let area = [
        ua[0].max(ub[0]),
        ua[1].min(ub[1]),
        ua[2].max(ub[2]),
        ua[3].min(ub[3]),
    ];
    if !(area[0] <= area[1] && area[2] <= area[3]) {
        return Some(out);
    }
    let near = |rs: &[Rect]| -> Vec<u32> {
        (0..rs.len() as u32)
            .filter(|&i| overlaps(&rs[i as usize], &area))
            .collect()
    };
    let (ca, cb) = (near(&ra), near(&rb));
    if ca.is_empty() || cb.is_empty() {
        return Some(out);
    }

    // Cell size: the mean segment extent, at least 2^-20 of the area's side.
    let (w, h) = (area[1] - area[0], area[3] - area[2]);
    let mean = ca
        .iter()
        .map(|&i| &ra[i as usize])
        .chain(cb.iter().map(|&i| &rb[i as usize]))
        .map(|r| (r[1] - r[0]).max(r[3] - r[2]))
        .sum::<f64>()
        / (ca.len() + cb.len()) as f64;
    let mut cell = mean.max(w.max(h) / MAX_CELLS_PER_SIDE);
    if !(cell > 0.0 && cell.is_finite()) {
        return None;
    }
    let (mut nx, mut ny);
    let span = |r: &Rect, cell: f64, nx: u32, ny: u32| {
        let c =
            |x: f64, lo: f64, n: u32| ((x - lo) / cell).floor().clamp(0.0, (n - 1) as f64) as u32;
        [
            c(r[0], area[0], nx),
            c(r[1], area[0], nx),
            c(r[2], area[2], ny),
            c(r[3], area[2], ny),
        ]
    };
    let budget = 8 * (ca.len() + cb.len()) + 64;
    loop {
        nx = ((w / cell).floor() as u32 + 1).max(1);
        ny = ((h / cell).floor() as u32 + 1).max(1);
        let covered: usize = ca
            .iter()
            .map(|&i| &ra[i as usize])
            .chain(cb.iter().map(|&i| &rb[i as usize]))
            .map(|r| {
                let s = span(r, cell, nx, ny);
                (s[1] - s[0] + 1) as usize * (s[3] - s[2] + 1) as usize
            })
            .sum();
        if covered <= budget {
            break;
        }
        cell *= 2.0;
    }
    let key = |x: u32, y: u32| ((x as u64) << 32) | y as u64;
    let mut grid: Vec<(u64, u32)> = Vec::with_capacity(2 * cb.len());
    for &t in &cb {
        let s = span(&rb[t as usize], cell, nx, ny);
        for x in s[0]..=s[1] {
            for y in s[2]..=s[3] {
                grid.push((key(x, y), t));
            }
        }
    }
    grid.sort_unstable();

    let (na, nb) = (a.len(), b.len());
    for &s in &ca {
        let (s, rs) = (s as usize, &ra[s as usize]);
        let sp = span(rs, cell, nx, ny);
        let (s0, s1) = (pa[s], pa[(s + 1) % na]);
        for x in sp[0]..=sp[1] {
            for y in sp[2]..=sp[3] {
                let k = key(x, y);
                let first = grid.partition_point(|e| e.0 < k);
                for &(_, t) in grid[first..].iter().take_while(|e| e.0 == k) {
                    let (t, rt) = (t as usize, &rb[t as usize]);
                    if !overlaps(rs, rt) {
                        continue;
                    }
                    let corner = [rs[0].max(rt[0]), 0.0, rs[2].max(rt[2]), 0.0];
                    let c = span(&corner, cell, nx, ny);
                    if c[0] != x || c[2] != y {
                        continue;
                    }
                    let (t0, t1) = (pb[t], pb[(t + 1) % nb]);
                    // Do the projections cross? Decided as soon as one segment lies strictly on one
                    // side of the other's line; uncertain signs only matter if they do not.
                    let o3 = orient(s0, s1, t0, eta);
                    let o4 = orient(s0, s1, t1, eta);
                    if o3 == o4 && o3 != 0 {
                        continue;
                    }
                    let o1 = orient(t0, t1, s0, eta);
                    let o2 = orient(t0, t1, s1, eta);
                    if o1 == o2 && o1 != 0 {
                        continue;
                    }
                    if o1 == 0 || o2 == 0 || o3 == 0 || o4 == 0 {
                        return None;
                    }
                    // A proper crossing: with p on a's segment and q on b's over the crossing point,
                    // q − p = h·d and (r34 × r12)·r13 = h·(r34 × r12)·d, where (r34 × r12)·d is the
                    // 2-D cross product of the projected directions, whose sign is o3's.
                    let sign = triple_sign(a[s], a[(s + 1) % na], b[t], b[(t + 1) % nb]);
                    if sign == 0 {
                        return None;
                    }
                    out.count += 1;
                    if sign == o3 {
                        out.b_above += sign as i64;
                    } else {
                        out.b_below += sign as i64;
                    }
                }
            }
        }
    }
    Some(out)
}

/// The linking number of two closed polylines: the crossing count of the first of [`PROJECTIONS`]
/// whose signs are all certain and whose two counts agree, else the direct sum, checked to be near
/// an integer. `i`, `j` only name the curves in an error.
pub fn polyline_linking_number(a: &[V], b: &[V], i: usize, j: usize) -> Result<i64, LinkError> {
    for d in PROJECTIONS {
        if let Some(c) = projected_crossings(a, b, V::new(d[0], d[1], d[2])) {
            if c.b_above == c.b_below {
                return Ok(c.b_above);
            }
        }
    }
    round_checked(polyline_linking(a, b), i, j)
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

/// The linking number of two closed curves (Catmull-Rom through their control points) by `method`.
/// `i`, `j` only name the curves in an error.
pub fn linking_number(
    a: &Curve,
    b: &Curve,
    method: Method,
    i: usize,
    j: usize,
) -> Result<i64, LinkError> {
    let pa = sample_closed(&a.points, SAMPLES_PER_SEGMENT);
    let pb = sample_closed(&b.points, SAMPLES_PER_SEGMENT);
    pair_linking(&pa, &pb, method, i, j)
}

fn pair_linking(a: &[V], b: &[V], method: Method, i: usize, j: usize) -> Result<i64, LinkError> {
    match method {
        Method::Crossings => polyline_linking_number(a, b, i, j),
        Method::Direct => round_checked(polyline_linking(a, b), i, j),
    }
}

fn round_checked(value: f64, i: usize, j: usize) -> Result<i64, LinkError> {
    let r = value.round();
    if !value.is_finite() || (value - r).abs() > INTEGER_TOLERANCE {
        return Err(LinkError::NotInteger { i, j, value });
    }
    Ok(r as i64)
}

/// A linking certificate: how many closed curves, and the linking number of every pair `(i, j)`,
/// `i < j`, whose linking number is not zero. Its text form (`Display`, [`Certificate::parse`]) is the
/// format of the module doc.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Certificate {
    pub loops: usize,
    pub links: BTreeMap<(usize, usize), i64>,
}

/// A loop pair whose linking number differs between two certificates.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Change {
    pub i: usize,
    pub j: usize,
    pub old: i64,
    pub new: i64,
}

impl fmt::Display for Change {
    /// `i,j,old,new`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{},{},{},{}", self.i, self.j, self.old, self.new)
    }
}

impl fmt::Display for Certificate {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "{}", self.loops)?;
        for (&(i, j), lk) in &self.links {
            writeln!(f, "{i},{j},{lk}")?;
        }
        Ok(())
    }
}

impl Certificate {
    /// Reads the text form. Strict: a count line, then `i,j,Lk` lines with `i < j < count`, `Lk ≠ 0`,
    /// each pair once (in any order); blank lines are ignored.
    pub fn parse(text: &str) -> Result<Self, LinkError> {
        let mut lines = text
            .lines()
            .enumerate()
            .map(|(k, l)| (k + 1, l.trim()))
            .filter(|(_, l)| !l.is_empty());
        let err = |line: usize, message: String| LinkError::Parse { line, message };
        let (line, first) = lines
            .next()
            .ok_or_else(|| err(1, "empty: expected the number of closed curves".into()))?;
        let loops: usize = first.parse().map_err(|_| {
            err(
                line,
                format!("expected the number of closed curves, got {first:?}"),
            )
        })?;
        let mut links = BTreeMap::new();
        for (line, l) in lines {
            let f: Vec<&str> = l.split(',').map(str::trim).collect();
            let bad = || err(line, format!("expected i,j,Lk, got {l:?}"));
            if f.len() != 3 {
                return Err(bad());
            }
            let i: usize = f[0].parse().map_err(|_| bad())?;
            let j: usize = f[1].parse().map_err(|_| bad())?;
            let lk: i64 = f[2].parse().map_err(|_| bad())?;
            if !(i < j && j < loops) {
                return Err(err(
                    line,
                    format!("pair {i},{j} is not i < j < {loops} (the number of closed curves)"),
                ));
            }
            if lk == 0 {
                return Err(err(line, format!("pair {i},{j} has linking number 0")));
            }
            if links.insert((i, j), lk).is_some() {
                return Err(err(line, format!("pair {i},{j} listed twice")));
            }
        }
        Ok(Certificate { loops, links })
    }

    /// The pairs whose linking number differs from `self` in `new` (a pair missing from one is 0
    /// there), sorted by pair. The loop counts are not compared here.
    pub fn changes_to(&self, new: &Certificate) -> Vec<Change> {
        let mut keys: Vec<(usize, usize)> =
            self.links.keys().chain(new.links.keys()).copied().collect();
        keys.sort_unstable();
        keys.dedup();
        keys.into_iter()
            .filter_map(|(i, j)| {
                let old = self.links.get(&(i, j)).copied().unwrap_or(0);
                let new = new.links.get(&(i, j)).copied().unwrap_or(0);
                (old != new).then_some(Change { i, j, old, new })
            })
            .collect()
    }
}

/// The linking certificate of a scene by `method`: the closed curves among `curves` (open ones are
/// ignored) and the linking number of every pair whose bounding boxes overlap.
pub fn certificate_with(curves: &[Curve], method: Method) -> Result<Certificate, LinkError> {
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
    // link and only pairs whose boxes overlap are computed.
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
        .map(|&(a, b)| pair_linking(&polys[a].0, &polys[b].0, method, a, b))
        .collect();
    let mut cert = Certificate {
        loops: closed.len(),
        links: BTreeMap::new(),
    };
    for (&pair, lk) in pairs.iter().zip(lks) {
        let lk = lk?;
        if lk != 0 {
            cert.links.insert(pair, lk);
        }
    }
    Ok(cert)
}

/// The linking certificate of a scene's closed curves, as text, by crossings ([`certificate_with`]).
pub fn certificate(curves: &[Curve]) -> Result<String, LinkError> {
    Ok(certificate_with(curves, Method::Crossings)?.to_string())
}

/// `yarnsim links FILE.bcc`: the certificate of the curves in a BCC file.
pub fn links_command(path: &Path, method: Method) -> Result<Certificate, LinkError> {
    let curves = crate::bcc::read(path)?;
    certificate_with(&curves, method)
}
