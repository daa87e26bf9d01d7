//! The velocity and position stages of the time step (seed Figure 4, DESIGN §6), CPU twins of the WGSL
//! kernels of the same names. Forces come from [`crate::rod::rod_forces`] (gravity included) and the
//! contact model; the order inside one step is
//!
//! `integrate_velocity → glue_projection → length_projection → nonrigid_damping → object_contact →
//! integrate_position → material_frames → plasticity`.
//!
//! Buffers: control points `pos` and velocities `vel` (`[f32; 4]`, xyz, w unused), per-point `mass` and
//! `inv_mass` (0 for glued points, which the constraint solves treat as immovable), the polyline
//! [`Edge`]s with their rest lengths, damping blocks as `block_start`/`block_points` (points of block
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
//! constraints `C_e = |x_b − x_a| − ℓ_e` give per yarn a tridiagonal system (cyclic for a closed yarn,
//! solved with Sherman–Morrison around the Thomas algorithm), iterated until every relative length error
//! is below the tolerance.

use crate::math::{Real, V3};
use crate::state::{Edge, Yarn};
pub use crate::layout::ObstacleShape;
use crate::layout::{Counters, Params, ERROR_NAN_FORCE};
use rayon::prelude::*;

/// Stage `integrate_velocity`: `v += h M⁻¹ f` (glued points have `inv_mass = 0` and stay put). A
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
    vel[..n]
        .par_iter_mut()
        .with_min_len(2048)
        .zip(inv_mass.par_iter().zip(force.par_iter()))
        .for_each(|(v, (&w, f))| {
            for a in 0..3 {
                v[a] += h * w * f[a];
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

/// Per-edge scratch of the length projection, preallocated by the owner.
#[derive(Clone, Debug, Default)]
pub struct LengthScratch {
    /// Per point: displacement `h v` being projected (xyz).
    pub disp: Vec<[f32; 4]>,
    /// Per edge: unit direction at the current iterate (xyz) and the constraint value `C_e` (w).
    pub dir: Vec<[f32; 4]>,
    /// Per edge: diagonal, coupling to the next edge, right-hand side / solution, and two work rows.
    pub diag: Vec<f32>,
    pub off: Vec<f32>,
    pub rhs: Vec<f32>,
    pub work: Vec<f32>,
    pub z: Vec<f32>,
}

impl LengthScratch {
    pub fn new(points: usize, edges: usize) -> Self {
        LengthScratch {
            disp: vec![[0.0; 4]; points],
            dir: vec![[0.0; 4]; edges],
            diag: vec![0.0; edges],
            off: vec![0.0; edges],
            rhs: vec![0.0; edges],
            work: vec![0.0; edges],
            z: vec![0.0; edges],
        }
    }
}

/// What the length projection did this step.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct LengthReport {
    /// Largest Fast Projection iteration count over the yarns.
    pub iterations: u32,
    /// Largest relative length error `|C_e| / ℓ_e` after the projection.
    pub max_error: f32,
}

/// The length projection of one yarn did not reach the tolerance.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct LengthFailure {
    pub yarn: usize,
    pub iterations: u32,
    pub error: f32,
}

/// Stage `length_projection`: Fast Projection of the inextensibility constraints of every yarn on the
/// positions `q + h v`; on return `vel` holds `(x − q)/h` of the projected `x`. Each iteration solves
/// `(∇C W ∇Cᵀ) λ = C(x)` and sets `x −= W ∇Cᵀ λ`, with `W = inv_mass` (glued points do not move). A row
/// whose edge has two immovable ends is inert (both ends are glued, so its length is already kept).
///
/// Yarns are independent; they are solved in parallel over disjoint slices of the buffers (each yarn's
/// points and edges are contiguous), and the report combines them in yarn order, so the result does
/// not depend on the thread count.
#[allow(clippy::too_many_arguments)]
pub fn length_projection(
    h: f32,
    tolerance: f32,
    max_iterations: u32,
    yarns: &[Yarn],
    edges: &[Edge],
    inv_mass: &[f32],
    pos: &[[f32; 4]],
    vel: &mut [[f32; 4]],
    s: &mut LengthScratch,
) -> Result<LengthReport, LengthFailure> {
    let ctx = Ctx {
        h,
        tolerance,
        max_iterations,
        edges,
        inv_mass,
        pos,
    };
    let sl = YarnSlices {
        p0: 0,
        e0: 0,
        vel,
        disp: &mut s.disp,
        dir: &mut s.dir,
        diag: &mut s.diag,
        off: &mut s.off,
        rhs: &mut s.rhs,
        work: &mut s.work,
        z: &mut s.z,
    };
    project_yarns(&ctx, yarns, 0, sl)
}

/// The read-only inputs of the length projection.
struct Ctx<'a> {
    h: f32,
    tolerance: f32,
    max_iterations: u32,
    edges: &'a [Edge],
    inv_mass: &'a [f32],
    pos: &'a [[f32; 4]],
}

/// The buffers of a run of consecutive yarns, starting at global point `p0` and edge `e0`.
struct YarnSlices<'a> {
    p0: usize,
    e0: usize,
    vel: &'a mut [[f32; 4]],
    disp: &'a mut [[f32; 4]],
    dir: &'a mut [[f32; 4]],
    diag: &'a mut [f32],
    off: &'a mut [f32],
    rhs: &'a mut [f32],
    work: &'a mut [f32],
    z: &'a mut [f32],
}

impl<'a> YarnSlices<'a> {
    /// Splits at global point `p` and edge `e` (the start of a yarn).
    fn split(self, p: usize, e: usize) -> (YarnSlices<'a>, YarnSlices<'a>) {
        let (lp, le) = (p - self.p0, e - self.e0);
        let (v0, v1) = self.vel.split_at_mut(lp);
        let (d0, d1) = self.disp.split_at_mut(lp);
        let (r0, r1) = self.dir.split_at_mut(le);
        let (g0, g1) = self.diag.split_at_mut(le);
        let (o0, o1) = self.off.split_at_mut(le);
        let (h0, h1) = self.rhs.split_at_mut(le);
        let (w0, w1) = self.work.split_at_mut(le);
        let (z0, z1) = self.z.split_at_mut(le);
        (
            YarnSlices {
                p0: self.p0,
                e0: self.e0,
                vel: v0,
                disp: d0,
                dir: r0,
                diag: g0,
                off: o0,
                rhs: h0,
                work: w0,
                z: z0,
            },
            YarnSlices {
                p0: p,
                e0: e,
                vel: v1,
                disp: d1,
                dir: r1,
                diag: g1,
                off: o1,
                rhs: h1,
                work: w1,
                z: z1,
            },
        )
    }
}

/// Below this many control points a run of yarns is solved on one thread.
const PAR_POINTS: usize = 1024;

fn project_yarns(
    ctx: &Ctx,
    yarns: &[Yarn],
    first_yarn: usize,
    sl: YarnSlices,
) -> Result<LengthReport, LengthFailure> {
    let points = sl.vel.len();
    if yarns.len() > 1 && points >= PAR_POINTS {
        let mid = yarns.len() / 2;
        let (lo, hi) = sl.split(
            yarns[mid].first_point as usize,
            yarns[mid].first_edge as usize,
        );
        let (a, b) = rayon::join(
            || project_yarns(ctx, &yarns[..mid], first_yarn, lo),
            || project_yarns(ctx, &yarns[mid..], first_yarn + mid, hi),
        );
        // The lower yarn's failure wins, as in a sequential sweep.
        let (a, b) = (a?, b?);
        return Ok(LengthReport {
            iterations: a.iterations.max(b.iterations),
            max_error: a.max_error.max(b.max_error),
        });
    }
    let mut report = LengthReport::default();
    let mut sl = sl;
    for (k, y) in yarns.iter().enumerate() {
        let r = project_yarn(ctx, first_yarn + k, y, &mut sl)?;
        report.iterations = report.iterations.max(r.iterations);
        report.max_error = report.max_error.max(r.max_error);
    }
    Ok(report)
}

/// Fast Projection of one yarn, on the slices of the run it belongs to.
fn project_yarn(
    ctx: &Ctx,
    yi: usize,
    y: &Yarn,
    s: &mut YarnSlices,
) -> Result<LengthReport, LengthFailure> {
    let (h, inv_mass, edges) = (ctx.h, ctx.inv_mass, ctx.edges);
    let pr = y.first_point as usize - s.p0..(y.first_point + y.num_points) as usize - s.p0;
    let ge = y.first_edge as usize;
    let ne = y.num_edges as usize;
    let er = ge - s.e0..ge - s.e0 + ne;
    let closed = y.closed != 0;
    let p0 = s.p0;
    for (d, v) in s.disp[pr.clone()].iter_mut().zip(s.vel[pr.clone()].iter()) {
        *d = [h * v[0], h * v[1], h * v[2], 0.0];
    }
    let mut it = 0;
    let err = loop {
        let err = edge_directions(
            &edges[ge..ge + ne],
            p0,
            ctx.pos,
            s.disp,
            &mut s.dir[er.clone()],
        );
        // Always project at least once: the unconstrained velocities break the constraints by
        // O(h²) every step, and letting that drift up to the tolerance would leave it there.
        if err < ctx.tolerance && it > 0 {
            break err;
        }
        if it == ctx.max_iterations {
            return Err(LengthFailure {
                yarn: yi,
                iterations: it,
                error: err,
            });
        }
        it += 1;
        let dir = &s.dir[er.clone()];
        // Assemble ∇C W ∇Cᵀ: edge k has ∇_a C = −t_k, ∇_b C = t_k; edges k and k+1 share point
        // b_k = a_{k+1}, so their coupling is −W_b t_k·t_{k+1}.
        for k in 0..ne {
            let e = &edges[ge + k];
            let (wa, wb) = (inv_mass[e.a as usize], inv_mass[e.b as usize]);
            let dk = dir[k];
            let (diag, rhs) = if wa + wb > 0.0 {
                (wa + wb, dk[3])
            } else {
                (1.0, 0.0)
            };
            s.diag[er.start + k] = diag;
            s.rhs[er.start + k] = rhs;
            let next = if k + 1 < ne {
                Some(k + 1)
            } else if closed {
                Some(0)
            } else {
                None
            };
            s.off[er.start + k] = match next {
                Some(n) => {
                    let dn = dir[n];
                    -wb * (dk[0] * dn[0] + dk[1] * dn[1] + dk[2] * dn[2])
                }
                None => 0.0,
            };
        }
        if closed && ne >= 3 {
            cyclic_solve(
                &s.diag[er.clone()],
                &s.off[er.clone()],
                &mut s.rhs[er.clone()],
                &mut s.work[er.clone()],
                &mut s.z[er.clone()],
            );
        } else {
            thomas_solve(
                &s.diag[er.clone()],
                &s.off[er.clone()],
                &mut s.rhs[er.clone()],
                &mut s.work[er.clone()],
            );
        }
        // x −= W ∇Cᵀ λ.
        for k in 0..ne {
            let e = &edges[ge + k];
            let l = s.rhs[er.start + k];
            let d = s.dir[er.start + k];
            let (a, b) = (e.a as usize, e.b as usize);
            let (wa, wb) = (inv_mass[a], inv_mass[b]);
            for (c, dc) in d.iter().take(3).enumerate() {
                s.disp[a - p0][c] += wa * l * dc;
                s.disp[b - p0][c] -= wb * l * dc;
            }
        }
    };
    let inv_h = 1.0 / h;
    for (v, d) in s.vel[pr.clone()].iter_mut().zip(s.disp[pr].iter()) {
        *v = [d[0] * inv_h, d[1] * inv_h, d[2] * inv_h, 0.0];
    }
    Ok(LengthReport {
        iterations: it,
        max_error: err,
    })
}

/// Writes each edge's unit direction and constraint value at `q + disp`; returns the largest relative
/// error. The edge vector is formed from differences (`q_b − q_a` plus `d_b − d_a`) so it keeps its
/// precision far from the origin. `disp` starts at global point `p0`.
fn edge_directions(
    edges: &[Edge],
    p0: usize,
    pos: &[[f32; 4]],
    disp: &[[f32; 4]],
    dir: &mut [[f32; 4]],
) -> f32 {
    let mut worst = 0.0f32;
    for (e, out) in edges.iter().zip(dir.iter_mut()) {
        let (a, b) = (e.a as usize, e.b as usize);
        let (da, db) = (disp[a - p0], disp[b - p0]);
        let v = V3::<f32>::new(
            (pos[b][0] - pos[a][0]) + (db[0] - da[0]),
            (pos[b][1] - pos[a][1]) + (db[1] - da[1]),
            (pos[b][2] - pos[a][2]) + (db[2] - da[2]),
        );
        let len = v.norm();
        let c = len - e.rest_length;
        let t = if len > 0.0 { v / len } else { v };
        *out = t.to4(c);
        // A NaN must read as "not converged", never as converged.
        let rel = (c / e.rest_length).abs();
        if rel.is_nan() {
            worst = f32::INFINITY;
        } else if rel > worst {
            worst = rel;
        }
    }
    worst
}

/// Solves the symmetric tridiagonal system with diagonal `d` and off-diagonal `o` (`o[k]` couples rows
/// k and k+1; the last entry is ignored) in place on `r` (Thomas algorithm; `w` is scratch).
fn thomas_solve(d: &[f32], o: &[f32], r: &mut [f32], w: &mut [f32]) {
    let n = d.len();
    if n == 0 {
        return;
    }
    let mut beta = d[0];
    r[0] /= beta;
    for k in 1..n {
        w[k] = o[k - 1] / beta;
        beta = d[k] - o[k - 1] * w[k];
        r[k] = (r[k] - o[k - 1] * r[k - 1]) / beta;
    }
    for k in (0..n - 1).rev() {
        r[k] -= w[k + 1] * r[k + 1];
    }
}

/// Solves the symmetric cyclic tridiagonal system (`o[n−1]` couples rows n−1 and 0) in place on `r`,
/// by Sherman–Morrison around two Thomas solves. `w`, `z` are scratch.
fn cyclic_solve(d: &[f32], o: &[f32], r: &mut [f32], w: &mut [f32], z: &mut [f32]) {
    let n = d.len();
    let corner = o[n - 1];
    // A = A' + u vᵀ with u = (γ, 0…0, corner), v = (1, 0…0, corner/γ).
    let gamma = -d[0];
    // A' differs from A in its first and last diagonal entries and has no corners.
    let dd0 = d[0] - gamma;
    let ddn = d[n - 1] - corner * corner / gamma;
    // Solve A' y = r (in r) and A' q = u (in z) with one forward sweep each; the diagonal is the
    // same for both, so run the two sweeps together.
    z.fill(0.0);
    z[0] = gamma;
    z[n - 1] = corner;
    let diag = |k: usize| -> f32 {
        if k == 0 {
            dd0
        } else if k == n - 1 {
            ddn
        } else {
            d[k]
        }
    };
    let mut beta = diag(0);
    r[0] /= beta;
    z[0] /= beta;
    for k in 1..n {
        w[k] = o[k - 1] / beta;
        beta = diag(k) - o[k - 1] * w[k];
        r[k] = (r[k] - o[k - 1] * r[k - 1]) / beta;
        z[k] = (z[k] - o[k - 1] * z[k - 1]) / beta;
    }
    for k in (0..n - 1).rev() {
        r[k] -= w[k + 1] * r[k + 1];
        z[k] -= w[k + 1] * z[k + 1];
    }
    let fact = (r[0] + corner * r[n - 1] / gamma) / (1.0 + z[0] + corner * z[n - 1] / gamma);
    for (rk, zk) in r.iter_mut().zip(z.iter()) {
        *rk -= fact * zk;
    }
}

/// Stage `nonrigid_damping` (seed §3.3): per block of `k` points, with `v_nr` the velocity minus the
/// block's rigid motion (mass-weighted linear and angular velocity about its centre of mass at `pos`),
/// apply `Δv = −v_nr · min(1, max(h μ_prop, h μ_const √k / ‖v_nr‖))`. Glued points (`inv_mass = 0`) take
/// part in the rigid fit but are not changed.
///
/// The blocks are those of one damping phase: the caller passes that phase's run of `block_start`
/// (its entries index `block_points` directly, so the run need not start at 0). The blocks of one
/// phase are disjoint, so they could be damped in any order or in parallel with the same result.
#[allow(clippy::too_many_arguments)]
pub fn nonrigid_damping(
    h: f32,
    mu_const: f32,
    mu_prop: f32,
    block_start: &[u32],
    block_points: &[u32],
    mass: &[f32],
    inv_mass: &[f32],
    pos: &[[f32; 4]],
    vel: &mut [[f32; 4]],
) {
    let nb = block_start.len().saturating_sub(1);
    for b in 0..nb {
        let pts = &block_points[block_start[b] as usize..block_start[b + 1] as usize];
        if pts.len() < 2 {
            continue;
        }
        let (c, vcm, omega) = rigid_motion(pts, mass, pos, vel);
        let mut nr2 = 0.0f32;
        for &p in pts {
            let p = p as usize;
            let r = V3::<f32>::from4(pos[p]) - c;
            let vnr = V3::<f32>::from4(vel[p]) - vcm - omega.cross(r);
            nr2 += vnr.norm2();
        }
        let nr = nr2.sqrt();
        if nr2 <= 0.0 {
            continue;
        }
        let k = pts.len() as f32;
        let f = (h * mu_prop).max(h * mu_const * k.sqrt() / nr).min(1.0);
        for &p in pts {
            let p = p as usize;
            if inv_mass[p] == 0.0 {
                continue;
            }
            let r = V3::<f32>::from4(pos[p]) - c;
            let vnr = V3::<f32>::from4(vel[p]) - vcm - omega.cross(r);
            let v = V3::<f32>::from4(vel[p]) - vnr * f;
            vel[p] = v.to4(0.0);
        }
    }
}

/// Centre of mass, linear velocity and angular velocity of the best rigid fit to a block's motion.
/// The inertia tensor is regularised by 1e-5 of its trace, so a nearly straight block (no inertia about
/// its axis, and no angular momentum about it either) gives a bounded spin.
fn rigid_motion(
    pts: &[u32],
    mass: &[f32],
    pos: &[[f32; 4]],
    vel: &[[f32; 4]],
) -> (V3<f32>, V3<f32>, V3<f32>) {
    let mut m = 0.0f32;
    let mut mx = V3::<f32>::zero();
    let mut mv = V3::<f32>::zero();
    // Relative to the first point to keep f32 precision.
    let o = V3::<f32>::from4(pos[pts[0] as usize]);
    for &p in pts {
        let p = p as usize;
        m += mass[p];
        mx += (V3::from4(pos[p]) - o) * mass[p];
        mv += V3::<f32>::from4(vel[p]) * mass[p];
    }
    if m <= 0.0 {
        return (o, V3::zero(), V3::zero());
    }
    let c = o + mx / m;
    let vcm = mv / m;
    let mut l = V3::<f32>::zero();
    let (mut ixx, mut iyy, mut izz, mut ixy, mut ixz, mut iyz) = (0.0f32, 0.0, 0.0, 0.0, 0.0, 0.0);
    for &p in pts {
        let p = p as usize;
        let r = V3::<f32>::from4(pos[p]) - c;
        let w = mass[p];
        l += r.cross(V3::<f32>::from4(vel[p]) - vcm) * w;
        ixx += w * (r.y * r.y + r.z * r.z);
        iyy += w * (r.x * r.x + r.z * r.z);
        izz += w * (r.x * r.x + r.y * r.y);
        ixy -= w * r.x * r.y;
        ixz -= w * r.x * r.z;
        iyz -= w * r.y * r.z;
    }
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
    let omega = V3::new(
        c00 * l.x + c01 * l.y + c02 * l.z,
        c01 * l.x + c11 * l.y + c12 * l.z,
        c02 * l.x + c12 * l.y + c22 * l.z,
    ) / det;
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

/// Unit `d / l`, or +y when the point sits exactly on the centre (any direction is as good).
#[inline]
fn outward<T: Real>(d: V3<T>, l: T) -> V3<T> {
    if l > T::zero() {
        d / l
    } else {
        V3::new(T::zero(), T::one(), T::zero())
    }
}

/// Stage `object_contact`: for each free point whose predicted position `q + h v` lies closer than the
/// yarn radius `r` to an obstacle, remove the inward normal relative velocity, reduce the tangential
/// relative velocity by `friction ×` the removed normal speed (Coulomb-like, never reversing it), then
/// add the normal velocity that puts the predicted position at distance `r`.
pub fn object_contact(
    h: f32,
    radius: f32,
    obstacles: &[ObstacleShape],
    inv_mass: &[f32],
    pos: &[[f32; 4]],
    vel: &mut [[f32; 4]],
) {
    if obstacles.is_empty() {
        return;
    }
    vel.par_iter_mut()
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
                let vo = V3::<f32>::from4(o.vel);
                let rel = v - vo;
                let vn = rel.dot(n);
                if vn < 0.0 {
                    let vt = rel - n * vn;
                    let vtn = vt.norm();
                    let keep = if vtn > 0.0 {
                        (1.0 - o.friction * (-vn) / vtn).max(0.0)
                    } else {
                        0.0
                    };
                    v = vo + vt * keep;
                }
                let (d2, n2) = obstacle_distance(o, q + v * h);
                if d2 < radius {
                    v += n2 * ((radius - d2) / h);
                }
            }
            *v4 = v.to4(0.0);
        });
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

#[cfg(test)]
mod tests {
    use super::*;

    fn dense(d: &[f32], o: &[f32], cyclic: bool) -> Vec<Vec<f64>> {
        let n = d.len();
        let mut a = vec![vec![0.0; n]; n];
        for k in 0..n {
            a[k][k] = d[k] as f64;
            if k + 1 < n {
                a[k][k + 1] = o[k] as f64;
                a[k + 1][k] = o[k] as f64;
            }
        }
        if cyclic {
            a[n - 1][0] += o[n - 1] as f64;
            a[0][n - 1] += o[n - 1] as f64;
        }
        a
    }

    fn residual(a: &[Vec<f64>], x: &[f32], b: &[f32]) -> f64 {
        a.iter()
            .zip(b)
            .map(|(row, &bi)| {
                let ax: f64 = row.iter().zip(x).map(|(r, &xi)| r * xi as f64).sum();
                (ax - bi as f64).abs()
            })
            .fold(0.0, f64::max)
    }

    #[test]
    fn thomas_and_cyclic_solve_their_systems() {
        for n in [3usize, 4, 7, 12] {
            let d: Vec<f32> = (0..n).map(|k| 2.0 + 0.1 * k as f32).collect();
            let o: Vec<f32> = (0..n).map(|k| -0.6 - 0.05 * (k % 3) as f32).collect();
            let b: Vec<f32> = (0..n).map(|k| (k as f32 * 0.7).sin()).collect();
            let mut w = vec![0.0; n];
            let mut z = vec![0.0; n];
            let mut x = b.clone();
            thomas_solve(&d, &o, &mut x, &mut w);
            assert!(residual(&dense(&d, &o, false), &x, &b) < 1e-5);
            let mut x = b.clone();
            cyclic_solve(&d, &o, &mut x, &mut w, &mut z);
            assert!(residual(&dense(&d, &o, true), &x, &b) < 1e-5, "n = {n}");
        }
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
}
