// segment_windows_quadrature: segment_windows and quadrature_points in one dispatch, two independent
// maps over consecutive thread ranges (the scheduler's GPU step in ACL, sched::gpu): thread
// k < W = sched.num_segments · (sched.max_bin + 1) computes window k as segment_windows does
// (shared/segment_window.wgsl), thread W + i < W + params.num_segments · params.quadrature quadrature
// point i as quadrature_points does (shared/quadrature.wgsl). Neither reads what the other writes,
// so the dispatch gives bit for bit what the two give (CPU twin: sched::segment_windows_quadrature,
// the two twins). The quadrature points are first read by schedule_process, after this dispatch.
// One thread per window and per quadrature point. Loop bound: segment_window's fixed 4 control
// points and 3 axes.

#import layout
#import segment_window
#import quadrature

@group(0) @binding(0) var<uniform> sched: SchedUniform;
@group(0) @binding(1) var<uniform> params: Params;
@group(0) @binding(2) var<storage, read> segments: array<Segment>;
@group(0) @binding(3) var<storage, read> pos: array<vec4<f32>>;
@group(0) @binding(4) var<storage, read> snaps: array<vec4<f32>>;
@group(0) @binding(5) var<storage, read> motion: array<SegmentMotion>;
@group(0) @binding(6) var<storage, read> quad_weights: array<vec4<f32>>;
@group(0) @binding(7) var<storage, read> quad_arc: array<f32>;
@group(0) @binding(8) var<storage, read_write> windows: array<Interval>;
@group(0) @binding(9) var<storage, read_write> qpts: array<vec4<f32>>;

@compute @workgroup_size(256)
fn segment_windows_quadrature(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
    @builtin(local_invocation_index) lid: u32,
) {
    let k = thread_index(wid, nwg, lid, 256u);
    let w = sched.num_segments * (sched.max_bin + 1u);
    if k < w {
        segment_window(k);
    } else if k - w < params.num_segments * params.quadrature {
        quadrature_point(k - w);
    }
}
