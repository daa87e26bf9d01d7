// acl_step_start: the start of a GPU ACL step in one dispatch, three resets that read nothing the
// others write: thread 0 makes acl_counts' PHASE_STEP reset (shared/acl_step_reset.wgsl) and
// sched_sizes' start (shared/sched_start.wgsl: the scheduler's counters, sched_p0 from sched_step
// and the last step's table length), and thread x ≤ acl_lookup.num_segments clears
// lookup_offsets[x] as set_lookup_clear does, the counts set_lookup_count adds to. Bit for bit
// what acl_counts (PHASE_STEP), set_lookup_clear and sched_sizes (phase 0) give (CPU twin:
// acl::counts::acl_step_start, the three twins). The scheduler's start comes before the set
// lookup here, where the scheduler's own step list has it after: the lookup's kernels neither read
// nor write the scheduler's counters or records. One thread per segment, plus one; no loops.

#import layout
#import acl
#import acl_step_reset
#import sched_start

@group(0) @binding(0) var<uniform> sched_step: SchedUniform;
@group(0) @binding(1) var<uniform> acl_lookup: LookupUniform;
@group(0) @binding(2) var<storage, read_write> acl_sizes: AclSizes;
@group(0) @binding(3) var<storage, read_write> merge_counters: MergeCounters;
@group(0) @binding(4) var<storage, read_write> pool_counters: PoolAlloc;
@group(0) @binding(5) var<storage, read_write> acl_counters: AclCounters;
@group(0) @binding(6) var<storage, read_write> sched_counters: SchedCounters;
@group(0) @binding(7) var<storage, read_write> sched_state: array<u32>;
@group(0) @binding(8) var<storage, read_write> sched_p0: SchedUniform;
@group(0) @binding(9) var<storage, read_write> lookup_offsets: array<u32>;

@compute @workgroup_size(256)
fn acl_step_start(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
    @builtin(local_invocation_index) lid: u32,
) {
    let x = thread_index(wid, nwg, lid, 256u);
    if x == 0u {
        acl_step_reset();
        sched_start();
    }
    if x <= acl_lookup.num_segments && x < arrayLength(&lookup_offsets) {
        lookup_offsets[x] = 0u;
    }
}
