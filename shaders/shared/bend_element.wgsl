// bend_element: the gradient of bending element i's energy on its three vertices from the step's
// buffers (element_gradient of shared/rod.wgsl on what rod::BendLocal::gather reads), shared by
// bend_gradient and bend_forces. The importing kernel declares `params`, `bends`, `bend_rest`,
// `frames` and `pos` as bend_gradient does. Loop bound: element_gradient's 2 iterations.

fn bend_element_gradient(i: u32) -> array<vec3<f32>, 3> {
    let b = bends[i];
    return element_gradient(
        b,
        bend_rest[i],
        frames[b.e[0]],
        frames[b.e[1]],
        pos[b.v[0]].xyz,
        pos[b.v[1]].xyz,
        pos[b.v[2]].xyz,
        params.bending,
        params.twisting,
    );
}
