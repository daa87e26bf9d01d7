//! Free rigid balls ([`yarnsim::balls`], scene key `[[ball]]`): ball–ball contact conserves linear
//! and angular momentum; a ball dropped on the floor bounces, then settles; a ball sliding on the
//! floor ends up rolling at 5/7 of its speed (the rigid-body result); yarn–ball contact conserves
//! the momentum of yarn and ball together; a pinned swatch catches a dropped ball; a checkpoint
//! carries the balls bit for bit; bad ball keys are clear errors; `--backend gpu` runs balls
//! (tests/gpu_balls.rs compares the GPU's ball stages with the CPU's).

use std::path::{Path, PathBuf};
use std::process::Command;

use yarnsim::balls::{self, BallState};
use yarnsim::layout::{Counters, ObstacleShape, Params};
use yarnsim::scene::{self, Scene};
use yarnsim::sim::Sim;
use yarnsim::step::OBSTACLE_PLANE;

const H: f32 = 1.0 / 16200.0;

fn floor() -> ObstacleShape {
    ObstacleShape {
        kind: OBSTACLE_PLANE,
        friction: 0.5,
        a: [0.0; 4],
        b: [0.0, 1.0, 0.0, 0.0],
        ..Default::default()
    }
}

/// One step of the balls alone (no yarn): the stages in the order the simulation runs them.
fn ball_step(g: [f32; 3], obstacles: &[ObstacleShape], b: &mut [BallState]) {
    let params = Params {
        h: H,
        gravity_x: g[0],
        gravity_y: g[1],
        gravity_z: g[2],
        num_obstacles: obstacles.len() as u32,
        num_balls: b.len() as u32,
        ..Params::default()
    };
    let mut count = vec![0; b.len()];
    let mut pairs = vec![0; b.len() * b.len()];
    let mut counters = Counters {
        first_bad_ball: u32::MAX,
        ..Counters::default()
    };
    balls::ball_velocity(&params, b, &mut count);
    balls::ball_contact(&params, obstacles, b, &mut pairs, &mut counters);
    assert_eq!(counters.errors, 0);
    balls::ball_position(&params, b);
}

fn sum(b: &[BallState], f: impl Fn(&BallState) -> yarnsim::math::V3<f64>) -> [f64; 3] {
    let mut s = [0.0; 3];
    for x in b {
        let v = f(x);
        s[0] += v.x;
        s[1] += v.y;
        s[2] += v.z;
    }
    s
}

/// Two balls of different sizes and masses, one spinning, meet off-centre with friction and
/// without gravity: the sums of `M v` and of `c × M v + I ω` stay what they were (to f32 rounding
/// of the impulses: relative 1e-5 of the momentum scale), the collision happened (both velocities
/// turned), and the balls end apart.
#[test]
fn ball_pair_conserves_linear_and_angular_momentum() {
    let mut a = BallState::new([0.0, 0.0, 0.0], 1.0, 4.0, 0.6, 0.7);
    let mut b = BallState::new([6.0, 0.8, 0.3], 1.5, 9.0, 0.4, 0.3);
    a.vel[0] = 120.0;
    a.omega[1] = 30.0;
    b.vel[0] = -40.0;
    b.vel[2] = 5.0;
    let mut bs = [a, b];
    let p0 = sum(&bs, |x| x.momentum());
    let l0 = sum(&bs, |x| x.angular_momentum());
    let (v0a, v0b) = (bs[0].velocity(), bs[1].velocity());
    for _ in 0..1620 {
        ball_step([0.0; 3], &[], &mut bs);
    }
    let p1 = sum(&bs, |x| x.momentum());
    let l1 = sum(&bs, |x| x.angular_momentum());
    let scale = 4.0 * 120.0 + 9.0 * 40.0;
    for k in 0..3 {
        assert!(
            (p1[k] - p0[k]).abs() < 1e-5 * scale,
            "linear momentum {p0:?} -> {p1:?}"
        );
        // Lever arms of a few cm.
        assert!(
            (l1[k] - l0[k]).abs() < 1e-5 * scale * 10.0,
            "angular momentum {l0:?} -> {l1:?}"
        );
    }
    assert!(bs[0].velocity().x < v0a.x - 50.0 && bs[1].velocity().x > v0b.x + 20.0);
    // Friction spun the second ball.
    assert!(bs[1].spin().norm() > 1.0, "{:?}", bs[1].spin());
    let gap = (bs[1].pos() - bs[0].pos()).norm() - 2.5;
    assert!(gap > 0.0, "the balls overlap by {}", -gap);
}

/// A ball dropped from 10 cm above the floor (restitution 0.5): it never sinks into the floor by
/// more than one step of its fastest motion, comes back up after the first impact (a bounce of
/// about e² × 10 cm = 2.5 cm; asserted above 1.5 cm), and within 2 s rests on the floor (slower
/// than 0.5 cm/s, its centre within 0.01 cm of its radius).
#[test]
fn dropped_ball_bounces_then_settles() {
    let r = 2.0;
    let mut bs = [BallState::new([0.0, r + 10.0, 0.0], r, 30.0, 0.5, 0.5)];
    let g = [0.0, -981.0, 0.0];
    let (mut touched, mut top_after) = (false, 0.0f32);
    let mut lowest = f32::MAX;
    for _ in 0..(2.0 / H) as usize {
        ball_step(g, &[floor()], &mut bs);
        let y = bs[0].center[1];
        lowest = lowest.min(y);
        if y < r + 0.01 {
            touched = true;
        }
        if touched {
            top_after = top_after.max(y - r);
        }
    }
    let fastest = (2.0f32 * 981.0 * 10.0).sqrt();
    assert!(touched, "never reached the floor");
    assert!(lowest > r - fastest * H, "sank to {lowest}");
    assert!(top_after > 1.5, "bounced only {top_after} cm");
    assert!(top_after < 10.0, "bounced to {top_after} cm: energy gained");
    let b = bs[0];
    assert!(
        b.velocity().norm() < 0.5,
        "still moving: {:?}",
        b.velocity()
    );
    assert!((b.center[1] - r).abs() < 0.01, "rests at {}", b.center[1]);
}

/// A ball launched sliding along the floor without spin: friction slows it and spins it up until
/// it rolls (`v = ω R`), at 5/7 of its launch speed (a solid sphere's result, independent of μ).
#[test]
fn sliding_ball_rolls_at_five_sevenths() {
    let r = 1.0;
    let mut bs = [BallState::new([0.0, r, 0.0], r, 10.0, 0.5, 0.0)];
    bs[0].vel[0] = 100.0;
    let g = [0.0, -981.0, 0.0];
    for _ in 0..16200 {
        ball_step(g, &[floor()], &mut bs);
    }
    let b = bs[0];
    let v = b.velocity().x;
    assert!(
        (v - 100.0 * 5.0 / 7.0).abs() < 0.5,
        "rolls at {v} cm/s, not 71.4"
    );
    // Rolling: the contact point is at rest (ω_z = −v / R for motion along +x).
    assert!((b.spin().z + v / r).abs() < 0.5, "spin {:?}", b.spin());
}

fn scratch(name: &str) -> PathBuf {
    let d = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("balls-{name}"));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// A scene file in its own directory.
fn scene_file(name: &str, text: &str) -> PathBuf {
    let p = scratch(name).join("scene.toml");
    std::fs::write(&p, text).unwrap();
    p
}

fn sim_of(path: &Path) -> (Scene, Sim) {
    let scene = Scene::load(path).unwrap();
    let build = scene::build_curves(&scene, path.parent().unwrap()).unwrap();
    let pins = scene::pinned_points(&scene, &build).unwrap();
    let sim = Sim::from_build(&scene, &build, &pins).unwrap();
    (scene, sim)
}

/// The yarn's momentum `Σ m v` and the balls'.
fn momenta(sim: &Sim) -> ([f64; 3], [f64; 3]) {
    let mut y = [0.0; 3];
    for (v, &m) in sim.vel.iter().zip(&sim.mass) {
        for k in 0..3 {
            y[k] += v[k] as f64 * m as f64;
        }
    }
    (y, sum(&sim.balls, |b| b.momentum()))
}

/// A free-floating swatch (no gravity, no pins, no obstacles, exact yarn contact) struck by a ball
/// at 100 cm/s: every stage is internal to yarn and ball, so their summed momentum stays what it
/// was, while a sizeable part of it moves from the ball to the yarn. The bound, 1e-3 of the
/// ball's momentum over the 800 steps, covers the f32 rounding of the per-point velocity updates
/// (length projection and damping round each point's velocity to f32 every step).
#[test]
fn yarn_and_ball_exchange_momentum_and_conserve_it() {
    let path = scene_file(
        "exchange",
        r#"
[simulation]
gravity = [0, 0, 0]
[contact]
model = "exact"
[relax]
time = 0
[[cloth]]
source.generator = { pattern = "stockinette", wales = 6, courses = 6 }
[[ball]]
center = [1.2, 1.0, 3.0]
radius = 1.0
mass = 0.5
velocity = [0, 0, -100]
"#,
    );
    let (_, mut sim) = sim_of(&path);
    let (y0, b0) = momenta(&sim);
    let scale = b0[2].abs();
    for _ in 0..800 {
        sim.step().unwrap();
    }
    let (y1, b1) = momenta(&sim);
    for k in 0..3 {
        let before = y0[k] + b0[k];
        let after = y1[k] + b1[k];
        assert!(
            (after - before).abs() < 1e-3 * scale,
            "axis {k}: momentum {before} -> {after} (yarn {:?}, ball {:?})",
            y1,
            b1
        );
    }
    assert!(
        b1[2] > 0.8 * b0[2] && y1[2] < -0.2 * scale,
        "little exchanged: ball {b0:?} -> {b1:?}, yarn {y0:?} -> {y1:?}"
    );
}

/// The scene of the hammock tests: a swatch lying flat, pinned along two opposite edges, and a
/// ball dropped onto its middle.
fn hammock(name: &str) -> PathBuf {
    // The generator's 8 × 8 swatch, turned flat and raised, spans x −4.45..4.39, z −3.64..3.08 at
    // y 29.86..30.22; its four edges are pinned. It sags under its own weight, so the floor is far.
    scene_file(
        name,
        r#"
[simulation]
frames = 3
[relax]
time = 0
[[cloth]]
source.generator = { pattern = "stockinette", wales = 8, courses = 8 }
rotate_deg = [90, 0, 0]
translate = [0, 30, 0]
[[pin]]
region = { min = [-5, 29, -5], max = [-4.1, 31, 5] }
[[pin]]
region = { min = [4.0, 29, -5], max = [5, 31, 5] }
[[pin]]
region = { min = [-5, 29, -5], max = [5, 31, -3.3] }
[[pin]]
region = { min = [-5, 29, 2.75], max = [5, 31, 5] }
[[obstacle]]
type = "plane"
point = [0, 0, 0]
normal = [0, 1, 0]
[[ball]]
center = [0, 32.5, 0]
radius = 1.2
density = 0.3
"#,
    )
}

/// The pinned swatch catches the ball, which bounces on it as on a trampoline: at every step of
/// 0.4 s the ball's lowest point stays above the cloth's lowest point (less the yarn radius: the
/// cloth wraps the ball), and the ball stays over the swatch. A ball that went through would end
/// below the cloth, falling freely.
#[test]
fn pinned_swatch_catches_a_dropped_ball() {
    let (_, mut sim) = sim_of(&hammock("catch"));
    let steps = (0.4 * 16200.0) as usize;
    let mut fell = 0.0f32;
    for s in 0..steps {
        sim.step().unwrap();
        let lowest = sim.pos.iter().map(|p| p[1]).fold(f32::MAX, f32::min);
        let b = sim.balls[0];
        let bottom = b.center[1] - b.radius();
        assert!(
            bottom > lowest - 0.125,
            "step {s}: the ball's bottom {bottom} is below the cloth ({lowest})"
        );
        assert!(
            b.center[0].abs() < 3.0 && b.center[2].abs() < 3.0,
            "{:?}",
            b.center
        );
        fell = fell.max(32.5 - b.center[1]);
    }
    assert!(
        fell > 2.5,
        "the ball never reached the cloth (fell {fell} cm)"
    );
}

/// The small sack (scenes/sack_small.toml, without its relaxation, which takes minutes) holds its
/// balls: over 5 frames (2,700 steps, each frame ending with the pass-through check; frame 5, where
/// the sack has stretched most and its neighbouring heads are pressed together, once raised a
/// false alarm, see `Sim::check_pass_through`) every ball stays above the bottom seam (the
/// cloth's lowest point) and inside the cloth's horizontal extent, the kinetic energy stays below
/// the potential energy the whole scene can release (a blow-up would pass it), and the balls fall
/// onto the seam (their bottoms end within 1 cm of the cloth's lowest point).
#[test]
fn small_sack_holds_its_balls() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("scenes/sack_small.toml");
    let mut scene = Scene::load(&path).unwrap();
    scene.apply_set("relax.time=0").unwrap();
    let build = scene::build_curves(&scene, path.parent().unwrap()).unwrap();
    assert!(!build.ties.is_empty(), "the sack's bottom has no seam");
    let pins = scene::pinned_points(&scene, &build).unwrap();
    let mut sim = Sim::from_build(&scene, &build, &pins).unwrap();
    let top = sim.pos.iter().map(|p| p[1]).fold(f32::MIN, f32::max);
    let mass: f64 = sim.mass.iter().map(|&m| m as f64).sum::<f64>()
        + sim.balls.iter().map(|b| b.mass as f64).sum::<f64>();
    let release = mass * 981.0 * top as f64;
    const FRAMES: u32 = 5;
    for frame in 1..=FRAMES {
        let st = sim.frame().unwrap_or_else(|e| panic!("frame {frame}: {e}"));
        let ke = st.kinetic_energy;
        assert!(ke.is_finite() && ke < release, "frame {frame}: KE {ke}");
        let lowest = sim.pos.iter().map(|p| p[1]).fold(f32::MAX, f32::min);
        let (mut lo, mut hi) = ([f32::MAX; 2], [f32::MIN; 2]);
        for p in &sim.pos {
            for (k, a) in [0, 2].into_iter().enumerate() {
                lo[k] = lo[k].min(p[a]);
                hi[k] = hi[k].max(p[a]);
            }
        }
        for (i, b) in sim.balls.iter().enumerate() {
            let c = b.center;
            assert!(
                c[1] > lowest && c[0] > lo[0] && c[0] < hi[0] && c[2] > lo[1] && c[2] < hi[1],
                "frame {frame}: ball {i} at {c:?} is outside the sack (lowest {lowest}, x {}..{}, z {}..{})",
                lo[0],
                hi[0],
                lo[1],
                hi[1]
            );
        }
        if frame == FRAMES {
            for (i, b) in sim.balls.iter().enumerate() {
                let above = b.center[1] - b.radius() - lowest;
                assert!(above < 1.0, "ball {i} is {above} cm above the seam");
            }
        }
    }
}

/// A checkpoint taken mid-drop restores the balls bit for bit; the restored run steps as the
/// original, balls included.
#[test]
fn checkpoint_carries_the_balls() {
    let path = hammock("checkpoint");
    let (scene, mut a) = sim_of(&path);
    for _ in 0..300 {
        a.step().unwrap();
    }
    let dir = path.parent().unwrap();
    let bytes = yarnsim::checkpoint::encode(&a, &scene, dir, serde_json::Value::Null).unwrap();
    let ck = yarnsim::checkpoint::Checkpoint::decode(bytes, "memory").unwrap();
    let mut b = ck.build_sim().unwrap();
    let bits = |s: &Sim| {
        let mut v: Vec<u32> = s.pos.iter().flatten().map(|x| x.to_bits()).collect();
        v.extend(bytemuck::cast_slice::<_, u32>(&s.balls));
        v
    };
    assert!(bits(&a) == bits(&b));
    for _ in 0..200 {
        a.step().unwrap();
        b.step().unwrap();
    }
    assert!(bits(&a) == bits(&b), "the runs differ after resuming");
}

/// Scene errors name the key and its line; balls that overlap at the start are refused.
#[test]
fn bad_ball_keys_are_clear_errors() {
    let base =
        "[[cloth]]\nsource.generator = { pattern = \"stockinette\", wales = 2, courses = 2 }\n";
    let cases = [
        ("[[ball]]\nradius = -1\n", "ball.0.radius", 4),
        ("[[ball]]\nrestitution = 1.5\n", "ball.0.restitution", 4),
        ("[[ball]]\nmass = 0\n", "ball.0.mass", 4),
        ("[[ball]]\nradus = 1\n", "ball.0.radus", 4),
        (
            "[[ball]]\ncenter = [0, 0, 0]\n[[ball]]\ncenter = [0.5, 0, 0]\n",
            "ball.1.center",
            6,
        ),
    ];
    for (k, (text, key, line)) in cases.iter().enumerate() {
        let p = scene_file(&format!("bad{k}"), &format!("{base}{text}"));
        let err = Scene::load(&p).unwrap_err().to_string();
        assert!(
            err.contains(key) && err.contains(&format!(":{line}:")),
            "{text:?}: {err}"
        );
    }
}

/// `--backend gpu` runs a scene with balls: two frames of 30 steps of the ball falling onto the
/// pinned swatch, each frame's balls written as CSV (downloaded from the GPU), the ball falling.
#[test]
fn gpu_backend_runs_balls() {
    if yarnsim::gpu::testing::gpu_or_skip("gpu_backend_runs_balls").is_none() {
        return;
    }
    let p = hammock("gpu");
    let out_dir = p.parent().unwrap().join("out");
    let out = Command::new(env!("CARGO_BIN_EXE_yarnsim"))
        .args(["run", "--backend", "gpu", "--frames", "2", "-q"])
        .args([
            "--set",
            "simulation.fps=540",
            "--set",
            "contact.model=none",
            "--out",
        ])
        .arg(&out_dir)
        .arg(&p)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    let height = |k: u32| -> (f32, f32) {
        let text = std::fs::read_to_string(out_dir.join(format!("frame_{k:04}_balls.csv")))
            .unwrap_or_else(|e| panic!("frame {k}: {e}"));
        let row: Vec<f32> = text
            .lines()
            .nth(1)
            .unwrap()
            .split(',')
            .map(|x| x.parse().unwrap())
            .collect();
        (row[1], row[5])
    };
    let (y0, v0) = height(0);
    let (y2, v2) = height(2);
    assert_eq!((y0, v0), (32.5, 0.0));
    // 60 steps of free fall (velocity first): v = −60 g h = −3.633 cm/s, and the centre
    // g h² (1 + 2 + … + 60) = 0.00684 cm lower.
    assert!(
        (v2 + 3.633).abs() < 0.005 && (y0 - y2 - 0.00684).abs() < 1e-4,
        "{y2} {v2}"
    );
}

/// The kinetic energy of a ball too fast for an f32 square is a number, not inf: summed in f64.
#[test]
fn a_fast_balls_kinetic_energy_is_finite() {
    let path = scene_file(
        "fast",
        "[[cloth]]\nsource.generator = { pattern = \"garter\", wales = 2, courses = 2 }\n\
         [[ball]]\ncenter = [0, 50, 0]\nradius = 1\nvelocity = [0, -1e30, 0]\n",
    );
    let (_, sim) = sim_of(&path);
    let (ke, _) = sim.kinetic_energy_and_max_speed();
    let mass = sim.balls[0].mass as f64;
    let want = 0.5 * mass * (1e30f32 as f64).powi(2);
    assert!(
        ke.is_finite() && (ke - want).abs() <= 1e-12 * want,
        "{ke} vs {want}"
    );
}

/// What a ball cannot start or end a frame as: sunk into a solid (the first step's impulse threw
/// a ball started 7 cm inside a floor out at 1.3 km/s, and the run went on), or past f32 (a ball
/// launched at 3e38 cm/s was written as `inf,inf` and the run exited 0). A ball resting on the
/// floor, touching it, starts.
#[test]
fn a_ball_in_a_solid_or_past_f32_is_an_error() {
    let run = |name: &str, ball: &str, extra: &[&str]| {
        let p = scene_file(
            name,
            &format!(
                "[simulation]\nframes = 1\ngravity = [0, 0, 0]\n[relax]\ntime = 0\n[[cloth]]\nsource.generator = {{ pattern = \"stockinette\", wales = 4, courses = 4 }}\n[[obstacle]]\ntype = \"plane\"\npoint = [0, -5, 0]\nnormal = [0, 1, 0]\n[[ball]]\n{ball}\n"
            ),
        );
        Command::new(env!("CARGO_BIN_EXE_yarnsim"))
            .args(["run", "-q", "--set", "contact.model=none"])
            .args(extra)
            .arg(&p)
            .output()
            .unwrap()
    };
    let out = run("sunk", "center = [20, -10, 0]\nradius = 1", &[]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains("ball.0 starts inside obstacle.0 (a plane): its centre is 5.000 cm inside it")
            && err.contains("ball.0.center"),
        "{err}"
    );
    // `info` says so too (it said the scene fits).
    let sunk = Path::new(env!("CARGO_TARGET_TMPDIR")).join("balls-sunk/scene.toml");
    let out = Command::new(env!("CARGO_BIN_EXE_yarnsim"))
        .arg("info")
        .arg(&sunk)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains("yarnsim run would refuse this scene as it starts")
            && err.contains("ball.0 starts inside obstacle.0"),
        "{err}"
    );
    let out = run("resting", "center = [20, -4, 0]\nradius = 1", &[]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // Far from the cloth and the floor, flying off at nearly f32's largest speed: past f32
    // within the second frame's 16,200 steps.
    let out = run(
        "inf",
        "center = [100, 0, 0]\nradius = 1\nvelocity = [3e38, 0, 0]",
        &["--frames", "2", "--set", "simulation.fps=1"],
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains("frame 2 of ") && err.contains("ball.0's position is not finite"),
        "{err}"
    );
}
