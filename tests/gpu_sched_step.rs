//! The scheduler's whole step on the GPU (`sched::SchedGpu`) against the CPU scheduler, step by
//! step: the default swatch swings down under ACL on the CPU (from its 600th step, once it moves);
//! an `AclContact` runs alongside on the same
//! positions, and at every step its scheduler's inputs (positions, the packed lookup of the live
//! sets, the boxes released since the last step) go to `SchedGpu` too. After every step the entry
//! table's keys, flags and touching counts, the touching pairs (after a canonical sort) and the
//! counts must be identical; each bound `d` must agree within a tolerance derived from the
//! arithmetic (`CpuStep::tol`), and each bin too, except where the CPU's bound lies within that
//! tolerance of a bin boundary (a *borderline* entry; counted, and required to be rare).
//!
//! WGSL lets a compiler fuse `a·b + c` into one FMA (NVIDIA's do), so the GPU's floats may differ
//! from the twins' by a few ulps; on lavapipe, where CI runs, they round as the CPU's do and the
//! test requires the tables to be bit for bit identical there. Elsewhere, a step whose table is not
//! bitwise the CPU's continues from the CPU's table (written into `entries_a`): a borderline bin
//! changes when the entry is next examined, so later tables and touching pairs would legitimately
//! part from the CPU's, and the resync keeps every step's comparison to one step's rounding. The
//! rest of the GPU state (cell boxes, movement records, snapshots, position history) does not
//! depend on the table.
//!
//! Tiny capacities (every one 1) must give the identical result: each overflow is flagged, the
//! state restored, the capacity grown and the step rerun.

#[path = "support/fixture.rs"]
mod fixture;

use fixture::{bytes, scene_contact, scene_sim};
use yarnsim::acl::AclContact;
use yarnsim::contact::Exclusion;
use yarnsim::gpu::testing::gpu_or_skip;
use yarnsim::layout::{
    Interval, Params, Release, SchedEntry, SchedUniform, SegmentContact, SCHED_NO_WINDOW_CORRECTION,
};
use yarnsim::pipelines::{Buffers, Pipelines};
use yarnsim::sched::{
    bin_for, earliest_contact_steps, entry_due, find_entry, segment_windows, set_lookup_pack,
    SchedCaps, SchedGpu, SchedStats, ENTRY_BIN, FAR,
};
use yarnsim::spline::QuadratureTable;
use yarnsim::state::Segment;

const STEPS: usize = 40;
/// Steps the swatch swings down before the schedulers start (from rest it barely moves for the
/// first hundreds of steps of 1/16200 s; after these, segments enter new cells at most steps). It
/// swings under 4 g: under 1 g no cell box of its 40 steps leaves the one it kept (the boxes'
/// hysteresis, `sched::CELL_MARGIN`), and the run would not exercise the dropping of entries.
const PRE_STEPS: usize = 600;
/// The unit roundoff of f32.
const U: f32 = f32::EPSILON / 2.0;

/// Absolute tolerances of one step's floats (see `cpu_run` for their derivation): of a bound `d`,
/// and of the binning's inputs `m` (last step's relative movement) and `acc` (change of movement
/// bound plus ω).
#[derive(Clone, Copy, Debug)]
struct Tol {
    d: f32,
    m: f32,
    acc: f32,
}

/// One step of the CPU run: the scheduler's inputs and what it produced.
struct CpuStep {
    pos: Vec<[f32; 4]>,
    lookup: Vec<u32>,
    released: Vec<Release>,
    entries: Vec<SchedEntry>,
    touching: Vec<[u32; 2]>,
    stats: SchedStats,
    /// Per entry, the CPU's inputs to its binning: the bound before the conversion to the bin's
    /// window start, `m` and `acc` (the arguments of `earliest_contact_steps`).
    bin_inputs: Vec<[f32; 3]>,
    tol: Tol,
}

struct CpuRun {
    steps: Vec<CpuStep>,
    template: SchedUniform,
    segments: Vec<Segment>,
    quad_weights: Vec<[f32; 4]>,
    quad_arc: Vec<f32>,
    seg_contact: Vec<SegmentContact>,
}

fn cpu_run() -> CpuRun {
    let sets = ["contact.model=acl", "simulation.gravity=[0, -3924, 0]"];
    let mut sim = scene_sim("swatch", &sets, PRE_STEPS);
    let params = scene_contact("swatch", &sets);
    let r = sim.step_params().radius;
    let mut acl = AclContact::new(r, &params).unwrap();
    let mut force = vec![[0.0f32; 4]; sim.pos.len()];
    let nseg = sim.topo.segments.len() as u32;
    let b = params.quadrature;
    let mut steps = Vec::new();
    let nsegs = nseg as usize;
    let (mut checked_bins, mut near_boundary) = (0, 0);
    for n in 0..STEPS {
        sim.step().unwrap();
        let mut lookup = Vec::new();
        let boxes: Vec<[u32; 4]> = acl.boxes().collect();
        set_lookup_pack(boxes.iter().copied(), b, nseg, &mut lookup);
        let released = acl.released().to_vec();
        acl.step(&sim.topo, &sim.pos, &mut force).unwrap();
        let s = acl.scheduler();
        let mut touching = s.touching().to_vec();
        touching.sort_unstable();
        // The binning's inputs, as `schedule_process` has them: an entry binned above the bins due
        // had its bound converted to the window start (`d − |Δx^λ|`, the movement since bin λ's
        // snapshot, which this step left in place), so that movement is added back.
        let u = s.uniform(n as u64);
        let mut windows = vec![Interval::default(); nsegs * (u.max_bin as usize + 1)];
        segment_windows(
            &u,
            &sim.topo.segments,
            &sim.pos,
            s.snaps(),
            s.motion(),
            &mut windows,
        );
        let motion = s.motion();
        let bin_inputs: Vec<[f32; 3]> = s
            .entries()
            .iter()
            .map(|e| {
                let (a, b, l) = (e.seg_a as usize, e.seg_b as usize, e.bin_flags & ENTRY_BIN);
                let mut d = e.d;
                if d < FAR && l > u.bins_due && u.switches & SCHED_NO_WINDOW_CORRECTION == 0 {
                    let w = |s: usize| &windows[l as usize * nsegs + s];
                    d += w(a).rel_norm(w(b));
                }
                let m = motion[a].mv1.rel_norm(&motion[b].mv1);
                let acc = motion[a].mv2_ref.rel_norm(&motion[b].mv2_ref) + u.omega;
                [d, m, acc]
            })
            .collect();
        // Tolerances. U = 2^-24; S = max |coordinate| of the positions. WGSL lets the GPU fuse any
        // a·b + c into an FMA (skipping the product's rounding), the twins round every operation;
        // both are bounded against exact arithmetic, and their difference by twice that.
        // - A bound `d` of a processed entry is min |y_a − y_b| − 2r over quadrature points
        //   y = Σ_k w_k q_k (4 terms, w_k ≥ 0, Σ w_k = 1, so Σ |w_k q_k| ≤ S): each coordinate of y
        //   is off by ≤ 4 U S, of y_a − y_b by ≤ 8 U S, its norm by ≤ √3 · 8 U S ≈ 14 U S; the
        //   sum of squares, the square root and the − 2r add O(U |y_a − y_b|) with
        //   |y_a − y_b| ≪ S (the pair shares a grid cell). The movement subtracted at examination
        //   and at the conversion to the window start comes from position differences (per-step
        //   movement ≪ S), so its rounding is far below U S; the subtraction adds ≤ U |d| ≤ U S.
        //   Every step starts from the CPU's table (see the module docs), so no error carries
        //   over: |d_gpu − d_cpu| ≤ 2 (14 + 1) U S + O(U |y_a − y_b|) ≤ 32 U S. (S ≈ 6.5 cm here,
        //   so 1.25e-5 cm; on an NVIDIA H200 the largest difference was 0.1 of it, about 3 U S;
        //   on lavapipe 0.)
        // - `m` and `acc` are norms of differences of movement intervals whose endpoints are
        //   sums of basis-weighted position differences (magnitude ≤ M1 for the last step's
        //   movement `mv1`, ≤ M2 for the change of movement `mv2_ref`; ω is a constant), so their
        //   roundings are the same few U times those scales (the differences may cancel, so the
        //   error is absolute, not relative to `m`); the same factor 32 covers them:
        //   32 U M1 and 32 U (M2 + ω).
        let absmax = |v: [f32; 4]| v[..3].iter().fold(0.0f32, |x, c| x.max(c.abs()));
        let scale = sim.pos.iter().fold(0.0f32, |x, p| x.max(absmax(*p)));
        let (m1, m2) = motion.iter().fold((0.0f32, 0.0f32), |(x, y), mo| {
            (
                x.max(absmax(mo.mv1.lo)).max(absmax(mo.mv1.hi)),
                y.max(absmax(mo.mv2_ref.lo)).max(absmax(mo.mv2_ref.hi)),
            )
        });
        let tol = Tol {
            d: 32.0 * U * scale,
            m: 32.0 * U * m1,
            acc: 32.0 * U * (m2 + u.omega),
        };
        // The reconstruction must give back the CPU's own bin for every entry examined at this
        // step (due in the last step's table, or new; entries released this step are also
        // examined but not told apart here): this checks the inputs that judge borderline bins,
        // which on lavapipe are never needed. Count the entries a rounding could move to
        // another bin.
        let prev: &[SchedEntry] = steps.last().map_or(&[], |p: &CpuStep| &p.entries);
        let any_mon = motion.iter().any(|m| m.mon != 0);
        for (e, inputs) in s.entries().iter().zip(&bin_inputs) {
            let examined = find_entry(prev, e.seg_a, e.seg_b)
                .is_none_or(|k| entry_due(&prev[k], u.bins_due, motion, any_mon));
            if !examined {
                continue;
            }
            let l = e.bin_flags & ENTRY_BIN;
            let (lo, hi) = bin_range(*inputs, tol, u.max_bin);
            assert!(
                lo <= l && l <= hi,
                "step {n}: entry ({}, {}) of bin {l}: [d, m, acc] {inputs:?} bins {lo}..={hi}",
                e.seg_a,
                e.seg_b
            );
            checked_bins += 1;
            near_boundary += (lo != hi) as usize;
        }
        steps.push(CpuStep {
            pos: sim.pos.clone(),
            lookup,
            released,
            entries: s.entries().to_vec(),
            touching,
            stats: s.stats(),
            bin_inputs,
            tol,
        });
    }
    eprintln!(
        "cpu run: {checked_bins} examined entries' bins reproduced from their inputs, {near_boundary} within the tolerances of a bin boundary"
    );
    assert!(checked_bins > 10_000, "{checked_bins}");
    let excl = Exclusion::new(&sim.topo, &params);
    let seg_contact = (0..nseg)
        .map(|s| SegmentContact {
            loop_len: excl.loop_len(s),
            ..Default::default()
        })
        .collect();
    CpuRun {
        template: acl.scheduler().uniform(0),
        steps,
        segments: sim.topo.segments.clone(),
        quad_weights: QuadratureTable::new(b).weights,
        quad_arc: excl.quad_arc().to_vec(),
        seg_contact,
    }
}

/// Whether bins `lc` (the CPU's) and `lg` (the GPU's) are both what the twin's binning gives for
/// inputs within the tolerances of the CPU's `[d, m, acc]`: the bin grows with `d` and shrinks with
/// `m` and `acc`, so the extremes of the box of inputs give the range of bins.
fn bin_borderline(inputs: [f32; 3], tol: Tol, max_bin: u32, lc: u32, lg: u32) -> bool {
    let (lo, hi) = bin_range(inputs, tol, max_bin);
    lo <= lc.min(lg) && lc.max(lg) <= hi
}

/// The lowest and highest bin of the twin's binning over inputs within `tol` of `[d, m, acc]`.
fn bin_range([d, m, acc]: [f32; 3], tol: Tol, max_bin: u32) -> (u32, u32) {
    let bin = |d: f32, m: f32, acc: f32| bin_for(earliest_contact_steps(d, m, acc), max_bin);
    (
        bin(d - tol.d, m + tol.m, acc + tol.acc),
        bin(d + tol.d, (m - tol.m).max(0.0), (acc - tol.acc).max(0.0)),
    )
}

/// What a GPU run along the CPU run found besides agreement.
struct GpuRun {
    caps: SchedCaps,
    /// Entries whose bin differed from the CPU's, each borderline.
    borderline: usize,
    /// Entries examined over the run (the CPU's count).
    examined: u64,
    /// Steps whose table was not bitwise the CPU's (the GPU then continued from the CPU's).
    resyncs: usize,
}

/// Runs the GPU step along the CPU run with capacities `caps`, comparing after every step.
fn gpu_run(gpu: &yarnsim::gpu::Gpu, run: &CpuRun, caps: SchedCaps) -> GpuRun {
    let (dev, q) = (&gpu.device, &gpu.queue);
    let pipelines = Pipelines::only(dev, yarnsim::sched::gpu::KERNELS).unwrap();
    let t = &run.template;
    let params = Params {
        num_segments: t.num_segments,
        num_points: t.num_points,
        quadrature: t.quadrature,
        ..Default::default()
    };
    let mut shared = Buffers::default();
    shared.upload(dev, q, "params", bytes(&[params]), true);
    shared.upload(dev, q, "segments", bytes(&run.segments), false);
    shared.upload(dev, q, "pos", bytes(&run.steps[0].pos), false);
    shared.upload(dev, q, "quad_weights", bytes(&run.quad_weights), false);
    shared.upload(dev, q, "quad_arc", bytes(&run.quad_arc), false);
    shared.upload(dev, q, "seg_contact", bytes(&run.seg_contact), false);
    let mut g = SchedGpu::new(dev, q, &pipelines, &shared, t, caps, &run.steps[0].pos).unwrap();
    let (mut touched, mut examined, mut created, mut released) = (0, 0, 0, 0);
    // Steps on which the CPU run skipped the grid and the newcomers, or the drop.
    let (mut no_entered, mut no_left) = (0, 0);
    let (mut borderline, mut resyncs, mut worst_d) = (0, 0, 0.0f32);
    for (n, cs) in run.steps.iter().enumerate() {
        q.write_buffer(shared.get("pos").unwrap(), 0, bytes(&cs.pos));
        g.write_inputs(dev, q, &pipelines, &shared, &cs.lookup, &cs.released)
            .unwrap();
        let u = g.step_uniform(n as u64, cs.released.len() as u32);
        let c = g.step(dev, q, &pipelines, &shared, &u).unwrap();
        let entries = g.entries(dev, q).unwrap();
        assert_eq!(entries.len(), cs.entries.len(), "step {n}: table length");
        for (e, (ge, ce)) in entries.iter().zip(&cs.entries).enumerate() {
            // Keys, flags and touching counts exactly; the bin and the bound below.
            assert_eq!(
                (ge.seg_a, ge.seg_b, ge.bin_flags & !ENTRY_BIN),
                (ce.seg_a, ce.seg_b, ce.bin_flags & !ENTRY_BIN),
                "step {n}: entry {e}"
            );
            let (lg, lc) = (ge.bin_flags & ENTRY_BIN, ce.bin_flags & ENTRY_BIN);
            if lg != lc {
                // A different bin also converts the bound to another window start: `d` is not
                // comparable then.
                let inputs = cs.bin_inputs[e];
                eprintln!(
                    "step {n}: entry {e} ({}, {}): bins differ: gpu bin {lg} (d {:e}), cpu bin {lc} (d {:e}); cpu [d, m, acc] {inputs:?}, tolerances {:?}",
                    ce.seg_a, ce.seg_b, ge.d, ce.d, cs.tol
                );
                assert!(
                    bin_borderline(inputs, cs.tol, t.max_bin, lc, lg),
                    "step {n}: entry {e}: gpu bin {lg}, cpu bin {lc}, not within the tolerances of a bin boundary"
                );
                borderline += 1;
                continue;
            }
            let diff = (ge.d - ce.d).abs();
            assert!(
                ge.d.to_bits() == ce.d.to_bits() || diff <= cs.tol.d,
                "step {n}: entry {e} (bin {lc}): gpu d {:e}, cpu d {:e}, |diff| {diff:e} > {:e}",
                ge.d,
                ce.d,
                cs.tol.d
            );
            if diff.is_finite() {
                worst_d = worst_d.max(diff / cs.tol.d);
            }
        }
        if bytes(&entries) != bytes(&cs.entries) {
            // Continue from the CPU's table (same length and keys, checked above).
            q.write_buffer(g.buffer("entries_a").unwrap(), 0, bytes(&cs.entries));
            resyncs += 1;
        }
        let mut pairs = g.touching(dev, q, c.touching.count).unwrap();
        pairs.sort_unstable();
        assert_eq!(pairs, cs.touching, "step {n}: touching pairs");
        let st = &cs.stats;
        assert_eq!(
            (c.examined as u64, c.processed as u64, c.monitored as u64),
            (st.examined, st.processed, st.monitored),
            "step {n}: examined, processed, monitored"
        );
        assert_eq!(c.newcomers as u64, st.newcomers, "step {n}: newcomers");
        assert_eq!(c.fresh.count as u64, st.created, "step {n}: created");
        assert_eq!(c.lookup_overflow as u64, st.lookup_overflow, "step {n}");
        no_entered += (st.newcomers == 0) as usize;
        no_left += (c.left == 0) as usize;
        touched += pairs.len();
        examined += st.examined;
        created += st.created;
        released += cs.released.len();
    }
    println!(
        "{STEPS} steps ({no_entered} without newcomers, {no_left} without a segment leaving a cell): {} entries at the end, {created} created, {examined} examined, {touched} touching pairs, {released} releases; capacities {:?}",
        run.steps[STEPS - 1].entries.len(),
        g.caps
    );
    eprintln!(
        "{borderline} borderline bins, {resyncs} steps resynced, largest |d_gpu − d_cpu| {worst_d:.3} of the tolerance (last step's {:?})",
        run.steps[STEPS - 1].tol
    );
    // The run exercises what it must: entries made and examined, pairs found, sets released, and
    // steps with and without newcomers or segments leaving cells (the CPU run skips those stages
    // on the steps without, the GPU runs them anyway).
    assert!(created > 1000 && examined > 10_000 && touched > 100 && released > 0);
    assert!(no_entered > 0 && no_entered < STEPS - 5, "{no_entered}");
    assert!(no_left < STEPS - 5, "{no_left}");
    GpuRun {
        caps: g.caps,
        borderline,
        examined,
        resyncs,
    }
}

/// The run's borderline bins are rare, and on lavapipe (whose floats round as the CPU's do) there
/// are none: the tables are bit for bit the CPU's at every step.
fn check_exactness(gpu: &yarnsim::gpu::Gpu, r: &GpuRun) {
    // The CPU run finds about 60 of its ~90,000 examinations within the tolerances of a bin
    // boundary (printed there): the candidates. An NVIDIA H200 moved none of them.
    assert!(
        r.borderline as u64 * 1000 <= r.examined,
        "{} borderline bins of {} entries examined",
        r.borderline,
        r.examined
    );
    let adapter = gpu.summary();
    if adapter.name.to_lowercase().contains("llvmpipe") {
        assert_eq!(
            (r.resyncs, r.borderline),
            (0, 0),
            "{adapter}: a table differed from the CPU's"
        );
    }
}

#[test]
fn sched_gpu_steps_match_the_cpu_scheduler() {
    let Some(gpu) = gpu_or_skip("sched_gpu_steps_match_the_cpu_scheduler") else {
        return;
    };
    let run = cpu_run();
    // Room for everything (the first step's candidates are the most): no overflow, no rerun.
    let roomy = SchedCaps {
        entries: 1 << 15,
        grid: 1 << 14,
        cand: 1 << 17,
        fresh: 1 << 15,
        touching: 1 << 14,
        release: 1 << 12,
        lookup_words: 1 << 15,
        released: 1 << 10,
    };
    let r = gpu_run(&gpu, &run, roomy);
    assert_eq!(r.caps, roomy, "a capacity grew");
    check_exactness(&gpu, &r);
    // Every capacity 1: grown and rerun as needed, the same results.
    let r = gpu_run(&gpu, &run, SchedCaps::all(1));
    let grown = r.caps;
    assert!(grown.entries > 1000 && grown.grid > 1000 && grown.cand > 1000);
    check_exactness(&gpu, &r);
}
