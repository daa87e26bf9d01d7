//! The set table: contact-set headers ([`ContactSet`]) and their boxes, the bin index the merge
//! stage looks sets up by ([`SetIndex`]), and the compaction that
//! removes deleted and merged-away sets (`set_compact`).
//!
//! A set is a box `[u0, u1] × [v0, v1]` of quadrature indices in `S × S`; its *members* are the pairs
//! `(i, j)` of the box with `i < j` (the upper triangle, so a box may touch the diagonal without ever
//! counting a pair twice). Boxes are kept canonical (`u0 < v1`, rows/columns without members
//! trimmed).
//!
//! *Slots.* Between steps the table holds only live sets, in a deterministic order: sets that
//! survive a step keep their relative order, and sets made during the step come after them in the
//! order they were made. During a step a deleted or merged-away set only loses [`SET_LIVE`] (so
//! indices held by the stages stay valid); at the end of the step `set_compact` writes the live
//! sets, and their 4 stiction springs each, to a second table (`set_compact`, each live set's slot
//! from the live sets per 256 slots that `set_point_count` counts and a workgroup scan) that
//! replaces the first.
//!
//! *Dirty list.* Each rebuild round lists the live dirty sets in set order (`set_dirty_count` →
//! `set_dirty_write`, each slot from the group sums and a workgroup scan, [`set_dirty_stage`] on
//! the CPU path); the rebuild kernels run
//! one thread or workgroup per entry of that list.
//!
//! *Bin index.* Sets are binned by the first axis of their boxes, bins of [`MERGE_BIN`] quadrature
//! indices; a set is listed in every bin its `u` range meets, bins in set order (count per bin →
//! prefix sum → write in set order, the order a stable sort by bin gives on the GPU). Two sets that
//! overlap share at least one bin, so the merge stage and the scheduler's ownership queries look
//! only at the sets of the bins a box or a segment meets.

use super::rebuild::{PoolAlloc, RebuildParams};
use super::stiction::StictionSpring;
use crate::layout::{AclSizes, CountPlan, MergeCounters, ACL_SIZES_MORE_ROUNDS};
use bytemuck::{Pod, Zeroable};

/// Width (in quadrature indices along the first axis) of the bins used to find overlapping sets.
pub const MERGE_BIN: u32 = 8;

/// Set flag: the slot holds a set.
pub const SET_LIVE: u32 = 1;
/// Set flag: the model must be (re)built before use (new, merged, or invalidated).
pub const SET_DIRTY: u32 = 2;
/// Set flag: no touching pair at the last rebuild — the set gives no force.
pub const SET_ZERO: u32 = 4;
/// Set flag, only during a step: the box is new or changed since the merge stage last looked, so
/// it may overlap another set (sets without it are pairwise disjoint).
pub const SET_MOVED: u32 = 8;
/// Set flag, only in the GPU stages: `set_evaluate` found the set's rotation not finite (`set_force`
/// reports it in `acl_counters`).
pub const SET_NOT_FINITE: u32 = 16;

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

impl ContactSet {
    /// Whether the set is live and its model must be (re)built.
    #[inline]
    pub fn is_dirty(&self) -> bool {
        self.flags & (SET_LIVE | SET_DIRTY) == SET_LIVE | SET_DIRTY
    }

    /// Whether the set is live and its model is usable (the sets `set_evaluate` looks at).
    #[inline]
    pub fn is_clean(&self) -> bool {
        self.flags & (SET_LIVE | SET_DIRTY) == SET_LIVE
    }
}

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

/// `[i0 − α, i1 + α] × [j0 − α, j1 + α]` clamped to `S = [0, nq)`, trimmed of rows and columns without
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
pub(crate) fn in_box(bx: &[u32; 4], i: u32, j: u32) -> bool {
    i < j && bx[0] <= i && i <= bx[1] && bx[2] <= j && j <= bx[3]
}

/// The bins (of [`MERGE_BIN`] along the first axis) a box meets.
#[inline]
pub(crate) fn box_bins(bx: &[u32; 4]) -> std::ops::RangeInclusive<u32> {
    bx[0] / MERGE_BIN..=bx[1] / MERGE_BIN
}

/// The live sets binned by the first axis of their boxes (bins of [`MERGE_BIN`]), CSR: bin `b`
/// lists `items[start[b]..start[b + 1]]`, in set order.
#[derive(Debug, Default)]
pub struct SetIndex {
    start: Vec<u32>,
    items: Vec<u32>,
}

impl SetIndex {
    /// Stage `set_bin`: count per bin → prefix sum → write in set order, over the live sets of
    /// `sets`, for `nq` quadrature points. Keeps its buffers (no allocation once grown).
    pub fn build(&mut self, sets: &[ContactSet], nq: u32) {
        let nbins = (nq / MERGE_BIN + 1) as usize;
        self.start.clear();
        self.start.resize(nbins + 1, 0);
        for s in sets.iter().filter(|s| s.flags & SET_LIVE != 0) {
            for bin in box_bins(&s.bx) {
                self.start[bin as usize + 1] += 1;
            }
        }
        for i in 0..nbins {
            self.start[i + 1] += self.start[i];
        }
        self.items.clear();
        self.items.resize(self.start[nbins] as usize, 0);
        // Write in set order; `start[bin]` serves as the bin's fill pointer and is restored after.
        for (k, s) in sets.iter().enumerate() {
            if s.flags & SET_LIVE == 0 {
                continue;
            }
            for bin in box_bins(&s.bx) {
                let f = &mut self.start[bin as usize];
                self.items[*f as usize] = k as u32;
                *f += 1;
            }
        }
        // Each fill pointer now stands at its bin's end, the next bin's start: shift back.
        for i in (1..=nbins).rev() {
            self.start[i] = self.start[i - 1];
        }
        self.start[0] = 0;
    }

    /// The sets listed in bin `bin` (none past the last bin).
    #[inline]
    pub fn bin(&self, bin: usize) -> &[u32] {
        if bin + 1 >= self.start.len() {
            return &[];
        }
        &self.items[self.start[bin] as usize..self.start[bin + 1] as usize]
    }

    /// `start[b]`: the first item of bin `b` (`num_bins + 1` entries; empty before the first build).
    pub fn start(&self) -> &[u32] {
        &self.start
    }

    /// The sets of all bins, bin after bin.
    pub fn items(&self) -> &[u32] {
        &self.items
    }

    /// Forgets the sets (a new topology).
    pub fn clear(&mut self) {
        self.start.clear();
        self.items.clear();
    }
}

/// The live sets of each 256 slots of `sets[..num_sets]` into `scan_groups` (slots past `num_sets`
/// count none): what `set_point_count`'s workgroups write beside the point table's counts
/// ([`super::gather::set_point_count`]), from which [`set_compact`] finds each live set's slot.
/// The words of groups wholly past `num_sets` are left as they were (the kernel's workgroups there
/// return at once; `set_compact` reads none of them).
pub fn live_groups(num_sets: u32, sets: &[ContactSet], scan_groups: &mut [u32]) {
    let n = num_sets as usize;
    let groups = n.div_ceil(256).min(scan_groups.len());
    for (g, sum) in scan_groups[..groups].iter_mut().enumerate() {
        let end = (256 * (g + 1)).min(n);
        let start = (256 * g).min(end);
        *sum = sets[start..end]
            .iter()
            .filter(|s| s.flags & SET_LIVE != 0)
            .count() as u32;
    }
}

/// Kernel `set_compact` (`shaders/set_compact.wgsl`), one thread per set slot: every live set of
/// `sets[..m]`, `m = min(num_sets, sets.len())`, and its 4 springs (`springs[4k..4k + 4]`)
/// written to its slot of `sets_out` / `springs_out`, the live sets before it: those of the
/// groups of 256 slots before its own, from `scan_groups` ([`live_groups`], which the kernel
/// `set_point_count` writes), and those before it in its group (the kernel's workgroup scan,
/// `shared/group_prefix.wgsl`). Its [`SET_MOVED`] flag is cleared (the GPU step's last merge
/// invocation ends at its first overlap search, before `merge_hull` would clear it; on the CPU path
/// the merge has cleared it already), and the live sets' touching pairs
/// ([`ContactSet::touching`]) are added to `acl_sizes.touching` (an integer sum: the kernel's
/// per-workgroup sums and atomics give the same total); a live set still dirty (the GPU step's
/// rebuild rounds were too few) raises `ACL_SIZES_MORE_ROUNDS` in `acl_sizes.errors`. The thread
/// of slot `m − 1` also ends the step's counts: the verdict on the last round's merge invocation
/// ([`super::counts::last_round_merge_verdict`]) and the live sets' number as the table length
/// ([`super::counts::compacted_counts`]).
#[allow(clippy::too_many_arguments)]
pub fn set_compact(
    rebuild: &RebuildParams,
    sets: &[ContactSet],
    springs: &[StictionSpring],
    scan_groups: &[u32],
    sets_out: &mut [ContactSet],
    springs_out: &mut [StictionSpring],
    acl_sizes: &mut AclSizes,
    merge_counters: &mut MergeCounters,
) {
    let m = (rebuild.num_sets as usize).min(sets.len());
    let mut touching = 0u32;
    let live = sets[..m].iter().map(|s| (s.flags & SET_LIVE != 0) as u32);
    let total = crate::scan::group_prefix_walk(live, scan_groups, |k, live, d| {
        if live == 0 {
            return;
        }
        let s = &sets[k];
        touching = touching.wrapping_add(s.touching);
        if s.flags & SET_DIRTY != 0 {
            acl_sizes.errors |= ACL_SIZES_MORE_ROUNDS;
        }
        let d = d as usize;
        sets_out[d] = ContactSet {
            flags: s.flags & !SET_MOVED,
            ..*s
        };
        springs_out[4 * d..4 * d + 4].copy_from_slice(&springs[4 * k..4 * k + 4]);
    });
    super::counts::last_round_merge_verdict(merge_counters, acl_sizes);
    super::counts::compacted_counts(total, acl_sizes, merge_counters);
    acl_sizes.touching = acl_sizes.touching.wrapping_add(touching);
}

/// Stage `set_compact`: the live sets per 256 slots ([`live_groups`]) → the kernel `set_compact`,
/// into `sets_out` / `springs_out` (resized to the live sets; they keep their capacity). Returns
/// the number of live sets.
pub fn set_compact_stage(
    sets: &[ContactSet],
    springs: &[StictionSpring],
    groups: &mut Vec<u32>,
    sets_out: &mut Vec<ContactSet>,
    springs_out: &mut Vec<StictionSpring>,
) -> usize {
    let n = sets.len();
    let p = RebuildParams {
        num_sets: n as u32,
        ..Default::default()
    };
    crate::scan::resize_with_headroom(groups, n.div_ceil(256), 0);
    live_groups(p.num_sets, sets, groups);
    let live = groups.iter().sum::<u32>() as usize;
    sets_out.clear();
    sets_out.resize(live, ContactSet::default());
    springs_out.clear();
    springs_out.resize(4 * live, StictionSpring::default());
    // (The CPU path sums the touching pairs over its table after the step, compacted or not.)
    let mut sizes = AclSizes::default();
    set_compact(
        &p,
        sets,
        springs,
        groups,
        sets_out,
        springs_out,
        &mut sizes,
        &mut MergeCounters::default(),
    );
    live
}

/// Kernel `set_dirty_count` (`shaders/set_dirty_count.wgsl`), one thread per set plus one:
/// `dirty_dest[k]` = 1 for a live dirty set `k < rebuild.num_sets` ([`ContactSet::is_dirty`]),
/// else 0, and `dirty_dest[num_sets]` = 0; the exclusive scan of it gives each dirty set its slot
/// in the dirty list and, last, their number; and the group sums of those `num_sets + 1` words
/// into `scan_groups` ([`crate::scan::write_groups`]; the scan is grouped).
pub fn set_dirty_count(
    rebuild: &RebuildParams,
    sets: &[ContactSet],
    dirty_dest: &mut [u32],
    scan_groups: &mut [u32],
) {
    let n = rebuild.num_sets as usize;
    for (d, s) in dirty_dest[..n].iter_mut().zip(&sets[..n]) {
        *d = s.is_dirty() as u32;
    }
    dirty_dest[n] = 0;
    crate::scan::write_groups(&dirty_dest[..n + 1], scan_groups);
}

/// Kernel `set_dirty_write` (`shaders/set_dirty_write.wgsl`), one thread per set plus one, after
/// [`set_dirty_count`] (no scan in between): each set `k` counted there (`dirty_dest[k]` = 1)
/// writes `dirty[slot] = k`, its slot the dirty sets before it, from the group sums `scan_groups`
/// and the values of its group before it ([`crate::scan::group_prefix_walk`]), so the list is in
/// set order; the thread at `num_sets`, whose slot is the list's length, starts the rebuild round
/// from it ([`super::counts::round_counts`]: `acl_sizes.num_dirty`, the last merge's verdict, the
/// pool base, `rebuild.num_dirty` and the round's grids in `plan_out`). `dirty` needs no capacity:
/// it holds at most `num_sets` entries, and the set table's capacity bounds those.
#[allow(clippy::too_many_arguments)]
pub fn set_dirty_write(
    plan_spec: &CountPlan,
    rebuild: &mut RebuildParams,
    dirty_dest: &[u32],
    scan_groups: &[u32],
    dirty: &mut [u32],
    acl_sizes: &mut AclSizes,
    merge_counters: &mut MergeCounters,
    pool_counters: &mut PoolAlloc,
    plan_out: &mut [u32],
) {
    let n = rebuild.num_sets as usize;
    let nd = crate::scan::group_prefix_walk(
        dirty_dest[..n].iter().copied(),
        scan_groups,
        |k, v, slot| {
            if v != 0 {
                dirty[slot as usize] = k as u32;
            }
        },
    );
    super::counts::round_counts(
        nd,
        plan_spec,
        rebuild,
        acl_sizes,
        merge_counters,
        pool_counters,
        plan_out,
    );
}

/// Stage `set_dirty` on the CPU path: the live dirty sets of `sets`, in set order, into `dirty`
/// (`set_dirty_count` → `set_dirty_write`, which takes each slot from the group sums). Returns
/// their number.
pub fn set_dirty_stage(
    sets: &[ContactSet],
    dirty_dest: &mut Vec<u32>,
    groups: &mut Vec<u32>,
    dirty: &mut Vec<u32>,
) -> usize {
    let n = sets.len();
    let mut p = RebuildParams {
        num_sets: n as u32,
        ..Default::default()
    };
    crate::scan::resize_with_headroom(dirty_dest, n + 1, 0);
    crate::scan::resize_with_headroom(groups, (n + 1).div_ceil(256), 0);
    set_dirty_count(&p, sets, dirty_dest, groups);
    let nd = groups.iter().sum::<u32>() as usize;
    // Every slot below nd is written by set_dirty_write.
    crate::scan::resize_with_headroom(dirty, nd, 0);
    // The CPU path keeps the round's counts in its own fields and plans no grid: an empty plan.
    let mut sizes = AclSizes::default();
    let plan = CountPlan {
        kind: crate::layout::COUNT_PLAN_GRIDS,
        ..Default::default()
    };
    set_dirty_write(
        &plan,
        &mut p,
        dirty_dest,
        groups,
        dirty,
        &mut sizes,
        &mut MergeCounters::default(),
        &mut PoolAlloc::default(),
        &mut [],
    );
    debug_assert_eq!(sizes.num_dirty as usize, nd);
    nd
}
