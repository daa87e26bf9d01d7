//! Stage `length_projection`: Fast Projection (Goldenthal et al. 2007) of the inextensibility
//! constraints `C_e = |x_b − x_a| − ℓ_e` of every yarn, on the positions predicted by the velocities,
//! `x = q + h v`; on return `vel = (x − q) / h` of the projected `x` (seed Figure 4,
//! `q̇_length = satisfy_length_constr(q(t) + h q̇_glue)`). Each iteration solves
//! `(∇C W ∇Cᵀ) λ = C(x)` and sets `x −= W ∇Cᵀ λ`, with `W = inv_mass` (0 for glued points, which do not
//! move), until every relative length error `|C_e| / ℓ_e` is below `params.length_tolerance` (after at
//! least one projection) or `params.length_max_iterations` projections were made.
//!
//! The same algorithm runs on both paths: the kernels `shaders/length_*.wgsl` on the GPU and their CPU
//! twins below (same names, the kernels' bindings as parameters), which [`length_projection`] calls in
//! the order the GPU dispatches them ([`LengthGpu`]).
//!
//! # One tridiagonal system for every yarn
//! Rows are edges, in the global edge order. Edge `k` has `∇_a C = −t_k`, `∇_b C = t_k`, so row `k`
//! has diagonal `w_a + w_b` and couples to the previous edge of its yarn (which shares its point `a`)
//! by `−w_a t_{k−1}·t_k`. The first row of each yarn has no coupling to the row before it, so the
//! yarns are decoupled blocks of one tridiagonal system over all edges, and one solver handles any
//! mix of yarn lengths. A row whose edge has two immovable ends is inert (diagonal 1, right-hand side
//! 0: both ends are glued, so its length is already kept).
//!
//! A closed yarn's matrix is cyclic: its last row couples to its first by the `corner`
//! `−w t_last·t_first`. As the sequential solver did, we write `A = A' + u vᵀ` with
//! `u = (γ, 0 … 0, corner)`, `v = (1, 0 … 0, corner/γ)`, `γ = −d₀` (Sherman–Morrison): `A'` is `A`
//! without the corners and with the first and last diagonals changed, it is tridiagonal, and
//! `A⁻¹ r = y − f q` with `A' y = r`, `A' q = u`, `f = (v·y) / (1 + v·q)`. Since the yarns are
//! decoupled, all the closed yarns' `u` vectors fit in one second right-hand side `z`, and one solve of
//! the global system with the two right-hand sides `(r, z)` gives every yarn's `y` and `q`; then
//! `length_update` applies `λ = y − f q` with its yarn's `f`.
//!
//! # The partitioned solver
//! The system is stored as one `[f32; 4]` row per equation, `(diagonal, coupling to the previous
//! row, r, z)`, in `length_sys`, level after level. Level 0 is the assembled system (one row per
//! edge). Level `l` is cut into blocks of [`BLOCK`] rows; the last row of each block is its
//! *separator*, the others its *interior*. Eliminating every interior (they only couple to the
//! separators on either side) leaves the Schur complement on the separators, which is again a
//! symmetric tridiagonal system, of `⌈n_l / BLOCK⌉` rows: level `l + 1`. Thread `j` of
//! `length_reduce` builds row `j` of level `l + 1` from a forward sweep over block `j`'s interior
//! (which gives the contributions to separator `j` and its coupling to separator `j − 1`) and a
//! backward sweep over block `j + 1`'s interior (its contributions to separator `j`). Levels shrink by
//! `BLOCK` until one row is left, which `length_reduce` solves directly. Then `length_back` walks back
//! down: with the separators of level `l` known (the solution of level `l + 1`), each block's interior
//! is an independent tridiagonal solve (Thomas). Every thread loops over at most two blocks' rows, so
//! no thread does more than `2 BLOCK` loop iterations however long a yarn is (lavapipe ends an
//! invocation after 65,535), and a yarn of 10⁶ edges takes 4 levels. The elimination is Gaussian
//! elimination of a symmetric permutation of the symmetric positive definite `A'` (interiors first),
//! so it needs no pivoting, as the Thomas algorithm it replaces. Products and quotients that cross a
//! coupling are taken as exactly 0 when the coupling is 0 (`mul0`, `div0`), so the yarns stay
//! independent even when one of them holds a NaN (`0 × NaN` would otherwise spread it to every yarn
//! sharing a block, and the failure would name the wrong yarn).
//!
//! The top levels are small (one or two workgroups' work each), yet each level was a dispatch up and
//! one down, and every dispatch of the GPU step waits for all the work before it. So from the first
//! level of at most [`TOP_ROWS`] rows ([`top_level`]), one workgroup does the rest, `length_top`: the
//! same per-block work as the two kernels' workgroups, level after level up and back down, a storage
//! barrier between levels. The scarf's one yarn of 26,100 edges (levels of 26,100, 816, 26 and 1
//! rows) solves in 3 dispatches instead of 6, the tiny swatch's 136 edges in 1 instead of 4.
//!
//! # Iterations on the GPU
//! The GPU cannot stop on a host decision without reading back, so [`LengthGpu`] records all
//! `length_max_iterations` iterations and each kernel returns at once when its iteration is not
//! wanted. The state lives in [`Counters`]: `length_iterations` is the number of projections made so
//! far and `length_error_bits` the largest relative error of the last evaluation (non-negative f32
//! bits, so `atomicMax` on the bits is a float max; a NaN reads as infinity). Iteration `it` (the `x`
//! of the per-dispatch uniform `length_level`) evaluates the errors only while
//! `length_iterations == it`; `length_check` then either stops (converged: `it > 0` and the error is
//! below the tolerance; or `it` reached the cap: [`ERROR_LENGTH_NOT_CONVERGED`]) or sets
//! `length_iterations = it + 1`, which the projection kernels of iteration `it` wait for. The CPU path
//! makes the same calls and leaves the loop where the GPU kernels would start returning early.
//!
//! Two of those checks are not dispatches of their own, each of which would cost the GPU step a
//! barrier for one thread's work. The check of iteration 0 always decides to project when the
//! recording has a projection and the cap allows one (convergence needs a projection first), so
//! `length_setup` sets `length_iterations = 1` itself and iteration 0's `length_error` keeps no
//! error ([`first_committed`]); at rest, where one iteration is recorded, that is the only check
//! left besides the last. The last evaluation's check is made by `length_finish`: workgroup 0
//! writes its decision, and every workgroup decides from its own read whether `vel` is kept (the
//! decision's writes never turn that answer, see shaders/length_finish.wgsl). On failure it also
//! names the first edge not within the tolerance (`first_unconverged_edge`), whose yarn and
//! control points both paths' errors name (the GPU's `length_dir` is overwritten by a batch's later
//! steps before the host reads the failing step's counters), and the first control point whose
//! velocity came in not finite (`ERROR_NAN_VELOCITY`, `first_bad_point`), which both paths' errors
//! name instead: a NaN fails every edge of its yarn.
//!
//! Every yarn is iterated until the worst edge of all yarns converges (the sequential solver stopped
//! each yarn on its own): a yarn that converged early gets further projections, which only move it
//! closer to its constraints.

use crate::layout::{Counters, Edge, Params, Yarn, ERROR_LENGTH_NOT_CONVERGED, ERROR_NAN_VELOCITY};
use crate::pipelines::{Buffers, PipelineError, Pipelines};
use crate::shaders;
use rayon::prelude::*;

/// Rows per block of the partitioned solver (the `BLOCK` constant of `shaders/length_reduce.wgsl`
/// and `shaders/length_back.wgsl`). Each thread of `length_reduce` / `length_back` loops over at most
/// `2 BLOCK` rows.
pub const BLOCK: u32 = 32;
const B: usize = BLOCK as usize;

/// Threads per workgroup of `length_reduce` and `length_back` (`SOLVER_GROUP` in
/// shaders/shared/length.wgsl).
pub const SOLVER_GROUP: u32 = 64;
/// Rows of the largest level `length_top` starts from (`LENGTH_TOP_ROWS` in
/// shaders/shared/length.wgsl): `BLOCK²`, so the level after it has one block and the one after that
/// one row; two of its workgroup's chunks of [`SOLVER_BLOCKS`] blocks.
pub const TOP_ROWS: u32 = BLOCK * BLOCK;

/// Consecutive blocks each workgroup of `length_reduce` and `length_back` covers (`SOLVER_BLOCKS`):
/// the workgroup copies their rows into workgroup memory, then one thread sweeps each block there.
pub const SOLVER_BLOCKS: u32 = 16;
// A thread per block to sweep it.
const _: () = assert!(SOLVER_BLOCKS <= SOLVER_GROUP);

/// The threads to dispatch `length_reduce` or `length_back` with on a level of `rows` rows: a
/// workgroup of [`SOLVER_GROUP`] per [`SOLVER_BLOCKS`] blocks.
pub fn solver_threads(rows: u32) -> u32 {
    rows.div_ceil(BLOCK).div_ceil(SOLVER_BLOCKS) * SOLVER_GROUP
}

/// "No edge" in [`LengthScratch::point_edges`].
pub const NO_EDGE: u32 = u32::MAX;

/// The f32 bits of +∞: a relative error that is NaN or infinite counts as this.
const INF_BITS: u32 = 0x7f80_0000;

/// Elements per rayon job of the element-wise twins, and blocks per job of the solver twins.
const PAR: usize = 4096;
const PAR_BLOCKS: usize = 128;

/// What the length projection did this step.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct LengthReport {
    /// Fast Projection iterations made (the same for every yarn).
    pub iterations: u32,
    /// Largest relative length error `|C_e| / ℓ_e` after the projection.
    pub max_error: f32,
}

/// The length projection did not reach the tolerance: the first yarn whose error is not below it,
/// and its first such edge.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct LengthFailure {
    pub yarn: usize,
    /// The yarn's control points (their indices in the yarn) at the ends of its first edge whose
    /// error is not below the tolerance.
    pub points: [u32; 2],
    pub iterations: u32,
    /// That yarn's largest relative length error (infinite where it is not finite).
    pub error: f32,
}

/// One level of the solver: rows `offset .. offset + size` of `length_sys`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Level {
    pub offset: u32,
    pub size: u32,
}

/// The levels of the solver for `num_edges` rows: level 0 is the assembled system, each next one has
/// `⌈size / BLOCK⌉` rows, the last has one row (and there are at least two levels). Empty without
/// edges.
pub fn levels(num_edges: u32) -> Vec<Level> {
    let mut out = Vec::new();
    if num_edges == 0 {
        return out;
    }
    let (mut offset, mut size) = (0u32, num_edges);
    loop {
        out.push(Level { offset, size });
        if out.len() > 1 && size == 1 {
            return out;
        }
        offset += size;
        size = size.div_ceil(BLOCK);
    }
}

/// The first of the solved levels (all but the last of `levels`) with at most [`TOP_ROWS`] rows:
/// `length_top` solves from there to the top and back, `length_reduce` and `length_back` the levels
/// below it. Levels shrink by [`BLOCK`], so the solved levels from it are it and at most one more.
pub fn top_level(levels: &[Level]) -> usize {
    levels
        .iter()
        .position(|l| l.size <= TOP_ROWS)
        .unwrap_or(0)
        .min(levels.len().saturating_sub(2))
}

/// The per-dispatch uniform `length_level` of iteration `iteration` on `level`:
/// `(iteration, level offset, level rows, 0)`. Kernels that work on no level read only `x`.
pub fn level_uniform(iteration: u32, level: Level) -> [u32; 4] {
    [iteration, level.offset, level.size, 0]
}

/// `length_update`'s `length_level` uniform of iteration `iteration`: [`level_uniform`] of level 0
/// with the number of control points in `w` (the kernel binds no `params`, which would make it one
/// binding too many).
pub fn update_uniform(iteration: u32, level0: Level, num_points: u32) -> [u32; 4] {
    [iteration, level0.offset, level0.size, num_points]
}

/// Per point, `(edge it is the a end of, edge it is the b end of, its yarn, 0)` ([`NO_EDGE`] where
/// there is no such edge; yarn 0 for a point on no edge): the gather table of `length_update`.
pub fn point_edges(edges: &[Edge], num_points: usize) -> Vec<[u32; 4]> {
    let mut out = vec![[NO_EDGE, NO_EDGE, 0, 0]; num_points];
    for (k, e) in edges.iter().enumerate() {
        debug_assert_eq!(
            out[e.a as usize][0], NO_EDGE,
            "point {} starts two edges",
            e.a
        );
        debug_assert_eq!(
            out[e.b as usize][1], NO_EDGE,
            "point {} ends two edges",
            e.b
        );
        out[e.a as usize][0] = k as u32;
        out[e.a as usize][2] = e.yarn;
        out[e.b as usize][1] = k as u32;
        out[e.b as usize][2] = e.yarn;
    }
    out
}

/// The buffers of the length projection besides the scene's, preallocated by the owner (each is the
/// GPU buffer of the same name; see [`LengthGpu::upload`]).
#[derive(Clone, Debug, Default)]
pub struct LengthScratch {
    /// The solver's levels ([`levels`]).
    pub levels: Vec<Level>,
    /// `point_edges`: per point, the edges it is the `a` and the `b` end of, and its yarn (static).
    pub point_edges: Vec<[u32; 4]>,
    /// `length_disp`: per point, the displacement `x − q` being projected (xyz; w 0).
    pub disp: Vec<[f32; 4]>,
    /// `length_dir`: per edge, the unit direction at the current iterate (xyz) and `C_e` (w).
    pub dir: Vec<[f32; 4]>,
    /// `length_sys`: per row of every level, (diagonal, coupling to the previous row, r, z); after the
    /// solve, r and z of level 0 hold the solutions `y`, `q`.
    pub sys: Vec<[f32; 4]>,
}

impl LengthScratch {
    pub fn new(edges: &[Edge], num_points: usize) -> Self {
        let levels = levels(edges.len() as u32);
        let rows = levels.last().map_or(0, |l| (l.offset + l.size) as usize);
        LengthScratch {
            levels,
            point_edges: point_edges(edges, num_points),
            disp: vec![[0.0; 4]; num_points],
            dir: vec![[0.0; 4]; edges.len()],
            sys: vec![[0.0; 4]; rows],
        }
    }
}

/// Stage `length_projection` on the CPU: the kernels' twins in the GPU's order (see the module doc),
/// leaving the iteration loop where the GPU kernels would return early. `counters` must hold zero
/// `length_iterations` and `length_error_bits` (a fresh step); it gets the stage's count, error and
/// flag as the GPU's does. On failure `vel` is left as it came.
#[allow(clippy::too_many_arguments)]
pub fn length_projection(
    params: &Params,
    yarns: &[Yarn],
    edges: &[Edge],
    inv_mass: &[f32],
    pos: &[[f32; 4]],
    vel: &mut [[f32; 4]],
    counters: &mut Counters,
    s: &mut LengthScratch,
) -> Result<LengthReport, LengthFailure> {
    if s.levels.is_empty() {
        return Ok(LengthReport::default());
    }
    let top = top_level(&s.levels);
    let cap = params.length_max_iterations;
    let committed = first_committed(params, cap);
    let lv0 = committed_uniform(s.levels[0], committed);
    length_setup(params, &lv0, vel, &mut s.disp, counters);
    for it in 0..=cap {
        let lv = level_uniform(it, s.levels[0]);
        let first = it == 0 && committed;
        let ev = if first { lv0 } else { lv };
        length_error(params, &ev, edges, pos, &s.disp, &mut s.dir, counters);
        if it == cap {
            break;
        }
        if !first {
            length_check(params, &lv, counters);
        }
        if counters.length_iterations != it + 1 {
            break;
        }
        length_assemble(
            params, &lv, yarns, edges, inv_mass, &s.dir, &mut s.sys, counters,
        );
        for l in 0..top {
            length_reduce(&level_uniform(it, s.levels[l]), &mut s.sys, counters);
        }
        length_top(&level_uniform(it, s.levels[top]), &mut s.sys, counters);
        for l in (0..top).rev() {
            length_back(&level_uniform(it, s.levels[l]), &mut s.sys, counters);
        }
        length_update(
            &update_uniform(it, s.levels[0], params.num_points),
            yarns,
            edges,
            &s.point_edges,
            inv_mass,
            &s.dir,
            &s.sys,
            &mut s.disp,
            counters,
        );
    }
    length_finish(
        params,
        &level_uniform(cap, s.levels[0]),
        edges,
        &s.dir,
        &s.disp,
        vel,
        counters,
    );
    report(params, yarns, edges, &s.dir, counters)
}

/// The stage's report from the counters after its last kernel; on [`ERROR_LENGTH_NOT_CONVERGED`], the
/// failure of the yarn of `first_unconverged_edge` (the first edge whose error is not below the
/// tolerance, [`length_finish`]), with that yarn's largest error from `length_dir` (the last
/// evaluation). Counters that name no edge (not from a fresh step's) get it found here by the
/// same rule.
pub fn report(
    params: &Params,
    yarns: &[Yarn],
    edges: &[Edge],
    length_dir: &[[f32; 4]],
    counters: &Counters,
) -> Result<LengthReport, LengthFailure> {
    let iterations = counters.length_iterations;
    if counters.errors & ERROR_LENGTH_NOT_CONVERGED == 0 {
        return Ok(LengthReport {
            iterations,
            max_error: f32::from_bits(counters.length_error_bits),
        });
    }
    let first = match counters.first_unconverged_edge {
        u32::MAX => first_unconverged(params, edges, length_dir, counters.length_error_bits),
        k => Some(k as usize),
    };
    let Some((yarn, points)) = first.and_then(|k| edge_site(yarns, edges, k as u32)) else {
        return Err(LengthFailure {
            yarn: 0,
            points: [0, 0],
            iterations,
            error: f32::from_bits(counters.length_error_bits),
        });
    };
    let y = &yarns[yarn];
    let r = y.first_edge as usize..(y.first_edge + y.num_edges) as usize;
    let bits = edges[r.clone()]
        .iter()
        .zip(&length_dir[r])
        .map(|(e, d)| relative_error_bits(d[3], e.rest_length))
        .max()
        .unwrap_or(0);
    Err(LengthFailure {
        yarn,
        points,
        iterations,
        error: f32::from_bits(bits),
    })
}

/// The first edge of `length_dir` whose error bits reach the smaller of the tolerance's and
/// `error_bits` (the evaluation's largest): what [`length_finish`] writes on failure.
fn first_unconverged(
    params: &Params,
    edges: &[Edge],
    length_dir: &[[f32; 4]],
    error_bits: u32,
) -> Option<usize> {
    let reach = params.length_tolerance.to_bits().min(error_bits);
    let ne = params.num_edges as usize;
    edges[..ne]
        .par_iter()
        .zip(length_dir[..ne].par_iter())
        .position_first(|(e, d)| relative_error_bits(d[3], e.rest_length) >= reach)
}

/// The yarn of edge `k` and the indices in that yarn of the edge's two control points (`None`
/// past the edges).
pub fn edge_site(yarns: &[Yarn], edges: &[Edge], k: u32) -> Option<(usize, [u32; 2])> {
    let e = edges.get(k as usize)?;
    let y = yarns.get(e.yarn as usize)?;
    let local = |p: u32| p.wrapping_sub(y.first_point);
    Some((e.yarn as usize, [local(e.a), local(e.b)]))
}

/// `|c / ℓ|` as f32 bits, NaN and infinity as +∞ (the bits of non-negative floats order like them).
fn relative_error_bits(c: f32, rest_length: f32) -> u32 {
    (c / rest_length).abs().to_bits().min(INF_BITS)
}

fn dot3(a: &[f32; 4], b: &[f32; 4]) -> f32 {
    a[0] * b[0] + a[1] * b[1] + a[2] * b[2]
}

/// Whether the stage, recording `iterations` iterations, commits projection 1 in `length_setup`
/// instead of dispatching `length_check` of iteration 0: it has a projection to make and the cap
/// allows one. That check then always decides to project (convergence needs a projection first), so
/// iteration 0's error is not accumulated either.
pub fn first_committed(params: &Params, iterations: u32) -> bool {
    iterations >= 1 && params.length_max_iterations >= 1
}

/// The `length_level` uniform of `length_setup` and of iteration 0's `length_error`:
/// [`level_uniform`] of iteration 0 with `w` = 1 when projection 1 is committed
/// ([`first_committed`]).
pub fn committed_uniform(level0: Level, committed: bool) -> [u32; 4] {
    [0, level0.offset, level0.size, committed as u32]
}

/// Kernel `length_setup`: `length_disp = h vel` (w 0) for every control point, and with
/// `length_level[3]` = 1 ([`first_committed`]) `length_iterations = 1`, what `length_check` of
/// iteration 0 would decide.
pub fn length_setup(
    params: &Params,
    length_level: &[u32; 4],
    vel: &[[f32; 4]],
    length_disp: &mut [[f32; 4]],
    counters: &mut Counters,
) {
    if length_level[3] != 0 {
        counters.length_iterations = 1;
    }
    let h = params.h;
    let n = params.num_points as usize;
    length_disp[..n]
        .par_iter_mut()
        .with_min_len(PAR)
        .zip(vel[..n].par_iter())
        .for_each(|(d, v)| *d = [h * v[0], h * v[1], h * v[2], 0.0]);
}

/// Kernel `length_error` (iteration `length_level[0]`, while `length_iterations` equals it, or
/// it + 1 with `length_level[3]` = 1: iteration 0 after [`length_setup`] committed projection 1):
/// each edge's unit direction and constraint value at `q + disp` into `length_dir`, and, unless
/// committed (no check reads it then), the largest relative error into `length_error_bits`. The edge vector is formed from differences
/// (`q_b − q_a` plus `d_b − d_a`) so it keeps its precision far from the origin.
pub fn length_error(
    params: &Params,
    length_level: &[u32; 4],
    edges: &[Edge],
    pos: &[[f32; 4]],
    length_disp: &[[f32; 4]],
    length_dir: &mut [[f32; 4]],
    counters: &mut Counters,
) {
    let committed = length_level[3] != 0;
    if counters.length_iterations != length_level[0] + committed as u32 {
        return;
    }
    let ne = params.num_edges as usize;
    let worst = length_dir[..ne]
        .par_iter_mut()
        .with_min_len(PAR)
        .zip(edges[..ne].par_iter())
        .map(|(out, e)| {
            let (a, b) = (e.a as usize, e.b as usize);
            let (qa, qb, da, db) = (pos[a], pos[b], length_disp[a], length_disp[b]);
            let v = [
                (qb[0] - qa[0]) + (db[0] - da[0]),
                (qb[1] - qa[1]) + (db[1] - da[1]),
                (qb[2] - qa[2]) + (db[2] - da[2]),
            ];
            let len = (v[0] * v[0] + v[1] * v[1] + v[2] * v[2]).sqrt();
            let c = len - e.rest_length;
            *out = if len > 0.0 {
                [v[0] / len, v[1] / len, v[2] / len, c]
            } else {
                [v[0], v[1], v[2], c]
            };
            relative_error_bits(c, e.rest_length)
        })
        .max()
        .unwrap_or(0);
    if !committed {
        counters.length_error_bits = counters.length_error_bits.max(worst);
    }
}

/// Kernel `length_check` (one thread; iteration `length_level[0]`, while `length_iterations` equals
/// it): stop when converged (a projection was made and the error is below the tolerance) or flag
/// [`ERROR_LENGTH_NOT_CONVERGED`] at the cap; else ask for projection `it + 1` and clear the error for
/// its evaluation.
pub fn length_check(params: &Params, length_level: &[u32; 4], counters: &mut Counters) {
    let it = length_level[0];
    if counters.length_iterations != it {
        return;
    }
    let err = f32::from_bits(counters.length_error_bits);
    if it > 0 && err < params.length_tolerance {
        return;
    }
    if it >= params.length_max_iterations {
        counters.errors |= ERROR_LENGTH_NOT_CONVERGED;
        return;
    }
    counters.length_iterations = it + 1;
    counters.length_error_bits = 0;
}

/// The Sherman–Morrison terms of a closed yarn: `γ = −d₀` (`d₀` the first row's diagonal) and the
/// corner coupling of its last row to its first, `−w t_last·t_first` (`w` of their shared point).
fn cyclic_terms(y: &Yarn, edges: &[Edge], inv_mass: &[f32], dir: &[[f32; 4]]) -> (f32, f32) {
    let f = y.first_edge as usize;
    let l = f + y.num_edges as usize - 1;
    let ef = edges[f];
    let wa = inv_mass[ef.a as usize];
    let wf = wa + inv_mass[ef.b as usize];
    let d0 = if wf > 0.0 { wf } else { 1.0 };
    (-d0, -wa * dot3(&dir[l], &dir[f]))
}

/// Kernel `length_assemble` (projection `length_level[0] + 1`): row `k` of level 0 for every edge:
/// `(w_a + w_b, −w_a t_{k−1}·t_k, C_k, 0)`, inert rows `(1, 0, 0, 0)`, no coupling before a yarn's
/// first edge; for a closed yarn (3 or more edges) the Sherman–Morrison changes of the first and last
/// diagonals and `z = (γ, 0 … 0, corner)`.
#[allow(clippy::too_many_arguments)]
pub fn length_assemble(
    params: &Params,
    length_level: &[u32; 4],
    yarns: &[Yarn],
    edges: &[Edge],
    inv_mass: &[f32],
    length_dir: &[[f32; 4]],
    length_sys: &mut [[f32; 4]],
    counters: &mut Counters,
) {
    if counters.length_iterations != length_level[0] + 1 {
        return;
    }
    let ne = params.num_edges as usize;
    length_sys[..ne]
        .par_iter_mut()
        .with_min_len(PAR)
        .enumerate()
        .for_each(|(k, row)| {
            let e = edges[k];
            let y = yarns[e.yarn as usize];
            let i = k as u32 - y.first_edge;
            let wa = inv_mass[e.a as usize];
            let wb = inv_mass[e.b as usize];
            let dk = length_dir[k];
            let (mut d, r) = if wa + wb > 0.0 {
                (wa + wb, dk[3])
            } else {
                (1.0, 0.0)
            };
            let o = if i > 0 {
                -wa * dot3(&length_dir[k - 1], &dk)
            } else {
                0.0
            };
            let mut z = 0.0;
            if y.closed != 0 && y.num_edges >= 3 {
                let (gamma, corner) = cyclic_terms(&y, edges, inv_mass, length_dir);
                if i == 0 {
                    d -= gamma;
                    z = gamma;
                }
                if i == y.num_edges - 1 {
                    d -= corner * corner / gamma;
                    z = corner;
                }
            }
            *row = [d, o, r, z];
        });
}

/// Kernel `length_error_assemble`, which the GPU step dispatches in place of iteration 0's
/// [`length_error`] and projection 1's [`length_assemble`] when `length_setup` committed
/// projection 1 ([`first_committed`]: no check between them, and iteration 0 keeps no error): the
/// two twins in turn. The kernel computes the neighbouring edges' directions a row needs itself,
/// with the same operations, so it gives bit for bit what the two kernels give.
#[allow(clippy::too_many_arguments)]
pub fn length_error_assemble(
    params: &Params,
    length_level: &[u32; 4],
    yarns: &[Yarn],
    edges: &[Edge],
    inv_mass: &[f32],
    pos: &[[f32; 4]],
    length_disp: &[[f32; 4]],
    length_dir: &mut [[f32; 4]],
    length_sys: &mut [[f32; 4]],
    counters: &mut Counters,
) {
    length_error(
        params,
        length_level,
        edges,
        pos,
        length_disp,
        length_dir,
        counters,
    );
    length_assemble(
        params,
        length_level,
        yarns,
        edges,
        inv_mass,
        length_dir,
        length_sys,
        counters,
    );
}

/// Kernel `length_error_assemble_reduce`, which the GPU step dispatches in place of
/// `length_error_assemble` and projection 1's [`length_reduce`] of level 0 when the latter is
/// below [`top_level`] (level 0 at offset 0; `length_level` is both's: iteration 0, level 0, as
/// [`committed_uniform`] makes it): the two twins in turn. Each workgroup of the kernel computes
/// the rows its share of the reduction reads itself (those of its blocks and of the block after
/// them), with the same operations, so it gives bit for bit what the two kernels give.
#[allow(clippy::too_many_arguments)]
pub fn length_error_assemble_reduce(
    params: &Params,
    length_level: &[u32; 4],
    yarns: &[Yarn],
    edges: &[Edge],
    inv_mass: &[f32],
    pos: &[[f32; 4]],
    length_disp: &[[f32; 4]],
    length_dir: &mut [[f32; 4]],
    length_sys: &mut [[f32; 4]],
    counters: &mut Counters,
) {
    length_error_assemble(
        params,
        length_level,
        yarns,
        edges,
        inv_mass,
        pos,
        length_disp,
        length_dir,
        length_sys,
        counters,
    );
    length_reduce(length_level, length_sys, counters);
}

/// Kernel `length_reduce` (projection `length_level[0] + 1`, level `(offset, size) =
/// length_level[1..3]`): row `j` of the next level (at `offset + size`) for every block `j`; when
/// the next level has one row, its solution `(d, 0, r/d, z/d)`.
pub fn length_reduce(
    length_level: &[u32; 4],
    length_sys: &mut [[f32; 4]],
    counters: &mut Counters,
) {
    if counters.length_iterations != length_level[0] + 1 {
        return;
    }
    let (off, n) = (length_level[1] as usize, length_level[2] as usize);
    let nb = n.div_ceil(B);
    let (lo, hi) = length_sys.split_at_mut(off + n);
    let cur = &lo[off..];
    hi[..nb]
        .par_iter_mut()
        .with_min_len(PAR_BLOCKS)
        .enumerate()
        .for_each(|(j, out)| *out = reduce_block(cur, j, n, nb));
}

/// `a b`, but exactly 0 when either factor is 0 even if the other is not finite: the products of the
/// solver that cross a zero coupling (between yarns) use it, so a NaN in one yarn stays in it.
fn mul0(a: f32, b: f32) -> f32 {
    if a == 0.0 || b == 0.0 {
        0.0
    } else {
        a * b
    }
}

/// `a / b`, but exactly 0 when `a` is 0 even if `b` is not finite or zero (see [`mul0`]).
fn div0(a: f32, b: f32) -> f32 {
    if a == 0.0 {
        0.0
    } else {
        a / b
    }
}

/// Row `j` of the Schur complement of level `cur` (`n` rows, `nb` blocks) on its separators.
fn reduce_block(cur: &[[f32; 4]], j: usize, n: usize, nb: usize) -> [f32; 4] {
    let s = j * B;
    let sep = (s + B).min(n) - 1;
    let row = cur[sep];
    let (mut dd, mut rr, mut zz) = (row[0], row[2], row[3]);
    let oo;
    if sep > s {
        // Block j's interior s..sep, eliminated top-down: β, ρ, ζ end as the last interior row's
        // pivot and right-hand sides, g/β is (T⁻¹)_{last, first}.
        let first = cur[s];
        let (mut beta, mut rho, mut zeta, mut g) = (first[0], first[2], first[3], 1.0f32);
        for ri in &cur[s + 1..sep] {
            let w = div0(ri[1], beta);
            beta = ri[0] - mul0(ri[1], w);
            rho = ri[2] - mul0(w, rho);
            zeta = ri[3] - mul0(w, zeta);
            g = -mul0(w, g);
        }
        let cr = row[1];
        let q = div0(cr, beta);
        dd -= mul0(q, cr);
        rr -= mul0(q, rho);
        zz -= mul0(q, zeta);
        oo = -mul0(first[1], mul0(q, g));
    } else {
        // No interior: the previous separator is the row before.
        oo = row[1];
    }
    if j + 1 < nb {
        // Block j+1's interior s2..sep2, eliminated bottom-up: β, ρ, ζ end as its first row's.
        let s2 = sep + 1;
        let sep2 = (s2 + B).min(n) - 1;
        if sep2 > s2 {
            let last = cur[sep2 - 1];
            let (mut beta, mut rho, mut zeta, mut below) = (last[0], last[2], last[3], last[1]);
            for ri in cur[s2..sep2 - 1].iter().rev() {
                let w = div0(below, beta);
                beta = ri[0] - mul0(below, w);
                rho = ri[2] - mul0(w, rho);
                zeta = ri[3] - mul0(w, zeta);
                below = ri[1];
            }
            // `below` is now the coupling of separator j to row s2.
            let q = div0(below, beta);
            dd -= mul0(q, below);
            rr -= mul0(q, rho);
            zz -= mul0(q, zeta);
        }
    }
    if nb == 1 {
        [dd, 0.0, rr / dd, zz / dd]
    } else {
        [dd, oo, rr, zz]
    }
}

/// Kernel `length_back` (projection `length_level[0] + 1`, level `length_level[1..3]`, the next level
/// solved): every block's separator gets its value from the next level and its interior is solved
/// with the separators on either side known (Thomas); the solution goes to r and z (the pivots to
/// the diagonal).
pub fn length_back(length_level: &[u32; 4], length_sys: &mut [[f32; 4]], counters: &mut Counters) {
    if counters.length_iterations != length_level[0] + 1 {
        return;
    }
    let (off, n) = (length_level[1] as usize, length_level[2] as usize);
    let nb = n.div_ceil(B);
    let (lo, hi) = length_sys.split_at_mut(off + n);
    let next = &hi[..nb];
    lo[off..]
        .par_chunks_mut(B)
        .with_min_len(PAR_BLOCKS)
        .enumerate()
        .for_each(|(j, blk)| back_block(blk, j, next));
}

/// Kernel `length_top`: the solve from the level of `length_level` (at most [`TOP_ROWS`] rows, see
/// [`top_level`]) to the top and back, in one workgroup: [`length_reduce`] on it and on each next
/// level until the one of one row, then [`length_back`] on them in reverse.
pub fn length_top(length_level: &[u32; 4], length_sys: &mut [[f32; 4]], counters: &mut Counters) {
    let [it, mut off, mut n, _] = *length_level;
    // No allocation in the step: levels shrink by BLOCK = 2⁵, so 7 reach any u32 row count.
    let mut solved = [[0u32; 4]; 7];
    let mut count = 0;
    loop {
        solved[count] = [it, off, n, 0];
        count += 1;
        let nb = n.div_ceil(BLOCK);
        if nb == 1 {
            break;
        }
        off += n;
        n = nb;
    }
    for u in &solved[..count] {
        length_reduce(u, length_sys, counters);
    }
    for u in solved[..count].iter().rev() {
        length_back(u, length_sys, counters);
    }
}

/// Block `j` (rows `blk`, its separator last) of a level whose separators' values are `next`.
fn back_block(blk: &mut [[f32; 4]], j: usize, next: &[[f32; 4]]) {
    let m = blk.len() - 1;
    let xr = next[j];
    let xl = if j > 0 { next[j - 1] } else { [0.0; 4] };
    blk[m][2] = xr[2];
    blk[m][3] = xr[3];
    if m == 0 {
        return;
    }
    let (cl, cr) = (blk[0][1], blk[m][1]);
    for i in 0..m {
        let mut r = blk[i][2];
        let mut z = blk[i][3];
        if i == 0 {
            r -= mul0(cl, xl[2]);
            z -= mul0(cl, xl[3]);
        }
        if i == m - 1 {
            r -= mul0(cr, xr[2]);
            z -= mul0(cr, xr[3]);
        }
        if i > 0 {
            let o = blk[i][1];
            let p = blk[i - 1];
            let w = div0(o, p[0]);
            blk[i][0] -= mul0(o, w);
            r -= mul0(w, p[2]);
            z -= mul0(w, p[3]);
        }
        blk[i][2] = r;
        blk[i][3] = z;
    }
    let last = blk[m - 1];
    let mut x = last[2] / last[0];
    let mut xz = last[3] / last[0];
    blk[m - 1][2] = x;
    blk[m - 1][3] = xz;
    for i in (0..m - 1).rev() {
        let o = blk[i + 1][1];
        let bi = blk[i];
        x = (bi[2] - mul0(o, x)) / bi[0];
        xz = (bi[3] - mul0(o, xz)) / bi[0];
        blk[i][2] = x;
        blk[i][3] = xz;
    }
}

/// The Sherman–Morrison factor `f = (y₀ + corner y_last / γ) / (1 + q₀ + corner q_last / γ)` of
/// yarn `y` once `length_sys`'s level 0 holds the solutions `y` (r) and `q` (z): for a closed yarn of
/// 3 or more edges, 0 for any other (`length_update` computes it per thread, as here).
pub fn cyclic_fact(
    y: &Yarn,
    edges: &[Edge],
    inv_mass: &[f32],
    length_dir: &[[f32; 4]],
    length_sys: &[[f32; 4]],
) -> f32 {
    if y.closed != 0 && y.num_edges >= 3 {
        let (gamma, corner) = cyclic_terms(y, edges, inv_mass, length_dir);
        let first = length_sys[y.first_edge as usize];
        let last = length_sys[(y.first_edge + y.num_edges - 1) as usize];
        (first[2] + corner * last[2] / gamma) / (1.0 + first[3] + corner * last[3] / gamma)
    } else {
        0.0
    }
}

/// Kernel `length_update` (projection `length_level[0] + 1`; `length_level[3]` the number of
/// control points, [`update_uniform`]): `x −= W ∇Cᵀ λ` gathered per point, with `λ_k = y_k − f q_k`
/// (`f` the Sherman–Morrison factor of the point's yarn, [`cyclic_fact`], which each point computes
/// for itself as each thread of the kernel does): a point moves by `w (λ_a t_a − λ_b t_b)` over the
/// edge it starts (`a`) and the edge it ends (`b`).
#[allow(clippy::too_many_arguments)]
pub fn length_update(
    length_level: &[u32; 4],
    yarns: &[Yarn],
    edges: &[Edge],
    point_edges: &[[u32; 4]],
    inv_mass: &[f32],
    length_dir: &[[f32; 4]],
    length_sys: &[[f32; 4]],
    length_disp: &mut [[f32; 4]],
    counters: &mut Counters,
) {
    if counters.length_iterations != length_level[0] + 1 {
        return;
    }
    let n = length_level[3] as usize;
    length_disp[..n]
        .par_iter_mut()
        .with_min_len(PAR)
        .enumerate()
        .for_each(|(p, d)| {
            let w = inv_mass[p];
            let pe = point_edges[p];
            let y = &yarns[pe[2] as usize];
            let f = cyclic_fact(y, edges, inv_mass, length_dir, length_sys);
            let mut dx = [0.0f32; 3];
            if pe[1] != NO_EDGE {
                let (row, t) = (length_sys[pe[1] as usize], length_dir[pe[1] as usize]);
                let l = row[2] - f * row[3];
                for c in 0..3 {
                    dx[c] -= l * t[c];
                }
            }
            if pe[0] != NO_EDGE {
                let (row, t) = (length_sys[pe[0] as usize], length_dir[pe[0] as usize]);
                let l = row[2] - f * row[3];
                for c in 0..3 {
                    dx[c] += l * t[c];
                }
            }
            for c in 0..3 {
                d[c] += w * dx[c];
            }
        });
}

/// Kernel `length_finish`: the [`length_check`] of the recording's last evaluation (iteration
/// `length_level[0]`), then `vel = length_disp / h` (w 0) for every control point, unless the
/// projection did not converge: then `vel` is left as it came, for the error report,
/// `first_unconverged_edge` lowered to the first edge of `length_dir` (the evaluation that failed)
/// whose error bits reach the smaller of the tolerance's and `length_error_bits` (the first edge
/// not within the tolerance, or the first of the largest error when every edge is: a cap of 0),
/// and a velocity that came in not finite raises [`ERROR_NAN_VELOCITY`] with `first_bad_point`
/// lowered to its point: the projection of a yarn with a NaN fails on all its edges, and the
/// point names the cause.
pub fn length_finish(
    params: &Params,
    length_level: &[u32; 4],
    edges: &[Edge],
    length_dir: &[[f32; 4]],
    length_disp: &[[f32; 4]],
    vel: &mut [[f32; 4]],
    counters: &mut Counters,
) {
    length_check(params, length_level, counters);
    if counters.errors & ERROR_LENGTH_NOT_CONVERGED != 0 {
        let first = first_unconverged(params, edges, length_dir, counters.length_error_bits)
            .map_or(u32::MAX, |k| k as u32);
        counters.first_unconverged_edge = counters.first_unconverged_edge.min(first);
        let n = params.num_points as usize;
        if let Some(p) = vel[..n]
            .par_iter()
            .position_first(|v| !v.iter().all(|x| x.is_finite()))
        {
            counters.errors |= ERROR_NAN_VELOCITY;
            counters.first_bad_point = counters.first_bad_point.min(p as u32);
        }
        return;
    }
    let inv_h = 1.0 / params.h;
    let n = params.num_points as usize;
    vel[..n]
        .par_iter_mut()
        .with_min_len(PAR)
        .zip(length_disp[..n].par_iter())
        .for_each(|(v, d)| *v = [d[0] * inv_h, d[1] * inv_h, d[2] * inv_h, 0.0]);
}

/// One recorded dispatch of the stage.
pub struct LengthDispatch {
    pub kernel: &'static str,
    pub bind_group: wgpu::BindGroup,
    /// Workgroup grid ([`shaders::dispatch_grid`] of the thread count).
    pub groups: [u32; 3],
}

/// The stage's dispatches on the GPU, made once: `length_setup` (unless the caller's
/// `integrate_velocity_setup` makes it); then for every recorded iteration `it`: `length_error`,
/// `length_check`, `length_assemble` (of iteration 0 when [`first_committed`],
/// `length_error_assemble` alone: no check stands between the two; with level 0 below the top,
/// `length_error_assemble_reduce`, which also makes level 0's `length_reduce`), `length_reduce` for
/// the levels below [`top_level`], `length_top`, `length_back` for those levels in reverse,
/// `length_update`; then `length_error` of the last
/// iteration and `length_finish`, which makes its check. Each dispatch binds its own
/// `length_level` uniform ([`level_uniform`], [`committed_uniform`], [`update_uniform`]).
pub struct LengthGpu {
    pub dispatches: Vec<LengthDispatch>,
    /// Without its own `length_setup` ([`LengthGpu::new`] with `setup` false): the `length_setup`
    /// uniform ([`committed_uniform`]) for the caller's `integrate_velocity_setup` to bind.
    pub setup_level: Option<wgpu::Buffer>,
    /// The `length_level` uniforms the bind groups hold.
    _uniforms: Vec<wgpu::Buffer>,
}

impl LengthGpu {
    /// Uploads the stage's own buffers (`point_edges`, `length_disp`, `length_dir`, `length_sys`)
    /// from `s`; the scene's (`params`, `counters`, `yarns`, `edges`, `inv_mass`,
    /// `pos`, `vel`) are the caller's.
    pub fn upload(
        buffers: &mut Buffers,
        device: &wgpu::Device,
        queue: &wgpu::Queue,
        s: &LengthScratch,
    ) {
        use bytemuck::cast_slice;
        buffers.upload(
            device,
            queue,
            "point_edges",
            cast_slice(&s.point_edges),
            false,
        );
        buffers.upload(device, queue, "length_disp", cast_slice(&s.disp), false);
        buffers.upload(device, queue, "length_dir", cast_slice(&s.dir), false);
        buffers.upload(device, queue, "length_sys", cast_slice(&s.sys), false);
    }

    /// The stage's dispatches over `buffers` for the scene sizes of `params` and the solver levels
    /// `levels`, with `recorded` iterations recorded (at most `params.length_max_iterations`; with
    /// all of them the cap is flagged on the GPU too, with fewer a step that needs more ends with
    /// `length_iterations` = `recorded` + 1). Without `setup` the stage starts at its first
    /// `length_error`: the caller dispatches `integrate_velocity_setup`, which makes
    /// `length_setup`'s work, with [`LengthGpu::setup_level`] as its uniform.
    pub fn new(
        device: &wgpu::Device,
        pipelines: &Pipelines,
        buffers: &Buffers,
        params: &Params,
        recorded: u32,
        levels: &[Level],
        setup: bool,
    ) -> Result<LengthGpu, PipelineError> {
        use wgpu::util::DeviceExt;
        let mut out = LengthGpu {
            dispatches: Vec::new(),
            setup_level: None,
            _uniforms: Vec::new(),
        };
        if levels.is_empty() {
            return Ok(out);
        }
        let add = |out: &mut LengthGpu,
                   kernel: &'static str,
                   uniform: Option<[u32; 4]>,
                   threads: u32|
         -> Result<(), PipelineError> {
            let bind_group = match uniform {
                Some(u) => {
                    let buf = device.create_buffer_init(&wgpu::util::BufferInitDescriptor {
                        label: Some("length_level"),
                        contents: bytemuck::cast_slice(&u),
                        usage: wgpu::BufferUsages::UNIFORM,
                    });
                    let bg = pipelines.bind_group_with(
                        device,
                        kernel,
                        buffers,
                        &[("length_level", &buf)],
                    )?;
                    out._uniforms.push(buf);
                    bg
                }
                None => pipelines.bind_group(device, kernel, buffers)?,
            };
            let k = shaders::kernel(kernel)?;
            out.dispatches.push(LengthDispatch {
                kernel,
                bind_group,
                groups: shaders::dispatch_grid(threads, k.workgroup_size),
            });
            Ok(())
        };
        let top = top_level(levels);
        let committed = first_committed(params, recorded);
        let lv0 = Some(committed_uniform(levels[0], committed));
        if setup {
            add(&mut out, "length_setup", lv0, params.num_points)?;
        } else {
            let buf = device.create_buffer_init(&wgpu::util::BufferInitDescriptor {
                label: Some("length_level"),
                contents: bytemuck::cast_slice(&committed_uniform(levels[0], committed)),
                usage: wgpu::BufferUsages::UNIFORM,
            });
            out.setup_level = Some(buf);
        }
        for it in 0..=recorded {
            let lv = Some(level_uniform(it, levels[0]));
            let first = it == 0 && committed;
            // Level 0's reduction in the same dispatch (length_error_assemble_reduce), when
            // level 0 is below the top: projection 1's first reduce.
            let fused_reduce = first && it < recorded && top > 0 && levels[0].offset == 0;
            if fused_reduce {
                add(
                    &mut out,
                    "length_error_assemble_reduce",
                    lv0,
                    solver_threads(levels[0].size),
                )?;
            } else if first && it < recorded {
                // No check between them: one dispatch.
                add(&mut out, "length_error_assemble", lv0, params.num_edges)?;
            } else {
                add(
                    &mut out,
                    "length_error",
                    if first { lv0 } else { lv },
                    params.num_edges,
                )?;
                if it == recorded {
                    break;
                }
                if !first {
                    add(&mut out, "length_check", lv, 1)?;
                }
                add(&mut out, "length_assemble", lv, params.num_edges)?;
            }
            let below = &levels[..top];
            for &lvl in &below[fused_reduce as usize..] {
                let u = Some(level_uniform(it, lvl));
                add(&mut out, "length_reduce", u, solver_threads(lvl.size))?;
            }
            let u = Some(level_uniform(it, levels[top]));
            add(&mut out, "length_top", u, SOLVER_GROUP)?;
            for &lvl in below.iter().rev() {
                let u = Some(level_uniform(it, lvl));
                add(&mut out, "length_back", u, solver_threads(lvl.size))?;
            }
            let uu = Some(update_uniform(it, levels[0], params.num_points));
            add(&mut out, "length_update", uu, params.num_points)?;
        }
        let lf = Some(level_uniform(recorded, levels[0]));
        add(&mut out, "length_finish", lf, params.num_points)?;
        Ok(out)
    }

    /// The `length_level` uniforms the dispatches' bind groups hold (for a caller that keeps the
    /// dispatches elsewhere).
    pub fn into_uniforms(self) -> Vec<wgpu::Buffer> {
        let mut u = self._uniforms;
        u.extend(self.setup_level);
        u
    }

    /// Records every dispatch into `pass`, in order (wgpu orders storage accesses between dispatches).
    pub fn record(
        &self,
        pipelines: &Pipelines,
        pass: &mut wgpu::ComputePass<'_>,
    ) -> Result<(), PipelineError> {
        for d in &self.dispatches {
            pipelines.dispatch_groups(pass, d.kernel, &d.bind_group, d.groups)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn top_level_is_the_first_of_at_most_top_rows_and_solved() {
        let sizes = |n: u32| levels(n).iter().map(|l| l.size).collect::<Vec<_>>();
        for (n, top) in [
            (1, 0),
            (136, 0),
            (TOP_ROWS, 0),
            (TOP_ROWS + 1, 1),
            (26_100, 1),
            (1_000_000, 2),
        ] {
            let l = levels(n);
            assert_eq!(top_level(&l), top, "{n} rows: {:?}", sizes(n));
            // From the top at most two solved levels remain (length_top's TOP_LEVELS).
            assert!(l.len() - 1 - top <= 2, "{n} rows: {:?}", sizes(n));
            assert!(l[top].size <= TOP_ROWS);
        }
        assert_eq!(sizes(26_100), [26_100, 816, 26, 1]);
    }

    #[test]
    fn levels_shrink_by_block_to_one_row() {
        assert!(levels(0).is_empty());
        let l = levels(1);
        assert_eq!(
            l,
            vec![Level { offset: 0, size: 1 }, Level { offset: 1, size: 1 }]
        );
        let l = levels(1_000_000);
        let sizes: Vec<u32> = l.iter().map(|l| l.size).collect();
        assert_eq!(sizes, vec![1_000_000, 31_250, 977, 31, 1]);
        for w in l.windows(2) {
            assert_eq!(w[1].offset, w[0].offset + w[0].size);
        }
        // Even 2³⁰ rows take few levels.
        assert_eq!(levels(1 << 30).len(), 7);
    }

    /// The partitioned solve of one small system against a dense f64 solve, for sizes around the
    /// block size (empty interiors, one-row blocks, several levels).
    #[test]
    fn partitioned_solve_solves_tridiagonal_systems() {
        for n in [1usize, 2, 3, 31, 32, 33, 64, 65, 1025, 1057] {
            let d: Vec<f32> = (0..n).map(|k| 2.0 + 0.1 * (k % 5) as f32).collect();
            let o: Vec<f32> = (0..n)
                .map(|k| {
                    if k == 0 {
                        0.0
                    } else {
                        -0.6 - 0.05 * (k % 3) as f32
                    }
                })
                .collect();
            let r: Vec<f32> = (0..n).map(|k| (k as f32 * 0.7).sin()).collect();
            let z: Vec<f32> = (0..n).map(|k| (k as f32 * 0.3).cos()).collect();
            let lv = levels(n as u32);
            let rows = (lv.last().unwrap().offset + 1) as usize;
            let mut sys = vec![[0.0f32; 4]; rows];
            for k in 0..n {
                sys[k] = [d[k], o[k], r[k], z[k]];
            }
            let mut c = Counters {
                length_iterations: 1,
                ..Counters::default()
            };
            let solved = &lv[..lv.len() - 1];
            for &l in solved {
                length_reduce(&level_uniform(0, l), &mut sys, &mut c);
            }
            for &l in solved.iter().rev() {
                length_back(&level_uniform(0, l), &mut sys, &mut c);
            }
            for (rhs, col) in [(&r, 2), (&z, 3)] {
                for k in 0..n {
                    let mut ax = d[k] as f64 * sys[k][col] as f64;
                    if k > 0 {
                        ax += o[k] as f64 * sys[k - 1][col] as f64;
                    }
                    if k + 1 < n {
                        ax += o[k + 1] as f64 * sys[k + 1][col] as f64;
                    }
                    assert!((ax - rhs[k] as f64).abs() < 1e-5, "n = {n}, row {k}");
                }
            }
        }
    }
}
