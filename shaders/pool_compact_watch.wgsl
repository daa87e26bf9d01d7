// pool_compact_watch: as pool_compact_points for watch_pool and watch_loc_pool (the kind-2 third
// of pool_dest). CPU twin: acl::rebuild::pool_compact_watch. One thread per entry of the new
// pools; loop bound: 32 (the search).

#import layout
#import acl_pool

@group(0) @binding(0) var<uniform> rebuild: RebuildParams;
@group(0) @binding(1) var<storage, read> sets: array<ContactSet>;
@group(0) @binding(2) var<storage, read> pool_dest: array<u32>;
@group(0) @binding(3) var<storage, read> watch_pool: array<WatchPair>;
@group(0) @binding(4) var<storage, read> watch_loc_pool: array<WatchLoc>;
@group(0) @binding(5) var<storage, read_write> watch_next: array<WatchPair>;
@group(0) @binding(6) var<storage, read_write> watch_loc_next: array<WatchLoc>;

@compute @workgroup_size(256)
fn pool_compact_watch(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
    @builtin(local_invocation_index) lid: u32,
) {
    let e = thread_index(wid, nwg, lid, 256u);
    let ns = rebuild.num_sets;
    if ns == 0u || e >= pool_dest_offset(2u, ns, ns) {
        return;
    }
    let s = pool_dest_owner(2u, ns, e);
    let o = sets[s].w_off + (e - pool_dest_offset(2u, ns, s));
    watch_next[e] = watch_pool[o];
    watch_loc_next[e] = watch_loc_pool[o];
}
