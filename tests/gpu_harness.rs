//! The GPU test harness: serialized GPU tests, loud skips without an adapter, failure under `CI=true`.
//!
//! The no-adapter behaviour is checked by running this same test binary again as a child process with
//! `YARNSIM_GPU_BACKEND=none` (no backend at all), once without and once with `CI=true`.
//!
//! Where the only adapter is the GL fallback's software rendering the tests skip too (checked on
//! described adapters: a child process on such a machine may crash in libEGL's destructor at exit,
//! see `src/gpu.rs`).
//!
//! Also the shader files themselves (no GPU needed): the build script's validation, and the lighting
//! that the two render shaders each carry a copy of.

use std::process::Command;
use yarnsim::gpu::testing::{gpu_or_skip, skip_or_fail, test_adapter};
use yarnsim::gpu::{AdapterSummary, GpuError};

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

/// An adapter as wgpu would describe it, for the harness's decisions (no GPU needed).
fn adapter(name: &str, backend: wgpu::Backend, kind: wgpu::DeviceType) -> AdapterSummary {
    AdapterSummary {
        name: name.into(),
        backend: format!("{backend:?}"),
        device_type: format!("{kind:?}"),
        driver: String::new(),
        driver_info: String::new(),
    }
}

/// On a machine with Mesa's GL but no Vulkan driver, `Gpu::new` falls back to llvmpipe through
/// GL, where the suite would run for hours (its kernels compile at their first dispatch, for
/// minutes, and steps are some 20 times slower than on lavapipe): the tests skip there, loudly,
/// as without an adapter, and fail under CI, unless the user named the backends. Every other
/// adapter, lavapipe and hardware GL included, runs them.
#[test]
fn tests_skip_on_software_gl_unless_it_is_named() {
    use wgpu::{Backend, DeviceType};
    let llvmpipe = adapter(
        "llvmpipe (LLVM 15.0.6, 256 bits)",
        Backend::Gl,
        DeviceType::Cpu,
    );
    let err = test_adapter(&llvmpipe, false).expect_err("software GL, not named");
    assert!(matches!(err, GpuError::SoftwareGl { .. }), "{err:?}");
    let msg = err.to_string();
    for part in ["llvmpipe", "mesa-vulkan-drivers", "YARNSIM_GPU_BACKEND=gl"] {
        assert!(msg.contains(part), "no {part:?} in {msg:?}");
    }
    test_adapter(&llvmpipe, true).expect("software GL, named");
    assert!(llvmpipe
        .slow_adapter_note()
        .is_some_and(|n| n.contains("llvmpipe") && n.contains("mesa-vulkan-drivers")));
    let others = [
        adapter(
            "llvmpipe (LLVM 15.0.6, 256 bits)",
            Backend::Vulkan,
            DeviceType::Cpu,
        ),
        adapter("NVIDIA H200", Backend::Vulkan, DeviceType::DiscreteGpu),
        adapter(
            "Mesa Intel(R) UHD Graphics",
            Backend::Gl,
            DeviceType::IntegratedGpu,
        ),
    ];
    for a in &others {
        test_adapter(a, false).unwrap_or_else(|e| panic!("{a}: {e}"));
        assert_eq!(a.slow_adapter_note(), None, "{a}");
    }
    // A failure under CI. (Without CI the test skips; not called here, where its SKIPPED line
    // would read as a skip in the suite's log.)
    let ci = std::panic::catch_unwind(|| skip_or_fail("software_gl_probe", Err(err), true))
        .expect_err("a failure under CI=true");
    let ci = ci.downcast_ref::<String>().cloned().unwrap_or_default();
    assert!(
        ci.contains("required under CI=true") && ci.contains("OpenGL software rendering"),
        "{ci}"
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
