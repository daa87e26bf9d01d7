//! OBJ export: curves written as control-point polylines parse back to the same curves, bit for bit.

use yarnsim::export::{obj_string, parse_obj, read_obj, write_obj_frame, ExportError};
use yarnsim::state::Curve;

fn sample_curves() -> Vec<Curve> {
    let helix = Curve {
        points: (0..23)
            .map(|i| {
                let a = i as f32 * 0.7;
                [a.cos() * 1.3, i as f32 * 0.173_21, a.sin() * 1.3]
            })
            .collect(),
        closed: false,
    };
    let ring = Curve {
        points: (0..9)
            .map(|i| {
                let a = i as f32 / 9.0 * std::f32::consts::TAU;
                [a.cos() * 0.5 + 10.0, -3.25, a.sin() * 0.5]
            })
            .collect(),
        closed: true,
    };
    // Values whose decimal form is long, tiny, huge or negative zero.
    let awkward = Curve {
        points: vec![
            [0.1, 1.0 / 3.0, -0.0],
            [1e-30, -7.654_321e12, f32::MIN_POSITIVE],
            [f32::EPSILON, 123_456.79, -2.5],
            [std::f32::consts::PI, 1e20, 3.0e-5],
        ],
        closed: false,
    };
    vec![helix, ring, awkward]
}

#[test]
fn obj_export_parses_back_to_same_curves() {
    let curves = sample_curves();
    let text = obj_string(&curves);
    let back = parse_obj(&text).expect("parse own OBJ");
    assert_eq!(back.len(), curves.len());
    for (a, b) in curves.iter().zip(&back) {
        assert_eq!(a.closed, b.closed);
        assert_eq!(a.points.len(), b.points.len());
        for (p, q) in a.points.iter().zip(&b.points) {
            for k in 0..3 {
                assert_eq!(p[k].to_bits(), q[k].to_bits(), "{p:?} vs {q:?}");
            }
        }
    }
}

#[test]
fn obj_layout_is_v_lines_and_closing_l_elements() {
    let curves = sample_curves();
    let text = obj_string(&curves);
    let nv = text.lines().filter(|l| l.starts_with("v ")).count();
    assert_eq!(nv, 23 + 9 + 4);
    let ls: Vec<Vec<usize>> = text
        .lines()
        .filter(|l| l.starts_with("l "))
        .map(|l| l[2..].split(' ').map(|t| t.parse().unwrap()).collect())
        .collect();
    assert_eq!(ls.len(), 3);
    assert_eq!(ls[0], (1..=23).collect::<Vec<_>>());
    // The closed ring repeats its first vertex to close.
    let mut ring: Vec<usize> = (24..=32).collect();
    ring.push(24);
    assert_eq!(ls[1], ring);
    assert_eq!(ls[2], (33..=36).collect::<Vec<_>>());
}

#[test]
fn frame_files_round_trip() {
    let dir = std::env::temp_dir().join(format!("yarnsim-export-test-{}", std::process::id()));
    let curves = sample_curves();
    let path = write_obj_frame(&dir, 7, &curves).expect("write frame");
    assert_eq!(path.file_name().unwrap(), "frame_0007.obj");
    assert_eq!(read_obj(&path).expect("read frame"), curves);
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn bad_obj_names_the_line() {
    let text = "v 0 0 0\nv 1 0 0\nv 1 x 0\nl 1 2\n";
    match parse_obj(text) {
        Err(ExportError::Parse { line: 3, message }) => assert!(message.contains("\"x\"")),
        other => panic!("expected a parse error on line 3, got {other:?}"),
    }
    let text = "v 0 0 0\nv 1 0 0\nl 1 2 3\n";
    assert!(matches!(
        parse_obj(text),
        Err(ExportError::Parse { line: 3, .. })
    ));
    // Negative (relative) indices are part of the format.
    let text = "v 0 0 0\nv 1 0 0\nv 2 0 0\nl -3 -2 -1\n";
    let c = parse_obj(text).unwrap();
    assert_eq!(
        c[0].points,
        vec![[0.0, 0.0, 0.0], [1.0, 0.0, 0.0], [2.0, 0.0, 0.0]]
    );
}
