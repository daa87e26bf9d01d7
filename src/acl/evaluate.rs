//! Stage `set_evaluate`: every clean set's rotation, deviation and invalidation, and the
//! corotational force of those whose model is still valid (seed §4, DESIGN §4; the arithmetic is in
//! [`super::model`]).
//!
//! Reads the positions `pos`, the quadrature weights, the set headers and the model pools
//! (`cp_pool`, `f0_pool`, `dbar_pool`, `m_pool`, `k_pool`, `watch_pool`, `watch_loc_pool`); writes
//! each clean set's header (the rotation's quaternion, and [`SET_DIRTY`] when the model is no
//! longer valid) and its ranges of the per-step scratch pools `q_pool` (gathered points), `dev_pool`
//! (deviations) and `fout_pool` (the set's force on its points, for a valid model). Sets are
//! independent: each writes only its own header and ranges, so they run in parallel.
//!
//! # Invalidation
//!
//! The seed's metric (eq. 6), `max_i M_i 2r |Δ_i| / ε² > τ`, decides alone when
//! `contact.extra_invalidation = false`. It bounds how far the control points may stray, but not two
//! things that make a linear model of a penalty with a cutoff wrong at first order, and which dominate
//! in knits whose contacts are shallow (closest pairs near `2r`, as the generated swatches relax to):
//! on the falling 4×4 swatch of tests/acl.rs, eq. 6 alone gives a mean relative force error of 65% at
//! τ = 0.04. So by default two more criteria rebuild a set:
//! - *Threshold crossings.* At a rebuild the set records its member pairs closest to `2r` (up to
//!   [`super::MAX_WATCH`], sorted, with `d − 2r`) and the smallest `|d − 2r|` of the others. Rigid
//!   motions keep distances, so no pair distance changed by more than `2 · 1.25 · max|Δ_i|`
//!   (`1.25 = max Σ|B_k|`). Beyond the unwatched pairs' margin the set is rebuilt; beyond a watched
//!   pair's margin that pair is measured, and the pairs that crossed `2r` (entered: missing from the
//!   model; left: the model extrapolates a spurious force) are charged the force of a pair as deep as
//!   they crossed. Rebuild when that exceeds τ times the set's pair force at the rebuild (any
//!   crossing for a zero-force set: a new contact inside it).
//! - *Force change.* Rebuild when the model's force has moved by more than `2√τ` of the force at the
//!   rebuild (`Σ|K̄Δ| > 2√τ Σ|f0|`): the model's error is second order in that change (for a force
//!   growing as the square of the depth exactly `τ` at the bound), so it bounds the relative error.
//!
//! With them the measured error is about 0.01% / 0.2% / 11% at τ = 0.004 / 0.04 / 0.3
//! (tests/acl.rs).

use super::model::{self, SymBlock};
use super::rebuild::{WatchLoc, WatchPair};
use super::sets::{ContactSet, SET_DIRTY, SET_ZERO};
use super::{prefetch, SyncPtr};
use crate::contact::ContactError;
use crate::math::V3;
use rayon::prelude::*;

/// Sets per task of the parallel `set_evaluate` stage.
const EVAL_CHUNK: usize = 256;

/// `max_t Σ_k |B_k(t)| = 1 + max t(1 − t)`: a control-point deviation `δ` moves a curve point by at
/// most `1.25 δ`, so a pair distance changes by at most `2.5 δ`.
pub const BASIS_ABS_SUM_MAX: f32 = 1.25;

/// The constants of `set_evaluate` (the kernel's uniform).
#[derive(Clone, Copy, Debug)]
pub struct EvalParams {
    /// Quadrature points per segment.
    pub b: u32,
    /// Yarn radius.
    pub r: f32,
    /// τ.
    pub tolerance: f32,
    /// `contact.extra_invalidation`.
    pub extra: bool,
}

/// The read-only buffers of the `set_evaluate` stage.
struct EvalCtx<'a> {
    p: EvalParams,
    pos: &'a [[f32; 4]],
    weights: &'a [[f32; 4]],
    cp_pool: &'a [u32],
    f0_pool: &'a [[f32; 4]],
    dbar_pool: &'a [[f32; 4]],
    m_pool: &'a [f32],
    k_pool: &'a [SymBlock<f32>],
    watch_pool: &'a [WatchPair],
    watch_loc_pool: &'a [WatchLoc],
}

/// Stage `set_evaluate` over all clean sets (see the module doc). The scratch pools must be at least
/// as long as the point pools. On a non-finite rotation it returns the error of the first such set
/// in set order.
#[allow(clippy::too_many_arguments)]
pub fn set_evaluate(
    params: &EvalParams,
    pos: &[[f32; 4]],
    weights: &[[f32; 4]],
    cp_pool: &[u32],
    f0_pool: &[[f32; 4]],
    dbar_pool: &[[f32; 4]],
    m_pool: &[f32],
    k_pool: &[SymBlock<f32>],
    watch_pool: &[WatchPair],
    watch_loc_pool: &[WatchLoc],
    sets: &mut [ContactSet],
    q_pool: &mut [V3<f32>],
    dev_pool: &mut [V3<f32>],
    fout_pool: &mut [V3<f32>],
) -> Result<(), ContactError> {
    assert!(q_pool.len() >= cp_pool.len() && dev_pool.len() >= cp_pool.len());
    assert!(fout_pool.len() >= cp_pool.len());
    let ctx = EvalCtx {
        p: *params,
        pos,
        weights,
        cp_pool,
        f0_pool,
        dbar_pool,
        m_pool,
        k_pool,
        watch_pool,
        watch_loc_pool,
    };
    let (qp, dp, fp) = (
        SyncPtr::new(q_pool),
        SyncPtr::new(dev_pool),
        SyncPtr::new(fout_pool),
    );
    // Chunks of sets, each walked in order with the pools of the set 2 ahead prefetched. The first
    // error in set order is kept (chunks are in set order, and each stops at its first).
    let errors: Option<(usize, ContactError)> = sets
        .par_chunks_mut(EVAL_CHUNK)
        .enumerate()
        .filter_map(|(c, chunk)| {
            for k in 0..chunk.len() {
                if let Some(next) = chunk.get(k + 2) {
                    ctx.prefetch_set(next, [qp, dp, fp]);
                }
                let s = &mut chunk[k];
                if !s.is_clean() {
                    continue;
                }
                let (o, n) = (s.cp_off as usize, s.n_cp as usize);
                // SAFETY: live sets own disjoint pool ranges, all inside the point pools (the
                // scratch pools are at least as long, asserted above).
                let (q, dev, fout) = unsafe { (qp.slice(o, n), dp.slice(o, n), fp.slice(o, n)) };
                match ctx.set_evaluate(s, q, dev, fout) {
                    Ok(true) => s.flags |= SET_DIRTY,
                    Ok(false) => {}
                    Err(e) => return Some((c * EVAL_CHUNK + k, e)),
                }
            }
            None
        })
        .min_by_key(|(k, _)| *k);
    match errors {
        Some((_, e)) => Err(e),
        None => Ok(()),
    }
}

impl EvalCtx<'_> {
    /// Quadrature point `i` from the set's gathered control points `q` (`loc`: the set-local indices of
    /// its segment's 4 control points); the same arithmetic as the exact path's quadrature points.
    /// `half`: 0 for the pair's `i` side (slots 0–3), 1 for its `j` side (slots 4–7).
    #[inline]
    fn quad_point_local(&self, q: &[V3<f32>], loc: &WatchLoc, half: usize, i: u32) -> V3<f32> {
        let w = &self.weights[(i % self.p.b) as usize];
        let (a, b) = (loc.loc[2 * half], loc.loc[2 * half + 1]);
        q[(a & 0xffff) as usize] * w[0]
            + q[(a >> 16) as usize] * w[1]
            + q[(b & 0xffff) as usize] * w[2]
            + q[(b >> 16) as usize] * w[3]
    }

    /// Estimated force error of the watched pairs of set `s` that crossed the contact distance since
    /// the rebuild: for a pair now at distance `d` the force a touching pair has at `2r − |d − 2r|`.
    /// Near `2r` the pair force is linear in the depth, so this is the force of a pair that entered
    /// (missing from the model) and the linear model's spurious force on one that left.
    /// Only pairs with `|gap| ≤ bound` (the largest possible change of a pair distance) can have
    /// crossed; the list is sorted by `|gap|`, so the scan stops at the first farther one.
    /// `q`: the set's control points (current positions).
    fn crossing_error(&self, s: &ContactSet, q: &[V3<f32>], bound: f32) -> f32 {
        let r = self.p.r;
        let mut err = 0.0f32;
        let range = s.w_off as usize..(s.w_off + s.n_watch) as usize;
        for (w, loc) in self.watch_pool[range.clone()]
            .iter()
            .zip(&self.watch_loc_pool[range])
        {
            if w.gap.abs() > bound {
                break;
            }
            let d = (self.quad_point_local(q, loc, 0, w.i) - self.quad_point_local(q, loc, 1, w.j))
                .norm();
            if (d < 2.0 * r) != (w.gap < 0.0) {
                let dm = 2.0 * r - (d - 2.0 * r).abs();
                let (_, df, _) = crate::contact::penalty(dm * dm, r);
                err += 2.0 * w.kw * df.abs() * dm;
            }
        }
        err
    }

    /// Hints the CPU to fetch the start of set `s`'s pool ranges (the pools are in allocation order
    /// between compactions, not set order, so without it every set starts with a cache miss in each
    /// pool).
    #[inline]
    fn prefetch_set(&self, s: &ContactSet, scratch: [SyncPtr<V3<f32>>; 3]) {
        if !s.is_clean() {
            return;
        }
        let (o, w) = (s.cp_off as usize, s.w_off as usize);
        prefetch(self.cp_pool.as_ptr().wrapping_add(o));
        prefetch(self.dbar_pool.as_ptr().wrapping_add(o));
        prefetch(self.m_pool.as_ptr().wrapping_add(o));
        prefetch(self.watch_pool.as_ptr().wrapping_add(w));
        prefetch(self.watch_loc_pool.as_ptr().wrapping_add(w));
        for p in scratch {
            prefetch(p.ptr().wrapping_add(o));
        }
        if s.flags & SET_ZERO == 0 {
            prefetch(self.f0_pool.as_ptr().wrapping_add(o));
            prefetch(self.k_pool.as_ptr().wrapping_add(s.k_off as usize));
        }
    }

    /// `set_evaluate` for one clean set: rotation (warm-started from and stored back into the
    /// header), deviation, invalidation; when the model is still valid its corotational force into
    /// `fout`. `q`, `dev`, `fout` are the set's ranges of the per-step scratch pools. Returns true when
    /// the set must be rebuilt.
    fn set_evaluate(
        &self,
        s: &mut ContactSet,
        q: &mut [V3<f32>],
        dev: &mut [V3<f32>],
        fout: &mut [V3<f32>],
    ) -> Result<bool, ContactError> {
        let (o, n) = (s.cp_off as usize, s.n_cp as usize);
        for t in 0..n {
            q[t] = V3::from4(self.pos[self.cp_pool[o + t] as usize]);
            fout[t] = V3::from4(self.dbar_pool[o + t]);
        }
        let (c, polar) =
            model::set_rotation(q, fout, s.quat).map_err(|_| ContactError::NotFinite {
                point: self.cp_pool[o] as usize,
            })?;
        s.quat = polar.quat;
        model::set_deviation(q, c, &polar.r, fout, dev);
        let (metric, maxdev) =
            model::set_metric_and_max_deviation(dev, &self.m_pool[o..o + n], self.p.r, s.eps);
        if !(metric <= self.p.tolerance) {
            return Ok(true);
        }
        if self.p.extra {
            // Rigid motions keep distances, so a member pair's distance changed by at most
            // 2 · 1.25 · max|Δ| since the rebuild.
            let bound = 2.0 * BASIS_ABS_SUM_MAX * maxdev;
            if bound >= s.guard_far {
                // An unwatched pair may have crossed 2r.
                return Ok(true);
            }
            if bound >= s.guard_near
                && self.crossing_error(s, q, bound) > self.p.tolerance * s.f_ref
            {
                return Ok(true);
            }
        }
        if s.flags & SET_ZERO != 0 {
            fout.fill(V3::zero());
            return Ok(false);
        }
        // f0 into q (no longer needed) as the kernel's input.
        for t in 0..n {
            q[t] = V3::from4(self.f0_pool[o + t]);
        }
        let nk = model::tri_len(n);
        model::corotational_force(
            &polar.r,
            q,
            &self.k_pool[s.k_off as usize..s.k_off as usize + nk],
            dev,
            fout,
        );
        if self.p.extra {
            // The linear model's change of force since the rebuild, relative to the force then. Its
            // error is second order in that change: for a force growing as the square of the depth,
            // F = b g², a change ΔF = 2bg δ has the error bδ² = ΔF²/(4F), so bounding the relative
            // change by 2√τ bounds the relative error by τ. Beyond it the contact is loading or
            // unloading too far for its linear model: rebuild.
            let (mut change, mut reference) = (0.0f32, 0.0f32);
            for t in 0..n {
                let f0 = polar.r.mul_v(q[t]);
                change += (fout[t] - f0).norm();
                reference += f0.norm();
            }
            if change > 2.0 * self.p.tolerance.sqrt() * reference {
                return Ok(true);
            }
        }
        Ok(false)
    }
}
