// ball_contact: ball–obstacle and ball–ball contact by sequential impulses (CPU twin:
// balls::ball_contact). One thread (the sweeps are sequential: each impulse sees the velocities the
// previous ones left). Unless held: the pairs i < j whose centres lie closer than the sum of their
// radii plus 4 h × the fastest ball's speed go into ball_pairs (i | j << 16); then BALL_ITERATIONS
// sweeps, each over every free ball's obstacles in order, then over the pairs. Every impulse is
// the velocity-level response of balls::normal_impulse on the positions predicted for the end of
// the step, plus Coulomb friction at the contact point. Then a ball whose velocity or spin is not
// finite raises ERROR_NAN_BALL with the lowest such ball in counters.first_bad_ball.
// Loop bound of the thread, every loop counted: balls::ball_contact_iterations(nb, no) =
// nb (fastest) + nb + nb(nb − 1)/2 (pair search) + 8 (1 + nb + nb · no + nb(nb − 1)/2) (sweeps)
// + nb (check), nb = params.num_balls, no = params.num_obstacles; the GPU step keeps it within
// balls::BALL_CONTACT_LOOP_LIMIT (60,000; lavapipe ends an invocation after 65,535).

#import layout
#import vec
#import obstacle
#import ball

@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read> obstacles: array<ObstacleShape>;
@group(0) @binding(2) var<storage, read_write> balls: array<BallState>;
@group(0) @binding(3) var<storage, read_write> ball_pairs: array<u32>;
@group(0) @binding(4) var<storage, read_write> counters: Counters;

// balls::BALL_ITERATIONS.
const BALL_ITERATIONS: u32 = 8u;

// BallState::apply (not held): impulse j at arm from ball i's centre.
fn apply(i: u32, j: vec3<f32>, arm: vec3<f32>) {
    let b = balls[i];
    let v = b.vel.xyz + j * b.vel.w;
    let w = b.omega.xyz + cross3(arm, j) * b.omega.w;
    balls[i].vel = vec4<f32>(v, b.vel.w);
    balls[i].omega = vec4<f32>(w, b.omega.w);
}

// balls::normal_impulse.
fn normal_impulse(gap: f32, vn: f32, h: f32, e: f32, bounce: f32, inv: f32) -> f32 {
    var bounced = 0.0;
    if vn < -bounce {
        bounced = -e * vn;
    }
    let want = max(vn - gap / h, bounced);
    return max((want - vn) / inv, 0.0);
}

fn obstacle_sweep(i: u32, h: f32) {
    for (var oi = 0u; oi < params.num_obstacles; oi++) {
        let o = obstacles[oi];
        var b = balls[i];
        let x = ball_predicted(b, h);
        let hit = obstacle_distance(o, x);
        let big_r = b.center.w;
        let gap = hit.d - big_r;
        if gap >= 0.0 {
            continue;
        }
        let n = hit.n;
        let ov = obstacle_velocity(o, x);
        let vn = dot3(b.vel.xyz - ov, n);
        let jn = normal_impulse(gap, vn, h, b.restitution, bounce_speed(), b.vel.w);
        if jn <= 0.0 {
            continue;
        }
        let arm = n * (-big_r);
        apply(i, n * jn, arm);
        // Friction at the contact point, against the obstacle's surface velocity.
        b = balls[i];
        let rel = b.vel.xyz + cross3(b.omega.xyz, arm) - ov;
        let vt = rel - n * dot3(rel, n);
        let vtn = norm3(vt);
        if vtn > 0.0 {
            let mu = sqrt(b.friction * o.friction);
            let k_t = b.vel.w + big_r * big_r * b.omega.w;
            let jt = min(mu * jn, vtn / k_t);
            apply(i, vt * (-jt / vtn), arm);
        }
    }
}

fn pair_impulse(i: u32, j: u32, h: f32) {
    var a = balls[i];
    var b = balls[j];
    if a.vel.w == 0.0 && b.vel.w == 0.0 {
        return;
    }
    let pa = ball_predicted(a, h);
    let pb = ball_predicted(b, h);
    let d = pb - pa;
    let l = norm3(d);
    let gap = l - a.center.w - b.center.w;
    if gap >= 0.0 {
        return;
    }
    let n = outward(d, l);
    let vn = dot3(b.vel.xyz - a.vel.xyz, n);
    let inv = a.vel.w + b.vel.w;
    let e = max(a.restitution, b.restitution);
    let jn = normal_impulse(gap, vn, h, e, bounce_speed(), inv);
    if jn <= 0.0 {
        return;
    }
    // Both impulses act at one point on the line of centres (angular momentum is kept).
    let s = a.center.w / (a.center.w + b.center.w);
    let at = a.center.xyz + (b.center.xyz - a.center.xyz) * s;
    let arm_a = at - a.center.xyz;
    let arm_b = at - b.center.xyz;
    apply(i, n * (-jn), arm_a);
    apply(j, n * jn, arm_b);
    a = balls[i];
    b = balls[j];
    let rel = (b.vel.xyz + cross3(b.omega.xyz, arm_b)) - (a.vel.xyz + cross3(a.omega.xyz, arm_a));
    let vt = rel - n * dot3(rel, n);
    let vtn = norm3(vt);
    if vtn > 0.0 {
        let mu = sqrt(a.friction * b.friction);
        let k_t = inv + dot3(arm_a, arm_a) * a.omega.w * select(0.0, 1.0, a.vel.w != 0.0)
            + dot3(arm_b, arm_b) * b.omega.w * select(0.0, 1.0, b.vel.w != 0.0);
        let jt = min(mu * jn, vtn / k_t);
        let t = vt * (jt / vtn);
        apply(i, t, arm_a);
        apply(j, t * -1.0, arm_b);
    }
}

@compute @workgroup_size(1)
fn ball_contact(@builtin(global_invocation_id) gid: vec3<u32>) {
    if gid.x != 0u || gid.y != 0u {
        return;
    }
    let nb = params.num_balls;
    let h = params.h;
    if params.balls_held == 0u && nb > 0u {
        var fastest = 0.0;
        for (var i = 0u; i < nb; i++) {
            fastest = max(fastest, norm3(balls[i].vel.xyz));
        }
        var np = 0u;
        for (var i = 0u; i < nb; i++) {
            for (var j = i + 1u; j < nb; j++) {
                let a = balls[i];
                let b = balls[j];
                let reach = a.center.w + b.center.w + 4.0 * h * fastest;
                if norm3(a.center.xyz - b.center.xyz) < reach {
                    ball_pairs[np] = i | (j << 16u);
                    np += 1u;
                }
            }
        }
        for (var it = 0u; it < BALL_ITERATIONS; it++) {
            for (var i = 0u; i < nb; i++) {
                if balls[i].vel.w != 0.0 {
                    obstacle_sweep(i, h);
                }
            }
            for (var k = 0u; k < np; k++) {
                let pair = ball_pairs[k];
                pair_impulse(pair & 0xffffu, pair >> 16u, h);
            }
        }
    }
    for (var i = 0u; i < nb; i++) {
        let b = balls[i];
        if !(finite3(b.vel.xyz) && finite3(b.omega.xyz)) {
            atomicOr(&counters.errors, ERROR_NAN_BALL);
            atomicMin(&counters.first_bad_ball, i);
        }
    }
}
