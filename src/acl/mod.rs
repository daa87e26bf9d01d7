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
//! Each stage has its own module: [`sets`] (the set table, its slots and its bin index),
//! [`coalesce`] (`contact_coalesce`, `set_merge`), [`evaluate`], [`rebuild`] (with the model pools)
//! and [`stiction`].
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

mod coalesce;
mod evaluate;
pub mod model;
mod outputs;
mod rebuild;
mod sets;
mod state;
mod stiction;

pub use evaluate::BASIS_ABS_SUM_MAX;
pub use rebuild::{WatchPair, MAX_WATCH};
pub use sets::{
    box_hull, boxes_overlap, padded_box, ContactSet, MERGE_BIN, SET_DIRTY, SET_LIVE, SET_ZERO,
};
pub use stiction::{StictionSpring, SPRING_ACTIVE};

use crate::contact::{ContactError, ContactForce, ContactStats, Exclusion, SegmentExclusion};
use crate::math::{M3, V3};
use crate::polar::quat_to_matrix;
use crate::scene::ContactParams;
use crate::sched::{PairClass, PairRules, Release, SchedParams, Scheduler};
use crate::spline::QuadratureTable;
use crate::state::Topology;
use evaluate::{PoolPtr, EVAL_CHUNK};
use model::SymBlock;
use rayon::prelude::*;
use rebuild::{CompactScratch, RebuildScratch};
use sets::{SetIndex, SetView};

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
    pub(crate) fn quad_point(&self, _topo: &Topology, pos: &[[f32; 4]], i: u32) -> V3<f32> {
        self.quad_point_pos(pos, i)
    }

    #[inline]
    fn quad_point_pos(&self, pos: &[[f32; 4]], i: u32) -> V3<f32> {
        let cp = &self.seg_cp[(i / self.b) as usize];
        let w = &self.table.weights[(i % self.b) as usize];
        let q = cp.map(|c| V3::<f32>::from4(pos[c as usize]));
        q[0] * w[0] + q[1] * w[1] + q[2] * w[2] + q[3] * w[3]
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
            let view = SetView {
                sets: &self.sets,
                index: &self.index,
                b: self.b,
            };
            self.sched
                .detect(&topo.segments, pos, &self.excl, &view, &self.released)
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
