//! The inputs of the polar decomposition tests, shared by tests/polar.rs (CPU) and tests/gpu_polar.rs
//! (the `polar_test` kernel): the samplers and the matrix families, each drawn from a caller's [`Rng`]
//! so that a seed names the same inputs in both files.
#![allow(dead_code)]

use super::rng::Rng;
use yarnsim::math::{M3, V3};
use yarnsim::polar::{quat_from_rotation_vector, quat_identity, quat_to_matrix};

impl Rng {
    /// Uniform in [−1, 1).
    pub fn sym(&mut self) -> f64 {
        2.0 * self.next_f64() - 1.0
    }
    pub fn v3(&mut self) -> V3<f64> {
        V3::new(self.sym(), self.sym(), self.sym())
    }
    /// Entries uniform in [−1, 1).
    pub fn m3(&mut self) -> M3<f64> {
        M3::from_cols(self.v3(), self.v3(), self.v3())
    }
    /// A rotation by 3 rad about a random axis.
    pub fn rotation(&mut self) -> M3<f64> {
        let axis = self.v3();
        quat_to_matrix(quat_from_rotation_vector(
            axis * (3.0 / axis.norm().max(1e-3)),
        ))
    }
}

/// Seeds of the families below, as the CPU tests use them.
pub const SEED_RANDOM_SCALED: u64 = 0x9E37_79B9_7F4A_7C15;
pub const SEED_RANDOM_UNIT: u64 = 12345;
pub const SEED_DEGENERATE: u64 = 4242;
pub const SEED_WARM: u64 = 99;

/// `n` random matrices with entries in [−1, 1) times a scale 10^[−4, 4).
pub fn random_scaled(rng: &mut Rng, n: usize) -> Vec<M3<f64>> {
    (0..n)
        .map(|_| rng.m3().scale(10f64.powf(4.0 * rng.sym())))
        .collect()
}

/// `n` random matrices with entries in [−1, 1).
pub fn random_unit(rng: &mut Rng, n: usize) -> Vec<M3<f64>> {
    (0..n).map(|_| rng.m3()).collect()
}

/// Simple shear `[[1, γ, 0], [0, 1, 0], [0, 0, 1]]`.
pub fn simple_shear(gamma: f64) -> M3<f64> {
    M3::from_cols(
        V3::new(1.0, 0.0, 0.0),
        V3::new(gamma, 1.0, 0.0),
        V3::new(0.0, 0.0, 1.0),
    )
}

/// Degenerate inputs, named: zero, reflections, tiny and huge (1e∓300, beyond f32), and 50 each of
/// collinear (rank 1), coplanar (rank 2), reflected (det < 0) and nearly singular matrices.
pub fn degenerate_cases(rng: &mut Rng) -> Vec<(String, M3<f64>)> {
    let mut cases: Vec<(String, M3<f64>)> = vec![
        ("zero".into(), M3::zero()),
        (
            "reflection diag(1,1,-1)".into(),
            M3::from_cols(
                V3::new(1.0, 0.0, 0.0),
                V3::new(0.0, 1.0, 0.0),
                V3::new(0.0, 0.0, -1.0),
            ),
        ),
        ("point reflection -I".into(), M3::diag(-1.0)),
        ("tiny".into(), M3::diag(1e-300)),
        ("huge".into(), M3::diag(1e300)),
    ];
    for k in 0..50 {
        // Collinear: all columns along one direction (rank 1).
        let u = rng.v3();
        let v = rng.v3();
        cases.push((format!("collinear #{k}"), u.outer(v)));
        // Coplanar: rank 2.
        let w = rng.v3();
        let x = rng.v3();
        cases.push((format!("coplanar #{k}"), u.outer(v).add_m(&w.outer(x))));
        // Reflected: det < 0.
        let mut f = rng.m3();
        if f.det() > 0.0 {
            f.c[0] = -f.c[0];
        }
        cases.push((format!("reflected #{k}"), f));
        // Nearly singular.
        let mut g = rng.m3();
        g.c[2] = g.c[0] * 0.3 + g.c[1] * 0.7 + rng.v3() * 1e-9;
        cases.push((format!("nearly singular #{k}"), g));
    }
    cases
}

/// The warm starts the degenerate cases are decomposed from: the identity and a rotation by
/// |(0.4, −2, 1)| ≈ 2.29 rad.
pub fn degenerate_warm_starts() -> [[f64; 4]; 2] {
    [
        quat_identity(),
        quat_from_rotation_vector(V3::new(0.4, -2.0, 1.0)),
    ]
}

/// Two steps of a rotating, stretched contact frame: `f0 = R(q0) S`, and `f1 = dq f0` rotated a
/// further 1e-3 rad or less, to be decomposed warm-started from the rotation of `f0`.
pub struct WarmCase {
    pub q0: [f64; 4],
    pub s: M3<f64>,
    pub f0: M3<f64>,
    pub dq: M3<f64>,
    pub f1: M3<f64>,
}

/// `n` [`WarmCase`]s with a symmetric positive definite stretch near diag(1, 0.8, 0.6).
pub fn warm_cases(rng: &mut Rng, n: usize) -> Vec<WarmCase> {
    (0..n)
        .map(|_| {
            let s = M3::from_cols(
                V3::new(1.0 + 0.1 * rng.sym(), 0.05 * rng.sym(), 0.0),
                V3::new(0.0, 0.8 + 0.1 * rng.sym(), 0.0),
                V3::new(0.0, 0.0, 0.6),
            );
            let s = s.add_m(&s.transpose()).scale(0.5);
            let q0 = quat_from_rotation_vector(rng.v3());
            let f0 = quat_to_matrix(q0).mul_m(&s);
            let dq = quat_to_matrix(quat_from_rotation_vector(rng.v3() * 1e-3));
            let f1 = dq.mul_m(&f0);
            WarmCase { q0, s, f0, dq, f1 }
        })
        .collect()
}
