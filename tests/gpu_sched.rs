//! Parity of the scheduler's kernels (src/sched/) with their CPU twins on states of a real scene:
//! the default swatch falling under ACL, taken at three consecutive steps (so movements and changes
//! of movement are those of a real run).
//!
//! Discrete outputs (cell boxes, error bits, bad indices) must be identical. Movement intervals are
//! floats: each bound is `m + c·(u + v)` of differences of the inputs, padded by `4ε·√mag2`; a GPU
//! compiler may fuse a multiply-add or sum a squared norm in another order, which moves a bound by at
//! most a couple of roundings of its terms. The tolerance is 4ε (|bound| + D) + 16ε²·M per
//! component, with D the largest input difference of the segment on that axis and M its largest
//! coordinate norm (ε = 2⁻²³).

#[path = "support/fixture.rs"]
mod fixture;

use fixture::{bytes, scene_sim};
use yarnsim::acl::AclContact;
use yarnsim::contact::ExactContact;
use yarnsim::gpu::testing::gpu_or_skip;
use yarnsim::layout::{
    CellBox, Interval, SchedCounters, SchedUniform, SegmentMotion, ERROR_GRID_RANGE,
    ERROR_NAN_POSITION, SCHED_NO_MONITORING,
};
use yarnsim::layout::{Release, SchedEntry, SegmentContact};
use yarnsim::math::V3;
use yarnsim::pipelines::run_kernel;
use yarnsim::sched::{
    aabb_raster_movement, entries_compact, entries_drop, entries_keep, entries_merge,
    entries_merge_rank, entries_release, entry_touching, owned_bits, release_count, release_mark,
    schedule_process, segment_monitor, segment_windows, set_lookup_pack, touching_count,
    touching_write, ProcessBuffers, ENTRY_BIN, ENTRY_DUE, ENTRY_MIXED, ENTRY_TOUCH_SHIFT,
};
use yarnsim::sim::Sim;
use yarnsim::state::Segment;

const EPS: f32 = 1.0 / (1u32 << 23) as f32;

/// Positions at three consecutive steps of the swatch (oldest first) and the simulation after them.
fn history() -> (Sim, [Vec<[f32; 4]>; 3]) {
    let mut sim = scene_sim("swatch", &["contact.model=acl"], 30);
    let p2 = sim.pos.clone();
    sim.step().unwrap();
    let p1 = sim.pos.clone();
    sim.step().unwrap();
    let p0 = sim.pos.clone();
    (sim, [p2, p1, p0])
}

fn uniform(sim: &Sim, cell: f32) -> SchedUniform {
    let sp = sim.step_params();
    // The anchor: the cell of the centroid, as the scheduler takes it at its first step.
    let mut c = [0.0f64; 3];
    for p in &sim.pos {
        for a in 0..3 {
            c[a] += p[a] as f64;
        }
    }
    let n = sim.pos.len() as f64;
    let anchor = c.map(|x| (x / n / cell as f64).round() as i32);
    SchedUniform {
        num_segments: sim.topo.segments.len() as u32,
        num_points: sim.pos.len() as u32,
        quadrature: sp.quadrature,
        radius: sp.radius,
        cell,
        inv_cell: 1.0 / cell,
        anchor: [anchor[0], anchor[1], anchor[2], 0],
        ..Default::default()
    }
}

fn fresh_counters() -> SchedCounters {
    SchedCounters {
        first_bad_point: u32::MAX,
        first_bad_segment: u32::MAX,
        ..Default::default()
    }
}

struct RasterOut {
    cells: Vec<CellBox>,
    mv1: Vec<Interval>,
    mv2: Vec<Interval>,
    counters: SchedCounters,
}

fn raster_cpu(u: &SchedUniform, segs: &[Segment], h: &[Vec<[f32; 4]>; 3]) -> RasterOut {
    let n = segs.len();
    let mut out = RasterOut {
        cells: vec![CellBox::default(); n],
        mv1: vec![Interval::default(); n],
        mv2: vec![Interval::default(); n],
        counters: fresh_counters(),
    };
    aabb_raster_movement(
        u,
        segs,
        &h[2],
        &h[1],
        &h[0],
        &mut out.cells,
        &mut out.mv1,
        &mut out.mv2,
        &mut out.counters,
    );
    out
}

fn raster_gpu(
    gpu: &yarnsim::gpu::Gpu,
    u: &SchedUniform,
    segs: &[Segment],
    h: &[Vec<[f32; 4]>; 3],
) -> RasterOut {
    let n = segs.len();
    let out = run_kernel(
        gpu,
        "aabb_raster_movement",
        &[
            ("sched", bytes(&[*u])),
            ("segments", bytes(segs)),
            ("pos", bytes(&h[2])),
            ("prev1", bytes(&h[1])),
            ("prev2", bytes(&h[0])),
            ("cells", bytes(&vec![CellBox::default(); n])),
            ("mv1", bytes(&vec![Interval::default(); n])),
            ("mv2", bytes(&vec![Interval::default(); n])),
            ("sched_counters", bytes(&[fresh_counters()])),
        ],
        n as u32,
    )
    .unwrap();
    RasterOut {
        cells: bytemuck::cast_slice(&out["cells"]).to_vec(),
        mv1: bytemuck::cast_slice(&out["mv1"]).to_vec(),
        mv2: bytemuck::cast_slice(&out["mv2"]).to_vec(),
        counters: bytemuck::cast_slice(&out["sched_counters"])[0],
    }
}

/// Compares a movement interval array within the tolerance of the module docs; `diff(k, p)` is the
/// difference whose field is bounded (`k`: control point 0..4 of the segment, `p`: point index).
fn compare_movement(
    name: &str,
    gpu: &[Interval],
    cpu: &[Interval],
    segs: &[Segment],
    h: &[Vec<[f32; 4]>; 3],
    diff: impl Fn(usize) -> V3<f32>,
) -> usize {
    let mut exact = 0;
    for (s, (g, c)) in gpu.iter().zip(cpu).enumerate() {
        if g == c {
            exact += 1;
            continue;
        }
        let seg = &segs[s];
        let m = seg
            .cp
            .iter()
            .flat_map(|&i| {
                h.iter()
                    .map(move |p| V3::<f32>::from4(p[i as usize]).norm())
            })
            .fold(0.0f32, f32::max);
        for a in 0..3 {
            let d = seg
                .cp
                .iter()
                .map(|&i| diff(i as usize).get(a).abs())
                .fold(0.0f32, f32::max);
            for (gv, cv) in [(g.lo[a], c.lo[a]), (g.hi[a], c.hi[a])] {
                let bound = 4.0 * EPS * (cv.abs() + d) + 16.0 * EPS * EPS * m;
                assert!(
                    (gv - cv).abs() <= bound,
                    "{name}: segment {s} axis {a}: gpu {gv:e} cpu {cv:e} (bound {bound:e})"
                );
            }
        }
    }
    exact
}

#[test]
fn aabb_raster_movement_matches_twin() {
    let Some(gpu) = gpu_or_skip("aabb_raster_movement_matches_twin") else {
        return;
    };
    let (sim, h) = history();
    let segs = &sim.topo.segments;
    let u = uniform(&sim, sim.step_params().grid_cell);
    let cpu = raster_cpu(&u, segs, &h);
    let g = raster_gpu(&gpu, &u, segs, &h);
    assert_eq!(cpu.counters.errors, 0);
    assert_eq!(g.counters, cpu.counters);
    assert!(cpu.cells.iter().all(|c| c.valid()));
    let multi = cpu
        .cells
        .iter()
        .filter(|c| (0..3).any(|a| c.hi[a] > c.lo[a]))
        .count();
    assert!(multi > 100, "only {multi} boxes span several cells");
    // The margin bits (a box padded by r/16 more reaching one cell further) are set on some boxes,
    // about r/8 per axis of a 0.6 cm cell (some 15% of the boxes), and only there.
    let margin = cpu.cells.iter().filter(|c| c.hi[3] != 0).count();
    assert!(
        margin > 0 && margin < cpu.cells.len() / 2,
        "{margin} of {} boxes have margin bits",
        cpu.cells.len()
    );
    assert!(cpu
        .cells
        .iter()
        .all(|c| c.hi[3] & !yarnsim::sched::CELL_MARGIN_BITS == 0));
    for (s, (gc, cc)) in g.cells.iter().zip(&cpu.cells).enumerate() {
        assert_eq!(gc, cc, "segment {s}: cell box");
    }
    // The swatch moves: the intervals are not all zero.
    assert!(cpu
        .mv1
        .iter()
        .any(|m| m.hi[1] - m.lo[1] > 0.0 || m.lo[1] != 0.0));
    let d1 = |p: usize| V3::<f32>::from4(h[2][p]) - V3::from4(h[1][p]);
    let d2 =
        |p: usize| V3::<f32>::from4(h[2][p]) - V3::<f32>::from4(h[1][p]) * 2.0 + V3::from4(h[0][p]);
    let e1 = compare_movement("mv1", &g.mv1, &cpu.mv1, segs, &h, d1);
    let e2 = compare_movement("mv2", &g.mv2, &cpu.mv2, segs, &h, d2);
    println!(
        "aabb_raster_movement: {} segments, {multi} multi-cell boxes; intervals bit-identical: mv1 {e1}, mv2 {e2}",
        segs.len()
    );
}

#[test]
fn aabb_raster_movement_errors_match_twin() {
    let Some(gpu) = gpu_or_skip("aabb_raster_movement_errors_match_twin") else {
        return;
    };
    let (sim, mut h) = history();
    let segs = &sim.topo.segments;
    let u = uniform(&sim, sim.step_params().grid_cell);
    // Two non-finite points (the lowest is reported) and one point far away (its segments cover too
    // many cells).
    h[2][40][1] = f32::NAN;
    h[2][31][2] = f32::INFINITY;
    h[2][200][0] += 10_000.0 * u.cell;
    let cpu = raster_cpu(&u, segs, &h);
    let g = raster_gpu(&gpu, &u, segs, &h);
    assert_eq!(cpu.counters.errors, ERROR_NAN_POSITION | ERROR_GRID_RANGE);
    assert_eq!(cpu.counters.first_bad_point, 31);
    // (A segment whose end handle is point 200 may stretch less than the cap.)
    let far = cpu.counters.first_bad_segment;
    assert!(segs[far as usize].cp.contains(&200), "segment {far}");
    assert_eq!(g.counters, cpu.counters);
    assert_eq!(g.cells, cpu.cells);
    assert!(!cpu.cells[far as usize].valid());
    // Beyond the cell range (a point 2^31 cells away): also a range error, not a wrapped box.
    let (sim, mut h) = history();
    h[2][100][2] = 3e9 * u.cell;
    let cpu = raster_cpu(&u, segs, &h);
    let g = raster_gpu(&gpu, &u, &sim.topo.segments, &h);
    assert_eq!(cpu.counters.errors, ERROR_GRID_RANGE);
    assert_eq!(g.counters, cpu.counters);
    assert_eq!(g.cells, cpu.cells);
}

/// `segment_monitor` on real movement intervals: the drift test, the reference reset, the left
/// flags and the count of segments that entered a cell are decisions (identical); the copied
/// intervals are bit-identical by construction. Run on
/// the first step, on a later step with a reference from three steps before (some segments drift,
/// some do not), and with monitoring switched off.
#[test]
fn segment_monitor_matches_twin() {
    let Some(gpu) = gpu_or_skip("segment_monitor_matches_twin") else {
        return;
    };
    let (sim, h) = history();
    let segs = &sim.topo.segments;
    let n = segs.len();
    let base = uniform(&sim, sim.step_params().grid_cell);
    let now = raster_cpu(&base, segs, &h);
    // The boxes and intervals three steps earlier stand for the previous cells and the references.
    let mut sim_old = scene_sim("swatch", &["contact.model=acl"], 27);
    let o2 = sim_old.pos.clone();
    sim_old.step().unwrap();
    let o1 = sim_old.pos.clone();
    sim_old.step().unwrap();
    let old = raster_cpu(&base, segs, &[o2, o1, sim_old.pos.clone()]);
    let reference: Vec<SegmentMotion> = old
        .mv2
        .iter()
        .map(|m| SegmentMotion {
            mv2_ref: *m,
            ..Default::default()
        })
        .collect();
    let omega = 2e-5;
    // The last case takes the boxes the other way round: the segments that left a cell in the
    // others enter one there. The previous boxes are boxes a segment keeps (with their margin); in
    // three steps no box leaves its previous one then, so every fourth is moved by a cell in x.
    // The last case moves every 40th box only, so that fewer segments enter a cell than the
    // listed newcomer search takes.
    for (label, bins_due, switches, swap, every) in [
        ("first step", u32::MAX, 0, false, 4),
        ("step 6", 1, 0, false, 4),
        ("no monitoring", 1, SCHED_NO_MONITORING, false, 4),
        ("boxes swapped", 1, 0, true, 4),
        ("few moved", 1, 0, false, 40),
    ] {
        let (cur, prev_raw) = if swap {
            (&old.cells, &now.cells)
        } else {
            (&now.cells, &old.cells)
        };
        let prev_cells: Vec<CellBox> = prev_raw
            .iter()
            .enumerate()
            .map(|(s, c)| {
                let mut p = c.with_margin();
                if s % every == 0 {
                    p.lo[0] += 1;
                    p.hi[0] += 1;
                }
                p
            })
            .collect();
        let u = SchedUniform {
            omega,
            step: 6,
            bins_due,
            switches,
            ..base
        };
        let mut motion = reference.clone();
        let mut counters = fresh_counters();
        let mut cells = cur.clone();
        let list_max = yarnsim::layout::NEWCOMER_LIST_MAX as usize;
        let mut movers = vec![u32::MAX; list_max];
        segment_monitor(
            &u,
            &now.mv1,
            &now.mv2,
            &mut cells,
            &prev_cells,
            &mut motion,
            &mut counters,
            &mut movers,
        );
        let out = run_kernel(
            &gpu,
            "segment_monitor",
            &[
                ("sched", bytes(&[u])),
                ("mv1", bytes(&now.mv1)),
                ("mv2", bytes(&now.mv2)),
                ("cells", bytes(cur)),
                ("prev_cells", bytes(&prev_cells)),
                ("motion", bytes(&reference)),
                ("sched_counters", bytes(&[fresh_counters()])),
                ("movers", bytes(&vec![u32::MAX; list_max])),
            ],
            n as u32,
        )
        .unwrap();
        let g_motion: &[SegmentMotion] = bytemuck::cast_slice(&out["motion"]);
        // The list of segments that entered a cell: the GPU's in the order its threads counted
        // them, the twin's in segment order; the same set when all fit, and when they do not, as
        // many of them, each once.
        let listed = (counters.entered as usize).min(list_max);
        let mut g_movers: Vec<u32> = bytemuck::cast_slice::<u8, u32>(&out["movers"])[..].to_vec();
        assert!(
            g_movers[listed..].iter().all(|&m| m == u32::MAX),
            "{label}: listed past the count"
        );
        g_movers.truncate(listed);
        g_movers.sort_unstable();
        let entering: Vec<u32> = (0..n as u32)
            .filter(|&s| !cells[s as usize].within(&prev_cells[s as usize]))
            .collect();
        assert!(
            movers[..listed].windows(2).all(|w| w[0] < w[1]),
            "{label}: twin's list"
        );
        assert!(
            movers[..listed]
                .iter()
                .all(|m| entering.binary_search(m).is_ok()),
            "{label}"
        );
        if listed == counters.entered as usize {
            assert_eq!(g_movers, &movers[..listed], "{label}: listed segments");
        } else {
            g_movers.dedup();
            assert_eq!(g_movers.len(), listed, "{label}: a segment listed twice");
            assert!(
                g_movers.iter().all(|m| entering.binary_search(m).is_ok()),
                "{label}"
            );
        }
        let g_counters: SchedCounters = bytemuck::cast_slice(&out["sched_counters"])[0];
        let g_cells: &[CellBox] = bytemuck::cast_slice(&out["cells"]);
        assert_eq!(g_counters, counters, "{label}: counters");
        for s in 0..n {
            assert_eq!(g_motion[s], motion[s], "{label}: segment {s}");
            assert_eq!(g_cells[s], cells[s], "{label}: segment {s}: box kept");
        }
        // The hysteresis: a segment whose box lies within its previous one keeps that one (and
        // neither enters nor leaves a cell); any other takes its box with the margin, which covers
        // its box and, with the margin's bits cleared, only that.
        let mut kept = 0;
        for s in 0..n {
            let (c, p) = (&cur[s], &prev_cells[s]);
            if c.within(p) {
                assert_eq!(cells[s], *p, "{label}: segment {s} did not keep its box");
                kept += 1;
            } else {
                assert!(
                    c.within(&cells[s]),
                    "{label}: segment {s}: the new box is smaller"
                );
                assert_eq!(cells[s].hi[3], 0, "{label}: segment {s}: bits left");
                assert_eq!(cells[s], c.with_margin(), "{label}: segment {s}");
            }
        }
        let left = (0..n).filter(|&s| !prev_cells[s].within(&cells[s])).count();
        let entered = (0..n).filter(|&s| !cells[s].within(&prev_cells[s])).count();
        assert_eq!(counters.left as usize, left, "{label}: left");
        assert_eq!(counters.entered as usize, entered, "{label}: entered");
        assert_eq!(entered, n - kept, "{label}: a box taken anew enters a cell");
        println!(
            "segment_monitor ({label}): {} of {n} monitored, {} left a cell, {} entered one, {kept} kept their box",
            counters.monitored, counters.left, counters.entered
        );
        assert!(kept > 0, "{label}: no segment kept its box");
        match label {
            "step 6" | "boxes swapped" | "few moved" => assert!(
                counters.monitored > 0 && (counters.monitored as usize) < n,
                "{label}: {} monitored: the case does not exercise the test",
                counters.monitored
            ),
            _ => assert_eq!(counters.monitored, 0, "{label}"),
        }
        assert!(
            counters.left + counters.entered > 0,
            "{label}: no segment moved into or out of a cell"
        );
    }
}

/// The inputs of `schedule_process` from a real run: the swatch stepped with ACL on the CPU, an
/// `AclContact` run alongside on the same positions (so its scheduler and sets are real), and then
/// the buffers the kernel reads at the next step: the entries (every 5th one flagged due with its
/// bound cleared, so that many are processed), the motion records and snapshots, the windows, the
/// quadrature points and the lookup of every other set (so that touching pairs are found).
struct ProcessFixture {
    uniform: SchedUniform,
    entries: Vec<SchedEntry>,
    motion: Vec<SegmentMotion>,
    windows: Vec<Interval>,
    qpts: Vec<[f32; 4]>,
    seg_contact: Vec<SegmentContact>,
    lookup: Vec<u32>,
    monitored: u32,
    segments: Vec<Segment>,
    pos: Vec<[f32; 4]>,
    snaps: Vec<[f32; 4]>,
    cells: Vec<CellBox>,
    /// Every live set's box.
    boxes: Vec<[u32; 4]>,
    /// The same-yarn exclusion rule and its `quad_arc` table.
    excl: yarnsim::contact::Exclusion,
    quad_arc: Vec<f32>,
    /// The exact path's quadrature weights (one row per quadrature point of a segment).
    quad_weights: Vec<[f32; 4]>,
}

fn process_fixture() -> ProcessFixture {
    let sets = ["contact.model=acl"];
    let mut sim = scene_sim("swatch", &sets, 0);
    let params = fixture::scene_contact("swatch", &sets);
    let r = sim.step_params().radius;
    let mut acl = AclContact::new(r, &params).unwrap();
    let mut force = vec![[0.0f32; 4]; sim.pos.len()];
    for _ in 0..37 {
        sim.step().unwrap();
        acl.step(&sim.topo, &sim.pos, &mut force).unwrap();
    }
    sim.step().unwrap();
    let sched = acl.scheduler();
    let nseg = sim.topo.segments.len();
    let b = params.quadrature;
    let uniform = SchedUniform {
        num_entries: sched.entries().len() as u32,
        ..sched.uniform(sched.steps())
    };
    let mut entries = sched.entries().to_vec();
    for en in entries.iter_mut().step_by(5) {
        en.d = -1.0;
        en.bin_flags |= ENTRY_DUE;
    }
    let motion = sched.motion().to_vec();
    let monitored = motion.iter().filter(|m| m.mon != 0).count() as u32;
    let mut windows = vec![Interval::default(); nseg * (uniform.max_bin as usize + 1)];
    segment_windows(
        &uniform,
        &sim.topo.segments,
        &sim.pos,
        sched.snaps(),
        &motion,
        &mut windows,
    );
    // Quadrature points and loop lengths as the exact path's host makes them.
    let mut exact = ExactContact::new(r, &params).unwrap();
    exact.detect(&sim.topo, &sim.pos).unwrap();
    let qpts = exact.quadrature_positions().to_vec();
    let seg_contact = exact.segment_contact().to_vec();
    let excl = exact.exclusion().clone();
    let quad_arc = excl.quad_arc().to_vec();
    let mut lookup = Vec::new();
    // Every other set left out of the lookup: its touching pairs are then unowned and found again.
    let boxes: Vec<[u32; 4]> = acl.boxes().step_by(2).collect();
    set_lookup_pack(boxes.iter().copied(), b, nseg as u32, &mut lookup);
    let quad_weights = exact.quad_weights().to_vec();
    ProcessFixture {
        uniform,
        entries,
        motion,
        windows,
        qpts,
        seg_contact,
        lookup,
        monitored,
        segments: sim.topo.segments.clone(),
        pos: sim.pos.clone(),
        snaps: sched.snaps().to_vec(),
        cells: sched.cell_boxes().to_vec(),
        boxes: acl.boxes().collect(),
        quad_weights,
        excl,
        quad_arc,
    }
}

/// `schedule_process` on the swatch's real entries. Discrete outputs (bins, flags, touching counts,
/// counters) must be identical. The bound `d` is a few roundings of f32 arithmetic on the same
/// inputs (a difference of window norms, or a square root of a squared distance minus 2r): the
/// tolerance is 8ε (|d_in| + 2r + W) with W the largest window coordinate of the entry's segments,
/// which covers fused multiply-adds and square roots within Vulkan's precision on hardware; on
/// lavapipe the bounds come out bit-identical. Every 7th segment is also marked monitored (the run's
/// own may be none), so that entries are due through their segments' monitoring too (the kernel
/// reads the monitored count once per workgroup).
#[test]
fn schedule_process_matches_twin() {
    let Some(gpu) = gpu_or_skip("schedule_process_matches_twin") else {
        return;
    };
    let mut f = process_fixture();
    for m in f.motion.iter_mut().step_by(7) {
        m.mon = 1;
    }
    f.monitored = f.motion.iter().filter(|m| m.mon != 0).count() as u32;
    let u = f.uniform;
    let n = f.entries.len();
    let nseg = u.num_segments as usize;
    let src = ProcessBuffers {
        nseg,
        quadrature: u.quadrature,
        exclusion_arc: u.exclusion_arc,
        windows: &f.windows,
        qpts: &f.qpts,
        seg_contact: &f.seg_contact,
    };
    let start = SchedCounters {
        monitored: f.monitored,
        ..fresh_counters()
    };
    let mut cpu_entries = f.entries.clone();
    let mut counters = start;
    let mut tasks = Vec::new();
    schedule_process(
        &u,
        &src,
        &f.motion,
        &f.lookup,
        &mut cpu_entries,
        &mut counters,
        &mut tasks,
        true,
    );
    // The pairs the CPU run collects while examining, in task (= table) order.
    let collected: Vec<[u32; 2]> = tasks.iter().flat_map(|t| t.touching.clone()).collect();
    let out = run_kernel(
        &gpu,
        "schedule_process",
        &[
            ("sched", bytes(&[u])),
            ("qpts", bytes(&f.qpts)),
            ("seg_contact", bytes(&f.seg_contact)),
            ("windows", bytes(&f.windows)),
            ("motion", bytes(&f.motion)),
            ("set_lookup", bytes(&f.lookup)),
            ("entries", bytes(&f.entries)),
            ("sched_counters", bytes(&[start])),
        ],
        n as u32,
    )
    .unwrap();
    let g_entries: &[SchedEntry] = bytemuck::cast_slice(&out["entries"]);
    let g_counters: SchedCounters = bytemuck::cast_slice(&out["sched_counters"])[0];
    assert_eq!(g_counters, counters, "counters");
    let eps = f32::EPSILON;
    let windows = &f.windows;
    let mut identical = 0;
    for e in 0..n {
        let (g, c, before) = (g_entries[e], cpu_entries[e], f.entries[e]);
        assert_eq!(
            (g.seg_a, g.seg_b, g.bin_flags),
            (c.seg_a, c.seg_b, c.bin_flags),
            "entry {e} ({}, {})",
            c.seg_a,
            c.seg_b
        );
        if g.d.to_bits() == c.d.to_bits() {
            identical += 1;
            continue;
        }
        let w = [c.seg_a as usize, c.seg_b as usize]
            .iter()
            .flat_map(|&s| (0..=u.max_bin as usize).map(move |l| windows[l * nseg + s]))
            .flat_map(|i| (0..3).flat_map(move |a| [i.lo[a].abs(), i.hi[a].abs()]))
            .fold(0.0f32, f32::max);
        let bound = 8.0 * eps * (before.d.abs().min(1e6) + 2.0 * u.radius + w);
        assert!(
            (g.d - c.d).abs() <= bound,
            "entry {e}: d gpu {:e} cpu {:e} (bound {bound:e})",
            g.d,
            c.d
        );
    }
    // The case exercises what it must: many examinations, processings with owned pairs, pairs of
    // mixed class, touching pairs, several bins.
    let processed_owned = f
        .entries
        .iter()
        .filter(|e| e.bin_flags & ENTRY_DUE != 0)
        .filter(|e| owned_bits(&f.lookup, e.seg_a, e.seg_b, u.quadrature).0 != [0; 4])
        .count();
    let mixed = cpu_entries
        .iter()
        .zip(&f.entries)
        .filter(|(_, b)| b.bin_flags & (ENTRY_DUE | ENTRY_MIXED) == (ENTRY_DUE | ENTRY_MIXED))
        .count();
    let bins: std::collections::BTreeSet<u32> = cpu_entries
        .iter()
        .map(|e| e.bin_flags & ENTRY_BIN)
        .collect();
    let touching_entries = cpu_entries
        .iter()
        .filter(|e| e.bin_flags >> ENTRY_TOUCH_SHIFT != 0)
        .count();
    println!(
        "schedule_process: {n} entries, {} examined, {} processed ({processed_owned} with owned pairs, {mixed} of mixed class), {} touching pairs in {touching_entries} entries, bins {bins:?}, {identical} bounds bit-identical, {} lookup overflows",
        counters.examined, counters.processed, counters.touching.count, counters.lookup_overflow
    );
    assert!(counters.examined as usize > n / 5 && counters.processed as usize >= n / 5);
    assert!(
        processed_owned > 20,
        "{processed_owned} processed entries with owned pairs"
    );
    assert!(mixed > 0, "no processed entry of mixed class");
    assert!(counters.touching.count > 0 && bins.len() > 3);
    assert_eq!(counters.lookup_overflow, 0);

    // touching_count → touching_write (no scan between: each entry's first slot from the group
    // sums and a workgroup scan), on both sides from the twin's entries, over more groups than
    // one workgroup's (so the group part of the prefix counts), and over a grid past the entries
    // by several workgroups, as the step's (the entry capacity's): those return at once, and their
    // group words stay as they were.
    let ngroups = n.div_ceil(256);
    assert!(ngroups > 1, "{n} entries: one group");
    let grid = n + 1_000;
    let mut groups = vec![7u32; grid.div_ceil(256)];
    touching_count(&u, &cpu_entries, &mut groups);
    let out = run_kernel(
        &gpu,
        "touching_count",
        &[
            ("sched", bytes(&[u])),
            ("entries", bytes(&cpu_entries)),
            ("scan_groups", bytes(&vec![7u32; groups.len()])),
        ],
        grid as u32,
    )
    .unwrap();
    // By definition: each group's sum of the entries' counts (the GPU's too), and all of them the
    // touching total.
    let counts: Vec<u32> = cpu_entries.iter().map(entry_touching).collect();
    check_groups_past(
        &groups,
        &counts,
        &out["scan_groups"],
        7,
        3,
        "touching_count",
    );
    let total = counts.iter().sum::<u32>() as usize;
    assert_eq!(total, counters.touching.count as usize);
    for cap in [total, total - 5] {
        let c0 = SchedCounters {
            touching: yarnsim::layout::Capacity {
                count: total as u32,
                capacity: cap as u32,
                ..Default::default()
            },
            ..fresh_counters()
        };
        let mut cpu_pairs = vec![[u32::MAX; 2]; total];
        let mut cpu_c = c0;
        touching_write(
            &u,
            &src,
            &f.lookup,
            &cpu_entries,
            &groups,
            &mut cpu_pairs,
            &mut cpu_c,
        );
        let out = run_kernel(
            &gpu,
            "touching_write",
            &[
                ("sched", bytes(&[u])),
                ("qpts", bytes(&f.qpts)),
                ("seg_contact", bytes(&f.seg_contact)),
                ("set_lookup", bytes(&f.lookup)),
                ("entries", bytes(&cpu_entries)),
                ("scan_groups", bytes(&groups)),
                ("touching", bytes(&vec![[u32::MAX; 2]; total])),
                ("sched_counters", bytes(&[c0])),
            ],
            grid as u32,
        )
        .unwrap();
        let g_pairs: &[[u32; 2]] = bytemuck::cast_slice(&out["touching"]);
        let g_c: SchedCounters = bytemuck::cast_slice(&out["sched_counters"])[0];
        assert_eq!(g_c, cpu_c, "capacity {cap}: counters");
        assert_eq!(g_pairs, &cpu_pairs[..], "capacity {cap}: pairs");
        if cap == total {
            assert_eq!(cpu_c.touching.overflow, 0);
            assert_eq!(
                cpu_pairs, collected,
                "the CPU run's pairs differ from touching_write's"
            );
            assert!(cpu_pairs.iter().all(|p| p[0] < p[1]));
        } else {
            // Overflow: flagged, the slots within the capacity written as with room, none beyond.
            assert_eq!(cpu_c.touching.overflow, 1);
            assert_eq!(&cpu_pairs[..cap], &collected[..cap]);
            assert!(cpu_pairs[cap..].iter().all(|p| *p == [u32::MAX; 2]));
        }
    }
}

/// `segment_windows_quadrature`, which the scheduler's GPU step dispatches in place of
/// `segment_windows` and `quadrature_points`, writes `windows` and `qpts` bit for bit as those two
/// dispatched on the same GPU (outputs start as NaN, so every element must be written), on the
/// swatch's real snapshots; its twin is the two twins (the quadrature points equal to the exact
/// path's host's, the windows to the fixture's).
#[test]
fn segment_windows_quadrature_is_the_two_kernels_bit_for_bit() {
    let Some(gpu) = gpu_or_skip("segment_windows_quadrature_is_the_two_kernels_bit_for_bit") else {
        return;
    };
    let f = process_fixture();
    let u = f.uniform;
    let nseg = u.num_segments as usize;
    let nb = u.max_bin as usize + 1;
    let b = f.quad_weights.len();
    let params = yarnsim::layout::Params {
        num_segments: u.num_segments,
        quadrature: b as u32,
        ..Default::default()
    };
    let nan_w = vec![
        Interval {
            lo: [f32::NAN; 4],
            hi: [f32::NAN; 4]
        };
        nseg * nb
    ];
    let nan_q = vec![[f32::NAN; 4]; nseg * b];
    let fused = run_kernel(
        &gpu,
        "segment_windows_quadrature",
        &[
            ("sched", bytes(&[u])),
            ("params", bytes(&[params])),
            ("segments", bytes(&f.segments)),
            ("pos", bytes(&f.pos)),
            ("snaps", bytes(&f.snaps)),
            ("motion", bytes(&f.motion)),
            ("quad_weights", bytes(&f.quad_weights)),
            ("quad_arc", bytes(&f.quad_arc)),
            ("windows", bytes(&nan_w)),
            ("qpts", bytes(&nan_q)),
        ],
        (nseg * (nb + b)) as u32,
    )
    .unwrap();
    let windows = run_kernel(
        &gpu,
        "segment_windows",
        &[
            ("sched", bytes(&[u])),
            ("segments", bytes(&f.segments)),
            ("pos", bytes(&f.pos)),
            ("snaps", bytes(&f.snaps)),
            ("motion", bytes(&f.motion)),
            ("windows", bytes(&nan_w)),
        ],
        (nseg * nb) as u32,
    )
    .unwrap();
    let qpts = run_kernel(
        &gpu,
        "quadrature_points",
        &[
            ("params", bytes(&[params])),
            ("segments", bytes(&f.segments)),
            ("pos", bytes(&f.pos)),
            ("quad_weights", bytes(&f.quad_weights)),
            ("quad_arc", bytes(&f.quad_arc)),
            ("qpts", bytes(&nan_q)),
        ],
        (nseg * b) as u32,
    )
    .unwrap();
    assert!(fused["windows"] == windows["windows"], "windows");
    assert!(fused["qpts"] == qpts["qpts"], "qpts");
    let g_q: &[[f32; 4]] = bytemuck::cast_slice(&fused["qpts"]);
    assert!(g_q.iter().all(|q| q.iter().all(|x| x.is_finite())));
    let (mut w, mut q) = (nan_w.clone(), nan_q.clone());
    yarnsim::sched::segment_windows_quadrature(
        &u,
        &params,
        &f.segments,
        &f.pos,
        &f.snaps,
        &f.motion,
        &f.quad_weights,
        &f.quad_arc,
        &mut w,
        &mut q,
    );
    assert_eq!(w, f.windows, "the twin's windows");
    assert_eq!(q, f.qpts, "the twin's quadrature points");
}

/// `segment_windows` on the swatch's real snapshots: the same arithmetic as `aabb_raster_movement`'s
/// intervals (tolerance of the module docs; bit-identical on lavapipe).
#[test]
fn segment_windows_matches_twin() {
    let Some(gpu) = gpu_or_skip("segment_windows_matches_twin") else {
        return;
    };
    let f = process_fixture();
    let u = f.uniform;
    let nseg = u.num_segments as usize;
    let nb = u.max_bin as usize + 1;
    let out = run_kernel(
        &gpu,
        "segment_windows",
        &[
            ("sched", bytes(&[u])),
            ("segments", bytes(&f.segments)),
            ("pos", bytes(&f.pos)),
            ("snaps", bytes(&f.snaps)),
            ("motion", bytes(&f.motion)),
            ("windows", bytes(&vec![Interval::default(); nseg * nb])),
        ],
        (nseg * nb) as u32,
    )
    .unwrap();
    let g: &[Interval] = bytemuck::cast_slice(&out["windows"]);
    let npts = f.pos.len();
    let mut exact = 0;
    for l in 0..nb {
        let (gl, cl) = (
            &g[l * nseg..(l + 1) * nseg],
            &f.windows[l * nseg..(l + 1) * nseg],
        );
        if l == 0 {
            assert_eq!(gl, cl, "λ = 0 is the last step's movement");
            exact += nseg;
            continue;
        }
        let snap = &f.snaps[(l - 1) * npts..l * npts];
        let h = [snap.to_vec(), snap.to_vec(), f.pos.clone()];
        let diff = |p: usize| V3::<f32>::from4(f.pos[p]) - V3::from4(snap[p]);
        exact += compare_movement(&format!("window {l}"), gl, cl, &f.segments, &h, diff);
    }
    // The windows of the bins differ from one another (the snapshots are of different steps).
    assert!(f.windows[nseg..2 * nseg] != f.windows[(nb - 1) * nseg..nb * nseg]);
    println!(
        "segment_windows: {} windows, {exact} bit-identical",
        nseg * nb
    );
}

/// `entries_keep` → `entries_compact` (each kept entry's slot from the keep flags' group sums, no
/// scan) on the swatch's table, with every 3rd segment marked as having left a cell and every 7th
/// segment's box moved far away (its pairs stop sharing a cell): the flags and the compacted table
/// identical on both sides and equal to `entries_drop`'s. Then a table of 70,001 entries (more than
/// 256 groups: the group sums before a workgroup take two loads a thread) kept by a pattern, in a
/// buffer with room to spare: the slots against the filter, and the record of the kept table.
#[test]
fn entries_keep_and_compact_match_twins() {
    let Some(gpu) = gpu_or_skip("entries_keep_and_compact_match_twins") else {
        return;
    };
    let f = process_fixture();
    let u = f.uniform;
    let n = f.entries.len();
    let mut motion = f.motion.clone();
    for (s, m) in motion.iter_mut().enumerate() {
        m.left = (s % 3 == 0) as u32;
    }
    let mut cells = f.cells.clone();
    for c in cells.iter_mut().step_by(7) {
        c.lo[0] += 1000;
        c.hi[0] += 1000;
    }
    // Over a grid past the table by several workgroups, as the step's (the entry capacity's):
    // those return at once, and leave their words as they were.
    let grid = n + 1_001;
    let mut keep = vec![9u32; grid];
    let mut groups = vec![9u32; grid.div_ceil(256)];
    entries_keep(&u, &cells, &motion, &f.entries, &mut keep, &mut groups);
    let out = run_kernel(
        &gpu,
        "entries_keep",
        &[
            ("sched", bytes(&[u])),
            ("cells", bytes(&cells)),
            ("motion", bytes(&motion)),
            ("entries", bytes(&f.entries)),
            ("keep", bytes(&vec![9u32; grid])),
            ("scan_groups", bytes(&vec![9u32; groups.len()])),
        ],
        grid as u32,
    )
    .unwrap();
    let gpu_keep: &[u32] = bytemuck::cast_slice(&out["keep"]);
    assert_eq!(gpu_keep, &keep[..]);
    assert!(keep[n + 1..].iter().all(|&v| v == 9));
    let keep = keep[..=n].to_vec();
    check_groups_past(&groups, &keep, &out["scan_groups"], 9, 3, "entries_keep");
    let groups = groups[..(n + 1).div_ceil(256)].to_vec();
    let kept = keep.iter().sum::<u32>() as usize;
    let compact = compact_both(&gpu, &u, &f.entries, &keep, &groups, kept);
    let mut retained = f.entries.clone();
    let dropped = entries_drop(&cells, &motion, &mut retained);
    assert_eq!(retained, compact);
    println!("entries_keep/compact: {n} entries, {dropped} dropped, {kept} kept");
    assert!(dropped > 100 && kept > n / 2, "{dropped} dropped of {n}");

    // The long table: entries (k, k + 1), every 3rd and every 7th dropped.
    let n = 70_001usize;
    let table: Vec<SchedEntry> = (0..n as u32 + 40)
        .map(|k| SchedEntry {
            seg_a: k,
            seg_b: k + 1,
            d: k as f32,
            bin_flags: k % 5,
        })
        .collect();
    let mut keep: Vec<u32> = (0..n).map(|k| (k % 3 != 0 && k % 7 != 0) as u32).collect();
    keep.push(0);
    let mut groups = vec![0u32; (n + 1).div_ceil(256)];
    yarnsim::scan::write_groups(&keep, &mut groups);
    assert!(groups.len() > 256);
    let long = SchedUniform {
        num_entries: n as u32,
        ..u
    };
    let kept = keep.iter().sum::<u32>() as usize;
    let compact = compact_both(&gpu, &long, &table, &keep, &groups, kept);
    let filtered: Vec<SchedEntry> = (0..n).filter(|&k| keep[k] != 0).map(|k| table[k]).collect();
    assert_eq!(compact, filtered);
    println!(
        "entries_compact: {n} entries, {} groups, {kept} kept",
        groups.len()
    );
}

/// `entries_compact` of `entries` by the flags `keep` (their group sums in `groups`) on the GPU
/// (over output slots and a `sched_p1` that start stale) and by its twin: both tables and records
/// identical, the record `u` with the kept count. Returns the kept table.
fn compact_both(
    gpu: &yarnsim::gpu::Gpu,
    u: &SchedUniform,
    entries: &[SchedEntry],
    keep: &[u32],
    groups: &[u32],
    kept: usize,
) -> Vec<SchedEntry> {
    let n = u.num_entries as usize;
    let stale = SchedUniform {
        num_entries: 999_999,
        num_fresh: 77,
        ..Default::default()
    };
    let poison = SchedEntry {
        seg_a: 7,
        seg_b: 7,
        d: f32::NAN,
        bin_flags: 7,
    };
    // Room past the kept entries, which must stay as they came.
    let mut compact = vec![poison; kept + 3];
    let mut p1 = stale;
    entries_compact(u, entries, keep, groups, &mut compact, &mut p1);
    assert_eq!(
        p1,
        SchedUniform {
            num_entries: kept as u32,
            ..*u
        }
    );
    let out = run_kernel(
        gpu,
        "entries_compact",
        &[
            ("sched", bytes(&[*u])),
            ("entries", bytes(entries)),
            ("keep", bytes(keep)),
            ("scan_groups", bytes(groups)),
            ("entries_out", bytes(&vec![poison; kept + 3])),
            ("sched_p1", bytes(&[stale])),
        ],
        n as u32 + 1,
    )
    .unwrap();
    // Compared as words (the poison's NaN is not equal to itself); the first difference named.
    let g: &[[u32; 4]] = bytemuck::cast_slice(&out["entries_out"]);
    let c: &[[u32; 4]] = bytemuck::cast_slice(&compact);
    assert_eq!(g.len(), c.len());
    if let Some(k) = (0..c.len()).find(|&k| g[k] != c[k]) {
        panic!(
            "entries_out[{k}] of {kept} kept: GPU {:?}, twin {:?}",
            g[k], c[k]
        );
    }
    assert_eq!(
        bytemuck::cast_slice::<u8, SchedUniform>(&out["sched_p1"]),
        &[p1]
    );
    compact.truncate(kept);
    compact
}

/// Releases made from the sets' boxes `boxes`: every 3rd deleted, every 3rd + 1 losing its last
/// row (when it has more than one), the rest unchanged (no release).
fn releases_of(boxes: &[[u32; 4]]) -> Vec<Release> {
    let mut released = Vec::new();
    for (k, bx) in boxes.iter().enumerate() {
        match k % 3 {
            0 => released.push(Release {
                before: *bx,
                after: yarnsim::sched::EMPTY_BOX,
            }),
            1 if bx[1] > bx[0] => released.push(Release {
                before: *bx,
                after: [bx[0], bx[1] - 1, bx[2], bx[3]],
            }),
            _ => {}
        }
    }
    released
}

/// `release_count` → exclusive scan → `release_mark` on the swatch's table, with releases made from
/// its real sets (every 3rd deleted, every 3rd + 1 losing its last row, the rest unchanged, plus an
/// empty box and one beyond the segments): the counts and the flagged table identical on both sides
/// and equal to `entries_release`'s (the CPU run's stage).
#[test]
fn release_count_and_mark_match_twins() {
    let Some(gpu) = gpu_or_skip("release_count_and_mark_match_twins") else {
        return;
    };
    let f = process_fixture();
    let mut released = releases_of(&f.boxes);
    let nq = f.uniform.num_segments * f.uniform.quadrature;
    released.push(Release {
        before: yarnsim::sched::EMPTY_BOX,
        after: yarnsim::sched::EMPTY_BOX,
    });
    released.push(Release {
        before: [nq + 5, nq + 30, nq + 40, nq + 90],
        after: yarnsim::sched::EMPTY_BOX,
    });
    let u = SchedUniform {
        num_released: released.len() as u32,
        ..f.uniform
    };
    let nr = released.len();
    let mut offsets = vec![0u32; nr + 1];
    let mut groups = vec![7u32; (nr + 1).div_ceil(256)];
    release_count(&u, &released, &mut offsets, &mut groups);
    let out = run_kernel(
        &gpu,
        "release_count",
        &[
            ("sched", bytes(&[u])),
            ("released", bytes(&released)),
            ("release_offsets", bytes(&vec![7u32; nr + 1])),
            ("scan_groups", bytes(&vec![7u32; groups.len()])),
        ],
        nr as u32 + 1,
    )
    .unwrap();
    assert_eq!(
        bytemuck::cast_slice::<u8, u32>(&out["release_offsets"]),
        &offsets[..]
    );
    check_groups(&groups, &offsets, &out["scan_groups"], "release_count");
    let mut partials = Vec::new();
    yarnsim::scan::exclusive_scan(&mut offsets, &mut partials);
    let total = offsets[nr];
    let mut cpu = f.entries.clone();
    release_mark(&u, &released, &offsets, &mut cpu);
    let out = run_kernel(
        &gpu,
        "release_mark",
        &[
            ("sched", bytes(&[u])),
            ("released", bytes(&released)),
            ("release_offsets", bytes(&offsets)),
            ("entries", bytes(&f.entries)),
        ],
        total,
    )
    .unwrap();
    let g: &[SchedEntry] = bytemuck::cast_slice(&out["entries"]);
    assert_eq!(g, &cpu[..]);
    let mut reference = f.entries.clone();
    entries_release(
        &released,
        u.quadrature,
        u.num_segments as usize,
        &mut reference,
    );
    assert_eq!(cpu, reference);
    let due = |t: &[SchedEntry]| t.iter().filter(|e| e.bin_flags & ENTRY_DUE != 0).count();
    let flagged = due(&cpu) - due(&f.entries);
    println!(
        "release_count/mark: {nr} releases, {total} slots, {flagged} more entries flagged due"
    );
    assert!(flagged > 50, "only {flagged} entries flagged");
}

/// `entries_merge_rank` on the swatch's table split in two (every 4th entry taken out as the "new"
/// entries): the merged table identical on both sides, equal to `entries_merge`'s (the CPU run's
/// stage) and to the table before the split.
#[test]
fn entries_merge_rank_matches_twin() {
    let Some(gpu) = gpu_or_skip("entries_merge_rank_matches_twin") else {
        return;
    };
    let f = process_fixture();
    let fresh: Vec<SchedEntry> = f.entries.iter().copied().step_by(4).collect();
    let table: Vec<SchedEntry> = f
        .entries
        .iter()
        .enumerate()
        .filter(|(k, _)| k % 4 != 0)
        .map(|(_, e)| *e)
        .collect();
    let u = SchedUniform {
        num_entries: table.len() as u32,
        num_fresh: fresh.len() as u32,
        ..f.uniform
    };
    let total = table.len() + fresh.len();
    let mut cpu = vec![SchedEntry::default(); total];
    entries_merge_rank(&u, &table, &fresh, &mut cpu);
    let out = run_kernel(
        &gpu,
        "entries_merge_rank",
        &[
            ("sched", bytes(&[u])),
            ("entries", bytes(&table)),
            ("fresh", bytes(&fresh)),
            ("entries_out", bytes(&vec![SchedEntry::default(); total])),
        ],
        total as u32,
    )
    .unwrap();
    assert_eq!(
        bytemuck::cast_slice::<u8, SchedEntry>(&out["entries_out"]),
        &cpu[..]
    );
    let mut merged = table.clone();
    entries_merge(&mut merged, &fresh);
    assert_eq!(merged, cpu);
    assert_eq!(cpu, f.entries);
    println!(
        "entries_merge_rank: {} + {} entries",
        table.len(),
        fresh.len()
    );
}

/// The scheduler grid and `newcomer_schedule` as the kernel chain, per kernel against its twin (the
/// scans and sorts between kernels by their own twins, whose GPU parity tests/gpu_scan.rs checks),
/// and the chain's results against the CPU run's own stages (`grid_build`, `newcomer_schedule`
/// with the `Exclusion` rule itself): grid items, candidate keys, new entries and every counter
/// identical. All outputs are discrete.
struct NewcomerCase<'a> {
    label: &'a str,
    cells: &'a [CellBox],
    prev_cells: &'a [CellBox],
    entries: &'a [SchedEntry],
    /// Capacities below the need, by this many (0: room).
    short: u32,
}

/// Runs one kernel of the chain and returns the buffer named `out` and `sched_counters`.
/// A grouped scan's producer: the twin's group sums of the `words` words it wrote (one per 256)
/// are their sums, and the GPU's (`out`) are the twin's.
fn check_groups(twin: &[u32], written: &[u32], gpu_out: &[u8], label: &str) {
    for (g, chunk) in written.chunks(256).enumerate() {
        let sum = chunk.iter().fold(0u32, |a, &v| a.wrapping_add(v));
        assert_eq!(twin[g], sum, "{label}: twin group {g}");
    }
    assert_eq!(twin.len(), written.len().div_ceil(256), "{label}");
    assert_eq!(
        bytemuck::cast_slice::<u8, u32>(gpu_out),
        twin,
        "{label}: GPU groups"
    );
}

/// [`check_groups`] over the groups of the words written (`written`), when the kernel ran over a
/// grid past them: the words of the groups wholly past them stay `sentinel`, on both sides, and
/// there are at least `min_past` of them (the workgroups that returned at once).
fn check_groups_past(
    twin: &[u32],
    written: &[u32],
    gpu_out: &[u8],
    sentinel: u32,
    min_past: usize,
    label: &str,
) {
    let live = written.len().div_ceil(256);
    check_groups(&twin[..live], written, &gpu_out[..4 * live], label);
    let past: &[u32] = bytemuck::cast_slice(&gpu_out[4 * live..]);
    assert!(
        past.len() >= min_past,
        "{label}: {} groups past",
        past.len()
    );
    assert!(
        past.iter().chain(&twin[live..]).all(|&g| g == sentinel),
        "{label}: the groups past the words written: {past:?}"
    );
}

fn run_sched_kernel(
    gpu: &yarnsim::gpu::Gpu,
    name: &str,
    inputs: &[(&str, &[u8])],
    threads: u32,
    out: &str,
) -> (Vec<u8>, SchedCounters) {
    let o = run_kernel(gpu, name, inputs, threads).unwrap();
    let c = o
        .get("sched_counters")
        .map(|b| bytemuck::cast_slice::<u8, SchedCounters>(b)[0])
        .unwrap_or_default();
    (o[out].clone(), c)
}

/// The candidate pairs of a newcomer search by their definition, in key order: every pair `a < b`
/// of valid boxes of `cells` that share a cell not in both `prev_cells[a]` and `prev_cells[b]`
/// (brute force over all pairs, box arithmetic only). Also the meetings the search visits: per
/// such pair, the shared cells new to `a` plus those new to `b` (each an item of the grid meeting
/// its partner).
fn new_pairs_by_definition(cells: &[CellBox], prev_cells: &[CellBox]) -> (Vec<(u32, u32)>, u64) {
    let meet = |x: &CellBox, y: &CellBox| {
        let mut b = CellBox::default();
        for a in 0..3 {
            b.lo[a] = x.lo[a].max(y.lo[a]);
            b.hi[a] = x.hi[a].min(y.hi[a]);
        }
        b.lo[3] = (x.intersects(y)) as i32;
        b
    };
    let cells_of = |b: &CellBox| -> u64 {
        if !b.valid() {
            return 0;
        }
        (0..3).map(|a| (b.hi[a] - b.lo[a] + 1) as u64).product()
    };
    let (mut pairs, mut met) = (Vec::new(), 0);
    for a in 0..cells.len() {
        for b in a + 1..cells.len() {
            if !cells[a].intersects(&cells[b]) {
                continue;
            }
            let shared = meet(&cells[a], &cells[b]);
            let old = meet(&prev_cells[a], &prev_cells[b]);
            if !shared.within(&old) {
                pairs.push((a as u32, b as u32));
                let n = cells_of(&shared);
                met += 2 * n
                    - cells_of(&meet(&shared, &prev_cells[a]))
                    - cells_of(&meet(&shared, &prev_cells[b]));
            }
        }
    }
    (pairs, met)
}

fn newcomer_chain(gpu: &yarnsim::gpu::Gpu, f: &ProcessFixture, case: &NewcomerCase) -> usize {
    use yarnsim::layout::KeyValue;
    use yarnsim::sched::{
        cand_key_bits, cand_pair, grid_build, newcomer_compact, newcomer_count, newcomer_keep,
        newcomer_schedule, newcomer_write, sched_grid_count, sched_grid_write, SchedGrid,
    };
    let label = case.label;
    let nseg = f.segments.len();
    let u = SchedUniform {
        num_entries: case.entries.len() as u32,
        ..f.uniform
    };
    let (mut sort_s, mut sort_h, mut sort_p, mut partials) =
        (Vec::new(), Vec::new(), Vec::new(), Vec::new());

    // The CPU run.
    let mut grid = SchedGrid::default();
    grid_build(case.cells, &mut grid);
    let (mut cand, mut cpu_fresh) = (Vec::new(), Vec::new());
    let cpu_newcomers = newcomer_schedule(
        case.cells,
        case.prev_cells,
        &grid,
        case.entries,
        &f.excl,
        &mut cand,
        &mut cpu_fresh,
    )
    .unwrap();

    // sched_grid_count → scan.
    let mut offsets = vec![0u32; nseg + 1];
    let mut groups = vec![7u32; (nseg + 1).div_ceil(256)];
    sched_grid_count(&u, case.cells, &mut offsets, &mut groups);
    let out = run_kernel(
        gpu,
        "sched_grid_count",
        &[
            ("sched", bytes(&[u])),
            ("cells", bytes(case.cells)),
            ("sched_grid_offsets", bytes(&vec![7u32; nseg + 1])),
            ("scan_groups", bytes(&vec![7u32; groups.len()])),
        ],
        nseg as u32 + 1,
    )
    .unwrap();
    assert_eq!(
        bytemuck::cast_slice::<u8, u32>(&out["sched_grid_offsets"]),
        &offsets[..],
        "{label}"
    );
    check_groups(&groups, &offsets, &out["scan_groups"], label);
    yarnsim::scan::exclusive_scan(&mut offsets, &mut partials);
    let items = offsets[nseg];
    assert_eq!(items as usize, grid.items().len(), "{label}");

    // sched_grid_write → sort.
    // With room, a capacity past the items by several workgroups, as a grown grid's is: the
    // newcomer kernels' workgroups past the items return at once.
    let mut c0 = fresh_counters();
    c0.grid.capacity =
        items.saturating_sub(case.short).max(1) + if case.short == 0 { 1_000 } else { 0 };
    let gcap = c0.grid.capacity as usize;
    let mut sgrid = vec![KeyValue::default(); gcap];
    let mut c1 = c0;
    // The items' counted sort, which sched_grid_write plans (GpuSort::counted_into_inline): its
    // plan as the sort makes it, the words it rewrites a sentinel.
    let sort_plan =
        yarnsim::sort::SortPlan::odd(gcap as u32, yarnsim::sched::grid::SCHED_GRID_KEY_BITS);
    let (grid_spec, grid_words) = {
        use yarnsim::layout::{CountPlan, COUNT_PLAN_SORT};
        use yarnsim::scan::{slot_record, PLAN_SLOT_WORDS};
        let mut slots: Vec<_> = sort_plan.passes().iter().map(slot_record).collect();
        slots.extend(sort_plan.scan.levels().iter().map(slot_record));
        let spec = CountPlan {
            cap: gcap as u32,
            kind: COUNT_PLAN_SORT,
            num_passes: sort_plan.passes().len() as u32,
            num_levels: sort_plan.scan.levels().len() as u32,
            args_word: PLAN_SLOT_WORDS * slots.len() as u32,
            ..Default::default()
        };
        let mut words = vec![0x0bad_0bad_u32; spec.args_word as usize + 3 * (1 + slots.len())];
        for (k, r) in slots.iter().enumerate() {
            let at = (PLAN_SLOT_WORDS as usize) * k;
            words[at..at + r.len()].copy_from_slice(r);
        }
        (spec, words)
    };
    let mut grid_plan = grid_words.clone();
    sched_grid_write(
        &u,
        case.cells,
        &offsets,
        &mut sgrid,
        &mut c1,
        &grid_spec,
        &mut grid_plan,
    );
    let out = run_kernel(
        gpu,
        "sched_grid_write",
        &[
            ("sched", bytes(&[u])),
            ("cells", bytes(case.cells)),
            ("sched_grid_offsets", bytes(&offsets)),
            ("sched_grid", bytes(&vec![KeyValue::default(); gcap])),
            ("sched_counters", bytes(&[c0])),
            ("plan_spec", bytes(&[grid_spec])),
            ("plan_out", bytes(&grid_words)),
        ],
        gcap as u32,
    )
    .unwrap();
    let gc = bytemuck::cast_slice::<u8, SchedCounters>(&out["sched_counters"])[0];
    assert_eq!(gc, c1, "{label}: sched_grid_write counters");
    assert_eq!(
        bytemuck::cast_slice::<u8, KeyValue>(&out["sched_grid"]),
        &sgrid[..],
        "{label}"
    );
    assert_eq!(
        bytemuck::cast_slice::<u8, u32>(&out["plan_out"]),
        &grid_plan[..],
        "{label}: sched_grid_write's plan"
    );
    // Every digit pass sorts the live items (at most the capacity), in their blocks of 256.
    let live_items = items.min(gcap as u32);
    for k in 0..sort_plan.passes().len() {
        let at = yarnsim::scan::PLAN_SLOT_WORDS as usize * k;
        assert_eq!(
            [grid_plan[at], grid_plan[at + 2]],
            [live_items, live_items.div_ceil(256)],
            "{label}: pass {k} of the plan"
        );
    }
    yarnsim::sort::radix_sort(&mut sgrid, 32, &mut sort_s, &mut sort_h, &mut sort_p);
    if case.short == 0 {
        assert_eq!(&sgrid[..items as usize], grid.items(), "{label}: grid");
    }

    // newcomer_count (its group sums and total: no scan).
    let mut noff = vec![7u32; gcap + 1];
    let mut c2 = c1;
    let mut groups = vec![7u32; (gcap + 1).div_ceil(256)];
    newcomer_count(
        &u,
        case.cells,
        case.prev_cells,
        &sgrid,
        &mut noff,
        &mut c2,
        &mut groups,
    );
    let out = run_kernel(
        gpu,
        "newcomer_count",
        &[
            ("sched", bytes(&[u])),
            ("cells", bytes(case.cells)),
            ("prev_cells", bytes(case.prev_cells)),
            ("sched_grid", bytes(&sgrid)),
            ("newcomer_offsets", bytes(&vec![7u32; gcap + 1])),
            ("sched_counters", bytes(&[c1])),
            ("scan_groups", bytes(&vec![7u32; groups.len()])),
        ],
        gcap as u32 + 1,
    )
    .unwrap();
    let gc = bytemuck::cast_slice::<u8, SchedCounters>(&out["sched_counters"])[0];
    assert_eq!(gc, c2, "{label}: newcomer_count counters");
    assert_eq!(
        bytemuck::cast_slice::<u8, u32>(&out["newcomer_offsets"]),
        &noff[..],
        "{label}"
    );
    // The items' words and their groups' sums; past them, as they were.
    let n = live_items as usize;
    check_groups_past(
        &groups,
        &noff[..n],
        &out["scan_groups"],
        7,
        if case.short == 0 { 3 } else { 0 },
        &format!("{label}: newcomer_count"),
    );
    assert!(
        noff[n..].iter().all(|&v| v == 7),
        "{label}: newcomer_count wrote past the items"
    );
    // Their total, added to the candidates' count (0 before): the pairs by brute force below.
    let total = c2.cand.count;
    assert_eq!(total, noff[..n].iter().sum::<u32>(), "{label}: the total");

    // newcomer_write → sort.
    c2.cand.capacity =
        total.saturating_sub(case.short).max(1) + if case.short == 0 { 5 } else { 0 };
    let ccap = c2.cand.capacity as usize;
    let mut scand = vec![KeyValue::default(); ccap];
    let mut c3 = c2;
    // newcomer_keep's grid (a thread per candidate, plus one), which newcomer_write plans: the
    // plan as SchedGpu makes it (CountedGrid::inline), its argument words a sentinel.
    let (plan_spec, plan_words) = {
        use yarnsim::layout::{CountPlan, GridSpec, COUNT_PLAN_GRIDS};
        let slot = yarnsim::scan::PLAN_SLOT_WORDS as usize;
        let grid = GridSpec {
            add: 1,
            threads_per_item: 1,
            workgroup_size: 256,
            _pad: 0,
        };
        let spec = CountPlan {
            cap: ccap as u32,
            kind: COUNT_PLAN_GRIDS,
            num_levels: 1,
            args_word: slot as u32,
            ..Default::default()
        };
        let mut words = vec![0x0bad_0bad_u32; slot + 4];
        words[..4].copy_from_slice(bytemuck::cast_slice(&[grid]));
        (spec, words)
    };
    let mut plan_cpu = plan_words.clone();
    newcomer_write(
        &u,
        case.cells,
        case.prev_cells,
        &sgrid,
        &noff,
        &groups,
        &mut scand,
        &mut c3,
        &plan_spec,
        &mut plan_cpu,
    );
    let out = run_kernel(
        gpu,
        "newcomer_write",
        &[
            ("sched", bytes(&[u])),
            ("cells", bytes(case.cells)),
            ("prev_cells", bytes(case.prev_cells)),
            ("sched_grid", bytes(&sgrid)),
            ("newcomer_offsets", bytes(&noff)),
            ("scan_groups", bytes(&groups)),
            ("sched_cand", bytes(&vec![KeyValue::default(); ccap])),
            ("sched_counters", bytes(&[c2])),
            ("plan_spec", bytes(&[plan_spec])),
            ("plan_out", bytes(&plan_words)),
        ],
        gcap.max(ccap) as u32,
    )
    .unwrap();
    let gc = bytemuck::cast_slice::<u8, SchedCounters>(&out["sched_counters"])[0];
    assert_eq!(gc, c3, "{label}: newcomer_write counters");
    assert_eq!(
        bytemuck::cast_slice::<u8, KeyValue>(&out["sched_cand"]),
        &scand[..],
        "{label}"
    );
    assert_eq!(
        bytemuck::cast_slice::<u8, u32>(&out["plan_out"]),
        &plan_cpu[..],
        "{label}: newcomer_write's plan"
    );
    // The grid it planned: a thread per live candidate, plus one (capped at the capacity).
    let planned = yarnsim::shaders::dispatch_grid(
        ((c3.cand.count.min(ccap as u32) + 1) as usize).div_ceil(256) as u32,
        1,
    );
    let slot = yarnsim::scan::PLAN_SLOT_WORDS as usize;
    assert_eq!(&plan_cpu[slot..slot + 3], &planned[..], "{label}: the grid");
    let kb = cand_key_bits(u.num_segments);
    // The live candidates only (the slots past them are not written).
    let live = (c3.cand.count as usize).min(ccap);
    yarnsim::sort::radix_sort(
        &mut scand[..live],
        2 * kb,
        &mut sort_s,
        &mut sort_h,
        &mut sort_p,
    );
    if case.short == 0 {
        // By definition: each pair whose boxes share a cell new to one of them, once.
        let (want, met) = new_pairs_by_definition(case.cells, case.prev_cells);
        let got: Vec<(u32, u32)> = scand[..live].iter().map(|kv| cand_pair(kv, kb)).collect();
        let first_difference = |x: &[(u32, u32)]| {
            let k = x.iter().zip(&want).position(|(a, b)| a != b);
            let k = k.unwrap_or(x.len().min(want.len()));
            (k, x.get(k).copied(), want.get(k).copied())
        };
        assert!(
            got == want,
            "{label}: {} candidates, {} by definition; first difference (index, got, wanted): {:?}",
            got.len(),
            want.len(),
            first_difference(&got)
        );
        let cpu: Vec<(u32, u32)> = cand.iter().map(|k| ((k >> 32) as u32, *k as u32)).collect();
        assert!(
            cpu == want,
            "{label}: the CPU run's {} candidates, {} by definition; first difference: {:?}",
            cpu.len(),
            want.len(),
            first_difference(&cpu)
        );
        println!(
            "{label}: {} candidates, one a pair; {met} (segment, cell, partner) meetings, {:.2} a pair",
            want.len(),
            met as f64 / want.len().max(1) as f64
        );
    }

    // newcomer_keep (its group sums and total: no scan).
    let mut keep = vec![0u32; ccap + 1];
    let mut keep_groups = vec![7u32; (ccap + 1).div_ceil(256)];
    let mut c4 = c3;
    newcomer_keep(
        &u,
        &f.segments,
        &f.quad_arc,
        &f.seg_contact,
        case.entries,
        &scand,
        &mut keep,
        &mut keep_groups,
        &mut c4,
    );
    let out = run_kernel(
        gpu,
        "newcomer_keep",
        &[
            ("sched", bytes(&[u])),
            ("segments", bytes(&f.segments)),
            ("quad_arc", bytes(&f.quad_arc)),
            ("seg_contact", bytes(&f.seg_contact)),
            ("entries", bytes(case.entries)),
            ("sched_cand", bytes(&scand)),
            ("fresh_offsets", bytes(&vec![7u32; ccap + 1])),
            ("scan_groups", bytes(&vec![7u32; keep_groups.len()])),
            ("sched_counters", bytes(&[c3])),
        ],
        ccap as u32 + 1,
    )
    .unwrap();
    let gc = bytemuck::cast_slice::<u8, SchedCounters>(&out["sched_counters"])[0];
    assert_eq!(gc, c4, "{label}: newcomer_keep counters");
    assert_eq!(
        bytemuck::cast_slice::<u8, u32>(&out["fresh_offsets"]),
        &keep[..],
        "{label}"
    );
    check_groups(
        &keep_groups,
        &keep,
        &out["scan_groups"],
        &format!("{label}: newcomer_keep"),
    );
    let nfresh = c4.fresh.count;
    assert_eq!(nfresh, keep.iter().sum::<u32>(), "{label}: the new entries");

    // newcomer_compact.
    c4.fresh.capacity =
        nfresh.saturating_sub(case.short).max(1) + if case.short == 0 { 3 } else { 0 };
    let fcap = c4.fresh.capacity as usize;
    let mut fresh = vec![SchedEntry::default(); fcap];
    let mut c5 = c4;
    newcomer_compact(
        &u,
        &f.segments,
        &f.quad_arc,
        &f.seg_contact,
        &scand,
        &keep,
        &keep_groups,
        &mut fresh,
        &mut c5,
    );
    let (g, gc) = run_sched_kernel(
        gpu,
        "newcomer_compact",
        &[
            ("sched", bytes(&[u])),
            ("segments", bytes(&f.segments)),
            ("quad_arc", bytes(&f.quad_arc)),
            ("seg_contact", bytes(&f.seg_contact)),
            ("sched_cand", bytes(&scand)),
            ("fresh_offsets", bytes(&keep)),
            ("scan_groups", bytes(&keep_groups)),
            ("fresh", bytes(&vec![SchedEntry::default(); fcap])),
            ("sched_counters", bytes(&[c4])),
        ],
        ccap as u32,
        "fresh",
    );
    assert_eq!(gc, c5, "{label}: newcomer_compact counters");
    assert_eq!(
        bytemuck::cast_slice::<u8, SchedEntry>(&g),
        &fresh[..],
        "{label}"
    );
    let c4 = c5;

    if case.short == 0 {
        // The chain computes what the CPU run does.
        assert_eq!(c4.errors, 0, "{label}");
        assert_eq!(
            (c4.grid.overflow, c4.cand.overflow, c4.fresh.overflow),
            (0, 0, 0)
        );
        assert_eq!(c4.newcomers as u64, cpu_newcomers, "{label}: newcomers");
        assert_eq!(&fresh[..nfresh as usize], &cpu_fresh[..], "{label}: fresh");
    } else {
        // Short of room at each stage: the overflow flagged at the first stage (later counts are
        // those of the truncated data, and the host reruns).
        assert_eq!(c4.grid.overflow, 1, "{label}");
        assert_eq!(c4.grid.count, items, "{label}");
    }
    println!(
        "{label}: {items} grid items, {} newcomers, {total} candidates, {nfresh} new entries (CPU run: {})",
        c4.newcomers,
        cpu_fresh.len()
    );
    cpu_fresh.len()
}

/// The entry table without every 3rd entry (so that a newcomer search finds both pairs that have
/// an entry and pairs that have none).
fn without_every_third(entries: &[SchedEntry]) -> Vec<SchedEntry> {
    entries
        .iter()
        .enumerate()
        .filter(|(k, _)| k % 3 != 0)
        .map(|(_, e)| *e)
        .collect()
}

#[test]
fn grid_and_newcomer_kernels_match_twins_and_cpu_run() {
    let Some(gpu) = gpu_or_skip("grid_and_newcomer_kernels_match_twins_and_cpu_run") else {
        return;
    };
    let f = process_fixture();
    let nseg = f.segments.len();
    let none = vec![CellBox::default(); nseg];
    // 1. The first step: every cell is new, the table empty: every pair of segments sharing a cell
    //    that the rule does not exclude outright becomes an entry (checked by brute force).
    let n1 = newcomer_chain(
        &gpu,
        &f,
        &NewcomerCase {
            label: "first step",
            cells: &f.cells,
            prev_cells: &none,
            entries: &[],
            short: 0,
        },
    );
    let mut brute = 0;
    for a in 0..nseg {
        for b in a + 1..nseg {
            if f.cells[a].intersects(&f.cells[b])
                && yarnsim::sched::PairRules::segment_class(&f.excl, a as u32, b as u32)
                    != yarnsim::sched::PairClass::All
            {
                brute += 1;
            }
        }
    }
    assert_eq!(n1, brute, "first step: entries vs brute force");
    // 2. A later step: every 3rd segment's previous box one cell lower in x, every 11th in z,
    //    every 5th invalid, every 7th one cell smaller in y (so a pair's first new cell is past
    //    the old boxes in each axis); the table without every 3rd entry (so both found and
    //    missing pairs occur).
    let mut prev = f.cells.clone();
    for (s, p) in prev.iter_mut().enumerate() {
        if s % 3 == 0 {
            p.lo[0] -= 1;
            p.hi[0] -= 1;
        }
        if s % 11 == 0 {
            p.lo[2] -= 1;
            p.hi[2] -= 1;
        }
        if s % 7 == 0 && p.hi[1] > p.lo[1] {
            p.hi[1] -= 1;
        }
        if s % 5 == 0 {
            *p = CellBox::default();
        }
    }
    let table = without_every_third(&f.entries);
    let n2 = newcomer_chain(
        &gpu,
        &f,
        &NewcomerCase {
            label: "moved boxes",
            cells: &f.cells,
            prev_cells: &prev,
            entries: &table,
            short: 0,
        },
    );
    assert!(n2 > 100 && n2 < n1, "{n2} new entries of {n1}");
    // 3. The same with every capacity short: the overflow is flagged alike on both sides.
    newcomer_chain(
        &gpu,
        &f,
        &NewcomerCase {
            label: "short capacities",
            cells: &f.cells,
            prev_cells: &prev,
            entries: &table,
            short: 7,
        },
    );
}

/// `sched_history` on the swatch's real snapshots at a step that examines bins 1 and 2: the
/// history, the snapshots and the previous cell boxes identical on both sides (copies).
#[test]
fn sched_history_matches_twin() {
    let Some(gpu) = gpu_or_skip("sched_history_matches_twin") else {
        return;
    };
    let f = process_fixture();
    let u = SchedUniform {
        bins_due: 2,
        ..f.uniform
    };
    let npts = f.pos.len();
    let (p1, p2) = (&f.snaps[..npts], &f.snaps[npts..2 * npts]);
    let none = vec![CellBox::default(); f.cells.len()];
    let (mut c1, mut c2, mut cs, mut cp) =
        (p1.to_vec(), p2.to_vec(), f.snaps.clone(), none.clone());
    yarnsim::sched::sched_history(&u, &f.pos, &f.cells, &mut c1, &mut c2, &mut cs, &mut cp);
    let threads = npts.max(f.cells.len()) as u32;
    let out = run_kernel(
        &gpu,
        "sched_history",
        &[
            ("sched", bytes(&[u])),
            ("pos", bytes(&f.pos)),
            ("cells", bytes(&f.cells)),
            ("prev1", bytes(p1)),
            ("prev2", bytes(p2)),
            ("snaps", bytes(&f.snaps)),
            ("prev_cells", bytes(&none)),
        ],
        threads,
    )
    .unwrap();
    let pts = |n: &str| bytemuck::cast_slice::<u8, [f32; 4]>(&out[n]).to_vec();
    assert_eq!(pts("prev1"), c1);
    assert_eq!(pts("prev2"), c2);
    assert_eq!(pts("snaps"), cs);
    assert_eq!(
        bytemuck::cast_slice::<u8, CellBox>(&out["prev_cells"]),
        &cp[..]
    );
    // Bins 1 and 2 took the positions, the others kept their snapshots.
    let nb = u.max_bin as usize;
    assert!(nb > 3);
    assert_eq!(
        &cs[..2 * npts],
        &[f.pos.clone(), f.pos.clone()].concat()[..]
    );
    assert_eq!(&cs[2 * npts..], &f.snaps[2 * npts..]);
    assert_eq!((c1, c2, cp), (f.pos.clone(), p1.to_vec(), f.cells.clone()));
}

/// `sched_sizes` through its two phases on the swatch's uniform, with and without room in the
/// entry and release capacities (between them `sched_p1` as `entries_compact` writes it, the kept
/// table's record): the counters, the table length and the three `sched` records identical on
/// both sides.
#[test]
fn sched_sizes_matches_twin() {
    use yarnsim::layout::SchedPhase;
    use yarnsim::sched::{sched_sizes, SIZES_MERGED, SIZES_START};
    let Some(gpu) = gpu_or_skip("sched_sizes_matches_twin") else {
        return;
    };
    let f = process_fixture();
    let n0 = f.entries.len() as u32;
    let step = SchedUniform {
        num_released: 3,
        num_entries: 12345,
        num_fresh: 678,
        ..f.uniform
    };
    // Keep every entry but every 4th; release slots 5, 0, 9.
    let mut keep: Vec<u32> = (0..=n0).map(|e| (e % 4 != 0 && e < n0) as u32).collect();
    let mut partials = Vec::new();
    yarnsim::scan::exclusive_scan(&mut keep, &mut partials);
    let release_offsets = [0u32, 5, 5, 14];
    let kept = keep[n0 as usize];
    // (The table always fits the entry capacity: it fitted last step, and kept ≤ n0.)
    for (entries_cap, release_cap, label) in [(n0 + 500, 14, "room"), (kept + 100, 13, "short")] {
        let mut counters = fresh_counters();
        counters.examined = 77;
        counters.fresh.count = 420;
        counters.fresh.capacity = 400;
        counters.entries.capacity = entries_cap;
        counters.release.capacity = release_cap;
        let mut state = vec![n0, 0, 0, 0];
        let (mut p0, mut p1, mut p2) = Default::default();
        let mut g_counters = counters;
        let mut g_state = state.clone();
        let (mut g0, mut g1, mut g2): (SchedUniform, SchedUniform, SchedUniform) =
            Default::default();
        for phase in [SIZES_START, SIZES_MERGED] {
            let ph = SchedPhase {
                phase,
                ..Default::default()
            };
            if phase == SIZES_MERGED {
                // (newcomer_compact's count, after the start reset it.)
                counters.fresh.count = 420;
                g_counters.fresh.count = 420;
                // (entries_compact's record of the kept table.)
                p1 = SchedUniform {
                    num_entries: kept,
                    ..p0
                };
                g1 = p1;
            }
            sched_sizes(
                &ph,
                &step,
                &release_offsets,
                &mut counters,
                &mut state,
                &mut p0,
                &mut p1,
                &mut p2,
            );
            let out = run_kernel(
                &gpu,
                "sched_sizes",
                &[
                    ("sched_phase", bytes(&[ph])),
                    ("sched_step", bytes(&[step])),
                    ("release_offsets", bytes(&release_offsets)),
                    ("sched_counters", bytes(&[g_counters])),
                    ("sched_state", bytes(&g_state)),
                    ("sched_p0", bytes(&[g0])),
                    ("sched_p1", bytes(&[g1])),
                    ("sched_p2", bytes(&[g2])),
                ],
                1,
            )
            .unwrap();
            g_counters = bytemuck::cast_slice(&out["sched_counters"])[0];
            g_state = bytemuck::cast_slice(&out["sched_state"]).to_vec();
            g0 = bytemuck::cast_slice(&out["sched_p0"])[0];
            g1 = bytemuck::cast_slice(&out["sched_p1"])[0];
            g2 = bytemuck::cast_slice(&out["sched_p2"])[0];
            assert_eq!(g_counters, counters, "{label} phase {phase}");
            assert_eq!(g_state, state, "{label} phase {phase}");
            assert_eq!((g0, g1, g2), (p0, p1, p2), "{label} phase {phase}");
        }
        assert_eq!(p0.num_entries, n0);
        assert_eq!(counters.examined, 0, "reset at the start");
        assert_eq!(counters.entries.count, kept + 420);
        if label == "room" {
            assert_eq!(
                (p1.num_fresh, p2.num_entries, state[0]),
                (400, kept + 400, kept + 400)
            );
            assert_eq!(
                (counters.entries.overflow, counters.release.overflow),
                (0, 0)
            );
        } else {
            assert_eq!((p1.num_fresh, p2.num_entries), (100, entries_cap));
            assert_eq!(
                (counters.entries.overflow, counters.release.overflow),
                (1, 1)
            );
        }
        assert_eq!(counters.release.count, 14);
        assert_eq!(
            (p2.step, p2.bins_due, p2.num_released),
            (step.step, step.bins_due, 3)
        );
    }
}

/// `release_scan_sizes` (the releases' count and scan and `sched_sizes`' merged phase in one
/// workgroup) against the three dispatches it replaces on the same GPU: `release_count`, the grouped
/// scan of its counts (`scan_add` with its group sums) and `sched_sizes` (merged). On releases from
/// the swatch's sets (as in `release_count_and_mark_match_twins`), on none, and on 5,000 of them
/// (three of the kernel's chunks), each with and without room in the entry and release capacities:
/// the offsets (over a buffer that starts poisoned one word past the total), the counters, the table
/// length and the two records identical, and equal to the twin's.
#[test]
fn release_scan_sizes_is_the_three_kernels_bit_for_bit() {
    use yarnsim::layout::SchedPhase;
    use yarnsim::sched::{release_scan_sizes, SIZES_MERGED};
    let Some(gpu) = gpu_or_skip("release_scan_sizes_is_the_three_kernels_bit_for_bit") else {
        return;
    };
    let f = process_fixture();
    let mut swatch = releases_of(&f.boxes);
    swatch.push(Release {
        before: yarnsim::sched::EMPTY_BOX,
        after: yarnsim::sched::EMPTY_BOX,
    });
    let long: Vec<Release> = swatch.iter().cycle().take(5_000).copied().collect();
    let mut chunks_seen = 0;
    for (released, what) in [(&swatch, "swatch"), (&vec![], "none"), (&long, "5,000")] {
        let nr = released.len();
        let step = SchedUniform {
            num_released: nr as u32,
            ..f.uniform
        };
        let mut counts = vec![0u32; nr + 1];
        let mut groups = vec![0u32; (nr + 1).div_ceil(256)];
        release_count(&step, released, &mut counts, &mut groups);
        let total: u32 = counts.iter().sum();
        assert!(nr == 0 || total > nr as u32, "{what}: {total} slots");
        for (room, label) in [(true, "room"), (false, "short")] {
            let mut counters = fresh_counters();
            counters.fresh.count = 420;
            counters.fresh.capacity = 400;
            counters.entries.capacity = if room { 90_000 } else { 10_100 };
            counters.release.capacity = if room { total } else { total.saturating_sub(1) };
            let p1 = SchedUniform {
                num_entries: 10_000,
                num_fresh: 3,
                ..step
            };
            let p2 = SchedUniform {
                num_entries: 5,
                ..Default::default()
            };
            let state = [77u32, 1, 2, 3];
            // Room for one offset past the total, which must stay poisoned.
            let poison = vec![0xdead_beefu32; nr + 2];
            let blocks = |offsets: &[u32]| -> Vec<(&str, Vec<u8>)> {
                vec![
                    ("release_offsets", bytes(offsets).to_vec()),
                    ("sched_counters", bytes(&[counters]).to_vec()),
                    ("sched_state", bytes(&state).to_vec()),
                    ("sched_p1", bytes(&[p1]).to_vec()),
                    ("sched_p2", bytes(&[p2]).to_vec()),
                ]
            };
            // The fused kernel.
            let mut inputs = vec![
                ("sched_step", bytes(&[step]).to_vec()),
                ("released", bytes(&released_or_one(released)).to_vec()),
            ];
            inputs.extend(blocks(&poison));
            let ins: Vec<(&str, &[u8])> = inputs.iter().map(|(n, b)| (*n, &b[..])).collect();
            let fused = run_kernel(&gpu, "release_scan_sizes", &ins, 256).unwrap();
            // The three kernels.
            let out = run_kernel(
                &gpu,
                "release_count",
                &[
                    ("sched", bytes(&[step])),
                    ("released", bytes(&released_or_one(released))),
                    ("release_offsets", bytes(&poison)),
                    ("scan_groups", bytes(&vec![9u32; groups.len()])),
                ],
                nr as u32 + 1,
            )
            .unwrap();
            let plan = yarnsim::scan::ScanPlan::grouped(nr as u32 + 1);
            let down: Vec<_> = plan.dispatches().collect();
            assert_eq!(down.len(), 1, "{what}: a grouped scan is one scan_add");
            let out = run_kernel(
                &gpu,
                "scan_add",
                &[
                    ("scan_pass", bytes(&[plan.levels()[0]])),
                    ("scan_data", &out["release_offsets"]),
                    ("scan_partials", &out["scan_groups"]),
                ],
                down[0].threads,
            )
            .unwrap();
            let scanned = out["scan_data"].clone();
            let ph = SchedPhase {
                phase: SIZES_MERGED,
                ..Default::default()
            };
            let out = run_kernel(
                &gpu,
                "sched_sizes",
                &[
                    ("sched_phase", bytes(&[ph])),
                    ("sched_step", bytes(&[step])),
                    ("release_offsets", &scanned),
                    ("sched_counters", bytes(&[counters])),
                    ("sched_state", bytes(&state)),
                    ("sched_p0", bytes(&[SchedUniform::default()])),
                    ("sched_p1", bytes(&[p1])),
                    ("sched_p2", bytes(&[p2])),
                ],
                1,
            )
            .unwrap();
            let case = format!("{what}, {label}");
            same_words(
                &fused["release_offsets"],
                &scanned,
                &format!("{case}: release_offsets"),
            );
            for name in ["sched_counters", "sched_state", "sched_p1", "sched_p2"] {
                assert_eq!(fused[name], out[name], "{case}: {name}");
            }
            // The twin.
            let (mut c, mut st, mut q1, mut q2) = (counters, state, p1, p2);
            let mut offsets = poison.clone();
            release_scan_sizes(
                &step,
                released,
                &mut offsets,
                &mut c,
                &mut st,
                &mut q1,
                &mut q2,
            );
            same_words(
                &fused["release_offsets"],
                bytes(&offsets),
                &format!("{case}: twin"),
            );
            assert_eq!(fused["sched_counters"], bytes(&[c]), "{case}: twin");
            assert_eq!(fused["sched_state"], bytes(&st), "{case}: twin");
            assert_eq!(fused["sched_p1"], bytes(&[q1]), "{case}: twin");
            assert_eq!(fused["sched_p2"], bytes(&[q2]), "{case}: twin");
            assert_eq!(offsets[nr], total, "{case}");
            assert_eq!(offsets[nr + 1], 0xdead_beef, "{case}");
            assert_eq!(c.release.count, total, "{case}");
            assert_eq!(c.release.overflow, (!room && total > 0) as u32, "{case}");
            assert_eq!(c.entries.overflow, !room as u32, "{case}");
            assert_eq!(q2.num_entries, 10_000 + q1.num_fresh, "{case}");
        }
        chunks_seen = chunks_seen.max((nr + 1).div_ceil(2048));
    }
    assert_eq!(chunks_seen, 3);
}

/// `a` and `b` the same 32-bit words, else a panic naming `what` and the first that differs.
fn same_words(a: &[u8], b: &[u8], what: &str) {
    let (x, y): (&[u32], &[u32]) = (bytemuck::cast_slice(a), bytemuck::cast_slice(b));
    assert_eq!(x.len(), y.len(), "{what}: lengths");
    if let Some(k) = (0..x.len()).find(|&k| x[k] != y[k]) {
        panic!("{what}: word {k} of {}: {} against {}", x.len(), x[k], y[k]);
    }
}

/// `released`, or one empty release when it is empty (a binding may not be empty).
fn released_or_one(released: &[Release]) -> Vec<Release> {
    if released.is_empty() {
        vec![Release {
            before: yarnsim::sched::EMPTY_BOX,
            after: yarnsim::sched::EMPTY_BOX,
        }]
    } else {
        released.to_vec()
    }
}

/// The listed newcomer search (`newcomer_list_write`, the GPU step's `newcomers` budget 1) against
/// its twin and against the grid: on the swatch fixture's cell boxes with every 40th segment's
/// previous box one cell lower in x (and every 7th of those invalid, as a segment new to the
/// grid), its candidates, sorted and made unique, are those of the CPU run's grid search
/// (`newcomer_schedule`), so the new entries that `newcomer_keep` and `newcomer_compact` make of
/// them are too; the GPU's (appended in the order its threads come) equal the twin's once sorted.
/// `newcomer_list_compact` (sort, unique, keep and compact in one workgroup) makes of the GPU's
/// candidates the CPU run's new entries, with room and short of it. Two more cases: with more
/// segments listed than it takes it writes nothing, and with too little room it flags the
/// overflow with the full count. All outputs are discrete.
#[test]
fn listed_newcomer_search_matches_twin_and_the_grid() {
    use yarnsim::layout::{KeyValue, NEWCOMER_LIST_MAX};
    use yarnsim::sched::{cand_key_bits, cand_pair, grid_build, newcomer_list_write};
    use yarnsim::sched::{newcomer_schedule, SchedGrid};
    let Some(gpu) = gpu_or_skip("listed_newcomer_search_matches_twin_and_the_grid") else {
        return;
    };
    let f = process_fixture();
    let nseg = f.segments.len();
    // The table without every 3rd entry, so that some of the pairs found are new.
    let table = without_every_third(&f.entries);
    let u = SchedUniform {
        num_entries: table.len() as u32,
        ..f.uniform
    };
    let k = cand_key_bits(u.num_segments);
    // `newcomer_list_compact` on the GPU: the new entries (room for `fcap`) and the counters.
    let list_compact_gpu = |keys: &[KeyValue], counters: SchedCounters, fcap: usize| {
        run_sched_kernel(
            &gpu,
            "newcomer_list_compact",
            &[
                ("sched", bytes(&[u])),
                ("segments", bytes(&f.segments)),
                ("quad_arc", bytes(&f.quad_arc)),
                ("seg_contact", bytes(&f.seg_contact)),
                ("entries", bytes(&table)),
                ("sched_cand", bytes(keys)),
                ("fresh", bytes(&vec![SchedEntry::default(); fcap])),
                ("sched_counters", bytes(&[counters])),
            ],
            256,
            "fresh",
        )
    };
    let shifted = |every: usize| -> Vec<CellBox> {
        f.cells
            .iter()
            .enumerate()
            .map(|(s, c)| {
                let mut p = *c;
                if s % every == 0 {
                    p.lo[0] -= 1;
                    p.hi[0] -= 1;
                    if s % (7 * every) == 0 {
                        p = CellBox::default();
                    }
                }
                p
            })
            .collect()
    };
    for (label, every, room) in [
        ("few moved", 40, true),
        ("few moved, short of room", 40, false),
        ("many moved", 3, true),
    ] {
        let prev = shifted(every);
        let entering: Vec<u32> = (0..nseg as u32)
            .filter(|&s| !f.cells[s as usize].within(&prev[s as usize]))
            .collect();
        let listed = entering.len().min(NEWCOMER_LIST_MAX as usize);
        let mut movers = vec![0u32; NEWCOMER_LIST_MAX as usize];
        movers[..listed].copy_from_slice(&entering[..listed]);
        // The grid's candidates (the CPU run), as keys a << 32 | b.
        let mut grid = SchedGrid::default();
        grid_build(&f.cells, &mut grid);
        let (mut cpu_cand, mut fresh) = (Vec::new(), Vec::new());
        newcomer_schedule(
            &f.cells,
            &prev,
            &grid,
            &table,
            &f.excl,
            &mut cpu_cand,
            &mut fresh,
        )
        .unwrap();
        let mut c0 = fresh_counters();
        c0.entered = entering.len() as u32;
        c0.cand.capacity = if room {
            4 * cpu_cand.len() as u32 + 16
        } else {
            cpu_cand.len() as u32 / 2
        };
        let cap = c0.cand.capacity as usize;
        let mut cand = vec![KeyValue::default(); cap];
        let mut c1 = c0;
        newcomer_list_write(&u, &f.cells, &prev, &movers, &mut cand, &mut c1);
        let (g, gc) = run_sched_kernel(
            &gpu,
            "newcomer_list_write",
            &[
                ("sched", bytes(&[u])),
                ("cells", bytes(&f.cells)),
                ("prev_cells", bytes(&prev)),
                ("movers", bytes(&movers)),
                ("sched_cand", bytes(&vec![KeyValue::default(); cap])),
                ("sched_counters", bytes(&[c0])),
            ],
            nseg as u32,
            "sched_cand",
        );
        assert_eq!(gc, c1, "{label}: counters");
        let written = (c1.cand.count as usize).min(cap);
        let sorted = |kv: &[KeyValue]| {
            let mut v: Vec<u64> = kv
                .iter()
                .map(|x| {
                    let (a, b) = cand_pair(x, k);
                    ((a as u64) << 32) | b as u64
                })
                .collect();
            v.sort_unstable();
            v
        };
        let g_keys: Vec<KeyValue> = bytemuck::pod_collect_to_vec(&g);
        let g_cand = sorted(&g_keys[..written]);
        let t_cand = sorted(&cand[..written]);
        // (Short of room, which candidates got a slot depends on the order: only the counts then.)
        if c1.cand.overflow == 0 {
            assert_eq!(g_cand, t_cand, "{label}: candidates, GPU vs twin");
        }
        println!(
            "{label}: {} segments entered a cell, {} candidates listed, {} of the grid's (unique), {} new entries",
            entering.len(),
            c1.cand.count,
            cpu_cand.len(),
            fresh.len()
        );
        if entering.len() > NEWCOMER_LIST_MAX as usize {
            assert_eq!(c1.cand.count, 0, "{label}: wrote with too many listed");
            assert!(!cpu_cand.is_empty(), "{label}: the grid found nothing");
            continue;
        }
        assert!(
            entering.len() >= 16,
            "{label}: too few segments entered a cell"
        );
        if !room {
            assert_eq!(c1.cand.overflow, 1, "{label}");
            assert!(c1.cand.count as usize > cap, "{label}");
            continue;
        }
        assert_eq!(c1.cand.overflow, 0, "{label}");
        let mut unique = t_cand.clone();
        unique.dedup();
        assert!(unique.len() < t_cand.len(), "{label}: no pair found twice");
        assert_eq!(unique, cpu_cand, "{label}: candidates, listed vs grid");
        // newcomer_list_compact on the GPU's candidates (in the order its threads appended them),
        // and its twin: the new entries of the CPU run's grid search.
        for fcap in [fresh.len() as u32 + 5, fresh.len() as u32 / 2] {
            let mut c2 = gc;
            c2.fresh.capacity = fcap;
            let mut t_fresh = vec![SchedEntry::default(); fcap as usize];
            let mut c3 = c2;
            yarnsim::sched::newcomer_list_compact(
                &u,
                &f.segments,
                &f.quad_arc,
                &f.seg_contact,
                &table,
                &g_keys,
                &mut t_fresh,
                &mut c3,
            );
            let (gf, gc3) = list_compact_gpu(&g_keys, c2, fcap as usize);
            assert_eq!(gc3, c3, "{label}: newcomer_list_compact counters");
            let g_fresh: Vec<SchedEntry> = bytemuck::pod_collect_to_vec(&gf);
            assert_eq!(g_fresh, t_fresh, "{label}: new entries, GPU vs twin");
            assert_eq!(c3.fresh.count as usize, fresh.len(), "{label}: new entries");
            let stored = fresh.len().min(fcap as usize);
            assert_eq!(
                &t_fresh[..stored],
                &fresh[..stored],
                "{label}: listed vs grid"
            );
            assert_eq!(c3.fresh.overflow, (fresh.len() > fcap as usize) as u32);
        }
        assert!(!fresh.is_empty(), "{label}: no new entry");
    }
    // newcomer_list_compact with more candidates than it takes: no entry, and the count says so.
    let mut c = fresh_counters();
    c.cand.count = yarnsim::layout::NEWCOMER_LIST_CANDIDATES + 1;
    c.cand.capacity = 2 * c.cand.count;
    c.fresh.count = 77;
    let keys = vec![KeyValue::default(); c.cand.capacity as usize];
    let (_, gc) = list_compact_gpu(&keys, c, 16);
    assert_eq!(gc.fresh.count, 0, "too many candidates");
}

/// No pair is excluded or mixed (`newcomer_schedule`'s rules for a fixture without yarns).
struct Clear;

impl yarnsim::sched::PairRules for Clear {
    fn segment_class(&self, _: u32, _: u32) -> yarnsim::sched::PairClass {
        yarnsim::sched::PairClass::Clear
    }
    fn excluded(&self, _: u32, _: u32, _: u32, _: u32) -> bool {
        false
    }
}

/// A hash run longer than `SCHED_MAX_CELL_RUN`: every segment's box is the same one cell, where
/// all but segments 9 and 7 (whose boxes were elsewhere last step: newcomers) were already.
/// `newcomer_count` raises `ERROR_GRID_CELL_FULL` and names segment 7, the lowest newcomer, in
/// `first_bad_segment`, as its twin does; the counters' error (`sched::counters_error`, which the
/// GPU step reports) is the CPU step's (`newcomer_schedule`).
#[test]
fn newcomer_count_names_the_segment_of_a_full_cell_run() {
    use yarnsim::layout::{KeyValue, ERROR_GRID_CELL_FULL};
    use yarnsim::sched::{grid_build, newcomer_count, newcomer_schedule, SchedGrid};
    let Some(gpu) = gpu_or_skip("newcomer_count_names_the_segment_of_a_full_cell_run") else {
        return;
    };
    let n = yarnsim::sched::grid::SCHED_MAX_CELL_RUN as usize + 100;
    // (lo[3] = 1: a valid box.)
    let here = CellBox {
        lo: [3, -4, 5, 1],
        hi: [3, -4, 5, 0],
    };
    let elsewhere = CellBox {
        lo: [30, -4, 5, 1],
        hi: [30, -4, 5, 0],
    };
    let cells = vec![here; n];
    let mut prev = vec![here; n];
    prev[9] = elsewhere;
    prev[7] = elsewhere;
    let u = SchedUniform {
        num_segments: n as u32,
        ..Default::default()
    };
    let mut grid = SchedGrid::default();
    grid_build(&cells, &mut grid);
    let items: Vec<KeyValue> = grid.items().to_vec();
    assert_eq!(items.len(), n);
    let mut c1 = fresh_counters();
    c1.grid.count = n as u32;
    c1.grid.capacity = n as u32;
    let mut c2 = c1;
    let mut noff = vec![7u32; n + 1];
    let mut groups = vec![7u32; (n + 1).div_ceil(256)];
    newcomer_count(&u, &cells, &prev, &items, &mut noff, &mut c2, &mut groups);
    assert_eq!(c2.errors, ERROR_GRID_CELL_FULL);
    assert_eq!(c2.first_bad_segment, 7);
    let out = run_kernel(
        &gpu,
        "newcomer_count",
        &[
            ("sched", bytes(&[u])),
            ("cells", bytes(&cells)),
            ("prev_cells", bytes(&prev)),
            ("sched_grid", bytes(&items)),
            ("newcomer_offsets", bytes(&vec![7u32; n + 1])),
            ("sched_counters", bytes(&[c1])),
            ("scan_groups", bytes(&vec![7u32; groups.len()])),
        ],
        n as u32 + 1,
    )
    .unwrap();
    let gc = bytemuck::cast_slice::<u8, SchedCounters>(&out["sched_counters"])[0];
    assert_eq!(gc, c2, "newcomer_count's counters");
    let cpu = newcomer_schedule(
        &cells,
        &prev,
        &grid,
        &[],
        &Clear,
        &mut Vec::new(),
        &mut Vec::new(),
    );
    assert_eq!(
        yarnsim::sched::counters_error(&gc).map(Err::<u64, _>),
        Some(cpu),
        "the GPU's counters' error and the CPU step's"
    );
}
