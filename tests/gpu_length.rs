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
//!   (tiny scene; two yarns of 100,000 points and a ring of 10) bitwise equal to the twins. On an
//!   NVIDIA H100 one `length_back` value of 3.1·10⁻³⁷ came out 1.4·10⁻³⁹ off the twin: a flush of
//!   subnormals to 0 further down its block (an f32 emulation that flushes reproduces it bit for
//!   bit); the kernel bounds ([`Eb`]) model flushes and fused multiply-adds, and such emulations
//!   of `length_error`, `length_reduce`, `length_back` and `length_update` (fused, flushing, both)
//!   stay within 0.43 of them.
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
use yarnsim::layout::{
    Counters, Edge, Params, Yarn, ERROR_LENGTH_NOT_CONVERGED, ERROR_NAN_VELOCITY,
};
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
    Counters::fresh()
}

/// The CPU stage on a case: its result, the velocities and the counters.
fn cpu_stage(c: &Case) -> (Result<LengthReport, LengthFailure>, Vec<[f32; 4]>, Counters) {
    let mut s = LengthScratch::new(&c.edges, c.pos.len());
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

/// The partitioned solve (`length_reduce`, `length_back` twins, `cyclic_fact`) of the first
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
        let mut s = LengthScratch::new(&c.edges, c.pos.len());
        let mut cnt = fresh_counters();
        let lv = level_uniform(0, s.levels[0]);
        length_setup(&p, &lv, &c.vel, &mut s.disp, &mut cnt);
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
            let fact = cyclic_fact(y, &c.edges, &c.inv_mass, &s.dir, &s.sys);
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
    scene_case("tiny", &[], 200)
}

/// The length stage's input in scene `name` after `steps` CPU steps: the velocities the stage gets
/// in the next step (after `integrate_velocity` and `glue_projection`).
fn scene_case(name: &str, sets: &[&str], steps: usize) -> Case {
    let sim = scene_sim(name, sets, steps);
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

/// Closed yarns of 10 and 1,000 points and an open one of 1,990 (2,999 edges: levels of 2,999, 94,
/// 3 and 1 rows), tolerance 1e-6.
fn closed_yarns_case() -> Case {
    case(
        &[(10, true), (1000, true), (1990, false)],
        8,
        2.0,
        1e-6,
        100,
    )
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
    let s = LengthScratch::new(&c.edges, c.pos.len());
    LengthGpu::upload(&mut b, dev, q, &s);
    let stage = LengthGpu::new(
        dev,
        &pipelines,
        &b,
        &c.params,
        c.params.length_max_iterations,
        &s.levels,
        true,
    )
    .unwrap();
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
/// input (the twin's state so far). Discrete outputs (flags, counts, `length_check`) are equal; every
/// float output is within `2 e` of the twin, `e` the running error bound of the kernel's own
/// operations on that input under WGSL's precision rules ([`Eb`] states the model and the
/// derivation; the `*_bound` functions replay each kernel's operations in its order). Copies
/// (`r` in `length_assemble`, the separators' values in `length_back`, the `w` lanes) are exact.
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
/// levels (2,999 edges: levels of 2,999, 94, 3 and 1 rows), with the same bounds. The closed yarn of
/// 1,000 points has a Sherman–Morrison solution `q` that decays geometrically along it, through
/// f32's subnormal range, where a GPU may flush to 0: the μ terms of [`Eb`] bound it there.
#[test]
fn gpu_kernels_match_twins_on_closed_yarns() {
    let Some(gpu) = gpu_or_skip("gpu_kernels_match_twins_on_closed_yarns") else {
        return;
    };
    kernels_vs_twins(&gpu, &closed_yarns_case(), "closed yarns");
}

/// `length_error_assemble`, which the step dispatches in place of iteration 0's `length_error` and
/// projection 1's `length_assemble` when `length_setup` committed projection 1, leaves
/// `length_dir`, `length_sys` and `counters` bit for bit as those two dispatched on the same GPU:
/// on the tiny scene's state, on the small sack's after 20 steps (24 closed rings of 384 edges) and
/// on closed and open yarns (the closed yarns' rows need their last and first edges' directions,
/// computed in the same dispatch), with the iteration wanted and not
/// (`length_iterations` 0: nothing written). Outputs start as NaN. Its twin (the two twins in turn)
/// keeps the same counters and is within `length_error`'s bounds of the kernel's directions.
#[test]
fn length_error_assemble_is_the_two_kernels_bit_for_bit() {
    let Some(gpu) = gpu_or_skip("length_error_assemble_is_the_two_kernels_bit_for_bit") else {
        return;
    };
    let sack = scene_case("sack_small", &["contact.model=none", "relax.time=0"], 20);
    for (what, c) in [
        ("tiny", tiny_case()),
        ("sack", sack),
        ("closed yarns", closed_yarns_case()),
    ] {
        let p = c.params;
        let s = length::LengthScratch::new(&c.edges, c.pos.len());
        let lv0 = length::committed_uniform(s.levels[0], true);
        let (ne, np) = (p.num_edges as usize, p.num_points as usize);
        let mut disp = vec![[0.0f32; 4]; np];
        let mut cnt = fresh_counters();
        length::length_setup(&p, &lv0, &c.vel, &mut disp, &mut cnt);
        let nan = vec![[f32::NAN; 4]; ne];
        let run = |name: &str, inputs: &[(&str, &[u8])]| {
            run_kernel(&gpu, name, inputs, p.num_edges).unwrap_or_else(|e| panic!("{name}: {e}"))
        };
        for iterations in [1, 0] {
            let start = Counters {
                length_iterations: iterations,
                ..cnt
            };
            let fused = run(
                "length_error_assemble",
                &[
                    ("params", bytes(&[p])),
                    ("length_level", bytes(&lv0)),
                    ("yarns", bytes(&c.yarns)),
                    ("edges", bytes(&c.edges)),
                    ("inv_mass", bytes(&c.inv_mass)),
                    ("pos", bytes(&c.pos)),
                    ("length_disp", bytes(&disp)),
                    ("length_dir", bytes(&nan)),
                    ("length_sys", bytes(&nan)),
                    ("counters", bytes(&[start])),
                ],
            );
            let error = run(
                "length_error",
                &[
                    ("params", bytes(&[p])),
                    ("length_level", bytes(&lv0)),
                    ("edges", bytes(&c.edges)),
                    ("pos", bytes(&c.pos)),
                    ("length_disp", bytes(&disp)),
                    ("length_dir", bytes(&nan)),
                    ("counters", bytes(&[start])),
                ],
            );
            let lv = length::level_uniform(0, s.levels[0]);
            let assemble = run(
                "length_assemble",
                &[
                    ("params", bytes(&[p])),
                    ("length_level", bytes(&lv)),
                    ("yarns", bytes(&c.yarns)),
                    ("edges", bytes(&c.edges)),
                    ("inv_mass", bytes(&c.inv_mass)),
                    ("length_dir", &error["length_dir"]),
                    ("length_sys", bytes(&nan)),
                    ("counters", &error["counters"]),
                ],
            );
            let at = format!("{what}, length_iterations {iterations}");
            assert!(
                fused["length_dir"] == error["length_dir"],
                "{at}: length_dir"
            );
            assert!(
                fused["length_sys"] == assemble["length_sys"],
                "{at}: length_sys"
            );
            assert_eq!(fused["counters"], assemble["counters"], "{at}: counters");
            let g_dir: Vec<[f32; 4]> = bytemuck::cast_slice(&fused["length_dir"]).to_vec();
            let g_sys: Vec<[f32; 4]> = bytemuck::cast_slice(&fused["length_sys"]).to_vec();
            let written = g_sys.iter().filter(|r| !r[0].is_nan()).count();
            assert_eq!(
                written,
                if iterations == 1 { ne } else { 0 },
                "{at}: rows written"
            );
            let (dir, _, tc) = assemble_twin(
                length::length_error_assemble,
                &c,
                &lv0,
                &disp,
                nan.clone(),
                nan.clone(),
                start,
            );
            assert_eq!(
                bytemuck::pod_read_unaligned::<Counters>(&fused["counters"]),
                tc,
                "{at}"
            );
            compare("length_error_assemble", &g_dir, &dir, |k, comp| {
                error_bound(&c, &disp, k).0[comp]
            });
        }
    }
}

/// The signature of the twins of `length_error_assemble` and `length_error_assemble_reduce`.
type AssembleTwin = fn(
    &Params,
    &[u32; 4],
    &[Yarn],
    &[Edge],
    &[f32],
    &[[f32; 4]],
    &[[f32; 4]],
    &mut [[f32; 4]],
    &mut [[f32; 4]],
    &mut Counters,
);

/// `twin` run on case `c` with the uniform `lv0` and the displacements `disp`, from `dir`, `sys`
/// and `counters`: what it leaves of the three.
fn assemble_twin(
    twin: AssembleTwin,
    c: &Case,
    lv0: &[u32; 4],
    disp: &[[f32; 4]],
    mut dir: Vec<[f32; 4]>,
    mut sys: Vec<[f32; 4]>,
    mut counters: Counters,
) -> (Vec<[f32; 4]>, Vec<[f32; 4]>, Counters) {
    twin(
        &c.params,
        lv0,
        &c.yarns,
        &c.edges,
        &c.inv_mass,
        &c.pos,
        disp,
        &mut dir,
        &mut sys,
        &mut counters,
    );
    (dir, sys, counters)
}

/// `length_error_assemble_reduce`, which the step dispatches in place of `length_error_assemble`
/// and projection 1's `length_reduce` of level 0 when that level is below the top, leaves
/// `length_dir`, the whole of `length_sys` (level 0 and the level the reduction writes) and
/// `counters` bit for bit as those two dispatched on the same GPU: on the small sack's state after
/// 20 steps (24 closed rings, 9,216 edges: 18 workgroups) and on closed and open yarns (2,999
/// edges: 6 workgroups), each workgroup computing the rows of the block after its own, which the
/// next workgroup writes; with the iteration wanted and not (nothing written). Outputs start as
/// NaN. Its twin (the two twins in turn) keeps the same counters and writes the same rows.
#[test]
fn length_error_assemble_reduce_is_the_two_kernels_bit_for_bit() {
    let Some(gpu) = gpu_or_skip("length_error_assemble_reduce_is_the_two_kernels_bit_for_bit")
    else {
        return;
    };
    let sack = scene_case("sack_small", &["contact.model=none", "relax.time=0"], 20);
    for (what, c) in [("sack", sack), ("closed yarns", closed_yarns_case())] {
        let p = c.params;
        let s = length::LengthScratch::new(&c.edges, c.pos.len());
        let l0 = s.levels[0];
        assert!(
            length::top_level(&s.levels) > 0 && l0.offset == 0,
            "{what}: level 0 is reduced by length_reduce"
        );
        let lv0 = length::committed_uniform(l0, true);
        let np = p.num_points as usize;
        let mut disp = vec![[0.0f32; 4]; np];
        let mut cnt = fresh_counters();
        length::length_setup(&p, &lv0, &c.vel, &mut disp, &mut cnt);
        let nan_dir = vec![[f32::NAN; 4]; p.num_edges as usize];
        let nan_sys = vec![[f32::NAN; 4]; s.sys.len()];
        let solver = length::solver_threads(l0.size);
        let run = |name: &str, inputs: &[(&str, &[u8])], threads: u32| {
            run_kernel(&gpu, name, inputs, threads).unwrap_or_else(|e| panic!("{name}: {e}"))
        };
        for iterations in [1, 0] {
            let start = Counters {
                length_iterations: iterations,
                ..cnt
            };
            let inputs = |sys: &[u8]| -> Vec<(&str, Vec<u8>)> {
                vec![
                    ("params", bytes(&[p]).to_vec()),
                    ("length_level", bytes(&lv0).to_vec()),
                    ("yarns", bytes(&c.yarns).to_vec()),
                    ("edges", bytes(&c.edges).to_vec()),
                    ("inv_mass", bytes(&c.inv_mass).to_vec()),
                    ("pos", bytes(&c.pos).to_vec()),
                    ("length_disp", bytes(&disp).to_vec()),
                    ("length_dir", bytes(&nan_dir).to_vec()),
                    ("length_sys", sys.to_vec()),
                    ("counters", bytes(&[start]).to_vec()),
                ]
            };
            let owned = inputs(bytes(&nan_sys));
            let refs: Vec<(&str, &[u8])> = owned.iter().map(|(n, b)| (*n, &b[..])).collect();
            let fused = run("length_error_assemble_reduce", &refs, solver);
            let assemble = run("length_error_assemble", &refs, p.num_edges);
            let lv = length::level_uniform(0, l0);
            let reduce = run(
                "length_reduce",
                &[
                    ("length_level", bytes(&lv)),
                    ("length_sys", &assemble["length_sys"]),
                    ("counters", &assemble["counters"]),
                ],
                solver,
            );
            let at = format!("{what}, length_iterations {iterations}");
            // Compared as bytes: NaN rows (never written) must stay NaN on both sides.
            assert!(
                fused["length_dir"] == assemble["length_dir"],
                "{at}: length_dir"
            );
            let (g, w): (&[[u32; 4]], &[[u32; 4]]) = (
                bytemuck::cast_slice(&fused["length_sys"]),
                bytemuck::cast_slice(&reduce["length_sys"]),
            );
            if let Some(k) = (0..g.len()).find(|&k| g[k] != w[k]) {
                panic!(
                    "{at}: length_sys row {k} of {}: {:?} against {:?}",
                    g.len(),
                    g[k],
                    w[k]
                );
            }
            assert_eq!(fused["counters"], reduce["counters"], "{at}: counters");
            let g_sys: Vec<[f32; 4]> = bytemuck::cast_slice(&fused["length_sys"]).to_vec();
            let written = g_sys.iter().filter(|r| !r[0].is_nan()).count();
            let nb = l0.size.div_ceil(length::BLOCK) as usize;
            assert_eq!(
                written,
                if iterations == 1 {
                    l0.size as usize + nb
                } else {
                    0
                },
                "{at}: rows written (level 0 and the next)"
            );
            let (_, sys, tc) = assemble_twin(
                length::length_error_assemble_reduce,
                &c,
                &lv0,
                &disp,
                nan_dir.clone(),
                nan_sys.clone(),
                start,
            );
            assert_eq!(
                bytemuck::pod_read_unaligned::<Counters>(&fused["counters"]),
                tc,
                "{at}: the twin's counters"
            );
            let twin_written = sys.iter().filter(|r| !r[0].is_nan()).count();
            assert_eq!(twin_written, written, "{at}: the twin's rows");
        }
    }
}

/// The smallest normal f32, 2⁻¹²⁶: below it a value may be flushed to 0.
const MU: f64 = f32::MIN_POSITIVE as f64;

/// One value of a kernel's float arithmetic, for the bounds of `kernels_vs_twins`: `x` is the exact
/// result of the kernel's operations on the f32 inputs both paths share (evaluated in f64, whose own
/// roundings, 2⁻⁵³ relative, are 2⁻³⁰ of the ε terms: neglected) and `e` bounds how far from `x` any
/// implementation of those operations that WGSL allows can land.
///
/// The model (WGSL's floating-point accuracy rules, which Vulkan's match for these operations),
/// ε = 2⁻²³, μ = 2⁻¹²⁶:
/// - +, −, × are correctly rounded, to nearest or toward zero: within 1 ulp ≤ ε |result|;
/// - a·b + c may be fused into one rounding (WGSL lets a compiler contract it);
/// - ÷ within 2.5 ulp for a divisor in [2⁻¹²⁶, 2¹²⁶] (checked); √ is inherited from
///   1 / inverseSqrt: 2 + 2.5 ulp, 5 ulp with the second-order terms;
/// - a subnormal input or result of an operation may be flushed to 0 (NVIDIA's Vulkan driver does,
///   see the module doc): an error below μ; loads, stores and copies are exact.
///
/// Each operation's `e` is the propagated bound of its operands (exact, not first order: for a
/// product `|â b̂ − a b| ≤ e_a (|b| + e_b) + |a| e_b`, for a quotient
/// `(e_a + |a/b| e_b) / (|b| − e_b)`) plus its own rounding, `ulps · ε · (|x| + e)` (the computed
/// result is at most that large), plus μ for a flush. Errors carry over as absolute errors, so a
/// cancellation keeps those of what cancelled: unfused, `a − b c` is charged `ε |b c|` for the
/// product (on the operands' scale, however small `a − b c` is) plus `ε |a − b c|` for the
/// difference; fused, it is one rounding of the exact `â − b̂ ĉ` (and one flush), which is within
/// that, so the bound holds for either. The CPU twins (IEEE f32 to nearest, gradual underflow, no fusion, the kernels' order of
/// operations) are one implementation the model allows and the GPU another, so
/// `|gpu − twin| ≤ |gpu − x| + |twin − x| ≤ 2 e` ([`Eb::bound`]).
///
/// Where a value is far above μ / ε ≈ 10⁻³¹ this is a relative bound of a few ε per operation on the
/// operands' scale; a value that decays towards 0 (the solver's `q` along a closed yarn) ends in the
/// μ terms, an absolute floor of a few μ per operation carried through the sweeps like any other
/// error (a flushed subnormal cannot differ by more than μ from the twin's).
#[derive(Clone, Copy, Debug)]
struct Eb {
    x: f64,
    e: f64,
}

impl Eb {
    /// A value read from a buffer: the same bits on both paths, but a subnormal may be flushed
    /// where it enters an operation.
    fn input(v: f32) -> Eb {
        let x = v as f64;
        Eb {
            x,
            e: if x.abs() < MU { x.abs() } else { 0.0 },
        }
    }

    fn exact(x: f64) -> Eb {
        Eb { x, e: 0.0 }
    }

    fn inputs<const N: usize>(v: &[f32; N]) -> [Eb; N] {
        v.map(Eb::input)
    }

    /// A 0 that both paths hold exactly (then `mul0`, `div0` give an exact 0 on both).
    fn is_zero(self) -> bool {
        self.x == 0.0 && self.e == 0.0
    }

    /// The largest magnitude the computed value can have.
    fn mag(self) -> f64 {
        self.x.abs() + self.e
    }

    /// The result `x` of an operation whose operands' errors move it by up to `e`, rounded within
    /// `ulps` ulp of the computed value, maybe flushed.
    fn rounded(x: f64, e: f64, ulps: f64) -> Eb {
        Eb {
            x,
            e: e + ulps * EPS * (x.abs() + e) + MU,
        }
    }

    fn sqrt(self) -> Eb {
        let x = self.x.sqrt();
        // |√â − √a| ≤ |â − a| / √a, and ≤ √|â − a|.
        let e = if x > 0.0 { self.e / x } else { f64::INFINITY };
        Eb::rounded(x, e.min(self.e.sqrt()), 5.0)
    }

    /// Exact.
    fn abs(self) -> Eb {
        Eb {
            x: self.x.abs(),
            e: self.e,
        }
    }

    /// The bound on `|gpu − twin|`: both are within `e` of `x`.
    fn bound(self) -> f64 {
        2.0 * self.e
    }
}

impl std::ops::Neg for Eb {
    type Output = Eb;
    fn neg(self) -> Eb {
        Eb {
            x: -self.x,
            e: self.e,
        }
    }
}

impl std::ops::Add for Eb {
    type Output = Eb;
    fn add(self, b: Eb) -> Eb {
        Eb::rounded(self.x + b.x, self.e + b.e, 1.0)
    }
}

impl std::ops::Sub for Eb {
    type Output = Eb;
    fn sub(self, b: Eb) -> Eb {
        Eb::rounded(self.x - b.x, self.e + b.e, 1.0)
    }
}

impl std::ops::Mul for Eb {
    type Output = Eb;
    fn mul(self, b: Eb) -> Eb {
        Eb::rounded(self.x * b.x, self.e * b.mag() + self.x.abs() * b.e, 1.0)
    }
}

impl std::ops::Div for Eb {
    type Output = Eb;
    fn div(self, b: Eb) -> Eb {
        let d = b.x.abs();
        assert!(
            b.e < d && d - b.e >= MU && d + b.e <= 2f64.powi(126),
            "a divisor {} ± {} outside the range of WGSL's 2.5 ulp",
            b.x,
            b.e
        );
        let q = self.x / b.x;
        Eb::rounded(q, (self.e + q.abs() * b.e) / (d - b.e), 2.5)
    }
}

/// The kernels' `mul0` and `div0`: an exact 0 factor (dividend) gives an exact 0.
fn mul0(a: Eb, b: Eb) -> Eb {
    if a.is_zero() || b.is_zero() {
        Eb::exact(0.0)
    } else {
        a * b
    }
}

fn div0(a: Eb, b: Eb) -> Eb {
    if a.is_zero() {
        Eb::exact(0.0)
    } else {
        a / b
    }
}

/// `dot3` of shaders/shared/vec.wgsl (and length.rs): (a.x b.x + a.y b.y) + a.z b.z.
fn dot3_eb(a: &[f32; 4], b: &[f32; 4]) -> Eb {
    let (a, b) = (Eb::inputs(a), Eb::inputs(b));
    a[0] * b[0] + a[1] * b[1] + a[2] * b[2]
}

/// `length_setup`'s operations on point `p`: `h v`.
fn setup_bound(c: &Case, p: usize) -> [f64; 4] {
    let (h, v) = (Eb::input(c.params.h), Eb::inputs(&c.vel[p]));
    [
        (h * v[0]).bound(),
        (h * v[1]).bound(),
        (h * v[2]).bound(),
        0.0,
    ]
}

/// `length_error`'s operations on edge `k`: the bounds of `(t, C)` and of `|C| / ℓ`.
fn error_bound(c: &Case, disp: &[[f32; 4]], k: usize) -> ([f64; 4], f64) {
    let e = c.edges[k];
    let (a, b) = (e.a as usize, e.b as usize);
    let (qa, qb) = (Eb::inputs(&c.pos[a]), Eb::inputs(&c.pos[b]));
    let (da, db) = (Eb::inputs(&disp[a]), Eb::inputs(&disp[b]));
    let v: [Eb; 3] = std::array::from_fn(|i| (qb[i] - qa[i]) + (db[i] - da[i]));
    let len = (v[0] * v[0] + v[1] * v[1] + v[2] * v[2]).sqrt();
    let rest = Eb::input(e.rest_length);
    let cc = len - rest;
    let t = if len.x > 0.0 { v.map(|vi| vi / len) } else { v };
    (
        [t[0].bound(), t[1].bound(), t[2].bound(), cc.bound()],
        (cc / rest).abs().bound(),
    )
}

/// `cyclic_terms` (shaders/shared/length_cyclic_terms.wgsl) of closed yarn `y`: (γ, corner).
fn cyclic_terms_eb(c: &Case, dir: &[[f32; 4]], y: &Yarn) -> (Eb, Eb) {
    let f = y.first_edge as usize;
    let l = f + y.num_edges as usize - 1;
    let ef = c.edges[f];
    let (ma, mb) = (c.inv_mass[ef.a as usize], c.inv_mass[ef.b as usize]);
    let wfa = Eb::input(ma);
    let d0 = if ma + mb > 0.0 {
        wfa + Eb::input(mb)
    } else {
        Eb::exact(1.0)
    };
    (-d0, -wfa * dot3_eb(&dir[l], &dir[f]))
}

/// `length_assemble`'s operations on edge `k`: the bounds of `(d, o, r, z)` (r a copy).
fn assemble_bound(c: &Case, dir: &[[f32; 4]], k: usize) -> [f64; 4] {
    let e = c.edges[k];
    let y = c.yarns[e.yarn as usize];
    let i = k as u32 - y.first_edge;
    let (ma, mb) = (c.inv_mass[e.a as usize], c.inv_mass[e.b as usize]);
    let wa = Eb::input(ma);
    let mut d = if ma + mb > 0.0 {
        wa + Eb::input(mb)
    } else {
        Eb::exact(1.0)
    };
    let o = if i > 0 {
        -wa * dot3_eb(&dir[k - 1], &dir[k])
    } else {
        Eb::exact(0.0)
    };
    let mut z = Eb::exact(0.0);
    if y.closed != 0 && y.num_edges >= 3 {
        let (gamma, corner) = cyclic_terms_eb(c, dir, &y);
        if i == 0 {
            d = d - gamma;
            z = gamma;
        }
        if i == y.num_edges - 1 {
            d = d - corner * corner / gamma;
            z = corner;
        }
    }
    [d.bound(), o.bound(), 0.0, z.bound()]
}

/// `length_reduce`'s operations for row `j` of the next level, from the level `cur` (`n` rows, `nb`
/// blocks; the kernel's input): the bounds of that row.
fn reduce_bound(cur: &[[f32; 4]], j: usize, n: usize, nb: usize) -> [f64; 4] {
    let b = length::BLOCK as usize;
    let s = j * b;
    let sep = (s + b).min(n) - 1;
    let row = Eb::inputs(&cur[sep]);
    let (mut dd, mut oo, mut rr, mut zz) = (row[0], row[1], row[2], row[3]);
    if sep > s {
        let first = Eb::inputs(&cur[s]);
        let (mut beta, mut rho, mut zeta) = (first[0], first[2], first[3]);
        let mut g = Eb::exact(1.0);
        for ri in &cur[s + 1..sep] {
            let ri = Eb::inputs(ri);
            let w = div0(ri[1], beta);
            beta = ri[0] - mul0(ri[1], w);
            rho = ri[2] - mul0(w, rho);
            zeta = ri[3] - mul0(w, zeta);
            g = -mul0(w, g);
        }
        let cr = row[1];
        let q = div0(cr, beta);
        dd = dd - mul0(q, cr);
        rr = rr - mul0(q, rho);
        zz = zz - mul0(q, zeta);
        oo = -mul0(first[1], mul0(q, g));
    }
    if j + 1 < nb {
        let s2 = sep + 1;
        let sep2 = (s2 + b).min(n) - 1;
        if sep2 > s2 {
            let last = Eb::inputs(&cur[sep2 - 1]);
            let (mut beta, mut rho, mut zeta, mut below) = (last[0], last[2], last[3], last[1]);
            for ri in cur[s2..sep2 - 1].iter().rev() {
                let ri = Eb::inputs(ri);
                let w = div0(below, beta);
                beta = ri[0] - mul0(below, w);
                rho = ri[2] - mul0(w, rho);
                zeta = ri[3] - mul0(w, zeta);
                below = ri[1];
            }
            let q = div0(below, beta);
            dd = dd - mul0(q, below);
            rr = rr - mul0(q, rho);
            zz = zz - mul0(q, zeta);
        }
    }
    let out = if nb == 1 {
        [dd, Eb::exact(0.0), rr / dd, zz / dd]
    } else {
        [dd, oo, rr, zz]
    };
    out.map(Eb::bound)
}

/// `length_back`'s operations on block `j` of the level at rows `off .. off + n` of `sys` (the
/// kernel's input, the next level solved right after it): the bounds of the block's rows, into
/// `out[off + j BLOCK ..]`. The separator's values are copies; the couplings are kept.
fn back_bound(sys: &[[f32; 4]], off: usize, n: usize, j: usize, out: &mut [[f64; 4]]) {
    let b = length::BLOCK as usize;
    let s = off + j * b;
    let sep = off + (j * b + b).min(n) - 1;
    out[sep] = [0.0; 4];
    if sep == s {
        return;
    }
    let xr = Eb::inputs(&sys[off + n + j]);
    let xl = if j > 0 {
        Eb::inputs(&sys[off + n + j - 1])
    } else {
        [Eb::exact(0.0); 4]
    };
    let (cl, cr) = (Eb::input(sys[s][1]), Eb::input(sys[sep][1]));
    // Forward: (pivot, r, z) of rows s .. sep.
    let mut fwd: Vec<[Eb; 3]> = Vec::with_capacity(sep - s);
    for i in s..sep {
        let ri = Eb::inputs(&sys[i]);
        let (mut d, mut r, mut z) = (ri[0], ri[2], ri[3]);
        if i == s {
            r = r - mul0(cl, xl[2]);
            z = z - mul0(cl, xl[3]);
        }
        if i == sep - 1 {
            r = r - mul0(cr, xr[2]);
            z = z - mul0(cr, xr[3]);
        }
        if i > s {
            let prev = fwd[i - s - 1];
            let w = div0(ri[1], prev[0]);
            d = d - mul0(ri[1], w);
            r = r - mul0(w, prev[1]);
            z = z - mul0(w, prev[2]);
        }
        fwd.push([d, r, z]);
    }
    // Backward: the solution.
    let last = fwd[sep - s - 1];
    let (mut x, mut xz) = (last[1] / last[0], last[2] / last[0]);
    out[sep - 1] = [last[0].bound(), 0.0, x.bound(), xz.bound()];
    for i in (s + 1..sep).rev() {
        let o = Eb::input(sys[i][1]);
        let bi = fwd[i - 1 - s];
        x = (bi[1] - mul0(o, x)) / bi[0];
        xz = (bi[2] - mul0(o, xz)) / bi[0];
        out[i - 1] = [bi[0].bound(), 0.0, x.bound(), xz.bound()];
    }
}

/// `length_update`'s operations for the factor `f` of yarn `yi` (`length::cyclic_fact`).
fn cyclic_eb(c: &Case, dir: &[[f32; 4]], sys: &[[f32; 4]], yi: usize) -> Eb {
    let y = c.yarns[yi];
    if y.closed == 0 || y.num_edges < 3 {
        return Eb::exact(0.0);
    }
    let (gamma, corner) = cyclic_terms_eb(c, dir, &y);
    let f = y.first_edge as usize;
    let first = Eb::inputs(&sys[f]);
    let last = Eb::inputs(&sys[f + y.num_edges as usize - 1]);
    let num = first[2] + corner * last[2] / gamma;
    let den = Eb::exact(1.0) + first[3] + corner * last[3] / gamma;
    num / den
}

/// `length_update`'s operations on point `p` (`disp` its input): the bounds of the new `disp`.
fn update_bound(c: &Case, s: &LengthScratch, disp: &[[f32; 4]], p: usize) -> [f64; 4] {
    let w = Eb::input(c.inv_mass[p]);
    let pe = s.point_edges[p];
    let f = cyclic_eb(c, &s.dir, &s.sys, pe[2] as usize);
    let lam = |k: usize| {
        let row = Eb::inputs(&s.sys[k]);
        (row[2] - f * row[3], Eb::inputs(&s.dir[k]))
    };
    let mut dx = [Eb::exact(0.0); 3];
    if pe[1] != length::NO_EDGE {
        let (l, t) = lam(pe[1] as usize);
        dx = std::array::from_fn(|i| dx[i] - l * t[i]);
    }
    if pe[0] != length::NO_EDGE {
        let (l, t) = lam(pe[0] as usize);
        dx = std::array::from_fn(|i| dx[i] + l * t[i]);
    }
    let d = Eb::inputs(&disp[p]);
    let out: [Eb; 3] = std::array::from_fn(|i| d[i] + w * dx[i]);
    [out[0].bound(), out[1].bound(), out[2].bound(), 0.0]
}

/// `length_finish`'s operations on point `p`: `d (1 / h)`.
fn finish_bound(c: &Case, disp: &[[f32; 4]], p: usize) -> [f64; 4] {
    let inv_h = Eb::exact(1.0) / Eb::input(c.params.h);
    let d = Eb::inputs(&disp[p]);
    [
        (d[0] * inv_h).bound(),
        (d[1] * inv_h).bound(),
        (d[2] * inv_h).bound(),
        0.0,
    ]
}

fn kernels_vs_twins(gpu: &Gpu, c: &Case, what: &str) {
    use length::*;
    let p = c.params;
    let mut s = LengthScratch::new(&c.edges, c.pos.len());
    let mut vel = c.vel.clone();
    let mut cnt = fresh_counters();
    let (ne, np) = (p.num_edges, p.num_points);
    let run = |name: &str, inputs: &[(&str, &[u8])], threads: u32| {
        run_kernel(gpu, name, inputs, threads).unwrap_or_else(|e| panic!("{name}: {e}"))
    };
    let f4 = |v: &Vec<u8>| -> Vec<[f32; 4]> { bytemuck::cast_slice(v).to_vec() };
    let counters_of = |v: &Vec<u8>| -> Counters { bytemuck::pod_read_unaligned(v) };
    let mut report: Vec<(String, f64, usize)> = Vec::new();
    let mut note = |what: String, r: (f64, usize)| report.push((what, r.0, r.1));

    // The stage as LengthGpu records it with every iteration: projection 1 committed by
    // length_setup, no length_check of iteration 0, the last check in length_finish.
    let cap = p.length_max_iterations;
    let committed = first_committed(&p, cap);
    assert!(committed, "{what}: the stage should commit projection 1");
    let lv0 = committed_uniform(s.levels[0], committed);
    let out = run(
        "length_setup",
        &[
            ("params", bytes(&[p])),
            ("length_level", bytes(&lv0)),
            ("vel", bytes(&vel)),
            ("length_disp", bytes(&s.disp)),
            ("counters", bytes(&[cnt])),
        ],
        np,
    );
    length_setup(&p, &lv0, &vel, &mut s.disp, &mut cnt);
    assert_eq!(counters_of(&out["counters"]), cnt, "length_setup");
    assert_eq!(
        cnt.length_iterations, 1,
        "length_setup commits projection 1"
    );
    note(
        "length_setup".into(),
        compare("length_setup", &f4(&out["length_disp"]), &s.disp, |i, k| {
            setup_bound(c, i)[k]
        }),
    );

    let mut iterations = 0;
    for it in 0..=cap {
        let lv = level_uniform(it, s.levels[0]);
        let first = it == 0 && committed;
        let ev = if first { lv0 } else { lv };
        // length_error
        let out = run(
            "length_error",
            &[
                ("params", bytes(&[p])),
                ("length_level", bytes(&ev)),
                ("edges", bytes(&c.edges)),
                ("pos", bytes(&c.pos)),
                ("length_disp", bytes(&s.disp)),
                ("length_dir", bytes(&s.dir)),
                ("counters", bytes(&[cnt])),
            ],
            ne,
        );
        length_error(&p, &ev, &c.edges, &c.pos, &s.disp, &mut s.dir, &mut cnt);
        if first {
            assert_eq!(
                cnt.length_error_bits, 0,
                "a committed iteration 0 keeps no error"
            );
        }
        let bound: Vec<([f64; 4], f64)> = (0..ne as usize)
            .map(|k| error_bound(c, &s.disp, k))
            .collect();
        note(
            format!("length_error it {it}"),
            compare(
                "length_error",
                &f4(&out["length_dir"]),
                &s.dir,
                |k, comp| bound[k].0[comp],
            ),
        );
        let g = counters_of(&out["counters"]);
        assert_eq!(
            (g.errors, g.length_iterations),
            (cnt.errors, cnt.length_iterations)
        );
        // The largest relative error: |max g − max c| ≤ max |g_k − c_k|, within the largest bound.
        let worst = bound.iter().map(|b| b.1).fold(0.0, f64::max);
        note(
            format!("length_error it {it} (error)"),
            compare(
                "length_error_bits",
                &[[f32::from_bits(g.length_error_bits)]],
                &[[f32::from_bits(cnt.length_error_bits)]],
                |_, _| worst,
            ),
        );
        if it == cap {
            // Its check is length_finish's.
            break;
        }
        // length_check, on the twin's counters
        if !first {
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
        }
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
        note(
            format!("length_assemble it {it}"),
            compare(
                "length_assemble",
                &f4(&out["length_sys"]),
                &s.sys,
                |k, comp| {
                    if k < ne as usize {
                        assemble_bound(c, &s.dir, k)[comp]
                    } else {
                        0.0 // rows it does not write
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
                length::solver_threads(n as u32),
            );
            let input = s.sys.clone();
            length_reduce(&u, &mut s.sys, &mut cnt);
            let bound: Vec<[f64; 4]> = (0..nb)
                .map(|j| reduce_bound(&input[off..off + n], j, n, nb))
                .collect();
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
                        bound[i - off - n][comp]
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
                length::solver_threads(n as u32),
            );
            let input = s.sys.clone();
            length_back(&u, &mut s.sys, &mut cnt);
            let mut bound = vec![[0.0f64; 4]; input.len()]; // 0: rows it does not write
            for j in 0..nb {
                back_bound(&input, off, n, j, &mut bound);
            }
            note(
                format!("length_back it {it} level {l}"),
                compare("length_back", &f4(&out["length_sys"]), &s.sys, |i, comp| {
                    bound[i][comp]
                }),
            );
        }
        // length_update
        let uu = update_uniform(it, s.levels[0], np);
        let out = run(
            "length_update",
            &[
                ("length_level", bytes(&uu)),
                ("yarns", bytes(&c.yarns)),
                ("edges", bytes(&c.edges)),
                ("point_edges", bytes(&s.point_edges)),
                ("inv_mass", bytes(&c.inv_mass)),
                ("length_dir", bytes(&s.dir)),
                ("length_sys", bytes(&s.sys)),
                ("length_disp", bytes(&s.disp)),
                ("counters", bytes(&[cnt])),
            ],
            np,
        );
        let before = s.disp.clone();
        length_update(
            &uu,
            &c.yarns,
            &c.edges,
            &s.point_edges,
            &c.inv_mass,
            &s.dir,
            &s.sys,
            &mut s.disp,
            &mut cnt,
        );
        note(
            format!("length_update it {it}"),
            compare(
                "length_update",
                &f4(&out["length_disp"]),
                &s.disp,
                |i, comp| update_bound(c, &s, &before, i)[comp],
            ),
        );
    }
    assert!(
        iterations >= 2,
        "{what}: should take several iterations, took {iterations}"
    );
    // length_finish
    let lf = level_uniform(cap, s.levels[0]);
    let out = run(
        "length_finish",
        &[
            ("params", bytes(&[p])),
            ("length_level", bytes(&lf)),
            ("edges", bytes(&c.edges)),
            ("length_dir", bytes(&s.dir)),
            ("length_disp", bytes(&s.disp)),
            ("vel", bytes(&vel)),
            ("counters", bytes(&[cnt])),
        ],
        np,
    );
    length_finish(&p, &lf, &c.edges, &s.dir, &s.disp, &mut vel, &mut cnt);
    assert_eq!(counters_of(&out["counters"]), cnt, "length_finish");
    note(
        "length_finish".into(),
        compare("length_finish", &f4(&out["vel"]), &vel, |i, k| {
            finish_bound(c, &s.disp, i)[k]
        }),
    );
    for (kernel, worst, differ) in &report {
        eprintln!("{what}: {kernel}: {differ} components differ, worst {worst:.3} of the bound");
    }
}

/// A yarn that cannot converge within the cap (its rest lengths 20 % short, 2 iterations allowed)
/// and one with a NaN velocity: both paths raise ERROR_LENGTH_NOT_CONVERGED with the same count
/// (and, for the NaN, ERROR_NAN_VELOCITY with its point), leave the velocities as they came, and
/// name the same yarn and first edge as the sequential oracle does.
#[test]
fn not_converged_is_flagged_on_both_paths() {
    let gpu = gpu_or_skip("not_converged_is_flagged_on_both_paths");
    let mut stretched = case(&[(1000, false), (10, true), (1000, true)], 9, 0.4, 1e-5, 2);
    for e in &mut stretched.edges[1009..] {
        e.rest_length *= 0.8;
    }
    let mut nan = case(&[(10, false), (1000, true), (10, true)], 10, 0.4, 1e-5, 100);
    nan.vel[500][1] = f32::NAN;
    // The NaN velocity also raises ERROR_NAN_VELOCITY and names its point.
    let (flag, nan_flags) = (
        ERROR_LENGTH_NOT_CONVERGED,
        ERROR_LENGTH_NOT_CONVERGED | ERROR_NAN_VELOCITY,
    );
    for (c, yarn, what, errors, bad) in [
        (&stretched, 2, "stretched yarn", flag, u32::MAX),
        (&nan, 1, "NaN velocity", nan_flags, 500),
    ] {
        let (r, vel, counters) = cpu_stage(c);
        let f = r.expect_err(what);
        eprintln!("{what}: {f:?}");
        assert_eq!(f.yarn, yarn, "{what}");
        assert_eq!(f.iterations, c.params.length_max_iterations, "{what}");
        assert!(f.error >= c.params.length_tolerance, "{what}");
        assert_eq!(counters.errors, errors, "{what}");
        assert_eq!(counters.first_bad_point, bad, "{what}");
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
        assert_eq!(g_cnt.errors, errors, "{what}: GPU flags");
        assert_eq!(g_cnt.first_bad_point, bad, "{what}: GPU's bad point");
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
        // The edge the host names: the GPU's is the twin's, in the failing yarn, and (read from
        // the GPU's last evaluation) the first whose error is not below the tolerance.
        let first = g_cnt.first_unconverged_edge;
        assert_eq!(first, counters.first_unconverged_edge, "{what}: first edge");
        assert_eq!(c.edges[first as usize].yarn as usize, yarn, "{what}");
        let tol = c.params.length_tolerance;
        let within = |k: usize| (g_dir[k][3] / c.edges[k].rest_length).abs() < tol;
        assert!(!within(first as usize), "{what}: edge {first}");
        assert!((0..first as usize).all(within), "{what}: before {first}");
        let g = length::report(&c.params, &c.yarns, &c.edges, &g_dir, &g_cnt).expect_err(what);
        assert_eq!(
            (g.yarn, g.points, g.iterations),
            (f.yarn, f.points, f.iterations),
            "{what}: GPU failure report"
        );
        let e = c.edges[first as usize];
        let y = c.yarns[yarn];
        assert_eq!(g.points, [e.a - y.first_point, e.b - y.first_point]);
    }
    // A cap of 0 iterations fails with every edge within the tolerance: both paths name the
    // first edge of the largest error.
    let c = case(&[(10, false), (1000, true), (10, true)], 11, 0.0, 1e-2, 0);
    let (r, _, counters) = cpu_stage(&c);
    let f = r.expect_err("cap 0");
    let errors: Vec<f32> = c
        .edges
        .iter()
        .map(|e| {
            // Iteration 0 evaluates q + h v, its edge vectors formed from differences.
            let (a, b) = (e.a as usize, e.b as usize);
            let h = c.params.h;
            let v: Vec<f32> = (0..3)
                .map(|k| (c.pos[b][k] - c.pos[a][k]) + (h * c.vel[b][k] - h * c.vel[a][k]))
                .collect();
            let len = (v[0] * v[0] + v[1] * v[1] + v[2] * v[2]).sqrt();
            ((len - e.rest_length) / e.rest_length).abs()
        })
        .collect();
    let worst = errors.iter().cloned().fold(0.0f32, f32::max);
    assert!(worst > 0.0 && worst < c.params.length_tolerance, "{worst}");
    let first = counters.first_unconverged_edge as usize;
    assert!(
        first < c.edges.len() && errors[first] == worst,
        "cap 0: edge {first}, error {} of the largest {worst}",
        errors.get(first).unwrap_or(&f32::NAN)
    );
    assert!(
        errors[..first].iter().all(|&e| e < worst),
        "cap 0: before {first}"
    );
    assert_eq!(f.yarn, c.edges[first].yarn as usize, "cap 0");
    if let Some(gpu) = &gpu {
        let (_, g_cnt, _) = gpu_stage(gpu, &c);
        assert_eq!(g_cnt.errors, ERROR_LENGTH_NOT_CONVERGED, "cap 0: GPU flag");
        assert_eq!(
            g_cnt.first_unconverged_edge, first as u32,
            "cap 0: GPU edge"
        );
    }
}

/// The solver kernels' block size is `length::BLOCK` (their loop bounds and the twins' partition
/// depend on it), and their workgroups are what `length::solver_threads` dispatches: `SOLVER_GROUP`
/// threads covering `SOLVER_BLOCKS` blocks, with room for `SOLVER_BLOCKS + 1` blocks of rows;
/// `length_top` runs one such workgroup from a level of at most `length::TOP_ROWS` rows.
#[test]
fn solver_kernels_use_the_twins_block_size() {
    let want = [
        format!("const BLOCK: u32 = {}u;", length::BLOCK),
        format!("const SOLVER_GROUP: u32 = {}u;", length::SOLVER_GROUP),
        format!("const SOLVER_BLOCKS: u32 = {}u;", length::SOLVER_BLOCKS),
        format!(
            "const SOLVER_ROWS: u32 = {}u;",
            (length::SOLVER_BLOCKS + 1) * length::BLOCK
        ),
        format!("const LENGTH_TOP_ROWS: u32 = {}u;", length::TOP_ROWS),
    ];
    for name in ["length_reduce", "length_back", "length_top"] {
        let src = yarnsim::shaders::expanded_text(name).unwrap();
        for w in &want {
            assert!(
                src.contains(w.as_str()),
                "shaders/{name}.wgsl must declare `{w}` (through shaders/shared/length.wgsl)"
            );
        }
        let k = yarnsim::shaders::kernel(name).unwrap();
        assert_eq!(k.workgroup_size, length::SOLVER_GROUP, "{name}");
    }
    assert_eq!(length::solver_threads(1), length::SOLVER_GROUP);
    let rows = length::SOLVER_BLOCKS * length::BLOCK;
    assert_eq!(length::solver_threads(rows), length::SOLVER_GROUP);
    assert_eq!(length::solver_threads(rows + 1), 2 * length::SOLVER_GROUP);
}

/// A level-0 system of `n` rows for the solver alone: symmetric, diagonally dominant (so positive
/// definite: diagonals in [2, 3], couplings in [−0.9, 0.9]), a zero coupling (a yarn's first row)
/// every 700 rows or so, and random right-hand sides `r` and `z`; the rows of the levels above are
/// zero. Returns the levels and the rows.
fn solver_system(n: u32, seed: u64) -> (Vec<length::Level>, Vec<[f32; 4]>) {
    let levels = length::levels(n);
    let total = levels.last().map_or(0, |l| (l.offset + l.size) as usize);
    let mut rng = Rng(seed);
    let mut sys = vec![[0.0f32; 4]; total];
    for (k, row) in sys[..n as usize].iter_mut().enumerate() {
        let c = if k == 0 || rng.range(0.0, 700.0) < 1.0 {
            0.0
        } else {
            rng.range(-0.9, 0.9) as f32
        };
        *row = [
            rng.range(2.0, 3.0) as f32,
            c,
            rng.range(-1.0, 1.0) as f32,
            rng.range(-1.0, 1.0) as f32,
        ];
    }
    (levels, sys)
}

/// `length_top` (the solver from the first level of at most `length::TOP_ROWS` rows to the top and
/// back, in one workgroup) leaves `length_sys` bit for bit as `length_reduce` and `length_back`
/// dispatched level by level leave it on the same GPU from the same system: it runs their per-block
/// functions (`reduce_chunk`, `back_chunk` in shaders/shared/length.wgsl) on the same rows in the
/// same order (a compiler that fused multiply-adds differently in the two kernels would show here).
/// Its twin equals the twins' level by level too. Systems whose top is level 0 (1 row; the tiny
/// swatch's 136; 1,024, two chunks) and above it (1,025 rows: levels of 1,025, 33, 2, 1, top at
/// 33; 40,000: top at the third level, 40 rows); then with the iteration not wanted, the kernel
/// writes nothing.
#[test]
fn length_top_solves_as_the_levels_it_replaces() {
    let Some(gpu) = gpu_or_skip("length_top_solves_as_the_levels_it_replaces") else {
        return;
    };
    let counters = Counters {
        length_iterations: 1,
        ..fresh_counters()
    };
    let run = |name: &str, u: [u32; 4], sys: &[[f32; 4]], cnt: &Counters, threads: u32| {
        let out = run_kernel(
            &gpu,
            name,
            &[
                ("length_level", bytes(&u)),
                ("length_sys", bytes(sys)),
                ("counters", bytes(&[*cnt])),
            ],
            threads,
        )
        .unwrap_or_else(|e| panic!("{name}: {e}"));
        bytemuck::cast_slice::<u8, [f32; 4]>(&out["length_sys"]).to_vec()
    };
    for (n, want_top) in [(1, 0), (136, 0), (1024, 0), (1025, 1), (40_000, 2)] {
        let (levels, sys0) = solver_system(n, 7 + n as u64);
        let top = length::top_level(&levels);
        assert_eq!(top, want_top, "{n} rows: top level");
        let solved = levels.len() - 1;
        let u = |l: usize| length::level_uniform(0, levels[l]);
        let threads = |l: usize| length::solver_threads(levels[l].size);
        // Level by level, on the GPU and with the twins.
        let (mut g_levels, mut c_levels) = (sys0.clone(), sys0.clone());
        let mut cnt = counters;
        for l in 0..solved {
            g_levels = run("length_reduce", u(l), &g_levels, &cnt, threads(l));
            length::length_reduce(&u(l), &mut c_levels, &mut cnt);
        }
        for l in (0..solved).rev() {
            g_levels = run("length_back", u(l), &g_levels, &cnt, threads(l));
            length::length_back(&u(l), &mut c_levels, &mut cnt);
        }
        // Below the top level by level, then length_top.
        let (mut g_top, mut c_top) = (sys0.clone(), sys0.clone());
        for l in 0..top {
            g_top = run("length_reduce", u(l), &g_top, &cnt, threads(l));
            length::length_reduce(&u(l), &mut c_top, &mut cnt);
        }
        g_top = run("length_top", u(top), &g_top, &cnt, length::SOLVER_GROUP);
        length::length_top(&u(top), &mut c_top, &mut cnt);
        for l in (0..top).rev() {
            g_top = run("length_back", u(l), &g_top, &cnt, threads(l));
            length::length_back(&u(l), &mut c_top, &mut cnt);
        }
        let bits = |v: &[[f32; 4]]| v.iter().flatten().map(|x| x.to_bits()).collect::<Vec<_>>();
        assert_eq!(bits(&c_top), bits(&c_levels), "{n} rows: twins");
        let first_diff = bits(&g_top)
            .iter()
            .zip(bits(&g_levels))
            .position(|(a, b)| *a != b);
        assert_eq!(
            first_diff, None,
            "{n} rows: GPU, length_top against the levels"
        );
        // The solve did its work: level 0's r and z are the solutions, not the inputs.
        let changed = (0..n as usize)
            .filter(|&k| g_top[k][2] != sys0[k][2])
            .count();
        assert!(changed > n as usize / 2, "{n} rows: {changed} solutions");
        // Not this iteration: nothing written.
        let idle = Counters {
            length_iterations: 2,
            ..counters
        };
        let g_idle = run("length_top", u(top), &sys0, &idle, length::SOLVER_GROUP);
        assert_eq!(
            bits(&g_idle),
            bits(&sys0),
            "{n} rows: an iteration not wanted"
        );
        println!(
            "{n} rows: levels {:?}, top {top}: GPU bitwise as level by level",
            levels.iter().map(|l| l.size).collect::<Vec<_>>()
        );
    }
}
