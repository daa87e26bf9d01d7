// render_tubes: yarn as lit, depth-tested tubes around the Catmull-Rom curve.
//
// One instance per spline segment (CPU side: src/render/mesh.rs, `TubeInstance`). The vertex shader
// evaluates the segment at ring parameter t = j / samples and places `sides` vertices at radius r around
// it. The ring frame starts from the instance's n0 and is carried from ring to ring by projecting it onto
// the plane normal to the tangent (the same chain mesh.rs runs, so neighbouring segments share their
// joining ring). Vertices past the rings are the end caps, collapsed to a point unless the instance's
// flags ask for them. `Uniforms` and `shade` come
// from shaders/shared/render_common.wgsl.
//
// Loop bound: the ring-frame transport runs at most `samples` iterations a vertex (mesh.rs's
// SAMPLES, 6), far below lavapipe's 65,535 a shader invocation.

#import render_common

struct Instance {
    @location(0) q0: vec3<f32>,
    @location(1) q1: vec3<f32>,
    @location(2) q2: vec3<f32>,
    @location(3) q3: vec3<f32>,
    @location(4) n0: vec3<f32>,
    @location(5) color: vec4<f32>,
    @location(6) twist: vec2<f32>,
    @location(7) flags: u32,
};

struct VsOut {
    @builtin(position) clip: vec4<f32>,
    @location(0) world: vec3<f32>,
    @location(1) normal: vec3<f32>,
    @location(2) color: vec4<f32>,
};

const TAU: f32 = 6.283185307179586;
const CAP_START: u32 = 1u;
const CAP_END: u32 = 2u;

// Catmull-Rom basis B_0..B_3 and its derivative (src/spline.rs `basis`, `basis_deriv`).
fn cr_basis(t: f32) -> vec4<f32> {
    let t2 = t * t;
    let t3 = t2 * t;
    return 0.5 * vec4<f32>(-t + 2.0 * t2 - t3, 2.0 - 5.0 * t2 + 3.0 * t3, t + 4.0 * t2 - 3.0 * t3, -t2 + t3);
}

fn cr_basis_deriv(t: f32) -> vec4<f32> {
    let t2 = t * t;
    return 0.5 * vec4<f32>(-1.0 + 4.0 * t - 3.0 * t2, -10.0 * t + 9.0 * t2, 1.0 + 8.0 * t - 9.0 * t2, -2.0 * t + 3.0 * t2);
}

fn tube_point(s: Instance, t: f32) -> vec3<f32> {
    let b = cr_basis(t);
    return s.q0 * b.x + s.q1 * b.y + s.q2 * b.z + s.q3 * b.w;
}

// Unit tangent, falling back to the chord where the derivative vanishes (mesh.rs `tangent`).
fn tube_tangent(s: Instance, t: f32) -> vec3<f32> {
    let b = cr_basis_deriv(t);
    let d = s.q0 * b.x + s.q1 * b.y + s.q2 * b.z + s.q3 * b.w;
    let l = length(d);
    if l > 1e-12 {
        return d / l;
    }
    let c = s.q2 - s.q1;
    if length(c) > 1e-12 {
        return normalize(c);
    }
    return vec3<f32>(1.0, 0.0, 0.0);
}

// mesh.rs `any_perp`: the least aligned axis with its component along t removed.
fn any_perp(t: vec3<f32>) -> vec3<f32> {
    let a = abs(t);
    var axis = vec3<f32>(0.0, 0.0, 1.0);
    if a.x <= a.y && a.x <= a.z {
        axis = vec3<f32>(1.0, 0.0, 0.0);
    } else if a.y <= a.z {
        axis = vec3<f32>(0.0, 1.0, 0.0);
    }
    return normalize(axis - t * dot(t, axis));
}

// mesh.rs `project_perp`.
fn project_perp(n: vec3<f32>, t: vec3<f32>) -> vec3<f32> {
    let v = n - t * dot(n, t);
    let l = length(v);
    if l > 1e-6 {
        return v / l;
    }
    return any_perp(t);
}

@vertex
fn vs_tube(@builtin(vertex_index) vid: u32, s: Instance) -> VsOut {
    let samples = u32(u.tube.y);
    let sides = u32(u.tube.z);
    let radius = u.tube.x;
    let ring_verts = (samples + 1u) * sides;

    var ring = 0u;
    var side = 0u;
    // 0: tube wall, 1: cap centre, 2: cap rim
    var kind = 0u;
    if vid < ring_verts {
        ring = vid / sides;
        side = vid % sides;
    } else {
        let c = vid - ring_verts;
        if c < 2u {
            kind = 1u;
            ring = c * samples;
        } else if c < 2u + sides {
            kind = 2u;
            side = c - 2u;
        } else {
            kind = 2u;
            ring = samples;
            side = c - 2u - sides;
        }
    }

    let t = f32(ring) / f32(samples);
    var n = s.n0;
    for (var j = 1u; j <= ring; j = j + 1u) {
        n = project_perp(n, tube_tangent(s, f32(j) / f32(samples)));
    }
    let tng = tube_tangent(s, t);
    let b = cross(tng, n);
    let angle = TAU * f32(side) / f32(sides) + mix(s.twist.x, s.twist.y, t);
    let radial = cos(angle) * n + sin(angle) * b;
    let centre = tube_point(s, t);

    var p = centre + radius * radial;
    var nrm = radial;
    if kind != 0u {
        let at_start = ring == 0u;
        var wanted = (s.flags & CAP_END) != 0u;
        nrm = tng;
        if at_start {
            wanted = (s.flags & CAP_START) != 0u;
            nrm = -tng;
        }
        // A cap that is not wanted collapses to its centre: zero-area triangles draw nothing.
        if kind == 1u || !wanted {
            p = centre;
        }
    }

    var out: VsOut;
    out.clip = u.view_proj * vec4<f32>(p, 1.0);
    out.world = p;
    out.normal = nrm;
    out.color = s.color;
    return out;
}

@fragment
fn fs_tube(v_in: VsOut) -> @location(0) vec4<f32> {
    return shade(v_in.color.rgb, v_in.normal, v_in.world);
}
