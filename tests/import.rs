//! Published yarn-level models as garments (issue 11, item 3): a BCC model at rest stays at rest
//! (its rest shape is the imported shape, bends sharper than `yarn.plastic_max` included), the yarn
//! radius fitted to a model's own spacing (`yarn.radius = "auto"`), and units at load.

use std::path::{Path, PathBuf};
use yarnsim::scene::{build_curves, Scene};
use yarnsim::sim::Sim;
use yarnsim::state::Curve;

/// A fresh directory for this test's files.
fn temp_dir(tag: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("yarnsim-import-{}-{tag}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// Sharply bent yarns, as coarse published models have them: a coil of 3 control points per turn
/// (turning angles of about 120° at every point, |κb| ≈ 3.4, beyond the default `plastic_max` 2.5),
/// an open zigzag, and a closed triangle-like loop.
fn sharp_model() -> Vec<Curve> {
    let coil: Vec<[f32; 3]> = (0..20)
        .map(|i| {
            let a = std::f32::consts::TAU * i as f32 / 3.0;
            [0.4 * a.cos(), 0.4 * a.sin(), 0.15 * i as f32]
        })
        .collect();
    let zigzag: Vec<[f32; 3]> = (0..12)
        .map(|i| [0.3 * i as f32, if i % 2 == 0 { 2.0 } else { 2.5 }, 0.0])
        .collect();
    let tri: Vec<[f32; 3]> = (0..5)
        .map(|i| {
            let a = std::f32::consts::TAU * i as f32 / 5.0;
            [3.0 + 0.5 * a.cos(), 0.5 * a.sin(), 0.05 * (3.0 * a).sin()]
        })
        .collect();
    vec![
        Curve {
            points: coil,
            closed: false,
        },
        Curve {
            points: zigzag,
            closed: false,
        },
        Curve {
            points: tri,
            closed: true,
        },
    ]
}

/// Loads `scene_text` from `dir` and builds its simulation.
fn sim_of(dir: &Path, scene_text: &str) -> (Scene, Sim) {
    let path = dir.join("scene.toml");
    std::fs::write(&path, scene_text).unwrap();
    let scene = Scene::load(&path).unwrap();
    let build = build_curves(&scene, dir).unwrap();
    let sim = Sim::from_build(&scene, &build, &[]).unwrap();
    (scene, sim)
}

/// A model at rest (no gravity, no contact) does not move: its rest shape is the imported shape,
/// also where it bends more sharply than `yarn.plastic_max` (which bounds plastic flow, not the
/// model's own shape). Before, those bends were clipped to `plastic_max` at the first step and the
/// model sprang into motion.
#[test]
fn a_model_at_rest_stays_at_rest() {
    let dir = temp_dir("rest");
    let curves = sharp_model();
    yarnsim::bcc::write(&dir.join("sharp.bcc"), &curves).unwrap();
    let text = r#"
[simulation]
gravity = [0, 0, 0]
[contact]
model = "none"
[[cloth]]
source.bcc = { path = "sharp.bcc" }
"#;
    let (scene, mut sim) = sim_of(&dir, text);
    // The model is as sharp as claimed: some bends beyond the plastic bound.
    let beyond = yarnsim::rod::bends_beyond(&sim.rod, scene.yarn.plastic_max);
    assert!(beyond.count >= 20, "{beyond:?}");
    assert!(beyond.largest > 3.0, "{beyond:?}");
    let start = sim.pos.clone();
    let rest_before: Vec<_> = sim.rod.rest.iter().map(|r| r.kappa).collect();
    for _ in 0..200 {
        sim.step().unwrap();
    }
    let (_, vmax) = sim.kinetic_energy_and_max_speed();
    let drift = sim
        .pos
        .iter()
        .zip(&start)
        .map(|(a, b)| (0..3).map(|k| (a[k] - b[k]).abs()).fold(0.0, f32::max))
        .fold(0.0, f32::max);
    eprintln!("max speed {vmax:.3e} cm/s, drift {drift:.3e} cm after 200 steps");
    // The same bound as the generated swatches at rest (tests/step.rs): f32 round-off only.
    assert!(vmax < 1e-4, "max speed {vmax} cm/s after 200 steps");
    assert!(drift < 1e-5, "drifted by {drift} cm");
    let rest_after: Vec<_> = sim.rod.rest.iter().map(|r| r.kappa).collect();
    let moved = rest_before
        .iter()
        .zip(&rest_after)
        .map(|(a, b)| {
            (0..2)
                .flat_map(|j| (0..2).map(move |c| (a[j][c] - b[j][c]).abs()))
                .fold(0.0f32, f32::max)
        })
        .fold(0.0f32, f32::max);
    assert!(moved < 1e-5, "rest curvature moved by {moved}");
    std::fs::remove_dir_all(&dir).unwrap();
}
