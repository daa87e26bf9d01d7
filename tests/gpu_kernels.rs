//! Parity of the element-wise kernels with their CPU twins (`integrate_velocity`,
//! `integrate_velocity_setup`, `glue_projection`, `integrate_position`) on a state of a real scene (scenes/tiny.toml after 200
//! CPU steps: hanging from pins, moving).
//!
//! Tolerance: each output component is one or two f32 operations on the inputs (`v + (h w) f`,
//! `(t − q) / h`, `q + h v`). A GPU compiler may fuse a multiply-add (one rounding instead of two), so
//! a component may differ by at most one rounding of each term: |gpu − cpu| ≤ 2ε (|a| + |b|) for
//! `a + b`, ε = 2⁻²³ (one ulp at 1); the division is correctly rounded on both sides up to 2.5 ulp
//! under Vulkan's precision rules, so it gets 3ε |result| on top.

#[path = "support/fixture.rs"]
mod fixture;

use fixture::{bytes, scene_sim};
use yarnsim::gpu::testing::gpu_or_skip;
use yarnsim::layout::{Counters, ERROR_NAN_FORCE};
use yarnsim::pipelines::run_kernel;
use yarnsim::step;

const EPS: f32 = 1.0 / (1u32 << 23) as f32;

fn assert_close(
    name: &str,
    gpu: &[[f32; 4]],
    cpu: &[[f32; 4]],
    bound: impl Fn(usize, usize) -> f32,
) {
    assert_eq!(gpu.len(), cpu.len());
    let mut checked = 0;
    for (i, (g, c)) in gpu.iter().zip(cpu).enumerate() {
        for k in 0..4 {
            if g[k] == c[k] || (g[k].is_nan() && c[k].is_nan()) {
                checked += 1;
                continue;
            }
            let d = (g[k] - c[k]).abs();
            let b = if k < 3 { bound(i, k) } else { 0.0 };
            assert!(
                d <= b,
                "{name}: point {i} component {k}: gpu {} cpu {} (difference {d:e} > bound {b:e})",
                g[k],
                c[k]
            );
            checked += 1;
        }
    }
    assert!(checked > 100, "{name}: only {checked} values compared");
}

#[test]
fn integrate_velocity_matches_twin() {
    let Some(gpu) = gpu_or_skip("integrate_velocity_matches_twin") else {
        return;
    };
    let sim = scene_sim("tiny", &[], 200);
    // With air drag (`damping.air` = 10/s), so the drag factor is exercised too.
    let params = yarnsim::layout::Params {
        air_factor: (1.0 / (1.0 + sim.params.h as f64 * 10.0)) as f32,
        ..sim.step_params()
    };
    assert!(params.air_factor < 1.0);
    let mut force = sim.force().to_vec();
    // One bad force, to check the flag and the first bad point.
    let bad = 57;
    force[bad][1] = f32::NAN;
    force[bad + 3][0] = f32::INFINITY;
    let fresh = Counters {
        first_bad_point: u32::MAX,
        ..Counters::default()
    };
    let out = run_kernel(
        &gpu,
        "integrate_velocity",
        &[
            ("params", bytes(&[params])),
            ("inv_mass", bytes(&sim.inv_mass)),
            ("force", bytes(&force)),
            ("vel", bytes(&sim.vel)),
            ("counters", bytes(&[fresh])),
        ],
        params.num_points,
    )
    .unwrap();
    let mut vel = sim.vel.clone();
    let mut counters = fresh;
    step::integrate_velocity(&params, &sim.inv_mass, &force, &mut vel, &mut counters);
    let g_vel: &[[f32; 4]] = bytemuck::cast_slice(&out["vel"]);
    let g_cnt: Counters = bytemuck::pod_read_unaligned(&out["counters"]);
    assert_eq!(g_cnt, counters);
    assert_eq!(counters.errors, ERROR_NAN_FORCE);
    assert_eq!(counters.first_bad_point, bad as u32);
    let h = params.h;
    let (v0, w) = (&sim.vel, &sim.inv_mass);
    // One more rounding for the drag factor's product.
    assert_close("integrate_velocity", g_vel, &vel, |i, k| {
        2.0 * EPS * (v0[i][k].abs() + (h * w[i] * force[i][k]).abs()) + EPS * vel[i][k].abs()
    });
}

/// `integrate_velocity_setup`, which the GPU step dispatches in a scene without glued points or
/// ties, leaves `vel`, `length_disp` and `counters` bit for bit as `integrate_velocity` and then
/// `length_setup` dispatched on the same GPU, with projection 1 committed (`length_level.w` = 1)
/// and not; `length_disp` starts as NaN, so every point's must be written. Its twin (the two twins
/// in turn) raises the same flags and is within `integrate_velocity`'s bound for `vel`, and for
/// `length_disp = h v` within h times that bound plus one rounding (ε |h v|).
#[test]
fn integrate_velocity_setup_is_the_two_kernels_bit_for_bit() {
    let Some(gpu) = gpu_or_skip("integrate_velocity_setup_is_the_two_kernels_bit_for_bit") else {
        return;
    };
    let sim = scene_sim("tiny", &[], 200);
    let params = yarnsim::layout::Params {
        air_factor: (1.0 / (1.0 + sim.params.h as f64 * 10.0)) as f32,
        ..sim.step_params()
    };
    let mut force = sim.force().to_vec();
    force[57][1] = f32::NAN;
    let fresh = Counters {
        first_bad_point: u32::MAX,
        ..Counters::default()
    };
    let n = params.num_points;
    let unset = vec![[f32::NAN; 4]; n as usize];
    for committed in [0u32, 1] {
        let level = [0, 0, params.num_edges, committed];
        let fused = run_kernel(
            &gpu,
            "integrate_velocity_setup",
            &[
                ("params", bytes(&[params])),
                ("length_level", bytes(&level)),
                ("inv_mass", bytes(&sim.inv_mass)),
                ("force", bytes(&force)),
                ("vel", bytes(&sim.vel)),
                ("length_disp", bytes(&unset)),
                ("counters", bytes(&[fresh])),
            ],
            n,
        )
        .unwrap();
        let first = run_kernel(
            &gpu,
            "integrate_velocity",
            &[
                ("params", bytes(&[params])),
                ("inv_mass", bytes(&sim.inv_mass)),
                ("force", bytes(&force)),
                ("vel", bytes(&sim.vel)),
                ("counters", bytes(&[fresh])),
            ],
            n,
        )
        .unwrap();
        let second = run_kernel(
            &gpu,
            "length_setup",
            &[
                ("params", bytes(&[params])),
                ("length_level", bytes(&level)),
                ("vel", &first["vel"]),
                ("length_disp", bytes(&unset)),
                ("counters", &first["counters"]),
            ],
            n,
        )
        .unwrap();
        assert_eq!(fused["vel"], first["vel"], "w = {committed}: vel");
        assert_eq!(
            fused["length_disp"], second["length_disp"],
            "w = {committed}: length_disp"
        );
        assert_eq!(
            fused["counters"], second["counters"],
            "w = {committed}: counters"
        );
        let g_cnt: Counters = bytemuck::pod_read_unaligned(&fused["counters"]);
        assert_eq!(g_cnt.length_iterations, committed);
        assert_eq!((g_cnt.errors, g_cnt.first_bad_point), (ERROR_NAN_FORCE, 57));
        let (mut vel, mut disp, mut counters) = (sim.vel.clone(), unset.clone(), fresh);
        step::integrate_velocity_setup(
            &params,
            &level,
            &sim.inv_mass,
            &force,
            &mut vel,
            &mut disp,
            &mut counters,
        );
        assert_eq!(g_cnt, counters, "w = {committed}: the twin's counters");
        let h = params.h;
        let (v0, w) = (&sim.vel, &sim.inv_mass);
        let vel_bound = |i: usize, k: usize| {
            2.0 * EPS * (v0[i][k].abs() + (h * w[i] * force[i][k]).abs()) + EPS * vel[i][k].abs()
        };
        assert_close(
            "integrate_velocity_setup: vel",
            bytemuck::cast_slice(&fused["vel"]),
            &vel,
            vel_bound,
        );
        assert_close(
            "integrate_velocity_setup: length_disp",
            bytemuck::cast_slice(&fused["length_disp"]),
            &disp,
            |i, k| h * vel_bound(i, k) + EPS * disp[i][k].abs(),
        );
    }
}

#[test]
fn glue_projection_matches_twin() {
    let Some(gpu) = gpu_or_skip("glue_projection_matches_twin") else {
        return;
    };
    let sim = scene_sim("tiny", &[], 200);
    let params = sim.step_params();
    assert!(params.num_glue > 4, "the fixture has pins");
    // Targets away from the points, so the projection has something to do.
    let target: Vec<[f32; 4]> = sim
        .glue_target
        .iter()
        .map(|t| [t[0] + 1e-3, t[1] - 2e-3, t[2], t[3]])
        .collect();
    let out = run_kernel(
        &gpu,
        "glue_projection",
        &[
            ("params", bytes(&[params])),
            ("glue_points", bytes(&sim.glue_points)),
            ("glue_target", bytes(&target)),
            ("pos", bytes(&sim.pos)),
            ("vel", bytes(&sim.vel)),
        ],
        params.num_glue,
    )
    .unwrap();
    let mut vel = sim.vel.clone();
    step::glue_projection(&params, &sim.glue_points, &target, &sim.pos, &mut vel);
    let g_vel: &[[f32; 4]] = bytemuck::cast_slice(&out["vel"]);
    let h = params.h;
    // Rows of points that are not glued must be untouched: bound 0 there.
    let glued = |i: usize| sim.glue_points.binary_search(&(i as u32)).ok();
    assert_close("glue_projection", g_vel, &vel, |i, k| match glued(i) {
        Some(g) => {
            let (t, q) = (target[g][k], sim.pos[i][k]);
            2.0 * EPS * (t.abs() + q.abs()) / h + 3.0 * EPS * vel[i][k].abs()
        }
        None => 0.0,
    });
}

#[test]
fn integrate_position_matches_twin() {
    let Some(gpu) = gpu_or_skip("integrate_position_matches_twin") else {
        return;
    };
    let sim = scene_sim("tiny", &[], 200);
    let params = sim.step_params();
    let out = run_kernel(
        &gpu,
        "integrate_position",
        &[
            ("params", bytes(&[params])),
            ("vel", bytes(&sim.vel)),
            ("pos", bytes(&sim.pos)),
        ],
        params.num_points,
    )
    .unwrap();
    let mut pos = sim.pos.clone();
    step::integrate_position(&params, &sim.vel, &mut pos);
    let g_pos: &[[f32; 4]] = bytemuck::cast_slice(&out["pos"]);
    let h = params.h;
    assert_close("integrate_position", g_pos, &pos, |i, k| {
        2.0 * EPS * (sim.pos[i][k].abs() + (h * sim.vel[i][k]).abs())
    });
    // Something moved, so the comparison is not of two copies of the input.
    assert!(pos.iter().zip(&sim.pos).any(|(a, b)| a != b));
}
