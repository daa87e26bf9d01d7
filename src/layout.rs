//! The layout contract of the GPU time step: every record a kernel binds, as a `#[repr(C)]` bytemuck
//! `Pod` struct of 4-byte scalars (and arrays of them) with its padding written out and its size
//! asserted, mirrored field for field by `shaders/shared/layout.wgsl`.
//!
//! Besides the topology and rod records (which the CPU stages use as they are), it holds the two
//! blocks every kernel may bind:
//! - [`Params`], the `params` uniform: the scene's constants and the per-step values (step index,
//!   damping phase) that the host writes before each step;
//! - [`Counters`], the `counters` storage block: error flags the kernels raise (NaN, length
//!   projection not converged), the worst values they saw, and for every variable-size output its
//!   count, capacity and overflow flag. The host reads it back once per step.
//!
//! [`layouts`] lists each struct's size and field offsets; `tests/layout.rs` compares them with
//! naga's reflection of the WGSL structs, so a field added on one side only fails a test.
//! WGSL's `vec3` has 16-byte alignment, so points are `[f32; 4]` / `vec4<f32>` (w documented where
//! used), and nothing bound is a `u16` or a 12-byte vector.

use bytemuck::{Pod, Zeroable};
use std::mem::{offset_of, size_of};
// ACL's records live with their stages (src/acl/) and are listed here for the reflection test.
use crate::acl::pages::{PagePairs, PoolPage, RebuildRun};
use crate::acl::rebuild::{AllocGroup, PoolAlloc, RebuildParams, RebuildPlan, RebuildTerm};
use crate::acl::{ContactSet, StictionSpring, WatchLoc, WatchPair};

/// One yarn's ranges in the flat arrays.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Pod, Zeroable)]
pub struct Yarn {
    pub first_point: u32,
    pub num_points: u32,
    /// 1 for a closed loop, 0 for an open yarn with tangent handles.
    pub closed: u32,
    pub first_segment: u32,
    pub num_segments: u32,
    pub first_edge: u32,
    pub num_edges: u32,
    pub _pad: u32,
}
const _: () = assert!(size_of::<Yarn>() == 32);

/// A spline segment: the four control points it depends on.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Pod, Zeroable)]
pub struct Segment {
    /// Global indices of `q_{i−1}, q_i, q_{i+1}, q_{i+2}`.
    pub cp: [u32; 4],
    pub yarn: u32,
    /// Index of the polyline edge `q_i → q_{i+1}` this segment spans; its rest length is `ℓ_seg`.
    pub edge: u32,
    /// Position of the segment along its yarn (0-based), used by the same-yarn contact exclusion.
    pub index_in_yarn: u32,
    pub _pad: u32,
}
const _: () = assert!(size_of::<Segment>() == 32);

/// A polyline edge between consecutive control points.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Pod, Zeroable)]
pub struct Edge {
    pub a: u32,
    pub b: u32,
    pub yarn: u32,
    pub rest_length: f32,
}
const _: () = assert!(size_of::<Edge>() == 16);

/// A bending element: vertex `v[1]` between edges `e[0]` (`v[0]→v[1]`) and `e[1]` (`v[1]→v[2]`).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Pod, Zeroable)]
pub struct Bend {
    pub v: [u32; 3],
    pub e: [u32; 2],
    /// Rest lengths `l₀, l₁` of the two edges.
    pub rest_len: [f32; 2],
    pub _pad: u32,
}
const _: () = assert!(size_of::<Bend>() == 32);

/// The rest state and the tracked reference twist of a bending element.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Pod, Zeroable)]
pub struct BendRest {
    /// Rest material curvature `ω̄ʲ` in the frame of edge `j` (j = 0, 1); moved by plasticity.
    pub kappa: [[f32; 2]; 2],
    /// Rest twist `m̄`.
    pub twist: f32,
    /// Reference twist ψ, accumulated over time (not wrapped to (−π, π]).
    pub ref_twist: f32,
    /// The element's rest curvature `|ω̄|` at the start (the larger of its two edges'): plasticity
    /// bounds `|ω̄|` by `max(p_max, kappa_start)`, so a model's own sharper bends stay its rest shape
    /// (`rod::plastic_kappa`). 0 (as in checkpoints written before it existed) leaves `p_max` alone.
    pub kappa_start: f32,
    pub _pad: f32,
}
const _: () = assert!(size_of::<BendRest>() == 32);

/// The frame of a polyline edge.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Pod, Zeroable)]
pub struct EdgeFrame {
    /// Reference director `u` (xyz, unit, ⊥ `t`); w = material angle θ from `u`.
    pub u: [f32; 4],
    /// Unit tangent `t` that `u` was last transported to (xyz); w unused (0).
    pub t: [f32; 4],
}
const _: () = assert!(size_of::<EdgeFrame>() == 32);

/// The `color_range` uniform of the `theta_sweep` kernel: the slice `first .. first + count` of
/// `edge_order` holding the edges of one colour (`rod::color_ranges`). The GPU step keeps one small
/// uniform buffer and one bind group per colour, since the kernel is dispatched once per colour.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Pod, Zeroable)]
pub struct ColorRange {
    pub first: u32,
    pub count: u32,
    pub _pad0: u32,
    pub _pad1: u32,
}
const _: () = assert!(size_of::<ColorRange>() == 16);

/// An obstacle placed at the end of the current step, as the `object_contact` kernel reads it.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Pod, Zeroable)]
pub struct ObstacleShape {
    /// [`crate::step::OBSTACLE_PLANE`], [`crate::step::OBSTACLE_SPHERE`] or
    /// [`crate::step::OBSTACLE_CAPSULE`].
    pub kind: u32,
    /// Coulomb-like friction coefficient: tangential relative speed drops by at most this times the
    /// removed normal speed.
    pub friction: f32,
    /// Sphere/capsule radius (0 for a plane).
    pub radius: f32,
    pub _pad: u32,
    /// Plane: a point on it; sphere: centre; capsule: first end.
    pub a: [f32; 4],
    /// Plane: unit normal (the free side); capsule: second end.
    pub b: [f32; 4],
    /// Velocity of the obstacle over this step (a capsule: of its first end `a`).
    pub vel: [f32; 4],
    /// A capsule's second end `b`, velocity over this step: its axis point `a + s (b − a)` moves at
    /// `vel + s (vel_b − vel)`, so a limb can swing about a joint. Unused by planes and spheres.
    pub vel_b: [f32; 4],
}
const _: () = assert!(size_of::<ObstacleShape>() == 80);

/// One free ball (`crate::balls`; the `balls` buffer). 64 bytes.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Pod, Zeroable)]
pub struct BallState {
    /// Centre (xyz, cm) and radius (w, cm).
    pub center: [f32; 4],
    /// Velocity (xyz, cm/s) and 1 / mass (w, 1/g; 0 holds the ball in place).
    pub vel: [f32; 4],
    /// Angular velocity (xyz, rad/s) and 1 / moment of inertia (w; a solid sphere, `2/5 M R²`).
    pub omega: [f32; 4],
    /// Mass (g).
    pub mass: f32,
    /// Coulomb friction coefficient (against yarn as is; against a ball or an obstacle, the
    /// geometric mean with the other's).
    pub friction: f32,
    /// Coefficient of restitution against balls and obstacles (0: no bounce, 1: elastic).
    pub restitution: f32,
    pub _pad: u32,
}
const _: () = assert!(size_of::<BallState>() == 64);

/// One yarn–ball contact of a step (the `ball_hits` buffer, in point order then ball order): the
/// control point, the ball, the impulse the ball receives and where it acts (the point's position
/// minus the ball's centre). 32 bytes; its arrays have stride 4 in the storage address space.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Pod, Zeroable)]
pub struct BallHit {
    pub point: u32,
    pub ball: u32,
    pub impulse: [f32; 3],
    pub arm: [f32; 3],
}
const _: () = assert!(size_of::<BallHit>() == 32);

/// The `params` uniform: scene constants and this step's values. Field names are the WGSL names.
///
/// Only 4-byte scalars, so the uniform address space's 16-byte rules for vectors and arrays never
/// apply; the size is a multiple of 16 as uniform blocks require.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Pod, Zeroable)]
pub struct Params {
    /// Time step h (s).
    pub h: f32,
    /// Yarn radius r (cm).
    pub radius: f32,
    pub gravity_x: f32,
    pub gravity_y: f32,
    pub gravity_z: f32,
    /// Bending stiffness EI and twisting stiffness GJ.
    pub bending: f32,
    pub twisting: f32,
    /// Plasticity radius and bound (`inf` allowed: the comparisons then never hold).
    pub plastic_radius: f32,
    pub plastic_max: f32,
    /// Non-rigid damping μ_const, μ_prop.
    pub damping_const: f32,
    pub damping_prop: f32,
    /// Relative edge-length tolerance of the length projection and its iteration cap.
    pub length_tolerance: f32,
    pub length_max_iterations: u32,
    /// Red–black sweeps of the quasi-static material-frame solve.
    pub frame_sweeps: u32,
    pub num_points: u32,
    pub num_edges: u32,
    pub num_bends: u32,
    pub num_segments: u32,
    pub num_yarns: u32,
    pub num_glue: u32,
    pub num_obstacles: u32,
    /// The blocks `first_block .. first_block + num_blocks` of `block_start` are this step's damping
    /// phase.
    pub first_block: u32,
    pub num_blocks: u32,
    /// Steps taken before this one (low 32 bits; only parities and small moduli are taken of it).
    pub step: u32,
    /// Contact: k_contact, quadrature points per segment b, grid cell width γ, and the same-yarn
    /// exclusion arc (cm).
    pub k_contact: f32,
    pub quadrature: u32,
    pub grid_cell: f32,
    pub exclusion_arc: f32,
    /// Grid origin (the cell lattice's corner), so cell coordinates are small integers.
    pub grid_origin_x: f32,
    pub grid_origin_y: f32,
    pub grid_origin_z: f32,
    /// `1 / grid_cell`, computed on the host (`contact::grid::set_grid_frame`), so that both paths
    /// multiply by the same f32 rather than each dividing (a GPU division is not correctly rounded).
    pub grid_inv_cell: f32,
    /// `1 / (1 + h c)` for air drag c (`damping.air`, 1/s), applied implicitly by
    /// `integrate_velocity`; exactly 1 without drag. Computed on the host so both paths multiply
    /// by the same f32.
    pub air_factor: f32,
    /// Free balls (`crate::balls`): how many; 1 while they are held in place with the obstacles
    /// (they neither move nor receive impulses, and the yarn meets them as fixed spheres); and the
    /// records `ball_hits` holds (its count and overflow flag: `counters.ball_hits`; the CPU path
    /// sizes its list by the count and writes `u32::MAX`).
    pub num_balls: u32,
    pub balls_held: u32,
    pub ball_hit_capacity: u32,
}
const _: () = assert!(size_of::<Params>() == 144);

impl Default for Params {
    /// All zero but `air_factor`, which is 1 (no drag).
    fn default() -> Self {
        Params {
            air_factor: 1.0,
            ..Zeroable::zeroed()
        }
    }
}

/// Error flags in [`Counters::errors`].
pub const ERROR_NAN_FORCE: u32 = 1;
pub const ERROR_NAN_VELOCITY: u32 = 2;
pub const ERROR_LENGTH_NOT_CONVERGED: u32 = 4;
pub const ERROR_NAN_POSITION: u32 = 8;
/// Exact contact grid: a segment's box lies beyond the grid's key range (±2²⁰ cells from the
/// origin) or covers more than `contact::grid::MAX_CELLS_PER_SEGMENT` cells (cloth exploded, or
/// `contact.grid_cell` far too small); the segment was left out of the grid.
pub const ERROR_GRID_RANGE: u32 = 16;
/// Exact contact grid: a cell holds more than `contact::grid::MAX_CELL_RUN` entries; pairs beyond
/// were not examined. The scheduler's grid (`sched_counters.errors`): a run of items of one cell
/// hash is longer than `sched::SCHED_MAX_CELL_RUN`.
pub const ERROR_GRID_CELL_FULL: u32 = 32;
/// Exact contact: a penalty force is not finite (coincident quadrature points); the lowest control
/// point it acts on is in `first_bad_point`.
pub const ERROR_CONTACT_NOT_FINITE: u32 = 64;
/// Exact contact: a control point is named by more than `MAX_GATHER` (4096) touching force slots;
/// the rest were not added.
pub const ERROR_GATHER_FULL: u32 = 128;
/// A free ball's velocity or spin is not finite after `ball_contact`; the lowest such ball is in
/// `first_bad_ball`.
pub const ERROR_NAN_BALL: u32 = 256;

/// A variable-size output's bookkeeping: how many records the kernels wanted to write, how many
/// fit, and whether any were dropped (`count > capacity`).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Pod, Zeroable)]
pub struct Capacity {
    pub count: u32,
    pub capacity: u32,
    pub overflow: u32,
    pub _pad: u32,
}
const _: () = assert!(size_of::<Capacity>() == 16);

/// The `counters` storage block (atomics in WGSL). Zeroed by the host at the start of every step,
/// except the capacities, which the host writes.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Pod, Zeroable)]
pub struct Counters {
    /// `ERROR_*` bits raised this step.
    pub errors: u32,
    /// The lowest control point with a non-finite force/velocity/position (`u32::MAX`: none).
    pub first_bad_point: u32,
    /// Largest Fast Projection iteration count of the length projection.
    pub length_iterations: u32,
    /// Largest relative edge-length error after the length projection, as f32 bits (non-negative
    /// floats order like their bits, so `atomicMax` on the bits is a float max).
    pub length_error_bits: u32,
    /// Grid entries (segment, cell) of the exact contact path.
    pub grid_entries: Capacity,
    /// Candidate segment pairs.
    pub candidate_pairs: Capacity,
    /// Touching quadrature pairs of the exact path (a count only: no list is stored, so its
    /// capacity and overflow stay 0).
    pub touching_pairs: Capacity,
    /// Candidate pairs with a touching quadrature pair (records in the exact path's gather table,
    /// 8 slots each).
    pub touching_records: Capacity,
    /// Yarn–ball contacts of the step (`ball_hits`, written by `ball_yarn_contact`).
    pub ball_hits: Capacity,
    /// The lowest ball whose velocity or spin is not finite (`u32::MAX`: none; with
    /// `ERROR_NAN_BALL`).
    pub first_bad_ball: u32,
    /// Slots of the exact path's gather table in use, `8 · min(touching records, capacity)`
    /// (written by `contact_slots`): the live length of the table's counted sort.
    pub gather_slots: u32,
    /// With [`ERROR_LENGTH_NOT_CONVERGED`], the length projection's first edge in the last
    /// evaluation whose relative error is not below the tolerance (or, when none is, the first
    /// with the largest error): the lowest edge whose error bits reach the smaller of the
    /// tolerance's and `length_error_bits`, written by `length_finish` (`u32::MAX`: none; a
    /// fresh step's counters must hold `u32::MAX`). The host names its yarn in the error.
    pub first_unconverged_edge: u32,
    pub _pad2: u32,
}
const _: () = assert!(size_of::<Counters>() == 112);

impl Counters {
    /// The block a step starts from: no errors, and `u32::MAX` (none) in the fields that name the
    /// lowest bad point, ball or edge. Capacities are the caller's to set.
    pub fn fresh() -> Counters {
        Counters {
            first_bad_point: u32::MAX,
            first_bad_ball: u32::MAX,
            first_unconverged_edge: u32::MAX,
            ..Counters::default()
        }
    }
}

/// The per-dispatch `scan_pass` uniform of `scan_reduce` / `scan_add` (src/scan.rs): one level of
/// the multi-level exclusive prefix sum.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Pod, Zeroable)]
pub struct ScanPass {
    /// Elements at this level.
    pub n: u32,
    /// 0: the level is `scan_data` itself; k ≥ 1: it is `scan_partials[offset .. offset + n]`.
    pub level: u32,
    pub offset: u32,
    /// Where the next level up (one sum per 2,048 elements of this one) starts in `scan_partials`.
    pub next_offset: u32,
    /// 1 when the next level up is the plan's top and is never scanned itself: each block of this
    /// level sums the block sums before its own for its offset, which saves the top's dispatch.
    pub next_unscanned: u32,
    /// Elements of the next level up per block of this one: 1, or on level 0 of a scan whose
    /// producer wrote one sum per workgroup of 256 elements ([`crate::scan::ScanPlan::grouped`]) 8,
    /// the unscanned top being those group sums. 0 reads as 1.
    pub next_per_block: u32,
    pub _pad1: u32,
    pub _pad2: u32,
}
const _: () = assert!(size_of::<ScanPass>() == 32);

/// The per-dispatch `sort_pass` uniform of `sort_histogram` / `sort_scatter` (src/sort.rs): one
/// 8-bit digit pass of the radix sort.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Pod, Zeroable)]
pub struct SortPass {
    /// Records sorted.
    pub n: u32,
    /// Bit position of the digit in the 64-bit key (0, 8, …, 56).
    pub shift: u32,
    /// Blocks of 256 records: `ceil(n / 256)`.
    pub num_blocks: u32,
    pub _pad: u32,
}
const _: () = assert!(size_of::<SortPass>() == 16);

/// What `count_plan` makes of a live count: the length `n = min(count, cap − add) + add` of a
/// counted scan or sort (`count` = word `src_word` of the buffer bound as `plan_src`), written
/// into the `n` (and `num_blocks`) fields of its per-level and per-pass uniforms and into its
/// indirect dispatch arguments, all in one plan buffer (src/scan.rs, [`crate::scan::count_plan`]).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Pod, Zeroable)]
pub struct CountPlan {
    pub src_word: u32,
    pub add: u32,
    pub cap: u32,
    /// [`COUNT_PLAN_SCAN`], [`COUNT_PLAN_SORT`], [`COUNT_PLAN_GRID`] or [`COUNT_PLAN_GRIDS`].
    pub kind: u32,
    /// A sort's digit passes (slots `0 .. num_passes`); 0 for a scan.
    pub num_passes: u32,
    /// The scan's levels (a sort's: of its histogram), in the slots after the passes; for
    /// [`COUNT_PLAN_GRIDS`], its grids (at most [`COUNT_PLAN_MAX_GRIDS`]), one per slot.
    pub num_levels: u32,
    /// Word of the plan buffer where the indirect arguments start: a sort's block grid first, then
    /// one grid per scan level; a grid's one grid.
    pub args_word: u32,
    /// A grid's threads per counted item and its kernel's workgroup size: the grid has
    /// `⌈n · threads_per_item / workgroup_size⌉` workgroups.
    pub threads_per_item: u32,
    pub workgroup_size: u32,
    pub _pad0: u32,
    pub _pad1: u32,
    pub _pad2: u32,
}
const _: () = assert!(size_of::<CountPlan>() == 48);

/// [`CountPlan::kind`] of a scan.
pub const COUNT_PLAN_SCAN: u32 = 0;
/// [`CountPlan::kind`] of a radix sort.
pub const COUNT_PLAN_SORT: u32 = 1;
/// [`CountPlan::kind`] of one kernel's grid over the counted items.
pub const COUNT_PLAN_GRID: u32 = 2;
/// [`CountPlan::kind`] of several kernels' grids over one count, written by one dispatch: grid
/// `k`'s slot holds its [`GridSpec`] (its `n = min(count, cap) + add`), its arguments are triple
/// `k` from `args_word` on.
pub const COUNT_PLAN_GRIDS: u32 = 3;
/// The most grids of a [`COUNT_PLAN_GRIDS`] plan (the bound of `count_plan`'s loop).
pub const COUNT_PLAN_MAX_GRIDS: u32 = 4;

/// One grid of a [`COUNT_PLAN_GRIDS`] plan, in its slot of the plan buffer: over `min(count, cap)
/// + add` items, `⌈n · threads_per_item / workgroup_size⌉` workgroups.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Pod, Zeroable)]
pub struct GridSpec {
    pub add: u32,
    pub threads_per_item: u32,
    pub workgroup_size: u32,
    pub _pad: u32,
}
const _: () = assert!(size_of::<GridSpec>() == 16);

/// How often the damping stage's rigid fit refines its spin towards `I ω = L` (see
/// `step::rigid_motion`, twin of shaders/shared/damping.wgsl).
pub const RIGID_REFINEMENTS: u32 = 2;

/// Elements each thread of a scan kernel handles (src/scan.rs).
pub const SCAN_PER_THREAD: u32 = 8;
/// Elements of one scan block, one workgroup of 256 threads: a level of `n` elements has
/// `⌈n / SCAN_BLOCK⌉` blocks, each one element of the level above.
pub const SCAN_BLOCK: u32 = 256 * SCAN_PER_THREAD;

/// A sort record: a 64-bit key (`key_hi:key_lo`) and a value, sorted by key, stably (src/sort.rs).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Pod, Zeroable)]
pub struct KeyValue {
    pub key_lo: u32,
    pub key_hi: u32,
    pub value: u32,
    pub _pad: u32,
}
const _: () = assert!(size_of::<KeyValue>() == 16);

/// A spline segment in the exact contact grid (`aabb_raster`): its exact AABB padded by r, and the
/// box of grid cells it covers.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Pod, Zeroable)]
pub struct SegmentBox {
    /// Padded bounds (xyz; w = 0).
    pub lo: [f32; 4],
    pub hi: [f32; 4],
    /// Cell coordinates of the lower and upper corner (xyz, inclusive); `cell_lo[3]` is the number
    /// of cells (0 when the segment was left out: non-finite or out of the grid's range).
    pub cell_lo: [i32; 4],
    pub cell_hi: [i32; 4],
}
const _: () = assert!(size_of::<SegmentBox>() == 64);

/// Per-axis interval `[lo, hi]` of a vector field over one spline segment (w unused, 0): the
/// scheduler's movement bounds (`mv1`, `mv2`, windows) and padded AABBs.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Pod, Zeroable)]
pub struct Interval {
    pub lo: [f32; 4],
    pub hi: [f32; 4],
}
const _: () = assert!(size_of::<Interval>() == 32);

/// Inclusive box of integer grid cells of the scheduler; `lo[3] = 1` marks a valid box (0: none
/// yet), `hi[3]` is 0.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Pod, Zeroable)]
pub struct CellBox {
    pub lo: [i32; 4],
    pub hi: [i32; 4],
}
const _: () = assert!(size_of::<CellBox>() == 32);

/// A tracked segment pair (`seg_a < seg_b`). The entries form one table sorted by `(seg_a, seg_b)`,
/// with no gaps: every step's changes are written by compaction and merging, never into free slots.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Pod, Zeroable)]
pub struct SchedEntry {
    pub seg_a: u32,
    pub seg_b: u32,
    /// Lower bound on the gap `distance − 2r` over the unowned quadrature pairs, at the start of the
    /// window of the entry's bin (see the module docs). Negative: process at the next examination.
    pub d: f32,
    /// The bin λ (`sched::ENTRY_BIN` bits) and the flags `ENTRY_MIXED`, `ENTRY_DUE`.
    pub bin_flags: u32,
}
const _: () = assert!(std::mem::size_of::<SchedEntry>() == 16);

/// A contact set's box changed from `before` to `after` (`sched::EMPTY_BOX` when the set was deleted): the
/// pairs of `before` outside `after` are back in empty space, and the entries holding them must be
/// processed at the next step (their bounds ignored those pairs). The contact sets list these as
/// they change; the scheduler reads the list at its next `Scheduler::detect`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Pod, Zeroable)]
pub struct Release {
    pub before: [u32; 4],
    pub after: [u32; 4],
}
const _: () = assert!(size_of::<Release>() == 32);

/// The scheduler's constants of one step (`sched` of its kernels, src/sched/: a uniform, or
/// read-only storage in the kernels that read a table length the GPU step computes,
/// `sched::SchedGpu`).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Pod, Zeroable)]
pub struct SchedUniform {
    pub num_segments: u32,
    pub num_points: u32,
    pub num_entries: u32,
    /// `b`, quadrature points per segment.
    pub quadrature: u32,
    /// Yarn radius `r` (cm).
    pub radius: f32,
    /// Grid cell width γ (cm) and its reciprocal, computed once on the host so both paths multiply
    /// by the same number.
    pub cell: f32,
    pub inv_cell: f32,
    /// ω (cm/step²).
    pub omega: f32,
    /// The integer cell at which cell coordinates are measured (xyz; w unused): cells are absolute
    /// (`⌊x/γ⌋`), computed relative to it for precision.
    pub anchor: [i32; 4],
    /// The step number's low 32 bits (bins examined at this step: `n mod 2^λ = 0`, λ ≤ 24).
    pub step: u32,
    /// The largest bin examined at this step (`u32::MAX` at step 0).
    pub bins_due: u32,
    /// λ_max.
    pub max_bin: u32,
    /// `SCHED_NO_*` bits: safety rules switched off (tests only; 0 in a run).
    pub switches: u32,
    /// The same-yarn exclusion arc (cm), for pairs of entries of mixed class.
    pub exclusion_arc: f32,
    /// Boxes released by the contact sets during the last step (`released`).
    pub num_released: u32,
    /// New entries of `newcomer_schedule` (`fresh`), merged into the table by `entries_merge_rank`.
    pub num_fresh: u32,
    // (A uniform's arrays need a 16-byte stride: padding as a scalar.)
    pub _pad2: u32,
}
const _: () = assert!(size_of::<SchedUniform>() == 80);

/// `SchedUniform::switches`: no movement update at examinations.
pub const SCHED_NO_MOVEMENT_UPDATE: u32 = 1;
/// `SchedUniform::switches`: no window correction when binning off-phase.
pub const SCHED_NO_WINDOW_CORRECTION: u32 = 2;
/// `SchedUniform::switches`: no monitoring of the change of movement.
pub const SCHED_NO_MONITORING: u32 = 4;

/// The scheduler's counters block (`sched_counters`, atomics in WGSL): error bits and the first bad
/// point and segment, and the counts of one step.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Pod, Zeroable)]
pub struct SchedCounters {
    /// `ERROR_NAN_POSITION` (with `first_bad_point`), `ERROR_GRID_RANGE` (a segment over more
    /// than `sched::MAX_CELLS_PER_SEGMENT` cells or beyond the cell range, with
    /// `first_bad_segment`) and `ERROR_GRID_CELL_FULL` (a newcomer lookup met a hash run longer
    /// than `sched::SCHED_MAX_CELL_RUN`, with `first_bad_segment`: the looking segment).
    pub errors: u32,
    /// Lowest non-finite control point (`u32::MAX`: none).
    pub first_bad_point: u32,
    /// Lowest segment over too many cells, or whose lookup met a full hash run (`u32::MAX`: none).
    pub first_bad_segment: u32,
    /// Entries examined and processed this step.
    pub examined: u32,
    pub processed: u32,
    /// Segments whose change of movement drifted (their entries are examined now), and segments
    /// that left a cell, this step.
    pub monitored: u32,
    pub left: u32,
    /// Set lookups that met more than [`crate::sched::MAX_LOOKUP`] sets in their bins (the bound
    /// of the lookup loop): the entry was processed as if every pair were unowned.
    pub lookup_overflow: u32,
    /// Touching quadrature pairs of empty space found this step (`touching_write`'s list).
    pub touching: Capacity,
    /// `(cell, segment)` items of the scheduler's grid (`sched_grid_write`).
    pub grid: Capacity,
    /// Candidate segment pairs of `newcomer_schedule` (`newcomer_write`: each pair once;
    /// `newcomer_list_write`: with duplicates).
    pub cand: Capacity,
    /// New entries of `newcomer_schedule` (`newcomer_compact`).
    pub fresh: Capacity,
    /// The entry table after the merge (`sched_sizes`; the GPU step, `sched::SchedGpu`).
    pub entries: Capacity,
    /// Segment-pair slots of the released boxes (`release_mark`'s threads; `sched_sizes`).
    pub release: Capacity,
    /// `(segment, cell)` newcomers this step (`newcomer_count`).
    pub newcomers: u32,
    /// Segments whose cell box is not within last step's (`segment_monitor`): with none, the
    /// grid and the newcomers find nothing, and the CPU run and a trimmed GPU step skip them.
    pub entered: u32,
    pub _pad: [u32; 2],
}
const _: () = assert!(size_of::<SchedCounters>() == 144);

/// The per-dispatch `sched_phase` uniform of `sched_sizes`: which of the step's size points it is
/// (`sched::SIZES_*`).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Pod, Zeroable)]
pub struct SchedPhase {
    pub phase: u32,
    // (A uniform's arrays need a 16-byte stride: padding as scalars.)
    pub _pad0: u32,
    pub _pad1: u32,
    pub _pad2: u32,
}
const _: () = assert!(size_of::<SchedPhase>() == 16);

/// Per segment, what the scheduler's examination reads of its motion (written by
/// `segment_monitor`): the movement over the last step, the reference change of movement, and
/// whether the segment is monitored (drifted) or left a cell this step.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Pod, Zeroable)]
pub struct SegmentMotion {
    pub mv1: Interval,
    pub mv2_ref: Interval,
    /// 1 when monitored this step.
    pub mon: u32,
    /// 1 when the segment left a cell this step.
    pub left: u32,
    pub _pad: [u32; 2],
}
const _: () = assert!(size_of::<SegmentMotion>() == 80);

/// Per spline segment, what the contact force and the same-yarn exclusion need (host-computed once
/// per topology).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Pod, Zeroable)]
pub struct SegmentContact {
    /// Quadrature weight `ℓ/b` (rest length of the central edge over b).
    pub weight: f32,
    /// Rest length of the segment's yarn when it is closed; 0 for an open yarn.
    pub loop_len: f32,
    pub _pad: [u32; 2],
}
const _: () = assert!(size_of::<SegmentContact>() == 16);

/// The contact of one candidate segment pair (`exact_contact_forces`): the force on its 8
/// control-point slots (`cp` of segment a, then of b; xyz, w = 0), its energy and its number of
/// touching quadrature pairs.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Pod, Zeroable)]
pub struct ContactRecord {
    pub force: [[f32; 4]; 8],
    pub energy: f32,
    pub touching: u32,
    pub _pad: [u32; 2],
}
const _: () = assert!(size_of::<ContactRecord>() == 144);

/// One input of the `polar_test` tool kernel (`crate::polar::polar_test`): a matrix and the rotation
/// to start the decomposition from.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Pod, Zeroable)]
pub struct PolarInput {
    /// `F` by columns (xyz; w unused, 0).
    pub f: [[f32; 4]; 3],
    /// Warm-start quaternion `[x, y, z, w]`.
    pub warm: [f32; 4],
}
const _: () = assert!(size_of::<PolarInput>() == 64);

/// One output of the `polar_test` tool kernel: `F = R S`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Pod, Zeroable)]
pub struct PolarOutput {
    /// `R` as a unit quaternion `[x, y, z, w]`.
    pub quat: [f32; 4],
    /// `R` by columns (xyz; w = 0).
    pub r: [[f32; 4]; 3],
    /// `S = sym(Rᵀ F)` by columns (xyz; w = 0).
    pub s: [[f32; 4]; 3],
    pub iterations: u32,
    /// 0, or [`crate::polar::POLAR_NOT_FINITE`].
    pub error: u32,
    /// `3 col + row` of the first non-finite entry of `F` (column-major scan), or
    /// [`crate::polar::POLAR_NO_ENTRY`].
    pub bad_entry: u32,
    pub _pad: u32,
}
const _: () = assert!(size_of::<PolarOutput>() == 128);

// --- ACL (src/acl/): the set records (`ContactSet`, `StictionSpring`, `WatchPair`, the `[f32; 6]`
// blocks of `k_pool` as `SymBlock`) live in their modules and are listed in `layouts`; the pools of
// points are `[f32; 4]` (w = 0), `cp_pool` and `m_pool` scalars, `watch_loc_pool` `[u32; 4]`. ---

/// Most quadrature points per segment (`contact.quadrature`): the size of [`AclUniform::weights`].
pub const ACL_MAX_QUADRATURE: usize = 32;

/// [`AclUniform::flags`]: `contact.extra_invalidation`.
pub const ACL_EXTRA_INVALIDATION: u32 = 1;

/// The `acl` uniform: the constants of ACL's per-step force stages (`set_evaluate`, `set_force`,
/// `stiction_forces`, the point table and the gather).
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Pod, Zeroable)]
pub struct AclUniform {
    /// b, quadrature points per segment.
    pub quadrature: u32,
    /// Length of the `sets` table.
    pub num_sets: u32,
    pub num_points: u32,
    /// [`ACL_EXTRA_INVALIDATION`].
    pub flags: u32,
    pub radius: f32,
    /// τ.
    pub tolerance: f32,
    /// `contact.stiction_stiffness` and `contact.stiction_break_energy`.
    pub stiction_stiffness: f32,
    pub stiction_break_energy: f32,
    /// Records `point_records` holds (the point table's capacity).
    pub record_capacity: u32,
    pub _pad0: u32,
    pub _pad1: u32,
    pub _pad2: u32,
    /// The 4 basis weights of quadrature parameter `k < quadrature` (the rest zero).
    pub weights: [[f32; 4]; ACL_MAX_QUADRATURE],
}
const _: () = assert!(size_of::<AclUniform>() == 560);

impl Default for AclUniform {
    fn default() -> Self {
        Zeroable::zeroed()
    }
}

/// [`AclCounters::errors`]: a set had more than `acl::evaluate::MAX_SET_POINTS` control points
/// (the kernels leave it alone).
pub const ACL_ERROR_SET_TOO_BIG: u32 = 1;
/// A set's rotation was not finite (`first_bad_set`), or a gathered force (`first_bad_point`).
pub const ACL_ERROR_NOT_FINITE: u32 = 2;
/// The point table needed more than `record_capacity` slots (`records` holds the count).
pub const ACL_ERROR_RECORDS_FULL: u32 = 4;
/// A control point had more than `acl::gather::MAX_POINT_RECORDS` records (the rest not added).
pub const ACL_ERROR_GATHER_FULL: u32 = 8;

/// The `acl_counters` storage block (atomics in WGSL): error flags and the first bad set / point
/// (`u32::MAX` when none), the records the point table needed.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Pod, Zeroable)]
pub struct AclCounters {
    pub errors: u32,
    pub first_bad_set: u32,
    pub first_bad_point: u32,
    pub records: u32,
}
const _: () = assert!(size_of::<AclCounters>() == 16);

impl Default for AclCounters {
    fn default() -> Self {
        AclCounters {
            errors: 0,
            first_bad_set: u32::MAX,
            first_bad_point: u32::MAX,
            records: 0,
        }
    }
}

/// The constants of the set-merge kernels (uniform `acl_merge`, src/acl/coalesce.rs and
/// src/acl/merge_gpu.rs).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Pod, Zeroable)]
pub struct MergeUniform {
    /// Quadrature points in all (`S = [0, nq)`).
    pub nq: u32,
    /// α, the padding of a touching pair's box.
    pub alpha: u32,
    /// Bins of the set index: `nq / MERGE_BIN + 1`.
    pub num_bins: u32,
    /// Most index items one overlap search may look at (`coalesce::MERGE_SCAN_LIMIT`).
    pub scan_limit: u32,
}
const _: () = assert!(size_of::<MergeUniform>() == 16);

/// The per-dispatch `merge_round` uniform: which Jacobi round of `merge_label` a dispatch is (it
/// reads label half `round % 2` and writes the other), and for `merge_hull` / `merge_apply` the
/// number of rounds recorded (the final labels are in half `round % 2`).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Pod, Zeroable)]
pub struct MergeRound {
    pub round: u32,
    /// For `merge_hull`: 1 when the next pass searches the moved list (`moved_overlap_write`,
    /// which appends at `edges.count`): the pass's pair count is cleared once its labels are
    /// final. 0 in a chain's last pass, whose count the verdict reads.
    pub clear_edges: u32,
    // (A uniform's arrays need a 16-byte stride: padding as scalars.)
    pub _pad1: u32,
    pub _pad2: u32,
}
const _: () = assert!(size_of::<MergeRound>() == 16);

/// `MergeCounters::errors`: an overlap search met more than `MergeUniform::scan_limit` index items
/// (the bound of its loop); the set's overlaps were not listed.
pub const MERGE_SCAN_LIMIT: u32 = 1;

/// `MergeCounters::errors`: a merge pass that searches the rebuild round's dirty list
/// (`dirty_overlap_write`, [`crate::acl::coalesce::dirty_overlap_write`]) met a list longer than
/// [`DIRTY_OVERLAP_MAX`], or a live moved set that is not on it; nothing was listed, and the step
/// must run again with the set index (`MergeCaps::indexed`). Not an error of the scene.
pub const MERGE_DIRTY_LIMIT: u32 = 2;

/// The longest dirty list `dirty_overlap_write` searches: its loop bound per thread (one
/// iteration per dirty set), well under lavapipe's 65,535. Each live set's thread tests every
/// dirty set, so the pass costs (live sets) × (dirty sets) box tests: at rest a few dozen dirty
/// sets, and above this many the set index is the cheaper search anyway.
pub const DIRTY_OVERLAP_MAX: u32 = 1024;

/// The most segments the scheduler's listed newcomer search takes (`segment_monitor` lists the
/// segments that entered a cell, `newcomer_list_write` tests each segment's box against theirs):
/// its loop bound per thread, well under lavapipe's 65,535. With more, the listed search writes
/// nothing and the step needs the grid (`AclCaps::newcomers` = 2). At rest a step has a few such
/// segments, and one with hundreds is in motion, where the grid is the cheaper search.
pub const NEWCOMER_LIST_MAX: u32 = 256;

/// The most candidates `newcomer_list_compact` sorts, makes unique and turns into new entries in
/// one workgroup (two words a key in workgroup memory, 8 KiB of the 16 KiB wgpu promises): the
/// listed newcomer search's, where a few segments entering a cell make a few hundred (each pair
/// of two listed segments twice). With more the step needs the grid's search, whose sort has no
/// such bound (`AclCaps::newcomers` = 2).
pub const NEWCOMER_LIST_CANDIDATES: u32 = 1024;

/// The set-merge kernels' counters block (`merge_counters`, atomics in WGSL).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Pod, Zeroable)]
pub struct MergeCounters {
    /// Slots of the set table in use (live or not), and the table's capacity.
    pub sets: Capacity,
    /// Overlapping set pairs of the current merge pass.
    pub edges: Capacity,
    /// Items (set, bin) of the set index of the current merge pass.
    pub index: Capacity,
    /// The scheduler's touching pairs to coalesce (count written by the host or the step driver).
    pub touching: Capacity,
    /// `sets.count` before `contact_coalesce` (the first new slot).
    pub coalesce_base: u32,
    /// The last `merge_label` round of this pass that changed a label, plus one (0: none).
    pub label_rounds: u32,
    /// Sticky: 1 when a pass's labels had not converged in the rounds recorded.
    pub more_rounds: u32,
    /// Sets `merge_apply` marked moved in this pass (their grown boxes need another pass), the
    /// length of the list of them (`moved_sets`) that the next pass may search
    /// (`moved_overlap_write`); `merge_hull` empties it.
    pub moved: u32,
    /// Sets merged away, and the pool entries (points, blocks, watched pairs) their models held.
    pub merged: u32,
    pub garbage_cp: u32,
    pub garbage_k: u32,
    pub garbage_w: u32,
    /// `MERGE_*` error bits.
    pub errors: u32,
    pub _pad: [u32; 3],
}
const _: () = assert!(size_of::<MergeCounters>() == 112);

/// The GPU ACL step's own counts (`acl_sizes`, storage; atomics in WGSL where several threads add):
/// written by the kernels that produce them, read back by the host after a step, and moved into
/// the count fields of the `acl`, `rebuild` and `sched_step` uniforms (by buffer copies at the
/// step's start, and by `acl_counts` within it), so the counts never leave the GPU within a step.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Pod, Zeroable)]
pub struct AclSizes {
    /// The boxes released this step for the scheduler's next step (`released`): count, capacity,
    /// overflow.
    pub released: Capacity,
    /// Words of the packed set lookup (`set_lookup`): count, capacity, overflow.
    pub lookup: Capacity,
    /// Slots of the set table (live sets after the step's compaction).
    pub num_sets: u32,
    /// Dirty sets listed for the current rebuild round (`dirty`).
    pub num_dirty: u32,
    /// Pool entries (points, `K̄` blocks, watched pairs) the old models of rebuilt sets held, summed
    /// over the step's rounds.
    pub garbage_cp: u32,
    pub garbage_k: u32,
    pub garbage_w: u32,
    /// Error bits of the stages writing this block.
    pub errors: u32,
    /// Sets rebuilt this step (the dirty sets of every round).
    pub rebuilds: u32,
    /// Rebuild rounds of this step that had dirty sets (the host sizes the recorded rounds by it,
    /// [`crate::acl::gpu::AclGpu::fewer_rounds`]).
    pub rounds_used: u32,
    /// Touching quadrature pairs of the live sets (their `touching` at their last rebuild), summed
    /// by `set_compact` over the compacted table: the `touching_pairs` statistic.
    pub touching: u32,
}
const _: () = assert!(size_of::<AclSizes>() == 68);

/// `AclSizes::errors`: a merge invocation's last pass still merged (more passes are needed).
pub const ACL_SIZES_MORE_PASSES: u32 = 4;

/// The per-dispatch `acl_phase` uniform of `acl_counts`: which point of the GPU ACL step it is
/// (`acl::counts::PHASE_*`).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Pod, Zeroable)]
pub struct AclPhase {
    pub phase: u32,
    // (A uniform's arrays need a 16-byte stride: padding as scalars.)
    pub _pad0: u32,
    pub _pad1: u32,
    pub _pad2: u32,
}
const _: () = assert!(size_of::<AclPhase>() == 16);
/// [`AclSizes::errors`]: a contact set's box meets more segment pairs than
/// `sched::lookup::MAX_LOOKUP_SET` (or spans more segments): `set_lookup` lists none of its pairs,
/// which the scheduler then treats as unowned (safe: touching owned pairs are reported again).
pub const ACL_SIZES_LOOKUP_SET: u32 = 1;
/// [`AclSizes::errors`]: a bucket of `set_lookup` (the items of one segment) holds more than
/// `sched::lookup::MAX_LOOKUP_BUCKET` items: its items are left zero (no pair of that segment is
/// owned, as above).
pub const ACL_SIZES_LOOKUP_BUCKET: u32 = 2;
/// [`AclSizes::errors`]: a live set is still dirty when `set_compact` copies it, after the GPU
/// step's last rebuild round (the step needs more rounds).
pub const ACL_SIZES_MORE_ROUNDS: u32 = 8;

/// The `acl_lookup` uniform of the `set_lookup_*` kernels (`sched::lookup`): the set count (the
/// host, or a copy from [`AclSizes::num_sets`] between passes, writes it per step at byte offset 0),
/// the segment count and `b`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Pod, Zeroable)]
pub struct LookupUniform {
    /// Live sets at the head of the `sets` table.
    pub num_sets: u32,
    pub num_segments: u32,
    /// b, quadrature points per segment.
    pub quadrature: u32,
    pub _pad: u32,
}
const _: () = assert!(size_of::<LookupUniform>() == 16);

/// A struct's size and field offsets, for the reflection test.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StructLayout {
    pub name: &'static str,
    pub size: usize,
    pub fields: Vec<(&'static str, usize)>,
}

macro_rules! layout_of {
    ($t:ident { $($f:ident),* $(,)? }) => {
        StructLayout {
            name: stringify!($t),
            size: size_of::<$t>(),
            fields: vec![$((stringify!($f), offset_of!($t, $f))),*],
        }
    };
}

/// Every constant `shaders/shared/layout.wgsl` declares, by its WGSL name, with the value the Rust
/// side uses (tests/layout.rs checks the two agree).
pub fn constants() -> Vec<(&'static str, u32)> {
    vec![
        ("ERROR_NAN_FORCE", ERROR_NAN_FORCE),
        ("ERROR_NAN_VELOCITY", ERROR_NAN_VELOCITY),
        ("ERROR_LENGTH_NOT_CONVERGED", ERROR_LENGTH_NOT_CONVERGED),
        ("ERROR_NAN_POSITION", ERROR_NAN_POSITION),
        ("ERROR_GRID_RANGE", ERROR_GRID_RANGE),
        ("ERROR_GRID_CELL_FULL", ERROR_GRID_CELL_FULL),
        ("ERROR_CONTACT_NOT_FINITE", ERROR_CONTACT_NOT_FINITE),
        ("ERROR_GATHER_FULL", ERROR_GATHER_FULL),
        ("ERROR_NAN_BALL", ERROR_NAN_BALL),
        ("COUNT_PLAN_SCAN", COUNT_PLAN_SCAN),
        ("COUNT_PLAN_SORT", COUNT_PLAN_SORT),
        ("COUNT_PLAN_GRID", COUNT_PLAN_GRID),
        ("COUNT_PLAN_GRIDS", COUNT_PLAN_GRIDS),
        ("COUNT_PLAN_MAX_GRIDS", COUNT_PLAN_MAX_GRIDS),
        ("RIGID_REFINEMENTS", RIGID_REFINEMENTS),
        ("SCAN_PER_THREAD", SCAN_PER_THREAD),
        ("SCAN_BLOCK", SCAN_BLOCK),
        ("SCHED_NO_MOVEMENT_UPDATE", SCHED_NO_MOVEMENT_UPDATE),
        ("SCHED_NO_WINDOW_CORRECTION", SCHED_NO_WINDOW_CORRECTION),
        ("SCHED_NO_MONITORING", SCHED_NO_MONITORING),
        ("MERGE_SCAN_LIMIT", MERGE_SCAN_LIMIT),
        ("MERGE_DIRTY_LIMIT", MERGE_DIRTY_LIMIT),
        ("DIRTY_OVERLAP_MAX", DIRTY_OVERLAP_MAX),
        ("NEWCOMER_LIST_MAX", NEWCOMER_LIST_MAX),
        ("NEWCOMER_LIST_CANDIDATES", NEWCOMER_LIST_CANDIDATES),
        ("ACL_SIZES_LOOKUP_SET", ACL_SIZES_LOOKUP_SET),
        ("ACL_SIZES_LOOKUP_BUCKET", ACL_SIZES_LOOKUP_BUCKET),
        ("ACL_SIZES_MORE_ROUNDS", ACL_SIZES_MORE_ROUNDS),
    ]
}

/// Every struct of the contract with every field, in declaration order (the WGSL order).
pub fn layouts() -> Vec<StructLayout> {
    vec![
        layout_of!(Yarn {
            first_point,
            num_points,
            closed,
            first_segment,
            num_segments,
            first_edge,
            num_edges,
            _pad
        }),
        layout_of!(Segment {
            cp,
            yarn,
            edge,
            index_in_yarn,
            _pad
        }),
        layout_of!(Edge {
            a,
            b,
            yarn,
            rest_length
        }),
        layout_of!(Bend {
            v,
            e,
            rest_len,
            _pad
        }),
        layout_of!(BendRest {
            kappa,
            twist,
            ref_twist,
            kappa_start,
            _pad
        }),
        layout_of!(EdgeFrame { u, t }),
        layout_of!(ColorRange {
            first,
            count,
            _pad0,
            _pad1
        }),
        layout_of!(ObstacleShape {
            kind,
            friction,
            radius,
            _pad,
            a,
            b,
            vel,
            vel_b
        }),
        layout_of!(Params {
            h,
            radius,
            gravity_x,
            gravity_y,
            gravity_z,
            bending,
            twisting,
            plastic_radius,
            plastic_max,
            damping_const,
            damping_prop,
            length_tolerance,
            length_max_iterations,
            frame_sweeps,
            num_points,
            num_edges,
            num_bends,
            num_segments,
            num_yarns,
            num_glue,
            num_obstacles,
            first_block,
            num_blocks,
            step,
            k_contact,
            quadrature,
            grid_cell,
            exclusion_arc,
            grid_origin_x,
            grid_origin_y,
            grid_origin_z,
            grid_inv_cell,
            air_factor,
            num_balls,
            balls_held,
            ball_hit_capacity
        }),
        layout_of!(Capacity {
            count,
            capacity,
            overflow,
            _pad
        }),
        layout_of!(Counters {
            errors,
            first_bad_point,
            length_iterations,
            length_error_bits,
            grid_entries,
            candidate_pairs,
            touching_pairs,
            touching_records,
            ball_hits,
            first_bad_ball,
            gather_slots,
            first_unconverged_edge,
            _pad2
        }),
        layout_of!(BallState {
            center,
            vel,
            omega,
            mass,
            friction,
            restitution,
            _pad
        }),
        layout_of!(BallHit {
            point,
            ball,
            impulse,
            arm
        }),
        layout_of!(ScanPass {
            n,
            level,
            offset,
            next_offset,
            next_unscanned,
            next_per_block,
            _pad1,
            _pad2
        }),
        layout_of!(SortPass {
            n,
            shift,
            num_blocks,
            _pad
        }),
        layout_of!(CountPlan {
            src_word,
            add,
            cap,
            kind,
            num_passes,
            num_levels,
            args_word,
            threads_per_item,
            workgroup_size,
            _pad0,
            _pad1,
            _pad2
        }),
        layout_of!(KeyValue {
            key_lo,
            key_hi,
            value,
            _pad
        }),
        layout_of!(Interval { lo, hi }),
        layout_of!(CellBox { lo, hi }),
        layout_of!(SchedEntry {
            seg_a,
            seg_b,
            d,
            bin_flags
        }),
        layout_of!(Release { before, after }),
        layout_of!(SchedUniform {
            num_segments,
            num_points,
            num_entries,
            quadrature,
            radius,
            cell,
            inv_cell,
            omega,
            anchor,
            step,
            bins_due,
            max_bin,
            switches,
            exclusion_arc,
            num_released,
            num_fresh,
            _pad2
        }),
        layout_of!(SchedCounters {
            errors,
            first_bad_point,
            first_bad_segment,
            examined,
            processed,
            monitored,
            left,
            lookup_overflow,
            touching,
            grid,
            cand,
            fresh,
            entries,
            release,
            newcomers,
            entered,
            _pad
        }),
        layout_of!(SchedPhase {
            phase,
            _pad0,
            _pad1,
            _pad2
        }),
        layout_of!(SegmentMotion {
            mv1,
            mv2_ref,
            mon,
            left,
            _pad
        }),
        layout_of!(SegmentBox {
            lo,
            hi,
            cell_lo,
            cell_hi
        }),
        layout_of!(SegmentContact {
            weight,
            loop_len,
            _pad
        }),
        layout_of!(ContactRecord {
            force,
            energy,
            touching,
            _pad
        }),
        layout_of!(PolarInput { f, warm }),
        layout_of!(PolarOutput {
            quat,
            r,
            s,
            iterations,
            error,
            bad_entry,
            _pad
        }),
        layout_of!(AclUniform {
            quadrature,
            num_sets,
            num_points,
            flags,
            radius,
            tolerance,
            stiction_stiffness,
            stiction_break_energy,
            record_capacity,
            _pad0,
            _pad1,
            _pad2,
            weights
        }),
        layout_of!(AclCounters {
            errors,
            first_bad_set,
            first_bad_point,
            records
        }),
        layout_of!(ContactSet {
            bx,
            cp_off,
            n_cp,
            k_off,
            flags,
            eps,
            touching,
            rebuilt_step,
            w_off,
            n_watch,
            guard_near,
            guard_far,
            f_ref,
            quat,
            centre
        }),
        layout_of!(StictionSpring {
            i,
            j,
            flags,
            _pad,
            rest
        }),
        layout_of!(WatchPair { i, j, kw, gap }),
        // `k_pool`'s `[f32; 6]` blocks (`acl::model::SymBlock`), a struct of one array in WGSL.
        StructLayout {
            name: "SymBlock",
            size: size_of::<crate::acl::model::SymBlock<f32>>(),
            fields: vec![("k", 0)],
        },
        layout_of!(WatchLoc { loc }),
        layout_of!(RebuildPlan {
            new_bx,
            touch_bx,
            eps,
            touching,
            n_cp,
            n_watch,
            guard_near,
            guard_far,
            flags,
            error_point,
            cp_off,
            k_off,
            w_off,
            term_off
        }),
        layout_of!(RebuildParams {
            b,
            nq,
            r,
            padding,
            delete_distance,
            stiffness,
            stiction_stiffness,
            step,
            num_sets,
            num_dirty,
            exclusion_arc,
            _pad
        }),
        layout_of!(PoolPage {
            page,
            source,
            stride,
            len
        }),
        layout_of!(PagePairs {
            block_stride,
            term_stride,
            block_pages,
            term_pages,
            scratch_stride,
            watch_stride,
            scratch_pages,
            watch_pages
        }),
        layout_of!(RebuildRun {
            groups_x,
            groups_y,
            groups_z,
            first,
            end,
            _pad0,
            _pad1,
            _pad2
        }),
        layout_of!(RebuildTerm {
            loc,
            grad,
            hess,
            i,
            j
        }),
        layout_of!(AllocGroup {
            sizes,
            releases,
            released_base,
            _pad0,
            _pad1
        }),
        layout_of!(PoolAlloc {
            base,
            len,
            cap,
            errors,
            first_too_large,
            _pad0,
            _pad1
        }),
        layout_of!(MergeUniform {
            nq,
            alpha,
            num_bins,
            scan_limit
        }),
        layout_of!(MergeRound {
            round,
            clear_edges,
            _pad1,
            _pad2
        }),
        layout_of!(MergeCounters {
            sets,
            edges,
            index,
            touching,
            coalesce_base,
            label_rounds,
            more_rounds,
            moved,
            merged,
            garbage_cp,
            garbage_k,
            garbage_w,
            errors,
            _pad
        }),
        layout_of!(AclSizes {
            released,
            lookup,
            num_sets,
            num_dirty,
            garbage_cp,
            garbage_k,
            garbage_w,
            errors,
            rebuilds,
            rounds_used,
            touching
        }),
        layout_of!(AclPhase {
            phase,
            _pad0,
            _pad1,
            _pad2
        }),
        layout_of!(LookupUniform {
            num_sets,
            num_segments,
            quadrature,
            _pad
        }),
    ]
}
