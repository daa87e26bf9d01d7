// segment_window: window k = λ·nseg + s of segment_windows (its per-element work, which
// segment_windows_quadrature also does): the per-axis interval of segment s's movement since bin λ's
// position snapshot, or for λ = 0 its movement over the last step. The importing kernel declares
// `sched` (uniform), `segments`, `pos`, `snaps`, `motion` and `windows` (read_write) as
// segment_windows does. Loop bound: 4 control points; 3 axes (movement_interval): fixed.

#import vec
#import sched

fn segment_window(k: u32) {
    let nseg = sched.num_segments;
    let l = k / nseg;
    let s = k % nseg;
    if l == 0u {
        windows[k] = motion[s].mv1;
        return;
    }
    let seg = segments[s];
    let off = (l - 1u) * sched.num_points;
    var d: array<vec3<f32>, 4>;
    var mag = 0.0;
    for (var m = 0u; m < 4u; m = m + 1u) {
        let pa = pos[seg.cp[m]].xyz;
        let pb = snaps[off + seg.cp[m]].xyz;
        mag = max(max(mag, dot3(pa, pa)), dot3(pb, pb));
        d[m] = pa - pb;
    }
    windows[k] = movement_interval(d[0], d[1], d[2], d[3], mag);
}
