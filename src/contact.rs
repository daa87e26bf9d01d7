//! Yarn–yarn penalty contact (DESIGN §3, seed §3.2): the exact energy, its analytic gradient and Hessian
//! with respect to the Catmull-Rom control points, the same-yarn exclusion rule, and the exact reference
//! force path [`ExactContact`] that finds touching quadrature pairs through a hashed uniform grid.
//!
//! # Energy
//!
//! For quadrature points `y_i = Σ_k B_k(t_i) q_k` (see [`crate::spline`]) the energy is
//!
//! ```text
//! E = Σ_{i<j, not excluded} κw_ij f(|y_i − y_j|²),
//! f = 4r²/d² + d²/(4r²) − 2   for d < 2r, else 0,
//! κw_ij = k_contact · (ℓ_i / b) · (ℓ_j / b)
//! ```
//!
//! where `ℓ_i` is the rest length of the central edge of the segment holding `i` (so `ℓ/b` is the midpoint
//! quadrature weight of one point, and `κw` is the seed's `κ_ij w_ij`). `f` and `f'` both vanish at
//! `d = 2r`, so energy and force go continuously to zero there; `f''` jumps (the Hessian is only piecewise
//! smooth). `f` is written as a function of `s = d²`, which avoids square roots everywhere.
//!
//! # Derivatives
//!
//! With `x = y_i − y_j`, `s = x·x`, the point-level terms are
//! `g = ∂E/∂y_i = 2κw f'(s) x = −∂E/∂y_j` and `H = ∂²E/∂y_i² = κw (2f'(s) I + 4f''(s) x xᵀ)`,
//! with `∂²E/∂y_i∂y_j = −H`, `∂²E/∂y_j² = H`. Since `x = Σ_{k<8} c_k p_k` for the 8 control points
//! `p = (q_a, q_b)` and `c = (B(t_i), −B(t_j))`, the control-point gradient is `c_k g` and the Hessian
//! block `(k, l)` is `c_k c_l H` — the `(C⊗I)ᵀ h (C⊗I)` structure, formed from one 3×3 block per pair.
//!
//! # Same-yarn exclusion
//!
//! Two quadrature points of the same yarn whose separation *along the yarn* — measured in rest lengths,
//! the shorter way round for a closed yarn — is below `contact.exclusion_arc` do not interact
//! ([`excluded`], [`Exclusion`]). Without it every quadrature point would repel its own neighbours,
//! which sit at arc distance `ℓ/b ≪ 2r`.
//!
//! *Lower bound.* A yarn of radius `r` bent into an arc of curvature radius `R` brings two of its points
//! at arc separation `σ` to the chord `2R sin(σ/2R)`; they stay closer than `2r` for all
//! `σ < 2R asin(r/R)`, which is largest, `πr`, at the tightest bend a tube of radius `r` can physically
//! make (`R = r`). So the exclusion arc must be at least `πr` (0.39 cm at r = 0.125) or a legitimately
//! bent yarn pushes on itself, which acts as a spurious extra bending stiffness (and at tighter bends,
//! as an enormous one, since `f` diverges as `d → 0`).
//!
//! *Upper bound.* Within the exclusion arc a yarn can pass through *itself* unopposed. Genuine
//! same-yarn contacts in a knit are between different courses of one yarn (a full course apart, except
//! at a turn-around at the swatch edge) and between neighbouring loops of one course (the legs of two
//! adjacent loops, joined by a sinker arc). The exclusion arc must stay below the arc length between those
//! contact points or the knit loses them.
//!
//! *Default:* `exclusion_arc = 1.0 cm = 8r` (scene.rs), kept. It is `2.5×` the lower bound, so a
//! yarn bent somewhat tighter than its radius (transiently under load, and at the quadrature's
//! resolution) still does not fight itself. For the upper bound, the knit generator's measurement
//! (knit.rs, "Clearance") puts the closest pairs of non-neighbouring yarn parts — the two legs of one
//! loop where they cross the head of the loop below — about 21r apart along the yarn, and the rest
//! state keeps the same smallest separation for any exclusion from 3r to 16r; 8r sits inside that
//! range with margin on both sides, so the contacts that hold a knit together (a head wrapped around
//! the legs of the next course, a course against the next one at a swatch's turn) are never
//! excluded.
//!
//! Consequences: a yarn cannot hold a knot or any contact with itself tighter than 1 cm of yarn
//! (8r); such parts may pass through each other. Scaling the yarn radius without scaling
//! `exclusion_arc` moves it out of the `[πr, 16r]` window. A segment never meets itself (its points
//! are at most `ℓ_seg` apart along the yarn, below the exclusion arc for any sensible
//! discretization), so the exact path never evaluates a segment against itself.
//!
//! # Exact path
//!
//! [`ExactContact`] runs, every step, the stages
//! `aabb_raster` (exact segment bounds padded by `r` into a hashed grid of cell width γ, counting-sorted
//! by hash bucket), `candidate_pairs` (segments sharing a cell, each pair emitted once: only in the cell
//! holding the minimum corner of the two boxes' intersection) and `exact_contact_forces` (all
//! quadrature pairs of each candidate closer than `2r`, except excluded ones; chunks of candidates are
//! evaluated in parallel into per-candidate 8-point force records which are then scattered in candidate
//! order, so the result does not depend on the thread count).

use crate::math::{Real, M3, V3};
use crate::scene::ContactParams;
use crate::state::Topology;

mod exact;
pub use exact::{
    aabb_raster, candidate_pairs, exact_contact_forces, quadrature_points, CellEntry, ExactContact,
};

/// Penalty `f` and its derivatives with respect to the **squared** distance `s = d²`:
/// returns `(f, df/ds, d²f/ds²)`, all zero for `s ≥ 4r²`.
///
/// At `s = 0` the values are infinite and a NaN `s` gives NaN; callers check finiteness.
#[inline]
pub fn penalty<T: Real>(d2: T, r: T) -> (T, T, T) {
    let four_r2 = T::from_f64(4.0) * r * r;
    // Written so that a NaN distance propagates into the result instead of reading as "no contact".
    if d2 >= four_r2 {
        return (T::zero(), T::zero(), T::zero());
    }
    let inv = T::one() / d2;
    let f = four_r2 * inv + d2 / four_r2 - T::from_f64(2.0);
    let df = -four_r2 * inv * inv + T::one() / four_r2;
    let ddf = T::from_f64(2.0) * four_r2 * inv * inv * inv;
    (f, df, ddf)
}

/// The weight `κw_ij = k_contact (ℓ_a/b)(ℓ_b/b)` of a quadrature pair on segments with central-edge
/// rest lengths `la`, `lb`.
#[inline]
pub fn pair_kappa_w<T: Real>(stiffness: T, la: T, lb: T, b: u32) -> T {
    let bb = T::from_f64(b as f64);
    stiffness * (la / bb) * (lb / bb)
}

/// Energy, gradient and Hessian of one quadrature pair with respect to its two points.
#[derive(Clone, Copy, Debug)]
pub struct PointPair<T> {
    pub energy: T,
    /// `∂E/∂y_i`; the gradient with respect to `y_j` is its negative.
    pub grad_i: V3<T>,
    /// `∂²E/∂y_i²` (symmetric); `∂²E/∂y_j² = H`, `∂²E/∂y_i∂y_j = −H`.
    pub hess_ii: M3<T>,
}

/// Energy and `∂E/∂y_i` of the pair `(y_i, y_j)`, or `None` when it does not touch (`d ≥ 2r`).
/// The cheap form used by the exact force path.
#[inline]
pub fn point_pair_grad<T: Real>(yi: V3<T>, yj: V3<T>, kappa_w: T, r: T) -> Option<(T, V3<T>)> {
    let x = yi - yj;
    let s = x.norm2();
    if s >= T::from_f64(4.0) * r * r {
        return None;
    }
    let (f, df, _) = penalty(s, r);
    Some((kappa_w * f, x * (T::from_f64(2.0) * kappa_w * df)))
}

/// Energy, gradient and Hessian of the pair `(y_i, y_j)`, or `None` when it does not touch.
#[inline]
pub fn point_pair<T: Real>(yi: V3<T>, yj: V3<T>, kappa_w: T, r: T) -> Option<PointPair<T>> {
    let x = yi - yj;
    let s = x.norm2();
    if s >= T::from_f64(4.0) * r * r {
        return None;
    }
    let (f, df, ddf) = penalty(s, r);
    let two = T::from_f64(2.0);
    let hess_ii =
        M3::diag(two * kappa_w * df).add_m(&x.outer(x).scale(T::from_f64(4.0) * kappa_w * ddf));
    Some(PointPair {
        energy: kappa_w * f,
        grad_i: x * (two * kappa_w * df),
        hess_ii,
    })
}

/// Coefficients `c` with `y_i − y_j = Σ_k c_k p_k` over the 8 control points `p = (q_a, q_b)`.
#[inline]
pub fn pair_coeffs<T: Real>(wa: &[T; 4], wb: &[T; 4]) -> [T; 8] {
    [wa[0], wa[1], wa[2], wa[3], -wb[0], -wb[1], -wb[2], -wb[3]]
}

/// Energy, gradient and Hessian of a quadrature pair (or a sum of them) with respect to the 8 control
/// points `p = (qa[0..4], qb[0..4])`. `hess[k][l] = ∂²E/∂p_k∂p_l`, symmetric (`hess[l][k] = hess[k][l]ᵀ`).
///
/// When the two segments share control points (neighbours on a yarn) the entries refer to the *slots*,
/// and the caller adds slots naming the same global point.
#[derive(Clone, Copy, Debug)]
pub struct PairTerms<T> {
    pub energy: T,
    pub grad: [V3<T>; 8],
    pub hess: [[M3<T>; 8]; 8],
}

impl<T: Real> PairTerms<T> {
    pub fn zero() -> Self {
        PairTerms {
            energy: T::zero(),
            grad: [V3::zero(); 8],
            hess: [[M3::zero(); 8]; 8],
        }
    }

    /// Adds the point-pair terms `pp` spread onto the slots with coefficients `c` (see [`pair_coeffs`]).
    #[inline]
    pub fn accumulate(&mut self, c: &[T; 8], pp: &PointPair<T>) {
        self.energy += pp.energy;
        for (g, &ck) in self.grad.iter_mut().zip(c) {
            *g += pp.grad_i * ck;
        }
        for k in 0..8 {
            for l in k..8 {
                let blk = pp.hess_ii.scale(c[k] * c[l]);
                self.hess[k][l] = self.hess[k][l].add_m(&blk);
            }
        }
    }

    /// Copies the upper triangle of `hess` onto the lower one (after a run of [`Self::accumulate`]).
    pub fn symmetrize(&mut self) {
        for k in 0..8 {
            for l in 0..k {
                self.hess[k][l] = self.hess[l][k].transpose();
            }
        }
    }
}

/// Energy, gradient and Hessian of one quadrature pair: point `y_i = Σ wa_k qa_k` against
/// `y_j = Σ wb_k qb_k` (basis weights `wa`, `wb`), with pair weight `kappa_w` ([`pair_kappa_w`]).
/// `None` when the points do not touch.
pub fn pair_energy_grad_hess<T: Real>(
    qa: &[V3<T>; 4],
    qb: &[V3<T>; 4],
    wa: &[T; 4],
    wb: &[T; 4],
    kappa_w: T,
    r: T,
) -> Option<PairTerms<T>> {
    let yi = qa[0] * wa[0] + qa[1] * wa[1] + qa[2] * wa[2] + qa[3] * wa[3];
    let yj = qb[0] * wb[0] + qb[1] * wb[1] + qb[2] * wb[2] + qb[3] * wb[3];
    let pp = point_pair(yi, yj, kappa_w, r)?;
    let mut t = PairTerms::zero();
    t.accumulate(&pair_coeffs(wa, wb), &pp);
    t.symmetrize();
    Some(t)
}

/// The terms of all `b × b` quadrature pairs of two segments, summed.
#[derive(Clone, Copy, Debug)]
pub struct SegmentPairTerms<T> {
    pub terms: PairTerms<T>,
    /// Number of touching (and not skipped) quadrature pairs.
    pub touching: u32,
    /// Smallest squared distance over the evaluated (not skipped) pairs, touching or not.
    pub min_d2: T,
}

/// Sums [`pair_energy_grad_hess`] over all quadrature pairs `(k_a, k_b)` of segments `qa`, `qb`, with
/// basis weights `weights[k]` at quadrature point `k` (length `b`) and pair weight `kappa_w`. Pairs for
/// which `skip(k_a, k_b)` is true (exclusion, or pairs owned elsewhere) are left out. For a segment
/// against itself, pass the same points twice and skip `k_a ≥ k_b`.
pub fn segment_pair_energy_grad_hess<T: Real>(
    qa: &[V3<T>; 4],
    qb: &[V3<T>; 4],
    weights: &[[T; 4]],
    kappa_w: T,
    r: T,
    mut skip: impl FnMut(u32, u32) -> bool,
) -> SegmentPairTerms<T> {
    let b = weights.len();
    let mut out = SegmentPairTerms {
        terms: PairTerms::zero(),
        touching: 0,
        min_d2: T::from_f64(f64::INFINITY),
    };
    // Quadrature points of b, computed once rather than once per quadrature point of a.
    let mut yb_buf = [V3::zero(); 64];
    let yb: &mut [V3<T>] = if b <= 64 {
        &mut yb_buf[..b]
    } else {
        // b > 64 is not a practical setting; handle it without a heap buffer by recomputing below.
        &mut yb_buf[..0]
    };
    for (kb, y) in yb.iter_mut().enumerate() {
        *y = eval_with(qb, &weights[kb]);
    }
    for (ka, wa) in weights.iter().enumerate() {
        let yi = eval_with(qa, wa);
        for (kb, wb) in weights.iter().enumerate() {
            if skip(ka as u32, kb as u32) {
                continue;
            }
            let yj = if b <= 64 { yb[kb] } else { eval_with(qb, wb) };
            let s = (yi - yj).norm2();
            out.min_d2 = out.min_d2.min(s);
            if let Some(pp) = point_pair(yi, yj, kappa_w, r) {
                out.terms.accumulate(&pair_coeffs(wa, wb), &pp);
                out.touching += 1;
            }
        }
    }
    out.terms.symmetrize();
    out
}

#[inline]
fn eval_with<T: Real>(q: &[V3<T>; 4], w: &[T; 4]) -> V3<T> {
    q[0] * w[0] + q[1] * w[1] + q[2] * w[2] + q[3] * w[3]
}

/// Arc position (in rest length) of quadrature point `k` within a segment of length `len`.
#[inline]
fn quad_arc(k: u32, b: u32, len: f64) -> f64 {
    (k as f64 + 0.5) / b as f64 * len
}

fn seg_len(topo: &Topology, seg: u32) -> f64 {
    topo.edges[topo.segments[seg as usize].edge as usize].rest_length as f64
}

/// The same-yarn exclusion rule: true when quadrature points `(seg_a, k_a)` and `(seg_b, k_b)` (global
/// segment indices, `k` in `0..b`) lie on the same yarn less than `params.exclusion_arc` of rest length
/// apart along it (the shorter way round on a closed yarn). A point is always excluded from itself.
///
/// Walks the segments between the two points and stops as soon as the arc exceeds the exclusion arc, so
/// the cost is bounded by `exclusion_arc / ℓ_min` whatever the yarn length. [`Exclusion`] precomputes
/// arc positions for an O(1) test.
pub fn excluded(
    topo: &Topology,
    seg_a: u32,
    k_a: u32,
    seg_b: u32,
    k_b: u32,
    params: &ContactParams,
) -> bool {
    let (sa, sb) = (
        &topo.segments[seg_a as usize],
        &topo.segments[seg_b as usize],
    );
    if sa.yarn != sb.yarn {
        return false;
    }
    let arc = params.exclusion_arc as f64;
    let b = params.quadrature;
    let yarn = &topo.yarns[sa.yarn as usize];
    let n = yarn.num_segments;
    // Arc from point (ia, ka) forward along the yarn to point (ib, kb), walking at most until `arc`.
    let forward = |ia: u32, ka: u32, ib: u32, kb: u32| -> f64 {
        let la = seg_len(topo, yarn.first_segment + ia);
        if ia == ib && ka <= kb {
            return quad_arc(kb, b, la) - quad_arc(ka, b, la);
        }
        let mut sum = la - quad_arc(ka, b, la);
        let mut m = (ia + 1) % n;
        while m != ib {
            if sum >= arc {
                return sum;
            }
            sum += seg_len(topo, yarn.first_segment + m);
            m = (m + 1) % n;
        }
        sum + quad_arc(kb, b, seg_len(topo, yarn.first_segment + ib))
    };
    let (ia, ib) = (sa.index_in_yarn, sb.index_in_yarn);
    // Order so that (ia, ka) comes first along the yarn.
    let ((ia, ka), (ib, kb)) = if (ia, k_a) <= (ib, k_b) {
        ((ia, k_a), (ib, k_b))
    } else {
        ((ib, k_b), (ia, k_a))
    };
    if forward(ia, ka, ib, kb) < arc {
        return true;
    }
    yarn.closed != 0 && forward(ib, kb, ia, ka) < arc
}

/// Precomputed arc positions for an O(1) same-yarn exclusion test (same rule as [`excluded`]).
#[derive(Clone, Debug, Default)]
pub struct Exclusion {
    /// Arc position (rest length) of the start of each segment along its yarn.
    seg_start: Vec<f64>,
    seg_len: Vec<f64>,
    seg_yarn: Vec<u32>,
    /// Total rest length of each yarn's segments, and whether it is closed.
    yarn_len: Vec<f64>,
    yarn_closed: Vec<bool>,
    b: u32,
    arc: f64,
}

impl Exclusion {
    pub fn new(topo: &Topology, params: &ContactParams) -> Self {
        let mut e = Exclusion {
            b: params.quadrature,
            arc: params.exclusion_arc as f64,
            ..Default::default()
        };
        e.seg_start.resize(topo.segments.len(), 0.0);
        e.seg_len.resize(topo.segments.len(), 0.0);
        e.seg_yarn.resize(topo.segments.len(), 0);
        for (yi, y) in topo.yarns.iter().enumerate() {
            let mut acc = 0.0;
            for m in 0..y.num_segments {
                let s = (y.first_segment + m) as usize;
                e.seg_start[s] = acc;
                e.seg_len[s] = seg_len(topo, s as u32);
                e.seg_yarn[s] = yi as u32;
                acc += e.seg_len[s];
            }
            e.yarn_len.push(acc);
            e.yarn_closed.push(y.closed != 0);
        }
        e
    }

    /// Arc position of quadrature point `k` of segment `seg` along its yarn.
    #[inline]
    pub fn arc_position(&self, seg: u32, k: u32) -> f64 {
        self.seg_start[seg as usize] + quad_arc(k, self.b, self.seg_len[seg as usize])
    }

    /// True when the two segments could hold an excluded pair at all (same yarn).
    #[inline]
    pub fn same_yarn(&self, seg_a: u32, seg_b: u32) -> bool {
        self.seg_yarn[seg_a as usize] == self.seg_yarn[seg_b as usize]
    }

    /// The rule of [`excluded`].
    #[inline]
    pub fn excluded(&self, seg_a: u32, k_a: u32, seg_b: u32, k_b: u32) -> bool {
        let y = self.seg_yarn[seg_a as usize];
        if y != self.seg_yarn[seg_b as usize] {
            return false;
        }
        let mut d = (self.arc_position(seg_a, k_a) - self.arc_position(seg_b, k_b)).abs();
        if self.yarn_closed[y as usize] {
            d = d.min(self.yarn_len[y as usize] - d);
        }
        d < self.arc
    }

    /// How the rule treats the whole `b × b` block of two segments, so the force loop tests pairs only
    /// where it must.
    #[inline]
    pub fn segment_exclusion(&self, seg_a: u32, seg_b: u32) -> SegmentExclusion {
        if !self.same_yarn(seg_a, seg_b) {
            return SegmentExclusion::Clear;
        }
        if seg_a == seg_b {
            return SegmentExclusion::Mixed;
        }
        let b = self.b;
        let y = self.seg_yarn[seg_a as usize] as usize;
        let (len, closed) = (self.yarn_len[y], self.yarn_closed[y]);
        // Fast path: the segments' whole arc intervals are clear of each other both ways round.
        let (sa, sb) = (
            self.seg_start[seg_a as usize],
            self.seg_start[seg_b as usize],
        );
        let (ea, eb) = (
            sa + self.seg_len[seg_a as usize],
            sb + self.seg_len[seg_b as usize],
        );
        let (d_min, d_max) = ((sa.max(sb) - ea.min(eb)).max(0.0), ea.max(eb) - sa.min(sb));
        if d_min >= self.arc && (!closed || d_max <= len - self.arc) {
            return SegmentExclusion::Clear;
        }
        // For two different segments the positions occupy disjoint arc intervals, so D = |pos_a − pos_b|
        // is linear in (k_a, k_b) over the block and takes its extremes at the corners. The excluded set
        // is {D < arc} ∪ {D > L − arc (closed yarns)}; the block is uniform when all corners fall in the
        // same one of the three D ranges.
        let class = |ka: u32, kb: u32| -> u8 {
            let d = (self.arc_position(seg_a, ka) - self.arc_position(seg_b, kb)).abs();
            if d < self.arc {
                0
            } else if closed && d > len - self.arc {
                2
            } else {
                1
            }
        };
        let c = [
            class(0, 0),
            class(0, b - 1),
            class(b - 1, 0),
            class(b - 1, b - 1),
        ];
        if c.iter().all(|&x| x == c[0]) {
            if c[0] == 1 {
                SegmentExclusion::Clear
            } else {
                SegmentExclusion::All
            }
        } else {
            SegmentExclusion::Mixed
        }
    }
}

/// How the exclusion rule treats all `b × b` pairs of a segment pair.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SegmentExclusion {
    /// No pair is excluded.
    Clear,
    /// Every pair is excluded.
    All,
    /// Test each pair.
    Mixed,
}
