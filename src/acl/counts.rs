//! Stage `acl_counts` of the GPU ACL step ([`super::gpu`]): one thread that moves the step's counts to
//! where the next stage reads them, at six points of the step (the `acl_phase` uniform). It reads
//! the scheduler's counters (`sched_counters`) and the set compaction's scanned offsets
//! (`set_dest`), and writes the step's own counts (`acl_sizes`), the merge chain's counters
//! (`merge_counters`), the pool allocation's counters (`pool_counters`), the force stages' error
//! block (`acl_counters`) and the counts in the `rebuild` and `acl` uniforms that later stages
//! read (`num_dirty`, `num_sets`). Those two are uniforms in every other kernel; writing them here
//! as storage, instead of copying the counts into them between compute passes, keeps the step in
//! one compute pass (each pass costs some six dependent dispatches on hardware). The CPU path keeps these counts in `AclContact`'s fields and has no use
//! for the twin beyond the parity test (tests/gpu_acl_counts.rs); it is the specification of the
//! kernel.

use super::rebuild::{PoolAlloc, RebuildParams};
use crate::layout::{
    AclCounters, AclPhase, AclSizes, AclUniform, MergeCounters, SchedCounters,
    ACL_SIZES_MORE_PASSES,
};

/// At the start of the step: reset the step's counters.
pub const PHASE_STEP: u32 = 0;
/// After the scheduler, before coalescing: empty the released list, pass the touching count on.
pub const PHASE_SCHEDULED: u32 = 4;
/// At the start of a rebuild round: the pools' lengths become the allocation's base, the dirty
/// list's length the round's `rebuild.num_dirty`.
pub const PHASE_ROUND: u32 = 1;
/// After a merge invocation: flag a last pass that still merged.
pub const PHASE_MERGED: u32 = 2;
/// After `set_compact`: the live sets' number becomes the table length.
pub const PHASE_COMPACTED: u32 = 3;
/// After the coalescing merge invocation: as [`PHASE_MERGED`], and the table length it left into
/// the `acl` and `rebuild` uniforms.
pub const PHASE_COALESCED: u32 = 5;

/// Kernel `acl_counts` (one thread; see `shaders/acl_counts.wgsl` for what each phase does).
#[allow(clippy::too_many_arguments)]
pub fn acl_counts(
    acl_phase: &AclPhase,
    rebuild: &mut RebuildParams,
    set_dest: &[u32],
    sched_counters: &mut SchedCounters,
    acl_sizes: &mut AclSizes,
    merge_counters: &mut MergeCounters,
    pool_counters: &mut PoolAlloc,
    acl_counters: &mut AclCounters,
    acl: &mut AclUniform,
) {
    match acl_phase.phase {
        PHASE_STEP => {
            let s = acl_sizes;
            s.lookup.count = 0;
            s.lookup.overflow = 0;
            s.num_dirty = 0;
            s.rebuilds = 0;
            s.rounds_used = 0;
            s.touching = 0;
            (s.garbage_cp, s.garbage_k, s.garbage_w, s.errors) = (0, 0, 0, 0);
            let m = merge_counters;
            m.sets.count = s.num_sets;
            m.sets.overflow = 0;
            for c in [&mut m.edges, &mut m.index, &mut m.touching] {
                c.count = 0;
                c.overflow = 0;
            }
            m.coalesce_base = 0;
            m.label_rounds = 0;
            m.more_rounds = 0;
            m.moved = 0;
            m.merged = 0;
            (m.garbage_cp, m.garbage_k, m.garbage_w, m.errors) = (0, 0, 0, 0);
            pool_counters.errors = 0;
            pool_counters.first_too_large = u32::MAX;
            *acl_counters = AclCounters::default();
        }
        PHASE_SCHEDULED => {
            acl_sizes.released.count = 0;
            acl_sizes.released.overflow = 0;
            merge_counters.touching.count = sched_counters
                .touching
                .count
                .min(sched_counters.touching.capacity);
        }
        PHASE_ROUND => {
            pool_counters.base = pool_counters.len;
            merge_counters.edges.count = 0;
            acl_sizes.rebuilds += acl_sizes.num_dirty;
            if acl_sizes.num_dirty != 0 {
                acl_sizes.rounds_used += 1;
            }
            rebuild.num_dirty = acl_sizes.num_dirty;
        }
        PHASE_MERGED | PHASE_COALESCED => {
            if merge_counters.edges.count != 0 {
                acl_sizes.errors |= ACL_SIZES_MORE_PASSES;
            }
            if acl_phase.phase == PHASE_COALESCED {
                acl.num_sets = merge_counters.sets.count;
                rebuild.num_sets = merge_counters.sets.count;
            }
        }
        PHASE_COMPACTED => {
            let live = set_dest[rebuild.num_sets as usize];
            acl_sizes.num_sets = live;
            if merge_counters.sets.overflow == 0 {
                merge_counters.sets.count = live;
            }
        }
        _ => {}
    }
}
