//! The CPU step allocates nothing: a counting global allocator watches 50 steps of a swatch large
//! enough that every stage splits its work into several rayon jobs. The pool has one worker: rayon's
//! own first cross-thread steals may allocate queue space (scheduling-dependent, so a test counting
//! them would be flaky); the stage code that runs is the same.

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use yarnsim::scene::{ContactModel, Obstacle, Scene};
use yarnsim::sim::Sim;
use yarnsim::state::Curve;

struct Counting;
static COUNTING: AtomicBool = AtomicBool::new(false);
static ALLOCATIONS: AtomicUsize = AtomicUsize::new(0);

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, l: Layout) -> *mut u8 {
        if COUNTING.load(Ordering::Relaxed) {
            ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
        }
        unsafe { System.alloc(l) }
    }
    unsafe fn dealloc(&self, p: *mut u8, l: Layout) {
        unsafe { System.dealloc(p, l) }
    }
    unsafe fn realloc(&self, p: *mut u8, l: Layout, n: usize) -> *mut u8 {
        if COUNTING.load(Ordering::Relaxed) {
            ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
        }
        unsafe { System.realloc(p, l, n) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

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
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(1)
        .build()
        .unwrap();
    pool.install(|| {
        // The counter is live: building the simulation allocates.
        COUNTING.store(true, Ordering::SeqCst);
        let mut sim = Sim::from_scene(&scene, &curves, &[], &[0, 1]).unwrap();
        COUNTING.store(false, Ordering::SeqCst);
        assert!(ALLOCATIONS.load(Ordering::SeqCst) > 0);
        // Warm up: the thread pool's first jobs may set up internal queues.
        for _ in 0..5 {
            sim.step().unwrap();
        }
        ALLOCATIONS.store(0, Ordering::SeqCst);
        COUNTING.store(true, Ordering::SeqCst);
        for _ in 0..50 {
            sim.step().unwrap();
        }
        COUNTING.store(false, Ordering::SeqCst);
    });
    assert_eq!(
        ALLOCATIONS.load(Ordering::SeqCst),
        0,
        "allocations during 50 steps"
    );
}
