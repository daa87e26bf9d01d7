// sched_sizes: the scheduler GPU step's `sched` records with the sizes known at one point of the
// step (sched_phase.phase): 0, the start: counters reset (capacities kept), sched_p0 = sched_step
// with the table length of the last step (sched_state[0]) (shared/sched_start.wgsl; the ACL step
// makes it in acl_step_start); 1, after newcomer_compact and the
// release scan: the new entries that fit (fresh and entry capacities, overflow flagged) into
// sched_p1.num_fresh, sched_p2 with the merged length (also sched_state[0] for the next step), the
// release slots into sched_counters.release (shared/sched_merged.wgsl; the ACL step makes it in
// release_scan_sizes, with the releases' count and scan). (sched_p1 with the kept length is
// entries_compact's.) CPU twin: sched::sched_sizes. One thread. No loops.

#import layout
#import sched_start
#import sched_merged

@group(0) @binding(0) var<uniform> sched_phase: SchedPhase;
@group(0) @binding(1) var<uniform> sched_step: SchedUniform;
@group(0) @binding(2) var<storage, read> release_offsets: array<u32>;
@group(0) @binding(3) var<storage, read_write> sched_counters: SchedCounters;
@group(0) @binding(4) var<storage, read_write> sched_state: array<u32>;
@group(0) @binding(5) var<storage, read_write> sched_p0: SchedUniform;
@group(0) @binding(6) var<storage, read_write> sched_p1: SchedUniform;
@group(0) @binding(7) var<storage, read_write> sched_p2: SchedUniform;

@compute @workgroup_size(1)
fn sched_sizes(@builtin(global_invocation_id) gid: vec3<u32>) {
    if gid.x != 0u {
        return;
    }
    let phase = sched_phase.phase;
    if phase == 0u {
        sched_start();
    } else {
        sched_merged(release_offsets[sched_step.num_released]);
    }
}
