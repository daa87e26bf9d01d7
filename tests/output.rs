//! Output hygiene: atomic writes (no partial file under a final name, no temporary file left), runs
//! refusing to mix their frames with another run's unless `--overwrite`, the run manifest, and
//! rejected options leaving no directory behind.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use yarnsim::output::{temp_target, write_atomic, write_bytes_atomic, OutputError};

#[cfg(unix)]
#[path = "support/pty.rs"]
mod pty;

fn bin() -> Command {
    Command::new(env!("CARGO_BIN_EXE_yarnsim"))
}

/// A fresh directory for one test.
fn scratch(name: &str) -> PathBuf {
    let d = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("output-{name}"));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn tiny_scene() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("scenes/tiny.toml")
}

/// `yarnsim run scenes/tiny.toml --set contact.model=none --frames N --quiet` plus `extra`.
fn run_tiny(frames: u32, extra: &[&std::ffi::OsStr]) -> Output {
    bin()
        .arg("run")
        .arg(tiny_scene())
        .args(["--set", "contact.model=none", "--quiet", "--frames"])
        .arg(frames.to_string())
        .args(extra)
        .output()
        .unwrap()
}

fn os<S: AsRef<std::ffi::OsStr> + ?Sized>(s: &S) -> &std::ffi::OsStr {
    s.as_ref()
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// The `frame` of each stats record, one per line of `text`.
fn record_frames(text: &str) -> Vec<u64> {
    text.lines()
        .map(|l| {
            serde_json::from_str::<serde_json::Value>(l).unwrap()["frame"]
                .as_u64()
                .unwrap()
        })
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

fn check_failed(out: &Output) -> String {
    assert!(
        !out.status.success(),
        "succeeded\nstdout:\n{}\nstderr:\n{}",
        text(&out.stdout),
        text(&out.stderr)
    );
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
    text(&out.stderr)
}

/// The names in `dir`, sorted.
fn names(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    v.sort();
    v
}

fn assert_no_temp_files(dir: &Path) {
    let temps: Vec<String> = names(dir)
        .into_iter()
        .filter(|n| temp_target(n).is_some())
        .collect();
    assert!(
        temps.is_empty(),
        "temporary files left in {dir:?}: {temps:?}"
    );
}

// ---------------------------------------------------------------------------------------------
// The atomic writer itself.

#[test]
fn atomic_write_writes_the_whole_content_and_leaves_no_temp_file() {
    let dir = scratch("atomic-ok");
    let path = dir.join("a.txt");
    write_atomic(&path, |w| {
        w.write_all(b"hello ")?;
        w.write_all(b"world")
    })
    .unwrap();
    assert_eq!(std::fs::read(&path).unwrap(), b"hello world");
    // Replacing an existing file.
    write_bytes_atomic(&path, b"second").unwrap();
    assert_eq!(std::fs::read(&path).unwrap(), b"second");
    assert_eq!(names(&dir), ["a.txt"]);
}

/// A file replaced keeps its permission bits (a private `--stats` file was made readable to all,
/// 0644 by the umask, by its first record).
#[cfg(unix)]
#[test]
fn a_replaced_file_keeps_its_permissions() {
    use std::os::unix::fs::PermissionsExt;
    let dir = scratch("atomic-mode");
    let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o7777;
    for bits in [0o600, 0o640, 0o604, 0o755, 0o400] {
        let path = dir.join(format!("file_{bits:o}"));
        std::fs::write(&path, b"old").unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(bits)).unwrap();
        write_bytes_atomic(&path, b"new").unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), b"new");
        assert_eq!(mode(&path), bits, "{path:?}");
    }
    // Through the CLI: a private stats file stays private.
    let stats = dir.join("stats.jsonl");
    std::fs::write(&stats, b"").unwrap();
    std::fs::set_permissions(&stats, std::fs::Permissions::from_mode(0o600)).unwrap();
    check_ok(&run_tiny(
        1,
        &[
            os("--set"),
            os("relax.time=0"),
            os("--stats"),
            stats.as_os_str(),
        ],
    ));
    assert_eq!(std::fs::read_to_string(&stats).unwrap().lines().count(), 1);
    assert_eq!(mode(&stats), 0o600);
    assert_no_temp_files(&dir);
}

#[test]
fn a_write_failing_midway_leaves_no_partial_file() {
    let dir = scratch("atomic-fail");
    let path = dir.join("frame_0001.bcc");
    // More than the writer's buffer, so part of it reaches the temporary file before the error.
    let big = vec![7u8; 300_000];
    let err = write_atomic(&path, |w| {
        w.write_all(&big)?;
        Err(std::io::Error::other(
            "simulated failure after 300000 bytes",
        ))
    })
    .unwrap_err();
    assert!(matches!(err, OutputError::Write { .. }), "{err:?}");
    let msg = err.to_string();
    assert!(msg.contains("frame_0001.bcc"), "{msg}");
    assert!(msg.contains("simulated failure"), "{msg}");
    assert_eq!(err.path(), path);
    assert!(
        !path.exists(),
        "a partial file was left under the final name"
    );
    assert!(names(&dir).is_empty(), "left behind: {:?}", names(&dir));

    // With a previous complete file, that file survives untouched.
    std::fs::write(&path, b"previous complete content").unwrap();
    let err = write_atomic(&path, |w| {
        w.write_all(&big)?;
        Err(std::io::Error::other("simulated failure"))
    })
    .unwrap_err();
    assert!(matches!(err, OutputError::Write { .. }), "{err:?}");
    assert_eq!(std::fs::read(&path).unwrap(), b"previous complete content");
    assert_eq!(names(&dir), ["frame_0001.bcc"]);
}

#[test]
fn a_panicking_writer_leaves_no_temp_file() {
    let dir = scratch("atomic-panic");
    let path = dir.join("x.bin");
    std::fs::write(&path, b"old").unwrap();
    let r = std::panic::catch_unwind(|| {
        let _ = write_atomic(&path, |w| {
            w.write_all(&[1u8; 100_000])?;
            panic!("writer panics midway");
        });
    });
    assert!(r.is_err());
    assert_eq!(std::fs::read(&path).unwrap(), b"old");
    assert_eq!(names(&dir), ["x.bin"]);
}

#[test]
fn create_and_rename_failures_name_the_path_and_leave_nothing() {
    let dir = scratch("atomic-errors");
    // The directory does not exist.
    let missing = dir.join("no/such/dir/f.png");
    let err = write_bytes_atomic(&missing, b"x").unwrap_err();
    assert!(matches!(err, OutputError::Create { .. }), "{err:?}");
    assert!(err.to_string().contains("no/such/dir/f.png"), "{err}");
    // The final name is a (non-empty) directory: the rename fails, the temporary file goes.
    let taken = dir.join("taken");
    std::fs::create_dir_all(taken.join("inside")).unwrap();
    let err = write_bytes_atomic(&taken, b"x").unwrap_err();
    assert!(matches!(err, OutputError::Rename { .. }), "{err:?}");
    assert!(err.to_string().contains("taken"), "{err}");
    assert!(taken.is_dir());
    assert_eq!(names(&dir), ["taken"]);
    // Not a file name at all.
    let err = write_bytes_atomic(Path::new("/"), b"x").unwrap_err();
    assert!(matches!(err, OutputError::NoFileName { .. }), "{err:?}");
    // Errors of the format writers built on it still name the file.
    let err = yarnsim::bcc::write(&dir.join("nope/f.bcc"), &[]).unwrap_err();
    assert!(err.to_string().contains("nope/f.bcc"), "{err}");
}

#[test]
fn png_obj_and_bcc_writers_are_complete_and_leave_no_temp_files() {
    let dir = scratch("writers");
    let img = image::RgbaImage::from_fn(5, 3, |x, y| {
        image::Rgba([x as u8 * 40, y as u8 * 80, 7, 255])
    });
    let png = dir.join("frame_0000.png");
    yarnsim::render::save_png(&img, &png).unwrap();
    let back = image::open(&png).unwrap().to_rgba8();
    assert_eq!(back, img);
    let rgb = image::RgbImage::from_pixel(4, 4, image::Rgb([1, 2, 3]));
    let cm = dir.join("contact_matrix_0000.png");
    yarnsim::render::save_png(&rgb, &cm).unwrap();
    assert_eq!(image::open(&cm).unwrap().to_rgb8(), rgb);
    let curves = vec![yarnsim::state::Curve {
        points: (0..6).map(|i| [i as f32, 0.5, -1.0]).collect(),
        closed: false,
    }];
    let obj = yarnsim::export::write_obj_frame(&dir, 0, &curves).unwrap();
    assert_eq!(yarnsim::export::read_obj(&obj).unwrap(), curves);
    let bcc = dir.join("frame_0000.bcc");
    yarnsim::bcc::write(&bcc, &curves).unwrap();
    assert_eq!(yarnsim::bcc::read(&bcc).unwrap(), curves);
    assert_eq!(
        names(&dir),
        [
            "contact_matrix_0000.png",
            "frame_0000.bcc",
            "frame_0000.obj",
            "frame_0000.png"
        ]
    );
}

/// Unmounts the small tmpfs when dropped.
struct Tmpfs(PathBuf);

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(&self.0).status();
    }
}

/// A full disk: a 64 KiB tmpfs. Skipped (with the reason printed) where it cannot be mounted.
#[test]
fn a_full_disk_leaves_no_partial_file() {
    let dir = scratch("full-disk");
    let mnt = dir.join("mnt");
    std::fs::create_dir_all(&mnt).unwrap();
    let mounted = Command::new("mount")
        .args(["-t", "tmpfs", "-o", "size=64k", "tmpfs"])
        .arg(&mnt)
        .output();
    let reason = match &mounted {
        Ok(o) if o.status.success() => None,
        Ok(o) => Some(format!("mount failed: {}", text(&o.stderr).trim())),
        Err(e) => Some(format!("cannot run mount: {e}")),
    };
    if let Some(reason) = reason {
        eprintln!(
            "SKIPPED a_full_disk_leaves_no_partial_file: cannot mount a small tmpfs ({reason})"
        );
        return;
    }
    let _guard = Tmpfs(mnt.clone());

    // A small complete file fits.
    let path = mnt.join("frame_0001.bcc");
    write_bytes_atomic(&path, b"complete small file").unwrap();
    // A file larger than the disk: the write fails and the previous content stays.
    let big = vec![3u8; 1 << 20];
    let err = write_bytes_atomic(&path, &big).unwrap_err();
    assert!(
        matches!(err, OutputError::Write { .. } | OutputError::Sync { .. }),
        "{err:?}"
    );
    let msg = err.to_string();
    assert!(msg.contains("frame_0001.bcc"), "{msg}");
    assert_eq!(std::fs::read(&path).unwrap(), b"complete small file");
    assert_eq!(names(&mnt), ["frame_0001.bcc"]);
    // A new name: nothing at all is left.
    let fresh = mnt.join("frame_0002.bcc");
    assert!(write_bytes_atomic(&fresh, &big).is_err());
    assert!(!fresh.exists());
    // Through the BCC and OBJ writers: many long curves.
    let curves: Vec<yarnsim::state::Curve> = (0..20)
        .map(|k| yarnsim::state::Curve {
            points: (0..1000).map(|i| [i as f32, k as f32, 0.25]).collect(),
            closed: false,
        })
        .collect();
    let bcc = mnt.join("frame_0003.bcc");
    let err = yarnsim::bcc::write(&bcc, &curves).unwrap_err();
    assert!(err.to_string().contains("frame_0003.bcc"), "{err}");
    assert!(!bcc.exists());
    assert!(yarnsim::export::write_obj_frame(&mnt, 4, &curves).is_err());
    assert!(!mnt.join("frame_0004.obj").exists());
    let img = image::RgbaImage::from_fn(512, 512, |x, y| {
        image::Rgba([(x * 7 + y * 13) as u8, (x ^ y) as u8, (x * y) as u8, 255])
    });
    assert!(yarnsim::render::save_png(&img, &mnt.join("frame_0005.png")).is_err());
    assert_eq!(names(&mnt), ["frame_0001.bcc"]);
}

// ---------------------------------------------------------------------------------------------
// Runs.

#[test]
fn out_into_a_used_directory_needs_overwrite() {
    let dir = scratch("overwrite");
    let out = dir.join("frames");
    check_ok(&run_tiny(2, &[os("--out"), out.as_os_str(), os("--obj")]));
    assert_eq!(
        names(&out),
        [
            "frame_0000.bcc",
            "frame_0000.obj",
            "frame_0001.bcc",
            "frame_0001.obj",
            "frame_0002.bcc",
            "frame_0002.obj",
            "manifest.json"
        ]
    );
    std::fs::write(out.join("notes.txt"), "not ours").unwrap();
    let before: Vec<(String, Vec<u8>)> = names(&out)
        .into_iter()
        .map(|n| {
            let b = std::fs::read(out.join(&n)).unwrap();
            (n, b)
        })
        .collect();

    // Refused, with nothing touched (and no --capture directory made).
    let capture = dir.join("capture");
    let err = check_failed(&run_tiny(
        1,
        &[
            os("--out"),
            out.as_os_str(),
            os("--capture"),
            capture.as_os_str(),
        ],
    ));
    let want = format!(
        "{} already holds frames of another run; use --overwrite to replace them",
        out.display()
    );
    assert!(err.contains(&want), "{err}");
    assert!(!capture.exists());
    for (n, b) in &before {
        assert_eq!(&std::fs::read(out.join(n)).unwrap(), b, "{n} changed");
    }
    assert_eq!(names(&out).len(), before.len());

    // With --overwrite: the old frames (and OBJs, of which this run writes none) are gone.
    check_ok(&run_tiny(
        1,
        &[os("--out"), out.as_os_str(), os("--overwrite")],
    ));
    assert_eq!(
        names(&out),
        [
            "frame_0000.bcc",
            "frame_0001.bcc",
            "manifest.json",
            "notes.txt"
        ]
    );
    let m: serde_json::Value =
        serde_json::from_slice(&std::fs::read(out.join("manifest.json")).unwrap()).unwrap();
    assert_eq!(m["frames_written"], 2);
    let frames = yarnsim::bcc::read(&out.join("frame_0001.bcc")).unwrap();
    assert!(!frames.is_empty());
}

#[test]
fn capture_into_a_used_directory_needs_overwrite() {
    let dir = scratch("capture-used");
    let capture = dir.join("capture");
    std::fs::create_dir_all(&capture).unwrap();
    std::fs::write(capture.join("frame_0000.png"), b"old capture").unwrap();
    let out = dir.join("out");
    let err = check_failed(&run_tiny(
        1,
        &[
            os("--capture"),
            capture.as_os_str(),
            os("--out"),
            out.as_os_str(),
        ],
    ));
    assert!(
        err.contains(&format!(
            "{} already holds frames of another run; use --overwrite to replace them",
            capture.display()
        )),
        "{err}"
    );
    assert!(!out.exists(), "the refused run created {out:?}");
    assert_eq!(
        std::fs::read(capture.join("frame_0000.png")).unwrap(),
        b"old capture"
    );
}

#[test]
fn manifest_records_the_run() {
    let dir = scratch("manifest");
    let out = dir.join("frames");
    let stats = dir.join("stats.jsonl");
    let before = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs();
    check_ok(&run_tiny(
        2,
        &[
            os("--out"),
            out.as_os_str(),
            os("--stats"),
            stats.as_os_str(),
            os("--set"),
            os("camera.fov_deg=30"),
        ],
    ));
    let after = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs();
    let m: serde_json::Value =
        serde_json::from_slice(&std::fs::read(out.join("manifest.json")).unwrap())
            .expect("manifest.json is JSON");
    for key in [
        "yarnsim_version",
        "scene_path",
        "scene",
        "overrides",
        "backend",
        "adapter",
        "command_line",
        "start_time_unix",
        "frames_requested",
        "frames_written",
        "finished",
    ] {
        assert!(m.get(key).is_some(), "manifest lacks {key}: {m:#}");
    }
    assert_eq!(m["yarnsim_version"], env!("CARGO_PKG_VERSION"));
    assert_eq!(m["scene_path"], tiny_scene().display().to_string());
    assert_eq!(
        m["overrides"],
        serde_json::json!(["contact.model=none", "camera.fov_deg=30"])
    );
    // The resolved scene: the file's contents with the overrides applied.
    assert_eq!(m["scene"]["contact"]["model"], "none");
    assert_eq!(m["scene"]["camera"]["fov_deg"].as_f64(), Some(30.0));
    assert_eq!(m["scene"]["simulation"]["frames"], 2);
    assert_eq!(m["backend"], "cpu");
    assert!(m["adapter"].is_null());
    let cmd: Vec<&str> = m["command_line"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap())
        .collect();
    assert_eq!(cmd[1], "run");
    assert!(
        cmd.contains(&"--stats") && cmd.contains(&"camera.fov_deg=30"),
        "{cmd:?}"
    );
    let t = m["start_time_unix"].as_u64().unwrap();
    assert!(before <= t && t <= after, "{before} <= {t} <= {after}");
    assert_eq!(m["frames_requested"], 2);
    assert_eq!(m["frames_written"], 3, "frame 0 (the initial state) counts");
    assert_eq!(m["finished"], true);
    // The stats file: complete records only, and no temporary files anywhere.
    let s = std::fs::read_to_string(&stats).unwrap();
    assert_eq!(s.lines().count(), 2);
    for l in s.lines() {
        serde_json::from_str::<serde_json::Value>(l).unwrap();
    }
    assert!(s.ends_with('\n'));
    assert_no_temp_files(&dir);
    assert_no_temp_files(&out);
}

#[test]
fn a_stats_path_that_is_a_directory_is_refused_before_anything_is_made() {
    let dir = scratch("stats-dir");
    let out = dir.join("frames");
    let stats = dir.join("stats.jsonl");
    std::fs::create_dir_all(&stats).unwrap();
    let err = check_failed(&run_tiny(
        1,
        &[
            os("--out"),
            out.as_os_str(),
            os("--stats"),
            stats.as_os_str(),
        ],
    ));
    assert!(err.contains("stats.jsonl"), "{err}");
    assert!(!out.exists(), "a rejected --stats left {out:?}");
}

#[test]
fn a_run_failing_midway_records_the_frames_it_wrote() {
    let dir = scratch("manifest-failed");
    let out = dir.join("frames");
    let stats = dir.join("stats.jsonl");
    // A directory where frame 1 is to go: frame 0 is written, frame 1 cannot be.
    std::fs::create_dir_all(out.join("frame_0001.bcc/inside")).unwrap();
    let err = check_failed(&run_tiny(
        2,
        &[
            os("--out"),
            out.as_os_str(),
            os("--stats"),
            stats.as_os_str(),
        ],
    ));
    assert!(err.contains("frame_0001.bcc"), "{err}");
    let m: serde_json::Value =
        serde_json::from_slice(&std::fs::read(out.join("manifest.json")).unwrap()).unwrap();
    assert_eq!(m["frames_written"], 1, "{m:#}");
    assert_eq!(m["finished"], false, "{m:#}");
    assert_eq!(
        names(&out),
        ["frame_0000.bcc", "frame_0001.bcc", "manifest.json"]
    );
    assert!(out.join("frame_0001.bcc").is_dir());
    // Frame 1 was never written, so it has no record (it had one, written before its frame).
    let s = std::fs::read_to_string(&stats).unwrap();
    assert_eq!(s, "", "a record of a frame never written");
    assert_no_temp_files(&dir);
    assert_no_temp_files(&out);
}

#[test]
fn rejected_options_leave_no_directory() {
    let dir = scratch("rejected");
    let out = dir.join("out");
    let capture = dir.join("capture");
    let o = out.as_os_str();
    let c = capture.as_os_str();
    let missing_stats = dir.join("no/such/dir/stats.jsonl");
    let cases: Vec<(&str, Vec<&std::ffi::OsStr>)> = vec![
        // A contact matrix of a frame the run does not reach.
        (
            "--contact-matrix",
            vec![os("--out"), o, os("--contact-matrix"), os("5")],
        ),
        // A contact matrix without a contact model.
        (
            "--contact-matrix",
            vec![os("--out"), o, os("--contact-matrix"), os("1")],
        ),
        // A contact-colour capture without a contact model.
        (
            "--color",
            vec![
                os("--out"),
                o,
                os("--capture"),
                c,
                os("--color"),
                os("contacts"),
            ],
        ),
        // A GPU option on a CPU run.
        (
            "--adapter",
            vec![os("--out"), o, os("--adapter"), os("nothing")],
        ),
        // A bad override.
        (
            "--set",
            vec![os("--out"), o, os("--set"), os("no.such.key=1")],
        ),
        // A stats file in a directory that does not exist.
        (
            "--stats",
            vec![os("--out"), o, os("--stats"), missing_stats.as_os_str()],
        ),
        // Capturing every 0 frames (refused by the renderer, or for want of a GPU adapter).
        (
            "--capture",
            vec![
                os("--out"),
                o,
                os("--capture"),
                c,
                os("--capture-every"),
                os("0"),
            ],
        ),
        // A capture size no adapter renders (or no GPU adapter at all).
        (
            "--capture",
            vec![os("--out"), o, os("--capture"), c, os("--width"), os("0")],
        ),
    ];
    for (what, args) in cases {
        let err = check_failed(&run_tiny(1, &args));
        assert!(err.contains(what), "{args:?}: expected {what:?} in\n{err}");
        assert!(!out.exists(), "{args:?} left {out:?} behind:\n{err}");
        assert!(
            !capture.exists(),
            "{args:?} left {capture:?} behind:\n{err}"
        );
        assert!(!missing_stats.exists());
    }
    assert!(names(&dir).is_empty(), "{:?}", names(&dir));
}

/// A run whose options a checkpoint cannot record (a `--stats` path that is not UTF-8) with
/// `--checkpoint-every` is refused before anything is made or removed: before, the `--out`
/// directory and its manifest were made and the stats file emptied first.
#[cfg(unix)]
#[test]
fn options_a_checkpoint_cannot_record_are_refused_before_anything_is_made() {
    use std::os::unix::ffi::OsStrExt;
    let dir = scratch("unrecordable");
    let out = dir.join("out");
    let stats = dir.join(std::ffi::OsStr::from_bytes(b"stats_\xff\xfe.jsonl"));
    let records = b"{\"frame\":1}\n";
    std::fs::write(&stats, records).unwrap();
    let err = check_failed(&run_tiny(
        2,
        &[
            os("--set"),
            os("relax.time=0"),
            os("--out"),
            out.as_os_str(),
            os("--stats"),
            stats.as_os_str(),
            os("--checkpoint-every"),
            os("1"),
        ],
    ));
    assert!(err.contains("cannot be recorded in a checkpoint"), "{err}");
    assert!(!out.exists(), "{out:?} was made:\n{err}");
    assert_eq!(std::fs::read(&stats).unwrap(), records);
    assert_eq!(std::fs::read_dir(&dir).unwrap().count(), 1);
}

/// `--stats` never replaces the scene, a file the run writes itself, or a file of the user's that
/// is no stats file (unless `--overwrite`); a path it cannot write is refused before anything is
/// made or removed (`--overwrite` included).
#[test]
fn stats_replace_only_what_they_may() {
    let dir = scratch("stats-guard");
    let scene = dir.join("tiny.toml");
    std::fs::copy(tiny_scene(), &scene).unwrap();
    let scene_text = std::fs::read(&scene).unwrap();
    let run = |extra: &[&std::ffi::OsStr]| {
        bin()
            .arg("run")
            .arg(&scene)
            .args(["--set", "contact.model=none", "--quiet", "--frames", "1"])
            .args(extra)
            .output()
            .unwrap()
    };
    let err = check_failed(&run(&[os("--stats"), scene.as_os_str()]));
    assert!(err.contains("that is the scene file"), "{err}");
    assert_eq!(std::fs::read(&scene).unwrap(), scene_text);

    let out = dir.join("frames");
    for own in ["manifest.json", "frame_0001.bcc", "checkpoint.bin"] {
        let err = check_failed(&run(&[
            os("--out"),
            out.as_os_str(),
            os("--stats"),
            out.join(own).as_os_str(),
        ]));
        assert!(
            err.contains(&format!("the run writes its own {own}")),
            "{err}"
        );
        assert!(!out.exists());
    }

    let notes = dir.join("notes.txt");
    std::fs::write(&notes, "mine\n").unwrap();
    let err = check_failed(&run(&[os("--stats"), notes.as_os_str()]));
    assert!(err.contains("is not a stats file"), "{err}");
    assert_eq!(std::fs::read_to_string(&notes).unwrap(), "mine\n");
    // A stats file is replaced by the next run's, as before; with --overwrite, any file.
    let stats = dir.join("stats.jsonl");
    check_ok(&run(&[os("--stats"), stats.as_os_str()]));
    check_ok(&run(&[os("--stats"), stats.as_os_str()]));
    assert_eq!(std::fs::read_to_string(&stats).unwrap().lines().count(), 1);
    check_ok(&run(&[os("--stats"), notes.as_os_str(), os("--overwrite")]));
    assert!(std::fs::read_to_string(&notes)
        .unwrap()
        .starts_with("{\"frame\":1"));

    // An unwritable stats path with --overwrite: the old run's files are still there.
    check_ok(&run(&[os("--out"), out.as_os_str()]));
    let before = names(&out);
    let err = check_failed(&run(&[
        os("--out"),
        out.as_os_str(),
        os("--overwrite"),
        os("--stats"),
        os("/proc/yarnsim-stats.jsonl"),
    ]));
    assert!(err.contains("cannot write there"), "{err}");
    assert_eq!(names(&out), before);
    assert_no_temp_files(&dir);
}

/// `--overwrite` removes the frames a run writes (`frame_NNNN.*`), not the user's `frame_*` files.
#[test]
fn overwrite_keeps_files_that_only_look_like_frames() {
    let dir = scratch("overwrite-names");
    let out = dir.join("frames");
    std::fs::create_dir_all(&out).unwrap();
    std::fs::write(out.join("frame_notes.txt"), "mine").unwrap();
    // Not frames of a run: no --overwrite needed.
    check_ok(&run_tiny(1, &[os("--out"), out.as_os_str()]));
    check_ok(&run_tiny(
        1,
        &[os("--out"), out.as_os_str(), os("--overwrite")],
    ));
    assert_eq!(
        names(&out),
        [
            "frame_0000.bcc",
            "frame_0001.bcc",
            "frame_notes.txt",
            "manifest.json"
        ]
    );
}

/// A reader that closes standard output (`yarnsim run … | head -1`) ends the run as a closed pipe
/// ends other tools (SIGPIPE), with no panic, its frames and manifest on disk up to there; a full
/// device behind it is a clear error.
#[cfg(unix)]
#[test]
fn a_closed_or_full_standard_output_ends_the_run_cleanly() {
    use std::io::BufRead;
    use std::os::unix::process::ExitStatusExt;
    let dir = scratch("closed-stdout");
    let out = dir.join("frames");
    let mut child = bin()
        .arg("run")
        .arg(tiny_scene())
        // (Far more frames than run before the pipe closes: the run cannot finish first.)
        .args(["--set", "contact.model=none", "--frames", "5000", "--out"])
        .arg(&out)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = std::io::BufReader::new(child.stdout.take().unwrap()).lines();
    let first = lines.next().unwrap().unwrap();
    assert!(first.starts_with("frame    1/5000"), "{first}");
    drop(lines);
    let done = child.wait_with_output().unwrap();
    let err = text(&done.stderr);
    assert_eq!(done.status.signal(), Some(libc::SIGPIPE), "{err}");
    assert!(!err.contains("panicked"), "{err}");
    let m: serde_json::Value =
        serde_json::from_slice(&std::fs::read(out.join("manifest.json")).unwrap()).unwrap();
    let written = m["frames_written"].as_u64().unwrap();
    assert!((2..5001).contains(&written), "{m:#}");
    assert_eq!(m["finished"], false);
    assert!(out.join(format!("frame_{:04}.bcc", written - 1)).is_file());

    let full = dev_full();
    let done = bin()
        .arg("run")
        .arg(tiny_scene())
        .args(["--set", "contact.model=none", "--frames", "1"])
        .stdout(full)
        .output()
        .unwrap();
    let err = check_failed(&done);
    assert!(
        err.contains("frame 1: writing its line to standard output"),
        "{err}"
    );
    assert!(!err.contains("panicked"), "{err}");
}

/// A run with `--out` whose standard output fails (a full disk behind a redirection; a terminal
/// that hung up) writes a checkpoint of the frame it had written before it ends with the error,
/// and says so: the run goes on with `--resume`. Before, only a run with `--checkpoint-every` could
/// go on, from its last scheduled checkpoint.
#[test]
#[cfg(unix)]
fn a_run_whose_standard_output_fails_can_go_on() {
    let dir = scratch("full-stdout-resume");
    let out = dir.join("frames");
    let k = saved_when_standard_output_fails(&out, &["--set", "contact.model=none"]);
    assert_eq!(k, 1);
    let m = resume_to_frame_3(&out);
    assert_eq!(m["finished"], true);
}

/// The same on the GPU step, which runs the next frame's first steps while a frame's pass-through
/// check runs, so that when the frame's line fails the GPU's state is already past the frame: the
/// run goes on to the end of the frame it had begun (writing it, not its line), saves there and
/// then fails with the line's error. Before, the checkpoint's download was refused while steps
/// were ahead, and the run ended with that refusal ("the GPU step ran 54 steps of the next frame
/// ahead ... turn run-ahead off"), no checkpoint and no word of standard output.
#[test]
#[cfg(unix)]
fn a_gpu_run_whose_standard_output_fails_can_go_on() {
    if yarnsim::gpu::testing::gpu_or_skip("a_gpu_run_whose_standard_output_fails_can_go_on")
        .is_none()
    {
        return;
    }
    let dir = scratch("full-stdout-resume-gpu");
    let out = dir.join("frames");
    // (Frames of 54 steps: a moment each on lavapipe.)
    let args = ["--backend", "gpu", "--set", "simulation.fps=300"];
    let k = saved_when_standard_output_fails(&out, &args);
    assert!(k == 1 || k == 2, "{k}");
    resume_to_frame_3(&out);
}

/// `/dev/full` open for writing: every write to it fails (no space left).
#[cfg(unix)]
fn dev_full() -> std::fs::File {
    std::fs::OpenOptions::new()
        .write(true)
        .open("/dev/full")
        .unwrap()
}

/// A run of the tiny swatch with `args` to frame 3 into `out`, its standard output `/dev/full`:
/// it must fail on frame 1's line, saying which frame its checkpoint holds (returned), and that
/// frame must be on disk.
#[cfg(unix)]
fn saved_when_standard_output_fails(out: &Path, args: &[&str]) -> u32 {
    let full = dev_full();
    let done = bin()
        .arg("run")
        .arg(tiny_scene())
        .args(args)
        .args(["--frames", "3", "--out"])
        .arg(out)
        .stdout(full)
        .output()
        .unwrap();
    let err = check_failed(&done);
    assert!(
        err.contains("frame 1: writing its line to standard output"),
        "{err}"
    );
    let ck =
        yarnsim::checkpoint::Checkpoint::read(&out.join(yarnsim::checkpoint::FILE_NAME)).unwrap();
    let k = ck.frames();
    assert!(
        err.contains(&format!(
            "note: the checkpoint in {0} holds frame {k}; `yarnsim run --resume {0}` goes on",
            out.display()
        )),
        "{err}"
    );
    assert!(out.join(format!("frame_{k:04}.bcc")).is_file());
    k
}

/// `yarnsim run --resume OUT -q`, which must succeed and write frame 3; its manifest.
#[cfg(unix)]
fn resume_to_frame_3(out: &Path) -> serde_json::Value {
    let resumed = bin()
        .args(["run", "--resume"])
        .arg(out)
        .arg("-q")
        .output()
        .unwrap();
    check_ok(&resumed);
    assert!(out.join("frame_0003.bcc").is_file());
    serde_json::from_slice(&std::fs::read(out.join("manifest.json")).unwrap()).unwrap()
}

/// A run that fails before its first frame (in its relaxation) leaves a manifest that says so.
#[test]
fn a_run_failing_in_its_relaxation_leaves_a_manifest() {
    let dir = scratch("manifest-relax");
    let out = dir.join("frames");
    let err = check_failed(&run_tiny(
        1,
        &[
            os("--out"),
            out.as_os_str(),
            os("--set"),
            os("yarn.bending_stiffness=1e30"),
        ],
    ));
    assert!(err.contains("relaxing"), "{err}");
    let m: serde_json::Value =
        serde_json::from_slice(&std::fs::read(out.join("manifest.json")).unwrap()).unwrap();
    assert_eq!(m["frames_written"], 0, "{m:#}");
    assert_eq!(m["finished"], false, "{m:#}");
}

/// `--frames` is bounded as `simulation.frames` is.
#[test]
fn frames_past_the_scene_bound_are_refused() {
    let err = check_failed(&run_tiny(99_999_999, &[]));
    assert!(err.contains("--frames 99999999: at most 10000000"), "{err}");
}

/// An error's causes are printed once each: a cause whose words the line above holds already is
/// left out (a missing BCC file printed "No such file or directory" three times).
#[test]
fn an_error_says_each_cause_once() {
    let dir = scratch("causes-once");
    let scene = dir.join("s.toml");
    std::fs::write(&scene, "[[cloth]]\nsource.bcc = { path = \"nope.bcc\" }\n").unwrap();
    let out = bin().arg("run").arg(&scene).output().unwrap();
    let err = check_failed(&out);
    assert_eq!(err.matches("nope.bcc").count(), 1, "{err}");
    assert_eq!(err.matches("No such file").count(), 1, "{err}");
    assert!(err.contains("building the cloth of"), "{err}");
}

/// Errors raised after the scene is read (a BCC piece, a pin, a seam) name the file and the line of
/// the table they are about, as errors found while reading it do.
#[test]
fn errors_of_building_the_cloth_name_their_line() {
    let dir = scratch("build-lines");
    let scene = dir.join("s.toml");
    let piece = "[[cloth]]\nsource.generator = { pattern = \"garter\", wales = 2, courses = 2 }\n";
    std::fs::write(
        &scene,
        format!("# two pieces\n{piece}\n[[cloth]]\nsource.bcc = {{ path = \"nope.bcc\" }}\n"),
    )
    .unwrap();
    let err = check_failed(&bin().arg("run").arg(&scene).output().unwrap());
    assert!(
        err.contains("s.toml:5\n") && err.contains("cloth.1: ") && err.contains("nope.bcc"),
        "{err}"
    );
    std::fs::write(
        &scene,
        format!("{piece}[[pin]]\nrange = {{ first = 0, last = 2 }}\n[[pin]]\nrange = {{ first = 0, last = 999 }}\n"),
    )
    .unwrap();
    let err = check_failed(&bin().arg("run").arg(&scene).output().unwrap());
    assert!(
        err.contains("s.toml:5\n") && err.contains("pin.1: range"),
        "{err}"
    );
}

/// A step that fails for want of a smaller `simulation.dt` names the stiffnesses the scene sets far
/// from their defaults (in range, so the scene was taken, and each a likely reason): here
/// `contact.stiffness = 1e12` (default 3500) and a yarn 3,000 times lighter than the default.
/// Every scene in `scenes/` sets none.
#[test]
fn a_failed_step_names_stiffnesses_far_from_their_defaults() {
    let out = bin()
        .args(["run", "scenes/tiny.toml", "-q", "--frames", "1"])
        .args([
            "--set",
            "contact.stiffness=1e12",
            "--set",
            "yarn.linear_density=1e-6",
        ])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{err}");
    assert!(err.contains("try a smaller simulation.dt"), "{err}");
    assert!(
        err.contains("\nnote: the scene sets contact.stiffness = 1e12 (default 3500), yarn.linear_density = 1e-6 (default 0.003) (each stiffening the forces 100× or more beyond the defaults': a heavier pull, a lighter yarn, a stiffer one)"),
        "{err}"
    );
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("scenes");
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|e| e == "toml") {
            let scene = yarnsim::scene::Scene::load(&path).unwrap();
            assert_eq!(
                scene.far_from_defaults(100.0),
                Vec::<String>::new(),
                "{}",
                path.display()
            );
        }
    }
}

/// What an output path names decides how it is written: a symbolic link to a file writes that
/// file (the link stays a link), a device is written in place (`/dev/null` stays a device; a
/// rename over it replaced it with a file, which `table --json /dev/null` did as root), a
/// directory is an error naming it; the probe a run makes of its paths first agrees.
#[test]
fn outputs_write_through_links_and_into_devices() {
    use std::os::unix::fs::FileTypeExt;
    let dir = scratch("targets");
    let real = dir.join("real.json");
    std::fs::write(&real, "old").unwrap();
    let link = dir.join("link.json");
    std::os::unix::fs::symlink(&real, &link).unwrap();
    yarnsim::output::probe_writable(&link).unwrap();
    yarnsim::output::write_bytes_atomic(&link, b"new").unwrap();
    assert!(link.is_symlink(), "the link was replaced by a file");
    assert_eq!(std::fs::read(&real).unwrap(), b"new");
    assert_no_temp_files(&dir);

    let null = Path::new("/dev/null");
    yarnsim::output::probe_writable(null).unwrap();
    yarnsim::output::write_bytes_atomic(null, b"into the void").unwrap();
    let t = std::fs::metadata(null).unwrap().file_type();
    assert!(t.is_char_device(), "/dev/null is no longer a device: {t:?}");
    assert_no_temp_files(Path::new("/dev"));

    let err = yarnsim::output::write_bytes_atomic(&dir, b"x")
        .unwrap_err()
        .to_string();
    assert!(err.starts_with(&format!("{}:", dir.display())), "{err}");
    assert_no_temp_files(&dir);

    // A link is judged by what it names: --stats through a link to the scene is the scene.
    let scene = dir.join("s.toml");
    std::fs::copy(tiny_scene(), &scene).unwrap();
    let to_scene = dir.join("stats.jsonl");
    std::os::unix::fs::symlink(&scene, &to_scene).unwrap();
    let err = check_failed(
        &bin()
            .arg("run")
            .arg(&scene)
            .args(["-q", "--frames", "1", "--stats"])
            .arg(&to_scene)
            .output()
            .unwrap(),
    );
    assert!(err.contains("that is the scene file"), "{err}");
    assert_eq!(
        std::fs::read(&scene).unwrap(),
        std::fs::read(tiny_scene()).unwrap()
    );

    // Stats into a pipe (standard output, captured): each record once, in order.
    let out = run_tiny(2, &[os("--stats"), os("/dev/stdout")]);
    check_ok(&out);
    let frames = record_frames(&text(&out.stdout));
    assert_eq!(frames, [1, 2]);
}

/// Stats into standard output redirected to a file (`--stats /proc/self/fd/1 >> log`) add to that
/// file as the shell's redirection does: the file keeps what it held and its identity (a rename
/// through the descriptor's link had replaced it with a new file, losing the records; run as root
/// with `/dev/stdout` the next write replaced that link itself with a file). A resumed run whose
/// stats go to a pipe does not read the pipe back (it waited for ever), and its checkpoint keeps
/// the descriptor's path as given (canonicalised, `/proc/self/fd/1` became `/proc/PID/fd/1` of
/// the first run, and the resume failed).
#[test]
fn stats_into_a_redirected_standard_output_add_to_its_file() {
    use std::os::unix::fs::MetadataExt;
    let dir = scratch("stdout-file");
    let log = dir.join("log.txt");
    std::fs::write(&log, "my log\n").unwrap();
    let ino = std::fs::metadata(&log).unwrap().ino();
    let file = std::fs::OpenOptions::new().append(true).open(&log).unwrap();
    let status = bin()
        .arg("run")
        .arg(tiny_scene())
        .args(["--set", "contact.model=none", "--quiet", "--frames", "2"])
        .args(["--stats", "/proc/self/fd/1"])
        .stdout(file)
        .status()
        .unwrap();
    assert!(status.success(), "exit {status:?}");
    assert_eq!(
        std::fs::metadata(&log).unwrap().ino(),
        ino,
        "log.txt was replaced"
    );
    let got = std::fs::read_to_string(&log).unwrap();
    let records = got
        .strip_prefix("my log\n")
        .unwrap_or_else(|| panic!("{got}"));
    assert_eq!(record_frames(records), [1, 2], "{got}");
    assert_no_temp_files(&dir);

    // A resumed run with its stats on a pipe: the records of its frames follow there.
    let run = dir.join("run");
    let first = run_tiny(
        1,
        &[
            os("--out"),
            run.as_os_str(),
            os("--checkpoint-every"),
            os("1"),
            os("--stats"),
            os("/proc/self/fd/1"),
        ],
    );
    check_ok(&first);
    let mut child = bin()
        .args(["run", "--resume"])
        .arg(&run)
        .args(["--quiet", "--frames", "2"])
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let start = std::time::Instant::now();
    while child.try_wait().unwrap().is_none() {
        if start.elapsed() > std::time::Duration::from_secs(60) {
            child.kill().unwrap();
            panic!("the resumed run did not end in 60 s (reading its own stdout?)");
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    let out = child.wait_with_output().unwrap();
    check_ok(&out);
    let frames = record_frames(&text(&out.stdout));
    assert_eq!(frames, [2]);
}

/// `render` and `table` never replace what they read: an image over its BCC state, its balls or
/// its scene, a table's JSON over one of its scenes, a `--from` checkpoint or another file of
/// that run (a frame, its manifest) are refused before anything is drawn or measured. And `table` reads every scene before measuring any, so a bad
/// last scene fails at once, not after the others' hours.
#[test]
fn render_and_table_never_write_over_their_inputs() {
    let dir = scratch("inputs");
    let scene = dir.join("s.toml");
    std::fs::copy(tiny_scene(), &scene).unwrap();
    let state = dir.join("frame_0000.bcc");
    let out = run_tiny(0, &[os("--out"), dir.join("run").as_os_str()]);
    check_ok(&out);
    std::fs::copy(dir.join("run/frame_0000.bcc"), &state).unwrap();
    let balls = dir.join("frame_0000_balls.csv");
    std::fs::write(&balls, "x,y,z,radius\n").unwrap();
    let before = |p: &Path| std::fs::read(p).unwrap();
    let (scene0, state0, balls0) = (before(&scene), before(&state), before(&balls));
    for target in [&state, &balls, &scene] {
        let err = check_failed(
            &bin()
                .arg("render")
                .arg(&state)
                .arg("--scene")
                .arg(&scene)
                .arg("--out")
                .arg(target)
                .output()
                .unwrap(),
        );
        assert!(err.contains("which the image is drawn from"), "{err}");
    }
    let ck = dir.join("ck");
    check_ok(&run_tiny(
        1,
        &[
            os("--out"),
            ck.as_os_str(),
            os("--checkpoint-every"),
            os("1"),
        ],
    ));
    let ck0 = before(&ck.join("checkpoint.bin"));
    for target in [scene.clone(), ck.join("checkpoint.bin")] {
        let err = check_failed(
            &bin()
                .arg("table")
                .arg(&scene)
                .arg("--from")
                .arg(&ck)
                .arg("--json")
                .arg(&target)
                .args(["-q", "--steps", "1"])
                .output()
                .unwrap(),
        );
        assert!(err.contains("which the table reads"), "{err}");
    }
    // Nor a file of the --from run (a frame, the manifest: they were replaced).
    let (frame1, manifest) = (
        before(&ck.join("frame_0001.bcc")),
        before(&ck.join("manifest.json")),
    );
    for name in ["frame_0001.bcc", "manifest.json"] {
        let err = check_failed(
            &bin()
                .arg("table")
                .arg("--from")
                .arg(&ck)
                .arg("--json")
                .arg(ck.join(name))
                .args(["-q", "--steps", "1"])
                .output()
                .unwrap(),
        );
        assert!(err.contains("that is a file of the run in"), "{err}");
    }
    assert_eq!(
        (
            before(&ck.join("frame_0001.bcc")),
            before(&ck.join("manifest.json"))
        ),
        (frame1, manifest)
    );
    assert_eq!(
        (
            before(&scene),
            before(&state),
            before(&balls),
            before(&ck.join("checkpoint.bin"))
        ),
        (scene0, state0, balls0, ck0)
    );
    // A missing second scene: refused before the first is relaxed and measured.
    let err = check_failed(
        &bin()
            .arg("table")
            .arg(&scene)
            .arg(dir.join("missing.toml"))
            .args(["-q", "--steps", "1"])
            .output()
            .unwrap(),
    );
    assert!(err.contains("missing.toml"), "{err}");
    assert!(!err.contains("measuring"), "{err}");
}

/// `render --out` into a directory that does not exist, or onto a directory, fails before the
/// drawing, naming the path (it failed only after drawing the image).
#[test]
fn render_checks_its_output_path_first() {
    let dir = scratch("render-out");
    let out = run_tiny(0, &[os("--out"), dir.join("run").as_os_str()]);
    check_ok(&out);
    let state = dir.join("run/frame_0000.bcc");
    for (target, words) in [
        (dir.join("missing/x.png"), "cannot write there"),
        (dir.clone(), "is a directory"),
    ] {
        let err = check_failed(
            &bin()
                .arg("render")
                .arg(&state)
                .arg("--out")
                .arg(&target)
                .env("YARNSIM_GPU_BACKEND", "none")
                .output()
                .unwrap(),
        );
        assert!(err.contains(words), "{err}");
        assert!(err.contains(&target.display().to_string()), "{err}");
    }
}

/// A table whose second scene fails while it is measured keeps the first's row: printed, and in
/// the JSON (written after every scene, `"complete": false` until the last), where everything
/// measured was lost before.
#[test]
fn a_table_that_fails_midway_keeps_the_rows_it_measured() {
    let dir = scratch("table-midway");
    let good = dir.join("a.toml");
    std::fs::copy(tiny_scene(), &good).unwrap();
    // In range, so read and built, but no step of the default length takes it.
    let stiff = dir.join("b.toml");
    let tiny = std::fs::read_to_string(tiny_scene()).unwrap();
    std::fs::write(&stiff, format!("[contact]\nstiffness = 1e12\n{tiny}")).unwrap();
    let json = dir.join("t.json");
    let out = bin()
        .arg("table")
        .args([&good, &stiff])
        .args([
            "-q",
            "--steps",
            "1",
            "--warmup",
            "0",
            "--set",
            "relax.time=0",
            "--json",
        ])
        .arg(&json)
        .output()
        .unwrap();
    let err = check_failed(&out);
    assert!(err.contains("measuring") && err.contains("b.toml"), "{err}");
    let rows: Vec<String> = text_lines(&out.stdout, "| a |");
    assert_eq!(rows.len(), 1, "{}", text(&out.stdout));
    let doc: serde_json::Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    assert_eq!(doc["complete"], false);
    assert_eq!(doc["scenes"].as_array().unwrap().len(), 1);
    assert_eq!(doc["scenes"][0]["scene"], "a", "{doc:#}");
}

/// The lines of `out` that start with `prefix`.
fn text_lines(out: &[u8], prefix: &str) -> Vec<String> {
    text(out)
        .lines()
        .filter(|l| l.starts_with(prefix))
        .map(str::to_string)
        .collect()
}

/// A frame whose yarn the step stretched far past what its length projection reached (a time
/// step 180 times the default's: damping and contact after the projection change velocities that
/// a long step turns into stretch) fails the run, unwritten, saying to shorten the step: frame 1
/// of this swatch was written with its yarn stretched by 675% and the run went on. Stretched
/// less, but still visibly (the tiny swatch at 16 times the default step, 3.8%), the run warns
/// once and goes on.
#[test]
fn a_frame_whose_yarn_the_step_stretched_is_refused() {
    let dir = scratch("stretched");
    let scene = dir.join("s.toml");
    std::fs::write(
        &scene,
        "[relax]\ntime = 0\n[[cloth]]\nsource.generator = { pattern = \"stockinette\", wales = 4, courses = 4 }\n",
    )
    .unwrap();
    let out = bin()
        .arg("run")
        .arg(&scene)
        .args([
            "--frames",
            "2",
            "-q",
            "--set",
            "simulation.dt=0.01",
            "--out",
        ])
        .arg(dir.join("out"))
        .output()
        .unwrap();
    let err = check_failed(&out);
    assert!(
        err.contains("frame 1 of ")
            && err.contains("the yarn is stretched by")
            && err.contains("try a smaller simulation.dt"),
        "{err}"
    );
    assert!(dir.join("out/frame_0000.bcc").exists());
    assert!(!dir.join("out/frame_0001.bcc").exists());
    let out = run_tiny(1, &[os("--set"), os("simulation.dt=0.001")]);
    check_ok(&out);
    let err = text(&out.stderr);
    assert!(
        err.contains("warning: frame 1: the yarn is stretched by")
            && err.contains("a smaller simulation.dt"),
        "{err}"
    );
}

// ---------------------------------------------------------------------------------------------
// What a run shows on a terminal.

/// The width of the terminal of the tests below: narrower than a stats record, which wraps.
#[cfg(unix)]
const TERM_COLS: u16 = 300;

/// Whether `text` holds a progress bar (its characters, which only a bar draws).
#[cfg(unix)]
fn has_bar(text: &str) -> bool {
    text.contains(['░', '█'])
}

/// `yarnsim run` of the tiny swatch with `args`, its standard error a terminal (standard output
/// to `stdout`): its status and the lines of that terminal's screen ([`pty::screen`]), with the
/// raw bytes' text.
#[cfg(unix)]
fn run_on_a_terminal(
    args: &[&str],
    stdout: std::process::Stdio,
) -> (std::process::ExitStatus, Vec<String>, String) {
    let (master, slave) = pty::open(TERM_COLS, 50);
    let reading = pty::drain(master);
    let mut cmd = bin();
    cmd.arg("run")
        .arg(tiny_scene())
        .args(args)
        .stdin(std::process::Stdio::null())
        .stdout(stdout)
        .stderr(slave);
    let status = cmd.status().unwrap();
    // (The terminal reads to its end once no one holds its other side.)
    drop(cmd);
    let raw = reading.join().unwrap();
    (status, pty::screen(&raw, TERM_COLS as usize), text(&raw))
}

#[test]
#[cfg(unix)]
fn the_screen_model_applies_returns_erasures_and_wraps() {
    let bytes = b"bar 1\r\x1b[2Kbar 2\r\x1b[2K{\"a\":1}\nbar 3\x1b[1A\r\x1b[2Kx\x1b[1B\r\x1b[K";
    assert_eq!(pty::screen(bytes, 80), ["x", ""]);
    assert_eq!(pty::screen(b"ab\rc\r\n", 80), ["cb", ""]);
    // A line wider than the terminal wraps, and is one line; erasing its last row loses it.
    assert_eq!(pty::screen(b"abcdefg\r\n", 3), ["abcdefg", ""]);
    assert_eq!(pty::screen(b"abcdefg\x1b[2K", 3), ["abcdef"]);
}

/// `--stats /dev/stderr` on the terminal that shows the progress bar: each record is a line of its
/// own, whole, and the bar is gone at the end; with `--quiet` the records are all there is.
/// Before, a record was written after the bar as it stood, so its line began with the bar's text,
/// and the bar's next redraw erased the last row of the wrapped record.
#[test]
#[cfg(unix)]
fn stats_records_on_the_progress_bars_terminal_are_whole_lines() {
    // (Frames of 1,620 steps, a few tenths of a second each: the bar is drawn during each.)
    let args = [
        "--frames",
        "3",
        "--set",
        "simulation.fps=10",
        "--stats",
        "/dev/stderr",
    ];
    for quiet in [false, true] {
        let mut args = args.to_vec();
        if quiet {
            args.push("--quiet");
        }
        let (status, screen, raw) = run_on_a_terminal(&args, std::process::Stdio::null());
        assert!(status.success(), "{status:?}: {screen:#?}");
        let records: Vec<&String> = screen.iter().filter(|l| l.contains("\"frame\"")).collect();
        let frames: Vec<u64> = records
            .iter()
            .map(|l| {
                serde_json::from_str::<serde_json::Value>(l)
                    .unwrap_or_else(|e| panic!("not a whole record ({e}): {l}"))["frame"]
                    .as_u64()
                    .unwrap()
            })
            .collect();
        assert_eq!(frames, [1, 2, 3], "{screen:#?}");
        assert!(
            !screen.iter().any(|l| has_bar(l)),
            "a bar stayed on the screen: {screen:#?}"
        );
        if quiet {
            assert!(!has_bar(&raw), "--quiet drew a bar: {raw:?}");
            let rest: Vec<&String> = screen
                .iter()
                .filter(|l| !l.is_empty() && !l.contains("\"frame\""))
                .collect();
            assert!(rest.is_empty(), "{rest:#?}");
        } else {
            // (The bars were drawn: the test saw the terminal they are drawn on.)
            assert!(
                raw.contains("relaxing") && raw.contains("/4860 steps"),
                "{raw:?}"
            );
        }
    }
}

/// An error that ends a run while its bar is on the terminal is on a line of its own: it was
/// printed after the bar, on the bar's line (`███ frame 1/2 … (eta 1s)  error: frame 1: …`).
#[test]
#[cfg(unix)]
fn an_error_during_the_frames_is_not_printed_on_the_bar() {
    let full = dev_full();
    let args = [
        "--frames",
        "2",
        "--set",
        "relax.time=0",
        "--set",
        "simulation.fps=10",
    ];
    let (status, screen, raw) = run_on_a_terminal(&args, full.into());
    assert!(!status.success(), "{screen:#?}");
    assert!(raw.contains("/3240 steps"), "no bar was drawn: {raw:?}");
    let error = screen
        .iter()
        .find(|l| l.contains("error: frame 1: writing its line to standard output"))
        .unwrap_or_else(|| panic!("{screen:#?}"));
    assert!(error.starts_with("error: "), "{error}");
    assert!(!screen.iter().any(|l| has_bar(l)), "{screen:#?}");
}
