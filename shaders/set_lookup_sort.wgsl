// set_lookup_sort: the last pass of the contact sets' lookup; writes `set_lookup` (layout in
// src/sched/lookup.rs) from the bucket ends set_lookup_write left in lookup_offsets and its
// unordered items. Thread 0 writes the word count (lookup_words) and the overflow flag to
// acl_sizes.lookup; when the words exceed its capacity (or set_lookup's length, or lookup_items
// cannot hold the items), threads 0–2 write the lookup of no sets, [0, 0, 0], within the capacity,
// and nothing else is written. Otherwise thread 0 writes the header words, thread t ≤ num_segments
// bucket t's start, thread t < num_sets set t's box, and thread t < items item t at its rank within
// its bucket by (sb, set): the keys are unique (a set lists a segment pair once), so the order is
// that of a sort, whatever order the items arrived in. A bucket of more than MAX_LOOKUP_BUCKET items
// is written as zeros (it owns nothing, which is safe) and raises ACL_SIZES_LOOKUP_BUCKET.
// CPU twin: sched::lookup::set_lookup_sort. One thread per max(segments + 1, set slots, items).
// Loop bound: 32 halvings (the item's bucket), then MAX_LOOKUP_BUCKET items (its rank).

#import layout
#import set_lookup

@group(0) @binding(0) var<uniform> acl_lookup: LookupUniform;
@group(0) @binding(1) var<storage, read> sets: array<ContactSet>;
@group(0) @binding(2) var<storage, read> lookup_offsets: array<u32>;
@group(0) @binding(3) var<storage, read> lookup_items: array<u32>;
@group(0) @binding(4) var<storage, read_write> set_lookup: array<u32>;
@group(0) @binding(5) var<storage, read_write> acl_sizes: AclSizes;

@compute @workgroup_size(256)
fn set_lookup_sort(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
    @builtin(local_invocation_index) lid: u32,
) {
    let t = thread_index(wid, nwg, lid, 256u);
    let nseg = acl_lookup.num_segments;
    var ni = 0u;
    var nbox = 0u;
    if nseg > 0u {
        ni = lookup_offsets[nseg];
        nbox = min(acl_lookup.num_sets, arrayLength(&sets));
    }
    let words = lookup_words(nseg, ni, nbox);
    let cap = min(acl_sizes.lookup.capacity, arrayLength(&set_lookup));
    let over = words > cap || ni > arrayLength(&lookup_items) / 2u;
    if t == 0u {
        atomicStore(&acl_sizes.lookup.count, words);
        atomicStore(&acl_sizes.lookup.overflow, u32(over));
    }
    if over {
        if t < min(3u, cap) {
            set_lookup[t] = 0u;
        }
        return;
    }
    if t == 0u {
        set_lookup[0] = nseg;
        set_lookup[1] = ni;
    }
    if t <= nseg {
        var start = 0u;
        if t > 0u {
            start = lookup_offsets[t - 1u];
        }
        set_lookup[2u + t] = start;
    }
    let items = 3u + nseg;
    if t < nbox {
        let o = items + 2u * ni + 4u * t;
        let bx = sets[t].bx;
        set_lookup[o] = bx.x;
        set_lookup[o + 1u] = bx.y;
        set_lookup[o + 2u] = bx.z;
        set_lookup[o + 3u] = bx.w;
    }
    if t < ni {
        // Item t's bucket: the first segment whose bucket ends past t (ni > t, so there is one).
        var lo = 0u;
        var hi = nseg - 1u;
        for (var it = 0u; it < 32u && lo < hi; it = it + 1u) {
            let mid = (lo + hi) / 2u;
            if lookup_offsets[mid] > t {
                hi = mid;
            } else {
                lo = mid + 1u;
            }
        }
        var start = 0u;
        if lo > 0u {
            start = lookup_offsets[lo - 1u];
        }
        let end = lookup_offsets[lo];
        if end - start > MAX_LOOKUP_BUCKET {
            atomicOr(&acl_sizes.errors, ACL_SIZES_LOOKUP_BUCKET);
            set_lookup[items + 2u * t] = 0u;
            set_lookup[items + 2u * t + 1u] = 0u;
            return;
        }
        let sb = lookup_items[2u * t];
        let s = lookup_items[2u * t + 1u];
        var rank = 0u;
        for (var j = start; j < end; j = j + 1u) {
            let jb = lookup_items[2u * j];
            if jb < sb || (jb == sb && lookup_items[2u * j + 1u] < s) {
                rank = rank + 1u;
            }
        }
        let p = items + 2u * (start + rank);
        set_lookup[p] = sb;
        set_lookup[p + 1u] = s;
    }
}
