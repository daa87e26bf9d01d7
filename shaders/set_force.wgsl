// set_force: the second half of ACL's evaluation (src/acl/evaluate.rs; CPU twin
// acl::evaluate::set_force): for every set still clean after set_evaluate, the corotational force
// f_t = R (f0_t + Σ_j K̄_tj Δ_j) into fout_pool (zero for a SET_ZERO set), R the rotation of the
// header's quaternion; then with ACL_EXTRA_INVALIDATION the force-change criterion
// (Σ|f − R f0| > 2√τ Σ|R f0| sets SET_DIRTY). Sets set_evaluate left alone raise their errors in
// acl_counters: more than ACL_MAX_SET_POINTS points (ACL_ERROR_SET_TOO_BIG), a non-finite rotation
// (ACL_ERROR_NOT_FINITE, the smallest such set in first_bad_set).
// Four sets per workgroup of 64, 16 lanes each (set 4 w + lid / 16, w the workgroup index on the
// 2-D grid): lane l computes rows l, l + 16, … each summed over j = 0 … n − 1 in order
// (model::corotational_row: the CPU's additions, in its order); lane 0 then sums the criterion over
// the rows in order. Why 16 lanes and four sets: sets have some 9 points (at most 10 in the swatch,
// drop, small sack and small sweater), so a lane per row fills half of 16 lanes, a third of 32; and
// a GPU keeps a bounded number of workgroups resident (32 per multiprocessor on NVIDIA's recent
// parts), so a workgroup per set of 32 threads kept at most 32 sets, and half the warps the
// multiprocessor holds, in flight; four sets of 16 lanes keep 128 sets in 64 warps.
// No return before the barrier (it must be reached in uniform control flow): a lane without rows
// only skips them.
// The K̄ blocks pool may be in pages (src/acl/pages.rs): the kernel is dispatched once per page with
// its uniform block_page, and forces only the sets of that page (the others' zero forces and
// errors are the same in every dispatch).
// Loop bound per thread: ⌈n / 16⌉ (1 + n) + n ≤ 64,575 iterations (n ≤ ACL_MAX_SET_POINTS = 1,008,
// the largest multiple of 16 under lavapipe's 65,535).

#import layout
#import vec
#import polar
#import acl
#import pool_page

@group(0) @binding(0) var<uniform> acl: AclUniform;
@group(0) @binding(1) var<storage, read_write> sets: array<ContactSet>;
@group(0) @binding(2) var<storage, read> f0_pool: array<vec4<f32>>;
@group(0) @binding(3) var<storage, read> k_pool: array<SymBlock>;
@group(0) @binding(4) var<storage, read> dev_pool: array<vec4<f32>>;
@group(0) @binding(5) var<storage, read_write> fout_pool: array<vec4<f32>>;
@group(0) @binding(6) var<storage, read_write> acl_counters: AclCounters;
@group(0) @binding(7) var<uniform> block_page: PoolPage;

@compute @workgroup_size(64)
fn set_force(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
    @builtin(local_invocation_index) lid: u32,
) {
    let k = thread_index(wid, nwg, lid / ACL_SET_LANES, 64u / ACL_SET_LANES);
    let lane = lid % ACL_SET_LANES;
    // Whether this lane's set gets a force (its rows below, its criterion after the barrier).
    var forced = false;
    var s: ContactSet;
    var r: mat3x3<f32>;
    if k < acl.num_sets {
        s = sets[k];
        if set_is_clean(s.flags) {
            if s.n_cp > ACL_MAX_SET_POINTS {
                if lane == 0u {
                    atomicOr(&acl_counters.errors, ACL_ERROR_SET_TOO_BIG);
                }
            } else if (s.flags & SET_NOT_FINITE) != 0u {
                if lane == 0u {
                    atomicOr(&acl_counters.errors, ACL_ERROR_NOT_FINITE);
                    atomicMin(&acl_counters.first_bad_set, k);
                }
            } else if (s.flags & SET_ZERO) != 0u {
                for (var t = lane; t < s.n_cp; t += ACL_SET_LANES) {
                    fout_pool[s.cp_off + t] = vec4<f32>(0.0);
                }
            } else if page_holds(block_page, s.k_off) {
                forced = true;
                let o = s.cp_off;
                let n = s.n_cp;
                let kb = s.k_off - page_base(block_page);
                r = quat_to_matrix(s.quat);
                for (var t = lane; t < n; t += ACL_SET_LANES) {
                    var acc = f0_pool[o + t].xyz;
                    for (var j = 0u; j < n; j++) {
                        let b = k_pool[kb + tri_index(n, min(j, t), max(j, t))];
                        acc = acc + sym_mul(b, dev_pool[o + j].xyz);
                    }
                    fout_pool[o + t] = vec4<f32>(m3_mul_v(r, acc), 0.0);
                }
            }
        }
    }
    if (acl.flags & ACL_EXTRA_INVALIDATION) == 0u {
        return;
    }
    // The rows other lanes wrote, visible to lane 0.
    storageBarrier();
    if forced && lane == 0u {
        let o = s.cp_off;
        var change = 0.0;
        var reference = 0.0;
        for (var t = 0u; t < s.n_cp; t++) {
            let rf0 = m3_mul_v(r, f0_pool[o + t].xyz);
            change += norm3(fout_pool[o + t].xyz - rf0);
            reference += norm3(rf0);
        }
        if change > 2.0 * sqrt(acl.tolerance) * reference {
            sets[k].flags = s.flags | SET_DIRTY;
        }
    }
}
