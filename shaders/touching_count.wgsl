// touching_count: each workgroup's sum of the touching counts schedule_process recorded in its
// entries (flags bits 16–23) into scan_groups (write_scan_group, shared/scan_groups.wgsl), from
// which touching_write finds each entry's first slot in `touching` itself (group_prefix: no scan
// dispatch between the two). CPU twin: sched::touching_count.
// One thread per entry slot (the grid is the entry capacity's); a workgroup wholly past the live
// entries returns at once and writes no group sum (touching_write reads none of those: its
// workgroups past them return too). Loop bound: write_scan_group's 8 halving steps.

#import layout
#import sched
#import scan_groups

@group(0) @binding(0) var<storage, read> sched: SchedUniform;
@group(0) @binding(1) var<storage, read> entries: array<SchedEntry>;
@group(0) @binding(2) var<storage, read_write> scan_groups: array<u32>;

@compute @workgroup_size(256)
fn touching_count(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
    @builtin(local_invocation_index) lid: u32,
) {
    // (sched is read-only storage: the test is uniform, and the barriers below stay in uniform
    // control flow.)
    if (wid.y * nwg.x + wid.x) * 256u >= sched.num_entries {
        return;
    }
    let e = thread_index(wid, nwg, lid, 256u);
    var v = 0u;
    if e < sched.num_entries {
        v = entry_touching(entries[e]);
    }
    write_scan_group(wid, nwg, lid, v);
}
