// ball_hit_count: the yarn–ball contacts of each control point (CPU twin: balls::ball_hit_count).
// One thread per control point p <= num_points: a free point (inv_mass != 0) whose predicted
// position q + h v lies closer than the yarn radius to a ball's surface (at the ball's predicted
// centre) touches it; the number of balls it touches goes into ball_hit_offsets[p] (scanned into
// offsets next), and each touch adds one to ball_count of its ball (integer atomics: the counts
// do not depend on the order). Thread num_points writes the trailing 0 the scan's total lands in.
// Loop bound per thread: params.num_balls iterations.

#import layout
#import vec
#import ball

@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read> balls: array<BallState>;
@group(0) @binding(2) var<storage, read> inv_mass: array<f32>;
@group(0) @binding(3) var<storage, read> pos: array<vec4<f32>>;
@group(0) @binding(4) var<storage, read> vel: array<vec4<f32>>;
@group(0) @binding(5) var<storage, read_write> ball_count: array<atomic<u32>>;
@group(0) @binding(6) var<storage, read_write> ball_hit_offsets: array<u32>;

@compute @workgroup_size(256)
fn ball_hit_count(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
    @builtin(local_invocation_index) lid: u32,
) {
    let p = thread_index(wid, nwg, lid, 256u);
    let n = params.num_points;
    if p > n {
        return;
    }
    if p == n || inv_mass[p] == 0.0 {
        ball_hit_offsets[p] = 0u;
        return;
    }
    let h = params.h;
    let x = pos[p].xyz + vel[p].xyz * h;
    var count = 0u;
    for (var b = 0u; b < params.num_balls; b++) {
        let ball = balls[b];
        if ball_touches(x, ball_predicted(ball, h), ball, params.radius) {
            count += 1u;
            atomicAdd(&ball_count[b], 1u);
        }
    }
    ball_hit_offsets[p] = count;
}
