//! Ctrl-C, SIGTERM and SIGHUP (`yarnsim::interrupt`): a run with `--out` stops where it can be saved (the
//! end of its frame; in the relaxation before t = 0, its next resume point), writes a checkpoint
//! there and ends by the signal, and `--resume` goes on to the frames of an uninterrupted run, bit
//! for bit; a second signal ends it at once, leaving no temporary file; a table stopped by a signal
//! prints the rows it finished. (Where a stopped relaxation saves, exactly: tests/relax.rs.)
#![cfg(unix)]

use std::io::{BufRead, BufReader, Read};
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Output, Stdio};
use std::time::{Duration, Instant};

use yarnsim::checkpoint::{self, Checkpoint};

#[path = "support/pty.rs"]
mod pty;

fn bin() -> Command {
    Command::new(env!("CARGO_BIN_EXE_yarnsim"))
}

fn scene(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(format!("scenes/{name}.toml"))
}

/// A fresh directory for one test.
fn scratch(name: &str) -> PathBuf {
    let d = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("interrupt-{name}"));
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

fn send(child: &Child, sig: i32) {
    // SAFETY: kill(2) with the pid of a child this test started and has not yet waited for.
    let rc = unsafe { libc::kill(child.id() as libc::pid_t, sig) };
    assert_eq!(rc, 0, "kill {sig}");
}

/// Reads `from` line by line until a line satisfies `want` (panics at its end, or after 120 s);
/// returns the lines read.
fn read_until(from: &mut impl BufRead, want: impl Fn(&str) -> bool) -> Vec<String> {
    let t0 = Instant::now();
    let mut lines = Vec::new();
    loop {
        let mut line = String::new();
        let n = from.read_line(&mut line).unwrap();
        assert!(n > 0, "ended before the line looked for: {lines:#?}");
        assert!(t0.elapsed() < Duration::from_secs(120), "{lines:#?}");
        let done = want(&line);
        lines.push(line);
        if done {
            return lines;
        }
    }
}

/// Waits for `child`, with what is left of its streams (those not taken already).
fn finish(mut child: Child) -> (ExitStatus, String, String) {
    let mut out = String::new();
    let mut err = String::new();
    if let Some(mut s) = child.stdout.take() {
        s.read_to_string(&mut out).unwrap();
    }
    if let Some(mut s) = child.stderr.take() {
        s.read_to_string(&mut err).unwrap();
    }
    (child.wait().unwrap(), out, err)
}

/// `yarnsim run` of the tiny swatch into `out` with `args`, sent SIGINT once its standard output
/// has a line starting with `line`: its status and standard error.
fn ctrl_c_after(out: &Path, args: &[&str], line: &str) -> (ExitStatus, String) {
    let mut child = bin()
        .arg("run")
        .arg(scene("tiny"))
        .arg("--out")
        .arg(out)
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    read_until(&mut stdout, |l| l.starts_with(line));
    send(&child, libc::SIGINT);
    let (status, _, err) = finish(child);
    (status, err)
}

fn frame(dir: &Path, k: u32) -> Vec<u8> {
    std::fs::read(dir.join(format!("frame_{k:04}.bcc"))).unwrap()
}

/// `yarnsim run --resume DIR --frames FRAMES -q`, which must succeed.
fn resume_to(dir: &Path, frames: u32) {
    let out = bin()
        .args(["run", "--resume"])
        .arg(dir)
        .args(["--frames", &frames.to_string(), "-q"])
        .output()
        .unwrap();
    check_ok(&out);
}

/// The run that `part` stood for, uninterrupted into `full` to frame `last`: its frames must be
/// `part`'s, bit for bit.
fn same_as_uninterrupted(part: &Path, full: &Path, scene_name: &str, last: u32) {
    let out = bin()
        .arg("run")
        .arg(scene(scene_name))
        .arg("--out")
        .arg(full)
        .args(["--frames", &last.to_string(), "-q"])
        .output()
        .unwrap();
    check_ok(&out);
    for j in 0..=last {
        assert!(frame(full, j) == frame(part, j), "frame {j} differs");
    }
}

fn manifest(dir: &Path) -> serde_json::Value {
    serde_json::from_slice(&std::fs::read(dir.join("manifest.json")).unwrap()).unwrap()
}

/// The temporary files of atomic writes left in `dir`.
fn temps(dir: &Path) -> Vec<PathBuf> {
    std::fs::read_dir(dir)
        .unwrap()
        .filter_map(|e| e.ok())
        .filter(|e| yarnsim::output::temp_target(&e.file_name().to_string_lossy()).is_some())
        .map(|e| e.path())
        .collect()
}

/// The number after `prefix` in `text`.
fn number_after(text: &str, prefix: &str) -> u64 {
    let at = text
        .find(prefix)
        .unwrap_or_else(|| panic!("no {prefix:?} in:\n{text}"));
    text[at + prefix.len()..]
        .chars()
        .take_while(char::is_ascii_digit)
        .collect::<String>()
        .parse()
        .unwrap()
}

/// Ctrl-C during a run's frames (with `--out`, no `--checkpoint-every`): the run finishes the frame
/// it is in, writes its files and a checkpoint of it, records the stop in the manifest, says how
/// to go on and ends by SIGINT (so a shell loop over runs stops too); resumed, it writes the
/// frames an uninterrupted run writes, bit for bit. Before, the signal ended the run at once and,
/// with no checkpoint, its frames could not be continued.
#[test]
fn a_run_stopped_by_ctrl_c_saves_its_frame_and_resumes_bitwise() {
    let dir = scratch("frames");
    let (full, part) = (dir.join("full"), dir.join("part"));
    let (status, err) = ctrl_c_after(&part, &["--frames", "500"], "frame    2/500");
    assert_eq!(status.signal(), Some(libc::SIGINT), "{status:?}: {err}");
    assert!(
        err.contains("SIGINT: the run stops at the end of frame"),
        "{err}"
    );
    let k = number_after(&err, "stopped by SIGINT after frame ") as u32;
    assert!(
        err.contains(&format!("`yarnsim run --resume {}`", part.display())),
        "{err}"
    );
    assert!(!err.contains("error"), "{err}");
    // Frames 0..=k and a checkpoint of frame k, nothing after it, no temporary file.
    let ck = Checkpoint::read(&part.join(checkpoint::FILE_NAME)).unwrap();
    assert_eq!(ck.frames(), k);
    assert!(part.join(format!("frame_{k:04}.bcc")).exists());
    assert!(!part.join(format!("frame_{:04}.bcc", k + 1)).exists());
    assert!(temps(&part).is_empty(), "{:?}", temps(&part));
    let m = manifest(&part);
    assert_eq!(m["stopped_by"], "SIGINT", "{m:#}");
    assert_eq!(m["frames_written"], k + 1);
    assert_eq!(m["finished"], false);
    // Resumed (the saved run asked for no checkpoints: the resumed one writes none on a
    // schedule) and run uninterrupted: the same frames.
    resume_to(&part, k + 2);
    same_as_uninterrupted(&part, &full, "tiny", k + 2);
    assert_eq!(
        Checkpoint::read(&part.join(checkpoint::FILE_NAME))
            .unwrap()
            .frames(),
        k,
        "a resumed run without --checkpoint-every wrote a checkpoint"
    );
    let m = manifest(&part);
    assert_eq!(m["finished"], true);
    assert!(m.get("stopped_by").is_none(), "{m:#}");
}

/// A run resumed to end before a contact matrix it asked for (`--frames` below a `--contact-matrix`
/// frame) leaves that matrix out, saying so, and writes the others; it was refused, naming a
/// `--contact-matrix` the resume was not given.
#[test]
fn a_resume_ending_before_a_contact_matrix_leaves_it_out() {
    let part = scratch("matrix-past-end").join("part");
    let args = [
        "--frames",
        "500",
        "--contact-matrix",
        "0",
        "--contact-matrix",
        "400:64",
    ];
    let (status, err) = ctrl_c_after(&part, &args, "frame    1/500");
    assert_eq!(status.signal(), Some(libc::SIGINT), "{status:?}: {err}");
    let k = number_after(&err, "stopped by SIGINT after frame ") as u32;
    let last = (k + 1).to_string();
    let out = bin()
        .args(["run", "--resume"])
        .arg(&part)
        .args(["--frames", &last])
        .output()
        .unwrap();
    check_ok(&out);
    let err = text(&out.stderr);
    assert!(
        err.contains(&format!(
            "--frames {last}: the contact matrices the run asked for at frame 400 lie past its end"
        )),
        "{err}"
    );
    assert!(part.join("contact_matrix_0000.png").exists());
    assert!(!part.join("contact_matrix_0400.png").exists());
    assert!(part.join(format!("frame_{last:0>4}.bcc")).exists());
}

/// SIGTERM during the relaxation before t = 0: the relaxation goes on to its next resume point,
/// saves there and the run ends by SIGTERM; resumed, the relaxation and the frame after it are
/// the uninterrupted run's, bit for bit.
#[test]
fn a_run_stopped_while_relaxing_resumes_the_relaxation_bitwise() {
    let dir = scratch("relaxing");
    let (full, part) = (dir.join("full"), dir.join("part"));
    // The signal comes at the relaxation's first progress line (its 867 steps take a second or
    // so); a machine that ran the whole relaxation before it arrived tries again.
    let mut stopped = None;
    for attempt in 0..5 {
        let _ = std::fs::remove_dir_all(&part);
        let mut child = bin()
            .arg("run")
            .arg(scene("swatch"))
            .arg("--out")
            .arg(&part)
            .args(["--frames", "1"])
            .env("YARNSIM_PROGRESS_SECS", "0.01")
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let mut stderr = BufReader::new(child.stderr.take().unwrap());
        let mut seen = read_until(&mut stderr, |l| l.starts_with("relaxing "));
        send(&child, libc::SIGTERM);
        let mut rest = String::new();
        stderr.read_to_string(&mut rest).unwrap();
        let (status, _, _) = finish(child);
        seen.push(rest);
        let err = seen.concat();
        assert!(
            status.signal() == Some(libc::SIGTERM) || status.success(),
            "{status:?}: {err}"
        );
        if !err.contains("stopped by SIGTERM in the relaxation") {
            eprintln!("attempt {attempt}: the relaxation had ended before the signal; again");
            continue;
        }
        stopped = Some(number_after(
            &err,
            "stopped by SIGTERM in the relaxation before t = 0, after ",
        ));
        break;
    }
    let steps = stopped.expect("no signal landed during the relaxation in 5 attempts");
    let ck = Checkpoint::read(&part.join(checkpoint::FILE_NAME)).unwrap();
    assert_eq!(ck.meta.options["relaxing"]["steps"], steps);
    assert!(!part.join("frame_0000.bcc").exists());
    assert!(temps(&part).is_empty(), "{:?}", temps(&part));
    let stopped_manifest = manifest(&part);
    assert_eq!(stopped_manifest["stopped_by"], "SIGTERM");
    let out = bin().args(["run", "--resume"]).arg(&part).output().unwrap();
    check_ok(&out);
    // The manifest stays the run's, the resumption listed.
    let m = manifest(&part);
    assert_eq!(m["command_line"], stopped_manifest["command_line"], "{m:#}");
    assert_eq!(m["resumed"][0]["from_relaxation_step"], steps, "{m:#}");
    assert!(m.get("stopped_by").is_none(), "{m:#}");
    assert!(
        text(&out.stderr).contains(&format!(
            "resuming the relaxation before t = 0 from its checkpoint after {steps} steps"
        )),
        "{}",
        text(&out.stderr)
    );
    same_as_uninterrupted(&part, &full, "swatch", 1);
}

/// A run of the swatch into `dir` in frames of 3,240 steps (some seconds each, so that a second
/// signal comes within the first frame), and its stderr, read into frame 1 (its progress lines),
/// where a signal stops the run at the frame's end.
fn within_a_long_frame(dir: &Path) -> (std::process::Child, BufReader<std::process::ChildStderr>) {
    let mut child = bin()
        .arg("run")
        .arg(scene("swatch"))
        .arg("--out")
        .arg(dir)
        .args(["--frames", "100", "--set", "relax.time=0"])
        .args(["--set", "simulation.fps=10"])
        .env("YARNSIM_PROGRESS_SECS", "0.01")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stderr = BufReader::new(child.stderr.take().unwrap());
    read_until(&mut stderr, |l| l.starts_with("frame 1/100: step"));
    (child, stderr)
}

/// A second Ctrl-C does not wait for the frame's end: the run ends at once by SIGINT, with no
/// checkpoint (none was due) and no temporary file, its manifest counting the frames on disk.
#[test]
fn a_second_ctrl_c_stops_at_once() {
    let dir = scratch("twice");
    let (child, mut stderr) = within_a_long_frame(&dir);
    send(&child, libc::SIGINT);
    // The second once the first was taken (a signal sent while the first is pending merges
    // with it).
    read_until(&mut stderr, |l| l.starts_with("SIGINT: the run stops"));
    send(&child, libc::SIGINT);
    let mut err = String::new();
    stderr.read_to_string(&mut err).unwrap();
    let (status, _, _) = finish(child);
    assert_eq!(status.signal(), Some(libc::SIGINT), "{status:?}: {err}");
    assert!(!err.contains("stopped by"), "{err}");
    assert!(!dir.join(checkpoint::FILE_NAME).exists());
    assert!(temps(&dir).is_empty(), "{:?}", temps(&dir));
    let m = manifest(&dir);
    let written = m["frames_written"].as_u64().unwrap() as u32;
    assert!(written >= 1, "{m:#}");
    assert_eq!(m["finished"], false);
    for j in 0..written {
        assert!(dir.join(format!("frame_{j:04}.bcc")).exists(), "frame {j}");
    }
    assert!(!dir.join(format!("frame_{written:04}.bcc")).exists());
}

/// A table stopped by a signal prints the rows it finished (its JSON has them already) and ends
/// by the signal; before, it printed nothing.
#[test]
fn a_table_stopped_by_a_signal_prints_the_rows_it_finished() {
    let dir = scratch("table");
    let (a, b) = (dir.join("a.toml"), dir.join("b.toml"));
    std::fs::copy(scene("tiny"), &a).unwrap();
    std::fs::copy(scene("tiny"), &b).unwrap();
    let json = dir.join("t.json");
    // The second scene measures for as long as the first took: the signal comes once the first
    // scene's row is in the JSON, long before the second's ends.
    let child = bin()
        .arg("table")
        .args([&a, &b])
        .args(["-q", "--steps", "3000", "--warmup", "0", "--json"])
        .arg(&json)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let t0 = Instant::now();
    while !json.exists() {
        assert!(t0.elapsed() < Duration::from_secs(300), "no JSON");
        std::thread::sleep(Duration::from_millis(5));
    }
    send(&child, libc::SIGINT);
    let (status, out, err) = finish(child);
    assert_eq!(status.signal(), Some(libc::SIGINT), "{status:?}: {err}");
    let rows: Vec<&str> = out.lines().filter(|l| l.starts_with("| a |")).collect();
    assert_eq!(rows.len(), 1, "{out}");
    assert!(!out.contains("| b |"), "{out}");
    assert!(
        err.contains("stopped by a signal: the rows above are the scenes the table finished"),
        "{err}"
    );
    let doc: serde_json::Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    assert_eq!(doc["complete"], false);
    assert_eq!(doc["scenes"].as_array().unwrap().len(), 1);
}

/// The same on the GPU step, which runs each frame's pass-through check while it runs the next
/// frame's first steps: a frame that ran ahead when the signal came has its next frame run too,
/// and the run stops at that one's end (its state is then the host's), saying so; the checkpoint
/// holds the frame it stopped after, and a resumed run goes on from it.
#[test]
fn a_gpu_run_stopped_by_ctrl_c_saves_where_no_steps_ran_ahead() {
    if yarnsim::gpu::testing::gpu_or_skip(
        "a_gpu_run_stopped_by_ctrl_c_saves_where_no_steps_ran_ahead",
    )
    .is_none()
    {
        return;
    }
    let dir = scratch("gpu");
    // (Frames of 54 steps: a moment each on lavapipe.)
    let args = [
        "--frames",
        "100",
        "--backend",
        "gpu",
        "--set",
        "simulation.fps=300",
    ];
    let (status, err) = ctrl_c_after(&dir, &args, "frame    1/100");
    assert_eq!(status.signal(), Some(libc::SIGINT), "{status:?}: {err}");
    let asked = number_after(&err, "SIGINT: the run stops at the end of frame ") as u32;
    let k = number_after(&err, "stopped by SIGINT after frame ") as u32;
    // (The notice reads the frame the run is in as it prints: the frame the GPU began ahead, if
    // the run got there first.)
    if err.contains("the GPU had begun frame") {
        assert!(
            err.contains(&format!(
                "the GPU had begun frame {k} while frame {} ended",
                k - 1
            )),
            "{err}"
        );
        assert!(asked == k - 1 || asked == k, "{err}");
    } else {
        assert_eq!(k, asked, "{err}");
    }
    assert_eq!(
        Checkpoint::read(&dir.join(checkpoint::FILE_NAME))
            .unwrap()
            .frames(),
        k
    );
    assert!(!dir.join(format!("frame_{:04}.bcc", k + 1)).exists());
    resume_to(&dir, k + 1);
    assert!(dir.join(format!("frame_{:04}.bcc", k + 1)).exists());
}

/// What a process ending by a signal does with the writes in progress (`output::abandon_writes`,
/// called by `interrupt::end_by_signal`): their temporary files are removed and a write in
/// progress fails, the file it was replacing keeping what it held; while the hold lives no write
/// gets by it (a temporary file's guard does not run when a signal ends the process, so without
/// this every Ctrl-C during a write left a `.NAME.PID.N.tmp` behind). In this file, whose other
/// tests write nothing in-process: the hold is the process's.
#[test]
fn abandoned_writes_leave_no_temporary_file_and_the_old_contents() {
    let dir = scratch("abandon");
    let path = dir.join("frame.bcc");
    std::fs::write(&path, b"old").unwrap();
    let (started, wait_started) = std::sync::mpsc::channel();
    let (go_on, wait_go_on) = std::sync::mpsc::channel::<()>();
    let writer = {
        let path = path.clone();
        std::thread::spawn(move || {
            yarnsim::output::write_atomic(&path, |w| {
                w.write_all(b"new")?;
                started.send(()).unwrap();
                wait_go_on.recv().unwrap();
                Ok(())
            })
        })
    };
    wait_started.recv().unwrap();
    let temps = || -> Vec<PathBuf> {
        std::fs::read_dir(&dir)
            .unwrap()
            .filter_map(|e| e.ok())
            .filter(|e| {
                yarnsim::output::temp_target(&e.file_name().to_string_lossy()) == Some("frame.bcc")
            })
            .map(|e| e.path())
            .collect()
    };
    assert_eq!(
        temps().len(),
        1,
        "the write in progress has its temporary file"
    );
    let held = yarnsim::output::abandon_writes();
    assert!(temps().is_empty(), "{:?}", temps());
    go_on.send(()).unwrap();
    // The write does not get by the hold (the process would have ended by then).
    std::thread::sleep(std::time::Duration::from_millis(100));
    assert!(!writer.is_finished());
    assert_eq!(std::fs::read(&path).unwrap(), b"old");
    drop(held);
    let err = writer.join().unwrap().unwrap_err();
    assert!(
        matches!(err, yarnsim::output::OutputError::Rename { .. }),
        "{err}"
    );
    assert_eq!(std::fs::read(&path).unwrap(), b"old");
    assert!(temps().is_empty(), "{:?}", temps());
}

/// A signal the parent set to be ignored (a background job of a script, `trap '' INT`) stays
/// ignored: the run goes on to its end (the signals' thread must not take it over).
#[test]
fn an_ignored_signal_stays_ignored() {
    use std::os::unix::process::CommandExt;
    let dir = scratch("ignored");
    let mut cmd = bin();
    cmd.arg("run")
        .arg(scene("tiny"))
        .arg("--out")
        .arg(&dir)
        .args(["--frames", "20", "--set", "simulation.fps=300"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    // SAFETY: signal(2) is async-signal-safe, as pre_exec asks.
    unsafe {
        cmd.pre_exec(|| {
            libc::signal(libc::SIGINT, libc::SIG_IGN);
            Ok(())
        });
    }
    let mut child = cmd.spawn().unwrap();
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    read_until(&mut stdout, |l| l.starts_with("frame    1/20"));
    send(&child, libc::SIGINT);
    let (status, _, err) = finish(child);
    assert!(status.success(), "{status:?}: {err}");
    assert!(!err.contains("SIGINT"), "{err}");
    assert_eq!(manifest(&dir)["finished"], true);
}

/// A run whose standard output nobody reads (`yarnsim run … | less`, not scrolled) blocks on its
/// next line; a signal still ends it: without `--out` the first, with `--out` (whose frame end
/// never comes) the second, within a few seconds. (While the signals' thread printed the notice
/// itself, it waited for the progress bar's lock, which the blocked line holds, and no signal
/// ended the run.)
#[test]
fn a_run_blocked_on_its_output_still_ends_on_a_signal() {
    use std::os::unix::io::AsRawFd;
    for with_out in [false, true] {
        let dir = scratch(&format!("blocked-{with_out}"));
        let mut cmd = bin();
        cmd.arg("run")
            .arg(scene("tiny"))
            .args(["--frames", "100000", "--set", "simulation.fps=1620"])
            .args(["--set", "relax.time=0"])
            .stdout(Stdio::piped())
            .stderr(Stdio::null());
        if with_out {
            cmd.arg("--out").arg(dir.join("out"));
        }
        let mut child = cmd.spawn().unwrap();
        // A one-page pipe, never read: full after a few dozen frame lines.
        let fd = child.stdout.as_ref().unwrap().as_raw_fd();
        // SAFETY: F_SETPIPE_SZ on the pipe this test holds open.
        unsafe { libc::fcntl(fd, libc::F_SETPIPE_SZ, 4096) };
        std::thread::sleep(Duration::from_secs(2));
        assert!(
            child.try_wait().unwrap().is_none(),
            "--out {with_out}: ended"
        );
        send(&child, libc::SIGINT);
        if with_out {
            std::thread::sleep(Duration::from_millis(300));
            send(&child, libc::SIGINT);
        }
        let t0 = Instant::now();
        let status = loop {
            if let Some(status) = child.try_wait().unwrap() {
                break status;
            }
            if t0.elapsed() > Duration::from_secs(20) {
                let _ = child.kill();
                panic!("--out {with_out}: still running 20 s after the signal");
            }
            std::thread::sleep(Duration::from_millis(20));
        };
        assert_eq!(
            status.signal(),
            Some(libc::SIGINT),
            "--out {with_out}: {status:?}"
        );
    }
}

/// `yarnsim run` of the tiny swatch into `out` for 500 frames, on a terminal of its own (its
/// controlling terminal: standard input and error, and standard output with `stdout_too`, else a
/// pipe) that goes away (hangs up) once frame 1 is done: its status once it ended.
fn run_until_its_terminal_hangs_up(out: &Path, stdout_too: bool) -> ExitStatus {
    use std::os::unix::process::CommandExt;
    let (mut master, slave) = pty::open(200, 50);
    let mut cmd = bin();
    cmd.arg("run")
        .arg(scene("tiny"))
        .arg("--out")
        .arg(out)
        .args(["--frames", "500"])
        .stdin(slave.try_clone().unwrap())
        .stderr(slave.try_clone().unwrap());
    if stdout_too {
        cmd.stdout(slave);
    } else {
        cmd.stdout(Stdio::piped());
        drop(slave);
    }
    // SAFETY: setsid(2) and ioctl(2) are async-signal-safe, as pre_exec asks; the terminal (its
    // standard input, set up before this runs) becomes the new session's controlling terminal,
    // whose hang-up sends it SIGHUP.
    unsafe {
        cmd.pre_exec(|| {
            if libc::setsid() < 0 || libc::ioctl(0, libc::TIOCSCTTY, 0) < 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    let mut child = cmd.spawn().unwrap();
    drop(cmd);
    let t0 = Instant::now();
    if stdout_too {
        let mut seen = Vec::new();
        let mut buf = [0u8; 4096];
        while !text(&seen).contains("frame    1/500") {
            assert!(t0.elapsed() < Duration::from_secs(120), "{}", text(&seen));
            match master.read(&mut buf) {
                Ok(n) if n > 0 => seen.extend_from_slice(&buf[..n]),
                r => panic!("the terminal ended ({r:?}): {}", text(&seen)),
            }
        }
        drop(master);
    } else {
        let terminal = pty::Reader::new(master);
        let mut stdout = BufReader::new(child.stdout.take().unwrap());
        read_until(&mut stdout, |l| l.starts_with("frame    1/500"));
        terminal.close();
        // (Read to its end on a thread of its own: the run goes on writing its lines there.)
        std::thread::spawn(move || {
            let mut rest = String::new();
            let _ = stdout.read_to_string(&mut rest);
        });
    }
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            return status;
        }
        if t0.elapsed() > Duration::from_secs(120) {
            let _ = child.kill();
            panic!("still running 120 s after the hang-up");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// A run whose terminal goes away (an ssh session dropped, a terminal window closed: its
/// controlling terminal hangs up, and the run gets SIGHUP, its prints to the terminal failing from
/// then on) stops as Ctrl-C stops it: at the end of its frame, with a checkpoint, ending by SIGHUP,
/// and a resume goes on bitwise. Before, SIGHUP's default action ended it at once with no
/// checkpoint (every frame of a run without `--checkpoint-every` lost for resuming), and once it
/// was handled, the stop's message, printed to the terminal that was gone, panicked (status 101).
#[test]
fn a_run_whose_terminal_hangs_up_saves_its_frame_and_resumes() {
    let dir = scratch("hangup");
    let (full, part) = (dir.join("full"), dir.join("part"));
    let status = run_until_its_terminal_hangs_up(&part, false);
    assert_eq!(status.signal(), Some(libc::SIGHUP), "{status:?}");
    // Frames 0..=k and a checkpoint of frame k, nothing after it, no temporary file.
    let ck = Checkpoint::read(&part.join(checkpoint::FILE_NAME)).unwrap();
    let k = ck.frames();
    assert!(k >= 1, "{k}");
    assert!(part.join(format!("frame_{k:04}.bcc")).exists());
    assert!(!part.join(format!("frame_{:04}.bcc", k + 1)).exists());
    assert!(temps(&part).is_empty(), "{:?}", temps(&part));
    let m = manifest(&part);
    assert_eq!(m["stopped_by"], "SIGHUP", "{m:#}");
    assert_eq!(m["frames_written"], k + 1);
    resume_to(&part, k + 1);
    same_as_uninterrupted(&part, &full, "tiny", k + 1);
}

/// The same with the run's standard output on that terminal too: its frame's line fails to be
/// written, perhaps before the signal is taken. Either way the run is saved at the frame it wrote
/// last and can go on: it ends by SIGHUP, or by the failed line's error (status 1) with a
/// checkpoint of the frame, never a panic. Before (SIGHUP handled), the failed line ended the run
/// with no checkpoint, and the error, printed to the terminal that was gone, panicked.
#[test]
fn a_run_whose_terminal_with_its_output_hangs_up_can_go_on() {
    let part = scratch("hangup-stdout").join("part");
    let status = run_until_its_terminal_hangs_up(&part, true);
    assert!(
        status.signal() == Some(libc::SIGHUP) || status.code() == Some(1),
        "{status:?}"
    );
    let m = manifest(&part);
    let written = m["frames_written"].as_u64().unwrap() as u32;
    let ck = Checkpoint::read(&part.join(checkpoint::FILE_NAME)).unwrap();
    assert_eq!(ck.frames() + 1, written, "{m:#}");
    assert!(temps(&part).is_empty(), "{:?}", temps(&part));
    resume_to(&part, written);
    assert!(part.join(format!("frame_{written:04}.bcc")).exists());
}

/// SIGHUP sent to a run (`kill -HUP`, its terminal still there) stops it as SIGTERM does, saying
/// so; one the parent set to be ignored (`nohup`) stays ignored.
#[test]
fn sighup_stops_a_run_where_it_can_be_saved_unless_ignored() {
    use std::os::unix::process::CommandExt;
    let dir = scratch("sighup");
    let mut child = bin()
        .arg("run")
        .arg(scene("tiny"))
        .arg("--out")
        .arg(dir.join("hup"))
        .args(["--frames", "500"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    read_until(&mut stdout, |l| l.starts_with("frame    1/500"));
    send(&child, libc::SIGHUP);
    let (status, _, err) = finish(child);
    assert_eq!(status.signal(), Some(libc::SIGHUP), "{status:?}: {err}");
    assert!(
        err.contains("SIGHUP: the run stops at the end of frame"),
        "{err}"
    );
    let k = number_after(&err, "stopped by SIGHUP after frame ") as u32;
    assert_eq!(
        Checkpoint::read(&dir.join("hup").join(checkpoint::FILE_NAME))
            .unwrap()
            .frames(),
        k
    );

    let mut cmd = bin();
    cmd.arg("run")
        .arg(scene("tiny"))
        .arg("--out")
        .arg(dir.join("nohup"))
        .args(["--frames", "20", "--set", "simulation.fps=300"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    // SAFETY: signal(2) is async-signal-safe, as pre_exec asks.
    unsafe {
        cmd.pre_exec(|| {
            libc::signal(libc::SIGHUP, libc::SIG_IGN);
            Ok(())
        });
    }
    let mut child = cmd.spawn().unwrap();
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    read_until(&mut stdout, |l| l.starts_with("frame    1/20"));
    send(&child, libc::SIGHUP);
    let (status, _, err) = finish(child);
    assert!(status.success(), "{status:?}: {err}");
    assert_eq!(manifest(&dir.join("nohup"))["finished"], true);
}

/// A hang-up comes more than once: an interactive shell whose terminal went away forwards SIGHUP
/// to its jobs, and the kernel sends it again to the terminal's foreground job as the shell exits
/// (0.2 ms apart under bash). The repeat is no request to stop at once: the run still stops at the
/// end of its frame with a checkpoint. Before, the second SIGHUP was taken as a second Ctrl-C and
/// ended the run at once, with no checkpoint, unless the two happened to merge.
#[test]
fn a_repeated_sighup_still_saves_the_frame() {
    let dir = scratch("hup-twice");
    let (child, mut stderr) = within_a_long_frame(&dir);
    send(&child, libc::SIGHUP);
    // The second once the first was taken (a signal sent while the first is pending merges
    // with it).
    let notice = read_until(&mut stderr, |l| l.starts_with("SIGHUP: the run stops"));
    // (It names what does stop it at once: not a repeated SIGHUP.)
    let notice = notice.last().unwrap();
    assert!(
        notice.contains("(Ctrl-C or SIGTERM to stop at once"),
        "{notice}"
    );
    send(&child, libc::SIGHUP);
    let mut err = String::new();
    stderr.read_to_string(&mut err).unwrap();
    let (status, _, _) = finish(child);
    assert_eq!(status.signal(), Some(libc::SIGHUP), "{status:?}: {err}");
    let k = number_after(&err, "stopped by SIGHUP after frame ") as u32;
    assert_eq!(
        Checkpoint::read(&dir.join(checkpoint::FILE_NAME))
            .unwrap()
            .frames(),
        k
    );
    assert!(temps(&dir).is_empty(), "{:?}", temps(&dir));
}
