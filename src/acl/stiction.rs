//! Stiction springs (stage `stiction_forces`): four per contact set, between the member pairs at the
//! fixed fractions (¼, ¾) × (¼, ¾) of the set's box.
//!
//! A spring holds the two quadrature points at a rest offset `d0` given in the set's rotating
//! frame: `E = ½ k |y_i − y_j − R d0|²` (a plain rest-*length* spring would resist sliding only to
//! second order). When its energy exceeds `contact.stiction_break_energy` it breaks and is re-made
//! at the current offset. Springs are (re)made when the set is rebuilt ([`springs_make`], called by
//! `set_rebuild`). `k = 0` disables them.
//!
//! `stiction_forces` reads the positions, the quadrature weights, the segments' control points, the
//! set headers (rotation) and `cp_pool`; it writes the springs (a broken spring's new rest offset)
//! and adds each spring's force into its set's range of `fout_pool`: both quadrature points of a
//! spring lie in the set's box, so the 4 + 4 control points it pulls on are among the set's. The
//! force then reaches the control points with the set's own force, through the gather
//! ([`super::gather`]). Sets are independent and run in parallel; within a set the springs add in
//! order, and each spring its 4 `i`-side and 4 `j`-side terms alternately, slot by slot.

use super::rebuild::RebuildTables;
use super::sets::{in_box, ContactSet, SET_LIVE};
use super::SyncPtr;
use crate::math::V3;
use crate::polar::quat_to_matrix;
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

/// The constants of `stiction_forces`.
#[derive(Clone, Copy, Debug)]
pub struct StictionParams {
    /// Quadrature points per segment.
    pub b: u32,
    /// Spring stiffness `k`.
    pub stiffness: f32,
    /// Energy beyond which a spring breaks.
    pub break_energy: f32,
}

/// Stage `stiction_forces` (see the module doc): springs `springs[4k..4k + 4]` of every live set `k`
/// of `sets`. `fout_pool` must hold every live set's force for this step.
#[allow(clippy::too_many_arguments)]
pub fn stiction_forces(
    p: &StictionParams,
    pos: &[[f32; 4]],
    t: RebuildTables<'_>,
    sets: &[ContactSet],
    cp_pool: &[u32],
    springs: &mut [StictionSpring],
    fout_pool: &mut [V3<f32>],
) {
    let fp = SyncPtr::new(fout_pool);
    let b = p.b;
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
            for sp in springs.iter_mut() {
                if sp.flags & SPRING_ACTIVE == 0 {
                    continue;
                }
                let d = t.quad_point(pos, b, sp.i) - t.quad_point(pos, b, sp.j);
                let x = d - rot.mul_v(V3::from4(sp.rest));
                let energy = 0.5 * p.stiffness * x.norm2();
                if energy > p.break_energy {
                    // Broken: re-made at the current offset (in the set's reference frame).
                    sp.rest = rot.transpose().mul_v(d).to4(0.0);
                    continue;
                }
                // Force on y_i is −k x, on y_j +k x, spread through the basis weights.
                let g = x * p.stiffness;
                let (si, sj) = (
                    &t.seg_cp[(sp.i / b) as usize],
                    &t.seg_cp[(sp.j / b) as usize],
                );
                let (wi, wj) = (
                    t.weights[(sp.i % b) as usize],
                    t.weights[(sp.j % b) as usize],
                );
                for m in 0..4 {
                    let li = cps.binary_search(&si[m]).unwrap_or(0);
                    let lj = cps.binary_search(&sj[m]).unwrap_or(0);
                    fout[li] += g * (-wi[m]);
                    fout[lj] += g * wj[m];
                }
            }
        });
}
