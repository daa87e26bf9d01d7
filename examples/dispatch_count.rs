//! The dispatches the GPU step records per step for a scene under given budgets, counted without
//! running a step (on any adapter; lavapipe will do): builds a `GpuSim` of the scene under ACL with
//! the budgets set by hand and prints `GpuSim::dispatches_per_step` and the kernels by count, so
//! the quiet step a run would reach can be counted where running to it takes too long (the relaxed
//! scarf: some 14 minutes a frame on lavapipe).
//! Usage: `cargo run --release --example dispatch_count -- SCENE [KEY=N]...` with keys `rounds`
//! (rebuild rounds), `passes` (merge passes), `label_rounds`, `coalesce` (0/1), `newcomers`
//! (0: none, 1: the listed search, 2: the grid's), `indexed` (0/1), `length` (length iterations), `sets` (set capacity); unnamed budgets
//! are those of a quiet run: 1 round, pass, label round and length iteration, no coalescing,
//! newcomer search or set index. With `ORDER` set in the environment it also prints the kernels in
//! the order the step records them. Last, the GPU buffers the `GpuSim` holds, in MiB (from wgpu's
//! internal counters, where the backend keeps them).

use std::collections::BTreeMap;
use yarnsim::gpu::Gpu;
use yarnsim::gpu_step::GpuSim;
use yarnsim::scene::{self, Scene};
use yarnsim::sim::Sim;

fn main() -> anyhow::Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let path = std::path::PathBuf::from(args.first().cloned().unwrap_or("scenes/tiny.toml".into()));
    let mut keys: BTreeMap<&str, u32> = [
        ("rounds", 1),
        ("passes", 1),
        ("label_rounds", 1),
        ("coalesce", 0),
        ("newcomers", 0),
        ("indexed", 0),
        ("length", 1),
        ("sets", 0),
    ]
    .into();
    for a in &args[1.min(args.len())..] {
        let (k, v) = a
            .split_once('=')
            .ok_or_else(|| anyhow::anyhow!("{a}: expected KEY=N"))?;
        let slot = keys
            .get_mut(k)
            .ok_or_else(|| anyhow::anyhow!("{k}: no such budget"))?;
        *slot = v.parse()?;
    }
    let mut sc = Scene::load(&path)?;
    sc.apply_set("contact.model=acl")?;
    let dir = path.parent().unwrap_or(std::path::Path::new("."));
    let build = scene::build_curves(&sc, dir)?;
    let pins = scene::pinned_points(&sc, &build)?;
    let sim = Sim::from_build(&sc, &build, &pins)?;
    let gpu = Gpu::new()?;
    let mut g = GpuSim::new(&gpu, sim, &sc.contact)?;
    let mut caps = g.acl_capacities().expect("ACL");
    caps.rounds = keys["rounds"];
    caps.merge.passes = keys["passes"];
    caps.merge.rounds = keys["label_rounds"];
    caps.coalesce = keys["coalesce"];
    caps.newcomers = keys["newcomers"];
    caps.merge.indexed = keys["indexed"];
    if keys["sets"] > 0 {
        caps.merge.sets = keys["sets"];
    }
    g.set_acl_capacities(caps)?;
    g.set_length_budget(keys["length"])?;
    let mut by: BTreeMap<&str, u32> = BTreeMap::new();
    for k in g.dispatch_kernels() {
        *by.entry(k).or_default() += 1;
    }
    println!("{}: {keys:?}", path.display());
    if std::env::var_os("ORDER").is_some() {
        println!("{}", g.dispatch_kernels().join(" "));
    }
    println!(
        "{} dispatches per step in {} compute passes; by kernel: {by:?}",
        g.dispatches_per_step(),
        g.passes_per_step()
    );
    // (wgpu's internal counters; none on a backend that does not keep them.)
    if let Some(bytes) = gpu.buffer_memory() {
        println!("{:.1} MiB of GPU buffers", bytes as f64 / 1048576.0);
    }
    Ok(())
}
