// acl_scheduled_plan: for a GPU ACL step without coalescing (AclCaps::coalesce = 0), acl_counts'
// scheduled phase and the count_plan of the evaluation's grids in one dispatch. Without coalescing
// the table length is the one the step started with (acl_step_start put it in
// merge_counters.sets.count, and nothing before set_evaluate changes it), so the plan can be
// written here instead of after coalescing: the touching count moved (shared/acl_scheduled.wgsl),
// then set_evaluate's and set_force's grids from
// merge_counters.sets.count (plan_counted_grids, what count_plan writes from the same word).
// CPU twin: acl::counts::acl_scheduled_plan. One thread. No loops (plan_counted_grids' 4 grids
// unrolled).

#import layout
#import acl
#import acl_scheduled
#import counted_plan

@group(0) @binding(0) var<uniform> plan_spec: CountPlan;
@group(0) @binding(1) var<storage, read_write> sched_counters: SchedCounters;
@group(0) @binding(2) var<storage, read_write> merge_counters: MergeCounters;
@group(0) @binding(3) var<storage, read_write> plan_out: array<u32>;

@compute @workgroup_size(1)
fn acl_scheduled_plan(@builtin(global_invocation_id) gid: vec3<u32>) {
    if gid.x != 0u {
        return;
    }
    acl_scheduled_counts();
    plan_counted_grids(atomicLoad(&merge_counters.sets.count));
}
