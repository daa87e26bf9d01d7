//! The GPU time step: the stages of DESIGN §6 as a fixed list of kernel dispatches over buffers that
//! stay on the GPU.
//!
//! [`GpuSim`] is built from a CPU [`Sim`] (which did the set-up: topology, masses, rod state, pins,
//! damping blocks, obstacles) and uploads its arrays once, each under the binding name the kernels
//! use (`pos`, `vel`, `force`, `bends`, …; see [`crate::shaders`]). Pipelines and bind groups are made
//! once (and again only when a batch is rerun with more room, below). With `contact.model = exact`
//! the exact path's dispatches ([`crate::contact::exact_gpu`]) come between `bend_forces` (the
//! CPU path's `bend_gradient` and `rod_forces` in one dispatch) and `integrate_velocity`; its
//! static tables and grid origin come from one detection on the CPU twin.
//! With `contact.model = acl` ACL's whole step ([`crate::acl::gpu::AclGpu`]) goes there instead: its
//! per-step records (the scheduler's `sched_step`, the `rebuild` uniform) come from two more rings,
//! its persistent state is part of the batch's snapshot, its counters are read back with each step's,
//! and it compacts its model pools between batches. The buffer copies it records between stages
//! split the step's compute pass; those before its first dispatch and after its last are recorded
//! with the step's own copies at its start and end ([`StepCopies`]), where they split none.
//!
//! **Batches.** [`GpuSim::steps`] submits up to [`MAX_BATCH`] steps at once: each step's `params`
//! (step index, damping phase, grid frame) and placed obstacles are written into ring buffers and
//! copied into place by the command encoder, `counters` are reset from a fresh copy before each step
//! and copied out after it, so the host reads every step's flags with one readback per batch and
//! reports an error with the step it happened in. The first step of a batch is timed per kernel
//! (timestamp queries, where the adapter has them), in a frame only that of its first batch.
//! [`GpuSim::advance`] (frames, the relaxation)
//! starts with batches of [`FIRST_BATCH`] steps and doubles them after each batch that ran once (up
//! to [`MAX_BATCH`], or [`TRIAL_BATCH`] while one of ACL's budgets is cut on trial), back to the
//! first length after a rerun.
//!
//! **Reruns.** A batch starts by copying aside the state that carries over between steps
//! (positions, velocities, rod frames and rest state). When a step needed more length-projection
//! iterations than are encoded ([`LENGTH_BUDGET`]) or a contact output overflowed its capacity, the
//! state is restored, the dispatches are rebuilt with more room, and the batch runs again: bitwise
//! the result of having had the room from the start.
//!
//! The CPU `Sim` stays inside as the host's view: its obstacle keyframes, time and step count drive
//! the per-step uniforms, and [`GpuSim::download`] refreshes its positions and velocities (output
//! frames, capture, statistics, the end-of-frame pass-through check), so every writer of the CPU path
//! (BCC, OBJ, capture) works unchanged on a GPU run.
//!
//! **Run-ahead.** The pass-through check is host work of tens of milliseconds on a garment; with
//! [`GpuSim::set_run_ahead`] a frame runs it on another thread while the GPU runs the next frame's
//! first batches, and puts the host's `Sim` back at its own end before it returns.

use crate::acl::gpu::{self as acl_gpu, AclCaps, AclGpu, AclStepCounters, AclVariant, Op};
use crate::acl::AclContact;
use crate::balls::{self, BALL_CONTACT_LOOP_LIMIT};
use crate::budget::QuietCut;
use crate::checkpoint::{CheckpointError, StateReader, StateWriter};
use crate::contact::exact_gpu::{self, ExactGpu, ExactTables};
use crate::contact::grid;
use crate::contact::{check_counters, ExactContact};
use crate::gpu::Gpu;
use crate::layout::SegmentContact;
use crate::layout::{
    BallHit, Counters, ObstacleShape, Params, ERROR_LENGTH_NOT_CONVERGED, ERROR_NAN_BALL,
    ERROR_NAN_FORCE, ERROR_NAN_POSITION, ERROR_NAN_VELOCITY,
};
use crate::length::{LengthGpu, LengthScratch};
use crate::pipelines::{read_mapped, Buffers, Grid, PipelineError, Pipelines};
use crate::scan::GpuScan;
use crate::scene::{ContactModel, ContactParams};
use crate::shaders;
use crate::sim::ContactError;
use crate::sim::{frame_totals, FrameStats, Sim};
use std::mem::size_of;
use std::time::Instant;

/// Why the GPU step could not be set up or run.
#[derive(Debug, thiserror::Error)]
pub enum GpuStepError {
    #[error(transparent)]
    Pipeline(#[from] PipelineError),
    #[error(transparent)]
    DampingBlocks(#[from] crate::step::DampingBlockError),
    #[error(transparent)]
    Sim(#[from] crate::sim::SimError),
    /// A call that reads or steps the GPU's state between frames while the last frame ran
    /// `steps` of the next one ahead ([`GpuSim::set_run_ahead`]), or a next frame shorter than
    /// those steps: the caller's error.
    #[error("step {step}: the GPU step ran {steps} steps of the next frame ahead, so until that frame runs its state is neither read nor stepped, nor the frame shortened (turn run-ahead off for the frame before)")]
    Ahead { step: u64, steps: usize },
    #[error("the scene needs {what} = {needed}, but the adapter {adapter:?} offers {limit} ({limit_name})")]
    Limit {
        what: &'static str,
        needed: u64,
        limit: u64,
        limit_name: &'static str,
        adapter: String,
    },
    /// Worded as the CPU path's `SimError::NotFinite`.
    #[error("step {step}: the {what} of control point {point} (yarn {yarn}, point {local} of it) is not finite; try a smaller simulation.dt or check the scene's stiffnesses")]
    NotFinite {
        step: u64,
        what: &'static str,
        point: u32,
        yarn: usize,
        local: u32,
    },
    #[error("step {step}: the length constraints {}; the time step is probably too large: try a smaller simulation.dt", length_failure(site, *iterations, *error))]
    LengthProjection {
        step: u64,
        /// The yarn of the first edge not within the tolerance (`Counters::first_unconverged_edge`),
        /// and the indices in that yarn of the edge's control points.
        site: Option<(usize, [u32; 2])>,
        iterations: u32,
        error: f32,
    },
    /// As the CPU path's `SimError::Contact`: the cause follows in the error's chain.
    #[error("step {step}: contact model failed")]
    Contact {
        step: u64,
        #[source]
        source: ContactError,
    },
    #[error("step {step}: the velocity of ball {ball} is not finite; try a smaller simulation.dt or check the balls' masses")]
    BallNotFinite { step: u64, ball: u32 },
    #[error("{balls} free balls and {} need up to {iterations} loop iterations in the one GPU thread of ball_contact, more than its limit of {limit} (lavapipe ends a GPU thread after 65,535); run this scene with --backend cpu", count(*obstacles, "obstacle"))]
    TooManyBalls {
        balls: usize,
        obstacles: usize,
        iterations: u64,
        limit: u64,
    },
    #[error("GPU error at step {step}: {message}")]
    Device { step: u64, message: String },
    /// A limit of the GPU step's kernels that the CPU path does not have.
    #[error("step {step}: {message}; the GPU step stops here, the CPU path has no such limit")]
    KernelLimit { step: u64, message: String },
    #[error(transparent)]
    Checkpoint(#[from] CheckpointError),
    #[error(
        "step {step}: the contact capacity {what} needs a buffer of {bytes} bytes{counted}, more \
         than this GPU binds (max_storage_buffer_binding_size: {limit} bytes); the scene's \
         contacts do not fit this adapter (use a GPU that offers a larger limit, or --backend \
         cpu)",
        counted = count_note(.count_bytes)
    )]
    Binding {
        step: u64,
        what: &'static str,
        bytes: u64,
        limit: u64,
        /// Where a count overflowed it: the bytes of that count alone (`bytes` add the room a
        /// growth gives).
        count_bytes: Option<u64>,
    },
}

/// The GPU's length projection's failure in words, as the CPU path's reads where it names a yarn
/// (`site`): the yarn and the control points of its first edge not within the tolerance. The
/// error is the cloth's largest, which the GPU counts, not the yarn's.
fn length_failure(site: &Option<(usize, [u32; 2])>, iterations: u32, error: f32) -> String {
    let did = format!("did not converge in {iterations} Fast Projection iterations");
    match site {
        Some((yarn, [a, b])) => format!(
            "of yarn {yarn} {did} (largest relative error {error:.3e} on the cloth, first beyond \
             the tolerance between the yarn's control points {a} and {b})"
        ),
        None => format!("{did} (largest relative error {error:.3e} on the cloth)"),
    }
}

/// The [`GpuStepError::Binding`] of a size `(what, bytes)` that cannot grow on a device binding
/// `limit` bytes, at `step`, with the bytes of its count where known.
fn binding_error(
    step: u64,
    limit: u64,
    count_bytes: impl FnOnce(&'static str) -> Option<u64>,
) -> impl FnOnce((&'static str, u64)) -> GpuStepError {
    move |(what, bytes)| GpuStepError::Binding {
        step,
        what,
        bytes,
        limit,
        count_bytes: count_bytes(what),
    }
}

/// `n` and `noun`, the noun plural unless `n` is 1 ("1 obstacle", "3 obstacles").
fn count(n: usize, noun: &str) -> String {
    format!("{n} {noun}{}", if n == 1 { "" } else { "s" })
}

/// [`GpuStepError::Binding`]'s words on the count that overflowed, if known.
fn count_note(count_bytes: &Option<u64>) -> String {
    count_bytes.map_or(String::new(), |b| {
        format!(" (its count alone: {b} bytes; a growth adds room)")
    })
}

/// The exact contact path of a GPU step: its buffers and dispatches, the grid origin, and the
/// static tables it is rebuilt from when a capacity grows.
struct ExactState {
    path: ExactGpu,
    origin: [f32; 3],
    cell: f32,
    tables: (Vec<[f32; 4]>, Vec<f32>, Vec<SegmentContact>),
}

/// Why a batch must run again.
enum Rerun {
    /// A step needed this many length iterations, more than were encoded.
    Length(u32),
    /// A contact output overflowed: the capacities (entries, candidates, records) to rebuild with,
    /// and the step's counts.
    Capacity {
        caps: (u32, u32, u32),
        counts: (u32, u32, u32),
    },
    /// ACL's step needs more room or more rounds.
    Acl(Box<AclRerun>),
    /// The yarn–ball contacts overflowed `ball_hits`: the capacity to rebuild with.
    BallHits(u32),
}

/// [`Rerun::Acl`]'s record (boxed: three sets of capacities): ACL's step `step` (of the batch)
/// needs more room or more rounds; the capacities and budgets to rebuild with (`caps`: with room
/// ahead of need; `needed`: what the step's counts asked for, [`AclCaps::grown_within`]), and the
/// step's `counts`.
struct AclRerun {
    caps: AclCaps,
    needed: AclCaps,
    counts: AclCaps,
    step: usize,
}

/// A buffer copy recorded between compute passes (ACL's counts the last step left, moved into
/// uniforms at the step's start; its compacted set table, at its end).
#[derive(Clone)]
struct CopyOp {
    src: wgpu::Buffer,
    src_offset: u64,
    dst: wgpu::Buffer,
    dst_offset: u64,
    size: u64,
}

/// Steps of a batch recorded (in parallel) and submitted together; the GPU starts on them while
/// the host records the next chunk.
const RECORD_CHUNK: usize = 16;

/// What recording one step of a batch reads: the parts of [`GpuSim`] that may be shared between
/// the threads recording a batch's steps (the CPU `Sim` may not).
struct StepRecorder<'a> {
    device: &'a wgpu::Device,
    pipelines: &'a Pipelines,
    buffers: &'a Buffers,
    dispatches: &'a [Dispatch],
    copies: &'a StepCopies,
    readback: &'a wgpu::Buffer,
    param_ring: &'a wgpu::Buffer,
    obstacle_ring: &'a wgpu::Buffer,
    fresh_counters: &'a wgpu::Buffer,
    acl: Option<&'a AclState>,
    /// Per step of the batch: the upgraded list it is recorded with, if any.
    upgraded: Vec<Option<&'a Upgraded>>,
    snapshots: &'a [wgpu::Buffer],
    queries: Option<&'a KernelQueries>,
}

impl StepRecorder<'_> {
    /// Records step `s` of a batch of `k` into `enc`: before the first, the snapshot copies; the
    /// step's ring copies and dispatches; its counters into the readback buffer; after the last,
    /// the timestamp resolve.
    fn record_step(
        &self,
        enc: &mut wgpu::CommandEncoder,
        s: u64,
        k: u64,
        obstacle_bytes: u64,
        ts_at: u64,
        acl_at: u64,
    ) -> Result<(), GpuStepError> {
        const PARAMS_BYTES: u64 = size_of::<Params>() as u64;
        let bufs = &self.buffers;
        let (params_buf, obstacles_buf, counters_buf) = (
            bufs.get("params").unwrap(),
            bufs.get("obstacles").unwrap(),
            bufs.get("counters").unwrap(),
        );
        let enc = &mut *enc;
        if s == 0 {
            for (name, snap) in SNAPSHOT.iter().zip(self.snapshots) {
                enc.copy_buffer_to_buffer(bufs.get(name).unwrap(), 0, snap, 0, snap.size());
            }
            if let Some(acl) = &self.acl {
                acl.path.copy_state(enc, false);
            }
        }
        let upgraded = self.upgraded[s as usize];
        if let Some(acl) = &self.acl {
            const SU: u64 = size_of::<crate::layout::SchedUniform>() as u64;
            const RU: u64 = size_of::<crate::acl::rebuild::RebuildParams>() as u64;
            let (sched_step, rebuild) = (
                acl.path.buffer("sched_step").expect("made by AclGpu"),
                match upgraded {
                    Some(u) => u.variant.rebuild(),
                    None => acl.path.buffer("rebuild").expect("made by AclGpu"),
                },
            );
            enc.copy_buffer_to_buffer(&acl.sched_ring, s * SU, sched_step, 0, SU);
            enc.copy_buffer_to_buffer(&acl.rebuild_ring, s * RU, rebuild, 0, RU);
        }
        let copies = upgraded.map_or(self.copies, |u| &u.copies);
        // After the ring copies: they write whole uniforms whose counts these patch.
        record_copies(enc, &copies.lead);
        enc.copy_buffer_to_buffer(
            self.param_ring,
            s * PARAMS_BYTES,
            params_buf,
            0,
            PARAMS_BYTES,
        );
        if obstacle_bytes > 0 {
            enc.copy_buffer_to_buffer(
                self.obstacle_ring,
                s * obstacle_bytes,
                obstacles_buf,
                0,
                obstacle_bytes,
            );
        }
        enc.copy_buffer_to_buffer(self.fresh_counters, 0, counters_buf, 0, COUNTERS_BYTES);
        if let (0, Some(q)) = (s, self.queries) {
            // The timed step: a pass per dispatch, each with its two timestamps.
            for (i, d) in self.dispatches.iter().enumerate() {
                record_copies(enc, &d.copies);
                let (set, at) = q.slot(i);
                let mut pass = enc.begin_compute_pass(&wgpu::ComputePassDescriptor {
                    label: Some(d.kernel),
                    timestamp_writes: Some(wgpu::ComputePassTimestampWrites {
                        query_set: set,
                        beginning_of_pass_write_index: Some(at),
                        end_of_pass_write_index: Some(at + 1),
                    }),
                });
                self.pipelines
                    .dispatch_grid(&mut pass, d.kernel, &d.bind_group, &d.grid)?;
            }
        } else {
            // One pass for the step (wgpu orders the dispatches inside it and puts the
            // barriers between them that their storage buffers need), split where ACL copies
            // a count between stages.
            let ds = upgraded.map_or(self.dispatches, |u| &u.dispatches);
            let mut i = 0;
            while i < ds.len() {
                record_copies(enc, &ds[i].copies);
                let mut pass = enc.begin_compute_pass(&wgpu::ComputePassDescriptor {
                    label: Some("step"),
                    timestamp_writes: None,
                });
                loop {
                    let d = &ds[i];
                    self.pipelines
                        .dispatch_grid(&mut pass, d.kernel, &d.bind_group, &d.grid)?;
                    i += 1;
                    if i == ds.len() || !ds[i].copies.is_empty() {
                        break;
                    }
                }
            }
        }
        record_copies(enc, &copies.tail);
        if let Some(acl) = &self.acl {
            acl.path
                .copy_counters(enc, self.readback, acl_at + s * ACL_COUNTERS_BYTES);
        }
        enc.copy_buffer_to_buffer(
            counters_buf,
            0,
            self.readback,
            s * COUNTERS_BYTES,
            COUNTERS_BYTES,
        );
        if s + 1 == k {
            if let Some(q) = self.queries {
                q.resolve(enc, self.readback, ts_at);
            }
        }
        Ok(())
    }
}

/// The timed step's timestamp queries: two a dispatch (its pass's start and end), in sets of
/// [`QUERIES_PER_SET`], and the buffer they resolve into, in dispatch order.
struct KernelQueries {
    sets: Vec<wgpu::QuerySet>,
    count: u32,
    resolve: wgpu::Buffer,
}

/// wgpu's most queries in a set (`QUERY_SET_MAX_QUERIES`). A step of more than half as many
/// dispatches (the afghan's on lavapipe, in pages: 4,113) takes several sets; one set left it
/// untimed until 2026-12-06.
const QUERIES_PER_SET: u32 = wgpu::QUERY_SET_MAX_QUERIES;
const _: () =
    assert!((8 * QUERIES_PER_SET as u64).is_multiple_of(wgpu::QUERY_RESOLVE_BUFFER_ALIGNMENT));

impl KernelQueries {
    fn new(device: &wgpu::Device, dispatches: usize) -> KernelQueries {
        let count = 2 * dispatches as u32;
        let sets = (0..count.div_ceil(QUERIES_PER_SET))
            .map(|j| {
                device.create_query_set(&wgpu::QuerySetDescriptor {
                    label: Some("kernel timestamps"),
                    ty: wgpu::QueryType::Timestamp,
                    count: (count - j * QUERIES_PER_SET).min(QUERIES_PER_SET),
                })
            })
            .collect();
        let resolve = device.create_buffer(&wgpu::BufferDescriptor {
            label: Some("kernel timestamps"),
            size: 8 * count as u64,
            usage: wgpu::BufferUsages::QUERY_RESOLVE | wgpu::BufferUsages::COPY_SRC,
            mapped_at_creation: false,
        });
        KernelQueries {
            sets,
            count,
            resolve,
        }
    }

    /// Dispatch `i`'s set and the index of its first query there.
    fn slot(&self, i: usize) -> (&wgpu::QuerySet, u32) {
        let q = 2 * i as u32;
        let j = q / QUERIES_PER_SET;
        (&self.sets[j as usize], q - j * QUERIES_PER_SET)
    }

    /// Resolves every set into `resolve` (set `j` at query `j · QUERIES_PER_SET`, a multiple of
    /// the 256-byte resolve alignment) and copies it into `readback` at `at`.
    fn resolve(&self, enc: &mut wgpu::CommandEncoder, readback: &wgpu::Buffer, at: u64) {
        for (j, set) in self.sets.iter().enumerate() {
            let first = j as u32 * QUERIES_PER_SET;
            let n = (self.count - first).min(QUERIES_PER_SET);
            enc.resolve_query_set(set, 0..n, &self.resolve, 8 * first as u64);
        }
        enc.copy_buffer_to_buffer(&self.resolve, 0, readback, at, self.resolve.size());
    }

    /// The bytes read back.
    fn bytes(&self) -> u64 {
        self.resolve.size()
    }
}

/// One recorded dispatch of the step, and the buffer copies that must run before it (between
/// compute passes).
#[derive(Clone)]
struct Dispatch {
    kernel: &'static str,
    bind_group: wgpu::BindGroup,
    grid: Grid,
    copies: Vec<CopyOp>,
    /// The CPU path's phase it does the work of (an index of [`crate::sim::PHASES`]; the contact
    /// model's dispatches are [`PHASE_CONTACT`]'s, and their time is the step's contact time),
    /// and with ACL its stage (an index of [`acl_gpu::STAGE_KEYS`]): the step's times in the CPU
    /// path's `--stats` keys.
    phase: usize,
    stage: Option<usize>,
}

impl Dispatch {
    /// One of the contact model's dispatches.
    fn contact(&self) -> bool {
        self.phase == PHASE_CONTACT
    }
}

/// The CPU path's phases ([`crate::sim::PHASES`]), by index.
const PHASE_FORCES: usize = 0;
const PHASE_CONTACT: usize = 1;
const PHASE_CONSTRAINTS: usize = 2;
const PHASE_DAMPING_OBJECTS: usize = 3;
const PHASE_FRAMES: usize = 4;

/// A step's dispatch list with ACL's operations for other budgets than the driver's (more rebuild
/// rounds, merge passes or label rounds, coalescing, the newcomer search): what a step of a batch
/// that needed more than the rest is recorded with on the rerun ([`GpuSim::upgrade`]).
struct Upgraded {
    caps: AclCaps,
    dispatches: Vec<Dispatch>,
    copies: StepCopies,
    variant: AclVariant,
}

/// ACL's copies before its first dispatch (counts the last step left final, into this step's
/// uniforms) and after its last (the compacted table back): recorded with the step's own copies
/// of its uniforms and counters, outside its compute passes, so that they end none.
#[derive(Clone, Default)]
struct StepCopies {
    lead: Vec<CopyOp>,
    tail: Vec<CopyOp>,
}

/// The ACL contact path of a GPU step: its driver, the rings of its per-step records, and the
/// frame's sums of its counters.
struct AclState {
    path: AclGpu,
    /// Per step of a batch: the scheduler's `sched_step` record and the `rebuild` uniform.
    sched_ring: wgpu::Buffer,
    rebuild_ring: wgpu::Buffer,
    /// Steps the GPU model has completed (its own step count: it starts with no sets).
    steps: u64,
    /// Sums over the frame's steps: sets, rebuilds, rebuild fractions, entries tracked, examined,
    /// processed, steps with a segment entering a cell, new touching pairs, the sets' touching
    /// pairs; and the steps compacting the pools.
    frame: [f64; 9],
    compactions: u32,
}

/// Bytes of one step's ACL counters.
const ACL_COUNTERS_BYTES: u64 = size_of::<AclStepCounters>() as u64;

/// What a [`GpuSim`] has learned about a run and a `GpuSim` continuing it starts from
/// ([`GpuSim::tuning`], [`GpuSim::set_tuning`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Tuning {
    /// Length-projection iterations encoded per step ([`LENGTH_BUDGET`]).
    pub length_budget: u32,
    /// Steps of the next batch of [`GpuSim::advance`] ([`FIRST_BATCH`]).
    pub batch_limit: usize,
    /// Whether batches time a step per kernel ([`GpuSim::set_kernel_timing`]).
    pub kernel_timing: bool,
}

/// What a [`GpuSim`] learned of a scene that another `GpuSim` of the same cloth starts from
/// ([`GpuSim::learned`], [`GpuSim::start_from`]): the capacities its contact buffers grew to and
/// its ACL budgets, and its [`Tuning`]. The relaxation hands its last stage's on to each next
/// stage and to the frames' step: at the same radius a fresh contact model's first step needs
/// what the last stage's first step needed, and each rerun that finds it again costs a step
/// (the afghan on lavapipe: 5 minutes of reruns at its frames' first steps, capacities the
/// relaxation had already grown).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Learned {
    /// The exact path's capacities ([`GpuSim::contact_capacities`]).
    pub contact: Option<(u32, u32, u32)>,
    /// ACL's capacities and budgets ([`GpuSim::acl_capacities`]).
    pub acl: Option<AclCaps>,
    pub tuning: Tuning,
}

/// Per-kernel GPU time (from timestamp queries) and counts of one frame.
#[derive(Clone, Debug, Default)]
pub struct GpuFrameTimes {
    /// Kernel name and milliseconds per step (summed over its dispatches; the mean over the timed
    /// steps of the frame).
    pub kernel_ms: Vec<(&'static str, f64)>,
    pub dispatches_per_step: u32,
    /// Counters and timestamps read back, per step (downloads of the state for output excluded).
    pub readback_bytes_per_step: f64,
    /// The contact model's kernels, milliseconds per step (0 without timestamp queries).
    pub contact_ms: f64,
    /// Steps whose kernels were timed: the first of the frame's first batch (a batch run on its
    /// own, [`GpuSim::steps`], times its first step).
    pub timed_steps: u32,
    /// Batches the frame's steps ran in ([`GpuSim::advance`]).
    pub batches: u32,
    /// Whether a step of the frame was timed (false without timestamp queries, with timing off,
    /// or when the frame's every batch started with an upgraded step; then `kernel_ms` is empty).
    pub timed: bool,
    /// Host milliseconds per step spent recording and submitting the frame's batches (reruns
    /// included), and waiting for them to finish: what wgpu costs on the CPU per dispatch shows
    /// in the first.
    pub host_record_ms: f64,
    pub host_wait_ms: f64,
    /// The part of `host_record_ms` spent in `Queue::submit`.
    pub host_submit_ms: f64,
    /// Host milliseconds per step in the frame's pass-through checks (`Sim::check_pass_through`: a
    /// grid search of the downloaded state and the touching pairs' rules, at the frame's end, and
    /// at its start in a run's first checked frame), through which the GPU waits unless the frame
    /// runs ahead ([`GpuSim::set_run_ahead`]; then `host_check_wait_ms` is what it still waits).
    /// On the relaxed scarf this was most of what an H200 frame spent outside its batches
    /// (2026-11-27: some 58 ms a 540-step frame for exact contact, 0.11 ms a step; `none`,
    /// without the check, 1 ms).
    pub host_check_ms: f64,
    /// Host milliseconds per step the frame waited for its pass-through check, with run-ahead
    /// what the check took past the batches run meanwhile (without it, `host_check_ms`).
    pub host_check_wait_ms: f64,
    /// Steps of the next frame run while the pass-through check ran ([`GpuSim::set_run_ahead`]).
    pub ahead_steps: usize,
}

/// What a frame ran of the next one while its pass-through check ran ([`GpuSim::set_run_ahead`]):
/// its steps and their error, if one failed; the host's step, time and placed obstacles after
/// them (put back at the frame's end meanwhile); the next frame's start time and first step.
#[derive(Debug)]
struct Ahead {
    steps: usize,
    error: Option<GpuStepError>,
    sim_steps: u64,
    sim_time: f64,
    obstacles: Vec<ObstacleShape>,
    t0: f64,
    first_step: u64,
}

/// A batch of steps that ran and runs again ([`crate::gpu::Gpu::on_rerun`]): its first step, its
/// length, the length of the next attempt (up to the step that needed more; the rest follow as
/// another batch), how long the failed attempt took (recording, the GPU's work and the readback),
/// and why it reruns, in words (what grew, from how much to how much, or which budget was raised).
#[derive(Clone, Debug)]
pub struct RerunNotice {
    pub first_step: u64,
    pub steps: usize,
    pub again: usize,
    pub attempt: std::time::Duration,
    pub why: String,
}

/// The simulation running on the GPU.
pub struct GpuSim {
    /// The host's view (see the module doc); positions and velocities are stale until
    /// [`GpuSim::download`].
    pub sim: Sim,
    device: wgpu::Device,
    queue: wgpu::Queue,
    adapter_name: String,
    pipelines: Pipelines,
    buffers: Buffers,
    dispatches: Vec<Dispatch>,
    /// ACL's copies at the start and end of the step (with `dispatches`).
    step_copies: StepCopies,
    /// Staging buffer for the `counters` of each step of a batch and the timed step's timestamps.
    readback: wgpu::Buffer,
    /// Per step of a batch: its `params`, its placed obstacles; and the `counters` a step starts from.
    param_ring: wgpu::Buffer,
    obstacle_ring: wgpu::Buffer,
    fresh_counters: wgpu::Buffer,
    /// The length projection's per-dispatch uniforms (its dispatches are in the list).
    length_uniforms: Vec<wgpu::Buffer>,
    length_levels: Vec<crate::length::Level>,
    /// Length-projection iterations encoded per step (see [`LENGTH_BUDGET`]).
    length_budget: u32,
    /// The quiet stretch of the length budget ([`LENGTH_BUDGET`]), and whether the budget was set
    /// by [`GpuSim::set_length_budget`] (then it is never cut).
    length_cut: QuietCut,
    length_pinned: bool,
    color_ranges: Vec<wgpu::Buffer>,
    /// Tiles of `frame_solve` (`rod::frame_tiles`), when the rod has them: the material frames
    /// after `frame_transport` are then one dispatch, not `bend_twist`, `frame_sweeps` × 3 of
    /// `theta_sweep` and `plasticity`.
    frame_tiles: Option<u32>,
    /// The same for the colours of the ties (`tie_projection`).
    tie_color_ranges: Vec<wgpu::Buffer>,
    /// The exact contact path, when the scene has `contact.model = "exact"`.
    exact: Option<ExactState>,
    /// The ACL path, when the scene has `contact.model = "acl"`.
    acl: Option<AclState>,
    /// Free balls: the scan of `ball_hit_offsets`, and the records `ball_hits` holds.
    ball_scan: Option<GpuScan>,
    ball_hit_capacity: u32,
    /// Batches rerun because a variable-size contact output overflowed its capacity.
    grows: u32,
    /// The most each of the exact path's counts (entries, candidates, records) reached over the
    /// completed steps ([`GpuSim::exact_peak_counts`]).
    exact_peak: (u32, u32, u32),
    /// Touching quadrature pairs and candidate segment pairs summed over the frame's steps.
    frame_touching: u64,
    frame_candidates: u64,
    /// Touching quadrature pairs of each step of the last batch.
    batch_touching: Vec<u32>,
    /// ACL: contact sets and rebuilds of each step of the last batch.
    batch_acl: Vec<[u32; 3]>,
    /// Copies of the [`SNAPSHOT`] buffers taken at the start of the running batch.
    snapshots: Vec<wgpu::Buffer>,
    /// Batches rerun so far, for any reason (a length budget, a capacity, ACL's rounds or passes).
    reruns: u32,
    /// The running batch's steps that ACL records with more budgets than the rest, and the
    /// budgets ([`GpuSim::upgrade`]); emptied when the batch completes.
    upgrades: Vec<(usize, AclCaps)>,
    /// Dispatch lists made for upgrades, kept until the step's list is rebuilt.
    upgraded: Vec<Upgraded>,
    /// Steps run with upgraded budgets, and dispatches recorded (failed attempts included), in
    /// the current frame.
    frame_upgraded_steps: u64,
    frame_dispatches_run: u64,
    /// Compute passes recorded in the current frame (failed attempts included).
    frame_passes_run: u64,
    /// Steps run with upgraded budgets so far, and reruns that upgraded a step (also counted in
    /// `reruns`).
    upgraded_steps: u64,
    upgrade_reruns: u32,
    /// Completed batches in a row that ran once (no rerun) since ACL's capacities or budgets last
    /// changed; upgrades are tried only after [`UPGRADE_AFTER_CLEAN`].
    clean_batches: u32,
    /// [`UPGRADE_AFTER_CLEAN`] unless set ([`GpuSim::set_upgrade_after`]).
    upgrade_after: u32,
    /// Steps of the batches that were rerun, counted once per failed attempt: the steps the GPU
    /// ran for nothing.
    rerun_steps: u64,
    /// Batch reruns so far by cause (`length`, `capacity`, and ACL's
    /// [`acl_gpu::rerun_causes`]; a rerun may have several).
    rerun_causes: std::collections::BTreeMap<&'static str, u32>,
    /// Where reruns are reported ([`crate::gpu::Gpu::on_rerun`]).
    rerun_sink: crate::gpu::RerunSink,
    /// The most steps [`GpuSim::advance`] puts in its next batch ([`FIRST_BATCH`] after a rerun,
    /// doubled after each full batch that ran once, up to [`GpuSim::batch_cap`]).
    batch_limit: usize,
    /// Batches completed in the current frame.
    frame_batches: u32,
    /// Whether a frame is running ([`GpuSim::frame_with`]): then only its first batch is timed.
    in_frame: bool,
    /// Whether a frame runs the next frame's first steps while its pass-through check runs
    /// ([`GpuSim::set_run_ahead`]), and those steps, run by the last frame.
    run_ahead: bool,
    ahead: Option<Ahead>,
    /// The threads the check runs on meanwhile (made on first use), apart from rayon's global
    /// pool: a worker of a pool takes up work from outside the pool only once no task of its
    /// own pool's is left to steal, so the batches' recording, on the global pool, would wait
    /// for the end of the check's parallel loop of the moment. (On the 2-core machine, the
    /// relaxed scarf's exact check of 60–150 ms: the first batch ahead was submitted 0.7–5.7 ms
    /// into it on the global pool, 0.8–2.5 ms with this one; a hardware GPU's batches of a few
    /// milliseconds would wait like that again and again.)
    check_pool: Option<std::sync::Arc<rayon::ThreadPool>>,
    /// Capacity growths made between batches, ahead of need (also counted in `grows`).
    grows_ahead: u32,
    /// Cuts of ACL's recorded rebuild rounds or merge passes after a quiet stretch (also counted
    /// in `grows`).
    rounds_cut: u32,
    /// Steps recorded and submitted together ([`RECORD_CHUNK`]; [`GpuSim::set_record_chunk`]).
    record_chunk: usize,
    /// Whether the first step of each batch is timed per kernel ([`GpuSim::set_kernel_timing`]).
    kernel_timing: bool,
    /// Bytes read back over the current frame, and steps timed per kernel in it.
    readback_bytes: u64,
    frame_timed_steps: u32,
    /// Host time recording and submitting, and waiting for, this frame's batches (ms).
    frame_host_ms: [f64; 3],
    queries: Option<KernelQueries>,
    timestamp_period_ns: f32,
    /// The frame's timed nanoseconds by kernel name (in the order first timed), and those of the
    /// contact model's dispatches: kept by name, not by dispatch, since the recording changes
    /// within a frame (a grown capacity, a cut or raised budget) while its times stand.
    frame_kernel_ns: Vec<(&'static str, f64)>,
    /// The same by the CPU path's phase (the contact model's time is [`PHASE_CONTACT`]'s) and,
    /// with ACL, its stage (by dispatch: a dispatch keeps its phase and stage however the
    /// recording changes).
    frame_phase_ns: [f64; 5],
    frame_stage_ns: [f64; 6],
    frame_length_error: f32,
    frame_iterations: u32,
}

/// Bytes of the `counters` block.
const COUNTERS_BYTES: u64 = size_of::<Counters>() as u64;

/// The contact models the GPU step runs (`contact.model`).
pub const GPU_CONTACT_MODELS: &[&str] = &["none", "exact", "acl"];

/// Kernels of the step besides the length projection's (`length_*`).
const STEP_KERNELS: &[&str] = &[
    "bend_forces",
    "integrate_velocity",
    "glue_projection",
    "tie_projection",
    "nonrigid_damping",
    "object_contact",
    "integrate_position",
    "integrate_velocity_setup",
    "object_contact_integrate",
    "nonrigid_damping_integrate",
    "frame_transport",
    "bend_twist",
    "theta_sweep",
    "frame_solve",
    "plasticity",
];

/// The buffers whose contents carry from one step to the next (everything else is rewritten by
/// the step before it is read): what a rerun of a batch restores.
const SNAPSHOT: &[&str] = &["pos", "vel", "frames", "bend_rest", "balls"];

/// The kernels of the free balls (only in scenes with balls).
const BALL_KERNELS: &[&str] = &[
    "ball_velocity",
    "ball_hit_count",
    "ball_yarn_contact",
    "ball_impulse_sum",
    "ball_contact",
    "ball_position",
    "scan_reduce",
    "scan_add",
];

/// Length-projection iterations encoded per step at first. Each encoded iteration is 4 + 2L
/// dispatches (L solver levels) that return at once after convergence, which takes one iteration in
/// the shipped scenes at the seed's time step (measured: `max_projection_iterations` = 1 on the tiny
/// swatch at dt up to 5e-4 s, and on the unrelaxed `drop.toml` falling onto its sphere), and
/// encoding the scene's whole cap (100 by default) costs more than the step itself, for every
/// contact model. A step that needs more than the budget is detected from its counters; its batch
/// is restored from the snapshot and rerun with twice what it needed encoded (again while that is
/// short, up to the cap), which gives bitwise the result of encoding the cap from the start
/// (iterations past convergence do nothing). After [`LENGTH_CUT_AFTER`] completed batches in a row
/// that all used fewer, the budget becomes the most they used (at least 1): a trial, like ACL's
/// cuts of its rounds, that waits longer after one that fell short ([`crate::budget::wait_after_raise`]).
pub const LENGTH_BUDGET: u32 = 4;

/// Completed batches in a row that used fewer length iterations than encoded before the budget is
/// cut ([`LENGTH_BUDGET`]); doubled, up to [`LENGTH_CUT_AFTER_MAX`], after each cut that fell short.
pub const LENGTH_CUT_AFTER: u32 = 8;
/// The most batches the length budget's cut waits for.
pub const LENGTH_CUT_AFTER_MAX: u32 = 1024;

/// Most steps submitted at once ([`GpuSim::steps`]).
pub const MAX_BATCH: usize = 64;

/// Steps of the first batch [`GpuSim::advance`] runs, and of the first after a batch that had to be
/// rerun. A rerun repeats its whole batch, and a failed attempt costs nearly what a good one does
/// (the GPU step is bound by its dispatches, which run whether or not a kernel has work), so the
/// batch length starts small and doubles after each batch that ran once: a cloth whose counts keep
/// rising (a falling garment grows its contact capacities a dozen times in its first steps) then
/// wastes batches about as long as the stretches between its growths, not [`MAX_BATCH`] steps
/// each, and the host also gets to grow capacities ahead of need between the shorter batches.
/// A batch whose reruns were all upgrades ([`GpuSim::upgrade`]: a step that needed more of a cut
/// budget) halves the length instead: such steps come one at a time, at random, rather than as a
/// trend, and a batch of one step costs its readback (the quiet tiny swatch on lavapipe, frames
/// 1–12: 46 reruns against the old policy's 14, when every upgrade started the batches over at
/// one step).
pub const FIRST_BATCH: usize = 1;

/// The most steps of a batch of [`GpuSim::advance`] while one of ACL's budgets is cut on trial
/// ([`crate::acl::gpu::AclGpu::on_trial`]; the length budget's cut does not shorten them).
///
/// Why: while a budget is cut, each step that needs more than it records reruns its whole batch,
/// so a failed attempt costs the batch's length in steps, while a shorter batch costs one more
/// readback per batch. At rest such steps are rare but not absent (the relaxed scarf on the CPU
/// path: about one in 100 of its first 2,800 steps needed a second rebuild round or coalescing,
/// and later one in 8 a newcomer search), so cuts pay only with short batches. `examples/batch_policy`
/// (a model of this policy, replaying the events of CPU runs; a readback counted as 30 to 100
/// dispatches), with the cuts' wait of [`crate::acl::gpu::CUT_AFTER_STEPS`]: the relaxed scarf
/// 101–110 dispatches a step with trial batches of 8 steps, 103–108 with 16, 111–114 with 32,
/// 122–124 with 64; the tiny swatch hanging 115–123, 118–122, 124–128, 136–138; the default
/// swatch swinging onto the floor (in motion throughout) 143–149, 146–150, 153–156, 162–164.
pub const TRIAL_BATCH: usize = 16;

/// The causes of batch reruns counted in `--stats` (`reruns_<cause>`): the length projection's
/// budget, a capacity (the exact path's, the yarn–ball contacts', ACL's), and ACL's budgets
/// ([`acl_gpu::rerun_causes`]).
pub const RERUN_CAUSES: &[&str] = &[
    "length",
    "capacity",
    "rebuild_rounds",
    "merge_passes",
    "label_rounds",
    "coalesce",
    "newcomers",
    "indexed",
];

impl GpuSim {
    /// Uploads `sim` and builds every pipeline and bind group of the step. A state with a
    /// position that is not finite is refused first, with the error the CPU path's next step
    /// returns ([`Sim::check_positions`]): the GPU's steps check the velocities they make, which
    /// keeps the positions finite, so only the state it starts from can hold one.
    pub fn new(gpu: &Gpu, sim: Sim, contact: &ContactParams) -> Result<GpuSim, GpuStepError> {
        sim.check_positions()?;
        // A limit the checks before it miss (a buffer past the device's binding size, say) is an
        // error, not wgpu's panic on an uncaught validation error.
        let scope = gpu.device.push_error_scope(wgpu::ErrorFilter::Validation);
        let step = sim.steps;
        let made = Self::make(gpu, sim, contact);
        match (made, pollster::block_on(scope.pop())) {
            (Err(e), _) => Err(e),
            (Ok(_), Some(e)) => Err(GpuStepError::Device {
                step,
                message: format!("making the GPU step's buffers and kernels: {e}"),
            }),
            (Ok(g), None) => Ok(g),
        }
    }

    /// [`GpuSim::new`] without its error scope.
    fn make(gpu: &Gpu, sim: Sim, contact: &ContactParams) -> Result<GpuSim, GpuStepError> {
        let (exact, acl) = match contact.model {
            ContactModel::None => (false, false),
            ContactModel::Exact => (true, false),
            ContactModel::Acl => (false, true),
        };
        let iterations =
            balls::ball_contact_iterations(sim.balls.len() as u64, sim.obstacles.len() as u64);
        if !sim.balls.is_empty() && iterations > BALL_CONTACT_LOOP_LIMIT {
            return Err(GpuStepError::TooManyBalls {
                balls: sim.balls.len(),
                obstacles: sim.obstacles.len(),
                iterations,
                limit: BALL_CONTACT_LOOP_LIMIT,
            });
        }
        let device = gpu.device.clone();
        let queue = gpu.queue.clone();
        let adapter_name = gpu.adapter.get_info().name;
        check_limits(&device, &sim, &adapter_name)?;
        crate::step::check_damping_blocks(&sim.block_start)?;
        let mut buffers = Buffers::default();
        let params = sim.step_params();
        let frame_tiles = upload_state(&mut buffers, &device, &queue, &sim, &params);
        // One small uniform per colour of the material-angle sweep.
        let color_ranges: Vec<wgpu::Buffer> = crate::rod::color_ranges(&sim.rod.color_start)
            .iter()
            .map(|r| {
                let mut b = Buffers::default();
                b.upload(&device, &queue, "color_range", bytemuck::bytes_of(r), true);
                b.get("color_range").unwrap().clone()
            })
            .collect();
        // And one per colour of the ties.
        let tie_color_ranges: Vec<wgpu::Buffer> = sim
            .tie_color_start()
            .windows(2)
            .map(|w| {
                let r = crate::layout::ColorRange {
                    first: w[0],
                    count: w[1] - w[0],
                    _pad0: 0,
                    _pad1: 0,
                };
                let mut b = Buffers::default();
                b.upload(&device, &queue, "color_range", bytemuck::bytes_of(&r), true);
                b.get("color_range").unwrap().clone()
            })
            .collect();
        let acl_kernels = acl_gpu::all_kernels();
        let names: Vec<&str> = shaders::KERNELS
            .iter()
            .map(|k| k.name)
            .filter(|k| {
                STEP_KERNELS.contains(k)
                    || k.starts_with("length_")
                    || (exact && exact_gpu::KERNELS.contains(k))
                    || (acl && acl_kernels.contains(k))
                    || (!sim.balls.is_empty() && BALL_KERNELS.contains(k))
            })
            .collect();
        let pipelines = gpu.pipelines(&names)?;
        // Exact contact: the host computes the static tables and the grid origin with one detection
        // on the CPU twin (the CPU path takes the same origin at its first step), which also gives
        // the first capacities.
        let exact = if exact {
            let step = sim.steps;
            let contact_err = |source| GpuStepError::Contact { step, source };
            let mut host = ExactContact::new(sim.params.radius, contact).map_err(contact_err)?;
            host.detect(&sim.topo, &sim.pos).map_err(contact_err)?;
            let origin = host.grid_origin().expect("set by detect");
            let limit = device.limits().max_storage_buffer_binding_size;
            let counts = exact_gpu::first_counts(host.counters());
            let caps = exact_gpu::first_capacities_within(counts, limit).map_err(binding_error(
                0,
                limit,
                |what| exact_gpu::row_bytes(what, counts),
            ))?;
            check_exact_binding(&device, &sim, 0, caps)?;
            let mut p = params;
            grid::set_grid_frame(&mut p, origin);
            let tables = ExactTables {
                params: &p,
                quad_weights: host.quad_weights(),
                quad_arc: host.exclusion().quad_arc(),
                seg_contact: host.segment_contact(),
            };
            let path = ExactGpu::new(
                &device,
                &queue,
                &pipelines,
                &mut buffers,
                &tables,
                caps.0,
                caps.1,
                caps.2,
            )?;
            Some(ExactState {
                path,
                origin,
                cell: contact.grid_cell,
                tables: (
                    host.quad_weights().to_vec(),
                    host.exclusion().quad_arc().to_vec(),
                    host.segment_contact().to_vec(),
                ),
            })
        } else {
            None
        };
        // ACL: a fresh model on the host gives the parameters and static tables; the GPU model
        // starts with no sets, as the CPU path's does at its first step.
        let acl = if acl {
            let step = sim.steps;
            let contact_err = |e: crate::acl::AclError| GpuStepError::Contact {
                step,
                source: e.into(),
            };
            let mut host = AclContact::new(sim.params.radius, contact).map_err(contact_err)?;
            // Its buffers of the scene's own size must fit (its capacities are fitted below).
            let limits = device.limits();
            let q = sim.step_params().quadrature;
            if let Some(n) = acl_needs(&SceneCounts::of(&sim), q, contact.max_bin, &limits)
                .into_iter()
                .find(|n| !n.ok())
            {
                return Err(GpuStepError::Limit {
                    what: n.what,
                    needed: n.needed,
                    limit: n.offered,
                    limit_name: n.limit_name,
                    adapter: adapter_name.clone(),
                });
            }
            let (quad_weights, quad_arc, seg_contact) = host.gpu_tables(&sim.topo);
            buffers.upload(
                &device,
                &queue,
                "quad_weights",
                bytemuck::cast_slice(&quad_weights),
                false,
            );
            buffers.upload(
                &device,
                &queue,
                "quad_arc",
                bytemuck::cast_slice(&quad_arc),
                false,
            );
            buffers.upload(
                &device,
                &queue,
                "seg_contact",
                bytemuck::cast_slice(&seg_contact),
                false,
            );
            // The first capacities are estimates; large scenes' passed wgpu's default binding
            // limit (a step that needs more grows them, or fails naming the limit).
            let mut caps = AclCaps::for_segments(sim.topo.segments.len() as u32);
            caps.fit_binding(device.limits().max_storage_buffer_binding_size);
            let path = AclGpu::new(
                &device, &queue, &pipelines, &buffers, &mut host, &sim.topo, &sim.pos, caps,
            )
            .map_err(|e| GpuStepError::Contact {
                step,
                source: ContactError::Other(e.to_string()),
            })?;
            let ring = |label, bytes: u64| {
                device.create_buffer(&wgpu::BufferDescriptor {
                    label: Some(label),
                    size: MAX_BATCH as u64 * bytes,
                    usage: wgpu::BufferUsages::COPY_DST | wgpu::BufferUsages::COPY_SRC,
                    mapped_at_creation: false,
                })
            };
            Some(AclState {
                path,
                sched_ring: ring(
                    "sched_step ring",
                    size_of::<crate::layout::SchedUniform>() as u64,
                ),
                rebuild_ring: ring(
                    "rebuild ring",
                    size_of::<crate::acl::rebuild::RebuildParams>() as u64,
                ),
                steps: 0,
                frame: [0.0; 9],
                compactions: 0,
            })
        } else {
            None
        };
        // Free balls: room for as many contacts as 256 per ball at first (grown on overflow).
        let ball_hit_capacity = (256 * sim.balls.len() as u32).max(1024);
        upload_balls(&mut buffers, &device, &queue, &sim, ball_hit_capacity);
        let ball_scan = if sim.balls.is_empty() {
            None
        } else {
            Some(GpuScan::new(
                &device,
                &pipelines,
                buffers.get("ball_hit_offsets").expect("uploaded above"),
                params.num_points + 1,
            )?)
        };
        let length_scratch = LengthScratch::new(&sim.topo.edges, params.num_points as usize);
        LengthGpu::upload(&mut buffers, &device, &queue, &length_scratch);
        // Copies of the state a step changes, taken before each batch, for a rerun.
        let snapshots = SNAPSHOT
            .iter()
            .map(|&name| {
                let src = buffers.get(name).unwrap();
                device.create_buffer(&wgpu::BufferDescriptor {
                    label: Some(name),
                    size: src.size(),
                    usage: wgpu::BufferUsages::COPY_DST | wgpu::BufferUsages::COPY_SRC,
                    mapped_at_creation: false,
                })
            })
            .collect();
        let ring = |label, bytes: u64| {
            device.create_buffer(&wgpu::BufferDescriptor {
                label: Some(label),
                size: (MAX_BATCH as u64 * bytes).max(16),
                usage: wgpu::BufferUsages::COPY_DST | wgpu::BufferUsages::COPY_SRC,
                mapped_at_creation: false,
            })
        };
        let param_ring = ring("params ring", size_of::<Params>() as u64);
        let obstacle_ring = ring(
            "obstacles ring",
            (sim.obstacles.len() * size_of::<ObstacleShape>()) as u64,
        );
        let fresh_counters = device.create_buffer(&wgpu::BufferDescriptor {
            label: Some("fresh counters"),
            size: COUNTERS_BYTES,
            usage: wgpu::BufferUsages::COPY_DST | wgpu::BufferUsages::COPY_SRC,
            mapped_at_creation: false,
        });
        let placeholder = |label| {
            device.create_buffer(&wgpu::BufferDescriptor {
                label: Some(label),
                size: 16,
                usage: wgpu::BufferUsages::COPY_DST | wgpu::BufferUsages::MAP_READ,
                mapped_at_creation: false,
            })
        };
        let length_budget = params.length_max_iterations.min(LENGTH_BUDGET);
        let mut g = GpuSim {
            exact,
            acl,
            ball_scan,
            ball_hit_capacity,
            grows: 0,
            exact_peak: (0, 0, 0),
            frame_touching: 0,
            frame_candidates: 0,
            batch_touching: Vec::new(),
            batch_acl: Vec::new(),
            sim,
            device: device.clone(),
            queue,
            adapter_name,
            pipelines,
            buffers,
            color_ranges,
            frame_tiles,
            tie_color_ranges,
            length_levels: length_scratch.levels,
            length_budget,
            length_cut: QuietCut::new(LENGTH_CUT_AFTER),
            length_pinned: false,
            dispatches: Vec::new(),
            step_copies: StepCopies::default(),
            readback: placeholder("counters readback"),
            param_ring,
            obstacle_ring,
            fresh_counters,
            snapshots,
            length_uniforms: Vec::new(),
            readback_bytes: 0,
            frame_timed_steps: 0,
            frame_host_ms: [0.0; 3],
            reruns: 0,
            upgrades: Vec::new(),
            upgraded: Vec::new(),
            frame_upgraded_steps: 0,
            frame_dispatches_run: 0,
            frame_passes_run: 0,
            upgraded_steps: 0,
            upgrade_reruns: 0,
            clean_batches: 0,
            upgrade_after: UPGRADE_AFTER_CLEAN,
            rerun_steps: 0,
            rerun_causes: Default::default(),
            rerun_sink: gpu.rerun_sink(),
            batch_limit: FIRST_BATCH,
            frame_batches: 0,
            in_frame: false,
            run_ahead: false,
            ahead: None,
            check_pool: None,
            grows_ahead: 0,
            rounds_cut: 0,
            record_chunk: RECORD_CHUNK,
            kernel_timing: true,
            queries: None,
            timestamp_period_ns: gpu.queue.get_timestamp_period(),
            frame_kernel_ns: Vec::new(),
            frame_phase_ns: [0.0; 5],
            frame_stage_ns: [0.0; 6],
            frame_length_error: 0.0,
            frame_iterations: 0,
        };
        g.write_fresh_counters();
        g.build(length_budget)?;
        Ok(g)
    }

    /// (Re)builds the dispatch list with the length projection encoded for `length_iterations`
    /// iterations, and the timestamp queries and readback buffer sized for it.
    fn build(&mut self, length_iterations: u32) -> Result<(), GpuStepError> {
        let device = &self.device;
        let params = self.sim.step_params();
        let ranges = crate::rod::color_ranges(&self.sim.rod.color_start);
        let n = params.num_points;
        let nb = params.num_bends;
        // The step's dispatches (DESIGN §6, in order): kernel, threads, and the `color_range`
        // uniform it binds (a colour of the material-angle sweep or of the ties).
        let mut plan: Vec<(&'static str, u32, Option<&wgpu::Buffer>)> =
            vec![("bend_forces", n, None)];
        // The exact contact path's dispatches go here (they add into `force`). The CPU path's
        // phases ([`crate::sim::PHASES`]) begin at `contact_at` (the constraints, after the
        // contact model), `damping_at` and `frames_at` in the plan.
        let contact_at = plan.len();
        let num_balls = self.sim.balls.len() as u32;
        let with_balls = |stages: &[(&'static str, u32)]| {
            stages
                .iter()
                .filter(|_| num_balls > 0)
                .map(|&(k, t)| (k, t, None))
                .collect::<Vec<_>>()
        };
        // Nothing changes the velocities between integrate_velocity and length_setup without glued
        // points or ties (ball_velocity moves the balls only): one dispatch makes both.
        let fused_setup = params.num_glue == 0
            && self.sim.tie_color_start().last().copied().unwrap_or(0) == 0
            && !self.length_levels.is_empty();
        plan.push((
            if fused_setup {
                "integrate_velocity_setup"
            } else {
                "integrate_velocity"
            },
            n,
            None,
        ));
        plan.extend(with_balls(&[("ball_velocity", num_balls)]));
        plan.push(("glue_projection", params.num_glue, None));
        for (w, uniform) in self
            .sim
            .tie_color_start()
            .windows(2)
            .zip(&self.tie_color_ranges)
        {
            plan.push(("tie_projection", w[1] - w[0], Some(uniform)));
        }
        // The length projection's dispatches go here (see below).
        let length_at = plan.len();
        // Enough workgroups for the largest damping phase; the kernel skips those past this step's
        // `params.num_blocks`.
        let phases = self.sim.phase_start.len().saturating_sub(1).max(1) as u64;
        let max_blocks = (0..phases)
            .map(|s| self.sim.damping_phase(s).1)
            .max()
            .unwrap_or(0);
        let damping_at = plan.len();
        plan.extend([
            (
                "nonrigid_damping",
                max_blocks * crate::step::DAMPING_WG,
                None,
            ),
            ("object_contact", n, None),
        ]);
        // The scan of `ball_hit_offsets` goes before `ball_yarn_contact` (below).
        plan.extend(with_balls(&[
            ("ball_hit_count", n + 1),
            ("ball_yarn_contact", n),
            ("ball_impulse_sum", num_balls * balls::IMPULSE_LANES as u32),
            ("ball_contact", 1),
        ]));
        // Without free balls nothing runs between object_contact and integrate_position, and both
        // are per point: one dispatch makes both, and with the damping before them one more, a
        // workgroup per block (the blocks of a phase partition the points), while its loop bound
        // allows.
        let max_block = self
            .sim
            .block_start
            .windows(2)
            .map(|w| w[1] - w[0])
            .max()
            .unwrap_or(0);
        let damped = crate::step::damping_integrate_iterations(max_block, params.num_obstacles)
            <= crate::step::DAMPING_INTEGRATE_LOOP_LIMIT;
        if num_balls == 0 {
            plan.pop().expect("object_contact above");
            match plan.last_mut() {
                Some(d) if damped && d.0 == "nonrigid_damping" && d.1 > 0 => {
                    d.0 = "nonrigid_damping_integrate"
                }
                _ => plan.push(("object_contact_integrate", n, None)),
            }
        } else {
            plan.push(("integrate_position", n, None));
        }
        plan.extend(with_balls(&[("ball_position", num_balls)]));
        let frames_at = plan.len();
        plan.push(("frame_transport", params.num_edges, None));
        match self.frame_tiles {
            Some(tiles) if params.frame_sweeps > 0 => {
                plan.push(("frame_solve", tiles * crate::rod::FRAME_TILE as u32, None));
            }
            _ => {
                plan.push(("bend_twist", nb, None));
                for _ in 0..params.frame_sweeps {
                    for (range, uniform) in ranges.iter().zip(&self.color_ranges) {
                        plan.push(("theta_sweep", range.count, Some(uniform)));
                    }
                }
                plan.push(("plasticity", nb, None));
            }
        }
        let mut length = LengthGpu::new(
            device,
            &self.pipelines,
            &self.buffers,
            &params,
            length_iterations,
            &self.length_levels,
            !fused_setup,
        )?;
        let mut dispatches = Vec::with_capacity(plan.len() + length.dispatches.len());
        let mut step_copies = StepCopies::default();
        for (i, (kernel, threads, color)) in plan.into_iter().enumerate() {
            let phase = match i {
                i if i < contact_at => PHASE_FORCES,
                i if i < damping_at => PHASE_CONSTRAINTS,
                i if i < frames_at => PHASE_DAMPING_OBJECTS,
                _ => PHASE_FRAMES,
            };
            if let (true, Some(ex)) = (i == contact_at, &self.exact) {
                for (kernel, bg, threads) in ex.path.dispatches() {
                    let k = shaders::kernel(kernel).map_err(PipelineError::from)?;
                    dispatches.push(Dispatch {
                        kernel,
                        bind_group: bg.clone(),
                        grid: threads.grid(k.workgroup_size),
                        copies: Vec::new(),
                        phase: PHASE_CONTACT,
                        stage: None,
                    });
                }
            }
            if let (true, Some(acl)) = (i == contact_at, &self.acl) {
                let (copies, ds) = acl_dispatches(acl.path.ops())?;
                dispatches.extend(ds);
                step_copies = copies;
            }
            if let (true, Some(scan)) = (kernel == "ball_yarn_contact", &self.ball_scan) {
                for (kernel, bg, threads) in scan.dispatches() {
                    let k = shaders::kernel(kernel).map_err(PipelineError::from)?;
                    dispatches.push(Dispatch {
                        kernel,
                        bind_group: bg.clone(),
                        grid: threads.grid(k.workgroup_size),
                        copies: Vec::new(),
                        phase,
                        stage: None,
                    });
                }
            }
            if i == length_at {
                dispatches.extend(length.dispatches.drain(..).map(|d| Dispatch {
                    kernel: d.kernel,
                    bind_group: d.bind_group,
                    grid: Grid::Groups(d.groups),
                    copies: Vec::new(),
                    phase,
                    stage: None,
                }));
            }
            let k = shaders::kernel(kernel).map_err(PipelineError::from)?;
            let mut overrides: Vec<(&str, &wgpu::Buffer)> =
                color.map(|u| ("color_range", u)).into_iter().collect();
            if kernel == "integrate_velocity_setup" {
                let u = length.setup_level.as_ref().expect("a stage without setup");
                overrides.push(("length_level", u));
            }
            dispatches.push(Dispatch {
                kernel,
                bind_group: self.pipelines.bind_group_with(
                    device,
                    kernel,
                    &self.buffers,
                    &overrides,
                )?,
                grid: Grid::Groups(shaders::dispatch_grid(threads, k.workgroup_size)),
                copies: Vec::new(),
                phase,
                stage: None,
            });
        }
        // A fixed grid of no workgroups records nothing (`Pipelines::dispatch_groups`: a scene
        // without glued points, or balls): left out of the list, so it is not counted either.
        dispatches.retain(|d| {
            !(d.copies.is_empty() && matches!(&d.grid, Grid::Groups(g) if g.contains(&0)))
        });
        // A pass per dispatch with two timestamps each.
        let timed =
            self.kernel_timing && device.features().contains(wgpu::Features::TIMESTAMP_QUERY);
        let queries = timed.then(|| KernelQueries::new(device, dispatches.len()));
        let ts_bytes = queries.as_ref().map_or(0, KernelQueries::bytes);
        let acl_bytes = if self.acl.is_some() {
            MAX_BATCH as u64 * ACL_COUNTERS_BYTES
        } else {
            0
        };
        self.readback = device.create_buffer(&wgpu::BufferDescriptor {
            label: Some("counters readback"),
            size: MAX_BATCH as u64 * COUNTERS_BYTES + ts_bytes + acl_bytes,
            usage: wgpu::BufferUsages::COPY_DST | wgpu::BufferUsages::MAP_READ,
            mapped_at_creation: false,
        });
        self.dispatches = dispatches;
        self.step_copies = step_copies;
        // Upgraded lists copy this one: made again when next needed.
        self.upgraded.clear();
        self.queries = queries;
        self.length_uniforms = length.into_uniforms();
        self.length_budget = length_iterations;
        Ok(())
    }

    /// The adapter's name.
    pub fn adapter(&self) -> &str {
        &self.adapter_name
    }

    /// Dispatches recorded per step.
    pub fn dispatches_per_step(&self) -> u32 {
        self.dispatches.len() as u32
    }

    /// Compute passes recorded per untimed step: one, plus one after each buffer copy between
    /// its dispatches (none since `acl_counts` writes ACL's counts into their uniforms; wgpu
    /// encodes each pass into command buffers of its own, so a driver's per-command-buffer cost
    /// scales with this, not with the dispatches).
    pub fn passes_per_step(&self) -> u32 {
        passes_of(&self.dispatches)
    }

    /// Runs one time step on the GPU.
    pub fn step(&mut self) -> Result<(), GpuStepError> {
        self.steps(1)
    }

    /// Runs `k` time steps (at most [`MAX_BATCH`]) in one submission: each step's `params` and
    /// placed obstacles are written into ring buffers beforehand and copied into place by the
    /// command encoder between steps, and each step's `counters` are copied out after it, so the
    /// host still sees every step's flags (and reports the first step that raised one) but waits
    /// for the GPU once per batch, not once per step. A step that needs a rerun (a capacity, a
    /// budget) reruns the batch up to itself, and the steps after it run as another batch
    /// ([`GpuSim::run_steps`]). The first step of the batch is timed per
    /// kernel when the adapter has timestamp queries (within a frame, only in the frame's first
    /// batch). A batch that had to be rerun sets the
    /// length of [`GpuSim::advance`]'s next batch back to [`FIRST_BATCH`] (halves it when its reruns
    /// only upgraded a step); one of that length that ran once doubles it, up to
    /// [`GpuSim::batch_cap`].
    pub fn steps(&mut self, k: usize) -> Result<(), GpuStepError> {
        self.not_ahead()?;
        let (reruns, upgrade_reruns) = (self.reruns, self.upgrade_reruns);
        self.run_steps(k)?;
        let upgrades = self.upgrade_reruns - upgrade_reruns;
        let cap = self.batch_cap();
        self.batch_limit = if self.reruns > reruns + upgrades {
            FIRST_BATCH
        } else if upgrades > 0 {
            (self.batch_limit / 2).max(FIRST_BATCH)
        } else if k >= self.batch_limit {
            (2 * self.batch_limit).min(cap)
        } else {
            self.batch_limit
        }
        .min(cap);
        Ok(())
    }

    /// The most steps [`GpuSim::advance`]'s batches may have now: [`TRIAL_BATCH`] while one of
    /// ACL's budgets is cut on trial ([`AclGpu::on_trial`]), else [`MAX_BATCH`].
    pub fn batch_cap(&self) -> usize {
        match &self.acl {
            Some(acl) if acl.path.on_trial() => TRIAL_BATCH,
            _ => MAX_BATCH,
        }
    }

    /// Runs `n` time steps in batches of at most the current batch length (see [`FIRST_BATCH`]),
    /// calling `on_batch` with the number of steps of each batch once it completed.
    pub fn advance(
        &mut self,
        n: usize,
        on_batch: &mut dyn FnMut(usize),
    ) -> Result<(), GpuStepError> {
        self.not_ahead()?;
        self.advance_while(n, on_batch, &|_| true)
    }

    /// [`GpuSim::advance`], starting a batch only while `more` says so of the steps run so far.
    fn advance_while(
        &mut self,
        n: usize,
        on_batch: &mut dyn FnMut(usize),
        more: &dyn Fn(usize) -> bool,
    ) -> Result<(), GpuStepError> {
        let mut done = 0;
        while done < n && more(done) {
            let k = (n - done).min(self.batch_limit);
            self.steps(k)?;
            self.frame_batches += 1;
            on_batch(k);
            done += k;
        }
        Ok(())
    }

    /// The steps the next batch of [`GpuSim::advance`] may hold.
    pub fn batch_limit(&self) -> usize {
        self.batch_limit
    }

    /// Steps run so far with more of ACL's budgets than the rest of their batch (each after a
    /// rerun of its batch; see [`GpuSim::upgrade`]).
    pub fn upgraded_steps(&self) -> u64 {
        self.upgraded_steps
    }

    /// Sets the completed batches in a row that ran once before an upgrade is tried
    /// ([`UPGRADE_AFTER_CLEAN`]; 0: after any batch, as tests that exercise upgrades need).
    pub fn set_upgrade_after(&mut self, batches: u32) {
        self.upgrade_after = batches;
    }

    /// Reruns so far that upgraded a step (also counted in [`GpuSim::reruns`]).
    pub fn upgrade_reruns(&self) -> u32 {
        self.upgrade_reruns
    }

    /// Batch reruns so far by cause (keys of [`RERUN_CAUSES`]; a rerun may have several).
    pub fn rerun_causes(&self) -> &std::collections::BTreeMap<&'static str, u32> {
        &self.rerun_causes
    }

    /// Steps of failed batch attempts so far (each rerun batch's steps, once per rerun).
    pub fn rerun_steps(&self) -> u64 {
        self.rerun_steps
    }

    /// [`GpuSim::steps`] without the batch-length bookkeeping.
    ///
    /// A batch whose step `j` needs a rerun is run again only up to that step, and the steps
    /// after it as a batch of their own: what the failed attempt counted after step `j` came from
    /// a state already wrong, so it says nothing of what those steps need, and running them again
    /// with the rerun would only risk wasting them once more. (The tiny swatch's first batch of 8
    /// steps failed at steps 0, 0, 6 and 7: 32 steps of failed attempts rerunning all 8, 17 so.)
    /// Batches of any length step alike, bit for bit (`batch_lengths_adapt_and_change_nothing`).
    fn run_steps(&mut self, k: usize) -> Result<(), GpuStepError> {
        assert!((1..=MAX_BATCH).contains(&k), "batch of {k} steps");
        let reruns = self.reruns;
        // The per-step counts of this call's steps, whatever batches run them.
        self.batch_touching.clear();
        self.batch_acl.clear();
        // The steps still to run, and the next attempt's length.
        let (mut left, mut len) = (k, k);
        // A rerun may itself find the next reason to rerun (a capacity grown upstream shows the
        // true count downstream), so loop; each round grows something, and the length cap and
        // the counts bound the growth.
        loop {
            let (base, t0) = (self.sim.steps, self.sim.time);
            let kept = self.batch_touching.len();
            let attempt = Instant::now();
            let Some((at, rerun)) = self.run_batch(len)? else {
                left -= len;
                if left > 0 {
                    len = left;
                    continue;
                }
                self.clean_batches = if self.reruns == reruns {
                    self.clean_batches.saturating_add(1)
                } else {
                    0
                };
                return Ok(());
            };
            self.restore_snapshot();
            self.sim.steps = base;
            self.sim.time = t0;
            self.batch_touching.truncate(kept);
            self.reruns += 1;
            self.rerun_steps += len as u64;
            let ran = len;
            len = at + 1;
            // (An upgrade of a step past the rerun's would not run with it.)
            self.upgrades.retain(|&(s, _)| s < len);
            match &rerun {
                Rerun::Length(_) => *self.rerun_causes.entry("length").or_default() += 1,
                Rerun::Capacity { .. } | Rerun::BallHits(_) => {
                    *self.rerun_causes.entry("capacity").or_default() += 1
                }
                Rerun::Acl(_) => {}
            }
            let attempt = attempt.elapsed();
            let why = match rerun {
                Rerun::Length(needed) => {
                    // Twice what it needed (it may need more still: then the next round of this
                    // loop doubles again), and the batches after it keep that budget. A cut that
                    // fell short waits longer before the next (`budget::wait_after_raise`).
                    let cap = self.sim.step_params().length_max_iterations;
                    let before = self.length_budget;
                    debug_assert!(needed > before && before < cap);
                    self.length_cut.raised(LENGTH_CUT_AFTER_MAX);
                    self.build(cap.min(before.max(2 * needed)))?;
                    format!(
                        "the length projection needed {needed} iterations, {before} recorded; now {}",
                        self.length_budget
                    )
                }
                Rerun::Capacity { caps, counts } => {
                    self.grows += 1;
                    // Only as far as the device binds ([`exact_gpu::grown_within`]).
                    let limit = self.device.limits().max_storage_buffer_binding_size;
                    let now = self.contact_capacities().expect("an exact rerun");
                    let caps = exact_gpu::grown_within(now, caps, limit).map_err(binding_error(
                        base,
                        limit,
                        |what| exact_gpu::row_bytes(what, counts),
                    ))?;
                    self.grow_exact(caps)?;
                    let grown: Vec<String> = ["entries", "candidates", "records"]
                        .iter()
                        .zip([(now.0, caps.0), (now.1, caps.1), (now.2, caps.2)])
                        .filter(|(_, (a, b))| a != b)
                        .map(|(n, (a, b))| format!("{n} {a} → {b}"))
                        .collect();
                    format!("exact contact's capacities grown: {}", grown.join(", "))
                }
                Rerun::Acl(r) => {
                    let AclRerun {
                        caps,
                        needed,
                        counts,
                        step,
                    } = *r;
                    let caps =
                        self.acl_within_binding(caps, &needed, Some(&counts), base + step as u64)?;
                    let ran = self.acl.as_ref().expect("an ACL rerun").path.caps;
                    let why = format!(
                        "ACL at step {}: {}",
                        base + step as u64,
                        acl_gpu::describe_rerun(&ran, &caps)
                    );
                    if self.upgrade(step, caps)? {
                        self.upgrade_reruns += 1;
                    } else {
                        // Room to grow, or one step more than `MAX_UPGRADES` needing more: every
                        // step is recorded with what this one needs, and the cut policies back
                        // off ([`crate::budget::wait_after_raise`]). The upgraded steps keep
                        // theirs (with the new room).
                        let upgrades = std::mem::take(&mut self.upgrades);
                        self.grow_acl(caps, base)?;
                        let now = self.acl.as_ref().expect("an ACL rerun").path.caps;
                        self.upgrades = upgrades
                            .into_iter()
                            .map(|(s, c)| (s, now.at_least(&c)))
                            .collect();
                    }
                    why
                }
                Rerun::BallHits(cap) => {
                    self.grows += 1;
                    let before = self.ball_hit_capacity;
                    self.grow_ball_hits(cap)?;
                    format!("room for yarn–ball contacts grown: {before} → {cap}")
                }
            };
            if let Some(f) = self
                .rerun_sink
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .as_mut()
            {
                f(&RerunNotice {
                    first_step: base,
                    steps: ran,
                    again: len,
                    attempt,
                    why,
                });
            }
        }
    }

    /// Rebuilds the step with room for `cap` yarn–ball contacts.
    fn grow_ball_hits(&mut self, cap: u32) -> Result<(), GpuStepError> {
        self.ball_hit_capacity = cap;
        upload_ball_room(&mut self.buffers, &self.device, &self.queue, cap);
        self.write_fresh_counters();
        self.build(self.length_budget)
    }

    /// The records `ball_hits` holds (yarn–ball contacts per step).
    pub fn ball_hit_capacity(&self) -> u32 {
        self.ball_hit_capacity
    }

    /// Sets the room for yarn–ball contacts (between batches; tests start small to exercise
    /// growth).
    pub fn set_ball_hit_capacity(&mut self, cap: u32) -> Result<(), GpuStepError> {
        self.grow_ball_hits(cap.max(1))
    }

    /// Rebuilds the exact contact path with capacities `caps` (entries, candidates, records).
    fn grow_exact(&mut self, caps: (u32, u32, u32)) -> Result<(), GpuStepError> {
        let Some(ex) = self.exact.as_mut() else {
            return Ok(());
        };
        let mut p = self.sim.step_params();
        grid::set_grid_frame(&mut p, ex.origin);
        let tables = ExactTables {
            params: &p,
            quad_weights: &ex.tables.0,
            quad_arc: &ex.tables.1,
            seg_contact: &ex.tables.2,
        };
        // A capacity past the device's binding limit is an error, not wgpu's panic: checked
        // first, so the path built before is kept; the scope catches any other limit.
        // The new buffers are made in a copy of the set, so a failure leaves the names bound to
        // the path that still runs.
        check_exact_binding(&self.device, &self.sim, self.sim.steps, caps)?;
        let mut buffers = self.buffers.clone();
        let scope = self.device.push_error_scope(wgpu::ErrorFilter::Validation);
        let made = ExactGpu::new(
            &self.device,
            &self.queue,
            &self.pipelines,
            &mut buffers,
            &tables,
            caps.0,
            caps.1,
            caps.2,
        );
        if let Some(e) = pollster::block_on(scope.pop()) {
            return Err(GpuStepError::Device {
                step: self.sim.steps,
                message: format!("growing the exact contact buffers to {caps:?}: {e}"),
            });
        }
        ex.path = made?;
        self.buffers = buffers;
        self.write_fresh_counters();
        self.build(self.length_budget)
    }

    /// Writes the `counters` block every step starts from: no errors, no bad point, and the
    /// exact path's capacities.
    fn write_fresh_counters(&self) {
        let mut fresh = Counters::fresh();
        fresh.ball_hits.capacity = self.ball_hit_capacity;
        if let Some(ex) = &self.exact {
            ex.path.set_capacities(&mut fresh);
        }
        self.queue
            .write_buffer(&self.fresh_counters, 0, bytemuck::bytes_of(&fresh));
    }

    /// The touching quadrature pairs of each step of the last batch ([`GpuSim::steps`]), from its
    /// counters (exact contact; zeros without contact).
    pub fn batch_touching_pairs(&self) -> &[u32] {
        &self.batch_touching
    }

    /// The touching quadrature pairs at the downloaded positions (the host's geometric search, as on
    /// the CPU path) and, with ACL, the boxes of the GPU's contact sets after the last step (read
    /// back); `Ok(false)` without contact. For the contact matrix of a GPU run.
    pub fn contact_pairs(
        &mut self,
        touching: &mut Vec<[u32; 2]>,
        boxes: &mut Vec<[u32; 4]>,
    ) -> Result<bool, GpuStepError> {
        self.not_ahead()?;
        if !self.sim.contact_pairs(touching, boxes)? {
            return Ok(false);
        }
        if let Some(acl) = &self.acl {
            let n = acl.path.last_counters().sizes.num_sets as usize;
            let sets = acl
                .path
                .read::<crate::acl::ContactSet>(&self.device, &self.queue, "sets", n)
                .map_err(|e| GpuStepError::Device {
                    step: self.sim.steps,
                    message: e.to_string(),
                })?;
            boxes.clear();
            boxes.extend(
                sets.iter()
                    .filter(|s| s.flags & crate::acl::SET_LIVE != 0)
                    .map(|s| s.bx),
            );
        }
        Ok(true)
    }

    /// ACL: the contact sets, the rebuilds and the sets' touching pairs of each step of the last
    /// batch ([`GpuSim::steps`]).
    pub fn batch_acl_counts(&self) -> &[[u32; 3]] {
        &self.batch_acl
    }

    /// Batches rerun because a contact output overflowed its capacity (each grew it).
    pub fn capacity_grows(&self) -> u32 {
        self.grows
    }

    /// The most each of the exact path's counts (grid entries, candidate pairs, touching records)
    /// reached over the run's completed steps (`None` without the exact path).
    pub fn exact_peak_counts(&self) -> Option<(u32, u32, u32)> {
        self.exact.as_ref().map(|_| self.exact_peak)
    }

    /// The exact path's capacities (grid entries, candidate pairs, touching records), if any.
    pub fn contact_capacities(&self) -> Option<(u32, u32, u32)> {
        self.exact.as_ref().map(|ex| {
            (
                ex.path.entry_capacity,
                ex.path.candidate_capacity,
                ex.path.record_capacity,
            )
        })
    }

    /// Rebuilds the exact path with these capacities (tests: a deliberately small capacity must
    /// grow and give the same result).
    pub fn set_contact_capacities(&mut self, caps: (u32, u32, u32)) -> Result<(), GpuStepError> {
        self.grow_exact(caps)
    }

    /// Poisons ACL's pools past their lengths after every restore of a batch's snapshot (tests:
    /// [`AclGpu::set_poison_after_restore`]; no effect without ACL).
    pub fn set_acl_poison_after_restore(&mut self, on: bool) {
        if let Some(acl) = &mut self.acl {
            acl.path.set_poison_after_restore(on);
        }
    }

    /// Bytes of ACL's pools poisoned after restores so far ([`GpuSim::set_acl_poison_after_restore`]).
    pub fn acl_poisoned_bytes(&self) -> u64 {
        self.acl.as_ref().map_or(0, |a| a.path.poisoned_bytes())
    }

    /// The ACL path's capacities (`None` without ACL).
    pub fn acl_capacities(&self) -> Option<AclCaps> {
        self.acl.as_ref().map(|a| a.path.caps)
    }

    /// The pages of ACL's `K̄` blocks pool (`None` without ACL; [`crate::acl::pages`]).
    pub fn acl_block_pages(&self) -> Option<&crate::acl::pages::PoolPages> {
        self.acl.as_ref().map(|a| a.path.block_pages())
    }

    /// ACL's pool compactions so far (`None` without ACL).
    pub fn acl_compactions(&self) -> Option<u32> {
        self.acl.as_ref().map(|a| a.compactions)
    }

    /// The pages of ACL's rebuild pair terms (`None` without ACL).
    pub fn acl_term_pages(&self) -> Option<&crate::acl::pages::PoolPages> {
        self.acl.as_ref().map(|a| a.path.term_pages())
    }

    /// The pages of ACL's watch pools (`None` without ACL).
    pub fn acl_watch_pages(&self) -> Option<&crate::acl::pages::PoolPages> {
        self.acl.as_ref().map(|a| a.path.watch_pages())
    }

    /// The pages of ACL's rebuild watched-pair scratch (`None` without ACL).
    pub fn acl_scratch_pages(&self) -> Option<&crate::acl::pages::PoolPages> {
        self.acl.as_ref().map(|a| a.path.scratch_pages())
    }

    /// Sets what a page of ACL's blocks pool, its pair terms, its watched-pair scratch and its
    /// watch pools holds (tests: pages on a small scene; [`AclGpu::set_page_limits`]). Between
    /// batches.
    pub fn set_acl_page_limits(
        &mut self,
        limits: crate::acl::pages::AclPageLimits,
    ) -> Result<(), GpuStepError> {
        let step = self.sim.steps;
        let Some(acl) = self.acl.as_mut() else {
            return Ok(());
        };
        acl.path
            .set_page_limits(
                &self.device,
                &self.queue,
                &self.pipelines,
                &self.buffers,
                limits,
            )
            .map_err(|e| GpuStepError::Device {
                step,
                message: e.to_string(),
            })?;
        self.build(self.length_budget)
    }

    /// The most each of ACL's capacities' counts reached over the run's completed steps
    /// ([`AclGpu::peak_counts`]; `None` without ACL).
    pub fn acl_peak_counts(&self) -> Option<AclCaps> {
        self.acl.as_ref().map(|a| a.path.peak_counts())
    }

    /// Sets the ACL path's capacities (between batches; tests start small to exercise growth).
    pub fn set_acl_capacities(&mut self, caps: AclCaps) -> Result<(), GpuStepError> {
        let grows = self.grows;
        self.grow_acl(caps, self.sim.steps)?;
        // Set by hand: not a growth the run needed.
        self.grows = grows;
        Ok(())
    }

    /// Sets how many steps are recorded and submitted together (diagnostics: with a whole batch
    /// per submission, the host's recording and the GPU's work no longer overlap, so the bench's
    /// host and wait times separate them).
    pub fn set_record_chunk(&mut self, steps: usize) {
        self.record_chunk = steps.clamp(1, MAX_BATCH);
    }

    /// Turns the per-kernel timing of each batch's first step on or off (on by default where the
    /// adapter has timestamp queries). The timed step records a compute pass per dispatch, each
    /// with its timestamps, which wgpu encodes as command buffers of their own; off, every step
    /// is recorded as the others are, which is what a diagnosis of the host's recording and
    /// submitting costs needs (`YARNSIM_BENCH_UNTIMED` in `cargo bench --bench gpu`).
    pub fn set_kernel_timing(&mut self, on: bool) -> Result<(), GpuStepError> {
        if on != self.kernel_timing {
            self.kernel_timing = on;
            self.build(self.length_budget)?;
        }
        Ok(())
    }

    /// The kernel of every dispatch of one step, in order (diagnostics: where the dispatches go).
    pub fn dispatch_kernels(&self) -> Vec<&'static str> {
        self.dispatches.iter().map(|d| d.kernel).collect()
    }

    /// Capacity growths made between batches, ahead of need (part of [`GpuSim::capacity_grows`]).
    pub fn capacity_grows_ahead(&self) -> u32 {
        self.grows_ahead
    }

    /// Copies the snapshot taken at the start of the last batch back into the state buffers.
    fn restore_snapshot(&mut self) {
        let mut enc = self
            .device
            .create_command_encoder(&wgpu::CommandEncoderDescriptor {
                label: Some("restore"),
            });
        for (name, snap) in SNAPSHOT.iter().zip(&self.snapshots) {
            enc.copy_buffer_to_buffer(snap, 0, self.buffers.get(name).unwrap(), 0, snap.size());
        }
        if let Some(acl) = &self.acl {
            acl.path.copy_state(&mut enc, true);
        }
        self.queue.submit([enc.finish()]);
        if let Some(acl) = &mut self.acl {
            acl.path.restored(&self.queue);
        }
    }

    /// Encodes `iterations` length-projection iterations per step from now on (at most the scene's
    /// cap); fewer than a step needs makes its batch run twice (tests use it to check that a rerun
    /// changes nothing).
    pub fn set_length_budget(&mut self, iterations: u32) -> Result<(), GpuStepError> {
        let cap = self.sim.params.length_max_iterations;
        self.length_pinned = true;
        self.build(iterations.clamp(1, cap))
    }

    /// Length-projection iterations encoded per step now ([`LENGTH_BUDGET`]).
    pub fn length_budget(&self) -> u32 {
        self.length_budget
    }

    /// What the step has learned about its scene's run so far, for a `GpuSim` that continues it
    /// ([`GpuSim::set_tuning`]; the relaxation makes one per radius stage).
    pub fn tuning(&self) -> Tuning {
        Tuning {
            length_budget: self.length_budget,
            batch_limit: self.batch_limit,
            kernel_timing: self.kernel_timing,
        }
    }

    /// What this step learned of its scene, for another `GpuSim` of it ([`GpuSim::start_from`]).
    pub fn learned(&self) -> Learned {
        Learned {
            contact: self.contact_capacities(),
            acl: self.acl_capacities(),
            tuning: self.tuning(),
        }
    }

    /// Starts from what another `GpuSim` of the same cloth learned: each capacity and ACL budget
    /// at least its (a larger one here is kept), its length budget and batch length; this step's
    /// kernel timing stays. Changes no result (a capacity or budget only spares reruns).
    pub fn start_from(&mut self, l: &Learned) -> Result<(), GpuStepError> {
        if let (Some(a), Some(b)) = (l.contact, self.contact_capacities()) {
            self.set_contact_capacities((a.0.max(b.0), a.1.max(b.1), a.2.max(b.2)))?;
        }
        if let (Some(old), Some(new)) = (l.acl, self.acl_capacities()) {
            self.set_acl_capacities(new.at_least(&old))?;
        }
        self.set_tuning(Tuning {
            kernel_timing: self.kernel_timing,
            ..l.tuning
        })
    }

    /// Continues with `t`: its length budget (not pinned: still cut after quiet batches, grown
    /// when short), batch length and kernel timing, with one rebuild of the step.
    pub fn set_tuning(&mut self, t: Tuning) -> Result<(), GpuStepError> {
        let cap = self.sim.params.length_max_iterations;
        self.batch_limit = t.batch_limit.clamp(1, MAX_BATCH);
        self.kernel_timing = t.kernel_timing;
        self.length_cut.restart();
        self.build(t.length_budget.clamp(1, cap))
    }

    /// Fewer length iterations encoded after a quiet stretch: when [`LENGTH_CUT_AFTER`] (or, after
    /// cuts that fell short, more) completed batches in a row all converged within fewer
    /// iterations than encoded, the most they used (at least 1). `used`: the most iterations a
    /// step of the batch just completed used.
    fn fewer_length_iterations(&mut self, used: u32) -> Option<u32> {
        if self.length_pinned {
            return None;
        }
        self.length_cut.completed(used, self.length_budget, 1)
    }

    /// Batches rerun so far, for any reason (a length budget, a capacity, ACL's rounds or passes).
    pub fn reruns(&self) -> u32 {
        self.reruns
    }

    /// One batch (see [`GpuSim::steps`]); `Some(iterations)` when a step needed more length
    /// iterations than are encoded (the batch's results are then not to be used).
    fn run_batch(&mut self, k: usize) -> Result<Option<(usize, Rerun)>, GpuStepError> {
        let record_start = Instant::now();
        // The upgraded steps' lists (made again when the step's list was rebuilt since); an
        // upgrade whose budgets no longer fit ACL's buffers is dropped (its step reruns if it
        // needs more).
        let mut upgrades = Vec::new();
        for (s, caps) in std::mem::take(&mut self.upgrades) {
            if self.upgraded_list(caps)?.is_some() {
                upgrades.push((s, caps));
            }
        }
        self.upgrades = upgrades;
        let base = self.sim.steps;
        let (t0, h) = (self.sim.time, self.sim.params.h as f64);
        let mut params = Vec::with_capacity(k);
        let mut obstacles = Vec::with_capacity(k * self.sim.obstacles.len());
        for _ in 0..k {
            let mut p = self.sim.step_params();
            p.ball_hit_capacity = self.ball_hit_capacity;
            if let Some(ex) = &self.exact {
                grid::set_grid_frame(&mut p, ex.origin);
            }
            params.push(p);
            self.sim.place_obstacles();
            obstacles.extend_from_slice(&self.sim.obstacles);
            self.sim.time += h;
            self.sim.steps += 1;
        }
        let q = &self.queue;
        q.write_buffer(&self.param_ring, 0, bytemuck::cast_slice(&params));
        if let Some(acl) = &self.acl {
            let (mut su, mut ru) = (Vec::with_capacity(k), Vec::with_capacity(k));
            for s in 0..k as u64 {
                su.push(acl.path.sched().step_uniform(acl.steps + s, 0));
                ru.push(acl.path.rebuild_uniform(acl.steps + s));
            }
            q.write_buffer(&acl.sched_ring, 0, bytemuck::cast_slice(&su));
            q.write_buffer(&acl.rebuild_ring, 0, bytemuck::cast_slice(&ru));
        }
        let obstacle_bytes = (self.sim.obstacles.len() * size_of::<ObstacleShape>()) as u64;
        if obstacle_bytes > 0 {
            q.write_buffer(&self.obstacle_ring, 0, bytemuck::cast_slice(&obstacles));
        }
        let upgraded: Vec<Option<&Upgraded>> = (0..k)
            .map(|s| {
                let caps = self.upgrade_caps(s)?;
                self.upgraded.iter().find(|u| u.caps == caps)
            })
            .collect();
        let dispatches_run: u64 = upgraded
            .iter()
            .map(|u| u.map_or(self.dispatches.len(), |u| u.dispatches.len()) as u64)
            .sum();
        let scope = self.device.push_error_scope(wgpu::ErrorFilter::Validation);
        // Within a frame only its first batch is timed (again if it is rerun): the timed step
        // records a compute pass per dispatch, which costs the host far more than a step in a
        // few passes, and a frame of 540 steps would otherwise pay it once per batch. (Not when
        // that step is upgraded: its list is not the one the times are kept for.)
        let timed = self.queries.is_some()
            && !(self.in_frame && self.frame_timed_steps > 0)
            && upgraded[0].is_none();
        // (The timed step records a pass per dispatch.)
        let passes_run: u64 = upgraded
            .iter()
            .enumerate()
            .map(|(s, u)| {
                let ds = u.map_or(&self.dispatches[..], |u| &u.dispatches[..]);
                if s == 0 && timed {
                    ds.len() as u64
                } else {
                    passes_of(ds) as u64
                }
            })
            .sum();

        let ts_at = MAX_BATCH as u64 * COUNTERS_BYTES;
        let acl_at = ts_at + self.queries.as_ref().map_or(0, KernelQueries::bytes);
        // One command buffer per step, recorded in parallel: wgpu's recording costs the host a few
        // microseconds per dispatch, which for ACL's ~480 dispatches outweighed the GPU's time
        // for the step (H200: 2.95 ms recording against 1.4 ms on the GPU). Submitted in step
        // order, they run as one list would.
        let this = StepRecorder {
            device: &self.device,
            pipelines: &self.pipelines,
            buffers: &self.buffers,
            dispatches: &self.dispatches,
            copies: &self.step_copies,
            readback: &self.readback,
            param_ring: &self.param_ring,
            obstacle_ring: &self.obstacle_ring,
            fresh_counters: &self.fresh_counters,
            acl: self.acl.as_ref(),
            upgraded,
            snapshots: &self.snapshots,
            queries: self.queries.as_ref().filter(|_| timed),
        };
        let record = |s: u64| -> Result<wgpu::CommandBuffer, GpuStepError> {
            let mut enc = this
                .device
                .create_command_encoder(&wgpu::CommandEncoderDescriptor {
                    label: Some("step"),
                });
            this.record_step(&mut enc, s, k as u64, obstacle_bytes, ts_at, acl_at)?;
            Ok(enc.finish())
        };
        // Submitted in chunks, so the GPU runs the first steps while the host records the next.
        use rayon::prelude::*;
        let mut submit_ms = 0.0;
        for chunk in (0..k as u64).collect::<Vec<_>>().chunks(self.record_chunk) {
            let buffers: Vec<wgpu::CommandBuffer> = chunk
                .par_iter()
                .map(|&s| record(s))
                .collect::<Result<_, _>>()?;
            let t = Instant::now();
            q.submit(buffers);
            submit_ms += t.elapsed().as_secs_f64() * 1e3;
        }
        let submitted = Instant::now();
        self.frame_dispatches_run += dispatches_run;
        self.frame_passes_run += passes_run;
        self.frame_host_ms[0] += (submitted - record_start).as_secs_f64() * 1e3;
        self.frame_host_ms[2] += submit_ms;
        if let Some(e) = pollster::block_on(scope.pop()) {
            return Err(GpuStepError::Device {
                step: base,
                message: e.to_string(),
            });
        }
        let bytes = read_mapped(&self.device, &self.readback, self.readback.size() as usize)
            .map_err(|message| GpuStepError::Device {
                step: base,
                message,
            })?;
        self.frame_host_ms[1] += submitted.elapsed().as_secs_f64() * 1e3;
        self.readback_bytes += k as u64 * COUNTERS_BYTES
            + self
                .queries
                .as_ref()
                .filter(|_| timed)
                .map_or(0, KernelQueries::bytes)
            + self
                .acl
                .as_ref()
                .map_or(0, |_| k as u64 * ACL_COUNTERS_BYTES);
        let cap = self.sim.params.length_max_iterations;
        let mut acl_counters: Vec<AclStepCounters> = Vec::new();
        // The frame's sums take a batch only once it completes: a batch that is rerun (a budget
        // or a capacity too small) counts once, as the rerun, and its timed kernels with it (an
        // overflowing attempt's kernels skip work, so its times would understate a step).
        let (mut length_error, mut iterations, mut touching, mut candidates) = (0.0f32, 0, 0, 0);
        let mut exact_peak = self.exact_peak;
        for s in 0..k {
            let at = s * COUNTERS_BYTES as usize;
            let counters: Counters =
                bytemuck::pod_read_unaligned(&bytes[at..at + COUNTERS_BYTES as usize]);
            if let Some(caps) = self
                .exact
                .as_ref()
                .and_then(|ex| ex.path.grown_capacities(&counters))
            {
                return Ok(Some((
                    s,
                    Rerun::Capacity {
                        caps,
                        counts: exact_gpu::step_counts(&counters),
                    },
                )));
            }
            if self.length_budget < cap && counters.length_iterations > self.length_budget {
                return Ok(Some((s, Rerun::Length(counters.length_iterations))));
            }
            if counters.ball_hits.overflow != 0 {
                // A quarter more than needed, and at least twice the room: contacts spread as
                // the balls sink in, and each growth reruns the batch.
                let c = counters.ball_hits.count;
                let cap = c.saturating_add(c / 4).max(2 * self.ball_hit_capacity);
                return Ok(Some((s, Rerun::BallHits(cap))));
            }
            if let Some(acl) = &self.acl {
                let at = acl_at as usize + s * ACL_COUNTERS_BYTES as usize;
                let c: AclStepCounters =
                    bytemuck::pod_read_unaligned(&bytes[at..at + ACL_COUNTERS_BYTES as usize]);
                let ran = self.upgrade_caps(s).unwrap_or(acl.path.caps);
                match acl.path.verdict_with(ran, &c) {
                    Ok(Some(caps)) => {
                        acl_counters.push(c);
                        for cause in acl_gpu::rerun_causes(&ran, &caps) {
                            *self.rerun_causes.entry(cause).or_default() += 1;
                        }
                        return Ok(Some((
                            s,
                            Rerun::Acl(Box::new(AclRerun {
                                caps: AclGpu::ahead_of(caps, &acl_counters),
                                needed: caps,
                                counts: AclCaps::counted(&c),
                                step: s,
                            })),
                        )));
                    }
                    Ok(None) => acl_counters.push(c),
                    Err(e) => {
                        self.sim.steps = base + s as u64;
                        self.sim.time = t0 + s as f64 * h;
                        let step = base + s as u64;
                        return Err(match acl_gpu::step_failure(&e, &c) {
                            acl_gpu::AclStepFailure::Contact(source) => {
                                GpuStepError::Contact { step, source }
                            }
                            acl_gpu::AclStepFailure::KernelLimit(message) => {
                                GpuStepError::KernelLimit { step, message }
                            }
                        });
                    }
                }
            }
            if let Err(e) = self.check(base + s as u64, &counters) {
                // The state on the GPU is past the failing step; the host's clock stops at it.
                self.sim.steps = base + s as u64;
                self.sim.time = t0 + s as f64 * h;
                return Err(e);
            }
            length_error = length_error.max(f32::from_bits(counters.length_error_bits));
            iterations = iterations.max(counters.length_iterations);
            touching += counters.touching_pairs.count as u64;
            self.batch_touching.push(counters.touching_pairs.count);
            candidates += counters.candidate_pairs.count as u64;
            let ((e, c, r), now) = (exact_peak, exact_gpu::step_counts(&counters));
            exact_peak = (e.max(now.0), c.max(now.1), r.max(now.2));
        }
        if self.exact.is_some() {
            self.exact_peak = exact_peak;
        }
        self.frame_length_error = self.frame_length_error.max(length_error);
        self.frame_iterations = self.frame_iterations.max(iterations);
        self.frame_touching += touching;
        self.frame_candidates += candidates;
        if timed {
            let ts: &[u64] = bytemuck::cast_slice(&bytes[ts_at as usize..]);
            // The timed step is the batch's first, recorded from `self.dispatches` (an upgraded
            // first step is not timed).
            for (d, pair) in self.dispatches.iter().zip(ts.chunks_exact(2)) {
                let ns = pair[1].saturating_sub(pair[0]) as f64 * self.timestamp_period_ns as f64;
                self.frame_phase_ns[d.phase] += ns;
                if let Some(s) = d.stage {
                    self.frame_stage_ns[s] += ns;
                }
                match self
                    .frame_kernel_ns
                    .iter_mut()
                    .find(|(k, _)| *k == d.kernel)
                {
                    Some(e) => e.1 += ns,
                    None => self.frame_kernel_ns.push((d.kernel, ns)),
                }
            }
            self.frame_timed_steps += 1;
        }
        if let Some(budget) = self.fewer_length_iterations(iterations) {
            self.build(budget)?;
        }
        // The batch's upgrades were for it alone.
        self.frame_upgraded_steps += self.upgrades.len() as u64;
        self.upgraded_steps += self.upgrades.len() as u64;
        self.upgrades.clear();
        if let Some(acl) = &mut self.acl {
            for c in &acl_counters {
                acl.path.completed(c);
                self.batch_acl
                    .push([c.sizes.num_sets, c.sizes.rebuilds, c.sizes.touching]);
                let sets = c.sizes.num_sets as f64;
                let rebuilds = c.sizes.rebuilds as f64;
                let v = [
                    sets,
                    rebuilds,
                    if sets > 0.0 { rebuilds / sets } else { 0.0 },
                    c.sched.entries.count as f64,
                    c.sched.examined as f64,
                    c.sched.processed as f64,
                    (c.sched.entered > 0) as u32 as f64,
                    c.sched.touching.count as f64,
                    c.sizes.touching as f64,
                ];
                for (acc, x) in acl.frame.iter_mut().zip(v) {
                    *acc += x;
                }
            }
            acl.steps += k as u64;
            // The one host decision of ACL: pool compaction, between batches.
            let compacted = acl
                .path
                .compact_pools(&self.device, &self.queue, &self.pipelines)
                .map_err(|e| GpuStepError::Device {
                    step: base + k as u64,
                    message: e.to_string(),
                })?;
            acl.compactions += compacted as u32;
            // Room for the next batches, before a rising count overflows and reruns one.
            // (Only as far as the device binds: no count overflowed, so never an error.)
            if let Some(caps) = acl.path.ahead(&acl_counters) {
                let now = acl.path.caps;
                let caps = self.acl_within_binding(caps, &now, None, base + k as u64)?;
                if caps != now {
                    self.grows_ahead += 1;
                    self.grow_acl(caps, base + k as u64)?;
                }
            }
            // Fewer rebuild rounds recorded after a quiet stretch (a cloth at rest).
            let acl = self.acl.as_mut().expect("checked above");
            if let Some(caps) = acl.path.fewer_rounds(&acl_counters) {
                self.rounds_cut += 1;
                self.grow_acl(caps, base + k as u64)?;
            }
            let acl = self.acl.as_mut().expect("checked above");
            if let Some(caps) = acl.path.fewer_coalesce(&acl_counters) {
                self.rounds_cut += 1;
                self.grow_acl(caps, base + k as u64)?;
            }
            let acl = self.acl.as_mut().expect("checked above");
            if let Some(caps) = acl.path.fewer_newcomers(&acl_counters) {
                self.rounds_cut += 1;
                self.grow_acl(caps, base + k as u64)?;
            }
            let acl = self.acl.as_mut().expect("checked above");
            if let Some(caps) = acl.path.fewer_indexed(&acl_counters) {
                self.rounds_cut += 1;
                self.grow_acl(caps, base + k as u64)?;
            }
            let acl = self.acl.as_mut().expect("checked above");
            if let Some(caps) = acl.path.fewer_passes(k as u32) {
                self.rounds_cut += 1;
                self.grow_acl(caps, base + k as u64)?;
            }
            let acl = self.acl.as_mut().expect("checked above");
            if let Some(caps) = acl.path.fewer_label_rounds(k as u32) {
                self.rounds_cut += 1;
                self.grow_acl(caps, base + k as u64)?;
            }
        }
        Ok(None)
    }

    /// ACL's capacities `caps` (grown for step `step`, which needed `needed`) within what the
    /// device binds ([`AclCaps::grown_within`]), or [`GpuStepError::Binding`] naming the capacity
    /// that cannot grow (the state is the batch's start).
    fn acl_within_binding(
        &self,
        caps: AclCaps,
        needed: &AclCaps,
        counts: Option<&AclCaps>,
        step: u64,
    ) -> Result<AclCaps, GpuStepError> {
        let Some(acl) = &self.acl else {
            return Ok(caps);
        };
        let limit = self.device.limits().max_storage_buffer_binding_size;
        acl.path
            .caps
            .grown_within(caps, needed, limit)
            .map_err(binding_error(step, limit, |what| {
                counts.and_then(|c| c.row_bytes(what))
            }))
    }

    /// Rebuilds the ACL path with capacities `caps` (its state carried over) and the step's
    /// dispatches with it; `step` names the step in an error.
    fn grow_acl(&mut self, caps: AclCaps, step: u64) -> Result<(), GpuStepError> {
        let Some(acl) = self.acl.as_mut() else {
            return Ok(());
        };
        // The clean batches that allow an upgrade count from the last change of the budgets.
        self.clean_batches = 0;
        acl.path
            .grow(
                &self.device,
                &self.queue,
                &self.pipelines,
                &self.buffers,
                caps,
            )
            .map_err(|e| GpuStepError::Device {
                step,
                message: e.to_string(),
            })?;
        self.grows += 1;
        self.build(self.length_budget)
    }

    /// A rerun's alternative to recording every step with more budgets: step `step` of the batch
    /// needed `caps`, which differ from ACL's capacities in budgets only (more rebuild rounds,
    /// merge passes or label rounds, coalescing or the newcomer search), so only that step is
    /// recorded with more on the rerun and the others keep the budgets they have. The step gets
    /// every stage and at least twice the driver's rounds, passes and label rounds
    /// ([`upgrade_budgets`]). Returns false (nothing changed) when `caps` need other buffers, when
    /// [`MAX_UPGRADES`] other steps of the batch are upgraded already, or when fewer than
    /// [`UPGRADE_AFTER_CLEAN`] batches before this one ran once: then the caller records every
    /// step with the larger budgets, as before.
    ///
    /// Why: a budget cut after a quiet stretch holds until one step needs more. Raising the
    /// budget for the whole batch and the batches after it costs every one of their steps the
    /// dispatches of the raised stages (the relaxed scarf at rest on the H200: 286–402 dispatches
    /// a step with the budgets raised, against 178 cut), while at rest such steps are rare; an
    /// upgrade costs one rerun of the batch's steps. A step run with the larger budgets gives the
    /// same result as with the cut ones wherever those sufficed, so the run is bitwise the same.
    fn upgrade(&mut self, step: usize, caps: AclCaps) -> Result<bool, GpuStepError> {
        let Some(acl) = &self.acl else {
            return Ok(false);
        };
        let others = self.upgrades.iter().filter(|&&(s, _)| s != step).count();
        if others >= MAX_UPGRADES || self.clean_batches < self.upgrade_after {
            return Ok(false);
        }
        let caps = upgrade_budgets(&acl.path.caps, &caps);
        if self.upgraded_list(caps)?.is_none() {
            return Ok(false);
        }
        self.upgrades.retain(|&(s, _)| s != step);
        self.upgrades.push((step, caps));
        Ok(true)
    }

    /// The budgets step `s` of the running batch is upgraded to, if any.
    fn upgrade_caps(&self, s: usize) -> Option<AclCaps> {
        self.upgrades
            .iter()
            .find(|&&(step, _)| step == s)
            .map(|&(_, caps)| caps)
    }

    /// The index of the upgraded dispatch list for ACL budgets `caps` in `self.upgraded` (made
    /// when missing); `None` when `caps` need other buffers than ACL's.
    fn upgraded_list(&mut self, caps: AclCaps) -> Result<Option<usize>, GpuStepError> {
        if let Some(i) = self.upgraded.iter().position(|u| u.caps == caps) {
            return Ok(Some(i));
        }
        let Some(acl) = self.acl.as_mut() else {
            return Ok(None);
        };
        let device_error = |e: acl_gpu::AclGpuError| GpuStepError::Device {
            step: self.sim.steps,
            message: e.to_string(),
        };
        let Some(variant) = acl
            .path
            .variant(&self.device, &self.queue, &self.pipelines, caps)
            .map_err(device_error)?
        else {
            return Ok(None);
        };
        // The step's list with the variant's operations in place of the driver's (they are one
        // run of contact dispatches).
        let (copies, contact) = acl_dispatches(variant.ops())?;
        let base = &self.dispatches;
        let first = base
            .iter()
            .position(|d| d.contact())
            .expect("ACL's dispatches");
        let end = first + base[first..].iter().take_while(|d| d.contact()).count();
        let mut dispatches = base[..first].to_vec();
        dispatches.extend(contact);
        dispatches.extend_from_slice(&base[end..]);
        self.upgraded.push(Upgraded {
            caps,
            dispatches,
            copies,
            variant,
        });
        Ok(Some(self.upgraded.len() - 1))
    }

    /// Turns the error flags of a step into an error naming the step and the place.
    fn check(&self, step: u64, c: &Counters) -> Result<(), GpuStepError> {
        if let Some(ex) = &self.exact {
            check_counters(c, ex.cell).map_err(|source| GpuStepError::Contact { step, source })?;
        }
        let what = if c.errors & ERROR_NAN_POSITION != 0 {
            Some("position")
        } else if c.errors & ERROR_NAN_FORCE != 0 {
            Some("force")
        } else if c.errors & ERROR_NAN_VELOCITY != 0 {
            Some("velocity")
        } else {
            None
        };
        if let Some(what) = what {
            let point = c.first_bad_point;
            let (yarn, local) = self.sim.point_site(point as usize);
            return Err(GpuStepError::NotFinite {
                step,
                what,
                point,
                yarn,
                local: local as u32,
            });
        }
        if c.errors & ERROR_NAN_BALL != 0 {
            return Err(GpuStepError::BallNotFinite {
                step,
                ball: c.first_bad_ball,
            });
        }
        if c.errors & ERROR_LENGTH_NOT_CONVERGED != 0 {
            return Err(GpuStepError::LengthProjection {
                step,
                site: crate::length::edge_site(
                    &self.sim.topo.yarns,
                    &self.sim.topo.edges,
                    c.first_unconverged_edge,
                ),
                iterations: c.length_iterations,
                error: f32::from_bits(c.length_error_bits),
            });
        }
        Ok(())
    }

    /// Copies positions and velocities (and the balls) back into [`GpuSim::sim`].
    pub fn download(&mut self) -> Result<(), GpuStepError> {
        self.not_ahead()?;
        let n = self.sim.pos.len() as u64 * 16;
        let step = self.sim.steps;
        let err = |e: PipelineError| GpuStepError::Device {
            step,
            message: e.to_string(),
        };
        let pos = self
            .buffers
            .read(&self.device, &self.queue, "pos", n)
            .map_err(err)?;
        let vel = self
            .buffers
            .read(&self.device, &self.queue, "vel", n)
            .map_err(err)?;
        self.sim.pos.copy_from_slice(bytemuck::cast_slice(&pos));
        self.sim.vel.copy_from_slice(bytemuck::cast_slice(&vel));
        if !self.sim.balls.is_empty() {
            let bytes = std::mem::size_of_val(self.sim.balls.as_slice()) as u64;
            let balls = self
                .buffers
                .read(&self.device, &self.queue, "balls", bytes)
                .map_err(err)?;
            self.sim.balls.copy_from_slice(bytemuck::cast_slice(&balls));
        }
        Ok(())
    }

    /// The contact model the step runs (`none`, `exact`, `acl`).
    fn model_name(&self) -> &'static str {
        match (&self.exact, &self.acl) {
            (Some(_), _) => "exact",
            (_, Some(_)) => "acl",
            _ => "none",
        }
    }

    /// The contact state the step keeps between batches, for a checkpoint: with the state
    /// [`GpuSim::sync_host`] brings to the host, everything a run resumed from it needs to go on
    /// bit for bit. Sections: `gpu.model` (the contact model), and with exact contact
    /// `gpu.exact.origin` (the grid origin the path took at its first step, which orders its
    /// sums), with ACL `gpu.acl.steps` (the GPU model's own step count) and the model's whole
    /// state ([`AclGpu::export_state`]: sets, pools, the scheduler's table and history, …).
    /// Between batches (a frame's end); waits for the GPU.
    pub fn export_contact_state(&self) -> Result<StateWriter, GpuStepError> {
        self.not_ahead()?;
        let mut out = StateWriter::new();
        out.put_str("gpu.model", self.model_name());
        if let Some(ex) = &self.exact {
            out.put_value("gpu.exact.origin", &ex.origin);
        }
        if let Some(acl) = &self.acl {
            out.put_value("gpu.acl.steps", &acl.steps);
            acl.path
                .export_state(&self.device, &self.queue, &mut out)
                .map_err(|e| GpuStepError::Device {
                    step: self.sim.steps,
                    message: format!("saving ACL's state: {e}"),
                })?;
        }
        Ok(out)
    }

    /// Continues from the contact state [`GpuSim::export_contact_state`] wrote into `inp`, on a
    /// step made for the same scene from the state saved with it (as `yarnsim run --resume`
    /// makes it). On error the step must be discarded.
    pub fn import_contact_state(&mut self, inp: &StateReader) -> Result<(), GpuStepError> {
        self.not_ahead()?;
        let model = inp.get_str("gpu.model")?;
        if model != self.model_name() {
            return Err(CheckpointError::Mismatch {
                what: "the GPU step's contact model",
                checkpoint: model,
                sim: self.model_name().into(),
            }
            .into());
        }
        if let Some(ex) = &mut self.exact {
            let origin = inp.get_value::<[f32; 3]>("gpu.exact.origin")?;
            if !origin.iter().all(|v| v.is_finite()) {
                return Err(CheckpointError::bad("gpu.exact.origin", format!("{origin:?}")).into());
            }
            ex.origin = origin;
        }
        if let Some(acl) = &mut self.acl {
            acl.steps = inp.get_value::<u64>("gpu.acl.steps")?;
            let step = self.sim.steps;
            acl.path
                .import_state(
                    &self.device,
                    &self.queue,
                    &self.pipelines,
                    &self.buffers,
                    inp,
                )
                .map_err(|e| match e {
                    acl_gpu::AclGpuError::Checkpoint(c) => GpuStepError::Checkpoint(c),
                    e => GpuStepError::Device {
                        step,
                        message: format!("restoring ACL's state: {e}"),
                    },
                })?;
            // The step's dispatches for the capacities it took.
            self.build(self.length_budget)?;
        }
        Ok(())
    }

    /// Downloads the whole state the step changes (positions, velocities, balls, the rods' edge
    /// frames and rest shapes) into the host's [`Sim`], which is then what the GPU holds (a
    /// checkpoint of a GPU run writes it). Its contact model is not brought up to date: the GPU's
    /// contact state (ACL's sets, the exact path's buffers) stays on the device.
    pub fn sync_host(&mut self) -> Result<(), GpuStepError> {
        self.download()?;
        let step = self.sim.steps;
        let err = |e: PipelineError| GpuStepError::Device {
            step,
            message: e.to_string(),
        };
        let (device, queue, buffers) = (&self.device, &self.queue, &self.buffers);
        let rod = &mut self.sim.rod;
        fn fetch<T: bytemuck::Pod>(
            buffers: &Buffers,
            device: &wgpu::Device,
            queue: &wgpu::Queue,
            name: &str,
            into: &mut [T],
        ) -> Result<(), PipelineError> {
            let bytes = std::mem::size_of_val(into) as u64;
            if bytes > 0 {
                let got = buffers.read(device, queue, name, bytes)?;
                into.copy_from_slice(bytemuck::cast_slice(&got));
            }
            Ok(())
        }
        fetch(buffers, device, queue, "frames", &mut rod.frames).map_err(err)?;
        fetch(buffers, device, queue, "bend_rest", &mut rod.rest).map_err(err)?;
        Ok(())
    }

    /// [`GpuSim::sync_host`], and the simulation given back to the host. Its contact model is the
    /// one it was handed to [`GpuSim::new`] with: the caller replaces it (as
    /// [`crate::relax::relax_gpu`] does) or uses the `Sim` without contact state.
    pub fn into_sim(mut self) -> Result<Sim, GpuStepError> {
        self.sync_host()?;
        Ok(self.sim)
    }

    /// Runs the steps of one output frame, downloads the state and reports on it like
    /// [`Sim::frame`], plus the per-kernel GPU times.
    pub fn frame(&mut self) -> Result<(FrameStats, GpuFrameTimes), GpuStepError> {
        self.frame_with(&mut || {})
    }

    /// [`GpuSim::frame`], calling `on_step` after every step (progress reporting). A frame the
    /// last one began (see [`GpuSim::set_run_ahead`]) calls it first for the steps run then.
    pub fn frame_with(
        &mut self,
        on_step: &mut dyn FnMut(),
    ) -> Result<(FrameStats, GpuFrameTimes), GpuStepError> {
        let start = Instant::now();
        let n = self.sim.params.steps_per_frame;
        // The frame's start: here, or in the last frame, which ran this one's first steps while
        // its pass-through check ran.
        let (t0, first_step, done, mut check_ms) = match self.ahead.take() {
            Some(a) => {
                for _ in 0..a.steps {
                    on_step();
                }
                self.sim.steps = a.sim_steps;
                self.sim.time = a.sim_time;
                self.sim.obstacles = a.obstacles;
                if let Some(e) = a.error {
                    return Err(e);
                }
                if a.steps > n as usize {
                    return Err(GpuStepError::Ahead {
                        step: a.first_step,
                        steps: a.steps,
                    });
                }
                (a.t0, a.first_step, a.steps, 0.0)
            }
            None => {
                let (t0, first_step) = (self.sim.time, self.sim.steps);
                let check_ms = self.begin_frame(true)?;
                (t0, first_step, 0, check_ms)
            }
        };
        self.in_frame = true;
        let ran = self.advance(n as usize - done, &mut |k| {
            for _ in 0..k {
                on_step();
            }
        });
        self.in_frame = false;
        ran?;
        // As on the CPU path: the frame ends at its own time.
        self.sim.time = t0 + 1.0 / self.sim.params.fps;
        self.download()?;
        if let (true, Some(acl)) = (self.sim.recording_rebuilds(), &self.acl) {
            let n = self.sim.topo.segments.len();
            let counts = acl
                .path
                .read::<u32>(&self.device, &self.queue, "rebuild_counts", n)
                .map_err(|e| GpuStepError::Device {
                    step: self.sim.steps,
                    message: e.to_string(),
                })?;
            let counts: Vec<f32> = counts.iter().map(|&c| c as f32).collect();
            self.sim.set_frame_rebuilds(&counts);
        }
        // The frame's report, from sums the next frame's steps (below) start over.
        let (mut stats, mut times) = self.frame_report(n);
        // The CPU path's pass-through check on the host's copy of the state; with run-ahead, on
        // another thread while this one runs the next frame's first batches.
        let (verdict, end_ms, wait_ms) = if self.run_ahead {
            self.check_running_ahead(first_step)
        } else {
            let check = Instant::now();
            let verdict = self.sim.pass_through_end_frame(first_step);
            let ms = check.elapsed().as_secs_f64() * 1e3;
            (verdict, ms, ms)
        };
        verdict?;
        // (The start's part, in a run's first checked frame, is waited for whole.)
        let waited_ms = check_ms + wait_ms;
        check_ms += end_ms;
        self.sim.frames += 1;
        stats.frame = self.sim.frames;
        stats.wall_ms = start.elapsed().as_secs_f64() * 1e3;
        times.host_check_ms = check_ms / n.max(1) as f64;
        times.host_check_wait_ms = waited_ms / n.max(1) as f64;
        times.ahead_steps = self.ahead.as_ref().map_or(0, |a| a.steps);
        stats
            .extra
            .push(("ahead_steps".into(), times.ahead_steps as f64));
        Ok((stats, times))
    }

    /// Whether each frame runs the next frame's first batches while its pass-through check runs
    /// on another thread (off by default). The check takes the host tens of milliseconds on a
    /// garment (the relaxed scarf's, 58 ms a 540-step frame on the H200's host, 2026-11-27: as
    /// long as 100 ACL steps at the issue's 2,000 steps/s), through which the GPU would idle.
    /// The frame still returns only once its check passed, and the steps are those of a run
    /// without it, bit for bit; but until the next [`GpuSim::frame_with`] the GPU's state is ahead
    /// of the host's frame: a caller that reads it between frames ([`GpuSim::sync_host`],
    /// [`GpuSim::export_contact_state`], [`GpuSim::contact_pairs`], [`GpuSim::into_sim`]) or
    /// steps outside frames turns run-ahead off for the frame before (those refuse while steps
    /// are ahead).
    pub fn set_run_ahead(&mut self, on: bool) {
        self.run_ahead = on;
    }

    /// Steps of the next frame run ahead by the last frame ([`GpuSim::set_run_ahead`]).
    pub fn steps_ahead(&self) -> usize {
        self.ahead.as_ref().map_or(0, |a| a.steps)
    }

    /// Refuses (with [`GpuStepError::Ahead`]) while the GPU is steps ahead of the host's frame.
    fn not_ahead(&self) -> Result<(), GpuStepError> {
        match &self.ahead {
            Some(a) => Err(GpuStepError::Ahead {
                step: self.sim.steps,
                steps: a.steps,
            }),
            None => Ok(()),
        }
    }

    /// A frame's start: the per-frame sums cleared, ACL's per-segment rebuild counting switched
    /// as `--color updates` asks, and (with `check`) the pass-through check's part at the start
    /// of a run's first checked frame. Returns the check's milliseconds.
    fn begin_frame(&mut self, check: bool) -> Result<f64, GpuStepError> {
        self.frame_kernel_ns.clear();
        self.frame_phase_ns = [0.0; 5];
        self.frame_stage_ns = [0.0; 6];
        self.frame_timed_steps = 0;
        self.frame_host_ms = [0.0; 3];
        self.readback_bytes = 0;
        self.frame_length_error = 0.0;
        self.frame_iterations = 0;
        self.frame_touching = 0;
        self.frame_candidates = 0;
        self.frame_upgraded_steps = 0;
        self.frame_dispatches_run = 0;
        self.frame_passes_run = 0;
        self.frame_batches = 0;
        if let Some(acl) = &mut self.acl {
            // Steps run outside a frame (`step`, `steps`) count in no frame's means.
            acl.frame = [0.0; 9];
        }
        // `--color updates`: ACL counts the frame's rebuilds per segment on the GPU (a kernel the
        // step records only then).
        let count_rebuilds = self.sim.recording_rebuilds() && self.acl.is_some();
        if let Some(acl) = &mut self.acl {
            if acl.path.counts_rebuilds() != count_rebuilds {
                acl.path
                    .set_count_rebuilds(&self.device, &self.queue, &self.pipelines, count_rebuilds)
                    .map_err(|e| GpuStepError::Device {
                        step: self.sim.steps,
                        message: e.to_string(),
                    })?;
                self.build(self.length_budget)?;
            }
        }
        if let (true, Some(acl)) = (count_rebuilds, &self.acl) {
            acl.path.clear_rebuild_counts(&self.queue);
        }
        if !check {
            return Ok(0.0);
        }
        let t = Instant::now();
        self.sim.pass_through_begin_frame()?;
        Ok(t.elapsed().as_secs_f64() * 1e3)
    }

    /// The frame's pass-through check on another thread while this one begins the next frame and
    /// runs its batches until the check is done (at most the frame's steps); the host's `Sim` is
    /// then put back at this frame's end, and what ran ahead is kept for the next
    /// [`GpuSim::frame_with`] (an error of those steps too: it is the next frame's). Returns the
    /// check's verdict, its milliseconds, and the milliseconds waited for it after the batches.
    fn check_running_ahead(
        &mut self,
        first_step: u64,
    ) -> (Result<(), crate::sim::SimError>, f64, f64) {
        let Some(mut job) = self.sim.pass_through_end_frame_job(first_step) else {
            return (Ok(()), 0.0, 0.0);
        };
        let (t0, next_first) = (self.sim.time, self.sim.steps);
        let obstacles = self.sim.obstacles.clone();
        let n = self.sim.params.steps_per_frame as usize;
        let begun = self.begin_frame(false);
        if self.check_pool.is_none() {
            // (Without threads of its own the check runs on the global pool, as it did.)
            self.check_pool = rayon::ThreadPoolBuilder::new()
                .thread_name(|i| format!("pass-through check {i}"))
                .build()
                .ok()
                .map(std::sync::Arc::new);
        }
        let pool = self.check_pool.clone();
        let (job, verdict, ms, wait_ms, steps, error) = std::thread::scope(|s| {
            let check = s.spawn(move || {
                let t = Instant::now();
                let verdict = match &pool {
                    Some(p) => p.install(|| job.run()),
                    None => job.run(),
                };
                (job, verdict, t.elapsed().as_secs_f64() * 1e3)
            });
            let (mut steps, mut error) = (0, begun.err());
            if error.is_none() {
                self.in_frame = true;
                // At least one batch: the check of a real scene takes longer (and so a test
                // sees the steps run ahead whatever the threads' timing).
                let more = |done: usize| done == 0 || !check.is_finished();
                error = self.advance_while(n, &mut |k| steps += k, &more).err();
                self.in_frame = false;
            }
            let waiting = Instant::now();
            let (job, verdict, ms) = check
                .join()
                .unwrap_or_else(|p| std::panic::resume_unwind(p));
            let wait_ms = waiting.elapsed().as_secs_f64() * 1e3;
            (job, verdict, ms, wait_ms, steps, error)
        });
        self.sim.return_pass_through_job(job);
        // (Nothing ran: the next frame begins afresh.)
        if steps == 0 && error.is_none() {
            return (verdict, ms, wait_ms);
        }
        self.ahead = Some(Ahead {
            steps,
            error,
            sim_steps: self.sim.steps,
            sim_time: self.sim.time,
            obstacles: std::mem::replace(&mut self.sim.obstacles, obstacles),
            t0,
            first_step: next_first,
        });
        self.sim.steps = next_first;
        self.sim.time = t0;
        (verdict, ms, wait_ms)
    }

    /// The report of the frame whose steps just ran and whose state was downloaded (its number
    /// `self.sim.frames + 1`; `wall_ms`, `host_check_ms` and `ahead_steps` are the caller's).
    fn frame_report(&mut self, n: u32) -> (FrameStats, GpuFrameTimes) {
        let (ke, vmax) = self.sim.kinetic_energy_and_max_speed();
        let mut stats = FrameStats {
            frame: self.sim.frames + 1,
            sim_time: self.sim.time,
            steps: n,
            kinetic_energy: ke,
            max_speed: vmax,
            max_length_error: self.sim.max_length_error(),
            projection_error: self.frame_length_error as f64,
            max_projection_iterations: self.frame_iterations,
            ..FrameStats::default()
        };
        // Per-kernel milliseconds per step, the mean over the timed steps of the frame.
        let timed = self.frame_timed_steps.max(1) as f64;
        let kernel_ms: Vec<(&'static str, f64)> = (self.frame_kernel_ns.iter())
            .map(|&(k, ns)| (k, ns * 1e-6 / timed))
            .collect();
        let contact_ms = self.frame_phase_ns[PHASE_CONTACT] * 1e-6 / timed;
        let total: f64 = kernel_ms.iter().map(|(_, v)| v).sum();
        for (k, v) in &kernel_ms {
            stats.extra.push((format!("{k}_ms"), *v));
        }
        // (Where a step of the frame was timed: no key stands for a time not measured.)
        if self.frame_timed_steps > 0 {
            stats.extra.push(("gpu_step_ms".into(), total));
            // And the CPU path's keys of the same times: its phases' milliseconds over the frame
            // (here the timed steps' mean times the frame's steps), and with a contact model
            // `contact_ms` per step (also `gpu_contact_ms`), with ACL its stages' too.
            for (out, (name, ns)) in
                (stats.phase_ms.iter_mut()).zip(crate::sim::PHASES.iter().zip(self.frame_phase_ns))
            {
                *out = (name, ns * 1e-6 / timed * n as f64);
            }
            if self.exact.is_some() || self.acl.is_some() {
                stats.extra.push(("gpu_contact_ms".into(), contact_ms));
                stats.contact.push(("contact_ms", contact_ms));
            }
            if self.acl.is_some() {
                for (key, ns) in acl_gpu::STAGE_KEYS.iter().zip(self.frame_stage_ns) {
                    stats.contact.push((key, ns * 1e-6 / timed));
                }
            }
        }
        let readback_per_step = self.readback_bytes as f64 / n.max(1) as f64;
        if let Some(acl) = &mut self.acl {
            // The CPU ACL path's keys, means over the frame's steps.
            let per = 1.0 / n.max(1) as f64;
            let keys = [
                "contact_sets",
                "rebuilds",
                "rebuild_fraction",
                "entries_tracked",
                "entries_examined",
                "entries_processed",
                "newcomer_steps",
                "new_pairs",
                "touching_pairs",
            ];
            for (key, v) in keys.iter().zip(acl.frame) {
                stats.contact.push((key, v * per));
            }
            // And the frame's totals the CPU path writes (`rebuilds_frame`).
            stats.contact_frame_totals = frame_totals(keys.iter().copied().zip(acl.frame));
            acl.frame = [0.0; 9];
            stats
                .extra
                .push(("pool_compactions".into(), acl.compactions as f64));
            // The pages of the pools that pass a binding (1: one buffer; crate::acl::pages).
            stats
                .extra
                .push(("block_pages".into(), acl.path.block_pages().count() as f64));
            stats
                .extra
                .push(("term_pages".into(), acl.path.term_pages().count() as f64));
            stats.extra.push((
                "scratch_pages".into(),
                acl.path.scratch_pages().count() as f64,
            ));
            stats
                .extra
                .push(("watch_pages".into(), acl.path.watch_pages().count() as f64));
        }
        if self.exact.is_some() {
            // The CPU exact path's keys, means over the frame's steps.
            let per = 1.0 / n.max(1) as f64;
            stats
                .contact
                .push(("touching_pairs", self.frame_touching as f64 * per));
            stats.contact.push((
                "candidate_segment_pairs",
                self.frame_candidates as f64 * per,
            ));
        }
        stats.extra.push((
            "dispatches_per_step".into(),
            self.dispatches_per_step() as f64,
        ));
        stats
            .extra
            .push(("readback_bytes_per_step".into(), readback_per_step));
        // Batches run again so far (a budget or a capacity too small), capacity growths, and
        // those of them made between batches ahead of need (no rerun).
        stats
            .extra
            .push(("batch_reruns".into(), self.reruns as f64));
        stats
            .extra
            .push(("batch_rerun_steps".into(), self.rerun_steps as f64));
        // Why (so far): the budgets and capacities the reruns needed more of.
        for cause in RERUN_CAUSES {
            let n = self.rerun_causes.get(cause).copied().unwrap_or(0);
            stats.extra.push((format!("reruns_{cause}"), n as f64));
        }
        // The frame's steps rerun with more of ACL's budgets than the rest of their batch, and
        // the dispatches recorded per step of the frame, failed attempts included: what the GPU
        // did, where `dispatches_per_step` is the list a step starts from.
        stats
            .extra
            .push(("upgraded_steps".into(), self.frame_upgraded_steps as f64));
        stats.extra.push((
            "dispatches_run_per_step".into(),
            self.frame_dispatches_run as f64 / n.max(1) as f64,
        ));
        // The compute passes likewise (a pass would end at a buffer copy between stages, and
        // costs the GPU some six dispatches: benches/dispatch.rs).
        stats.extra.push((
            "passes_run_per_step".into(),
            self.frame_passes_run as f64 / n.max(1) as f64,
        ));
        stats
            .extra
            .push(("length_budget".into(), self.length_budget as f64));
        stats
            .extra
            .push(("batches".into(), self.frame_batches as f64));
        stats
            .extra
            .push(("capacity_grows".into(), self.grows as f64));
        stats
            .extra
            .push(("capacity_grows_ahead".into(), self.grows_ahead as f64));
        if let Some(acl) = &self.acl {
            // The rebuild rounds, merge passes, coalescing stage (1, or 0 once cut) and newcomer
            // search (2 with the grid, 1 listed, 0 left out) recorded per step now, and the cuts
            // of them so far.
            stats
                .extra
                .push(("acl_rebuild_rounds".into(), acl.path.caps.rounds as f64));
            stats
                .extra
                .push(("acl_coalesce".into(), acl.path.caps.coalesce as f64));
            stats
                .extra
                .push(("acl_newcomers".into(), acl.path.caps.newcomers as f64));
            stats
                .extra
                .push(("acl_merge_passes".into(), acl.path.caps.merge.passes as f64));
            stats.extra.push((
                "acl_merge_indexed".into(),
                acl.path.caps.merge.indexed as f64,
            ));
            stats
                .extra
                .push(("acl_rounds_cut".into(), self.rounds_cut as f64));
        }
        (
            stats,
            GpuFrameTimes {
                kernel_ms,
                dispatches_per_step: self.dispatches_per_step(),
                readback_bytes_per_step: readback_per_step,
                contact_ms,
                timed_steps: self.frame_timed_steps,
                batches: self.frame_batches,
                timed: self.frame_timed_steps > 0,
                host_record_ms: self.frame_host_ms[0] / n.max(1) as f64,
                host_wait_ms: self.frame_host_ms[1] / n.max(1) as f64,
                host_submit_ms: self.frame_host_ms[2] / n.max(1) as f64,
                host_check_ms: 0.0,
                host_check_wait_ms: 0.0,
                ahead_steps: 0,
            },
        )
    }
}

/// The sizes of a scene that decide which adapter limits it needs.
#[derive(Clone, Copy, Debug, Default)]
pub struct SceneCounts {
    pub points: u64,
    pub edges: u64,
    pub bends: u64,
    pub segments: u64,
    pub block_points: u64,
    /// Free balls, and the obstacles they may meet (a walking figure's 14 parts included).
    pub balls: u64,
    pub obstacles: u64,
}

impl SceneCounts {
    pub fn of(sim: &Sim) -> SceneCounts {
        SceneCounts {
            points: sim.pos.len() as u64,
            edges: sim.topo.edges.len() as u64,
            bends: sim.rod.bends.len() as u64,
            segments: sim.topo.segments.len() as u64,
            block_points: sim.block_points.len() as u64,
            balls: sim.balls.len() as u64,
            obstacles: sim.obstacles.len() as u64,
        }
    }
}

/// One adapter limit a scene needs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Need {
    pub what: &'static str,
    pub needed: u64,
    pub limit_name: &'static str,
    pub offered: u64,
}

impl Need {
    pub fn ok(&self) -> bool {
        self.needed <= self.offered
    }
}

/// What the GPU step of a scene of these sizes needs of `limits`: the largest storage binding, the
/// storage buffers of the busiest kernel, and the total buffer size of the largest array.
pub fn needs(c: &SceneCounts, limits: &wgpu::Limits) -> Vec<Need> {
    let largest = [
        ("pos/vel/force", c.points * 16),
        ("frames", c.edges * 32),
        ("segments", c.segments * 32),
        ("block_points", c.block_points * 4),
    ]
    .into_iter()
    .max_by_key(|(_, b)| *b)
    .unwrap_or(("", 0));
    let per_stage = shaders::KERNELS
        .iter()
        .map(|k| {
            k.bindings
                .iter()
                .filter(|b| b.access != shaders::Access::Uniform)
                .count() as u64
        })
        .max()
        .unwrap_or(0);
    let balls = (c.balls > 0).then(|| Need {
        what: "ball_contact loop iterations",
        needed: balls::ball_contact_iterations(c.balls, c.obstacles),
        limit_name: "one GPU thread's loop bound (lavapipe: 65,535)",
        offered: BALL_CONTACT_LOOP_LIMIT,
    });
    let mut v = vec![
        Need {
            what: "largest storage binding (bytes)",
            needed: largest.1,
            limit_name: "max_storage_buffer_binding_size",
            offered: limits.max_storage_buffer_binding_size,
        },
        Need {
            what: "largest buffer (bytes)",
            needed: largest.1,
            limit_name: "max_buffer_size",
            offered: limits.max_buffer_size,
        },
        Need {
            what: "storage buffers per kernel",
            needed: per_stage,
            limit_name: "max_storage_buffers_per_shader_stage",
            offered: limits.max_storage_buffers_per_shader_stage as u64,
        },
        Need {
            what: "threads per workgroup",
            needed: shaders::WG as u64,
            limit_name: "max_compute_invocations_per_workgroup",
            offered: limits.max_compute_invocations_per_workgroup as u64,
        },
    ];
    v.extend(balls);
    v
}

/// What ACL's buffers of the scene's own size need of `limits` (the scheduler's position
/// snapshots, movement windows, quadrature points, cell boxes and motion records:
/// [`crate::sched::gpu::fixed_binding_bytes`]), for `c`'s segments and points, `quadrature` points
/// a segment and `max_bin` schedule bins. (Its capacities are lowered to the limit instead:
/// [`acl_lowered`].)
pub fn acl_needs(
    c: &SceneCounts,
    quadrature: u32,
    max_bin: u32,
    limits: &wgpu::Limits,
) -> Vec<Need> {
    let table = crate::sched::gpu::fixed_binding_bytes(
        c.segments,
        c.points,
        quadrature as u64,
        max_bin as u64,
    );
    table
        .into_iter()
        .map(|(name, bytes)| Need {
            what: match name {
                "snaps" => "ACL: position snapshots of the schedule bins (bytes)",
                "windows" => "ACL: movement windows (bytes)",
                "qpts" => "ACL: quadrature points (bytes)",
                "cells" => "ACL: cell boxes (bytes)",
                _ => "ACL: motion records (bytes)",
            },
            needed: bytes,
            limit_name: "max_storage_buffer_binding_size",
            offered: limits.max_storage_buffer_binding_size,
        })
        .collect()
}

/// Fails with [`GpuStepError::Binding`] when the exact path's buffers for `caps` (entries,
/// candidates, records) would pass what `device` binds (checked before any buffer is made).
fn check_exact_binding(
    device: &wgpu::Device,
    sim: &Sim,
    step: u64,
    caps: (u32, u32, u32),
) -> Result<(), GpuStepError> {
    let limit = device.limits().max_storage_buffer_binding_size;
    let quad = sim.topo.segments.len() as u32 * sim.step_params().quadrature;
    match exact_gpu::over_binding(limit, sim.topo.segments.len() as u32, quad, caps) {
        Some((what, bytes)) => Err(GpuStepError::Binding {
            step,
            what,
            bytes,
            limit,
            count_bytes: None,
        }),
        None => Ok(()),
    }
}

/// What the exact path's buffers for `caps` (entries, candidates, records; a scene's first are
/// [`exact_gpu::first_capacities`] of one detection) need of `limits`: one row a size of
/// [`exact_gpu::binding_bytes`].
pub fn exact_needs(
    num_segments: u32,
    quad_points: u32,
    caps: (u32, u32, u32),
    limits: &wgpu::Limits,
) -> Vec<Need> {
    exact_gpu::binding_bytes(num_segments, quad_points, caps)
        .into_iter()
        .map(|(name, bytes)| Need {
            what: match name {
                "exact.segments" => "exact contact: per-segment boxes (bytes)",
                "exact.quadrature" => "exact contact: quadrature points (bytes)",
                "exact.entries" => "exact contact: grid entries (bytes)",
                "exact.candidates" => "exact contact: candidate pairs' records (bytes)",
                _ => "exact contact: touching records' gather slots (bytes)",
            },
            needed: bytes,
            limit_name: "max_storage_buffer_binding_size",
            offered: limits.max_storage_buffer_binding_size,
        })
        .collect()
}

/// ACL's first capacities for `num_segments` segments ([`AclCaps::for_segments`], estimates)
/// whose buffers pass `limits`' binding size, with their bytes (not the pools laid out in pages,
/// [`AclCaps::paged_within`]): `GpuSim` lowers these to what fits ([`AclCaps::fit_binding`]), and a
/// step that needs more than that stops with an error.
pub fn acl_lowered(num_segments: u32, limits: &wgpu::Limits) -> Vec<(&'static str, u64)> {
    let limit = limits.max_storage_buffer_binding_size;
    AclCaps::for_segments(num_segments)
        .binding_bytes()
        .into_iter()
        .filter(|&(name, b)| b > limit && !AclCaps::paged_within(name, limit))
        .collect()
}

/// ACL's first capacities for `num_segments` segments whose pools pass `limits`' binding size and
/// go into pages that each fit instead ([`AclCaps::paged_within`], [`crate::acl::pages`]), with
/// their bytes: not lowered, bounded by the device's memory only.
pub fn acl_paged(num_segments: u32, limits: &wgpu::Limits) -> Vec<(&'static str, u64)> {
    let limit = limits.max_storage_buffer_binding_size;
    AclCaps::for_segments(num_segments)
        .binding_bytes()
        .into_iter()
        .filter(|&(name, b)| b > limit && AclCaps::paged_within(name, limit))
        .collect()
}

/// Fails with the first limit the scene exceeds on this device.
fn check_limits(device: &wgpu::Device, sim: &Sim, adapter: &str) -> Result<(), GpuStepError> {
    match needs(&SceneCounts::of(sim), &device.limits())
        .into_iter()
        .find(|n| !n.ok())
    {
        Some(n) => Err(GpuStepError::Limit {
            what: n.what,
            needed: n.needed,
            limit: n.offered,
            limit_name: n.limit_name,
            adapter: adapter.into(),
        }),
        None => Ok(()),
    }
}

/// Uploads every array of `sim` under its binding name, and the tiles of `frame_solve` when the rod
/// has them (`rod::frame_tiles`); returns their number.
fn upload_state(
    b: &mut Buffers,
    device: &wgpu::Device,
    queue: &wgpu::Queue,
    sim: &Sim,
    params: &Params,
) -> Option<u32> {
    use bytemuck::cast_slice as bytes;
    let mut up = |name: &str, data: &[u8]| {
        b.upload(device, queue, name, data, false);
    };
    up("counters", bytemuck::bytes_of(&Counters::default()));
    up("pos", bytes(&sim.pos));
    up("vel", bytes(&sim.vel));
    up("force", bytes(sim.force()));
    up("mass", bytes(&sim.mass));
    up("inv_mass", bytes(&sim.inv_mass));
    up("glue_points", bytes(&sim.glue_points));
    up("glue_target", bytes(&sim.glue_target));
    let (ties, tie_length) = sim.ties();
    up("ties", bytes(ties));
    up("tie_length", bytes(tie_length));
    up("obstacles", bytes(&sim.obstacles));
    up("yarns", bytes(&sim.topo.yarns));
    up("edges", bytes(&sim.topo.edges));
    up("segments", bytes(&sim.topo.segments));
    up("bends", bytes(&sim.rod.bends));
    up("bend_rest", bytes(&sim.rod.rest));
    up("frames", bytes(&sim.rod.frames));
    up("point_bends", bytes(&sim.rod.point_bends));
    up("bend_kb", bytes(&sim.rod.bend_kb));
    up("edge_bends", bytes(&sim.rod.edge_bends));
    up("edge_order", bytes(&sim.rod.edge_order));
    up("theta_step", bytes(&sim.rod.theta_step));
    up("theta_start", bytes(&sim.rod.theta_start));
    up("rest_start", bytes(&sim.rod.rest_start));
    let r = &sim.rod;
    let tiles = crate::rod::frame_tiles(
        &sim.topo,
        &r.bends,
        &r.edge_bends,
        &r.edge_order,
        &r.color_start,
        params.frame_sweeps,
    )
    .filter(|t| !t.is_empty());
    if let Some(t) = &tiles {
        up("frame_tiles", bytes(t));
    }
    up("block_start", bytes(&sim.block_start));
    up("block_points", bytes(&sim.block_points));
    b.upload(device, queue, "params", bytemuck::bytes_of(params), true);
    tiles.map(|t| (t.len() / crate::rod::FRAME_TILE) as u32)
}

/// The free balls' buffers (`balls`, `ball_count`, `ball_hit_offsets`, `ball_pairs`), and room for
/// `cap` contacts (one record each at least: the step binds them whether or not there are balls).
fn upload_balls(b: &mut Buffers, device: &wgpu::Device, queue: &wgpu::Queue, sim: &Sim, cap: u32) {
    let nb = sim.balls.len();
    b.upload(
        device,
        queue,
        "balls",
        bytemuck::cast_slice(&sim.balls),
        false,
    );
    b.upload(device, queue, "ball_count", &vec![0; 4 * nb], false);
    b.upload(
        device,
        queue,
        "ball_hit_offsets",
        &vec![0; if nb > 0 { 4 * (sim.pos.len() + 1) } else { 0 }],
        false,
    );
    let pairs = (nb * nb.saturating_sub(1) / 2).max(1);
    b.upload(device, queue, "ball_pairs", &vec![0; 4 * pairs], false);
    upload_ball_room(b, device, queue, cap);
}

/// `ball_hits` with room for `cap` records (`params.ball_hit_capacity`, written per step).
fn upload_ball_room(b: &mut Buffers, device: &wgpu::Device, queue: &wgpu::Queue, cap: u32) {
    let bytes = cap as usize * std::mem::size_of::<BallHit>();
    b.upload(device, queue, "ball_hits", &vec![0; bytes], false);
}

/// Records the buffer copies that come before a dispatch.
/// Steps of one batch at most that [`GpuSim::upgrade`] records with more budgets than the rest;
/// one more step that needs more records every step with more. Each upgrade costs a rerun of the
/// batch up to its step, and halves the next batches ([`FIRST_BATCH`]), while raising the budgets
/// of every step costs the raised stages in the batch and in the batches until the next cut.
pub const MAX_UPGRADES: usize = 1;

/// Completed batches in a row that ran once, since ACL's budgets last changed, before
/// [`GpuSim::upgrade`] tries an upgrade: a sign that with the budgets as they are steps needing
/// more are rare (fewer than one in this many batches), so that the batch holds no second one.
/// (Batches run with raised budgets do not count: they say nothing of the cut ones.) In motion
/// such steps come often, and an upgrade's rerun was then followed by a second for the next step
/// of the batch that needed more: the default swatch swinging down on lavapipe, its second frame,
/// with upgrades tried after any batch: 10 reruns and 440 dispatches run per step, against 6 and
/// 366 without upgrades; the rerun log showed the second failures in the same batch as the
/// first.
pub const UPGRADE_AFTER_CLEAN: u32 = 4;

/// The budgets an upgraded step gets when a step that ran with the driver's `base` budgets needs
/// `need` (the verdict's): every stage (coalescing, the newcomer search through the grid, the set
/// index), and at
/// least twice `base`'s rebuild rounds, merge passes and label rounds. Generous, because a step
/// that needs one stage often needs the next: on the hanging tiny swatch (lavapipe), steps that needed the
/// coalescing stage then needed a second merge pass for the sets it made, each a rerun of its own.
fn upgrade_budgets(base: &AclCaps, need: &AclCaps) -> AclCaps {
    let mut caps = *need;
    caps.coalesce = 1;
    caps.newcomers = 2;
    caps.merge.indexed = 1;
    caps.rounds = caps.rounds.max(2 * base.rounds);
    caps.merge.passes = caps.merge.passes.max(2 * base.merge.passes);
    caps.merge.rounds = caps.merge.rounds.max(2 * base.merge.rounds);
    caps
}

/// The dispatches of ACL's operations `ops`, each with the copies between it and the dispatch
/// before; the copies before the first and after the last apart, for the step's start and end.
fn acl_dispatches(ops: &[Op]) -> Result<(StepCopies, Vec<Dispatch>), GpuStepError> {
    let mut dispatches: Vec<Dispatch> = Vec::new();
    let mut lead = Vec::new();
    let mut pending: Vec<CopyOp> = Vec::new();
    let mut stages = acl_gpu::dispatch_stages(ops.iter().filter_map(|op| match op {
        Op::Dispatch((kernel, _, _)) => Some(*kernel),
        Op::Copy { .. } => None,
    }))
    .into_iter();
    for op in ops {
        match op {
            Op::Dispatch((kernel, bg, threads)) => {
                let k = shaders::kernel(kernel).map_err(PipelineError::from)?;
                let mut copies = std::mem::take(&mut pending);
                if dispatches.is_empty() {
                    lead = std::mem::take(&mut copies);
                }
                dispatches.push(Dispatch {
                    kernel,
                    bind_group: bg.clone(),
                    grid: threads.grid(k.workgroup_size),
                    copies,
                    phase: PHASE_CONTACT,
                    stage: stages.next(),
                });
            }
            Op::Copy {
                src,
                src_offset,
                dst,
                dst_offset,
                size,
            } => pending.push(CopyOp {
                src: src.clone(),
                src_offset: *src_offset,
                dst: dst.clone(),
                dst_offset: *dst_offset,
                size: *size,
            }),
        }
    }
    let copies = StepCopies {
        lead,
        tail: pending,
    };
    Ok((copies, dispatches))
}

/// Compute passes an untimed step records with the list `ds`: one, plus one after each copy
/// between its dispatches.
fn passes_of(ds: &[Dispatch]) -> u32 {
    1 + ds.iter().skip(1).filter(|d| !d.copies.is_empty()).count() as u32
}

fn record_copies(enc: &mut wgpu::CommandEncoder, copies: &[CopyOp]) {
    for c in copies {
        enc.copy_buffer_to_buffer(&c.src, c.src_offset, &c.dst, c.dst_offset, c.size);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_upgraded_step_gets_every_stage_and_twice_the_cut_budgets() {
        let mut base = AclCaps::all(64);
        base.rounds = 1;
        base.merge.passes = 1;
        base.merge.rounds = 2;
        base.coalesce = 0;
        base.newcomers = 0;
        base.merge.indexed = 0;
        // A step that needed only the coalescing stage.
        let need = AclCaps {
            coalesce: 1,
            ..base
        };
        let up = upgrade_budgets(&base, &need);
        assert_eq!((up.coalesce, up.newcomers, up.merge.indexed), (1, 2, 1));
        assert_eq!((up.rounds, up.merge.passes, up.merge.rounds), (2, 2, 4));
        // What the step needed beyond twice the cut stays; capacities are untouched.
        let need = AclCaps { rounds: 8, ..base };
        let up = upgrade_budgets(&base, &need);
        assert_eq!((up.rounds, up.merge.passes, up.merge.rounds), (8, 2, 4));
        assert_eq!(
            (up.sched, up.points, up.merge.sets),
            (base.sched, base.points, base.merge.sets)
        );
    }
}
