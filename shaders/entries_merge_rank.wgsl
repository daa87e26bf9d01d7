// entries_merge_rank: the sorted table `entries` (num_entries) and the sorted new entries `fresh`
// (num_fresh, keys not in the table) merged into entries_out: thread i < num_entries puts table entry
// i at i + (fresh entries with a smaller (seg_a, seg_b) key), thread num_entries + j puts fresh entry j
// at j + (table entries with a smaller key). CPU twin: sched::entries_merge_rank.
// One thread per entry of either list. Loop bound: 32 halvings (binary search).

#import layout

@group(0) @binding(0) var<storage, read> sched: SchedUniform;
@group(0) @binding(1) var<storage, read> entries: array<SchedEntry>;
@group(0) @binding(2) var<storage, read> fresh: array<SchedEntry>;
@group(0) @binding(3) var<storage, read_write> entries_out: array<SchedEntry>;

fn key_less(x: SchedEntry, y: SchedEntry) -> bool {
    return x.seg_a < y.seg_a || (x.seg_a == y.seg_a && x.seg_b < y.seg_b);
}

@compute @workgroup_size(256)
fn entries_merge_rank(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
    @builtin(local_invocation_index) lid: u32,
) {
    let t = thread_index(wid, nwg, lid, 256u);
    let n = sched.num_entries;
    let m = sched.num_fresh;
    if t >= n + m {
        return;
    }
    var lo = 0u;
    if t < n {
        let e = entries[t];
        var hi = m;
        for (var it = 0u; it < 32u && lo < hi; it = it + 1u) {
            let mid = (lo + hi) / 2u;
            if key_less(fresh[mid], e) {
                lo = mid + 1u;
            } else {
                hi = mid;
            }
        }
        entries_out[t + lo] = e;
    } else {
        let j = t - n;
        let f = fresh[j];
        var hi = n;
        for (var it = 0u; it < 32u && lo < hi; it = it + 1u) {
            let mid = (lo + hi) / 2u;
            if key_less(entries[mid], f) {
                lo = mid + 1u;
            } else {
                hi = mid;
            }
        }
        entries_out[j + lo] = f;
    }
}
