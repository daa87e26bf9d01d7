//! The ACL contact step does not allocate once its buffers have grown to the scene (a swatch moving
//! slowly and rigidly, so that sets persist, are evaluated, and some are rebuilt).

use yarnsim::acl::AclContact;
use yarnsim::knit;
use yarnsim::scene::{ContactParams, Pattern};
use yarnsim::state::Topology;

#[path = "support/alloc.rs"]
mod alloc;

#[test]
fn acl_step_does_not_allocate_in_steady_state() {
    let r = 0.125;
    let k = knit::generate(Pattern::Stockinette, 4, 4, r).unwrap();
    let (topo, pos0) = Topology::from_curves(&k.curves).unwrap();
    let params = ContactParams::default();
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(1)
        .build()
        .unwrap();
    pool.install(|| {
        let mut acl = AclContact::new(r, &params).unwrap();
        let mut force = vec![[0.0f32; 4]; pos0.len()];
        // A slow rigid rotation about z with a slow translation: every set is evaluated every step.
        let at = |step: usize| -> Vec<[f32; 4]> {
            let a = 1e-4 * step as f32;
            let (s, c) = a.sin_cos();
            pos0.iter()
                .map(|p| {
                    [
                        c * p[0] - s * p[1],
                        s * p[0] + c * p[1] + 1e-4 * step as f32,
                        p[2],
                        0.0,
                    ]
                })
                .collect()
        };
        let frames: Vec<Vec<[f32; 4]>> = (0..60).map(at).collect();
        for p in &frames[..40] {
            acl.step(&topo, p, &mut force).unwrap();
        }
        let ((), allocations) = alloc::count(|| {
            for p in &frames[40..] {
                acl.step(&topo, p, &mut force).unwrap();
            }
        });
        assert!(acl.last_stats().contact_sets > 0);
        assert_eq!(allocations, 0, "the ACL step allocated");
    });
}
