//! The scheduler's whole step on the GPU (`sched::SchedGpu`) against the CPU scheduler, step by
//! step: the default swatch swings down under ACL on the CPU (from its 600th step, once it moves);
//! an `AclContact` runs alongside on the same
//! positions, and at every step its scheduler's inputs (positions, the packed lookup of the live
//! sets, the boxes released since the last step) go to `SchedGpu` too. After every step the entry
//! table (keys, bins, flags and bounds), the touching pairs (after a canonical sort) and the counts
//! must be identical.
//!
//! Bounds are compared bit for bit: the GPU step is the chain of kernels whose twins the CPU run
//! uses (or computes alike; each kernel's own parity test states its tolerance), and over 40 steps
//! any difference in a bound would move bins and decisions. The equality therefore holds where the
//! kernels' floats round as the CPU's do — lavapipe, where the tests run — and the test states so.
//!
//! Tiny capacities (every one 1) must give the identical result: each overflow is flagged, the
//! state restored, the capacity grown and the step rerun.

#[path = "support/fixture.rs"]
mod fixture;

use fixture::{bytes, scene_contact, scene_sim};
use yarnsim::acl::AclContact;
use yarnsim::contact::Exclusion;
use yarnsim::gpu::testing::gpu_or_skip;
use yarnsim::layout::{Params, Release, SchedEntry, SchedUniform, SegmentContact};
use yarnsim::pipelines::{Buffers, Pipelines};
use yarnsim::sched::{set_lookup_pack, SchedCaps, SchedGpu, SchedStats};
use yarnsim::spline::QuadratureTable;
use yarnsim::state::Segment;

const STEPS: usize = 40;
/// Steps the swatch swings down before the schedulers start (from rest it barely moves for the
/// first hundreds of steps of 1/16200 s; after these, segments enter new cells at most steps).
const PRE_STEPS: usize = 600;

/// One step of the CPU run: the scheduler's inputs and what it produced.
struct CpuStep {
    pos: Vec<[f32; 4]>,
    lookup: Vec<u32>,
    released: Vec<Release>,
    entries: Vec<SchedEntry>,
    touching: Vec<[u32; 2]>,
    stats: SchedStats,
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
    let sets = ["contact.model=acl"];
    let mut sim = scene_sim("swatch", &sets, PRE_STEPS);
    let params = scene_contact("swatch", &sets);
    let r = sim.step_params().radius;
    let mut acl = AclContact::new(r, &params).unwrap();
    let mut force = vec![[0.0f32; 4]; sim.pos.len()];
    let nseg = sim.topo.segments.len() as u32;
    let b = params.quadrature;
    let mut steps = Vec::new();
    for _ in 0..STEPS {
        sim.step().unwrap();
        let mut lookup = Vec::new();
        let boxes: Vec<[u32; 4]> = acl.boxes().collect();
        set_lookup_pack(boxes.iter().copied(), b, nseg, &mut lookup);
        let released = acl.released().to_vec();
        acl.step(&sim.topo, &sim.pos, &mut force).unwrap();
        let s = acl.scheduler();
        let mut touching = s.touching().to_vec();
        touching.sort_unstable();
        steps.push(CpuStep {
            pos: sim.pos.clone(),
            lookup,
            released,
            entries: s.entries().to_vec(),
            touching,
            stats: s.stats(),
        });
    }
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

/// Runs the GPU step along the CPU run with capacities `caps`, comparing after every step; returns
/// the capacities it ended with.
fn gpu_run(gpu: &yarnsim::gpu::Gpu, run: &CpuRun, caps: SchedCaps) -> SchedCaps {
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
    for (n, cs) in run.steps.iter().enumerate() {
        q.write_buffer(shared.get("pos").unwrap(), 0, bytes(&cs.pos));
        g.write_inputs(dev, q, &pipelines, &shared, &cs.lookup, &cs.released)
            .unwrap();
        let u = g.step_uniform(n as u64, cs.released.len() as u32);
        let c = g.step(dev, q, &pipelines, &shared, &u).unwrap();
        let entries = g.entries(dev, q).unwrap();
        assert_eq!(entries.len(), cs.entries.len(), "step {n}: table length");
        for (e, (ge, ce)) in entries.iter().zip(&cs.entries).enumerate() {
            assert_eq!(
                (ge.seg_a, ge.seg_b, ge.bin_flags, ge.d.to_bits()),
                (ce.seg_a, ce.seg_b, ce.bin_flags, ce.d.to_bits()),
                "step {n}: entry {e} (gpu d {:e}, cpu d {:e})",
                ge.d,
                ce.d
            );
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
    // The run exercises what it must: entries made and examined, pairs found, sets released, and
    // steps with and without newcomers or segments leaving cells (the CPU run skips those stages
    // on the steps without, the GPU runs them anyway).
    assert!(created > 1000 && examined > 10_000 && touched > 100 && released > 0);
    assert!(no_entered > 0 && no_entered < STEPS - 5, "{no_entered}");
    assert!(no_left < STEPS - 5, "{no_left}");
    g.caps
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
    assert_eq!(gpu_run(&gpu, &run, roomy), roomy, "a capacity grew");
    // Every capacity 1: grown and rerun as needed, the same results.
    let grown = gpu_run(&gpu, &run, SchedCaps::all(1));
    assert!(grown.entries > 1000 && grown.grid > 1000 && grown.cand > 1000);
}
