//! Adaptive contact linearization (ACL, seed §4–§5, DESIGN §4): the yarn–yarn penalty contact force as
//! a sum over disjoint *contact sets*, each approximated by a rotated linear model that is rebuilt only
//! when the contact has deformed too much; new contacts come from the space-time scheduler
//! ([`crate::sched`]).
//!
//! # Contact sets
//!
//! A set is a box `[u0, u1] × [v0, v1]` of quadrature indices in `S × S`; its *members* are the pairs
//! `(i, j)` of the box with `i < j` (the upper triangle, so a box may touch the diagonal without ever
//! counting a pair twice). Boxes are kept canonical (`u0 < v1`, rows/columns without members trimmed).
//! Sets are pairwise disjoint (no member pair in two sets) and every touching, non-excluded pair is a
//! member of one (the scheduler guarantees that for pairs outside all sets, and a set keeps its touching
//! pairs inside its box by resizing). Buffers (flat, `Pod`):
//! - `sets`: [`ContactSet`] headers (box, pool offsets, ε, warm-start quaternion, reference centre);
//! - pools indexed by `cp_off + i` for the set's `n` control points: `cp_pool` (global indices),
//!   `f0_pool`, `dbar_pool`, `m_pool`, and the per-step scratch `dev_pool`, `fout_pool`;
//! - `k_pool` indexed by `k_off`: the `n(n+1)/2` symmetric 3×3 blocks of `K̄` (see [`model`]);
//! - `watch_pool` indexed by `w_off`: the set's [`WatchPair`]s (see Invalidation), and parallel to it
//!   `watch_loc_pool`: for each watched pair the set-local indices of the 4 + 4 control points of its two
//!   quadrature points (so `set_evaluate` forms them from the set's already gathered points);
//! - `springs`: 4 [`StictionSpring`]s per set slot.
//!
//! # One step (`add_forces`), in stage order
//!
//! 1. Scheduler (`aabb_raster_movement`, `newcomer_schedule`, `schedule_process`): touching pairs of empty space.
//! 2. `contact_coalesce`: each new touching pair's box `± α` (consecutive ones pre-merged) becomes a new
//!    set, marked dirty; `set_merge` then merges overlapping sets through bins of 8 quadrature indices
//!    along the first axis, cascading until no two sets overlap; merged sets are dirty.
//! 3. `set_evaluate` for every clean set (in parallel: each set writes only its header and its own
//!    ranges of the scratch pools): centre of mass, rotation by warm-started polar decomposition
//!    ([`crate::polar`]), deviation, invalidation; an invalid set becomes dirty, a valid one gets its
//!    corotational force ([`model`]).
//! 4. `set_rebuild` for every dirty set: loops over all member pairs, accumulates the exact force and
//!    stiffness of the touching ones (the contact module's point-level terms), records ε, and resizes the
//!    box to the touching pairs `± α` (pairs leaving the box return to empty space: the scheduler
//!    re-processes their entries). No touching pair: zero force; closest pair beyond
//!    `delete_distance · r`: the set is deleted. Growing boxes may now overlap others: `set_merge` again,
//!    and rebuild what it merged, until nothing is dirty.
//! 5. Forces: each set's force (the model's, or `f0` itself for a set rebuilt this step) is added to
//!    its control points, sets in index order (deterministic); then the stiction springs.
//!
//! With τ = 0 every set that moved at all is rebuilt every step, so the force is the exact one.
//!
//! # Invalidation
//!
//! The seed's metric (eq. 6), `max_i M_i 2r |Δ_i| / ε² > τ`, decides alone when
//! `contact.extra_invalidation = false`. It bounds how far the control points may stray, but not two
//! things that make a linear model of a penalty with a cutoff wrong at first order, and which dominate
//! in knits whose contacts are shallow (closest pairs near `2r`, as the generated swatches relax to):
//! on the falling 4×4 swatch of tests/acl.rs, eq. 6 alone gives a mean relative force error of 65% at
//! τ = 0.04. So by default two more criteria rebuild a set:
//! - *Threshold crossings.* At a rebuild the set records its member pairs closest to `2r` (up to
//!   [`MAX_WATCH`], sorted, with `d − 2r`) and the smallest `|d − 2r|` of the others. Rigid motions keep
//!   distances, so no pair distance changed by more than `2 · 1.25 · max|Δ_i|` (`1.25 = max Σ|B_k|`).
//!   Beyond the unwatched pairs' margin the set is rebuilt; beyond a watched pair's margin that pair is
//!   measured, and the pairs that crossed `2r` (entered: missing from the model; left: the model
//!   extrapolates a spurious force) are charged the force of a pair as deep as they crossed. Rebuild when
//!   that exceeds τ times the set's pair force at the rebuild (any crossing for a zero-force set: a new
//!   contact inside it).
//! - *Force change.* Rebuild when the model's force has moved by more than `2√τ` of the force at the
//!   rebuild (`Σ|K̄Δ| > 2√τ Σ|f0|`): the model's error is second order in that change (for a force
//!   growing as the square of the depth exactly `τ` at the bound), so it bounds the relative error.
//!
//! With them the measured error is 0.013% / 0.2% / 11% at τ = 0.004 / 0.04 / 0.3 (tests/acl.rs).
//!
//! # Stiction springs
//!
//! Four per set, between the member pairs at the fixed fractions (¼, ¾) × (¼, ¾) of the box. A spring
//! holds the two quadrature points at a rest offset `d0` given in the set's rotating frame:
//! `E = ½ k |y_i − y_j − R d0|²` (a plain rest-*length* spring would resist sliding only to second
//! order). When its energy exceeds `contact.stiction_break_energy` it breaks and is re-made at the current
//! offset. Springs are (re)made when a set is created or its box changes. `k = 0` disables them.

// Negated comparisons (`!(x > 0)`) are deliberate: they also reject NaN. Index loops mirror the
// element-wise kernels.
#![allow(clippy::neg_cmp_op_on_partial_ord, clippy::needless_range_loop)]

pub mod model;
mod outputs;
mod state;

use crate::contact::{pair_coeffs, point_pair, Exclusion, SegmentExclusion};
use crate::math::{M3, V3};
use crate::polar::{quat_identity, quat_to_matrix};
use crate::scene::ContactParams;
use crate::sched::{
    prefetch, set_lookup_pack, PairClass, PairRules, Release, SchedParams, Scheduler, EMPTY_BOX,
};
use crate::sim::{ContactError, ContactForce, ContactStats};
use crate::spline::QuadratureTable;
use crate::state::Topology;
use bytemuck::{Pod, Zeroable};
use model::SymBlock;
use rayon::prelude::*;

/// Sets per task of the parallel `set_evaluate` stage.
const EVAL_CHUNK: usize = 256;

/// Width (in quadrature indices along the first axis) of the bins used to find overlapping sets.
pub const MERGE_BIN: u32 = 8;

/// Why ACL cannot run with the given parameters.
#[derive(Debug, thiserror::Error, PartialEq)]
pub enum AclError {
    #[error("contact.tolerance = {0}: must be non-negative and finite")]
    Tolerance(f32),
    #[error("contact.padding = {0}: must be at most 64 quadrature points")]
    Padding(u32),
    #[error("contact.delete_distance = {0}: must be at least 2 (radii) and finite")]
    DeleteDistance(f32),
    #[error("contact.stiffness = {0}: must be non-negative and finite")]
    Stiffness(f32),
    #[error("contact.stiction_stiffness = {0} / stiction_break_energy = {1}: must be non-negative and finite")]
    Stiction(f32, f32),
    #[error("{0}")]
    Sched(#[from] crate::sched::SchedError),
}

impl From<AclError> for ContactError {
    fn from(e: AclError) -> Self {
        match e {
            AclError::Sched(crate::sched::SchedError::NotFinite { point }) => {
                ContactError::NotFinite { point }
            }
            e => ContactError::Other(e.to_string()),
        }
    }
}

/// Set flag: the slot holds a set.
pub const SET_LIVE: u32 = 1;
/// Set flag: the model must be (re)built before use (new, merged, or invalidated).
pub const SET_DIRTY: u32 = 2;
/// Set flag: no touching pair at the last rebuild — the set gives no force.
pub const SET_ZERO: u32 = 4;

/// A contact set's header.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Pod, Zeroable)]
pub struct ContactSet {
    /// `[u0, u1, v0, v1]`, inclusive quadrature indices.
    pub bx: [u32; 4],
    /// Offset of the set's control points in the point pools, and their number.
    pub cp_off: u32,
    pub n_cp: u32,
    /// Offset of the set's blocks in `k_pool` (`n(n+1)/2` of them unless the set is `SET_ZERO`).
    pub k_off: u32,
    pub flags: u32,
    /// ε: the smallest member-pair distance at the last rebuild.
    pub eps: f32,
    /// Touching pairs at the last rebuild.
    pub touching: u32,
    /// Step of the last rebuild.
    pub rebuilt_step: u32,
    /// Watched pairs (the member pairs closest to the contact distance `2r`): offset in `watch_pool`.
    pub w_off: u32,
    pub n_watch: u32,
    /// Smallest `|d − 2r|` over the watched pairs, and over the other member pairs, at the rebuild.
    pub guard_near: f32,
    pub guard_far: f32,
    /// Sum of the touching pairs' force magnitudes at the rebuild (the scale of the crossing budget).
    pub f_ref: f32,
    /// Rotation from the reference frame to the current one, `[x, y, z, w]` (polar warm start).
    pub quat: [f32; 4],
    /// Reference centre of mass `c̄` (w unused).
    pub centre: [f32; 4],
}
const _: () = assert!(std::mem::size_of::<ContactSet>() == 96);

/// A member pair watched for crossing the contact distance.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Pod, Zeroable)]
pub struct WatchPair {
    pub i: u32,
    pub j: u32,
    /// The pair's weight `κw`.
    pub kw: f32,
    /// `d − 2r` at the rebuild (negative: touching). A set's watched pairs are sorted by `|gap|`.
    pub gap: f32,
}
const _: () = assert!(std::mem::size_of::<WatchPair>() == 16);

/// Pairs watched per set.
pub const MAX_WATCH: usize = 32;
/// `max_t Σ_k |B_k(t)| = 1 + max t(1 − t)`: a control-point deviation `δ` moves a curve point by at
/// most `1.25 δ`, so a pair distance changes by at most `2.5 δ`.
pub const BASIS_ABS_SUM_MAX: f32 = 1.25;

/// Spring flag: active.
pub const SPRING_ACTIVE: u32 = 1;

/// A stiction spring between quadrature points `i < j`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Pod, Zeroable)]
pub struct StictionSpring {
    pub i: u32,
    pub j: u32,
    pub flags: u32,
    pub _pad: u32,
    /// Rest offset `d0` of `y_i − y_j` in the set's reference frame (w unused).
    pub rest: [f32; 4],
}
const _: () = assert!(std::mem::size_of::<StictionSpring>() == 32);

/// True when boxes `a` and `b` share a member pair `(i, j)`, `i < j`.
#[inline]
pub fn boxes_overlap(a: &[u32; 4], b: &[u32; 4]) -> bool {
    let (u0, u1) = (a[0].max(b[0]), a[1].min(b[1]));
    let (v0, v1) = (a[2].max(b[2]), a[3].min(b[3]));
    u0 <= u1 && v0 <= v1 && u0 < v1
}

/// Smallest box holding both.
#[inline]
pub fn box_hull(a: &[u32; 4], b: &[u32; 4]) -> [u32; 4] {
    [
        a[0].min(b[0]),
        a[1].max(b[1]),
        a[2].min(b[2]),
        a[3].max(b[3]),
    ]
}

/// `[i − α, i + α] × [j − α, j + α]` clamped to `S = [0, nq)`, trimmed of rows and columns without
/// members.
#[inline]
pub fn padded_box(i0: u32, i1: u32, j0: u32, j1: u32, alpha: u32, nq: u32) -> [u32; 4] {
    let mut bx = [
        i0.saturating_sub(alpha),
        (i1 + alpha).min(nq - 1),
        j0.saturating_sub(alpha),
        (j1 + alpha).min(nq - 1),
    ];
    bx[2] = bx[2].max(bx[0] + 1);
    bx[1] = bx[1].min(bx[3] - 1);
    bx
}

/// Whether member pair `(i, j)` of the box is a pair at all.
#[inline]
fn in_box(bx: &[u32; 4], i: u32, j: u32) -> bool {
    i < j && bx[0] <= i && i <= bx[1] && bx[2] <= j && j <= bx[3]
}

impl PairRules for Exclusion {
    fn segment_class(&self, seg_a: u32, seg_b: u32) -> PairClass {
        match self.segment_exclusion(seg_a, seg_b) {
            SegmentExclusion::Clear => PairClass::Clear,
            SegmentExclusion::All => PairClass::All,
            SegmentExclusion::Mixed => PairClass::Mixed,
        }
    }
    fn excluded(&self, seg_a: u32, k_a: u32, seg_b: u32, k_b: u32) -> bool {
        Exclusion::excluded(self, seg_a, k_a, seg_b, k_b)
    }
}

/// The sets binned by the first axis (bins of [`MERGE_BIN`]), CSR: for merging, and for the
/// scheduler's ownership queries.
#[derive(Debug, Default)]
struct SetIndex {
    start: Vec<u32>,
    items: Vec<u32>,
    fill: Vec<u32>,
}

impl SetIndex {
    fn build(&mut self, sets: &[ContactSet], nq: u32) {
        let nbins = (nq / MERGE_BIN + 1) as usize;
        self.start.clear();
        self.start.resize(nbins + 1, 0);
        for s in sets.iter().filter(|s| s.flags & SET_LIVE != 0) {
            for bin in s.bx[0] / MERGE_BIN..=s.bx[1] / MERGE_BIN {
                self.start[bin as usize + 1] += 1;
            }
        }
        for i in 0..nbins {
            self.start[i + 1] += self.start[i];
        }
        self.items.clear();
        self.items.resize(self.start[nbins] as usize, 0);
        self.fill.clear();
        self.fill.extend_from_slice(&self.start[..nbins]);
        for (k, s) in sets.iter().enumerate() {
            if s.flags & SET_LIVE == 0 {
                continue;
            }
            for bin in s.bx[0] / MERGE_BIN..=s.bx[1] / MERGE_BIN {
                let f = &mut self.fill[bin as usize];
                self.items[*f as usize] = k as u32;
                *f += 1;
            }
        }
    }
}

/// The read-only buffers of the `set_evaluate` stage.
struct EvalCtx<'a> {
    pos: &'a [[f32; 4]],
    cp_pool: &'a [u32],
    f0_pool: &'a [[f32; 4]],
    dbar_pool: &'a [[f32; 4]],
    m_pool: &'a [f32],
    k_pool: &'a [SymBlock<f32>],
    watch_pool: &'a [WatchPair],
    watch_loc_pool: &'a [[u16; 8]],
    weights: &'a [[f32; 4]],
    b: u32,
    r: f32,
    tolerance: f32,
    extra: bool,
}

impl EvalCtx<'_> {
    /// Quadrature point `i` from the set's gathered control points `q` (`loc`: the set-local indices of
    /// its segment's 4 control points); the same arithmetic as the exact path's quadrature points.
    #[inline]
    fn quad_point_local(&self, q: &[V3<f32>], loc: &[u16], i: u32) -> V3<f32> {
        let w = &self.weights[(i % self.b) as usize];
        q[loc[0] as usize] * w[0]
            + q[loc[1] as usize] * w[1]
            + q[loc[2] as usize] * w[2]
            + q[loc[3] as usize] * w[3]
    }

    /// Estimated force error of the watched pairs of set `s` that crossed the contact distance since
    /// the rebuild: for a pair now at distance `d` the force a touching pair has at `2r − |d − 2r|`.
    /// Near `2r` the pair force is linear in the depth, so this is the force of a pair that entered
    /// (missing from the model) and the linear model's spurious force on one that left.
    /// Only pairs with `|gap| ≤ bound` (the largest possible change of a pair distance) can have
    /// crossed; the list is sorted by `|gap|`, so the scan stops at the first farther one.
    /// `q`: the set's control points (current positions).
    fn crossing_error(&self, s: &ContactSet, q: &[V3<f32>], bound: f32) -> f32 {
        let r = self.r;
        let mut err = 0.0f32;
        let range = s.w_off as usize..(s.w_off + s.n_watch) as usize;
        for (w, loc) in self.watch_pool[range.clone()]
            .iter()
            .zip(&self.watch_loc_pool[range])
        {
            if w.gap.abs() > bound {
                break;
            }
            let d = (self.quad_point_local(q, &loc[..4], w.i)
                - self.quad_point_local(q, &loc[4..], w.j))
            .norm();
            if (d < 2.0 * r) != (w.gap < 0.0) {
                let dm = 2.0 * r - (d - 2.0 * r).abs();
                let (_, df, _) = crate::contact::penalty(dm * dm, r);
                err += 2.0 * w.kw * df.abs() * dm;
            }
        }
        err
    }

    /// Hints the CPU to fetch the start of set `s`'s pool ranges (the pools are in allocation order,
    /// not set order, so without it every set starts with a cache miss in each pool).
    #[inline]
    fn prefetch_set(&self, s: &ContactSet, scratch: [PoolPtr; 3]) {
        if s.flags & SET_LIVE == 0 || s.flags & SET_DIRTY != 0 {
            return;
        }
        let (o, w) = (s.cp_off as usize, s.w_off as usize);
        prefetch(self.cp_pool.as_ptr().wrapping_add(o));
        prefetch(self.dbar_pool.as_ptr().wrapping_add(o));
        prefetch(self.m_pool.as_ptr().wrapping_add(o));
        prefetch(self.watch_pool.as_ptr().wrapping_add(w));
        prefetch(self.watch_loc_pool.as_ptr().wrapping_add(w));
        for p in scratch {
            prefetch(p.0.wrapping_add(o));
        }
        if s.flags & SET_ZERO == 0 {
            prefetch(self.f0_pool.as_ptr().wrapping_add(o));
            prefetch(self.k_pool.as_ptr().wrapping_add(s.k_off as usize));
        }
    }

    /// Stage `set_evaluate` for one clean set: rotation (warm-started from and stored back into the
    /// header), deviation, invalidation; when the model is still valid its corotational force into
    /// `fout`. `q`, `dev`, `fout` are the set's ranges of the per-step scratch pools. Returns true when
    /// the set must be rebuilt.
    fn set_evaluate(
        &self,
        s: &mut ContactSet,
        q: &mut [V3<f32>],
        dev: &mut [V3<f32>],
        fout: &mut [V3<f32>],
    ) -> Result<bool, ContactError> {
        let (o, n) = (s.cp_off as usize, s.n_cp as usize);
        for t in 0..n {
            q[t] = V3::from4(self.pos[self.cp_pool[o + t] as usize]);
            fout[t] = V3::from4(self.dbar_pool[o + t]);
        }
        let (c, polar) =
            model::set_rotation(q, fout, s.quat).map_err(|_| ContactError::NotFinite {
                point: self.cp_pool[o] as usize,
            })?;
        s.quat = polar.quat;
        model::set_deviation(q, c, &polar.r, fout, dev);
        let (metric, maxdev) =
            model::set_metric_and_max_deviation(dev, &self.m_pool[o..o + n], self.r, s.eps);
        if !(metric <= self.tolerance) {
            return Ok(true);
        }
        if self.extra {
            // Rigid motions keep distances, so a member pair's distance changed by at most
            // 2 · 1.25 · max|Δ| since the rebuild.
            let bound = 2.0 * BASIS_ABS_SUM_MAX * maxdev;
            if bound >= s.guard_far {
                // An unwatched pair may have crossed 2r.
                return Ok(true);
            }
            if bound >= s.guard_near && self.crossing_error(s, q, bound) > self.tolerance * s.f_ref
            {
                return Ok(true);
            }
        }
        if s.flags & SET_ZERO != 0 {
            fout.fill(V3::zero());
            return Ok(false);
        }
        // f0 into q (no longer needed) as the kernel's input.
        for t in 0..n {
            q[t] = V3::from4(self.f0_pool[o + t]);
        }
        let nk = model::tri_len(n);
        model::corotational_force(
            &polar.r,
            q,
            &self.k_pool[s.k_off as usize..s.k_off as usize + nk],
            dev,
            fout,
        );
        if self.extra {
            // The linear model's change of force since the rebuild, relative to the force then. Its
            // error is second order in that change: for a force growing as the square of the depth,
            // F = b g², a change ΔF = 2bg δ has the error bδ² = ΔF²/(4F), so bounding the relative
            // change by 2√τ bounds the relative error by τ. Beyond it the contact is loading or
            // unloading too far for its linear model: rebuild.
            let (mut change, mut reference) = (0.0f32, 0.0f32);
            for t in 0..n {
                let f0 = polar.r.mul_v(q[t]);
                change += (fout[t] - f0).norm();
                reference += f0.norm();
            }
            if change > 2.0 * self.tolerance.sqrt() * reference {
                return Ok(true);
            }
        }
        Ok(false)
    }
}

/// Raw base pointer of a per-step scratch pool that the parallel `set_evaluate` stage writes at
/// disjoint ranges (each set owns `[cp_off, cp_off + n_cp)`, handed out by the pool allocator).
#[derive(Clone, Copy)]
struct PoolPtr(*mut V3<f32>);
// SAFETY: the pointer is only dereferenced through `range`, at ranges no two sets share.
unsafe impl Send for PoolPtr {}
unsafe impl Sync for PoolPtr {}

impl PoolPtr {
    /// # Safety
    /// `[off, off + n)` must lie inside the pool and no other live reference may overlap it.
    #[allow(clippy::mut_from_ref)]
    unsafe fn range(&self, off: usize, n: usize) -> &mut [V3<f32>] {
        std::slice::from_raw_parts_mut(self.0.add(off), n)
    }
}

/// Counters and times of the last step.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct AclStepStats {
    pub contact_sets: u64,
    pub rebuilds: u64,
    pub rebuild_fraction: f64,
    pub entries_tracked: u64,
    pub entries_examined: u64,
    pub entries_processed: u64,
    pub touching_pairs: u64,
    pub new_pairs: u64,
    pub merges: u64,
    pub deleted: u64,
    pub raster_ms: f64,
    pub newcomers_ms: f64,
    pub schedule_ms: f64,
    pub coalesce_ms: f64,
    pub evaluate_ms: f64,
    pub rebuild_ms: f64,
}

/// The pools' second buffers, for compaction (see `AclContact::compact`).
#[derive(Debug, Default)]
struct CompactScratch {
    cp: Vec<u32>,
    f0: Vec<[f32; 4]>,
    dbar: Vec<[f32; 4]>,
    m: Vec<f32>,
    k: Vec<SymBlock<f32>>,
    watch: Vec<WatchPair>,
    watch_loc: Vec<[u16; 8]>,
}

impl CompactScratch {
    /// Empties the buffers, each with at least the capacity of the pool it will replace.
    fn clear_reserving(&mut self, a: &AclContact) {
        fn prep<T>(v: &mut Vec<T>, cap: usize) {
            v.clear();
            v.reserve(cap);
        }
        prep(&mut self.cp, a.cp_pool.capacity());
        prep(&mut self.f0, a.f0_pool.capacity());
        prep(&mut self.dbar, a.dbar_pool.capacity());
        prep(&mut self.m, a.m_pool.capacity());
        prep(&mut self.k, a.k_pool.capacity());
        prep(&mut self.watch, a.watch_pool.capacity());
        prep(&mut self.watch_loc, a.watch_loc_pool.capacity());
    }
}

/// Scratch of one rebuild (reused).
#[derive(Debug, Default)]
struct RebuildScratch {
    pairs: Vec<[u32; 2]>,
    /// Member pairs of the rebuilt box: `(|d − 2r|, i, j, d)`.
    members: Vec<(f32, u32, u32, f32)>,
    cps: Vec<u32>,
    f: Vec<V3<f64>>,
    k: Vec<SymBlock<f64>>,
}

/// The ACL contact model (`contact.model = "acl"`).
#[derive(Debug)]
pub struct AclContact {
    r: f32,
    params: ContactParams,
    table: QuadratureTable,
    b: u32,
    nq: u32,
    topo_sig: (usize, usize, usize),
    excl: Exclusion,
    /// `ℓ/b` per segment (quadrature weight).
    seg_w: Vec<f32>,
    /// The control points of each segment (a copy of the topology's, for the evaluation stage).
    seg_cp: Vec<[u32; 4]>,
    sched: Scheduler,
    sets: Vec<ContactSet>,
    springs: Vec<StictionSpring>,
    set_free: Vec<u32>,
    // Pools.
    cp_pool: Vec<u32>,
    f0_pool: Vec<[f32; 4]>,
    dbar_pool: Vec<[f32; 4]>,
    m_pool: Vec<f32>,
    k_pool: Vec<SymBlock<f32>>,
    watch_pool: Vec<WatchPair>,
    watch_loc_pool: Vec<[u16; 8]>,
    garbage_cp: usize,
    garbage_k: usize,
    garbage_w: usize,
    // Per-step scratch parallel to the point pools.
    q_pool: Vec<V3<f32>>,
    dev_pool: Vec<V3<f32>>,
    fout_pool: Vec<V3<f32>>,
    index: SetIndex,
    uf: Vec<u32>,
    hulls: Vec<[u32; 4]>,
    multi: Vec<bool>,
    /// Scratch of the pool compaction.
    order: Vec<u32>,
    compact_scratch: CompactScratch,
    scratch: RebuildScratch,
    dirty: Vec<u32>,
    /// Boxes changed this step that gave pairs back to empty space, for the scheduler's next step.
    released: Vec<Release>,
    /// The sets' boxes packed for the scheduler's lookup (`sched::lookup`).
    lookup: Vec<u32>,
    step: u64,
    last: AclStepStats,
}

impl AclContact {
    /// ACL for yarns of radius `radius` with the scene's contact parameters.
    pub fn new(radius: f32, params: &ContactParams) -> Result<Self, AclError> {
        Self::with_sched_switches(radius, params, Default::default())
    }

    /// As [`Self::new`], with scheduler safety rules switched off (tests only).
    pub fn with_sched_switches(
        radius: f32,
        params: &ContactParams,
        disable: crate::sched::SafetyRuleSwitches,
    ) -> Result<Self, AclError> {
        if !(params.tolerance >= 0.0 && params.tolerance.is_finite()) {
            return Err(AclError::Tolerance(params.tolerance));
        }
        if params.padding > 64 {
            return Err(AclError::Padding(params.padding));
        }
        if !(params.delete_distance >= 2.0 && params.delete_distance.is_finite()) {
            return Err(AclError::DeleteDistance(params.delete_distance));
        }
        if !(params.stiffness >= 0.0 && params.stiffness.is_finite()) {
            return Err(AclError::Stiffness(params.stiffness));
        }
        if !(params.stiction_stiffness >= 0.0
            && params.stiction_stiffness.is_finite()
            && params.stiction_break_energy >= 0.0
            && params.stiction_break_energy.is_finite())
        {
            return Err(AclError::Stiction(
                params.stiction_stiffness,
                params.stiction_break_energy,
            ));
        }
        let sched = Scheduler::new(SchedParams {
            exclusion_arc: params.exclusion_arc,
            quadrature: params.quadrature,
            radius,
            cell: params.grid_cell,
            max_bin: params.max_bin,
            omega: params.omega,
            disable,
        })?;
        Ok(AclContact {
            r: radius,
            params: params.clone(),
            table: QuadratureTable::new(params.quadrature),
            b: params.quadrature,
            nq: 0,
            topo_sig: (usize::MAX, 0, 0),
            excl: Exclusion::default(),
            seg_w: Vec::new(),
            seg_cp: Vec::new(),
            sched,
            sets: Vec::new(),
            springs: Vec::new(),
            set_free: Vec::new(),
            cp_pool: Vec::new(),
            f0_pool: Vec::new(),
            dbar_pool: Vec::new(),
            m_pool: Vec::new(),
            k_pool: Vec::new(),
            watch_pool: Vec::new(),
            watch_loc_pool: Vec::new(),
            garbage_cp: 0,
            garbage_k: 0,
            garbage_w: 0,
            q_pool: Vec::new(),
            dev_pool: Vec::new(),
            fout_pool: Vec::new(),
            index: SetIndex::default(),
            uf: Vec::new(),
            hulls: Vec::new(),
            multi: Vec::new(),
            order: Vec::new(),
            compact_scratch: CompactScratch::default(),
            scratch: RebuildScratch::default(),
            dirty: Vec::new(),
            released: Vec::new(),
            lookup: Vec::new(),
            step: 0,
            last: AclStepStats::default(),
        })
    }

    /// Statistics of the last step.
    pub fn last_stats(&self) -> AclStepStats {
        self.last
    }

    /// The set slots (dead ones lack [`SET_LIVE`]).
    pub fn sets(&self) -> &[ContactSet] {
        &self.sets
    }

    /// The live sets' boxes.
    pub fn boxes(&self) -> impl Iterator<Item = [u32; 4]> + '_ {
        self.sets
            .iter()
            .filter(|s| s.flags & SET_LIVE != 0)
            .map(|s| s.bx)
    }

    /// The scheduler (for statistics and tests).
    pub fn scheduler(&self) -> &Scheduler {
        &self.sched
    }

    /// Control points of set `k` and its stored model `(f0, K̄ blocks, d̄, M)`, for tests.
    #[allow(clippy::type_complexity)]
    pub fn set_model(
        &self,
        k: usize,
    ) -> (&[u32], &[[f32; 4]], &[SymBlock<f32>], &[[f32; 4]], &[f32]) {
        let s = &self.sets[k];
        let (o, n) = (s.cp_off as usize, s.n_cp as usize);
        let nk = if s.flags & SET_ZERO != 0 {
            0
        } else {
            model::tri_len(n)
        };
        (
            &self.cp_pool[o..o + n],
            &self.f0_pool[o..o + n],
            &self.k_pool[s.k_off as usize..s.k_off as usize + nk],
            &self.dbar_pool[o..o + n],
            &self.m_pool[o..o + n],
        )
    }

    /// The stiction springs of set slot `k`.
    pub fn springs(&self, k: usize) -> &[StictionSpring] {
        &self.springs[4 * k..4 * k + 4]
    }

    fn prepare(&mut self, topo: &Topology) {
        let sig = (topo.segments.len(), topo.yarns.len(), topo.edges.len());
        if sig == self.topo_sig {
            return;
        }
        self.topo_sig = sig;
        self.excl = Exclusion::new(topo, &self.params);
        self.seg_w = topo
            .segments
            .iter()
            .map(|s| topo.edges[s.edge as usize].rest_length / self.b as f32)
            .collect();
        self.seg_cp = topo.segments.iter().map(|s| s.cp).collect();
        self.nq = topo.segments.len() as u32 * self.b;
        self.sets.clear();
        self.springs.clear();
        self.set_free.clear();
        self.cp_pool.clear();
        self.f0_pool.clear();
        self.dbar_pool.clear();
        self.m_pool.clear();
        self.k_pool.clear();
        self.watch_pool.clear();
        self.watch_loc_pool.clear();
        self.garbage_cp = 0;
        self.garbage_k = 0;
        self.garbage_w = 0;
        self.index = SetIndex::default();
        self.released.clear();
        self.step = 0;
    }

    /// Quadrature point `i` (global index), computed as the exact path does (same weights, same order).
    #[inline]
    fn quad_point(&self, _topo: &Topology, pos: &[[f32; 4]], i: u32) -> V3<f32> {
        self.quad_point_pos(pos, i)
    }

    #[inline]
    fn quad_point_pos(&self, pos: &[[f32; 4]], i: u32) -> V3<f32> {
        let cp = &self.seg_cp[(i / self.b) as usize];
        let w = &self.table.weights[(i % self.b) as usize];
        let q = cp.map(|c| V3::<f32>::from4(pos[c as usize]));
        q[0] * w[0] + q[1] * w[1] + q[2] * w[2] + q[3] * w[3]
    }

    fn new_set(&mut self, bx: [u32; 4]) -> u32 {
        let set = ContactSet {
            bx,
            flags: SET_LIVE | SET_DIRTY,
            quat: quat_identity(),
            ..Default::default()
        };
        let k = match self.set_free.pop() {
            Some(k) => {
                self.sets[k as usize] = set;
                k
            }
            None => {
                self.sets.push(set);
                self.springs
                    .extend_from_slice(&[StictionSpring::default(); 4]);
                (self.sets.len() - 1) as u32
            }
        };
        for s in &mut self.springs[4 * k as usize..4 * k as usize + 4] {
            *s = StictionSpring::default();
        }
        k
    }

    fn free_model(&mut self, k: usize) {
        let s = &mut self.sets[k];
        self.garbage_cp += s.n_cp as usize;
        if s.flags & SET_ZERO == 0 {
            self.garbage_k += model::tri_len(s.n_cp as usize);
        }
        self.garbage_w += s.n_watch as usize;
        s.n_watch = 0;
        s.w_off = 0;
        s.n_cp = 0;
        s.k_off = 0;
        s.cp_off = 0;
    }

    fn delete_set(&mut self, k: usize) {
        self.free_model(k);
        let s = &mut self.sets[k];
        s.flags = 0;
        for sp in &mut self.springs[4 * k..4 * k + 4] {
            *sp = StictionSpring::default();
        }
        self.set_free.push(k as u32);
    }

    /// Stage `contact_coalesce`: new sets around the scheduler's touching pairs (boxes `± α`;
    /// consecutive overlapping boxes are merged on the way, the rest is left to `set_merge`).
    fn contact_coalesce(&mut self) -> u64 {
        let alpha = self.params.padding;
        let nq = self.nq;
        let pairs = std::mem::take(&mut self.scratch.pairs);
        let mut pairs = pairs;
        pairs.clear();
        pairs.extend_from_slice(self.sched.touching());
        let n = pairs.len() as u64;
        let mut cur: Option<[u32; 4]> = None;
        for &[i, j] in &pairs {
            let bx = padded_box(i, i, j, j, alpha, nq);
            match cur {
                Some(c) if boxes_overlap(&c, &bx) => cur = Some(box_hull(&c, &bx)),
                Some(c) => {
                    self.new_set(c);
                    cur = Some(bx);
                }
                None => cur = Some(bx),
            }
        }
        if let Some(c) = cur {
            self.new_set(c);
        }
        self.scratch.pairs = pairs;
        n
    }

    fn uf_find(&mut self, mut x: u32) -> u32 {
        while self.uf[x as usize] != x {
            let p = self.uf[x as usize];
            self.uf[x as usize] = self.uf[p as usize];
            x = p;
        }
        x
    }

    /// Stage `set_merge`: merges overlapping sets (through bins of 8 along the first axis), repeating
    /// until no two sets overlap (a hull may overlap further sets: cascading merges). Merged sets are
    /// dirty. Leaves the bin index up to date. Returns the number of sets merged away.
    fn set_merge(&mut self) -> u64 {
        let mut merged = 0;
        loop {
            self.index.build(&self.sets, self.nq);
            self.uf.clear();
            self.uf.extend(0..self.sets.len() as u32);
            let mut any = false;
            let nbins = self.index.start.len().saturating_sub(1);
            for bin in 0..nbins {
                let (s0, s1) = (
                    self.index.start[bin] as usize,
                    self.index.start[bin + 1] as usize,
                );
                for x in s0..s1 {
                    for y in x + 1..s1 {
                        let (a, b) = (self.index.items[x], self.index.items[y]);
                        if !boxes_overlap(&self.sets[a as usize].bx, &self.sets[b as usize].bx) {
                            continue;
                        }
                        let (ra, rb) = (self.uf_find(a), self.uf_find(b));
                        if ra != rb {
                            // The smaller index survives (deterministic).
                            let (lo, hi) = (ra.min(rb), ra.max(rb));
                            self.uf[hi as usize] = lo;
                            any = true;
                        }
                    }
                }
            }
            if !any {
                return merged;
            }
            // Hull of each component, gathered into its root (the smallest index).
            let n = self.sets.len();
            self.hulls.clear();
            self.hulls.extend(self.sets.iter().map(|s| s.bx));
            self.multi.clear();
            self.multi.resize(n, false);
            for k in 0..n {
                if self.sets[k].flags & SET_LIVE == 0 {
                    continue;
                }
                let root = self.uf_find(k as u32) as usize;
                if root != k {
                    self.hulls[root] = box_hull(&self.hulls[root], &self.sets[k].bx);
                    self.multi[root] = true;
                }
            }
            for k in 0..n {
                if self.sets[k].flags & SET_LIVE == 0 {
                    continue;
                }
                let root = self.uf_find(k as u32) as usize;
                if !self.multi[root] {
                    continue;
                }
                // The hull holds the set's box: no pair is released.
                let hull = self.hulls[root];
                if root != k {
                    self.delete_set(k);
                    merged += 1;
                } else {
                    let s = &mut self.sets[k];
                    s.bx = hull;
                    s.flags |= SET_DIRTY;
                }
            }
        }
    }

    /// Allocates pool space for `n` points (and their blocks unless `zero`); returns `(cp_off, k_off)`.
    fn alloc(&mut self, n: usize, zero: bool) -> (u32, u32) {
        let cp_off = self.cp_pool.len();
        self.cp_pool.resize(cp_off + n, 0);
        self.f0_pool.resize(cp_off + n, [0.0; 4]);
        self.dbar_pool.resize(cp_off + n, [0.0; 4]);
        self.m_pool.resize(cp_off + n, 0.0);
        let k_off = self.k_pool.len();
        if !zero {
            self.k_pool.resize(k_off + model::tri_len(n), [0.0; 6]);
        }
        (cp_off as u32, k_off as u32)
    }

    /// Rewrites the pools with only the live models, in set order, when more than half of them is
    /// garbage. Set order is the order `set_evaluate` walks the sets in: rebuilt models are appended in
    /// rebuild order, so without the reordering the pools drift into an order unrelated to the sets
    /// and every set's evaluation starts with cache misses (measured: the evaluation stage of the bench
    /// scene slowed by a quarter over 800 steps). The pools are written into `compact_scratch` and
    /// swapped with it (both keep their capacity, so steady-state compaction does not allocate).
    fn compact(&mut self) {
        if self.garbage_cp * 2 <= self.cp_pool.len() + 4096
            && self.garbage_k * 2 <= self.k_pool.len() + 65536
            && self.garbage_w * 2 <= self.watch_pool.len() + 4096
        {
            return;
        }
        let mut order = std::mem::take(&mut self.order);
        order.clear();
        order.extend((0..self.sets.len() as u32).filter(|&k| {
            self.sets[k as usize].flags & SET_LIVE != 0 && self.sets[k as usize].n_cp > 0
        }));
        let mut sc = std::mem::take(&mut self.compact_scratch);
        sc.clear_reserving(self);
        for &k in &order {
            let s = &mut self.sets[k as usize];
            let (o, n) = (s.cp_off as usize, s.n_cp as usize);
            s.cp_off = sc.cp.len() as u32;
            sc.cp.extend_from_slice(&self.cp_pool[o..o + n]);
            sc.f0.extend_from_slice(&self.f0_pool[o..o + n]);
            sc.dbar.extend_from_slice(&self.dbar_pool[o..o + n]);
            sc.m.extend_from_slice(&self.m_pool[o..o + n]);
            if s.flags & SET_ZERO != 0 {
                // No blocks; keep the (empty) range inside the pool.
                s.k_off = 0;
            } else {
                let (ko, nk) = (s.k_off as usize, model::tri_len(n));
                s.k_off = sc.k.len() as u32;
                sc.k.extend_from_slice(&self.k_pool[ko..ko + nk]);
            }
            let (wo, nw) = (s.w_off as usize, s.n_watch as usize);
            s.w_off = sc.watch.len() as u32;
            sc.watch.extend_from_slice(&self.watch_pool[wo..wo + nw]);
            sc.watch_loc
                .extend_from_slice(&self.watch_loc_pool[wo..wo + nw]);
        }
        std::mem::swap(&mut self.cp_pool, &mut sc.cp);
        std::mem::swap(&mut self.f0_pool, &mut sc.f0);
        std::mem::swap(&mut self.dbar_pool, &mut sc.dbar);
        std::mem::swap(&mut self.m_pool, &mut sc.m);
        std::mem::swap(&mut self.k_pool, &mut sc.k);
        std::mem::swap(&mut self.watch_pool, &mut sc.watch);
        std::mem::swap(&mut self.watch_loc_pool, &mut sc.watch_loc);
        self.compact_scratch = sc;
        self.order = order;
        self.garbage_cp = 0;
        self.garbage_k = 0;
        self.garbage_w = 0;
    }

    /// Stage `set_rebuild`: the exact model of set `k` at the current positions, and its resize.
    /// Returns false when the set was deleted.
    fn set_rebuild(
        &mut self,
        k: usize,
        topo: &Topology,
        pos: &[[f32; 4]],
    ) -> Result<bool, ContactError> {
        let b = self.b;
        let r = self.r;
        let four_r2 = 4.0 * r * r;
        let old = self.sets[k];
        let bx = old.bx;
        // Pass 1: distances of all member pairs; touching ones recorded.
        let mut pairs = std::mem::take(&mut self.scratch.pairs);
        pairs.clear();
        let mut min_d2 = f32::INFINITY;
        let mut members = std::mem::take(&mut self.scratch.members);
        members.clear();
        let (mut i0, mut i1, mut j0, mut j1) = (u32::MAX, 0u32, u32::MAX, 0u32);
        let mut ya = [V3::<f32>::zero(); crate::sched::MAX_QUADRATURE as usize];
        let mut yb = [V3::<f32>::zero(); crate::sched::MAX_QUADRATURE as usize];
        for sa in bx[0] / b..=bx[1] / b {
            let ka0 = bx[0].max(sa * b) - sa * b;
            let ka1 = bx[1].min(sa * b + b - 1) - sa * b;
            for ka in ka0..=ka1 {
                ya[ka as usize] = self.quad_point(topo, pos, sa * b + ka);
            }
            for sb in (bx[2] / b).max(sa)..=bx[3] / b {
                let class = if sa == sb {
                    PairClass::Mixed
                } else {
                    PairRules::segment_class(&self.excl, sa, sb)
                };
                if class == PairClass::All {
                    continue;
                }
                let kb0 = bx[2].max(sb * b) - sb * b;
                let kb1 = bx[3].min(sb * b + b - 1) - sb * b;
                for kb in kb0..=kb1 {
                    yb[kb as usize] = self.quad_point(topo, pos, sb * b + kb);
                }
                for ka in ka0..=ka1 {
                    let i = sa * b + ka;
                    for kb in kb0..=kb1 {
                        let j = sb * b + kb;
                        if i >= j {
                            continue;
                        }
                        if class == PairClass::Mixed && self.excl.excluded(sa, ka, sb, kb) {
                            continue;
                        }
                        let d2 = (ya[ka as usize] - yb[kb as usize]).norm2();
                        if !d2.is_finite() {
                            return Err(ContactError::NotFinite {
                                point: topo.segments[sa as usize].cp[1] as usize,
                            });
                        }
                        min_d2 = min_d2.min(d2);
                        let d = d2.sqrt();
                        members.push(((d - 2.0 * r).abs(), i, j, d));
                        if d2 < four_r2 {
                            pairs.push([i, j]);
                            i0 = i0.min(i);
                            i1 = i1.max(i);
                            j0 = j0.min(j);
                            j1 = j1.max(j);
                        }
                    }
                }
            }
        }
        let eps = min_d2.sqrt();
        let zero = pairs.is_empty();
        if zero && !(eps <= self.params.delete_distance * r) {
            // Closest pair beyond the delete distance (or no member pair at all): back to empty space.
            self.released.push(Release {
                old: bx,
                new: EMPTY_BOX,
            });
            self.delete_set(k);
            self.scratch.pairs = pairs;
            self.scratch.members = members;
            return Ok(false);
        }
        let new_bx = if zero {
            bx
        } else {
            padded_box(i0, i1, j0, j1, self.params.padding, self.nq)
        };
        // Control points of the new box's segments (sorted, unique).
        let mut cps = std::mem::take(&mut self.scratch.cps);
        cps.clear();
        for range in [
            (new_bx[0] / b, new_bx[1] / b),
            (new_bx[2] / b, new_bx[3] / b),
        ] {
            for s in range.0..=range.1 {
                cps.extend_from_slice(&topo.segments[s as usize].cp);
            }
        }
        cps.sort_unstable();
        cps.dedup();
        let n = cps.len();
        // Pass 2: force and stiffness of the touching pairs, accumulated in f64.
        let mut f_ref = 0.0f64;
        if !zero {
            self.scratch.f.clear();
            self.scratch.f.resize(n, V3::zero());
            self.scratch.k.clear();
            self.scratch.k.resize(model::tri_len(n), [0.0; 6]);
            let stiffness = self.params.stiffness as f64;
            for &[i, j] in &pairs {
                let (sa, sb) = (i / b, j / b);
                let (ka, kb) = (i % b, j % b);
                let seg_a = &topo.segments[sa as usize];
                let seg_b = &topo.segments[sb as usize];
                let wa = self.table.weights[ka as usize].map(|x| x as f64);
                let wb = self.table.weights[kb as usize].map(|x| x as f64);
                let yi = self.quad_point(topo, pos, i).cast::<f64>();
                let yj = self.quad_point(topo, pos, j).cast::<f64>();
                let kw =
                    stiffness * self.seg_w[sa as usize] as f64 * self.seg_w[sb as usize] as f64;
                let Some(pp) = point_pair(yi, yj, kw, r as f64) else {
                    continue;
                };
                let mut loc = [0usize; 8];
                for m in 0..4 {
                    loc[m] = cps.binary_search(&seg_a.cp[m]).unwrap_or(0);
                    loc[4 + m] = cps.binary_search(&seg_b.cp[m]).unwrap_or(0);
                }
                f_ref += pp.grad_i.norm();
                let c = pair_coeffs(&wa, &wb);
                model::accumulate_pair(
                    n,
                    &loc,
                    &c,
                    pp.grad_i,
                    &pp.hess_ii,
                    &mut self.scratch.f,
                    &mut self.scratch.k,
                );
            }
        }
        self.scratch.cps = cps;
        // Rotation of the old reference to now, to carry the springs' rest offsets over.
        let r_old = quat_to_matrix(old.quat);
        // Store the model (the old one becomes garbage; compaction happens between steps, never while
        // the per-step scratch pools are indexed by the current offsets).
        self.free_model(k);
        let (cp_off, k_off) = self.alloc(n, zero);
        let (o, ko) = (cp_off as usize, k_off as usize);
        let mut c = V3::<f64>::zero();
        for (t, &p) in self.scratch.cps.iter().enumerate() {
            self.cp_pool[o + t] = p;
            c += V3::<f64>::from4(pos[p as usize]);
        }
        let c = c / n as f64;
        for t in 0..n {
            let p = self.scratch.cps[t] as usize;
            self.dbar_pool[o + t] = (V3::<f64>::from4(pos[p]) - c).to4(0.0);
            self.f0_pool[o + t] = if zero {
                [0.0; 4]
            } else {
                self.scratch.f[t].to4(0.0)
            };
            if !zero && !self.scratch.f[t].is_finite() {
                return Err(ContactError::NotFinite { point: p });
            }
        }
        if !zero {
            for (t, blk) in self.scratch.k.iter().enumerate() {
                self.k_pool[ko + t] = blk.map(|x| x as f32);
            }
        }
        // Invalidation weights M_i over the new box's two parameter ranges.
        for t in 0..n {
            self.m_pool[o + t] = 0.0;
        }
        for (q0, q1) in [(new_bx[0], new_bx[1]), (new_bx[2], new_bx[3])] {
            for s in q0 / b..=q1 / b {
                let t0 = (q0.max(s * b) - s * b) as f64 / b as f64;
                let t1 = (q1.min(s * b + b - 1) + 1 - s * b) as f64 / b as f64;
                for m in 0..4 {
                    let p = topo.segments[s as usize].cp[m];
                    let l = self.scratch.cps.binary_search(&p).unwrap_or(0);
                    self.m_pool[o + l] += model::basis_abs_integral(m, t0, t1) as f32;
                }
            }
        }
        // Watched pairs: the member pairs of the new box closest to the contact distance.
        members.retain(|m| in_box(&new_bx, m.1, m.2));
        let nw = members.len().min(MAX_WATCH);
        if members.len() > MAX_WATCH {
            members.select_nth_unstable_by(MAX_WATCH - 1, |a, b| a.0.total_cmp(&b.0));
        }
        let guard_near = members[..nw]
            .iter()
            .map(|m| m.0)
            .fold(f32::INFINITY, f32::min);
        let grew = new_bx[0] < bx[0] || new_bx[1] > bx[1] || new_bx[2] < bx[2] || new_bx[3] > bx[3];
        let guard_far = if grew {
            // Pairs of the grown part were not measured (they do not touch, see `set_rebuild`'s
            // caller): look at them at the next step.
            0.0
        } else {
            members[nw..]
                .iter()
                .map(|m| m.0)
                .fold(f32::INFINITY, f32::min)
        };
        members[..nw].sort_unstable_by(|a, b| a.0.total_cmp(&b.0));
        let w_off = self.watch_pool.len();
        for m in &members[..nw] {
            let (sa, sb) = (m.1 / b, m.2 / b);
            self.watch_pool.push(WatchPair {
                i: m.1,
                j: m.2,
                kw: self.params.stiffness * self.seg_w[sa as usize] * self.seg_w[sb as usize],
                gap: m.3 - 2.0 * r,
            });
            // Both segments lie in the new box's ranges, so their control points are the set's.
            let mut loc = [0u16; 8];
            for (k, seg) in [sa, sb].into_iter().enumerate() {
                for c in 0..4 {
                    let p = topo.segments[seg as usize].cp[c];
                    loc[4 * k + c] = self.scratch.cps.binary_search(&p).unwrap_or(0) as u16;
                }
            }
            self.watch_loc_pool.push(loc);
        }
        self.scratch.members = members;
        let box_changed = new_bx != bx || old.flags & SET_DIRTY != 0;
        if new_bx != bx {
            self.released.push(Release {
                old: bx,
                new: new_bx,
            });
        }
        let s = &mut self.sets[k];
        s.bx = new_bx;
        s.cp_off = cp_off;
        s.n_cp = n as u32;
        s.k_off = k_off;
        s.flags = SET_LIVE | if zero { SET_ZERO } else { 0 };
        s.eps = eps;
        s.w_off = w_off as u32;
        s.n_watch = nw as u32;
        s.guard_near = guard_near;
        s.guard_far = guard_far;
        s.f_ref = f_ref as f32;
        s.touching = pairs.len() as u32;
        s.rebuilt_step = self.step as u32;
        s.quat = quat_identity();
        s.centre = c.to4(0.0);
        self.scratch.pairs = pairs;
        // Stiction springs: re-made on a new box, otherwise carried into the new reference frame.
        if self.params.stiction_stiffness > 0.0 {
            if box_changed {
                self.make_springs(k, topo, pos);
            } else {
                for sp in &mut self.springs[4 * k..4 * k + 4] {
                    let d0 = r_old.mul_v(V3::<f32>::from4(sp.rest));
                    sp.rest = d0.to4(0.0);
                }
            }
        }
        Ok(true)
    }

    /// (Re)makes the 4 stiction springs of set `k` at the fixed box fractions, at the current offsets
    /// (the set's reference frame is the current one: called right after a rebuild).
    fn make_springs(&mut self, k: usize, topo: &Topology, pos: &[[f32; 4]]) {
        let bx = self.sets[k].bx;
        let b = self.b;
        for (n, (fu, fv)) in [(0.25f32, 0.25f32), (0.25, 0.75), (0.75, 0.25), (0.75, 0.75)]
            .into_iter()
            .enumerate()
        {
            let i = bx[0] + ((bx[1] - bx[0]) as f32 * fu).round() as u32;
            let j = bx[2] + ((bx[3] - bx[2]) as f32 * fv).round() as u32;
            let ok = in_box(&bx, i, j) && !self.excl.excluded(i / b, i % b, j / b, j % b);
            let d = if ok {
                self.quad_point(topo, pos, i) - self.quad_point(topo, pos, j)
            } else {
                V3::zero()
            };
            self.springs[4 * k + n] = StictionSpring {
                i,
                j,
                flags: if ok { SPRING_ACTIVE } else { 0 },
                _pad: 0,
                rest: d.to4(0.0),
            };
        }
    }

    fn eval_ctx<'a>(&'a self, pos: &'a [[f32; 4]]) -> EvalCtx<'a> {
        EvalCtx {
            pos,
            cp_pool: &self.cp_pool,
            f0_pool: &self.f0_pool,
            dbar_pool: &self.dbar_pool,
            m_pool: &self.m_pool,
            k_pool: &self.k_pool,
            watch_pool: &self.watch_pool,
            watch_loc_pool: &self.watch_loc_pool,
            weights: &self.table.weights,
            b: self.b,
            r: self.r,
            tolerance: self.params.tolerance,
            extra: self.params.extra_invalidation,
        }
    }

    fn stiction_forces(&mut self, topo: &Topology, pos: &[[f32; 4]], force: &mut [[f32; 4]]) {
        let kst = self.params.stiction_stiffness;
        if kst <= 0.0 {
            return;
        }
        let b = self.b;
        for k in 0..self.sets.len() {
            if self.sets[k].flags & SET_LIVE == 0 {
                continue;
            }
            let rot = quat_to_matrix(self.sets[k].quat);
            for n in 0..4 {
                let sp = self.springs[4 * k + n];
                if sp.flags & SPRING_ACTIVE == 0 {
                    continue;
                }
                let d = self.quad_point(topo, pos, sp.i) - self.quad_point(topo, pos, sp.j);
                let x = d - rot.mul_v(V3::from4(sp.rest));
                let energy = 0.5 * kst * x.norm2();
                if energy > self.params.stiction_break_energy {
                    // Broken: re-made at the current offset (in the set's reference frame).
                    self.springs[4 * k + n].rest = rot.transpose().mul_v(d).to4(0.0);
                    continue;
                }
                // Force on y_i is −k x, on y_j +k x, spread through the basis weights.
                let g = x * kst;
                let (si, sj) = (
                    &topo.segments[(sp.i / b) as usize],
                    &topo.segments[(sp.j / b) as usize],
                );
                let (wi, wj) = (
                    self.table.weights[(sp.i % b) as usize],
                    self.table.weights[(sp.j % b) as usize],
                );
                for m in 0..4 {
                    let fi = g * (-wi[m]);
                    let fj = g * wj[m];
                    let (pi, pj) = (si.cp[m] as usize, sj.cp[m] as usize);
                    for a in 0..3 {
                        force[pi][a] += fi.get(a);
                        force[pj][a] += fj.get(a);
                    }
                }
            }
        }
    }

    /// One step of ACL contact: detection, coalescing, evaluation, rebuilds; forces added to `force`.
    pub fn step(
        &mut self,
        topo: &Topology,
        pos: &[[f32; 4]],
        force: &mut [[f32; 4]],
    ) -> Result<AclStepStats, ContactError> {
        self.prepare(topo);
        let mut st = AclStepStats::default();
        // 1. Scheduler.
        {
            // The sets as the scheduler looks them up (their boxes, binned).
            let boxes = self
                .sets
                .iter()
                .filter(|s| s.flags & SET_LIVE != 0)
                .map(|s| s.bx);
            set_lookup_pack(boxes, self.b, self.nq / self.b, &mut self.lookup);
            self.sched
                .detect(
                    &topo.segments,
                    pos,
                    &self.excl,
                    &self.lookup,
                    &self.released,
                )
                .map_err(AclError::from)?;
        }
        self.released.clear();
        let ss = self.sched.stats();
        let stimes = self.sched.times();
        // 2. Coalescing.
        let t0 = std::time::Instant::now();
        st.new_pairs = self.contact_coalesce();
        st.merges += self.set_merge();
        let mut coalesce = t0.elapsed().as_secs_f64();
        // 3. Evaluate clean sets.
        let t1 = std::time::Instant::now();
        self.compact();
        let plen = self.cp_pool.len();
        if self.q_pool.len() < plen {
            self.q_pool.resize(plen, V3::zero());
            self.dev_pool.resize(plen, V3::zero());
            self.fout_pool.resize(plen, V3::zero());
        }
        {
            // Sets in parallel: each reads shared buffers and writes only its header and its own
            // ranges of the scratch pools (the pool allocator hands out disjoint ranges).
            let mut sets = std::mem::take(&mut self.sets);
            let (qp, dp, fp) = (
                PoolPtr(self.q_pool.as_mut_ptr()),
                PoolPtr(self.dev_pool.as_mut_ptr()),
                PoolPtr(self.fout_pool.as_mut_ptr()),
            );
            let ctx = self.eval_ctx(pos);
            // Chunks of sets, each walked in order with the pools of the set 2 ahead prefetched.
            let res = sets.par_chunks_mut(EVAL_CHUNK).try_for_each(|chunk| {
                for k in 0..chunk.len() {
                    if let Some(next) = chunk.get(k + 2) {
                        ctx.prefetch_set(next, [qp, dp, fp]);
                    }
                    let s = &mut chunk[k];
                    if s.flags & SET_LIVE == 0 || s.flags & SET_DIRTY != 0 {
                        continue;
                    }
                    let (o, n) = (s.cp_off as usize, s.n_cp as usize);
                    // SAFETY: live sets own disjoint pool ranges, all inside the pools (resized
                    // above to the point pools' length).
                    let (q, dev, fout) =
                        unsafe { (qp.range(o, n), dp.range(o, n), fp.range(o, n)) };
                    if ctx.set_evaluate(s, q, dev, fout)? {
                        s.flags |= SET_DIRTY;
                    }
                }
                Ok::<(), ContactError>(())
            });
            self.sets = sets;
            res?;
        }
        let mut evaluate = t1.elapsed().as_secs_f64();
        // 4. Rebuilds, and merges of what grew, until nothing is dirty.
        let mut rebuild = 0.0;
        loop {
            let t2 = std::time::Instant::now();
            self.dirty.clear();
            for (k, s) in self.sets.iter().enumerate() {
                if s.flags & SET_LIVE != 0 && s.flags & SET_DIRTY != 0 {
                    self.dirty.push(k as u32);
                }
            }
            if self.dirty.is_empty() {
                break;
            }
            let dirty = std::mem::take(&mut self.dirty);
            for &k in &dirty {
                st.rebuilds += 1;
                if !self.set_rebuild(k as usize, topo, pos)? {
                    st.deleted += 1;
                }
            }
            self.dirty = dirty;
            rebuild += t2.elapsed().as_secs_f64();
            let t3 = std::time::Instant::now();
            st.merges += self.set_merge();
            coalesce += t3.elapsed().as_secs_f64();
        }
        // 5. Forces, in set order.
        let t4 = std::time::Instant::now();
        let step = self.step as u32;
        for k in 0..self.sets.len() {
            let s = self.sets[k];
            if s.flags & SET_LIVE == 0 || s.flags & SET_ZERO != 0 {
                continue;
            }
            let (o, n) = (s.cp_off as usize, s.n_cp as usize);
            let fresh = s.rebuilt_step == step;
            for t in 0..n {
                let f = if fresh {
                    V3::from4(self.f0_pool[o + t])
                } else {
                    self.fout_pool[o + t]
                };
                let p = self.cp_pool[o + t] as usize;
                if !f.is_finite() {
                    return Err(ContactError::NotFinite { point: p });
                }
                force[p][0] += f.x;
                force[p][1] += f.y;
                force[p][2] += f.z;
            }
        }
        self.stiction_forces(topo, pos, force);
        evaluate += t4.elapsed().as_secs_f64();
        // Statistics.
        let live = self.sets.iter().filter(|s| s.flags & SET_LIVE != 0).count() as u64;
        st.contact_sets = live;
        st.rebuild_fraction = if live > 0 {
            st.rebuilds as f64 / live as f64
        } else {
            0.0
        };
        st.entries_tracked = ss.tracked;
        st.entries_examined = ss.examined;
        st.entries_processed = ss.processed;
        st.touching_pairs = self
            .sets
            .iter()
            .filter(|s| s.flags & SET_LIVE != 0)
            .map(|s| s.touching as u64)
            .sum();
        st.raster_ms = stimes.raster_ms;
        st.newcomers_ms = stimes.newcomers_ms;
        st.schedule_ms = stimes.schedule_ms;
        st.coalesce_ms = coalesce * 1e3;
        st.evaluate_ms = evaluate * 1e3;
        st.rebuild_ms = rebuild * 1e3;
        self.last = st;
        self.step += 1;
        Ok(st)
    }
}

impl ContactForce for AclContact {
    fn add_forces(
        &mut self,
        topo: &Topology,
        pos: &[[f32; 4]],
        _vel: &[[f32; 4]],
        force: &mut [[f32; 4]],
        stats: &mut ContactStats,
    ) -> Result<(), ContactError> {
        let st = self.step(topo, pos, force)?;
        stats.set("contact_sets", st.contact_sets as f64);
        stats.set("rebuilds", st.rebuilds as f64);
        stats.set("rebuild_fraction", st.rebuild_fraction);
        stats.set("entries_tracked", st.entries_tracked as f64);
        stats.set("entries_examined", st.entries_examined as f64);
        stats.set("entries_processed", st.entries_processed as f64);
        stats.set("touching_pairs", st.touching_pairs as f64);
        stats.set("raster_ms", st.raster_ms);
        stats.set("newcomers_ms", st.newcomers_ms);
        stats.set("schedule_ms", st.schedule_ms);
        stats.set("coalesce_ms", st.coalesce_ms);
        stats.set("evaluate_ms", st.evaluate_ms);
        stats.set("rebuild_ms", st.rebuild_ms);
        stats.set(
            "contact_ms",
            st.raster_ms
                + st.newcomers_ms
                + st.schedule_ms
                + st.coalesce_ms
                + st.evaluate_ms
                + st.rebuild_ms,
        );
        Ok(())
    }

    // Rebuild counts and the contact matrix live in `acl/outputs.rs`.
    fn add_step_rebuilds(&mut self, topo: &Topology, counts: &mut [f32]) -> bool {
        self.count_step_rebuilds(topo, counts)
    }

    fn contact_pairs(
        &mut self,
        topo: &Topology,
        pos: &[[f32; 4]],
        touching: &mut Vec<[u32; 2]>,
        boxes: &mut Vec<[u32; 4]>,
    ) -> Result<bool, ContactError> {
        self.touching_pairs_and_boxes(topo, pos, touching, boxes)
    }

    // The checkpoint state lives in `acl/state.rs`.
    fn export_state(
        &self,
        out: &mut crate::checkpoint::StateWriter,
    ) -> Result<(), crate::checkpoint::CheckpointError> {
        self.export_checkpoint(out);
        Ok(())
    }

    fn import_state(
        &mut self,
        topo: &Topology,
        num_points: usize,
        inp: &crate::checkpoint::StateReader,
    ) -> Result<(), crate::checkpoint::CheckpointError> {
        self.import_checkpoint(topo, num_points, inp)
    }
}

/// Rotation matrix of a set's stored quaternion (for tests and diagnostics).
pub fn set_rotation_matrix(s: &ContactSet) -> M3<f32> {
    quat_to_matrix(s.quat)
}
