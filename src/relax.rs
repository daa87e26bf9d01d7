//! The relaxation before t = 0 (`[relax]` in a scene): makes frame 0 an equilibrium.
//!
//! A garment as generated or imported is not at rest: its yarns start closer than `2r` to each
//! other in places (a generated swatch moves at 27–52 cm/s within 1 ms with gravity off; a published
//! BCC model made for a thinner yarn overlaps almost everywhere at the radius wanted), so the first
//! frames of a run are the contact force pushing the yarns apart, not the motion the scene is about.
//! [`relax`] runs damped steps of the simulation before t = 0:
//!
//! - gravity off, obstacles held at their t = 0 places, air drag `relax.drag` instead of
//!   `damping.air`, the scene's contact model;
//! - the yarn radius starting from `relax.start_radius` (a fraction of `yarn.radius`, or the largest
//!   at which no two strands overlap: half the smallest distance from a quadrature point to another
//!   strand, [`crate::import::fit_radius`]) and grown linearly to `yarn.radius` by `relax.grow_rate`
//!   (a fraction of `yarn.radius` per second; within the first half of `relax.time` however slow that
//!   makes it), in [`RADIUS_STAGES`] equal stages (a contact model takes the radius
//!   when it is built, so each stage builds a new one: a penalty that ramps up gently instead of one
//!   that starts deep inside and blows the yarns apart);
//! - until the radius is at its target and the fastest control point is slower than `relax.speed`,
//!   or `relax.time` has passed.
//!
//! Then velocities are zeroed, time and step count go back to 0, gravity, drag and the contact
//! model are the scene's (a fresh model: its contact sets are built at the relaxed state), and the
//! state is frame 0 of the run. Rest shapes are untouched (plasticity may have changed them during
//! the relaxation, as it would in any step), pins hold their places throughout.

use crate::scene::{RadiusSpec, Scene};
use crate::sim::{contact_model, Sim, SimError};

/// Stages in which the radius grows from its start to its target.
pub const RADIUS_STAGES: u32 = 16;

/// The smallest automatic start radius, as a fraction of `yarn.radius`: yarns that lie inside each
/// other deeper than this cannot be pushed apart by a gentle penalty anyway, and a radius near zero
/// would let them pass through each other.
pub const MIN_START: f32 = 0.25;

/// How a relaxation went.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct RelaxReport {
    /// Steps taken.
    pub steps: u64,
    /// Simulated time taken (s).
    pub time: f64,
    /// The radius it started from (cm), and the target `yarn.radius`.
    pub start_radius: f32,
    pub radius: f32,
    /// Fastest control point at its end (cm/s), before velocities were zeroed.
    pub max_speed: f64,
    /// Whether it came to rest (`max_speed < relax.speed`) before `relax.time` ran out.
    pub settled: bool,
}

/// Progress of a relaxation, given to the caller after every step.
#[derive(Clone, Copy, Debug)]
pub struct RelaxProgress {
    pub step: u64,
    /// Most steps it may take (`relax.time / h`).
    pub max_steps: u64,
    pub radius: f32,
    /// Fastest control point (cm/s); measured once the radius is at its target (NaN before).
    pub max_speed: f64,
}

/// The start radius (cm) that `relax.start_radius` asks for, on the simulation's current curves.
pub fn start_radius(sim: &Sim, scene: &Scene) -> f32 {
    let r = scene.yarn.radius;
    match scene.relax.start_radius {
        RadiusSpec::Value(f) => f * r,
        RadiusSpec::Auto => {
            let nearest = crate::import::fit_radius(&sim.curves(), scene.contact.quadrature)
                .ok()
                .and_then(|fit| fit.distances.first().copied())
                .unwrap_or(f64::INFINITY);
            // 2% below the closest approach, so that the closest pair starts just out of contact.
            let f = (0.49 * nearest / r as f64).clamp(MIN_START as f64, 1.0) as f32;
            f * r
        }
    }
}

/// Relaxes `sim` (built from `scene`, at t = 0) as `scene.relax` says; see the module doc. Does
/// nothing when `relax.time` is 0. `progress` is called after every step.
pub fn relax(
    sim: &mut Sim,
    scene: &Scene,
    progress: &mut dyn FnMut(&RelaxProgress),
) -> Result<RelaxReport, SimError> {
    let p = &scene.relax;
    let target = scene.yarn.radius;
    if p.time <= 0.0 {
        return Ok(RelaxReport {
            steps: 0,
            time: 0.0,
            start_radius: target,
            radius: target,
            max_speed: sim.kinetic_energy_and_max_speed().1,
            settled: true,
        });
    }
    let h = sim.params.h as f64;
    let max_steps = (p.time / h).ceil().max(1.0) as u64;
    let r0 = start_radius(sim, scene);
    let grow_time = ((1.0 - (r0 / target) as f64) / p.grow_rate).min(0.5 * p.time);
    let grow_steps = (grow_time / h).ceil() as u64;
    let stages = if r0 < target && grow_steps > 0 {
        RADIUS_STAGES as u64
    } else {
        0
    };
    let radius_at = |stage: u64| {
        if stages == 0 {
            target
        } else {
            r0 + (target - r0) * (stage as f32 / stages as f32)
        }
    };
    let gravity = sim.params.gravity;
    let air = sim.air_factor();
    let model = |r: f32| {
        let mut sc = scene.clone();
        sc.yarn.radius = r;
        contact_model(&sc)
    };
    sim.set_gravity([0.0; 3]);
    sim.hold_obstacles(true);
    sim.set_air_factor((1.0 / (1.0 + h * p.drag as f64)) as f32);
    let mut stage = 0;
    sim.set_radius(radius_at(0), model(radius_at(0))?);
    let mut report = RelaxReport {
        steps: 0,
        time: 0.0,
        start_radius: r0,
        radius: target,
        max_speed: f64::NAN,
        settled: false,
    };
    let result = (|| {
        for k in 0..max_steps {
            let want = if stages == 0 {
                0
            } else {
                (k * stages / grow_steps).min(stages)
            };
            if want != stage {
                stage = want;
                sim.set_radius(radius_at(stage), model(radius_at(stage))?);
            }
            // Obstacles stay where they are at t = 0.
            sim.time = 0.0;
            sim.step()?;
            report.steps = k + 1;
            let grown = stage == stages;
            report.max_speed = if grown {
                sim.kinetic_energy_and_max_speed().1
            } else {
                f64::NAN
            };
            progress(&RelaxProgress {
                step: k + 1,
                max_steps,
                radius: radius_at(stage),
                max_speed: report.max_speed,
            });
            if grown && report.max_speed < p.speed as f64 {
                report.settled = true;
                break;
            }
        }
        Ok::<(), SimError>(())
    })();
    // The scene's gravity, drag and radius, a fresh contact model, and t = 0 at rest.
    sim.set_gravity(gravity);
    sim.set_air_factor(air);
    sim.hold_obstacles(false);
    sim.set_radius(target, model(target)?);
    result?;
    report.time = report.steps as f64 * h;
    for v in sim.vel.iter_mut() {
        *v = [0.0; 4];
    }
    sim.time = 0.0;
    sim.steps = 0;
    sim.place_obstacles();
    Ok(report)
}
