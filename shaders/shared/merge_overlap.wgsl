// merge_overlap: the overlap search of the set-merge kernels (acl::coalesce::for_each_overlap) over
// the set index. Needs the importing kernel to bind `acl_merge: MergeUniform`, `sets: array<ContactSet>`,
// `set_bin_start: array<u32>` and `set_bin_items: array<u32>`, and to import layout and merge.

// The index items the overlap search of a box looks at: those of the bins its first axis meets,
// a contiguous range of set_bin_items.
fn overlap_range(bx: vec4<u32>) -> vec2<u32> {
    return vec2<u32>(set_bin_start[bx.x / MERGE_BIN], set_bin_start[bx.y / MERGE_BIN + 1u]);
}

// The state of one overlap search of set k (coalesce::for_each_overlap).
struct OverlapCursor {
    k: u32,
    bx: vec4<u32>,
    bin: u32,
    at: u32,
    end: u32,
};

fn overlap_begin(k: u32) -> OverlapCursor {
    var c: OverlapCursor;
    c.k = k;
    c.bx = sets[k].bx;
    c.bin = c.bx.x / MERGE_BIN;
    let r = overlap_range(c.bx);
    c.at = r.x;
    c.end = r.y;
    return c;
}

// The loop iterations of a whole search (its items plus its bins), checked against
// acl_merge.scan_limit before it starts (coalesce::search_len).
fn overlap_cost(c: OverlapCursor) -> u32 {
    return c.end - c.at + c.bx.y / MERGE_BIN - c.bx.x / MERGE_BIN + 1u;
}

// The next live set m ≠ k that overlaps set k, in index order, each once (a pair of sets is taken
// in the first bin both meet, and a pair of two moved sets only from the smaller one), or NO_SET.
// Loop bound: the remaining items of the cursor's range plus the bins of the box, in all at most
// overlap_cost, which the caller checks against acl_merge.scan_limit.
fn overlap_next(c: ptr<function, OverlapCursor>) -> u32 {
    while (*c).at < (*c).end {
        let at = (*c).at;
        (*c).at = at + 1u;
        while set_bin_start[(*c).bin + 1u] <= at {
            (*c).bin = (*c).bin + 1u;
        }
        let m = set_bin_items[at];
        if m == (*c).k {
            continue;
        }
        let o = sets[m];
        if max(o.bx.x / MERGE_BIN, (*c).bx.x / MERGE_BIN) != (*c).bin {
            continue;
        }
        if (o.flags & SET_MOVED) != 0u && m < (*c).k {
            continue;
        }
        if boxes_overlap((*c).bx, o.bx) {
            return m;
        }
    }
    return NO_SET;
}
