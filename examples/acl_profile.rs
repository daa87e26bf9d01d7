//! Profiling driver for the ACL benchmark scene (benches/acl.rs): the 50 × 40 stockinette swatch
//! falling onto a plane, τ = 0.04. Runs `STEPS` steps of exact and of ACL contact (same start state,
//! back to back in one process) and prints the mean contact time per step, whole-step time and ACL's
//! phase times and counters. Usage: `cargo run --release --example acl_profile -- [steps] [acl|exact|both]
//! [SCENE STATE.bcc]`. With a scene and a saved state of it (a frame written by `yarnsim run --out`),
//! both models start from that state instead (at rest: a BCC file holds no velocities), with the
//! scene's pins, damping blocks and obstacles.

#[path = "../tests/acl_support/mod.rs"]
mod acl_support;

use std::sync::{Arc, Mutex};
use yarnsim::acl::AclContact;
use yarnsim::contact::ExactContact;
use yarnsim::scene::Scene;
use yarnsim::sim::{ContactError, ContactForce, ContactStats, Sim};
use yarnsim::state::Topology;

type Log = Arc<Mutex<Vec<Vec<(&'static str, f64)>>>>;

struct Recorder {
    inner: Box<dyn ContactForce>,
    log: Log,
    time: Arc<Mutex<f64>>,
}

impl ContactForce for Recorder {
    fn add_forces(
        &mut self,
        topo: &Topology,
        pos: &[[f32; 4]],
        vel: &[[f32; 4]],
        force: &mut [[f32; 4]],
        stats: &mut ContactStats,
    ) -> Result<(), ContactError> {
        let t = std::time::Instant::now();
        self.inner.add_forces(topo, pos, vel, force, stats)?;
        *self.time.lock().unwrap() += t.elapsed().as_secs_f64();
        self.log.lock().unwrap().push(stats.values.clone());
        Ok(())
    }
}

/// CPU time of the whole process (all threads), seconds, from /proc/self/stat (Linux; 0 elsewhere).
/// Less sensitive than wall-clock time to other processes competing for the cores.
fn cpu_time() -> f64 {
    let Ok(stat) = std::fs::read_to_string("/proc/self/stat") else {
        return 0.0;
    };
    // Fields after the parenthesised command name; utime and stime are fields 14 and 15.
    let rest = stat.rsplit(')').next().unwrap_or("");
    let f: Vec<&str> = rest.split_whitespace().collect();
    let ticks: f64 = f.get(11).and_then(|x| x.parse().ok()).unwrap_or(0.0)
        + f.get(12).and_then(|x| x.parse().ok()).unwrap_or(0.0);
    ticks / 100.0
}

/// ACL with a snapshot of its live sets after every step: `[n_cp, box rows, box columns, touching]`.
struct AclSnapshot {
    inner: AclContact,
    snap: Arc<Mutex<Vec<[u32; 4]>>>,
}

impl ContactForce for AclSnapshot {
    fn add_forces(
        &mut self,
        topo: &Topology,
        pos: &[[f32; 4]],
        vel: &[[f32; 4]],
        force: &mut [[f32; 4]],
        stats: &mut ContactStats,
    ) -> Result<(), ContactError> {
        self.inner.add_forces(topo, pos, vel, force, stats)?;
        let mut v = self.snap.lock().unwrap();
        v.clear();
        v.extend(self.inner.sets().iter().filter(|s| s.n_cp > 0).map(|s| {
            [
                s.n_cp,
                s.bx[1] - s.bx[0] + 1,
                s.bx[3] - s.bx[2] + 1,
                s.touching,
            ]
        }));
        Ok(())
    }
}

fn mean(log: &[Vec<(&'static str, f64)>], name: &str) -> f64 {
    let v: Vec<f64> = log
        .iter()
        .filter_map(|s| s.iter().find(|(n, _)| *n == name).map(|x| x.1))
        .collect();
    v.iter().sum::<f64>() / v.len().max(1) as f64
}

fn main() -> anyhow::Result<()> {
    // On a worker of its own pool, as `yarnsim run` runs.
    let pool = rayon::ThreadPoolBuilder::new().build()?;
    pool.install(run)
}

fn run() -> anyhow::Result<()> {
    let args: Vec<String> = std::env::args().collect();
    let steps: u64 = args.get(1).map(|s| s.parse()).transpose()?.unwrap_or(40);
    let which = args.get(2).cloned().unwrap_or_else(|| "both".into());
    // The scene, its curves, damping phases and pins, and the common starting state.
    let (scene, curves, phases, pins, pos0, vel0) = match (args.get(3), args.get(4)) {
        (Some(scene_path), Some(state)) => {
            let path = std::path::Path::new(scene_path);
            let scene = Scene::load(path)?;
            let dir = path.parent().unwrap_or(std::path::Path::new("."));
            let build = yarnsim::scene::build_curves(&scene, dir)?;
            let pins = yarnsim::scene::pinned_points(&scene, &build)?;
            let saved = yarnsim::bcc::read(std::path::Path::new(state))?;
            let pos0: Vec<[f32; 4]> = saved
                .iter()
                .flat_map(|c| c.points.iter().map(|p| [p[0], p[1], p[2], 0.0]))
                .collect();
            let vel0 = vec![[0.0f32; 4]; pos0.len()];
            let phases = vec![
                build.damping_block.clone(),
                build.damping_block_shifted.clone(),
            ];
            (scene, build.curves, phases, pins, pos0, vel0)
        }
        _ => {
            let scene = acl_support::bench_swatch_scene();
            let r = scene.yarn.radius;
            // The bench scene of benches/acl.rs: 50 × 40 loops lying 0.3 cm above the plane.
            let (w, c) = acl_support::BENCH_SWATCH;
            let curves = acl_support::flat_swatch(w, c, r, 0.3);
            let exact = ExactContact::new(r, &scene.contact)?;
            let mut sim = acl_support::bench_swatch_sim(&scene, &curves, &[], Box::new(exact))?;
            for v in &mut sim.vel {
                v[1] = -30.0;
            }
            for _ in 0..60 {
                sim.step()?;
            }
            let (pos0, vel0) = (sim.pos.clone(), sim.vel.clone());
            let phases =
                acl_support::flat_swatch_blocks(w, c, r, scene.yarn.damping_block_loops).to_vec();
            (scene, curves, phases, Vec::new(), pos0, vel0)
        }
    };
    let r = scene.yarn.radius;
    let phase_refs: Vec<&[u32]> = phases.iter().map(|p| p.as_slice()).collect();
    let snap: Arc<Mutex<Vec<[u32; 4]>>> = Arc::new(Mutex::new(Vec::new()));
    for name in ["exact", "acl"] {
        if which != "both" && which != name {
            continue;
        }
        let model: Box<dyn ContactForce> = match name {
            "exact" => Box::new(ExactContact::new(r, &scene.contact)?),
            _ => Box::new(AclSnapshot {
                inner: AclContact::new(r, &scene.contact)?,
                snap: snap.clone(),
            }),
        };
        let log: Log = Arc::new(Mutex::new(Vec::new()));
        let time = Arc::new(Mutex::new(0.0));
        let rec = Recorder {
            inner: model,
            log: log.clone(),
            time: time.clone(),
        };
        let mut sim = if phase_refs.is_empty() {
            Sim::new(&scene, &curves, &[], &pins, Box::new(rec))?
        } else {
            Sim::with_damping_phases(&scene, &curves, &phase_refs, &pins, Box::new(rec))?
        };
        sim.pos.copy_from_slice(&pos0);
        sim.vel.copy_from_slice(&vel0);
        for _ in 0..20 {
            sim.step()?;
        }
        log.lock().unwrap().clear();
        *time.lock().unwrap() = 0.0;
        let t0 = std::time::Instant::now();
        let c0 = cpu_time();
        for _ in 0..steps {
            sim.step()?;
        }
        let wall = t0.elapsed().as_secs_f64() * 1e3 / steps as f64;
        let cpu = (cpu_time() - c0) * 1e3 / steps as f64;
        let contact = *time.lock().unwrap() * 1e3 / steps as f64;
        let log = log.lock().unwrap().clone();
        // Fingerprint of the final state: equal fingerprints mean bitwise equal trajectories.
        let fp = sim
            .pos
            .iter()
            .flatten()
            .fold(0xcbf2_9ce4_8422_2325u64, |h, x| {
                (h ^ x.to_bits() as u64).wrapping_mul(0x0100_0000_01b3)
            });
        println!("{name:5}: state fingerprint {fp:016x}");
        println!("{name:5}: whole step cpu {cpu:.2} ms, wall {wall:.2} ms, contact (measured around add_forces) {contact:.2} ms, contact_ms stat {:.2}", mean(&log, "contact_ms"));
        if name == "acl" {
            let v = snap.lock().unwrap().clone();
            let n = v.len().max(1) as f64;
            let m = |k: usize| v.iter().map(|x| x[k] as f64).sum::<f64>() / n;
            let blocks = v
                .iter()
                .map(|x| (x[0] * (x[0] + 1) / 2) as f64)
                .sum::<f64>()
                / n;
            println!(
                "  live sets at the end {}: mean control points {:.1} ({blocks:.0} blocks), box {:.1} × {:.1}, touching pairs {:.1}, {} with none",
                v.len(),
                m(0),
                m(1),
                m(2),
                m(3),
                v.iter().filter(|x| x[3] == 0).count()
            );
            println!(
                "  sets {:.0}, rebuild fraction {:.4} ({:.1} rebuilds), touching pairs {:.0}; entries tracked {:.0}, examined {:.0}, processed {:.1}",
                mean(&log, "contact_sets"),
                mean(&log, "rebuild_fraction"),
                mean(&log, "rebuilds"),
                mean(&log, "touching_pairs"),
                mean(&log, "entries_tracked"),
                mean(&log, "entries_examined"),
                mean(&log, "entries_processed")
            );
            println!(
                "  phases (ms): raster {:.3}, newcomers {:.3}, schedule {:.3}, coalesce {:.3}, evaluate {:.3}, rebuild {:.3}",
                mean(&log, "raster_ms"),
                mean(&log, "newcomers_ms"),
                mean(&log, "schedule_ms"),
                mean(&log, "coalesce_ms"),
                mean(&log, "evaluate_ms"),
                mean(&log, "rebuild_ms")
            );
        } else {
            println!("  touching pairs {:.0}", mean(&log, "touching_pairs"));
        }
    }
    Ok(())
}
