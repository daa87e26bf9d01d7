//! What the GPU step's quiet-stretch budgets would see, from the CPU path: runs a scene (or a saved
//! state of it) under ACL on the CPU path and prints, per step, the counts the GPU host's budget
//! cuts look at (`AclGpu::fewer_rounds`, `fewer_coalesce`, `fewer_newcomers`, `fewer_indexed`):
//! the rebuild rounds that had dirty sets, the scheduler's touching pairs of empty space, whether
//! a segment entered a grid cell, the sets rebuilt and merged. Ends with a summary: how many
//! steps needed a second round, coalescing or the newcomer search, and how many batches of 8, 16,
//! 32 and 64 steps had none. The CPU path and the GPU step take the same decisions (their kernels
//! are twins), so this is what a GPU run of the same steps would read back, without a GPU.
//! Usage: `cargo run --release --example acl_budgets -- STEPS SCENE [STATE.bcc] [--set k=v]...`
//! (with a state: the scene's cloth starts there, at rest; `--every N` prints every N-th step).

use std::sync::{Arc, Mutex};
use yarnsim::acl::{AclContact, AclStepStats};
use yarnsim::scene::Scene;
use yarnsim::sim::{ContactError, ContactForce, ContactStats, Sim};
use yarnsim::state::Topology;

/// Whether a step had an event that some budget cut waits for the absence of.
type Event = fn(&AclStepStats) -> bool;

struct Logged {
    inner: AclContact,
    log: Arc<Mutex<Vec<AclStepStats>>>,
}

impl ContactForce for Logged {
    fn add_forces(
        &mut self,
        topo: &Topology,
        pos: &[[f32; 4]],
        vel: &[[f32; 4]],
        force: &mut [[f32; 4]],
        stats: &mut ContactStats,
    ) -> Result<(), ContactError> {
        self.inner.add_forces(topo, pos, vel, force, stats)?;
        self.log.lock().unwrap().push(self.inner.last_stats());
        Ok(())
    }
}

fn main() -> anyhow::Result<()> {
    let pool = rayon::ThreadPoolBuilder::new().build()?;
    pool.install(run)
}

fn run() -> anyhow::Result<()> {
    let mut args: Vec<String> = std::env::args().skip(1).collect();
    let mut sets = Vec::new();
    let mut every = 1usize;
    while let Some(i) = args.iter().position(|a| a == "--set" || a == "--every") {
        let v = args.remove(i + 1);
        if args.remove(i) == "--set" {
            sets.push(v);
        } else {
            every = v.parse()?;
        }
    }
    let steps: usize = args.first().map(|s| s.parse()).transpose()?.unwrap_or(100);
    let scene_path =
        std::path::PathBuf::from(args.get(1).cloned().unwrap_or("scenes/tiny.toml".into()));
    let mut scene = Scene::load(&scene_path)?;
    for s in &sets {
        scene.apply_set(s)?;
    }
    scene.contact.model = yarnsim::scene::ContactModel::Acl;
    let dir = scene_path.parent().unwrap_or(std::path::Path::new("."));
    let build = yarnsim::scene::build_curves(&scene, dir)?;
    let pins = yarnsim::scene::pinned_points(&scene, &build)?;
    let log = Arc::new(Mutex::new(Vec::new()));
    let acl = Logged {
        inner: AclContact::new(scene.yarn.radius, &scene.contact)?,
        log: log.clone(),
    };
    let phases = [
        build.damping_block.as_slice(),
        build.damping_block_shifted.as_slice(),
    ];
    let mut sim = Sim::with_damping_phases(&scene, &build.curves, &phases, &pins, Box::new(acl))?;
    if let Some(state) = args.get(2) {
        let saved = yarnsim::bcc::read(std::path::Path::new(state))?;
        let pos: Vec<[f32; 4]> = saved
            .iter()
            .flat_map(|c| c.points.iter().map(|p| [p[0], p[1], p[2], 0.0]))
            .collect();
        anyhow::ensure!(
            pos.len() == sim.pos.len(),
            "{state}: {} points, the scene has {}",
            pos.len(),
            sim.pos.len()
        );
        sim.pos.copy_from_slice(&pos);
        sim.vel.iter_mut().for_each(|v| *v = [0.0; 4]);
    }
    println!("step rounds merge_passes new_pairs entered rebuilds merges sets");
    for n in 0..steps {
        sim.step()?;
        let st = *log.lock().unwrap().last().unwrap();
        if n % every == 0
            || st.rebuild_rounds > 1
            || st.merge_passes > 1
            || st.new_pairs > 0
            || st.newcomer_steps > 0
        {
            println!(
                "{n} {} {} {} {} {} {} {}",
                st.rebuild_rounds,
                st.merge_passes,
                st.new_pairs,
                st.newcomer_steps,
                st.rebuilds,
                st.merges,
                st.contact_sets
            );
        }
    }
    let log = log.lock().unwrap();
    // The events each budget cut waits for the absence of.
    let events: [(&str, Event); 4] = [
        ("a second round", |s| s.rebuild_rounds > 1),
        ("a second merge pass", |s| s.merge_passes > 1),
        ("new pairs", |s| s.new_pairs > 0),
        ("a segment entering a cell", |s| s.newcomer_steps > 0),
    ];
    let counts: Vec<String> = events
        .iter()
        .map(|(name, f)| format!("{name} in {}", log.iter().filter(|s| f(s)).count()))
        .collect();
    println!("{} steps: {}", log.len(), counts.join(", "));
    // Skip the first step (a fresh ACL builds every set there).
    let quiet = &log[1.min(log.len())..];
    for b in [8usize, 16, 32, 64] {
        let batches: Vec<&[AclStepStats]> = quiet.chunks_exact(b).collect();
        let without: Vec<String> = events
            .iter()
            .map(|(name, f)| {
                let n = batches.iter().filter(|c| !c.iter().any(f)).count();
                format!("without {name} {n}")
            })
            .collect();
        println!(
            "batches of {b}: {} in all; {}",
            batches.len(),
            without.join(", ")
        );
    }
    Ok(())
}
