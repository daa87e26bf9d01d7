//! Scene files: loading, error reporting (file, line, dotted key) and `--set` overrides.

use std::path::{Path, PathBuf};
use yarnsim::scene::{ClothSource, ContactModel, Obstacle, Pattern, Pin, Scene, SceneError};

/// A scratch directory for this test process.
fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("yarnsim-scene-{}-{name}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, text).unwrap();
    p
}

const MINIMAL: &str = r#"
[[cloth]]
source.generator = { pattern = "stockinette", wales = 4, courses = 3 }
"#;

/// Loads `text` from a file and returns the error, checking it names the file.
fn load_err(name: &str, text: &str) -> SceneError {
    let dir = scratch(name);
    let path = write(&dir, "s.toml", text);
    let err = Scene::load(&path).expect_err("the scene must not load");
    let msg = err.to_string();
    assert!(msg.contains(&path.display().to_string()), "{msg}");
    err
}

#[test]
fn minimal_scene_gets_table1_defaults() {
    let s = Scene::from_toml_str(MINIMAL, "m.toml").unwrap();
    assert_eq!(s.yarn.radius, 0.125);
    assert_eq!(s.simulation.dt, 1.0 / 16200.0);
    assert_eq!(s.contact.quadrature, 11);
    assert_eq!(s.contact.padding, 3);
    assert_eq!(s.contact.grid_cell, 0.6);
    assert_eq!(s.contact.max_bin, 8);
    assert_eq!(s.contact.omega, 0.0006);
    assert_eq!(s.contact.tolerance, 0.04);
    assert_eq!(s.contact.model, ContactModel::Acl);
    assert_eq!(s.yarn.plastic_radius, 0.01);
    assert_eq!(s.yarn.plastic_max, 2.5);
    assert_eq!(s.yarn.damping_const, 500.0);
    assert_eq!(s.cloth.len(), 1);
    assert_eq!(s.cloth[0].scale, 1.0);
    assert_eq!(
        s.cloth[0].source,
        ClothSource::Generator {
            pattern: Pattern::Stockinette,
            wales: 4,
            courses: 3,
            section: None,
        }
    );
}

#[test]
fn missing_file() {
    let err = Scene::load(Path::new("/nonexistent/yarnsim/none.toml")).unwrap_err();
    assert!(matches!(err, SceneError::Io { .. }));
    assert!(
        err.to_string().contains("/nonexistent/yarnsim/none.toml"),
        "{err}"
    );
}

#[test]
fn syntax_error_names_line_and_key() {
    let text = format!("{MINIMAL}\n[simulation]\nframes = 3\ndt = 1.0.0\n");
    let err = load_err("syntax", &text);
    assert!(matches!(err, SceneError::Syntax { .. }), "{err}");
    assert_eq!(err.line(), Some(7), "{err}");
    assert_eq!(err.key(), Some("simulation.dt"), "{err}");
    assert!(err.to_string().contains(":7: simulation.dt:"), "{err}");

    // An unclosed table header: the line is right even though there is no key yet.
    let err = load_err("syntax2", "[simulation\ndt = 0.001\n");
    assert!(matches!(err, SceneError::Syntax { line: 1, .. }), "{err}");
}

#[test]
fn unknown_keys_name_line_and_dotted_key() {
    // A key in a plain table.
    let err = load_err(
        "unknown1",
        &format!("{MINIMAL}\n[contact]\nstiffness = 3000\nstifness = 1\n"),
    );
    assert!(matches!(err, SceneError::UnknownKey { .. }), "{err}");
    assert_eq!(err.line(), Some(7));
    assert_eq!(err.key(), Some("contact.stifness"));
    assert!(
        err.to_string()
            .contains(":7: contact.stifness: unknown key"),
        "{err}"
    );

    // A top-level key.
    let err = load_err("unknown2", &format!("frame = 3\n{MINIMAL}"));
    assert_eq!((err.line(), err.key()), (Some(1), Some("frame")), "{err}");

    // Inside an inline table of an array-of-tables entry.
    let text = "[[cloth]]\nsource.generator = { pattern = \"stockinette\", wales = 3, courses = 4 }\n\
                [[cloth]]\nscale = 2\nsource.generator = { pattern = \"rib\", wales = 3, courses = 4, colour = 1 }\n";
    let err = load_err("unknown3", text);
    assert!(matches!(err, SceneError::UnknownKey { .. }), "{err}");
    assert_eq!(err.line(), Some(5), "{err}");
    assert_eq!(err.key(), Some("cloth.1.source.generator.colour"), "{err}");

    // In an internally tagged obstacle table (serde reports the whole table; we find the key).
    let text = format!(
        "{MINIMAL}\n[[obstacle]]\ntype = \"sphere\"\ncenter = [0, 0, 0]\nradius = 1\nfriction = 0.2\nbounce = 1\n"
    );
    let err = load_err("unknown4", &text);
    assert!(matches!(err, SceneError::UnknownKey { .. }), "{err}");
    assert_eq!(
        (err.line(), err.key()),
        (Some(10), Some("obstacle.0.bounce")),
        "{err}"
    );

    // A sub-table the scene does not have.
    let err = load_err(
        "unknown5",
        &format!("{MINIMAL}\n[yarn]\nradius = 0.1\n[yarn.colour]\nr = 1\n"),
    );
    assert_eq!(err.key(), Some("yarn.colour"), "{err}");
    assert_eq!(err.line(), Some(7), "{err}");
}

#[test]
fn out_of_range_values_name_line_and_key() {
    let cases: &[(&str, usize, &str)] = &[
        ("[contact]\nquadrature = 33\n", 6, "contact.quadrature"),
        ("[contact]\nquadrature = 0\n", 6, "contact.quadrature"),
        ("[contact]\ntolerance = -0.1\n", 6, "contact.tolerance"),
        ("[contact]\nstiffness = nan\n", 6, "contact.stiffness"),
        (
            "[yarn]\nlinear_density = 0.003\nradius = -0.125\n",
            7,
            "yarn.radius",
        ),
        ("[yarn]\nradius = 0\n", 6, "yarn.radius"),
        ("[simulation]\ndt = 0.5\n", 6, "simulation.dt"),
        ("[simulation]\ndt = 0.0\n", 6, "simulation.dt"),
        (
            "[simulation]\nfps = 30\ndt = 0.001\nframes = 0\n",
            8,
            "simulation.frames",
        ),
        (
            "[simulation]\ngravity = [0, inf, 0]\n",
            6,
            "simulation.gravity",
        ),
        (
            "[[obstacle]]\ntype = \"sphere\"\ncenter = [0, 0, 0]\nradius = -1\n",
            8,
            "obstacle.0.radius",
        ),
        (
            "[[obstacle]]\ntype = \"plane\"\npoint = [0, 0, 0]\nnormal = [0, 0, 0]\n",
            8,
            "obstacle.0.normal",
        ),
        (
            "[[pin]]\nrange = { first = 5, last = 2 }\n",
            6,
            "pin.0.range.last",
        ),
        ("[camera]\nfov_deg = 200\n", 6, "camera.fov_deg"),
        // The renderer's rules, when the scene loads (they were met at the first capture, after
        // the relaxation): too far for f32, and coinciding as f32 though not as written.
        ("[camera]\nposition = [0, 0, 1e30]\n", 6, "camera.position"),
        (
            "[camera]\nposition = [0, 1e-9, 0]\ntarget = [0, 0, 0]\n",
            7,
            "camera.target",
        ),
        // More steps in a frame than a frame may take (it said "less than one").
        (
            "[simulation]\nfps = 0.001\ndt = 1e-8\n",
            6,
            "simulation.fps",
        ),
        // Past what ACL's scheduler takes (documented up to 32, which exact contact takes).
        ("[contact]\nquadrature = 12\n", 6, "contact.quadrature"),
        // A rule about a key the file leaves at its default, broken by another it sets: that
        // line (it named line 1, or the rule's table).
        ("[yarn]\nradius = 0.5\n", 6, "contact.exclusion_arc"),
        // Finer than a segment may cover (it failed at the first step).
        ("[contact]\ngrid_cell = 0.03\n", 6, "contact.grid_cell"),
    ];
    for (i, (extra, line, key)) in cases.iter().enumerate() {
        let err = load_err(&format!("range{i}"), &format!("{MINIMAL}\n{extra}"));
        assert!(matches!(err, SceneError::Invalid { .. }), "{extra}: {err}");
        assert_eq!(err.line(), Some(*line), "{extra}: {err}");
        assert_eq!(err.key(), Some(*key), "{extra}: {err}");
    }
    // A key inside an array-of-tables entry with an inline source.
    let text = "[[cloth]]\nsource.generator = { pattern = \"stockinette\", wales = 3, courses = 4 }\nscale = -2\n";
    let err = load_err("range-cloth", text);
    assert_eq!(
        (err.line(), err.key()),
        (Some(3), Some("cloth.0.scale")),
        "{err}"
    );
    let text =
        "[[cloth]]\nsource.generator = { pattern = \"stockinette\", wales = 3, courses = 0 }\n";
    let err = load_err("range-courses", text);
    assert_eq!(
        (err.line(), err.key()),
        (Some(2), Some("cloth.0.source.generator.courses")),
        "{err}"
    );
    // No cloth at all.
    let err = load_err("nocloth", "[yarn]\nradius = 0.1\n");
    assert_eq!(err.key(), Some("cloth"), "{err}");
}

#[test]
fn wrong_types_name_line_and_key() {
    let err = load_err(
        "type1",
        &format!("{MINIMAL}\n[contact]\nmodel = \"fast\"\n"),
    );
    assert!(matches!(err, SceneError::Invalid { .. }), "{err}");
    assert_eq!(
        (err.line(), err.key()),
        (Some(6), Some("contact.model")),
        "{err}"
    );
    let err = load_err("type2", &format!("{MINIMAL}\n[simulation]\nframes = -3\n"));
    assert_eq!(
        (err.line(), err.key()),
        (Some(6), Some("simulation.frames")),
        "{err}"
    );
    let err = load_err(
        "type3",
        &format!(
            "{MINIMAL}\n[[obstacle]]\ntype = \"sphere\"\ncenter = [0, 0, 0]\nradius = \"big\"\n"
        ),
    );
    assert_eq!(
        (err.line(), err.key()),
        (Some(8), Some("obstacle.0.radius")),
        "{err}"
    );
    let err = load_err(
        "type4",
        &format!("{MINIMAL}\n[[pin]]\nregion = {{ min = [0, 0, 0], max = [1, 1] }}\n"),
    );
    assert_eq!(
        (err.line(), err.key()),
        (Some(6), Some("pin.0.region.max")),
        "{err}"
    );
}

/// An array with more entries than its field has is refused as one with fewer is, naming its line
/// and key (serde reads N entries of a `[T; N]` and the TOML reader let the rest pass: `gravity =
/// [0, -981, 0, 1]` ran as `[0, -981, 0]`), in every section, `--set` included.
#[test]
fn arrays_with_too_many_entries_name_line_and_key() {
    let cases = [
        (
            "[simulation]\ngravity = [0, -981, 0, 1]\n",
            "simulation.gravity",
            1,
        ),
        ("[camera]\ntarget = [0, 0, 0, 0]\n", "camera.target", 1),
        (
            "[[obstacle]]\ntype = \"plane\"\npoint = [0, 0, 0]\nnormal = [0, 1, 0, 0]\n",
            "obstacle.0.normal",
            3,
        ),
        (
            "[[obstacle]]\ntype = \"sphere\"\ncenter = [0, -50, 0]\nradius = 1\n\
             keyframes = [{ t = 0, offset = [0, 0, 0] }, { t = 1, offset = [1, 1, 1, 1] }]\n",
            "obstacle.0.keyframes.1.offset",
            4,
        ),
        (
            "[[pin]]\nregion = { min = [0, 0, 0, 0], max = [1, 1, 1] }\n",
            "pin.0.region.min",
            1,
        ),
        (
            "[[seam]]\npieces = [0, 0, 1]\ndistance = 1\n",
            "seam.0.pieces",
            1,
        ),
        ("[[figure]]\nchest = [10, 5, 3]\n", "figure.0.chest", 1),
        ("[[ball]]\nvelocity = [0, 0, 0, 0]\n", "ball.0.velocity", 1),
    ];
    for (i, (section, key, line)) in cases.iter().enumerate() {
        let err = load_err(&format!("long{i}"), &format!("{MINIMAL}\n{section}"));
        assert_eq!(
            (err.key(), err.line()),
            (Some(*key), Some(5 + line)),
            "{err}"
        );
        assert!(err.to_string().contains("invalid length"), "{err}");
    }
    let err = load_err(
        "long-piece",
        &format!("{MINIMAL}translate = [0, 0, 0, 1]\n"),
    );
    assert_eq!(
        (err.key(), err.line()),
        (Some("cloth.0.translate"), Some(4)),
        "{err}"
    );
    let mut sc = Scene::from_toml_str(MINIMAL, "minimal").unwrap();
    let err = sc
        .apply_set("cloth.0.rotate_deg=[0, 0, 0, 90]")
        .expect_err("a fourth angle");
    assert!(err.to_string().contains("invalid length 4"), "{err}");
    assert_eq!(sc.cloth[0].rotate_deg, [0.0; 3]);
}

#[test]
fn full_scene_parses_every_section() {
    let text = r#"
[simulation]
dt = 5e-5
frames = 10
fps = 24
gravity = [0, 0, -981]

[yarn]
radius = 0.1
damping_block_loops = 2

[contact]
model = "exact"
quadrature = 8
exclusion_arc = 0.5

[[cloth]]
source.bcc = { path = "model.bcc" }
scale = 0.5
rotate_deg = [90, 0, 0]
translate = [0, 10, 0]

[[pin]]
range = { first = 0, last = 3 }

[[pin]]
region = { min = [-1, -1, -1], max = [1, 1, 1] }

[[obstacle]]
type = "plane"
point = [0, 0, 0]
normal = [0, 1, 0]
friction = 0.3

[[obstacle]]
type = "capsule"
a = [0, 0, 0]
b = [1, 0, 0]
radius = 0.5
keyframes = [{ t = 0.0, offset = [0, 0, 0] }, { t = 1.0, offset = [0, 1, 0] }]

[camera]
position = [0, 5, 30]
fov_deg = 40
"#;
    let s = Scene::from_toml_str(text, "full.toml").unwrap();
    assert_eq!(s.simulation.frames, 10);
    assert_eq!(s.simulation.gravity, [0.0, 0.0, -981.0]);
    assert_eq!(s.contact.model, ContactModel::Exact);
    assert_eq!(
        s.cloth[0].source,
        ClothSource::Bcc {
            path: "model.bcc".into(),
            units: yarnsim::scene::Units::Cm,
            bspline_tolerance: yarnsim::bcc::BSPLINE_TOLERANCE,
        }
    );
    assert_eq!(s.pin[0], Pin::Range { first: 0, last: 3 });
    assert!(
        matches!(s.obstacle[1], Obstacle::Capsule { ref keyframes, .. } if keyframes.len() == 2)
    );
    assert_eq!(s.camera.fov_deg, Some(40.0));
    assert_eq!(s.camera.target, None);
    // Decreasing keyframe times are rejected.
    let bad = text.replace("{ t = 1.0,", "{ t = 0.0,");
    let err = Scene::from_toml_str(&bad, "full.toml").unwrap_err();
    assert_eq!(err.key(), Some("obstacle.1.keyframes.1.t"), "{err}");
}

#[test]
fn set_overrides_fields() {
    let mut s = Scene::from_toml_str(MINIMAL, "m.toml").unwrap();
    s.apply_set("contact.tolerance=0.1").unwrap();
    assert_eq!(s.contact.tolerance, 0.1);
    s.apply_set("simulation.frames = 5").unwrap();
    assert_eq!(s.simulation.frames, 5);
    s.apply_set("cloth.0.scale=2").unwrap();
    assert_eq!(s.cloth[0].scale, 2.0);
    s.apply_set("yarn.radius=0.1").unwrap();
    assert_eq!(s.yarn.radius, 0.1);
    s.apply_set("contact.model=exact").unwrap();
    assert_eq!(s.contact.model, ContactModel::Exact);
    s.apply_set("contact.model=\"none\"").unwrap();
    assert_eq!(s.contact.model, ContactModel::None);
    s.apply_set("simulation.gravity=[0, 0, -981]").unwrap();
    assert_eq!(s.simulation.gravity, [0.0, 0.0, -981.0]);
    s.apply_set("cloth.0.source.generator.wales=7").unwrap();
    assert!(matches!(
        s.cloth[0].source,
        ClothSource::Generator { wales: 7, .. }
    ));
    s.apply_set("camera.fov_deg=35").unwrap();
    assert_eq!(s.camera.fov_deg, Some(35.0));
    s.apply_set("pin=[{ range = { first = 0, last = 2 } }]")
        .unwrap();
    assert_eq!(s.pin, vec![Pin::Range { first: 0, last: 2 }]);
    // f32 values survive the trip through TOML exactly.
    s.apply_set("yarn.linear_density=0.003").unwrap();
    assert_eq!(s.yarn.linear_density, 0.003f32);
    assert_eq!(s.yarn.bending_stiffness, 10.0);
}

#[test]
fn bad_set_is_an_error_naming_the_key_and_changes_nothing() {
    let orig = Scene::from_toml_str(MINIMAL, "m.toml").unwrap();
    let cases: &[(&str, &str)] = &[
        ("contact.stifness=1", "contact.stifness"),
        ("contac.stiffness=1", "contac.stiffness"),
        ("contact.tolerance=-1", "contact.tolerance"),
        ("contact.quadrature=40", "contact.quadrature"),
        ("simulation.frames=\"many\"", "simulation.frames"),
        ("cloth.3.scale=2", "cloth.3.scale"),
        ("cloth.x.scale=2", "cloth.x.scale"),
        ("yarn.radius.x=2", "yarn.radius.x"),
        ("yarn.radius=[1,", "yarn.radius"),
        ("contact.model=fast", "contact.model"),
    ];
    for (assignment, key) in cases {
        let mut s = orig.clone();
        let err = s.apply_set(assignment).unwrap_err();
        assert!(matches!(err, SceneError::Set { .. }), "{assignment}: {err}");
        assert_eq!(err.key(), Some(*key), "{assignment}: {err}");
        assert!(err.to_string().contains(assignment), "{err}");
        assert_eq!(s, orig, "{assignment} changed the scene");
    }
    let mut s = orig.clone();
    assert!(s.apply_set("no equals sign").is_err());
}

// ---------------------------------------------------------------------------------------------
// Building cloth and resolving pins.

use yarnsim::knit;
use yarnsim::scene::{build_curves, pinned_points, ClothBuild};
use yarnsim::state::{Curve, Topology};

fn scenes_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("scenes")
}

/// Damping block ids are dense: every id below the largest is used.
fn assert_dense_blocks(b: &ClothBuild) {
    let n = b.damping_block.iter().max().map_or(0, |m| m + 1) as usize;
    let mut used = vec![false; n];
    for &id in &b.damping_block {
        used[id as usize] = true;
    }
    assert!(used.iter().all(|&u| u), "damping block ids have gaps");
}

#[test]
fn every_scene_loads_and_builds() {
    let mut names = Vec::new();
    for entry in std::fs::read_dir(scenes_dir()).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_none_or(|e| e != "toml") {
            continue;
        }
        let name = path.file_stem().unwrap().to_string_lossy().to_string();
        let scene = Scene::load(&path).unwrap_or_else(|e| panic!("{e}"));
        let build = build_curves(&scene, &scenes_dir()).unwrap_or_else(|e| panic!("{name}: {e}"));
        let points: usize = build.curves.iter().map(|c| c.points.len()).sum();
        assert_eq!(build.damping_block.len(), points, "{name}");
        assert_dense_blocks(&build);
        let (topo, _) =
            Topology::from_curves(&build.curves).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(topo.num_points(), points);
        let pins = pinned_points(&scene, &build).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(pins.is_empty(), scene.pin.is_empty(), "{name}");
        let want_loops = match name.as_str() {
            "scarf" => Some(3_240),
            "sack" => Some(41_272),
            "sack_small" => Some(1_152),
            "sweater" => Some(45_960),
            "sweater_small" => Some(1_246),
            "afghan" => Some(54_340),
            "swatch" => Some(144),
            _ => None,
        };
        if let Some(l) = want_loops {
            assert_eq!(build.loops, l, "{name}");
        }
        names.push(name);
    }
    names.sort();
    assert_eq!(
        names,
        [
            "afghan",
            "drop",
            "sack",
            "sack_small",
            "scarf",
            "swatch",
            "sweater",
            "sweater_small",
            "tiny"
        ]
    );
}

#[test]
fn swatch_is_pinned_along_its_top_course() {
    let scene = Scene::load(&scenes_dir().join("swatch.toml")).unwrap();
    let build = build_curves(&scene, &scenes_dir()).unwrap();
    let pins = pinned_points(&scene, &build).unwrap();
    let ClothSource::Generator {
        pattern,
        wales,
        courses,
        ..
    } = scene.cloth[0].source
    else {
        panic!("swatch.toml should generate its cloth");
    };
    let k = knit::generate(pattern, wales, courses, scene.yarn.radius).unwrap();
    // Every loop of the top course is held, by its head, and nothing else is.
    let mut held = vec![0; wales as usize];
    for &p in &pins {
        let [w, c] = k.point_loop[0][p as usize];
        assert_eq!(c, courses - 1, "control point {p} of course {c} is pinned");
        held[w as usize] += 1;
    }
    assert!(held.iter().all(|&n| n >= 2), "{held:?}");
}

fn generator_scene(extra: &str) -> Scene {
    let text = format!(
        "[yarn]\ndamping_block_loops = 4\n[[cloth]]\nsource.generator = {{ pattern = \"rib\", wales = 9, courses = 5 }}\n{extra}"
    );
    Scene::from_toml_str(&text, "gen.toml").unwrap()
}

#[test]
fn pieces_are_scaled_rotated_and_translated() {
    let k = knit::generate(Pattern::Rib, 9, 5, 0.125).unwrap();
    let plain = build_curves(&generator_scene(""), Path::new(".")).unwrap();
    assert_eq!(plain.curves, k.curves);
    assert_eq!(plain.loops, 45);
    // Scale 2, rotate 90° about x then 90° about y, then translate: (x, y, z) ↦ 2 (y, −z, −x) + t.
    let s = generator_scene("scale = 2\nrotate_deg = [90, 90, 0]\ntranslate = [1, -2, 3]\n");
    let b = build_curves(&s, Path::new(".")).unwrap();
    for (p, q) in b.curves[0].points.iter().zip(&k.curves[0].points) {
        let want = [2.0 * q[1] + 1.0, -2.0 * q[2] - 2.0, -2.0 * q[0] + 3.0];
        for d in 0..3 {
            assert!((p[d] - want[d]).abs() < 1e-5, "{p:?} vs {want:?}");
        }
    }
    // Rotation about z alone: (x, y, z) ↦ (−y, x, z).
    let s = generator_scene("rotate_deg = [0, 0, 90]\n");
    let b = build_curves(&s, Path::new(".")).unwrap();
    for (p, q) in b.curves[0].points.iter().zip(&k.curves[0].points) {
        let want = [-q[1], q[0], q[2]];
        for d in 0..3 {
            assert!((p[d] - want[d]).abs() < 1e-5, "{p:?} vs {want:?}");
        }
    }
}

#[test]
fn generated_damping_blocks_are_loop_blocks_distinct_per_piece() {
    let extra = "[[cloth]]\nsource.generator = { pattern = \"tube\", wales = 8, courses = 3 }\n";
    let s = generator_scene(extra);
    let b = build_curves(&s, Path::new(".")).unwrap();
    assert_eq!(b.loops, 45 + 24);
    let k1 = knit::generate(Pattern::Rib, 9, 5, 0.125).unwrap();
    let k2 = knit::generate(Pattern::Tube, 8, 3, 0.125).unwrap();
    let owners: Vec<(usize, [u32; 2])> = k1
        .point_loop
        .iter()
        .flatten()
        .map(|&l| (0, l))
        .chain(k2.point_loop.iter().flatten().map(|&l| (1, l)))
        .collect();
    assert_eq!(owners.len(), b.damping_block.len());
    // Piece 0: 9 × 5 loops in 4 × 4 blocks → 3 × 2 blocks; piece 1: 8 × 3 → 2 × 1 blocks.
    for (&(piece, [w, c]), &block) in owners.iter().zip(&b.damping_block) {
        let want = if piece == 0 {
            w / 4 + 3 * (c / 4)
        } else {
            6 + w / 4
        };
        assert_eq!(block, want, "piece {piece} loop ({w}, {c})");
    }
    assert_dense_blocks(&b);
}

/// The control points of each block, sorted.
fn block_sizes(ids: &[u32]) -> Vec<usize> {
    let mut n = vec![0usize; ids.iter().max().map_or(0, |m| *m as usize + 1)];
    for &id in ids {
        n[id as usize] += 1;
    }
    n.sort_unstable();
    n
}

#[test]
fn bcc_damping_blocks_hold_about_as_many_loops_as_generated_ones() {
    // The same 24 × 24 stockinette swatch, generated and as a BCC file: the BCC piece's grid blocks
    // (no loop structure) should be about the generated 4 × 4-loop blocks' size. With a loop taken
    // as 8 control-point spacings (the yarn's length in a loop, not its width) they held some 20
    // times as many points.
    let dir = scratch("bcc-block-size");
    let (wales, courses) = (24, 24);
    let k = knit::generate(Pattern::Stockinette, wales, courses, 0.125).unwrap();
    yarnsim::bcc::write(&dir.join("sw.bcc"), &k.curves).unwrap();
    let bcc = write(
        &dir,
        "b.toml",
        "[[cloth]]\nsource.bcc = { path = \"sw.bcc\" }\n",
    );
    let generated = write(
        &dir,
        "g.toml",
        "[[cloth]]\nsource.generator = { pattern = \"stockinette\", wales = 24, courses = 24 }\n",
    );
    let b = build_curves(&Scene::load(&bcc).unwrap(), &dir).unwrap();
    let g = build_curves(&Scene::load(&generated).unwrap(), &dir).unwrap();
    assert_eq!(b.curves, g.curves);
    for (phase, ids_b, ids_g) in [
        ("A", &b.damping_block, &g.damping_block),
        ("B", &b.damping_block_shifted, &g.damping_block_shifted),
    ] {
        let (sb, sg) = (block_sizes(ids_b), block_sizes(ids_g));
        // Interior blocks: the upper half of each partition (edge blocks are cut by the border).
        let upper = |v: &[usize]| {
            v[v.len() / 2..].iter().sum::<usize>() as f64 / (v.len() - v.len() / 2) as f64
        };
        let (mb, mg) = (upper(&sb), upper(&sg));
        let (xb, xg) = (*sb.last().unwrap(), *sg.last().unwrap());
        assert!(
            (0.6..1.6).contains(&(mb / mg)),
            "phase {phase}: mean of the larger half of the blocks {mb:.0} points (BCC) vs {mg:.0} (generated)"
        );
        assert!(
            (xb as f64) < 1.6 * xg as f64,
            "phase {phase}: largest block {xb} points (BCC) vs {xg} (generated)"
        );
    }
}

#[test]
fn bcc_pieces_load_with_grid_damping_blocks() {
    let dir = scratch("bcc-piece");
    std::fs::create_dir_all(dir.join("models")).unwrap();
    let k = knit::generate(Pattern::Stockinette, 10, 10, 0.125).unwrap();
    yarnsim::bcc::write(&dir.join("models/sw.bcc"), &k.curves).unwrap();
    let path = write(
        &dir,
        "s.toml",
        "[[cloth]]\nsource.bcc = { path = \"models/sw.bcc\" }\ntranslate = [0, 1, 0]\n",
    );
    let scene = Scene::load(&path).unwrap();
    let b = build_curves(&scene, &dir).unwrap();
    let points: usize = k.curves[0].points.len();
    assert_eq!(b.loops, (points as f64 / 8.0).round() as u32);
    let moved: Vec<[f32; 3]> = k.curves[0]
        .points
        .iter()
        .map(|p| [p[0], p[1] + 1.0, p[2]])
        .collect();
    assert_eq!(
        b.curves,
        vec![Curve {
            points: moved,
            closed: false
        }]
    );
    // Blocks are grid cells 4 loops wide, a loop being BCC_LOOP_SPACINGS mean control-point
    // spacings.
    let pts = &b.curves[0].points;
    let spacing: f64 = pts
        .windows(2)
        .map(|w| {
            (0..3)
                .map(|d| ((w[0][d] - w[1][d]) as f64).powi(2))
                .sum::<f64>()
                .sqrt()
        })
        .sum::<f64>()
        / (pts.len() - 1) as f64;
    let cell = 4.0 * yarnsim::scene::BCC_LOOP_SPACINGS * spacing;
    let nblocks = b.damping_block.iter().max().unwrap() + 1;
    assert!(nblocks > 1);
    for id in 0..nblocks {
        let members: Vec<&[f32; 3]> = pts
            .iter()
            .zip(&b.damping_block)
            .filter(|(_, &k)| k == id)
            .map(|(p, _)| p)
            .collect();
        for d in 0..3 {
            let lo = members.iter().map(|p| p[d]).fold(f32::MAX, f32::min);
            let hi = members.iter().map(|p| p[d]).fold(f32::MIN, f32::max);
            assert!(
                ((hi - lo) as f64) < cell,
                "block {id} spans {} > cell {cell}",
                hi - lo
            );
        }
    }
    assert_dense_blocks(&b);

    // A missing file names the piece and the path.
    let path = write(
        &dir,
        "m.toml",
        "[[cloth]]\nsource.bcc = { path = \"models/none.bcc\" }\n",
    );
    let err = build_curves(&Scene::load(&path).unwrap(), &dir).unwrap_err();
    let msg = err.to_string();
    assert!(msg.contains("cloth.0") && msg.contains("none.bcc"), "{msg}");
}

#[test]
fn pins_resolve_to_sorted_unique_indices() {
    let s = generator_scene(
        "[[pin]]\nrange = { first = 5, last = 9 }\n[[pin]]\nrange = { first = 0, last = 6 }\n\
         [[pin]]\nregion = { min = [-100, -100, -100], max = [100, -1.0, 100] }\n",
    );
    let b = build_curves(&s, Path::new(".")).unwrap();
    let pins = pinned_points(&s, &b).unwrap();
    assert!(pins.windows(2).all(|w| w[0] < w[1]), "sorted and unique");
    assert!((0..=9).all(|i| pins.contains(&i)));
    let low: Vec<u32> = b.curves[0]
        .points
        .iter()
        .enumerate()
        .filter(|(_, p)| p[1] <= -1.0)
        .map(|(i, _)| i as u32)
        .collect();
    assert!(!low.is_empty());
    assert!(low.iter().all(|i| pins.contains(i)));
    assert_eq!(pins.len(), low.iter().filter(|&&i| i > 9).count() + 10);

    let total = b.curves[0].points.len() as u32;
    let s = generator_scene(&format!(
        "[[pin]]\nrange = {{ first = 0, last = {total} }}\n"
    ));
    let err = pinned_points(&s, &b).unwrap_err();
    assert!(matches!(err, SceneError::Pin { pin: 0, .. }), "{err}");
    assert!(err.to_string().contains(&total.to_string()), "{err}");
    let s = generator_scene("[[pin]]\nrange = { first = 0, last = 1 }\n[[pin]]\nregion = { min = [50, 50, 50], max = [60, 60, 60] }\n");
    let err = pinned_points(&s, &b).unwrap_err();
    assert!(matches!(err, SceneError::Pin { pin: 1, .. }), "{err}");
}

/// A documented bound is in range as written, though the f32 field rounds it below (`yarn.radius
/// = 1e-4` is 9.99999975e-5 as an f32), and values are shown as written (`-0.1`, not
/// `-0.10000000149011612`; `1e-300`, not three hundred digits). `contact.max_bin` stops at the 24
/// bins the scheduler has, when the scene is read.
#[test]
fn bounds_hold_as_written_and_values_show_as_written() {
    let mut sc = Scene::from_toml_str(MINIMAL, "minimal").unwrap();
    sc.apply_set("yarn.radius=1e-4").unwrap();
    sc.apply_set("cloth.0.scale=1e-6").unwrap();
    let err = sc.apply_set("yarn.radius=-0.1").unwrap_err().to_string();
    assert!(err.ends_with("must be in [0.0001, 10], got -0.1"), "{err}");
    let err = sc
        .apply_set("simulation.fps=1e-300")
        .unwrap_err()
        .to_string();
    assert!(err.ends_with("got 1e-300"), "{err}");
    let err = sc
        .apply_set("yarn.linear_density=-3e-3")
        .unwrap_err()
        .to_string();
    assert!(err.ends_with("got -0.003"), "{err}");
    let err = load_err("max-bin", &format!("{MINIMAL}\n[contact]\nmax_bin = 25\n"));
    assert_eq!(
        (err.key(), err.line()),
        (Some("contact.max_bin"), Some(6)),
        "{err}"
    );
    assert!(
        err.to_string().ends_with("must be in [0, 24], got 25"),
        "{err}"
    );
    // A whole number shows whole (it showed as 4.294967295e9).
    let err = load_err(
        "frames",
        &format!("{MINIMAL}\n[simulation]\nframes = 4294967295\n"),
    );
    assert!(err.to_string().ends_with("got 4294967295"), "{err}");
}

/// serde's words on a scene's structure come with what they mean in the scene's terms, for the
/// common mistakes: `[cloth]` for `[[cloth]]` and the reverse, a `[[pin]]` with both forms or
/// neither, a source named as a string.
#[test]
fn structure_mistakes_are_explained() {
    let gen = "source.generator = { pattern = \"stockinette\", wales = 4, courses = 4 }\n";
    let cases = [
        (format!("[cloth]\n{gen}"), "write [[cloth]], one per entry"),
        (
            format!("[[simulation]]\nfps = 30\n[[cloth]]\n{gen}"),
            "write [simulation]: it is a single table",
        ),
        (
            format!("[[cloth]]\n{gen}[[pin]]\nrange = {{ first = 0, last = 1 }}\nregion = {{ min = [0, 0, 0], max = [1, 1, 1] }}\n"),
            "give exactly one of range = { first, last } or region = { min, max }",
        ),
        (format!("[[cloth]]\n{gen}[[pin]]\n"), "give exactly one of range"),
        (
            "[[cloth]]\nsource = \"generator\"\n".to_string(),
            "it takes a table: generator = { … } or bcc = { path = … }",
        ),
    ];
    for (i, (text, hint)) in cases.iter().enumerate() {
        let err = load_err(&format!("structure{i}"), text).to_string();
        assert!(err.contains(hint), "{text}: {err}");
    }
}

/// A bad keyframe is named with its index and line (an obstacle is a tagged enum, whose errors
/// lose the path inside it: they named `obstacle.0.offset` at the `[[obstacle]]` header).
#[test]
fn keyframe_errors_name_the_keyframe_and_its_line() {
    let head = "[[cloth]]\nsource.generator = { pattern = \"stockinette\", wales = 4, courses = 4 }\n[[obstacle]]\ntype = \"sphere\"\ncenter = [0, -5, 0]\nradius = 1\n";
    let cases = [
        (
            "keyframes = [\n  { t = 0.0, offset = [0, 0, 0] },\n  { t = 1.0 },\n]\n",
            9,
            "missing field `offset`",
            "offset",
        ),
        (
            "keyframes = [\n  { t = 0.0, offset = [0, 0, 0] },\n  { t = 1.0, offset = [0, 1, 0], extra = 2 },\n]\n",
            9,
            "unknown field `extra`",
            "extra",
        ),
        (
            "keyframes = [\n  { t = 0.0, offset = [0, 0, 0] },\n  { t = \"one\", offset = [0, 1, 0] },\n]\n",
            9,
            "invalid type: string \"one\"",
            "t",
        ),
    ];
    for (i, (frames, line, words, field)) in cases.iter().enumerate() {
        let err = load_err(&format!("keyframe{i}"), &format!("{head}{frames}"));
        assert_eq!(err.line(), Some(*line), "{err}");
        let key = format!("obstacle.0.keyframes.1.{field}");
        assert_eq!(err.key(), Some(key.as_str()), "{err}");
        assert!(err.to_string().contains(words), "{err}");
    }
}

/// An error inside an obstacle after the first names that obstacle, its field and line (serde
/// buffers an obstacle, a tagged enum, and its errors carried the span of the whole array of
/// obstacles, so that every such error named `obstacle.0` at the first `[[obstacle]]` header).
#[test]
fn errors_in_a_later_obstacle_name_it_and_the_field() {
    let head =
        "[[cloth]]\nsource.generator = { pattern = \"stockinette\", wales = 4, courses = 4 }\n\
                [[obstacle]]\ntype = \"plane\"\npoint = [0, -6, 0]\nnormal = [0, 1, 0]\n\
                [[obstacle]]\ntype = \"sphere\"\n";
    let cases = [
        (
            "center = [0, -5, 0]\nradius = \"big\"\n",
            10,
            "obstacle.1.radius",
            "invalid type: string",
        ),
        (
            "center = [0, -5]\nradius = 1\n",
            9,
            "obstacle.1.center",
            "invalid length 2",
        ),
        (
            "center = 7\nradius = 1\n",
            9,
            "obstacle.1.center",
            "invalid type: integer `7`",
        ),
        (
            "center = [0, -5, 0]\nradius = [1]\n",
            10,
            "obstacle.1.radius",
            "invalid type: sequence",
        ),
        (
            "center = [0, -5, 0]\nradius = 1\nfriction = true\n",
            11,
            "obstacle.1.friction",
            "boolean",
        ),
        (
            "center = [0, -5, 0]\n",
            7,
            "obstacle.1.radius",
            "missing field `radius`",
        ),
        (
            "center = [0, -5, 0]\nradiu = 1\n",
            10,
            "obstacle.1.radiu",
            "unknown field `radiu`",
        ),
        (
            "center = [0, -5, 0]\nradius = 1\nkeyframes = [{ t = 0, offset = [0, 0] }]\n",
            11,
            "obstacle.1.keyframes.0.offset",
            "invalid length 2",
        ),
    ];
    for (i, (rest, line, key, words)) in cases.iter().enumerate() {
        let err = load_err(&format!("later{i}"), &format!("{head}{rest}"));
        assert_eq!((err.key(), err.line()), (Some(*key), Some(*line)), "{err}");
        assert!(err.to_string().contains(words), "{err}");
    }
    // The first obstacle's errors are named as before.
    let err = load_err("first", &head.replace("normal = [0, 1, 0]", "normal = 5"));
    assert_eq!(
        (err.key(), err.line()),
        (Some("obstacle.0.normal"), Some(6)),
        "{err}"
    );
}

/// Errors in the scene file's terms: a table where serde would name a Rust type, the table whose
/// header is broken (not the key before it), a `--set` integer past 64 bits as too large.
#[test]
fn errors_speak_of_tables_and_headers() {
    let err = load_err("bcc-string", "[[cloth]]\nsource.bcc = \"x.bcc\"\n");
    assert_eq!(
        (err.key(), err.line()),
        (Some("cloth.0.source.bcc"), Some(2))
    );
    assert!(
        err.to_string()
            .ends_with("expected a table such as { path = \"FILE.bcc\" }"),
        "{err}"
    );
    assert!(!err.to_string().contains("ClothSource"), "{err}");
    let err = load_err("header", &format!("{MINIMAL}[contact\nmodel = \"none\"\n"));
    assert_eq!((err.key(), err.line()), (Some("contact"), Some(4)), "{err}");
    let mut sc = Scene::from_toml_str(MINIMAL, "minimal").unwrap();
    let err = sc.apply_set("yarn=3").unwrap_err().to_string();
    assert!(err.ends_with("expected a table"), "{err}");
    let err = sc
        .apply_set("simulation.frames=99999999999999999999")
        .unwrap_err()
        .to_string();
    assert!(err.contains("too large for a TOML integer"), "{err}");
}

/// `--set`s are checked against each other once all are in: a pin's region moved far away by its
/// `min` and `max` is taken in either order (one at a time, the first would leave `min` above the
/// old `max`, or `max` below the old `min`, and was refused); a rule still broken at the end names
/// the override that broke it, and leaves the scene as it was.
#[test]
fn overrides_that_only_agree_together_are_taken() {
    let dir = scratch("sets-together");
    let path = write(
        &dir,
        "s.toml",
        r#"
[[cloth]]
source.generator = { pattern = "stockinette", wales = 2, courses = 2 }
[[pin]]
region = { min = [-10, 3.9, -1], max = [10, 10, 1] }
"#,
    );
    let (min, max) = (
        "pin.0.region.min=[140, -116.1, 299]",
        "pin.0.region.max=[160, -110, 301]",
    );
    for sets in [[min, max], [max, min]] {
        let mut scene = Scene::load(&path).unwrap();
        scene.apply_sets(&sets).unwrap();
        assert_eq!(
            scene.pin[0],
            Pin::Region {
                min: [140.0, -116.1, 299.0],
                max: [160.0, -110.0, 301.0]
            }
        );
    }
    let mut scene = Scene::load(&path).unwrap();
    let before = scene.clone();
    let err = scene
        .apply_sets(&["simulation.frames=3", min, "yarn.radius=0.1"])
        .unwrap_err()
        .to_string();
    assert!(
        err.starts_with(&format!(
            "--set {min}: pin.0.region.max: must be at least min"
        )),
        "{err}"
    );
    assert_eq!(scene, before);
    // Each override is still read as it comes: an unknown key names its own.
    let err = scene
        .apply_sets(&[min, "pin.0.region.mx=[1, 2, 3]", max])
        .unwrap_err()
        .to_string();
    assert!(
        err.starts_with("--set pin.0.region.mx=[1, 2, 3]: pin.0.region.mx: unknown key"),
        "{err}"
    );
    assert_eq!(scene, before);
}

/// An override's value is one TOML value: text after it on another line (a second assignment, a
/// table header) was parsed as more of the wrapper document and dropped without a word, so
/// `--set $'contact.stiffness=5\nyarn.radius=0.2'` set the stiffness and silently not the radius.
#[test]
fn set_refuses_more_than_one_value() {
    let mut s = Scene::from_toml_str(MINIMAL, "m.toml").unwrap();
    for bad in [
        "contact.stiffness=5\nyarn.radius=0.2",
        "contact.stiffness=5\n[x]\ny = 1",
    ] {
        let e = s.apply_set(bad).unwrap_err().to_string();
        assert!(e.contains("contact.stiffness"), "{e}");
        assert!(e.contains("one TOML value"), "{e}");
    }
    assert_eq!(
        s.contact.stiffness,
        yarnsim::scene::ContactParams::default().stiffness
    );
    // A comment after the value is still one value.
    s.apply_set("contact.stiffness=5 # softer").unwrap();
    assert_eq!(s.contact.stiffness, 5.0);
}

/// A scene file that is not UTF-8 text is an error naming the file and the line of the first byte
/// that is not (it said only "stream did not contain valid UTF-8").
#[test]
fn a_scene_that_is_not_utf8_names_the_line() {
    let dir = std::env::temp_dir().join(format!("yarnsim-scene-utf8-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("latin1.toml");
    std::fs::write(&path, b"[simulation]\nframes = 2\n# caf\xe9\n").unwrap();
    let e = Scene::load(&path).unwrap_err().to_string();
    assert!(e.contains("latin1.toml") && e.contains("line 3"), "{e}");
    std::fs::remove_dir_all(&dir).unwrap();
}

/// The loops a scene's generators make are bounded in all, not only per piece: the bound is what
/// keeps a scene from allocating past any machine's memory, and three pieces at the bound each
/// took it three times over (`yarnsim info` of one piece at the bound ran past 8 GB).
#[test]
fn generated_loops_are_bounded_across_pieces() {
    let piece = |w: u32, c: u32| {
        format!(
            "[[cloth]]\nsource.generator = {{ pattern = \"stockinette\", wales = {w}, courses = {c} }}\n"
        )
    };
    let text = format!("{}{}", piece(2000, 1500), piece(2000, 1500));
    let e = Scene::from_toml_str(&text, "two.toml")
        .unwrap_err()
        .to_string();
    assert!(e.contains("two.toml:4: cloth.1.source.generator"), "{e}");
    assert!(e.contains("6000000"), "{e}");
    // At the bound in all, it loads.
    let text = format!("{}{}", piece(2000, 1000), piece(2000, 1000));
    Scene::from_toml_str(&text, "two.toml").unwrap();
}

/// A ball too small to have a mass at its density is named by its radius, which the scene gave,
/// not by the mass it left out.
#[test]
fn a_massless_ball_is_named_by_what_gave_its_mass() {
    let err = load_err(
        "massless-ball",
        &format!("{MINIMAL}\n[[ball]]\ncenter = [0, 50, 0]\nradius = 1e-30\n"),
    );
    assert_eq!(err.key(), Some("ball.0.radius"), "{err}");
    assert!(err.to_string().contains("give ball.0.mass"), "{err}");
    let err = load_err(
        "massless-ball-mass",
        &format!("{MINIMAL}\n[[ball]]\ncenter = [0, 50, 0]\nradius = 1\nmass = 1e-46\n"),
    );
    assert_eq!(err.key(), Some("ball.0.mass"), "{err}");
}

/// Numbers in the checks' messages read as written: `1e38`, not f32's 39 digits.
#[test]
fn huge_values_show_as_written_in_messages() {
    let err = load_err(
        "huge-plastic",
        &format!("{MINIMAL}\n[yarn]\nplastic_radius = 1e38\n"),
    );
    assert_eq!(err.key(), Some("yarn.plastic_max"), "{err}");
    assert!(err.to_string().contains("(1e38), got 2.5"), "{err}");
    let err = load_err(
        "huge-restitution",
        &format!("{MINIMAL}\n[[ball]]\ncenter = [0, 50, 0]\nrestitution = 1e30\n"),
    );
    assert!(err.to_string().contains("got 1e30"), "{err}");
}
