// newcomer_compact: every kept candidate (fresh_offsets[i] = 1, newcomer_keep's flag, for i below
// the live candidates) becomes a new schedule entry — due (ENTRY_DUE), bound −1, ENTRY_MIXED when
// its pair is of mixed class — at its slot of fresh, the kept candidates before it (from the group
// sums newcomer_keep wrote into scan_groups and a workgroup scan of the flags: group_prefix), when
// below sched_counters.fresh.capacity: sorted and unique, as the candidates are. Thread 0 raises
// the overflow flag of the total, which newcomer_keep added into sched_counters.fresh.count.
// CPU twin: sched::newcomer_compact. One thread per live candidate, plus one (newcomer_keep's
// grid). Loop bound: 128 group-sum loads (a binding holds at most 2^27 / 16 = 2^23 candidates,
// 32,768 groups), 8 + 8 (group_prefix).

#import layout
#import penalty
#import sched
#import sched_class
#import workgroup_sum
#import workgroup_scan
#import group_prefix

@group(0) @binding(0) var<uniform> sched: SchedUniform;
@group(0) @binding(1) var<storage, read> segments: array<Segment>;
@group(0) @binding(2) var<storage, read> quad_arc: array<f32>;
@group(0) @binding(3) var<storage, read> seg_contact: array<SegmentContact>;
@group(0) @binding(4) var<storage, read> sched_cand: array<KeyValue>;
@group(0) @binding(5) var<storage, read> fresh_offsets: array<u32>;
@group(0) @binding(6) var<storage, read> scan_groups: array<u32>;
@group(0) @binding(7) var<storage, read_write> fresh: array<SchedEntry>;
@group(0) @binding(8) var<storage, read_write> sched_counters: SchedCounters;

@compute @workgroup_size(256)
fn newcomer_compact(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
    @builtin(local_invocation_index) lid: u32,
) {
    let i = thread_index(wid, nwg, lid, 256u);
    let ccap = sched_counters.cand.capacity;
    let fcap = sched_counters.fresh.capacity;
    if i == 0u && atomicLoad(&sched_counters.fresh.count) > fcap {
        atomicStore(&sched_counters.fresh.overflow, 1u);
    }
    // The live candidates' flags (the slots past them hold another step's).
    let n = min(atomicLoad(&sched_counters.cand.count), ccap);
    var keep = 0u;
    if i < n {
        keep = fresh_offsets[i];
    }
    // Every thread of the workgroup reaches the prefix (it has barriers).
    let slot = group_prefix(wid.y * nwg.x + wid.x, lid, keep);
    if keep == 0u || slot >= fcap {
        return;
    }
    let ab = cand_pair(sched_cand[i], cand_key_bits(sched.num_segments));
    var flags = ENTRY_DUE;
    if pair_class(ab.x, ab.y) == PAIR_MIXED {
        flags = flags | ENTRY_MIXED;
    }
    fresh[slot] = SchedEntry(ab.x, ab.y, -1.0, flags);
}
