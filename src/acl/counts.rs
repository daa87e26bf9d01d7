//! Stage `acl_counts` of the GPU ACL step ([`super::gpu`]): the step's counts moved to where the
//! next stage reads them. One thread of kernel `acl_counts` does it at three points of the step
//! (the `acl_phase` uniform): it reads the scheduler's counters (`sched_counters`) and writes the
//! step's own counts (`acl_sizes`), the merge chain's counters (`merge_counters`), the pool
//! allocation's counters (`pool_counters`), the force stages' error block (`acl_counters`), and
//! the counts in the `rebuild` and `acl` uniforms that later stages read (`num_sets`). Those two
//! are uniforms in every other kernel; writing them here as storage, instead of copying the counts
//! into them between compute passes, keeps the step in one compute pass (each pass costs some six
//! dependent dispatches on hardware). At the other points the kernel that has the count final moves it
//! from one of its threads, a dispatch fewer each ([`round_counts`] with [`last_merge_verdict`] in
//! `set_dirty_write`, [`last_round_merge_verdict`] and [`compacted_counts`] in `set_compact`;
//! `shaders/shared/acl_step_counts.wgsl`).
//! The CPU path keeps these counts in `AclContact`'s fields and has no use for the twins beyond
//! the parity tests (tests/gpu_acl_counts.rs, tests/gpu_acl_release.rs,
//! tests/gpu_acl_rebuild.rs); they are the specification of the kernels.

use super::rebuild::{PoolAlloc, RebuildParams};
use crate::layout::{
    AclCounters, AclPhase, AclSizes, AclUniform, CountPlan, LookupUniform, MergeCounters,
    SchedCounters, SchedUniform, ACL_SIZES_MORE_PASSES, ACL_SIZES_MORE_ROUNDS,
};
use crate::scan::plan_counted;

/// At the start of the step: reset the step's counters.
pub const PHASE_STEP: u32 = 0;
/// After the scheduler, before coalescing: pass the touching count on.
pub const PHASE_SCHEDULED: u32 = 1;
/// After the coalescing merge invocation: the table length it left into the `acl` and `rebuild`
/// uniforms.
pub const PHASE_COALESCED: u32 = 2;

/// Kernel `acl_counts` (one thread; see `shaders/acl_counts.wgsl` for what each phase does).
#[allow(clippy::too_many_arguments)]
pub fn acl_counts(
    acl_phase: &AclPhase,
    rebuild: &mut RebuildParams,
    sched_counters: &mut SchedCounters,
    acl_sizes: &mut AclSizes,
    merge_counters: &mut MergeCounters,
    pool_counters: &mut PoolAlloc,
    acl_counters: &mut AclCounters,
    acl: &mut AclUniform,
) {
    match acl_phase.phase {
        PHASE_STEP => step_reset(acl_sizes, merge_counters, pool_counters, acl_counters),
        PHASE_SCHEDULED => scheduled_counts(sched_counters, merge_counters),
        PHASE_COALESCED => coalesced_counts(rebuild, merge_counters, acl),
        _ => {}
    }
}

/// The count the GPU ACL step moves after its scheduler (`acl_counts`' [`PHASE_SCHEDULED`],
/// `shaders/shared/acl_scheduled.wgsl`; in the step, `coalesce_heads`' thread 0 or
/// [`acl_scheduled_plan`]): the scheduler's touching pairs (at most its capacity) into
/// `merge_counters.touching.count`. (The released list is emptied at the step's start,
/// [`step_reset`].)
pub fn scheduled_counts(sched_counters: &SchedCounters, merge_counters: &mut MergeCounters) {
    merge_counters.touching.count = sched_counters
        .touching
        .count
        .min(sched_counters.touching.capacity);
}

/// Stage `acl_scheduled_plan` (kernel `shaders/acl_scheduled_plan.wgsl`, one thread), for a step
/// without coalescing: [`scheduled_counts`], then the plan of the evaluation's grids
/// ([`crate::scan::plan_counted`], the `count_plan` of the step with coalescing) from
/// `merge_counters.sets.count`, the table length since the step's start.
pub fn acl_scheduled_plan(
    plan_spec: &CountPlan,
    sched_counters: &mut SchedCounters,
    merge_counters: &mut MergeCounters,
    plan_out: &mut [u32],
) {
    scheduled_counts(sched_counters, merge_counters);
    plan_counted(plan_spec, merge_counters.sets.count, plan_out);
}

/// The counts the GPU ACL step moves after its coalescing merge invocation (`acl_counts`'
/// [`PHASE_COALESCED`]): the table length it left (`merge_counters.sets.count`) into the `acl` and
/// `rebuild` uniforms.
pub fn coalesced_counts(
    rebuild: &mut RebuildParams,
    merge_counters: &MergeCounters,
    acl: &mut AclUniform,
) {
    acl.num_sets = merge_counters.sets.count;
    rebuild.num_sets = merge_counters.sets.count;
}

/// Stage `acl_coalesced_plan` (kernel `shaders/acl_coalesced_plan.wgsl`, one thread), for a step
/// with coalescing: [`coalesced_counts`], then the plan of the evaluation's grids
/// ([`crate::scan::plan_counted`], what a `count_plan` after `acl_counts` wrote) from the same
/// table length.
pub fn acl_coalesced_plan(
    plan_spec: &CountPlan,
    rebuild: &mut RebuildParams,
    merge_counters: &mut MergeCounters,
    acl: &mut AclUniform,
    plan_out: &mut [u32],
) {
    coalesced_counts(rebuild, merge_counters, acl);
    plan_counted(plan_spec, merge_counters.sets.count, plan_out);
}

/// The reset at the start of a GPU ACL step (`acl_counts`' [`PHASE_STEP`], made in the step by
/// `acl_step_start`; `shaders/shared/acl_step_reset.wgsl`): the step's counters cleared (capacities,
/// the table length and the pool lengths kept), `merge_counters.sets.count` = the table length.
/// The released list is emptied too: its boxes stay for the step's scheduler, which took their
/// number in `sched_step.num_released` before the step's first dispatch, and the list is next
/// written by the first rebuild round's `pool_alloc`.
pub fn step_reset(
    acl_sizes: &mut AclSizes,
    merge_counters: &mut MergeCounters,
    pool_counters: &mut PoolAlloc,
    acl_counters: &mut AclCounters,
) {
    let s = acl_sizes;
    s.lookup.count = 0;
    s.lookup.overflow = 0;
    s.released.count = 0;
    s.released.overflow = 0;
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

/// Kernel `acl_step_start`, the start of the GPU ACL step in one dispatch: [`step_reset`],
/// [`crate::sched::sched_start`] (`sched_sizes`' start) and [`crate::sched::set_lookup_clear`]
/// (none reads what another writes).
#[allow(clippy::too_many_arguments)]
pub fn acl_step_start(
    sched_step: &SchedUniform,
    acl_lookup: &LookupUniform,
    acl_sizes: &mut AclSizes,
    merge_counters: &mut MergeCounters,
    pool_counters: &mut PoolAlloc,
    acl_counters: &mut AclCounters,
    sched_counters: &mut SchedCounters,
    sched_state: &mut [u32],
    sched_p0: &mut SchedUniform,
    lookup_offsets: &mut [u32],
) {
    step_reset(acl_sizes, merge_counters, pool_counters, acl_counters);
    crate::sched::sched_start(sched_step, sched_counters, sched_state, sched_p0);
    crate::sched::set_lookup_clear(acl_lookup, lookup_offsets);
}

/// The verdict on the merge invocation that ran last (`last_merge_verdict` of
/// `shaders/shared/acl_step_counts.wgsl`): its last pass still merged (`merge_counters.edges`
/// counts each pass's pairs), so the step reruns with more passes ([`ACL_SIZES_MORE_PASSES`],
/// sticky). Taken before the next invocation resets the count: at each rebuild round's start
/// (after the step's last round, [`last_round_merge_verdict`]).
pub fn last_merge_verdict(merge_counters: &MergeCounters, acl_sizes: &mut AclSizes) {
    if merge_counters.edges.count != 0 {
        acl_sizes.errors |= ACL_SIZES_MORE_PASSES;
    }
}

/// The verdict on the step's last merge invocation (`last_round_merge_verdict`, in `set_compact`),
/// which ends at its first overlap search
/// ([`super::merge_gpu::MergeGpu::dispatches_to_first_search`]): pairs found there would have been
/// merged into roots that `merge_apply` leaves dirty, so the step reruns with more passes and
/// more rounds ([`ACL_SIZES_MORE_PASSES`] | [`ACL_SIZES_MORE_ROUNDS`]), as it did when the pass
/// merged them and `set_compact` found the roots dirty.
pub fn last_round_merge_verdict(merge_counters: &MergeCounters, acl_sizes: &mut AclSizes) {
    if merge_counters.edges.count != 0 {
        acl_sizes.errors |= ACL_SIZES_MORE_PASSES | ACL_SIZES_MORE_ROUNDS;
    }
}

/// The start of a rebuild round from its dirty list's length `nd` (`set_dirty_write`'s last
/// thread): `acl_sizes.num_dirty`; the verdict on the last merge invocation, then its edge count
/// reset (the round's first merge pass appends from 0); the pools' lengths as the allocation's
/// base; `nd` counted into `acl_sizes.rebuilds`, a round with dirty sets into `rounds_used`; `nd`
/// into `rebuild.num_dirty`; the round's grids over the dirty sets (`plan_out`).
pub fn round_counts(
    nd: u32,
    plan_spec: &CountPlan,
    rebuild: &mut RebuildParams,
    acl_sizes: &mut AclSizes,
    merge_counters: &mut MergeCounters,
    pool_counters: &mut PoolAlloc,
    plan_out: &mut [u32],
) {
    acl_sizes.num_dirty = nd;
    last_merge_verdict(merge_counters, acl_sizes);
    merge_counters.edges.count = 0;
    pool_counters.base = pool_counters.len;
    acl_sizes.rebuilds = acl_sizes.rebuilds.wrapping_add(nd);
    if nd != 0 {
        acl_sizes.rounds_used = acl_sizes.rounds_used.wrapping_add(1);
    }
    rebuild.num_dirty = nd;
    plan_counted(plan_spec, nd, plan_out);
}

/// In `set_compact` (the thread of the last slot, which has the live sets' number `live`, from the
/// group sums and its workgroup's scan): `live` is the table length, in
/// `acl_sizes` and (unless the table overflowed, when its count is what was needed for the
/// regrowth) in `merge_counters`.
pub fn compacted_counts(live: u32, acl_sizes: &mut AclSizes, merge_counters: &mut MergeCounters) {
    acl_sizes.num_sets = live;
    if merge_counters.sets.overflow == 0 {
        merge_counters.sets.count = live;
    }
}
