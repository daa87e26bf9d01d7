// sched::find_entry: whether segments ab.x < ab.y have an entry among the first sched.num_entries of
// the table `entries`, sorted by (seg_a, seg_b) (binary search). The importing kernel binds
// `sched` (a SchedUniform with the table's length) and `entries`.
// Loop bound: 32 halvings.
fn has_entry(ab: vec2<u32>) -> bool {
    var lo = 0u;
    var hi = sched.num_entries;
    for (var it = 0u; it < 32u && lo < hi; it = it + 1u) {
        let mid = (lo + hi) / 2u;
        let m = entries[mid];
        if m.seg_a < ab.x || (m.seg_a == ab.x && m.seg_b < ab.y) {
            lo = mid + 1u;
        } else {
            hi = mid;
        }
    }
    return lo < sched.num_entries && entries[lo].seg_a == ab.x && entries[lo].seg_b == ab.y;
}
