// sort_scatter: one digit pass of the radix sort (src/sort.rs; CPU twin sort::sort_scatter): each
// record of the block moves to sort_out[sort_hist[d * num_blocks + w] + its rank among the
// block's records of digit d that come before it] (sort_hist already scanned), so the pass is
// stable and positions never depend on the order of atomics. The rank comes from a stable local
// sort of the block by digit in workgroup memory: 8 one-bit splits, each a workgroup scan.
// One thread per record; loop bound: 8 splits × 8 doubling steps of the workgroup scan (fixed).

#import layout
#import radix

@group(0) @binding(0) var<uniform> sort_pass: SortPass;
@group(0) @binding(1) var<storage, read> sort_in: array<KeyValue>;
@group(0) @binding(2) var<storage, read> sort_hist: array<u32>;
@group(0) @binding(3) var<storage, read_write> sort_out: array<KeyValue>;

// Per local slot: digit and original local index of the record there; the split's scan; the
// first slot of each digit after the local sort.
var<workgroup> slot_digit: array<u32, 256>;
var<workgroup> slot_index: array<u32, 256>;
var<workgroup> zeros: array<u32, 256>;
var<workgroup> digit_start: array<u32, 256>;

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
    // Records past n (the last block's tail) take digit 255: they sit at the highest local
    // indices, so the stable local sort puts them after every real record of any digit.
    var d = 255u;
    if i < sort_pass.n {
        d = sort_digit(sort_in[i], sort_pass.shift);
    }
    slot_digit[lid] = d;
    slot_index[lid] = lid;
    workgroupBarrier();
    for (var bit = 0u; bit < 8u; bit = bit + 1u) {
        let md = slot_digit[lid];
        let mi = slot_index[lid];
        let one = (md >> bit) & 1u;
        zeros[lid] = 1u - one;
        workgroupBarrier();
        for (var off = 1u; off < 256u; off = off << 1u) {
            var t = 0u;
            if lid >= off {
                t = zeros[lid - off];
            }
            workgroupBarrier();
            zeros[lid] = zeros[lid] + t;
            workgroupBarrier();
        }
        // Zeros keep their order at the front, ones theirs after all zeros.
        let zeros_before = zeros[lid] - (1u - one);
        var dest = zeros_before;
        if one == 1u {
            dest = zeros[255] + (lid - zeros_before);
        }
        workgroupBarrier();
        slot_digit[dest] = md;
        slot_index[dest] = mi;
        workgroupBarrier();
    }
    let dj = slot_digit[lid];
    if lid == 0u || slot_digit[lid - 1u] != dj {
        digit_start[dj] = lid;
    }
    workgroupBarrier();
    let src = block * 256u + slot_index[lid];
    if src < sort_pass.n {
        let pos = sort_hist[dj * sort_pass.num_blocks + block] + (lid - digit_start[dj]);
        sort_out[pos] = sort_in[src];
    }
}
