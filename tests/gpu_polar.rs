//! The polar decomposition on the GPU (`shaders/shared/polar.wgsl` through the `polar_test` tool
//! kernel) against its CPU twin (`polar::polar_test`, i.e. `polar_decompose::<f32>` per record), on
//! the inputs of tests/polar.rs (tests/support/polar_inputs.rs) plus near-degenerate ones: 180°
//! rotations (from the identity these start at a saddle or the minimum of tr(RᵀF)), warm starts at,
//! near and far from the answer (a half turn away: a saddle again), huge and tiny scales, NaN and
//! infinite entries, and warm starts that are not unit quaternions.
//!
//! Checked on the GPU output, each against a bound derived in [`bounds`]: R is a proper rotation and
//! the matrix of the returned quaternion; S is exactly symmetric; F = R S; S is positive definite
//! where F is well conditioned with det F > 0; a warm start at the exact rotation takes at most two
//! iterations and one 1e-3 rad away at most three; and the GPU agrees with the twin (errors and
//! their entries exactly, R, S and tr(RᵀF) within the bounds, iteration counts within one where
//! the maximizer is well separated and the start less than 90° from it). A result stopped by the
//! iteration cap satisfies no stopping test, so it is only checked for a proper rotation, and
//! listed. Every test prints its worst figure relative to its bound.

#[path = "support/rng.rs"]
mod rng;
use rng::Rng;
#[path = "support/polar_inputs.rs"]
mod polar_inputs;
use polar_inputs::*;

use yarnsim::gpu::testing::gpu_or_skip;
use yarnsim::gpu::Gpu;
use yarnsim::layout::{PolarInput, PolarOutput};
use yarnsim::math::{M3, V3};
use yarnsim::pipelines::run_kernel;
use yarnsim::polar::{
    self, quat_from_rotation_vector, quat_identity, quat_mul, quat_to_matrix, MAX_ITERATIONS,
    POLAR_NOT_FINITE, POLAR_NO_ENTRY,
};

/// Error bounds, in units of the f32 unit roundoff `U = 2⁻²⁴` (half an ulp at 1). The kernel is the
/// twin's f32 arithmetic operation for operation except sin, cos and atan2 (the driver's), so the
/// bounds are those of the f32 algorithm itself, first order in `U`:
mod bounds {
    /// f32 unit roundoff.
    pub const U: f64 = 1.0 / (1u64 << 24) as f64;
    /// The iteration's tolerance `8 ε = 16 U` (polar::polar_decompose, POLAR_TOL of polar.wgsl).
    pub const TOL: f64 = 16.0 * U;

    /// `|RᵀR − I|_F` and `|det R − 1|`. `q` is normalized in f32 (4 squares summed, a square root,
    /// a division, a product: `|q|² = 1 + e` with `|e| ≤ 10 U`). For `q = s q̂`, `quat_to_matrix`
    /// gives `R = s² R̂ + (1 − s²) I`, so `RᵀR − I ≈ 2e (I − sym R̂)`, at most `2e · 2√3 ≈ 70 U` in
    /// norm, and `det R − 1 ≈ e (3 − tr R̂)`, at most `6e = 60 U`; each entry of R adds at most
    /// `4 U` (three roundings of terms ≤ 2), so `|ΔR|_F ≤ 12 U`, which moves `RᵀR` by `24 U` and
    /// `det R` by `≤ 3 · 12 U`. Both stay below 96 U.
    pub const ORTHO: f64 = 96.0 * U;

    /// `|R − quat_to_matrix(q)|_F`, the latter evaluated in f64 from the returned f32 `q`: the
    /// entry roundings of [`ORTHO`], 12 U.
    pub const QUAT_MATRIX: f64 = 12.0 * U;

    /// The angle δ between the returned R and the exact maximizer R* of tr(RᵀF), where the
    /// maximizer is isolated: `λ̂ > 0` is the smallest eigenvalue of the Hessian `H*` of
    /// `tr(RᵀF/|F|)` at `R*` (`(d_j + d_k)/|F|_F` over the signed singular values d, see
    /// [`super::hessian_gap`]). The iteration stops (a) at `|g| ≤ TOL` where `H` is positive
    /// definite, (b) at a Newton angle `φ ≤ TOL`, (c) after a Newton step with `φ² < TOL`, whose
    /// error is `≲ φ² / (2 λ̂) < TOL / λ̂`. In each case `|g| ≲ TOL` at the end, and `g ≈ H* δ`, so
    /// `δ ≤ TOL / λ̂`; doubling it covers (c) and the Newton direction's own error, and the rounding
    /// of `g` (`≤ 8 U` relative to |F|) moves the computed stationary point by `8 U / λ̂`:
    /// `δ ≤ (2 TOL + 8 U) / λ̂ = 40 U / λ̂`.
    pub fn angle(gap: f64) -> f64 {
        (2.0 * TOL + 8.0 * U) / gap
    }

    /// `|R_gpu − R_twin|_F`: two rotations each within δ of R* differ by an angle ≤ 2δ, i.e. by
    /// `2√2 sin δ ≤ 2√2 δ` in Frobenius norm, plus both R's entry roundings (2 × 12 U): with
    /// `λ̂ = 0.5` (a typical random F) that is 250 U, "a few hundred ulps".
    pub fn r_parity(gap: f64) -> f64 {
        2.0 * std::f64::consts::SQRT_2 * angle(gap) + 24.0 * U
    }

    /// `|S_gpu − S_twin|_F / |F|_F`: `S = sym(RᵀF)` moves by at most `|ΔR|_F |F|_F`, plus the
    /// rounding of the two `RᵀF` products (3 terms: `≤ 4 U` relative each, both paths).
    pub fn s_parity(gap: f64) -> f64 {
        r_parity(gap) + 8.0 * U
    }

    /// `|F − R S|_F / |F|_F`. `R*ᵀF` is symmetric (R* is stationary), so
    /// `F − R sym(RᵀF) = R skew(RᵀF)` with `|skew(RᵀF)|_F ≤ |R − R*|_F |F|_F ≤ √2 δ |F|_F`; the
    /// f32 products `RᵀF` and `R S` and their f64 evaluation here add `≤ 16 U`.
    pub fn reconstruction(gap: f64) -> f64 {
        std::f64::consts::SQRT_2 * angle(gap) + 16.0 * U
    }

    /// Below this Hessian gap the maximizer is treated as not isolated (rank 1, or a reflection
    /// with equal smallest singular values): δ would exceed 2.4e-3 rad, beyond the linearization
    /// above. There only the objective tr(RᵀF) is compared.
    pub const MIN_GAP: f64 = 1e-3;

    /// Where iteration counts must agree within one: the maximizer well separated (Hessian gap at
    /// least this) and the start less than [`ITER_START`] from it. Then the steps are Newton steps,
    /// or gradient steps far from any other stationary point, and only the last is uncertain:
    /// rounding and the driver's atan2 decide whether a step lands below the stopping tests
    /// (`φ² < TOL`) or one more is needed. From further away (a start near a half turn from the
    /// answer is near a saddle or the minimum of tr(RᵀF)) the path itself is decided by rounding;
    /// there counts are only reported.
    pub const ITER_GAP: f64 = 0.05;
    /// See [`ITER_GAP`]: 90°.
    pub const ITER_START: f64 = std::f64::consts::FRAC_PI_2;

    /// `|tr(R_gpuᵀF) − tr(R_twinᵀF)| / |F|_F` anywhere (both maximize tr(RᵀF)). Near a maximizer
    /// the objective is flat: `E* − E ≤ ½ |H*| δ'²` where δ' is the distance to the set of
    /// maximizers, which the stopping tests keep `≲ √TOL` even without a gap (gradient ascent stops
    /// at `|g| ≤ 2 TOL`, and `E* − E ≤ |g|²/(2 λ)` along each direction of curvature `λ` while the
    /// directions of zero curvature do not change E); the f64 evaluation of `tr(RᵀF)` from the f32 R
    /// adds `3 × 4 U` per path. So `4 TOL + 24 U = 88 U`.
    pub const OBJECTIVE: f64 = 88.0 * U;
}

/// One input, with what is known of it.
struct Case {
    name: String,
    /// F as the kernel sees it (the f32 values, exactly, in f64).
    f: M3<f64>,
    input: PolarInput,
    /// The warm start is the exact rotation of F (up to the f32 rounding of F and of the warm start).
    warm_exact: bool,
    /// The warm start is at most 1e-3 rad from the rotation of F.
    warm_near: bool,
}

fn quat32(q: [f64; 4]) -> [f32; 4] {
    q.map(|x| x as f32)
}

impl Case {
    fn new(name: impl Into<String>, f: M3<f64>, warm: [f64; 4]) -> Case {
        let f32m: M3<f32> = f.cast();
        Case {
            name: name.into(),
            f: f32m.cast(),
            input: PolarInput {
                f: [f32m.c[0].to4(0.0), f32m.c[1].to4(0.0), f32m.c[2].to4(0.0)],
                warm: quat32(warm),
            },
            warm_exact: false,
            warm_near: false,
        }
    }

    /// A case whose input is given as f32 bits (non-finite entries, unnormalized warm starts).
    fn raw(name: impl Into<String>, f: [[f32; 4]; 3], warm: [f32; 4]) -> Case {
        let m = M3::from_cols(V3::from4(f[0]), V3::from4(f[1]), V3::from4(f[2]));
        Case {
            name: name.into(),
            f: m,
            input: PolarInput { f, warm },
            warm_exact: false,
            warm_near: false,
        }
    }

    fn finite(&self) -> bool {
        self.f.is_finite()
    }
}

/// A symmetric positive definite stretch with eigenvalues in [0.5, 1.5] and random axes.
fn random_spd(rng: &mut Rng) -> M3<f64> {
    let q = rng.rotation();
    let d = M3::from_cols(
        V3::new(rng.range(0.5, 1.5), 0.0, 0.0),
        V3::new(0.0, rng.range(0.5, 1.5), 0.0),
        V3::new(0.0, 0.0, rng.range(0.5, 1.5)),
    );
    q.mul_m(&d).mul_m(&q.transpose())
}

/// The rotation by π about the unit axis `n`, as a quaternion.
fn half_turn(n: V3<f64>) -> [f64; 4] {
    let n = n.normalized();
    [n.x, n.y, n.z, 0.0]
}

/// Every input, in a fixed order.
fn cases() -> Vec<Case> {
    let id = quat_identity::<f64>();
    let mut out = Vec::new();
    // tests/polar.rs: random matrices over 8 decades, random unit matrices, shears, degenerate
    // matrices from two warm starts, and warm starts between two steps of a rotating frame.
    let mut rng = Rng(SEED_RANDOM_SCALED);
    for (i, f) in random_scaled(&mut rng, 2000).into_iter().enumerate() {
        out.push(Case::new(format!("random scaled #{i}"), f, id));
    }
    let mut rng = Rng(SEED_RANDOM_UNIT);
    for (i, f) in random_unit(&mut rng, 2000).into_iter().enumerate() {
        out.push(Case::new(format!("random unit #{i}"), f, id));
    }
    for gamma in [2.0, 0.5, -3.0] {
        out.push(Case::new(
            format!("simple shear γ = {gamma}"),
            simple_shear(gamma),
            id,
        ));
    }
    let mut rng = Rng(SEED_DEGENERATE);
    for (name, f) in degenerate_cases(&mut rng) {
        for (k, warm) in degenerate_warm_starts().into_iter().enumerate() {
            out.push(Case::new(format!("{name} (warm start {k})"), f, warm));
        }
    }
    let mut rng = Rng(SEED_WARM);
    for (i, c) in warm_cases(&mut rng, 200).into_iter().enumerate() {
        let mut exact = Case::new(format!("warm at the answer #{i}"), c.f0, c.q0);
        exact.warm_exact = true;
        out.push(exact);
        let mut near = Case::new(format!("warm 1e-3 rad away #{i}"), c.f1, c.q0);
        near.warm_near = true;
        out.push(near);
        // Far: a half turn about the stretch's eigenvector e_z (a saddle of tr(RᵀF): g = 0 but
        // for rounding), and about a random axis.
        out.push(Case::new(
            format!("warm a half turn away about an eigenvector #{i}"),
            c.f0,
            quat_mul(c.q0, half_turn(V3::new(0.0, 0.0, 1.0))),
        ));
        let axis = rng.v3();
        out.push(Case::new(
            format!("warm a half turn away #{i}"),
            c.f0,
            quat_mul(c.q0, half_turn(axis)),
        ));
    }
    // 180° rotations from the identity: F = Rot(π, n) S. For n = e_z and a diagonal S the identity
    // is the minimum of tr(RᵀF) (g = 0, H negative definite): the iteration must leave it by a
    // half turn about the eigenvector of H's most negative eigenvalue.
    out.push(Case::new(
        "half turn about z of diag(3, 2, 1)",
        M3::from_cols(
            V3::new(-3.0, 0.0, 0.0),
            V3::new(0.0, -2.0, 0.0),
            V3::new(0.0, 0.0, 1.0),
        ),
        id,
    ));
    let mut rng = Rng(0x180);
    for i in 0..100 {
        let s = random_spd(&mut rng);
        let n = rng.v3();
        let r = quat_to_matrix(half_turn(n));
        out.push(Case::new(format!("half turn #{i}"), r.mul_m(&s), id));
    }
    // Scales: |F|_F² overflows f32 (the largest-entry path), stays normal, or underflows to zero
    // (then both paths treat F as zero and keep the warm start).
    let mut rng = Rng(0x5CA1E);
    for i in 0..50 {
        let f = rng.m3();
        let warm = quat_from_rotation_vector(rng.v3());
        out.push(Case::new(format!("huge 1e30 #{i}"), f.scale(1e30), warm));
        out.push(Case::new(format!("huge 1e19 #{i}"), f.scale(1e19), warm));
        out.push(Case::new(format!("tiny 1e-15 #{i}"), f.scale(1e-15), warm));
        out.push(Case::new(format!("tiny 1e-30 #{i}"), f.scale(1e-30), warm));
    }
    // Non-finite entries at every position, and warm starts that are not unit quaternions.
    let base = Case::new("base", rng.m3(), quat_from_rotation_vector(rng.v3())).input;
    for e in 0..9 {
        for (what, x) in [
            ("NaN", f32::NAN),
            ("+inf", f32::INFINITY),
            ("-inf", f32::NEG_INFINITY),
        ] {
            let mut f = base.f;
            f[e / 3][e % 3] = x;
            out.push(Case::raw(format!("{what} at entry {e}"), f, base.warm));
        }
    }
    let mut f = base.f;
    f[2][1] = f32::NAN;
    f[1][2] = f32::INFINITY;
    out.push(Case::raw("NaN and inf", f, base.warm));
    let w = base.warm;
    for (what, warm) in [
        ("warm 3 q", w.map(|x| 3.0 * x)),
        ("warm 1e-10 q", w.map(|x| 1e-10 * x)),
        ("warm 0", [0.0; 4]),
        ("warm NaN", [0.0, f32::NAN, 0.0, 1.0]),
        ("warm inf", [f32::INFINITY, 0.0, 0.0, 1.0]),
    ] {
        out.push(Case::raw(what, base.f, warm));
    }
    out
}

/// Runs `polar_test` on the GPU and its twin on the CPU.
fn run(gpu: &Gpu, cases: &[Case]) -> (Vec<PolarOutput>, Vec<PolarOutput>) {
    let input: Vec<PolarInput> = cases.iter().map(|c| c.input).collect();
    let zero = vec![PolarOutput::default(); input.len()];
    let out = run_kernel(
        gpu,
        "polar_test",
        &[
            ("polar_in", bytemuck::cast_slice(&input)),
            ("polar_out", bytemuck::cast_slice(&zero)),
        ],
        input.len() as u32,
    )
    .unwrap();
    let g: Vec<PolarOutput> = out["polar_out"]
        .chunks_exact(std::mem::size_of::<PolarOutput>())
        .map(bytemuck::pod_read_unaligned)
        .collect();
    let mut t = zero;
    polar::polar_test(&input, &mut t);
    (g, t)
}

fn m3(cols: &[[f32; 4]; 3]) -> M3<f64> {
    M3::from_cols(V3::from4(cols[0]), V3::from4(cols[1]), V3::from4(cols[2]))
}

/// Eigenvalues of a symmetric 3×3 matrix, largest first (the trigonometric closed form).
fn sym_eigenvalues(a: &M3<f64>) -> [f64; 3] {
    let p1 = a.at(0, 1).powi(2) + a.at(0, 2).powi(2) + a.at(1, 2).powi(2);
    let q = a.trace() / 3.0;
    let p2 =
        (a.at(0, 0) - q).powi(2) + (a.at(1, 1) - q).powi(2) + (a.at(2, 2) - q).powi(2) + 2.0 * p1;
    if p2 == 0.0 {
        return [q; 3];
    }
    let p = (p2 / 6.0).sqrt();
    let b = a.sub_m(&M3::diag(q)).scale(1.0 / p);
    let r = (b.det() / 2.0).clamp(-1.0, 1.0);
    let phi = r.acos() / 3.0;
    let e1 = q + 2.0 * p * phi.cos();
    let e3 = q + 2.0 * p * (phi + 2.0 * std::f64::consts::PI / 3.0).cos();
    [e1, 3.0 * q - e1 - e3, e3]
}

/// Singular values of F, largest first, from the eigenvalues of FᵀF (an oracle independent of the
/// code under test).
fn singular_values(f: &M3<f64>) -> [f64; 3] {
    sym_eigenvalues(&f.transpose().mul_m(f)).map(|e| e.max(0.0).sqrt())
}

/// The smallest eigenvalue of the Hessian of `tr(RᵀF/|F|_F)` at its maximizer: with the signed
/// singular values `d = (σ₁, σ₂, sign(det F) σ₃)` the eigenvalues are `(d_j + d_k)/|F|_F`, smallest
/// `(σ₂ + sign(det F) σ₃)/|F|_F`. Zero (no isolated maximizer) for F = 0.
fn hessian_gap(f: &M3<f64>) -> f64 {
    let n = f.norm();
    if !n.is_finite() || n <= 0.0 {
        return 0.0;
    }
    let s = singular_values(f);
    let sign = if f.det() < 0.0 { -1.0 } else { 1.0 };
    ((s[1] + sign * s[2]) / n).max(0.0)
}

/// F as the kernel sees it is zero (its f32 norm is 0, possibly by underflow): the warm start is
/// kept and S = 0.
fn zero_in_f32(c: &Case) -> bool {
    let f: M3<f32> = c.f.cast();
    f.norm() == 0.0
}

/// The angle between the warm start and the rotation of F (the f64 oracle's).
fn start_angle(c: &Case) -> f64 {
    let answer = polar::polar_decompose(&c.f, quat_identity()).unwrap().r;
    let warm = quat_to_matrix(polar::quat_normalize(c.input.warm.map(|x| x as f64)));
    ((warm.transpose().mul_m(&answer).trace() - 1.0) / 2.0)
        .clamp(-1.0, 1.0)
        .acos()
}

fn objective(r: &M3<f64>, f: &M3<f64>) -> f64 {
    r.transpose().mul_m(f).trace()
}

/// Opens the GPU and runs every case, or `None` (skipped) without an adapter.
fn setup(test: &str) -> Option<(Vec<Case>, Vec<PolarOutput>, Vec<PolarOutput>)> {
    let gpu = gpu_or_skip(test)?;
    let cases = cases();
    let (g, t) = run(&gpu, &cases);
    Some((cases, g, t))
}

#[test]
fn gpu_rotations_are_proper_and_match_the_quaternion() {
    let Some((cases, g, _)) = setup("gpu_rotations_are_proper_and_match_the_quaternion") else {
        return;
    };
    let (mut worst_o, mut worst_d, mut worst_q) = (0.0f64, 0.0f64, 0.0f64);
    for (c, o) in cases.iter().zip(&g) {
        let r = m3(&o.r);
        assert!(r.is_finite(), "{}: R not finite: {r:?}", c.name);
        let orth = r.transpose().mul_m(&r).sub_m(&M3::identity()).norm();
        let det = (r.det() - 1.0).abs();
        assert!(
            orth <= bounds::ORTHO,
            "{}: |RᵀR − I| = {orth:e} > {:e}",
            c.name,
            bounds::ORTHO
        );
        assert!(
            det <= bounds::ORTHO,
            "{}: |det R − 1| = {det:e} > {:e}",
            c.name,
            bounds::ORTHO
        );
        let q = o.quat.map(|x| x as f64);
        let dq = r.sub_m(&quat_to_matrix(q)).norm();
        assert!(
            dq <= bounds::QUAT_MATRIX,
            "{}: R is not the matrix of the quaternion ({dq:e})",
            c.name
        );
        worst_o = worst_o.max(orth / bounds::ORTHO);
        worst_d = worst_d.max(det / bounds::ORTHO);
        worst_q = worst_q.max(dq / bounds::QUAT_MATRIX);
    }
    eprintln!(
        "{} cases: worst |RᵀR − I| {worst_o:.3}, |det R − 1| {worst_d:.3}, \
         |R − R(q)| {worst_q:.3} of their bounds",
        cases.len()
    );
}

#[test]
fn gpu_stretch_is_symmetric_and_reconstructs_f() {
    let Some((cases, g, _)) = setup("gpu_stretch_is_symmetric_and_reconstructs_f") else {
        return;
    };
    let (mut worst_rs, mut n_rs, mut n_pd, mut n_capped) = (0.0f64, 0, 0, 0);
    for (c, o) in cases.iter().zip(&g) {
        let s = m3(&o.s);
        // S = (M + Mᵀ)/2 in f32: exactly symmetric (a + b = b + a, and halving is exact).
        for i in 0..3 {
            for j in 0..3 {
                assert_eq!(
                    o.s[i][j].to_bits(),
                    o.s[j][i].to_bits(),
                    "{}: S not symmetric at ({i}, {j})",
                    c.name
                );
            }
        }
        if !c.finite() {
            continue;
        }
        assert!(s.is_finite(), "{}: S not finite: {s:?}", c.name);
        if zero_in_f32(c) {
            assert_eq!(s, M3::zero(), "{}: S of a zero F", c.name);
            continue;
        }
        let gap = hessian_gap(&c.f);
        if o.iterations == MAX_ITERATIONS {
            // Stopped by the cap, not by the stopping tests (polar_decompose's slow gradient ascent
            // from far away for some reflected F): the twin does the same (gpu_matches_twin).
            n_capped += 1;
        } else if gap >= bounds::MIN_GAP {
            let r = m3(&o.r);
            let err = c.f.sub_m(&r.mul_m(&s)).norm() / c.f.norm();
            let b = bounds::reconstruction(gap);
            assert!(
                err <= b,
                "{}: |F − RS|/|F| = {err:e} > {b:e} (Hessian gap {gap:e})",
                c.name
            );
            worst_rs = worst_rs.max(err / b);
            n_rs += 1;
        }
        // Positive definite where det F > 0 and σ₃ ≥ 1e-2 |F|: S's error (≤ δ |F|, δ ≤ 40 U /
        // λ̂ ≤ 40 U / 0.02 ≈ 1.2e-4) is then far below its smallest eigenvalue σ₃.
        let sv = singular_values(&c.f);
        if c.f.det() > 0.0 && sv[2] >= 1e-2 * c.f.norm() {
            let m1 = s.at(0, 0);
            let m2 = s.at(0, 0) * s.at(1, 1) - s.at(0, 1) * s.at(1, 0);
            assert!(
                m1 > 0.0 && m2 > 0.0 && s.det() > 0.0,
                "{}: S not positive definite: {s:?}",
                c.name
            );
            n_pd += 1;
        }
    }
    eprintln!(
        "{} cases: S exactly symmetric in all; F = RS checked on {n_rs} (worst {worst_rs:.3} of \
         its bound; {n_capped} stopped by the iteration cap), S positive definite on {n_pd}",
        cases.len()
    );
    assert!(n_rs > 5000 && n_pd > 2000, "too few cases checked");
}

#[test]
fn gpu_warm_starts_converge_in_few_iterations() {
    let Some((cases, g, _)) = setup("gpu_warm_starts_converge_in_few_iterations") else {
        return;
    };
    let (mut n_exact, mut n_near, mut hist) = (0, 0, [0usize; 4]);
    for (c, o) in cases.iter().zip(&g) {
        if c.warm_exact {
            assert!(
                o.iterations <= 2,
                "{}: {} iterations from the exact rotation",
                c.name,
                o.iterations
            );
            n_exact += 1;
            hist[o.iterations as usize] += 1;
        }
        if c.warm_near {
            assert!(
                o.iterations <= 3,
                "{}: {} iterations from 1e-3 rad away",
                c.name,
                o.iterations
            );
            n_near += 1;
        }
    }
    assert!(n_exact == 200 && n_near == 200);
    eprintln!("from the exact rotation: iterations 0/1/2: {hist:?}");
}

#[test]
fn gpu_flags_non_finite_input_like_the_twin() {
    let Some((cases, g, t)) = setup("gpu_flags_non_finite_input_like_the_twin") else {
        return;
    };
    let mut n = 0;
    for (c, (go, to)) in cases.iter().zip(g.iter().zip(&t)) {
        assert_eq!(
            (go.error, go.bad_entry),
            (to.error, to.bad_entry),
            "{}: error flag and entry, GPU vs twin",
            c.name
        );
        if c.finite() {
            assert_eq!((go.error, go.bad_entry), (0, POLAR_NO_ENTRY), "{}", c.name);
            continue;
        }
        n += 1;
        assert_eq!(go.error, POLAR_NOT_FINITE, "{}", c.name);
        let first = (0..9)
            .find(|&e| !c.input.f[e / 3][e % 3].is_finite())
            .unwrap();
        assert_eq!(go.bad_entry, first as u32, "{}: first bad entry", c.name);
        assert_eq!(go.iterations, 0, "{}", c.name);
        assert_eq!(m3(&go.s), M3::zero(), "{}: S on error", c.name);
    }
    assert_eq!(
        n,
        9 * 3 + 1 + 2,
        "non-finite cases (27 single, 1 double, huge 1e300 twice)"
    );
}

#[test]
fn gpu_matches_twin() {
    let Some((cases, g, t)) = setup("gpu_matches_twin") else {
        return;
    };
    let (mut worst_r, mut worst_s, mut worst_e) = (0.0f64, 0.0f64, 0.0f64);
    let (mut n_iter, mut n_iter_equal, mut n_r) = (0, 0, 0);
    let (mut n_other, mut n_other_equal, mut worst_other) = (0, 0, 0);
    let mut capped = Vec::new();
    for (c, (go, to)) in cases.iter().zip(g.iter().zip(&t)) {
        let (rg, rt) = (m3(&go.r), m3(&to.r));
        let (sg, st) = (m3(&go.s), m3(&to.s));
        if !c.finite() || zero_in_f32(c) {
            // The normalized warm start, S = 0, no iteration: only the normalization's rounding.
            let d = rg.sub_m(&rt).norm();
            assert!(d <= bounds::QUAT_MATRIX, "{}: R {d:e}", c.name);
            assert_eq!((go.iterations, sg), (0, st), "{}", c.name);
            continue;
        }
        assert!(go.iterations <= MAX_ITERATIONS, "{}", c.name);
        if go.iterations == MAX_ITERATIONS || to.iterations == MAX_ITERATIONS {
            // Stopped by the cap on either path: no stopping test bounds the result (the f64
            // oracle stops there too, see the report printed below).
            capped.push(format!(
                "{} ({} / {} iterations)",
                c.name, go.iterations, to.iterations
            ));
            continue;
        }
        let fnorm = c.f.norm();
        // Both maximize tr(RᵀF), isolated maximizer or not.
        let de = (objective(&rg, &c.f) - objective(&rt, &c.f)).abs() / fnorm;
        assert!(
            de <= bounds::OBJECTIVE,
            "{}: tr(RᵀF)/|F| differs by {de:e} > {:e}",
            c.name,
            bounds::OBJECTIVE
        );
        worst_e = worst_e.max(de / bounds::OBJECTIVE);
        let gap = hessian_gap(&c.f);
        if gap >= bounds::MIN_GAP {
            let dr = rg.sub_m(&rt).norm();
            let br = bounds::r_parity(gap);
            assert!(
                dr <= br,
                "{}: |R_gpu − R_twin| = {dr:e} > {br:e} (gap {gap:e})",
                c.name
            );
            let ds = sg.sub_m(&st).norm() / fnorm;
            let bs = bounds::s_parity(gap);
            assert!(
                ds <= bs,
                "{}: |S_gpu − S_twin|/|F| = {ds:e} > {bs:e}",
                c.name
            );
            worst_r = worst_r.max(dr / br);
            worst_s = worst_s.max(ds / bs);
            n_r += 1;
        }
        let d = go.iterations.abs_diff(to.iterations);
        if gap >= bounds::ITER_GAP && start_angle(c) < bounds::ITER_START {
            n_iter += 1;
            assert!(
                d <= 1,
                "{}: {} iterations on the GPU, {} on the CPU",
                c.name,
                go.iterations,
                to.iterations
            );
            n_iter_equal += (d == 0) as usize;
        } else {
            n_other += 1;
            n_other_equal += (d == 0) as usize;
            worst_other = worst_other.max(d);
        }
    }
    eprintln!(
        "{} cases: R, S compared on {n_r} (worst {worst_r:.3}, {worst_s:.3} of their bounds), \
         tr(RᵀF) worst {worst_e:.3} of its bound; iterations equal on {n_iter_equal} of {n_iter} \
         well-separated cases (the rest within one), on {n_other_equal} of {n_other} others \
         (at most {worst_other} apart); stopped by the cap: {capped:?}",
        cases.len()
    );
    for name in &capped {
        let c = cases
            .iter()
            .find(|c| name.starts_with(&format!("{} (", c.name)))
            .unwrap();
        let p = polar::polar_decompose(&c.f, quat_identity()).unwrap();
        eprintln!(
            "  {}: the f64 oracle takes {} iterations, |F − RS|/|F| = {:e}",
            c.name,
            p.iterations,
            c.f.sub_m(&p.r.mul_m(&p.s)).norm() / c.f.norm()
        );
    }
    assert!(n_r > 5000 && n_iter > 1000, "too few cases compared");
}

/// γ = 2 simple shear: R is the rotation by −45° about z (tests/polar.rs), on the GPU too.
#[test]
fn gpu_simple_shear_is_minus_45_degrees() {
    let Some((cases, g, _)) = setup("gpu_simple_shear_is_minus_45_degrees") else {
        return;
    };
    for gamma in [2.0f64, 0.5, -3.0] {
        let name = format!("simple shear γ = {gamma}");
        let i = cases.iter().position(|c| c.name == name).unwrap();
        let r = m3(&g[i].r);
        let phi = r.at(1, 0).atan2(r.at(0, 0));
        let expected = -(gamma / 2.0).atan();
        let b = bounds::angle(hessian_gap(&cases[i].f)) + bounds::QUAT_MATRIX;
        assert!(
            (phi - expected).abs() <= b && (r.at(2, 2) - 1.0).abs() <= bounds::QUAT_MATRIX,
            "{name}: φ = {} deg, expected {} deg",
            phi.to_degrees(),
            expected.to_degrees()
        );
    }
}
