// damping: the work of one workgroup of nonrigid_damping (seed §3.3 non-rigid damping of one block;
// see shaders/nonrigid_damping.wgsl for the method, the fixed reduction order and the loop bound),
// shared by nonrigid_damping and nonrigid_damping_integrate, which goes on to the block's points'
// obstacle contact and positions. The importing kernel declares `params`, `block_start`,
// `block_points`, `mass`, `inv_mass`, `pos` and `vel` (read_write) as nonrigid_damping does, and
// calls damp_block from every thread of its 64-thread workgroup, in uniform control flow (it has
// barriers).

#import vec

const WG: u32 = 64u;

// Partial sums: component c of thread t at red[c * WG + t] (at most 9 components).
var<workgroup> red: array<f32, 576>;

// Reduces components 0 .. n of red (each thread has written its partials) in two levels of 8; the
// totals are at red[c * WG]. Called by every thread of the workgroup (uniform control flow).
fn reduce(t: u32, n: u32) {
    workgroupBarrier();
    // Task j: group j % 8 of component j / 8, summed into the group's first partial.
    for (var j = t; j < n * 8u; j += WG) {
        let base = (j / 8u) * WG + (j % 8u) * 8u;
        var s = red[base];
        for (var i = 1u; i < 8u; i++) {
            s = s + red[base + i];
        }
        red[base] = s;
    }
    workgroupBarrier();
    if t < n {
        let base = t * WG;
        var s = red[base];
        for (var g = 1u; g < 8u; g++) {
            s = s + red[base + g * 8u];
        }
        red[base] = s;
    }
    workgroupBarrier();
}

// Damps block params.first_block + g (g past params.num_blocks: none) with the workgroup's thread
// t; returns the block's run of block_points, [s, end) (empty past num_blocks), whose points thread
// t updated at i = t, t + WG, … (the points a caller of the same stride may read back).
fn damp_block(g: u32, t: u32) -> vec2<u32> {
    // No early return before the last barrier: every thread must reach every barrier. An idle
    // workgroup has k = 0.
    var s = 0u;
    var end = 0u;
    var k = 0u;
    if g < params.num_blocks {
        let b = params.first_block + g;
        s = block_start[b];
        end = block_start[b + 1u];
        if end >= s + 2u {
            k = end - s;
        }
    }
    let h = params.h;
    // Positions relative to the first point, to keep f32 precision.
    var o = vec3<f32>(0.0);
    if k > 0u {
        o = pos[block_points[s]].xyz;
    }

    // 1. Mass, first moment about o, momentum.
    var m = 0.0;
    var mx = vec3<f32>(0.0);
    var mv = vec3<f32>(0.0);
    for (var i = t; i < k; i += WG) {
        let p = block_points[s + i];
        let w = mass[p];
        m = m + w;
        mx = mx + (pos[p].xyz - o) * w;
        mv = mv + vel[p].xyz * w;
    }
    red[t] = m;
    red[WG + t] = mx.x;
    red[2u * WG + t] = mx.y;
    red[3u * WG + t] = mx.z;
    red[4u * WG + t] = mv.x;
    red[5u * WG + t] = mv.y;
    red[6u * WG + t] = mv.z;
    reduce(t, 7u);
    let mt = red[0];
    let mxt = vec3<f32>(red[WG], red[2u * WG], red[3u * WG]);
    let mvt = vec3<f32>(red[4u * WG], red[5u * WG], red[6u * WG]);
    workgroupBarrier(); // everyone has read the totals before step 2 overwrites them
    // A massless block has no rigid motion to keep (twin: rigid_motion's early return).
    let massive = !(mt <= 0.0);
    var c = o;
    var vcm = vec3<f32>(0.0);
    if massive {
        c = o + mxt / mt;
        vcm = mvt / mt;
    }

    // 2. Angular momentum and inertia tensor about c.
    var l = vec3<f32>(0.0);
    var ixx = 0.0;
    var iyy = 0.0;
    var izz = 0.0;
    var ixy = 0.0;
    var ixz = 0.0;
    var iyz = 0.0;
    for (var i = t; i < k; i += WG) {
        let p = block_points[s + i];
        let r = pos[p].xyz - c;
        let w = mass[p];
        l = l + cross3(r, vel[p].xyz - vcm) * w;
        ixx = ixx + w * (r.y * r.y + r.z * r.z);
        iyy = iyy + w * (r.x * r.x + r.z * r.z);
        izz = izz + w * (r.x * r.x + r.y * r.y);
        ixy = ixy - w * r.x * r.y;
        ixz = ixz - w * r.x * r.z;
        iyz = iyz - w * r.y * r.z;
    }
    red[t] = l.x;
    red[WG + t] = l.y;
    red[2u * WG + t] = l.z;
    red[3u * WG + t] = ixx;
    red[4u * WG + t] = iyy;
    red[5u * WG + t] = izz;
    red[6u * WG + t] = ixy;
    red[7u * WG + t] = ixz;
    red[8u * WG + t] = iyz;
    reduce(t, 9u);
    let lt = vec3<f32>(red[0], red[WG], red[2u * WG]);
    let sxx = red[3u * WG];
    let syy = red[4u * WG];
    let szz = red[5u * WG];
    let sxy = red[6u * WG];
    let sxz = red[7u * WG];
    let syz = red[8u * WG];
    workgroupBarrier();
    // Inertia regularised by 1e-5 of its trace; symmetric inverse by cofactors of
    // [[a d e] [d b f] [e f cc]], refined RIGID_REFINEMENTS times towards I ω = L (twin:
    // rigid_motion, whose doc says why).
    let reg = 1e-5 * (sxx + syy + szz);
    let a = sxx + reg;
    let bb = syy + reg;
    let cc = szz + reg;
    let d = sxy;
    let e = sxz;
    let f = syz;
    let c00 = bb * cc - f * f;
    let c01 = e * f - d * cc;
    let c02 = d * f - bb * e;
    let c11 = a * cc - e * e;
    let c12 = d * e - a * f;
    let c22 = a * bb - d * d;
    let det = a * c00 + d * c01 + e * c02;
    var omega = vec3<f32>(0.0);
    if massive && det > 0.0 {
        var rhs = lt;
        for (var it = 0u; it <= RIGID_REFINEMENTS; it += 1u) {
            omega = vec3<f32>(
                c00 * rhs.x + c01 * rhs.y + c02 * rhs.z,
                c01 * rhs.x + c11 * rhs.y + c12 * rhs.z,
                c02 * rhs.x + c12 * rhs.y + c22 * rhs.z,
            ) / det;
            rhs = lt + omega * reg;
        }
    }

    // 3. Squared non-rigid speed.
    var nr2 = 0.0;
    for (var i = t; i < k; i += WG) {
        let p = block_points[s + i];
        let r = pos[p].xyz - c;
        let vnr = vel[p].xyz - vcm - cross3(omega, r);
        nr2 = nr2 + dot3(vnr, vnr);
    }
    red[t] = nr2;
    reduce(t, 1u);
    let nr2t = red[0];
    // (No barrier needed: red is not written again.)

    // 4. The update: thread t writes its own share of the block (disjoint from the other threads').
    if k == 0u || nr2t <= 0.0 {
        return vec2<u32>(s, end);
    }
    let nr = sqrt(nr2t);
    let ff = min(max(h * params.damping_prop, h * params.damping_const * sqrt(f32(k)) / nr), 1.0);
    for (var i = t; i < k; i += WG) {
        let p = block_points[s + i];
        if inv_mass[p] == 0.0 {
            continue;
        }
        let r = pos[p].xyz - c;
        let v = vel[p].xyz;
        let vnr = v - vcm - cross3(omega, r);
        vel[p] = vec4<f32>(v - vnr * ff, 0.0);
    }
    return vec2<u32>(s, end);
}
