//! Exact yarn–yarn penalty contact: derivatives against finite differences, continuity at 2r, action and
//! reaction, grid vs brute force, and the exact force path on whole configurations.

use yarnsim::contact::{
    self, excluded, pair_coeffs, pair_energy_grad_hess, penalty, point_pair,
    segment_pair_energy_grad_hess, ExactContact, Exclusion,
};
use yarnsim::math::{V3d, V3};
use yarnsim::scene::ContactParams;
use yarnsim::sim::{ContactForce, ContactStats};
use yarnsim::spline::{basis, quad_param};
use yarnsim::state::{Curve, Topology};

/// Small deterministic generator (xorshift64*), so tests need no extra crate.
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> f64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        (self.0.wrapping_mul(0x2545_F491_4F6C_DD1D) >> 11) as f64 / (1u64 << 53) as f64
    }
    fn range(&mut self, a: f64, b: f64) -> f64 {
        a + (b - a) * self.next()
    }
    fn v3(&mut self, s: f64) -> V3d {
        V3d::new(self.range(-s, s), self.range(-s, s), self.range(-s, s))
    }
}

const R: f64 = 0.125;

/// A random segment pair whose quadrature pair `(ka, kb)` sits at distance `d` (control points spaced
/// like a knit's, ~0.3 cm).
fn pair_at_distance(rng: &mut Rng, d: f64, wa: &[f64; 4], wb: &[f64; 4]) -> ([V3d; 4], [V3d; 4]) {
    let mut qa = [V3d::zero(); 4];
    let mut qb = [V3d::zero(); 4];
    let da = rng.v3(1.0).normalized();
    let db = rng.v3(1.0).normalized();
    for k in 0..4 {
        qa[k] = da * (0.3 * k as f64) + rng.v3(0.05);
        qb[k] = db * (0.3 * k as f64) + rng.v3(0.05);
    }
    let ya = contact_point(&qa, wa);
    let yb = contact_point(&qb, wb);
    let dir = rng.v3(1.0).normalized();
    // Shift b so that its point lies exactly at distance d from a's (weights sum to one).
    let shift = ya + dir * d - yb;
    for q in &mut qb {
        *q += shift;
    }
    (qa, qb)
}

fn contact_point(q: &[V3d; 4], w: &[f64; 4]) -> V3d {
    q[0] * w[0] + q[1] * w[1] + q[2] * w[2] + q[3] * w[3]
}

fn energy_of(qa: &[V3d; 4], qb: &[V3d; 4], wa: &[f64; 4], wb: &[f64; 4], kw: f64) -> f64 {
    pair_energy_grad_hess(qa, qb, wa, wb, kw, R).map_or(0.0, |t| t.energy)
}

/// The 8 control points as one array, and back.
fn join(qa: &[V3d; 4], qb: &[V3d; 4]) -> [V3d; 8] {
    [qa[0], qa[1], qa[2], qa[3], qb[0], qb[1], qb[2], qb[3]]
}
fn split(p: &[V3d; 8]) -> ([V3d; 4], [V3d; 4]) {
    ([p[0], p[1], p[2], p[3]], [p[4], p[5], p[6], p[7]])
}
/// `p` with coordinate `a` of slot `k` moved by `h`.
fn moved(p: &[V3d; 8], k: usize, a: usize, h: f64) -> ([V3d; 4], [V3d; 4]) {
    let mut p = *p;
    p[k].set(a, p[k].get(a) + h);
    split(&p)
}

#[test]
fn penalty_derivatives_match_finite_differences() {
    for &d in &[0.05f64, 0.1, 0.2, 0.249, 0.2499] {
        let s = d * d;
        // Step small against the distance to 4r² but large against the cancellation in f near it.
        let e = (1e-4 * s).min(1e-3 * (4.0 * R * R - s));
        let (_, df, ddf) = penalty(s, R);
        let (fp, dfp, _) = penalty(s + e, R);
        let (fm, dfm, _) = penalty(s - e, R);
        assert!(
            ((fp - fm) / (2.0 * e) - df).abs() <= 1e-6 * df.abs().max(1e-3),
            "d={d}"
        );
        assert!(
            ((dfp - dfm) / (2.0 * e) - ddf).abs() <= 1e-6 * ddf.abs(),
            "d={d}"
        );
    }
    assert_eq!(penalty(4.0 * R * R, R), (0.0, 0.0, 0.0));
    assert_eq!(penalty(1.0, R), (0.0, 0.0, 0.0));
}

/// Gradient and Hessian of one quadrature pair w.r.t. the 8 control points, vs central differences
/// of the same generic code in f64: near-contact (d just below 2r), moderate and deep overlaps.
#[test]
fn pair_gradient_and_hessian_match_finite_differences() {
    let mut rng = Rng(0x1234_5678_9abc_def1);
    let b = 11;
    let kw = 3500.0 * (0.3 / b as f64) * (0.3 / b as f64);
    let mut checked = 0;
    for trial in 0..60 {
        let ka = (rng.next() * b as f64) as u32 % b;
        let kb = (rng.next() * b as f64) as u32 % b;
        let wa = basis::<f64>(quad_param(ka, b));
        let wb = basis::<f64>(quad_param(kb, b));
        let d = match trial % 3 {
            0 => 2.0 * R * (1.0 - 1e-3 * rng.next() - 1e-4),
            1 => R * rng.range(0.8, 1.9),
            _ => R * rng.range(0.15, 0.5),
        };
        let (qa, qb) = pair_at_distance(&mut rng, d, &wa, &wb);
        let p = join(&qa, &qb);
        let t = pair_energy_grad_hess(&qa, &qb, &wa, &wb, kw, R).expect("pair touches");
        // Step small against the distance to 2r so the finite difference stays on one side of it.
        let h = (1e-3 * (2.0 * R - d)).min(1e-4 * d);
        let gscale = t.grad.iter().map(|g| g.norm()).fold(0.0, f64::max);
        let hscale = t
            .hess
            .iter()
            .flat_map(|r| r.iter())
            .map(|m| m.norm())
            .fold(0.0, f64::max);
        for k in 0..8 {
            for a in 0..3 {
                let (pa, pb) = moved(&p, k, a, h);
                let ep = energy_of(&pa, &pb, &wa, &wb, kw);
                let tp = pair_energy_grad_hess(&pa, &pb, &wa, &wb, kw, R).unwrap();
                let (ma, mb) = moved(&p, k, a, -h);
                let em = energy_of(&ma, &mb, &wa, &wb, kw);
                let tm = pair_energy_grad_hess(&ma, &mb, &wa, &wb, kw, R).unwrap();
                let fd = (ep - em) / (2.0 * h);
                let an = t.grad[k].get(a);
                assert!(
                    (fd - an).abs() <= 1e-6 * gscale,
                    "trial {trial} d/2r={} grad slot {k} axis {a}: fd {fd} analytic {an}",
                    d / (2.0 * R)
                );
                // Column (k, a) of the Hessian from the gradient's finite difference.
                for l in 0..8 {
                    let fdh = (tp.grad[l] - tm.grad[l]) / (2.0 * h);
                    let an = t.hess[l][k].c[a];
                    assert!(
                        (fdh - an).norm() <= 1e-6 * hscale,
                        "trial {trial} hess ({l},{k}) axis {a}: fd {fdh:?} analytic {an:?}"
                    );
                }
                checked += 1;
            }
        }
        // Symmetry of the assembled Hessian.
        for k in 0..8 {
            for l in 0..8 {
                assert!((t.hess[k][l].sub_m(&t.hess[l][k].transpose())).norm() <= 1e-12 * hscale);
            }
        }
    }
    assert_eq!(checked, 60 * 24);
}

/// The segment-pair sum equals the sum of its touching quadrature pairs, and its derivatives match
/// finite differences.
#[test]
fn segment_pair_sum_matches_finite_differences() {
    let mut rng = Rng(77);
    let b = 11u32;
    let weights: Vec<[f64; 4]> = (0..b).map(|k| basis::<f64>(quad_param(k, b))).collect();
    let kw = 3500.0 * (0.3f64 / 11.0).powi(2);
    for trial in 0..10 {
        let d = R * rng.range(0.5, 1.5);
        let (qa, qb) = pair_at_distance(&mut rng, d, &weights[5], &weights[5]);
        let p = join(&qa, &qb);
        let s = segment_pair_energy_grad_hess(&qa, &qb, &weights, kw, R, |_, _| false);
        assert!(s.touching > 0);
        let mut direct = 0.0;
        let mut touching = 0;
        for wa in &weights {
            for wb in &weights {
                if let Some(t) = pair_energy_grad_hess(&qa, &qb, wa, wb, kw, R) {
                    direct += t.energy;
                    touching += 1;
                }
            }
        }
        assert_eq!(touching, s.touching);
        assert!((direct - s.terms.energy).abs() <= 1e-12 * direct);
        let e_of = |qa: &[V3d; 4], qb: &[V3d; 4]| {
            segment_pair_energy_grad_hess(qa, qb, &weights, kw, R, |_, _| false)
                .terms
                .energy
        };
        let h = 1e-7;
        let gscale = s.terms.grad.iter().map(|g| g.norm()).fold(0.0, f64::max);
        for k in 0..8 {
            for a in 0..3 {
                let (pa, pb) = moved(&p, k, a, h);
                let (ma, mb) = moved(&p, k, a, -h);
                let (ep, em) = (e_of(&pa, &pb), e_of(&ma, &mb));
                let fd = (ep - em) / (2.0 * h);
                // A pair crossing 2r within ±h makes a C¹ kink of size O(h) in the gradient only.
                assert!(
                    (fd - s.terms.grad[k].get(a)).abs() <= 1e-5 * gscale,
                    "trial {trial} slot {k} axis {a}"
                );
            }
        }
    }
}

/// Point-level blocks: ∂²E/∂y_i∂y_j = −H and the (C⊗I)ᵀ h (C⊗I) structure.
#[test]
fn point_pair_blocks_give_pair_terms() {
    let mut rng = Rng(5);
    let wa = basis::<f64>(0.3);
    let wb = basis::<f64>(0.8);
    let (qa, qb) = pair_at_distance(&mut rng, 0.17, &wa, &wb);
    let t = pair_energy_grad_hess(&qa, &qb, &wa, &wb, 2.0, R).unwrap();
    let pp = point_pair(contact_point(&qa, &wa), contact_point(&qb, &wb), 2.0, R).unwrap();
    let c = pair_coeffs(&wa, &wb);
    for k in 0..8 {
        assert!((t.grad[k] - pp.grad_i * c[k]).norm() < 1e-12);
        for l in 0..8 {
            assert!(t.hess[k][l].sub_m(&pp.hess_ii.scale(c[k] * c[l])).norm() < 1e-10);
        }
    }
}

/// Energy and force of a pair approach zero continuously as d → 2r and vanish beyond.
#[test]
fn energy_and_force_vanish_continuously_at_two_r() {
    let yi = V3d::zero();
    let dir = V3d::new(0.3, -0.5, 0.8).normalized();
    let mut last = f64::INFINITY;
    for &gap in &[1e-1, 1e-2, 1e-3, 1e-4, 1e-5, 1e-6] {
        let d = 2.0 * R * (1.0 - gap);
        let pp = point_pair(yi, dir * d, 1.0, R).unwrap();
        // f ~ c·gap², |f'| ~ c·gap near 2r.
        assert!(
            pp.energy > 0.0 && pp.energy < 10.0 * gap * gap,
            "gap {gap}: E {}",
            pp.energy
        );
        assert!(
            pp.grad_i.norm() < 10.0 * gap / R,
            "gap {gap}: |g| {}",
            pp.grad_i.norm()
        );
        assert!(pp.energy < last);
        last = pp.energy;
    }
    assert!(point_pair(yi, dir * (2.0 * R), 1.0, R).is_none());
    assert!(point_pair(yi, dir * (2.0 * R * (1.0 + 1e-9)), 1.0, R).is_none());
}
