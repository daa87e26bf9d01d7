//! What ACL shows to the outside beyond its force: the per-segment count of contact-set rebuilds (the
//! red of the seed's Figures 1 and 8, `--color updates`) and the touching pairs with the contact-set
//! boxes (the seed's Figure 2, `--contact-matrix`). Reads the set headers (`sets`: box, flags,
//! `rebuilt_step`) and the step counter; nothing here runs unless the driver asks for it.
//!
//! *Rebuilds.* After a step, every live set whose `rebuilt_step` is that step was rebuilt in it (new,
//! merged, invalidated, or grown). Each segment holding quadrature points of the set's box (its
//! `u` range or its `v` range) counts one rebuild, once per set even when both ranges cover it. A
//! rebuild that ended in the set's deletion leaves no header behind and is not counted; a set rebuilt
//! several times in one step (a merge cascade) counts once.
//!
//! *Touching pairs* are found geometrically, by the exact model's grid search at the given positions
//! with the same exclusion rule, not read from the sets: the picture then shows any touching pair that
//! no set covers (which the scheduler is meant to prevent) as red outside every box.

use super::{AclContact, SET_LIVE};
use crate::contact::ContactError;
use crate::contact::ExactContact;
use crate::state::Topology;

impl AclContact {
    /// Adds 1 to `counts[s]` for every segment `s` in the box of a set rebuilt by the last step (see
    /// the module doc). Nothing before the first step or on a topology the sets were not built for.
    pub(crate) fn count_step_rebuilds(&self, topo: &Topology, counts: &mut [f32]) -> bool {
        let sig = (topo.segments.len(), topo.yarns.len(), topo.edges.len());
        if self.step == 0 || sig != self.topo_sig {
            return true;
        }
        let last = (self.step - 1) as u32;
        let b = self.b;
        for s in &self.sets {
            if s.flags & SET_LIVE == 0 || s.rebuilt_step != last {
                continue;
            }
            let (u0, u1) = (s.bx[0] / b, s.bx[1] / b);
            let (v0, v1) = (s.bx[2] / b, s.bx[3] / b);
            for seg in u0..=u1 {
                if let Some(c) = counts.get_mut(seg as usize) {
                    *c += 1.0;
                }
            }
            for seg in v0..=v1 {
                if (u0..=u1).contains(&seg) {
                    continue;
                }
                if let Some(c) = counts.get_mut(seg as usize) {
                    *c += 1.0;
                }
            }
        }
        true
    }

    /// The touching, non-excluded quadrature pairs at `pos` (exact grid search) and the live sets'
    /// boxes. Before the first step there are no sets yet.
    pub(crate) fn touching_pairs_and_boxes(
        &self,
        topo: &Topology,
        pos: &[[f32; 4]],
        touching: &mut Vec<[u32; 2]>,
        boxes: &mut Vec<[u32; 4]>,
    ) -> Result<bool, ContactError> {
        let mut exact = ExactContact::new(self.r, &self.params)?;
        exact.touching_quadrature_pairs(topo, pos, touching)?;
        boxes.clear();
        let sig = (topo.segments.len(), topo.yarns.len(), topo.edges.len());
        if sig == self.topo_sig {
            boxes.extend(self.boxes());
        }
        Ok(true)
    }
}
