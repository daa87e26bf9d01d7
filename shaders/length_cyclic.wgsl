// length_cyclic: stage length_projection, projection length_level.x + 1 (only while
// counters.length_iterations equals it), once level 0 of length_sys holds the solutions y (r) and
// q (z): per yarn, the Sherman–Morrison factor f = (y₀ + corner y_last / γ) / (1 + q₀ + corner q_last / γ)
// of a closed yarn of 3 or more edges into length_fact, 0 for an open yarn, so that λ = y − f q
// (CPU twin: length::length_cyclic). γ and corner are recomputed as length_assemble computes them.
// One thread per yarn; no loops.

#import layout
#import vec
#import length_cyclic_terms

@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<uniform> length_level: vec4<u32>;
@group(0) @binding(2) var<storage, read> yarns: array<Yarn>;
@group(0) @binding(3) var<storage, read> edges: array<Edge>;
@group(0) @binding(4) var<storage, read> inv_mass: array<f32>;
@group(0) @binding(5) var<storage, read> length_dir: array<vec4<f32>>;
@group(0) @binding(6) var<storage, read> length_sys: array<vec4<f32>>;
@group(0) @binding(7) var<storage, read_write> length_fact: array<f32>;
@group(0) @binding(8) var<storage, read_write> counters: Counters;

@compute @workgroup_size(256)
fn length_cyclic(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
    @builtin(local_invocation_index) lid: u32,
) {
    let yi = thread_index(wid, nwg, lid, 256u);
    if yi >= params.num_yarns || atomicLoad(&counters.length_iterations) != length_level.x + 1u {
        return;
    }
    let y = yarns[yi];
    var fact = 0.0;
    if y.closed != 0u && y.num_edges >= 3u {
        let f = y.first_edge;
        let l = f + y.num_edges - 1u;
        let sm = cyclic_terms(y);
        let gamma = sm.x;
        let corner = sm.y;
        let first = length_sys[f];
        let last = length_sys[l];
        fact = (first.z + corner * last.z / gamma) / (1.0 + first.w + corner * last.w / gamma);
    }
    length_fact[yi] = fact;
}
