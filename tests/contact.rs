//! Exact yarn–yarn penalty contact: derivatives against finite differences, continuity at 2r, action and
//! reaction, grid vs brute force, and the exact force path on whole configurations.

use yarnsim::contact::{
    excluded, pair_coeffs, pair_energy_grad_hess, pair_kappa_w, penalty, point_pair,
    segment_pair_energy_grad_hess, ExactContact, Exclusion, SegmentExclusion,
};
use yarnsim::knit;
use yarnsim::math::{V3d, V3};
use yarnsim::scene::{ContactParams, Pattern};
use yarnsim::sim::{ContactForce, ContactStats};
use yarnsim::spline::{basis, quad_param};
use yarnsim::state::{Curve, Topology};

#[path = "support/contact_oracle.rs"]
mod contact_oracle;
#[path = "support/interlock.rs"]
mod interlock;
use interlock::{interlock_numbers_of, interlock_runs};

/// Counts heap allocations made on threads that opted in (thread-local flag), so the allocation test
/// below is not disturbed by other tests running in parallel.
struct Counting;
thread_local! {
    static COUNT_HERE: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}
static ALLOCATIONS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

unsafe impl std::alloc::GlobalAlloc for Counting {
    unsafe fn alloc(&self, l: std::alloc::Layout) -> *mut u8 {
        if COUNT_HERE.with(|c| c.get()) {
            ALLOCATIONS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        }
        unsafe { std::alloc::System.alloc(l) }
    }
    unsafe fn dealloc(&self, p: *mut u8, l: std::alloc::Layout) {
        unsafe { std::alloc::System.dealloc(p, l) }
    }
    unsafe fn realloc(&self, p: *mut u8, l: std::alloc::Layout, n: usize) -> *mut u8 {
        if COUNT_HERE.with(|c| c.get()) {
            ALLOCATIONS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        }
        unsafe { std::alloc::System.realloc(p, l, n) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

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

// ---------------------------------------------------------------------------------------------------
// Whole configurations.

/// The exact path's energy against the continuous energy `k ∫∫ f` of straight yarns in closed
/// form: yarns crossing at right angles and a short yarn parallel to a long one, at depths from
/// near the contact distance to 0.4 r. This pins the pair weights `k (ℓ/b)²` and the one count
/// of each pair (`i < j`) against the seed's integral, which the library's own f64 terms cannot
/// (they share the weights). Measured: within 8e-4 at 0.15 cm control-point spacing, the largest
/// where the contact is shallow (its width then spans a few quadrature points), and within 3.2e-3
/// at 0.3 cm, the error falling as the square of the spacing.
#[test]
fn exact_energy_matches_the_closed_forms_for_straight_yarns() {
    use contact_oracle::{crossing_energy, parallel_energy_per_length, straight};
    let p = params();
    let k = p.stiffness as f64;
    let energy = |curves: &[Curve]| {
        let (topo, pos) = Topology::from_curves(curves).unwrap();
        let mut exact = ExactContact::new(R as f32, &p).unwrap();
        let mut force = vec![[0.0f32; 4]; pos.len()];
        exact
            .add_forces(&topo, &pos, &pos, &mut force, &mut ContactStats::default())
            .unwrap();
        exact.last_energy()
    };
    let (x, y) = ([1.0, 0.0, 0.0], [0.0, 1.0, 0.0]);
    for &d in &[0.05, 0.125, 0.2, 0.24] {
        let mut err = [0.0f64; 2];
        for (e, h) in err.iter_mut().zip([0.3, 0.15]) {
            let crossing = energy(&[
                straight([0.0; 3], x, 21, h),
                straight([0.0, 0.0, d], y, 21, h),
            ]);
            let want = crossing_energy(d, k, R);
            let rel = crossing / want - 1.0;
            assert!(
                rel.abs() < 1e-3,
                "crossing {d} cm apart, spacing {h}: {crossing} vs {want}"
            );
            // The short yarn's segments cover its points 1 to 9: 8 spacings.
            let parallel = energy(&[
                straight([0.0; 3], x, 11, h),
                straight([0.0, 0.0, d], x, 31, h),
            ]);
            let want = parallel_energy_per_length(d, k, R) * 8.0 * h;
            *e = parallel / want - 1.0;
            assert!(
                e.abs() < 5e-3,
                "parallel {d} cm apart, spacing {h}: {parallel} vs {want}"
            );
        }
        eprintln!(
            "parallel at {d} cm: relative error {:.1e} (spacing 0.3), {:.1e} (0.15)",
            err[0], err[1]
        );
        assert!(
            err[1].abs() < 1e-3,
            "parallel {d} cm apart at spacing 0.15: {:.2e}",
            err[1]
        );
    }
}

/// The exact path's force (f32, the product code) is minus the gradient of the contact energy as
/// an oracle written apart from the library computes it (central differences in f64), and its
/// energy is that energy, on crossing, parallel, nearly parallel and end-to-end yarns and on a
/// yarn touching itself in a hairpin. The force balances: total force and torque vanish to the
/// f32 rounding of the gather (some 10 slot forces of up to |F| summed per point, 6e-8 each).
/// Measured: force within 3.3e-7 of the largest, energy within 5e-6, imbalance below 8e-8.
#[test]
fn exact_force_is_minus_the_gradient_of_an_independent_energy_and_balances() {
    let p = params();
    let k = p.stiffness as f64;
    for (name, curves) in contact_oracle::configurations() {
        let (topo, pos) = Topology::from_curves(&curves).unwrap();
        let mut exact = ExactContact::new(R as f32, &p).unwrap();
        let mut force = vec![[0.0f32; 4]; pos.len()];
        exact
            .add_forces(&topo, &pos, &pos, &mut force, &mut ContactStats::default())
            .unwrap();
        let p64 = contact_oracle::widen(&pos);
        let arc = p.exclusion_arc as f64;
        let b = p.quadrature;
        let want = contact_oracle::energy(&topo, &p64, k, R, b, arc);
        assert!(want > 0.0, "{name}: not in contact");
        assert!(
            (exact.last_energy() / want - 1.0).abs() < 2e-5,
            "{name}: energy {} vs {want}",
            exact.last_energy()
        );
        let fd = contact_oracle::force_by_differences(&topo, &p64, k, R, b, arc, 1e-6);
        let scale = fd
            .iter()
            .map(|f| V3d::new(f[0], f[1], f[2]).norm())
            .fold(0.0, f64::max);
        for (i, (f, g)) in force.iter().zip(&fd).enumerate() {
            let diff = V3d::from4(*f) - V3d::new(g[0], g[1], g[2]);
            assert!(
                diff.norm() <= 1e-5 * scale,
                "{name}: point {i}: force {f:?} vs −∇E {g:?}"
            );
        }
        let (net, torque) = contact_oracle::imbalance(&pos, &force);
        eprintln!("{name}: E {want:.4e}, |ΣF|/Σ|F| {net:.1e}, |Στ|/Σ|r||F| {torque:.1e}");
        assert!(
            net < 1e-6 && torque < 1e-6,
            "{name}: net force {net:.2e}, torque {torque:.2e}"
        );
    }
}

/// Smooth random walks (open) and randomly placed rings (closed) crowded into a few cm³.
fn random_curves(rng: &mut Rng, open: usize, rings: usize, size: f64) -> Vec<Curve> {
    let mut curves = Vec::new();
    for _ in 0..open {
        let n = 10 + (rng.next() * 20.0) as usize;
        let mut p = rng.v3(size * 0.5);
        let mut dir = rng.v3(1.0).normalized();
        let mut pts = Vec::new();
        for _ in 0..n {
            pts.push(p.to3());
            dir = (dir + rng.v3(0.5)).normalized();
            p += dir * rng.range(0.2, 0.35);
        }
        curves.push(Curve {
            points: pts,
            closed: false,
        });
    }
    for _ in 0..rings {
        let c = rng.v3(size * 0.5);
        let u = rng.v3(1.0).normalized();
        let v = u.cross(rng.v3(1.0)).normalized();
        let w = u.cross(v);
        let rad = rng.range(0.3, 0.8);
        let n = 8 + (rad * 12.0) as usize;
        let pts = (0..n)
            .map(|i| {
                let a = std::f64::consts::TAU * i as f64 / n as f64;
                (c + u * (rad * a.cos()) + w * (rad * a.sin())).to3()
            })
            .collect();
        curves.push(Curve {
            points: pts,
            closed: true,
        });
    }
    curves
}

/// A plain weave: warp yarns along x over and under weft yarns along y, touching at every crossing
/// (2·amp < 2r), and one long serpentine yarn laid over it with turn-arounds (same-yarn contacts).
fn woven_curves(n: usize, spacing: f64, amp: f64) -> Vec<Curve> {
    let mut curves = Vec::new();
    let len = n as f64 * spacing;
    let m = 4 * n + 3;
    for j in 0..n {
        let y = (j as f64 + 0.5) * spacing;
        let pts = (0..m)
            .map(|i| {
                let x = (i as f64 - 1.0) * len / (m - 3) as f64;
                let z = amp
                    * (std::f64::consts::PI * x / spacing + j as f64 * std::f64::consts::PI).sin();
                [x as f32, y as f32, z as f32]
            })
            .collect();
        curves.push(Curve {
            points: pts,
            closed: false,
        });
        let pts = (0..m)
            .map(|i| {
                let yy = (i as f64 - 1.0) * len / (m - 3) as f64;
                let z = -amp
                    * (std::f64::consts::PI * yy / spacing + j as f64 * std::f64::consts::PI).sin();
                [y as f32, yy as f32, z as f32]
            })
            .collect();
        curves.push(Curve {
            points: pts,
            closed: false,
        });
    }
    // Serpentine yarn at z = 2·amp + 1.9 r above the weave: rows 2r·0.95 apart joined by tight U-turns.
    let mut pts = Vec::new();
    let z = (2.0 * amp + 1.9 * R) as f32;
    let rows = 4;
    for row in 0..rows {
        let y0 = row as f64 * 2.0 * R * 0.95;
        let xs: Vec<f64> = (0..12).map(|i| i as f64 * len / 11.0).collect();
        let it: Box<dyn Iterator<Item = &f64>> = if row % 2 == 0 {
            Box::new(xs.iter())
        } else {
            Box::new(xs.iter().rev())
        };
        for &x in it {
            pts.push([x as f32, y0 as f32, z]);
        }
    }
    curves.push(Curve {
        points: pts,
        closed: false,
    });
    curves
}

fn params() -> ContactParams {
    ContactParams {
        model: yarnsim::scene::ContactModel::Exact,
        ..ContactParams::default()
    }
}

/// The generic f64 oracle: all segment pairs (brute force), each summed by
/// `segment_pair_energy_grad_hess`, gradients scattered onto the global control points.
fn oracle_gradient(topo: &Topology, pos: &[[f32; 4]], p: &ContactParams) -> (Vec<V3d>, f64, u32) {
    let b = p.quadrature;
    let weights: Vec<[f64; 4]> = (0..b).map(|k| basis::<f64>(quad_param(k, b))).collect();
    let excl = Exclusion::new(topo, p);
    let mut grad = vec![V3d::zero(); pos.len()];
    let mut energy = 0.0;
    let mut touching = 0;
    let len = |s: usize| topo.edges[topo.segments[s].edge as usize].rest_length as f64;
    for sa in 0..topo.segments.len() {
        for sb in sa + 1..topo.segments.len() {
            let (ca, cb) = (topo.segments[sa].cp, topo.segments[sb].cp);
            let qa = ca.map(|i| V3d::from4(pos[i as usize]));
            let qb = cb.map(|i| V3d::from4(pos[i as usize]));
            let kw = pair_kappa_w(p.stiffness as f64, len(sa), len(sb), b);
            let t = segment_pair_energy_grad_hess(&qa, &qb, &weights, kw, R, |ka, kb| {
                excl.excluded(sa as u32, ka, sb as u32, kb)
            });
            energy += t.terms.energy;
            touching += t.touching;
            for k in 0..8 {
                let gi = if k < 4 { ca[k] } else { cb[k - 4] } as usize;
                grad[gi] += t.terms.grad[k];
            }
        }
    }
    (grad, energy, touching)
}

/// Action and reaction: total contact force and torque about the origin vanish (relative 1e-9, f64).
#[test]
fn total_force_and_torque_vanish() {
    let mut rng = Rng(99);
    let p = params();
    for trial in 0..5 {
        let curves = match trial {
            3 => woven_curves(4, 0.6, 0.11),
            4 => {
                knit::generate(Pattern::Garter, 4, 4, R as f32)
                    .unwrap()
                    .curves
            }
            _ => random_curves(&mut rng, 8, 4, 1.5),
        };
        let (topo, pos) = Topology::from_curves(&curves).unwrap();
        let (grad, _, touching) = oracle_gradient(&topo, &pos, &p);
        assert!(
            touching > 50,
            "trial {trial}: only {touching} touching pairs"
        );
        let mut f = V3d::zero();
        let mut tq = V3d::zero();
        let (mut fs, mut ts) = (0.0, 0.0);
        for (g, q) in grad.iter().zip(&pos) {
            let q = V3d::from4(*q);
            f += *g;
            tq += q.cross(*g);
            fs += g.norm();
            ts += q.norm() * g.norm();
        }
        assert!(
            f.norm() <= 1e-9 * fs,
            "trial {trial}: |ΣF| {} vs Σ|F| {fs}",
            f.norm()
        );
        assert!(
            tq.norm() <= 1e-9 * ts,
            "trial {trial}: |Στ| {} vs Σ|τ| {ts}",
            tq.norm()
        );
    }
}

/// The f32 exact path gives the f64 oracle's force and energy (to f32 accuracy), and its statistics.
#[test]
fn exact_path_matches_oracle() {
    let mut rng = Rng(4242);
    let p = params();
    for trial in 0..5 {
        let curves = match trial {
            0 | 1 => random_curves(&mut rng, 6, 3, 2.5),
            2 => woven_curves(5, 0.6, 0.11),
            3 => {
                knit::generate(Pattern::Stockinette, 4, 4, R as f32)
                    .unwrap()
                    .curves
            }
            _ => {
                knit::generate(Pattern::Tube, 8, 2, R as f32)
                    .unwrap()
                    .curves
            }
        };
        let (topo, pos) = Topology::from_curves(&curves).unwrap();
        let (grad, energy, touching) = oracle_gradient(&topo, &pos, &p);
        eprintln!("trial {trial}: {touching} touching pairs");
        assert!(
            touching > 50,
            "trial {trial}: only {touching} touching pairs"
        );
        let mut exact = ExactContact::new(R as f32, &p).unwrap();
        let mut force = vec![[0.0f32; 4]; pos.len()];
        let mut stats = ContactStats::default();
        exact
            .add_forces(&topo, &pos, &pos, &mut force, &mut stats)
            .unwrap();
        assert_eq!(exact.last_touching(), touching as u64, "trial {trial}");
        let get = |n: &str| stats.values.iter().find(|v| v.0 == n).map(|v| v.1);
        assert_eq!(get("touching_pairs"), Some(touching as f64));
        assert_eq!(
            get("candidate_segment_pairs"),
            Some(exact.candidates().len() as f64)
        );
        assert!(get("contact_ms").is_some());
        assert!(
            (exact.last_energy() - energy).abs() <= 1e-4 * energy,
            "trial {trial}"
        );
        let scale = grad.iter().map(|g| g.norm()).fold(0.0, f64::max);
        for (i, (g, f)) in grad.iter().zip(&force).enumerate() {
            let f = V3d::from4(*f);
            // f32 positions, and a deep-overlap pair amplifies their rounding; 1e-3 of the largest force.
            assert!(
                (f + *g).norm() <= 1e-3 * scale,
                "trial {trial} point {i}: {f:?} vs {:?}",
                -*g
            );
        }
    }
}

/// Pairs the grid finds are exactly those a brute-force all-pairs search finds: segment pairs with
/// overlapping padded boxes, and touching non-excluded quadrature pairs.
#[test]
fn grid_finds_exactly_the_brute_force_pairs() {
    let mut rng = Rng(31337);
    for trial in 0..9 {
        let mut p = params();
        // Several cell widths, down to cells much smaller than a segment.
        p.grid_cell = [0.6, 0.25, 1.7][trial % 3];
        let curves = match trial {
            0 | 2 | 4 => random_curves(&mut rng, 8, 5, 3.0),
            1 | 3 => woven_curves(6, 0.55, 0.1),
            5 => {
                knit::generate(Pattern::Stockinette, 5, 4, R as f32)
                    .unwrap()
                    .curves
            }
            6 => {
                knit::generate(Pattern::Garter, 4, 4, R as f32)
                    .unwrap()
                    .curves
            }
            7 => knit::generate(Pattern::Rib, 4, 3, R as f32).unwrap().curves,
            _ => {
                knit::generate(Pattern::Tube, 8, 3, R as f32)
                    .unwrap()
                    .curves
            }
        };
        let (topo, pos) = Topology::from_curves(&curves).unwrap();
        let mut exact = ExactContact::new(R as f32, &p).unwrap();
        let mut grid_pairs = Vec::new();
        exact
            .touching_quadrature_pairs(&topo, &pos, &mut grid_pairs)
            .unwrap();
        // Segment pairs.
        let (lo, hi) = exact.segment_boxes();
        let mut brute_seg = Vec::new();
        for a in 0..topo.segments.len() {
            for b in a + 1..topo.segments.len() {
                if (0..3).all(|x| lo[a][x] <= hi[b][x] && lo[b][x] <= hi[a][x]) {
                    brute_seg.push([a as u32, b as u32]);
                }
            }
        }
        // Each pair once (no duplicates survive the sort), the same set.
        let mut grid_seg = exact.candidates().to_vec();
        grid_seg.sort_unstable();
        assert_eq!(
            grid_seg, brute_seg,
            "trial {trial}: candidate segment pairs"
        );
        // Quadrature pairs, over all of S × S.
        let b = p.quadrature;
        let q = exact.quadrature_positions();
        let four_r2 = 4.0 * (R as f32) * (R as f32);
        let mut brute = Vec::new();
        for i in 0..q.len() {
            for j in i + 1..q.len() {
                let (si, sj) = (i as u32 / b, j as u32 / b);
                if si == sj {
                    continue; // a segment never meets itself (documented)
                }
                let d2 = (V3::<f32>::from4(q[i]) - V3::<f32>::from4(q[j])).norm2();
                if d2 < four_r2 && !excluded(&topo, si, i as u32 % b, sj, j as u32 % b, &p) {
                    brute.push([i as u32, j as u32]);
                }
            }
        }
        assert!(
            brute.len() > 30,
            "trial {trial}: only {} touching pairs",
            brute.len()
        );
        assert_eq!(
            grid_pairs, brute,
            "trial {trial}: touching quadrature pairs"
        );
    }
}

/// The walking and the precomputed exclusion rule agree, the segment-block shortcut agrees with the
/// per-pair rule, and the rule does what it says on simple yarns.
#[test]
fn exclusion_rule() {
    let mut rng = Rng(8);
    let mut p = params();
    let curves = random_curves(&mut rng, 3, 3, 2.0);
    let (topo, _) = Topology::from_curves(&curves).unwrap();
    for &arc in &[0.4f32, 1.0, 2.5] {
        p.exclusion_arc = arc;
        let ex = Exclusion::new(&topo, &p);
        let b = p.quadrature;
        let ns = topo.segments.len() as u32;
        let (mut n_excl, mut n_clear) = (0, 0);
        for sa in 0..ns {
            for sb in 0..ns {
                let block = ex.segment_exclusion(sa, sb);
                for ka in 0..b {
                    for kb in 0..b {
                        let e1 = excluded(&topo, sa, ka, sb, kb, &p);
                        let e2 = ex.excluded(sa, ka, sb, kb);
                        assert_eq!(e1, e2, "arc {arc} ({sa},{ka}) ({sb},{kb})");
                        assert_eq!(e1, excluded(&topo, sb, kb, sa, ka, &p), "symmetry");
                        match block {
                            SegmentExclusion::All => assert!(e1),
                            SegmentExclusion::Clear => assert!(!e1),
                            SegmentExclusion::Mixed => {}
                        }
                        if e1 {
                            n_excl += 1
                        } else {
                            n_clear += 1
                        }
                    }
                }
            }
        }
        assert!(n_excl > 0 && n_clear > 0);
    }
    // A straight open yarn with unit edges: points 0.5 and 1.5 units apart (b = 1).
    let line = Curve {
        points: (0..8).map(|i| [i as f32, 0.0, 0.0]).collect(),
        closed: false,
    };
    let (t, _) = Topology::from_curves(&[line]).unwrap();
    let p1 = ContactParams {
        quadrature: 1,
        exclusion_arc: 1.5,
        ..params()
    };
    assert!(excluded(&t, 0, 0, 0, 0, &p1));
    assert!(excluded(&t, 0, 0, 1, 0, &p1));
    assert!(!excluded(&t, 0, 0, 2, 0, &p1));
    // A closed square ring of 8 unit edges: segments 0 and 7 are neighbours the short way round.
    let ring = Curve {
        points: vec![
            [0., 0., 0.],
            [1., 0., 0.],
            [2., 0., 0.],
            [2., 1., 0.],
            [2., 2., 0.],
            [1., 2., 0.],
            [0., 2., 0.],
            [0., 1., 0.],
        ],
        closed: true,
    };
    let (t, _) = Topology::from_curves(&[ring]).unwrap();
    assert!(excluded(&t, 0, 0, 7, 0, &p1));
    assert!(!excluded(&t, 0, 0, 4, 0, &p1));
    assert!(Exclusion::new(&t, &p1).excluded(0, 0, 7, 0));
}

/// Forces do not depend on the number of threads (bitwise).
#[test]
fn exact_forces_independent_of_thread_count() {
    let mut rng = Rng(1);
    let curves = random_curves(&mut rng, 30, 20, 5.0);
    let (topo, pos) = Topology::from_curves(&curves).unwrap();
    let run = |threads: usize| {
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .build()
            .unwrap();
        pool.install(|| {
            let mut exact = ExactContact::new(R as f32, &params()).unwrap();
            let mut force = vec![[0.0f32; 4]; pos.len()];
            let mut stats = ContactStats::default();
            exact
                .add_forces(&topo, &pos, &pos, &mut force, &mut stats)
                .unwrap();
            force
        })
    };
    let f1 = run(1);
    assert!(f1.iter().any(|f| f[0] != 0.0));
    assert_eq!(f1, run(3));
    assert_eq!(f1, run(4));
}

/// Coincident quadrature points and non-finite positions are errors, not NaN forces.
#[test]
fn non_finite_is_an_error() {
    let a = Curve {
        points: (0..6).map(|i| [i as f32 * 0.3, 0.0, 0.0]).collect(),
        closed: false,
    };
    // Exact copy: every quadrature point coincides with its twin, d = 0.
    let (topo, pos) = Topology::from_curves(&[a.clone(), a.clone()]).unwrap();
    let mut exact = ExactContact::new(R as f32, &params()).unwrap();
    let mut force = vec![[0.0f32; 4]; pos.len()];
    let mut stats = ContactStats::default();
    let err = exact.add_forces(&topo, &pos, &pos, &mut force, &mut stats);
    assert!(
        matches!(err, Err(yarnsim::sim::ContactError::NotFinite { .. })),
        "{err:?}"
    );
    let (topo, mut pos) = Topology::from_curves(&[a]).unwrap();
    pos[3][1] = f32::NAN;
    let err = exact.add_forces(&topo, &pos, &pos, &mut force, &mut stats);
    assert!(
        matches!(err, Err(yarnsim::sim::ContactError::NotFinite { point: 3 })),
        "{err:?}"
    );
}

// ---------------------------------------------------------------------------------------------------
// Whole simulations with the exact contact model.

/// Structure of a knit under simulation, measured through the exact contact path's grid: the smallest
/// distance between quadrature points of different parts of yarn (non-excluded pairs, cm), and the
/// interlocks — pairs of loops (w, c), (w, c − 1) whose yarns touch (each loop hangs in the loop
/// below it, so an unravelling knit loses interlocks).
struct KnitProbe {
    exact: ExactContact,
    seg_loop: Vec<[u32; 2]>,
    b: u32,
    pairs: Vec<[u32; 2]>,
}

impl KnitProbe {
    fn new(topo: &Topology, point_loop: &[Vec<[u32; 2]>], p: &ContactParams) -> Self {
        let flat: Vec<[u32; 2]> = point_loop.iter().flatten().copied().collect();
        KnitProbe {
            exact: ExactContact::new(R as f32, p).unwrap(),
            seg_loop: topo
                .segments
                .iter()
                .map(|s| flat[s.cp[1] as usize])
                .collect(),
            b: p.quadrature,
            pairs: Vec::new(),
        }
    }

    /// (smallest distance, number of interlocked loop pairs).
    fn measure(&mut self, topo: &Topology, pos: &[[f32; 4]]) -> (f64, usize) {
        self.exact
            .touching_quadrature_pairs(topo, pos, &mut self.pairs)
            .unwrap();
        let q = self.exact.quadrature_positions();
        let mut dmin = f64::INFINITY;
        let mut links = std::collections::BTreeSet::new();
        for &[i, j] in &self.pairs {
            let d = (V3d::from4(q[i as usize]) - V3d::from4(q[j as usize])).norm();
            dmin = dmin.min(d);
            let (la, lb) = (
                self.seg_loop[(i / self.b) as usize],
                self.seg_loop[(j / self.b) as usize],
            );
            if la[0] == lb[0] && la[1].abs_diff(lb[1]) == 1 {
                links.insert((la.min(lb), la.max(lb)));
            }
        }
        (dmin, links.len())
    }
}

/// The "does not pass through" check of the hanging tests, cheap enough to run at every step and
/// written independently of the contact code under test: the quadrature points are evaluated here from
/// the control points (`spline::basis` at `spline::quad_param`, the shared definition of where they
/// lie), binned into a hashed uniform grid of its own with cells as wide as the distance looked for,
/// and every pair in neighbouring cells is measured.
///
/// "Different parts of yarn" are points on different yarns, or on one yarn more than
/// `ContactParams::exclusion_arc` of rest length apart along it (the shorter way round on a closed
/// yarn), arc measured here as rest length up to the segment plus `quad_param` of the segment's rest
/// length. Pairs the contact model excludes are left out the same way; the boundary of that rule
/// does not matter here, since points 8 r apart along a knitted yarn are far more than 0.5 r apart.
struct PassThroughCheck {
    seg_cp: Vec<[u32; 4]>,
    weights: Vec<[f64; 4]>,
    /// Per quadrature point: yarn and arc position (rest length) along it.
    yarn: Vec<u32>,
    arc: Vec<f64>,
    yarn_len: Vec<f64>,
    closed: Vec<bool>,
    exclusion: f64,
    /// Drift bound between grid searches (see [`PassThroughCheck::step`]): the control points at the
    /// previous step, max_k Σ_i |w_ik|, how far pairs may have closed in since the last search, how
    /// far they could close before one came nearer than the limit, and the number of searches.
    prev: Vec<[f32; 4]>,
    weight_sum: f64,
    drift: f64,
    margin: f64,
    pub searches: u64,
    /// Scratch: positions, grid cell of each point, bucket starts and the points sorted by bucket.
    pts: Vec<V3d>,
    cell: Vec<[i64; 3]>,
    start: Vec<u32>,
    order: Vec<u32>,
}

impl PassThroughCheck {
    fn new(topo: &Topology, p: &ContactParams) -> Self {
        let b = p.quadrature;
        let weights: Vec<[f64; 4]> = (0..b).map(|k| basis(quad_param::<f64>(k, b))).collect();
        // Quadrature point k of segment s is point s b + k.
        let n = topo.segments.len() * b as usize;
        let (mut yarn, mut arc) = (vec![u32::MAX; n], vec![0.0; n]);
        let (mut yarn_len, mut closed) = (vec![], vec![]);
        let seg_cp: Vec<[u32; 4]> = topo.segments.iter().map(|s| s.cp).collect();
        for (yi, y) in topo.yarns.iter().enumerate() {
            let mut acc = 0.0;
            for m in 0..y.num_segments {
                let si = (y.first_segment + m) as usize;
                let s = &topo.segments[si];
                assert_eq!(s.yarn as usize, yi);
                let len = topo.edges[s.edge as usize].rest_length as f64;
                for k in 0..b {
                    yarn[si * b as usize + k as usize] = yi as u32;
                    arc[si * b as usize + k as usize] = acc + quad_param::<f64>(k, b) * len;
                }
                acc += len;
            }
            yarn_len.push(acc);
            closed.push(y.closed != 0);
        }
        assert!(
            yarn.iter().all(|&y| y != u32::MAX),
            "every segment on a yarn"
        );
        PassThroughCheck {
            seg_cp,
            yarn,
            arc,
            yarn_len,
            closed,
            exclusion: p.exclusion_arc as f64,
            prev: Vec::new(),
            weight_sum: weights
                .iter()
                .map(|w| w.iter().map(|x| x.abs()).sum::<f64>())
                .fold(0.0, f64::max),
            drift: 0.0,
            margin: -1.0,
            searches: 0,
            weights,
            pts: vec![V3d::zero(); n],
            cell: vec![[0; 3]; n],
            start: vec![0; (2 * n).next_power_of_two() + 1],
            order: vec![0; n],
        }
    }

    fn different_parts(&self, i: usize, j: usize) -> bool {
        let y = self.yarn[i];
        if y != self.yarn[j] {
            return true;
        }
        let mut d = (self.arc[i] - self.arc[j]).abs();
        if self.closed[y as usize] {
            d = d.min(self.yarn_len[y as usize] - d);
        }
        d >= self.exclusion
    }

    /// Whether, at this step, two quadrature points of different parts of yarn are nearer than `limit`
    /// (cm): the closest such pair, or None. Equivalent to a grid search at every step, but searches
    /// only when it must: a quadrature point moves at most Σ_i |w_i| times the largest control-point
    /// displacement, so a pair's distance shrinks per step by at most twice that (the drift). A search
    /// (radius `2 limit`) gives the closest distance D (or at least 2 limit); until the summed drift
    /// since reaches D − limit, every pair is still farther than `limit` apart, and no search is needed.
    fn step(&mut self, pos: &[[f32; 4]], limit: f64) -> Option<(usize, usize, f64)> {
        if self.prev.len() == pos.len() {
            let disp = pos
                .iter()
                .zip(&self.prev)
                .map(|(a, b)| (V3d::from4(*a) - V3d::from4(*b)).norm())
                .fold(0.0, f64::max);
            self.drift += 2.0 * self.weight_sum * disp;
        } else {
            self.margin = -1.0;
        }
        self.prev.clear();
        self.prev.extend_from_slice(pos);
        if self.drift < self.margin {
            return None;
        }
        self.searches += 1;
        let found = self.closest_below(pos, 2.0 * limit);
        let d = found.map_or(2.0 * limit, |f| f.2);
        if d < limit {
            return found;
        }
        self.drift = 0.0;
        self.margin = d - limit;
        None
    }

    /// The closest pair of quadrature points of different parts of yarn nearer than `limit` (cm), as
    /// (i, j, distance), or None.
    fn closest_below(&mut self, pos: &[[f32; 4]], limit: f64) -> Option<(usize, usize, f64)> {
        let b = self.weights.len();
        for (s, cp) in self.seg_cp.iter().enumerate() {
            let q = cp.map(|c| V3d::from4(pos[c as usize]));
            for (k, w) in self.weights.iter().enumerate() {
                self.pts[s * b + k] = q[0] * w[0] + q[1] * w[1] + q[2] * w[2] + q[3] * w[3];
            }
        }
        // Counting sort of the points into hashed buckets of cells `limit` wide: any pair nearer than
        // `limit` lies in the same or in neighbouring cells.
        let mask = self.start.len() as u64 - 2;
        let hash = |c: [i64; 3]| -> usize {
            ((c[0].wrapping_mul(73_856_093)
                ^ c[1].wrapping_mul(19_349_663)
                ^ c[2].wrapping_mul(83_492_791)) as u64
                & mask) as usize
        };
        self.start.fill(0);
        for (i, p) in self.pts.iter().enumerate() {
            let c = [p.x, p.y, p.z].map(|x| (x / limit).floor() as i64);
            self.cell[i] = c;
            self.start[hash(c) + 1] += 1;
        }
        for h in 1..self.start.len() {
            self.start[h] += self.start[h - 1];
        }
        for i in 0..self.pts.len() {
            let h = hash(self.cell[i]);
            // `start[h]` runs up to `start[h + 1]` while filling; shifted back below.
            self.order[self.start[h] as usize] = i as u32;
            self.start[h] += 1;
        }
        for h in (1..self.start.len()).rev() {
            self.start[h] = self.start[h - 1];
        }
        self.start[0] = 0;
        let mut best: Option<(usize, usize, f64)> = None;
        for i in 0..self.pts.len() {
            let c = self.cell[i];
            for dx in -1..=1 {
                for dy in -1..=1 {
                    for dz in -1..=1 {
                        let h = hash([c[0] + dx, c[1] + dy, c[2] + dz]);
                        for &j in &self.order[self.start[h] as usize..self.start[h + 1] as usize] {
                            let j = j as usize;
                            if j <= i {
                                continue;
                            }
                            let d = (self.pts[i] - self.pts[j]).norm();
                            if d < limit
                                && best.is_none_or(|b| d < b.2)
                                && self.different_parts(i, j)
                            {
                                best = Some((i, j, d));
                            }
                        }
                    }
                }
            }
        }
        best
    }
}

/// The pass-through check's grid search finds the same closest pair as a brute-force search over all
/// pairs of quadrature points, for several search distances, on random, woven and (jittered) knit
/// configurations; its "different parts of yarn" are exactly the pairs the contact model does not
/// exclude; and its drift-bounded stepping reports exactly the steps a search at every step reports.
#[test]
fn pass_through_check_matches_brute_force() {
    let mut rng = Rng(4242);
    let p = params();
    for trial in 0..5 {
        let mut curves = match trial {
            0 => random_curves(&mut rng, 8, 5, 2.0),
            1 => woven_curves(6, 0.2, 0.1),
            2 => {
                knit::generate(Pattern::Stockinette, 5, 4, R as f32)
                    .unwrap()
                    .curves
            }
            3 => knit::generate(Pattern::Rib, 4, 3, R as f32).unwrap().curves,
            _ => {
                knit::generate(Pattern::Tube, 8, 3, R as f32)
                    .unwrap()
                    .curves
            }
        };
        if trial >= 2 {
            for q in curves.iter_mut().flat_map(|c| c.points.iter_mut()) {
                let d = rng.v3(R);
                *q = [q[0] + d.x as f32, q[1] + d.y as f32, q[2] + d.z as f32];
            }
        }
        let (topo, pos) = Topology::from_curves(&curves).unwrap();
        let mut check = PassThroughCheck::new(&topo, &p);
        let b = p.quadrature as usize;
        check.closest_below(&pos, R);
        let pts = check.pts.clone();
        let mut nearest = f64::INFINITY;
        for limit in [0.5 * R, R, 2.0 * R] {
            let mut brute: Option<(usize, usize, f64)> = None;
            for i in 0..pts.len() {
                for j in i + 1..pts.len() {
                    let d = (pts[i] - pts[j]).norm();
                    if d >= limit {
                        continue;
                    }
                    let diff = check.different_parts(i, j);
                    let ex = excluded(
                        &topo,
                        (i / b) as u32,
                        (i % b) as u32,
                        (j / b) as u32,
                        (j % b) as u32,
                        &p,
                    );
                    assert_eq!(diff, !ex, "trial {trial}: points {i}, {j}");
                    if diff && brute.is_none_or(|c| d < c.2) {
                        brute = Some((i, j, d));
                    }
                }
            }
            let grid = check.closest_below(&pos, limit);
            assert_eq!(grid, brute, "trial {trial}, limit {:.2} r", limit / R);
            if let Some(c) = brute {
                nearest = nearest.min(c.2);
            }
        }
        eprintln!("trial {trial}: nearest pair {:.3} r", nearest / R);
    }
    // Drift-bounded stepping against a search at every step, on a swatch that falls through itself
    // (no contact), over its first 0.05 s.
    let (mut sim, _, scene) = hanging_swatch(yarnsim::scene::ContactModel::None);
    let mut bounded = PassThroughCheck::new(&sim.topo, &scene.contact);
    let mut every = PassThroughCheck::new(&sim.topo, &scene.contact);
    let mut first = None;
    while sim.time < 0.05 {
        sim.step().unwrap();
        let got = bounded.step(&sim.pos, 0.5 * R);
        // Compared at every step from step 600 on (the yarns first pass through each other at step
        // 796) and at every 20th before, to keep the test short.
        if sim.steps >= 600 || sim.steps % 20 == 0 {
            let want = every.closest_below(&sim.pos, 0.5 * R);
            assert_eq!(got, want, "step {}", sim.steps);
            if want.is_some() && first.is_none() {
                first = Some(sim.steps);
            }
        }
    }
    eprintln!(
        "{} steps, {} bounded searches, first pass-through at step {first:?}",
        sim.steps, bounded.searches
    );
    assert!(first.is_some(), "the swatch did not pass through itself");
}

fn exact_scene() -> yarnsim::scene::Scene {
    let mut s = yarnsim::scene::Scene::default();
    s.contact.model = yarnsim::scene::ContactModel::Exact;
    s
}

/// Phase A's damping blocks of `side` × `side` loops, as `scene::build_curves` makes them.
fn damping_blocks(point_loop: &[Vec<[u32; 2]>], wales: u32, courses: u32, side: u32) -> Vec<u32> {
    let lb = yarnsim::scene::LoopBlocks::new(wales, courses, side);
    point_loop.iter().flatten().map(|&l| lb.block(l)).collect()
}

/// The 10 × 10-loop stockinette swatch of the hanging tests, pinned at the heads of its top course,
/// with the seed's parameters and the given contact model, built as a scene builds it (both damping
/// phases).
fn hanging_swatch(
    model: yarnsim::scene::ContactModel,
) -> (yarnsim::sim::Sim, knit::Knit, yarnsim::scene::Scene) {
    let mut scene = exact_scene();
    scene.contact.model = model;
    let r = scene.yarn.radius;
    let (wales, courses) = (10, 10);
    scene.cloth.push(yarnsim::scene::ClothPiece {
        source: yarnsim::scene::ClothSource::Generator {
            pattern: Pattern::Stockinette,
            wales,
            courses,
            section: None,
        },
        scale: 1.0,
        rotate_deg: [0.0; 3],
        translate: [0.0; 3],
    });
    let build = yarnsim::scene::build_curves(&scene, std::path::Path::new(".")).unwrap();
    // The generator's loop of each control point, for the probe.
    let k = knit::generate(Pattern::Stockinette, wales, courses, r).unwrap();
    assert_eq!(build.curves, k.curves);
    // The top course's heads (the generator centres the courses on y = 0, H = 6r).
    let top = (courses as f32 / 2.0 - 1.0) * 6.0 * r + 2.4 * r;
    let flat: Vec<[u32; 2]> = k.point_loop.iter().flatten().copied().collect();
    let pins: Vec<u32> = k
        .curves
        .iter()
        .flat_map(|c| c.points.iter())
        .enumerate()
        .filter(|(g, p)| p[1] > top && flat[*g][1] == courses - 1)
        .map(|(g, _)| g as u32)
        .collect();
    assert!(pins.len() >= 3 * wales as usize, "{} pins", pins.len());
    let contact: Box<dyn ContactForce> = match model {
        yarnsim::scene::ContactModel::Exact => {
            Box::new(ExactContact::new(r, &scene.contact).unwrap())
        }
        _ => Box::new(yarnsim::sim::NoContact),
    };
    let sim = yarnsim::sim::Sim::with_damping_phases(
        &scene,
        &build.curves,
        &[&build.damping_block, &build.damping_block_shifted],
        &pins,
        contact,
    )
    .unwrap();
    (sim, k, scene)
}

/// The control: without contact the same swatch's yarns pass through each other within 0.05 s
/// (first at step 796 of 810) and by 0.1 s loops have come apart, so the hanging test's criteria
/// (sampled closest approach, per-step pass-through check, interlock numbers) do fail for a knit that
/// unravels.
#[test]
fn hanging_swatch_without_contact_falls_through_itself() {
    let (mut sim, k, scene) = hanging_swatch(yarnsim::scene::ContactModel::None);
    let (wales, courses) = (10, 10);
    let mut probe = KnitProbe::new(&sim.topo, &k.point_loop, &scene.contact);
    let mut through = PassThroughCheck::new(&sim.topo, &scene.contact);
    let runs = interlock_runs(&k, Pattern::Stockinette, wales, courses);
    let interlocks0 = interlock_numbers_of(&k.curves, Pattern::Stockinette, &runs);
    let mut dmin = f64::INFINITY;
    let mut first = None;
    while sim.time < 0.05 {
        sim.step().unwrap();
        if sim.steps % 50 == 0 {
            dmin = dmin.min(probe.measure(&sim.topo, &sim.pos).0);
        }
        if first.is_none() && through.step(&sim.pos, 0.5 * R).is_some() {
            first = Some(sim.steps);
        }
    }
    assert!(dmin < 0.5 * R, "closest approach {:.3} r", dmin / R);
    // The hanging test's per-step check catches it too.
    assert!(first.is_some(), "no pass-through found");
    // And the interlock check: a little later, loops have come apart.
    while sim.time < 0.1 {
        sim.step().unwrap();
    }
    let now = interlock_numbers_of(&sim.curves(), Pattern::Stockinette, &runs);
    let lost = now
        .iter()
        .zip(&interlocks0)
        .filter(|(a, b)| (a.0 - b.0).abs() > 1e-6 || (a.1 - b.1).abs() > 1e-6)
        .count();
    eprintln!("first pass-through at step {first:?}; at 0.1 s {lost} loops lost their interlock");
    assert!(lost > 0, "no loop came apart");
}

/// Kinetic energy of the best rigid motion of the control points `pts` (mass-weighted least squares:
/// the linear velocity of their centre of mass plus the angular velocity `I⁻¹ L`), in f64.
fn rigid_kinetic_energy(pts: &[usize], mass: &[f32], pos: &[[f32; 4]], vel: &[[f32; 4]]) -> f64 {
    let (mut m, mut c, mut p) = (0.0, V3d::zero(), V3d::zero());
    for &i in pts {
        m += mass[i] as f64;
        c += V3d::from4(pos[i]) * mass[i] as f64;
        p += V3d::from4(vel[i]) * mass[i] as f64;
    }
    let (c, vcm) = (c / m, p / m);
    let mut l = V3d::zero();
    let mut inertia = yarnsim::math::M3::<f64>::zero();
    for &i in pts {
        let (r, w) = (V3d::from4(pos[i]) - c, mass[i] as f64);
        l += r.cross(V3d::from4(vel[i]) - vcm) * w;
        inertia = inertia.add_m(
            &yarnsim::math::M3::diag(r.norm2())
                .sub_m(&r.outer(r))
                .scale(w),
        );
    }
    // ω = I⁻¹ L by Cramer's rule (I is positive definite for points not all on one line).
    let det = inertia.det();
    let col = |k: usize| V3d::new(inertia.at(0, k), inertia.at(1, k), inertia.at(2, k));
    let solve = |k: usize| {
        let c: Vec<V3d> = (0..3).map(|j| if j == k { l } else { col(j) }).collect();
        yarnsim::math::M3::from_cols(c[0], c[1], c[2]).det() / det
    };
    let omega = V3d::new(solve(0), solve(1), solve(2));
    0.5 * m * vcm.norm2() + 0.5 * omega.dot(l)
}

/// A 10 × 10-loop stockinette swatch pinned along its top course hangs under gravity for 0.25 s with
/// the seed's parameters and exact contact: it does not unravel, its yarns have come to rest within
/// their loops, and the cloth as a whole has slowed down — but it is *not at rest* at 0.25 s.
///
/// Not unravelling: at every step no two quadrature points of different parts of yarn are closer
/// than 0.5 r ([`PassThroughCheck`], independent of the contact code, equivalent to a grid search
/// at every step); every 0.05 s each loop keeps the interlock numbers of
/// tests/knit.rs `courses_interlock` with the loop below (the loop count: a topological count that
/// only pass-through changes); and at the end each loop touches the loop below it.
///
/// Measured (two damping phases; h = 1/16200): kinetic energy peaks at 85 g·cm²/s² near 0.035 s as
/// the swatch drops into its hanging shape; at 0.25 s it is 2.0 (2.4 % of the peak), the fastest
/// point moves at 4.6 cm/s, and the motion of the yarns relative to their loops holds 6e-4 of the
/// peak. What is left is motion at the scale of the whole cloth, which the seed's non-rigid damping
/// over 4 × 4-loop blocks hardly touches: the swatch is still sagging and curling into its hanging
/// shape (bottom edge at 1.2 cm/s, a side-edge loop at 4.6 cm/s), and it swings out of plane about its
/// pinned top like a pendulum (period ≈ 0.5 s; 2π√(2H/3g) = 0.45 s for a rigid plate of height
/// H = 7.5 cm), a rigid motion that damping leaves alone by design. From 0.85 s on the kinetic
/// energy is that swing (over 99 % of it, except near the swing's turning points); its amplitude
/// decays with an e-folding time of about 1.7 s, so
/// "at rest" (no point faster than 0.4 cm/s, a tenth of a yarn radius per 30 fps frame) takes
/// seconds of simulated time, not 0.25 s. With a single fixed block partition instead of the two
/// alternating ones the peak is 136, and at 0.25 s the energy is 2.8 and a corner loop still moves at
/// 8.7 cm/s (the blocks' relative motion is not damped).
#[test]
fn hanging_swatch_holds_together_and_slows_down() {
    let (mut sim, k, scene) = hanging_swatch(yarnsim::scene::ContactModel::Exact);
    let (wales, courses) = (10, 10);
    let mut probe = KnitProbe::new(&sim.topo, &k.point_loop, &scene.contact);
    let (d0, links0) = probe.measure(&sim.topo, &sim.pos);
    eprintln!("start: dmin {:.3} r, interlocks {links0}", d0 / R);
    assert_eq!(links0, (wales * (courses - 1)) as usize);
    // The control points of each loop.
    let mut loops = vec![Vec::new(); (wales * courses) as usize];
    for (g, &[w, c]) in k.point_loop.iter().flatten().enumerate() {
        loops[(w + wales * c) as usize].push(g);
    }
    // Every loop is interlocked with the one below it: both legs through it, once each.
    let runs = interlock_runs(&k, Pattern::Stockinette, wales, courses);
    let interlocks0 = interlock_numbers_of(&k.curves, Pattern::Stockinette, &runs);
    assert_eq!(interlocks0.len(), (wales * (courses - 1)) as usize);
    for (l, r) in &interlocks0 {
        assert!(
            (l.abs() - 1.0).abs() < 1e-6 && (l - r).abs() < 1e-6,
            "{l} {r}"
        );
    }
    let mut through = PassThroughCheck::new(&sim.topo, &scene.contact);
    let mut check_time = std::time::Duration::ZERO;
    let steps = (0.25 / scene.simulation.dt).round() as u64;
    let t0 = std::time::Instant::now();
    let mut peak = 0.0f64;
    let mut last_links = 0;
    while sim.steps < steps {
        sim.step().unwrap();
        // No pass-through, checked at every step.
        let tc = std::time::Instant::now();
        if let Some((i, j, d)) = through.step(&sim.pos, 0.5 * R) {
            panic!(
                "step {}: quadrature points {i}, {j} of different parts of yarn {:.3} r apart",
                sim.steps,
                d / R
            );
        }
        check_time += tc.elapsed();
        if sim.steps.is_multiple_of(steps / 5) || sim.steps == steps {
            // Interlocks unchanged (a topological count: linking numbers of closed rings change only
            // when yarns pass through each other).
            let now = interlock_numbers_of(&sim.curves(), Pattern::Stockinette, &runs);
            for (i, (a, b)) in now.iter().zip(&interlocks0).enumerate() {
                assert!(
                    (a.0 - b.0).abs() < 1e-6 && (a.1 - b.1).abs() < 1e-6,
                    "step {}: loop ({}, {}) interlock {a:?}, was {b:?}",
                    sim.steps,
                    i as u32 % wales,
                    i as u32 / wales
                );
            }
        }
        if sim.steps % 150 == 0 || sim.steps == steps {
            let (dmin, links) = probe.measure(&sim.topo, &sim.pos);
            let (ke, vmax) = sim.kinetic_energy_and_max_speed();
            peak = peak.max(ke);
            eprintln!(
                "step {} t {:.4}: dmin {:.3} r, interlocks {links}, ke {ke:.3e}, vmax {vmax:.3} cm/s, wall {:.1} s",
                sim.steps,
                sim.time,
                dmin / R,
                t0.elapsed().as_secs_f64()
            );
            assert!(
                dmin > 0.5 * R,
                "step {}: yarns {:.3} r apart",
                sim.steps,
                dmin / R
            );
            last_links = links;
        }
    }
    eprintln!(
        "pass-through check: {:.2} s over {steps} steps ({} grid searches), whole run {:.2} s",
        check_time.as_secs_f64(),
        through.searches,
        t0.elapsed().as_secs_f64()
    );
    // While the cloth falls into its hanging shape a loop may sit slack in the one below; once it
    // hangs, every loop is loaded against the one below and touches it.
    assert_eq!(last_links, links0, "loops came apart");
    let (ke, vmax) = sim.kinetic_energy_and_max_speed();
    let all: Vec<usize> = (0..sim.pos.len()).collect();
    let swing = rigid_kinetic_energy(&all, &sim.mass, &sim.pos, &sim.vel);
    let in_loops: f64 = ke
        - loops
            .iter()
            .map(|l| rigid_kinetic_energy(l, &sim.mass, &sim.pos, &sim.vel))
            .sum::<f64>();
    eprintln!(
        "at 0.25 s: ke {ke:.3e} ({:.4} of peak {peak:.3e}), of it rigid motion of the whole {swing:.3e}, \
         motion within loops {in_loops:.3e} ({:.1e} of peak); vmax {vmax:.3} cm/s",
        ke / peak,
        in_loops / peak
    );
    // At rest at the scale of the yarns: what moves, moves loop by loop (the energy of motion within
    // the loops, where contact and bending act, is below 1e-3 of the peak).
    assert!(
        in_loops < 1e-3 * peak,
        "motion within loops {in_loops} at 0.25 s, peak {peak}"
    );
    // Slowed down: below 5 % of the peak energy, and no point faster than 5 % of the free-fall speed
    // scale √(2 g H) over the swatch's height H = 6r per course.
    assert!(
        ke < 0.05 * peak,
        "kinetic energy {ke} at 0.25 s, peak {peak}"
    );
    let height = courses as f64 * 6.0 * R;
    let g = scene
        .simulation
        .gravity
        .map(|x| x as f64 * x as f64)
        .iter()
        .sum::<f64>()
        .sqrt();
    let fall = (2.0 * g * height).sqrt();
    assert!(
        vmax < 0.05 * fall,
        "max speed {vmax:.2} cm/s at 0.25 s; free-fall scale {fall:.1} cm/s"
    );
}

/// What [`hang_tube`] saw: the linking certificates at 0 and every fifth of the run; the first step at
/// which two parts of yarn came nearer than 0.5 r (step, distance), if any; and at each fifth of the
/// run the number of (lower, upper) loop pairs whose interlock numbers differ from the start.
struct TubeRun {
    certs: Vec<String>,
    pass_through: Option<(u64, f64)>,
    lost_interlocks: Vec<usize>,
}

/// Runs a tube of closed courses, hanging from its top course, for `seconds` with the given contact
/// model, checking for pass-through at every step and the interlocks every fifth of the run.
fn hang_tube(model: yarnsim::scene::ContactModel, seconds: f64) -> TubeRun {
    let mut scene = exact_scene();
    scene.contact.model = model;
    let r = scene.yarn.radius;
    let (wales, courses) = (10, 8);
    let k = knit::generate(Pattern::Tube, wales, courses, r).unwrap();
    assert!(k.curves.iter().all(|c| c.closed));
    let blocks = damping_blocks(
        &k.point_loop,
        wales,
        courses,
        scene.yarn.damping_block_loops,
    );
    let flat: Vec<[u32; 2]> = k.point_loop.iter().flatten().copied().collect();
    let pins: Vec<u32> = (0..flat.len() as u32)
        .filter(|&g| flat[g as usize][1] == courses - 1)
        .collect();
    let contact: Box<dyn ContactForce> = match model {
        yarnsim::scene::ContactModel::Exact => {
            Box::new(ExactContact::new(r, &scene.contact).unwrap())
        }
        _ => Box::new(yarnsim::sim::NoContact),
    };
    let mut sim = yarnsim::sim::Sim::new(&scene, &k.curves, &blocks, &pins, contact).unwrap();
    // Each course's loops are interlocked with the course below: both legs through, once each.
    let runs = interlock_runs(&k, Pattern::Tube, wales, courses);
    let interlocks0 = interlock_numbers_of(&k.curves, Pattern::Tube, &runs);
    assert_eq!(interlocks0.len(), (wales * (courses - 1)) as usize);
    for (l, r) in &interlocks0 {
        assert!(
            (l.abs() - 1.0).abs() < 1e-6 && (l - r).abs() < 1e-6,
            "{l} {r}"
        );
    }
    let mut through = PassThroughCheck::new(&sim.topo, &scene.contact);
    let mut out = TubeRun {
        certs: vec![yarnsim::links::certificate(&sim.curves()).unwrap()],
        pass_through: None,
        lost_interlocks: Vec::new(),
    };
    let steps = (seconds / scene.simulation.dt).round() as u64;
    let every = steps / 5;
    while sim.steps < steps {
        sim.step().unwrap();
        if out.pass_through.is_none() {
            if let Some((_, _, d)) = through.step(&sim.pos, 0.5 * R) {
                out.pass_through = Some((sim.steps, d));
            }
        }
        if sim.steps.is_multiple_of(every) {
            let curves = sim.curves();
            // Curves that cross each other give a non-integer Gauss integral: record that too.
            out.certs.push(match yarnsim::links::certificate(&curves) {
                Ok(c) => c,
                Err(e) => format!("error: {e}"),
            });
            let now = interlock_numbers_of(&curves, Pattern::Tube, &runs);
            out.lost_interlocks.push(
                now.iter()
                    .zip(&interlocks0)
                    .filter(|(a, b)| (a.0 - b.0).abs() > 1e-6 || (a.1 - b.1).abs() > 1e-6)
                    .count(),
            );
        }
    }
    eprintln!(
        "{model:?}: {} grid searches over {steps} steps; pass-through {:?}; lost interlocks {:?}",
        through.searches, out.pass_through, out.lost_interlocks
    );
    out
}

/// A tube of closed courses keeps its linking certificate through 0.25 s of hanging with exact
/// contact; at every step no two parts of yarn come nearer than 0.5 r, and every loop stays
/// interlocked with the loop below it (`hanging_tube_without_contact_falls_through_itself` shows
/// these two criteria failing without contact).
///
/// Adjacent closed courses of a knit tube have Gauss linking number 0 (each interlock passes through
/// and back), so the certificate is the count line alone; a single place where two courses pass
/// through each other would make it ±1. (Courses falling *bodily* through each other, as they do
/// without contact, cross at every wale with alternating signs and keep 0: the certificate detects
/// local pass-through, not every one. `linked_chain_holds_with_contact_and_falls_apart_without` shows
/// it changing.)
#[test]
fn hanging_tube_keeps_its_linking_certificate() {
    let run = hang_tube(yarnsim::scene::ContactModel::Exact, 0.25);
    assert_eq!(run.certs[0], "8\n");
    assert!(
        run.certs.iter().all(|c| *c == run.certs[0]),
        "{:?}",
        run.certs
    );
    assert_eq!(run.pass_through, None, "yarns passed through each other");
    assert_eq!(run.lost_interlocks, vec![0; 5], "loops came apart");
}

/// The control: without contact the tube's lower courses fall out of the pinned top course within
/// 0.05 s, and the pass-through and interlock criteria of the hanging test catch it (the linking
/// certificate does not: see above).
#[test]
fn hanging_tube_without_contact_falls_through_itself() {
    let run = hang_tube(yarnsim::scene::ContactModel::None, 0.05);
    assert!(run.pass_through.is_some(), "no pass-through found");
    assert!(
        *run.lost_interlocks.last().unwrap() > 0,
        "{:?}",
        run.lost_interlocks
    );
}

/// A chain of five linked rings hangs from its pinned top ring: with exact contact the certificate
/// (four linked pairs) holds for 0.25 s; with no contact the rings fall through each other and it
/// changes.
#[test]
fn linked_chain_holds_with_contact_and_falls_apart_without() {
    let ring = |cy: f32, in_xy: bool| Curve {
        points: (0..12)
            .map(|i| {
                let a = std::f32::consts::TAU * i as f32 / 12.0;
                let (u, v) = (0.5 * a.cos(), 0.5 * a.sin());
                if in_xy {
                    [u, cy + v, 0.0]
                } else {
                    [0.0, cy + v, u]
                }
            })
            .collect(),
        closed: true,
    };
    let curves: Vec<Curve> = (0..5).map(|k| ring(-0.8 * k as f32, k % 2 == 0)).collect();
    let cert0 = yarnsim::links::certificate(&curves).unwrap();
    assert_eq!(cert0.lines().count(), 5, "{cert0}");
    let run = |model| {
        let mut scene = exact_scene();
        scene.contact.model = model;
        let contact: Box<dyn ContactForce> = match model {
            yarnsim::scene::ContactModel::Exact => {
                Box::new(ExactContact::new(scene.yarn.radius, &scene.contact).unwrap())
            }
            _ => Box::new(yarnsim::sim::NoContact),
        };
        let pins: Vec<u32> = (0..12).collect();
        let mut sim = yarnsim::sim::Sim::new(&scene, &curves, &[], &pins, contact).unwrap();
        let steps = (0.25 / scene.simulation.dt).round() as u64;
        let mut certs = Vec::new();
        while sim.steps < steps {
            sim.step().unwrap();
            if sim.steps.is_multiple_of(steps / 5) {
                certs.push(match yarnsim::links::certificate(&sim.curves()) {
                    Ok(c) => c,
                    Err(e) => format!("error: {e}"),
                });
            }
        }
        certs
    };
    let with = run(yarnsim::scene::ContactModel::Exact);
    assert!(with.iter().all(|c| *c == cert0), "{with:?}");
    let without = run(yarnsim::scene::ContactModel::None);
    assert_ne!(without.last(), Some(&cert0), "{without:?}");
}

/// Once warmed up, an exact contact step allocates nothing (one-worker pool, so every stage runs on
/// the counting thread; the stage code is the same with more workers).
#[test]
fn exact_contact_step_does_not_allocate() {
    let k = knit::generate(Pattern::Stockinette, 12, 12, R as f32).unwrap();
    let (topo, pos0) = Topology::from_curves(&k.curves).unwrap();
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(1)
        .build()
        .unwrap();
    pool.install(|| {
        let mut exact = ExactContact::new(R as f32, &params()).unwrap();
        let mut force = vec![[0.0f32; 4]; pos0.len()];
        let mut stats = ContactStats::default();
        let mut pos = pos0.clone();
        let mut rng = Rng(3);
        let mut jiggle = |pos: &mut Vec<[f32; 4]>| {
            for (p, p0) in pos.iter_mut().zip(&pos0) {
                for a in 0..3 {
                    p[a] = p0[a] + rng.range(-0.002, 0.002) as f32;
                }
            }
        };
        for _ in 0..3 {
            jiggle(&mut pos);
            exact
                .add_forces(&topo, &pos, &pos, &mut force, &mut stats)
                .unwrap();
        }
        ALLOCATIONS.store(0, std::sync::atomic::Ordering::SeqCst);
        let mut touching = 0;
        for _ in 0..20 {
            jiggle(&mut pos);
            COUNT_HERE.with(|c| c.set(true));
            exact
                .add_forces(&topo, &pos, &pos, &mut force, &mut stats)
                .unwrap();
            COUNT_HERE.with(|c| c.set(false));
            touching += exact.last_touching();
        }
        assert!(touching > 0);
        assert_eq!(ALLOCATIONS.load(std::sync::atomic::Ordering::SeqCst), 0);
        // The counter works: building a model allocates.
        COUNT_HERE.with(|c| c.set(true));
        let fresh = ExactContact::new(R as f32, &params()).unwrap();
        COUNT_HERE.with(|c| c.set(false));
        drop(fresh);
        assert!(ALLOCATIONS.load(std::sync::atomic::Ordering::SeqCst) > 0);
    });
}

/// No quadratic blow-up: the exact path's work (candidate segment pairs, touching pairs) per segment
/// stays flat from a 10 × 10 to a 100 × 100-loop swatch.
#[test]
fn exact_work_grows_linearly_with_swatch_size() {
    let mut per_segment = Vec::new();
    for n in [10u32, 40, 100] {
        let k = knit::generate(Pattern::Stockinette, n, n, R as f32).unwrap();
        let (topo, pos) = Topology::from_curves(&k.curves).unwrap();
        let mut exact = ExactContact::new(R as f32, &params()).unwrap();
        let mut force = vec![[0.0f32; 4]; pos.len()];
        let mut stats = ContactStats::default();
        exact
            .add_forces(&topo, &pos, &pos, &mut force, &mut stats)
            .unwrap();
        let s = topo.segments.len() as f64;
        per_segment.push((
            exact.candidates().len() as f64 / s,
            exact.last_touching() as f64 / s,
        ));
    }
    eprintln!("candidates, touching pairs per segment: {per_segment:?}");
    let (c10, t10) = per_segment[0];
    for &(c, t) in &per_segment[1..] {
        assert!(c < 1.25 * c10 && t < 1.25 * t10, "{per_segment:?}");
    }
}

/// Unusable parameters are errors naming the parameter.
#[test]
fn bad_parameters_are_errors() {
    let bad = |r: f32, f: &dyn Fn(&mut ContactParams)| {
        let mut p = params();
        f(&mut p);
        ExactContact::new(r, &p)
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default()
    };
    assert!(bad(0.0, &|_| {}).contains("yarn.radius"));
    assert!(bad(R as f32, &|p| p.quadrature = 0).contains("contact.quadrature"));
    assert!(bad(R as f32, &|p| p.grid_cell = 0.0).contains("contact.grid_cell"));
    assert!(bad(R as f32, &|p| p.stiffness = f32::NAN).contains("contact.stiffness"));
    assert!(bad(R as f32, &|p| p.exclusion_arc = -1.0).contains("contact.exclusion_arc"));
    assert!(ExactContact::new(R as f32, &params()).is_ok());
}
