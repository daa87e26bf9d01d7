//! ACL's whole step on the GPU ([`AclGpu`]): the state of [`super::AclContact`] in GPU buffers and one
//! [`super::AclContact::step`] as a recorded list of operations (kernel dispatches, and small buffer
//! copies before the first and after the last, which the GPU step records with its own copies),
//! whose kernels' CPU twins the CPU path runs.
//!
//! Inputs from the caller's buffer set: `pos`, `segments`, `params` (`num_segments`, `quadrature`),
//! `quad_weights`, `quad_arc`, `seg_contact` (read by the scheduler's and the rebuild's kernels) and
//! `force` (the gather adds into it). The host writes per step only the `sched_step` record
//! ([`SchedGpu::step_uniform`]) and the step number in the `rebuild` uniform; every count a stage
//! needs (sets, dirty sets, releases, touching pairs) stays on the GPU.
//!
//! # Operations of one step
//!
//! | # | stage | counts it reads |
//! |---|---|---|
//! | 1 | before the first dispatch: copy `acl_sizes.num_sets` into `acl.num_sets`, `rebuild.num_sets` and the lookup's uniform, `acl_sizes.released.count` into `sched_step.num_released` (both final since the last step) | |
//! | 2 | `acl_step_start`: the step's counters reset (`acl_counts`' step phase), the scheduler's start (`sched_sizes`' phase 0) and the lookup's counts cleared (`set_lookup_clear`), one dispatch | |
//! | 3 | the set lookup (`set_lookup_*`, after its clear; its scan one `scan_into` dispatch up to [`crate::scan::SCAN_INTO_MAX`] segments) | `acl.num_sets` |
//! | 4 | the scheduler ([`SchedGpu`], after its start: [`SchedGpu::dispatches_started`]); its grid and newcomer search left out after a quiet stretch in which no segment entered a cell ([`AclCaps::newcomers`]), its touching list when coalescing is (row 6: only coalescing reads the list; the count is `schedule_process`'s) | its own (`sched_p*`) |
//! | 5 | `acl_counts`' scheduled phase, the touching count into `merge_counters`: with coalescing in `coalesce_heads` (row 6's first dispatch), without it in `acl_scheduled_plan` with row 8's `count_plan` (the table length is then the step's start's). (The released list, which the scheduler reads, is emptied in row 2: the scheduler's uniform holds its length since row 1.) | |
//! | 6 | coalescing and merging ([`MergeGpu`], with `contact_coalesce`, whose `coalesce_heads` first moves the touching count; after a quiet stretch its first pass searches the new sets instead of the set index, and later passes the roots the pass before grew, [`AclGpu::fewer_indexed`]); left out after a quiet stretch without touching pairs ([`AclCaps::coalesce`]) | `merge_counters` |
//! | 7 | with coalescing only (without, they hold it since row 1): `acl_coalesced_plan` writes `merge_counters.sets.count` into `acl.num_sets`, `rebuild.num_sets` (`acl_counts`' coalesced phase) and plans row 8's grids from it (`count_plan`'s work) | |
//! | 8 | `set_evaluate`, `set_force` (both grids counted from `merge_counters.sets`, by row 7's `acl_coalesced_plan` or row 5's `acl_scheduled_plan`) | `acl.num_sets` |
//! | 9 | R rebuild rounds, each: the dirty list (`set_dirty_count` → `set_dirty_write`, which takes each slot from the former's group sums and a workgroup scan, and whose last thread starts the round: the verdict on the merge before it, `acl_sizes.num_dirty` into `rebuild.num_dirty`, the pool base, and the three grids over the dirty sets, a workgroup each, a thread each, a thread each plus one, of the round's kernels), `set_rebuild_size`, `pool_alloc_size` → `pool_alloc` (the pools' ranges, the releases and the garbage: each dirty set's offsets from the former's sums per 256 dirty sets and a workgroup scan, no scan dispatch), `set_rebuild_points`, `set_rebuild`, `set_rebuild_watch`, `set_rebuild_springs`, `set_rebuild_headers`, merge passes ([`MergeGpu`] without coalescing; after a quiet stretch its first pass searches the round's dirty list instead of the set index, and later passes the roots the pass before grew, [`AclGpu::fewer_indexed`]; the last round's chain ends at its first pass's search, [`MergeGpu::dispatches_to_first_search`]) | `rebuild` |
//! | 10 | (no dirty list: a live set still dirty after the last round raises `ACL_SIZES_MORE_ROUNDS` in `set_compact`, row 12, and the step reruns with more rounds) | |
//! | 11 | `stiction_forces`; `set_point_count` (also the live sets per 256 slots, for row 12) → scan (one `scan_into` dispatch, `point_count` into `point_start`, up to [`crate::scan::SCAN_INTO_MAX`] points) → `set_point_write`, `set_gather` (the point table in set order without a sort, [`super::gather`]) | `acl` |
//! | 12 | `set_compact` (each live set's slot from row 11's group sums and a workgroup scan, no scan dispatch; into `sets_out`, `springs_out`, the moved flags cleared; flags a live set still dirty; the thread of the last slot takes the verdict on the last round's merge and writes the table length) | `rebuild` |
//! | 13 | `segment_rebuilds` (the step's rebuilds per segment, for `--color updates`; only when a caller turns it on, [`AclGpu::set_count_rebuilds`]), on `sets_out` | `acl_sizes` |
//! | 14 | after the last dispatch: copies of `sets_out`, `springs_out` back | |
//!
//! The CPU path loops "rebuild the dirty sets, merge what grew" until nothing is dirty; the GPU runs
//! a fixed number of rounds (a round with nothing dirty changes nothing) and the host reruns the step
//! with more when a set is still dirty after the last: the result is the CPU's either way.
//!
//! **Pool compaction** is the one decision the host makes: between steps (see
//! [`AclGpu::compact_pools`]), from the garbage counts it read back and the pools' lengths, by the
//! CPU path's rule ([`PoolGarbage::worth_compacting`]). Done after every step, the result is the CPU
//! path's bit for bit (the CPU compacts at the end of the step it decides in); done after a batch of
//! steps it comes later, which moves pool offsets but no force.
//!
//! **The blocks pool in pages** ([`super::pages`]): where the `K̄` blocks pool (`k_pool`) is larger
//! than a binding (a garment on a device of 128 MiB bindings) it is in pages, buffers of their own,
//! and the kernels that bind it (`set_force` in row 8, `set_rebuild` in row 9, and
//! `pool_compact_blocks`) are dispatched once per page (the compaction once per pair of pages);
//! one page, one dispatch, as before. The watch pools (`set_evaluate`, `set_rebuild_watch`,
//! `pool_compact_watch`), the rebuild's pair terms (`set_rebuild`, `set_rebuild_headers`) and its
//! watched-pair scratch (`plan_watch`, `plan_watch_loc`, by dirty index: `set_rebuild_size`,
//! `set_rebuild_watch`) alike.
//!
//! **Capacities** ([`AclCaps`]): the set table, the point, block, watched-pair and term pools, the
//! point table's records and the released boxes, each with a count and an overflow flag, plus the
//! scheduler's and the merge chain's; [`AclGpu::step`] saves the persistent state before the step and
//! on any overflow (or too few rounds or passes) restores it, grows and reruns.

use super::merge_gpu::{MergeCaps, MergeGpu, MergeVerdict};
use super::pages::{
    AclPageLimits, PageLimits, PagePairs, PoolPages, RebuildRun, RUN_SLOT_BYTES, WATCH_SLOT_BYTES,
};
use super::rebuild::{
    pool_dest_lens, PoolAlloc, PoolGarbage, RebuildParams, RebuildPlan, RebuildTerm,
    MAX_REBUILD_WORK, MAX_WATCH,
};
use super::sets::ContactSet;
use super::stiction::StictionSpring;
use super::{AclContact, WatchLoc, WatchPair};
use crate::budget::{wait_after_raise, QuietCut};
use crate::layout::{
    AclCounters, AclSizes, AclUniform, GridSpec, MergeCounters, MergeUniform, SchedCounters,
    SchedUniform, ACL_SIZES_MORE_PASSES, ACL_SIZES_MORE_ROUNDS, DIRTY_OVERLAP_MAX,
    NEWCOMER_LIST_CANDIDATES, NEWCOMER_LIST_MAX,
};
use crate::pipelines::{read_mapped, Buffers, Dispatch, PipelineError, Pipelines};
use crate::scan::{CountSource, CountedGrid, GpuScan};
use crate::sched::gpu::{SchedCaps, SchedGpu, SchedGpuError};
use crate::sched::lookup_gpu::{LookupCaps, LookupGpu};
use std::mem::{offset_of, size_of};

mod checkpoint;

/// One operation of the recorded step: a dispatch, or a copy between buffers (which ends the
/// compute pass it follows).
#[derive(Clone)]
pub enum Op {
    Dispatch(Dispatch),
    Copy {
        src: wgpu::Buffer,
        src_offset: u64,
        dst: wgpu::Buffer,
        dst_offset: u64,
        size: u64,
    },
}

/// Records `ops` into `enc`: runs of dispatches in one compute pass each (labelled `label`), copies
/// between them.
pub fn record_ops(
    pipelines: &Pipelines,
    enc: &mut wgpu::CommandEncoder,
    ops: &[Op],
    label: &str,
) -> Result<(), PipelineError> {
    let mut at = 0;
    while at < ops.len() {
        match &ops[at] {
            Op::Copy {
                src,
                src_offset,
                dst,
                dst_offset,
                size,
            } => {
                enc.copy_buffer_to_buffer(src, *src_offset, dst, *dst_offset, *size);
                at += 1;
            }
            Op::Dispatch(_) => {
                let mut pass = enc.begin_compute_pass(&wgpu::ComputePassDescriptor {
                    label: Some(label),
                    timestamp_writes: None,
                });
                while let Some(Op::Dispatch((name, bg, threads))) = ops.get(at) {
                    pipelines.dispatch(&mut pass, name, bg, threads.clone())?;
                    at += 1;
                }
            }
        }
    }
    Ok(())
}

/// The kernels of the step (besides the scheduler's, the merge chain's, the scans and sorts).
pub const KERNELS: &[&str] = &[
    "acl_step_start",
    "acl_scheduled_plan",
    "acl_coalesced_plan",
    "set_evaluate",
    "set_force",
    "stiction_forces",
    "set_point_count",
    "set_point_write",
    "set_gather",
    "set_compact",
    "pool_compact_size",
    "pool_compact_points",
    "pool_compact_vectors",
    "pool_compact_blocks",
    "pool_compact_watch",
    "pool_compact_headers",
    "set_rebuild_size",
    "pool_alloc_size",
    "pool_alloc",
    "set_rebuild_points",
    "set_rebuild",
    "set_rebuild_runs",
    "set_rebuild_args",
    "set_rebuild_watch",
    "set_rebuild_springs",
    "set_rebuild_headers",
    "set_dirty_count",
    "set_dirty_write",
    "segment_rebuilds",
];

/// The CPU path's stage times of an ACL step (`--stats`, milliseconds per step; their sum is its
/// `contact_ms`): the scheduler's raster (with the monitor, the entries dropped and the grid), its
/// newcomer search (with the entries merged and released), its schedule processing, then
/// coalescing and merging (with the table's compaction), the evaluation (with the forces and their
/// gather) and the rebuilds.
pub const STAGE_KEYS: [&str; 6] = [
    "raster_ms",
    "newcomers_ms",
    "schedule_ms",
    "coalesce_ms",
    "evaluate_ms",
    "rebuild_ms",
];

/// The stage of [`STAGE_KEYS`] (its index) that an ACL step's operations enter at `kernel`: the
/// operations after it are that stage's until the next kernel that names one, so the kernels that
/// several stages record (scans, sorts, `count_plan`) count for the stage that records them. The
/// step begins with `acl_step_start` (its resets, and the set lookup the scheduler reads, which
/// the CPU path builds outside its stage times, count as the schedule's).
pub fn stage_entered_at(kernel: &str) -> Option<usize> {
    STAGE_ENTRIES
        .iter()
        .find(|(k, _)| *k == kernel)
        .map(|&(_, stage)| stage)
}

/// The kernels at which [`stage_entered_at`] enters a stage, and the stage.
const STAGE_ENTRIES: &[(&str, usize)] = &[
    ("aabb_raster_movement", 0),
    ("newcomer_count", 1),
    ("newcomer_list_write", 1),
    ("release_scan_sizes", 1),
    ("release_count", 1),
    ("acl_step_start", 2),
    ("segment_windows_quadrature", 2),
    ("coalesce_heads", 3),
    ("set_bin_count", 3),
    ("set_overlap_count", 3),
    ("dirty_overlap_write", 3),
    ("coalesce_overlap_write", 3),
    ("moved_overlap_write", 3),
    ("merge_label", 3),
    ("merge_hull", 3),
    ("merge_apply", 3),
    ("set_compact", 3),
    ("acl_scheduled_plan", 4),
    ("acl_coalesced_plan", 4),
    ("set_evaluate", 4),
    ("set_force", 4),
    ("stiction_forces", 4),
    ("set_point_count", 4),
    ("set_gather", 4),
    ("set_dirty_count", 5),
    ("segment_rebuilds", 5),
];

/// The stage ([`stage_entered_at`]) of each of an ACL step's dispatches, in order, by their kernels.
pub fn dispatch_stages<'a>(kernels: impl IntoIterator<Item = &'a str>) -> Vec<usize> {
    let mut stage = 2;
    kernels
        .into_iter()
        .map(|k| {
            stage = stage_entered_at(k).unwrap_or(stage);
            stage
        })
        .collect()
}

/// Every kernel an [`AclGpu`] needs (for `Pipelines::only`).
pub fn all_kernels() -> Vec<&'static str> {
    let mut v: Vec<&'static str> = KERNELS.to_vec();
    for k in crate::sched::gpu::KERNELS
        .iter()
        .chain(super::merge_gpu::KERNELS)
        .chain(crate::sched::lookup_gpu::KERNELS)
    {
        if !v.contains(k) {
            v.push(k);
        }
    }
    v
}

/// The capacities of the step's variable-size buffers and its iteration budget.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, bytemuck::Pod, bytemuck::Zeroable)]
pub struct AclCaps {
    pub sched: SchedCaps,
    /// The merge chains' (its `sets` is the set table's capacity, its `touching` the scheduler's).
    pub merge: MergeCaps,
    /// Entries of the point pools (`cp`, `f0`, `dbar`, `m`, `dev`, `fout`).
    pub points: u32,
    /// `K̄` blocks.
    pub blocks: u32,
    /// Watched pairs.
    pub watch: u32,
    /// Pair terms of one rebuild round.
    pub terms: u32,
    /// The point table's records.
    pub records: u32,
    /// Rebuild rounds recorded per step (at least 1).
    pub rounds: u32,
    /// 1: the step records coalescing and its merge chain (stage 6); 0: not, a trial after a
    /// quiet stretch ([`AclGpu::fewer_coalesce`]): a step whose scheduler then finds touching
    /// pairs reruns its batch with it.
    pub coalesce: u32,
    /// The scheduler's newcomer search ([`SchedGpu::dispatches_with`]): 2, the grid and the search
    /// through it; 1, the listed search (no grid: each segment against the few that entered a
    /// cell, at most [`NEWCOMER_LIST_MAX`]); 0, none. Less than 2 is a trial after a quiet stretch
    /// ([`AclGpu::fewer_newcomers`]): a step on which a segment enters a cell reruns its batch with
    /// 1, and one on which more than [`NEWCOMER_LIST_MAX`] do with 2.
    pub newcomers: u32,
}

impl AclCaps {
    /// As the step uses them: the merge chain's touching pairs are the scheduler's, at least
    /// one rebuild round, coalescing on (1) or off (0).
    fn normalized(&self) -> AclCaps {
        AclCaps {
            merge: MergeCaps {
                touching: self.sched.touching,
                indexed: self.merge.indexed.min(1),
                ..self.merge
            },
            rounds: self.rounds.max(1),
            coalesce: self.coalesce.min(1),
            newcomers: self.newcomers.min(2),
            ..*self
        }
    }

    /// Whether `self` and `other` size every buffer alike (they may differ in budgets only).
    fn same_buffers(&self, other: &AclCaps) -> bool {
        let budgets = |c: &AclCaps| AclCaps {
            merge: MergeCaps {
                rounds: 0,
                passes: 0,
                indexed: 0,
                ..c.merge
            },
            rounds: 0,
            coalesce: 0,
            newcomers: 0,
            ..*c
        };
        budgets(self) == budgets(other)
    }

    /// Every capacity and budget the larger of `self`'s and `other`'s (a relaxation carries what
    /// one radius stage grew to into the next: `relax::relax_gpu`).
    pub fn at_least(&self, other: &AclCaps) -> AclCaps {
        let (a, b) = (&self.sched, &other.sched);
        let (m, n) = (&self.merge, &other.merge);
        AclCaps {
            sched: SchedCaps {
                entries: a.entries.max(b.entries),
                grid: a.grid.max(b.grid),
                cand: a.cand.max(b.cand),
                fresh: a.fresh.max(b.fresh),
                touching: a.touching.max(b.touching),
                release: a.release.max(b.release),
                lookup_words: a.lookup_words.max(b.lookup_words),
                released: a.released.max(b.released),
            },
            merge: MergeCaps {
                sets: m.sets.max(n.sets),
                touching: m.touching.max(n.touching),
                edges: m.edges.max(n.edges),
                index: m.index.max(n.index),
                rounds: m.rounds.max(n.rounds),
                passes: m.passes.max(n.passes),
                indexed: m.indexed.max(n.indexed),
            },
            points: self.points.max(other.points),
            blocks: self.blocks.max(other.blocks),
            watch: self.watch.max(other.watch),
            terms: self.terms.max(other.terms),
            records: self.records.max(other.records),
            rounds: self.rounds.max(other.rounds),
            coalesce: self.coalesce.max(other.coalesce),
            newcomers: self.newcomers.max(other.newcomers),
        }
    }

    /// Each capacity with the bytes of the largest buffer it sizes (one storage binding each), as
    /// the builders make them ([`SchedGpu`], [`MergeGpu`], [`AclGpu::build`]): the per-record
    /// sizes times the capacity. A device binds at most `max_storage_buffer_binding_size` bytes
    /// (wgpu's default, and lavapipe's: 128 MiB), so [`AclCaps::fit_binding`] keeps the first
    /// capacities within it and [`AclCaps::over_binding`] names one that a growth would take past
    /// it. (tests/gpu_acl_step.rs checks the table against the buffers a build makes.)
    pub fn binding_bytes(&self) -> [(&'static str, u64); 18] {
        use crate::layout::{KeyValue, Release, SchedEntry};
        let per_set = [
            size_of::<ContactSet>(),
            4 * size_of::<StictionSpring>(),
            size_of::<RebuildPlan>(),
        ]
        .into_iter()
        .max()
        .unwrap_or(0);
        let b = |n: u32, unit: usize| n as u64 * unit as u64;
        let (s, m) = (&self.sched, &self.merge);
        [
            ("sched.entries", b(s.entries, size_of::<SchedEntry>())),
            ("sched.grid", b(s.grid, size_of::<KeyValue>())),
            ("sched.cand", b(s.cand, size_of::<KeyValue>())),
            ("sched.fresh", b(s.fresh, size_of::<SchedEntry>())),
            ("sched.touching", b(s.touching, 8)),
            // (release_offsets: one word more than the released boxes.)
            ("sched.lookup_words", b(s.lookup_words, 4)),
            ("sched.released", b(s.released, size_of::<Release>())),
            ("merge.sets", b(m.sets, per_set)),
            // The rebuild's watched-pair scratch, a dirty set's slots per set slot (in pages by
            // dirty index where the device binds one set's: [`AclCaps::paged_within`]). Sized by
            // `merge.sets`, so no capacity of its own in [`AclCaps::sized_mut`].
            ("merge.watch", b(m.sets, WATCH_SLOT_BYTES as usize)),
            ("merge.touching", b(m.touching, 8)),
            ("merge.edges", b(m.edges, 8)),
            ("merge.index", b(m.index, size_of::<KeyValue>())),
            ("points", b(self.points, 16)),
            // (In pages that each fit where the device binds a page: [`AclCaps::paged_within`].)
            ("blocks", b(self.blocks, 24)),
            (
                "watch",
                b(
                    self.watch,
                    size_of::<WatchPair>().max(size_of::<WatchLoc>()),
                ),
            ),
            // (Likewise.)
            ("terms", b(self.terms, size_of::<RebuildTerm>())),
            ("records", b(self.records, 8)),
            // The release slots size no buffer (a thread count).
            ("sched.release", 0),
        ]
    }

    /// A step's counts `c` as capacities (the budgets 0): each the count its capacity bounds.
    pub fn counted(c: &AclStepCounters) -> AclCaps {
        AclCaps {
            sched: SchedCaps {
                entries: c.sched.entries.count,
                grid: c.sched.grid.count,
                cand: c.sched.cand.count,
                fresh: c.sched.fresh.count,
                touching: c.sched.touching.count,
                release: c.sched.release.count,
                lookup_words: c.sizes.lookup.count,
                released: c.sizes.released.count,
            },
            merge: MergeCaps {
                sets: c.merge.sets.count,
                // One capacity with the scheduler's ([`AclCaps::normalized`]).
                touching: c.sched.touching.count,
                edges: c.merge.edges.count,
                index: c.merge.index.count,
                rounds: 0,
                passes: 0,
                indexed: 0,
            },
            points: c.pools.len[0],
            blocks: c.pools.len[1],
            watch: c.pools.len[2],
            terms: c.pools.len[3],
            records: c.acl.records,
            rounds: 0,
            coalesce: 0,
            newcomers: 0,
        }
    }

    /// The capacities that size a buffer, by their rows' names in [`AclCaps::binding_bytes`].
    fn sized_mut(&mut self) -> [(&'static str, &mut u32); 16] {
        let (s, m) = (&mut self.sched, &mut self.merge);
        [
            ("sched.entries", &mut s.entries),
            ("sched.grid", &mut s.grid),
            ("sched.cand", &mut s.cand),
            ("sched.fresh", &mut s.fresh),
            ("sched.touching", &mut s.touching),
            ("sched.lookup_words", &mut s.lookup_words),
            ("sched.released", &mut s.released),
            ("merge.sets", &mut m.sets),
            ("merge.touching", &mut m.touching),
            ("merge.edges", &mut m.edges),
            ("merge.index", &mut m.index),
            ("points", &mut self.points),
            ("blocks", &mut self.blocks),
            ("watch", &mut self.watch),
            ("terms", &mut self.terms),
            ("records", &mut self.records),
        ]
    }

    /// The bytes of [`AclCaps::binding_bytes`]' row `name`.
    pub fn row_bytes(&self, name: &str) -> Option<u64> {
        self.binding_bytes()
            .into_iter()
            .find(|r| r.0 == name)
            .map(|r| r.1)
    }

    /// Each sized capacity's row: its name, the capacity, and the bytes a record of its largest
    /// buffer takes.
    fn rows(&self) -> Vec<(&'static str, u32, u64)> {
        let mut caps = *self;
        caps.sized_mut()
            .into_iter()
            .map(|(name, cap)| {
                let b = self.row_bytes(name).expect("listed");
                (name, *cap, if *cap == 0 { 0 } else { b / *cap as u64 })
            })
            .collect()
    }

    /// Lowers every capacity whose largest buffer would pass `limit` bytes (a device's
    /// `max_storage_buffer_binding_size`) to the most that fits
    /// ([`crate::gpu::binding_records`]); the others stay. The first capacities are estimates (a
    /// step that needs more grows them and reruns), and large scenes' estimates passed wgpu's
    /// default limit.
    pub fn fit_binding(&mut self, limit: u64) {
        let rows = self.rows();
        for ((name, cap), (_, _, unit)) in self.sized_mut().into_iter().zip(rows) {
            if *cap as u64 * unit > limit && !AclCaps::paged_within(name, limit) {
                *cap = crate::gpu::binding_records(unit, limit);
            }
        }
    }

    /// The capacities a growth from `self` to `wanted` gets on a device that binds `limit` bytes:
    /// each capacity whose buffer would pass the limit grows only as far as fits
    /// ([`crate::gpu::binding_records`]), never below `self`'s. `needed` are the capacities the
    /// overflowed counts asked for (each a count and a quarter or a half), `wanted` those with the
    /// room the run adds ahead of need ([`AclGpu::ahead_of`]). Fails with a capacity and the bytes
    /// it needed when it overflowed and cannot grow at all: then its count itself is past the
    /// limit.
    ///
    /// Why: the room a growth adds is a margin against the next steps' rise, not something the
    /// step needs. The sweater's schedule table on lavapipe counted 7.6 million entries (122 MB
    /// in a 134 MB binding), and the run stopped because room for a quarter more did not fit.
    pub fn grown_within(
        &self,
        wanted: AclCaps,
        needed: &AclCaps,
        limit: u64,
    ) -> Result<AclCaps, (&'static str, u64)> {
        let (now, need) = (self.rows(), needed.rows());
        let mut out = wanted;
        let want = out.rows();
        for (i, (_, cap)) in out.sized_mut().into_iter().enumerate() {
            let (name, want_cap, unit) = want[i];
            if want_cap as u64 * unit <= limit || AclCaps::paged_within(name, limit) {
                continue;
            }
            let (current, need_cap) = (now[i].1, need[i].1);
            let most = crate::gpu::binding_records(unit, limit).max(current);
            if need_cap > current && most <= current {
                return Err((name, need_cap as u64 * unit));
            }
            *cap = most;
        }
        Ok(out)
    }

    /// The first capacity whose largest buffer passes `limit` bytes, with those bytes (not a
    /// paged pool's where the device binds its pages: [`AclCaps::paged_within`]).
    pub fn over_binding(&self, limit: u64) -> Option<(&'static str, u64)> {
        self.binding_bytes()
            .into_iter()
            .find(|&(name, b)| b > limit && !AclCaps::paged_within(name, limit))
    }

    /// Whether capacity `name` sizes a pool that [`AclGpu`] lays out in pages when it passes a
    /// binding ([`super::pages`]: the `K̄` blocks, the rebuild's pair terms and its watched-pair
    /// scratch), on a device that binds `limit` bytes, room for the largest range included: then
    /// no limit bounds it (only the device's memory). On a device that binds less than a page
    /// needs (3.2 MB of blocks, 1 MB of terms, a set's 512 bytes of scratch) it is bounded as the
    /// others are.
    pub fn paged_within(name: &str, limit: u64) -> bool {
        let (unit, room) = match name {
            "blocks" => (24, super::pages::MAX_SET_BLOCKS),
            "terms" => (size_of::<RebuildTerm>() as u64, MAX_REBUILD_WORK),
            "merge.watch" => (WATCH_SLOT_BYTES, 0),
            "watch" => (16, MAX_WATCH as u32),
            _ => return false,
        };
        limit / unit > room as u64
    }

    /// The first capacities for a scene of `segments` segments: what the default swatch's first
    /// steps need per segment (its sets, model pools and scheduler tables; measured in
    /// tests/gpu_acl_step.rs), with a quarter more. The kernels not counted run over their
    /// capacity (surplus threads exit at once), so room costs some time; a step that needs more
    /// grows it and reruns. (The scheduler's candidates: one a pair since 2026-12-06, where each
    /// pair came once per shared new cell and side; `examples/first_caps` measured 25.8 a segment
    /// with the quarter on the swatch as built, and the tiny swatch 20.4.)
    pub fn for_segments(segments: u32) -> AclCaps {
        let nseg = segments.max(16);
        let sets = (nseg / 2 + nseg / 8).max(64);
        let mut caps = AclCaps::all(sets);
        caps.points = 12 * sets;
        caps.blocks = 80 * sets;
        caps.watch = 64 * sets;
        caps.terms = 8 * sets;
        caps.records = 12 * sets;
        caps.merge.edges = sets;
        caps.merge.index = 2 * sets;
        caps.sched.entries = 16 * nseg;
        caps.sched.grid = 8 * nseg;
        caps.sched.cand = 32 * nseg;
        caps.sched.fresh = 16 * nseg;
        caps.sched.touching = 2 * nseg;
        caps.sched.lookup_words = 6 * nseg + 64;
        caps.sched.release = sets;
        caps.sched.released = sets;
        caps
    }

    /// Every capacity `n` (at least 16), 2 rebuild rounds, 1 merge pass of 8 label rounds.
    pub fn all(n: u32) -> AclCaps {
        let n = n.max(16);
        AclCaps {
            sched: SchedCaps::all(n),
            merge: MergeCaps {
                sets: n,
                touching: n,
                edges: n,
                index: n,
                rounds: 8,
                passes: 1,
                indexed: 1,
            },
            points: n,
            blocks: n,
            watch: n,
            terms: n,
            records: n,
            rounds: 2,
            coalesce: 1,
            newcomers: 2,
        }
    }
}

/// The name of page `p` of a paged buffer (`k_pool` and `rebuild_terms`, their uniforms
/// `block_page` and `term_page`): the name itself for the first, `name.p` for the others.
pub fn page_name(name: &str, p: usize) -> String {
    if p == 0 {
        name.to_string()
    } else {
        format!("{name}.{p}")
    }
}

/// Makes the buffers of `pages` in `own` (page `p` named [`page_name`]`(buffer, p)`, zeroed,
/// `unit` bytes an entry) and their uniforms (`uniform`'s pages), and forgets those of `old`'s
/// pages past them.
#[allow(clippy::too_many_arguments)]
fn make_pages(
    own: &mut Buffers,
    device: &wgpu::Device,
    queue: &wgpu::Queue,
    pages: &PoolPages,
    old: &PoolPages,
    buffer: &str,
    uniform: &str,
    unit: usize,
) {
    for p in 0..pages.count() {
        own.zeroed(
            device,
            &page_name(buffer, p),
            pages.lens[p] as usize * unit,
            false,
        );
        let u = pages.page(p, p);
        own.upload(
            device,
            queue,
            &page_name(uniform, p),
            bytemuck::bytes_of(&u),
            true,
        );
    }
    for p in pages.count()..old.count() {
        own.remove(&page_name(buffer, p));
        own.remove(&page_name(uniform, p));
    }
}

/// The name of a uniform of two pages (`set_rebuild`'s `rebuild_pages` for blocks page `a` and
/// terms page `b`, `set_rebuild_watch`'s `watch_pages` for scratch page `a` and watch pools page
/// `b`): the name itself for the first pair, `name.a.b` for the others.
fn pair_name(uniform: &str, a: usize, b: usize) -> String {
    if (a, b) == (0, 0) {
        uniform.to_string()
    } else {
        format!("{uniform}.{a}.{b}")
    }
}

/// The limits of the pages of a pool of `unit`-byte entries on `device` (as many as a storage
/// binding holds), with `room` entries past each stride.
pub fn page_limits(device: &wgpu::Device, unit: u64, room: u32) -> PageLimits {
    let l = device.limits();
    let bytes = l.max_storage_buffer_binding_size.min(l.max_buffer_size);
    PageLimits {
        most: crate::gpu::binding_records(unit, bytes),
        room,
    }
}

/// Fails with [`AclGpuError::Binding`] when one of `caps` needs a buffer larger than `device` can
/// bind (checked before any buffer is made).
fn check_binding(device: &wgpu::Device, caps: &AclCaps) -> Result<(), AclGpuError> {
    let limit = device.limits().max_storage_buffer_binding_size;
    match caps.over_binding(limit) {
        Some((capacity, bytes)) => Err(AclGpuError::Binding {
            capacity,
            bytes,
            limit,
        }),
        None => Ok(()),
    }
}

/// Why the GPU step failed.
#[derive(Debug, thiserror::Error)]
pub enum AclGpuError {
    #[error(
        "ACL's capacity {capacity} needs a buffer of {bytes} bytes, more than this GPU binds \
         (max_storage_buffer_binding_size: {limit} bytes); the scene's contacts do not fit this \
         adapter (use a GPU that offers a larger limit, or --backend cpu)"
    )]
    Binding {
        capacity: &'static str,
        bytes: u64,
        limit: u64,
    },
    #[error(transparent)]
    Pipeline(#[from] PipelineError),
    #[error(transparent)]
    Sched(#[from] SchedGpuError),
    #[error("the ACL GPU step: {0}")]
    Gpu(String),
    #[error(transparent)]
    Checkpoint(#[from] crate::checkpoint::CheckpointError),
    #[error(
        "a contact-set merge looked at more index items than its bound (the CPU path stops alike)"
    )]
    ScanLimit,
    /// A step still had sets to rebuild after [`MAX_REBUILD_ROUNDS`] rounds.
    #[error(
        "ACL's contact sets still had to be rebuilt after {rounds} rebuild rounds in one step"
    )]
    TooManyRounds { rounds: u32 },
    #[error("the ACL GPU step raised error bits: scheduler {sched:#x}, forces {acl:#x} (first bad set {set}, point {point}), pools {pools:#x}, merge {merge:#x}")]
    Flags {
        sched: u32,
        acl: u32,
        set: u32,
        point: u32,
        pools: u32,
        merge: u32,
    },
}

impl AclGpuError {
    /// The error bits of a step's counters, as they are ([`step_failure`] words them).
    pub fn flags(c: &AclStepCounters) -> AclGpuError {
        AclGpuError::Flags {
            sched: c.sched.errors,
            acl: c.acl.errors,
            set: c.acl.first_bad_set,
            point: c.acl.first_bad_point,
            pools: c.pools.errors,
            merge: c.merge.errors,
        }
    }
}

/// Everything a step's host reads back: the counters of every stage.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, bytemuck::Pod, bytemuck::Zeroable)]
pub struct AclStepCounters {
    pub sizes: AclSizes,
    pub sched: SchedCounters,
    pub merge: MergeCounters,
    pub pools: PoolAlloc,
    pub acl: AclCounters,
}

/// The buffers whose contents carry from one step to the next and are saved before a batch for a
/// rerun, besides the scheduler's own. The pools ([`POOLS`]) carry over too but need no copy.
const PERSISTENT: &[&str] = &[
    "sets",
    "springs",
    "acl_sizes",
    "pool_counters",
    "released",
    "rebuild_counts",
];

/// The pools of the set models: buffer, which of `pool_counters.len` counts its entries, bytes per
/// entry. They are not saved before a batch (most of ACL's memory, and of the bytes a batch would
/// copy): within a batch they are append-only. Each rebuild round appends the new models at the
/// pools' lengths (`pool_alloc`, from `pool_counters.base`), nothing else writes them, and their
/// compaction runs between batches ([`AclGpu::compact_pools`]). So a failed attempt leaves every
/// entry below the lengths it started from as it found them; the restored `pool_counters` put the
/// lengths back, the restored table names only entries below them, and the rerun writes what the
/// attempt appended past them again before anything reads it. (Tests poison those entries after a
/// restore, [`AclGpu::set_poison_after_restore`], and the reruns still end bitwise where runs
/// without them do.)
///
/// `k_pool`, `watch_pool` and `watch_loc_pool` are in pages ([`super::pages`], [`PAGED_POOLS`]):
/// the name is the first page's, and the others are `k_pool.1`, `k_pool.2`, …
/// ([`AclGpu::page_buffers`]).
pub const POOLS: [(&str, usize, usize); 7] = [
    ("cp_pool", 0, 4),
    ("m_pool", 0, 4),
    ("f0_pool", 0, 16),
    ("dbar_pool", 0, 16),
    ("k_pool", 1, 24),
    ("watch_pool", 2, size_of::<WatchPair>()),
    ("watch_loc_pool", 2, size_of::<WatchLoc>()),
];

/// A paged pool's compaction ([`AclGpu::compact_pools`]): kernel, page uniform, pages, new length,
/// and its buffers (old, new, bytes an entry).
type PagedCompaction<'a> = (
    &'static str,
    &'static str,
    &'a PoolPages,
    usize,
    &'static [(&'static str, &'static str, usize)],
);

/// The bindings of one page of paged buffers: (binding, buffer) ([`AclGpu::make_ops`]).
type PageMap = Vec<(&'static str, wgpu::Buffer)>;

/// The pools of [`POOLS`] laid out in pages where they pass a binding.
pub const PAGED_POOLS: [&str; 3] = ["k_pool", "watch_pool", "watch_loc_pool"];

/// What the recorded operations' bind groups use besides the named buffers: the scans'
/// own buffers, the merge and lookup chains.
#[derive(Default)]
struct Keep {
    _scans: Vec<GpuScan>,
    _merges: Vec<MergeGpu>,
    _lookup: Option<LookupGpu>,
}

/// ACL's state and step on the GPU.
pub struct AclGpu {
    pub caps: AclCaps,
    sched: SchedGpu,
    own: Buffers,
    acl: AclUniform,
    rebuild: RebuildParams,
    merge_uniform: MergeUniform,
    npts: u32,
    stiction: bool,
    /// The pages of `k_pool` for `caps.blocks` ([`super::pages`]).
    pages: PoolPages,
    /// The pages of `rebuild_terms` for `caps.terms`.
    term_pages: PoolPages,
    /// The pages of the rebuild's watched-pair scratch (`plan_watch`, `plan_watch_loc`) for
    /// `caps.merge.sets` dirty sets.
    scratch_pages: PoolPages,
    /// The pages of the watch pools (`watch_pool`, `watch_loc_pool`) for `caps.watch`.
    watch_pages: PoolPages,
    /// What a page of each holds on this device (a binding), with room for the largest set's
    /// blocks ([`super::pages::MAX_SET_BLOCKS`]) and the largest plan's terms
    /// ([`MAX_REBUILD_WORK`]; none for the scratch, whose sets have slots of their own);
    /// [`AclGpu::set_page_limits`].
    limits: AclPageLimits,
    /// Whether the step records `segment_rebuilds` ([`AclGpu::set_count_rebuilds`]).
    count_rebuilds: bool,
    ops: Vec<Op>,
    /// Pool entries no live set uses (from the counters read back), for the compaction decision.
    pub garbage: PoolGarbage,
    /// Steps rerun because a capacity or a budget was too small.
    pub reruns: u32,
    /// The counters after the last completed step (its persistent counts: table length, pool
    /// lengths, releases).
    last: AclStepCounters,
    /// [`AclGpu::peak_counts`].
    peak: AclCaps,
    /// [`AclGpu::fewer_rounds`]' state (the quiet stretch of `caps.rounds`).
    rounds_cut: QuietCut,
    /// [`AclGpu::fewer_coalesce`]'s (of `caps.coalesce`).
    coalesce_cut: QuietCut,
    /// [`AclGpu::fewer_newcomers`]'s (of `caps.newcomers`).
    newcomers_cut: QuietCut,
    /// [`AclGpu::fewer_indexed`]'s (of `caps.merge.indexed`).
    indexed_cut: QuietCut,
    /// The same for the merge passes ([`AclGpu::fewer_passes`]): completed steps since the last
    /// change, the batches it waits for, and whether the last change was a cut.
    pass_quiet: u32,
    pass_cut_after: u32,
    pass_cut_last: bool,
    /// The same for the label rounds of each merge pass ([`AclGpu::fewer_label_rounds`]).
    label_quiet: u32,
    label_cut_after: u32,
    label_cut_last: bool,
    /// Whether [`AclGpu::restored`] poisons the pools past their lengths (tests).
    poison_after_restore: bool,
    /// Bytes it poisoned so far.
    poisoned_bytes: u64,
    _keep: Keep,
}

/// Completed steps in a row that used fewer rebuild rounds than recorded before
/// [`AclGpu::fewer_rounds`] records fewer (and the first wait of the other budgets' cuts); doubled
/// (up to [`CUT_AFTER_STEPS_MAX`]) each time a cut is undone by a step that needs more again
/// before it held as long as its wait, so a scene that keeps needing them reruns at most a batch
/// per doubling; a cut that held that long starts the waits over ([`wait_after_raise`]).
///
/// Why steps and why 64: a cut budget turns each step that needs more into a rerun of its batch,
/// so a cut pays when such steps come less often than its saving per step repays a rerun (its
/// batch's steps, at most [`crate::gpu_step::TRIAL_BATCH`] while a cut is on trial, and a
/// readback). Counted in batches, the wait was 8 to 512 steps as the batches grew, and at rest
/// about one such step in 100 left few stretches that long, so the budgets stayed raised.
/// `examples/batch_policy` replays the events of CPU runs (`benches/results/2026-12-05-acl-events-*`)
/// through a model of this policy; on the relaxed scarf's 5,000 steps, a wait of 64 steps with
/// trial batches of 16 ran 103–108 dispatches a step, against 123–125 for 8 quiet batches of up
/// to 64 steps and 151 with every stage held (a second rebuild round on 15 of its steps, new
/// pairs on 25, a segment entering a cell on 337).
pub const CUT_AFTER_STEPS: u32 = 64;
/// The most steps [`AclGpu::fewer_rounds`] and the other cuts wait for.
pub const CUT_AFTER_STEPS_MAX: u32 = 65_536;

impl AclGpu {
    /// The driver for `host`'s parameters (a model before its first step: the GPU starts from no
    /// sets), for the topology `topo` at positions `pos`. `shared` holds `pos`, `segments`,
    /// `params`, `quad_weights`, `quad_arc`, `seg_contact` and `force`.
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        device: &wgpu::Device,
        queue: &wgpu::Queue,
        pipelines: &Pipelines,
        shared: &Buffers,
        host: &mut AclContact,
        topo: &crate::state::Topology,
        pos: &[[f32; 4]],
        caps: AclCaps,
    ) -> Result<AclGpu, AclGpuError> {
        check_binding(device, &caps)?;
        host.prepare(topo);
        let acl = host.uniform(pos.len());
        let rebuild = host.rebuild_params(0, 0);
        let nq = host.nq;
        let merge_uniform = super::coalesce::merge_uniform(nq, host.params.padding);
        // The scheduler's constants (its own counts are set before its first step).
        let template = SchedUniform {
            num_segments: topo.segments.len() as u32,
            num_points: pos.len() as u32,
            ..host.scheduler().uniform(0)
        };
        let sched = SchedGpu::new(device, queue, pipelines, shared, &template, caps.sched, pos)?;
        let mut own = Buffers::default();
        own.upload(
            device,
            queue,
            "seg_cp",
            bytemuck::cast_slice(&host.seg_cp),
            false,
        );
        own.zeroed(device, "acl_counters", 16, false);
        // Per segment, the sets rebuilt since the last clear (`--color updates`).
        own.zeroed(device, "rebuild_counts", 4 * topo.segments.len(), false);
        own.zeroed(device, "merge_counters", size_of::<MergeCounters>(), false);
        let mut g = AclGpu {
            caps,
            sched,
            own,
            acl,
            rebuild,
            merge_uniform,
            npts: pos.len() as u32,
            stiction: host.params.stiction_stiffness > 0.0,
            pages: PoolPages::flat(0),
            term_pages: PoolPages::flat(0),
            scratch_pages: PoolPages::flat(0),
            watch_pages: PoolPages::flat(0),
            limits: AclPageLimits {
                blocks: page_limits(device, 24, super::pages::MAX_SET_BLOCKS),
                terms: page_limits(device, size_of::<RebuildTerm>() as u64, MAX_REBUILD_WORK),
                scratch: page_limits(device, WATCH_SLOT_BYTES, 0),
                watch: page_limits(device, 16, MAX_WATCH as u32),
            },
            count_rebuilds: false,
            poison_after_restore: false,
            poisoned_bytes: 0,
            ops: Vec::new(),
            garbage: PoolGarbage::default(),
            reruns: 0,
            last: AclStepCounters::default(),
            peak: AclCaps::counted(&AclStepCounters::default()),
            rounds_cut: QuietCut::new(CUT_AFTER_STEPS),
            coalesce_cut: QuietCut::with_floor(CUT_AFTER_STEPS, 0),
            newcomers_cut: QuietCut::with_floor(CUT_AFTER_STEPS, 0),
            indexed_cut: QuietCut::with_floor(CUT_AFTER_STEPS, 0),
            pass_quiet: 0,
            pass_cut_after: CUT_AFTER_STEPS,
            pass_cut_last: false,
            label_quiet: 0,
            label_cut_after: CUT_AFTER_STEPS,
            label_cut_last: false,
            _keep: Default::default(),
        };
        g.build(device, queue, pipelines, shared, caps, None)?;
        Ok(g)
    }

    /// (Re)makes the capacity-dependent buffers (carrying the persistent ones' contents over from
    /// the previous set through `carry`, when given) and every operation. The small persistent
    /// counters (`acl_sizes`, `pool_counters`) are written from the host's record of the last
    /// completed step, with the new capacities.
    fn build(
        &mut self,
        device: &wgpu::Device,
        queue: &wgpu::Queue,
        pipelines: &Pipelines,
        shared: &Buffers,
        caps: AclCaps,
        carry: Option<&mut wgpu::CommandEncoder>,
    ) -> Result<(), AclGpuError> {
        let caps = caps.normalized();
        let sc = caps.merge.sets as usize;
        // The paged pools: a device that binds less than a page needs stops them as a capacity
        // past its binding.
        let paged = |cap: u32, limits: PageLimits, name: &'static str, unit: usize| {
            PoolPages::new(cap, limits).map_err(|e| AclGpuError::Binding {
                capacity: name,
                bytes: e.cap as u64 * unit as u64,
                limit: device.limits().max_storage_buffer_binding_size,
            })
        };
        let pages = paged(caps.blocks, self.limits.blocks, "blocks", 24)?;
        let term_pages = paged(
            caps.terms,
            self.limits.terms,
            "terms",
            size_of::<RebuildTerm>(),
        )?;
        let scratch_pages = paged(
            caps.merge.sets,
            self.limits.scratch,
            "merge.watch",
            WATCH_SLOT_BYTES as usize,
        )?;
        let watch_pages = paged(caps.watch, self.limits.watch, "watch", 16)?;
        // The paged pools' contents: everything the old pages hold (a growth keeps the device's
        // stride).
        let carry_of = |new: &PoolPages, old: &PoolPages, what: &str| {
            new.carry_from(old, u32::MAX).ok_or_else(|| {
                AclGpuError::Gpu(format!(
                    "the {what}'s pages cannot go from stride {} to {}",
                    old.stride, new.stride
                ))
            })
        };
        let mut carry_pages = Vec::new();
        for (name, _, elem, old) in self.paged_pools() {
            let new = if name == "k_pool" {
                &pages
            } else {
                &watch_pages
            };
            let copies = carry_of(new, old, name)?;
            carry_pages.push((name, elem, self.page_buffers(name), copies));
        }
        // The scheduler's buffers the ACL stages read or write, and the caller's.
        for name in [
            "touching",
            "qpts",
            "sched_counters",
            "set_lookup",
            "released",
        ] {
            let b = self.sched.buffer(name).expect("made by SchedGpu").clone();
            self.own.insert(name, b);
        }
        for name in [
            "pos",
            "segments",
            "params",
            "quad_weights",
            "quad_arc",
            "seg_contact",
            "force",
        ] {
            if let Some(b) = shared.get(name) {
                self.own.insert(name, b.clone());
            }
        }
        // (`released` belongs to the scheduler, which carries it over itself.)
        let old: Vec<(&str, wgpu::Buffer)> = PERSISTENT
            .iter()
            .filter(|n| {
                !matches!(
                    **n,
                    "acl_sizes" | "pool_counters" | "released" | "rebuild_counts"
                )
            })
            .chain(POOLS.iter().map(|(n, _, _)| n))
            .filter(|n| !PAGED_POOLS.contains(n))
            .filter_map(|n| self.own.get(n).map(|b| (*n, b.clone())))
            .collect();
        let np = caps.points as usize;
        let sizes: Vec<(&str, usize)> = vec![
            ("sets", sc * size_of::<ContactSet>()),
            ("springs", 4 * sc * size_of::<StictionSpring>()),
            ("sets_out", sc * size_of::<ContactSet>()),
            ("springs_out", 4 * sc * size_of::<StictionSpring>()),
            // The live sets per 256 slots (set_point_count writes them, set_compact reads them).
            ("compact_groups", sc.div_ceil(256).max(1) * 4),
            ("dirty", sc * 4),
            ("dirty_dest", (sc + 1) * 4),
            // Each 256 slots' dirty sets (set_dirty_count writes them, set_dirty_write reads them).
            ("dirty_groups", (sc + 1).div_ceil(256) * 4),
            ("plans", sc * size_of::<RebuildPlan>()),
            // The pool allocation's sums per 256 dirty sets (acl::rebuild::AllocGroup).
            (
                "alloc_groups",
                super::rebuild::alloc_groups_len(sc) * size_of::<super::rebuild::AllocGroup>(),
            ),
            ("cp_pool", np * 4),
            ("f0_pool", np * 16),
            ("dbar_pool", np * 16),
            ("m_pool", np * 4),
            ("dev_pool", np * 16),
            ("fout_pool", np * 16),
            // The point table: records (set, pool index), each point's first slot and count
            // (zero between steps: set_gather clears them), each record's rank at its point.
            ("point_records", caps.records as usize * 8),
            ("point_start", (self.npts as usize + 1) * 4),
            // (One word past the points, never written, which stays 0: the last element of the
            // scan into point_start, GpuScan::into.)
            ("point_count", (self.npts as usize + 1) * 4),
            ("point_rank", np * 4),
            ("acl_sizes", size_of::<AclSizes>()),
            ("pool_counters", size_of::<PoolAlloc>()),
        ];
        for (name, bytes) in &sizes {
            self.own.zeroed(device, name, *bytes, false);
        }
        make_pages(
            &mut self.own,
            device,
            queue,
            &pages,
            &self.pages,
            "k_pool",
            "block_page",
            24,
        );
        // (The rebuild round's pair terms: nothing to carry, each round writes its own.)
        make_pages(
            &mut self.own,
            device,
            queue,
            &term_pages,
            &self.term_pages,
            "rebuild_terms",
            "term_page",
            size_of::<RebuildTerm>(),
        );
        for buffer in ["watch_pool", "watch_loc_pool"] {
            make_pages(
                &mut self.own,
                device,
                queue,
                &watch_pages,
                &self.watch_pages,
                buffer,
                "watch_pool_page",
                16,
            );
        }
        // (The rebuild round's watched-pair scratch, by dirty index: nothing to carry.)
        for buffer in ["plan_watch", "plan_watch_loc"] {
            make_pages(
                &mut self.own,
                device,
                queue,
                &scratch_pages,
                &self.scratch_pages,
                buffer,
                "scratch_page",
                WATCH_SLOT_BYTES as usize,
            );
        }
        // set_rebuild's uniform per pair of a blocks page and a terms page, set_rebuild_watch's
        // per pair of a scratch page and a watch pools page.
        for (uniform, (a, old_a), (b, old_b)) in [
            (
                "rebuild_pages",
                (&pages, &self.pages),
                (&term_pages, &self.term_pages),
            ),
            (
                "watch_pages",
                (&scratch_pages, &self.scratch_pages),
                (&watch_pages, &self.watch_pages),
            ),
        ] {
            for i in 0..a.count().max(old_a.count()) {
                for j in 0..b.count().max(old_b.count()) {
                    let name = pair_name(uniform, i, j);
                    if i < a.count() && j < b.count() {
                        let u = [a.page(i, i), b.page(j, j)];
                        self.own
                            .upload(device, queue, &name, bytemuck::cast_slice(&u), true);
                    } else {
                        self.own.remove(&name);
                    }
                }
            }
        }
        // set_rebuild's run of dirty indices per pair of a blocks page and a terms page, and
        // set_rebuild_watch's per pair of a scratch page and a watch pools page
        // (`set_rebuild_runs` finds them, `set_rebuild_args` makes the pairs' grids) where
        // there is more than one pair; the run of all where there is one.
        for name in ["rebuild_run", "watch_run"] {
            let all = bytemuck::bytes_of(&RebuildRun::ALL);
            self.own.upload(device, queue, name, all, false);
        }
        let pairs = PagePairs {
            block_stride: pages.stride,
            term_stride: term_pages.stride,
            block_pages: pages.count() as u32,
            term_pages: term_pages.count() as u32,
            scratch_stride: scratch_pages.stride,
            watch_stride: watch_pages.stride,
            scratch_pages: scratch_pages.count() as u32,
            watch_pages: watch_pages.count() as u32,
        };
        self.own.upload(
            device,
            queue,
            "page_pairs",
            bytemuck::bytes_of(&pairs),
            true,
        );
        self.own
            .zeroed(device, "rebuild_runs", 8 * pairs.count() as usize, false);
        let args = device.create_buffer(&wgpu::BufferDescriptor {
            label: Some("rebuild_args"),
            size: pairs.count() as u64 * RUN_SLOT_BYTES,
            usage: wgpu::BufferUsages::STORAGE
                | wgpu::BufferUsages::INDIRECT
                | wgpu::BufferUsages::COPY_SRC
                | wgpu::BufferUsages::COPY_DST,
            mapped_at_creation: false,
        });
        self.own.insert("rebuild_args", args);
        for name in PERSISTENT {
            let size = self.own.get(name).expect("uploaded above").size();
            self.own
                .zeroed(device, &format!("saved_{name}"), size as usize, false);
        }
        if let Some(enc) = carry {
            for (name, b) in &old {
                let new = self.own.get(name).expect("uploaded above");
                enc.copy_buffer_to_buffer(b, 0, new, 0, b.size().min(new.size()));
            }
            for (name, elem, old_pages, copies) in carry_pages {
                let elem = elem as u64;
                for c in copies {
                    let new = self.own.get(&page_name(name, c.to.0)).expect("made above");
                    enc.copy_buffer_to_buffer(
                        &old_pages[c.from.0],
                        c.from.1 * elem,
                        new,
                        c.to.1 * elem,
                        c.blocks * elem,
                    );
                }
            }
        }
        self.pages = pages;
        self.term_pages = term_pages;
        self.scratch_pages = scratch_pages;
        self.watch_pages = watch_pages;
        self.caps = caps;
        self.write_counters(queue);
        self.acl.record_capacity = caps.records;
        self.make_ops(device, queue, pipelines)
    }

    /// Writes the persistent counters from the host's record of the last completed step, with the
    /// capacities, and the merge chain's capacities.
    fn write_counters(&self, queue: &wgpu::Queue) {
        let caps = self.caps;
        let mut sizes = self.last.sizes;
        sizes.released.capacity = caps.sched.released;
        sizes.lookup.capacity = caps.sched.lookup_words;
        let pools = PoolAlloc {
            cap: [caps.points, caps.blocks, caps.watch, caps.terms],
            first_too_large: u32::MAX,
            ..self.last.pools
        };
        let get = |n: &str| self.own.get(n).expect("made in build");
        queue.write_buffer(get("acl_sizes"), 0, bytemuck::bytes_of(&sizes));
        queue.write_buffer(get("pool_counters"), 0, bytemuck::bytes_of(&pools));
        let mut m = MergeCounters::default();
        m.sets.capacity = caps.merge.sets;
        m.touching.capacity = caps.merge.touching;
        m.edges.capacity = caps.merge.edges;
        m.index.capacity = caps.merge.index;
        queue.write_buffer(get("merge_counters"), 0, bytemuck::bytes_of(&m));
    }

    /// The uniforms' buffers and every operation of the step.
    fn make_ops(
        &mut self,
        device: &wgpu::Device,
        queue: &wgpu::Queue,
        pipelines: &Pipelines,
    ) -> Result<(), AclGpuError> {
        let caps = self.caps;
        let sc = caps.merge.sets;
        self.own
            .upload(device, queue, "acl", bytemuck::bytes_of(&self.acl), true);
        self.own.upload(
            device,
            queue,
            "rebuild",
            bytemuck::bytes_of(&self.rebuild),
            true,
        );
        // The set lookup, written into the scheduler's `set_lookup` (already in `own`).
        let lookup = LookupGpu::new(
            device,
            queue,
            pipelines,
            &mut self.own,
            self.acl.quadrature,
            LookupCaps {
                sets: caps.merge.sets,
                segments: self.rebuild.nq / self.acl.quadrature,
                words: caps.sched.lookup_words,
            },
        )?;
        // The merge chains: the first with coalescing, then one of passes only per round.
        let first = MergeGpu::new(
            device,
            queue,
            pipelines,
            &mut self.own,
            &self.merge_uniform,
            caps.merge,
        )?;
        let again = MergeGpu::new_passes(
            device,
            queue,
            pipelines,
            &mut self.own,
            &self.merge_uniform,
            caps.merge,
        )?;
        let get = |n: &str| self.own.get(n).expect("made in build").clone();
        let scan = |n: &str, len: u32| GpuScan::new(device, pipelines, &get(n), len);
        // The point table's starts: set_point_count counts each point's records into both
        // point_count and point_start, so the scan reads the one into the other in one dispatch
        // (up to SCAN_INTO_MAX points), or scans point_start in place.
        let scan_points = match GpuScan::into(
            device,
            pipelines,
            &get("point_count"),
            &get("point_start"),
            self.npts + 1,
        )? {
            Some(sc) => sc,
            None => scan("point_start", self.npts + 1)?,
        };
        let mut ops: Vec<Op> = Vec::new();
        let own = &self.own;
        let bind = |kernel: &'static str,
                    map: &[(&str, &wgpu::Buffer)]|
         -> Result<wgpu::BindGroup, PipelineError> {
            pipelines.bind_group_with(device, kernel, own, map)
        };
        let d =
            |ops: &mut Vec<Op>, kernel: &'static str, threads: u32| -> Result<(), PipelineError> {
                ops.push(Op::Dispatch((kernel, bind(kernel, &[])?, threads.into())));
                Ok(())
            };
        let extend =
            |ops: &mut Vec<Op>,
             it: Vec<(&'static str, &wgpu::BindGroup, crate::pipelines::Threads)>| {
                ops.extend(
                    it.into_iter()
                        .map(|(n, bg, t)| Op::Dispatch((n, bg.clone(), t))),
                );
            };
        // `per_item` threads per item (over the count plus `add`) for `kernel`'s workgroups (0:
        // one workgroup per item).
        let spec = |kernel: &str, add: u32, per_item: u32| -> Result<GridSpec, PipelineError> {
            let wg = crate::shaders::kernel(kernel)
                .map_err(PipelineError::from)?
                .workgroup_size;
            Ok(if per_item == 0 {
                GridSpec {
                    add,
                    threads_per_item: 1,
                    workgroup_size: 1,
                    ..Default::default()
                }
            } else {
                GridSpec {
                    add,
                    threads_per_item: per_item,
                    workgroup_size: wg,
                    ..Default::default()
                }
            })
        };
        // The evaluation's grids over the table, by one count_plan dispatch (acl_counts does not
        // plan them: see shaders/acl_counts.wgsl); each round's over its dirty sets, planned
        // inline by set_dirty_write (no count_plan dispatch).
        let sets_count =
            offset_of!(MergeCounters, sets) + offset_of!(crate::layout::Capacity, count);
        let eval_grids = CountedGrid::shared(
            device,
            pipelines,
            &CountSource {
                buffer: get("merge_counters"),
                word: sets_count as u32 / 4,
                add: 0,
            },
            sc,
            &[
                spec("set_evaluate", 0, super::evaluate::SET_LANES)?,
                spec("set_force", 0, super::evaluate::SET_LANES)?,
            ],
        )?;
        let grids = |specs: &[GridSpec]| CountedGrid::inline(device, pipelines, sc, specs);
        // One workgroup per dirty set (set_rebuild_size, _points, set_rebuild, _watch: their
        // workgroup sizes are their threads per set); one thread per dirty set (_springs,
        // _headers); one per dirty set plus one (the pool kernels: same workgroup size).
        let (per_dirty, per_dirty_thread, per_dirty_plus) = (0, 1, 2);
        let round_grids = grids(&[
            spec("set_rebuild_size", 0, 0)?,
            spec("set_rebuild_springs", 0, 1)?,
            spec("pool_alloc_size", 1, 1)?,
        ])?;
        let copy = |ops: &mut Vec<Op>, src: &str, so: usize, dst: &wgpu::Buffer, dof: usize| {
            ops.push(Op::Copy {
                src: get(src),
                src_offset: so as u64,
                dst: dst.clone(),
                dst_offset: dof as u64,
                size: 4,
            });
        };
        let (acl_u, rebuild_u) = (get("acl"), get("rebuild"));
        let acl_num_sets = offset_of!(AclUniform, num_sets);
        let rb_num_sets = offset_of!(RebuildParams, num_sets);
        let sizes_num_sets = offset_of!(AclSizes, num_sets);
        // 1. Copies before the step's first dispatch, so that a caller can record them with its
        //    own copies of the step's uniforms and they end no compute pass (each pass costs some
        //    six dispatches on hardware, benches/dispatch.rs): the table length into the uniforms
        //    and the lookup's, the released boxes' count into the scheduler's step record. The
        //    last step left both final (acl_counts' step phase keeps them).
        copy(&mut ops, "acl_sizes", sizes_num_sets, &acl_u, acl_num_sets);
        copy(
            &mut ops,
            "acl_sizes",
            sizes_num_sets,
            &rebuild_u,
            rb_num_sets,
        );
        copy(&mut ops, "acl_sizes", sizes_num_sets, &get("acl_lookup"), 0);
        copy(
            &mut ops,
            "acl_sizes",
            offset_of!(AclSizes, released),
            self.sched.buffer("sched_step").expect("made by SchedGpu"),
            offset_of!(SchedUniform, num_released),
        );
        // 2–4. The step's counters reset, the scheduler's start and the lookup's counts cleared,
        //      in one dispatch (acl_step_start); the set lookup; the scheduler.
        let sched_own = |n: &'static str| self.sched.buffer(n).expect("made by SchedGpu");
        let start = bind(
            "acl_step_start",
            &[
                ("sched_step", sched_own("sched_step")),
                ("sched_state", sched_own("sched_state")),
                ("sched_p0", sched_own("sched_p0")),
                // The lookup's counts (scanned into lookup_offsets, or in place).
                ("lookup_offsets", &get(lookup.counts_buffer())),
            ],
        )?;
        ops.push(Op::Dispatch((
            "acl_step_start",
            start,
            (lookup.caps.segments + 1).into(),
        )));
        ops.extend(
            lookup
                .dispatches_cleared()
                .iter()
                .cloned()
                .map(Op::Dispatch),
        );
        ops.extend(
            self.sched
                .dispatches_started(caps.newcomers, caps.coalesce > 0)
                .cloned()
                .map(Op::Dispatch),
        );
        // 5–7. Counts, coalescing and merging, the table length into the uniforms (acl_counts'
        //      coalesced phase writes it there: no copy, so the compute pass goes on).
        // Without coalescing (a trial after a quiet stretch) the table is as the last step left
        // it, with no two sets overlapping (a step whose last merge pass merged reruns with more
        // rounds), so the merge chain would find nothing; a step with touching pairs reruns.
        // Without it the table length is still the one the first copies put in the uniforms
        // (acl_step_start set merge_counters.sets from it, and nothing since changed it), so
        // the evaluation's grids are planned with the scheduled counts, in one dispatch
        // (acl_scheduled_plan). 8. Evaluation of the clean sets, over the live table (its grids
        // counted first).
        // With coalescing, the table length it left goes into the uniforms and plans the
        // evaluation's grids in one dispatch (acl_coalesced_plan: acl_counts' coalesced phase
        // and count_plan).
        if caps.coalesce > 0 {
            ops.extend(first.dispatches().iter().cloned().map(Op::Dispatch));
            let [spec, out] = eval_grids.plan_bindings();
            let bg = bind("acl_coalesced_plan", &[spec, out])?;
            ops.push(Op::Dispatch(("acl_coalesced_plan", bg, 1.into())));
        } else {
            let [spec, out] = eval_grids.plan_bindings();
            let bg = bind("acl_scheduled_plan", &[spec, out])?;
            ops.push(Op::Dispatch(("acl_scheduled_plan", bg, 1.into())));
        }
        // Grid `k` of a shared plan.
        let dg = |ops: &mut Vec<Op>,
                  kernel: &'static str,
                  g: &CountedGrid,
                  k: u32|
         -> Result<(), PipelineError> {
            ops.push(Op::Dispatch((kernel, bind(kernel, &[])?, g.threads_of(k))));
            Ok(())
        };
        // The kernels that bind a paged pool ([`super::pages`]): once per page, each with its
        // page and uniform (one dispatch when the pool is one page). Each page's bindings:
        let page_maps = |names: [&'static str; 3], count: usize| -> Vec<PageMap> {
            (0..count)
                .map(|p| {
                    let named = names.iter().filter(|n| !n.is_empty());
                    named.map(|&n| (n, get(&page_name(n, p)))).collect()
                })
                .collect()
        };
        let blocks = page_maps(["k_pool", "block_page", ""], self.pages.count());
        let watch = page_maps(
            ["watch_pool", "watch_loc_pool", "watch_pool_page"],
            self.watch_pages.count(),
        );
        let terms = page_maps(["rebuild_terms", "term_page", ""], self.term_pages.count());
        let scratch = page_maps(
            ["plan_watch", "plan_watch_loc", "scratch_page"],
            self.scratch_pages.count(),
        );
        let unpaged = vec![Vec::new()];
        // Once per pair of a page of `a` and a page of `b` (`unpaged`: one), with the pair's
        // uniform `pair` where both are paged: `set_rebuild` (blocks and terms, `rebuild_pages`),
        // `set_rebuild_watch` (scratch and watch pools, `watch_pages`).
        let dg_paged = |ops: &mut Vec<Op>,
                        kernel: &'static str,
                        g: &CountedGrid,
                        k: u32,
                        (a, b): (&[PageMap], &[PageMap]),
                        pair: Option<&'static str>|
         -> Result<(), PipelineError> {
            for (i, map_a) in a.iter().enumerate() {
                for (j, map_b) in b.iter().enumerate() {
                    let u = pair.map(|name| (name, get(&pair_name(name, i, j))));
                    let map: Vec<(&str, &wgpu::Buffer)> = map_a
                        .iter()
                        .chain(map_b)
                        .chain(&u)
                        .map(|(n, b)| (*n, b))
                        .collect();
                    ops.push(Op::Dispatch((kernel, bind(kernel, &map)?, g.threads_of(k))));
                }
            }
            Ok(())
        };
        // Once per pair of a page of `a` and a page of `b` (more than one pair), with the pair's
        // uniform `names[0]`, over the run of dirty indices `set_rebuild_runs` found for it (run
        // `first + pair` of `rebuild_args`, bound as `names[1]`, its grid indirect).
        let args = get("rebuild_args");
        let run_paged = |ops: &mut Vec<Op>,
                         kernel: &'static str,
                         (a, b): (&[PageMap], &[PageMap]),
                         names: [&'static str; 2],
                         first: usize|
         -> Result<(), PipelineError> {
            for (i, map_a) in a.iter().enumerate() {
                for (j, map_b) in b.iter().enumerate() {
                    let at = (first + i * b.len() + j) as u64 * RUN_SLOT_BYTES;
                    let u = get(&pair_name(names[0], i, j));
                    let mut ranges: Vec<(&str, wgpu::BufferBinding<'_>)> = map_a
                        .iter()
                        .chain(map_b)
                        .map(|(n, b)| (*n, b.as_entire_buffer_binding()))
                        .collect();
                    ranges.push((names[0], u.as_entire_buffer_binding()));
                    ranges.push((
                        names[1],
                        wgpu::BufferBinding {
                            buffer: &args,
                            offset: at,
                            size: std::num::NonZeroU64::new(size_of::<RebuildRun>() as u64),
                        },
                    ));
                    let bg = pipelines.bind_group_ranges(device, kernel, own, &ranges)?;
                    let threads = crate::pipelines::Threads::Indirect {
                        buffer: args.clone(),
                        offset: at,
                    };
                    ops.push(Op::Dispatch((kernel, bg, threads)));
                }
            }
            Ok(())
        };
        let eg = &eval_grids;
        dg_paged(&mut ops, "set_evaluate", eg, 0, (&watch, &unpaged), None)?;
        dg_paged(&mut ops, "set_force", eg, 1, (&blocks, &unpaged), None)?;
        // 9–10. Rebuild rounds.
        // set_dirty_count writes each 256 slots' dirty sets, from which set_dirty_write finds each
        // one's slot in the list (no scan dispatch).
        let dirty_groups = get("dirty_groups");
        let dirty_list = |ops: &mut Vec<Op>| -> Result<(), PipelineError> {
            let groups = ("scan_groups", &dirty_groups);
            let bg = bind("set_dirty_count", &[groups])?;
            ops.push(Op::Dispatch(("set_dirty_count", bg, (sc + 1).into())));
            // Its last thread starts the round (the count into rebuild.num_dirty, the round's
            // grids).
            let [spec, out] = round_grids.plan_bindings();
            let bg = bind("set_dirty_write", &[spec, out, groups])?;
            ops.push(Op::Dispatch(("set_dirty_write", bg, (sc + 1).into())));
            Ok(())
        };
        for k in ["set_rebuild_headers", "set_rebuild_runs", "pool_alloc"] {
            let wg = crate::shaders::kernel(k)
                .map_err(PipelineError::from)?
                .workgroup_size;
            let like = if k == "pool_alloc" {
                "pool_alloc_size"
            } else {
                "set_rebuild_springs"
            };
            let want = crate::shaders::kernel(like)
                .map_err(PipelineError::from)?
                .workgroup_size;
            assert_eq!(wg, want, "{k} shares {like}'s counted grid");
        }
        for round in 0..caps.rounds {
            dirty_list(&mut ops)?;
            // The round's kernels over the dirty sets only (none at rest).
            let g = &round_grids;
            let scratch_only = (&scratch[..], &unpaged[..]);
            dg_paged(
                &mut ops,
                "set_rebuild_size",
                g,
                per_dirty,
                scratch_only,
                None,
            )?;
            dg(&mut ops, "pool_alloc_size", g, per_dirty_plus)?;
            dg(&mut ops, "pool_alloc", g, per_dirty_plus)?;
            dg(&mut ops, "set_rebuild_points", g, per_dirty)?;
            let (rebuild_pairs, watch_pairs) =
                (blocks.len() * terms.len(), scratch.len() * watch.len());
            if rebuild_pairs > 1 || watch_pairs > 1 {
                dg(&mut ops, "set_rebuild_runs", g, per_dirty_thread)?;
                let pairs = (rebuild_pairs + watch_pairs) as u32;
                d(&mut ops, "set_rebuild_args", pairs)?;
            }
            // Once per pair of pages: over the round's grid where there is one pair, else over
            // each pair's run of dirty indices only (a grid of every dirty set per pair ran each
            // plan's workgroup once per pair).
            let per_pair = |ops: &mut Vec<Op>,
                            kernel: &'static str,
                            (a, b): (&[PageMap], &[PageMap]),
                            names: [&'static str; 2],
                            first: usize|
             -> Result<(), PipelineError> {
                if a.len() * b.len() == 1 {
                    dg_paged(ops, kernel, g, per_dirty, (a, b), Some(names[0]))
                } else {
                    run_paged(ops, kernel, (a, b), names, first)
                }
            };
            let (rebuild_names, watch_names) = (
                ["rebuild_pages", "rebuild_run"],
                ["watch_pages", "watch_run"],
            );
            per_pair(&mut ops, "set_rebuild", (&blocks, &terms), rebuild_names, 0)?;
            let first = rebuild_pairs;
            per_pair(
                &mut ops,
                "set_rebuild_watch",
                (&scratch, &watch),
                watch_names,
                first,
            )?;
            dg(&mut ops, "set_rebuild_springs", g, per_dirty_thread)?;
            let terms_only = (&terms[..], &unpaged[..]);
            dg_paged(
                &mut ops,
                "set_rebuild_headers",
                g,
                per_dirty_thread,
                terms_only,
                None,
            )?;
            // (The verdict on its last pass: the next round's set_dirty_write, or set_compact.)
            // The last round's chain ends at its first overlap search: pairs found rerun the step
            // with more rounds and passes whether merged or not (merged roots are dirty), and
            // with none found the rest would only clear the moved flags, which set_compact clears
            // (a round after this one would need them cleared before its own search).
            let chain = if round + 1 == caps.rounds {
                again.dispatches_to_first_search()
            } else {
                again.dispatches()
            };
            ops.extend(chain.iter().cloned().map(Op::Dispatch));
        }
        // 10. No dirty list after the last round: `set_compact` flags a live set still dirty
        // (ACL_SIZES_MORE_ROUNDS), and the step reruns with more rounds.
        // 11. Forces.
        if self.stiction {
            d(&mut ops, "stiction_forces", sc)?;
        }
        // The point table (no sort: set_point_count's atomics rank each point's records, and
        // set_gather adds them in set order) and the gather.
        // set_point_count also counts the live sets of each 256 slots, for set_compact (the table
        // does not change in between).
        let groups = get("compact_groups");
        let with_groups = |kernel: &'static str| bind(kernel, &[("scan_groups", &groups)]);
        ops.push(Op::Dispatch((
            "set_point_count",
            with_groups("set_point_count")?,
            sc.into(),
        )));
        extend(&mut ops, scan_points.dispatches().collect());
        d(&mut ops, "set_point_write", super::evaluate::SET_LANES * sc)?;
        d(&mut ops, "set_gather", self.npts)?;
        // 12. Compaction of the table: each live set's slot from those group sums and a workgroup
        // scan, no scan dispatch (the thread of the last slot writes the table length and the last
        // merge's verdict).
        ops.push(Op::Dispatch((
            "set_compact",
            with_groups("set_compact")?,
            sc.into(),
        )));
        // 13. The rebuilds per segment, on the compacted table (still in `sets_out`).
        if self.count_rebuilds {
            let bg = bind("segment_rebuilds", &[("sets", &get("sets_out"))])?;
            ops.push(Op::Dispatch(("segment_rebuilds", bg, sc.into())));
        }
        // 14. The compacted table back: copies after the step's last dispatch, so that a caller
        //    can record them with its own copies at the end of the step (no compute pass ended).
        for (from, to) in [("sets_out", "sets"), ("springs_out", "springs")] {
            let b = get(to);
            ops.push(Op::Copy {
                src: get(from),
                src_offset: 0,
                dst: b.clone(),
                dst_offset: 0,
                size: b.size(),
            });
        }
        self.ops = ops;
        self._keep = Keep {
            _scans: vec![scan_points],
            _merges: vec![first, again],
            _lookup: Some(lookup),
        };
        Ok(())
    }
}

/// Most box tests (live sets × listed sets, over a step's rounds and its coalescing) a step's list
/// merge searches may take before the set index is the cheaper search: 2²³. Each live set's
/// thread tests every listed set, and all threads read the same listed set at once, so on a large GPU a
/// few million tests take some microseconds, while the index and its search are 11 dependent
/// dispatches (some 35 µs on an H200, benches/dispatch.rs); on the afghan at rest (326 k sets,
/// some 600 rebuilt a step) the search would be 200 M tests, and the index wins. An estimate from
/// those figures, not a measurement of the kernel.
pub const DIRTY_OVERLAP_WORK: u64 = 1 << 23;

/// Whether a step's list searches (the merge passes without the set index) would be too long:
/// more listed sets than the kernels' bound ([`DIRTY_OVERLAP_MAX`]), or more box tests than
/// [`DIRTY_OVERLAP_WORK`], for the rounds' dirty lists (`acl_sizes.rebuilds` counts a step's dirty
/// sets over its rounds, at least any one round's) or for the sets coalescing made (at most one
/// per touching pair of the scheduler's). A later pass's list, the roots the pass before grew, is
/// never longer than its invocation's first: each component merged holds a moved set.
fn dirty_search_too_long(c: &AclStepCounters) -> bool {
    let sets = c.sizes.num_sets as u64;
    let too_long = |n: u32| n > DIRTY_OVERLAP_MAX || n as u64 * sets > DIRTY_OVERLAP_WORK;
    too_long(c.sizes.rebuilds) || too_long(c.sched.touching.count)
}

/// The newcomer search a step with scheduler counters `c` needs (the levels of
/// [`AclCaps::newcomers`]): 0 when no segment entered a cell, 1 (the listed search) when at most
/// [`NEWCOMER_LIST_MAX`] did and its search found at most [`NEWCOMER_LIST_CANDIDATES`]
/// candidates, else 2 (the grid). (A step run with the grid counts the grid's candidates, each
/// pair once per cell new to one of its segments, at least as many as the listed search lists:
/// the level it says is never too low.)
pub fn newcomer_level(c: &SchedCounters) -> u32 {
    match c.entered {
        0 => 0,
        n if n <= NEWCOMER_LIST_MAX && c.cand.count <= NEWCOMER_LIST_CANDIDATES => 1,
        _ => 2,
    }
}

/// The most rebuild rounds a step of ACL's GPU step records: a step that needs more fails
/// ([`AclGpuError::TooManyRounds`]) instead of rerunning with twice as many. The CPU path's steps
/// of the scenes here need 1 or 2 (`examples/acl_budgets` on the relaxed scarf: a second round
/// on 8 of 1,070 steps); each round is some ten dispatches and room for its releases, so rounds
/// doubled without bound ran a 137-point swatch with `contact.padding = 28` out of memory at
/// 2,048. (Its sets' boxes had outgrown what `set_rebuild_size` takes, so they stayed dirty
/// round after round; that now stops the step at once, [`super::rebuild::POOL_BOX_TOO_LARGE`].
/// This bound is the backstop for any other set that never comes clean.)
pub const MAX_REBUILD_ROUNDS: u32 = 256;

/// Why a step that ran with `ran` must rerun with `need` (its verdict): each budget it needs more
/// of (`rebuild_rounds`, `merge_passes`, `label_rounds`, `coalesce`, `newcomers`, `indexed`: a
/// stage left out or the set index cut, that the step needs), and `capacity` when a buffer must
/// grow. The `--stats` keys `reruns_<cause>` count them (a rerun may have several causes).
pub fn rerun_causes(ran: &AclCaps, need: &AclCaps) -> Vec<&'static str> {
    let (r, n) = (ran.normalized(), need.normalized());
    [
        ("rebuild_rounds", n.rounds > r.rounds),
        ("merge_passes", n.merge.passes > r.merge.passes),
        ("label_rounds", n.merge.rounds > r.merge.rounds),
        ("coalesce", n.coalesce > r.coalesce),
        ("newcomers", n.newcomers > r.newcomers),
        ("indexed", n.merge.indexed > r.merge.indexed),
        ("capacity", !n.same_buffers(&r)),
    ]
    .into_iter()
    .filter_map(|(cause, yes)| yes.then_some(cause))
    .collect()
}

/// What a rerun from the capacities and budgets `ran` to `next` changes, in words: each budget
/// raised and each capacity that sizes a buffer grown, `name old → new` (the names of
/// [`AclCaps::binding_bytes`]' rows), e.g. "merge passes 1 → 2; sched.cand 1000 → 1500".
pub fn describe_rerun(ran: &AclCaps, next: &AclCaps) -> String {
    let (r, n) = (ran.normalized(), next.normalized());
    let budgets = [
        ("rebuild rounds", r.rounds, n.rounds),
        ("merge passes", r.merge.passes, n.merge.passes),
        ("label rounds", r.merge.rounds, n.merge.rounds),
        ("coalescing", r.coalesce, n.coalesce),
        ("newcomer search", r.newcomers, n.newcomers),
        ("set index", r.merge.indexed, n.merge.indexed),
    ];
    let (mut r, mut n) = (r, n);
    let release = ("sched.release", r.sched.release, n.sched.release);
    let mut sized: Vec<(&str, u32, u32)> = r
        .sized_mut()
        .into_iter()
        .zip(n.sized_mut())
        .map(|((name, a), (_, b))| (name, *a, *b))
        .collect();
    sized.push(release);
    let words = |v: &[(&str, u32, u32)]| -> Vec<String> {
        v.iter()
            .filter(|(_, a, b)| b > a)
            .map(|(name, a, b)| format!("{name} {a} → {b}"))
            .collect()
    };
    let parts: Vec<String> = [words(&budgets), words(&sized)]
        .into_iter()
        .filter(|w| !w.is_empty())
        .map(|w| w.join(", "))
        .collect();
    if parts.is_empty() {
        "the same capacities and budgets (a step of the batch needed more than the rest)".into()
    } else {
        parts.join("; ")
    }
}

/// Grows a capacity to a count plus a half (at least 16, never below `cap`): counts that rise over a
/// run then need few regrowths, each of which reruns a step or a batch.
fn grow(cap: u32, count: u32) -> u32 {
    count.saturating_add(count / 2).max(16).max(cap)
}

/// The operations of one step with other budgets than the driver's (rebuild rounds, merge passes
/// and label rounds, coalescing, the newcomer search) on the driver's buffers: for a step of a
/// batch that needs more than the rest ([`AclGpu::variant`]). Its per-step uniforms are its own:
/// the caller copies each step's `rebuild` record into [`AclVariant::rebuild`].
pub struct AclVariant {
    pub caps: AclCaps,
    ops: Vec<Op>,
    rebuild: wgpu::Buffer,
    _keep: Keep,
    _own: Buffers,
}

impl AclVariant {
    /// The operations of the step, in order.
    pub fn ops(&self) -> &[Op] {
        &self.ops
    }

    /// The `rebuild` uniform the operations read (the step number is written per step).
    pub fn rebuild(&self) -> &wgpu::Buffer {
        &self.rebuild
    }
}

impl AclGpu {
    /// The operations of one step with the budgets of `caps` (normalized as [`AclGpu::grow`]
    /// does), whose capacities must be this driver's; `None` when they are not. The operations
    /// read and write the driver's persistent buffers (sets, pools, counters, the scheduler's),
    /// so a step recorded from them continues the driver's run; their uniforms and the scratch of
    /// their merge chains and lookup are made for them (in a copy of the buffer map), so the
    /// driver's own operations are untouched.
    pub fn variant(
        &mut self,
        device: &wgpu::Device,
        queue: &wgpu::Queue,
        pipelines: &Pipelines,
        caps: AclCaps,
    ) -> Result<Option<AclVariant>, AclGpuError> {
        let caps = caps.normalized();
        if !caps.same_buffers(&self.caps) {
            return Ok(None);
        }
        // make_ops on the copy: swap it in, then put the driver's own state back.
        let own = self.own.clone();
        let saved_caps = std::mem::replace(&mut self.caps, caps);
        let saved_ops = std::mem::take(&mut self.ops);
        let saved_keep = std::mem::take(&mut self._keep);
        let made = self.make_ops(device, queue, pipelines);
        let own = std::mem::replace(&mut self.own, own);
        self.caps = saved_caps;
        let ops = std::mem::replace(&mut self.ops, saved_ops);
        let keep = std::mem::replace(&mut self._keep, saved_keep);
        made?;
        let rebuild = own.get("rebuild").expect("made in make_ops").clone();
        Ok(Some(AclVariant {
            caps,
            ops,
            rebuild,
            _keep: keep,
            _own: own,
        }))
    }

    /// The operations of one step, in order (for a caller recording them among its own).
    pub fn ops(&self) -> &[Op] {
        &self.ops
    }

    /// This driver's buffer `name` (`sets`, `springs`, the pools, `acl_sizes`, …), or the
    /// scheduler's.
    pub fn buffer(&self, name: &str) -> Option<&wgpu::Buffer> {
        self.own.get(name).or_else(|| self.sched.buffer(name))
    }

    /// The pages of `k_pool` ([`super::pages`]).
    pub fn block_pages(&self) -> &PoolPages {
        &self.pages
    }

    /// Sets what a page of the blocks pool, of the pair terms and of the watched-pair scratch
    /// holds (tests: pages on a small scene; each room must hold the scene's largest range, see
    /// [`PoolPages::room`]), and lays the pools out so, their contents carried over.
    pub fn set_page_limits(
        &mut self,
        device: &wgpu::Device,
        queue: &wgpu::Queue,
        pipelines: &Pipelines,
        shared: &Buffers,
        limits: AclPageLimits,
    ) -> Result<(), AclGpuError> {
        self.limits = limits;
        let mut enc = device.create_command_encoder(&Default::default());
        self.build(device, queue, pipelines, shared, self.caps, Some(&mut enc))?;
        queue.submit([enc.finish()]);
        Ok(())
    }

    /// The pages of `rebuild_terms` ([`super::pages`]).
    pub fn term_pages(&self) -> &PoolPages {
        &self.term_pages
    }

    /// The pages of the rebuild's watched-pair scratch, by dirty index ([`super::pages`]).
    pub fn scratch_pages(&self) -> &PoolPages {
        &self.scratch_pages
    }

    /// The buffers of `k_pool`'s pages, in order.
    pub fn block_page_buffers(&self) -> Vec<wgpu::Buffer> {
        self.page_buffers("k_pool")
    }

    /// The pages of the watch pools, `watch_pool` and `watch_loc_pool` ([`super::pages`]).
    pub fn watch_pages(&self) -> &PoolPages {
        &self.watch_pages
    }

    /// The buffers of the pages of paged pool `name` ([`PAGED_POOLS`]), in order.
    pub fn page_buffers(&self, name: &str) -> Vec<wgpu::Buffer> {
        let pages = self.paged_pools().into_iter().find(|p| p.0 == name);
        let count = pages.map_or(0, |p| p.3.count());
        (0..count)
            .filter_map(|p| self.own.get(&page_name(name, p)).cloned())
            .collect()
    }

    /// The paged pools ([`PAGED_POOLS`]): name, which of `pool_counters.len` counts its entries,
    /// bytes an entry, pages.
    pub fn paged_pools(&self) -> [(&'static str, usize, usize, &PoolPages); 3] {
        [
            ("k_pool", 1, 24, &self.pages),
            ("watch_pool", 2, size_of::<WatchPair>(), &self.watch_pages),
            (
                "watch_loc_pool",
                2,
                size_of::<WatchLoc>(),
                &self.watch_pages,
            ),
        ]
    }

    /// The scheduler's driver.
    pub fn sched(&self) -> &SchedGpu {
        &self.sched
    }

    /// The counters after the last completed step.
    pub fn last_counters(&self) -> &AclStepCounters {
        &self.last
    }

    /// The `rebuild` uniform of step `n` (its counts are patched on the GPU).
    pub fn rebuild_uniform(&self, n: u64) -> RebuildParams {
        RebuildParams {
            step: n as u32,
            ..self.rebuild
        }
    }

    /// Writes the per-step uniforms of step `n` (the scheduler's record and the rebuild step; the
    /// counts in them are patched on the GPU by the step's copies).
    pub fn write_step(&self, queue: &wgpu::Queue, n: u64) {
        let u = self.sched.step_uniform(n, 0);
        queue.write_buffer(
            self.sched.buffer("sched_step").expect("made by SchedGpu"),
            0,
            bytemuck::bytes_of(&u),
        );
        let r = self.rebuild_uniform(n);
        queue.write_buffer(
            self.own.get("rebuild").expect("made in build"),
            0,
            bytemuck::bytes_of(&r),
        );
    }

    /// Copies the persistent buffers to their saved copies (`back = false`) or back, the
    /// scheduler's too.
    pub fn copy_state(&self, enc: &mut wgpu::CommandEncoder, back: bool) {
        for name in PERSISTENT {
            let live = self.own.get(name).expect("made in build");
            let saved = self
                .own
                .get(&format!("saved_{name}"))
                .expect("made in build");
            let (src, dst) = if back { (saved, live) } else { (live, saved) };
            enc.copy_buffer_to_buffer(src, 0, dst, 0, live.size().min(saved.size()));
        }
        self.sched.copy_state(enc, back);
    }

    /// After [`AclGpu::copy_state`] back (submitted): with [`AclGpu::set_poison_after_restore`] on,
    /// every pool entry at or past the length the last completed step left is overwritten with
    /// all-ones words (NaN as floats, out-of-range as indices), so a rerun that read what its
    /// failed attempt appended there, instead of writing it first, would differ.
    pub fn restored(&mut self, queue: &wgpu::Queue) {
        if !self.poison_after_restore {
            return;
        }
        let mut parts: Vec<(wgpu::Buffer, u64)> = POOLS
            .iter()
            .filter(|p| !PAGED_POOLS.contains(&p.0))
            .map(|&(name, k, bytes)| {
                let b = self.own.get(name).expect("made in build").clone();
                (b, self.last.pools.len[k] as u64 * bytes as u64)
            })
            .collect();
        // Each page of a paged pool past the flat length (in its room too: what a set that starts
        // in the next page keeps there is not this page's).
        for (name, k, elem, pages) in self.paged_pools() {
            let len = self.last.pools.len[k];
            for (p, b) in self.page_buffers(name).into_iter().enumerate() {
                parts.push((b, pages.used(p, len) * elem as u64));
            }
        }
        for (b, from) in parts {
            self.poison_tail(queue, &b, from);
        }
    }

    /// Fills buffer `b` from byte `from` on with `0xff` (a NaN in every float, a count or an
    /// index past any table): what a step must not read.
    pub(super) fn poison_tail(&mut self, queue: &wgpu::Queue, b: &wgpu::Buffer, from: u64) {
        let from = from.min(b.size());
        if from < b.size() {
            queue.write_buffer(b, from, &vec![0xff; (b.size() - from) as usize]);
            self.poisoned_bytes += b.size() - from;
        }
    }

    /// Turns the poisoning of [`AclGpu::restored`] on or off (tests).
    pub fn set_poison_after_restore(&mut self, on: bool) {
        self.poison_after_restore = on;
    }

    /// Bytes [`AclGpu::restored`] poisoned so far.
    pub fn poisoned_bytes(&self) -> u64 {
        self.poisoned_bytes
    }

    /// Copies every stage's counters into `dst` at `offset` (an [`AclStepCounters`]).
    pub fn copy_counters(&self, enc: &mut wgpu::CommandEncoder, dst: &wgpu::Buffer, offset: u64) {
        // Each block at its field of `AclStepCounters` (its size is the gap to the next field).
        let parts = [
            ("acl_sizes", offset_of!(AclStepCounters, sizes)),
            ("sched_counters", offset_of!(AclStepCounters, sched)),
            ("merge_counters", offset_of!(AclStepCounters, merge)),
            ("pool_counters", offset_of!(AclStepCounters, pools)),
            ("acl_counters", offset_of!(AclStepCounters, acl)),
        ];
        let end = |k: usize| {
            parts
                .get(k + 1)
                .map_or(size_of::<AclStepCounters>(), |p| p.1)
        };
        for (k, &(name, at)) in parts.iter().enumerate() {
            let src = self.buffer(name).expect("made in build");
            enc.copy_buffer_to_buffer(src, 0, dst, offset + at as u64, (end(k) - at) as u64);
        }
    }

    /// What a step's counters say: `Ok(None)` when the step is final, `Ok(Some(caps))` when it must
    /// run again with these capacities and budgets, an error when it cannot run on the GPU at all.
    pub fn verdict(&self, c: &AclStepCounters) -> Result<Option<AclCaps>, AclGpuError> {
        self.verdict_with(self.caps, c)
    }

    /// [`AclGpu::verdict`] for a step that ran with the budgets of `caps` (a [`AclVariant`]'s; its
    /// capacities are this driver's).
    pub fn verdict_with(
        &self,
        caps: AclCaps,
        c: &AclStepCounters,
    ) -> Result<Option<AclCaps>, AclGpuError> {
        let mut g = caps;
        if let Some(s) = caps.sched.grown(&c.sched) {
            g.sched = s;
        }
        if c.sizes.released.overflow != 0 {
            g.sched.released = grow(caps.sched.released, c.sizes.released.count);
        }
        if c.sizes.lookup.overflow != 0 {
            g.sched.lookup_words = grow(caps.sched.lookup_words, c.sizes.lookup.count);
        }
        match super::merge_gpu::verdict_for(&caps.merge, &c.merge) {
            MergeVerdict::ScanLimit => return Err(AclGpuError::ScanLimit),
            MergeVerdict::Rerun(m) => {
                g.merge = m;
                // An overflow flag is sticky over the step's merge passes, but the count is the
                // last pass's (or, for the table, rewritten by the compaction): at least double.
                let m2 = &mut g.merge;
                let cm = &c.merge;
                if cm.sets.overflow != 0 {
                    m2.sets = m2.sets.max(2 * caps.merge.sets);
                }
                if cm.edges.overflow != 0 {
                    m2.edges = m2.edges.max(2 * caps.merge.edges);
                }
                if cm.index.overflow != 0 {
                    m2.index = m2.index.max(2 * caps.merge.index);
                }
            }
            MergeVerdict::Done => {}
        }
        if c.sizes.errors & ACL_SIZES_MORE_PASSES != 0 {
            g.merge.passes = g.merge.passes.max(2 * caps.merge.passes);
        }
        let lens = c.pools.len;
        let pool_caps = [caps.points, caps.blocks, caps.watch, caps.terms];
        let grown: Vec<u32> = (0..4)
            .map(|k| {
                if c.pools.errors & (1 << k) != 0 {
                    grow(pool_caps[k], lens[k])
                } else {
                    pool_caps[k]
                }
            })
            .collect();
        (g.points, g.blocks, g.watch, g.terms) = (grown[0], grown[1], grown[2], grown[3]);
        if c.acl.errors & crate::layout::ACL_ERROR_RECORDS_FULL != 0 {
            g.records = grow(caps.records, c.acl.records);
        }
        // A set whose box is beyond the rebuild kernels' bounds stays dirty in every round (it gets
        // no model): more rounds never end the step. Unless a capacity overflowed (the attempt's
        // sets may then not be the step's), stop and name the limit.
        let capacity_grown = AclCaps {
            merge: MergeCaps {
                passes: caps.merge.passes,
                ..g.merge
            },
            ..g
        } != caps;
        if c.pools.errors & super::rebuild::POOL_BOX_TOO_LARGE != 0 && !capacity_grown {
            return Err(AclGpuError::flags(c));
        }
        if c.sizes.errors & ACL_SIZES_MORE_ROUNDS != 0 {
            if caps.rounds >= MAX_REBUILD_ROUNDS {
                return Err(AclGpuError::TooManyRounds {
                    rounds: caps.rounds,
                });
            }
            g.rounds = (2 * caps.rounds).min(MAX_REBUILD_ROUNDS);
        }
        if caps.coalesce == 0 && c.sched.touching.count > 0 {
            g.coalesce = 1;
        }
        g.newcomers = g.newcomers.max(newcomer_level(&c.sched));
        if g != caps {
            return Ok(Some(g));
        }
        let pools = c.pools.errors
            & (super::rebuild::POOL_TOO_MUCH_WORK | super::rebuild::POOL_BOX_TOO_LARGE);
        if c.sched.errors != 0 || c.acl.errors != 0 || c.merge.errors != 0 || pools != 0 {
            return Err(AclGpuError::flags(c));
        }
        Ok(None)
    }

    /// Capacities grown ahead of need after a completed batch whose steps' counters are `steps`:
    /// each capacity whose largest count over the batch passed ¾ of it becomes twice that count,
    /// so a count that keeps rising (cloth that moves, sets that multiply) is met by a regrowth
    /// between batches, where nothing reruns, rather than by an overflow that reruns a batch.
    /// (Counted scans and sorts follow the counts, so room costs memory, not time.) `None` when
    /// every count stays below ¾ of its capacity.
    pub fn ahead(&self, steps: &[AclStepCounters]) -> Option<AclCaps> {
        let g = Self::ahead_of(self.caps, steps);
        (g != self.caps).then_some(g)
    }

    /// `caps` with [`AclGpu::ahead`]'s rule applied to the counts of `steps` (also used on a
    /// batch that overflowed, so its rerun has room for every count it saw, not only for the one
    /// that overflowed first: fewer reruns while a moving cloth's counts climb).
    pub fn ahead_of(caps: AclCaps, steps: &[AclStepCounters]) -> AclCaps {
        let up = |cap: &mut u32, count: u32| {
            if count > *cap - *cap / 4 {
                *cap = count.saturating_mul(2).max(*cap);
            }
        };
        let mut most = steps
            .iter()
            .fold(AclCaps::counted(&AclStepCounters::default()), |m, c| {
                m.at_least(&AclCaps::counted(c))
            });
        let mut g = caps;
        for ((_, cap), (_, count)) in g.sized_mut().into_iter().zip(most.sized_mut()) {
            up(cap, *count);
        }
        up(&mut g.sched.release, most.sched.release);
        g
    }

    /// The most each capacity's count reached over the completed steps so far (the budgets 0):
    /// what a run needed, against the room it has ([`AclGpu::caps`]).
    pub fn peak_counts(&self) -> AclCaps {
        self.peak
    }

    /// Fewer rebuild rounds per step after a quiet stretch: when [`CUT_AFTER_STEPS`] (or, after
    /// cuts that did not last, more) completed steps in a row used fewer rounds than
    /// `caps.rounds` (`acl_sizes.rounds_used`, the rounds that had dirty sets), the capacities with
    /// `rounds` = the most they used (at least 1). Each round is some 65 dispatches and a merge
    /// chain, recorded whether or not anything is dirty: a cloth at rest needs one round (the
    /// relaxed scarf on the CPU path: 199 of 200 steps; a falling swatch needs a second in 7–9%
    /// of its steps, so its batches rarely stay quiet that long). A step that then needs more
    /// reruns its batch with twice the rounds ([`AclGpu::verdict`]), as before: the result is the
    /// same either way. `steps`: the counters of the batch just completed.
    pub fn fewer_rounds(&mut self, steps: &[AclStepCounters]) -> Option<AclCaps> {
        let used = steps.iter().map(|c| c.sizes.rounds_used).max().unwrap_or(0);
        let rounds = self
            .rounds_cut
            .completed(used, self.caps.rounds, steps.len() as u32)?;
        Some(AclCaps {
            rounds,
            ..self.caps
        })
    }

    /// No coalescing stage after a quiet stretch: when [`CUT_AFTER_STEPS`] (or, after cuts that
    /// did not last, more) completed steps in a row found no touching pairs of empty space (the
    /// scheduler's `touching` count), the capacities with `coalesce` = 0. The stage (coalescing,
    /// then a merge chain, and the scheduler's touching list, which only coalescing reads: its
    /// count comes from `schedule_process`) is some 28 dispatches, recorded whether or not there
    /// is anything to coalesce; without new pairs the merge chain finds nothing, because a
    /// completed step leaves no two sets overlapping. A step that then finds touching pairs reruns its batch with the stage
    /// ([`AclGpu::verdict`]), so the result is the same either way, and the next trial waits twice
    /// as long. `steps`: the counters of the batch just completed.
    pub fn fewer_coalesce(&mut self, steps: &[AclStepCounters]) -> Option<AclCaps> {
        let used = steps.iter().any(|c| c.sched.touching.count > 0) as u32;
        let coalesce = self
            .coalesce_cut
            .completed(used, self.caps.coalesce, steps.len() as u32)?;
        Some(AclCaps {
            coalesce,
            ..self.caps
        })
    }

    /// A cheaper newcomer search in the scheduler's step after a quiet stretch: when
    /// [`CUT_AFTER_STEPS`] (or, after cuts that did not last, more) completed steps in a row
    /// needed less than `caps.newcomers` ([`newcomer_level`]: none when no segment entered a cell,
    /// the listed search when at most [`NEWCOMER_LIST_MAX`] did), the capacities with `newcomers`
    /// = the most they needed. The grid's search (the grid's count, scan, write and sort, the
    /// newcomers' count, scan, write, sort, keep and compaction) is some 36 dispatches on the
    /// scarf and sorts every segment's cells; the listed search replaces the grid's part by one
    /// dispatch; a step that needs neither would find nothing ([`SchedGpu::dispatches_with`]). A
    /// step that needs more reruns its batch with it ([`AclGpu::verdict`]), so the result is the
    /// same either way, and the next trial waits longer ([`wait_after_raise`]). At rest few steps
    /// have a segment entering a cell (the default swatch on the CPU path, frames 17–30: 0–1% of
    /// steps; the relaxed scarf, after its first 2,800 steps, one in 8), and those few.
    pub fn fewer_newcomers(&mut self, steps: &[AclStepCounters]) -> Option<AclCaps> {
        let used = steps
            .iter()
            .map(|c| newcomer_level(&c.sched))
            .max()
            .unwrap_or(0);
        let newcomers =
            self.newcomers_cut
                .completed(used, self.caps.newcomers, steps.len() as u32)?;
        Some(AclCaps {
            newcomers,
            ..self.caps
        })
    }

    /// Merge passes without the set index after a quiet stretch: when [`CUT_AFTER_STEPS`] (or,
    /// after cuts that did not last, more) completed steps in a row had none whose list
    /// search would be too long ([`dirty_search_too_long`]), the capacities with `merge.indexed`
    /// = 0: every merge pass then searches a short list by brute force (the first after a rebuild
    /// round the round's dirty list, the first after coalescing the sets it made, a later one the
    /// roots the pass before grew: one `dirty_overlap_write`, `coalesce_overlap_write` or
    /// `moved_overlap_write`, where the index and its search are 11 dispatches). A list longer than
    /// [`DIRTY_OVERLAP_MAX`], or one that lacks a live moved set, raises `MERGE_DIRTY_LIMIT` and
    /// reruns its batch with the index ([`AclGpu::verdict`]); the pairs listed, and so the result,
    /// are the same either way. A batch that completed without the index but had a step whose search was
    /// too long (not over the kernel's bound, only slower than the index) brings the index back
    /// from the next batch, with no rerun, and the next cut waits longer. `steps`: the counters
    /// of the batch just completed.
    pub fn fewer_indexed(&mut self, steps: &[AclStepCounters]) -> Option<AclCaps> {
        let used = steps.iter().any(dirty_search_too_long) as u32;
        let mut caps = self.caps;
        if caps.merge.indexed == 0 && used > 0 {
            caps.merge.indexed = 1;
            return Some(caps);
        }
        caps.merge.indexed =
            self.indexed_cut
                .completed(used, self.caps.merge.indexed, steps.len() as u32)?;
        Some(caps)
    }

    /// Half the merge passes per merge invocation after a quiet stretch: [`CUT_AFTER_STEPS`] (or,
    /// after cuts that did not last, more) completed steps since `caps.merge.passes` last
    /// changed, the capacities with half the passes (at least 1). Unlike the rounds there is no
    /// count of the passes used, so the cut is a trial: a merge that then needs more raises
    /// `ACL_SIZES_MORE_PASSES` and reruns its batch with twice the passes ([`AclGpu::verdict`]),
    /// and the next trial waits longer ([`wait_after_raise`]). Passes do little work in practice: on the CPU path
    /// no merge of the relaxed scarf, the swinging swatch or the drop needed one (every
    /// `set_merge` found no moved set), while the GPU doubles them once a first step's new sets
    /// merge, and each pass is some 20 dispatches in each of a step's merge chains. `steps`: the
    /// steps of the batch just completed.
    pub fn fewer_passes(&mut self, steps: u32) -> Option<AclCaps> {
        self.pass_quiet = self.pass_quiet.saturating_add(steps);
        if self.pass_quiet < self.pass_cut_after || self.caps.merge.passes <= 1 {
            return None;
        }
        self.pass_quiet = 0;
        self.pass_cut_last = true;
        let mut caps = self.caps;
        caps.merge.passes = (caps.merge.passes / 2).max(1);
        Some(caps)
    }

    /// Half the label-propagation rounds of each merge pass after a quiet stretch, the same trial
    /// as [`AclGpu::fewer_passes`]: [`CUT_AFTER_STEPS`] (or, after cuts that did not last, more)
    /// completed steps since `caps.merge.rounds` last changed, the capacities with half the
    /// rounds (at least 1). A merge that then needs more raises `more_rounds` (sticky over the
    /// step) and reruns its batch with twice the rounds ([`AclGpu::verdict`]), with the same result
    /// as having had them; the next trial waits longer ([`wait_after_raise`]). At rest no label changes (no set
    /// overlaps another), so one round does; the 8 recorded at first are a `merge_label` dispatch
    /// each, in every pass of each of a step's merge chains. `steps`: the steps of the batch just
    /// completed.
    pub fn fewer_label_rounds(&mut self, steps: u32) -> Option<AclCaps> {
        self.label_quiet = self.label_quiet.saturating_add(steps);
        if self.label_quiet < self.label_cut_after || self.caps.merge.rounds <= 1 {
            return None;
        }
        self.label_quiet = 0;
        self.label_cut_last = true;
        let mut caps = self.caps;
        caps.merge.rounds = (caps.merge.rounds / 2).max(1);
        Some(caps)
    }

    /// Whether one of the budgets is cut on trial: its last change was a cut after a quiet stretch,
    /// not yet undone, so a step that needs more than it records reruns its batch. The GPU step
    /// keeps its batches short meanwhile ([`crate::gpu_step::TRIAL_BATCH`]).
    pub fn on_trial(&self) -> bool {
        self.rounds_cut.on_trial()
            || self.coalesce_cut.on_trial()
            || self.newcomers_cut.on_trial()
            || self.indexed_cut.on_trial()
            || self.pass_cut_last
            || self.label_cut_last
    }

    /// Rebuilds everything with capacities `caps`, after the state was restored or a batch
    /// completed (the persistent buffers' contents are carried over).
    pub fn grow(
        &mut self,
        device: &wgpu::Device,
        queue: &wgpu::Queue,
        pipelines: &Pipelines,
        shared: &Buffers,
        caps: AclCaps,
    ) -> Result<(), AclGpuError> {
        check_binding(device, &caps)?;
        if caps.rounds > self.caps.rounds {
            // More rounds again: the next cut waits longer (`wait_after_raise`).
            self.rounds_cut.raised(CUT_AFTER_STEPS_MAX);
        }
        if caps.coalesce > self.caps.coalesce {
            self.coalesce_cut.raised(CUT_AFTER_STEPS_MAX);
        }
        if caps.newcomers > self.caps.newcomers {
            self.newcomers_cut.raised(CUT_AFTER_STEPS_MAX);
        }
        if caps.merge.indexed > self.caps.merge.indexed {
            self.indexed_cut.raised(CUT_AFTER_STEPS_MAX);
        }
        if caps.merge.passes > self.caps.merge.passes {
            // More passes again: the next trial waits as `wait_after_raise` says (twice as long,
            // unless the cut held for as long as its wait; `pass_quiet` counts from the cut).
            if self.pass_cut_last {
                self.pass_cut_after = wait_after_raise(
                    self.pass_cut_after,
                    self.pass_quiet,
                    CUT_AFTER_STEPS,
                    CUT_AFTER_STEPS_MAX,
                );
            }
            self.pass_cut_last = false;
            self.pass_quiet = 0;
        }
        if caps.merge.rounds > self.caps.merge.rounds {
            // More label rounds again: likewise.
            if self.label_cut_last {
                self.label_cut_after = wait_after_raise(
                    self.label_cut_after,
                    self.label_quiet,
                    CUT_AFTER_STEPS,
                    CUT_AFTER_STEPS_MAX,
                );
            }
            self.label_cut_last = false;
            self.label_quiet = 0;
        }
        let caps = caps.normalized();
        if caps.same_buffers(&self.caps) {
            // Only budgets changed (rebuild rounds, merge passes or label rounds, coalescing):
            // the buffers stay, the step's operations are made for the new budgets.
            self.caps = caps;
            self.write_counters(queue);
            return self.make_ops(device, queue, pipelines);
        }
        let mut enc = device.create_command_encoder(&Default::default());
        if caps.sched != self.caps.sched {
            self.sched
                .build(device, queue, pipelines, shared, caps.sched, Some(&mut enc))?;
        }
        self.build(device, queue, pipelines, shared, caps, Some(&mut enc))?;
        queue.submit([enc.finish()]);
        Ok(())
    }

    /// Records that a step completed with counters `c` (the host's record of the persistent
    /// counts, and the garbage for the compaction decision).
    pub fn completed(&mut self, c: &AclStepCounters) {
        self.last = *c;
        self.peak = self.peak.at_least(&AclCaps::counted(c));
        self.garbage.add([
            (c.sizes.garbage_cp + c.merge.garbage_cp) as usize,
            (c.sizes.garbage_k + c.merge.garbage_k) as usize,
            (c.sizes.garbage_w + c.merge.garbage_w) as usize,
        ]);
    }

    /// One step `n` on the positions in the shared `pos`, adding the contact force into the shared
    /// `force`: saves the state, runs, reads the counters back, and on an overflow or a budget too
    /// small restores, grows and reruns; then compacts the pools when the CPU path's rule says so.
    pub fn step(
        &mut self,
        device: &wgpu::Device,
        queue: &wgpu::Queue,
        pipelines: &Pipelines,
        shared: &Buffers,
        n: u64,
    ) -> Result<AclStepCounters, AclGpuError> {
        let size = size_of::<AclStepCounters>() as u64;
        let force = shared.get("force").expect("the caller's force").clone();
        let saved_force = device.create_buffer(&wgpu::BufferDescriptor {
            label: Some("saved force"),
            size: force.size(),
            usage: wgpu::BufferUsages::COPY_DST | wgpu::BufferUsages::COPY_SRC,
            mapped_at_creation: false,
        });
        loop {
            let staging = device.create_buffer(&wgpu::BufferDescriptor {
                label: Some("acl counters readback"),
                size,
                usage: wgpu::BufferUsages::COPY_DST | wgpu::BufferUsages::MAP_READ,
                mapped_at_creation: false,
            });
            self.write_step(queue, n);
            let scope = device.push_error_scope(wgpu::ErrorFilter::Validation);
            let mut enc = device.create_command_encoder(&wgpu::CommandEncoderDescriptor {
                label: Some("acl step"),
            });
            self.copy_state(&mut enc, false);
            enc.copy_buffer_to_buffer(&force, 0, &saved_force, 0, force.size());
            record_ops(pipelines, &mut enc, &self.ops, "acl step")?;
            self.copy_counters(&mut enc, &staging, 0);
            queue.submit([enc.finish()]);
            if let Some(e) = pollster::block_on(scope.pop()) {
                return Err(AclGpuError::Gpu(e.to_string()));
            }
            let bytes = read_mapped(device, &staging, size as usize).map_err(AclGpuError::Gpu)?;
            let c: AclStepCounters = bytemuck::pod_read_unaligned(&bytes);
            let Some(caps) = self.verdict(&c)? else {
                self.completed(&c);
                self.compact_pools(device, queue, pipelines)?;
                return Ok(c);
            };
            self.reruns += 1;
            let mut enc = device.create_command_encoder(&Default::default());
            self.copy_state(&mut enc, true);
            enc.copy_buffer_to_buffer(&saved_force, 0, &force, 0, force.size());
            queue.submit([enc.finish()]);
            self.restored(queue);
            self.grow(device, queue, pipelines, shared, caps)?;
        }
    }

    /// Compacts the pools when more than half of them is garbage (the CPU path's rule,
    /// [`PoolGarbage::worth_compacting`], on the lengths and garbage of the last completed step):
    /// `pool_compact_size` → scan → `pool_compact_{points,vectors,blocks,watch,headers}`, then the
    /// compacted pools copied back and their lengths written. Returns whether it compacted.
    pub fn compact_pools(
        &mut self,
        device: &wgpu::Device,
        queue: &wgpu::Queue,
        pipelines: &Pipelines,
    ) -> Result<bool, AclGpuError> {
        let len = self.last.pools.len;
        let lens = [len[0] as usize, len[1] as usize, len[2] as usize];
        if !self.garbage.worth_compacting(lens) {
            return Ok(false);
        }
        let ns = self.last.sizes.num_sets;
        let mut own = Buffers::default();
        for name in ["sets", "cp_pool", "m_pool", "f0_pool", "dbar_pool"] {
            own.insert(name, self.own.get(name).expect("made in build").clone());
        }
        let p = RebuildParams {
            num_sets: ns,
            ..self.rebuild
        };
        own.upload(device, queue, "rebuild", bytemuck::bytes_of(&p), true);
        own.zeroed(device, "pool_dest", 3 * (ns as usize + 1) * 4, false);
        let scan = GpuScan::new(
            device,
            pipelines,
            own.get("pool_dest").unwrap(),
            3 * (ns + 1),
        )?;
        let mut enc = device.create_command_encoder(&Default::default());
        {
            let mut pass = enc.begin_compute_pass(&Default::default());
            let bg = pipelines.bind_group(device, "pool_compact_size", &own)?;
            pipelines.dispatch(&mut pass, "pool_compact_size", &bg, ns + 1)?;
            scan.record(pipelines, &mut pass)?;
        }
        queue.submit([enc.finish()]);
        let dest_bytes = own.read(device, queue, "pool_dest", 3 * (ns as u64 + 1) * 4)?;
        let dest: Vec<u32> = bytemuck::cast_slice(&dest_bytes).to_vec();
        let [np, nk, nw] = pool_dest_lens(&dest, ns as usize);
        let next: [(&str, usize); 4] = [
            ("cp_next", np * 4),
            ("m_next", np * 4),
            ("f0_next", np * 16),
            ("dbar_next", np * 16),
        ];
        for (name, bytes) in next {
            own.zeroed(device, name, bytes, false);
        }
        // The paged pools compacted into pages of their stride, each new page filled from every
        // old page (one dispatch when a pool is one page), then copied over the old pages.
        let paged: [PagedCompaction; 2] = [
            (
                "pool_compact_blocks",
                "block_page",
                &self.pages,
                nk,
                &[("k_pool", "k_next", 24)],
            ),
            (
                "pool_compact_watch",
                "watch_pool_page",
                &self.watch_pages,
                nw,
                &[
                    ("watch_pool", "watch_next", size_of::<WatchPair>()),
                    ("watch_loc_pool", "watch_loc_next", size_of::<WatchLoc>()),
                ],
            ),
        ];
        let mut page_groups = Vec::new();
        // (New page q of each buffer: its bytes, its old page's buffer.)
        let mut copies = Vec::new();
        for (kernel, uniform, pages, len, buffers) in paged {
            let next_pages = PoolPages::with_stride(pages.stride, pages.room, len as u32);
            let old: Vec<Vec<wgpu::Buffer>> =
                buffers.iter().map(|b| self.page_buffers(b.0)).collect();
            for q in 0..next_pages.count() {
                let mut pair = own.clone();
                for &(name, next, elem) in buffers {
                    let bytes = next_pages.lens[q] as u64 * elem as u64;
                    let b = pair.zeroed(device, next, bytes as usize, false).clone();
                    own.insert(&page_name(next, q), b.clone());
                    copies.push((b, self.page_buffers(name)[q].clone(), bytes));
                }
                for p in 0..pages.count() {
                    for (k, &(name, _, _)) in buffers.iter().enumerate() {
                        pair.insert(name, old[k][p].clone());
                    }
                    let u = next_pages.page(q, p);
                    pair.upload(device, queue, uniform, bytemuck::bytes_of(&u), true);
                    let bg = pipelines.bind_group(device, kernel, &pair)?;
                    page_groups.push((kernel, bg, next_pages.lens[q]));
                }
            }
        }
        let mut enc = device.create_command_encoder(&Default::default());
        {
            let mut pass = enc.begin_compute_pass(&Default::default());
            for (kernel, threads) in [
                ("pool_compact_points", np as u32),
                ("pool_compact_vectors", np as u32),
            ] {
                let bg = pipelines.bind_group(device, kernel, &own)?;
                pipelines.dispatch(&mut pass, kernel, &bg, threads)?;
            }
            for (kernel, bg, threads) in &page_groups {
                pipelines.dispatch(&mut pass, kernel, bg, *threads)?;
            }
            // (It rewrites the headers' offsets, which the blocks' copies read.)
            let bg = pipelines.bind_group(device, "pool_compact_headers", &own)?;
            pipelines.dispatch(&mut pass, "pool_compact_headers", &bg, ns)?;
        }
        for (from, to) in [
            ("cp_next", "cp_pool"),
            ("m_next", "m_pool"),
            ("f0_next", "f0_pool"),
            ("dbar_next", "dbar_pool"),
        ] {
            let (src, dst) = (own.get(from).unwrap(), own.get(to).unwrap());
            let bytes = match from {
                "cp_next" | "m_next" => np * 4,
                _ => np * 16,
            } as u64;
            if bytes > 0 {
                enc.copy_buffer_to_buffer(src, 0, dst, 0, bytes);
            }
        }
        for (src, dst, bytes) in copies {
            if bytes > 0 {
                enc.copy_buffer_to_buffer(&src, 0, &dst, 0, bytes);
            }
        }
        queue.submit([enc.finish()]);
        self.last.pools.len = [np as u32, nk as u32, nw as u32, 0];
        self.last.pools.base = self.last.pools.len;
        self.garbage = PoolGarbage::default();
        self.write_counters(queue);
        Ok(true)
    }
}

impl AclGpu {
    /// Whether the step records `segment_rebuilds`, which adds the step's rebuilds to
    /// `rebuild_counts` (what `--color updates` shows): off until a caller turns it on, since
    /// nothing else reads those counts.
    pub fn set_count_rebuilds(
        &mut self,
        device: &wgpu::Device,
        queue: &wgpu::Queue,
        pipelines: &Pipelines,
        on: bool,
    ) -> Result<(), AclGpuError> {
        if on != self.count_rebuilds {
            self.count_rebuilds = on;
            self.make_ops(device, queue, pipelines)?;
        }
        Ok(())
    }

    /// Whether the step records `segment_rebuilds` ([`AclGpu::set_count_rebuilds`]).
    pub fn counts_rebuilds(&self) -> bool {
        self.count_rebuilds
    }

    /// Zeroes the per-segment rebuild counts (`rebuild_counts`; the step adds its rebuilds to them).
    pub fn clear_rebuild_counts(&self, queue: &wgpu::Queue) {
        let b = self.own.get("rebuild_counts").expect("made in new");
        queue.write_buffer(b, 0, &vec![0u8; b.size() as usize]);
    }

    /// Reads `n` records of buffer `name` back (tests, diagnostics).
    pub fn read<T: bytemuck::Pod>(
        &self,
        device: &wgpu::Device,
        queue: &wgpu::Queue,
        name: &str,
        n: usize,
    ) -> Result<Vec<T>, AclGpuError> {
        let bytes = (n * size_of::<T>()) as u64;
        if bytes == 0 {
            return Ok(Vec::new());
        }
        let buf = self
            .buffer(name)
            .ok_or_else(|| AclGpuError::Gpu(format!("no buffer {name}")))?;
        let mut b = Buffers::default();
        b.insert(name, buf.clone());
        let v = b.read(device, queue, name, bytes)?;
        Ok(bytemuck::cast_slice(&v).to_vec())
    }
}

/// What a failed ACL step's counters say, in the words the CPU path uses where it meets the same:
/// a contact failure, or a limit of the GPU kernels that the CPU path does not have.
#[derive(Debug)]
pub enum AclStepFailure {
    Contact(crate::contact::ContactError),
    /// A limit of the GPU kernels alone, in words (the CPU path would go on).
    KernelLimit(String),
}

/// The failure a step's counters name ([`AclGpu::verdict_with`]'s error `e`): the scheduler's flags
/// as [`crate::sched::counters_error`] words them, a non-finite force or rotation by its point or
/// set, a full gather, the kernels' limits on a set's size and a rebuild's work, a merge's scan
/// limit; anything else by `e`'s text.
pub fn step_failure(e: &AclGpuError, c: &AclStepCounters) -> AclStepFailure {
    use crate::contact::ContactError;
    use crate::layout::{ACL_ERROR_GATHER_FULL, ACL_ERROR_NOT_FINITE, ACL_ERROR_SET_TOO_BIG};
    if let AclGpuError::TooManyRounds { .. } = e {
        return AclStepFailure::KernelLimit(format!(
            "{e}, the most the GPU step records (each round rebuilds the sets that grew and \
             merges what they overlap; the rounds double on each rerun of the step)"
        ));
    }
    let contact = AclStepFailure::Contact;
    if let Some(s) = crate::sched::counters_error(&c.sched) {
        return contact(super::AclError::Sched(s).into());
    }
    if c.acl.errors & ACL_ERROR_NOT_FINITE != 0 {
        return contact(super::not_finite_error(&c.acl));
    }
    if c.acl.errors & ACL_ERROR_GATHER_FULL != 0 {
        return contact(ContactError::Other(super::gather::gather_full_message()));
    }
    if c.acl.errors & ACL_ERROR_SET_TOO_BIG != 0 {
        return AclStepFailure::KernelLimit(format!(
            "a contact set holds more than {} control points, more than the GPU kernels \
             set_evaluate and set_force take (the cloth is crushed together, or contact.padding \
             is large)",
            super::evaluate::MAX_SET_POINTS
        ));
    }
    if c.pools.errors & super::rebuild::POOL_BOX_TOO_LARGE != 0 {
        return AclStepFailure::KernelLimit(format!(
            "a contact set's box spans more than {} quadrature pairs or {} raw control points, \
             the most the GPU kernel set_rebuild_size takes (contact.padding is large, or the \
             cloth is crushed together)",
            super::pages::MAX_BOX_PAIRS,
            super::pages::MAX_BOX_CPS
        ));
    }
    if c.pools.errors & super::rebuild::POOL_TOO_MUCH_WORK != 0 {
        return AclStepFailure::KernelLimit(format!(
            "a contact set's rebuild needs more than {} units of work (its blocks times its \
             touching pairs), the most the GPU kernel set_rebuild takes (the cloth is crushed \
             together, or contact.padding is large)",
            super::rebuild::MAX_REBUILD_WORK
        ));
    }
    if c.merge.errors & crate::layout::MERGE_SCAN_LIMIT != 0 {
        return contact(ContactError::Other(AclGpuError::ScanLimit.to_string()));
    }
    contact(ContactError::Other(e.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The stages of a step of the tiny swatch with every budget recorded (coalescing, the grid's
    /// newcomer search, 2 rebuild rounds, 2 merge passes with the set index, 2 label rounds),
    /// its ACL dispatches as `examples/dispatch_count` lists them: each kernel counts for the CPU
    /// stage that does its work, the shared ones (scans, sorts, `count_plan`) for the stage that
    /// records them.
    #[test]
    fn each_dispatch_counts_for_the_cpu_stage_that_does_its_work() {
        let merge = "set_bin_count scan_add set_bin_write count_plan sort_histogram scan_add \
            sort_scatter set_bin_index set_overlap_count scan_add set_overlap_write merge_label \
            merge_label merge_hull merge_apply";
        let round = "set_dirty_count set_dirty_write set_rebuild_size pool_alloc_size pool_alloc \
            set_rebuild_points set_rebuild set_rebuild_watch set_rebuild_springs \
            set_rebuild_headers";
        let sched = "acl_step_start set_lookup_count scan_into set_lookup_write set_lookup_sort \
            aabb_raster_movement segment_monitor entries_keep entries_compact sched_grid_count \
            scan_add sched_grid_write sort_histogram scan_add sort_scatter sort_histogram \
            scan_add sort_scatter sort_histogram scan_add sort_scatter newcomer_count \
            newcomer_write count_plan sort_histogram scan_add sort_scatter sort_histogram \
            scan_add sort_scatter newcomer_keep \
            newcomer_compact release_scan_sizes entries_merge_rank release_mark \
            segment_windows_quadrature schedule_process touching_count touching_write \
            sched_history";
        let step = format!(
            "{sched} coalesce_heads contact_coalesce coalesce_box {merge} {merge} \
             acl_coalesced_plan set_evaluate set_force {round} {merge} {merge} {round} \
             set_bin_count scan_add set_bin_write count_plan sort_histogram scan_add \
             sort_scatter set_bin_index set_overlap_count scan_add set_overlap_write \
             set_point_count scan_into set_point_write set_gather set_compact"
        );
        let kernels: Vec<&str> = step.split_whitespace().collect();
        assert_eq!(kernels.len(), 142);
        let stages = dispatch_stages(kernels.iter().copied());
        assert_eq!(stages.len(), kernels.len());
        // The stages in the order the step runs them, each run's first kernel.
        let mut runs = Vec::new();
        for (i, (&k, &s)) in kernels.iter().zip(&stages).enumerate() {
            if i == 0 || stages[i - 1] != s {
                runs.push((STAGE_KEYS[s], k));
            }
        }
        assert_eq!(
            runs,
            [
                ("schedule_ms", "acl_step_start"),
                ("raster_ms", "aabb_raster_movement"),
                ("newcomers_ms", "newcomer_count"),
                ("schedule_ms", "segment_windows_quadrature"),
                ("coalesce_ms", "coalesce_heads"),
                ("evaluate_ms", "acl_coalesced_plan"),
                ("rebuild_ms", "set_dirty_count"),
                ("coalesce_ms", "set_bin_count"),
                ("rebuild_ms", "set_dirty_count"),
                ("coalesce_ms", "set_bin_count"),
                ("evaluate_ms", "set_point_count"),
                ("coalesce_ms", "set_compact"),
            ]
        );
        // A step begins with a kernel that names its stage.
        assert_eq!(stage_entered_at(kernels[0]), Some(2));
    }

    /// Every kernel that names a stage is one an ACL step records (a renamed kernel would leave
    /// its dispatches to the stage before it).
    #[test]
    fn the_kernels_that_name_a_stage_exist() {
        let all = all_kernels();
        for (k, s) in STAGE_ENTRIES {
            assert!(all.contains(k), "{k}");
            assert!(*s < STAGE_KEYS.len(), "{k}");
        }
    }

    fn step(rebuilds: u32, sets: u32) -> AclStepCounters {
        let mut c = AclStepCounters::default();
        c.sizes.rebuilds = rebuilds;
        c.sizes.num_sets = sets;
        c
    }

    #[test]
    fn a_full_gather_names_its_limit() {
        let mut c = AclStepCounters::default();
        c.acl.errors = crate::layout::ACL_ERROR_GATHER_FULL;
        let AclStepFailure::Contact(f) = step_failure(&AclGpuError::flags(&c), &c) else {
            panic!("a full gather is the CPU path's error too");
        };
        let msg = f.to_string();
        assert!(msg.contains("more than 128 contact sets"), "{msg}");
    }

    /// Each flag a failed step's counters may hold, in the words of the CPU path where it has
    /// them (the scheduler's `SchedError`, ACL's `ContactError`s), and as a limit of the kernels
    /// where only the GPU step has it; never the raw bits.
    #[test]
    fn a_failed_steps_flags_are_named() {
        use crate::layout::{
            ACL_ERROR_NOT_FINITE, ACL_ERROR_SET_TOO_BIG, ERROR_GRID_CELL_FULL, ERROR_GRID_RANGE,
            ERROR_NAN_POSITION, MERGE_SCAN_LIMIT,
        };
        let fresh = || {
            let mut c = AclStepCounters::default();
            c.sched.first_bad_point = u32::MAX;
            c.sched.first_bad_segment = u32::MAX;
            c.acl.first_bad_point = u32::MAX;
            c.acl.first_bad_set = u32::MAX;
            c
        };
        let failure = |c: &AclStepCounters| step_failure(&AclGpuError::flags(c), c);
        let contact = |c: &AclStepCounters| match failure(c) {
            AclStepFailure::Contact(e) => e.to_string(),
            f => panic!("{f:?}"),
        };
        let limit = |c: &AclStepCounters| match failure(c) {
            AclStepFailure::KernelLimit(m) => m,
            f => panic!("{f:?}"),
        };
        let sched = |errors: u32, point: u32, segment: u32| {
            let mut c = fresh();
            c.sched.errors = errors;
            c.sched.first_bad_point = point;
            c.sched.first_bad_segment = segment;
            contact(&c)
        };
        assert_eq!(
            sched(ERROR_NAN_POSITION, 41, u32::MAX),
            crate::contact::ContactError::NotFinite { point: 41 }.to_string()
        );
        for (bit, e) in [
            (
                ERROR_GRID_RANGE,
                crate::sched::SchedError::TooManyCells { seg: 12 },
            ),
            (
                ERROR_GRID_CELL_FULL,
                crate::sched::SchedError::CellFull { seg: 12 },
            ),
        ] {
            assert_eq!(sched(bit, u32::MAX, 12), e.to_string());
        }
        let mut c = fresh();
        c.acl.errors = ACL_ERROR_NOT_FINITE;
        c.acl.first_bad_set = 3;
        let msg = contact(&c);
        assert!(msg.contains("contact set 3 is not finite"), "{msg}");
        c.acl.first_bad_point = 77;
        assert_eq!(
            contact(&c),
            crate::contact::ContactError::NotFinite { point: 77 }.to_string()
        );
        let mut c = fresh();
        c.acl.errors = ACL_ERROR_SET_TOO_BIG;
        let msg = limit(&c);
        assert!(msg.contains("more than 1008 control points"), "{msg}");
        let mut c = fresh();
        c.pools.errors = super::super::rebuild::POOL_TOO_MUCH_WORK;
        let msg = limit(&c);
        assert!(msg.contains("more than 16384 units of work"), "{msg}");
        let mut c = fresh();
        c.pools.errors = super::super::rebuild::POOL_BOX_TOO_LARGE;
        let msg = limit(&c);
        assert!(
            msg.contains("more than 65536 quadrature pairs or 512 raw control points"),
            "{msg}"
        );
        let mut c = fresh();
        c.merge.errors = MERGE_SCAN_LIMIT;
        assert_eq!(contact(&c), AclGpuError::ScanLimit.to_string());
    }

    #[test]
    fn newcomer_level_follows_the_segments_entering_and_the_candidates() {
        let at = |entered: u32, count: u32| {
            newcomer_level(&SchedCounters {
                entered,
                cand: crate::layout::Capacity {
                    count,
                    ..Default::default()
                },
                ..Default::default()
            })
        };
        assert_eq!(at(0, 0), 0);
        assert_eq!(at(1, 0), 1);
        assert_eq!(at(NEWCOMER_LIST_MAX, NEWCOMER_LIST_CANDIDATES), 1);
        assert_eq!(at(NEWCOMER_LIST_MAX + 1, 0), 2);
        assert_eq!(at(3, NEWCOMER_LIST_CANDIDATES + 1), 2);
    }

    #[test]
    fn rerun_causes_name_each_budget_and_capacity_that_grew() {
        let all = AclCaps::all(64);
        let ran = AclCaps {
            rounds: 1,
            coalesce: 0,
            newcomers: 0,
            merge: MergeCaps {
                indexed: 0,
                ..all.merge
            },
            ..all
        };
        assert!(rerun_causes(&ran, &ran).is_empty());
        let mut need = ran;
        need.rounds = 2;
        need.coalesce = 1;
        assert_eq!(rerun_causes(&ran, &need), ["rebuild_rounds", "coalesce"]);
        let mut need = ran;
        need.merge.passes = 2;
        need.merge.indexed = 1;
        need.points = 2 * ran.points;
        assert_eq!(
            rerun_causes(&ran, &need),
            ["merge_passes", "indexed", "capacity"]
        );
        let mut need = ran;
        need.merge.rounds = 16;
        need.newcomers = 1;
        need.sched.entries += 1;
        assert_eq!(
            rerun_causes(&ran, &need),
            ["label_rounds", "newcomers", "capacity"]
        );
    }

    #[test]
    fn a_rerun_is_described_by_what_grew() {
        let ran = AclCaps {
            rounds: 2,
            ..AclCaps::all(64)
        };
        let same = describe_rerun(&ran, &ran);
        assert!(
            same.starts_with("the same capacities and budgets"),
            "{same}"
        );
        let mut next = ran;
        next.rounds = 4;
        next.merge.passes = ran.merge.passes + 1;
        next.sched.cand = 100;
        next.blocks = 1_000;
        next.sched.release = 70;
        assert_eq!(
            describe_rerun(&ran, &next),
            format!(
                "rebuild rounds 2 → 4, merge passes {} → {}; sched.cand 64 → 100, blocks 64 → 1000, \
                 sched.release 64 → 70",
                ran.merge.passes,
                ran.merge.passes + 1
            )
        );
        // A capacity that shrank (a growth never makes one) is not named.
        next = ran;
        next.points = 8;
        assert!(describe_rerun(&ran, &next).starts_with("the same"));
    }

    #[test]
    fn the_dirty_list_search_gives_way_to_the_index_when_too_long() {
        // At rest on the scarf and the swatches: a few dozen dirty sets of some thousands.
        assert!(!dirty_search_too_long(&step(50, 20_000)));
        assert!(!dirty_search_too_long(&step(DIRTY_OVERLAP_MAX, 8_000)));
        // Over the kernel's loop bound, however few the sets.
        assert!(dirty_search_too_long(&step(DIRTY_OVERLAP_MAX + 1, 100)));
        // The afghan at rest: too many box tests.
        assert!(dirty_search_too_long(&step(600, 326_000)));
        // The sets coalescing makes, at most one per touching pair of the scheduler's: a few new
        // pairs a frame on the scarf; too many for the kernel's bound, or for the table.
        let touching = |pairs: u32, sets: u32| {
            let mut c = step(10, sets);
            c.sched.touching.count = pairs;
            c
        };
        assert!(!dirty_search_too_long(&touching(6, 40_000)));
        assert!(dirty_search_too_long(&touching(DIRTY_OVERLAP_MAX + 1, 100)));
        assert!(dirty_search_too_long(&touching(600, 326_000)));
    }
}
