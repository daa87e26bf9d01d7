//! The CPU time step without yarn–yarn contact on a 20×20-loop swatch, hanging from its top course
//! under gravity (rod forces, glue and length projection, damping, frames all do real work).
//! Criterion reports the throughput in steps per second ("elem/s").

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use yarnsim::scene::{ContactModel, Scene};
use yarnsim::sim::Sim;
use yarnsim::state::Curve;

/// Stand-in for `knit::generate(Stockinette, 20, 20, r)` until the generator lands on this branch: 20
/// courses of 20 loops each, 8 control points per loop, damping blocks of 4×4 loops, and the control
/// points of the top course glued.
fn swatch() -> (Vec<Curve>, Vec<u32>, Vec<u32>) {
    let (wales, courses, per_loop) = (20usize, 20usize, 8usize);
    let mut curves = Vec::new();
    let mut blocks = Vec::new();
    let mut pins = Vec::new();
    let mut first = 0u32;
    for c in 0..courses {
        let n = wales * per_loop + 3;
        let points = (0..n)
            .map(|i| {
                let a = (i as f32 - 1.0) / per_loop as f32 * std::f32::consts::TAU;
                [
                    0.6 * a / std::f32::consts::TAU - 0.25 * a.sin() - 6.0,
                    c as f32 * 0.5 + 0.3 * a.cos() - 5.0,
                    0.12 * (a + c as f32).sin(),
                ]
            })
            .collect();
        curves.push(Curve {
            points,
            closed: false,
        });
        blocks.extend((0..n).map(|i| ((c / 4) * 100 + (i / per_loop) / 4) as u32));
        if c == courses - 1 {
            pins.extend(first..first + n as u32);
        }
        first += n as u32;
    }
    (curves, blocks, pins)
}

fn bench_step(c: &mut Criterion) {
    let (curves, blocks, pins) = swatch();
    let mut scene = Scene::default();
    scene.contact.model = ContactModel::None;
    let mut sim = Sim::from_scene(&scene, &curves, &blocks, &pins).expect("swatch builds");
    let mut group = c.benchmark_group("cpu_step");
    group.throughput(Throughput::Elements(1));
    group.bench_function("stockinette_20x20_no_contact", |b| {
        b.iter(|| sim.step().expect("step"))
    });
    group.finish();
}

criterion_group!(benches, bench_step);
criterion_main!(benches);
