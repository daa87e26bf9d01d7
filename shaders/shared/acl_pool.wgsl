// acl_pool: the offsets of the pool compaction (acl::rebuild::pool_compact), from the scanned
// `pool_dest` buffer that the importing kernel binds. Needs layout.

// acl::rebuild::pool_dest_offset: where kind `kind` (0 points, 1 blocks, 2 watched pairs) of set s
// goes in the compacted pools, from the scanned pool_dest of `ns` sets (three thirds of ns + 1).
fn pool_dest_offset(kind: u32, ns: u32, s: u32) -> u32 {
    let base = kind * (ns + 1u);
    return pool_dest[base + s] - pool_dest[base];
}

// The set whose compacted range of kind `kind` holds entry e (< the pool's new length): the last set
// s with offset(s) ≤ e (sets with empty ranges share their offset with the next, so the last one is
// the one whose range is not empty). Needs the importing kernel to bind `pool_dest`.
// Loop bound: 32 halvings.
fn pool_dest_owner(kind: u32, ns: u32, e: u32) -> u32 {
    var lo = 0u;
    var hi = ns;
    // Invariant: offset(lo) ≤ e < offset(hi) (offset(ns) is the pool's length).
    for (var it = 0u; it < 32u && hi - lo > 1u; it = it + 1u) {
        let mid = lo + (hi - lo) / 2u;
        if pool_dest_offset(kind, ns, mid) <= e {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    return lo;
}
