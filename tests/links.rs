//! Gauss linking numbers and the linking certificate: the crossing count against direct summation
//! of the Gauss integral, on rings, random closed curves and polygons, and knit tubes.

use std::f64::consts::TAU;
use yarnsim::links::{
    certificate, certificate_with, linking_number, polyline_linking, polyline_linking_number,
    projected_crossings, Certificate, Change, LinkError, Method, PROJECTIONS,
};
use yarnsim::math::V3d;
use yarnsim::state::Curve;

#[path = "support/rng.rs"]
mod rng;
#[path = "support/tube.rs"]
mod tube;
use rng::Rng;

const METHODS: [Method; 2] = [Method::Crossings, Method::Direct];

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

fn v(p: [f64; 3]) -> V3d {
    V3d::new(p[0], p[1], p[2])
}

const X: [f64; 3] = [1.0, 0.0, 0.0];
const Y: [f64; 3] = [0.0, 1.0, 0.0];
const Z: [f64; 3] = [0.0, 0.0, 1.0];

#[test]
fn linked_rings_give_plus_or_minus_one() {
    for m in METHODS {
        let lk_of = |a: &Curve, b: &Curve| linking_number(a, b, m, 0, 1).unwrap();
        let a = ring([0.0; 3], X, Y, 1.0, 12);
        // Through a's disc, in the xz-plane: a Hopf link.
        let b = ring([1.0, 0.0, 0.0], X, Z, 1.0, 12);
        let lk = lk_of(&a, &b);
        assert_eq!(lk.abs(), 1, "{m:?}");
        assert_eq!(lk_of(&b, &a), lk, "{m:?}: symmetric");
        assert_eq!(lk_of(&a, &reversed(&b)), -lk, "{m:?}: orientation");
        // The mirror image flips it too.
        let mirror = |c: &Curve| Curve {
            points: c.points.iter().map(|p| [p[0], p[1], -p[2]]).collect(),
            closed: true,
        };
        assert_eq!(lk_of(&mirror(&a), &mirror(&b)), -lk, "{m:?}: mirror");
    }
    // Both methods give the same sign.
    let a = ring([0.0; 3], X, Y, 1.0, 12);
    let b = ring([1.0, 0.0, 0.0], X, Z, 1.0, 12);
    assert_eq!(
        linking_number(&a, &b, Method::Crossings, 0, 1).unwrap(),
        linking_number(&a, &b, Method::Direct, 0, 1).unwrap()
    );
}

#[test]
fn unlinked_rings_give_zero() {
    for m in METHODS {
        let a = ring([0.0; 3], X, Y, 1.0, 10);
        // Beside it, interpenetrating the bounding box but not the disc.
        let b = ring([2.5, 0.0, 0.0], X, Z, 1.0, 10);
        assert_eq!(linking_number(&a, &b, m, 0, 1).unwrap(), 0, "{m:?}");
        // Coaxial, stacked.
        let c = ring([0.0, 0.0, 0.5], X, Y, 1.0, 9);
        assert_eq!(linking_number(&a, &c, m, 0, 1).unwrap(), 0, "{m:?}");
        // Concentric, one inside the other in the same plane.
        let d = ring([0.0; 3], X, Y, 0.4, 9);
        assert_eq!(linking_number(&a, &d, m, 0, 1).unwrap(), 0, "{m:?}");
    }
}

#[test]
fn curve_winding_twice_around_a_ring_gives_two() {
    for m in METHODS {
        let lk = |a: &Curve, b: &Curve| linking_number(a, b, m, 0, 1).unwrap();
        let core = ring([0.0; 3], X, Y, 1.0, 16);
        let twice = torus_curve(2, 0.3, 40);
        assert_eq!(lk(&core, &twice).abs(), 2, "{m:?}");
        let thrice = torus_curve(3, 0.3, 60);
        assert_eq!(lk(&core, &thrice).abs(), 3, "{m:?}");
        // Same orientation, same sign as a single winding.
        let once = torus_curve(1, 0.3, 24);
        let s1 = lk(&core, &once);
        assert_eq!(s1.abs(), 1, "{m:?}");
        assert_eq!(lk(&core, &twice), 2 * s1, "{m:?}");
    }
}

/// Loops that meet in a common plane are an error too, by both methods: two identical rings, and
/// two rings in one plane crossing each other (every segment pair there has no orientation, and
/// was counted as 0: both were certified unlinked, exit 0). Two coplanar rings apart are unlinked.
#[test]
fn coplanar_loops_that_meet_are_an_error() {
    let (x, y) = ([1.0, 0.0, 0.0], [0.0, 1.0, 0.0]);
    let a = ring([0.0; 3], x, y, 1.0, 12);
    let crossing = ring([1.0, 0.0, 0.0], x, y, 1.0, 12);
    let apart = ring([5.0, 0.0, 0.0], x, y, 1.0, 12);
    for m in METHODS {
        for other in [&a, &crossing] {
            let r = certificate_with(&[a.clone(), other.clone()], m);
            assert!(
                matches!(r, Err(LinkError::NotInteger { i: 0, j: 1, .. })),
                "{m:?}: {r:?}"
            );
        }
        let r = certificate_with(&[a.clone(), apart.clone()], m).unwrap();
        assert!(r.links.is_empty(), "{m:?}: {r:?}");
    }
}

#[test]
fn near_intersection_is_an_error_not_a_guess() {
    // Square loops through a shared point: the integral is undefined there (the segments that
    // meet give no value; summed without them it was a half-integer).
    let a: Vec<_> = [
        [-1.0, -1.0, 0.0],
        [1.0, -1.0, 0.0],
        [1.0, 1.0, 0.0],
        [-1.0, 1.0, 0.0],
    ]
    .map(v)
    .to_vec();
    // b passes exactly through a's edge at (1, 0, 0).
    let b: Vec<_> = [
        [1.0, 0.0, -1.0],
        [1.0, 0.0, 1.0],
        [3.0, 0.0, 1.0],
        [3.0, 0.0, -1.0],
    ]
    .map(v)
    .to_vec();
    let val = polyline_linking(&a, &b);
    assert!(val.is_nan(), "{val}");
    // No projection can decide the crossing at the shared point: every one is uncertain.
    for d in PROJECTIONS {
        assert_eq!(projected_crossings(&a, &b, v(d)), None, "{d:?}");
    }
    assert!(matches!(
        polyline_linking_number(&a, &b, 0, 1),
        Err(LinkError::NotInteger { i: 0, j: 1, .. })
    ));
    // A non-finite point is never counted as unlinked.
    let mut nan = b.clone();
    nan[2].x = f64::NAN;
    assert_eq!(projected_crossings(&a, &nan, v(PROJECTIONS[0])), None);
    assert!(polyline_linking_number(&a, &nan, 0, 1).is_err());
    // Through the certificate: curves crossing each other give an error naming them, with either
    // method (the crossing count falls back to the direct sum, which is not near an integer).
    let r1 = ring([0.0; 3], X, Y, 1.0, 12);
    // A ring through r1's control point (1, 0, 0) itself.
    let r2 = ring([1.0, 0.0, 1.0], X, Z, 1.0, 12);
    for m in METHODS {
        match certificate_with(&[r1.clone(), r2.clone()], m) {
            Err(LinkError::NotInteger { i: 0, j: 1, .. }) => {}
            other => panic!("{m:?}: expected NotInteger, got {other:?}"),
        }
    }
}

/// A vertex of one polygon and a vertex of the other on one line along the first projection
/// direction: that projection is not regular, so it reports no count, and the next one gives the
/// linking number of the direct sum. Also far from the origin, where the rounding of the projected
/// coordinates (about 1e-13 here) is larger than that of the orientation arithmetic.
#[test]
fn a_degenerate_projection_is_refused_and_another_one_used() {
    let d = v(PROJECTIONS[0]);
    let d = d / d.norm();
    for o in [[0.0; 3], [1000.0, -700.0, 300.0]].map(v) {
        // b: a square in the xz-plane through the inside of a (at the origin) and outside it (at
        // x = 2).
        let b: Vec<V3d> = [
            [0.0, 0.0, -1.0],
            [2.0, 0.0, -1.0],
            [2.0, 0.0, 1.0],
            [0.0, 0.0, 1.0],
        ]
        .map(|p| v(p) + o)
        .to_vec();
        // a: the unit square in the xy-plane with one more vertex, where the line through b's
        // vertex (2, 0, 1) along d meets a's plane (outside the square, towards −y): a stays planar,
        // and b still meets its plane once inside (origin) and once outside (x = 2, y = 0).
        let w = b[2];
        let on_line = w - d * ((w.z - o.z) / d.z);
        let local = on_line - o;
        assert!(local.x > 1.0 && local.y < -1.0, "{local:?}");
        let a: Vec<V3d> = vec![
            v([1.0, 1.0, 0.0]) + o,
            v([-1.0, 1.0, 0.0]) + o,
            v([-1.0, -1.0, 0.0]) + o,
            V3d::new(on_line.x, on_line.y, o.z),
            v([1.0, -1.0, 0.0]) + o,
        ];
        let direct = polyline_linking(&a, &b);
        assert!((direct.abs() - 1.0).abs() < 1e-6, "{o:?}: {direct}");
        assert_eq!(projected_crossings(&a, &b, d), None, "{o:?}");
        let c = projected_crossings(&a, &b, v(PROJECTIONS[1])).expect("a regular projection");
        assert_eq!(c.b_above, c.b_below, "{o:?}");
        assert_eq!(c.b_above, direct.round() as i64, "{o:?}");
        assert_eq!(
            polyline_linking_number(&a, &b, 0, 1).unwrap(),
            direct.round() as i64,
            "{o:?}"
        );
    }
}

impl Rng {
    fn point(&mut self, half: f64) -> V3d {
        V3d::new(
            self.range(-half, half),
            self.range(-half, half),
            self.range(-half, half),
        )
    }
}

/// Random closed polygons, 5 to 40 vertices in overlapping cubes: every projection that gives a count
/// gives the same one on both sides, equal to the rounded direct sum, and most projections give one.
#[test]
fn crossings_agree_with_direct_summation_on_random_polygons() {
    let mut rng = Rng(0x5eed_1157_0000_0001);
    let (mut linked, mut unlinked, mut multiple, mut counted, mut refused) = (0, 0, 0, 0, 0);
    for case in 0..300 {
        let na = 5 + (rng.next_f64() * 36.0) as usize;
        let nb = 5 + (rng.next_f64() * 36.0) as usize;
        let a: Vec<V3d> = (0..na).map(|_| rng.point(1.0)).collect();
        let shift = rng.point(0.8);
        let b: Vec<V3d> = (0..nb).map(|_| rng.point(1.0) + shift).collect();
        let direct = polyline_linking(&a, &b);
        let lk = direct.round();
        assert!(
            (direct - lk).abs() < 1e-6,
            "case {case}: direct sum {direct}"
        );
        let lk = lk as i64;
        for d in PROJECTIONS {
            match projected_crossings(&a, &b, v(d)) {
                Some(c) => {
                    counted += 1;
                    assert_eq!((c.b_above, c.b_below), (lk, lk), "case {case}, {d:?}");
                    assert_eq!((c.count as i64 - 2 * lk) % 2, 0, "case {case}");
                }
                None => refused += 1,
            }
        }
        assert_eq!(polyline_linking_number(&a, &b, 0, 1).unwrap(), lk);
        match lk.abs() {
            0 => unlinked += 1,
            1 => linked += 1,
            _ => multiple += 1,
        }
    }
    eprintln!("{unlinked} unlinked, {linked} with |Lk| = 1, {multiple} with |Lk| > 1; {refused} of {} projections refused", counted + refused);
    assert!(unlinked >= 30 && linked >= 30 && multiple >= 10);
    assert!(
        refused * 100 <= counted,
        "{refused} refused, {counted} counted"
    );
}

/// A random smooth closed curve: a centre plus three Fourier modes of random amplitude.
fn fourier_curve(rng: &mut Rng, centre: V3d, n: usize) -> Curve {
    let modes: Vec<(V3d, V3d)> = (1..=3)
        .map(|k| (rng.point(1.0 / k as f64), rng.point(1.0 / k as f64)))
        .collect();
    let points = (0..n)
        .map(|i| {
            let t = TAU * i as f64 / n as f64;
            let p = modes.iter().enumerate().fold(centre, |p, (k, (c, s))| {
                let kt = (k + 1) as f64 * t;
                p + *c * kt.cos() + *s * kt.sin()
            });
            p.to3()
        })
        .collect();
    Curve {
        points,
        closed: true,
    }
}

/// Random smooth closed curves as Catmull-Rom yarns, linked and unlinked: the crossing count gives
/// the linking number of direct summation, pair by pair and as certificates of several curves.
#[test]
fn crossings_agree_with_direct_summation_on_random_curves() {
    let mut rng = Rng(0x5eed_1157_0000_0002);
    let (mut linked, mut unlinked) = (0, 0);
    for case in 0..60 {
        let a = fourier_curve(&mut rng, V3d::zero(), 24);
        let centre = rng.point(0.7);
        let b = fourier_curve(&mut rng, centre, 30);
        let fast = linking_number(&a, &b, Method::Crossings, 0, 1).unwrap();
        let direct = linking_number(&a, &b, Method::Direct, 0, 1).unwrap();
        assert_eq!(fast, direct, "case {case}");
        if fast == 0 {
            unlinked += 1;
        } else {
            linked += 1;
        }
    }
    eprintln!("{linked} linked, {unlinked} unlinked");
    assert!(linked >= 10 && unlinked >= 10);
    // Certificates of eight curves in one box: many pairs, both methods alike.
    for scene in 0..4 {
        let curves: Vec<Curve> = (0..8)
            .map(|_| {
                let c = rng.point(1.5);
                fourier_curve(&mut rng, c, 20)
            })
            .collect();
        let fast = certificate_with(&curves, Method::Crossings).unwrap();
        let direct = certificate_with(&curves, Method::Direct).unwrap();
        assert_eq!(fast, direct, "scene {scene}");
        assert!(!fast.links.is_empty(), "scene {scene}: {fast}");
    }
}

/// The generated tube: adjacent courses cross each other many times in projection and have linking
/// number 0, by both methods; with one leg pushed through the course below, that pair alone becomes
/// ±1, by both methods, and the certificates' difference names it.
#[test]
fn tube_certificates_agree_and_a_pushed_leg_changes_one_pair() {
    let (wales, courses) = (12, 5);
    let t = tube::tube(wales, courses);
    assert!(t.iter().all(|c| c.closed));
    let samples = |c: &Curve| yarnsim::links::sample_closed(&c.points, 6);
    for c in 0..courses as usize - 1 {
        let (a, b) = (samples(&t[c]), samples(&t[c + 1]));
        let n = projected_crossings(&a, &b, v(PROJECTIONS[0])).expect("regular");
        assert!(
            n.count >= 2 * wales as usize,
            "courses {c}, {}: {n:?}",
            c + 1
        );
        assert_eq!((n.b_above, n.b_below), (0, 0));
    }
    let fast = certificate_with(&t, Method::Crossings).unwrap();
    let direct = certificate_with(&t, Method::Direct).unwrap();
    assert_eq!(fast, direct);
    assert_eq!(fast.to_string(), "5\n");

    let pushed = tube::push_leg_through(&t, 4, 2);
    let fast2 = certificate_with(&pushed, Method::Crossings).unwrap();
    let direct2 = certificate_with(&pushed, Method::Direct).unwrap();
    assert_eq!(fast2, direct2);
    let changes = fast.changes_to(&fast2);
    assert_eq!(changes.len(), 1, "{fast2}");
    let Change { i, j, old, new } = changes[0];
    assert_eq!((i, j, old, new.abs()), (1, 2, 0, 1), "{fast2}");
    // Back again: the reverse difference.
    assert_eq!(
        fast2.changes_to(&fast),
        vec![Change {
            i,
            j,
            old: new,
            new: 0
        }]
    );
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
    assert_eq!(
        certificate_with(&curves, Method::Direct)
            .unwrap()
            .to_string(),
        cert
    );
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

#[test]
fn certificate_text_round_trips_and_bad_text_is_an_error() {
    let cert = Certificate::parse("4\n0,1,1\n2,3,-2\n").unwrap();
    assert_eq!(cert.loops, 4);
    assert_eq!(cert.links.len(), 2);
    assert_eq!(cert.to_string(), "4\n0,1,1\n2,3,-2\n");
    // Order and blank lines do not matter.
    assert_eq!(Certificate::parse("\n4\n2,3,-2\n\n0,1,1").unwrap(), cert);
    let new = Certificate::parse("4\n0,1,1\n1,2,1\n2,3,2\n").unwrap();
    assert_eq!(
        cert.changes_to(&new),
        vec![
            Change {
                i: 1,
                j: 2,
                old: 0,
                new: 1
            },
            Change {
                i: 2,
                j: 3,
                old: -2,
                new: 2
            },
        ]
    );
    assert_eq!(cert.changes_to(&new)[1].to_string(), "2,3,-2,2");
    assert!(cert.changes_to(&cert).is_empty());
    for (text, line, what) in [
        ("", 1, "empty"),
        ("x\n", 1, "number of closed curves"),
        ("3\n0,1\n", 2, "expected i,j,Lk"),
        ("3\n0,1,a\n", 2, "expected i,j,Lk"),
        ("3\n1,0,1\n", 2, "not i < j"),
        ("3\n0,3,1\n", 2, "not i < j"),
        ("3\n0,1,0\n", 2, "linking number 0"),
        ("3\n0,1,1\n\n0,1,-1\n", 4, "twice"),
    ] {
        match Certificate::parse(text) {
            Err(e @ LinkError::Parse { line: l, .. }) => {
                assert_eq!(l, line, "{text:?}: {e}");
                assert!(e.to_string().contains(what), "{text:?}: {e}");
            }
            other => panic!("{text:?}: {other:?}"),
        }
    }
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
    let cert = yarnsim::links::links_command(&path, Method::Crossings)
        .unwrap()
        .to_string();
    let lines: Vec<&str> = cert.lines().collect();
    assert_eq!(lines.len(), 2, "{cert}");
    assert_eq!(lines[0], "2");
    assert!(lines[1] == "0,1,1" || lines[1] == "0,1,-1", "{cert}");
    // A missing file is an error naming it.
    let err =
        yarnsim::links::links_command(&dir.join("missing.bcc"), Method::Crossings).unwrap_err();
    assert!(err.to_string().contains("missing.bcc"), "{err}");
    std::fs::remove_dir_all(&dir).unwrap();
}
