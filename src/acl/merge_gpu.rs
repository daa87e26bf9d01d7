//! ACL's coalescing and set merging on the GPU: the buffers and the ordered dispatch list of the
//! kernels whose CPU twins [`super::coalesce`] holds (the CPU path: `coalesce_pairs` and
//! `set_merge`).
//!
//! [`MergeGpu::new`] adds its buffers to a named buffer set that already holds `touching` (the
//! scheduler's pairs), `sets` (the set table, [`MergeCaps::sets`] slots), `springs` (4 stiction
//! springs per set slot) and `merge_counters`
//! ([`MergeCounters`]: `sets.count` the slots in use, `touching.count` the pairs; the host writes
//! the capacities with [`MergeGpu::set_capacities`]); with coalescing also `sched_counters` (the
//! scheduler's [`crate::layout::SchedCounters`]: `coalesce_heads` takes the touching count from
//! there and moves it into `merge_counters`). The dispatches are:
//!
//! | # | kernel | threads |
//! |---|--------|---------|
//! | 1 | `coalesce_heads` (the run flags, and their sums per 256 pairs into `run_groups`; the scheduler's touching count into `merge_counters`) | touching capacity + 1 |
//! | 2 | (no scan: `contact_coalesce` numbers the runs from `run_groups` and a workgroup scan) | |
//! | 3 | `contact_coalesce` | touching capacity |
//! | 4 | `coalesce_box` (the new sets' boxes and cleared springs) | set capacity |
//! |   | then [`MergeCaps::passes`] merge passes, each: | |
//! | 5 | `set_bin_count` | set capacity + 1 |
//! | 6 | scan of `bin_offsets` | set capacity + 1 |
//! | 7 | `set_bin_write` (into `set_bin_sort_in` when the sort below takes an odd number of passes) | set capacity |
//! | 8 | stable radix sort of the live items into `set_bin_sort` by bin (`key_bits(num_bins)` bits) in the fewest passes ([`GpuSort::counted_fewest`]) | index count (`count_plan`) |
//! | 9 | `set_bin_index` | max(bins + 1, index capacity) |
//! | 10 | `set_overlap_count` | set capacity + 1 |
//! | 11 | scan of `edge_offsets` | set capacity + 1 |
//! | 12 | `set_overlap_write` | set capacity |
//! | 13 | [`MergeCaps::rounds`] × `merge_label` (uniform `merge_round` = 0, 1, …) | set + edge capacity |
//! | 14 | `merge_hull`, `merge_apply` (`merge_round` = rounds) | set capacity |
//!
//! With [`MergeCaps::indexed`] = 0 each pass's rows 5–12 are instead one dispatch (set capacity)
//! that tests every live set against a short list holding every moved set, so it lists the same
//! pairs as the index pass, appending them at `edges.count` (which must be 0 before) in an order
//! that varies, and that neither the labels nor the hulls depend on:
//! - in a chain of passes alone ([`MergeGpu::new_passes`], after a rebuild round)
//!   `dirty_overlap_write` tests the round's dirty list (`dirty`, its length
//!   `rebuild.num_dirty`; `set_dirty_write` clears `edges.count` at the round's start); the buffer
//!   set must then hold `rebuild` and `dirty`;
//! - in a chain with coalescing, `coalesce_overlap_write` tests the sets coalescing made (slots
//!   `coalesce_base..sets.count`: the table before was a completed step's, none moved, none
//!   overlapping; the step's `acl_counts` clears `edges.count` at its start);
//! - in every later pass, `moved_overlap_write` tests the roots the pass before grew
//!   (`moved_sets[..moved]`, listed by its `merge_apply`; its `merge_hull`, with the round
//!   uniform's `clear_edges`, cleared `edges.count`). The buffer set holds `moved_sets` either way
//!   (`merge_apply` always lists the moved roots).
//!
//! *Data-dependent iteration* is bounded by the host, never by a device loop: label propagation
//! runs the recorded rounds (a round after one that changed nothing returns at once), merge passes
//! the recorded passes (a pass with no overlapping pair changes nothing). The counters say whether
//! they sufficed ([`MergeGpu::verdict`]): `more_rounds` when a pass's last round still changed a
//! label (min-label propagation with pointer jumping needs about log2 of a component's extent in
//! rounds on chains, but has no log2(sets) bound in general), `edges.count > 0` when the last pass
//! still merged (its hulls may overlap further sets). The host then rebuilds with more rounds or
//! passes, or grown capacities, and reruns from the same inputs, as `GpuSim` does for its length
//! budget. When the verdict is [`MergeVerdict::Done`], the table, the springs of its slots (and
//! `set_bin_start` / `set_bin_items`, the index of the final live sets) equal the CPU path's bit
//! for bit.

use super::sets::ContactSet;
use crate::contact::key_bits;
use crate::layout::Capacity;
use crate::layout::{
    KeyValue, MergeCounters, MergeRound, MergeUniform, MERGE_DIRTY_LIMIT, MERGE_SCAN_LIMIT,
};
use crate::pipelines::{Buffers, PipelineError, Pipelines};
use crate::scan::{CountSource, GpuScan};
use crate::sort::GpuSort;
use std::mem::offset_of;

/// The kernels of the chain (besides the scan and sort blocks).
pub const KERNELS: &[&str] = &[
    "coalesce_heads",
    "contact_coalesce",
    "coalesce_box",
    "set_bin_count",
    "set_bin_write",
    "set_bin_index",
    "set_overlap_count",
    "set_overlap_write",
    "dirty_overlap_write",
    "coalesce_overlap_write",
    "moved_overlap_write",
    "merge_label",
    "merge_hull",
    "merge_apply",
    "scan_reduce",
    "scan_add",
    "sort_histogram",
    "sort_scatter",
    "count_plan",
];

/// The capacities and iteration budgets a [`MergeGpu`] is built for.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, bytemuck::Pod, bytemuck::Zeroable)]
pub struct MergeCaps {
    /// Set table slots (the `sets` buffer's length in records).
    pub sets: u32,
    /// Touching pairs the `touching` buffer holds.
    pub touching: u32,
    /// Overlapping pairs per merge pass.
    pub edges: u32,
    /// Set index items (set, bin) per merge pass.
    pub index: u32,
    /// `merge_label` rounds recorded per merge pass (at least 1).
    pub rounds: u32,
    /// Merge passes recorded (at least 1).
    pub passes: u32,
    /// 1: every merge pass builds the set index and searches it; 0: the first pass searches a
    /// short list instead (one dispatch for the index's 11; `edges.count` must be 0 before it): in
    /// a chain of passes alone ([`MergeGpu::new_passes`], after a rebuild round) the round's dirty
    /// list (`dirty_overlap_write`; the buffer set must hold `rebuild` and `dirty`), in a chain
    /// with coalescing the new sets (`coalesce_overlap_write`). A trial after a quiet stretch: a
    /// list longer than [`crate::layout::DIRTY_OVERLAP_MAX`], or one that lacks a live moved set,
    /// raises [`crate::layout::MERGE_DIRTY_LIMIT`] and the step reruns with 1.
    pub indexed: u32,
}

/// What the counters of a run say about it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MergeVerdict {
    /// The result is final (equal to the CPU path's).
    Done,
    /// Rerun from the same inputs with these capacities and budgets (grown where the run ran out).
    Rerun(MergeCaps),
    /// An overlap search met more than `scan_limit` index items: the scene cannot be merged on
    /// either path (the CPU path stops with the same error).
    ScanLimit,
}

pub use crate::pipelines::Dispatch;

fn owned<'a>(
    it: impl IntoIterator<Item = (&'static str, &'a wgpu::BindGroup, crate::pipelines::Threads)>,
) -> Vec<Dispatch> {
    it.into_iter()
        .map(|(n, bg, t)| (n, bg.clone(), t))
        .collect()
}

/// The chain's buffers and dispatches for fixed capacities.
pub struct MergeGpu {
    pub caps: MergeCaps,
    /// Dispatches up to and including the first pass's overlap search.
    first_search: usize,
    dispatches: Vec<Dispatch>,
    // Kept alive with the bind groups that use their buffers.
    _scans: Vec<GpuScan>,
    _sort: GpuSort,
    _rounds: Vec<wgpu::Buffer>,
}

impl MergeGpu {
    /// Adds the chain's buffers to `buffers` (which holds `touching`, `sets`, `springs` and
    /// `merge_counters`)
    /// and builds every bind group.
    pub fn new(
        device: &wgpu::Device,
        queue: &wgpu::Queue,
        pipelines: &Pipelines,
        buffers: &mut Buffers,
        uniform: &MergeUniform,
        caps: MergeCaps,
    ) -> Result<MergeGpu, PipelineError> {
        Self::with_coalescing(device, queue, pipelines, buffers, uniform, caps, true)
    }

    /// The merge passes alone, without coalescing (`set_merge` after a rebuild round).
    pub fn new_passes(
        device: &wgpu::Device,
        queue: &wgpu::Queue,
        pipelines: &Pipelines,
        buffers: &mut Buffers,
        uniform: &MergeUniform,
        caps: MergeCaps,
    ) -> Result<MergeGpu, PipelineError> {
        Self::with_coalescing(device, queue, pipelines, buffers, uniform, caps, false)
    }

    fn with_coalescing(
        device: &wgpu::Device,
        queue: &wgpu::Queue,
        pipelines: &Pipelines,
        buffers: &mut Buffers,
        uniform: &MergeUniform,
        caps: MergeCaps,
        coalesce: bool,
    ) -> Result<MergeGpu, PipelineError> {
        use wgpu::util::DeviceExt;
        let caps = MergeCaps {
            rounds: caps.rounds.max(1),
            passes: caps.passes.max(1),
            indexed: caps.indexed.min(1),
            ..caps
        };
        let list_first = caps.indexed == 0;
        let (sc, tc, ec, ic) = (
            caps.sets as usize,
            caps.touching as usize,
            caps.edges as usize,
            caps.index as usize,
        );
        let mut zeroed = |name: &str, bytes: usize| {
            buffers.zeroed(device, name, bytes, false);
        };
        zeroed("run_offsets", (tc + 1) * 4);
        zeroed("run_groups", (tc + 1).div_ceil(256) * 4);
        zeroed("set_hull", sc * 16);
        zeroed("bin_offsets", (sc + 1) * 4);
        // set_bin_write writes whichever of the two the sort in the fewest passes starts from
        // (GpuSort::counted_fewest); the sorted items end in set_bin_sort.
        zeroed("set_bin_sort_in", ic * std::mem::size_of::<KeyValue>());
        zeroed("set_bin_sort", ic * std::mem::size_of::<KeyValue>());
        zeroed("set_bin_start", (uniform.num_bins as usize + 1) * 4);
        zeroed("set_bin_items", ic * 4);
        zeroed("edge_offsets", (sc + 1) * 4);
        zeroed("labels", 2 * sc * 4);
        zeroed("edges", ec * 8);
        zeroed("moved_sets", sc * 4);
        buffers.upload(
            device,
            queue,
            "acl_merge",
            bytemuck::bytes_of(uniform),
            true,
        );
        // Rounds 0..=rounds, then `rounds` again for the merge_hull of a pass that a moved-list
        // search follows (it clears the pass's pair count).
        let rounds: Vec<wgpu::Buffer> = (0..=caps.rounds)
            .map(|round| (round, 0))
            .chain([(caps.rounds, 1)])
            .map(|(round, clear_edges)| {
                let r = MergeRound {
                    round,
                    clear_edges,
                    ..Default::default()
                };
                device.create_buffer_init(&wgpu::util::BufferInitDescriptor {
                    label: Some("merge_round"),
                    contents: bytemuck::bytes_of(&r),
                    usage: wgpu::BufferUsages::UNIFORM,
                })
            })
            .collect();
        let get = |n: &str| buffers.get(n).expect("uploaded above");
        // Grouped scans: set_bin_count and set_overlap_count write their block sums into the
        // scan's partials (their `scan_groups`). coalesce_heads writes its own into `run_groups`,
        // which contact_coalesce reads: its flags have no scan.
        let grouped = |n: &str, len: u32| GpuScan::grouped(device, pipelines, get(n), len);
        let scan_bins = grouped("bin_offsets", caps.sets + 1)?;
        let scan_edges = grouped("edge_offsets", caps.sets + 1)?;
        // Over the live index items, in the fewest passes (set_bin_index stops at their count).
        let (sort, bins_written) = GpuSort::counted_fewest(
            device,
            pipelines,
            get("set_bin_sort_in"),
            get("set_bin_sort"),
            caps.index,
            key_bits(uniform.num_bins),
            &CountSource {
                buffer: get("merge_counters").clone(),
                word: (offset_of!(MergeCounters, index) + offset_of!(Capacity, count)) as u32 / 4,
                add: 0,
            },
        )?;
        let own = |name: &'static str, threads: u32| -> Result<Dispatch, PipelineError> {
            Ok((
                name,
                pipelines.bind_group(device, name, buffers)?,
                threads.into(),
            ))
        };
        let with_round = |name: &'static str,
                          r: &wgpu::Buffer,
                          threads: u32|
         -> Result<Dispatch, PipelineError> {
            let bg = pipelines.bind_group_with(device, name, buffers, &[("merge_round", r)])?;
            Ok((name, bg, threads.into()))
        };
        let mut d: Vec<Dispatch> = Vec::new();
        if coalesce {
            let run_groups = [("scan_groups", get("run_groups"))];
            for (k, threads) in [
                ("coalesce_heads", caps.touching + 1),
                ("contact_coalesce", caps.touching),
            ] {
                let bg = pipelines.bind_group_with(device, k, buffers, &run_groups)?;
                d.push((k, bg, threads.into()));
            }
            d.push(own("coalesce_box", caps.sets)?);
        }
        let mut pass: Vec<Dispatch> = Vec::new();
        pass.push(scan_bins.producer(
            device,
            pipelines,
            "set_bin_count",
            buffers,
            caps.sets + 1,
        )?);
        pass.extend(owned(scan_bins.dispatches()));
        let bg = pipelines.bind_group_with(
            device,
            "set_bin_write",
            buffers,
            &[("set_bin_sort", &bins_written)],
        )?;
        pass.push(("set_bin_write", bg, caps.sets.into()));
        pass.extend(owned(sort.dispatches()));
        pass.push(own(
            "set_bin_index",
            (uniform.num_bins + 1).max(caps.index),
        )?);
        pass.push(scan_edges.producer(
            device,
            pipelines,
            "set_overlap_count",
            buffers,
            caps.sets + 1,
        )?);
        pass.extend(owned(scan_edges.dispatches()));
        pass.push(own("set_overlap_write", caps.sets)?);
        // Without the index, each pass searches a short list: the first the new sets after
        // coalescing or the round's dirty list after a rebuild round, the others the roots the
        // pass before grew.
        let mut first_pass: Vec<Dispatch> = Vec::new();
        let mut moved_pass: Vec<Dispatch> = Vec::new();
        if list_first {
            let search = if coalesce {
                "coalesce_overlap_write"
            } else {
                "dirty_overlap_write"
            };
            first_pass.push(own(search, caps.sets)?);
            moved_pass.push(own("moved_overlap_write", caps.sets)?);
        }
        // The label rounds, merge_hull and merge_apply; `clear`: merge_hull clears the pass's
        // pair count for a moved-list search after it.
        let tail = |clear: bool| -> Result<Vec<Dispatch>, PipelineError> {
            let mut t: Vec<Dispatch> = Vec::new();
            for r in &rounds[..caps.rounds as usize] {
                t.push(with_round("merge_label", r, caps.sets + caps.edges)?);
            }
            let last = &rounds[caps.rounds as usize];
            let hull = &rounds[caps.rounds as usize + usize::from(clear)];
            t.push(with_round("merge_hull", hull, caps.sets)?);
            t.push(with_round("merge_apply", last, caps.sets)?);
            Ok(t)
        };
        let labels = tail(false)?;
        let labels_clear = if list_first { tail(true)? } else { Vec::new() };
        let mut first_search = 0;
        for p in 0..caps.passes {
            let search = match (list_first, p) {
                (true, 0) => &first_pass,
                (true, _) => &moved_pass,
                (false, _) => &pass,
            };
            d.extend(search.iter().cloned());
            if p == 0 {
                first_search = d.len();
            }
            let before_moved = list_first && p + 1 < caps.passes;
            d.extend(
                if before_moved { &labels_clear } else { &labels }
                    .iter()
                    .cloned(),
            );
        }
        Ok(MergeGpu {
            caps,
            first_search,
            dispatches: d,
            _scans: vec![scan_bins, scan_edges],
            _sort: sort,
            _rounds: rounds,
        })
    }

    /// The dispatches in order: kernel, bind group, threads.
    pub fn dispatches(&self) -> &[Dispatch] {
        &self.dispatches
    }

    /// The dispatches up to the first pass's overlap search, without the rest of that pass (the
    /// label rounds, `merge_hull`, `merge_apply`) or any later pass: for the merge invocation
    /// after a step's last rebuild round. A merge there leaves its roots dirty (`merge_apply`),
    /// so whatever the passes the step needs another round and reruns with more; the first
    /// search decides alone: pairs found (`edges.count > 0`) make the step rerun with more rounds
    /// and passes (the step's `last_round_merge_verdict`) whether or not they are merged, and
    /// none found leave the labels the identity, so the rest of the pass would only clear the
    /// moved flags (the CPU path's `set_merge` skips it alike) and no later pass would find a
    /// moved set. Whoever comes after must clear them instead (the GPU ACL step's `set_compact`
    /// does).
    pub fn dispatches_to_first_search(&self) -> &[Dispatch] {
        &self.dispatches[..self.first_search]
    }

    /// Records every dispatch into `pass`.
    pub fn record(
        &self,
        pipelines: &Pipelines,
        pass: &mut wgpu::ComputePass<'_>,
    ) -> Result<(), PipelineError> {
        pipelines.dispatch_all(pass, &self.dispatches)
    }

    /// Writes the chain's capacities into `counters` (whose `sets.count` and `touching.count` the
    /// host sets).
    pub fn set_capacities(&self, counters: &mut MergeCounters) {
        counters.sets.capacity = self.caps.sets;
        counters.touching.capacity = self.caps.touching;
        counters.edges.capacity = self.caps.edges;
        counters.index.capacity = self.caps.index;
    }

    /// What a run's counters say (see the module doc). An overflow hides what follows it, so the
    /// first one found is grown (to its count plus a quarter) and the rest waits for the rerun.
    pub fn verdict(&self, c: &MergeCounters) -> MergeVerdict {
        verdict_for(&self.caps, c)
    }
}

/// [`MergeGpu::verdict`] for a chain built with capacities `caps`.
pub fn verdict_for(caps: &MergeCaps, c: &MergeCounters) -> MergeVerdict {
    {
        let grow = |n: u32| n.saturating_add(n / 4).max(16);
        let caps = *caps;
        if c.errors & MERGE_SCAN_LIMIT != 0 {
            return MergeVerdict::ScanLimit;
        }
        if c.errors & MERGE_DIRTY_LIMIT != 0 {
            // The dirty-list search could not run: the index pass lists the same pairs.
            return MergeVerdict::Rerun(MergeCaps { indexed: 1, ..caps });
        }
        if c.sets.overflow != 0 {
            return MergeVerdict::Rerun(MergeCaps {
                sets: grow(c.sets.count),
                ..caps
            });
        }
        if c.index.overflow != 0 {
            return MergeVerdict::Rerun(MergeCaps {
                index: grow(c.index.count),
                ..caps
            });
        }
        if c.edges.overflow != 0 {
            return MergeVerdict::Rerun(MergeCaps {
                edges: grow(c.edges.count),
                ..caps
            });
        }
        if c.more_rounds != 0 {
            return MergeVerdict::Rerun(MergeCaps {
                rounds: 2 * caps.rounds,
                ..caps
            });
        }
        if c.edges.count != 0 {
            return MergeVerdict::Rerun(MergeCaps {
                passes: 2 * caps.passes,
                ..caps
            });
        }
        MergeVerdict::Done
    }
}

/// The padding sets of a table buffer of `capacity` slots holding `sets` (zeroed, not live).
pub fn table_with_capacity(sets: &[ContactSet], capacity: usize) -> Vec<ContactSet> {
    let mut t = sets.to_vec();
    t.resize(capacity.max(sets.len()), ContactSet::default());
    t
}
