//! Stage `set_evaluate`: every clean set's rotation, deviation and invalidation, and the
//! corotational force of those whose model is still valid (seed §4, DESIGN §4; the arithmetic is in
//! [`super::model`]).
//!
//! Reads the positions `pos`, the quadrature weights (in the `acl` uniform, [`AclUniform`]), the set
//! headers and the model pools (`cp_pool`, `f0_pool`, `dbar_pool`, `m_pool`, `k_pool`,
//! `watch_pool`, `watch_loc_pool`); writes each clean set's header (the rotation's quaternion, and
//! [`SET_DIRTY`] when the model is no longer valid) and its ranges of the per-step pools `dev_pool`
//! (deviations) and `fout_pool` (the set's force on its points, for a valid model; `[f32; 4]`, w =
//! 0). Sets are independent: each writes only its own header and ranges, so they run in parallel.
//!
//! # Two kernels, one CPU pass
//!
//! On the GPU the stage is two kernels (a kernel binds at most 8 storage buffers):
//! - `set_evaluate` (16 lanes per set, four sets per workgroup: the lanes load the points and
//!   compute the deviations, one sums and decomposes in the twin's order): centre of mass,
//!   warm-started rotation, deviations into `dev_pool`, the invalidation by eq. 6, the watched pairs
//!   and the guards; a set whose rotation is not finite gets [`SET_NOT_FINITE`];
//! - `set_force` (16 lanes per set, four sets per workgroup, a lane per row): the corotational force
//!   of every set still clean into `fout_pool` (zero for a [`SET_ZERO`] set), then the
//!   force-change criterion; it raises the errors of `set_evaluate`'s sets in `acl_counters`.
//!
//! The two functions of those names are their CPU twins. The CPU step runs both halves set by set
//! in one pass ([`set_evaluate_and_force`]: the same per-set code, so the same results), reading
//! each set's pools once. The kernels leave sets of more than [`MAX_SET_POINTS`] control points
//! alone (raising [`ACL_ERROR_SET_TOO_BIG`]), and so do their twins; the CPU pass has no limit.
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
use super::pages::PoolPage;
use super::rebuild::{WatchLoc, WatchPair};
use super::sets::{ContactSet, SET_DIRTY, SET_NOT_FINITE, SET_ZERO};
use super::{prefetch, SyncPtr};
use crate::contact::ContactError;
use crate::layout::{
    AclCounters, AclUniform, ACL_ERROR_NOT_FINITE, ACL_ERROR_SET_TOO_BIG, ACL_EXTRA_INVALIDATION,
};
use crate::math::{M3, V3};
use crate::polar::quat_to_matrix;
use rayon::prelude::*;

/// Sets per task of the parallel `set_evaluate` stage.
const EVAL_CHUNK: usize = 256;

/// `max_t Σ_k |B_k(t)| = 1 + max t(1 − t)`: a control-point deviation `δ` moves a curve point by at
/// most `1.25 δ`, so a pair distance changes by at most `2.5 δ`.
pub const BASIS_ABS_SUM_MAX: f32 = 1.25;

/// Most control points of a set the GPU kernels evaluate (shaders/shared/acl.wgsl
/// `ACL_MAX_SET_POINTS`): it bounds their loops under lavapipe's 65,535 iterations per invocation
/// (`set_evaluate`: 5 n + the rotation's 2,600; `set_force`, 16 lanes a set: ⌈n / 16⌉ (1 + n) + n
/// = 64,575 per thread, and 1,008 is the largest multiple of 16 that keeps it under).
/// A set of 1,008 points would hold 508k blocks of `K̄` (12 MB); the sets of a knit have tens.
pub const MAX_SET_POINTS: u32 = 1008;

/// Threads per set of the kernels `set_evaluate`, `set_force` and `set_point_write`
/// (shaders/shared/acl.wgsl `ACL_SET_LANES`): a set has some 9 points, so 16 lanes, a lane per
/// point or row, keep most of them busy; their dispatches run this many threads per set slot.
pub const SET_LANES: u32 = 16;

/// The read-only buffers of the first half (`set_evaluate`).
#[derive(Clone, Copy)]
struct EvalCtx<'a> {
    p: &'a AclUniform,
    pos: &'a [[f32; 4]],
    cp_pool: &'a [u32],
    dbar_pool: &'a [[f32; 4]],
    m_pool: &'a [f32],
    watch_pool: &'a [WatchPair],
    watch_loc_pool: &'a [WatchLoc],
    /// The flat offset of the watch pools' first entry (a page's, [`super::pages`]; else 0).
    watch_base: usize,
}

/// What the first half decided for a set.
enum Rotation {
    /// The model must be rebuilt.
    Dirty,
    /// Still valid: its rotation.
    Valid(M3<f32>),
}

/// The first half's failure: the set's rotation is not finite.
struct NotFinite;

impl EvalCtx<'_> {
    /// Quadrature point `i` from the set's gathered control points `q` (`loc`: the set-local indices
    /// of its segment's 4 control points, slots `c0..c0 + 4` of the packed `loc`); the same
    /// arithmetic as the exact path's quadrature points.
    #[inline]
    fn quad_point_local(&self, q: &[V3<f32>], loc: &WatchLoc, c0: usize, i: u32) -> V3<f32> {
        let w = &self.p.weights[(i % self.p.quadrature) as usize];
        q[loc.slot(c0) as usize] * w[0]
            + q[loc.slot(c0 + 1) as usize] * w[1]
            + q[loc.slot(c0 + 2) as usize] * w[2]
            + q[loc.slot(c0 + 3) as usize] * w[3]
    }

    /// Estimated force error of the watched pairs of set `s` that crossed the contact distance since
    /// the rebuild: for a pair now at distance `d` the force a touching pair has at `2r − |d − 2r|`.
    /// Near `2r` the pair force is linear in the depth, so this is the force of a pair that entered
    /// (missing from the model) and the linear model's spurious force on one that left.
    /// Only pairs with `|gap| ≤ bound` (the largest possible change of a pair distance) can have
    /// crossed; the list is sorted by `|gap|`, so the scan stops at the first farther one.
    /// `q`: the set's control points (current positions).
    fn crossing_error(&self, s: &ContactSet, q: &[V3<f32>], bound: f32) -> f32 {
        let r = self.p.radius;
        let mut err = 0.0f32;
        if s.n_watch == 0 {
            // (Its offset may be past the pools' page: PoolPage::holds_range.)
            return 0.0;
        }
        let w0 = s.w_off as usize - self.watch_base;
        let range = w0..w0 + s.n_watch as usize;
        for (w, loc) in self.watch_pool[range.clone()]
            .iter()
            .zip(&self.watch_loc_pool[range])
        {
            if w.gap.abs() > bound {
                break;
            }
            let d = (self.quad_point_local(q, loc, 0, w.i) - self.quad_point_local(q, loc, 4, w.j))
                .norm();
            if (d < 2.0 * r) != (w.gap < 0.0) {
                let dm = 2.0 * r - (d - 2.0 * r).abs();
                let (_, df, _) = crate::contact::penalty(dm * dm, r);
                err += 2.0 * w.kw * df.abs() * dm;
            }
        }
        err
    }

    /// The first half for one clean set: its points gathered into `q`, rotation (warm-started from
    /// and stored back into the header), deviation into `dev`, invalidation.
    fn rotation(
        &self,
        s: &mut ContactSet,
        q: &mut [V3<f32>],
        dev: &mut [[f32; 4]],
    ) -> Result<Rotation, NotFinite> {
        let (o, n) = (s.cp_off as usize, s.n_cp as usize);
        for t in 0..n {
            q[t] = V3::from4(self.pos[self.cp_pool[o + t] as usize]);
        }
        let dbar = &self.dbar_pool[o..o + n];
        let (c, polar) = model::set_rotation(q, dbar, s.quat).map_err(|_| NotFinite)?;
        s.quat = polar.quat;
        model::set_deviation(q, c, &polar.r, dbar, dev);
        let (metric, maxdev) =
            model::set_metric_and_max_deviation(dev, &self.m_pool[o..o + n], self.p.radius, s.eps);
        if !(metric <= self.p.tolerance) {
            return Ok(Rotation::Dirty);
        }
        if self.p.flags & ACL_EXTRA_INVALIDATION != 0 {
            // Rigid motions keep distances, so a member pair's distance changed by at most
            // 2 · 1.25 · max|Δ| since the rebuild.
            let bound = 2.0 * BASIS_ABS_SUM_MAX * maxdev;
            if bound >= s.guard_far {
                // An unwatched pair may have crossed 2r.
                return Ok(Rotation::Dirty);
            }
            if bound >= s.guard_near
                && self.crossing_error(s, q, bound) > self.p.tolerance * s.f_ref
            {
                return Ok(Rotation::Dirty);
            }
        }
        Ok(Rotation::Valid(polar.r))
    }
}

/// The second half for one set still valid, of rotation `r`: its corotational force into `fout`
/// (zero for a zero-force set) and the force-change criterion; true when the set must be rebuilt.
/// `k_pool` holds the pool from flat offset `k_base` on (a page's, [`super::pages`]).
#[allow(clippy::too_many_arguments)]
fn set_force_one(
    p: &AclUniform,
    s: &ContactSet,
    r: &M3<f32>,
    f0: &[[f32; 4]],
    k_pool: &[SymBlock<f32>],
    k_base: usize,
    dev: &[[f32; 4]],
    fout: &mut [[f32; 4]],
) -> bool {
    if s.flags & SET_ZERO != 0 {
        fout.fill([0.0; 4]);
        return false;
    }
    let n = f0.len();
    let nk = model::tri_len(n);
    let k = s.k_off as usize - k_base;
    model::corotational_force(r, f0, &k_pool[k..k + nk], dev, fout);
    if p.flags & ACL_EXTRA_INVALIDATION != 0 {
        // The linear model's change of force since the rebuild, relative to the force then. Its
        // error is second order in that change: for a force growing as the square of the depth,
        // F = b g², a change ΔF = 2bg δ has the error bδ² = ΔF²/(4F), so bounding the relative
        // change by 2√τ bounds the relative error by τ. Beyond it the contact is loading or
        // unloading too far for its linear model: rebuild.
        let (change, reference) = force_change(r, f0, fout);
        if change > 2.0 * p.tolerance.sqrt() * reference {
            return true;
        }
    }
    false
}

/// `(Σ_t |fout_t − R f0_t|, Σ_t |R f0_t|)`, summed in point order.
#[inline]
pub fn force_change(r: &M3<f32>, f0: &[[f32; 4]], fout: &[[f32; 4]]) -> (f32, f32) {
    let (mut change, mut reference) = (0.0f32, 0.0f32);
    for t in 0..f0.len() {
        let rf0 = r.mul_v(V3::from4(f0[t]));
        change += (V3::from4(fout[t]) - rf0).norm();
        reference += rf0.norm();
    }
    (change, reference)
}

/// Kernel `set_evaluate`'s twin (the first half, see the module doc) over the clean sets of at most
/// [`MAX_SET_POINTS`] points: the rotation into the header, the deviations into `dev_pool`,
/// [`SET_DIRTY`] when eq. 6 or the crossing criteria invalidate the model, [`SET_NOT_FINITE`] when the
/// rotation is not finite. The watch pools may be page `watch_pool_page` of paged ones
/// ([`super::pages`]): only the sets whose watched pairs live there (a set without any: page 0)
/// are evaluated; [`PoolPage::whole`] unpaged.
#[allow(clippy::too_many_arguments)]
pub fn set_evaluate(
    acl: &AclUniform,
    pos: &[[f32; 4]],
    cp_pool: &[u32],
    dbar_pool: &[[f32; 4]],
    m_pool: &[f32],
    watch_pool: &[WatchPair],
    watch_loc_pool: &[WatchLoc],
    sets: &mut [ContactSet],
    dev_pool: &mut [[f32; 4]],
    watch_pool_page: &PoolPage,
) {
    let ctx = EvalCtx {
        p: acl,
        pos,
        cp_pool,
        dbar_pool,
        m_pool,
        watch_pool,
        watch_loc_pool,
        watch_base: watch_pool_page.base() as usize,
    };
    let dp = SyncPtr::new(dev_pool);
    sets.par_iter_mut()
        .with_min_len(EVAL_CHUNK)
        .for_each_init(Vec::new, |q, s| {
            let here = watch_pool_page.holds_range(s.w_off, s.n_watch);
            if !s.is_clean() || s.n_cp > MAX_SET_POINTS || !here {
                return;
            }
            let (o, n) = (s.cp_off as usize, s.n_cp as usize);
            q.resize(n, V3::zero());
            // SAFETY: live sets own disjoint ranges of the point pools.
            let dev = unsafe { dp.slice(o, n) };
            match ctx.rotation(s, q, dev) {
                Ok(Rotation::Dirty) => s.flags |= SET_DIRTY,
                Ok(Rotation::Valid(_)) => {}
                Err(NotFinite) => s.flags |= SET_NOT_FINITE,
            }
        });
}

/// Kernel `set_force`'s twin (the second half, see the module doc): for every clean set of at most
/// [`MAX_SET_POINTS`] points, the corotational force under the rotation of its header's quaternion
/// (the one `set_evaluate` stored: `polar_decompose` returns `R = quat_to_matrix(q)`), the
/// force-change criterion; the errors of the sets (too big, rotation not finite) into
/// `acl_counters`. `k_pool` is page `block_page.page` of the blocks pool
/// ([`super::pages`]): only the sets of that page get a non-zero force (the zero forces and the
/// errors are the same for every page); [`PoolPage::whole`] for an unpaged pool.
#[allow(clippy::too_many_arguments)]
pub fn set_force(
    acl: &AclUniform,
    sets: &mut [ContactSet],
    f0_pool: &[[f32; 4]],
    k_pool: &[SymBlock<f32>],
    dev_pool: &[[f32; 4]],
    fout_pool: &mut [[f32; 4]],
    acl_counters: &mut AclCounters,
    block_page: &PoolPage,
) {
    let k_base = block_page.base() as usize;
    let fp = SyncPtr::new(fout_pool);
    let errors = sets
        .par_iter_mut()
        .enumerate()
        .with_min_len(EVAL_CHUNK)
        .map(|(k, s)| {
            if !s.is_clean() {
                return (0, u32::MAX);
            }
            if s.n_cp > MAX_SET_POINTS {
                return (ACL_ERROR_SET_TOO_BIG, u32::MAX);
            }
            if s.flags & SET_NOT_FINITE != 0 {
                return (ACL_ERROR_NOT_FINITE, k as u32);
            }
            if s.flags & SET_ZERO == 0 && !block_page.holds(s.k_off) {
                return (0, u32::MAX);
            }
            let (o, n) = (s.cp_off as usize, s.n_cp as usize);
            // SAFETY: live sets own disjoint ranges of the point pools.
            let fout = unsafe { fp.slice(o, n) };
            let r = quat_to_matrix(s.quat);
            let f0 = &f0_pool[o..o + n];
            if set_force_one(acl, s, &r, f0, k_pool, k_base, &dev_pool[o..o + n], fout) {
                s.flags |= SET_DIRTY;
            }
            (0, u32::MAX)
        })
        .reduce(|| (0, u32::MAX), |a, b| (a.0 | b.0, a.1.min(b.1)));
    acl_counters.errors |= errors.0;
    acl_counters.first_bad_set = acl_counters.first_bad_set.min(errors.1);
}

/// Stage `set_evaluate` of the CPU step: both halves ([`set_evaluate`], [`set_force`]) set by set in
/// one pass over all clean sets, of any size (see the module doc). `q_pool` is scratch for the
/// gathered points; the pools must be at least as long as the point pools. On a non-finite rotation
/// it returns the error of the first such set in set order.
#[allow(clippy::too_many_arguments)]
pub fn set_evaluate_and_force(
    acl: &AclUniform,
    pos: &[[f32; 4]],
    cp_pool: &[u32],
    f0_pool: &[[f32; 4]],
    dbar_pool: &[[f32; 4]],
    m_pool: &[f32],
    k_pool: &[SymBlock<f32>],
    watch_pool: &[WatchPair],
    watch_loc_pool: &[WatchLoc],
    sets: &mut [ContactSet],
    q_pool: &mut [V3<f32>],
    dev_pool: &mut [[f32; 4]],
    fout_pool: &mut [[f32; 4]],
) -> Result<(), ContactError> {
    assert!(q_pool.len() >= cp_pool.len() && dev_pool.len() >= cp_pool.len());
    assert!(fout_pool.len() >= cp_pool.len());
    let ctx = EvalCtx {
        p: acl,
        pos,
        cp_pool,
        dbar_pool,
        m_pool,
        watch_pool,
        watch_loc_pool,
        watch_base: 0,
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
                    prefetch_set(&ctx, f0_pool, k_pool, next, qp, [dp, fp]);
                }
                let s = &mut chunk[k];
                if !s.is_clean() {
                    continue;
                }
                let (o, n) = (s.cp_off as usize, s.n_cp as usize);
                // SAFETY: live sets own disjoint pool ranges, all inside the point pools (the
                // scratch pools are at least as long, asserted above).
                let (q, dev, fout) = unsafe { (qp.slice(o, n), dp.slice(o, n), fp.slice(o, n)) };
                match ctx.rotation(s, q, dev) {
                    Ok(Rotation::Dirty) => s.flags |= SET_DIRTY,
                    Ok(Rotation::Valid(r)) => {
                        if set_force_one(acl, s, &r, &f0_pool[o..o + n], k_pool, 0, dev, fout) {
                            s.flags |= SET_DIRTY;
                        }
                    }
                    Err(NotFinite) => {
                        let point = cp_pool[o] as usize;
                        return Some((c * EVAL_CHUNK + k, ContactError::NotFinite { point }));
                    }
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

/// Hints the CPU to fetch the start of set `s`'s pool ranges (the pools are in allocation order
/// between compactions, not set order, so without it every set starts with a cache miss in each
/// pool).
#[inline]
fn prefetch_set(
    ctx: &EvalCtx<'_>,
    f0_pool: &[[f32; 4]],
    k_pool: &[SymBlock<f32>],
    s: &ContactSet,
    q: SyncPtr<V3<f32>>,
    scratch: [SyncPtr<[f32; 4]>; 2],
) {
    if !s.is_clean() {
        return;
    }
    let (o, w) = (s.cp_off as usize, s.w_off as usize);
    prefetch(ctx.cp_pool.as_ptr().wrapping_add(o));
    prefetch(ctx.dbar_pool.as_ptr().wrapping_add(o));
    prefetch(ctx.m_pool.as_ptr().wrapping_add(o));
    prefetch(ctx.watch_pool.as_ptr().wrapping_add(w));
    prefetch(ctx.watch_loc_pool.as_ptr().wrapping_add(w));
    prefetch(q.ptr().wrapping_add(o));
    for p in scratch {
        prefetch(p.ptr().wrapping_add(o));
    }
    if s.flags & SET_ZERO == 0 {
        prefetch(f0_pool.as_ptr().wrapping_add(o));
        prefetch(k_pool.as_ptr().wrapping_add(s.k_off as usize));
    }
}

/// The crossing budget's estimate of set `s` for the deviation bound `bound` (the value
/// `set_evaluate` compares with `τ f_ref`), for tests that look at how close a decision was.
#[allow(clippy::too_many_arguments)]
pub fn set_crossing_error(
    acl: &AclUniform,
    pos: &[[f32; 4]],
    cp_pool: &[u32],
    watch_pool: &[WatchPair],
    watch_loc_pool: &[WatchLoc],
    s: &ContactSet,
    bound: f32,
) -> f32 {
    let ctx = EvalCtx {
        p: acl,
        pos,
        cp_pool,
        dbar_pool: &[],
        m_pool: &[],
        watch_pool,
        watch_loc_pool,
        watch_base: 0,
    };
    let o = s.cp_off as usize;
    let q: Vec<V3<f32>> = (0..s.n_cp as usize)
        .map(|t| V3::from4(pos[cp_pool[o + t] as usize]))
        .collect();
    ctx.crossing_error(s, &q, bound)
}

/// Row `t` of a set's corotational force as kernel `set_force` computes it (one thread per row, see
/// [`model::corotational_row`]), rotated: equal to `corotational_force`'s `t`-th output.
pub fn set_force_row(
    r: &M3<f32>,
    t: usize,
    f0: &[[f32; 4]],
    k: &[SymBlock<f32>],
    dev: &[[f32; 4]],
) -> [f32; 4] {
    r.mul_v(model::corotational_row(t, f0, k, dev)).to4(0.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The row form (one GPU thread per row) gives bitwise the force of `corotational_force`.
    #[test]
    fn row_form_equals_the_triangle_walk() {
        let n = 7;
        let mut x = 0.37f32;
        let mut rnd = || {
            x = (x * 3.7 + 0.123).fract();
            x - 0.5
        };
        let f0: Vec<[f32; 4]> = (0..n).map(|_| [rnd(), rnd(), rnd(), 0.0]).collect();
        let dev: Vec<[f32; 4]> = (0..n).map(|_| [rnd(), rnd(), rnd(), 0.0]).collect();
        let k: Vec<SymBlock<f32>> = (0..model::tri_len(n))
            .map(|_| std::array::from_fn(|_| rnd()))
            .collect();
        let r = quat_to_matrix([0.1, -0.2, 0.3, 0.9]);
        let mut out = vec![[0.0f32; 4]; n];
        model::corotational_force(&r, &f0, &k, &dev, &mut out);
        for t in 0..n {
            assert_eq!(set_force_row(&r, t, &f0, &k, &dev), out[t], "row {t}");
        }
    }
}
