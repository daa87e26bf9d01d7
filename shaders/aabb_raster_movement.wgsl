// aabb_raster_movement: per spline segment, the box of grid cells (width sched.cell, measured from
// the anchor cell, then absolute) that its exact AABB padded by r·PAD_FACTOR covers, and per-axis
// intervals of its movement over the last step (mv1: pos − prev1) and of its change of movement (mv2:
// pos − 2 prev1 + prev2) over t ∈ [0, 1]. In cells[s].hi.w, the margin bits
// (sched::CELL_MARGIN_BITS): where the box padded by min(r·SCHED_CELL_MARGIN, cell/2) more reaches
// one cell further, bit a below and bit 3 + a above on axis a; segment_monitor decides the box the
// segment keeps, and the cell count limit applies to the box with its margin. A non-finite control
// point raises ERROR_NAN_POSITION (first_bad_point: the lowest such point); a box beyond ±2^30
// cells or over more than SCHED_MAX_CELLS_PER_SEGMENT cells raises ERROR_GRID_RANGE
// (first_bad_segment: the lowest such segment); either leaves the cell box invalid (zero). CPU twin: sched::aabb_raster_movement.
// One thread per segment.
// Loop bound: 4 control points; 3 axes × 2 roots (segment_aabb); 3 axes (movement_interval): fixed.

#import layout
#import vec
#import spline
#import grid
#import sched

@group(0) @binding(0) var<uniform> sched: SchedUniform;
@group(0) @binding(1) var<storage, read> segments: array<Segment>;
@group(0) @binding(2) var<storage, read> pos: array<vec4<f32>>;
@group(0) @binding(3) var<storage, read> prev1: array<vec4<f32>>;
@group(0) @binding(4) var<storage, read> prev2: array<vec4<f32>>;
@group(0) @binding(5) var<storage, read_write> cells: array<CellBox>;
@group(0) @binding(6) var<storage, read_write> mv1: array<Interval>;
@group(0) @binding(7) var<storage, read_write> mv2: array<Interval>;
@group(0) @binding(8) var<storage, read_write> sched_counters: SchedCounters;

@compute @workgroup_size(256)
fn aabb_raster_movement(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
    @builtin(local_invocation_index) lid: u32,
) {
    let s = thread_index(wid, nwg, lid, 256u);
    if s >= sched.num_segments {
        return;
    }
    let seg = segments[s];
    var q: array<vec3<f32>, 4>;
    var d1: array<vec3<f32>, 4>;
    var d2: array<vec3<f32>, 4>;
    var mag1 = 0.0;
    var mag2 = 0.0;
    var bad = 0xFFFFFFFFu;
    for (var k = 0u; k < 4u; k = k + 1u) {
        let i = seg.cp[k];
        let pa = pos[i].xyz;
        let pb = prev1[i].xyz;
        let pc = prev2[i].xyz;
        let na = dot3(pa, pa);
        let nb = dot3(pb, pb);
        mag1 = max(max(mag1, na), nb);
        mag2 = max(max(max(mag2, na), nb), dot3(pc, pc));
        d1[k] = pa - pb;
        d2[k] = pa - pb * 2.0 + pc;
        q[k] = pa;
        if !finite3(pa) {
            bad = min(bad, i);
        }
    }
    mv1[s] = movement_interval(d1[0], d1[1], d1[2], d1[3], mag1);
    mv2[s] = movement_interval(d2[0], d2[1], d2[2], d2[3], mag2);
    var cb: CellBox;
    cb.lo = vec4<i32>(0);
    cb.hi = vec4<i32>(0);
    if bad != 0xFFFFFFFFu {
        atomicOr(&sched_counters.errors, ERROR_NAN_POSITION);
        atomicMin(&sched_counters.first_bad_point, bad);
        cells[s] = cb;
        return;
    }
    let bb = segment_aabb(q[0], q[1], q[2], q[3]);
    if !(finite3(bb.lo) && finite3(bb.hi)) {
        atomicOr(&sched_counters.errors, ERROR_NAN_POSITION);
        atomicMin(&sched_counters.first_bad_point, seg.cp[1]);
        cells[s] = cb;
        return;
    }
    // A hair more than r, so rounding cannot separate the boxes of a pair at exactly 2r.
    let pad = sched.radius * PAD_FACTOR;
    // The margin of a box the segment takes anew (segment_monitor), at most half a cell.
    let margin = min(sched.radius * SCHED_CELL_MARGIN, 0.5 * sched.cell);
    let lo_m = bb.lo - vec3<f32>(pad + margin);
    let hi_m = bb.hi + vec3<f32>(pad + margin);
    let lo = bb.lo - vec3<f32>(pad);
    let hi = bb.hi + vec3<f32>(pad);
    let origin = vec3<f32>(sched.anchor.xyz) * sched.cell;
    let c0 = floor((lo - origin) * sched.inv_cell);
    let c1 = floor((hi - origin) * sched.inv_cell);
    // (At most one cell further: the margin is at most half a cell.)
    let b0 = clamp(c0 - floor((lo_m - origin) * sched.inv_cell), vec3<f32>(0.0), vec3<f32>(1.0));
    let b1 = clamp(floor((hi_m - origin) * sched.inv_cell) - c1, vec3<f32>(0.0), vec3<f32>(1.0));
    let lim = SCHED_CELL_RANGE;
    if !(all(c0 - b0 >= vec3<f32>(-lim)) && all(c1 + b1 <= vec3<f32>(lim))) {
        atomicOr(&sched_counters.errors, ERROR_GRID_RANGE);
        atomicMin(&sched_counters.first_bad_segment, s);
        cells[s] = cb;
        return;
    }
    let i0 = vec3<i32>(c0);
    let i1 = vec3<i32>(c1);
    let e0 = vec3<i32>(b0);
    let e1 = vec3<i32>(b1);
    // The count limit holds for the box with its margin.
    let ext = vec3<u32>(i1 + e1 - i0 + e0 + vec3<i32>(1));
    let m = SCHED_MAX_CELLS_PER_SEGMENT;
    if ext.x > m || ext.y > m / ext.x || ext.z > m / (ext.x * ext.y) {
        atomicOr(&sched_counters.errors, ERROR_GRID_RANGE);
        atomicMin(&sched_counters.first_bad_segment, s);
        cells[s] = cb;
        return;
    }
    let bits = e0.x | (e0.y << 1u) | (e0.z << 2u) | (e1.x << 3u) | (e1.y << 4u) | (e1.z << 5u);
    cb.lo = vec4<i32>(i0 + sched.anchor.xyz, 1);
    cb.hi = vec4<i32>(i1 + sched.anchor.xyz, bits);
    cells[s] = cb;
}
