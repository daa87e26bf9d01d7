// bend_gradient: per bending element, the gradient of its bending and twisting energy on its three
// vertices, written to bend_grad[3 b + role] (CPU twin: rod::bend_gradient, which runs
// BendLocal::<f32>::gather/geometry/gradient; ported op for op in shared/rod.wgsl,
// element_gradient, through shared/bend_element.wgsl, which bend_forces also calls). One thread per bending element; loop bound: 2
// iterations (the element's two edges).

#import rod
#import bend_element

@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read> bends: array<Bend>;
@group(0) @binding(2) var<storage, read> bend_rest: array<BendRest>;
@group(0) @binding(3) var<storage, read> frames: array<EdgeFrame>;
@group(0) @binding(4) var<storage, read> pos: array<vec4<f32>>;
@group(0) @binding(5) var<storage, read_write> bend_grad: array<vec4<f32>>;

@compute @workgroup_size(256)
fn bend_gradient(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
    @builtin(local_invocation_index) lid: u32,
) {
    let i = thread_index(wid, nwg, lid, 256u);
    if i >= params.num_bends {
        return;
    }
    let g = bend_element_gradient(i);
    bend_grad[3u * i] = vec4<f32>(g[0], 0.0);
    bend_grad[3u * i + 1u] = vec4<f32>(g[1], 0.0);
    bend_grad[3u * i + 2u] = vec4<f32>(g[2], 0.0);
}
