//! `cargo bench --bench gpu`: the time step on the CPU path and on the GPU path, in one run, on the
//! same scenes: the default swatch, the 20×20 drop onto a sphere, and the seed's scarf; with each
//! contact model (`none`, `exact`, `acl`). Prints steps per second on each path, ACL's sets and
//! rebuild fraction, the GPU time per kernel (timestamp queries, where the adapter has them; the
//! kernel name is the bench id), dispatches and bytes read back per step, and the adapter's name.
//!
//! `YARNSIM_BENCH_STEPS` sets the measured steps per scene and path (default 200, after 20 warm-up
//! steps); `YARNSIM_BENCH_SCENES` a comma list of scene names to run (default: swatch,drop,scarf);
//! `YARNSIM_BENCH_MODELS` a comma list of contact models (default: none,exact,acl).

use std::path::Path;
use std::time::Instant;

use yarnsim::gpu::Gpu;
use yarnsim::gpu_step::GpuSim;
use yarnsim::scene::{self, ContactParams, Scene};
use yarnsim::sim::Sim;

fn load(name: &str, model: &str) -> (Sim, ContactParams) {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("scenes");
    let mut sc = Scene::load(&dir.join(format!("{name}.toml"))).expect("scene loads");
    sc.apply_set(&format!("contact.model={model}")).unwrap();
    let build = scene::build_curves(&sc, &dir).unwrap();
    let pins = scene::pinned_points(&sc, &build).unwrap();
    let contact = sc.contact.clone();
    (Sim::from_build(&sc, &build, &pins).unwrap(), contact)
}

fn main() {
    // `cargo bench` passes `--bench`; this harness takes no arguments.
    let steps: usize = std::env::var("YARNSIM_BENCH_STEPS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(200);
    let scenes =
        std::env::var("YARNSIM_BENCH_SCENES").unwrap_or_else(|_| "swatch,drop,scarf".into());
    yarnsim::gpu::ensure_runtime_dir();
    let gpu = match Gpu::new() {
        Ok(g) => Some(g),
        Err(e) => {
            println!("no GPU adapter ({e}): CPU figures only");
            None
        }
    };
    if let Some(g) = &gpu {
        println!("adapter: {}", g.summary());
    }
    let models = std::env::var("YARNSIM_BENCH_MODELS").unwrap_or_else(|_| "none,exact,acl".into());
    let pool = rayon::ThreadPoolBuilder::new().build().unwrap();
    for name in scenes.split(',') {
        for model in models.split(',') {
            let (mut sim, m) = load(name, model);
            println!(
                "\n{name} (contact.model = {model}): {} control points, {} segments",
                sim.pos.len(),
                sim.topo.segments.len()
            );
            let cpu_rate = pool.install(|| {
                for _ in 0..20 {
                    sim.step().unwrap();
                }
                let t = Instant::now();
                for _ in 0..steps {
                    sim.step().unwrap();
                }
                steps as f64 / t.elapsed().as_secs_f64()
            });
            println!("  cpu: {cpu_rate:>9.1} steps/s");
            let Some(g) = &gpu else { continue };
            let (fresh, _) = load(name, model);
            let mut gs = match GpuSim::new(g, fresh, &m) {
                Ok(gs) => gs,
                Err(e) => {
                    println!("  gpu: not run: {e}");
                    continue;
                }
            };
            for _ in 0..20 {
                gs.step().unwrap();
            }
            // A frame's worth of steps, timed as a whole and per kernel.
            gs.sim.params.steps_per_frame = steps as u32;
            let t = Instant::now();
            let (stats, times) = gs.frame().unwrap();
            let gpu_rate = steps as f64 / t.elapsed().as_secs_f64();
            println!(
                "  gpu: {gpu_rate:>9.1} steps/s ({:.2}× the CPU), {} dispatches and {} bytes read back per step",
                gpu_rate / cpu_rate,
                times.dispatches_per_step,
                times.readback_bytes_per_step
            );
            for (k, v) in &stats.contact {
                println!("    {k:<24} {v:>12.3} per step");
            }
            if times.timed {
                // (`kernel_ms` is already per step: the mean over the frame's timed steps.)
                for (k, ms) in &times.kernel_ms {
                    println!("    {k:<24} {ms:>9.4} ms/step");
                }
            } else {
                println!("    (no timestamp queries on this adapter: no per-kernel times)");
            }
        }
    }
}
