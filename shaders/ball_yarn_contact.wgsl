// ball_yarn_contact: two-way contact of the control points with the balls (CPU twin:
// balls::ball_yarn_contact). One thread per control point p < num_points with hits (its range
// ball_hit_offsets[p] .. ball_hit_offsets[p + 1], scanned): for each ball it touches (the test of
// ball_hit_count, at the velocity it came in with), in ball order, the velocity object_contact
// would give it against a sphere moving with the ball's surface (v + ω × arm), of which the point
// takes the share M' / (m + M'), M' = M_b / ball_count[b] (1 for held or fixed balls); the ball's
// impulse −m Δv and its arm (the point minus the ball's centre) go into ball_hits at the point's
// offset, unless past params.ball_hit_capacity (ball_impulse_sum reports the overflow).
// Loop bound per thread: params.num_balls iterations.

#import layout
#import vec
#import obstacle
#import ball

@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read> balls: array<BallState>;
@group(0) @binding(2) var<storage, read> ball_count: array<u32>;
@group(0) @binding(3) var<storage, read> mass: array<f32>;
@group(0) @binding(4) var<storage, read> inv_mass: array<f32>;
@group(0) @binding(5) var<storage, read> pos: array<vec4<f32>>;
@group(0) @binding(6) var<storage, read_write> vel: array<vec4<f32>>;
@group(0) @binding(7) var<storage, read> ball_hit_offsets: array<u32>;
@group(0) @binding(8) var<storage, read_write> ball_hits: array<BallHit>;

// Signed distance from x to the sphere (c, r) and the outward normal (balls::sphere_distance).
fn sphere_distance(c: vec3<f32>, r: f32, x: vec3<f32>) -> Distance {
    let d = x - c;
    let l = norm3(d);
    return Distance(l - r, outward(d, l));
}

@compute @workgroup_size(256)
fn ball_yarn_contact(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
    @builtin(local_invocation_index) lid: u32,
) {
    let p = thread_index(wid, nwg, lid, 256u);
    if p >= params.num_points {
        return;
    }
    let start = ball_hit_offsets[p];
    if start == ball_hit_offsets[p + 1u] || inv_mass[p] == 0.0 {
        return;
    }
    let h = params.h;
    let radius = params.radius;
    let q = pos[p].xyz;
    let m = mass[p];
    let v0 = vel[p];
    let x0 = q + v0.xyz * h;
    var v = v0.xyz;
    var k = start;
    for (var bi = 0u; bi < params.num_balls; bi++) {
        let b = balls[bi];
        let c = ball_predicted(b, h);
        if !ball_touches(x0, c, b, radius) {
            continue;
        }
        let big_r = b.center.w;
        let before = v;
        let hit = sphere_distance(c, big_r, q + v * h);
        let arm = hit.n * big_r;
        let surface = b.vel.xyz + cross3(b.omega.xyz, arm);
        var want = v;
        if hit.d < radius {
            want = contact_velocity(v, surface, hit.n, b.friction);
            let out = sphere_distance(c, big_r, q + want * h);
            if out.d < radius {
                want = want + out.n * ((radius - out.d) / h);
            }
        }
        var share = 1.0;
        if params.balls_held == 0u && b.vel.w != 0.0 {
            let m_ball = b.mass / f32(ball_count[bi]);
            share = m_ball / (m + m_ball);
        }
        v = before + (want - before) * share;
        let j = (v - before) * (-m);
        let at = q - b.center.xyz;
        if k < params.ball_hit_capacity {
            ball_hits[k] = BallHit(p, bi, array<f32, 3>(j.x, j.y, j.z), array<f32, 3>(at.x, at.y, at.z));
        }
        k += 1u;
    }
    vel[p] = vec4<f32>(v, v0.w);
}
