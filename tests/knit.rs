//! Knit generators: loop counts, control points per loop, the ≥ 1.6 r clearance between parts of yarn
//! that are not neighbours along the yarn, and that courses really interlock (each loop's legs pass
//! through the loop below, which a stack of loops would not do).

use yarnsim::knit::{self, Knit, KnitError, Shape};
use yarnsim::links::polyline_linking;
use yarnsim::math::V3;
use yarnsim::scene::Pattern;
use yarnsim::state::Topology;

#[path = "support/interlock.rs"]
mod interlock;
use interlock::interlock_numbers;

const PATTERNS: [Pattern; 5] = [
    Pattern::Stockinette,
    Pattern::Garter,
    Pattern::Rib,
    Pattern::Tube,
    Pattern::Sack,
];

fn total_points(k: &Knit) -> usize {
    k.curves.iter().map(|c| c.points.len()).sum()
}

#[test]
fn loop_counts_and_points_per_loop() {
    for pattern in PATTERNS {
        for (w, c) in [(12, 12), (8, 5), (36, 9)] {
            let k = knit::generate(pattern, w, c, 0.125).unwrap();
            assert_eq!(k.loops, w * c, "{pattern:?}");
            let per_loop = total_points(&k) as f64 / k.loops as f64;
            // 8 per loop; a flat swatch adds a sinker and a turn per course and two handles.
            assert!(
                (8.0..=8.0 + 2.5 / w as f64 + 2.0 / k.loops as f64).contains(&per_loop),
                "{pattern:?} {w}×{c}: {per_loop}"
            );
            let (topo, _) = Topology::from_curves(&k.curves).unwrap();
            if pattern.is_round() {
                assert_eq!(k.curves.len(), c as usize);
                for curve in &k.curves {
                    assert!(curve.closed);
                    assert_eq!(curve.points.len(), 8 * w as usize);
                }
            } else {
                assert_eq!(k.curves.len(), 1, "a flat swatch is one continuous yarn");
                assert!(!k.curves[0].closed);
            }
            let segs_per_loop = topo.segments.len() as f64 / k.loops as f64;
            assert!((7.9..8.4).contains(&segs_per_loop), "{segs_per_loop}");
        }
    }
}

#[test]
fn every_point_belongs_to_a_loop_and_every_loop_has_its_points() {
    for pattern in PATTERNS {
        let (w, c) = (9, 4);
        let k = knit::generate(pattern, w, c, 0.125).unwrap();
        assert_eq!(k.point_loop.len(), k.curves.len());
        let mut count = vec![0u32; (w * c) as usize];
        for (pl, curve) in k.point_loop.iter().zip(&k.curves) {
            assert_eq!(pl.len(), curve.points.len());
            for &[wale, course] in pl {
                assert!(wale < w && course < c);
                count[(course * w + wale) as usize] += 1;
            }
        }
        assert!(
            count.iter().all(|&n| (8..=12).contains(&n)),
            "{pattern:?}: {count:?}"
        );
    }
}

#[test]
fn flat_swatch_ends_are_tangent_handles() {
    let k = knit::generate(Pattern::Stockinette, 5, 3, 0.125).unwrap();
    let p = &k.curves[0].points;
    let n = p.len();
    // The yarn starts at point 1 and ends at point n − 2; the handles beyond them continue the
    // first and last edges straight on.
    let reflected = |end: [f32; 3], next: [f32; 3]| -> [f32; 3] {
        std::array::from_fn(|d| 2.0 * end[d] - next[d])
    };
    let close = |a: [f32; 3], b: [f32; 3]| a.iter().zip(&b).all(|(x, y)| (x - y).abs() < 1e-5);
    assert!(close(p[0], reflected(p[1], p[2])));
    assert!(close(p[n - 1], reflected(p[n - 2], p[n - 3])));
}

#[test]
fn loops_have_realistic_size() {
    // Real stockinette: a loop is about 4–5 yarn diameters wide, courses a little closer than wales.
    let r = 0.125;
    let (w, c) = (20, 20);
    let k = knit::generate(Pattern::Stockinette, w, c, r).unwrap();
    // Head tops are the highest points of their loops; their spacing is the wale and course pitch.
    let top = |wale: u32, course: u32| -> [f32; 3] {
        let pts = k.curves[0].points.iter().zip(&k.point_loop[0]);
        pts.filter(|(_, l)| **l == [wale, course])
            .map(|(p, _)| *p)
            .max_by(|a, b| a[1].total_cmp(&b[1]))
            .unwrap()
    };
    let wale_pitch = (top(15, 10)[0] - top(5, 10)[0]) / 10.0;
    let course_pitch = (top(10, 15)[1] - top(10, 5)[1]) / 10.0;
    let d = 2.0 * r;
    assert!(
        (4.0 * d..=5.0 * d).contains(&wale_pitch),
        "wale pitch {wale_pitch}"
    );
    assert!(
        (0.6 * wale_pitch..=0.9 * wale_pitch).contains(&course_pitch),
        "course pitch {course_pitch}"
    );
    // Depth: the fabric is a few yarn diameters thick, not more.
    let (zmin, zmax) = k.curves[0]
        .points
        .iter()
        .fold((f32::MAX, f32::MIN), |(a, b), p| (a.min(p[2]), b.max(p[2])));
    assert!(zmax - zmin + d <= 4.0 * d, "thickness {}", zmax - zmin + d);
}

/// Brute force over all sample pairs: the oracle for `knit::min_separation`'s grid search.
fn brute_min_separation(s: &knit::Samples, exclusion: f64) -> f64 {
    let mut best = f64::MAX;
    for i in 0..s.pos.len() {
        for j in i + 1..s.pos.len() {
            if s.neighbours_along_yarn(i, j, exclusion) {
                continue;
            }
            best = best.min((s.pos[i] - s.pos[j]).norm());
        }
    }
    best
}

#[test]
fn grid_search_matches_brute_force() {
    for pattern in PATTERNS {
        let k = knit::generate(pattern, 8, 3, 0.2).unwrap();
        let s = knit::sample_curves(&k.curves, 6);
        let ex = knit::NEIGHBOUR_ARC * 0.2;
        let brute = brute_min_separation(&s, ex);
        let (grid, _, _) = knit::min_separation(&s, ex, 10.0);
        assert!(
            (brute - grid).abs() < 1e-12,
            "{pattern:?}: {brute} vs {grid}"
        );
        // With a cutoff below the true minimum, the grid reports the cutoff.
        let (capped, _, _) = knit::min_separation(&s, ex, 0.5 * brute);
        assert_eq!(capped, 0.5 * brute);
    }
}

#[test]
fn minimum_distance_is_at_least_1_6_r() {
    for r in [0.125f32, 0.3] {
        for pattern in PATTERNS {
            let sizes: &[(u32, u32)] = if pattern.is_round() {
                &[(8, 5), (13, 4)]
            } else {
                &[(8, 8), (1, 3), (2, 2)]
            };
            for &(w, c) in sizes {
                let k = knit::generate(pattern, w, c, r).unwrap();
                let s = knit::sample_curves(&k.curves, 16);
                let ex = knit::NEIGHBOUR_ARC * r as f64;
                let (d, i, j) = knit::min_separation(&s, ex, 2.0 * r as f64);
                assert!(
                    d >= 1.6 * r as f64,
                    "{pattern:?} {w}×{c} r={r}: {:.3} r between {:?} and {:?}",
                    d / r as f64,
                    s.pos.get(i),
                    s.pos.get(j)
                );
            }
        }
    }
}

fn circle(center: V3<f64>, u: V3<f64>, v: V3<f64>, n: usize) -> Vec<V3<f64>> {
    (0..n)
        .map(|k| {
            let t = k as f64 / n as f64 * std::f64::consts::TAU;
            center + u * t.cos() + v * t.sin()
        })
        .collect()
}

/// The Gauss linking number used by the interlock check is the topology oracle's
/// (`links::polyline_linking`); checked here on the polygon cases the interlock check meets (coarse
/// rings, collinear and coplanar segments).
#[test]
fn linking_number_oracle() {
    let x = V3::new(1.0, 0.0, 0.0);
    let y = V3::new(0.0, 1.0, 0.0);
    let z = V3::new(0.0, 0.0, 1.0);
    let a = circle(V3::zero(), x, y, 40);
    let hopf = circle(x, x, z, 40);
    assert!((polyline_linking(&a, &hopf).abs() - 1.0).abs() < 1e-9);
    let apart = circle(x * 3.0, x, z, 40);
    assert!(polyline_linking(&a, &apart).abs() < 1e-9);
    // A curve on a thin torus about `a` that winds twice around the torus tube: linking number 2.
    let twice: Vec<V3<f64>> = (0..400)
        .map(|k| {
            let t = k as f64 / 400.0 * std::f64::consts::TAU;
            let radial = V3::new(t.cos(), t.sin(), 0.0);
            radial * (1.0 + 0.3 * (2.0 * t).cos()) + z * (0.3 * (2.0 * t).sin())
        })
        .collect();
    assert!((polyline_linking(&a, &twice).abs() - 2.0).abs() < 1e-9);
    // Reversing one ring flips the sign.
    let mut rev = hopf.clone();
    rev.reverse();
    assert!((polyline_linking(&a, &hopf) + polyline_linking(&a, &rev)).abs() < 1e-9);
    // Collinear and coplanar segments between the rings do not upset it.
    let square = vec![
        V3::new(-1.0, -1.0, 0.0),
        V3::new(1.0, -1.0, 0.0),
        V3::new(1.0, 1.0, 0.0),
        V3::new(-1.0, 1.0, 0.0),
    ];
    let through = vec![
        V3::new(0.0, 0.0, -1.0),
        V3::new(0.0, 0.0, 1.0),
        V3::new(0.0, 3.0, 1.0),
        V3::new(0.0, 3.0, -1.0),
    ];
    assert!((polyline_linking(&square, &through).abs() - 1.0).abs() < 1e-9);
    let beside = vec![
        V3::new(-1.0, 2.0, 0.0),
        V3::new(1.0, 2.0, 0.0),
        V3::new(1.0, 3.0, 0.0),
        V3::new(-1.0, 3.0, 0.0),
    ];
    assert!(polyline_linking(&square, &beside).abs() < 1e-9);
}

#[test]
fn courses_interlock() {
    // Not the sack: the check unrolls a round tube by the angle about its axis, which is not a
    // chart of a sack's flattened rings (its ends are tighter than the offsets of the loops seen
    // from the axis). A sack is a tube's flat layout on another ring shape; its clearance is checked
    // above and its topology in the simulation (tests/balls.rs, the small sack).
    for pattern in PATTERNS.into_iter().filter(|&p| p != Pattern::Sack) {
        let (w, c) = if pattern.is_round() { (8, 4) } else { (5, 4) };
        let k = knit::generate(pattern, w, c, 0.125).unwrap();
        let numbers = interlock_numbers(&k, pattern, w, c);
        assert_eq!(numbers.len(), (w * (c - 1)) as usize);
        // The sense of a knit stitch, from stockinette (every stitch knit).
        let knit_sign = {
            let s = knit::generate(Pattern::Stockinette, 2, 2, 0.125).unwrap();
            interlock_numbers(&s, Pattern::Stockinette, 2, 2)[0]
                .0
                .signum()
        };
        for (i, (l, r)) in numbers.iter().enumerate() {
            let (wale, course) = (i as u32 % w, i as u32 / w);
            // Both legs of the upper loop pass through the lower loop, the same way.
            assert!(
                (l.abs() - 1.0).abs() < 1e-6,
                "{pattern:?} loop ({wale},{course}): {l} {r}"
            );
            assert!(
                (l - r).abs() < 1e-6,
                "{pattern:?} loop ({wale},{course}): {l} {r}"
            );
            // ... back to front for a knit stitch, front to back for a purl one.
            let purl_above = match pattern {
                Pattern::Garter => (course + 1) % 2 == 1,
                Pattern::Rib => wale % 2 == 1,
                _ => false,
            };
            let want = if purl_above { -knit_sign } else { knit_sign };
            assert_eq!(l.signum(), want, "{pattern:?} loop ({wale},{course})");
        }
    }
}

#[test]
fn stacked_loops_fail_the_interlock_check() {
    // The same loops with courses spread so far apart that they no longer overlap: the check must
    // find no leg passing through the loop below.
    let mut sh: Shape = knit::SHAPE;
    sh.course = 3.0 * (sh.yt - sh.ys);
    let k = knit::generate_shape(Pattern::Stockinette, 4, 3, 0.125, &sh, None).unwrap();
    let n = interlock_numbers(&k, Pattern::Stockinette, 4, 3);
    assert_eq!(n.len(), 8);
    for (l, r) in n {
        assert!(l.abs() < 1e-6 && r.abs() < 1e-6, "{l} {r}");
    }
    // Courses pushed apart in depth (overlapping in the plane of the fabric, but each lying in front
    // of the one below instead of being pulled through it) also fail.
    for shift in [10.0, -10.0] {
        let mut k = knit::generate(Pattern::Stockinette, 4, 3, 0.125).unwrap();
        for (p, l) in k.curves[0].points.iter_mut().zip(&k.point_loop[0]) {
            p[2] += shift * l[1] as f32;
        }
        let n = interlock_numbers(&k, Pattern::Stockinette, 4, 3);
        assert_eq!(n.len(), 8);
        for (l, r) in n {
            assert!(l.abs() < 1e-6 && r.abs() < 1e-6, "{l} {r}");
        }
    }
}

#[test]
fn bad_requests_are_errors() {
    assert_eq!(
        knit::generate(Pattern::Garter, 4, 4, 0.0).unwrap_err(),
        KnitError::Radius(0.0)
    );
    assert!(matches!(
        knit::generate(Pattern::Garter, 4, 4, f32::NAN),
        Err(KnitError::Radius(_))
    ));
    assert!(matches!(
        knit::generate(Pattern::Rib, 0, 4, 0.1),
        Err(KnitError::TooSmall { .. })
    ));
    assert!(matches!(
        knit::generate(Pattern::Stockinette, 4, 0, 0.1),
        Err(KnitError::TooSmall { .. })
    ));
    assert!(matches!(
        knit::generate(Pattern::Tube, knit::MIN_TUBE_WALES - 1, 4, 0.1),
        Err(KnitError::TooSmall { .. })
    ));
    assert!(matches!(
        knit::generate(Pattern::Stockinette, 100_000, 100_000, 0.1),
        Err(KnitError::TooLarge { .. })
    ));
}
