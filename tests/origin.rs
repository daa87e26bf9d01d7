//! A simulation about a local origin (`sim::local_origin`, `Sim::origin`): a scene moved far from
//! its origin runs as it does at the origin, moved, with every kind of solid in it (a floor, a
//! keyframed sphere and capsule, a walking figure, a free ball), and what leaves the simulation
//! (curves, balls, the figure's parts as placed) is in the scene's frame. The relaxation's side of
//! it (a far swatch comes to rest, which it did not before) is in `tests/relax.rs`.

#[path = "support/fixture.rs"]
mod fixture;

use yarnsim::scene::{self, build_curves, ClothBuild, Scene};
use yarnsim::sim::Sim;

/// A pinned swatch pushed by a sphere from behind and a ball from the front, a capsule below, a
/// figure walking beside it (clear of it) and a floor; everything moved by `t` (cm).
fn scene_text(t: [f32; 3]) -> String {
    let at = |p: [f32; 3]| format!("[{}, {}, {}]", p[0] + t[0], p[1] + t[1], p[2] + t[2]);
    format!(
        r#"
[simulation]
fps = 162
[relax]
time = 0
[[cloth]]
source.generator = {{ pattern = "stockinette", wales = 4, courses = 4 }}
translate = {cloth}
[[pin]]
region = {{ min = {pin_min}, max = {pin_max} }}
[[obstacle]]
type = "plane"
point = {floor}
normal = [0, 1, 0]
[[obstacle]]
type = "sphere"
center = {sphere}
radius = 0.8
keyframes = [{{ t = 0.0, offset = [0, 0, 0] }}, {{ t = 0.02, offset = [0, 0, 1.5] }}]
[[obstacle]]
type = "capsule"
a = {cap_a}
b = {cap_b}
radius = 0.3
keyframes = [{{ t = 0.0, offset = [0, 0, 0] }}, {{ t = 0.02, offset = [0, 0.5, 0] }}]
[[figure]]
height = 20.0
position = {figure}
start = 0.0
period = 0.1
[[ball]]
center = {ball}
radius = 0.5
mass = 0.2
velocity = [0, 0, -100]
"#,
        cloth = at([0.0, 3.0, 0.0]),
        pin_min = at([-10.0, 3.9, -1.0]),
        pin_max = at([10.0, 10.0, 1.0]),
        floor = at([0.0; 3]),
        sphere = at([0.75, 3.25, -1.625]),
        cap_a = at([-1.5, 0.25, -1.0]),
        cap_b = at([1.5, 0.25, 1.0]),
        figure = at([30.0, 0.0, 0.0]),
        ball = at([0.75, 2.375, 1.25]),
    )
}

/// The scene moved by `t`, and its simulation. With `from`, the cloth's control points are
/// `from`'s moved back by `t` (in f32, exactly: `from`'s points lie within a factor of 2 of `t`),
/// so the two simulations start from the same cloth, rather than from two roundings of it.
fn build(
    dir: &std::path::Path,
    t: [f32; 3],
    from: Option<(&ClothBuild, [f32; 3])>,
) -> (Scene, ClothBuild, Sim) {
    let path = dir.join("scene.toml");
    std::fs::write(&path, scene_text(t)).unwrap();
    let scene = Scene::load(&path).unwrap();
    let mut build = build_curves(&scene, dir).unwrap();
    if let Some((far, ft)) = from {
        for (c, f) in build.curves.iter_mut().zip(&far.curves) {
            for (p, q) in c.points.iter_mut().zip(&f.points) {
                *p = std::array::from_fn(|k| q[k] - ft[k]);
            }
        }
    }
    let pins = scene::pinned_points(&scene, &build).unwrap();
    let sim = Sim::from_build(&scene, &build, &pins).unwrap();
    sim.check_start(&build).unwrap();
    (scene, build, sim)
}

/// Two frames (200 steps) of the scene at the origin and moved to (150, −120, 300) cm, both from
/// the same cloth (the far one's rounding of it): the far one is simulated about the swatch's
/// centre, and its cloth, ball and solids are the near one's moved by `t`, within what the two
/// local frames' roundings give (the near one's points lie within 5 cm of its origin, the far
/// one's within 3 cm of its own: half an ulp, 2.4e-7 cm, a point and a step, measured as at most
/// 1e-6 cm over these 200 steps; bound 1e-5 cm). Its frames, balls and error messages are in the
/// scene's frame: its local values plus its origin.
///
/// (Two roundings of the cloth in the scene's frame, 1.5e-5 cm apart, would not do: the ball's
/// impact and ACL's rebuild decisions grow a random difference of that size in the start to
/// 5e-4 cm by the second frame, measured with the near swatch's points moved at random.)
#[test]
fn a_scene_far_from_the_origin_runs_as_at_the_origin() {
    let dir = fixture::temp_dir("origin", "far");
    let t = [150.0f32, -120.0, 300.0];
    let (_, far_build, mut far) = build(&dir, t, None);
    let (_, _, mut near) = build(&dir, [0.0; 3], Some((&far_build, t)));
    assert_eq!(near.origin(), [0.0; 3]);
    let o = far.origin();
    for k in 0..3 {
        assert!(
            (o[k] - t[k]).abs() <= 3.0 && o[k] == o[k].round(),
            "origin {o:?}: the swatch's centre rounded to whole cm, near {t:?}"
        );
    }
    let largest = |s: &Sim| {
        s.pos
            .iter()
            .flat_map(|p| p[..3].iter().map(|x| x.abs()))
            .fold(0.0f32, f32::max)
    };
    assert!(
        largest(&far) < 5.0,
        "local coordinates up to {}",
        largest(&far)
    );
    // Where the far frame's origin is in the near one's (whole centimetres: exact in f32).
    let rel: [f32; 3] = std::array::from_fn(|k| o[k] - t[k]);
    let moved = |p: [f32; 4]| -> [f64; 3] { std::array::from_fn(|k| p[k] as f64 + rel[k] as f64) };
    let apart = |a: &[[f32; 4]], b: &[[f32; 4]]| -> f64 {
        assert_eq!(a.len(), b.len());
        a.iter()
            .zip(b)
            .flat_map(|(p, q)| {
                let q = moved(*q);
                (0..3).map(move |k| (q[k] - p[k] as f64).abs())
            })
            .fold(0.0, f64::max)
    };
    // The solids as placed: each sphere's centre, each capsule's (and a figure part's) ends.
    let placed = |s: &Sim| -> Vec<[f32; 4]> {
        s.obstacles
            .iter()
            .filter(|ob| ob.kind != yarnsim::step::OBSTACLE_PLANE)
            .flat_map(|ob| {
                let capsule = ob.kind == yarnsim::step::OBSTACLE_CAPSULE;
                std::iter::once(ob.a).chain(capsule.then_some(ob.b))
            })
            .collect()
    };
    let centres =
        |b: &[yarnsim::balls::BallState]| -> Vec<[f32; 4]> { b.iter().map(|b| b.center).collect() };
    let start = near.pos.clone();
    for frame in 1..=2 {
        near.frame().unwrap();
        far.frame().unwrap();
        for (what, d) in [
            ("cloth", apart(&near.pos, &far.pos)),
            ("ball", apart(&centres(&near.balls), &centres(&far.balls))),
            ("solids", apart(&placed(&near), &placed(&far))),
        ] {
            assert!(d < 1e-5, "frame {frame}: the {what} {d} cm apart");
        }
        // The floor: its point moved, its normal a direction.
        assert_eq!(near.obstacles.len(), 3 + 14);
        assert_eq!(near.obstacles[0].b, far.obstacles[0].b);
        // What leaves the simulation is in the scene's frame.
        let world: Vec<[f32; 3]> = far.curves().into_iter().flat_map(|c| c.points).collect();
        for (w, p) in world.iter().zip(&far.pos) {
            assert_eq!(*w, std::array::from_fn(|k| p[k] + o[k]));
        }
        for (w, b) in far.world_balls().iter().zip(&far.balls) {
            assert_eq!(
                w.center[..3],
                std::array::from_fn::<f32, 3, _>(|k| b.center[k] + o[k])
            );
        }
    }
    // The comparison saw motion: the ball met the cloth, and the sphere, the capsule and the
    // ball moved it (by 0.43 cm at most, measured), the figure walked.
    assert!(near.balls[0].vel[2] > -99.0, "the ball met nothing");
    let most = near
        .pos
        .iter()
        .zip(&start)
        .flat_map(|(p, q)| (0..3).map(move |k| (p[k] - q[k]).abs()))
        .fold(0.0f32, f32::max);
    assert!(most > 0.1, "the cloth moved only {most} cm");
}

/// `local_origin` axis by axis: an axis is shifted to the rounded centre of the cloth's extent on
/// it where the cloth reaches 16 cm or more on it and the shift at least halves that reach. The
/// extents are the scenes' own as they start: the tiny swatch (none), the scarf (y 0.8–59.7: y by
/// 30), the sweater (x ±137, y 118.2–216.2, z ±23.1: y by 167; its sleeves' x cannot be helped).
#[test]
fn the_local_origin_is_chosen_axis_by_axis() {
    let boxed = |lo: [f32; 3], hi: [f32; 3]| -> Vec<[f32; 4]> {
        vec![[lo[0], lo[1], lo[2], 0.0], [hi[0], hi[1], hi[2], 0.0]]
    };
    let origin = |lo, hi| yarnsim::sim::local_origin(&boxed(lo, hi));
    assert_eq!(origin([-2.35, 0.86, -0.22], [2.29, 4.58, 0.14]), [0.0; 3]);
    assert_eq!(
        origin([-19.1, 0.8, -17.3], [19.1, 59.7, 17.1]),
        [0.0, 30.0, 0.0]
    );
    assert_eq!(
        origin([-137.0, 118.2, -23.1], [137.0, 216.2, 23.1]),
        [0.0, 167.0, 0.0]
    );
    // Far along one axis only; an extent that a shift cannot halve (−10 to 40) stays, one it can
    // (0 to 40, to ±20) moves.
    assert_eq!(
        origin([150.0, -10.0, -1.0], [160.0, 40.0, 1.0]),
        [155.0, 0.0, 0.0]
    );
    assert_eq!(
        origin([150.0, 0.0, -1.0], [160.0, 40.0, 1.0]),
        [155.0, 20.0, 0.0]
    );
    // Below 16 cm on every axis nothing moves, even where a shift would halve it.
    assert_eq!(origin([10.0, 10.0, 10.0], [15.0, 15.0, 15.0]), [0.0; 3]);
    assert_eq!(yarnsim::sim::local_origin(&[]), [0.0; 3]);
}

/// A solid reaching where f32 cannot resolve contact near the cloth is refused, as a cloth that
/// far is: a sphere of 1e7 cm standing for the ground (its top at y = 0) threw the swatch resting
/// on it at 14 m/s, where the same sphere of 1e5 cm held it as a plane does.
#[test]
fn a_solid_too_far_for_f32_is_refused() {
    let sphere = |radius: f64| {
        format!(
            "[relax]\ntime = 0\n[[cloth]]\nsource.generator = {{ pattern = \"stockinette\", wales = 4, courses = 4 }}\nrotate_deg = [-90, 0, 0]\ntranslate = [0, 0.5, 0]\n[[obstacle]]\ntype = \"sphere\"\ncenter = [0, {}, 0]\nradius = {radius}\n",
            -radius
        )
    };
    let start = |text: &str| {
        let scene = Scene::from_toml_str(text, "sphere.toml").unwrap();
        let build = build_curves(&scene, std::path::Path::new(".")).unwrap();
        let pins = scene::pinned_points(&scene, &build).unwrap();
        Sim::from_build(&scene, &build, &pins)
            .unwrap()
            .check_start(&build)
    };
    assert!(start(&sphere(1e5)).is_ok());
    let err = start(&sphere(1e7)).unwrap_err().to_string();
    assert!(
        err.contains("obstacle.0 (a sphere) reaches 2e7 cm")
            && err.contains("a plane for a ground"),
        "{err}"
    );
}

/// A solid far past f32's range (a sphere at 1e30 cm, a figure 1e30 cm tall) is refused with its
/// distance and f32's spacing there as numbers: the reach was summed in f32, which overflowed, and
/// the message said it "reaches inf cm ... where f32 coordinates are NaN cm apart (NaN yarn
/// radii)".
#[test]
fn a_solid_past_f32_range_is_refused_with_numbers() {
    let cloth = "[relax]\ntime = 0\n[[cloth]]\nsource.generator = { pattern = \"stockinette\", wales = 4, courses = 4 }\n";
    let start = |extra: &str| {
        let scene = Scene::from_toml_str(&format!("{cloth}{extra}"), "far.toml").unwrap();
        let build = build_curves(&scene, std::path::Path::new(".")).unwrap();
        Sim::from_build(&scene, &build, &[])
            .unwrap()
            .check_start(&build)
            .unwrap_err()
            .to_string()
    };
    for (extra, what) in [
        (
            "[[obstacle]]\ntype = \"sphere\"\ncenter = [1e30, 1e30, 0]\nradius = 1\n",
            "obstacle.0 (a sphere) reaches 1.4",
        ),
        (
            "[[figure]]\nheight = 1e30\nposition = [0, -100, 0]\n",
            "figure.0's",
        ),
        (
            "[[ball]]\ncenter = [1e30, 0, 0]\nradius = 1\n",
            "ball.0 reaches 1e30 cm",
        ),
    ] {
        let err = start(extra);
        assert!(err.contains(what), "{err}");
        assert!(
            !err.contains("inf") && !err.contains("NaN"),
            "{extra}: {err}"
        );
    }
}
