//! A run notices when cloth comes apart: the end-of-frame pass-through check
//! (`Sim::check_pass_through`, `SimError::PassThrough`) stops a run whose yarns pass through each
//! other, names the frame, the steps and the place, and says what to try; the frames before it stay
//! on disk. Healthy runs of the small shipped scenes raise no false alarm. Scene values known to
//! break the contact model are load errors naming the key.

use std::path::{Path, PathBuf};
use std::process::Command;

use yarnsim::math::V3;
use yarnsim::scene::{self, ContactModel, Scene};
use yarnsim::sim::{PassThroughKind, Sim, SimError, PASS_THROUGH_DEPTH};
use yarnsim::spline::{basis, quad_param};
use yarnsim::state::Curve;

fn bin() -> Command {
    Command::new(env!("CARGO_BIN_EXE_yarnsim"))
}

fn scenes() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("scenes")
}

/// A fresh directory for one test.
fn scratch(name: &str) -> PathBuf {
    let d = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("passthrough-{name}"));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// The frame files `frame_NNNN.bcc` in `dir`, sorted.
fn frames_in(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with("frame_") && n.ends_with(".bcc"))
        .collect();
    v.sort();
    v
}

/// The number after `word ` in `s` (the first occurrence).
fn number_after(s: &str, word: &str) -> Option<u64> {
    let i = s.find(word)? + word.len();
    let digits: String = s[i..].chars().take_while(|c| c.is_ascii_digit()).collect();
    digits.parse().ok()
}

/// `scenes/tiny.toml` with a contact stiffness far too small to hold the knit: its loops sink into
/// each other under gravity. The run stops with exit status 1 and a message naming the frame, its
/// steps and the place and saying what to try; the frames before the failed one are on disk, the
/// last of them the same as a run that stops there.
#[test]
fn weak_contact_stops_the_run_and_keeps_the_good_frames() {
    let tiny = scenes().join("tiny.toml");
    let dir = scratch("weak");
    let out = dir.join("frames");
    let run = bin()
        .arg("run")
        .arg(&tiny)
        .args(["--quiet", "--frames", "8"])
        .args([
            "--set",
            "contact.model=exact",
            "--set",
            "contact.stiffness=0.01",
        ])
        .arg("--out")
        .arg(&out)
        .output()
        .unwrap();
    let err = text(&run.stderr);
    assert_eq!(run.status.code(), Some(1), "{err}");
    for what in [
        "passed through each other",
        "yarn 0 between its control points",
        "quadrature point",
        "cm apart",
        "is the last good one",
        "smaller simulation.dt",
        "larger contact.stiffness (now 0.01)",
    ] {
        assert!(err.contains(what), "no {what:?} in: {err}");
    }
    let frame = number_after(&err, "caused by: frame ").expect("the frame") as u32;
    let first = number_after(&err, "(steps ").expect("the first step");
    let last = number_after(&err, &format!("(steps {first} to ")).expect("the last step");
    // 540 steps per frame (dt = 1/16200 s at 30 fps).
    assert!((1..8).contains(&frame), "{err}");
    assert_eq!(first, 540 * (frame as u64 - 1), "{err}");
    assert_eq!(last, 540 * frame as u64 - 1, "{err}");
    // Frames 0 .. frame − 1 are written; the failed one is not.
    let written = frames_in(&out);
    let expect: Vec<String> = (0..frame).map(|k| format!("frame_{k:04}.bcc")).collect();
    assert_eq!(written, expect, "{err}");
    // The last good frame is the state of a run that stops after it (runs are deterministic, and
    // the check does not change the trajectory).
    if frame > 1 {
        let good = dir.join("good");
        let ok = bin()
            .arg("run")
            .arg(&tiny)
            .args(["--quiet", "--frames", &(frame - 1).to_string()])
            .args([
                "--set",
                "contact.model=exact",
                "--set",
                "contact.stiffness=0.01",
            ])
            .arg("--out")
            .arg(&good)
            .output()
            .unwrap();
        assert!(ok.status.success(), "{}", text(&ok.stderr));
        let name = format!("frame_{:04}.bcc", frame - 1);
        let a = std::fs::read(out.join(&name)).unwrap();
        let b = std::fs::read(good.join(&name)).unwrap();
        assert!(!yarnsim::bcc::read_bytes(&a).unwrap().is_empty());
        assert!(a == b, "{name} differs from a run that stops there");
    }
}

/// With `contact.model = none` nothing is checked: the same weak knit (no contact at all) runs to
/// the end.
#[test]
fn no_contact_model_no_check() {
    let run = bin()
        .arg("run")
        .arg(scenes().join("tiny.toml"))
        .args(["--quiet", "--frames", "4", "--set", "contact.model=none"])
        .output()
        .unwrap();
    assert!(run.status.success(), "{}", text(&run.stderr));
}

/// Two straight yarns crossing at right angles, the lower one glued, the upper one lying on it
/// (1.9 r apart) with a contact stiffness of 1e-6: the upper yarn falls through the lower one
/// (0.55 cm, 4.4 r, in the first frame) and ends 2.5 r below it, not deep but on the other side.
fn crossing(model: ContactModel, stiffness: f32) -> Result<Vec<()>, SimError> {
    let (scene, curves, pins) = crossing_scene(model, stiffness);
    let mut sim = Sim::from_scene(&scene, &curves, &[], &pins).unwrap();
    (0..3).map(|_| sim.frame().map(|_| ())).collect()
}

/// The scene of [`crossing`]: the scene, the two yarns, and the lower yarn's points (glued).
fn crossing_scene(model: ContactModel, stiffness: f32) -> (Scene, Vec<Curve>, Vec<u32>) {
    let mut scene = Scene::default();
    scene.contact.model = model;
    scene.contact.stiffness = stiffness;
    let r = scene.yarn.radius;
    let lower = Curve {
        points: (0..17)
            .map(|i| [-2.0 + 0.25 * i as f32, 0.0, 0.0])
            .collect(),
        closed: false,
    };
    let upper = Curve {
        points: (0..17)
            .map(|i| [0.0, 1.9 * r, -2.0 + 0.25 * i as f32])
            .collect(),
        closed: false,
    };
    (scene, vec![lower, upper], (0..17).collect())
}

#[test]
fn a_yarn_falling_through_another_is_caught() {
    for model in [ContactModel::Exact, ContactModel::Acl] {
        let err = crossing(model, 1e-6).expect_err("the fall-through must stop the run");
        let msg = err.to_string();
        let SimError::PassThrough {
            frame,
            first_step,
            step,
            place,
            ..
        } = err
        else {
            panic!("{model:?}: not a pass-through: {msg}");
        };
        assert_eq!((frame, first_step, step), (1, 0, 539), "{model:?}: {msg}");
        assert!(
            matches!(place.kind, PassThroughKind::Crossed { previous_distance } if previous_distance < 2.0 * place.radius),
            "{model:?}: {msg}"
        );
        assert!(
            place.distance < 3.0 * place.radius
                && place.distance > PASS_THROUGH_DEPTH * place.radius,
            "{model:?}: {msg}"
        );
        // One point on each yarn, near the crossing at the origin.
        assert_eq!(place.yarns, [0, 1], "{msg}");
        for p in place.positions {
            assert!(p[0].abs() < 0.3 && p[2].abs() < 0.3, "{msg}");
        }
        assert!(msg.contains("frame 1 (steps 0 to 539)"), "{msg}");
        assert!(msg.contains("on opposite sides of each other"), "{msg}");
        assert!(msg.contains("frame 0 is the last good one"), "{msg}");
        assert!(msg.contains("contact.stiffness (now 0.000001)"), "{msg}");
    }
    // With the default stiffness the upper yarn rests on the lower one: no alarm. Without contact
    // it falls through unchecked.
    crossing(ContactModel::Exact, Scene::default().contact.stiffness).unwrap();
    crossing(ContactModel::None, 1e-6).unwrap();
}

/// The check can be turned off: the same fall-through then runs on.
#[test]
fn the_check_can_be_turned_off() {
    let mut scene = Scene::default();
    scene.contact.model = ContactModel::Exact;
    scene.contact.stiffness = 1e-6;
    let r = scene.yarn.radius;
    let line = |y: f32, along_x: bool| Curve {
        points: (0..17)
            .map(|i| {
                let t = -2.0 + 0.25 * i as f32;
                if along_x {
                    [t, y, 0.0]
                } else {
                    [0.0, y, t]
                }
            })
            .collect(),
        closed: false,
    };
    let pins: Vec<u32> = (0..17).collect();
    let mut sim =
        Sim::from_scene(&scene, &[line(0.0, true), line(1.9 * r, false)], &[], &pins).unwrap();
    sim.set_pass_through_check(false);
    for _ in 0..2 {
        sim.frame().unwrap();
    }
    // Turned on again, it starts afresh from the current state: the yarn now hangs below, on
    // one side, and keeps falling away.
    sim.set_pass_through_check(true);
    sim.frame().unwrap();
}

/// The smallest distance over the touching quadrature pairs the model reports now, in r.
fn closest_pair(sim: &mut Sim) -> f32 {
    let (mut touching, mut boxes) = (Vec::new(), Vec::new());
    assert!(sim.contact_pairs(&mut touching, &mut boxes).unwrap());
    let b = (sim.num_quadrature_points() / sim.topo.segments.len()) as u32;
    let point = |q: u32| {
        let seg = &sim.topo.segments[(q / b) as usize];
        let w = basis::<f32>(quad_param(q % b, b));
        let mut y = V3::<f32>::zero();
        for (&p, &wm) in seg.cp.iter().zip(&w) {
            y += V3::from4(sim.pos[p as usize]) * wm;
        }
        y
    };
    touching
        .iter()
        .map(|&[i, j]| (point(i) - point(j)).norm())
        .fold(f32::INFINITY, f32::min)
        / sim.params.radius
}

/// The small shipped scenes run with both contact models without a false alarm, and their closest
/// touching pair stays above r, twice the alarm's r/2, at every frame (measured: about 1.8 r,
/// through the swatch's slap onto the floor).
#[test]
fn shipped_scenes_raise_no_false_alarm() {
    for (file, frames) in [("tiny.toml", 2), ("swatch.toml", 3)] {
        let path = scenes().join(file);
        for model in [ContactModel::Acl, ContactModel::Exact] {
            if file == "swatch.toml" && model == ContactModel::Exact {
                // The exact model is the slow one; its frame 3 is the acl run's, checked above.
                continue;
            }
            let mut scene = Scene::load(&path).unwrap();
            scene.contact.model = model;
            let build = scene::build_curves(&scene, path.parent().unwrap()).unwrap();
            let pins = scene::pinned_points(&scene, &build).unwrap();
            let mut sim = Sim::from_build(&scene, &build, &pins).unwrap();
            for k in 1..=frames {
                sim.frame()
                    .unwrap_or_else(|e| panic!("{file} {model:?} frame {k}: {e}"));
                let d = closest_pair(&mut sim);
                assert!(
                    d > 2.0 * PASS_THROUGH_DEPTH,
                    "{file} {model:?} frame {k}: {d} r"
                );
            }
        }
    }
    // The swatch with the exact model for one frame, through the binary.
    let run = bin()
        .arg("run")
        .arg(scenes().join("swatch.toml"))
        .args(["--quiet", "--frames", "1", "--set", "contact.model=exact"])
        .output()
        .unwrap();
    assert!(run.status.success(), "{}", text(&run.stderr));
}

/// Values valid in type that break the contact model are load errors naming the key and the
/// reason; with `contact.model = none` they do not matter.
#[test]
fn values_that_break_the_contact_model_are_load_errors() {
    let base =
        "[[cloth]]\nsource.generator = { pattern = \"stockinette\", wales = 2, courses = 2 }\n";
    let load = |extra: &str| Scene::from_toml_str(&format!("{base}{extra}"), "x.toml");
    // exclusion_arc below π r: every bent yarn repels itself.
    let err = load("[contact]\nexclusion_arc = 0.3\n").unwrap_err();
    assert_eq!(err.key(), Some("contact.exclusion_arc"), "{err}");
    assert_eq!(err.line(), Some(4), "{err}");
    let msg = err.to_string();
    assert!(msg.contains("π · yarn.radius = 0.3927"), "{msg}");
    assert!(msg.contains("pushes on itself"), "{msg}");
    load("[contact]\nexclusion_arc = 0.4\n").unwrap();
    load("[contact]\nmodel = \"none\"\nexclusion_arc = 0\n").unwrap();
    // A thicker yarn needs a longer arc than the default 1 cm.
    let err = load("[yarn]\nradius = 0.5\n").unwrap_err();
    assert_eq!(err.key(), Some("contact.exclusion_arc"), "{err}");
    assert!(err.to_string().contains("1.5708"), "{err}");
    let mut s = load("").unwrap();
    let err = s.apply_set("yarn.radius=0.5").unwrap_err();
    assert_eq!(err.key(), Some("contact.exclusion_arc"), "{err}");
    // No penalty at all with a contact model: the yarns pass through each other.
    for model in ["exact", "acl"] {
        let err = load(&format!("[contact]\nmodel = \"{model}\"\nstiffness = 0\n")).unwrap_err();
        assert_eq!(err.key(), Some("contact.stiffness"), "{err}");
        let msg = err.to_string();
        assert!(msg.contains("pass through each other"), "{msg}");
        assert!(msg.contains("contact.model = \"none\""), "{msg}");
    }
    load("[contact]\nmodel = \"none\"\nstiffness = 0\n").unwrap();
    load("[contact]\nstiffness = 1e-6\n").unwrap();
    // Through the binary: exit status 1 naming the key.
    let run = bin()
        .arg("run")
        .arg(scenes().join("tiny.toml"))
        .args(["--quiet", "--set", "contact.exclusion_arc=0.1"])
        .output()
        .unwrap();
    assert_eq!(run.status.code(), Some(1));
    assert!(text(&run.stderr).contains("contact.exclusion_arc"));
}

/// The GPU step runs the same end-of-frame check on the positions it downloads for the frame: the
/// yarn falling through the glued one stops the run there too, naming the frame. So it does when
/// the check runs on another thread while the GPU runs the next frame's first steps
/// (`GpuSim::set_run_ahead`): the same error, with the host's state still the failed frame's.
#[test]
fn the_gpu_step_checks_too() {
    let Some(gpu) = yarnsim::gpu::testing::gpu_or_skip("the_gpu_step_checks_too") else {
        return;
    };
    let (scene, curves, pins) = crossing_scene(ContactModel::Exact, 1e-6);
    let mut errors = Vec::new();
    for ahead in [false, true] {
        let sim = Sim::from_scene(&scene, &curves, &[], &pins).unwrap();
        let mut g = yarnsim::gpu_step::GpuSim::new(&gpu, sim, &scene.contact).unwrap();
        g.set_run_ahead(ahead);
        let err = (0..3)
            .try_for_each(|_| g.frame().map(|_| ()))
            .expect_err("the fall-through must stop the GPU run");
        let msg = err.to_string();
        assert!(msg.contains("frame 1 (steps 0 to 539)"), "{msg}");
        assert!(msg.contains("on opposite sides of each other"), "{msg}");
        assert_eq!((g.sim.steps, g.sim.frames), (540, 0), "ahead: {ahead}");
        assert_eq!(
            g.steps_ahead() > 0,
            ahead,
            "steps run ahead through the check"
        );
        errors.push(msg);
    }
    assert_eq!(
        errors[0], errors[1],
        "the check's error with and without run-ahead"
    );
}
