//! The space-time contact scheduler (seed §5.2, DESIGN §5): finds the quadrature pairs of *empty space*
//! (pairs owned by no contact set) that start touching, without visiting most segment pairs each step.
//!
//! # Buffers
//!
//! Per segment `s` (flat `Pod` arrays, indexed by segment):
//! - `aabb[s]`: its exact AABB (roots of `y'`) padded by `r`; `cells[s]`, `prev_cells[s]`: the box of
//!   grid cells it covers now and at the previous step.
//! - `mv1[s]`: per-axis interval (over the whole segment) of its movement over the last step,
//!   `Δy(t) = Σ_k B_k(t) Δq_k` with `Δq = q^n − q^{n−1}`; `mv2[s]`: the same for the change of movement
//!   `Δ²q = q^n − 2q^{n−1} + q^{n−2}`; `mv2_ref[s]`: the reference change of movement (monitoring).
//! - `win[λ][s]`: the movement since bin λ's snapshot of the positions (lazily, per step).
//!
//! Per schedule entry: [`SchedEntry`] — the segment pair, the distance bound, the bin, and a `b×b`
//! bitmap of the quadrature pairs already owned by contact sets.
//!
//! # Stages (future kernels), in step order
//!
//! 1. [`aabb_raster_movement`]: AABB and cell box of every segment, and its movement and change of
//!    movement (`mv1`, `mv2`).
//! 2. `grid_build` (on steps where some segment entered a cell): (cell, segment) items counting-sorted
//!    by hash bucket; the grid is centred on the cloth's centre of mass, snapped to whole cells so that
//!    cell identities persist between steps.
//! 3. `drop_entries`: a segment that left cells drops the entries whose partner no longer shares a cell
//!    with it (two segments in disjoint cell sets have disjoint padded boxes: a certificate that they
//!    cannot touch).
//! 4. [`Scheduler::newcomer_schedule`]: each (segment, cell) pair new this step meets the other segments
//!    of the cell; a pair without an entry gets one, due immediately. The entry belongs to the lower
//!    segment index. Together with 3 this keeps the invariant *every non-excluded segment pair sharing a
//!    cell has exactly one entry*.
//! 5. Monitoring: a segment whose change of movement left its reference interval by more than `ω/2`
//!    sends all its entries to be re-examined now and takes the current value as its new reference.
//! 6. [`Scheduler::schedule_process`]: the entries due now (new, monitored, released by a contact set)
//!    and those of every bin λ with `n mod 2^λ = 0` are *examined*: the bound is lowered by the largest
//!    relative movement of the two segments since it was set. If it is still positive the entry is only
//!    re-binned; otherwise it is *processed*: the true distances of its unowned quadrature pairs are
//!    computed, touching ones (`d < 2r`) are reported to the coalescer, and the bound becomes the smallest
//!    gap `d − 2r` over the remaining unowned pairs (the touching ones are about to be owned).
//!
//! # Distance bounds and bins
//!
//! Movement intervals make relative movement cheap and tight: if every point of segment `a` moved by a
//! vector in the per-axis interval `[lo_a, hi_a]` and every point of `b` in `[lo_b, hi_b]`, their relative
//! movement is in `[lo_a − hi_b, hi_a − lo_b]` per axis, whose largest norm `|Δx_ab|` bounds the change of
//! every pair distance (common motion — a falling cloth — cancels). The seed finds the extremes of each
//! axis of `Σ_k B_k(t) Δq_k` over `t ∈ [0, 1]` from the roots of its derivative; we use the closed-form
//! conservative bound of [`basis_field_bounds`] instead (no roots, at most 2/27 of the handle
//! differences wider), since these intervals are formed for every segment several times per step.
//!
//! After an examination at step `n` with gap bound `d`, last-step relative movement `m = |Δx_ab|` and
//! relative change of movement bounded by `A = |Δ²x_ab| + ω` per step (guaranteed by monitoring, see
//! below), the relative movement at step `n + j` is at most `m + jA`, so the gap after `k` steps is at
//! least `d − k m − k(k+1)/2 · A`. Its smallest non-negative root
//! `k* = 2d / ((m + A/2) + sqrt((m + A/2)² + 2Ad))` is the earliest possible contact, and the entry goes to
//! bin `λ = clamp(⌊log₂ k*⌋, 0, λ_max)`, examined every `2^λ` steps: always before `k*`. This is the
//! seed's quadratic with `t/h = k` (everything in steps; ω in cm/step²). The seed writes the linear term
//! with `|Δx^λ|`; the derivation needs the last step's movement `m`, which is what we use.
//!
//! *Monitoring.* `A` must hold until the next examination. Each segment keeps a reference interval for
//! its change of movement; the bins use the *reference* intervals of both segments plus `ω`. When a
//! segment's current interval leaves its reference interval by a vector of norm more than `ω/2`, all of
//! its entries are re-examined at once and the reference is reset, so between re-examinations each
//! segment stays within `ω/2` of its reference and a pair within `ω` of the bins' assumption.
//!
//! *Window bookkeeping.* Bin λ is examined at the steps `n ≡ 0 (mod 2^λ)` and the positions at its last
//! examination are kept (`snap_λ`). The bound stored in an entry of bin λ refers to the time of that
//! snapshot (the window start), so at the next examination `d ← d − |Δx^λ|` with `Δx^λ` the movement
//! since the snapshot: a measured displacement, not a prediction. An entry assigned to bin λ at a step
//! that is not a multiple of `2^λ` converts its bound to the window start by subtracting the movement from
//! the snapshot to now (the triangle inequality works backwards in time too).
//!
//! *Rounding margin.* An entry is processed when its bound falls below `1e-4 r`, not 0, so that f32
//! rounding in the bound cannot hide a pair that is touching by less than that.
//!
//! Only the CPU path exists so far; each stage is written element-wise (one segment or one entry per
//! invocation) with the buffers it will bind as a kernel.

// Negated comparisons (`!(x > 0)`) are deliberate: they also reject NaN. Index loops mirror the
// element-wise kernels.
#![allow(clippy::neg_cmp_op_on_partial_ord, clippy::needless_range_loop)]

use crate::math::V3;
use crate::spline::segment_aabb;
use crate::state::Segment;
use bytemuck::{Pod, Zeroable};
use rayon::prelude::*;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};

/// Largest `b` the `b × b` pair bitmap ([u32; 4]) can hold.
pub const MAX_QUADRATURE: u32 = 11;
/// A segment may cover at most this many grid cells (guards against an exploded state).
pub const MAX_CELLS_PER_SEGMENT: i64 = 1 << 12;
/// Bound of an entry with no unowned pair left (never needs processing for distance reasons).
pub const FAR: f32 = f32::MAX;

/// Why the scheduler cannot run.
#[derive(Debug, thiserror::Error, PartialEq)]
pub enum SchedError {
    #[error(
        "contact.quadrature = {0}: the schedule bitmap holds at most 11 × 11 quadrature pairs"
    )]
    Quadrature(u32),
    #[error("contact.grid_cell = {0} cm must be positive and finite")]
    Cell(f32),
    #[error("contact.max_bin = {0}: at most 24 schedule bins are supported")]
    MaxBin(u32),
    #[error("contact.omega = {0} cm/step² must be non-negative and finite")]
    Omega(f32),
    #[error("yarn radius {0} cm must be positive and finite")]
    Radius(f32),
    #[error("control point {point} is not finite")]
    NotFinite { point: usize },
    #[error("segment {seg} covers {cells} grid cells (more than {MAX_CELLS_PER_SEGMENT}): the cloth exploded or contact.grid_cell is far too small")]
    TooManyCells { seg: usize, cells: i64 },
    #[error("positions hold {got} points but the topology needs {need}")]
    Size { got: usize, need: usize },
}

/// Per-axis interval `[lo, hi]` of a vector field over one segment (w unused, 0).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Pod, Zeroable)]
pub struct Interval {
    pub lo: [f32; 4],
    pub hi: [f32; 4],
}
const _: () = assert!(std::mem::size_of::<Interval>() == 32);

impl Interval {
    /// Largest norm of `x − y` for `x` in `self`, `y` in `o`, per axis: the relative movement bound.
    #[inline]
    pub fn rel_norm(&self, o: &Interval) -> f32 {
        let mut s = 0.0f32;
        for a in 0..3 {
            let m = (self.hi[a] - o.lo[a])
                .abs()
                .max((self.lo[a] - o.hi[a]).abs());
            s += m * m;
        }
        s.sqrt()
    }

    /// Norm of the vector by which `self` sticks out of `reference` per axis.
    #[inline]
    pub fn drift_from(&self, reference: &Interval) -> f32 {
        let mut s = 0.0f32;
        for a in 0..3 {
            let m = (reference.lo[a] - self.lo[a])
                .max(self.hi[a] - reference.hi[a])
                .max(0.0);
            s += m * m;
        }
        s.sqrt()
    }
}

/// Inclusive box of integer grid cells; `lo[3] = 1` marks a valid box (0: none yet).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Pod, Zeroable)]
pub struct CellBox {
    pub lo: [i32; 4],
    pub hi: [i32; 4],
}
const _: () = assert!(std::mem::size_of::<CellBox>() == 32);

impl CellBox {
    #[inline]
    pub fn valid(&self) -> bool {
        self.lo[3] == 1
    }
    #[inline]
    pub fn contains(&self, c: [i32; 3]) -> bool {
        self.valid() && (0..3).all(|a| self.lo[a] <= c[a] && c[a] <= self.hi[a])
    }
    #[inline]
    pub fn intersects(&self, o: &CellBox) -> bool {
        self.valid() && o.valid() && (0..3).all(|a| self.lo[a] <= o.hi[a] && o.lo[a] <= self.hi[a])
    }
    /// True when `o` covers every cell of `self`.
    #[inline]
    pub fn within(&self, o: &CellBox) -> bool {
        !self.valid()
            || (o.valid() && (0..3).all(|a| o.lo[a] <= self.lo[a] && self.hi[a] <= o.hi[a]))
    }
}

/// One (cell, segment) occupancy.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Pod, Zeroable)]
pub struct GridItem {
    pub cell: [i32; 3],
    pub seg: u32,
}
const _: () = assert!(std::mem::size_of::<GridItem>() == 16);

/// Entry flag: the two segments are on one yarn and only some of their pairs are excluded.
pub const ENTRY_MIXED: u32 = 1;
/// Entry flag: the slot is in use.
pub const ENTRY_LIVE: u32 = 2;

/// A tracked segment pair (`seg_a < seg_b`; the entry belongs to `seg_a`).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Pod, Zeroable)]
pub struct SchedEntry {
    pub seg_a: u32,
    pub seg_b: u32,
    /// Lower bound on the gap `distance − 2r` over the unowned quadrature pairs, at the start of the
    /// window of bin `bin` (see the module docs). Negative: process at the next examination.
    pub d: f32,
    pub bin: u32,
    /// Bumped whenever the entry is (re)binned; queued references carry it, stale ones are skipped.
    pub ticket: u32,
    pub flags: u32,
}
const _: () = assert!(std::mem::size_of::<SchedEntry>() == 24);

/// How the same-yarn exclusion rule treats all pairs of two segments.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PairClass {
    /// No pair excluded.
    Clear,
    /// Every pair excluded (no entry is made).
    All,
    /// Test each pair.
    Mixed,
}

/// The exclusion rule, as the scheduler needs it (implemented by the contact module's rule).
pub trait PairRules: Sync {
    fn segment_class(&self, seg_a: u32, seg_b: u32) -> PairClass;
    fn excluded(&self, seg_a: u32, k_a: u32, seg_b: u32, k_b: u32) -> bool;
}

/// Which quadrature pairs of a segment pair contact sets own (implemented by the contact sets): a
/// lookup the scheduler makes when it processes an entry, never state it keeps.
pub trait Ownership: Sync {
    /// Bitmap (bit `ka·b + kb`) of the owned pairs `(seg_a·b + ka, seg_b·b + kb)`, `seg_a < seg_b`.
    fn owned_bits(&self, seg_a: u32, seg_b: u32) -> [u32; 4];
}

/// No contact sets at all.
pub struct NoOwnership;
impl Ownership for NoOwnership {
    fn owned_bits(&self, _: u32, _: u32) -> [u32; 4] {
        [0; 4]
    }
}

/// The box `[u0, u1, v0, v1]` that holds no pair (a deleted contact set's new box).
pub const EMPTY_BOX: [u32; 4] = [1, 0, 1, 0];

/// A contact set's box changed from `old` to `new` ([`EMPTY_BOX`] when the set was deleted): the
/// pairs of `old` outside `new` are back in empty space, and the entries holding them must be
/// processed at the next step (their bounds ignored those pairs). The contact sets list these as
/// they change; the scheduler reads the list at its next [`Scheduler::detect`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Pod, Zeroable)]
#[repr(C)]
pub struct Release {
    pub old: [u32; 4],
    pub new: [u32; 4],
}

/// Switches that disable one safety rule, only so that tests can show the brute-force safety check
/// fails without it. Never set in a run.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SafetyRuleSwitches {
    /// Do not lower bounds by the measured movement at examinations.
    pub no_movement_update: bool,
    /// Do not re-examine a segment's entries when its change of movement drifts.
    pub no_monitoring: bool,
    /// Do not convert a bound to the window start when binning off-phase.
    pub no_window_correction: bool,
}

/// Scheduler parameters (from `ContactParams` and the yarn radius).
#[derive(Clone, Copy, Debug)]
pub struct SchedParams {
    /// `b`, quadrature points per segment.
    pub quadrature: u32,
    /// Yarn radius `r` (cm).
    pub radius: f32,
    /// Grid cell width γ (cm).
    pub cell: f32,
    /// λ_max.
    pub max_bin: u32,
    /// ω, cm/step².
    pub omega: f32,
    /// Test-only switches (all off in a run).
    pub disable: SafetyRuleSwitches,
}

impl SchedParams {
    pub fn validate(&self) -> Result<(), SchedError> {
        if self.quadrature == 0 || self.quadrature > MAX_QUADRATURE {
            return Err(SchedError::Quadrature(self.quadrature));
        }
        if !(self.cell > 0.0 && self.cell.is_finite()) {
            return Err(SchedError::Cell(self.cell));
        }
        if self.max_bin > 24 {
            return Err(SchedError::MaxBin(self.max_bin));
        }
        if !(self.omega >= 0.0 && self.omega.is_finite()) {
            return Err(SchedError::Omega(self.omega));
        }
        if !(self.radius > 0.0 && self.radius.is_finite()) {
            return Err(SchedError::Radius(self.radius));
        }
        Ok(())
    }
}

/// Counters of the last step.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SchedStats {
    /// Live schedule entries after the step.
    pub tracked: u64,
    /// Entries examined (bound updated) this step.
    pub examined: u64,
    /// Entries fully processed (pair distances computed) this step.
    pub processed: u64,
    /// Entries created this step.
    pub created: u64,
    /// Entries dropped this step (segments no longer sharing a cell).
    pub dropped: u64,
    /// Segments whose change of movement triggered a re-examination.
    pub monitored: u64,
    /// (segment, cell) newcomers.
    pub newcomers: u64,
}

/// Wall-clock time of the scheduler's phases in the last step (milliseconds).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct SchedTimes {
    /// `aabb_raster_movement`, `grid_build`, `drop_entries`.
    pub raster_ms: f64,
    /// `newcomer_schedule` and monitoring.
    pub newcomers_ms: f64,
    /// `schedule_process` (examination, processing, binning).
    pub schedule_ms: f64,
}

/// One segment of `aabb_raster_movement`: its exact AABB padded by `radius` and the box of grid cells
/// (width `cell`, integer cell `anchor` at world position `anchor·cell`) that cover it.
///
/// Cell coordinates are absolute integers (`⌊x/γ⌋`, computed relative to the anchor for precision), so
/// a cell keeps its identity when the anchor moves.
#[inline]
fn raster_segment(
    s: usize,
    seg: &Segment,
    pos: &[[f32; 4]],
    radius: f32,
    cell: f32,
    anchor: [i32; 3],
) -> Result<(Interval, CellBox), SchedError> {
    let inv = 1.0 / cell;
    let q = seg.cp.map(|i| V3::<f32>::from4(pos[i as usize]));
    // (min/max would silently skip a NaN, so test the points themselves.)
    for k in 0..4 {
        if !q[k].is_finite() {
            return Err(SchedError::NotFinite {
                point: seg.cp[k] as usize,
            });
        }
    }
    let (lo, hi) = segment_aabb(&q);
    if !(lo.is_finite() && hi.is_finite()) {
        return Err(SchedError::NotFinite {
            point: seg.cp[1] as usize,
        });
    }
    // A hair more than r, so rounding cannot separate the boxes of a pair at exactly 2r.
    let pad = radius * (1.0 + 1e-4);
    let lo = lo - V3::splat(pad);
    let hi = hi + V3::splat(pad);
    let aabb = Interval {
        lo: lo.to4(0.0),
        hi: hi.to4(0.0),
    };
    let mut cb = CellBox {
        lo: [0, 0, 0, 1],
        hi: [0, 0, 0, 0],
    };
    let mut count = 1i64;
    for a in 0..3 {
        // Relative to the anchor cell for precision, then back to absolute cell indices.
        let origin = anchor[a] as f32 * cell;
        let c0 = floor_i64((lo.get(a) - origin) * inv) + anchor[a] as i64;
        let c1 = floor_i64((hi.get(a) - origin) * inv) + anchor[a] as i64;
        count = count.saturating_mul(c1 - c0 + 1);
        if count > MAX_CELLS_PER_SEGMENT || c0 < i32::MIN as i64 / 2 || c1 > i32::MAX as i64 / 2 {
            return Err(SchedError::TooManyCells {
                seg: s,
                cells: count,
            });
        }
        cb.lo[a] = c0 as i32;
        cb.hi[a] = c1 as i32;
    }
    Ok((aabb, cb))
}

/// Stage `aabb_raster_movement`, one task per segment gathering its control points once: the padded
/// AABB and cell box of every segment into `aabbs`/`cells`, its movement over the last step
/// (`pos − prev1`) into `mv1` and its change of movement (`pos − 2 prev1 + prev2`) into `mv2`, each a
/// per-axis interval over `t ∈ [0, 1]`. On a non-finite point it reports the first failing segment.
#[allow(clippy::too_many_arguments)]
pub fn aabb_raster_movement(
    segments: &[Segment],
    pos: &[[f32; 4]],
    prev1: &[[f32; 4]],
    prev2: &[[f32; 4]],
    radius: f32,
    cell: f32,
    anchor: [i32; 3],
    aabbs: &mut [Interval],
    cells: &mut [CellBox],
    mv1: &mut [Interval],
    mv2: &mut [Interval],
) -> Result<(), SchedError> {
    let ok = aabbs
        .par_iter_mut()
        .zip(cells.par_iter_mut())
        .zip(mv1.par_iter_mut().zip(mv2.par_iter_mut()))
        .zip(segments.par_iter())
        .enumerate()
        .map(|(s, (((a, c), (m1, m2)), seg))| {
            (*m1, *m2) = movements_of(seg, pos, prev1, prev2);
            match raster_segment(s, seg, pos, radius, cell, anchor) {
                Ok((ab, cb)) => {
                    *a = ab;
                    *c = cb;
                    true
                }
                Err(_) => false,
            }
        })
        .all(|x| x);
    if ok {
        return Ok(());
    }
    for (s, seg) in segments.iter().enumerate() {
        raster_segment(s, seg, pos, radius, cell, anchor)?;
    }
    Ok(())
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
fn movement_of(seg: &Segment, a: &[[f32; 4]], b: &[[f32; 4]], c: Option<&[[f32; 4]]>) -> Interval {
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

#[inline]
fn hash_cell(c: [i32; 3], mask: usize) -> usize {
    let h = (c[0] as u32 as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15)
        ^ (c[1] as u32 as u64).wrapping_mul(0xC2B2_AE3D_27D4_EB4F)
        ^ (c[2] as u32 as u64).wrapping_mul(0x1656_67B1_9E37_79F9);
    ((h ^ (h >> 29)) >> 16) as usize & mask
}

/// Smallest non-negative root `k*` of `−d + m k + (k² + k)/2 · A` (steps), `+∞` if none.
#[inline]
pub fn earliest_contact_steps(d: f32, m: f32, acc: f32) -> f32 {
    if !(d > 0.0) {
        return 0.0;
    }
    if d >= FAR {
        return f32::INFINITY;
    }
    let p = m + 0.5 * acc;
    let den = p + (p * p + 2.0 * acc * d).sqrt();
    if den > 0.0 {
        2.0 * d / den
    } else {
        f32::INFINITY
    }
}

/// The bin for an earliest possible contact `k*` steps away: `clamp(⌊log₂ k*⌋, 0, λ_max)`.
#[inline]
pub fn bin_for(k: f32, max_bin: u32) -> u32 {
    if !(k >= 2.0) {
        return 0;
    }
    if !k.is_finite() {
        return max_bin;
    }
    // ⌊log₂ k⌋ is the binary exponent of k (a normal float, k ≥ 2): exact, no libm call.
    let l = ((k.to_bits() >> 23) & 0xff) - 127;
    l.min(max_bin)
}

/// Bitmap of the pairs `(seg_a·b + ka, seg_b·b + kb)` that lie in the box `[u0, u1] × [v0, v1]`
/// (quadrature indices, inclusive) with `i < j`.
pub fn box_bits(bx: [u32; 4], seg_a: u32, seg_b: u32, b: u32) -> [u32; 4] {
    let mut bits = [0u32; 4];
    let (a0, b0) = (seg_a * b, seg_b * b);
    let ka0 = bx[0].max(a0);
    let ka1 = bx[1].min(a0 + b - 1);
    let kb0 = bx[2].max(b0);
    let kb1 = bx[3].min(b0 + b - 1);
    if ka0 > ka1 || kb0 > kb1 {
        return bits;
    }
    for i in ka0..=ka1 {
        for j in kb0..=kb1 {
            if i < j {
                let bit = (i - a0) * b + (j - b0);
                bits[(bit / 32) as usize] |= 1 << (bit % 32);
            }
        }
    }
    bits
}

/// Digit width of [`radix_sort_by_entry`].
const RADIX_BITS: u32 = 11;
const RADIX: usize = 1 << RADIX_BITS;

/// Sorts queue items `[entry, ticket]` by entry, ascending, by an LSD radix sort through `tmp` (which
/// may end up swapped with `v`; no allocation while `tmp` has `v`'s capacity). Items of one entry end
/// up in some order among themselves: the examination does not depend on it (at most one of them
/// carries the entry's current ticket, and identical items are interchangeable). The queue is a few
/// sorted runs (the bin lists) of tens of thousands of items per step; this is linear in them.
pub fn radix_sort_by_entry(v: &mut Vec<[u32; 2]>, tmp: &mut Vec<[u32; 2]>, counts: &mut [u32]) {
    let n = v.len();
    if n < 256 {
        v.sort_unstable_by_key(|w| w[0]);
        return;
    }
    let max = v.iter().map(|w| w[0]).max().unwrap_or(0);
    let passes = (32 - max.leading_zeros()).div_ceil(RADIX_BITS);
    tmp.clear();
    tmp.resize(n, [0; 2]);
    let mask = RADIX as u32 - 1;
    for pass in 0..passes {
        let shift = pass * RADIX_BITS;
        counts.fill(0);
        for w in v.iter() {
            counts[((w[0] >> shift) & mask) as usize] += 1;
        }
        let mut sum = 0u32;
        for c in counts.iter_mut() {
            let t = *c;
            *c = sum;
            sum += t;
        }
        for w in v.iter() {
            let d = ((w[0] >> shift) & mask) as usize;
            tmp[counts[d] as usize] = *w;
            counts[d] += 1;
        }
        std::mem::swap(v, tmp);
    }
}

/// Queued entries per parallel task of [`Scheduler::schedule_process`]: a fixed count, so the split
/// — and with it the order of every output — does not depend on the number of threads.
pub const PROCESS_TASK: usize = 2048;

/// What one task of `schedule_process` found: touching pairs and `[bin, entry, ticket]` re-binnings, in
/// queue order, and its counts.
#[derive(Debug, Default)]
struct ProcessTask {
    touching: Vec<[u32; 2]>,
    rebin: Vec<[u32; 3]>,
    examined: u64,
    processed: u64,
}

/// Base pointer of the entry slots while the tasks of `schedule_process` write disjoint ones.
#[derive(Clone, Copy)]
struct EntryPtr(*mut SchedEntry);
// SAFETY: only dereferenced inside `examine_run`, at slots no two tasks share.
unsafe impl Send for EntryPtr {}
unsafe impl Sync for EntryPtr {}

/// A cached movement window (see `Scheduler::window`): the interval's bits and the step it is for.
#[derive(Debug)]
struct WindowSlot {
    stamp: AtomicU64,
    bits: [AtomicU32; 8],
}

impl Default for WindowSlot {
    fn default() -> Self {
        WindowSlot {
            stamp: AtomicU64::new(u64::MAX),
            bits: Default::default(),
        }
    }
}

impl WindowSlot {
    #[inline]
    fn load(&self) -> Interval {
        let f = |k: usize| f32::from_bits(self.bits[k].load(Ordering::Relaxed));
        Interval {
            lo: [f(0), f(1), f(2), f(3)],
            hi: [f(4), f(5), f(6), f(7)],
        }
    }

    #[inline]
    fn store(&self, w: &Interval) {
        for k in 0..4 {
            self.bits[k].store(w.lo[k].to_bits(), Ordering::Relaxed);
            self.bits[k + 4].store(w.hi[k].to_bits(), Ordering::Relaxed);
        }
    }
}

/// Hints the CPU to bring the cache line at `p` in (no effect on results; `p` need not be valid).
#[inline(always)]
pub(crate) fn prefetch<T>(p: *const T) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: a prefetch never faults, whatever the address; SSE is part of the x86_64 baseline.
    unsafe {
        std::arch::x86_64::_mm_prefetch(p as *const i8, std::arch::x86_64::_MM_HINT_T0);
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = p;
}

#[inline]
fn bit_set(bits: &[u32; 4], bit: u32) -> bool {
    bits[(bit / 32) as usize] & (1 << (bit % 32)) != 0
}

/// The scheduler's state: everything persists from step to step.
#[derive(Debug)]
pub struct Scheduler {
    params: SchedParams,
    /// Steps done (the next step is number `step`).
    step: u64,
    nseg: usize,
    npts: usize,
    // Per segment.
    aabb: Vec<Interval>,
    cells: Vec<CellBox>,
    prev_cells: Vec<CellBox>,
    mv1: Vec<Interval>,
    mv2: Vec<Interval>,
    mv2_ref: Vec<Interval>,
    /// `win[(λ−1)·nseg + s]`, valid when its stamp equals the step (λ ≥ 1; λ = 0 is `mv1`).
    win: Vec<WindowSlot>,
    // Positions history.
    prev1: Vec<[f32; 4]>,
    prev2: Vec<[f32; 4]>,
    /// `snaps[(λ−1)·npts + p]`: positions at bin λ's last examination step.
    snaps: Vec<[f32; 4]>,
    // Grid.
    items: Vec<GridItem>,
    sorted: Vec<GridItem>,
    bucket_start: Vec<u32>,
    bucket_mask: usize,
    // Entries.
    entries: Vec<SchedEntry>,
    free: Vec<u32>,
    live: u64,
    /// `adj[s·adj_cap ..][..adj_len[s]]`: the entries naming segment `s` (either side).
    adj: Vec<u32>,
    adj_len: Vec<u32>,
    adj_cap: usize,
    /// Bin lists of `[entry, ticket]`.
    bins: Vec<Vec<[u32; 2]>>,
    /// Entries to examine this step.
    work: Vec<[u32; 2]>,
    /// Second buffer and digit counts of the queue's radix sort.
    sort_tmp: Vec<[u32; 2]>,
    sort_counts: Vec<u32>,
    /// Output: unowned quadrature pairs `[i, j]`, `i < j`, found touching this step.
    touching: Vec<[u32; 2]>,
    /// Per task of `schedule_process` (kept between steps for their capacity).
    tasks: Vec<ProcessTask>,
    stats: SchedStats,
    times: SchedTimes,
}

impl Scheduler {
    pub fn new(params: SchedParams) -> Result<Self, SchedError> {
        params.validate()?;
        Ok(Scheduler {
            params,
            step: 0,
            nseg: 0,
            npts: 0,
            aabb: Vec::new(),
            cells: Vec::new(),
            prev_cells: Vec::new(),
            mv1: Vec::new(),
            mv2: Vec::new(),
            mv2_ref: Vec::new(),
            win: Vec::new(),
            prev1: Vec::new(),
            prev2: Vec::new(),
            snaps: Vec::new(),
            items: Vec::new(),
            sorted: Vec::new(),
            bucket_start: Vec::new(),
            bucket_mask: 0,
            entries: Vec::new(),
            free: Vec::new(),
            live: 0,
            adj: Vec::new(),
            adj_len: Vec::new(),
            adj_cap: 16,
            bins: (0..=params.max_bin).map(|_| Vec::new()).collect(),
            work: Vec::new(),
            sort_tmp: Vec::new(),
            sort_counts: vec![0; RADIX],
            touching: Vec::new(),
            tasks: Vec::new(),
            stats: SchedStats::default(),
            times: SchedTimes::default(),
        })
    }

    pub fn params(&self) -> &SchedParams {
        &self.params
    }

    /// Steps scheduled so far.
    pub fn steps(&self) -> u64 {
        self.step
    }

    pub fn stats(&self) -> SchedStats {
        self.stats
    }

    pub fn times(&self) -> SchedTimes {
        self.times
    }

    /// The unowned touching quadrature pairs found by the last [`Self::detect`].
    pub fn touching(&self) -> &[[u32; 2]] {
        &self.touching
    }

    /// All entry slots (dead ones have no `ENTRY_LIVE` flag).
    pub fn entries(&self) -> &[SchedEntry] {
        &self.entries
    }

    /// The cell box of each segment at the last step.
    pub fn cell_boxes(&self) -> &[CellBox] {
        &self.cells
    }

    fn resize(&mut self, nseg: usize, npts: usize, pos: &[[f32; 4]]) {
        let nb = self.params.max_bin as usize;
        self.nseg = nseg;
        self.npts = npts;
        self.aabb = vec![Interval::default(); nseg];
        self.cells = vec![CellBox::default(); nseg];
        self.prev_cells = vec![CellBox::default(); nseg];
        self.mv1 = vec![Interval::default(); nseg];
        self.mv2 = vec![Interval::default(); nseg];
        self.mv2_ref = vec![Interval::default(); nseg];
        self.win = (0..nseg * nb).map(|_| WindowSlot::default()).collect();
        self.prev1 = pos.to_vec();
        self.prev2 = pos.to_vec();
        self.snaps = Vec::with_capacity(npts * nb);
        for _ in 0..nb {
            self.snaps.extend_from_slice(pos);
        }
        self.entries.clear();
        self.free.clear();
        self.live = 0;
        self.adj = vec![0; nseg * self.adj_cap];
        self.adj_len = vec![0; nseg];
        for b in &mut self.bins {
            b.clear();
        }
        self.work.clear();
        self.step = 0;
    }

    /// Runs stages 1–6 for the step with positions `pos` and fills [`Self::touching`].
    pub fn detect(
        &mut self,
        segments: &[Segment],
        pos: &[[f32; 4]],
        rules: &dyn PairRules,
        owner: &dyn Ownership,
        released: &[Release],
    ) -> Result<(), SchedError> {
        let need = segments
            .iter()
            .flat_map(|s| s.cp.iter())
            .map(|&i| i as usize + 1)
            .max()
            .unwrap_or(0);
        if pos.len() < need {
            return Err(SchedError::Size {
                got: pos.len(),
                need,
            });
        }
        if segments.len() != self.nseg || pos.len() != self.npts || self.step == 0 {
            self.resize(segments.len(), pos.len(), pos);
        }
        self.stats = SchedStats::default();
        self.touching.clear();
        let n = self.step;

        // 1. Raster and movement.
        let t0 = std::time::Instant::now();
        std::mem::swap(&mut self.cells, &mut self.prev_cells);
        let anchor = self.anchor(pos);
        aabb_raster_movement(
            segments,
            pos,
            &self.prev1,
            &self.prev2,
            self.params.radius,
            self.params.cell,
            anchor,
            &mut self.aabb,
            &mut self.cells,
            &mut self.mv1,
            &mut self.mv2,
        )?;
        if n == 0 {
            self.mv2_ref.copy_from_slice(&self.mv2);
        }

        // 2. Grid. Only `newcomer_schedule` reads it, and only for segments that entered cells, so it is
        // rebuilt only on steps that have such a segment (the grid is a function of the current cell
        // boxes alone; at rest most steps have none).
        if (0..self.nseg).any(|s| !self.cells[s].within(&self.prev_cells[s])) {
            self.grid_build();
        }

        // 3. Drop entries of segments that left cells.
        self.drop_entries();

        // Entries whose pairs contact sets released during the last step.
        self.work.clear();
        self.release_entries(released);

        let t1 = std::time::Instant::now();
        // 4. Newcomers.
        self.newcomer_schedule(rules);
        // Every queue can hold every entry: they grow only when the number of entries reaches a new
        // maximum, never from the steps' fluctuations.
        let cap = self.entries.len();
        if self.free.capacity() < cap {
            let more = cap + cap / 4 + 64;
            self.free.reserve(more.saturating_sub(self.free.len()));
            for b in &mut self.bins {
                b.reserve(more.saturating_sub(b.len()));
            }
            self.work
                .reserve((2 * more).saturating_sub(self.work.len()));
            // The sort's buffer swaps with `work`: the same capacity.
            self.sort_tmp.clear();
            self.sort_tmp.reserve(self.work.capacity());
        }

        // 5. Monitoring.
        if !self.params.disable.no_monitoring {
            let half_omega = 0.5 * self.params.omega;
            for s in 0..self.nseg {
                if self.mv2[s].drift_from(&self.mv2_ref[s]) > half_omega {
                    self.mv2_ref[s] = self.mv2[s];
                    self.stats.monitored += 1;
                    let base = s * self.adj_cap;
                    for k in 0..self.adj_len[s] as usize {
                        let e = self.adj[base + k];
                        self.work.push([e, self.entries[e as usize].ticket]);
                    }
                }
            }
        }

        let t2 = std::time::Instant::now();
        // 6. Due bins, then process everything queued.
        for l in 0..=self.params.max_bin {
            if n.is_multiple_of(1u64 << l) {
                let mut list = std::mem::take(&mut self.bins[l as usize]);
                self.work.extend_from_slice(&list);
                list.clear();
                self.bins[l as usize] = list;
            }
        }
        self.schedule_process(segments, pos, rules, owner);

        // Snapshots of the bins examined this step, and the position history.
        for l in 1..=self.params.max_bin as usize {
            if n.is_multiple_of(1u64 << l) {
                let off = (l - 1) * self.npts;
                self.snaps[off..off + self.npts].copy_from_slice(pos);
            }
        }
        std::mem::swap(&mut self.prev2, &mut self.prev1);
        self.prev1.copy_from_slice(pos);
        self.stats.tracked = self.live;
        self.step += 1;
        let t3 = std::time::Instant::now();
        self.times = SchedTimes {
            raster_ms: (t1 - t0).as_secs_f64() * 1e3,
            newcomers_ms: (t2 - t1).as_secs_f64() * 1e3,
            schedule_ms: (t3 - t2).as_secs_f64() * 1e3,
        };
        Ok(())
    }

    /// Integer cell nearest to the centre of mass of the control points (equal masses).
    fn anchor(&self, pos: &[[f32; 4]]) -> [i32; 3] {
        let mut c = [0.0f64; 3];
        for p in pos {
            for a in 0..3 {
                c[a] += p[a] as f64;
            }
        }
        let n = pos.len().max(1) as f64;
        let g = self.params.cell as f64;
        c.map(|x| {
            let v = (x / n / g).round();
            v.clamp(-1e8, 1e8) as i32
        })
    }

    /// Stage `grid_build`: one item per (cell, segment), counting-sorted by hash bucket.
    fn grid_build(&mut self) {
        self.items.clear();
        for (s, cb) in self.cells.iter().enumerate() {
            for z in cb.lo[2]..=cb.hi[2] {
                for y in cb.lo[1]..=cb.hi[1] {
                    for x in cb.lo[0]..=cb.hi[0] {
                        self.items.push(GridItem {
                            cell: [x, y, z],
                            seg: s as u32,
                        });
                    }
                }
            }
        }
        let nb = (2 * self.items.len()).next_power_of_two().max(64);
        self.bucket_mask = nb - 1;
        self.bucket_start.clear();
        self.bucket_start.resize(nb + 1, 0);
        for it in &self.items {
            self.bucket_start[hash_cell(it.cell, self.bucket_mask) + 1] += 1;
        }
        for i in 0..nb {
            self.bucket_start[i + 1] += self.bucket_start[i];
        }
        self.sorted.clear();
        self.sorted.resize(self.items.len(), GridItem::default());
        // Stable scatter: items keep segment order within a bucket.
        for it in &self.items {
            let h = hash_cell(it.cell, self.bucket_mask);
            let slot = self.bucket_start[h] as usize;
            self.sorted[slot] = *it;
            self.bucket_start[h] += 1;
        }
        // Restore bucket starts (shifted by the scatter).
        for i in (1..=nb).rev() {
            self.bucket_start[i] = self.bucket_start[i - 1];
        }
        self.bucket_start[0] = 0;
    }

    fn drop_entries(&mut self) {
        for s in 0..self.nseg {
            if self.prev_cells[s].within(&self.cells[s]) {
                continue;
            }
            let base = s * self.adj_cap;
            let mut k = self.adj_len[s] as usize;
            while k > 0 {
                k -= 1;
                let e = self.adj[base + k] as usize;
                let en = self.entries[e];
                let other = if en.seg_a as usize == s {
                    en.seg_b
                } else {
                    en.seg_a
                } as usize;
                if !self.cells[s].intersects(&self.cells[other]) {
                    self.remove_entry(e as u32);
                    self.stats.dropped += 1;
                }
            }
        }
    }

    fn adj_remove(&mut self, s: usize, e: u32) {
        let base = s * self.adj_cap;
        let len = self.adj_len[s] as usize;
        if let Some(k) = self.adj[base..base + len].iter().position(|&x| x == e) {
            self.adj[base + k] = self.adj[base + len - 1];
            self.adj_len[s] -= 1;
        }
    }

    fn adj_push(&mut self, s: usize, e: u32) {
        if self.adj_len[s] as usize == self.adj_cap {
            // Grow every list (rare: amortized, only when a segment meets more neighbours than ever).
            let cap = self.adj_cap * 2;
            let mut adj = vec![0u32; self.nseg * cap];
            for t in 0..self.nseg {
                let len = self.adj_len[t] as usize;
                adj[t * cap..t * cap + len]
                    .copy_from_slice(&self.adj[t * self.adj_cap..t * self.adj_cap + len]);
            }
            self.adj = adj;
            self.adj_cap = cap;
        }
        let len = self.adj_len[s] as usize;
        self.adj[s * self.adj_cap + len] = e;
        self.adj_len[s] += 1;
    }

    fn remove_entry(&mut self, e: u32) {
        let en = self.entries[e as usize];
        self.adj_remove(en.seg_a as usize, e);
        self.adj_remove(en.seg_b as usize, e);
        let slot = &mut self.entries[e as usize];
        slot.flags = 0;
        slot.ticket = slot.ticket.wrapping_add(1);
        self.free.push(e);
        self.live -= 1;
    }

    /// The entry of segments `a < b`, if any.
    pub fn find_entry(&self, a: u32, b: u32) -> Option<u32> {
        let (la, lb) = (self.adj_len[a as usize], self.adj_len[b as usize]);
        let s = if la <= lb { a } else { b } as usize;
        let base = s * self.adj_cap;
        self.adj[base..base + self.adj_len[s] as usize]
            .iter()
            .copied()
            .find(|&e| {
                let en = &self.entries[e as usize];
                en.seg_a == a && en.seg_b == b
            })
    }

    /// Stage `newcomer_schedule`: entries for new (segment, cell) meetings, queued for processing.
    pub fn newcomer_schedule(&mut self, rules: &dyn PairRules) {
        for s in 0..self.nseg {
            let cb = self.cells[s];
            let pb = self.prev_cells[s];
            if cb.valid() && cb.within(&pb) {
                // No cell of `cb` is new (most segments, most steps).
                continue;
            }
            for z in cb.lo[2]..=cb.hi[2] {
                for y in cb.lo[1]..=cb.hi[1] {
                    for x in cb.lo[0]..=cb.hi[0] {
                        let c = [x, y, z];
                        if pb.contains(c) {
                            continue;
                        }
                        self.stats.newcomers += 1;
                        let h = hash_cell(c, self.bucket_mask);
                        let (b0, b1) = (self.bucket_start[h], self.bucket_start[h + 1]);
                        for it in b0..b1 {
                            let item = self.sorted[it as usize];
                            if item.cell != c || item.seg as usize == s {
                                continue;
                            }
                            let t = item.seg as usize;
                            let (a, b) = if s < t { (s, t) } else { (t, s) };
                            let class = rules.segment_class(a as u32, b as u32);
                            if class == PairClass::All {
                                continue;
                            }
                            if self.find_entry(a as u32, b as u32).is_some() {
                                continue;
                            }
                            let e = match self.free.pop() {
                                Some(e) => e,
                                None => {
                                    self.entries.push(SchedEntry::default());
                                    (self.entries.len() - 1) as u32
                                }
                            };
                            let ticket = self.entries[e as usize].ticket.wrapping_add(1);
                            self.entries[e as usize] = SchedEntry {
                                seg_a: a as u32,
                                seg_b: b as u32,
                                d: -1.0,
                                bin: 0,
                                ticket,
                                flags: ENTRY_LIVE
                                    | if class == PairClass::Mixed {
                                        ENTRY_MIXED
                                    } else {
                                        0
                                    },
                            };
                            self.adj_push(a, e);
                            self.adj_push(b, e);
                            self.live += 1;
                            self.stats.created += 1;
                            self.work.push([e, ticket]);
                        }
                    }
                }
            }
        }
    }

    /// Movement of segment `s` since bin λ's snapshot (λ ≥ 1), cached for the step. Called by the
    /// parallel tasks of `schedule_process`: two that miss on the same slot compute the same value from
    /// the same inputs and store equal bits; the stamp is published after the value.
    fn window(&self, l: u32, s: usize, segments: &[Segment], pos: &[[f32; 4]]) -> Interval {
        if l == 0 {
            return self.mv1[s];
        }
        let slot = &self.win[(l as usize - 1) * self.nseg + s];
        if slot.stamp.load(Ordering::Acquire) == self.step {
            return slot.load();
        }
        let off = (l as usize - 1) * self.npts;
        let w = movement_of(&segments[s], pos, &self.snaps[off..off + self.npts], None);
        slot.store(&w);
        slot.stamp.store(self.step, Ordering::Release);
        w
    }

    /// Prefetches what examining entry `en` reads per segment: movement, reference change of movement,
    /// and the window of its bin.
    #[inline]
    fn prefetch_segment_data(&self, en: &SchedEntry) {
        for s in [en.seg_a as usize, en.seg_b as usize] {
            prefetch(self.mv1.as_ptr().wrapping_add(s));
            prefetch(self.mv2_ref.as_ptr().wrapping_add(s));
            if en.bin > 0 {
                let idx = (en.bin as usize - 1) * self.nseg + s;
                prefetch(self.win.as_ptr().wrapping_add(idx));
            }
        }
    }

    /// Stage `schedule_process`: examine the queued entries, process those whose bound is gone, bin them.
    ///
    /// The queue is sorted by entry and cleared of stale and repeated references, so every entry in it
    /// is examined once; it is then cut into runs of [`PROCESS_TASK`] entries, examined in parallel.
    /// Each run writes only its own entries and collects its touching pairs and re-binnings, which are
    /// appended run by run: the outputs are those of examining the queue in order, whatever the number
    /// of threads.
    pub fn schedule_process(
        &mut self,
        segments: &[Segment],
        pos: &[[f32; 4]],
        rules: &dyn PairRules,
        owner: &dyn Ownership,
    ) {
        let mut work = std::mem::take(&mut self.work);
        // In entry order: neighbouring entries share segments and cache lines, and the bins refill in
        // this order, so next time the lists are nearly sorted already.
        radix_sort_by_entry(&mut work, &mut self.sort_tmp, &mut self.sort_counts);
        // Only live references to the current ticket, each entry once (examining an entry bumps its
        // ticket, so a later reference to it would have been stale).
        let mut kept = 0;
        let mut last = u32::MAX;
        for k in 0..work.len() {
            let [e, t] = work[k];
            let en = &self.entries[e as usize];
            if en.flags & ENTRY_LIVE == 0 || en.ticket != t || e == last {
                continue;
            }
            last = e;
            work[kept] = work[k];
            kept += 1;
        }
        work.truncate(kept);
        let ntasks = work.len().div_ceil(PROCESS_TASK);
        if self.tasks.len() < ntasks {
            self.tasks.resize_with(ntasks, ProcessTask::default);
        }
        let mut tasks = std::mem::take(&mut self.tasks);
        let mut entries = std::mem::take(&mut self.entries);
        let slots = EntryPtr(entries.as_mut_ptr());
        {
            let this = &*self;
            let run = |(task, items): (&mut ProcessTask, &[[u32; 2]])| {
                // SAFETY: the queue names each entry at most once and every name is in bounds, so the
                // runs write disjoint slots and nothing else reads them meanwhile.
                unsafe { this.examine_run(items, slots, task, segments, pos, rules, owner) }
            };
            if ntasks > 1 {
                tasks[..ntasks]
                    .par_iter_mut()
                    .zip(work.par_chunks(PROCESS_TASK))
                    .for_each(run);
            } else {
                tasks[..ntasks]
                    .iter_mut()
                    .zip(work.chunks(PROCESS_TASK))
                    .for_each(run);
            }
        }
        self.entries = entries;
        for task in &tasks[..ntasks] {
            self.touching.extend_from_slice(&task.touching);
            for &[l, e, t] in &task.rebin {
                self.bins[l as usize].push([e, t]);
            }
            self.stats.examined += task.examined;
            self.stats.processed += task.processed;
        }
        self.tasks = tasks;
        self.work = work;
        self.work.clear();
    }

    /// One run of `schedule_process`: examines the entries `items` (whose slots are at `slots`),
    /// recording into `task`.
    ///
    /// # Safety
    /// Every entry named by `items` must be a valid index of the entries behind `slots`, and no other
    /// reference may access those entries while this runs.
    #[allow(clippy::too_many_arguments)]
    unsafe fn examine_run(
        &self,
        items: &[[u32; 2]],
        slots: EntryPtr,
        task: &mut ProcessTask,
        segments: &[Segment],
        pos: &[[f32; 4]],
        rules: &dyn PairRules,
        owner: &dyn Ownership,
    ) {
        let n = self.step;
        let margin = 1e-4 * self.params.radius;
        task.touching.clear();
        task.rebin.clear();
        task.examined = 0;
        task.processed = 0;
        // The loop is bound by memory latency: the queued entries are a sparse subset of a large
        // array and their segments' per-segment data is scattered. Two-stage software prefetch: the
        // entry `2·AHEAD` items ahead, and the per-segment data of the entry `AHEAD` items ahead
        // (whose header is in cache by then).
        const AHEAD: usize = 8;
        for k in 0..items.len() {
            if let Some(w) = items.get(k + 2 * AHEAD) {
                prefetch(slots.0.wrapping_add(w[0] as usize));
            }
            if let Some(w) = items.get(k + AHEAD) {
                self.prefetch_segment_data(&*slots.0.add(w[0] as usize));
            }
            let e = items[k][0];
            let slot = &mut *slots.0.add(e as usize);
            let en = *slot;
            task.examined += 1;
            let (a, b) = (en.seg_a as usize, en.seg_b as usize);
            let mut d = en.d;
            if d < FAR && !self.params.disable.no_movement_update {
                let wa = self.window(en.bin, a, segments, pos);
                let wb = self.window(en.bin, b, segments, pos);
                d -= wa.rel_norm(&wb);
            }
            if d < margin {
                let owned = owner.owned_bits(en.seg_a, en.seg_b);
                d = self.process_entry(&en, &owned, segments, pos, rules, &mut task.touching);
                task.processed += 1;
            }
            // Next bin.
            let m = self.mv1[a].rel_norm(&self.mv1[b]);
            let acc = self.mv2_ref[a].rel_norm(&self.mv2_ref[b]) + self.params.omega;
            let l = bin_for(earliest_contact_steps(d, m, acc), self.params.max_bin);
            let mut dw = d;
            if d < FAR && !n.is_multiple_of(1u64 << l) && !self.params.disable.no_window_correction
            {
                let wa = self.window(l, a, segments, pos);
                let wb = self.window(l, b, segments, pos);
                dw -= wa.rel_norm(&wb);
            }
            slot.d = dw;
            slot.bin = l;
            slot.ticket = slot.ticket.wrapping_add(1);
            task.rebin.push([l, e, slot.ticket]);
        }
    }

    /// Full processing of entry `en`: distances of all its non-excluded pairs not in `owned` (the
    /// contact sets' bitmap for its segment pair, looked up now); touching ones are appended to
    /// `touching`; returns the smallest gap over the others ([`FAR`] if none).
    fn process_entry(
        &self,
        en: &SchedEntry,
        owned: &[u32; 4],
        segments: &[Segment],
        pos: &[[f32; 4]],
        rules: &dyn PairRules,
        touching: &mut Vec<[u32; 2]>,
    ) -> f32 {
        let b = self.params.quadrature;
        let r = self.params.radius;
        let four_r2 = 4.0 * r * r;
        let qa = segments[en.seg_a as usize]
            .cp
            .map(|i| V3::<f32>::from4(pos[i as usize]));
        let qb = segments[en.seg_b as usize]
            .cp
            .map(|i| V3::<f32>::from4(pos[i as usize]));
        let mut yb = [V3::<f32>::zero(); MAX_QUADRATURE as usize];
        for (k, y) in yb.iter_mut().enumerate().take(b as usize) {
            *y = crate::spline::eval(&qb, crate::spline::quad_param(k as u32, b));
        }
        let mut min_d2 = f32::INFINITY;
        let mixed = en.flags & ENTRY_MIXED != 0;
        for ka in 0..b {
            let ya = crate::spline::eval(&qa, crate::spline::quad_param(ka, b));
            for kb in 0..b {
                if bit_set(owned, ka * b + kb) {
                    continue;
                }
                if mixed && rules.excluded(en.seg_a, ka, en.seg_b, kb) {
                    continue;
                }
                let d2 = (ya - yb[kb as usize]).norm2();
                if d2 < four_r2 {
                    touching.push([en.seg_a * b + ka, en.seg_b * b + kb]);
                } else if d2 < min_d2 {
                    min_d2 = d2;
                }
            }
        }
        if min_d2.is_finite() {
            min_d2.sqrt() - 2.0 * r
        } else {
            FAR
        }
    }

    /// Queues for processing at this step every entry holding a pair that a contact set released
    /// (in `old`, not in `new`), with its bound cleared: the bound ignored those pairs.
    fn release_entries(&mut self, released: &[Release]) {
        let b = self.params.quadrature;
        for rel in released {
            let (old, new) = (rel.old, rel.new);
            if old[0] > old[1] || old[2] > old[3] {
                continue;
            }
            // (Clamped to the segments: the list may come from a checkpoint file.)
            let last = self.nseg.saturating_sub(1) as u32;
            for sa in old[0] / b..=(old[1] / b).min(last) {
                for sb in (old[2] / b).max(sa + 1)..=(old[3] / b).min(last) {
                    let ob = box_bits(old, sa, sb, b);
                    let nb = box_bits(new, sa, sb, b);
                    if (0..4).all(|w| ob[w] & !nb[w] == 0) {
                        continue;
                    }
                    let Some(e) = self.find_entry(sa, sb) else {
                        continue;
                    };
                    let en = &mut self.entries[e as usize];
                    en.d = -1.0;
                    self.work.push([e, en.ticket]);
                }
            }
        }
    }
}

/// Checkpoints ([`crate::checkpoint`]): the state that persists from step to step, bit for bit.
///
/// Saved: the step count, the entries (dead slots too: their tickets tell stale bin references
/// apart), the free slots in order, the per-segment adjacency lists in order, the bins, the
/// reference changes of movement, the last cell boxes, the
/// position history (`prev1`, `prev2`) and the bins' position snapshots (each distinct snapshot
/// once; most equal `prev1`, `prev2` or one another). Not saved, because every step recomputes it
/// before reading it: AABBs, movements, the grid (rebuilt on every step on which a segment enters
/// a cell, the only steps that read it), the movement-window cache (keyed by the step number) and
/// the queues' scratch.
impl Scheduler {
    /// Writes the state into `out` (sections `sched.*`).
    pub fn export_state(&self, out: &mut crate::checkpoint::StateWriter) {
        let nb = self.params.max_bin as usize;
        out.put(
            "sched.counts",
            &[
                self.step,
                self.nseg as u64,
                self.npts as u64,
                self.live,
                self.adj_cap as u64,
                self.params.max_bin as u64,
            ],
        );
        out.put("sched.cells", &self.cells);
        out.put("sched.mv2_ref", &self.mv2_ref);
        out.put_points("sched.prev1", &self.prev1);
        out.put_points("sched.prev2", &self.prev2);
        // Snapshot λ is `prev1` (0), `prev2` (1) or distinct snapshot k (2 + k).
        let npts = self.npts;
        let same = |a: &[[f32; 4]], b: &[[f32; 4]]| {
            bytemuck::cast_slice::<_, u8>(a) == bytemuck::cast_slice::<_, u8>(b)
        };
        let mut src = Vec::with_capacity(nb);
        let mut distinct: Vec<[f32; 4]> = Vec::new();
        if self.snaps.len() == nb * npts {
            for l in 0..nb {
                let s = &self.snaps[l * npts..(l + 1) * npts];
                let k = if same(s, &self.prev1) {
                    0
                } else if same(s, &self.prev2) {
                    1
                } else if let Some(k) = (0..distinct.len() / npts.max(1))
                    .find(|&k| same(s, &distinct[k * npts..(k + 1) * npts]))
                {
                    2 + k as u32
                } else {
                    distinct.extend_from_slice(s);
                    1 + (distinct.len() / npts) as u32
                };
                src.push(k);
            }
        }
        out.put("sched.snap_src", &src);
        out.put_points("sched.snaps", &distinct);
        out.put("sched.entries", &self.entries);
        out.put("sched.free", &self.free);
        out.put("sched.adj_len", &self.adj_len);
        let mut adj = Vec::with_capacity(self.adj_len.iter().map(|&l| l as usize).sum());
        for (s, &len) in self.adj_len.iter().enumerate() {
            adj.extend_from_slice(&self.adj[s * self.adj_cap..s * self.adj_cap + len as usize]);
        }
        out.put("sched.adj", &adj);
        let bin_len: Vec<u64> = self.bins.iter().map(|b| b.len() as u64).collect();
        out.put("sched.bin_len", &bin_len);
        let bins: Vec<[u32; 2]> = self.bins.iter().flatten().copied().collect();
        out.put("sched.bins", &bins);
    }

    /// Restores what [`Self::export_state`] wrote into a scheduler made by [`Scheduler::new`] with
    /// the same parameters, for `nseg` segments and `npts` control points. Everything is checked
    /// before anything is changed.
    pub fn import_state(
        &mut self,
        inp: &crate::checkpoint::StateReader,
        nseg: usize,
        npts: usize,
    ) -> Result<(), crate::checkpoint::CheckpointError> {
        use crate::checkpoint::{check_index, check_len, CheckpointError};
        let c = inp.get_len::<u64>("sched.counts", 6)?;
        let (step, s_nseg, s_npts, live, adj_cap, max_bin) = (c[0], c[1], c[2], c[3], c[4], c[5]);
        if max_bin != self.params.max_bin as u64 {
            return Err(CheckpointError::Mismatch {
                what: "contact.max_bin",
                checkpoint: max_bin.to_string(),
                sim: self.params.max_bin.to_string(),
            });
        }
        if step == 0 {
            // Nothing ran yet: the first step sets everything up, as in a fresh scheduler.
            self.step = 0;
            return Ok(());
        }
        if s_nseg != nseg as u64 || s_npts != npts as u64 {
            return Err(CheckpointError::Mismatch {
                what: "the scheduler's segments and points",
                checkpoint: format!("{s_nseg} and {s_npts}"),
                sim: format!("{nseg} and {npts}"),
            });
        }
        let nb = max_bin as usize;
        let cells = inp.get_len::<CellBox>("sched.cells", nseg)?;
        let mv2_ref = inp.get_len::<Interval>("sched.mv2_ref", nseg)?;
        let prev1 = inp.get_points_len("sched.prev1", npts)?;
        let prev2 = inp.get_points_len("sched.prev2", npts)?;
        let src = inp.get_len::<u32>("sched.snap_src", nb)?;
        let distinct = inp.get_points("sched.snaps")?;
        if distinct.len() % npts.max(1) != 0 {
            return Err(CheckpointError::bad(
                "sched.snaps",
                format!(
                    "{} points is not a whole number of snapshots",
                    distinct.len()
                ),
            ));
        }
        let nd = distinct.len() / npts.max(1);
        let mut snaps = Vec::with_capacity(nb * npts);
        for &k in &src {
            check_index("sched.snap_src", "snapshot", k as usize, 2 + nd)?;
            snaps.extend_from_slice(match k {
                0 => &prev1[..],
                1 => &prev2[..],
                k => &distinct[(k as usize - 2) * npts..(k as usize - 1) * npts],
            });
        }
        let entries = inp.get::<SchedEntry>("sched.entries")?;
        let ne = entries.len();
        let mut n_live = 0u64;
        for en in &entries {
            if en.flags & ENTRY_LIVE != 0 {
                n_live += 1;
                check_index("sched.entries", "segment", en.seg_a as usize, nseg)?;
                check_index("sched.entries", "segment", en.seg_b as usize, nseg)?;
                check_index("sched.entries", "bin", en.bin as usize, nb + 1)?;
            }
        }
        if n_live != live {
            return Err(CheckpointError::bad(
                "sched.entries",
                format!("{n_live} live entries, {live} expected"),
            ));
        }
        let free = inp.get::<u32>("sched.free")?;
        let mut listed = vec![false; ne];
        for &e in &free {
            check_index("sched.free", "entry", e as usize, ne)?;
            if entries[e as usize].flags & ENTRY_LIVE != 0 || listed[e as usize] {
                return Err(CheckpointError::bad(
                    "sched.free",
                    format!("entry {e} is live or listed twice"),
                ));
            }
            listed[e as usize] = true;
        }
        let adj_len = inp.get_len::<u32>("sched.adj_len", nseg)?;
        let adj_list = inp.get::<u32>("sched.adj")?;
        let longest = adj_len.iter().copied().max().unwrap_or(0) as u64;
        // The lists start at 16 and double when one is full; a segment meets each other at most
        // once.
        if !adj_cap.is_power_of_two()
            || adj_cap < 16
            || adj_cap < longest
            || adj_cap > (2 * nseg as u64).max(16)
        {
            return Err(CheckpointError::bad(
                "sched.counts",
                format!("adjacency capacity {adj_cap} (longest list {longest})"),
            ));
        }
        let adj_cap = adj_cap as usize;
        check_len(
            "sched.adj",
            adj_list.len(),
            adj_len.iter().map(|&l| l as usize).sum(),
        )?;
        for &e in &adj_list {
            check_index("sched.adj", "entry", e as usize, ne)?;
        }
        let bin_len = inp.get_len::<u64>("sched.bin_len", nb + 1)?;
        let bin_items = inp.get::<[u32; 2]>("sched.bins")?;
        let total = bin_len
            .iter()
            .try_fold(0u64, |acc, &l| acc.checked_add(l))
            .unwrap_or(u64::MAX);
        if total != bin_items.len() as u64 {
            return Err(CheckpointError::bad(
                "sched.bins",
                format!("{} items, {total} expected", bin_items.len()),
            ));
        }
        for &[e, _] in &bin_items {
            check_index("sched.bins", "entry", e as usize, ne)?;
        }
        // All checked: install.
        let mut adj = vec![0u32; nseg * adj_cap];
        let mut at = 0;
        for (s, &len) in adj_len.iter().enumerate() {
            let len = len as usize;
            adj[s * adj_cap..s * adj_cap + len].copy_from_slice(&adj_list[at..at + len]);
            at += len;
        }
        let mut bins = Vec::with_capacity(nb + 1);
        let mut at = 0;
        for &len in &bin_len {
            let len = len as usize;
            bins.push(bin_items[at..at + len].to_vec());
            at += len;
        }
        self.step = step;
        self.nseg = nseg;
        self.npts = npts;
        self.aabb = vec![Interval::default(); nseg];
        self.cells = cells;
        self.prev_cells = vec![CellBox::default(); nseg];
        self.mv1 = vec![Interval::default(); nseg];
        self.mv2 = vec![Interval::default(); nseg];
        self.mv2_ref = mv2_ref;
        self.win = (0..nseg * nb).map(|_| WindowSlot::default()).collect();
        self.prev1 = prev1;
        self.prev2 = prev2;
        self.snaps = snaps;
        self.items.clear();
        self.sorted.clear();
        self.bucket_start.clear();
        self.bucket_mask = 0;
        self.entries = entries;
        self.free = free;
        self.live = live;
        self.adj = adj;
        self.adj_len = adj_len;
        self.adj_cap = adj_cap;
        self.bins = bins;
        self.work.clear();
        self.sort_tmp.clear();
        self.touching.clear();
        self.tasks.clear();
        self.stats = SchedStats::default();
        self.times = SchedTimes::default();
        Ok(())
    }
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

    #[test]
    fn radix_sort_orders_by_entry() {
        let mut x = 12345u32;
        for n in [0usize, 1, 100, 255, 256, 3000, 70000] {
            for range in [7u32, 2048, 1 << 20, u32::MAX] {
                let mut v: Vec<[u32; 2]> = (0..n)
                    .map(|_| {
                        x ^= x << 13;
                        x ^= x >> 17;
                        x ^= x << 5;
                        [x % range.max(1), x % 3]
                    })
                    .collect();
                let mut expect = v.clone();
                expect.sort_unstable();
                let (mut tmp, mut counts) = (Vec::new(), vec![0; RADIX]);
                radix_sort_by_entry(&mut v, &mut tmp, &mut counts);
                assert!(v.windows(2).all(|w| w[0][0] <= w[1][0]));
                v.sort_unstable();
                assert_eq!(v, expect);
            }
        }
    }

    #[test]
    fn bin_for_is_the_floor_of_log2() {
        for l in 1..30u32 {
            let p = (1u64 << l) as f32;
            for k in [
                p,
                p * (1.0 + f32::EPSILON),
                p * (1.0 - f32::EPSILON / 2.0),
                p * 1.5,
            ] {
                let expect = (k as f64).log2().floor() as u32;
                assert_eq!(bin_for(k, 40), expect, "{k}");
                assert_eq!(bin_for(k, 5), expect.min(5), "{k}");
            }
        }
        assert_eq!(bin_for(1.99, 8), 0);
        assert_eq!(bin_for(f32::INFINITY, 8), 8);
        assert_eq!(bin_for(f32::NAN, 8), 0);
    }
}
