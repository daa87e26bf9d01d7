//! Parity of ACL's per-step force kernels (src/acl/: `set_evaluate`, `set_force`,
//! `stiction_forces`, `set_point_count` → scan → `set_point_write` → `set_gather`) with their CPU
//! twins, on the state of a real run: the default swatch falling under
//! ACL (stiction springs on), the `AclContact` stepped alongside the simulation for 37 steps, then
//! the sets, pools and springs it holds and the positions of the next step.
//!
//! Each kernel is compared on the same input as its twin. Discrete outputs (the point table, each
//! point's records put in set order first, since the kernel's atomics rank them in any order; error
//! flags, the spring breaks, SET_DIRTY) must be identical, except decisions that sit on their
//! threshold within the float tolerance below: those are counted and printed as borderline (a
//! mismatch elsewhere fails). Floats, with `U = 2⁻²⁴` (f32 unit roundoff):
//! - *Rotation* (`set_evaluate`'s quaternion): both paths run the polar iteration of
//!   shaders/shared/polar.wgsl / src/polar.rs from the same warm start, so each R is within
//!   `δ = 40 U / λ̂` of the maximizer (tests/gpu_polar.rs `bounds::angle`, `λ̂` the Hessian gap of
//!   `F / |F|`), and `|R_gpu − R_cpu|_F ≤ 2√2 · 2δ + 24 U`; F is accumulated in f32 with
//!   possibly fused products, which moves the maximizer by `≤ 4 n U |F|`-relative / λ̂, added in.
//!   Sets with `λ̂ < 10⁻³` have no well-defined rotation and are listed, not compared.
//! - *Deviations*: `Δ_t = Rᵀ(q_t − c) − d̄_t` moves by `|ΔR|_F |q_t − c|` plus its own
//!   roundings (`8 U (|q_t − c| + |d̄_t|)`) and those of the centre (`2 n U max|q|`).
//! - *Forces* (`set_force`, `stiction_forces`): sums of products computed in the same order; a
//!   compiler may fuse a multiply-add, which changes each rounding, so a row differs by at most
//!   `2 (n + 4) U Σ|terms|` (the magnitudes summed), and the rotation adds `4 U |row|`.
//! - *Gathered force*: the same records added in the same order: `2 m U Σ|records|` for `m`
//!   records (the kernel does no multiplications, so it is in fact exact on lavapipe).

#[path = "support/close.rs"]
mod close;
#[path = "support/fixture.rs"]
mod fixture;

use close::coord_scale;
use fixture::{bytes, scene_contact, scene_sim};
use yarnsim::acl::evaluate::{
    force_change, set_crossing_error, set_evaluate, set_evaluate_and_force, set_force,
    BASIS_ABS_SUM_MAX, SET_LANES,
};
use yarnsim::acl::gather::{
    set_gather, set_point_count, set_point_table, set_point_write, MAX_POINT_RECORDS,
};
use yarnsim::acl::model::{sym_to_m3, tri_index, tri_len};
use yarnsim::acl::pages::{PoolPage, PoolPages, MAX_SET_BLOCKS};
use yarnsim::acl::stiction::stiction_forces;
use yarnsim::acl::{not_finite_error, AclContact, ContactSet, SET_LIVE, SET_ZERO, SPRING_ACTIVE};
use yarnsim::contact::ContactError;
use yarnsim::gpu::testing::gpu_or_skip;
use yarnsim::layout::{
    AclCounters, AclUniform, ACL_ERROR_GATHER_FULL, ACL_ERROR_NOT_FINITE, ACL_ERROR_RECORDS_FULL,
    ACL_EXTRA_INVALIDATION,
};
use yarnsim::math::{M3, V3};
use yarnsim::pipelines::run_kernel;
use yarnsim::polar::quat_to_matrix;
use yarnsim::sim::Sim;

const U: f64 = 1.0 / (1u64 << 24) as f64;
const STEPS: usize = 37;
const SETS: [&str; 3] = [
    "contact.model=acl",
    "contact.stiction_stiffness=20",
    "contact.stiction_break_energy=1e-6",
];

/// The simulation one step past the `AclContact`'s last step (its positions are the evaluation's
/// input), and the `AclContact`.
fn fixture() -> (Sim, AclContact) {
    let params = scene_contact("swatch", &SETS);
    let mut sim = scene_sim("swatch", &SETS[..1], 0);
    let r = sim.step_params().radius;
    let mut acl = AclContact::new(r, &params).unwrap();
    let mut force = vec![[0.0f32; 4]; sim.pos.len()];
    for _ in 0..STEPS {
        sim.step().unwrap();
        acl.step(&sim.topo, &sim.pos, &mut force).unwrap();
    }
    sim.step().unwrap();
    (sim, acl)
}

/// The fixture's set table, and its uniform over the whole table.
fn whole_table(sim: &Sim, acl: &AclContact) -> (Vec<ContactSet>, AclUniform) {
    let sets = acl.sets().to_vec();
    let mut u = acl.uniform(sim.pos.len());
    u.num_sets = sets.len() as u32;
    (sets, u)
}

fn cast<T: bytemuck::Pod>(b: &[u8]) -> Vec<T> {
    bytemuck::pod_collect_to_vec(b)
}

fn v(p: [f32; 4]) -> V3<f64> {
    V3::new(p[0] as f64, p[1] as f64, p[2] as f64)
}

/// Eigenvalues of a symmetric 3×3 matrix (f64, closed form).
fn sym_eigenvalues(a: &M3<f64>) -> [f64; 3] {
    let p1 = a.at(0, 1).powi(2) + a.at(0, 2).powi(2) + a.at(1, 2).powi(2);
    let q = (a.at(0, 0) + a.at(1, 1) + a.at(2, 2)) / 3.0;
    let p2 =
        (a.at(0, 0) - q).powi(2) + (a.at(1, 1) - q).powi(2) + (a.at(2, 2) - q).powi(2) + 2.0 * p1;
    let p = (p2 / 6.0).sqrt();
    if p == 0.0 {
        return [q; 3];
    }
    let b = a.sub_m(&M3::diag(q)).scale(1.0 / p);
    let phi = (b.det() / 2.0).clamp(-1.0, 1.0).acos() / 3.0;
    let e1 = q + 2.0 * p * phi.cos();
    let e3 = q + 2.0 * p * (phi + 2.0 * std::f64::consts::PI / 3.0).cos();
    [e1, 3.0 * q - e1 - e3, e3]
}

/// The smallest Hessian eigenvalue of `tr(RᵀF/|F|)` at its maximizer (tests/gpu_polar.rs).
fn hessian_gap(f: &M3<f64>) -> f64 {
    let n = f.norm();
    // Negated so that a NaN norm gives 0 too.
    if n.is_nan() || n <= 0.0 {
        return 0.0;
    }
    let mut s = sym_eigenvalues(&f.transpose().mul_m(f)).map(|e| e.max(0.0).sqrt());
    s.sort_by(|a, b| b.total_cmp(a));
    let sign = if f.det() < 0.0 { -1.0 } else { 1.0 };
    ((s[1] + sign * s[2]) / n).max(0.0)
}

/// The set's F and its centre in f64, and `max_t |q_t|`.
fn set_f(
    s: &ContactSet,
    pos: &[[f32; 4]],
    cp: &[u32],
    dbar: &[[f32; 4]],
) -> (M3<f64>, V3<f64>, f64) {
    let (o, n) = (s.cp_off as usize, s.n_cp as usize);
    let q: Vec<V3<f64>> = (0..n).map(|t| v(pos[cp[o + t] as usize])).collect();
    let mut c = V3::zero();
    for p in &q {
        c += *p;
    }
    let c = c / n as f64;
    let mut f = M3::zero();
    let mut qmax = 0.0f64;
    for t in 0..n {
        f = f.add_m(&(q[t] - c).outer(v(dbar[o + t])));
        qmax = qmax.max(q[t].norm());
    }
    (f, c, qmax)
}

struct EvalRun {
    u: AclUniform,
    sets_in: Vec<ContactSet>,
    sets_cpu: Vec<ContactSet>,
    sets_gpu: Vec<ContactSet>,
    dev_cpu: Vec<[f32; 4]>,
    dev_gpu: Vec<[f32; 4]>,
}

fn run_evaluate(gpu: &yarnsim::gpu::Gpu, sim: &Sim, acl: &AclContact) -> EvalRun {
    let p = acl.pools();
    let u = acl.uniform(sim.pos.len());
    let sets_in = acl.sets().to_vec();
    let np = p.cp.len();
    let mut sets_cpu = sets_in.clone();
    let mut dev_cpu = vec![[0.0f32; 4]; np];
    set_evaluate(
        &u,
        &sim.pos,
        &p.cp,
        &p.dbar,
        &p.m,
        &p.watch,
        &p.watch_loc,
        &mut sets_cpu,
        &mut dev_cpu,
        &PoolPage::whole(p.watch.len()),
    );
    let out = run_kernel(
        gpu,
        "set_evaluate",
        &[
            ("acl", bytes(&[u])),
            ("pos", bytes(&sim.pos)),
            ("cp_pool", bytes(&p.cp)),
            ("dbar_pool", bytes(&p.dbar)),
            ("m_pool", bytes(&p.m)),
            ("watch_pool", bytes(&p.watch)),
            ("watch_loc_pool", bytes(&p.watch_loc)),
            ("sets", bytes(&sets_in)),
            ("dev_pool", bytes(&vec![[0.0f32; 4]; np])),
            ("watch_pool_page", bytes(&[PoolPage::whole(p.watch.len())])),
        ],
        SET_LANES * sets_in.len() as u32,
    )
    .unwrap();
    EvalRun {
        u,
        sets_cpu,
        sets_gpu: cast(&out["sets"]),
        dev_cpu,
        dev_gpu: cast(&out["dev_pool"]),
        sets_in,
    }
}

/// `set_evaluate`: the warm-started rotation within its bound, the deviations within theirs, and
/// the SET_DIRTY decisions identical except at borderline ones.
#[test]
fn set_evaluate_matches_its_twin() {
    let Some(gpu) = gpu_or_skip("set_evaluate_matches_its_twin") else {
        return;
    };
    let (sim, acl) = fixture();
    let p = acl.pools();
    let r = run_evaluate(&gpu, &sim, &acl);
    let u = r.u;
    let clean = r.sets_in.iter().filter(|s| s.is_clean()).count();
    let dirty_cpu = r.sets_cpu.iter().filter(|s| s.is_clean()).count();
    eprintln!(
        "{} sets, {clean} clean, {} invalidated by the twin",
        r.sets_in.len(),
        clean - dirty_cpu
    );
    // The default swatch holds about 540 sets at this step (2,160 springs, 4,500 records).
    assert!(
        clean > 500,
        "the fixture must have hundreds of sets: {clean}"
    );
    let (mut worst_q, mut worst_dev) = (0.0f64, 0.0f64);
    let (mut ill, mut borderline, mut mismatched) = (Vec::new(), Vec::new(), Vec::new());
    for (k, s) in r.sets_in.iter().enumerate() {
        let (c, g) = (&r.sets_cpu[k], &r.sets_gpu[k]);
        if !s.is_clean() {
            assert_eq!(c, s, "set {k}: the twin touched a set that is not clean");
            assert_eq!(g, s, "set {k}: the kernel touched a set that is not clean");
            continue;
        }
        let (o, n) = (s.cp_off as usize, s.n_cp as usize);
        let (f, centre, qmax) = set_f(s, &sim.pos, &p.cp, &p.dbar);
        let gap = hessian_gap(&f);
        // Rotation bound (module doc).
        let r_tol =
            2.0 * std::f64::consts::SQRT_2 * 2.0 * (40.0 * U + 4.0 * n as f64 * U) / gap + 24.0 * U;
        let (rc, rg) = (
            quat_to_matrix(c.quat).cast::<f64>(),
            quat_to_matrix(g.quat).cast::<f64>(),
        );
        let dr = rc.sub_m(&rg).norm();
        if gap < 1e-3 {
            ill.push((k, gap));
        } else {
            worst_q = worst_q.max(dr / r_tol);
            assert!(
                dr <= r_tol,
                "set {k}: |R_gpu − R_cpu| = {dr:e} > {r_tol:e} (gap {gap})"
            );
        }
        // Deviations and the decision margins they give.
        let mut dev_tol_max = 0.0f64;
        let mut metric_tol = 0.0f64;
        for t in 0..n {
            let qc = (v(sim.pos[p.cp[o + t] as usize]) - centre).norm();
            let tol = dr.max(r_tol.min(1.0)) * qc
                + 8.0 * U * (qc + v(p.dbar[o + t]).norm())
                + 2.0 * n as f64 * U * qmax;
            let d = (v(r.dev_cpu[o + t]) - v(r.dev_gpu[o + t])).norm();
            if gap >= 1e-3 {
                worst_dev = worst_dev.max(d / tol);
                assert!(d <= tol, "set {k} point {t}: |ΔΔ| = {d:e} > {tol:e}");
            }
            dev_tol_max = dev_tol_max.max(tol);
            metric_tol = metric_tol.max(p.m[o + t] as f64 * tol);
        }
        if c.flags == g.flags {
            continue;
        }
        // A differing decision: was it on a threshold within the tolerance?
        let (metric, maxdev) = yarnsim::acl::model::set_metric_and_max_deviation(
            &r.dev_cpu[o..o + n],
            &p.m[o..o + n],
            u.radius,
            s.eps,
        );
        let scale = 2.0 * u.radius as f64 / (s.eps as f64).powi(2);
        let metric_margin = (metric as f64 - u.tolerance as f64).abs();
        let bound = 2.0 * BASIS_ABS_SUM_MAX as f64 * maxdev as f64;
        let bound_tol = 2.0 * BASIS_ABS_SUM_MAX as f64 * dev_tol_max + 4.0 * U * bound;
        let on_metric = metric_margin <= metric_tol * scale + 8.0 * U * metric as f64;
        let extra = u.flags & ACL_EXTRA_INVALIDATION != 0;
        let on_guard = extra
            && ((bound - s.guard_far as f64).abs() <= bound_tol
                || (bound - s.guard_near as f64).abs() <= bound_tol
                || p.watch[s.w_off as usize..(s.w_off + s.n_watch) as usize]
                    .iter()
                    .any(|w| (w.gap.abs() as f64 - bound).abs() <= bound_tol));
        let crossing = set_crossing_error(
            &u,
            &sim.pos,
            &p.cp,
            &p.watch,
            &p.watch_loc,
            s,
            maxdev * 2.0 * BASIS_ABS_SUM_MAX,
        ) as f64;
        let budget = u.tolerance as f64 * s.f_ref as f64;
        // The crossing estimate is a sum of ≤ 32 terms, each a few roundings of the penalty's
        // derivative (relative 16 U), whose distances are computed from the same points.
        let on_crossing =
            extra && (crossing - budget).abs() <= 64.0 * 16.0 * U * crossing.max(budget);
        if on_metric || on_guard || on_crossing {
            borderline.push((k, metric, u.tolerance, bound, s.guard_near, s.guard_far));
        } else {
            mismatched.push((k, c.flags, g.flags, metric, bound, crossing, budget));
        }
    }
    eprintln!(
        "rotation: worst {worst_q:.3} of its bound; deviations: worst {worst_dev:.3} of their bound"
    );
    eprintln!(
        "{} sets with an ill-conditioned rotation (gap < 1e-3, not compared): {:?}",
        ill.len(),
        &ill[..ill.len().min(8)]
    );
    eprintln!(
        "{} borderline SET_DIRTY decisions (on a threshold within the tolerance): {:?}",
        borderline.len(),
        &borderline[..borderline.len().min(8)]
    );
    assert!(
        mismatched.is_empty(),
        "SET_DIRTY differs away from any threshold: {mismatched:?}"
    );
    assert!(
        borderline.len() * 100 <= clean,
        "too many borderline decisions: {}",
        borderline.len()
    );
}

/// The polar warm start: starting every set from its stored quaternion, the kernel returns the
/// twin's rotation quaternion (up to sign) within the rotation bound, and a warm start at the
/// answer stays there.
#[test]
fn polar_warm_start_returns_the_twins_quaternion() {
    let Some(gpu) = gpu_or_skip("polar_warm_start_returns_the_twins_quaternion") else {
        return;
    };
    let (sim, acl) = fixture();
    let p = acl.pools();
    // Warm-started from the CPU's answer: the kernel must return it (it is already converged).
    let r0 = run_evaluate(&gpu, &sim, &acl);
    let mut warm = r0.sets_in.clone();
    for (k, s) in warm.iter_mut().enumerate() {
        if s.is_clean() {
            s.quat = r0.sets_cpu[k].quat;
        }
    }
    let out = run_kernel(
        &gpu,
        "set_evaluate",
        &[
            ("acl", bytes(&[r0.u])),
            ("pos", bytes(&sim.pos)),
            ("cp_pool", bytes(&p.cp)),
            ("dbar_pool", bytes(&p.dbar)),
            ("m_pool", bytes(&p.m)),
            ("watch_pool", bytes(&p.watch)),
            ("watch_loc_pool", bytes(&p.watch_loc)),
            ("sets", bytes(&warm)),
            ("dev_pool", bytes(&vec![[0.0f32; 4]; p.cp.len()])),
            ("watch_pool_page", bytes(&[PoolPage::whole(p.watch.len())])),
        ],
        SET_LANES * warm.len() as u32,
    )
    .unwrap();
    let g: Vec<ContactSet> = cast(&out["sets"]);
    let (mut n, mut worst) = (0, 0.0f64);
    for (k, s) in r0.sets_in.iter().enumerate() {
        if !s.is_clean() {
            continue;
        }
        let (f, _, _) = set_f(s, &sim.pos, &p.cp, &p.dbar);
        let gap = hessian_gap(&f);
        if gap < 1e-3 {
            continue;
        }
        let tol = 2.0 * std::f64::consts::SQRT_2 * 2.0 * (40.0 * U + 4.0 * s.n_cp as f64 * U) / gap
            + 24.0 * U;
        for got in [r0.sets_gpu[k].quat, g[k].quat] {
            let want = r0.sets_cpu[k].quat;
            let dot: f64 = (0..4).map(|i| got[i] as f64 * want[i] as f64).sum();
            // |q − ±q'| in quaternion terms: R moves by ≤ 2√2 of it... bound it by the R bound.
            let dq = (0..4)
                .map(|i| (got[i] as f64 - dot.signum() * want[i] as f64).powi(2))
                .sum::<f64>()
                .sqrt();
            worst = worst.max(dq / tol);
            assert!(dq <= tol, "set {k}: quaternion differs by {dq:e} > {tol:e}");
        }
        n += 1;
    }
    eprintln!("{n} quaternions compared, worst {worst:.3} of the bound");
    assert!(n > 500);
}

/// The rounding bound of row `t` of set `s`'s corotational force `f` between two evaluations of the
/// same sums in the same order (each may fuse multiply-adds): `2 (n + 4) U` of the sum of the terms'
/// magnitudes, and `4 U |f|` for the rotation.
fn force_row_tolerance(
    s: &ContactSet,
    t: usize,
    f0: &[[f32; 4]],
    k: &[[f32; 6]],
    dev: &[[f32; 4]],
    f: [f32; 4],
) -> f64 {
    let (o, n) = (s.cp_off as usize, s.n_cp as usize);
    let mut mag = v(f0[o + t]).norm();
    for j in 0..n {
        let b = tri_index(n, j.min(t), j.max(t));
        mag += sym_to_m3(&k[s.k_off as usize + b]).cast::<f64>().norm() * v(dev[o + j]).norm();
    }
    2.0 * (n as f64 + 4.0) * U * mag + 4.0 * U * v(f).norm()
}

/// Uniform numbers in [−1, 1) from a xorshift generator seeded with `seed`: made inputs that are
/// the same on every run.
fn uniform_sampler(mut seed: u64) -> impl FnMut() -> f32 {
    move || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        (seed >> 40) as f32 / (1u64 << 24) as f32 * 2.0 - 1.0
    }
}

/// `set_force`: on the twin's `set_evaluate` output, forces within the rounding bound and the
/// force-change decisions identical except borderline ones; no error.
#[test]
fn set_force_matches_its_twin() {
    let Some(gpu) = gpu_or_skip("set_force_matches_its_twin") else {
        return;
    };
    let (sim, acl) = fixture();
    let p = acl.pools();
    let r = run_evaluate(&gpu, &sim, &acl);
    let u = r.u;
    let np = p.cp.len();
    let sets_in = r.sets_cpu.clone();
    let fout0 = vec![[7.0f32; 4]; np];
    let mut sets_c = sets_in.clone();
    let mut fout_c = fout0.clone();
    let mut cnt_c = AclCounters::default();
    set_force(
        &u,
        &mut sets_c,
        &p.f0,
        &p.k,
        &r.dev_cpu,
        &mut fout_c,
        &mut cnt_c,
        &PoolPage::whole(p.k.len()),
    );
    let out = run_kernel(
        &gpu,
        "set_force",
        &[
            ("acl", bytes(&[u])),
            ("sets", bytes(&sets_in)),
            ("f0_pool", bytes(&p.f0)),
            ("k_pool", bytes(&p.k)),
            ("dev_pool", bytes(&r.dev_cpu)),
            ("fout_pool", bytes(&fout0)),
            ("acl_counters", bytes(&[AclCounters::default()])),
            ("block_page", bytes(&[PoolPage::whole(p.k.len())])),
        ],
        SET_LANES * sets_in.len() as u32,
    )
    .unwrap();
    let sets_g: Vec<ContactSet> = cast(&out["sets"]);
    let fout_g: Vec<[f32; 4]> = cast(&out["fout_pool"]);
    let cnt_g: Vec<AclCounters> = cast(&out["acl_counters"]);
    assert_eq!(cnt_g[0], cnt_c);
    assert_eq!(
        cnt_c,
        AclCounters::default(),
        "no set too big or not finite"
    );
    let (mut worst, mut rows, mut borderline, mut zero) = (0.0f64, 0usize, Vec::new(), 0);
    for (k, s) in sets_in.iter().enumerate() {
        if !s.is_clean() {
            assert_eq!(sets_c[k], *s);
            assert_eq!(sets_g[k], *s);
            continue;
        }
        let (o, n) = (s.cp_off as usize, s.n_cp as usize);
        let mut tol_sum = 0.0f64;
        for t in 0..n {
            let tol = if s.flags & SET_ZERO != 0 {
                zero += 1;
                0.0
            } else {
                force_row_tolerance(s, t, &p.f0, &p.k, &r.dev_cpu, fout_c[o + t])
            };
            let d = (v(fout_c[o + t]) - v(fout_g[o + t])).norm();
            if tol > 0.0 {
                worst = worst.max(d / tol);
            }
            assert!(d <= tol, "set {k} row {t}: |Δf| = {d:e} > {tol:e}");
            tol_sum += tol;
            rows += 1;
        }
        if sets_c[k].flags != sets_g[k].flags {
            let r3 = quat_to_matrix(s.quat);
            let (change, reference) = force_change(&r3, &p.f0[o..o + n], &fout_c[o..o + n]);
            let thr = 2.0 * (u.tolerance as f64).sqrt() * reference as f64;
            let margin = (change as f64 - thr).abs();
            let tol = tol_sum + 4.0 * (n as f64 + 2.0) * U * (change as f64 + thr);
            assert!(
                margin <= tol,
                "set {k}: the force-change decision differs {margin:e} from its threshold (tolerance {tol:e})"
            );
            borderline.push(k);
        }
    }
    eprintln!(
        "{rows} force rows ({zero} of zero-force sets), worst {worst:.3} of the bound; {} borderline force-change decisions: {borderline:?}",
        borderline.len()
    );
    assert!(rows > 1000);
}

/// `set_force` over a blocks pool in pages (src/acl/pages.rs), dispatched once per page, ends
/// bit for bit where one dispatch over the one-page pool does, and so does its twin page by page:
/// each set gets its force once, in its page's dispatch, from its blocks at its offset there
/// (sets that run past their page's stride included); the zero forces and errors are every
/// page's alike.
#[test]
fn set_force_over_pages_is_the_one_page_force() {
    let Some(gpu) = gpu_or_skip("set_force_over_pages_is_the_one_page_force") else {
        return;
    };
    let (sim, acl) = fixture();
    let p = acl.pools();
    let r = run_evaluate(&gpu, &sim, &acl);
    let u = AclUniform {
        flags: ACL_EXTRA_INVALIDATION,
        tolerance: 0.04,
        ..r.u
    };
    let sets_in = r.sets_cpu.clone();
    type State = (Vec<ContactSet>, Vec<[f32; 4]>, AclCounters);
    let run = |k: &[[f32; 6]], page: PoolPage, (sets, fout, cnt): &State| -> State {
        let out = run_kernel(
            &gpu,
            "set_force",
            &[
                ("acl", bytes(&[u])),
                ("sets", bytes(sets)),
                ("f0_pool", bytes(&p.f0)),
                ("k_pool", bytes(k)),
                ("dev_pool", bytes(&r.dev_cpu)),
                ("fout_pool", bytes(fout)),
                ("acl_counters", bytes(&[*cnt])),
                ("block_page", bytes(&[page])),
            ],
            SET_LANES * sets.len() as u32,
        )
        .unwrap();
        (
            cast(&out["sets"]),
            cast(&out["fout_pool"]),
            cast(&out["acl_counters"])[0],
        )
    };
    let start: State = (
        sets_in.clone(),
        vec![[7.0f32; 4]; p.cp.len()],
        AclCounters::default(),
    );
    let whole = run(&p.k, PoolPage::whole(p.k.len()), &start);
    let mut twin_whole = start.clone();
    set_force(
        &u,
        &mut twin_whole.0,
        &p.f0,
        &p.k,
        &r.dev_cpu,
        &mut twin_whole.1,
        &mut twin_whole.2,
        &PoolPage::whole(p.k.len()),
    );
    let len = p.k.len() as u32;
    let pages = PoolPages::with_stride(len / 3 + 1, MAX_SET_BLOCKS, len);
    assert_eq!(pages.count(), 3);
    let spills = sets_in
        .iter()
        .filter(|s| s.is_clean() && s.flags & SET_ZERO == 0)
        .filter(|s| {
            let q = pages.page_of(s.k_off);
            s.k_off as u64 + tri_len(s.n_cp as usize) as u64 > pages.base(q) + pages.stride as u64
        })
        .count();
    assert!(spills > 0, "no clean set runs past its page's stride");
    let (mut gpu_state, mut twin) = (start.clone(), start.clone());
    for (q, image) in pages.split(bytes(&p.k), 24).iter().enumerate() {
        let k: Vec<[f32; 6]> = cast(image);
        gpu_state = run(&k, pages.page(q, q), &gpu_state);
        let (sets, fout, cnt) = &mut twin;
        set_force(
            &u,
            sets,
            &p.f0,
            &k,
            &r.dev_cpu,
            fout,
            cnt,
            &pages.page(q, q),
        );
    }
    let as_bytes = |(sets, fout, cnt): &State| [bytes(sets), bytes(fout), bytes(&[*cnt])].concat();
    assert!(
        as_bytes(&gpu_state) == as_bytes(&whole),
        "the paged GPU force differs"
    );
    assert!(
        as_bytes(&twin) == as_bytes(&twin_whole),
        "the paged twin differs"
    );
    let dirtied = (0..sets_in.len())
        .filter(|&k| whole.0[k].flags != sets_in[k].flags)
        .count();
    eprintln!(
        "{} sets, {spills} past their stride, {dirtied} dirtied",
        sets_in.len()
    );
}

/// `stiction_forces`: same breaks (except borderline), the re-made rest offsets and the forces
/// within the rounding bound.
#[test]
fn stiction_forces_match_their_twin() {
    let Some(gpu) = gpu_or_skip("stiction_forces_match_their_twin") else {
        return;
    };
    let (sim, acl) = fixture();
    let p = acl.pools();
    let mut u = acl.uniform(sim.pos.len());
    let sets = acl.sets().to_vec();
    let springs = acl.all_springs().to_vec();
    // Break energy: in the widest gap between consecutive spring energies of the middle half, so
    // about half break and none sits within rounding of the threshold (two close energies at the
    // median would put it there: a GPU that fuses a multiply-add, as NVIDIA's do, rounds the
    // energy differently from the twin).
    let mut energies: Vec<f32> = Vec::new();
    for (k, s) in sets.iter().enumerate() {
        let rot = quat_to_matrix(s.quat);
        for sp in &springs[4 * k..4 * k + 4] {
            if s.flags & SET_LIVE != 0 && sp.flags & SPRING_ACTIVE != 0 {
                let qp = |i: u32| {
                    let b = u.quadrature;
                    let cp = acl.seg_cp()[(i / b) as usize];
                    let w = u.weights[(i % b) as usize];
                    let q = cp.map(|c| V3::<f32>::from4(sim.pos[c as usize]));
                    q[0] * w[0] + q[1] * w[1] + q[2] * w[2] + q[3] * w[3]
                };
                let x = qp(sp.i) - qp(sp.j) - rot.mul_v(V3::from4(sp.rest));
                energies.push(0.5 * u.stiction_stiffness * x.norm2());
            }
        }
    }
    assert!(energies.len() > 1000, "{} active springs", energies.len());
    energies.sort_by(f32::total_cmp);
    let n = energies.len();
    let m = (n / 4..3 * n / 4)
        .max_by(|&a, &b| {
            let gap = |i: usize| (energies[i + 1] - energies[i]) / energies[i + 1];
            gap(a).total_cmp(&gap(b))
        })
        .unwrap();
    let gap = (energies[m + 1] - energies[m]) / energies[m + 1];
    // The energies' own rounding is a few tens of U; the gap is orders of magnitude wider.
    assert!(
        gap > 1e-4,
        "no clear gap between the spring energies ({gap:e})"
    );
    u.stiction_break_energy = 0.5 * (energies[m] + energies[m + 1]);
    let (fout, _) = (acl.step_pools().1.to_vec(), ());
    let (mut springs_c, mut fout_c) = (springs.clone(), fout.clone());
    stiction_forces(
        &u,
        &sim.pos,
        acl.seg_cp(),
        &sets,
        &p.cp,
        &p.dbar,
        &mut springs_c,
        &mut fout_c,
    );
    let out = run_kernel(
        &gpu,
        "stiction_forces",
        &[
            ("acl", bytes(&[u])),
            ("pos", bytes(&sim.pos)),
            ("seg_cp", bytes(acl.seg_cp())),
            ("sets", bytes(&sets)),
            ("cp_pool", bytes(&p.cp)),
            ("dbar_pool", bytes(&p.dbar)),
            ("springs", bytes(&springs)),
            ("fout_pool", bytes(&fout)),
        ],
        sets.len() as u32,
    )
    .unwrap();
    let springs_g: Vec<yarnsim::acl::StictionSpring> = cast(&out["springs"]);
    let fout_g: Vec<[f32; 4]> = cast(&out["fout_pool"]);
    let broke = springs_c
        .iter()
        .zip(&springs)
        .filter(|(a, b)| a != b)
        .count();
    let mut borderline = 0;
    for (i, (c, g)) in springs_c.iter().zip(&springs_g).enumerate() {
        let before = springs[i];
        let (bc, bg) = (*c != before, *g != before);
        if bc != bg {
            // A different break: the energy must be on the threshold (a few roundings, 16 U).
            borderline += 1;
            eprintln!("spring {i}: borderline break");
            continue;
        }
        if bc {
            // Re-made: Rᵀ d, d a difference of two 4-term sums (8 U |y|) rotated (4 U).
            let d = (v(c.rest) - v(g.rest)).norm();
            let tol = 16.0
                * U
                * (v(c.rest).norm()
                    + 2.0 * sim.pos.iter().map(|p| v(*p).norm()).fold(0.0, f64::max));
            assert!(d <= tol, "spring {i}: rest differs by {d:e} > {tol:e}");
        }
    }
    assert_eq!(
        borderline, 0,
        "the break energy was chosen away from every spring's energy"
    );
    // Forces: each entry is the set's force plus at most one term `k w x` per spring of its set (4),
    // `x = y_i − y_j − R d0` a small difference of positions: its error is absolute, not relative
    // to |x|. A quadrature point is a 4-term weighted sum (fused or not: at most 2·4 roundings apart
    // of U·1.25P, P the largest coordinate), so each coordinate of x is within 2·10UP + 6U|d0| +
    // 4U|x| ≤ 24UP of the twin's, |Δx| ≤ 42UP, and a term within k·|w|·42UP (|w| ≤ 1). On lavapipe
    // (no fusing) the measured difference is 0.
    let spring_tol = 4.0 * u.stiction_stiffness as f64 * 42.0 * U * coord_scale(&sim.pos);
    let mut rotation_tol =
        rotation_term_bounds(&u, &sim.pos, acl.seg_cp(), &sets, p, &springs, &springs_c);
    rotation_tol.resize(rotation_tol.len().max(fout.len()), 0.0);
    assert!(
        rotation_tol.iter().filter(|&&t| t > 0.0).count() > 1000,
        "few points got the springs' rotation term"
    );
    let mut worst = 0.0f64;
    for (i, (c, g)) in fout_c.iter().zip(&fout_g).enumerate() {
        let d = (v(*c) - v(*g)).norm();
        let added = (v(*c) - v(fout[i])).norm();
        let tol = 2.0 * 40.0 * U * (v(*c).norm() + v(fout[i]).norm() + 2.0 * added)
            + if added > 0.0 { spring_tol } else { 0.0 }
            + rotation_tol[i];
        if tol > 0.0 {
            worst = worst.max(d / tol);
        }
        assert!(d <= tol, "fout {i}: differs by {d:e} > {tol:e}");
    }
    eprintln!(
        "{broke} of {} springs broke; forces worst {worst:.3} of the bound",
        energies.len()
    );
}

/// Per `fout_pool` entry, a first-order bound on |gpu − twin| of the springs' rotation term
/// `Ω × (R d̄_i)`, `H Ω = τ` (acl::stiction::rotation_term), for two evaluations that may each fuse
/// multiply-adds: 0 for the points of sets without an intact spring.
///
/// Derivation, in f64 from the inputs (U = 2⁻²⁴, each bound doubled for two evaluations):
/// - the centre `c`, a sum of `n` points over `n`: `Δc ≤ 2 (n + 1) U max|q|` per coordinate;
/// - `F = Σ (q_i − c) d̄_iᵀ`, entrywise: `ΔF_ab ≤ 2 (n + 2) U Σ |r_a d̄_b| + Δc Σ |d̄_b|`;
/// - `H = tr(RᵀF) I − sym(F Rᵀ)` from `R` (the same quaternion, 8 roundings of `U` each entry,
///   |R_ij| ≤ 1): an entry of `sym(F Rᵀ)` sums 2 × 3 products and the trace 9, with
///   `Σ_k |R_ik| ≤ √3` per row, so `ΔH ≤ 4√3 max ΔF + 2 (9 · 16 + 24) U max|F|` entrywise;
/// - `τ = Σ (R d0) × k x`, `x`'s coordinates within 24 U P of the twin's (P the largest
///   coordinate: the force bound's derivation above): `Δτ ≤ Σ |R d0| k 42 U P + 2 · 8 U Σ |R d0||k x|`;
/// - `Ω = H⁻¹ τ` by cofactors, componentwise: `ΔΩ ≤ |H⁻¹| (Δτ + ΔH Σ|Ω|) + 2 · 16 U |H⁻¹| |τ|
///   κ`, κ = |H| |H⁻¹| (the cofactors' and determinant's own rounding, relative to the terms);
/// - per point, `Δ(Ω × a) ≤ |ΔΩ| |a| + 2 · 12 U |Ω| |a|` (`a = R d̄`: a rotation and a cross).
fn rotation_term_bounds(
    u: &AclUniform,
    pos: &[[f32; 4]],
    seg_cp: &[[u32; 4]],
    sets: &[ContactSet],
    pools: &yarnsim::acl::rebuild::Pools,
    before: &[yarnsim::acl::StictionSpring],
    after: &[yarnsim::acl::StictionSpring],
) -> Vec<f64> {
    let mut tol = vec![0.0f64; pools.dbar.len()];
    let big_p = coord_scale(pos);
    let k = u.stiction_stiffness as f64;
    let b = u.quadrature;
    for (s, set) in sets.iter().enumerate() {
        if set.flags & SET_LIVE == 0 {
            continue;
        }
        let rot: M3<f64> = quat_to_matrix(set.quat.map(|x| x as f64));
        let (o, n) = (set.cp_off as usize, set.n_cp as usize);
        let mut tau = V3::<f64>::zero();
        let (mut d_tau, mut tau_terms) = (0.0f64, 0.0f64);
        let mut intact = false;
        for m in 0..4 {
            let (sb, sa) = (before[4 * s + m], after[4 * s + m]);
            if sb.flags & SPRING_ACTIVE == 0 || sa != sb {
                continue;
            }
            intact = true;
            let rd0 = rot.mul_v(v(sb.rest));
            let y = |i: u32| -> V3<f64> {
                let cp = seg_cp[(i / b) as usize];
                let w = u.weights[(i % b) as usize];
                (0..4).fold(V3::zero(), |acc, m| {
                    acc + v(pos[cp[m] as usize]) * w[m] as f64
                })
            };
            let x = y(sb.i) - y(sb.j) - rd0;
            tau += rd0.cross(x * k);
            d_tau += rd0.norm() * k * 42.0 * U * big_p;
            tau_terms += rd0.norm() * (x * k).norm();
        }
        if !intact || n == 0 {
            continue;
        }
        d_tau += 16.0 * U * tau_terms;
        let q: Vec<V3<f64>> = pools.cp[o..o + n]
            .iter()
            .map(|&c| v(pos[c as usize]))
            .collect();
        let d: Vec<V3<f64>> = pools.dbar[o..o + n].iter().map(|&x| v(x)).collect();
        let c = q.iter().fold(V3::zero(), |a, &x| a + x) / n as f64;
        let qmax = q.iter().map(|x| x.norm()).fold(0.0, f64::max);
        let d_c = 2.0 * (n as f64 + 1.0) * U * qmax;
        let mut f = M3::<f64>::zero();
        let mut d_f = 0.0f64;
        for (qi, di) in q.iter().zip(&d) {
            f = f.add_m(&(*qi - c).outer(*di));
        }
        for a in 0..3 {
            for bb in 0..3 {
                let terms: f64 = q
                    .iter()
                    .zip(&d)
                    .map(|(qi, di)| ((*qi - c).get(a) * di.get(bb)).abs())
                    .sum();
                let dsum: f64 = d.iter().map(|di| di.get(bb).abs()).sum();
                d_f = d_f.max(2.0 * (n as f64 + 2.0) * U * terms + d_c * dsum);
            }
        }
        let fmax = (0..9).map(|e| f.at(e % 3, e / 3).abs()).fold(0.0, f64::max);
        let d_h = 4.0 * 3f64.sqrt() * d_f + 2.0 * (9.0 * 16.0 + 24.0) * U * fmax;
        // H = tr(RᵀF) I − sym(F Rᵀ).
        let frt = f.mul_m(&rot.transpose());
        let tr = (0..3).map(|i| rot.c[i].dot(f.c[i])).sum::<f64>();
        let h = M3::diag(tr).sub_m(&frt.add_m(&frt.transpose()).scale(0.5));
        let det = h.det();
        if det.is_nan() || det <= 0.0 {
            continue;
        }
        let inv = M3::from_cols(
            h.c[1].cross(h.c[2]),
            h.c[2].cross(h.c[0]),
            h.c[0].cross(h.c[1]),
        )
        .transpose()
        .scale(1.0 / det);
        let omega = inv.mul_v(tau);
        let om_sum = omega.x.abs() + omega.y.abs() + omega.z.abs();
        let inv_abs = |a: usize| (0..3).map(|j| inv.at(a, j).abs()).sum::<f64>();
        let kappa = h.norm() * inv.norm();
        let d_om: f64 = (0..3)
            .map(|a| {
                inv_abs(a) * (d_tau + d_h * om_sum) + 32.0 * U * inv_abs(a) * tau.norm() * kappa
            })
            .map(|x| x * x)
            .sum::<f64>()
            .sqrt();
        for (i, di) in d.iter().enumerate() {
            let a = rot.mul_v(*di).norm();
            tol[o + i] += d_om * a + 24.0 * U * omega.norm() * a;
        }
    }
    tol
}

/// Kernel `set_point_write` on a records buffer of `len` slots (all `[9, 9]` before): the records
/// and counters it wrote.
#[allow(clippy::too_many_arguments)]
fn gpu_point_write(
    gpu: &yarnsim::gpu::Gpu,
    u: &AclUniform,
    sets: &[ContactSet],
    cp: &[u32],
    start: &[u32],
    rank: &[u32],
    len: usize,
) -> (Vec<[u32; 2]>, AclCounters) {
    let out = run_kernel(
        gpu,
        "set_point_write",
        &[
            ("acl", bytes(&[*u])),
            ("sets", bytes(sets)),
            ("cp_pool", bytes(cp)),
            ("point_start", bytes(start)),
            ("point_rank", bytes(rank)),
            ("point_records", bytes(&vec![[9u32, 9]; len])),
            ("acl_counters", bytes(&[AclCounters::default()])),
        ],
        SET_LANES * sets.len() as u32,
    )
    .unwrap();
    (
        cast(&out["point_records"]),
        cast::<AclCounters>(&out["acl_counters"])[0],
    )
}

/// Kernel `set_gather` over `num_points` threads: the forces, counters, and the `point_start` and
/// `point_count` it left.
fn gpu_gather(
    gpu: &yarnsim::gpu::Gpu,
    u: &AclUniform,
    table: (&[u32], &[u32], &[[u32; 2]]),
    fout: &[[f32; 4]],
    force: &[[f32; 4]],
) -> (Vec<[f32; 4]>, AclCounters, Vec<u32>, Vec<u32>) {
    let (start, count, records) = table;
    let out = run_kernel(
        gpu,
        "set_gather",
        &[
            ("acl", bytes(&[*u])),
            ("point_start", bytes(start)),
            ("point_count", bytes(count)),
            ("point_records", bytes(records)),
            ("fout_pool", bytes(fout)),
            ("acl_counters", bytes(&[AclCounters::default()])),
            ("force", bytes(force)),
        ],
        u.num_points,
    )
    .unwrap();
    (
        cast(&out["force"]),
        cast::<AclCounters>(&out["acl_counters"])[0],
        cast(&out["point_start"]),
        cast(&out["point_count"]),
    )
}

/// Each point's records of a table in set order (the canonical order: the kernel's atomics rank a
/// point's records in whatever order its threads come).
fn canonical(start: &[u32], count: &[u32], records: &[[u32; 2]]) -> Vec<Vec<[u32; 2]>> {
    count
        .iter()
        .enumerate()
        .map(|(p, &n)| {
            let a = start[p] as usize;
            let mut r = records[a..a + n as usize].to_vec();
            r.sort_unstable();
            r
        })
        .collect()
}

/// The point table (count → scan → write, the scan by its twin, which its own tests hold
/// bit-identical to its kernels) holds, point by point, the CPU step's `set_point_table` records;
/// the kernels equal their twins (the count exactly, its ranks as a permutation of each point's
/// records); the gathered force is the twin's, the same sums in the same order as the CPU step's
/// gather of its own table; and the gather leaves the counts zero for the next step.
#[test]
fn point_table_and_gather_match_the_cpu() {
    let Some(gpu) = gpu_or_skip("point_table_and_gather_match_the_cpu") else {
        return;
    };
    let (sim, acl) = fixture();
    let p = acl.pools();
    let mut sets = acl.sets().to_vec();
    // Some dead slots, as during a step (deleted or merged-away sets keep their slot).
    for s in sets.iter_mut().step_by(11) {
        s.flags &= !SET_LIVE;
    }
    let npts = sim.pos.len();
    let mut u = acl.uniform(npts);
    u.num_sets = sets.len() as u32;
    // CPU step's table.
    let (mut hist, mut start_c, mut count_c, mut rec_c) =
        (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    set_point_table(
        &sets,
        &p.cp,
        npts,
        3,
        &mut hist,
        &mut start_c,
        &mut count_c,
        &mut rec_c,
    );
    let total = rec_c.len();
    let most = *count_c.iter().max().unwrap();
    assert!(most <= MAX_POINT_RECORDS);
    assert!(most > 1, "no point is in two sets: the order is untested");
    u.record_capacity = total as u32 + 100;
    let cap = u.record_capacity as usize;
    // 1. count, from zero.
    let (mut cstart_c, mut ccount_c, mut rank_c) = (
        vec![0u32; npts + 1],
        vec![0u32; npts],
        vec![7u32; p.cp.len()],
    );
    // (and the live sets per 256 slots, for set_compact; over a grid past the table by several
    // workgroups, as the step's (the set capacity's): those return at once, and leave their words)
    let grid = sets.len() + 1_000;
    let mut groups_c = vec![7u32; grid.div_ceil(256)];
    set_point_count(
        &u,
        &sets,
        &p.cp,
        &mut cstart_c,
        &mut ccount_c,
        &mut rank_c,
        &mut groups_c,
    );
    let out = run_kernel(
        &gpu,
        "set_point_count",
        &[
            ("acl", bytes(&[u])),
            ("sets", bytes(&sets)),
            ("cp_pool", bytes(&p.cp)),
            ("point_start", bytes(&vec![0u32; npts + 1])),
            ("point_count", bytes(&vec![0u32; npts])),
            ("point_rank", bytes(&vec![7u32; p.cp.len()])),
            ("scan_groups", bytes(&vec![7u32; groups_c.len()])),
        ],
        grid as u32,
    )
    .unwrap();
    assert_eq!(cast::<u32>(&out["scan_groups"]), groups_c);
    let live_groups = sets.len().div_ceil(256);
    assert!(groups_c.len() - live_groups > 2);
    assert!(
        groups_c[live_groups..].iter().all(|&g| g == 7),
        "groups past the table written"
    );
    for (g, &c) in groups_c[..live_groups].iter().enumerate() {
        let end = (256 * (g + 1)).min(sets.len());
        let live = sets[256 * g..end]
            .iter()
            .filter(|s| s.flags & SET_LIVE != 0)
            .count();
        assert_eq!(c as usize, live, "group {g}'s live sets");
    }
    assert_eq!(cast::<u32>(&out["point_start"]), cstart_c);
    assert_eq!(cast::<u32>(&out["point_count"]), ccount_c);
    assert_eq!(ccount_c, count_c, "counts vs the CPU step's table");
    assert_eq!(&cstart_c[..npts], &count_c[..]);
    assert_eq!(cstart_c[npts], 0);
    // The ranks: the twin's are the set order, the kernel's some order of the same ranks (a
    // permutation of 0..n per point); slots of records of no live set untouched.
    let rank_g: Vec<u32> = cast(&out["point_rank"]);
    let mut ranks_g = vec![Vec::new(); npts];
    let mut ranks_c = vec![Vec::new(); npts];
    let mut listed = vec![false; p.cp.len()];
    for s in sets.iter().filter(|s| s.flags & SET_LIVE != 0) {
        for at in s.cp_off..s.cp_off + s.n_cp {
            let pt = p.cp[at as usize] as usize;
            ranks_g[pt].push(rank_g[at as usize]);
            ranks_c[pt].push(rank_c[at as usize]);
            listed[at as usize] = true;
        }
    }
    for pt in 0..npts {
        let n = count_c[pt];
        assert_eq!(
            ranks_c[pt],
            (0..n).collect::<Vec<_>>(),
            "point {pt}: twin ranks"
        );
        ranks_g[pt].sort_unstable();
        assert_eq!(
            ranks_g[pt],
            (0..n).collect::<Vec<_>>(),
            "point {pt}: kernel ranks"
        );
    }
    for (at, l) in listed.iter().enumerate() {
        if !l {
            assert_eq!(
                (rank_g[at], rank_c[at]),
                (7, 7),
                "pool slot {at} of no live set"
            );
        }
    }
    // 2. scan (twin).
    let mut scanned = cstart_c.clone();
    let mut partials = Vec::new();
    yarnsim::scan::exclusive_scan(&mut scanned, &mut partials);
    assert_eq!(scanned, start_c, "scanned starts vs the CPU step's table");
    // 3. write, with the kernel's ranks (twin and kernel on the same input: identical), and with
    //    the twin's (the CPU step's table itself).
    let write = |ranks: &[u32]| {
        let mut rec = vec![[9u32, 9]; cap];
        let mut cnt = AclCounters::default();
        set_point_write(&u, &sets, &p.cp, &scanned, ranks, &mut rec, &mut cnt);
        (rec, cnt)
    };
    let (rec_w, cnt_w) = write(&rank_g);
    let (rec_g, cnt_g) = gpu_point_write(&gpu, &u, &sets, &p.cp, &scanned, &rank_g, cap);
    assert_eq!(rec_g, rec_w, "set_point_write vs its twin");
    assert_eq!(cnt_g, cnt_w);
    assert_eq!(cnt_w.records as usize, total);
    assert_eq!(cnt_w.errors, 0);
    assert!(
        rec_g[total..].iter().all(|r| *r == [9, 9]),
        "slots past the total"
    );
    let (rec_t, _) = write(&rank_c);
    assert_eq!(
        &rec_t[..total],
        &rec_c[..],
        "the twin's ranks give the CPU step's table"
    );
    assert_eq!(
        canonical(&start_c, &count_c, &rec_g),
        canonical(&start_c, &count_c, &rec_c),
        "the kernel's table holds the CPU step's records"
    );
    let unordered = (0..npts)
        .filter(|&pt| {
            let a = start_c[pt] as usize;
            rec_g[a..a + count_c[pt] as usize] != rec_c[a..a + count_c[pt] as usize]
        })
        .count();
    // 4. gather, on the kernel's table.
    let fout = acl.step_pools().1.to_vec();
    let force0: Vec<[f32; 4]> = sim
        .pos
        .iter()
        .map(|q| [q[0] * 0.1, -q[1], 0.5, 1.0])
        .collect();
    let gather = |start: &[u32], count: &[u32], rec: &[[u32; 2]], u: &AclUniform| {
        let (mut start, mut count) = (start.to_vec(), count.to_vec());
        let mut force = force0.clone();
        let mut cnt = AclCounters::default();
        set_gather(u, &mut start, &mut count, rec, &fout, &mut cnt, &mut force);
        (force, cnt, start, count)
    };
    let (force_c, cnt_c, start_z, count_z) = gather(&scanned, &ccount_c, &rec_g, &u);
    assert!(start_z.iter().all(|&x| x == 0) && count_z.iter().all(|&x| x == 0));
    // The CPU step's gather of its own (ordered) table: the same sums, bit for bit.
    let cpu_u = AclUniform {
        record_capacity: total as u32,
        ..u
    };
    let (force_cpu, cnt_cpu, _, _) = gather(&start_c, &count_c, &rec_c, &cpu_u);
    assert_eq!(
        force_c, force_cpu,
        "twin on the kernel's table vs the CPU step's gather"
    );
    assert_eq!(cnt_c, cnt_cpu);
    let (force_g, cnt_g, start_g, count_g) =
        gpu_gather(&gpu, &u, (&scanned, &ccount_c, &rec_g), &fout, &force0);
    assert_eq!(cnt_g, cnt_c);
    assert_eq!(cnt_c, AclCounters::default());
    assert!(
        start_g.iter().all(|&x| x == 0),
        "set_gather leaves point_start zero"
    );
    assert!(
        count_g.iter().all(|&x| x == 0),
        "set_gather leaves point_count zero"
    );
    let mut worst = 0.0f64;
    for pt in 0..npts {
        let recs = &rec_c[start_c[pt] as usize..start_c[pt + 1] as usize];
        let mag: f64 = v(force0[pt]).norm()
            + recs
                .iter()
                .map(|&r| v(fout[r[1] as usize]).norm())
                .sum::<f64>();
        let tol = 2.0 * recs.len() as f64 * U * mag;
        let d = (v(force_c[pt]) - v(force_g[pt])).norm();
        if tol > 0.0 {
            worst = worst.max(d / tol);
        }
        assert!(
            d <= tol,
            "point {pt}: gathered force differs by {d:e} > {tol:e}"
        );
        assert_eq!(force_c[pt][3], force_g[pt][3]);
    }
    eprintln!(
        "{total} records, at most {most} at a point; {unordered} of {npts} points' records out of \
         set order in the kernel's table; gathered force worst {worst:.3} of the bound"
    );
}

/// A set whose rotation is not finite is named by its first control point on both paths: the CPU
/// step's error names that point (`set_evaluate_and_force`, the first such set in set order), and
/// on the GPU `set_point_write` puts it into `first_bad_point` (`set_force` put the set into
/// `first_bad_set`), where `set_gather`'s non-finite terms, at a lower point here, do not replace
/// it: the host's words are the CPU step's (the GPU named the set, "the rotation of contact set
/// k", before). Without such a set the gather names its lowest non-finite point, as before.
#[test]
fn a_set_whose_rotation_is_not_finite_is_named_by_its_first_point() {
    let Some(gpu) = gpu_or_skip("a_set_whose_rotation_is_not_finite_is_named_by_its_first_point")
    else {
        return;
    };
    let (sim, acl) = fixture();
    let p = acl.pools();
    let (sets, mut u) = whole_table(&sim, &acl);
    let npts = sim.pos.len();
    // A clean set past the middle of the table, a reference deviation of its poisoned.
    let bad = (sets.len() / 2..sets.len())
        .find(|&k| sets[k].is_clean() && sets[k].n_cp > 1)
        .expect("a clean set");
    let mut dbar = p.dbar.clone();
    dbar[sets[bad].cp_off as usize + 1] = [f32::NAN; 4];
    let point = p.cp[sets[bad].cp_off as usize];
    let n = p.cp.len();
    let (mut q, mut dev, mut fout) = (vec![V3::zero(); n], vec![[0.0; 4]; n], vec![[0.0; 4]; n]);
    let cpu_err = set_evaluate_and_force(
        &u,
        &sim.pos,
        &p.cp,
        &p.f0,
        &dbar,
        &p.m,
        &p.k,
        &p.watch,
        &p.watch_loc,
        &mut sets.clone(),
        &mut q,
        &mut dev,
        &mut fout,
    )
    .expect_err("the poisoned set's rotation");
    assert_eq!(
        cpu_err.to_string(),
        ContactError::NotFinite {
            point: point as usize
        }
        .to_string()
    );
    // The point table (twins), then set_point_write after set_force named the set.
    let (mut start, mut count, mut rank) = (vec![0u32; npts + 1], vec![0u32; npts], vec![0u32; n]);
    set_point_count(&u, &sets, &p.cp, &mut start, &mut count, &mut rank, &mut []);
    let counts = count.clone();
    let mut partials = Vec::new();
    yarnsim::scan::exclusive_scan(&mut start, &mut partials);
    u.record_capacity = start[npts];
    let flagged = AclCounters {
        errors: ACL_ERROR_NOT_FINITE,
        first_bad_set: bad as u32,
        ..AclCounters::default()
    };
    let mut rec_c = vec![[9u32, 9]; start[npts] as usize];
    let mut cnt_c = flagged;
    set_point_write(&u, &sets, &p.cp, &start, &rank, &mut rec_c, &mut cnt_c);
    let out = run_kernel(
        &gpu,
        "set_point_write",
        &[
            ("acl", bytes(&[u])),
            ("sets", bytes(&sets)),
            ("cp_pool", bytes(&p.cp)),
            ("point_start", bytes(&start)),
            ("point_rank", bytes(&rank)),
            ("point_records", bytes(&rec_c)),
            ("acl_counters", bytes(&[flagged])),
        ],
        SET_LANES * sets.len() as u32,
    )
    .unwrap();
    let cnt_g = cast::<AclCounters>(&out["acl_counters"])[0];
    assert_eq!(cnt_g, cnt_c, "set_point_write vs its twin");
    assert_eq!(cnt_c.first_bad_point, point);
    // The gather, with a NaN force of a set at a point below the bad set's: it raises the error,
    // and names that point only where no set is named.
    let low = (0..point as usize)
        .find(|&pt| counts[pt] > 0)
        .expect("a point below the bad set's in some set");
    let nan_at = rec_c[start[low] as usize][1] as usize;
    let mut fout = acl.step_pools().1.to_vec();
    fout[nan_at] = [f32::NAN, 0.0, 0.0, 0.0];
    let force0 = vec![[0.0f32; 4]; npts];
    for (before, named) in [(cnt_c, point), (AclCounters::default(), low as u32)] {
        let (mut s, mut c, mut force) = (start.clone(), counts.clone(), force0.clone());
        let mut cnt = before;
        set_gather(&u, &mut s, &mut c, &rec_c, &fout, &mut cnt, &mut force);
        let out = run_kernel(
            &gpu,
            "set_gather",
            &[
                ("acl", bytes(&[u])),
                ("point_start", bytes(&start)),
                ("point_count", bytes(&counts)),
                ("point_records", bytes(&rec_c)),
                ("fout_pool", bytes(&fout)),
                ("acl_counters", bytes(&[before])),
                ("force", bytes(&force0)),
            ],
            u.num_points,
        )
        .unwrap();
        let g = cast::<AclCounters>(&out["acl_counters"])[0];
        assert_eq!(g, cnt, "set_gather vs its twin");
        assert_eq!(cnt.errors, ACL_ERROR_NOT_FINITE);
        assert_eq!(cnt.first_bad_point, named);
    }
    // The host's words for the GPU's counters: the CPU step's error.
    assert_eq!(not_finite_error(&cnt_g).to_string(), cpu_err.to_string());
}

/// The point table's two limits on both paths: a table over its capacity raises
/// `ACL_ERROR_RECORDS_FULL` with the count it needed and writes no slot past it, and a point with
/// more than `MAX_POINT_RECORDS` records raises `ACL_ERROR_GATHER_FULL`.
#[test]
fn point_table_limits_raise_their_flags() {
    let Some(gpu) = gpu_or_skip("point_table_limits_raise_their_flags") else {
        return;
    };
    let (sim, acl) = fixture();
    let p = acl.pools();
    let (sets, mut u) = whole_table(&sim, &acl);
    let npts = sim.pos.len();
    let (mut start, mut count, mut rank) = (
        vec![0u32; npts + 1],
        vec![0u32; npts],
        vec![0u32; p.cp.len()],
    );
    set_point_count(&u, &sets, &p.cp, &mut start, &mut count, &mut rank, &mut []);
    let mut partials = Vec::new();
    yarnsim::scan::exclusive_scan(&mut start, &mut partials);
    let total = start[npts];
    u.record_capacity = total / 2;
    let cap = u.record_capacity as usize;
    let mut rec_c = vec![[9u32, 9]; cap + 8];
    let mut cnt_c = AclCounters::default();
    set_point_write(&u, &sets, &p.cp, &start, &rank, &mut rec_c, &mut cnt_c);
    let (rec_g, cnt_g) = gpu_point_write(&gpu, &u, &sets, &p.cp, &start, &rank, cap + 8);
    assert_eq!(rec_g, rec_c);
    assert_eq!(cnt_g, cnt_c);
    assert_eq!(cnt_c.records, total);
    assert_ne!(cnt_c.errors & ACL_ERROR_RECORDS_FULL, 0);
    assert!(
        rec_c[cap..].iter().all(|r| *r == [9, 9]),
        "a slot past the capacity"
    );
    // One point named by more records than the gather takes (a synthetic table: no knit has it).
    let n = MAX_POINT_RECORDS + 3;
    let fout: Vec<[f32; 4]> = (0..n).map(|i| [i as f32, 1.0, 0.0, 0.0]).collect();
    let rec: Vec<[u32; 2]> = (0..n).rev().map(|i| [i, i]).collect();
    let mut uu = u;
    uu.num_points = 2;
    uu.record_capacity = n;
    let (start, count) = ([0u32, n, n], [n, 0u32]);
    let (mut s_c, mut c_c) = (start.to_vec(), count.to_vec());
    let mut f_c = vec![[0.0f32; 4]; 2];
    let mut cnt_c = AclCounters::default();
    set_gather(&uu, &mut s_c, &mut c_c, &rec, &fout, &mut cnt_c, &mut f_c);
    let (f_g, cnt_g, _, _) = gpu_gather(&gpu, &uu, (&start, &count, &rec), &fout, &[[0.0; 4]; 2]);
    assert_ne!(cnt_c.errors & ACL_ERROR_GATHER_FULL, 0);
    assert_eq!(cnt_g, cnt_c);
    assert_eq!(f_g, f_c);
    // The first MAX_POINT_RECORDS of the table (records n-1 down to 3), added in set order.
    let want: f32 = (3..n).map(|i| i as f32).sum();
    assert_eq!(f_c[0], [want, MAX_POINT_RECORDS as f32, 0.0, 0.0]);
}

/// `set_force` on sets made for it (four to a workgroup of 64, 16 lanes each): sets of more than
/// 16 points (a lane takes several rows), one of 1, 16 and 17, next to sets the kernel must leave
/// alone or only report (dirty, dead, zero-force, not finite, too big) within one workgroup; with
/// and without the force-change criterion. Forces within the rounding bound of
/// `set_force_matches_its_twin`, flags and counters identical (the sets' deviations are chosen far
/// from the criterion's threshold: half large, half tiny).
#[test]
fn set_force_lanes_cover_every_row_of_mixed_sets() {
    let Some(gpu) = gpu_or_skip("set_force_lanes_cover_every_row_of_mixed_sets") else {
        return;
    };
    use yarnsim::acl::evaluate::MAX_SET_POINTS;
    use yarnsim::acl::sets::{SET_DIRTY, SET_NOT_FINITE};
    let mut rnd = uniform_sampler(0x2545_f491_4f6c_dd1d);
    // (points, flags, deviation scale)
    let live = SET_LIVE;
    let plan: [(u32, u32, f32); 14] = [
        (40, live, 1.0),
        (1, live, 1e-6),
        (20, live | SET_ZERO, 1.0),
        (5, live | SET_DIRTY, 1.0),
        (7, 0, 1.0),
        (9, live | SET_NOT_FINITE, 1.0),
        (17, live, 1e-6),
        (16, live, 1.0),
        (MAX_SET_POINTS + 1, live, 1.0),
        (33, live, 1e-6),
        (9, live, 1.0),
        (9, live, 1e-6),
        (48, live, 1.0),
        (3, live | SET_NOT_FINITE, 1.0),
    ];
    let (mut sets, mut f0, mut dev, mut k) = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    for &(n, flags, scale) in &plan {
        // The too-big set's pools are never read: give it none.
        let pooled = if n > MAX_SET_POINTS { 0 } else { n };
        let q = [rnd(), rnd(), rnd(), 1.0 + rnd().abs()];
        let qn = q.iter().map(|x| x * x).sum::<f32>().sqrt();
        sets.push(ContactSet {
            cp_off: f0.len() as u32,
            n_cp: n,
            k_off: k.len() as u32,
            flags,
            quat: q.map(|x| x / qn),
            ..Default::default()
        });
        for _ in 0..pooled {
            f0.push([rnd(), rnd(), rnd(), 0.0]);
            dev.push([scale * rnd(), scale * rnd(), scale * rnd(), 0.0]);
        }
        for _ in 0..pooled * (pooled + 1) / 2 {
            k.push([rnd(), rnd(), rnd(), rnd(), rnd(), rnd()]);
        }
    }
    let np = f0.len();
    for flags in [0, ACL_EXTRA_INVALIDATION] {
        let u = AclUniform {
            num_sets: sets.len() as u32,
            flags,
            tolerance: 0.04,
            ..Default::default()
        };
        let fout0 = vec![[7.0f32; 4]; np];
        let (mut sets_c, mut fout_c, mut cnt_c) =
            (sets.clone(), fout0.clone(), AclCounters::default());
        let whole = PoolPage::whole(k.len());
        set_force(
            &u,
            &mut sets_c,
            &f0,
            &k,
            &dev,
            &mut fout_c,
            &mut cnt_c,
            &whole,
        );
        let out = run_kernel(
            &gpu,
            "set_force",
            &[
                ("acl", bytes(&[u])),
                ("sets", bytes(&sets)),
                ("f0_pool", bytes(&f0)),
                ("k_pool", bytes(&k)),
                ("dev_pool", bytes(&dev)),
                ("fout_pool", bytes(&fout0)),
                ("acl_counters", bytes(&[AclCounters::default()])),
                ("block_page", bytes(&[whole])),
            ],
            SET_LANES * sets.len() as u32,
        )
        .unwrap();
        let sets_g: Vec<ContactSet> = cast(&out["sets"]);
        let fout_g: Vec<[f32; 4]> = cast(&out["fout_pool"]);
        let cnt_g: Vec<AclCounters> = cast(&out["acl_counters"]);
        assert_eq!(cnt_g[0], cnt_c, "flags {flags}");
        assert_eq!(cnt_c.first_bad_set, 5, "the smallest set not finite");
        assert_ne!(cnt_c.errors, 0);
        assert_eq!(sets_g, sets_c, "flags {flags}: the sets' flags");
        let dirtied = (0..sets.len())
            .filter(|&s| sets_c[s].flags != sets[s].flags)
            .count();
        // With the criterion, the sets of large deviations (40, 16, 9 and 48 points) turn dirty and
        // the tiny ones do not: the decisions compared above are not all one way.
        assert_eq!(dirtied, if flags == 0 { 0 } else { 4 }, "flags {flags}");
        let mut rows = 0;
        for (s, h) in sets.iter().enumerate() {
            let (o, n) = (h.cp_off as usize, h.n_cp as usize);
            if n > MAX_SET_POINTS as usize {
                continue;
            }
            for t in 0..n {
                let tol = force_row_tolerance(h, t, &f0, &k, &dev, fout_c[o + t]);
                let d = (v(fout_c[o + t]) - v(fout_g[o + t])).norm();
                assert!(d <= tol, "set {s} row {t}: |Δf| = {d:e} > {tol:e}");
                if h.is_clean() && h.flags & SET_NOT_FINITE == 0 {
                    assert_ne!(fout_g[o + t], [7.0; 4], "set {s} row {t} not written");
                } else {
                    assert_eq!(fout_g[o + t], [7.0; 4], "set {s} row {t} written");
                }
                rows += 1;
            }
        }
        assert_eq!(rows, np);
    }
}

/// `set_evaluate` on sets made for it (four to a workgroup of 64, 16 lanes each; points 16 and on
/// are read from the storage buffers, the first 16 from workgroup memory): sets of 1 to 48 points
/// next to sets it must leave alone (dirty, dead, too big) within one workgroup, decided by the
/// metric (ε tiny or huge) or, with the extra criteria, by a watched pair whose points lie past the
/// first 16 or among them (a crossing against a budget `τ f_ref` tiny or huge): the decisions are
/// far from every threshold, so the flags must be the twin's exactly. Rotations and deviations
/// within 1e-4 of the twin's, far above f32 rounding for these well-conditioned sets and far below
/// what reading a wrong point gives. One set of 16 points is turned without deformation but for its
/// point 12, moved by 0.5: only that point's deviation (in lane 12) makes it dirty, which the
/// maximum over the lanes must see.
#[test]
fn set_evaluate_lanes_cover_every_point_of_mixed_sets() {
    let Some(gpu) = gpu_or_skip("set_evaluate_lanes_cover_every_point_of_mixed_sets") else {
        return;
    };
    use yarnsim::acl::evaluate::MAX_SET_POINTS;
    use yarnsim::acl::sets::{SET_DIRTY, SET_NOT_FINITE};
    use yarnsim::acl::{WatchLoc, WatchPair};
    let mut rnd = uniform_sampler(0x9e37_79b9_7f4a_7c15);
    let live = SET_LIVE;
    // (points, flags, ε, f_ref, watched pair: whether its points lie past the first 16)
    let plan: [(u32, u32, f32, f32, Option<bool>); 15] = [
        (40, live, 1e-6, 1e30, None),
        (1, live, 1e6, 1e30, None),
        (17, live, 1e6, 1e30, None),
        (5, live | SET_DIRTY, 1e6, 1e30, None),
        (7, 0, 1e6, 1e30, None),
        (40, live, 1e6, 1e-30, Some(true)),
        (40, live, 1e6, 1e30, Some(true)),
        (MAX_SET_POINTS + 1, live, 1e6, 1e30, None),
        (16, live, 1e-6, 1e30, None),
        (9, live, 1e6, 1e-30, Some(false)),
        (48, live, 1e6, 1e30, None),
        (3, live, 1e-6, 1e30, None),
        (9, live, 1e6, 1e30, Some(false)),
        (33, live, 1e-6, 1e30, None),
        (16, live, 2.37, 1e30, None),
    ];
    let mut pos: Vec<[f32; 4]> = Vec::new();
    let (mut cp, mut dbar, mut m) = (Vec::new(), Vec::new(), Vec::new());
    let (mut watch, mut watch_loc) = (Vec::new(), Vec::new());
    let mut sets = Vec::new();
    for (k, &(n, flags, eps, f_ref, watched)) in plan.iter().enumerate() {
        let pooled = if n > MAX_SET_POINTS { 0 } else { n };
        // The last set: no deformation but its point 12's, unit masses.
        let bumped = k + 1 == plan.len();
        let noise = if bumped { 0.0 } else { 0.01 };
        // The reference shape d̄, and the points: that shape turned by some rotation, moved, and
        // deformed a little.
        let ang = 0.3 + rnd().abs();
        let (sn, cs) = ang.sin_cos();
        let cp_off = cp.len() as u32;
        // d̄ has its centre at 0, as a model's reference offsets do.
        let mut ds: Vec<[f32; 3]> = (0..pooled)
            .map(|_| [3.0 * rnd(), 3.0 * rnd(), 3.0 * rnd()])
            .collect();
        for a in 0..3 {
            let mean = ds.iter().map(|d| d[a]).sum::<f32>() / pooled.max(1) as f32;
            for d in &mut ds {
                d[a] -= mean;
            }
        }
        for d in ds {
            dbar.push([d[0], d[1], d[2], 0.0]);
            m.push(if bumped { 1.0 } else { 0.5 + rnd().abs() });
            cp.push(pos.len() as u32);
            pos.push([
                cs * d[0] - sn * d[1] + 1.0 + noise * rnd(),
                sn * d[0] + cs * d[1] - 2.0 + noise * rnd(),
                d[2] + 0.5 + noise * rnd(),
                0.0,
            ]);
        }
        if bumped {
            pos[cp[cp_off as usize + 12] as usize][0] += 0.5;
        }
        let (w_off, mut n_watch) = (watch.len() as u32, 0);
        if let Some(past) = watched {
            // Two points 2.5 r apart (r = 1) that were touching at the rebuild (gap < 0): a crossing.
            let (a, b) = if past { (20, 31) } else { (2, 7) };
            let (pa, pb) = (cp_off as usize + a, cp_off as usize + b);
            let pa_p = pos[cp[pa] as usize];
            let dir = [rnd(), rnd(), rnd()];
            let l = (dir[0] * dir[0] + dir[1] * dir[1] + dir[2] * dir[2]).sqrt();
            pos[cp[pb] as usize] = [
                pa_p[0] + 2.5 * dir[0] / l,
                pa_p[1] + 2.5 * dir[1] / l,
                pa_p[2] + 2.5 * dir[2] / l,
                0.0,
            ];
            watch.push(WatchPair {
                i: 0,
                j: 0,
                kw: 1.0,
                gap: -1e-9,
            });
            watch_loc.push(WatchLoc::from_slots([
                a as u32, a as u32, a as u32, a as u32, b as u32, b as u32, b as u32, b as u32,
            ]));
            n_watch = 1;
        }
        sets.push(ContactSet {
            cp_off,
            n_cp: n,
            flags,
            eps,
            w_off,
            n_watch,
            guard_near: 0.0,
            guard_far: 1e30,
            f_ref,
            quat: [0.0, 0.0, 0.0, 1.0],
            ..Default::default()
        });
    }
    let np = cp.len();
    for flags in [0, ACL_EXTRA_INVALIDATION] {
        let mut u = AclUniform {
            quadrature: 1,
            num_sets: sets.len() as u32,
            flags,
            radius: 1.0,
            tolerance: 0.04,
            ..Default::default()
        };
        u.weights[0] = [0.25; 4];
        // Deviations not written stay 7.
        let (mut sets_c, mut dev_c) = (sets.clone(), vec![[7.0f32; 4]; np]);
        set_evaluate(
            &u,
            &pos,
            &cp,
            &dbar,
            &m,
            &watch,
            &watch_loc,
            &mut sets_c,
            &mut dev_c,
            &PoolPage::whole(watch.len()),
        );
        // The kernel with the watch pools' page `page` (`w`, `wl`), from `sets_in` and `dev_in`.
        let run = |w: &[u8], wl: &[u8], page: PoolPage, sets_in: &[u8], dev_in: &[u8]| {
            run_kernel(
                &gpu,
                "set_evaluate",
                &[
                    ("acl", bytes(&[u])),
                    ("pos", bytes(&pos)),
                    ("cp_pool", bytes(&cp)),
                    ("dbar_pool", bytes(&dbar)),
                    ("m_pool", bytes(&m)),
                    ("watch_pool", w),
                    ("watch_loc_pool", wl),
                    ("sets", sets_in),
                    ("dev_pool", dev_in),
                    ("watch_pool_page", bytes(&[page])),
                ],
                SET_LANES * sets.len() as u32,
            )
            .unwrap()
        };
        let dev7 = vec![[7.0f32; 4]; np];
        let whole = PoolPage::whole(watch.len());
        let out = run(
            bytes(&watch),
            bytes(&watch_loc),
            whole,
            bytes(&sets),
            bytes(&dev7),
        );
        if flags != 0 {
            // The watch pools in pages of one watched pair (src/acl/pages.rs: each set with one
            // in a page of its own, the others, with none, in page 0), dispatched in turn: the
            // GPU's sets and deviations are the one page's bit for bit, and so are the twin's.
            let pages = PoolPages::with_stride(1, 1, watch.len() as u32);
            assert!(pages.count() >= 2);
            let (w_pages, wl_pages) = (
                pages.split(bytes(&watch), 16),
                pages.split(bytes(&watch_loc), 16),
            );
            let (mut sets_p, mut dev_p) = (bytes(&sets).to_vec(), bytes(&dev7).to_vec());
            let (mut sets_t, mut dev_t) = (sets.clone(), vec![[7.0f32; 4]; np]);
            for q in 0..pages.count() {
                let o = run(&w_pages[q], &wl_pages[q], pages.page(q, q), &sets_p, &dev_p);
                (sets_p, dev_p) = (o["sets"].clone(), o["dev_pool"].clone());
                set_evaluate(
                    &u,
                    &pos,
                    &cp,
                    &dbar,
                    &m,
                    bytemuck::cast_slice(&w_pages[q]),
                    bytemuck::cast_slice(&wl_pages[q]),
                    &mut sets_t,
                    &mut dev_t,
                    &pages.page(q, q),
                );
            }
            assert!(
                sets_p == out["sets"] && dev_p == out["dev_pool"],
                "set_evaluate over pages of the watch pools differs from one page"
            );
            assert!(
                bytes(&sets_t) == bytes(&sets_c) && bytes(&dev_t) == bytes(&dev_c),
                "the twin over pages of the watch pools differs from one page"
            );
        }
        let sets_g: Vec<ContactSet> = cast(&out["sets"]);
        let dev_g: Vec<[f32; 4]> = cast(&out["dev_pool"]);
        let dirty: Vec<usize> = (0..sets.len())
            .filter(|&k| sets_c[k].flags & SET_DIRTY != 0 && sets[k].flags & SET_DIRTY == 0)
            .collect();
        // ε tiny: sets 0, 8, 11, 13; the bumped set 14; with the crossing criterion, 5 (its pair
        // past the first 16) and 9 (among them) too.
        let expect: &[usize] = if flags == 0 {
            &[0, 8, 11, 13, 14]
        } else {
            &[0, 5, 8, 9, 11, 13, 14]
        };
        assert_eq!(dirty, expect, "flags {flags}: the twin's decisions");

        for (k, h) in sets.iter().enumerate() {
            let (c, g) = (&sets_c[k], &sets_g[k]);
            assert_eq!(g.flags, c.flags, "flags {flags}, set {k}");
            let (rc, rg) = (
                quat_to_matrix(c.quat).cast::<f64>(),
                quat_to_matrix(g.quat).cast::<f64>(),
            );
            let dr = rc.sub_m(&rg).norm();
            assert!(dr <= 1e-4, "flags {flags}, set {k}: |ΔR| = {dr:e}");
            let evaluated = h.is_clean() && h.n_cp <= MAX_SET_POINTS;
            // The too-big set has no pools.
            let n = if h.n_cp > MAX_SET_POINTS {
                0
            } else {
                h.n_cp as usize
            };
            let o = h.cp_off as usize;
            for (t, (dc, dg)) in dev_c[o..o + n].iter().zip(&dev_g[o..o + n]).enumerate() {
                let d = (v(*dc) - v(*dg)).norm();
                let scale = 1.0 + v(dbar[o + t]).norm();
                assert!(
                    d <= 1e-4 * scale,
                    "flags {flags}, set {k} point {t}: |ΔΔ| = {d:e}"
                );
                let untouched = !evaluated || sets_c[k].flags & SET_NOT_FINITE != 0;
                assert_eq!(dg[3] == 7.0, untouched, "set {k} point {t}: written or not");
            }
        }
    }
}

/// `set_point_write` on sets made for it (16 lanes per set, 16 sets per workgroup): sets of more
/// than 16 points (a lane writes several records), of 1, 16 and 17, a dead one and one too big
/// among them, and a table one record too small (the last slot not written, the error raised).
/// The records must be the twin's, slot for slot.
#[test]
fn set_point_write_lanes_cover_every_record() {
    let Some(gpu) = gpu_or_skip("set_point_write_lanes_cover_every_record") else {
        return;
    };
    use yarnsim::acl::evaluate::MAX_SET_POINTS;
    let npts = 97u32;
    let sizes = [
        40u32, 1, 17, 9, 16, 33, 48, 2, 20, 5, 16, 17, 3, 40, 11, 8, 25, 30,
    ];
    let (mut sets, mut cp) = (Vec::new(), Vec::new());
    let mut x = 12345u32;
    for (k, &n) in sizes.iter().enumerate() {
        let flags = if k == 9 { 0 } else { SET_LIVE };
        let n = if k == 12 { MAX_SET_POINTS + 1 } else { n };
        sets.push(ContactSet {
            cp_off: cp.len() as u32,
            n_cp: n,
            flags,
            ..Default::default()
        });
        // Distinct points within a set, as a set's sorted points are.
        let mut pts: Vec<u32> = Vec::new();
        while pts.len() < n.min(npts) as usize {
            x = x.wrapping_mul(1_103_515_245).wrapping_add(12_345);
            let p = (x >> 8) % npts;
            if !pts.contains(&p) {
                pts.push(p);
            }
        }
        pts.sort_unstable();
        cp.extend(pts);
        cp.resize(cp.len().max(sets[k].cp_off as usize + n as usize), 0);
    }
    let mut u = AclUniform {
        num_sets: sets.len() as u32,
        num_points: npts,
        ..Default::default()
    };
    let (mut start, mut count) = (vec![0u32; npts as usize + 1], vec![0u32; npts as usize]);
    let mut rank = vec![7u32; cp.len()];
    let mut groups = vec![0u32; 1];
    set_point_count(
        &u,
        &sets,
        &cp,
        &mut start,
        &mut count,
        &mut rank,
        &mut groups,
    );
    let mut partials = Vec::new();
    yarnsim::scan::exclusive_scan(&mut start, &mut partials);
    let total = start[npts as usize] as usize;
    assert!(total > 200, "{total} records");
    for cap in [total, total - 1] {
        u.record_capacity = cap as u32;
        let mut rec_c = vec![[9u32, 9]; total];
        let mut cnt_c = AclCounters::default();
        set_point_write(&u, &sets, &cp, &start, &rank, &mut rec_c, &mut cnt_c);
        let (rec_g, cnt_g) = gpu_point_write(&gpu, &u, &sets, &cp, &start, &rank, total);
        assert_eq!(rec_g, rec_c, "capacity {cap}: records");
        assert_eq!(cnt_g, cnt_c, "capacity {cap}: counters");
        assert_eq!(cnt_c.records as usize, total);
        assert_eq!(cnt_c.errors != 0, cap < total, "capacity {cap}: the error");
        assert_eq!(rec_c.iter().filter(|r| **r == [9, 9]).count(), total - cap);
    }
}
