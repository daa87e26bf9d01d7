// ball: helpers of the balls' kernels (twins in src/balls.rs). Needs `layout`, `vec` and a `params`
// uniform.

// The ball's centre at the end of the step, by its current velocity (BallState::predicted).
fn ball_predicted(b: BallState, h: f32) -> vec3<f32> {
    return b.center.xyz + b.vel.xyz * h;
}

// Whether a control point predicted at x touches ball b predicted at c: closer than the yarn
// radius r to its surface (balls::touches).
fn ball_touches(x: vec3<f32>, c: vec3<f32>, b: BallState, r: f32) -> bool {
    return norm3(x - c) - b.center.w < r;
}

// The slowest approach that bounces: 4 |g| h, at least 1 cm/s (balls::bounce_speed).
fn bounce_speed() -> f32 {
    let g = vec3<f32>(params.gravity_x, params.gravity_y, params.gravity_z);
    return max(4.0 * norm3(g) * params.h, 1.0);
}
