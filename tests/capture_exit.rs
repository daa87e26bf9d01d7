//! `run --capture` exits cleanly, every time (issue: 1–4 % of capture runs used to die *after*
//! writing all their files, in libEGL's destructor racing llvmpipe's threads at `exit`, because the
//! GL backend was initialised next to Vulkan). 200 one-frame capture runs of scenes/tiny.toml, two at
//! a time as on a 2-core CI machine; every exit status must be 0 and every run must have written
//! its two frames.

use std::path::Path;
use std::process::{Command, Stdio};

#[test]
fn two_hundred_capture_runs_all_exit_zero() {
    let Some(gpu) = yarnsim::gpu::testing::gpu_or_skip("two_hundred_capture_runs_all_exit_zero")
    else {
        return;
    };
    // Only the adapter check: the runs below are separate processes.
    drop(gpu);
    let scene = Path::new(env!("CARGO_MANIFEST_DIR")).join("scenes/tiny.toml");
    let root = Path::new(env!("CARGO_TARGET_TMPDIR")).join("capture-exit");
    let _ = std::fs::remove_dir_all(&root);
    let mut failures = Vec::new();
    const RUNS: usize = 200;
    for pair in 0..RUNS / 2 {
        let children: Vec<_> = (0..2)
            .map(|k| {
                let dir = root.join(format!("run{}", 2 * pair + k));
                let child = Command::new(env!("CARGO_BIN_EXE_yarnsim"))
                    .args(["run", scene.to_str().unwrap(), "--frames", "1", "--capture"])
                    .arg(&dir)
                    .stdout(Stdio::null())
                    .stderr(Stdio::piped())
                    .spawn()
                    .expect("start yarnsim");
                (dir, child)
            })
            .collect();
        for (dir, child) in children {
            let out = child.wait_with_output().unwrap();
            let frames = ["frame_0000.png", "frame_0001.png"]
                .iter()
                .all(|f| dir.join(f).is_file());
            if !out.status.success() || !frames {
                failures.push(format!(
                    "{}: {:?}, frames written: {frames}\n{}",
                    dir.display(),
                    out.status,
                    String::from_utf8_lossy(&out.stderr)
                ));
            }
            let _ = std::fs::remove_dir_all(&dir);
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {RUNS} capture runs failed:\n{}",
        failures.len(),
        failures.join("\n")
    );
}
