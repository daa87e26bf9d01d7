//! Fits for imported (BCC) models: the yarn radius a model's own geometry implies.
//!
//! A published yarn-level model comes without a yarn radius, or in units of its own, and its yarns lie
//! as close as the radius its author used. Simulated at another radius it either starts with nearly
//! every quadrature point inside another yarn's contact range (`d < 2r`), which the penalty force
//! resolves by blowing the model apart, or with gaps between yarns that should touch.
//!
//! [`fit_radius`] samples the curves (Catmull-Rom control points, as the simulation will use them) at
//! the scene's quadrature points (`b` per segment at `t = (k + ½)/b`, as `spline::quad_param`) and
//! finds, for every quadrature point, the distance to the nearest quadrature point of *another strand*:
//! of another yarn, or of the same yarn but farther along it than [`SAME_YARN_ARC_RATIO`] times their
//! distance in space. (Along one smooth strand, neighbours are about as far apart along the yarn as in
//! space; a yarn that comes back past itself, as a knit loop's legs do, is much farther along than
//! across. A tight U-turn of half a circle has ratio π/2, so a ratio of 2 leaves a yarn's own bends
//! out.) Where yarns touch, that distance is the contact distance `2r`; elsewhere it is larger. The
//! fitted radius is half of the [`FIT_PERCENTILE`]-th percentile of these distances over all
//! quadrature points: a small percentile, so that the touching places set it, but not the minimum, so
//! that a few places where the model's yarns interpenetrate do not.
//!
//! The search uses a uniform grid of cell width `R` (twice the mean segment length to start with;
//! doubled up to [`MAX_DOUBLINGS`] times while fewer than half of the points find a neighbour within
//! `R`); a point with no other strand within `R` counts as infinitely far.

use crate::spline;
use crate::state::Curve;
use rayon::prelude::*;

/// A quadrature point of another strand of the same yarn must be farther along the yarn than this
/// times its distance in space (module doc).
pub const SAME_YARN_ARC_RATIO: f64 = 2.0;

/// The percentile of nearest-strand distances whose half is the fitted radius (module doc).
pub const FIT_PERCENTILE: f64 = 0.02;

/// Most doublings of the search radius.
pub const MAX_DOUBLINGS: u32 = 6;

/// Why a radius could not be fitted.
#[derive(Debug, thiserror::Error, PartialEq)]
pub enum FitError {
    #[error("the model has no spline segments to sample")]
    Empty,
    #[error(
        "no two strands of the model come within {searched:.4e} (units of the model) of each other \
         at more than {found} of its {points} quadrature points, so there is no spacing to fit a \
         radius to"
    )]
    NoNeighbours {
        points: usize,
        found: usize,
        searched: f64,
    },
    #[error("the fitted radius is not a positive finite number: {0}")]
    Degenerate(f64),
}

/// The radius fitted to a model and the distribution it came from.
#[derive(Clone, Debug, PartialEq)]
pub struct RadiusFit {
    /// The fitted yarn radius: half the [`FIT_PERCENTILE`]-th percentile nearest-strand distance.
    pub radius: f64,
    /// Quadrature points sampled.
    pub points: usize,
    /// Points with another strand within the search radius.
    pub with_neighbour: usize,
    /// The search radius finally used.
    pub search_radius: f64,
    /// Nearest-strand distance of every quadrature point, sorted (infinite: none within the search
    /// radius).
    pub distances: Vec<f64>,
}

impl RadiusFit {
    /// The `p`-th quantile (`0 ≤ p ≤ 1`) of the nearest-strand distances (nearest rank).
    pub fn quantile(&self, p: f64) -> f64 {
        let n = self.distances.len();
        let i = ((p * n as f64).ceil() as usize).clamp(1, n) - 1;
        self.distances[i]
    }

    /// Fraction of quadrature points whose nearest other strand is closer than `2 r`: the points
    /// that start in contact (overlapping when clearly closer) at radius `r`.
    pub fn fraction_closer_than_2r(&self, r: f64) -> f64 {
        let k = self.distances.partition_point(|&d| d < 2.0 * r);
        k as f64 / self.distances.len() as f64
    }
}

/// Quadrature points of the curves with their yarn and arc position.
struct Samples {
    pos: Vec<[f64; 3]>,
    yarn: Vec<u32>,
    /// Arc length from the yarn's first quadrature point (sum of chords between quadrature points).
    arc: Vec<f64>,
    /// Per yarn: its closed length (closed yarns, chords around), or infinity (open yarns).
    period: Vec<f64>,
    /// Mean segment length (chord sum per segment).
    mean_segment: f64,
}

fn sample(curves: &[Curve], b: u32) -> Samples {
    let mut s = Samples {
        pos: Vec::new(),
        yarn: Vec::new(),
        arc: Vec::new(),
        period: Vec::with_capacity(curves.len()),
        mean_segment: 0.0,
    };
    let mut total = 0.0;
    let mut segments = 0usize;
    for (yi, c) in curves.iter().enumerate() {
        let n = c.points.len();
        let segs: Vec<usize> = if c.closed {
            (0..n).collect()
        } else if n >= 4 {
            (1..=n - 3).collect()
        } else {
            Vec::new()
        };
        let first = s.pos.len();
        let mut arc = 0.0;
        for &i in &segs {
            let q: [crate::math::V3<f64>; 4] = std::array::from_fn(|j| {
                crate::math::V3::<f64>::from3(c.points[(i + j + n - 1) % n])
            });
            for k in 0..b {
                let y = spline::eval(&q, spline::quad_param::<f64>(k, b));
                let p = [y.get(0), y.get(1), y.get(2)];
                if let Some(prev) = s.pos.last().filter(|_| s.pos.len() > first) {
                    arc += dist(*prev, p);
                }
                s.pos.push(p);
                s.yarn.push(yi as u32);
                s.arc.push(arc);
            }
        }
        let closing = if c.closed && s.pos.len() > first {
            dist(s.pos[s.pos.len() - 1], s.pos[first])
        } else {
            0.0
        };
        let length = arc + closing;
        s.period.push(if c.closed { length } else { f64::INFINITY });
        total += length;
        segments += segs.len();
    }
    s.mean_segment = if segments > 0 {
        total / segments as f64
    } else {
        0.0
    };
    s
}

fn dist(a: [f64; 3], b: [f64; 3]) -> f64 {
    ((a[0] - b[0]).powi(2) + (a[1] - b[1]).powi(2) + (a[2] - b[2]).powi(2)).sqrt()
}

/// Nearest-strand distance of every sample within `r` (infinite beyond), by a uniform grid of cell `r`.
fn nearest_strand(s: &Samples, r: f64) -> Vec<f64> {
    let cell = |p: [f64; 3]| -> [i64; 3] { p.map(|x| (x / r).floor() as i64) };
    let mut order: Vec<([i64; 3], u32)> = s
        .pos
        .iter()
        .enumerate()
        .map(|(i, &p)| (cell(p), i as u32))
        .collect();
    order.par_sort_unstable();
    let keys: Vec<[i64; 3]> = order.iter().map(|o| o.0).collect();
    (0..s.pos.len())
        .into_par_iter()
        .map(|i| {
            let p = s.pos[i];
            let c = cell(p);
            let mut best = f64::INFINITY;
            for dx in -1..=1 {
                for dy in -1..=1 {
                    for dz in -1..=1 {
                        let key = [c[0] + dx, c[1] + dy, c[2] + dz];
                        let lo = keys.partition_point(|k| *k < key);
                        let hi = lo + keys[lo..].partition_point(|k| *k <= key);
                        for &(_, j) in &order[lo..hi] {
                            let j = j as usize;
                            if j == i {
                                continue;
                            }
                            let d = dist(p, s.pos[j]);
                            if d >= best || d > r {
                                continue;
                            }
                            if s.yarn[i] == s.yarn[j] {
                                let period = s.period[s.yarn[i] as usize];
                                let along = (s.arc[i] - s.arc[j]).abs();
                                let along = along.min(period - along);
                                if along <= SAME_YARN_ARC_RATIO * d {
                                    continue;
                                }
                            }
                            best = d;
                        }
                    }
                }
            }
            best
        })
        .collect()
}

/// Fits the yarn radius to the curves, sampled at `b` quadrature points per segment (module doc).
pub fn fit_radius(curves: &[Curve], b: u32) -> Result<RadiusFit, FitError> {
    let s = sample(curves, b.max(1));
    let n = s.pos.len();
    if n < 2 || !(s.mean_segment > 0.0 && s.mean_segment.is_finite()) {
        return Err(FitError::Empty);
    }
    let mut r = 2.0 * s.mean_segment;
    let mut doublings = 0;
    loop {
        let mut d = nearest_strand(&s, r);
        let found = d.iter().filter(|x| x.is_finite()).count();
        // Enough points for the percentile to be a real distance, and most of them.
        let enough = found * 2 >= n;
        if enough || doublings == MAX_DOUBLINGS {
            let min_found = ((FIT_PERCENTILE * n as f64).ceil() as usize).max(1);
            if found < min_found {
                return Err(FitError::NoNeighbours {
                    points: n,
                    found,
                    searched: r,
                });
            }
            d.par_sort_unstable_by(|a, b| a.total_cmp(b));
            let mut fit = RadiusFit {
                radius: 0.0,
                points: n,
                with_neighbour: found,
                search_radius: r,
                distances: d,
            };
            fit.radius = 0.5 * fit.quantile(FIT_PERCENTILE);
            if !(fit.radius.is_finite() && fit.radius > 0.0) {
                return Err(FitError::Degenerate(fit.radius));
            }
            return Ok(fit);
        }
        r *= 2.0;
        doublings += 1;
    }
}
