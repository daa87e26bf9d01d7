//! Rod mechanics: analytic gradients against central finite differences (f64, the same generic code),
//! reference-twist bookkeeping, rest-state construction, force balance, quasi-static frames, plasticity.

use yarnsim::layout::Params;
use yarnsim::math::{V3d, V3};
use yarnsim::rod::{
    bend_gradient, frame_solve, frame_tiles, frame_transport, material_frames, parallel_transport,
    plasticity, reference_twist, rod_forces, BendLocal, RodParams, RodState, Stiffness,
    FRAME_FROZEN, FRAME_OWNED, FRAME_SOLVE_MAX_SWEEPS, FRAME_TILE, NONE,
};
use yarnsim::state::{Curve, Topology};

#[path = "support/rng.rs"]
mod rng;
use rng::Rng;

impl Rng {
    /// A random unit vector (rejection sampling in the unit ball, away from its centre).
    fn unit(&mut self) -> V3d {
        loop {
            let v = V3d::new(
                self.range(-1.0, 1.0),
                self.range(-1.0, 1.0),
                self.range(-1.0, 1.0),
            );
            let n = v.norm();
            if n > 0.2 && n < 1.0 {
                return v / n;
            }
        }
    }
}

fn perp(rng: &mut Rng, t: V3d) -> V3d {
    let v = rng.unit();
    (v - t * v.dot(t)).normalized()
}

/// A random bending element whose directors are fresh (⊥ the current tangents), with a naturally
/// curved and twisted rest shape, rest lengths unlike the current ones, and a reference twist carrying
/// extra windings of 2π.
fn random_bend(rng: &mut Rng) -> BendLocal<f64> {
    let x0 = V3d::new(
        rng.range(-1.0, 1.0),
        rng.range(-1.0, 1.0),
        rng.range(-1.0, 1.0),
    );
    let t0 = rng.unit();
    let mut t1 = rng.unit();
    while t0.dot(t1) < -0.5 {
        t1 = rng.unit();
    }
    let x1 = x0 + t0 * rng.range(0.5, 1.5);
    let x2 = x1 + t1 * rng.range(0.5, 1.5);
    let u = [perp(rng, t0), perp(rng, t1)];
    let windings = (rng.range(-2.5, 2.5)).round();
    let psi = reference_twist(u[0], t0, u[1], t1, 0.0) + windings * 2.0 * std::f64::consts::PI;
    BendLocal {
        x: [x0, x1, x2],
        u,
        theta: [rng.range(-3.0, 3.0), rng.range(-3.0, 3.0)],
        ref_twist: psi,
        rest_len: [rng.range(0.5, 1.5), rng.range(0.5, 1.5)],
        rest_kappa: [
            [rng.range(-1.0, 1.0), rng.range(-1.0, 1.0)],
            [rng.range(-1.0, 1.0), rng.range(-1.0, 1.0)],
        ],
        rest_twist: rng.range(-2.0, 2.0) + windings * 2.0 * std::f64::consts::PI,
    }
}

/// The element after its vertices moved to `x`: directors transported through time onto the new
/// tangents and ψ updated, exactly as the `material_frames` stage does between steps.
fn moved(b: &BendLocal<f64>, x: [V3d; 3]) -> BendLocal<f64> {
    let t_old = [
        (b.x[1] - b.x[0]).normalized(),
        (b.x[2] - b.x[1]).normalized(),
    ];
    let t_new = [(x[1] - x[0]).normalized(), (x[2] - x[1]).normalized()];
    let u = [
        parallel_transport(b.u[0], t_old[0], t_new[0]),
        parallel_transport(b.u[1], t_old[1], t_new[1]),
    ];
    let psi = reference_twist(u[0], t_new[0], u[1], t_new[1], b.ref_twist);
    BendLocal {
        x,
        u,
        ref_twist: psi,
        ..*b
    }
}

#[derive(Clone, Copy)]
enum Which {
    Bending,
    Twisting,
}

fn energy_of(b: &BendLocal<f64>, k: &Stiffness<f64>, w: Which) -> f64 {
    match w {
        Which::Bending => b.bending_energy(k),
        Which::Twisting => b.twisting_energy(k),
    }
}

fn grad_of(b: &BendLocal<f64>, k: &Stiffness<f64>, w: Which) -> ([V3d; 3], [f64; 2]) {
    match w {
        Which::Bending => b.bending_gradient(k),
        Which::Twisting => b.twisting_gradient(k),
    }
}

/// Relative error ‖g_fd − g‖ / ‖g‖ over the 9 position and 2 angle components.
fn check_gradient(w: Which, seed: u64) {
    let mut rng = Rng(seed);
    let k = Stiffness {
        bending: 2.5,
        twisting: 1.7,
    };
    let mut worst = 0.0f64;
    for _ in 0..200 {
        let b = random_bend(&mut rng);
        let (gx, gt) = grad_of(&b, &k, w);
        let eps = 1e-6;
        let mut num = 0.0;
        let mut den = 0.0;
        for v in 0..3 {
            for a in 0..3 {
                let mut xp = b.x;
                let mut xm = b.x;
                xp[v].set(a, xp[v].get(a) + eps);
                xm[v].set(a, xm[v].get(a) - eps);
                let fd = (energy_of(&moved(&b, xp), &k, w) - energy_of(&moved(&b, xm), &k, w))
                    / (2.0 * eps);
                num += (fd - gx[v].get(a)).powi(2);
                den += gx[v].get(a).powi(2);
            }
        }
        for (j, gtj) in gt.iter().enumerate() {
            let mut bp = b;
            let mut bm = b;
            bp.theta[j] += eps;
            bm.theta[j] -= eps;
            let fd = (energy_of(&bp, &k, w) - energy_of(&bm, &k, w)) / (2.0 * eps);
            num += (fd - gtj).powi(2);
            den += gtj.powi(2);
        }
        assert!(den > 1e-8, "degenerate random sample");
        worst = worst.max((num / den).sqrt());
    }
    assert!(worst < 1e-4, "relative gradient error {worst:e}");
}

#[test]
fn bending_gradient_matches_finite_differences() {
    check_gradient(Which::Bending, 0x1234_5678_9abc_def1);
}

#[test]
fn twisting_gradient_matches_finite_differences_including_reference_twist() {
    check_gradient(Which::Twisting, 0x0fed_cba9_8765_4321);
}

#[test]
fn twisting_gradient_in_positions_is_not_zero() {
    // The θ̂ (ψ) dependence must actually contribute: a bent, twisted element feels a positional
    // force from twisting alone.
    let mut rng = Rng(7);
    let k = Stiffness {
        bending: 0.0,
        twisting: 1.0,
    };
    let b = random_bend(&mut rng);
    let (gx, _) = b.twisting_gradient(&k);
    assert!(gx[0].norm() > 1e-3 && gx[2].norm() > 1e-3);
}

#[test]
fn theta_derivatives_match_finite_differences() {
    let mut rng = Rng(99);
    let k = Stiffness {
        bending: 1.3,
        twisting: 0.8,
    };
    for _ in 0..100 {
        let b = random_bend(&mut rng);
        let (g, h, _) = b.theta_derivatives(&k);
        let eps = 1e-4;
        for j in 0..2 {
            let mut bp = b;
            let mut bm = b;
            bp.theta[j] += eps;
            bm.theta[j] -= eps;
            let (ep, e0, em) = (b.energy(&k), bp.energy(&k), bm.energy(&k));
            let fd1 = (e0 - em) / (2.0 * eps);
            let fd2 = (e0 - 2.0 * ep + em) / (eps * eps);
            assert!(
                (fd1 - g[j]).abs() <= 1e-6 * (1.0 + g[j].abs()),
                "{fd1} vs {}",
                g[j]
            );
            assert!(
                (fd2 - h[j]).abs() <= 1e-4 * (1.0 + h[j].abs()),
                "{fd2} vs {}",
                h[j]
            );
        }
    }
}

#[test]
fn parallel_transport_is_the_minimal_rotation() {
    let mut rng = Rng(3);
    for _ in 0..100 {
        let a = rng.unit();
        let b = rng.unit();
        if a.dot(b) < -0.9 {
            continue;
        }
        assert!((parallel_transport(a, a, b) - b).norm() < 1e-12);
        let u = perp(&mut rng, a);
        let pu = parallel_transport(u, a, b);
        assert!((pu.norm() - 1.0).abs() < 1e-12 && pu.dot(b).abs() < 1e-12);
        // The rotation axis a × b is left alone.
        let k = a.cross(b);
        assert!((parallel_transport(k, a, b) - k).norm() < 1e-12);
    }
}

#[test]
fn reference_twist_follows_windings_beyond_two_pi() {
    // Turn the second director about its tangent by small steps through three and a half turns;
    // the tracked ψ must follow the total angle, not wrap.
    let t0 = V3d::new(1.0, 0.0, 0.0);
    let t1 = V3d::new(0.8, 0.6, 0.0);
    let u0 = V3d::new(0.0, 0.0, 1.0);
    let base = parallel_transport(u0, t0, t1);
    let mut psi = reference_twist(u0, t0, base, t1, 0.0);
    assert!(psi.abs() < 1e-12);
    let total = 3.5 * 2.0 * std::f64::consts::PI;
    let n = 100;
    for i in 1..=n {
        let a = total * i as f64 / n as f64;
        let u1 = base * a.cos() + t1.cross(base) * a.sin();
        psi = reference_twist(u0, t0, u1, t1, psi);
        assert!((psi - a).abs() < 1e-9, "step {i}: ψ = {psi}, turned {a}");
    }
}

fn wavy(n: usize, closed: bool, phase: f32) -> Curve {
    let points = (0..n)
        .map(|i| {
            let s = i as f32 / n as f32;
            if closed {
                let a = s * std::f32::consts::TAU;
                [
                    2.0 * a.cos(),
                    2.0 * a.sin() + 0.3 * (3.0 * a).sin(),
                    0.4 * (2.0 * a + phase).cos(),
                ]
            } else {
                [
                    i as f32 * 0.3,
                    0.4 * (5.0 * s + phase).sin(),
                    0.3 * (7.0 * s).cos(),
                ]
            }
        })
        .collect();
    Curve { points, closed }
}

fn params() -> RodParams {
    RodParams {
        bending: 3.0,
        twisting: 2.0,
        plastic_radius: f32::INFINITY,
        plastic_max: f32::INFINITY,
    }
}

/// The kernels' `params` block for a bare rod: the material constants of `p`, `sweeps` frame sweeps
/// and the element counts of `rod` and `pos`.
fn kernel_params(rod: &RodState, p: &RodParams, sweeps: u32, pos: &[[f32; 4]]) -> Params {
    Params {
        bending: p.bending,
        twisting: p.twisting,
        plastic_radius: p.plastic_radius,
        plastic_max: p.plastic_max,
        frame_sweeps: sweeps,
        num_points: pos.len() as u32,
        num_edges: rod.frames.len() as u32,
        num_bends: rod.bends.len() as u32,
        ..Params::default()
    }
}

fn forces(rod: &mut RodState, p: &RodParams, pos: &[[f32; 4]], mass: &[f32]) -> Vec<[f32; 4]> {
    let mut f = vec![[0.0; 4]; pos.len()];
    let params = kernel_params(rod, p, 0, pos);
    bend_gradient(
        &params,
        &rod.bends,
        &rod.rest,
        &rod.frames,
        pos,
        &mut rod.bend_grad,
    );
    rod_forces(&params, &rod.point_bends, mass, &rod.bend_grad, &mut f);
    f
}

/// Stage `material_frames` over the rod's own buffers: directors transported to `pos`, then `sweeps`
/// red–black sweeps of the material angles.
fn frames(rod: &mut RodState, p: &RodParams, topo: &Topology, sweeps: u32, pos: &[[f32; 4]]) {
    let params = kernel_params(rod, p, sweeps, pos);
    material_frames(
        &params,
        &topo.edges,
        &rod.bends,
        &rod.edge_bends,
        &rod.edge_order,
        &rod.color_start,
        pos,
        &mut rod.rest,
        &mut rod.frames,
        &mut rod.bend_kb,
        &mut rod.theta_step,
        &mut rod.theta_start,
        &mut rod.rest_start,
    );
}

#[test]
fn initial_configuration_is_a_rest_state_for_open_and_closed_yarns() {
    let curves = [
        wavy(17, false, 0.3),
        wavy(15, true, 1.1),
        wavy(16, true, 0.0),
    ];
    let (topo, pos) = Topology::from_curves(&curves).unwrap();
    let mut rod = RodState::new(&topo, &pos).unwrap();
    // Bending elements: interior vertices of the open yarn, every vertex of the closed ones.
    assert_eq!(rod.bends.len(), 15 + 15 + 16);
    let p = params();
    assert!(rod.energy(&p, &pos).abs() < 1e-9);
    let f = forces(&mut rod, &p, &pos, &vec![1.0; pos.len()]);
    let fmax = f
        .iter()
        .map(|v| V3::<f32>::from4(*v).norm())
        .fold(0.0, f32::max);
    assert!(fmax < 1e-4, "rest forces {fmax}");
    // The closed yarns' closing vertex carries the holonomy of the twist-free frame as rest twist.
    let closing = rod.rest.iter().map(|r| r.twist.abs()).fold(0.0, f32::max);
    assert!(closing > 1e-3);
}

#[test]
fn rod_forces_are_internal_no_net_force_or_torque() {
    let curves = [wavy(20, false, 0.0), wavy(13, true, 0.5)];
    let (topo, pos0) = Topology::from_curves(&curves).unwrap();
    let mut rod = RodState::new(&topo, &pos0).unwrap();
    let mut rng = Rng(11);
    // Deform and re-transport the frames: a generic bent and twisted state. Angular momentum is
    // conserved by the reduced (quasi-static θ) dynamics only, where ∂E/∂θ = 0 — with the frame
    // transported through time, a rigid rotation twists the material relative to its reference — so
    // solve the angles first.
    let pos: Vec<[f32; 4]> = pos0
        .iter()
        .map(|p| {
            [
                p[0] + rng.range(-0.05, 0.05) as f32,
                p[1] + rng.range(-0.05, 0.05) as f32,
                p[2] + rng.range(-0.05, 0.05) as f32,
                0.0,
            ]
        })
        .collect();
    for f in rod.frames.iter_mut() {
        f.u[3] = rng.range(-0.5, 0.5) as f32;
    }
    let p = params();
    frames(&mut rod, &p, &topo, 400, &pos);
    let f = forces(&mut rod, &p, &pos, &vec![1.0; pos.len()]);
    let mut net = V3d::zero();
    let mut torque = V3d::zero();
    let mut scale = 0.0f64;
    for (x, fi) in pos.iter().zip(&f) {
        let fv = V3d::from4(*fi);
        net += fv;
        torque += V3d::from4(*x).cross(fv);
        scale = scale.max(fv.norm());
    }
    assert!(scale > 1.0, "deformation produced no force");
    assert!(
        net.norm() < 1e-5 * scale * pos.len() as f64,
        "net force {net:?}"
    );
    assert!(
        torque.norm() < 1e-4 * scale * pos.len() as f64,
        "net torque {torque:?}"
    );
}

#[test]
fn quasi_static_frames_remove_twist_gradient() {
    let curves = [wavy(24, false, 0.7)];
    let (topo, pos) = Topology::from_curves(&curves).unwrap();
    let mut rod = RodState::new(&topo, &pos).unwrap();
    let p = params();
    let mut rng = Rng(5);
    for f in rod.frames.iter_mut() {
        f.u[3] += rng.range(-0.3, 0.3) as f32;
    }
    let e0 = rod.energy(&p, &pos);
    assert!(e0 > 1e-3);
    let mut prev = e0;
    for _ in 0..200 {
        frames(&mut rod, &p, &topo, 4, &pos);
        let e = rod.energy(&p, &pos);
        assert!(e <= prev * (1.0 + 1e-5) + 1e-9, "energy rose {prev} → {e}");
        prev = e;
    }
    assert!(prev < 1e-4 * e0, "frames did not relax: {e0} → {prev}");
}

#[test]
fn plasticity_drags_rest_curvature_and_bounds_it() {
    let curves = [wavy(12, false, 0.0)];
    let (topo, pos0) = Topology::from_curves(&curves).unwrap();
    let mut rod = RodState::new(&topo, &pos0).unwrap();
    // Bend the yarn strongly: move one interior point sideways.
    let mut pos = pos0.clone();
    pos[6][1] += 0.2;
    pos[6][2] -= 0.15;
    let mut p = params();
    frames(&mut rod, &p, &topo, 0, &pos);
    p.plastic_radius = 0.01;
    p.plastic_max = 0.5;
    let before = rod.rest.clone();
    let params = kernel_params(&rod, &p, 0, &pos);
    plasticity(
        &params,
        &rod.bends,
        &rod.frames,
        &rod.bend_kb,
        &mut rod.rest,
    );
    let mut moved = 0;
    for (bi, b) in rod.bends.iter().enumerate() {
        let g = BendLocal::<f64>::gather(b, &rod.rest[bi], &rod.frames, &pos).geometry();
        for j in 0..2 {
            let r = rod.rest[bi].kappa[j];
            let d = ((r[0] as f64 - g.omega[j][0]).powi(2) + (r[1] as f64 - g.omega[j][1]).powi(2))
                .sqrt();
            let n = ((r[0] as f64).powi(2) + (r[1] as f64).powi(2)).sqrt();
            assert!(n <= 0.5 + 1e-6);
            if n < 0.5 - 1e-6 {
                assert!(d <= 0.01 + 1e-6, "rest not within p_plastic: {d}");
            }
            if r != before[bi].kappa[j] {
                moved += 1;
            }
        }
    }
    assert!(moved > 0);
}

/// The curvature bound is the larger of p_max and the element's starting curvature: a model's own
/// sharper bend is never clipped, plastic flow may not go beyond it, and below it p_max acts as before.
#[test]
fn plastic_bound_is_the_larger_of_p_max_and_the_start() {
    use yarnsim::rod::plastic_kappa;
    let (pp, pm) = (0.01f64, 2.5f64);
    // At rest at its start, beyond p_max: unchanged.
    assert_eq!(
        plastic_kappa([3.0, 0.0], [3.0, 0.0], pp, pm, 3.0),
        [3.0, 0.0]
    );
    // Bent further: dragged towards ω = 4, then bounded by the start, 3.
    let k = plastic_kappa([3.0, 0.0], [4.0, 0.0], pp, pm, 3.0);
    assert!((k[0] - 3.0).abs() < 1e-12 && k[1] == 0.0, "{k:?}");
    // Straightened: follows ω down to within p_plastic, no bound acts.
    let k = plastic_kappa([3.0, 0.0], [1.0, 0.0], pp, pm, 3.0);
    assert!((k[0] - 1.01).abs() < 1e-12, "{k:?}");
    // An element that started below p_max is bounded by p_max, as in the seed.
    let k = plastic_kappa([2.4, 0.0], [4.0, 0.0], pp, pm, 2.4);
    assert!((k[0] - 2.5).abs() < 1e-12, "{k:?}");
    // Without a starting curvature (checkpoints from before it existed): p_max alone.
    let k = plastic_kappa([0.0, 3.0], [0.0, 3.0], pp, pm, 0.0);
    assert!((k[1] - 2.5).abs() < 1e-12, "{k:?}");
}

/// RodState records each element's starting |ω̄| as its kappa_start, exactly as the f32 norm the
/// plasticity bound compares it with.
#[test]
fn rest_state_records_the_starting_curvature() {
    let curves = [wavy(12, false, 0.0), wavy(9, true, 0.3)];
    let (topo, pos) = Topology::from_curves(&curves).unwrap();
    let rod = RodState::new(&topo, &pos).unwrap();
    let mut nonzero = 0;
    for r in &rod.rest {
        let n = r
            .kappa
            .iter()
            .map(|k| (k[0] * k[0] + k[1] * k[1]).sqrt())
            .fold(0.0f32, f32::max);
        assert_eq!(r.kappa_start, n);
        nonzero += (n > 0.0) as usize;
    }
    assert!(nonzero > rod.rest.len() / 2);
}

/// `frame_solve` (the GPU's material frames after `frame_transport`, in tiles of 256 edges, here
/// its CPU twin) gives what `material_frames` and `plasticity` give over the whole rod, bit for
/// bit (angles, rest states, κb), taking the rest states from `rest_start` only: open and closed
/// yarns shorter and longer than a tile, several sharing one, a ring of 257 edges (the shortest
/// cut into tiles), and 1 to 32 sweeps; from moved positions and angles moved off their minimum,
/// so every edge has work (the halos' frozen ends included) and elements flow. Every edge and
/// every element is owned by exactly one tile, and halos exist.
#[test]
fn frame_solve_tiles_give_the_sweeps_angles_bit_for_bit() {
    let curves = [
        wavy(4, false, 0.1),
        wavy(3, true, 0.2),
        wavy(41, false, 0.3),
        wavy(100, true, 0.4),
        wavy(256, true, 0.5),
        wavy(257, true, 0.6),
        wavy(700, false, 0.7),
        wavy(1001, true, 0.8),
        wavy(5, true, 0.9),
    ];
    let (topo, pos0) = Topology::from_curves(&curves).unwrap();
    let rod0 = RodState::new(&topo, &pos0).unwrap();
    let p = params();
    let mut rng = Rng(11);
    let pos: Vec<[f32; 4]> = pos0
        .iter()
        .map(|x| {
            let d = 0.02;
            [
                x[0] + rng.range(-d, d) as f32,
                x[1] + rng.range(-d, d) as f32,
                x[2] + rng.range(-d, d) as f32,
                0.0,
            ]
        })
        .collect();
    let mut start = rod0.clone();
    for f in start.frames.iter_mut() {
        f.u[3] += rng.range(-0.4, 0.4) as f32;
    }
    // Finite plasticity bounds, so the elements flow.
    let p = RodParams {
        plastic_radius: 0.05,
        plastic_max: 1.0,
        ..p
    };
    for sweeps in [1, 2, 5, FRAME_SOLVE_MAX_SWEEPS] {
        let params = kernel_params(&start, &p, sweeps, &pos);
        let mut want = start.clone();
        material_frames(
            &params,
            &topo.edges,
            &want.bends,
            &want.edge_bends,
            &want.edge_order,
            &want.color_start,
            &pos,
            &mut want.rest,
            &mut want.frames,
            &mut want.bend_kb,
            &mut want.theta_step,
            &mut want.theta_start,
            &mut want.rest_start,
        );
        plasticity(
            &params,
            &want.bends,
            &want.frames,
            &want.bend_kb,
            &mut want.rest,
        );
        let tiles = frame_tiles(
            &topo,
            &start.bends,
            &start.edge_bends,
            &start.edge_order,
            &start.color_start,
            sweeps,
        )
        .expect("tiles");
        assert_eq!(tiles.len() % FRAME_TILE, 0);
        let mut owners = vec![0u32; start.frames.len()];
        let mut element_owners = vec![0u32; start.bends.len()];
        let mut frozen = 0;
        for w in &tiles {
            if w[0] != NONE {
                let owned = w[3] & FRAME_OWNED != 0;
                owners[w[0] as usize] += owned as u32;
                if owned && w[1] != NONE {
                    element_owners[w[1] as usize] += 1;
                }
                frozen += (w[3] & FRAME_FROZEN != 0) as u32;
            }
        }
        assert!(
            owners.iter().all(|&n| n == 1),
            "{sweeps} sweeps: an edge owned ≠ once"
        );
        assert!(
            element_owners.iter().all(|&n| n == 1),
            "{sweeps} sweeps: an element written ≠ once"
        );
        assert!(frozen > 0, "{sweeps} sweeps: no tile has a halo");
        let mut got = start.clone();
        // The rest states are the start's, and the twin must take them from rest_start.
        got.rest.iter_mut().for_each(|r| r.ref_twist = f32::NAN);
        frame_transport(
            &params,
            &topo.edges,
            &pos,
            &mut got.frames,
            &mut got.theta_start,
            &got.edge_bends,
            &start.rest,
            &mut got.rest_start,
        );
        frame_solve(
            &params,
            &tiles,
            &got.bends,
            &pos,
            &got.theta_start,
            &got.rest_start,
            &mut got.frames,
            &mut got.rest,
            &mut got.bend_kb,
        );
        let moved = got
            .frames
            .iter()
            .zip(&got.theta_start)
            .filter(|(f, s)| (f.u[3] - **s).abs() > 1e-4)
            .count();
        assert!(
            moved > got.frames.len() / 2,
            "{sweeps} sweeps: {moved} angles moved"
        );
        for (e, (g, w)) in got.frames.iter().zip(&want.frames).enumerate() {
            assert_eq!(
                g.u.map(f32::to_bits),
                w.u.map(f32::to_bits),
                "{sweeps} sweeps, edge {e}: {:?} ≠ {:?}",
                g.u,
                w.u
            );
            assert_eq!(g.t, w.t);
        }
        assert_eq!(got.rest, want.rest, "{sweeps} sweeps: rest states");
        assert_eq!(got.bend_kb, want.bend_kb, "{sweeps} sweeps: κb");
        let flowed = got
            .rest
            .iter()
            .zip(&start.rest)
            .filter(|(a, b)| a.kappa != b.kappa)
            .count();
        assert!(flowed > 0, "{sweeps} sweeps: no element flowed");
    }
    assert!(frame_tiles(
        &topo,
        &start.bends,
        &start.edge_bends,
        &start.edge_order,
        &start.color_start,
        FRAME_SOLVE_MAX_SWEEPS + 1
    )
    .is_none());
}
