//! Checkpoint and resume (`yarnsim run --checkpoint-every N`, `yarnsim run --resume DIR`): a resumed
//! run is bitwise the uninterrupted one for every contact model, also after a kill (real, or as a
//! killed checkpoint write leaves the directory); stats and manifest continue; a checkpoint of
//! another version, a truncated or a damaged one is a clear error, never a panic.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

#[path = "support/relax_kill.rs"]
mod relax_kill;
#[path = "support/rng.rs"]
mod rng;

use rng::Rng;
use yarnsim::checkpoint::{self, Checkpoint, Checksum};
use yarnsim::scene::Scene;
use yarnsim::sim::Sim;

fn bin() -> Command {
    Command::new(env!("CARGO_BIN_EXE_yarnsim"))
}

fn tiny() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("scenes/tiny.toml")
}

/// A fresh directory for one test.
fn scratch(name: &str) -> PathBuf {
    let d = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("checkpoint-{name}"));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
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

/// Runs `cmd`, asserts it fails cleanly (status 1 or 2, no panic), returns its standard error.
fn failure(cmd: &mut Command) -> String {
    let out = cmd.output().unwrap();
    let err = text(&out.stderr);
    assert!(!out.status.success(), "succeeded: {cmd:?}");
    assert!(
        matches!(out.status.code(), Some(1) | Some(2)),
        "{:?}: {err}",
        out.status
    );
    assert!(!err.contains("panicked"), "{err}");
    err
}

/// `yarnsim run tiny.toml --out DIR -q` with `args`.
fn run(dir: &Path, args: &[&str]) {
    let out = bin()
        .arg("run")
        .arg(tiny())
        .arg("--out")
        .arg(dir)
        .arg("-q")
        .args(args)
        .output()
        .unwrap();
    check_ok(&out);
}

/// `yarnsim run --resume DIR -q` with `args`.
fn resume(dir: &Path, args: &[&str]) {
    let quiet: Vec<&str> = ["-q"].iter().chain(args).copied().collect();
    check_ok(&resume_output(dir, &quiet));
}

/// What `yarnsim run --resume DIR` with `args` did.
fn resume_output(dir: &Path, args: &[&str]) -> Output {
    bin()
        .arg("run")
        .arg("--resume")
        .arg(dir)
        .args(args)
        .output()
        .unwrap()
}

fn read(p: &Path) -> Vec<u8> {
    std::fs::read(p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

fn frame(dir: &Path, k: u32) -> Vec<u8> {
    read(&dir.join(format!("frame_{k:04}.bcc")))
}

fn stats_frames(p: &Path) -> Vec<u64> {
    text(&read(p))
        .lines()
        .map(|l| {
            let v: serde_json::Value = serde_json::from_str(l).expect("a whole JSON record");
            v["frame"].as_u64().unwrap()
        })
        .collect()
}

fn manifest(dir: &Path) -> serde_json::Value {
    serde_json::from_slice(&read(&dir.join("manifest.json"))).unwrap()
}

/// For each model: 3 frames in one go, and 1 frame + a checkpoint resumed for 2 more, give the
/// same bytes in every frame file.
#[test]
fn resumed_run_equals_the_uninterrupted_one_for_every_contact_model() {
    for model in ["none", "exact", "acl"] {
        let dir = scratch(&format!("models-{model}"));
        let (full, part) = (dir.join("full"), dir.join("part"));
        let set = format!("contact.model={model}");
        let full_stats = full.join("stats.jsonl");
        run(
            &full,
            &[
                "--frames",
                "3",
                "--set",
                &set,
                "--stats",
                full_stats.to_str().unwrap(),
            ],
        );
        // Every 5 frames: the only checkpoint is the one after the last frame.
        let stats = part.join("stats.jsonl");
        run(
            &part,
            &[
                "--frames",
                "1",
                "--set",
                &set,
                "--checkpoint-every",
                "5",
                "--stats",
                stats.to_str().unwrap(),
            ],
        );
        assert!(part.join(checkpoint::FILE_NAME).is_file());
        let ck = Checkpoint::read(&part.join(checkpoint::FILE_NAME)).unwrap();
        assert_eq!(ck.frames(), 1);
        assert_eq!(
            format!("{:?}", ck.scene.contact.model).to_lowercase(),
            model
        );
        resume(&part, &["--frames", "3"]);
        for k in 0..=3 {
            assert!(
                frame(&full, k) == frame(&part, k),
                "{model}: frame {k} differs"
            );
        }
        // The stats and the manifest continue; the records are those of the uninterrupted run but
        // for the times measured.
        assert_eq!(stats_frames(&stats), [1, 2, 3], "{model}");
        let records = |p: &Path| -> Vec<Vec<(String, serde_json::Value)>> {
            text(&read(p))
                .lines()
                .map(|l| {
                    let v: serde_json::Map<String, serde_json::Value> =
                        serde_json::from_str(l).unwrap();
                    v.into_iter().filter(|(k, _)| !k.ends_with("_ms")).collect()
                })
                .collect()
        };
        assert_eq!(records(&stats), records(&full_stats), "{model}");
        let m = manifest(&part);
        assert_eq!(m["frames_written"], 4, "{m:#}");
        assert_eq!(m["finished"], true);
        assert_eq!(m["frames_requested"], 3);
        assert_eq!(m["overrides"][0], set.as_str());
        assert_eq!(m["resumed"][0]["from_frame"], 1, "{m:#}");
        // The resumed run checkpointed its last frame too: the run can be extended.
        assert_eq!(
            Checkpoint::read(&part.join(checkpoint::FILE_NAME))
                .unwrap()
                .frames(),
            3
        );
    }
}

/// A run that checkpoints writes one at frame 0 too, after the relaxation before t = 0 (which takes
/// hours for a full garment on a CPU): a run stopped in its first frames resumes from it without
/// relaxing again, bitwise the uninterrupted run. `--frames 0` stands for a run stopped before its
/// first checkpoint after a frame.
#[test]
fn a_run_resumes_from_its_relaxed_frame_zero() {
    let dir = scratch("frame-zero");
    let (full, part) = (dir.join("full"), dir.join("part"));
    run(&full, &["--frames", "2"]);
    let out = bin()
        .arg("run")
        .arg(tiny())
        .arg("--out")
        .arg(&part)
        .args(["--frames", "0", "--checkpoint-every", "5"])
        .output()
        .unwrap();
    check_ok(&out);
    // The scene relaxes before t = 0 (so frame 0 is the relaxation's end, not the generated state).
    assert!(
        text(&out.stderr).contains("relaxed in"),
        "{}",
        text(&out.stderr)
    );
    let ck = Checkpoint::read(&part.join(checkpoint::FILE_NAME)).unwrap();
    assert_eq!(ck.frames(), 0);
    let out = resume_output(&part, &["--frames", "2"]);
    check_ok(&out);
    let err = text(&out.stderr);
    assert!(
        err.contains("resuming from the checkpoint at frame 0"),
        "{err}"
    );
    assert!(
        !err.contains("relax"),
        "the resumed run relaxed again:\n{err}"
    );
    for k in 0..=2 {
        assert!(frame(&full, k) == frame(&part, k), "frame {k} differs");
    }
    assert_eq!(manifest(&part)["resumed"][0]["from_frame"], 0);
}

/// A run killed (-9) during its relaxation before t = 0 resumes the relaxation from the checkpoint
/// it took there (where a radius stage begins), not from its start, and ends bitwise where the
/// uninterrupted run does: every frame file equal. (Bitwise resumes at every kind of point:
/// tests/relax.rs.)
#[test]
fn a_run_killed_while_relaxing_resumes_the_relaxation() {
    killed_while_relaxing("relaxing", &[]);
}

/// The same with `--backend gpu`: the GPU relaxation checkpoints too.
#[test]
fn a_gpu_run_killed_while_relaxing_resumes_the_relaxation() {
    if yarnsim::gpu::testing::gpu_or_skip("a_gpu_run_killed_while_relaxing_resumes_the_relaxation")
        .is_none()
    {
        return;
    }
    killed_while_relaxing("relaxing-gpu", &["--backend", "gpu"]);
}

/// The tiny swatch run for a frame with `args`, uninterrupted and killed at its first checkpoint
/// (during the relaxation) then resumed: the same frames.
fn killed_while_relaxing(name: &str, args: &[&str]) {
    let dir = scratch(name);
    let (full, part) = (dir.join("full"), dir.join("part"));
    let full_args: Vec<&str> = ["--frames", "1"].iter().chain(args).copied().collect();
    run(&full, &full_args);
    let ckpt = part.join(checkpoint::FILE_NAME);
    let mut relaxing = None;
    for attempt in 0..10 {
        let _ = std::fs::remove_dir_all(&part);
        let mut cmd = bin();
        cmd.arg("run")
            .arg(tiny())
            .arg("--out")
            .arg(&part)
            .args(["--frames", "1", "--checkpoint-every", "1", "-q"])
            .args(args);
        relaxing = relax_kill::kill_at_first_checkpoint(&mut cmd, &part);
        if relaxing.is_some() {
            break;
        }
        eprintln!("attempt {attempt}: the run had relaxed before the kill; again");
    }
    let steps = relaxing.expect("no kill landed during the relaxation in 10 attempts");
    assert!(!part.join("frame_0000.bcc").exists());
    // A frame file past the checkpoint (as a run that relaxed, wrote frames and was killed before
    // its next checkpoint leaves): the resumed relaxation's run removes it.
    std::fs::copy(full.join("frame_0001.bcc"), part.join("frame_0002.bcc")).unwrap();
    let started = manifest(&part);
    let out = resume_output(&part, &[]);
    check_ok(&out);
    let err = text(&out.stderr);
    assert!(
        err.contains(&format!(
            "resuming the relaxation before t = 0 from its checkpoint after {steps} steps"
        )),
        "{err}"
    );
    for k in 0..=1 {
        assert!(frame(&full, k) == frame(&part, k), "frame {k} differs");
    }
    assert!(!part.join("frame_0002.bcc").exists());
    // The run checkpointed its frames as it went on: the last one is frame 1's.
    assert_eq!(Checkpoint::read(&ckpt).unwrap().frames(), 1);
    // The manifest is the run's, with the resumption listed (a resume in the relaxation wrote a
    // fresh one: the resume's command line and start time, no `resumed`).
    let m = manifest(&part);
    for key in ["command_line", "start_time_unix"] {
        assert_eq!(m[key], started[key], "{key}: {m:#}");
    }
    let resumed = m["resumed"].as_array().expect("a `resumed` list");
    assert_eq!(resumed.len(), 1, "{m:#}");
    assert_eq!(resumed[0]["from_relaxation_step"], steps, "{m:#}");
    assert!(resumed[0]["from_frame"].is_null(), "{m:#}");
    assert_eq!(resumed[0]["command_line"][2], "--resume", "{m:#}");
    assert_eq!(
        (m["frames_written"].as_u64(), m["finished"].as_bool()),
        (Some(2), Some(true))
    );
}

/// Through the library, mid-frame: a simulation restored from the checkpoint of another after 77
/// steps steps on bitwise as the original, and after 150 more steps both write identical
/// checkpoints (so every saved piece of state, contact sets and scheduler included, evolved alike).
#[test]
fn restored_simulation_steps_as_the_original() {
    for model in ["none", "exact", "acl"] {
        let mut scene = Scene::load(&tiny()).unwrap();
        scene.apply_set(&format!("contact.model={model}")).unwrap();
        let dir = tiny().parent().unwrap().to_path_buf();
        let build = yarnsim::scene::build_curves(&scene, &dir).unwrap();
        let pins = yarnsim::scene::pinned_points(&scene, &build).unwrap();
        let mut a = Sim::from_build(&scene, &build, &pins).unwrap();
        for _ in 0..77 {
            a.step().unwrap();
        }
        let bytes = checkpoint::encode(&a, &scene, &dir, serde_json::Value::Null).unwrap();
        let ck = Checkpoint::decode(bytes, "memory").unwrap();
        let mut b = ck.build_sim().unwrap();
        assert_eq!((b.steps, b.time.to_bits()), (a.steps, a.time.to_bits()));
        for s in 0..150 {
            a.step().unwrap();
            b.step().unwrap();
            let bits = |v: &[[f32; 4]]| v.iter().flatten().map(|x| x.to_bits()).collect::<Vec<_>>();
            assert!(
                bits(&a.pos) == bits(&b.pos),
                "{model}: positions differ after step {s}"
            );
            assert!(
                bits(&a.vel) == bits(&b.vel),
                "{model}: velocities differ after step {s}"
            );
        }
        let ea = checkpoint::encode(&a, &scene, &dir, serde_json::Value::Null).unwrap();
        let eb = checkpoint::encode(&b, &scene, &dir, serde_json::Value::Null).unwrap();
        assert!(ea == eb, "{model}: the states differ after 150 steps");
    }
}

/// A kill -9 during a checkpoint write leaves the previous checkpoint and a hidden temporary file
/// holding part of the new one; frames after the previous checkpoint may exist. Resuming ignores
/// (and removes) the temporary file, rewrites those frames and ends as the uninterrupted run.
#[test]
fn resume_after_a_killed_checkpoint_write() {
    let dir = scratch("killed-write");
    let (full, part) = (dir.join("full"), dir.join("part"));
    run(&full, &["--frames", "3"]);
    let ckpt = part.join(checkpoint::FILE_NAME);
    let stats = part.join("stats.jsonl");
    run(
        &part,
        &[
            "--frames",
            "1",
            "--checkpoint-every",
            "1",
            "--stats",
            stats.to_str().unwrap(),
        ],
    );
    let first = read(&ckpt);
    // Frame 2 and its checkpoint, then the state a kill during that checkpoint's write leaves:
    // the frame-1 checkpoint under the final name, half the frame-2 one in a temporary file.
    resume(&part, &["--frames", "2"]);
    let second = read(&ckpt);
    assert_ne!(first, second);
    std::fs::write(&ckpt, &first).unwrap();
    let tmp = part.join(format!(".{}.4242424.7.tmp", checkpoint::FILE_NAME));
    std::fs::write(&tmp, &second[..second.len() / 2]).unwrap();
    resume(&part, &["--frames", "3"]);
    assert!(!tmp.exists(), "the stale temporary file is removed");
    for k in 0..=3 {
        assert!(frame(&full, k) == frame(&part, k), "frame {k} differs");
    }
    // Frame 2's record was written twice (before the kill and after the resume): once in the file.
    assert_eq!(stats_frames(&stats), [1, 2, 3]);
    let m = manifest(&part);
    assert_eq!(
        (m["frames_written"].as_u64(), m["finished"].as_bool()),
        (Some(4), Some(true))
    );
    assert_eq!(m["resumed"].as_array().map(|l| l.len()), Some(2), "{m:#}");
}

/// A resume with fewer frames than the run it continues had written (a checkpoint at frame 2,
/// frames 0 to 4 on disk, as a kill after frame 4 leaves a run checkpointing every 2 frames
/// whose last checkpoint write did not complete) removes the frame files past its end as it
/// starts: the frames and their OBJ companions past its end are gone, those up to the
/// checkpoint stay and the one between is rewritten. Before, frames 4's files stayed, beside a
/// manifest saying 4 frames were written (from another trajectory, on another backend). A resume
/// that fails before rewriting the frames between its checkpoint and its end keeps them (they
/// are removed only as they are replaced).
#[test]
fn a_resume_removes_the_frames_past_its_end() {
    let dir = scratch("past-checkpoint");
    let out = dir.join("out");
    let stats = out.join("stats.jsonl");
    run(
        &out,
        &[
            "--frames",
            "2",
            "--checkpoint-every",
            "2",
            "--obj",
            "--set",
            "relax.time=0",
            "--stats",
            stats.to_str().unwrap(),
        ],
    );
    let ckpt = out.join(checkpoint::FILE_NAME);
    let at_2 = read(&ckpt);
    let kept: Vec<Vec<u8>> = (0..=2).map(|k| frame(&out, k)).collect();
    resume(&out, &["--frames", "4"]);
    let third = frame(&out, 3);
    std::fs::write(&ckpt, &at_2).unwrap();
    assert!(out.join("frame_0004.obj").exists());
    // A contact matrix past the checkpoint goes too; a file that only looks like a frame stays.
    std::fs::write(out.join("contact_matrix_0004.png"), b"png").unwrap();
    std::fs::write(out.join("frame_notes.txt"), b"mine").unwrap();
    resume(&out, &["--frames", "3"]);
    let mut names: Vec<String> = std::fs::read_dir(&out)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    let mut expected: Vec<String> = (0..=3)
        .flat_map(|k| [format!("frame_{k:04}.bcc"), format!("frame_{k:04}.obj")])
        .collect();
    expected.extend(["frame_notes.txt", "manifest.json", "stats.jsonl"].map(String::from));
    expected.push(checkpoint::FILE_NAME.into());
    expected.sort();
    assert_eq!(names, expected);
    for (k, bytes) in kept.iter().enumerate() {
        assert!(frame(&out, k as u32) == *bytes, "frame {k} changed");
    }
    assert!(frame(&out, 3) == third, "frame 3 differs");
    assert_eq!(stats_frames(&stats), [1, 2, 3]);
    let m = manifest(&out);
    assert_eq!(
        (m["frames_written"].as_u64(), m["finished"].as_bool()),
        (Some(4), Some(true))
    );
    // Frames 3 and 4 of a run to 4, the checkpoint of frame 2 back, and a resume to 4 that fails
    // as it starts (its stats file cannot be read: a directory stands in its place): frames 3
    // and 4 stay as they were.
    resume(&out, &["--frames", "4"]);
    let fourth = frame(&out, 4);
    std::fs::write(&ckpt, &at_2).unwrap();
    std::fs::remove_file(&stats).unwrap();
    std::fs::create_dir(&stats).unwrap();
    let failed = resume_output(&out, &["-q", "--frames", "4"]);
    assert!(!failed.status.success(), "the resume did not fail");
    assert!(frame(&out, 3) == third, "frame 3 changed");
    assert!(
        frame(&out, 4) == fourth,
        "frame 4 was removed or changed by a resume that failed before it"
    );
}

/// A resume removes the temporary files that killed writes of the run left in its directory
/// (before, only the checkpoint's): of its frames, their OBJ files, its manifest and its stats
/// file there; temporary files of other names are not the run's and stay.
#[test]
fn a_resume_removes_the_temporary_files_of_killed_writes() {
    let dir = scratch("stale-temps");
    let out = dir.join("out");
    let stats = out.join("stats.jsonl");
    run(
        &out,
        &[
            "--frames",
            "1",
            "--checkpoint-every",
            "1",
            "--obj",
            "--set",
            "relax.time=0",
            "--stats",
            stats.to_str().unwrap(),
        ],
    );
    let runs = [
        ".frame_0002.bcc.4242424.7.tmp",
        ".frame_0002.obj.4242424.8.tmp",
        ".manifest.json.4242424.9.tmp",
        ".stats.jsonl.4242424.10.tmp",
        ".checkpoint.bin.4242424.11.tmp",
    ];
    let others = [".notes.txt.4242424.1.tmp", ".frame_notes.txt.4242424.2.tmp"];
    for name in runs.iter().chain(&others) {
        std::fs::write(out.join(name), b"partial").unwrap();
    }
    resume(&out, &["--frames", "2"]);
    for name in runs {
        assert!(!out.join(name).exists(), "{name} is left");
    }
    for name in others {
        assert!(out.join(name).exists(), "{name} was removed");
    }
}

/// A checkpoint of another run (another scene, or the same file with other overrides) copied into
/// a run's directory is refused, naming both runs' scenes, and nothing there changes: before, it
/// was resumed, writing its scene's frames beside the other run's under a manifest naming that one.
#[test]
fn a_checkpoint_of_another_run_is_refused() {
    let dir = scratch("foreign");
    let run_dir = dir.join("run");
    run(
        &run_dir,
        &[
            "--frames",
            "1",
            "--checkpoint-every",
            "1",
            "--set",
            "relax.time=0",
        ],
    );
    let swatch = Path::new(env!("CARGO_MANIFEST_DIR")).join("scenes/swatch.toml");
    let other = dir.join("other");
    check_ok(
        &bin()
            .arg("run")
            .arg(&swatch)
            .arg("--out")
            .arg(&other)
            .args([
                "--frames",
                "0",
                "--checkpoint-every",
                "1",
                "--set",
                "relax.time=0",
                "-q",
            ])
            .output()
            .unwrap(),
    );
    let overridden = dir.join("overridden");
    run(
        &overridden,
        &[
            "--frames",
            "1",
            "--checkpoint-every",
            "1",
            "--set",
            "relax.time=0",
            "--set",
            "contact.model=none",
        ],
    );
    let ckpt = run_dir.join(checkpoint::FILE_NAME);
    let own = read(&ckpt);
    let listing = |d: &Path| {
        let mut v: Vec<(String, Vec<u8>)> = std::fs::read_dir(d)
            .unwrap()
            .map(|e| {
                let e = e.unwrap();
                (
                    e.file_name().to_string_lossy().into_owned(),
                    read(&e.path()),
                )
            })
            .collect();
        v.sort();
        v
    };
    for (from, names) in [(&other, "swatch.toml"), (&overridden, "contact.model=none")] {
        std::fs::copy(from.join(checkpoint::FILE_NAME), &ckpt).unwrap();
        let before = listing(&run_dir);
        let err = failure(
            bin()
                .args(["run", "--resume"])
                .arg(&run_dir)
                .args(["--frames", "2"]),
        );
        assert!(
            err.contains("the checkpoint is of another run") && err.contains(names),
            "{err}"
        );
        assert!(err.contains("tiny.toml with --set relax.time=0"), "{err}");
        assert!(listing(&run_dir) == before, "the directory changed");
    }
    // Its own checkpoint back: the run goes on.
    std::fs::write(&ckpt, &own).unwrap();
    resume(&run_dir, &["--frames", "2"]);
    assert_eq!(manifest(&run_dir)["frames_written"], 3);
}

/// The run's own checkpoint resumes though its manifest's scene lacks a field this build has (a
/// manifest written by an earlier build of the same version): the scenes are compared as scenes,
/// the field taking its default, not as JSON text (it was refused as "another run").
#[test]
fn a_manifest_scene_without_a_newer_field_still_resumes() {
    let out = scratch("older-manifest").join("run");
    run(
        &out,
        &[
            "--frames",
            "1",
            "--checkpoint-every",
            "1",
            "--set",
            "relax.time=0",
        ],
    );
    let mut m = manifest(&out);
    let removed = m["scene"]["contact"]
        .as_object_mut()
        .unwrap()
        .remove("tolerance");
    assert!(removed.is_some(), "{m:#}");
    std::fs::write(
        out.join("manifest.json"),
        serde_json::to_vec_pretty(&m).unwrap(),
    )
    .unwrap();
    resume(&out, &["--frames", "2"]);
    assert!(out.join("frame_0002.bcc").exists());
}

/// Real kill -9s, alternately in the middle of a checkpoint write (while its temporary file
/// exists) and during a frame, each run resumed until the run is done: every frame equals the
/// uninterrupted run's, and no temporary file is left. A 1,177-point swatch with 10 steps per
/// frame, so checkpoint writes (about 1.4 MB, flushed to disk) take a measurable part of the time.
#[test]
fn resume_after_kill_9() {
    let dir = scratch("kill");
    let (full, part) = (dir.join("full"), dir.join("part"));
    let scene = Path::new(env!("CARGO_MANIFEST_DIR")).join("scenes/swatch.toml");
    let frames = 16u32;
    // No relaxation: it checkpoints too (every frame's worth of its steps once the radius is
    // grown), and its kills are a_run_killed_while_relaxing_resumes_the_relaxation's.
    let common = [
        "--frames".to_string(),
        frames.to_string(),
        "--set".into(),
        "simulation.fps=1620".into(),
        "--set".into(),
        "relax.time=0".into(),
        "-q".into(),
    ];
    check_ok(
        &bin()
            .arg("run")
            .arg(&scene)
            .arg("--out")
            .arg(&full)
            .args(&common)
            .output()
            .unwrap(),
    );
    let ckpt = part.join(checkpoint::FILE_NAME);
    let temps = || -> Vec<PathBuf> {
        std::fs::read_dir(&part)
            .map(|d| {
                d.filter_map(|e| e.ok())
                    .filter(|e| {
                        yarnsim::output::temp_target(&e.file_name().to_string_lossy())
                            == Some(checkpoint::FILE_NAME)
                    })
                    .map(|e| e.path())
                    .collect()
            })
            .unwrap_or_default()
    };
    let modified = || std::fs::metadata(&ckpt).and_then(|m| m.modified()).ok();
    let (mut kills, mut mid_write) = (0, 0);
    for attempt in 0.. {
        assert!(attempt < 60, "no progress");
        let mut cmd = bin();
        cmd.arg("run");
        if attempt == 0 {
            cmd.arg(&scene)
                .arg("--out")
                .arg(&part)
                .args(&common)
                .args(["--checkpoint-every", "1"]);
        } else {
            cmd.arg("--resume").arg(&part).arg("-q");
        }
        let mut child = cmd
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let before = modified();
        let during_write = attempt % 2 == 1;
        let t0 = Instant::now();
        let mut killed = false;
        loop {
            if let Some(status) = child.try_wait().unwrap() {
                let mut err = String::new();
                use std::io::Read;
                child
                    .stderr
                    .take()
                    .unwrap()
                    .read_to_string(&mut err)
                    .unwrap();
                assert!(status.success(), "{status:?}: {err}");
                break;
            }
            // Kill only after this run completed a checkpoint of its own (so each run makes
            // progress): then at the next sight of a checkpoint write in progress, or a few
            // milliseconds later.
            let progressed = modified().is_some() && modified() != before;
            if progressed && (!during_write || !temps().is_empty()) {
                if !during_write {
                    std::thread::sleep(Duration::from_millis(7 * (attempt % 4) as u64));
                }
                child.kill().unwrap();
                child.wait().unwrap();
                killed = true;
                kills += 1;
                if !temps().is_empty() {
                    mid_write += 1;
                }
                break;
            }
            assert!(t0.elapsed() < Duration::from_secs(300), "run hangs");
            std::thread::sleep(Duration::from_micros(300));
        }
        if !killed {
            break;
        }
    }
    eprintln!("{kills} kills, {mid_write} of them during a checkpoint write");
    assert!(kills > 0);
    assert_eq!(Checkpoint::read(&ckpt).unwrap().frames(), frames);
    for k in 0..=frames {
        assert!(frame(&full, k) == frame(&part, k), "frame {k} differs");
    }
    assert!(temps().is_empty(), "{:?}", temps());
}

/// Header layout: magic, format version, crate version length and text (this is where they end),
/// body length, the header's checksum.
fn header_len(b: &[u8]) -> usize {
    16 + u32::from_le_bytes(b[12..16].try_into().unwrap()) as usize
}

/// The header's checksum recomputed, as another version writing its own header would have it.
fn reseal_header(b: &mut [u8]) {
    let end = header_len(b) + 8;
    let mut c = Checksum::default();
    c.update(&b[..end]);
    b[end..end + 8].copy_from_slice(&c.finish().to_le_bytes());
}

#[test]
fn another_version_is_refused_naming_both() {
    let dir = scratch("version");
    let out = dir.join("out");
    run(&out, &["--frames", "1", "--checkpoint-every", "1"]);
    let ckpt = out.join(checkpoint::FILE_NAME);
    let good = read(&ckpt);
    // Another crate version (same length, so only the text differs).
    let mut b = good.clone();
    let other: String = checkpoint::CRATE_VERSION
        .chars()
        .map(|c| if c == '.' { '.' } else { '9' })
        .collect();
    assert_ne!(other, checkpoint::CRATE_VERSION);
    b[16..header_len(&good)].copy_from_slice(other.as_bytes());
    reseal_header(&mut b);
    std::fs::write(&ckpt, &b).unwrap();
    let err = failure(bin().args(["run", "--resume"]).arg(&out));
    assert!(
        err.contains(&format!("written by yarnsim {other}"))
            && err.contains(&format!("this is yarnsim {}", checkpoint::CRATE_VERSION)),
        "{err}"
    );
    // Another format version.
    let mut b = good.clone();
    b[8..12].copy_from_slice(&999u32.to_le_bytes());
    reseal_header(&mut b);
    std::fs::write(&ckpt, &b).unwrap();
    let err = failure(bin().args(["run", "--resume"]).arg(&out));
    assert!(
        err.contains("checkpoint format 999")
            && err.contains(&format!("checkpoint format {}", checkpoint::FORMAT_VERSION)),
        "{err}"
    );
    // The same bytes changed by damage, not by another version (the header's checksum not
    // recomputed): the header is said to be damaged. (Before format 4 a header had no checksum,
    // and this read as a file of format 999.)
    let mut b = good.clone();
    b[8..12].copy_from_slice(&999u32.to_le_bytes());
    std::fs::write(&ckpt, &b).unwrap();
    let err = failure(bin().args(["run", "--resume"]).arg(&out));
    assert!(err.contains("corrupt: its header is damaged"), "{err}");
    // Not a checkpoint at all.
    std::fs::write(&ckpt, b"hello, world\n").unwrap();
    let err = failure(bin().args(["run", "--resume"]).arg(&out));
    assert!(err.contains("not a yarnsim checkpoint"), "{err}");
}

#[test]
fn truncated_or_damaged_checkpoints_are_clear_errors() {
    let dir = scratch("truncated");
    let out = dir.join("out");
    run(&out, &["--frames", "1", "--checkpoint-every", "1"]);
    let ckpt = out.join(checkpoint::FILE_NAME);
    let good = read(&ckpt);
    let n = good.len();
    for cut in [0, 5, 14, 30, n / 2, n - 9, n - 1] {
        std::fs::write(&ckpt, &good[..cut]).unwrap();
        let err = failure(bin().args(["run", "--resume"]).arg(&out));
        assert!(err.contains("truncated"), "cut at {cut}: {err}");
        assert!(err.contains(&format!("the file has {cut}")), "{err}");
    }
    // One flipped bit in the body length: the header's checksum says so (it read as a file cut
    // short of some 10^19 bytes before format 4), and so for every bit of the header past the
    // magic.
    let h = header_len(&good);
    for bit in (8 * 8..8 * (h + 16)).step_by(7) {
        let mut b = good.clone();
        b[bit / 8] ^= 1 << (bit % 8);
        let err = Checkpoint::decode(b, "flipped").unwrap_err().to_string();
        assert!(
            err.contains("its header is damaged") || err.contains("version string of"),
            "bit {bit}: {err}"
        );
    }
    // One flipped bit in the body: the checksum says so.
    let mut b = good.clone();
    b[n / 3] ^= 0x10;
    std::fs::write(&ckpt, &b).unwrap();
    let err = failure(bin().args(["run", "--resume"]).arg(&out));
    assert!(err.contains("corrupt") && err.contains("checksum"), "{err}");
    // Extra bytes at the end.
    let mut b = good.clone();
    b.extend_from_slice(b"more");
    std::fs::write(&ckpt, &b).unwrap();
    let err = failure(bin().args(["run", "--resume"]).arg(&out));
    assert!(err.contains("corrupt"), "{err}");
    // Every prefix, through the library: an error, never a panic.
    for cut in (0..n).step_by(97) {
        assert!(Checkpoint::decode(good[..cut].to_vec(), "cut").is_err());
    }
    // The good one still works.
    std::fs::write(&ckpt, &good).unwrap();
    resume(&out, &["--frames", "2"]);
}

/// A damaged version-length field makes the header's version string take up to 256 bytes of
/// what follows it (lengths, checksums, the body): the error shows it escaped and cut short
/// (before, raw, NULs included).
#[test]
fn a_damaged_version_length_is_shown_escaped_and_short() {
    let scene = Scene::load(&tiny()).unwrap();
    let dir = tiny().parent().unwrap().to_path_buf();
    let build = yarnsim::scene::build_curves(&scene, &dir).unwrap();
    let pins = yarnsim::scene::pinned_points(&scene, &build).unwrap();
    let sim = Sim::from_build(&scene, &build, &pins).unwrap();
    let good = checkpoint::encode(&sim, &scene, &dir, serde_json::Value::Null).unwrap();
    for len in [0u8, 4, 6, 7, 30, 100, 200, 255] {
        let mut b = good.clone();
        b[12] = len;
        let err = Checkpoint::decode(b, "damaged").unwrap_err().to_string();
        assert!(err.contains("its header is damaged"), "{len}: {err}");
        assert!(!err.chars().any(char::is_control), "{len}: {err:?}");
        assert!(err.chars().count() < 260, "{len}: {err:?}");
    }
}

/// Damage that the checksum does not catch (the checksum recomputed, as a bug writing wrong values
/// would leave it): decoding and restoring give an error or a simulation, never a panic.
#[test]
fn damaged_state_with_a_valid_checksum_never_panics() {
    let scene = Scene::load(&tiny()).unwrap();
    let dir = tiny().parent().unwrap().to_path_buf();
    let build = yarnsim::scene::build_curves(&scene, &dir).unwrap();
    let pins = yarnsim::scene::pinned_points(&scene, &build).unwrap();
    let mut sim = Sim::from_build(&scene, &build, &pins).unwrap();
    for _ in 0..60 {
        sim.step().unwrap();
    }
    let good = checkpoint::encode(&sim, &scene, &dir, serde_json::Value::Null).unwrap();
    let h = header_len(&good);
    let body = h + 16..good.len() - 8;
    let reseal = |b: &mut Vec<u8>| {
        let mut c = Checksum::default();
        c.update(&b[body.clone()]);
        let end = b.len() - 8;
        b[end..].copy_from_slice(&c.finish().to_le_bytes());
    };
    let mut rng = Rng(0x1234_5678_9abc_def0);
    let (mut ok, mut refused) = (0, 0);
    for _ in 0..400 {
        let mut b = good.clone();
        rng.damage(&mut b, |r| {
            body.start + (r.next_u64() as usize) % body.len()
        });
        reseal(&mut b);
        let result = std::panic::catch_unwind(|| {
            Checkpoint::decode(b, "damaged").and_then(|ck| ck.build_sim().map(|_| ()))
        });
        match result {
            Ok(Ok(())) => ok += 1,
            Ok(Err(_)) => refused += 1,
            Err(_) => panic!("restoring a damaged checkpoint panicked"),
        }
    }
    eprintln!("{ok} restored, {refused} refused");
    assert!(refused > 0);
}

#[test]
fn option_errors() {
    let dir = scratch("options");
    let out = dir.join("out");
    let err =
        failure(
            bin()
                .arg("run")
                .arg(tiny())
                .args(["--frames", "1", "--checkpoint-every", "1"]),
        );
    assert!(
        err.contains("--checkpoint-every") && err.contains("--out"),
        "{err}"
    );
    let err = failure(bin().arg("run").arg(tiny()).arg("--out").arg(&out).args([
        "--frames",
        "1",
        "--checkpoint-every",
        "0",
    ]));
    assert!(err.contains("at least 1"), "{err}");
    assert!(!out.exists(), "a refused run creates nothing");
    let err = failure(bin().args(["run", "--resume"]).arg(&dir));
    assert!(err.contains("no checkpoint"), "{err}");
    // With --resume, the scene, overrides and outputs are the checkpoint's.
    let err = failure(
        bin()
            .args(["run", "--resume"])
            .arg(&dir)
            .args(["--set", "contact.model=none"]),
    );
    assert!(err.contains("--set"), "{err}");
    let err = failure(bin().args(["run", "--resume"]).arg(&dir).arg(tiny()));
    assert!(err.contains("--resume"), "{err}");
    // A resumed run goes on from its checkpoint, never back.
    run(&out, &["--frames", "2", "--checkpoint-every", "2"]);
    let err = failure(
        bin()
            .args(["run", "--resume"])
            .arg(&out)
            .args(["--frames", "1"]),
    );
    assert!(err.contains("at frame 2"), "{err}");
    // A new run into the directory needs --overwrite, which removes the checkpoint too.
    let frames_err = failure(
        bin()
            .arg("run")
            .arg(tiny())
            .arg("--out")
            .arg(&out)
            .args(["--frames", "1"]),
    );
    assert!(frames_err.contains("--overwrite"), "{frames_err}");
    run(&out, &["--frames", "1", "--overwrite"]);
    assert!(!out.join(checkpoint::FILE_NAME).exists());
}

/// A GPU run checkpoints too and resumes on the GPU, bit for bit with every contact model: at
/// each checkpoint the state the step changes (positions, velocities, the rods' frames and rest
/// shapes) comes back from the device, with the GPU's contact state (the exact path's grid origin;
/// ACL's sets, pools and scheduler: `GpuSim::export_contact_state`), which the resumed run's step
/// takes up (tests/gpu_step.rs shows that without it the continuation differs); and again from a
/// checkpoint the resumed run wrote.
#[test]
fn gpu_run_checkpoints_and_resumes_on_the_gpu() {
    if yarnsim::gpu::testing::gpu_or_skip("gpu_run_checkpoints_and_resumes_on_the_gpu").is_none() {
        return;
    }
    for model in ["none", "exact", "acl"] {
        let dir = scratch(&format!("gpu-{model}"));
        let (full, part) = (dir.join("full"), dir.join("part"));
        let set = format!("contact.model={model}");
        // 162 steps per frame, no relaxation (tests/relax.rs covers it on the GPU).
        let common = [
            "--backend",
            "gpu",
            "--set",
            &set,
            "--set",
            "simulation.fps=100",
            "--set",
            "relax.time=0",
        ];
        let args = |extra: &[&'static str]| -> Vec<String> {
            common.iter().chain(extra).map(|s| s.to_string()).collect()
        };
        let full_args = args(&["--frames", "4"]);
        run(
            &full,
            &full_args.iter().map(|s| s.as_str()).collect::<Vec<_>>(),
        );
        let part_args = args(&["--frames", "1", "--checkpoint-every", "1"]);
        run(
            &part,
            &part_args.iter().map(|s| s.as_str()).collect::<Vec<_>>(),
        );
        let ck = Checkpoint::read(&part.join(checkpoint::FILE_NAME)).unwrap();
        assert_eq!(ck.frames(), 1);
        assert_eq!(ck.state().get_str("gpu.model").unwrap(), model);
        // Resumed twice: the second time from a checkpoint the resumed run wrote (its state
        // exported from one it imported).
        resume(&part, &["--frames", "2"]);
        resume(&part, &["--frames", "4"]);
        let m = manifest(&part);
        assert_eq!(m["frames_written"], 5, "{m:#}");
        assert_eq!(m["resumed"][0]["from_frame"], 1, "{m:#}");
        assert_eq!(m["resumed"][1]["from_frame"], 2, "{m:#}");
        for k in 0..=4 {
            assert!(
                frame(&full, k) == frame(&part, k),
                "{model}: frame {k} differs (resumed at frames 1 and 2)"
            );
        }
    }
}

/// The largest distance between the control points of two BCC frames (cm).
fn frame_distance(a: &[u8], b: &[u8]) -> f64 {
    let (a, b) = (
        yarnsim::bcc::read_bytes(a).unwrap(),
        yarnsim::bcc::read_bytes(b).unwrap(),
    );
    assert_eq!(a.len(), b.len());
    let mut d = 0.0f64;
    for (ca, cb) in a.iter().zip(&b) {
        assert_eq!(ca.points.len(), cb.points.len());
        for (p, q) in ca.points.iter().zip(&cb.points) {
            let e: f64 = (0..3).map(|i| (p[i] as f64 - q[i] as f64).powi(2)).sum();
            d = d.max(e.sqrt());
        }
    }
    d
}

/// A run resumed on the other backend (`--resume DIR --backend gpu|cpu`) goes on from its
/// checkpoint with its contact model (ACL) built afresh: it says so, the manifest records each
/// resumption's backend, the frames up to the checkpoint are the original run's, and the frames
/// after it stay near the uninterrupted runs on both backends (a state restored wrong, such as
/// velocities left at zero, would not).
#[test]
fn a_run_resumes_on_the_other_backend() {
    if yarnsim::gpu::testing::gpu_or_skip("a_run_resumes_on_the_other_backend").is_none() {
        return;
    }
    let dir = scratch("switch");
    let r = Scene::load(&tiny()).unwrap().yarn.radius as f64;
    let common = ["--set", "simulation.fps=100", "--set", "relax.time=0"];
    let with =
        |extra: &[&'static str]| -> Vec<&str> { common.iter().chain(extra).copied().collect() };
    let (cpu_full, gpu_full) = (dir.join("cpu"), dir.join("gpu"));
    run(&cpu_full, &with(&["--frames", "3"]));
    run(&gpu_full, &with(&["--frames", "3", "--backend", "gpu"]));
    for (from, to, original) in [("cpu", "gpu", &cpu_full), ("gpu", "cpu", &gpu_full)] {
        let part = dir.join(format!("{from}-to-{to}"));
        run(
            &part,
            &with(&[
                "--frames",
                "1",
                "--checkpoint-every",
                "1",
                "--backend",
                from,
            ]),
        );
        let out = resume_output(&part, &["--frames", "3", "--backend", to]);
        check_ok(&out);
        let err = text(&out.stderr);
        assert!(
            err.contains(&format!(
                "stepped with --backend {from}; it goes on with --backend {to}"
            )) && err.contains("built afresh"),
            "{err}"
        );
        let m = manifest(&part);
        assert_eq!(m["backend"], from, "{m:#}");
        assert_eq!(m["resumed"][0]["backend"], to, "{m:#}");
        assert_eq!(m["frames_written"], 4, "{m:#}");
        for k in 0..=1 {
            assert!(
                frame(original, k) == frame(&part, k),
                "{from} → {to}: frame {k}"
            );
        }
        for k in 2..=3 {
            let d = [&cpu_full, &gpu_full].map(|f| frame_distance(&frame(f, k), &frame(&part, k)));
            let parity = frame_distance(&frame(&cpu_full, k), &frame(&gpu_full, k));
            eprintln!("{from} → {to}: frame {k}: {:.3e} and {:.3e} cm from the CPU and GPU runs (those {parity:.3e} apart)", d[0], d[1]);
            // The bound for GPU against CPU over a 300-step run (1e-3 r), whose models
            // are rebuilt at different steps too; measured on lavapipe: 5.9e-5 cm (4.7e-4 r).
            // Velocities restored as zero would put the falling swatch some 3e-2 cm off.
            assert!(
                d.iter().all(|&d| d < 1e-3 * r),
                "{from} → {to}: frame {k} is {d:?} cm from the uninterrupted runs"
            );
        }
    }
}

/// A GPU run whose contacts outgrow what the adapter binds (`YARNSIM_GPU_BINDING_LIMIT` lowers
/// the limit, as a smaller GPU would have it) stops with the binding error and says how to go on
/// from its last checkpoint on the CPU; that resume completes the run, and since its checkpoint is
/// frame 0's (where every run builds its contact model afresh) its frames are the CPU run's, bit
/// for bit. Without a checkpoint the note names the CPU path from the start. A failure the CPU
/// path would meet too (a blow-up) gives no such note.
#[test]
fn a_gpu_run_past_the_binding_limit_goes_on_on_the_cpu() {
    if yarnsim::gpu::testing::gpu_or_skip("a_gpu_run_past_the_binding_limit_goes_on_on_the_cpu")
        .is_none()
    {
        return;
    }
    let dir = scratch("binding-limit");
    let common = ["--set", "simulation.fps=100", "--set", "relax.time=0"];
    let cpu_full = dir.join("cpu");
    let cpu_args: Vec<&str> = common.iter().copied().chain(["--frames", "2"]).collect();
    run(&cpu_full, &cpu_args);
    let part = dir.join("gpu");
    let gpu_run = |out: &Path, extra: &[&str]| {
        bin()
            .arg("run")
            .arg(tiny())
            .arg("--out")
            .arg(out)
            .args([
                "--frames",
                "2",
                "--checkpoint-every",
                "1",
                "--backend",
                "gpu",
                "-q",
            ])
            .args(common)
            .args(extra)
            .env("YARNSIM_GPU_BINDING_LIMIT", "65536")
            .output()
            .unwrap()
    };
    // 64 KiB holds every fixed buffer of the tiny swatch's step and its first contact capacities,
    // not the K̄ blocks its contacts grow to in frame 1.
    let out = gpu_run(&part, &[]);
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains("max_storage_buffer_binding_size: 65536")
            && err.contains(&format!(
                "`yarnsim run --resume {} --backend cpu`",
                part.display()
            )),
        "{err}"
    );
    let out = resume_output(&part, &["--backend", "cpu", "-q"]);
    check_ok(&out);
    for k in 0..=2 {
        assert!(frame(&cpu_full, k) == frame(&part, k), "frame {k}");
    }
    // Without a checkpoint (no --out): the note names the CPU path from the start.
    let out = bin()
        .arg("run")
        .arg(tiny())
        .args(["--frames", "2", "--backend", "gpu", "-q"])
        .args(common)
        .env("YARNSIM_GPU_BINDING_LIMIT", "65536")
        .output()
        .unwrap();
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains("max_storage_buffer_binding_size: 65536")
            && err.contains("the same command with `--backend cpu` runs the scene")
            && !err.contains("--resume"),
        "{err}"
    );
    // A blow-up: no note (the CPU path would blow up too).
    let blown = gpu_run(
        &dir.join("blown"),
        &["--set", "simulation.gravity=[0, -1e30, 0]"],
    );
    let err = text(&blown.stderr);
    assert_eq!(blown.status.code(), Some(1), "{err}");
    assert!(
        err.contains("did not converge") && !err.contains("--backend cpu"),
        "{err}"
    );
}

/// The tiny scene moved to (150, −117, 300) cm (its cloth, pins and floor), where it is simulated
/// about a local origin (`Sim::origin`): a run resumed from its checkpoint (local positions and
/// that origin) is bitwise the uninterrupted one, its frames are in the scene's frame (frames 0
/// and 1 are the tiny scene's own moved, within 1e-3 r: the two starts are two roundings of one
/// cloth, 1.6e-5 cm apart, half an ulp at 300 cm, and a frame of contact grows that to 3.2e-5 cm,
/// measured; 6.6e-5 cm by frame 2), and where a GPU is found its GPU run is the CPU run's, within
/// the same bound (3.1e-5 cm on lavapipe: an ulp at 300 cm, the frames' own rounding).
#[test]
fn a_far_scene_resumes_bitwise_and_writes_in_the_scene_frame() {
    let dir = scratch("far");
    let far = [
        "--set",
        "cloth.0.translate=[150, -117, 300]",
        "--set",
        "pin.0.region={ min = [140, -116.1, 299], max = [160, -110, 301] }",
        "--set",
        "obstacle.0.point=[150, -120, 300]",
        "--set",
        "simulation.fps=100",
        "--set",
        "relax.time=0",
    ];
    let with = |extra: &[&'static str]| -> Vec<&str> { far.iter().chain(extra).copied().collect() };
    let (near, full, part) = (dir.join("near"), dir.join("full"), dir.join("part"));
    run(
        &near,
        &far[6..]
            .iter()
            .chain(&["--frames", "1"])
            .copied()
            .collect::<Vec<_>>(),
    );
    run(&full, &with(&["--frames", "2"]));
    run(&part, &with(&["--frames", "1", "--checkpoint-every", "1"]));
    let ck = Checkpoint::read(&part.join(checkpoint::FILE_NAME)).unwrap();
    let origin = ck.state().get_value::<[f32; 3]>("sim.origin").unwrap();
    assert_eq!(
        origin,
        [150.0, -117.0, 300.0],
        "the swatch's centre, rounded"
    );
    resume(&part, &["--frames", "2"]);
    let moved_back = |b: &[u8]| -> Vec<u8> {
        let mut curves = yarnsim::bcc::read_bytes(b).unwrap();
        for c in &mut curves {
            for p in &mut c.points {
                for (x, t) in p.iter_mut().zip([150.0f32, -120.0, 300.0]) {
                    *x -= t;
                }
            }
        }
        let path = dir.join("moved.bcc");
        yarnsim::bcc::write(&path, &curves).unwrap();
        read(&path)
    };
    let r = 0.125;
    for k in 0..=2 {
        assert!(frame(&full, k) == frame(&part, k), "frame {k} differs");
    }
    for k in 0..=1 {
        let d = frame_distance(&frame(&near, k), &moved_back(&frame(&full, k)));
        assert!(
            d < 1e-3 * r,
            "frame {k}: {d} cm from the near scene's, moved"
        );
    }
    if yarnsim::gpu::testing::gpu_or_skip(
        "a_far_scene_resumes_bitwise_and_writes_in_the_scene_frame",
    )
    .is_some()
    {
        let gpu = dir.join("gpu");
        run(&gpu, &with(&["--frames", "1", "--backend", "gpu"]));
        let d = frame_distance(&frame(&full, 1), &frame(&gpu, 1));
        assert!(
            d < 1e-3 * r,
            "the GPU run's frame 1 is {d} cm from the CPU run's"
        );
    }
}

/// A run holds its output directory until it ends: a second run into it, with or without
/// `--overwrite`, and a `--resume` of it are refused while it runs (the first run relaxing for
/// hours has written no frame yet, so nothing else would stop them), and remove or write nothing
/// there; once the first has ended, the resume goes on.
#[test]
fn a_directory_in_use_by_a_run_is_refused_to_others() {
    let dir = scratch("lock");
    let out = dir.join("out");
    let args = ["--frames", "1", "--checkpoint-every", "1"];
    check_ok(
        &bin()
            .arg("run")
            .arg(tiny())
            .arg("--out")
            .arg(&out)
            .arg("-q")
            .args(args)
            .output()
            .unwrap(),
    );
    // A long run continuing it (a thousand frames of 540 steps, some 100 s), stopped once the
    // others have been refused.
    // Killed when dropped, so that a failed assertion leaves no run writing into a later
    // test's directory.
    struct Running(std::process::Child);
    impl Drop for Running {
        fn drop(&mut self) {
            let _ = self.0.kill();
            let _ = self.0.wait();
        }
    }
    let mut first = Running(
        bin()
            .args(["run", "--resume"])
            .arg(&out)
            .args(["-q", "--frames", "1000"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap(),
    );
    let frames = |d: &Path| -> usize {
        std::fs::read_dir(d)
            .unwrap()
            .filter(|e| {
                e.as_ref()
                    .is_ok_and(|e| e.file_name().to_string_lossy().starts_with("frame_"))
            })
            .count()
    };
    let start = Instant::now();
    while frames(&out) < 4 {
        assert!(
            start.elapsed() < Duration::from_secs(60),
            "the first run wrote no frame"
        );
        assert!(
            first.0.try_wait().unwrap().is_none(),
            "the first run ended early"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    let busy = format!(
        "{}: another yarnsim run is writing into this directory",
        out.display()
    );
    for overwrite in [false, true] {
        let mut cmd = bin();
        cmd.arg("run").arg(tiny()).arg("--out").arg(&out).args(args);
        if overwrite {
            cmd.arg("--overwrite");
        }
        let err = failure(&mut cmd);
        // Without --overwrite the frames already there refuse it first.
        assert!(
            err.contains(&busy) || (!overwrite && err.contains("already holds frames")),
            "{err}"
        );
        if overwrite {
            assert!(err.contains(&busy), "{err}");
        }
    }
    let err = failure(
        bin()
            .args(["run", "--resume"])
            .arg(&out)
            .args(["--frames", "2000"]),
    );
    assert!(err.contains(&busy), "{err}");
    // The first run saw none of it: still running, its frames in place.
    assert!(first.0.try_wait().unwrap().is_none(), "the first run ended");
    assert!(frames(&out) >= 4);
    drop(first);
    let at = Checkpoint::read(&out.join(checkpoint::FILE_NAME))
        .unwrap()
        .frames();
    let last = (at + 1).to_string();
    resume(&out, &["--frames", &last]);
    assert!(out.join(format!("frame_{last:0>4}.bcc")).is_file());
}
