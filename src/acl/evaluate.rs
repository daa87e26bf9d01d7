//! Stage `set_evaluate`: a clean set's rotation, deviation and invalidation, and the corotational
//! force of a set whose model is still valid.

use super::model::{self, SymBlock};
use super::{AclContact, ContactSet, WatchPair, SET_DIRTY, SET_LIVE, SET_ZERO};
use crate::contact::ContactError;
use crate::math::V3;
use crate::sched::prefetch;

/// Sets per task of the parallel `set_evaluate` stage.
pub(crate) const EVAL_CHUNK: usize = 256;

/// `max_t Σ_k |B_k(t)| = 1 + max t(1 − t)`: a control-point deviation `δ` moves a curve point by at
/// most `1.25 δ`, so a pair distance changes by at most `2.5 δ`.
pub const BASIS_ABS_SUM_MAX: f32 = 1.25;

/// The read-only buffers of the `set_evaluate` stage.
pub(crate) struct EvalCtx<'a> {
    pos: &'a [[f32; 4]],
    cp_pool: &'a [u32],
    f0_pool: &'a [[f32; 4]],
    dbar_pool: &'a [[f32; 4]],
    m_pool: &'a [f32],
    k_pool: &'a [SymBlock<f32>],
    watch_pool: &'a [WatchPair],
    watch_loc_pool: &'a [[u16; 8]],
    weights: &'a [[f32; 4]],
    b: u32,
    r: f32,
    tolerance: f32,
    extra: bool,
}

impl EvalCtx<'_> {
    /// Quadrature point `i` from the set's gathered control points `q` (`loc`: the set-local indices of
    /// its segment's 4 control points); the same arithmetic as the exact path's quadrature points.
    #[inline]
    fn quad_point_local(&self, q: &[V3<f32>], loc: &[u16], i: u32) -> V3<f32> {
        let w = &self.weights[(i % self.b) as usize];
        q[loc[0] as usize] * w[0]
            + q[loc[1] as usize] * w[1]
            + q[loc[2] as usize] * w[2]
            + q[loc[3] as usize] * w[3]
    }

    /// Estimated force error of the watched pairs of set `s` that crossed the contact distance since
    /// the rebuild: for a pair now at distance `d` the force a touching pair has at `2r − |d − 2r|`.
    /// Near `2r` the pair force is linear in the depth, so this is the force of a pair that entered
    /// (missing from the model) and the linear model's spurious force on one that left.
    /// Only pairs with `|gap| ≤ bound` (the largest possible change of a pair distance) can have
    /// crossed; the list is sorted by `|gap|`, so the scan stops at the first farther one.
    /// `q`: the set's control points (current positions).
    fn crossing_error(&self, s: &ContactSet, q: &[V3<f32>], bound: f32) -> f32 {
        let r = self.r;
        let mut err = 0.0f32;
        let range = s.w_off as usize..(s.w_off + s.n_watch) as usize;
        for (w, loc) in self.watch_pool[range.clone()]
            .iter()
            .zip(&self.watch_loc_pool[range])
        {
            if w.gap.abs() > bound {
                break;
            }
            let d = (self.quad_point_local(q, &loc[..4], w.i)
                - self.quad_point_local(q, &loc[4..], w.j))
            .norm();
            if (d < 2.0 * r) != (w.gap < 0.0) {
                let dm = 2.0 * r - (d - 2.0 * r).abs();
                let (_, df, _) = crate::contact::penalty(dm * dm, r);
                err += 2.0 * w.kw * df.abs() * dm;
            }
        }
        err
    }

    /// Hints the CPU to fetch the start of set `s`'s pool ranges (the pools are in allocation order,
    /// not set order, so without it every set starts with a cache miss in each pool).
    #[inline]
    pub(crate) fn prefetch_set(&self, s: &ContactSet, scratch: [PoolPtr; 3]) {
        if s.flags & SET_LIVE == 0 || s.flags & SET_DIRTY != 0 {
            return;
        }
        let (o, w) = (s.cp_off as usize, s.w_off as usize);
        prefetch(self.cp_pool.as_ptr().wrapping_add(o));
        prefetch(self.dbar_pool.as_ptr().wrapping_add(o));
        prefetch(self.m_pool.as_ptr().wrapping_add(o));
        prefetch(self.watch_pool.as_ptr().wrapping_add(w));
        prefetch(self.watch_loc_pool.as_ptr().wrapping_add(w));
        for p in scratch {
            prefetch(p.0.wrapping_add(o));
        }
        if s.flags & SET_ZERO == 0 {
            prefetch(self.f0_pool.as_ptr().wrapping_add(o));
            prefetch(self.k_pool.as_ptr().wrapping_add(s.k_off as usize));
        }
    }

    /// Stage `set_evaluate` for one clean set: rotation (warm-started from and stored back into the
    /// header), deviation, invalidation; when the model is still valid its corotational force into
    /// `fout`. `q`, `dev`, `fout` are the set's ranges of the per-step scratch pools. Returns true when
    /// the set must be rebuilt.
    pub(crate) fn set_evaluate(
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
            model::set_metric_and_max_deviation(dev, &self.m_pool[o..o + n], self.r, s.eps);
        if !(metric <= self.tolerance) {
            return Ok(true);
        }
        if self.extra {
            // Rigid motions keep distances, so a member pair's distance changed by at most
            // 2 · 1.25 · max|Δ| since the rebuild.
            let bound = 2.0 * BASIS_ABS_SUM_MAX * maxdev;
            if bound >= s.guard_far {
                // An unwatched pair may have crossed 2r.
                return Ok(true);
            }
            if bound >= s.guard_near && self.crossing_error(s, q, bound) > self.tolerance * s.f_ref
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
        if self.extra {
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
            if change > 2.0 * self.tolerance.sqrt() * reference {
                return Ok(true);
            }
        }
        Ok(false)
    }
}

/// Raw base pointer of a per-step scratch pool that the parallel `set_evaluate` stage writes at
/// disjoint ranges (each set owns `[cp_off, cp_off + n_cp)`, handed out by the pool allocator).
#[derive(Clone, Copy)]
pub(crate) struct PoolPtr(pub(crate) *mut V3<f32>);
// SAFETY: the pointer is only dereferenced through `range`, at ranges no two sets share.
unsafe impl Send for PoolPtr {}
unsafe impl Sync for PoolPtr {}

impl PoolPtr {
    /// # Safety
    /// `[off, off + n)` must lie inside the pool and no other live reference may overlap it.
    #[allow(clippy::mut_from_ref)]
    pub(crate) unsafe fn range(&self, off: usize, n: usize) -> &mut [V3<f32>] {
        std::slice::from_raw_parts_mut(self.0.add(off), n)
    }
}

impl AclContact {
    pub(crate) fn eval_ctx<'a>(&'a self, pos: &'a [[f32; 4]]) -> EvalCtx<'a> {
        EvalCtx {
            pos,
            cp_pool: &self.cp_pool,
            f0_pool: &self.f0_pool,
            dbar_pool: &self.dbar_pool,
            m_pool: &self.m_pool,
            k_pool: &self.k_pool,
            watch_pool: &self.watch_pool,
            watch_loc_pool: &self.watch_loc_pool,
            weights: &self.table.weights,
            b: self.b,
            r: self.r,
            tolerance: self.params.tolerance,
            extra: self.params.extra_invalidation,
        }
    }
}
