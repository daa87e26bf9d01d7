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

/// The file's B-spline at global parameter `u` (closed: `u ∈ [0, n)`; open: `u ∈ [1, n − 2]`).
fn bspline_at(p: &[[f32; 3]], closed: bool, u: f64) -> [f64; 3] {
    let n = p.len();
    let (seg, t) = if closed {
        let s = (u.floor() as usize).min(n - 1);
        (s, u - s as f64)
    } else {
        let s = (u.floor() as usize).clamp(1, n - 3);
        (s, u - s as f64)
    };
    let q: Vec<[f32; 3]> = (0..4).map(|j| p[(seg + j + n - 1) % n]).collect();
    bspline(&q, t)
}

/// The Catmull-Rom curve with control points `q` at its global parameter `u` (same ranges).
fn catmull_rom_at(q: &[[f32; 3]], closed: bool, u: f64) -> [f64; 3] {
    let n = q.len();
    let s = if closed {
        (u.floor() as usize).min(n - 1)
    } else {
        (u.floor() as usize).clamp(1, n - 3)
    };
    let c: [yarnsim::math::V3<f64>; 4] =
        std::array::from_fn(|j| yarnsim::math::V3::<f64>::from3(q[(s + j + n - 1) % n]));
    let v = spline::eval(&c, u - s as f64);
    [v.get(0), v.get(1), v.get(2)]
}

/// Subdivision levels a converted curve used: closed `n → n 2^m` points, open `n → 2^m (n − 3) + 3`.
fn levels(file_points: usize, converted: usize, closed: bool) -> u32 {
    let ratio = if closed {
        converted / file_points
    } else {
        (converted - 3) / (file_points - 3)
    };
    assert!(
        ratio.is_power_of_two(),
        "{file_points} → {converted} points"
    );
    if closed {
        assert_eq!(converted, ratio * file_points);
    } else {
        assert_eq!(converted, ratio * (file_points - 3) + 3);
    }
    ratio.trailing_zeros()
}

/// Mean control-polygon edge of a file curve.
fn spacing(p: &[[f32; 3]], closed: bool) -> f64 {
    let n = p.len();
    let m = if closed { n } else { n - 1 };
    (0..m)
        .map(|e| {
            let (a, b) = (p[e], p[(e + 1) % n]);
            (0..3)
                .map(|k| (a[k] as f64 - b[k] as f64).powi(2))
                .sum::<f64>()
                .sqrt()
        })
        .sum::<f64>()
        / m as f64
}

/// Largest distance, at equal parameter, between the file's B-spline and the converted Catmull-Rom
/// curve, sampled at `per` points per file segment.
fn sampled_deviation(p: &[[f32; 3]], q: &[[f32; 3]], closed: bool, per: usize) -> f64 {
    let n = p.len();
    let m = levels(n, q.len(), closed);
    let scale = (1u64 << m) as f64;
    let (u0, segs) = if closed { (0.0, n) } else { (1.0, n - 3) };
    let mut worst = 0.0f64;
    for i in 0..=segs * per {
        let u = u0 + i as f64 / per as f64;
        let b = bspline_at(p, closed, u);
        // File knot k is refined knot 2^m k (closed) or 2^m (k − 1) + 1 (open).
        let v = if closed {
            u * scale
        } else {
            (u - 1.0) * scale + 1.0
        };
        let c = catmull_rom_at(q, closed, v);
        let d = (0..3).map(|k| (b[k] - c[k]).powi(2)).sum::<f64>().sqrt();
        worst = worst.max(d);
    }
    worst
}

/// The test curves: smooth and sharp, open and closed.
fn bspline_cases() -> Vec<(&'static str, Vec<[f32; 3]>, bool)> {
    let smooth: Vec<[f32; 3]> = (0..9)
        .map(|i| {
            let t = i as f32;
            [t, (t * 1.3).sin(), (t * 0.7).cos()]
        })
        .collect();
    let knit_like: Vec<[f32; 3]> = loop_like_helix();
    let square = vec![
        [-1.0, 1.0, 0.0],
        [1.0, 1.0, 0.0],
        [1.0, -1.0, 0.0],
        [-1.0, -1.0, 0.0],
    ];
    // Irregular, so that its third differences do not cancel in the knot tangents.
    let zigzag: Vec<[f32; 3]> = [0.0, 1.5, 0.2, 1.0, -0.3, 1.7, 0.0]
        .iter()
        .enumerate()
        .map(|(i, &y)| [i as f32, y, 0.1 * i as f32])
        .collect();
    vec![
        ("smooth open", smooth.clone(), false),
        ("smooth closed", smooth, true),
        ("knit-like open", knit_like.clone(), false),
        ("knit-like closed", knit_like, true),
        ("square closed", square, true),
        ("zigzag open", zigzag.clone(), false),
        ("zigzag closed", zigzag, true),
        // Far from the origin against its spacing: f32 rounding of the points is part of the bound.
        (
            "offset closed",
            (0..12)
                .map(|i| {
                    let a = std::f32::consts::TAU * i as f32 / 12.0;
                    [1000.0 + 0.5 * a.cos(), 0.5 * a.sin(), -300.0]
                })
                .collect(),
            true,
        ),
    ]
}

#[test]
fn bspline_conversion_is_within_tolerance_of_the_file_curve() {
    for (name, pts, closed) in bspline_cases() {
        let n = pts.len() as i32;
        let count = if closed { -n } else { n };
        let (c, report) =
            bcc::read_bytes_with_report(&raw(b"BS", &[(count, pts.clone())])).unwrap();
        let q = &c[0].points;
        assert_eq!(c[0].closed, closed);
        let h = spacing(&pts, closed);
        let tol = bcc::BSPLINE_TOLERANCE * h;
        let sampled = sampled_deviation(&pts, q, closed, 64);
        let b = report
            .bspline
            .clone()
            .expect("a BS file reports its conversion");
        eprintln!(
            "{name}: {} → {} points, {} levels, sampled deviation {sampled:.3e} = {:.2e} h, bound \
             {:.3e}",
            pts.len(),
            q.len(),
            b.max_levels,
            sampled / h,
            b.max_deviation
        );
        assert_eq!(report.curve_type, "BS");
        assert_eq!((report.file_points, report.points), (pts.len(), q.len()));
        assert_eq!(b.curves_over_tolerance, 0, "{name}");
        assert_eq!(b.max_levels, levels(pts.len(), q.len(), closed), "{name}");
        // The bound is a bound, and within the tolerance; the sampled deviation is under both.
        assert!(sampled <= b.max_deviation * (1.0 + 1e-9) + 1e-12, "{name}");
        assert!(
            b.max_deviation <= tol,
            "{name}: {} > {tol}",
            b.max_deviation
        );
        assert!((b.max_relative_deviation - b.max_deviation / h).abs() <= 1e-12 * h.max(1.0));
        // The former knot-point conversion (level 0): far outside the tolerance on sharp polygons
        // and on loop-like curves of 8 points per turn, so those must have been refined.
        let old = knot_point_conversion(&pts, closed);
        let old_dev = sampled_deviation(&pts, &old, closed, 64);
        eprintln!(
            "  knot-point conversion: deviation {old_dev:.3e} = {:.2e} h",
            old_dev / h
        );
        if name.starts_with("square") || name.starts_with("zigzag") || name.starts_with("knit") {
            assert!(old_dev > 10.0 * tol, "{name}: {old_dev}");
            assert!(b.max_levels >= 1, "{name}");
        }
        if b.max_levels == 0 {
            assert!(old_dev <= tol, "{name}");
        }
        // Every file knot is a control point of the conversion.
        let m = b.max_levels;
        let knots: Vec<usize> = if closed {
            (0..pts.len()).collect()
        } else {
            (1..pts.len() - 1).collect()
        };
        for k in knots {
            let at = if closed { k << m } else { ((k - 1) << m) + 1 };
            let want = bspline_at(&pts, closed, k as f64);
            for d in 0..3 {
                let scale = 1.0 + want[d].abs();
                assert!(
                    (q[at][d] as f64 - want[d]).abs() <= 1e-6 * scale,
                    "{name}: knot {k}"
                );
            }
        }
        // Open curves: the ends and the end tangents are the B-spline's (tangent per refined
        // parameter = per file parameter / 2^m).
        if !closed {
            let v = |i: usize| yarnsim::math::V3::<f64>::from3(q[i]);
            let nq = q.len();
            let n = pts.len();
            let s = (1u64 << m) as f64;
            let cr_start = spline::eval_deriv(&[v(0), v(1), v(2), v(3)], 0.0) * s;
            let cr_end = spline::eval_deriv(&[v(nq - 4), v(nq - 3), v(nq - 2), v(nq - 1)], 1.0) * s;
            let bs_start: [f64; 3] = std::array::from_fn(|d| (pts[2][d] - pts[0][d]) as f64 / 2.0);
            let bs_end: [f64; 3] =
                std::array::from_fn(|d| (pts[n - 1][d] - pts[n - 3][d]) as f64 / 2.0);
            for (d, (s0, e0)) in bs_start.iter().zip(&bs_end).enumerate() {
                assert!((cr_start.get(d) - s0).abs() < 1e-5 * h.max(1.0), "{name}");
                assert!((cr_end.get(d) - e0).abs() < 1e-5 * h.max(1.0), "{name}");
            }
        }
    }
}

/// The reader's former conversion: Catmull-Rom through the B-spline's knot points (open curves with
/// handles giving the B-spline's end tangents), no refinement.
fn knot_point_conversion(p: &[[f32; 3]], closed: bool) -> Vec<[f32; 3]> {
    let n = p.len();
    let knot = |i: usize| -> [f32; 3] {
        std::array::from_fn(|k| {
            ((p[(i + n - 1) % n][k] as f64 + 4.0 * p[i][k] as f64 + p[(i + 1) % n][k] as f64) / 6.0)
                as f32
        })
    };
    if closed {
        return (0..n).map(knot).collect();
    }
    let mut q: Vec<[f32; 3]> = vec![[0.0; 3]];
    q.extend((1..n - 1).map(knot));
    q.push([0.0; 3]);
    q[0] = std::array::from_fn(|k| q[2][k] - (p[2][k] - p[0][k]));
    q[n - 1] = std::array::from_fn(|k| q[n - 3][k] + (p[n - 1][k] - p[n - 3][k]));
    q
}

/// A square B-spline loop A in the xy-plane and a long loop B that passes straight up through A's
/// plane between A's true curve and the Catmull-Rom curve through A's knot points. The true linking
/// number is ±1 (B passes inside A); the former knot-point conversion puts B outside A (0). The
/// reader's conversion must certify the file's topology.
#[test]
fn links_of_a_bspline_file_certify_the_file_curves() {
    use yarnsim::links::{certificate_with, links_command, polyline_linking, Certificate, Method};
    let a = vec![
        [-1.0, 1.0, 0.0],
        [1.0, 1.0, 0.0],
        [1.0, -1.0, 0.0],
        [-1.0, -1.0, 0.0],
    ];
    // A's B-spline crosses y = 0 at x = 44/48 = 0.9167 (mid-segment); the Catmull-Rom through its
    // knots (±2/3, ±2/3) at x = 5/6 = 0.8333. B's straight strand runs at x = 0.875, midway.
    let x = 0.875f32;
    let mut b: Vec<[f32; 3]> = (-3..=3).map(|z| [x, 0.0, z as f32]).collect();
    b.extend([
        [3.0, 0.0, 3.0],
        [5.0, 0.0, 3.0],
        [5.0, 0.0, 0.0],
        [5.0, 0.0, -3.0],
        [3.0, 0.0, -3.0],
    ]);
    // The truth: both B-splines sampled densely, Gauss integral summed directly.
    let dense = |p: &[[f32; 3]]| -> Vec<yarnsim::math::V3d> {
        let n = p.len();
        (0..n * 400)
            .map(|i| {
                let v = bspline_at(p, true, i as f64 / 400.0);
                yarnsim::math::V3d::new(v[0], v[1], v[2])
            })
            .collect()
    };
    let truth = polyline_linking(&dense(&a), &dense(&b));
    assert!(
        (truth.abs() - 1.0).abs() < 1e-3,
        "true Gauss integral {truth}"
    );
    let truth = truth.round() as i64;
    // The former conversion certifies another topology: that is what this construction tests.
    let old = [
        Curve {
            points: knot_point_conversion(&a, true),
            closed: true,
        },
        Curve {
            points: knot_point_conversion(&b, true),
            closed: true,
        },
    ];
    for method in [Method::Crossings, Method::Direct] {
        let cert = certificate_with(&old, method).unwrap();
        assert!(
            cert.links.is_empty(),
            "the knot-point conversion links A and B: {cert}"
        );
    }
    // The reader's conversion certifies the file's curves, by both methods, from bytes and file.
    let bytes = raw(b"BS", &[(-4, a.clone()), (-(b.len() as i32), b.clone())]);
    let curves = bcc::read_bytes(&bytes).unwrap();
    let want = Certificate::parse(&format!("2\n0,1,{truth}\n")).unwrap();
    for method in [Method::Crossings, Method::Direct] {
        let cert = certificate_with(&curves, method).unwrap();
        assert_eq!(cert, want, "{method:?}");
    }
    let dir = std::env::temp_dir().join(format!("yarnsim-bcc-links-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("ab.bcc");
    std::fs::write(&path, &bytes).unwrap();
    assert_eq!(links_command(&path, Method::Crossings).unwrap(), want);
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A looser tolerance uses fewer levels and stays within it; a tolerance that is not a positive
/// number is an error.
#[test]
fn bspline_tolerance_option() {
    let pts: Vec<[f32; 3]> = loop_like_helix();
    let bytes = raw(b"BS", &[(-24, pts.clone())]);
    let h = spacing(&pts, true);
    let mut last_levels = u32::MAX;
    for tol in [1e-4, 1e-3, 1e-2, 1e-1] {
        let opts = bcc::ReadOptions {
            bspline_tolerance: tol,
        };
        let (c, report) = bcc::read_bytes_with_options(&bytes, &opts).unwrap();
        let b = report.bspline.unwrap();
        let sampled = sampled_deviation(&pts, &c[0].points, true, 64);
        eprintln!(
            "tolerance {tol:.0e}: {} levels, {} points, sampled {:.2e} h, bound {:.2e} h",
            b.max_levels,
            c[0].points.len(),
            sampled / h,
            b.max_relative_deviation
        );
        assert_eq!(b.tolerance, tol);
        assert!(b.max_relative_deviation <= tol && sampled <= b.max_deviation * (1.0 + 1e-9));
        assert!(b.max_levels <= last_levels);
        last_levels = b.max_levels;
    }
    assert!(last_levels <= 1, "{last_levels}");
    for bad in [0.0, -1e-3, f64::NAN, f64::INFINITY] {
        let opts = bcc::ReadOptions {
            bspline_tolerance: bad,
        };
        let err = bcc::read_bytes_with_options(&bytes, &opts).unwrap_err();
        assert!(matches!(err, BccError::Tolerance(_)), "{err}");
    }
}

/// A loop-like helix: 24 control points, 8 per turn, as in yarn-level models.
fn loop_like_helix() -> Vec<[f32; 3]> {
    (0..24)
        .map(|i| {
            let a = std::f32::consts::TAU * i as f32 / 8.0;
            [
                0.3 * a.cos() + 0.05 * i as f32,
                0.3 * a.sin(),
                0.1 * (2.0 * a).sin(),
            ]
        })
        .collect()
}

/// A BCC file read from a pipe: read as far as its header says, and data past that refused
/// without claiming a count it never read (the reader stops one byte past the header's length).
#[cfg(unix)]
#[test]
fn a_stream_with_bytes_past_its_header_is_refused_without_a_false_count() {
    let dir = std::env::temp_dir().join(format!("yarnsim-bcc-fifo-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let body = bcc::write_bytes(&sample_curves());
    for (name, extra) in [("clean", 0usize), ("trailing", 10)] {
        let fifo = dir.join(name);
        let _ = std::fs::remove_file(&fifo);
        let c = std::ffi::CString::new(fifo.as_os_str().as_encoded_bytes()).unwrap();
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        let mut data = body.clone();
        data.extend(std::iter::repeat_n(7u8, extra));
        let writer = {
            let fifo = fifo.clone();
            // (A broken pipe, once the reader stops, is the writer's expected end.)
            std::thread::spawn(move || {
                use std::io::Write;
                let _ = std::fs::OpenOptions::new()
                    .write(true)
                    .open(&fifo)
                    .and_then(|mut f| f.write_all(&data));
            })
        };
        let got = bcc::read(&fifo);
        writer.join().unwrap();
        match (extra, got) {
            (0, Ok(curves)) => assert_eq!(curves.len(), sample_curves().len()),
            (0, Err(e)) => panic!("a clean stream was refused: {e}"),
            (_, Ok(_)) => panic!("bytes past the header's length were taken"),
            (_, Err(e)) => {
                let e = e.to_string();
                assert!(e.contains("more bytes follow"), "{e}");
                assert!(!e.contains("1 trailing"), "{e}");
            }
        }
    }
    std::fs::remove_dir_all(&dir).unwrap();
}
