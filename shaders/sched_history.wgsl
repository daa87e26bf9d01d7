// sched_history: the end of a scheduler GPU step. Thread p < num_points: prev2[p] = prev1[p],
// prev1[p] = pos[p], and snaps[(l − 1)·num_points + p] = pos[p] for every bin l = 1 ..= max_bin
// examined at this step (l ≤ bins_due); thread s < num_segments: prev_cells[s] = cells[s].
// CPU twin: sched::sched_history. One thread per max(points, segments).
// Loop bound: max_bin ≤ 24.

#import layout

@group(0) @binding(0) var<uniform> sched: SchedUniform;
@group(0) @binding(1) var<storage, read> pos: array<vec4<f32>>;
@group(0) @binding(2) var<storage, read> cells: array<CellBox>;
@group(0) @binding(3) var<storage, read_write> prev1: array<vec4<f32>>;
@group(0) @binding(4) var<storage, read_write> prev2: array<vec4<f32>>;
@group(0) @binding(5) var<storage, read_write> snaps: array<vec4<f32>>;
@group(0) @binding(6) var<storage, read_write> prev_cells: array<CellBox>;

@compute @workgroup_size(256)
fn sched_history(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
    @builtin(local_invocation_index) lid: u32,
) {
    let i = thread_index(wid, nwg, lid, 256u);
    let npts = sched.num_points;
    if i < npts {
        let p = pos[i];
        prev2[i] = prev1[i];
        prev1[i] = p;
        for (var l = 1u; l <= min(sched.max_bin, 24u); l = l + 1u) {
            if l <= sched.bins_due {
                snaps[(l - 1u) * npts + i] = p;
            }
        }
    }
    if i < sched.num_segments {
        prev_cells[i] = cells[i];
    }
}
