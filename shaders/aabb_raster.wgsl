// aabb_raster: per spline segment, its exact AABB (roots of y') padded by r·PAD_FACTOR, its box of
// grid cells and its cell count into grid_offsets[s]; grid_offsets[num_segments] = 0 (the scan's
// trailing element, which becomes the total). CPU twin: contact::grid::aabb_raster.
// A non-finite box raises ERROR_NAN_POSITION (first_bad_point: its lowest non-finite control
// point); a box beyond the key range or over more than MAX_CELLS_PER_SEGMENT cells raises
// ERROR_GRID_RANGE and gets 0 cells. One thread per segment, plus one.
// Loop bound: 3 axes × 2 roots (segment_aabb), then write_scan_group's 8 halving steps.
// Each workgroup also writes the sum of its threads' counts into scan_groups
// (shared/scan_groups.wgsl): the scan is grouped, its block sums written here.

#import layout
#import spline
#import grid
#import scan_groups

@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read> segments: array<Segment>;
@group(0) @binding(2) var<storage, read> pos: array<vec4<f32>>;
@group(0) @binding(3) var<storage, read_write> seg_box: array<SegmentBox>;
@group(0) @binding(4) var<storage, read_write> grid_offsets: array<u32>;
@group(0) @binding(5) var<storage, read_write> counters: Counters;
@group(0) @binding(6) var<storage, read_write> scan_groups: array<u32>;

// Segment s's cell count, written to grid_offsets[s] (0 for the others, none past num_segments).
fn aabb_raster_one(s: u32) -> u32 {
    if s >= params.num_segments {
        if s == params.num_segments {
            grid_offsets[s] = 0u;
        }
        return 0u;
    }
    let seg = segments[s];
    let q0 = pos[seg.cp[0]].xyz;
    let q1 = pos[seg.cp[1]].xyz;
    let q2 = pos[seg.cp[2]].xyz;
    let q3 = pos[seg.cp[3]].xyz;
    let bb = segment_aabb(q0, q1, q2, q3);
    let pad = params.radius * PAD_FACTOR;
    let lo = bb.lo - vec3<f32>(pad);
    let hi = bb.hi + vec3<f32>(pad);
    var b: SegmentBox;
    b.lo = vec4<f32>(lo, 0.0);
    b.hi = vec4<f32>(hi, 0.0);
    b.cell_lo = vec4<i32>(0);
    b.cell_hi = vec4<i32>(0);
    if !(finite3(lo) && finite3(hi)) {
        var bad = seg.cp[1];
        if !finite3(q3) { bad = seg.cp[3]; }
        if !finite3(q2) { bad = seg.cp[2]; }
        if !finite3(q1) { bad = seg.cp[1]; }
        if !finite3(q0) { bad = seg.cp[0]; }
        atomicOr(&counters.errors, ERROR_NAN_POSITION);
        atomicMin(&counters.first_bad_point, bad);
        seg_box[s] = b;
        grid_offsets[s] = 0u;
        return 0u;
    }
    let o = vec3<f32>(params.grid_origin_x, params.grid_origin_y, params.grid_origin_z);
    let c0 = floor((lo - o) * params.grid_inv_cell);
    let c1 = floor((hi - o) * params.grid_inv_cell);
    let lim = f32(GRID_HALF_RANGE);
    if !(all(c0 >= vec3<f32>(-lim)) && all(c1 < vec3<f32>(lim))) {
        atomicOr(&counters.errors, ERROR_GRID_RANGE);
        seg_box[s] = b;
        grid_offsets[s] = 0u;
        return 0u;
    }
    let i0 = vec3<i32>(c0);
    let i1 = vec3<i32>(c1);
    let ext = vec3<u32>(i1 - i0 + vec3<i32>(1));
    let m = MAX_CELLS_PER_SEGMENT;
    if ext.x > m || ext.y > m / ext.x || ext.z > m / (ext.x * ext.y) {
        atomicOr(&counters.errors, ERROR_GRID_RANGE);
        seg_box[s] = b;
        grid_offsets[s] = 0u;
        return 0u;
    }
    let count = ext.x * ext.y * ext.z;
    b.cell_lo = vec4<i32>(i0, i32(count));
    b.cell_hi = vec4<i32>(i1, 0);
    seg_box[s] = b;
    grid_offsets[s] = count;
    return count;
}

@compute @workgroup_size(256)
fn aabb_raster(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
    @builtin(local_invocation_index) lid: u32,
) {
    let v = aabb_raster_one(thread_index(wid, nwg, lid, 256u));
    write_scan_group(wid, nwg, lid, v);
}
