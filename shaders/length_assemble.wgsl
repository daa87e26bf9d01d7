// length_assemble: stage length_projection, projection length_level.x + 1 (only while
// counters.length_iterations equals it): row k of level 0 of length_sys for every edge k,
// (diagonal w_a + w_b, coupling to the previous row −w_a t_{k−1}·t_k, r = C_k, z = 0); an inert row
// (both ends immovable) is (1, 0, 0, 0), a yarn's first row has no coupling (yarns are decoupled
// blocks of one system); for a closed yarn of 3 or more edges, Sherman–Morrison: with γ = −d₀ and
// corner = −w t_last·t_first, the first diagonal gets −γ and z = γ, the last gets −corner²/γ and
// z = corner (shared/length_row.wgsl; CPU twin: length::length_assemble). One thread per edge;
// no loops.

#import layout
#import vec
#import length_cyclic_terms
#import length_row

@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<uniform> length_level: vec4<u32>;
@group(0) @binding(2) var<storage, read> yarns: array<Yarn>;
@group(0) @binding(3) var<storage, read> edges: array<Edge>;
@group(0) @binding(4) var<storage, read> inv_mass: array<f32>;
@group(0) @binding(5) var<storage, read> length_dir: array<vec4<f32>>;
@group(0) @binding(6) var<storage, read_write> length_sys: array<vec4<f32>>;
@group(0) @binding(7) var<storage, read_write> counters: Counters;

// The workgroup's copy of counters.length_iterations.
var<workgroup> wg_iterations: u32;

@compute @workgroup_size(256)
fn length_assemble(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
    @builtin(local_invocation_index) lid: u32,
) {
    // One atomic read of the count per workgroup, not one per thread: they all read one address.
    if lid == 0u {
        wg_iterations = atomicLoad(&counters.length_iterations);
    }
    workgroupBarrier();
    let k = thread_index(wid, nwg, lid, 256u);
    if k >= params.num_edges || wg_iterations != length_level.x + 1u {
        return;
    }
    let e = edges[k];
    let y = yarns[e.yarn];
    let i = k - y.first_edge;
    var t_prev = vec3<f32>(0.0);
    if i > 0u {
        t_prev = length_dir[k - 1u].xyz;
    }
    var sm = vec2<f32>(0.0);
    if y.closed != 0u && y.num_edges >= 3u {
        sm = cyclic_terms(y);
    }
    length_sys[k] = length_row(i, y, inv_mass[e.a], inv_mass[e.b], length_dir[k], t_prev, sm);
}
