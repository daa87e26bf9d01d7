// set_lookup: the segment pairs (sa, sb), sa < sb, that a contact set's box meets, as the
// set_lookup_* kernels list them in `set_lookup` (layout and CPU twins in src/sched/lookup.rs:
// lookup_ranges, lookup_set_items, lookup_words). Needs the importing kernel to import layout.

// sched::lookup::MAX_LOOKUP_SET: items (and segments sa) of one set the kernels list at most.
const MAX_LOOKUP_SET: u32 = 16384u;
// sched::lookup::MAX_LOOKUP_BUCKET: items of one segment sa set_lookup_sort ranks at most.
const MAX_LOOKUP_BUCKET: u32 = 4096u;
// lookup_set_items of a set beyond MAX_LOOKUP_SET.
const LOOKUP_TOO_BIG: u32 = 0xffffffffu;

// The segments sa0 ..= sa1 (first axis) and sb0 ..= sb1 (second axis) of a box, `nseg > 0`.
struct LookupRanges {
    sa0: u32,
    sa1: u32,
    sb0: u32,
    sb1: u32,
};

// sched::lookup::lookup_ranges. No loops.
fn lookup_ranges(bx: vec4<u32>, b: u32, nseg: u32) -> LookupRanges {
    let last = nseg - 1u;
    return LookupRanges(bx.x / b, min(bx.y / b, last), bx.z / b, min(bx.w / b, last));
}

// sched::lookup::lookup_set_items: the items (sa, sb), sa < sb, of the ranges, or LOOKUP_TOO_BIG
// when they span more than MAX_LOOKUP_SET segments sa or hold more than MAX_LOOKUP_SET items.
// Loop bound: MAX_LOOKUP_SET (one iteration per segment sa).
fn lookup_set_items(r: LookupRanges) -> u32 {
    if r.sa1 < r.sa0 {
        return 0u;
    }
    if r.sa1 - r.sa0 >= MAX_LOOKUP_SET {
        return LOOKUP_TOO_BIG;
    }
    var total = 0u;
    // sa ≤ sa1 ≤ nseg − 1, so sa + 1 never wraps.
    for (var sa = r.sa0; sa <= r.sa1; sa = sa + 1u) {
        let lo = max(r.sb0, sa + 1u);
        if lo <= r.sb1 {
            let n = r.sb1 - lo + 1u;
            if n > MAX_LOOKUP_SET - total {
                return LOOKUP_TOO_BIG;
            }
            total = total + n;
        }
    }
    return total;
}

// a + b, or u32::MAX where it wraps.
fn lookup_sat_add(a: u32, b: u32) -> u32 {
    if a > 0xffffffffu - b {
        return 0xffffffffu;
    }
    return a + b;
}

// sched::lookup::lookup_words: the words of the lookup of `ni` items and `nsets` boxes over `nseg`
// segments (3 when nseg = 0: the lookup of no sets), saturating at u32::MAX. No loops.
fn lookup_words(nseg: u32, ni: u32, nsets: u32) -> u32 {
    if nseg == 0u {
        return 3u;
    }
    let item_words = select(2u * ni, 0xffffffffu, ni > 0x7fffffffu);
    let box_words = select(4u * nsets, 0xffffffffu, nsets > 0x3fffffffu);
    return lookup_sat_add(lookup_sat_add(3u + nseg, item_words), box_words);
}
