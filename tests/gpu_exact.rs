//! The exact contact path on the GPU (`contact::exact_gpu`: `aabb_raster`, `grid_write`,
//! `candidate_count`, `candidate_write`, `quadrature_points`, `exact_contact_forces`,
//! `contact_slots`, `contact_gather`, with the scans and sorts between them) against its CPU twins
//! (`ExactContact`, which is what the CPU exact path runs), on real scene states: scenes/tiny.toml
//! and scenes/swatch.toml with `contact.model = exact`, stepped on the CPU.
//!
//! **Discrete outputs are compared exactly** after a canonical order where needed: the counters
//! (counts, capacities, overflow flags, errors, touching pairs), the cell boxes and cell counts,
//! the scanned offsets, the sorted grid entries, the candidate pairs in order, every record's
//! touching count, and the sorted point → slot table. Both paths make these decisions on the same
//! f32 operations in the same order, and the same-yarn exclusion only subtracts and compares stored
//! f32 arc positions. On lavapipe that makes them bitwise equal, and every exact comparison below
//! runs.
//!
//! **Borderline decisions.** A GPU that fuses `a·b + c` (Vulkan permits it; NVIDIA does it) moves
//! the floats behind three kinds of decisions by an ulp or so, and a decision whose float lies
//! within the derived bound of its threshold may then go the other way:
//! - a cell box bound `floor((lo − o)/cell)` whose padded bound lies within `2·tol` of a cell
//!   boundary (`tol` below; the 2 covers the rounding of `lo − o` and of the product, each below
//!   `2U(Q + pad) = tol/64`): the GPU's cell may differ by one there, nowhere else; such boxes are
//!   counted, printed, and must be rare (at most 1 %);
//! - a candidate pair (padded boxes overlap, `lo_a ≤ hi_b ∧ lo_b ≤ hi_a` per axis) whose smallest
//!   overlap margin is within `2·tol` of 0 (each side of a comparison may move by `tol`);
//! - a touching quadrature pair (`s = |x|² < 4r²`) with `|s − 4r²| ≤ band_s` (see the forces).
//!
//! Each exact comparison runs whenever its inputs agree, which is always on lavapipe; where they
//! do not, the difference must be explained by borderline decisions and the comparison degrades:
//! - cell boxes differ (only at borderline bounds): the grid offsets must be the exclusive scan of
//!   the GPU's own cell counts and the sorted entries must be exactly what the twins `grid_write` +
//!   a stable sort by key make of the GPU's own boxes; the candidate list then may come in another
//!   order (the order follows the cell keys);
//! - candidate sets differ: every pair in the symmetric difference must be an overlap-borderline
//!   pair; records, touch offsets and the slot table (indexed by candidate) are then not compared
//!   one by one, only their totals, within the borderline counts;
//! - a record's touching count differs: by at most that candidate's borderline quadrature pairs;
//!   the touch offsets and slot table are then not compared, the totals are bounded.
//!
//! The counters must still be consistent with the GPU's own lists, exactly. A run whose exact
//! capacity is too small for the GPU's borderline extra entries, candidates or records must flag
//! the overflow with the needed count; the rest of that run is then not compared (the
//! spare-capacity run, which must complete, compares it).
//!
//! **Floats get a derived bound** that allows for a GPU that fuses a multiply and an add (one
//! rounding instead of two; Vulkan permits it, lavapipe does not do it, so there the measured
//! difference is 0 — the test prints it). U = 2⁻²⁴ (unit roundoff), ε = 2U = 2⁻²³:
//! - padded segment boxes, `tol = 128 U (Q + pad)` absolute, Q = max |control point coordinate|,
//!   pad = r·PAD_FACTOR. A bound is either a control point (`min`/`max`, exact on both paths) or
//!   `y(t) = Σ q_m B_m(t)` at a root t of `y'` (spline::segment_aabb). The roots may differ (the
//!   coefficients of `y'` and the discriminant fuse), but `y'(t) ≈ 0` there, so y moves only to
//!   second order (≈ e²/|y''| for an error e ~ 30U·Q in the coefficients: orders below U·Q for the
//!   cm-scale curvature here). At the same t, each term of a weight `B_m` passes ≤ 4 roundings (t²,
//!   t³, its coefficient, the additions), and the sums T_m of |terms| are 2, 5, 4, 1 (t ∈ [0, 1]),
//!   so each path's weight is within 4U·T_m of exact and the paths differ by
//!   Σ_m 8U T_m |q_m| ≤ 96 U Q; the sum of 4 products (7 roundings) adds 2·7U Σ|q_m B_m|
//!   ≤ 14U · 1.25 Q (Σ|B_m| = 1 + t(1 − t) ≤ 1.25 for Catmull-Rom), and subtracting/adding the
//!   pad one more ulp of |bound| ≤ Q + pad on each path:
//!   ≤ 96UQ + 17.5UQ + 2U(Q + pad) < 128 U (Q + pad);
//! - quadrature points `y = Σ w_m q_m`: each of the 3 additions and 4 products may round once more
//!   or less: |Δy| ≤ 8ε Σ|w_m q_m|;
//! - forces, bounded term by term (f64) given the GPU's own quadrature points (checked above):
//!   the forces kernel reads them, so their measured difference is its input error. A touching
//!   pair's term is `x · 2κw f'(s)` spread with the weights `w_m`, `f'(s) = −4r²/s² + 1/(4r²)`.
//!   Each coordinate of `x = y_i − y_j` moves by Δx_k = (|Δy_i,k| + |Δy_j,k|)(1 + U) + 2U|x_k| (the
//!   measured differences, and the subtraction's rounding on each path), so `s = |x|²` by
//!   Δs = 2|x|·|Δx| + |Δx|² + 10U·s (5 roundings of the sum of squares per path).
//!   f' is a difference of two terms that cancel towards s = 4r², so its error is bounded in
//!   absolute terms, not relative to f': Δf' = 4r²(1/(s − Δs)² − 1/s²) + 16U·4r²/(s − Δs)² (a
//!   GPU's `1/s` may be off by 2.5 ulp = 5U, the CPU's by U, and the square carries it twice, plus
//!   two products on each path) + 6U/(4r²) (the same for `1/(4r²)`) + 2U|f'| (the sum). Then
//!   |Δ(x_k f')| ≤ |x|Δf' + |f'|Δx, and the three products `2κw·f'`, `·x`, `·w_m` round once on
//!   each path: 6U·|term|. Each control point's bound is the sum over its terms of these bounds
//!   times |w_m|, plus 2(n + 1)·U·(Σ|terms| + |f₀|) for its n + 1 running-sum steps (slot sums,
//!   then the gather onto the step's force f₀; each rounds on each path, possibly fused).
//!   Touching decisions use an a-priori band instead (the quadrature point bound, not the measured
//!   difference): Δx = 16ε·W + 4U·r per coordinate (W the largest Σ|w_m q_m|, |x_k| < 2r), so at
//!   |x| ≈ 2r, with the CPU's own 5U·s, band_s = 7rΔx + 3Δx² + 8U·4r² (2√3 < 7/2): outside
//!   `|s − 4r²| ≤ band_s` (s in f64) both paths decide as the f64 s does. A borderline pair, and
//!   every pair of a candidate only one path found, may be present on one path only: its whole
//!   term, with |f'| taken at the worse end of the band, is added to the bound (f' vanishes at
//!   s = 4r², so this stays small).
//!
//! Measured on an NVIDIA H200 (Vulkan): no decision flipped (every exact comparison ran and
//! passed); box bounds differed by up to 1.4e-6 cm (tol 5.1e-5 cm), quadrature points by up to
//! 1.84 ε·Σ|wq|, and forces by up to ~1e-4 (relative ~3e-5) at points whose pairs sit near s = 4r²;
//! the first version of the force bound (relative to |f'|, blind to the cancellation in f' and to
//! a GPU's division) did not allow that.

#[path = "support/fixture.rs"]
mod fixture;

use fixture::{bytes, scene_sim};
use std::collections::BTreeSet;
use yarnsim::contact::exact_gpu::{self, ExactGpu, ExactTables};
use yarnsim::contact::{grid, ExactContact};
use yarnsim::gpu::testing::gpu_or_skip;
use yarnsim::gpu::Gpu;
use yarnsim::layout::{ContactRecord, Counters, KeyValue, Params, SegmentBox};
use yarnsim::pipelines::{Buffers, Pipelines};
use yarnsim::scene::{ContactModel, ContactParams};
use yarnsim::sim::{ContactForce, ContactStats, Sim};

/// Unit roundoff of f32 (half an ulp of 1), and the f32 machine epsilon ε = 2U.
const U: f64 = 1.0 / (1u64 << 24) as f64;
const EPS: f64 = 2.0 * U;

/// The CPU exact path on `sim`'s state, with forces added to a copy of the step's force.
struct Cpu {
    exact: ExactContact,
    force_in: Vec<[f32; 4]>,
    force: Vec<[f32; 4]>,
}

fn contact_params(sim: &Sim) -> (f32, ContactParams) {
    let sp = sim.step_params();
    (
        sp.radius,
        ContactParams {
            model: ContactModel::Exact,
            stiffness: sp.k_contact,
            quadrature: sp.quadrature,
            grid_cell: sp.grid_cell,
            exclusion_arc: sp.exclusion_arc,
            ..ContactParams::default()
        },
    )
}

fn cpu(sim: &Sim) -> Cpu {
    let (r, p) = contact_params(sim);
    let mut exact = ExactContact::new(r, &p).unwrap();
    let force_in = sim.force().to_vec();
    let mut force = force_in.clone();
    exact
        .add_forces(
            &sim.topo,
            &sim.pos,
            &sim.vel,
            &mut force,
            &mut ContactStats::default(),
        )
        .unwrap();
    Cpu {
        exact,
        force_in,
        force,
    }
}

/// Everything the GPU path wrote.
struct GpuOut {
    counters: Counters,
    seg_box: Vec<SegmentBox>,
    grid_offsets: Vec<u32>,
    entries: Vec<KeyValue>,
    candidates: Vec<[u32; 2]>,
    qpts: Vec<[f32; 4]>,
    records: Vec<ContactRecord>,
    touch_offsets: Vec<u32>,
    slots: Vec<KeyValue>,
    force: Vec<[f32; 4]>,
}

/// The path built for `caps` on `sim`'s state: its pipelines, its buffers (with the inputs a step
/// binds) and the path, and the kernel parameters.
fn build_path(
    gpu: &Gpu,
    sim: &Sim,
    c: &Cpu,
    caps: [u32; 3],
) -> (Pipelines, Buffers, ExactGpu, Params) {
    let [entry_cap, cand_cap, rec_cap] = caps;
    let (device, queue) = (&gpu.device, &gpu.queue);
    let pipelines = Pipelines::only(device, exact_gpu::KERNELS).unwrap();
    let kp = *c.exact.kernel_params();
    let mut bufs = Buffers::default();
    bufs.upload(device, queue, "params", bytes(&[kp]), true);
    bufs.upload(device, queue, "segments", bytes(&sim.topo.segments), false);
    bufs.upload(device, queue, "pos", bytes(&sim.pos), false);
    bufs.upload(device, queue, "force", bytes(&c.force_in), false);
    let tables = ExactTables {
        params: &kp,
        quad_weights: c.exact.quad_weights(),
        quad_arc: c.exact.exclusion().quad_arc(),
        seg_contact: c.exact.segment_contact(),
    };
    // A fresh counters block with the capacities (what the step writes before each step; the
    // path binds `counters` by name, so it must exist first).
    let mut counters = Counters {
        first_bad_point: u32::MAX,
        ..Counters::default()
    };
    counters.grid_entries.capacity = entry_cap;
    counters.candidate_pairs.capacity = cand_cap;
    counters.touching_records.capacity = rec_cap;
    bufs.upload(device, queue, "counters", bytes(&[counters]), false);
    let path = ExactGpu::new(
        device, queue, &pipelines, &mut bufs, &tables, entry_cap, cand_cap, rec_cap,
    )
    .unwrap();
    (pipelines, bufs, path, kp)
}

fn run_gpu(gpu: &Gpu, sim: &Sim, c: &Cpu, caps: [u32; 3]) -> GpuOut {
    let [entry_cap, cand_cap, rec_cap] = caps;
    let (device, queue) = (&gpu.device, &gpu.queue);
    let (pipelines, bufs, path, kp) = build_path(gpu, sim, c, caps);
    let mut check = Counters::default();
    path.set_capacities(&mut check);
    assert_eq!(
        [
            check.grid_entries.capacity,
            check.candidate_pairs.capacity,
            check.touching_records.capacity
        ],
        caps
    );
    let scope = device.push_error_scope(wgpu::ErrorFilter::Validation);
    let mut enc = device.create_command_encoder(&wgpu::CommandEncoderDescriptor { label: None });
    {
        let mut pass = enc.begin_compute_pass(&wgpu::ComputePassDescriptor {
            label: None,
            timestamp_writes: None,
        });
        path.record(&pipelines, &mut pass).unwrap();
    }
    queue.submit([enc.finish()]);
    if let Some(e) = pollster::block_on(scope.pop()) {
        panic!("{e}");
    }
    let ns = kp.num_segments as u64;
    let s = ns * kp.quadrature as u64;
    let read = |name: &str, n: u64| bufs.read(device, queue, name, n).unwrap();
    GpuOut {
        counters: bytemuck::pod_read_unaligned(&read(
            "counters",
            std::mem::size_of::<Counters>() as u64,
        )),
        seg_box: bytemuck::pod_collect_to_vec(&read("seg_box", ns * 64)),
        grid_offsets: bytemuck::pod_collect_to_vec(&read("grid_offsets", (ns + 1) * 4)),
        entries: bytemuck::pod_collect_to_vec(&read("grid_entries", entry_cap as u64 * 16)),
        candidates: bytemuck::pod_collect_to_vec(&read("candidates", cand_cap as u64 * 8)),
        qpts: bytemuck::pod_collect_to_vec(&read("qpts", s * 16)),
        records: bytemuck::pod_collect_to_vec(&read("contact_records", cand_cap as u64 * 144)),
        touch_offsets: bytemuck::pod_collect_to_vec(&read(
            "touch_offsets",
            (cand_cap as u64 + 1) * 4,
        )),
        slots: bytemuck::pod_collect_to_vec(&read("gather_slots", 8 * rec_cap as u64 * 16)),
        force: bytemuck::pod_collect_to_vec(&read("force", sim.pos.len() as u64 * 16)),
    }
}

/// What [`force_bounds`] derives from the CPU's quadrature points (module doc).
struct Bounds {
    /// Per control point: the bound on |GPU − CPU| of its force.
    force: Vec<f64>,
    /// Per CPU candidate: its non-excluded quadrature pairs with `|s − 4r²| ≤ band_s`.
    border: Vec<u32>,
    /// Non-excluded quadrature pairs with `s < 4r² + band_s` of the candidates only one path found.
    extra: u32,
    band_s: f64,
}

/// The bounds of the module doc for every control point's force, from the CPU's quadrature points
/// and candidates: per touching pair the bound on its term, the running sums' rounding, and the
/// whole terms of borderline pairs and of the pairs of `flipped` (candidates only one path found).
fn force_bounds(sim: &Sim, c: &Cpu, gpu_qpts: &[[f32; 4]], flipped: &[[u32; 2]]) -> Bounds {
    let ex = &c.exact;
    let kp = ex.kernel_params();
    let b = kp.quadrature;
    let q = ex.quadrature_positions();
    let w = ex.quad_weights();
    let r = kp.radius as f64;
    let four_r2 = 4.0 * r * r;
    // W: the largest Σ|w_m q_m| of a quadrature point coordinate (the scale of its bound).
    let mut w_max = 0.0f64;
    for seg in &sim.topo.segments[..kp.num_segments as usize] {
        for wk in w {
            for k in 0..3 {
                let mag: f64 = (0..4)
                    .map(|m| (wk[m] as f64 * sim.pos[seg.cp[m] as usize][k] as f64).abs())
                    .sum();
                w_max = w_max.max(mag);
            }
        }
    }
    let dx = 16.0 * EPS * w_max + 4.0 * U * r;
    let band_s = 7.0 * r * dx + 3.0 * dx * dx + 8.0 * U * four_r2;
    let df = |s: f64| -four_r2 / (s * s) + 1.0 / four_r2;
    let n = sim.pos.len();
    // Per control point: Σ of the term bounds, Σ|terms|, the number of terms (running-sum
    // steps), and the whole terms of pairs that may be on one path only.
    let (mut err, mut terms, mut steps, mut whole) = (
        vec![0.0f64; n],
        vec![0.0f64; n],
        vec![0u32; n],
        vec![0.0f64; n],
    );
    let nc = ex.counters().candidate_pairs.count as usize;
    let mut border = vec![0u32; nc];
    let mut extra = 0u32;
    let mut worst_rel = 0.0f64;
    let seg_c = ex.segment_contact();
    let segs = &sim.topo.segments;
    let pairs = ex.candidates()[..nc]
        .iter()
        .map(|p| (p, false))
        .chain(flipped.iter().map(|p| (p, true)));
    for (ci, (&[sa, sb], only_one)) in pairs.enumerate() {
        let kw = kp.k_contact as f64
            * seg_c[sa as usize].weight as f64
            * seg_c[sb as usize].weight as f64;
        let add = |to: &mut [f64], g: f64, ka: u32, kb: u32| {
            for m in 0..4 {
                to[segs[sa as usize].cp[m] as usize] += g * (w[ka as usize][m] as f64).abs();
                to[segs[sb as usize].cp[m] as usize] += g * (w[kb as usize][m] as f64).abs();
            }
        };
        for ka in 0..b {
            for kb in 0..b {
                let (i, j) = ((sa * b + ka) as usize, (sb * b + kb) as usize);
                let (yi, yj) = (q[i], q[j]);
                let x: Vec<f64> = (0..3).map(|k| yi[k] as f64 - yj[k] as f64).collect();
                let s: f64 = x.iter().map(|v| v * v).sum();
                if s >= four_r2 + band_s || ex.exclusion().excluded(sa, ka, sb, kb) {
                    continue;
                }
                if only_one || s > four_r2 - band_s {
                    // Present on one path only, possibly: its whole term, |f'| at the band's
                    // worse end (f' rises with s; near 0 its magnitude is largest).
                    let lo = (s - band_s).max(f64::MIN_POSITIVE);
                    let dfm = df(lo).abs().max(df(s + band_s).abs());
                    add(&mut whole, 2.0 * kw * dfm * (s + band_s).sqrt(), ka, kb);
                    if only_one {
                        extra += 1;
                        continue;
                    }
                    border[ci] += 1;
                }
                if s >= four_r2 {
                    continue;
                }
                // The term `x · 2κw f'(s)` (module doc): x moves by dxk per coordinate (the
                // GPU's measured quadrature point differences and the subtraction's rounding), s
                // by ds, f' by dfs.
                let gd = |y: usize, k: usize| (gpu_qpts[y][k] as f64 - q[y][k] as f64).abs();
                let dxk: Vec<f64> = (0..3)
                    .map(|k| (gd(i, k) + gd(j, k)) * (1.0 + U) + 2.0 * U * x[k].abs())
                    .collect();
                let dxn = dxk.iter().map(|v| v * v).sum::<f64>().sqrt();
                let dx_max = dxk.iter().copied().fold(0.0, f64::max);
                let ds = 2.0 * s.sqrt() * dxn + dxn * dxn + 10.0 * U * s;
                let sl = s - ds;
                let dfs = four_r2 * (1.0 / (sl * sl) - 1.0 / (s * s))
                    + four_r2 / (sl * sl) * 16.0 * U
                    + 6.0 * U / four_r2
                    + 2.0 * U * df(s).abs();
                let g = 2.0 * kw * df(s).abs() * s.sqrt();
                let e = 2.0 * kw * (dfs * s.sqrt() + df(s).abs() * dx_max) + 6.0 * U * g;
                worst_rel = worst_rel.max(e / g);
                add(&mut err, e, ka, kb);
                add(&mut terms, g, ka, kb);
                for m in 0..4 {
                    steps[segs[sa as usize].cp[m] as usize] += 1;
                    steps[segs[sb as usize].cp[m] as usize] += 1;
                }
            }
        }
    }
    eprintln!(
        "force bound: W = {w_max:.3} cm, Δx = {dx:.2e} cm, worst term bound {worst_rel:.2e} of the \
         term; touching band |s − 4r²| ≤ {band_s:.2e} cm² ({} borderline quadrature pairs)",
        border.iter().sum::<u32>()
    );
    let force = (0..n)
        .map(|p| {
            let f0 = c.force_in[p][..3]
                .iter()
                .map(|v| v.abs() as f64)
                .fold(0.0, f64::max);
            // Each of the n + 1 running-sum steps (into the slots, then the gather onto the
            // step's force) rounds on each path, by at most U · (Σ|terms| + |f0|).
            err[p] + 2.0 * (steps[p] + 1) as f64 * U * (terms[p] + f0) + whole[p]
        })
        .collect();
    Bounds {
        force,
        border,
        extra,
        band_s,
    }
}

/// The tolerance `tol = 128 U (Q + pad)` on a padded box coordinate (module doc).
fn box_tol(sim: &Sim, kp: &Params) -> f64 {
    let q = sim
        .pos
        .iter()
        .flat_map(|p| p[..3].iter().map(|v| v.abs() as f64))
        .fold(0.0, f64::max);
    let pad = (kp.radius * grid::PAD_FACTOR) as f64;
    128.0 * U * (q + pad)
}

/// Compares the segment boxes (module doc): the padded bounds within `tol`, the w components and
/// the cell counts exactly, the cells exactly except by one at a borderline bound. Returns the
/// boxes with a borderline bound and those whose cells differ.
fn compare_boxes(ex: &ExactContact, g: &GpuOut, tol: f64, name: &str) -> (usize, usize) {
    let kp = ex.kernel_params();
    let o = [kp.grid_origin_x, kp.grid_origin_y, kp.grid_origin_z];
    let inv = kp.grid_inv_cell as f64;
    let n = kp.num_segments as usize;
    let (mut border, mut moved, mut worst, mut exact) = (0usize, 0usize, 0.0f64, 0usize);
    let cpu_boxes = &ex.segment_grid_boxes()[..n];
    for (s, (gb, cb)) in g.seg_box[..n].iter().zip(cpu_boxes).enumerate() {
        assert_eq!(
            [gb.lo[3].to_bits(), gb.hi[3].to_bits(), gb.cell_hi[3] as u32],
            [cb.lo[3].to_bits(), cb.hi[3].to_bits(), cb.cell_hi[3] as u32],
            "{name}: box {s}: w components"
        );
        let mut near_any = false;
        for (k, &ok) in o.iter().enumerate() {
            let bounds = [
                (gb.lo[k], cb.lo[k], gb.cell_lo[k], cb.cell_lo[k]),
                (gb.hi[k], cb.hi[k], gb.cell_hi[k], cb.cell_hi[k]),
            ];
            for (gf, cf, gc, cc) in bounds {
                let d = (gf as f64 - cf as f64).abs();
                assert!(
                    d <= tol,
                    "{name}: box {s} axis {k}: gpu {gf} cpu {cf} (difference {d:e} > {tol:e})"
                );
                worst = worst.max(d);
                exact += (gf.to_bits() == cf.to_bits()) as usize;
                // The bound's distance from the nearest cell boundary, in cells.
                let v = (cf as f64 - ok as f64) * inv;
                let dist = (v - v.round()).abs();
                let near = dist <= 2.0 * tol * inv;
                near_any |= near;
                assert!(
                    (gc - cc).abs() <= near as i32,
                    "{name}: box {s} axis {k}: cell {gc} vs {cc} (bound {cf} lies {dist:e} cells \
                     from a boundary)"
                );
            }
        }
        let cells =
            |b: &SegmentBox| -> i32 { (0..3).map(|k| b.cell_hi[k] - b.cell_lo[k] + 1).product() };
        assert_eq!(gb.cell_lo[3], cells(gb), "{name}: box {s}: GPU cell count");
        border += near_any as usize;
        moved += (gb.cell_lo != cb.cell_lo || gb.cell_hi != cb.cell_hi) as usize;
    }
    eprintln!(
        "{name}: box bounds within tol = {tol:.3e} cm: bitwise equal {exact}/{}, worst {worst:.3e} \
         cm; {border}/{n} boxes with a bound within 2·tol of a cell boundary, {moved} with other \
         cells",
        6 * n
    );
    assert!(
        border * 100 <= n,
        "{name}: {border} of {n} boxes borderline: the tolerance is too coarse for the grid"
    );
    (border, moved)
}

/// The smallest overlap margin `min_k min(hi_b − lo_a, hi_a − lo_b)` of two padded boxes (≥ 0:
/// they overlap).
fn overlap_margin(boxes: &[SegmentBox], [a, b]: [u32; 2]) -> f64 {
    let (ba, bb) = (&boxes[a as usize], &boxes[b as usize]);
    (0..3)
        .map(|k| (bb.hi[k] as f64 - ba.lo[k] as f64).min(ba.hi[k] as f64 - bb.lo[k] as f64))
        .fold(f64::INFINITY, f64::min)
}

/// Compares every output (see the module doc), printing the measured differences. Returns false
/// when the GPU run flagged an overflow that its borderline decisions explain (checked here); the
/// outputs after it are then not compared.
fn compare(sim: &Sim, c: &Cpu, g: &GpuOut, name: &str) -> bool {
    let ex = &c.exact;
    let kp = ex.kernel_params();
    let cc = ex.counters();
    let gc = &g.counters;
    let n = kp.num_segments as usize;
    let (ne, nc) = (
        cc.grid_entries.count as usize,
        cc.candidate_pairs.count as usize,
    );
    assert_eq!(gc.errors, 0, "{name}: GPU errors");
    assert_eq!(gc.first_bad_point, u32::MAX);
    // Segment boxes.
    let tol = box_tol(sim, kp);
    let (_, moved) = compare_boxes(ex, g, tol, name);
    // Grid entries: exact when the cells agree, else what the twins make of the GPU's own boxes.
    let cap_e = gc.grid_entries.capacity;
    if moved == 0 {
        assert_eq!(
            gc.grid_entries.count, cc.grid_entries.count,
            "{name}: entries"
        );
        assert_eq!(gc.grid_entries.overflow, 0);
        assert_eq!(g.grid_offsets, ex.grid_offsets(), "{name}: grid offsets");
        // (The slots past the live entries are not compared: the sort into `grid_entries`
        // leaves them as they were, and the stages after it stop at the count.)
        assert_eq!(
            &g.entries[..ne],
            &ex.grid_entries()[..ne],
            "{name}: sorted grid entries"
        );
    } else {
        let mut scan = Vec::with_capacity(n + 1);
        let mut total = 0u32;
        for b in &g.seg_box[..n] {
            scan.push(total);
            total += b.cell_lo[3] as u32;
        }
        scan.push(total);
        assert_eq!(
            g.grid_offsets, scan,
            "{name}: grid offsets of the GPU's cells"
        );
        assert_eq!(gc.grid_entries.count, total, "{name}: entries");
        assert_eq!(gc.grid_entries.overflow, (total > cap_e) as u32);
        eprintln!(
            "{name}: {moved} boxes with other cells: {total} entries (CPU {ne}); entries checked \
             against the twins on the GPU's boxes"
        );
        if total > cap_e {
            eprintln!("{name}: entry capacity {cap_e} overflowed as it must; not compared further");
            return false;
        }
        let mut counters = Counters::default();
        counters.grid_entries.capacity = cap_e;
        let mut want = vec![KeyValue::default(); cap_e as usize];
        grid::grid_write(kp, &g.seg_box, &g.grid_offsets, &mut want, &mut counters);
        // Stably by the sorted key bits (the low word; the sentinels after the live entries).
        want.sort_by_key(|e| e.key_lo & ((1u32 << grid::GRID_KEY_BITS) - 1));
        let t = total as usize;
        assert_eq!(
            g.entries[..t],
            want[..t],
            "{name}: sorted grid entries of the GPU's own cell boxes"
        );
    }
    // Candidates: exact, else a symmetric difference of overlap-borderline pairs only.
    let gn = gc.candidate_pairs.count as usize;
    let cap_c = gc.candidate_pairs.capacity as usize;
    assert_eq!(gc.candidate_pairs.overflow, (gn > cap_c) as u32);
    let same = gn == nc && g.candidates[..nc] == ex.candidates()[..nc];
    let mut flipped = Vec::new();
    if !same {
        if gn > cap_c {
            eprintln!(
                "{name}: {gn} candidates (CPU {nc}) overflowed capacity {cap_c} as they must; \
                 not compared further"
            );
            return false;
        }
        let gset: BTreeSet<[u32; 2]> = g.candidates[..gn].iter().copied().collect();
        let cset: BTreeSet<[u32; 2]> = ex.candidates()[..nc].iter().copied().collect();
        assert_eq!(gset.len(), gn, "{name}: a candidate pair found twice");
        assert!(
            moved > 0 || gset != cset,
            "{name}: the same cells gave the same candidates in another order"
        );
        flipped = gset
            .symmetric_difference(&cset)
            .copied()
            .collect::<Vec<_>>();
        for &p in &flipped {
            let m = overlap_margin(ex.segment_grid_boxes(), p);
            assert!(
                m.abs() <= 2.0 * tol,
                "{name}: candidate {p:?} found by one path only, overlap margin {m:e} cm"
            );
        }
        eprintln!(
            "{name}: candidates: {gn} on the GPU, {nc} on the CPU, {} overlap-borderline pairs \
             found by one path only",
            flipped.len()
        );
    }
    // Touching pairs and records.
    let bounds = force_bounds(sim, c, &g.qpts, &flipped);
    let touching = |offs: &[u32], recs: &[ContactRecord], c: usize| {
        if offs[c + 1] > offs[c] {
            recs[c].touching
        } else {
            0
        }
    };
    let tr = gc.touching_records;
    assert_eq!(tr.overflow, (tr.count > tr.capacity) as u32);
    assert_eq!(
        g.touch_offsets[gn], tr.count,
        "{name}: touching records = scanned flags"
    );
    let sum_g: u32 = (0..gn)
        .map(|c| touching(&g.touch_offsets, &g.records, c))
        .sum();
    assert_eq!(
        gc.touching_pairs.count, sum_g,
        "{name}: touching pairs = Σ records"
    );
    let nt = cc.touching_records.count as usize;
    let mut differ = 0usize;
    if same {
        for c in 0..nc {
            let gt = touching(&g.touch_offsets, &g.records, c);
            let ct = touching(ex.touch_offsets(), ex.records(), c);
            assert!(
                gt.abs_diff(ct) <= bounds.border[c],
                "{name}: record {c} touching count {gt} vs {ct} ({} borderline pairs)",
                bounds.border[c]
            );
            differ += (gt != ct) as usize;
        }
    }
    if same && differ == 0 {
        assert_eq!(
            gc.touching_pairs.count, cc.touching_pairs.count,
            "{name}: touching pairs"
        );
        assert_eq!(
            tr.count, cc.touching_records.count,
            "{name}: touching records"
        );
        assert_eq!(tr.overflow, 0);
        assert_eq!(
            &g.touch_offsets[..=nc],
            &ex.touch_offsets()[..=nc],
            "{name}: touch offsets"
        );
        assert!(g.touch_offsets[nc..].iter().all(|&t| t == nt as u32));
        for c in 0..nc {
            if ex.touch_offsets()[c + 1] > ex.touch_offsets()[c] {
                assert_eq!(g.records[c]._pad, [0, 0]);
            }
        }
        // The sort ran over the slots in use (a counted sort, in the fewest passes): they are
        // the CPU's sorted table; the slots past them are nobody's (contact_gather stops at the
        // count).
        assert_eq!(gc.gather_slots, 8 * tr.count, "{name}: gather slots");
        assert_eq!(gc.gather_slots, cc.gather_slots, "{name}: gather slots");
        let used = gc.gather_slots as usize;
        assert_eq!(
            &g.slots[..used],
            &ex.slots()[..used],
            "{name}: sorted point → slot table"
        );
        assert!(
            g.slots[..used]
                .iter()
                .all(|k| k.key_lo < sim.pos.len() as u32),
            "{name}: a slot in use names no control point"
        );
    } else {
        // Totals only: each borderline pair may flip a record, and the candidates found by one
        // path only bring their possibly touching pairs.
        let border: u32 = bounds.border.iter().sum();
        let border_c = bounds.border.iter().filter(|&&b| b > 0).count();
        let dp = gc.touching_pairs.count.abs_diff(cc.touching_pairs.count);
        let dr = tr.count.abs_diff(cc.touching_records.count) as usize;
        assert!(
            dp <= border + bounds.extra,
            "{name}: touching pairs {} vs {} (bound {border} + {})",
            gc.touching_pairs.count,
            cc.touching_pairs.count,
            bounds.extra
        );
        assert!(
            dr <= border_c + flipped.len(),
            "{name}: touching records {} vs {nt}",
            tr.count
        );
        eprintln!(
            "{name}: {differ} records with another touching count, {dp} touching pairs and {dr} \
             records apart (band {:.2e} cm²); touch offsets and slots not compared",
            bounds.band_s
        );
        if tr.count > tr.capacity {
            eprintln!("{name}: record capacity overflowed as it must; not compared further");
            return false;
        }
    }
    // Quadrature points: 8ε Σ|w q|.
    let b = kp.quadrature as usize;
    let (mut worst_q, mut exact_q) = (0.0f64, 0usize);
    for (i, (gq, cq)) in g.qpts.iter().zip(ex.quadrature_positions()).enumerate() {
        let seg = &sim.topo.segments[i / b];
        let w = ex.quad_weights()[i % b];
        for k in 0..3 {
            let mag: f64 = (0..4)
                .map(|m| (w[m] as f64 * sim.pos[seg.cp[m] as usize][k] as f64).abs())
                .sum();
            let d = (gq[k] as f64 - cq[k] as f64).abs();
            assert!(
                d <= 8.0 * EPS * mag,
                "{name}: qpt {i}[{k}]: {} vs {}",
                gq[k],
                cq[k]
            );
            worst_q = worst_q.max(d / (EPS * mag).max(f64::MIN_POSITIVE));
            exact_q += (d == 0.0) as usize;
        }
    }
    // Forces.
    let (mut worst, mut exact_f, mut moved_f) = (0.0f64, 0usize, 0usize);
    for (p, ((gf, cf), bound)) in g.force.iter().zip(&c.force).zip(&bounds.force).enumerate() {
        for k in 0..3 {
            let d = (gf[k] as f64 - cf[k] as f64).abs();
            assert!(
                d <= *bound,
                "{name}: force of point {p}[{k}]: gpu {} cpu {} (difference {d:e} > bound {bound:e})",
                gf[k],
                cf[k]
            );
            if *bound > 0.0 {
                worst = worst.max(d / bound);
            }
            exact_f += (d == 0.0) as usize;
        }
        moved_f += (cf[..3] != c.force_in[p][..3]) as usize;
    }
    eprintln!(
        "{name}: {ne} entries, {nc} candidates, {} touching pairs, {moved_f} points with contact \
         force; qpts bitwise equal {exact_q}/{} (worst {worst_q:.2} ε·Σ|wq|); forces bitwise equal \
         {exact_f}/{} (worst {worst:.3e} of the bound)",
        cc.touching_pairs.count,
        3 * g.qpts.len(),
        3 * g.force.len()
    );
    assert!(
        cc.touching_pairs.count > 100,
        "{name}: the state is in contact"
    );
    assert!(moved_f > 20, "{name}: contact forces reached the points");
    true
}

fn parity(name: &str, scene: &str, steps: usize) {
    let Some(gpu) = gpu_or_skip(name) else {
        return;
    };
    let sim = scene_sim(scene, &["contact.model=exact"], steps);
    let c = cpu(&sim);
    let cc = *c.exact.counters();
    let (ne, nc, nt) = (
        cc.grid_entries.count,
        cc.candidate_pairs.count,
        cc.touching_records.count,
    );
    // Capacities exactly the counts, as on the CPU path.
    let g = run_gpu(&gpu, &sim, &c, [ne, nc, nt]);
    let complete = compare(&sim, &c, &g, &format!("{scene}, exact capacities"));
    // Spare capacity: sentinel entries and empty candidate slots change nothing, bitwise. This run
    // must complete (its spare room covers any borderline extra entries, candidates and records).
    let g2 = run_gpu(&gpu, &sim, &c, [ne + 300, nc + 77, nt + 5]);
    assert!(
        compare(&sim, &c, &g2, &format!("{scene}, spare capacities")),
        "{scene}: the spare capacities overflowed"
    );
    // Same device, same pipelines, same inputs: the forces are bitwise equal whatever the GPU
    // fuses (unless the exact-capacity run overflowed on borderline extras).
    if complete {
        assert_eq!(
            g.force, g2.force,
            "{scene}: spare capacity changed the forces"
        );
    }
    // And the GPU path repeats itself bitwise.
    let g3 = run_gpu(&gpu, &sim, &c, [ne + 300, nc + 77, nt + 5]);
    assert_eq!(
        bytemuck::cast_slice::<_, u8>(&g2.force),
        bytemuck::cast_slice::<_, u8>(&g3.force),
        "{scene}: second GPU run differs"
    );
}

#[test]
fn exact_path_gpu_matches_twins_tiny() {
    parity("exact_path_gpu_matches_twins_tiny", "tiny", 200);
}

#[test]
fn exact_path_gpu_matches_twins_swatch() {
    parity("exact_path_gpu_matches_twins_swatch", "swatch", 30);
}

/// Too small a capacity is never a silent loss: the overflow flag is set and the count says what
/// was needed (grid entries; candidate pairs with enough entries; touching records with enough
/// candidates).
#[test]
fn overflow_sets_flag_and_needed_count() {
    let Some(gpu) = gpu_or_skip("overflow_sets_flag_and_needed_count") else {
        return;
    };
    let sim = scene_sim("tiny", &["contact.model=exact"], 200);
    let c = cpu(&sim);
    let cc = *c.exact.counters();
    let (ne, nc, nt) = (
        cc.grid_entries.count,
        cc.candidate_pairs.count,
        cc.touching_records.count,
    );
    let g = run_gpu(&gpu, &sim, &c, [ne / 2, nc, nt]);
    assert_eq!(g.counters.grid_entries.overflow, 1);
    assert_eq!(g.counters.grid_entries.count, ne);
    assert_eq!(g.counters.grid_entries.capacity, ne / 2);
    let g = run_gpu(&gpu, &sim, &c, [ne, nc / 3, nt]);
    assert_eq!(g.counters.grid_entries.overflow, 0);
    assert_eq!(g.counters.candidate_pairs.overflow, 1);
    assert_eq!(g.counters.candidate_pairs.count, nc);
    assert_eq!(
        &g.candidates[..],
        &c.exact.candidates()[..(nc / 3) as usize]
    );
    let g = run_gpu(&gpu, &sim, &c, [ne, nc, nt / 2]);
    assert_eq!(g.counters.candidate_pairs.overflow, 0);
    assert_eq!(g.counters.touching_records.overflow, 1);
    assert_eq!(g.counters.touching_records.count, nt);
    assert_eq!(g.counters.errors, 0);
}

/// The twins flag an overflow the same way (CPU only).
#[test]
fn twin_overflow_sets_flag_and_needed_count() {
    let sim = scene_sim("tiny", &["contact.model=exact"], 0);
    let c = cpu(&sim);
    let ex = &c.exact;
    let kp = *ex.kernel_params();
    let total = ex.counters().grid_entries.count;
    let run = |cap: u32| {
        let mut counters = Counters::default();
        counters.grid_entries.capacity = cap;
        let mut entries = vec![KeyValue::default(); cap as usize];
        grid::grid_write(
            &kp,
            ex.segment_grid_boxes(),
            ex.grid_offsets(),
            &mut entries,
            &mut counters,
        );
        (counters, entries)
    };
    let (full_c, full) = run(total);
    assert_eq!(full_c.grid_entries.overflow, 0);
    let (half_c, half) = run(total / 2);
    assert_eq!(half_c.grid_entries.overflow, 1);
    assert_eq!(half_c.grid_entries.count, total);
    // The slots that fit hold the first entries (segment order), the rest were dropped.
    assert_eq!(&half[..], &full[..(total / 2) as usize]);
}

/// `exact_gpu::binding_bytes` is what a build makes: each size's entry is the largest buffer it
/// sizes, every buffer the path adds is sized by one of them, and `first_capacities` is what
/// `GpuSim` builds with (the counts of the CPU's detection, a quarter more).
#[test]
fn binding_table_is_the_built_buffers() {
    let Some(gpu) = gpu_or_skip("binding_table_is_the_built_buffers") else {
        return;
    };
    let sim = scene_sim("tiny", &["contact.model=exact"], 0);
    let c = cpu(&sim);
    // All different, and larger than the buffers' least size.
    let caps = [1_000, 1_097, 1_194];
    let (_, bufs, _, kp) = build_path(&gpu, &sim, &c, caps);
    let before = ["params", "counters", "segments", "pos", "force"];
    // The tables the host computed (per topology; none larger than the segments' boxes).
    let tables = ["quad_weights", "quad_arc", "seg_contact"];
    let rows: &[(&str, &[&str])] = &[
        (
            "exact.segments",
            &["seg_box", "grid_offsets", "seg_contact"],
        ),
        ("exact.quadrature", &["qpts", "quad_arc", "quad_weights"]),
        (
            "exact.entries",
            &["grid_entries_in", "grid_entries", "cand_offsets"],
        ),
        (
            "exact.candidates",
            &["candidates", "contact_records", "touch_offsets"],
        ),
        ("exact.records", &["gather_slots_in", "gather_slots"]),
    ];
    let ns = kp.num_segments;
    let table = exact_gpu::binding_bytes(ns, ns * kp.quadrature, (caps[0], caps[1], caps[2]));
    assert_eq!(table.len(), rows.len());
    fixture::assert_largest_buffers(&table, rows, |n| bufs.get(n));
    for name in bufs.names() {
        assert!(
            before.contains(&name)
                || tables.contains(&name)
                || rows.iter().any(|(_, ns)| ns.contains(&name)),
            "buffer {name} is in no row of the table"
        );
    }
    // The limit check names the first size past it, and nothing at the largest entry.
    let largest = table.iter().map(|(_, b)| *b).max().unwrap();
    let sized = (caps[0], caps[1], caps[2]);
    assert_eq!(
        exact_gpu::over_binding(largest, ns, ns * kp.quadrature, sized),
        None
    );
    assert_eq!(
        exact_gpu::over_binding(largest - 1, ns, ns * kp.quadrature, sized),
        table.iter().find(|(_, b)| *b == largest).copied()
    );
    // The first capacities: the detection's counts and a quarter more.
    let n = c.exact.counters();
    let (e, k) = (n.grid_entries.count, n.candidate_pairs.count);
    assert_eq!(
        exact_gpu::first_capacities(n),
        (e + e / 4, k + k / 4, k + k / 4)
    );
}
