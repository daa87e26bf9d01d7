//! Free rigid balls (scene key `[[ball]]`; the seed's sack drops 90 of them): solid spheres with
//! mass, gravity, spin, contact with each other and with the obstacles, and two-way contact with the
//! yarn, integrated inside the yarn's time step (CPU path; the GPU step refuses scenes with balls).
//!
//! Buffers: the balls' [`BallState`]s (centre and radius, velocity and 1/mass, angular velocity and
//! 1/inertia, friction, restitution); the yarn's `pos`, `vel`, `mass`, `inv_mass`; the placed
//! obstacles; and a scratch list of yarn–ball hits ([`BallScratch`]).
//!
//! # Where the stages sit in the step (seed Figure 4)
//!
//! `integrate_velocity` (yarn) → [`ball_velocity`] (gravity) → glue, length, damping →
//! `object_contact` (yarn against the obstacles) → [`ball_yarn_contact`] → [`ball_contact`] →
//! `integrate_position` (yarn) → [`ball_position`].
//!
//! # The contact model, and why it is not a penalty force
//!
//! Every ball contact is resolved at the velocity level on the positions predicted for the end of
//! the step, `x + h v`, as the seed's `object_contact` resolves yarn against obstacles: the
//! approaching normal velocity is removed, the tangential one is reduced by friction (Coulomb), and
//! a predicted overlap is removed by a normal velocity that puts the two at contact distance at the
//! end of the step. This acts as the stiffest penalty spring that the step stays stable with
//! (`k = m / h²` per contact): a ball resting on cloth sinks `M g h² / Σ m` into it (about 10⁻² r on
//! the sack), where an explicit penalty force on a 0.003 g control point stiff enough to hold a
//! 100 g ball would need a time step orders of magnitude smaller.
//!
//! - **Yarn–ball** ([`ball_yarn_contact`]): a control point within the yarn radius `r` of a ball
//!   is treated like `object_contact` treats a sphere whose surface moves with the ball (`v + ω ×
//!   arm`), but two-way: the ball receives the opposite of every impulse it gives, at the point.
//!   The contacts of one step are solved together (Jacobi), so each point gets a share `M / N` of
//!   the ball's mass, `N` being the points touching that ball this step: a light ball on heavy
//!   cloth cannot be kicked back by all of its contacts at once. The per-ball sums run over the
//!   hits in point order, so the result is deterministic.
//! - **Ball–ball and ball–obstacle** ([`ball_contact`]): sequential impulses over every touching
//!   pair (obstacles first, then pairs `i < j`), [`BALL_ITERATIONS`] sweeps. A normal impulse also
//!   makes a ball bounce: an approach faster than [`bounce_speed`] comes back at `e` times its
//!   speed (`e` the larger restitution of the two), a slower one does not, so a bouncing ball
//!   comes to rest in finite time. Friction is the geometric mean of the two friction
//!   coefficients; its impulse acts at the contact point, spinning the balls.
//!
//! Linear momentum is conserved exactly by every yarn–ball and ball–ball impulse (each is applied
//! with opposite signs), angular momentum too (both impulses act at one point); tests check both.
//!
//! Not modelled: a ball's orientation (a uniform sphere looks the same), rolling resistance, and
//! contact with glued (pinned) control points, which `object_contact` skips as well: a ball passes
//! through a pinned point.

use crate::layout::ObstacleShape;
use crate::math::V3;
use crate::step::{contact_velocity, obstacle_distance, obstacle_velocity};
use rayon::prelude::*;

/// Gauss–Seidel sweeps over the ball–ball and ball–obstacle contacts of a step: enough for a
/// pile a few balls deep to rest without sinking into itself (tests/balls.rs).
pub const BALL_ITERATIONS: usize = 8;

/// One free ball (64 bytes, 4-byte fields only, ready for a GPU buffer).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, bytemuck::Pod, bytemuck::Zeroable)]
pub struct BallState {
    /// Centre (xyz, cm) and radius (w, cm).
    pub center: [f32; 4],
    /// Velocity (xyz, cm/s) and 1 / mass (w, 1/g; 0 holds the ball in place).
    pub vel: [f32; 4],
    /// Angular velocity (xyz, rad/s) and 1 / moment of inertia (w; a solid sphere, `2/5 M R²`).
    pub omega: [f32; 4],
    /// Mass (g).
    pub mass: f32,
    /// Coulomb friction coefficient (against yarn as is; against a ball or an obstacle, the
    /// geometric mean with the other's).
    pub friction: f32,
    /// Coefficient of restitution against balls and obstacles (0: no bounce, 1: elastic).
    pub restitution: f32,
    pub _pad: u32,
}

const _: () = assert!(std::mem::size_of::<BallState>() == 64);

impl BallState {
    /// A ball at rest at `center`.
    pub fn new(center: [f32; 3], radius: f32, mass: f32, friction: f32, restitution: f32) -> Self {
        let inertia = 0.4 * mass * radius * radius;
        BallState {
            center: [center[0], center[1], center[2], radius],
            vel: [0.0, 0.0, 0.0, 1.0 / mass],
            omega: [0.0, 0.0, 0.0, 1.0 / inertia],
            mass,
            friction,
            restitution,
            _pad: 0,
        }
    }

    pub fn radius(&self) -> f32 {
        self.center[3]
    }

    pub fn pos(&self) -> V3<f32> {
        V3::from4(self.center)
    }

    pub fn velocity(&self) -> V3<f32> {
        V3::from4(self.vel)
    }

    pub fn spin(&self) -> V3<f32> {
        V3::from4(self.omega)
    }

    fn inv_mass(&self, held: bool) -> f32 {
        if held {
            0.0
        } else {
            self.vel[3]
        }
    }

    fn inv_inertia(&self, held: bool) -> f32 {
        if held {
            0.0
        } else {
            self.omega[3]
        }
    }

    /// The centre at the end of the step, by the current velocity.
    fn predicted(&self, h: f32) -> V3<f32> {
        self.pos() + self.velocity() * h
    }

    /// Applies impulse `j` at `arm` from the centre.
    fn apply(&mut self, j: V3<f32>, arm: V3<f32>, held: bool) {
        let v = self.velocity() + j * self.inv_mass(held);
        let w = self.spin() + arm.cross(j) * self.inv_inertia(held);
        self.vel = v.to4(self.vel[3]);
        self.omega = w.to4(self.omega[3]);
    }

    /// Linear momentum `M v`.
    pub fn momentum(&self) -> V3<f64> {
        let v = self.velocity();
        V3::new(v.x as f64, v.y as f64, v.z as f64) * self.mass as f64
    }

    /// Angular momentum about the origin, `c × M v + I ω`.
    pub fn angular_momentum(&self) -> V3<f64> {
        let c = self.pos();
        let c = V3::new(c.x as f64, c.y as f64, c.z as f64);
        let w = self.spin();
        let inertia = 1.0 / self.omega[3] as f64;
        c.cross(self.momentum()) + V3::new(w.x as f64, w.y as f64, w.z as f64) * inertia
    }
}

/// The slowest approach that bounces: `4 |g| h` (and at least 1 cm/s), four steps' worth of
/// gravity, so the speed a resting ball gains in one step never makes it hop.
pub fn bounce_speed(h: f32, gravity: [f32; 3]) -> f32 {
    let g: f32 = V3::<f32>::from3(gravity).norm();
    (4.0 * g * h).max(1.0)
}

/// Stage `ball_velocity`: `v += h g` for every free ball (held: nothing).
pub fn ball_velocity(h: f32, gravity: [f32; 3], held: bool, balls: &mut [BallState]) {
    if held {
        return;
    }
    for b in balls {
        if b.vel[3] == 0.0 {
            continue;
        }
        for (v, g) in b.vel.iter_mut().zip(gravity) {
            *v += h * g;
        }
    }
}

/// Stage `ball_position`: `c += h v` for every free ball (held: nothing).
pub fn ball_position(h: f32, held: bool, balls: &mut [BallState]) {
    if held {
        return;
    }
    for b in balls {
        for k in 0..3 {
            b.center[k] += h * b.vel[k];
        }
    }
}

/// One yarn–ball contact of a step: the control point, the ball, and the impulse the ball receives
/// (filled in by the second pass).
#[derive(Clone, Copy, Debug, Default)]
pub struct BallHit {
    pub point: u32,
    pub ball: u32,
    pub impulse: [f32; 3],
    /// The point's position minus the ball's centre, where the impulse acts.
    pub arm: [f32; 3],
}

/// Scratch of [`ball_yarn_contact`], kept between steps (the hit list and per-ball counts; the
/// stage still collects its per-step lists afresh).
#[derive(Default)]
pub struct BallScratch {
    pub hits: Vec<BallHit>,
    /// Points touching each ball this step.
    pub count: Vec<u32>,
    new_vel: Vec<(u32, [f32; 4])>,
}

/// Stage `ball_yarn_contact`: two-way contact between the free control points and the balls.
///
/// 1. Every free point whose predicted position `q + h v` lies closer than `radius` (the yarn
///    radius) to the surface of a ball, at the ball's predicted centre, is a hit; `N_b` counts the
///    hits of ball `b`.
/// 2. For each hit point, its balls in order: the velocity `object_contact` would give it against a
///    sphere moving with the ball's surface (the approach removed, the slip reduced by the ball's
///    friction, the overlap pushed out), of which the point takes the share `w = M' / (m + M')`,
///    `M' = M_b / N_b` (1 for a held ball); the ball receives `−m Δv` at the point.
/// 3. Each ball sums its impulses in point order and applies them (linear and angular).
#[allow(clippy::too_many_arguments)]
pub fn ball_yarn_contact(
    h: f32,
    radius: f32,
    held: bool,
    mass: &[f32],
    inv_mass: &[f32],
    pos: &[[f32; 4]],
    vel: &mut [[f32; 4]],
    balls: &mut [BallState],
    scratch: &mut BallScratch,
) {
    scratch.hits.clear();
    scratch.new_vel.clear();
    scratch.count.clear();
    scratch.count.resize(balls.len(), 0);
    if balls.is_empty() {
        return;
    }
    let pred: Vec<V3<f32>> = balls.iter().map(|b| b.predicted(h)).collect();
    // Points outside the box of every ball's reach cannot touch one.
    let mut lo = V3::new(f32::MAX, f32::MAX, f32::MAX);
    let mut hi = V3::new(f32::MIN, f32::MIN, f32::MIN);
    for (b, c) in balls.iter().zip(&pred) {
        let reach = b.radius() + radius;
        lo = V3::new(
            lo.x.min(c.x - reach),
            lo.y.min(c.y - reach),
            lo.z.min(c.z - reach),
        );
        hi = V3::new(
            hi.x.max(c.x + reach),
            hi.y.max(c.y + reach),
            hi.z.max(c.z + reach),
        );
    }
    let vel_ro: &[[f32; 4]] = vel;
    let found: Vec<BallHit> = pos
        .par_iter()
        .zip(vel_ro.par_iter().zip(inv_mass.par_iter()))
        .enumerate()
        .with_min_len(1024)
        .flat_map_iter(|(p, (q4, (v4, &w)))| {
            let x = V3::<f32>::from4(*q4) + V3::<f32>::from4(*v4) * h;
            let inside = w != 0.0
                && x.x >= lo.x
                && x.y >= lo.y
                && x.z >= lo.z
                && x.x <= hi.x
                && x.y <= hi.y
                && x.z <= hi.z;
            let pred = &pred;
            balls
                .iter()
                .enumerate()
                .filter(move |(bi, b)| inside && (x - pred[*bi]).norm() - b.radius() < radius)
                .map(move |(bi, _)| BallHit {
                    point: p as u32,
                    ball: bi as u32,
                    ..Default::default()
                })
        })
        .collect();
    scratch.hits = found;
    if scratch.hits.is_empty() {
        return;
    }
    for hit in &scratch.hits {
        scratch.count[hit.ball as usize] += 1;
    }
    // The hits of one point are consecutive (point order, then ball order).
    let mut starts: Vec<usize> = Vec::new();
    for (k, hit) in scratch.hits.iter().enumerate() {
        if k == 0 || scratch.hits[k - 1].point != hit.point {
            starts.push(k);
        }
    }
    starts.push(scratch.hits.len());
    let count = &scratch.count;
    let balls_ro: &[BallState] = balls;
    // Per hit point: its new velocity, and per hit (impulse on the ball, arm).
    type PointResult = ((u32, [f32; 4]), Vec<([f32; 3], [f32; 3])>);
    let results: Vec<PointResult> = starts
        .par_windows(2)
        .map(|w| {
            let run = &scratch.hits[w[0]..w[1]];
            let p = run[0].point as usize;
            let q = V3::<f32>::from4(pos[p]);
            let m = mass[p];
            let mut v = V3::<f32>::from4(vel_ro[p]);
            let mut impulses = Vec::with_capacity(run.len());
            for hit in run {
                let b = &balls_ro[hit.ball as usize];
                let c = pred[hit.ball as usize];
                let big_r = b.radius();
                let before = v;
                let (d, n) = sphere_distance(c, big_r, q + v * h);
                let arm = n * big_r;
                let surface = b.velocity() + b.spin().cross(arm);
                let mut target = v;
                if d < radius {
                    target = contact_velocity(v, surface, n, b.friction);
                    let (d2, n2) = sphere_distance(c, big_r, q + target * h);
                    if d2 < radius {
                        target += n2 * ((radius - d2) / h);
                    }
                }
                let share = if held || b.vel[3] == 0.0 {
                    1.0
                } else {
                    let m_ball = b.mass / count[hit.ball as usize] as f32;
                    m_ball / (m + m_ball)
                };
                v = before + (target - before) * share;
                let j = (v - before) * (-m);
                let at = q - b.pos();
                impulses.push(([j.x, j.y, j.z], [at.x, at.y, at.z]));
            }
            ((p as u32, v.to4(vel_ro[p][3])), impulses)
        })
        .collect();
    let mut k = 0;
    for ((p, v), impulses) in results {
        vel[p as usize] = v;
        for (j, arm) in impulses {
            scratch.hits[k].impulse = j;
            scratch.hits[k].arm = arm;
            k += 1;
        }
    }
    if held {
        return;
    }
    // Per ball, in point order: the sums, then one application.
    let mut sum_j = vec![V3::<f32>::new(0.0, 0.0, 0.0); balls.len()];
    let mut sum_t = vec![V3::<f32>::new(0.0, 0.0, 0.0); balls.len()];
    for hit in &scratch.hits {
        let j = V3::from3(hit.impulse);
        sum_j[hit.ball as usize] += j;
        sum_t[hit.ball as usize] += V3::from3(hit.arm).cross(j);
    }
    for (b, (j, t)) in balls.iter_mut().zip(sum_j.iter().zip(&sum_t)) {
        if b.vel[3] == 0.0 {
            continue;
        }
        let v = b.velocity() + *j * b.vel[3];
        let w = b.spin() + *t * b.omega[3];
        b.vel = v.to4(b.vel[3]);
        b.omega = w.to4(b.omega[3]);
    }
}

/// Signed distance from `x` to the surface of the sphere (`c`, `r`) and the outward normal.
fn sphere_distance(c: V3<f32>, r: f32, x: V3<f32>) -> (f32, V3<f32>) {
    let d = x - c;
    let l = d.norm();
    let n = if l > 0.0 {
        d / l
    } else {
        V3::new(0.0, 1.0, 0.0)
    };
    (l - r, n)
}

/// The normal impulse (≥ 0) that gives a contact whose predicted gap is `gap` (< 0) and whose
/// normal relative velocity is `vn` the normal velocity it should leave with: a bounce `−e vn` when
/// the approach is faster than `bounce`, else none, and at least enough to close the gap by the
/// end of the step. `inv` is the sum of the two inverse masses.
fn normal_impulse(gap: f32, vn: f32, h: f32, e: f32, bounce: f32, inv: f32) -> f32 {
    let bounced = if vn < -bounce { -e * vn } else { 0.0 };
    let want = (vn - gap / h).max(bounced);
    ((want - vn) / inv).max(0.0)
}

/// Stage `ball_contact`: ball–obstacle and ball–ball contact by sequential impulses,
/// [`BALL_ITERATIONS`] sweeps over the obstacles (per ball, in order) and the ball pairs that can
/// touch this step (`i < j`, found once per step). Held balls: nothing.
pub fn ball_contact(
    h: f32,
    gravity: [f32; 3],
    held: bool,
    obstacles: &[ObstacleShape],
    balls: &mut [BallState],
) {
    if held || balls.is_empty() {
        return;
    }
    let bounce = bounce_speed(h, gravity);
    // Pairs that can touch by the end of the step, whatever the sweeps do to their velocities
    // (a sweep never speeds a ball past the fastest approach it resolves).
    let fastest = balls
        .iter()
        .map(|b| b.velocity().norm())
        .fold(0.0f32, f32::max);
    let mut pairs: Vec<(usize, usize)> = Vec::new();
    for i in 0..balls.len() {
        for j in i + 1..balls.len() {
            let (a, b) = (&balls[i], &balls[j]);
            let reach = a.radius() + b.radius() + 4.0 * h * fastest;
            if (a.pos() - b.pos()).norm() < reach {
                pairs.push((i, j));
            }
        }
    }
    for _ in 0..BALL_ITERATIONS {
        for b in balls.iter_mut() {
            if b.vel[3] == 0.0 {
                continue;
            }
            for o in obstacles {
                let (d, n) = obstacle_distance(o, b.predicted(h));
                let gap = d - b.radius();
                if gap >= 0.0 {
                    continue;
                }
                let ov = obstacle_velocity(o, b.predicted(h));
                let vn = (b.velocity() - ov).dot(n);
                let jn = normal_impulse(gap, vn, h, b.restitution, bounce, b.vel[3]);
                if jn <= 0.0 {
                    continue;
                }
                let arm = n * (-b.radius());
                b.apply(n * jn, arm, false);
                // Friction at the contact point, against the obstacle's surface velocity.
                let rel = b.velocity() + b.spin().cross(arm) - ov;
                let vt = rel - n * rel.dot(n);
                let vtn = vt.norm();
                if vtn > 0.0 {
                    let mu = (b.friction * o.friction).sqrt();
                    let k_t = b.vel[3] + b.radius() * b.radius() * b.omega[3];
                    let jt = (mu * jn).min(vtn / k_t);
                    b.apply(vt * (-jt / vtn), arm, false);
                }
            }
        }
        for &(i, j) in &pairs {
            let (lo, hi) = balls.split_at_mut(j);
            let (a, b) = (&mut lo[i], &mut hi[0]);
            if a.vel[3] == 0.0 && b.vel[3] == 0.0 {
                continue;
            }
            let (pa, pb) = (a.predicted(h), b.predicted(h));
            let d = pb - pa;
            let l = d.norm();
            let gap = l - a.radius() - b.radius();
            if gap >= 0.0 {
                continue;
            }
            let n = if l > 0.0 {
                d / l
            } else {
                V3::new(0.0, 1.0, 0.0)
            };
            let vn = (b.velocity() - a.velocity()).dot(n);
            let inv = a.vel[3] + b.vel[3];
            let e = a.restitution.max(b.restitution);
            let jn = normal_impulse(gap, vn, h, e, bounce, inv);
            if jn <= 0.0 {
                continue;
            }
            // Both impulses act at one point on the line of centres (angular momentum is kept).
            let s = a.radius() / (a.radius() + b.radius());
            let at = a.pos() + (b.pos() - a.pos()) * s;
            let (arm_a, arm_b) = (at - a.pos(), at - b.pos());
            a.apply(n * (-jn), arm_a, false);
            b.apply(n * jn, arm_b, false);
            let rel =
                (b.velocity() + b.spin().cross(arm_b)) - (a.velocity() + a.spin().cross(arm_a));
            let vt = rel - n * rel.dot(n);
            let vtn = vt.norm();
            if vtn > 0.0 {
                let mu = (a.friction * b.friction).sqrt();
                let k_t = inv
                    + arm_a.norm2() * a.omega[3] * (a.vel[3] != 0.0) as u32 as f32
                    + arm_b.norm2() * b.omega[3] * (b.vel[3] != 0.0) as u32 as f32;
                let jt = (mu * jn).min(vtn / k_t);
                let t = vt * (jt / vtn);
                a.apply(t, arm_a, false);
                b.apply(t * -1.0, arm_b, false);
            }
        }
    }
}

/// The balls as sphere obstacles at their current places (for drawing).
pub fn as_obstacles(balls: &[BallState]) -> Vec<crate::scene::Obstacle> {
    balls
        .iter()
        .map(|b| crate::scene::Obstacle::Sphere {
            center: [b.center[0], b.center[1], b.center[2]],
            radius: b.radius(),
            friction: b.friction,
            keyframes: Vec::new(),
        })
        .collect()
}
