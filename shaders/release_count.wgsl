// release_count: release_offsets[r] = the slots of released box r's rectangle of segment pairs
// (release_rect), release_offsets[num_released] = 0: after an exclusive scan, each release's first
// slot and the total. CPU twin: sched::release_count. One thread per release, plus one.
// Loop bound: write_scan_group's 8 halving steps.
// Each workgroup also writes the sum of its threads' counts into scan_groups
// (shared/scan_groups.wgsl): the scan is grouped, its block sums written here.

#import layout
#import sched
#import scan_groups

@group(0) @binding(0) var<uniform> sched: SchedUniform;
@group(0) @binding(1) var<storage, read> released: array<Release>;
@group(0) @binding(2) var<storage, read_write> release_offsets: array<u32>;
@group(0) @binding(3) var<storage, read_write> scan_groups: array<u32>;

@compute @workgroup_size(256)
fn release_count(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
    @builtin(local_invocation_index) lid: u32,
) {
    let r = thread_index(wid, nwg, lid, 256u);
    let n = sched.num_released;
    var v = 0u;
    if r < n {
        v = release_slots(released[r].before, sched.quadrature, sched.num_segments);
        release_offsets[r] = v;
    } else if r == n {
        release_offsets[r] = 0u;
    }
    write_scan_group(wid, nwg, lid, v);
}
