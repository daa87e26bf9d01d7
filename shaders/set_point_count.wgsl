// set_point_count: set_offsets[k] = the number of control points of set k when it is live, else 0
// (k < num_sets), and set_offsets[num_sets] = 0: the input of the exclusive scan that gives each
// set's first record in the point table and, last, the total (src/acl/gather.rs; CPU twin
// acl::gather::set_point_count). One thread per set, plus one. Loop bound: write_scan_group's 8 halving steps.
// Each workgroup also writes the sum of its threads' counts into scan_groups
// (shared/scan_groups.wgsl): the scan is grouped, its block sums written here.

#import layout
#import acl
#import scan_groups

@group(0) @binding(0) var<uniform> acl: AclUniform;
@group(0) @binding(1) var<storage, read> sets: array<ContactSet>;
@group(0) @binding(2) var<storage, read_write> set_offsets: array<u32>;
@group(0) @binding(3) var<storage, read_write> scan_groups: array<u32>;

@compute @workgroup_size(256)
fn set_point_count(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
    @builtin(local_invocation_index) lid: u32,
) {
    let k = thread_index(wid, nwg, lid, 256u);
    var v = 0u;
    if k < acl.num_sets {
        let s = sets[k];
        v = select(0u, s.n_cp, (s.flags & SET_LIVE) != 0u);
        set_offsets[k] = v;
    } else if k == acl.num_sets {
        set_offsets[k] = 0u;
    }
    write_scan_group(wid, nwg, lid, v);
}
