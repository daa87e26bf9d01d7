//! BCC import/export: exact round trip, conversions from `PL` and `BS`, and an error (never a panic)
//! naming the problem for every kind of malformed file.

use yarnsim::bcc::{self, BccError};
use yarnsim::spline;
use yarnsim::state::Curve;

fn sample_curves() -> Vec<Curve> {
    vec![
        Curve {
            points: (0..7)
                .map(|i| {
                    let t = i as f32 * 0.37;
                    [t.sin() * 1.3, t * 0.1 - 2.0, t.cos() / 3.0]
                })
                .collect(),
            closed: false,
        },
        Curve {
            // Values that do not survive a decimal round trip: the binary format must keep the bits.
            points: vec![
                [0.1, 1.0 / 3.0, -7.0e-8],
                [std::f32::consts::PI, 1.0e30, -0.0],
                [f32::MIN_POSITIVE, -2.5, 0.7],
                [4.0, 5.0, 6.0],
            ],
            closed: true,
        },
    ]
}

/// A raw BCC buffer with the given type and curves (point counts signed as in the file).
fn raw(kind: &[u8; 2], curves: &[(i32, Vec<[f32; 3]>)]) -> Vec<u8> {
    let total: usize = curves.iter().map(|c| c.1.len()).sum();
    let mut out = b"BCC\x44".to_vec();
    out.extend_from_slice(kind);
    out.push(3);
    out.push(2);
    out.extend_from_slice(&(curves.len() as u64).to_le_bytes());
    out.extend_from_slice(&(total as u64).to_le_bytes());
    // Free text that is garbage (not UTF-8, not zero-terminated): must be ignored.
    out.extend((0..40u8).map(|i| i.wrapping_mul(97).wrapping_add(200)));
    for (n, pts) in curves {
        out.extend_from_slice(&n.to_le_bytes());
        for p in pts {
            for v in p {
                out.extend_from_slice(&v.to_le_bytes());
            }
        }
    }
    out
}

#[test]
fn round_trip_is_bitwise_exact() {
    let curves = sample_curves();
    let bytes = bcc::write_bytes(&curves);
    assert_eq!(bytes.len(), 64 + 2 * 4 + 11 * 12);
    assert_eq!(&bytes[0..6], b"BCC\x44C0");
    let back = bcc::read_bytes(&bytes).unwrap();
    assert_eq!(back.len(), curves.len());
    for (a, b) in curves.iter().zip(&back) {
        assert_eq!(a.closed, b.closed);
        let bits =
            |c: &Curve| -> Vec<[u32; 3]> { c.points.iter().map(|p| p.map(f32::to_bits)).collect() };
        assert_eq!(bits(a), bits(b));
    }
    // And through a file.
    let dir = std::env::temp_dir().join(format!("yarnsim-bcc-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("rt.bcc");
    bcc::write(&path, &curves).unwrap();
    assert_eq!(bcc::read(&path).unwrap(), curves);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn missing_file_names_the_path() {
    let err = bcc::read(std::path::Path::new("/nonexistent/dir/x.bcc")).unwrap_err();
    assert!(matches!(err, BccError::Io { .. }));
    assert!(err.to_string().contains("/nonexistent/dir/x.bcc"), "{err}");
}

#[test]
fn every_truncation_is_an_error_not_a_panic() {
    let bytes = bcc::write_bytes(&sample_curves());
    for len in 0..bytes.len() {
        let err = bcc::read_bytes(&bytes[..len]).unwrap_err();
        assert!(
            matches!(err, BccError::Truncated { .. }),
            "length {len}: {err}"
        );
        assert!(err.to_string().contains("truncated"), "{err}");
    }
}

#[test]
fn wrong_signature() {
    let mut bytes = bcc::write_bytes(&sample_curves());
    bytes[1] = b'X';
    let err = bcc::read_bytes(&bytes).unwrap_err();
    assert!(matches!(err, BccError::Signature { .. }), "{err}");
    assert!(err.to_string().contains("signature"), "{err}");
    let mut bytes = bcc::write_bytes(&sample_curves());
    bytes[3] = 0x48; // 8-byte scalars are not supported
    assert!(matches!(
        bcc::read_bytes(&bytes),
        Err(BccError::Signature { .. })
    ));
}

#[test]
fn unsupported_type_and_dimensions() {
    let mut bytes = bcc::write_bytes(&sample_curves());
    bytes[4..6].copy_from_slice(b"BZ");
    let err = bcc::read_bytes(&bytes).unwrap_err();
    assert!(err.to_string().contains("\"BZ\""), "{err}");
    let mut bytes = bcc::write_bytes(&sample_curves());
    bytes[6] = 2;
    let err = bcc::read_bytes(&bytes).unwrap_err();
    assert!(matches!(err, BccError::Dimensions(2)), "{err}");
}

#[test]
fn counts_that_do_not_add_up() {
    let good = bcc::write_bytes(&sample_curves());
    // Header total larger than the curves hold (with bytes to spare so it is not a truncation).
    let mut b = good.clone();
    b[16..24].copy_from_slice(&12u64.to_le_bytes());
    b.extend_from_slice(&[0; 12]);
    let err = bcc::read_bytes(&b).unwrap_err();
    assert!(matches!(err, BccError::Counts(_)), "{err}");
    assert!(err.to_string().contains("12"), "{err}");
    // Header total smaller than the curves hold.
    let mut b = good.clone();
    b[16..24].copy_from_slice(&10u64.to_le_bytes());
    let err = bcc::read_bytes(&b).unwrap_err();
    assert!(matches!(err, BccError::Counts(_)), "{err}");
    // Trailing bytes.
    let mut b = good.clone();
    b.extend_from_slice(&[1, 2, 3]);
    let err = bcc::read_bytes(&b).unwrap_err();
    assert!(err.to_string().contains("3 trailing bytes"), "{err}");
    // Curve count larger than the body can hold.
    let mut b = good;
    b[8..16].copy_from_slice(&u64::MAX.to_le_bytes());
    assert!(bcc::read_bytes(&b).is_err());
}

#[test]
fn non_finite_points_name_curve_and_point() {
    for bad in [f32::NAN, f32::INFINITY, f32::NEG_INFINITY] {
        let mut curves = sample_curves();
        curves[1].points[2][1] = bad;
        let err = bcc::read_bytes(&bcc::write_bytes(&curves)).unwrap_err();
        assert!(
            matches!(
                err,
                BccError::NotFinite {
                    curve: 1,
                    point: 2,
                    ..
                }
            ),
            "{err}"
        );
        let s = err.to_string();
        assert!(s.contains("curve 1") && s.contains("point 2"), "{s}");
    }
}

#[test]
fn too_short_curves() {
    let p = |i: i32| [i as f32, 0.0, 0.0];
    let err = bcc::read_bytes(&raw(b"C0", &[(3, (0..3).map(p).collect())])).unwrap_err();
    assert!(
        matches!(
            err,
            BccError::TooShort {
                curve: 0,
                points: 3,
                min: 4,
                ..
            }
        ),
        "{err}"
    );
    let err = bcc::read_bytes(&raw(b"C0", &[(-2, (0..2).map(p).collect())])).unwrap_err();
    assert!(matches!(err, BccError::TooShort { points: 2, .. }), "{err}");
    let err = bcc::read_bytes(&raw(b"PL", &[(1, vec![p(0)])])).unwrap_err();
    assert!(matches!(err, BccError::TooShort { .. }), "{err}");
    let err = bcc::read_bytes(&raw(b"BS", &[(3, (0..3).map(p).collect())])).unwrap_err();
    assert!(matches!(err, BccError::TooShort { .. }), "{err}");
    // A closed curve that is too short only after dropping its repeated end point.
    let err = bcc::read_bytes(&raw(b"C0", &[(-3, vec![p(0), p(1), p(0)])])).unwrap_err();
    assert!(matches!(err, BccError::TooShort { points: 2, .. }), "{err}");
}

#[test]
fn closed_curve_repeating_its_first_point_is_deduplicated() {
    let pts = vec![
        [0.0, 0.0, 0.0],
        [1.0, 0.0, 0.0],
        [1.0, 1.0, 0.0],
        [0.0, 0.0, 0.0],
    ];
    let c = bcc::read_bytes(&raw(b"C0", &[(-4, pts.clone())])).unwrap();
    assert_eq!(c[0].points, pts[..3].to_vec());
    assert!(c[0].closed);
    // An open curve keeps all its points.
    let c = bcc::read_bytes(&raw(b"C0", &[(4, pts.clone())])).unwrap();
    assert_eq!(c[0].points, pts);
}

#[test]
fn polyline_gets_reflected_handles() {
    let pts = vec![[0.0, 0.0, 0.0], [1.0, 0.5, 0.0], [2.0, 0.0, 1.0]];
    let c = bcc::read_bytes(&raw(b"PL", &[(3, pts.clone()), (-3, pts.clone())])).unwrap();
    assert_eq!(
        c[0].points,
        vec![[-1.0, -0.5, 0.0], pts[0], pts[1], pts[2], [3.0, -0.5, 2.0]]
    );
    assert!(!c[0].closed);
    assert_eq!(c[1].points, pts);
    assert!(c[1].closed);
}

/// Point of the uniform cubic B-spline segment with control points `p` at `t` (the file's curve).
fn bspline(p: &[[f32; 3]], t: f64) -> [f64; 3] {
    let b = [
        (1.0 - t).powi(3) / 6.0,
        (3.0 * t.powi(3) - 6.0 * t * t + 4.0) / 6.0,
        (-3.0 * t.powi(3) + 3.0 * t * t + 3.0 * t + 1.0) / 6.0,
        t.powi(3) / 6.0,
    ];
    std::array::from_fn(|k| (0..4).map(|j| b[j] * p[j][k] as f64).sum())
}

#[test]
fn bspline_becomes_catmull_rom_through_its_knots() {
    let pts: Vec<[f32; 3]> = (0..6)
        .map(|i| {
            let t = i as f32;
            [t, (t * 1.3).sin(), (t * 0.7).cos()]
        })
        .collect();
    let c = bcc::read_bytes(&raw(b"BS", &[(6, pts.clone()), (-6, pts.clone())])).unwrap();
    let open = &c[0];
    assert!(!open.closed);
    assert_eq!(open.points.len(), 6);
    // The yarn runs through control points 1..=4, which are the B-spline's interior knots.
    for k in 1..=4 {
        let want = if k + 3 <= pts.len() {
            bspline(&pts[k - 1..k + 3], 0.0)
        } else {
            bspline(&pts[k - 2..k + 2], 1.0)
        };
        for (got, want) in open.points[k].iter().zip(want) {
            assert!((*got as f64 - want).abs() < 1e-6);
        }
    }
    // End tangents match the B-spline's (Catmull-Rom tangent at q1 is (q2 − q0)/2).
    let q = |i: usize| yarnsim::math::V3::<f64>::from3(open.points[i]);
    let cr_start = spline::eval_deriv(&[q(0), q(1), q(2), q(3)], 0.0);
    let bs_start: [f64; 3] = std::array::from_fn(|d| (pts[2][d] - pts[0][d]) as f64 / 2.0);
    let n = 6;
    let cr_end = spline::eval_deriv(&[q(n - 4), q(n - 3), q(n - 2), q(n - 1)], 1.0);
    let bs_end: [f64; 3] = std::array::from_fn(|d| (pts[n - 1][d] - pts[n - 3][d]) as f64 / 2.0);
    for d in 0..3 {
        assert!((cr_start.get(d) - bs_start[d]).abs() < 1e-5);
        assert!((cr_end.get(d) - bs_end[d]).abs() < 1e-5);
    }
    // Closed: one knot per control point, cyclically.
    let closed = &c[1];
    assert!(closed.closed);
    assert_eq!(closed.points.len(), 6);
    for k in 0..6 {
        let want = bspline(
            &[pts[(k + 5) % 6], pts[k], pts[(k + 1) % 6], pts[(k + 2) % 6]],
            0.0,
        );
        for (got, want) in closed.points[k].iter().zip(want) {
            assert!((*got as f64 - want).abs() < 1e-6);
        }
    }
}
