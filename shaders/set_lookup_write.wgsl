// set_lookup_write: thread s < num_sets lists the items (sb, s) of live set s's box in the scratch
// `lookup_items` (two words each), in bucket sa's range: a run of them per segment sa at a cursor
// taken with atomicAdd on lookup_offsets[sa] (the scanned bucket starts, which become the bucket
// ends), so items land in any order within their bucket; set_lookup_sort orders them. Nothing is
// written when the lookup (lookup_words) would not fit acl_sizes.lookup.capacity, or its items
// `lookup_items` (which must hold that capacity in words); sets beyond MAX_LOOKUP_SET are skipped
// (set_lookup_count raised ACL_SIZES_LOOKUP_SET). CPU twin: sched::lookup::set_lookup_write.
// One thread per set slot. Loop bound: MAX_LOOKUP_SET (lookup_set_items), then MAX_LOOKUP_SET
// segments sa with MAX_LOOKUP_SET items in all.

#import layout
#import acl
#import set_lookup

@group(0) @binding(0) var<uniform> acl_lookup: LookupUniform;
@group(0) @binding(1) var<storage, read> sets: array<ContactSet>;
@group(0) @binding(2) var<storage, read_write> lookup_offsets: array<atomic<u32>>;
@group(0) @binding(3) var<storage, read_write> lookup_items: array<u32>;
@group(0) @binding(4) var<storage, read_write> acl_sizes: AclSizes;

@compute @workgroup_size(256)
fn set_lookup_write(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
    @builtin(local_invocation_index) lid: u32,
) {
    let s = thread_index(wid, nwg, lid, 256u);
    let nseg = acl_lookup.num_segments;
    let n = min(acl_lookup.num_sets, arrayLength(&sets));
    if s >= n || nseg == 0u {
        return;
    }
    // The total is past every bucket this pass moves, so it reads the same in every thread.
    let ni = atomicLoad(&lookup_offsets[nseg]);
    let words = lookup_words(nseg, ni, n);
    if words > acl_sizes.lookup.capacity || ni > arrayLength(&lookup_items) / 2u {
        return;
    }
    let cs = sets[s];
    if (cs.flags & SET_LIVE) == 0u {
        return;
    }
    let r = lookup_ranges(cs.bx, acl_lookup.quadrature, nseg);
    if lookup_set_items(r) == LOOKUP_TOO_BIG {
        atomicOr(&acl_sizes.errors, ACL_SIZES_LOOKUP_SET);
        return;
    }
    let len = arrayLength(&lookup_items);
    for (var sa = r.sa0; sa <= r.sa1; sa = sa + 1u) {
        let lo = max(r.sb0, sa + 1u);
        if lo > r.sb1 {
            continue;
        }
        let at = atomicAdd(&lookup_offsets[sa], r.sb1 - lo + 1u);
        for (var sb = lo; sb <= r.sb1; sb = sb + 1u) {
            let p = 2u * (at + sb - lo);
            if p + 1u < len {
                lookup_items[p] = sb;
                lookup_items[p + 1u] = s;
            }
        }
    }
}
