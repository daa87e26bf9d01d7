// set_compact_count: set_dest[k] = 1 for a live set k < rebuild.num_sets, else 0, and
// set_dest[num_sets] = 0: the input of the exclusive scan that gives each live set its slot in the
// compacted table and, last, their number. CPU twin: acl::sets::set_compact_count.
// One thread per set, plus one. Loop bound: write_scan_group's 8 halving steps.
// Each workgroup also writes the sum of its threads' counts into scan_groups
// (shared/scan_groups.wgsl): the scan is grouped, its block sums written here.

#import layout
#import acl
#import scan_groups

@group(0) @binding(0) var<uniform> rebuild: RebuildParams;
@group(0) @binding(1) var<storage, read> sets: array<ContactSet>;
@group(0) @binding(2) var<storage, read_write> set_dest: array<u32>;
@group(0) @binding(3) var<storage, read_write> scan_groups: array<u32>;

@compute @workgroup_size(256)
fn set_compact_count(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
    @builtin(local_invocation_index) lid: u32,
) {
    let k = thread_index(wid, nwg, lid, 256u);
    let n = rebuild.num_sets;
    var v = 0u;
    if k < n {
        v = select(0u, 1u, (sets[k].flags & SET_LIVE) != 0u);
        set_dest[k] = v;
    } else if k == n {
        set_dest[k] = 0u;
    }
    write_scan_group(wid, nwg, lid, v);
}
