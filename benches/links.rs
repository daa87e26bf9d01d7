//! Linking certificates of generated knit tubes (closed courses): the crossing count against the
//! direct Gauss sum.
//!
//! `cargo bench --bench links`. The 104 × 70 tube has 58,240 control points in 70 closed loops, the
//! size of the published garment model of issue 11; the 268 × 154 tube is `scenes/sack.toml`'s
//! cloth. The direct sum is only measured on a small tube (it is quadratic in the loop length: about
//! 14 CPU-seconds per pair of sack courses).

use criterion::{criterion_group, criterion_main, Criterion};
use std::hint::black_box;
use yarnsim::knit;
use yarnsim::links::{certificate_with, Method};
use yarnsim::scene::{Pattern, YarnMaterial};
use yarnsim::state::Curve;

fn tube(wales: u32, courses: u32) -> Vec<Curve> {
    knit::generate(
        Pattern::Tube,
        wales,
        courses,
        YarnMaterial::default().radius,
    )
    .unwrap()
    .curves
}

fn bench(c: &mut Criterion) {
    let small = tube(16, 6);
    for (name, method) in [("crossings", Method::Crossings), ("direct", Method::Direct)] {
        c.bench_function(&format!("links_{name}_tube_16x6"), |b| {
            b.iter(|| black_box(certificate_with(&small, method).unwrap()))
        });
    }
    for (w, h) in [(104u32, 70u32), (268, 154)] {
        let t = tube(w, h);
        c.bench_function(&format!("links_crossings_tube_{w}x{h}"), |b| {
            b.iter(|| black_box(certificate_with(&t, Method::Crossings).unwrap()))
        });
    }
}

criterion_group! {
    name = benches;
    config = Criterion::default().sample_size(10);
    targets = bench
}
criterion_main!(benches);
