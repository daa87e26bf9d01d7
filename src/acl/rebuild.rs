//! Stage `set_rebuild`: the exact linear model of every dirty set at the current positions, and
//! the resize of its box; with the pool allocation it needs and the pool compaction.
//!
//! # Pools
//!
//! A set's model lives in flat pools ([`Pools`]), at offsets in its header: `cp_pool`, `f0_pool`,
//! `dbar_pool`, `m_pool` at `cp_off` (one entry per control point of the set), `k_pool` at `k_off`
//! (the `n(n+1)/2` blocks of `K̄`, none for a zero-force set) and `watch_pool`, `watch_loc_pool`
//! at `w_off` (its [`WatchPair`]s). A rebuilt model is appended: the rebuilt sets' ranges are given
//! out by a prefix sum over their sizes, in the order of the dirty list (`pool_alloc`), and the old
//! ranges become garbage. When more than half of a pool is garbage, `pool_compact` writes the live
//! sets' ranges, in set order, to a second set of pools (offsets by a prefix sum over the sets'
//! sizes) that replaces the first; set order is the order `set_evaluate` walks the sets in, so the
//! evaluation reads the pools front to back.
//!
//! # Rebuild, in two passes
//!
//! The dirty sets are rebuilt independently, in parallel, in two passes so that the pools come out
//! the same for any number of threads:
//! 1. `set_rebuild_size` (per dirty set): the distance of every member pair (`i < j` in the box, not
//!    excluded); the touching ones (`d < 2r`) give the new box (their hull `± α`), ε (the smallest
//!    distance), and the set's fate: no touching pair and ε beyond `delete_distance · r` deletes it
//!    (its pairs return to empty space), no touching pair otherwise leaves a zero-force set with its
//!    box. It also picks the watched pairs ([`MAX_WATCH`] member pairs of the new box closest to
//!    `2r`, sorted by `(|d − 2r|, i, j)`) into a fixed-size slot of the dirty set, and the sizes of
//!    the new model (control points, blocks, watched pairs).
//! 2. `pool_alloc`: a prefix sum over the sizes gives each rebuilt model its ranges, appended to the
//!    pools.
//! 3. `set_rebuild` (per dirty set): the model at its ranges. The touching pairs are found again,
//!    in the hull of the touching pairs only, by the same arithmetic, and accumulated in f32 in box
//!    order (row `i` ascending, then `j` ascending): force `f0` and stiffness `K̄` from the contact
//!    module's point-pair terms, the reference offsets `d̄`, the invalidation weights `M`, the
//!    header (box, ε, guards, force scale), the set's force for this step into `fout_pool`, and the
//!    stiction springs.
//!
//! A growing box may now overlap other sets: the driver merges again (`set_merge`) and rebuilds
//! what it merged, until nothing is dirty. With τ = 0 every set that moved at all is rebuilt every
//! step, so the force is the exact one.

use super::model::{self, SymBlock};
use super::pages::{PagePairs, PoolPage, RebuildRun, RUN_SLOT_BYTES};
use super::sets::{in_box, padded_box, ContactSet, SET_DIRTY, SET_LIVE, SET_MOVED, SET_ZERO};
use super::stiction::{springs_make, StictionSpring};
use super::{SyncPtr, ThreadScratch};
use crate::contact::{pair_coeffs, point_pair_compensated, Exclusion, SegmentExclusion};
use crate::layout::{AclSizes, Capacity};
use crate::math::V3;
use crate::polar::{quat_identity, quat_to_matrix};
use crate::sched::{Release, EMPTY_BOX};
use bytemuck::{Pod, Zeroable};
use rayon::prelude::*;

/// Pairs watched per set.
pub const MAX_WATCH: usize = 32;

/// Dirty sets per task of the parallel rebuild passes (a rebuild is a few thousand pair
/// distances and a few hundred pair terms: a handful per task keeps both threads busy).
const REBUILD_TASK: usize = 4;

/// Sets per task of the parallel pool compaction.
const COMPACT_TASK: usize = 256;

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

/// The set-local indices of the 4 + 4 control points of a watched pair's two quadrature points
/// (slots 0–3: `i`'s segment, 4–7: `j`'s), two 16-bit slots to a word: slot `c` is bits
/// `16 (c % 2) ..` of `loc[c / 2]` (the bytes of a `[u16; 8]` on a little-endian machine; WGSL has
/// no 16-bit integers, so the record holds 4-byte words only).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Pod, Zeroable)]
pub struct WatchLoc {
    pub loc: [u32; 4],
}
const _: () = assert!(std::mem::size_of::<WatchLoc>() == 16);

impl WatchLoc {
    /// Packs 8 slots, each below 2¹⁶ (a set's local indices are: see `box_points`).
    #[inline]
    pub fn from_slots(s: [u32; 8]) -> Self {
        WatchLoc {
            loc: std::array::from_fn(|w| (s[2 * w] & 0xffff) | (s[2 * w + 1] << 16)),
        }
    }

    /// Slot `c` (`c < 8`).
    #[inline]
    pub fn slot(&self, c: usize) -> u32 {
        (self.loc[c / 2] >> (16 * (c % 2))) & 0xffff
    }

    /// The 8 slots.
    #[inline]
    pub fn slots(&self) -> [u32; 8] {
        std::array::from_fn(|c| self.slot(c))
    }
}

/// The model pools (see the module doc).
#[derive(Debug, Default)]
pub struct Pools {
    pub cp: Vec<u32>,
    pub f0: Vec<[f32; 4]>,
    pub dbar: Vec<[f32; 4]>,
    pub m: Vec<f32>,
    pub k: Vec<SymBlock<f32>>,
    pub watch: Vec<WatchPair>,
    pub watch_loc: Vec<WatchLoc>,
}

impl Pools {
    pub fn clear(&mut self) {
        self.cp.clear();
        self.f0.clear();
        self.dbar.clear();
        self.m.clear();
        self.k.clear();
        self.watch.clear();
        self.watch_loc.clear();
    }

    /// Lengths of the point, block and watch pools.
    pub fn lens(&self) -> [usize; 3] {
        [self.cp.len(), self.k.len(), self.watch.len()]
    }

    /// Grows (or shrinks) the pools to the given lengths; new entries are zero.
    pub fn resize(&mut self, [np, nk, nw]: [usize; 3]) {
        self.cp.resize(np, 0);
        self.f0.resize(np, [0.0; 4]);
        self.dbar.resize(np, [0.0; 4]);
        self.m.resize(np, 0.0);
        self.k.resize(nk, [0.0; 6]);
        self.watch.resize(nw, WatchPair::default());
        self.watch_loc.resize(nw, WatchLoc::default());
    }
}

/// The pool space of a set's model: control points, blocks, watched pairs.
#[inline]
pub fn model_sizes(s: &ContactSet) -> [usize; 3] {
    let n = s.n_cp as usize;
    let nk = if s.flags & SET_ZERO == 0 {
        model::tri_len(n)
    } else {
        0
    };
    [n, nk, s.n_watch as usize]
}

/// Pool entries no live set uses (point, block and watch pools).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct PoolGarbage {
    pub cp: usize,
    pub k: usize,
    pub w: usize,
}

impl PoolGarbage {
    pub fn add(&mut self, [n, nk, nw]: [usize; 3]) {
        self.cp += n;
        self.k += nk;
        self.w += nw;
    }

    pub fn add_all(&mut self, g: &PoolGarbage) {
        self.add([g.cp, g.k, g.w]);
    }

    /// Whether the pools of lengths `lens` are worth compacting: more than half garbage (beyond a
    /// floor, so small scenes do not compact every step).
    pub fn worth_compacting(&self, [np, nk, nw]: [usize; 3]) -> bool {
        !(self.cp * 2 <= np + 4096 && self.k * 2 <= nk + 65536 && self.w * 2 <= nw + 4096)
    }
}

/// The constants of the rebuild and compaction stages: the kernels' uniform `rebuild`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Pod, Zeroable)]
pub struct RebuildParams {
    /// Quadrature points per segment, and in all.
    pub b: u32,
    pub nq: u32,
    /// Yarn radius.
    pub r: f32,
    /// α.
    pub padding: u32,
    /// `contact.delete_distance` (radii).
    pub delete_distance: f32,
    /// `contact.stiffness`.
    pub stiffness: f32,
    /// `contact.stiction_stiffness` (springs are made only when positive).
    pub stiction_stiffness: f32,
    /// The step (recorded as the set's `rebuilt_step`).
    pub step: u32,
    /// Entries of the set table (the compactions' thread count).
    pub num_sets: u32,
    /// Entries of the dirty list (the rebuild passes' workgroup count).
    pub num_dirty: u32,
    /// The same-yarn exclusion arc (cm), for the kernels' pair test.
    pub exclusion_arc: f32,
    pub _pad: u32,
}
const _: () = assert!(std::mem::size_of::<RebuildParams>() == 48);

/// The per-topology tables the rebuild stages read.
#[derive(Clone, Copy)]
pub struct RebuildTables<'a> {
    /// Per segment, its 4 control points.
    pub seg_cp: &'a [[u32; 4]],
    /// Per segment, its quadrature weight `ℓ/b`.
    pub seg_w: &'a [f32],
    /// Per quadrature parameter `k < b`, the 4 basis weights.
    pub weights: &'a [[f32; 4]],
    /// The same-yarn exclusion rule's tables.
    pub excl: &'a Exclusion,
}

impl RebuildTables<'_> {
    /// Quadrature point `i` (global index), computed as the exact path does (same weights, same
    /// order).
    #[inline]
    pub fn quad_point(&self, pos: &[[f32; 4]], b: u32, i: u32) -> V3<f32> {
        let cp = &self.seg_cp[(i / b) as usize];
        let w = &self.weights[(i % b) as usize];
        let q = cp.map(|c| V3::<f32>::from4(pos[c as usize]));
        q[0] * w[0] + q[1] * w[1] + q[2] * w[2] + q[3] * w[3]
    }

    /// The sorted, unique control points of the segments the box's two ranges meet, into `cps`;
    /// and for each segment of the `u` range (`loc_u[s − u0/b]`) and of the `v` range
    /// (`loc_v[s − v0/b]`) the set-local indices of its 4 control points.
    fn box_points(
        &self,
        bx: &[u32; 4],
        b: u32,
        cps: &mut Vec<u32>,
        loc_u: &mut Vec<[u32; 4]>,
        loc_v: &mut Vec<[u32; 4]>,
    ) {
        cps.clear();
        for (q0, q1) in [(bx[0], bx[1]), (bx[2], bx[3])] {
            for s in q0 / b..=q1 / b {
                cps.extend_from_slice(&self.seg_cp[s as usize]);
            }
        }
        cps.sort_unstable();
        cps.dedup();
        for ((q0, q1), loc) in [((bx[0], bx[1]), loc_u), ((bx[2], bx[3]), loc_v)] {
            loc.clear();
            loc.extend((q0 / b..=q1 / b).map(|s| {
                self.seg_cp[s as usize].map(|q| cps.binary_search(&q).unwrap_or(0) as u32)
            }));
        }
    }

    /// Calls `f(i, j, d², y_i, y_j)` for every member pair of `[u0, u1] × [v0, v1]` (`i < j`, not excluded), in
    /// box order (`i` ascending, then `j`), with the quadrature points of the rows and columns
    /// computed once into `yu`, `yv`. Stops at, and returns, a non-finite distance's `(i, j)`.
    fn for_each_member(
        &self,
        pos: &[[f32; 4]],
        b: u32,
        bx: [u32; 4],
        yu: &mut Vec<V3<f32>>,
        yv: &mut Vec<V3<f32>>,
        mut f: impl FnMut(u32, u32, f32, V3<f32>, V3<f32>),
    ) -> Option<(u32, u32)> {
        yu.clear();
        yu.extend((bx[0]..=bx[1]).map(|i| self.quad_point(pos, b, i)));
        yv.clear();
        yv.extend((bx[2]..=bx[3]).map(|j| self.quad_point(pos, b, j)));
        for i in bx[0]..=bx[1] {
            let (sa, ka) = (i / b, i % b);
            let yi = yu[(i - bx[0]) as usize];
            let jlo = bx[2].max(i + 1);
            if jlo > bx[3] {
                continue;
            }
            for sb in jlo / b..=bx[3] / b {
                let class = if sa == sb {
                    SegmentExclusion::Mixed
                } else {
                    self.excl.segment_exclusion(sa, sb)
                };
                if class == SegmentExclusion::All {
                    continue;
                }
                for j in jlo.max(sb * b)..=bx[3].min(sb * b + b - 1) {
                    if class == SegmentExclusion::Mixed && self.excl.excluded(sa, ka, sb, j % b) {
                        continue;
                    }
                    let yj = yv[(j - bx[2]) as usize];
                    let d2 = (yi - yj).norm2();
                    if !d2.is_finite() {
                        return Some((i, j));
                    }
                    f(i, j, d2, yi, yj);
                }
            }
        }
        None
    }
}

/// Plan flag: the set has no touching pair (zero force).
pub const PLAN_ZERO: u32 = 1;
/// Plan flag: the set is deleted.
pub const PLAN_DELETE: u32 = 2;
/// Plan flag: a member pair's distance is not finite (`error_point` names a control point).
pub const PLAN_ERROR: u32 = 4;
/// Plan flag (GPU only, `shaders/set_rebuild_size.wgsl`): the box has more than `MAX_BOX_PAIRS`
/// positions or its new box more than [`super::pages::MAX_BOX_CPS`] raw control points; the plan
/// keeps the old box and has no model, so the set stays dirty ([`POOL_BOX_TOO_LARGE`]).
pub const PLAN_TOO_LARGE: u32 = 8;

/// What `set_rebuild_size` found for one dirty set, and (from `pool_alloc`) where its model goes.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Pod, Zeroable)]
pub struct RebuildPlan {
    /// The resized box.
    pub new_bx: [u32; 4],
    /// Hull `[i0, i1, j0, j1]` of the touching pairs (unused for a zero-force set).
    pub touch_bx: [u32; 4],
    pub eps: f32,
    pub touching: u32,
    pub n_cp: u32,
    pub n_watch: u32,
    pub guard_near: f32,
    pub guard_far: f32,
    pub flags: u32,
    pub error_point: u32,
    pub cp_off: u32,
    pub k_off: u32,
    pub w_off: u32,
    /// Offset of the set's touching-pair terms in `rebuild_terms` (from `pool_alloc`).
    pub term_off: u32,
}
const _: () = assert!(std::mem::size_of::<RebuildPlan>() == 80);

/// One thread's scratch of the rebuild passes (reused; never read before written).
#[derive(Debug, Default)]
pub struct RebuildScratch {
    yu: Vec<V3<f32>>,
    yv: Vec<V3<f32>>,
    /// Member pairs of the box: `(|d − 2r|, i, j, d)`.
    members: Vec<(f32, u32, u32, f32)>,
    cps: Vec<u32>,
    /// Set-local indices of the control points of the box's segments (see `box_points`).
    loc_u: Vec<[u32; 4]>,
    loc_v: Vec<[u32; 4]>,
    f: Vec<V3<f32>>,
}

/// Stage `set_rebuild_size` over the dirty sets `dirty` (pass 1, see the module doc): `plans[t]`
/// and the watched pairs `watch[t·MAX_WATCH..]`, `watch_loc[t·MAX_WATCH..]` (set-local indices of
/// the 4 + 4 control points of the pair's quadrature points) for `dirty[t]`, for the dirty sets
/// of page `scratch_page` of the watched-pair scratch only (`watch` and `watch_loc` are that page,
/// its first set's slots at 0; [`super::pages`]: the GPU's scratch is in pages by dirty index where
/// it passes a binding; the CPU path passes one page, [`PoolPage::whole`]).
#[allow(clippy::too_many_arguments)]
pub fn set_rebuild_size(
    p: &RebuildParams,
    pos: &[[f32; 4]],
    tables: RebuildTables<'_>,
    sets: &[ContactSet],
    dirty: &[u32],
    plans: &mut [RebuildPlan],
    watch: &mut [WatchPair],
    watch_loc: &mut [WatchLoc],
    scratch_page: &PoolPage,
    scratch: &ThreadScratch<RebuildScratch>,
) {
    let (lo, hi) = scratch_page_range(scratch_page, dirty.len().min(plans.len()));
    plans[lo..hi]
        .par_iter_mut()
        .zip(watch.par_chunks_mut(MAX_WATCH))
        .zip(watch_loc.par_chunks_mut(MAX_WATCH))
        .zip(dirty[lo..hi].par_iter())
        .with_min_len(REBUILD_TASK)
        .for_each(|(((plan, w), wl), &k)| {
            scratch.with(|sc| *plan = size_one(p, pos, &tables, &sets[k as usize], sc, w, wl));
        });
}

/// The dirty indices `lo..hi` of the `n` listed that page `page` of the watched-pair scratch
/// holds (each `MAX_WATCH` slots from `(t − lo)·MAX_WATCH` in the page).
fn scratch_page_range(page: &PoolPage, n: usize) -> (usize, usize) {
    let lo = (page.base() as usize).min(n);
    (lo, (lo + page.len as usize).min(n))
}

/// `set_rebuild_size` for one set.
fn size_one(
    p: &RebuildParams,
    pos: &[[f32; 4]],
    t: &RebuildTables<'_>,
    s: &ContactSet,
    sc: &mut RebuildScratch,
    watch: &mut [WatchPair],
    watch_loc: &mut [WatchLoc],
) -> RebuildPlan {
    let (b, r) = (p.b, p.r);
    let four_r2 = 4.0 * r * r;
    let bx = s.bx;
    let mut plan = RebuildPlan::default();
    let mut min_d2 = f32::INFINITY;
    let (mut i0, mut i1, mut j0, mut j1) = (u32::MAX, 0u32, u32::MAX, 0u32);
    let mut touching = 0u32;
    let mut members = std::mem::take(&mut sc.members);
    members.clear();
    let bad = t.for_each_member(pos, b, bx, &mut sc.yu, &mut sc.yv, |i, j, d2, _, _| {
        min_d2 = min_d2.min(d2);
        let d = d2.sqrt();
        members.push(((d - 2.0 * r).abs(), i, j, d));
        if d2 < four_r2 {
            touching += 1;
            i0 = i0.min(i);
            i1 = i1.max(i);
            j0 = j0.min(j);
            j1 = j1.max(j);
        }
    });
    if let Some((i, _)) = bad {
        sc.members = members;
        plan.flags = PLAN_ERROR;
        plan.error_point = t.seg_cp[(i / b) as usize][1];
        return plan;
    }
    plan.eps = min_d2.sqrt();
    plan.touching = touching;
    let zero = touching == 0;
    if zero && !(plan.eps <= p.delete_distance * r) {
        // Closest pair beyond the delete distance (or no member pair at all): back to empty space.
        sc.members = members;
        plan.flags = PLAN_DELETE | PLAN_ZERO;
        return plan;
    }
    let new_bx = if zero {
        bx
    } else {
        padded_box(i0, i1, j0, j1, p.padding, p.nq)
    };
    plan.new_bx = new_bx;
    plan.touch_bx = [i0, i1, j0, j1];
    plan.flags = if zero { PLAN_ZERO } else { 0 };
    t.box_points(&new_bx, b, &mut sc.cps, &mut sc.loc_u, &mut sc.loc_v);
    plan.n_cp = sc.cps.len() as u32;
    // Watched pairs: the measured member pairs of the new box closest to the contact distance,
    // ordered by (|d − 2r|, i, j) so that the choice and the order are unique.
    let order = |a: &(f32, u32, u32, f32), c: &(f32, u32, u32, f32)| {
        a.0.total_cmp(&c.0).then(a.1.cmp(&c.1)).then(a.2.cmp(&c.2))
    };
    members.retain(|m| in_box(&new_bx, m.1, m.2));
    let nw = members.len().min(MAX_WATCH);
    if members.len() > MAX_WATCH {
        members.select_nth_unstable_by(MAX_WATCH - 1, order);
    }
    plan.guard_near = members[..nw]
        .iter()
        .map(|m| m.0)
        .fold(f32::INFINITY, f32::min);
    let grew = new_bx[0] < bx[0] || new_bx[1] > bx[1] || new_bx[2] < bx[2] || new_bx[3] > bx[3];
    plan.guard_far = if grew {
        // Pairs of the grown part were not measured (they do not touch: the scheduler hands over
        // every touching pair outside the sets): look at them at the next step.
        0.0
    } else {
        members[nw..]
            .iter()
            .map(|m| m.0)
            .fold(f32::INFINITY, f32::min)
    };
    members[..nw].sort_unstable_by(order);
    for (slot, m) in members[..nw].iter().enumerate() {
        let (sa, sb) = (m.1 / b, m.2 / b);
        watch[slot] = WatchPair {
            i: m.1,
            j: m.2,
            kw: p.stiffness * t.seg_w[sa as usize] * t.seg_w[sb as usize],
            gap: m.3 - 2.0 * r,
        };
        // Both segments lie in the new box's ranges (i in u, j in v), so their control points are
        // the set's.
        let (la, lb) = (
            sc.loc_u[(sa - new_bx[0] / b) as usize],
            sc.loc_v[(sb - new_bx[2] / b) as usize],
        );
        watch_loc[slot] =
            WatchLoc::from_slots(std::array::from_fn(
                |c| {
                    if c < 4 {
                        la[c]
                    } else {
                        lb[c - 4]
                    }
                },
            ));
    }
    plan.n_watch = nw as u32;
    sc.members = members;
    plan
}

/// Threads per workgroup of kernel `set_rebuild` (one workgroup per dirty set).
pub const REBUILD_WG: u32 = 256;

/// The most work kernel `set_rebuild` takes for one set: `⌈n(n+1)/2 / REBUILD_WG⌉ · touching`
/// (each thread's blocks, each looking at every touching pair). It bounds the kernel's loops under
/// lavapipe's 65,535 iterations per invocation (see shaders/set_rebuild.wgsl); `pool_alloc` flags a
/// set beyond it (`POOL_TOO_MUCH_WORK`) and the write kernels leave it alone, so the GPU step must
/// stop and name the limit. The CPU stages have no such limit.
pub const MAX_REBUILD_WORK: u32 = 16384;

/// [`MAX_REBUILD_WORK`]'s measure of a plan.
#[inline]
pub fn rebuild_work(plan: &RebuildPlan) -> u64 {
    let nb = model::tri_len(plan.n_cp as usize) as u64;
    nb.div_ceil(REBUILD_WG as u64) * plan.touching as u64
}

/// [`PoolAlloc::errors`]: bit `k` (`1 << k`) — pool `k` (points, blocks, watched pairs, terms)
/// needs more than its capacity; this bit — a set beyond [`MAX_REBUILD_WORK`].
pub const POOL_TOO_MUCH_WORK: u32 = 16;

/// [`PoolAlloc::errors`]: a plan has [`PLAN_TOO_LARGE`] (a box beyond the GPU rebuild kernels'
/// bounds). The set cannot be rebuilt and stays dirty whatever the rounds: the GPU step must stop
/// and name the limit (more rounds would only rebuild it again, without end).
pub const POOL_BOX_TOO_LARGE: u32 = 32;

/// The `pool_counters` block of the pool allocation: lengths, capacities and errors of the four
/// pools a rebuild appends to — points (`cp_pool`, `f0_pool`, `dbar_pool`, `m_pool`), blocks
/// (`k_pool`), watched pairs (`watch_pool`, `watch_loc_pool`) and the touching pairs' terms
/// (`rebuild_terms`, rewritten by every rebuild: its base is 0).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Pod, Zeroable)]
pub struct PoolAlloc {
    /// Lengths before the allocation (read by every thread).
    pub base: [u32; 4],
    /// Lengths after it (written by `pool_alloc`).
    pub len: [u32; 4],
    pub cap: [u32; 4],
    /// Bit `k`: pool `k` over capacity (its ranges beyond it must not be written: the host grows
    /// the pool and reruns); [`POOL_TOO_MUCH_WORK`].
    pub errors: u32,
    /// The first dirty slot beyond [`MAX_REBUILD_WORK`] (`u32::MAX`: none).
    pub first_too_large: u32,
    pub _pad0: u32,
    pub _pad1: u32,
}
const _: () = assert!(std::mem::size_of::<PoolAlloc>() == 64);

/// A touching pair's point-level terms, as kernel `set_rebuild` lists them (in box order, at the
/// plan's `term_off`) for its per-block and per-point sums.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Pod, Zeroable)]
pub struct RebuildTerm {
    /// Set-local indices of the pair's 4 + 4 control points ([`WatchLoc`]'s packing).
    pub loc: [u32; 4],
    /// `∂E/∂y_i` (w 0).
    pub grad: [f32; 4],
    /// `∂²E/∂y_i²` as a [`SymBlock`].
    pub hess: [f32; 6],
    /// The quadrature points.
    pub i: u32,
    pub j: u32,
}
const _: () = assert!(std::mem::size_of::<RebuildTerm>() == 64);

/// The sizes a plan takes in the four pools (points, blocks, watched pairs, terms): none for a
/// deleted set, no blocks and no terms for a zero-force one; `touching` (pairs with `d² < 4r²`)
/// bounds the terms (pairs touching by the compensated depth too).
#[inline]
pub fn plan_sizes(plan: &RebuildPlan) -> [u32; 4] {
    if plan.flags & PLAN_DELETE != 0 {
        return [0; 4];
    }
    let zero = plan.flags & PLAN_ZERO != 0;
    let n = plan.n_cp;
    [
        n,
        if zero {
            0
        } else {
            model::tri_len(n as usize) as u32
        },
        plan.n_watch,
        if zero { 0 } else { plan.touching },
    ]
}

/// Dirty sets per group of the pool allocation's sums: one 256-thread workgroup of
/// `pool_alloc_size` and of `pool_alloc`.
pub const ALLOC_GROUP: usize = 256;

/// One group's sums in the pool allocation (`alloc_groups[g]`, written by `pool_alloc_size` for
/// dirty sets `256 g .. 256 g + 256`, read by `pool_alloc`): with them each dirty set's offsets are
/// the sums of the groups before its own plus a workgroup scan, so the sizes need no scan
/// dispatch of their own.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Pod, Zeroable)]
pub struct AllocGroup {
    /// The group's sizes in the four pools ([`plan_sizes`]).
    pub sizes: [u32; 4],
    /// How many of the group's dirty sets release pairs.
    pub releases: u32,
    /// The release list's length before the round (`acl_sizes.released.count`), the same in every
    /// group: read a dispatch before `pool_alloc` writes the new length.
    pub released_base: u32,
    pub _pad0: u32,
    pub _pad1: u32,
}
const _: () = assert!(std::mem::size_of::<AllocGroup>() == 32);

/// Groups of `alloc_groups` for `nd` dirty sets: one per 256 of the `nd + 1` threads.
pub fn alloc_groups_len(nd: usize) -> usize {
    nd / ALLOC_GROUP + 1
}

/// What dirty set `t` (plan `plan`, old header `s`) adds to the allocation's sums: its sizes in
/// the four pools and 1 when it releases pairs.
#[inline]
fn alloc_values(s: &ContactSet, plan: &RebuildPlan) -> ([u32; 4], u32) {
    (plan_sizes(plan), plan_release(s, plan).is_some() as u32)
}

fn add4(a: [u32; 4], b: [u32; 4]) -> [u32; 4] {
    std::array::from_fn(|k| a[k].wrapping_add(b[k]))
}

/// Whether dirty set `s` (old header) with plan `plan` gives pairs back to empty space, and the
/// release: a deleted set its whole box, a resized one its old box against the new one.
#[inline]
fn plan_release(s: &ContactSet, plan: &RebuildPlan) -> Option<Release> {
    if plan.flags & PLAN_DELETE != 0 {
        Some(Release {
            before: s.bx,
            after: EMPTY_BOX,
        })
    } else if plan.new_bx != s.bx {
        Some(Release {
            before: s.bx,
            after: plan.new_bx,
        })
    } else {
        None
    }
}

/// Kernel `pool_alloc_size` (`shaders/pool_alloc_size.wgsl`, 256-thread workgroups over the
/// dirty sets plus one), after `set_rebuild_size` and before `set_rebuild_headers` (it reads the
/// dirty sets' old headers), for `D` = `rebuild.num_dirty`: for each group `g` of 256 dirty sets
/// (`g ≤ D / 256`, the last one's thread `D` adding nothing), `alloc_groups[g]` = the group's
/// sizes in the four pools ([`plan_sizes`]), how many of its sets release pairs (deleted, or the
/// box changed), and the release list's current length `acl_sizes.released.count` (the list grows
/// over a step's rebuild rounds; reading its length here, a dispatch before `pool_alloc` writes
/// it, keeps the read and the write in separate dispatches).
pub fn pool_alloc_size(
    rebuild: &RebuildParams,
    sets: &[ContactSet],
    dirty: &[u32],
    plans: &[RebuildPlan],
    alloc_groups: &mut [AllocGroup],
    acl_sizes: &AclSizes,
) {
    let nd = rebuild.num_dirty as usize;
    for (g, out) in alloc_groups[..alloc_groups_len(nd)].iter_mut().enumerate() {
        let ts = (g * ALLOC_GROUP).min(nd)..((g + 1) * ALLOC_GROUP).min(nd);
        let mut sum = AllocGroup {
            released_base: acl_sizes.released.count,
            ..Default::default()
        };
        for (plan, &k) in plans[ts.clone()].iter().zip(&dirty[ts]) {
            let (s, r) = alloc_values(&sets[k as usize], plan);
            sum.sizes = add4(sum.sizes, s);
            sum.releases = sum.releases.wrapping_add(r);
        }
        *out = sum;
    }
}

/// Kernel `pool_alloc` (`shaders/pool_alloc.wgsl`, the grid of `pool_alloc_size`), after it and
/// before `set_rebuild_headers`. Each dirty set's exclusive prefix of the allocation's values (the
/// pools' sizes and the releases of the sets before it in the dirty list) is the sums of the
/// groups before its own, from `alloc_groups`, plus those of its group before it (the kernel's
/// workgroup scan); thread `D` has the totals. Dirty set `t` (set `dirty[t]`, plan `t`) adds its
/// old model's sizes ([`model_sizes`]) to `acl_sizes.garbage_cp`, `garbage_k`, `garbage_w` (u32
/// sums, wrapping: the same in any order) and writes its release, if any, at its slot of
/// `released` (the group's `released_base` plus its prefix) when that is below
/// `acl_sizes.released.capacity` (never past it); a plan that does not delete its set gets its
/// ranges (`cp_off`, `k_off`, `w_off`, `term_off`), appended to the pools at `pool_counters.base`
/// in the order of the dirty list (a zero-force set's empty block range stays at 0, inside the
/// pool), and one beyond [`MAX_REBUILD_WORK`] sets [`POOL_TOO_MUCH_WORK`]. The last thread writes
/// the pools' new lengths (a pool's bit in `errors` when its length passes its capacity) and the
/// release list's into `released.count` (`released.overflow` past its capacity: the host grows
/// the list and reruns the step).
#[allow(clippy::too_many_arguments)]
pub fn pool_alloc(
    rebuild: &RebuildParams,
    sets: &[ContactSet],
    dirty: &[u32],
    alloc_groups: &[AllocGroup],
    plans: &mut [RebuildPlan],
    pool_counters: &mut PoolAlloc,
    released: &mut [Release],
    acl_sizes: &mut AclSizes,
) {
    let nd = rebuild.num_dirty as usize;
    let c = pool_counters;
    let cap = acl_sizes.released.capacity;
    let mut below = ([0u32; 4], 0u32);
    for (g, group) in alloc_groups[..alloc_groups_len(nd)].iter().enumerate() {
        let mut at = below;
        let base = group.released_base;
        for t in g * ALLOC_GROUP..((g + 1) * ALLOC_GROUP).min(nd + 1) {
            if t == nd {
                for k in 0..4 {
                    c.len[k] = c.base[k].wrapping_add(at.0[k]);
                    if c.len[k] > c.cap[k] {
                        c.errors |= 1 << k;
                    }
                }
                let count = base.wrapping_add(at.1);
                acl_sizes.released.count = count;
                if count > cap {
                    acl_sizes.released.overflow = 1;
                }
                break;
            }
            let (plan, s) = (&mut plans[t], &sets[dirty[t] as usize]);
            if plan.flags & PLAN_TOO_LARGE != 0 {
                c.errors |= POOL_BOX_TOO_LARGE;
                c.first_too_large = c.first_too_large.min(t as u32);
            }
            let (sizes, release) = (plan_sizes(plan), plan_release(s, plan));
            let [n, nk, nw] = model_sizes(s);
            acl_sizes.garbage_cp = acl_sizes.garbage_cp.wrapping_add(n as u32);
            acl_sizes.garbage_k = acl_sizes.garbage_k.wrapping_add(nk as u32);
            acl_sizes.garbage_w = acl_sizes.garbage_w.wrapping_add(nw as u32);
            let rel = release.is_some() as u32;
            if let Some(r) = release {
                let slot = base.wrapping_add(at.1);
                if slot < cap {
                    released[slot as usize] = r;
                }
            }
            if plan.flags & PLAN_DELETE == 0 {
                let off = |k: usize| c.base[k].wrapping_add(at.0[k]);
                plan.cp_off = off(0);
                plan.k_off = if plan.flags & PLAN_ZERO != 0 {
                    0
                } else {
                    off(1)
                };
                plan.w_off = off(2);
                plan.term_off = off(3);
                if rebuild_work(plan) > MAX_REBUILD_WORK as u64 {
                    c.errors |= POOL_TOO_MUCH_WORK;
                    c.first_too_large = c.first_too_large.min(t as u32);
                }
            }
            at = (add4(at.0, sizes), at.1.wrapping_add(rel));
        }
        below = (
            add4(below.0, group.sizes),
            below.1.wrapping_add(group.releases),
        );
    }
}

/// Stage `pool_alloc` on the CPU path (after `set_rebuild_size`, before `set_rebuild_headers`):
/// `pool_alloc_size` → `pool_alloc` over the `rebuild.num_dirty` dirty sets, their pool ranges
/// appended at the pools' lengths `base` (the CPU pools grow to fit: no capacity) and their
/// releases to `released` in the order of `dirty` (the list grows to fit too). Returns the pools'
/// new lengths (`PoolAlloc::len`, with any `POOL_TOO_MUCH_WORK`) and the pool space the dirty
/// sets' old models held.
#[allow(clippy::too_many_arguments)]
pub fn pool_alloc_stage(
    rebuild: &RebuildParams,
    sets: &[ContactSet],
    dirty: &[u32],
    plans: &mut [RebuildPlan],
    base: [u32; 4],
    alloc_groups: &mut Vec<AllocGroup>,
    released: &mut Vec<Release>,
) -> (PoolAlloc, PoolGarbage) {
    let nd = rebuild.num_dirty as usize;
    let mut sizes = AclSizes {
        released: Capacity {
            count: released.len() as u32,
            capacity: u32::MAX,
            ..Default::default()
        },
        ..Default::default()
    };
    let ng = alloc_groups_len(nd);
    crate::scan::resize_with_headroom(alloc_groups, ng, AllocGroup::default());
    pool_alloc_size(rebuild, sets, dirty, plans, alloc_groups, &sizes);
    // The new entries, each written by pool_alloc.
    let new = alloc_groups[..ng]
        .iter()
        .fold(0u32, |a, g| a.wrapping_add(g.releases));
    let len = released.len() + new as usize;
    crate::scan::resize_with_headroom(released, len, Release::default());
    let mut alloc = PoolAlloc {
        base,
        cap: [u32::MAX; 4],
        first_too_large: u32::MAX,
        ..Default::default()
    };
    pool_alloc(
        rebuild,
        sets,
        dirty,
        alloc_groups,
        plans,
        &mut alloc,
        released,
        &mut sizes,
    );
    let garbage = PoolGarbage {
        cp: sizes.garbage_cp as usize,
        k: sizes.garbage_k as usize,
        w: sizes.garbage_w as usize,
    };
    (alloc, garbage)
}

/// Whether the write kernels build plan `plan` (not deleted, and with control points: a plan the
/// size kernel found too large has none).
#[inline]
fn plan_built(plan: &RebuildPlan) -> bool {
    plan.flags & PLAN_DELETE == 0 && plan.n_cp > 0
}

/// Kernel `set_rebuild_points` (one workgroup per dirty set): for each plan that is built, at its
/// `cp_off`, the new box's sorted distinct control points (`cp_pool`), the reference offsets
/// `d̄_i = q_i − c̄` from their mean `c̄` (`dbar_pool`, summed in point order), and the invalidation
/// weights `M_i` over the box's two parameter ranges (`m_pool`: per segment of the `u` range, then
/// of the `v` range, slot by slot).
#[allow(clippy::too_many_arguments)]
pub fn set_rebuild_points(
    rebuild: &RebuildParams,
    pos: &[[f32; 4]],
    tables: RebuildTables<'_>,
    plans: &[RebuildPlan],
    cp_pool: &mut [u32],
    dbar_pool: &mut [[f32; 4]],
    m_pool: &mut [f32],
    scratch: &ThreadScratch<RebuildScratch>,
) {
    let b = rebuild.b;
    let (cpp, dp, mp) = (
        SyncPtr::new(cp_pool),
        SyncPtr::new(dbar_pool),
        SyncPtr::new(m_pool),
    );
    plans[..rebuild.num_dirty as usize]
        .par_iter()
        .with_min_len(REBUILD_TASK)
        .filter(|plan| plan_built(plan))
        .for_each(|plan| {
            let (o, n) = (plan.cp_off as usize, plan.n_cp as usize);
            // SAFETY: the plans' point ranges, from `pool_alloc`, are disjoint.
            let (cp, dbar, m) = unsafe { (cpp.slice(o, n), dp.slice(o, n), mp.slice(o, n)) };
            scratch.with(|sc| {
                let bx = plan.new_bx;
                tables.box_points(&bx, b, &mut sc.cps, &mut sc.loc_u, &mut sc.loc_v);
                cp.copy_from_slice(&sc.cps);
                let c = point_centre(pos, cp);
                for (d, &q) in dbar.iter_mut().zip(cp.iter()) {
                    *d = (V3::<f32>::from4(pos[q as usize]) - c).to4(0.0);
                }
                m.fill(0.0);
                let bf = b as f32;
                for ((q0, q1), loc) in [((bx[0], bx[1]), &sc.loc_u), ((bx[2], bx[3]), &sc.loc_v)] {
                    for seg in q0 / b..=q1 / b {
                        let t0 = (q0.max(seg * b) - seg * b) as f32 / bf;
                        let t1 = (q1.min(seg * b + b - 1) + 1 - seg * b) as f32 / bf;
                        let l = loc[(seg - q0 / b) as usize];
                        for slot in 0..4 {
                            m[l[slot] as usize] += model::basis_abs_integral(slot, t0, t1);
                        }
                    }
                }
            });
        });
}

/// The mean of the points `cp` (summed in order, then divided): a rebuilt set's reference centre.
#[inline]
fn point_centre(pos: &[[f32; 4]], cp: &[u32]) -> V3<f32> {
    let mut c = V3::<f32>::zero();
    for &q in cp {
        c += V3::from4(pos[q as usize]);
    }
    c / cp.len() as f32
}

/// Kernel `set_rebuild` (one workgroup of [`REBUILD_WG`] per dirty set), after
/// `set_rebuild_points`: the linear model of each built, non-zero plan. Its touching pairs
/// (member pairs of the touching hull `touch_bx` with `d² < 4r²` that touch by the compensated
/// depth too), in box order, are listed with their point terms in `rebuild_terms` at `term_off`
/// (with the set-local indices of their control points; a short list ends with `i = u32::MAX`); then
/// `f0_i = −Σ c_s ∇E` and the upper-triangle blocks `K̄_pq = −Σ c_s c_t H` are summed in f32 over
/// the list in order, each pair's slots in order — per entry the order
/// [`model::accumulate_pair`] adds in, which the kernel keeps with one thread per block and per
/// point. A zero-force plan gets `f0 = 0` and no blocks. `k_pool` is page `block_page.page` of
/// the blocks pool and `rebuild_terms` page `term_page.page` of the pair terms, `rebuild_pages`
/// being `[block_page, term_page]` ([`super::pages`]; [`PoolPage::whole`] unpaged): only the
/// plans of both pages are built (a zero-force plan is both pages 0's), none whose terms would
/// pass their page, and none writes blocks past its page. Only the plans of the dirty indices
/// `rebuild_run.first ..rebuild_run.end` are looked at (the run [`set_rebuild_runs`] found for the
/// pair of pages; [`RebuildRun::ALL`] unpaged).
#[allow(clippy::too_many_arguments)]
pub fn set_rebuild(
    rebuild: &RebuildParams,
    pos: &[[f32; 4]],
    tables: RebuildTables<'_>,
    plans: &[RebuildPlan],
    rebuild_terms: &mut [RebuildTerm],
    k_pool: &mut [SymBlock<f32>],
    f0_pool: &mut [[f32; 4]],
    rebuild_pages: &[PoolPage; 2],
    rebuild_run: &RebuildRun,
    scratch: &ThreadScratch<RebuildScratch>,
) {
    let [block_page, term_page] = rebuild_pages;
    let end = rebuild.num_dirty.min(rebuild_run.end) as usize;
    let first = (rebuild_run.first as usize).min(end);
    let (tp, kp, fp) = (
        SyncPtr::new(rebuild_terms),
        SyncPtr::new(k_pool),
        SyncPtr::new(f0_pool),
    );
    let base = block_page.base() as usize;
    let listed = |plan: &RebuildPlan| {
        let t = plan.term_off.wrapping_sub(term_page.base()) as u64;
        term_page.holds(plan.term_off) && t + plan.touching as u64 <= term_page.len as u64
    };
    plans[first..end]
        .par_iter()
        .with_min_len(REBUILD_TASK)
        .filter(|plan| plan_built(plan) && block_page.holds(plan.k_off))
        .filter(|plan| {
            if plan.flags & PLAN_ZERO != 0 {
                term_page.page == 0
            } else {
                listed(plan)
            }
        })
        .for_each(|plan| {
            let (o, n) = (plan.cp_off as usize, plan.n_cp as usize);
            let zero = plan.flags & PLAN_ZERO != 0;
            let nk = if zero { 0 } else { model::tri_len(n) };
            let nt = if zero { 0 } else { plan.touching as usize };
            let at = plan.k_off as usize - base;
            let to = plan.term_off.wrapping_sub(term_page.base()) as usize;
            // The kernel writes no blocks past the page (a pool that overflowed): they go to
            // scratch here.
            let fits = at + nk <= block_page.len as usize;
            let mut spare = Vec::new();
            // SAFETY: the plans' ranges, from `pool_alloc`, are disjoint.
            let (terms, k, f0) = unsafe {
                (
                    tp.slice(if zero { 0 } else { to }, nt),
                    if fits {
                        kp.slice(at, nk)
                    } else {
                        spare.resize(nk, [0.0; 6]);
                        &mut spare[..]
                    },
                    fp.slice(o, n),
                )
            };
            scratch.with(|sc| model_one(rebuild, pos, &tables, plan, terms, k, f0, sc));
        });
}

/// Kernel `set_rebuild_runs` (one thread per dirty set, after `pool_alloc`; only where the
/// blocks pool or the pair terms are in pages): each built plan `t` marks the pair of pages
/// `set_rebuild` builds it in (its blocks page and its terms page; a zero-force plan's pages 0 and
/// 0), `rebuild_runs[2 p] = max(t + 1)` and `rebuild_runs[2 p + 1] = max(!t)` for pair
/// `p = block page · page_pairs.term_pages + terms page`, so that the pair's plans lie in the dirty
/// indices `[!word 1, word 0)`; a plan whose page is past the pages (a pool that overflowed: the
/// step reruns) marks none. The same for `set_rebuild_watch`'s pairs after those (pair
/// `rebuild_pairs + scratch page · page_pairs.watch_pages + watch page`: the scratch page is
/// `t / scratch_stride`, the watch page `w_off / watch_stride`, page 0 for a plan without watched
/// pairs; `pool_alloc` appends `w_off` in dirty order too).
///
/// Why: `set_rebuild` is dispatched once per pair of pages, and each dispatch ran a workgroup for
/// every dirty set, though each plan is built in one of them: the afghan's first step on lavapipe
/// ran some 728 such grids of up to a million workgroups a round. `pool_alloc` gives the plans
/// their ranges in dirty order, so the plans of a pair are one run of dirty indices, and the runs
/// of all pairs cover each index about once ([`set_rebuild_args`] makes each pair's grid its
/// run's).
pub fn set_rebuild_runs(
    rebuild: &RebuildParams,
    page_pairs: &PagePairs,
    plans: &[RebuildPlan],
    rebuild_runs: &mut [u32],
) {
    for (t, plan) in plans[..rebuild.num_dirty as usize].iter().enumerate() {
        if !plan_built(plan) {
            continue;
        }
        let (b, m) = if plan.flags & PLAN_ZERO != 0 {
            (0, 0)
        } else {
            (
                plan.k_off / page_pairs.block_stride,
                plan.term_off / page_pairs.term_stride,
            )
        };
        let t = t as u32;
        let mut mark = |p: u32| {
            let p = p as usize;
            rebuild_runs[2 * p] = rebuild_runs[2 * p].max(t + 1);
            rebuild_runs[2 * p + 1] = rebuild_runs[2 * p + 1].max(!t);
        };
        if b < page_pairs.block_pages && m < page_pairs.term_pages {
            mark(b * page_pairs.term_pages + m);
        }
        let s = t / page_pairs.scratch_stride;
        let w = if plan.n_watch > 0 {
            plan.w_off / page_pairs.watch_stride
        } else {
            0
        };
        if s < page_pairs.scratch_pages && w < page_pairs.watch_pages {
            mark(page_pairs.rebuild_pairs() + s * page_pairs.watch_pages + w);
        }
    }
}

/// Kernel `set_rebuild_args` (one thread per pair of pages, `set_rebuild`'s then
/// `set_rebuild_watch`'s, after [`set_rebuild_runs`]): pair `p`'s [`RebuildRun`] at byte `p · RUN_SLOT_BYTES` of `rebuild_args` (the run `[first, end)` of
/// its two words of `rebuild_runs`, empty when they are 0, and the indirect grid of one workgroup
/// per index of it, as [`crate::shaders::dispatch_grid`] makes it), and both words back to 0 for
/// the next round.
pub fn set_rebuild_args(
    page_pairs: &PagePairs,
    rebuild_runs: &mut [u32],
    rebuild_args: &mut [u32],
) {
    let slot = (RUN_SLOT_BYTES / 4) as usize;
    for p in 0..page_pairs.count() as usize {
        let end = rebuild_runs[2 * p];
        let first = if end > 0 { !rebuild_runs[2 * p + 1] } else { 0 };
        let [groups_x, groups_y, groups_z] = crate::shaders::dispatch_grid(end - first, 1);
        let run = RebuildRun {
            groups_x,
            groups_y,
            groups_z,
            first,
            end,
            ..Default::default()
        };
        let words: &[u32] = bytemuck::cast_slice(std::slice::from_ref(&run));
        rebuild_args[p * slot..p * slot + 5].copy_from_slice(&words[..5]);
        rebuild_runs[2 * p] = 0;
        rebuild_runs[2 * p + 1] = 0;
    }
}

/// `set_rebuild` for one plan.
#[allow(clippy::too_many_arguments)]
fn model_one(
    p: &RebuildParams,
    pos: &[[f32; 4]],
    t: &RebuildTables<'_>,
    plan: &RebuildPlan,
    terms: &mut [RebuildTerm],
    k: &mut [SymBlock<f32>],
    f0: &mut [[f32; 4]],
    sc: &mut RebuildScratch,
) {
    let (b, r) = (p.b, p.r);
    let four_r2 = 4.0 * r * r;
    let n = f0.len();
    let mut f = std::mem::take(&mut sc.f);
    f.clear();
    f.resize(n, V3::zero());
    k.fill([0.0; 6]);
    if plan.flags & PLAN_ZERO == 0 {
        let new_bx = plan.new_bx;
        t.box_points(&new_bx, b, &mut sc.cps, &mut sc.loc_u, &mut sc.loc_v);
        let (loc_u, loc_v) = (&sc.loc_u, &sc.loc_v);
        let (su0, sv0) = (new_bx[0] / b, new_bx[2] / b);
        let mut nt = 0usize;
        t.for_each_member(
            pos,
            b,
            plan.touch_bx,
            &mut sc.yu,
            &mut sc.yv,
            |i, j, d2, yi, yj| {
                if !(d2 < four_r2) {
                    return;
                }
                let (sa, sb) = (i / b, j / b);
                let (ka, kb) = (i % b, j % b);
                let kw = p.stiffness * t.seg_w[sa as usize] * t.seg_w[sb as usize];
                let Some(pp) = point_pair_compensated(yi, yj, kw, r) else {
                    return;
                };
                // The touching pairs' hull is inside the new box: i's segment is in its u range,
                // j's in its v range.
                let (la, lb) = (loc_u[(sa - su0) as usize], loc_v[(sb - sv0) as usize]);
                let slots: [u32; 8] =
                    std::array::from_fn(|c| if c < 4 { la[c] } else { lb[c - 4] });
                let loc = slots.map(|s| s as usize);
                let h = &pp.hess_ii;
                terms[nt] = RebuildTerm {
                    loc: WatchLoc::from_slots(slots).loc,
                    grad: pp.grad_i.to4(0.0),
                    hess: [
                        h.at(0, 0),
                        h.at(1, 1),
                        h.at(2, 2),
                        h.at(0, 1),
                        h.at(0, 2),
                        h.at(1, 2),
                    ],
                    i,
                    j,
                };
                nt += 1;
                let c = pair_coeffs(&t.weights[ka as usize], &t.weights[kb as usize]);
                model::accumulate_pair(n, &loc, &c, pp.grad_i, h, &mut f, k);
            },
        );
        // The list's end: kernel set_rebuild marks it the same way (touching pairs by d² that the
        // compensated depth rejects leave their slots unused).
        if nt < terms.len() {
            terms[nt] = RebuildTerm {
                i: u32::MAX,
                j: u32::MAX,
                ..Default::default()
            };
        }
    }
    for (o, v) in f0.iter_mut().zip(&f) {
        *o = v.to4(0.0);
    }
    sc.f = f;
}

/// Kernel `set_rebuild_watch` (one thread per entry of a plan's ranges; a twin per plan): the
/// watched pairs of each built plan copied from its slot of `plan_watch` / `plan_watch_loc` to
/// its `w_off`, and its force for this step, `f0`, into `fout_pool` at its `cp_off`: the plans of
/// page `watch_pages[0]` of the scratch only, as in [`set_rebuild_size`], whose watched pairs live
/// in page `watch_pages[1]` of the watch pools (`watch_pool`, `watch_loc_pool`; a plan without any
/// in page 0: [`PoolPage::holds_range`]), and of those the dirty indices
/// `watch_run.first ..watch_run.end` only (the run [`set_rebuild_runs`] found for the pair of
/// pages; [`RebuildRun::ALL`] unpaged).
#[allow(clippy::too_many_arguments)]
pub fn set_rebuild_watch(
    rebuild: &RebuildParams,
    plans: &[RebuildPlan],
    plan_watch: &[WatchPair],
    plan_watch_loc: &[WatchLoc],
    f0_pool: &[[f32; 4]],
    watch_pool: &mut [WatchPair],
    watch_loc_pool: &mut [WatchLoc],
    fout_pool: &mut [[f32; 4]],
    watch_pages: &[PoolPage; 2],
    watch_run: &RebuildRun,
) {
    let [scratch_page, pool_page] = watch_pages;
    let (lo, hi) = scratch_page_range(scratch_page, rebuild.num_dirty as usize);
    let w_base = pool_page.base() as usize;
    let run = watch_run.first as usize..watch_run.end as usize;
    for (t, plan) in plans[lo..hi].iter().enumerate() {
        if !run.contains(&(lo + t))
            || !plan_built(plan)
            || !pool_page.holds_range(plan.w_off, plan.n_watch)
        {
            continue;
        }
        let (wo, nw, src) = (
            plan.w_off as usize - w_base,
            plan.n_watch as usize,
            t * MAX_WATCH,
        );
        watch_pool[wo..wo + nw].copy_from_slice(&plan_watch[src..src + nw]);
        watch_loc_pool[wo..wo + nw].copy_from_slice(&plan_watch_loc[src..src + nw]);
        let (o, n) = (plan.cp_off as usize, plan.n_cp as usize);
        fout_pool[o..o + n].copy_from_slice(&f0_pool[o..o + n]);
    }
}

/// Kernel `set_rebuild_springs` (one thread per dirty set), before `set_rebuild_headers` (it reads
/// the old header): a deleted set's 4 springs cleared; with `stiction_stiffness > 0`, a built
/// set's springs re-made ([`springs_make`]) when its box changed or it was dirty (always, for a
/// set of the dirty list), otherwise carried into the new reference frame (rest offsets turned by
/// the old rotation).
pub fn set_rebuild_springs(
    rebuild: &RebuildParams,
    pos: &[[f32; 4]],
    tables: RebuildTables<'_>,
    dirty: &[u32],
    plans: &[RebuildPlan],
    sets: &[ContactSet],
    springs: &mut [StictionSpring],
) {
    let b = rebuild.b;
    for (plan, &k) in plans.iter().zip(&dirty[..rebuild.num_dirty as usize]) {
        let sp = &mut springs[4 * k as usize..4 * k as usize + 4];
        if plan.flags & PLAN_DELETE != 0 {
            sp.fill(StictionSpring::default());
            continue;
        }
        if !plan_built(plan) || !(rebuild.stiction_stiffness > 0.0) {
            continue;
        }
        let old = &sets[k as usize];
        if plan.new_bx != old.bx || old.flags & SET_DIRTY != 0 {
            sp.copy_from_slice(&springs_make(&plan.new_bx, &tables, pos, b));
        } else {
            let r_old = quat_to_matrix(old.quat);
            for s in sp.iter_mut() {
                s.rest = r_old.mul_v(V3::<f32>::from4(s.rest)).to4(0.0);
            }
        }
    }
}

/// Kernel `set_rebuild_headers` (one thread per dirty set), last of the write pass: a deleted
/// set's header cleared; a built set's header from its plan (box, ranges, ε, touching count,
/// guards), `SET_LIVE` (`SET_ZERO` for a zero-force set, `SET_MOVED` when the box changed;
/// `SET_DIRTY` cleared), `rebuilt_step`, the force scale `f_ref` (the touching pairs' `|∇E|`
/// summed in list order), the identity rotation and the reference centre (as
/// `set_rebuild_points` computes it). `rebuild_terms` is page `term_page.page` of the pair terms
/// ([`super::pages`]; [`PoolPage::whole`] unpaged): only the headers of plans with terms there
/// are written, and those of plans without terms in page 0.
#[allow(clippy::too_many_arguments)]
pub fn set_rebuild_headers(
    rebuild: &RebuildParams,
    pos: &[[f32; 4]],
    dirty: &[u32],
    plans: &[RebuildPlan],
    cp_pool: &[u32],
    rebuild_terms: &[RebuildTerm],
    sets: &mut [ContactSet],
    term_page: &PoolPage,
) {
    for (plan, &k) in plans.iter().zip(&dirty[..rebuild.num_dirty as usize]) {
        let listed = plan_built(plan) && plan.flags & PLAN_ZERO == 0;
        let mine = if listed {
            term_page.holds(plan.term_off)
        } else {
            term_page.page == 0
        };
        if !mine {
            continue;
        }
        let s = &mut sets[k as usize];
        if plan.flags & PLAN_DELETE != 0 {
            *s = ContactSet::default();
            continue;
        }
        if !plan_built(plan) {
            continue;
        }
        let zero = plan.flags & PLAN_ZERO != 0;
        let (o, n) = (plan.cp_off as usize, plan.n_cp as usize);
        let mut f_ref = 0.0f32;
        if !zero {
            let to = (plan.term_off - term_page.base()) as usize;
            for term in &rebuild_terms[to..to + plan.touching as usize] {
                if term.i == u32::MAX {
                    break;
                }
                f_ref += V3::<f32>::from4(term.grad).norm();
            }
        }
        *s = ContactSet {
            bx: plan.new_bx,
            cp_off: plan.cp_off,
            n_cp: plan.n_cp,
            k_off: plan.k_off,
            flags: SET_LIVE
                | if zero { SET_ZERO } else { 0 }
                | if plan.new_bx != s.bx { SET_MOVED } else { 0 },
            eps: plan.eps,
            touching: plan.touching,
            rebuilt_step: rebuild.step,
            w_off: plan.w_off,
            n_watch: plan.n_watch,
            guard_near: plan.guard_near,
            guard_far: plan.guard_far,
            f_ref,
            quat: quat_identity(),
            centre: point_centre(pos, &cp_pool[o..o + n]).to4(0.0),
        };
    }
}

/// The first control point (in the order of the plans, then of a set's points) of a built plan
/// whose force `f0` is not finite.
pub fn first_not_finite(
    plans: &[RebuildPlan],
    cp_pool: &[u32],
    f0_pool: &[[f32; 4]],
) -> Option<usize> {
    plans.iter().filter(|p| plan_built(p)).find_map(|p| {
        let (o, n) = (p.cp_off as usize, p.n_cp as usize);
        (o..o + n)
            .find(|&e| !V3::<f32>::from4(f0_pool[e]).is_finite())
            .map(|e| cp_pool[e] as usize)
    })
}

/// Where kind `kind` (0: points, 1: blocks, 2: watched pairs) of set `s` goes in the compacted
/// pools, from the scanned `pool_dest` of `num_sets` sets (see [`pool_compact_size`]).
#[inline]
pub fn pool_dest_offset(pool_dest: &[u32], num_sets: usize, kind: usize, s: usize) -> u32 {
    let base = kind * (num_sets + 1);
    pool_dest[base + s].wrapping_sub(pool_dest[base])
}

/// The compacted pools' lengths `[points, blocks, watched pairs]` from the scanned `pool_dest`.
pub fn pool_dest_lens(pool_dest: &[u32], num_sets: usize) -> [usize; 3] {
    std::array::from_fn(|kind| pool_dest_offset(pool_dest, num_sets, kind, num_sets) as usize)
}

/// Kernel `pool_compact_size` (`shaders/pool_compact_size.wgsl`), one thread per set plus one:
/// the sizes of set `s`'s model ([`model_sizes`]) into `pool_dest[s]` (points),
/// `pool_dest[S + 1 + s]` (blocks) and `pool_dest[2(S + 1) + s]` (watched pairs), `S` =
/// `rebuild.num_sets`, and 0 into the last entry of each third. One exclusive scan of the whole
/// buffer then gives every offset ([`pool_dest_offset`]: the scanned value less its third's first)
/// and, at `[k(S + 1) + S]`, each pool's new length.
pub fn pool_compact_size(rebuild: &RebuildParams, sets: &[ContactSet], pool_dest: &mut [u32]) {
    let ns = rebuild.num_sets as usize;
    for (s, set) in sets[..ns].iter().enumerate() {
        let sizes = model_sizes(set);
        for kind in 0..3 {
            pool_dest[kind * (ns + 1) + s] = sizes[kind] as u32;
        }
    }
    for kind in 0..3 {
        pool_dest[kind * (ns + 1) + ns] = 0;
    }
}

/// The copy shared by the `pool_compact_*` twins: for every set (in parallel), the `kind` range of
/// `src` at the set's old offset (`old(s)`) to its new offset in `dst`. The kernels run one thread
/// per destination entry, finding its set by a binary search of `pool_dest`; the result is the
/// same copy.
fn compact_copy<T: Copy + Send + Sync>(
    sets: &[ContactSet],
    pool_dest: &[u32],
    kind: usize,
    old: impl Fn(&ContactSet) -> usize + Sync,
    src: &[T],
    dst: &mut [T],
) {
    let ns = sets.len();
    let out = SyncPtr::new(dst);
    sets.par_iter()
        .enumerate()
        .with_min_len(COMPACT_TASK)
        .for_each(|(k, s)| {
            let n = model_sizes(s)[kind];
            let d = pool_dest_offset(pool_dest, ns, kind, k) as usize;
            let o = old(s);
            // SAFETY: the destination ranges come from a prefix sum over the sets' sizes, so they
            // are disjoint (and `copy_to` checks they lie inside `dst`).
            unsafe { out.copy_to(d, &src[o..o + n]) };
        });
}

/// Kernel `pool_compact_points` (one thread per entry of the compacted point pools): the ranges of
/// `cp_pool` and `m_pool` of the sets `sets[..num_sets]`, in set order, at the offsets of the
/// scanned `pool_dest`.
pub fn pool_compact_points(
    rebuild: &RebuildParams,
    sets: &[ContactSet],
    pool_dest: &[u32],
    cp_pool: &[u32],
    m_pool: &[f32],
    cp_next: &mut [u32],
    m_next: &mut [f32],
) {
    let sets = &sets[..rebuild.num_sets as usize];
    let old = |s: &ContactSet| s.cp_off as usize;
    compact_copy(sets, pool_dest, 0, old, cp_pool, cp_next);
    compact_copy(sets, pool_dest, 0, old, m_pool, m_next);
}

/// Kernel `pool_compact_vectors`: as [`pool_compact_points`] for the point pools `f0_pool` and
/// `dbar_pool` (split off to keep each kernel within the default 8 storage buffers).
pub fn pool_compact_vectors(
    rebuild: &RebuildParams,
    sets: &[ContactSet],
    pool_dest: &[u32],
    f0_pool: &[[f32; 4]],
    dbar_pool: &[[f32; 4]],
    f0_next: &mut [[f32; 4]],
    dbar_next: &mut [[f32; 4]],
) {
    let sets = &sets[..rebuild.num_sets as usize];
    let old = |s: &ContactSet| s.cp_off as usize;
    compact_copy(sets, pool_dest, 0, old, f0_pool, f0_next);
    compact_copy(sets, pool_dest, 0, old, dbar_pool, dbar_next);
}

/// Kernel `pool_compact_blocks` (one thread per entry of the compacted block pool's page): as
/// [`pool_compact_points`] for `k_pool`, from page `block_page.source` of the old pool (`k_pool`)
/// into page `block_page.page` of the new one (`k_next`): the blocks of the sets that live in both
/// ([`super::pages`]), none past the new page's length; [`PoolPage::whole`] unpaged.
pub fn pool_compact_blocks(
    rebuild: &RebuildParams,
    sets: &[ContactSet],
    pool_dest: &[u32],
    k_pool: &[SymBlock<f32>],
    k_next: &mut [SymBlock<f32>],
    block_page: &PoolPage,
) {
    let sets = &sets[..rebuild.num_sets as usize];
    let old = |s: &ContactSet| s.k_off as usize;
    compact_copy_paged(sets, pool_dest, 1, old, k_pool, k_next, block_page);
}

/// [`compact_copy`] from page `page.source` of a paged pool into page `page.page` of the new one
/// (both of one stride): the ranges of the sets that live in both, none past the new page's
/// length.
fn compact_copy_paged<T: Copy + Send + Sync>(
    sets: &[ContactSet],
    pool_dest: &[u32],
    kind: usize,
    old: impl Fn(&ContactSet) -> usize + Sync,
    src: &[T],
    dst: &mut [T],
    page: &PoolPage,
) {
    if page.stride == u32::MAX {
        compact_copy(sets, pool_dest, kind, old, src, dst);
        return;
    }
    let ns = sets.len();
    let (base, source) = (page.base() as usize, page.source_base() as usize);
    for (k, s) in sets.iter().enumerate() {
        let n = model_sizes(s)[kind];
        let d = pool_dest_offset(pool_dest, ns, kind, k);
        let o = old(s);
        if n == 0 || !page.holds(d) || !page.source_holds(o as u32) {
            continue;
        }
        let (to, from) = (d as usize - base, o - source);
        let n = n.min((page.len as usize).saturating_sub(to));
        dst[to..to + n].copy_from_slice(&src[from..from + n]);
    }
}

/// Kernel `pool_compact_watch` (one thread per entry of the compacted watch pools' page): as
/// [`pool_compact_blocks`] for `watch_pool` and `watch_loc_pool` (page `watch_pool_page`).
#[allow(clippy::too_many_arguments)]
pub fn pool_compact_watch(
    rebuild: &RebuildParams,
    sets: &[ContactSet],
    pool_dest: &[u32],
    watch_pool: &[WatchPair],
    watch_loc_pool: &[WatchLoc],
    watch_next: &mut [WatchPair],
    watch_loc_next: &mut [WatchLoc],
    watch_pool_page: &PoolPage,
) {
    let sets = &sets[..rebuild.num_sets as usize];
    let old = |s: &ContactSet| s.w_off as usize;
    let page = watch_pool_page;
    compact_copy_paged(sets, pool_dest, 2, old, watch_pool, watch_next, page);
    compact_copy_paged(
        sets,
        pool_dest,
        2,
        old,
        watch_loc_pool,
        watch_loc_next,
        page,
    );
}

/// Kernel `pool_compact_headers` (one thread per set): the sets' offsets into the compacted pools
/// (a zero-force set has no blocks: its empty range stays at 0, inside the pool). Runs after the
/// copies, which read the old offsets.
pub fn pool_compact_headers(rebuild: &RebuildParams, pool_dest: &[u32], sets: &mut [ContactSet]) {
    let ns = rebuild.num_sets as usize;
    for (k, s) in sets[..ns].iter_mut().enumerate() {
        s.cp_off = pool_dest_offset(pool_dest, ns, 0, k);
        s.k_off = if s.flags & SET_ZERO != 0 {
            0
        } else {
            pool_dest_offset(pool_dest, ns, 1, k)
        };
        s.w_off = pool_dest_offset(pool_dest, ns, 2, k);
    }
}

/// Stage `pool_compact`: the live sets' model ranges, in set order, written to `next`
/// (`pool_compact_size` → exclusive scan of `pool_dest` → `pool_compact_points`,
/// `pool_compact_vectors`, `pool_compact_blocks`, `pool_compact_watch` → `pool_compact_headers`); `next` then replaces
/// `pools` (which becomes the next compaction's target, so no allocation once both have grown) and
/// the headers take the new offsets. `sets` must hold live sets only.
pub fn pool_compact(
    sets: &mut [ContactSet],
    pools: &mut Pools,
    next: &mut Pools,
    pool_dest: &mut Vec<u32>,
    scan_partials: &mut Vec<u32>,
) {
    let ns = sets.len();
    let p = RebuildParams {
        num_sets: ns as u32,
        ..Default::default()
    };
    crate::scan::resize_with_headroom(pool_dest, 3 * (ns + 1), 0);
    pool_compact_size(&p, sets, pool_dest);
    crate::scan::exclusive_scan(pool_dest, scan_partials);
    next.resize(pool_dest_lens(pool_dest, ns));
    pool_compact_points(
        &p,
        sets,
        pool_dest,
        &pools.cp,
        &pools.m,
        &mut next.cp,
        &mut next.m,
    );
    pool_compact_vectors(
        &p,
        sets,
        pool_dest,
        &pools.f0,
        &pools.dbar,
        &mut next.f0,
        &mut next.dbar,
    );
    let whole = PoolPage::whole(next.k.len());
    pool_compact_blocks(&p, sets, pool_dest, &pools.k, &mut next.k, &whole);
    let whole = PoolPage::whole(next.watch.len());
    pool_compact_watch(
        &p,
        sets,
        pool_dest,
        &pools.watch,
        &pools.watch_loc,
        &mut next.watch,
        &mut next.watch_loc,
        &whole,
    );
    pool_compact_headers(&p, pool_dest, sets);
    std::mem::swap(pools, next);
}
