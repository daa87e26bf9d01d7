// newcomer_keep: fresh_offsets[i] = 1 for sorted candidate i (below min(count, capacity) of
// sched_counters.cand) that is the first of its key, whose segment pair the same-yarn rule does not
// exclude outright (pair_class) and that has no entry in the table (binary search of the first
// sched.num_entries entries), else 0; fresh_offsets[capacity] = 0 (the scan's trailing element,
// which becomes the number of new entries). CPU twin: sched::newcomer_keep.
// One thread per candidate slot, plus one. Loop bound: 32 halvings (entry search).

#import layout
#import penalty
#import sched
#import sched_class

@group(0) @binding(0) var<storage, read> sched: SchedUniform;
@group(0) @binding(1) var<storage, read> segments: array<Segment>;
@group(0) @binding(2) var<storage, read> quad_arc: array<f32>;
@group(0) @binding(3) var<storage, read> seg_contact: array<SegmentContact>;
@group(0) @binding(4) var<storage, read> entries: array<SchedEntry>;
@group(0) @binding(5) var<storage, read> sched_cand: array<KeyValue>;
@group(0) @binding(6) var<storage, read_write> fresh_offsets: array<u32>;
@group(0) @binding(7) var<storage, read_write> sched_counters: SchedCounters;

#import sched_entry_search

@compute @workgroup_size(256)
fn newcomer_keep(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
    @builtin(local_invocation_index) lid: u32,
) {
    let i = thread_index(wid, nwg, lid, 256u);
    let cap = sched_counters.cand.capacity;
    if i > cap {
        return;
    }
    let n = min(atomicLoad(&sched_counters.cand.count), cap);
    if i >= n {
        fresh_offsets[i] = 0u;
        return;
    }
    let kv = sched_cand[i];
    if i > 0u {
        let p = sched_cand[i - 1u];
        if p.key_lo == kv.key_lo && p.key_hi == kv.key_hi {
            fresh_offsets[i] = 0u;
            return;
        }
    }
    let ab = cand_pair(kv, cand_key_bits(sched.num_segments));
    if pair_class(ab.x, ab.y) == PAIR_ALL {
        fresh_offsets[i] = 0u;
        return;
    }
    fresh_offsets[i] = select(1u, 0u, has_entry(ab));
}
