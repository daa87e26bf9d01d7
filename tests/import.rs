//! Published yarn-level models as garments (issue 11, item 3): a BCC model at rest stays at rest
//! (its rest shape is the imported shape, bends sharper than `yarn.plastic_max` included), the yarn
//! radius fitted to a model's own spacing (`yarn.radius = "auto"`), and units at load.

#[path = "support/fixture.rs"]
mod fixture;

use fixture::{sim_of, temp_dir};
use std::path::Path;
use yarnsim::import::{fit_radius, FIT_PERCENTILE};
use yarnsim::scene::{build_curves, resolve_radius, Pattern, Scene, SceneError};
use yarnsim::sim::Sim;
use yarnsim::state::Curve;

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

/// A model at rest (no gravity, no contact) does not move: its rest shape is the imported shape,
/// also where it bends more sharply than `yarn.plastic_max` (which bounds plastic flow, not the
/// model's own shape). Before, those bends were clipped to `plastic_max` at the first step and the
/// model sprang into motion.
#[test]
fn a_model_at_rest_stays_at_rest() {
    let dir = temp_dir("import", "rest");
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

/// Writes a generated piece of radius `r` as a BCC file (the export path a model comes back in).
fn export_generated(dir: &Path, name: &str, pattern: Pattern, r: f32) -> Vec<Curve> {
    let k = yarnsim::knit::generate(pattern, 8, 8, r).unwrap();
    yarnsim::bcc::write(&dir.join(name), &k.curves).unwrap();
    k.curves
}

/// `yarn.radius = "auto"` on generated swatches exported to BCC with a known radius. The generator
/// lays its closest strands 1.78 r (garter) to 1.92 r (tubes) apart (src/knit.rs, "Clearance"), so
/// half the small-percentile distance to another strand is 0.89–0.96 r: the radius at which
/// (nearly) no quadrature point starts inside another yarn's contact range. The fit depends on the
/// shape only: the same ratio at any radius.
#[test]
fn auto_radius_fits_a_generated_swatch_of_known_radius() {
    let dir = temp_dir("import", "fit");
    for pattern in [
        Pattern::Stockinette,
        Pattern::Garter,
        Pattern::Rib,
        Pattern::Tube,
    ] {
        let mut ratios = Vec::new();
        for r in [0.125f32, 0.08] {
            let name = format!("{pattern:?}-{r}.bcc");
            export_generated(&dir, &name, pattern, r);
            let text = format!(
                "[yarn]\nradius = \"auto\"\n[[cloth]]\nsource.bcc = {{ path = \"{name}\" }}\n"
            );
            let path = dir.join("fit.toml");
            std::fs::write(&path, text).unwrap();
            let mut scene = Scene::load(&path).unwrap();
            assert!(scene.yarn.radius_auto);
            let build = build_curves(&scene, &dir).unwrap();
            // Unresolved, a simulation refuses the scene (it would run at a meaningless radius).
            let err = Sim::from_build(&scene, &build, &[])
                .err()
                .unwrap()
                .to_string();
            assert!(err.contains("yarn.radius") && err.contains("auto"), "{err}");
            let fit = resolve_radius(&mut scene, &build).unwrap().unwrap();
            assert!(!scene.yarn.radius_auto);
            assert_eq!(scene.yarn.radius, fit.radius as f32);
            let ratio = fit.radius / r as f64;
            eprintln!(
                "{pattern:?} r = {r}: fitted {:.5} cm = {ratio:.4} r; nearest {:.4} r, median {:.4} r",
                fit.radius,
                fit.quantile(0.0) / r as f64,
                fit.quantile(0.5) / r as f64
            );
            assert!((0.885..=0.965).contains(&ratio), "{pattern:?}: {ratio}");
            // By construction: at most the percentile starts closer than 2r.
            assert!(fit.fraction_closer_than_2r(fit.radius) <= FIT_PERCENTILE);
            // The resolved scene simulates.
            Sim::from_build(&scene, &build, &[]).unwrap();
            ratios.push(ratio);
        }
        assert!(
            (ratios[0] - ratios[1]).abs() < 1e-3,
            "{pattern:?}: {ratios:?}"
        );
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

/// The issue's symptom: a model whose spacing fits r = 0.08 cm, simulated at the default 0.125 cm,
/// has nearly every quadrature point closer than 2r to another strand; the fit reports it.
#[test]
fn fit_reports_the_overlap_at_a_radius_too_large_for_the_model() {
    let k = yarnsim::knit::generate(Pattern::Stockinette, 8, 8, 0.08).unwrap();
    let fit = fit_radius(&k.curves, 11).unwrap();
    let at_default = fit.fraction_closer_than_2r(0.125);
    eprintln!(
        "fit {:.4} cm; at r = 0.125: {:.1}% of quadrature points start within 2r",
        fit.radius,
        100.0 * at_default
    );
    assert!(at_default > 0.9, "{at_default}");
    assert!((fit.radius - 0.072).abs() < 0.003, "{}", fit.radius);
}

/// The search finds neighbours whatever the control density: a model with four times the control
/// points of the same yarns fits the same radius (the search radius adapts to the segment length).
#[test]
fn fit_does_not_depend_on_control_density() {
    let k = yarnsim::knit::generate(Pattern::Garter, 6, 6, 0.1).unwrap();
    let coarse = fit_radius(&k.curves, 11).unwrap();
    // The same curves with four times the segments, at four times fewer quadrature points each.
    let fine: Vec<Curve> = k.curves.iter().map(|c| refine_catmull_rom(c, 4)).collect();
    let dense = fit_radius(&fine, 3).unwrap();
    eprintln!("coarse {:.5}, dense {:.5}", coarse.radius, dense.radius);
    assert!((dense.radius / coarse.radius - 1.0).abs() < 0.02);
}

/// The Catmull-Rom curve resampled at `m` points per segment (an approximation, for the test).
fn refine_catmull_rom(c: &Curve, m: usize) -> Curve {
    let n = c.points.len();
    let segs: Vec<usize> = if c.closed {
        (0..n).collect()
    } else {
        (1..=n - 3).collect()
    };
    let mut pts = Vec::new();
    let eval = |i: usize, t: f64| -> [f32; 3] {
        let q: [yarnsim::math::V3<f64>; 4] =
            std::array::from_fn(|j| yarnsim::math::V3::<f64>::from3(c.points[(i + j + n - 1) % n]));
        yarnsim::spline::eval(&q, t).to3()
    };
    if !c.closed {
        pts.push(c.points[0]);
    }
    for &i in &segs {
        for k in 0..m {
            pts.push(eval(i, k as f64 / m as f64));
        }
    }
    if !c.closed {
        pts.push(c.points[n - 2]);
        pts.push(c.points[n - 1]);
    }
    Curve {
        points: pts,
        closed: c.closed,
    }
}

/// Errors name the key: a radius that is neither a number nor "auto", "auto" with a generated piece,
/// and a fitted radius the scene's other keys do not allow.
#[test]
fn radius_and_units_errors_name_the_key() {
    let dir = temp_dir("import", "errors");
    export_generated(&dir, "sw.bcc", Pattern::Stockinette, 0.125);
    let load = |text: &str| -> Result<Scene, SceneError> {
        let path = dir.join("e.toml");
        std::fs::write(&path, text).unwrap();
        Scene::load(&path)
    };
    let err = load("[yarn]\nradius = \"big\"\n[[cloth]]\nsource.bcc = { path = \"sw.bcc\" }\n")
        .unwrap_err();
    assert_eq!(
        (err.key(), err.line()),
        (Some("yarn.radius"), Some(2)),
        "{err}"
    );
    assert!(err.to_string().contains("\"auto\""), "{err}");
    let err = load(
        "[yarn]\nradius = \"auto\"\n[[cloth]]\n\
         source.generator = { pattern = \"garter\", wales = 2, courses = 2 }\n",
    )
    .unwrap_err();
    assert_eq!(
        (err.key(), err.line()),
        (Some("yarn.radius"), Some(2)),
        "{err}"
    );
    assert!(err.to_string().contains("cloth.0 is generated"), "{err}");
    let err =
        load("[[cloth]]\nsource.bcc = { path = \"sw.bcc\", units = \"furlong\" }\n").unwrap_err();
    assert_eq!(err.key(), Some("cloth.0.source.bcc.units"), "{err}");
    assert_eq!(err.line(), Some(2), "{err}");
    let err =
        load("[[cloth]]\nsource.bcc = { path = \"sw.bcc\", bspline_tolerance = 0 }\n").unwrap_err();
    assert_eq!(
        err.key(),
        Some("cloth.0.source.bcc.bspline_tolerance"),
        "{err}"
    );
    assert_eq!(err.line(), Some(2), "{err}");
    // A model in millimetres read as centimetres fits a radius ten times too large, which the
    // default exclusion arc (1 cm < π r) does not allow: the error says so and names the key.
    let mm: Vec<Curve> = yarnsim::knit::generate(Pattern::Stockinette, 8, 8, 0.125)
        .unwrap()
        .curves
        .into_iter()
        .map(|c| Curve {
            points: c.points.iter().map(|p| p.map(|x| 10.0 * x)).collect(),
            closed: c.closed,
        })
        .collect();
    yarnsim::bcc::write(&dir.join("mm.bcc"), &mm).unwrap();
    let mut scene =
        load("[yarn]\nradius = \"auto\"\n[[cloth]]\nsource.bcc = { path = \"mm.bcc\" }\n").unwrap();
    let build = build_curves(&scene, &dir).unwrap();
    let err = resolve_radius(&mut scene, &build).unwrap_err();
    let s = err.to_string();
    assert!(
        matches!(err, SceneError::Fitted { ref key, .. } if key == "contact.exclusion_arc"),
        "{s}"
    );
    assert!(s.contains("yarn.radius = \"auto\" fitted r = 1.1"), "{s}");
    assert!(
        scene.yarn.radius_auto,
        "a failed fit leaves the scene as it was"
    );
    // With its units given, the same file fits the radius of the cm model.
    let mut scene = load(
        "[yarn]\nradius = \"auto\"\n[[cloth]]\nsource.bcc = { path = \"mm.bcc\", units = \"mm\" }\n",
    )
    .unwrap();
    let build = build_curves(&scene, &dir).unwrap();
    let fit = resolve_radius(&mut scene, &build).unwrap().unwrap();
    assert!((fit.radius / 0.125 - 0.903).abs() < 0.01, "{}", fit.radius);
    std::fs::remove_dir_all(&dir).unwrap();
}

/// `--set yarn.radius=auto` and back, and "auto" survives the scene's TOML round trip.
#[test]
fn auto_radius_round_trips_through_set() {
    let mut scene = Scene::default();
    scene.cloth.push(yarnsim::scene::ClothPiece {
        source: yarnsim::scene::ClothSource::Bcc {
            path: "x.bcc".into(),
            units: yarnsim::scene::Units::Mm,
            bspline_tolerance: yarnsim::bcc::BSPLINE_TOLERANCE,
        },
        scale: 1.0,
        rotate_deg: [0.0; 3],
        translate: [0.0; 3],
    });
    scene.apply_set("yarn.radius=auto").unwrap();
    assert!(scene.yarn.radius_auto);
    let text = toml::to_string(&scene).unwrap();
    assert!(text.contains("radius = \"auto\""), "{text}");
    assert!(text.contains("units = \"mm\""), "{text}");
    assert_eq!(Scene::from_toml_str(&text, "t").unwrap(), scene);
    scene.apply_set("yarn.radius=0.09").unwrap();
    assert!(!scene.yarn.radius_auto);
    assert_eq!(scene.yarn.radius, 0.09);
    let err = scene.apply_set("yarn.radius=-1").unwrap_err();
    assert_eq!(err.key(), Some("yarn.radius"), "{err}");
}

/// `units` converts a file's coordinates to centimetres at load, before `scale`: the same model
/// written in mm, m and inches loads as the cm original (to f32 rounding).
#[test]
fn units_convert_to_centimetres_at_load() {
    let dir = temp_dir("import", "units");
    let cm = export_generated(&dir, "cm.bcc", Pattern::Garter, 0.125);
    for (units, per_cm) in [
        ("mm", 10.0f64),
        ("m", 0.01),
        ("in", 1.0 / 2.54),
        ("cm", 1.0),
    ] {
        let scaled: Vec<Curve> = cm
            .iter()
            .map(|c| Curve {
                points: c
                    .points
                    .iter()
                    .map(|p| p.map(|x| (x as f64 * per_cm) as f32))
                    .collect(),
                closed: c.closed,
            })
            .collect();
        let name = format!("{units}.bcc");
        yarnsim::bcc::write(&dir.join(&name), &scaled).unwrap();
        for scale in [1.0f32, 2.0] {
            let text = format!(
                "[[cloth]]\nsource.bcc = {{ path = \"{name}\", units = \"{units}\" }}\nscale = {scale}\n"
            );
            let path = dir.join("u.toml");
            std::fs::write(&path, text).unwrap();
            let scene = Scene::load(&path).unwrap();
            let build = build_curves(&scene, &dir).unwrap();
            let mut worst = 0.0f64;
            for (a, b) in build.curves.iter().zip(&cm) {
                for (p, q) in a.points.iter().zip(&b.points) {
                    for k in 0..3 {
                        let want = scale as f64 * q[k] as f64;
                        worst = worst.max((p[k] as f64 - want).abs() / (1.0 + want.abs()));
                    }
                }
            }
            assert!(worst < 1e-6, "{units}, scale {scale}: {worst}");
        }
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

/// `yarnsim info` reports the import: the B-spline conversion, `import.fit_radius`, the overlap at
/// the scene's radius and the sharp rest bends; `--json` has the same under `import`.
#[test]
fn info_reports_the_import() {
    let dir = temp_dir("import", "info");
    export_generated(&dir, "sw.bcc", Pattern::Stockinette, 0.08);
    let path = dir.join("s.toml");
    std::fs::write(&path, "[[cloth]]\nsource.bcc = { path = \"sw.bcc\" }\n").unwrap();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_yarnsim"))
        .args(["info", "--json"])
        .arg(&path)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let im = &v["import"];
    let fit = im["fit_radius"].as_f64().unwrap();
    assert!((fit - 0.0722).abs() < 0.002, "{im}");
    assert_eq!(im["yarn_radius"].as_f64().unwrap(), 0.125f32 as f64);
    assert_eq!(im["radius_auto"], false);
    assert!(im["overlap_at_radius"].as_f64().unwrap() > 0.9, "{im}");
    assert!(
        im["overlap_at_fit"].as_f64().unwrap() <= FIT_PERCENTILE,
        "{im}"
    );
    assert_eq!(im["pieces"][0]["curve_type"], "C0");
    assert_eq!(im["bends_beyond_plastic_max"], 0);
    let text = std::process::Command::new(env!("CARGO_BIN_EXE_yarnsim"))
        .args(["info", "--set", "yarn.radius=auto"])
        .arg(&path)
        .output()
        .unwrap();
    assert!(
        text.status.success(),
        "{}",
        String::from_utf8_lossy(&text.stderr)
    );
    let s = String::from_utf8_lossy(&text.stdout);
    assert!(s.contains("import.fit_radius 0.07"), "{s}");
    assert!(s.contains("(\"auto\": the fit)"), "{s}");
    std::fs::remove_dir_all(&dir).unwrap();
}

/// The issue's run: a model whose spacing fits r = 0.08 cm, with yarn contact and no gravity. At the
/// default r = 0.125 cm nearly every quadrature point starts inside another yarn's contact range and
/// the penalty force throws the model apart; at the fitted radius it stays (nearly) at rest.
#[test]
fn a_model_at_its_fitted_radius_does_not_blow_apart() {
    let dir = temp_dir("import", "blow");
    export_generated(&dir, "sw.bcc", Pattern::Stockinette, 0.08);
    let mut speeds = Vec::new();
    for radius in ["0.125", "\"auto\""] {
        let text = format!(
            "[simulation]\ngravity = [0, 0, 0]\n[yarn]\nradius = {radius}\n[contact]\n\
             model = \"exact\"\n[[cloth]]\nsource.bcc = {{ path = \"sw.bcc\" }}\n"
        );
        let path = dir.join("blow.toml");
        std::fs::write(&path, text).unwrap();
        let mut scene = Scene::load(&path).unwrap();
        let build = build_curves(&scene, &dir).unwrap();
        resolve_radius(&mut scene, &build).unwrap();
        let mut sim = Sim::from_build(&scene, &build, &[]).unwrap();
        let mut vmax = 0.0f64;
        for _ in 0..60 {
            sim.step().unwrap();
            vmax = vmax.max(sim.kinetic_energy_and_max_speed().1);
        }
        eprintln!(
            "yarn.radius = {radius} ({} cm): max speed {vmax:.3e} cm/s over 60 steps",
            scene.yarn.radius
        );
        speeds.push(vmax);
    }
    // Measured: 354 cm/s at 0.125 cm, 2.9e-6 cm/s (f32 round-off) at the fit.
    assert!(speeds[0] > 100.0, "{speeds:?}");
    assert!(speeds[1] < 1e-3, "{speeds:?}");
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A BCC file's bad geometry is named by its file and curve where the simulation finds it: a
/// repeated point of curve 1 (the simulation's yarn 1: "yarn 1 is curve 1 of FILE (cloth.0)"),
/// and a cloth so far from the origin that f32 cannot hold a yarn's shape (at 10⁶ cm coordinates
/// are 0.0625 cm apart, half the radius: refused, naming how near it must be; at 10⁵ cm, 0.0078
/// cm: a warning, and the run goes on about a local origin).
#[test]
fn bad_bcc_geometry_names_the_file_and_curve() {
    let dir = temp_dir("import", "bad-geometry");
    let swatch = export_generated(&dir, "ok.bcc", Pattern::Stockinette, 0.125);
    let run = |name: &str, curves: &[Curve]| {
        yarnsim::bcc::write(&dir.join(name), curves).unwrap();
        let scene = dir.join("s.toml");
        std::fs::write(
            &scene,
            format!("[[cloth]]\nsource.bcc = {{ path = \"{name}\" }}\n"),
        )
        .unwrap();
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_yarnsim"))
            .arg("run")
            .arg(&scene)
            .args(["-q", "--frames", "1", "--set", "relax.time=0"])
            .args(["--set", "simulation.fps=1620"])
            .output()
            .unwrap();
        (
            out.status.success(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    };
    // Two curves: the swatch, and the swatch moved aside with its point 7 repeated.
    let mut second = swatch[0].clone();
    for p in &mut second.points {
        p[2] += 5.0;
    }
    second.points.insert(8, second.points[7]);
    let (ok, err) = run("repeated.bcc", &[swatch[0].clone(), second]);
    assert!(!ok, "{err}");
    let file = dir.join("repeated.bcc");
    assert!(
        err.contains(&format!(
            "yarn 1 is curve 1 of {} (cloth.0): its control points are the file's",
            file.display()
        )) && err.contains("yarn 1: control points 7 and 8 coincide"),
        "{err}"
    );
    let moved = |by: f32| -> Vec<Curve> {
        let mut c = swatch.clone();
        for p in c.iter_mut().flat_map(|c| c.points.iter_mut()) {
            p[0] += by;
        }
        c
    };
    let (ok, err) = run("far.bcc", &moved(1e6));
    assert!(!ok, "{err}");
    assert!(
        err.contains("is curve 0 of")
            && err.contains("cm from the scene's origin, where f32 coordinates are 6.25e-2 cm apart (0.50 yarn radii")
            && err.contains("bring the cloth within 2.62144e5 cm of the origin"),
        "{err}"
    );
    let (ok, err) = run("nearer.bcc", &moved(1e5));
    assert!(ok, "{err}");
    assert!(
        err.starts_with("warning: the cloth reaches 1.0")
            && err.contains(
                "where f32 coordinates (the scene's, and a BCC file's) are 7.8125e-3 cm apart"
            ),
        "{err}"
    );
}

/// A BCC cloth with no spacing to fit a radius to (one yarn alone: no other strand near it) is
/// still a scene `yarnsim run` runs, so `yarnsim info` describes it too and says why there is no
/// fit (it failed with the fit's error, where the run went on).
#[test]
fn info_describes_a_model_without_a_fit() {
    let dir = temp_dir("import", "nofit");
    let yarn = Curve {
        points: (0..12)
            .map(|i| [0.25 * i as f32, 0.1 * (i as f32).sin(), 0.0])
            .collect(),
        closed: false,
    };
    yarnsim::bcc::write(&dir.join("one.bcc"), &[yarn]).unwrap();
    let path = dir.join("s.toml");
    std::fs::write(&path, "[[cloth]]\nsource.bcc = { path = \"one.bcc\" }\n").unwrap();
    let info = |json: bool| info_of(&path, json);
    let v: serde_json::Value = serde_json::from_str(&info(true)).unwrap();
    let im = &v["import"];
    assert!(im["fit_radius"].is_null(), "{im}");
    assert!(
        im["fit_error"].as_str().unwrap().contains("no two strands"),
        "{im}"
    );
    assert_eq!(im["pieces"][0]["curve_type"], "C0");
    let s = info(false);
    assert!(s.contains("import.fit_radius none: no two strands"), "{s}");
    std::fs::remove_dir_all(&dir).unwrap();
}

/// `yarnsim info [--json] PATH`'s standard output; the command must succeed.
fn info_of(path: &std::path::Path, json: bool) -> String {
    let mut c = std::process::Command::new(env!("CARGO_BIN_EXE_yarnsim"));
    c.arg("info");
    if json {
        c.arg("--json");
    }
    let out = c.arg(path).output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Where fewer than half the quadrature points find another strand within the fit's search radius
/// (a lone loop: only its far side), the median nearest distance is not a number `info` can show:
/// it says "beyond" the search radius instead of `inf cm`, and `--json` leaves it out instead of
/// writing `null` for a number.
#[test]
fn info_shows_a_median_beyond_the_search_radius_as_such() {
    let dir = temp_dir("import", "median");
    let ring = Curve {
        points: vec![[0.0, 0.0, 0.0], [1.0, 0.0, 0.0], [0.0, 1.0, 0.0]],
        closed: true,
    };
    yarnsim::bcc::write(&dir.join("ring.bcc"), &[ring]).unwrap();
    let path = dir.join("s.toml");
    std::fs::write(&path, "[[cloth]]\nsource.bcc = { path = \"ring.bcc\" }\n").unwrap();
    let info = |json: bool| info_of(&path, json);
    let v: serde_json::Value = serde_json::from_str(&info(true)).unwrap();
    let im = &v["import"];
    assert!(im["fit_radius"].as_f64().is_some(), "{im}");
    let nulls: Vec<_> = im
        .as_object()
        .unwrap()
        .iter()
        .filter(|(_, x)| x.is_null())
        .map(|(k, _)| k.clone())
        .collect();
    assert!(nulls.is_empty(), "null numbers {nulls:?} in {im}");
    assert!(im["search_radius"].as_f64().unwrap() > 0.0, "{im}");
    let s = info(false);
    assert!(!s.contains("inf cm"), "{s}");
    assert!(s.contains("median beyond"), "{s}");
    std::fs::remove_dir_all(&dir).unwrap();
}
