//! Polar decomposition `F = R S` (src/polar.rs): proper rotations for every input, symmetric `S`,
//! reconstruction, equivariance, the simple-shear angle, and degenerate inputs. The inputs come from
//! tests/support/polar_inputs.rs, which tests/gpu_polar.rs runs through the GPU port as well.

use yarnsim::math::{Real, M3};
use yarnsim::polar::{polar_decompose, quat_identity, Polar};

#[path = "support/rng.rs"]
mod rng;
use rng::Rng;
#[path = "support/polar_inputs.rs"]
mod polar_inputs;
use polar_inputs::*;

fn assert_proper_rotation<T: Real>(p: &Polar<T>, tol: f64, what: &str) {
    let r: M3<f64> = p.r.cast();
    assert!(r.is_finite(), "{what}: R not finite: {r:?}");
    let rtr = r.transpose().mul_m(&r);
    let err = rtr.sub_m(&M3::identity()).norm();
    assert!(err < tol, "{what}: |RᵀR − I| = {err:e}");
    let det = r.det();
    assert!((det - 1.0).abs() < tol, "{what}: det R = {det}");
}

fn assert_symmetric<T: Real>(p: &Polar<T>, tol: f64, what: &str) {
    let s: M3<f64> = p.s.cast();
    let err = s.sub_m(&s.transpose()).norm();
    assert!(
        err <= tol * s.norm().max(1e-300),
        "{what}: S not symmetric ({err:e})"
    );
}

#[test]
fn random_matrices_give_proper_rotations_and_symmetric_s_f64() {
    let mut rng = Rng(SEED_RANDOM_SCALED);
    for (i, f) in random_scaled(&mut rng, 2000).into_iter().enumerate() {
        let p = polar_decompose(&f, quat_identity()).unwrap();
        assert_proper_rotation(&p, 1e-12, &format!("random #{i}"));
        assert_symmetric(&p, 1e-12, &format!("random #{i}"));
        if f.det() > 0.0 {
            // F = R S, relative to |F|, for every well-defined decomposition.
            let err = f.sub_m(&p.r.mul_m(&p.s)).norm() / f.norm();
            assert!(
                err < 1e-10,
                "random #{i}: |F − RS|/|F| = {err:e}, F = {f:?}"
            );
            // S is the positive definite factor: its eigenvalues are the singular values.
            assert!(
                p.s.det() > 0.0 && p.s.trace() > 0.0,
                "random #{i}: S not positive"
            );
        }
    }
}

#[test]
fn random_matrices_give_proper_rotations_f32() {
    let mut rng = Rng(SEED_RANDOM_UNIT);
    for (i, f) in random_unit(&mut rng, 2000).into_iter().enumerate() {
        let f: M3<f32> = f.cast();
        let p = polar_decompose(&f, quat_identity()).unwrap();
        assert_proper_rotation(&p, 2e-6, &format!("random f32 #{i}"));
        assert_symmetric(&p, 1e-5, &format!("random f32 #{i}"));
        let f64v: M3<f64> = f.cast();
        if f64v.det() > 0.02 * f64v.norm().powi(3) {
            // Well-conditioned enough for f32 reconstruction at a few ulps.
            let rs: M3<f64> = p.r.mul_m(&p.s).cast();
            let err = f64v.sub_m(&rs).norm() / f64v.norm();
            assert!(err < 1e-5, "random f32 #{i}: |F − RS|/|F| = {err:e}");
        }
    }
}

#[test]
fn equivariant_under_a_random_rotation() {
    let mut rng = Rng(777);
    for i in 0..500 {
        let f = rng.m3();
        if f.det() <= 1e-3 {
            continue;
        }
        let q = rng.rotation();
        let p = polar_decompose(&f, quat_identity()).unwrap();
        let pq = polar_decompose(&q.mul_m(&f), quat_identity()).unwrap();
        let err_r = pq.r.sub_m(&q.mul_m(&p.r)).norm();
        let err_s = pq.s.sub_m(&p.s).norm() / p.s.norm();
        assert!(err_r < 1e-9, "#{i}: R(QF) ≠ Q R(F) ({err_r:e})");
        assert!(err_s < 1e-9, "#{i}: S(QF) ≠ S(F) ({err_s:e})");
    }
}

/// Simple shear `F = [[1, γ, 0], [0, 1, 0], [0, 0, 1]]`. With `R` the rotation by φ about z,
/// `tr(RᵀF) = 2 cos φ − γ sin φ + 1`, maximal where `tan φ = −γ/2`: for γ = 2, φ = −atan(1) = −45°
/// (a clockwise rotation), and `S = RᵀF` is symmetric positive definite.
#[test]
fn simple_shear_gamma_two_is_minus_45_degrees() {
    for gamma in [2.0f64, 0.5, -3.0] {
        let f = simple_shear(gamma);
        let p = polar_decompose(&f, quat_identity()).unwrap();
        let phi = p.r.at(1, 0).atan2(p.r.at(0, 0));
        let expected = -(gamma / 2.0).atan();
        assert!(
            (phi - expected).abs() < 1e-12,
            "γ = {gamma}: φ = {} deg, expected {} deg",
            phi.to_degrees(),
            expected.to_degrees()
        );
        // Rotation about z only.
        assert!((p.r.at(2, 2) - 1.0).abs() < 1e-12);
        if gamma == 2.0 {
            assert!((phi.to_degrees() + 45.0).abs() < 1e-10);
        }
        assert!(f.sub_m(&p.r.mul_m(&p.s)).norm() < 1e-12);
    }
    // Same in f32.
    let f: M3<f32> = simple_shear(2.0).cast();
    let p = polar_decompose(&f, quat_identity()).unwrap();
    let phi = (p.r.at(1, 0) as f64)
        .atan2(p.r.at(0, 0) as f64)
        .to_degrees();
    assert!((phi + 45.0).abs() < 1e-4, "f32: φ = {phi}");
}

#[test]
fn degenerate_inputs_give_finite_proper_rotations() {
    let mut rng = Rng(SEED_DEGENERATE);
    let cases = degenerate_cases(&mut rng);
    for (name, f) in &cases {
        for warm in degenerate_warm_starts() {
            let p = polar_decompose(f, warm).unwrap();
            assert_proper_rotation(&p, 1e-12, name);
            assert!(p.s.is_finite(), "{name}: S not finite");
            assert_symmetric(&p, 1e-12, name);
            // Whatever the input, R is a maximizer of tr(RᵀF) up to the iteration's accuracy: no
            // random rotation does better.
            let e = p.r.transpose().mul_m(f).trace();
            for _ in 0..20 {
                let q = rng.rotation();
                let eq = q.transpose().mul_m(f).trace();
                assert!(
                    eq <= e + 1e-6 * f.norm(),
                    "{name}: a random rotation beats R ({eq} > {e})"
                );
            }
        }
        if f.norm() < 1e30 {
            let pf: Polar<f32> = polar_decompose(&f.cast::<f32>(), quat_identity()).unwrap();
            assert_proper_rotation(&pf, 2e-6, name);
        }
    }
}

#[test]
fn non_finite_input_is_an_error() {
    let mut f = M3::<f32>::identity();
    f.set(1, 2, f32::NAN);
    assert!(polar_decompose(&f, quat_identity()).is_err());
}

#[test]
fn warm_start_converges_in_few_iterations_for_small_rotations() {
    let mut rng = Rng(SEED_WARM);
    for c in warm_cases(&mut rng, 200) {
        // A stretched, rotated frame and a slightly further rotated copy, as between two steps.
        let p0 = polar_decompose(&c.f0, quat_identity()).unwrap();
        let p1 = polar_decompose(&c.f1, p0.quat).unwrap();
        assert!(
            p1.iterations <= 3,
            "warm start took {} iterations",
            p1.iterations
        );
        assert!(p1.r.sub_m(&c.dq.mul_m(&p0.r)).norm() < 1e-12);
    }
}
