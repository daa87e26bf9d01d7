// The pool allocation's values per dirty set (its sizes in the four pools, and 1 when it releases
// pairs) and their sums over 256-thread workgroups, shared by pool_alloc_size (each workgroup's
// sums into alloc_groups) and pool_alloc (each dirty set's exclusive prefix: the sums of the groups
// before its own plus a workgroup scan, as shared/group_prefix.wgsl does for one u32), so that the
// values need no scan dispatch. CPU twins: acl::rebuild::pool_alloc_size and pool_alloc.
// The importer declares rebuild, sets, dirty and plans (and, for alloc_prefix, alloc_groups) and
// imports layout, acl and acl_rebuild; every thread of the workgroup calls alloc_sum and
// alloc_prefix in uniform control flow (they have barriers).
// Loop bounds: alloc_prefix loads ⌈group / 256⌉ group sums a thread; alloc_sum's 8 halving steps,
// alloc_inclusive_scan's 8 doubling steps (fixed).

struct AllocValues {
    sizes: vec4<u32>,
    releases: u32,
};

var<workgroup> alloc_sizes_part: array<vec4<u32>, 256>;
var<workgroup> alloc_releases_part: array<u32, 256>;

fn alloc_add(a: AllocValues, b: AllocValues) -> AllocValues {
    return AllocValues(a.sizes + b.sizes, a.releases + b.releases);
}

// Dirty set t's values (acl::rebuild::plan_sizes, plan_release); none past the list.
fn alloc_values(t: u32) -> AllocValues {
    var v = AllocValues(vec4<u32>(0u), 0u);
    if t < rebuild.num_dirty {
        let p = plans[t];
        let deleted = (p.flags & PLAN_DELETE) != 0u;
        if !deleted {
            let zero = (p.flags & PLAN_ZERO) != 0u;
            v.sizes = vec4<u32>(p.n_cp, select(tri_len(p.n_cp), 0u, zero), p.n_watch, select(p.touching, 0u, zero));
        }
        v.releases = select(0u, 1u, deleted || any(p.new_bx != sets[dirty[t]].bx));
    }
    return v;
}

// The sum of the workgroup's 256 values (tree reduction); the arrays are free again on return.
fn alloc_sum(lid: u32, v: AllocValues) -> AllocValues {
    alloc_sizes_part[lid] = v.sizes;
    alloc_releases_part[lid] = v.releases;
    workgroupBarrier();
    for (var s = 128u; s > 0u; s = s >> 1u) {
        if lid < s {
            alloc_sizes_part[lid] = alloc_sizes_part[lid] + alloc_sizes_part[lid + s];
            alloc_releases_part[lid] = alloc_releases_part[lid] + alloc_releases_part[lid + s];
        }
        workgroupBarrier();
    }
    let total = AllocValues(alloc_sizes_part[0], alloc_releases_part[0]);
    workgroupBarrier();
    return total;
}

// Thread lid's inclusive prefix of the workgroup's values (Hillis–Steele).
fn alloc_inclusive_scan(lid: u32, v: AllocValues) -> AllocValues {
    alloc_sizes_part[lid] = v.sizes;
    alloc_releases_part[lid] = v.releases;
    workgroupBarrier();
    for (var off = 1u; off < 256u; off = off << 1u) {
        var a = vec4<u32>(0u);
        var r = 0u;
        if lid >= off {
            a = alloc_sizes_part[lid - off];
            r = alloc_releases_part[lid - off];
        }
        workgroupBarrier();
        alloc_sizes_part[lid] = alloc_sizes_part[lid] + a;
        alloc_releases_part[lid] = alloc_releases_part[lid] + r;
        workgroupBarrier();
    }
    return AllocValues(alloc_sizes_part[lid], alloc_releases_part[lid]);
}

// The values of the dirty sets before this thread's (group·256 + lid): the groups before its own
// (thread j adds groups j, j + 256, …), then the workgroup's threads before it.
fn alloc_prefix(group: u32, lid: u32, v: AllocValues) -> AllocValues {
    var below = AllocValues(vec4<u32>(0u), 0u);
    for (var j = lid; j < group; j = j + 256u) {
        let g = alloc_groups[j];
        below = alloc_add(below, AllocValues(g.sizes, g.releases));
    }
    let base = alloc_sum(lid, below);
    let incl = alloc_inclusive_scan(lid, v);
    return AllocValues(base.sizes + incl.sizes - v.sizes, base.releases + incl.releases - v.releases);
}
