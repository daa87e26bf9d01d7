//! Shared helpers of the scheduler and ACL tests: a woven test cloth, a flat knitted swatch,
//! prescribed ("kinematic") randomized drops and stretches, a small deterministic random generator,
//! and the brute-force search for touching quadrature pairs that the safety tests compare against.
#![allow(dead_code)]

use yarnsim::knit;
use yarnsim::math::V3;
use yarnsim::scene::{Obstacle, Pattern, Scene};
use yarnsim::sched::{PairClass, PairRules};
use yarnsim::spline;
use yarnsim::state::{Curve, Topology};

#[path = "../support/rng.rs"]
mod rng;
pub use rng::Rng;

/// The scene of the 2,000-loop benchmark swatch (benches/acl.rs, benches/gpu.rs,
/// examples/acl_profile.rs): the default scene with τ = 0.04 over a plane at y = 0 (friction 0.3);
/// its cloth is [`flat_swatch`]`(50, 40, r, 0.3)`.
pub fn bench_swatch_scene() -> Scene {
    let mut scene = Scene::default();
    scene.contact.tolerance = 0.04;
    scene.obstacle.push(Obstacle::Plane {
        point: [0.0; 3],
        normal: [0.0, 1.0, 0.0],
        friction: 0.3,
    });
    scene
}

/// The benchmark swatch's wales and courses (2,000 loops: the issue asks for at least that many).
pub const BENCH_SWATCH: (u32, u32) = (50, 40);

/// The benchmark swatch's simulation: [`flat_swatch`]`(50, 40, r, 0.3)` in `scene` (from
/// [`bench_swatch_scene`], its contact model possibly changed) with `contact`, damped over the
/// 4 × 4-loop blocks of its two phases as a generated scene piece is ([`flat_swatch_blocks`]).
pub fn bench_swatch_sim(
    scene: &Scene,
    curves: &[Curve],
    pins: &[u32],
    contact: Box<dyn yarnsim::sim::ContactForce>,
) -> Result<yarnsim::sim::Sim, yarnsim::sim::SimError> {
    let (w, c) = BENCH_SWATCH;
    let [a, b] = flat_swatch_blocks(w, c, scene.yarn.radius, scene.yarn.damping_block_loops);
    yarnsim::sim::Sim::with_damping_phases(scene, curves, &[&a, &b], pins, contact)
}

/// The damping blocks of [`flat_swatch`]`(w, c, r, _)`'s control points in phases A and B, as
/// `scene::build_curves` numbers them for a generated piece of `side` × `side`-loop blocks.
/// (Until 2026-11-28 the benchmarks damped the swatch's one yarn as a single block of 16,081
/// control points, which no scene does, and which one GPU workgroup damps alone.)
pub fn flat_swatch_blocks(w: u32, c: u32, r: f32, side: u32) -> [Vec<u32>; 2] {
    let k = knit::generate(Pattern::Stockinette, w, c, r).unwrap();
    let lb = yarnsim::scene::LoopBlocks::new(w, c, side);
    let loops = || k.point_loop.iter().flatten().copied();
    [
        loops().map(|l| lb.block(l)).collect(),
        loops().map(|l| lb.shifted(l)).collect(),
    ]
}

/// A plain-weave patch: `n` yarns along x and `n` along y with pitch `p`, undulating by ±`amp` so
/// that crossing yarns overlap slightly (`2 amp < 2r`) and touch at every crossing. Control points
/// every `p / per_pitch`; open yarns with one tangent handle at each end.
pub fn woven_patch(n: usize, p: f32, amp: f32, per_pitch: usize) -> Vec<Curve> {
    use std::f32::consts::PI;
    let npts = n * per_pitch + 3;
    let mut curves = Vec::new();
    // The yarns along x first, then those along y, undulating in opposite phase so that they cross.
    for (along_x, sign) in [(true, 1.0f32), (false, -1.0)] {
        for j in 0..n {
            let across = (j as f32 + 0.5) * p;
            let points = (0..npts)
                .map(|i| {
                    let s = (i as f32 - 1.0) * p / per_pitch as f32;
                    let z = sign * amp * (PI * (s / p - 0.5) + PI * j as f32).cos();
                    if along_x {
                        [s, across, z]
                    } else {
                        [across, s, z]
                    }
                })
                .collect();
            curves.push(Curve {
                points,
                closed: false,
            });
        }
    }
    curves
}

/// Same-yarn exclusion for the tests: segments of one yarn closer than `gap` segments along it.
pub struct IndexExclusion {
    pub seg_yarn: Vec<u32>,
    pub seg_index: Vec<u32>,
    pub gap: u32,
}
impl IndexExclusion {
    pub fn new(topo: &Topology, gap: u32) -> Self {
        IndexExclusion {
            seg_yarn: topo.segments.iter().map(|s| s.yarn).collect(),
            seg_index: topo.segments.iter().map(|s| s.index_in_yarn).collect(),
            gap,
        }
    }
}
impl PairRules for IndexExclusion {
    fn segment_class(&self, a: u32, b: u32) -> PairClass {
        if self.seg_yarn[a as usize] == self.seg_yarn[b as usize]
            && self.seg_index[a as usize].abs_diff(self.seg_index[b as usize]) <= self.gap
        {
            PairClass::All
        } else {
            PairClass::Clear
        }
    }
    fn excluded(&self, a: u32, _: u32, b: u32, _: u32) -> bool {
        self.segment_class(a, b) == PairClass::All
    }
}

/// A prescribed motion of two woven patches: `A` is stretched along x and jittered; `B` (rotated and
/// offset) falls onto `A`, with random changes of velocity, pushes into it, and rises again.
pub struct Kinematic {
    pub rest: Vec<[f32; 4]>,
    pub in_b: Vec<bool>,
    pub centre: [f32; 3],
    stretch_amp: f32,
    stretch_period: f32,
    jitter_amp: Vec<[f32; 3]>,
    jitter_freq: Vec<f32>,
    jitter_phase: Vec<f32>,
    /// Vertical offset of B per step (precomputed from a random piecewise-constant velocity).
    b_height: Vec<f32>,
    b_angle: f32,
    b_offset: [f32; 2],
}

impl Kinematic {
    /// `steps` of motion from seed `seed`; `speed` scales every velocity (cm/step).
    pub fn new(
        rest_a: &[[f32; 3]],
        n_a: usize,
        rest_all: &[[f32; 3]],
        steps: usize,
        seed: u64,
        speed: f32,
    ) -> Self {
        let mut rng = Rng(seed);
        let npts = rest_all.len();
        let mut c = [0.0f32; 3];
        for p in rest_a {
            for a in 0..3 {
                c[a] += p[a] / rest_a.len() as f32;
            }
        }
        let jitter_amp = (0..npts)
            .map(|_| {
                [
                    rng.range(-1.0, 1.0) as f32 * 0.02,
                    rng.range(-1.0, 1.0) as f32 * 0.02,
                    rng.range(-1.0, 1.0) as f32 * 0.03,
                ]
            })
            .collect();
        let jitter_freq = (0..npts)
            .map(|_| rng.range(0.01, 0.05) as f32 * speed / 0.004)
            .collect();
        let jitter_phase = (0..npts)
            .map(|_| rng.range(0.0, std::f64::consts::TAU) as f32)
            .collect();
        // B: starts 0.6 – 1.0 cm above, falls at 0.5–1.5 × speed, velocity changes at random times;
        // turns back once it is 0.05 – 0.2 cm into A.
        let mut h = rng.range(0.6, 1.0) as f32;
        let mut v = -(rng.range(0.5, 1.5) as f32) * speed;
        let floor = -(rng.range(0.03, 0.1) as f32);
        let mut b_height = Vec::with_capacity(steps + 1);
        for _ in 0..=steps {
            b_height.push(h);
            if rng.next_f64() < 0.03 {
                // A sudden change of velocity (an impact, a jerk).
                let s = v.signum();
                v = s * (rng.range(0.2, 2.0) as f32) * speed;
            }
            if h < floor && v < 0.0 {
                v = -v;
            }
            h += v;
        }
        Kinematic {
            rest: rest_all.iter().map(|p| [p[0], p[1], p[2], 0.0]).collect(),
            in_b: (0..npts).map(|i| i >= n_a).collect(),
            centre: c,
            stretch_amp: rng.range(0.02, 0.12) as f32,
            stretch_period: rng.range(80.0, 200.0) as f32 * 0.004 / speed,
            jitter_amp,
            jitter_freq,
            jitter_phase,
            b_height,
            b_angle: rng.range(0.0, 1.5) as f32,
            b_offset: [rng.range(-0.3, 0.3) as f32, rng.range(-0.3, 0.3) as f32],
        }
    }

    /// Positions at `step`. The motion starts from rest: time runs as `t²/(2T₀)` for the first
    /// `T₀ = 40` steps, so every velocity ramps up with a bounded change of movement.
    pub fn positions(&self, step: usize, out: &mut Vec<[f32; 4]>) {
        out.clear();
        const T0: f32 = 40.0;
        let ts = step as f32;
        let t = if ts < T0 {
            ts * ts / (2.0 * T0)
        } else {
            ts - 0.5 * T0
        };
        let hb = {
            let i = t.floor() as usize;
            let f = t - i as f32;
            let h0 = self.b_height[i.min(self.b_height.len() - 1)];
            let h1 = self.b_height[(i + 1).min(self.b_height.len() - 1)];
            h0 + (h1 - h0) * f
        };
        let s = 1.0 + self.stretch_amp * (std::f32::consts::TAU * t / self.stretch_period).sin();
        let (sn, cs) = self.b_angle.sin_cos();
        for (i, p) in self.rest.iter().enumerate() {
            let j = &self.jitter_amp[i];
            let w = (self.jitter_freq[i] * t + self.jitter_phase[i]).sin();
            let mut x = [p[0] - self.centre[0], p[1] - self.centre[1], p[2]];
            if self.in_b[i] {
                // Rotate about z and lift.
                let (rx, ry) = (cs * x[0] - sn * x[1], sn * x[0] + cs * x[1]);
                x = [rx + self.b_offset[0], ry + self.b_offset[1], x[2] + hb];
            }
            out.push([
                self.centre[0] + x[0] * s + j[0] * w,
                self.centre[1] + x[1] + j[1] * w,
                x[2] + j[2] * w,
                0.0,
            ]);
        }
    }
}

/// Every non-excluded quadrature pair `(i, j)`, `i < j`, closer than `2r` — by brute force over all
/// segment pairs (with a padded-AABB prefilter, which cannot lose a touching pair).
pub fn brute_force_touching(
    topo: &Topology,
    pos: &[[f32; 4]],
    b: u32,
    r: f32,
    rules: &dyn PairRules,
) -> Vec<[u32; 2]> {
    let nseg = topo.segments.len();
    let mut qp = vec![V3::<f32>::zero(); nseg * b as usize];
    let mut lo = vec![V3::<f32>::zero(); nseg];
    let mut hi = vec![V3::<f32>::zero(); nseg];
    for (s, seg) in topo.segments.iter().enumerate() {
        let q = seg.cp.map(|i| V3::<f32>::from4(pos[i as usize]));
        for k in 0..b {
            qp[s * b as usize + k as usize] = spline::eval(&q, spline::quad_param(k, b));
        }
        let (l, h) = spline::segment_aabb(&q);
        lo[s] = l - V3::splat(1.01 * r);
        hi[s] = h + V3::splat(1.01 * r);
    }
    let mut out = Vec::new();
    for sa in 0..nseg {
        for sb in sa + 1..nseg {
            if (0..3).any(|a| lo[sa].get(a) > hi[sb].get(a) || lo[sb].get(a) > hi[sa].get(a)) {
                continue;
            }
            for ka in 0..b {
                for kb in 0..b {
                    if rules.excluded(sa as u32, ka, sb as u32, kb) {
                        continue;
                    }
                    let (i, j) = (sa * b as usize + ka as usize, sb * b as usize + kb as usize);
                    if (qp[i] - qp[j]).norm2() < 4.0 * r * r {
                        out.push([i as u32, j as u32]);
                    }
                }
            }
        }
    }
    out
}

/// Two patches (A below, B above) as one topology; returns (topology, rest positions, points in A).
pub fn two_patches(n: usize, r: f32) -> (Topology, Vec<[f32; 3]>, usize) {
    let a = woven_patch(n, 0.6, 0.97 * r, 4);
    let b = woven_patch(n, 0.6, 0.97 * r, 4);
    let n_a: usize = a.iter().map(|c| c.points.len()).sum();
    let all: Vec<Curve> = a.into_iter().chain(b).collect();
    let (topo, pos) = Topology::from_curves(&all).unwrap();
    let rest = pos.iter().map(|p| [p[0], p[1], p[2]]).collect();
    (topo, rest, n_a)
}

/// A stockinette swatch of `w × c` loops of yarn radius `r`, lying flat (knit face up, +y) with its
/// lowest point `gap` above the plane y = 0.
pub fn flat_swatch(w: u32, c: u32, r: f32, gap: f32) -> Vec<Curve> {
    let k = knit::generate(Pattern::Stockinette, w, c, r).unwrap();
    // (x, y, z) → (x, z, −y): the swatch's normal (+z) becomes +y.
    let mut curves: Vec<Curve> = k
        .curves
        .into_iter()
        .map(|cv| Curve {
            points: cv.points.iter().map(|p| [p[0], p[2], -p[1]]).collect(),
            closed: cv.closed,
        })
        .collect();
    let low = curves
        .iter()
        .flat_map(|c| c.points.iter().map(|p| p[1]))
        .fold(f32::INFINITY, f32::min);
    for cv in &mut curves {
        for p in &mut cv.points {
            p[1] += gap - low;
        }
    }
    curves
}
