//! The GPU test harness: serialized GPU tests, loud skips without an adapter, failure under `CI=true`.
//!
//! The no-adapter behaviour is checked by running this same test binary again as a child process with
//! `YARNSIM_GPU_BACKEND=none` (no backend at all), once without and once with `CI=true`.
//!
//! Also the shader files themselves (no GPU needed): the build script's validation, and the lighting
//! that the two render shaders each carry a copy of.

use std::process::Command;
use yarnsim::gpu::testing::gpu_or_skip;

/// Run only as a child of `skip_message_without_adapter` / `panics_under_ci_without_adapter`.
#[test]
#[ignore = "run as a child process by the harness tests"]
fn harness_child_probe() {
    let gpu = gpu_or_skip("harness_child_probe");
    assert!(
        gpu.is_none(),
        "YARNSIM_GPU_BACKEND=none must give no adapter"
    );
}

fn run_child(ci: bool) -> std::process::Output {
    let exe = std::env::current_exe().expect("test binary path");
    let mut cmd = Command::new(exe);
    cmd.args(["--ignored", "--exact", "harness_child_probe", "--nocapture"])
        .env("YARNSIM_GPU_BACKEND", "none")
        .env_remove("CI");
    if ci {
        cmd.env("CI", "true");
    }
    cmd.output().expect("run child test process")
}

#[test]
fn skip_message_without_adapter() {
    let out = run_child(false);
    let stderr = String::from_utf8_lossy(&out.stderr);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "child failed:\n{stdout}\n{stderr}");
    assert!(
        stdout.contains("1 passed"),
        "the probe must have run:\n{stdout}"
    );
    assert!(
        stderr.contains("SKIPPED harness_child_probe: no GPU adapter ("),
        "missing skip line in stderr:\n{stderr}"
    );
}

#[test]
fn panics_under_ci_without_adapter() {
    let out = run_child(true);
    let stderr = String::from_utf8_lossy(&out.stderr);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        !out.status.success(),
        "child must fail under CI=true:\n{stdout}\n{stderr}"
    );
    let all = format!("{stdout}{stderr}");
    assert!(
        all.contains("harness_child_probe: a GPU adapter is required under CI=true"),
        "missing CI failure message:\n{all}"
    );
    assert!(
        !stderr.contains("SKIPPED"),
        "must not skip under CI:\n{stderr}"
    );
}

#[test]
fn opens_adapter_and_serializes() {
    let Some(gpu) = gpu_or_skip("opens_adapter_and_serializes") else {
        return;
    };
    let summary = gpu.summary();
    eprintln!("adapter: {summary}");
    assert!(!summary.name.is_empty());
    // While this guard lives, a second test thread asking for the GPU must wait.
    let (tx, rx) = std::sync::mpsc::channel();
    let h = std::thread::spawn(move || {
        let g = gpu_or_skip("opens_adapter_and_serializes/second");
        tx.send(()).unwrap();
        drop(g);
    });
    assert!(
        rx.recv_timeout(std::time::Duration::from_millis(300))
            .is_err(),
        "second GPU test got the device while the first still held it"
    );
    drop(gpu);
    rx.recv_timeout(std::time::Duration::from_secs(60))
        .expect("second GPU test never got the device");
    h.join().unwrap();
}

#[test]
fn adapter_listing_names_adapters() {
    let Some(gpu) = gpu_or_skip("adapter_listing_names_adapters") else {
        return;
    };
    let list = yarnsim::gpu::list_adapters().expect("list adapters");
    assert!(
        list.iter().any(|a| a.name == gpu.summary().name),
        "the opened adapter {} is not in the listing {list:?}",
        gpu.summary()
    );
}

/// The build script's shader check, compiled into this test so it can be run on files of our choosing.
#[allow(dead_code)]
#[path = "../build.rs"]
mod build_script;

#[test]
fn build_script_accepts_every_shader_and_rejects_a_broken_one() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("shaders");
    let mut n = 0;
    for e in std::fs::read_dir(&dir).unwrap() {
        let p = e.unwrap().path();
        if p.extension().is_some_and(|x| x == "wgsl") {
            build_script::check(&p).unwrap_or_else(|m| panic!("{m}"));
            n += 1;
        }
    }
    assert!(n >= 2, "expected the render shaders in {}", dir.display());

    let tmp = std::env::temp_dir().join(format!("yarnsim-broken-{}.wgsl", std::process::id()));
    std::fs::write(
        &tmp,
        "fn ok() -> f32 { return 1.0; }\n\nfn f() -> i32 { return 1.0; }\n",
    )
    .unwrap();
    let msg = build_script::check(&tmp).unwrap_err();
    // The first line names the file and line 3; naga's diagnostic follows.
    let loc = format!("error: {}:3: WGSL ", tmp.display());
    assert!(msg.starts_with(&loc), "no {loc} in:\n{msg}");

    // After an import, the error is still reported at the importing file's own line, not at the
    // line of the expanded text.
    std::fs::write(
        &tmp,
        "#import render_common\n\nfn f() -> i32 { return 1.0; }\n",
    )
    .unwrap();
    let msg = build_script::check(&tmp).unwrap_err();
    let loc = format!("error: {}:3: WGSL ", tmp.display());
    assert!(msg.starts_with(&loc), "no {loc} in:\n{msg}");

    // An unknown import names the file and line of the directive.
    std::fs::write(&tmp, "\n#import no_such_file\n").unwrap();
    let msg = build_script::check(&tmp).unwrap_err();
    std::fs::remove_file(&tmp).ok();
    let loc = format!("error: {}:2: `#import no_such_file`", tmp.display());
    assert!(msg.starts_with(&loc), "no {loc} in:\n{msg}");
}
