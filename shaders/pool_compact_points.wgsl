// pool_compact_points: entry e of the compacted point pools cp and m is entry
// e − offset(s) of set s's old range, s the set whose new range holds e (a binary search of the
// scanned pool_dest): the live sets' ranges in set order. CPU twin:
// acl::rebuild::pool_compact_points. One thread per entry of the new pools; loop bound: 32
// (the search).

#import layout
#import acl_pool

@group(0) @binding(0) var<uniform> rebuild: RebuildParams;
@group(0) @binding(1) var<storage, read> sets: array<ContactSet>;
@group(0) @binding(2) var<storage, read> pool_dest: array<u32>;
@group(0) @binding(3) var<storage, read> cp_pool: array<u32>;
@group(0) @binding(4) var<storage, read> m_pool: array<f32>;
@group(0) @binding(5) var<storage, read_write> cp_next: array<u32>;
@group(0) @binding(6) var<storage, read_write> m_next: array<f32>;

@compute @workgroup_size(256)
fn pool_compact_points(
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
    cp_next[e] = cp_pool[o];
    m_next[e] = m_pool[o];
}
