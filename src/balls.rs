//! Free rigid balls (scene key `[[ball]]`; the seed's sack drops 90 of them): solid spheres with
//! mass, gravity, spin, contact with each other and with the obstacles, and two-way contact with the
//! yarn, integrated inside the yarn's time step. Each stage is a GPU kernel `shaders/NAME.wgsl` and
//! the CPU twin `NAME` here, which takes the kernel's buffers in the kernel's order.
//!
//! Buffers: `balls` ([`BallState`]: centre and radius, velocity and 1/mass, angular velocity and
//! 1/inertia, friction, restitution); the `params` uniform (`num_balls`, `balls_held`,
//! `ball_hit_capacity`, and h, gravity and the yarn radius); the yarn's `pos`,
//! `vel`, `mass`, `inv_mass`; the placed `obstacles`; per step `ball_count` (hits per ball),
//! `ball_hit_offsets` (hits per control point, scanned into offsets), `ball_hits` ([`BallHit`], the
//! step's yarn–ball contacts in point order) and `ball_pairs` (the ball pairs that can touch).
//!
//! # Where the stages sit in the step (seed Figure 4)
//!
//! `integrate_velocity` (yarn) → [`ball_velocity`] (gravity) → glue, ties, length, damping →
//! `object_contact` (yarn against the obstacles) → [`ball_hit_count`] → scan of
//! `ball_hit_offsets` → [`ball_yarn_contact`] → [`ball_impulse_sum`] → [`ball_contact`] →
//! `integrate_position` (yarn) → [`ball_position`]. [`yarn_ball_contacts`] runs the middle part on
//! the CPU path.
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
//!   cloth cannot be kicked back by all of its contacts at once. Each ball sums its impulses in a
//!   fixed order on both paths (hit `k` into lane `k mod 256`, in point order, then a pairwise
//!   tree over the lanes: [`ball_impulse_sum`]), so the result is deterministic and the GPU's is
//!   the CPU's up to the rounding of the terms.
//! - **Ball–ball and ball–obstacle** ([`ball_contact`]): sequential impulses over every touching
//!   pair (obstacles first, then pairs `i < j`), [`BALL_ITERATIONS`] sweeps. A normal impulse also
//!   makes a ball bounce: an approach faster than [`bounce_speed`] comes back at `e` times its
//!   speed (`e` the larger restitution of the two), a slower one does not, so a bouncing ball
//!   comes to rest in finite time. Friction is the geometric mean of the two friction
//!   coefficients; its impulse acts at the contact point, spinning the balls. On the GPU this is
//!   one thread (the sweeps are sequential by nature), whose loop count
//!   ([`ball_contact_iterations`]) the GPU step keeps within [`BALL_CONTACT_LOOP_LIMIT`].
//!
//! Linear momentum is conserved exactly by every yarn–ball and ball–ball impulse (each is applied
//! with opposite signs), angular momentum too (both impulses act at one point); tests check both.
//!
//! Not modelled: a ball's orientation (a uniform sphere looks the same), rolling resistance, and
//! contact with glued (pinned) control points, which `object_contact` skips as well: a ball passes
//! through a pinned point.

use crate::layout::{Counters, ObstacleShape, Params, ERROR_NAN_BALL};
use crate::math::V3;
use crate::step::{contact_velocity, obstacle_distance, obstacle_velocity};
use rayon::prelude::*;

/// Gauss–Seidel sweeps over the ball–ball and ball–obstacle contacts of a step: enough for a
/// pile a few balls deep to rest without sinking into itself (tests/balls.rs).
pub const BALL_ITERATIONS: usize = 8;

pub use crate::layout::{BallHit, BallState};

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

fn gravity_of(params: &Params) -> V3<f32> {
    V3::new(params.gravity_x, params.gravity_y, params.gravity_z)
}

/// Stage `ball_velocity`: `v += h g` for every free ball (held: nothing), and the step's hit
/// counts `ball_count` zeroed.
pub fn ball_velocity(params: &Params, balls: &mut [BallState], ball_count: &mut [u32]) {
    let nb = params.num_balls as usize;
    ball_count[..nb].fill(0);
    if params.balls_held != 0 {
        return;
    }
    let g = gravity_of(params);
    for b in &mut balls[..nb] {
        if b.vel[3] == 0.0 {
            continue;
        }
        b.vel[0] += params.h * g.x;
        b.vel[1] += params.h * g.y;
        b.vel[2] += params.h * g.z;
    }
}

/// Stage `ball_position`: `c += h v` for every free ball (held: nothing).
pub fn ball_position(params: &Params, balls: &mut [BallState]) {
    if params.balls_held != 0 {
        return;
    }
    for b in &mut balls[..params.num_balls as usize] {
        for k in 0..3 {
            b.center[k] += params.h * b.vel[k];
        }
    }
}

/// Whether a control point whose predicted position is `x` touches the ball `b` (predicted centre
/// `c`): it lies closer than the yarn radius `r` to the ball's surface.
#[inline]
fn touches(x: V3<f32>, c: V3<f32>, b: &BallState, r: f32) -> bool {
    (x - c).norm() - b.radius() < r
}

/// The box holding every predicted point that can touch a ball, widened by a thousandth of each
/// ball's reach so that rounding cannot leave a touching point out (the CPU path's filter only; it
/// changes no result).
fn reach_box(h: f32, r: f32, balls: &[BallState]) -> (V3<f32>, V3<f32>) {
    let mut lo = V3::new(f32::MAX, f32::MAX, f32::MAX);
    let mut hi = V3::new(f32::MIN, f32::MIN, f32::MIN);
    for b in balls {
        let c = b.predicted(h);
        let reach = (b.radius() + r) * 1.001 + 1e-3;
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
    (lo, hi)
}

fn inside(x: V3<f32>, (lo, hi): (V3<f32>, V3<f32>)) -> bool {
    x.x >= lo.x && x.y >= lo.y && x.z >= lo.z && x.x <= hi.x && x.y <= hi.y && x.z <= hi.z
}

/// Stage `ball_hit_count`: for every free control point `p` whose predicted position `q + h v` lies
/// closer than the yarn radius to a ball's surface (at the ball's predicted centre), the number of
/// such balls into `ball_hit_offsets[p]` and one count into `ball_count` per ball; 0 for the other
/// points and for `ball_hit_offsets[num_points]` (the scan that follows puts the total there).
#[allow(clippy::too_many_arguments)]
pub fn ball_hit_count(
    params: &Params,
    balls: &[BallState],
    inv_mass: &[f32],
    pos: &[[f32; 4]],
    vel: &[[f32; 4]],
    ball_count: &mut [u32],
    ball_hit_offsets: &mut [u32],
) {
    let n = params.num_points as usize;
    let (h, r) = (params.h, params.radius);
    let balls = &balls[..params.num_balls as usize];
    let reach = reach_box(h, r, balls);
    ball_hit_offsets[..n]
        .par_iter_mut()
        .enumerate()
        .with_min_len(1024)
        .for_each(|(p, out)| {
            let x = V3::<f32>::from4(pos[p]) + V3::<f32>::from4(vel[p]) * h;
            *out = if inv_mass[p] == 0.0 || !inside(x, reach) {
                0
            } else {
                balls
                    .iter()
                    .filter(|b| touches(x, b.predicted(h), b, r))
                    .count() as u32
            };
        });
    ball_hit_offsets[n] = 0;
    // The per-ball counts (the kernel's atomic adds; integer sums, so any order gives them).
    for p in 0..n {
        if ball_hit_offsets[p] == 0 {
            continue;
        }
        let x = V3::<f32>::from4(pos[p]) + V3::<f32>::from4(vel[p]) * h;
        for (bi, b) in balls.iter().enumerate() {
            if touches(x, b.predicted(h), b, r) {
                ball_count[bi] += 1;
            }
        }
    }
}

/// Stage `ball_yarn_contact`: for each control point with hits (`ball_hit_offsets`, scanned), its
/// touching balls in order: the velocity `object_contact` would give it against a sphere moving
/// with the ball's surface (`v + ω × arm`: the approach removed, the slip reduced by the ball's
/// friction, the overlap pushed out), of which the point takes the share `w = M' / (m + M')`,
/// `M' = M_b / N_b` (`N_b = ball_count[b]`; 1 for a held or fixed ball); the ball's impulse
/// `−m Δv` and its arm go into `ball_hits` at the point's offset (records past
/// `params.ball_hit_capacity` are not written; `ball_impulse_sum` reports the overflow).
#[allow(clippy::too_many_arguments)]
pub fn ball_yarn_contact(
    params: &Params,
    balls: &[BallState],
    ball_count: &[u32],
    mass: &[f32],
    inv_mass: &[f32],
    pos: &[[f32; 4]],
    vel: &mut [[f32; 4]],
    ball_hit_offsets: &[u32],
    ball_hits: &mut [BallHit],
) {
    let n = params.num_points as usize;
    let (h, radius) = (params.h, params.radius);
    let held = params.balls_held != 0;
    let cap = (params.ball_hit_capacity as usize).min(ball_hits.len());
    let balls = &balls[..params.num_balls as usize];
    for p in 0..n {
        let (start, end) = (
            ball_hit_offsets[p] as usize,
            ball_hit_offsets[p + 1] as usize,
        );
        if start == end || inv_mass[p] == 0.0 {
            continue;
        }
        let q = V3::<f32>::from4(pos[p]);
        let m = mass[p];
        let v0 = V3::<f32>::from4(vel[p]);
        let x0 = q + v0 * h;
        let mut v = v0;
        let mut k = start;
        for (bi, b) in balls.iter().enumerate() {
            let c = b.predicted(h);
            if !touches(x0, c, b, radius) {
                continue;
            }
            let big_r = b.radius();
            let before = v;
            let (d, nrm) = sphere_distance(c, big_r, q + v * h);
            let arm = nrm * big_r;
            let surface = b.velocity() + b.spin().cross(arm);
            let mut target = v;
            if d < radius {
                target = contact_velocity(v, surface, nrm, b.friction);
                let (d2, n2) = sphere_distance(c, big_r, q + target * h);
                if d2 < radius {
                    target += n2 * ((radius - d2) / h);
                }
            }
            let share = if held || b.vel[3] == 0.0 {
                1.0
            } else {
                let m_ball = b.mass / ball_count[bi] as f32;
                m_ball / (m + m_ball)
            };
            v = before + (target - before) * share;
            let j = (v - before) * (-m);
            let at = q - b.pos();
            if k < cap {
                ball_hits[k] = BallHit {
                    point: p as u32,
                    ball: bi as u32,
                    impulse: [j.x, j.y, j.z],
                    arm: [at.x, at.y, at.z],
                };
            }
            k += 1;
        }
        vel[p] = v.to4(vel[p][3]);
    }
}

/// Lanes of `ball_impulse_sum` (its workgroup size): each ball's impulses are summed hit `k` into
/// lane `k mod 256`, then pairwise over the lanes.
pub const IMPULSE_LANES: usize = 256;

/// Stage `ball_impulse_sum` (a workgroup per ball): the step's hit count into `counters.ball_hits`
/// (its capacity `params.ball_hit_capacity`, overflow when more were wanted); then, unless held,
/// each free ball sums the impulses `J` and torques `arm × J` of its hits in `ball_hits` (the first
/// `min(count, capacity)`) in the fixed order of [`IMPULSE_LANES`] and applies them: `v += J / M`,
/// `ω += T / I`. `lanes` is the CPU path's scratch for the lane sums (resized).
pub fn ball_impulse_sum(
    params: &Params,
    ball_hit_offsets: &[u32],
    ball_hits: &[BallHit],
    balls: &mut [BallState],
    counters: &mut Counters,
    lanes: &mut Vec<[f32; 6]>,
) {
    let total = ball_hit_offsets[params.num_points as usize];
    let cap = params.ball_hit_capacity;
    counters.ball_hits.count = total;
    counters.ball_hits.capacity = cap;
    counters.ball_hits.overflow = (total > cap) as u32;
    if params.balls_held != 0 {
        return;
    }
    let nb = params.num_balls as usize;
    lanes.clear();
    lanes.resize(nb * IMPULSE_LANES, [0.0; 6]);
    let used = (total.min(cap) as usize).min(ball_hits.len());
    for (k, hit) in ball_hits[..used].iter().enumerate() {
        let j = V3::<f32>::from3(hit.impulse);
        let t = V3::from3(hit.arm).cross(j);
        let lane = &mut lanes[hit.ball as usize * IMPULSE_LANES + k % IMPULSE_LANES];
        for (s, x) in lane.iter_mut().zip([j.x, j.y, j.z, t.x, t.y, t.z]) {
            *s += x;
        }
    }
    for (bi, b) in balls[..nb].iter_mut().enumerate() {
        if b.vel[3] == 0.0 {
            continue;
        }
        let l = &mut lanes[bi * IMPULSE_LANES..(bi + 1) * IMPULSE_LANES];
        let mut s = IMPULSE_LANES / 2;
        while s > 0 {
            for t in 0..s {
                let add = l[t + s];
                for (a, x) in l[t].iter_mut().zip(add) {
                    *a += x;
                }
            }
            s /= 2;
        }
        let [jx, jy, jz, tx, ty, tz] = l[0];
        let v = b.velocity() + V3::new(jx, jy, jz) * b.vel[3];
        let w = b.spin() + V3::new(tx, ty, tz) * b.omega[3];
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

/// Loop iterations of `ball_contact`'s one GPU thread at most, with `nb` balls and `no`
/// obstacles, every loop's iterations counted: the fastest ball, the pair search (outer and inner
/// loops), [`BALL_ITERATIONS`] sweeps each over the balls, their obstacles and every pair, and the
/// finiteness check.
pub fn ball_contact_iterations(nb: u64, no: u64) -> u64 {
    let pairs = nb * nb.saturating_sub(1) / 2;
    nb + (nb + pairs) + BALL_ITERATIONS as u64 * (1 + nb + nb * no + pairs) + nb
}

/// The most loop iterations the GPU step lets `ball_contact`'s thread make: lavapipe ends an
/// invocation silently after 65,535 (DESIGN §7). 90 balls with up to 30 obstacles fit.
pub const BALL_CONTACT_LOOP_LIMIT: u64 = 60_000;

/// Stage `ball_contact` (one thread): ball–obstacle and ball–ball contact by sequential impulses,
/// [`BALL_ITERATIONS`] sweeps over the obstacles (per ball, in order) and the ball pairs that can
/// touch this step (`i < j`, found once per step into `ball_pairs` as `i | j << 16`). Held balls:
/// no impulse. Then a ball whose velocity or spin is not finite raises `ERROR_NAN_BALL`, the lowest
/// such in `counters.first_bad_ball`.
pub fn ball_contact(
    params: &Params,
    obstacles: &[ObstacleShape],
    balls: &mut [BallState],
    ball_pairs: &mut [u32],
    counters: &mut Counters,
) {
    let nb = params.num_balls as usize;
    let balls = &mut balls[..nb];
    if params.balls_held == 0 && nb > 0 {
        sweeps(params, obstacles, balls, ball_pairs);
    }
    if let Some(bad) = balls
        .iter()
        .position(|b| !(b.vel.iter().chain(&b.omega).all(|x| x.is_finite())))
    {
        counters.errors |= ERROR_NAN_BALL;
        counters.first_bad_ball = counters.first_bad_ball.min(bad as u32);
    }
}

fn sweeps(
    params: &Params,
    obstacles: &[ObstacleShape],
    balls: &mut [BallState],
    ball_pairs: &mut [u32],
) {
    let h = params.h;
    let bounce = bounce_speed(h, [params.gravity_x, params.gravity_y, params.gravity_z]);
    let obstacles = &obstacles[..params.num_obstacles as usize];
    // Pairs that can touch by the end of the step, whatever the sweeps do to their velocities
    // (a sweep never speeds a ball past the fastest approach it resolves).
    let fastest = balls
        .iter()
        .map(|b| b.velocity().norm())
        .fold(0.0f32, f32::max);
    let mut np = 0;
    for i in 0..balls.len() {
        for j in i + 1..balls.len() {
            let (a, b) = (&balls[i], &balls[j]);
            let reach = a.radius() + b.radius() + 4.0 * h * fastest;
            if (a.pos() - b.pos()).norm() < reach {
                ball_pairs[np] = i as u32 | (j as u32) << 16;
                np += 1;
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
        for &pair in &ball_pairs[..np] {
            let (i, j) = ((pair & 0xffff) as usize, (pair >> 16) as usize);
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

/// The CPU path's per-step scratch of the balls' stages (kept between steps so that a warmed-up
/// step allocates nothing).
#[derive(Default)]
pub struct BallScratch {
    /// `ball_count`, `ball_hit_offsets`, `ball_hits`, `ball_pairs` and `ball_impulse_sum`'s lanes.
    pub count: Vec<u32>,
    pub offsets: Vec<u32>,
    pub hits: Vec<BallHit>,
    pub pairs: Vec<u32>,
    lanes: Vec<[f32; 6]>,
    partials: Vec<u32>,
}

impl BallScratch {
    /// The step's yarn–ball contacts (after [`yarn_ball_contacts`]).
    pub fn hits(&self) -> &[BallHit] {
        &self.hits
    }
}

/// The CPU path of the balls' contact stages after `object_contact`: [`ball_hit_count`], the
/// scan of the offsets, [`ball_yarn_contact`] (with room for every hit), [`ball_impulse_sum`] and
/// [`ball_contact`]. `ball_count` must come from this step's [`ball_velocity`]
/// (`scratch.count`).
#[allow(clippy::too_many_arguments)]
pub fn yarn_ball_contacts(
    params: &Params,
    obstacles: &[ObstacleShape],
    mass: &[f32],
    inv_mass: &[f32],
    pos: &[[f32; 4]],
    vel: &mut [[f32; 4]],
    balls: &mut [BallState],
    scratch: &mut BallScratch,
    counters: &mut Counters,
) {
    let n = params.num_points as usize;
    let nb = params.num_balls as usize;
    crate::scan::resize_with_headroom(&mut scratch.offsets, n + 1, 0);
    crate::scan::resize_with_headroom(
        &mut scratch.pairs,
        (nb * nb.saturating_sub(1) / 2).max(1),
        0,
    );
    ball_hit_count(
        params,
        balls,
        inv_mass,
        pos,
        vel,
        &mut scratch.count,
        &mut scratch.offsets,
    );
    crate::scan::exclusive_scan(&mut scratch.offsets, &mut scratch.partials);
    let total = scratch.offsets[n];
    crate::scan::resize_with_headroom(&mut scratch.hits, total as usize, BallHit::default());
    let p = Params {
        ball_hit_capacity: total,
        ..*params
    };
    ball_yarn_contact(
        &p,
        balls,
        &scratch.count,
        mass,
        inv_mass,
        pos,
        vel,
        &scratch.offsets,
        &mut scratch.hits,
    );
    ball_impulse_sum(
        &p,
        &scratch.offsets,
        &scratch.hits,
        balls,
        counters,
        &mut scratch.lanes,
    );
    ball_contact(&p, obstacles, balls, &mut scratch.pairs, counters);
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
