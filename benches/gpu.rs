//! `cargo bench --bench gpu`: the time step on the CPU path and on the GPU path, in one run, on the
//! same scenes, with each contact model. For every (scene, model, path) it prints steps per second,
//! the whole step's and the contact model's milliseconds per step (CPU: the `phase_contact_ms`
//! timer; GPU: the timestamp queries of the contact model's dispatches), ACL's sets and rebuild
//! fraction, the GPU buffer memory the contact model adds (wgpu's device counters: the GPU
//! simulation's buffers with this model minus those with `contact.model = none`), bytes read back
//! and dispatches per step, the slowest GPU kernels, and the adapter's name; then one table of all
//! of it (and, with `YARNSIM_BENCH_JSON=FILE`, one JSON record per row in FILE).
//!
//! Scenes (`YARNSIM_BENCH_SCENES`, a comma list; default `swatch2000,scarf`):
//! * `swatch2000`: `cargo bench --bench acl`'s 2,000-loop swatch (50 × 40 stockinette, τ = 0.04)
//!   falling onto a plane, from the state after its 60 steps of exact contact, damped over
//!   4 × 4-loop blocks as a generated scene is (until 2026-11-28 as one block of 16,081 control
//!   points, which the GPU damps in one workgroup: 0.23–0.38 ms of its step on the H200);
//! * a name `NAME`: `scenes/NAME.toml` as generated (unrelaxed: garments start overlapped);
//! * a path `FILE.toml`: that scene file (e.g. one whose cloth is a relaxed state written by
//!   `yarnsim run --frames 0 --out DIR`).
//!
//! `YARNSIM_BENCH_MODELS` (default `none,exact,acl`), `YARNSIM_BENCH_PATHS` (default `cpu,gpu`),
//! `YARNSIM_BENCH_STEPS` (the most steps measured per row, default 200), `YARNSIM_BENCH_SECONDS`
//! (a row stops measuring after the first batch that ends past this, default 10),
//! `YARNSIM_BENCH_WARMUP` (untimed steps first, default 20), `YARNSIM_BENCH_FRAME` (steps per
//! measured frame, default the scene's `steps_per_frame`: each frame ends with the CPU's
//! pass-through check, and on the GPU path the state's download, which a run spreads over that
//! many steps; a row stops at the end of a frame),
//! `YARNSIM_BENCH_CHUNK` (steps the GPU
//! path records and submits together, default 16; 64 puts a whole batch in one submission, so the
//! host's recording and the GPU's work do not overlap and the printed host and wait times
//! separate them), `YARNSIM_BENCH_UNTIMED=1` (no per-kernel timestamps: the first step of each
//! batch is recorded like the others, in a few compute passes instead of one per dispatch),
//! `YARNSIM_BENCH_AHEAD=0` (GPU frames do not run the next frame's first batches while their
//! pass-through check runs on the host, as `yarnsim run` does by default: `GpuSim::set_run_ahead`;
//! a row that stops on its time may have run one batch past its last frame, in its time). The
//! first path of a (scene, model)
//! decides how many steps are measured; the other paths then measure exactly as many, so every
//! row of a (scene, model) covers the same steps of the run (a falling cloth's contact changes
//! from step to step: averages over different windows do not compare).

#[path = "../tests/acl_support/mod.rs"]
mod acl_support;

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::time::Instant;

use yarnsim::gpu::Gpu;
use yarnsim::gpu_step::GpuSim;
use yarnsim::scene::{self, ContactModel, ContactParams, Scene};
use yarnsim::sim::{contact_model, Sim};

fn env<T: std::str::FromStr>(key: &str, default: T) -> T {
    std::env::var(key)
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(default)
}

/// The 2,000-loop swatch: its curves, and the positions and velocities its rows start from.
type SwatchStart = (Vec<yarnsim::state::Curve>, Vec<[f32; 4]>, Vec<[f32; 4]>);

/// One scene of the benchmark, able to make a fresh simulation with any contact model.
struct Case {
    name: String,
    scene: Scene,
    dir: PathBuf,
    swatch: Option<SwatchStart>,
}

impl Case {
    fn new(spec: &str) -> Case {
        let scenes = Path::new(env!("CARGO_MANIFEST_DIR")).join("scenes");
        if spec == "swatch2000" {
            let scene = acl_support::bench_swatch_scene();
            let r = scene.yarn.radius;
            let (w, c) = acl_support::BENCH_SWATCH;
            let curves = acl_support::flat_swatch(w, c, r, 0.3);
            let mut exact = scene.clone();
            exact.contact.model = ContactModel::Exact;
            let mut sim =
                acl_support::bench_swatch_sim(&exact, &curves, &[], contact_model(&exact).unwrap())
                    .unwrap();
            for v in &mut sim.vel {
                v[1] = -30.0;
            }
            let pool = rayon::ThreadPoolBuilder::new().build().unwrap();
            pool.install(|| {
                for _ in 0..60 {
                    sim.step().unwrap();
                }
            });
            return Case {
                name: spec.into(),
                scene,
                dir: scenes,
                swatch: Some((curves, sim.pos.clone(), sim.vel.clone())),
            };
        }
        let path = if spec.ends_with(".toml") {
            PathBuf::from(spec)
        } else {
            scenes.join(format!("{spec}.toml"))
        };
        let scene = Scene::load(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        let name = path.file_stem().unwrap().to_string_lossy().into_owned();
        Case {
            name,
            scene,
            dir: path.parent().unwrap().to_path_buf(),
            swatch: None,
        }
    }

    fn sim(&self, model: &str) -> (Sim, ContactParams) {
        let mut sc = self.scene.clone();
        // (Not `apply_set`: the 2,000-loop swatch's scene has no cloth table, its curves are made here.)
        sc.contact.model = match model {
            "none" => ContactModel::None,
            "exact" => ContactModel::Exact,
            "acl" => ContactModel::Acl,
            other => panic!("unknown contact model {other:?}"),
        };
        let contact = sc.contact.clone();
        if let Some((curves, pos, vel)) = &self.swatch {
            let mut sim =
                acl_support::bench_swatch_sim(&sc, curves, &[], contact_model(&sc).unwrap())
                    .unwrap();
            sim.pos.copy_from_slice(pos);
            sim.vel.copy_from_slice(vel);
            return (sim, contact);
        }
        let build = scene::build_curves(&sc, &self.dir).unwrap();
        let pins = scene::pinned_points(&sc, &build).unwrap();
        (Sim::from_build(&sc, &build, &pins).unwrap(), contact)
    }
}

/// One measured (scene, model, path).
#[derive(Default)]
struct Row {
    scene: String,
    points: usize,
    model: String,
    path: &'static str,
    steps: u64,
    step_ms: f64,
    contact_ms: f64,
    sets: f64,
    rebuild_fraction: f64,
    touching: f64,
    buffer_bytes: Option<u64>,
    readback: f64,
    dispatches: u32,
    /// Compute passes per untimed step (wgpu encodes each into command buffers of its own).
    passes: u32,
    kernels: Vec<(&'static str, f64)>,
    /// With ACL, milliseconds per step in each of the CPU path's stages (`acl::gpu::STAGE_KEYS`;
    /// on the GPU the sums of the timed kernels that do each stage's work), so that a row of each
    /// path shows where ACL's time goes, stage by stage.
    stages: Vec<(&'static str, f64)>,
    /// The GPU simulation's batch reruns and capacity growths in the measured steps.
    reruns: (f64, f64),
    /// Steps of its failed batch attempts in the measured steps, and the length-projection
    /// iterations it encodes per step at the end.
    rerun_steps: f64,
    length_budget: f64,
    /// Host milliseconds per step recording and submitting batches, and waiting for them.
    host_ms: (f64, f64, f64),
    /// Host milliseconds per step in the frames' pass-through checks (`GpuFrameTimes::host_check_ms`).
    host_check_ms: f64,
    /// Host milliseconds per step waited for the checks (`GpuFrameTimes::host_check_wait_ms`),
    /// and steps run ahead of their frame, during the frame before's check.
    host_check_wait_ms: f64,
    ahead_steps: u64,
    note: String,
}

impl Row {
    fn json(&self, adapter: &str, contact_bytes: Option<u64>) -> String {
        let opt = |v: Option<u64>| v.map_or("null".to_string(), |b| b.to_string());
        let mut s = format!(
            "{{\"scene\":\"{}\",\"control_points\":{},\"model\":\"{}\",\"path\":\"{}\",\"adapter\":\"{}\",\
             \"steps\":{},\"steps_per_s\":{:.3},\"step_ms\":{:.5},\"contact_ms\":{},\"contact_sets\":{:.1},\
             \"rebuild_fraction\":{:.5},\"touching_pairs\":{:.1},\"gpu_buffer_bytes\":{},\
             \"contact_buffer_bytes\":{},\"readback_bytes_per_step\":{:.1},\"dispatches_per_step\":{},\"passes_per_step\":{},\"batch_reruns\":{},\"batch_rerun_steps\":{},\"capacity_grows\":{},\"length_budget\":{},\"host_record_ms\":{:.5},\"host_submit_ms\":{:.5},\"host_wait_ms\":{:.5},\"host_check_ms\":{:.5},\"host_check_wait_ms\":{:.5},\"ahead_steps\":{},\"note\":\"{}\",\"stage_ms\":{{",
            self.scene,
            self.points,
            self.model,
            self.path,
            adapter.replace('"', "'"),
            self.steps,
            1e3 / self.step_ms,
            self.step_ms,
            // Unmeasured (no timestamps, or YARNSIM_BENCH_UNTIMED): null, as JSON has no NaN.
            if self.contact_ms.is_finite() {
                format!("{:.5}", self.contact_ms)
            } else {
                "null".to_string()
            },
            self.sets,
            self.rebuild_fraction,
            self.touching,
            opt(self.buffer_bytes),
            opt(contact_bytes),
            self.readback,
            self.dispatches,
            self.passes,
            self.reruns.0,
            self.rerun_steps,
            self.reruns.1,
            self.length_budget,
            self.host_ms.0,
            self.host_ms.2,
            self.host_ms.1,
            self.host_check_ms,
            self.host_check_wait_ms,
            self.ahead_steps,
            self.note.replace('"', "'"),
        );
        for (i, (k, v)) in self.stages.iter().enumerate() {
            let _ = write!(s, "{}\"{k}\":{v:.5}", if i > 0 { "," } else { "" });
        }
        s.push_str("},\"kernel_ms\":{");
        for (i, (k, v)) in self.kernels.iter().enumerate() {
            let _ = write!(s, "{}\"{k}\":{v:.5}", if i > 0 { "," } else { "" });
        }
        s.push_str("}}");
        s
    }
}

fn value(list: &[(&'static str, f64)], key: &str) -> f64 {
    list.iter().find(|(k, _)| *k == key).map_or(0.0, |x| x.1)
}

/// Adds `w` times a frame record's ACL stage times (its `contact` values) into `stages`.
fn add_stages(stages: &mut Vec<(&'static str, f64)>, contact: &[(&'static str, f64)], w: f64) {
    for key in yarnsim::acl::gpu::STAGE_KEYS {
        match stages.iter_mut().find(|(k, _)| *k == key) {
            Some(e) => e.1 += w * value(contact, key),
            None => stages.push((key, w * value(contact, key))),
        }
    }
}

/// The most steps to measure and the time after which to stop: from the environment, or exactly
/// `fixed` steps (the count the other path measured, so both rows cover the same steps).
fn budget(fixed: Option<u64>) -> (u64, f64, u64) {
    let warmup = env("YARNSIM_BENCH_WARMUP", 20u64);
    match fixed {
        Some(n) => (n, f64::INFINITY, warmup),
        None => (
            env("YARNSIM_BENCH_STEPS", 200u64),
            env("YARNSIM_BENCH_SECONDS", 10.0f64),
            warmup,
        ),
    }
}

fn run_cpu(case: &Case, model: &str, pool: &rayon::ThreadPool, fixed: Option<u64>) -> Row {
    let (steps, secs, warmup) = budget(fixed);
    let (mut sim, _) = case.sim(model);
    let mut row = Row {
        scene: case.name.clone(),
        points: sim.pos.len(),
        model: model.into(),
        path: "cpu",
        ..Row::default()
    };
    pool.install(|| {
        for _ in 0..warmup {
            sim.step().unwrap();
        }
        let (mut wall, mut contact) = (0.0, 0.0);
        // Frames as the GPU rows take them (each ends with the pass-through check).
        let frame = env("YARNSIM_BENCH_FRAME", sim.params.steps_per_frame as u64).max(1);
        while row.steps < steps && wall < secs * 1e3 {
            let k = (steps - row.steps).min(frame);
            sim.params.steps_per_frame = k as u32;
            let t = Instant::now();
            let stats = sim.frame().unwrap();
            wall += t.elapsed().as_secs_f64() * 1e3;
            contact += value(&stats.phase_ms, "phase_contact_ms");
            let w = k as f64;
            row.sets += w * value(&stats.contact, "contact_sets");
            row.rebuild_fraction += w * value(&stats.contact, "rebuild_fraction");
            row.touching += w * value(&stats.contact, "touching_pairs");
            if model == "acl" {
                add_stages(&mut row.stages, &stats.contact, w);
            }
            row.steps += k;
        }
        let n = row.steps as f64;
        row.step_ms = wall / n;
        row.contact_ms = contact / n;
        for st in &mut row.stages {
            st.1 /= n;
        }
        row.sets /= n;
        row.rebuild_fraction /= n;
        row.touching /= n;
    });
    row
}

fn run_gpu(case: &Case, model: &str, g: &Gpu, fixed: Option<u64>) -> Row {
    let (steps, secs, warmup) = budget(fixed);
    let (sim, contact) = case.sim(model);
    let mut row = Row {
        scene: case.name.clone(),
        points: sim.pos.len(),
        model: model.into(),
        path: "gpu",
        ..Row::default()
    };
    let before = g.buffer_memory().unwrap_or(0);
    let mut gs = match GpuSim::new(g, sim, &contact) {
        Ok(mut gs) => {
            // YARNSIM_BENCH_CHUNK: steps per submission (64 separates host and GPU time).
            if let Some(c) = std::env::var("YARNSIM_BENCH_CHUNK")
                .ok()
                .and_then(|v| v.parse().ok())
            {
                gs.set_record_chunk(c);
            }
            // YARNSIM_BENCH_UNTIMED=1: no per-kernel timestamps (every step recorded alike).
            if std::env::var_os("YARNSIM_BENCH_UNTIMED").is_some() {
                if let Err(e) = gs.set_kernel_timing(false) {
                    row.note = format!("not run: {e}");
                    return row;
                }
            }
            gs
        }
        Err(e) => {
            row.note = format!("not run: {e}");
            return row;
        }
    };
    for _ in 0..warmup {
        if let Err(e) = gs.step() {
            row.note = format!("failed in the warm-up: {e}");
            return row;
        }
    }
    let (mut wall, mut contact_ms, mut timed_frames) = (0.0, 0.0, 0.0);
    // Frames as long as the scene's (a run's end-of-frame work, the download and the CPU's
    // pass-through check, is spread over that many steps), or YARNSIM_BENCH_FRAME steps.
    let frame = env("YARNSIM_BENCH_FRAME", gs.sim.params.steps_per_frame as u64).max(1);
    let so_far = (gs.reruns(), gs.rerun_steps(), gs.capacity_grows());
    let ahead = std::env::var("YARNSIM_BENCH_AHEAD").map_or(true, |v| v != "0");
    while row.steps < steps && wall < secs * 1e3 {
        // A frame, run in batches of `GpuSim::advance`'s length (the first step of each batch is
        // timed per kernel).
        let k = (steps - row.steps).min(frame);
        gs.sim.params.steps_per_frame = k as u32;
        // Ahead only into a next frame at least as long (this frame's length bounds what runs
        // ahead).
        gs.set_run_ahead(ahead && (steps - row.steps - k).min(frame) >= k);
        let t = Instant::now();
        let (stats, times) = match gs.frame() {
            Ok(x) => x,
            Err(e) => {
                row.note = format!("failed after {} steps: {e}", row.steps);
                break;
            }
        };
        wall += t.elapsed().as_secs_f64() * 1e3;
        let w = k as f64;
        row.sets += w * value(&stats.contact, "contact_sets");
        row.rebuild_fraction += w * value(&stats.contact, "rebuild_fraction");
        row.touching += w * value(&stats.contact, "touching_pairs");
        row.readback += w * times.readback_bytes_per_step;
        row.host_ms.0 += w * times.host_record_ms;
        row.host_ms.1 += w * times.host_wait_ms;
        row.host_ms.2 += w * times.host_submit_ms;
        row.host_check_ms += w * times.host_check_ms;
        row.host_check_wait_ms += w * times.host_check_wait_ms;
        row.ahead_steps += times.ahead_steps as u64;
        row.dispatches = times.dispatches_per_step;
        row.passes = gs.passes_per_step();
        let extra = |k: &str| {
            stats
                .extra
                .iter()
                .find(|(n, _)| n == k)
                .map_or(0.0, |x| x.1)
        };
        row.reruns = (
            (gs.reruns() - so_far.0) as f64,
            (gs.capacity_grows() - so_far.2) as f64,
        );
        row.rerun_steps = (gs.rerun_steps() - so_far.1) as f64;
        row.length_budget = extra("length_budget");
        if times.timed {
            timed_frames += 1.0;
            contact_ms += times.contact_ms;
            if model == "acl" {
                add_stages(&mut row.stages, &stats.contact, 1.0);
            }
            for (name, ms) in &times.kernel_ms {
                match row.kernels.iter_mut().find(|(k, _)| k == name) {
                    Some(e) => e.1 += ms,
                    None => row.kernels.push((name, *ms)),
                }
            }
        }
        row.steps += k;
    }
    row.buffer_bytes = g.buffer_memory().map(|after| after.saturating_sub(before));
    let n = row.steps.max(1) as f64;
    row.step_ms = wall / n;
    row.sets /= n;
    row.rebuild_fraction /= n;
    row.touching /= n;
    row.readback /= n;
    row.host_ms = (row.host_ms.0 / n, row.host_ms.1 / n, row.host_ms.2 / n);
    row.host_check_ms /= n;
    row.host_check_wait_ms /= n;
    if timed_frames > 0.0 {
        row.contact_ms = contact_ms / timed_frames;
        for k in row.kernels.iter_mut().chain(&mut row.stages) {
            k.1 /= timed_frames;
        }
        row.kernels.sort_by(|a, b| b.1.total_cmp(&a.1));
    } else {
        row.contact_ms = f64::NAN;
    }
    drop(gs);
    row
}

fn main() {
    // `cargo bench` passes `--bench`; this harness takes no arguments.
    let scenes: String = env("YARNSIM_BENCH_SCENES", "swatch2000,scarf".to_string());
    let models: String = env("YARNSIM_BENCH_MODELS", "none,exact,acl".to_string());
    let paths: String = env("YARNSIM_BENCH_PATHS", "cpu,gpu".to_string());
    let json = std::env::var("YARNSIM_BENCH_JSON").ok();
    yarnsim::gpu::ensure_runtime_dir();
    let gpu = if paths.contains("gpu") {
        match Gpu::new() {
            Ok(g) => Some(g),
            Err(e) => {
                println!("no GPU adapter ({e}): CPU figures only");
                None
            }
        }
    } else {
        None
    };
    let adapter = gpu
        .as_ref()
        .map_or("none".to_string(), |g| g.summary().to_string());
    println!("adapter: {adapter}");
    println!(
        "CPU: {} threads",
        std::thread::available_parallelism().map_or(1, |n| n.get())
    );
    let pool = rayon::ThreadPoolBuilder::new().build().unwrap();
    let mut rows: Vec<Row> = Vec::new();
    let mut lines = String::new();
    for spec in scenes.split(',') {
        let t = Instant::now();
        let case = Case::new(spec);
        println!(
            "\n{} (set up in {:.1} s)",
            case.name,
            t.elapsed().as_secs_f64()
        );
        for model in models.split(',') {
            // The first path's row sets the steps the others measure: the same window of the run.
            let mut fixed: Option<u64> = None;
            for path in paths.split(',') {
                let row = match (path, &gpu) {
                    ("cpu", _) => run_cpu(&case, model, &pool, fixed),
                    ("gpu", Some(g)) => run_gpu(&case, model, g, fixed),
                    _ => continue,
                };
                if row.steps > 0 && fixed.is_none() {
                    fixed = Some(row.steps);
                }
                println!(
                    "  {model:5} {path}: {:>9.2} steps/s, step {:.3} ms, contact {:.3} ms; {} steps; sets {:.0}, rebuild fraction {:.4}, touching pairs {:.0}{}{}",
                    1e3 / row.step_ms,
                    row.step_ms,
                    row.contact_ms,
                    row.steps,
                    row.sets,
                    row.rebuild_fraction,
                    row.touching,
                    if path == "gpu" {
                        format!(
                            "; {} dispatches in {} passes, {:.0} bytes read back per step, {:.1} MiB of GPU buffers; {} batch reruns ({} steps wasted), {} capacity growths, length budget {}; host {:.3} ms recording ({:.3} of it submitting), {:.3} ms waiting, {:.3} ms in the pass-through check per step ({:.3} waited for, {} steps run ahead through the checks)",
                            row.dispatches,
                            row.passes,
                            row.readback,
                            row.buffer_bytes.unwrap_or(0) as f64 / 1048576.0,
                            row.reruns.0,
                            row.rerun_steps,
                            row.reruns.1,
                            row.length_budget,
                            row.host_ms.0,
                            row.host_ms.2,
                            row.host_ms.1,
                            row.host_check_ms,
                            row.host_check_wait_ms,
                            row.ahead_steps
                        )
                    } else {
                        String::new()
                    },
                    if row.note.is_empty() {
                        String::new()
                    } else {
                        format!(" [{}]", row.note)
                    }
                );
                for (k, ms) in row.kernels.iter().take(10) {
                    println!("      {k:<28} {ms:>9.4} ms/step");
                }
                rows.push(row);
                if let Some(path) = &json {
                    // A line per row as it ends, so a run cut short keeps what it measured.
                    let r = rows.last().unwrap();
                    let _ = writeln!(lines, "{}", r.json(&adapter, contact_bytes(&rows, r)));
                    std::fs::write(path, &lines).unwrap_or_else(|e| panic!("{path}: {e}"));
                }
            }
        }
    }
    println!("\nadapter: {adapter}");
    println!("| scene | model | path | steps/s | step ms | contact ms | sets | rebuild frac | contact MiB (GPU) | readback B/step | dispatches |");
    println!("|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|");
    for r in &rows {
        let cb = contact_bytes(&rows, r)
            .map_or("–".into(), |b| format!("{:.1}", b as f64 / 1048576.0));
        println!(
            "| {} ({} pts) | {} | {} | {:.1} | {:.3} | {:.3} | {:.0} | {:.4} | {} | {:.0} | {} |{}",
            r.scene,
            r.points,
            r.model,
            r.path,
            1e3 / r.step_ms,
            r.step_ms,
            r.contact_ms,
            r.sets,
            r.rebuild_fraction,
            cb,
            r.readback,
            r.dispatches,
            if r.note.is_empty() {
                String::new()
            } else {
                format!(" {}", r.note)
            }
        );
    }
}

/// The buffer memory a contact model adds to the same scene's GPU simulation (its row's buffers
/// minus the `none` row's).
fn contact_bytes(rows: &[Row], r: &Row) -> Option<u64> {
    if r.path != "gpu" || r.model == "none" {
        return None;
    }
    let none = rows
        .iter()
        .find(|o| o.scene == r.scene && o.path == "gpu" && o.model == "none")?;
    Some(r.buffer_bytes?.saturating_sub(none.buffer_bytes?))
}
