//! Exact contact vs adaptive contact linearization (τ = 0.04) on one scene: a stockinette swatch of
//! 50 × 40 = 2,000 loops falling onto a plane. Criterion times the whole simulation step for each
//! model; the contact model's own counters (contact time per step, rebuild fraction, schedule entries
//! tracked / examined / processed) are averaged over the timed steps and printed.
//!
//! The swatch is damped over 4 × 4-loop blocks in two phases, as a generated scene piece is
//! (`acl_support::bench_swatch_sim`; until 2026-11-28 its one yarn was a single block).
//! Both models start from the same state: the generated swatch, released 0.3 cm above the plane at
//! 30 cm/s, after 60 steps with the exact force (the generator's shape relaxes in the first steps).
//! Each model then runs 20 untimed steps (ACL builds all its contact sets on its first step) before
//! criterion starts timing; the simulation keeps falling while it is timed.

#[path = "../tests/acl_support/mod.rs"]
mod acl_support;

use criterion::{criterion_group, criterion_main, Criterion};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use yarnsim::acl::AclContact;
use yarnsim::contact::ExactContact;
use yarnsim::sim::{ContactError, ContactForce, ContactStats};
use yarnsim::state::Topology;

const WALES: u32 = acl_support::BENCH_SWATCH.0;
const COURSES: u32 = acl_support::BENCH_SWATCH.1;
// The issue asks for a swatch of at least 2,000 loops.
const _: () = assert!(WALES * COURSES >= 2000);

type Log = Arc<Mutex<Vec<Vec<(&'static str, f64)>>>>;

/// Passes the contact force through and keeps each step's statistics.
struct Recorder {
    inner: Box<dyn ContactForce>,
    log: Log,
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
        self.inner.add_forces(topo, pos, vel, force, stats)?;
        self.log.lock().unwrap().push(stats.values.clone());
        Ok(())
    }
}

fn mean(log: &[Vec<(&'static str, f64)>], name: &str) -> f64 {
    let v: Vec<f64> = log
        .iter()
        .filter_map(|s| s.iter().find(|(n, _)| *n == name).map(|x| x.1))
        .collect();
    if v.is_empty() {
        f64::NAN
    } else {
        v.iter().sum::<f64>() / v.len() as f64
    }
}

fn bench_acl(c: &mut Criterion) {
    let scene = acl_support::bench_swatch_scene();
    let r = scene.yarn.radius;
    let curves = acl_support::flat_swatch(WALES, COURSES, r, 0.3);
    // The common starting state.
    let (pos0, vel0) = {
        let exact = ExactContact::new(r, &scene.contact).expect("exact");
        let mut sim =
            acl_support::bench_swatch_sim(&scene, &curves, &[], Box::new(exact)).expect("sim");
        for v in &mut sim.vel {
            v[1] = -30.0;
        }
        for _ in 0..60 {
            sim.step().expect("warm-up step");
        }
        (sim.pos.clone(), sim.vel.clone())
    };
    let pool = rayon::ThreadPoolBuilder::new()
        .build()
        .expect("thread pool");
    let mut group = c.benchmark_group("acl_vs_exact_2000_loops");
    group.sample_size(10);
    group.measurement_time(Duration::from_secs(20));
    group.warm_up_time(Duration::from_secs(2));
    let mut summary = Vec::new();
    for name in ["exact", "acl"] {
        let model: Box<dyn ContactForce> = match name {
            "exact" => Box::new(ExactContact::new(r, &scene.contact).expect("exact")),
            _ => Box::new(AclContact::new(r, &scene.contact).expect("acl")),
        };
        let log: Log = Arc::new(Mutex::new(Vec::new()));
        let rec = Recorder {
            inner: model,
            log: log.clone(),
        };
        let mut sim =
            acl_support::bench_swatch_sim(&scene, &curves, &[], Box::new(rec)).expect("sim");
        sim.pos.copy_from_slice(&pos0);
        sim.vel.copy_from_slice(&vel0);
        for _ in 0..20 {
            sim.step().expect("step");
        }
        log.lock().unwrap().clear();
        let t0 = std::time::Instant::now();
        let steps0 = sim.steps;
        // Each step runs on a worker of `pool`, as `yarnsim run` runs: its parallel stages then start
        // on the calling worker rather than waking the pool from outside.
        group.bench_function(name, |b| {
            b.iter(|| pool.install(|| sim.step().expect("step")))
        });
        let wall = t0.elapsed().as_secs_f64() * 1e3 / (sim.steps - steps0).max(1) as f64;
        let log = log.lock().unwrap().clone();
        summary.push((name, log, wall, sim.steps - steps0, sim.pos.len()));
    }
    group.finish();
    println!("\n2,000-loop swatch ({WALES} × {COURSES}) falling onto a plane, τ = 0.04; means over the timed steps:");
    let contact_exact = mean(&summary[0].1, "contact_ms");
    let step_exact = summary[0].2;
    for (name, log, wall, steps, points) in &summary {
        println!(
            "  {name:5}: {steps} steps, {points} control points; whole step {wall:.2} ms, contact {:.2} ms",
            mean(log, "contact_ms")
        );
        if *name == "acl" {
            println!(
                "         contact sets {:.0}, rebuild fraction {:.4} per step ({:.1} rebuilds), touching pairs {:.0}",
                mean(log, "contact_sets"),
                mean(log, "rebuild_fraction"),
                mean(log, "rebuilds"),
                mean(log, "touching_pairs")
            );
            println!(
                "         schedule entries tracked {:.0}, examined {:.0}, processed {:.1} per step",
                mean(log, "entries_tracked"),
                mean(log, "entries_examined"),
                mean(log, "entries_processed")
            );
            println!(
                "         phases (ms): raster {:.3}, newcomers {:.3}, schedule {:.3}, coalesce {:.3}, evaluate {:.3}, rebuild {:.3}",
                mean(log, "raster_ms"),
                mean(log, "newcomers_ms"),
                mean(log, "schedule_ms"),
                mean(log, "coalesce_ms"),
                mean(log, "evaluate_ms"),
                mean(log, "rebuild_ms")
            );
            println!(
                "         speedup: contact {:.2}x, whole step {:.2}x",
                contact_exact / mean(log, "contact_ms"),
                step_exact / wall
            );
        } else {
            println!("         touching pairs {:.0}", mean(log, "touching_pairs"));
        }
    }
}

criterion_group!(benches, bench_acl);
criterion_main!(benches);
