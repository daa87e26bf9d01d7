// pool_compact_vectors: as pool_compact_points for the point pools f0 and dbar: entry e is entry
// e − offset(s) of set s's old range, s the set whose new range holds e (a binary search of the
// scanned pool_dest): the live sets' ranges in set order. CPU twin:
// acl::rebuild::pool_compact_vectors. One thread per entry of the new pools; loop bound: 32
// (the search).

#import layout
#import acl_pool

@group(0) @binding(0) var<uniform> rebuild: RebuildParams;
@group(0) @binding(1) var<storage, read> sets: array<ContactSet>;
@group(0) @binding(2) var<storage, read> pool_dest: array<u32>;
@group(0) @binding(3) var<storage, read> f0_pool: array<vec4<f32>>;
@group(0) @binding(4) var<storage, read> dbar_pool: array<vec4<f32>>;
@group(0) @binding(5) var<storage, read_write> f0_next: array<vec4<f32>>;
@group(0) @binding(6) var<storage, read_write> dbar_next: array<vec4<f32>>;

@compute @workgroup_size(256)
fn pool_compact_vectors(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
    @builtin(local_invocation_index) lid: u32,
) {
    let e = thread_index(wid, nwg, lid, 256u);
    let ns = rebuild.num_sets;
    if ns == 0u || e >= pool_dest_offset(0u, ns, ns) {
        return;
    }
    let s = pool_dest_owner(0u, ns, e);
    let o = sets[s].cp_off + (e - pool_dest_offset(0u, ns, s));
    f0_next[e] = f0_pool[o];
    dbar_next[e] = dbar_pool[o];
}
