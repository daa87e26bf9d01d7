// acl_counts: the GPU ACL step's counts moved to where the next stage reads them, at one point of the
// step (acl_phase.phase, acl::counts::PHASE_*). CPU twin: acl::counts::acl_counts.
// - PHASE_STEP, at the start of the step: the step's counters reset (capacities, the table length
//   and the pool lengths kept; the released list emptied; set_compact sums acl_sizes.touching anew),
//   merge_counters.sets.count = the table length (shared/acl_step_reset.wgsl). The ACL step makes
//   this reset in acl_step_start, with the scheduler's and the lookup's; this phase is the
//   reference that kernel is tested against.
// - PHASE_SCHEDULED, after the scheduler and before coalescing: merge_counters.touching.count =
//   the scheduler's touching pairs (at most its capacity) (shared/acl_scheduled.wgsl). A step
//   with coalescing makes it in coalesce_heads' thread 0, one without in acl_scheduled_plan, with
//   the evaluation's grids; this phase is the reference both are tested against.
// - PHASE_COALESCED, after the coalescing merge invocation: the table length it left
//   (merge_counters.sets.count) into acl.num_sets and rebuild.num_sets. (The verdict on its last
//   pass is the first rebuild round's, in set_dirty_write.)
// The other points of the step where a count moves are in the kernels that have it final
// (shaders/shared/acl_step_counts.wgsl): each rebuild round's start in set_dirty_write, the
// compacted table's length in set_compact. Every phase is thus made within another kernel, and
// the step dispatches this one no more (since 2026-12-06, when coalesce_heads took the scheduled
// phase): it stays as the reference of the phases, one kernel for all three, which
// tests/gpu_acl_counts.rs runs against its twin and against the kernels that make them. The
// evaluation's grids are acl_coalesced_plan's or acl_scheduled_plan's, not planned here: with the
// plan in two of this kernel's phases, lavapipe (Mesa 22.3) compiled shaders
// with LLVM throughout the run (perf; none without it) and the tiny swatch's frame took 11 s
// instead of 8.5, most likely its specializing of a shader on the uniforms its branches test (the
// phase: three uniforms, one per phase).
// `rebuild` and `acl` are uniforms everywhere else; this kernel writes their counts as storage, so
// that they need no buffer copy, which would end the step's compute pass (a pass costs some six
// dependent dispatches on hardware, benches/dispatch.rs). wgpu puts the barrier between this
// dispatch's storage write and the next dispatch's uniform read.
// One thread. No loops.

#import layout
#import acl
#import acl_step_reset
#import acl_scheduled

@group(0) @binding(0) var<uniform> acl_phase: AclPhase;
@group(0) @binding(1) var<storage, read_write> rebuild: RebuildParams;
@group(0) @binding(2) var<storage, read_write> sched_counters: SchedCounters;
@group(0) @binding(3) var<storage, read_write> acl_sizes: AclSizes;
@group(0) @binding(4) var<storage, read_write> merge_counters: MergeCounters;
@group(0) @binding(5) var<storage, read_write> pool_counters: PoolAlloc;
@group(0) @binding(6) var<storage, read_write> acl_counters: AclCounters;
@group(0) @binding(7) var<storage, read_write> acl: AclUniform;

@compute @workgroup_size(1)
fn acl_counts(@builtin(global_invocation_id) gid: vec3<u32>) {
    if gid.x != 0u {
        return;
    }
    let phase = acl_phase.phase;
    if phase == ACL_PHASE_STEP {
        acl_step_reset();
    } else if phase == ACL_PHASE_SCHEDULED {
        acl_scheduled_counts();
    } else if phase == ACL_PHASE_COALESCED {
        let sets = atomicLoad(&merge_counters.sets.count);
        acl.num_sets = sets;
        rebuild.num_sets = sets;
    }
}
