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
//!
//! [`relax_resumable`] is [`relax`] with checkpoints: it hands the state to a writer where a
//! relaxation resumed from it is bitwise the uninterrupted one (where a radius stage begins, since
//! the stage builds its contact model afresh, and every so many steps once the radius is grown,
//! when the model is the scene's own, whose state a checkpoint carries), with the scene's
//! parameters in place of the relaxation's, and goes on from such a checkpoint ([`RelaxPoint`]:
//! the steps taken and the start radius, which an automatic start radius measured on half-relaxed
//! curves would not give again). Asked to stop ([`Saves::stop`]: a signal, in `yarnsim run`), it
//! hands over the state at the next such point and returns [`RelaxError::Stopped`].
//!
//! [`relax_gpu`] runs the same steps on the GPU step ([`GpuSim`], a new one per radius stage, each
//! built from the state the last one gave back, with the capacities, length budget and batch
//! length the last one grew or cut to, and no per-kernel timing): the relaxation of a garment is thousands of steps
//! (the scarf: 8,101 steps, about 10 minutes on two CPU cores), which is where a run with
//! `--backend gpu` spent most of its time. It differs from [`relax`] in one way: the host sees the
//! fastest point once per batch (it downloads the velocities then), so once the radius is grown
//! the batches are [`GPU_CHECK_STEPS`] steps long and the relaxation stops at the end of the first
//! that ends at rest, up to `GPU_CHECK_STEPS − 1` steps after the CPU path would have.
//! [`relax_gpu_resumable`] is [`relax_gpu`] with the checkpoints of [`relax_resumable`], at the same
//! steps; within the grown stage they carry the GPU step's contact state
//! ([`GpuSim::export_contact_state`]), which a resumed relaxation's step takes up.

use std::sync::atomic::{AtomicBool, Ordering};

use crate::checkpoint::{StateReader, StateWriter};
use crate::gpu::Gpu;
use crate::gpu_step::{GpuSim, GpuStepError, Learned, MAX_BATCH};
use crate::scene::{RadiusSpec, Scene};
use crate::sim::{contact_model, Sim, SimError};

/// Why a relaxation stopped.
#[derive(Debug, thiserror::Error)]
pub enum RelaxError {
    #[error(transparent)]
    Sim(#[from] SimError),
    #[error(transparent)]
    Gpu(#[from] GpuStepError),
    /// The caller's checkpoint writer failed ([`relax_resumable`]).
    #[error("saving the relaxation after {steps} steps")]
    Checkpoint {
        steps: u64,
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },
    /// Asked to stop ([`Saves::stop`]): the state before step `steps` was offered for a
    /// checkpoint, from which the relaxation resumes.
    #[error("the relaxation was stopped before its step {steps}, where it was saved")]
    Stopped { steps: u64 },
    /// A relaxation was to resume at a step where no checkpoint is taken.
    #[error("a relaxation cannot resume before step {steps}: its checkpoints are taken where a radius stage begins or once the radius is grown (from step {grown} on), before its last step")]
    NoResumePoint { steps: u64, grown: u64 },
}

/// Steps per batch of [`relax_gpu`] once the radius is grown (before: [`MAX_BATCH`]): each batch
/// ends with a wait for the GPU and a download of the velocities, a small part of 8 steps' time.
pub const GPU_CHECK_STEPS: u64 = 8;

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
    /// On the GPU step ([`relax_gpu`]): what its last stage learned, where the frames' step
    /// starts ([`GpuSim::start_from`]).
    #[serde(skip)]
    pub gpu: Option<Learned>,
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
            let nearest =
                crate::import::fit_radius(&sim.topo.curves(&sim.pos), scene.contact.quadrature)
                    .ok()
                    .and_then(|fit| fit.distances.first().copied())
                    .unwrap_or(f64::INFINITY);
            // 2% below the closest approach, so that the closest pair starts just out of contact.
            let f = (0.49 * nearest / r as f64).clamp(MIN_START as f64, 1.0) as f32;
            f * r
        }
    }
}

/// The steps of a relaxation: how many at most, and the radius of each.
struct Schedule {
    max_steps: u64,
    start: f32,
    target: f32,
    /// Radius stages after the first (0: the radius starts at its target).
    stages: u64,
    /// Steps over which the radius grows.
    grow_steps: u64,
}

impl Schedule {
    fn new(sim: &Sim, scene: &Scene) -> Schedule {
        Self::with_start(sim, scene, start_radius(sim, scene))
    }

    /// The schedule from start radius `start` (a resumed relaxation's, which an automatic start
    /// radius measured on the half-relaxed curves would not reproduce).
    fn with_start(sim: &Sim, scene: &Scene, start: f32) -> Schedule {
        let p = &scene.relax;
        let target = scene.yarn.radius;
        let h = sim.params.h as f64;
        let grow_time = ((1.0 - (start / target) as f64) / p.grow_rate).min(0.5 * p.time);
        let grow_steps = (grow_time / h).ceil() as u64;
        let stages = if start < target && grow_steps > 0 {
            RADIUS_STAGES as u64
        } else {
            0
        };
        Schedule {
            max_steps: (p.time / h).ceil().max(1.0) as u64,
            start,
            target,
            stages,
            grow_steps,
        }
    }

    fn radius_at(&self, stage: u64) -> f32 {
        if self.stages == 0 {
            self.target
        } else {
            self.start + (self.target - self.start) * (stage as f32 / self.stages as f32)
        }
    }

    /// The stage step `k` (from 0) runs in.
    fn stage_of(&self, k: u64) -> u64 {
        if self.stages == 0 {
            0
        } else {
            (k * self.stages / self.grow_steps).min(self.stages)
        }
    }

    /// The report before the first step.
    fn empty_report(&self) -> RelaxReport {
        RelaxReport {
            steps: 0,
            time: 0.0,
            start_radius: self.start,
            radius: self.target,
            max_speed: f64::NAN,
            settled: false,
            gpu: None,
        }
    }

    /// The first step of stage `s` (`s ≤ stages`).
    fn stage_start(&self, s: u64) -> u64 {
        if s == 0 {
            0
        } else {
            (s * self.grow_steps).div_ceil(self.stages)
        }
    }
}

/// The report of a relaxation that is off (`relax.time` = 0).
fn not_relaxed(sim: &Sim, scene: &Scene) -> RelaxReport {
    RelaxReport {
        steps: 0,
        time: 0.0,
        start_radius: scene.yarn.radius,
        radius: scene.yarn.radius,
        max_speed: sim.kinetic_energy_and_max_speed().1,
        settled: true,
        gpu: None,
    }
}

/// The contact model of `scene` at radius `r`.
fn model_at(scene: &Scene, r: f32) -> Result<Box<dyn crate::contact::ContactForce>, SimError> {
    let mut sc = scene.clone();
    sc.yarn.radius = r;
    contact_model(&sc)
}

/// Gravity off, obstacles held, the relaxation's drag; returns the scene's gravity and drag.
fn begin(sim: &mut Sim, scene: &Scene) -> ([f32; 3], f32) {
    let saved = (sim.params.gravity, sim.air_factor());
    let h = sim.params.h as f64;
    sim.set_gravity([0.0; 3]);
    sim.hold_obstacles(Some(0.0));
    sim.set_air_factor((1.0 / (1.0 + h * scene.relax.drag as f64)) as f32);
    saved
}

/// The scene's gravity, drag and radius, a fresh contact model, and t = 0 at rest.
fn finish(sim: &mut Sim, scene: &Scene, saved: ([f32; 3], f32)) -> Result<(), SimError> {
    sim.set_gravity(saved.0);
    sim.set_air_factor(saved.1);
    sim.hold_obstacles(None);
    sim.set_radius(scene.yarn.radius, model_at(scene, scene.yarn.radius)?);
    for v in sim.vel.iter_mut() {
        *v = [0.0; 4];
    }
    sim.time = 0.0;
    sim.steps = 0;
    sim.place_obstacles();
    Ok(())
}

/// Relaxes `sim` (built from `scene`, at t = 0) as `scene.relax` says; see the module doc. Does
/// nothing when `relax.time` is 0. `progress` is called after every step.
pub fn relax(
    sim: &mut Sim,
    scene: &Scene,
    progress: &mut dyn FnMut(&RelaxProgress),
) -> Result<RelaxReport, SimError> {
    match relax_resumable(sim, scene, None, Saves::default(), progress, &mut |_, _| {
        Ok(())
    }) {
        Ok(report) => Ok(report),
        Err(RelaxError::Sim(e)) => Err(e),
        Err(e) => unreachable!("a relaxation from its start without checkpoints: {e}"),
    }
}

/// Where a relaxation stands before one of its steps, as a checkpoint records it: the steps taken
/// and the start radius (its bits: the schedule's radii follow from it exactly).
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct RelaxPoint {
    pub steps: u64,
    pub start_radius_bits: u32,
}

/// The writer of a relaxation's checkpoints ([`relax_resumable`]): the simulation between two
/// steps (with the scene's parameters) and where the relaxation stands.
pub type SaveRelaxation<'a> =
    dyn FnMut(&Sim, RelaxPoint) -> Result<(), Box<dyn std::error::Error + Send + Sync>> + 'a;

/// Whether a relaxation resumed before step `next` is bitwise the uninterrupted one: where a
/// radius stage begins (its contact model is built afresh anyway), or once the radius is grown
/// (the model is the scene's own, whose state a checkpoint carries).
fn resume_point(sch: &Schedule, next: u64) -> bool {
    if next == 0 || next >= sch.max_steps {
        return next == 0;
    }
    let (before, at) = (sch.stage_of(next - 1), sch.stage_of(next));
    at != before || before == sch.stages
}

/// Where a resumable relaxation offers its state for a checkpoint ([`relax_resumable`],
/// [`relax_gpu_resumable`]).
#[derive(Clone, Copy, Debug, Default)]
pub struct Saves<'a> {
    /// Where a radius stage begins and every `every`-th step once the radius is grown (0: on no
    /// schedule).
    pub every: u64,
    /// Once this is set (by a signal: [`crate::interrupt::stop_flag`]), the relaxation offers its
    /// state at the next step a resume can start from, whatever `every` says, and then stops
    /// with [`RelaxError::Stopped`]. Within the grown stage that is the next step (on the GPU
    /// step, the end of the batch); before it, where the next radius stage begins.
    pub stop: Option<&'a AtomicBool>,
}

impl Saves<'_> {
    /// Saves every `every`-th step (see [`Saves::every`]), with no stop flag.
    pub fn every(every: u64) -> Saves<'static> {
        Saves { every, stop: None }
    }

    fn stopping(&self) -> bool {
        self.stop.is_some_and(|s| s.load(Ordering::SeqCst))
    }

    /// Whether the state before step `next` is offered for a checkpoint: a resume point where a
    /// stage begins or on the `every` schedule once the radius is grown, or any resume point
    /// once asked to stop.
    fn before(&self, sch: &Schedule, next: u64) -> bool {
        if next == 0 || !resume_point(sch, next) {
            return false;
        }
        self.stopping()
            || (self.every > 0
                && (sch.stage_of(next) != sch.stage_of(next - 1)
                    || next.is_multiple_of(self.every)))
    }
}

/// [`relax`] from its start (`from` = None), or from a checkpoint of it (the simulation restored
/// from that checkpoint, `from` what it recorded), offering the state to `checkpoint` where a
/// resume can start, as `saves` asks ([`Saves`]; asked to stop, it returns
/// [`RelaxError::Stopped`] after the checkpoint). The simulation handed to `checkpoint` is
/// mid-relaxation (gravity off, obstacles held, the relaxation's drag and radius); a resume
/// applies those again from the scene.
pub fn relax_resumable(
    sim: &mut Sim,
    scene: &Scene,
    from: Option<RelaxPoint>,
    saves: Saves<'_>,
    progress: &mut dyn FnMut(&RelaxProgress),
    checkpoint: &mut SaveRelaxation<'_>,
) -> Result<RelaxReport, RelaxError> {
    let p = &scene.relax;
    if p.time <= 0.0 {
        return Ok(not_relaxed(sim, scene));
    }
    let sch = match from {
        None => Schedule::new(sim, scene),
        Some(f) => Schedule::with_start(sim, scene, f32::from_bits(f.start_radius_bits)),
    };
    let start = from.map_or(0, |f| f.steps);
    if !resume_point(&sch, start) {
        return Err(RelaxError::NoResumePoint {
            steps: start,
            grown: sch.stage_start(sch.stages),
        });
    }
    let saved = begin(sim, scene);
    // The stage of the last step taken: a resume at a stage's first step builds its model as the
    // uninterrupted run did; within the grown stage the restored model is the scene's own.
    let mut stage = if start == 0 {
        sim.set_radius(sch.radius_at(0), model_at(scene, sch.radius_at(0))?);
        0
    } else {
        sch.stage_of(start - 1)
    };
    let mut report = sch.empty_report();
    report.steps = start;
    let result = (|| {
        for k in start..sch.max_steps {
            let want = sch.stage_of(k);
            if want != stage {
                stage = want;
                let r = sch.radius_at(stage);
                sim.set_radius(r, model_at(scene, r)?);
            }
            // Obstacles stay where they are at t = 0.
            sim.time = 0.0;
            sim.step()?;
            report.steps = k + 1;
            let grown = stage == sch.stages;
            report.max_speed = if grown {
                sim.kinetic_energy_and_max_speed().1
            } else {
                f64::NAN
            };
            progress(&RelaxProgress {
                step: k + 1,
                max_steps: sch.max_steps,
                radius: sch.radius_at(stage),
                max_speed: report.max_speed,
            });
            if grown && report.max_speed < p.speed as f64 {
                report.settled = true;
                break;
            }
            if saves.before(&sch, k + 1) {
                let point = RelaxPoint {
                    steps: k + 1,
                    start_radius_bits: sch.start.to_bits(),
                };
                let written =
                    with_scene_parameters(sim, scene, saved, |sim| checkpoint(sim, point));
                written.map_err(|source| RelaxError::Checkpoint {
                    steps: k + 1,
                    source,
                })?;
                if saves.stopping() {
                    return Err(RelaxError::Stopped { steps: k + 1 });
                }
            }
        }
        Ok::<(), RelaxError>(())
    })();
    finish(sim, scene, saved)?;
    result?;
    report.time = report.steps as f64 * sim.params.h as f64;
    Ok(report)
}

/// [`relax`] on the GPU step (see the module doc): takes the simulation and gives it back
/// relaxed, or an error (then the simulation is gone with the GPU state it was in).
pub fn relax_gpu(
    sim: Sim,
    scene: &Scene,
    gpu: &Gpu,
    progress: &mut dyn FnMut(&RelaxProgress),
) -> Result<(Sim, RelaxReport), RelaxError> {
    relax_gpu_resumable(
        sim,
        scene,
        gpu,
        None,
        Saves::default(),
        progress,
        &mut |_, _, _| Ok(()),
    )
}

/// The writer of a GPU relaxation's checkpoints ([`relax_gpu_resumable`]): as
/// [`SaveRelaxation`]'s, and the GPU step's contact state (sections for the checkpoint, empty where
/// a radius stage begins: that stage builds its model afresh).
pub type SaveRelaxationGpu<'a> = dyn FnMut(&Sim, RelaxPoint, &StateWriter) -> Result<(), Box<dyn std::error::Error + Send + Sync>>
    + 'a;

/// Calls `write` with the simulation holding the scene's gravity, drag and radius parameter in
/// place of the relaxation's (a simulation restored from a checkpoint is built from the scene, and
/// its fingerprint must match), and puts the relaxation's back bit for bit after it.
fn with_scene_parameters<T>(
    sim: &mut Sim,
    scene: &Scene,
    saved: ([f32; 3], f32),
    write: impl FnOnce(&Sim) -> T,
) -> T {
    let relaxing = (sim.params.gravity, sim.air_factor(), sim.params.radius);
    sim.set_gravity(saved.0);
    sim.set_air_factor(saved.1);
    sim.set_radius_parameter(scene.yarn.radius);
    let written = write(sim);
    sim.set_gravity(relaxing.0);
    sim.set_air_factor(relaxing.1);
    sim.set_radius_parameter(relaxing.2);
    written
}

/// [`relax_gpu`] from its start (`from` = None), or from a checkpoint of it (the simulation
/// restored from that checkpoint; `from` what it recorded and its sections, whose GPU contact
/// state the step takes up within the grown stage: [`GpuSim::import_contact_state`]; with no
/// sections, the checkpoint of a CPU relaxation, the step builds its model afresh), offering
/// the state to `checkpoint` where [`relax_resumable`] does ([`Saves`]: where a radius stage
/// begins, every `every`-th step once the radius is grown, and where a stop was asked for, at
/// the end of the batch within the grown stage), with the GPU's contact state. A batch ends where a checkpoint is due, and once the radius is grown the fastest point
/// is checked every [`GPU_CHECK_STEPS`] steps from the stage's start whatever the checkpoints, so
/// a relaxation resumed from one ends bitwise where the uninterrupted one does.
pub fn relax_gpu_resumable(
    mut sim: Sim,
    scene: &Scene,
    gpu: &Gpu,
    from: Option<(RelaxPoint, Option<&StateReader>)>,
    saves: Saves<'_>,
    progress: &mut dyn FnMut(&RelaxProgress),
    checkpoint: &mut SaveRelaxationGpu<'_>,
) -> Result<(Sim, RelaxReport), RelaxError> {
    let p = &scene.relax;
    if p.time <= 0.0 {
        let report = not_relaxed(&sim, scene);
        return Ok((sim, report));
    }
    let sch = match from {
        None => Schedule::new(&sim, scene),
        Some((f, _)) => Schedule::with_start(&sim, scene, f32::from_bits(f.start_radius_bits)),
    };
    let start = from.map_or(0, |f| f.0.steps);
    if !resume_point(&sch, start) {
        return Err(RelaxError::NoResumePoint {
            steps: start,
            grown: sch.stage_start(sch.stages),
        });
    }
    let saved = begin(&mut sim, scene);
    let mut report = sch.empty_report();
    let mut k = start;
    let mut stage = sch.stage_of(k);
    // What the last stage learned: the next, at a larger radius, needs contact buffers as large,
    // and starting there spares it the reruns that found them (and the length budget and batch
    // length). No stage times its kernels.
    let mut learned: Option<Learned> = None;
    let point = |steps: u64| RelaxPoint {
        steps,
        start_radius_bits: sch.start.to_bits(),
    };
    let saving = |steps| move |source| RelaxError::Checkpoint { steps, source };
    loop {
        let r = sch.radius_at(stage);
        sim.set_radius(r, model_at(scene, r)?);
        if k > start && saves.before(&sch, k) {
            // Where a stage begins: its model is built afresh, so no contact state.
            let none = StateWriter::new();
            with_scene_parameters(&mut sim, scene, saved, |sim| {
                checkpoint(sim, point(k), &none)
            })
            .map_err(saving(k))?;
            if saves.stopping() {
                return Err(RelaxError::Stopped { steps: k });
            }
        }
        let mut gs = GpuSim::new(gpu, sim, &scene.contact)?;
        gs.set_kernel_timing(false)?;
        if let Some(l) = &learned {
            gs.start_from(l)?;
        }
        // Resumed within a stage (the grown one): its model goes on from the checkpoint (built
        // afresh where the checkpoint holds no GPU contact state: another path's).
        if let (Some((_, Some(state))), true) = (from, k == start && k > sch.stage_start(stage)) {
            gs.import_contact_state(state)?;
        }
        let grown = stage == sch.stages;
        let end = if grown {
            sch.max_steps
        } else {
            sch.stage_start(stage + 1).min(sch.max_steps)
        };
        let stage_start = sch.stage_start(stage);
        while k < end {
            let mut n = (end - k).min(if grown {
                GPU_CHECK_STEPS - (k - stage_start) % GPU_CHECK_STEPS
            } else {
                MAX_BATCH as u64
            });
            if grown && saves.every > 0 {
                n = n.min(saves.every - k % saves.every);
            }
            gs.advance(n as usize, &mut |_| {})?;
            let check =
                grown && ((k + n - stage_start).is_multiple_of(GPU_CHECK_STEPS) || k + n == end);
            if check {
                gs.download()?;
                report.max_speed = gs.sim.kinetic_energy_and_max_speed().1;
            }
            for j in 1..=n {
                progress(&RelaxProgress {
                    step: k + j,
                    max_steps: sch.max_steps,
                    radius: r,
                    max_speed: report.max_speed,
                });
            }
            k += n;
            if check && report.max_speed < p.speed as f64 {
                report.settled = true;
                break;
            }
            if grown && k < end && saves.before(&sch, k) {
                gs.sync_host()?;
                let state = gs.export_contact_state()?;
                with_scene_parameters(&mut gs.sim, scene, saved, |sim| {
                    checkpoint(sim, point(k), &state)
                })
                .map_err(saving(k))?;
                if saves.stopping() {
                    return Err(RelaxError::Stopped { steps: k });
                }
            }
        }
        learned = Some(gs.learned());
        sim = gs.into_sim()?;
        if grown || k >= sch.max_steps {
            break;
        }
        stage = sch.stage_of(k);
    }
    report.steps = k;
    report.time = k as f64 * sim.params.h as f64;
    report.gpu = learned;
    finish(&mut sim, scene, saved)?;
    Ok((sim, report))
}
