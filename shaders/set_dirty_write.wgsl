// set_dirty_write: the dirty list, after set_dirty_count and the exclusive scan of dirty_dest.
// Thread k < rebuild.num_sets: when set k was counted (its slot below the next one's), dirty[slot] =
// k, so the list is in set order; thread num_sets: the list's length dirty_dest[num_sets] into
// acl_sizes.num_dirty. `dirty` holds at most num_sets entries (no capacity to check).
// CPU twin: acl::sets::set_dirty_write. One thread per set, plus one. No loops.

#import layout

@group(0) @binding(0) var<uniform> rebuild: RebuildParams;
@group(0) @binding(1) var<storage, read> dirty_dest: array<u32>;
@group(0) @binding(2) var<storage, read_write> dirty: array<u32>;
@group(0) @binding(3) var<storage, read_write> acl_sizes: AclSizes;

@compute @workgroup_size(256)
fn set_dirty_write(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
    @builtin(local_invocation_index) lid: u32,
) {
    let k = thread_index(wid, nwg, lid, 256u);
    let n = rebuild.num_sets;
    if k < n {
        let slot = dirty_dest[k];
        if dirty_dest[k + 1u] != slot {
            dirty[slot] = k;
        }
    } else if k == n {
        acl_sizes.num_dirty = dirty_dest[n];
    }
}
