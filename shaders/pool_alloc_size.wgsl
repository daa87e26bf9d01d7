// pool_alloc_size: the rebuild round's allocation sums per 256 dirty sets (acl::rebuild::pool_alloc_size,
// CPU twin), after set_rebuild_size and before set_rebuild_headers (it reads the dirty sets' old
// headers): workgroup g (g ≤ D / 256, D = rebuild.num_dirty) writes alloc_groups[g], the sizes
// its dirty sets take in the four pools (points, blocks, watched pairs, terms:
// acl::rebuild::plan_sizes), how many of them release pairs (deleted, or the box changed), and
// the release list's length before this round, acl_sizes.released.count. From them pool_alloc
// finds every offset with a workgroup scan (shared/alloc_group.wgsl), with no scan dispatch
// between. Reading the list's length here, a dispatch before pool_alloc updates it, keeps the
// count's read and write in separate dispatches.
// 256-thread workgroups over the dirty sets plus one (pool_alloc's grid); a workgroup wholly past
// thread D returns at once. Loop bound: alloc_sum's 8 halving steps.

#import layout
#import acl
#import acl_rebuild
#import alloc_group

@group(0) @binding(0) var<uniform> rebuild: RebuildParams;
@group(0) @binding(1) var<storage, read> sets: array<ContactSet>;
@group(0) @binding(2) var<storage, read> dirty: array<u32>;
@group(0) @binding(3) var<storage, read> plans: array<RebuildPlan>;
@group(0) @binding(4) var<storage, read_write> alloc_groups: array<AllocGroup>;
@group(0) @binding(5) var<storage, read_write> acl_sizes: AclSizes;

@compute @workgroup_size(256)
fn pool_alloc_size(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
    @builtin(local_invocation_index) lid: u32,
) {
    let group = wid.y * nwg.x + wid.x;
    // The same for every thread of the workgroup, so alloc_sum's barriers stay in uniform control
    // flow.
    if group > rebuild.num_dirty / 256u {
        return;
    }
    let total = alloc_sum(lid, alloc_values(group * 256u + lid));
    if lid == 0u {
        alloc_groups[group] = AllocGroup(total.sizes, total.releases, atomicLoad(&acl_sizes.released.count), 0u, 0u);
    }
}
