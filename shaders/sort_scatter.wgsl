// sort_scatter: one digit pass of the radix sort (src/sort.rs; CPU twin sort::sort_scatter): each
// record of the block moves to sort_out[sort_hist[d * num_blocks + w] + its rank among the
// block's records of digit d that come before it] (sort_hist already scanned), so the pass is
// stable and positions never depend on the order of atomics. Each thread finds its record's rank
// by counting the equal digits before it: the block's digits are packed four to a word in
// workgroup memory, and a word's equal bytes are counted at once (x = word ^ 4 copies of d is
// zero in exactly those bytes). Three barriers, where a stable local sort by eight one-bit splits
// took about 150 (lavapipe runs a barrier as a switch of all 256 invocations; a GPU stalls the
// workgroup), and every lane of a warp reads the same word at the same time (a broadcast).
// When the histogram's scan has two levels or more, the first ⌈256 * num_blocks / SCAN_BLOCK⌉
// threads zero its level 1 (scan_partials), which sort_histogram filled and the scan has read, so
// the next pass's sort_histogram adds to zeros.
// One thread per record; loop bound: lid / 4 ≤ 63 iterations.

#import layout
#import radix

@group(0) @binding(0) var<uniform> sort_pass: SortPass;
@group(0) @binding(1) var<storage, read> sort_in: array<KeyValue>;
@group(0) @binding(2) var<storage, read> sort_hist: array<u32>;
@group(0) @binding(3) var<storage, read_write> sort_out: array<KeyValue>;
@group(0) @binding(4) var<storage, read_write> scan_partials: array<u32>;

var<workgroup> block_digit: array<u32, 256>;
var<workgroup> packed: array<u32, 64>;

// The bytes of x that are not zero, as their high bits (no carry crosses a byte: at most
// 0x7F + 0x7F).
fn nonzero_bytes(x: u32) -> u32 {
    return (((x & 0x7F7F7F7Fu) + 0x7F7F7F7Fu) | x) & 0x80808080u;
}

@compute @workgroup_size(256)
fn sort_scatter(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
    @builtin(local_invocation_index) lid: u32,
) {
    let block = wid.y * nwg.x + wid.x;
    if block >= sort_pass.num_blocks {
        return;
    }
    let i = block * 256u + lid;
    let hist_len = 256u * sort_pass.num_blocks;
    if hist_len > SCAN_BLOCK && i < (hist_len + SCAN_BLOCK - 1u) / SCAN_BLOCK {
        scan_partials[i] = 0u;
    }
    let inside = i < sort_pass.n;
    // Records past n (the last block's tail) come after every real record of the block, so
    // their digit never enters a real record's count.
    var d = 0u;
    var kv: KeyValue;
    if inside {
        kv = sort_in[i];
        d = sort_digit(kv, sort_pass.shift);
    }
    block_digit[lid] = d;
    workgroupBarrier();
    if lid < 64u {
        let b = 4u * lid;
        packed[lid] = block_digit[b] | (block_digit[b + 1u] << 8u) | (block_digit[b + 2u] << 16u)
            | (block_digit[b + 3u] << 24u);
    }
    workgroupBarrier();
    if !inside {
        return;
    }
    let copies = d * 0x01010101u;
    let words = lid >> 2u;
    var rank = 0u;
    for (var w = 0u; w < words; w = w + 1u) {
        rank = rank + 4u - countOneBits(nonzero_bytes(packed[w] ^ copies));
    }
    // The bytes of lid's own word before it.
    let before = lid & 3u;
    if before > 0u {
        let low = (1u << (8u * before)) - 1u;
        rank = rank + before - countOneBits(nonzero_bytes(packed[words] ^ copies) & low);
    }
    sort_out[sort_hist[d * sort_pass.num_blocks + block] + rank] = kv;
}
