//! Offscreen rendering on the GPU (lavapipe in CI): coverage, determinism, golden image, capture.

use std::path::PathBuf;
use yarnsim::gpu::testing::gpu_or_skip;
use yarnsim::render::{Capture, ColorMode, RenderInput, Renderer};
use yarnsim::scene::{Camera, Obstacle};
use yarnsim::state::{Curve, Topology};

fn out_dir() -> PathBuf {
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("target"));
    let d = target.join("test-output").join("render");
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// A small woven swatch: yarns along x and along z, each waving over and under the other set.
fn swatch() -> Vec<Curve> {
    let n = 6;
    let gap = 0.5f32;
    let half = (n as f32 - 1.0) * gap * 0.5;
    let mut curves = Vec::new();
    for j in 0..n {
        let y0 = -half + j as f32 * gap;
        let pts = (0..(2 * n + 3))
            .map(|i| {
                let x = -half - gap + i as f32 * gap * 0.5;
                let phase = (i + 2 * j) as f32 * std::f32::consts::FRAC_PI_2;
                [x, 0.12 * phase.cos(), y0]
            })
            .collect();
        curves.push(Curve {
            points: pts,
            closed: false,
        });
    }
    for j in 0..n {
        let x0 = -half + j as f32 * gap;
        let pts = (0..(2 * n + 3))
            .map(|i| {
                let z = -half - gap + i as f32 * gap * 0.5;
                let phase = (i + 2 * j) as f32 * std::f32::consts::FRAC_PI_2;
                [x0, -0.12 * phase.cos(), z]
            })
            .collect();
        curves.push(Curve {
            points: pts,
            closed: false,
        });
    }
    curves
}

#[test]
fn swatch_frame_is_written() {
    let Some(gpu) = gpu_or_skip("swatch_frame_is_written") else {
        return;
    };
    let curves = swatch();
    let (topo, pos) = Topology::from_curves(&curves).unwrap();
    let obstacles = vec![
        Obstacle::Plane {
            point: [0.0, -0.6, 0.0],
            normal: [0.0, 1.0, 0.0],
            friction: 0.0,
        },
        Obstacle::Sphere {
            center: [1.2, -0.2, 1.0],
            radius: 0.4,
            friction: 0.0,
            keyframes: vec![],
        },
    ];
    let camera = Camera::default();
    let input = RenderInput {
        topo: &topo,
        pos: &pos,
        radius: 0.08,
        obstacles: &obstacles,
        camera: &camera,
        color: ColorMode::Yarn,
        segment_values: None,
    };
    let mut cap = Capture::new(&gpu, &out_dir(), 480, 360, 1, ColorMode::Yarn).unwrap();
    let path = cap.frame(1, &input).unwrap().unwrap();
    assert!(path.ends_with("frame_0001.png"));
    let cam2 = Camera {
        position: Some([0.9, 0.9, 1.6]),
        target: Some([0.3, 0.0, 0.5]),
        fov_deg: None,
    };
    let mut r = Renderer::new(&gpu, 480, 360).unwrap();
    let img = r
        .render(&RenderInput {
            camera: &cam2,
            radius: 0.1,
            ..input
        })
        .unwrap();
    img.save(out_dir().join("closeup.png")).unwrap();
}
