// scan_into: the exclusive prefix sum of scan_data's first n = scan_pass.n elements written into
// scan_out (out of place), in one dispatch where scan_reduce and scan_add take two (src/scan.rs,
// GpuScan::into; CPU twin scan::scan_into): used for n ≤ SCAN_INTO_MAX = 2¹⁶. Each workgroup
// scans its block of SCAN_BLOCK = 2,048 elements as scan_add does (thread t: elements 8t .. 8t +
// 7 in order, a workgroup scan of the threads' sums for their starts), offset by the sum of every
// element before the block, which it adds itself from scan_data (thread t: elements t, t + 256,
// …, then workgroup_sum): the blocks before it are not overwritten (the result goes to
// scan_out), so no scan_reduce dispatch has to sum them first. The workgroup of block b reads
// 2,048 b elements for its offset: at most 63,488 words (b ≤ 31), some 0.25 MiB, which is why the
// scan stops at 2¹⁶ (past it, the two dispatches).
// Loop bound: ⌈2,048 b / 256⌉ ≤ 248 offset loads, 8 loads, 8 + 8 serial steps, workgroup_sum's
// 8 halving and workgroup_inclusive_scan's 8 doubling steps, 8 stores.

#import layout
#import workgroup_sum
#import workgroup_scan

@group(0) @binding(0) var<uniform> scan_pass: ScanPass;
@group(0) @binding(1) var<storage, read> scan_data: array<u32>;
@group(0) @binding(2) var<storage, read_write> scan_out: array<u32>;

@compute @workgroup_size(256)
fn scan_into(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
    @builtin(local_invocation_index) lid: u32,
) {
    let block = wid.y * nwg.x + wid.x;
    let first = block * SCAN_BLOCK;
    let n = scan_pass.n;
    // A workgroup of the 2-D grid's last row past the blocks has nothing to write (the same for
    // every thread of the workgroup, so the barriers below stay in uniform control flow).
    if first >= n {
        return;
    }
    var below = 0u;
    for (var j = lid; j < first; j = j + 256u) {
        below = below + scan_data[j];
    }
    let offset = workgroup_sum(lid, below);
    var v: array<u32, 8>;
    var total = 0u;
    let own = first + lid * SCAN_PER_THREAD;
    for (var k = 0u; k < SCAN_PER_THREAD; k = k + 1u) {
        var x = 0u;
        if own + k < n {
            x = scan_data[own + k];
        }
        v[k] = x;
        total = total + x;
    }
    var acc = offset + workgroup_inclusive_scan(lid, total) - total;
    for (var k = 0u; k < SCAN_PER_THREAD; k = k + 1u) {
        if own + k < n {
            scan_out[own + k] = acc;
        }
        acc = acc + v[k];
    }
}
