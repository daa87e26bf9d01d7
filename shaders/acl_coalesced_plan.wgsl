// acl_coalesced_plan: for a GPU ACL step with coalescing (AclCaps::coalesce > 0), acl_counts'
// coalesced phase and the count_plan of the evaluation's grids in one dispatch, after the
// coalescing merge invocation: the table length it left (merge_counters.sets.count) into
// acl.num_sets and rebuild.num_sets, then set_evaluate's and set_force's grids from the same
// count (plan_counted_grids, what count_plan writes from that word). Nothing between the two
// changes the count, and no thread but this one reads or writes what either writes.
// CPU twin: acl::counts::acl_coalesced_plan. One thread. No loops (plan_counted_grids' 4 grids
// unrolled).
// `rebuild` and `acl` are uniforms everywhere else; as in acl_counts they are written here as
// storage, so that the step's compute pass needs no buffer copy.

#import layout
#import acl
#import counted_plan

@group(0) @binding(0) var<uniform> plan_spec: CountPlan;
@group(0) @binding(1) var<storage, read_write> rebuild: RebuildParams;
@group(0) @binding(2) var<storage, read_write> merge_counters: MergeCounters;
@group(0) @binding(3) var<storage, read_write> acl: AclUniform;
@group(0) @binding(4) var<storage, read_write> plan_out: array<u32>;

@compute @workgroup_size(1)
fn acl_coalesced_plan(@builtin(global_invocation_id) gid: vec3<u32>) {
    if gid.x != 0u {
        return;
    }
    let sets = atomicLoad(&merge_counters.sets.count);
    acl.num_sets = sets;
    rebuild.num_sets = sets;
    plan_counted_grids(sets);
}
