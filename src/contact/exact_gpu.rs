//! The exact contact path on the GPU: the buffers and the ordered dispatch list of the kernels whose
//! CPU twins [`super::ExactContact`] runs (see [`super::grid`] and `exact.rs`).
//!
//! [`ExactGpu::new`] adds the path's own buffers to a named buffer set that already holds the step's
//! `params`, `counters`, `segments`, `pos` and `force`, and makes every bind group; the dispatches
//! ([`ExactGpu::dispatches`]) are, for one step:
//!
//! | # | kernel | threads |
//! |---|--------|---------|
//! | 1 | `aabb_raster` | segments + 1 |
//! | 2 | scan of `grid_offsets` (`scan_reduce`…, `scan_add`…) | segments + 1 |
//! | 3 | `grid_write` (into `grid_entries_in`) | entry capacity |
//! | 4 | radix sort of `grid_entries_in` into `grid_entries` by the key's `lo` word (24 bits), 3 passes of (`sort_histogram`, scan of `sort_hist`, `sort_scatter`) | entry count (`count_plan`) |
//! | 5 | `candidate_count` | entry capacity + 1 |
//! | 6 | scan of `cand_offsets` | entry capacity + 1 |
//! | 7 | `candidate_write` | entry capacity |
//! | 8 | `quadrature_points` | segments · b |
//! | 9 | `exact_contact_forces` | candidate capacity + 1 |
//! | 10 | scan of `touch_offsets` | candidate capacity + 1 |
//! | 11 | `contact_slots` (into `gather_slots_in` when the sort below starts there) | 8 · touching-record capacity |
//! | 12 | radix sort of the slots in use on `key_bits(num_points)` bits into `gather_slots`, in the fewest passes ([`GpuSort::counted_fewest`]: from `gather_slots_in` when `⌈bits / 8⌉` is odd, else in place) | 8 · touching records (`count_plan`) |
//! | 13 | `contact_gather` (over the slots in use, `counters.gather_slots`) | control points |
//!
//! Scans and sorts get their level or pass through small per-dispatch uniforms (`scan_pass`,
//! `sort_pass`) and their data through bind-group overrides; the capacities are fixed when the
//! path is built and written into `counters` by the host each step ([`ExactGpu::set_capacities`]).
//! When a step reports an overflow (`counters.grid_entries` / `candidate_pairs` /
//! `touching_records`: count above
//! capacity, flag set), its forces are incomplete: the host builds the path again with
//! [`ExactGpu::grown_capacities`] and reruns the step.
//!
//! The `params` uniform must carry the contact fields (`radius`, `k_contact`, `quadrature`,
//! `exclusion_arc`, `grid_cell`), the counts (`num_segments`, `num_points`) and the grid frame
//! ([`super::grid::set_grid_frame`]; the CPU path's origin is [`super::ExactContact::grid_origin`]).

use super::exact::key_bits;
use crate::layout::Capacity;
use crate::layout::{ContactRecord, Counters, KeyValue, Params, SegmentBox, SegmentContact};
use crate::pipelines::{Buffers, PipelineError, Pipelines};
use crate::scan::{CountSource, GpuScan};
use crate::sort::GpuSort;
use std::mem::offset_of;

/// The kernels of the path (besides the scan and sort blocks).
pub const KERNELS: &[&str] = &[
    "aabb_raster",
    "grid_write",
    "candidate_count",
    "candidate_write",
    "quadrature_points",
    "exact_contact_forces",
    "contact_slots",
    "contact_gather",
    "scan_reduce",
    "scan_add",
    "sort_histogram",
    "sort_scatter",
    "count_plan",
];

/// The static inputs of the path: per-topology tables the host computes once.
pub struct ExactTables<'a> {
    pub params: &'a Params,
    /// `quad_weights`: the b basis weight vectors.
    pub quad_weights: &'a [[f32; 4]],
    /// `quad_arc`: every quadrature point's arc position along its yarn.
    pub quad_arc: &'a [f32],
    /// `seg_contact`: per segment weight and loop length.
    pub seg_contact: &'a [SegmentContact],
}

/// The exact contact path's buffers and dispatches for fixed capacities.
pub struct ExactGpu {
    pub entry_capacity: u32,
    pub candidate_capacity: u32,
    /// Touching candidates the gather table holds (8 slots each).
    pub record_capacity: u32,
    dispatches: Vec<Dispatch>,
    // Kept alive with the bind groups that use their buffers.
    _scans: Vec<GpuScan>,
    _sorts: Vec<GpuSort>,
}

pub use crate::pipelines::Dispatch;

fn owned<'a>(
    it: impl IntoIterator<Item = (&'static str, &'a wgpu::BindGroup, crate::pipelines::Threads)>,
) -> Vec<Dispatch> {
    it.into_iter()
        .map(|(n, bg, t)| (n, bg.clone(), t))
        .collect()
}

/// The first capacities (grid entries, candidate pairs, touching records) from the counts of one
/// detection on the CPU twin, with a quarter more room: the touching records start at the
/// candidate count, several times what touches.
pub fn first_capacities(c: &Counters) -> (u32, u32, u32) {
    first_room(first_counts(c))
}

/// A quarter more than each of `counts` (at least 64).
fn first_room(counts: (u32, u32, u32)) -> (u32, u32, u32) {
    let room = |n: u32| n.saturating_add(n / 4).max(64);
    (room(counts.0), room(counts.1), room(counts.2))
}

/// [`first_capacities`] from a detection's [`first_counts`] on a device that binds `limit` bytes:
/// each whose buffer would pass the limit only as far as fits ([`grown_within`] from the counts
/// themselves); `Err` with the size and its bytes when the entries' or the candidates' count does
/// not fit. The touching records' first capacity is an estimate (the candidates' count, several
/// times what touches), so it is only lowered: the steps grow it to what they count.
pub fn first_capacities_within(
    counts: (u32, u32, u32),
    limit: u64,
) -> Result<(u32, u32, u32), (&'static str, u64)> {
    // As a growth from capacities one short of the counts (each of which overflowed them by one):
    // an error exactly when a count does not fit; from none for the records' estimate.
    let short = (counts.0.saturating_sub(1), counts.1.saturating_sub(1), 0);
    grown_within(short, first_room(counts), limit)
}

/// A step's counts of the path's three sizes (grid entries, candidate pairs, touching records).
pub fn step_counts(c: &Counters) -> (u32, u32, u32) {
    (
        c.grid_entries.count,
        c.candidate_pairs.count,
        c.touching_records.count,
    )
}

/// The counts [`first_capacities`] gives room for (entries, candidates, records): the records'
/// are the candidates'.
pub fn first_counts(c: &Counters) -> (u32, u32, u32) {
    (
        c.grid_entries.count,
        c.candidate_pairs.count,
        c.candidate_pairs.count,
    )
}

/// Each of the path's sizes with the bytes of the largest buffer it sizes (one storage binding
/// each), as [`ExactGpu::new`] makes them for `num_segments` segments, `quad_points` quadrature
/// points and the capacities `caps` (entries, candidates, records). A device binds at most
/// `max_storage_buffer_binding_size` bytes (wgpu's default, and lavapipe's: 128 MiB); the
/// candidates' records (144 bytes a pair) are the first to pass it. (tests/gpu_step.rs checks the
/// table against the buffers a build makes.)
pub fn binding_bytes(
    num_segments: u32,
    quad_points: u32,
    caps: (u32, u32, u32),
) -> [(&'static str, u64); 5] {
    let b = |n: u32, unit: usize| n as u64 * unit as u64;
    let (ec, cc, tc) = caps;
    [
        // (grid_offsets: one word a segment, and one more.)
        (
            "exact.segments",
            b(num_segments, size_of::<SegmentBox>()).max((num_segments as u64 + 1) * 4),
        ),
        ("exact.quadrature", b(quad_points, 16)),
        // (cand_offsets: one word an entry, and one more; the sort's histogram is smaller.)
        (
            "exact.entries",
            b(ec, size_of::<KeyValue>()).max((ec as u64 + 1) * 4),
        ),
        // (candidates: 8 bytes a pair; touch_offsets: a word a pair, and one more.)
        ("exact.candidates", b(cc, size_of::<ContactRecord>())),
        // Eight gather slots a record.
        ("exact.records", b(tc, 8 * size_of::<KeyValue>())),
    ]
}

/// The bytes [`binding_bytes`] gives size `name` (entries, candidates or records) for `caps`.
pub fn row_bytes(name: &str, caps: (u32, u32, u32)) -> Option<u64> {
    binding_bytes(0, 0, caps)
        .into_iter()
        .find(|r| r.0 == name)
        .map(|r| r.1)
}

/// The first of [`binding_bytes`]' sizes whose buffer passes `limit` bytes, with those bytes.
pub fn over_binding(
    limit: u64,
    num_segments: u32,
    quad_points: u32,
    caps: (u32, u32, u32),
) -> Option<(&'static str, u64)> {
    binding_bytes(num_segments, quad_points, caps)
        .into_iter()
        .find(|&(_, b)| b > limit)
}

/// The capacities (entries, candidates, records) a growth from `now` to `grown` gets on a device
/// that binds `limit` bytes: each whose buffer would pass the limit grows only as far as fits
/// ([`crate::gpu::binding_records`]), never below `now`'s. Fails with the size and the bytes it
/// asked for when one that grew cannot grow at all (its count is past the limit). Why: the
/// quarter a growth adds is room against the next steps' rise, not something the step needs
/// ([`crate::acl::gpu::AclCaps::grown_within`] does the same for ACL).
pub fn grown_within(
    now: (u32, u32, u32),
    grown: (u32, u32, u32),
    limit: u64,
) -> Result<(u32, u32, u32), (&'static str, u64)> {
    let rows = binding_bytes(0, 0, (1, 1, 1));
    let (now, mut out) = ([now.0, now.1, now.2], [grown.0, grown.1, grown.2]);
    for (k, cap) in out.iter_mut().enumerate() {
        let (name, unit) = rows[2 + k];
        if *cap as u64 * unit <= limit {
            continue;
        }
        let most = crate::gpu::binding_records(unit, limit).max(now[k]);
        if *cap > now[k] && most <= now[k] {
            return Err((name, *cap as u64 * unit));
        }
        *cap = most;
    }
    Ok((out[0], out[1], out[2]))
}

impl ExactGpu {
    /// Adds the path's buffers to `buffers` (which holds `params`, `counters`, `segments`, `pos` and
    /// `force`) and builds every bind group, for `entry_capacity` grid entries,
    /// `candidate_capacity` candidate pairs and `record_capacity` touching candidates.
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        device: &wgpu::Device,
        queue: &wgpu::Queue,
        pipelines: &Pipelines,
        buffers: &mut Buffers,
        tables: &ExactTables<'_>,
        entry_capacity: u32,
        candidate_capacity: u32,
        record_capacity: u32,
    ) -> Result<ExactGpu, PipelineError> {
        let p = tables.params;
        let ns = p.num_segments as usize;
        let s = ns * p.quadrature as usize;
        let (ec, cc, tc) = (
            entry_capacity as usize,
            candidate_capacity as usize,
            record_capacity as usize,
        );
        let mut zeroed = |name: &str, bytes: usize| {
            buffers.zeroed(device, name, bytes, false);
        };
        zeroed("seg_box", ns * std::mem::size_of::<SegmentBox>());
        zeroed("grid_offsets", (ns + 1) * 4);
        // grid_write writes into grid_entries_in; the sort leaves the live entries sorted in
        // grid_entries (3 passes into another buffer; the stages after it stop at the count).
        zeroed("grid_entries_in", ec * std::mem::size_of::<KeyValue>());
        zeroed("grid_entries", ec * std::mem::size_of::<KeyValue>());
        zeroed("cand_offsets", (ec + 1) * 4);
        zeroed("candidates", cc * 8);
        zeroed("qpts", s * 16);
        zeroed("contact_records", cc * std::mem::size_of::<ContactRecord>());
        zeroed("touch_offsets", (cc + 1) * 4);
        // contact_slots writes gather_slots_in or gather_slots, whichever the sort of the slots
        // in the fewest passes starts from (GpuSort::counted_fewest); it ends in gather_slots.
        for name in ["gather_slots_in", "gather_slots"] {
            zeroed(name, 8 * tc * std::mem::size_of::<KeyValue>());
        }
        // The tables the host computed (quadrature weights and arcs, per-segment contact data).
        buffers.upload(
            device,
            queue,
            "quad_weights",
            bytemuck::cast_slice(tables.quad_weights),
            false,
        );
        buffers.upload(
            device,
            queue,
            "quad_arc",
            bytemuck::cast_slice(tables.quad_arc),
            false,
        );
        buffers.upload(
            device,
            queue,
            "seg_contact",
            bytemuck::cast_slice(tables.seg_contact),
            false,
        );
        let get = |n: &str| buffers.get(n).expect("uploaded above");
        // Grouped scans: aabb_raster and candidate_count write the block sums into the scan's
        // partials (their `scan_groups`).
        let scan_seg = GpuScan::grouped(device, pipelines, get("grid_offsets"), ns as u32 + 1)?;
        // Sized by the live entry count.
        let entries_count = CountSource {
            buffer: get("counters").clone(),
            word: (offset_of!(Counters, grid_entries) + offset_of!(Capacity, count)) as u32 / 4,
            add: 0,
        };
        let sort_entries = GpuSort::counted_into(
            device,
            pipelines,
            get("grid_entries_in"),
            get("grid_entries"),
            entry_capacity,
            super::grid::GRID_KEY_BITS,
            &entries_count,
        )?;
        let scan_cand =
            GpuScan::grouped(device, pipelines, get("cand_offsets"), entry_capacity + 1)?;
        let scan_touch = GpuScan::new(
            device,
            pipelines,
            get("touch_offsets"),
            candidate_capacity + 1,
        )?;
        // Sized by the slots in use (contact_slots fills the rest with the sentinel key): the
        // record capacity starts at the candidate count, several times the touching records.
        let slots_count = CountSource {
            buffer: get("counters").clone(),
            word: offset_of!(Counters, gather_slots) as u32 / 4,
            add: 0,
        };
        let (sort_slots, slots_written) = GpuSort::counted_fewest(
            device,
            pipelines,
            get("gather_slots_in"),
            get("gather_slots"),
            8 * record_capacity,
            key_bits(p.num_points),
            &slots_count,
        )?;
        let own = |name: &'static str, threads: u32| -> Result<Dispatch, PipelineError> {
            Ok((
                name,
                pipelines.bind_group(device, name, buffers)?,
                threads.into(),
            ))
        };
        let mut d: Vec<Dispatch> = Vec::new();
        d.push(scan_seg.producer(device, pipelines, "aabb_raster", buffers, ns as u32 + 1)?);
        d.extend(owned(scan_seg.dispatches()));
        d.push((
            "grid_write",
            pipelines.bind_group_with(
                device,
                "grid_write",
                buffers,
                &[("grid_entries", get("grid_entries_in"))],
            )?,
            entry_capacity.into(),
        ));
        d.extend(owned(sort_entries.dispatches()));
        d.push(scan_cand.producer(
            device,
            pipelines,
            "candidate_count",
            buffers,
            entry_capacity + 1,
        )?);
        d.extend(owned(scan_cand.dispatches()));
        d.push(own("candidate_write", entry_capacity)?);
        d.push(own("quadrature_points", s as u32)?);
        d.push(own("exact_contact_forces", candidate_capacity + 1)?);
        d.extend(owned(scan_touch.dispatches()));
        d.push((
            "contact_slots",
            pipelines.bind_group_with(
                device,
                "contact_slots",
                buffers,
                &[("gather_slots", &slots_written)],
            )?,
            (8 * record_capacity).into(),
        ));
        d.extend(owned(sort_slots.dispatches()));
        d.push(own("contact_gather", p.num_points)?);
        Ok(ExactGpu {
            entry_capacity,
            candidate_capacity,
            record_capacity,
            dispatches: d,
            _scans: vec![scan_seg, scan_cand, scan_touch],
            _sorts: vec![sort_entries, sort_slots],
        })
    }

    /// The step's dispatches in order: kernel, bind group, threads.
    pub fn dispatches(&self) -> &[Dispatch] {
        &self.dispatches
    }

    /// Records every dispatch into `pass`.
    pub fn record(
        &self,
        pipelines: &Pipelines,
        pass: &mut wgpu::ComputePass<'_>,
    ) -> Result<(), PipelineError> {
        pipelines.dispatch_all(pass, &self.dispatches)
    }

    /// Writes the path's capacities into a freshly zeroed `counters` block.
    pub fn set_capacities(&self, counters: &mut Counters) {
        counters.grid_entries.capacity = self.entry_capacity;
        counters.candidate_pairs.capacity = self.candidate_capacity;
        counters.touching_records.capacity = self.record_capacity;
    }

    /// After a step: the capacities `(entries, candidates, touching records)` to rebuild with when
    /// one overflowed (the count it needed plus a quarter), else `None`. An overflow upstream hides
    /// the counts downstream of it, so those are kept until the rerun tells.
    pub fn grown_capacities(&self, counters: &Counters) -> Option<(u32, u32, u32)> {
        let grow = |c: u32| c.saturating_add(c / 4).max(16);
        let (ge, gc, gt) = (
            &counters.grid_entries,
            &counters.candidate_pairs,
            &counters.touching_records,
        );
        let caps = (
            self.entry_capacity,
            self.candidate_capacity,
            self.record_capacity,
        );
        if ge.overflow != 0 {
            return Some((grow(ge.count), caps.1, caps.2));
        }
        if gc.overflow != 0 {
            return Some((caps.0, grow(gc.count), caps.2));
        }
        if gt.overflow != 0 {
            return Some((caps.0, caps.1, grow(gt.count)));
        }
        None
    }
}
