// newcomer_list_compact: the listed newcomer search's candidates (newcomer_list_write's, the first
// sched_counters.cand.count of sched_cand, in the order its threads appended them) as new schedule
// entries in one workgroup, in place of the counted sort, newcomer_keep, their scan and
// newcomer_compact, with the same result: the keys sorted (a bitonic sort in workgroup memory,
// padded to a power of two with the largest key), each first of its key whose pair the same-yarn
// rule does not exclude outright (pair_class) and that has no entry in the table (binary search of
// the first sched.num_entries entries) kept, and the kept ones written in order — due
// (ENTRY_DUE), bound −1, ENTRY_MIXED for a pair of mixed class — into fresh (those below
// sched_counters.fresh.capacity; the total and its overflow flag into sched_counters.fresh).
// With more than NEWCOMER_LIST_CANDIDATES candidates (or more than their capacity) it writes no
// entry: the step needs the grid's search, which the host reads from the count. CPU twin:
// sched::newcomer_list_compact. One workgroup of 256 threads.
// Loop bounds per thread: 4 keys loaded; 55 bitonic stages (1,024 keys) of 2 pairs; 4 keys kept,
// each with 32 halvings (entry search); 8 scan steps; 4 entries written.

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
@group(0) @binding(6) var<storage, read_write> fresh: array<SchedEntry>;
@group(0) @binding(7) var<storage, read_write> sched_counters: SchedCounters;

#import sched_entry_search
#import workgroup_scan

var<workgroup> key_lo: array<u32, NEWCOMER_LIST_CANDIDATES>;
var<workgroup> key_hi: array<u32, NEWCOMER_LIST_CANDIDATES>;
var<workgroup> live: u32;

// Key i after key l.
fn key_after(i: u32, l: u32) -> bool {
    return key_hi[i] > key_hi[l] || (key_hi[i] == key_hi[l] && key_lo[i] > key_lo[l]);
}

// Whether the sorted key i is kept: the first of its key, a pair not excluded outright, no entry.
fn kept(i: u32, n: u32) -> bool {
    if i >= n || (i > 0u && key_lo[i] == key_lo[i - 1u] && key_hi[i] == key_hi[i - 1u]) {
        return false;
    }
    let ab = cand_pair(KeyValue(key_lo[i], key_hi[i], 0u, 0u), cand_key_bits(sched.num_segments));
    return pair_class(ab.x, ab.y) != PAIR_ALL && !has_entry(ab);
}

@compute @workgroup_size(256)
fn newcomer_list_compact(@builtin(local_invocation_index) lid: u32) {
    if lid == 0u {
        let count = atomicLoad(&sched_counters.cand.count);
        // (0xffffffff: too many, no entry.)
        live = select(
            0xffffffffu,
            count,
            count <= min(NEWCOMER_LIST_CANDIDATES, sched_counters.cand.capacity),
        );
    }
    let n = workgroupUniformLoad(&live);
    if n == 0xffffffffu {
        if lid == 0u {
            atomicStore(&sched_counters.fresh.count, 0u);
        }
        return;
    }
    var p = 1u;
    for (var it = 0u; it < 11u && p < n; it = it + 1u) {
        p = p << 1u;
    }
    for (var i = lid; i < p; i = i + 256u) {
        if i < n {
            let kv = sched_cand[i];
            key_lo[i] = kv.key_lo;
            key_hi[i] = kv.key_hi;
        } else {
            key_lo[i] = 0xffffffffu;
            key_hi[i] = 0xffffffffu;
        }
    }
    workgroupBarrier();
    for (var k = 2u; k <= p; k = k << 1u) {
        for (var j = k >> 1u; j > 0u; j = j >> 1u) {
            for (var i = lid; i < p; i = i + 256u) {
                let l = i ^ j;
                if l > i {
                    let up = (i & k) == 0u;
                    if (up && key_after(i, l)) || (!up && key_after(l, i)) {
                        let tl = key_lo[i];
                        let th = key_hi[i];
                        key_lo[i] = key_lo[l];
                        key_hi[i] = key_hi[l];
                        key_lo[l] = tl;
                        key_hi[l] = th;
                    }
                }
            }
            workgroupBarrier();
        }
    }
    // Each thread keeps 4 consecutive keys, so the entries come out in key order.
    var keep = 0u;
    var mine = 0u;
    for (var e = 0u; e < 4u; e = e + 1u) {
        if kept(4u * lid + e, n) {
            keep = keep | (1u << e);
            mine = mine + 1u;
        }
    }
    let upto = workgroup_inclusive_scan(lid, mine);
    let fcap = sched_counters.fresh.capacity;
    var slot = upto - mine;
    let kb = cand_key_bits(sched.num_segments);
    for (var e = 0u; e < 4u; e = e + 1u) {
        if (keep & (1u << e)) != 0u {
            if slot < fcap {
                let i = 4u * lid + e;
                let ab = cand_pair(KeyValue(key_lo[i], key_hi[i], 0u, 0u), kb);
                var flags = ENTRY_DUE;
                if pair_class(ab.x, ab.y) == PAIR_MIXED {
                    flags = flags | ENTRY_MIXED;
                }
                fresh[slot] = SchedEntry(ab.x, ab.y, -1.0, flags);
            }
            slot = slot + 1u;
        }
    }
    if lid == 255u {
        let total = upto;
        atomicStore(&sched_counters.fresh.count, total);
        if total > fcap {
            atomicStore(&sched_counters.fresh.overflow, 1u);
        }
    }
}
