// newcomer_compact: every kept candidate (fresh_offsets[i + 1] > fresh_offsets[i] after the scan)
// becomes a new schedule entry — due (ENTRY_DUE), bound −1, ENTRY_MIXED when its pair is of mixed
// class — at slot fresh_offsets[i] of fresh, when below sched_counters.fresh.capacity: sorted and
// unique, as the candidates are. Thread 0 records the total fresh_offsets[n] (n the live
// candidates, where the counted scan ends) and its overflow flag in sched_counters.fresh.
// CPU twin: sched::newcomer_compact. One thread per live candidate, at least one. No loops.

#import layout
#import penalty
#import sched
#import sched_class

@group(0) @binding(0) var<uniform> sched: SchedUniform;
@group(0) @binding(1) var<storage, read> segments: array<Segment>;
@group(0) @binding(2) var<storage, read> quad_arc: array<f32>;
@group(0) @binding(3) var<storage, read> seg_contact: array<SegmentContact>;
@group(0) @binding(4) var<storage, read> sched_cand: array<KeyValue>;
@group(0) @binding(5) var<storage, read> fresh_offsets: array<u32>;
@group(0) @binding(6) var<storage, read_write> fresh: array<SchedEntry>;
@group(0) @binding(7) var<storage, read_write> sched_counters: SchedCounters;

@compute @workgroup_size(256)
fn newcomer_compact(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
    @builtin(local_invocation_index) lid: u32,
) {
    let i = thread_index(wid, nwg, lid, 256u);
    let ccap = sched_counters.cand.capacity;
    let fcap = sched_counters.fresh.capacity;
    // The live candidates; the total sits after them (the counted scan stops there).
    let n = min(atomicLoad(&sched_counters.cand.count), ccap);
    if i == 0u {
        let total = fresh_offsets[n];
        atomicStore(&sched_counters.fresh.count, total);
        if total > fcap {
            atomicStore(&sched_counters.fresh.overflow, 1u);
        }
    }
    if i >= n {
        return;
    }
    let slot = fresh_offsets[i];
    if fresh_offsets[i + 1u] == slot || slot >= fcap {
        return;
    }
    let ab = cand_pair(sched_cand[i], cand_key_bits(sched.num_segments));
    var flags = ENTRY_DUE;
    if pair_class(ab.x, ab.y) == PAIR_MIXED {
        flags = flags | ENTRY_MIXED;
    }
    fresh[slot] = SchedEntry(ab.x, ab.y, -1.0, flags);
}
