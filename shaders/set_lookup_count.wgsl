// set_lookup_count: thread s < num_sets adds, for every segment sa that live set s's box meets, the
// number of its items (sa, sb), sa < sb, to lookup_offsets[sa] (atomicAdd: counts are order-free).
// A set beyond MAX_LOOKUP_SET items or segments adds none and raises ACL_SIZES_LOOKUP_SET (its
// pairs are then unowned for the scheduler, which is safe). After the exclusive scan over
// num_segments + 1 elements, lookup_offsets[sa] is bucket sa's first item and
// lookup_offsets[num_segments] the item count. CPU twin: sched::lookup::set_lookup_count.
// One thread per set slot. Loop bound: 2 · MAX_LOOKUP_SET (lookup_set_items, then the segments sa).

#import layout
#import acl
#import set_lookup

@group(0) @binding(0) var<uniform> acl_lookup: LookupUniform;
@group(0) @binding(1) var<storage, read> sets: array<ContactSet>;
@group(0) @binding(2) var<storage, read_write> lookup_offsets: array<atomic<u32>>;
@group(0) @binding(3) var<storage, read_write> acl_sizes: AclSizes;

@compute @workgroup_size(256)
fn set_lookup_count(
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
    let cs = sets[s];
    if (cs.flags & SET_LIVE) == 0u {
        return;
    }
    let r = lookup_ranges(cs.bx, acl_lookup.quadrature, nseg);
    if lookup_set_items(r) == LOOKUP_TOO_BIG {
        atomicOr(&acl_sizes.errors, ACL_SIZES_LOOKUP_SET);
        return;
    }
    for (var sa = r.sa0; sa <= r.sa1; sa = sa + 1u) {
        let lo = max(r.sb0, sa + 1u);
        if lo <= r.sb1 {
            atomicAdd(&lookup_offsets[sa], r.sb1 - lo + 1u);
        }
    }
}
