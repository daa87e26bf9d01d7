//! Stiction springs (seed §5.3): four per contact set at fixed places inside its box, broken and
//! re-made when their energy passes a threshold.

use super::sets::in_box;
use super::{AclContact, SET_LIVE};
use crate::math::V3;
use crate::polar::quat_to_matrix;
use crate::state::Topology;
use bytemuck::{Pod, Zeroable};

/// Spring flag: active.
pub const SPRING_ACTIVE: u32 = 1;

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

impl AclContact {
    /// (Re)makes the 4 stiction springs of set `k` at the fixed box fractions, at the current offsets
    /// (the set's reference frame is the current one: called right after a rebuild).
    pub(crate) fn make_springs(&mut self, k: usize, topo: &Topology, pos: &[[f32; 4]]) {
        let bx = self.sets[k].bx;
        let b = self.b;
        for (n, (fu, fv)) in [(0.25f32, 0.25f32), (0.25, 0.75), (0.75, 0.25), (0.75, 0.75)]
            .into_iter()
            .enumerate()
        {
            let i = bx[0] + ((bx[1] - bx[0]) as f32 * fu).round() as u32;
            let j = bx[2] + ((bx[3] - bx[2]) as f32 * fv).round() as u32;
            let ok = in_box(&bx, i, j) && !self.excl.excluded(i / b, i % b, j / b, j % b);
            let d = if ok {
                self.quad_point(topo, pos, i) - self.quad_point(topo, pos, j)
            } else {
                V3::zero()
            };
            self.springs[4 * k + n] = StictionSpring {
                i,
                j,
                flags: if ok { SPRING_ACTIVE } else { 0 },
                _pad: 0,
                rest: d.to4(0.0),
            };
        }
    }

    pub(crate) fn stiction_forces(
        &mut self,
        topo: &Topology,
        pos: &[[f32; 4]],
        force: &mut [[f32; 4]],
    ) {
        let kst = self.params.stiction_stiffness;
        if kst <= 0.0 {
            return;
        }
        let b = self.b;
        for k in 0..self.sets.len() {
            if self.sets[k].flags & SET_LIVE == 0 {
                continue;
            }
            let rot = quat_to_matrix(self.sets[k].quat);
            for n in 0..4 {
                let sp = self.springs[4 * k + n];
                if sp.flags & SPRING_ACTIVE == 0 {
                    continue;
                }
                let d = self.quad_point(topo, pos, sp.i) - self.quad_point(topo, pos, sp.j);
                let x = d - rot.mul_v(V3::from4(sp.rest));
                let energy = 0.5 * kst * x.norm2();
                if energy > self.params.stiction_break_energy {
                    // Broken: re-made at the current offset (in the set's reference frame).
                    self.springs[4 * k + n].rest = rot.transpose().mul_v(d).to4(0.0);
                    continue;
                }
                // Force on y_i is −k x, on y_j +k x, spread through the basis weights.
                let g = x * kst;
                let (si, sj) = (
                    &topo.segments[(sp.i / b) as usize],
                    &topo.segments[(sp.j / b) as usize],
                );
                let (wi, wj) = (
                    self.table.weights[(sp.i % b) as usize],
                    self.table.weights[(sp.j % b) as usize],
                );
                for m in 0..4 {
                    let fi = g * (-wi[m]);
                    let fj = g * wj[m];
                    let (pi, pj) = (si.cp[m] as usize, sj.cp[m] as usize);
                    for a in 0..3 {
                        force[pi][a] += fi.get(a);
                        force[pj][a] += fj.get(a);
                    }
                }
            }
        }
    }
}
