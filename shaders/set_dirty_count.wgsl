// set_dirty_count: dirty_dest[k] = 1 for a live dirty set k < rebuild.num_sets (flags SET_LIVE and
// SET_DIRTY), else 0, and dirty_dest[num_sets] = 0; and each workgroup's sum of them in scan_groups
// (shared/scan_groups.wgsl), from which set_dirty_write gives each dirty set its slot in the dirty
// list and, at num_sets, their number (shared/group_prefix.wgsl: no scan dispatch). CPU twin:
// acl::sets::set_dirty_count. One thread per set slot, plus one (the set capacity's grid); a
// workgroup wholly past num_sets + 1 returns at once and writes no group sum (set_dirty_write's
// workgroups there return too). Loop bound: write_scan_group's 8 halving steps.

#import layout
#import acl
#import scan_groups

@group(0) @binding(0) var<uniform> rebuild: RebuildParams;
@group(0) @binding(1) var<storage, read> sets: array<ContactSet>;
@group(0) @binding(2) var<storage, read_write> dirty_dest: array<u32>;
@group(0) @binding(3) var<storage, read_write> scan_groups: array<u32>;

fn dirty_one(k: u32) -> u32 {
    let n = rebuild.num_sets;
    if k < n {
        let both = SET_LIVE | SET_DIRTY;
        let v = select(0u, 1u, (sets[k].flags & both) == both);
        dirty_dest[k] = v;
        return v;
    }
    if k == n {
        dirty_dest[k] = 0u;
    }
    return 0u;
}

@compute @workgroup_size(256)
fn set_dirty_count(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
    @builtin(local_invocation_index) lid: u32,
) {
    // (rebuild is a uniform: the test is uniform, and the barriers below stay in uniform control
    // flow.)
    if (wid.y * nwg.x + wid.x) * 256u > rebuild.num_sets {
        return;
    }
    let v = dirty_one(thread_index(wid, nwg, lid, 256u));
    write_scan_group(wid, nwg, lid, v);
}
