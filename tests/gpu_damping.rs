//! Parity of the `nonrigid_damping` and `object_contact` kernels with their CPU twins
//! (`step::nonrigid_damping`, `step::object_contact`) on states of a real scene (scenes/tiny.toml
//! after 200 CPU steps: hanging from its pins above the floor, moving), on both damping phases, on
//! hand-made block lists (blocks larger than the workgroup, so each thread sums a strided share of
//! several points; tiny blocks; more than 65,535 blocks, so the 2-D grid), and against a floor, a
//! sphere and a capsule placed through the cloth.
//!
//! The twins take every sum in the kernels' order and the same operations, so on a GPU that does not
//! fuse multiply-adds and rounds division and square root correctly (lavapipe) the results are equal
//! bit for bit. The tolerances below are first-order bounds for a GPU that does either; each is
//! derived in the doc comment of the function computing it ([`damping_bounds`], [`contact_bounds`])
//! and evaluated per point from the data in f64; each test also checks that the twin lies within
//! half its bound of the same computation in f64, so the derivation is not too optimistic. Every
//! test prints its worst difference relative to its bound.

#[path = "support/fixture.rs"]
mod fixture;

use fixture::{bytes, scene_sim};
use yarnsim::gpu::testing::gpu_or_skip;
use yarnsim::gpu::Gpu;
use yarnsim::layout::{ObstacleShape, Params};
use yarnsim::math::V3;
use yarnsim::pipelines::run_kernel;
use yarnsim::sim::Sim;
use yarnsim::step::{self, DAMPING_WG, OBSTACLE_CAPSULE, OBSTACLE_PLANE, OBSTACLE_SPHERE};

/// Unit roundoff of f32 (half an ulp at 1).
const U: f64 = 1.0 / (1u64 << 24) as f64;

type V3d = V3<f64>;

fn v3(p: [f32; 4]) -> V3d {
    V3d::new(p[0] as f64, p[1] as f64, p[2] as f64)
}

/// A damping input: the buffers of the kernel's bindings.
#[derive(Clone)]
struct DampingCase {
    params: Params,
    block_start: Vec<u32>,
    block_points: Vec<u32>,
    mass: Vec<f32>,
    inv_mass: Vec<f32>,
    pos: Vec<[f32; 4]>,
    vel: Vec<[f32; 4]>,
}

impl DampingCase {
    /// The damping of step `step` of `sim` (its phase), on the sim's current state.
    fn of_sim(sim: &yarnsim::sim::Sim, step: u64) -> DampingCase {
        let (first_block, num_blocks) = sim.damping_phase(step);
        DampingCase {
            params: Params {
                first_block,
                num_blocks,
                step: step as u32,
                ..sim.step_params()
            },
            block_start: sim.block_start.clone(),
            block_points: sim.block_points.clone(),
            mass: sim.mass.clone(),
            inv_mass: sim.inv_mass.clone(),
            pos: sim.pos.clone(),
            vel: sim.vel.clone(),
        }
    }

    fn gpu(&self, gpu: &Gpu) -> Vec<[f32; 4]> {
        let out = run_kernel(
            gpu,
            "nonrigid_damping",
            &[
                ("params", bytes(&[self.params])),
                ("block_start", bytes(&self.block_start)),
                ("block_points", bytes(&self.block_points)),
                ("mass", bytes(&self.mass)),
                ("inv_mass", bytes(&self.inv_mass)),
                ("pos", bytes(&self.pos)),
                ("vel", bytes(&self.vel)),
            ],
            self.params.num_blocks * DAMPING_WG,
        )
        .unwrap();
        bytemuck::cast_slice(&out["vel"]).to_vec()
    }

    fn twin(&self) -> Vec<[f32; 4]> {
        let mut vel = self.vel.clone();
        step::nonrigid_damping(
            &self.params,
            &self.block_start,
            &self.block_points,
            &self.mass,
            &self.inv_mass,
            &self.pos,
            &mut vel,
        );
        vel
    }

    /// Runs both, checks them against [`damping_bounds`], and returns the worst difference relative
    /// to its bound, the worst absolute difference and how many points the damping changed.
    fn check(&self, gpu: &Gpu, name: &str) -> (f64, f64, usize) {
        step::check_damping_blocks(&self.block_start).unwrap();
        let g = self.gpu(gpu);
        let c = self.twin();
        let (bound, oracle) = damping_bounds(self);
        let stray = check_oracle(name, &c, &oracle, &bound);
        let changed = c.iter().zip(&self.vel).filter(|(a, b)| a != b).count();
        // Every free point of the phase's blocks of 2 or more points was damped (so the comparison
        // is not of two copies of the input).
        let first = self.params.first_block as usize;
        let free: usize = (first..first + self.params.num_blocks as usize)
            .map(|b| {
                &self.block_points[self.block_start[b] as usize..self.block_start[b + 1] as usize]
            })
            .filter(|pts| pts.len() >= 2)
            .map(|pts| {
                pts.iter()
                    .filter(|&&p| self.inv_mass[p as usize] != 0.0)
                    .count()
            })
            .sum();
        assert_eq!(changed, free, "{name}: points damped by the twin");
        let (mut worst, mut worst_abs) = (0.0f64, 0.0f64);
        for (i, (gv, cv)) in g.iter().zip(&c).enumerate() {
            for k in 0..4 {
                if gv[k] == cv[k] {
                    continue;
                }
                let d = (gv[k] as f64 - cv[k] as f64).abs();
                // w is written as 0 by both; unchanged points must be untouched by both.
                let b = if k < 3 { bound[i] } else { 0.0 };
                assert!(
                    d <= b,
                    "{name}: point {i} component {k}: gpu {} cpu {} (difference {d:e} > bound {b:e})",
                    gv[k],
                    cv[k]
                );
                worst = worst.max(d / b);
                worst_abs = worst_abs.max(d);
            }
        }
        eprintln!(
            "{name}: {} blocks, {changed} points damped; worst |gpu − cpu| = {worst_abs:e} \
             ({worst:.3} of its bound); twin vs f64 oracle: {stray:.3} of half the bound",
            self.params.num_blocks
        );
        (worst, worst_abs, changed)
    }
}

/// Per point, a first-order bound on |gpu − cpu| of one velocity component after the damping, when
/// the GPU may fuse multiply-adds and round division and square root to Vulkan's 2.5–3 ulp.
///
/// Derivation. Every quantity the kernel reduces (mass, first moment, momentum; angular momentum and
/// inertia; ‖v_nr‖²) is a sum of products, taken as a per-thread chain of ⌈k/64⌉ additions, then 7
/// additions within a group of 8 partials and 7 over the 8 groups. Two evaluations that may each
/// fuse or not differ by at most one rounding per addition of that chain, per product, and per
/// following division: with `D = ⌈k/64⌉ + 14` and `γ = 2 (D + 10)
/// u` (u = 2⁻²⁴; the 10 covers the product, the divisions, the square root and their 2.5-ulp Vulkan
/// precision; 2 because both evaluations stray from the exact value), a sum `Σ x_i` differs by at most
/// `γ Σ |x_i|`. Through the rigid fit, with sums in f64 over the block's points:
/// - `Δvcm ≤ γ Σ m|v| / M`, `Δc ≤ γ Σ m|q − o| / M + u |c|`;
/// - componentwise, `ΔL_a ≤ γ Σ m (|r_j u_k| + |r_k u_j|) + Σ m (Δc |u| + |r| Δvcm)` (u = v − vcm,
///   (a, j, k) cyclic), `ΔI_ab ≤ γ Σ m |terms of I_ab| + 2 Σ m|r| Δc`, plus 1e-5 of the trace's on
///   the diagonal (the regularisation);
/// - ω = A⁻¹L by cofactors (A the regularised inertia, e its regularisation), componentwise:
///   `Δω ≤ |A⁻¹| (ΔL + ΔA |ω|) + (the solve's own rounding, [`solve_stray`])`; then each of the
///   `RIGID_REFINEMENTS` refinements `ω' = A⁻¹ (L + e ω)` alike, with `ΔL + Δe |ω| + e Δω` and the
///   rounding of `L + e ω` in place of ΔL; and `|Δω × r| ≤ Σ_a Δω_a |r ⊥ e_a|`;
/// - per point `Δv_nr ≤ Δvcm + |Δω × r| + |ω| Δc + γ (|v| + |vcm| + |ω||r|)`;
/// - `Δ‖v_nr‖ ≤ γ ‖v_nr‖ + √k max Δv_nr`, and the factor `f = min(1, max(hμ_p, hμ_c √k/‖v_nr‖))`:
///   `Δf ≤ f (γ + Δ‖v_nr‖ / ‖v_nr‖)`;
/// - the update `v − f v_nr`: `Δv' ≤ Δf |v_nr| + f Δv_nr + γ (|v| + f |v_nr|)`.
///
/// Points outside the phase's blocks, in blocks of fewer than 2 points, glued points and points of
/// a block without non-rigid motion are not written by either: bound 0.
fn damping_bounds(case: &DampingCase) -> (Vec<f64>, Vec<V3d>) {
    let p = &case.params;
    let mut bound = vec![0.0f64; case.pos.len()];
    let mut oracle: Vec<V3d> = case.vel.iter().map(|&v| v3(v)).collect();
    let first = p.first_block as usize;
    for b in first..first + p.num_blocks as usize {
        let pts =
            &case.block_points[case.block_start[b] as usize..case.block_start[b + 1] as usize];
        let k = pts.len();
        if k < 2 {
            continue;
        }
        let d = k.div_ceil(DAMPING_WG as usize) + 14;
        let g = 2.0 * (d as f64 + 10.0) * U;
        let m = |i: u32| case.mass[i as usize] as f64;
        let q = |i: u32| v3(case.pos[i as usize]);
        let v = |i: u32| v3(case.vel[i as usize]);
        let o = q(pts[0]);
        let mt: f64 = pts.iter().map(|&i| m(i)).sum();
        let mut c = V3d::zero();
        let mut vcm = V3d::zero();
        for &i in pts {
            c += (q(i) - o) * m(i);
            vcm += v(i) * m(i);
        }
        c = o + c / mt;
        vcm = vcm / mt;
        let d_vcm = g * pts.iter().map(|&i| m(i) * v(i).norm()).sum::<f64>() / mt;
        let d_c =
            g * pts.iter().map(|&i| m(i) * (q(i) - o).norm()).sum::<f64>() / mt + U * c.norm();
        let mut l = V3d::zero();
        let mut inertia = [[0.0f64; 3]; 3];
        let (mut d_l, mut d_i) = ([0.0f64; 3], [[0.0f64; 3]; 3]);
        for &i in pts {
            let r = q(i) - c;
            let u = v(i) - vcm;
            l += r.cross(u) * m(i);
            let (rr, uu) = ([r.x, r.y, r.z], [u.x, u.y, u.z]);
            for a in 0..3 {
                let (j, k) = ((a + 1) % 3, (a + 2) % 3);
                d_l[a] += g * m(i) * ((rr[j] * uu[k]).abs() + (rr[k] * uu[j]).abs())
                    + m(i) * (d_c * u.norm() + r.norm() * d_vcm);
                for bb in 0..3 {
                    let (delta, terms) = if a == bb {
                        (r.norm2(), rr[j] * rr[j] + rr[k] * rr[k])
                    } else {
                        (0.0, (rr[a] * rr[bb]).abs())
                    };
                    inertia[a][bb] += m(i) * (delta - rr[a] * rr[bb]);
                    d_i[a][bb] += g * m(i) * terms + 2.0 * m(i) * r.norm() * d_c;
                }
            }
        }
        let tr = inertia[0][0] + inertia[1][1] + inertia[2][2];
        let d_tr = d_i[0][0] + d_i[1][1] + d_i[2][2];
        for a in 0..3 {
            inertia[a][a] += 1e-5 * tr;
            d_i[a][a] += 1e-5 * d_tr;
        }
        let inv = inverse3(&inertia);
        // The solve and its RIGID_REFINEMENTS refinements ω ← A⁻¹ (L + e ω), e = 1e-5 tr.
        let (e, d_e) = (1e-5 * tr, 1e-5 * d_tr);
        let ll = [l.x, l.y, l.z];
        let mut ww = [0.0f64; 3];
        let mut d_w = [0.0f64; 3];
        for it in 0..=yarnsim::layout::RIGID_REFINEMENTS {
            let rhs: [f64; 3] =
                std::array::from_fn(|j| ll[j] + if it == 0 { 0.0 } else { e * ww[j] });
            // Its perturbation: L's, the regularisation's and the previous spin's, and the
            // rounding of `L + e ω` (two operations, two evaluations).
            let d_rhs0: [f64; 3] = std::array::from_fn(|j| {
                d_l[j]
                    + if it == 0 {
                        0.0
                    } else {
                        d_e * ww[j].abs() + e * d_w[j] + 4.0 * U * (ll[j].abs() + e * ww[j].abs())
                    }
            });
            let next: [f64; 3] = std::array::from_fn(|a| (0..3).map(|j| inv[a][j] * rhs[j]).sum());
            let solve = solve_stray(&inertia, rhs, next);
            d_w = std::array::from_fn(|a| {
                (0..3)
                    .map(|j| {
                        let d_rhs =
                            d_rhs0[j] + (0..3).map(|k| d_i[j][k] * next[k].abs()).sum::<f64>();
                        inv[a][j].abs() * d_rhs
                    })
                    .sum::<f64>()
                    + solve[a]
            });
            ww = next;
        }
        let omega = V3d::new(ww[0], ww[1], ww[2]);
        let w = omega.norm();
        // |Δω × r| ≤ Σ_a Δω_a |r ⊥ e_a|.
        let d_wr = |r: V3d| -> f64 {
            let rr = [r.x, r.y, r.z];
            (0..3)
                .map(|a| d_w[a] * (r.norm2() - rr[a] * rr[a]).max(0.0).sqrt())
                .sum()
        };
        let vnr: Vec<V3d> = pts
            .iter()
            .map(|&i| v(i) - vcm - omega.cross(q(i) - c))
            .collect();
        let d_vnr: Vec<f64> = pts
            .iter()
            .map(|&i| {
                let r = q(i) - c;
                d_vcm + d_wr(r) + w * d_c + g * (v(i).norm() + vcm.norm() + w * r.norm())
            })
            .collect();
        let nr = vnr.iter().map(|x| x.norm2()).sum::<f64>().sqrt();
        if nr == 0.0 {
            continue;
        }
        let d_nr = g * nr + (k as f64).sqrt() * d_vnr.iter().fold(0.0f64, |a, &b| a.max(b));
        let h = p.h as f64;
        let f = (h * p.damping_prop as f64)
            .max(h * p.damping_const as f64 * (k as f64).sqrt() / nr)
            .min(1.0);
        let d_f = f * (g + d_nr / nr);
        for (j, &i) in pts.iter().enumerate() {
            if case.inv_mass[i as usize] == 0.0 {
                continue;
            }
            let vn = vnr[j].norm();
            bound[i as usize] = d_f * vn + f * d_vnr[j] + g * (v(i).norm() + f * vn);
            oracle[i as usize] = v(i) - vnr[j] * f;
        }
    }
    (bound, oracle)
}

/// The bounds are for two evaluations that may each stray from the exact result: check that the
/// twin strays by at most half the bound from the same computation in f64 (`oracle`), so the
/// derivation is not too optimistic. Returns the worst stray relative to half the bound.
fn check_oracle(name: &str, twin: &[[f32; 4]], oracle: &[V3d], bound: &[f64]) -> f64 {
    let mut worst = 0.0f64;
    for (i, (t, o)) in twin.iter().zip(oracle).enumerate() {
        let d = (v3(*t) - *o).norm();
        let half = 0.5 * bound[i];
        if d == 0.0 {
            continue;
        }
        assert!(
            d <= half,
            "{name}: point {i}: the twin is {d:e} from the f64 oracle, more than half the bound \
             ({half:e})"
        );
        worst = worst.max(d / half);
    }
    worst
}

/// The rounding of the kernel's cofactor solve `ω = C L / det` itself (with exact inputs), for two
/// evaluations: each cofactor `p₁ − p₂` (products of entries of the regularised inertia `a`) and
/// `det = a₀₀c₀₀ + a₀₁c₀₁ + a₀₂c₀₂` and each `Σ_j c_ij L_j` take at most 8 roundings, relative to
/// the magnitudes of their terms, so with `γ_s = 2 · 8 u`:
/// `Δω_i ≤ γ_s Σ_j (|p₁| + |p₂| + |c_ji|) |L_j| / |det| + |ω_i| Δdet / |det|`, with
/// `Δdet ≤ γ_s Σ_j |a₀ⱼ| (|c₀ⱼ| + |p₁| + |p₂|)`. Componentwise, so a thin block (one small
/// eigenvalue) is not charged the condition number for the entries it does not divide by.
fn solve_stray(a: &[[f64; 3]; 3], l: [f64; 3], w: [f64; 3]) -> [f64; 3] {
    let gs = 16.0 * U;
    // Cofactor (i, j) = p1 − p2, with its two products.
    let cof = |i: usize, j: usize| {
        let (i1, i2) = ((i + 1) % 3, (i + 2) % 3);
        let (j1, j2) = ((j + 1) % 3, (j + 2) % 3);
        let (p1, p2) = (a[i1][j1] * a[i2][j2], a[i1][j2] * a[i2][j1]);
        (p1 - p2, p1.abs() + p2.abs())
    };
    let mut det = 0.0;
    let mut d_det = 0.0;
    for (j, &a0j) in a[0].iter().enumerate() {
        let (c, m) = cof(0, j);
        det += a0j * c;
        d_det += a0j.abs() * (c.abs() + m);
    }
    d_det *= gs;
    std::array::from_fn(|i| {
        // The adjugate is the transposed cofactor matrix; a is symmetric, so either.
        let s: f64 = (0..3)
            .map(|j| {
                let (c, m) = cof(j, i);
                (c.abs() + m) * l[j].abs()
            })
            .sum();
        (gs * s + w[i].abs() * d_det) / det.abs()
    })
}

fn inverse3(a: &[[f64; 3]; 3]) -> [[f64; 3]; 3] {
    let c = |r: usize, s: usize| {
        let (r1, r2) = ((r + 1) % 3, (r + 2) % 3);
        let (s1, s2) = ((s + 1) % 3, (s + 2) % 3);
        a[r1][s1] * a[r2][s2] - a[r1][s2] * a[r2][s1]
    };
    let det = a[0][0] * c(0, 0) + a[0][1] * c(0, 1) + a[0][2] * c(0, 2);
    let mut inv = [[0.0; 3]; 3];
    for (r, row) in inv.iter_mut().enumerate() {
        for (s, x) in row.iter_mut().enumerate() {
            *x = c(s, r) / det;
        }
    }
    inv
}

/// The damping of both phases of scenes/tiny.toml's state after 200 steps (steps 200 and 201: phase
/// A, then phase B shifted by half a block), with the scene's own blocks (4 × 4 loops: up to 137
/// points, so threads sum 2 or 3 points each) and its pins (glued points, not written).
/// Tolerance: [`damping_bounds`]. Measured on lavapipe: bitwise equal (0).
#[test]
fn nonrigid_damping_matches_twin_on_both_phases() {
    let Some(gpu) = gpu_or_skip("nonrigid_damping_matches_twin_on_both_phases") else {
        return;
    };
    let sim = scene_sim("tiny", &[], 200);
    let mut phases = Vec::new();
    for step in [200u64, 201] {
        let case = DampingCase::of_sim(&sim, step);
        assert!(case.params.num_blocks >= 1, "step {step}: no blocks");
        let sizes: Vec<u32> = (case.params.first_block
            ..case.params.first_block + case.params.num_blocks)
            .map(|b| case.block_start[b as usize + 1] - case.block_start[b as usize])
            .collect();
        eprintln!("step {step}: block sizes {sizes:?}");
        let (_, _, changed) = case.check(&gpu, &format!("tiny, step {step}"));
        assert!(
            changed > 50,
            "step {step}: the damping changed only {changed} points"
        );
        phases.push(sizes);
    }
    // Phase A is the whole 4 × 4-loop swatch, one block of 137 points (threads sum 2 or 3 each);
    // phase B, shifted by half a block, splits it.
    assert!(phases[0].iter().any(|&k| k > 2 * DAMPING_WG), "{phases:?}");
    assert!(phases[1].len() > 1, "{phases:?}");
}

/// A real state stretched over many points: `copies` copies of tiny's state side by side, each
/// copy's velocities scaled differently so the blocks are not alike.
fn tiled(sim: &yarnsim::sim::Sim, copies: usize) -> DampingCase {
    let n = sim.pos.len();
    let mut case = DampingCase::of_sim(sim, 200);
    case.mass = (0..copies).flat_map(|_| sim.mass.iter().copied()).collect();
    case.inv_mass = (0..copies)
        .flat_map(|_| sim.inv_mass.iter().copied())
        .collect();
    case.pos = (0..copies)
        .flat_map(|c| {
            sim.pos.iter().map(move |p| {
                [
                    p[0] + 7.0 * (c % 16) as f32,
                    p[1],
                    p[2] + 5.0 * (c / 16) as f32,
                    0.0,
                ]
            })
        })
        .collect();
    case.vel = (0..copies)
        .flat_map(|c| {
            let s = 1.0 + 0.37 * (c % 11) as f32;
            sim.vel
                .iter()
                .map(move |v| [v[0] * s, -v[1] * s, v[2] + 0.1 * s, 0.0])
        })
        .collect();
    assert_eq!(case.pos.len(), n * copies);
    case
}

/// Hand-made blocks of sizes around the workgroup's (1, 2, 63, 64, 65, 129 points, and one of 411
/// = 6 × 64 + 27, so threads sum 6 or 7 points), in scrambled point order, as the second phase of a
/// block list whose first phase is a single block (so `first_block` ≠ 0 is exercised), on eight
/// copies of tiny's state (with its glued points). Tolerance: [`damping_bounds`].
/// Measured on lavapipe: bitwise equal (0).
#[test]
fn nonrigid_damping_matches_twin_on_large_and_small_blocks() {
    let Some(gpu) = gpu_or_skip("nonrigid_damping_matches_twin_on_large_and_small_blocks") else {
        return;
    };
    let sim = scene_sim("tiny", &[], 200);
    let mut case = tiled(&sim, 8);
    let n = case.pos.len() as u32;
    // A fixed scramble of all points: multiplication by an odd constant modulo a power of two
    // above n, skipping values ≥ n.
    let span = n.next_power_of_two();
    let order: Vec<u32> = (0..span)
        .map(|i| i.wrapping_mul(2_654_435_761) & (span - 1))
        .filter(|&p| p < n)
        .collect();
    assert_eq!(order.len(), n as usize);
    let sizes = [411usize, 1, 2, 63, 64, 65, 129];
    let mut block_start = vec![0u32, n]; // phase 0: one block of every point
    let mut block_points: Vec<u32> = (0..n).collect();
    let mut at = 0;
    for s in sizes {
        block_points.extend_from_slice(&order[at..at + s]);
        at += s;
        block_start.push(block_points.len() as u32);
    }
    case.block_start = block_start;
    case.block_points = block_points;
    case.params.first_block = 1;
    case.params.num_blocks = sizes.len() as u32;
    case.params.num_points = n;
    case.check(&gpu, "hand-made blocks");
    // And the single all-point block of phase 0 (1,096 points, 18 per thread).
    case.params.first_block = 0;
    case.params.num_blocks = 1;
    case.check(&gpu, "one block of 1,096 points");
}

/// More blocks than one row of the dispatch grid holds (70,000 > 65,535 workgroups: a 2-D grid):
/// blocks of 2 consecutive points over 1,030 copies of tiny's state, from block 3 on (blocks 0–2
/// are left out). Tolerance: [`damping_bounds`]. Measured on lavapipe: bitwise equal (0).
#[test]
fn nonrigid_damping_matches_twin_on_a_2d_grid_of_blocks() {
    let Some(gpu) = gpu_or_skip("nonrigid_damping_matches_twin_on_a_2d_grid_of_blocks") else {
        return;
    };
    let sim = scene_sim("tiny", &[], 200);
    let mut case = tiled(&sim, 1030);
    let n = case.pos.len() as u32;
    let blocks = 70_003u32;
    assert!(2 * blocks <= n);
    case.block_start = (0..=blocks).map(|b| 2 * b).collect();
    case.block_points = (0..2 * blocks).collect();
    case.params.first_block = 3;
    case.params.num_blocks = blocks - 3;
    case.params.num_points = n;
    assert_eq!(
        yarnsim::shaders::dispatch_grid(case.params.num_blocks * DAMPING_WG, DAMPING_WG)[1],
        2
    );
    // The blocks left out and the points past the last block are untouched (bound 0 there).
    let (_, _, changed) = case.check(&gpu, "2-D grid of blocks");
    assert!(changed > 100_000, "only {changed} points damped");
}

/// Per point, a first-order bound on |gpu − cpu| of one velocity component after the obstacle
/// contact, when the GPU may fuse multiply-adds and round division and square root to Vulkan's
/// 2.5–3 ulp; and, in `ambiguous`, how many (point, obstacle) tests `d < r` lie so close to the
/// threshold that the two could decide them differently (the tests must have none: the decision is
/// discrete and the velocity jumps there).
///
/// Derivation. Replaying the kernel's loop in f64, each obstacle that a point hits updates its
/// velocity through a chain of at most 8 dependent roundings (predicted position, distance, normal,
/// normal and tangential speeds, friction factor, push) at each of these scales: the velocities
/// `|v|` and `|v_o|` (and the push `|Δv|`); positions over the step, `P/h` with `P = |q| + h|v| + |a|
/// + |b| + r`, since distances are differences of positions and the push divides them by h; and for
/// a sphere or capsule the normal `(x − c)/l`, whose error is the position error over the distance
/// `l` from the centre or axis, times the velocities it multiplies. Each of the two evaluations may
/// stray by that much: `16 u` per scale and hit, summed over the obstacles the point hits. The
/// threshold test is ambiguous when `|d − r|` is within 16 u P of 0.
fn contact_bounds(
    params: &Params,
    obstacles: &[ObstacleShape],
    pos: &[[f32; 4]],
    vel: &[[f32; 4]],
    inv_mass: &[f32],
) -> (Vec<f64>, Vec<V3d>, usize, usize) {
    let h = params.h as f64;
    let r = params.radius as f64;
    let mut bound = vec![0.0; pos.len()];
    let mut oracle: Vec<V3d> = vel.iter().map(|&v| v3(v)).collect();
    let (mut ambiguous, mut hits) = (0, 0);
    for (i, b) in bound.iter_mut().enumerate() {
        if inv_mass[i] == 0.0 {
            continue;
        }
        let q = v3(pos[i]);
        let mut v = v3(vel[i]);
        let mut scale = 0.0;
        for o in obstacles {
            let big_p = q.norm() + h * v.norm() + v3(o.a).norm() + v3(o.b).norm() + r;
            let (d, n) = step::obstacle_distance::<f64>(o, q + v * h);
            if (d - r).abs() <= 16.0 * U * big_p {
                ambiguous += 1;
            }
            if d >= r {
                continue;
            }
            hits += 1;
            // The surface velocity next to the predicted position (a capsule's ends move apart).
            let x = q + v * h;
            let (vo, s_scale) = if o.kind == OBSTACLE_CAPSULE {
                let a = v3(o.a);
                let ab = v3(o.b) - a;
                let len2 = ab.dot(ab);
                let t = if len2 > 0.0 {
                    ((x - a).dot(ab) / len2).clamp(0.0, 1.0)
                } else {
                    0.0
                };
                let dv = v3(o.vel_b) - v3(o.vel);
                // The parameter t errs by the position error over |b − a|, times the ends'
                // velocity difference.
                (
                    v3(o.vel) + dv * t,
                    big_p / len2.sqrt().max(1e-30) * dv.norm() + v3(o.vel_b).norm(),
                )
            } else {
                (v3(o.vel), 0.0)
            };
            let v_in = v;
            let rel = v - vo;
            let vn = rel.dot(n);
            if vn < 0.0 {
                let vt = rel - n * vn;
                let vtn = vt.norm();
                let keep = if vtn > 0.0 {
                    (1.0 - o.friction as f64 * (-vn) / vtn).max(0.0)
                } else {
                    0.0
                };
                v = vo + vt * keep;
            }
            let (d2, n2) = step::obstacle_distance::<f64>(o, q + v * h);
            if d2 < r {
                v += n2 * ((r - d2) / h);
            }
            // Distance from the sphere's centre or the capsule's axis (a plane's normal is exact).
            let l = if o.kind == OBSTACLE_PLANE {
                f64::INFINITY
            } else {
                (d + o.radius as f64).min(d2 + o.radius as f64)
            };
            let speeds = v_in.norm() + vo.norm() + v.norm() + (v - v_in).norm();
            scale += speeds + big_p / h + big_p / l * speeds + s_scale;
        }
        *b = 16.0 * U * scale;
        oracle[i] = v;
    }
    (bound, oracle, ambiguous, hits)
}

/// Tiny's floor moved up through the cloth of `sim` (tiny's state), a sphere and a capsule placed
/// on the cloth, and a tilted plane, all moving, with friction.
fn obstacles_through(sim: &Sim) -> Vec<ObstacleShape> {
    assert_eq!(sim.obstacles.len(), 1, "tiny has its floor");
    let mut floor = sim.obstacles[0];
    assert_eq!(floor.kind, OBSTACLE_PLANE);
    // The cloth's extent, to place obstacles through it.
    let (mut lo, mut hi) = ([f32::MAX; 3], [f32::MIN; 3]);
    for p in &sim.pos {
        for k in 0..3 {
            lo[k] = lo[k].min(p[k]);
            hi[k] = hi[k].max(p[k]);
        }
    }
    let mid = |k: usize| 0.5 * (lo[k] + hi[k]);
    floor.a = [0.0, lo[1] + 0.2 * (hi[1] - lo[1]), 0.0, 0.0];
    floor.friction = 0.3;
    floor.vel = [0.0, 2.0, 0.0, 0.0];
    let sphere = ObstacleShape {
        kind: OBSTACLE_SPHERE,
        friction: 0.5,
        radius: 0.6,
        a: [mid(0) - 0.8, mid(1) + 0.3, mid(2), 0.0],
        vel: [1.0, -3.0, 4.0, 0.0],
        ..Default::default()
    };
    let capsule = ObstacleShape {
        kind: OBSTACLE_CAPSULE,
        friction: 0.2,
        radius: 0.3,
        a: [lo[0] - 1.0, mid(1) - 0.4, mid(2) + 0.1, 0.0],
        b: [hi[0] + 1.0, mid(1) - 0.2, mid(2) - 0.1, 0.0],
        vel: [0.0, 0.0, -5.0, 0.0],
        // The ends move apart from each other (a swinging limb): the surface velocity varies
        // along the axis.
        vel_b: [3.0, 1.0, 4.0, 0.0],
        ..Default::default()
    };
    let s = 0.5f32.sqrt();
    // Through the lower right corner (the free side up and to the left).
    let tilted = ObstacleShape {
        kind: OBSTACLE_PLANE,
        friction: 0.0,
        a: [hi[0] - 0.8, lo[1] + 1.0, 0.0, 0.0],
        b: [-s, s, 0.0, 0.0],
        vel: [-1.0, 0.0, 0.0, 0.0],
        ..Default::default()
    };
    vec![floor, sphere, capsule, tilted]
}

/// The obstacle contact of tiny's state after 200 steps against its floor moved up through the
/// cloth, a sphere and a capsule placed on the cloth, and a tilted plane, all moving, with friction
/// (points inside each of them; glued points are skipped). Tolerance: [`contact_bounds`].
/// Measured on lavapipe: bitwise equal (0).
#[test]
fn object_contact_matches_twin_against_planes_sphere_and_capsule() {
    let Some(gpu) = gpu_or_skip("object_contact_matches_twin_against_planes_sphere_and_capsule")
    else {
        return;
    };
    let sim = scene_sim("tiny", &[], 200);
    let mut params = sim.step_params();
    let obstacles = obstacles_through(&sim);
    params.num_obstacles = obstacles.len() as u32;
    let (bound, oracle, ambiguous, hits) =
        contact_bounds(&params, &obstacles, &sim.pos, &sim.vel, &sim.inv_mass);
    assert_eq!(
        ambiguous, 0,
        "a point sits on an obstacle's threshold: move the obstacles"
    );
    // Each obstacle holds some points.
    for (j, o) in obstacles.iter().enumerate() {
        let inside = sim
            .pos
            .iter()
            .zip(&sim.inv_mass)
            .filter(|(q, &w)| {
                w != 0.0 && step::obstacle_distance::<f64>(o, v3(**q)).0 < params.radius as f64
            })
            .count();
        assert!(inside >= 5, "obstacle {j} holds only {inside} points");
    }
    let out = run_kernel(
        &gpu,
        "object_contact",
        &[
            ("params", bytes(&[params])),
            ("obstacles", bytes(&obstacles)),
            ("inv_mass", bytes(&sim.inv_mass)),
            ("pos", bytes(&sim.pos)),
            ("vel", bytes(&sim.vel)),
        ],
        params.num_points,
    )
    .unwrap();
    let g: &[[f32; 4]] = bytemuck::cast_slice(&out["vel"]);
    let mut c = sim.vel.clone();
    step::object_contact(&params, &obstacles, &sim.inv_mass, &sim.pos, &mut c);
    let changed = c.iter().zip(&sim.vel).filter(|(a, b)| a != b).count();
    let stray = check_oracle("object_contact", &c, &oracle, &bound);
    assert!(
        changed >= 20 && hits >= 20,
        "only {changed} points changed ({hits} hits)"
    );
    let (mut worst, mut worst_abs) = (0.0f64, 0.0f64);
    for (i, (gv, cv)) in g.iter().zip(&c).enumerate() {
        for k in 0..4 {
            if gv[k] == cv[k] {
                continue;
            }
            let d = (gv[k] as f64 - cv[k] as f64).abs();
            let b = if k < 3 { bound[i] } else { 0.0 };
            assert!(
                d <= b,
                "object_contact: point {i} component {k}: gpu {} cpu {} (difference {d:e} > bound {b:e})",
                gv[k],
                cv[k]
            );
            worst = worst.max(d / b);
            worst_abs = worst_abs.max(d);
        }
    }
    eprintln!(
        "object_contact: {hits} hits, {changed} points changed; worst |gpu − cpu| = {worst_abs:e} \
         ({worst:.3} of its bound); twin vs f64 oracle: {stray:.3} of half the bound"
    );
}

/// With no obstacles both leave every velocity as it is (the kernel returns at once).
#[test]
fn object_contact_without_obstacles_changes_nothing() {
    let Some(gpu) = gpu_or_skip("object_contact_without_obstacles_changes_nothing") else {
        return;
    };
    let sim = scene_sim("tiny", &[], 20);
    let mut params = sim.step_params();
    params.num_obstacles = 0;
    let obstacles = sim.obstacles.clone();
    let out = run_kernel(
        &gpu,
        "object_contact",
        &[
            ("params", bytes(&[params])),
            ("obstacles", bytes(&obstacles)),
            ("inv_mass", bytes(&sim.inv_mass)),
            ("pos", bytes(&sim.pos)),
            ("vel", bytes(&sim.vel)),
        ],
        params.num_points,
    )
    .unwrap();
    let mut c = sim.vel.clone();
    step::object_contact(&params, &obstacles, &sim.inv_mass, &sim.pos, &mut c);
    assert_eq!(c, sim.vel);
    assert_eq!(
        bytemuck::cast_slice::<u8, [f32; 4]>(&out["vel"]),
        &sim.vel[..]
    );
}

/// `object_contact_integrate`, which the GPU step dispatches in a scene without free balls, leaves
/// `vel` and `pos` bit for bit as `object_contact` and then `integrate_position` dispatched on the
/// same GPU: with the obstacles of [`obstacles_through`] (points in contact, whose positions move
/// by the velocity after contact) and with none (positions still integrated). Its twin, the two
/// twins in turn, is within the kernels' bounds of it: [`contact_bounds`] for the velocity, and for
/// the position that bound times h plus one rounding of each term of `q + h v` (2ε (|q| + |h v|)).
#[test]
fn object_contact_integrate_is_the_two_kernels_bit_for_bit() {
    let Some(gpu) = gpu_or_skip("object_contact_integrate_is_the_two_kernels_bit_for_bit") else {
        return;
    };
    let sim = scene_sim("tiny", &[], 200);
    let obstacles = obstacles_through(&sim);
    for placed in [obstacles.len() as u32, 0] {
        let params = Params {
            num_obstacles: placed,
            ..sim.step_params()
        };
        let n = params.num_points;
        let inputs = |pos: &[u8], vel: &[u8]| -> Vec<(&'static str, Vec<u8>)> {
            vec![
                ("params", bytes(&[params]).to_vec()),
                ("obstacles", bytes(&obstacles).to_vec()),
                ("inv_mass", bytes(&sim.inv_mass).to_vec()),
                ("pos", pos.to_vec()),
                ("vel", vel.to_vec()),
            ]
        };
        let run = |kernel: &str, inputs: &[(&'static str, Vec<u8>)]| {
            let refs: Vec<(&str, &[u8])> = inputs.iter().map(|(k, v)| (*k, &v[..])).collect();
            run_kernel(&gpu, kernel, &refs, n).unwrap()
        };
        let (pos0, vel0) = (bytes(&sim.pos), bytes(&sim.vel));
        let fused = run("object_contact_integrate", &inputs(pos0, vel0));
        let contact = run("object_contact", &inputs(pos0, vel0));
        let moved = run("integrate_position", &inputs(pos0, &contact["vel"]));
        assert_eq!(fused["vel"], contact["vel"], "{placed} obstacles: vel");
        assert_eq!(fused["pos"], moved["pos"], "{placed} obstacles: pos");
        let g_vel: &[[f32; 4]] = bytemuck::cast_slice(&fused["vel"]);
        let g_pos: &[[f32; 4]] = bytemuck::cast_slice(&fused["pos"]);
        let changed = g_vel.iter().zip(&sim.vel).filter(|(a, b)| a != b).count();
        let free = sim.inv_mass.iter().filter(|&&w| w != 0.0).count();
        let moved_points = g_pos.iter().zip(&sim.pos).filter(|(a, b)| a != b).count();
        assert!(
            moved_points >= free,
            "{placed} obstacles: {moved_points} of {free} free points moved"
        );
        if placed > 0 {
            assert!(
                changed >= 20,
                "only {changed} velocities changed by contact"
            );
        } else {
            assert_eq!(changed, 0);
        }
        let (mut pos, mut vel) = (sim.pos.clone(), sim.vel.clone());
        step::object_contact_integrate(&params, &obstacles, &sim.inv_mass, &mut pos, &mut vel);
        let (bound, ..) = contact_bounds(&params, &obstacles, &sim.pos, &sim.vel, &sim.inv_mass);
        let h = params.h as f64;
        for i in 0..n as usize {
            for k in 0..3 {
                let dv = (g_vel[i][k] as f64 - vel[i][k] as f64).abs();
                assert!(
                    dv <= bound[i],
                    "point {i} vel[{k}]: {dv:e} > {:e}",
                    bound[i]
                );
                let eps = f32::EPSILON as f64;
                let b = h * bound[i]
                    + 2.0 * eps * ((sim.pos[i][k] as f64).abs() + (h * vel[i][k] as f64).abs());
                let dq = (g_pos[i][k] as f64 - pos[i][k] as f64).abs();
                assert!(dq <= b, "point {i} pos[{k}]: {dq:e} > {b:e}");
            }
        }
    }
}

/// `nonrigid_damping_integrate`, which the GPU step dispatches in a scene without free balls, leaves
/// `vel` and `pos` bit for bit as `nonrigid_damping`, `object_contact` and `integrate_position`
/// dispatched on the same GPU one after the other: on tiny's state after 200 steps, its two damping
/// phases (one block of 137 points; the shifted blocks) and a list of a block of one point (which
/// the damping leaves alone, but which still meets the obstacles and moves) and a block of the rest,
/// each with the obstacles of [`obstacles_through`] and with none. Its twin (the stages' twins in
/// turn) is within the kernels' bounds of it: [`damping_bounds`] plus the [`contact_bounds`] of the
/// damped velocities for `vel`, and that times h plus one rounding of each term of `q + h v` for
/// `pos`.
#[test]
fn nonrigid_damping_integrate_is_the_three_kernels_bit_for_bit() {
    let Some(gpu) = gpu_or_skip("nonrigid_damping_integrate_is_the_three_kernels_bit_for_bit")
    else {
        return;
    };
    let sim = scene_sim("tiny", &[], 200);
    let obstacles = obstacles_through(&sim);
    let n = sim.pos.len() as u32;
    let single = DampingCase {
        params: Params {
            first_block: 0,
            num_blocks: 2,
            ..sim.step_params()
        },
        block_start: vec![0, 1, n],
        block_points: (0..n).collect(),
        ..DampingCase::of_sim(&sim, 200)
    };
    let cases = [
        ("phase A", DampingCase::of_sim(&sim, 200)),
        ("phase B", DampingCase::of_sim(&sim, 201)),
        ("a block of one point", single),
    ];
    for (name, case) in &cases {
        // The phase's blocks partition the points.
        let first = case.params.first_block as usize;
        let last = first + case.params.num_blocks as usize;
        let mut covered: Vec<u32> = case.block_points
            [case.block_start[first] as usize..case.block_start[last] as usize]
            .to_vec();
        covered.sort_unstable();
        assert_eq!(covered, (0..n).collect::<Vec<_>>(), "{name}");
        for placed in [obstacles.len() as u32, 0] {
            let params = Params {
                num_obstacles: placed,
                ..case.params
            };
            let at = format!("{name}, {placed} obstacles");
            let run = |kernel: &str, inputs: &[(&str, &[u8])], threads: u32| {
                run_kernel(&gpu, kernel, inputs, threads)
                    .unwrap_or_else(|e| panic!("{kernel}: {e}"))
            };
            let groups = params.num_blocks * DAMPING_WG;
            let fused = run(
                "nonrigid_damping_integrate",
                &[
                    ("params", bytes(&[params])),
                    ("block_start", bytes(&case.block_start)),
                    ("block_points", bytes(&case.block_points)),
                    ("mass", bytes(&case.mass)),
                    ("inv_mass", bytes(&case.inv_mass)),
                    ("obstacles", bytes(&obstacles)),
                    ("pos", bytes(&case.pos)),
                    ("vel", bytes(&case.vel)),
                ],
                groups,
            );
            let damped = run(
                "nonrigid_damping",
                &[
                    ("params", bytes(&[params])),
                    ("block_start", bytes(&case.block_start)),
                    ("block_points", bytes(&case.block_points)),
                    ("mass", bytes(&case.mass)),
                    ("inv_mass", bytes(&case.inv_mass)),
                    ("pos", bytes(&case.pos)),
                    ("vel", bytes(&case.vel)),
                ],
                groups,
            );
            let contact = run(
                "object_contact",
                &[
                    ("params", bytes(&[params])),
                    ("obstacles", bytes(&obstacles)),
                    ("inv_mass", bytes(&case.inv_mass)),
                    ("pos", bytes(&case.pos)),
                    ("vel", &damped["vel"]),
                ],
                n,
            );
            let moved = run(
                "integrate_position",
                &[
                    ("params", bytes(&[params])),
                    ("vel", &contact["vel"]),
                    ("pos", bytes(&case.pos)),
                ],
                n,
            );
            assert!(fused["vel"] == contact["vel"], "{at}: vel");
            assert!(fused["pos"] == moved["pos"], "{at}: pos");
            let g_vel: &[[f32; 4]] = bytemuck::cast_slice(&fused["vel"]);
            let g_pos: &[[f32; 4]] = bytemuck::cast_slice(&fused["pos"]);
            let free = case.inv_mass.iter().filter(|&&w| w != 0.0).count();
            let moved_points = g_pos.iter().zip(&case.pos).filter(|(a, b)| a != b).count();
            assert!(
                moved_points >= free,
                "{at}: {moved_points} of {free} free points moved"
            );
            let (mut pos, mut vel) = (case.pos.clone(), case.vel.clone());
            step::nonrigid_damping_integrate(
                &params,
                &case.block_start,
                &case.block_points,
                &case.mass,
                &case.inv_mass,
                &obstacles,
                &mut pos,
                &mut vel,
            );
            let (damping, _) = damping_bounds(&DampingCase {
                params,
                ..case.clone()
            });
            let mut twin_damped = case.vel.clone();
            step::nonrigid_damping(
                &params,
                &case.block_start,
                &case.block_points,
                &case.mass,
                &case.inv_mass,
                &case.pos,
                &mut twin_damped,
            );
            let (touch, _, ambiguous, _) =
                contact_bounds(&params, &obstacles, &case.pos, &twin_damped, &case.inv_mass);
            assert_eq!(
                ambiguous, 0,
                "{at}: a point sits on an obstacle's threshold"
            );
            let h = params.h as f64;
            let eps = f32::EPSILON as f64;
            for i in 0..n as usize {
                let bv = damping[i] + touch[i];
                for k in 0..3 {
                    let dv = (g_vel[i][k] as f64 - vel[i][k] as f64).abs();
                    assert!(dv <= bv, "{at}: point {i} vel[{k}]: {dv:e} > {bv:e}");
                    let bq = h * bv
                        + 2.0
                            * eps
                            * ((case.pos[i][k] as f64).abs() + (h * vel[i][k] as f64).abs());
                    let dq = (g_pos[i][k] as f64 - pos[i][k] as f64).abs();
                    assert!(dq <= bq, "{at}: point {i} pos[{k}]: {dq:e} > {bq:e}");
                }
            }
        }
    }
}

/// Setup refuses a block the kernel's loop bound cannot cover, naming it.
#[test]
fn oversized_damping_blocks_are_refused_at_setup() {
    let max = step::DAMPING_MAX_BLOCK_POINTS;
    assert!(step::check_damping_blocks(&[0, 10, 10 + max]).is_ok());
    let err = step::check_damping_blocks(&[0, 10, 11 + max]).unwrap_err();
    assert_eq!(
        err,
        step::DampingBlockError::TooLarge {
            block: 1,
            points: max + 1,
            max
        }
    );
    assert!(err.to_string().contains("damping block 1"), "{err}");
    assert!(step::check_damping_blocks(&[0, 10, 5]).is_err());
    // The kernel's stated loop bound for the largest block stays far below lavapipe's 65,535.
    assert!(4 * max.div_ceil(DAMPING_WG) + 69 < 20_000);
}
