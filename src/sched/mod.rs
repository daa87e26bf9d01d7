//! The space-time contact scheduler (seed §5.2, DESIGN §5): finds the quadrature pairs of *empty space*
//! (pairs owned by no contact set) that start touching, without visiting most segment pairs each step.
//!
//! # Buffers
//!
//! Per segment `s` (flat `Pod` arrays of the layout contract, [`crate::layout`]):
//! - `cells[s]`, `prev_cells[s]`: the box of grid cells its AABB padded by `r` covers now and at the
//!   previous step ([`CellBox`], absolute cells measured from an anchor cell fixed at the first step);
//! - `mv1[s]`, `mv2[s]`: per-axis intervals (over the whole segment) of its movement over the last step,
//!   `Δy(t) = Σ_k B_k(t) Δq_k` with `Δq = q^n − q^{n−1}`, and of its change of movement
//!   `Δ²q = q^n − 2q^{n−1} + q^{n−2}`;
//! - `motion[s]` ([`SegmentMotion`]): `mv1`, the reference change of movement `mv2_ref`
//!   (monitoring), and whether the segment is monitored or left a cell this step;
//! - `windows[λ·nseg + s]`: its movement since bin λ's position snapshot (on the CPU, computed on first
//!   use and cached for the step).
//!
//! The entries ([`SchedEntry`], 16 bytes): one table sorted by `(seg_a, seg_b)`, no gaps, each with
//! its distance bound, bin, flags (mixed exclusion class, due) and the touching count of this step.
//! The contact sets are seen through `set_lookup` ([`lookup`]), the touching pairs found go to
//! `touching`.
//!
//! # Stages, in step order (kernel = twin name; the CPU path runs the twins)
//!
//! 1. [`aabb_raster_movement`] (kernel): cell boxes and movement intervals of every segment.
//! 2. [`segment_monitor`] (kernel): the cell box each segment keeps, with hysteresis ([`CELL_MARGIN`]:
//!    last step's while the new box lies within it, else the new box a little wider), so a box face
//!    that jitters across a cell boundary does not make its segment enter and leave cells; a segment
//!    whose change of movement left its reference by more than
//!    `ω/2` is *monitored* (all its entries are examined now) and takes the current value as its new
//!    reference; flags the segments that left a cell.
//! 3. [`grid_build`] (on steps where some segment entered a cell): `(cell, segment)` items
//!    sorted by cell hash ([`grid`]: kernels [`sched_grid_count`] + scan + [`sched_grid_write`] +
//!    radix sort).
//! 4. [`entries_drop`]: compaction keeping the entries whose segments still share a cell (two
//!    segments in disjoint cell sets have disjoint padded boxes: a certificate that they cannot touch).
//! 5. [`newcomer_schedule`] + [`entries_merge`]: each (segment, cell) pair new this step meets the
//!    other segments of the cell; pairs without an entry (sorted, deduplicated, looked up by binary
//!    search) are merged into the table, due now (kernels [`newcomer_count`] + scan +
//!    [`newcomer_write`] + radix sort + [`newcomer_keep`] + scan + [`newcomer_compact`]). With 4 this keeps the invariant *every non-excluded
//!    segment pair sharing a cell has exactly one entry*.
//! 6. [`entries_release`]: entries holding pairs that a contact set gave back last step are flagged
//!    due, with their bound cleared.
//! 7. [`schedule_process`] (kernel; windows from [`segment_windows`], a kernel): every entry
//!    that is due (flagged, monitored segment, or bin λ with `n mod 2^λ = 0`: a computed test, not a
//!    queue) is *examined*: the bound is lowered by the largest relative movement of the two segments
//!    since it was set. If it is still positive the entry is only re-binned; otherwise it is
//!    *processed*: the true distances of its quadrature pairs that no set owns are computed, touching
//!    ones (`d < 2r`) are counted, and the bound becomes the smallest gap `d − 2r` over the others (the
//!    touching ones are about to be owned).
//! 8. [`touching_count`] (the touching counts per 256 entries), [`touching_write`] (each entry's
//!    first slot from those sums and a workgroup scan) (kernels): the touching pairs in table order
//!    (the CPU run collects the same pairs while examining).
//!
//! Kernels with parity tests (tests/gpu_sched.rs) exist for stages 1, 2, 3, 7 and 8, and for 4, 5
//! and 6 in data-parallel form ([`entries_keep`] + scan + [`entries_compact`], the newcomer chain,
//! [`entries_merge_rank`], [`release_count`] + scan + [`release_mark`]; the CPU run uses the
//! sequential stages, checked equal). [`SchedGpu`] ([`gpu`]) runs the whole step as one list of
//! dispatches (tests/gpu_sched_step.rs: over 40 steps, bit-identical to this module's CPU run on
//! lavapipe; on a GPU that fuses multiply-adds, measured on an H200, the distances within a derived
//! tolerance and the bins equal), and ACL's GPU step (`acl::gpu`) drives it.

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

// Negated comparisons (`!(x > 0)`) are deliberate: they also reject NaN. Index loops mirror the
// element-wise kernels.
#![allow(clippy::neg_cmp_op_on_partial_ord, clippy::needless_range_loop)]

mod entries;
pub mod gpu;
pub mod grid;
pub mod lookup;
pub mod lookup_gpu;
mod monitor;
mod newcomers;
mod process;
mod raster;
mod sizes;
mod state;

pub use entries::{
    bins_due, entries_compact, entries_drop, entries_keep, entries_merge, entries_merge_rank,
    entries_release, entry_due, release_count, release_mark, release_rect, release_slots,
};
pub use gpu::{SchedCaps, SchedGpu};
pub use grid::{
    box_cell, box_cell_count, cell_hash, grid_build, sched_grid_count, sched_grid_write, SchedGrid,
    SCHED_GRID_SENTINEL, SCHED_MAX_CELL_RUN,
};
pub use lookup::{
    lookup_words, owned_bits, set_lookup_build, set_lookup_clear, set_lookup_count,
    set_lookup_pack, set_lookup_sort, set_lookup_write, LookupScratch, MAX_LOOKUP,
    MAX_LOOKUP_BUCKET, MAX_LOOKUP_SET, NO_SETS,
};
pub use lookup_gpu::{LookupCaps, LookupGpu};
pub use monitor::segment_monitor;
pub use newcomers::{
    cand_key, cand_key_bits, cand_pair, find_entry, first_new_shared, newcomer_compact,
    newcomer_count, newcomer_emits, newcomer_keep, newcomer_list_compact, newcomer_list_write,
    newcomer_schedule, newcomer_write, pair_class,
};
pub use process::{
    entry_touching, schedule_process, segment_windows, segment_windows_quadrature, touching_count,
    touching_write, ProcessBuffers, ProcessLazy, ProcessSource, ProcessTask, WindowSlot,
    ENTRY_TOUCH, ENTRY_TOUCH_SHIFT, PROCESS_TASK,
};
pub use raster::{aabb_raster_movement, basis_field_bounds, floor_i64};
pub use sizes::{
    release_scan_sizes, reset_counters, sched_history, sched_merged, sched_sizes, sched_start,
    SIZES_MERGED, SIZES_START,
};

use crate::layout::{
    SchedCounters, SchedUniform, SegmentMotion, ERROR_GRID_CELL_FULL, ERROR_GRID_RANGE,
    ERROR_NAN_POSITION,
};
use crate::state::Segment;

/// Largest `b` the `b × b` pair bitmap ([u32; 4]) can hold.
pub const MAX_QUADRATURE: u32 = 11;
/// A segment may cover at most this many grid cells (guards against an exploded state).
pub const MAX_CELLS_PER_SEGMENT: i64 = 1 << 12;
/// The hysteresis of the cell boxes, in units of `r` (at most half a cell): a segment keeps last
/// step's cell box while its box padded by `r` stays within it, and otherwise takes the box padded
/// by `r·(1 + 1/16)` ([`segment_monitor`]). Without it a box face that jitters across a cell
/// boundary makes its segment enter a cell every few steps: the relaxed scarf at rest had a segment
/// entering a cell on 12% of its steps (48 of 399, on the CPU path), each of which runs the grid
/// and newcomer search (on the GPU, nearly every batch then records them); with this margin, none
/// in those 399 steps, for 4% more grid items and 8% more pairs of segments sharing a cell (1/32 r
/// also gave none, 1/8 r costs 10% and 19%).
pub const CELL_MARGIN: f32 = 1.0 / 16.0;
/// Where [`aabb_raster_movement`] notes the margin box in a cell box: bit `a` of `hi[3]` when the
/// box padded by `r` plus the margin starts a cell lower on axis `a`, bit `3 + a` when it ends a
/// cell higher (the margin is at most half a cell, so never more). [`segment_monitor`] reads and
/// clears them.
pub const CELL_MARGIN_BITS: i32 = 0x3f;
/// Bound of an entry with no unowned pair left (never needs processing for distance reasons).
pub const FAR: f32 = f32::MAX;

/// The error a scheduler counters block's flags stand for, the first of: a non-finite control
/// point, a segment over too many cells, a newcomer lookup's full hash run (the GPU step's and the
/// CPU step's counters alike).
pub fn counters_error(c: &SchedCounters) -> Option<SchedError> {
    if c.errors & ERROR_NAN_POSITION != 0 {
        Some(SchedError::NotFinite {
            point: c.first_bad_point as usize,
        })
    } else if c.errors & ERROR_GRID_RANGE != 0 {
        Some(SchedError::TooManyCells {
            seg: c.first_bad_segment as usize,
        })
    } else if c.errors & ERROR_GRID_CELL_FULL != 0 {
        Some(SchedError::CellFull {
            seg: c.first_bad_segment as usize,
        })
    } else {
        None
    }
}

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
    #[error("segment {seg} covers more than {MAX_CELLS_PER_SEGMENT} grid cells, or lies more than 2^30 cells from the cloth's first centre: the cloth exploded or contact.grid_cell is far too small")]
    TooManyCells { seg: usize },
    #[error("a grid cell of segment {seg} shares its hash with more than {SCHED_MAX_CELL_RUN} (cell, segment) items: the cloth is crushed into a few cells, or contact.grid_cell is far too large")]
    CellFull { seg: usize },
    #[error("positions hold {got} points but the topology needs {need}")]
    Size { got: usize, need: usize },
}

pub use crate::layout::{CellBox, Interval, Release, SchedEntry};

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

impl CellBox {
    /// The box with the margin [`aabb_raster_movement`] noted in `hi[3]` ([`CELL_MARGIN_BITS`]),
    /// its bits cleared.
    #[inline]
    pub fn with_margin(&self) -> CellBox {
        let bits = self.hi[3];
        let mut o = *self;
        for a in 0..3 {
            o.lo[a] -= (bits >> a) & 1;
            o.hi[a] += (bits >> (3 + a)) & 1;
        }
        o.hi[3] = 0;
        o
    }
    /// The cell box a segment keeps this step ([`segment_monitor`]): last step's, `prev`, while this
    /// step's box padded by `r` (`self`) is valid and within it, else `self` with its margin.
    #[inline]
    pub fn kept(&self, prev: &CellBox) -> CellBox {
        // (`within` asks `prev` to be valid when `self` is.)
        if self.valid() && self.within(prev) {
            *prev
        } else {
            self.with_margin()
        }
    }
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

/// Entry flag: the two segments are on one yarn and only some of their pairs are excluded.
pub const ENTRY_MIXED: u32 = 1 << 8;
/// Entry flag: examine at this step whatever the bin (new, or released by a contact set).
pub const ENTRY_DUE: u32 = 1 << 9;
/// The bin's bits of [`SchedEntry::bin_flags`].
pub const ENTRY_BIN: u32 = 0xff;

impl SchedEntry {
    /// The bin λ: examined at the steps `n ≡ 0 (mod 2^λ)`.
    #[inline]
    pub fn bin(&self) -> u32 {
        self.bin_flags & ENTRY_BIN
    }
    /// The `(seg_a, seg_b)` sort key.
    #[inline]
    pub fn key(&self) -> u64 {
        ((self.seg_a as u64) << 32) | self.seg_b as u64
    }
}

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

/// The box `[u0, u1, v0, v1]` that holds no pair (a deleted contact set's new box).
pub const EMPTY_BOX: [u32; 4] = [1, 0, 1, 0];

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
    /// The same-yarn exclusion arc (cm): the kernels apply the rule themselves (the CPU run asks the
    /// `PairRules` it is given).
    pub exclusion_arc: f32,
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
    /// Schedule entries after the step.
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
    /// Segments that entered a cell (the grid and the newcomers run only on steps with some).
    pub entered: u64,
    /// Set lookups over [`MAX_LOOKUP`] sets (their entries treated every pair as unowned).
    pub lookup_overflow: u64,
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

/// The integer cell nearest to the centre of mass of the control points (equal masses).
pub fn anchor_of(pos: &[[f32; 4]], cell: f32) -> [i32; 3] {
    let mut c = [0.0f64; 3];
    for p in pos {
        for a in 0..3 {
            c[a] += p[a] as f64;
        }
    }
    let n = pos.len().max(1) as f64;
    let g = cell as f64;
    c.map(|x| {
        let v = (x / n / g).round();
        // (NaN becomes 0: the raster reports the bad point.)
        v.clamp(-1e8, 1e8) as i32
    })
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
    cells: Vec<CellBox>,
    prev_cells: Vec<CellBox>,
    mv1: Vec<Interval>,
    mv2: Vec<Interval>,
    /// The integer cell nearest to the cloth's centre of mass at the first step: cell coordinates are
    /// measured from it (for precision; cells are absolute, so it never needs to move).
    anchor: [i32; 3],
    /// `segment_monitor`'s records: movement, reference change of movement, monitored and left
    /// flags.
    motion: Vec<SegmentMotion>,
    /// `win[(λ−1)·nseg + s]`, valid when its stamp equals the step (λ ≥ 1; λ = 0 is `mv1`).
    win: Vec<WindowSlot>,
    // Positions history.
    prev1: Vec<[f32; 4]>,
    prev2: Vec<[f32; 4]>,
    /// `snaps[(λ−1)·npts + p]`: positions at bin λ's last examination step.
    snaps: Vec<[f32; 4]>,
    grid: SchedGrid,
    /// The basis weights of the quadrature points.
    weights: crate::spline::QuadratureTable,
    /// The entry table, sorted by `(seg_a, seg_b)`.
    entries: Vec<SchedEntry>,
    /// Scratch of `newcomer_schedule`: candidate keys and new entries.
    cand: Vec<u64>,
    fresh: Vec<SchedEntry>,
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
            cells: Vec::new(),
            prev_cells: Vec::new(),
            anchor: [0; 3],
            mv1: Vec::new(),
            mv2: Vec::new(),
            motion: Vec::new(),
            win: Vec::new(),
            prev1: Vec::new(),
            prev2: Vec::new(),
            snaps: Vec::new(),
            grid: SchedGrid::default(),
            weights: crate::spline::QuadratureTable::new(params.quadrature),
            entries: Vec::new(),
            cand: Vec::new(),
            fresh: Vec::new(),
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

    /// The entry table, sorted by `(seg_a, seg_b)`.
    pub fn entries(&self) -> &[SchedEntry] {
        &self.entries
    }

    /// `segment_monitor`'s records of the last step.
    pub fn motion(&self) -> &[SegmentMotion] {
        &self.motion
    }

    /// The bins' position snapshots, `snaps[(λ−1)·npts + p]` for λ = 1..=λ_max.
    pub fn snaps(&self) -> &[[f32; 4]] {
        &self.snaps
    }

    /// The cell box of each segment at the last step.
    pub fn cell_boxes(&self) -> &[CellBox] {
        &self.cells
    }

    /// Per-segment and per-bin buffers for `nseg` segments and `npts` points, all state forgotten.
    fn resize(&mut self, nseg: usize, npts: usize, pos: &[[f32; 4]]) {
        let nb = self.params.max_bin as usize;
        self.nseg = nseg;
        self.npts = npts;
        self.cells = vec![CellBox::default(); nseg];
        self.prev_cells = vec![CellBox::default(); nseg];
        self.mv1 = vec![Interval::default(); nseg];
        self.mv2 = vec![Interval::default(); nseg];
        self.motion = vec![SegmentMotion::default(); nseg];
        self.win = (0..nseg * nb).map(|_| WindowSlot::default()).collect();
        self.prev1 = pos.to_vec();
        self.prev2 = pos.to_vec();
        self.snaps = Vec::with_capacity(npts * nb);
        for _ in 0..nb {
            self.snaps.extend_from_slice(pos);
        }
        self.grid.clear();
        self.entries.clear();
        self.anchor = anchor_of(pos, self.params.cell);
        self.step = 0;
    }

    /// The kernels' uniform for step `n`.
    pub fn uniform(&self, n: u64) -> SchedUniform {
        let p = &self.params;
        let mut switches = 0;
        if p.disable.no_movement_update {
            switches |= crate::layout::SCHED_NO_MOVEMENT_UPDATE;
        }
        if p.disable.no_window_correction {
            switches |= crate::layout::SCHED_NO_WINDOW_CORRECTION;
        }
        if p.disable.no_monitoring {
            switches |= crate::layout::SCHED_NO_MONITORING;
        }
        SchedUniform {
            num_segments: self.nseg as u32,
            num_points: self.npts as u32,
            num_entries: self.entries.len() as u32,
            quadrature: p.quadrature,
            radius: p.radius,
            cell: p.cell,
            inv_cell: 1.0 / p.cell,
            omega: p.omega,
            anchor: [self.anchor[0], self.anchor[1], self.anchor[2], 0],
            step: n as u32,
            bins_due: bins_due(n),
            max_bin: p.max_bin,
            switches,
            exclusion_arc: p.exclusion_arc,
            num_released: 0,
            num_fresh: 0,
            _pad2: 0,
        }
    }

    /// One step of the scheduler with positions `pos`, the contact sets' boxes `set_lookup`
    /// ([`lookup`]) and the boxes they released during the last step: fills [`Self::touching`].
    pub fn detect(
        &mut self,
        segments: &[Segment],
        pos: &[[f32; 4]],
        rules: &dyn PairRules,
        set_lookup: &[u32],
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

        // Raster and movement.
        let t0 = std::time::Instant::now();
        std::mem::swap(&mut self.cells, &mut self.prev_cells);
        let uniform = self.uniform(n);
        let mut counters = SchedCounters {
            first_bad_point: u32::MAX,
            first_bad_segment: u32::MAX,
            ..Default::default()
        };
        aabb_raster_movement(
            &uniform,
            segments,
            pos,
            &self.prev1,
            &self.prev2,
            &mut self.cells,
            &mut self.mv1,
            &mut self.mv2,
            &mut counters,
        );
        if let Some(e) = counters_error(&counters) {
            return Err(e);
        }
        segment_monitor(
            &uniform,
            &self.mv1,
            &self.mv2,
            &mut self.cells,
            &self.prev_cells,
            &mut self.motion,
            &mut counters,
            &mut [],
        );
        self.stats.monitored = counters.monitored as u64;
        let any_left = counters.left > 0;
        self.stats.entered = counters.entered as u64;
        let any_entered = counters.entered > 0;

        // The grid: only `newcomer_schedule` reads it, and only for segments that entered cells, so
        // it is rebuilt only on steps that have such a segment (it is a function of the current cell
        // boxes alone; at rest most steps have none).
        if any_entered {
            grid_build(&self.cells, &mut self.grid);
        }
        // The table: pairs that stopped sharing a cell leave, new meetings come in.
        if any_left {
            self.stats.dropped = entries_drop(&self.cells, &self.motion, &mut self.entries);
        }
        let t1 = std::time::Instant::now();
        if any_entered {
            self.stats.newcomers = newcomer_schedule(
                &self.cells,
                &self.prev_cells,
                &self.grid,
                &self.entries,
                rules,
                &mut self.cand,
                &mut self.fresh,
            )?;
            self.stats.created = self.fresh.len() as u64;
            // Room for a quarter more than ever, so that the steps' fluctuations do not allocate.
            let need = self.entries.len() + self.fresh.len();
            if self.entries.capacity() < need {
                self.entries.reserve(need + need / 4 - self.entries.len());
            }
            entries_merge(&mut self.entries, &self.fresh);
        }
        entries_release(
            released,
            self.params.quadrature,
            self.nseg,
            &mut self.entries,
        );

        // Examination, processing and binning of the due entries.
        let t2 = std::time::Instant::now();
        let mut uniform = uniform;
        uniform.num_entries = self.entries.len() as u32;
        let lazy = ProcessLazy {
            step: n,
            segments,
            pos,
            snaps: &self.snaps,
            win: &self.win,
            motion: &self.motion,
            weights: &self.weights.weights,
            rules,
        };
        let ntasks = schedule_process(
            &uniform,
            &lazy,
            &self.motion,
            set_lookup,
            &mut self.entries,
            &mut counters,
            &mut self.tasks,
            true,
        );
        for task in &self.tasks[..ntasks] {
            self.touching.extend_from_slice(&task.touching);
        }
        self.stats.examined = counters.examined as u64;
        self.stats.processed = counters.processed as u64;
        self.stats.lookup_overflow = counters.lookup_overflow as u64;

        // Snapshots of the bins examined this step, and the position history.
        for l in 1..=self.params.max_bin as usize {
            if n.is_multiple_of(1u64 << l) {
                let off = (l - 1) * self.npts;
                self.snaps[off..off + self.npts].copy_from_slice(pos);
            }
        }
        std::mem::swap(&mut self.prev2, &mut self.prev1);
        self.prev1.copy_from_slice(pos);
        self.stats.tracked = self.entries.len() as u64;
        self.step += 1;
        let t3 = std::time::Instant::now();
        self.times = SchedTimes {
            raster_ms: (t1 - t0).as_secs_f64() * 1e3,
            newcomers_ms: (t2 - t1).as_secs_f64() * 1e3,
            schedule_ms: (t3 - t2).as_secs_f64() * 1e3,
        };
        Ok(())
    }

    /// The entry of segments `a < b`, if any.
    pub fn find_entry(&self, a: u32, b: u32) -> Option<usize> {
        find_entry(&self.entries, a, b)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
