// ball_position: c += h v for every ball (CPU twin: balls::ball_position); held balls stay. One
// thread per ball b < num_balls.
// Loop bound per thread: none.

#import layout

@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read_write> balls: array<BallState>;

@compute @workgroup_size(256)
fn ball_position(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
    @builtin(local_invocation_index) lid: u32,
) {
    let b = thread_index(wid, nwg, lid, 256u);
    if b >= params.num_balls || params.balls_held != 0u {
        return;
    }
    let c = balls[b].center;
    balls[b].center = vec4<f32>(c.xyz + params.h * balls[b].vel.xyz, c.w);
}
