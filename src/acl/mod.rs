//! Adaptive contact linearization (ACL, seed §4–§5, DESIGN §4): the yarn–yarn penalty contact force as
//! a sum over disjoint *contact sets*, each approximated by a rotated linear model that is rebuilt only
//! when the contact has deformed too much; new contacts come from the space-time scheduler
//! ([`crate::sched`]). This module holds the model's state and the step driver; each stage is a free
//! function in its own module, taking the buffers it reads and writes in the order a GPU kernel
//! would bind them.
//!
//! # Buffers (flat, `Pod`)
//!
//! - `sets`: [`ContactSet`] headers (box, pool offsets, ε, warm-start quaternion, reference centre),
//!   all live between steps, in a deterministic order ([`sets`]);
//! - `springs`: 4 [`StictionSpring`]s per set ([`stiction`]);
//! - the model pools ([`rebuild::Pools`]), indexed by the headers' offsets: `cp_pool` (global control
//!   point indices), `f0_pool`, `dbar_pool`, `m_pool` per control point, `k_pool` (the `n(n+1)/2`
//!   symmetric 3×3 blocks of `K̄`, see [`model`]), `watch_pool` and `watch_loc_pool` (the watched
//!   pairs, see [`evaluate`]); and parallel to the point pools the per-step scratch `q_pool` (CPU
//!   only), `dev_pool`, `fout_pool` (`[f32; 4]`, w = 0, as the kernels bind them).
//!
//! Sets are pairwise disjoint (no member pair in two sets) and every touching, non-excluded pair is
//! a member of one (the scheduler guarantees that for pairs outside all sets, and a set keeps its
//! touching pairs inside its box by resizing).
//!
//! # One step (`add_forces`), in stage order
//!
//! 1. Scheduler (`aabb_raster_movement`, `newcomer_schedule`, `schedule_process`): touching pairs of
//!    empty space. It sees the sets through their packed boxes (`sched::lookup`) and the boxes that
//!    gave pairs back during the previous step.
//! 2. [`coalesce`]: `contact_coalesce` makes new sets of the touching pairs, `set_merge` merges
//!    overlapping sets (connected components by min-label propagation) until no two overlap; each
//!    pass is a GPU kernel with its twin there, and [`merge_gpu`] records the kernels.
//! 3. [`evaluate`]: `set_evaluate` for every clean set, in parallel: rotation, deviation,
//!    invalidation, and the corotational force of a still-valid model.
//! 4. [`rebuild`]: the dirty list (`set_dirty_count` → scan → `set_dirty_write`, see [`sets`]),
//!    then `set_rebuild_size` → `pool_alloc` (with the releases) → `set_rebuild` for the dirty sets,
//!    in parallel; then `set_merge` again (grown boxes may overlap) and rebuild what it merged, until
//!    nothing is dirty.
//! 5. [`stiction`]: `stiction_forces` adds the springs' forces into their sets' force ranges;
//!    [`gather`]: `set_point_table` and `set_gather` add the sets' forces to the control points.
//! 6. [`sets`]: `set_compact` removes deleted and merged-away sets; `pool_compact` when the pools
//!    are mostly garbage; the bin index of the final sets for the next step's scheduler.
//!
//! Every stage's output is independent of the number of threads (bitwise): parallel passes write
//! disjoint outputs, sizes become offsets by prefix sums in a fixed order, and the few scatters
//! are order-free reductions (min, max).

// Negated comparisons (`!(x > 0)`) are deliberate: they also reject NaN. Index loops mirror the
// element-wise kernels.
#![allow(clippy::neg_cmp_op_on_partial_ord, clippy::needless_range_loop)]

pub mod coalesce;
pub mod counts;
pub mod evaluate;
pub mod gather;
pub mod gpu;
pub mod merge_gpu;
pub mod model;
pub mod outputs;
pub mod pages;
pub mod rebuild;
pub mod sets;
mod state;
pub mod stiction;

pub use evaluate::BASIS_ABS_SUM_MAX;
pub use rebuild::{WatchLoc, WatchPair, MAX_WATCH};
pub use sets::{
    box_hull, boxes_overlap, padded_box, ContactSet, SetIndex, MERGE_BIN, SET_DIRTY, SET_LIVE,
    SET_MOVED, SET_ZERO,
};
pub use stiction::{StictionSpring, SPRING_ACTIVE};

use crate::contact::{ContactError, ContactForce, ContactStats, Exclusion, SegmentExclusion};
use crate::layout::{
    AclCounters, AclUniform, LookupUniform, ACL_ERROR_NOT_FINITE, ACL_EXTRA_INVALIDATION,
};
use crate::math::{M3, V3};
use crate::polar::quat_to_matrix;
use crate::scene::ContactParams;
use crate::sched::{
    set_lookup_build, LookupScratch, PairClass, PairRules, Release, SchedParams, Scheduler,
};
use crate::spline::QuadratureTable;
use crate::state::Topology;
use coalesce::MergeScratch;
use model::SymBlock;
use rebuild::{PoolGarbage, Pools, RebuildParams, RebuildPlan, RebuildScratch, RebuildTables};
use std::sync::Mutex;

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

/// A non-finite force (`ACL_ERROR_NOT_FINITE`) by its control point: where a set's rotation was not
/// finite (`set_force` names the lowest such set), that set's first control point, which
/// `set_point_write` finds and the CPU step names too ([`evaluate::set_evaluate_and_force`]); else
/// the lowest point whose gathered force was not. (By the set, where no point was found.)
pub fn not_finite_error(c: &AclCounters) -> ContactError {
    match (c.first_bad_point, c.first_bad_set) {
        (u32::MAX, set) if set != u32::MAX => ContactError::Other(format!(
            "the rotation of contact set {set} is not finite (yarns passed through each other or \
             the time step is too large)"
        )),
        (point, _) => ContactError::NotFinite {
            point: point as usize,
        },
    }
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

/// A buffer that the tasks of a parallel pass write at disjoint ranges (each set owns its pool
/// ranges, handed out by a prefix sum; each dirty set its header). Only the ranges are checked;
/// that no two tasks touch the same element is the caller's promise.
pub(crate) struct SyncPtr<T> {
    ptr: *mut T,
    len: usize,
}

impl<T> Clone for SyncPtr<T> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<T> Copy for SyncPtr<T> {}
// SAFETY: the pointer is only dereferenced through `slice` / `write`, at ranges no two tasks share.
unsafe impl<T: Send> Send for SyncPtr<T> {}
unsafe impl<T: Send> Sync for SyncPtr<T> {}

impl<T> SyncPtr<T> {
    pub(crate) fn new(s: &mut [T]) -> Self {
        SyncPtr {
            ptr: s.as_mut_ptr(),
            len: s.len(),
        }
    }

    /// The base pointer (for prefetching).
    pub(crate) fn ptr(&self) -> *const T {
        self.ptr
    }

    /// # Safety
    /// No other live reference may overlap `[off, off + n)` (which must lie inside the buffer:
    /// checked), and the buffer must outlive the returned slice.
    #[allow(clippy::mut_from_ref)]
    pub(crate) unsafe fn slice(&self, off: usize, n: usize) -> &mut [T] {
        assert!(off.checked_add(n).is_some_and(|e| e <= self.len));
        std::slice::from_raw_parts_mut(self.ptr.add(off), n)
    }

    /// Copies `src` to `[off, off + src.len())` (which must lie inside the buffer: checked), without
    /// reading the destination (it may be uninitialized).
    ///
    /// # Safety
    /// No other task may read or write that range meanwhile.
    pub(crate) unsafe fn copy_to(&self, off: usize, src: &[T]) {
        assert!(off.checked_add(src.len()).is_some_and(|e| e <= self.len));
        std::ptr::copy_nonoverlapping(src.as_ptr(), self.ptr.add(off), src.len());
    }

    /// # Safety
    /// As [`Self::slice`] for the single element `i`.
    pub(crate) unsafe fn write(&self, i: usize, v: T) {
        self.slice(i, 1)[0] = v;
    }
}

/// One scratch value per worker thread of the pool a parallel pass runs in (by
/// [`rayon::current_thread_index`]); results never depend on which scratch a task gets.
#[derive(Debug, Default)]
pub struct ThreadScratch<T> {
    slots: Vec<Mutex<T>>,
}

impl<T: Default> ThreadScratch<T> {
    /// One slot per thread of the current pool (allocates only when the pool is larger than before).
    pub fn ensure(&mut self) {
        let n = rayon::current_num_threads().max(1);
        while self.slots.len() < n {
            self.slots.push(Mutex::new(T::default()));
        }
    }

    /// Runs `f` with the calling worker's scratch. (Tasks never nest, so a slot is never locked
    /// twice; a thread outside the pool uses the last slot.)
    pub fn with<R>(&self, f: impl FnOnce(&mut T) -> R) -> R {
        let i = rayon::current_thread_index().unwrap_or(self.slots.len() - 1);
        let mut g = self.slots[i.min(self.slots.len() - 1)]
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        f(&mut g)
    }
}

/// Grows each per-step scratch pool to at least `n` entries (keeping its capacity).
fn grow_scratch(
    n: usize,
    q_pool: &mut Vec<V3<f32>>,
    dev_pool: &mut Vec<[f32; 4]>,
    fout_pool: &mut Vec<[f32; 4]>,
) {
    if q_pool.len() < n {
        q_pool.resize(n, V3::zero());
    }
    for p in [dev_pool, fout_pool] {
        if p.len() < n {
            p.resize(n, [0.0; 4]);
        }
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
    /// 1 when some segment entered a cell this step (the scheduler's grid and newcomer search
    /// ran), else 0.
    pub newcomer_steps: u64,
    pub touching_pairs: u64,
    pub new_pairs: u64,
    pub merges: u64,
    pub deleted: u64,
    /// Rebuild rounds that had dirty sets (the GPU step records a budget of rounds and reruns
    /// a step that needs more: `acl_sizes.rounds_used` is the same count).
    pub rebuild_rounds: u64,
    /// The most overlap searches one merge invocation of the step ran (coalescing's, each
    /// round's): the merge passes the GPU step must record for it to end.
    pub merge_passes: u64,
    pub raster_ms: f64,
    pub newcomers_ms: f64,
    pub schedule_ms: f64,
    pub coalesce_ms: f64,
    pub evaluate_ms: f64,
    pub rebuild_ms: f64,
    /// `layout::ACL_SIZES_LOOKUP_*` bits of this step's set lookup (a set or a segment beyond the
    /// lookup's bounds: those pairs were treated as unowned).
    pub lookup_errors: u64,
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
    /// The control points of each segment (a copy of the topology's, for the stages).
    seg_cp: Vec<[u32; 4]>,
    sched: Scheduler,
    sets: Vec<ContactSet>,
    springs: Vec<StictionSpring>,
    pools: Pools,
    /// Pool entries no live set uses.
    garbage: PoolGarbage,
    // Per-step scratch parallel to the point pools.
    q_pool: Vec<V3<f32>>,
    dev_pool: Vec<[f32; 4]>,
    fout_pool: Vec<[f32; 4]>,
    index: SetIndex,
    merge: MergeScratch,
    /// The compactions' second buffers and offsets.
    sets_next: Vec<ContactSet>,
    springs_next: Vec<StictionSpring>,
    /// Group sums of the set table per 256 slots: its live sets for the compaction
    /// (`sets::live_groups`), its dirty sets for each round's dirty list (`sets::set_dirty_count`).
    set_groups: Vec<u32>,
    pools_next: Pools,
    pool_dest: Vec<u32>,
    scan_partials: Vec<u32>,
    /// The rebuild passes' dirty list (and its scanned counts), plans and watched-pair slots.
    dirty: Vec<u32>,
    dirty_dest: Vec<u32>,
    plans: Vec<RebuildPlan>,
    plan_watch: Vec<WatchPair>,
    plan_watch_loc: Vec<WatchLoc>,
    /// The pool allocation's group sums (`pool_alloc_size`: the pools' sizes and the round's
    /// releases per 256 dirty sets) and the rebuild's pair terms.
    alloc_groups: Vec<rebuild::AllocGroup>,
    rebuild_terms: Vec<rebuild::RebuildTerm>,
    rebuild_scratch: ThreadScratch<RebuildScratch>,
    /// The point → record table of the gather (each point's first record and count, the
    /// `(set, pool index)` records), and its per-run counts.
    point_hist: Vec<u32>,
    point_start: Vec<u32>,
    point_count: Vec<u32>,
    point_records: Vec<[u32; 2]>,
    /// Boxes changed this step that gave pairs back to empty space, for the scheduler's next step.
    released: Vec<Release>,
    /// The sets' boxes packed for the scheduler's lookup (`sched::lookup`).
    lookup: Vec<u32>,
    lookup_scratch: LookupScratch,
    /// The exact grid search of [`ContactForce::contact_pairs`] (the pass-through check's, once a
    /// frame), made at its first call and kept with its tables of the topology (the exclusion
    /// table above all), its buffers sized by the contacts freed after each call. A fresh search
    /// each call made the check of the afghan as built 1.6–1.8 s on 2 cores, against 1.0–1.1 s now,
    /// at 0.18 GB more peak memory (1.02 against 0.83 GB, the cloth and two checks); the scarf's
    /// 50–58 ms against 45–50.
    pairs_search: Option<Box<crate::contact::ExactContact>>,
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
            pools: Pools::default(),
            garbage: PoolGarbage::default(),
            q_pool: Vec::new(),
            dev_pool: Vec::new(),
            fout_pool: Vec::new(),
            index: SetIndex::default(),
            merge: MergeScratch::default(),
            sets_next: Vec::new(),
            springs_next: Vec::new(),
            set_groups: Vec::new(),
            pools_next: Pools::default(),
            pool_dest: Vec::new(),
            scan_partials: Vec::new(),
            dirty: Vec::new(),
            dirty_dest: Vec::new(),
            plans: Vec::new(),
            plan_watch: Vec::new(),
            plan_watch_loc: Vec::new(),
            alloc_groups: Vec::new(),
            rebuild_terms: Vec::new(),
            rebuild_scratch: ThreadScratch::default(),
            point_hist: Vec::new(),
            point_start: Vec::new(),
            point_count: Vec::new(),
            point_records: Vec::new(),
            released: Vec::new(),
            lookup: Vec::new(),
            lookup_scratch: LookupScratch::default(),
            pairs_search: None,
            step: 0,
            last: AclStepStats::default(),
        })
    }

    /// Statistics of the last step.
    pub fn last_stats(&self) -> AclStepStats {
        self.last
    }

    /// The sets (between steps all live, see [`sets`]).
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

    /// The boxes the sets released since the last step: what the next step's scheduler receives
    /// (for tests that drive a scheduler alongside).
    pub fn released(&self) -> &[Release] {
        &self.released
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
        let nk = rebuild::model_sizes(s)[1];
        let p = &self.pools;
        (
            &p.cp[o..o + n],
            &p.f0[o..o + n],
            &p.k[s.k_off as usize..s.k_off as usize + nk],
            &p.dbar[o..o + n],
            &p.m[o..o + n],
        )
    }

    /// The `acl` uniform of the per-step force stages for `num_points` control points.
    pub fn uniform(&self, num_points: usize) -> AclUniform {
        let mut u = AclUniform {
            quadrature: self.b,
            num_sets: self.sets.len() as u32,
            num_points: num_points as u32,
            flags: if self.params.extra_invalidation {
                ACL_EXTRA_INVALIDATION
            } else {
                0
            },
            radius: self.r,
            tolerance: self.params.tolerance,
            stiction_stiffness: self.params.stiction_stiffness,
            stiction_break_energy: self.params.stiction_break_energy,
            record_capacity: 0,
            ..Default::default()
        };
        for (w, t) in u.weights.iter_mut().zip(&self.table.weights) {
            *w = *t;
        }
        u
    }

    /// The model pools (read-only, for tests and the GPU parity fixtures).
    pub fn pools(&self) -> &Pools {
        &self.pools
    }

    /// All sets' stiction springs, 4 per set (for tests).
    pub fn all_springs(&self) -> &[StictionSpring] {
        &self.springs
    }

    /// The per-step pools of the last step: deviations and the sets' forces (for tests).
    pub fn step_pools(&self) -> (&[[f32; 4]], &[[f32; 4]]) {
        (&self.dev_pool, &self.fout_pool)
    }

    /// The segments' control points as the stages read them (`seg_cp`).
    pub fn seg_cp(&self) -> &[[u32; 4]] {
        &self.seg_cp
    }

    /// The stiction springs of set `k`.
    pub fn springs(&self, k: usize) -> &[StictionSpring] {
        &self.springs[4 * k..4 * k + 4]
    }

    pub(crate) fn prepare(&mut self, topo: &Topology) {
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
        self.pools.clear();
        self.garbage = PoolGarbage::default();
        self.index.clear();
        self.released.clear();
        self.step = 0;
    }

    /// The static tables the GPU stages read, for topology `topo` (the model is prepared for it, as
    /// its first step would): the quadrature basis weights, each quadrature point's arc position, and
    /// per segment its weight `ℓ/b` and closed-loop length.
    pub fn gpu_tables(
        &mut self,
        topo: &Topology,
    ) -> (Vec<[f32; 4]>, Vec<f32>, Vec<crate::layout::SegmentContact>) {
        self.prepare(topo);
        let seg_contact = (0..self.seg_w.len())
            .map(|s| crate::layout::SegmentContact {
                weight: self.seg_w[s],
                loop_len: self.excl.loop_len(s as u32),
                _pad: [0; 2],
            })
            .collect();
        (
            self.table.weights.clone(),
            self.excl.quad_arc().to_vec(),
            seg_contact,
        )
    }

    /// The `rebuild` uniform at step `step` with `num_dirty` dirty sets.
    pub(crate) fn rebuild_params(&self, step: u32, num_dirty: u32) -> RebuildParams {
        RebuildParams {
            b: self.b,
            nq: self.nq,
            r: self.r,
            padding: self.params.padding,
            delete_distance: self.params.delete_distance,
            stiffness: self.params.stiffness,
            stiction_stiffness: self.params.stiction_stiffness,
            step,
            num_sets: self.sets.len() as u32,
            num_dirty,
            exclusion_arc: self.params.exclusion_arc,
            _pad: 0,
        }
    }

    /// Grows the per-step scratch pools to the point pools' length (their contents are written
    /// before they are read).
    fn size_scratch_pools(&mut self) {
        grow_scratch(
            self.pools.cp.len(),
            &mut self.q_pool,
            &mut self.dev_pool,
            &mut self.fout_pool,
        );
    }

    /// Stage `set_merge` on the table, with the garbage of the merged-away models counted.
    fn merge(&mut self) -> Result<u64, ContactError> {
        let (merged, garbage) =
            coalesce::set_merge(&mut self.sets, &mut self.index, self.nq, &mut self.merge)
                .map_err(|e| ContactError::Other(e.to_string()))?;
        self.garbage.add_all(&garbage);
        Ok(merged)
    }

    /// Rebuilds every live set at `pos` (one round of `rebuild_dirty` with all of them
    /// dirty, without the merges a step would do next): for tests and tools that compare a
    /// rebuild with another path's (the GPU kernels).
    pub fn rebuild_all(&mut self, topo: &Topology, pos: &[[f32; 4]]) -> Result<(), ContactError> {
        self.prepare(topo);
        self.dirty.clear();
        for (k, s) in self.sets.iter_mut().enumerate() {
            if s.flags & SET_LIVE != 0 {
                s.flags |= SET_DIRTY;
                self.dirty.push(k as u32);
            }
        }
        self.rebuild_dirty(pos, &mut AclStepStats::default())
    }

    /// The step count this set table is at (a rebuild records it as `rebuilt_step`).
    pub fn step_count(&self) -> u64 {
        self.step
    }

    /// One round of rebuilds: every live dirty set, in set order (`set_rebuild_size` →
    /// `pool_alloc_size` → `pool_alloc` (with the releases and garbage) →
    /// `set_rebuild_points` → `set_rebuild` →
    /// `set_rebuild_watch` → `set_rebuild_springs` → `set_rebuild_headers`). Counts rebuilds and
    /// deletions into `st`.
    fn rebuild_dirty(
        &mut self,
        pos: &[[f32; 4]],
        st: &mut AclStepStats,
    ) -> Result<(), ContactError> {
        let nd = self.dirty.len();
        // The size pass writes every plan and the watched-pair slots its plans count, before
        // anything reads them: the buffers only grow (no clearing).
        if self.plans.len() < nd {
            self.plans.resize(nd, RebuildPlan::default());
            self.plan_watch.resize(nd * MAX_WATCH, WatchPair::default());
            self.plan_watch_loc
                .resize(nd * MAX_WATCH, WatchLoc::default());
        }
        let nw = nd * MAX_WATCH;
        self.rebuild_scratch.ensure();
        let p = self.rebuild_params(self.step as u32, nd as u32);
        let tables = RebuildTables {
            seg_cp: &self.seg_cp,
            seg_w: &self.seg_w,
            weights: &self.table.weights,
            excl: &self.excl,
        };
        rebuild::set_rebuild_size(
            &p,
            pos,
            tables,
            &self.sets,
            &self.dirty,
            &mut self.plans[..nd],
            &mut self.plan_watch[..nw],
            &mut self.plan_watch_loc[..nw],
            &pages::PoolPage::whole(nd),
            &self.rebuild_scratch,
        );
        if let Some(plan) = self.plans[..nd]
            .iter()
            .find(|p| p.flags & rebuild::PLAN_ERROR != 0)
        {
            return Err(ContactError::NotFinite {
                point: plan.error_point as usize,
            });
        }
        // Pool allocation: sizes and releases (their group sums) → offsets, releases and the
        // garbage of the old models (the CPU pools and release list grow to fit: no capacity).
        let [np, nk, nwp] = self.pools.lens();
        let (alloc, garbage) = rebuild::pool_alloc_stage(
            &p,
            &self.sets,
            &self.dirty,
            &mut self.plans[..nd],
            [np as u32, nk as u32, nwp as u32, 0],
            &mut self.alloc_groups,
            &mut self.released,
        );
        self.garbage.add_all(&garbage);
        let len = alloc.len.map(|l| l as usize);
        self.pools.resize([len[0], len[1], len[2]]);
        if self.rebuild_terms.len() < len[3] {
            self.rebuild_terms
                .resize(len[3], rebuild::RebuildTerm::default());
        }
        grow_scratch(
            self.pools.cp.len(),
            &mut self.q_pool,
            &mut self.dev_pool,
            &mut self.fout_pool,
        );
        st.rebuilds += nd as u64;
        st.deleted += self.plans[..nd]
            .iter()
            .filter(|p| p.flags & rebuild::PLAN_DELETE != 0)
            .count() as u64;
        // The write pass: points, model, watched pairs and this step's force, springs, headers.
        let plans = &self.plans[..nd];
        let pools = &mut self.pools;
        rebuild::set_rebuild_points(
            &p,
            pos,
            tables,
            plans,
            &mut pools.cp,
            &mut pools.dbar,
            &mut pools.m,
            &self.rebuild_scratch,
        );
        // One page each (the pages are the GPU's: src/acl/pages.rs).
        let (blocks, terms) = (
            pages::PoolPage::whole(pools.k.len()),
            pages::PoolPage::whole(self.rebuild_terms.len()),
        );
        rebuild::set_rebuild(
            &p,
            pos,
            tables,
            plans,
            &mut self.rebuild_terms,
            &mut pools.k,
            &mut pools.f0,
            &[blocks, terms],
            &pages::RebuildRun::ALL,
            &self.rebuild_scratch,
        );
        let watch_pages = [
            pages::PoolPage::whole(nd),
            pages::PoolPage::whole(pools.watch.len()),
        ];
        rebuild::set_rebuild_watch(
            &p,
            plans,
            &self.plan_watch[..nw],
            &self.plan_watch_loc[..nw],
            &pools.f0,
            &mut pools.watch,
            &mut pools.watch_loc,
            &mut self.fout_pool,
            &watch_pages,
            &pages::RebuildRun::ALL,
        );
        rebuild::set_rebuild_springs(
            &p,
            pos,
            tables,
            &self.dirty,
            plans,
            &self.sets,
            &mut self.springs,
        );
        rebuild::set_rebuild_headers(
            &p,
            pos,
            &self.dirty,
            plans,
            &pools.cp,
            &self.rebuild_terms,
            &mut self.sets,
            &terms,
        );
        let bad = rebuild::first_not_finite(plans, &pools.cp, &pools.f0);
        match bad {
            Some(point) => Err(ContactError::NotFinite { point }),
            None => Ok(()),
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
            // The sets as the scheduler looks them up (their boxes, packed: `sched::lookup`, the
            // twins of the GPU's set_lookup_* kernels). Between steps the table holds only live
            // sets, so a set's number in the lookup is its slot.
            let lu = LookupUniform {
                num_sets: self.sets.len() as u32,
                num_segments: self.nq / self.b,
                quadrature: self.b,
                _pad: 0,
            };
            let sizes =
                set_lookup_build(&lu, &self.sets, &mut self.lookup_scratch, &mut self.lookup);
            st.lookup_errors = sizes.errors as u64;
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
        st.new_pairs = self.sched.touching().len() as u64;
        coalesce::coalesce_pairs(
            self.sched.touching(),
            self.params.padding,
            self.nq,
            &mut self.sets,
            &mut self.springs,
            &mut self.merge,
        );
        st.merges += self.merge()?;
        st.merge_passes = st.merge_passes.max(self.merge.searches as u64);
        let mut coalesce = t0.elapsed().as_secs_f64();
        // 3. Evaluate clean sets.
        let t1 = std::time::Instant::now();
        self.size_scratch_pools();
        let acl = self.uniform(pos.len());
        evaluate::set_evaluate_and_force(
            &acl,
            pos,
            &self.pools.cp,
            &self.pools.f0,
            &self.pools.dbar,
            &self.pools.m,
            &self.pools.k,
            &self.pools.watch,
            &self.pools.watch_loc,
            &mut self.sets,
            &mut self.q_pool,
            &mut self.dev_pool,
            &mut self.fout_pool,
        )?;
        let mut evaluate = t1.elapsed().as_secs_f64();
        // 4. Rebuilds, and merges of what grew, until nothing is dirty.
        let mut rebuild = 0.0;
        loop {
            let t2 = std::time::Instant::now();
            let nd = sets::set_dirty_stage(
                &self.sets,
                &mut self.dirty_dest,
                &mut self.set_groups,
                &mut self.dirty,
            );
            if nd == 0 {
                break;
            }
            st.rebuild_rounds += 1;
            self.rebuild_dirty(pos, &mut st)?;
            rebuild += t2.elapsed().as_secs_f64();
            let t3 = std::time::Instant::now();
            st.merges += self.merge()?;
            st.merge_passes = st.merge_passes.max(self.merge.searches as u64);
            coalesce += t3.elapsed().as_secs_f64();
        }
        // 5. Forces: the springs into their sets' forces, then gathered per control point.
        let t4 = std::time::Instant::now();
        let acl = self.uniform(pos.len());
        if self.params.stiction_stiffness > 0.0 {
            stiction::stiction_forces(
                &acl,
                pos,
                &self.seg_cp,
                &self.sets,
                &self.pools.cp,
                &self.pools.dbar,
                &mut self.springs,
                &mut self.fout_pool,
            );
        }
        gather::set_point_table(
            &self.sets,
            &self.pools.cp,
            pos.len(),
            rayon::current_num_threads(),
            &mut self.point_hist,
            &mut self.point_start,
            &mut self.point_count,
            &mut self.point_records,
        );
        let mut counters = AclCounters::default();
        // The table's capacity is the records it holds (the GPU's is a budget it may outgrow).
        let table = AclUniform {
            record_capacity: self.point_records.len() as u32,
            ..acl
        };
        gather::set_gather(
            &table,
            &mut self.point_start,
            &mut self.point_count,
            &self.point_records,
            &self.fout_pool,
            &mut counters,
            force,
        );
        if counters.errors != 0 {
            return Err(if counters.errors & ACL_ERROR_NOT_FINITE != 0 {
                not_finite_error(&counters)
            } else {
                ContactError::Other(gather::gather_full_message())
            });
        }
        evaluate += t4.elapsed().as_secs_f64();
        // 6. Compaction of the set table and, when mostly garbage, of the pools; the bin index of
        // the final sets (the next step's scheduler and merges start from it).
        let t5 = std::time::Instant::now();
        if self.sets.iter().any(|s| s.flags & SET_LIVE == 0) {
            sets::set_compact_stage(
                &self.sets,
                &self.springs,
                &mut self.set_groups,
                &mut self.sets_next,
                &mut self.springs_next,
            );
            std::mem::swap(&mut self.sets, &mut self.sets_next);
            std::mem::swap(&mut self.springs, &mut self.springs_next);
            self.index.build(&self.sets, self.nq);
        }
        coalesce += t5.elapsed().as_secs_f64();
        let t6 = std::time::Instant::now();
        if self.garbage.worth_compacting(self.pools.lens()) {
            rebuild::pool_compact(
                &mut self.sets,
                &mut self.pools,
                &mut self.pools_next,
                &mut self.pool_dest,
                &mut self.scan_partials,
            );
            self.garbage = PoolGarbage::default();
        }
        evaluate += t6.elapsed().as_secs_f64();
        // Statistics.
        let live = self.sets.len() as u64;
        st.contact_sets = live;
        st.rebuild_fraction = if live > 0 {
            st.rebuilds as f64 / live as f64
        } else {
            0.0
        };
        st.entries_tracked = ss.tracked;
        st.entries_examined = ss.examined;
        st.entries_processed = ss.processed;
        st.newcomer_steps = (ss.entered > 0) as u64;
        st.touching_pairs = self.sets.iter().map(|s| s.touching as u64).sum();
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
        // The frame's mean is the fraction of steps whose scheduler searched for newcomers.
        stats.set("newcomer_steps", st.newcomer_steps as f64);
        stats.set("touching_pairs", st.touching_pairs as f64);
        // The scheduler's touching pairs of empty space (coalesced into sets this step), as the
        // GPU path reports them.
        stats.set("new_pairs", st.new_pairs as f64);
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
