//! The CPU time step without yarn–yarn contact on a 20×20-loop swatch, hanging from its top course
//! under gravity (rod forces, glue and length projection, damping, frames all do real work).
//! Criterion reports the throughput in steps per second ("elem/s").

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use std::path::Path;

use yarnsim::scene::{
    build_curves, ClothBuild, ClothPiece, ClothSource, ContactModel, Pattern, Scene,
};
use yarnsim::sim::Sim;

/// A 20 × 20-loop stockinette swatch as a scene builds it (generator curves, 4×4-loop damping
/// blocks), hanging from the heads of its top course (every control point within 0.5 cm of the top).
fn swatch(scene: &mut Scene) -> (ClothBuild, Vec<u32>) {
    scene.cloth.push(ClothPiece {
        source: ClothSource::Generator {
            pattern: Pattern::Stockinette,
            wales: 20,
            courses: 20,
            section: None,
        },
        scale: 1.0,
        rotate_deg: [0.0; 3],
        translate: [0.0; 3],
    });
    let build = build_curves(scene, Path::new(".")).expect("swatch builds");
    let top = build
        .curves
        .iter()
        .flat_map(|c| c.points.iter())
        .map(|p| p[1])
        .fold(f32::MIN, f32::max);
    let pins = build
        .curves
        .iter()
        .flat_map(|c| c.points.iter())
        .enumerate()
        .filter(|(_, p)| p[1] > top - 0.5)
        .map(|(i, _)| i as u32)
        .collect();
    (build, pins)
}

fn bench_step(c: &mut Criterion) {
    let mut scene = Scene::default();
    scene.contact.model = ContactModel::None;
    let (build, pins) = swatch(&mut scene);
    let mut sim = Sim::from_build(&scene, &build, &pins).expect("simulation builds");
    eprintln!(
        "{} loops, {} control points, {} pinned",
        build.loops,
        sim.pos.len(),
        pins.len()
    );
    let mut group = c.benchmark_group("cpu_step");
    group.throughput(Throughput::Elements(1));
    let pool = rayon::ThreadPoolBuilder::new()
        .build()
        .expect("thread pool");
    group.bench_function("stockinette_20x20_no_contact", |b| {
        // On a worker of `pool`, as `yarnsim run` steps (see benches/acl.rs).
        b.iter(|| pool.install(|| sim.step().expect("step")))
    });
    group.finish();
}

criterion_group!(benches, bench_step);
criterion_main!(benches);
