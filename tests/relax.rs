//! The relaxation before t = 0 (`[relax]`, `yarnsim::relax`; issue 11, item 3): a generated swatch and
//! a loaded BCC model that overlaps at the radius wanted start at rest once relaxed, and stay below
//! 1 cm/s with gravity off; without the relaxation both move faster than that (so the check can fail).

#[path = "support/fixture.rs"]
mod fixture;

use fixture::{sim_of, temp_dir};
use yarnsim::relax::{relax, RelaxReport};
use yarnsim::scene::{build_curves, Scene};
use yarnsim::sim::Sim;

/// The bound the issue sets for a relaxed garment with gravity off (cm/s).
const AT_REST: f64 = 1.0;

/// The fastest speed any control point reaches over `steps` steps (cm/s).
fn fastest_over(sim: &mut Sim, steps: usize) -> f64 {
    let mut v = 0.0f64;
    for _ in 0..steps {
        sim.step().unwrap();
        v = v.max(sim.kinetic_energy_and_max_speed().1);
    }
    v
}

fn relaxed(sim: &mut Sim, scene: &Scene) -> RelaxReport {
    let mut calls = 0u64;
    let report = relax(sim, scene, &mut |p| {
        calls += 1;
        assert_eq!(p.step, calls);
        assert!(p.step <= p.max_steps);
    })
    .unwrap();
    assert_eq!(calls, report.steps);
    report
}

const SWATCH: &str = r#"
[simulation]
gravity = [0, 0, 0]
[[cloth]]
source.generator = { pattern = "stockinette", wales = 4, courses = 4 }
"#;

/// A generated swatch starts with yarns closer than 2r: left alone with gravity off it moves; relaxed,
/// it is at rest at t = 0 and stays so for a frame (540 steps).
#[test]
fn a_generated_swatch_relaxed_stays_at_rest() {
    let dir = temp_dir("relax", "swatch");
    let (scene, mut raw) = sim_of(&dir, SWATCH);
    let v_raw = fastest_over(&mut raw, 200);
    assert!(
        v_raw > AT_REST,
        "unrelaxed swatch reached only {v_raw} cm/s: the test would not show anything"
    );

    let (scene2, mut sim) = sim_of(&dir, SWATCH);
    assert_eq!(scene, scene2);
    let report = relaxed(&mut sim, &scene);
    assert!(report.settled, "{report:?}");
    assert!(report.max_speed < scene.relax.speed as f64);
    assert_eq!((sim.time, sim.steps), (0.0, 0));
    assert!(sim.vel.iter().all(|v| *v == [0.0; 4]));
    assert_eq!(sim.params.radius, scene.yarn.radius);
    let v = fastest_over(&mut sim, 540);
    assert!(v < AT_REST, "relaxed swatch moved at {v} cm/s");
}

/// A model exported at r = 0.08 cm and loaded at the default r = 0.125 cm overlaps almost everywhere:
/// unrelaxed, the penalty force blows it apart; relaxed from the automatic start radius (below the
/// closest approach), it comes to rest at the full radius and stays there.
#[test]
fn an_overlapping_bcc_model_relaxed_stays_at_rest() {
    let dir = temp_dir("relax", "bcc");
    let (_, thin) = sim_of(
        &dir,
        r#"
[yarn]
radius = 0.08
[[cloth]]
source.generator = { pattern = "stockinette", wales = 4, courses = 4 }
"#,
    );
    yarnsim::bcc::write(&dir.join("thin.bcc"), &thin.curves()).unwrap();
    let text = r#"
[simulation]
gravity = [0, 0, 0]
[[cloth]]
source.bcc = { path = "thin.bcc" }
"#;
    let (scene, mut raw) = sim_of(&dir, text);
    let fit = yarnsim::import::fit_radius(&raw.curves(), scene.contact.quadrature).unwrap();
    assert!(
        fit.fraction_closer_than_2r(scene.yarn.radius as f64) > 0.5,
        "the model should overlap at r = {}",
        scene.yarn.radius
    );
    let v_raw = fastest_over(&mut raw, 200);
    assert!(
        v_raw > AT_REST,
        "unrelaxed model reached only {v_raw} cm/s: the test would not show anything"
    );

    let (_, mut sim) = sim_of(&dir, text);
    let report = relaxed(&mut sim, &scene);
    assert!(report.settled, "{report:?}");
    assert!(
        report.start_radius < 0.5 * fit.distances[0] as f32 + 1e-6
            && report.start_radius >= yarnsim::relax::MIN_START * scene.yarn.radius,
        "start radius {} (closest approach {})",
        report.start_radius,
        fit.distances[0]
    );
    let v = fastest_over(&mut sim, 540);
    assert!(v < AT_REST, "relaxed model moved at {v} cm/s");
}

/// The relaxation changes nothing but the state: gravity, drag, radius and the obstacles' motion are
/// the scene's again afterwards, and `relax.time = 0` leaves the simulation untouched.
#[test]
fn relaxation_restores_the_scene_and_can_be_turned_off() {
    let dir = temp_dir("relax", "restore");
    let text = r#"
[damping]
air = 3.0
[[cloth]]
source.generator = { pattern = "stockinette", wales = 2, courses = 2 }
[[obstacle]]
type = "sphere"
center = [0, -3, 0]
radius = 1.0
keyframes = [{ t = 0.0, offset = [0, 0, 0] }, { t = 1.0, offset = [0, 10, 0] }]
"#;
    let (scene, mut sim) = sim_of(&dir, text);
    let before = (sim.params.gravity, sim.air_factor(), sim.params.radius);
    let obstacles0 = sim.obstacles.clone();
    let report = relaxed(&mut sim, &scene);
    assert!(report.steps > 0);
    // The sphere did not move during the relaxation.
    assert_eq!(sim.obstacles[0].a, obstacles0[0].a);
    assert_eq!(
        (sim.params.gravity, sim.air_factor(), sim.params.radius),
        before
    );
    // Gravity is back: the cloth accelerates downwards.
    let y0: f64 = sim.pos.iter().map(|p| p[1] as f64).sum();
    for _ in 0..50 {
        sim.step().unwrap();
    }
    let y1: f64 = sim.pos.iter().map(|p| p[1] as f64).sum();
    assert!(y1 < y0);
    // And the sphere follows its keyframes again.
    assert!(sim.obstacles[0].vel[1] > 9.0, "{:?}", sim.obstacles[0].vel);

    let mut off = scene.clone();
    off.relax.time = 0.0;
    let build = build_curves(&off, &dir).unwrap();
    let mut sim = Sim::from_build(&off, &build, &[]).unwrap();
    let pos = sim.pos.clone();
    let r = relax(&mut sim, &off, &mut |_| panic!("no steps")).unwrap();
    assert_eq!(r.steps, 0);
    assert_eq!(sim.pos, pos);
}

/// Bad `[relax]` values are refused naming the key.
#[test]
fn bad_relax_values_name_the_key() {
    let dir = temp_dir("relax", "bad");
    for (line, key) in [
        ("start_radius = 1.5", "relax.start_radius"),
        ("start_radius = \"big\"", "relax.start_radius"),
        ("time = -1", "relax.time"),
        ("speed = 0", "relax.speed"),
        ("grow_rate = 0", "relax.grow_rate"),
    ] {
        let path = dir.join("bad.toml");
        std::fs::write(&path, format!("[relax]\n{line}\n")).unwrap();
        let err = Scene::load(&path).unwrap_err().to_string();
        assert!(err.contains(key), "{line}: {err}");
        assert!(err.contains("bad.toml:2:"), "{line}: {err}");
    }
}

/// The largest distance between two states' control points (cm).
fn max_distance(a: &Sim, b: &Sim) -> f64 {
    a.pos
        .iter()
        .zip(&b.pos)
        .map(|(p, q)| {
            (0..3)
                .map(|i| (p[i] as f64 - q[i] as f64).powi(2))
                .sum::<f64>()
                .sqrt()
        })
        .fold(0.0, f64::max)
}

/// The relaxation on the GPU step (`relax_gpu`, what `run --backend gpu` uses): the generated swatch
/// comes to rest there too, within a few steps of where the CPU path's relaxation stops it, the scene is restored, and the state stays at rest on the CPU path for a
/// frame; it ends near the CPU path's relaxed state (both settle the same overlaps).
#[test]
fn the_gpu_relaxation_comes_to_rest_like_the_cpu_one() {
    let Some(gpu) =
        yarnsim::gpu::testing::gpu_or_skip("the_gpu_relaxation_comes_to_rest_like_the_cpu_one")
    else {
        return;
    };
    let dir = temp_dir("relax", "gpu");
    let (scene, mut cpu) = sim_of(&dir, SWATCH);
    let on_cpu = relaxed(&mut cpu, &scene);
    let (_, sim) = sim_of(&dir, SWATCH);
    let rod0 = (sim.rod.frames.clone(), sim.rod.rest.clone());
    let mut calls = 0u64;
    let (mut sim, report) = yarnsim::relax::relax_gpu(sim, &scene, &gpu, &mut |p| {
        calls += 1;
        assert_eq!(p.step, calls);
        assert!(p.step <= p.max_steps);
    })
    .unwrap();
    drop(gpu);
    assert_eq!(calls, report.steps);
    assert!(report.settled, "{report:?}");
    assert!(report.max_speed < scene.relax.speed as f64);
    assert_eq!(report.start_radius, on_cpu.start_radius);
    // It stops at the end of the first 8-step batch that ends at rest; the paths' roundings may
    // move the step at which the fastest point falls below relax.speed by a few steps too.
    let check = yarnsim::relax::GPU_CHECK_STEPS;
    assert!(
        report.steps.abs_diff(on_cpu.steps) <= 2 * check,
        "GPU {} steps, CPU {}",
        report.steps,
        on_cpu.steps
    );
    assert_eq!((sim.time, sim.steps), (0.0, 0));
    assert!(sim.vel.iter().all(|v| *v == [0.0; 4]));
    assert_eq!(sim.params.radius, scene.yarn.radius);
    assert_eq!(sim.params.gravity, cpu.params.gravity);
    assert_eq!(sim.air_factor(), cpu.air_factor());
    // The rods' frames came back from the GPU (the twist moved them during the relaxation).
    assert_ne!(
        sim.rod.frames, rod0.0,
        "the edge frames were not brought back"
    );
    let d = max_distance(&sim, &cpu);
    eprintln!(
        "CPU relaxation: {} steps; GPU: {} steps; largest distance between the relaxed states {:.3e} cm ({:.1e} r)",
        on_cpu.steps,
        report.steps,
        d,
        d / scene.yarn.radius as f64
    );
    // Measured on lavapipe: 2.0e-5 cm (1.6e-4 r) after 529 CPU and 534 GPU steps; both paths damp
    // the same overlaps away, and what their roundings make of it stays far below 0.01 r.
    assert!(
        d < 0.01 * scene.yarn.radius as f64,
        "the GPU-relaxed swatch is {d} cm from the CPU-relaxed one"
    );
    let v = fastest_over(&mut sim, 540);
    assert!(v < AT_REST, "GPU-relaxed swatch moved at {v} cm/s");
}

/// A hanging swatch and a sphere whose keyframes carry it 1.5 cm into the cloth over the first
/// 0.1 s, and a capsule turning into it: the relaxation holds both where they are at t = 0.
const MOVING_SOLIDS: &str = r#"
[[cloth]]
source.generator = { pattern = "stockinette", wales = 4, courses = 4 }
translate = [0, 3, 0]
[[pin]]
region = { min = [-10, 3.9, -1], max = [10, 10, 1] }
[[obstacle]]
type = "sphere"
center = [-0.8, 3.3, -1.6]
radius = 1.0
friction = 0.3
keyframes = [{ t = 0.0, offset = [0, 0, 0] }, { t = 0.1, offset = [0, 0, 1.5] }]
[[obstacle]]
type = "capsule"
a = [-1.5, 1.9, -1.0]
b = [1.5, 1.9, -1.0]
radius = 0.4
keyframes = [{ t = 0.0, offset = [0, 0, 0], offset_b = [0, 0, 0] }, { t = 0.1, offset = [0, 0, 0], offset_b = [0, 0, 1.6] }]
"#;

/// The GPU relaxation holds keyframed solids (and figures: the same placement) where they are at
/// t = 0, as the CPU one does: it held them at rest at the batch's advancing time, so they played
/// their keyframes through during the relaxation and dragged the cloth (18 r by frame 0 here, 75 r
/// for a walking figure), where the CPU relaxation set the time to 0 before each step.
#[test]
fn the_gpu_relaxation_holds_moving_solids_at_their_start() {
    let name = "the_gpu_relaxation_holds_moving_solids_at_their_start";
    let Some(gpu) = yarnsim::gpu::testing::gpu_or_skip(name) else {
        return;
    };
    let dir = temp_dir("relax", "moving");
    let (scene, mut cpu) = sim_of(&dir, MOVING_SOLIDS);
    let on_cpu = relaxed(&mut cpu, &scene);
    let (_, sim) = sim_of(&dir, MOVING_SOLIDS);
    let (gsim, report) = yarnsim::relax::relax_gpu(sim, &scene, &gpu, &mut |_| {}).unwrap();
    drop(gpu);
    // Long enough for the keyframes to have moved the solids, had they followed them.
    assert!(
        report.steps as f64 * scene.simulation.dt > 0.02,
        "{report:?}"
    );
    assert_eq!(gsim.obstacles, cpu.obstacles, "the solids' t = 0 places");
    let d = max_distance(&gsim, &cpu);
    eprintln!(
        "CPU relaxation {} steps, GPU {}: {d:.3e} cm apart",
        on_cpu.steps, report.steps
    );
    assert!(
        d < 0.01 * scene.yarn.radius as f64,
        "the GPU-relaxed swatch is {d} cm from the CPU-relaxed one"
    );
}

/// A garter swatch: denser in contacts than the stockinette whose first steps sized ACL's first
/// capacities ([`yarnsim::acl::gpu::AclCaps::for_segments`]), so a step started afresh reruns.
const GARTER: &str = r#"
[simulation]
gravity = [0, 0, 0]
[[cloth]]
source.generator = { pattern = "garter", wales = 8, courses = 8 }
"#;

/// The frames' GPU step starts from what the GPU relaxation's last stage learned
/// (`RelaxReport::gpu`, `GpuSim::start_from`, what `run --backend gpu` does): its first steps, at
/// the radius that stage ended at, grow none of the contact buffers, where a step started afresh
/// grows them (and reruns to), and end bitwise where the step started afresh ends (a capacity or
/// a budget changes no result).
#[test]
fn the_frames_start_from_what_the_gpu_relaxation_learned() {
    use yarnsim::checkpoint::{StateReader, StateWriter};
    use yarnsim::gpu_step::GpuSim;
    let name = "the_frames_start_from_what_the_gpu_relaxation_learned";
    let Some(gpu) = yarnsim::gpu::testing::gpu_or_skip(name) else {
        return;
    };
    let dir = temp_dir("relax", "learned");
    let (scene, sim) = sim_of(&dir, GARTER);
    let (relaxed, report) = yarnsim::relax::relax_gpu(sim, &scene, &gpu, &mut |_| {}).unwrap();
    let learned = report
        .gpu
        .expect("a GPU relaxation reports what it learned");
    let caps = learned.acl.expect("the swatch's contact model is ACL");
    let mut saved = StateWriter::new();
    relaxed.export_state(&mut saved).unwrap();
    // 100 steps; the buffers' bytes (by the capacities that size them) before and after them.
    let run = |carry: bool| {
        let (_, mut sim) = sim_of(&dir, GARTER);
        let state = StateReader::new(saved.body().to_vec(), "the relaxed state").unwrap();
        sim.import_state(&state).unwrap();
        let mut g = GpuSim::new(&gpu, sim, &scene.contact).unwrap();
        if carry {
            g.start_from(&learned).unwrap();
            let now = g.acl_capacities().unwrap();
            assert_eq!(
                now.at_least(&caps),
                now,
                "a capacity below the relaxation's"
            );
        }
        let before = g.acl_capacities().unwrap().binding_bytes();
        for _ in 0..4 {
            g.steps(25).unwrap_or_else(|e| panic!("{e}"));
        }
        g.download().unwrap();
        let after = g.acl_capacities().unwrap().binding_bytes();
        let grown: Vec<&str> = (before.iter().zip(&after))
            .filter(|(a, b)| a != b)
            .map(|(a, _)| a.0)
            .collect();
        let bits: Vec<u32> = (g.sim.pos.iter().chain(&g.sim.vel))
            .flatten()
            .map(|x| x.to_bits())
            .collect();
        (bits, grown, g.reruns())
    };
    let (fresh, fresh_grown, fresh_reruns) = run(false);
    let (carried, grown, reruns) = run(true);
    eprintln!(
        "100 steps after the relaxation: afresh {fresh_reruns} reruns, grown {fresh_grown:?}; \
         from the relaxation's {reruns} reruns, grown {grown:?}"
    );
    assert!(
        !fresh_grown.is_empty() && fresh_reruns > 0,
        "the step afresh grew nothing: the test shows nothing"
    );
    assert!(grown.is_empty(), "grown from the relaxation's: {grown:?}");
    assert!(reruns < fresh_reruns);
    assert!(
        carried == fresh,
        "the step from the relaxation's capacities differs"
    );
}

/// Where a relaxation's checkpoints stand, from the radius of each of its steps (`radii[n]`: step
/// `n + 1`'s) and the target radius.
struct Stages<'a> {
    radii: &'a [f32],
    target: f32,
}

impl<'a> Stages<'a> {
    /// The stages of a relaxation that took its checkpoints (`run`: its report and end state),
    /// after checking that it ended as the one that took none (`plain`): taking them changed
    /// nothing. `radii` are its steps' radii, `target` the scene's.
    fn of_checkpointed(
        model: &str,
        run: (&RelaxReport, &Sim),
        plain: (&RelaxReport, &Sim),
        radii: &'a [f32],
        target: f32,
    ) -> Stages<'a> {
        assert_eq!(run.0, plain.0, "{model}: checkpoints changed the report");
        assert!(
            run.1.pos == plain.1.pos && run.1.vel == plain.1.vel,
            "{model}: checkpoints changed the relaxed state"
        );
        Stages { radii, target }
    }

    /// Whether a radius stage begins at step `n + 1` (before step `n` in the checkpoint's count).
    fn boundary(&self, n: u64) -> bool {
        self.radii[n as usize] != self.radii[n as usize - 1]
    }

    /// Whether the radius is grown before step `n` and no stage begins there.
    fn grown(&self, n: u64) -> bool {
        self.radii[n as usize - 1] == self.target && !self.boundary(n)
    }

    /// The checkpoints to resume from, one of each kind: the fifth where a stage begins, and the
    /// last within the grown stage (taken every 100 steps there). `steps` gives a checkpoint's.
    fn pick<'s, T>(
        &self,
        model: &str,
        saved: &'s [T],
        steps: impl Fn(&T) -> u64,
    ) -> (&'s T, &'s T) {
        let stage = saved.iter().filter(|c| self.boundary(steps(c))).nth(4);
        let late = saved.iter().rev().find(|c| self.grown(steps(c)));
        let (Some(stage), Some(late)) = (stage, late) else {
            panic!(
                "{model}: no checkpoint of each kind among {:?}",
                saved.iter().map(&steps).collect::<Vec<_>>()
            );
        };
        assert!(steps(late).is_multiple_of(100), "{}", steps(late));
        (stage, late)
    }
}

/// A relaxation resumed from a checkpoint taken during it (where a radius stage begins, or once
/// the radius is grown) ends bitwise where the uninterrupted one ends, for both contact models;
/// taking the checkpoints changes nothing; a resume where no checkpoint is taken is refused. One
/// asked to stop saves at the next resume point and stops there.
#[test]
fn a_relaxation_resumes_from_its_checkpoints_bitwise() {
    use yarnsim::checkpoint::{encode, Checkpoint};
    use yarnsim::relax::{relax_resumable, RelaxError, RelaxPoint, Saves};
    for model in ["acl", "exact"] {
        let dir = temp_dir("relax", &format!("resume-{model}"));
        let text = format!("{SWATCH}\n[contact]\nmodel = \"{model}\"\n");
        let (scene, mut plain) = sim_of(&dir, &text);
        let plain_report = relaxed(&mut plain, &scene);
        // The same relaxation, saving every checkpoint it offers.
        let (_, mut full) = sim_of(&dir, &text);
        let mut radii = Vec::new();
        let mut saved: Vec<(RelaxPoint, Vec<u8>)> = Vec::new();
        let report = relax_resumable(
            &mut full,
            &scene,
            None,
            Saves::every(100),
            &mut |p| radii.push(p.radius),
            &mut |sim, point| {
                let bytes = encode(sim, &scene, &dir, serde_json::Value::Null)?;
                saved.push((point, bytes));
                Ok(())
            },
        )
        .unwrap();
        let stages = Stages::of_checkpointed(
            model,
            (&report, &full),
            (&plain_report, &plain),
            &radii,
            scene.yarn.radius,
        );
        // Resume points of both kinds: where a radius stage begins, and within the grown stage.
        let (stage, late) = stages.pick(model, &saved, |s| s.0.steps);
        eprintln!("{model}: {} checkpoints; resuming before steps {} (a stage begins) and {} (radius grown) of {}", saved.len(), stage.0.steps, late.0.steps, plain_report.steps);
        for (point, bytes) in [stage, late] {
            let ck = Checkpoint::decode(bytes.clone(), "memory").unwrap();
            let mut sim = ck.build_sim().unwrap();
            assert_eq!(sim.steps, point.steps);
            let r = relax_resumable(
                &mut sim,
                &scene,
                Some(*point),
                Saves::default(),
                &mut |_| {},
                &mut |_, _| Ok(()),
            )
            .unwrap();
            assert_eq!(
                r, plain_report,
                "{model}: resumed before step {}",
                point.steps
            );
            assert!(
                sim.pos == plain.pos && sim.vel == plain.vel && sim.rod.frames == plain.rod.frames,
                "{model}: resumed before step {}: the relaxed state differs",
                point.steps
            );
        }
        // Asked to stop (`Saves::stop`, which a signal sets in `yarnsim run --out`) with no
        // checkpoint schedule: mid-stage while the radius grows, the relaxation goes on to where
        // the next stage begins; within the grown stage it stops at once. Either way it offers
        // one checkpoint, the very bytes of the one the schedule took at that step above (which
        // resume bitwise), and returns `Stopped` there.
        if model == "acl" {
            let before_stage = stage.0.steps - 1;
            assert!(!stages.boundary(before_stage) && !stages.grown(before_stage));
            for (flag_at, (want, want_bytes)) in [(before_stage, stage), (late.0.steps, late)] {
                let (_, mut sim) = sim_of(&dir, &text);
                let stop = std::sync::atomic::AtomicBool::new(false);
                let mut offered = Vec::new();
                let err = relax_resumable(
                    &mut sim,
                    &scene,
                    None,
                    Saves {
                        every: 0,
                        stop: Some(&stop),
                    },
                    &mut |p| {
                        if p.step == flag_at {
                            stop.store(true, std::sync::atomic::Ordering::SeqCst);
                        }
                    },
                    &mut |sim, point| {
                        let bytes = encode(sim, &scene, &dir, serde_json::Value::Null)?;
                        offered.push((point, bytes));
                        Ok(())
                    },
                )
                .unwrap_err();
                assert!(
                    matches!(err, RelaxError::Stopped { steps } if steps == want.steps),
                    "{model}: asked after step {flag_at}: {err}"
                );
                assert_eq!(offered.len(), 1, "{model}: asked after step {flag_at}");
                assert_eq!(offered[0].0, *want);
                assert!(
                    offered[0].1 == *want_bytes,
                    "{model}: stopped before step {}: not the scheduled checkpoint's state",
                    want.steps
                );
            }
        }
        // Mid-stage while the radius grows: the stage's model state is not in a checkpoint.
        let mid = (1..late.0.steps)
            .find(|&n| !stages.boundary(n) && !stages.grown(n))
            .unwrap();
        let ck = Checkpoint::decode(stage.1.clone(), "memory").unwrap();
        let mut sim = ck.build_sim().unwrap();
        let bad = RelaxPoint {
            steps: mid,
            ..stage.0
        };
        let err = relax_resumable(
            &mut sim,
            &scene,
            Some(bad),
            Saves::default(),
            &mut |_| {},
            &mut |_, _| Ok(()),
        )
        .unwrap_err();
        assert!(matches!(err, RelaxError::NoResumePoint { .. }), "{err}");
        assert!(err.to_string().contains(&format!("step {mid}")), "{err}");
    }
}

/// The GPU relaxation (`relax_gpu_resumable`, what `run --backend gpu --checkpoint-every N` runs)
/// checkpoints where the CPU one does, and a relaxation resumed from one of them ends bitwise where
/// the uninterrupted one ends, with ACL (the exact path's state, its grid origin, is checked in
/// tests/gpu_step.rs and tests/checkpoint.rs): from where a radius stage begins (its model built
/// afresh) and from within the grown stage (the step takes up the checkpoint's GPU contact
/// state). Taking the checkpoints (which end batches where they are due) changes nothing; a resume
/// within the grown stage without the GPU contact state is an error naming the missing section
/// (tests/gpu_step.rs shows that a model started afresh there would not continue bitwise).
#[test]
fn a_gpu_relaxation_resumes_from_its_checkpoints_bitwise() {
    use yarnsim::checkpoint::{encode_with, Checkpoint, StateReader};
    use yarnsim::relax::{relax_gpu, relax_gpu_resumable, RelaxPoint, Saves};
    let Some(gpu) =
        yarnsim::gpu::testing::gpu_or_skip("a_gpu_relaxation_resumes_from_its_checkpoints_bitwise")
    else {
        return;
    };
    {
        let model = "acl";
        let dir = temp_dir("relax", &format!("gpu-resume-{model}"));
        let text = format!("{SWATCH}\n[contact]\nmodel = \"{model}\"\n");
        let (scene, sim) = sim_of(&dir, &text);
        let (plain, plain_report) = relax_gpu(sim, &scene, &gpu, &mut |_| {}).unwrap();
        // The same relaxation, saving every checkpoint it offers.
        let (_, sim) = sim_of(&dir, &text);
        let mut radii = Vec::new();
        let mut saved: Vec<(RelaxPoint, Vec<u8>, bool)> = Vec::new();
        let (full, report) = relax_gpu_resumable(
            sim,
            &scene,
            &gpu,
            None,
            Saves::every(100),
            &mut |p| radii.push(p.radius),
            &mut |sim, point, state| {
                let bytes = encode_with(sim, &scene, &dir, serde_json::Value::Null, state)?;
                saved.push((point, bytes, !state.body().is_empty()));
                Ok(())
            },
        )
        .unwrap();
        let stages = Stages::of_checkpointed(
            model,
            (&report, &full),
            (&plain_report, &plain),
            &radii,
            scene.yarn.radius,
        );
        // Where a stage begins the checkpoint holds no GPU contact state; within the grown stage
        // it does.
        for (p, _, with_state) in &saved {
            assert_eq!(
                *with_state,
                stages.grown(p.steps),
                "{model}: before step {}",
                p.steps
            );
        }
        let (stage, late) = stages.pick(model, &saved, |s| s.0.steps);
        eprintln!(
            "{model}: {} checkpoints; resuming before steps {} (a stage begins) and {} (radius grown) of {}",
            saved.len(),
            stage.0.steps,
            late.0.steps,
            plain_report.steps
        );
        let resume = |point: RelaxPoint, bytes: &[u8], with_state: bool| {
            let ck = Checkpoint::decode(bytes.to_vec(), "memory").unwrap();
            let sim = ck.build_sim().unwrap();
            assert_eq!(sim.steps, point.steps);
            // Without the GPU's contact state: the sections of the simulation alone.
            let bare;
            let state = if with_state {
                ck.state()
            } else {
                let mut w = yarnsim::checkpoint::StateWriter::new();
                sim.export_state(&mut w).unwrap();
                bare = StateReader::new(w.body().to_vec(), "memory").unwrap();
                &bare
            };
            relax_gpu_resumable(
                sim,
                &scene,
                &gpu,
                Some((point, Some(state))),
                Saves::default(),
                &mut |_| {},
                &mut |_, _, _| Ok(()),
            )
        };
        for (point, bytes, _) in [stage, late] {
            let (sim, r) = resume(*point, bytes, true).unwrap();
            // (Not what its GPU step learned: a resumed relaxation grew its capacities from the
            // checkpoint on, not from the start.)
            let outcome = |r: &RelaxReport| RelaxReport {
                gpu: None,
                ..r.clone()
            };
            assert_eq!(
                outcome(&r),
                outcome(&plain_report),
                "{model}: resumed before step {}",
                point.steps
            );
            assert!(
                sim.pos == plain.pos && sim.vel == plain.vel && sim.rod.frames == plain.rod.frames,
                "{model}: resumed before step {}: the relaxed state differs",
                point.steps
            );
        }
        // Asked to stop (`Saves::stop`) with no checkpoint schedule: from mid-stage while the
        // radius grows, where the next stage begins (the bytes the schedule took there); within
        // the grown stage, at the end of the batch, with the contact state, from which a resume
        // ends where the uninterrupted relaxation does.
        for flag_at in [stage.0.steps - 1, late.0.steps] {
            let (_, sim) = sim_of(&dir, &text);
            let stop = std::sync::atomic::AtomicBool::new(false);
            let mut offered = Vec::new();
            let Err(err) = relax_gpu_resumable(
                sim,
                &scene,
                &gpu,
                None,
                Saves {
                    every: 0,
                    stop: Some(&stop),
                },
                &mut |p| {
                    if p.step == flag_at {
                        stop.store(true, std::sync::atomic::Ordering::SeqCst);
                    }
                },
                &mut |sim, point, state| {
                    let bytes = encode_with(sim, &scene, &dir, serde_json::Value::Null, state)?;
                    offered.push((point, bytes, !state.body().is_empty()));
                    Ok(())
                },
            ) else {
                panic!("{model}: asked to stop after step {flag_at}, the relaxation ran on");
            };
            let yarnsim::relax::RelaxError::Stopped { steps } = err else {
                panic!("{model}: asked to stop after step {flag_at}: {err}");
            };
            assert_eq!(offered.len(), 1, "{model}: asked after step {flag_at}");
            let (point, bytes, with_state) = &offered[0];
            assert_eq!(point.steps, steps);
            if flag_at < late.0.steps {
                assert_eq!(steps, stage.0.steps, "{model}: asked after step {flag_at}");
                assert!(
                    bytes == &stage.1,
                    "{model}: not the scheduled checkpoint's state"
                );
            } else {
                assert!(
                    (flag_at..flag_at + yarnsim::relax::GPU_CHECK_STEPS).contains(&steps),
                    "{model}: asked after step {flag_at}, stopped before step {steps}"
                );
                assert!(with_state);
                let (sim, r) = resume(*point, bytes, true).unwrap();
                assert_eq!(r.steps, plain_report.steps);
                assert!(
                    sim.pos == plain.pos && sim.vel == plain.vel,
                    "{model}: resumed from the stop before step {steps}: the relaxed state differs"
                );
            }
        }
        // Within the grown stage the contact state is needed: without it the import fails.
        let Err(err) = resume(late.0, &late.1, false) else {
            panic!("{model}: resumed within the grown stage without the GPU contact state");
        };
        let err = err.to_string();
        assert!(
            err.contains("gpu.model") && err.contains("missing"),
            "{model}: {err}"
        );
    }
}

/// A 2 × 2 garter swatch, gravity off, its cloth moved by `at` (cm); the scene's first `[[cloth]]`.
fn far_swatch(at: [f32; 3]) -> String {
    format!(
        r#"
[simulation]
gravity = [0, 0, 0]
[[cloth]]
source.generator = {{ pattern = "garter", wales = 2, courses = 2 }}
translate = [{}, {}, {}]
"#,
        at[0], at[1], at[2]
    )
}

/// A cloth far from the scene's origin is simulated about a local one (`Sim::origin`), so it
/// relaxes, rests and keeps its lengths as it does at the origin. Without it (positions held in
/// the scene's frame) the swatch at (150, 150, 150) cm did not come to rest in the relaxation's
/// 8,101 steps (fastest point 0.14 cm/s against `relax.speed` = 0.1) and after a frame moved at
/// 0.145 cm/s with a length error of 3.8e-5, where at the origin it rested in 674 steps and moved
/// at 7e-6 cm/s (length error 1.9e-7): an f32 at 150 cm holds no move smaller than 1.5e-5 cm,
/// 0.25 cm/s over a step. What leaves the simulation is in the scene's frame: its curves are the
/// relaxed swatch's at the origin moved by the translation.
#[test]
fn a_cloth_far_from_the_origin_relaxes_as_one_at_the_origin() {
    let dir = temp_dir("relax", "far");
    let far = [150.0, 150.0, 150.0];
    let mut runs = Vec::new();
    for at in [[0.0; 3], far] {
        let (scene, mut sim) = sim_of(&dir, &far_swatch(at));
        let report = relaxed(&mut sim, &scene);
        let v = fastest_over(&mut sim, 540);
        runs.push((
            report,
            v,
            sim.max_length_error(),
            sim.origin(),
            sim.curves(),
        ));
    }
    let (near, far_run) = (&runs[0], &runs[1]);
    for (what, (report, v, length_error, _, _)) in [("at the origin", near), ("far", far_run)] {
        assert!(report.settled, "{what}: {report:?}");
        // The origin's own figures with room: 10× its speed, which is 1e-4 of relax.speed, and
        // 10× its length error (the far run holds its points about (0.6, 0.6, 0.6) cm from its
        // origin where the near one has them within about 1.2 cm, half their ulp or less).
        assert!(
            *v < 10.0 * near.1.max(1e-5),
            "{what}: moved at {v} cm/s after relaxing"
        );
        assert!(
            *length_error < 10.0 * near.2.max(1e-7),
            "{what}: length error {length_error}"
        );
    }
    let steps = |r: &RelaxReport| r.steps as f64;
    assert!(
        (steps(&far_run.0) - steps(&near.0)).abs() <= 0.1 * steps(&near.0),
        "relaxed in {} steps far away, {} at the origin",
        far_run.0.steps,
        near.0.steps
    );
    assert_eq!(
        near.3, [0.0; 3],
        "a swatch at the origin keeps the scene's frame"
    );
    assert!(
        far_run.3.iter().all(|&o| (o - 150.0).abs() <= 2.0),
        "the local origin {:?} should be the swatch's centre",
        far_run.3
    );
    // The two start states differ by the rounding of the far one's f32 (≤ 7.6e-6 cm, half an ulp
    // at 150 cm); after the relaxation and a frame that has grown to 1.2e-5 cm (measured), bounded
    // here by 1e-3 r, the bound of the GPU step's whole-run parity tests.
    let mut apart = 0.0f32;
    for (a, b) in near.4.iter().zip(&far_run.4) {
        for (p, q) in a.points.iter().zip(&b.points) {
            for k in 0..3 {
                apart = apart.max((q[k] - far[k] - p[k]).abs());
            }
        }
    }
    assert!(
        apart < 1.25e-4,
        "the far swatch ended {apart} cm from the near one moved"
    );
}
