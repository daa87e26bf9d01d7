// scan_add: the down-sweep of the exclusive prefix sum (src/scan.rs; CPU twin scan::scan_add):
// each workgroup replaces its block of SCAN_BLOCK = 2048 elements of level `scan_pass.level`
// (level 0: scan_data, k ≥ 1: scan_partials at scan_pass.offset) by their exclusive prefix sum
// plus the block's offset (0 for a one-block level): scan_partials[next_offset + block] when the
// next level up was scanned, or, when it is the plan's top and left unscanned
// (scan_pass.next_unscanned), the sum of its elements before `block · next_per_block` (fewer than
// 2,048, or 16,384 group sums of a grouped scan: thread t adds elements t, t + 256, …, then
// workgroup_sum's tree reduction), which spares the scan a dispatch. The
// block goes through workgroup memory: loaded and stored with the lanes of a warp on consecutive
// words; in between thread t scans elements 8t .. 8t + 7 in order, and a workgroup scan of the
// 256 threads' sums gives each thread its start. Element i of the block sits at i + i / 32 in
// workgroup memory, so that neither pattern has two lanes of a warp on one bank (a thread's own
// eight would otherwise put lanes 4 apart on the same bank).
// Loop bound: 8 loads, 8 + 8 serial steps, 8 doubling steps, at most 8 · next_per_block ≤ 64
// offset loads and 8 halving steps, 8 stores (fixed).

#import layout
#import workgroup_sum
#import workgroup_scan

@group(0) @binding(0) var<uniform> scan_pass: ScanPass;
@group(0) @binding(1) var<storage, read_write> scan_data: array<u32>;
@group(0) @binding(2) var<storage, read_write> scan_partials: array<u32>;

var<workgroup> block_values: array<u32, 2112>;

fn slot(i: u32) -> u32 {
    return i + (i >> 5u);
}

@compute @workgroup_size(256)
fn scan_add(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
    @builtin(local_invocation_index) lid: u32,
) {
    let block = wid.y * nwg.x + wid.x;
    let first = block * SCAN_BLOCK;
    // The block's offset from an unscanned top level: the sum of its first `block` elements
    // (the whole workgroup takes part, before any thread may return).
    var below = 0u;
    if scan_pass.next_unscanned != 0u && scan_pass.n > SCAN_BLOCK && first < scan_pass.n {
        let before = block * max(scan_pass.next_per_block, 1u);
        for (var k = 0u; k * 256u < before; k = k + 1u) {
            let j = k * 256u + lid;
            if j < before {
                below = below + scan_partials[scan_pass.next_offset + j];
            }
        }
    }
    let offset_below = workgroup_sum(lid, below);
    for (var k = 0u; k < SCAN_PER_THREAD; k = k + 1u) {
        let i = first + k * 256u + lid;
        var v = 0u;
        if i < scan_pass.n {
            if scan_pass.level == 0u {
                v = scan_data[i];
            } else {
                v = scan_partials[scan_pass.offset + i];
            }
        }
        block_values[slot(k * 256u + lid)] = v;
    }
    workgroupBarrier();
    let own = lid * SCAN_PER_THREAD;
    var total = 0u;
    for (var k = 0u; k < SCAN_PER_THREAD; k = k + 1u) {
        total = total + block_values[slot(own + k)];
    }
    let thread_start = workgroup_inclusive_scan(lid, total) - total;
    // Workgroups of the 2-D grid's last row past the level's blocks write nothing.
    if first >= scan_pass.n {
        return;
    }
    var acc = thread_start;
    if scan_pass.n > SCAN_BLOCK {
        if scan_pass.next_unscanned != 0u {
            acc = acc + offset_below;
        } else {
            acc = acc + scan_partials[scan_pass.next_offset + block];
        }
    }
    for (var k = 0u; k < SCAN_PER_THREAD; k = k + 1u) {
        let v = block_values[slot(own + k)];
        block_values[slot(own + k)] = acc;
        acc = acc + v;
    }
    workgroupBarrier();
    for (var k = 0u; k < SCAN_PER_THREAD; k = k + 1u) {
        let i = first + k * 256u + lid;
        if i < scan_pass.n {
            let r = block_values[slot(k * 256u + lid)];
            if scan_pass.level == 0u {
                scan_data[i] = r;
            } else {
                scan_partials[scan_pass.offset + i] = r;
            }
        }
    }
}
