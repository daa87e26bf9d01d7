//! Stage `set_rebuild`: the exact linear model of a dirty set at the current positions and its
//! resize; with the pool allocation and compaction.

use super::model::{self, SymBlock};
use super::sets::{in_box, padded_box};
use super::{AclContact, SET_DIRTY, SET_LIVE, SET_ZERO};
use crate::contact::{pair_coeffs, point_pair, ContactError};
use crate::math::V3;
use crate::polar::{quat_identity, quat_to_matrix};
use crate::sched::{PairClass, PairRules, Release, EMPTY_BOX};
use crate::state::Topology;
use bytemuck::{Pod, Zeroable};

/// A member pair watched for crossing the contact distance.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Pod, Zeroable)]
pub struct WatchPair {
    pub i: u32,
    pub j: u32,
    /// The pair's weight `κw`.
    pub kw: f32,
    /// `d − 2r` at the rebuild (negative: touching). A set's watched pairs are sorted by `|gap|`.
    pub gap: f32,
}
const _: () = assert!(std::mem::size_of::<WatchPair>() == 16);

/// Pairs watched per set.
pub const MAX_WATCH: usize = 32;
/// The pools' second buffers, for compaction (see `AclContact::compact`).
#[derive(Debug, Default)]
pub(crate) struct CompactScratch {
    cp: Vec<u32>,
    f0: Vec<[f32; 4]>,
    dbar: Vec<[f32; 4]>,
    m: Vec<f32>,
    k: Vec<SymBlock<f32>>,
    watch: Vec<WatchPair>,
    watch_loc: Vec<[u16; 8]>,
}

impl CompactScratch {
    /// Empties the buffers, each with at least the capacity of the pool it will replace.
    fn clear_reserving(&mut self, a: &AclContact) {
        fn prep<T>(v: &mut Vec<T>, cap: usize) {
            v.clear();
            v.reserve(cap);
        }
        prep(&mut self.cp, a.cp_pool.capacity());
        prep(&mut self.f0, a.f0_pool.capacity());
        prep(&mut self.dbar, a.dbar_pool.capacity());
        prep(&mut self.m, a.m_pool.capacity());
        prep(&mut self.k, a.k_pool.capacity());
        prep(&mut self.watch, a.watch_pool.capacity());
        prep(&mut self.watch_loc, a.watch_loc_pool.capacity());
    }
}

/// Scratch of one rebuild (reused).
#[derive(Debug, Default)]
pub(crate) struct RebuildScratch {
    pub(crate) pairs: Vec<[u32; 2]>,
    /// Member pairs of the rebuilt box: `(|d − 2r|, i, j, d)`.
    members: Vec<(f32, u32, u32, f32)>,
    cps: Vec<u32>,
    f: Vec<V3<f64>>,
    k: Vec<SymBlock<f64>>,
}

impl AclContact {
    /// Allocates pool space for `n` points (and their blocks unless `zero`); returns `(cp_off, k_off)`.
    fn alloc(&mut self, n: usize, zero: bool) -> (u32, u32) {
        let cp_off = self.cp_pool.len();
        self.cp_pool.resize(cp_off + n, 0);
        self.f0_pool.resize(cp_off + n, [0.0; 4]);
        self.dbar_pool.resize(cp_off + n, [0.0; 4]);
        self.m_pool.resize(cp_off + n, 0.0);
        let k_off = self.k_pool.len();
        if !zero {
            self.k_pool.resize(k_off + model::tri_len(n), [0.0; 6]);
        }
        (cp_off as u32, k_off as u32)
    }

    /// Rewrites the pools with only the live models, in set order, when more than half of them is
    /// garbage. Set order is the order `set_evaluate` walks the sets in: rebuilt models are appended in
    /// rebuild order, so without the reordering the pools drift into an order unrelated to the sets
    /// and every set's evaluation starts with cache misses (measured: the evaluation stage of the bench
    /// scene slowed by a quarter over 800 steps). The pools are written into `compact_scratch` and
    /// swapped with it (both keep their capacity, so steady-state compaction does not allocate).
    pub(crate) fn compact(&mut self) {
        if self.garbage_cp * 2 <= self.cp_pool.len() + 4096
            && self.garbage_k * 2 <= self.k_pool.len() + 65536
            && self.garbage_w * 2 <= self.watch_pool.len() + 4096
        {
            return;
        }
        let mut order = std::mem::take(&mut self.order);
        order.clear();
        order.extend((0..self.sets.len() as u32).filter(|&k| {
            self.sets[k as usize].flags & SET_LIVE != 0 && self.sets[k as usize].n_cp > 0
        }));
        let mut sc = std::mem::take(&mut self.compact_scratch);
        sc.clear_reserving(self);
        for &k in &order {
            let s = &mut self.sets[k as usize];
            let (o, n) = (s.cp_off as usize, s.n_cp as usize);
            s.cp_off = sc.cp.len() as u32;
            sc.cp.extend_from_slice(&self.cp_pool[o..o + n]);
            sc.f0.extend_from_slice(&self.f0_pool[o..o + n]);
            sc.dbar.extend_from_slice(&self.dbar_pool[o..o + n]);
            sc.m.extend_from_slice(&self.m_pool[o..o + n]);
            if s.flags & SET_ZERO != 0 {
                // No blocks; keep the (empty) range inside the pool.
                s.k_off = 0;
            } else {
                let (ko, nk) = (s.k_off as usize, model::tri_len(n));
                s.k_off = sc.k.len() as u32;
                sc.k.extend_from_slice(&self.k_pool[ko..ko + nk]);
            }
            let (wo, nw) = (s.w_off as usize, s.n_watch as usize);
            s.w_off = sc.watch.len() as u32;
            sc.watch.extend_from_slice(&self.watch_pool[wo..wo + nw]);
            sc.watch_loc
                .extend_from_slice(&self.watch_loc_pool[wo..wo + nw]);
        }
        std::mem::swap(&mut self.cp_pool, &mut sc.cp);
        std::mem::swap(&mut self.f0_pool, &mut sc.f0);
        std::mem::swap(&mut self.dbar_pool, &mut sc.dbar);
        std::mem::swap(&mut self.m_pool, &mut sc.m);
        std::mem::swap(&mut self.k_pool, &mut sc.k);
        std::mem::swap(&mut self.watch_pool, &mut sc.watch);
        std::mem::swap(&mut self.watch_loc_pool, &mut sc.watch_loc);
        self.compact_scratch = sc;
        self.order = order;
        self.garbage_cp = 0;
        self.garbage_k = 0;
        self.garbage_w = 0;
    }

    /// Stage `set_rebuild`: the exact model of set `k` at the current positions, and its resize.
    /// Returns false when the set was deleted.
    pub(crate) fn set_rebuild(
        &mut self,
        k: usize,
        topo: &Topology,
        pos: &[[f32; 4]],
    ) -> Result<bool, ContactError> {
        let b = self.b;
        let r = self.r;
        let four_r2 = 4.0 * r * r;
        let old = self.sets[k];
        let bx = old.bx;
        // Pass 1: distances of all member pairs; touching ones recorded.
        let mut pairs = std::mem::take(&mut self.scratch.pairs);
        pairs.clear();
        let mut min_d2 = f32::INFINITY;
        let mut members = std::mem::take(&mut self.scratch.members);
        members.clear();
        let (mut i0, mut i1, mut j0, mut j1) = (u32::MAX, 0u32, u32::MAX, 0u32);
        let mut ya = [V3::<f32>::zero(); crate::sched::MAX_QUADRATURE as usize];
        let mut yb = [V3::<f32>::zero(); crate::sched::MAX_QUADRATURE as usize];
        for sa in bx[0] / b..=bx[1] / b {
            let ka0 = bx[0].max(sa * b) - sa * b;
            let ka1 = bx[1].min(sa * b + b - 1) - sa * b;
            for ka in ka0..=ka1 {
                ya[ka as usize] = self.quad_point(topo, pos, sa * b + ka);
            }
            for sb in (bx[2] / b).max(sa)..=bx[3] / b {
                let class = if sa == sb {
                    PairClass::Mixed
                } else {
                    PairRules::segment_class(&self.excl, sa, sb)
                };
                if class == PairClass::All {
                    continue;
                }
                let kb0 = bx[2].max(sb * b) - sb * b;
                let kb1 = bx[3].min(sb * b + b - 1) - sb * b;
                for kb in kb0..=kb1 {
                    yb[kb as usize] = self.quad_point(topo, pos, sb * b + kb);
                }
                for ka in ka0..=ka1 {
                    let i = sa * b + ka;
                    for kb in kb0..=kb1 {
                        let j = sb * b + kb;
                        if i >= j {
                            continue;
                        }
                        if class == PairClass::Mixed && self.excl.excluded(sa, ka, sb, kb) {
                            continue;
                        }
                        let d2 = (ya[ka as usize] - yb[kb as usize]).norm2();
                        if !d2.is_finite() {
                            return Err(ContactError::NotFinite {
                                point: topo.segments[sa as usize].cp[1] as usize,
                            });
                        }
                        min_d2 = min_d2.min(d2);
                        let d = d2.sqrt();
                        members.push(((d - 2.0 * r).abs(), i, j, d));
                        if d2 < four_r2 {
                            pairs.push([i, j]);
                            i0 = i0.min(i);
                            i1 = i1.max(i);
                            j0 = j0.min(j);
                            j1 = j1.max(j);
                        }
                    }
                }
            }
        }
        let eps = min_d2.sqrt();
        let zero = pairs.is_empty();
        if zero && !(eps <= self.params.delete_distance * r) {
            // Closest pair beyond the delete distance (or no member pair at all): back to empty space.
            self.released.push(Release {
                old: bx,
                new: EMPTY_BOX,
            });
            self.delete_set(k);
            self.scratch.pairs = pairs;
            self.scratch.members = members;
            return Ok(false);
        }
        let new_bx = if zero {
            bx
        } else {
            padded_box(i0, i1, j0, j1, self.params.padding, self.nq)
        };
        // Control points of the new box's segments (sorted, unique).
        let mut cps = std::mem::take(&mut self.scratch.cps);
        cps.clear();
        for range in [
            (new_bx[0] / b, new_bx[1] / b),
            (new_bx[2] / b, new_bx[3] / b),
        ] {
            for s in range.0..=range.1 {
                cps.extend_from_slice(&topo.segments[s as usize].cp);
            }
        }
        cps.sort_unstable();
        cps.dedup();
        let n = cps.len();
        // Pass 2: force and stiffness of the touching pairs, accumulated in f64.
        let mut f_ref = 0.0f64;
        if !zero {
            self.scratch.f.clear();
            self.scratch.f.resize(n, V3::zero());
            self.scratch.k.clear();
            self.scratch.k.resize(model::tri_len(n), [0.0; 6]);
            let stiffness = self.params.stiffness as f64;
            for &[i, j] in &pairs {
                let (sa, sb) = (i / b, j / b);
                let (ka, kb) = (i % b, j % b);
                let seg_a = &topo.segments[sa as usize];
                let seg_b = &topo.segments[sb as usize];
                let wa = self.table.weights[ka as usize].map(|x| x as f64);
                let wb = self.table.weights[kb as usize].map(|x| x as f64);
                let yi = self.quad_point(topo, pos, i).cast::<f64>();
                let yj = self.quad_point(topo, pos, j).cast::<f64>();
                let kw =
                    stiffness * self.seg_w[sa as usize] as f64 * self.seg_w[sb as usize] as f64;
                let Some(pp) = point_pair(yi, yj, kw, r as f64) else {
                    continue;
                };
                let mut loc = [0usize; 8];
                for m in 0..4 {
                    loc[m] = cps.binary_search(&seg_a.cp[m]).unwrap_or(0);
                    loc[4 + m] = cps.binary_search(&seg_b.cp[m]).unwrap_or(0);
                }
                f_ref += pp.grad_i.norm();
                let c = pair_coeffs(&wa, &wb);
                model::accumulate_pair(
                    n,
                    &loc,
                    &c,
                    pp.grad_i,
                    &pp.hess_ii,
                    &mut self.scratch.f,
                    &mut self.scratch.k,
                );
            }
        }
        self.scratch.cps = cps;
        // Rotation of the old reference to now, to carry the springs' rest offsets over.
        let r_old = quat_to_matrix(old.quat);
        // Store the model (the old one becomes garbage; compaction happens between steps, never while
        // the per-step scratch pools are indexed by the current offsets).
        self.free_model(k);
        let (cp_off, k_off) = self.alloc(n, zero);
        let (o, ko) = (cp_off as usize, k_off as usize);
        let mut c = V3::<f64>::zero();
        for (t, &p) in self.scratch.cps.iter().enumerate() {
            self.cp_pool[o + t] = p;
            c += V3::<f64>::from4(pos[p as usize]);
        }
        let c = c / n as f64;
        for t in 0..n {
            let p = self.scratch.cps[t] as usize;
            self.dbar_pool[o + t] = (V3::<f64>::from4(pos[p]) - c).to4(0.0);
            self.f0_pool[o + t] = if zero {
                [0.0; 4]
            } else {
                self.scratch.f[t].to4(0.0)
            };
            if !zero && !self.scratch.f[t].is_finite() {
                return Err(ContactError::NotFinite { point: p });
            }
        }
        if !zero {
            for (t, blk) in self.scratch.k.iter().enumerate() {
                self.k_pool[ko + t] = blk.map(|x| x as f32);
            }
        }
        // Invalidation weights M_i over the new box's two parameter ranges.
        for t in 0..n {
            self.m_pool[o + t] = 0.0;
        }
        for (q0, q1) in [(new_bx[0], new_bx[1]), (new_bx[2], new_bx[3])] {
            for s in q0 / b..=q1 / b {
                let t0 = (q0.max(s * b) - s * b) as f64 / b as f64;
                let t1 = (q1.min(s * b + b - 1) + 1 - s * b) as f64 / b as f64;
                for m in 0..4 {
                    let p = topo.segments[s as usize].cp[m];
                    let l = self.scratch.cps.binary_search(&p).unwrap_or(0);
                    self.m_pool[o + l] += model::basis_abs_integral(m, t0, t1) as f32;
                }
            }
        }
        // Watched pairs: the member pairs of the new box closest to the contact distance.
        members.retain(|m| in_box(&new_bx, m.1, m.2));
        let nw = members.len().min(MAX_WATCH);
        if members.len() > MAX_WATCH {
            members.select_nth_unstable_by(MAX_WATCH - 1, |a, b| a.0.total_cmp(&b.0));
        }
        let guard_near = members[..nw]
            .iter()
            .map(|m| m.0)
            .fold(f32::INFINITY, f32::min);
        let grew = new_bx[0] < bx[0] || new_bx[1] > bx[1] || new_bx[2] < bx[2] || new_bx[3] > bx[3];
        let guard_far = if grew {
            // Pairs of the grown part were not measured (they do not touch, see `set_rebuild`'s
            // caller): look at them at the next step.
            0.0
        } else {
            members[nw..]
                .iter()
                .map(|m| m.0)
                .fold(f32::INFINITY, f32::min)
        };
        members[..nw].sort_unstable_by(|a, b| a.0.total_cmp(&b.0));
        let w_off = self.watch_pool.len();
        for m in &members[..nw] {
            let (sa, sb) = (m.1 / b, m.2 / b);
            self.watch_pool.push(WatchPair {
                i: m.1,
                j: m.2,
                kw: self.params.stiffness * self.seg_w[sa as usize] * self.seg_w[sb as usize],
                gap: m.3 - 2.0 * r,
            });
            // Both segments lie in the new box's ranges, so their control points are the set's.
            let mut loc = [0u16; 8];
            for (k, seg) in [sa, sb].into_iter().enumerate() {
                for c in 0..4 {
                    let p = topo.segments[seg as usize].cp[c];
                    loc[4 * k + c] = self.scratch.cps.binary_search(&p).unwrap_or(0) as u16;
                }
            }
            self.watch_loc_pool.push(loc);
        }
        self.scratch.members = members;
        let box_changed = new_bx != bx || old.flags & SET_DIRTY != 0;
        if new_bx != bx {
            self.released.push(Release {
                old: bx,
                new: new_bx,
            });
        }
        let s = &mut self.sets[k];
        s.bx = new_bx;
        s.cp_off = cp_off;
        s.n_cp = n as u32;
        s.k_off = k_off;
        s.flags = SET_LIVE | if zero { SET_ZERO } else { 0 };
        s.eps = eps;
        s.w_off = w_off as u32;
        s.n_watch = nw as u32;
        s.guard_near = guard_near;
        s.guard_far = guard_far;
        s.f_ref = f_ref as f32;
        s.touching = pairs.len() as u32;
        s.rebuilt_step = self.step as u32;
        s.quat = quat_identity();
        s.centre = c.to4(0.0);
        self.scratch.pairs = pairs;
        // Stiction springs: re-made on a new box, otherwise carried into the new reference frame.
        if self.params.stiction_stiffness > 0.0 {
            if box_changed {
                self.make_springs(k, topo, pos);
            } else {
                for sp in &mut self.springs[4 * k..4 * k + 4] {
                    let d0 = r_old.mul_v(V3::<f32>::from4(sp.rest));
                    sp.rest = d0.to4(0.0);
                }
            }
        }
        Ok(true)
    }
}
