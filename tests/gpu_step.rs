//! The whole GPU time step against the CPU path, run for run: the same scene stepped on both
//! backends stays together, two GPU runs are bitwise identical, and errors the kernels flag reach
//! the host with their step.
//!
//! Tolerance of the whole-run comparison: positions within 1e-3 r after 300 steps. Each kernel
//! agrees with its twin to a few f32 roundings per step (their parity tests); 300 steps of a
//! hanging, colliding swatch amplify such differences by far less than the 1e-3 r / 1e-7 r ≈ 10⁴
//! that separates this bound from one rounding of a coordinate of order 1 cm.

#[path = "support/fixture.rs"]
mod fixture;

use yarnsim::gpu::testing::gpu_or_skip;
use yarnsim::gpu_step::GpuSim;
use yarnsim::scene::ContactModel;

fn run_gpu(gpu: &yarnsim::gpu::Gpu, sets: &[&str], steps: usize) -> GpuSim {
    let sim = fixture::scene_sim("tiny", sets, 0);
    let model = if sets.contains(&"contact.model=exact") {
        ContactModel::Exact
    } else {
        ContactModel::None
    };
    let mut g = GpuSim::new(gpu, sim, model).unwrap_or_else(|e| panic!("{e}"));
    for _ in 0..steps {
        g.step().unwrap_or_else(|e| panic!("{e}"));
    }
    g.download().unwrap();
    g
}

fn whole_run_parity(test: &str, sets: &[&str]) {
    let Some(gpu) = gpu_or_skip(test) else {
        return;
    };
    const STEPS: usize = 300;
    let g = run_gpu(&gpu, sets, STEPS);
    let cpu = fixture::scene_sim("tiny", sets, STEPS);
    assert_eq!(g.sim.steps, STEPS as u64);
    let r = cpu.params.radius;
    let (worst, at) = fixture::max_rel_diff(&g.sim.pos, &cpu.pos, r);
    eprintln!("{test}: worst position difference after {STEPS} steps: {worst:.3e} r (point {at})");
    assert!(
        worst < 1e-3,
        "GPU and CPU positions differ by {worst:e} r at point {at} after {STEPS} steps"
    );
    // The run did something: points moved by far more than the bound.
    let start = fixture::scene_sim("tiny", sets, 0);
    let (moved, _) = fixture::max_rel_diff(&start.pos, &cpu.pos, r);
    assert!(moved > 0.05, "the swatch barely moved ({moved} r)");
}

#[test]
fn gpu_step_matches_cpu_without_contact() {
    whole_run_parity(
        "gpu_step_matches_cpu_without_contact",
        &["contact.model=none"],
    );
}

#[test]
fn two_gpu_runs_are_bitwise_identical() {
    let Some(gpu) = gpu_or_skip("two_gpu_runs_are_bitwise_identical") else {
        return;
    };
    let sets = ["contact.model=none"];
    let a = run_gpu(&gpu, &sets, 100);
    let b = run_gpu(&gpu, &sets, 100);
    let bits = |p: &[[f32; 4]]| p.iter().flatten().map(|x| x.to_bits()).collect::<Vec<_>>();
    assert!(bits(&a.sim.pos) == bits(&b.sim.pos), "positions differ");
    assert!(bits(&a.sim.vel) == bits(&b.sim.vel), "velocities differ");
}

#[test]
fn gpu_step_reports_a_blow_up_with_its_step() {
    let Some(gpu) = gpu_or_skip("gpu_step_reports_a_blow_up_with_its_step") else {
        return;
    };
    // Gravity of 1e30 cm/s² makes forces overflow to infinity at once.
    let sim = fixture::scene_sim("tiny", &["contact.model=none", "simulation.gravity=[0, -1e38, 0]"], 0);
    let mut g = GpuSim::new(&gpu, sim, ContactModel::None).unwrap();
    let mut err = None;
    for _ in 0..20 {
        if let Err(e) = g.step() {
            err = Some(e.to_string());
            break;
        }
    }
    let msg = err.expect("the blow-up was not reported");
    assert!(msg.starts_with("step "), "{msg}");
    assert!(msg.contains("not finite") || msg.contains("did not converge"), "{msg}");
}

/// A step that needs more length-projection iterations than the GPU step encodes is rerun from
/// the batch's snapshot with the whole cap encoded, and the result is bitwise the one of encoding
/// the cap from the start.
#[test]
fn length_budget_rerun_changes_nothing() {
    let Some(gpu) = gpu_or_skip("length_budget_rerun_changes_nothing") else {
        return;
    };
    let sets = ["contact.model=none"];
    let run = |budget: u32| {
        let mut sim = fixture::scene_sim("tiny", &sets, 0);
        // Violent, rough initial velocities, so the first steps' projections take several
        // iterations.
        for (i, v) in sim.vel.iter_mut().enumerate() {
            let s = (i as f32 * 12.9898).sin() * 43_758.547;
            let r = s - s.floor() - 0.5;
            *v = [400.0 * r, -300.0 * r * r, 200.0 * (0.3 - r), 0.0];
        }
        let mut g = GpuSim::new(&gpu, sim, ContactModel::None).unwrap();
        g.set_length_budget(budget).unwrap();
        for _ in 0..3 {
            g.steps(32).unwrap();
        }
        g.download().unwrap();
        g
    };
    let tight = run(1);
    let full = run(1000);
    assert!(tight.reruns() > 0, "no step needed a second iteration");
    eprintln!("batches rerun with a budget of 1 iteration: {}", tight.reruns());
    assert_eq!(full.reruns(), 0);
    assert_eq!(tight.sim.steps, full.sim.steps);
    let bits = |p: &[[f32; 4]]| p.iter().flatten().map(|x| x.to_bits()).collect::<Vec<_>>();
    assert!(bits(&tight.sim.pos) == bits(&full.sim.pos), "positions differ");
    assert!(bits(&tight.sim.vel) == bits(&full.sim.vel), "velocities differ");
}
