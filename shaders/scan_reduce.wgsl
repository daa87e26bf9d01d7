// scan_reduce: the up-sweep of the exclusive prefix sum (src/scan.rs; CPU twin scan::scan_reduce):
// each workgroup sums its block of SCAN_BLOCK = 2048 elements of level `scan_pass.level` (level
// 0: scan_data, level k ≥ 1: scan_partials at scan_pass.offset) into
// scan_partials[next_offset + block]. Thread t adds elements t, t + 256, … of the block (the
// lanes of a warp read consecutive words), then a tree reduction over the 256 threads
// (shared/workgroup_sum.wgsl).
// Loop bound: SCAN_PER_THREAD = 8 loads plus 8 halving steps (fixed).

#import layout
#import workgroup_sum

@group(0) @binding(0) var<uniform> scan_pass: ScanPass;
@group(0) @binding(1) var<storage, read> scan_data: array<u32>;
@group(0) @binding(2) var<storage, read_write> scan_partials: array<u32>;

@compute @workgroup_size(256)
fn scan_reduce(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
    @builtin(local_invocation_index) lid: u32,
) {
    let block = wid.y * nwg.x + wid.x;
    let first = block * SCAN_BLOCK;
    var v = 0u;
    for (var k = 0u; k < SCAN_PER_THREAD; k = k + 1u) {
        let i = first + k * 256u + lid;
        if i < scan_pass.n {
            if scan_pass.level == 0u {
                v = v + scan_data[i];
            } else {
                v = v + scan_partials[scan_pass.offset + i];
            }
        }
    }
    let total = workgroup_sum(lid, v);
    // Workgroups of the 2-D grid's last row past the level's blocks write nothing.
    if lid == 0u && first < scan_pass.n {
        scan_partials[scan_pass.next_offset + block] = total;
    }
}
