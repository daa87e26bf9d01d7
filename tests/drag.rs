//! Optional air drag (`damping.air`, 1/s): `integrate_velocity` multiplies every velocity by
//! `1/(1 + h c)` after the force update (the implicit step of `v̇ = −c v`), so any motion decays as
//! `e^{−c t}`, rigid motion included; with the default 0 the step is the seed's, bit for bit.

use yarnsim::scene::{ContactModel, Scene};
use yarnsim::sim::Sim;
use yarnsim::state::Curve;

fn yarn() -> Vec<Curve> {
    vec![Curve {
        points: (0..12)
            .map(|i| [0.3 * i as f32, 0.05 * (i as f32).sin(), 0.0])
            .collect(),
        closed: false,
    }]
}

/// A free yarn without gravity moving as a rigid body: the non-rigid damping and the constraints
/// leave the translation alone, so after n steps every point moves at `v₀ (1/(1 + h c))ⁿ`, which is
/// `v₀ e^{−c t}` to first order in h c. Tolerance: n roundings of a relative 2⁻²⁴ each in the
/// repeated product (n = 1620: 1e-4), plus the constraint solves' f32 noise on a velocity of 5 cm/s
/// (measured 1e-6); 2e-4 relative.
#[test]
fn air_drag_decays_rigid_motion_exponentially() {
    let mut scene = Scene::default();
    scene.contact.model = ContactModel::None;
    scene.simulation.gravity = [0.0; 3];
    scene.damping.air = 10.0;
    let mut sim = Sim::from_scene(&scene, &yarn(), &[], &[]).unwrap();
    for v in sim.vel.iter_mut() {
        *v = [5.0, 0.0, -2.0, 0.0];
    }
    let n = 1620;
    for _ in 0..n {
        sim.step().unwrap();
    }
    let h = sim.params.h as f64;
    let factor = (1.0 / (1.0 + h * 10.0)).powi(n);
    // 0.1 s at c = 10/s: about e^{−1}.
    assert!((factor - (-1.0f64).exp()).abs() < 2e-3, "{factor}");
    for (i, v) in sim.vel.iter().enumerate() {
        for (k, v0) in [(0, 5.0), (2, -2.0)] {
            let want = v0 * factor;
            let rel = ((v[k] as f64 - want) / want).abs();
            assert!(
                rel < 2e-4,
                "point {i} axis {k}: {} vs {want} ({rel:e})",
                v[k]
            );
        }
        assert!(v[1].abs() < 1e-4, "point {i}: {v:?}");
    }
}

/// Without drag (the default, or 0 set explicitly) the step is unchanged, bit for bit, and the drag
/// changes a run that has motion.
#[test]
fn zero_air_is_the_seed_step() {
    let run = |air: Option<f32>| {
        let mut scene = Scene::default();
        scene.contact.model = ContactModel::None;
        if let Some(a) = air {
            scene.damping.air = a;
        }
        let mut sim = Sim::from_scene(&scene, &yarn(), &[], &[0]).unwrap();
        for _ in 0..300 {
            sim.step().unwrap();
        }
        sim.pos
            .iter()
            .flatten()
            .map(|x| x.to_bits())
            .collect::<Vec<_>>()
    };
    let default = run(None);
    assert_eq!(default, run(Some(0.0)));
    assert_ne!(default, run(Some(5.0)));
}

/// A negative drag is a load error naming the key.
#[test]
fn negative_air_is_refused() {
    let mut scene = Scene::default();
    let err = scene.apply_set("damping.air=-1").unwrap_err().to_string();
    assert!(err.contains("damping.air"), "{err}");
}
