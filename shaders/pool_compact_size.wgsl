// pool_compact_size: the sizes of set s's model (model_sizes) into pool_dest[s] (points),
// pool_dest[S + 1 + s] (blocks) and pool_dest[2(S + 1) + s] (watched pairs), S = rebuild.num_sets,
// and 0 into the last entry of each third: one exclusive scan of the buffer gives every offset of
// the compacted pools (acl_pool.wgsl) and their lengths. CPU twin: acl::rebuild::pool_compact_size.
// One thread per set, plus one. Loop bound: 3 (the kinds).

#import layout
#import acl

@group(0) @binding(0) var<uniform> rebuild: RebuildParams;
@group(0) @binding(1) var<storage, read> sets: array<ContactSet>;
@group(0) @binding(2) var<storage, read_write> pool_dest: array<u32>;

@compute @workgroup_size(256)
fn pool_compact_size(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
    @builtin(local_invocation_index) lid: u32,
) {
    let s = thread_index(wid, nwg, lid, 256u);
    let ns = rebuild.num_sets;
    if s > ns {
        return;
    }
    var sizes = vec3<u32>(0u);
    if s < ns {
        sizes = model_sizes(sets[s]);
    }
    for (var kind = 0u; kind < 3u; kind = kind + 1u) {
        pool_dest[kind * (ns + 1u) + s] = sizes[kind];
    }
}
