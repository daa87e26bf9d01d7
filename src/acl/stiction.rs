//! Stiction springs (stage `stiction_forces`): four per contact set, between the member pairs at the
//! fixed fractions (¼, ¾) × (¼, ¾) of the set's box.
//!
//! A spring holds the two quadrature points at a rest offset `d0` given in the set's rotating
//! frame: `E = ½ k |y_i − y_j − R d0|²` (a plain rest-*length* spring would resist sliding only to
//! second order). When its energy exceeds `contact.stiction_break_energy` it breaks and is re-made
//! at the current offset. Springs are (re)made when the set is rebuilt ([`springs_make`], called by
//! `set_rebuild`). `k = 0` disables them.
//!
//! The force is the energy's gradient with `R` too taken as the function of the set's points it
//! is (the polar factor of `F = Σ_i (q_i − c) d̄_iᵀ`, [`super::model::set_rotation`]): besides
//! `−k x` at `y_i` and `+k x` at `y_j` (`x = y_i − y_j − R d0`), every point of the set gets
//! `Ω × (R d̄_i)`, where `H Ω = τ`, `τ = Σ_springs k (R d0) × x` and `H = R (tr S · I − S) Rᵀ`
//! (`F = R S`; [`crate::polar`]'s Newton Hessian at the polar factor). Why: a turn `δθ` of the set's
//! frame moves `R d0` by `δθ × R d0` and is made by `H δθ = Σ_i (R d̄_i) × δq_i`. Without that term
//! the two forces of a spring are opposite but not collinear: each stretched spring was a couple
//! `−k d × x` on the cloth, which spun up a free cloth in zero gravity and gave it energy (an audit
//! measured its kinetic energy rising 250-fold in 11 frames with `k = 1000`). With it the springs'
//! forces have no net force (`Σ_i d̄_i = 0`) nor torque (`Σ_i r_i × (Ω × R d̄_i) = H Ω = τ`, which
//! cancels the couple). A set whose `H` is not positive definite (all its points on a line) gets
//! no such term.
//!
//! `stiction_forces` reads the `acl` uniform (stiffness, break energy, quadrature weights), the
//! positions, the segments' control points (`seg_cp`), the set headers (rotation), `cp_pool` and
//! `dbar_pool` (the reference offsets `d̄_i`); it writes the springs (a broken spring's new rest
//! offset)
//! and adds each spring's force into its set's range of `fout_pool`: both quadrature points of a
//! spring lie in the set's box, so the 4 + 4 control points it pulls on are among the set's. The
//! force then reaches the control points with the set's own force, through the gather
//! ([`super::gather`]). Sets are independent and run in parallel (one GPU thread per set); within a
//! set the springs add in order, and each spring its 4 `i`-side and 4 `j`-side terms alternately,
//! slot by slot, each at its control point's place in the set's sorted `cp_pool` range (binary
//! search; a point not found adds at place 0, as it cannot happen for a member pair).

use super::rebuild::RebuildTables;
use super::sets::{in_box, ContactSet, SET_LIVE};
use super::SyncPtr;
use crate::layout::AclUniform;
use crate::math::{M3, V3};
use crate::polar::{ascent_terms, quat_to_matrix, solve_spd};
use bytemuck::{Pod, Zeroable};
use rayon::prelude::*;

/// Spring flag: active.
pub const SPRING_ACTIVE: u32 = 1;

/// Sets per task of the parallel `stiction_forces` stage.
const STICTION_TASK: usize = 256;

/// A stiction spring between quadrature points `i < j`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Pod, Zeroable)]
pub struct StictionSpring {
    pub i: u32,
    pub j: u32,
    pub flags: u32,
    pub _pad: u32,
    /// Rest offset `d0` of `y_i − y_j` in the set's reference frame (w unused).
    pub rest: [f32; 4],
}
const _: () = assert!(std::mem::size_of::<StictionSpring>() == 32);

/// The 4 springs of a set with box `bx` at the fixed box fractions, at the current offsets (the set's
/// reference frame is the current one: called right after a rebuild). A spring whose pair is not a
/// member (below the diagonal, or excluded) is inactive.
pub fn springs_make(
    bx: &[u32; 4],
    t: &RebuildTables<'_>,
    pos: &[[f32; 4]],
    b: u32,
) -> [StictionSpring; 4] {
    let mut out = [StictionSpring::default(); 4];
    for (n, (fu, fv)) in [(0.25f32, 0.25f32), (0.25, 0.75), (0.75, 0.25), (0.75, 0.75)]
        .into_iter()
        .enumerate()
    {
        let i = bx[0] + ((bx[1] - bx[0]) as f32 * fu).round() as u32;
        let j = bx[2] + ((bx[3] - bx[2]) as f32 * fv).round() as u32;
        let ok = in_box(bx, i, j) && !t.excl.excluded(i / b, i % b, j / b, j % b);
        let d = if ok {
            t.quad_point(pos, b, i) - t.quad_point(pos, b, j)
        } else {
            V3::zero()
        };
        out[n] = StictionSpring {
            i,
            j,
            flags: if ok { SPRING_ACTIVE } else { 0 },
            _pad: 0,
            rest: d.to4(0.0),
        };
    }
    out
}

/// Quadrature point `i` from the segments' control points and the basis weights (the arithmetic
/// of [`RebuildTables::quad_point`]).
#[inline]
fn quad_point(p: &AclUniform, pos: &[[f32; 4]], seg_cp: &[[u32; 4]], i: u32) -> V3<f32> {
    let b = p.quadrature;
    let cp = &seg_cp[(i / b) as usize];
    let w = &p.weights[(i % b) as usize];
    let q = cp.map(|c| V3::<f32>::from4(pos[c as usize]));
    q[0] * w[0] + q[1] * w[1] + q[2] * w[2] + q[3] * w[3]
}

/// The place of control point `c` in a set's sorted points `cps` (0 when absent).
#[inline]
fn local(cps: &[u32], c: u32) -> usize {
    cps.binary_search(&c).unwrap_or(0)
}

/// One spring of a set of rotation `rot` whose points are `cps`: a broken spring is re-made (its new
/// rest offset) and gives `None`; an intact one adds its forces at its quadrature points into `fout`
/// and gives its torque on the set's frame, `k (R d0) × x` (see the module doc).
#[allow(clippy::too_many_arguments)]
pub fn spring_force(
    p: &AclUniform,
    pos: &[[f32; 4]],
    seg_cp: &[[u32; 4]],
    rot: &M3<f32>,
    cps: &[u32],
    sp: &mut StictionSpring,
    fout: &mut [[f32; 4]],
) -> Option<V3<f32>> {
    let b = p.quadrature;
    let d = quad_point(p, pos, seg_cp, sp.i) - quad_point(p, pos, seg_cp, sp.j);
    let rd0 = rot.mul_v(V3::from4(sp.rest));
    let x = d - rd0;
    let energy = 0.5 * p.stiction_stiffness * x.norm2();
    if energy > p.stiction_break_energy {
        // Broken: re-made at the current offset (in the set's reference frame).
        sp.rest = rot.transpose().mul_v(d).to4(0.0);
        return None;
    }
    // Force on y_i is −k x, on y_j +k x, spread through the basis weights.
    let g = x * p.stiction_stiffness;
    let (si, sj) = (&seg_cp[(sp.i / b) as usize], &seg_cp[(sp.j / b) as usize]);
    let (wi, wj) = (
        p.weights[(sp.i % b) as usize],
        p.weights[(sp.j % b) as usize],
    );
    for m in 0..4 {
        let (li, lj) = (local(cps, si[m]), local(cps, sj[m]));
        fout[li] = (V3::from4(fout[li]) + g * (-wi[m])).to4(0.0);
        fout[lj] = (V3::from4(fout[lj]) + g * wj[m]).to4(0.0);
    }
    Some(rd0.cross(g))
}

/// The springs' pull through the set's rotation (see the module doc): with the set's points `cps`,
/// reference offsets `dbar` and rotation `rot`, and `torque` the sum of its intact springs'
/// torques, adds `Ω × (R d̄_i)` into `fout[i]`, `H Ω = τ`. Nothing for a set whose `H` is not
/// positive definite (its points on a line) or whose `F` is zero.
pub fn rotation_term(
    pos: &[[f32; 4]],
    cps: &[u32],
    dbar: &[[f32; 4]],
    rot: &M3<f32>,
    torque: V3<f32>,
    fout: &mut [[f32; 4]],
) {
    let n = cps.len();
    let mut c = V3::<f32>::zero();
    for &p in cps {
        c += V3::from4(pos[p as usize]);
    }
    c = c / n.max(1) as f32;
    let mut f = M3::<f32>::zero();
    for (&p, d) in cps.iter().zip(dbar) {
        f = f.add_m(&(V3::<f32>::from4(pos[p as usize]) - c).outer(V3::from4(*d)));
    }
    let (_, h) = ascent_terms(rot, &f);
    let Some(omega) = solve_spd(&h, torque, f.norm()) else {
        return;
    };
    for (o, d) in fout[..n].iter_mut().zip(dbar) {
        *o = (V3::from4(*o) + omega.cross(rot.mul_v(V3::from4(*d)))).to4(0.0);
    }
}

/// Stage `stiction_forces` (see the module doc; kernel and CPU step alike): springs
/// `springs[4k..4k + 4]` of every live set `k` of `sets`. `fout_pool` must hold every live set's
/// force for this step.
#[allow(clippy::too_many_arguments)]
pub fn stiction_forces(
    acl: &AclUniform,
    pos: &[[f32; 4]],
    seg_cp: &[[u32; 4]],
    sets: &[ContactSet],
    cp_pool: &[u32],
    dbar_pool: &[[f32; 4]],
    springs: &mut [StictionSpring],
    fout_pool: &mut [[f32; 4]],
) {
    let fp = SyncPtr::new(fout_pool);
    sets.par_iter()
        .zip(springs.par_chunks_mut(4))
        .with_min_len(STICTION_TASK)
        .for_each(|(s, springs)| {
            if s.flags & SET_LIVE == 0 {
                return;
            }
            let (o, n) = (s.cp_off as usize, s.n_cp as usize);
            let cps = &cp_pool[o..o + n];
            // SAFETY: live sets own disjoint ranges of the point pools (and `fout_pool` is as long).
            let fout = unsafe { fp.slice(o, n) };
            let rot = quat_to_matrix(s.quat);
            let mut torque = None;
            for sp in springs.iter_mut() {
                if sp.flags & SPRING_ACTIVE != 0 {
                    if let Some(t) = spring_force(acl, pos, seg_cp, &rot, cps, sp, fout) {
                        torque = Some(torque.unwrap_or(V3::zero()) + t);
                    }
                }
            }
            if let Some(t) = torque {
                rotation_term(pos, cps, &dbar_pool[o..o + n], &rot, t, fout);
            }
        });
}
