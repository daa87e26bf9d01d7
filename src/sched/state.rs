//! The scheduler's checkpoint state ([`crate::checkpoint`]): what persists from step to step, bit for
//! bit.
//!
//! Saved: the step count, the grid's anchor cell, the entry table (sorted, with bounds, bins and flags), the reference changes
//! of movement, the last cell boxes, the position history (`prev1`, `prev2`) and the bins' position
//! snapshots (each distinct snapshot once; most equal `prev1`, `prev2` or one another). Not saved,
//! because every step recomputes it before reading it: AABBs, movements, the left/monitored flags,
//! the grid (rebuilt on every step on which a segment enters a cell, the only steps that read it),
//! the movement-window cache (keyed by the step number) and the scratch.

use super::{
    CellBox, Interval, SchedEntry, SchedStats, SchedTimes, Scheduler, WindowSlot, ENTRY_BIN,
    ENTRY_DUE, ENTRY_MIXED, ENTRY_TOUCH,
};
use crate::checkpoint::{check_index, CheckpointError, StateReader, StateWriter};

impl Scheduler {
    /// Writes the state into `out` (sections `sched.*`).
    pub fn export_state(&self, out: &mut StateWriter) {
        let nb = self.params.max_bin as usize;
        out.put(
            "sched.counts",
            &[
                self.step,
                self.nseg as u64,
                self.npts as u64,
                self.params.max_bin as u64,
            ],
        );
        out.put("sched.anchor", &self.anchor);
        out.put("sched.cells", &self.cells);
        let mv2_ref: Vec<Interval> = self.motion.iter().map(|m| m.mv2_ref).collect();
        out.put("sched.mv2_ref", &mv2_ref);
        out.put_points("sched.prev1", &self.prev1);
        out.put_points("sched.prev2", &self.prev2);
        // Snapshot λ is `prev1` (0), `prev2` (1) or distinct snapshot k (2 + k).
        let npts = self.npts;
        let same = |a: &[[f32; 4]], b: &[[f32; 4]]| {
            bytemuck::cast_slice::<_, u8>(a) == bytemuck::cast_slice::<_, u8>(b)
        };
        let mut src = Vec::with_capacity(nb);
        let mut distinct: Vec<[f32; 4]> = Vec::new();
        if self.snaps.len() == nb * npts {
            for l in 0..nb {
                let s = &self.snaps[l * npts..(l + 1) * npts];
                let k = if same(s, &self.prev1) {
                    0
                } else if same(s, &self.prev2) {
                    1
                } else if let Some(k) = (0..distinct.len() / npts.max(1))
                    .find(|&k| same(s, &distinct[k * npts..(k + 1) * npts]))
                {
                    2 + k as u32
                } else {
                    distinct.extend_from_slice(s);
                    1 + (distinct.len() / npts) as u32
                };
                src.push(k);
            }
        }
        out.put("sched.snap_src", &src);
        out.put_points("sched.snaps", &distinct);
        out.put("sched.entries", &self.entries);
    }

    /// Restores what [`Self::export_state`] wrote into a scheduler made by [`Scheduler::new`] with
    /// the same parameters, for `nseg` segments and `npts` control points. Everything is checked
    /// before anything is changed.
    pub fn import_state(
        &mut self,
        inp: &StateReader,
        nseg: usize,
        npts: usize,
    ) -> Result<(), CheckpointError> {
        let c = inp.get_len::<u64>("sched.counts", 4)?;
        let (step, s_nseg, s_npts, max_bin) = (c[0], c[1], c[2], c[3]);
        if max_bin != self.params.max_bin as u64 {
            return Err(CheckpointError::Mismatch {
                what: "contact.max_bin",
                checkpoint: max_bin.to_string(),
                sim: self.params.max_bin.to_string(),
            });
        }
        if step == 0 {
            // Nothing ran yet: the first step sets everything up, as in a fresh scheduler.
            self.step = 0;
            return Ok(());
        }
        if s_nseg != nseg as u64 || s_npts != npts as u64 {
            return Err(CheckpointError::Mismatch {
                what: "the scheduler's segments and points",
                checkpoint: format!("{s_nseg} and {s_npts}"),
                sim: format!("{nseg} and {npts}"),
            });
        }
        let nb = max_bin as usize;
        let anchor = inp.get_len::<i32>("sched.anchor", 3)?;
        if anchor.iter().any(|a| a.unsigned_abs() > 100_000_000) {
            return Err(CheckpointError::bad(
                "sched.anchor",
                format!("anchor cell {anchor:?} beyond ±10^8"),
            ));
        }
        let cells = inp.get_len::<CellBox>("sched.cells", nseg)?;
        let mv2_ref = inp.get_len::<Interval>("sched.mv2_ref", nseg)?;
        let prev1 = inp.get_points_len("sched.prev1", npts)?;
        let prev2 = inp.get_points_len("sched.prev2", npts)?;
        let src = inp.get_len::<u32>("sched.snap_src", nb)?;
        let distinct = inp.get_points("sched.snaps")?;
        if distinct.len() % npts.max(1) != 0 {
            return Err(CheckpointError::bad(
                "sched.snaps",
                format!(
                    "{} points is not a whole number of snapshots",
                    distinct.len()
                ),
            ));
        }
        let nd = distinct.len() / npts.max(1);
        let mut snaps = Vec::with_capacity(nb * npts);
        for &k in &src {
            check_index("sched.snap_src", "snapshot", k as usize, 2 + nd)?;
            snaps.extend_from_slice(match k {
                0 => &prev1[..],
                1 => &prev2[..],
                k => &distinct[(k as usize - 2) * npts..(k as usize - 1) * npts],
            });
        }
        let entries = inp.get::<SchedEntry>("sched.entries")?;
        let mut last = None;
        for en in &entries {
            check_index("sched.entries", "segment", en.seg_a as usize, nseg)?;
            check_index("sched.entries", "segment", en.seg_b as usize, nseg)?;
            check_index("sched.entries", "bin", en.bin() as usize, nb + 1)?;
            if en.seg_a >= en.seg_b
                || last.is_some_and(|k| k >= en.key())
                || en.bin_flags & !(ENTRY_BIN | ENTRY_MIXED | ENTRY_DUE | ENTRY_TOUCH) != 0
            {
                return Err(CheckpointError::bad(
                    "sched.entries",
                    format!(
                        "entry ({}, {}) with flags {:#x} is out of order or malformed",
                        en.seg_a, en.seg_b, en.bin_flags
                    ),
                ));
            }
            last = Some(en.key());
        }
        // All checked: install.
        self.resize(nseg, npts, &prev1);
        self.step = step;
        self.anchor = [anchor[0], anchor[1], anchor[2]];
        self.cells = cells;
        for (m, r) in self.motion.iter_mut().zip(mv2_ref) {
            m.mv2_ref = r;
        }
        self.win = (0..nseg * nb).map(|_| WindowSlot::default()).collect();
        self.prev1 = prev1;
        self.prev2 = prev2;
        self.snaps = snaps;
        self.entries = entries;
        self.touching.clear();
        self.stats = SchedStats::default();
        self.times = SchedTimes::default();
        Ok(())
    }
}
