// pool_compact_blocks: as pool_compact_points for k_pool (the K̄ blocks, 6 floats each; the kind-1
// third of pool_dest). CPU twin: acl::rebuild::pool_compact_blocks. One thread per block of the
// new pool; loop bound: 32 (the search).

#import layout
#import acl_pool

@group(0) @binding(0) var<uniform> rebuild: RebuildParams;
@group(0) @binding(1) var<storage, read> sets: array<ContactSet>;
@group(0) @binding(2) var<storage, read> pool_dest: array<u32>;
@group(0) @binding(3) var<storage, read> k_pool: array<array<f32, 6>>;
@group(0) @binding(4) var<storage, read_write> k_next: array<array<f32, 6>>;

@compute @workgroup_size(256)
fn pool_compact_blocks(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
    @builtin(local_invocation_index) lid: u32,
) {
    let e = thread_index(wid, nwg, lid, 256u);
    let ns = rebuild.num_sets;
    if ns == 0u || e >= pool_dest_offset(1u, ns, ns) {
        return;
    }
    let s = pool_dest_owner(1u, ns, e);
    k_next[e] = k_pool[sets[s].k_off + (e - pool_dest_offset(1u, ns, s))];
}
