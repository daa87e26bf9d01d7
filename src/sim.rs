//! The simulation driver: owns the flat state arrays and runs the time step of DESIGN §6 (seed
//! Figure 4) on the CPU path.
//!
//! One step: `rod_forces` (gravity + rod) → the contact model ([`ContactForce`]) → `integrate_velocity`
//! → `glue_projection` → `length_projection` → `nonrigid_damping` → `object_contact` →
//! `integrate_position` → `material_frames` → `plasticity`. Obstacles are placed for the step first
//! (keyframes, walking figures: [`crate::figure`]). Scenes with ties (a sack's seam, `[[seam]]`s,
//! [`crate::ties`]) run `tie_projection` between the glue and length projections; scenes with free
//! balls ([`crate::balls`]) run `ball_velocity` after `integrate_velocity`; `ball_hit_count`, the
//! scan of the hit offsets, `ball_yarn_contact`, `ball_impulse_sum` and `ball_contact` after
//! `object_contact` ([`crate::balls::yarn_ball_contacts`]); and `ball_position` after
//! `integrate_position`. All buffers are allocated when the [`Sim`] is built; the step loop
//! allocates nothing, except the balls' scratch lists when they grow past their room. Every
//! stage's output is independent of the thread count.
//! `nonrigid_damping` damps one block partition (phase) per step, in turn: a built scene has two, the
//! second shifted by half a block ([`crate::scene::build_curves`], [`crate::step`]).
//!
//! A non-finite force or velocity is a [`SimError::NotFinite`] naming the step and the control point;
//! it is detected before the positions are updated, so `pos` still holds the last good configuration.
//! A non-finite position (only a state set from outside can hold one) is named so before the step's
//! first stage ([`Sim::check_positions`]), with every contact model.
//!
//! Yarns passing through each other are caught once per frame, outside the step: at the end of every
//! frame [`Sim::check_pass_through`] looks at the contact model's touching quadrature pairs and stops
//! the run with a [`SimError::PassThrough`] when a pair is closer than `r/2` (the penalty lost) or
//! has moved to the other side of its partner since the previous frame. The frame is not counted;
//! the one before it is the last good one. With `contact.model = none` nothing is checked.
//!
//! The stages are rayon parallel loops, a few dozen per step. Stepping from a thread outside the pool
//! wakes the pool and waits for it at each of them; stepping on a worker (`ThreadPool::install`, as
//! `yarnsim run` and the benchmarks do) avoids that: 7% of a step of a 2,000-loop swatch, a third of
//! one of the 144-loop default swatch.

use std::time::Instant;

use serde::ser::{Serialize, SerializeMap, Serializer};

// The contact-model interface lives in the contact module; re-exported here for the driver's users.
use crate::balls::{self, BallScratch, BallState};
pub use crate::contact::{ContactError, ContactForce, ContactStats, NoContact};
use crate::figure::{Part, PARTS};
use crate::layout::{Counters, Params, ERROR_NAN_BALL, ERROR_NAN_FORCE};
use crate::math::V3;
use crate::rod::{self, RodError, RodParams, RodState};
use crate::scene::{Keyframe, Obstacle, Scene};
use crate::state::{Curve, Topology, TopologyError};
use crate::step::{self, LengthScratch, ObstacleShape};

/// Per-segment values a contact model can colour the yarn with ([`Sim::segment_values`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SegmentValue {
    /// Contact-model rebuilds touching the segment during the last frame.
    Rebuilds,
    /// Touching quadrature pairs the segment takes part in, at the current positions.
    Contacts,
}

/// The contact model a scene asks for (`contact.model`), built from the scene's yarn radius and
/// contact parameters ([`crate::contact::contact_model`]).
pub fn contact_model(scene: &Scene) -> Result<Box<dyn ContactForce>, SimError> {
    crate::contact::contact_model(scene.yarn.radius, &scene.contact).map_err(|e| {
        SimError::ContactSetup {
            model: e.model,
            source: e.source,
        }
    })
}

/// Why a simulation cannot be built or cannot go on.
#[derive(Debug, thiserror::Error)]
pub enum SimError {
    #[error(transparent)]
    Topology(#[from] TopologyError),
    #[error(transparent)]
    Rod(#[from] RodError),
    #[error("{key} = {value}: {message}")]
    Parameter {
        key: &'static str,
        value: String,
        message: &'static str,
    },
    #[error("cannot set up the {model} contact model")]
    ContactSetup {
        model: &'static str,
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },
    #[error("pinned control point {point} does not exist (the scene has {count} control points)")]
    PinOutOfRange { point: u32, count: usize },
    #[error("yarn {yarn}, control point {local} lies {distance:e} cm from the scene's origin, where f32 coordinates are {spacing:e} cm apart ({} yarn radii, r = {radius} cm): the yarn's shape cannot be held there; bring the cloth within {within:e} cm of the origin (cloth.N.translate, or the BCC file's units)", ratio_text(spacing / radius))]
    TooFar {
        yarn: usize,
        local: usize,
        distance: f32,
        spacing: f32,
        radius: f32,
        within: f32,
    },
    #[error("{solid} reaches {} cm from where the cloth is simulated, where f32 coordinates are {} cm apart ({} yarn radii, r = {radius} cm): contact with it would be computed that coarsely; keep the scene's solids within {within:e} cm of the cloth (a plane for a ground, not a sphere of {reach:.0e} cm)", as_f32_if_held(*reach), as_f32_if_held(*spacing), ratio_text((spacing / *radius as f64) as f32))]
    ObstacleTooFar {
        /// The solid in words (`obstacle.0 (a sphere)`, `figure.0's head`).
        solid: String,
        /// (In f64: a solid's reach past f32's range, a sphere at 1e30 cm, overflowed to inf.)
        reach: f64,
        spacing: f64,
        radius: f32,
        within: f32,
    },
    #[error("{ball} starts inside {solid}: its centre is {}, nearer than its radius ({radius} cm), so the ball sinks {depth:.3} cm into it; move it ({ball}.center), as the first step would throw it out", if *distance < 0.0 { format!("{:.3} cm inside it", -distance) } else { format!("{distance:.3} cm from its surface") })]
    BallStartsInside {
        ball: String,
        solid: String,
        distance: f32,
        depth: f32,
        radius: f32,
    },
    #[error("damping blocks are given for {given} control points, but the scene has {count}")]
    DampingBlocks { given: usize, count: usize },
    #[error("step {step}: the {what} of control point {point} (yarn {yarn}, point {local} of it) is not finite; try a smaller simulation.dt or check the scene's stiffnesses")]
    NotFinite {
        step: u64,
        what: &'static str,
        point: usize,
        yarn: usize,
        local: usize,
    },
    #[error("the cloth starts inside {solid}: {inside} of its {points} control points have their yarn's axis inside it, the deepest (control point {point}: yarn {yarn}, point {local} of it) {depth:.3} cm deep; move the cloth (cloth.N.translate) or {key}, as the step would throw them out of it")]
    StartsInside {
        /// The solid in words (`obstacle.0 (a plane)`, `figure.0's left forearm`, `ball.1`).
        solid: String,
        /// The scene key to move it by.
        key: String,
        inside: usize,
        points: usize,
        point: usize,
        yarn: usize,
        local: usize,
        depth: f32,
    },
    #[error("the cloth starts with two yarns on top of each other: control point {a} (yarn {yarn_a}, point {local_a} of it{piece_a}) and control point {b} (yarn {yarn_b}, point {local_b} of it{piece_b}) are {distance:.1e} cm apart, where contact needs them 2 yarn radii apart; is a [[cloth]] piece given twice in one place (give one a translate)?")]
    Coincident {
        a: usize,
        yarn_a: usize,
        local_a: usize,
        /// `, cloth.N`, where the pieces are known.
        piece_a: String,
        b: usize,
        yarn_b: usize,
        local_b: usize,
        piece_b: String,
        distance: f32,
    },
    #[error(transparent)]
    Ties(#[from] crate::ties::TieError),
    #[error("step {step}: the velocity of ball {ball} is not finite; try a smaller simulation.dt or check the balls' masses")]
    BallNotFinite { step: u64, ball: usize },
    #[error("step {step}: the length constraints of yarn {yarn} did not converge in {iterations} Fast Projection iterations (largest relative error {error:.3e} on the yarn, first beyond the tolerance between its control points {} and {}); the time step is probably too large: try a smaller simulation.dt", points[0], points[1])]
    LengthProjection {
        step: u64,
        yarn: usize,
        /// The yarn's control points at the ends of its first edge not within the tolerance.
        points: [u32; 2],
        iterations: u32,
        error: f32,
    },
    #[error("step {step}: contact model failed")]
    Contact {
        step: u64,
        #[source]
        source: ContactError,
    },
    /// The end-of-frame pass-through check ([`Sim::check_pass_through`]) found two parts of the
    /// yarns inside each other. The state is that of the end of the failed frame; the frame before
    /// it is the last good one.
    #[error("frame {frame} (steps {first_step} to {step}): {place}; frame {} is the last good one. \
             Try a smaller simulation.dt (now {dt:.4e} s) or a larger contact.stiffness (now {stiffness})",
             frame.saturating_sub(1))]
    PassThrough {
        /// The frame that failed (1-based, as in the frame records).
        frame: u32,
        /// Index of the frame's first step (0-based, as in [`SimError::NotFinite`]).
        first_step: u64,
        /// Index of its last step: the check ran on the state after it.
        step: u64,
        /// Where the yarns are inside each other.
        place: Box<PassThroughPlace>,
        /// The time step h in use (s).
        dt: f32,
        /// `contact.stiffness`.
        stiffness: f32,
    },
}

/// How the pass-through check saw two yarn parts inside each other.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum PassThroughKind {
    /// A touching quadrature pair closer than [`PASS_THROUGH_DEPTH`]` · r`.
    Deep,
    /// A quadrature pair that touched at the previous check, on one side of each other, and now
    /// lies on the other side (see [`Sim::check_pass_through`]); `previous_distance` is its
    /// distance then (cm).
    Crossed { previous_distance: f32 },
}

/// The place of a pass-through: the two quadrature points, their yarns, segments and positions.
#[derive(Clone, Debug, PartialEq)]
pub struct PassThroughPlace {
    pub kind: PassThroughKind,
    /// Global quadrature indices `segment · b + k` (the indices of [`Sim::contact_pairs`]).
    pub quadrature: [u32; 2],
    /// The yarn of each point (0-based, in scene order).
    pub yarns: [usize; 2],
    /// The control points (indices within the yarn) between which each point lies: its segment
    /// runs from the first to the second.
    pub points: [[usize; 2]; 2],
    /// The global indices of those control points.
    pub global_points: [[usize; 2]; 2],
    /// Positions (cm) of the two quadrature points.
    pub positions: [[f32; 3]; 2],
    /// Their distance (cm).
    pub distance: f32,
    /// The yarn radius r (cm).
    pub radius: f32,
}

impl std::fmt::Display for PassThroughPlace {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let part = |i: usize| {
            let p = self.positions[i];
            format!(
                "yarn {} between its control points {} and {} (quadrature point {} at ({:.4}, {:.4}, {:.4}) cm)",
                self.yarns[i], self.points[i][0], self.points[i][1], self.quadrature[i], p[0], p[1], p[2]
            )
        };
        write!(
            f,
            "yarns passed through each other: {} and {} ",
            part(0),
            part(1)
        )?;
        match self.kind {
            PassThroughKind::Deep => write!(
                f,
                "are {:.4} cm apart, less than {PASS_THROUGH_DEPTH} r = {:.4} cm (contact starts at 2r = {:.4} cm): the contact penalty lost",
                self.distance,
                PASS_THROUGH_DEPTH * self.radius,
                2.0 * self.radius
            ),
            PassThroughKind::Crossed { previous_distance } => write!(
                f,
                "touched at the previous frame ({previous_distance:.4} cm apart) and now lie on opposite sides of each other ({:.4} cm apart)",
                self.distance
            ),
        }
    }
}

/// A contact of a yarn with itself that `contact.exclusion_arc` hides ([`Sim::hidden_self_contact`]).
#[derive(Clone, Debug, PartialEq)]
pub struct HiddenSelfContact {
    /// The yarn (0-based, in scene order).
    pub yarn: usize,
    /// Where its two parts are along it (cm from its start).
    pub at: [f64; 2],
    /// How far apart they are along it (the shorter way round a closed yarn) and in space (cm).
    pub arc: f64,
    pub distance: f64,
    pub exclusion_arc: f32,
    pub radius: f32,
}

impl std::fmt::Display for HiddenSelfContact {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let r = self.radius as f64;
        write!(
            f,
            "contact.exclusion_arc = {} cm hides contacts of a yarn with itself: yarn {} touches itself at {:.3} and {:.3} cm along it ({} cm apart, closer than 2r = {} cm), {} cm apart along it, within the exclusion arc, so there is no contact there and its loops may pass through each other; set contact.exclusion_arc below {} cm (and at least πr = {} cm)",
            self.exclusion_arc,
            self.yarn,
            self.at[0],
            self.at[1],
            sig4(self.distance),
            sig4(2.0 * r),
            sig4(self.arc),
            sig4(self.arc),
            sig4(std::f64::consts::PI * r)
        )
    }
}

/// `v` to 4 significant digits in fixed notation (a length of a yarn as thin as 1e-4 cm showed
/// as `0.000` at 3 decimals).
fn sig4(v: f64) -> String {
    if v == 0.0 || !v.is_finite() {
        return format!("{v}");
    }
    let decimals = (3 - v.abs().log10().floor() as i32).clamp(0, 15) as usize;
    format!("{v:.decimals$}")
}

/// Step parameters, taken from the scene with the seed's defaults; public so tests and tools may tune
/// the solver knobs that are not scene fields.
#[derive(Clone, Debug)]
pub struct SimParams {
    /// Time step h (s).
    pub h: f32,
    /// Steps per output frame, `round(1 / (fps dt))`.
    pub steps_per_frame: u32,
    /// Frames per second of the output; a frame is exactly `steps_per_frame` steps and `1/fps` s.
    pub fps: f64,
    /// The scene's `simulation.dt`. `h` is `1 / (fps · steps_per_frame)`, which equals it unless
    /// `1/(fps dt)` is not a whole number (then `h` is the nearest step that makes it one, so frames
    /// land on their times instead of drifting; see [`SimParams::dt_adjusted`]).
    pub dt_requested: f64,
    pub gravity: [f32; 3],
    pub rod: RodParams,
    /// Yarn radius r (cm), the distance kept from obstacles.
    pub radius: f32,
    pub damping_const: f32,
    pub damping_prop: f32,
    /// Relative length error the Fast Projection iterates down to.
    pub length_tolerance: f32,
    /// Iteration cap of the Fast Projection; exceeding it is an error.
    pub length_max_iterations: u32,
    /// Red–black Newton sweeps of the quasi-static material frames per step.
    pub frame_sweeps: u32,
}

impl SimParams {
    /// `Some(h)` when the time step differs from the scene's `simulation.dt` (by more than f64
    /// rounding) because `1/(fps dt)` is not a whole number of steps.
    pub fn dt_adjusted(&self) -> Option<f64> {
        let h = 1.0 / (self.fps * self.steps_per_frame as f64);
        ((h - self.dt_requested).abs() > 1e-9 * self.dt_requested).then_some(h)
    }
}

/// One frame's record (`--stats` writes one JSON object per frame). The contact model's named values
/// are flattened in, each the mean over the frame's steps.
#[derive(Clone, Debug, Default)]
pub struct FrameStats {
    pub frame: u32,
    pub sim_time: f64,
    pub steps: u32,
    pub wall_ms: f64,
    pub kinetic_energy: f64,
    pub max_speed: f64,
    /// Largest relative edge-length error `|ℓ − ℓ̄| / ℓ̄` of the frame's final state, the one written
    /// out (damping and object contact change velocities after the length projection, so this is
    /// what the output really has).
    pub max_length_error: f64,
    /// Largest relative length error right after any length projection of the frame (what the
    /// projection reached; key `projection_error`).
    pub projection_error: f64,
    /// Largest Fast Projection iteration count of the frame.
    pub max_projection_iterations: u32,
    /// Milliseconds per phase over the frame (keys `phase_*_ms`): forces (gravity + rod), contact,
    /// constraints (glue + length), damping and objects, frames (material frames + plasticity).
    pub phase_ms: [(&'static str, f64); 5],
    pub contact: Vec<(&'static str, f64)>,
    /// Totals over the frame of the contact values named in [`FRAME_TOTALS`], written as
    /// `<name>_frame` (e.g. `rebuilds_frame`: contact-set rebuilds during this frame).
    pub contact_frame_totals: Vec<(&'static str, f64)>,
    /// Further keys of other backends (the GPU step's per-kernel times, dispatches and bytes read
    /// back per step), written as they are.
    pub extra: Vec<(String, f64)>,
}

/// Contact values that also make sense summed over a frame (the seed's "model updates per frame").
pub const FRAME_TOTALS: [(&str, &str); 1] = [("rebuilds", "rebuilds_frame")];

/// [`FrameStats::contact_frame_totals`] from a frame's sums of the contact values by name: those
/// [`FRAME_TOTALS`] names, under their totals' names.
pub fn frame_totals<'a>(
    sums: impl IntoIterator<Item = (&'a str, f64)>,
) -> Vec<(&'static str, f64)> {
    sums.into_iter()
        .filter_map(|(k, v)| {
            FRAME_TOTALS
                .iter()
                .find(|(name, _)| *name == k)
                .map(|&(_, total)| (total, v))
        })
        .collect()
}

impl Serialize for FrameStats {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut m = s.serialize_map(None)?;
        m.serialize_entry("frame", &self.frame)?;
        m.serialize_entry("sim_time", &self.sim_time)?;
        m.serialize_entry("steps", &self.steps)?;
        m.serialize_entry("wall_ms", &self.wall_ms)?;
        m.serialize_entry("kinetic_energy", &self.kinetic_energy)?;
        m.serialize_entry("max_speed", &self.max_speed)?;
        m.serialize_entry("max_length_error", &self.max_length_error)?;
        m.serialize_entry("projection_error", &self.projection_error)?;
        m.serialize_entry("max_projection_iterations", &self.max_projection_iterations)?;
        // A backend without these phases (the GPU step) leaves them unnamed.
        for (k, v) in self.phase_ms.iter().filter(|(k, _)| !k.is_empty()) {
            m.serialize_entry(k, v)?;
        }
        for (k, v) in &self.contact {
            m.serialize_entry(k, v)?;
        }
        for (k, v) in &self.contact_frame_totals {
            m.serialize_entry(k, v)?;
        }
        for (k, v) in &self.extra {
            m.serialize_entry(k, v)?;
        }
        m.end()
    }
}

/// Checkpoints ([`crate::checkpoint`]): the state later steps read, bit for bit.
impl Sim {
    /// A hash of what the simulation derives from its scene and cloth (masses, glue targets,
    /// damping blocks, bending elements, edges, step parameters): equal for equal builds.
    fn build_fingerprint(&self) -> u64 {
        let mut c = crate::checkpoint::Checksum::default();
        c.update(bytemuck::bytes_of(&self.base_params));
        c.update_pod(&self.mass);
        c.update_pod(&self.inv_mass);
        c.update_pod(&self.glue_points);
        c.update_pod(&self.glue_target);
        c.update_pod(&self.block_start);
        c.update_pod(&self.block_points);
        c.update_pod(&self.phase_start);
        c.update_pod(&self.rod.bends);
        c.update_pod(&self.topo.edges);
        c.update_pod(&self.topo.segments);
        c.update_pod(&self.topo.yarns);
        c.update_pod(&self.ties);
        c.update_pod(&self.tie_length);
        c.finish()
    }

    /// The sizes a checkpoint must agree on, with their names.
    fn state_shape(&self) -> [(&'static str, u64); 9] {
        [
            ("the number of control points", self.pos.len() as u64),
            ("the number of edges", self.topo.edges.len() as u64),
            (
                "the number of bending elements",
                self.rod.bends.len() as u64,
            ),
            ("the number of segments", self.topo.segments.len() as u64),
            ("the number of yarns", self.topo.yarns.len() as u64),
            ("the number of obstacles", self.obstacles.len() as u64),
            (
                "the number of damping phases",
                self.phase_start.len() as u64 - 1,
            ),
            ("the number of glued points", self.glue_points.len() as u64),
            ("the number of balls", self.balls.len() as u64),
        ]
    }

    /// Writes the state that later steps read into `out`: positions, velocities, edge frames and
    /// bending rest state, obstacles, time, step and frame counts (the damping phase is
    /// `steps mod phases`), the pass-through check's switches and crossings, and the contact model's
    /// state ([`ContactForce::export_state`]). Per-step scratch is not written.
    pub fn export_state(
        &self,
        out: &mut crate::checkpoint::StateWriter,
    ) -> Result<(), crate::checkpoint::CheckpointError> {
        let shape = self.state_shape().map(|(_, n)| n);
        out.put("sim.shape", &shape);
        out.put_value("sim.fingerprint", &self.build_fingerprint());
        out.put_value("sim.origin", &self.origin);
        out.put_points("sim.pos", &self.pos);
        out.put_points("sim.vel", &self.vel);
        out.put_value("sim.time", &self.time);
        out.put_value("sim.steps", &self.steps);
        out.put_value("sim.frames", &self.frames);
        out.put("rod.frames", &self.rod.frames);
        out.put("rod.rest", &self.rod.rest);
        out.put("sim.obstacles", &self.obstacles);
        out.put("sim.balls", &self.balls);
        out.put(
            "pass.flags",
            &[self.pass.off as u32, self.pass.recorded as u32],
        );
        let crossings: Vec<[u32; 7]> = self
            .pass
            .crossings
            .iter()
            .map(|c| {
                [
                    c.quad[0],
                    c.quad[1],
                    c.n.x.to_bits(),
                    c.n.y.to_bits(),
                    c.n.z.to_bits(),
                    c.side.to_bits(),
                    c.dist.to_bits(),
                ]
            })
            .collect();
        out.put("pass.crossings", &crossings);
        self.contact.export_state(out)
    }

    /// Restores what [`Sim::export_state`] wrote into a simulation built afresh from the same scene
    /// and cloth (checked: sizes and a fingerprint of the build must match). Afterwards the
    /// simulation steps exactly as the one that was saved. On error `self` must be discarded.
    pub fn import_state(
        &mut self,
        inp: &crate::checkpoint::StateReader,
    ) -> Result<(), crate::checkpoint::CheckpointError> {
        use crate::checkpoint::CheckpointError;
        let ours = self.state_shape();
        let theirs = inp.get_len::<u64>("sim.shape", ours.len())?;
        for (&(what, n), &m) in ours.iter().zip(&theirs) {
            if n != m {
                return Err(CheckpointError::Mismatch {
                    what,
                    checkpoint: m.to_string(),
                    sim: n.to_string(),
                });
            }
        }
        let fp = inp.get_value::<u64>("sim.fingerprint")?;
        if fp != self.build_fingerprint() {
            return Err(CheckpointError::Mismatch {
                what: "the cloth and parameters (a fingerprint of masses, rest lengths, pins, \
                       damping blocks and step parameters; did a BCC file the scene reads change?)",
                checkpoint: format!("{fp:016x}"),
                sim: format!("{:016x}", self.build_fingerprint()),
            });
        }
        // The saved positions are relative to the saved origin; the scene's cloth, rebuilt, gives
        // the same one (a cloth moved gives another fingerprint too, unless nothing is pinned).
        let origin = inp.get_value::<[f32; 3]>("sim.origin")?;
        if origin.map(f32::to_bits) != self.origin.map(f32::to_bits) {
            return Err(CheckpointError::Mismatch {
                what:
                    "the origin of the simulation's frame (the centre of the cloth as it starts, \
                       where the cloth is far from the scene's origin; did the scene's cloth move?)",
                checkpoint: format!("{origin:?}"),
                sim: format!("{:?}", self.origin),
            });
        }
        let n = self.pos.len();
        let pos = inp.get_points_len("sim.pos", n)?;
        let vel = inp.get_points_len("sim.vel", n)?;
        let time = inp.get_value::<f64>("sim.time")?;
        let steps = inp.get_value::<u64>("sim.steps")?;
        let frames = inp.get_value::<u32>("sim.frames")?;
        let rod_frames = inp.get_len("rod.frames", self.rod.frames.len())?;
        let rod_rest = inp.get_len("rod.rest", self.rod.rest.len())?;
        let obstacles = inp.get_len("sim.obstacles", self.obstacles.len())?;
        let balls = inp.get_len("sim.balls", self.balls.len())?;
        let [off, recorded] = inp.get_value::<[u32; 2]>("pass.flags")?.map(|f| f != 0);
        let crossings = inp
            .get::<[u32; 7]>("pass.crossings")?
            .into_iter()
            .map(|c| Crossing {
                quad: [c[0], c[1]],
                n: crate::math::V3 {
                    x: f32::from_bits(c[2]),
                    y: f32::from_bits(c[3]),
                    z: f32::from_bits(c[4]),
                },
                side: f32::from_bits(c[5]),
                dist: f32::from_bits(c[6]),
            })
            .collect();
        self.contact.import_state(&self.topo, n, inp)?;
        self.pos = pos;
        self.vel = vel;
        self.time = time;
        self.steps = steps;
        self.frames = frames;
        self.rod.frames = rod_frames;
        self.rod.rest = rod_rest;
        self.obstacles = obstacles;
        self.balls = balls;
        self.pass.off = off;
        self.pass.recorded = recorded;
        self.pass.crossings = crossings;
        // Checkpoints are written at the end of a frame, after its check: the state it saw.
        self.pass.prev_pos = self.pos.clone();
        Ok(())
    }
}

/// Keys of the phase timings in the frame record; prefixed so they never collide with a contact
/// model's own names.
pub const PHASES: [&str; 5] = [
    "phase_forces_ms",
    "phase_contact_ms",
    "phase_constraints_ms",
    "phase_damping_objects_ms",
    "phase_frames_ms",
];

/// A placed obstacle definition and how it moves.
#[derive(Clone, Debug)]
struct ObstacleDef {
    rest: ObstacleShape,
    keyframes: Vec<Keyframe>,
    /// A figure's part: (figure, part) of `Sim::figures`, placed by [`Figure::parts`].
    part: Option<(usize, usize)>,
}

/// The running simulation (CPU path).
pub struct Sim {
    /// The kernels' `params` block without this step's values (see [`Sim::step_params`]).
    base_params: Params,
    pub topo: Topology,
    /// Where the simulation's frame sits in the scene's (cm): every position it holds (control
    /// points, glue targets, obstacles, figures' parts, balls) is the scene's minus this. Zero
    /// unless the cloth starts far from the scene's origin ([`local_origin`]).
    origin: [f32; 3],
    /// Control points (xyz; w = 0), relative to [`Sim::origin`] (see [`Sim::world_pos`]).
    pub pos: Vec<[f32; 4]>,
    /// Velocities (xyz; w = 0).
    pub vel: Vec<[f32; 4]>,
    /// Simulated time (s).
    pub time: f64,
    /// Steps taken so far.
    pub steps: u64,
    /// Frames completed so far.
    pub frames: u32,
    pub params: SimParams,
    /// Lumped mass per control point: linear density × half the adjacent rest edge lengths.
    pub mass: Vec<f32>,
    /// `1 / mass`, and 0 for glued points.
    pub inv_mass: Vec<f32>,
    pub rod: RodState,
    /// Glued control points and the positions they are held at (their initial ones).
    pub glue_points: Vec<u32>,
    pub glue_target: Vec<[f32; 4]>,
    /// Damping blocks of every phase: points of block `b` are
    /// `block_points[block_start[b]..block_start[b + 1]]`.
    pub block_start: Vec<u32>,
    pub block_points: Vec<u32>,
    /// Damping phases: phase `p` is blocks `phase_start[p]..phase_start[p + 1]`; step `s` damps phase
    /// `s mod phases` only (seed §3.3, see [`crate::scene::build_curves`]).
    pub phase_start: Vec<u32>,
    /// Obstacles placed at the end of the current step.
    pub obstacles: Vec<ObstacleShape>,
    obstacle_defs: Vec<ObstacleDef>,
    /// The scene's walking figures, whose parts follow `obstacle_defs`' scene obstacles.
    figures: Vec<crate::figure::Figure>,
    /// The free rigid balls ([`crate::balls`]), at the end of the current step.
    pub balls: Vec<BallState>,
    ball_scratch: BallScratch,
    /// Tied pairs of control points and their lengths ([`crate::ties`]).
    ties: Vec<[u32; 2]>,
    tie_length: Vec<f32>,
    tie_color_start: Vec<u32>,
    force: Vec<[f32; 4]>,
    length: LengthScratch,
    contact: Box<dyn ContactForce>,
    step_stats: ContactStats,
    frame_contact: Vec<(&'static str, f64)>,
    last_length: step::LengthReport,
    frame_length_error: f32,
    frame_iterations: u32,
    phase: [f64; 5],
    /// Quadrature points per segment (`contact.quadrature`), to map contact pairs to segments.
    quadrature: u32,
    /// Per-segment contact-model rebuilds of the current frame, counted while `record_rebuilds` is on
    /// (empty otherwise).
    rebuild_counts: Vec<f32>,
    record_rebuilds: bool,
    /// Whether the contact model reported rebuilds at the last step.
    rebuilds_known: bool,
    /// The end-of-frame pass-through check's switch, scratch and last crossings.
    pass: PassCheck,
    /// The time at which the obstacles are held in place, if they are ([`Sim::hold_obstacles`]).
    obstacles_held: Option<f64>,
}

impl SimError {
    /// The yarn an error found while building a simulation is about (its curves' topology, its
    /// rod, its coordinates), to say where that yarn comes from ([`crate::scene::ClothBuild::yarn_source`]).
    pub fn build_yarn(&self) -> Option<usize> {
        match self {
            SimError::Topology(
                TopologyError::TooFewPoints { yarn, .. }
                | TopologyError::NotFinite { yarn, .. }
                | TopologyError::ZeroEdge { yarn, .. },
            )
            | SimError::Rod(RodError::FoldedBack { yarn, .. } | RodError::ZeroEdge { yarn, .. })
            | SimError::TooFar { yarn, .. } => Some(*yarn),
            _ => None,
        }
    }
}

fn param_err(key: &'static str, value: impl std::fmt::Display, message: &'static str) -> SimError {
    SimError::Parameter {
        key,
        value: value.to_string(),
        message,
    }
}

fn params_from_scene(scene: &Scene) -> Result<SimParams, SimError> {
    let s = &scene.simulation;
    let y = &scene.yarn;
    if !(s.dt.is_finite() && s.dt > 0.0) {
        return Err(param_err(
            "simulation.dt",
            s.dt,
            "must be a positive number",
        ));
    }
    if !(s.fps.is_finite() && s.fps > 0.0) {
        return Err(param_err(
            "simulation.fps",
            s.fps,
            "must be a positive number",
        ));
    }
    let spf = (1.0 / (s.fps * s.dt)).round();
    if spf.is_nan() || spf < 1.0 {
        return Err(param_err(
            "simulation.fps",
            s.fps,
            "gives less than one time step per frame",
        ));
    }
    if spf >= u32::MAX as f64 {
        return Err(param_err(
            "simulation.fps",
            s.fps,
            "gives more time steps per frame than a frame may take (4294967294)",
        ));
    }
    if !s.gravity.iter().all(|g| g.is_finite()) {
        return Err(param_err(
            "simulation.gravity",
            format!("{:?}", s.gravity),
            "must be finite",
        ));
    }
    let positive = |key, v: f32| {
        if v.is_finite() && v > 0.0 {
            Ok(())
        } else {
            Err(param_err(key, v, "must be a positive number"))
        }
    };
    let non_negative = |key, v: f32| {
        if v.is_finite() && v >= 0.0 {
            Ok(())
        } else {
            Err(param_err(key, v, "must be a non-negative number"))
        }
    };
    if y.radius_auto {
        return Err(param_err(
            "yarn.radius",
            "\"auto\"",
            "is fitted to the cloth before a simulation is built (scene::resolve_radius)",
        ));
    }
    positive("yarn.radius", y.radius)?;
    positive("yarn.linear_density", y.linear_density)?;
    non_negative("yarn.bending_stiffness", y.bending_stiffness)?;
    non_negative("yarn.twisting_stiffness", y.twisting_stiffness)?;
    non_negative("yarn.damping_const", y.damping_const)?;
    non_negative("yarn.damping_prop", y.damping_prop)?;
    if y.plastic_radius.is_nan() || y.plastic_radius < 0.0 {
        return Err(param_err(
            "yarn.plastic_radius",
            y.plastic_radius,
            "must be non-negative (inf disables plasticity)",
        ));
    }
    if y.plastic_max.is_nan() || y.plastic_max < 0.0 {
        return Err(param_err(
            "yarn.plastic_max",
            y.plastic_max,
            "must be non-negative (inf removes the bound)",
        ));
    }
    Ok(SimParams {
        h: (1.0 / (s.fps * spf)) as f32,
        steps_per_frame: spf as u32,
        fps: s.fps,
        dt_requested: s.dt,
        gravity: s.gravity,
        rod: RodParams {
            bending: y.bending_stiffness,
            twisting: y.twisting_stiffness,
            plastic_radius: y.plastic_radius,
            plastic_max: y.plastic_max,
        },
        radius: y.radius,
        damping_const: y.damping_const,
        damping_prop: y.damping_prop,
        length_tolerance: 1e-4,
        length_max_iterations: 100,
        frame_sweeps: 2,
    })
}

fn obstacle_def(o: &Obstacle) -> Result<ObstacleDef, SimError> {
    let finite = |v: &[f32]| v.iter().all(|x| x.is_finite());
    let friction_ok = |f: f32| f.is_finite() && f >= 0.0;
    let p4 = |p: [f32; 3]| [p[0], p[1], p[2], 0.0];
    match o {
        Obstacle::Plane {
            point,
            normal,
            friction,
        } => {
            // A normal of any finite length but 0 gives its direction: where its f32 length
            // over- or underflows ([0, 1e30, 0], [0, 1e-30, 0]) it is normalised in f64 (in f32
            // otherwise, as always: the same bits as before for every normal that worked).
            let n32 = crate::math::V3::<f32>::from3(*normal);
            let l32 = n32.norm();
            let n64 =
                crate::math::V3::<f64>::new(normal[0] as f64, normal[1] as f64, normal[2] as f64);
            let l = n64.norm();
            let n = if l32.is_finite() && l32 >= f32::MIN_POSITIVE.sqrt() {
                n32 / l32
            } else {
                crate::math::V3::<f32>::new(
                    (n64.x / l) as f32,
                    (n64.y / l) as f32,
                    (n64.z / l) as f32,
                )
            };
            if !(finite(point) && finite(normal) && l > 0.0) {
                return Err(param_err(
                    "obstacle.normal",
                    format!("{normal:?}"),
                    "a plane needs a finite point and a non-zero normal",
                ));
            }
            if !friction_ok(*friction) {
                return Err(param_err("obstacle.friction", friction, "must be ≥ 0"));
            }
            Ok(ObstacleDef {
                rest: ObstacleShape {
                    kind: step::OBSTACLE_PLANE,
                    friction: *friction,
                    radius: 0.0,
                    _pad: 0,
                    a: p4(*point),
                    b: n.to4(0.0),
                    vel: [0.0; 4],
                    vel_b: [0.0; 4],
                },
                keyframes: Vec::new(),
                part: None,
            })
        }
        Obstacle::Sphere {
            center,
            radius,
            friction,
            keyframes,
        } => {
            if !(finite(center) && radius.is_finite() && *radius > 0.0) {
                return Err(param_err(
                    "obstacle.radius",
                    radius,
                    "a sphere needs a finite centre and a positive radius",
                ));
            }
            if !friction_ok(*friction) {
                return Err(param_err("obstacle.friction", friction, "must be ≥ 0"));
            }
            check_keyframes(keyframes)?;
            Ok(ObstacleDef {
                rest: ObstacleShape {
                    kind: step::OBSTACLE_SPHERE,
                    friction: *friction,
                    radius: *radius,
                    _pad: 0,
                    a: p4(*center),
                    b: [0.0; 4],
                    vel: [0.0; 4],
                    vel_b: [0.0; 4],
                },
                keyframes: keyframes.clone(),
                part: None,
            })
        }
        Obstacle::Capsule {
            a,
            b,
            radius,
            friction,
            keyframes,
        } => {
            if !(finite(a) && finite(b) && radius.is_finite() && *radius > 0.0) {
                return Err(param_err(
                    "obstacle.radius",
                    radius,
                    "a capsule needs finite ends and a positive radius",
                ));
            }
            if !friction_ok(*friction) {
                return Err(param_err("obstacle.friction", friction, "must be ≥ 0"));
            }
            check_keyframes(keyframes)?;
            Ok(ObstacleDef {
                rest: ObstacleShape {
                    kind: step::OBSTACLE_CAPSULE,
                    friction: *friction,
                    radius: *radius,
                    _pad: 0,
                    a: p4(*a),
                    b: p4(*b),
                    vel: [0.0; 4],
                    vel_b: [0.0; 4],
                },
                keyframes: keyframes.clone(),
                part: None,
            })
        }
    }
}

fn check_keyframes(k: &[Keyframe]) -> Result<(), SimError> {
    for w in k.windows(2) {
        if w[1].t.partial_cmp(&w[0].t) != Some(std::cmp::Ordering::Greater) {
            return Err(param_err(
                "obstacle.keyframes.t",
                w[1].t,
                "keyframe times must increase",
            ));
        }
    }
    if k.iter()
        .any(|f| !f.t.is_finite() || !f.offset.iter().all(|x| x.is_finite()))
    {
        return Err(param_err(
            "obstacle.keyframes",
            "…",
            "keyframes must be finite",
        ));
    }
    Ok(())
}

/// Coordinates (cm) from which a cloth is far enough from the scene's origin to be simulated about
/// a local one ([`local_origin`]).
pub const LOCAL_ORIGIN_FROM: f32 = 16.0;

/// The origin of a simulation's local frame for a cloth whose control points start at `pos` (the
/// scene's frame), axis by axis: the centre of their extent along the axis, rounded to whole
/// centimetres, where that at least halves their largest coordinate on it and that coordinate is
/// at least [`LOCAL_ORIGIN_FROM`]; else zero (a cloth near the origin is simulated where the
/// scene puts it, bit for bit as before). By axis, not by the largest coordinate of all: the
/// sweater's sleeves reach x = ±137 cm about x = 0, and its height (118–216 cm) is what a shift of
/// y by 167 cm brings to ±49 cm, a quarter of the spacing.
///
/// Why: positions are f32, whose spacing grows with their size (1.5e-5 cm from 128 cm on). A
/// step moves a point by its velocity times h, and a move smaller than that spacing is lost: a
/// point at 150 cm cannot move slower than about 0.25 cm/s at h = 1/16,200 s except by standing
/// still, and the length projection, which corrects errors of that size, sets such points moving
/// at that speed again every few steps. Measured (a 2 × 2 garter swatch, gravity off): at the
/// origin its relaxation came to rest in 674 steps, at (150, 150, 150) cm it had not in 8,101
/// (the fastest point at 0.14 cm/s), with a length error 200 times as large. Contact, lengths and
/// bending all depend on differences of positions only, so a shift of origin changes nothing
/// else; what leaves the simulation (frames, balls, error messages) is shifted back
/// ([`Sim::world_pos`]).
pub fn local_origin(pos: &[[f32; 4]]) -> [f32; 3] {
    let (mut lo, mut hi) = ([f64::INFINITY; 3], [f64::NEG_INFINITY; 3]);
    for p in pos {
        for k in 0..3 {
            lo[k] = lo[k].min(p[k] as f64);
            hi[k] = hi[k].max(p[k] as f64);
        }
    }
    std::array::from_fn(|k| {
        if !(lo[k].is_finite() && hi[k].is_finite()) {
            return 0.0;
        }
        let centre = (0.5 * (lo[k] + hi[k])).round();
        let largest = |c: f64| (lo[k] - c).abs().max((hi[k] - c).abs());
        let before = largest(0.0);
        if before >= LOCAL_ORIGIN_FROM as f64 && largest(centre) <= 0.5 * before {
            centre as f32
        } else {
            0.0
        }
    })
}

/// A ratio as an error shows it: two decimals, or exponent form past a thousand.
fn ratio_text(r: f32) -> String {
    if r < 1000.0 {
        format!("{r:.2}")
    } else {
        format!("{r:.1e}")
    }
}

/// [`f32_spacing`] at a distance that may lie past f32's range: there, the spacing f32's exponent
/// would give if it went on (2^(e − 23) at 2^e).
fn f32_spacing_f64(x: f64) -> f64 {
    let a = x.abs();
    if a < f32::MAX as f64 {
        f32_spacing(a as f32) as f64
    } else {
        2f64.powi(a.log2().floor() as i32 - 23)
    }
}

/// `x` as the f32 it rounds to where f32 holds it (`2e7`, not `20000000.000000004`), else in
/// f64 to 4 digits.
fn as_f32_if_held(x: f64) -> String {
    if (x as f32).is_finite() {
        format!("{:e}", x as f32)
    } else {
        format!("{x:.3e}")
    }
}

/// The spacing of f32 numbers at `x` (cm): the ulp of `|x|`.
pub fn f32_spacing(x: f32) -> f32 {
    let a = x.abs();
    f32::from_bits(a.to_bits() + 1) - a
}

/// The largest coordinate (by magnitude) of the control points `pos`, and its point index.
pub fn largest_coordinate(pos: &[[f32; 4]]) -> (f32, usize) {
    pos.iter()
        .enumerate()
        .map(|(i, p)| (p[0].abs().max(p[1].abs()).max(p[2].abs()), i))
        .fold((0.0, 0), |a, b| if b.0 > a.0 { b } else { a })
}

/// The coarsest f32 spacing at which a yarn's shape is still held, as a fraction of its radius:
/// where coordinates are spaced wider than a quarter radius (beyond 2.6 km at r = 0.125 cm) a
/// loop's control points move by up to an eighth of the radius when they are rounded, and the
/// contact's closest distances by as much; a cloth there is refused ([`SimError::TooFar`]).
pub const COARSEST_SPACING: f32 = 0.25;

/// Refuses control points so far from the scene's origin that f32 cannot hold the yarn's shape
/// there ([`COARSEST_SPACING`]); nearer, [`local_origin`] keeps the simulation's own precision.
fn check_coordinates(topo: &Topology, pos: &[[f32; 4]], radius: f32) -> Result<(), SimError> {
    let (distance, point) = largest_coordinate(pos);
    let spacing = f32_spacing(distance);
    if spacing < COARSEST_SPACING * radius {
        return Ok(());
    }
    let within = f32_reach(COARSEST_SPACING * radius);
    let yarn = topo
        .yarns
        .iter()
        .rposition(|y| y.first_point as usize <= point)
        .unwrap_or(0);
    Err(SimError::TooFar {
        yarn,
        local: point - topo.yarns.get(yarn).map_or(0, |y| y.first_point as usize),
        distance,
        spacing,
        radius,
        within,
    })
}

/// The largest power of two (cm) up to which f32 coordinates stay spaced less than `spacing`.
fn f32_reach(spacing: f32) -> f32 {
    let mut within = 1.0f32;
    while f32_spacing(2.0 * within) < spacing && within < 1e30 {
        within *= 2.0;
    }
    2.0 * within
}

/// Offset of a keyframed obstacle at time `t`: linear interpolation, held constant outside the keys.
pub fn keyframe_offset(keys: &[Keyframe], t: f64) -> [f32; 3] {
    keyframe_offsets(keys, t).0
}

/// Offsets of a keyframed capsule's two ends at time `t` (`offset`, and `offset_b` where given,
/// else `offset`): linear interpolation, held constant outside the keys.
pub fn keyframe_offsets(keys: &[Keyframe], t: f64) -> ([f32; 3], [f32; 3]) {
    let ends = |k: &Keyframe| (k.offset, k.offset_b.unwrap_or(k.offset));
    match keys {
        [] => ([0.0; 3], [0.0; 3]),
        [only] => ends(only),
        _ => {
            if t <= keys[0].t {
                return ends(&keys[0]);
            }
            for w in keys.windows(2) {
                if t <= w[1].t {
                    let s = ((t - w[0].t) / (w[1].t - w[0].t)) as f32;
                    let lerp = |p: [f32; 3], q: [f32; 3]| {
                        let mut o = [0.0; 3];
                        for (a, oa) in o.iter_mut().enumerate() {
                            *oa = p[a] + s * (q[a] - p[a]);
                        }
                        o
                    };
                    let (a0, b0) = ends(&w[0]);
                    let (a1, b1) = ends(&w[1]);
                    return (lerp(a0, a1), lerp(b0, b1));
                }
            }
            ends(&keys[keys.len() - 1])
        }
    }
}

impl Sim {
    /// Builds a simulation from the scene's parameters, the cloth's curves, the damping block of each
    /// control point (one damping phase; empty: one block per yarn), the glued control points and a
    /// contact model.
    pub fn new(
        scene: &Scene,
        curves: &[Curve],
        damping_block: &[u32],
        pins: &[u32],
        contact: Box<dyn ContactForce>,
    ) -> Result<Sim, SimError> {
        Sim::with_damping_phases(scene, curves, &[damping_block], pins, contact)
    }

    /// Like [`Sim::new`] with several damping partitions (phases), each a block id per control point
    /// (empty: one block per yarn); step `s` damps over phase `s mod phases.len()` only. No phase
    /// means no damping.
    pub fn with_damping_phases(
        scene: &Scene,
        curves: &[Curve],
        phases: &[&[u32]],
        pins: &[u32],
        contact: Box<dyn ContactForce>,
    ) -> Result<Sim, SimError> {
        let params = params_from_scene(scene)?;
        let (topo, mut pos) = Topology::from_curves(curves)?;
        check_coordinates(&topo, &pos, params.radius)?;
        let origin = local_origin(&pos);
        let shift = |p: &mut [f32; 4]| {
            for (x, c) in p.iter_mut().zip(origin) {
                *x -= c;
            }
        };
        pos.iter_mut().for_each(shift);
        let n = pos.len();
        let rod = RodState::new(&topo, &pos)?;
        let mut mass = vec![0.0f32; n];
        for e in &topo.edges {
            let m = 0.5 * scene.yarn.linear_density * e.rest_length;
            mass[e.a as usize] += m;
            mass[e.b as usize] += m;
        }
        let mut inv_mass: Vec<f32> = mass.iter().map(|&m| 1.0 / m).collect();
        let mut glue_points: Vec<u32> = pins.to_vec();
        glue_points.sort_unstable();
        glue_points.dedup();
        for &p in &glue_points {
            if p as usize >= n {
                return Err(SimError::PinOutOfRange { point: p, count: n });
            }
            inv_mass[p as usize] = 0.0;
        }
        let glue_target = glue_points.iter().map(|&p| pos[p as usize]).collect();
        // Each phase's blocks as runs of `block_points` (sorted by block id, then point), the
        // phases one after another.
        let mut block_start = vec![0u32];
        let mut block_points: Vec<u32> = Vec::with_capacity(n * phases.len());
        let mut phase_start = vec![0u32];
        for damping_block in phases {
            let blocks: Vec<u32> = if damping_block.is_empty() {
                let mut b = vec![0u32; n];
                for (yi, y) in topo.yarns.iter().enumerate() {
                    let r = y.first_point as usize..(y.first_point + y.num_points) as usize;
                    b[r].fill(yi as u32);
                }
                b
            } else if damping_block.len() != n {
                return Err(SimError::DampingBlocks {
                    given: damping_block.len(),
                    count: n,
                });
            } else {
                damping_block.to_vec()
            };
            let base = block_points.len();
            let mut order: Vec<u32> = (0..n as u32).collect();
            order.sort_by_key(|&p| (blocks[p as usize], p));
            for k in 1..n {
                if blocks[order[k] as usize] != blocks[order[k - 1] as usize] {
                    block_start.push((base + k) as u32);
                }
            }
            block_points.extend(order);
            if n > 0 {
                block_start.push(block_points.len() as u32);
            }
            phase_start.push((block_start.len() - 1) as u32);
        }
        let mut obstacle_defs = scene
            .obstacle
            .iter()
            .map(obstacle_def)
            .collect::<Result<Vec<_>, _>>()?;
        for d in &mut obstacle_defs {
            // A plane's `b` is its normal; a sphere's and a capsule's `b` (its other end) a place.
            shift(&mut d.rest.a);
            if d.rest.kind == step::OBSTACLE_CAPSULE {
                shift(&mut d.rest.b);
            }
        }
        for (fi, f) in scene.figure.iter().enumerate() {
            for (pi, p) in f.parts_about(0.0, origin).into_iter().enumerate() {
                obstacle_defs.push(ObstacleDef {
                    rest: ObstacleShape {
                        kind: step::OBSTACLE_CAPSULE,
                        friction: f.friction,
                        radius: p.radius,
                        a: [p.a[0], p.a[1], p.a[2], 0.0],
                        b: [p.b[0], p.b[1], p.b[2], 0.0],
                        ..Default::default()
                    },
                    keyframes: Vec::new(),
                    part: Some((fi, pi)),
                });
            }
        }
        let obstacles = obstacle_defs.iter().map(|d| d.rest).collect();
        let ne = topo.edges.len();
        let base_params = Params {
            h: params.h,
            radius: params.radius,
            gravity_x: params.gravity[0],
            gravity_y: params.gravity[1],
            gravity_z: params.gravity[2],
            bending: params.rod.bending,
            twisting: params.rod.twisting,
            plastic_radius: params.rod.plastic_radius,
            plastic_max: params.rod.plastic_max,
            damping_const: params.damping_const,
            damping_prop: params.damping_prop,
            length_tolerance: params.length_tolerance,
            length_max_iterations: params.length_max_iterations,
            frame_sweeps: params.frame_sweeps,
            num_points: n as u32,
            num_edges: ne as u32,
            num_bends: rod.bends.len() as u32,
            num_segments: topo.segments.len() as u32,
            num_yarns: topo.yarns.len() as u32,
            num_glue: glue_points.len() as u32,
            k_contact: scene.contact.stiffness,
            quadrature: scene.contact.quadrature,
            grid_cell: scene.contact.grid_cell,
            exclusion_arc: scene.contact.exclusion_arc,
            air_factor: (1.0 / (1.0 + params.h as f64 * scene.damping.air as f64)) as f32,
            ..Params::default()
        };
        let mut sim = Sim {
            base_params,
            origin,
            pos,
            vel: vec![[0.0; 4]; n],
            time: 0.0,
            steps: 0,
            frames: 0,
            params,
            mass,
            inv_mass,
            rod,
            glue_points,
            glue_target,
            block_start,
            block_points,
            phase_start,
            obstacles,
            obstacle_defs,
            figures: scene.figure.clone(),
            balls: scene
                .ball
                .iter()
                .map(|b| {
                    let c = std::array::from_fn(|k| b.center[k] - origin[k]);
                    let mut s = BallState::new(c, b.radius, b.mass(), b.friction, b.restitution);
                    s.vel = [b.velocity[0], b.velocity[1], b.velocity[2], s.vel[3]];
                    s
                })
                .collect(),
            ball_scratch: BallScratch::default(),
            ties: Vec::new(),
            tie_length: Vec::new(),
            tie_color_start: vec![0],
            force: vec![[0.0; 4]; n],
            length: LengthScratch::new(&topo.edges, n),
            contact,
            step_stats: ContactStats::default(),
            frame_contact: Vec::new(),
            last_length: step::LengthReport::default(),
            frame_length_error: 0.0,
            frame_iterations: 0,
            phase: [0.0; 5],
            quadrature: scene.contact.quadrature,
            rebuild_counts: Vec::new(),
            record_rebuilds: false,
            rebuilds_known: false,
            pass: PassCheck::default(),
            obstacles_held: None,
            topo,
        };
        sim.place_obstacles();
        Ok(sim)
    }

    /// Like [`Sim::new`], with the contact model the scene names (`contact.model`).
    pub fn from_scene(
        scene: &Scene,
        curves: &[Curve],
        damping_block: &[u32],
        pins: &[u32],
    ) -> Result<Sim, SimError> {
        let contact = contact_model(scene)?;
        Sim::new(scene, curves, damping_block, pins, contact)
    }

    /// A simulation of a built scene ([`crate::scene::build_curves`], [`crate::scene::pinned_points`])
    /// with the contact model the scene names; damping alternates between the build's two block
    /// partitions (phases A and B).
    pub fn from_build(
        scene: &Scene,
        build: &crate::scene::ClothBuild,
        pins: &[u32],
    ) -> Result<Sim, SimError> {
        let contact = contact_model(scene)?;
        let mut sim = Sim::with_damping_phases(
            scene,
            &build.curves,
            &[&build.damping_block, &build.damping_block_shifted],
            pins,
            contact,
        )?;
        sim.set_ties(&build.ties)?;
        Ok(sim)
    }

    /// The checks of a run's fresh start from its scene: the cloth clear of every solid
    /// ([`Sim::check_starts_clear`]) and no two yarns in one place
    /// ([`Sim::check_no_coincident_yarns`]). Left to the callers of [`Sim::from_build`] that start
    /// a run (`yarnsim run`, `yarnsim table`), not done there: tests and tools build a simulation
    /// and then move its points (a cloth lifted clear of a floor by a radius), and a checkpoint's
    /// state is put back into a simulation built from the scene's cloth as it started.
    pub fn check_start(&self, build: &crate::scene::ClothBuild) -> Result<(), SimError> {
        self.check_solids_in_reach()?;
        self.check_starts_clear()?;
        self.check_no_coincident_yarns(&build.piece_first_point)
    }

    /// The scene's solid `k` (an obstacle or a walking figure's part) in words, and the scene key
    /// that places it.
    fn solid_words(&self, k: usize) -> (String, String) {
        match self.obstacle_defs[k].part {
            Some((f, part)) => (
                format!("figure.{f}'s {}", crate::figure::PART_NAMES[part]),
                format!("figure.{f}.position"),
            ),
            None => {
                let kind = match self.obstacles[k].kind {
                    step::OBSTACLE_PLANE => "a plane",
                    step::OBSTACLE_SPHERE => "a sphere",
                    _ => "a capsule",
                };
                // (A keyframed one is where its keyframes have it for the first step, not where
                // the scene puts it at rest.)
                let moved = if self.obstacle_defs[k].keyframes.is_empty() {
                    ""
                } else {
                    ", where its keyframes place it for the first step"
                };
                let key = if moved.is_empty() {
                    format!("obstacle.{k}")
                } else {
                    format!("obstacle.{k} or its keyframes")
                };
                (format!("obstacle.{k} ({kind}{moved})"), key)
            }
        }
    }

    /// Whether every solid lies where f32 resolves contact with it ([`SimError::ObstacleTooFar`]):
    /// its farthest extent from the simulation's origin (a sphere's or capsule's ends plus its
    /// radius, a plane's point, as placed for the first step), where f32 coordinates must be
    /// spaced less than [`COARSEST_SPACING`] yarn radii, as the cloth's must ([`SimError::TooFar`]).
    /// A sphere of 1e7 cm standing for the ground threw a swatch resting on it at 14 m/s.
    pub fn check_solids_in_reach(&self) -> Result<(), SimError> {
        let r = self.params.radius;
        for (k, o) in self.obstacles.iter().enumerate() {
            let norm = |p: [f32; 4]| (0..3).map(|k| (p[k] as f64).powi(2)).sum::<f64>().sqrt();
            let reach = match o.kind {
                step::OBSTACLE_PLANE => norm(o.a),
                step::OBSTACLE_SPHERE => norm(o.a) + o.radius as f64,
                _ => norm(o.a).max(norm(o.b)) + o.radius as f64,
            };
            let spacing = f32_spacing_f64(reach);
            if spacing.is_nan() || spacing >= (COARSEST_SPACING * r) as f64 {
                return Err(SimError::ObstacleTooFar {
                    solid: self.solid_words(k).0,
                    reach,
                    spacing,
                    radius: r,
                    within: f32_reach(COARSEST_SPACING * r),
                });
            }
        }
        // A free ball too: one that starts that far meets the cloth, if ever, as coarsely (and
        // one at 1e30 cm was simulated where a sphere obstacle there is refused).
        for (k, b) in self.balls.iter().enumerate() {
            let c = &b.center;
            let reach = (0..3).map(|a| (c[a] as f64).powi(2)).sum::<f64>().sqrt() + c[3] as f64;
            let spacing = f32_spacing_f64(reach);
            if spacing.is_nan() || spacing >= (COARSEST_SPACING * r) as f64 {
                return Err(SimError::ObstacleTooFar {
                    solid: format!("ball.{k}"),
                    reach,
                    spacing,
                    radius: r,
                    within: f32_reach(COARSEST_SPACING * r),
                });
            }
        }
        Ok(())
    }

    /// The first contact of a yarn with itself that `contact.exclusion_arc` hides as the cloth
    /// starts, if any: two parts of one yarn closer than 2r in space, more than πr apart along it
    /// (closer, a yarn bent as tightly as it can bend touches itself: no contact), but less than
    /// the exclusion arc, within which contact is off ([`crate::contact`]). A generated knit's
    /// nearest such parts are about 21r apart along the yarn (a loop's legs where they cross the
    /// head of the loop below), so the default exclusion (8r) hides none; an exclusion arc set in
    /// the wrong unit (10 for 10 mm) hides them all, and the knit's loops pass through each other
    /// with nothing else to say so. Samples 4 points a segment, hashed in cells of 2r: linear in the
    /// cloth's size. Meaningless with `contact.model = "none"`, which the caller knows.
    pub fn hidden_self_contact(&self) -> Option<HiddenSelfContact> {
        let r = self.params.radius as f64;
        let exclusion = self.base_params.exclusion_arc as f64;
        if exclusion <= std::f64::consts::PI * r {
            return None;
        }
        let samples = crate::knit::sample_curves(&self.topo.curves(&self.pos), 4);
        let (arc, distance, i, j) =
            crate::knit::nearest_self_contact(&samples, std::f64::consts::PI * r, 2.0 * r)?;
        (arc < exclusion).then(|| HiddenSelfContact {
            yarn: samples.yarn[i] as usize,
            at: [samples.arc[i], samples.arc[j]],
            arc,
            distance,
            exclusion_arc: self.base_params.exclusion_arc,
            radius: self.params.radius,
        })
    }

    /// Whether the cloth starts clear of the scene's solids: no control point whose yarn axis is
    /// inside an obstacle, a walking figure's part or a ball, where they are placed for the first
    /// step. A run that starts so does not fail: the first steps throw such points out at once,
    /// and the relaxation before t = 0 then carries the torn, flung cloth to rest, far from where
    /// the scene put it, with nothing to say so; this says so before. (A yarn's surface within its
    /// radius of a solid, a cloth resting on a floor, is clear: only the axis counts.)
    pub fn check_starts_clear(&self) -> Result<(), SimError> {
        let points = self.pos.len();
        let first_inside = |distance: &dyn Fn(V3<f32>) -> f32| {
            let mut inside = 0;
            let mut deepest: Option<(usize, f32)> = None;
            for (i, p) in self.pos.iter().enumerate() {
                let d = distance(V3::from4(*p));
                if d < 0.0 {
                    inside += 1;
                    if deepest.is_none_or(|(_, e)| d < e) {
                        deepest = Some((i, d));
                    }
                }
            }
            deepest.map(|(i, d)| (inside, i, -d))
        };
        let fail = |solid: String, key: String, (inside, point, depth): (usize, usize, f32)| {
            let (yarn, local) = self.point_site(point);
            SimError::StartsInside {
                solid,
                key,
                inside,
                points,
                point,
                yarn,
                local,
                depth,
            }
        };
        for (k, o) in self.obstacles.iter().enumerate() {
            let Some(found) = first_inside(&|x| step::obstacle_distance(o, x).0) else {
                continue;
            };
            let (solid, key) = self.solid_words(k);
            return Err(fail(solid, key, found));
        }
        for (k, b) in self.balls.iter().enumerate() {
            let c = V3::from4(b.center);
            if let Some(found) = first_inside(&|x| (x - c).norm() - b.center[3]) {
                return Err(fail(format!("ball.{k}"), format!("ball.{k}.center"), found));
            }
        }
        // A ball overlapping a solid by more than a hundredth of its radius (one resting on a
        // floor touches it; rounding may sink it a little): the first step's impulse threw one
        // started 7 cm inside a floor out at 1.3 km/s.
        for (k, b) in self.balls.iter().enumerate() {
            let (c, radius) = (V3::from4(b.center), b.center[3]);
            for (j, o) in self.obstacles.iter().enumerate() {
                let distance = step::obstacle_distance(o, c).0;
                if distance < 0.99 * radius {
                    return Err(SimError::BallStartsInside {
                        ball: format!("ball.{k}"),
                        solid: self.solid_words(j).0,
                        distance,
                        depth: radius - distance,
                        radius,
                    });
                }
            }
        }
        Ok(())
    }

    /// Whether the cloth starts with two yarns' control points in one place (closer than a
    /// thousandth of the yarn radius: the same [[cloth]] piece given twice, a BCC file's yarn
    /// listed twice). Contact between them has no direction, and the first step stopped on a
    /// non-finite contact force, blaming the time step. `piece_first_point`: the first control
    /// point of each piece and the count, to name the pieces (empty: not named). Points are
    /// hashed into cells of the tolerance, so this is linear in the points.
    pub fn check_no_coincident_yarns(&self, piece_first_point: &[u32]) -> Result<(), SimError> {
        let eps = 1e-3 * self.params.radius.max(f32::MIN_POSITIVE);
        let cell = |p: &[f32; 4]| {
            [0, 1, 2].map(|k| (p[k] as f64 / eps as f64).floor().clamp(-1e15, 1e15) as i64)
        };
        let mut grid: std::collections::HashMap<[i64; 3], Vec<u32>> = Default::default();
        for (i, p) in self.pos.iter().enumerate() {
            grid.entry(cell(p)).or_default().push(i as u32);
        }
        let yarn_of = |p: usize| self.point_site(p).0;
        let mut found: Option<(usize, usize, f32)> = None;
        for (i, p) in self.pos.iter().enumerate() {
            let c = cell(p);
            for d in 0..27i64 {
                let key = [c[0] + d % 3 - 1, c[1] + (d / 3) % 3 - 1, c[2] + d / 9 - 1];
                for &j in grid.get(&key).map_or(&[][..], |v| &v[..]) {
                    let j = j as usize;
                    if j <= i {
                        continue;
                    }
                    let q = &self.pos[j];
                    let dist =
                        ((p[0] - q[0]).powi(2) + (p[1] - q[1]).powi(2) + (p[2] - q[2]).powi(2))
                            .sqrt();
                    if dist < eps
                        && yarn_of(i) != yarn_of(j)
                        && found.is_none_or(|(a, b, _)| (i, j) < (a, b))
                    {
                        found = Some((i, j, dist));
                    }
                }
            }
            if found.is_some() {
                break;
            }
        }
        let Some((a, b, distance)) = found else {
            return Ok(());
        };
        let piece = |p: usize| match piece_first_point.partition_point(|&f| f as usize <= p) {
            0 => String::new(),
            k if k < piece_first_point.len() => format!(", cloth.{}", k - 1),
            _ => String::new(),
        };
        let ((yarn_a, local_a), (yarn_b, local_b)) = (self.point_site(a), self.point_site(b));
        Err(SimError::Coincident {
            a,
            yarn_a,
            local_a,
            piece_a: piece(a),
            b,
            yarn_b,
            local_b,
            piece_b: piece(b),
            distance,
        })
    }

    /// Ties pairs of control points ([`crate::ties`]) at their current distances, stored colour by
    /// colour ([`crate::ties::color_ties`]).
    pub fn set_ties(&mut self, ties: &[[u32; 2]]) -> Result<(), SimError> {
        // Checked in the input's order first, so that an error names the tie as the caller gave it.
        crate::ties::tie_lengths(ties, &self.pos)?;
        let colored = crate::ties::color_ties(ties)?;
        self.tie_length = crate::ties::tie_lengths(&colored.ties, &self.pos)?;
        self.ties = colored.ties;
        self.tie_color_start = colored.color_start;
        Ok(())
    }

    /// The tied pairs of control points (colour by colour) and their lengths.
    pub fn ties(&self) -> (&[[u32; 2]], &[f32]) {
        (&self.ties, &self.tie_length)
    }

    /// The first tie of each colour of [`Sim::ties`], and one more entry, their count.
    pub fn tie_color_start(&self) -> &[u32] {
        &self.tie_color_start
    }

    /// Replaces the yarn radius (the obstacle distance) and the contact model together: the models
    /// take the radius when they are built, so a new radius needs a new model, and whatever the old
    /// one had built up (contact sets, schedule) is dropped. Used by [`crate::relax`].
    pub fn set_radius(&mut self, radius: f32, contact: Box<dyn ContactForce>) {
        self.set_radius_parameter(radius);
        self.contact = contact;
    }

    /// The radius the step's parameters (and a checkpoint's fingerprint of them) hold, the contact
    /// model left as it is: a relaxation's checkpoint records the scene's parameters, not its own.
    pub fn set_radius_parameter(&mut self, radius: f32) {
        self.params.radius = radius;
        self.base_params.radius = radius;
    }

    /// Sets the Newton sweeps of the material angles per step ([`SimParams::frame_sweeps`], 2 by
    /// default). Scenes do not set it; the GPU step solves up to `rod::FRAME_SOLVE_MAX_SWEEPS` in
    /// tiles and more colour by colour, and tests reach both this way.
    pub fn set_frame_sweeps(&mut self, sweeps: u32) {
        self.params.frame_sweeps = sweeps;
        self.base_params.frame_sweeps = sweeps;
    }

    /// Sets the cap of Fast Projection iterations per step ([`SimParams::length_max_iterations`],
    /// 100 by default). Scenes do not set it; tests reach the projection's failure this way.
    pub fn set_length_max_iterations(&mut self, cap: u32) {
        self.params.length_max_iterations = cap;
        self.base_params.length_max_iterations = cap;
    }

    /// Holds the obstacles (keyframed solids, figures' parts, and the balls) at their places at
    /// time `at`, at rest, in the steps that follow, whatever `time` those steps advance to; `None`
    /// lets them follow their keyframes. Why a time of its own: the GPU step advances `time` over
    /// a batch, and held "at the current time" the relaxation's obstacles and figures played
    /// their keyframes through on the GPU (at rest, but moved: a keyframed sphere had dragged the
    /// cloth 2 cm by frame 0, a walking figure 9 cm), where the CPU relaxation reset the time to 0
    /// before each step.
    pub fn hold_obstacles(&mut self, at: Option<f64>) {
        self.obstacles_held = at;
    }

    /// Replaces gravity (cm/s²) for the steps that follow.
    pub fn set_gravity(&mut self, g: [f32; 3]) {
        self.params.gravity = g;
        [
            self.base_params.gravity_x,
            self.base_params.gravity_y,
            self.base_params.gravity_z,
        ] = g;
    }

    /// The air-drag factor `1 / (1 + h c)` of the steps (see [`Params::air_factor`]).
    pub fn air_factor(&self) -> f32 {
        self.base_params.air_factor
    }

    /// Replaces the air-drag factor `1 / (1 + h c)`.
    pub fn set_air_factor(&mut self, f: f32) {
        self.base_params.air_factor = f;
    }

    /// The forces of the last step (gravity + rod + contact).
    pub fn force(&self) -> &[[f32; 4]] {
        &self.force
    }

    /// The length projection report of the last step.
    pub fn last_length_report(&self) -> step::LengthReport {
        self.last_length
    }

    /// Places the obstacles for the step from `time` to `time + h` (positions at its end, velocities
    /// over it).
    pub fn place_obstacles(&mut self) {
        let h = self.params.h as f64;
        // Held obstacles stay where they are at the time they are held at, at rest.
        let (t0, t1) = match self.obstacles_held {
            Some(t) => (t, t),
            None => (self.time, self.time + h),
        };
        // A figure's parts at the step's start and end, computed once per figure (its parts are
        // consecutive obstacles).
        let mut placed: Option<(usize, [Part; PARTS], [Part; PARTS])> = None;
        for (o, d) in self.obstacles.iter_mut().zip(&self.obstacle_defs) {
            // The ends at the end of the step, and their moves over it.
            let (a1, b1, da, db) = if let Some((fi, pi)) = d.part {
                if placed.as_ref().is_none_or(|p| p.0 != fi) {
                    let f = &self.figures[fi];
                    placed = Some((
                        fi,
                        f.parts_about(t0, self.origin),
                        f.parts_about(t1, self.origin),
                    ));
                }
                let (_, parts0, parts1) = placed.as_ref().unwrap();
                let (p0, p1) = (parts0[pi], parts1[pi]);
                let diff = |p: [f32; 3], q: [f32; 3]| [q[0] - p[0], q[1] - p[1], q[2] - p[2]];
                (p1.a, p1.b, diff(p0.a, p1.a), diff(p0.b, p1.b))
            } else if d.keyframes.is_empty() {
                continue;
            } else {
                let (a0, b0) = keyframe_offsets(&d.keyframes, t0);
                let (oa, ob) = keyframe_offsets(&d.keyframes, t1);
                let at = |p: [f32; 4], off: [f32; 3]| [p[0] + off[0], p[1] + off[1], p[2] + off[2]];
                let diff = |p: [f32; 3], q: [f32; 3]| [q[0] - p[0], q[1] - p[1], q[2] - p[2]];
                (
                    at(d.rest.a, oa),
                    at(d.rest.b, ob),
                    diff(a0, oa),
                    diff(b0, ob),
                )
            };
            *o = d.rest;
            for k in 0..3 {
                o.a[k] = a1[k];
                o.vel[k] = (da[k] as f64 / h) as f32;
                if o.kind == step::OBSTACLE_CAPSULE {
                    o.b[k] = b1[k];
                    o.vel_b[k] = (db[k] as f64 / h) as f32;
                }
            }
        }
    }

    /// The yarn of control point `point` and the point's index in it (yarn 0 and `point` past
    /// the last yarn's points).
    pub fn point_site(&self, point: usize) -> (usize, usize) {
        self.topo
            .yarns
            .iter()
            .enumerate()
            .find(|(_, y)| {
                (point as u32) >= y.first_point && (point as u32) < y.first_point + y.num_points
            })
            .map(|(i, y)| (i, point - y.first_point as usize))
            .unwrap_or((0, point))
    }

    fn not_finite(&self, what: &'static str, point: usize) -> SimError {
        let (yarn, local) = self.point_site(point);
        SimError::NotFinite {
            step: self.steps,
            what,
            point,
            yarn,
            local,
        }
    }

    /// The damping phase of step `step`: its first block and number of blocks in `block_start`.
    pub fn damping_phase(&self, step: u64) -> (u32, u32) {
        // One damping phase per step, in turn (seed §3.3).
        let phases = self.phase_start.len() - 1;
        if phases == 0 {
            return (0, 0);
        }
        let ph = (step % phases as u64) as usize;
        let (a, b) = (self.phase_start[ph], self.phase_start[ph + 1]);
        (a, b - a)
    }

    /// The kernels' `params` block for the next step (the step index and its damping phase filled in).
    pub fn step_params(&self) -> Params {
        let (first_block, num_blocks) = self.damping_phase(self.steps);
        Params {
            step: self.steps as u32,
            first_block,
            num_blocks,
            num_obstacles: self.obstacles.len() as u32,
            num_balls: self.balls.len() as u32,
            balls_held: self.obstacles_held.is_some() as u32,
            ball_hit_capacity: u32::MAX,
            ..self.base_params
        }
    }

    /// The first control point whose position is not finite, as the error of the next step.
    /// A step leaves finite positions (it checks the velocities before they move the points), so
    /// such a position was set from outside the simulation (scenes and checkpoints are checked
    /// when read); the step checks before any stage, since the first stage to meet it would name
    /// another point: a neighbour's bending force, a contact partner's force.
    pub fn check_positions(&self) -> Result<(), SimError> {
        match self
            .pos
            .iter()
            .position(|q| !q.iter().all(|x| x.is_finite()))
        {
            Some(p) => Err(self.not_finite("position", p)),
            None => Ok(()),
        }
    }

    /// Runs one time step h.
    pub fn step(&mut self) -> Result<(), SimError> {
        self.check_positions()?;
        let kp = self.step_params();
        let mut counters = Counters::fresh();
        let p = &self.params;
        let h = p.h;
        let t = Instant::now();
        rod::bend_gradient(
            &kp,
            &self.rod.bends,
            &self.rod.rest,
            &self.rod.frames,
            &self.pos,
            &mut self.rod.bend_grad,
        );
        rod::rod_forces(
            &kp,
            &self.rod.point_bends,
            &self.mass,
            &self.rod.bend_grad,
            &mut self.force,
        );
        let t1 = Instant::now();
        self.contact
            .add_forces(
                &self.topo,
                &self.pos,
                &self.vel,
                &mut self.force,
                &mut self.step_stats,
            )
            .map_err(|source| SimError::Contact {
                step: self.steps,
                source,
            })?;
        if self.record_rebuilds {
            self.rebuilds_known = self
                .contact
                .add_step_rebuilds(&self.topo, &mut self.rebuild_counts);
        }
        let t2 = Instant::now();
        step::integrate_velocity(
            &kp,
            &self.inv_mass,
            &self.force,
            &mut self.vel,
            &mut counters,
        );
        if counters.errors & ERROR_NAN_FORCE != 0 {
            // (The positions were checked at the step's start.)
            return Err(self.not_finite("force", counters.first_bad_point as usize));
        }
        if !self.balls.is_empty() {
            crate::scan::resize_with_headroom(&mut self.ball_scratch.count, self.balls.len(), 0);
            balls::ball_velocity(&kp, &mut self.balls, &mut self.ball_scratch.count);
        }
        step::glue_projection(
            &kp,
            &self.glue_points,
            &self.glue_target,
            &self.pos,
            &mut self.vel,
        );
        crate::ties::tie_projection(
            h,
            &self.ties,
            &self.tie_length,
            &self.inv_mass,
            &self.pos,
            &mut self.vel,
        );
        let report = crate::length::length_projection(
            &kp,
            &self.topo.yarns,
            &self.topo.edges,
            &self.inv_mass,
            &self.pos,
            &mut self.vel,
            &mut counters,
            &mut self.length,
        );
        let report = match report {
            Ok(r) => r,
            Err(f) => {
                // A NaN velocity shows up here first (`length_finish` names its point): name
                // the point rather than the yarn.
                if counters.errors & crate::layout::ERROR_NAN_VELOCITY != 0 {
                    let bad = counters.first_bad_point as usize;
                    return Err(self.not_finite("velocity", bad));
                }
                return Err(SimError::LengthProjection {
                    step: self.steps,
                    yarn: f.yarn,
                    points: f.points,
                    iterations: f.iterations,
                    error: f.error,
                });
            }
        };
        let t3 = Instant::now();
        // One damping phase per step, in turn (seed §3.3): `kp.first_block`, `kp.num_blocks` are
        // this step's phase (`Sim::damping_phase`).
        step::nonrigid_damping(
            &kp,
            &self.block_start,
            &self.block_points,
            &self.mass,
            &self.inv_mass,
            &self.pos,
            &mut self.vel,
        );
        self.place_obstacles();
        step::object_contact(
            &kp,
            &self.obstacles,
            &self.inv_mass,
            &self.pos,
            &mut self.vel,
        );
        if !self.balls.is_empty() {
            balls::yarn_ball_contacts(
                &kp,
                &self.obstacles,
                &self.mass,
                &self.inv_mass,
                &self.pos,
                &mut self.vel,
                &mut self.balls,
                &mut self.ball_scratch,
                &mut counters,
            );
            if counters.errors & ERROR_NAN_BALL != 0 {
                return Err(SimError::BallNotFinite {
                    step: self.steps,
                    ball: counters.first_bad_ball as usize,
                });
            }
        }
        if let Some(bad) = self
            .vel
            .iter()
            .position(|v| !v.iter().all(|x| x.is_finite()))
        {
            return Err(self.not_finite("velocity", bad));
        }
        step::integrate_position(&kp, &self.vel, &mut self.pos);
        balls::ball_position(&kp, &mut self.balls);
        let t4 = Instant::now();
        rod::material_frames(
            &kp,
            &self.topo.edges,
            &self.rod.bends,
            &self.rod.edge_bends,
            &self.rod.edge_order,
            &self.rod.color_start,
            &self.pos,
            &mut self.rod.rest,
            &mut self.rod.frames,
            &mut self.rod.bend_kb,
            &mut self.rod.theta_step,
            &mut self.rod.theta_start,
            &mut self.rod.rest_start,
        );
        rod::plasticity(
            &kp,
            &self.rod.bends,
            &self.rod.frames,
            &self.rod.bend_kb,
            &mut self.rod.rest,
        );
        let t5 = Instant::now();
        self.time += h as f64;
        self.steps += 1;
        self.last_length = report;
        self.frame_length_error = self.frame_length_error.max(report.max_error);
        self.frame_iterations = self.frame_iterations.max(report.iterations);
        for (acc, (a, b)) in
            self.phase
                .iter_mut()
                .zip([(t, t1), (t1, t2), (t2, t3), (t3, t4), (t4, t5)])
        {
            *acc += (b - a).as_secs_f64() * 1e3;
        }
        for &(name, v) in &self.step_stats.values {
            match self.frame_contact.iter_mut().find(|(n, _)| *n == name) {
                Some(e) => e.1 += v,
                None => self.frame_contact.push((name, v)),
            }
        }
        Ok(())
    }

    /// Runs the steps of one output frame and reports on it.
    pub fn frame(&mut self) -> Result<FrameStats, SimError> {
        self.frame_with(&mut || {})
    }

    /// [`Sim::frame`], calling `on_step` after every step (progress reporting).
    pub fn frame_with(&mut self, on_step: &mut dyn FnMut()) -> Result<FrameStats, SimError> {
        let start = Instant::now();
        let n = self.params.steps_per_frame;
        let t0 = self.time;
        let first_step = self.steps;
        self.pass_through_begin_frame()?;
        let mut st = self.measure_steps(n, on_step)?;
        self.pass_through_end_frame(first_step)?;
        // The frame ends at its own time, not at a sum of f32 steps.
        self.time = t0 + 1.0 / self.params.fps;
        self.frames += 1;
        st.frame = self.frames;
        st.sim_time = self.time;
        st.wall_ms = start.elapsed().as_secs_f64() * 1e3;
        Ok(st)
    }

    /// `n` steps measured as a frame is (a record of the same values, per-step means over the
    /// `n` steps), but without the frame's pass-through check and count: for benchmarks such as
    /// `yarnsim table`. `frame` and `sim_time` of the record are the current ones.
    pub fn measure_steps(
        &mut self,
        n: u32,
        on_step: &mut dyn FnMut(),
    ) -> Result<FrameStats, SimError> {
        let start = Instant::now();
        self.frame_length_error = 0.0;
        self.frame_iterations = 0;
        self.phase = [0.0; 5];
        for v in self.frame_contact.iter_mut() {
            v.1 = 0.0;
        }
        self.rebuild_counts.fill(0.0);
        for _ in 0..n {
            self.step()?;
            on_step();
        }
        let (ke, vmax) = self.kinetic_energy_and_max_speed();
        let mut phase_ms = [("", 0.0); 5];
        for (out, (name, v)) in phase_ms.iter_mut().zip(PHASES.iter().zip(self.phase)) {
            *out = (name, v);
        }
        let per = n.max(1) as f64;
        Ok(FrameStats {
            frame: self.frames,
            sim_time: self.time,
            steps: n,
            wall_ms: start.elapsed().as_secs_f64() * 1e3,
            kinetic_energy: ke,
            max_speed: vmax,
            max_length_error: self.max_length_error(),
            projection_error: self.frame_length_error as f64,
            max_projection_iterations: self.frame_iterations,
            phase_ms,
            contact: self
                .frame_contact
                .iter()
                .map(|&(k, v)| (k, v / per))
                .collect(),
            contact_frame_totals: frame_totals(self.frame_contact.iter().copied()),
            extra: Vec::new(),
        })
    }

    /// `½ Σ m v²` of the yarn plus `½ M v² + ½ I ω²` of the balls (g·cm²/s²), and the largest speed
    /// of a control point (cm/s).
    pub fn kinetic_energy_and_max_speed(&self) -> (f64, f64) {
        let mut ke = 0.0f64;
        let mut vmax = 0.0f64;
        for (v, &m) in self.vel.iter().zip(&self.mass) {
            let s2 = (v[0] as f64).powi(2) + (v[1] as f64).powi(2) + (v[2] as f64).powi(2);
            ke += 0.5 * m as f64 * s2;
            vmax = vmax.max(s2.sqrt());
        }
        // In f64 throughout: an f32 square of a fast ball's speed overflows (a ball thrown at 1e30
        // cm/s read KE = inf), and a ball held in place (1/I = 0) has no spin energy, not 0/0.
        let norm2 = |v: [f32; 4]| (0..3).map(|k| (v[k] as f64).powi(2)).sum::<f64>();
        for b in &self.balls {
            ke += 0.5 * b.mass as f64 * norm2(b.vel);
            if b.omega[3] > 0.0 {
                ke += 0.5 * norm2(b.omega) / b.omega[3] as f64;
            }
        }
        (ke, vmax)
    }

    /// Largest relative deviation of any edge from its rest length, in f64.
    pub fn max_length_error(&self) -> f64 {
        self.topo
            .edges
            .iter()
            .map(|e| {
                let a = crate::math::V3::<f64>::from4(self.pos[e.a as usize]);
                let b = crate::math::V3::<f64>::from4(self.pos[e.b as usize]);
                ((b - a).norm() / e.rest_length as f64 - 1.0).abs()
            })
            .fold(0.0, f64::max)
    }

    /// The current yarns as curves, in the scene's frame (for export).
    pub fn curves(&self) -> Vec<Curve> {
        self.topo.curves(&self.world_pos())
    }

    /// Where the simulation's local frame sits in the scene's ([`local_origin`]): a position `p`
    /// the simulation holds is `p + origin` in the scene.
    pub fn origin(&self) -> [f32; 3] {
        self.origin
    }

    /// The control points in the scene's frame ([`Sim::pos`] plus [`Sim::origin`]; borrowed where
    /// the origin is zero).
    pub fn world_pos(&self) -> std::borrow::Cow<'_, [[f32; 4]]> {
        if self.origin == [0.0; 3] {
            return std::borrow::Cow::Borrowed(&self.pos);
        }
        let o = self.origin;
        std::borrow::Cow::Owned(
            self.pos
                .iter()
                .map(|p| [p[0] + o[0], p[1] + o[1], p[2] + o[2], p[3]])
                .collect(),
        )
    }

    /// The free balls in the scene's frame ([`Sim::balls`], their centres plus [`Sim::origin`]).
    pub fn world_balls(&self) -> Vec<BallState> {
        let o = self.origin;
        self.balls
            .iter()
            .map(|b| {
                let mut w = *b;
                for (c, o) in w.center.iter_mut().zip(o) {
                    *c += o;
                }
                w
            })
            .collect()
    }

    /// Starts or stops counting the contact model's rebuilds per segment (for
    /// [`SegmentValue::Rebuilds`]). Counting costs a pass over the model's contacts each step, so it
    /// is off by default. The counts cover one frame: [`Sim::frame`] resets them when it starts.
    pub fn record_rebuilds(&mut self, on: bool) {
        self.record_rebuilds = on;
        self.rebuild_counts.clear();
        self.rebuilds_known = false;
        if on {
            self.rebuild_counts.resize(self.topo.segments.len(), 0.0);
            // Whether the model has anything to rebuild; what it adds now (its last step's rebuilds,
            // nothing before the first step) is not part of any recorded frame.
            self.rebuilds_known = self
                .contact
                .add_step_rebuilds(&self.topo, &mut self.rebuild_counts);
            self.rebuild_counts.fill(0.0);
        }
    }

    /// Whether [`Sim::record_rebuilds`] is on.
    pub fn recording_rebuilds(&self) -> bool {
        self.record_rebuilds
    }

    /// Sets the per-segment rebuilds of the frame just run (a driver with its own step, the GPU
    /// path, counts them itself); needs [`Sim::record_rebuilds`] on.
    pub fn set_frame_rebuilds(&mut self, counts: &[f32]) {
        if self.record_rebuilds {
            self.rebuild_counts.clear();
            self.rebuild_counts.extend_from_slice(counts);
            self.rebuild_counts.resize(self.topo.segments.len(), 0.0);
            self.rebuilds_known = true;
        }
    }

    /// One value per segment of `kind` into `out` (resized to the segment count):
    /// - [`SegmentValue::Rebuilds`]: the contact-model rebuilds touching each segment during the last
    ///   frame (zero before the first frame). Needs [`Sim::record_rebuilds`] on; `Ok(false)` when it
    ///   is off or the contact model keeps no models to rebuild (`none`).
    /// - [`SegmentValue::Contacts`]: the touching quadrature pairs each segment takes part in at the
    ///   current positions (a pair within one segment counts twice); `Ok(false)` for a model without
    ///   contact (`none`).
    pub fn segment_values(
        &mut self,
        kind: SegmentValue,
        out: &mut Vec<f32>,
    ) -> Result<bool, SimError> {
        let n = self.topo.segments.len();
        out.clear();
        out.resize(n, 0.0);
        match kind {
            SegmentValue::Rebuilds => {
                if !(self.record_rebuilds && self.rebuilds_known) {
                    return Ok(false);
                }
                out.copy_from_slice(&self.rebuild_counts);
                Ok(true)
            }
            SegmentValue::Contacts => {
                let (mut touching, mut boxes) = (Vec::new(), Vec::new());
                if !self.contact_pairs(&mut touching, &mut boxes)? {
                    return Ok(false);
                }
                let b = self.quadrature.max(1);
                for [i, j] in touching {
                    for q in [i, j] {
                        if let Some(v) = out.get_mut((q / b) as usize) {
                            *v += 1.0;
                        }
                    }
                }
                Ok(true)
            }
        }
    }

    /// The contact model's touching quadrature pairs at the current positions and its contact-set
    /// boxes (see [`ContactForce::contact_pairs`]); `Ok(false)` for a model without contact.
    pub fn contact_pairs(
        &mut self,
        touching: &mut Vec<[u32; 2]>,
        boxes: &mut Vec<[u32; 4]>,
    ) -> Result<bool, SimError> {
        touching.clear();
        boxes.clear();
        self.contact
            .contact_pairs(&self.topo, &self.pos, touching, boxes)
            .map_err(|source| SimError::Contact {
                step: self.steps,
                source,
            })
    }

    /// The size `S` of the quadrature-pair matrix: segments × quadrature points per segment.
    pub fn num_quadrature_points(&self) -> usize {
        self.topo.num_quadrature_points(self.quadrature)
    }

    /// Checks the current state for yarns inside each other; [`Sim::frame`] runs it at the end of
    /// every frame (a driver with its own frame loop may call it after its frames). The error is a
    /// [`SimError::PassThrough`] naming frame `self.frames` and its steps.
    ///
    /// The pairs are the contact model's touching, non-excluded quadrature pairs at the current
    /// positions ([`ContactForce::contact_pairs`]; for `exact` and `acl` the exact model's grid
    /// search, so the same-yarn exclusion applies). A model without contact pairs (`none`) is not
    /// checked. Two rules, with `r` the yarn radius:
    ///
    /// - *Deep pair*: a touching pair closer than [`PASS_THROUGH_DEPTH`]` · r = r/2`. Contact
    ///   starts at `2r`; the penalty `f = 4r²/d² + d²/4r² − 2` is 0.34 at `1.5r`, 2.25 at `r` and
    ///   14.1 at `r/2`, and its force `κw|f'(d)|` at `r/2` is 8.5 times that at `r` and 39 times
    ///   that at `1.5r` (at the default stiffness on a generated knit, segments about 0.5 cm long:
    ///   some 3,600 dyn per pair, over 10⁴ times the weight of the yarn a quadrature point stands
    ///   for). A pair that deep means
    ///   the penalty lost: the yarns moved into each other faster than a step can push them apart
    ///   (the step too large for the speed) or the stiffness is too small for the load, and the
    ///   centre line of each yarn is well inside the other. Healthy runs of the shipped scenes keep
    ///   every pair above `1.7r` (measured with acl: `tiny` and `swatch` over 10 frames, `drop` over
    ///   15, through their impacts; tests/passthrough.rs asserts `> r`), so `r/2` leaves a wide
    ///   margin for harder scenes while still catching a pair on its way through.
    /// - *Crossed pair*: a pair that touched at the last check and now lies on the other side of
    ///   its partner. The side is the sign of `s = (y_i − y_j) · n`, `n = t_i × t_j / |t_i × t_j|`
    ///   (`t` the yarn tangents at the two points): the side of one yarn's tangent line relative to
    ///   the other's, which sliding along each other keeps and only passing through (or the
    ///   tangents turning parallel) changes. Counted when the tangents make at least 30° at both
    ///   checks, `n` turned by less than 60°, `|s| ≥ r/2` at both (clearly on one side, then on the
    ///   other), `|s| ≥ 0.7 |y_i − y_j|` at both (the pair lies across the two yarns, within 46° of
    ///   `n`, as a pair at the yarns' closest approach does), and the pair is now closer than `3r`
    ///   (so the tangent lines still describe the yarns there).
    ///
    ///   The alignment condition keeps out pairs that lie side by side, such as the heads of two
    ///   neighbouring loops pressed together: there `y_i − y_j` is nearly perpendicular to `n`, and
    ///   its side flips when the tangents turn or the arcs slide around each other's bends, with no
    ///   crossing. Measured on the small sack (scenes/sack_small.toml with 0.3 g balls): the rule
    ///   without it stopped the run in frame 6 on such a pair while the two heads' spline curves
    ///   stayed 1.83–1.88 r apart at every step of the frame. A yarn falling through another is
    ///   still caught: at its closest approach the pair is along `n` (tests/passthrough.rs).
    ///
    ///   A crossed pair is then confirmed where the two yarn parts are closest (each segment and
    ///   its neighbours on its yarn, sampled at 17 parameters each), at both checks: the tangents
    ///   there make at least 30°, `n` there turned by less than 60°, and its side turned over.
    ///   Two fixed points of the curves can change sides while the legs they lie on roll around
    ///   each other, never closer than `2r`: the relaxed scarf's exact run stopped at its landing
    ///   on such a pair, whose legs stayed 1.81–1.99 r apart through the frame with their
    ///   tangents within 6° of parallel where closest (the unit test
    ///   `legs_rolling_around_each_other_at_the_scarfs_landing_are_no_crossing` holds the two
    ///   states). A pass-through changes the side at the closest approach. Where that lies at an
    ///   end of the searched parts, or no earlier state is known, the pair's own verdict stands.
    ///
    /// *Limits.* The check sees the state once per frame: a pass-through that begins and ends
    /// within one frame and carries the pair more than `3r` apart is not seen. *Cost:* one grid
    /// search at the current positions (about one exact step's detection; `acl` builds a fresh
    /// exact search) and a few dozen flops per touching pair, once per frame; the pairs' list and
    /// their rules run on every core (the GPU step runs the next frame's batches meanwhile where
    /// it runs ahead: [`crate::gpu_step::GpuSim::set_run_ahead`]).
    pub fn check_pass_through(&mut self) -> Result<(), SimError> {
        let first = self
            .steps
            .saturating_sub(self.params.steps_per_frame as u64);
        self.pass_through_check(self.frames, first, false)
    }

    /// The pass-through check's part at the start of a frame (positions are the frame's start):
    /// the first checked frame notes which side of each other the touching yarns start on. For a
    /// driver that runs the steps itself (the GPU step), with [`Sim::pass_through_end_frame`].
    pub fn pass_through_begin_frame(&mut self) -> Result<(), SimError> {
        if !self.pass.recorded {
            self.pass_through_check(self.frames + 1, self.steps, true)?;
        }
        Ok(())
    }

    /// The pass-through check at the end of frame `self.frames + 1`, whose first step was
    /// `first_step` (positions are the frame's end): did yarns pass through each other?
    pub fn pass_through_end_frame(&mut self, first_step: u64) -> Result<(), SimError> {
        self.pass_through_check(self.frames + 1, first_step, false)
    }

    /// Turns the end-of-frame pass-through check ([`Sim::check_pass_through`]) on (the default) or
    /// off. Turning it on starts afresh: crossings are counted from the next check on.
    pub fn set_pass_through_check(&mut self, on: bool) {
        self.pass.off = !on;
        self.pass.recorded = false;
        self.pass.crossings.clear();
    }

    /// The pass-through check, naming `frame` whose first step was `first_step`; with `record_only`
    /// it only notes the crossings of the current state (the start of the first checked frame).
    fn pass_through_check(
        &mut self,
        frame: u32,
        first_step: u64,
        record_only: bool,
    ) -> Result<(), SimError> {
        if self.pass.off {
            return Ok(());
        }
        let at = self.pass_through_at(frame, first_step);
        pass_through_check(
            &mut self.pass,
            self.contact.as_mut(),
            &self.topo,
            &self.pos,
            &at,
            record_only,
        )
    }

    /// What the pass-through check of `frame` says of itself (its place in the run, the numbers
    /// its error names).
    fn pass_through_at(&self, frame: u32, first_step: u64) -> PassThroughAt {
        PassThroughAt {
            frame,
            first_step,
            step: self.steps.saturating_sub(1),
            quadrature: self.quadrature,
            radius: self.params.radius,
            dt: self.params.h,
            stiffness: self.base_params.k_contact,
            origin: self.origin,
        }
    }

    /// [`Sim::pass_through_end_frame`] as a job that runs apart from the `Sim` (on another thread,
    /// while the GPU step goes on with the next frame): it takes the check's state and the contact
    /// model out of the `Sim` (which holds [`NoContact`] meanwhile) and copies of the positions
    /// and the topology. `None` when the check is off. Give the job back with
    /// [`Sim::return_pass_through_job`] before the `Sim` steps or checks again.
    pub fn pass_through_end_frame_job(&mut self, first_step: u64) -> Option<PassThroughJob> {
        if self.pass.off {
            return None;
        }
        Some(PassThroughJob {
            at: self.pass_through_at(self.frames + 1, first_step),
            pass: std::mem::take(&mut self.pass),
            contact: std::mem::replace(&mut self.contact, Box::new(crate::contact::NoContact)),
            topo: self.topo.clone(),
            pos: self.pos.clone(),
        })
    }

    /// Takes back what [`Sim::pass_through_end_frame_job`] took out (run or not).
    pub fn return_pass_through_job(&mut self, job: PassThroughJob) {
        self.pass = job.pass;
        self.contact = job.contact;
    }
}

/// The end-of-frame pass-through check of one frame with what it needs, out of its `Sim`
/// ([`Sim::pass_through_end_frame_job`]).
pub struct PassThroughJob {
    at: PassThroughAt,
    pass: PassCheck,
    contact: Box<dyn ContactForce>,
    topo: Topology,
    pos: Vec<[f32; 4]>,
}

impl PassThroughJob {
    /// Runs the check ([`Sim::pass_through_end_frame`]).
    pub fn run(&mut self) -> Result<(), SimError> {
        pass_through_check(
            &mut self.pass,
            self.contact.as_mut(),
            &self.topo,
            &self.pos,
            &self.at,
            false,
        )
    }
}

/// The place of a pass-through check in its run and what its error names besides the place.
#[derive(Clone, Copy, Debug)]
struct PassThroughAt {
    frame: u32,
    first_step: u64,
    /// The last step of the frame (the check sees the state after it).
    step: u64,
    quadrature: u32,
    radius: f32,
    dt: f32,
    stiffness: f32,
    /// [`Sim::origin`]: the place's positions are named in the scene's frame.
    origin: [f32; 3],
}

/// The pass-through check ([`Sim::check_pass_through`]) of the state `pos`; with `record_only` it
/// only notes the crossings (the start of the first checked frame).
fn pass_through_check(
    pc: &mut PassCheck,
    contact: &mut dyn ContactForce,
    topo: &Topology,
    pos: &[[f32; 4]],
    at: &PassThroughAt,
    record_only: bool,
) -> Result<(), SimError> {
    let step = at.step;
    let has_pairs = contact
        .contact_pairs(topo, pos, &mut pc.touching, &mut pc.boxes)
        .map_err(|source| SimError::Contact { step, source })?;
    pc.recorded = true;
    if !has_pairs {
        // No contact (`none`): nothing to check.
        pc.crossings.clear();
        return Ok(());
    }
    let found = pass_through_scan(topo, pos, at.quadrature, at.radius, record_only, pc);
    match found {
        None => Ok(()),
        Some(mut place) => Err(SimError::PassThrough {
            frame: at.frame,
            first_step: at.first_step,
            step,
            place: Box::new({
                for p in &mut place.positions {
                    for (x, o) in p.iter_mut().zip(at.origin) {
                        *x += o;
                    }
                }
                place
            }),
            dt: at.dt,
            stiffness: at.stiffness,
        }),
    }
}

/// Pass-through check ([`Sim::check_pass_through`]): a touching quadrature pair closer than this
/// many yarn radii has lost to the penalty.
pub const PASS_THROUGH_DEPTH: f32 = 0.5;

/// Pairs per parallel run of the pass-through check: its crossings (most pairs, in a knit) fit
/// below glibc's threshold for a fresh mapping (128 KiB), so the runs reuse the heap.
const PASS_CHECK_RUN: usize = 1024;

/// Crossed pairs: the smallest sine of the angle between the tangents (30°) at both checks.
const CROSS_MIN_SIN: f32 = 0.5;
/// Crossed pairs: the smallest `|s| / r` at both checks.
const CROSS_MIN_SIDE: f32 = 0.5;
/// Crossed pairs: the smallest `|s| / |y_i − y_j|` at both checks (the pair within 46° of `n`).
const CROSS_MIN_ALIGN: f32 = 0.7;
/// Crossed pairs: the largest distance now, in r.
const CROSS_MAX_DIST: f32 = 3.0;
/// Crossed pairs: the smallest cosine of the turn of `n` between the checks (60°).
const CROSS_MIN_TURN: f32 = 0.5;

/// A touching pair clearly on one side of its partner at the last check.
#[derive(Clone, Copy, Debug)]
struct Crossing {
    quad: [u32; 2],
    n: crate::math::V3<f32>,
    side: f32,
    dist: f32,
}

/// State of the pass-through check: the switch, the quadrature table (basis and derivative weights,
/// made on first use), reused pair buffers, and the crossings of the last check.
#[derive(Debug, Default)]
struct PassCheck {
    off: bool,
    /// Whether `crossings` holds the crossings of an earlier state.
    recorded: bool,
    weights: Vec<[f32; 4]>,
    dweights: Vec<[f32; 4]>,
    touching: Vec<[u32; 2]>,
    boxes: Vec<[u32; 4]>,
    crossings: Vec<Crossing>,
    next: Vec<Crossing>,
    /// The control points at the last check (a crossed pair is confirmed on both states).
    prev_pos: Vec<[f32; 4]>,
}

/// What two yarn parts look like at their closest approach ([`closest_side`]).
enum ClosestSide {
    /// The closest approach lies at an outer end of the searched windows: it says nothing.
    AtEnd,
    /// The tangents there make less than 30°: no side.
    Parallel,
    /// The unit direction `n = t_i × t_j / |t_i × t_j|` and the side `(y_i − y_j) · n`.
    Side(crate::math::V3<f32>, f32),
}

/// Samples per segment of [`closest_side`]'s search.
const CLOSEST_SAMPLES: u32 = 16;

/// The side of the yarn parts around segments `si` and `sj` at their closest approach, searched
/// over each segment and its neighbours on the same yarn at [`CLOSEST_SAMPLES`] + 1 parameters
/// each. A pair that passes through its partner changes this side (the closest points' separation
/// lies along `n` there), while two legs rolling around each other, which can turn the side of two
/// fixed points of the curves over, keep it or go near parallel.
fn closest_side(topo: &Topology, pos: &[[f32; 4]], si: usize, sj: usize) -> ClosestSide {
    use crate::math::V3;
    let window = |s: usize| -> Vec<(V3<f32>, V3<f32>, bool)> {
        let yarn = topo.segments[s].yarn;
        let first = if s > 0 && topo.segments[s - 1].yarn == yarn {
            s - 1
        } else {
            s
        };
        let last = if s + 1 < topo.segments.len() && topo.segments[s + 1].yarn == yarn {
            s + 1
        } else {
            s
        };
        let mut out = Vec::new();
        for k in first..=last {
            let cp = topo.segments[k].cp;
            for m in 0..=CLOSEST_SAMPLES {
                let u = m as f32 / CLOSEST_SAMPLES as f32;
                let (w, dw) = (
                    crate::spline::basis::<f32>(u),
                    crate::spline::basis_deriv::<f32>(u),
                );
                let Some((y, t)) = point_and_tangent(pos, cp, w, dw) else {
                    continue;
                };
                let end = (k == first && m == 0) || (k == last && m == CLOSEST_SAMPLES);
                out.push((y, t, end));
            }
        }
        out
    };
    let (a, b) = (window(si), window(sj));
    let mut best: Option<(f32, usize, usize)> = None;
    for (i, pa) in a.iter().enumerate() {
        for (j, pb) in b.iter().enumerate() {
            let d = (pa.0 - pb.0).norm();
            if best.is_none_or(|(bd, _, _)| d < bd) {
                best = Some((d, i, j));
            }
        }
    }
    let Some((_, i, j)) = best else {
        return ClosestSide::AtEnd;
    };
    let ((yi, ti, ei), (yj, tj, ej)) = (a[i], b[j]);
    if ei || ej {
        return ClosestSide::AtEnd;
    }
    match crossing_direction(ti, tj) {
        Some(n) => ClosestSide::Side(n, (yi - yj).dot(n)),
        None => ClosestSide::Parallel,
    }
}

/// The point and tangent of the segment with control points `cp` for basis weights `w` and
/// their derivatives `dw`; `None` when a control point is missing.
fn point_and_tangent(
    pos: &[[f32; 4]],
    cp: [u32; 4],
    w: [f32; 4],
    dw: [f32; 4],
) -> Option<(crate::math::V3<f32>, crate::math::V3<f32>)> {
    use crate::math::V3;
    let (mut y, mut t) = (V3::zero(), V3::zero());
    for m in 0..4 {
        let p = V3::<f32>::from4(*pos.get(cp[m] as usize)?);
        y += p * w[m];
        t += p * dw[m];
    }
    Some((y, t))
}

/// The unit crossing direction `t_i × t_j / |t_i × t_j|` of two tangents, when they make at
/// least 30°.
fn crossing_direction(
    ti: crate::math::V3<f32>,
    tj: crate::math::V3<f32>,
) -> Option<crate::math::V3<f32>> {
    let c = ti.cross(tj);
    let cn = c.norm();
    (cn >= CROSS_MIN_SIN * ti.norm() * tj.norm() && cn > 0.0).then(|| c / cn)
}

/// Whether a pair that the quadrature points say crossed also crossed at the closest approach of
/// its yarn parts, from the state of the last check (`prev`) to `pos`. Where either closest
/// approach lies at the end of its search windows, or no earlier state is known, the quadrature
/// points' verdict stands.
fn crossing_confirmed(
    topo: &Topology,
    prev: &[[f32; 4]],
    pos: &[[f32; 4]],
    si: usize,
    sj: usize,
) -> bool {
    if prev.len() != pos.len() {
        return true;
    }
    match (
        closest_side(topo, prev, si, sj),
        closest_side(topo, pos, si, sj),
    ) {
        (ClosestSide::AtEnd, _) | (_, ClosestSide::AtEnd) => true,
        (ClosestSide::Side(n0, s0), ClosestSide::Side(n1, s1)) => {
            s0 * s1 < 0.0 && n0.dot(n1) >= CROSS_MIN_TURN
        }
        _ => false,
    }
}

/// The rules of [`Sim::check_pass_through`] on the pairs in `pc.touching`; records this check's
/// crossings for the next one. Returns the deepest pair closer than `r/2`, else the first crossed
/// pair; nothing with `record_only`.
fn pass_through_scan(
    topo: &Topology,
    pos: &[[f32; 4]],
    b: u32,
    r: f32,
    record_only: bool,
    pc: &mut PassCheck,
) -> Option<PassThroughPlace> {
    use crate::math::V3;
    let b = b.max(1);
    if pc.weights.len() != b as usize {
        pc.weights = (0..b)
            .map(|k| crate::spline::basis::<f32>(crate::spline::quad_param(k, b)))
            .collect();
        pc.dweights = (0..b)
            .map(|k| crate::spline::basis_deriv::<f32>(crate::spline::quad_param(k, b)))
            .collect();
    }
    let (weights, dweights) = (&pc.weights, &pc.dweights);
    // Point and tangent of quadrature point `q`; None when its segment does not exist. (A table
    // of every point's, made once, saved the scarf's check, as built, 4 ms of 90 on one thread
    // and cost it 4 on 2: the check is bound by memory, not by these sums.)
    let eval = |q: u32| -> Option<(V3<f32>, V3<f32>)> {
        let seg = topo.segments.get((q / b) as usize)?;
        let k = (q % b) as usize;
        point_and_tangent(pos, seg.cp, weights[k], dweights[k])
    };
    let place = |kind, quad: [u32; 2], ys: [V3<f32>; 2], distance| {
        let part = |q: u32| {
            let seg = &topo.segments[(q / b) as usize];
            let yarn = seg.yarn as usize;
            let first = topo.yarns.get(yarn).map_or(0, |y| y.first_point as usize);
            let g = [seg.cp[1] as usize, seg.cp[2] as usize];
            (yarn, [g[0] - first.min(g[0]), g[1] - first.min(g[1])], g)
        };
        let (pa, pb) = (part(quad[0]), part(quad[1]));
        PassThroughPlace {
            kind,
            quadrature: quad,
            yarns: [pa.0, pb.0],
            points: [pa.1, pb.1],
            global_points: [pa.2, pb.2],
            positions: [ys[0].to3(), ys[1].to3()],
            distance,
            radius: r,
        }
    };
    let deep = PASS_THROUGH_DEPTH * r;
    // Runs of pairs in parallel (the garments' checks see 10⁵–10⁶ pairs, once a frame, while the
    // GPU step waits), each keeping the first of its deepest pairs and its crossings in order;
    // then the runs in order: what one loop over the pairs finds.
    use rayon::prelude::*;
    type Deepest = Option<(f32, [u32; 2], [V3<f32>; 2])>;
    let runs: Vec<(Deepest, Vec<Crossing>)> = pc
        .touching
        .par_chunks(PASS_CHECK_RUN)
        .map(|run| {
            let mut deepest: Deepest = None;
            let mut crossings = Vec::with_capacity(run.len());
            for &[i, j] in run {
                let (Some((yi, ti)), Some((yj, tj))) = (eval(i), eval(j)) else {
                    continue;
                };
                let x = yi - yj;
                let d = x.norm();
                if d < deep && deepest.is_none_or(|(dd, _, _)| d < dd) {
                    deepest = Some((d, [i, j], [yi, yj]));
                }
                if let Some(n) = crossing_direction(ti, tj) {
                    let side = x.dot(n);
                    if side.abs() >= CROSS_MIN_SIDE * r && side.abs() >= CROSS_MIN_ALIGN * d {
                        crossings.push(Crossing {
                            quad: [i, j],
                            n,
                            side,
                            dist: d,
                        });
                    }
                }
            }
            (deepest, crossings)
        })
        .collect();
    let mut deepest: Deepest = None;
    for (run_deepest, _) in &runs {
        if let Some((d, q, ys)) = *run_deepest {
            if deepest.is_none_or(|(dd, _, _)| d < dd) {
                deepest = Some((d, q, ys));
            }
        }
    }
    // The runs' crossings into one list, copied in parallel (one loop took the scarf's check, as
    // built, 2.5–3 ms on 2 cores, the copies 1.1–1.3); `next` holds the check before last's
    // list, so resizing it writes only the difference.
    let total = runs.iter().map(|(_, c)| c.len()).sum();
    let blank = Crossing {
        quad: [0; 2],
        n: V3::zero(),
        side: 0.0,
        dist: 0.0,
    };
    pc.next.resize(total, blank);
    let mut rest = &mut pc.next[..];
    let mut parts = Vec::with_capacity(runs.len());
    for (_, crossings) in &runs {
        let (part, after) = rest.split_at_mut(crossings.len());
        parts.push((part, &crossings[..]));
        rest = after;
    }
    parts
        .into_par_iter()
        .for_each(|(part, crossings)| part.copy_from_slice(crossings));
    let mut found = deepest.map(|(d, q, ys)| place(PassThroughKind::Deep, q, ys, d));
    if record_only {
        found = None;
    } else if found.is_none() {
        // The first crossed pair in order (of the last check's crossings).
        found = pc
            .crossings
            .par_iter()
            .with_min_len(PASS_CHECK_RUN)
            .find_map_first(|c| {
                let (Some((yi, ti)), Some((yj, tj))) = (eval(c.quad[0]), eval(c.quad[1])) else {
                    return None;
                };
                let x = yi - yj;
                let d = x.norm();
                if d.is_nan() || d >= CROSS_MAX_DIST * r {
                    return None;
                }
                let n = crossing_direction(ti, tj)?;
                if n.dot(c.n) < CROSS_MIN_TURN {
                    return None;
                }
                let side = x.dot(n);
                (side * c.side < 0.0
                    && side.abs() >= CROSS_MIN_SIDE * r
                    && side.abs() >= CROSS_MIN_ALIGN * d
                    && crossing_confirmed(
                        topo,
                        &pc.prev_pos,
                        pos,
                        (c.quad[0] / b) as usize,
                        (c.quad[1] / b) as usize,
                    ))
                .then(|| {
                    place(
                        PassThroughKind::Crossed {
                            previous_distance: c.dist,
                        },
                        c.quad,
                        [yi, yj],
                        d,
                    )
                })
            });
    }
    std::mem::swap(&mut pc.crossings, &mut pc.next);
    pc.prev_pos.clear();
    pc.prev_pos.extend_from_slice(pos);
    found
}

#[cfg(test)]
mod pass_through_tests {
    use super::*;
    use crate::state::Curve;

    // (Not pass-through: the one formatting helper of this module's messages.)
    #[test]
    fn lengths_in_messages_keep_four_significant_digits() {
        assert_eq!(sig4(2.59321), "2.593");
        assert_eq!(sig4(0.456789), "0.4568");
        assert_eq!(sig4(3.14159e-4), "0.0003142");
        assert_eq!(sig4(65.8412), "65.84");
        assert_eq!(sig4(0.0), "0");
    }

    const R: f32 = 0.125;
    const B: u32 = 11;

    /// One check on `pos` after a check on `before` (recorded), for the touching pair `pair`,
    /// with or without the state of the first check kept for the confirmation.
    fn second_check(
        curves: &[Curve],
        before: &[[f32; 4]],
        after: &[[f32; 4]],
        pair: [u32; 2],
        keep_state: bool,
    ) -> Option<PassThroughPlace> {
        let (topo, _) = Topology::from_curves(curves).unwrap();
        let mut pc = PassCheck {
            touching: vec![pair],
            ..PassCheck::default()
        };
        assert!(pass_through_scan(&topo, before, B, R, true, &mut pc).is_none());
        assert_eq!(
            pc.crossings.len(),
            1,
            "the pair is clearly on one side at first"
        );
        if !keep_state {
            pc.prev_pos.clear();
        }
        pass_through_scan(&topo, after, B, R, false, &mut pc)
    }

    /// Two straight yarns at right angles, one along x, one along y at height `z`.
    fn cross(z: f32) -> (Vec<Curve>, Vec<[f32; 4]>) {
        let a: Vec<[f32; 3]> = (0..7).map(|i| [i as f32 - 3.5, 0.0, 0.0]).collect();
        let b: Vec<[f32; 3]> = (0..7).map(|i| [0.0, i as f32 - 3.5, z]).collect();
        let curves = vec![open(a), open(b)];
        let (_, pos) = Topology::from_curves(&curves).unwrap();
        (curves, pos)
    }

    fn open(points: Vec<[f32; 3]>) -> Curve {
        Curve {
            points,
            closed: false,
        }
    }

    #[test]
    fn a_yarn_through_another_at_right_angles_is_confirmed() {
        // Segment 2 of each yarn holds the crossing point at u = 1/2 (quadrature point 5 of 11).
        let (curves, before) = cross(0.22);
        let (_, after) = cross(-0.22);
        let pair = [2 * B + 5, 6 * B + 5];
        let found = second_check(&curves, &before, &after, pair, true);
        assert!(
            matches!(found.map(|p| p.kind), Some(PassThroughKind::Crossed { .. })),
            "a yarn that went through the other is a crossing"
        );
    }

    /// Control points 7480–7503 of the scarf's yarn (`scenes/scarf.toml` relaxed by `yarnsim run
    /// --frames 0`, then `contact.model = exact` on the CPU path) at the end of frames 6 and 7, at
    /// its landing. The check stopped that run in frame 7 on the pair of quadrature points 82357
    /// and 82425 (here 77 and 145): 0.24 cm apart, then 0.27 cm on the other side. The two legs
    /// never came closer than 1.81 r during the frame (sampled every 20 steps), with their
    /// tangents within 6° of parallel where closest: they rolled around each other.
    const LANDING_FRAME_6: [[f32; 3]; 24] = [
        [-11.373633, 1.0995791, -4.70879],
        [-11.147201, 0.49830735, -4.35444],
        [-11.570488, 0.57828236, -4.226775],
        [-11.627704, 0.40160745, -4.4726996],
        [-11.8891, 0.54066133, -4.387238],
        [-12.140851, 0.628366, -4.7488937],
        [-11.627443, 1.1520687, -4.72625],
        [-12.034315, 1.3692635, -5.019303],
        [-12.498932, 1.1914779, -4.7932043],
        [-12.216092, 0.6352189, -4.4072742],
        [-12.61225, 0.529954, -4.2233076],
        [-12.689926, 0.36399743, -4.4710813],
        [-12.932097, 0.54107624, -4.4006324],
        [-13.209153, 0.6311579, -4.7426734],
        [-12.700847, 1.1513712, -4.6458983],
        [-13.0859785, 1.3019226, -5.003118],
        [-13.493033, 1.0956069, -4.7025557],
        [-13.250398, 0.50155956, -4.3467493],
        [-13.679931, 0.5722833, -4.2355475],
        [-13.7243185, 0.3964597, -4.484709],
        [-13.9879055, 0.5411969, -4.4173307],
        [-14.252771, 0.65955454, -4.760409],
        [-13.736114, 1.1717023, -4.6648445],
        [-14.117794, 1.321445, -5.0260854],
    ];
    const LANDING_FRAME_7: [[f32; 3]; 24] = [
        [-11.364524, 1.242996, -5.4265714],
        [-11.249862, 0.52891725, -5.3028474],
        [-11.643284, 0.58780944, -5.093999],
        [-11.684967, 0.389831, -5.326451],
        [-11.965578, 0.45766118, -5.2186303],
        [-12.196426, 0.6261346, -5.5653157],
        [-11.763175, 1.2168379, -5.5237513],
        [-12.134939, 1.4996386, -5.807323],
        [-12.518985, 1.3562942, -5.4459934],
        [-12.292544, 0.67145836, -5.3114953],
        [-12.654904, 0.51535505, -5.096568],
        [-12.681413, 0.4087847, -5.3845043],
        [-12.9703, 0.4437507, -5.283076],
        [-13.170813, 0.7136737, -5.5810733],
        [-12.610373, 1.185216, -5.62485],
        [-13.064218, 1.4501522, -5.77462],
        [-13.451023, 1.2183771, -5.4659796],
        [-13.343613, 0.5125673, -5.296693],
        [-13.751243, 0.53811365, -5.109472],
        [-13.77203, 0.36668852, -5.364711],
        [-14.052221, 0.48839504, -5.324123],
        [-14.260381, 0.74800074, -5.626016],
        [-13.716224, 1.237646, -5.575972],
        [-14.112166, 1.5002904, -5.845871],
    ];

    #[test]
    fn legs_rolling_around_each_other_at_the_scarfs_landing_are_no_crossing() {
        let curve = |p: &[[f32; 3]; 24]| vec![open(p.to_vec())];
        let (_, before) = Topology::from_curves(&curve(&LANDING_FRAME_6)).unwrap();
        let (_, after) = Topology::from_curves(&curve(&LANDING_FRAME_7)).unwrap();
        let curves = curve(&LANDING_FRAME_6);
        let pair = [7 * B, 13 * B + 2];
        let with = second_check(&curves, &before, &after, pair, true);
        assert!(
            with.is_none(),
            "rolling legs reported as a crossing: {with:?}"
        );
        // The quadrature points alone (no earlier state to confirm with) call it a crossing, as
        // the check did before it confirmed crossings at the closest approach.
        let without = second_check(&curves, &before, &after, pair, false);
        assert!(
            matches!(
                without.map(|p| p.kind),
                Some(PassThroughKind::Crossed { .. })
            ),
            "the pair's own side did not turn over"
        );
    }

    type Pair = [u32; 2];

    /// The check as one loop over the pairs (the oracle of the parallel runs): the first of the
    /// deepest pairs, the crossings in pair order, and without a deep pair the first crossing of
    /// the last check that turned over.
    fn one_loop(
        topo: &Topology,
        pos: &[[f32; 4]],
        prev: &[[f32; 4]],
        touching: &[[u32; 2]],
        crossings: &[Crossing],
    ) -> (Option<Pair>, Vec<Pair>, Option<Pair>) {
        let w: Vec<_> = (0..B)
            .map(|k| crate::spline::basis::<f32>(crate::spline::quad_param(k, B)))
            .collect();
        let dw: Vec<_> = (0..B)
            .map(|k| crate::spline::basis_deriv::<f32>(crate::spline::quad_param(k, B)))
            .collect();
        let eval = |q: u32| {
            let seg = &topo.segments[(q / B) as usize];
            let k = (q % B) as usize;
            point_and_tangent(pos, seg.cp, w[k], dw[k]).unwrap()
        };
        let mut deepest: Option<(f32, Pair)> = None;
        let mut next: Vec<Pair> = Vec::new();
        for &[i, j] in touching {
            let ((yi, ti), (yj, tj)) = (eval(i), eval(j));
            let x = yi - yj;
            let d = x.norm();
            if d < PASS_THROUGH_DEPTH * R && deepest.is_none_or(|(dd, _)| d < dd) {
                deepest = Some((d, [i, j]));
            }
            if let Some(n) = crossing_direction(ti, tj) {
                let side = x.dot(n);
                if side.abs() >= CROSS_MIN_SIDE * R && side.abs() >= CROSS_MIN_ALIGN * d {
                    next.push([i, j]);
                }
            }
        }
        let crossed = crossings.iter().find(|c| {
            let ((yi, ti), (yj, tj)) = (eval(c.quad[0]), eval(c.quad[1]));
            let x = yi - yj;
            let d = x.norm();
            let Some(n) = crossing_direction(ti, tj) else {
                return false;
            };
            let side = x.dot(n);
            d < CROSS_MAX_DIST * R
                && n.dot(c.n) >= CROSS_MIN_TURN
                && side * c.side < 0.0
                && side.abs() >= CROSS_MIN_SIDE * R
                && side.abs() >= CROSS_MIN_ALIGN * d
                && crossing_confirmed(
                    topo,
                    prev,
                    pos,
                    (c.quad[0] / B) as usize,
                    (c.quad[1] / B) as usize,
                )
        });
        (deepest.map(|(_, q)| q), next, crossed.map(|c| c.quad))
    }

    /// A hundred crossings of two short yarns (`cross`) side by side, every quadrature pair of
    /// their crossing segments listed (12,100 pairs: twelve of the check's parallel runs, `PASS_CHECK_RUN`),
    /// crossing `p` at height `z(p)`; the crossing quadrature pair of crossing `p`.
    fn crossings(z: impl Fn(usize) -> f32) -> (Topology, Vec<[f32; 4]>, Vec<Pair>, Vec<Pair>) {
        let mut curves = Vec::new();
        for p in 0..100 {
            let x0 = 10.0 * p as f32;
            curves.push(open(
                (0..7).map(|i| [x0 + i as f32 - 3.5, 0.0, 0.0]).collect(),
            ));
            curves.push(open((0..7).map(|i| [x0, i as f32 - 3.5, z(p)]).collect()));
        }
        let (topo, pos) = Topology::from_curves(&curves).unwrap();
        let (sa, sb) = (|p: u32| 8 * p + 2, |p: u32| 8 * p + 6);
        let touching = (0..100u32)
            .flat_map(|p| {
                (0..B).flat_map(move |ka| (0..B).map(move |kb| [sa(p) * B + ka, sb(p) * B + kb]))
            })
            .collect();
        let centre = (0..100).map(|p| [sa(p) * B + 5, sb(p) * B + 5]).collect();
        (topo, pos, touching, centre)
    }

    #[test]
    fn parallel_runs_of_pairs_find_what_one_loop_finds() {
        // Deep pairs in the first and second runs, the deepest in the second (crossing 60, pairs
        // 7,260 on), tied by a later one (crossing 80): the first of the deepest is the place.
        let depth = |p: usize| match p {
            10 => 0.05,
            60 | 80 => 0.03,
            _ => 0.22,
        };
        let (topo, pos, touching, centre) = crossings(depth);
        let mut pc = PassCheck {
            touching: touching.clone(),
            ..PassCheck::default()
        };
        let found = pass_through_scan(&topo, &pos, B, R, false, &mut pc).expect("deep pairs");
        let (deepest, next, _) = one_loop(&topo, &pos, &[], &touching, &[]);
        assert_eq!(found.kind, PassThroughKind::Deep);
        assert_eq!(Some(found.quadrature), deepest);
        assert_eq!(found.quadrature, centre[60]);
        let listed: Vec<[u32; 2]> = pc.crossings.iter().map(|c| c.quad).collect();
        assert_eq!(listed, next, "the crossings in pair order");
        assert!(listed.len() >= 100, "each crossing's centre pair at least");

        // Crossings 30 and 70 pass through between two checks: the first in order is the place.
        let (_, before, _, _) = crossings(|_| 0.22);
        let (_, after, _, _) = crossings(|p| if p == 30 || p == 70 { -0.22 } else { 0.22 });
        let mut pc = PassCheck {
            touching: touching.clone(),
            ..PassCheck::default()
        };
        assert!(pass_through_scan(&topo, &before, B, R, true, &mut pc).is_none());
        let last = pc.crossings.clone();
        let found = pass_through_scan(&topo, &after, B, R, false, &mut pc).expect("crossed");
        let (deepest, next, crossed) = one_loop(&topo, &after, &before, &touching, &last);
        assert_eq!(deepest, None);
        assert!(matches!(found.kind, PassThroughKind::Crossed { .. }));
        assert_eq!(Some(found.quadrature), crossed);
        // (Of crossing 30's segments: an earlier pair of them than the centre turned over too.)
        assert_eq!(found.quadrature.map(|q| q / B), centre[30].map(|q| q / B));
        let listed: Vec<[u32; 2]> = pc.crossings.iter().map(|c| c.quad).collect();
        assert_eq!(listed, next);
    }
}
