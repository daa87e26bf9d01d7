// The group sums a producer kernel writes beside the data of a grouped scan (src/scan.rs,
// ScanPlan::grouped; CPU twin scan::write_groups): each workgroup of 256 threads adds the values
// its threads wrote (0 for a thread that wrote none) and its first thread stores the sum in
// scan_groups[workgroup], the scan's block sums then standing for a `scan_reduce` dispatch. The
// importing kernel declares `scan_groups` (read_write storage, array<u32>: the scan's
// scan_partials) and calls write_scan_group from every thread, in uniform control flow (it has
// barriers): its own per-element work goes into a function that returns the value written. It
// returns the workgroup's sum (every thread has it).
// A workgroup past the binding's end (the last row of a 2-D grid) writes nothing.
// Loop bound: workgroup_sum's 8 halving steps (fixed).

#import workgroup_sum

fn write_scan_group(wid: vec3<u32>, nwg: vec3<u32>, lid: u32, v: u32) -> u32 {
    let total = workgroup_sum(lid, v);
    let g = wid.y * nwg.x + wid.x;
    if lid == 0u && g < arrayLength(&scan_groups) {
        scan_groups[g] = total;
    }
    return total;
}
