// rod_forces: force = m g − ∇E_rod for every control point (overwrites force): each point gathers
// its up to three bend_grad slots from point_bends in slot order, so the sum is the same for any
// thread count (CPU twin: rod::rod_forces). One thread per control point; loop bound: 4 iterations
// (the slots of point_bends).

#import rod

@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read> point_bends: array<vec4<u32>>;
@group(0) @binding(2) var<storage, read> mass: array<f32>;
@group(0) @binding(3) var<storage, read> bend_grad: array<vec4<f32>>;
@group(0) @binding(4) var<storage, read_write> force: array<vec4<f32>>;

@compute @workgroup_size(256)
fn rod_forces(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
    @builtin(local_invocation_index) lid: u32,
) {
    let p = thread_index(wid, nwg, lid, 256u);
    if p >= params.num_points {
        return;
    }
    let gravity = vec3<f32>(params.gravity_x, params.gravity_y, params.gravity_z);
    var acc = gravity * mass[p];
    let slots = point_bends[p];
    for (var k = 0u; k < 4u; k++) {
        let s = slots[k];
        if s != NONE {
            acc -= bend_grad[s].xyz;
        }
    }
    force[p] = vec4<f32>(acc, 0.0);
}
