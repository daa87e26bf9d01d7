//! Offscreen rendering on the GPU (lavapipe where there is no hardware GPU): coverage against the
//! camera maths, determinism, a golden image, colour modes, capture and input errors.
//!
//! Every test opens the GPU through `gpu_or_skip`, so they run one at a time and are skipped loudly
//! (or fail under `CI=true`) without an adapter.
//!
//! Golden image: `tests/golden/small_scene.png`. Metric: CIE76 colour difference ΔE between actual and
//! golden pixels (sRGB → CIE Lab, D65); a pixel "differs" when ΔE > `GOLDEN_DELTA_E` (10, a clearly
//! visible difference), and the test fails when more than `GOLDEN_MAX_FRACTION` (1%) of the pixels
//! differ, which leaves room for antialiasing and shading precision on another adapter but not for a
//! yarn, obstacle or colour that moved. On failure, and only then, the actual image and a difference
//! image (ΔE scaled to grey, differing pixels red) are written to
//! `<target dir>/test-output/render/`. Regenerate the golden with `YARNSIM_UPDATE_GOLDEN=1 cargo test
//! --test render golden` and look at it before committing.

use std::path::{Path, PathBuf};
use yarnsim::gpu::testing::gpu_or_skip;
use yarnsim::render::{
    yarn_color, Capture, ColorMode, RenderError, RenderInput, Renderer, BACKGROUND, NO_CONTACT,
    SOLID_COLOR, UPDATE_RED,
};
use yarnsim::scene::{Camera, Obstacle};
use yarnsim::spline;
use yarnsim::state::{Curve, Topology};

const GOLDEN_DELTA_E: f64 = 10.0;
const GOLDEN_MAX_FRACTION: f64 = 0.01;

fn out_dir() -> PathBuf {
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("target"));
    let d = target.join("test-output").join("render");
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// Three yarns that do not overlap in the test camera's view: a helix (open) on top, a closed ring on
/// the lower left and a straight yarn (open) at the bottom.
fn known_curves() -> Vec<Curve> {
    let helix = Curve {
        points: (0..18)
            .map(|i| {
                let a = i as f32 * 0.8;
                [-2.2 + i as f32 * 0.25, 1.3 + 0.45 * a.cos(), 0.45 * a.sin()]
            })
            .collect(),
        closed: false,
    };
    let ring = Curve {
        points: (0..10)
            .map(|i| {
                let a = i as f32 / 10.0 * std::f32::consts::TAU;
                [-1.0 + 0.45 * a.cos(), -0.3 + 0.45 * a.sin(), 0.0]
            })
            .collect(),
        closed: true,
    };
    let straight = Curve {
        points: (0..9).map(|i| [-2.0 + i as f32 * 0.5, -1.5, 0.0]).collect(),
        closed: false,
    };
    vec![helix, ring, straight]
}

fn known_camera() -> Camera {
    Camera {
        position: Some([0.0, 0.0, 9.0]),
        target: Some([0.0, 0.0, 0.0]),
        fov_deg: Some(40.0),
    }
}

const SPHERE_C: [f32; 3] = [1.3, -0.3, 0.0];
const SPHERE_R: f32 = 0.45;

/// Points on the drawn curve of every yarn, `per_seg` per segment, with their yarn index.
fn curve_samples(topo: &Topology, pos: &[[f32; 4]], per_seg: u32) -> Vec<([f32; 3], usize)> {
    let mut out = Vec::new();
    for seg in &topo.segments {
        let q = seg
            .cp
            .map(|i| yarnsim::math::V3::<f32>::from4(pos[i as usize]));
        for k in 0..=per_seg {
            let p = spline::eval(&q, k as f32 / per_seg as f32);
            out.push((p.to3(), seg.yarn as usize));
        }
    }
    out
}

/// Classifies a pixel by the direction of its RGB vector: lighting scales a colour (and adds a little
/// white), so the closest direction among the candidates names what was drawn there.
fn nearest(px: [u8; 3], candidates: &[[u8; 3]]) -> usize {
    let v = px.map(|c| c as f64);
    let n = (v[0] * v[0] + v[1] * v[1] + v[2] * v[2]).sqrt().max(1e-9);
    let mut best = (f64::NEG_INFINITY, 0);
    for (i, c) in candidates.iter().enumerate() {
        let w = c.map(|x| x as f64);
        let m = (w[0] * w[0] + w[1] * w[1] + w[2] * w[2]).sqrt();
        let cos = (v[0] * w[0] + v[1] * w[1] + v[2] * w[2]) / (n * m);
        if cos > best.0 {
            best = (cos, i);
        }
    }
    best.1
}

fn rgb(img: &image::RgbaImage, x: u32, y: u32) -> [u8; 3] {
    let p = img.get_pixel(x, y).0;
    [p[0], p[1], p[2]]
}

fn dist_to_segment(p: [f32; 2], a: [f32; 2], b: [f32; 2]) -> f32 {
    let (abx, aby) = (b[0] - a[0], b[1] - a[1]);
    let (apx, apy) = (p[0] - a[0], p[1] - a[1]);
    let l2 = abx * abx + aby * aby;
    let t = if l2 > 0.0 {
        ((apx * abx + apy * aby) / l2).clamp(0.0, 1.0)
    } else {
        0.0
    };
    let (dx, dy) = (apx - t * abx, apy - t * aby);
    (dx * dx + dy * dy).sqrt()
}

#[test]
fn known_scene_coverage() {
    let Some(gpu) = gpu_or_skip("known_scene_coverage") else {
        return;
    };
    let curves = known_curves();
    let (topo, pos) = Topology::from_curves(&curves).unwrap();
    let obstacles = vec![Obstacle::Sphere {
        center: SPHERE_C,
        radius: SPHERE_R,
        friction: 0.0,
        keyframes: vec![],
    }];
    let camera = known_camera();
    let radius = 0.12;
    let input = RenderInput {
        topo: &topo,
        pos: &pos,
        radius,
        obstacles: &obstacles,
        camera: &camera,
        color: ColorMode::Yarn,
        segment_values: None,
    };
    // An odd width: 203 × 4 bytes is not a multiple of 256, so the readback must strip row padding.
    let (w, h) = (203, 150);
    let mut r = Renderer::new(&gpu, w, h).unwrap();
    let img = r.render(&input).unwrap();
    let view = r.camera_view(&input).unwrap();

    let mut candidates: Vec<[u8; 3]> = (0..curves.len()).map(yarn_color).collect();
    candidates.push(BACKGROUND);
    candidates.push(SOLID_COLOR);

    // 1. Every control point the curve passes through is drawn in its yarn's colour.
    let mut checked = 0;
    for (yi, c) in curves.iter().enumerate() {
        let range = if c.closed {
            0..c.points.len()
        } else {
            1..c.points.len() - 1
        };
        for k in range {
            let p = view.project(c.points[k], w, h).expect("in front of camera");
            let (x, y) = (p[0].floor() as u32, p[1].floor() as u32);
            assert!(x < w && y < h, "yarn {yi} point {k} projects off the image");
            let px = rgb(&img, x, y);
            assert_ne!(
                px, BACKGROUND,
                "yarn {yi} point {k} at pixel ({x}, {y}) is background"
            );
            assert_eq!(
                nearest(px, &candidates),
                yi,
                "yarn {yi} point {k} at pixel ({x}, {y}) has colour {px:?}"
            );
            checked += 1;
        }
    }
    assert_eq!(checked, 16 + 10 + 7);

    // 2. The sphere is drawn at its projected centre.
    let sc = view.project(SPHERE_C, w, h).unwrap();
    let px = rgb(&img, sc[0] as u32, sc[1] as u32);
    assert_eq!(nearest(px, &candidates), candidates.len() - 1, "{px:?}");

    // 3. Far from every projected yarn and from the sphere, the image is exactly background.
    let samples = curve_samples(&topo, &pos, 16);
    let proj: Vec<([f32; 2], f32)> = samples
        .iter()
        .map(|(p, _)| {
            (
                view.project(*p, w, h).unwrap(),
                radius * view.pixels_per_unit(*p, h).unwrap(),
            )
        })
        .collect();
    let r_px = proj.iter().map(|p| p.1).fold(0.0f32, f32::max);
    assert!(r_px > 2.0, "tubes too thin to test coverage: {r_px} px");
    let sphere_px = SPHERE_R * view.pixels_per_unit(SPHERE_C, h).unwrap() * 1.2;
    let margin = 2.0;
    let mut background_checked = 0;
    for y in 0..h {
        for x in 0..w {
            let c = [x as f32 + 0.5, y as f32 + 0.5];
            let ds = ((c[0] - sc[0]).powi(2) + (c[1] - sc[1]).powi(2)).sqrt();
            if ds <= sphere_px + margin {
                continue;
            }
            let near_yarn = proj
                .windows(2)
                .any(|s| dist_to_segment(c, s[0].0, s[1].0) <= r_px + margin);
            if near_yarn {
                continue;
            }
            assert_eq!(
                rgb(&img, x, y),
                BACKGROUND,
                "pixel ({x}, {y}) far from all geometry"
            );
            background_checked += 1;
        }
    }
    assert!(
        background_checked > (w * h) as usize / 2,
        "only {background_checked} background pixels checked"
    );
}

#[test]
fn same_input_same_image() {
    let Some(gpu) = gpu_or_skip("same_input_same_image") else {
        return;
    };
    let curves = known_curves();
    let (topo, pos) = Topology::from_curves(&curves).unwrap();
    let obstacles = vec![Obstacle::Plane {
        point: [0.0, -2.0, 0.0],
        normal: [0.0, 1.0, 0.2],
        friction: 0.0,
    }];
    let camera = Camera::default();
    let values: Vec<f32> = (0..topo.segments.len()).map(|s| (s % 4) as f32).collect();
    let input = RenderInput {
        topo: &topo,
        pos: &pos,
        radius: 0.1,
        obstacles: &obstacles,
        camera: &camera,
        color: ColorMode::Updates,
        segment_values: Some(&values),
    };
    let mut r = Renderer::new(&gpu, 120, 90).unwrap();
    let a = r.render(&input).unwrap();
    let b = r.render(&input).unwrap();
    let c = Renderer::new(&gpu, 120, 90)
        .unwrap()
        .render(&input)
        .unwrap();
    assert!(a.as_raw() == b.as_raw(), "second render differs");
    assert!(
        a.as_raw() == c.as_raw(),
        "render with a fresh renderer differs"
    );
    assert!(a.pixels().any(|p| p.0[..3] != BACKGROUND), "nothing drawn");
}

/// sRGB → CIE Lab (D65).
fn lab(c: [u8; 3]) -> [f64; 3] {
    let lin = c.map(|v| {
        let v = v as f64 / 255.0;
        if v <= 0.04045 {
            v / 12.92
        } else {
            ((v + 0.055) / 1.055).powf(2.4)
        }
    });
    let x = (0.4124 * lin[0] + 0.3576 * lin[1] + 0.1805 * lin[2]) / 0.95047;
    let y = 0.2126 * lin[0] + 0.7152 * lin[1] + 0.0722 * lin[2];
    let z = (0.0193 * lin[0] + 0.1192 * lin[1] + 0.9505 * lin[2]) / 1.08883;
    let f = |t: f64| {
        if t > 216.0 / 24389.0 {
            t.cbrt()
        } else {
            (24389.0 / 27.0 * t + 16.0) / 116.0
        }
    };
    let (fx, fy, fz) = (f(x), f(y), f(z));
    [116.0 * fy - 16.0, 500.0 * (fx - fy), 200.0 * (fy - fz)]
}

fn delta_e(a: [u8; 3], b: [u8; 3]) -> f64 {
    let (p, q) = (lab(a), lab(b));
    ((p[0] - q[0]).powi(2) + (p[1] - q[1]).powi(2) + (p[2] - q[2]).powi(2)).sqrt()
}

/// The scene of the golden image: yarns of all three kinds over a plane, a sphere and a capsule.
fn golden_scene() -> (Vec<Curve>, Vec<Obstacle>) {
    let obstacles = vec![
        Obstacle::Plane {
            point: [0.0, -2.2, 0.0],
            normal: [0.0, 1.0, 0.0],
            friction: 0.0,
        },
        Obstacle::Sphere {
            center: SPHERE_C,
            radius: SPHERE_R,
            friction: 0.0,
            keyframes: vec![],
        },
        Obstacle::Capsule {
            a: [-1.8, -2.0, 0.8],
            b: [1.8, -2.0, 0.8],
            radius: 0.2,
            friction: 0.0,
            keyframes: vec![],
        },
    ];
    (known_curves(), obstacles)
}

fn compare_with_golden(name: &str, img: &image::RgbaImage) {
    let golden_path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/golden")
        .join(format!("{name}.png"));
    if std::env::var_os("YARNSIM_UPDATE_GOLDEN").is_some() {
        std::fs::create_dir_all(golden_path.parent().unwrap()).unwrap();
        img.save(&golden_path).unwrap();
        eprintln!("updated golden image {}", golden_path.display());
        return;
    }
    let golden = image::open(&golden_path)
        .unwrap_or_else(|e| {
            panic!(
                "{}: {e}; generate it with YARNSIM_UPDATE_GOLDEN=1",
                golden_path.display()
            )
        })
        .to_rgba8();
    assert_eq!(golden.dimensions(), img.dimensions(), "golden image size");
    let mut diff = image::RgbaImage::new(img.width(), img.height());
    let mut over = 0usize;
    let mut max_de = 0.0f64;
    for (x, y, p) in img.enumerate_pixels() {
        let g = golden.get_pixel(x, y);
        let de = delta_e([p[0], p[1], p[2]], [g[0], g[1], g[2]]);
        max_de = max_de.max(de);
        let v = (de * 4.0).min(255.0) as u8;
        let d = if de > GOLDEN_DELTA_E {
            over += 1;
            [255, 0, 0, 255]
        } else {
            [v, v, v, 255]
        };
        diff.put_pixel(x, y, image::Rgba(d));
    }
    let frac = over as f64 / (img.width() * img.height()) as f64;
    let dir = out_dir();
    let actual = dir.join(format!("{name}_actual.png"));
    let diffp = dir.join(format!("{name}_diff.png"));
    if frac <= GOLDEN_MAX_FRACTION {
        // Files from an earlier failing run would mislead.
        let _ = std::fs::remove_file(&actual);
        let _ = std::fs::remove_file(&diffp);
    } else {
        img.save(&actual).unwrap();
        diff.save(&diffp).unwrap();
        panic!(
            "{name}: {over} pixels ({:.2}%) differ from the golden by ΔE > {GOLDEN_DELTA_E} \
             (allowed {:.2}%, max ΔE {max_de:.1}); actual: {}, difference: {}",
            frac * 100.0,
            GOLDEN_MAX_FRACTION * 100.0,
            actual.display(),
            diffp.display()
        );
    }
}

#[test]
fn golden_small_scene() {
    let Some(gpu) = gpu_or_skip("golden_small_scene") else {
        return;
    };
    let (curves, obstacles) = golden_scene();
    let (topo, pos) = Topology::from_curves(&curves).unwrap();
    let camera = Camera {
        position: Some([2.0, 2.5, 8.0]),
        target: Some([0.0, -0.3, 0.0]),
        fov_deg: Some(42.0),
    };
    let input = RenderInput {
        topo: &topo,
        pos: &pos,
        radius: 0.12,
        obstacles: &obstacles,
        camera: &camera,
        color: ColorMode::Yarn,
        segment_values: None,
    };
    let img = Renderer::new(&gpu, 128, 96)
        .unwrap()
        .render(&input)
        .unwrap();
    compare_with_golden("small_scene", &img);
}

/// A straight yarn along x seen face-on; returns the image and the pixel at the middle of segment `s`.
fn straight_yarn_pixels(gpu: &yarnsim::gpu::Gpu, color: ColorMode, values: &[f32]) -> Vec<[u8; 3]> {
    let curves = vec![Curve {
        points: (0..9).map(|i| [-2.0 + i as f32 * 0.5, 0.0, 0.0]).collect(),
        closed: false,
    }];
    let (topo, pos) = Topology::from_curves(&curves).unwrap();
    assert_eq!(topo.segments.len(), values.len());
    let camera = Camera {
        position: Some([0.0, 0.0, 5.0]),
        target: Some([0.0, 0.0, 0.0]),
        fov_deg: Some(50.0),
    };
    let input = RenderInput {
        topo: &topo,
        pos: &pos,
        radius: 0.15,
        obstacles: &[],
        camera: &camera,
        color,
        segment_values: Some(values),
    };
    let mut r = Renderer::new(gpu, 160, 60).unwrap();
    let img = r.render(&input).unwrap();
    let view = r.camera_view(&input).unwrap();
    topo.segments
        .iter()
        .map(|seg| {
            let q = seg
                .cp
                .map(|i| yarnsim::math::V3::<f32>::from4(pos[i as usize]));
            let p = view.project(spline::eval(&q, 0.5).to3(), 160, 60).unwrap();
            rgb(&img, p[0] as u32, p[1] as u32)
        })
        .collect()
}

#[test]
fn updates_mode_paints_rebuilt_segments_red() {
    let Some(gpu) = gpu_or_skip("updates_mode_paints_rebuilt_segments_red") else {
        return;
    };
    let values = [0.0, 0.0, 20.0, 0.0, 1.0, 0.0];
    let px = straight_yarn_pixels(&gpu, ColorMode::Updates, &values);
    let cands = [yarn_color(0), UPDATE_RED];
    for (s, v) in values.iter().enumerate() {
        assert_ne!(px[s], BACKGROUND, "segment {s} not drawn");
        let want = if *v > 0.0 { 1 } else { 0 };
        assert_eq!(
            nearest(px[s], &cands),
            want,
            "segment {s} ({v} updates): {:?}",
            px[s]
        );
    }
    // More updates, redder: the green channel (low in red) drops.
    assert!(px[2][1] < px[4][1], "{:?} vs {:?}", px[2], px[4]);
}

#[test]
fn contacts_mode_ramps_density() {
    let Some(gpu) = gpu_or_skip("contacts_mode_ramps_density") else {
        return;
    };
    let values = [0.0, 1.0, 2.0, 3.0, 4.0, 0.0];
    let px = straight_yarn_pixels(&gpu, ColorMode::Contacts, &values);
    let ramp = |t: f32| yarnsim::render::contact_ramp(t);
    // Zero density: the neutral colour; the densest segment: the red end of the ramp.
    let cands = [NO_CONTACT, ramp(0.0), ramp(0.5), ramp(1.0)];
    assert_eq!(nearest(px[0], &cands), 0, "{:?}", px[0]);
    assert_eq!(nearest(px[5], &cands), 0, "{:?}", px[5]);
    assert_eq!(nearest(px[4], &cands), 3, "{:?}", px[4]);
    assert_eq!(nearest(px[2], &cands), 2, "{:?}", px[2]);
}

#[test]
fn bad_input_is_an_error() {
    let Some(gpu) = gpu_or_skip("bad_input_is_an_error") else {
        return;
    };
    assert!(matches!(
        Renderer::new(&gpu, 0, 10),
        Err(RenderError::InvalidInput(_))
    ));
    let curves = known_curves();
    let (topo, mut pos) = Topology::from_curves(&curves).unwrap();
    let camera = Camera::default();
    let mut r = Renderer::new(&gpu, 32, 32).unwrap();
    let short = vec![1.0; topo.segments.len() - 1];
    let input = RenderInput {
        topo: &topo,
        pos: &pos,
        radius: 0.1,
        obstacles: &[],
        camera: &camera,
        color: ColorMode::Updates,
        segment_values: Some(&short),
    };
    match r.render(&input) {
        Err(RenderError::InvalidInput(m)) => assert!(m.contains("segment values"), "{m}"),
        other => panic!("expected an input error, got {other:?}"),
    }
    pos[20][1] = f32::NAN;
    let input = RenderInput {
        topo: &topo,
        pos: &pos,
        radius: 0.1,
        obstacles: &[],
        camera: &camera,
        color: ColorMode::Yarn,
        segment_values: None,
    };
    match r.render(&input) {
        Err(RenderError::InvalidInput(m)) => assert!(m.contains("yarn 1, control point 2"), "{m}"),
        other => panic!("expected an input error, got {other:?}"),
    }
}

/// A small woven swatch: yarns along x and along z, each passing over and under the other set.
fn swatch() -> Vec<Curve> {
    let n = 6;
    let gap = 0.5f32;
    let half = (n as f32 - 1.0) * gap * 0.5;
    let mut curves = Vec::new();
    for across in [false, true] {
        for j in 0..n {
            let c0 = -half + j as f32 * gap;
            let sign = if across { -1.0 } else { 1.0 };
            let pts = (0..(2 * n + 3))
                .map(|i| {
                    let s = -half - gap + i as f32 * gap * 0.5;
                    let phase = (i + 2 * j) as f32 * std::f32::consts::FRAC_PI_2;
                    let h = sign * 0.12 * phase.cos();
                    if across {
                        [c0, h, s]
                    } else {
                        [s, h, c0]
                    }
                })
                .collect();
            curves.push(Curve {
                points: pts,
                closed: false,
            });
        }
    }
    curves
}

/// Writes `<target dir>/test-output/render/swatch/frame_0002.png` (a look at the renderer).
#[test]
fn capture_writes_numbered_frames() {
    let Some(gpu) = gpu_or_skip("capture_writes_numbered_frames") else {
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
        color: ColorMode::Updates, // overridden by the capture's own mode
        segment_values: None,
    };
    let dir = out_dir().join("swatch");
    let _ = std::fs::remove_dir_all(&dir);
    let mut cap = Capture::new(&gpu, &dir, 320, 240, 2, ColorMode::Yarn).unwrap();
    assert_eq!(cap.frame(1, &input).unwrap(), (None, None));
    let (path, seen) = cap.frame(2, &input).unwrap();
    let path = path.expect("frame 2 is captured");
    assert_eq!(path, dir.join("frame_0002.png"));
    // The first frame captured says what its camera saw (the default camera frames the cloth),
    // the later ones nothing.
    let all = yarnsim::render::ViewCount {
        in_view: pos.len(),
        points: pos.len(),
    };
    assert_eq!(seen, Some(all));
    assert_eq!(cap.frame(4, &input).unwrap().1, None);
    assert!(!dir.join("frame_0001.png").exists());
    let img = image::open(&path).unwrap().to_rgba8();
    assert_eq!(img.dimensions(), (320, 240));
    let drawn = img.pixels().filter(|p| p.0[..3] != BACKGROUND).count();
    assert!(drawn > 320 * 240 / 4, "only {drawn} pixels drawn");
}

#[test]
fn render_bcc_command_draws_saved_state() {
    let Some(gpu) = gpu_or_skip("render_bcc_command_draws_saved_state") else {
        return;
    };
    let dir = out_dir().join("bcc");
    std::fs::create_dir_all(&dir).unwrap();
    let bcc = dir.join("known.bcc");
    let png = dir.join("known.png");
    let _ = std::fs::remove_file(&png);
    let curves = known_curves();
    yarnsim::bcc::write(&bcc, &curves).unwrap();
    let mut scene = yarnsim::scene::Scene {
        camera: known_camera(),
        obstacle: vec![Obstacle::Sphere {
            center: SPHERE_C,
            radius: SPHERE_R,
            friction: 0.0,
            keyframes: vec![],
        }],
        ..Default::default()
    };
    scene.yarn.radius = 0.1;
    // The command opens a device of its own; holding the harness's guard meanwhile keeps other GPU
    // tests of this process waiting.
    yarnsim::render::render_bcc_command(&bcc, Some(&scene), &png, 100, 80, ColorMode::Yarn)
        .unwrap();
    let written = image::open(&png).unwrap().to_rgba8();
    assert!(matches!(
        yarnsim::render::render_bcc_command(&bcc, None, &png, 100, 80, ColorMode::Updates),
        Err(RenderError::InvalidInput(_))
    ));

    // The same state drawn directly gives the same picture.
    let (topo, pos) = Topology::from_curves(&curves).unwrap();
    let direct = Renderer::new(&gpu, 100, 80)
        .unwrap()
        .render(&RenderInput {
            topo: &topo,
            pos: &pos,
            radius: 0.1,
            obstacles: &scene.obstacle,
            camera: &scene.camera,
            color: ColorMode::Yarn,
            segment_values: None,
        })
        .unwrap();
    assert!(
        written.as_raw() == direct.as_raw(),
        "command output differs from a direct render"
    );
}
