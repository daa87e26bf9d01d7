// ball_velocity: gravity on the free balls, v += h g (CPU twin: balls::ball_velocity), and the
// step's per-ball hit counts zeroed for ball_hit_count. One thread per ball b < num_balls; held
// balls (params.balls_held) and fixed ones (1/M = 0) keep their velocity.
// Loop bound per thread: none.

#import layout

@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read_write> balls: array<BallState>;
@group(0) @binding(2) var<storage, read_write> ball_count: array<u32>;

@compute @workgroup_size(256)
fn ball_velocity(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
    @builtin(local_invocation_index) lid: u32,
) {
    let b = thread_index(wid, nwg, lid, 256u);
    if b >= params.num_balls {
        return;
    }
    ball_count[b] = 0u;
    if params.balls_held != 0u || balls[b].vel.w == 0.0 {
        return;
    }
    let g = vec3<f32>(params.gravity_x, params.gravity_y, params.gravity_z);
    let v = balls[b].vel;
    balls[b].vel = vec4<f32>(v.xyz + params.h * g, v.w);
}
