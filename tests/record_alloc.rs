//! Counting rebuilds for `--color updates` (`Sim::record_rebuilds`) runs inside the step loop, so it
//! must not allocate: a counting global allocator watches warmed-up steps of the tiny swatch with the
//! exact model recording, and ACL's per-step count on its own. One rayon worker, as in
//! tests/step_alloc.rs (rayon's first cross-thread steals may allocate queue space).

use std::path::Path;

use yarnsim::acl::AclContact;
use yarnsim::scene::{self, ContactModel, Scene};
use yarnsim::sim::{ContactForce, ContactStats, SegmentValue, Sim};
use yarnsim::state::Topology;

#[path = "support/alloc.rs"]
mod alloc;

#[test]
fn recording_rebuilds_does_not_allocate() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("scenes/tiny.toml");
    let mut scene = Scene::load(&path).unwrap();
    scene.contact.model = ContactModel::Exact;
    let build = scene::build_curves(&scene, path.parent().unwrap()).unwrap();
    let pins = scene::pinned_points(&scene, &build).unwrap();
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(1)
        .build()
        .unwrap();
    pool.install(|| {
        let mut sim = Sim::from_build(&scene, &build, &pins).unwrap();
        sim.record_rebuilds(true);
        for _ in 0..5 {
            sim.step().unwrap();
        }
        assert_eq!(
            alloc::count(|| {
                for _ in 0..30 {
                    sim.step().unwrap();
                }
            })
            .1,
            0,
            "exact model, recording"
        );
        // It did record: the swatch is in contact.
        let mut v = Vec::new();
        assert!(sim.segment_values(SegmentValue::Rebuilds, &mut v).unwrap());
        assert!(v.contains(&35.0));

        let (topo, pos) = Topology::from_curves(&build.curves).unwrap();
        let mut acl = AclContact::new(scene.yarn.radius, &scene.contact).unwrap();
        let mut force = vec![[0.0f32; 4]; pos.len()];
        let vel = vec![[0.0f32; 4]; pos.len()];
        acl.add_forces(&topo, &pos, &vel, &mut force, &mut ContactStats::default())
            .unwrap();
        let mut counts = vec![0.0f32; topo.segments.len()];
        assert_eq!(
            alloc::count(|| assert!(acl.add_step_rebuilds(&topo, &mut counts))).1,
            0,
            "ACL rebuild count"
        );
        assert!(
            counts.iter().any(|&c| c > 0.0),
            "the first step builds sets"
        );
    });
}
