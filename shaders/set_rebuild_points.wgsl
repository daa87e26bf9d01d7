// set_rebuild_points: the point pools of each rebuilt set (acl::rebuild::set_rebuild_points, CPU
// twin), after pool_alloc. One workgroup of 64 threads per dirty set t < rebuild.num_dirty (plan t;
// a deleted plan or one without points is left alone): at plan.cp_off, the new box's sorted
// distinct control points (cp_pool: each first occurrence among the raw points goes to its rank),
// d̄_i = q_i − c̄ with c̄ the points' mean summed in point order by one thread (dbar_pool), and
// M_i, the basis integrals over the box's two parameter ranges, summed per point over the raw
// slots in raw order (the twin's order: u-range segments, then v-range, slot by slot) (m_pool).
// Loop bound per thread (n ≤ nraw ≤ MAX_BOX_CPS = 512): 8 × 512 (first occurrences) + 8 × 512
// (ranks) + 512 (centre) + 8 (offsets) + 8 × 512 (weights) = 12,808.

#import layout
#import vec
#import penalty
#import acl
#import acl_rebuild
#import acl_rebuild_box

@group(0) @binding(0) var<uniform> rebuild: RebuildParams;
@group(0) @binding(1) var<storage, read> pos: array<vec4<f32>>;
@group(0) @binding(2) var<storage, read> segments: array<Segment>;
@group(0) @binding(3) var<storage, read> plans: array<RebuildPlan>;
@group(0) @binding(4) var<storage, read_write> cp_pool: array<u32>;
@group(0) @binding(5) var<storage, read_write> dbar_pool: array<vec4<f32>>;
@group(0) @binding(6) var<storage, read_write> m_pool: array<f32>;

const PT_WG: u32 = 64u;

var<workgroup> raw: array<u32, MAX_BOX_CPS>;
var<workgroup> is_first: array<u32, MAX_BOX_CPS>;
var<workgroup> locs: array<u32, MAX_BOX_CPS>;
var<workgroup> sorted: array<u32, MAX_BOX_CPS>;
var<workgroup> w_centre: vec3<f32>;

// model::basis_abs_integral's antiderivative of |B_k| at t.
fn basis_abs_anti(k: u32, t: f32) -> f32 {
    let t2 = t * t;
    let t3 = t2 * t;
    let t4 = t3 * t;
    switch k {
        case 0u: {
            return 0.5 * (t2 * 0.5 - t3 * (2.0 / 3.0) + t4 * 0.25);
        }
        case 1u: {
            return 0.5 * (t * 2.0 - t3 * (5.0 / 3.0) + t4 * 0.75);
        }
        case 2u: {
            return 0.5 * (t2 * 0.5 + t3 * (4.0 / 3.0) - t4 * 0.75);
        }
        default: {
            return 0.5 * (t3 * (1.0 / 3.0) - t4 * 0.25);
        }
    }
}

@compute @workgroup_size(64)
fn set_rebuild_points(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
    @builtin(local_invocation_index) lid: u32,
) {
    let t = wid.y * nwg.x + wid.x;
    if t >= rebuild.num_dirty {
        return;
    }
    let plan = plans[t];
    if !plan_built(plan) {
        return;
    }
    let n = plan.n_cp;
    let o = plan.cp_off;
    let b = rebuild.b;
    let nb = plan.new_bx;
    let nraw = box_raw_points(nb, lid, PT_WG);
    for (var e = lid; e < nraw; e = e + PT_WG) {
        let l = local_index(raw[e], nraw);
        locs[e] = l;
        if is_first[e] != 0u {
            sorted[l] = raw[e];
            cp_pool[o + l] = raw[e];
        }
    }
    workgroupBarrier();
    if lid == 0u {
        var c = vec3<f32>(0.0);
        for (var i = 0u; i < n; i = i + 1u) {
            c = c + pos[sorted[i]].xyz;
        }
        w_centre = c / f32(n);
    }
    let c = workgroupUniformLoad(&w_centre);
    for (var i = lid; i < n; i = i + PT_WG) {
        dbar_pool[o + i] = vec4<f32>(pos[sorted[i]].xyz - c, 0.0);
    }
    let nsu = nb.y / b - nb.x / b + 1u;
    let bf = f32(b);
    for (var p = lid; p < n; p = p + PT_WG) {
        var m = 0.0;
        for (var e = 0u; e < nraw; e = e + 1u) {
            if locs[e] != p {
                continue;
            }
            let r = e / 4u;
            var q0 = nb.z;
            var q1 = nb.w;
            var seg = nb.z / b + (r - nsu);
            if r < nsu {
                q0 = nb.x;
                q1 = nb.y;
                seg = nb.x / b + r;
            }
            let t0 = f32(max(q0, seg * b) - seg * b) / bf;
            let t1 = f32(min(q1, seg * b + b - 1u) + 1u - seg * b) / bf;
            m = m + (basis_abs_anti(e % 4u, t1) - basis_abs_anti(e % 4u, t0));
        }
        m_pool[o + p] = m;
    }
}
