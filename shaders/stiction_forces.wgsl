// stiction_forces: the stiction springs of every live set (src/acl/stiction.rs; CPU twin
// acl::stiction::stiction_forces): E = ½ k |y_i − y_j − R d0|², R the set's rotation. A spring whose
// energy exceeds the break energy is re-made at the current offset (rest = Rᵀ(y_i − y_j)); an intact
// one adds −k x · w_i and +k x · w_j to the set's fout_pool entries of its 4 + 4 control points,
// alternately slot by slot, springs in order (each point's place in the set's sorted cp_pool range
// by binary search; absent: place 0, as in the twin). Then, where a spring is intact, the pull
// through the set's rotation (rotation_term: Ω × R d̄_i on every point of the set, H Ω = Σ k (R d0)
// × x; the module doc of src/acl/stiction.rs says why), which reads dbar_pool.
// One thread per set. Loop bound per thread: 4 springs × 4 slots × 2 binary searches of ≤ 32 steps
// = 1,024 iterations, + 3 passes over the set's n points (n ≤ ACL_MAX_SET_POINTS = 1,008; a larger
// set gets no rotation term: set_evaluate raised ACL_ERROR_SET_TOO_BIG and the step fails) = 4,048.

#import layout
#import vec
#import polar
#import acl

@group(0) @binding(0) var<uniform> acl: AclUniform;
@group(0) @binding(1) var<storage, read> pos: array<vec4<f32>>;
@group(0) @binding(2) var<storage, read> seg_cp: array<vec4<u32>>;
@group(0) @binding(3) var<storage, read> sets: array<ContactSet>;
@group(0) @binding(4) var<storage, read> cp_pool: array<u32>;
@group(0) @binding(5) var<storage, read> dbar_pool: array<vec4<f32>>;
@group(0) @binding(6) var<storage, read_write> springs: array<StictionSpring>;
@group(0) @binding(7) var<storage, read_write> fout_pool: array<vec4<f32>>;

// RebuildTables::quad_point: quadrature point i.
fn quad_point(i: u32) -> vec3<f32> {
    let b = acl.quadrature;
    let cp = seg_cp[i / b];
    let w = acl.weights[i % b];
    return pos[cp.x].xyz * w.x + pos[cp.y].xyz * w.y + pos[cp.z].xyz * w.z + pos[cp.w].xyz * w.w;
}

// The place of control point c among the n sorted points cp_pool[o..o + n] (0 when absent).
fn local_index(o: u32, n: u32, c: u32) -> u32 {
    var lo = 0u;
    var hi = n;
    while lo < hi {
        let mid = lo + (hi - lo) / 2u;
        if cp_pool[o + mid] < c {
            lo = mid + 1u;
        } else {
            hi = mid;
        }
    }
    if lo < n && cp_pool[o + lo] == c {
        return lo;
    }
    return 0u;
}

// acl::stiction::rotation_term: adds Ω × (R d̄_i) to the n points of the set at o, H Ω = torque.
fn rotation_term(o: u32, n: u32, rot: mat3x3<f32>, torque: vec3<f32>) {
    var c = vec3<f32>(0.0);
    for (var i = 0u; i < n; i++) {
        c = c + pos[cp_pool[o + i]].xyz;
    }
    c = c / f32(max(n, 1u));
    var f = m3_diag(0.0);
    for (var i = 0u; i < n; i++) {
        f = f + m3_outer(pos[cp_pool[o + i]].xyz - c, dbar_pool[o + i].xyz);
    }
    let h = polar_ascent_terms(rot, f).h;
    let solved = polar_solve_spd(h, torque, m3_norm(f));
    if solved.w == 0.0 {
        return;
    }
    let omega = solved.xyz;
    for (var i = 0u; i < n; i++) {
        fout_pool[o + i] = vec4<f32>(
            fout_pool[o + i].xyz + cross3(omega, m3_mul_v(rot, dbar_pool[o + i].xyz)),
            0.0,
        );
    }
}

@compute @workgroup_size(64)
fn stiction_forces(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
    @builtin(local_invocation_index) lid: u32,
) {
    let k = thread_index(wid, nwg, lid, 64u);
    if k >= acl.num_sets {
        return;
    }
    let s = sets[k];
    if (s.flags & SET_LIVE) == 0u {
        return;
    }
    let o = s.cp_off;
    let n = s.n_cp;
    let b = acl.quadrature;
    let rot = quat_to_matrix(s.quat);
    var torque = vec3<f32>(0.0);
    var intact = false;
    for (var m = 0u; m < 4u; m++) {
        let sp = springs[4u * k + m];
        if (sp.flags & SPRING_ACTIVE) == 0u {
            continue;
        }
        let d = quad_point(sp.i) - quad_point(sp.j);
        let rd0 = m3_mul_v(rot, sp.rest.xyz);
        let x = d - rd0;
        let energy = 0.5 * acl.stiction_stiffness * dot3(x, x);
        if energy > acl.stiction_break_energy {
            springs[4u * k + m].rest = vec4<f32>(m3_mul_v(transpose(rot), d), 0.0);
            continue;
        }
        let g = x * acl.stiction_stiffness;
        let si = seg_cp[sp.i / b];
        let sj = seg_cp[sp.j / b];
        let wi = acl.weights[sp.i % b];
        let wj = acl.weights[sp.j % b];
        for (var slot = 0u; slot < 4u; slot++) {
            let li = o + local_index(o, n, si[slot]);
            let lj = o + local_index(o, n, sj[slot]);
            fout_pool[li] = vec4<f32>(fout_pool[li].xyz + g * (-wi[slot]), 0.0);
            fout_pool[lj] = vec4<f32>(fout_pool[lj].xyz + g * wj[slot], 0.0);
        }
        torque = torque + cross3(rd0, g);
        intact = true;
    }
    if intact && n <= ACL_MAX_SET_POINTS {
        rotation_term(o, n, rot, torque);
    }
}
