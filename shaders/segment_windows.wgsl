// segment_windows: windows[λ·nseg + s], the per-axis interval of the movement of segment s since bin
// λ's position snapshot (snaps[(λ−1)·npts + p], λ ≥ 1), and its movement over the last step
// (motion[s].mv1) for λ = 0. CPU twin: sched::segment_windows (the CPU run computes the same values
// on first use; shared/segment_window.wgsl). One thread per (bin, segment), λ = 0..=max_bin. The
// ACL step dispatches segment_windows_quadrature, which also computes the quadrature points.
// Loop bound: 4 control points; 3 axes (movement_interval): fixed.

#import layout
#import segment_window

@group(0) @binding(0) var<uniform> sched: SchedUniform;
@group(0) @binding(1) var<storage, read> segments: array<Segment>;
@group(0) @binding(2) var<storage, read> pos: array<vec4<f32>>;
@group(0) @binding(3) var<storage, read> snaps: array<vec4<f32>>;
@group(0) @binding(4) var<storage, read> motion: array<SegmentMotion>;
@group(0) @binding(5) var<storage, read_write> windows: array<Interval>;

@compute @workgroup_size(256)
fn segment_windows(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
    @builtin(local_invocation_index) lid: u32,
) {
    let k = thread_index(wid, nwg, lid, 256u);
    if k < sched.num_segments * (sched.max_bin + 1u) {
        segment_window(k);
    }
}
