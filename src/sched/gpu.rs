//! The scheduler's step on the GPU: the state of [`super::Scheduler`] in GPU buffers and one
//! [`super::Scheduler::detect`] as a recorded list of dispatches of the kernels whose CPU twins are in
//! this module's siblings.
//!
//! Inputs: `pos`, `segments`, `params` (for `quadrature_points`: `num_segments`, `quadrature`),
//! `quad_weights`, `quad_arc` and `seg_contact` from the caller's buffer set; `set_lookup` and
//! `released` in buffers of this driver ([`SchedGpu::write_inputs`]; a later ACL-on-GPU path writes
//! them in place); the per-step `sched_step` uniform (step number, bins due, number of releases;
//! [`SchedGpu::step_uniform`]), the only value the host writes per step — a caller batching steps
//! can bind it from a ring of per-step records. Outputs: the entry table (`entries_a`, length in
//! `sched_state[0]`), the touching pairs (`touching`, count in `sched_counters.touching`) and the
//! counters.
//!
//! # Dispatches (one step)
//!
//! | # | kernel | `sched` | threads |
//! |---|---|---|---|
//! | 1 | `sched_sizes` (start) | — | 1 |
//! | 2 | `aabb_raster_movement`, `segment_monitor` | — | segments |
//! | 3 | (the quadrature points: in row 12's dispatch, before `schedule_process` first reads them) | | |
//! | 4 | `entries_keep` (A; each workgroup's kept entries into `keep_groups`), `entries_compact` (A → B: each kept entry's slot from those group sums and a workgroup scan, no scan dispatch; the thread of the flags' trailing element writes p1, the kept table's record) | p0 | entry cap. + 1 |
//! | 5 | `sched_grid_count`, scan, `sched_grid_write` (into `sched_grid_in`; its thread 0 plans the sort, no `count_plan`), counted sort into `sched_grid` (24 key bits: 3 passes) | — | segments + 1, grid cap. |
//! | 6 | `newcomer_count` (also the counts per 256 items into `newcomer_groups`, and their total into `sched_counters.cand.count`), `newcomer_write` (each item's first slot from those group sums and a workgroup scan, no scan dispatch), counted sort of the live candidates into `sched_cand` in the fewest passes (from `sched_cand_in`, which `newcomer_write` then writes, when ⌈2k / 8⌉ is odd) | — | grid cap. |
//! | 5–7′ | or, in place of rows 5–7, the listed search: `newcomer_list_write`, `newcomer_list_compact` (B; p1) ([`SchedGpu::dispatches_with`] at level 1) | p1 | segments, one workgroup |
//! | 7 | `newcomer_keep` (B; p1, bound as a uniform: its storage bindings are 8; also the kept flags per 256 candidates into `fresh_groups`, and their total into `sched_counters.fresh.count`), `newcomer_compact` (—; each kept candidate's slot from those group sums and a workgroup scan, no scan dispatch) | p1 | candidates + 1 (counted: the grid planned by `newcomer_write`'s thread 0, no `count_plan`) |
//! | 8–9 | `release_scan_sizes`: the releases' slots counted and scanned and `sched_sizes`' merged phase, in one workgroup (while the release list's capacity is below [`RELEASE_SCAN_SIZES_MAX`]; otherwise `release_count` (release list cap. + 1), scan, `sched_sizes` (merged)) | — | 256 |
//! | 10 | `entries_merge_rank` (B + fresh → A) | p1 | entry cap. |
//! | 11 | `release_mark` (A) | p2 | release slot cap. |
//! | 12 | `segment_windows_quadrature` (—: `segment_windows` and `quadrature_points`, two maps in one dispatch), `schedule_process` (A; p2) | p2 | segments · (λ_max + 1 + b), entry cap. |
//! | 13 | `touching_count` (the touching counts per 256 entries into `touch_groups`), `touching_write` (each entry's first slot from those group sums and a workgroup scan, no scan dispatch) (left out by a caller that does not read the list: [`SchedGpu::dispatches_with`]) | p2 | entry cap. |
//! | 14 | `sched_history` | — | max(points, segments) |
//!
//! **Counts stay on the GPU.** Every kernel reads its count from its `sched` record
//! (`sched_p0/p1/p2`, written by `sched_sizes` or `release_scan_sizes` (p1 by `entries_compact`)
//! from the scans' totals, and bound as read-only storage for that reason, or as a uniform where a
//! kernel has no storage binding left; the column `sched` above; kernels that read only the step's
//! constants bind the `sched_step` uniform, "—") or from `sched_counters`, and its tail threads
//! return at once. The grid's and the candidates' sorts and `newcomer_keep` / `newcomer_compact`
//! are *counted*: sized from the live count in `sched_counters` (indirect dispatch, planned by a
//! `count_plan` dispatch or by the count's producer; [`crate::scan::GpuScan::counted`]), so a
//! step at rest sorts its grid items, not the grid's capacity, and no candidate slot. Their readers
//! stop at the count, and the sorted buffers' slots past it hold whatever they held (both sorts
//! take the fewest passes, ping-ponging with a second buffer).
//! The other kernels run over their capacities with the early exit; a scan over a capacity is exact
//! for the prefix the kernels read (an exclusive sum at index `n` depends only on the elements
//! before `n`, which the count kernels write every step).
//!
//! The CPU run skips the grid and the newcomers on steps where no segment entered a cell, and the
//! drop where none left one; the GPU runs them anyway and gets the same table (no newcomer item, no
//! candidate; every entry kept). `segment_monitor` counts the segments that entered a cell
//! (`sched_counters.entered`) and lists the first [`crate::layout::NEWCOMER_LIST_MAX`] of them
//! (`movers`), so a caller that records many steps ahead can leave rows 5–7 out, or record the
//! listed search in place of the grid ([`SchedGpu::dispatches_with`]), and rerun a step whose count
//! says it needed more (the ACL step's `newcomers` budget,
//! [`crate::acl::gpu::AclCaps::newcomers`]).
//!
//! **Batches of steps** (for `GpuSim`): [`SchedGpu::dispatches`] appends to another list like
//! `ExactGpu::dispatches`. The host's only per-step value is the `sched_step` record: a batch writes
//! one record per step into a ring and copies record `k` into `sched_step` before step `k`'s
//! dispatches (`copy_buffer_to_buffer` between compute passes), or binds one bind-group set per
//! ring slot. `sched_sizes` resets the counters at the start of every step, so a batch that reads
//! the counters once must first make the overflow flags sticky (not done yet: [`SchedGpu::step`]
//! runs one step per submission and reads the counters after each).
//!
//! **Capacities** ([`SchedCaps`]): grid items, candidates, new entries, entries, touching pairs and
//! release slots, each with its count and overflow flag in `sched_counters`, and the input
//! capacities of `set_lookup` and `released`. [`SchedGpu::step`] saves the persistent state (entry
//! table, table length, previous cell boxes, position history, snapshots, motion records) before
//! the step, reads the counters after it, and on an overflow restores the state, grows the
//! capacity that overflowed and reruns: the result is the same as with room from the start.

use super::{anchor_of, bins_due, SIZES_MERGED, SIZES_START};
use crate::layout::Capacity;
use crate::layout::{
    CellBox, Interval, KeyValue, Release, SchedCounters, SchedEntry, SchedPhase, SchedUniform,
    SegmentMotion,
};
use crate::pipelines::Dispatch;
use crate::pipelines::Threads as T;
use crate::pipelines::{read_mapped, Buffers, PipelineError, Pipelines};
use crate::scan::{CountSource, CountedGrid, GpuScan};
use crate::sort::GpuSort;
use std::mem::offset_of;

/// The kernels of the step (besides the scan and sort blocks).
pub const KERNELS: &[&str] = &[
    "sched_sizes",
    "aabb_raster_movement",
    "segment_monitor",
    "entries_keep",
    "entries_compact",
    "sched_grid_count",
    "sched_grid_write",
    "newcomer_count",
    "newcomer_write",
    "newcomer_list_write",
    "newcomer_list_compact",
    "newcomer_keep",
    "newcomer_compact",
    "release_count",
    "release_scan_sizes",
    "entries_merge_rank",
    "release_mark",
    "segment_windows_quadrature",
    "schedule_process",
    "touching_count",
    "touching_write",
    "sched_history",
    "scan_reduce",
    "scan_add",
    "sort_histogram",
    "sort_scatter",
    "count_plan",
];

/// The step counts and scans its releases and makes the merged sizes in one workgroup
/// (`release_scan_sizes`) while the release list's capacity is below this many records (2¹⁹: at most
/// 256 chunks of 2,048 in the kernel's loop); with more, in `release_count`, a scan and
/// `sched_sizes`, which spread the work over workgroups.
pub const RELEASE_SCAN_SIZES_MAX: u32 = 1 << 19;

/// The capacities of the step's variable-size buffers.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, bytemuck::Pod, bytemuck::Zeroable)]
pub struct SchedCaps {
    pub entries: u32,
    pub grid: u32,
    pub cand: u32,
    pub fresh: u32,
    pub touching: u32,
    /// Segment-pair slots of the released boxes.
    pub release: u32,
    /// Words of `set_lookup` and records of `released`.
    pub lookup_words: u32,
    pub released: u32,
}

impl SchedCaps {
    /// Every capacity `n` (at least 1; tests use tiny ones to exercise the regrowth).
    pub fn all(n: u32) -> SchedCaps {
        let n = n.max(1);
        SchedCaps {
            entries: n,
            grid: n,
            cand: n,
            fresh: n,
            touching: n,
            release: n,
            lookup_words: n,
            released: n,
        }
    }

    /// The capacities after a step with `c`, growing each that overflowed to its count plus a
    /// quarter; `None` when none did. (An overflow upstream may hide the need downstream; the rerun
    /// tells.)
    pub fn grown(&self, c: &SchedCounters) -> Option<SchedCaps> {
        let grow = |cap: u32, x: &crate::layout::Capacity| {
            if x.overflow != 0 {
                x.count.saturating_add(x.count / 4).max(16).max(cap)
            } else {
                cap
            }
        };
        let g = SchedCaps {
            entries: grow(self.entries, &c.entries),
            grid: grow(self.grid, &c.grid),
            cand: grow(self.cand, &c.cand),
            fresh: grow(self.fresh, &c.fresh),
            touching: grow(self.touching, &c.touching),
            release: grow(self.release, &c.release),
            ..*self
        };
        (g != *self).then_some(g)
    }
}

/// Why the GPU step failed.
#[derive(Debug, thiserror::Error)]
pub enum SchedGpuError {
    #[error(transparent)]
    Pipeline(#[from] PipelineError),
    #[error("the scheduler's GPU step: {0}")]
    Gpu(String),
    /// What the CPU step would stop on ([`super::counters_error`]).
    #[error(transparent)]
    Sched(#[from] super::SchedError),
    #[error("the scheduler's GPU step raised error bits {errors:#x} (first bad point {point}, first bad segment {segment})")]
    Flags {
        errors: u32,
        point: u32,
        segment: u32,
    },
}

/// The scheduler's buffers whose size is the scene's, not a capacity's (the largest of each kind),
/// with their bytes for `segments` segments and `points` control points, `quadrature` points a
/// segment and `max_bin` schedule bins: what a device must bind whatever the contacts
/// ([`crate::gpu_step::acl_needs`]; tests/gpu_acl_step.rs checks it against the built buffers).
pub fn fixed_binding_bytes(
    segments: u64,
    points: u64,
    quadrature: u64,
    max_bin: u64,
) -> [(&'static str, u64); 5] {
    use crate::layout::{CellBox, Interval, SegmentMotion};
    use std::mem::size_of;
    [
        ("snaps", points * max_bin * 16),
        (
            "windows",
            segments * (max_bin + 1) * size_of::<Interval>() as u64,
        ),
        ("qpts", segments * quadrature * 16),
        ("cells", segments * size_of::<CellBox>() as u64),
        ("motion", segments * size_of::<SegmentMotion>() as u64),
    ]
}

/// The persistent buffers a step reads from the last one (saved before each step for a rerun).
const PERSISTENT: &[&str] = &[
    "sched_state",
    "prev_cells",
    "prev1",
    "prev2",
    "snaps",
    "motion",
];

/// The scheduler's state and step on the GPU.
pub struct SchedGpu {
    pub caps: SchedCaps,
    nseg: u32,
    npts: u32,
    /// The constants of every step (anchor, parameters); counts and step fields filled per step.
    template: SchedUniform,
    own: Buffers,
    dispatches: Vec<Dispatch>,
    /// The dispatches of the grid and the newcomers (rows 5–7 of the table above), which a step
    /// with no segment entering a cell may leave out ([`SchedGpu::dispatches_with`]).
    newcomer_span: std::ops::Range<usize>,
    /// The listed search that stands for them (`newcomer_list_write`, `newcomer_list_compact`; in
    /// no list but [`SchedGpu::dispatches_with`]'s).
    list_dispatches: Vec<Dispatch>,
    /// The dispatches of the touching list (row 13), which a caller that does not read the list
    /// may leave out ([`SchedGpu::dispatches_with`]).
    touching_span: std::ops::Range<usize>,
    _scans: Vec<GpuScan>,
    _sorts: Vec<GpuSort>,
}

impl SchedGpu {
    /// The driver for the segments and points of `template` (its constants: `num_segments`,
    /// `num_points`, `quadrature`, `radius`, `cell`, `inv_cell`, `omega`, `max_bin`, `switches`,
    /// `exclusion_arc`) with capacities `caps`, its state that of a scheduler before its first step
    /// at positions `pos` (as `Scheduler::detect` sets it up at step 0). `shared` holds `pos`,
    /// `segments`, `params`, `quad_weights`, `quad_arc` and `seg_contact`.
    pub fn new(
        device: &wgpu::Device,
        queue: &wgpu::Queue,
        pipelines: &Pipelines,
        shared: &Buffers,
        template: &SchedUniform,
        caps: SchedCaps,
        pos: &[[f32; 4]],
    ) -> Result<SchedGpu, SchedGpuError> {
        let (nseg, npts) = (template.num_segments, template.num_points);
        let nb = template.max_bin as usize;
        let anchor = anchor_of(pos, template.cell);
        let template = SchedUniform {
            anchor: [anchor[0], anchor[1], anchor[2], 0],
            num_entries: 0,
            num_fresh: 0,
            num_released: 0,
            ..*template
        };
        let mut own = Buffers::default();
        let (ns, np) = (nseg as usize, npts as usize);
        let sz = std::mem::size_of::<SchedUniform>();
        own.zeroed(device, "sched_step", sz, true);
        for (k, phase) in [SIZES_START, SIZES_MERGED].iter().enumerate() {
            let p = SchedPhase {
                phase: *phase,
                ..Default::default()
            };
            own.upload(
                device,
                queue,
                &format!("sched_phase{k}"),
                bytemuck::bytes_of(&p),
                true,
            );
        }
        // Uniforms too: a kernel that reads only the record's constants and lengths binds it as
        // one where a storage binding would be its ninth (`newcomer_keep`: sched_p1).
        for name in ["sched_p0", "sched_p1", "sched_p2"] {
            own.zeroed(device, name, sz, true);
        }
        own.zeroed(device, "sched_state", 16, false);
        own.zeroed(
            device,
            "sched_counters",
            std::mem::size_of::<SchedCounters>(),
            false,
        );
        let cb = std::mem::size_of::<CellBox>();
        let iv = std::mem::size_of::<Interval>();
        own.zeroed(device, "cells", ns * cb, false);
        own.zeroed(device, "prev_cells", ns * cb, false);
        own.zeroed(device, "mv1", ns * iv, false);
        own.zeroed(device, "mv2", ns * iv, false);
        own.zeroed(
            device,
            "motion",
            ns * std::mem::size_of::<SegmentMotion>(),
            false,
        );
        let pos_bytes: &[u8] = bytemuck::cast_slice(&pos[..np]);
        own.upload(device, queue, "prev1", pos_bytes, false);
        own.upload(device, queue, "prev2", pos_bytes, false);
        let mut snaps = Vec::with_capacity(np * nb);
        for _ in 0..nb {
            snaps.extend_from_slice(&pos[..np]);
        }
        own.upload(device, queue, "snaps", bytemuck::cast_slice(&snaps), false);
        own.zeroed(device, "windows", ns * (nb + 1) * iv, false);
        own.zeroed(
            device,
            "qpts",
            ns * template.quadrature as usize * 16,
            false,
        );
        own.zeroed(device, "sched_grid_offsets", (ns + 1) * 4, false);
        own.zeroed(
            device,
            "movers",
            crate::layout::NEWCOMER_LIST_MAX as usize * 4,
            false,
        );
        for name in PERSISTENT {
            let size = own.get(name).expect("uploaded above").size();
            own.zeroed(device, &format!("saved_{name}"), size as usize, false);
        }
        let mut g = SchedGpu {
            caps,
            nseg,
            npts,
            template,
            own,
            dispatches: Vec::new(),
            newcomer_span: 0..0,
            list_dispatches: Vec::new(),
            touching_span: 0..0,
            _scans: Vec::new(),
            _sorts: Vec::new(),
        };
        g.build(device, queue, pipelines, shared, caps, None)?;
        Ok(g)
    }

    /// The `sched_step` record of step `n` with `num_released` releases.
    pub fn step_uniform(&self, n: u64, num_released: u32) -> SchedUniform {
        SchedUniform {
            step: n as u32,
            bins_due: bins_due(n),
            num_released,
            ..self.template
        }
    }

    /// The capacity-dependent buffers (the entry table's and the inputs' contents carried over
    /// from `old`, the previous set, when given), the scans, sorts and every bind group.
    pub(crate) fn build(
        &mut self,
        device: &wgpu::Device,
        queue: &wgpu::Queue,
        pipelines: &Pipelines,
        shared: &Buffers,
        caps: SchedCaps,
        carry: Option<&mut wgpu::CommandEncoder>,
    ) -> Result<(), SchedGpuError> {
        let c = caps;
        let se = std::mem::size_of::<SchedEntry>();
        let kv = std::mem::size_of::<KeyValue>();
        let sizes: [(&str, usize); 19] = [
            ("entries_a", c.entries as usize * se),
            ("entries_b", c.entries as usize * se),
            ("saved_entries_a", c.entries as usize * se),
            ("keep", (c.entries as usize + 1) * 4),
            // entries_keep's group sums, which entries_compact reads (no scan of the flags).
            ("keep_groups", (c.entries as usize + 1).div_ceil(256) * 4),
            // touching_count's group sums, which touching_write reads (no scan of the counts).
            ("touch_groups", (c.entries as usize).div_ceil(256) * 4),
            // sched_grid_write writes the grid's items unsorted into sched_grid_in; the sort
            // leaves them sorted in sched_grid (an odd number of passes, no scratch of its own).
            ("sched_grid_in", c.grid as usize * kv),
            ("sched_grid", c.grid as usize * kv),
            ("newcomer_offsets", (c.grid as usize + 1) * 4),
            // newcomer_count's group sums, which newcomer_write reads (no scan of the counts).
            ("newcomer_groups", (c.grid as usize + 1).div_ceil(256) * 4),
            // newcomer_write writes whichever of the two the candidates' sort in the fewest
            // passes starts from (GpuSort::counted_fewest); they end in sched_cand.
            ("sched_cand_in", c.cand as usize * kv),
            ("sched_cand", c.cand as usize * kv),
            ("fresh_offsets", (c.cand as usize + 1) * 4),
            // newcomer_keep's group sums, which newcomer_compact reads (no scan of the flags).
            ("fresh_groups", (c.cand as usize + 1).div_ceil(256) * 4),
            ("fresh", c.fresh as usize * se),
            ("touching", c.touching as usize * 8),
            ("release_offsets", (c.released as usize + 1) * 4),
            ("set_lookup", c.lookup_words as usize * 4),
            (
                "released",
                c.released as usize * std::mem::size_of::<Release>(),
            ),
        ];
        let old: Vec<(&str, wgpu::Buffer)> = ["entries_a", "set_lookup", "released"]
            .iter()
            .filter_map(|n| self.own.get(n).map(|b| (*n, b.clone())))
            .collect();
        for (name, bytes) in sizes {
            self.own.zeroed(device, name, bytes, false);
        }
        if let Some(enc) = carry {
            for (name, b) in &old {
                let new = self.own.get(name).expect("uploaded above");
                enc.copy_buffer_to_buffer(b, 0, new, 0, b.size().min(new.size()));
            }
        }
        self.caps = caps;
        self.write_capacities(queue);
        self.make_dispatches(device, pipelines, shared)
    }

    /// A bind group of `kernel`: each binding gets the buffer `map` names for it, else this
    /// driver's buffer of its name, else the shared one.
    fn bind(
        &self,
        device: &wgpu::Device,
        pipelines: &Pipelines,
        shared: &Buffers,
        kernel: &'static str,
        map: &[(&str, &str)],
    ) -> Result<wgpu::BindGroup, PipelineError> {
        let k = crate::shaders::kernel(kernel)?;
        let mut overrides: Vec<(&str, &wgpu::Buffer)> = Vec::new();
        for b in k.bindings {
            let own = map
                .iter()
                .find(|(n, _)| *n == b.name)
                .map(|(_, o)| *o)
                .unwrap_or(b.name);
            if let Some(buf) = self.own.get(own) {
                overrides.push((b.name, buf));
            }
        }
        pipelines.bind_group_with(device, kernel, shared, &overrides)
    }

    fn make_dispatches(
        &mut self,
        device: &wgpu::Device,
        pipelines: &Pipelines,
        shared: &Buffers,
    ) -> Result<(), SchedGpuError> {
        let c = self.caps;
        let (ns, np) = (self.nseg, self.npts);
        let b = self.template.quadrature;
        let nb = self.template.max_bin;
        let get = |n: &str| self.own.get(n).expect("made in new/build");
        // Grouped scans: their producers (sched_grid_count, release_count) write
        // the block sums into `<data>_groups`, the scan's partials. (entries_keep writes its
        // own into `keep_groups`, which entries_compact reads: its flags have no scan.)
        let scan = |n: &str, len: u32| GpuScan::grouped(device, pipelines, get(n), len);
        let scan_grid = scan("sched_grid_offsets", ns + 1)?;
        // The newcomer chain's scans, dispatches and sorts follow the live counts of grid items
        // and candidates, `sched_counters.{grid, cand}.count` (+ `add`): their readers stop at the
        // count (the scans' totals sit right after it).
        let count = |field: usize, add: u32| CountSource {
            buffer: get("sched_counters").clone(),
            word: (field + offset_of!(Capacity, count)) as u32 / 4,
            add,
        };
        // newcomer_keep's and newcomer_compact's grid (one thread per candidate, plus one):
        // planned by newcomer_write, whose thread 0 has the candidates' count (no count_plan
        // dispatch).
        let cand_grid = CountedGrid::inline(
            device,
            pipelines,
            c.cand,
            &[crate::layout::GridSpec {
                add: 1,
                threads_per_item: 1,
                workgroup_size: crate::shaders::WG,
                _pad: 0,
            }],
        )?;

        let scan_rel = scan("release_offsets", c.released + 1)?;
        // Planned by sched_grid_write, whose thread 0 has the items' count (no count_plan
        // dispatch).
        let sort_grid = GpuSort::counted_into_inline(
            device,
            pipelines,
            get("sched_grid_in"),
            get("sched_grid"),
            c.grid,
            super::grid::SCHED_GRID_KEY_BITS,
        )?;
        let kb = super::cand_key_bits(ns);
        let (sort_cand, _) = GpuSort::counted_fewest(
            device,
            pipelines,
            get("sched_cand_in"),
            get("sched_cand"),
            c.cand,
            2 * kb,
            &count(offset_of!(SchedCounters, cand), 0),
        )?;
        let cand_written = if crate::sort::fewest_passes_into(2 * kb) {
            "sched_cand_in"
        } else {
            "sched_cand"
        };
        for (name, sc) in [
            ("sched_grid_groups", &scan_grid),
            ("release_groups", &scan_rel),
        ] {
            self.own.insert(name, sc.groups().clone());
        }
        let [(_, plan_spec), (_, plan_out)] = cand_grid.plan_bindings();
        self.own.insert("cand_plan_spec", plan_spec.clone());
        self.own.insert("cand_plan", plan_out.clone());
        let [(_, plan_spec), (_, plan_out)] = sort_grid.plan_bindings().expect("planned inline");
        self.own.insert("grid_plan_spec", plan_spec.clone());
        self.own.insert("grid_plan", plan_out.clone());
        // Kernels binding `sched` as a uniform read only the step's constants (`sched_step`); the
        // others read a table length from the record of their point of the step.
        let st = [("sched", "sched_step")];
        let st_groups = |groups: &'static str| [("sched", "sched_step"), ("scan_groups", groups)];
        let sizes = |k: usize| -> Result<wgpu::BindGroup, PipelineError> {
            let phase = format!("sched_phase{k}");
            let map = [("sched_phase", phase.as_str())];
            self.bind(device, pipelines, shared, "sched_sizes", &map)
        };
        let mut d: Vec<Dispatch> = Vec::new();
        let push = |d: &mut Vec<Dispatch>,
                    name: &'static str,
                    map: &[(&str, &str)],
                    threads: crate::pipelines::Threads|
         -> Result<(), PipelineError> {
            d.push((
                name,
                self.bind(device, pipelines, shared, name, map)?,
                threads,
            ));
            Ok(())
        };
        let add =
            |d: &mut Vec<Dispatch>,
             it: Vec<(&'static str, &wgpu::BindGroup, crate::pipelines::Threads)>| {
                d.extend(it.into_iter().map(|(n, bg, t)| (n, bg.clone(), t)));
            };
        d.push(("sched_sizes", sizes(0)?, 1.into()));
        push(&mut d, "aabb_raster_movement", &st, ns.into())?;
        push(&mut d, "segment_monitor", &st, ns.into())?;
        push(
            &mut d,
            "entries_keep",
            &[
                ("sched", "sched_p0"),
                ("entries", "entries_a"),
                ("scan_groups", "keep_groups"),
            ],
            T::Fixed(c.entries + 1),
        )?;
        push(
            &mut d,
            "entries_compact",
            &[
                ("sched", "sched_p0"),
                ("entries", "entries_a"),
                ("scan_groups", "keep_groups"),
                ("entries_out", "entries_b"),
            ],
            T::Fixed(c.entries + 1),
        )?;
        let newcomers_from = d.len();
        push(
            &mut d,
            "sched_grid_count",
            &st_groups("sched_grid_groups"),
            T::Fixed(ns + 1),
        )?;
        add(&mut d, scan_grid.dispatches().collect());
        push(
            &mut d,
            "sched_grid_write",
            &[
                ("sched", "sched_step"),
                ("sched_grid", "sched_grid_in"),
                ("plan_spec", "grid_plan_spec"),
                ("plan_out", "grid_plan"),
            ],
            c.grid.into(),
        )?;
        add(&mut d, sort_grid.dispatches());
        push(
            &mut d,
            "newcomer_count",
            &st_groups("newcomer_groups"),
            T::Fixed(c.grid + 1),
        )?;
        push(
            &mut d,
            "newcomer_write",
            &[
                ("sched", "sched_step"),
                ("scan_groups", "newcomer_groups"),
                ("sched_cand", cand_written),
                ("plan_spec", "cand_plan_spec"),
                ("plan_out", "cand_plan"),
            ],
            c.grid.into(),
        )?;
        // The listed search's two dispatches, which stand for all of rows 5–7: its candidates go
        // where the grid's sort reads them, and `newcomer_list_compact` sorts them itself.
        let list_dispatches = vec![
            (
                "newcomer_list_write",
                self.bind(
                    device,
                    pipelines,
                    shared,
                    "newcomer_list_write",
                    &[("sched", "sched_step"), ("sched_cand", cand_written)],
                )?,
                ns.into(),
            ),
            (
                "newcomer_list_compact",
                self.bind(
                    device,
                    pipelines,
                    shared,
                    "newcomer_list_compact",
                    &[
                        ("sched", "sched_p1"),
                        ("entries", "entries_b"),
                        ("sched_cand", cand_written),
                    ],
                )?,
                crate::shaders::WG.into(),
            ),
        ];
        add(&mut d, sort_cand.dispatches());
        // newcomer_compact places the kept candidates from newcomer_keep's group sums and a
        // workgroup scan (no scan dispatch between).
        push(
            &mut d,
            "newcomer_keep",
            &[
                ("sched", "sched_p1"),
                ("entries", "entries_b"),
                ("scan_groups", "fresh_groups"),
            ],
            cand_grid.threads(),
        )?;
        push(
            &mut d,
            "newcomer_compact",
            &[("sched", "sched_step"), ("scan_groups", "fresh_groups")],
            cand_grid.threads(),
        )?;
        let newcomer_span = newcomers_from..d.len();
        if c.released < RELEASE_SCAN_SIZES_MAX {
            // The release list's count and scan and the merged sizes in one workgroup.
            push(
                &mut d,
                "release_scan_sizes",
                &[],
                T::Fixed(crate::shaders::WG),
            )?;
        } else {
            push(
                &mut d,
                "release_count",
                &st_groups("release_groups"),
                T::Fixed(c.released + 1),
            )?;
            add(&mut d, scan_rel.dispatches().collect());
            d.push(("sched_sizes", sizes(1)?, 1.into()));
        }
        push(
            &mut d,
            "entries_merge_rank",
            &[
                ("sched", "sched_p1"),
                ("entries", "entries_b"),
                ("entries_out", "entries_a"),
            ],
            c.entries.into(),
        )?;
        push(
            &mut d,
            "release_mark",
            &[("sched", "sched_p2"), ("entries", "entries_a")],
            c.release.into(),
        )?;
        // The quadrature points, first read by schedule_process, in the windows' dispatch.
        push(
            &mut d,
            "segment_windows_quadrature",
            &st,
            T::Fixed(ns * (nb + 1) + ns * b),
        )?;
        push(
            &mut d,
            "schedule_process",
            &[("sched", "sched_p2"), ("entries", "entries_a")],
            c.entries.into(),
        )?;
        let touching_from = d.len();
        // touching_write places each entry's pairs from touching_count's group sums and a
        // workgroup scan (no scan dispatch between).
        let touching = [
            ("sched", "sched_p2"),
            ("entries", "entries_a"),
            ("scan_groups", "touch_groups"),
        ];
        push(&mut d, "touching_count", &touching, c.entries.into())?;
        push(&mut d, "touching_write", &touching, c.entries.into())?;
        let touching_span = touching_from..d.len();
        push(&mut d, "sched_history", &st, np.max(ns).into())?;
        self.dispatches = d;
        self.newcomer_span = newcomer_span;
        self.list_dispatches = list_dispatches;
        self.touching_span = touching_span;
        self._scans = vec![scan_grid, scan_rel];
        self._sorts = vec![sort_grid, sort_cand];
        Ok(())
    }

    /// The step's dispatches in order: kernel, bind group, threads.
    pub fn dispatches(&self) -> &[Dispatch] {
        &self.dispatches
    }

    /// The step's dispatches, with the newcomer search at level `newcomers`: 2, the grid and the
    /// newcomers (rows 5–7), as [`SchedGpu::dispatches`]; 1, the listed search in their place
    /// (`newcomer_list_write`, `newcomer_list_compact`), which makes the same new entries on a step
    /// on which at most [`crate::layout::NEWCOMER_LIST_MAX`] segments entered a cell and that
    /// search finds at most [`crate::layout::NEWCOMER_LIST_CANDIDATES`] candidates (otherwise it
    /// makes none: the step must run at 2); 0, none of rows 5–7. Left out, they change nothing on
    /// a step where no segment entered a cell (`sched_counters.entered` = 0): no grid item is then
    /// a newcomer, so there is no candidate and no new entry (`sched_sizes` reads the new entries'
    /// count from `sched_counters.fresh`, reset at the step's start), and only `newcomer_count`
    /// reads the grid, whose stale contents the next step that needs it rebuilds. A step with
    /// `entered` > 0 must run at 1 or more.
    ///
    /// Without the touching list (row 13) when `touching` is false: `schedule_process` has already
    /// counted the step's touching pairs into `sched_counters.touching.count`, and only coalescing
    /// reads the list, so a caller that leaves coalescing out (the ACL step's `coalesce` budget,
    /// which reruns a step whose count is not 0) needs neither the list nor its scan. Its capacity
    /// is then not checked (no overflow is raised): such a step has no pair, or reruns.
    pub fn dispatches_with(
        &self,
        newcomers: u32,
        touching: bool,
    ) -> impl Iterator<Item = &Dispatch> {
        self.dispatches_from(0, newcomers, touching)
    }

    /// [`SchedGpu::dispatches_with`] from the step's dispatch `first` on.
    fn dispatches_from(
        &self,
        first: usize,
        newcomers: u32,
        touching: bool,
    ) -> impl Iterator<Item = &Dispatch> {
        let all = self.newcomer_span.clone();
        let touch = self.touching_span.clone();
        let listed: &[Dispatch] = if newcomers == 1 {
            &self.list_dispatches
        } else {
            &[]
        };
        self.dispatches
            .iter()
            .enumerate()
            .skip(first)
            .flat_map(move |(k, d)| {
                let keep =
                    (newcomers >= 2 || !all.contains(&k)) && (touching || !touch.contains(&k));
                let list = if k == all.start { listed } else { &[] };
                list.iter().chain(keep.then_some(d))
            })
    }

    /// [`SchedGpu::dispatches_with`] without the step's first dispatch, `sched_sizes`' start: for a
    /// caller that makes it in a dispatch of its own (the ACL step's `acl_step_start`).
    pub fn dispatches_started(
        &self,
        newcomers: u32,
        touching: bool,
    ) -> impl Iterator<Item = &Dispatch> {
        debug_assert_eq!(self.dispatches.first().map(|d| d.0), Some("sched_sizes"));
        self.dispatches_from(1, newcomers, touching)
    }

    /// This driver's buffer `name` (`entries_a`, `touching`, `sched_counters`, `sched_state`, …).
    pub fn buffer(&self, name: &str) -> Option<&wgpu::Buffer> {
        self.own.get(name)
    }

    /// The buffers whose contents a step reads from the last one: saved before each batch for a
    /// rerun ([`SchedGpu::copy_state`]), and in a GPU run's checkpoint.
    pub fn persistent_names() -> impl Iterator<Item = &'static str> {
        PERSISTENT.iter().copied().chain(["entries_a"])
    }

    /// The grid's anchor cell, fixed when the driver was made (from the positions it was made
    /// with, as `Scheduler::detect` fixes it at its first step).
    pub fn anchor(&self) -> [i32; 4] {
        self.template.anchor
    }

    /// Sets the anchor cell (a run continued from a checkpoint keeps the one it started with:
    /// the cells, and so the entries' order, are measured from it).
    pub fn set_anchor(&mut self, anchor: [i32; 4]) {
        self.template.anchor = anchor;
    }

    /// Writes the capacities into the counters block (when they change; `sched_sizes` keeps them).
    fn write_capacities(&self, queue: &wgpu::Queue) {
        let c = self.caps;
        let mut counters = SchedCounters::default();
        counters.touching.capacity = c.touching;
        counters.grid.capacity = c.grid;
        counters.cand.capacity = c.cand;
        counters.fresh.capacity = c.fresh;
        counters.entries.capacity = c.entries;
        counters.release.capacity = c.release;
        queue.write_buffer(
            self.own.get("sched_counters").expect("made in new"),
            0,
            bytemuck::bytes_of(&counters),
        );
    }

    /// Writes this step's contact-set lookup and releases, growing their buffers when they do not
    /// fit (which rebuilds the bind groups).
    pub fn write_inputs(
        &mut self,
        device: &wgpu::Device,
        queue: &wgpu::Queue,
        pipelines: &Pipelines,
        shared: &Buffers,
        set_lookup: &[u32],
        released: &[Release],
    ) -> Result<(), SchedGpuError> {
        if set_lookup.len() > self.caps.lookup_words as usize
            || released.len() > self.caps.released as usize
        {
            let caps = SchedCaps {
                lookup_words: self
                    .caps
                    .lookup_words
                    .max(set_lookup.len() as u32 * 5 / 4 + 16),
                released: self.caps.released.max(released.len() as u32 * 5 / 4 + 16),
                ..self.caps
            };
            let mut enc = device.create_command_encoder(&Default::default());
            self.build(device, queue, pipelines, shared, caps, Some(&mut enc))?;
            queue.submit([enc.finish()]);
        }
        let get = |n: &str| self.own.get(n).expect("made in build");
        queue.write_buffer(get("set_lookup"), 0, bytemuck::cast_slice(set_lookup));
        if !released.is_empty() {
            queue.write_buffer(get("released"), 0, bytemuck::cast_slice(released));
        }
        Ok(())
    }

    /// Copies the persistent buffers to their saved copies (`back = false`) or back.
    pub(crate) fn copy_state(&self, enc: &mut wgpu::CommandEncoder, back: bool) {
        for name in Self::persistent_names() {
            let live = self.own.get(name).expect("made in new/build");
            let saved = self
                .own
                .get(&format!("saved_{name}"))
                .expect("made in new/build");
            let (src, dst) = if back { (saved, live) } else { (live, saved) };
            enc.copy_buffer_to_buffer(src, 0, dst, 0, live.size());
        }
    }

    /// Records the step's dispatches into `pass`.
    pub fn record(
        &self,
        pipelines: &Pipelines,
        pass: &mut wgpu::ComputePass<'_>,
    ) -> Result<(), PipelineError> {
        pipelines.dispatch_all(pass, &self.dispatches)
    }

    /// One scheduler step with `sched_step` ([`Self::step_uniform`]) on the positions in the shared
    /// `pos` and the inputs of [`Self::write_inputs`]: runs the dispatches, reads the counters back,
    /// and on an overflow restores the state, grows and reruns. Returns the counters.
    pub fn step(
        &mut self,
        device: &wgpu::Device,
        queue: &wgpu::Queue,
        pipelines: &Pipelines,
        shared: &Buffers,
        sched_step: &SchedUniform,
    ) -> Result<SchedCounters, SchedGpuError> {
        queue.write_buffer(
            self.own.get("sched_step").expect("made in new"),
            0,
            bytemuck::bytes_of(sched_step),
        );
        loop {
            let counters = self.run_once(device, queue, pipelines)?;
            let Some(caps) = self.caps.grown(&counters) else {
                if let Some(e) = super::counters_error(&counters) {
                    return Err(SchedGpuError::Sched(e));
                }
                if counters.errors != 0 {
                    return Err(SchedGpuError::Flags {
                        errors: counters.errors,
                        point: counters.first_bad_point,
                        segment: counters.first_bad_segment,
                    });
                }
                return Ok(counters);
            };
            let mut enc = device.create_command_encoder(&Default::default());
            self.copy_state(&mut enc, true);
            self.build(device, queue, pipelines, shared, caps, Some(&mut enc))?;
            queue.submit([enc.finish()]);
        }
    }

    fn run_once(
        &self,
        device: &wgpu::Device,
        queue: &wgpu::Queue,
        pipelines: &Pipelines,
    ) -> Result<SchedCounters, SchedGpuError> {
        let size = std::mem::size_of::<SchedCounters>() as u64;
        let staging = device.create_buffer(&wgpu::BufferDescriptor {
            label: Some("sched_counters readback"),
            size,
            usage: wgpu::BufferUsages::COPY_DST | wgpu::BufferUsages::MAP_READ,
            mapped_at_creation: false,
        });
        let scope = device.push_error_scope(wgpu::ErrorFilter::Validation);
        let mut enc = device.create_command_encoder(&wgpu::CommandEncoderDescriptor {
            label: Some("sched step"),
        });
        self.copy_state(&mut enc, false);
        {
            let mut pass = enc.begin_compute_pass(&wgpu::ComputePassDescriptor {
                label: Some("sched step"),
                timestamp_writes: None,
            });
            self.record(pipelines, &mut pass)?;
        }
        enc.copy_buffer_to_buffer(
            self.own.get("sched_counters").expect("made in new"),
            0,
            &staging,
            0,
            size,
        );
        queue.submit([enc.finish()]);
        if let Some(e) = pollster::block_on(scope.pop()) {
            return Err(SchedGpuError::Gpu(e.to_string()));
        }
        let bytes = read_mapped(device, &staging, size as usize).map_err(SchedGpuError::Gpu)?;
        Ok(bytemuck::pod_read_unaligned(&bytes))
    }

    /// Reads buffer `name` back (`n` records of `T`).
    pub fn read<T: bytemuck::Pod>(
        &self,
        device: &wgpu::Device,
        queue: &wgpu::Queue,
        name: &str,
        n: usize,
    ) -> Result<Vec<T>, SchedGpuError> {
        let bytes = (n * std::mem::size_of::<T>()) as u64;
        if bytes == 0 {
            return Ok(Vec::new());
        }
        let v = self.own.read(device, queue, name, bytes)?;
        Ok(bytemuck::cast_slice(&v).to_vec())
    }

    /// The entry table after the last step.
    pub fn entries(
        &self,
        device: &wgpu::Device,
        queue: &wgpu::Queue,
    ) -> Result<Vec<SchedEntry>, SchedGpuError> {
        let n = self.read::<u32>(device, queue, "sched_state", 1)?[0] as usize;
        self.read(device, queue, "entries_a", n)
    }

    /// The touching pairs of the last step (`count` from its counters).
    pub fn touching(
        &self,
        device: &wgpu::Device,
        queue: &wgpu::Queue,
        count: u32,
    ) -> Result<Vec<[u32; 2]>, SchedGpuError> {
        self.read(
            device,
            queue,
            "touching",
            count.min(self.caps.touching) as usize,
        )
    }
}
