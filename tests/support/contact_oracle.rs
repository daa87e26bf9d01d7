//! An oracle for the penalty contact energy written apart from the library (its own Catmull-Rom
//! basis, penalty and weights, in f64), the closed forms of that energy for straight yarns, and a
//! handful of two-yarn and one-yarn configurations (tests/contact.rs, tests/acl.rs).
#![allow(dead_code)]

use yarnsim::state::{Curve, Topology};

/// The uniform Catmull-Rom basis from its matrix `½[[0,2,0,0],[−1,0,1,0],[2,−5,4,−1],[−1,3,−3,1]]`.
fn catmull_rom(t: f64) -> [f64; 4] {
    let (t2, t3) = (t * t, t * t * t);
    [
        0.5 * (-t + 2.0 * t2 - t3),
        0.5 * (2.0 - 5.0 * t2 + 3.0 * t3),
        0.5 * (t + 4.0 * t2 - 3.0 * t3),
        0.5 * (-t2 + t3),
    ]
}

/// DESIGN §3: `E = Σ_{i<j} k (ℓ_i/b)(ℓ_j/b) f(|y_i − y_j|)`, `f = 4r²/d² + d²/4r² − 2` below `2r`,
/// quadrature points at the midpoints `(k + ½)/b` of each segment, pairs of one yarn closer than
/// `arc` along it left out (open yarns only). O(points²): for small configurations.
pub fn energy(topo: &Topology, pos: &[[f64; 3]], k: f64, r: f64, b: u32, arc: f64) -> f64 {
    assert!(topo.yarns.iter().all(|y| y.closed == 0), "open yarns only");
    // (point, arc length it stands for, yarn, arc position along the yarn)
    let mut pts = Vec::new();
    let mut along = vec![0.0f64; topo.yarns.len()];
    for seg in &topo.segments {
        let l = topo.edges[seg.edge as usize].rest_length as f64;
        for q in 0..b {
            let t = (q as f64 + 0.5) / b as f64;
            let w = catmull_rom(t);
            let mut y = [0.0; 3];
            for (m, &c) in seg.cp.iter().enumerate() {
                for a in 0..3 {
                    y[a] += w[m] * pos[c as usize][a];
                }
            }
            pts.push((y, l / b as f64, seg.yarn, along[seg.yarn as usize] + t * l));
        }
        along[seg.yarn as usize] += l;
    }
    let four_r2 = 4.0 * r * r;
    let mut e = 0.0;
    for (n, p) in pts.iter().enumerate() {
        for q in &pts[n + 1..] {
            if p.2 == q.2 && (p.3 - q.3).abs() < arc {
                continue;
            }
            let d2: f64 = (0..3).map(|a| (p.0[a] - q.0[a]).powi(2)).sum();
            if d2 < four_r2 {
                e += k * p.1 * q.1 * (four_r2 / d2 + d2 / four_r2 - 2.0);
            }
        }
    }
    e
}

/// `−∇E` of [`energy`] by central differences of step `h` (cm).
pub fn force_by_differences(
    topo: &Topology,
    pos: &[[f64; 3]],
    k: f64,
    r: f64,
    b: u32,
    arc: f64,
    h: f64,
) -> Vec<[f64; 3]> {
    let mut p = pos.to_vec();
    let mut out = vec![[0.0; 3]; pos.len()];
    for i in 0..pos.len() {
        for a in 0..3 {
            p[i][a] = pos[i][a] + h;
            let ep = energy(topo, &p, k, r, b, arc);
            p[i][a] = pos[i][a] - h;
            let em = energy(topo, &p, k, r, b, arc);
            p[i][a] = pos[i][a];
            out[i][a] = -(ep - em) / (2.0 * h);
        }
    }
    out
}

/// The continuous energy `k ∫∫ f` of two straight centre lines crossing at right angles `d` apart,
/// both much longer than `2r`: `f` depends on `ρ² = σ² + σ'²` only, so it is
/// `k π ∫_{d²}^{4r²} f(s) ds`.
pub fn crossing_energy(d: f64, k: f64, r: f64) -> f64 {
    let four_r2 = 4.0 * r * r;
    let anti = |s: f64| four_r2 * s.ln() + s * s / (2.0 * four_r2) - 2.0 * s;
    k * std::f64::consts::PI * (anti(four_r2) - anti(d * d))
}

/// The continuous energy per unit length of a straight centre line lying `d` from a parallel one
/// that extends at least `2r` past it at both ends: `k ∫ f(d² + x²) dx` over `|x| < √(4r² − d²)`.
pub fn parallel_energy_per_length(d: f64, k: f64, r: f64) -> f64 {
    let four_r2 = 4.0 * r * r;
    let x = (four_r2 - d * d).sqrt();
    k * (four_r2 / d * 2.0 * (x / d).atan() + (2.0 * d * d * x + 2.0 * x.powi(3) / 3.0) / four_r2
        - 4.0 * x)
}

/// An open straight yarn of `n` points spaced `h` along the unit vector `dir`, centred on `centre`.
pub fn straight(centre: [f64; 3], dir: [f64; 3], n: usize, h: f64) -> Curve {
    Curve {
        points: (0..n)
            .map(|i| {
                let s = (i as f64 - (n as f64 - 1.0) / 2.0) * h;
                std::array::from_fn(|a| (centre[a] + dir[a] * s) as f32)
            })
            .collect(),
        closed: false,
    }
}

/// Two-yarn and one-yarn configurations in contact at the default radius (0.125 cm): yarns
/// crossing at 60°, parallel, 3° from parallel, end to end, and one yarn in a hairpin whose legs
/// touch beyond the default exclusion arc (1 cm).
pub fn configurations() -> Vec<(&'static str, Vec<Curve>)> {
    let dir = |deg: f64| {
        let a = deg.to_radians();
        [a.cos(), a.sin(), 0.0]
    };
    let end_to_end = |x0: f64, rise: f64| Curve {
        points: (0..9)
            .map(|i| [(x0 + 0.3 * i as f64) as f32, (rise * i as f64) as f32, 0.0])
            .collect(),
        closed: false,
    };
    let mut hairpin = Vec::new();
    for i in 0..8 {
        hairpin.push([(2.1 - 0.3 * i as f64) as f32, 0.0, 0.11]);
    }
    for i in 1..6 {
        let t = std::f64::consts::PI * i as f64 / 6.0;
        hairpin.push([(-0.11 * t.sin()) as f32, 0.0, (0.11 * t.cos()) as f32]);
    }
    for i in 0..8 {
        hairpin.push([(0.3 * i as f64) as f32, 0.01, -0.11]);
    }
    vec![
        (
            "crossing at 60°",
            vec![
                straight([0.0; 3], dir(0.0), 13, 0.3),
                straight([0.03, -0.02, 0.2], dir(60.0), 13, 0.27),
            ],
        ),
        (
            "parallel",
            vec![
                straight([0.0; 3], dir(0.0), 9, 0.3),
                straight([0.05, 0.0, 0.22], dir(0.0), 9, 0.3),
            ],
        ),
        (
            "3° from parallel",
            vec![
                straight([0.0; 3], dir(0.0), 9, 0.3),
                straight([0.05, 0.0, 0.2], dir(3.0), 9, 0.3),
            ],
        ),
        (
            // The last contact point of the first yarn (its point 7) 0.2 cm from the first of
            // the second (its point 1), the second bent slightly upwards.
            "end to end",
            vec![end_to_end(-2.1, 0.0), end_to_end(-0.1, 0.01)],
        ),
        (
            "hairpin",
            vec![Curve {
                points: hairpin,
                closed: false,
            }],
        ),
    ]
}

/// Positions widened to f64 (xyz).
pub fn widen(pos: &[[f32; 4]]) -> Vec<[f64; 3]> {
    pos.iter()
        .map(|p| [p[0] as f64, p[1] as f64, p[2] as f64])
        .collect()
}

/// `(|Σ F| / Σ|F|, |Σ (q − c) × F| / Σ |q − c| |F|)` with `c` the mean of the points: how far
/// forces `f` on points `pos` are from balancing.
pub fn imbalance(pos: &[[f32; 4]], f: &[[f32; 4]]) -> (f64, f64) {
    let n = pos.len() as f64;
    let c: [f64; 3] = std::array::from_fn(|a| pos.iter().map(|p| p[a] as f64).sum::<f64>() / n);
    let norm = |v: [f64; 3]| (v[0] * v[0] + v[1] * v[1] + v[2] * v[2]).sqrt();
    let (mut sf, mut st, mut af, mut at) = ([0.0f64; 3], [0.0f64; 3], 0.0, 0.0);
    for (p, g) in pos.iter().zip(f) {
        let q: [f64; 3] = std::array::from_fn(|a| p[a] as f64 - c[a]);
        let g: [f64; 3] = std::array::from_fn(|a| g[a] as f64);
        let t = [
            q[1] * g[2] - q[2] * g[1],
            q[2] * g[0] - q[0] * g[2],
            q[0] * g[1] - q[1] * g[0],
        ];
        for a in 0..3 {
            sf[a] += g[a];
            st[a] += t[a];
        }
        af += norm(g);
        at += norm(q) * norm(g);
    }
    (norm(sf) / af, norm(st) / at)
}
