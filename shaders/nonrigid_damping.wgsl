// nonrigid_damping: seed §3.3 non-rigid damping over the blocks of this step's damping phase (CPU
// twin: step::nonrigid_damping). One workgroup per block: workgroup g of the 2-D grid
// (g = wid.y * nwg.x + wid.x; those past params.num_blocks do nothing) damps block
// b = params.first_block + g, whose k points are block_points[block_start[b] .. block_start[b + 1]]
// (blocks with k < 2 are left alone). The workgroup fits the block's rigid motion (mass, centre of
// mass, linear velocity; angular momentum and inertia tensor about the centre, ω from a 3×3
// cofactor solve refined RIGID_REFINEMENTS times), sums the squared non-rigid speed ‖v_nr‖², then every free point (inv_mass ≠ 0)
// loses v_nr · min(1, max(h μ_prop, h μ_const √k / ‖v_nr‖)). The blocks of one phase are disjoint,
// so workgroups never write the same velocity.
// Fixed reduction order, mirrored by the twin operation for operation: thread t sums the block's
// points t, t + 64, t + 128, … in increasing order; then, per component, each group of 8 partials
// 8g .. 8g + 7 is summed in order (g = 0 .. 7), and then the 8 group sums in order. Two levels of
// 8, not a 6-level tree: a reduction costs 3 workgroup barriers instead of 7 (lavapipe pays for
// every barrier of every workgroup).
// Loop bound per thread: 4 ⌈k / 64⌉ (three sums, one update) + 3 reductions × (2 groups × (1 + 7)
// + 7) + 1 + RIGID_REFINEMENTS (the spin) = 4 ⌈k / 64⌉ + 72; setup refuses blocks of more than
// 64 × 4096 points (step::check_damping_blocks), so at most 16,456.
// The work is shared/damping.wgsl's damp_block, which nonrigid_damping_integrate also runs before
// the block's points' obstacle contact and positions (in a scene without free balls the step
// dispatches that kernel instead of this one, object_contact and integrate_position).

#import layout
#import damping

@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read> block_start: array<u32>;
@group(0) @binding(2) var<storage, read> block_points: array<u32>;
@group(0) @binding(3) var<storage, read> mass: array<f32>;
@group(0) @binding(4) var<storage, read> inv_mass: array<f32>;
@group(0) @binding(5) var<storage, read> pos: array<vec4<f32>>;
@group(0) @binding(6) var<storage, read_write> vel: array<vec4<f32>>;

@compute @workgroup_size(64)
fn nonrigid_damping(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
    @builtin(local_invocation_index) t: u32,
) {
    damp_block(wid.y * nwg.x + wid.x, t);
}
