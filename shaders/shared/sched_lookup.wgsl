// sched_lookup: the contact sets' ownership of the quadrature pairs of one segment pair, from the
// packed `set_lookup` buffer (layout in src/sched/lookup.rs), and the pair test of an entry's
// processing. Needs the importing kernel to bind `sched: SchedUniform`, `set_lookup: array<u32>` and
// `qpts: array<vec4<f32>>`, and to import layout, vec, penalty, sched and sched_bits.

struct Owned {
    bits: vec4<u32>,
    overflow: bool,
};

// sched::owned_bits. Loop bound: 32 halvings, then at most MAX_LOOKUP items × b² bits.
fn owned_bits(sa: u32, sb: u32, b: u32) -> Owned {
    var out: Owned;
    out.bits = vec4<u32>(0u);
    out.overflow = false;
    let nseg = set_lookup[0];
    if sa >= nseg {
        return out;
    }
    let items = 3u + nseg;
    let boxes_base = items + 2u * set_lookup[1];
    var lo = set_lookup[2u + sa];
    var hi = set_lookup[3u + sa];
    let end = hi;
    for (var it = 0u; it < 32u && lo < hi; it = it + 1u) {
        let mid = (lo + hi) / 2u;
        if set_lookup[items + 2u * mid] < sb {
            lo = mid + 1u;
        } else {
            hi = mid;
        }
    }
    var seen = 0u;
    for (var at = lo; at < end && set_lookup[items + 2u * at] == sb; at = at + 1u) {
        seen = seen + 1u;
        if seen > MAX_LOOKUP {
            out.bits = vec4<u32>(0u);
            out.overflow = true;
            return out;
        }
        let k = set_lookup[items + 2u * at + 1u];
        let o = boxes_base + 4u * k;
        let bx = vec4<u32>(set_lookup[o], set_lookup[o + 1u], set_lookup[o + 2u], set_lookup[o + 3u]);
        out.bits = out.bits | box_bits(bx, sa, sb, b);
    }
    return out;
}

// The squared distance of the quadrature pair (a·q + ka, b·q + kb) of a schedule entry, or -1 when a
// contact set owns the pair or the same-yarn rule excludes it (entries of mixed class): the tests of
// sched::process_entry, in its order. Used by schedule_process and touching_write alike, so both
// select the same pairs.
fn entry_pair_d2(a: u32, b: u32, ka: u32, kb: u32, owned: vec4<u32>, mixed: bool, loop_len: f32) -> f32 {
    let q = sched.quadrature;
    let bit = ka * q + kb;
    if (owned[bit / 32u] & (1u << (bit % 32u))) != 0u {
        return -1.0;
    }
    let ya = qpts[a * q + ka];
    let yb = qpts[b * q + kb];
    if mixed && arc_excluded(ya.w, yb.w, loop_len, sched.exclusion_arc) {
        return -1.0;
    }
    let x = ya.xyz - yb.xyz;
    return dot3(x, x);
}
