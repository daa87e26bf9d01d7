//! Ties on the GPU: the kernel `tie_projection` against its CPU twin `ties::tie_projection`, colour
//! by colour, and the whole GPU step of a hanging sack (its bottom seam is ties) against the CPU
//! path.
//!
//! Tolerance of the kernel comparison, per velocity component: `16 u (|q|/h + |v|)` summed over the
//! ties of the point (at most one per colour). A tie's correction is its predicted stretch over
//! `(w_a + w_b) h`; the stretch is a difference of predicted positions `q + h v` (one rounding at
//! the scale `|q|`, whether or not the adapter fuses the multiply-add), then a norm, a subtraction
//! and two products, a chain of fewer than 8 roundings at the scale `|q|/h` of the correction and
//! `|v|` of the velocity it is added to, on each of the two evaluations.

#[path = "support/fixture.rs"]
mod fixture;

use fixture::bytes;
use yarnsim::gpu::testing::gpu_or_skip;
use yarnsim::gpu_step::GpuSim;
use yarnsim::layout::ColorRange;
use yarnsim::pipelines::run_kernel;
use yarnsim::scene::{self, Scene};
use yarnsim::sim::Sim;

const U: f64 = f32::EPSILON as f64 / 2.0;

/// A small sack (12 wales × 6 courses, its bottom course tied shut) hanging from its top course,
/// with `model` contact.
fn hanging_sack(model: &str) -> (Scene, Sim) {
    let text = format!(
        "[simulation]\nfps = 16200\n[contact]\nmodel = \"{model}\"\n[relax]\ntime = 0\n\
         [[cloth]]\nsource.generator = {{ pattern = \"sack\", wales = 12, courses = 6 }}\n\
         [[pin]]\nregion = {{ min = [-50, 1.6, -50], max = [50, 50, 50] }}\n"
    );
    let scene = Scene::from_toml_str(&text, "hanging_sack").unwrap();
    let build = scene::build_curves(&scene, std::path::Path::new(".")).unwrap();
    let pins = scene::pinned_points(&scene, &build).unwrap();
    assert!(!pins.is_empty() && !build.ties.is_empty());
    let sim = Sim::from_build(&scene, &build, &pins).unwrap();
    (scene, sim)
}

#[test]
fn tie_projection_matches_twin_colour_by_colour() {
    let Some(gpu) = gpu_or_skip("tie_projection_matches_twin_colour_by_colour") else {
        return;
    };
    let (_, mut sim) = hanging_sack("none");
    // The seam's ties are disjoint (one colour): add ties that share their points, each front point
    // also tied to the next one's partner, so that there are several colours.
    let mut more = sim.ties().0.to_vec();
    let n = more.len();
    for k in 0..n - 1 {
        more.push([more[k][0], more[k + 1][1]]);
    }
    sim.set_ties(&more).unwrap();
    // Velocities that stretch about half the ties within the step (tie lengths are about 10 r).
    let mut seed = 7u64;
    for v in sim.vel.iter_mut() {
        for c in v.iter_mut().take(3) {
            seed = seed
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            *c = ((seed >> 33) as f32 / (1u64 << 31) as f32 - 0.5) * 4000.0;
        }
    }
    let params = sim.step_params();
    let h = params.h;
    let (ties, lengths) = sim.ties();
    let (ties, lengths) = (ties.to_vec(), lengths.to_vec());
    let starts = sim.tie_color_start().to_vec();
    assert!(starts.len() >= 3, "one colour only: {starts:?}");
    let mut gpu_vel = sim.vel.clone();
    for w in starts.windows(2) {
        let range = ColorRange {
            first: w[0],
            count: w[1] - w[0],
            _pad0: 0,
            _pad1: 0,
        };
        let out = run_kernel(
            &gpu,
            "tie_projection",
            &[
                ("params", bytes(&[params])),
                ("color_range", bytes(&[range])),
                ("ties", bytes(&ties)),
                ("tie_length", bytes(&lengths)),
                ("inv_mass", bytes(&sim.inv_mass)),
                ("pos", bytes(&sim.pos)),
                ("vel", bytes(&gpu_vel)),
            ],
            range.count,
        )
        .unwrap();
        gpu_vel = bytemuck::cast_slice(&out["vel"]).to_vec();
    }
    let mut cpu_vel = sim.vel.clone();
    yarnsim::ties::tie_projection(h, &ties, &lengths, &sim.inv_mass, &sim.pos, &mut cpu_vel);
    let changed = cpu_vel.iter().zip(&sim.vel).filter(|(a, b)| a != b).count();
    assert!(
        changed >= ties.len() / 2,
        "only {changed} velocities changed"
    );
    // Ties per point.
    let mut degree = vec![0u32; sim.pos.len()];
    for t in &ties {
        degree[t[0] as usize] += 1;
        degree[t[1] as usize] += 1;
    }
    let mut worst = 0.0f64;
    for (i, (g, c)) in gpu_vel.iter().zip(&cpu_vel).enumerate() {
        let q = (0..3)
            .map(|k| (sim.pos[i][k] as f64).powi(2))
            .sum::<f64>()
            .sqrt();
        let v = (0..3).map(|k| (c[k] as f64).powi(2)).sum::<f64>().sqrt();
        let bound = 16.0 * U * (q / h as f64 + v) * degree[i].max(1) as f64;
        for k in 0..4 {
            let d = (g[k] as f64 - c[k] as f64).abs();
            worst = worst.max(d / bound);
            assert!(
                d <= bound,
                "point {i} component {k}: GPU {} CPU {}",
                g[k],
                c[k]
            );
        }
    }
    // Measured on lavapipe: bitwise equal (0).
    eprintln!("tie_projection: worst difference {worst:.3} of its bound");
}

/// The sack hangs from its top course for 300 steps with exact contact, on both paths: its bottom
/// seam carries the weight below it (ties at their length), and the positions agree within 1e-3 r,
/// the bound of the other whole-run comparisons (tests/gpu_step.rs).
#[test]
fn gpu_step_matches_cpu_with_ties() {
    let Some(gpu) = gpu_or_skip("gpu_step_matches_cpu_with_ties") else {
        return;
    };
    let (scene, sim) = hanging_sack("exact");
    let (_, mut cpu) = hanging_sack("exact");
    let start = sim.pos.clone();
    let mut g = GpuSim::new(&gpu, sim, &scene.contact).unwrap_or_else(|e| panic!("{e}"));
    for _ in 0..5 {
        g.steps(60).unwrap_or_else(|e| panic!("{e}"));
    }
    g.download().unwrap();
    for _ in 0..300 {
        cpu.step().unwrap();
    }
    let r = cpu.params.radius;
    let (worst, at) = fixture::max_rel_diff(&g.sim.pos, &cpu.pos, r);
    eprintln!("gpu_step_matches_cpu_with_ties: worst {worst:.3e} r (point {at})");
    assert!(
        worst < 1e-3,
        "GPU and CPU differ by {worst:e} r at point {at}"
    );
    let (moved, _) = fixture::max_rel_diff(&start, &cpu.pos, r);
    assert!(moved > 0.05, "the sack barely moved ({moved} r)");
    // The seam is under load: ties at their length (the length projection after them may stretch
    // one by a step's move, far below 1%).
    let (ties, lengths) = cpu.ties();
    let taut = ties
        .iter()
        .zip(lengths)
        .filter(|(t, &l)| {
            let (a, b) = (cpu.pos[t[0] as usize], cpu.pos[t[1] as usize]);
            let d = ((a[0] - b[0]).powi(2) + (a[1] - b[1]).powi(2) + (a[2] - b[2]).powi(2)).sqrt();
            d > 0.999 * l
        })
        .count();
    assert!(
        taut * 2 >= ties.len(),
        "only {taut} of {} ties are taut",
        ties.len()
    );
}
