//! Stage `aabb_raster_movement` of the scheduler (DESIGN §5.1), one task per segment: from the control
//! points `pos` and the two previous steps' `prev1`, `prev2`, the box of grid cells that each
//! segment's exact AABB padded by `r` covers (`cells`; in `hi[3]`, where the box padded by
//! [`super::CELL_MARGIN`] more would reach one cell further, for `segment_monitor`, which decides
//! the box the segment keeps), and per-axis intervals of its movement over the
//! last step (`mv1`, field `Σ_k B_k(t)(q − q⁻¹)_k`) and of its change of movement (`mv2`, field
//! `Σ_k B_k(t)(q − 2q⁻¹ + q⁻²)_k`) over `t ∈ [0, 1]`. Also the movement since a bin's position snapshot
//! ([`movement_of`]), which the examination reads.

// Negated comparisons (`!(x > 0)`) are deliberate: they also reject NaN. Index loops mirror the
// element-wise kernels.
#![allow(clippy::neg_cmp_op_on_partial_ord, clippy::needless_range_loop)]

use super::{CellBox, Interval, CELL_MARGIN, MAX_CELLS_PER_SEGMENT};
use crate::contact::grid::PAD_FACTOR;
use crate::layout::{SchedCounters, SchedUniform, ERROR_GRID_RANGE, ERROR_NAN_POSITION};
use crate::math::V3;
use crate::spline::segment_aabb;
use crate::state::Segment;
use rayon::prelude::*;

/// Cells on either side of 0 that a cell coordinate may reach (beyond: `ERROR_GRID_RANGE`).
pub const CELL_RANGE: i64 = 1 << 30;

/// What one segment of `aabb_raster_movement` raises: `(bad point, bad segment)`, `u32::MAX` for
/// none.
type RasterError = (u32, u32);

/// One segment of `aabb_raster_movement`: the box of grid cells that cover its exact AABB padded by
/// `r·PAD_FACTOR`, with the margin bits ([`super::CELL_MARGIN_BITS`]) of the box padded by
/// `r·PAD_FACTOR + min(r·CELL_MARGIN, γ/2)`, which the cell count limit applies to (cell width
/// `γ`, coordinates measured from the integer cell `anchor` for precision and then made absolute, `⌊x/γ⌋`, so a cell keeps its identity when the anchor moves). An invalid
/// box (`lo[3] = 0`) and an error when a control point is not finite or the box is too large.
#[inline]
fn raster_segment(
    s: u32,
    seg: &Segment,
    pos: &[[f32; 4]],
    sched: &SchedUniform,
) -> (CellBox, RasterError) {
    let invalid = CellBox::default();
    let q = seg.cp.map(|i| V3::<f32>::from4(pos[i as usize]));
    // (min/max would silently skip a NaN, so test the points themselves.) The lowest bad point.
    let mut bad = u32::MAX;
    for k in 0..4 {
        if !q[k].is_finite() {
            bad = bad.min(seg.cp[k]);
        }
    }
    if bad != u32::MAX {
        return (invalid, (bad, u32::MAX));
    }
    let (lo, hi) = segment_aabb(&q);
    if !(lo.is_finite() && hi.is_finite()) {
        return (invalid, (seg.cp[1], u32::MAX));
    }
    // A hair more than r, so rounding cannot separate the boxes of a pair at exactly 2r.
    let pad = sched.radius * PAD_FACTOR;
    // The margin of a box the segment takes anew (segment_monitor), at most half a cell.
    let margin = (sched.radius * CELL_MARGIN).min(0.5 * sched.cell);
    let lo_m = lo - V3::splat(pad + margin);
    let hi_m = hi + V3::splat(pad + margin);
    let lo = lo - V3::splat(pad);
    let hi = hi + V3::splat(pad);
    let mut cb = CellBox {
        lo: [0, 0, 0, 1],
        hi: [0; 4],
    };
    let mut count = 1i64;
    for a in 0..3 {
        let origin = sched.anchor[a] as f32 * sched.cell;
        let c0 = floor_i64((lo.get(a) - origin) * sched.inv_cell);
        let c1 = floor_i64((hi.get(a) - origin) * sched.inv_cell);
        // (At most one cell further: the margin is at most half a cell.)
        let b0 = (c0 - floor_i64((lo_m.get(a) - origin) * sched.inv_cell)).clamp(0, 1);
        let b1 = (floor_i64((hi_m.get(a) - origin) * sched.inv_cell) - c1).clamp(0, 1);
        if c0 - b0 < -CELL_RANGE || c1 + b1 > CELL_RANGE {
            return (invalid, (u32::MAX, s));
        }
        count *= c1 + b1 - c0 + b0 + 1;
        if count > MAX_CELLS_PER_SEGMENT {
            return (invalid, (u32::MAX, s));
        }
        cb.lo[a] = (c0 + sched.anchor[a] as i64) as i32;
        cb.hi[a] = (c1 + sched.anchor[a] as i64) as i32;
        cb.hi[3] |= ((b0 as i32) << a) | ((b1 as i32) << (3 + a));
    }
    (cb, (u32::MAX, u32::MAX))
}

/// Stage `aabb_raster_movement` (kernel `shaders/aabb_raster_movement.wgsl`), one task per segment
/// gathering its control points once: the cell box of every segment into `cells`, its movement over
/// the last step (`pos − prev1`) into `mv1` and its change of movement (`pos − 2 prev1 + prev2`) into
/// `mv2`, each a per-axis interval over `t ∈ [0, 1]`. A non-finite control point raises
/// `ERROR_NAN_POSITION` with the lowest such point in `first_bad_point`; a box beyond the cell range
/// or over more than [`MAX_CELLS_PER_SEGMENT`] cells raises `ERROR_GRID_RANGE` with the lowest such
/// segment in `first_bad_segment`. Either leaves the segment's box invalid.
#[allow(clippy::too_many_arguments)]
pub fn aabb_raster_movement(
    sched: &SchedUniform,
    segments: &[Segment],
    pos: &[[f32; 4]],
    prev1: &[[f32; 4]],
    prev2: &[[f32; 4]],
    cells: &mut [CellBox],
    mv1: &mut [Interval],
    mv2: &mut [Interval],
    counters: &mut SchedCounters,
) {
    let n = sched.num_segments as usize;
    let (bad_point, bad_seg) = cells[..n]
        .par_iter_mut()
        .zip(mv1[..n].par_iter_mut().zip(mv2[..n].par_iter_mut()))
        .zip(segments[..n].par_iter())
        .enumerate()
        .map(|(s, ((c, (m1, m2)), seg))| {
            (*m1, *m2) = movements_of(seg, pos, prev1, prev2);
            let (cb, err) = raster_segment(s as u32, seg, pos, sched);
            *c = cb;
            err
        })
        .reduce(|| (u32::MAX, u32::MAX), |a, b| (a.0.min(b.0), a.1.min(b.1)));
    if bad_point != u32::MAX {
        counters.errors |= ERROR_NAN_POSITION;
        counters.first_bad_point = counters.first_bad_point.min(bad_point);
    }
    if bad_seg != u32::MAX {
        counters.errors |= ERROR_GRID_RANGE;
        counters.first_bad_segment = counters.first_bad_segment.min(bad_seg);
    }
}

/// `x.floor() as i64` for every `x` (saturating; NaN gives 0) without a libm call (the x86-64
/// baseline has no rounding instruction, and `floorf` was ~1% of an ACL step): truncate, then step
/// down where truncation rounded up.
#[inline]
pub fn floor_i64(x: f32) -> i64 {
    let t = x as i64;
    if (t as f32) > x {
        t.saturating_sub(1)
    } else {
        t
    }
}

/// The per-axis interval containing the field `Σ_k B_k(t) d_k` over `t ∈ [0, 1]` ([`basis_field_bounds`]),
/// widened by a few ulps of the coordinates so that rounding in the differences cannot make it too
/// small. `d` is `a − b` (movement) or `a − 2b + c` (change of movement); `mag2` is the largest squared
/// norm of the coordinates the differences were formed from.
#[inline]
fn movement_interval(d: &[V3<f32>; 4], mag2: f32) -> Interval {
    // Each difference carries a rounding error of at most a few ulps of the coordinates. (The largest
    // norm is the root of the largest squared norm: the rounded square root is monotone.)
    let pad = 4.0 * f32::EPSILON * mag2.sqrt();
    let mut out = Interval::default();
    for axis in 0..3 {
        let (lo, hi) = basis_field_bounds([
            d[0].get(axis),
            d[1].get(axis),
            d[2].get(axis),
            d[3].get(axis),
        ]);
        out.lo[axis] = lo - pad;
        out.hi[axis] = hi + pad;
    }
    out
}

#[inline]
pub(super) fn movement_of(
    seg: &Segment,
    a: &[[f32; 4]],
    b: &[[f32; 4]],
    c: Option<&[[f32; 4]]>,
) -> Interval {
    let mut d = [V3::<f32>::zero(); 4];
    let mut mag2 = 0.0f32;
    for k in 0..4 {
        let i = seg.cp[k] as usize;
        let pa = V3::<f32>::from4(a[i]);
        let pb = V3::<f32>::from4(b[i]);
        d[k] = match c {
            Some(c) => {
                let pc = V3::<f32>::from4(c[i]);
                mag2 = mag2.max(pa.norm2()).max(pb.norm2()).max(pc.norm2());
                pa - pb * 2.0 + pc
            }
            None => {
                mag2 = mag2.max(pa.norm2()).max(pb.norm2());
                pa - pb
            }
        };
    }
    movement_interval(&d, mag2)
}

/// `movement_of(seg, a, b, None)` and `movement_of(seg, a, b, Some(c))` from one gather.
#[inline]
fn movements_of(
    seg: &Segment,
    a: &[[f32; 4]],
    b: &[[f32; 4]],
    c: &[[f32; 4]],
) -> (Interval, Interval) {
    let mut d1 = [V3::<f32>::zero(); 4];
    let mut d2 = [V3::<f32>::zero(); 4];
    let (mut mag1, mut mag2) = (0.0f32, 0.0f32);
    for k in 0..4 {
        let i = seg.cp[k] as usize;
        let pa = V3::<f32>::from4(a[i]);
        let pb = V3::<f32>::from4(b[i]);
        let pc = V3::<f32>::from4(c[i]);
        let (na, nb) = (pa.norm2(), pb.norm2());
        mag1 = mag1.max(na).max(nb);
        mag2 = mag2.max(na).max(nb).max(pc.norm2());
        d1[k] = pa - pb;
        d2[k] = pa - pb * 2.0 + pc;
    }
    (movement_interval(&d1, mag1), movement_interval(&d2, mag2))
}

/// `max_t |B_0(t)| = max_t |B_3(t)| = 2/27` (at `t = 1/3`, `2/3`).
const HANDLE_BASIS_MAX: f32 = 2.0 / 27.0;

/// Conservative bounds of `Σ_k B_k(t) d_k` over `t ∈ [0, 1]` (one axis), without root finding.
///
/// With `m = max(d_1, d_2)` and `Σ_k B_k = 1`: `y − m = B_1(d_1 − m) + B_2(d_2 − m) + B_0(d_0 − m) +
/// B_3(d_3 − m)`; the first two terms are `≤ 0` (`B_1, B_2 ≥ 0`) and `B_0, B_3 ∈ [−2/27, 0]`, so
/// `y ≤ m + 2/27 (max(0, m − d_0) + max(0, m − d_3))`, and symmetrically for the minimum. At most
/// `2/27` of the handle differences looser than the exact extremes (the roots of the derivative, as
/// `segment_aabb` finds them), and a fraction of the cost: the scheduler evaluates it for every
/// segment twice per step and for the windows of the bins.
#[inline]
pub fn basis_field_bounds(d: [f32; 4]) -> (f32, f32) {
    let m = d[1].max(d[2]);
    let hi = m + HANDLE_BASIS_MAX * ((m - d[0]).max(0.0) + (m - d[3]).max(0.0));
    let n = d[1].min(d[2]);
    let lo = n - HANDLE_BASIS_MAX * ((d[0] - n).max(0.0) + (d[3] - n).max(0.0));
    (lo, hi)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn floor_i64_matches_floor_cast() {
        let mut xs = vec![
            0.0f32,
            -0.0,
            0.5,
            -0.5,
            1.0,
            -1.0,
            2.7,
            -2.7,
            8388607.5,
            -8388607.5,
            1e10,
            -1e10,
            1e30,
            -1e30,
            9.223372e18,
            -9.223372e18,
            f32::MAX,
            f32::MIN,
            f32::INFINITY,
            f32::NEG_INFINITY,
            f32::NAN,
            f32::MIN_POSITIVE,
            -f32::MIN_POSITIVE,
        ];
        for k in -3000..3000 {
            xs.push(k as f32 * 0.37 + 1e-3);
            xs.push(k as f32 / 64.0);
        }
        for x in xs {
            assert_eq!(floor_i64(x), x.floor() as i64, "{x}");
        }
    }

    #[test]
    fn fused_movements_equal_the_single_ones_and_the_norm_maximum() {
        // A small deterministic pseudo-random cloud (xorshift), coordinates over several magnitudes.
        let mut x = 0x9E37_79B9u32;
        let mut rnd = || {
            x ^= x << 13;
            x ^= x >> 17;
            x ^= x << 5;
            (x as f32 / u32::MAX as f32 - 0.5) * 10f32.powi((x % 7) as i32 - 3)
        };
        let pts = |rnd: &mut dyn FnMut() -> f32| -> Vec<[f32; 4]> {
            (0..16).map(|_| [rnd(), rnd(), rnd(), 0.0]).collect()
        };
        let (a, b, c) = (pts(&mut rnd), pts(&mut rnd), pts(&mut rnd));
        for s in 0..13u32 {
            let seg = Segment {
                cp: [s, s + 1, s + 2, s + 3],
                ..Default::default()
            };
            let (m1, m2) = movements_of(&seg, &a, &b, &c);
            assert_eq!(m1, movement_of(&seg, &a, &b, None));
            assert_eq!(m2, movement_of(&seg, &a, &b, Some(&c)));
            // The pad is 4 ε times the largest coordinate norm, as a maximum of norms.
            let mag = seg.cp.iter().fold(0.0f32, |m, &i| {
                let n = |p: [f32; 4]| V3::<f32>::from4(p).norm();
                m.max(n(a[i as usize])).max(n(b[i as usize]))
            });
            let d: Vec<V3<f32>> = seg
                .cp
                .iter()
                .map(|&i| V3::from4(a[i as usize]) - V3::from4(b[i as usize]))
                .collect();
            let (lo, _) = basis_field_bounds([d[0].x, d[1].x, d[2].x, d[3].x]);
            assert_eq!(m1.lo[0], lo - 4.0 * f32::EPSILON * mag);
        }
    }
}
