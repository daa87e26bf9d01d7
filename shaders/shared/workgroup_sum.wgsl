// The sum of the 256 values `v` of a workgroup's threads (u32, wrapping), by a tree reduction in
// this file's workgroup array (1 KiB; left clobbered). Every thread of the workgroup must call it,
// in uniform control flow (it has barriers). Loop bound: 8 halving steps (fixed).
var<workgroup> workgroup_sums: array<u32, 256>;

fn workgroup_sum(lid: u32, v: u32) -> u32 {
    workgroup_sums[lid] = v;
    workgroupBarrier();
    for (var s = 128u; s > 0u; s = s >> 1u) {
        if lid < s {
            workgroup_sums[lid] = workgroup_sums[lid] + workgroup_sums[lid + s];
        }
        workgroupBarrier();
    }
    return workgroup_sums[0];
}
