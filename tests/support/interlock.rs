//! The interlock check shared by the knit generator tests (tests/knit.rs) and the hanging-cloth
//! simulations (tests/contact.rs): for every loop with a loop above it, the Gauss linking numbers that
//! say whether the upper loop's legs pass through the lower loop.
//!
//! Which control points make up each ring is decided once, from a knit as generated
//! ([`interlock_runs`]); the linking numbers can then be evaluated on any later positions of the same
//! control points ([`interlock_numbers_of`]), e.g. after a simulation has deformed the cloth. Linking
//! numbers of closed curves only change when the curves pass through each other, so a loop that stays
//! interlocked keeps its numbers.
#![allow(dead_code)]

use yarnsim::knit::Knit;
use yarnsim::links::polyline_linking;
use yarnsim::math::V3;
use yarnsim::scene::Pattern;
use yarnsim::spline;
use yarnsim::state::Curve;

/// Spline samples per segment of the rings.
const SAMPLES: usize = 12;

/// Spline samples of the segments starting at control points `from..to` of `curve` (indices mod n),
/// ending at point `to`.
pub fn spline_run(curve: &Curve, from: usize, to: usize, per_segment: usize) -> Vec<V3<f64>> {
    let n = curve.points.len();
    let q = |i: usize| V3::<f64>::from3(curve.points[i % n]);
    let mut out = Vec::new();
    for i in from..to {
        let cp = [q(i + n - 1), q(i), q(i + 1), q(i + 2)];
        for k in 0..per_segment {
            out.push(spline::eval(&cp, k as f64 / per_segment as f64));
        }
    }
    out.push(q(to));
    out
}

/// The control points of one (lower loop, upper loop) pair, as curve and point indices.
#[derive(Clone, Copy, Debug)]
pub struct LoopPair {
    /// Lower loop: curve, first and last control point of its run (sinker to sinker), head top.
    pub lower: (usize, usize, usize),
    pub lower_top: usize,
    /// Whether the lower run is reversed to orient ring A left to right.
    pub reverse: bool,
    /// Upper loop: curve, first point, head top, last point.
    pub upper: (usize, usize, usize, usize),
}

/// The rings of the interlock check of a knit (pattern, wales × courses) as generated, one
/// [`LoopPair`] per loop with a loop above it, course by course (index `c * wales + w` for the lower
/// loop (w, c)). See [`interlock_numbers`] for the construction.
pub fn interlock_runs(k: &Knit, pattern: Pattern, wales: u32, courses: u32) -> Vec<LoopPair> {
    let tube = pattern == Pattern::Tube;
    let mut own: Vec<Vec<(usize, usize)>> = vec![Vec::new(); (wales * courses) as usize];
    for (ci, pl) in k.point_loop.iter().enumerate() {
        for (pi, &[w, c]) in pl.iter().enumerate() {
            own[(c * wales + w) as usize].push((ci, pi));
        }
    }
    let point = |(c, p): (usize, usize)| V3::<f64>::from3(k.curves[c].points[p]);
    // A flat swatch also assigns its edge turns and yarn-end handles to edge loops; they lie more than
    // half a wale sideways from the loop's median control point and are left out.
    let median_x = |l: usize| -> f64 {
        let mut xs: Vec<f64> = own[l].iter().map(|&q| point(q).x).collect();
        xs.sort_by(f64::total_cmp);
        xs[xs.len() / 2]
    };
    let pitch = if tube {
        f64::MAX
    } else {
        (median_x(1) - median_x(0)).abs()
    };
    // (curve, first, head top, last): the loop's run from the sinker before it to the sinker after
    // it, and its head top (highest control point).
    let run = |l: usize| -> (usize, usize, usize, usize) {
        // The head top: the highest point near the loop's median (the turn and handles are a good
        // half wale away from it); then keep what lies within about half a wale of the head top.
        let near = |q: (usize, usize), x: f64, f: f64| tube || (point(q).x - x).abs() <= f * pitch;
        let med = if tube { 0.0 } else { median_x(l) };
        let head = own[l]
            .iter()
            .copied()
            .filter(|&q| near(q, med, 0.4))
            .max_by(|a, b| point(*a).y.total_cmp(&point(*b).y))
            .unwrap();
        let mid = point(head).x;
        let idx: Vec<(usize, usize)> = own[l]
            .iter()
            .copied()
            .filter(|&q| near(q, mid, 0.55))
            .collect();
        let ci = idx[0].0;
        let top = if tube {
            *idx.iter()
                .max_by(|a, b| point(**a).y.total_cmp(&point(**b).y))
                .unwrap()
        } else {
            head
        };
        let (a, b) = (
            idx.iter().map(|q| q.1).min().unwrap(),
            idx.iter().map(|q| q.1).max().unwrap(),
        );
        assert_eq!(
            b - a + 1,
            idx.len(),
            "a loop's points are contiguous along its yarn"
        );
        let y = |i: usize| point((ci, i)).y;
        // Extend by one point on the side whose sinker belongs to the neighbouring loop (an edge loop
        // owns both of its sinkers, which lie at the same height).
        let (a, b) = if (y(a) - y(b)).abs() < 1e-6 {
            (a, b)
        } else if y(a) < y(b) {
            (a, b + 1)
        } else {
            (a - 1, b)
        };
        (ci, a, top.1, b)
    };
    let mut out = Vec::new();
    for c in 0..courses - 1 {
        for w in 0..wales {
            let lower = (c * wales + w) as usize;
            let upper = lower + wales as usize;
            let (ci, first, lt, last) = run(lower);
            let mut pair = LoopPair {
                lower: (ci, first, last),
                lower_top: lt,
                reverse: false,
                upper: run(upper),
            };
            // Orient A left to right whichever way its course runs.
            let ring = lower_ring(&k.curves, tube, &pair);
            pair.reverse = ring[0].x > ring[ring.len() - 1].x;
            out.push(pair);
        }
    }
    out
}

/// Unrolled coordinates of a point relative to the angle of a reference point (tubes: arc length along
/// the mean circumference of curve 0, height, radial offset); the identity for flat cloth.
fn unroll(curves: &[Curve], tube: bool) -> impl Fn(V3<f64>, V3<f64>) -> V3<f64> {
    let r0 = if tube {
        let pts = &curves[0].points;
        pts.iter()
            .map(|p| (p[0] as f64).hypot(p[2] as f64))
            .sum::<f64>()
            / pts.len() as f64
    } else {
        0.0
    };
    move |p: V3<f64>, reference: V3<f64>| -> V3<f64> {
        if tube {
            let th = p.x.atan2(p.z) - reference.x.atan2(reference.z);
            let th = (th + std::f64::consts::PI).rem_euclid(std::f64::consts::TAU)
                - std::f64::consts::PI;
            V3::new(r0 * th, p.y, p.x.hypot(p.z) - r0)
        } else {
            p
        }
    }
}

/// Ring A of `pair` in unrolled coordinates, not yet oriented.
fn lower_ring(curves: &[Curve], tube: bool, pair: &LoopPair) -> Vec<V3<f64>> {
    let (ci, first, last) = pair.lower;
    let reference = V3::from3(curves[ci].points[pair.lower_top]);
    let u = unroll(curves, tube);
    spline_run(&curves[ci], first, last, SAMPLES)
        .into_iter()
        .map(|p| u(p, reference))
        .collect()
}

/// Rings A, B_left, B_right of `pair` (see [`interlock_numbers`]) with the control points at `curves`,
/// in unrolled coordinates for a tube. A is closed by its last point joining its first (the chord);
/// each B ends with its three closing points (above its head top, above the far point, and the far
/// point level with its sinker).
pub fn interlock_rings(curves: &[Curve], pattern: Pattern, pair: &LoopPair) -> [Vec<V3<f64>>; 3] {
    let tube = pattern == Pattern::Tube;
    let u = unroll(curves, tube);
    let mut ring = lower_ring(curves, tube, pair);
    if pair.reverse {
        ring.reverse();
    }
    let (ci, _, _) = pair.lower;
    let reference = V3::from3(curves[ci].points[pair.lower_top]);
    let (cu, uf, ut, ul) = pair.upper;
    // "Up": from the lower loop's head top to the upper loop's (the +y axis of a knit as
    // generated, and still the way up the wale where the cloth has since bent or curled).
    let up = {
        let d = u(V3::from3(curves[cu].points[ut]), reference)
            - u(V3::from3(curves[ci].points[pair.lower_top]), reference);
        d * (1.0 / d.norm())
    };
    let top = ring.iter().map(|p| p.dot(up)).fold(f64::MIN, f64::max) + 50.0;
    let lift = |p: V3<f64>| p + up * (top - p.dot(up));
    // Far out level with a sinker, on its side away from A: the sinker of a hanging cloth can sag
    // below the head of the loop under it (at a side edge the head then lies straight above it), so
    // the way up from the sinker starts out sideways.
    let centre = ring.iter().fold(V3::zero(), |a, &p| a + p) * (1.0 / ring.len() as f64);
    let far_side = |s: V3<f64>| {
        let away = s - centre;
        let away = away - up * away.dot(up);
        s + away * (50.0 / away.norm())
    };
    let half = |from: usize, to: usize, reverse: bool| {
        let mut h: Vec<V3<f64>> = spline_run(&curves[cu], from, to, SAMPLES)
            .into_iter()
            .map(|p| u(p, reference))
            .collect();
        if reverse {
            h.reverse();
        }
        // h runs sinker → head top; close over the top: up from the head top, across, down far to
        // the side of A, and level to the sinker.
        let (s, t) = (h[0], *h.last().unwrap());
        let side = far_side(s);
        h.push(lift(t));
        h.push(lift(side));
        h.push(side);
        h
    };
    let a = half(uf, ut, false);
    let b = half(ut, ul, true);
    [ring, a, b]
}

/// The linking numbers (A, B_left), (A, B_right) of every pair of `pairs` (from [`interlock_runs`]),
/// with the control points at `curves` (the knit's curves, or later positions of the same points).
pub fn interlock_numbers_of(
    curves: &[Curve],
    pattern: Pattern,
    pairs: &[LoopPair],
) -> Vec<(f64, f64)> {
    pairs
        .iter()
        .map(|pair| {
            let [ring, a, b] = interlock_rings(curves, pattern, pair);
            (polyline_linking(&ring, &a), polyline_linking(&ring, &b))
        })
        .collect()
}

/// The interlock check. For every loop with a loop above it:
/// - ring A: the lower loop from the sinker before it to the sinker after it along the yarn, closed by
///   the straight chord between the two sinkers;
/// - rings B_left, B_right: the upper loop's two halves (sinker → head top, head top → sinker), each
///   closed over the top of the fabric: straight up from the head top to far above, across to above
///   a point far out to the side of the sinker (away from A), down to that point, and level to the
///   sinker — a path that stays clear of A. "Up" is the direction from the lower loop's head top to
///   the upper one's (+y for a knit as generated).
///
/// Returns the linking numbers (A, B_left), (A, B_right), both halves oriented sinker → head top. In
/// real knit the head of the lower loop passes in front of the upper loop's sinker part and behind
/// its leg (it wraps around the leg), so each half links A once, both in the same sense (both legs
/// come through the lower loop the same way: back to front for a knit stitch, front to back for a
/// purl). Loops that are merely stacked, or that lie in front of the lower loop without being pulled
/// through it, link it zero times.
///
/// Tubes are first unrolled about their axis (arc length along the circumference, height, radial
/// offset), which turns them into the flat case.
pub fn interlock_numbers(k: &Knit, pattern: Pattern, wales: u32, courses: u32) -> Vec<(f64, f64)> {
    interlock_numbers_of(
        &k.curves,
        pattern,
        &interlock_runs(k, pattern, wales, courses),
    )
}
