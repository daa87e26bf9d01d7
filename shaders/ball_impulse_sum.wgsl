// ball_impulse_sum: each ball's impulses from the yarn, summed and applied (CPU twin:
// balls::ball_impulse_sum). One workgroup of 256 per ball b (workgroup index, 2-D grid): the step's
// hit count is total = ball_hit_offsets[num_points]; workgroup 0's thread 0 writes it into
// counters.ball_hits with the capacity and the overflow flag. Unless held, thread t sums the
// impulse J and torque arm × J of the hits k ≡ t (mod 256), k < min(total, capacity), that name
// b, in increasing k; the 256 lane sums are added pairwise (lane t += lane t + s for s = 128, 64,
// …, 1); thread 0 applies the sums to a free ball: v += J / M, ω += T / I. The order of every
// addition is fixed, so the result is deterministic and the twin's up to the terms' rounding.
// Loop bound per thread: ceil(min(total, params.ball_hit_capacity) / 256) iterations, plus 8 tree
// levels.

#import layout
#import vec

@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read> ball_hit_offsets: array<u32>;
@group(0) @binding(2) var<storage, read> ball_hits: array<BallHit>;
@group(0) @binding(3) var<storage, read_write> balls: array<BallState>;
@group(0) @binding(4) var<storage, read_write> counters: Counters;

var<workgroup> lane_j: array<vec3<f32>, 256>;
var<workgroup> lane_t: array<vec3<f32>, 256>;

@compute @workgroup_size(256)
fn ball_impulse_sum(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
    @builtin(local_invocation_index) lid: u32,
) {
    let b = wid.y * nwg.x + wid.x;
    let total = ball_hit_offsets[params.num_points];
    let cap = params.ball_hit_capacity;
    if b == 0u && lid == 0u {
        atomicStore(&counters.ball_hits.count, total);
        counters.ball_hits.capacity = cap;
        atomicStore(&counters.ball_hits.overflow, select(0u, 1u, total > cap));
    }
    if b >= params.num_balls || params.balls_held != 0u {
        return;
    }
    // A fixed ball takes nothing (no early return: the barriers below need the whole workgroup).
    let free = balls[b].vel.w != 0.0;
    var used = min(total, cap);
    if !free {
        used = 0u;
    }
    var sj = vec3<f32>(0.0);
    var st = vec3<f32>(0.0);
    for (var k = lid; k < used; k += 256u) {
        let hit = ball_hits[k];
        if hit.ball == b {
            let j = vec3<f32>(hit.impulse[0], hit.impulse[1], hit.impulse[2]);
            let arm = vec3<f32>(hit.arm[0], hit.arm[1], hit.arm[2]);
            sj = sj + j;
            st = st + cross3(arm, j);
        }
    }
    lane_j[lid] = sj;
    lane_t[lid] = st;
    workgroupBarrier();
    for (var s = 128u; s > 0u; s >>= 1u) {
        if lid < s {
            lane_j[lid] = lane_j[lid] + lane_j[lid + s];
            lane_t[lid] = lane_t[lid] + lane_t[lid + s];
        }
        workgroupBarrier();
    }
    if lid == 0u && free {
        let ball = balls[b];
        let v = ball.vel.xyz + lane_j[0] * ball.vel.w;
        let w = ball.omega.xyz + lane_t[0] * ball.omega.w;
        balls[b].vel = vec4<f32>(v, ball.vel.w);
        balls[b].omega = vec4<f32>(w, ball.omega.w);
    }
}
