//! The GPU step against the CPU path on any scene: steps the scene on both from the same start and
//! prints how far apart they are, so that a user (or a session without a test for that scene) can
//! check the GPU path on a scene of their own. Per step it compares the contact counts both paths
//! report (ACL: the sets, the rebuilds and the sets' touching pairs; exact: the touching pairs);
//! after each batch of GPU steps, the positions (largest component difference, in yarn radii).
//!
//! The two paths run twin kernels, so on one step they agree to f32 roundings; over a run the
//! differences grow as the cloth's dynamics amplify them (the whole-run tests in tests/gpu_step.rs
//! bound them for `tiny` at 1e-3 r after 300 steps). A count that differs from some step on is
//! expected for ACL (a set whose invalidation sits on its threshold is rebuilt on one path only);
//! the rebuilds summed over the run stay close.
//!
//! The scene starts as it is built, without its `[relax]` phase (relax a scene with `yarnsim run
//! SCENE --frames 0 --out DIR` and give a scene whose cloth is `DIR/frame_0000.bcc` to start from
//! rest). Needs a GPU adapter (lavapipe will do, slowly).
//!
//! Usage: `cargo run --release --example gpu_parity -- SCENE [STEPS] [--set key=value]...
//! [--batch N] [--every N]` (default 100 steps in batches of 20; `--every N` prints every N-th
//! step's counts, default 10; a step whose counts differ first is always printed).

#[path = "../tests/support/fixture.rs"]
mod fixture;

use anyhow::{bail, Context};
use fixture::max_rel_diff;
use yarnsim::gpu::Gpu;
use yarnsim::gpu_step::{GpuSim, MAX_BATCH};
use yarnsim::scene::{self, ContactModel, Scene};
use yarnsim::sim::Sim;

fn main() -> anyhow::Result<()> {
    let mut args = std::env::args().skip(1);
    let (mut path, mut steps, mut batch, mut every) = (None, 100usize, 20usize, 10usize);
    let mut sets = Vec::new();
    while let Some(a) = args.next() {
        let mut value = |name: &str| args.next().with_context(|| format!("{name} needs a value"));
        match a.as_str() {
            "--set" => sets.push(value("--set")?),
            "--batch" => batch = value("--batch")?.parse().context("--batch")?,
            "--every" => every = value("--every")?.parse().context("--every")?,
            _ if path.is_none() => path = Some(std::path::PathBuf::from(a)),
            _ => {
                steps = a
                    .parse()
                    .with_context(|| format!("{a}: expected a step count"))?
            }
        }
    }
    let Some(path) = path else {
        bail!("usage: gpu_parity SCENE [STEPS] [--set key=value]... [--batch N] [--every N]");
    };
    if !(1..=MAX_BATCH).contains(&batch) {
        bail!("--batch {batch}: expected 1 to {MAX_BATCH}");
    }
    let every = every.max(1);
    let mut sc = Scene::load(&path)?;
    for s in &sets {
        sc.apply_set(s).with_context(|| format!("--set {s}"))?;
    }
    let dir = path.parent().unwrap_or(std::path::Path::new("."));
    let build = scene::build_curves(&sc, dir)?;
    let pins = scene::pinned_points(&sc, &build)?;
    let mut cpu = Sim::from_build(&sc, &build, &pins)?;
    let start = cpu.pos.clone();
    let gpu = Gpu::new()?;
    println!("{}: {}", path.display(), gpu.summary());
    let mut g = GpuSim::new(&gpu, Sim::from_build(&sc, &build, &pins)?, &sc.contact)?;
    let r = cpu.params.radius;
    let model = sc.contact.model;
    println!(
        "{} control points, contact {model:?}, {steps} steps in batches of {batch}",
        cpu.pos.len()
    );

    // Per step: the counts the GPU read back and the CPU's (sets, rebuilds, touching pairs).
    let (mut first_differing, mut most_apart) = (None::<usize>, [0.0f64; 3]);
    let (mut rebuilds_gpu, mut rebuilds_cpu) = (0.0f64, 0.0f64);
    let mut done = 0usize;
    while done < steps {
        let k = batch.min(steps - done);
        g.steps(k)?;
        let gpu_counts: Vec<[f64; 3]> = match model {
            ContactModel::Acl => g
                .batch_acl_counts()
                .iter()
                .map(|c| c.map(|x| x as f64))
                .collect(),
            ContactModel::Exact => g
                .batch_touching_pairs()
                .iter()
                .map(|&t| [0.0, 0.0, t as f64])
                .collect(),
            ContactModel::None => vec![[0.0; 3]; k],
        };
        for gc in gpu_counts {
            let st = cpu.measure_steps(1, &mut || {})?;
            let get = |name: &str| {
                st.contact
                    .iter()
                    .find(|(n, _)| *n == name)
                    .map_or(0.0, |x| x.1)
            };
            let cc = [get("contact_sets"), get("rebuilds"), get("touching_pairs")];
            let apart = [0, 1, 2].map(|i| (gc[i] - cc[i]).abs());
            let newly = first_differing.is_none() && apart.iter().any(|&d| d > 0.0);
            if newly {
                first_differing = Some(done);
            }
            for (m, d) in most_apart.iter_mut().zip(apart) {
                *m = m.max(d);
            }
            rebuilds_gpu += gc[1];
            rebuilds_cpu += cc[1];
            if newly || done.is_multiple_of(every) {
                println!(
                    "step {done:>6}  sets/rebuilds/touching  GPU {:>8} {:>7} {:>8}   CPU {:>8} {:>7} {:>8}{}",
                    gc[0],
                    gc[1],
                    gc[2],
                    cc[0],
                    cc[1],
                    cc[2],
                    if newly { "   first difference" } else { "" }
                );
            }
            done += 1;
        }
        g.download()?;
        let (worst, at) = max_rel_diff(&g.sim.pos, &cpu.pos, r);
        let (moved, _) = max_rel_diff(&start, &cpu.pos, r);
        println!(
            "after {done:>6} steps: positions apart by {worst:.3e} r at most (point {at}); the cloth moved {moved:.3e} r"
        );
    }
    match first_differing {
        None => println!("counts identical at every step"),
        Some(s) => println!(
            "counts identical up to step {s}; at most apart by {} sets, {} rebuilds, {} touching pairs in a step",
            most_apart[0], most_apart[1], most_apart[2]
        ),
    }
    if model == ContactModel::Acl {
        println!("rebuilds over the run: GPU {rebuilds_gpu}, CPU {rebuilds_cpu}");
    }
    Ok(())
}
