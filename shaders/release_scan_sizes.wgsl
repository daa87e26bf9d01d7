// release_scan_sizes: the releases' slots and the scheduler's merged sizes in one workgroup, in
// place of release_count, the scan of its counts and sched_sizes' phase 1 (three dependent
// dispatches). For every released box r < n = sched_step.num_released, release_offsets[r] = the
// segment-pair slots of the boxes before it (release_slots, as release_count counts them), and
// release_offsets[n] = the total: what release_count and the exclusive scan leave. Then thread 0
// makes sched_sizes' phase 1 with that total (shared/sched_merged.wgsl). The scheduler's step uses
// it while the release list's capacity + 1 is at most RELEASE_SCAN_SIZES_MAX = 2¹⁹ elements
// (src/sched/gpu.rs), so that one workgroup's loop stays short; the three dispatches otherwise.
// CPU twin: sched::release_scan_sizes. One workgroup of 256 threads: the elements 0 ..= n in
// chunks of 2,048, in order, thread t taking elements 8t .. 8t + 7 of a chunk; a workgroup scan of
// the threads' sums gives each its start, and the chunk's sum carries to the next.
// Loop bound: ⌈(n + 1) / 2048⌉ ≤ 256 chunks, each 8 + 8 element steps, workgroup_inclusive_scan's
// 8 and workgroup_sum's 8 doubling and halving steps: at most 8,192.

#import layout
#import sched
#import workgroup_sum
#import workgroup_scan
#import sched_merged

@group(0) @binding(0) var<uniform> sched_step: SchedUniform;
@group(0) @binding(1) var<storage, read> released: array<Release>;
@group(0) @binding(2) var<storage, read_write> release_offsets: array<u32>;
@group(0) @binding(3) var<storage, read_write> sched_counters: SchedCounters;
@group(0) @binding(4) var<storage, read_write> sched_state: array<u32>;
@group(0) @binding(5) var<storage, read_write> sched_p1: SchedUniform;
@group(0) @binding(6) var<storage, read_write> sched_p2: SchedUniform;

@compute @workgroup_size(256)
fn release_scan_sizes(@builtin(local_invocation_index) lid: u32) {
    let n = sched_step.num_released;
    let b = sched_step.quadrature;
    let nseg = sched_step.num_segments;
    // The slots before the chunk (u32 sums wrap, as the scan's).
    var carry = 0u;
    for (var c = 0u; c <= n / 2048u; c = c + 1u) {
        let first = c * 2048u + 8u * lid;
        var v: array<u32, 8>;
        var sum = 0u;
        for (var k = 0u; k < 8u; k = k + 1u) {
            let r = first + k;
            var x = 0u;
            if r < n {
                x = release_slots(released[r].before, b, nseg);
            }
            v[k] = x;
            sum = sum + x;
        }
        var at = carry + workgroup_inclusive_scan(lid, sum) - sum;
        for (var k = 0u; k < 8u; k = k + 1u) {
            if first + k <= n {
                release_offsets[first + k] = at;
            }
            at = at + v[k];
        }
        carry = carry + workgroup_sum(lid, sum);
    }
    if lid == 0u {
        sched_merged(carry);
    }
}
