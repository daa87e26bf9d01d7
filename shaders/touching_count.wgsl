// touching_count: touch_offsets[e] = the touching count schedule_process recorded in entry e (flags
// bits 16–23), touch_offsets[num_entries] = 0: the input of the exclusive scan that gives each
// entry's first slot in `touching` and, last, the total. CPU twin: sched::touching_count.
// One thread per entry, plus one. Loop bound: write_scan_group's 8 halving steps.
// Each workgroup also writes the sum of its threads' counts into scan_groups
// (shared/scan_groups.wgsl): the scan is grouped, its block sums written here.

#import layout
#import sched
#import scan_groups

@group(0) @binding(0) var<storage, read> sched: SchedUniform;
@group(0) @binding(1) var<storage, read> entries: array<SchedEntry>;
@group(0) @binding(2) var<storage, read_write> touch_offsets: array<u32>;
@group(0) @binding(3) var<storage, read_write> scan_groups: array<u32>;

@compute @workgroup_size(256)
fn touching_count(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
    @builtin(local_invocation_index) lid: u32,
) {
    let e = thread_index(wid, nwg, lid, 256u);
    let n = sched.num_entries;
    var v = 0u;
    if e < n {
        v = (entries[e].bin_flags & ENTRY_TOUCH) >> ENTRY_TOUCH_SHIFT;
        touch_offsets[e] = v;
    } else if e == n {
        touch_offsets[e] = 0u;
    }
    write_scan_group(wid, nwg, lid, v);
}
