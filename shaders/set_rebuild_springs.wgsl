// set_rebuild_springs: the stiction springs of each dirty set (acl::rebuild::set_rebuild_springs,
// CPU twin; stiction::springs_make), before set_rebuild_headers (it reads the old header). One
// thread per dirty set t < rebuild.num_dirty, set dirty[t]: a deleted set's 4 springs cleared;
// with stiction_stiffness > 0, a built set's springs re-made at the box fractions (¼, ¾)² when
// its box changed or it was dirty, else their rest offsets turned by the old rotation.
// Loop bound per thread: 4 (springs).

#import layout
#import vec
#import penalty
#import acl
#import polar
#import acl_rebuild
#import acl_rebuild_pairs

@group(0) @binding(0) var<uniform> rebuild: RebuildParams;
@group(0) @binding(1) var<storage, read> qpts: array<vec4<f32>>;
@group(0) @binding(2) var<storage, read> segments: array<Segment>;
@group(0) @binding(3) var<storage, read> seg_contact: array<SegmentContact>;
@group(0) @binding(4) var<storage, read> dirty: array<u32>;
@group(0) @binding(5) var<storage, read> plans: array<RebuildPlan>;
@group(0) @binding(6) var<storage, read> sets: array<ContactSet>;
@group(0) @binding(7) var<storage, read_write> springs: array<StictionSpring>;

// f32 round of a non-negative multiple of ¼ below 2²² (Rust's f32::round: halves away from zero;
// x + ½ is exact there, so floor gives it).
fn round_quarter(x: f32) -> u32 {
    return u32(floor(x + 0.5));
}

@compute @workgroup_size(64)
fn set_rebuild_springs(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
    @builtin(local_invocation_index) lid: u32,
) {
    let t = thread_index(wid, nwg, lid, 64u);
    if t >= rebuild.num_dirty {
        return;
    }
    let k = dirty[t];
    let plan = plans[t];
    if (plan.flags & PLAN_DELETE) != 0u {
        for (var s = 0u; s < 4u; s = s + 1u) {
            var z: StictionSpring;
            springs[4u * k + s] = z;
        }
        return;
    }
    if !plan_built(plan) || !(rebuild.stiction_stiffness > 0.0) {
        return;
    }
    let old = sets[k];
    let bx = plan.new_bx;
    if any(bx != old.bx) || (old.flags & SET_DIRTY) != 0u {
        for (var s = 0u; s < 4u; s = s + 1u) {
            let fu = select(0.25, 0.75, s >= 2u);
            let fv = select(0.25, 0.75, s % 2u == 1u);
            let i = bx.x + round_quarter(f32(bx.y - bx.x) * fu);
            let j = bx.z + round_quarter(f32(bx.w - bx.z) * fv);
            let ok = i >= bx.x && i <= bx.y && j >= bx.z && j <= bx.w && pair_member(i, j);
            var sp: StictionSpring;
            sp.i = i;
            sp.j = j;
            if ok {
                sp.flags = SPRING_ACTIVE;
                sp.rest = vec4<f32>(qpts[i].xyz - qpts[j].xyz, 0.0);
            }
            springs[4u * k + s] = sp;
        }
    } else {
        let r = quat_to_matrix(old.quat);
        for (var s = 0u; s < 4u; s = s + 1u) {
            let d = springs[4u * k + s].rest.xyz;
            // M3::mul_v's order.
            springs[4u * k + s].rest = vec4<f32>(r[0] * d.x + r[1] * d.y + r[2] * d.z, 0.0);
        }
    }
}
