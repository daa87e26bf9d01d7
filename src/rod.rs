//! Discrete Elastic Rods on the polyline through the control points (seed §3.1 and Appendix A).
//!
//! Buffers: control points `pos` (`[f32; 4]`, xyz), per polyline edge an [`EdgeFrame`] (reference
//! director `u`, material angle `θ`, and the tangent `u` was last transported to), per bending element
//! a [`Bend`] (its three vertices and two edges) and a [`BendRest`] (rest curvature, rest twist and the
//! accumulated reference twist ψ). A closed yarn has a bending element at every vertex, an open yarn at
//! its interior vertices (the tangent handles are polyline vertices too, so the handle edges carry
//! the clamping direction of an end).
//!
//! Energies (per bending element `i` between edges `e⁰ = x_i − x_{i−1}` and `e¹ = x_{i+1} − x_i`, rest
//! lengths `l₀, l₁`, `l̄ = l₀ + l₁`, i.e. twice the Voronoi length of the vertex):
//!
//! * curvature binormal `κb = 2 e⁰ × e¹ / (l₀ l₁ + e⁰·e¹)` (Bergou 2008, rest lengths in the
//!   denominator), material curvatures `ωʲ = (κb·m₂ʲ, −κb·m₁ʲ)` in the material frame of edge `j`;
//! * bending `E_b = EI / (2 l̄) Σ_{j∈{0,1}} |ωʲ − ω̄ʲ|²`, which is `½ EI ∫ κ² ds` for a smooth rod;
//! * twisting `E_t = GJ (m − m̄)² / l̄` with the twist `m = θ₁ − θ₀ + ψ`, where ψ is the reference twist:
//!   the signed angle about `t¹` from `u⁰` parallel-transported in space onto `t¹`, to `u¹`. The seed
//!   writes `θ₁ − θ₀ − θ̂`, so `θ̂ = −ψ`.
//!
//! The reference directors are parallel-transported *through time* (from `e(t)` to `e(t+h)`), not along
//! the rod, so every force has the local support of one bending element (Appendix A). ψ is tracked by
//! accumulation — each update measures only the change since the last step, in (−π, π] — so windings
//! beyond 2π are kept. Gradients are analytic: `∇ω = (m₂ᵀ; −m₁ᵀ) ∇(κb)` (exact because the
//! time-transported frame turns about `t × δt` and `κb ⊥ t`), and `∇ψ` is the holonomy gradient
//! `∂ψ/∂x_{i−1} = −(t⁰×t¹)/((1+t⁰·t¹)|e⁰|)`, `∂ψ/∂x_{i+1} = +(t⁰×t¹)/((1+t⁰·t¹)|e¹|)` (which is the
//! seed's `∓(κb)/(2|ē|)` when the edges have their rest lengths). Both are exact at the configuration
//! whose frames were just transported, which is where the step evaluates them.
//!
//! Because the reference frame does not turn with a rigid rotation about the tangents, the positional
//! gradient at fixed θ conserves angular momentum only where `∂E/∂θ = 0`; the quasi-static frame solve
//! provides that.
//!
//! Quasi-static material frames: after each position update the angles θ minimise the rod energy with
//! positions fixed. We do a fixed number of sweeps of one safeguarded Newton step per edge in a
//! red–black(–green) ordering: edges of one colour share no bending element, so their updates are
//! independent (deterministic and parallel); a closed yarn with an odd number of edges gives its last
//! edge a third colour.
//!
//! GPU kernels (`shaders/NAME.wgsl`, shared helpers in `shaders/shared/rod.wgsl`) and their CPU twins
//! here, in the order of a time step: [`bend_gradient`], [`rod_forces`]; after the position update
//! the stage [`material_frames`] = [`frame_transport`], [`bend_twist`], then `frame_sweeps` × 3
//! [`theta_sweep`] (one dispatch per colour, the colour given by a [`ColorRange`] uniform); then
//! [`plasticity`]. The GPU step does all but [`frame_transport`] in one dispatch, [`frame_solve`],
//! over the tiles of [`frame_tiles`] (every dispatch costs the GPU step a barrier; the CPU path
//! keeps the stages, which `frame_solve`'s twin equals bit for bit). Each twin computes its kernel's result element
//! by element with the same f32 operations in the same order; the per-element functions are
//! generic over [`Real`], so tests evaluate them in f64 too.
//!
//! Plasticity (§3.1): each rest curvature `ω̄ʲ` (a 2D point per bending element and edge) is projected
//! onto the circle of radius `p_plastic` about the current `ωʲ` when outside it, then onto the circle of
//! radius `max(p_max, |ω̄|₀)` about the origin, `|ω̄|₀` the element's rest curvature at the start
//! (so the initial shape, which is the rest shape, is never clipped; [`plastic_kappa`]).
//!
//! Everything physical is written once over [`Real`]; the stages run it in f32, tests in f64.

pub use crate::layout::{Bend, BendRest, ColorRange, EdgeFrame};
use crate::layout::{Edge, Params};
use crate::math::{Real, V3};
use crate::state::Topology;
use bytemuck::{Pod, Zeroable};
use rayon::prelude::*;

/// Marks an empty slot in the index tables.
pub const NONE: u32 = u32::MAX;

/// Rod material constants, as the stages (and later a WGSL uniform) take them.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Pod, Zeroable)]
pub struct RodParams {
    /// Bending stiffness EI (g·cm³/s²).
    pub bending: f32,
    /// Twisting stiffness GJ (g·cm³/s²).
    pub twisting: f32,
    /// Plasticity radius `p_plastic` (integrated curvature; `inf` disables plastic flow).
    pub plastic_radius: f32,
    /// Largest rest curvature `p_max` (`inf` disables the bound).
    pub plastic_max: f32,
}
const _: () = assert!(std::mem::size_of::<RodParams>() == 16);

/// Why rod state cannot be built from a configuration.
#[derive(Debug, thiserror::Error, PartialEq)]
pub enum RodError {
    #[error("yarn {yarn}: the polyline folds back on itself at control point {point} (consecutive edges are anti-parallel), so its curvature is unbounded")]
    FoldedBack { yarn: usize, point: usize },
    #[error("yarn {yarn}: edge {edge} has zero length")]
    ZeroEdge { yarn: usize, edge: usize },
}

// ---------------------------------------------------------------------------------------------------
// Generic geometry
// ---------------------------------------------------------------------------------------------------

/// Parallel transport of `u` from unit tangent `a` to unit tangent `b`: the rotation about `a × b`
/// taking `a` to `b`, `R u = u + k×u + k×(k×u)/(1 + a·b)` with `k = a × b`. Undefined for `b = −a`.
#[inline]
pub fn parallel_transport<T: Real>(u: V3<T>, a: V3<T>, b: V3<T>) -> V3<T> {
    let k = a.cross(b);
    let ku = k.cross(u);
    u + ku + k.cross(ku) / (T::one() + a.dot(b))
}

/// Integrated curvature binormal `κb = 2 e⁰ × e¹ / (l₀ l₁ + e⁰·e¹)` and its denominator.
#[inline]
pub fn curvature_binormal<T: Real>(e0: V3<T>, e1: V3<T>, l0: T, l1: T) -> (V3<T>, T) {
    let d = l0 * l1 + e0.dot(e1);
    (e0.cross(e1) * (T::from_f64(2.0) / d), d)
}

/// Material frame `(m₁, m₂)` of an edge with unit tangent `t`, reference director `u` and angle θ.
#[inline]
pub fn material_frame<T: Real>(t: V3<T>, u: V3<T>, theta: T) -> (V3<T>, V3<T>) {
    let v = t.cross(u);
    let (s, c) = (theta.sin(), theta.cos());
    (u * c + v * s, v * c - u * s)
}

/// New value of the reference twist ψ of a bending element after its directors were transported.
///
/// ψ is the angle about `t1` from `P(u0)` (u0 transported in space from `t0` to `t1`) to `u1`. Only the
/// change since `previous` is measured (rotate `P(u0)` by `previous`, measure the remaining angle in
/// (−π, π]), so the accumulated value follows windings beyond ±π and ±2π continuously.
#[inline]
pub fn reference_twist<T: Real>(u0: V3<T>, t0: V3<T>, u1: V3<T>, t1: V3<T>, previous: T) -> T {
    let p = parallel_transport(u0, t0, t1);
    let (s, c) = (previous.sin(), previous.cos());
    let w = p * c + t1.cross(p) * s;
    previous + w.cross(u1).dot(t1).atan2(w.dot(u1))
}

/// A unit vector perpendicular to unit `t` (deterministic choice).
pub fn any_perpendicular<T: Real>(t: V3<T>) -> V3<T> {
    let (ax, ay, az) = (t.x.abs(), t.y.abs(), t.z.abs());
    let axis = if ax <= ay && ax <= az {
        V3::new(T::one(), T::zero(), T::zero())
    } else if ay <= az {
        V3::new(T::zero(), T::one(), T::zero())
    } else {
        V3::new(T::zero(), T::zero(), T::one())
    };
    t.cross(axis).normalized()
}

/// Rod stiffnesses of one bending element.
#[derive(Clone, Copy, Debug)]
pub struct Stiffness<T> {
    /// EI.
    pub bending: T,
    /// GJ.
    pub twisting: T,
}

/// Everything one bending element's energy depends on, in the working precision `T`.
#[derive(Clone, Copy, Debug)]
pub struct BendLocal<T> {
    /// `x_{i−1}, x_i, x_{i+1}`.
    pub x: [V3<T>; 3],
    /// Reference directors of the two edges (unit, ⊥ the current tangents).
    pub u: [V3<T>; 2],
    /// Material angles of the two edges.
    pub theta: [T; 2],
    /// Reference twist ψ.
    pub ref_twist: T,
    pub rest_len: [T; 2],
    pub rest_kappa: [[T; 2]; 2],
    pub rest_twist: T,
}

/// Derived quantities of a bending element.
#[derive(Clone, Copy, Debug)]
pub struct BendGeometry<T> {
    pub e: [V3<T>; 2],
    pub len: [T; 2],
    pub t: [V3<T>; 2],
    pub m1: [V3<T>; 2],
    pub m2: [V3<T>; 2],
    pub kb: V3<T>,
    /// Denominator `l₀ l₁ + e⁰·e¹` of κb.
    pub denom: T,
    /// Material curvatures `ωʲ`.
    pub omega: [[T; 2]; 2],
    /// `l̄ = l₀ + l₁` (rest).
    pub lbar: T,
}

impl<T: Real> BendLocal<T> {
    /// Reads one element from the flat f32 buffers.
    pub fn gather(
        bend: &Bend,
        rest: &BendRest,
        frames: &[EdgeFrame],
        pos: &[[f32; 4]],
    ) -> BendLocal<T> {
        let f0 = &frames[bend.e[0] as usize];
        let f1 = &frames[bend.e[1] as usize];
        let c = |x: f32| T::from_f64(x as f64);
        BendLocal {
            x: [
                V3::from4(pos[bend.v[0] as usize]),
                V3::from4(pos[bend.v[1] as usize]),
                V3::from4(pos[bend.v[2] as usize]),
            ],
            u: [V3::from4(f0.u), V3::from4(f1.u)],
            theta: [c(f0.u[3]), c(f1.u[3])],
            ref_twist: c(rest.ref_twist),
            rest_len: [c(bend.rest_len[0]), c(bend.rest_len[1])],
            rest_kappa: [
                [c(rest.kappa[0][0]), c(rest.kappa[0][1])],
                [c(rest.kappa[1][0]), c(rest.kappa[1][1])],
            ],
            rest_twist: c(rest.twist),
        }
    }

    pub fn geometry(&self) -> BendGeometry<T> {
        let e = [self.x[1] - self.x[0], self.x[2] - self.x[1]];
        let len = [e[0].norm(), e[1].norm()];
        let t = [e[0] / len[0], e[1] / len[1]];
        let (kb, denom) = curvature_binormal(e[0], e[1], self.rest_len[0], self.rest_len[1]);
        let f0 = material_frame(t[0], self.u[0], self.theta[0]);
        let f1 = material_frame(t[1], self.u[1], self.theta[1]);
        let m1 = [f0.0, f1.0];
        let m2 = [f0.1, f1.1];
        let omega = [
            [kb.dot(m2[0]), -kb.dot(m1[0])],
            [kb.dot(m2[1]), -kb.dot(m1[1])],
        ];
        BendGeometry {
            e,
            len,
            t,
            m1,
            m2,
            kb,
            denom,
            omega,
            lbar: self.rest_len[0] + self.rest_len[1],
        }
    }

    /// Twist `m = θ₁ − θ₀ + ψ`.
    #[inline]
    pub fn twist(&self) -> T {
        self.theta[1] - self.theta[0] + self.ref_twist
    }

    /// Bending energy `EI/(2 l̄) Σ_j |ωʲ − ω̄ʲ|²`.
    pub fn bending_energy(&self, k: &Stiffness<T>) -> T {
        let g = self.geometry();
        let mut s = T::zero();
        for j in 0..2 {
            let d0 = g.omega[j][0] - self.rest_kappa[j][0];
            let d1 = g.omega[j][1] - self.rest_kappa[j][1];
            s += d0 * d0 + d1 * d1;
        }
        k.bending * s / (T::from_f64(2.0) * g.lbar)
    }

    /// Twisting energy `GJ (m − m̄)² / l̄`.
    pub fn twisting_energy(&self, k: &Stiffness<T>) -> T {
        let d = self.twist() - self.rest_twist;
        k.twisting * d * d / (self.rest_len[0] + self.rest_len[1])
    }

    /// Gradient of the bending energy with respect to the three vertices and the two angles θ.
    pub fn bending_gradient(&self, k: &Stiffness<T>) -> ([V3<T>; 3], [T; 2]) {
        self.bending_gradient_at(k, &self.geometry())
    }

    fn bending_gradient_at(&self, k: &Stiffness<T>, g: &BendGeometry<T>) -> ([V3<T>; 3], [T; 2]) {
        let s = k.bending / g.lbar;
        // dE = s Σ_j (ωʲ − ω̄ʲ)·dωʲ and dωʲ = (m₂ʲ·dκb, −m₁ʲ·dκb), so dE = gv·dκb.
        let mut gv = V3::zero();
        let mut gtheta = [T::zero(); 2];
        for (j, gt) in gtheta.iter_mut().enumerate() {
            let d0 = g.omega[j][0] - self.rest_kappa[j][0];
            let d1 = g.omega[j][1] - self.rest_kappa[j][1];
            gv += (g.m2[j] * d0 - g.m1[j] * d1) * s;
            // ∂ωʲ/∂θⱼ = (ω₁ʲ, −ω₀ʲ) in (first, second) component order.
            *gt = s * (d0 * g.omega[j][1] - d1 * g.omega[j][0]);
        }
        (kb_gradient_transpose(g, gv), gtheta)
    }

    /// Gradient of the twisting energy with respect to the three vertices (through ψ, the holonomy
    /// gradient) and the two angles θ.
    pub fn twisting_gradient(&self, k: &Stiffness<T>) -> ([V3<T>; 3], [T; 2]) {
        let e0 = self.x[1] - self.x[0];
        let e1 = self.x[2] - self.x[1];
        let (l0, l1) = (e0.norm(), e1.norm());
        self.twisting_gradient_at(k, [e0 / l0, e1 / l1], [l0, l1])
    }

    fn twisting_gradient_at(
        &self,
        k: &Stiffness<T>,
        t: [V3<T>; 2],
        len: [T; 2],
    ) -> ([V3<T>; 3], [T; 2]) {
        let lbar = self.rest_len[0] + self.rest_len[1];
        let dm = T::from_f64(2.0) * k.twisting * (self.twist() - self.rest_twist) / lbar;
        let (t0, t1, l0, l1) = (t[0], t[1], len[0], len[1]);
        let h = t0.cross(t1) / (T::one() + t0.dot(t1));
        let g0 = h * (-dm / l0);
        let g2 = h * (dm / l1);
        ([g0, -(g0 + g2), g2], [-dm, dm])
    }

    /// Sum of both energies.
    pub fn energy(&self, k: &Stiffness<T>) -> T {
        self.bending_energy(k) + self.twisting_energy(k)
    }

    /// Gradient of both energies.
    pub fn gradient(&self, k: &Stiffness<T>) -> ([V3<T>; 3], [T; 2]) {
        let g = self.geometry();
        let (gb, tb) = self.bending_gradient_at(k, &g);
        let (gt, tt) = self.twisting_gradient_at(k, g.t, g.len);
        (
            [gb[0] + gt[0], gb[1] + gt[1], gb[2] + gt[2]],
            [tb[0] + tt[0], tb[1] + tt[1]],
        )
    }

    /// First and second derivatives of the energy with respect to θ₀ and θ₁ (each alone), for the
    /// quasi-static frame solve. Returns `(gradient, curvature, twist_curvature)`; the last is the
    /// always-positive twisting part of the curvature, used as a safeguard.
    pub fn theta_derivatives(&self, k: &Stiffness<T>) -> ([T; 2], [T; 2], T) {
        let g = self.geometry();
        let excess = self.twist() - self.rest_twist;
        let mut grad = [T::zero(); 2];
        let mut hess = [T::zero(); 2];
        let mut ht = T::zero();
        for j in 0..2 {
            let (gj, hj, tj) = theta_terms(
                k,
                g.kb,
                g.m1[j],
                g.m2[j],
                self.rest_kappa[j],
                g.lbar,
                excess,
                j,
            );
            grad[j] = gj;
            hess[j] = hj;
            ht = tj;
        }
        (grad, hess, ht)
    }
}

/// One bending element's contribution to `∂E/∂θ` and `∂²E/∂θ²` for the angle of its edge `role`
/// (0: `e⁰`, 1: `e¹`), given κb, that edge's material frame, its rest curvature, `l̄` and the twist
/// excess `m − m̄`. Returns `(gradient, curvature, twist_curvature)`.
///
/// Bending: `E_j(θ) = s/2 |ω(θ) − ω̄|²` with `s = EI/l̄`, `∂ω/∂θ = (ω₁, −ω₀)`, `∂²ω/∂θ² = −ω`, so
/// `E' = s (ω̄₁ ω₀ − ω̄₀ ω₁)` and `E'' = s ω̄·ω`. Twisting: `±2 GJ (m − m̄)/l̄` and `2 GJ/l̄`.
#[allow(clippy::too_many_arguments)]
#[inline]
pub fn theta_terms<T: Real>(
    k: &Stiffness<T>,
    kb: V3<T>,
    m1: V3<T>,
    m2: V3<T>,
    rest_kappa: [T; 2],
    lbar: T,
    twist_excess: T,
    role: usize,
) -> (T, T, T) {
    let s = k.bending / lbar;
    let (w0, w1) = (kb.dot(m2), -kb.dot(m1));
    let (r0, r1) = (rest_kappa[0], rest_kappa[1]);
    let two = T::from_f64(2.0);
    let dm = two * k.twisting * twist_excess / lbar;
    let ht = two * k.twisting / lbar;
    let dm = if role == 0 { -dm } else { dm };
    (
        dm + s * (r1 * w0 - r0 * w1),
        ht + s * (r0 * w0 + r1 * w1),
        ht,
    )
}

/// `(∂κb/∂x_k)ᵀ gv` for k = i−1, i, i+1.
#[inline]
fn kb_gradient_transpose<T: Real>(g: &BendGeometry<T>, gv: V3<T>) -> [V3<T>; 3] {
    let two = T::from_f64(2.0);
    let kg = g.kb.dot(gv);
    // ∂κb/∂e⁰ = (−2[e¹] − κb e¹ᵀ)/d, ∂κb/∂e¹ = (2[e⁰] − κb e⁰ᵀ)/d, x_{i−1} = −e⁰, x_{i+1} = +e¹.
    let g0 = (g.e[1] * kg - g.e[1].cross(gv) * two) / g.denom;
    let g2 = (-(g.e[0].cross(gv) * two) - g.e[0] * kg) / g.denom;
    [g0, -(g0 + g2), g2]
}

// ---------------------------------------------------------------------------------------------------
// Rod state and its construction
// ---------------------------------------------------------------------------------------------------

/// The rod buffers of a scene, built from its initial configuration (which is its rest shape).
#[derive(Clone, Debug, Default)]
pub struct RodState {
    pub bends: Vec<Bend>,
    pub rest: Vec<BendRest>,
    pub frames: Vec<EdgeFrame>,
    /// Per control point, up to three slots `bend * 3 + role` into `bend_grad` (gather table).
    pub point_bends: Vec<[u32; 4]>,
    /// Per edge, the bending element in which it is `e¹` and the one in which it is `e⁰`.
    pub edge_bends: Vec<[u32; 2]>,
    /// Edges sorted by colour; colour `c` is `edge_order[color_start[c]..color_start[c + 1]]`.
    pub edge_order: Vec<u32>,
    pub color_start: [u32; 4],
    /// Scratch: per bending element the energy gradient on its three vertices.
    pub bend_grad: Vec<[f32; 4]>,
    /// Scratch: per bending element κb (xyz) at the configuration the frame solve works on; w = l̄.
    pub bend_kb: Vec<[f32; 4]>,
    /// Scratch: the Newton step of each edge of the colour being solved (in `edge_order` order).
    pub theta_step: Vec<f32>,
    /// Scratch: each edge's θ before the frame solve (written by `frame_transport`, read by the
    /// GPU's `frame_solve`).
    pub theta_start: Vec<f32>,
    /// Scratch: each element's rest state before the frame solve (the same).
    pub rest_start: Vec<BendRest>,
}

impl RodState {
    /// Twist-free reference frames along each yarn (θ = 0), and rest curvature and twist equal to the
    /// initial ones, so the initial configuration is a rest state.
    pub fn new(topo: &Topology, pos: &[[f32; 4]]) -> Result<RodState, RodError> {
        let ne = topo.edges.len();
        let mut frames = vec![EdgeFrame::default(); ne];
        let mut bends = Vec::new();
        let mut edge_bends = vec![[NONE; 2]; ne];
        let mut color = vec![0u8; ne];
        for (yi, y) in topo.yarns.iter().enumerate() {
            let (fe, nedge) = (y.first_edge as usize, y.num_edges as usize);
            let n = y.num_points as usize;
            // Frames: space-parallel transport from an arbitrary director on the first edge.
            let mut prev: Option<(V3<f64>, V3<f64>)> = None;
            for k in 0..nedge {
                let e = &topo.edges[fe + k];
                let d = V3::<f64>::from4(pos[e.b as usize]) - V3::from4(pos[e.a as usize]);
                let l = d.norm();
                if l.is_nan() || l <= 0.0 {
                    return Err(RodError::ZeroEdge { yarn: yi, edge: k });
                }
                let t = d / l;
                let u = match prev {
                    None => any_perpendicular(t),
                    Some((pu, pt)) => {
                        if pt.dot(t) < -0.999 {
                            return Err(RodError::FoldedBack { yarn: yi, point: k });
                        }
                        let u = parallel_transport(pu, pt, t);
                        (u - t * u.dot(t)).normalized()
                    }
                };
                frames[fe + k] = EdgeFrame {
                    u: u.to4(0.0),
                    t: t.to4(0.0),
                };
                prev = Some((u, t));
                color[fe + k] = (k % 2) as u8;
            }
            let closed = y.closed != 0;
            if closed && nedge % 2 == 1 {
                color[fe + nedge - 1] = 2;
            }
            // Bending elements: vertex k between edges k−1 and k.
            let verts: Vec<usize> = if closed {
                (0..n).collect()
            } else {
                (1..n - 1).collect()
            };
            for k in verts {
                let ea = fe + (k + nedge - 1) % nedge;
                let eb = fe + k;
                let (a, b) = (&topo.edges[ea], &topo.edges[eb]);
                let bi = bends.len() as u32;
                edge_bends[ea][1] = bi;
                edge_bends[eb][0] = bi;
                let ta = V3::<f64>::from4(frames[ea].t);
                let tb = V3::<f64>::from4(frames[eb].t);
                if ta.dot(tb) < -0.999 {
                    return Err(RodError::FoldedBack { yarn: yi, point: k });
                }
                bends.push(Bend {
                    v: [a.a, a.b, b.b],
                    e: [ea as u32, eb as u32],
                    rest_len: [a.rest_length, b.rest_length],
                    _pad: 0,
                });
            }
        }
        let mut rest = vec![BendRest::default(); bends.len()];
        for (b, r) in bends.iter().zip(rest.iter_mut()) {
            let f0 = &frames[b.e[0] as usize];
            let f1 = &frames[b.e[1] as usize];
            let psi = reference_twist(
                V3::<f64>::from4(f0.u),
                V3::from4(f0.t),
                V3::from4(f1.u),
                V3::from4(f1.t),
                0.0,
            );
            r.ref_twist = psi as f32;
            r.twist = r.ref_twist;
            let local = BendLocal::<f64>::gather(b, r, &frames, pos);
            let g = local.geometry();
            for j in 0..2 {
                r.kappa[j] = [g.omega[j][0] as f32, g.omega[j][1] as f32];
            }
            // In f32 with the operations of `plastic_kappa`, so that the bound never clips the
            // starting curvature itself (not even by an ulp).
            r.kappa_start = r
                .kappa
                .iter()
                .map(|k| (k[0] * k[0] + k[1] * k[1]).sqrt())
                .fold(0.0f32, f32::max);
        }
        let mut point_bends = vec![[NONE; 4]; pos.len()];
        for (bi, b) in bends.iter().enumerate() {
            for role in 0..3 {
                let slots = &mut point_bends[b.v[role] as usize];
                // A polyline vertex belongs to at most three bending elements (yarns of ≥ 3 points).
                if let Some(free) = slots.iter().position(|&s| s == NONE) {
                    slots[free] = (bi * 3 + role) as u32;
                }
            }
        }
        let mut edge_order = Vec::with_capacity(ne);
        let mut color_start = [0u32; 4];
        for c in 0..3u8 {
            color_start[c as usize] = edge_order.len() as u32;
            edge_order.extend((0..ne as u32).filter(|&e| color[e as usize] == c));
        }
        color_start[3] = edge_order.len() as u32;
        let nb = bends.len();
        Ok(RodState {
            bends,
            rest_start: rest.clone(),
            rest,
            frames,
            point_bends,
            edge_bends,
            edge_order,
            color_start,
            bend_grad: vec![[0.0; 4]; nb * 3],
            bend_kb: vec![[0.0; 4]; nb],
            theta_step: vec![0.0; ne],
            theta_start: vec![0.0; ne],
        })
    }

    /// Total rod energy (bending + twisting) of the current state, in f64 (diagnostics and tests).
    pub fn energy(&self, params: &RodParams, pos: &[[f32; 4]]) -> f64 {
        let k = Stiffness {
            bending: params.bending as f64,
            twisting: params.twisting as f64,
        };
        self.bends
            .iter()
            .zip(&self.rest)
            .map(|(b, r)| BendLocal::<f64>::gather(b, r, &self.frames, pos).energy(&k))
            .sum()
    }
}

/// Rest bends sharper than a plastic bound ([`bends_beyond`]).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct BendsBeyond {
    /// Bending elements whose rest curvature `|ω̄|` exceeds the bound.
    pub count: usize,
    /// The largest `|ω̄|` of any element (whether beyond the bound or not).
    pub largest: f32,
}

/// How many bending elements of `rod` have a rest curvature beyond `plastic_max` (a report for
/// imported models: such bends keep their shape, since the bound acts only on plastic flow beyond
/// an element's starting curvature; see [`plastic_kappa`]).
pub fn bends_beyond(rod: &RodState, plastic_max: f32) -> BendsBeyond {
    let mut out = BendsBeyond::default();
    for r in &rod.rest {
        let k = r
            .kappa
            .iter()
            .map(|k| (k[0] * k[0] + k[1] * k[1]).sqrt())
            .fold(0.0f32, f32::max);
        out.largest = out.largest.max(k);
        out.count += (k > plastic_max) as usize;
    }
    out
}

// ---------------------------------------------------------------------------------------------------
// Stages
// ---------------------------------------------------------------------------------------------------

/// Smallest chunk a stage hands to one rayon task (below this, threads cost more than they save).
const PAR_MIN: usize = 512;

/// Stage `bend_gradient`: each bending element writes the gradient of its bending and twisting
/// energy on its three vertices into `bend_grad[3 b + role]` (first pass of the rod force).
pub fn bend_gradient(
    params: &Params,
    bends: &[Bend],
    bend_rest: &[BendRest],
    frames: &[EdgeFrame],
    pos: &[[f32; 4]],
    bend_grad: &mut [[f32; 4]],
) {
    let k = Stiffness {
        bending: params.bending,
        twisting: params.twisting,
    };
    let nb = params.num_bends as usize;
    bend_grad[..3 * nb]
        .par_chunks_mut(3)
        .with_min_len(PAR_MIN / 3)
        .zip(bends.par_iter().zip(bend_rest.par_iter()))
        .for_each(|(out, (b, r))| {
            let (g, _) = BendLocal::<f32>::gather(b, r, frames, pos).gradient(&k);
            for role in 0..3 {
                out[role] = g[role].to4(0.0);
            }
        });
}

/// Stage `rod_forces`: `force = m g − ∇E_rod` for every control point (overwrites `force`): each
/// point gathers its (up to three) `bend_grad` slots from `point_bends` in slot order, so the sum does
/// not depend on the thread count (second pass after [`bend_gradient`]).
pub fn rod_forces(
    params: &Params,
    point_bends: &[[u32; 4]],
    mass: &[f32],
    bend_grad: &[[f32; 4]],
    force: &mut [[f32; 4]],
) {
    gather_rod_forces(params, point_bends, mass, force, |s| {
        V3::from4(bend_grad[s as usize])
    });
}

/// `force = m g − Σ term(s)` for every control point over its `point_bends` slots `s` in slot
/// order: [`rod_forces`] with `term` the stored gradient, [`bend_forces`] computing it.
fn gather_rod_forces(
    params: &Params,
    point_bends: &[[u32; 4]],
    mass: &[f32],
    force: &mut [[f32; 4]],
    term: impl Fn(u32) -> V3<f32> + Sync,
) {
    let gravity = V3::new(params.gravity_x, params.gravity_y, params.gravity_z);
    force[..params.num_points as usize]
        .par_iter_mut()
        .with_min_len(PAR_MIN)
        .zip(point_bends.par_iter().zip(mass.par_iter()))
        .for_each(|(f, (slots, &m))| {
            let mut acc = gravity * m;
            for &s in slots.iter() {
                if s != NONE {
                    acc -= term(s);
                }
            }
            *f = acc.to4(0.0);
        });
}

/// Kernel `bend_forces`, which the GPU step dispatches in place of [`bend_gradient`] and
/// [`rod_forces`]: `force = m g − ∇E_rod` for every control point, each point's slots of
/// `point_bends` summed in slot order as [`rod_forces`] sums them, each term the gradient
/// [`bend_gradient`] computes for that element and role, computed here where it is summed
/// (the kernel computes a workgroup's run of elements once, into workgroup memory). Bit for bit
/// the two stages; the CPU path runs those (this computes each element once per point).
#[allow(clippy::too_many_arguments)]
pub fn bend_forces(
    params: &Params,
    bends: &[Bend],
    bend_rest: &[BendRest],
    frames: &[EdgeFrame],
    pos: &[[f32; 4]],
    point_bends: &[[u32; 4]],
    mass: &[f32],
    force: &mut [[f32; 4]],
) {
    let k = Stiffness {
        bending: params.bending,
        twisting: params.twisting,
    };
    gather_rod_forces(params, point_bends, mass, force, |s| {
        let b = (s / 3) as usize;
        let (g, _) = BendLocal::<f32>::gather(&bends[b], &bend_rest[b], frames, pos).gradient(&k);
        g[(s % 3) as usize]
    });
}

/// The three colour ranges of `edge_order` (`color_start[c] .. color_start[c + 1]`), as the
/// `color_range` uniform of [`theta_sweep`] takes them: one per colour, dispatched in colour order.
pub fn color_ranges(color_start: &[u32; 4]) -> [ColorRange; 3] {
    std::array::from_fn(|c| ColorRange {
        first: color_start[c],
        count: color_start[c + 1] - color_start[c],
        _pad0: 0,
        _pad1: 0,
    })
}

/// Stage `material_frames` (CPU path): transport each reference director through time onto its
/// edge's new tangent ([`frame_transport`]), update every reference twist ψ and κb
/// ([`bend_twist`]), then solve for the material angles θ quasi-statically: `params.frame_sweeps`
/// sweeps of one [`theta_sweep`] per colour, in colour order (see the module documentation).
/// Positions are fixed during the solve, so κb of every bending element is computed once into
/// `bend_kb`. The GPU path dispatches the same kernels in the same order.
#[allow(clippy::too_many_arguments)]
pub fn material_frames(
    params: &Params,
    edges: &[Edge],
    bends: &[Bend],
    edge_bends: &[[u32; 2]],
    edge_order: &[u32],
    color_start: &[u32; 4],
    pos: &[[f32; 4]],
    bend_rest: &mut [BendRest],
    frames: &mut [EdgeFrame],
    bend_kb: &mut [[f32; 4]],
    theta_step: &mut [f32],
    theta_start: &mut [f32],
    rest_start: &mut [BendRest],
) {
    frame_transport(
        params,
        edges,
        pos,
        frames,
        theta_start,
        edge_bends,
        bend_rest,
        rest_start,
    );
    bend_twist(params, bends, frames, pos, bend_rest, bend_kb);
    let ranges = color_ranges(color_start);
    for _ in 0..params.frame_sweeps {
        for range in &ranges {
            theta_sweep(
                params, range, bends, bend_rest, bend_kb, edge_bends, edge_order, theta_step,
                frames,
            );
        }
    }
}

/// One edge's frame transported through time onto the edge `xa → xb`: the new unit tangent `t` and
/// the reference director `u` parallel-transported from the old tangent `t_old` onto it,
/// re-orthonormalised so round-off never accumulates over millions of steps. Returns `(u, t)`.
#[inline]
pub fn transport_frame<T: Real>(u: V3<T>, t_old: V3<T>, xa: V3<T>, xb: V3<T>) -> (V3<T>, V3<T>) {
    let t = (xb - xa).normalized();
    let u = parallel_transport(u, t_old, t);
    ((u - t * u.dot(t)).normalized(), t)
}

/// Kernel `frame_transport` (first stage of `material_frames`): each edge's reference director
/// transported through time onto its new tangent ([`transport_frame`]); θ is kept, and copied to
/// `theta_start`, and the rest state of the element where the edge is `e¹` to `rest_start`: what
/// [`frame_solve`] starts from (its tiles read their halo's there, since the tiles that own them
/// write `frames` and `bend_rest` meanwhile).
#[allow(clippy::too_many_arguments)]
pub fn frame_transport(
    params: &Params,
    edges: &[Edge],
    pos: &[[f32; 4]],
    frames: &mut [EdgeFrame],
    theta_start: &mut [f32],
    edge_bends: &[[u32; 2]],
    bend_rest: &[BendRest],
    rest_start: &mut [BendRest],
) {
    let ne = params.num_edges as usize;
    for eb in &edge_bends[..ne] {
        if eb[0] != NONE {
            rest_start[eb[0] as usize] = bend_rest[eb[0] as usize];
        }
    }
    frames[..ne]
        .par_iter_mut()
        .with_min_len(PAR_MIN)
        .zip(edges.par_iter())
        .zip(theta_start[..ne].par_iter_mut())
        .for_each(|((f, e), th)| {
            let (u, t) = transport_frame(
                V3::<f32>::from4(f.u),
                V3::from4(f.t),
                V3::from4(pos[e.a as usize]),
                V3::from4(pos[e.b as usize]),
            );
            f.u = u.to4(f.u[3]);
            f.t = t.to4(0.0);
            *th = f.u[3];
        });
}

/// One bending element after its edges' frames were transported: the new reference twist ψ
/// (accumulated from `previous`, see [`reference_twist`]), κb at the current positions and
/// `l̄ = l₀ + l₁`.
#[inline]
pub fn twist_and_binormal<T: Real>(
    b: &Bend,
    previous: T,
    frames: &[EdgeFrame],
    pos: &[[f32; 4]],
) -> (T, V3<T>, T) {
    let f0 = &frames[b.e[0] as usize];
    let f1 = &frames[b.e[1] as usize];
    let psi = reference_twist(
        V3::<T>::from4(f0.u),
        V3::from4(f0.t),
        V3::from4(f1.u),
        V3::from4(f1.t),
        previous,
    );
    let x0 = V3::<T>::from4(pos[b.v[0] as usize]);
    let x1 = V3::<T>::from4(pos[b.v[1] as usize]);
    let x2 = V3::<T>::from4(pos[b.v[2] as usize]);
    let c = |x: f32| T::from_f64(x as f64);
    let (l0, l1) = (c(b.rest_len[0]), c(b.rest_len[1]));
    let (kb, _) = curvature_binormal(x1 - x0, x2 - x1, l0, l1);
    (psi, kb, l0 + l1)
}

/// Kernel `bend_twist` (second stage of `material_frames`): per bending element, the reference twist
/// ψ in `bend_rest` and κb (xyz, w = l̄) in `bend_kb` ([`twist_and_binormal`]).
pub fn bend_twist(
    params: &Params,
    bends: &[Bend],
    frames: &[EdgeFrame],
    pos: &[[f32; 4]],
    bend_rest: &mut [BendRest],
    bend_kb: &mut [[f32; 4]],
) {
    let nb = params.num_bends as usize;
    bend_rest[..nb]
        .par_iter_mut()
        .with_min_len(PAR_MIN)
        .zip(bends.par_iter().zip(bend_kb.par_iter_mut()))
        .for_each(|(r, (b, kb))| {
            let (psi, k, lbar) = twist_and_binormal::<f32>(b, r.ref_twist, frames, pos);
            r.ref_twist = psi;
            *kb = k.to4(lbar);
        });
}

/// Kernel `theta_sweep` (third stage of `material_frames`, dispatched `frame_sweeps` × 3 times, one
/// colour each): the safeguarded Newton step ([`theta_newton_step`]) of the material angle of every
/// edge `edge_order[first .. first + count]` of the colour `color_range`, written to the same slots of
/// `theta_step` and added to θ (`frames[e].u[3]`). Edges of one colour share no bending element, so
/// each step reads only its own θ and those of other colours: computing all steps first and then
/// applying them (here) equals updating in place (the kernel).
#[allow(clippy::too_many_arguments)]
pub fn theta_sweep(
    params: &Params,
    color_range: &ColorRange,
    bends: &[Bend],
    bend_rest: &[BendRest],
    bend_kb: &[[f32; 4]],
    edge_bends: &[[u32; 2]],
    edge_order: &[u32],
    theta_step: &mut [f32],
    frames: &mut [EdgeFrame],
) {
    let k = Stiffness {
        bending: params.bending,
        twisting: params.twisting,
    };
    let first = color_range.first as usize;
    let range = first..first + color_range.count as usize;
    let order = &edge_order[range.clone()];
    let steps = &mut theta_step[range];
    let fr = &*frames;
    steps
        .par_iter_mut()
        .with_min_len(PAR_MIN)
        .zip(order.par_iter())
        .for_each(|(step, &e)| {
            *step = theta_newton_step(&k, bends, bend_rest, bend_kb, edge_bends, fr, e as usize)
        });
    for (&e, &s) in order.iter().zip(steps.iter()) {
        frames[e as usize].u[3] += s;
    }
}

/// Slots of one tile of [`frame_solve`]: the threads of its workgroup.
pub const FRAME_TILE: usize = 256;
/// Most `frame_sweeps` [`frame_tiles`] builds tiles for: their halos are `3 · sweeps` edges on each
/// side, so a long yarn's tile keeps at least `256 − 6 · 32 = 64` edges of its own. Beyond, the GPU
/// step dispatches [`bend_twist`], [`theta_sweep`] per colour and [`plasticity`] instead.
pub const FRAME_SOLVE_MAX_SWEEPS: u32 = 32;
/// A tile slot's field for "no slot": its element's other edge is not in the tile.
pub const FRAME_NO_SLOT: u32 = 0x1ff;
/// Flag of a tile slot whose edge the tile owns (writes back).
pub const FRAME_OWNED: u32 = 1 << 20;
/// Flag of a tile slot whose edge has an element whose other edge is not in the tile: its angle is
/// not solved there (it stays at its start), which only tiles' halos have.
pub const FRAME_FROZEN: u32 = 1 << 21;

/// The tiles of [`frame_solve`] for a rod with `sweeps` sweeps per step, or `None` without sweeps
/// or beyond [`FRAME_SOLVE_MAX_SWEEPS`]. [`FRAME_TILE`] slots per tile, one `[u32; 4]` each:
/// `[edge, element where it is e¹, element where it is e⁰, packed]` ([`NONE`] for an empty slot or
/// a missing element), `packed` = the slot of the first element's `e⁰` (bits 0–8) and of the
/// second's `e¹` (bits 9–17; [`FRAME_NO_SLOT`] when not in the tile), the edge's colour (bits 18–19),
/// [`FRAME_OWNED`] and [`FRAME_FROZEN`].
///
/// A yarn of at most [`FRAME_TILE`] edges goes whole into one tile (several share one while they
/// fit), owned and solved there exactly (a closed one's last element joins its last and first edge,
/// both in the tile). A longer yarn is cut into runs of `256 − 2 h` edges along it (`h = 3 · sweeps`),
/// each in a tile of its own with `h` edges either side (around the ring, for a closed yarn) that the
/// tile solves too but does not own. A colour step changes an edge from its neighbours' angles only,
/// so a wrong angle (a halo end's, frozen) spreads one edge per step at most: after the `3 · sweeps`
/// colour steps the owned run, `h` edges in, still has exactly the angles the sweeps over the whole
/// rod give (`frame_solve`'s twin test checks this bit for bit on open and closed yarns). Each
/// element is the `e¹` element of one edge, and the tile that owns that edge writes it. `None` also
/// without sweeps (no halo: an owned edge's `e⁰` could be out of its tile).
pub fn frame_tiles(
    topo: &Topology,
    bends: &[Bend],
    edge_bends: &[[u32; 2]],
    edge_order: &[u32],
    color_start: &[u32; 4],
    sweeps: u32,
) -> Option<Vec<[u32; 4]>> {
    if sweeps == 0 || sweeps > FRAME_SOLVE_MAX_SWEEPS {
        return None;
    }
    let mut colour = vec![0u32; edge_bends.len()];
    for c in 0..3 {
        for &e in &edge_order[color_start[c] as usize..color_start[c + 1] as usize] {
            colour[e as usize] = c as u32;
        }
    }
    let h = 3 * sweeps as usize;
    let run = FRAME_TILE - 2 * h;
    // Tiles as lists of (edge, owned), then packed into slots.
    let mut tiles: Vec<Vec<(u32, bool)>> = Vec::new();
    for y in &topo.yarns {
        let (fe, n) = (y.first_edge as usize, y.num_edges as usize);
        if n <= FRAME_TILE {
            if tiles.last().is_none_or(|t| t.len() + n > FRAME_TILE) {
                tiles.push(Vec::with_capacity(FRAME_TILE));
            }
            let t = tiles.last_mut().expect("a tile");
            t.extend((fe..fe + n).map(|e| (e as u32, true)));
            continue;
        }
        let closed = y.closed != 0;
        for a in (0..n).step_by(run) {
            let b = (a + run).min(n);
            let (lo, hi) = if closed {
                (a as isize - h as isize, (b + h) as isize)
            } else {
                (a.saturating_sub(h) as isize, (b + h).min(n) as isize)
            };
            // A ring longer than a tile never wraps onto itself within one: hi − lo ≤ 256 < n.
            let t = (lo..hi)
                .map(|r| {
                    let rel = r.rem_euclid(n as isize) as usize;
                    ((fe + rel) as u32, (a..b).contains(&rel))
                })
                .collect();
            tiles.push(t);
        }
    }
    let mut slots = Vec::with_capacity(tiles.len() * FRAME_TILE);
    for t in &tiles {
        let slot_of: std::collections::HashMap<u32, u32> = t
            .iter()
            .enumerate()
            .map(|(j, &(e, _))| (e, j as u32))
            .collect();
        for &(e, owned) in t {
            let eb = edge_bends[e as usize];
            let mut frozen = false;
            // Side 0: the other edge is the element's e⁰; side 1: its e¹.
            let other: [u32; 2] = std::array::from_fn(|side| {
                let bi = eb[side];
                if bi == NONE {
                    return FRAME_NO_SLOT;
                }
                let o = bends[bi as usize].e[side];
                match slot_of.get(&o) {
                    Some(&j) => j,
                    None => {
                        frozen = true;
                        FRAME_NO_SLOT
                    }
                }
            });
            // An owned edge's e¹ element gets its plasticity in the tile, from its e⁰'s angle
            // there: a halo of at least one edge (one sweep) keeps e⁰ in the tile.
            if owned && eb[0] != NONE && other[0] == FRAME_NO_SLOT {
                return None;
            }
            let packed = other[0]
                | (other[1] << 9)
                | (colour[e as usize] << 18)
                | if owned { FRAME_OWNED } else { 0 }
                | if frozen { FRAME_FROZEN } else { 0 };
            slots.push([e, eb[0], eb[1], packed]);
        }
        slots.resize(
            slots.len().div_ceil(FRAME_TILE) * FRAME_TILE,
            [NONE, NONE, NONE, 0],
        );
    }
    Some(slots)
}

/// Kernel `frame_solve` (`material_frames` after [`frame_transport`] on the GPU, one dispatch
/// instead of [`bend_twist`], `frame_sweeps` × 3 of [`theta_sweep`] and [`plasticity`]): the same
/// stages from the rest states `rest_start` and the angles `theta_start` that `frame_transport`
/// copied, the sweeps within each tile of [`frame_tiles`] (a workgroup each, the angles in
/// workgroup memory). Each tile writes the θ of the edges it owns and the rest state and κb of
/// their `e¹` elements. The result is the stages' over the whole rod, bit for bit (see
/// [`frame_tiles`]); `theta_step` is not written.
#[allow(clippy::too_many_arguments)]
pub fn frame_solve(
    params: &Params,
    frame_tiles: &[[u32; 4]],
    bends: &[Bend],
    pos: &[[f32; 4]],
    theta_start: &[f32],
    rest_start: &[BendRest],
    frames: &mut [EdgeFrame],
    bend_rest: &mut [BendRest],
    bend_kb: &mut [[f32; 4]],
) {
    let nb = params.num_bends as usize;
    bend_rest[..nb].copy_from_slice(&rest_start[..nb]);
    bend_twist(params, bends, frames, pos, bend_rest, bend_kb);
    tile_sweeps(params, frame_tiles, bend_rest, bend_kb, theta_start, frames);
    plasticity(params, bends, frames, bend_kb, bend_rest);
}

/// The sweeps of [`frame_solve`], tile by tile: each tile's angles from `theta_start`, the
/// colour steps within it, and θ of the edges it owns written to `frames`.
fn tile_sweeps(
    params: &Params,
    frame_tiles: &[[u32; 4]],
    bend_rest: &[BendRest],
    bend_kb: &[[f32; 4]],
    theta_start: &[f32],
    frames: &mut [EdgeFrame],
) {
    let k = Stiffness {
        bending: params.bending,
        twisting: params.twisting,
    };
    let fr = &*frames;
    let solved: Vec<(u32, f32)> = frame_tiles
        .par_chunks(FRAME_TILE)
        .flat_map_iter(|tile| {
            let mut theta: Vec<f32> = tile
                .iter()
                .map(|w| {
                    if w[0] == NONE {
                        0.0
                    } else {
                        theta_start[w[0] as usize]
                    }
                })
                .collect();
            for _ in 0..params.frame_sweeps {
                for c in 0..3 {
                    // Slots of one colour share no element: in place equals all at once.
                    for (j, w) in tile.iter().enumerate() {
                        if w[0] == NONE || w[3] & FRAME_FROZEN != 0 || (w[3] >> 18) & 3 != c {
                            continue;
                        }
                        let own = theta[j];
                        let other = [w[3] & FRAME_NO_SLOT, (w[3] >> 9) & FRAME_NO_SLOT];
                        let sides: [Option<ThetaSide>; 2] = std::array::from_fn(|side| {
                            let bi = w[1 + side];
                            (bi != NONE).then(|| {
                                let o = theta[other[side] as usize];
                                let th = if side == 0 { [o, own] } else { [own, o] };
                                (&bend_rest[bi as usize], bend_kb[bi as usize], th)
                            })
                        });
                        let step: f32 = theta_newton_step_of(&k, &fr[w[0] as usize], own, sides);
                        theta[j] = own + step;
                    }
                }
            }
            tile.iter()
                .zip(theta)
                .filter(|(w, _)| w[0] != NONE && w[3] & FRAME_OWNED != 0)
                .map(|(w, t)| (w[0], t))
                .collect::<Vec<_>>()
        })
        .collect();
    for (e, t) in solved {
        frames[e as usize].u[3] = t;
    }
}

/// The safeguarded Newton step of the material angle of edge `e` (see [`material_frames`]): the
/// derivatives of the energy of its (one or two) bending elements in θ, from the κb and l̄ of
/// `bend_kb`, the side where the edge is `e¹` first.
pub fn theta_newton_step<T: Real>(
    k: &Stiffness<T>,
    bends: &[Bend],
    bend_rest: &[BendRest],
    bend_kb: &[[f32; 4]],
    edge_bends: &[[u32; 2]],
    frames: &[EdgeFrame],
    e: usize,
) -> T {
    let sides = edge_bends[e].map(|bi| {
        (bi != NONE).then(|| {
            let b = &bends[bi as usize];
            let theta = b.e.map(|x| frames[x as usize].u[3]);
            (&bend_rest[bi as usize], bend_kb[bi as usize], theta)
        })
    });
    theta_newton_step_of(k, &frames[e], frames[e].u[3], sides)
}

/// One side of an edge's Newton step ([`theta_newton_step_of`]): its element's rest state, its κb
/// and l̄ (`bend_kb`), and the angles of the element's edges `e⁰`, `e¹`.
pub type ThetaSide<'a> = (&'a BendRest, [f32; 4], [f32; 2]);

/// [`theta_newton_step`] of an edge with frame `f` (its θ taken from `theta`, not from `f`) and, per
/// side (0: the element where the edge is `e¹`, 1: where it is `e⁰`), the element's rest state, its
/// κb and l̄, and the angles of its edges `e⁰`, `e¹`: what [`frame_solve`] has of them in a tile.
pub fn theta_newton_step_of<T: Real>(
    k: &Stiffness<T>,
    f: &EdgeFrame,
    theta: f32,
    sides: [Option<ThetaSide<'_>>; 2],
) -> T {
    let c = |x: f32| T::from_f64(x as f64);
    let (m1, m2) = material_frame(V3::from4(f.t), V3::from4(f.u), c(theta));
    let (mut g, mut h, mut ht) = (T::zero(), T::zero(), T::zero());
    for (side, s) in sides.iter().enumerate() {
        let Some((r, kb, th)) = s else {
            continue;
        };
        // side 0: this edge is e¹ of the element; side 1: it is e⁰.
        let role = 1 - side;
        let twist = c(th[1]) - c(th[0]) + c(r.ref_twist);
        let (gr, hs, tw) = theta_terms(
            k,
            V3::from4(*kb),
            m1,
            m2,
            [c(r.kappa[role][0]), c(r.kappa[role][1])],
            c(kb[3]),
            twist - c(r.twist),
            role,
        );
        g += gr;
        h += hs;
        ht += tw;
    }
    newton_angle_step(g, h, ht)
}

/// NaN is the one value unequal to itself ([`Real`] has no `is_nan`).
#[inline]
#[allow(clippy::eq_op)]
fn is_nan<T: Real>(x: T) -> bool {
    x != x
}

/// One safeguarded Newton step `−g/h` for a material angle: where bending makes the curvature small
/// or negative, fall back to the (positive) twisting part or `|h|`; never turn more than one radian.
/// (Written with comparisons only, so the f32 instantiation is exactly `f32::max` and `f32::clamp`,
/// NaN cases included, and the kernel can spell out the same selections.)
#[inline]
pub fn newton_angle_step<T: Real>(g: T, h: T, ht: T) -> T {
    let h = if h > T::from_f64(0.5) * ht {
        h
    } else {
        // f32::max: the other operand when one is NaN.
        let ah = h.abs();
        if ah > ht || is_nan(ht) {
            ah
        } else {
            ht
        }
    };
    if is_nan(h) || h <= T::zero() || g == T::zero() {
        return T::zero();
    }
    let mut s = -g / h;
    if s < -T::one() {
        s = -T::one();
    }
    if s > T::one() {
        s = T::one();
    }
    s
}

/// One rest curvature `ω̄` after plastic flow (seed §3.1): dragged to within `p_plastic` of the
/// current `ω`, then bounded by `max(p_max, kappa_start)`. Infinite bounds never act (the
/// comparisons never hold).
///
/// `kappa_start` is the element's `|ω̄|` at the start ([`BendRest::kappa_start`]). The seed's `p_max`
/// is the largest curvature *plasticity* may reach; an imported model whose own bends are sharper
/// (coarse control polygons turn by 100°–120° at a point, `|κb| = 2 tan(φ/2)` above the default 2.5)
/// would otherwise have them clipped at the first step, and a model at rest would spring into
/// motion at the first step (measured: 10.8 cm/s after 200 steps on a coil of 3 points per turn).
/// Bounding by the larger of the two keeps the imported shape as the rest shape and still stops
/// plastic flow from bending any element beyond both.
#[inline]
pub fn plastic_kappa<T: Real>(kappa: [T; 2], w: [T; 2], pp: T, pm: T, kappa_start: T) -> [T; 2] {
    let pm = if kappa_start > pm { kappa_start } else { pm };
    let mut k = kappa;
    let d = [k[0] - w[0], k[1] - w[1]];
    let dn = (d[0] * d[0] + d[1] * d[1]).sqrt();
    if dn > pp {
        let s = pp / dn;
        k = [w[0] + d[0] * s, w[1] + d[1] * s];
    }
    let kn = (k[0] * k[0] + k[1] * k[1]).sqrt();
    if kn > pm {
        let s = pm / kn;
        k = [k[0] * s, k[1] * s];
    }
    k
}

/// Both rest curvatures of one bending element after plastic flow: `ωʲ = (κb·m₂ʲ, −κb·m₁ʲ)` from the
/// κb of `bend_kb` and the material frame of edge `j`, then [`plastic_kappa`].
#[inline]
pub fn plastic_rest<T: Real>(
    b: &Bend,
    r: &BendRest,
    frames: &[EdgeFrame],
    kb: [f32; 4],
    pp: T,
    pm: T,
) -> [[T; 2]; 2] {
    let c = |x: f32| T::from_f64(x as f64);
    let kb = V3::<T>::from4(kb);
    std::array::from_fn(|j| {
        let f = &frames[b.e[j] as usize];
        let (m1, m2) = material_frame(V3::from4(f.t), V3::from4(f.u), c(f.u[3]));
        let w = [kb.dot(m2), -kb.dot(m1)];
        plastic_kappa(
            [c(r.kappa[j][0]), c(r.kappa[j][1])],
            w,
            pp,
            pm,
            c(r.kappa_start),
        )
    })
}

/// Kernel `plasticity`: drag each rest curvature to within `p_plastic` of the current one, then bound
/// it by `max(p_max, kappa_start)` (seed §3.1, [`plastic_rest`]). Runs right after `material_frames`, with its frames and
/// the κb it left in `bend_kb` (the positions have not moved since). Does nothing when both bounds are
/// infinite (the kernel returns at once too).
pub fn plasticity(
    params: &Params,
    bends: &[Bend],
    frames: &[EdgeFrame],
    bend_kb: &[[f32; 4]],
    bend_rest: &mut [BendRest],
) {
    let (pp, pm) = (params.plastic_radius, params.plastic_max);
    if pp.is_infinite() && pm.is_infinite() {
        return;
    }
    let nb = params.num_bends as usize;
    bend_rest[..nb]
        .par_iter_mut()
        .with_min_len(PAR_MIN)
        .zip(bends.par_iter().zip(bend_kb.par_iter()))
        .for_each(|(r, (b, &kb))| {
            r.kappa = plastic_rest::<f32>(b, r, frames, kb, pp, pm);
        });
}
