// set_force: the second half of ACL's evaluation (src/acl/evaluate.rs; CPU twin
// acl::evaluate::set_force): for every set still clean after set_evaluate, the corotational force
// f_t = R (f0_t + Σ_j K̄_tj Δ_j) into fout_pool (zero for a SET_ZERO set), R the rotation of the
// header's quaternion; then with ACL_EXTRA_INVALIDATION the force-change criterion
// (Σ|f − R f0| > 2√τ Σ|R f0| sets SET_DIRTY). Sets set_evaluate left alone raise their errors in
// acl_counters: more than ACL_MAX_SET_POINTS points (ACL_ERROR_SET_TOO_BIG), a non-finite rotation
// (ACL_ERROR_NOT_FINITE, the smallest such set in first_bad_set).
// One workgroup of 32 per set (workgroup index on the 2-D grid); thread l computes rows l, l + 32, …
// each summed over j = 0 … n − 1 in order (model::corotational_row: the CPU's additions, in its
// order); thread 0 then sums the criterion over the rows in order. 32 threads, one warp on NVIDIA:
// sets have some 9 points (at most 10 in the swatch, drop, small sack and small sweater), so with 64
// a set's second warp only waited at the barrier, holding a warp slot.
// Loop bound per thread: ⌈n / 32⌉ · n + n ≤ 33,792 iterations (n ≤ 1,024).

#import layout
#import vec
#import polar
#import acl

@group(0) @binding(0) var<uniform> acl: AclUniform;
@group(0) @binding(1) var<storage, read_write> sets: array<ContactSet>;
@group(0) @binding(2) var<storage, read> f0_pool: array<vec4<f32>>;
@group(0) @binding(3) var<storage, read> k_pool: array<SymBlock>;
@group(0) @binding(4) var<storage, read> dev_pool: array<vec4<f32>>;
@group(0) @binding(5) var<storage, read_write> fout_pool: array<vec4<f32>>;
@group(0) @binding(6) var<storage, read_write> acl_counters: AclCounters;

@compute @workgroup_size(32)
fn set_force(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
    @builtin(local_invocation_index) lid: u32,
) {
    // Everything up to the barrier depends only on the set: uniform across the workgroup.
    let k = wid.y * nwg.x + wid.x;
    if k >= acl.num_sets {
        return;
    }
    let s = sets[k];
    if !set_is_clean(s.flags) {
        return;
    }
    if s.n_cp > ACL_MAX_SET_POINTS {
        if lid == 0u {
            atomicOr(&acl_counters.errors, ACL_ERROR_SET_TOO_BIG);
        }
        return;
    }
    if (s.flags & SET_NOT_FINITE) != 0u {
        if lid == 0u {
            atomicOr(&acl_counters.errors, ACL_ERROR_NOT_FINITE);
            atomicMin(&acl_counters.first_bad_set, k);
        }
        return;
    }
    let o = s.cp_off;
    let n = s.n_cp;
    if (s.flags & SET_ZERO) != 0u {
        for (var t = lid; t < n; t += 32u) {
            fout_pool[o + t] = vec4<f32>(0.0);
        }
        return;
    }
    let r = quat_to_matrix(s.quat);
    for (var t = lid; t < n; t += 32u) {
        var acc = f0_pool[o + t].xyz;
        for (var j = 0u; j < n; j++) {
            let b = k_pool[s.k_off + tri_index(n, min(j, t), max(j, t))];
            acc = acc + sym_mul(b, dev_pool[o + j].xyz);
        }
        fout_pool[o + t] = vec4<f32>(m3_mul_v(r, acc), 0.0);
    }
    if (acl.flags & ACL_EXTRA_INVALIDATION) == 0u {
        return;
    }
    // The rows other threads wrote, visible to thread 0.
    storageBarrier();
    if lid == 0u {
        var change = 0.0;
        var reference = 0.0;
        for (var t = 0u; t < n; t++) {
            let rf0 = m3_mul_v(r, f0_pool[o + t].xyz);
            change += norm3(fout_pool[o + t].xyz - rf0);
            reference += norm3(rf0);
        }
        if change > 2.0 * sqrt(acl.tolerance) * reference {
            sets[k].flags = s.flags | SET_DIRTY;
        }
    }
}
