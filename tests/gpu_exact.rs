//! The exact contact path on the GPU (`contact::exact_gpu`: `aabb_raster`, `grid_write`,
//! `candidate_count`, `candidate_write`, `quadrature_points`, `exact_contact_forces`,
//! `contact_slots`, `contact_gather`, with the scans and sorts between them) against its CPU twins
//! (`ExactContact`, which is what the CPU exact path runs), on real scene states: scenes/tiny.toml
//! and scenes/swatch.toml with `contact.model = exact`, stepped on the CPU.
//!
//! **Discrete outputs are compared exactly**: the counters (counts, capacities, overflow flags,
//! errors, touching pairs), the cell boxes and cell counts, the scanned offsets, the sorted grid
//! entries, the candidate pairs in order, every record's touching count, and the sorted point →
//! slot table. Both paths make these decisions on the same f32 operations in the same order, and
//! the same-yarn exclusion only subtracts and compares stored f32 arc positions.
//!
//! **Floats get a derived bound** that allows for a GPU that fuses a multiply and an add (one
//! rounding instead of two; Vulkan permits it, lavapipe does not do it, so there the measured
//! difference is 0 — the test prints it):
//! - quadrature points `y = Σ w_m q_m`: each of the 3 additions and 4 products may round once more
//!   or less: |Δy| ≤ 8ε Σ|w_m q_m|, ε = 2⁻²³;
//! - forces: a touching pair's term `g w` with `g = 2κw f'(s) x` depends on `x = y_i − y_j`, which
//!   inherits |Δx| ≤ 2·8ε·Y (Y the largest |coordinate| of a quadrature point), a relative change
//!   of 16εY/|x|; `f'(s) ≈ −4r²/s²` turns it into at most three times that in `g` (x/s²), plus
//!   about 16ε for the term's own dozen operations; each control point's force then differs by at
//!   most that relative bound times Σ|terms| over its slots (computed here in f64 from the
//!   quadrature points) plus 8ε per running-sum step of the gather. Pairs with the smallest |x|
//!   set the bound: κ = 48εY/x_min + 16ε.

#[path = "support/fixture.rs"]
mod fixture;

use fixture::{bytes, scene_sim};
use yarnsim::contact::exact_gpu::{self, ExactGpu, ExactTables};
use yarnsim::contact::{grid, ExactContact};
use yarnsim::gpu::testing::gpu_or_skip;
use yarnsim::gpu::Gpu;
use yarnsim::layout::{ContactRecord, Counters, KeyValue, SegmentBox};
use yarnsim::pipelines::{Buffers, Pipelines};
use yarnsim::scene::{ContactModel, ContactParams};
use yarnsim::sim::{ContactForce, ContactStats, Sim};

const EPS: f64 = 1.0 / (1u64 << 23) as f64;

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

fn run_gpu(gpu: &Gpu, sim: &Sim, c: &Cpu, caps: [u32; 3]) -> GpuOut {
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
        counters: bytemuck::pod_read_unaligned(&read("counters", 80)),
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

/// The bound of the module doc for every control point's force, from the CPU's quadrature points
/// and candidates: κ · Σ|terms| + 8ε · (running sums).
fn force_bounds(sim: &Sim, c: &Cpu) -> Vec<f64> {
    let ex = &c.exact;
    let kp = ex.kernel_params();
    let b = kp.quadrature;
    let q = ex.quadrature_positions();
    let w = ex.quad_weights();
    let r = kp.radius as f64;
    let four_r2 = 4.0 * r * r;
    let y_max = q
        .iter()
        .flat_map(|p| p[..3].iter().map(|v| v.abs() as f64))
        .fold(0.0, f64::max);
    let mut x_min = f64::INFINITY;
    let mut terms = vec![0.0f64; sim.pos.len()];
    let seg_c = ex.segment_contact();
    for &[sa, sb] in ex.candidates() {
        let kw = kp.k_contact as f64
            * seg_c[sa as usize].weight as f64
            * seg_c[sb as usize].weight as f64;
        for ka in 0..b {
            for kb in 0..b {
                let (yi, yj) = (q[(sa * b + ka) as usize], q[(sb * b + kb) as usize]);
                let x: Vec<f64> = (0..3).map(|k| yi[k] as f64 - yj[k] as f64).collect();
                let s: f64 = x.iter().map(|v| v * v).sum();
                if s >= four_r2 || ex.exclusion().excluded(sa, ka, sb, kb) {
                    continue;
                }
                x_min = x_min.min(s.sqrt());
                let df = -four_r2 / (s * s) + 1.0 / four_r2;
                let g = 2.0 * kw * df.abs() * s.sqrt();
                let segs = &sim.topo.segments;
                for m in 0..4 {
                    terms[segs[sa as usize].cp[m] as usize] += g * (w[ka as usize][m] as f64).abs();
                    terms[segs[sb as usize].cp[m] as usize] += g * (w[kb as usize][m] as f64).abs();
                }
            }
        }
    }
    let kappa = 48.0 * EPS * y_max / x_min + 16.0 * EPS;
    eprintln!("force bound: Y = {y_max:.3} cm, x_min = {x_min:.4} cm, κ = {kappa:.3e}");
    terms
        .iter()
        .zip(&c.force_in)
        .map(|(t, f0)| {
            let f0 = f0[..3].iter().map(|v| v.abs() as f64).fold(0.0, f64::max);
            kappa * t + 8.0 * EPS * (t + f0)
        })
        .collect()
}

/// Compares every output (see the module doc); returns the worst force difference relative to its
/// bound and the worst quadrature-point difference.
fn compare(sim: &Sim, c: &Cpu, g: &GpuOut, name: &str) {
    let ex = &c.exact;
    let cc = ex.counters();
    let (ne, nc) = (
        cc.grid_entries.count as usize,
        cc.candidate_pairs.count as usize,
    );
    // Discrete outputs, exactly.
    assert_eq!(g.counters.errors, 0, "{name}: GPU errors");
    assert_eq!(g.counters.first_bad_point, u32::MAX);
    assert_eq!(
        g.counters.grid_entries.count, cc.grid_entries.count,
        "{name}: entries"
    );
    assert_eq!(g.counters.grid_entries.overflow, 0);
    assert_eq!(
        g.counters.candidate_pairs.count, cc.candidate_pairs.count,
        "{name}: candidates"
    );
    assert_eq!(g.counters.candidate_pairs.overflow, 0);
    assert_eq!(
        g.counters.touching_pairs.count, cc.touching_pairs.count,
        "{name}: touching pairs"
    );
    assert_eq!(
        bytemuck::cast_slice::<_, u8>(&g.seg_box),
        bytemuck::cast_slice::<_, u8>(ex.segment_grid_boxes()),
        "{name}: segment boxes (bitwise: padded AABBs and cell boxes)"
    );
    assert_eq!(g.grid_offsets, ex.grid_offsets(), "{name}: grid offsets");
    assert_eq!(
        &g.entries[..ne],
        &ex.grid_entries()[..ne],
        "{name}: sorted grid entries"
    );
    assert!(
        g.entries[ne..].iter().all(|e| *e == grid::SENTINEL_ENTRY),
        "{name}: unused entry slots hold the sentinel"
    );
    assert_eq!(
        &g.candidates[..nc],
        &ex.candidates()[..nc],
        "{name}: candidate pairs"
    );
    let nt = cc.touching_records.count as usize;
    assert_eq!(
        g.counters.touching_records.count, cc.touching_records.count,
        "{name}: touching records"
    );
    assert_eq!(g.counters.touching_records.overflow, 0);
    assert_eq!(
        &g.touch_offsets[..=nc],
        &ex.touch_offsets()[..=nc],
        "{name}: touch offsets"
    );
    assert!(g.touch_offsets[nc..].iter().all(|&t| t == nt as u32));
    for c in 0..nc {
        if ex.touch_offsets()[c + 1] > ex.touch_offsets()[c] {
            assert_eq!(
                g.records[c].touching,
                ex.records()[c].touching,
                "{name}: record {c} touching count"
            );
            assert_eq!(g.records[c]._pad, [0, 0]);
        }
    }
    let live = |s: &[KeyValue]| -> Vec<KeyValue> {
        s.iter()
            .filter(|k| k.key_lo < sim.pos.len() as u32)
            .copied()
            .collect()
    };
    assert_eq!(
        live(&g.slots),
        live(ex.slots()),
        "{name}: sorted point → slot table"
    );
    // Quadrature points: 8ε Σ|w q|.
    let b = ex.kernel_params().quadrature as usize;
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
    let bounds = force_bounds(sim, c);
    let (mut worst, mut exact_f, mut moved) = (0.0f64, 0usize, 0usize);
    for (p, ((gf, cf), bound)) in g.force.iter().zip(&c.force).zip(&bounds).enumerate() {
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
        moved += (cf[..3] != c.force_in[p][..3]) as usize;
    }
    eprintln!(
        "{name}: {ne} entries, {nc} candidates, {} touching pairs, {moved} points with contact force; \
         qpts bitwise equal {exact_q}/{} (worst {worst_q:.2} ε·Σ|wq|); forces bitwise equal \
         {exact_f}/{} (worst {worst:.3e} of the bound)",
        cc.touching_pairs.count,
        3 * g.qpts.len(),
        3 * g.force.len()
    );
    assert!(
        cc.touching_pairs.count > 100,
        "{name}: the state is in contact"
    );
    assert!(moved > 20, "{name}: contact forces reached the points");
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
    compare(&sim, &c, &g, &format!("{scene}, exact capacities"));
    // Spare capacity: sentinel entries and empty candidate slots change nothing, bitwise.
    let g2 = run_gpu(&gpu, &sim, &c, [ne + 300, nc + 77, nt + 5]);
    compare(&sim, &c, &g2, &format!("{scene}, spare capacities"));
    assert_eq!(
        g.force, g2.force,
        "{scene}: spare capacity changed the forces"
    );
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
