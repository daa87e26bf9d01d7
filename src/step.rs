//! The velocity and position stages of the time step (seed Figure 4, DESIGN §6), CPU twins of the WGSL
//! kernels of the same names. Forces come from [`crate::rod::rod_forces`] (gravity included) and the
//! contact model; the order inside one step is
//!
//! `integrate_velocity → glue_projection → length_projection → nonrigid_damping → object_contact →
//! integrate_position → material_frames → plasticity`.
//!
//! The GPU step fuses stages where nothing runs between them in a scene: without glued points or
//! ties, `integrate_velocity` and the length stage's `length_setup` are one dispatch,
//! [`integrate_velocity_setup`]; without free balls, `object_contact` and `integrate_position` are
//! one, [`object_contact_integrate`], and with the damping before them one more,
//! [`nonrigid_damping_integrate`] (while its loop bound allows). Their twins call the stages in
//! turn.
//!
//! Buffers: control points `pos` and velocities `vel` (`[f32; 4]`, xyz, w unused), per-point `mass` and
//! `inv_mass` (0 for glued points, which the constraint solves treat as immovable), the polyline
//! [`Edge`](crate::state::Edge)s with their rest lengths, damping blocks as
//! `block_start`/`block_points` (points of block
//! `b` are `block_points[block_start[b]..block_start[b+1]]`; one step damps the blocks of one phase,
//! a run of `block_start`), and the placed obstacles [`ObstacleShape`].
//!
//! Non-rigid damping phases: the seed applies "only one phase of nonrigid damping on each timestep,
//! over blocks of 4 × 4 knit loops" (§3.3). We read it as alternating block partitions: scenes build
//! phase A (blocks aligned with a piece's first loop; grid cells for BCC pieces) and phase B (shifted
//! by half a block), and step `s` damps phase `s mod 2`. Damping removes only motion that is non-rigid within
//! a block, so with one fixed partition the blocks' rigid motions relative to each other are never
//! damped: deformation gathers at the seams and rings there. The shifted phase puts every seam inside
//! a block every other step. Motion that is close to rigid on the scale of a block in both phases —
//! the whole cloth's rigid motion, and slow deformation whose wavelength is many blocks — is damped
//! little or not at all, by design (falling or swinging cloth is not slowed down).
//!
//! Constraints are solved by Fast Projection (Goldenthal et al. 2007) on *positions predicted by the
//! velocities*, `x = q + h v`, and turned back into velocities, as Figure 4 writes
//! `q̇_length = satisfy_length_constr(q(t) + h q̇_glue)`. The glue constraints `x_p = target_p` have the
//! identity as gradient, so their system is diagonal and one iteration is exact. The length
//! constraints `C_e = |x_b − x_a| − ℓ_e` give per yarn a tridiagonal system (cyclic for a closed yarn),
//! iterated until every relative length error is below the tolerance: stage `length_projection` lives
//! in [`crate::length`] (a partitioned parallel solver shared with the GPU path); its report and
//! scratch types are re-exported here.

pub use crate::layout::ObstacleShape;
use crate::layout::{Counters, Params, ERROR_NAN_FORCE};
pub use crate::length::{LengthFailure, LengthReport, LengthScratch};
use crate::math::{Real, V3};
use rayon::prelude::*;

/// Stage `integrate_velocity`: `v += h M⁻¹ f` (glued points have `inv_mass = 0` and stay put), then
/// with air drag `v *= 1/(1 + h c)` (`params.air_factor`: the implicit step of `v̇ = −c v`). A
/// non-finite force raises [`ERROR_NAN_FORCE`] and lowers `first_bad_point` to its point, as the
/// kernel's atomics do.
pub fn integrate_velocity(
    params: &Params,
    inv_mass: &[f32],
    force: &[[f32; 4]],
    vel: &mut [[f32; 4]],
    counters: &mut Counters,
) {
    let h = params.h;
    let n = params.num_points as usize;
    let air = params.air_factor;
    vel[..n]
        .par_iter_mut()
        .with_min_len(2048)
        .zip(inv_mass.par_iter().zip(force.par_iter()))
        .for_each(|(v, (&w, f))| {
            for a in 0..3 {
                v[a] += h * w * f[a];
            }
            if air != 1.0 {
                for c in &mut v[..3] {
                    *c *= air;
                }
            }
        });
    let bad = force[..n]
        .par_iter()
        .with_min_len(4096)
        .position_first(|f| !(f[0].is_finite() && f[1].is_finite() && f[2].is_finite()));
    if let Some(p) = bad {
        counters.errors |= ERROR_NAN_FORCE;
        counters.first_bad_point = counters.first_bad_point.min(p as u32);
    }
}

/// Stage `glue_projection`: Fast Projection of the glue constraints `q_p + h v_p = target_p`. The
/// constraint gradient is the identity, so the solve is diagonal and exact: `v_p = (target_p − q_p)/h`.
pub fn glue_projection(
    params: &Params,
    glue_points: &[u32],
    glue_target: &[[f32; 4]],
    pos: &[[f32; 4]],
    vel: &mut [[f32; 4]],
) {
    let h = params.h;
    let n = params.num_glue as usize;
    for (&p, t) in glue_points[..n].iter().zip(glue_target) {
        let p = p as usize;
        for a in 0..3 {
            vel[p][a] = (t[a] - pos[p][a]) / h;
        }
    }
}

/// Threads per workgroup of the `nonrigid_damping` kernel (one workgroup per block).
pub const DAMPING_WG: u32 = 64;

/// The most control points a damping block may have on the GPU path: each thread of the block's
/// workgroup loops over `⌈k / DAMPING_WG⌉` points four times (plus 72 reduction and solve iterations),
/// and lavapipe ends an invocation after 65,535 loop iterations in total, so this keeps a thread
/// under 16,456 of them.
pub const DAMPING_MAX_BLOCK_POINTS: u32 = DAMPING_WG * 4096;

/// Why a block list cannot be damped by the `nonrigid_damping` kernel.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum DampingBlockError {
    #[error(
        "damping block {block} has {points} control points, more than the {max} the GPU damping \
         kernel takes per block; use smaller damping blocks (yarn.damping_block_loops), or give \
         damping blocks to a cloth whose yarns would each be one block"
    )]
    TooLarge { block: usize, points: u32, max: u32 },
    #[error("damping block {block} ends before it starts (block_start is not non-decreasing)")]
    Unordered { block: usize },
}

/// Checks, at setup, that every block of `block_start` fits the `nonrigid_damping` kernel's loop
/// bound ([`DAMPING_MAX_BLOCK_POINTS`]); the GPU path must call it before its first step.
pub fn check_damping_blocks(block_start: &[u32]) -> Result<(), DampingBlockError> {
    for (block, w) in block_start.windows(2).enumerate() {
        let points = w[1]
            .checked_sub(w[0])
            .ok_or(DampingBlockError::Unordered { block })?;
        if points > DAMPING_MAX_BLOCK_POINTS {
            return Err(DampingBlockError::TooLarge {
                block,
                points,
                max: DAMPING_MAX_BLOCK_POINTS,
            });
        }
    }
    Ok(())
}

const DWG: usize = DAMPING_WG as usize;

/// Partials per group of the second reduction level (the kernel's `reduce`).
const DAMPING_GROUP: usize = 8;
const _: () = assert!(DAMPING_GROUP * DAMPING_GROUP == DWG);

/// A sum over a block's `k` points in the kernel's order: thread `t` of the workgroup sums points
/// `t, t + DWG, t + 2 DWG, …` (indices into the block) into its partial, in increasing order, with
/// `add(i, partial)`; then each group of 8 partials `8g .. 8g + 7` is summed in order, then the 8
/// group sums in order. Every addition is the kernel's, so the total is the kernel's up to fused
/// multiply-adds.
fn workgroup_sum<const N: usize>(k: usize, mut add: impl FnMut(usize, &mut [f32; N])) -> [f32; N] {
    let mut part = [[0.0f32; N]; DWG];
    for (t, acc) in part.iter_mut().enumerate() {
        let mut i = t;
        while i < k {
            add(i, acc);
            i += DWG;
        }
    }
    std::array::from_fn(|c| {
        let group = |g: usize| {
            let p = &part[g * DAMPING_GROUP..(g + 1) * DAMPING_GROUP];
            p[1..].iter().fold(p[0][c], |s, x| s + x[c])
        };
        (1..DAMPING_GROUP).fold(group(0), |s, g| s + group(g))
    })
}

/// Stage `nonrigid_damping` (seed §3.3): per block of `k` points, with `v_nr` the velocity minus the
/// block's rigid motion (mass-weighted linear and angular velocity about its centre of mass at `pos`),
/// apply `Δv = −v_nr · min(1, max(h μ_prop, h μ_const √k / ‖v_nr‖))`. Glued points (`inv_mass = 0`) take
/// part in the rigid fit but are not changed; blocks of fewer than 2 points are left alone.
///
/// The blocks are those of this step's damping phase, `params.first_block ..
/// params.first_block + params.num_blocks` of `block_start` (whose entries index `block_points`
/// directly). The blocks of one phase are disjoint, so they are damped in any order (the kernel: one
/// workgroup each) with the same result. Every sum over a block is taken in the kernel's order
/// (`workgroup_sum`), so this twin and the kernel agree bit for bit where the GPU does not fuse
/// multiply-adds.
pub fn nonrigid_damping(
    params: &Params,
    block_start: &[u32],
    block_points: &[u32],
    mass: &[f32],
    inv_mass: &[f32],
    pos: &[[f32; 4]],
    vel: &mut [[f32; 4]],
) {
    let h = params.h;
    let first = params.first_block as usize;
    for b in first..first + params.num_blocks as usize {
        let (s, e) = (block_start[b] as usize, block_start[b + 1] as usize);
        if e < s + 2 {
            continue;
        }
        let pts = &block_points[s..e];
        let k = pts.len();
        let (c, vcm, omega) = rigid_motion(pts, mass, pos, vel);
        let vnr = |p: usize, v: V3<f32>| v - vcm - omega.cross(V3::<f32>::from4(pos[p]) - c);
        let [nr2] = workgroup_sum(k, |i, acc: &mut [f32; 1]| {
            let p = pts[i] as usize;
            acc[0] += vnr(p, V3::from4(vel[p])).norm2();
        });
        if nr2 <= 0.0 {
            continue;
        }
        let nr = nr2.sqrt();
        let f = (h * params.damping_prop)
            .max(h * params.damping_const * (k as f32).sqrt() / nr)
            .min(1.0);
        for &p in pts {
            let p = p as usize;
            if inv_mass[p] == 0.0 {
                continue;
            }
            let v = V3::<f32>::from4(vel[p]);
            vel[p] = (v - vnr(p, v) * f).to4(0.0);
        }
    }
}

/// Centre of mass, linear velocity and angular velocity of the best rigid fit to a block's motion
/// (at least one point), summed in the kernel's order ([`workgroup_sum`]).
///
/// The spin solves `I ω = L` through the inertia regularised by 1e-5 of its trace (`A = I + ε`),
/// so that a nearly straight block (no inertia about its axis, and no angular momentum about it
/// either) gives a bounded spin, refined twice (`ω ← A⁻¹ (L + ε ω)`, whose fixed point is
/// `I ω = L`): along a principal axis of inertia λ each refinement multiplies the error by
/// `ε / (λ + ε)`, so a well-shaped block's rigid spin is fitted to `(ε/λ)³` (below f32's
/// precision) and an axis without inertia gets at most three times the regularised spin. Why:
/// unrefined, the fit kept `1 − ε/λ` of the spin, and damping then took the rest away from a
/// rigidly spinning cloth, 1e-5 to 3e-5 of its angular momentum at every step, a loss per step,
/// not per second (measured 2026-12-08: 0.33/s at the default step, twice that at half of it).
fn rigid_motion(
    pts: &[u32],
    mass: &[f32],
    pos: &[[f32; 4]],
    vel: &[[f32; 4]],
) -> (V3<f32>, V3<f32>, V3<f32>) {
    let k = pts.len();
    // Relative to the first point to keep f32 precision.
    let o = V3::<f32>::from4(pos[pts[0] as usize]);
    let [m, mxx, mxy, mxz, mvx, mvy, mvz] = workgroup_sum(k, |i, acc: &mut [f32; 7]| {
        let p = pts[i] as usize;
        let w = mass[p];
        let d = V3::<f32>::from4(pos[p]) - o;
        let v = V3::<f32>::from4(vel[p]);
        acc[0] += w;
        acc[1] += d.x * w;
        acc[2] += d.y * w;
        acc[3] += d.z * w;
        acc[4] += v.x * w;
        acc[5] += v.y * w;
        acc[6] += v.z * w;
    });
    if m <= 0.0 {
        return (o, V3::zero(), V3::zero());
    }
    let c = o + V3::new(mxx, mxy, mxz) / m;
    let vcm = V3::new(mvx, mvy, mvz) / m;
    let [lx, ly, lz, ixx, iyy, izz, ixy, ixz, iyz] = workgroup_sum(k, |i, acc: &mut [f32; 9]| {
        let p = pts[i] as usize;
        let r = V3::<f32>::from4(pos[p]) - c;
        let w = mass[p];
        let l = r.cross(V3::<f32>::from4(vel[p]) - vcm) * w;
        acc[0] += l.x;
        acc[1] += l.y;
        acc[2] += l.z;
        acc[3] += w * (r.y * r.y + r.z * r.z);
        acc[4] += w * (r.x * r.x + r.z * r.z);
        acc[5] += w * (r.x * r.x + r.y * r.y);
        acc[6] -= w * r.x * r.y;
        acc[7] -= w * r.x * r.z;
        acc[8] -= w * r.y * r.z;
    });
    let l = V3::new(lx, ly, lz);
    let reg = 1e-5 * (ixx + iyy + izz);
    let (a, b, cc, d, e, f) = (ixx + reg, iyy + reg, izz + reg, ixy, ixz, iyz);
    // Symmetric 3×3 inverse by cofactors: [[a d e] [d b f] [e f cc]].
    let c00 = b * cc - f * f;
    let c01 = e * f - d * cc;
    let c02 = d * f - b * e;
    let c11 = a * cc - e * e;
    let c12 = d * e - a * f;
    let c22 = a * b - d * d;
    let det = a * c00 + d * c01 + e * c02;
    if det.is_nan() || det <= 0.0 {
        return (c, vcm, V3::zero());
    }
    let solve = |l: V3<f32>| {
        V3::new(
            c00 * l.x + c01 * l.y + c02 * l.z,
            c01 * l.x + c11 * l.y + c12 * l.z,
            c02 * l.x + c12 * l.y + c22 * l.z,
        ) / det
    };
    let mut omega = solve(l);
    for _ in 0..crate::layout::RIGID_REFINEMENTS {
        omega = solve(l + omega * reg);
    }
    (c, vcm, omega)
}

pub const OBSTACLE_PLANE: u32 = 0;
pub const OBSTACLE_SPHERE: u32 = 1;
pub const OBSTACLE_CAPSULE: u32 = 2;

/// Signed distance from `x` to the obstacle's surface and the outward unit normal there.
pub fn obstacle_distance<T: Real>(o: &ObstacleShape, x: V3<T>) -> (T, V3<T>) {
    let a = V3::<T>::from4(o.a);
    let radius = T::from_f64(o.radius as f64);
    match o.kind {
        OBSTACLE_PLANE => {
            let n = V3::<T>::from4(o.b);
            ((x - a).dot(n), n)
        }
        OBSTACLE_SPHERE => {
            let d = x - a;
            let l = d.norm();
            (l - radius, outward(d, l))
        }
        _ => {
            let b = V3::<T>::from4(o.b);
            let ab = b - a;
            let len2 = ab.norm2();
            let s = if len2 > T::zero() {
                ((x - a).dot(ab) / len2).max(T::zero()).min(T::one())
            } else {
                T::zero()
            };
            let d = x - (a + ab * s);
            let l = d.norm();
            (l - radius, outward(d, l))
        }
    }
}

/// The velocity of the obstacle's surface next to `x` over this step: `vel` for a plane or a
/// sphere; for a capsule the velocity of its axis point closest to `x`, `vel + s (vel_b − vel)`
/// (the ends may move apart from each other, as a swinging limb's do; the surface's spin about the
/// axis is not modelled).
pub fn obstacle_velocity(o: &ObstacleShape, x: V3<f32>) -> V3<f32> {
    let va = V3::<f32>::from4(o.vel);
    if o.kind != OBSTACLE_CAPSULE {
        return va;
    }
    let a = V3::<f32>::from4(o.a);
    let ab = V3::<f32>::from4(o.b) - a;
    let len2 = ab.norm2();
    let s = if len2 > 0.0 {
        ((x - a).dot(ab) / len2).clamp(0.0, 1.0)
    } else {
        0.0
    };
    va + (V3::<f32>::from4(o.vel_b) - va) * s
}

/// Unit `d / l`, or +y when the point sits exactly on the centre (any direction is as good).
#[inline]
fn outward<T: Real>(d: V3<T>, l: T) -> V3<T> {
    if l > T::zero() {
        d / l
    } else {
        V3::new(T::zero(), T::one(), T::zero())
    }
}

/// Stage `object_contact`: for each free point (`inv_mass ≠ 0`) of the first `params.num_points`
/// whose predicted position `q + h v` lies closer than the yarn radius `params.radius` to one of the
/// first `params.num_obstacles` obstacles (in order), remove the inward normal relative velocity,
/// reduce the tangential relative velocity by `friction ×` the removed normal speed (Coulomb-like,
/// never reversing it), then add the normal velocity that puts the predicted position at distance
/// `r`. Each point is on its own, as in the kernel (one thread per point).
pub fn object_contact(
    params: &Params,
    obstacles: &[ObstacleShape],
    inv_mass: &[f32],
    pos: &[[f32; 4]],
    vel: &mut [[f32; 4]],
) {
    let obstacles = &obstacles[..params.num_obstacles as usize];
    if obstacles.is_empty() {
        return;
    }
    let (h, radius) = (params.h, params.radius);
    vel[..params.num_points as usize]
        .par_iter_mut()
        .with_min_len(1024)
        .zip(pos.par_iter().zip(inv_mass.par_iter()))
        .for_each(|(v4, (q4, &w))| {
            if w == 0.0 {
                return;
            }
            let q = V3::<f32>::from4(*q4);
            let mut v = V3::<f32>::from4(*v4);
            for o in obstacles {
                let (d, n) = obstacle_distance(o, q + v * h);
                if d >= radius {
                    continue;
                }
                v = contact_velocity(v, obstacle_velocity(o, q + v * h), n, o.friction);
                let (d2, n2) = obstacle_distance(o, q + v * h);
                if d2 < radius {
                    v += n2 * ((radius - d2) / h);
                }
            }
            *v4 = v.to4(0.0);
        });
}

/// The velocity a point moving at `v` keeps against a surface moving at `vo` with outward normal
/// `n` (the rule of [`object_contact`], also used for the balls): an approaching normal relative
/// velocity is removed, and the tangential one is reduced by `friction ×` the removed normal speed
/// (never reversed); a receding point keeps `v`.
#[inline]
pub fn contact_velocity(v: V3<f32>, vo: V3<f32>, n: V3<f32>, friction: f32) -> V3<f32> {
    let rel = v - vo;
    let vn = rel.dot(n);
    if vn >= 0.0 {
        return v;
    }
    let vt = rel - n * vn;
    let vtn = vt.norm();
    let keep = if vtn > 0.0 {
        (1.0 - friction * (-vn) / vtn).max(0.0)
    } else {
        0.0
    };
    vo + vt * keep
}

/// Stage `integrate_position`: `q += h v`.
pub fn integrate_position(params: &Params, vel: &[[f32; 4]], pos: &mut [[f32; 4]]) {
    let h = params.h;
    pos[..params.num_points as usize]
        .par_iter_mut()
        .with_min_len(4096)
        .zip(vel.par_iter())
        .for_each(|(q, v)| {
            for a in 0..3 {
                q[a] += h * v[a];
            }
        });
}

/// Kernel `integrate_velocity_setup`, which the GPU step dispatches in a scene without glued points
/// or ties (nothing changes the velocities between the two): [`integrate_velocity`], then
/// [`crate::length::length_setup`] on the velocities it wrote. The CPU path calls the two itself.
pub fn integrate_velocity_setup(
    params: &Params,
    length_level: &[u32; 4],
    inv_mass: &[f32],
    force: &[[f32; 4]],
    vel: &mut [[f32; 4]],
    length_disp: &mut [[f32; 4]],
    counters: &mut Counters,
) {
    integrate_velocity(params, inv_mass, force, vel, counters);
    crate::length::length_setup(params, length_level, vel, length_disp, counters);
}

/// Kernel `nonrigid_damping_integrate`, which the GPU step dispatches in a scene without free balls
/// while [`damping_integrate_iterations`] stays within [`DAMPING_INTEGRATE_LOOP_LIMIT`]:
/// [`nonrigid_damping`] of the step's phase, then [`object_contact_integrate`]. Each phase's
/// blocks partition the points, so the kernel, a workgroup per block, moves every point once. The
/// CPU path calls the stages itself.
#[allow(clippy::too_many_arguments)]
pub fn nonrigid_damping_integrate(
    params: &Params,
    block_start: &[u32],
    block_points: &[u32],
    mass: &[f32],
    inv_mass: &[f32],
    obstacles: &[ObstacleShape],
    pos: &mut [[f32; 4]],
    vel: &mut [[f32; 4]],
) {
    nonrigid_damping(params, block_start, block_points, mass, inv_mass, pos, vel);
    object_contact_integrate(params, obstacles, inv_mass, pos, vel);
}

/// The most loop iterations a thread of `nonrigid_damping_integrate` makes with blocks of at most
/// `max_block_points` points and `num_obstacles` obstacles: `nonrigid_damping`'s
/// `4 ⌈k / 64⌉ + 69 + 1 + RIGID_REFINEMENTS` (its sums and reductions, then the spin's solves),
/// then `⌈k / 64⌉` points of its own, each through every obstacle.
pub fn damping_integrate_iterations(max_block_points: u32, num_obstacles: u32) -> u64 {
    let per = (max_block_points as u64).div_ceil(DAMPING_WG as u64);
    let damping = 4 * per + 69 + 1 + crate::layout::RIGID_REFINEMENTS as u64;
    damping + per * (1 + num_obstacles as u64)
}

/// The most loop iterations the GPU step lets a thread of `nonrigid_damping_integrate` make
/// (lavapipe ends an invocation silently after 65,535, DESIGN §7); beyond it the step dispatches
/// `nonrigid_damping`, `object_contact` and `integrate_position`.
pub const DAMPING_INTEGRATE_LOOP_LIMIT: u64 = 60_000;

/// Kernel `object_contact_integrate`, which the GPU step dispatches in a scene without free balls
/// (their kernels change yarn velocities between the two): [`object_contact`], then
/// [`integrate_position`] with the velocities it left. The CPU path calls the two itself.
pub fn object_contact_integrate(
    params: &Params,
    obstacles: &[ObstacleShape],
    inv_mass: &[f32],
    pos: &mut [[f32; 4]],
    vel: &mut [[f32; 4]],
) {
    object_contact(params, obstacles, inv_mass, pos, vel);
    integrate_position(params, vel, pos);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn damping_integrate_bound_counts_the_damping_and_each_point_through_every_obstacle() {
        // A block of 137 points: 3 per thread.
        assert_eq!(damping_integrate_iterations(137, 0), 4 * 3 + 72 + 3);
        assert_eq!(damping_integrate_iterations(137, 2), 4 * 3 + 72 + 3 * 3);
        // The largest block the damping takes fits with a few obstacles, not with a walking
        // figure's 14 more.
        let max = DAMPING_MAX_BLOCK_POINTS;
        assert!(damping_integrate_iterations(max, 4) <= DAMPING_INTEGRATE_LOOP_LIMIT);
        assert!(damping_integrate_iterations(max, 18) > DAMPING_INTEGRATE_LOOP_LIMIT);
        const { assert!(DAMPING_INTEGRATE_LOOP_LIMIT < 65_535) };
    }

    #[test]
    fn sphere_and_capsule_distances() {
        let s = ObstacleShape {
            kind: OBSTACLE_SPHERE,
            radius: 2.0,
            a: [1.0, 0.0, 0.0, 0.0],
            ..Default::default()
        };
        let (d, n) = obstacle_distance(&s, V3::<f64>::new(1.0, 3.0, 0.0));
        assert!((d - 1.0).abs() < 1e-6 && (n.y - 1.0).abs() < 1e-6);
        let c = ObstacleShape {
            kind: OBSTACLE_CAPSULE,
            radius: 0.5,
            a: [0.0, 0.0, 0.0, 0.0],
            b: [0.0, 0.0, 4.0, 0.0],
            ..Default::default()
        };
        let (d, _) = obstacle_distance(&c, V3::<f64>::new(1.0, 0.0, 2.0));
        assert!((d - 0.5).abs() < 1e-6);
        let (d, _) = obstacle_distance(&c, V3::<f64>::new(0.0, 0.0, 6.0));
        assert!((d - 1.5).abs() < 1e-6);
    }

    #[test]
    fn workgroup_sum_adds_every_point_once() {
        // Integer terms: every order gives the exact sum, so a point summed twice or missed shows.
        for k in [0usize, 1, 63, 64, 65, 200, 1000] {
            let [n, s] = workgroup_sum(k, |i, acc: &mut [f32; 2]| {
                acc[0] += 1.0;
                acc[1] += i as f32;
            });
            assert_eq!(
                (n, s),
                (k as f32, (k * k.saturating_sub(1) / 2) as f32),
                "k = {k}"
            );
        }
    }

    #[test]
    fn damping_blocks_past_the_loop_bound_are_refused() {
        assert!(check_damping_blocks(&[0, 2, 2 + DAMPING_MAX_BLOCK_POINTS]).is_ok());
        assert_eq!(
            check_damping_blocks(&[0, 2, 3 + DAMPING_MAX_BLOCK_POINTS]),
            Err(DampingBlockError::TooLarge {
                block: 1,
                points: DAMPING_MAX_BLOCK_POINTS + 1,
                max: DAMPING_MAX_BLOCK_POINTS
            })
        );
        assert_eq!(
            check_damping_blocks(&[0, 4, 3]),
            Err(DampingBlockError::Unordered { block: 1 })
        );
    }

    #[test]
    fn nonrigid_damping_keeps_rigid_motion_of_a_large_block() {
        // 300 points (threads sum 4 or 5 each) on a helix moving rigidly: nothing to damp.
        let n = 300;
        let pos: Vec<[f32; 4]> = (0..n)
            .map(|i| {
                let a = i as f32 * 0.1;
                [a.cos(), a.sin(), 0.01 * i as f32, 0.0]
            })
            .collect();
        let (tv, om) = (V3::new(1.0f32, -2.0, 0.5), V3::new(0.3f32, 0.2, -0.4));
        let vel: Vec<[f32; 4]> = pos
            .iter()
            .map(|&p| (tv + om.cross(V3::from4(p))).to4(0.0))
            .collect();
        let params = Params {
            h: 1.0 / 16200.0,
            damping_const: 500.0,
            damping_prop: 1500.0,
            first_block: 0,
            num_blocks: 1,
            ..Params::default()
        };
        let mass = vec![0.01f32; n];
        let mut out = vel.clone();
        nonrigid_damping(
            &params,
            &[0, n as u32],
            &(0..n as u32).collect::<Vec<_>>(),
            &mass,
            &mass,
            &pos,
            &mut out,
        );
        for (a, b) in out.iter().zip(&vel) {
            for k in 0..3 {
                assert!((a[k] - b[k]).abs() < 1e-4, "{a:?} vs {b:?}");
            }
        }
    }
}
