//! ACL's checkpoint state ([`crate::checkpoint`]): everything a later step reads, bit for bit.
//!
//! Saved: the step count; every set's header (box, pool offsets, ε, guards, `f_ref`, the polar
//! warm-start quaternion, the reference centre, `rebuilt_step`, flags), in table order (between
//! steps the table holds live sets only, so a set with any other flags than [`SET_LIVE`] and
//! [`SET_ZERO`] is refused); the stiction springs; the model pools' lengths, the sets' ranges of them
//! (in set order) and the garbage counts, so the pools come back with the same layout (compaction
//! happens at the same steps and moves the same ranges; the garbage between the ranges, which
//! nothing reads, comes back as zeros); the boxes that released pairs for the scheduler's next
//! step; and the scheduler's state ([`crate::sched::Scheduler::export_state`]). Rebuilt instead, by
//! the same code from the same inputs: the per-topology tables (exclusion rule, segment weights and
//! control points, `nq`) and the sets' bin index, which every step leaves equal to the index of its
//! final sets. The per-step scratch pools and the stages' scratch are written before they are
//! read.

use super::rebuild::{PoolGarbage, Pools};
use super::{model, AclContact, SET_LIVE, SET_ZERO};
use crate::checkpoint::{check_index, check_len, CheckpointError, StateReader, StateWriter};
use crate::state::Topology;

impl AclContact {
    /// Writes the state (sections `contact.model`, `acl.*`, `sched.*`).
    pub(crate) fn export_checkpoint(&self, out: &mut StateWriter) {
        out.put_str("contact.model", "acl");
        let prepared = self.topo_sig != (usize::MAX, 0, 0);
        out.put(
            "acl.counts",
            &[
                self.step,
                prepared as u64,
                self.topo_sig.0 as u64,
                self.topo_sig.1 as u64,
                self.topo_sig.2 as u64,
                self.nq as u64,
                self.b as u64,
                self.garbage.cp as u64,
                self.garbage.k as u64,
                self.garbage.w as u64,
            ],
        );
        out.put("acl.sets", &self.sets);
        out.put("acl.springs", &self.springs);
        let lens = self.pools.lens();
        out.put("acl.pool_len", &lens.map(|x| x as u64));
        // The live sets' ranges, in set order.
        let (mut cp, mut f0, mut dbar, mut m) = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
        let (mut k, mut watch, mut watch_loc) = (Vec::new(), Vec::new(), Vec::new());
        for s in self.sets.iter().filter(|s| s.flags & SET_LIVE != 0) {
            let p = &self.pools;
            let r = s.cp_off as usize..(s.cp_off + s.n_cp) as usize;
            cp.extend_from_slice(&p.cp[r.clone()]);
            f0.extend_from_slice(&p.f0[r.clone()]);
            dbar.extend_from_slice(&p.dbar[r.clone()]);
            m.extend_from_slice(&p.m[r]);
            if s.flags & SET_ZERO == 0 {
                let k0 = s.k_off as usize;
                k.extend_from_slice(&p.k[k0..k0 + model::tri_len(s.n_cp as usize)]);
            }
            let w = s.w_off as usize..(s.w_off + s.n_watch) as usize;
            watch.extend_from_slice(&p.watch[w.clone()]);
            watch_loc.extend_from_slice(&p.watch_loc[w]);
        }
        out.put("acl.cp", &cp);
        out.put_points("acl.f0", &f0);
        out.put_points("acl.dbar", &dbar);
        out.put("acl.m", &m);
        out.put("acl.k", &k);
        out.put("acl.watch", &watch);
        out.put("acl.watch_loc", &watch_loc);
        out.put("acl.released", &self.released);
        self.sched.export_state(out);
    }

    /// Restores what [`Self::export_checkpoint`] wrote into a model made by [`AclContact::new`]
    /// with the same parameters. The sets and pools are checked before the model is changed; on
    /// an error from the scheduler's part the model is reset and must be discarded.
    pub(crate) fn import_checkpoint(
        &mut self,
        topo: &Topology,
        num_points: usize,
        inp: &StateReader,
    ) -> Result<(), CheckpointError> {
        inp.expect_model("acl")?;
        let c = inp.get_len::<u64>("acl.counts", 10)?;
        let (step, prepared) = (c[0], c[1] != 0);
        if c[6] != self.b as u64 {
            return Err(CheckpointError::Mismatch {
                what: "contact.quadrature",
                checkpoint: c[6].to_string(),
                sim: self.b.to_string(),
            });
        }
        if !prepared {
            // No step ran: the model is as new (its first step prepares it).
            if step != 0 {
                return Err(CheckpointError::bad(
                    "acl.counts",
                    "steps without a topology",
                ));
            }
            return self
                .sched
                .import_state(inp, topo.segments.len(), num_points);
        }
        let sig = (topo.segments.len(), topo.yarns.len(), topo.edges.len());
        if (c[2], c[3], c[4]) != (sig.0 as u64, sig.1 as u64, sig.2 as u64) {
            return Err(CheckpointError::Mismatch {
                what: "the contact topology (segments, yarns, edges)",
                checkpoint: format!("({}, {}, {})", c[2], c[3], c[4]),
                sim: format!("({}, {}, {})", sig.0, sig.1, sig.2),
            });
        }
        let nq = topo.segments.len() as u64 * self.b as u64;
        if c[5] != nq {
            return Err(CheckpointError::bad(
                "acl.counts",
                format!("{} quadrature points, {nq} expected", c[5]),
            ));
        }
        let nq = nq as usize;
        let sets = inp.get::<super::ContactSet>("acl.sets")?;
        let springs = inp.get_len::<super::StictionSpring>("acl.springs", 4 * sets.len())?;
        // Between steps the table is compact and no set is dirty or moved.
        if let Some(s) = sets
            .iter()
            .find(|s| s.flags & SET_LIVE == 0 || s.flags & !(SET_LIVE | SET_ZERO) != 0)
        {
            return Err(CheckpointError::bad(
                "acl.sets",
                format!("a set with flags {:#x} between steps", s.flags),
            ));
        }
        let lens = inp.get_len::<u64>("acl.pool_len", 3)?;
        let cp = inp.get::<u32>("acl.cp")?;
        let nc = cp.len();
        let f0 = inp.get_points_len("acl.f0", nc)?;
        let dbar = inp.get_points_len("acl.dbar", nc)?;
        let m = inp.get_len::<f32>("acl.m", nc)?;
        let k = inp.get::<model::SymBlock<f32>>("acl.k")?;
        let watch = inp.get::<super::WatchPair>("acl.watch")?;
        let watch_loc = inp.get_len::<super::WatchLoc>("acl.watch_loc", watch.len())?;
        // Boxes are only compared, and clamped to the scheduler's segments, so any values are safe.
        let released = inp.get::<crate::sched::Release>("acl.released")?;
        // The live ranges must fit the pools and account for every saved item.
        let live = || sets.iter().filter(|s| s.flags & SET_LIVE != 0);
        let sum = |f: &dyn Fn(&super::ContactSet) -> usize| {
            live()
                .try_fold(0usize, |acc, s| acc.checked_add(f(s)))
                .unwrap_or(usize::MAX)
        };
        check_len("acl.cp", nc, sum(&|s| s.n_cp as usize))?;
        check_len(
            "acl.k",
            k.len(),
            sum(&|s| {
                if s.flags & SET_ZERO == 0 {
                    model::tri_len(s.n_cp as usize)
                } else {
                    0
                }
            }),
        )?;
        check_len("acl.watch", watch.len(), sum(&|s| s.n_watch as usize))?;
        // Every pool item is in a live set's range or counted as garbage (allocation appends, a
        // freed range is counted, compaction keeps the live ranges only).
        let pool_len = |x: u64, live: usize, garbage: u64| {
            if (live as u64).checked_add(garbage) == Some(x) {
                Ok(x as usize)
            } else {
                Err(CheckpointError::bad(
                    "acl.pool_len",
                    format!("a pool of {x} items holds {live} live ones and {garbage} garbage"),
                ))
            }
        };
        let np = pool_len(lens[0], nc, c[7])?;
        let nk = pool_len(lens[1], k.len(), c[8])?;
        let nw = pool_len(lens[2], watch.len(), c[9])?;
        let range = |name: &str, off: u32, n: usize, len: usize| {
            if (off as usize).checked_add(n).is_some_and(|end| end <= len) {
                Ok(())
            } else {
                Err(CheckpointError::bad(
                    name,
                    format!("range {off}..+{n} beyond the pool of {len}"),
                ))
            }
        };
        for s in sets.iter().filter(|s| s.flags & SET_LIVE != 0) {
            let n = s.n_cp as usize;
            if !(s.bx[0] <= s.bx[1]
                && s.bx[2] <= s.bx[3]
                && (s.bx[1] as usize) < nq
                && (s.bx[3] as usize) < nq)
            {
                return Err(CheckpointError::bad(
                    "acl.sets",
                    format!("box {:?} outside the {nq} quadrature points", s.bx),
                ));
            }
            // Every set was rebuilt at least once, so it has control points (the springs and the
            // gather index into them).
            if n == 0 {
                return Err(CheckpointError::bad(
                    "acl.sets",
                    "a set without control points",
                ));
            }
            range("acl.sets", s.cp_off, n, np)?;
            if s.flags & SET_ZERO == 0 {
                range("acl.sets", s.k_off, model::tri_len(n), nk)?;
            }
            range("acl.sets", s.w_off, s.n_watch as usize, nw)?;
        }
        // The stages write the per-step scratch at the sets' point ranges in parallel: the ranges
        // must not overlap.
        let mut ranges: Vec<(u32, u32)> = live().map(|s| (s.cp_off, s.n_cp)).collect();
        ranges.sort_unstable();
        if let Some(w) = ranges
            .windows(2)
            .find(|w| w[0].0 as usize + w[0].1 as usize > w[1].0 as usize)
        {
            return Err(CheckpointError::bad(
                "acl.sets",
                format!(
                    "point ranges {}..+{} and {}..+{} overlap",
                    w[0].0, w[0].1, w[1].0, w[1].1
                ),
            ));
        }
        let (mut at_c, mut at_w) = (0usize, 0usize);
        for s in live() {
            let (n, nwatch) = (s.n_cp as usize, s.n_watch as usize);
            for (wp, loc) in watch[at_w..at_w + nwatch]
                .iter()
                .zip(&watch_loc[at_w..at_w + nwatch])
            {
                check_index("acl.watch", "quadrature point", wp.i as usize, nq)?;
                check_index("acl.watch", "quadrature point", wp.j as usize, nq)?;
                for l in loc.slots() {
                    check_index("acl.watch_loc", "set-local point", l as usize, n)?;
                }
            }
            at_c += n;
            at_w += nwatch;
        }
        debug_assert_eq!(at_c, nc);
        for &p in &cp {
            check_index("acl.cp", "control point", p as usize, num_points)?;
        }
        for sp in &springs {
            if sp.flags & super::SPRING_ACTIVE != 0 {
                check_index("acl.springs", "quadrature point", sp.i as usize, nq)?;
                check_index("acl.springs", "quadrature point", sp.j as usize, nq)?;
            }
        }
        // The per-topology tables as the first step made them (this resets the model), then the
        // scheduler (checked before it changes anything), then the sets and pools.
        self.prepare(topo);
        self.sched
            .import_state(inp, topo.segments.len(), num_points)?;
        self.step = step;
        self.garbage = PoolGarbage {
            cp: c[7] as usize,
            k: c[8] as usize,
            w: c[9] as usize,
        };
        self.sets = sets;
        self.springs = springs;
        // The pools at their saved lengths, each live range at its offset.
        let mut pools = Pools::default();
        pools.resize([np, nk, nw]);
        let (mut at_c, mut at_k, mut at_w) = (0usize, 0usize, 0usize);
        for s in &self.sets {
            let (o, n) = (s.cp_off as usize, s.n_cp as usize);
            pools.cp[o..o + n].copy_from_slice(&cp[at_c..at_c + n]);
            pools.f0[o..o + n].copy_from_slice(&f0[at_c..at_c + n]);
            pools.dbar[o..o + n].copy_from_slice(&dbar[at_c..at_c + n]);
            pools.m[o..o + n].copy_from_slice(&m[at_c..at_c + n]);
            at_c += n;
            if s.flags & SET_ZERO == 0 {
                let (ko, nkb) = (s.k_off as usize, model::tri_len(n));
                pools.k[ko..ko + nkb].copy_from_slice(&k[at_k..at_k + nkb]);
                at_k += nkb;
            }
            let (wo, nwatch) = (s.w_off as usize, s.n_watch as usize);
            pools.watch[wo..wo + nwatch].copy_from_slice(&watch[at_w..at_w + nwatch]);
            pools.watch_loc[wo..wo + nwatch].copy_from_slice(&watch_loc[at_w..at_w + nwatch]);
            at_w += nwatch;
        }
        self.pools = pools;
        self.index.build(&self.sets, self.nq);
        self.released = released;
        Ok(())
    }
}
