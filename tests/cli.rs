//! The `yarnsim` binary on a tiny scene: stats records, BCC frames, overrides, info, and errors.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use yarnsim::state::Curve;

#[path = "support/relax_kill.rs"]
mod relax_kill;
#[path = "support/tube.rs"]
mod tube;

fn bin() -> Command {
    Command::new(env!("CARGO_BIN_EXE_yarnsim"))
}

/// A fresh directory for one test.
fn scratch(name: &str) -> PathBuf {
    let d = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("cli-{name}"));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn tiny_curves() -> Vec<Curve> {
    let wavy = |y: f32| Curve {
        points: (0..12)
            .map(|i| {
                [
                    0.25 * i as f32 - 1.4,
                    y + 0.1 * (i as f32).sin(),
                    0.05 * i as f32,
                ]
            })
            .collect(),
        closed: false,
    };
    let ring = Curve {
        points: (0..10)
            .map(|i| {
                let a = i as f32 / 10.0 * std::f32::consts::TAU;
                [0.5 * a.cos(), -1.0 + 0.5 * a.sin(), 0.1 * a.sin()]
            })
            .collect(),
        closed: true,
    };
    vec![wavy(0.0), wavy(0.6), ring]
}

/// Writes `tiny.bcc` and a scene using it (16 steps per frame, contact off, two points pinned).
fn tiny_scene(dir: &Path, model: &str) -> PathBuf {
    yarnsim::bcc::write(&dir.join("tiny.bcc"), &tiny_curves()).unwrap();
    let scene = dir.join("tiny.toml");
    std::fs::write(
        &scene,
        format!(
            r#"[simulation]
dt = 6.25e-5
frames = 5
fps = 1000.0

[contact]
model = "{model}"

[[cloth]]
source = {{ bcc = {{ path = "tiny.bcc" }} }}

[[pin]]
range = {{ first = 0, last = 1 }}
"#
        ),
    )
    .unwrap();
    scene
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// Runs `cmd`, asserts that it fails, and returns its standard error.
fn failure(cmd: &mut Command) -> String {
    let out = cmd.output().unwrap();
    assert!(!out.status.success(), "succeeded: {cmd:?}");
    text(&out.stderr)
}

/// The records of a `--stats` JSONL file, one JSON object per line.
fn read_stats(path: &Path) -> Vec<serde_json::Value> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).expect("each stats line is one JSON object"))
        .collect()
}

fn check_ok(out: &Output) {
    assert!(
        out.status.success(),
        "exit {:?}\nstdout:\n{}\nstderr:\n{}",
        out.status,
        text(&out.stdout),
        text(&out.stderr)
    );
}

#[test]
fn run_writes_stats_lines_and_bcc_frames() {
    let dir = scratch("run");
    let scene = tiny_scene(&dir, "none");
    let out = bin()
        .arg("run")
        .arg(&scene)
        .args(["--frames", "2", "--out"])
        .arg(dir.join("frames"))
        .arg("--stats")
        .arg(dir.join("stats.jsonl"))
        .output()
        .unwrap();
    check_ok(&out);
    // One summary line per frame on stdout.
    let stdout = text(&out.stdout);
    assert_eq!(
        stdout.lines().filter(|l| l.starts_with("frame")).count(),
        2,
        "{stdout}"
    );

    let records = read_stats(&dir.join("stats.jsonl"));
    assert_eq!(records.len(), 2);
    for (k, r) in records.iter().enumerate() {
        assert_eq!(r["frame"], k as u64 + 1);
        assert_eq!(r["steps"], 16);
        assert!((r["sim_time"].as_f64().unwrap() - 0.001 * (k + 1) as f64).abs() < 1e-6);
        for key in ["wall_ms", "kinetic_energy", "max_speed"] {
            assert!(r[key].as_f64().unwrap() >= 0.0, "{key} in {r}");
        }
    }
    // Gravity pulls the cloth, so it moves.
    assert!(records[1]["max_speed"].as_f64().unwrap() > 0.1);

    let initial = tiny_curves();
    let frames: Vec<Vec<Curve>> = (0..=2)
        .map(|k| {
            let p = dir.join("frames").join(format!("frame_{k:04}.bcc"));
            yarnsim::bcc::read(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
        })
        .collect();
    // Frame 0 is the state after the relaxation before t = 0 (`[relax]`, on by default), and the
    // run says how it went. Without contact and gravity there is little to relax: the pinned points
    // stay, the others move by less than a hundredth of the yarn radius.
    assert!(
        text(&out.stderr).contains("relaxed in"),
        "{}",
        text(&out.stderr)
    );
    assert_eq!(frames[0][0].points[..2], initial[0].points[..2]);
    for (c, i) in frames[0].iter().zip(&initial) {
        for (p, q) in c.points.iter().zip(&i.points) {
            let d = (0..3).map(|a| (p[a] - q[a]).powi(2)).sum::<f32>().sqrt();
            assert!(d < 1.25e-3, "frame 0 moved {d} cm from the initial state");
        }
    }
    for f in &frames {
        assert_eq!(f.len(), initial.len());
        for (c, i) in f.iter().zip(&initial) {
            assert_eq!((c.points.len(), c.closed), (i.points.len(), i.closed));
        }
    }
    assert_ne!(frames[2], frames[0]);
    // The pinned points stayed.
    assert_eq!(frames[2][0].points[..2], initial[0].points[..2]);
}

#[test]
fn set_overrides_a_scene_field() {
    let dir = scratch("set");
    let scene = tiny_scene(&dir, "none");
    let out = bin()
        .arg("run")
        .arg(&scene)
        .args(["--frames", "1", "--set", "simulation.fps=500", "--stats"])
        .arg(dir.join("s.jsonl"))
        .output()
        .unwrap();
    check_ok(&out);
    let line = std::fs::read_to_string(dir.join("s.jsonl")).unwrap();
    let r: serde_json::Value = serde_json::from_str(line.trim()).unwrap();
    assert_eq!(r["steps"], 32);

    let err = failure(
        bin()
            .arg("run")
            .arg(&scene)
            .args(["--set", "simulation.no_such_key=1"]),
    );
    assert!(err.contains("no_such_key"), "{err}");
}

#[test]
fn missing_scene_is_an_error_naming_the_file() {
    let dir = scratch("missing");
    let missing = dir.join("does_not_exist.toml");
    let err = failure(bin().arg("run").arg(&missing));
    assert!(err.contains("does_not_exist.toml"), "{err}");
    assert!(!err.contains("panicked"), "{err}");
}

/// The keys of a frame record of the CPU path (`--stats` of one frame of `scene`) that the GPU's
/// record `r` lacks.
fn cpu_keys_missing(scene: &Path, dir: &Path, r: &serde_json::Value) -> Vec<String> {
    let out = bin()
        .arg("run")
        .arg(scene)
        .args(["--frames", "1", "--stats"])
        .arg(dir.join("cpu.jsonl"))
        .output()
        .unwrap();
    check_ok(&out);
    let cpu = read_stats(&dir.join("cpu.jsonl"));
    let keys = cpu[0].as_object().unwrap().keys();
    keys.filter(|k| r.get(k.as_str()).is_none())
        .cloned()
        .collect()
}

/// The CPU path's time keys in a GPU record `r` of a timed frame of `steps` steps: its phases'
/// times over the frame add up to the timed step's (`gpu_step_ms`, per step) times the steps, and
/// where `stages` are given (ACL's) theirs to `contact_ms`, the contact model's time per step
/// (`gpu_contact_ms`). Tolerance: a few roundings of sums of some 50 terms in f64.
fn check_time_keys(r: &serde_json::Value, steps: f64, stages: &[&str]) {
    let get = |k: &str| r[k].as_f64().unwrap_or_else(|| panic!("{k} in {r}"));
    let close = |a: f64, b: f64| (a - b).abs() <= 1e-9 * a.abs().max(b.abs()).max(1e-3);
    let phases: f64 = yarnsim::sim::PHASES.iter().map(|k| get(k)).sum();
    assert!(close(phases, get("gpu_step_ms") * steps), "{r}");
    if !stages.is_empty() {
        let sum: f64 = stages.iter().map(|k| get(k)).sum();
        assert!(close(sum, get("contact_ms")), "{r}");
        assert!(close(get("contact_ms"), get("gpu_contact_ms")), "{r}");
        assert!(
            close(get("phase_contact_ms"), get("contact_ms") * steps),
            "{r}"
        );
        // Every stage has work in a step of the tiny swatch's first frame.
        for k in stages {
            assert!(get(k) > 0.0, "{k} in {r}");
        }
    }
}

/// `--backend gpu` runs a scene without contact and reports the GPU's own figures, and a scene with
/// ACL with the CPU path's ACL keys: a GPU record has every key of the CPU path's.
#[test]
fn gpu_backend_runs_and_reports() {
    let Some(gpu) = yarnsim::gpu::testing::gpu_or_skip("gpu_backend_runs_and_reports") else {
        return;
    };
    let timed = gpu
        .device
        .features()
        .contains(wgpu::Features::TIMESTAMP_QUERY);
    drop(gpu);
    let dir = scratch("gpu");
    let scene = tiny_scene(&dir, "none");
    let out = bin()
        .arg("run")
        .arg(&scene)
        .args(["--backend", "gpu", "--frames", "2", "--out"])
        .arg(dir.join("frames"))
        .arg("--stats")
        .arg(dir.join("s.jsonl"))
        .output()
        .unwrap();
    check_ok(&out);
    assert!(
        text(&out.stderr).contains("GPU step on "),
        "{}",
        text(&out.stderr)
    );
    assert!(dir.join("frames/frame_0002.bcc").is_file());
    let recs = read_stats(&dir.join("s.jsonl"));
    assert_eq!(recs.len(), 2);
    for r in &recs {
        assert!(r["dispatches_per_step"].as_f64().unwrap() >= 10.0, "{r}");
        assert!(
            r["readback_bytes_per_step"].as_f64().unwrap() >= 64.0,
            "{r}"
        );
        assert!(r["kinetic_energy"].as_f64().unwrap() > 0.0, "{r}");
        if timed {
            for k in ["bend_forces_ms", "integrate_velocity_ms"] {
                assert!(r[k].as_f64().is_some_and(|v| v >= 0.0), "{k} in {r}");
            }
            // A step takes time: no frame reports its timed step as nothing.
            assert!(r["gpu_step_ms"].as_f64().is_some_and(|v| v > 0.0), "{r}");
            check_time_keys(r, r["steps"].as_f64().unwrap(), &[]);
        }
    }
    if timed {
        let missing = cpu_keys_missing(&scene, &dir, &recs[0]);
        assert!(missing.is_empty(), "the GPU's record lacks {missing:?}");
    }
    let acl_dir = dir.join("acl");
    std::fs::create_dir_all(&acl_dir).unwrap();
    let acl = tiny_scene(&acl_dir, "acl");
    let out = bin()
        .arg("run")
        .arg(&acl)
        .args(["--backend", "gpu", "--frames", "1", "--stats"])
        .arg(acl_dir.join("s.jsonl"))
        .args(["--contact-matrix", "1:300", "--out"])
        .arg(acl_dir.join("out"))
        .args([
            "--color",
            "contacts",
            "--width",
            "96",
            "--height",
            "72",
            "--capture",
        ])
        .arg(acl_dir.join("png"))
        .output()
        .unwrap();
    check_ok(&out);
    assert!(acl_dir.join("png/frame_0001.png").is_file());
    // --color updates: the rebuilds per segment counted on the GPU.
    let upd = bin()
        .arg("run")
        .arg(&acl)
        .args(["--backend", "gpu", "--frames", "1", "--color", "updates"])
        .args(["--width", "96", "--height", "72", "--capture"])
        .arg(acl_dir.join("updates"))
        .output()
        .unwrap();
    check_ok(&upd);
    assert!(acl_dir.join("updates/frame_0001.png").is_file());
    // The contact matrix of a GPU run (into the capture's directory): the touching pairs and the
    // GPU's contact sets.
    let m = acl_dir.join("png/contact_matrix_0001.png");
    let img = image::open(&m)
        .unwrap_or_else(|e| panic!("{}: {e}", m.display()))
        .to_rgb8();
    assert_eq!((img.width(), img.height()), (300, 300));
    assert!(
        text(&out.stderr).contains("contact sets"),
        "{}",
        text(&out.stderr)
    );
    let recs = read_stats(&acl_dir.join("s.jsonl"));
    assert_eq!(recs.len(), 1);
    for k in [
        "contact_sets",
        "rebuilds",
        "rebuild_fraction",
        "entries_tracked",
        "entries_examined",
        "entries_processed",
    ] {
        assert!(
            recs[0][k].as_f64().is_some_and(|v| v >= 0.0),
            "{k} in {}",
            recs[0]
        );
    }
    assert!(
        recs[0]["entries_tracked"].as_f64().unwrap() > 0.0,
        "{}",
        recs[0]
    );
    // The frame's total of rebuilds, as the CPU path writes it (its value against the CPU
    // frame's: tests/gpu_step.rs `acl_frame_statistics_count_only_the_frames_steps`).
    assert!(
        recs[0]["rebuilds_frame"].as_f64().is_some_and(|v| v >= 0.0),
        "no rebuilds_frame in {}",
        recs[0]
    );
    // The kernel times of the frame's timed step, though ACL's budgets change the step's
    // recording within the frame (they were all 0 then, until 2026-12-06).
    if timed {
        let r = &recs[0];
        for k in [
            "gpu_step_ms",
            "gpu_contact_ms",
            "set_force_ms",
            "schedule_process_ms",
        ] {
            assert!(r[k].as_f64().is_some_and(|v| v > 0.0), "{k} in {r}");
        }
        assert!(
            r["gpu_contact_ms"].as_f64() < r["gpu_step_ms"].as_f64(),
            "{r}"
        );
        let stages = yarnsim::acl::gpu::STAGE_KEYS;
        check_time_keys(r, r["steps"].as_f64().unwrap(), &stages);
        let missing = cpu_keys_missing(&acl, &acl_dir, r);
        assert!(missing.is_empty(), "the GPU's record lacks {missing:?}");
    }
    // The tiny swatch's paged pools fit one buffer each (src/acl/pages.rs).
    for k in ["block_pages", "term_pages", "scratch_pages", "watch_pages"] {
        assert_eq!(recs[0][k].as_f64(), Some(1.0), "{k} in {}", recs[0]);
    }
}

#[test]
fn contact_models_add_their_counters_to_the_stats() {
    let dir = scratch("contact");
    let keys = |model: &str| -> Vec<String> {
        let sub = dir.join(model);
        std::fs::create_dir_all(&sub).unwrap();
        let scene = tiny_scene(&sub, model);
        let out = bin()
            .arg("run")
            .arg(&scene)
            .args(["--frames", "1", "--stats"])
            .arg(sub.join("s.jsonl"))
            .output()
            .unwrap();
        check_ok(&out);
        let line = std::fs::read_to_string(sub.join("s.jsonl")).unwrap();
        let r: serde_json::Value = serde_json::from_str(line.trim()).unwrap();
        r.as_object().unwrap().keys().cloned().collect()
    };
    let none = keys("none");
    for model in ["exact", "acl"] {
        let with = keys(model);
        assert!(none.iter().all(|k| with.contains(k)), "{model}: {with:?}");
        assert!(
            with.contains(&"touching_pairs".to_string()),
            "{model}: {with:?}"
        );
    }
}

/// `yarnsim info SCENE --json ARGS…`, which must succeed, as its one JSON object.
fn info_json(scene: &Path, args: &[&str]) -> serde_json::Value {
    let out = bin()
        .arg("info")
        .arg(scene)
        .arg("--json")
        .args(args)
        .output()
        .unwrap();
    check_ok(&out);
    serde_json::from_slice(&out.stdout).expect("one JSON object")
}

#[test]
fn info_json_reports_the_scene_size() {
    let dir = scratch("info");
    let scene = tiny_scene(&dir, "none");
    let v = info_json(&scene, &[]);
    // Two open yarns of 12 points (9 segments each) and a closed ring of 10 (10 segments).
    assert_eq!(v["yarns"], 3);
    assert_eq!(v["control_points"], 34);
    assert_eq!(v["segments"], 28);
    assert_eq!(v["quadrature_points"], 28 * 11);
    assert!(v["loops"].is_u64());
    assert!(v["adapters"].is_array());
    // No balls: a mass of 0, not -0.0.
    assert_eq!(v["balls"], 0);
    assert!(
        v["ball_mass"].as_f64().unwrap().is_sign_positive(),
        "{}",
        v["ball_mass"]
    );

    let out = bin().arg("info").output().unwrap();
    check_ok(&out);
    assert!(text(&out.stdout).contains("GPU adapters"));
}

/// `info` previews a run's GPU limits: `YARNSIM_GPU_BINDING_LIMIT` lowers each adapter's binding
/// size in its rows as it lowers a run's (info ignored it, and a bad value), and `--set` without
/// a scene is refused (it was ignored, exit 0).
#[test]
fn info_takes_the_binding_limit_a_run_takes() {
    let dir = scratch("info_limit");
    let scene = tiny_scene(&dir, "exact");
    let out = bin()
        .arg("info")
        .arg(&scene)
        .arg("--json")
        .env("YARNSIM_GPU_BINDING_LIMIT", "1000000")
        .output()
        .unwrap();
    check_ok(&out);
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    for ad in v["gpu_needs"].as_array().into_iter().flatten() {
        let offered: Vec<u64> = ad["limits"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|r| r["limit"] == "max_storage_buffer_binding_size")
            .map(|r| r["offered"].as_u64().unwrap())
            .collect();
        assert!(!offered.is_empty(), "{ad}");
        assert!(offered.iter().all(|&o| o == 1_000_000), "{ad}");
    }
    // ACL's capacities lowered to a binding of 100,000 bytes: the JSON's verdict is the text's
    // conditional one ("fits" alone read as unconditional).
    let out = bin()
        .args(["info", "--json", "--set", "contact.model=acl"])
        .arg(&scene)
        .env("YARNSIM_GPU_BINDING_LIMIT", "100000")
        .output()
        .unwrap();
    check_ok(&out);
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    for ad in v["gpu_needs"].as_array().into_iter().flatten() {
        assert_eq!(
            ad["verdict"], "fits_if_contacts_stay_within_the_limit",
            "{ad}"
        );
    }
    let out = bin()
        .arg("info")
        .arg(&scene)
        .env("YARNSIM_GPU_BINDING_LIMIT", "abc")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(
        text(&out.stderr).contains("YARNSIM_GPU_BINDING_LIMIT=\"abc\""),
        "{}",
        text(&out.stderr)
    );
    let out = bin()
        .args(["info", "--set", "contact.model=exact"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(
        text(&out.stderr).contains("give the scene"),
        "{}",
        text(&out.stderr)
    );
}

/// `info` counts the contact buffers too: with exact contact, the GPU path's first capacities (one
/// detection of the initial state) and each adapter's rows for their buffers; with ACL, the first
/// capacities the run lowers to the binding size (none for this small scene).
#[test]
fn info_counts_the_contact_buffers() {
    let dir = scratch("info_contact");
    let scene = tiny_scene(&dir, "exact");
    let v = info_json(&scene, &[]);
    let caps: Vec<u64> = v["exact_capacities"]
        .as_array()
        .expect("exact_capacities")
        .iter()
        .map(|c| c.as_u64().unwrap())
        .collect();
    assert_eq!(caps.len(), 3);
    assert!(caps.iter().all(|&c| c >= 64), "{caps:?}");
    let adapters = v["adapters"].as_array().unwrap().len();
    let needs = v["gpu_needs"].as_array().map(|a| a.len()).unwrap_or(0);
    assert_eq!(needs, adapters, "{v}");
    for ad in v["gpu_needs"].as_array().into_iter().flatten() {
        let row = |what: &str| {
            ad["limits"]
                .as_array()
                .unwrap()
                .iter()
                .find(|r| r["what"] == what)
                .unwrap_or_else(|| panic!("no row {what}: {ad}"))["needed"]
                .as_u64()
                .unwrap()
        };
        // 144 bytes a candidate pair's record, 8 gather slots of 16 bytes a touching record.
        assert_eq!(
            row("exact contact: candidate pairs' records (bytes)"),
            144 * caps[1]
        );
        assert_eq!(
            row("exact contact: touching records' gather slots (bytes)"),
            128 * caps[2]
        );
        assert_eq!(ad["fits"], true);
    }
    let out = bin().arg("info").arg(&scene).output().unwrap();
    check_ok(&out);
    if adapters > 0 {
        assert!(
            text(&out.stdout).contains("exact contact: candidate pairs' records"),
            "{}",
            text(&out.stdout)
        );
    }

    let v = info_json(&scene, &["--set", "contact.model=acl"]);
    assert!(v.get("exact_capacities").is_none(), "{v}");
    for ad in v["gpu_needs"].as_array().into_iter().flatten() {
        assert_eq!(ad["acl_lowered"], serde_json::json!([]), "{ad}");
        assert_eq!(ad["acl_paged"], serde_json::json!([]), "{ad}");
        assert_eq!(ad["fits"], true);
        assert_eq!(ad["verdict"], "fits");
    }
}

fn ring(center: [f32; 3], axis: usize) -> Curve {
    Curve {
        points: (0..16)
            .map(|i| {
                let a = i as f32 / 16.0 * std::f32::consts::TAU;
                let (c, s) = (a.cos(), a.sin());
                match axis {
                    0 => [center[0] + c, center[1] + s, center[2]],
                    _ => [center[0] + c, center[1], center[2] + s],
                }
            })
            .collect(),
        closed: true,
    }
}

#[test]
fn links_prints_the_certificate() {
    let dir = scratch("links");
    // Two rings through each other (a Hopf link), and a third far away.
    let curves = vec![
        ring([0.0, 0.0, 0.0], 0),
        ring([1.0, 0.0, 0.0], 1),
        ring([10.0, 0.0, 0.0], 0),
    ];
    let file = dir.join("rings.bcc");
    yarnsim::bcc::write(&file, &curves).unwrap();
    let out = bin().arg("links").arg(&file).output().unwrap();
    check_ok(&out);
    let stdout = text(&out.stdout);
    let lines: Vec<&str> = stdout.lines().collect();
    assert_eq!(lines[0], "3", "{stdout}");
    assert_eq!(lines.len(), 2, "{stdout}");
    assert!(lines[1] == "0,1,1" || lines[1] == "0,1,-1", "{stdout}");

    let err = failure(bin().arg("links").arg(dir.join("nope.bcc")));
    assert!(err.contains("nope.bcc"), "{err}");
}

/// `links --compare CERT`: a knit tube's certificate, saved, then compared with the same tube (no
/// change, exit 0), with the tube where one leg of course 2 is pushed through course 1 (exit 3,
/// naming that pair), and with a certificate of another loop count; `links SCENE.toml` certifies the
/// scene's generated cloth, and `--direct` gives the same certificate.
#[test]
fn links_compare_names_the_pair_pushed_through() {
    let dir = scratch("links-compare");
    let t = tube::tube(12, 5);
    let (orig, pushed) = (dir.join("tube.bcc"), dir.join("pushed.bcc"));
    yarnsim::bcc::write(&orig, &t).unwrap();
    yarnsim::bcc::write(&pushed, &tube::push_leg_through(&t, 4, 2)).unwrap();
    let out = bin().arg("links").arg(&orig).output().unwrap();
    check_ok(&out);
    assert_eq!(text(&out.stdout), "5\n");
    let cert = dir.join("tube.cert");
    std::fs::write(&cert, &out.stdout).unwrap();

    // The same cloth from a scene file, by both methods.
    let scene = dir.join("tube.toml");
    std::fs::write(
        &scene,
        "[[cloth]]\nsource.generator = { pattern = \"tube\", wales = 12, courses = 5 }\n",
    )
    .unwrap();
    for direct in [false, true] {
        let mut cmd = bin();
        cmd.arg("links").arg(&scene);
        if direct {
            cmd.arg("--direct");
        }
        let out = cmd.output().unwrap();
        check_ok(&out);
        assert_eq!(text(&out.stdout), "5\n", "direct: {direct}");
    }

    let compare = |file: &Path, cert: &Path| {
        bin()
            .arg("links")
            .arg(file)
            .arg("--compare")
            .arg(cert)
            .output()
            .unwrap()
    };
    let same = compare(&orig, &cert);
    check_ok(&same);
    assert_eq!(text(&same.stdout), "");
    assert!(
        text(&same.stderr).contains("unchanged"),
        "{}",
        text(&same.stderr)
    );

    let changed = compare(&pushed, &cert);
    assert_eq!(changed.status.code(), Some(3), "{}", text(&changed.stderr));
    let stdout = text(&changed.stdout);
    assert!(stdout == "1,2,0,1\n" || stdout == "1,2,0,-1\n", "{stdout}");
    assert!(text(&changed.stderr).contains("1 loop pair changed its linking number"));
    // The direct sum agrees on the pushed tube.
    let fast = bin().arg("links").arg(&pushed).output().unwrap();
    let direct = bin()
        .arg("links")
        .arg(&pushed)
        .arg("--direct")
        .output()
        .unwrap();
    check_ok(&fast);
    check_ok(&direct);
    assert_eq!(text(&fast.stdout), text(&direct.stdout));
    assert_eq!(text(&fast.stdout), format!("5\n1,2,{}", &stdout[6..]));

    // Another loop count is a change even without pair differences.
    let six = dir.join("six.cert");
    std::fs::write(&six, "6\n").unwrap();
    let other = compare(&orig, &six);
    assert_eq!(other.status.code(), Some(3));
    assert_eq!(text(&other.stdout), "");
    assert!(
        text(&other.stderr).contains("closed loops: 6"),
        "{}",
        text(&other.stderr)
    );

    // A malformed certificate is an error (exit 1) naming the file and the line.
    let bad = dir.join("bad.cert");
    std::fs::write(&bad, "5\n0,1\n").unwrap();
    let out = compare(&orig, &bad);
    assert_eq!(out.status.code(), Some(1));
    let err = text(&out.stderr);
    assert!(err.contains("bad.cert") && err.contains("line 2"), "{err}");
}

#[test]
fn render_and_capture_write_pngs() {
    // Only asks whether this machine has an adapter (skips loudly, or fails under CI=true); the
    // binary opens its own device.
    if yarnsim::gpu::testing::gpu_or_skip("render_and_capture_write_pngs").is_none() {
        return;
    }
    let dir = scratch("render");
    let scene = tiny_scene(&dir, "none");
    let out = bin()
        .arg("run")
        .arg(&scene)
        .args([
            "--frames",
            "1",
            "--width",
            "64",
            "--height",
            "48",
            "--capture",
        ])
        .arg(dir.join("png"))
        .output()
        .unwrap();
    check_ok(&out);
    for k in 0..=1 {
        let p = dir.join("png").join(format!("frame_{k:04}.png"));
        let img = image::open(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
        assert_eq!((img.width(), img.height()), (64, 48));
    }
    let out = bin()
        .arg("render")
        .arg(dir.join("tiny.bcc"))
        .arg("--out")
        .arg(dir.join("state.png"))
        .args(["--width", "32", "--height", "24", "--scene"])
        .arg(&scene)
        .output()
        .unwrap();
    check_ok(&out);
    assert!(
        !text(&out.stderr).contains("warning"),
        "{}",
        text(&out.stderr)
    );
    let img = image::open(dir.join("state.png")).unwrap();
    assert_eq!((img.width(), img.height()), (32, 24));
    // A camera that looks away from the cloth draws no yarn: said, not a blank image without a
    // word (render and capture alike); so is a state with no yarn at all.
    let away = dir.join("away.toml");
    let text_of = std::fs::read_to_string(&scene).unwrap();
    std::fs::write(
        &away,
        format!("{text_of}\n[camera]\nposition = [0, 0, 50]\ntarget = [0, 0, 100]\n"),
    )
    .unwrap();
    let out = bin()
        .arg("render")
        .arg(dir.join("tiny.bcc"))
        .arg("--out")
        .arg(dir.join("away.png"))
        .args(["--width", "32", "--height", "24", "--scene"])
        .arg(&away)
        .output()
        .unwrap();
    check_ok(&out);
    let err = text(&out.stderr);
    assert!(
        err.contains("warning:")
            && err.contains("control points is in view of the [camera] of")
            && err.contains("away.toml"),
        "{err}"
    );
    let out = bin()
        .arg("run")
        .arg(&away)
        .args([
            "--frames",
            "0",
            "--width",
            "32",
            "--height",
            "24",
            "--capture",
        ])
        .arg(dir.join("away"))
        .output()
        .unwrap();
    check_ok(&out);
    let err = text(&out.stderr);
    assert!(
        err.contains("warning: --capture: frame 0: none of the yarn's")
            && err.contains("in view of the scene's [camera]"),
        "{err}"
    );
    let empty = dir.join("empty.bcc");
    yarnsim::bcc::write(&empty, &[]).unwrap();
    let out = bin()
        .arg("render")
        .arg(&empty)
        .arg("--out")
        .arg(dir.join("empty.png"))
        .args(["--width", "32", "--height", "24"])
        .output()
        .unwrap();
    check_ok(&out);
    let err = text(&out.stderr);
    assert!(err.contains("there is no yarn to draw"), "{err}");
}

/// `scenes/tiny.toml`: a 4 × 4-loop swatch that starts in contact (540 steps a frame).
fn tiny_swatch() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("scenes/tiny.toml")
}

/// Pixels of an update red (the renderer's `UPDATE_RED` over a yarn colour, lit): strongly red,
/// which neither the tiny swatch's one yarn colour (blue) nor the grey floor or background is.
fn red_pixels(img: &image::RgbImage) -> usize {
    img.pixels()
        .filter(|p| {
            let [r, g, b] = p.0.map(|c| c as f32);
            r > 120.0 && r > 2.0 * g && r > 1.5 * b
        })
        .count()
}

#[test]
fn capture_colour_modes() {
    if yarnsim::gpu::testing::gpu_or_skip("capture_colour_modes").is_none() {
        return;
    }
    let dir = scratch("colour");
    let capture = |model: &str, color: &str| -> Vec<image::RgbImage> {
        let png = dir.join(format!("{model}-{color}"));
        let out = bin()
            .arg("run")
            .arg(tiny_swatch())
            .args(["--frames", "1", "--width", "96", "--height", "72"])
            .args(["--set", &format!("contact.model={model}")])
            .args(["--color", color, "--capture"])
            .arg(&png)
            .output()
            .unwrap();
        check_ok(&out);
        (0..=1)
            .map(|k| {
                let p = png.join(format!("frame_{k:04}.png"));
                let img = image::open(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
                assert_eq!((img.width(), img.height()), (96, 72));
                img.to_rgb8()
            })
            .collect()
    };
    // Frame 0 is the (relaxed) initial state: nothing rebuilt yet. The first frame builds every
    // contact set.
    let acl = capture("acl", "updates");
    assert_eq!(red_pixels(&acl[0]), 0);
    assert!(red_pixels(&acl[1]) > 200, "{}", red_pixels(&acl[1]));
    // The exact model recomputes every contact every step: everything touching is red.
    let exact = capture("exact", "updates");
    assert_eq!(red_pixels(&exact[0]), 0);
    assert!(red_pixels(&exact[1]) > 200, "{}", red_pixels(&exact[1]));
    // Per-yarn colours show no red; contact density is another picture of the same frame.
    let yarn = capture("acl", "yarn");
    assert_eq!(red_pixels(&yarn[1]), 0);
    let contacts = capture("acl", "contacts");
    assert_ne!(contacts[1], yarn[1]);
}

#[test]
fn colour_mode_errors() {
    let dir = scratch("colour-errors");
    let out = bin()
        .arg("run")
        .arg(tiny_swatch())
        .args(["--color", "red", "--capture"])
        .arg(dir.join("png"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = text(&out.stderr);
    assert!(err.contains("yarn, updates, contacts"), "{err}");

    // Needs a contact model; refused before any GPU is opened or frame computed.
    let out = bin()
        .arg("run")
        .arg(tiny_swatch())
        .args([
            "--set",
            "contact.model=none",
            "--color",
            "updates",
            "--capture",
        ])
        .arg(dir.join("png"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let err = text(&out.stderr);
    assert!(err.contains("contact.model = none"), "{err}");
    assert!(!dir.join("png").exists());

    // Only with --capture.
    let out = bin()
        .arg("run")
        .arg(tiny_swatch())
        .args(["--color", "updates"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
}

/// The capture's options are refused without `--capture`, as `--color` is, rather than ignored by
/// a run that captures nothing (the README's usage nests them under it).
#[test]
fn capture_options_need_a_capture() {
    for args in [
        &["--width", "96"][..],
        &["--height", "72"][..],
        &["--capture-every", "2"][..],
    ] {
        let out = bin()
            .arg("run")
            .arg(tiny_swatch())
            .args(["--frames", "0", "--set", "relax.time=0", "-q"])
            .args(args)
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        let err = text(&out.stderr);
        assert!(err.contains("--capture <DIR>"), "{args:?}: {err}");
    }
}

#[test]
fn contact_matrix_shows_pairs_and_boxes() {
    let dir = scratch("matrix");
    let matrix = |model: &str| -> image::RgbImage {
        let sub = dir.join(model);
        let out = bin()
            .arg("run")
            .arg(tiny_swatch())
            .args(["--frames", "1", "--set", &format!("contact.model={model}")])
            .args(["--contact-matrix", "1:737", "--out"])
            .arg(&sub)
            .output()
            .unwrap();
        check_ok(&out);
        let p = sub.join("contact_matrix_0001.png");
        let img = image::open(&p)
            .unwrap_or_else(|e| panic!("{}: {e}", p.display()))
            .to_rgb8();
        assert_eq!((img.width(), img.height()), (737, 737));
        img
    };
    let black = |img: &image::RgbImage| img.pixels().filter(|p| p.0 == [0, 0, 0]).count();
    let acl = matrix("acl");
    assert!(red_pixels(&acl) > 0);
    assert!(black(&acl) > 0, "contact-set boxes are outlined");
    // The exact model has touching pairs but no contact sets.
    let exact = matrix("exact");
    assert!(red_pixels(&exact) > 0);
    assert_eq!(black(&exact), 0);

    for (args, want) in [
        (&["--contact-matrix", "1"][..], "--capture or --out"),
        (
            &["--contact-matrix", "9", "--out", "x"][..],
            "frames 0 to 1",
        ),
        (&["--contact-matrix", "1:0", "--out", "x"][..], "size"),
    ] {
        let out = bin()
            .arg("run")
            .arg(tiny_swatch())
            .args(["--frames", "1"])
            .args(args)
            .current_dir(&dir)
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(1), "{args:?}");
        let err = text(&out.stderr);
        assert!(err.contains(want), "{args:?}: {err}");
    }
}

#[test]
fn obj_frames_parse_back_to_the_bcc_frames() {
    let dir = scratch("obj");
    let scene = tiny_scene(&dir, "none");
    let out = bin()
        .arg("run")
        .arg(&scene)
        .args(["--frames", "2", "--obj", "--out"])
        .arg(dir.join("frames"))
        .output()
        .unwrap();
    check_ok(&out);
    for k in 0..=2 {
        let f = dir.join("frames");
        let bcc = yarnsim::bcc::read(&f.join(format!("frame_{k:04}.bcc"))).unwrap();
        let obj = yarnsim::export::read_obj(&f.join(format!("frame_{k:04}.obj"))).unwrap();
        assert_eq!(obj, bcc, "frame {k}");
        assert!(obj.iter().any(|c| c.closed) && obj.iter().any(|c| !c.closed));
    }
    // Without --obj, no OBJ files; --obj needs --out.
    let out = bin()
        .arg("run")
        .arg(&scene)
        .args(["--frames", "1", "--out"])
        .arg(dir.join("plain"))
        .output()
        .unwrap();
    check_ok(&out);
    assert!(!dir.join("plain/frame_0001.obj").exists());
    assert!(dir.join("plain/frame_0001.bcc").exists());
    let out = bin().arg("run").arg(&scene).arg("--obj").output().unwrap();
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn runtime_dir_is_one_private_folder_per_user() {
    // Without XDG_RUNTIME_DIR the binary makes one under TMPDIR for the Vulkan loader; two runs share
    // it and leave nothing else behind.
    let dir = scratch("xdg");
    for _ in 0..2 {
        let out = bin()
            .arg("info")
            .env_remove("XDG_RUNTIME_DIR")
            .env("TMPDIR", &dir)
            .output()
            .unwrap();
        check_ok(&out);
        assert!(
            !text(&out.stderr).contains("XDG_RUNTIME_DIR"),
            "{}",
            text(&out.stderr)
        );
    }
    let entries: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    assert_eq!(entries.len(), 1, "{entries:?}");
    let name = entries[0]
        .file_name()
        .unwrap()
        .to_string_lossy()
        .into_owned();
    assert!(name.starts_with("yarnsim-xdg-"), "{name}");
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&entries[0]).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o700);
    }
}

/// The ACL statistics of `--stats` (issue 4, item 8): contact sets, rebuilds and the rebuild fraction,
/// schedule entries tracked / examined / processed, and the time of each phase (raster, newcomers,
/// schedule, coalesce, evaluate, rebuild), on scenes/tiny.toml (a 4 × 4-loop swatch whose yarns touch
/// from the start).
///
/// A frame record holds each value's mean over the frame's steps. What holds at every step, and so for
/// the means: every count is a whole number (its mean times the steps is the frame's total); tracked ≥
/// examined ≥ processed (src/sched.rs: `tracked` is the live entries after the step, none removed
/// after the examination; each live entry is examined at most once a step, its ticket advancing when
/// it is; `processed` counts only examined entries); `contact_ms` is the sum of the six phases. With one
/// step per frame the records are the steps themselves, and then also `rebuild_fraction` = rebuilds /
/// contact sets, and at the first step every contact set is built (fraction 1).
///
/// The rebuild fraction is asserted to lie in [0, 1]. It is rebuilds over the sets alive after the
/// step, so a step that rebuilt more sets than survive it (sets rebuilt and then deleted, or rebuilt
/// again after a merge) could exceed 1; none does on this scene.
#[test]
fn acl_stats_report_sets_rebuilds_entries_and_phase_times() {
    const COUNTS: [&str; 6] = [
        "contact_sets",
        "rebuilds",
        "entries_tracked",
        "entries_examined",
        "entries_processed",
        "touching_pairs",
    ];
    const PHASES: [&str; 6] = [
        "raster_ms",
        "newcomers_ms",
        "schedule_ms",
        "coalesce_ms",
        "evaluate_ms",
        "rebuild_ms",
    ];
    let dir = scratch("acl-stats");
    let scene = Path::new(env!("CARGO_MANIFEST_DIR")).join("scenes/tiny.toml");
    let run = |name: &str, frames: &str, extra: &[&str]| -> Vec<serde_json::Value> {
        let file = dir.join(name);
        let out = bin()
            .arg("run")
            .arg(&scene)
            .args(["--frames", frames, "--set", "contact.model=acl"])
            .args(extra)
            .arg("--stats")
            .arg(&file)
            .output()
            .unwrap();
        check_ok(&out);
        read_stats(&file)
    };
    let check = |r: &serde_json::Value| {
        let get = |k: &str| -> f64 {
            let v = r[k]
                .as_f64()
                .unwrap_or_else(|| panic!("{k} missing or not a number in {r}"));
            assert!(v.is_finite() && v >= 0.0, "{k} = {v} in {r}");
            v
        };
        let steps = r["steps"].as_u64().unwrap() as f64;
        for k in COUNTS {
            let total = get(k) * steps;
            assert!(
                (total - total.round()).abs() < 1e-6 * total.max(1.0),
                "{k}: {} × {steps} steps is not a whole number",
                get(k)
            );
        }
        let rebuilds_frame = get("rebuilds_frame");
        assert_eq!(
            rebuilds_frame,
            rebuilds_frame.round(),
            "rebuilds_frame is a count"
        );
        assert!(
            (rebuilds_frame - get("rebuilds") * steps).abs() < 1e-6 * rebuilds_frame.max(1.0),
            "rebuilds_frame {rebuilds_frame} is not the frame's total of rebuilds per step in {r}"
        );
        let fraction = get("rebuild_fraction");
        assert!(fraction <= 1.0, "rebuild fraction {fraction} in {r}");
        assert!(get("contact_sets") > 0.0, "no contact sets in {r}");
        assert!(get("touching_pairs") > 0.0, "no touching pairs in {r}");
        let (tracked, examined, processed) = (
            get("entries_tracked"),
            get("entries_examined"),
            get("entries_processed"),
        );
        assert!(tracked > 0.0, "{r}");
        assert!(
            tracked >= examined && examined >= processed,
            "tracked {tracked}, examined {examined}, processed {processed}"
        );
        let phases: f64 = PHASES.iter().map(|k| get(k)).sum();
        let total = get("contact_ms");
        assert!(
            (phases - total).abs() <= 1e-9 * total.max(1e-3),
            "phases {phases} ms, contact {total} ms"
        );
    };
    // Two frames of the scene's own 540 steps.
    let frames = run("frames.jsonl", "2", &[]);
    assert_eq!(frames.len(), 2);
    for r in &frames {
        assert_eq!(r["steps"], 540);
        check(r);
    }
    // The first frame builds sets (every set is built at its first step).
    let rebuilds: Vec<f64> = frames
        .iter()
        .map(|r| r["rebuilds"].as_f64().unwrap())
        .collect();
    assert!(rebuilds[0] > 0.0, "{rebuilds:?}");
    // One step per frame: each record is one step.
    let steps = run(
        "steps.jsonl",
        "40",
        &[
            "--set",
            "simulation.dt=1e-4",
            "--set",
            "simulation.fps=10000",
        ],
    );
    assert_eq!(steps.len(), 40);
    for (n, r) in steps.iter().enumerate() {
        assert_eq!(r["steps"], 1);
        check(r);
        let (rebuilt, sets) = (
            r["rebuilds"].as_f64().unwrap(),
            r["contact_sets"].as_f64().unwrap(),
        );
        // (serde_json's default float parsing may be one unit in the last place off.)
        let fraction = r["rebuild_fraction"].as_f64().unwrap();
        assert!(
            (fraction - rebuilt / sets).abs() <= 1e-12,
            "step {n}: fraction {fraction}, {rebuilt} rebuilds of {sets} sets"
        );
        if n == 0 {
            assert_eq!(rebuilt, sets, "every set is built at the first step");
        }
    }
    // The scheduler examines a part of what it tracks and processes a part of that.
    assert!(steps
        .iter()
        .any(|r| r["entries_examined"].as_f64() < r["entries_tracked"].as_f64()));
    assert!(steps
        .iter()
        .any(|r| r["entries_processed"].as_f64() < r["entries_examined"].as_f64()));
}

/// `--quiet` prints nothing on success but still writes every output; the stats keep the detail the
/// shortened per-frame line leaves out.
#[test]
fn quiet_run_prints_nothing_and_writes_everything() {
    let dir = scratch("quiet");
    let scene = tiny_scene(&dir, "exact");
    let out = bin()
        .arg("run")
        .arg(&scene)
        .args(["--frames", "2", "--quiet", "--out"])
        .arg(dir.join("frames"))
        .arg("--stats")
        .arg(dir.join("stats.jsonl"))
        .output()
        .unwrap();
    check_ok(&out);
    assert!(out.stdout.is_empty(), "stdout: {}", text(&out.stdout));
    assert!(out.stderr.is_empty(), "stderr: {}", text(&out.stderr));
    assert!(dir.join("frames/frame_0002.bcc").is_file());
    let stats = std::fs::read_to_string(dir.join("stats.jsonl")).unwrap();
    assert_eq!(stats.lines().count(), 2);
    assert!(stats.contains("\"touching_pairs\""), "{stats}");

    // Without --quiet the per-frame line names the contact figures a person reads, not every
    // phase time.
    let out = bin()
        .arg("run")
        .arg(&scene)
        .args(["--frames", "1"])
        .output()
        .unwrap();
    check_ok(&out);
    let line = text(&out.stdout);
    assert!(line.starts_with("frame    1/1"), "{line}");
    assert!(line.contains("touching_pairs"), "{line}");
    assert!(!line.contains("_ms"), "{line}");
}

/// `--quiet` holds back the lines that only report what a run did: the contact matrices it
/// wrote, the radius `"auto"` fitted and how a `BS` file's B-splines were converted (they had
/// gone to stderr whatever `--quiet` said).
#[test]
fn quiet_run_says_nothing_of_its_matrices_fit_or_conversion() {
    let dir = scratch("quiet-reports");
    // The tiny swatch as generated, a `C0` file to which `yarn.radius = "auto"` fits.
    let out = bin()
        .arg("run")
        .arg(tiny_swatch())
        .args(["--frames", "0", "--set", "relax.time=0", "-q", "--out"])
        .arg(dir.join("gen"))
        .output()
        .unwrap();
    check_ok(&out);
    // Beside it, two wavy yarns 10 cm away whose control points are read as uniform cubic
    // B-splines: a `BS` file.
    let mut wavy = tiny_curves();
    wavy.truncate(2);
    for p in wavy.iter_mut().flat_map(|c| &mut c.points) {
        p[0] += 10.0;
    }
    let mut bytes = yarnsim::bcc::write_bytes(&wavy);
    bytes[4..6].copy_from_slice(b"BS");
    std::fs::write(dir.join("wavy_bs.bcc"), bytes).unwrap();
    let scene = dir.join("bs.toml");
    std::fs::write(
        &scene,
        r#"[simulation]
dt = 6.25e-5
fps = 1000.0

[yarn]
radius = "auto"

[contact]
model = "exact"

[[cloth]]
source = { bcc = { path = "gen/frame_0000.bcc" } }

[[cloth]]
source = { bcc = { path = "wavy_bs.bcc" } }
"#,
    )
    .unwrap();
    let run = |quiet: bool| {
        let mut cmd = bin();
        cmd.arg("run")
            .arg(&scene)
            .args(["--frames", "1", "--set", "relax.time=0"])
            .args(["--contact-matrix", "1", "--overwrite", "--out"])
            .arg(dir.join("frames"));
        if quiet {
            cmd.arg("--quiet");
        }
        let out = cmd.output().unwrap();
        check_ok(&out);
        assert!(dir.join("frames/contact_matrix_0001.png").is_file());
        out
    };
    // Without --quiet the three lines are there, so the quiet run below has them to hold back.
    let loud = text(&run(false).stderr);
    for want in ["fitted r = ", "B-splines subdivided", "wrote "] {
        assert!(loud.contains(want), "{want}: {loud}");
    }
    let quiet = run(true);
    assert!(quiet.stdout.is_empty(), "stdout: {}", text(&quiet.stdout));
    assert!(quiet.stderr.is_empty(), "stderr: {}", text(&quiet.stderr));
}

/// `yarnsim run SCENE ARGS` with stderr in a pipe, `YARNSIM_PROGRESS_SECS` = `secs` (unset:
/// `None`), with `--quiet` or not; asserts success and returns its stderr.
fn logged_run(scene: &Path, args: &[&str], secs: Option<&str>, quiet: bool) -> String {
    let mut cmd = bin();
    cmd.arg("run").arg(scene).args(args);
    if quiet {
        cmd.arg("--quiet");
    }
    match secs {
        Some(s) => cmd.env("YARNSIM_PROGRESS_SECS", s),
        None => cmd.env_remove("YARNSIM_PROGRESS_SECS"),
    };
    let out = cmd.output().unwrap();
    check_ok(&out);
    text(&out.stderr)
}

/// With stderr in a file (no terminal, so no bars), a long run says how far it is: a line every
/// `YARNSIM_PROGRESS_SECS` seconds during the relaxation and the frames (0 here: every step);
/// none with the default interval on a short run, none with `--quiet`.
#[test]
fn a_run_logs_its_progress_where_no_bar_shows() {
    let dir = scratch("progress");
    let scene = tiny_scene(&dir, "none");
    let run = |secs: Option<&str>, quiet: bool| {
        let args = ["--frames", "2", "--set", "relax.time=0.001"];
        logged_run(&scene, &args, secs, quiet)
    };
    let log = run(Some("0"), false);
    let lines: Vec<&str> = log.lines().collect();
    // 16 steps a frame: one line a step.
    for k in 1..=16 {
        let frame1 = format!("frame 1/2: step {k} of 32, ");
        assert!(lines.iter().any(|l| l.starts_with(&frame1)), "{log}");
    }
    assert!(
        lines
            .iter()
            .any(|l| l.starts_with("frame 2/2: step 32 of 32, ")),
        "{log}"
    );
    let relaxing: Vec<_> = lines
        .iter()
        .filter(|l| l.starts_with("relaxing "))
        .collect();
    assert!(
        !relaxing.is_empty() && relaxing[0].contains(": step 1 of at most 16, "),
        "{log}"
    );
    let quiet = run(Some("0"), true);
    assert!(quiet.is_empty(), "{quiet}");
    let default = run(None, false);
    assert!(
        !default.contains("frame 1/2: step") && !default.contains("relaxing "),
        "{default}"
    );
}

/// A `YARNSIM_PROGRESS_SECS` that is not a number of seconds is refused before the run makes
/// anything, naming the variable and its value; it was taken silently for the default, 60 s.
#[test]
fn a_progress_interval_that_is_not_seconds_is_refused() {
    let dir = scratch("progress-bad");
    let scene = tiny_scene(&dir, "none");
    for bad in ["5s", "-1", "nan"] {
        let out = dir.join("out");
        let err = failure(
            bin()
                .arg("run")
                .arg(&scene)
                .args(["--frames", "1", "--out"])
                .arg(&out)
                .env("YARNSIM_PROGRESS_SECS", bad),
        );
        assert!(
            err.contains(&format!(
                "YARNSIM_PROGRESS_SECS={bad:?}: not an interval in seconds"
            )),
            "{bad}: {err}"
        );
        assert!(!out.exists(), "{bad}");
    }
    // Spaces around a number are fine, and a variable set empty (`export VAR=`) is unset.
    for fine in [" 0.5 ", ""] {
        let log = logged_run(&scene, &["--frames", "1"], Some(fine), true);
        assert!(log.is_empty(), "{fine:?}: {log}");
    }
}

/// A GPU run says why a step takes long: each batch rerun whose failed attempt took at least
/// the shorter of 10 s and `YARNSIM_PROGRESS_SECS` (0 here: every one) prints a line naming what
/// grew or which budget was raised, and up to which step it runs again when that is before the
/// batch's end; none with the default interval on a short run (its attempts take milliseconds),
/// none with `--quiet`. (The tiny swatch's first frame, without its
/// relaxation, reruns for room and for budgets.)
#[test]
fn a_gpu_run_says_why_it_reruns() {
    if yarnsim::gpu::testing::gpu_or_skip("a_gpu_run_says_why_it_reruns").is_none() {
        return;
    }
    let run = |secs: Option<&str>, quiet: bool| {
        let args = ["--backend", "gpu", "--frames", "1", "--set", "relax.time=0"];
        logged_run(&tiny_swatch(), &args, secs, quiet)
    };
    let log = run(Some("0"), false);
    let reruns: Vec<&str> = log.lines().filter(|l| l.starts_with("rerun: ")).collect();
    assert!(!reruns.is_empty(), "{log}");
    // "rerun: steps A–B ran for T and run again[ up to step M]: WHY": a rerun runs its batch
    // only up to the step that needed more (the one ACL's reason names).
    let mut shorter = 0;
    for l in &reruns {
        let (_, again) = l.split_once(" and run again").expect(l);
        let (upto, why) = again.split_once(": ").expect(l);
        assert!(
            why.starts_with("ACL at step ") || why.starts_with("the length projection "),
            "{l}"
        );
        if let Some(m) = upto.strip_prefix(" up to step ") {
            shorter += 1;
            if let Some(at) = why.strip_prefix("ACL at step ") {
                assert!(at.starts_with(&format!("{m}: ")), "{l}");
            }
        } else {
            assert!(upto.is_empty(), "{l}");
        }
    }
    assert!(shorter > 0, "no rerun shorter than its attempt: {log}");
    assert!(
        reruns
            .iter()
            .any(|l| l.contains(" → ") && l.contains("steps ")),
        "{log}"
    );
    assert!(!run(Some("0"), true).contains("rerun: "));
    let default = run(None, false);
    assert!(!default.contains("rerun: "), "{default}");
}

/// The GPU backend's refusals are clear errors, before any frame is computed.
#[test]
fn gpu_backend_refuses_what_it_cannot_do() {
    let dir = scratch("gpu-refusals");
    let scene = tiny_scene(&dir, "none");
    let out = bin()
        .arg("run")
        .arg(&scene)
        .args(["--adapter", "x"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(
        text(&out.stderr).contains("--adapter picks the GPU of --backend gpu or --capture"),
        "{}",
        text(&out.stderr)
    );
}

/// `--adapter` naming no adapter there is: the error lists the adapters there are and says how to
/// pick one, not to install a driver (that advice is for a machine with no adapter at all).
#[test]
fn an_adapter_name_that_matches_none_lists_the_adapters() {
    let Some(guard) =
        yarnsim::gpu::testing::gpu_or_skip("an_adapter_name_that_matches_none_lists_the_adapters")
    else {
        return;
    };
    let adapter = guard.summary().name;
    drop(guard);
    let dir = scratch("adapter-name");
    let scene = tiny_scene(&dir, "none");
    let out = bin()
        .arg("run")
        .arg(&scene)
        .args([
            "--backend",
            "gpu",
            "--adapter",
            "zz-no-such-adapter",
            "--frames",
            "1",
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let err = text(&out.stderr);
    assert!(
        err.contains("no adapter named like \"zz-no-such-adapter\"")
            && err
                .split_once("there are: ")
                .is_some_and(|(_, list)| list.contains(&adapter))
            && err.contains("`--adapter` takes a part of one of these names"),
        "{err}"
    );
    assert!(!err.contains("install a Vulkan driver"), "{err}");
    assert!(!dir.join("frame_0001.bcc").exists());
}

/// Frames land on their times: when 1/(fps dt) is not a whole number, dt is adjusted (and the run
/// says so) instead of letting frame times drift; a frame per step is possible at any dt.
#[test]
fn frames_are_whole_steps_and_land_on_their_times() {
    let dir = scratch("frame-times");
    let scene = tiny_scene(&dir, "none");
    // dt = 7e-5 s at 1000 fps: 14.29 steps per frame → 14 steps of 1/14000 s.
    let out = bin()
        .arg("run")
        .arg(&scene)
        .args(["--frames", "3", "--set", "simulation.dt=7e-5", "--stats"])
        .arg(dir.join("s.jsonl"))
        .output()
        .unwrap();
    check_ok(&out);
    let err = text(&out.stderr);
    assert!(
        err.contains("note: simulation.dt = 7e-5 s is not a whole fraction"),
        "{err}"
    );
    assert!(err.contains("14 steps per frame"), "{err}");
    let recs = read_stats(&dir.join("s.jsonl"));
    for (k, r) in recs.iter().enumerate() {
        assert_eq!(r["steps"], 14);
        let t = r["sim_time"].as_f64().unwrap();
        assert!(
            (t - (k + 1) as f64 * 1e-3).abs() < 1e-12,
            "frame {}: t = {t}",
            k + 1
        );
    }
    // A frame per step, above the old cap of 10⁴ fps.
    let out = bin()
        .arg("run")
        .arg(&scene)
        .args([
            "--frames",
            "2",
            "--set",
            "simulation.dt=2e-5",
            "--set",
            "simulation.fps=50000",
        ])
        .output()
        .unwrap();
    check_ok(&out);
    assert!(
        !text(&out.stderr).contains("note:"),
        "{}",
        text(&out.stderr)
    );
    assert!(
        text(&out.stdout).contains("frame    2/2  t = 0.0000 s  1 steps"),
        "{}",
        text(&out.stdout)
    );
}

/// The printed and recorded length error is the edge strain of the state written for that frame
/// (recomputed here from the BCC frames: rest lengths from frame 0, the initial state, as the
/// topology takes them). The scene rests on a floor and hangs from pins, so object contact and
/// damping act after the length projection.
#[test]
fn reported_length_error_is_that_of_the_written_frame() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("scenes");
    let out_dir = scratch("length-error");
    let out = bin()
        .arg("run")
        .arg(dir.join("tiny.toml"))
        .args(["--frames", "2", "--set", "contact.model=none", "--out"])
        .arg(&out_dir)
        .arg("--stats")
        .arg(out_dir.join("s.jsonl"))
        .output()
        .unwrap();
    check_ok(&out);
    let recs = read_stats(&out_dir.join("s.jsonl"));
    let (topo, _) = yarnsim::state::Topology::from_curves(
        &yarnsim::bcc::read(&out_dir.join("frame_0000.bcc")).unwrap(),
    )
    .unwrap();
    for (k, r) in recs.iter().enumerate() {
        let curves = yarnsim::bcc::read(&out_dir.join(format!("frame_{:04}.bcc", k + 1))).unwrap();
        let (_, pos) = yarnsim::state::Topology::from_curves(&curves).unwrap();
        let strain = topo
            .edges
            .iter()
            .map(|e| {
                let (a, b) = (pos[e.a as usize], pos[e.b as usize]);
                let d: f64 = (0..3)
                    .map(|i| (b[i] as f64 - a[i] as f64).powi(2))
                    .sum::<f64>()
                    .sqrt();
                (d / e.rest_length as f64 - 1.0).abs()
            })
            .fold(0.0, f64::max);
        let reported = r["max_length_error"].as_f64().unwrap();
        // f32 positions and rest lengths: a few roundings of a relative 6e-8 each.
        assert!(
            (reported - strain).abs() <= 1e-6,
            "frame {}: reported {reported:e}, written frame has {strain:e}",
            k + 1
        );
        assert!(strain > 0.0);
        assert!(r["projection_error"].as_f64().is_some());
    }
}

/// `yarnsim table` on two small scenes: one Markdown row per scene and tolerance, every cell parses,
/// the speed-ups are the ratios of the printed times (to the printed two decimals), and the JSON
/// holds the same measurements.
#[test]
fn table_prints_rows_whose_speedups_are_the_ratios_of_their_times() {
    let dir = scratch("table");
    let second = dir.join("rib.toml");
    std::fs::write(
        &second,
        "[[cloth]]\nsource.generator = { pattern = \"garter\", wales = 3, courses = 3 }\n",
    )
    .unwrap();
    let json = dir.join("table.json");
    let out = bin()
        .arg("table")
        .arg(tiny_swatch())
        .arg(&second)
        .args(["--steps", "20", "--warmup", "2"])
        .args(["--tolerance", "0.04", "--tolerance", "0.3", "--json"])
        .arg(&json)
        .output()
        .unwrap();
    check_ok(&out);
    let stdout = text(&out.stdout);
    let rows: Vec<Vec<String>> = stdout
        .lines()
        .filter(|l| l.starts_with("| ") && !l.starts_with("| scene"))
        .map(|l| {
            l.trim_matches('|')
                .split('|')
                .map(|c| c.trim().to_string())
                .collect()
        })
        .collect();
    assert_eq!(rows.len(), 4, "{stdout}");
    let num = |s: &str| -> f64 {
        s.trim_end_matches(['x', '%'])
            .parse()
            .unwrap_or_else(|e| panic!("{s:?}: {e}"))
    };
    for (k, r) in rows.iter().enumerate() {
        assert_eq!(r.len(), 13, "{r:?}");
        assert_eq!(r[0], if k < 2 { "tiny" } else { "rib" });
        assert_eq!(num(&r[3]), [0.04, 0.3][k % 2]);
        for c in &r[1..12] {
            assert!(num(c).is_finite(), "{c} in {r:?}");
        }
        // Contact time and whole step: speed-up = exact / ACL as printed.
        for (old, new, up) in [(6, 7, 8), (9, 10, 11)] {
            let ratio = num(&r[old]) / num(&r[new]);
            assert!(
                (num(&r[up]) - ratio).abs() <= 0.005 + 1e-9,
                "{} vs {}/{} in {r:?}",
                r[up],
                r[old],
                r[new]
            );
        }
        let mem: Vec<f64> = r[12].split('/').map(|m| num(m.trim())).collect();
        assert!(mem.len() == 2 && mem.iter().all(|&m| m > 0.0), "{r:?}");
    }
    let doc: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let scenes = doc["scenes"].as_array().unwrap();
    assert_eq!(scenes.len(), 2);
    for (s, rows) in scenes.iter().zip(rows.chunks(2)) {
        assert_eq!(s["loops"].as_u64().unwrap().to_string(), rows[0][1]);
        assert_eq!(s["steps"], 20);
        // The small scenes relax within the default time.
        assert_eq!(s["relax"]["settled"], true, "{s}");
        for (a, r) in s["acl"].as_array().unwrap().iter().zip(rows) {
            assert_eq!(
                yarnsim::table::fmt_ms(a["contact_ms"].as_f64().unwrap()),
                r[7]
            );
            assert_eq!(
                yarnsim::table::fmt_ms(s["exact"]["step_ms"].as_f64().unwrap()),
                r[9]
            );
        }
    }
}

/// `table`'s tolerances are checked before anything is measured: one given twice (it was measured
/// twice, two equal rows), and one that is not a finite number ≥ 0.
#[test]
fn table_refuses_bad_tolerances_first() {
    for (args, words) in [
        (["0.04", "0.04"], "--tolerance 0.04: given twice"),
        (["0.04", "NaN"], "--tolerance NaN: must be a finite number"),
    ] {
        let out = bin()
            .args([
                "table",
                "scenes/missing.toml",
                "--tolerance",
                args[0],
                "--tolerance",
                args[1],
            ])
            .output()
            .unwrap();
        let err = text(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{err}");
        assert!(err.contains(words), "{err}");
    }
}

/// `yarnsim table --from DIR` measures a saved run from its checkpoint (no relaxation here): its row
/// names the run and the frame measured (the checkpoint's, plus any `--start-frame`), its JSON has
/// no relaxation report; a run stopped during its relaxation,
/// `--set` with `--from`, and a directory without a checkpoint are clear errors.
#[test]
fn table_measures_a_saved_run_from_its_checkpoint() {
    let dir = scratch("table_from");
    let run_dir = dir.join("run");
    check_ok(
        &bin()
            .arg("run")
            .arg(tiny_swatch())
            .arg("--out")
            .arg(&run_dir)
            .args(["--frames", "1", "--checkpoint-every", "1", "-q"])
            .output()
            .unwrap(),
    );
    let json = dir.join("table.json");
    let out = bin()
        .arg("table")
        .arg("--from")
        .arg(&run_dir)
        .args(["--steps", "10", "--warmup", "2", "-q", "--json"])
        .arg(&json)
        .output()
        .unwrap();
    check_ok(&out);
    let stdout = text(&out.stdout);
    let label = format!("{}, frame 1", run_dir.display());
    let row = stdout
        .lines()
        .find(|l| l.starts_with("| ") && !l.starts_with("| scene"))
        .unwrap_or_else(|| panic!("no row: {stdout}"));
    assert!(row.contains(&label), "{row}");
    assert!(
        !text(&out.stderr).contains("relax"),
        "{}",
        text(&out.stderr)
    );
    let doc: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let s = &doc["scenes"][0];
    assert_eq!(
        doc["scenes"].as_array().unwrap().len(),
        1,
        "only the saved run"
    );
    assert_eq!(s["start"], label.as_str());
    assert!(s["relax"].is_null(), "{s}");
    assert!(s["exact"]["contacts"].as_f64().unwrap() > 0.0, "{s}");
    assert_eq!(s["steps"], 10);
    // With --start-frame the row names the frame measured: the checkpoint's and the frames run
    // on from it (it named the checkpoint's alone).
    let out = bin()
        .arg("table")
        .arg("--from")
        .arg(&run_dir)
        .args(["--steps", "2", "--warmup", "0", "--start-frame", "1", "-q"])
        .output()
        .unwrap();
    check_ok(&out);
    let stdout = text(&out.stdout);
    assert!(
        stdout.contains(&format!("{}, frame 2)", run_dir.display())),
        "{stdout}"
    );

    let fails = |args: &[&std::ffi::OsStr]| -> String {
        let out = bin().arg("table").args(args).output().unwrap();
        let err = text(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{err}");
        assert!(!err.contains("panicked"), "{err}");
        err
    };
    let err = fails(&[
        "--from".as_ref(),
        run_dir.as_os_str(),
        "--set".as_ref(),
        "relax.time=0".as_ref(),
    ]);
    assert!(err.contains("--set changes the SCENES given"), "{err}");
    let empty = dir.join("empty");
    std::fs::create_dir_all(&empty).unwrap();
    let err = fails(&["--from".as_ref(), empty.as_os_str()]);
    assert!(err.contains("cannot use its checkpoint"), "{err}");
    // A run killed while it relaxes leaves a checkpoint of its relaxation.
    let relaxing = dir.join("relaxing");
    let mut cmd = bin();
    cmd.arg("run")
        .arg(tiny_swatch())
        .arg("--out")
        .arg(&relaxing)
        .args(["--frames", "1", "--checkpoint-every", "1", "-q"]);
    if relax_kill::kill_at_first_checkpoint(&mut cmd, &relaxing).is_some() {
        let err = fails(&["--from".as_ref(), relaxing.as_os_str()]);
        assert!(err.contains("stopped during its relaxation"), "{err}");
        assert!(err.contains("yarnsim run --resume"), "{err}");
    } else {
        eprintln!("the run had relaxed before the kill: the refusal was not exercised");
    }
}

/// `yarnsim table --backend gpu` runs every variant on the GPU step: the JSON names the backend and
/// the adapter, each variant took time, and the exact variant found contact.
#[test]
fn table_runs_its_variants_on_the_gpu() {
    if yarnsim::gpu::testing::gpu_or_skip("table_runs_its_variants_on_the_gpu").is_none() {
        return;
    }
    let dir = scratch("table_gpu");
    let json = dir.join("table.json");
    let out = bin()
        .arg("table")
        .arg(tiny_swatch())
        .args([
            "--backend",
            "gpu",
            "--steps",
            "8",
            "--warmup",
            "1",
            "--json",
        ])
        .arg(&json)
        .output()
        .unwrap();
    check_ok(&out);
    let doc: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    assert_eq!(doc["backend"], "gpu");
    assert!(
        doc["adapter"].as_str().is_some_and(|a| !a.is_empty()),
        "{doc}"
    );
    let s = &doc["scenes"][0];
    assert!(s["exact"]["step_ms"].as_f64().unwrap() > 0.0, "{s}");
    assert!(s["exact"]["contacts"].as_f64().unwrap() > 0.0, "{s}");
    let acl = &s["acl"][0];
    assert!(acl["step_ms"].as_f64().unwrap() > 0.0, "{s}");
    assert!(acl["contact_sets"].as_f64().unwrap() > 0.0, "{s}");
    // The GPU ACL path counts its sets' touching pairs (`set_compact`).
    assert!(acl["contacts"].as_f64().unwrap() > 0.0, "{s}");
    // --adapter belongs to the GPU backend.
    let out = bin()
        .arg("table")
        .arg(tiny_swatch())
        .args(["--adapter", "x"])
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(text(&out.stderr).contains("--adapter picks the GPU"));
}

/// `--quiet` holds on the GPU backend too: no line naming the adapter, no relaxation report.
#[test]
fn quiet_gpu_run_prints_nothing() {
    if yarnsim::gpu::testing::gpu_or_skip("quiet_gpu_run_prints_nothing").is_none() {
        return;
    }
    let dir = scratch("quiet_gpu");
    let scene = tiny_scene(&dir, "none");
    let run = |quiet: bool| {
        let mut cmd = bin();
        cmd.arg("run")
            .arg(&scene)
            .args(["--backend", "gpu", "--frames", "1"]);
        if quiet {
            cmd.arg("--quiet");
        }
        let out = cmd.output().unwrap();
        check_ok(&out);
        out
    };
    let out = run(true);
    assert!(out.stdout.is_empty(), "stdout: {}", text(&out.stdout));
    assert!(out.stderr.is_empty(), "stderr: {}", text(&out.stderr));
    // Without it, the run names its adapter (so the check above can fail).
    let out = run(false);
    assert!(
        text(&out.stderr).contains("GPU step on"),
        "{}",
        text(&out.stderr)
    );
}

/// A GPU run's frames start from the capacities and budgets its relaxation's GPU step grew to
/// (`GpuSim::start_from`): a garter swatch, denser in contacts than the swatch that sized ACL's
/// first capacities, reruns its frames' first steps for room without that (as
/// tests/relax.rs `the_frames_start_from_what_the_gpu_relaxation_learned` shows on the API) and
/// not with it.
#[test]
fn a_gpu_run_starts_its_frames_from_its_relaxation() {
    if yarnsim::gpu::testing::gpu_or_skip("a_gpu_run_starts_its_frames_from_its_relaxation")
        .is_none()
    {
        return;
    }
    let dir = scratch("learned");
    let scene = dir.join("garter.toml");
    std::fs::write(
        &scene,
        "[simulation]\ngravity = [0, 0, 0]\nfps = 270\n[[cloth]]\n\
         source.generator = { pattern = \"garter\", wales = 8, courses = 8 }\n",
    )
    .unwrap();
    let out = bin()
        .arg("run")
        .arg(&scene)
        .args(["--backend", "gpu", "--frames", "1", "--stats"])
        .arg(dir.join("s.jsonl"))
        .output()
        .unwrap();
    check_ok(&out);
    assert!(
        text(&out.stderr).contains("relaxed in "),
        "{}",
        text(&out.stderr)
    );
    let recs = read_stats(&dir.join("s.jsonl"));
    let r = &recs[0];
    assert_eq!(r["steps"].as_f64(), Some(60.0), "{r}");
    assert_eq!(r["reruns_capacity"].as_f64(), Some(0.0), "{r}");
}

/// A step of ACL's GPU step whose contact sets' boxes outgrow what the GPU rebuild kernels take
/// (`acl::pages::MAX_BOX_PAIRS`) stops with an error naming the limit and the CPU path, where such
/// a set, left without a model and still dirty, had the step rerun with twice the rebuild rounds
/// until the adapter ran out of memory and wgpu panicked (a 4 × 4 swatch with `contact.padding =
/// 28`, inside its documented range; the CPU path, which has no such bound, runs it).
#[test]
fn a_gpu_step_that_needs_too_many_rebuild_rounds_fails_cleanly() {
    if yarnsim::gpu::testing::gpu_or_skip(
        "a_gpu_step_that_needs_too_many_rebuild_rounds_fails_cleanly",
    )
    .is_none()
    {
        return;
    }
    let dir = scratch("too-many-rounds");
    let scene = dir.join("s.toml");
    std::fs::write(
        &scene,
        "[relax]\ntime = 0\n[[cloth]]\nsource.generator = { pattern = \"stockinette\", wales = 4, courses = 4 }\n",
    )
    .unwrap();
    let run = |backend: &str| {
        bin()
            .arg("run")
            .arg(&scene)
            .args(["--frames", "1", "-q", "--backend", backend])
            .args([
                "--set",
                "simulation.fps=8100",
                "--set",
                "contact.padding=28",
            ])
            .output()
            .unwrap()
    };
    let out = run("gpu");
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(!err.contains("panicked"), "{err}");
    assert!(
        err.contains("a contact set's box spans more than 65536 quadrature pairs")
            && err.contains("set_rebuild_size")
            && err.contains("the CPU path has no such limit")
            && err.contains("--backend cpu"),
        "{err}"
    );
    check_ok(&run("cpu"));
}

/// A file that never ends (a device such as `/dev/zero`, or a pipe whose writer never stops)
/// named as a scene, a BCC file or a certificate is refused once it is past what such a file
/// holds, instead of being read until the machine runs out of memory. (The child's address space
/// is capped, so that a regression fails on its "out of memory" instead of taking the machine.)
#[cfg(target_os = "linux")]
#[test]
fn endless_inputs_are_refused_not_read_until_memory_runs_out() {
    use std::os::unix::process::CommandExt;
    let dir = scratch("endless");
    let scene = tiny_scene(&dir, "none");
    let run = |args: &[&std::ffi::OsStr]| {
        let mut c = bin();
        c.args(args);
        // SAFETY: setrlimit(2) is async-signal-safe, as pre_exec asks.
        unsafe {
            c.pre_exec(|| {
                let cap = 3 << 30;
                let lim = libc::rlimit {
                    rlim_cur: cap,
                    rlim_max: cap,
                };
                libc::setrlimit(libc::RLIMIT_AS, &lim);
                Ok(())
            });
        }
        let out = c.output().unwrap();
        assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
        text(&out.stderr)
    };
    let zero = std::ffi::OsStr::new("/dev/zero");
    let e = run(&["info".as_ref(), zero]);
    assert!(e.contains("/dev/zero") && e.contains("more than"), "{e}");
    let e = run(&["links".as_ref(), zero]);
    assert!(
        e.contains("/dev/zero") && e.contains("not a BCC file"),
        "{e}"
    );
    let e = run(&[
        "links".as_ref(),
        scene.as_os_str(),
        "--compare".as_ref(),
        zero,
    ]);
    assert!(e.contains("/dev/zero") && e.contains("more than"), "{e}");
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A `[camera]` that cannot frame the cloth (a `fov_deg` so narrow that the camera framing the
/// cloth in it would stand past f32's reach) fails a run with `--capture` as it starts, naming
/// `camera.fov_deg`, not after the relaxation (hours for a garment) at the first capture with a
/// message about a camera position the scene never gave.
#[test]
fn capture_refuses_a_camera_that_cannot_frame_the_cloth_before_relaxing() {
    if yarnsim::gpu::testing::gpu_or_skip(
        "capture_refuses_a_camera_that_cannot_frame_the_cloth_before_relaxing",
    )
    .is_none()
    {
        return;
    }
    let dir = scratch("narrow");
    let scene = tiny_scene(&dir, "none");
    let narrow = dir.join("narrow.toml");
    let text_of = std::fs::read_to_string(&scene).unwrap();
    std::fs::write(&narrow, format!("{text_of}\n[camera]\nfov_deg = 1e-30\n")).unwrap();
    let out = bin()
        .arg("run")
        .arg(&narrow)
        .args([
            "--frames",
            "1",
            "--width",
            "32",
            "--height",
            "24",
            "--capture",
        ])
        .arg(dir.join("png"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let err = text(&out.stderr);
    assert!(err.contains("camera.fov_deg = 1e-30"), "{err}");
    assert!(!err.contains("relaxed"), "{err}");
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A scene read from a named pipe whose cloth cannot be built (a pin region with no point in it)
/// fails with the error, not waiting forever: the error's line was looked for by reading the file
/// again, and opening a named pipe for reading waits for a writer that never comes.
#[cfg(unix)]
#[test]
fn a_scene_from_a_named_pipe_that_fails_to_build_ends() {
    use std::io::Write;
    let dir = scratch("fifo-scene");
    let fifo = dir.join("scene.toml");
    let c = std::ffi::CString::new(fifo.as_os_str().as_encoded_bytes()).unwrap();
    // SAFETY: mkfifo(3) of a path this test owns.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
    let writer = {
        let fifo = fifo.clone();
        std::thread::spawn(move || {
            let mut f = std::fs::OpenOptions::new().write(true).open(&fifo).unwrap();
            f.write_all(
                b"[[cloth]]\nsource.generator = { pattern = \"stockinette\", wales = 4, courses = 4 }\n\
                  [[pin]]\nregion = { min = [100, 100, 100], max = [101, 101, 101] }\n",
            )
            .unwrap();
        })
    };
    let mut child = bin()
        .arg("info")
        .arg(&fifo)
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    writer.join().unwrap();
    let t0 = std::time::Instant::now();
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        if t0.elapsed() > std::time::Duration::from_secs(30) {
            let _ = child.kill();
            panic!("still reading the scene 30 s after it was written");
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    };
    let mut err = String::new();
    std::io::Read::read_to_string(&mut child.stderr.take().unwrap(), &mut err).unwrap();
    assert_eq!(status.code(), Some(1), "{err}");
    assert!(err.contains("pin.0"), "{err}");
    std::fs::remove_dir_all(&dir).unwrap();
}
