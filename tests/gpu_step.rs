//! The whole GPU time step against the CPU path, run for run: the same scene stepped on both
//! backends stays together, two GPU runs are bitwise identical, and errors the kernels flag reach
//! the host with their step.
//!
//! Tolerance of the whole-run comparison: positions within 1e-3 r after 300 steps. Each kernel
//! agrees with its twin to a few f32 roundings per step (their parity tests); 300 steps of a
//! hanging, colliding swatch amplify such differences by far less than the 1e-3 r / 1e-7 r ≈ 10⁴
//! that separates this bound from one rounding of a coordinate of order 1 cm.

#[path = "support/fixture.rs"]
mod fixture;
#[path = "support/rng.rs"]
mod rng;

use rng::Rng;
use yarnsim::acl::gpu::AclCaps;
use yarnsim::gpu::testing::gpu_or_skip;
use yarnsim::gpu_step::GpuSim;
use yarnsim::sim::SegmentValue;

fn run_gpu(gpu: &yarnsim::gpu::Gpu, sets: &[&str], steps: usize) -> GpuSim {
    let sim = fixture::scene_sim("tiny", sets, 0);
    let contact = fixture::scene_contact("tiny", sets);
    let mut g = GpuSim::new(gpu, sim, &contact).unwrap_or_else(|e| panic!("{e}"));
    let mut left = steps;
    while left > 0 {
        let k = left.min(50);
        g.steps(k).unwrap_or_else(|e| panic!("{e}"));
        left -= k;
    }
    g.download().unwrap();
    g
}

/// 300 steps of `scenes/tiny.toml` with overrides `sets` on both paths: positions within 1e-3 r at
/// the end and, with contact, the touching-pair counts equal at every step (the CPU runs a frame per
/// step, so each frame record is one step's count; the GPU reports each step of a batch).
fn whole_run_parity(test: &str, sets: &[&str]) {
    let Some(gpu) = gpu_or_skip(test) else {
        return;
    };
    const STEPS: usize = 300;
    let mut sets = sets.to_vec();
    sets.push("simulation.fps=16200");
    let sets = &sets[..];
    let sim = fixture::scene_sim("tiny", sets, 0);
    let mut g = GpuSim::new(&gpu, sim, &fixture::scene_contact("tiny", sets)).unwrap();
    let mut cpu = fixture::scene_sim("tiny", sets, 0);
    assert_eq!(cpu.params.steps_per_frame, 1);
    let mut touching_total = 0.0;
    // ACL: per step, the sets, rebuilds and touching pairs of both paths (compared after the run).
    let mut acl_counts: Vec<([u32; 3], [f64; 3])> = Vec::new();
    for batch in 0..STEPS / 60 {
        g.steps(60).unwrap_or_else(|e| panic!("{e}"));
        if sets.contains(&"contact.model=acl") {
            for &gpu_counts in g.batch_acl_counts() {
                let c = cpu.frame().unwrap();
                let get = |k: &str| c.contact.iter().find(|(n, _)| *n == k).unwrap().1;
                acl_counts.push((
                    gpu_counts,
                    [get("contact_sets"), get("rebuilds"), get("touching_pairs")],
                ));
            }
            continue;
        }
        for (i, &gpu_count) in g.batch_touching_pairs().iter().enumerate() {
            let c = cpu.frame().unwrap();
            if let Some((_, cpu_count)) = c.contact.iter().find(|(k, _)| *k == "touching_pairs") {
                let step = batch * 60 + i;
                assert_eq!(
                    gpu_count as f64, *cpu_count,
                    "step {step}: touching pairs GPU vs CPU"
                );
                touching_total += cpu_count;
            }
        }
    }
    g.download().unwrap();
    assert_eq!(g.sim.steps, STEPS as u64);
    assert_eq!(cpu.steps, STEPS as u64);
    if sets.contains(&"contact.model=exact") {
        assert!(
            touching_total > 1000.0,
            "hardly any contact ({touching_total})"
        );
    }
    if !acl_counts.is_empty() {
        check_acl_counts(test, &acl_counts);
    }
    let r = cpu.params.radius;
    let (worst, at) = fixture::max_rel_diff(&g.sim.pos, &cpu.pos, r);
    eprintln!("{test}: worst position difference after {STEPS} steps: {worst:.3e} r (point {at})");
    assert!(
        worst < 1e-3,
        "GPU and CPU positions differ by {worst:e} r at point {at} after {STEPS} steps"
    );
    // The run did something: points moved by far more than the bound.
    let start = fixture::scene_sim("tiny", sets, 0);
    let (moved, _) = fixture::max_rel_diff(&start.pos, &cpu.pos, r);
    assert!(moved > 0.05, "the swatch barely moved ({moved} r)");
}

/// ACL's counts per step, GPU against CPU. The sets and the rebuilds agree at every step unless a
/// set's invalidation sits on its threshold within the rotation's tolerance (tests/gpu_acl.rs: the
/// polar iteration is within its bound of the CPU's, not bitwise): such a borderline decision
/// rebuilds one set on one path and not on the other, so a step may differ by a rebuild, and the
/// rebuilt set's box by a set. Bound: at most 1 set and 2 rebuilds apart at any step, and the
/// rebuilds summed over the run within 2% (measured: identical on lavapipe).
///
/// The touching pairs (the sets' counts at their last rebuilds, summed) are equal at every step
/// until the first step whose sets or rebuilds differ: both paths decide a pair touching with the
/// same f32 operations on the same rebuilt sets. After it they are not compared, since a set
/// rebuilt on one path only keeps a different count until its next rebuild on the other.
fn check_acl_counts(test: &str, counts: &[([u32; 3], [f64; 3])]) {
    let (mut gpu_total, mut cpu_total, mut differing) = (0u64, 0.0f64, 0);
    let mut touching_compared = 0;
    for (step, (g, c)) in counts.iter().enumerate() {
        let (ds, dr) = ((g[0] as f64 - c[0]).abs(), (g[1] as f64 - c[1]).abs());
        assert!(
            ds <= 1.0 && dr <= 2.0,
            "step {step}: sets / rebuilds GPU {g:?} vs CPU {c:?}"
        );
        differing += (ds + dr > 0.0) as usize;
        if differing == 0 {
            assert_eq!(
                g[2] as f64, c[2],
                "step {step}: touching pairs GPU {g:?} vs CPU {c:?}"
            );
            touching_compared += (c[2] > 0.0) as usize;
        }
        gpu_total += g[1] as u64;
        cpu_total += c[1];
    }
    eprintln!(
        "{test}: {} steps, rebuilds GPU {gpu_total} CPU {cpu_total}, {differing} steps with different counts, {} sets at the end",
        counts.len(),
        counts.last().map_or(0, |x| x.0[0])
    );
    assert!(cpu_total > 0.0, "no rebuild at all");
    assert!(
        touching_compared > 0,
        "no step with touching pairs compared"
    );
    assert!(
        (gpu_total as f64 - cpu_total).abs() <= 0.02 * cpu_total,
        "rebuilds over the run: GPU {gpu_total} vs CPU {cpu_total}"
    );
}

#[test]
fn gpu_step_matches_cpu_without_contact() {
    whole_run_parity(
        "gpu_step_matches_cpu_without_contact",
        &["contact.model=none"],
    );
}

/// Exact contact: the swatch hangs from its pins, its loops press on each other, and its lower
/// edge falls onto the floor, raised to 0.16 cm below it (it lands after about 140 of the 300 steps).
/// Touching-pair counts must agree at every step: both paths decide touching with the same f32
/// operations (on an adapter that fuses multiply-adds, a pair within rounding of 2r could flip,
/// which this would show).
#[test]
fn gpu_step_matches_cpu_with_exact_contact() {
    whole_run_parity(
        "gpu_step_matches_cpu_with_exact_contact",
        &["contact.model=exact", "obstacle.0.point=[0, 0.7, 0]"],
    );
}

/// ACL (the default model): the swatch hangs and its lower edge lands on the raised floor, as with
/// exact contact above; positions within 1e-3 r after 300 steps, counts as [`check_acl_counts`] says.
#[test]
fn gpu_step_matches_cpu_with_acl() {
    whole_run_parity(
        "gpu_step_matches_cpu_with_acl",
        &["contact.model=acl", "obstacle.0.point=[0, 0.7, 0]"],
    );
}

/// τ = 0 on the GPU rebuilds every set every step, so ACL's force is the exact penalty force of its
/// sets' touching pairs, which are all of them (the scheduler's safety): 60 steps with it and with
/// the GPU exact path stay within 1e-4 r (the two sum the same pair forces in different orders, a
/// few roundings per step; 60 steps amplify that far less than the 10³ between this bound and one
/// rounding of an order-1 cm coordinate).
#[test]
fn gpu_acl_with_tau_zero_reproduces_the_gpu_exact_force() {
    let Some(gpu) = gpu_or_skip("gpu_acl_with_tau_zero_reproduces_the_gpu_exact_force") else {
        return;
    };
    let floor = "obstacle.0.point=[0, 0.7, 0]";
    let acl = run_gpu(
        &gpu,
        &["contact.model=acl", "contact.tolerance=0", floor],
        60,
    );
    let exact = run_gpu(&gpu, &["contact.model=exact", floor], 60);
    let r = acl.sim.params.radius;
    let (worst, at) = fixture::max_rel_diff(&acl.sim.pos, &exact.sim.pos, r);
    eprintln!("τ = 0 vs exact on the GPU after 60 steps: {worst:.3e} r (point {at})");
    assert!(worst < 1e-4, "{worst:e} r at point {at}");
    let start = fixture::scene_sim("tiny", &[floor], 0);
    let (moved, _) = fixture::max_rel_diff(&start.pos, &exact.sim.pos, r);
    assert!(moved > 0.01, "the swatch barely moved ({moved} r)");
}

/// A deliberately small capacity for every contact output grows and reruns, and the result equals
/// a run with ample capacity, bitwise.
#[test]
fn contact_overflow_grows_and_reruns_identically() {
    let Some(gpu) = gpu_or_skip("contact_overflow_grows_and_reruns_identically") else {
        return;
    };
    let sets = ["contact.model=exact"];
    let run = |caps: Option<(u32, u32, u32)>| {
        let sim = fixture::scene_sim("tiny", &sets, 0);
        let mut g = GpuSim::new(&gpu, sim, &fixture::scene_contact("tiny", &sets)).unwrap();
        if let Some(c) = caps {
            g.set_contact_capacities(c).unwrap();
        }
        for _ in 0..2 {
            g.steps(40).unwrap();
        }
        g.download().unwrap();
        g
    };
    let small = run(Some((16, 16, 16)));
    let ample = run(None);
    assert!(
        small.capacity_grows() >= 2,
        "grew {} times",
        small.capacity_grows()
    );
    assert_eq!(ample.capacity_grows(), 0);
    let (s, a) = (
        small.contact_capacities().unwrap(),
        ample.contact_capacities().unwrap(),
    );
    assert!(s.0 > 16 && s.1 > 16, "{s:?}");
    eprintln!("capacities grown from 16 to {s:?} (ample run: {a:?})");
    let bits = |p: &[[f32; 4]]| p.iter().flatten().map(|x| x.to_bits()).collect::<Vec<_>>();
    assert!(
        bits(&small.sim.pos) == bits(&ample.sim.pos),
        "positions differ"
    );
    assert!(
        bits(&small.sim.vel) == bits(&ample.sim.vel),
        "velocities differ"
    );
}

/// ACL's capacities set far too small grow, by reruns and then ahead of need between batches
/// (twice a count that passed ¾ of its capacity), and the run equals one with ample room,
/// bitwise. Every rerun is reported to the device's receiver (`Gpu::on_rerun`, which `yarnsim
/// run` prints when slow), saying what grew.
#[test]
fn acl_capacities_grow_ahead_of_need_identically() {
    let Some(gpu) = gpu_or_skip("acl_capacities_grow_ahead_of_need_identically") else {
        return;
    };
    let sets = ["contact.model=acl"];
    let notices = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let heard = notices.clone();
    gpu.on_rerun(move |n| heard.lock().unwrap().push(n.clone()));
    let run = |shrink: bool| {
        let sim = fixture::scene_sim("tiny", &sets, 0);
        let mut g = GpuSim::new(&gpu, sim, &fixture::scene_contact("tiny", &sets)).unwrap();
        // Each rerun starts from pools poisoned past their lengths (not saved: see
        // acl::gpu::POOLS), grown from there.
        g.set_acl_poison_after_restore(true);
        let ample = g.acl_capacities().unwrap();
        if shrink {
            // Each capacity just under its first need, so overflows come first and the counts
            // then sit close to the room they were given.
            let mut c = AclCaps::all(16);
            c.sched.lookup_words = ample.sched.lookup_words;
            g.set_acl_capacities(c).unwrap();
        }
        for _ in 0..3 {
            g.steps(20).unwrap();
        }
        g.download().unwrap();
        g
    };
    let small = run(true);
    let small_notices = std::mem::take(&mut *notices.lock().unwrap());
    let ample = run(false);
    gpu.no_rerun_reports();
    let ample_notices = notices.lock().unwrap().len();
    assert_eq!(
        small_notices.len(),
        small.reruns() as usize,
        "a rerun unreported"
    );
    assert_eq!(ample_notices, ample.reruns() as usize, "a rerun unreported");
    for n in &small_notices {
        assert!(
            (1..=64).contains(&n.steps)
                && (1..=n.steps).contains(&n.again)
                && n.first_step < 60
                && n.attempt.as_nanos() > 0,
            "{n:?}"
        );
        assert!(
            n.why.starts_with("ACL at step ") || n.why.starts_with("the length projection needed "),
            "{n:?}"
        );
        // The next attempt runs up to the step that needed more, no further.
        if let Some(at) = n.why.strip_prefix("ACL at step ") {
            let at: u64 = at.split(':').next().unwrap().parse().unwrap();
            assert_eq!(at, n.first_step + n.again as u64 - 1, "{n:?}");
        }
    }
    // The first of ACL's reruns grows capacities from 16: it names one, with the old and new
    // room.
    let first = small_notices
        .iter()
        .find(|n| n.why.starts_with("ACL"))
        .expect("no ACL rerun reported");
    assert!(first.why.contains(" 16 → "), "{first:?}");
    eprintln!(
        "small: {} growths ({} ahead), {} reruns; ample: {} growths ({} ahead)",
        small.capacity_grows(),
        small.capacity_grows_ahead(),
        small.reruns(),
        ample.capacity_grows(),
        ample.capacity_grows_ahead()
    );
    assert!(small.reruns() >= 1, "the small run never overflowed");
    assert!(small.acl_poisoned_bytes() > 0, "no pool was poisoned");
    assert!(
        small.capacity_grows_ahead() >= 1,
        "the small run never grew ahead of need"
    );
    assert_eq!(small.sim.pos, ample.sim.pos, "positions differ");
    assert_eq!(small.sim.vel, ample.sim.vel, "velocities differ");
}

/// A quiet cloth (the tiny swatch without gravity) uses at most one rebuild round per step, so
/// after `CUT_AFTER_STEPS` quiet steps the GPU step records one round instead of two, and its
/// merge passes, doubled to 2 in the first steps, are cut back to 1, and the label rounds of each
/// merge pass are halved from 8, and once its scheduler has found no touching pairs for as long
/// the coalescing stage is left out, and once few segments have entered a cell for as long the
/// scheduler's newcomer search goes without the grid: fewer dispatches. The run equals, bitwise, one held at
/// four rounds, four passes, 8 label rounds, coalescing and the newcomer search throughout.
/// Compute passes: one per step, whatever the budgets. No count is copied between ACL's stages
/// (`acl_counts` writes the table length after coalescing and each round's dirty count into the
/// uniforms that read them; the counts the last step left, and the compacted table, are copied
/// with the step's own copies), so neither coalescing nor the rounds end a pass.
#[test]
fn acl_rebuild_rounds_are_cut_when_quiet_identically() {
    let Some(gpu) = gpu_or_skip("acl_rebuild_rounds_are_cut_when_quiet_identically") else {
        return;
    };
    let sets = ["contact.model=acl", "simulation.gravity=[0, 0, 0]"];
    // The cuts wait for a quiet stretch of `CUT_AFTER_STEPS` steps: 8 batches of 8.
    let batches = yarnsim::acl::gpu::CUT_AFTER_STEPS as usize / 8 + 2;
    let run = |hold: Option<u32>| {
        let sim = fixture::scene_sim("tiny", &sets, 0);
        let mut g = GpuSim::new(&gpu, sim, &fixture::scene_contact("tiny", &sets)).unwrap();
        let (mut most, mut least_newcomers) = (0, 2);
        for _ in 0..batches {
            if let Some(n) = hold {
                let mut caps = g.acl_capacities().unwrap();
                if caps.rounds != n
                    || caps.merge.passes != n
                    || caps.merge.rounds != 8
                    || caps.coalesce != 1
                    || caps.newcomers != 2
                {
                    caps.rounds = n;
                    caps.merge.passes = n;
                    caps.merge.rounds = 8;
                    caps.coalesce = 1;
                    caps.newcomers = 2;
                    g.set_acl_capacities(caps).unwrap();
                }
            }
            g.steps(8).unwrap();
            let c = g.acl_capacities().unwrap();
            most = most.max(c.merge.passes);
            least_newcomers = least_newcomers.min(c.newcomers);
        }
        g.download().unwrap();
        (g, most, least_newcomers)
    };
    let (cut, most, least_newcomers) = run(None);
    let (held, _, _) = run(Some(4));
    let caps = cut.acl_capacities().unwrap();
    let (rounds, passes, labels) = (caps.rounds, caps.merge.passes, caps.merge.rounds);
    let (d_cut, d_held) = (cut.dispatches_per_step(), held.dispatches_per_step());
    eprintln!("rounds {rounds}, passes {passes}, label rounds {labels}, coalescing {}, newcomer search {} (least {least_newcomers}) after {batches} batches; dispatches per step {d_cut} (held at 4, 4, 8, 1 and 2: {d_held})", caps.coalesce, caps.newcomers);
    assert_eq!(caps.coalesce, 0, "the quiet run still records coalescing");
    // The grid gives way to a cheaper search once 64 steps in a row needed no more (the first
    // step needs the grid: every pair of the swatch is new there); the search is left out
    // altogether once they needed none, or gives way to the listed search first when a few
    // segments entered a cell (one of the tiny swatch does in the 10th batch, as on the CPU
    // path).
    assert!(
        least_newcomers <= 1,
        "the quiet run never gave up the grid's newcomer search"
    );
    assert!(
        labels < 8,
        "the quiet run still records {labels} label rounds"
    );
    assert_eq!(rounds, 1, "the quiet run still records {rounds} rounds");
    assert!(
        most > 1,
        "the merge passes never grew, so their cut is untested"
    );
    assert_eq!(
        passes, 1,
        "the quiet run still records {passes} merge passes"
    );
    assert!(d_cut < d_held, "{d_cut} dispatches, held {d_held}");
    // The step's last merge invocation ends at its first pass's search: the quiet step (one round,
    // one pass, no coalescing) runs no label round, hull or apply; the held one runs them in the
    // coalescing chain's 4 passes and in each of the first 3 rounds' 4, none in the last round's.
    let hulls = |g: &GpuSim| {
        let k = g.dispatch_kernels();
        ["merge_label", "merge_hull", "merge_apply"].map(|n| k.iter().filter(|x| **x == n).count())
    };
    assert_eq!(hulls(&cut), [0, 0, 0], "the quiet step's merge tail");
    assert_eq!(
        hulls(&held),
        [8 * 16, 16, 16],
        "the held step's merge tails (8 label rounds each)"
    );
    let (p_cut, p_held) = (cut.passes_per_step(), held.passes_per_step());
    assert_eq!(p_cut, 1, "compute passes per step of the quiet run");
    assert_eq!(p_held, 1, "compute passes per step of the held run");
    assert_eq!(cut.sim.pos, held.sim.pos, "positions differ");
    assert_eq!(cut.sim.vel, held.sim.vel, "velocities differ");
}

/// A step recorded without the coalescing stage whose scheduler finds touching pairs reruns its
/// batch with it: the tiny swatch falling onto its obstacle, with coalescing left out before
/// every batch, reruns and ends bitwise where a run that always coalesces does.
#[test]
fn acl_coalescing_left_out_reruns_identically() {
    let Some(gpu) = gpu_or_skip("acl_coalescing_left_out_reruns_identically") else {
        return;
    };
    let budget: fn(&mut AclCaps) -> &mut u32 = |c| &mut c.coalesce;
    let left_out = run_with_a_stage_at(&gpu, 0, 1, budget);
    let always = run_with_a_stage_at(&gpu, 1, 1, budget);
    eprintln!(
        "coalescing left out: {} of 12 batches ran without it, {} were rerun with it ({} reruns in all; {} always coalescing)",
        left_out.without,
        left_out.needed,
        left_out.g.reruns(),
        always.g.reruns()
    );
    assert!(left_out.needed > 0, "no batch needed coalescing");
    assert!(left_out.g.acl_poisoned_bytes() > 0, "no pool was poisoned");
    assert!(left_out.without > 0, "every batch needed coalescing");
    // A rerun that brought coalescing back is counted as its (the others here grew capacities,
    // as in the run that always coalesces).
    let coalesce = |g: &GpuSim| g.rerun_causes().get("coalesce").copied().unwrap_or(0);
    assert!(
        coalesce(&left_out.g) >= 1,
        "{:?}",
        left_out.g.rerun_causes()
    );
    assert_eq!(coalesce(&always.g), 0, "{:?}", always.g.rerun_causes());
    assert_eq!(left_out.g.sim.pos, always.g.sim.pos, "positions differ");
    assert_eq!(left_out.g.sim.vel, always.g.sim.vel, "velocities differ");
}

/// What [`run_with_a_stage_at`] saw: the run, its batches that ran without the stage and
/// those rerun with it, of these the batches after which the step list still left it out (an
/// upgrade of one step), and the fewest dispatches per step recorded.
struct LeftOut {
    g: GpuSim,
    without: u32,
    needed: u32,
    upgraded: u32,
    fewest: u32,
}

/// The tiny swatch falling onto its obstacle for 12 batches of 8 steps, with ACL's stage
/// `budget` (a budget of `AclCaps`: coalescing, the newcomer search, the set index) set before
/// every batch to `level` (0: left out), the levels below `full` counted as left out.
fn run_with_a_stage_at(
    gpu: &yarnsim::gpu::Gpu,
    level: u32,
    full: u32,
    budget: fn(&mut AclCaps) -> &mut u32,
) -> LeftOut {
    let leave_out = level < full;
    let sets = ["contact.model=acl", "obstacle.0.point=[0, 0.7, 0]"];
    let sim = fixture::scene_sim("tiny", &sets, 0);
    let mut g = GpuSim::new(gpu, sim, &fixture::scene_contact("tiny", &sets)).unwrap();
    // Upgrades after any batch: the falling swatch's steps that need a stage come too often for
    // the default wait, and the upgrade is what these runs check too.
    g.set_upgrade_after(0);
    // Each rerun starts from pools poisoned past their lengths (they are not saved: a batch only
    // appends to them).
    g.set_acl_poison_after_restore(true);
    let read = |g: &GpuSim| *budget(&mut g.acl_capacities().unwrap());
    let (mut without, mut needed, mut upgraded, mut fewest) = (0, 0, 0, u32::MAX);
    for _ in 0..12 {
        let want = level;
        if read(&g) != want {
            let mut caps = g.acl_capacities().unwrap();
            *budget(&mut caps) = want;
            g.set_acl_capacities(caps).unwrap();
        }
        fewest = fewest.min(g.dispatches_per_step());
        let reruns = g.reruns();
        g.steps(8).unwrap();
        if leave_out {
            if g.reruns() > reruns {
                needed += 1;
                // Rerun, and the step list of the batch after it still without the stage.
                upgraded += (read(&g) == level) as u32;
            } else {
                without += 1;
            }
        }
    }
    g.download().unwrap();
    LeftOut {
        g,
        without,
        needed,
        upgraded,
        fewest,
    }
}

/// The first merge pass after each rebuild round searching the round's dirty list instead of the
/// set index (`merge.indexed` = 0, set before every batch, as the quiet-stretch cut sets it): the
/// tiny swatch falling onto its obstacle (sets rebuilt, grown and merged) ends bitwise where the
/// index pass does, and the step records fewer dispatches. That pass appends its pairs in the
/// order its threads take the slots, so a second run checks that the result does not depend on
/// it.
#[test]
fn acl_merge_without_the_set_index_is_bitwise_the_same() {
    let Some(gpu) = gpu_or_skip("acl_merge_without_the_set_index_is_bitwise_the_same") else {
        return;
    };
    let budget: fn(&mut AclCaps) -> &mut u32 = |c| &mut c.merge.indexed;
    let brute = run_with_a_stage_at(&gpu, 0, 1, budget);
    let indexed = run_with_a_stage_at(&gpu, 1, 1, budget);
    let (fewer, full) = (brute.fewest, indexed.fewest);
    eprintln!(
        "dirty-list merge passes: {} of 12 batches ran with them, {} were rerun ({} reruns in all, {} with the index); dispatches per step {fewer} with them, {full} with the index",
        brute.without,
        brute.needed,
        brute.g.reruns(),
        indexed.g.reruns()
    );
    assert!(brute.without > 0, "every batch was rerun");
    assert!(fewer < full, "{fewer} dispatches, {full} with the index");
    assert_eq!(brute.g.sim.pos, indexed.g.sim.pos, "positions differ");
    assert_eq!(brute.g.sim.vel, indexed.g.sim.vel, "velocities differ");
    let again = run_with_a_stage_at(&gpu, 0, 1, budget);
    assert_eq!(
        brute.g.sim.pos, again.g.sim.pos,
        "a second run's positions differ"
    );
    assert_eq!(
        brute.g.sim.vel, again.g.sim.vel,
        "a second run's velocities differ"
    );
}

/// A step recorded with one rebuild round that leaves a set dirty (a merge after the round, whose
/// merged set needs a second) reruns its batch with more rounds (`set_compact` flags the dirty set,
/// `ACL_SIZES_MORE_ROUNDS`): the tiny swatch swinging down with a yarn thicker than its loops
/// were made for (so contacts spread and sets grow into each other, as in a relaxation's first
/// steps at a larger radius), cut to one round before every batch, ends bitwise where a run held
/// at four does (and did not when the flag was taken out of `set_compact`: checked by hand when
/// this test was written).
#[test]
fn acl_too_few_rebuild_rounds_rerun_identically() {
    let Some(gpu) = gpu_or_skip("acl_too_few_rebuild_rounds_rerun_identically") else {
        return;
    };
    let sets = ["contact.model=acl", "yarn.radius=0.22"];
    let run = |rounds: u32| {
        let sim = fixture::scene_sim("tiny", &sets, 0);
        let mut g = GpuSim::new(&gpu, sim, &fixture::scene_contact("tiny", &sets)).unwrap();
        g.set_upgrade_after(0);
        // Each rerun starts from pools poisoned past their lengths (not saved: see
        // acl::gpu::POOLS).
        g.set_acl_poison_after_restore(true);
        let mut needed = 0;
        for _ in 0..4 {
            let mut caps = g.acl_capacities().unwrap();
            if caps.rounds != rounds {
                caps.rounds = rounds;
                g.set_acl_capacities(caps).unwrap();
            }
            let reruns = g.reruns();
            g.steps(8).unwrap();
            needed += (g.reruns() > reruns) as u32;
        }
        g.download().unwrap();
        (g, needed)
    };
    let (cut, needed) = run(1);
    let (held, _) = run(4);
    eprintln!(
        "one rebuild round: {needed} of 4 batches rerun ({} reruns, {} steps upgraded; {} reruns held at four)",
        cut.reruns(),
        cut.upgraded_steps(),
        held.reruns()
    );
    assert!(needed > 0, "no batch needed a second round");
    assert!(cut.acl_poisoned_bytes() > 0, "no pool was poisoned");
    assert_eq!(cut.sim.pos, held.sim.pos, "positions differ");
    assert_eq!(cut.sim.vel, held.sim.vel, "velocities differ");
}

/// A step recorded without the scheduler's grid and newcomer search on which a segment enters a
/// cell reruns its batch with them: the tiny swatch falling onto its obstacle, with the search
/// left out before every batch, reruns and ends bitwise where a run that always searches does
/// (and does not when the verdict's rerun for `entered` is taken out: checked by hand when this
/// test was written). A rerun records the search for the step that needed it only (an upgrade):
/// after some batches that reran, the others still start without it.
#[test]
fn acl_newcomer_search_left_out_reruns_identically() {
    let Some(gpu) = gpu_or_skip("acl_newcomer_search_left_out_reruns_identically") else {
        return;
    };
    let budget: fn(&mut AclCaps) -> &mut u32 = |c| &mut c.newcomers;
    let left_out = run_with_a_stage_at(&gpu, 0, 2, budget);
    let always = run_with_a_stage_at(&gpu, 2, 2, budget);
    let (fewer, full) = (left_out.fewest, always.fewest);
    eprintln!(
        "newcomer search left out: {} of 12 batches ran without it, {} were rerun with it ({} reruns in all, {} of those batches rerun with the search for one step, {} steps upgraded; {} always searching); dispatches per step {fewer} without, {full} with",
        left_out.without,
        left_out.needed,
        left_out.g.reruns(),
        left_out.upgraded,
        left_out.g.upgraded_steps(),
        always.g.reruns()
    );
    assert!(left_out.needed > 0, "no batch needed the newcomer search");
    assert!(
        left_out.upgraded > 0 && left_out.g.upgraded_steps() > 0,
        "no rerun upgraded a single step"
    );
    assert!(
        left_out.without > 0,
        "every batch needed the newcomer search"
    );
    assert!(
        fewer < full,
        "{fewer} dispatches without the search, {full} with"
    );
    assert_eq!(left_out.g.sim.pos, always.g.sim.pos, "positions differ");
    assert_eq!(left_out.g.sim.vel, always.g.sim.vel, "velocities differ");
}

/// The listed newcomer search (`AclCaps::newcomers` = 1: no grid; each segment's box against those
/// of the few segments that entered a cell) ends bitwise where the grid's search does: the tiny
/// swatch falling onto its obstacle (at most some dozens of its segments enter a cell on a step),
/// the budget set before every batch, records fewer dispatches per step, and no step after the
/// first needs the grid. A step on which more segments enter a cell than the list takes
/// (`NEWCOMER_LIST_MAX`: the default swatch's first step, on which every segment does) reruns
/// with the grid, and ends where a step with the grid from the start does.
#[test]
fn acl_listed_newcomer_search_is_bitwise_the_same() {
    let Some(gpu) = gpu_or_skip("acl_listed_newcomer_search_is_bitwise_the_same") else {
        return;
    };
    let budget: fn(&mut AclCaps) -> &mut u32 = |c| &mut c.newcomers;
    let listed = run_with_a_stage_at(&gpu, 1, 2, budget);
    let grid = run_with_a_stage_at(&gpu, 2, 2, budget);
    let newcomer_reruns = |g: &GpuSim| g.rerun_causes().get("newcomers").copied().unwrap_or(0);
    eprintln!(
        "listed newcomer search: dispatches per step {} listed, {} with the grid; reruns {} and {} ({} and {} for the newcomer search)",
        listed.fewest,
        grid.fewest,
        listed.g.reruns(),
        grid.g.reruns(),
        newcomer_reruns(&listed.g),
        newcomer_reruns(&grid.g)
    );
    assert!(listed.fewest < grid.fewest, "no dispatch saved");
    // At most the first step needs the grid: on it every segment enters a cell, and every pair
    // of the swatch that shares one, found from both sides, is more candidates than
    // `newcomer_list_compact` takes (`NEWCOMER_LIST_CANDIDATES`).
    assert!(newcomer_reruns(&listed.g) <= 1, "steps needed the grid");
    assert_eq!(listed.g.sim.pos, grid.g.sim.pos, "positions differ");
    assert_eq!(listed.g.sim.vel, grid.g.sim.vel, "velocities differ");
    // Too many segments for the list: the default swatch's first step.
    let sets = ["contact.model=acl"];
    let first_step = |level: u32| {
        let sim = fixture::scene_sim("swatch", &sets, 0);
        let mut g = GpuSim::new(&gpu, sim, &fixture::scene_contact("swatch", &sets)).unwrap();
        let mut caps = g.acl_capacities().unwrap();
        caps.newcomers = level;
        g.set_acl_capacities(caps).unwrap();
        g.steps(1).unwrap();
        g.download().unwrap();
        g
    };
    let (one, two) = (first_step(1), first_step(2));
    assert_eq!(newcomer_reruns(&one), 1, "{:?}", one.rerun_causes());
    assert_eq!(one.acl_capacities().unwrap().newcomers, 2);
    assert_eq!(newcomer_reruns(&two), 0, "{:?}", two.rerun_causes());
    assert_eq!(one.sim.pos, two.sim.pos, "first step: positions differ");
    assert_eq!(one.sim.vel, two.sim.vel, "first step: velocities differ");
}

/// `GpuSim::advance` (frames, the relaxation) runs its steps in batches that start at
/// `FIRST_BATCH` steps, double after each batch that ran once (up to `MAX_BATCH`, or
/// `TRIAL_BATCH` while one of ACL's budgets is cut on trial) and start again
/// at `FIRST_BATCH` after a batch that had to be rerun (or halve, when its reruns only upgraded a
/// step's budgets); from capacities far too small, that wastes fewer steps on failed attempts
/// than batches of fixed length, and the result is bitwise the same. (Within a batch, a rerun runs
/// only up to the step that needed it, and the steps after it as another batch.)
#[test]
fn batch_lengths_adapt_and_change_nothing() {
    use yarnsim::gpu_step::{FIRST_BATCH, MAX_BATCH, TRIAL_BATCH};
    let Some(gpu) = gpu_or_skip("batch_lengths_adapt_and_change_nothing") else {
        return;
    };
    const STEPS: usize = 120;
    const FIXED: usize = 40;
    let bits = |p: &[[f32; 4]]| p.iter().flatten().map(|x| x.to_bits()).collect::<Vec<_>>();
    for model in ["exact", "acl"] {
        let set = format!("contact.model={model}");
        let sets = [set.as_str(), "obstacle.0.point=[0, 0.7, 0]"];
        let small = || {
            let sim = fixture::scene_sim("tiny", &sets, 0);
            let mut g = GpuSim::new(&gpu, sim, &fixture::scene_contact("tiny", &sets)).unwrap();
            if model == "exact" {
                g.set_contact_capacities((16, 16, 16)).unwrap();
            } else {
                let ample = g.acl_capacities().unwrap();
                let mut c = AclCaps::all(16);
                c.sched.lookup_words = ample.sched.lookup_words;
                g.set_acl_capacities(c).unwrap();
            }
            g
        };
        // Batch by batch, each `advance` call one batch of the current length.
        let mut adaptive = small();
        assert_eq!(adaptive.batch_limit(), FIRST_BATCH);
        let (mut done, mut batches) = (0, 0);
        while done < STEPS {
            let limit = adaptive.batch_limit();
            let k = limit.min(STEPS - done);
            let (reruns, upgrades) = (adaptive.reruns(), adaptive.upgrade_reruns());
            let mut ran = Vec::new();
            adaptive.advance(k, &mut |n| ran.push(n)).unwrap();
            assert_eq!(ran, [k], "{model}: one batch of {k} steps");
            let upgrades = adaptive.upgrade_reruns() - upgrades;
            // At most `MAX_BATCH`, or `TRIAL_BATCH` while a budget is cut on trial.
            let cap = adaptive.batch_cap();
            assert!(cap == MAX_BATCH || (model == "acl" && cap == TRIAL_BATCH));
            let want = if adaptive.reruns() > reruns + upgrades {
                FIRST_BATCH
            } else if upgrades > 0 {
                (limit / 2).max(FIRST_BATCH)
            } else if k == limit {
                (2 * limit).min(cap)
            } else {
                limit
            }
            .min(cap);
            assert_eq!(
                adaptive.batch_limit(),
                want,
                "{model}: after a batch of {k}"
            );
            done += k;
            batches += 1;
        }
        let mut fixed = small();
        for _ in 0..STEPS / FIXED {
            fixed.steps(FIXED).unwrap();
        }
        adaptive.download().unwrap();
        fixed.download().unwrap();
        eprintln!(
            "{model}: {batches} adaptive batches, {} reruns wasting {} steps; fixed batches of {FIXED}: {} reruns wasting {} steps",
            adaptive.reruns(),
            adaptive.rerun_steps(),
            fixed.reruns(),
            fixed.rerun_steps()
        );
        assert!(
            fixed.reruns() >= 1,
            "{model}: the small capacities never overflowed"
        );
        // A batch is rerun only up to the step that needed it, the steps after it run as a batch
        // of their own: some of the fixed run's failed attempts were shorter than its batches
        // (all of them, when whole batches were rerun).
        assert!(
            fixed.rerun_steps() < FIXED as u64 * fixed.reruns() as u64,
            "{model}: {} reruns of whole batches of {FIXED}",
            fixed.reruns()
        );
        assert!(
            adaptive.rerun_steps() < fixed.rerun_steps(),
            "{model}: adaptive batches wasted {} steps, fixed ones {}",
            adaptive.rerun_steps(),
            fixed.rerun_steps()
        );
        assert!(
            bits(&adaptive.sim.pos) == bits(&fixed.sim.pos),
            "{model}: positions differ"
        );
        assert!(
            bits(&adaptive.sim.vel) == bits(&fixed.sim.vel),
            "{model}: velocities differ"
        );
    }
}

/// While one of ACL's budgets is cut on trial, `GpuSim::advance` keeps its batches to
/// `TRIAL_BATCH` steps (a step that needs more than a cut budget records reruns its whole batch):
/// the tiny swatch without gravity, batch by batch, grows its batches past `TRIAL_BATCH` before
/// the first cut, and from the batch after it none is longer, the limit included, while a budget
/// is on trial.
#[test]
fn batches_stay_short_while_a_budget_is_on_trial() {
    use yarnsim::gpu_step::{MAX_BATCH, TRIAL_BATCH};
    let Some(gpu) = gpu_or_skip("batches_stay_short_while_a_budget_is_on_trial") else {
        return;
    };
    let sets = ["contact.model=acl", "simulation.gravity=[0, 0, 0]"];
    let sim = fixture::scene_sim("tiny", &sets, 0);
    let mut g = GpuSim::new(&gpu, sim, &fixture::scene_contact("tiny", &sets)).unwrap();
    assert_eq!(g.batch_cap(), MAX_BATCH, "on trial before any batch");
    // (batch length, whether a budget was on trial before it)
    let mut batches = Vec::new();
    let mut done = 0;
    while done < 320 {
        let (k, trial) = (g.batch_limit(), g.batch_cap() == TRIAL_BATCH);
        let mut ran = Vec::new();
        g.advance(k, &mut |n| ran.push(n)).unwrap();
        assert_eq!(ran, [k], "one batch of {k} steps");
        batches.push((k, trial));
        assert!(
            g.batch_cap() == MAX_BATCH || g.batch_limit() <= TRIAL_BATCH,
            "a limit of {} steps while on trial",
            g.batch_limit()
        );
        done += k;
    }
    let caps = g.acl_capacities().unwrap();
    eprintln!(
        "batches (steps, on trial before): {batches:?}; at the end rounds {}, passes {}, label rounds {}, coalescing {}, newcomer search {}, set index {}; {} reruns",
        caps.rounds,
        caps.merge.passes,
        caps.merge.rounds,
        caps.coalesce,
        caps.newcomers,
        caps.merge.indexed,
        g.reruns()
    );
    let first = batches
        .iter()
        .position(|&(_, trial)| trial)
        .expect("no budget was cut on trial in 320 quiet steps");
    assert!(
        batches[..first].iter().any(|&(k, _)| k > TRIAL_BATCH),
        "no batch longer than {TRIAL_BATCH} steps before the first cut"
    );
    for &(k, trial) in &batches[first..] {
        assert!(!trial || k <= TRIAL_BATCH, "a batch of {k} steps on trial");
    }
}

#[test]
fn two_gpu_runs_are_bitwise_identical() {
    let Some(gpu) = gpu_or_skip("two_gpu_runs_are_bitwise_identical") else {
        return;
    };
    let bits = |p: &[[f32; 4]]| p.iter().flatten().map(|x| x.to_bits()).collect::<Vec<_>>();
    for sets in [
        &["contact.model=none"][..],
        &["contact.model=exact", "obstacle.0.point=[0, 0.7, 0]"][..],
        &["contact.model=acl", "obstacle.0.point=[0, 0.7, 0]"][..],
    ] {
        let a = run_gpu(&gpu, sets, 100);
        let b = run_gpu(&gpu, sets, 100);
        assert!(
            bits(&a.sim.pos) == bits(&b.sim.pos),
            "{sets:?}: positions differ"
        );
        assert!(
            bits(&a.sim.vel) == bits(&b.sim.vel),
            "{sets:?}: velocities differ"
        );
    }
}

/// A GPU run continued from a checkpoint of its state goes on bit for bit, with exact contact and
/// with ACL: the host's `Sim` after `sync_host` and the GPU's contact state
/// (`export_contact_state`: the exact path's grid origin; ACL's sets, pools, scheduler table and
/// history, counters, anchor and step count), through the checkpoint's sections, into a fresh
/// `GpuSim` (`import_contact_state`), which then runs its own batch lengths and budgets from the
/// start. Without the contact state (the model starting afresh, as a resumed GPU run did before
/// 2026-12-06) the continuation differs, so the comparison can fail; and a state of another model
/// is refused. ACL's tables and lists (the sets, their stiction springs, the released boxes, the
/// scheduler's entries) are saved up to their lengths, not their capacities: the resumed run has
/// the rest poisoned, and its contact state after the steps (every table and pool) must equal the
/// uninterrupted run's. (Checked: saving half the entries or half the springs fails it.)
#[test]
fn gpu_contact_state_continues_bitwise_from_a_checkpoint() {
    let Some(gpu) = gpu_or_skip("gpu_contact_state_continues_bitwise_from_a_checkpoint") else {
        return;
    };
    use yarnsim::checkpoint::{StateReader, StateWriter};
    let bits = |p: &[[f32; 4]]| p.iter().flatten().map(|x| x.to_bits()).collect::<Vec<_>>();
    let step = |g: &mut GpuSim, n: usize| {
        for _ in 0..n / 25 {
            g.steps(25).unwrap_or_else(|e| panic!("{e}"));
        }
        g.download().unwrap();
    };
    for (model, sets) in [
        (
            "exact",
            &["contact.model=exact", "obstacle.0.point=[0, 0.7, 0]"][..],
        ),
        // (With stiction, so that the springs carry state across the checkpoint.)
        (
            "acl",
            &[
                "contact.model=acl",
                "obstacle.0.point=[0, 0.7, 0]",
                "contact.stiction_stiffness=20",
            ][..],
        ),
    ] {
        let contact = fixture::scene_contact("tiny", sets);
        let mut a = run_gpu(&gpu, sets, 150);
        a.sync_host().unwrap();
        let mut w = StateWriter::new();
        a.sim.export_state(&mut w).unwrap();
        let gpu_state = a.export_contact_state().unwrap();
        w.append(&gpu_state);
        let reader = StateReader::new(w.body().to_vec(), "test").unwrap();
        let resumed = |import: bool| {
            let mut sim = fixture::scene_sim("tiny", sets, 0);
            sim.import_state(&reader).unwrap();
            let mut g = GpuSim::new(&gpu, sim, &contact).unwrap_or_else(|e| panic!("{e}"));
            if import {
                // What the checkpoint holds of a table or list past its length (nothing: each
                // is saved up to it) poisoned, so that a step reading there would part.
                g.set_acl_poison_after_restore(true);
                g.import_contact_state(&reader)
                    .unwrap_or_else(|e| panic!("{model}: {e}"));
            }
            g
        };
        let mut b = resumed(true);
        let mut c = resumed(false);
        if model == "acl" {
            assert!(b.acl_poisoned_bytes() > 0, "nothing past the live tables");
            // The set table saved up to its length, not its capacity.
            let last: yarnsim::acl::gpu::AclStepCounters =
                reader.get_value("gpu.acl.last").unwrap();
            let live = last.sizes.num_sets as usize;
            let saved = reader.bytes("gpu.acl.sets").unwrap().len();
            assert_eq!(
                saved,
                live * size_of::<yarnsim::acl::ContactSet>(),
                "sets saved"
            );
            assert!(live > 0 && (live as u32) < b.acl_capacities().unwrap().merge.sets);
        }
        for g in [&mut a, &mut b, &mut c] {
            step(g, 150);
        }
        assert_eq!(b.sim.steps, a.sim.steps);
        assert!(
            bits(&b.sim.pos) == bits(&a.sim.pos),
            "{model}: positions differ"
        );
        assert!(
            bits(&b.sim.vel) == bits(&a.sim.vel),
            "{model}: velocities differ"
        );
        assert!(
            bits(&c.sim.pos) != bits(&a.sim.pos),
            "{model}: a fresh contact model continued bitwise too: the test shows nothing"
        );
        if model == "acl" {
            // The contact state after those steps too, every table and pool as a checkpoint
            // holds it (up to its length): an entry lost in the checkpoint that no touching pair
            // needed in these steps would not show in the positions.
            let state = |g: &GpuSim| {
                StateReader::new(g.export_contact_state().unwrap().body().to_vec(), "test").unwrap()
            };
            let (sa, sb) = (state(&a), state(&b));
            let own = ["sets", "springs", "released", "rebuild_counts"];
            let sched = yarnsim::sched::gpu::SchedGpu::persistent_names();
            let pools = yarnsim::acl::gpu::POOLS.map(|p| p.0);
            for name in own.into_iter().chain(sched).chain(pools) {
                let s = format!("gpu.acl.{name}");
                assert!(
                    sa.bytes(&s).unwrap() == sb.bytes(&s).unwrap(),
                    "{model}: {s} differs after the resumed steps"
                );
            }
        }
        // Another model's state is refused, naming both.
        let other = if model == "exact" { "acl" } else { "exact" };
        let other_sets = [format!("contact.model={other}")];
        let other_sets: Vec<&str> = other_sets.iter().map(String::as_str).collect();
        let sim = fixture::scene_sim("tiny", &other_sets, 0);
        let mut d = GpuSim::new(&gpu, sim, &fixture::scene_contact("tiny", &other_sets)).unwrap();
        let only_gpu = StateReader::new(gpu_state.body().to_vec(), "test").unwrap();
        let err = d.import_contact_state(&only_gpu).unwrap_err().to_string();
        assert!(
            err.contains("contact model") && err.contains(model) && err.contains(other),
            "{err}"
        );
    }
}

/// ACL's `K̄` blocks pool and its rebuild's pair terms in pages (src/acl/pages.rs: how a garment's
/// pools fit a device's binding limit) step as one page each does, bit for bit: through the move
/// of a run's pools from one page into pages, a growth of the paged pools, compactions of the
/// blocks, and checkpoints taken with one layout and resumed with the other. Blocks in pages of a
/// stride of 6,000 (a room of 2,080: sets of up to 64 points; the tiny swatch's have about 10),
/// terms of 2,000 (a room of 1,024 touching pairs a set), so that the tiny swatch's pools take
/// several; a set larger than its room would find none for its blocks or terms and the runs would
/// differ.
#[test]
fn paged_pools_step_as_one_page_does() {
    let Some(gpu) = gpu_or_skip("paged_pools_step_as_one_page_does") else {
        return;
    };
    use yarnsim::acl::pages::{AclPageLimits, PageLimits};
    use yarnsim::checkpoint::{StateReader, StateWriter};
    let blocks = PageLimits {
        most: 6_000 + 2_080,
        room: 2_080,
    };
    let terms = PageLimits {
        most: 2_000 + 1_024,
        room: 1_024,
    };
    let sets = ["contact.model=acl", "obstacle.0.point=[0, 0.7, 0]"];
    let contact = fixture::scene_contact("tiny", &sets);
    let bits = |g: &GpuSim| {
        let p = g.sim.pos.iter().chain(&g.sim.vel);
        p.flatten().map(|x| x.to_bits()).collect::<Vec<_>>()
    };
    let step = |g: &mut GpuSim, n: usize| {
        for _ in 0..n / 25 {
            g.steps(25).unwrap_or_else(|e| panic!("{e}"));
        }
        g.download().unwrap();
    };
    let pages = |g: &GpuSim| g.acl_block_pages().unwrap().count();
    let term_pages = |g: &GpuSim| g.acl_term_pages().unwrap().count();
    let scratch_pages = |g: &GpuSim| g.acl_scratch_pages().unwrap().count();
    let watch_pages = |g: &GpuSim| g.acl_watch_pages().unwrap().count();
    let one = PageLimits {
        most: u32::MAX,
        room: 2_080,
    };
    // The rebuild's watched-pair scratch: in pages of 24 dirty sets, or one.
    let fine_scratch = PageLimits { most: 24, room: 0 };
    let one_scratch = PageLimits {
        most: u32::MAX,
        room: 0,
    };
    // The watch pools: in pages of a stride of 500 watched pairs (room for a set's 32; not a
    // multiple of 32, since the tiny swatch's sets keep 32 each, so that ranges cross a stride;
    // less than the live pairs after a compaction, some 1,700, so that they span pages).
    let fine_watch = PageLimits {
        most: 500 + 32,
        room: 32,
    };
    let limits = |blocks, terms, scratch, watch| AclPageLimits {
        blocks,
        terms,
        scratch,
        watch,
    };
    let mut a = run_gpu(&gpu, &sets, 0);
    let mut b = run_gpu(&gpu, &sets, 0);
    // The first steps, which build every set, with their rounds' terms (some hundreds) over fine
    // pages (a stride of 40, a room of 256 touching pairs a set), and the watched-pair scratch in
    // pages of 24 dirty sets (the first round builds every set), the watch pools in fine pages;
    // the blocks in one page.
    let fine_terms = PageLimits {
        most: 40 + 256,
        room: 256,
    };
    b.set_acl_page_limits(limits(one, fine_terms, fine_scratch, fine_watch))
        .unwrap();
    assert!(term_pages(&b) >= 3, "{:?}", b.acl_term_pages());
    assert!(scratch_pages(&b) >= 3, "{:?}", b.acl_scratch_pages());
    assert!(watch_pages(&b) >= 3, "{:?}", b.acl_watch_pages());
    step(&mut a, 100);
    step(&mut b, 100);
    let peak = b.acl_peak_counts().unwrap();
    let round_terms = peak.terms;
    assert!(round_terms > 3 * 40, "a round of {round_terms} terms");
    // (The first round's dirty sets, and the watched pairs, span at least three pages.)
    assert!(peak.merge.sets > 2 * 24, "{} sets", peak.merge.sets);
    assert!(peak.watch > 2 * 500, "{} watched pairs", peak.watch);
    assert!(
        bits(&b) == bits(&a),
        "the run with fine terms, scratch and watch pages differs"
    );
    // The blocks pool, with the sets of 100 steps in it, into pages; the terms into coarser ones.
    b.set_acl_page_limits(limits(blocks, terms, fine_scratch, fine_watch))
        .unwrap();
    assert!(pages(&b) >= 3, "{:?}", b.acl_block_pages());
    step(&mut a, 150);
    step(&mut b, 150);
    // A growth of the paged pools, with the sets.
    let mut caps = b.acl_capacities().unwrap();
    caps.blocks *= 2;
    caps.terms *= 2;
    caps.watch *= 2;
    // (And the set slots, which size the watched-pair scratch's pages.)
    caps.merge.sets *= 2;
    b.set_acl_capacities(caps).unwrap();
    step(&mut a, 250);
    step(&mut b, 250);
    assert_eq!(
        (
            pages(&a),
            term_pages(&a),
            scratch_pages(&a),
            watch_pages(&a)
        ),
        (1, 1, 1, 1)
    );
    let compactions = b.acl_compactions().unwrap();
    assert!(
        compactions > 0,
        "no compaction: the test shows less than it says"
    );
    assert!(bits(&b) == bits(&a), "the paged run differs");
    // Checkpoints of both, each resumed with the other layout.
    let checkpoint = |g: &mut GpuSim| {
        g.sync_host().unwrap();
        let mut w = StateWriter::new();
        g.sim.export_state(&mut w).unwrap();
        w.append(&g.export_contact_state().unwrap());
        StateReader::new(w.body().to_vec(), "test").unwrap()
    };
    let (ra, rb) = (checkpoint(&mut a), checkpoint(&mut b));
    // The live sets' blocks and watched pairs, from a checkpoint's flat pools, in table order:
    // the paged run's are the one-page run's (the watched pairs steer only the crossing test, so
    // positions alone could miss a wrong one).
    let live_models = |r: &StateReader| {
        use yarnsim::acl::{rebuild::model_sizes, ContactSet};
        let last: yarnsim::acl::gpu::AclStepCounters = r.get_value("gpu.acl.last").unwrap();
        let table: Vec<ContactSet> =
            bytemuck::pod_collect_to_vec(&r.bytes("gpu.acl.sets").unwrap());
        let mut out = Vec::new();
        for (pool, k, elem) in [
            ("k_pool", 1, 24),
            ("watch_pool", 2, 16),
            ("watch_loc_pool", 2, 16),
        ] {
            let data = r.bytes(&format!("gpu.acl.{pool}")).unwrap();
            for s in &table[..last.sizes.num_sets as usize] {
                let off = if k == 1 { s.k_off } else { s.w_off } as usize;
                let n = model_sizes(s)[k];
                out.extend_from_slice(&data[off * elem..(off + n) * elem]);
            }
        }
        out
    };
    assert!(
        live_models(&ra) == live_models(&rb),
        "the paged run's live models differ"
    );
    // Resumed with the other layout: the one-page run's into fine pages of blocks (a stride of
    // 600, so that the live sets, some 2,500 blocks after a compaction, span several) and of
    // watched pairs, and one page of terms; the paged run's into one page.
    let fine = PageLimits {
        most: 600 + 2_080,
        room: 2_080,
    };
    let resumed = |r: &StateReader, limits: Option<AclPageLimits>| {
        let mut sim = fixture::scene_sim("tiny", &sets, 0);
        sim.import_state(r).unwrap();
        let mut g = GpuSim::new(&gpu, sim, &contact).unwrap_or_else(|e| panic!("{e}"));
        if let Some(limits) = limits {
            g.set_acl_page_limits(limits).unwrap();
        }
        g.import_contact_state(r).unwrap_or_else(|e| panic!("{e}"));
        g
    };
    let mut c = resumed(&ra, Some(limits(fine, one, one_scratch, fine_watch)));
    let mut d = resumed(&rb, None);
    assert!(pages(&c) >= 3 && term_pages(&c) == 1 && watch_pages(&c) >= 3);
    assert!(pages(&d) == 1 && watch_pages(&d) == 1);
    for g in [&mut a, &mut b, &mut c, &mut d] {
        step(g, 150);
    }
    for (name, g) in [
        ("paged", &b),
        ("one page → pages", &c),
        ("pages → one page", &d),
    ] {
        assert!(bits(g) == bits(&a), "{name}: differs after the resume");
    }
    // The fine pages' checkpoint into one page. Some sets run past their page's stride there, and
    // the checkpoint takes their blocks and watched pairs from their own page's room
    // (PoolPages::flatten): without such sets this would show nothing of it.
    let rc = checkpoint(&mut c);
    let spilled = |pages: &yarnsim::acl::pages::PoolPages, k: usize| {
        use yarnsim::acl::{rebuild::model_sizes, ContactSet};
        let last: yarnsim::acl::gpu::AclStepCounters = rc.get_value("gpu.acl.last").unwrap();
        let table: Vec<ContactSet> =
            bytemuck::pod_collect_to_vec(&rc.bytes("gpu.acl.sets").unwrap());
        table[..last.sizes.num_sets as usize]
            .iter()
            .filter(|s| {
                let off = if k == 1 { s.k_off } else { s.w_off };
                let end = off as u64 + model_sizes(s)[k] as u64;
                end > pages.base(pages.page_of(off)) + pages.stride as u64
            })
            .count()
    };
    let spilled = (
        spilled(c.acl_block_pages().unwrap(), 1),
        spilled(c.acl_watch_pages().unwrap(), 2),
    );
    assert!(
        spilled.0 > 0 && spilled.1 > 0,
        "no set runs past its page's stride: {spilled:?} (blocks, watched pairs)"
    );
    let mut e = resumed(&rc, None);
    step(&mut a, 100);
    step(&mut e, 100);
    assert!(
        bits(&e) == bits(&a),
        "fine pages → one page: differs after the resume"
    );
    eprintln!(
        "{} blocks pages, {} terms pages, {} scratch pages and {} watch pages at the end, \
         {compactions} compactions while paged, {spilled:?} sets past their stride in {} and {} \
         fine pages (blocks, watched pairs)",
        pages(&b),
        term_pages(&b),
        scratch_pages(&b),
        watch_pages(&b),
        pages(&c),
        watch_pages(&c)
    );
}

/// Damage in the GPU's contact state of a checkpoint that the checksum does not catch (as a bug
/// writing wrong values would leave it): taking it up gives an error or a step, never a panic.
#[test]
fn damaged_gpu_contact_state_never_panics() {
    let Some(gpu) = gpu_or_skip("damaged_gpu_contact_state_never_panics") else {
        return;
    };
    use yarnsim::checkpoint::{StateReader, StateWriter};
    let sets = ["contact.model=acl", "obstacle.0.point=[0, 0.7, 0]"];
    let contact = fixture::scene_contact("tiny", &sets);
    let mut a = run_gpu(&gpu, &sets, 100);
    a.sync_host().unwrap();
    let good = a.export_contact_state().unwrap().body().to_vec();
    let mut sim_state = StateWriter::new();
    a.sim.export_state(&mut sim_state).unwrap();
    let sim_reader = StateReader::new(sim_state.body().to_vec(), "test").unwrap();
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let (mut ok, mut refused) = (0, 0);
    for _ in 0..12 {
        let mut b = good.clone();
        let len = b.len();
        // Half of the damage in the first sections (model, capacities, counters, anchor).
        rng.damage(&mut b, |r| {
            let span = if r.next_u64() % 2 == 0 { 1024 } else { len };
            (r.next_u64() as usize) % span.min(len)
        });
        let mut sim = fixture::scene_sim("tiny", &sets, 0);
        sim.import_state(&sim_reader).unwrap();
        let mut g = GpuSim::new(&gpu, sim, &contact).unwrap();
        let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            StateReader::new(b, "damaged")
                .map_err(|e| e.to_string())
                .and_then(|r| g.import_contact_state(&r).map_err(|e| e.to_string()))
        }));
        match result {
            Ok(Ok(())) => ok += 1,
            Ok(Err(_)) => refused += 1,
            Err(_) => panic!("taking up a damaged GPU contact state panicked"),
        }
    }
    eprintln!("{ok} taken up, {refused} refused");
    assert!(refused > 0);
}

#[test]
fn gpu_step_reports_a_blow_up_with_its_step() {
    let Some(gpu) = gpu_or_skip("gpu_step_reports_a_blow_up_with_its_step") else {
        return;
    };
    // Gravity of 1e30 cm/s² makes forces overflow to infinity at once.
    let sets = ["contact.model=none", "simulation.gravity=[0, -1e38, 0]"];
    let sim = fixture::scene_sim("tiny", &sets, 0);
    let mut g = GpuSim::new(&gpu, sim, &fixture::scene_contact("tiny", &sets)).unwrap();
    let mut err = None;
    for _ in 0..20 {
        if let Err(e) = g.step() {
            err = Some(e.to_string());
            break;
        }
    }
    let msg = err.expect("the blow-up was not reported");
    assert!(msg.starts_with("step "), "{msg}");
    assert!(
        msg.contains("not finite") || msg.contains("did not converge"),
        "{msg}"
    );
}

/// A length projection that cannot converge within its cap (one iteration allowed; violent,
/// rough velocities on yarn 7 of the small sack's 24 from its fourth control point on): the GPU
/// step's error names the step, the yarn and the control points of its first edge not within the
/// tolerance, as the CPU path's does.
#[test]
fn gpu_length_failure_names_the_cpu_paths_yarn() {
    let Some(gpu) = gpu_or_skip("gpu_length_failure_names_the_cpu_paths_yarn") else {
        return;
    };
    let sets = ["contact.model=none"];
    let capped = || {
        let mut sim = fixture::scene_sim("sack_small", &sets, 0);
        sim.set_length_max_iterations(1);
        let y = sim.topo.yarns[7];
        let points = y.first_point as usize + 3..(y.first_point + y.num_points) as usize;
        for (i, v) in sim.vel[points].iter_mut().enumerate() {
            let s = (i as f32 * 12.9898).sin() * 43_758.547;
            let r = s - s.floor() - 0.5;
            *v = [400.0 * r, -300.0 * r * r, 200.0 * (0.3 - r), 0.0];
        }
        sim
    };
    let mut cpu = capped();
    let cpu_err = (0..20)
        .find_map(|_| cpu.step().err())
        .expect("the CPU path converged");
    let yarnsim::sim::SimError::LengthProjection {
        step, yarn, points, ..
    } = cpu_err
    else {
        panic!("{cpu_err}");
    };
    assert_eq!(yarn, 7, "{cpu_err}");
    let contact = fixture::scene_contact("sack_small", &sets);
    let mut g = GpuSim::new(&gpu, capped(), &contact).unwrap();
    let gpu_err = (0..20)
        .find_map(|_| g.step().err())
        .expect("the GPU path converged");
    let msg = gpu_err.to_string();
    eprintln!("CPU: {cpu_err}\nGPU: {msg}");
    let yarnsim::gpu_step::GpuStepError::LengthProjection {
        step: g_step, site, ..
    } = gpu_err
    else {
        panic!("{msg}");
    };
    assert_eq!((g_step, site), (step, Some((yarn, points))), "{msg}");
    assert!(
        msg.contains(&format!("of yarn {yarn} "))
            && msg.contains(&format!("control points {} and {}", points[0], points[1])),
        "{msg}"
    );
}

/// A NaN in one control point's velocity, as a blow-up leaves one (a velocity past f32's range
/// makes the next step's NaN): with each contact model the GPU step's error is the CPU path's,
/// word for word, its causes included (the step, what is not finite, the point, its yarn and
/// index in it); before, the GPU named the yarn's failed length projection instead.
#[test]
fn gpu_not_finite_error_reads_as_the_cpu_paths() {
    let Some(gpu) = gpu_or_skip("gpu_not_finite_error_reads_as_the_cpu_paths") else {
        return;
    };
    let chain = |e: &dyn std::error::Error| {
        let mut words = vec![e.to_string()];
        let mut at = e.source();
        while let Some(c) = at {
            words.push(c.to_string());
            at = c.source();
        }
        words
    };
    for model in ["none", "exact", "acl"] {
        let sets = [format!("contact.model={model}")];
        let sets: Vec<&str> = sets.iter().map(|s| s.as_str()).collect();
        let sim = || {
            let mut s = fixture::scene_sim("tiny", &sets, 3);
            s.vel[57][1] = f32::NAN;
            s
        };
        let mut cpu = sim();
        let cpu_err = chain(&cpu.step().expect_err(model));
        let gpu_err = GpuSim::new(&gpu, sim(), &fixture::scene_contact("tiny", &sets))
            .and_then(|mut g| g.step())
            .expect_err(model);
        let gpu_err = chain(&gpu_err);
        eprintln!("{model}: {cpu_err:?}");
        assert_eq!(
            cpu_err,
            ["step 3: the velocity of control point 57 (yarn 0, point 57 of it) is not finite; try a smaller simulation.dt or check the scene's stiffnesses"],
            "{model}"
        );
        assert_eq!(gpu_err, cpu_err, "{model}");
    }
}

/// A NaN in one control point's position, which only a state set from outside can hold: with
/// each contact model both paths name the position and its point, word for word (the GPU step
/// refuses the state when it is made). Before, the first stage to meet it named another point:
/// with `none` the GPU named a neighbour's bending force, with `exact` both paths a contact
/// partner's force, with ACL both the point's "contact force".
#[test]
fn gpu_non_finite_position_reads_as_the_cpu_paths() {
    let Some(gpu) = gpu_or_skip("gpu_non_finite_position_reads_as_the_cpu_paths") else {
        return;
    };
    let words = "step 3: the position of control point 57 (yarn 0, point 57 of it) is not finite; try a smaller simulation.dt or check the scene's stiffnesses";
    for model in ["none", "exact", "acl"] {
        let sets = [format!("contact.model={model}")];
        let sets: Vec<&str> = sets.iter().map(|s| s.as_str()).collect();
        let sim = || {
            let mut s = fixture::scene_sim("tiny", &sets, 3);
            s.pos[57][1] = f32::NAN;
            s
        };
        let mut cpu = sim();
        let before = cpu.vel.clone();
        let cpu_err = cpu.step().expect_err(model);
        assert_eq!(cpu_err.to_string(), words, "{model}");
        assert!(std::error::Error::source(&cpu_err).is_none(), "{model}");
        assert!(cpu.steps == 3 && cpu.vel == before, "{model}: the step ran");
        let gpu_err = GpuSim::new(&gpu, sim(), &fixture::scene_contact("tiny", &sets))
            .and_then(|mut g| g.step())
            .expect_err(model);
        assert_eq!(gpu_err.to_string(), words, "{model}");
        assert!(std::error::Error::source(&gpu_err).is_none(), "{model}");
    }
}

/// A step that needs more length-projection iterations than the GPU step encodes is rerun from
/// the batch's snapshot with the whole cap encoded, and the result is bitwise the one of encoding
/// the cap from the start.
#[test]
fn length_budget_rerun_changes_nothing() {
    let Some(gpu) = gpu_or_skip("length_budget_rerun_changes_nothing") else {
        return;
    };
    let sets = ["contact.model=none"];
    let run = |budget: u32| {
        let mut sim = fixture::scene_sim("tiny", &sets, 0);
        // Violent, rough initial velocities, so the first steps' projections take several
        // iterations.
        for (i, v) in sim.vel.iter_mut().enumerate() {
            let s = (i as f32 * 12.9898).sin() * 43_758.547;
            let r = s - s.floor() - 0.5;
            *v = [400.0 * r, -300.0 * r * r, 200.0 * (0.3 - r), 0.0];
        }
        let mut g = GpuSim::new(&gpu, sim, &fixture::scene_contact("tiny", &sets)).unwrap();
        g.set_length_budget(budget).unwrap();
        for _ in 0..3 {
            g.steps(32).unwrap();
        }
        g.download().unwrap();
        g
    };
    let tight = run(1);
    let full = run(1000);
    assert!(tight.reruns() > 0, "no step needed a second iteration");
    eprintln!(
        "batches rerun with a budget of 1 iteration: {}",
        tight.reruns()
    );
    assert_eq!(full.reruns(), 0);
    assert_eq!(tight.sim.steps, full.sim.steps);
    let bits = |p: &[[f32; 4]]| p.iter().flatten().map(|x| x.to_bits()).collect::<Vec<_>>();
    assert!(
        bits(&tight.sim.pos) == bits(&full.sim.pos),
        "positions differ"
    );
    assert!(
        bits(&tight.sim.vel) == bits(&full.sim.vel),
        "velocities differ"
    );
}

/// A scene too big for an adapter's limits is found before anything is uploaded, and the error
/// names the limit (checked against wgpu's default limits, no adapter needed).
/// The tiny swatch converges in one length iteration per step, so after `LENGTH_CUT_AFTER` quiet
/// batches the step encodes one iteration instead of `LENGTH_BUDGET`: fewer dispatches, and the
/// run equals, bitwise, one whose budget is held at `LENGTH_BUDGET`.
#[test]
fn length_budget_is_cut_when_quiet_identically() {
    use yarnsim::gpu_step::{LENGTH_BUDGET, LENGTH_CUT_AFTER};
    let Some(gpu) = gpu_or_skip("length_budget_is_cut_when_quiet_identically") else {
        return;
    };
    let sets = ["contact.model=exact", "obstacle.0.point=[0, 0.7, 0]"];
    const STEPS: usize = 260;
    let run = |hold: bool| {
        let sim = fixture::scene_sim("tiny", &sets, 0);
        let mut g = GpuSim::new(&gpu, sim, &fixture::scene_contact("tiny", &sets)).unwrap();
        assert_eq!(g.length_budget(), LENGTH_BUDGET);
        if hold {
            g.set_length_budget(LENGTH_BUDGET).unwrap();
        }
        let d = g.dispatches_per_step();
        let mut batches = 0;
        g.advance(STEPS, &mut |_| batches += 1).unwrap();
        assert!(batches > LENGTH_CUT_AFTER, "{batches} batches");
        g.download().unwrap();
        (g, d)
    };
    let (cut, before) = run(false);
    let (held, _) = run(true);
    let (d_cut, d_held) = (cut.dispatches_per_step(), held.dispatches_per_step());
    eprintln!(
        "length budget {} after {STEPS} steps (held: {}); dispatches per step {before} → {d_cut} (held: {d_held})",
        cut.length_budget(),
        held.length_budget()
    );
    assert_eq!(cut.length_budget(), 1);
    assert_eq!(held.length_budget(), LENGTH_BUDGET);
    assert_eq!(cut.reruns(), 0, "the cut fell short");
    assert!(d_cut < d_held && d_held == before, "{d_cut} vs {d_held}");
    let bits = |p: &[[f32; 4]]| p.iter().flatten().map(|x| x.to_bits()).collect::<Vec<_>>();
    assert!(
        bits(&cut.sim.pos) == bits(&held.sim.pos),
        "positions differ"
    );
    assert!(
        bits(&cut.sim.vel) == bits(&held.sim.vel),
        "velocities differ"
    );
}

#[test]
fn scene_needs_are_checked_against_the_limits() {
    use yarnsim::gpu_step::{needs, SceneCounts};
    let limits = wgpu::Limits::default();
    let small = SceneCounts {
        points: 26_101,
        edges: 26_100,
        bends: 26_099,
        segments: 26_098,
        block_points: 52_202,
        balls: 90,
        obstacles: 30,
    };
    assert!(needs(&small, &limits).iter().all(|n| n.ok()));
    // 120 balls are more than `ball_contact`'s one thread may sweep.
    let crowded = SceneCounts {
        balls: 120,
        ..small
    };
    let failing: Vec<_> = needs(&crowded, &limits)
        .into_iter()
        .filter(|n| !n.ok())
        .collect();
    assert_eq!(failing.len(), 1, "{failing:?}");
    assert_eq!(failing[0].what, "ball_contact loop iterations");
    // Ten million control points: 160 MB of positions, over the 128 MiB default binding.
    let big = SceneCounts {
        points: 10_000_000,
        ..small
    };
    let failing: Vec<_> = needs(&big, &limits)
        .into_iter()
        .filter(|n| !n.ok())
        .collect();
    assert_eq!(failing.len(), 1, "{failing:?}");
    assert_eq!(failing[0].limit_name, "max_storage_buffer_binding_size");
    assert_eq!(failing[0].needed, 160_000_000);
}

/// Each kernel's pipeline is compiled once per device (`pipelines::PipelineCache`): a second GPU
/// step of the same contact model on a device compiles nothing, one of another model only the
/// kernels the first did not need, and a step from the kept pipelines runs bitwise as one on a
/// device that compiled its own.
#[test]
fn pipelines_are_compiled_once_per_device() {
    let Some(gpu) = gpu_or_skip("pipelines_are_compiled_once_per_device") else {
        return;
    };
    let bits = |g: &GpuSim| {
        let p = g.sim.pos.iter().chain(&g.sim.vel);
        p.flatten().map(|x| x.to_bits()).collect::<Vec<_>>()
    };
    // A device of its own, so that its count starts from nothing.
    let own = gpu.with_binding_limit(u64::MAX).unwrap();
    assert_eq!(own.pipelines_compiled(), 0);
    let acl = ["contact.model=acl", "obstacle.0.point=[0, 0.7, 0]"];
    let first = run_gpu(&own, &acl, 50);
    let n = own.pipelines_compiled();
    let dispatched: std::collections::BTreeSet<_> = first.dispatch_kernels().into_iter().collect();
    assert!(
        n >= dispatched.len() && dispatched.len() > 30,
        "{n} pipelines compiled for ACL's step, which dispatches {}",
        dispatched.len()
    );
    let again = run_gpu(&own, &acl, 50);
    assert_eq!(own.pipelines_compiled(), n, "the second ACL step compiled");
    let elsewhere = run_gpu(&gpu, &acl, 50);
    assert!(bits(&again) == bits(&first) && bits(&again) == bits(&elsewhere));
    let exact = ["contact.model=exact"];
    run_gpu(&own, &exact, 1);
    let m = own.pipelines_compiled();
    assert!(m > n, "exact contact's kernels were not compiled ({m})");
    run_gpu(&own, &exact, 1);
    assert_eq!(
        own.pipelines_compiled(),
        m,
        "the second exact step compiled"
    );
    eprintln!(
        "{n} pipelines for ACL's step, {} more for exact contact's",
        m - n
    );
}

/// A frame's ACL statistics are means over that frame's steps only: steps run before it outside
/// any frame (`GpuSim::step`) are not counted into it (they were, once: the first frame after them
/// reported 1.5× the sets). Checked against the CPU path's frame after the same steps, and so
/// are the frame's rebuilds per segment (`--color updates`), whose kernel (`segment_rebuilds`)
/// the GPU step records only while they are recorded.
#[test]
fn acl_frame_statistics_count_only_the_frames_steps() {
    let Some(gpu) = gpu_or_skip("acl_frame_statistics_count_only_the_frames_steps") else {
        return;
    };
    let sets = &["contact.model=acl"];
    let mut g = GpuSim::new(
        &gpu,
        fixture::scene_sim("tiny", sets, 0),
        &fixture::scene_contact("tiny", sets),
    )
    .unwrap();
    let mut cpu = fixture::scene_sim("tiny", sets, 0);
    for _ in 0..2 {
        g.step().unwrap();
        cpu.step().unwrap();
    }
    g.sim.params.steps_per_frame = 4;
    cpu.params.steps_per_frame = 4;
    let counting = |g: &GpuSim| g.dispatch_kernels().contains(&"segment_rebuilds");
    assert!(!counting(&g), "rebuilds counted before anyone asked");
    g.sim.record_rebuilds(true);
    cpu.record_rebuilds(true);
    let (gs, _) = g.frame().unwrap();
    let cs = cpu.frame().unwrap();
    assert!(counting(&g), "rebuilds asked for and not counted");
    let (mut gv, mut cv) = (Vec::new(), Vec::new());
    assert!(g
        .sim
        .segment_values(SegmentValue::Rebuilds, &mut gv)
        .unwrap());
    assert!(cpu.segment_values(SegmentValue::Rebuilds, &mut cv).unwrap());
    assert!(cv.iter().sum::<f32>() > 0.0, "no rebuilds in the frame");
    assert_eq!(gv, cv, "rebuilds per segment: GPU frame vs CPU frame");
    let get = |v: &[(&'static str, f64)], k: &str| v.iter().find(|(n, _)| *n == k).unwrap().1;
    for key in ["contact_sets", "rebuilds", "touching_pairs", "new_pairs"] {
        assert_eq!(
            get(&gs.contact, key),
            get(&cs.contact, key),
            "{key}: GPU frame vs CPU frame"
        );
    }
    assert!(get(&cs.contact, "contact_sets") > 10.0);
    assert!(get(&cs.contact, "touching_pairs") > 10.0);
    // And the frame's totals (`rebuilds_frame` in --stats).
    assert!(get(&cs.contact_frame_totals, "rebuilds_frame") > 0.0);
    assert_eq!(
        gs.contact_frame_totals, cs.contact_frame_totals,
        "frame totals: GPU frame vs CPU frame"
    );
    g.sim.record_rebuilds(false);
    g.frame().unwrap();
    assert!(!counting(&g), "rebuilds counted after they were turned off");
}

/// A frame whose batch is rerun mid-way (the candidate capacity is the first step's count, and the
/// count rises later in the batch) reports the same statistics as one that needed no rerun: each
/// step's counts are summed once, from the batch that completed, and so are its kernel times (an
/// attempt that overflowed used to add its timed step, whose kernels skip work, to the frame's).
#[test]
fn rerun_batches_count_once_in_frame_statistics() {
    let Some(gpu) = gpu_or_skip("rerun_batches_count_once_in_frame_statistics") else {
        return;
    };
    let sets = ["contact.model=exact", "simulation.fps=16200"];
    const STEPS: usize = 64;
    // From step 150 the swatch's candidate pairs rise (it swings into itself).
    const PRE: usize = 150;
    // The CPU path's candidate pairs per step (a frame per step at this fps).
    let mut cpu = fixture::scene_sim("tiny", &sets, PRE);
    assert_eq!(cpu.params.steps_per_frame, 1);
    let cands: Vec<f64> = (0..STEPS)
        .map(|_| {
            let c = cpu.frame().unwrap();
            c.contact
                .iter()
                .find(|(k, _)| *k == "candidate_segment_pairs")
                .unwrap()
                .1
        })
        .collect();
    let first = cands[0] as u32;
    let over = cands.iter().position(|&c| c > cands[0]);
    assert!(
        matches!(over, Some(k) if k > 0),
        "the candidates never exceed the first step's {first}: {cands:?}"
    );
    let run = |cand_cap: Option<u32>| {
        let sim = fixture::scene_sim("tiny", &sets, PRE);
        let mut g = GpuSim::new(&gpu, sim, &fixture::scene_contact("tiny", &sets)).unwrap();
        if let Some(c) = cand_cap {
            let (e, _, r) = g.contact_capacities().unwrap();
            g.set_contact_capacities((e, c, r)).unwrap();
        }
        g.sim.params.steps_per_frame = STEPS as u32;
        let (stats, times) = g.frame().unwrap();
        (stats, times, g.capacity_grows())
    };
    let (small, small_times, grows) = run(Some(first));
    let (ample, ample_times, none) = run(None);
    assert!(grows >= 1 && none == 0, "grew {grows} and {none} times");
    // Each rerun is counted under its cause: here every one is a capacity's.
    let extra = |v: &[(String, f64)], k: &str| v.iter().find(|(n, _)| n == k).unwrap().1;
    let reruns = extra(&small.extra, "batch_reruns");
    assert!(reruns >= 1.0);
    for cause in yarnsim::gpu_step::RERUN_CAUSES {
        let key = format!("reruns_{cause}");
        let want = if *cause == "capacity" { reruns } else { 0.0 };
        assert_eq!(extra(&small.extra, &key), want, "{key}");
        assert_eq!(extra(&ample.extra, &key), 0.0, "{key} without a rerun");
    }
    // The rerun sets the batch length back to its first value, so the two frames run in different
    // batches; each still ran in more than one (batches start short and double).
    assert!(small_times.batches >= ample_times.batches && ample_times.batches > 1);
    if small_times.timed {
        // A frame times the first step of its first batch only, however often that batch ran.
        assert_eq!((small_times.timed_steps, ample_times.timed_steps), (1, 1));
    } else {
        eprintln!("(no timestamp queries on this adapter: kernel times not checked)");
    }
    for key in ["touching_pairs", "candidate_segment_pairs"] {
        let get = |v: &[(&'static str, f64)]| v.iter().find(|(n, _)| *n == key).unwrap().1;
        assert!(get(&ample.contact) > 0.0, "{key}: no contact");
        assert_eq!(get(&small.contact), get(&ample.contact), "{key}");
    }
    let mean = cands.iter().sum::<f64>() / STEPS as f64;
    let got = small
        .contact
        .iter()
        .find(|(n, _)| *n == "candidate_segment_pairs")
        .unwrap()
        .1;
    assert!(
        (got - mean).abs() <= 1e-9 * mean,
        "{got} vs the CPU's {mean}"
    );
    assert_eq!(
        small.max_projection_iterations,
        ample.max_projection_iterations
    );
}

/// A fresh ACL step of the tiny swatch on an adapter with timestamp queries; `None` (the test
/// skipped, and why) without one.
fn timed_tiny_acl(name: &str) -> Option<GpuSim> {
    let gpu = gpu_or_skip(name)?;
    if !(gpu.device.features()).contains(wgpu::Features::TIMESTAMP_QUERY) {
        eprintln!("SKIPPED {name}: the adapter has no timestamp queries");
        return None;
    }
    let sets = ["contact.model=acl"];
    let sim = fixture::scene_sim("tiny", &sets, 0);
    Some(GpuSim::new(&gpu, sim, &fixture::scene_contact("tiny", &sets)).unwrap())
}

/// A frame's kernel times are its timed step's (the first of its first batch) though the step's
/// recording changes later in the frame, as ACL's does while a fresh run settles (its budgets are
/// cut after 64 quiet steps, its capacities grow). The times were kept per dispatch of the
/// recording, and a new recording set them to 0: an ACL frame whose recording changed after its
/// timed step (most do) reported 0 ms for every kernel, on lavapipe and on the H200 alike, until
/// 2026-12-06.
#[test]
fn kernel_times_outlive_a_change_of_the_recording() {
    let Some(mut g) = timed_tiny_acl("kernel_times_outlive_a_change_of_the_recording") else {
        return;
    };
    g.sim.params.steps_per_frame = 160;
    let (_, times) = g.frame().unwrap();
    assert!(times.timed && times.timed_steps == 1, "{times:?}");
    let total: f64 = times.kernel_ms.iter().map(|(_, ms)| ms).sum();
    assert!(total > 0.0 && times.contact_ms > 0.0, "{times:?}");
    assert!(times.contact_ms < total, "{times:?}");
    for k in [
        "set_force",
        "set_evaluate",
        "schedule_process",
        "bend_forces",
    ] {
        let ms = times.kernel_ms.iter().find(|(n, _)| *n == k);
        assert!(ms.is_some_and(|&(_, ms)| ms > 0.0), "{k}: {times:?}");
    }
    // (What the test is about: the frame's recording changed after its timed step, its kernels
    // are not the timed ones.)
    let count = |names: &[&str]| {
        let mut by = std::collections::BTreeMap::new();
        for k in names {
            *by.entry(k.to_string()).or_insert(0) += 1;
        }
        by
    };
    let now = count(&g.dispatch_kernels());
    let timed: Vec<&str> = times.kernel_ms.iter().map(|(k, _)| *k).collect();
    assert!(
        now.keys().cloned().collect::<Vec<_>>()
            != count(&timed).keys().cloned().collect::<Vec<_>>(),
        "the recording did not change in the frame: {now:?}"
    );
}

/// A step of more dispatches than one query set times (wgpu's 4,096 queries, two a dispatch) is
/// timed in several sets: the tiny swatch under ACL budgets that record some 5,800 dispatches (32
/// rebuild rounds, 8 merge passes of 8 label rounds, coalescing, the grid's newcomer search, the
/// set index), whose last kernels (the length solve, the frames) lie in the third set. Such a step
/// went untimed until 2026-12-06 (the afghan's on lavapipe, in pages: 4,113 dispatches).
#[test]
fn a_step_of_many_dispatches_is_timed_in_several_query_sets() {
    let name = "a_step_of_many_dispatches_is_timed_in_several_query_sets";
    let Some(mut g) = timed_tiny_acl(name) else {
        return;
    };
    let mut caps = g.acl_capacities().unwrap();
    caps.rounds = 32;
    caps.merge.passes = 8;
    caps.merge.rounds = 8;
    caps.coalesce = 1;
    caps.newcomers = 2;
    caps.merge.indexed = 1;
    g.set_acl_capacities(caps).unwrap();
    let n = g.dispatches_per_step();
    assert!(
        n > 4096,
        "{n} dispatches: fewer than three query sets' worth"
    );
    let kernels = g.dispatch_kernels();
    let last = kernels[4096..].to_vec();
    g.sim.params.steps_per_frame = 2;
    let (_, times) = g.frame().unwrap();
    assert!(times.timed && times.timed_steps == 1, "{times:?}");
    // Every kernel recorded only past the second set's queries has its time.
    let early: std::collections::BTreeSet<&str> = kernels[..4096].iter().copied().collect();
    let late: Vec<&str> = last.into_iter().filter(|k| !early.contains(k)).collect();
    assert!(late.contains(&"frame_solve"), "{late:?}");
    for k in late {
        let ms = times.kernel_ms.iter().find(|(n, _)| *n == k);
        assert!(ms.is_some_and(|&(_, ms)| ms > 0.0), "{k}: {ms:?}");
    }
}

/// The material frames after `frame_transport` are one `frame_solve` dispatch over the rod's tiles
/// at the default 2 sweeps, and `bend_twist`, `frame_sweeps` `theta_sweep` dispatches per colour
/// with edges and `plasticity` beyond `rod::FRAME_SOLVE_MAX_SWEEPS`. (The swatch's step also
/// makes its length stage's first assembly and reduction in `length_error_assemble_reduce`.) Both step as
/// the CPU path does: 60 steps of the swatch (its yarn of 1,176 edges in 5 tiles, so the halos are
/// in the step) and of the tiny swatch with 33 sweeps, positions within 1e-3 r of the CPU's, as in
/// [`whole_run_parity`] (whose runs of the tiny swatch solve in one tile).
#[test]
fn frame_solve_in_tiles_or_by_colour_steps_as_the_cpu_path() {
    let Some(gpu) = gpu_or_skip("frame_solve_in_tiles_or_by_colour_steps_as_the_cpu_path") else {
        return;
    };
    const STEPS: usize = 60;
    let count = |g: &GpuSim, k: &str| g.dispatch_kernels().iter().filter(|x| **x == k).count();
    for (name, sweeps) in [
        ("swatch", None),
        ("tiny", Some(yarnsim::rod::FRAME_SOLVE_MAX_SWEEPS + 1)),
    ] {
        let sets = ["contact.model=none", "simulation.frames=1"];
        let sim = || {
            let mut s = fixture::scene_sim(name, &sets, 0);
            if let Some(n) = sweeps {
                s.set_frame_sweeps(n);
            }
            s
        };
        let cs = sim().rod.color_start;
        // A colour without edges (the third, on open yarns) is not dispatched.
        let colours = cs.windows(2).filter(|w| w[1] > w[0]).count();
        let mut g = GpuSim::new(&gpu, sim(), &fixture::scene_contact(name, &sets)).unwrap();
        let want = match sweeps {
            None => (1, 0),
            Some(n) => (0, colours * n as usize),
        };
        assert_eq!(
            (count(&g, "frame_solve"), count(&g, "theta_sweep")),
            want,
            "{name}: frame_solve and theta_sweep dispatches"
        );
        if name == "swatch" {
            // Its 1,176 edges are more than length_top takes: level 0's reduction is made with
            // the first assembly (length_error_assemble_reduce), so its step covers that kernel.
            // (The later recorded iterations reduce on their own.)
            assert_eq!(
                (
                    count(&g, "length_error_assemble_reduce"),
                    count(&g, "length_error_assemble")
                ),
                (1, 0),
                "swatch: the length stage's first assembly and reduction"
            );
        }
        // bend_twist and plasticity are frame_solve's, or dispatches of their own.
        let own = sweeps.is_some() as usize;
        assert_eq!(
            (count(&g, "bend_twist"), count(&g, "plasticity")),
            (own, own),
            "{name}: bend_twist and plasticity dispatches"
        );
        g.steps(STEPS).unwrap_or_else(|e| panic!("{e}"));
        g.sync_host().unwrap();
        let mut cpu = sim();
        for _ in 0..STEPS {
            cpu.step().unwrap();
        }
        let r = cpu.params.radius;
        let (worst, at) = fixture::max_rel_diff(&g.sim.pos, &cpu.pos, r);
        let start = sim();
        let (moved, _) = fixture::max_rel_diff(&start.pos, &cpu.pos, r);
        let turned = g
            .sim
            .rod
            .frames
            .iter()
            .zip(&start.rod.frames)
            .map(|(a, b)| (a.u[3] - b.u[3]).abs())
            .fold(0.0f32, f32::max);
        let dtheta = g
            .sim
            .rod
            .frames
            .iter()
            .zip(&cpu.rod.frames)
            .map(|(a, b)| (a.u[3] - b.u[3]).abs())
            .fold(0.0f32, f32::max);
        eprintln!("{name}: worst position difference after {STEPS} steps {worst:.3e} r (point {at}); moved {moved:.3} r; θ turned by up to {turned:.3e}, GPU and CPU θ {dtheta:.3e} apart");
        assert!(
            worst < 1e-3,
            "{name}: GPU and CPU differ by {worst:e} r at point {at}"
        );
        assert!(moved > 0.01, "{name}: the cloth barely moved ({moved} r)");
        assert!(turned > 1e-4, "{name}: no material angle turned");
    }
}

/// Without glued points or ties the step dispatches `integrate_velocity_setup` instead of
/// `integrate_velocity` and `length_setup`, and without free balls `nonrigid_damping_integrate`
/// instead of `nonrigid_damping`, `object_contact` and `integrate_position` (each one's parity test
/// shows it bit for bit the kernels it replaces). A small swatch without pins, falling onto a floor and a sphere from just beyond
/// their contact distance, steps as the CPU path does: 60 steps, positions within 1e-3 r of the CPU's, as in
/// [`whole_run_parity`], with points held up by both obstacles. The tiny swatch (pinned: glued
/// points) keeps `integrate_velocity` and `length_setup`. (Scenes with free balls keep the three:
/// tests/gpu_balls.rs.)
#[test]
fn fused_point_stages_step_as_the_cpu_path() {
    let Some(gpu) = gpu_or_skip("fused_point_stages_step_as_the_cpu_path") else {
        return;
    };
    const STEPS: usize = 60;
    let count = |g: &GpuSim, k: &str| g.dispatch_kernels().iter().filter(|x| **x == k).count();
    let text = r#"
[contact]
model = "none"
[relax]
time = 0
[[cloth]]
source.generator = { pattern = "stockinette", wales = 6, courses = 6 }
rotate_deg = [-90, 0, 0]
[[obstacle]]
type = "plane"
point = [0, 0, 0]
normal = [0, 1, 0]
friction = 0.3
[[obstacle]]
type = "sphere"
center = [0, -2, 0]
radius = 2.0
friction = 0.3
"#;
    let scene = yarnsim::scene::Scene::from_toml_str(text, "unpinned").unwrap();
    let sim = || {
        let build = yarnsim::scene::build_curves(&scene, std::path::Path::new(".")).unwrap();
        let pins = yarnsim::scene::pinned_points(&scene, &build).unwrap();
        let mut s = yarnsim::sim::Sim::from_build(&scene, &build, &pins).unwrap();
        // The lowest points 1.02 r above the floor and the sphere's top, so that they fall into
        // the contact distance r within the steps (a point placed inside it would be thrown out
        // at (r − d) / h).
        let low = s.pos.iter().map(|p| p[1]).fold(f32::MAX, f32::min);
        let lift = 1.02 * s.params.radius - low;
        for p in &mut s.pos {
            p[1] += lift;
        }
        s
    };
    let start = sim();
    assert_eq!(start.step_params().num_glue, 0);
    let mut g = GpuSim::new(&gpu, sim(), &scene.contact).unwrap();
    for (k, n) in [
        ("integrate_velocity_setup", 1),
        ("nonrigid_damping_integrate", 1),
        ("integrate_velocity", 0),
        ("length_setup", 0),
        ("nonrigid_damping", 0),
        ("object_contact_integrate", 0),
        ("object_contact", 0),
        ("integrate_position", 0),
    ] {
        assert_eq!(count(&g, k), n, "unpinned swatch: {k} dispatches");
    }
    g.steps(STEPS).unwrap_or_else(|e| panic!("{e}"));
    g.sync_host().unwrap();
    let mut cpu = sim();
    for _ in 0..STEPS {
        cpu.step().unwrap();
    }
    let r = cpu.params.radius;
    let (worst, at) = fixture::max_rel_diff(&g.sim.pos, &cpu.pos, r);
    let (moved, _) = fixture::max_rel_diff(&start.pos, &cpu.pos, r);
    // The obstacles hold the points that reached them (they would have fallen 0.04 r into them):
    // none is nearer than r to either, and some are at r.
    let gap = |p: &[f32; 4]| {
        let sphere = (p[0] * p[0] + (p[1] + 2.0) * (p[1] + 2.0) + p[2] * p[2]).sqrt() - 2.0;
        p[1].min(sphere) / r
    };
    let nearest = cpu.pos.iter().map(gap).fold(f32::MAX, f32::min);
    let held = cpu.pos.iter().filter(|p| gap(p) < 1.001).count();
    assert!(nearest > 0.999, "a point {nearest} r from an obstacle");
    eprintln!("unpinned swatch: worst position difference after {STEPS} steps {worst:.3e} r (point {at}); moved {moved:.3} r; {held} points on the obstacles");
    assert!(
        worst < 1e-3,
        "GPU and CPU differ by {worst:e} r at point {at}"
    );
    assert!(moved > 0.01, "the cloth barely moved ({moved} r)");
    assert!(held >= 20, "only {held} points on the obstacles");

    let sets = ["contact.model=none"];
    let g = GpuSim::new(
        &gpu,
        fixture::scene_sim("tiny", &sets, 0),
        &fixture::scene_contact("tiny", &sets),
    )
    .unwrap();
    for (k, n) in [
        ("integrate_velocity_setup", 0),
        ("integrate_velocity", 1),
        ("length_setup", 1),
        ("nonrigid_damping_integrate", 1),
    ] {
        assert_eq!(count(&g, k), n, "tiny: {k} dispatches");
    }
}

/// The ACL step's bookkeeping in the fewest dispatches: with the budgets of a quiet run (no
/// coalescing) the scheduler's releases are counted, scanned and sized in `release_scan_sizes`,
/// the kept entries placed by `entries_compact` from `entries_keep`'s group sums (no scan between
/// them), and `acl_counts`' scheduled phase made with the evaluation's plan in
/// `acl_scheduled_plan`; every rebuild round's `pool_alloc` straight after `pool_alloc_size`
/// (its offsets from the latter's group sums, no scan between); with coalescing, the scheduled
/// phase in `coalesce_heads` (no `acl_counts` dispatch, the merge chain's first right after the
/// scheduler's last), and after it `acl_coalesced_plan`, which makes `acl_counts`' coalesced phase
/// with the evaluation's plan (no `count_plan` dispatch). (Each fused kernel's parity test shows it bit for bit the kernels it replaces;
/// the step's parity with the CPU path is `whole_run_parity`'s and tests/gpu_acl_step.rs'.)
#[test]
fn acl_step_records_the_fused_bookkeeping() {
    let Some(gpu) = gpu_or_skip("acl_step_records_the_fused_bookkeeping") else {
        return;
    };
    let sets = ["contact.model=acl"];
    let sim = fixture::scene_sim("tiny", &sets, 0);
    let mut g = GpuSim::new(&gpu, sim, &fixture::scene_contact("tiny", &sets)).unwrap();
    let count = |g: &GpuSim, k: &str| g.dispatch_kernels().iter().filter(|x| **x == k).count();
    let mut caps = g.acl_capacities().expect("ACL");
    for coalesce in [0, 1] {
        caps.coalesce = coalesce;
        g.set_acl_capacities(caps).unwrap();
        let quiet = (coalesce == 0) as usize;
        for (k, n) in [
            ("release_scan_sizes", 1),
            ("release_count", 0),
            ("sched_sizes", 0),
            ("acl_scheduled_plan", quiet),
            ("acl_coalesced_plan", 1 - quiet),
            ("acl_counts", 0),
            ("coalesce_heads", 1 - quiet),
        ] {
            assert_eq!(count(&g, k), n, "coalesce {coalesce}: {k} dispatches");
        }
        let ks = g.dispatch_kernels();
        let at = |k: &str| ks.iter().position(|x| *x == k).unwrap();
        if quiet == 0 {
            assert_eq!(
                at("coalesce_heads"),
                at("sched_history") + 1,
                "coalescing straight after the scheduler"
            );
        }
        assert_eq!(
            at("entries_compact"),
            at("entries_keep") + 1,
            "coalesce {coalesce}: no scan between the kept flags and the compaction"
        );
        let sizes: Vec<usize> = (0..ks.len())
            .filter(|&i| ks[i] == "pool_alloc_size")
            .collect();
        assert_eq!(sizes.len(), caps.rounds as usize, "coalesce {coalesce}");
        for i in sizes {
            assert_eq!(
                ks[i + 1],
                "pool_alloc",
                "coalesce {coalesce}: no scan between the allocation's sums and its offsets"
            );
        }
        let evaluate = at("set_evaluate");
        assert_eq!(
            ks[evaluate - 1],
            if quiet == 1 {
                "acl_scheduled_plan"
            } else {
                "acl_coalesced_plan"
            },
            "coalesce {coalesce}: the evaluation's plan"
        );
    }
}

/// A scene whose first ACL capacities would pass the device's binding limit starts within it
/// (`AclCaps::fit_binding`: the sack's 330,176 segments asked the scheduler for 422 MB of
/// candidates, and GpuSim::new panicked in wgpu on lavapipe's 128 MiB), only the capacities over
/// it lowered; and a growth past the limit is an error that names the capacity and the limit,
/// made before any buffer, not a panic or a silent loss.
#[test]
fn acl_capacities_stay_within_the_binding_limit() {
    let limit = 128u64 << 20;
    let first = AclCaps::for_segments(330_176);
    assert!(
        first.over_binding(limit).is_some(),
        "the test needs an estimate past the limit"
    );
    let mut fit = first;
    fit.fit_binding(limit);
    assert_eq!(fit.over_binding(limit), None);
    for ((name, before), (_, after)) in first.binding_bytes().iter().zip(fit.binding_bytes()) {
        if *before <= limit || AclCaps::paged_within(name, limit) {
            // (The pools in pages, src/acl/pages.rs, each page within the limit.)
            assert_eq!(after, *before, "{name} was within the limit and changed");
        } else {
            // As much as fits.
            assert!(
                after <= limit && after > limit - limit / 64,
                "{name}: {after} bytes"
            );
        }
    }
    // What `yarnsim info` lists as lowered: exactly the estimates past the limit.
    let limits = wgpu::Limits {
        max_storage_buffer_binding_size: limit,
        ..wgpu::Limits::default()
    };
    let over: Vec<_> = first
        .binding_bytes()
        .into_iter()
        .filter(|&(_, b)| b > limit)
        .collect();
    // The sack's first blocks pool passes the limit in pages; a device of 1 MiB bindings cannot
    // page it (the largest set alone is 3.2 MB of blocks) and bounds it as the others.
    assert!(over.iter().any(|r| r.0 == "blocks"));
    assert!(AclCaps::paged_within("blocks", limit) && !AclCaps::paged_within("blocks", 1 << 20));
    assert!(!AclCaps::paged_within("sched.cand", limit));
    let over: Vec<_> = over
        .into_iter()
        .filter(|r| !AclCaps::paged_within(r.0, limit))
        .collect();
    assert!(!over.is_empty());
    assert_eq!(yarnsim::gpu_step::acl_lowered(330_176, &limits), over);
    assert_eq!(yarnsim::gpu_step::acl_lowered(1_000, &limits), vec![]);
    // What it lists as paged instead: the sack's first blocks pool (396 MB).
    let paged = yarnsim::gpu_step::acl_paged(330_176, &limits);
    assert!(
        paged.iter().any(|&(c, b)| c == "blocks" && b > limit),
        "{paged:?}"
    );
    assert!(paged.iter().all(|r| !over.contains(r)));
    assert_eq!(yarnsim::gpu_step::acl_paged(1_000, &limits), vec![]);
    let Some(gpu) = gpu_or_skip("acl_capacities_stay_within_the_binding_limit") else {
        return;
    };
    let sets = ["contact.model=acl"];
    let sim = fixture::scene_sim("tiny", &sets, 0);
    let mut g = GpuSim::new(&gpu, sim, &fixture::scene_contact("tiny", &sets)).unwrap();
    let device_limit = gpu.device.limits().max_storage_buffer_binding_size;
    let mut caps = g.acl_capacities().unwrap();
    caps.sched.cand = (device_limit / 16 + 1).min(u32::MAX as u64) as u32;
    if caps.over_binding(device_limit).is_none() {
        eprintln!("the device binds more than 2^32 candidates' bytes: no capacity can pass it");
        return;
    }
    let err = g.set_acl_capacities(caps).unwrap_err().to_string();
    assert!(
        err.contains("sched.cand") && err.contains("max_storage_buffer_binding_size"),
        "{err}"
    );
    // Nothing was lost: the sim runs on at its capacities.
    assert_ne!(g.acl_capacities().unwrap(), caps);
    g.steps(4).unwrap();
}

/// A growth whose room would pass the binding limit grows only as far as fits, and one whose
/// count cannot grow at all is an error naming the capacity and the bytes it needed: the
/// sweater's schedule table on lavapipe counted 7.6 million entries (122 MB, within the 134 MB
/// limit) and the run stopped because room for a quarter more (152 MB) did not fit.
/// ACL's buffers of the scene's own size (position snapshots, movement windows, …) are checked
/// against the device's binding limit before any is made: a device that binds less than the
/// largest is refused with the limit error naming that buffer (not wgpu's validation error of
/// some bind group), and `acl_needs` names it too.
#[test]
fn acl_fixed_buffers_past_the_binding_limit_are_a_limit_error() {
    let Some(gpu) = gpu_or_skip("acl_fixed_buffers_past_the_binding_limit_are_a_limit_error")
    else {
        return;
    };
    let sets = ["contact.model=acl"];
    let sim = fixture::scene_sim("tiny", &sets, 0);
    let contact = fixture::scene_contact("tiny", &sets);
    let counts = yarnsim::gpu_step::SceneCounts::of(&sim);
    let q = sim.step_params().quadrature;
    let needs = yarnsim::gpu_step::acl_needs(&counts, q, contact.max_bin, &gpu.device.limits());
    let largest = needs.iter().max_by_key(|n| n.needed).unwrap().clone();
    assert!(largest.ok(), "{largest:?}");
    let small = gpu.with_binding_limit(largest.needed - 1).unwrap();
    let Err(err) = GpuSim::new(&small, sim, &contact) else {
        panic!("a device binding {} bytes ran the step", largest.needed - 1);
    };
    let msg = err.to_string();
    assert!(
        matches!(err, yarnsim::gpu_step::GpuStepError::Limit { needed, .. } if needed == largest.needed)
            && msg.contains(largest.what),
        "{msg}"
    );
}

#[test]
fn acl_growth_fits_the_binding_limit() {
    // Not a multiple of a record: 65,598 entries of 16 bytes fit.
    let limit = (1u64 << 20) + 1000;
    let mut now = AclCaps::for_segments(1_000);
    now.fit_binding(limit);
    assert_eq!(now.over_binding(limit), None);
    let unit = 16;
    assert_eq!(
        now.binding_bytes()[0],
        ("sched.entries", now.sched.entries as u64 * unit)
    );
    let most = 65_598;
    let with_entries = |c: &AclCaps, entries: u32| {
        let mut c = *c;
        c.sched.entries = entries;
        c
    };
    // Within the limit: as wanted.
    let within = with_entries(&now, 50_000);
    assert_eq!(now.grown_within(within, &within, limit), Ok(within));
    // The count's room within, the room ahead of need past the limit: the most that fits, and
    // only that capacity held.
    let needed = with_entries(&now, 60_000);
    let mut wanted = with_entries(&needed, 120_000);
    wanted.sched.cand = now.sched.cand + 1;
    let got = now.grown_within(wanted, &needed, limit).unwrap();
    assert_eq!(got, with_entries(&wanted, most));
    assert_eq!(got.over_binding(limit), None);
    // The count's room past the limit too: still the most that fits (the rerun tells whether
    // the count does).
    let needed = with_entries(&now, 80_000);
    assert_eq!(
        now.grown_within(wanted, &needed, limit),
        Ok(with_entries(&wanted, most))
    );
    // Already at the most and overflowed: the error.
    let full = with_entries(&now, most);
    assert_eq!(
        full.grown_within(wanted, &needed, limit),
        Err(("sched.entries", 80_000 * unit))
    );
    // Already at the most with room ahead of need only (no overflow): stays, no error.
    assert_eq!(
        full.grown_within(wanted, &full, limit),
        Ok(with_entries(&wanted, most))
    );
    // Never lowered: a capacity past the limit (set by hand; `set_acl_capacities` refuses it)
    // stays, and an overflow there is the error.
    let past = with_entries(&now, 70_000);
    assert_eq!(
        past.grown_within(wanted, &past, limit),
        Ok(with_entries(&wanted, 70_000))
    );
    assert_eq!(
        past.grown_within(wanted, &needed, limit),
        Err(("sched.entries", 80_000 * unit))
    );
}

/// On a device that binds less than a growth's room but more than every count (a stand-in for
/// the sweater's schedule table on lavapipe: `Gpu::with_binding_limit`), the run grows only as
/// far as fits and equals, bitwise, the run on the full device. On one that binds less than the
/// largest count, the run stops with the error that names a capacity whose count passed the
/// limit, at the start of the batch that overflowed, its state intact.
#[test]
fn acl_growth_within_a_smaller_binding_limit_runs_identically() {
    let Some(gpu) = gpu_or_skip("acl_growth_within_a_smaller_binding_limit_runs_identically")
    else {
        return;
    };
    let sets = ["contact.model=acl"];
    let run = |gpu: &yarnsim::gpu::Gpu| {
        let sim = fixture::scene_sim("tiny", &sets, 0);
        let mut g = GpuSim::new(gpu, sim, &fixture::scene_contact("tiny", &sets)).unwrap();
        // Small first capacities, so each grows from the counts.
        let mut c = AclCaps::all(16);
        c.sched.lookup_words = g.acl_capacities().unwrap().sched.lookup_words;
        g.set_acl_capacities(c).unwrap();
        let ran = (0..3).try_for_each(|_| g.steps(20));
        (ran, g)
    };
    let (ran, mut full) = run(&gpu);
    ran.unwrap();
    full.download().unwrap();
    let peak = full.acl_peak_counts().unwrap();
    let room = full.acl_capacities().unwrap();
    // Each row: its name, the bytes of its largest count, of its room.
    let rows: Vec<(&str, u64, u64)> = peak
        .binding_bytes()
        .into_iter()
        .zip(room.binding_bytes())
        .map(|((name, count), (_, room))| (name, count, room))
        .collect();
    // Room for every count.
    let limit = rows.iter().map(|r| r.1).max().unwrap().next_multiple_of(4);
    let held: Vec<_> = rows.iter().filter(|r| r.2 > limit).map(|r| r.0).collect();
    assert!(
        !held.is_empty(),
        "no room grew past {limit} bytes: the test would not hold a growth ({rows:?})"
    );
    let small = gpu.with_binding_limit(limit).unwrap();
    let (ran, mut limited) = run(&small);
    ran.unwrap();
    limited.download().unwrap();
    let caps = limited.acl_capacities().unwrap();
    eprintln!("limit {limit} bytes held {held:?}: {caps:?}");
    assert_eq!(caps.over_binding(limit), None);
    assert_ne!(caps, room, "no capacity was held at the limit");
    assert_eq!(limited.sim.pos, full.sim.pos, "positions differ");
    assert_eq!(limited.sim.vel, full.sim.vel, "velocities differ");

    // Less than the largest count.
    let (name, count, _) = *rows.iter().max_by_key(|r| r.1).unwrap();
    let limit = (count - 4) & !3;
    let small = gpu.with_binding_limit(limit).unwrap();
    let (ran, mut stopped) = run(&small);
    let step = check_past_limit(ran.unwrap_err(), limit, |what| {
        rows.iter().find(|r| r.0 == what).unwrap().1
    });
    assert!(stopped.sim.steps <= step && step < 60, "largest: {name}");
    stopped.download().unwrap();
    assert!(stopped
        .sim
        .pos
        .iter()
        .all(|p| p.iter().all(|x| x.is_finite())));
}

/// Checks that `err` is the binding error of a run on a device that binds `limit` bytes, less than
/// the largest count: it names a size whose peak bytes over the full run (`peak`) passed the
/// limit, and gives the bytes of the count that overflowed, past the limit and within that peak.
/// Returns its step.
fn check_past_limit(
    err: yarnsim::gpu_step::GpuStepError,
    limit: u64,
    peak: impl Fn(&str) -> u64,
) -> u64 {
    let message = err.to_string();
    let yarnsim::gpu_step::GpuStepError::Binding {
        step,
        what,
        count_bytes,
        ..
    } = err
    else {
        panic!("not the binding error: {message}");
    };
    let most = peak(what);
    assert!(
        most > limit,
        "{what}'s peak ({most} bytes) fit {limit}: {message}"
    );
    let counted = count_bytes.expect("an overflow's count");
    assert!(counted > limit && counted <= most, "{message}");
    assert!(
        message.contains(&counted.to_string())
            && message.contains(what)
            && message.contains("max_storage_buffer_binding_size"),
        "{message}"
    );
    step
}

/// The exact path's growth within the binding limit, as ACL's: room past the limit only as far as
/// fits, an error when a size that overflowed cannot grow; the first capacities alike from the
/// counts of the CPU's detection.
#[test]
fn exact_growth_fits_the_binding_limit() {
    use yarnsim::contact::exact_gpu::grown_within;
    // 144 bytes a candidate pair's record: 7,281 fit.
    let limit = 7_282 * 144 - 1;
    let now = (1_000, 5_000, 2_000);
    assert_eq!(
        grown_within(now, (1_250, 6_000, 2_000), limit),
        Ok((1_250, 6_000, 2_000))
    );
    assert_eq!(
        grown_within(now, (1_000, 9_000, 2_000), limit),
        Ok((1_000, 7_281, 2_000))
    );
    assert_eq!(
        grown_within((1_000, 7_281, 2_000), (1_000, 9_000, 2_000), limit),
        Err(("exact.candidates", 9_000 * 144))
    );
    // The first capacities: a quarter more than the counts, as far as fits; an error when the
    // candidates' count does not fit; the records' (an estimate) only lowered.
    use yarnsim::contact::exact_gpu::first_capacities_within;
    assert_eq!(
        first_capacities_within((1_000, 7_000, 7_000), limit),
        Ok((1_250, 7_281, 8_192))
    );
    assert_eq!(
        first_capacities_within((1_000, 7_281, 7_281), limit),
        Ok((1_250, 7_281, 8_192))
    );
    assert_eq!(
        first_capacities_within((1_000, 7_282, 7_282), limit),
        Err(("exact.candidates", 9_102 * 144))
    );
    assert_eq!(
        first_capacities_within((1_000, 100, 9_000), limit),
        Ok((1_250, 125, 8_192))
    );
    // Records: 128 bytes each (eight gather slots).
    assert_eq!(
        grown_within(now, (1_000, 4_000, 20_000), 10_000 * 128 + 127),
        Ok((1_000, 4_000, 10_000))
    );
}

/// On a device that binds less than the exact path's room but more than its counts, the run
/// grows only as far as fits and equals, bitwise, the run on the full device; below the largest
/// count it stops with the error naming a size whose count passed the limit.
#[test]
fn exact_growth_within_a_smaller_binding_limit_runs_identically() {
    let Some(gpu) = gpu_or_skip("exact_growth_within_a_smaller_binding_limit_runs_identically")
    else {
        return;
    };
    let sets = ["contact.model=exact"];
    let contact = fixture::scene_contact("tiny", &sets);
    let run = |gpu: &yarnsim::gpu::Gpu| {
        let mut g = GpuSim::new(gpu, fixture::scene_sim("tiny", &sets, 0), &contact)?;
        // Small first capacities, so each grows from the counts.
        g.set_contact_capacities((16, 16, 16))?;
        for _ in 0..3 {
            g.steps(20)?;
        }
        g.download()?;
        Ok::<_, yarnsim::gpu_step::GpuStepError>(g)
    };
    let full = run(&gpu).unwrap();
    let (peak, room) = (
        full.exact_peak_counts().unwrap(),
        full.contact_capacities().unwrap(),
    );
    let units = yarnsim::contact::exact_gpu::binding_bytes(0, 0, (1, 1, 1)).map(|(_, b)| b);
    let units = [units[2], units[3], units[4]];
    let rows = [
        ("exact.entries", peak.0, room.0),
        ("exact.candidates", peak.1, room.1),
        ("exact.records", peak.2, room.2),
    ];
    let unit_of = |name: &str| units[rows.iter().position(|r| r.0 == name).unwrap()];
    let limit = rows
        .iter()
        .zip(units)
        .map(|(r, u)| r.1 as u64 * u)
        .max()
        .unwrap()
        .next_multiple_of(4);
    assert!(
        rows.iter().zip(units).any(|(r, u)| r.2 as u64 * u > limit),
        "no room grew past {limit} bytes: the test would not hold a growth ({rows:?})"
    );
    let limited = run(&gpu.with_binding_limit(limit).unwrap()).unwrap();
    let caps = limited.contact_capacities().unwrap();
    eprintln!("limit {limit} bytes: {caps:?} (full: {room:?}, peak {peak:?})");
    assert_ne!(caps, room, "no size was held at the limit");
    for ((name, _, _), (cap, u)) in rows
        .iter()
        .zip([caps.0, caps.1, caps.2].into_iter().zip(units))
    {
        assert!(cap as u64 * u <= limit, "{name}: {cap}");
    }
    assert_eq!(limited.sim.pos, full.sim.pos, "positions differ");
    assert_eq!(limited.sim.vel, full.sim.vel, "velocities differ");

    // Less than the largest count.
    let largest = rows
        .iter()
        .zip(units)
        .map(|(r, u)| r.1 as u64 * u)
        .max()
        .unwrap();
    let limit = (largest - 4) & !3;
    let err = run(&gpu.with_binding_limit(limit).unwrap())
        .err()
        .expect("an error");
    let step = check_past_limit(err, limit, |what| {
        let (_, count, _) = rows.iter().find(|r| r.0 == what).unwrap();
        *count as u64 * unit_of(what)
    });
    assert!(step < 60);
}

/// The exact path's capacities past what the device binds are an error that names the size and
/// the limit, checked before any buffer is made: the path built before stays and steps on, to the
/// same state as a run that never asked.
#[test]
fn exact_capacities_past_the_binding_limit_are_an_error() {
    let Some(gpu) = gpu_or_skip("exact_capacities_past_the_binding_limit_are_an_error") else {
        return;
    };
    let sets = ["contact.model=exact"];
    let contact = fixture::scene_contact("tiny", &sets);
    let mut g = GpuSim::new(&gpu, fixture::scene_sim("tiny", &sets, 0), &contact).unwrap();
    let mut plain = GpuSim::new(&gpu, fixture::scene_sim("tiny", &sets, 0), &contact).unwrap();
    let first = g.contact_capacities().unwrap();
    let limit = gpu.device.limits().max_storage_buffer_binding_size;
    // 144 bytes a candidate pair's record.
    let past = limit / 144 + 1;
    if past > u32::MAX as u64 {
        eprintln!("the device binds more than 2^32 candidate records: no capacity can pass it");
        return;
    }
    let err = g
        .set_contact_capacities((first.0, past as u32, first.2))
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("exact.candidates")
            && err.contains(&(past * 144).to_string())
            && err.contains("max_storage_buffer_binding_size"),
        "{err}"
    );
    assert_eq!(g.contact_capacities(), Some(first));
    for s in [&mut g, &mut plain] {
        s.steps(6).unwrap();
        s.download().unwrap();
    }
    assert_eq!(g.sim.steps, 6);
    assert_eq!(
        bytemuck::cast_slice::<_, u8>(&g.sim.pos),
        bytemuck::cast_slice::<_, u8>(&plain.sim.pos)
    );
}

/// Frames that run the next frame's first batches while their pass-through check runs on another
/// thread (`GpuSim::set_run_ahead`) step exactly as frames that do not: the tiny swatch with ACL
/// and a sphere pushed into it along keyframes (so each step's time matters, as its obstacle's
/// place), 4 frames of 24 steps, the host's positions and velocities bit for bit after every frame
/// and the frames' counts equal. Between frames the GPU's state is ahead of the host's, so what would
/// read or step it refuses (`GpuStepError::Ahead`) until the next frame has run, as does a next
/// frame shorter than what ran ahead.
#[test]
fn run_ahead_through_the_pass_through_check_changes_nothing() {
    use yarnsim::gpu_step::GpuStepError;
    let Some(gpu) = gpu_or_skip("run_ahead_through_the_pass_through_check_changes_nothing") else {
        return;
    };
    use yarnsim::scene::{self, Keyframe, Obstacle, Scene};
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("scenes");
    let mut sc = Scene::load(&dir.join("tiny.toml")).unwrap();
    sc.apply_set("contact.model=acl").unwrap();
    // Frames of 24 steps (dt = 1/16,200 s).
    sc.apply_set("simulation.fps=675").unwrap();
    // A sphere just clear of the swatch's front (its control points' largest z, plus the yarn's
    // radius and 0.01 cm) at its middle, moving into it at 60 cm/s: it meets the swatch within a
    // few steps and keeps pushing it through the 4 frames (so a step run at another time would
    // place it elsewhere and change the positions).
    let build = scene::build_curves(&sc, &dir).unwrap();
    let points: Vec<[f32; 3]> = build.curves.iter().flat_map(|c| c.points.clone()).collect();
    let mid = |i: usize| points.iter().map(|p| p[i]).sum::<f32>() / points.len() as f32;
    let front = points.iter().map(|p| p[2]).fold(f32::MIN, f32::max);
    let key = |t: f64, z: f32| Keyframe {
        t,
        offset: [0.0, 0.0, z],
        offset_b: None,
    };
    sc.obstacle.push(Obstacle::Sphere {
        center: [mid(0), mid(1), front + sc.yarn.radius + 0.01 + 1.0],
        radius: 1.0,
        friction: 0.3,
        keyframes: vec![key(0.0, 0.0), key(0.01, -0.6)],
    });
    let pins = scene::pinned_points(&sc, &build).unwrap();
    let make = || {
        let sim = yarnsim::sim::Sim::from_build(&sc, &build, &pins).unwrap();
        assert_eq!(sim.params.steps_per_frame, 24);
        GpuSim::new(&gpu, sim, &sc.contact).unwrap()
    };
    let (mut a, mut b) = (make(), make());
    let refused = |r: Result<(), GpuStepError>, what: &str| match r {
        Err(GpuStepError::Ahead { steps, .. }) => assert!(steps > 0, "{what}"),
        other => panic!("{what} while steps are ahead: {other:?}"),
    };
    let get = |v: &[(&'static str, f64)], k: &str| v.iter().find(|(n, _)| *n == k).unwrap().1;
    for frame in 1..=4u32 {
        a.set_run_ahead(frame < 4);
        let (sa, ta) = a.frame().unwrap();
        let (sb, tb) = b.frame().unwrap();
        assert_eq!(
            (sa.frame, sa.steps, sa.sim_time),
            (sb.frame, sb.steps, sb.sim_time)
        );
        assert_eq!((a.sim.steps, a.sim.frames), (24 * frame as u64, frame));
        assert!(
            a.sim.pos == b.sim.pos,
            "positions differ after frame {frame}"
        );
        assert!(
            a.sim.vel == b.sim.vel,
            "velocities differ after frame {frame}"
        );
        for key in ["contact_sets", "rebuilds", "touching_pairs", "new_pairs"] {
            assert_eq!(
                get(&sa.contact, key),
                get(&sb.contact, key),
                "{key}, frame {frame}"
            );
        }
        assert_eq!(ta.batches, tb.batches, "batches of frame {frame}");
        assert_eq!(tb.ahead_steps, 0);
        if frame < 4 {
            // At least the next frame's first batch ran through the check.
            assert!(ta.ahead_steps > 0 && ta.ahead_steps == a.steps_ahead());
            refused(a.download(), "download");
            refused(a.sync_host(), "sync_host");
            refused(a.step(), "step");
            refused(a.export_contact_state().map(|_| ()), "export_contact_state");
            let mut pairs = (Vec::new(), Vec::new());
            refused(
                a.contact_pairs(&mut pairs.0, &mut pairs.1).map(|_| ()),
                "contact_pairs",
            );
        } else {
            assert_eq!((ta.ahead_steps, a.steps_ahead()), (0, 0));
        }
    }
    // The whole state, rod frames included, once nothing is ahead.
    let (a, b) = (a.into_sim().unwrap(), b.into_sim().unwrap());
    assert!(a.rod.frames == b.rod.frames, "edge frames differ");
    // A next frame shorter than what ran ahead is refused, not run short or past its end.
    let mut c = make();
    c.set_run_ahead(true);
    c.frame().unwrap();
    let ahead = c.steps_ahead();
    assert!(ahead > 0);
    c.sim.params.steps_per_frame = ahead as u32 - 1;
    refused(
        c.frame().map(|_| ()),
        "a frame shorter than its steps run ahead",
    );
}

/// An error of a step run ahead of its frame (`GpuSim::set_run_ahead`) is the next frame's: the
/// frame that ran it ahead returns its own report, and the next returns the error, word for word
/// the one a run without run-ahead meets at that step. The error: the tiny swatch's ACL buffers
/// growing past a 64 KiB binding limit; the frames are cut so that the failing step is the next
/// frame's first, which the first batch run ahead holds.
#[test]
fn an_error_of_a_step_run_ahead_is_the_next_frames() {
    let Some(gpu) = gpu_or_skip("an_error_of_a_step_run_ahead_is_the_next_frames") else {
        return;
    };
    let gpu = gpu.with_binding_limit(65536).unwrap();
    let sets = &["contact.model=acl"];
    let make = || {
        GpuSim::new(
            &gpu,
            fixture::scene_sim("tiny", sets, 0),
            &fixture::scene_contact("tiny", sets),
        )
        .unwrap()
    };
    // Without run-ahead, step by step: the failing step.
    let mut g = make();
    let err = loop {
        if let Err(e) = g.step() {
            break e;
        }
        assert!(g.sim.steps < 2000, "no binding limit met");
    };
    let msg = err.to_string();
    assert!(msg.contains("65536"), "{msg}");
    let failing = (0..=g.sim.steps)
        .find(|s| msg.starts_with(&format!("step {s}:")))
        .unwrap_or_else(|| panic!("no step named: {msg}"));
    assert!(failing > 0, "{msg}");
    let mut a = make();
    a.sim.params.steps_per_frame = failing as u32;
    a.set_run_ahead(true);
    a.frame().expect("the frame before the failing step");
    assert_eq!((a.sim.steps, a.sim.frames), (failing, 1));
    // The batch run ahead failed at its first step: nothing ran ahead, an error is held.
    assert_eq!(a.steps_ahead(), 0);
    match a.download() {
        Err(yarnsim::gpu_step::GpuStepError::Ahead { steps: 0, .. }) => {}
        other => panic!("download with an error held from the steps ahead: {other:?}"),
    }
    let ahead = a.frame().expect_err("the frame of the failing step");
    assert_eq!(
        ahead.to_string(),
        msg,
        "the error with and without run-ahead"
    );
}
