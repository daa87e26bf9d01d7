// newcomer_keep: fresh_offsets[i] = 1 for sorted candidate i (below min(count, capacity) of
// sched_counters.cand) that is the first of its key, whose segment pair the same-yarn rule does not
// exclude outright (pair_class) and that has no entry in the table (binary search of the first
// sched.num_entries entries), else 0 (fresh_offsets[capacity] = 0). Each workgroup also writes the
// sum of its threads' flags into scan_groups (shared/scan_groups.wgsl), from which
// newcomer_compact places each kept candidate (group_prefix: no scan between the two), and adds it
// to sched_counters.fresh.count (0 at the step's start; integer atomics): the new entries' count.
// `sched` is the step's record after the merge (sched_p1), bound as a uniform so that the kernel
// keeps to 8 storage buffers. CPU twin: sched::newcomer_keep.
// One thread per candidate slot, plus one. Loop bound: 32 halvings (entry search), then
// write_scan_group's 8 halving steps.

#import layout
#import penalty
#import sched
#import sched_class
#import scan_groups

@group(0) @binding(0) var<uniform> sched: SchedUniform;
@group(0) @binding(1) var<storage, read> segments: array<Segment>;
@group(0) @binding(2) var<storage, read> quad_arc: array<f32>;
@group(0) @binding(3) var<storage, read> seg_contact: array<SegmentContact>;
@group(0) @binding(4) var<storage, read> entries: array<SchedEntry>;
@group(0) @binding(5) var<storage, read> sched_cand: array<KeyValue>;
@group(0) @binding(6) var<storage, read_write> fresh_offsets: array<u32>;
@group(0) @binding(7) var<storage, read_write> scan_groups: array<u32>;
@group(0) @binding(8) var<storage, read_write> sched_counters: SchedCounters;

#import sched_entry_search

// Slot i's flag, written to fresh_offsets[i] (none past the capacity).
fn newcomer_keep_one(i: u32) -> u32 {
    let cap = sched_counters.cand.capacity;
    if i > cap {
        return 0u;
    }
    let n = min(atomicLoad(&sched_counters.cand.count), cap);
    if i >= n {
        fresh_offsets[i] = 0u;
        return 0u;
    }
    let kv = sched_cand[i];
    if i > 0u {
        let p = sched_cand[i - 1u];
        if p.key_lo == kv.key_lo && p.key_hi == kv.key_hi {
            fresh_offsets[i] = 0u;
            return 0u;
        }
    }
    let ab = cand_pair(kv, cand_key_bits(sched.num_segments));
    if pair_class(ab.x, ab.y) == PAIR_ALL {
        fresh_offsets[i] = 0u;
        return 0u;
    }
    let keep = select(1u, 0u, has_entry(ab));
    fresh_offsets[i] = keep;
    return keep;
}

@compute @workgroup_size(256)
fn newcomer_keep(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
    @builtin(local_invocation_index) lid: u32,
) {
    let v = newcomer_keep_one(thread_index(wid, nwg, lid, 256u));
    let group = write_scan_group(wid, nwg, lid, v);
    if lid == 0u && group != 0u {
        atomicAdd(&sched_counters.fresh.count, group);
    }
}
