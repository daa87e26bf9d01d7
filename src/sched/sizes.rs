//! The bookkeeping stages of the scheduler's GPU step ([`super::gpu::SchedGpu`]), which keeps every
//! count on the GPU: [`sched_sizes`] writes the step's three `sched` records with the table sizes
//! known at that point, and [`sched_history`] moves the position history and the cell boxes on at
//! the end of the step. The CPU run does both on the host (`Scheduler::detect`).

use super::CellBox;
use crate::layout::{Capacity, Release, SchedCounters, SchedPhase, SchedUniform};

/// `sched_phase.phase` of [`sched_sizes`] at the start of the step: `sched_p0` (the table of the last
/// step), counters reset.
pub const SIZES_START: u32 = 0;
/// After `newcomer_compact` and the scan of `release_count`: `sched_p1.num_fresh`, `sched_p2` (the
/// merged table), the table size for the next step, the entry and release capacities' checks.
/// (`sched_p1` with the kept table's size is written by `entries_compact`, from its thread 0.)
pub const SIZES_MERGED: u32 = 1;

/// Resets a counters block for a new step, keeping the capacities.
pub fn reset_counters(c: &mut SchedCounters) {
    let keep = |x: &Capacity| Capacity {
        capacity: x.capacity,
        ..Default::default()
    };
    *c = SchedCounters {
        first_bad_point: u32::MAX,
        first_bad_segment: u32::MAX,
        touching: keep(&c.touching),
        grid: keep(&c.grid),
        cand: keep(&c.cand),
        fresh: keep(&c.fresh),
        entries: keep(&c.entries),
        release: keep(&c.release),
        ..Default::default()
    };
}

/// The start of a scheduler step (`sched_sizes`' [`SIZES_START`], made in the GPU ACL step by
/// `acl_step_start`; `shaders/shared/sched_start.wgsl`): the counters reset (capacities kept),
/// `sched_p0` = `sched_step` with the last step's table length (`sched_state[0]`) and no fresh
/// entries.
pub fn sched_start(
    sched_step: &SchedUniform,
    sched_counters: &mut SchedCounters,
    sched_state: &mut [u32],
    sched_p0: &mut SchedUniform,
) {
    reset_counters(sched_counters);
    *sched_p0 = SchedUniform {
        num_entries: sched_state[0],
        num_fresh: 0,
        ..*sched_step
    };
}

/// Stage `sched_sizes` (kernel `shaders/sched_sizes.wgsl`, one thread): the step's `sched` records
/// from the host's `sched_step` (constants, step number, bins due, releases) and the sizes so far.
/// - [`SIZES_START`]: `sched_counters` reset (capacities kept); `sched_p0` = `sched_step` with
///   `num_entries = sched_state[0]` (the table's length after the last step).
/// - [`SIZES_MERGED`]: `m` = new entries within their capacity, cut to the room left in the entry
///   capacity (`sched_counters.entries`: count = kept + all new, overflow flagged);
///   `sched_p1.num_fresh = m`; `sched_p2` = `sched_step` with `num_entries` = kept + `m`, which is
///   also the next step's `sched_state[0]`; the release slots `release_offsets[num_released]` into
///   `sched_counters.release` (overflow above its capacity).
#[allow(clippy::too_many_arguments)]
pub fn sched_sizes(
    sched_phase: &SchedPhase,
    sched_step: &SchedUniform,
    release_offsets: &[u32],
    sched_counters: &mut SchedCounters,
    sched_state: &mut [u32],
    sched_p0: &mut SchedUniform,
    sched_p1: &mut SchedUniform,
    sched_p2: &mut SchedUniform,
) {
    match sched_phase.phase {
        SIZES_START => sched_start(sched_step, sched_counters, sched_state, sched_p0),
        _ => sched_merged(
            sched_step,
            release_offsets[sched_step.num_released as usize],
            sched_counters,
            sched_state,
            sched_p1,
            sched_p2,
        ),
    }
}

/// [`sched_sizes`]' [`SIZES_MERGED`] (`shaders/shared/sched_merged.wgsl`, which
/// `release_scan_sizes` makes too), with `slots` the releases' segment-pair slots (the scan's
/// total).
pub fn sched_merged(
    sched_step: &SchedUniform,
    slots: u32,
    sched_counters: &mut SchedCounters,
    sched_state: &mut [u32],
    sched_p1: &mut SchedUniform,
    sched_p2: &mut SchedUniform,
) {
    let kept = sched_p1.num_entries;
    let c = sched_counters;
    let fresh = c.fresh.count;
    let mut m = fresh.min(c.fresh.capacity);
    c.entries.count = kept.saturating_add(fresh);
    if kept.saturating_add(m) > c.entries.capacity {
        c.entries.overflow = 1;
        m = c.entries.capacity.saturating_sub(kept);
    }
    sched_p1.num_fresh = m;
    *sched_p2 = SchedUniform {
        num_entries: kept + m,
        num_fresh: 0,
        ..*sched_step
    };
    sched_state[0] = kept + m;
    c.release.count = slots;
    if slots > c.release.capacity {
        c.release.overflow = 1;
    }
}

/// Stage `release_scan_sizes` (kernel `shaders/release_scan_sizes.wgsl`, one workgroup): what
/// `release_count` ([`super::release_count`]), the exclusive scan of its counts and
/// [`sched_sizes`]' [`SIZES_MERGED`] leave, in one dispatch: `release_offsets[r]` = the slots of the
/// released boxes before `r`, `release_offsets[num_released]` = their total, then the merged sizes
/// ([`sched_merged`]) with that total.
pub fn release_scan_sizes(
    sched_step: &SchedUniform,
    released: &[Release],
    release_offsets: &mut [u32],
    sched_counters: &mut SchedCounters,
    sched_state: &mut [u32],
    sched_p1: &mut SchedUniform,
    sched_p2: &mut SchedUniform,
) {
    let n = sched_step.num_released as usize;
    let mut at = 0u32;
    for (o, rel) in release_offsets[..n].iter_mut().zip(released) {
        *o = at;
        at = at.wrapping_add(super::release_slots(
            &rel.before,
            sched_step.quadrature,
            sched_step.num_segments,
        ));
    }
    release_offsets[n] = at;
    sched_merged(
        sched_step,
        at,
        sched_counters,
        sched_state,
        sched_p1,
        sched_p2,
    );
}

/// Stage `sched_history` (kernel `shaders/sched_history.wgsl`), the end of a step: the position
/// history moves on (`prev2 ← prev1 ← pos`), every bin examined at this step (λ = 1 ..= λ_max with
/// `λ ≤ bins_due`) takes `pos` as its snapshot (`snaps[(λ−1)·npts + p]`), and the cell boxes become
/// the previous ones (`prev_cells ← cells`).
#[allow(clippy::too_many_arguments)]
pub fn sched_history(
    sched: &SchedUniform,
    pos: &[[f32; 4]],
    cells: &[CellBox],
    prev1: &mut [[f32; 4]],
    prev2: &mut [[f32; 4]],
    snaps: &mut [[f32; 4]],
    prev_cells: &mut [CellBox],
) {
    let npts = sched.num_points as usize;
    let nseg = sched.num_segments as usize;
    prev2[..npts].copy_from_slice(&prev1[..npts]);
    prev1[..npts].copy_from_slice(&pos[..npts]);
    for l in 1..=sched.max_bin {
        if l <= sched.bins_due {
            let off = (l as usize - 1) * npts;
            snaps[off..off + npts].copy_from_slice(&pos[..npts]);
        }
    }
    prev_cells[..nseg].copy_from_slice(&cells[..nseg]);
}
