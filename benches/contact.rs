//! Exact contact: time per step and touching pairs on generated swatches.
//!
//! `cargo bench --bench contact`; prints, per swatch, the touching quadrature pairs and candidate
//! segment pairs of the measured configuration.

use criterion::{criterion_group, criterion_main, Criterion};
use std::hint::black_box;
use yarnsim::contact::ExactContact;
use yarnsim::knit;
use yarnsim::scene::{ContactModel, ContactParams, Pattern, YarnMaterial};
use yarnsim::sim::{ContactForce, ContactStats};
use yarnsim::state::{Curve, Topology};

/// A flat stockinette swatch of `n` × `n` loops at the seed's yarn radius, in its rest shape.
fn swatch(n: u32, r: f32) -> Vec<Curve> {
    knit::generate(Pattern::Stockinette, n, n, r)
        .unwrap()
        .curves
}

fn bench(c: &mut Criterion) {
    let params = ContactParams {
        model: ContactModel::Exact,
        ..ContactParams::default()
    };
    let r = YarnMaterial::default().radius;
    for n in [20u32, 60, 100] {
        let (topo, pos) = Topology::from_curves(&swatch(n, r)).unwrap();
        let mut exact = ExactContact::new(r, &params).unwrap();
        let mut force = vec![[0.0f32; 4]; pos.len()];
        let mut stats = ContactStats::default();
        exact
            .add_forces(&topo, &pos, &pos, &mut force, &mut stats)
            .unwrap();
        eprintln!(
            "swatch {n}x{n}: {} segments, {} touching pairs, {} candidate segment pairs",
            topo.segments.len(),
            exact.last_touching(),
            exact.candidates().len()
        );
        c.bench_function(&format!("exact_contact_step_{n}x{n}"), |b| {
            b.iter(|| {
                exact
                    .add_forces(&topo, &pos, &pos, &mut force, &mut stats)
                    .unwrap();
                black_box(&force);
            })
        });
    }
}

criterion_group! {
    name = benches;
    config = Criterion::default().sample_size(10);
    targets = bench
}
criterion_main!(benches);
