// length_update: stage length_projection, projection length_level.x + 1 (only while
// counters.length_iterations equals it; length_level.w: the number of control points), once level 0
// of length_sys holds the solutions y (r) and q (z): x −= W ∇Cᵀ λ, gathered per control point, with
// λ_k = y_k − f q_k. f is the Sherman–Morrison factor of edge k's yarn,
// f = (y₀ + corner y_last / γ) / (1 + q₀ + corner q_last / γ) for a closed yarn of 3 or more edges
// (γ and corner recomputed as length_assemble computes them), 0 for an open yarn; each thread
// computes its own yarn's (a separate per-yarn kernel cost a dispatch per projection for a few
// loads). Point p moves by inv_mass[p] (λ_a t_a − λ_b t_b) over the edge it starts (a) and the edge
// it ends (b), from point_edges (x: the edge it starts, y: the edge it ends, z: its yarn) (CPU twin:
// length::length_update). One thread per control point; no loops.

#import layout
#import vec
#import length_cyclic_terms

const NO_EDGE: u32 = 0xffffffffu;

@group(0) @binding(0) var<uniform> length_level: vec4<u32>;
@group(0) @binding(1) var<storage, read> yarns: array<Yarn>;
@group(0) @binding(2) var<storage, read> edges: array<Edge>;
@group(0) @binding(3) var<storage, read> point_edges: array<vec4<u32>>;
@group(0) @binding(4) var<storage, read> inv_mass: array<f32>;
@group(0) @binding(5) var<storage, read> length_dir: array<vec4<f32>>;
@group(0) @binding(6) var<storage, read> length_sys: array<vec4<f32>>;
@group(0) @binding(7) var<storage, read_write> length_disp: array<vec4<f32>>;
@group(0) @binding(8) var<storage, read_write> counters: Counters;

// The workgroup's copy of counters.length_iterations.
var<workgroup> wg_iterations: u32;

@compute @workgroup_size(256)
fn length_update(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
    @builtin(local_invocation_index) lid: u32,
) {
    // One atomic read of the count per workgroup, not one per thread: they all read one address.
    if lid == 0u {
        wg_iterations = atomicLoad(&counters.length_iterations);
    }
    workgroupBarrier();
    let p = thread_index(wid, nwg, lid, 256u);
    if p >= length_level.w || wg_iterations != length_level.x + 1u {
        return;
    }
    let w = inv_mass[p];
    let pe = point_edges[p];
    let y = yarns[pe.z];
    var f = 0.0;
    if y.closed != 0u && y.num_edges >= 3u {
        let sm = cyclic_terms(y);
        let gamma = sm.x;
        let corner = sm.y;
        let first = length_sys[y.first_edge];
        let last = length_sys[y.first_edge + y.num_edges - 1u];
        f = (first.z + corner * last.z / gamma) / (1.0 + first.w + corner * last.w / gamma);
    }
    var dx = vec3<f32>(0.0);
    if pe.y != NO_EDGE {
        let row = length_sys[pe.y];
        dx = dx - (row.z - f * row.w) * length_dir[pe.y].xyz;
    }
    if pe.x != NO_EDGE {
        let row = length_sys[pe.x];
        dx = dx + (row.z - f * row.w) * length_dir[pe.x].xyz;
    }
    let d = length_disp[p];
    length_disp[p] = vec4<f32>(d.xyz + w * dx, d.w);
}
