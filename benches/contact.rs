//! Exact contact: time per step and touching pairs on generated swatches.
//!
//! `cargo bench --bench contact`; prints, per swatch, the touching quadrature pairs and candidate
//! segment pairs of the measured configuration.

use criterion::{criterion_group, criterion_main, Criterion};
use std::hint::black_box;
use yarnsim::contact::ExactContact;
use yarnsim::scene::{ContactModel, ContactParams, YarnMaterial};
use yarnsim::sim::{ContactForce, ContactStats};
use yarnsim::state::{Curve, Topology};

/// Stand-in swatch until the knit generator lands: a plain weave of `n` × `n` crossings.
fn swatch(n: usize) -> Vec<Curve> {
    let (spacing, amp) = (0.6f64, 0.11f64);
    let len = n as f64 * spacing;
    let m = 4 * n + 3;
    let mut curves = Vec::new();
    for j in 0..n {
        let y = (j as f64 + 0.5) * spacing;
        for dir in 0..2 {
            let pts = (0..m)
                .map(|i| {
                    let s = (i as f64 - 1.0) * len / (m - 3) as f64;
                    let z = amp
                        * (std::f64::consts::PI * s / spacing + j as f64 * std::f64::consts::PI)
                            .sin();
                    if dir == 0 {
                        [s as f32, y as f32, z as f32]
                    } else {
                        [y as f32, s as f32, -z as f32]
                    }
                })
                .collect();
            curves.push(Curve {
                points: pts,
                closed: false,
            });
        }
    }
    curves
}

fn bench(c: &mut Criterion) {
    let params = ContactParams {
        model: ContactModel::Exact,
        ..ContactParams::default()
    };
    let r = YarnMaterial::default().radius;
    for n in [20usize, 60] {
        let (topo, pos) = Topology::from_curves(&swatch(n)).unwrap();
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
