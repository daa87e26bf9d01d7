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
    bin_for, earliest_contact_steps, Interval, PairRules, SchedEntry, ENTRY_BIN, ENTRY_MIXED, FAR,
    MAX_QUADRATURE,
};
use crate::contact::arc_excluded;
use crate::layout::{
    SchedCounters, SchedUniform, SegmentContact, SegmentMotion, SCHED_NO_MOVEMENT_UPDATE,
    SCHED_NO_WINDOW_CORRECTION,
};
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
    /// Touching pairs found (also when they are not collected).
    pub touched: u64,
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

/// What the examination reads per segment and per quadrature point. The kernel reads buffers
/// ([`ProcessBuffers`]: `windows`, `qpts`, `seg_contact`); the CPU run computes the same values
/// where it needs them ([`ProcessLazy`]), by the same arithmetic, so both decide alike.
pub trait ProcessSource: Sync {
    /// The movement of segment `s` since bin λ's snapshot (λ = 0: over the last step).
    fn window(&self, l: u32, s: usize) -> Interval;
    /// Quadrature point `i`.
    fn qpoint(&self, i: u32) -> V3<f32>;
    /// Whether quadrature pair `(i, j)` of an entry of mixed class is excluded.
    fn excluded(&self, i: u32, j: u32) -> bool;
}

/// The kernel's inputs as buffers: `windows[λ·nseg + s]` for λ = 0..=λ_max ([`segment_windows`]),
/// `qpts` (xyz, w = arc position; `contact::quadrature_points`) and `seg_contact` (loop lengths for
/// the exclusion rule, with `arc` the exclusion arc).
pub struct ProcessBuffers<'a> {
    pub nseg: usize,
    pub quadrature: u32,
    pub exclusion_arc: f32,
    pub windows: &'a [Interval],
    pub qpts: &'a [[f32; 4]],
    pub seg_contact: &'a [SegmentContact],
}

impl ProcessSource for ProcessBuffers<'_> {
    #[inline]
    fn window(&self, l: u32, s: usize) -> Interval {
        self.windows[l as usize * self.nseg + s]
    }
    #[inline]
    fn qpoint(&self, i: u32) -> V3<f32> {
        V3::from4(self.qpts[i as usize])
    }
    #[inline]
    fn excluded(&self, i: u32, j: u32) -> bool {
        let loop_len = self.seg_contact[(i / self.quadrature) as usize].loop_len;
        arc_excluded(
            self.qpts[i as usize][3],
            self.qpts[j as usize][3],
            loop_len,
            self.exclusion_arc,
        )
    }
}

/// The CPU run's inputs: windows computed once per step on first use (a cache keyed by the step),
/// quadrature points from the positions (the weights of `QuadratureTable`, as
/// `contact::quadrature_points` computes them), and the exclusion rule itself.
pub struct ProcessLazy<'a> {
    pub step: u64,
    pub segments: &'a [Segment],
    pub pos: &'a [[f32; 4]],
    /// `snaps[(λ−1)·npts + p]`: positions at bin λ's last examination.
    pub snaps: &'a [[f32; 4]],
    /// `win[(λ−1)·nseg + s]`: the cache of the windows λ ≥ 1.
    pub win: &'a [WindowSlot],
    pub motion: &'a [SegmentMotion],
    pub weights: &'a [[f32; 4]],
    pub rules: &'a dyn PairRules,
}

impl ProcessSource for ProcessLazy<'_> {
    /// Two tasks that miss on the same slot compute the same value from the same inputs and store
    /// equal bits; the stamp is published after the value.
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
    #[inline]
    fn qpoint(&self, i: u32) -> V3<f32> {
        let b = self.weights.len() as u32;
        let seg = &self.segments[(i / b) as usize];
        let w = &self.weights[(i % b) as usize];
        let q = seg.cp.map(|c| V3::<f32>::from4(self.pos[c as usize]));
        q[0] * w[0] + q[1] * w[1] + q[2] * w[2] + q[3] * w[3]
    }
    #[inline]
    fn excluded(&self, i: u32, j: u32) -> bool {
        let b = self.weights.len() as u32;
        self.rules.excluded(i / b, i % b, j / b, j % b)
    }
}

/// Stage `segment_windows` (kernel `shaders/segment_windows.wgsl`), one task per segment and bin:
/// `windows[λ·nseg + s]`, the movement of segment `s` since bin λ's snapshot (`snaps`, λ ≥ 1), and
/// its movement over the last step for λ = 0 (`motion[s].mv1`). The CPU run computes the same
/// values on first use instead ([`ProcessLazy`]).
pub fn segment_windows(
    sched: &SchedUniform,
    segments: &[Segment],
    pos: &[[f32; 4]],
    snaps: &[[f32; 4]],
    motion: &[SegmentMotion],
    windows: &mut [Interval],
) {
    let nseg = sched.num_segments as usize;
    let npts = sched.num_points as usize;
    windows[..nseg * (sched.max_bin as usize + 1)]
        .par_iter_mut()
        .with_min_len(1024)
        .enumerate()
        .for_each(|(k, w)| {
            let (l, s) = (k / nseg, k % nseg);
            *w = if l == 0 {
                motion[s].mv1
            } else {
                let off = (l - 1) * npts;
                movement_of(&segments[s], pos, &snaps[off..off + npts], None)
            };
        });
}

/// Kernel `segment_windows_quadrature`, which the scheduler's GPU step in ACL dispatches in place of
/// `segment_windows` and `quadrature_points` (two independent maps over consecutive thread ranges):
/// [`segment_windows`], then [`crate::contact::quadrature_points`].
#[allow(clippy::too_many_arguments)]
pub fn segment_windows_quadrature(
    sched: &SchedUniform,
    params: &crate::layout::Params,
    segments: &[Segment],
    pos: &[[f32; 4]],
    snaps: &[[f32; 4]],
    motion: &[SegmentMotion],
    quad_weights: &[[f32; 4]],
    quad_arc: &[f32],
    windows: &mut [Interval],
    qpts: &mut [[f32; 4]],
) {
    segment_windows(sched, segments, pos, snaps, motion, windows);
    crate::contact::quadrature_points(params, segments, pos, quad_weights, quad_arc, qpts);
}

/// Bits of [`SchedEntry::bin_flags`] holding the number of touching pairs the entry's examination
/// found at this step (0 when it was not examined): the count that `touching_write` scans.
pub const ENTRY_TOUCH_SHIFT: u32 = 16;
pub const ENTRY_TOUCH: u32 = 0xff << ENTRY_TOUCH_SHIFT;

/// Examines (and, if needed, processes and re-bins) one due entry; the touching pairs found go to
/// `touching` when given (the CPU run), and their number into the entry.
#[inline]
fn examine(
    sched: &SchedUniform,
    src: &dyn ProcessSource,
    motion: &[SegmentMotion],
    set_lookup: &[u32],
    en: &mut SchedEntry,
    task: &mut ProcessTask,
    collect: bool,
) {
    let margin = 1e-4 * sched.radius;
    task.examined += 1;
    let (a, b) = (en.seg_a as usize, en.seg_b as usize);
    let mut d = en.d;
    if d < FAR && sched.switches & SCHED_NO_MOVEMENT_UPDATE == 0 {
        let l = en.bin_flags & ENTRY_BIN;
        d -= src.window(l, a).rel_norm(&src.window(l, b));
    }
    let mut count = 0u32;
    if d < margin {
        let (owned, overflow) = owned_bits(set_lookup, en.seg_a, en.seg_b, sched.quadrature);
        task.lookup_overflow += overflow as u64;
        let touching = &mut task.touching;
        let (dd, c) = process_entry(sched, src, en, &owned, |p| {
            if collect {
                touching.push(p)
            }
        });
        d = dd;
        count = c;
        task.touched += c as u64;
        task.processed += 1;
    }
    let (ma, mb) = (&motion[a], &motion[b]);
    let m = ma.mv1.rel_norm(&mb.mv1);
    let acc = ma.mv2_ref.rel_norm(&mb.mv2_ref) + sched.omega;
    let l = bin_for(earliest_contact_steps(d, m, acc), sched.max_bin);
    let mut dw = d;
    // Binned off-phase (`n mod 2^l ≠ 0`): the bound is converted to the window's start.
    if d < FAR && l > sched.bins_due && sched.switches & SCHED_NO_WINDOW_CORRECTION == 0 {
        dw -= src.window(l, a).rel_norm(&src.window(l, b));
    }
    en.d = dw;
    en.bin_flags = (en.bin_flags & ENTRY_MIXED) | l | (count << ENTRY_TOUCH_SHIFT);
}

/// Full processing of entry `en`: distances of all its non-excluded pairs not in `owned`; returns the
/// smallest gap over the non-touching ones ([`FAR`] if none) and the number of touching ones (each
/// passed to `touching`).
fn process_entry(
    sched: &SchedUniform,
    src: &dyn ProcessSource,
    en: &SchedEntry,
    owned: &[u32; 4],
    mut touching: impl FnMut([u32; 2]),
) -> (f32, u32) {
    let b = sched.quadrature;
    let r = sched.radius;
    let four_r2 = 4.0 * r * r;
    let mut yb = [V3::<f32>::zero(); MAX_QUADRATURE as usize];
    for (k, y) in yb.iter_mut().enumerate().take(b as usize) {
        *y = src.qpoint(en.seg_b * b + k as u32);
    }
    let mut min_d2 = f32::INFINITY;
    let mut count = 0;
    let mixed = en.bin_flags & ENTRY_MIXED != 0;
    for ka in 0..b {
        let i = en.seg_a * b + ka;
        let ya = src.qpoint(i);
        for kb in 0..b {
            let bit = ka * b + kb;
            if owned[(bit / 32) as usize] & (1 << (bit % 32)) != 0 {
                continue;
            }
            let j = en.seg_b * b + kb;
            if mixed && src.excluded(i, j) {
                continue;
            }
            let d2 = (ya - yb[kb as usize]).norm2();
            if d2 < four_r2 {
                count += 1;
                touching([i, j]);
            } else if d2 < min_d2 {
                min_d2 = d2;
            }
        }
    }
    let d = if min_d2.is_finite() {
        min_d2.sqrt() - 2.0 * r
    } else {
        FAR
    };
    (d, count)
}

/// Stage `schedule_process` (kernel `shaders/schedule_process.wgsl`): every entry due at this step
/// is examined and re-binned; the others get a touching count of 0. Cut into tasks of
/// [`PROCESS_TASK`] entries run in parallel; `tasks` keeps each task's counts (and, when `collect`,
/// its touching pairs in entry order) and their capacity between steps. Returns the number of tasks
/// used. Counts of examined, processed and lookup overflows go to `counters`.
#[allow(clippy::too_many_arguments)]
pub fn schedule_process(
    sched: &SchedUniform,
    src: &dyn ProcessSource,
    motion: &[SegmentMotion],
    set_lookup: &[u32],
    entries: &mut [SchedEntry],
    counters: &mut SchedCounters,
    tasks: &mut Vec<ProcessTask>,
    collect: bool,
) -> usize {
    let n = sched.num_entries as usize;
    let ntasks = n.div_ceil(PROCESS_TASK);
    if tasks.len() < ntasks {
        tasks.resize_with(ntasks, ProcessTask::default);
    }
    let any_mon = counters.monitored > 0;
    let run = |(task, chunk): (&mut ProcessTask, &mut [SchedEntry])| {
        task.touching.clear();
        task.examined = 0;
        task.processed = 0;
        task.lookup_overflow = 0;
        task.touched = 0;
        for en in chunk.iter_mut() {
            if entry_due(en, sched.bins_due, motion, any_mon) {
                examine(sched, src, motion, set_lookup, en, task, collect);
            } else {
                en.bin_flags &= !ENTRY_TOUCH;
            }
        }
    };
    if ntasks > 1 {
        tasks[..ntasks]
            .par_iter_mut()
            .zip(entries[..n].par_chunks_mut(PROCESS_TASK))
            .for_each(run);
    } else {
        tasks[..ntasks]
            .iter_mut()
            .zip(entries[..n].chunks_mut(PROCESS_TASK))
            .for_each(run);
    }
    for t in &tasks[..ntasks] {
        counters.examined += t.examined as u32;
        counters.processed += t.processed as u32;
        counters.lookup_overflow += t.lookup_overflow as u32;
        counters.touching.count += t.touched as u32;
    }
    ntasks
}

/// The touching count `schedule_process` recorded in entry `en` (bits 16–23 of its flags).
#[inline]
pub fn entry_touching(en: &SchedEntry) -> u32 {
    (en.bin_flags & ENTRY_TOUCH) >> ENTRY_TOUCH_SHIFT
}

/// Stage `touching_count` (kernel `shaders/touching_count.wgsl`): the sums of the touching counts
/// `schedule_process` recorded in the entries (`n` of them), 256 entries per word, into
/// `scan_groups`, from which `touching_write` finds each entry's first slot. The words of groups
/// wholly past the entries are left as they were (the kernel's workgroups there return at once;
/// `touching_write` reads none of them).
pub fn touching_count(sched: &SchedUniform, entries: &[SchedEntry], scan_groups: &mut [u32]) {
    let n = sched.num_entries as usize;
    for (g, chunk) in scan_groups
        .iter_mut()
        .zip(entries[..n].chunks(crate::scan::GROUP as usize))
    {
        *g = chunk.iter().map(entry_touching).sum();
    }
}

/// Stage `touching_write` (kernel `shaders/touching_write.wgsl`): every entry with a touching count
/// writes its touching pairs `[i, j]` (in the order `schedule_process` met them) from its first
/// slot in `touching`, the counts of the entries before it (from `touching_count`'s group sums
/// `scan_groups`: [`crate::scan::group_prefix_walk`], the kernel's `group_prefix`): the pairs of
/// all entries in table order. Slots at or beyond `counters.touching.capacity` are not written and
/// raise `counters.touching.overflow`; the count of pairs is `counters.touching.count` (from
/// `schedule_process`).
pub fn touching_write(
    sched: &SchedUniform,
    src: &dyn ProcessSource,
    set_lookup: &[u32],
    entries: &[SchedEntry],
    scan_groups: &[u32],
    touching: &mut [[u32; 2]],
    counters: &mut SchedCounters,
) {
    let n = sched.num_entries as usize;
    let cap = counters.touching.capacity as usize;
    let mut overflow = false;
    crate::scan::group_prefix_walk(
        entries[..n].iter().map(entry_touching),
        scan_groups,
        |e, count, first| {
            if count == 0 {
                return;
            }
            let en = &entries[e];
            let (owned, _) = owned_bits(set_lookup, en.seg_a, en.seg_b, sched.quadrature);
            let mut slot = first as usize;
            process_entry(sched, src, en, &owned, |p| {
                if slot < cap {
                    touching[slot] = p;
                } else {
                    overflow = true;
                }
                slot += 1;
            });
        },
    );
    if overflow {
        counters.touching.overflow = 1;
    }
}
