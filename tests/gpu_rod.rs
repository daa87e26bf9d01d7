//! Parity of the rod kernels with their CPU twins (`bend_gradient`, `rod_forces`, the stages of
//! `material_frames`: `frame_transport`, `bend_twist`, `theta_sweep`, and `plasticity`) on states of
//! real scenes: scenes/tiny.toml after 200 CPU steps and scenes/swatch.toml (1,177 points, more
//! bending) after 50.
//!
//! Tolerance, derived per output value by a running error analysis: the twin's own generic code is
//! evaluated on [`Ev`], a value carrying a first-order bound on the error an f32 evaluation of the
//! same operations may have accumulated (the inputs are the f32 values both sides read, so exact).
//! Each rounded result `r` adds its rounding error:
//! - `+ − ×`: `U |r|`, `U = 2⁻²⁴` (correctly rounded on both sides; a multiply-add the GPU compiler
//!   fuses only drops one rounding);
//! - `÷ √`: `10 U |r|` (5 ulp: Vulkan allows 2.5 ulp for ÷ and derives √ from inversesqrt (2 ulp)
//!   and ÷; lavapipe measured 0.5 ulp for both);
//! - `sin cos`: `2⁻²²` absolute (lavapipe measured ≤ 7.4·10⁻⁸ ≈ 2⁻²³·⁷ for |x| ≤ 100, libm ≤ 1 ulp;
//!   Vulkan only promises 2⁻¹¹, so this is lavapipe's accuracy with a margin of 3);
//! - `atan2`: `min(2⁻¹⁴ |r|, 2⁻¹⁷)` (lavapipe measured ≤ 2.1·10⁻⁵ |r| for small results and
//!   ≤ 3.5·10⁻⁶ absolute; libm far below).
//!
//! Input errors propagate through each operation with its exact derivative bound (`|a| e_b + |b| e_a`
//! for a product, Lipschitz 1 for sin and cos, …). The GPU and the CPU result are each within the
//! bound `e` of the exact value, so the test allows `|gpu − cpu| ≤ 2e`, per component. Values a kernel
//! copies or does not touch (θ in `frame_transport`, the frames' tangents in `theta_sweep`, the w
//! components) must be equal exactly. Each test prints the largest difference and its largest
//! fraction of the bound (`cargo test --test gpu_rod -- --nocapture`).

#[path = "support/fixture.rs"]
mod fixture;

use fixture::{bytes, scene_sim};
use std::cmp::Ordering;
use std::ops::{Add, AddAssign, Div, Mul, MulAssign, Neg, Sub, SubAssign};
use yarnsim::gpu::testing::gpu_or_skip;
use yarnsim::gpu::Gpu;
use yarnsim::layout::{BendRest, ColorRange, EdgeFrame, Params};
use yarnsim::math::{Real, V3};
use yarnsim::pipelines::{run_kernel, Buffers, Pipelines};
use yarnsim::rod::{self, BendLocal, Stiffness, NONE};
use yarnsim::sim::Sim;

// ---------------------------------------------------------------------------------------------------
// Running error bounds
// ---------------------------------------------------------------------------------------------------

/// Unit roundoff of f32.
const U: f64 = 1.0 / (1u64 << 24) as f64;
/// Relative error of ÷ and √ (5 ulp).
const U_DIV: f64 = 10.0 * U;
/// Absolute error of sin and cos.
const TRIG: f64 = 1.0 / (1u64 << 22) as f64;
/// atan2: relative error for small results, absolute cap.
const ATAN_REL: f64 = 1.0 / (1u64 << 14) as f64;
const ATAN_ABS: f64 = 1.0 / (1u64 << 17) as f64;

/// A value (`v`, evaluated in f64) and a bound `e` on how far an f32 evaluation of the same
/// operations may be from the exact value.
#[derive(Clone, Copy, Debug, Default)]
struct Ev {
    v: f64,
    e: f64,
}

impl Ev {
    fn exact(v: f64) -> Ev {
        Ev { v, e: 0.0 }
    }
    fn rounded(v: f64, e: f64, u: f64) -> Ev {
        Ev {
            v,
            e: e + u * v.abs(),
        }
    }
}

impl PartialEq for Ev {
    fn eq(&self, o: &Ev) -> bool {
        self.v == o.v
    }
}
impl PartialOrd for Ev {
    fn partial_cmp(&self, o: &Ev) -> Option<Ordering> {
        self.v.partial_cmp(&o.v)
    }
}
impl Add for Ev {
    type Output = Ev;
    fn add(self, o: Ev) -> Ev {
        Ev::rounded(self.v + o.v, self.e + o.e, U)
    }
}
impl Sub for Ev {
    type Output = Ev;
    fn sub(self, o: Ev) -> Ev {
        Ev::rounded(self.v - o.v, self.e + o.e, U)
    }
}
impl Mul for Ev {
    type Output = Ev;
    fn mul(self, o: Ev) -> Ev {
        let e = self.v.abs() * o.e + o.v.abs() * self.e + self.e * o.e;
        Ev::rounded(self.v * o.v, e, U)
    }
}
impl Div for Ev {
    type Output = Ev;
    fn div(self, o: Ev) -> Ev {
        let v = self.v / o.v;
        // |a/b − a'/b'| ≤ (e_a + |a/b| e_b) / (|b| − e_b).
        let room = o.v.abs() - o.e;
        let e = if room > 0.0 {
            (self.e + v.abs() * o.e) / room
        } else {
            f64::INFINITY
        };
        Ev::rounded(v, e, U_DIV)
    }
}
impl Neg for Ev {
    type Output = Ev;
    fn neg(self) -> Ev {
        Ev {
            v: -self.v,
            e: self.e,
        }
    }
}
impl AddAssign for Ev {
    fn add_assign(&mut self, o: Ev) {
        *self = *self + o;
    }
}
impl SubAssign for Ev {
    fn sub_assign(&mut self, o: Ev) {
        *self = *self - o;
    }
}
impl MulAssign for Ev {
    fn mul_assign(&mut self, o: Ev) {
        *self = *self * o;
    }
}

impl Real for Ev {
    fn from_f64(x: f64) -> Ev {
        Ev::exact(x)
    }
    fn to_f64(self) -> f64 {
        self.v
    }
    fn sqrt(self) -> Ev {
        let v = self.v.sqrt();
        // |√x − √y| = |x − y| / (√x + √y).
        let e = self.e / (v + (self.v - self.e).max(0.0).sqrt());
        Ev::rounded(v, if e.is_nan() { 0.0 } else { e }, U_DIV)
    }
    fn abs(self) -> Ev {
        Ev {
            v: self.v.abs(),
            e: self.e,
        }
    }
    fn sin(self) -> Ev {
        Ev {
            v: self.v.sin(),
            e: self.e + TRIG,
        }
    }
    fn cos(self) -> Ev {
        Ev {
            v: self.v.cos(),
            e: self.e + TRIG,
        }
    }
    fn atan2(self, x: Ev) -> Ev {
        let v = self.v.atan2(x.v);
        // dθ = (x dy − y dx) / (x² + y²), with the denominator at its smallest within the errors.
        let r = (x.v * x.v + self.v * self.v).sqrt() - (x.e + self.e);
        let e = if r > 0.0 {
            (x.v.abs() * self.e + self.v.abs() * x.e) / (r * r)
        } else {
            f64::INFINITY
        };
        Ev {
            v,
            e: e + (ATAN_REL * v.abs()).min(ATAN_ABS),
        }
    }
    fn acos(self) -> Ev {
        let c = self.v.clamp(-1.0, 1.0);
        let room = 1.0 - (c.abs() + self.e).min(1.0);
        Ev {
            v: c.acos(),
            e: if room > 0.0 {
                self.e / room.sqrt() + ATAN_ABS
            } else {
                f64::INFINITY
            },
        }
    }
    fn is_finite(self) -> bool {
        self.v.is_finite()
    }
    fn max(self, o: Ev) -> Ev {
        Ev {
            v: self.v.max(o.v),
            e: self.e.max(o.e),
        }
    }
    fn min(self, o: Ev) -> Ev {
        Ev {
            v: self.v.min(o.v),
            e: self.e.max(o.e),
        }
    }
    fn eps() -> Ev {
        Ev::exact(f32::EPSILON as f64)
    }
}

fn ev(x: f32) -> Ev {
    Ev::exact(x as f64)
}

fn ev3(p: [f32; 4]) -> V3<Ev> {
    V3::from4(p)
}

// ---------------------------------------------------------------------------------------------------
// Comparison
// ---------------------------------------------------------------------------------------------------

/// The largest difference seen, absolute and as a fraction of its bound.
#[derive(Default)]
struct Worst {
    abs: f64,
    ratio: f64,
    compared: usize,
    differing: usize,
    /// Largest |cpu| and largest bound, for scale.
    value: f64,
    bound: f64,
}

impl Worst {
    /// `|gpu − cpu| ≤ bound` (equal values, NaN with NaN included, always pass).
    fn check(&mut self, what: &str, i: usize, gpu: f32, cpu: f32, bound: f64) {
        self.compared += 1;
        self.value = self.value.max(cpu.abs() as f64);
        self.bound = self.bound.max(bound);
        if gpu == cpu || (gpu.is_nan() && cpu.is_nan()) {
            return;
        }
        self.differing += 1;
        let d = (gpu as f64 - cpu as f64).abs();
        assert!(
            d <= bound,
            "{what} [{i}]: gpu {gpu:e} cpu {cpu:e}: difference {d:e} > bound {bound:e}"
        );
        self.abs = self.abs.max(d);
        self.ratio = self.ratio.max(d / bound);
    }

    fn report(&self, what: &str) {
        println!(
            "{what}: {} values compared, {} differ; largest difference {:.3e}, {:.3} of its bound; \
             largest value {:.3e}, largest bound {:.3e}",
            self.compared, self.differing, self.abs, self.ratio, self.value, self.bound
        );
        assert!(self.compared > 100, "{what}: only {} values", self.compared);
    }
}

fn check4(w: &mut Worst, what: &str, i: usize, gpu: [f32; 4], cpu: [f32; 4], bound: [f64; 4]) {
    for k in 0..4 {
        w.check(what, i, gpu[k], cpu[k], bound[k]);
    }
}

fn bound3(v: V3<Ev>) -> [f64; 4] {
    [2.0 * v.x.e, 2.0 * v.y.e, 2.0 * v.z.e, 0.0]
}

fn cast<T: bytemuck::Pod>(b: &[u8]) -> Vec<T> {
    bytemuck::pod_collect_to_vec(b)
}

// ---------------------------------------------------------------------------------------------------
// Fixtures
// ---------------------------------------------------------------------------------------------------

/// The scenes every test runs on: name, overrides, CPU steps.
const SCENES: [(&str, &[&str], usize); 2] =
    [("tiny", &[], 200), ("swatch", &["simulation.frames=1"], 50)];

/// What the `material_frames` stage of a real step starts from: a scene stepped `steps` times, the
/// rod state it ended that step with, and (in `sim`) the positions of the next step after its
/// `integrate_position`.
struct FramesInput {
    sim: Sim,
    params: Params,
    rest: Vec<BendRest>,
    frames: Vec<EdgeFrame>,
}

fn frames_input(name: &str, sets: &[&str], steps: usize) -> FramesInput {
    let mut sim = scene_sim(name, sets, steps);
    let rest = sim.rod.rest.clone();
    let frames = sim.rod.frames.clone();
    let params = sim.step_params();
    sim.step().unwrap();
    FramesInput {
        sim,
        params,
        rest,
        frames,
    }
}

/// The frames of [`frames_input`] after the CPU twin of `frame_transport` (its copies for
/// `frame_solve`, `theta_start` and `rest_start`, dropped).
fn transported(fi: &FramesInput) -> Vec<EdgeFrame> {
    transport_twin(fi).0
}

/// The CPU twin of `frame_transport` on [`frames_input`]: `(frames, theta_start, rest_start)`,
/// the copies starting as NaN and zeros, so that what it does not write shows.
fn transport_twin(fi: &FramesInput) -> (Vec<EdgeFrame>, Vec<f32>, Vec<BendRest>) {
    let s = &fi.sim;
    let mut frames = fi.frames.clone();
    let mut theta_start = vec![f32::NAN; frames.len()];
    let mut rest_start = vec![BendRest::default(); fi.rest.len()];
    rod::frame_transport(
        &fi.params,
        &s.topo.edges,
        &s.pos,
        &mut frames,
        &mut theta_start,
        &s.rod.edge_bends,
        &fi.rest,
        &mut rest_start,
    );
    (frames, theta_start, rest_start)
}

/// [`frames_input`] after the CPU twins of `frame_transport` and `bend_twist`: the state the
/// `theta_sweep` dispatches start from. Returns `(frames, rest, bend_kb)`.
fn before_theta(fi: &FramesInput) -> (Vec<EdgeFrame>, Vec<BendRest>, Vec<[f32; 4]>) {
    let s = &fi.sim;
    let frames = transported(fi);
    let mut rest = fi.rest.clone();
    let mut kb = vec![[0.0; 4]; s.rod.bends.len()];
    rod::bend_twist(
        &fi.params,
        &s.rod.bends,
        &frames,
        &s.pos,
        &mut rest,
        &mut kb,
    );
    (frames, rest, kb)
}

/// Moves every θ by a deterministic amount in ±0.3 rad, so the Newton steps have work to do.
fn perturb_theta(frames: &mut [EdgeFrame]) {
    for (e, f) in frames.iter_mut().enumerate() {
        f.u[3] += 0.3 * (7.31 * e as f32).sin();
    }
}

fn stiffness(params: &Params) -> Stiffness<Ev> {
    Stiffness {
        bending: ev(params.bending),
        twisting: ev(params.twisting),
    }
}

// ---------------------------------------------------------------------------------------------------
// Rod forces
// ---------------------------------------------------------------------------------------------------

/// `bend_grad` as the `bend_gradient` kernel writes it for `sim`'s state, from NaN everywhere
/// first, so an element the kernel skipped shows.
fn gpu_bend_gradient(gpu: &Gpu, sim: &Sim) -> Vec<u8> {
    let (params, r) = (sim.step_params(), &sim.rod);
    let mut out = run_kernel(
        gpu,
        "bend_gradient",
        &[
            ("params", bytes(&[params])),
            ("bends", bytes(&r.bends)),
            ("bend_rest", bytes(&r.rest)),
            ("frames", bytes(&r.frames)),
            ("pos", bytes(&sim.pos)),
            ("bend_grad", bytes(&vec![[f32::NAN; 4]; 3 * r.bends.len()])),
        ],
        params.num_bends,
    )
    .unwrap();
    out.remove("bend_grad").unwrap()
}

#[test]
fn bend_gradient_matches_twin() {
    let Some(gpu) = gpu_or_skip("bend_gradient_matches_twin") else {
        return;
    };
    for (name, sets, steps) in SCENES {
        let sim = scene_sim(name, sets, steps);
        let params = sim.step_params();
        let r = &sim.rod;
        let nb = r.bends.len();
        assert_eq!(params.num_bends as usize, nb);
        let fresh = vec![[f32::NAN; 4]; 3 * nb];
        let g_grad: Vec<[f32; 4]> = cast(&gpu_bend_gradient(&gpu, &sim));
        let mut grad = fresh.clone();
        rod::bend_gradient(&params, &r.bends, &r.rest, &r.frames, &sim.pos, &mut grad);
        let k = stiffness(&params);
        let mut w = Worst::default();
        for (bi, (b, rest)) in r.bends.iter().zip(&r.rest).enumerate() {
            let (g, _) = BendLocal::<Ev>::gather(b, rest, &r.frames, &sim.pos).gradient(&k);
            for (role, &gr) in g.iter().enumerate() {
                let i = 3 * bi + role;
                check4(&mut w, "bend_grad", i, g_grad[i], grad[i], bound3(gr));
            }
        }
        w.report(&format!("bend_gradient on {name}"));
        assert!(grad.iter().any(|g| g[0] != 0.0), "no gradient to compare");
    }
}

#[test]
fn rod_forces_matches_twin() {
    let Some(gpu) = gpu_or_skip("rod_forces_matches_twin") else {
        return;
    };
    for (name, sets, steps) in SCENES {
        let sim = scene_sim(name, sets, steps);
        let params = sim.step_params();
        let r = &sim.rod;
        let fresh = vec![[f32::NAN; 4]; sim.pos.len()];
        let out = run_kernel(
            &gpu,
            "rod_forces",
            &[
                ("params", bytes(&[params])),
                ("point_bends", bytes(&r.point_bends)),
                ("mass", bytes(&sim.mass)),
                ("bend_grad", bytes(&r.bend_grad)),
                ("force", bytes(&fresh)),
            ],
            params.num_points,
        )
        .unwrap();
        let g_force: Vec<[f32; 4]> = cast(&out["force"]);
        let mut force = fresh.clone();
        rod::rod_forces(&params, &r.point_bends, &sim.mass, &r.bend_grad, &mut force);
        let gravity = V3::new(
            ev(params.gravity_x),
            ev(params.gravity_y),
            ev(params.gravity_z),
        );
        let mut w = Worst::default();
        for (p, slots) in r.point_bends.iter().enumerate() {
            let mut acc = gravity * ev(sim.mass[p]);
            for &s in slots {
                if s != NONE {
                    acc -= ev3(r.bend_grad[s as usize]);
                }
            }
            check4(&mut w, "force", p, g_force[p], force[p], bound3(acc));
        }
        w.report(&format!("rod_forces on {name}"));
    }
}

/// `bend_forces`, which the GPU step dispatches in place of `bend_gradient` and `rod_forces`, leaves
/// `force` bit for bit as those two dispatched on the same GPU (its output starts as NaN, so every
/// point's must be written): on the tiny swatch and the swatch (one yarn of 1,176 edges, so many
/// workgroups), and on both with some elements renumbered far from their points
/// (elements i and nb − 1 − i swapped for every i < nb / 2 with i ≡ 0 mod 17, `point_bends`
/// following): the tiny swatch's one workgroup still caches all its elements, the swatch's
/// workgroups' runs outgrow their cache, and points compute elements themselves. The
/// twin is the CPU's `bend_gradient` and `rod_forces` bit for bit.
#[test]
fn bend_forces_is_bend_gradient_and_rod_forces_bit_for_bit() {
    let Some(gpu) = gpu_or_skip("bend_forces_is_bend_gradient_and_rod_forces_bit_for_bit") else {
        return;
    };
    for (name, sets, steps) in SCENES {
        let sim = scene_sim(name, sets, steps);
        let params = sim.step_params();
        let r = &sim.rod;
        let nb = r.bends.len();
        let fresh = vec![[f32::NAN; 4]; sim.pos.len()];
        let grad = gpu_bend_gradient(&gpu, &sim);
        let two = run_kernel(
            &gpu,
            "rod_forces",
            &[
                ("params", bytes(&[params])),
                ("point_bends", bytes(&r.point_bends)),
                ("mass", bytes(&sim.mass)),
                ("bend_grad", &grad),
                ("force", bytes(&fresh)),
            ],
            params.num_points,
        )
        .unwrap();
        // The elements renumbered, or not.
        let swapped = |i: usize| {
            let mirror = nb - 1 - i;
            if i.min(mirror).is_multiple_of(17) {
                mirror
            } else {
                i
            }
        };
        let mut renumbered = vec![(r.bends.clone(), r.rest.clone(), r.point_bends.clone())];
        {
            let bends = (0..nb).map(|i| r.bends[swapped(i)]).collect::<Vec<_>>();
            let rest = (0..nb).map(|i| r.rest[swapped(i)]).collect::<Vec<_>>();
            let slots = r
                .point_bends
                .iter()
                .map(|s| {
                    s.map(|x| {
                        if x == NONE {
                            x
                        } else {
                            3 * swapped(x as usize / 3) as u32 + x % 3
                        }
                    })
                })
                .collect::<Vec<_>>();
            assert_ne!(slots, r.point_bends);
            renumbered.push((bends, rest, slots));
        }
        for (k, (bends, rest, slots)) in renumbered.iter().enumerate() {
            let fused = run_kernel(
                &gpu,
                "bend_forces",
                &[
                    ("params", bytes(&[params])),
                    ("bends", bytes(bends)),
                    ("bend_rest", bytes(rest)),
                    ("frames", bytes(&r.frames)),
                    ("pos", bytes(&sim.pos)),
                    ("point_bends", bytes(slots)),
                    ("mass", bytes(&sim.mass)),
                    ("force", bytes(&fresh)),
                ],
                params.num_points,
            )
            .unwrap();
            let what = if k == 0 { "" } else { ", elements renumbered" };
            assert!(
                fused["force"] == two["force"],
                "{name}{what}: bend_forces differs from bend_gradient and rod_forces"
            );
            let mut twin = fresh.clone();
            rod::bend_forces(
                &params, bends, rest, &r.frames, &sim.pos, slots, &sim.mass, &mut twin,
            );
            let mut g = vec![[f32::NAN; 4]; 3 * nb];
            let mut cpu = fresh.clone();
            rod::bend_gradient(&params, &r.bends, &r.rest, &r.frames, &sim.pos, &mut g);
            rod::rod_forces(&params, &r.point_bends, &sim.mass, &g, &mut cpu);
            assert!(
                twin == cpu,
                "{name}{what}: the twin differs from the CPU stages"
            );
        }
        let force: Vec<[f32; 4]> = cast(&two["force"]);
        assert!(force.iter().all(|f| f.iter().all(|x| x.is_finite())));
    }
}

// ---------------------------------------------------------------------------------------------------
// Material frames
// ---------------------------------------------------------------------------------------------------

#[test]
fn frame_transport_matches_twin() {
    let Some(gpu) = gpu_or_skip("frame_transport_matches_twin") else {
        return;
    };
    for (name, sets, steps) in SCENES {
        let fi = frames_input(name, sets, steps);
        let s = &fi.sim;
        let out = run_kernel(
            &gpu,
            "frame_transport",
            &[
                ("params", bytes(&[fi.params])),
                ("edges", bytes(&s.topo.edges)),
                ("pos", bytes(&s.pos)),
                ("frames", bytes(&fi.frames)),
                ("theta_start", bytes(&vec![f32::NAN; fi.frames.len()])),
                ("edge_bends", bytes(&s.rod.edge_bends)),
                ("bend_rest", bytes(&fi.rest)),
                (
                    "rest_start",
                    bytes(&vec![BendRest::default(); fi.rest.len()]),
                ),
            ],
            fi.params.num_edges,
        )
        .unwrap();
        let g_frames: Vec<EdgeFrame> = cast(&out["frames"]);
        let g_start: Vec<f32> = cast(&out["theta_start"]);
        let g_rest: Vec<BendRest> = cast(&out["rest_start"]);
        let (frames, theta_start, rest_start) = transport_twin(&fi);
        // θ and the rest states copied: to the bit, and what they were.
        for (i, (g, c)) in g_start.iter().zip(&theta_start).enumerate() {
            assert_eq!(g.to_bits(), c.to_bits(), "theta_start[{i}]");
            assert_eq!(c.to_bits(), fi.frames[i].u[3].to_bits(), "theta_start[{i}]");
        }
        assert!(g_rest == rest_start && rest_start == fi.rest, "rest_start");
        let mut w = Worst::default();
        let mut turned = 0;
        for (i, (e, f)) in s.topo.edges.iter().zip(&fi.frames).enumerate() {
            let (u, t) = rod::transport_frame(
                ev3(f.u),
                ev3(f.t),
                ev3(s.pos[e.a as usize]),
                ev3(s.pos[e.b as usize]),
            );
            let mut bu = bound3(u);
            bu[3] = 0.0; // θ is copied
            check4(&mut w, "frames.u", i, g_frames[i].u, frames[i].u, bu);
            check4(&mut w, "frames.t", i, g_frames[i].t, frames[i].t, bound3(t));
            turned += (frames[i].t != f.t) as usize;
        }
        assert!(turned > 0, "no tangent moved");
        w.report(&format!("frame_transport on {name}"));
    }
}

#[test]
fn bend_twist_matches_twin() {
    let Some(gpu) = gpu_or_skip("bend_twist_matches_twin") else {
        return;
    };
    for (name, sets, steps) in SCENES {
        let fi = frames_input(name, sets, steps);
        let s = &fi.sim;
        let frames = transported(&fi);
        let fresh_kb = vec![[f32::NAN; 4]; s.rod.bends.len()];
        let out = run_kernel(
            &gpu,
            "bend_twist",
            &[
                ("params", bytes(&[fi.params])),
                ("bends", bytes(&s.rod.bends)),
                ("frames", bytes(&frames)),
                ("pos", bytes(&s.pos)),
                ("bend_rest", bytes(&fi.rest)),
                ("bend_kb", bytes(&fresh_kb)),
            ],
            fi.params.num_bends,
        )
        .unwrap();
        let g_rest: Vec<BendRest> = cast(&out["bend_rest"]);
        let g_kb: Vec<[f32; 4]> = cast(&out["bend_kb"]);
        let mut rest = fi.rest.clone();
        let mut kb = fresh_kb.clone();
        rod::bend_twist(
            &fi.params,
            &s.rod.bends,
            &frames,
            &s.pos,
            &mut rest,
            &mut kb,
        );
        let mut w = Worst::default();
        let mut twisted = 0;
        for (i, b) in s.rod.bends.iter().enumerate() {
            let (psi, k, lbar) =
                rod::twist_and_binormal(b, ev(fi.rest[i].ref_twist), &frames, &s.pos);
            w.check(
                "ref_twist",
                i,
                g_rest[i].ref_twist,
                rest[i].ref_twist,
                2.0 * psi.e,
            );
            twisted += (rest[i].ref_twist != fi.rest[i].ref_twist) as usize;
            // The rest of the record is untouched.
            let (mut a, mut c) = (g_rest[i], rest[i]);
            a.ref_twist = 0.0;
            c.ref_twist = 0.0;
            assert_eq!(a, c, "bend_rest[{i}] other than ψ");
            let mut bk = bound3(k);
            bk[3] = 2.0 * lbar.e;
            check4(&mut w, "bend_kb", i, g_kb[i], kb[i], bk);
        }
        assert!(twisted > 0, "no reference twist changed");
        w.report(&format!("bend_twist on {name}"));
    }
}

/// Per dispatch of `theta_sweep`: the bound of each edge's step and new θ (edges of the colour only).
fn theta_bounds(
    params: &Params,
    range: &ColorRange,
    sim: &Sim,
    rest: &[BendRest],
    kb: &[[f32; 4]],
    frames: &[EdgeFrame],
) -> Vec<(usize, f64, f64)> {
    let k = stiffness(params);
    let r = &sim.rod;
    let first = range.first as usize;
    (first..first + range.count as usize)
        .map(|slot| {
            let e = r.edge_order[slot] as usize;
            let step = rod::theta_newton_step(&k, &r.bends, rest, kb, &r.edge_bends, frames, e);
            let theta = ev(frames[e].u[3]) + step;
            (slot, 2.0 * step.e, 2.0 * theta.e)
        })
        .collect()
}

/// Compares the outputs of `theta_sweep` dispatches: `theta_step` and θ of the colour's edges within
/// their bounds, everything else of `frames` and `theta_step` equal.
fn check_theta(
    w: &mut Worst,
    sim: &Sim,
    bounds: &[(usize, f64, f64)],
    g: (&[f32], &[EdgeFrame]),
    c: (&[f32], &[EdgeFrame]),
) {
    let (g_step, g_frames) = g;
    let (c_step, c_frames) = c;
    let ne = c_frames.len();
    let mut step_bound = vec![0.0; ne];
    let mut theta_bound = vec![0.0; ne];
    for &(slot, bs, bt) in bounds {
        step_bound[slot] = bs;
        theta_bound[sim.rod.edge_order[slot] as usize] = bt;
    }
    for i in 0..ne {
        w.check("theta_step", i, g_step[i], c_step[i], step_bound[i]);
        let mut b = [0.0; 4];
        b[3] = theta_bound[i];
        check4(w, "frames.u", i, g_frames[i].u, c_frames[i].u, b);
        check4(w, "frames.t", i, g_frames[i].t, c_frames[i].t, [0.0; 4]);
    }
}

/// One `theta_sweep` dispatch per colour, each from the CPU twin's result of the colour before (one
/// sweep), on a real state whose angles were moved off their minimum.
#[test]
fn theta_sweep_matches_twin_per_colour() {
    let Some(gpu) = gpu_or_skip("theta_sweep_matches_twin_per_colour") else {
        return;
    };
    for (name, sets, steps) in SCENES {
        let fi = frames_input(name, sets, steps);
        let s = &fi.sim;
        let r = &s.rod;
        let (mut frames, rest, kb) = before_theta(&fi);
        perturb_theta(&mut frames);
        let mut theta_step = vec![f32::NAN; frames.len()];
        let mut w = Worst::default();
        for range in rod::color_ranges(&r.color_start) {
            let out = run_kernel(
                &gpu,
                "theta_sweep",
                &[
                    ("params", bytes(&[fi.params])),
                    ("color_range", bytes(&[range])),
                    ("bends", bytes(&r.bends)),
                    ("bend_rest", bytes(&rest)),
                    ("bend_kb", bytes(&kb)),
                    ("edge_bends", bytes(&r.edge_bends)),
                    ("edge_order", bytes(&r.edge_order)),
                    ("theta_step", bytes(&theta_step)),
                    ("frames", bytes(&frames)),
                ],
                range.count,
            )
            .unwrap();
            let bounds = theta_bounds(&fi.params, &range, s, &rest, &kb, &frames);
            rod::theta_sweep(
                &fi.params,
                &range,
                &r.bends,
                &rest,
                &kb,
                &r.edge_bends,
                &r.edge_order,
                &mut theta_step,
                &mut frames,
            );
            let g_step: Vec<f32> = cast(&out["theta_step"]);
            let g_frames: Vec<EdgeFrame> = cast(&out["frames"]);
            check_theta(
                &mut w,
                s,
                &bounds,
                (&g_step, &g_frames),
                (&theta_step, &frames),
            );
        }
        let moved = theta_step.iter().filter(|s| s.abs() > 1e-3).count();
        assert!(moved > frames.len() / 4, "only {moved} angles moved");
        w.report(&format!("theta_sweep per colour on {name}"));
    }
}

/// The whole quasi-static solve: `frame_sweeps` × 3 dispatches in one compute pass, one bind group
/// per colour (its own `color_range` uniform buffer), as the GPU step records them; against
/// `frame_sweeps` × 3 calls of the twin.
///
/// Bound: differences of θ grow from dispatch to dispatch as `E ← ρ E + b`, where `b` is the
/// dispatch's largest per-edge bound for θ (computed on the twin's state) and `ρ` bounds how much a
/// colour update θᵢ ↦ θᵢ + sᵢ(θ) amplifies differences of its inputs (max norm, first order):
/// `1` for the edges it does not touch and, for an edge with Newton step `−g/h'` (`h'` the safeguarded
/// `h`), the row sum of its Jacobian: `|1 − h/h'| + |g g_b|/h'² + ht/h'` (own angle: `∂g/∂θᵢ = h`,
/// `∂h/∂θᵢ = −g_b`, the bending part of `g`; neighbours: the twist coupling `2GJ/l̄` of each shared
/// element, summing to `ht`); `1` where the step is clamped. Near the minimum (`g ≈ 0`, bending part
/// of `h` non-negative) `ρ ≤ 1`, so the dispatches' differences add up at most.
#[test]
fn theta_sweep_matches_twin_over_all_colours_and_sweeps() {
    let Some(gpu) = gpu_or_skip("theta_sweep_matches_twin_over_all_colours_and_sweeps") else {
        return;
    };
    for (si, (name, sets, steps)) in SCENES.into_iter().enumerate() {
        let fi = frames_input(name, sets, steps);
        let s = &fi.sim;
        let r = &s.rod;
        let (mut frames, rest, kb) = before_theta(&fi);
        // The real state (angles near their minimum) on tiny, moved angles on the swatch.
        if si == 1 {
            perturb_theta(&mut frames);
        }
        let sweeps = fi.params.frame_sweeps;
        assert!(sweeps >= 2, "the scene solves with {sweeps} sweeps");
        let ranges = rod::color_ranges(&r.color_start);
        let theta_step0 = vec![f32::NAN; frames.len()];
        let (g_step, g_frames) = run_theta_sweeps(
            &gpu,
            &fi.params,
            &ranges,
            s,
            &rest,
            &kb,
            &theta_step0,
            &frames,
        );
        // The twin, and the bound propagated over the dispatches.
        let (theta_step, frames, total, rho_max) =
            twin_sweeps_with_bound(&fi.params, s, &rest, &kb, &theta_step0, &frames);
        println!("{name}: largest amplification ρ {rho_max:.4}; propagated bound {total:.3e}");
        let mut w = Worst::default();
        for (i, (g, c)) in g_frames.iter().zip(&frames).enumerate() {
            let mut b = [0.0; 4];
            b[3] = total;
            check4(&mut w, "frames.u", i, g.u, c.u, b);
            check4(&mut w, "frames.t", i, g.t, c.t, [0.0; 4]);
        }
        // The last sweep's steps: s = θ_new − θ_old, so their difference is at most the sum of the
        // two θ differences, each within `total`.
        for (i, (g, c)) in g_step.iter().zip(&theta_step).enumerate() {
            w.check("theta_step", i, *g, *c, 2.0 * total);
        }
        w.report(&format!("theta_sweep × {} on {name}", 3 * sweeps));
    }
}

/// The twin's `frame_sweeps` × 3 `theta_sweep` calls from `frames` (with `rest` and `kb` of
/// [`before_theta`]), and the bound the GPU's θ keeps from the twin's after as many dispatches (see
/// [`theta_sweep_matches_twin_over_all_colours_and_sweeps`]). Returns `(theta_step, frames, bound,
/// largest amplification ρ)`.
fn twin_sweeps_with_bound(
    params: &Params,
    s: &Sim,
    rest: &[BendRest],
    kb: &[[f32; 4]],
    theta_step0: &[f32],
    frames: &[EdgeFrame],
) -> (Vec<f32>, Vec<EdgeFrame>, f64, f64) {
    let r = &s.rod;
    let ranges = rod::color_ranges(&r.color_start);
    let mut frames = frames.to_vec();
    let mut theta_step = theta_step0.to_vec();
    let mut total = 0.0f64;
    let mut rho_max = 0.0f64;
    for _ in 0..params.frame_sweeps {
        for range in &ranges {
            let bounds = theta_bounds(params, range, s, rest, kb, &frames);
            let b = bounds.iter().map(|b| b.2).fold(0.0, f64::max);
            let rho = bounds
                .iter()
                .map(|&(slot, _, _)| {
                    let e = r.edge_order[slot] as usize;
                    theta_amplification(params, s, rest, kb, &frames, e)
                })
                .fold(1.0, f64::max);
            rho_max = rho_max.max(rho);
            total = rho * total + b;
            rod::theta_sweep(
                params,
                range,
                &r.bends,
                rest,
                kb,
                &r.edge_bends,
                &r.edge_order,
                &mut theta_step,
                &mut frames,
            );
        }
    }
    (theta_step, frames, total, rho_max)
}

/// `frame_solve`: the material frames after `frame_transport` in one dispatch over the rod's tiles
/// (`rod::frame_tiles`), against the stages it replaces:
/// - on the same GPU, `bend_twist`, `frame_sweeps` × 3 `theta_sweep` and `plasticity` dispatched
///   in one pass from the same input leave `frames`, `bend_rest` and `bend_kb` bit for bit as it
///   does (it runs their functions in shaders/shared/rod.wgsl on the same values in the same
///   order; a compiler that contracted multiply-adds differently in the two would show here);
/// - its twin `rod::frame_solve` bit for bit as the CPU stages (here and in tests/rod.rs);
/// - as a check of the whole, θ within the bound the per-colour dispatches keep from the CPU sweeps
///   ([`twin_sweeps_with_bound`]). That bound takes the CPU's κb and ψ as the sweeps' input, while
///   the kernel computes its own (within `bend_twist`'s bound of them); measured, the differences
///   stay under 1% of it.
///
/// On tiny (one tile), the swatch (an open yarn of 1,176 edges in 5 tiles with halos) with 2 and 5
/// sweeps, and sack_small (24 closed rings of 384 edges, their tiles wrapping around); angles moved
/// off their minimum except on tiny, and p_plastic = 0.001 so the elements flow. Its outputs start
/// as NaN: every element and every angle is written.
#[test]
fn frame_solve_matches_the_stages_it_replaces() {
    let Some(gpu) = gpu_or_skip("frame_solve_matches_the_stages_it_replaces") else {
        return;
    };
    let cases: [(&str, &[&str], usize, u32); 4] = [
        ("tiny", &[], 200, 2),
        ("swatch", &["simulation.frames=1"], 50, 2),
        ("swatch", &["simulation.frames=1"], 50, 5),
        ("sack_small", &["simulation.frames=1"], 2, 2),
    ];
    for (ci, (name, sets, steps, sweeps)) in cases.into_iter().enumerate() {
        let fi = frames_input(name, sets, steps);
        let s = &fi.sim;
        let r = &s.rod;
        let mut frames = transported(&fi);
        if ci > 0 {
            perturb_theta(&mut frames);
        }
        let params = Params {
            frame_sweeps: sweeps,
            plastic_radius: 0.001,
            ..fi.params
        };
        let theta_start: Vec<f32> = frames.iter().map(|f| f.u[3]).collect();
        let tiles = rod::frame_tiles(
            &s.topo,
            &r.bends,
            &r.edge_bends,
            &r.edge_order,
            &r.color_start,
            sweeps,
        )
        .unwrap();
        let nan_rest = vec![
            BendRest {
                ref_twist: f32::NAN,
                ..BendRest::default()
            };
            fi.rest.len()
        ];
        let nan_kb = vec![[f32::NAN; 4]; fi.rest.len()];
        let mut nan_frames = frames.clone();
        nan_frames.iter_mut().for_each(|f| f.u[3] = f32::NAN);
        let out = run_kernel(
            &gpu,
            "frame_solve",
            &[
                ("params", bytes(&[params])),
                ("frame_tiles", bytes(&tiles)),
                ("bends", bytes(&r.bends)),
                ("pos", bytes(&s.pos)),
                ("theta_start", bytes(&theta_start)),
                ("rest_start", bytes(&fi.rest)),
                ("frames", bytes(&nan_frames)),
                ("bend_rest", bytes(&nan_rest)),
                ("bend_kb", bytes(&nan_kb)),
            ],
            tiles.len() as u32,
        )
        .unwrap();
        let g_frames: Vec<EdgeFrame> = cast(&out["frames"]);
        let g_rest: Vec<BendRest> = cast(&out["bend_rest"]);
        let g_kb: Vec<[f32; 4]> = cast(&out["bend_kb"]);
        // The stages on the same GPU.
        let (q_frames, q_rest, q_kb) = run_frame_stages(&gpu, &params, s, &frames, &fi.rest);
        let bits4 = |v: &[[f32; 4]]| v.iter().flatten().map(|x| x.to_bits()).collect::<Vec<_>>();
        let frame_bits =
            |v: &[EdgeFrame]| bits4(&v.iter().flat_map(|f| [f.u, f.t]).collect::<Vec<_>>());
        let rest_bits = |v: &[BendRest]| bytemuck::cast_slice::<BendRest, u32>(v).to_vec();
        assert!(
            frame_bits(&g_frames) == frame_bits(&q_frames),
            "{name}: frames, GPU stages"
        );
        assert!(
            rest_bits(&g_rest) == rest_bits(&q_rest),
            "{name}: bend_rest, GPU stages"
        );
        assert!(bits4(&g_kb) == bits4(&q_kb), "{name}: bend_kb, GPU stages");
        // The CPU stages, and the twin.
        let (_, rest1, kb1) = before_theta(&fi);
        let theta_step0 = vec![f32::NAN; frames.len()];
        let (_, want, total, rho_max) =
            twin_sweeps_with_bound(&params, s, &rest1, &kb1, &theta_step0, &frames);
        let mut want_rest = rest1.clone();
        rod::plasticity(&params, &r.bends, &want, &kb1, &mut want_rest);
        let (mut twin, mut twin_rest, mut twin_kb) = (nan_frames.clone(), nan_rest, nan_kb);
        rod::frame_solve(
            &params,
            &tiles,
            &r.bends,
            &s.pos,
            &theta_start,
            &fi.rest,
            &mut twin,
            &mut twin_rest,
            &mut twin_kb,
        );
        assert!(
            frame_bits(&twin) == frame_bits(&want),
            "{name}: rod::frame_solve's frames"
        );
        assert!(
            rest_bits(&twin_rest) == rest_bits(&want_rest),
            "{name}: its rest states"
        );
        assert!(bits4(&twin_kb) == bits4(&kb1), "{name}: its κb");
        let moved = want
            .iter()
            .zip(&frames)
            .filter(|(a, b)| (a.u[3] - b.u[3]).abs() > 1e-6)
            .count();
        assert!(
            moved > frames.len() / 4,
            "{name}: only {moved} angles moved"
        );
        let flowed = want_rest
            .iter()
            .zip(&fi.rest)
            .filter(|(a, b)| a.kappa != b.kappa)
            .count();
        assert!(
            flowed > fi.rest.len() / 4,
            "{name}: only {flowed} elements flowed"
        );
        let halos = tiles
            .iter()
            .filter(|w| w[0] != rod::NONE && w[3] & rod::FRAME_OWNED == 0)
            .count();
        println!(
            "{name}, {sweeps} sweeps: {} tiles, {halos} halo slots; ρ {rho_max:.4}; bound {total:.3e}",
            tiles.len() / rod::FRAME_TILE
        );
        let mut w = Worst::default();
        for (i, (g, c)) in g_frames.iter().zip(&want).enumerate() {
            let mut b = [0.0; 4];
            b[3] = total;
            check4(&mut w, "frames.u", i, g.u, c.u, b);
            check4(&mut w, "frames.t", i, g.t, c.t, [0.0; 4]);
        }
        w.report(&format!("frame_solve ({sweeps} sweeps) on {name}"));
    }
}

/// One `theta_sweep` bind group per colour over `buffers`, each with its colour's `color_range`
/// uniform (a buffer of its own, as the GPU step keeps them).
fn colour_groups(
    gpu: &Gpu,
    pipelines: &Pipelines,
    buffers: &Buffers,
    ranges: &[ColorRange; 3],
) -> Vec<wgpu::BindGroup> {
    let (dev, queue) = (&gpu.device, &gpu.queue);
    ranges
        .iter()
        .map(|range| {
            let mut b = Buffers::default();
            b.upload(dev, queue, "color_range", bytes(&[*range]), true);
            let buf = b.get("color_range").unwrap();
            // The bind group keeps its buffers alive.
            pipelines
                .bind_group_with(dev, "theta_sweep", buffers, &[("color_range", buf)])
                .unwrap()
        })
        .collect()
}

/// `bend_twist`, `frame_sweeps` × 3 `theta_sweep` and `plasticity` dispatched in one pass, as the
/// GPU step records them without tiles, from `frames` (after `frame_transport`) and the rest
/// states `rest`; returns `(frames, bend_rest, bend_kb)`.
fn run_frame_stages(
    gpu: &Gpu,
    params: &Params,
    sim: &Sim,
    frames: &[EdgeFrame],
    rest: &[BendRest],
) -> (Vec<EdgeFrame>, Vec<BendRest>, Vec<[f32; 4]>) {
    let (dev, queue) = (&gpu.device, &gpu.queue);
    let pipelines = Pipelines::only(dev, &["bend_twist", "theta_sweep", "plasticity"]).unwrap();
    let r = &sim.rod;
    let ranges = rod::color_ranges(&r.color_start);
    let nb = r.bends.len();
    let mut buffers = Buffers::default();
    buffers.upload(dev, queue, "params", bytes(&[*params]), true);
    buffers.upload(dev, queue, "bends", bytes(&r.bends), false);
    buffers.upload(dev, queue, "pos", bytes(&sim.pos), false);
    buffers.upload(dev, queue, "bend_rest", bytes(rest), false);
    buffers.upload(
        dev,
        queue,
        "bend_kb",
        bytes(&vec![[f32::NAN; 4]; nb]),
        false,
    );
    buffers.upload(dev, queue, "edge_bends", bytes(&r.edge_bends), false);
    buffers.upload(dev, queue, "edge_order", bytes(&r.edge_order), false);
    buffers.upload(
        dev,
        queue,
        "theta_step",
        bytes(&vec![0f32; frames.len()]),
        false,
    );
    buffers.upload(dev, queue, "frames", bytes(frames), false);
    let sweep_groups = colour_groups(gpu, &pipelines, &buffers, &ranges);
    let twist = pipelines.bind_group(dev, "bend_twist", &buffers).unwrap();
    let plastic = pipelines.bind_group(dev, "plasticity", &buffers).unwrap();
    let mut enc = dev.create_command_encoder(&Default::default());
    {
        let mut pass = enc.begin_compute_pass(&Default::default());
        pipelines
            .dispatch(&mut pass, "bend_twist", &twist, nb as u32)
            .unwrap();
        for _ in 0..params.frame_sweeps {
            for (g, range) in sweep_groups.iter().zip(&ranges) {
                pipelines
                    .dispatch(&mut pass, "theta_sweep", g, range.count)
                    .unwrap();
            }
        }
        pipelines
            .dispatch(&mut pass, "plasticity", &plastic, nb as u32)
            .unwrap();
    }
    queue.submit([enc.finish()]);
    let read = |name: &str, bytes: usize| buffers.read(dev, queue, name, bytes as u64).unwrap();
    (
        cast(&read("frames", std::mem::size_of_val(frames))),
        cast(&read("bend_rest", std::mem::size_of_val(rest))),
        cast(&read("bend_kb", nb * 16)),
    )
}

/// The amplification `ρ` of input differences by the Newton step of edge `e` (see
/// [`theta_sweep_matches_twin_over_all_colours_and_sweeps`]), from the derivatives that
/// `rod::theta_newton_step` sums, in f64.
fn theta_amplification(
    params: &Params,
    sim: &Sim,
    rest: &[BendRest],
    kb: &[[f32; 4]],
    frames: &[EdgeFrame],
    e: usize,
) -> f64 {
    let k = Stiffness {
        bending: params.bending as f64,
        twisting: params.twisting as f64,
    };
    let bending_only = Stiffness { twisting: 0.0, ..k };
    let f = frames[e];
    let (m1, m2) = rod::material_frame(V3::from4(f.t), V3::from4(f.u), f.u[3] as f64);
    let (mut g, mut gb, mut h, mut ht) = (0.0, 0.0, 0.0, 0.0);
    for (side, &bi) in sim.rod.edge_bends[e].iter().enumerate() {
        if bi == NONE {
            continue;
        }
        let role = 1 - side;
        let b = &sim.rod.bends[bi as usize];
        let r = &rest[bi as usize];
        let kb = kb[bi as usize];
        let kappa = [r.kappa[role][0] as f64, r.kappa[role][1] as f64];
        let twist = frames[b.e[1] as usize].u[3] as f64 - frames[b.e[0] as usize].u[3] as f64
            + r.ref_twist as f64;
        let excess = twist - r.twist as f64;
        let (kb3, lbar) = (V3::from4(kb), kb[3] as f64);
        let (gr, hs, tw) = rod::theta_terms(&k, kb3, m1, m2, kappa, lbar, excess, role);
        let (gbr, _, _) = rod::theta_terms(&bending_only, kb3, m1, m2, kappa, lbar, excess, role);
        g += gr;
        gb += gbr;
        h += hs;
        ht += tw;
    }
    let hu = if h > 0.5 * ht { h } else { ht.max(h.abs()) };
    if hu <= 0.0 || g == 0.0 || (g / hu).abs() >= 1.0 {
        // No step, or a clamped one: θᵢ ↦ θᵢ + const.
        return 1.0;
    }
    (1.0 - h / hu).abs() + (g * gb).abs() / (hu * hu) + ht / hu
}

/// Runs `frame_sweeps` × 3 `theta_sweep` dispatches in one pass; returns `(theta_step, frames)`.
#[allow(clippy::too_many_arguments)]
fn run_theta_sweeps(
    gpu: &Gpu,
    params: &Params,
    ranges: &[ColorRange; 3],
    sim: &Sim,
    rest: &[BendRest],
    kb: &[[f32; 4]],
    theta_step: &[f32],
    frames: &[EdgeFrame],
) -> (Vec<f32>, Vec<EdgeFrame>) {
    let (dev, queue) = (&gpu.device, &gpu.queue);
    let pipelines = Pipelines::only(dev, &["theta_sweep"]).unwrap();
    let r = &sim.rod;
    let mut buffers = Buffers::default();
    buffers.upload(dev, queue, "params", bytes(&[*params]), true);
    buffers.upload(dev, queue, "bends", bytes(&r.bends), false);
    buffers.upload(dev, queue, "bend_rest", bytes(rest), false);
    buffers.upload(dev, queue, "bend_kb", bytes(kb), false);
    buffers.upload(dev, queue, "edge_bends", bytes(&r.edge_bends), false);
    buffers.upload(dev, queue, "edge_order", bytes(&r.edge_order), false);
    buffers.upload(dev, queue, "theta_step", bytes(theta_step), false);
    buffers.upload(dev, queue, "frames", bytes(frames), false);
    let groups = colour_groups(gpu, &pipelines, &buffers, ranges);
    let mut enc = dev.create_command_encoder(&Default::default());
    {
        let mut pass = enc.begin_compute_pass(&Default::default());
        for _ in 0..params.frame_sweeps {
            for (g, range) in groups.iter().zip(ranges) {
                pipelines
                    .dispatch(&mut pass, "theta_sweep", g, range.count)
                    .unwrap();
            }
        }
    }
    queue.submit([enc.finish()]);
    let step = buffers
        .read(
            dev,
            queue,
            "theta_step",
            std::mem::size_of_val(theta_step) as u64,
        )
        .unwrap();
    let fr = buffers
        .read(dev, queue, "frames", std::mem::size_of_val(frames) as u64)
        .unwrap();
    (cast(&step), cast(&fr))
}

// ---------------------------------------------------------------------------------------------------
// Plasticity
// ---------------------------------------------------------------------------------------------------

fn run_plasticity(
    gpu: &Gpu,
    params: &Params,
    sim: &Sim,
    frames: &[EdgeFrame],
    kb: &[[f32; 4]],
    rest: &[BendRest],
) -> Vec<BendRest> {
    let out = run_kernel(
        gpu,
        "plasticity",
        &[
            ("params", bytes(&[*params])),
            ("bends", bytes(&sim.rod.bends)),
            ("frames", bytes(frames)),
            ("bend_kb", bytes(kb)),
            ("bend_rest", bytes(rest)),
        ],
        params.num_bends,
    )
    .unwrap();
    cast(&out["bend_rest"])
}

/// `plasticity` with p_plastic = 0.001 (so most elements flow) on the state `material_frames` left,
/// before plasticity ran; then with p_max infinite, with both bounds infinite (nothing moves, on
/// either side), and with p_max below most elements' starting curvature (their own bound applies).
#[test]
fn plasticity_matches_twin() {
    let Some(gpu) = gpu_or_skip("plasticity_matches_twin") else {
        return;
    };
    for (name, sets, steps) in SCENES {
        let mut sets = sets.to_vec();
        sets.push("yarn.plastic_radius=0.001");
        let fi = frames_input(name, &sets, steps);
        let s = &fi.sim;
        let r = &s.rod;
        let mut frames = fi.frames.clone();
        let mut rest0 = fi.rest.clone();
        let mut kb = vec![[0.0; 4]; r.bends.len()];
        let mut theta_step = vec![0.0; frames.len()];
        let mut theta_start = vec![0.0; frames.len()];
        let mut rest_start = rest0.clone();
        rod::material_frames(
            &fi.params,
            &s.topo.edges,
            &r.bends,
            &r.edge_bends,
            &r.edge_order,
            &r.color_start,
            &s.pos,
            &mut rest0,
            &mut frames,
            &mut kb,
            &mut theta_step,
            &mut theta_start,
            &mut rest_start,
        );
        let finite = fi.params;
        assert!(finite.plastic_radius == 0.001 && finite.plastic_max.is_finite());
        let unbounded = Params {
            plastic_max: f32::INFINITY,
            ..finite
        };
        let off = Params {
            plastic_radius: f32::INFINITY,
            plastic_max: f32::INFINITY,
            ..finite
        };
        // p_max below most elements' starting curvature: the bound is then each element's own
        // kappa_start (rod::plastic_kappa), read from bend_rest on the GPU.
        let below_start = Params {
            plastic_max: 0.05,
            ..finite
        };
        let above = rest0.iter().filter(|r| r.kappa_start > 0.05).count();
        assert!(
            above > r.bends.len() / 4,
            "only {above} elements start above 0.05"
        );
        for (case, params) in [
            ("finite", finite),
            ("p_max = inf", unbounded),
            ("off", off),
            ("p_max below the start", below_start),
        ] {
            let g_rest = run_plasticity(&gpu, &params, s, &frames, &kb, &rest0);
            let mut rest = rest0.clone();
            rod::plasticity(&params, &r.bends, &frames, &kb, &mut rest);
            let (pp, pm) = (ev(params.plastic_radius), ev(params.plastic_max));
            let mut w = Worst::default();
            let mut flowed = 0;
            for (i, b) in r.bends.iter().enumerate() {
                let bound = if case == "off" {
                    [[0.0; 2]; 2]
                } else {
                    rod::plastic_rest(b, &rest0[i], &frames, kb[i], pp, pm)
                        .map(|k| k.map(|x| 2.0 * x.e))
                };
                for (j, bj) in bound.iter().enumerate() {
                    for (c, &bc) in bj.iter().enumerate() {
                        let (g, cpu) = (g_rest[i].kappa[j][c], rest[i].kappa[j][c]);
                        w.check("kappa", i, g, cpu, bc);
                    }
                    flowed += (rest[i].kappa[j] != rest0[i].kappa[j]) as usize;
                }
                let (mut a, mut c) = (g_rest[i], rest[i]);
                a.kappa = [[0.0; 2]; 2];
                c.kappa = [[0.0; 2]; 2];
                assert_eq!(a, c, "bend_rest[{i}] other than κ̄");
            }
            if case == "off" {
                assert_eq!(flowed, 0);
                assert_eq!(
                    g_rest, rest0,
                    "plasticity off moved a rest curvature on the GPU"
                );
            } else {
                assert!(
                    flowed > r.bends.len() / 4,
                    "{case}: only {flowed} curvatures flowed"
                );
            }
            w.report(&format!("plasticity ({case}) on {name}"));
        }
    }
}
