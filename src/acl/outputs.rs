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

use super::rebuild::RebuildParams;
use super::{AclContact, ContactSet, SET_LIVE};
use crate::contact::ContactError;
use crate::contact::ExactContact;
use crate::layout::AclSizes;
use crate::state::Topology;

/// Segments of one box range a rebuild count covers at most (the kernel's loop bound; a box spans
/// at most as many segments per range as it has control points, at most
/// `evaluate::MAX_SET_POINTS` on the GPU).
pub const SEGMENT_REBUILDS_MAX_SPAN: u32 = 1024;

/// Kernel `segment_rebuilds` (`shaders/segment_rebuilds.wgsl`): every live set of the first
/// `acl_sizes.num_sets` rebuilt at step `rebuild.step` adds 1 to `rebuild_counts[s]` for each
/// segment `s` of its box (see the module doc; each range cut at [`SEGMENT_REBUILDS_MAX_SPAN`]
/// segments).
pub fn segment_rebuilds(
    rebuild: &RebuildParams,
    sets: &[ContactSet],
    acl_sizes: &AclSizes,
    rebuild_counts: &mut [u32],
) {
    let n = (acl_sizes.num_sets as usize).min(sets.len());
    for_each_rebuilt_segment(rebuild.b, rebuild.step, &sets[..n], |seg| {
        if let Some(c) = rebuild_counts.get_mut(seg) {
            *c += 1;
        }
    });
}

/// Calls `f` once per segment of the box of each live set of `sets` rebuilt at step `step` (the
/// `u` range, then the `v` range outside it, each cut at [`SEGMENT_REBUILDS_MAX_SPAN`] segments):
/// the counting of [`segment_rebuilds`], which the CPU path runs without a buffer of its own.
fn for_each_rebuilt_segment(b: u32, step: u32, sets: &[ContactSet], mut f: impl FnMut(usize)) {
    for s in sets {
        if s.flags & SET_LIVE == 0 || s.rebuilt_step != step {
            continue;
        }
        let span = SEGMENT_REBUILDS_MAX_SPAN - 1;
        let (u0, v0) = (s.bx[0] / b, s.bx[2] / b);
        let (u1, v1) = ((s.bx[1] / b).min(u0 + span), (s.bx[3] / b).min(v0 + span));
        for seg in u0..=u1 {
            f(seg as usize);
        }
        for seg in v0..=v1 {
            if !(u0..=u1).contains(&seg) {
                f(seg as usize);
            }
        }
    }
}

impl AclContact {
    /// Adds 1 to `counts[s]` for every segment `s` in the box of a set rebuilt by the last step (see
    /// the module doc; stage `segment_rebuilds`). Nothing before the first step or on a topology the
    /// sets were not built for.
    pub(crate) fn count_step_rebuilds(&self, topo: &Topology, counts: &mut [f32]) -> bool {
        let sig = (topo.segments.len(), topo.yarns.len(), topo.edges.len());
        if self.step == 0 || sig != self.topo_sig {
            return true;
        }
        for_each_rebuilt_segment(self.b, (self.step - 1) as u32, &self.sets, |seg| {
            if let Some(c) = counts.get_mut(seg) {
                *c += 1.0;
            }
        });
        true
    }

    /// The touching, non-excluded quadrature pairs at `pos` (exact grid search) and the live sets'
    /// boxes. Before the first step there are no sets yet.
    pub(crate) fn touching_pairs_and_boxes(
        &mut self,
        topo: &Topology,
        pos: &[[f32; 4]],
        touching: &mut Vec<[u32; 2]>,
        boxes: &mut Vec<[u32; 4]>,
    ) -> Result<bool, ContactError> {
        let exact = match &mut self.pairs_search {
            Some(e) => e,
            none => none.insert(Box::new(ExactContact::new(self.r, &self.params)?)),
        };
        exact.touching_quadrature_pairs(topo, pos, touching)?;
        // (Once a frame: the memory between checks is worth more than their first touch.)
        exact.release_search_buffers();
        boxes.clear();
        let sig = (topo.segments.len(), topo.yarns.len(), topo.edges.len());
        if sig == self.topo_sig {
            boxes.extend(self.boxes());
        }
        Ok(true)
    }
}
