//! A run killed (-9) at its first checkpoint, for the tests of checkpoints taken during the
//! relaxation before t = 0 (tests/checkpoint.rs, tests/cli.rs).
#![allow(dead_code)]

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use yarnsim::checkpoint::{self, Checkpoint};

/// Spawns `cmd` (a `yarnsim run ... --out out --checkpoint-every N`), kills it as soon as
/// `out/checkpoint.bin` exists (it is written atomically: once it exists it is whole) or lets it
/// end, and returns that checkpoint's relaxation steps when it was taken during the relaxation
/// (`None`: the run had relaxed before the kill).
pub fn kill_at_first_checkpoint(cmd: &mut Command, out: &Path) -> Option<u64> {
    let ckpt = out.join(checkpoint::FILE_NAME);
    let mut child = cmd
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let t0 = Instant::now();
    while !ckpt.exists() && child.try_wait().unwrap().is_none() {
        assert!(t0.elapsed() < Duration::from_secs(120), "no checkpoint");
        std::thread::sleep(Duration::from_millis(1));
    }
    let _ = child.kill();
    child.wait().unwrap();
    let ck = Checkpoint::read(&ckpt).unwrap();
    let steps = ck.meta.options.get("relaxing")?["steps"].as_u64().unwrap();
    assert_eq!(
        ck.frames(),
        0,
        "a checkpoint of the relaxation is before frame 0"
    );
    Some(steps)
}
