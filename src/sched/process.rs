//! Stage `schedule_process` of the scheduler: every entry due at this step ([`entry_due`]) is
//! *examined* — its bound lowered by the largest relative movement of its two segments since the bound
//! was set — and, when the bound is gone, *processed*: the distances of its quadrature pairs that no
//! contact set owns (looked up now in `set_lookup`, [`super::lookup`]) are computed, touching ones are reported, and the
//! bound becomes the smallest gap over the others. Then it is binned (see the module docs of
//! [`crate::sched`]).
//!
//! Reads the segments and positions, the movement intervals (`mv1`, `mv2_ref`), the bins' position
//! snapshots, the monitoring flags and the contact sets' ownership; writes each due entry's bound and
//! bin (and clears its due flag) and the touching pairs `[i, j]` (`i < j`, quadrature indices). The
//! table is cut into tasks of [`PROCESS_TASK`] entries, run in parallel; each writes only its own
//! entries and its own list of touching pairs, and the lists are appended task by task: the output is
//! that of examining the due entries in table order, for any number of threads.

// Negated comparisons (`!(x > 0)`) are deliberate: they also reject NaN.
#![allow(clippy::neg_cmp_op_on_partial_ord)]

use super::entries::entry_due;
use super::lookup::owned_bits;
use super::raster::movement_of;
use super::{
    bin_for, earliest_contact_steps, Interval, PairRules, SafetyRuleSwitches, SchedEntry,
    ENTRY_BIN, ENTRY_DUE, ENTRY_MIXED, FAR, MAX_QUADRATURE,
};
use crate::layout::SegmentMotion;
use crate::math::V3;
use crate::state::Segment;
use rayon::prelude::*;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};

/// Entries of the table per parallel task: a fixed count, so the split — and with it the order of
/// every output — does not depend on the number of threads.
pub const PROCESS_TASK: usize = 4096;

/// What one task found: touching pairs in entry order, and its counts.
#[derive(Debug, Default)]
pub struct ProcessTask {
    pub touching: Vec<[u32; 2]>,
    pub examined: u64,
    pub processed: u64,
    pub lookup_overflow: u64,
}

/// A cached movement window: the interval's bits and the step it is for.
#[derive(Debug)]
pub struct WindowSlot {
    stamp: AtomicU64,
    bits: [AtomicU32; 8],
}

impl Default for WindowSlot {
    fn default() -> Self {
        WindowSlot {
            stamp: AtomicU64::new(u64::MAX),
            bits: Default::default(),
        }
    }
}

impl WindowSlot {
    #[inline]
    fn load(&self) -> Interval {
        let f = |k: usize| f32::from_bits(self.bits[k].load(Ordering::Relaxed));
        Interval {
            lo: [f(0), f(1), f(2), f(3)],
            hi: [f(4), f(5), f(6), f(7)],
        }
    }

    #[inline]
    fn store(&self, w: &Interval) {
        for k in 0..4 {
            self.bits[k].store(w.lo[k].to_bits(), Ordering::Relaxed);
            self.bits[k + 4].store(w.hi[k].to_bits(), Ordering::Relaxed);
        }
    }
}

/// What `schedule_process` reads (everything but the entries).
pub struct ProcessCtx<'a> {
    pub step: u64,
    /// [`super::entries::bins_due`] of the step.
    pub tz: u32,
    pub segments: &'a [Segment],
    pub pos: &'a [[f32; 4]],
    /// `segment_monitor`'s records (movement, reference change of movement, monitored flag).
    pub motion: &'a [SegmentMotion],
    /// `snaps[(λ−1)·npts + p]`: positions at bin λ's last examination.
    pub snaps: &'a [[f32; 4]],
    /// `win[(λ−1)·nseg + s]`: the movement of segment `s` since snapshot λ, cached for the step.
    pub win: &'a [WindowSlot],
    pub any_mon: bool,
    pub quadrature: u32,
    pub radius: f32,
    pub omega: f32,
    pub max_bin: u32,
    pub disable: SafetyRuleSwitches,
    pub rules: &'a dyn PairRules,
    /// The contact sets' boxes ([`super::lookup`]).
    pub set_lookup: &'a [u32],
}

impl ProcessCtx<'_> {
    /// Movement of segment `s` since bin λ's snapshot (λ ≥ 1; `mv1` for λ = 0), computed once per
    /// step: two tasks that miss on the same slot compute the same value from the same inputs and store
    /// equal bits; the stamp is published after the value. (A kernel computes it where it needs it.)
    #[inline]
    fn window(&self, l: u32, s: usize) -> Interval {
        if l == 0 {
            return self.motion[s].mv1;
        }
        let nseg = self.segments.len();
        let slot = &self.win[(l as usize - 1) * nseg + s];
        if slot.stamp.load(Ordering::Acquire) == self.step {
            return slot.load();
        }
        let npts = self.pos.len();
        let off = (l as usize - 1) * npts;
        let w = movement_of(
            &self.segments[s],
            self.pos,
            &self.snaps[off..off + npts],
            None,
        );
        slot.store(&w);
        slot.stamp.store(self.step, Ordering::Release);
        w
    }

    /// Examines (and, if needed, processes and re-bins) one due entry.
    #[inline]
    fn examine(&self, en: &mut SchedEntry, task: &mut ProcessTask) {
        let margin = 1e-4 * self.radius;
        task.examined += 1;
        let (a, b) = (en.seg_a as usize, en.seg_b as usize);
        let mut d = en.d;
        if d < FAR && !self.disable.no_movement_update {
            let l = en.bin_flags & ENTRY_BIN;
            d -= self.window(l, a).rel_norm(&self.window(l, b));
        }
        if d < margin {
            let (owned, overflow) =
                owned_bits(self.set_lookup, en.seg_a, en.seg_b, self.quadrature);
            task.lookup_overflow += overflow as u64;
            d = self.process_entry(en, &owned, &mut task.touching);
            task.processed += 1;
        }
        let (ma, mb) = (&self.motion[a], &self.motion[b]);
        let m = ma.mv1.rel_norm(&mb.mv1);
        let acc = ma.mv2_ref.rel_norm(&mb.mv2_ref) + self.omega;
        let l = bin_for(earliest_contact_steps(d, m, acc), self.max_bin);
        let mut dw = d;
        if d < FAR && !self.step.is_multiple_of(1u64 << l) && !self.disable.no_window_correction {
            dw -= self.window(l, a).rel_norm(&self.window(l, b));
        }
        en.d = dw;
        en.bin_flags = (en.bin_flags & !(ENTRY_BIN | ENTRY_DUE)) | l;
    }

    /// Full processing of entry `en`: distances of all its non-excluded pairs not in `owned`; touching
    /// ones are appended to `touching`; returns the smallest gap over the others ([`FAR`] if none).
    fn process_entry(
        &self,
        en: &SchedEntry,
        owned: &[u32; 4],
        touching: &mut Vec<[u32; 2]>,
    ) -> f32 {
        let b = self.quadrature;
        let r = self.radius;
        let four_r2 = 4.0 * r * r;
        let pos = self.pos;
        let qa = self.segments[en.seg_a as usize]
            .cp
            .map(|i| V3::<f32>::from4(pos[i as usize]));
        let qb = self.segments[en.seg_b as usize]
            .cp
            .map(|i| V3::<f32>::from4(pos[i as usize]));
        let mut yb = [V3::<f32>::zero(); MAX_QUADRATURE as usize];
        for (k, y) in yb.iter_mut().enumerate().take(b as usize) {
            *y = crate::spline::eval(&qb, crate::spline::quad_param(k as u32, b));
        }
        let mut min_d2 = f32::INFINITY;
        let mixed = en.bin_flags & ENTRY_MIXED != 0;
        for ka in 0..b {
            let ya = crate::spline::eval(&qa, crate::spline::quad_param(ka, b));
            for kb in 0..b {
                let bit = ka * b + kb;
                if owned[(bit / 32) as usize] & (1 << (bit % 32)) != 0 {
                    continue;
                }
                if mixed && self.rules.excluded(en.seg_a, ka, en.seg_b, kb) {
                    continue;
                }
                let d2 = (ya - yb[kb as usize]).norm2();
                if d2 < four_r2 {
                    touching.push([en.seg_a * b + ka, en.seg_b * b + kb]);
                } else if d2 < min_d2 {
                    min_d2 = d2;
                }
            }
        }
        if min_d2.is_finite() {
            min_d2.sqrt() - 2.0 * r
        } else {
            FAR
        }
    }
}

/// Stage `schedule_process` over the whole table; `tasks` keeps each task's outputs (and their
/// capacity between steps). Returns the number of tasks used, in table order.
pub fn schedule_process(
    ctx: &ProcessCtx,
    entries: &mut [SchedEntry],
    tasks: &mut Vec<ProcessTask>,
) -> usize {
    let ntasks = entries.len().div_ceil(PROCESS_TASK);
    if tasks.len() < ntasks {
        tasks.resize_with(ntasks, ProcessTask::default);
    }
    let run = |(task, chunk): (&mut ProcessTask, &mut [SchedEntry])| {
        task.touching.clear();
        task.examined = 0;
        task.processed = 0;
        task.lookup_overflow = 0;
        for en in chunk.iter_mut() {
            if entry_due(en, ctx.tz, ctx.motion, ctx.any_mon) {
                ctx.examine(en, task);
            }
        }
    };
    if ntasks > 1 {
        tasks[..ntasks]
            .par_iter_mut()
            .zip(entries.par_chunks_mut(PROCESS_TASK))
            .for_each(run);
    } else {
        tasks[..ntasks]
            .iter_mut()
            .zip(entries.chunks_mut(PROCESS_TASK))
            .for_each(run);
    }
    ntasks
}
