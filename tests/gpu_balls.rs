//! Free balls on the GPU: each kernel of the balls' stages (`ball_velocity`, `ball_hit_count`,
//! `ball_yarn_contact`, `ball_impulse_sum`, `ball_contact`, `ball_position`) against its CPU twin
//! in `yarnsim::balls` on the state of a real run (two balls thrown onto a pinned swatch, one into
//! the other); the whole GPU step of that run against the CPU path; growth of the contact list
//! (`ball_hits`) on overflow and determinism; and the refusal of more balls than `ball_contact`'s
//! one thread may loop over.
//!
//! Tolerances (u = 2⁻²⁴, the f32 unit roundoff), per component:
//! - discrete outputs (hit counts, offsets, the hit records' points and balls, the pair list, the
//!   counters) are compared exactly;
//! - `ball_velocity`, `ball_position`: one multiply-add, `2 u (|a| + |b|)` of its two terms;
//! - `ball_yarn_contact`: a point's new velocity comes from at most 2 balls here, each through
//!   fewer than 32 roundings at the scales of the predicted position over the step, `|q| / h` (the
//!   distance to the ball is a difference at the scale `|q|`, and the push out divides it by h),
//!   and of the velocities involved (`|v|`, the ball's surface speed `|V| + |ω| R`): `64 u (|q|/h +
//!   |v| + |V| + |ω| R)` per ball touched; an impulse is `m` times that;
//! - `ball_impulse_sum`: both paths add the same terms in the same order (the lanes, then the
//!   tree); the terms' products may round differently (a fused multiply-add): `16 u (Σ|J| / M +
//!   |v|)` and `16 u (Σ|arm × J| / I + |ω|)`;
//! - `ball_contact`: 8 sweeps of sequential impulses, each a chain of fewer than 64 roundings at
//!   the scales of a predicted centre over the step (`|c| / h`) and of the speeds: `8 × 64 u (|c|/h
//!   + |v| + |ω| R)` for a ball's velocity, over R for its spin.

#[path = "support/fixture.rs"]
mod fixture;

use fixture::bytes;
use yarnsim::balls::{self, BallHit, BallState};
use yarnsim::gpu::testing::gpu_or_skip;
use yarnsim::gpu::Gpu;
use yarnsim::gpu_step::{GpuSim, GpuStepError};
use yarnsim::layout::{Counters, Params};
use yarnsim::pipelines::run_kernel;
use yarnsim::scene::{self, Scene};
use yarnsim::sim::Sim;

const U: f64 = f32::EPSILON as f64 / 2.0;

/// The generator's 8 × 8 swatch, flat, its edges pinned, with two balls above it (radius 1.2 cm,
/// 0.3 g/cm³) thrown down at 100 cm/s, the left one also sideways into the right one, and
/// `model` contact. The swatch's top is 1.1 cm below the balls: they reach it in about 170 steps.
fn thrown_balls(model: &str) -> (Scene, Sim) {
    let text = format!(
        r#"
[simulation]
fps = 16200
[contact]
model = "{model}"
[relax]
time = 0
[[cloth]]
source.generator = {{ pattern = "stockinette", wales = 8, courses = 8 }}
rotate_deg = [90, 0, 0]
translate = [0, 30, 0]
[[pin]]
region = {{ min = [-5, 29, -5], max = [-4.1, 31, 5] }}
[[pin]]
region = {{ min = [4.0, 29, -5], max = [5, 31, 5] }}
[[pin]]
region = {{ min = [-5, 29, -5], max = [5, 31, -3.3] }}
[[pin]]
region = {{ min = [-5, 29, 2.75], max = [5, 31, 5] }}
[[obstacle]]
type = "plane"
point = [0, 0, 0]
normal = [0, 1, 0]
[[ball]]
center = [-1.35, 31.5, 0]
radius = 1.2
density = 0.3
friction = 0.5
[[ball]]
center = [1.35, 31.5, 0]
radius = 1.2
density = 0.3
friction = 0.5
"#
    );
    let scene = Scene::from_toml_str(&text, "thrown_balls").unwrap();
    let build = scene::build_curves(&scene, std::path::Path::new(".")).unwrap();
    let pins = scene::pinned_points(&scene, &build).unwrap();
    let mut sim = Sim::from_build(&scene, &build, &pins).unwrap();
    sim.balls[0].vel[0] = 30.0;
    sim.balls[0].vel[1] = -100.0;
    sim.balls[0].omega[2] = 20.0;
    sim.balls[1].vel[1] = -100.0;
    (scene, sim)
}

fn norm(v: &[f32]) -> f64 {
    v.iter()
        .take(3)
        .map(|&x| (x as f64).powi(2))
        .sum::<f64>()
        .sqrt()
}

/// Asserts `|a − b| ≤ bound` for the first three components; returns the worst ratio.
fn within(what: &str, a: &[f32], b: &[f32], bound: f64) -> f64 {
    let mut worst = 0.0f64;
    for k in 0..3 {
        let d = (a[k] as f64 - b[k] as f64).abs();
        assert!(
            d <= bound,
            "{what} component {k}: GPU {} CPU {} (bound {bound:e})",
            a[k],
            b[k]
        );
        if bound > 0.0 {
            worst = worst.max(d / bound);
        }
    }
    worst
}

fn cast<T: bytemuck::Pod>(b: &[u8]) -> Vec<T> {
    b.chunks_exact(std::mem::size_of::<T>())
        .map(bytemuck::pod_read_unaligned)
        .collect()
}

/// The CPU path's hit counts for the current state (the twin `ball_hit_count`).
fn hit_counts(sim: &Sim, params: &Params) -> (Vec<u32>, Vec<u32>) {
    let mut count = vec![0; sim.balls.len()];
    let mut offsets = vec![0; sim.pos.len() + 1];
    balls::ball_hit_count(
        params,
        &sim.balls,
        &sim.inv_mass,
        &sim.pos,
        &sim.vel,
        &mut count,
        &mut offsets,
    );
    (count, offsets)
}

#[test]
fn ball_kernels_match_their_twins() {
    let Some(gpu) = gpu_or_skip("ball_kernels_match_their_twins") else {
        return;
    };
    let (_, mut sim) = thrown_balls("exact");
    // Step on the CPU until both balls press into the swatch.
    let mut steps = 0;
    loop {
        sim.step().unwrap();
        steps += 1;
        let (count, _) = hit_counts(&sim, &sim.step_params());
        if count.iter().all(|&c| c >= 8) {
            break;
        }
        assert!(steps < 400, "the balls did not reach the swatch: {count:?}");
    }
    let params = sim.step_params();
    let nb = sim.balls.len() as u32;
    let n = params.num_points;
    let h = params.h as f64;
    let mut worst = [0.0f64; 6];

    // ball_velocity.
    let mut cpu_balls = sim.balls.clone();
    let mut cpu_count = vec![5u32; nb as usize];
    balls::ball_velocity(&params, &mut cpu_balls, &mut cpu_count);
    let out = run_kernel(
        &gpu,
        "ball_velocity",
        &[
            ("params", bytes(&[params])),
            ("balls", bytes(&sim.balls)),
            ("ball_count", bytes(&vec![5u32; nb as usize])),
        ],
        nb,
    )
    .unwrap();
    assert_eq!(cast::<u32>(&out["ball_count"]), cpu_count);
    let g = 981.0 * h;
    for (a, b) in cast::<BallState>(&out["balls"]).iter().zip(&cpu_balls) {
        worst[0] = worst[0].max(within(
            "ball_velocity",
            &a.vel,
            &b.vel,
            2.0 * U * (norm(&b.vel) + g),
        ));
        assert_eq!((a.center, a.omega), (b.center, b.omega));
    }
    let balls_in = cpu_balls;

    // ball_hit_count (its count buffer zeroed, as ball_velocity leaves it).
    let (count, offsets) = {
        let mut count = vec![0; nb as usize];
        let mut offsets = vec![9; n as usize + 1];
        balls::ball_hit_count(
            &params,
            &balls_in,
            &sim.inv_mass,
            &sim.pos,
            &sim.vel,
            &mut count,
            &mut offsets,
        );
        (count, offsets)
    };
    let out = run_kernel(
        &gpu,
        "ball_hit_count",
        &[
            ("params", bytes(&[params])),
            ("balls", bytes(&balls_in)),
            ("inv_mass", bytes(&sim.inv_mass)),
            ("pos", bytes(&sim.pos)),
            ("vel", bytes(&sim.vel)),
            ("ball_count", bytes(&vec![0u32; nb as usize])),
            ("ball_hit_offsets", bytes(&vec![9u32; n as usize + 1])),
        ],
        n + 1,
    )
    .unwrap();
    assert_eq!(cast::<u32>(&out["ball_count"]), count);
    assert_eq!(cast::<u32>(&out["ball_hit_offsets"]), offsets);
    assert!(count.iter().all(|&c| c >= 8), "{count:?}");

    // ball_yarn_contact, on the scanned offsets, with room for every hit.
    let mut scanned = offsets.clone();
    let mut acc = 0;
    for o in scanned.iter_mut() {
        let c = *o;
        *o = acc;
        acc += c;
    }
    let total = scanned[n as usize];
    let params = Params {
        ball_hit_capacity: total,
        ..params
    };
    let mut cpu_vel = sim.vel.clone();
    let mut cpu_hits = vec![BallHit::default(); total as usize];
    balls::ball_yarn_contact(
        &params,
        &balls_in,
        &count,
        &sim.mass,
        &sim.inv_mass,
        &sim.pos,
        &mut cpu_vel,
        &scanned,
        &mut cpu_hits,
    );
    let out = run_kernel(
        &gpu,
        "ball_yarn_contact",
        &[
            ("params", bytes(&[params])),
            ("balls", bytes(&balls_in)),
            ("ball_count", bytes(&count)),
            ("mass", bytes(&sim.mass)),
            ("inv_mass", bytes(&sim.inv_mass)),
            ("pos", bytes(&sim.pos)),
            ("vel", bytes(&sim.vel)),
            ("ball_hit_offsets", bytes(&scanned)),
            (
                "ball_hits",
                bytes(&vec![BallHit::default(); total as usize]),
            ),
        ],
        n,
    )
    .unwrap();
    let surface = balls_in
        .iter()
        .map(|b| norm(&b.vel) + norm(&b.omega) * b.center[3] as f64)
        .fold(0.0, f64::max);
    let gpu_vel: Vec<[f32; 4]> = cast(&out["vel"]);
    let mut changed = 0;
    for p in 0..n as usize {
        let touched = (scanned[p + 1] - scanned[p]) as f64;
        let bound =
            64.0 * U * (norm(&sim.pos[p]) / h + norm(&sim.vel[p]) + surface) * touched.max(1.0);
        worst[1] = worst[1].max(within(
            &format!("ball_yarn_contact velocity of point {p}"),
            &gpu_vel[p],
            &cpu_vel[p],
            if touched == 0.0 { 0.0 } else { bound },
        ));
        changed += (cpu_vel[p] != sim.vel[p]) as usize;
    }
    assert!(changed >= 8, "only {changed} velocities changed");
    let gpu_hits: Vec<BallHit> = cast(&out["ball_hits"]);
    for (k, (a, b)) in gpu_hits.iter().zip(&cpu_hits).enumerate() {
        assert_eq!((a.point, a.ball), (b.point, b.ball), "hit {k}");
        let p = b.point as usize;
        let bound = 64.0 * U * (norm(&sim.pos[p]) / h + norm(&sim.vel[p]) + surface) * 2.0;
        worst[2] = worst[2].max(within(
            "ball_yarn_contact impulse",
            &a.impulse,
            &b.impulse,
            sim.mass[p] as f64 * bound,
        ));
        let c = &balls_in[b.ball as usize].center;
        within(
            "ball_yarn_contact arm",
            &a.arm,
            &b.arm,
            2.0 * U * (norm(&sim.pos[p]) + norm(c)),
        );
    }

    // ball_impulse_sum, on the CPU's hits.
    let mut cpu_balls = balls_in.clone();
    let mut cpu_counters = Counters::default();
    let mut lanes = Vec::new();
    balls::ball_impulse_sum(
        &params,
        &scanned,
        &cpu_hits,
        &mut cpu_balls,
        &mut cpu_counters,
        &mut lanes,
    );
    let out = run_kernel(
        &gpu,
        "ball_impulse_sum",
        &[
            ("params", bytes(&[params])),
            ("ball_hit_offsets", bytes(&scanned)),
            ("ball_hits", bytes(&cpu_hits)),
            ("balls", bytes(&balls_in)),
            ("counters", bytes(&[Counters::default()])),
        ],
        nb * balls::IMPULSE_LANES as u32,
    )
    .unwrap();
    let gc: Counters = cast(&out["counters"])[0];
    assert_eq!(gc.ball_hits, cpu_counters.ball_hits);
    assert_eq!(cpu_counters.ball_hits.count, total);
    for (bi, (a, b)) in cast::<BallState>(&out["balls"])
        .iter()
        .zip(&cpu_balls)
        .enumerate()
    {
        let (mut sj, mut st) = (0.0, 0.0);
        for hit in cpu_hits.iter().filter(|x| x.ball as usize == bi) {
            sj += norm(&hit.impulse);
            st += norm(&hit.arm) * norm(&hit.impulse);
        }
        let before = &balls_in[bi];
        assert!(b.vel != before.vel, "ball {bi} received nothing");
        worst[3] = worst[3].max(within(
            "ball_impulse_sum velocity",
            &a.vel,
            &b.vel,
            16.0 * U * (sj * b.vel[3] as f64 + norm(&b.vel)),
        ));
        worst[3] = worst[3].max(within(
            "ball_impulse_sum spin",
            &a.omega,
            &b.omega,
            16.0 * U * (st * b.omega[3] as f64 + norm(&b.omega)),
        ));
    }

    // ball_contact: the balls pressed together (the right one moved into the left one's place).
    let mut pressed = cpu_balls.clone();
    pressed[1].center[0] = pressed[0].center[0] + 2.3;
    pressed[1].center[1] = pressed[0].center[1] + 0.2;
    let pairs_len = 1;
    let mut cpu_after = pressed.clone();
    let mut cpu_pairs = vec![0u32; pairs_len];
    let mut cpu_counters = Counters {
        first_bad_ball: u32::MAX,
        ..Counters::default()
    };
    balls::ball_contact(
        &params,
        &sim.obstacles,
        &mut cpu_after,
        &mut cpu_pairs,
        &mut cpu_counters,
    );
    let ball_contact_gpu = |balls: &[BallState]| {
        run_kernel(
            &gpu,
            "ball_contact",
            &[
                ("params", bytes(&[params])),
                ("obstacles", bytes(&sim.obstacles)),
                ("balls", bytes(balls)),
                ("ball_pairs", bytes(&vec![0u32; pairs_len])),
                ("counters", bytes(&[cpu_counters_fresh()])),
            ],
            1,
        )
        .unwrap()
    };
    let out = ball_contact_gpu(&pressed);
    assert_eq!(cast::<u32>(&out["ball_pairs"]), cpu_pairs);
    assert_eq!(cpu_pairs, [1 << 16], "the pressed balls are not a pair");
    let gc: Counters = cast(&out["counters"])[0];
    assert_eq!((gc.errors, gc.first_bad_ball), (0, u32::MAX));
    for (bi, (a, b)) in cast::<BallState>(&out["balls"])
        .iter()
        .zip(&cpu_after)
        .enumerate()
    {
        assert!(b.vel != pressed[bi].vel, "ball {bi}: no impulse");
        let big_r = b.center[3] as f64;
        let scale = norm(&b.center) / h + norm(&b.vel) + norm(&b.omega) * big_r;
        let bound = 8.0 * 64.0 * U * scale;
        worst[4] = worst[4].max(within("ball_contact velocity", &a.vel, &b.vel, bound));
        worst[4] = worst[4].max(within(
            "ball_contact spin",
            &a.omega,
            &b.omega,
            bound / big_r,
        ));
        assert_eq!(a.center, b.center);
    }
    // A ball with a non-finite velocity is reported, the lowest one.
    let mut bad = pressed.clone();
    bad[1].vel[2] = f32::NAN;
    let out = ball_contact_gpu(&bad);
    let gc: Counters = cast(&out["counters"])[0];
    assert_eq!(
        (gc.errors, gc.first_bad_ball),
        (yarnsim::layout::ERROR_NAN_BALL, 1)
    );

    // ball_position.
    let mut cpu_moved = cpu_after.clone();
    balls::ball_position(&params, &mut cpu_moved);
    let out = run_kernel(
        &gpu,
        "ball_position",
        &[("params", bytes(&[params])), ("balls", bytes(&cpu_after))],
        nb,
    )
    .unwrap();
    for (a, b) in cast::<BallState>(&out["balls"]).iter().zip(&cpu_moved) {
        worst[5] = worst[5].max(within(
            "ball_position",
            &a.center,
            &b.center,
            2.0 * U * (norm(&b.center) + h * norm(&b.vel)),
        ));
    }
    eprintln!(
        "worst difference over its bound (after {steps} steps): velocity {:.3}, yarn velocity {:.3}, impulse {:.3}, impulse sum {:.3}, ball contact {:.3}, position {:.3}",
        worst[0], worst[1], worst[2], worst[3], worst[4], worst[5]
    );
}

fn cpu_counters_fresh() -> Counters {
    Counters {
        first_bad_ball: u32::MAX,
        ..Counters::default()
    }
}

/// Runs `steps` steps of the thrown balls with `model` contact on the GPU in batches of `batch`, `cap` records of room
/// for the yarn–ball contacts when given; returns the simulation downloaded, and the capacity it
/// ended with.
fn gpu_run(gpu: &Gpu, model: &str, steps: usize, batch: usize, cap: Option<u32>) -> (GpuSim, u32) {
    let (scene, sim) = thrown_balls(model);
    let mut g = GpuSim::new(gpu, sim, &scene.contact).unwrap_or_else(|e| panic!("{e}"));
    if let Some(c) = cap {
        g.set_ball_hit_capacity(c).unwrap();
    }
    let mut left = steps;
    while left > 0 {
        let k = left.min(batch);
        g.steps(k).unwrap_or_else(|e| panic!("{e}"));
        left -= k;
    }
    g.download().unwrap();
    let c = g.ball_hit_capacity();
    (g, c)
}

/// The thrown balls for 300 steps with exact contact, on both paths: the balls meet each other
/// and the swatch, and the GPU's balls stay within 1e-3 r of the CPU's, as does the yarn, the bound
/// of the other whole-run comparisons (tests/gpu_step.rs), but for a few points. Those are the
/// contacts the two paths decide on opposite sides of the ball's surface: their inputs differ in
/// the last bits (the exact contact force is not bitwise the CPU's), and a point that touches on
/// one path loses its approach toward the ball in that step while on the other it does not, so it
/// is moved by up to h × its approach speed (at most the 100 cm/s the balls are thrown at: 0.05 r)
/// before the next step's contacts pull the two back together. Measured on lavapipe: a few such
/// jumps of 5e-4–1.3e-3 r in 300 steps, each on one point. So: at most 1% of the points beyond
/// 1e-3 r, none beyond 0.05 r.
#[test]
fn gpu_step_matches_cpu_with_balls() {
    let Some(gpu) = gpu_or_skip("gpu_step_matches_cpu_with_balls") else {
        return;
    };
    let (_, mut cpu) = thrown_balls("exact");
    let start = cpu.balls.clone();
    let (g, _) = gpu_run(&gpu, "exact", 300, 60, None);
    let mut hits = 0;
    for _ in 0..300 {
        cpu.step().unwrap();
        let (count, _) = hit_counts(&cpu, &cpu.step_params());
        hits += count.iter().sum::<u32>();
    }
    assert!(
        hits > 100,
        "the balls barely touched the swatch ({hits} hits)"
    );
    let r = cpu.params.radius;
    let centers = |b: &[BallState]| b.iter().map(|x| x.center).collect::<Vec<_>>();
    let (worst, at) = fixture::max_rel_diff(&centers(&g.sim.balls), &centers(&cpu.balls), r);
    eprintln!("gpu_step_matches_cpu_with_balls: balls worst {worst:.3e} r (ball {at})");
    assert!(
        worst < 1e-3,
        "balls: GPU and CPU differ by {worst:e} r at ball {at}"
    );
    let (worst, at) = fixture::max_rel_diff(&g.sim.pos, &cpu.pos, r);
    let apart = g
        .sim
        .pos
        .iter()
        .zip(&cpu.pos)
        .filter(|(a, b)| fixture::max_rel_diff(&[**a], &[**b], r).0 >= 1e-3)
        .count();
    eprintln!(
        "gpu_step_matches_cpu_with_balls: yarn worst {worst:.3e} r (point {at}); {apart} of {} points beyond 1e-3 r",
        cpu.pos.len()
    );
    assert!(
        worst < 0.05,
        "yarn: GPU and CPU differ by {worst:e} r at point {at}"
    );
    assert!(
        apart * 100 <= cpu.pos.len(),
        "{apart} of {} points differ by more than 1e-3 r",
        cpu.pos.len()
    );
    // The swatch slowed both balls below free fall's speed by at least 5 cm/s, and the left one
    // pushed the right one sideways.
    let fall = 981.0 * 300.0 * cpu.params.h;
    for (b, s) in cpu.balls.iter().zip(&start) {
        assert!(
            b.vel[1] > s.vel[1] - fall + 5.0,
            "{:?} -> {:?}",
            s.vel,
            b.vel
        );
    }
    assert!(cpu.balls[1].vel[0] > 1.0, "{:?}", cpu.balls[1].vel);
}

/// Too little room for the yarn–ball contacts: the batch reruns with more, and the result is
/// bitwise that of a run with room from the start, which is bitwise that of another such run
/// (batches of 20 steps, so that each rerun is short; no yarn–yarn contact, which is not the
/// subject).
#[test]
fn ball_hits_grow_and_rerun_identically() {
    let Some(gpu) = gpu_or_skip("ball_hits_grow_and_rerun_identically") else {
        return;
    };
    let (a, cap_a) = gpu_run(&gpu, "none", 120, 20, None);
    let (b, _) = gpu_run(&gpu, "none", 120, 20, None);
    let (c, cap_c) = gpu_run(&gpu, "none", 120, 20, Some(2));
    assert!(c.reruns() > 0 || c.capacity_grows() > 0);
    assert!(cap_c > 2 && cap_c <= cap_a.max(1024), "{cap_c} vs {cap_a}");
    for (x, name) in [(&b, "a second run"), (&c, "the run that grew")] {
        assert!(x.sim.pos == a.sim.pos, "{name}: positions differ");
        assert!(x.sim.vel == a.sim.vel, "{name}: velocities differ");
        assert!(x.sim.balls == a.sim.balls, "{name}: balls differ");
    }
    assert!(a.sim.balls != thrown_balls("none").1.balls);
}

/// More balls than `ball_contact`'s one thread may sweep within lavapipe's loop limit: the GPU
/// step refuses them, naming the counts and the way out.
#[test]
fn gpu_refuses_more_balls_than_ball_contact_can_sweep() {
    let Some(gpu) = gpu_or_skip("gpu_refuses_more_balls_than_ball_contact_can_sweep") else {
        return;
    };
    let (scene, mut sim) = thrown_balls("none");
    let template = sim.balls[0];
    sim.balls = (0..120)
        .map(|i| BallState {
            center: [
                (i % 12) as f32 * 3.0 - 18.0,
                40.0 + (i / 12) as f32 * 3.0,
                0.0,
                1.2,
            ],
            ..template
        })
        .collect();
    assert!(balls::ball_contact_iterations(120, 1) > balls::BALL_CONTACT_LOOP_LIMIT);
    let err = match GpuSim::new(&gpu, sim, &scene.contact) {
        Err(e) => e,
        Ok(_) => panic!("120 balls were accepted"),
    };
    assert!(matches!(err, GpuStepError::TooManyBalls { balls: 120, .. }));
    let msg = err.to_string();
    assert!(
        msg.contains("120 free balls and 1 obstacle need") && msg.contains("--backend cpu"),
        "{msg}"
    );
}
