// pool_compact_watch: as pool_compact_points for watch_pool and watch_loc_pool (the kind-2 third
// of pool_dest). CPU twin: acl::rebuild::pool_compact_watch. The pools may be in pages
// (src/acl/pages.rs, both of one stride), as pool_compact_blocks' are: dispatched once per pair of
// a new page (watch_next, watch_loc_next; watch_pool_page.page) and an old one (watch_pool,
// watch_loc_pool; watch_pool_page.source), one thread per entry the new page holds; a thread
// copies its entry when its set lives in both pages. One page each: one dispatch over the new
// pools. Loop bound: 32 (the search).

#import layout
#import acl_pool
#import pool_page

@group(0) @binding(0) var<uniform> rebuild: RebuildParams;
@group(0) @binding(1) var<storage, read> sets: array<ContactSet>;
@group(0) @binding(2) var<storage, read> pool_dest: array<u32>;
@group(0) @binding(3) var<storage, read> watch_pool: array<WatchPair>;
@group(0) @binding(4) var<storage, read> watch_loc_pool: array<WatchLoc>;
@group(0) @binding(5) var<storage, read_write> watch_next: array<WatchPair>;
@group(0) @binding(6) var<storage, read_write> watch_loc_next: array<WatchLoc>;
@group(0) @binding(7) var<uniform> watch_pool_page: PoolPage;

@compute @workgroup_size(256)
fn pool_compact_watch(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
    @builtin(local_invocation_index) lid: u32,
) {
    let at = thread_index(wid, nwg, lid, 256u);
    let e = page_base(watch_pool_page) + at;
    let ns = rebuild.num_sets;
    if ns == 0u || at >= watch_pool_page.len || e >= pool_dest_offset(2u, ns, ns) {
        return;
    }
    let s = pool_dest_owner(2u, ns, e);
    let to = pool_dest_offset(2u, ns, s);
    let old = sets[s].w_off;
    if !page_holds(watch_pool_page, to) || !page_source_holds(watch_pool_page, old) {
        return;
    }
    let o = old - page_source_base(watch_pool_page) + (e - to);
    watch_next[at] = watch_pool[o];
    watch_loc_next[at] = watch_loc_pool[o];
}
