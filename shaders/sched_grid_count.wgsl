// sched_grid_count: sched_grid_offsets[s] = the number of grid cells of segment s's cell box (0 when
// invalid), and sched_grid_offsets[num_segments] = 0 (the scan's trailing element, which becomes the
// number of grid items). CPU twin: sched::sched_grid_count. One thread per segment, plus one.
// Loop bound: write_scan_group's 8 halving steps.
// Each workgroup also writes the sum of its threads' counts into scan_groups
// (shared/scan_groups.wgsl): the scan is grouped, its block sums written here.

#import layout
#import sched
#import scan_groups

@group(0) @binding(0) var<uniform> sched: SchedUniform;
@group(0) @binding(1) var<storage, read> cells: array<CellBox>;
@group(0) @binding(2) var<storage, read_write> sched_grid_offsets: array<u32>;
@group(0) @binding(3) var<storage, read_write> scan_groups: array<u32>;

@compute @workgroup_size(256)
fn sched_grid_count(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
    @builtin(local_invocation_index) lid: u32,
) {
    let s = thread_index(wid, nwg, lid, 256u);
    let n = sched.num_segments;
    var v = 0u;
    if s < n {
        v = box_cell_count(cells[s]);
        sched_grid_offsets[s] = v;
    } else if s == n {
        sched_grid_offsets[n] = 0u;
    }
    write_scan_group(wid, nwg, lid, v);
}
