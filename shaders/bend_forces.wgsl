// bend_forces: bend_gradient and rod_forces in one dispatch: force = m g − ∇E_rod for every control
// point (overwrites force), each point summing the gradients of the bending elements around it in
// its point_bends slot order, as rod_forces does, with each element's gradient computed in the
// same workgroup instead of read from bend_grad, so that no dispatch is needed before it (CPU twin:
// rod::bend_forces).
// The workgroup's points name a run of elements (bends are numbered along the yarns, as points
// are): its threads find the lowest and highest element named (workgroup atomics), compute the
// gradients of the first BEND_CACHE of that run into workgroup memory (shared/rod.wgsl
// element_gradient: bend_gradient's work op for op), and after a barrier each point sums its slots
// from there; an element outside the cached run (a numbering that is not local) the point computes
// itself. Either way the terms are bend_gradient's, added in rod_forces' order, so the result is bit
// for bit theirs. About 258 elements for 256 points of a yarn, so the bending work is bend_gradient's.
// Workgroup memory: BEND_CACHE × 3 gradients of 16 bytes = 15,360 bytes (wgpu's default limit is
// 16,384). No return before the barriers (uniform control flow): threads past the points only help.
// One thread per control point. Loop bound per thread: ⌈BEND_CACHE / 256⌉ = 2 cached elements,
// then 4 slots, each element_gradient's 2 iterations.

#import rod
#import bend_element

@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read> bends: array<Bend>;
@group(0) @binding(2) var<storage, read> bend_rest: array<BendRest>;
@group(0) @binding(3) var<storage, read> frames: array<EdgeFrame>;
@group(0) @binding(4) var<storage, read> pos: array<vec4<f32>>;
@group(0) @binding(5) var<storage, read> point_bends: array<vec4<u32>>;
@group(0) @binding(6) var<storage, read> mass: array<f32>;
@group(0) @binding(7) var<storage, read_write> force: array<vec4<f32>>;

const BEND_CACHE: u32 = 320u;

// Workgroup memory starts zeroed: `low` holds NONE − (lowest element), `high` the highest + 1.
var<workgroup> low: atomic<u32>;
var<workgroup> high: atomic<u32>;
var<workgroup> cached: array<vec3<f32>, 960>; // BEND_CACHE × 3, element-major

@compute @workgroup_size(256)
fn bend_forces(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
    @builtin(local_invocation_index) lid: u32,
) {
    let p = thread_index(wid, nwg, lid, 256u);
    let live = p < params.num_points;
    var slots = vec4<u32>(NONE);
    if live {
        slots = point_bends[p];
    }
    for (var k = 0u; k < 4u; k++) {
        let s = slots[k];
        if s != NONE {
            atomicMax(&low, NONE - s / 3u);
            atomicMax(&high, s / 3u + 1u);
        }
    }
    workgroupBarrier();
    let first = NONE - atomicLoad(&low);
    let count = min(atomicLoad(&high) - min(first, atomicLoad(&high)), BEND_CACHE);
    for (var j = lid; j < count; j += 256u) {
        let g = bend_element_gradient(first + j);
        cached[3u * j] = g[0];
        cached[3u * j + 1u] = g[1];
        cached[3u * j + 2u] = g[2];
    }
    workgroupBarrier();
    if !live {
        return;
    }
    let gravity = vec3<f32>(params.gravity_x, params.gravity_y, params.gravity_z);
    var acc = gravity * mass[p];
    for (var k = 0u; k < 4u; k++) {
        let s = slots[k];
        if s != NONE {
            let j = s / 3u - first;
            if j < count {
                acc -= cached[3u * j + s % 3u];
            } else {
                let g = bend_element_gradient(s / 3u);
                acc -= g[s % 3u];
            }
        }
    }
    force[p] = vec4<f32>(acc, 0.0);
}
