// object_contact: velocity-level contact of the control points with the placed obstacles (CPU twin:
// step::object_contact). One thread per control point p < params.num_points; glued points
// (inv_mass = 0) are left alone. For each obstacle in order, if the predicted position q + h v lies
// closer than the yarn radius r to its surface: the inward normal relative velocity (relative to the
// surface there: a capsule's ends move at vel and vel_b) is removed, the
// tangential relative velocity shrinks by friction × the removed normal speed (never reversing),
// then the normal velocity that puts q + h v at distance r is added.
// Loop bound per thread: params.num_obstacles iterations (one per obstacle; a scene has a few, and
// each walking figure adds 14), no other loops.

#import layout
#import vec

@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read> obstacles: array<ObstacleShape>;
@group(0) @binding(2) var<storage, read> inv_mass: array<f32>;
@group(0) @binding(3) var<storage, read> pos: array<vec4<f32>>;
@group(0) @binding(4) var<storage, read_write> vel: array<vec4<f32>>;

// Obstacle kinds (step::OBSTACLE_*); any other kind is a capsule, as in the twin.
const OBSTACLE_PLANE: u32 = 0u;
const OBSTACLE_SPHERE: u32 = 1u;

// Written out rather than the builtin, so the order of operations is the twin's (math::V3::dot).

struct Distance {
    d: f32,
    n: vec3<f32>,
};

// Unit d / l, or +y when the point sits exactly on the centre (twin: step::outward).
fn outward(d: vec3<f32>, l: f32) -> vec3<f32> {
    if l > 0.0 {
        return d / l;
    }
    return vec3<f32>(0.0, 1.0, 0.0);
}

// Signed distance from x to the obstacle's surface and the outward unit normal there (twin:
// step::obstacle_distance).
fn obstacle_distance(o: ObstacleShape, x: vec3<f32>) -> Distance {
    let a = o.a.xyz;
    if o.kind == OBSTACLE_PLANE {
        let n = o.b.xyz;
        return Distance(dot3(x - a, n), n);
    }
    if o.kind == OBSTACLE_SPHERE {
        let d = x - a;
        let l = sqrt(dot3(d, d));
        return Distance(l - o.radius, outward(d, l));
    }
    let ab = o.b.xyz - a;
    let len2 = dot3(ab, ab);
    var s = 0.0;
    if len2 > 0.0 {
        s = min(max(dot3(x - a, ab) / len2, 0.0), 1.0);
    }
    let d = x - (a + ab * s);
    let l = sqrt(dot3(d, d));
    return Distance(l - o.radius, outward(d, l));
}

// The velocity of the obstacle's surface next to x (twin: step::obstacle_velocity): vel, or for a
// capsule the velocity of its axis point closest to x, vel + s (vel_b - vel).
fn obstacle_velocity(o: ObstacleShape, x: vec3<f32>) -> vec3<f32> {
    if o.kind == OBSTACLE_PLANE || o.kind == OBSTACLE_SPHERE {
        return o.vel.xyz;
    }
    let a = o.a.xyz;
    let ab = o.b.xyz - a;
    let len2 = dot3(ab, ab);
    var s = 0.0;
    if len2 > 0.0 {
        s = clamp(dot3(x - a, ab) / len2, 0.0, 1.0);
    }
    return o.vel.xyz + (o.vel_b.xyz - o.vel.xyz) * s;
}

@compute @workgroup_size(256)
fn object_contact(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
    @builtin(local_invocation_index) lid: u32,
) {
    let p = thread_index(wid, nwg, lid, 256u);
    if p >= params.num_points || params.num_obstacles == 0u || inv_mass[p] == 0.0 {
        return;
    }
    let h = params.h;
    let radius = params.radius;
    let q = pos[p].xyz;
    var v = vel[p].xyz;
    for (var j = 0u; j < params.num_obstacles; j++) {
        let o = obstacles[j];
        let x = q + v * h;
        let hit = obstacle_distance(o, x);
        if hit.d >= radius {
            continue;
        }
        let vo = obstacle_velocity(o, x);
        let rel = v - vo;
        let vn = dot3(rel, hit.n);
        if vn < 0.0 {
            let vt = rel - hit.n * vn;
            let vtn = sqrt(dot3(vt, vt));
            var keep = 0.0;
            if vtn > 0.0 {
                keep = max(1.0 - o.friction * (-vn) / vtn, 0.0);
            }
            v = vo + vt * keep;
        }
        let out = obstacle_distance(o, q + v * h);
        if out.d < radius {
            v = v + out.n * ((radius - out.d) / h);
        }
    }
    vel[p] = vec4<f32>(v, 0.0);
}
