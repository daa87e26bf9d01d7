//! Stage `length_projection` (`yarnsim::length`): the parallel partitioned solver's CPU twins
//! against the old sequential solver as an f64 oracle (`support/length_oracle.rs`), the GPU kernels
//! against their twins, and the not-converged flag on both paths. ε = 2⁻²³; positions are compared
//! as `h |Δv|` over the shortest rest length ℓ.
//!
//! - `twin_matches_f64_oracle_*` (open and closed yarns of 10, 1,000 and 100,000 points, several
//!   yarns per buffer, glued points and an inert edge; tolerance 10⁻⁵): the twin's iteration count
//!   equals the oracle's (stopping per yarn, as the old path did, and stopping all yarns together),
//!   its positions are within 16 ε ℓ of the f64 oracle that stops all yarns together, and its
//!   constraint error evaluated in f64 is below the tolerance + 4 ε. Why 16 ε: an edge's `C` is
//!   evaluated in f32 with an error of a few ε ℓ, the floor of any f32 projection: the old sequential
//!   f32 path itself lands 1.7–3.0 ε ℓ from the oracle; 16 ε leaves room for another order of
//!   roundings. MEASURED: 1.10, 2.76, 2.97 ε ℓ (10, 1,000, 100,000 points) and 2.50–2.76 ε ℓ on
//!   fast motion (3–4 iterations); constraint errors 0.84–1.22 ε. Against the oracle stopping per
//!   yarn the positions differ by up to 148 ε ℓ on short yarns: the stage iterates every yarn until
//!   the worst converges, so a yarn that converged early gets one more projection (only printed).
//! - `partitioned_solve_is_as_accurate_as_the_sequential_one`: see its doc; MEASURED |λ − λ₆₄|
//!   within 1.4× of the old sequential f32 solve's error, and below it on the 100,000-edge yarns.
//! - `gpu_*`: see each test's doc. MEASURED on lavapipe: every kernel output and the whole stage
//!   (tiny scene; two yarns of 100,000 points and a ring of 10) bitwise equal to the twins.
//! - `not_converged_is_flagged_on_both_paths`: discrete, exact.

#[path = "support/fixture.rs"]
mod fixture;
#[path = "support/length_oracle.rs"]
mod oracle;
#[path = "support/rng.rs"]
mod rng;

use fixture::{bytes, scene_sim};
use rng::Rng;
use std::f64::consts::TAU;
use std::mem::size_of;
use yarnsim::gpu::testing::gpu_or_skip;
use yarnsim::gpu::Gpu;
use yarnsim::layout::{Counters, Edge, Params, Yarn, ERROR_LENGTH_NOT_CONVERGED};
use yarnsim::length::{self, LengthFailure, LengthGpu, LengthReport, LengthScratch};
use yarnsim::pipelines::{run_kernel, Buffers, Pipelines};
use yarnsim::shaders::KERNELS;

const EPS: f64 = f32::EPSILON as f64;

/// A well-posed test configuration: yarns laid out as serpentines (open) or closed serpentines with
/// a return column (small closed yarns: a polygon), with small wiggles so no run of edges is straight,
/// centred on the origin; rest lengths 0.1 % off the current ones and random velocities, so the
/// predicted positions break the constraints by about 10⁻³–10⁻² relative; some glued points,
/// including two neighbours (an inert edge) in some yarns.
struct Case {
    yarns: Vec<Yarn>,
    edges: Vec<Edge>,
    pos: Vec<[f32; 4]>,
    vel: Vec<[f32; 4]>,
    inv_mass: Vec<f32>,
    params: Params,
}

fn yarn_points(n: usize, closed: bool, yi: usize) -> Vec<[f64; 3]> {
    let mut p: Vec<[f64; 3]> = Vec::with_capacity(n);
    if closed && n < 400 {
        let r = n as f64 * 0.1 / TAU;
        for i in 0..n {
            let a = TAU * i as f64 / n as f64;
            p.push([r * a.cos(), r * a.sin(), 0.0]);
        }
    } else if closed {
        // Rows of m points 0.1 apart, 0.3 apart in y, an even number of them (so the serpentine ends
        // on the left), then a column back up, 0.15 to the left, with the remaining points.
        let rows = (((n as f64 / 3.0).sqrt() / 2.0).round() as usize * 2).max(2);
        let back_min = 3 * (rows - 1) + 1;
        let m = (n - back_min) / rows;
        let back = n - m * rows;
        for i in 0..m * rows {
            let (row, col) = (i / m, i % m);
            let x = if row % 2 == 0 { col } else { m - 1 - col } as f64 * 0.1;
            p.push([x, -0.3 * row as f64, 0.0]);
        }
        let y_last = -0.3 * (rows - 1) as f64;
        for j in 0..back {
            let y = y_last * (1.0 - (j as f64 + 0.5) / back as f64);
            p.push([-0.15, y, 0.0]);
        }
    } else {
        let rows = ((n as f64 / 3.0).sqrt().round() as usize).max(1);
        let m = n.div_ceil(rows);
        for i in 0..n {
            let (row, col) = (i / m, i % m);
            let x = if row % 2 == 0 { col } else { m - 1 - col } as f64 * 0.1;
            p.push([x, -0.3 * row as f64, 0.0]);
        }
    }
    let c = p
        .iter()
        .fold([0.0; 3], |a, q| [a[0] + q[0], a[1] + q[1], a[2] + q[2]]);
    let c = c.map(|v| v / n as f64);
    for (i, q) in p.iter_mut().enumerate() {
        let t = i as f64;
        let y = yi as f64;
        q[0] += 0.01 * (0.7 * t + y).cos() - c[0];
        q[1] += 0.015 * (1.1 * t).sin() - c[1];
        q[2] += 0.03 * (1.3 * t + 0.5 * y).sin() - c[2] + 0.4 * y;
    }
    p
}

/// Yarns `(points, closed)` in one buffer.
fn case(
    specs: &[(usize, bool)],
    seed: u64,
    speed: f32,
    tolerance: f32,
    max_iterations: u32,
) -> Case {
    let mut rng = Rng(seed);
    let (mut yarns, mut edges, mut pos, mut vel, mut inv_mass) =
        (Vec::new(), Vec::new(), Vec::new(), Vec::new(), Vec::new());
    for (yi, &(n, closed)) in specs.iter().enumerate() {
        let pts = yarn_points(n, closed, yi);
        let first_point = pos.len() as u32;
        let first_edge = edges.len() as u32;
        pos.extend(
            pts.iter()
                .map(|q| [q[0] as f32, q[1] as f32, q[2] as f32, 0.0]),
        );
        let ne = if closed { n } else { n - 1 };
        for k in 0..ne {
            let (a, b) = (first_point + k as u32, first_point + ((k + 1) % n) as u32);
            let (pa, pb) = (pos[a as usize], pos[b as usize]);
            let len = ((pb[0] as f64 - pa[0] as f64).powi(2)
                + (pb[1] as f64 - pa[1] as f64).powi(2)
                + (pb[2] as f64 - pa[2] as f64).powi(2))
            .sqrt();
            edges.push(Edge {
                a,
                b,
                yarn: yi as u32,
                rest_length: (len * (1.0 + 2e-3 * (rng.next_f64() - 0.5))) as f32,
            });
        }
        for i in 0..n {
            let g = first_point as usize + i;
            let glued = (i == 0 && yi % 2 == 0)
                || g % 997 == 500
                || (n >= 1000 && yi % 3 == 1 && (i == n / 3 || i == n / 3 + 1));
            // Pins hold still (an edge between two of them keeps its length only so).
            let mut r = || (rng.next_f64() - 0.5) as f32 * speed;
            vel.push(if glued {
                [0.0; 4]
            } else {
                [r(), r() - 0.1, r(), 0.0]
            });
            inv_mass.push(if glued {
                0.0
            } else {
                (1.0 / (0.002 * (0.5 + rng.next_f64()))) as f32
            });
        }
        // An edge between two pins cannot change length: give it its current one.
        for e in &mut edges[first_edge as usize..] {
            if inv_mass[e.a as usize] == 0.0 && inv_mass[e.b as usize] == 0.0 {
                let (pa, pb) = (pos[e.a as usize], pos[e.b as usize]);
                let d = [pb[0] - pa[0], pb[1] - pa[1], pb[2] - pa[2]];
                e.rest_length = (d[0] * d[0] + d[1] * d[1] + d[2] * d[2]).sqrt();
            }
        }
        yarns.push(Yarn {
            first_point,
            num_points: n as u32,
            closed: closed as u32,
            first_segment: 0,
            num_segments: 0,
            first_edge,
            num_edges: ne as u32,
            _pad: 0,
        });
    }
    let params = Params {
        h: 1.0 / 240.0,
        length_tolerance: tolerance,
        length_max_iterations: max_iterations,
        num_points: pos.len() as u32,
        num_edges: edges.len() as u32,
        num_yarns: yarns.len() as u32,
        ..Params::default()
    };
    Case {
        yarns,
        edges,
        pos,
        vel,
        inv_mass,
        params,
    }
}

fn fresh_counters() -> Counters {
    Counters {
        first_bad_point: u32::MAX,
        ..Counters::default()
    }
}

/// The CPU stage on a case: its result, the velocities and the counters.
fn cpu_stage(c: &Case) -> (Result<LengthReport, LengthFailure>, Vec<[f32; 4]>, Counters) {
    let mut s = LengthScratch::new(&c.yarns, &c.edges, c.pos.len());
    let mut vel = c.vel.clone();
    let mut counters = fresh_counters();
    let r = length::length_projection(
        &c.params,
        &c.yarns,
        &c.edges,
        &c.inv_mass,
        &c.pos,
        &mut vel,
        &mut counters,
        &mut s,
    );
    (r, vel, counters)
}

/// The largest relative length error of `q + h v`, in f64.
fn constraint_error(c: &Case, vel: &[[f64; 3]]) -> f64 {
    let h = c.params.h as f64;
    let x = |p: usize| -> [f64; 3] {
        let q = c.pos[p];
        [
            q[0] as f64 + h * vel[p][0],
            q[1] as f64 + h * vel[p][1],
            q[2] as f64 + h * vel[p][2],
        ]
    };
    c.edges
        .iter()
        .map(|e| {
            let (a, b) = (x(e.a as usize), x(e.b as usize));
            let len =
                ((b[0] - a[0]).powi(2) + (b[1] - a[1]).powi(2) + (b[2] - a[2]).powi(2)).sqrt();
            (len / e.rest_length as f64 - 1.0).abs()
        })
        .fold(0.0, f64::max)
}

fn to64(v: &[[f32; 4]]) -> Vec<[f64; 3]> {
    v.iter()
        .map(|v| [v[0] as f64, v[1] as f64, v[2] as f64])
        .collect()
}

/// The largest position difference `h |v_a − v_b|` over the shortest rest length.
fn position_difference(c: &Case, a: &[[f64; 3]], b: &[[f64; 3]]) -> f64 {
    let h = c.params.h as f64;
    let lmin = c
        .edges
        .iter()
        .map(|e| e.rest_length as f64)
        .fold(f64::INFINITY, f64::min);
    let mut worst = 0.0f64;
    for (a, b) in a.iter().zip(b) {
        for k in 0..3 {
            worst = worst.max(h * (a[k] - b[k]).abs() / lmin);
        }
    }
    worst
}

fn oracle_run<T: yarnsim::math::Real>(c: &Case, stop: oracle::Stop) -> (Vec<[f64; 3]>, u32, f64) {
    let p = &c.params;
    let o = oracle::length_projection::<T>(
        stop,
        p.h,
        p.length_tolerance,
        p.length_max_iterations,
        &c.yarns,
        &c.edges,
        &c.inv_mass,
        &c.pos,
        &c.vel,
    )
    .unwrap_or_else(|f| panic!("oracle ({stop:?}) failed: {f:?}"));
    let v = o
        .vel
        .iter()
        .map(|v| [v.x.to_f64(), v.y.to_f64(), v.z.to_f64()])
        .collect();
    (v, o.iterations, o.max_error)
}

/// The twin against the f64 oracle on `specs`, with `speed` the scale of the random velocities (see
/// the module doc for the bounds).
fn twin_vs_oracle(specs: &[(usize, bool)], seed: u64, speed: f32) {
    use oracle::Stop::{AllYarns, PerYarn};
    let tol = 1e-5f32;
    let c = case(specs, seed, speed, tol, 100);
    let (r, vel, counters) = cpu_stage(&c);
    let rep = r.unwrap_or_else(|f| panic!("twin failed: {f:?}"));
    let v = to64(&vel);
    let (all, it_all, _) = oracle_run::<f64>(&c, AllYarns);
    let (per, it_per, _) = oracle_run::<f64>(&c, PerYarn);
    let (old, _, _) = oracle_run::<f32>(&c, PerYarn);
    assert_eq!(counters.errors, 0);
    assert_eq!(counters.length_iterations, rep.iterations);
    assert_eq!(
        rep.iterations, it_all,
        "iterations of the twin and the oracle"
    );
    assert_eq!(
        rep.iterations, it_per,
        "the report counts the most iterations of any yarn"
    );
    assert!(rep.max_error < tol);
    let d_all = position_difference(&c, &v, &all);
    let d_per = position_difference(&c, &v, &per);
    let d_old = position_difference(&c, &old, &per);
    let err = constraint_error(&c, &v);
    eprintln!(
        "{specs:?}: {} iterations; |twin − oracle| {:.2} ε ℓ (oracle stopping per yarn: {:.2} ε ℓ; \
         the old sequential f32 path − that: {:.2} ε ℓ); twin's constraint error in f64 {:.2} ε",
        rep.iterations,
        d_all / EPS,
        d_per / EPS,
        d_old / EPS,
        err / EPS
    );
    assert!(d_all <= 16.0 * EPS, "twin − oracle: {:.2} ε ℓ", d_all / EPS);
    assert!(err <= tol as f64 + 4.0 * EPS, "constraint error {err:e}");
}

#[test]
fn twin_matches_f64_oracle_10_points() {
    twin_vs_oracle(
        &[(10, false), (10, true), (10, false), (10, true), (12, true)],
        1,
        0.4,
    );
}

#[test]
fn twin_matches_f64_oracle_1000_points() {
    twin_vs_oracle(
        &[(1000, false), (1000, true), (1000, false), (1000, true)],
        2,
        0.4,
    );
}

#[test]
fn twin_matches_f64_oracle_100000_points() {
    twin_vs_oracle(
        &[(100_000, false), (100_000, true), (10, true), (1000, false)],
        3,
        0.4,
    );
}

#[test]
fn twin_matches_f64_oracle_fast_motion() {
    for speed in [2.0, 5.0, 10.0] {
        twin_vs_oracle(
            &[(10, true), (1000, false), (1000, true), (3000, false)],
            4,
            speed,
        );
    }
}

/// The old unit test of the sequential solvers (they are the oracle's now).
#[test]
fn oracle_solvers_solve_their_systems() {
    for n in [3usize, 4, 7, 12] {
        let d: Vec<f64> = (0..n).map(|k| 2.0 + 0.1 * k as f64).collect();
        let o: Vec<f64> = (0..n).map(|k| -0.6 - 0.05 * (k % 3) as f64).collect();
        let b: Vec<f64> = (0..n).map(|k| (k as f64 * 0.7).sin()).collect();
        for cyclic in [false, true] {
            let (mut w, mut z, mut x) = (vec![0.0; n], vec![0.0; n], b.clone());
            if cyclic {
                oracle::cyclic_solve(&d, &o, &mut x, &mut w, &mut z);
            } else {
                oracle::thomas_solve(&d, &o, &mut x, &mut w);
            }
            for k in 0..n {
                let mut ax = d[k] * x[k];
                if k > 0 || cyclic {
                    ax += o[(k + n - 1) % n] * x[(k + n - 1) % n];
                }
                if k + 1 < n || cyclic {
                    ax += o[k] * x[(k + 1) % n];
                }
                assert!(
                    (ax - b[k]).abs() < 1e-12,
                    "n = {n}, cyclic {cyclic}, row {k}"
                );
            }
        }
    }
}

/// Per yarn, the Fast Projection system `∇C W ∇Cᵀ` at the current iterate as the old solver built it:
/// diagonal, coupling of row k to row k+1 (the last entry: the corner of a closed yarn), and C.
fn old_system(c: &Case, dir: &[[f32; 4]], y: &Yarn) -> (Vec<f32>, Vec<f32>, Vec<f32>) {
    let ne = y.num_edges as usize;
    let f = y.first_edge as usize;
    let (mut d, mut o, mut r) = (vec![0.0; ne], vec![0.0; ne], vec![0.0; ne]);
    for k in 0..ne {
        let e = c.edges[f + k];
        let (wa, wb) = (c.inv_mass[e.a as usize], c.inv_mass[e.b as usize]);
        let t = dir[f + k];
        (d[k], r[k]) = if wa + wb > 0.0 {
            (wa + wb, t[3])
        } else {
            (1.0, 0.0)
        };
        let next = if k + 1 < ne {
            Some(k + 1)
        } else if y.closed != 0 {
            Some(0)
        } else {
            None
        };
        if let Some(n) = next {
            let u = dir[f + n];
            o[k] = -wb * (t[0] * u[0] + t[1] * u[1] + t[2] * u[2]);
        }
    }
    (d, o, r)
}

/// The partitioned solve (`length_reduce`, `length_back`, `length_cyclic` twins) of the first
/// projection's system, against the f64 solution of the same f32 system by the old sequential
/// solvers: it must be as accurate as the old f32 sequential solve, |λ − λ₆₄| ≤ 4 |λ_old − λ₆₄| +
/// 16 ε max|λ₆₄| per yarn (the solve's error is set by the conditioning, which is the same for both;
/// the slack covers a different order of roundings).
#[test]
fn partitioned_solve_is_as_accurate_as_the_sequential_one() {
    use length::*;
    for (specs, seed) in [
        (
            vec![(10, false), (10, true), (1000, false), (1000, true)],
            5,
        ),
        (vec![(100_000, false), (100_000, true)], 6),
    ] {
        let c = case(&specs, seed, 2.0, 1e-5, 100);
        let p = c.params;
        let mut s = LengthScratch::new(&c.yarns, &c.edges, c.pos.len());
        let mut cnt = fresh_counters();
        let lv = level_uniform(0, s.levels[0]);
        length_setup(&p, &c.vel, &mut s.disp);
        length_error(&p, &lv, &c.edges, &c.pos, &s.disp, &mut s.dir, &mut cnt);
        length_check(&p, &lv, &mut cnt);
        length_assemble(
            &p,
            &lv,
            &c.yarns,
            &c.edges,
            &c.inv_mass,
            &s.dir,
            &mut s.sys,
            &mut cnt,
        );
        let nl = s.levels.len() - 1;
        for l in 0..nl {
            length_reduce(&level_uniform(0, s.levels[l]), &mut s.sys, &mut cnt);
        }
        for l in (0..nl).rev() {
            length_back(&level_uniform(0, s.levels[l]), &mut s.sys, &mut cnt);
        }
        length_cyclic(
            &p,
            &lv,
            &c.yarns,
            &c.edges,
            &c.inv_mass,
            &s.dir,
            &s.sys,
            &mut s.fact,
            &mut cnt,
        );
        for (yi, y) in c.yarns.iter().enumerate() {
            let (d, o, r) = old_system(&c, &s.dir, y);
            let ne = d.len();
            let cyclic = y.closed != 0 && ne >= 3;
            let solve64 = || {
                let d: Vec<f64> = d.iter().map(|&v| v as f64).collect();
                let o: Vec<f64> = o.iter().map(|&v| v as f64).collect();
                let mut x: Vec<f64> = r.iter().map(|&v| v as f64).collect();
                let (mut w, mut z) = (vec![0.0; ne], vec![0.0; ne]);
                if cyclic {
                    oracle::cyclic_solve(&d, &o, &mut x, &mut w, &mut z);
                } else {
                    oracle::thomas_solve(&d, &o, &mut x, &mut w);
                }
                x
            };
            let x64 = solve64();
            let mut x32 = r.clone();
            let (mut w, mut z) = (vec![0.0f32; ne], vec![0.0f32; ne]);
            if cyclic {
                oracle::cyclic_solve(&d, &o, &mut x32, &mut w, &mut z);
            } else {
                oracle::thomas_solve(&d, &o, &mut x32, &mut w);
            }
            let f = y.first_edge as usize;
            let fact = s.fact[yi];
            let scale = x64.iter().fold(0.0f64, |a, v| a.max(v.abs()));
            let (mut d_new, mut d_old) = (0.0f64, 0.0f64);
            for k in 0..ne {
                let row = s.sys[f + k];
                let lam = row[2] - fact * row[3];
                d_new = d_new.max((lam as f64 - x64[k]).abs());
                d_old = d_old.max((x32[k] as f64 - x64[k]).abs());
            }
            eprintln!(
                "yarn {yi} ({ne} edges, closed {}): |λ − λ64| {:.2e}, old sequential {:.2e}, \
                 max |λ64| {scale:.2e}",
                y.closed, d_new, d_old
            );
            assert!(
                d_new <= 4.0 * d_old + 16.0 * EPS * scale,
                "yarn {yi}: partitioned {d_new:e}, sequential {d_old:e}"
            );
        }
    }
}

/// The stage's input on a real scene: scenes/tiny.toml after 200 CPU steps (hanging from pins,
/// moving), with the velocities the stage gets in the next step (`integrate_velocity` with the last
/// forces, then `glue_projection`).
fn tiny_case() -> Case {
    let sim = scene_sim("tiny", &[], 200);
    let params = sim.step_params();
    let mut vel = sim.vel.clone();
    let mut cnt = fresh_counters();
    yarnsim::step::integrate_velocity(&params, &sim.inv_mass, sim.force(), &mut vel, &mut cnt);
    yarnsim::step::glue_projection(
        &params,
        &sim.glue_points,
        &sim.glue_target,
        &sim.pos,
        &mut vel,
    );
    Case {
        yarns: sim.topo.yarns.clone(),
        edges: sim.topo.edges.clone(),
        pos: sim.pos.clone(),
        vel,
        inv_mass: sim.inv_mass.clone(),
        params,
    }
}

/// The whole stage on the GPU (`LengthGpu`, every iteration recorded): velocities, counters and
/// `length_dir` read back.
fn gpu_stage(gpu: &Gpu, c: &Case) -> (Vec<[f32; 4]>, Counters, Vec<[f32; 4]>) {
    let names: Vec<&str> = KERNELS
        .iter()
        .map(|k| k.name)
        .filter(|n| n.starts_with("length_"))
        .collect();
    let (dev, q) = (&gpu.device, &gpu.queue);
    let pipelines = Pipelines::only(dev, &names).unwrap();
    let mut b = Buffers::default();
    b.upload(dev, q, "params", bytes(&[c.params]), true);
    b.upload(dev, q, "counters", bytes(&[fresh_counters()]), false);
    b.upload(dev, q, "yarns", bytes(&c.yarns), false);
    b.upload(dev, q, "edges", bytes(&c.edges), false);
    b.upload(dev, q, "inv_mass", bytes(&c.inv_mass), false);
    b.upload(dev, q, "pos", bytes(&c.pos), false);
    b.upload(dev, q, "vel", bytes(&c.vel), false);
    let s = LengthScratch::new(&c.yarns, &c.edges, c.pos.len());
    LengthGpu::upload(&mut b, dev, q, &s);
    let stage = LengthGpu::new(dev, &pipelines, &b, &c.params, &s.levels).unwrap();
    let scope = dev.push_error_scope(wgpu::ErrorFilter::Validation);
    let mut enc = dev.create_command_encoder(&wgpu::CommandEncoderDescriptor { label: None });
    {
        let mut pass = enc.begin_compute_pass(&wgpu::ComputePassDescriptor {
            label: Some("length_projection"),
            timestamp_writes: None,
        });
        stage.record(&pipelines, &mut pass).unwrap();
    }
    q.submit([enc.finish()]);
    if let Some(e) = pollster::block_on(scope.pop()) {
        panic!("{e}");
    }
    let read = |name: &str, len: usize| b.read(dev, q, name, len as u64).unwrap();
    let vel = bytemuck::cast_slice(&read("vel", c.vel.len() * 16)).to_vec();
    let counters = bytemuck::pod_read_unaligned(&read("counters", size_of::<Counters>()));
    let dir = bytemuck::cast_slice(&read("length_dir", c.edges.len() * 16)).to_vec();
    (vel, counters, dir)
}

/// The whole stage, GPU against CPU, on case `c`: the same iteration count and flags (discrete),
/// positions `h v` within `bound` ε ℓ, and final errors within 8 ε. The bound used, 16 ε ℓ, is the
/// one of the twin against the f64 oracle: the kernels round differently from the twins by a few ulps
/// per operation (see `gpu_kernels_match_twins_on_tiny_scene`), the solve's sensitivity is the same
/// for both, and the iterations stop at the f32 floor of a few ε ℓ either way; the final errors are
/// relative errors of about ε, each a few roundings apart.
fn gpu_vs_cpu(gpu: &Gpu, c: &Case, what: &str, bound: f64) {
    let (r, vel, counters) = cpu_stage(c);
    let rep = r.unwrap_or_else(|f| panic!("{what}: CPU stage failed: {f:?}"));
    let (g_vel, g_cnt, _) = gpu_stage(gpu, c);
    assert_eq!(g_cnt.errors, counters.errors, "{what}: error flags");
    assert_eq!(
        g_cnt.length_iterations, counters.length_iterations,
        "{what}: iterations"
    );
    let (ge, ce) = (
        f32::from_bits(g_cnt.length_error_bits) as f64,
        rep.max_error as f64,
    );
    let d = position_difference(c, &to64(&g_vel), &to64(&vel));
    eprintln!(
        "{what}: {} iterations; GPU − CPU position difference {:.2} ε ℓ; final error GPU {ge:.3e} \
         CPU {ce:.3e}",
        rep.iterations,
        d / EPS
    );
    assert!(d <= bound * EPS, "{what}: GPU − CPU {:.2} ε ℓ", d / EPS);
    // The last error evaluation: relative errors of ~ε with a few roundings' difference each.
    assert!(
        (ge - ce).abs() <= 8.0 * EPS,
        "{what}: final errors {ge:e} {ce:e}"
    );
    assert!(ge < c.params.length_tolerance as f64);
}

#[test]
fn gpu_stage_matches_cpu_on_tiny_scene() {
    let Some(gpu) = gpu_or_skip("gpu_stage_matches_cpu_on_tiny_scene") else {
        return;
    };
    let c = tiny_case();
    gpu_vs_cpu(&gpu, &c, "tiny scene", 16.0);
}

#[test]
fn gpu_stage_matches_cpu_on_long_yarns() {
    let Some(gpu) = gpu_or_skip("gpu_stage_matches_cpu_on_long_yarns") else {
        return;
    };
    let c = case(
        &[(100_000, false), (100_000, true), (10, true)],
        7,
        2.0,
        1e-5,
        100,
    );
    gpu_vs_cpu(&gpu, &c, "two yarns of 100,000 points", 16.0);
}

/// The largest `|gpu − cpu| / bound` over the components of two arrays (a bound of 0 asks for
/// equality), with the count of components that differ; panics past 1.
fn compare<const N: usize>(
    what: &str,
    gpu: &[[f32; N]],
    cpu: &[[f32; N]],
    bound: impl Fn(usize, usize) -> f64,
) -> (f64, usize) {
    assert_eq!(gpu.len(), cpu.len(), "{what}");
    let (mut worst, mut differ) = (0.0f64, 0);
    for (i, (g, c)) in gpu.iter().zip(cpu).enumerate() {
        for k in 0..N {
            if g[k].to_bits() == c[k].to_bits() {
                continue;
            }
            differ += 1;
            let d = (g[k] as f64 - c[k] as f64).abs();
            let b = bound(i, k);
            assert!(
                d <= b,
                "{what}: element {i} component {k}: gpu {} cpu {} (difference {d:e} > bound {b:e})",
                g[k],
                c[k]
            );
            worst = worst.max(if b > 0.0 { d / b } else { 0.0 });
        }
    }
    (worst, differ)
}

/// Each length kernel against its twin, dispatch by dispatch through every iteration of one stage
/// on the tiny scene's state (tolerance 10⁻⁷ so that it takes several iterations), each on the same
/// input (the twin's state so far). Bounds, from Vulkan's precision rules (+, −, × correctly
/// rounded, ÷ within 2.5 ulp, √ within 3 ulp, and a compiler may fuse a·b + c), ε = 2⁻²³:
/// - `length_setup`, `length_check`: equal (one product; integer logic).
/// - `length_error`: direction components 8ε (√ and ÷ of an exact edge vector), `C` 6ε len, the
///   error bits 8ε len/ℓ as floats; the flags and the iteration count equal.
/// - `length_assemble`: 8ε S per component, S = w_a + w_b + (closed: 2 w of the first point) + 1
///   (a dot product of unit vectors, a square over a sum); r equal (a copy).
/// - `length_reduce`: 256ε S per component of a row, S the sum of the magnitudes of that component
///   over the rows the thread reads: at most 2 (BLOCK − 1) elimination steps of 4 roundings each,
///   whose multipliers |o/β| ≤ 1 (the system is diagonally dominant) do not grow earlier errors.
/// - `length_back`: r and z 256ε (S_rhs + S_x)/β_min per block (the same sweeps, then a division
///   by each pivot β ≥ β_min); the pivots 256ε S_d.
/// - `length_cyclic`: 16ε (|numerator terms| + |f| |denominator terms|) / |denominator|.
/// - `length_update`: 4ε (|d| + w (|λ_a| + |λ_b| + |f| (|q_a| + |q_b|))).
/// - `length_finish`: 4ε |v| (1/h within 2.5 ulp, one product).
#[test]
fn gpu_kernels_match_twins_on_tiny_scene() {
    let Some(gpu) = gpu_or_skip("gpu_kernels_match_twins_on_tiny_scene") else {
        return;
    };
    let mut c = tiny_case();
    c.params.length_tolerance = 1e-7;
    kernels_vs_twins(&gpu, &c, "tiny scene");
}

/// As [`gpu_kernels_match_twins_on_tiny_scene`], on closed and open yarns of several blocks and
/// levels (2,999 edges: levels of 2,999, 94, 3 and 1 rows), with the same bounds.
#[test]
fn gpu_kernels_match_twins_on_closed_yarns() {
    let Some(gpu) = gpu_or_skip("gpu_kernels_match_twins_on_closed_yarns") else {
        return;
    };
    let c = case(
        &[(10, true), (1000, true), (1990, false)],
        8,
        2.0,
        1e-6,
        100,
    );
    kernels_vs_twins(&gpu, &c, "closed yarns");
}

fn kernels_vs_twins(gpu: &Gpu, c: &Case, what: &str) {
    use length::*;
    let p = c.params;
    let mut s = LengthScratch::new(&c.yarns, &c.edges, c.pos.len());
    let mut vel = c.vel.clone();
    let mut cnt = fresh_counters();
    let (ne, np, ny) = (p.num_edges, p.num_points, p.num_yarns);
    let run = |name: &str, inputs: &[(&str, &[u8])], threads: u32| {
        run_kernel(gpu, name, inputs, threads).unwrap_or_else(|e| panic!("{name}: {e}"))
    };
    let f4 = |v: &Vec<u8>| -> Vec<[f32; 4]> { bytemuck::cast_slice(v).to_vec() };
    let counters_of = |v: &Vec<u8>| -> Counters { bytemuck::pod_read_unaligned(v) };
    let mut report: Vec<(String, f64, usize)> = Vec::new();
    let mut note = |what: String, r: (f64, usize)| report.push((what, r.0, r.1));

    let out = run(
        "length_setup",
        &[
            ("params", bytes(&[p])),
            ("vel", bytes(&vel)),
            ("length_disp", bytes(&s.disp)),
        ],
        np,
    );
    length_setup(&p, &vel, &mut s.disp);
    note(
        "length_setup".into(),
        compare("length_setup", &f4(&out["length_disp"]), &s.disp, |_, _| {
            0.0
        }),
    );

    let mut iterations = 0;
    for it in 0..=p.length_max_iterations {
        let lv = level_uniform(it, s.levels[0]);
        // length_error
        let out = run(
            "length_error",
            &[
                ("params", bytes(&[p])),
                ("length_level", bytes(&lv)),
                ("edges", bytes(&c.edges)),
                ("pos", bytes(&c.pos)),
                ("length_disp", bytes(&s.disp)),
                ("length_dir", bytes(&s.dir)),
                ("counters", bytes(&[cnt])),
            ],
            ne,
        );
        length_error(&p, &lv, &c.edges, &c.pos, &s.disp, &mut s.dir, &mut cnt);
        let len = |k: usize| (s.dir[k][3] + c.edges[k].rest_length) as f64;
        note(
            format!("length_error it {it}"),
            compare(
                "length_error",
                &f4(&out["length_dir"]),
                &s.dir,
                |k, comp| {
                    if comp < 3 {
                        8.0 * EPS
                    } else {
                        6.0 * EPS * len(k)
                    }
                },
            ),
        );
        let g = counters_of(&out["counters"]);
        assert_eq!(
            (g.errors, g.length_iterations),
            (cnt.errors, cnt.length_iterations)
        );
        let worst_len = (0..ne as usize)
            .map(|k| len(k) / c.edges[k].rest_length as f64)
            .fold(0.0, f64::max);
        note(
            format!("length_error it {it} (error)"),
            compare(
                "length_error_bits",
                &[[f32::from_bits(g.length_error_bits)]],
                &[[f32::from_bits(cnt.length_error_bits)]],
                |_, _| 8.0 * EPS * worst_len,
            ),
        );
        // length_check, on the twin's counters
        let out = run(
            "length_check",
            &[
                ("params", bytes(&[p])),
                ("length_level", bytes(&lv)),
                ("counters", bytes(&[cnt])),
            ],
            1,
        );
        length_check(&p, &lv, &mut cnt);
        assert_eq!(counters_of(&out["counters"]), cnt, "length_check it {it}");
        if cnt.length_iterations != it + 1 {
            break;
        }
        iterations += 1;
        // length_assemble
        let out = run(
            "length_assemble",
            &[
                ("params", bytes(&[p])),
                ("length_level", bytes(&lv)),
                ("yarns", bytes(&c.yarns)),
                ("edges", bytes(&c.edges)),
                ("inv_mass", bytes(&c.inv_mass)),
                ("length_dir", bytes(&s.dir)),
                ("length_sys", bytes(&s.sys)),
                ("counters", bytes(&[cnt])),
            ],
            ne,
        );
        length_assemble(
            &p,
            &lv,
            &c.yarns,
            &c.edges,
            &c.inv_mass,
            &s.dir,
            &mut s.sys,
            &mut cnt,
        );
        assert_eq!(counters_of(&out["counters"]), cnt);
        let scale = |k: usize| -> f64 {
            if k >= ne as usize {
                return 0.0;
            }
            let e = c.edges[k];
            let y = c.yarns[e.yarn as usize];
            let wf = if y.closed != 0 {
                2.0 * c.inv_mass[c.edges[y.first_edge as usize].a as usize] as f64
            } else {
                0.0
            };
            c.inv_mass[e.a as usize] as f64 + c.inv_mass[e.b as usize] as f64 + wf + 1.0
        };
        note(
            format!("length_assemble it {it}"),
            compare(
                "length_assemble",
                &f4(&out["length_sys"]),
                &s.sys,
                |k, comp| {
                    if comp == 2 {
                        0.0
                    } else {
                        8.0 * EPS * scale(k)
                    }
                },
            ),
        );
        // length_reduce, level by level
        let nl = s.levels.len() - 1;
        for l in 0..nl {
            let u = level_uniform(it, s.levels[l]);
            let (off, n) = (u[1] as usize, u[2] as usize);
            let nb = n.div_ceil(BLOCK as usize);
            let out = run(
                "length_reduce",
                &[
                    ("length_level", bytes(&u)),
                    ("length_sys", bytes(&s.sys)),
                    ("counters", bytes(&[cnt])),
                ],
                nb as u32,
            );
            let input = s.sys.clone();
            length_reduce(&u, &mut s.sys, &mut cnt);
            // Row j of the next level reads rows j·BLOCK .. (j + 2)·BLOCK of this one.
            let sum = |j: usize, comp: usize| -> f64 {
                let r = off + j * BLOCK as usize..off + ((j + 2) * BLOCK as usize).min(n);
                input[r].iter().map(|row| row[comp].abs() as f64).sum()
            };
            note(
                format!("length_reduce it {it} level {l}"),
                compare(
                    "length_reduce",
                    &f4(&out["length_sys"]),
                    &s.sys,
                    |i, comp| {
                        if i < off + n || i >= off + n + nb {
                            return 0.0; // rows it does not write
                        }
                        let j = i - off - n;
                        let sc = match comp {
                            0 | 1 => sum(j, 0),
                            k => {
                                sum(j, k)
                                    + if nb == 1 {
                                        sum(j, k) / s.sys[i][0].abs() as f64
                                    } else {
                                        0.0
                                    }
                            }
                        };
                        256.0 * EPS * sc
                    },
                ),
            );
        }
        // length_back, level by level
        for l in (0..nl).rev() {
            let u = level_uniform(it, s.levels[l]);
            let (off, n) = (u[1] as usize, u[2] as usize);
            let nb = n.div_ceil(BLOCK as usize);
            let out = run(
                "length_back",
                &[
                    ("length_level", bytes(&u)),
                    ("length_sys", bytes(&s.sys)),
                    ("counters", bytes(&[cnt])),
                ],
                nb as u32,
            );
            let input = s.sys.clone();
            length_back(&u, &mut s.sys, &mut cnt);
            let blk = |i: usize| (i - off) / BLOCK as usize;
            let rows = |j: usize| off + j * BLOCK as usize..off + ((j + 1) * BLOCK as usize).min(n);
            let sum = |j: usize, v: &[[f32; 4]], comp: usize| -> f64 {
                v[rows(j)].iter().map(|row| row[comp].abs() as f64).sum()
            };
            let beta_min = |j: usize| -> f64 {
                s.sys[rows(j)]
                    .iter()
                    .map(|row| row[0].abs() as f64)
                    .fold(f64::INFINITY, f64::min)
            };
            note(
                format!("length_back it {it} level {l}"),
                compare("length_back", &f4(&out["length_sys"]), &s.sys, |i, comp| {
                    if i < off || i >= off + n {
                        return 0.0;
                    }
                    let j = blk(i);
                    match comp {
                        0 => 256.0 * EPS * sum(j, &input, 0),
                        1 => 0.0,
                        k => {
                            // The separators' values from the next level (j and j − 1) enter too.
                            let nxt = |jj: usize| input[off + n + jj][k].abs() as f64;
                            let sep = nxt(j) + if j > 0 { nxt(j - 1) } else { 0.0 };
                            256.0
                                * EPS
                                * (sum(j, &input, k) + sum(j, &s.sys, k) + sep * sum(j, &input, 1))
                                / beta_min(j)
                        }
                    }
                }),
            );
        }
        // length_cyclic
        let out = run(
            "length_cyclic",
            &[
                ("params", bytes(&[p])),
                ("length_level", bytes(&lv)),
                ("yarns", bytes(&c.yarns)),
                ("edges", bytes(&c.edges)),
                ("inv_mass", bytes(&c.inv_mass)),
                ("length_dir", bytes(&s.dir)),
                ("length_sys", bytes(&s.sys)),
                ("length_fact", bytes(&s.fact)),
                ("counters", bytes(&[cnt])),
            ],
            ny,
        );
        length_cyclic(
            &p,
            &lv,
            &c.yarns,
            &c.edges,
            &c.inv_mass,
            &s.dir,
            &s.sys,
            &mut s.fact,
            &mut cnt,
        );
        let g_fact: Vec<[f32; 1]> = bytemuck::cast_slice::<u8, f32>(&out["length_fact"])
            .iter()
            .map(|&v| [v])
            .collect();
        let c_fact: Vec<[f32; 1]> = s.fact.iter().map(|&v| [v]).collect();
        note(
            format!("length_cyclic it {it}"),
            compare("length_cyclic", &g_fact, &c_fact, |yi, _| {
                let y = c.yarns[yi];
                if y.closed == 0 {
                    return 0.0;
                }
                let (f, l) = (
                    y.first_edge as usize,
                    (y.first_edge + y.num_edges - 1) as usize,
                );
                let (a, b) = (s.sys[f], s.sys[l]);
                let e0 = c.edges[f];
                let w0 = c.inv_mass[e0.a as usize] as f64;
                let d0 = w0 + c.inv_mass[e0.b as usize] as f64;
                let gamma = -(if d0 > 0.0 { d0 } else { 1.0 });
                let (tl, tf) = (s.dir[l], s.dir[f]);
                let corner = -w0 * (tl[0] * tf[0] + tl[1] * tf[1] + tl[2] * tf[2]) as f64;
                let cg = corner / gamma;
                let num_terms = a[2].abs() as f64 + (cg * b[2] as f64).abs();
                let den = 1.0 + a[3] as f64 + cg * b[3] as f64;
                let den_terms = 1.0 + a[3].abs() as f64 + (cg * b[3] as f64).abs();
                16.0 * EPS * (num_terms + s.fact[yi].abs() as f64 * den_terms) / den.abs()
            }),
        );
        // length_update
        let out = run(
            "length_update",
            &[
                ("params", bytes(&[p])),
                ("length_level", bytes(&lv)),
                ("point_edges", bytes(&s.point_edges)),
                ("inv_mass", bytes(&c.inv_mass)),
                ("length_dir", bytes(&s.dir)),
                ("length_sys", bytes(&s.sys)),
                ("length_fact", bytes(&s.fact)),
                ("length_disp", bytes(&s.disp)),
                ("counters", bytes(&[cnt])),
            ],
            np,
        );
        let before = s.disp.clone();
        length_update(
            &p,
            &lv,
            &s.point_edges,
            &c.inv_mass,
            &s.dir,
            &s.sys,
            &s.fact,
            &mut s.disp,
            &mut cnt,
        );
        note(
            format!("length_update it {it}"),
            compare(
                "length_update",
                &f4(&out["length_disp"]),
                &s.disp,
                |i, comp| {
                    let pe = s.point_edges[i];
                    let f = s.fact[pe[2] as usize].abs() as f64;
                    let lam = |k: u32| -> f64 {
                        if k == NO_EDGE {
                            0.0
                        } else {
                            let r = s.sys[k as usize];
                            r[2].abs() as f64 + f * r[3].abs() as f64
                        }
                    };
                    if comp == 3 {
                        0.0
                    } else {
                        4.0 * EPS
                            * (before[i][comp].abs() as f64
                                + c.inv_mass[i] as f64 * (lam(pe[0]) + lam(pe[1])))
                    }
                },
            ),
        );
    }
    assert!(
        iterations >= 2,
        "{what}: should take several iterations, took {iterations}"
    );
    // length_finish
    let out = run(
        "length_finish",
        &[
            ("params", bytes(&[p])),
            ("length_disp", bytes(&s.disp)),
            ("vel", bytes(&vel)),
            ("counters", bytes(&[cnt])),
        ],
        np,
    );
    length_finish(&p, &s.disp, &mut vel, &mut cnt);
    note(
        "length_finish".into(),
        compare("length_finish", &f4(&out["vel"]), &vel, |i, k| {
            4.0 * EPS * vel[i][k].abs() as f64
        }),
    );
    for (kernel, worst, differ) in &report {
        eprintln!("{what}: {kernel}: {differ} components differ, worst {worst:.3} of the bound");
    }
}

/// A yarn that cannot converge within the cap (its rest lengths 20 % short, 2 iterations allowed)
/// and one with a NaN velocity: both paths raise ERROR_LENGTH_NOT_CONVERGED with the same count,
/// leave the velocities as they came, and name the same yarn as the sequential oracle does.
#[test]
fn not_converged_is_flagged_on_both_paths() {
    let gpu = gpu_or_skip("not_converged_is_flagged_on_both_paths");
    let mut stretched = case(&[(1000, false), (10, true), (1000, true)], 9, 0.4, 1e-5, 2);
    for e in &mut stretched.edges[1009..] {
        e.rest_length *= 0.8;
    }
    let mut nan = case(&[(10, false), (1000, true), (10, true)], 10, 0.4, 1e-5, 100);
    nan.vel[500][1] = f32::NAN;
    for (c, yarn, what) in [(&stretched, 2, "stretched yarn"), (&nan, 1, "NaN velocity")] {
        let (r, vel, counters) = cpu_stage(c);
        let f = r.expect_err(what);
        eprintln!("{what}: {f:?}");
        assert_eq!(f.yarn, yarn, "{what}");
        assert_eq!(f.iterations, c.params.length_max_iterations, "{what}");
        assert!(f.error >= c.params.length_tolerance, "{what}");
        assert_eq!(counters.errors, ERROR_LENGTH_NOT_CONVERGED, "{what}");
        assert_eq!(counters.length_iterations, c.params.length_max_iterations);
        assert!(vel
            .iter()
            .zip(&c.vel)
            .all(|(a, b)| a.iter().zip(b).all(|(x, y)| x.to_bits() == y.to_bits())));
        let o = oracle::length_projection::<f64>(
            oracle::Stop::PerYarn,
            c.params.h,
            c.params.length_tolerance,
            c.params.length_max_iterations,
            &c.yarns,
            &c.edges,
            &c.inv_mass,
            &c.pos,
            &c.vel,
        );
        assert_eq!(
            o.err().map(|f| f.yarn),
            Some(yarn),
            "{what}: the oracle fails there too"
        );
        let Some(gpu) = &gpu else { continue };
        let (g_vel, g_cnt, g_dir) = gpu_stage(gpu, c);
        assert_eq!(g_cnt.errors, ERROR_LENGTH_NOT_CONVERGED, "{what}: GPU flag");
        assert_eq!(
            g_cnt.length_iterations, counters.length_iterations,
            "{what}"
        );
        assert!(g_vel
            .iter()
            .zip(&c.vel)
            .all(|(a, b)| a.iter().zip(b).all(|(x, y)| x.to_bits() == y.to_bits())));
        // The other yarns' edges stayed finite: a NaN does not cross into another yarn.
        for (yi, y) in c.yarns.iter().enumerate().filter(|&(i, _)| i != yarn) {
            let r = y.first_edge as usize..(y.first_edge + y.num_edges) as usize;
            assert!(
                g_dir[r].iter().all(|d| d.iter().all(|v| v.is_finite())),
                "{what}: yarn {yi}"
            );
        }
        let g = length::report(&c.params, &c.yarns, &c.edges, &g_dir, &g_cnt).expect_err(what);
        assert_eq!(
            (g.yarn, g.iterations),
            (f.yarn, f.iterations),
            "{what}: GPU failure report"
        );
    }
}

/// The solver kernels' block size is `length::BLOCK` (their loop bounds and the twins' partition
/// depend on it).
#[test]
fn solver_kernels_use_the_twins_block_size() {
    let want = format!("const BLOCK: u32 = {}u;", length::BLOCK);
    for name in ["length_reduce", "length_back"] {
        let src = yarnsim::shaders::expanded_text(name).unwrap();
        assert!(
            src.contains(&want),
            "shaders/{name}.wgsl must declare `{want}` (through shaders/shared/length.wgsl)"
        );
    }
}
