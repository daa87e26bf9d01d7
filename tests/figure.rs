//! The walking figure (`[[figure]]`, src/figure.rs): rigid parts joined at their joints, the walk's
//! speed and pose, scene errors, and the capsules the step places each step with both ends'
//! velocities.

use yarnsim::figure::{Figure, PART_NAMES};
use yarnsim::scene::Scene;
use yarnsim::sim::Sim;
use yarnsim::state::Curve;

fn dist(a: [f32; 3], b: [f32; 3]) -> f64 {
    (0..3)
        .map(|k| (a[k] as f64 - b[k] as f64).powi(2))
        .sum::<f64>()
        .sqrt()
}

fn part(name: &str) -> usize {
    PART_NAMES.iter().position(|n| *n == name).unwrap()
}

fn walker() -> Figure {
    Figure {
        height: 180.0,
        position: [10.0, 0.0, -5.0],
        arms_start_deg: Some(80.0),
        arms_deg: 20.0,
        ..Default::default()
    }
}

/// Every part keeps its length through the walk, and the limbs stay joined: upper arm to forearm
/// at the elbow, thigh to shin at the knee, both at the shoulder and hip joints of the body.
#[test]
fn parts_are_rigid_and_joined() {
    let f = walker();
    let rest = f.parts(0.0);
    assert_eq!(rest.len(), PART_NAMES.len());
    for k in 0..400 {
        let t = k as f64 * 0.01;
        let p = f.parts(t);
        for (i, (now, then)) in p.iter().zip(&rest).enumerate() {
            let (l, l0) = (dist(now.a, now.b), dist(then.a, then.b));
            assert!(
                (l - l0).abs() < 1e-4 * f.height as f64,
                "{} changes length at t = {t}: {l} vs {l0}",
                PART_NAMES[i]
            );
            assert_eq!(now.radius, then.radius);
        }
        for side in ["left", "right"] {
            let up = p[part(&format!("upper_arm_{side}"))];
            let fore = p[part(&format!("forearm_{side}"))];
            assert!(
                dist(up.b, fore.a) < 1e-4,
                "{side} elbow comes apart at t = {t}"
            );
            let thigh = p[part(&format!("thigh_{side}"))];
            let shin = p[part(&format!("shin_{side}"))];
            assert!(
                dist(thigh.b, shin.a) < 1e-4,
                "{side} knee comes apart at t = {t}"
            );
        }
    }
}

/// Before `start` the figure stands (only its arms move, to `arms_deg`); once the swing has grown
/// (half a period) it moves forward at its walking speed, in the direction of its heading, and its
/// legs swing in opposition with the amplitude asked for.
#[test]
fn it_stands_then_walks_forward_at_its_speed() {
    let mut f = walker();
    let torso = part("torso_left");
    let p0 = f.parts(0.0);
    let p_start = f.parts(f.start as f64);
    assert!(
        dist(p0[torso].a, p_start[torso].a) < 1e-5,
        "it moved before starting"
    );
    // The arms at `arms_deg` out from hanging straight down.
    let arm = p_start[part("upper_arm_left")];
    let (dx, dy) = (arm.b[0] - arm.a[0], arm.b[1] - arm.a[1]);
    let angle = (dx as f64).atan2(-dy as f64).to_degrees();
    assert!((angle - 20.0).abs() < 0.01, "arm at {angle}° at the start");
    let arm0 = p0[part("upper_arm_left")];
    let angle0 = ((arm0.b[0] - arm0.a[0]) as f64)
        .atan2(-(arm0.b[1] - arm0.a[1]) as f64)
        .to_degrees();
    assert!((angle0 - 80.0).abs() < 0.01, "arm at {angle0}° at t = 0");

    let v = f.walk_speed();
    // 2 · stride / period with stride = 2 · leg · sin(20°), leg = 0.5 · height.
    let expect = 2.0 * 2.0 * 90.0 * 20f64.to_radians().sin() / 1.2;
    // (f32 period and angle: 1e-7 relative.)
    assert!((v / expect - 1.0).abs() < 1e-6, "{v} vs {expect}");
    let (t1, t2) = (f.start as f64 + 0.6, f.start as f64 + 2.4);
    let d = dist(f.parts(t1)[torso].a, f.parts(t2)[torso].a);
    assert!(
        (d - v * (t2 - t1)).abs() < 1e-3,
        "walked {d} in {} s",
        t2 - t1
    );
    let dz = f.parts(t2)[torso].a[2] - f.parts(t1)[torso].a[2];
    assert!((dz as f64 - d).abs() < 1e-3, "it walks along +z");

    // The thighs: a quarter period into the second cycle, left forward by the amplitude, right back.
    let t = f.start as f64 + 1.2 + 0.3;
    let p = f.parts(t);
    let swing = |name: &str| {
        let q = p[part(name)];
        ((q.b[2] - q.a[2]) as f64)
            .atan2(-(q.b[1] - q.a[1]) as f64)
            .to_degrees()
    };
    assert!(
        (swing("thigh_left") - 20.0).abs() < 1e-3,
        "{}",
        swing("thigh_left")
    );
    assert!(
        (swing("thigh_right") + 20.0).abs() < 1e-3,
        "{}",
        swing("thigh_right")
    );

    // A heading of 90° walks along +x instead.
    f.heading_deg = 90.0;
    let a = f.parts(t1)[torso].a;
    let b = f.parts(t2)[torso].a;
    assert!(((b[0] - a[0]) as f64 - v * (t2 - t1)).abs() < 1e-2);
    assert!((b[2] - a[2]).abs() < 1e-3);
}

/// The step places each part as a capsule with the velocities of both its ends over the step, the
/// differences of `Figure::parts` at the step's start and end; `obstacles_at` (used by the capture)
/// gives the same capsules.
#[test]
fn the_step_places_the_parts_with_both_ends_velocities() {
    let mut scene = Scene::default();
    scene.figure.push(Figure {
        height: 50.0,
        start: 0.0,
        ..Default::default()
    });
    scene.simulation.gravity = [0.0; 3];
    scene.contact.model = yarnsim::scene::ContactModel::None;
    let curves = [Curve {
        points: (0..8).map(|i| [100.0 + i as f32, 0.0, 0.0]).collect(),
        closed: false,
    }];
    let mut sim = Sim::from_scene(&scene, &curves, &[], &[]).unwrap();
    let h = sim.params.h as f64;
    for _ in 0..200 {
        sim.step().unwrap();
    }
    // The last step ran from t - h to t; its obstacles are placed at its end.
    let t = sim.time;
    let f = &scene.figure[0];
    let (before, after) = (f.parts(t - h), f.parts(t));
    assert_eq!(sim.obstacles.len(), PART_NAMES.len());
    let obstacles = scene.obstacles_at(t);
    // The yarn, 100 cm out along x, is simulated about a local origin (`Sim::origin`): the
    // simulation's obstacles are the scene's less it.
    let origin = sim.origin();
    assert_eq!(origin, [104.0, 0.0, 0.0]);
    for (i, o) in sim.obstacles.iter().enumerate() {
        for (k, shift) in origin.iter().enumerate() {
            let (a, b) = (o.a[k] + shift, o.b[k] + shift);
            assert!((a - after[i].a[k]).abs() < 1e-4, "{}", PART_NAMES[i]);
            assert!((b - after[i].b[k]).abs() < 1e-4, "{}", PART_NAMES[i]);
            let va = (after[i].a[k] - before[i].a[k]) as f64 / h;
            let vb = (after[i].b[k] - before[i].b[k]) as f64 / h;
            // f32 positions differenced over one step: ~1e-5 cm / 6e-5 s.
            assert!(
                (o.vel[k] as f64 - va).abs() < 0.5,
                "{} vel {k}",
                PART_NAMES[i]
            );
            assert!(
                (o.vel_b[k] as f64 - vb).abs() < 0.5,
                "{} vel_b {k}",
                PART_NAMES[i]
            );
        }
        match &obstacles[i] {
            yarnsim::scene::Obstacle::Capsule { a, b, radius, .. } => {
                assert_eq!((*a, *b, *radius), (after[i].a, after[i].b, after[i].radius));
            }
            other => panic!("part {i} is {other:?}"),
        }
    }
    // The legs swing: some end moves at a walking speed (cm/s), not only the body's.
    let fastest = sim
        .obstacles
        .iter()
        .map(|o| (o.vel_b[1].powi(2) + o.vel_b[2].powi(2)).sqrt())
        .fold(0.0f32, f32::max);
    assert!(fastest > 1.0, "nothing swings: {fastest}");
}

/// Bad `[[figure]]` keys are errors naming the key and its line.
#[test]
fn bad_figure_keys_are_errors_naming_the_line() {
    let base = "[[cloth]]\nsource.generator = { pattern = \"tube\", wales = 8, courses = 2 }\n\
                [[figure]]\nheight = 100.0\n";
    for (extra, key, what) in [
        ("period = 0.0\n", "figure.0.period", "> 0"),
        ("chest = [10.0, 20.0]\n", "figure.0.chest", "may not exceed"),
        ("arms_deg = 200.0\n", "figure.0.arms_deg", "angle"),
        ("speed = -1.0\n", "figure.0.speed", "≥ 0"),
        ("knees = 3\n", "figure.0.knees", "unknown"),
    ] {
        let text = format!("{base}{extra}");
        let err = Scene::from_toml_str(&text, "x.toml")
            .unwrap_err()
            .to_string();
        assert!(err.contains(key), "{extra}: {err}");
        assert!(err.contains(what), "{extra}: {err}");
        assert!(err.contains("x.toml:5"), "{extra}: {err}");
    }
}
