//! What a scene's first ACL steps on the GPU need of each capacity, per segment: builds a `GpuSim`
//! of the scene (as built, no relaxation) under ACL with every capacity at 16, runs a few steps
//! (each overflow grows the capacity to its count and a quarter more, and reruns), and prints the
//! capacities it grew to, divided by the scene's segments, next to `AclCaps::for_segments`'
//! estimates. This is how the first capacities' per-segment factors are checked.
//! Usage: `cargo run --release --example first_caps -- SCENE [STEPS]` (default 8 steps).

use yarnsim::acl::gpu::AclCaps;
use yarnsim::gpu::Gpu;
use yarnsim::gpu_step::GpuSim;
use yarnsim::scene::{self, Scene};
use yarnsim::sim::Sim;

fn main() -> anyhow::Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let path = std::path::PathBuf::from(args.first().cloned().unwrap_or("scenes/tiny.toml".into()));
    let steps: usize = args.get(1).map(|s| s.parse()).transpose()?.unwrap_or(8);
    let mut sc = Scene::load(&path)?;
    sc.apply_set("contact.model=acl")?;
    let dir = path.parent().unwrap_or(std::path::Path::new("."));
    let build = scene::build_curves(&sc, dir)?;
    let pins = scene::pinned_points(&sc, &build)?;
    let sim = Sim::from_build(&sc, &build, &pins)?;
    let nseg = sim.topo.segments.len() as u32;
    let gpu = Gpu::new()?;
    let mut g = GpuSim::new(&gpu, sim, &sc.contact)?;
    let first = g.acl_capacities().expect("ACL");
    g.set_acl_capacities(AclCaps {
        rounds: first.rounds,
        coalesce: first.coalesce,
        newcomers: first.newcomers,
        merge: yarnsim::acl::merge_gpu::MergeCaps {
            rounds: first.merge.rounds,
            passes: first.merge.passes,
            indexed: first.merge.indexed,
            ..AclCaps::all(16).merge
        },
        ..AclCaps::all(16)
    })?;
    g.steps(steps)?;
    let grown = g.acl_capacities().expect("ACL");
    let estimate = AclCaps::for_segments(nseg);
    println!(
        "{}: {nseg} segments, {steps} steps, {} growths",
        path.display(),
        g.capacity_grows()
    );
    let rows = |c: &AclCaps| {
        [
            ("sched.entries", c.sched.entries),
            ("sched.grid", c.sched.grid),
            ("sched.cand", c.sched.cand),
            ("sched.fresh", c.sched.fresh),
            ("sched.touching", c.sched.touching),
            ("sched.lookup_words", c.sched.lookup_words),
            ("merge.sets", c.merge.sets),
            ("points", c.points),
            ("blocks", c.blocks),
            ("watch", c.watch),
            ("terms", c.terms),
            ("records", c.records),
        ]
    };
    println!(
        "{:<20} {:>12} {:>10} {:>12} {:>10}",
        "capacity", "grown to", "/segment", "estimate", "/segment"
    );
    for ((name, need), (_, est)) in rows(&grown).into_iter().zip(rows(&estimate)) {
        println!(
            "{name:<20} {need:>12} {:>10.2} {est:>12} {:>10.2}",
            need as f64 / nseg as f64,
            est as f64 / nseg as f64
        );
    }
    Ok(())
}
