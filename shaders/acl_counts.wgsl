// acl_counts: the GPU ACL step's counts moved to where the next stage reads them, at one point of the
// step (acl_phase.phase, acl::counts::PHASE_*). CPU twin: acl::counts::acl_counts.
// - PHASE_STEP, at the start of the step: the step's counters reset (capacities, the table length,
//   the pool lengths and the released boxes kept; set_compact sums acl_sizes.touching anew),
//   merge_counters.sets.count = the table length.
// - PHASE_SCHEDULED, after the scheduler and before coalescing: the released list emptied (this
//   step's scheduler has read it), merge_counters.touching.count = the scheduler's touching pairs
//   (at most its capacity).
// - PHASE_ROUND, at the start of a rebuild round (after the dirty list): the pools' lengths become
//   the allocation's base; the round's dirty sets are counted into acl_sizes.rebuilds, and a round
//   with dirty sets into acl_sizes.rounds_used; merge_counters.edges.count = 0 (dirty_overlap_write,
//   the round's first merge pass without the set index, appends its pairs from there); the dirty
//   list's length into rebuild.num_dirty, which the round's kernels read.
// - PHASE_MERGED, after a merge invocation: a last pass that still merged raises
//   ACL_SIZES_MORE_PASSES (sticky over the step; merge_counters.edges is per pass).
// - PHASE_COALESCED, after the coalescing merge invocation: as PHASE_MERGED, and the table length
//   it left (merge_counters.sets.count) into acl.num_sets and rebuild.num_sets.
// - PHASE_COMPACTED, after set_compact: the live sets' number (set_dest[rebuild.num_sets], the
//   scan's total) is the table length, in acl_sizes and (unless the table overflowed, when its count
//   is what was needed) in merge_counters.
// `rebuild` and `acl` are uniforms everywhere else; this kernel writes their counts as storage, so
// that they need no buffer copy, which would end the step's compute pass (a pass costs some six
// dependent dispatches on hardware, benches/dispatch.rs). wgpu puts the barrier between this
// dispatch's storage write and the next dispatch's uniform read.
// One thread. No loops.

#import layout
#import acl

@group(0) @binding(0) var<uniform> acl_phase: AclPhase;
@group(0) @binding(1) var<storage, read_write> rebuild: RebuildParams;
@group(0) @binding(2) var<storage, read> set_dest: array<u32>;
@group(0) @binding(3) var<storage, read_write> sched_counters: SchedCounters;
@group(0) @binding(4) var<storage, read_write> acl_sizes: AclSizes;
@group(0) @binding(5) var<storage, read_write> merge_counters: MergeCounters;
@group(0) @binding(6) var<storage, read_write> pool_counters: PoolAlloc;
@group(0) @binding(7) var<storage, read_write> acl_counters: AclCounters;
@group(0) @binding(8) var<storage, read_write> acl: AclUniform;

@compute @workgroup_size(1)
fn acl_counts(@builtin(global_invocation_id) gid: vec3<u32>) {
    if gid.x != 0u {
        return;
    }
    let phase = acl_phase.phase;
    if phase == ACL_PHASE_STEP {
        atomicStore(&acl_sizes.lookup.count, 0u);
        atomicStore(&acl_sizes.lookup.overflow, 0u);
        acl_sizes.num_dirty = 0u;
        acl_sizes.rebuilds = 0u;
        acl_sizes.rounds_used = 0u;
        atomicStore(&acl_sizes.touching, 0u);
        atomicStore(&acl_sizes.garbage_cp, 0u);
        atomicStore(&acl_sizes.garbage_k, 0u);
        atomicStore(&acl_sizes.garbage_w, 0u);
        atomicStore(&acl_sizes.errors, 0u);
        atomicStore(&merge_counters.sets.count, acl_sizes.num_sets);
        atomicStore(&merge_counters.sets.overflow, 0u);
        atomicStore(&merge_counters.edges.count, 0u);
        atomicStore(&merge_counters.edges.overflow, 0u);
        atomicStore(&merge_counters.index.count, 0u);
        atomicStore(&merge_counters.index.overflow, 0u);
        atomicStore(&merge_counters.touching.count, 0u);
        atomicStore(&merge_counters.touching.overflow, 0u);
        merge_counters.coalesce_base = 0u;
        atomicStore(&merge_counters.label_rounds, 0u);
        atomicStore(&merge_counters.more_rounds, 0u);
        atomicStore(&merge_counters.moved, 0u);
        atomicStore(&merge_counters.merged, 0u);
        atomicStore(&merge_counters.garbage_cp, 0u);
        atomicStore(&merge_counters.garbage_k, 0u);
        atomicStore(&merge_counters.garbage_w, 0u);
        atomicStore(&merge_counters.errors, 0u);
        atomicStore(&pool_counters.errors, 0u);
        atomicStore(&pool_counters.first_too_large, 0xffffffffu);
        atomicStore(&acl_counters.errors, 0u);
        atomicStore(&acl_counters.first_bad_set, 0xffffffffu);
        atomicStore(&acl_counters.first_bad_point, 0xffffffffu);
        atomicStore(&acl_counters.records, 0u);
    } else if phase == ACL_PHASE_SCHEDULED {
        atomicStore(&acl_sizes.released.count, 0u);
        atomicStore(&acl_sizes.released.overflow, 0u);
        let touching = min(atomicLoad(&sched_counters.touching.count), sched_counters.touching.capacity);
        atomicStore(&merge_counters.touching.count, touching);
    } else if phase == ACL_PHASE_ROUND {
        pool_counters.base = pool_counters.len;
        atomicStore(&merge_counters.edges.count, 0u);
        acl_sizes.rebuilds = acl_sizes.rebuilds + acl_sizes.num_dirty;
        if acl_sizes.num_dirty != 0u {
            acl_sizes.rounds_used = acl_sizes.rounds_used + 1u;
        }
        rebuild.num_dirty = acl_sizes.num_dirty;
    } else if phase == ACL_PHASE_MERGED || phase == ACL_PHASE_COALESCED {
        if atomicLoad(&merge_counters.edges.count) != 0u {
            atomicOr(&acl_sizes.errors, ACL_SIZES_MORE_PASSES);
        }
        if phase == ACL_PHASE_COALESCED {
            let sets = atomicLoad(&merge_counters.sets.count);
            acl.num_sets = sets;
            rebuild.num_sets = sets;
        }
    } else if phase == ACL_PHASE_COMPACTED {
        let live = set_dest[rebuild.num_sets];
        acl_sizes.num_sets = live;
        // After an overflow the count says how many slots were needed (for the regrowth).
        if atomicLoad(&merge_counters.sets.overflow) == 0u {
            atomicStore(&merge_counters.sets.count, live);
        }
    }
}
