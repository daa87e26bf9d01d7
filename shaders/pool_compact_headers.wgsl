// pool_compact_headers: every set's offsets into the compacted pools (a zero-force set's empty
// block range stays at 0). Runs after the pool_compact_* copies, which read the old offsets. CPU
// twin: acl::rebuild::pool_compact_headers. One thread per set; no loops.

#import layout
#import acl
#import acl_pool

@group(0) @binding(0) var<uniform> rebuild: RebuildParams;
@group(0) @binding(1) var<storage, read> pool_dest: array<u32>;
@group(0) @binding(2) var<storage, read_write> sets: array<ContactSet>;

@compute @workgroup_size(256)
fn pool_compact_headers(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
    @builtin(local_invocation_index) lid: u32,
) {
    let k = thread_index(wid, nwg, lid, 256u);
    let ns = rebuild.num_sets;
    if k >= ns {
        return;
    }
    sets[k].cp_off = pool_dest_offset(0u, ns, k);
    if (sets[k].flags & SET_ZERO) != 0u {
        sets[k].k_off = 0u;
    } else {
        sets[k].k_off = pool_dest_offset(1u, ns, k);
    }
    sets[k].w_off = pool_dest_offset(2u, ns, k);
}
