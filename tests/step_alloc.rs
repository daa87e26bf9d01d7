//! The CPU step allocates nothing: a counting global allocator watches 50 steps of a swatch large
//! enough that every stage splits its work into several rayon jobs. The pool has one worker: rayon's
//! own first cross-thread steals may allocate queue space (scheduling-dependent, so a test counting
//! them would be flaky); the stage code that runs is the same.

use yarnsim::scene::{ContactModel, Obstacle, Scene};
use yarnsim::sim::Sim;
use yarnsim::state::Curve;

#[path = "support/alloc.rs"]
mod alloc;

#[test]
fn step_loop_does_not_allocate() {
    let per_loop = 8;
    let curves: Vec<Curve> = (0..16)
        .map(|c| Curve {
            points: (0..16 * per_loop + 3)
                .map(|i| {
                    let a = (i as f32 - 1.0) / per_loop as f32 * std::f32::consts::TAU;
                    [
                        0.6 * a / std::f32::consts::TAU - 0.25 * a.sin() - 5.0,
                        c as f32 * 0.5 + 0.3 * a.cos() - 4.0,
                        0.12 * (a + c as f32).sin(),
                    ]
                })
                .collect(),
            closed: false,
        })
        .collect();
    let mut scene = Scene::default();
    scene.contact.model = ContactModel::None;
    scene.obstacle.push(Obstacle::Sphere {
        center: [0.0, -1.0, -1.2],
        radius: 1.0,
        friction: 0.2,
        keyframes: vec![],
    });
    // A walking figure, away from the yarn: its parts are placed every step.
    scene.figure.push(yarnsim::figure::Figure {
        position: [0.0, 0.0, 300.0],
        start: 0.0,
        ..Default::default()
    });
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(1)
        .build()
        .unwrap();
    let allocations = pool.install(|| {
        // The counter is live: building the simulation allocates.
        let (mut sim, built) =
            alloc::count(|| Sim::from_scene(&scene, &curves, &[], &[0, 1]).unwrap());
        assert!(built > 0);
        // Warm up: the thread pool's first jobs may set up internal queues.
        for _ in 0..5 {
            sim.step().unwrap();
        }
        let ((), allocations) = alloc::count(|| {
            for _ in 0..50 {
                sim.step().unwrap();
            }
        });
        allocations
    });
    assert_eq!(allocations, 0, "allocations during 50 steps");
}
