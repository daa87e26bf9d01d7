// obstacle: the placed obstacles' geometry, shared by object_contact and the balls' kernels (twins
// in src/step.rs: obstacle_distance, obstacle_velocity, contact_velocity). Needs `layout` and `vec`.

// Obstacle kinds (step::OBSTACLE_*); any other kind is a capsule, as in the twin.
const OBSTACLE_PLANE: u32 = 0u;
const OBSTACLE_SPHERE: u32 = 1u;

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

// The velocity a point at v leaves with against a surface moving at vo with outward normal n
// (twin: step::contact_velocity): the approaching normal velocity is removed, the tangential one
// reduced by friction × the removed normal speed (never reversed); a receding point keeps v.
fn contact_velocity(v: vec3<f32>, vo: vec3<f32>, n: vec3<f32>, friction: f32) -> vec3<f32> {
    let rel = v - vo;
    let vn = dot3(rel, n);
    if vn >= 0.0 {
        return v;
    }
    let vt = rel - n * vn;
    let vtn = sqrt(dot3(vt, vt));
    var keep = 0.0;
    if vtn > 0.0 {
        keep = max(1.0 - friction * (-vn) / vtn, 0.0);
    }
    return vo + vt * keep;
}
