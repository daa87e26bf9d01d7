// entries_compact: every kept schedule entry (keep_offsets[e + 1] > keep_offsets[e] after the
// exclusive scan of entries_keep's flags) is copied to slot keep_offsets[e] of entries_out: the
// table without its dropped entries, in order. Thread 0 also writes sched_p1, the record of the
// kept table (sched with num_entries = keep_offsets[sched.num_entries], the scan's total), which
// no kernel before the next dispatch reads. CPU twin: sched::entries_compact.
// One thread per entry (at least one). No loops.

#import layout

@group(0) @binding(0) var<storage, read> sched: SchedUniform;
@group(0) @binding(1) var<storage, read> entries: array<SchedEntry>;
@group(0) @binding(2) var<storage, read> keep_offsets: array<u32>;
@group(0) @binding(3) var<storage, read_write> entries_out: array<SchedEntry>;
@group(0) @binding(4) var<storage, read_write> sched_p1: SchedUniform;

@compute @workgroup_size(256)
fn entries_compact(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
    @builtin(local_invocation_index) lid: u32,
) {
    let e = thread_index(wid, nwg, lid, 256u);
    if e == 0u {
        var kept = sched;
        kept.num_entries = keep_offsets[sched.num_entries];
        sched_p1 = kept;
    }
    if e >= sched.num_entries {
        return;
    }
    let at = keep_offsets[e];
    if keep_offsets[e + 1u] > at {
        entries_out[at] = entries[e];
    }
}
