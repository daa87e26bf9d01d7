//! Gauss linking numbers and the linking certificate.

use std::f64::consts::TAU;
use yarnsim::links::{certificate, linking_number, polyline_linking, LinkError};
use yarnsim::state::Curve;

/// A ring of radius `rad` about `c` in the plane spanned by unit `u`, `v`, with `n` control points.
fn ring(c: [f64; 3], u: [f64; 3], v: [f64; 3], rad: f64, n: usize) -> Curve {
    let points = (0..n)
        .map(|i| {
            let a = TAU * i as f64 / n as f64;
            let (ca, sa) = (a.cos(), a.sin());
            [0, 1, 2].map(|k| (c[k] + rad * (ca * u[k] + sa * v[k])) as f32)
        })
        .collect();
    Curve {
        points,
        closed: true,
    }
}

/// A curve on the torus about the unit circle in the xy-plane, winding `q` times around its core.
fn torus_curve(q: usize, rho: f64, n: usize) -> Curve {
    let points = (0..n)
        .map(|i| {
            let t = TAU * i as f64 / n as f64;
            let w = 1.0 + rho * (q as f64 * t).cos();
            [
                (w * t.cos()) as f32,
                (w * t.sin()) as f32,
                (rho * (q as f64 * t).sin()) as f32,
            ]
        })
        .collect();
    Curve {
        points,
        closed: true,
    }
}

fn reversed(c: &Curve) -> Curve {
    Curve {
        points: c.points.iter().rev().copied().collect(),
        closed: c.closed,
    }
}

/// An open straight yarn along x at y = 5, away from the rings of the tests.
fn straight_yarn() -> Curve {
    Curve {
        points: vec![
            [0.0, 5.0, 0.0],
            [1.0, 5.0, 0.0],
            [2.0, 5.0, 0.0],
            [3.0, 5.0, 0.0],
        ],
        closed: false,
    }
}

const X: [f64; 3] = [1.0, 0.0, 0.0];
const Y: [f64; 3] = [0.0, 1.0, 0.0];
const Z: [f64; 3] = [0.0, 0.0, 1.0];

#[test]
fn linked_rings_give_plus_or_minus_one() {
    let a = ring([0.0; 3], X, Y, 1.0, 12);
    // Through a's disc, in the xz-plane: a Hopf link.
    let b = ring([1.0, 0.0, 0.0], X, Z, 1.0, 12);
    let lk = linking_number(&a, &b, 0, 1).unwrap();
    assert_eq!(lk.abs(), 1);
    assert_eq!(linking_number(&b, &a, 1, 0).unwrap(), lk, "symmetric");
    assert_eq!(
        linking_number(&a, &reversed(&b), 0, 1).unwrap(),
        -lk,
        "orientation flips the sign"
    );
    // The mirror image flips it too.
    let mirror = |c: &Curve| Curve {
        points: c.points.iter().map(|p| [p[0], p[1], -p[2]]).collect(),
        closed: true,
    };
    assert_eq!(linking_number(&mirror(&a), &mirror(&b), 0, 1).unwrap(), -lk);
}

#[test]
fn unlinked_rings_give_zero() {
    let a = ring([0.0; 3], X, Y, 1.0, 10);
    // Beside it, interpenetrating the bounding box but not the disc.
    let b = ring([2.5, 0.0, 0.0], X, Z, 1.0, 10);
    assert_eq!(linking_number(&a, &b, 0, 1).unwrap(), 0);
    // Coaxial, stacked.
    let c = ring([0.0, 0.0, 0.5], X, Y, 1.0, 9);
    assert_eq!(linking_number(&a, &c, 0, 1).unwrap(), 0);
    // Concentric, one inside the other in the same plane.
    let d = ring([0.0; 3], X, Y, 0.4, 9);
    assert_eq!(linking_number(&a, &d, 0, 1).unwrap(), 0);
}

#[test]
fn curve_winding_twice_around_a_ring_gives_two() {
    let core = ring([0.0; 3], X, Y, 1.0, 16);
    let twice = torus_curve(2, 0.3, 40);
    assert_eq!(linking_number(&core, &twice, 0, 1).unwrap().abs(), 2);
    let thrice = torus_curve(3, 0.3, 60);
    assert_eq!(linking_number(&core, &thrice, 0, 1).unwrap().abs(), 3);
    // Same orientation, same sign as a single winding.
    let once = torus_curve(1, 0.3, 24);
    let s1 = linking_number(&core, &once, 0, 1).unwrap();
    assert_eq!(s1.abs(), 1);
    assert_eq!(linking_number(&core, &twice, 0, 1).unwrap(), 2 * s1);
}

#[test]
fn near_intersection_is_an_error_not_a_guess() {
    // Square loops through a shared point: the integral is a half-integer.
    let a: Vec<_> = [
        [-1.0, -1.0, 0.0],
        [1.0, -1.0, 0.0],
        [1.0, 1.0, 0.0],
        [-1.0, 1.0, 0.0],
    ]
    .iter()
    .map(|p: &[f64; 3]| yarnsim::math::V3d::new(p[0], p[1], p[2]))
    .collect();
    // b passes exactly through a's edge at (1, 0, 0).
    let b: Vec<_> = [
        [1.0, 0.0, -1.0],
        [1.0, 0.0, 1.0],
        [3.0, 0.0, 1.0],
        [3.0, 0.0, -1.0],
    ]
    .iter()
    .map(|p: &[f64; 3]| yarnsim::math::V3d::new(p[0], p[1], p[2]))
    .collect();
    let v = polyline_linking(&a, &b);
    assert!((v.abs() - 0.5).abs() < 1e-9, "{v}");
    // Through the certificate: curves crossing each other give an error naming them.
    let r1 = ring([0.0; 3], X, Y, 1.0, 12);
    // A ring through r1's control point (1, 0, 0) itself.
    let r2 = ring([1.0, 0.0, 1.0], X, Z, 1.0, 12);
    match certificate(&[r1, r2]) {
        Err(LinkError::NotInteger { i: 0, j: 1, .. }) => {}
        other => panic!("expected NotInteger, got {other:?}"),
    }
}

#[test]
fn certificate_of_a_chain() {
    // A chain of 6 rings, each linked to the next, alternating planes, plus two open yarns and a
    // far-away ring: the certificate lists exactly the consecutive pairs.
    let mut curves = Vec::new();
    let open = straight_yarn();
    curves.push(open.clone());
    for k in 0..6 {
        let c = [1.6 * k as f64, 0.0, 0.0];
        curves.push(if k % 2 == 0 {
            ring(c, X, Y, 1.0, 12)
        } else {
            ring(c, X, Z, 1.0, 12)
        });
        if k == 2 {
            curves.push(open.clone());
        }
    }
    curves.push(ring([50.0, 0.0, 0.0], X, Y, 1.0, 8));
    let cert = certificate(&curves).unwrap();
    let lines: Vec<&str> = cert.lines().collect();
    assert_eq!(lines[0], "7");
    assert_eq!(lines.len(), 1 + 5, "{cert}");
    for (k, line) in lines[1..].iter().enumerate() {
        let f: Vec<&str> = line.split(',').collect();
        assert_eq!(f.len(), 3);
        assert_eq!(f[0].parse::<usize>().unwrap(), k);
        assert_eq!(f[1].parse::<usize>().unwrap(), k + 1);
        assert_eq!(f[2].parse::<i64>().unwrap().abs(), 1);
    }
    // No closed curves: just the count.
    assert_eq!(certificate(&[open]).unwrap(), "0\n");
}

#[test]
fn certificate_scales_to_thousands_of_loops() {
    // 60 × 60 small rings on a grid, each linked with its right neighbour.
    let mut curves = Vec::new();
    for j in 0..60 {
        for i in 0..60 {
            let c = [1.5 * i as f64, 4.0 * j as f64, 0.0];
            curves.push(if i % 2 == 0 {
                ring(c, X, Y, 1.0, 8)
            } else {
                ring(c, X, Z, 1.0, 8)
            });
        }
    }
    let cert = certificate(&curves).unwrap();
    let lines: Vec<&str> = cert.lines().collect();
    assert_eq!(lines[0], "3600");
    assert_eq!(lines.len() - 1, 60 * 59);
    assert!(lines[1].starts_with("0,1,"));
}

/// `yarnsim links FILE.bcc`: the certificate of a BCC file's curves.
#[test]
fn links_command_reads_bcc() {
    let curves = [
        ring([0.0; 3], X, Y, 1.0, 12),
        straight_yarn(),
        ring([1.0, 0.0, 0.0], X, Z, 1.0, 12),
    ];
    let dir = std::env::temp_dir().join(format!("yarnsim-links-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("hopf.bcc");
    yarnsim::bcc::write(&path, &curves).unwrap();
    let cert = yarnsim::links::links_command(&path).unwrap();
    let lines: Vec<&str> = cert.lines().collect();
    assert_eq!(lines.len(), 2, "{cert}");
    assert_eq!(lines[0], "2");
    assert!(lines[1] == "0,1,1" || lines[1] == "0,1,-1", "{cert}");
    // A missing file is an error naming it.
    let err = yarnsim::links::links_command(&dir.join("missing.bcc")).unwrap_err();
    assert!(err.to_string().contains("missing.bcc"), "{err}");
    std::fs::remove_dir_all(&dir).unwrap();
}
