// sort_histogram: one digit pass of the radix sort (src/sort.rs; CPU twin sort::sort_histogram):
// each workgroup counts the digits (bits sort_pass.shift .. + 8 of the key) of its block of 256
// records of sort_in and writes count d of block w to sort_hist[d * num_blocks + w], the
// digit-major layout whose exclusive prefix sum is every (digit, block)'s first output slot.
// When that scan has two levels or more (256 * num_blocks > SCAN_BLOCK), each count is also added
// to its scan block's sum, scan_partials[(d * num_blocks + w) / SCAN_BLOCK] (the scan's level 1,
// zero since the last pass's sort_scatter), so the scan needs no scan_reduce of level 0 (a
// dispatch fewer per pass; ScanPlan::fused). Those sums are integer atomics, as are the
// workgroup-memory counts, so their order of arrival does not matter.
// One thread per record; no loops.

#import layout
#import radix

@group(0) @binding(0) var<uniform> sort_pass: SortPass;
@group(0) @binding(1) var<storage, read> sort_in: array<KeyValue>;
@group(0) @binding(2) var<storage, read_write> sort_hist: array<u32>;
@group(0) @binding(3) var<storage, read_write> scan_partials: array<atomic<u32>>;

var<workgroup> counts: array<atomic<u32>, 256>;

@compute @workgroup_size(256)
fn sort_histogram(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
    @builtin(local_invocation_index) lid: u32,
) {
    let block = wid.y * nwg.x + wid.x;
    if block >= sort_pass.num_blocks {
        return;
    }
    atomicStore(&counts[lid], 0u);
    workgroupBarrier();
    let i = block * 256u + lid;
    if i < sort_pass.n {
        atomicAdd(&counts[sort_digit(sort_in[i], sort_pass.shift)], 1u);
    }
    workgroupBarrier();
    let e = lid * sort_pass.num_blocks + block;
    let c = atomicLoad(&counts[lid]);
    sort_hist[e] = c;
    if 256u * sort_pass.num_blocks > SCAN_BLOCK && c != 0u {
        atomicAdd(&scan_partials[e / SCAN_BLOCK], c);
    }
}
