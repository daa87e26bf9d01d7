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
//! *Precision.* The decision is made on f32 arc positions measured from the yarn's start (summed in
//! f64 on the host, rounded once) by [`arc_excluded`], which only subtracts, takes `abs`/`min` and
//! compares: exact IEEE operations, so the CPU path and the GPU kernels exclude the same pairs bit for
//! bit (DESIGN §7). Along a yarn of length `L` the positions carry an absolute rounding of up to
//! `ulp(L)/2` (0.008 cm at `L` = 10⁵ cm, under 1 % of the default arc), so the exclusion radius is
//! exact to that.
//!
//! # Exact path
//!
//! [`ExactContact`] runs, every step, the kernels' CPU twins in the GPU's order (see [`grid`] and
//! `exact.rs`; the GPU side is [`exact_gpu`]): `aabb_raster` → scan → `grid_write` → radix sort by
//! cell key → `candidate_count` → scan → `candidate_write` (every segment pair with overlapping padded
//! boxes, once) → `quadrature_points` → `exact_contact_forces` (a [`crate::layout::ContactRecord`]
//! per touching candidate: all its quadrature pairs closer than `2r`, except excluded ones) → scan of
//! the touch flags → `contact_slots` → radix sort by control point → `contact_gather` (each control
//! point adds the forces of the records naming it, in candidate order). So the CPU and GPU exact
//! paths select the same pairs and sum in the same order (bitwise equal on lavapipe,
//! tests/gpu_exact.rs).
//!
//! # The contact-model interface
//!
//! Every contact model (none, exact, ACL in [`crate::acl`]) is a [`ContactForce`]: the time step
//! ([`crate::sim`]) calls it once per step for the contact forces, and knows the models only through
//! it and [`contact_model`], which builds the one a scene names. So the driver and the models do not
//! import each other.

use crate::math::{Real, M3, V3};
use crate::scene::{ContactModel, ContactParams};
use crate::state::Topology;

mod exact;
pub mod exact_gpu;
pub mod grid;
pub use exact::{
    check_counters, contact_gather, contact_slots, exact_contact_forces, key_bits,
    quadrature_points, ExactContact, MAX_GATHER,
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

/// `a + b = s + e` exactly (Knuth's TwoSum: no branch, any order of magnitudes).
#[inline]
fn two_sum(a: f32, b: f32) -> (f32, f32) {
    let s = a + b;
    let bb = s - a;
    (s, (a - (s - bb)) + (b - bb))
}

/// `a² = p + e` exactly (Dekker's product with Veltkamp's split into two 12-bit halves, so every
/// partial product is exact in f32; no fused multiply-add needed).
#[inline]
fn two_square(a: f32) -> (f32, f32) {
    let p = a * a;
    let c = 4097.0 * a;
    let hi = c - (c - a);
    let lo = a - hi;
    (p, ((hi * hi - p) + 2.0 * hi * lo) + lo * lo)
}

/// [`point_pair`] in f32 with the depth `t = s − 4r²` computed to a few ulp of itself, for models
/// accumulated in f32 (ACL's `set_rebuild`).
///
/// In `f'(s) = 1/(4r²) − 4r²/s²` the two terms cancel for a shallow pair (`d` near `2r`): plain f32
/// loses the force of such a pair to the rounding of `s` (`~1e-7 · 4r²`, which is up to `1e-7` of a
/// deep pair's force, or `1e-4` of a control point's force where pairs cancel). Here
/// `f' = t (s + 4r²) / (4r² s²)` and `f = t² / (4r² s)`, with `t` from the exact difference
/// `y_i − y_j` (TwoSum per axis), exact squares (Dekker) and a compensated sum: the result
/// is as if `t` were computed in twice the precision and rounded once, so the pair terms are
/// accurate to a few ulp relative. `None` when the pair does not touch by that `t` (`t ≥ 0`).
/// (A GPU twin must keep these operations exactly as written: no contraction into fused
/// multiply-adds, no reassociation.)
pub fn point_pair_compensated(
    yi: V3<f32>,
    yj: V3<f32>,
    kappa_w: f32,
    r: f32,
) -> Option<PointPair<f32>> {
    // x = h + l exactly, per axis.
    let (hx, lx) = two_sum(yi.x, -yj.x);
    let (hy, ly) = two_sum(yi.y, -yj.y);
    let (hz, lz) = two_sum(yi.z, -yj.z);
    // t = Σ (h + l)² − (2r)²: the exact squares of h and of 2r summed with compensation; the
    // terms in l are below an ulp of the result and added plainly.
    let (px, ex) = two_square(hx);
    let (py, ey) = two_square(hy);
    let (pz, ez) = two_square(hz);
    let (ch, cl) = two_square(2.0 * r);
    let (acc, q1) = two_sum(px, py);
    let (acc, q2) = two_sum(acc, pz);
    let (acc, q3) = two_sum(acc, -ch);
    let small = (2.0 * hx * lx + lx * lx) + (2.0 * hy * ly + ly * ly) + (2.0 * hz * lz + lz * lz);
    let t = acc + ((((q1 + q2) + q3) + ((ex + ey) + ez)) - cl + small);
    if t >= 0.0 || t.is_nan() {
        return None;
    }
    let x = V3::new(hx, hy, hz);
    let s = x.norm2();
    let four_r2 = 4.0 * r * r;
    let df = t * (s + four_r2) / (four_r2 * s * s);
    let inv = 1.0 / s;
    let ddf = 2.0 * four_r2 * inv * inv * inv;
    let hess_ii = M3::diag(2.0 * kappa_w * df).add_m(&x.outer(x).scale(4.0 * kappa_w * ddf));
    Some(PointPair {
        energy: kappa_w * (t * t / (four_r2 * s)),
        grad_i: x * (2.0 * kappa_w * df),
        hess_ii,
    })
}

/// CPU twin of the tool kernel `pair_compensated_test` (shaders/shared/acl_pair.wgsl on a list of
/// inputs): pair `p` reads `pair_in[2p] = (y_i, κw)`, `pair_in[2p + 1] = (y_j, r)` and writes
/// [`point_pair_compensated`]'s terms: `pair_out[4p] = (∂E/∂y_i, E)`, `pair_out[4p + 1 + c] =`
/// column `c` of the Hessian (w: 1 in column 0 when touching, else 0); all zero when not touching.
pub fn pair_compensated_test(pair_in: &[[f32; 4]], pair_out: &mut [[f32; 4]]) {
    for (inp, out) in pair_in.chunks_exact(2).zip(pair_out.chunks_exact_mut(4)) {
        let (a, b) = (inp[0], inp[1]);
        out.fill([0.0; 4]);
        if let Some(pp) = point_pair_compensated(V3::from4(a), V3::from4(b), a[3], b[3]) {
            out[0] = pp.grad_i.to4(pp.energy);
            for c in 0..3 {
                out[1 + c] = pp.hess_ii.c[c].to4(if c == 0 { 1.0 } else { 0.0 });
            }
        }
    }
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

/// Arc position (rest length from the yarn's start) of quadrature point `k` of a segment that starts
/// at `start` and is `len` long, in f64, rounded to the f32 both paths decide with.
#[inline]
fn quad_arc_f32(start: f64, k: u32, b: u32, len: f64) -> f32 {
    (start + (k as f64 + 0.5) / b as f64 * len) as f32
}

fn seg_len(topo: &Topology, seg: u32) -> f64 {
    topo.edges[topo.segments[seg as usize].edge as usize].rest_length as f64
}

/// The same-yarn exclusion decision on the f32 arc positions `pa`, `pb` of two quadrature points of
/// one yarn: closer than `arc` along it, the shorter way round on a closed yarn of rest length
/// `loop_len` (0 for an open yarn). Only subtraction, `abs`, `min` and a comparison of stored f32
/// values, which IEEE (and Vulkan) evaluate exactly, so the CPU path and the GPU kernels
/// (shaders/shared/penalty.wgsl `arc_excluded`) select the same pairs bit for bit.
#[inline]
pub fn arc_excluded(pa: f32, pb: f32, loop_len: f32, arc: f32) -> bool {
    let mut d = (pa - pb).abs();
    if loop_len > 0.0 {
        d = d.min(loop_len - d);
    }
    d < arc
}

/// The class of a pair of arc positions under the exclusion rule: 0 near along the yarn, 2 near the
/// other way round a closed loop of rest length `loop_len`, 1 not excluded (shaders/shared/
/// penalty.wgsl `exclusion_class`).
#[inline]
pub fn exclusion_class(pa: f32, pb: f32, loop_len: f32, arc: f32) -> u8 {
    let mut d = (pa - pb).abs();
    if d < arc {
        return 0;
    }
    if loop_len > 0.0 {
        d = d.min(loop_len - d);
        if d < arc {
            return 2;
        }
    }
    1
}

/// Whether every quadrature pair of two different segments of one yarn is excluded, from the arc
/// positions of their first (`a0`, `b0`) and last (`a1`, `b1`) quadrature points: all four corners
/// near, or all four near round the loop (exact; see [`Exclusion::segment_exclusion`]). The force
/// kernel and its twin skip such blocks (shaders/shared/penalty.wgsl `block_excluded`).
#[inline]
pub fn block_excluded(a0: f32, a1: f32, b0: f32, b1: f32, loop_len: f32, arc: f32) -> bool {
    let c = [
        exclusion_class(a0, b0, loop_len, arc),
        exclusion_class(a0, b1, loop_len, arc),
        exclusion_class(a1, b0, loop_len, arc),
        exclusion_class(a1, b1, loop_len, arc),
    ];
    c[0] != 1 && c.iter().all(|&x| x == c[0])
}

/// The same-yarn exclusion rule: true when quadrature points `(seg_a, k_a)` and `(seg_b, k_b)` (global
/// segment indices, `k` in `0..b`) lie on the same yarn less than `params.exclusion_arc` of rest length
/// apart along it (the shorter way round for a closed yarn). A point is always excluded from itself
/// (for `exclusion_arc > 0`).
///
/// Arc positions are measured from the yarn's start: summed along the yarn in f64, rounded to f32
/// once, and compared by [`arc_excluded`], exactly as [`Exclusion`] (which precomputes them) and the
/// GPU kernels decide. This reference walks the yarn from its start, so it costs O(yarn length); for
/// tests and diagnostics.
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
    let b = params.quadrature;
    let yarn = &topo.yarns[sa.yarn as usize];
    // Segment starts and the yarn's length, summed in the order Exclusion::new sums them.
    let (mut start_a, mut start_b, mut acc) = (0.0, 0.0, 0.0);
    for m in 0..yarn.num_segments {
        if m == sa.index_in_yarn {
            start_a = acc;
        }
        if m == sb.index_in_yarn {
            start_b = acc;
        }
        acc += seg_len(topo, yarn.first_segment + m);
    }
    let pa = quad_arc_f32(start_a, k_a, b, seg_len(topo, seg_a));
    let pb = quad_arc_f32(start_b, k_b, b, seg_len(topo, seg_b));
    let loop_len = if yarn.closed != 0 { acc as f32 } else { 0.0 };
    arc_excluded(pa, pb, loop_len, params.exclusion_arc)
}

/// Precomputed f32 arc positions for an O(1) same-yarn exclusion test, the same rule and numbers as
/// [`excluded`] and the GPU kernels (which get [`Exclusion::quad_arc`] and
/// [`Exclusion::loop_len`] as buffers).
#[derive(Clone, Debug, Default)]
pub struct Exclusion {
    /// Arc position (rest length from the yarn's start, f32) of every quadrature point `seg·b + k`.
    quad_arc: Vec<f32>,
    seg_yarn: Vec<u32>,
    /// Per segment: the rest length of its yarn when closed, 0 when open.
    seg_loop: Vec<f32>,
    b: u32,
    arc: f32,
}

impl Exclusion {
    pub fn new(topo: &Topology, params: &ContactParams) -> Self {
        let b = params.quadrature;
        let n = topo.segments.len();
        let mut e = Exclusion {
            quad_arc: vec![0.0; n * b as usize],
            seg_yarn: vec![0; n],
            seg_loop: vec![0.0; n],
            b,
            arc: params.exclusion_arc,
        };
        for (yi, y) in topo.yarns.iter().enumerate() {
            let mut acc = 0.0;
            for m in 0..y.num_segments {
                let s = y.first_segment + m;
                let len = seg_len(topo, s);
                for k in 0..b {
                    e.quad_arc[(s * b + k) as usize] = quad_arc_f32(acc, k, b, len);
                }
                e.seg_yarn[s as usize] = yi as u32;
                acc += len;
            }
            let loop_len = if y.closed != 0 { acc as f32 } else { 0.0 };
            for m in 0..y.num_segments {
                e.seg_loop[(y.first_segment + m) as usize] = loop_len;
            }
        }
        e
    }

    /// Arc position of quadrature point `k` of segment `seg` along its yarn.
    #[inline]
    pub fn arc_position(&self, seg: u32, k: u32) -> f32 {
        self.quad_arc[(seg * self.b + k) as usize]
    }

    /// Every quadrature point's arc position (`seg·b + k`): the `quad_arc` buffer of the kernels.
    pub fn quad_arc(&self) -> &[f32] {
        &self.quad_arc
    }

    /// Rest length of segment `seg`'s yarn when it is closed, 0 when open.
    #[inline]
    pub fn loop_len(&self, seg: u32) -> f32 {
        self.seg_loop[seg as usize]
    }

    /// True when the two segments could hold an excluded pair at all (same yarn).
    #[inline]
    pub fn same_yarn(&self, seg_a: u32, seg_b: u32) -> bool {
        self.seg_yarn[seg_a as usize] == self.seg_yarn[seg_b as usize]
    }

    /// The rule of [`excluded`].
    #[inline]
    pub fn excluded(&self, seg_a: u32, k_a: u32, seg_b: u32, k_b: u32) -> bool {
        self.same_yarn(seg_a, seg_b)
            && arc_excluded(
                self.arc_position(seg_a, k_a),
                self.arc_position(seg_b, k_b),
                self.seg_loop[seg_a as usize],
                self.arc,
            )
    }

    /// How the rule treats the whole `b × b` block of two segments, so a force loop tests pairs only
    /// where it must; it never disagrees with [`Self::excluded`].
    ///
    /// For two different segments of one yarn, all positions of one lie at or after all positions of
    /// the other, and the stored positions increase (weakly) with `k`, so `D = fl(|p_a − p_b|)` is
    /// monotone in each of `k_a`, `k_b` (rounding is monotone) and takes its extremes at the block's
    /// corners. "Near" (`D < arc`) holds on a lower set of `D` and "round the loop"
    /// (`fl(L − D) < arc`) on an upper set, so when all four corners are near, or all round the
    /// loop, every pair is excluded, and when no corner is excluded none is.
    #[inline]
    pub fn segment_exclusion(&self, seg_a: u32, seg_b: u32) -> SegmentExclusion {
        if !self.same_yarn(seg_a, seg_b) {
            return SegmentExclusion::Clear;
        }
        if seg_a == seg_b {
            return SegmentExclusion::Mixed;
        }
        let b = self.b;
        let loop_len = self.seg_loop[seg_a as usize];
        let class = |ka: u32, kb: u32| -> u8 {
            exclusion_class(
                self.arc_position(seg_a, ka),
                self.arc_position(seg_b, kb),
                loop_len,
                self.arc,
            )
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

// ---------------------------------------------------------------------------------------------------
// The contact-model interface (the time step's `contact` stage, DESIGN §6).

/// Named per-step statistics a contact model reports (`("touching_pairs", 1234.0)`, ...). The driver
/// averages them over the steps of a frame into the frame's JSON record under the same names.
#[derive(Clone, Debug, Default)]
pub struct ContactStats {
    pub values: Vec<(&'static str, f64)>,
}

impl ContactStats {
    pub fn set(&mut self, name: &'static str, value: f64) {
        if let Some(v) = self.values.iter_mut().find(|(n, _)| *n == name) {
            v.1 = value;
        } else {
            self.values.push((name, value));
        }
    }
}

/// A yarn–yarn contact force model (none, exact, ACL). Called once per step, after gravity and rod
/// forces are in `force`, with positions `pos` and velocities `vel` at the start of the step.
pub trait ContactForce: Send {
    /// Adds the contact force on every control point into `force` (xyz; w untouched).
    fn add_forces(
        &mut self,
        topo: &Topology,
        pos: &[[f32; 4]],
        vel: &[[f32; 4]],
        force: &mut [[f32; 4]],
        stats: &mut ContactStats,
    ) -> Result<(), ContactError>;

    /// Adds 1 to `counts[s]` for every segment `s` whose contact model was (re)built by the last
    /// [`Self::add_forces`] call; returns false (and leaves `counts` alone) when the model keeps no
    /// contact models to rebuild. The driver calls it after every step while it records rebuilds
    /// ([`crate::sim::Sim::record_rebuilds`]), so `counts` sums the rebuilds of a frame (seed
    /// Figures 1 and 8). `counts` has one entry per segment of `topo`. Before the first step it adds
    /// nothing.
    fn add_step_rebuilds(&mut self, _topo: &Topology, _counts: &mut [f32]) -> bool {
        false
    }

    /// The touching, non-excluded quadrature pairs `[i, j]` (`i < j`, global index `segment * b + k`)
    /// at positions `pos` into `touching`, and the boxes `[u0, u1, v0, v1]` (inclusive quadrature
    /// indices) of the model's contact sets into `boxes` (seed Figure 2). Both are cleared first.
    /// Returns false when the model has no notion of contact. Not part of the step: it may allocate.
    fn contact_pairs(
        &mut self,
        _topo: &Topology,
        _pos: &[[f32; 4]],
        _touching: &mut Vec<[u32; 2]>,
        _boxes: &mut Vec<[u32; 4]>,
    ) -> Result<bool, ContactError> {
        Ok(false)
    }

    /// Writes everything of the model that later steps read, bit for bit, into `out` (a
    /// checkpoint, [`crate::checkpoint`]), starting with its tag in section `contact.model`. Not
    /// part of the step: it may allocate. The default refuses: a model must say what its state is.
    fn export_state(
        &self,
        _out: &mut crate::checkpoint::StateWriter,
    ) -> Result<(), crate::checkpoint::CheckpointError> {
        Err(crate::checkpoint::CheckpointError::Unsupported(
            "this contact model cannot be checkpointed".into(),
        ))
    }

    /// Restores what [`Self::export_state`] wrote into a model built afresh from the same scene,
    /// for `topo` with `num_points` control points. On error the model must be discarded.
    fn import_state(
        &mut self,
        _topo: &Topology,
        _num_points: usize,
        _inp: &crate::checkpoint::StateReader,
    ) -> Result<(), crate::checkpoint::CheckpointError> {
        Err(crate::checkpoint::CheckpointError::Unsupported(
            "this contact model cannot be restored from a checkpoint".into(),
        ))
    }
}

/// A contact model could not produce a force this step.
#[derive(Debug, thiserror::Error)]
pub enum ContactError {
    #[error("contact force is not finite at control point {point} (yarns passed through each other or the time step is too large)")]
    NotFinite { point: usize },
    #[error("{0}")]
    Other(String),
}

/// The `none` contact model: yarns pass through each other.
#[derive(Clone, Copy, Debug, Default)]
pub struct NoContact;

impl ContactForce for NoContact {
    fn add_forces(
        &mut self,
        _topo: &Topology,
        _pos: &[[f32; 4]],
        _vel: &[[f32; 4]],
        _force: &mut [[f32; 4]],
        _stats: &mut ContactStats,
    ) -> Result<(), ContactError> {
        Ok(())
    }

    /// No state: only the tag.
    fn export_state(
        &self,
        out: &mut crate::checkpoint::StateWriter,
    ) -> Result<(), crate::checkpoint::CheckpointError> {
        out.put_str("contact.model", "none");
        Ok(())
    }

    fn import_state(
        &mut self,
        _topo: &Topology,
        _num_points: usize,
        inp: &crate::checkpoint::StateReader,
    ) -> Result<(), crate::checkpoint::CheckpointError> {
        inp.expect_model("none")
    }
}

/// The contact model named by `contact.model` could not be built from the scene's parameters.
#[derive(Debug, thiserror::Error)]
#[error("cannot set up the {model} contact model")]
pub struct ContactSetupError {
    /// `none`, `exact` or `acl`.
    pub model: &'static str,
    #[source]
    pub source: Box<dyn std::error::Error + Send + Sync>,
}

/// The contact model a scene asks for (`contact.model`), built from the yarn radius and the contact
/// parameters. The driver ([`crate::sim`]) knows contact models only through this and
/// [`ContactForce`].
pub fn contact_model(
    radius: f32,
    params: &ContactParams,
) -> Result<Box<dyn ContactForce>, ContactSetupError> {
    let setup = |model: &'static str| {
        move |e: Box<dyn std::error::Error + Send + Sync>| ContactSetupError { model, source: e }
    };
    Ok(match params.model {
        ContactModel::None => Box::new(NoContact),
        ContactModel::Exact => {
            Box::new(ExactContact::new(radius, params).map_err(|e| setup("exact")(Box::new(e)))?)
        }
        ContactModel::Acl => Box::new(
            crate::acl::AclContact::new(radius, params).map_err(|e| setup("acl")(Box::new(e)))?,
        ),
    })
}
