//! The contact sets' lookup (`set_lookup`, layout in [`super::lookup`]) built on the GPU from the set
//! table: the buffers and the ordered dispatch list of the kernels whose CPU twins
//! [`super::lookup`] holds, for a caller to append to its own list (the ACL step on the GPU).
//!
//! [`LookupGpu::new`] expects in the named buffer set `sets` (the set table, [`LookupCaps::sets`]
//! slots, the live sets at its head) and `acl_sizes` ([`AclSizes`]: it reads
//! `lookup.capacity`, which [`LookupGpu::set_capacities`] fills, and writes `lookup.count`,
//! `lookup.overflow` and the `ACL_SIZES_LOOKUP_*` bits of `errors`). It adds the `acl_lookup`
//! uniform ([`LookupUniform`]; the set count at byte offset 0 is the caller's to write each step,
//! e.g. copied from `acl_sizes.num_sets` between passes: [`LookupGpu::write_num_sets`] from the
//! host), its scratch `lookup_counts` and `lookup_offsets` (segments + 1 words each) and
//! `lookup_items` (as many words as the output), and the output `set_lookup`
//! ([`LookupCaps::words`] words). The dispatches:
//!
//! | # | kernel | threads |
//! |---|--------|---------|
//! | 1 | `set_lookup_clear` (of the counts) | segments + 1 |
//! | 2 | `set_lookup_count` (into the counts) | set slots |
//! | 3 | scan: `scan_into`, `lookup_counts` into `lookup_offsets`, one dispatch (up to [`crate::scan::SCAN_INTO_MAX`] − 1 segments: rows 1–2 then bind `lookup_counts` as their `lookup_offsets`); or `lookup_offsets` in place | segments + 1 |
//! | 4 | `set_lookup_write` | set slots |
//! | 5 | `set_lookup_sort` | max(segments + 1, set slots, words / 2) |
//!
//! When `acl_sizes.lookup.overflow` is set after a run, `set_lookup` holds the lookup of no sets
//! (`[0, 0, 0]`) and nothing past its capacity was written: [`LookupGpu::grown`] gives the
//! capacities to rebuild with, and the run is repeated from the same table.

use super::lookup::lookup_words;
use crate::layout::{AclSizes, LookupUniform};
use crate::pipelines::{Buffers, Dispatch, PipelineError, Pipelines};
use crate::scan::GpuScan;

/// The kernels of the chain (with the scan's).
pub const KERNELS: &[&str] = &[
    "set_lookup_clear",
    "set_lookup_count",
    "set_lookup_write",
    "set_lookup_sort",
    "scan_reduce",
    "scan_add",
    "scan_into",
];

/// The sizes a [`LookupGpu`] is built for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LookupCaps {
    /// Slots of the `sets` buffer (the threads of the per-set stages).
    pub sets: u32,
    /// Segments of the scene (`nseg`; the uniform's `num_segments`).
    pub segments: u32,
    /// Words of `set_lookup` (and of the scratch `lookup_items`).
    pub words: u32,
}

impl LookupCaps {
    /// Room for `sets` sets listing `items` segment pairs in all, over `segments` segments.
    pub fn for_items(sets: u32, segments: u32, items: u32) -> LookupCaps {
        LookupCaps {
            sets,
            segments,
            words: lookup_words(segments, items, sets),
        }
    }
}

/// The chain's buffers and dispatches for fixed sizes.
pub struct LookupGpu {
    pub caps: LookupCaps,
    dispatches: Vec<Dispatch>,
    /// The buffer `set_lookup_clear` and `set_lookup_count` bind as `lookup_offsets`:
    /// `lookup_counts` when the scan writes its result into `lookup_offsets`
    /// ([`GpuScan::into`]), else `lookup_offsets` itself, scanned in place.
    counts: &'static str,
    // Kept alive with the bind groups that use its buffers.
    _scan: GpuScan,
}

impl LookupGpu {
    /// Adds the chain's buffers to `buffers` (which holds `sets` and `acl_sizes`; `acl_lookup`,
    /// `lookup_offsets` and `lookup_items` are made here, replacing any of the same name, and
    /// `set_lookup` unless `buffers` has one of the capacity) and builds every bind group. `quadrature` is `b`.
    pub fn new(
        device: &wgpu::Device,
        queue: &wgpu::Queue,
        pipelines: &Pipelines,
        buffers: &mut Buffers,
        quadrature: u32,
        caps: LookupCaps,
    ) -> Result<LookupGpu, PipelineError> {
        let u = LookupUniform {
            num_sets: 0,
            num_segments: caps.segments,
            quadrature,
            _pad: 0,
        };
        buffers.upload(device, queue, "acl_lookup", bytemuck::bytes_of(&u), true);
        let offsets = caps.segments + 1;
        let words = |n: u32| n as usize * 4;
        buffers.zeroed(device, "lookup_offsets", words(offsets), false);
        buffers.zeroed(device, "lookup_items", words(caps.words), false);
        // An output the caller provides (the scheduler's own `set_lookup`) is kept when it holds
        // the capacity.
        if buffers
            .get("set_lookup")
            .is_none_or(|b| b.size() < caps.words as u64 * 4)
        {
            buffers.zeroed(device, "set_lookup", words(caps.words), false);
        }
        // The counts go into `lookup_counts` and one scan_into dispatch writes their scan into
        // `lookup_offsets` (up to SCAN_INTO_MAX segments); past that, into `lookup_offsets`,
        // scanned in place.
        buffers.zeroed(device, "lookup_counts", words(offsets), false);
        let direct = GpuScan::into(
            device,
            pipelines,
            buffers.get("lookup_counts").expect("made above"),
            buffers.get("lookup_offsets").expect("made above"),
            offsets,
        )?;
        let counts = if direct.is_some() {
            "lookup_counts"
        } else {
            "lookup_offsets"
        };
        let scan = match direct {
            Some(sc) => sc,
            None => GpuScan::new(
                device,
                pipelines,
                buffers.get("lookup_offsets").expect("made above"),
                offsets,
            )?,
        };
        let counts_buf = buffers.get(counts).expect("made above").clone();
        let own = |name: &'static str, threads: u32| -> Result<Dispatch, PipelineError> {
            Ok((
                name,
                pipelines.bind_group(device, name, buffers)?,
                threads.into(),
            ))
        };
        // The kernels that clear and count bind the counts as their `lookup_offsets`.
        let counting = |name: &'static str, threads: u32| -> Result<Dispatch, PipelineError> {
            Ok((
                name,
                pipelines.bind_group_with(
                    device,
                    name,
                    buffers,
                    &[("lookup_offsets", &counts_buf)],
                )?,
                threads.into(),
            ))
        };
        let mut d: Vec<Dispatch> = vec![
            counting("set_lookup_clear", offsets)?,
            counting("set_lookup_count", caps.sets)?,
        ];
        d.extend(scan.dispatches().map(|(n, bg, t)| (n, bg.clone(), t)));
        d.push(own("set_lookup_write", caps.sets)?);
        d.push(own(
            "set_lookup_sort",
            offsets.max(caps.sets).max(caps.words / 2),
        )?);
        Ok(LookupGpu {
            caps,
            dispatches: d,
            counts,
            _scan: scan,
        })
    }

    /// The dispatches in order: kernel, bind group, threads.
    pub fn dispatches(&self) -> &[Dispatch] {
        &self.dispatches
    }

    /// The buffer of the caller's set whose counts a clear must zero (bound as `lookup_offsets`):
    /// `lookup_counts` or `lookup_offsets` (see [`LookupGpu::new`]).
    pub fn counts_buffer(&self) -> &'static str {
        self.counts
    }

    /// The dispatches after `set_lookup_clear`: for a caller that clears the counts
    /// ([`LookupGpu::counts_buffer`]) in a dispatch of its own (the ACL step's `acl_step_start`).
    pub fn dispatches_cleared(&self) -> &[Dispatch] {
        debug_assert_eq!(self.dispatches[0].0, "set_lookup_clear");
        &self.dispatches[1..]
    }

    /// Records every dispatch into `pass`.
    pub fn record(
        &self,
        pipelines: &Pipelines,
        pass: &mut wgpu::ComputePass<'_>,
    ) -> Result<(), PipelineError> {
        pipelines.dispatch_all(pass, &self.dispatches)
    }

    /// Writes the output's capacity into `sizes` (its `lookup.capacity`).
    pub fn set_capacities(&self, sizes: &mut AclSizes) {
        sizes.lookup.capacity = self.caps.words;
    }

    /// Writes the number of live sets at the head of the table into the `acl_lookup` uniform of
    /// `buffers` (from the host; the GPU step copies it instead).
    pub fn write_num_sets(&self, queue: &wgpu::Queue, buffers: &Buffers, num_sets: u32) {
        if let Some(u) = buffers.get("acl_lookup") {
            queue.write_buffer(u, 0, bytemuck::bytes_of(&num_sets));
        }
    }

    /// The sizes to rebuild with after a run that overflowed (`None` when it did not): the words it
    /// needed plus a quarter.
    pub fn grown(&self, sizes: &AclSizes) -> Option<LookupCaps> {
        (sizes.lookup.overflow != 0).then(|| {
            let n = sizes.lookup.count;
            LookupCaps {
                words: n.saturating_add(n / 4).max(16).max(self.caps.words),
                ..self.caps
            }
        })
    }
}
