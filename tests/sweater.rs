//! The sweater (scenes/sweater.toml, issue 11 item 2) and its small variant: loop count and segments
//! against the seed's Table 2, a cloth that starts clear of itself and of the figure, sleeves sewn
//! on all round, and a short run of the small one that keeps its topology and its seams. Also the
//! pieces it is made of: `[[seam]]` and a tube's `section`.

use std::path::{Path, PathBuf};
use yarnsim::knit;
use yarnsim::math::V3;
use yarnsim::scene::{self, build_curves, ClothBuild, ClothSource, Obstacle, Scene};
use yarnsim::sim::Sim;

fn scenes() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("scenes")
}

fn load(name: &str) -> (Scene, ClothBuild) {
    let scene = Scene::load(&scenes().join(format!("{name}.toml"))).unwrap();
    let build = build_curves(&scene, &scenes()).unwrap();
    (scene, build)
}

/// Distance from `p` to the surface of the capsule `o` (negative inside).
fn capsule_gap(o: &Obstacle, p: V3<f64>) -> f64 {
    let Obstacle::Capsule { a, b, radius, .. } = o else {
        return f64::INFINITY;
    };
    let (a, b) = (V3::<f64>::from3(*a), V3::<f64>::from3(*b));
    let ab = b - a;
    let l2 = ab.norm2();
    let t = if l2 > 0.0 {
        ((p - a).dot(ab) / l2).clamp(0.0, 1.0)
    } else {
        0.0
    };
    (p - (a + ab * t)).norm() - *radius as f64
}

/// What a garment scene must be at its start: the yarns at least 1.6 r apart where they are not
/// neighbours along a yarn (as the generator promises for one piece, here across the seams too),
/// every yarn at least 2 r from the figure's capsules, and each sleeve sewn to the body by ties at
/// least 2 per wale of its first course, none longer than the seam's distance.
fn check_start(name: &str, sleeve_wales: usize) {
    let (scene, build) = load(name);
    let r = scene.yarn.radius as f64;
    let samples = knit::sample_curves(&build.curves, 8);
    let (d, ..) = knit::min_separation(&samples, 3.0 * r, 3.0 * r);
    assert!(d >= 1.6 * r, "{name}: yarns start {} r apart", d / r);
    let obstacles = scene.obstacles_at(0.0);
    let worst = samples
        .pos
        .iter()
        .flat_map(|p| obstacles.iter().map(|o| capsule_gap(o, *p)))
        .fold(f64::INFINITY, f64::min);
    assert!(worst >= 2.0 * r, "{name}: yarn {worst} cm from the figure");
    assert_eq!(build.seam_ties.len(), 2);
    let points: Vec<[f32; 3]> = build
        .curves
        .iter()
        .flat_map(|c| c.points.iter().copied())
        .collect();
    for (k, &n) in build.seam_ties.iter().enumerate() {
        assert!(n >= 2 * sleeve_wales, "{name}: seam {k} has {n} ties");
    }
    for t in &build.ties {
        let l = (V3::<f64>::from3(points[t[0] as usize]) - V3::<f64>::from3(points[t[1] as usize]))
            .norm();
        assert!(
            l < scene.seam[0].distance as f64,
            "{name}: a tie {l} cm long"
        );
        // Sleeve point tied to a body point.
        assert!(t[0] >= build.piece_first_point[1] && t[1] < build.piece_first_point[1]);
    }
}

/// The seed's sweater: 45,960 loops exactly, segments within 5% of its 370,650.
#[test]
fn sweater_has_the_seed_loop_count_and_starts_clear() {
    let (_, build) = load("sweater");
    assert_eq!(build.loops, 45_960);
    let segments: usize = build.curves.iter().map(|c| c.points.len()).sum();
    let off = segments as f64 / 370_650.0 - 1.0;
    assert!(
        off.abs() < 0.05,
        "{segments} segments, {:.1}% off",
        off * 100.0
    );
    check_start("sweater", 72);
}

#[test]
fn small_sweater_starts_clear() {
    check_start("sweater_small", 13);
}

/// The small sweater (without its relaxation) runs 300 steps as two frames, each ending with the
/// pass-through check, while its figure walks (started at once and fast, 1.5 m/s, so that it moves
/// 2 cm in these 0.019 s and pushes the sweater along with its arms and torso): no
/// NaN, kinetic energy below what the whole cloth could gain falling from its top to the floor, the
/// seams hold (every tie within 5% of its length: the length projection after the ties may stretch
/// one by a step's move), no yarn inside the figure, and the linking certificate of its 62 closed
/// courses is unchanged.
#[test]
fn small_sweater_runs_and_keeps_its_topology() {
    let path = scenes().join("sweater_small.toml");
    let mut scene = Scene::load(&path).unwrap();
    for set in [
        "relax.time=0",
        "simulation.fps=108",
        // Walking from the first step, arms held out as the sleeves were made, at 1.5 m/s.
        "figure.0.start=0",
        "figure.0.arms_deg=90",
        "figure.0.period=0.02",
        "figure.0.speed=150",
    ] {
        scene.apply_set(set).unwrap();
    }
    let build = build_curves(&scene, &scenes()).unwrap();
    let pins = scene::pinned_points(&scene, &build).unwrap();
    let mut sim = Sim::from_build(&scene, &build, &pins).unwrap();
    let mean_z = |pos: &[[f32; 4]]| pos.iter().map(|p| p[2] as f64).sum::<f64>() / pos.len() as f64;
    let before = yarnsim::links::certificate(&sim.curves()).unwrap();
    let start_z = mean_z(&sim.world_pos());
    assert!(before.starts_with("62"), "{before}");
    let top = sim
        .world_pos()
        .iter()
        .map(|p| p[1])
        .fold(f32::MIN, f32::max) as f64;
    let mass: f64 = sim.mass.iter().map(|&m| m as f64).sum();
    let release = mass * 981.0 * top;
    let r = scene.yarn.radius as f64;
    for frame in 1..=2 {
        let st = sim.frame().unwrap_or_else(|e| panic!("frame {frame}: {e}"));
        assert_eq!(st.steps, 150);
        assert!(
            st.kinetic_energy.is_finite() && st.kinetic_energy < release,
            "frame {frame}: KE {}",
            st.kinetic_energy
        );
        let (ties, lengths) = sim.ties();
        for (t, &l) in ties.iter().zip(lengths) {
            let d = (V3::<f64>::from4(sim.pos[t[0] as usize])
                - V3::<f64>::from4(sim.pos[t[1] as usize]))
            .norm();
            assert!(
                d <= l as f64 * 1.05 + 1e-4,
                "frame {frame}: a tie of {l} is {d}"
            );
        }
        let obstacles = scene.obstacles_at(sim.time);
        for p in sim.world_pos().iter() {
            let p = V3::<f64>::from4(*p);
            for o in &obstacles {
                let g = capsule_gap(o, p);
                assert!(g > 0.5 * r, "frame {frame}: a point {g} cm from a capsule");
            }
        }
    }
    // The figure moved forward, and took the sweater along.
    let f = &scene.figure[0];
    let moved = f.parts(sim.time)[3].a[2] - f.parts(0.0)[3].a[2];
    assert!(moved > 1.5, "the figure moved {moved} cm");
    let carried = mean_z(&sim.world_pos()) - start_z;
    assert!(carried > 0.2, "the sweater moved {carried} cm");
    let after = yarnsim::links::certificate(&sim.curves()).unwrap();
    assert_eq!(before, after);
}

/// `seam_ties` finds, for each point of the first set, the nearest point of the second within the
/// distance (the lowest index among equals), as a brute-force search does.
#[test]
fn seam_ties_match_brute_force() {
    let mut seed = 12345u64;
    let mut rnd = || {
        seed = seed
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        ((seed >> 33) as f64 / (1u64 << 31) as f64) as f32
    };
    let a: Vec<[f32; 3]> = (0..400)
        .map(|_| [rnd() * 4.0, rnd() * 4.0, rnd()])
        .collect();
    let b: Vec<[f32; 3]> = (0..500)
        .map(|_| [rnd() * 4.0, rnd() * 4.0, rnd()])
        .collect();
    for distance in [0.05f32, 0.2, 0.7] {
        let ties = yarnsim::ties::seam_ties(&a, 10, &b, 1000, distance);
        let mut want = Vec::new();
        for (i, p) in a.iter().enumerate() {
            let mut best: Option<(f32, usize)> = None;
            for (j, q) in b.iter().enumerate() {
                let d = V3::<f32>::new(q[0] - p[0], q[1] - p[1], q[2] - p[2]).norm();
                if d < distance && best.is_none_or(|(bd, _)| d < bd) {
                    best = Some((d, j));
                }
            }
            if let Some((_, j)) = best {
                want.push([10 + i as u32, 1000 + j as u32]);
            }
        }
        assert!(!want.is_empty());
        assert_eq!(ties, want, "distance {distance}");
    }
}

/// Bad seams and sections are errors naming the key and its line; a seam that finds nothing to
/// sew says so.
#[test]
fn bad_seams_and_sections_are_clear_errors() {
    let two = "[[cloth]]\nsource.generator = { pattern = \"tube\", wales = 8, courses = 2 }\n\
               [[cloth]]\nsource.generator = { pattern = \"tube\", wales = 8, courses = 2 }\n\
               translate = [50, 0, 0]\n";
    for (extra, key, line, what) in [
        (
            "[[seam]]\npieces = [0, 2]\ndistance = 1.0\n",
            "seam.0.pieces",
            7,
            "has 2",
        ),
        (
            "[[seam]]\npieces = [1, 1]\ndistance = 1.0\n",
            "seam.0.pieces",
            7,
            "different",
        ),
        (
            "[[seam]]\npieces = [1, 0]\ndistance = 0.0\n",
            "seam.0.distance",
            8,
            "> 0",
        ),
    ] {
        let err = Scene::from_toml_str(&format!("{two}{extra}"), "x.toml")
            .unwrap_err()
            .to_string();
        assert!(
            err.contains(key) && err.contains(&format!("x.toml:{line}")) && err.contains(what),
            "{extra}: {err}"
        );
    }
    // Valid as read, refused when the cloth is built.
    let build_err = |distance: &str| {
        let seam = format!("{two}[[seam]]\npieces = [1, 0]\ndistance = {distance}\n");
        let scene = Scene::from_toml_str(&seam, "x").unwrap();
        build_curves(&scene, Path::new("."))
            .unwrap_err()
            .to_string()
    };
    // The pieces lie 50 cm apart.
    let err = build_err("1.0");
    assert!(
        err.contains("seam.0") && err.contains("nothing to sew"),
        "{err}"
    );
    // A seam that reaches far past the gap ties one point to more than its ties' colours allow:
    // said of the seam and its distance when the cloth is built, not of a tie when it is stepped.
    let err = build_err("1e30");
    assert!(
        err.starts_with("seam.0: control point ")
            && err.contains("more than the 32 a point can hold")
            && err.contains("1e30 cm reaches too far"),
        "{err}"
    );

    let tube = |section: &str, pattern: &str| {
        format!(
            "[[cloth]]\nsource.generator = {{ pattern = \"{pattern}\", wales = 40, courses = 2, \
             section = {section} }}\n"
        )
    };
    for (section, pattern, what) in [
        (
            "{ depth = 4.0, corner = 0.5 }",
            "tube",
            "corner 0.5 cm is less than",
        ),
        (
            "{ depth = 4.0, corner = 2.5 }",
            "tube",
            "less than twice the corner",
        ),
        (
            "{ depth = 30.0, corner = 1.0 }",
            "tube",
            "no room for the front and back",
        ),
        (
            "{ depth = 4.0, corner = 1.0 }",
            "sack",
            "only a tube takes a section",
        ),
        ("{ depth = 4.0, corners = 1.0 }", "tube", "unknown"),
        (
            "{ depth = inf, corner = 1.0 }",
            "tube",
            "depth inf cm is not a finite number",
        ),
        (
            "{ depth = 4.0, corner = nan }",
            "tube",
            "corner NaN cm is not a finite number",
        ),
    ] {
        let err = Scene::from_toml_str(&tube(section, pattern), "x.toml")
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("cloth.0.source.generator.section") && err.contains("x.toml:2"),
            "{section}: {err}"
        );
        assert!(err.contains(what), "{section}: {err}");
    }
}

/// A tube with a rounded-rectangle section keeps the generator's clearance and its wales'
/// perimeter, and is as deep as asked.
#[test]
fn sectioned_tubes_keep_their_clearance() {
    let r = 0.125f32;
    for (wales, depth, corner) in [(40, 4.0f32, 0.625f32), (35, 8.6, 2.0), (64, 6.0, 3.0)] {
        let k = knit::generate_section(
            scene::Pattern::Tube,
            wales,
            4,
            r,
            Some(knit::Section { depth, corner }),
        )
        .unwrap();
        let s = knit::sample_curves(&k.curves, 24);
        let (d, ..) = knit::min_separation(&s, 3.0 * r as f64, 3.0 * r as f64);
        assert!(
            d >= 1.6 * r as f64,
            "{wales} {depth} {corner}: {} r",
            d / r as f64
        );
        // The loops lie on both sides of the centre line: its depth is the mean of the extremes'.
        let (lo, hi) = k.curves[0]
            .points
            .iter()
            .fold((f32::MAX, f32::MIN), |(l, h), p| (l.min(p[2]), h.max(p[2])));
        assert!(
            ((hi - lo) - depth).abs() < 4.0 * r,
            "{wales}: depth {} vs {depth}",
            hi - lo
        );
        assert_eq!(k.loops, wales * 4);
    }
    // The scene key reaches the generator.
    let (scene, build) = load("sweater_small");
    let ClothSource::Generator { section, .. } = &scene.cloth[0].source else {
        panic!()
    };
    assert!(section.is_some());
    let (lo, hi) = build.curves[0]
        .points
        .iter()
        .fold((f32::MAX, f32::MIN), |(l, h), p| (l.min(p[2]), h.max(p[2])));
    assert!((hi - lo - 8.6).abs() < 0.5, "{}", hi - lo);
}

/// The ties' colouring: no two ties of a colour share a point, each colour keeps the input order,
/// and every input tie appears once (`order` maps back to it).
#[test]
fn tie_colours_share_no_point() {
    let mut seed = 99u64;
    let mut rnd = |n: u32| {
        seed = seed
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        ((seed >> 33) % n as u64) as u32
    };
    let ties: Vec<[u32; 2]> = (0..300)
        .map(|_| loop {
            let (a, b) = (rnd(60), rnd(60));
            if a != b {
                break [a, b];
            }
        })
        .collect();
    let c = yarnsim::ties::color_ties(&ties).unwrap();
    assert!(c.color_start.len() > 3, "{:?}", c.color_start);
    assert_eq!(*c.color_start.last().unwrap() as usize, ties.len());
    for w in c.color_start.windows(2) {
        let mut seen = std::collections::HashSet::new();
        let range = w[0] as usize..w[1] as usize;
        for k in range.clone() {
            assert!(
                seen.insert(c.ties[k][0]) && seen.insert(c.ties[k][1]),
                "shared point"
            );
        }
        assert!(c.order[range.clone()].windows(2).all(|o| o[0] < o[1]));
    }
    let mut order = c.order.clone();
    for (k, &o) in c.order.iter().enumerate() {
        assert_eq!(c.ties[k], ties[o]);
    }
    order.sort_unstable();
    assert_eq!(order, (0..ties.len()).collect::<Vec<_>>());
}

/// `yarnsim info` counts the seams' ties and the walking figures.
#[test]
fn info_counts_ties_and_figures() {
    let path = scenes().join("sweater_small.toml");
    let run = |json: bool| {
        let mut c = std::process::Command::new(env!("CARGO_BIN_EXE_yarnsim"));
        c.arg("info").arg(&path);
        if json {
            c.arg("--json");
        }
        let out = c.output().unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).unwrap()
    };
    let v: serde_json::Value = serde_json::from_str(&run(true)).unwrap();
    let (scene, build) = load("sweater_small");
    assert_eq!(v["ties"], build.ties.len());
    assert_eq!(v["figures"], 1);
    assert_eq!(v["obstacles"], scene.obstacle.len());
    assert_eq!(v["loops"], 1_246);
    let text = run(false);
    assert!(
        text.contains(&format!("ties              {}", build.ties.len())),
        "{text}"
    );
    assert!(text.contains("walking figures   1 (14 capsules"), "{text}");
}
