// entries_compact: every kept schedule entry (keep[e] = 1, entries_keep's flag) is copied to its slot
// of entries_out, the kept entries before it: the table without its dropped entries, in order. The
// slot comes from the group sums entries_keep wrote into scan_groups and a workgroup scan of the
// flags (group_prefix), so the flags need no scan dispatch of their own. The thread of element
// num_entries (the flags' trailing 0) has the number kept and writes sched_p1, the record of the
// kept table (sched with num_entries = that number), which no kernel before the next dispatch
// reads. CPU twin: sched::entries_compact.
// One thread per entry, plus one (the grid of entries_keep, whose workgroups the group sums are);
// a workgroup wholly past the trailing element returns at once.
// Loop bound: ⌈group / 256⌉ ≤ 128 group-sum loads (2²⁷ bytes of 16-byte entries are 2²³ entries,
// 32,768 groups), then group_prefix's 8 + 8 steps.

#import layout
#import workgroup_sum
#import workgroup_scan
#import group_prefix

@group(0) @binding(0) var<storage, read> sched: SchedUniform;
@group(0) @binding(1) var<storage, read> entries: array<SchedEntry>;
@group(0) @binding(2) var<storage, read> keep: array<u32>;
@group(0) @binding(3) var<storage, read> scan_groups: array<u32>;
@group(0) @binding(4) var<storage, read_write> entries_out: array<SchedEntry>;
@group(0) @binding(5) var<storage, read_write> sched_p1: SchedUniform;

@compute @workgroup_size(256)
fn entries_compact(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
    @builtin(local_invocation_index) lid: u32,
) {
    let group = wid.y * nwg.x + wid.x;
    let e = group * 256u + lid;
    let n = sched.num_entries;
    // The same for every thread of the workgroup, so the barriers below stay in uniform control
    // flow: a workgroup past the trailing element has no flag to place.
    if group > n / 256u {
        return;
    }
    var v = 0u;
    if e < n {
        v = keep[e];
    }
    let at = group_prefix(group, lid, v);
    if e == n {
        var kept = sched;
        kept.num_entries = at;
        sched_p1 = kept;
    }
    if v != 0u {
        entries_out[at] = entries[e];
    }
}
