// pool_compact_blocks: as pool_compact_points for k_pool (the K̄ blocks, 6 floats each; the kind-1
// third of pool_dest). CPU twin: acl::rebuild::pool_compact_blocks. The pools may be in pages
// (src/acl/pages.rs, both of one stride): dispatched once per pair of a new page (k_next,
// block_page.page) and an old one (k_pool, block_page.source), one thread per block the new page
// holds; a thread copies its block when its set lives in both pages (a block in the new page's room
// past its stride that belongs to the next page's first set is left alone). One page each: one
// dispatch over the new pool. Loop bound: 32 (the search).

#import layout
#import acl_pool
#import pool_page

@group(0) @binding(0) var<uniform> rebuild: RebuildParams;
@group(0) @binding(1) var<storage, read> sets: array<ContactSet>;
@group(0) @binding(2) var<storage, read> pool_dest: array<u32>;
@group(0) @binding(3) var<storage, read> k_pool: array<array<f32, 6>>;
@group(0) @binding(4) var<storage, read_write> k_next: array<array<f32, 6>>;
@group(0) @binding(5) var<uniform> block_page: PoolPage;

@compute @workgroup_size(256)
fn pool_compact_blocks(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
    @builtin(local_invocation_index) lid: u32,
) {
    let at = thread_index(wid, nwg, lid, 256u);
    let e = page_base(block_page) + at;
    let ns = rebuild.num_sets;
    if ns == 0u || at >= block_page.len || e >= pool_dest_offset(1u, ns, ns) {
        return;
    }
    let s = pool_dest_owner(1u, ns, e);
    let to = pool_dest_offset(1u, ns, s);
    let old = sets[s].k_off;
    if !page_holds(block_page, to) || !page_source_holds(block_page, old) {
        return;
    }
    k_next[at] = k_pool[old - page_source_base(block_page) + (e - to)];
}
