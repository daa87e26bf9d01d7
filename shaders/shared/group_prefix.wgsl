// The exclusive prefix sum of a value per thread over a whole grid of 256-thread workgroups, in
// the kernel that needs it, where an earlier kernel over the same elements wrote each workgroup's
// sum of them into scan_groups (write_scan_group, shared/scan_groups.wgsl): the sums of the
// groups before this one (thread t adds groups t, t + 256, …, then workgroup_sum), plus a
// workgroup scan of the threads' own values. It spares the scan its dispatch where the scanned
// array has no reader but this kernel (CPU twin: scan::group_prefix_walk, which the consumers'
// twins call).
// The importing kernel declares scan_groups (storage, array<u32>) and imports workgroup_sum and
// workgroup_scan; every thread calls group_prefix in uniform control flow (it has barriers).
// Loop bound: ⌈group / 256⌉ loads (the importer states its bound), workgroup_sum's 8 halving steps
// and workgroup_inclusive_scan's 8 doubling steps.

fn group_prefix(group: u32, lid: u32, v: u32) -> u32 {
    var below = 0u;
    for (var j = lid; j < group; j = j + 256u) {
        below = below + scan_groups[j];
    }
    let base = workgroup_sum(lid, below);
    return base + workgroup_inclusive_scan(lid, v) - v;
}
