// The inclusive prefix sum of the 256 values `v` of a workgroup's threads (u32, wrapping), by a
// Hillis–Steele scan in this file's workgroup array (1 KiB): thread t gets v_0 + … + v_t. Every
// thread of the workgroup must call it, in uniform control flow (it has barriers).
// Loop bound: 8 doubling steps (fixed).
var<workgroup> workgroup_scan_part: array<u32, 256>;

fn workgroup_inclusive_scan(lid: u32, v: u32) -> u32 {
    workgroup_scan_part[lid] = v;
    workgroupBarrier();
    for (var off = 1u; off < 256u; off = off << 1u) {
        var t = 0u;
        if lid >= off {
            t = workgroup_scan_part[lid - off];
        }
        workgroupBarrier();
        workgroup_scan_part[lid] = workgroup_scan_part[lid] + t;
        workgroupBarrier();
    }
    return workgroup_scan_part[lid];
}
