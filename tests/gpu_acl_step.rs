//! ACL's whole step on the GPU (`acl::gpu::AclGpu`) against the CPU path (`AclContact::step`), step
//! by step: the default swatch swings down on the CPU (from its 600th step, once it moves); an
//! `AclContact` and an `AclGpu`, both fresh, run alongside on the same positions. After every step
//! the contact force, the set table (every header field, pool offsets included: the GPU compacts its
//! pools between steps by the CPU's rule, so the layouts agree), the stiction springs and the counts
//! must be identical, except where the polar decomposition enters; and the rebuilds counted per
//! segment (`segment_rebuilds`, for `--color updates`) equal the CPU path's counts, summed.
//!
//! Every stage is a kernel whose twin the CPU path runs. On lavapipe, where CI runs, every kernel
//! but `set_evaluate` rounds as its twin does, and `set_evaluate`'s polar iteration is within its
//! stated bound of the twin's; a GPU that fuses multiply-adds (NVIDIA: measured on an H100) rounds
//! differently in every kernel, by a few `U` of the operands' scale. So: integers (counts, boxes,
//! offsets, flags, pairs) must be identical; the headers' positions (ε, guards, centre) and the
//! springs' rest offsets within 64 `U P` (`P` the largest coordinate; see tests/gpu_acl_rebuild.rs
//! for the derivation), `f_ref` within 128 `U` of itself; the warm-start quaternions within
//! [`QUAT_TOL`]; the forces within [`FORCE_TOL`] with the default τ and within [`ROUND_TOL`] with
//! τ = 0 (every set rebuilt every step: no rotated model is used). Where the GPU's quadrature points
//! differ from the twin's (a fusing GPU: by an ulp), a shallow pair's force, `f'(s)` cancelling
//! near `s = 4r²`, moves by the pair's stiffness times that difference, far more than a rounding of
//! itself (measured on an H200: `f_ref` 2.6e-4 apart): so the positions, `f_ref` and the forces get
//! a term in the measured difference `dx`, derived in `run` (0 on lavapipe, where the τ = 0 forces
//! are bitwise). A difference beyond that is a wiring error of the step (a count copied to the
//! wrong place, a stage out of order), which is what this test is for.
//!
//! Starting from capacities of 16 (and 1 rebuild round, 1 merge pass of 1 label round) must give the
//! identical result: every overflow or budget is flagged, the state restored and the step rerun.

#[path = "support/acl_gpu.rs"]
mod acl_gpu;
#[path = "support/close.rs"]
mod close;
#[path = "support/fixture.rs"]
mod fixture;

use acl_gpu::acl_gpu;
use fixture::{bytes, scene_contact, scene_sim};
use yarnsim::acl::gpu::AclCaps;
use yarnsim::acl::AclContact;
use yarnsim::contact::ContactForce;
use yarnsim::gpu::testing::gpu_or_skip;

const PRE_STEPS: usize = 600;

/// The warm-start quaternions may differ by the polar iteration's own error (tests/gpu_acl.rs:
/// `δ = 40 U / λ̂` per rotation, `U = 2⁻²⁴`): 1e-6 is that bound for a Hessian gap `λ̂ ≥ 2.4e-3`,
/// which every set of the swatch has (tests/gpu_acl.rs lists the sets below 1e-3 and finds none
/// here). Measured: 6e-8.
const QUAT_TOL: f32 = 1e-6;
/// A rotation error `|ΔR|_F ≤ 2√2 |Δq|` enters a set's force row twice (rotating the deviation in
/// and the force out), so rows move by at most `2 · 2√2 · QUAT_TOL` of their size, and the rows of a
/// control point are summed: 1e-5 of the largest force component covers it with a margin of 1.8
/// for the roundings of the sums. Measured: 8.3e-7.
const FORCE_TOL: f32 = 1e-5;
/// With τ = 0 the force is the rebuilt models' `f0` gathered: each component a sum of at most 48
/// set rows, each of at most 16 roundings of scale at most the largest component, as (m + 16)·2U
/// bounds a sum of m terms (tests/gpu_acl_rebuild.rs): 128 U of the largest component.
const ROUND_TOL: f32 = 128.0 * close::U as f32;

/// Runs `steps` steps with the overrides `over` (besides ACL), comparing as the module doc says;
/// forces must agree within `force_tol` of the largest force component.
fn run(test: &str, over: &[&str], steps: usize, caps: AclCaps, force_tol: f32) {
    let Some(gpu) = gpu_or_skip(test) else {
        return;
    };
    let (dev, q) = (&gpu.device, &gpu.queue);
    let mut over = over.to_vec();
    over.push("contact.model=acl");
    let mut sim = scene_sim("swatch", &over, PRE_STEPS);
    let params = scene_contact("swatch", &over);
    let r = sim.step_params().radius;
    let mut cpu = AclContact::new(r, &params).unwrap();
    let mut host = AclContact::new(r, &params).unwrap();
    let (pipelines, shared, mut g) = acl_gpu(
        &gpu,
        &mut host,
        &sim.topo,
        &sim.pos,
        params.quadrature,
        caps,
    );
    // (Compared with the CPU path's below.)
    g.set_count_rebuilds(&gpu.device, &gpu.queue, &pipelines, true)
        .unwrap();
    // A rerun starts from pools poisoned past their lengths (a batch only appends to them, so
    // they are not saved: acl::gpu::POOLS).
    g.set_poison_after_restore(true);
    let (quad_weights, quad_arc, _) = host.gpu_tables(&sim.topo);
    let nq = sim.topo.segments.len() * params.quadrature as usize;
    let qparams = yarnsim::layout::Params {
        quadrature: params.quadrature,
        num_segments: sim.topo.segments.len() as u32,
        ..Default::default()
    };
    let mut cq = vec![[0.0f32; 4]; nq];
    let mut worst_dx = 0.0f64;
    let mut parted: Option<usize> = None;
    let zero = vec![[0.0f32; 4]; sim.pos.len()];
    let mut force = vec![[0.0f32; 4]; sim.pos.len()];
    let mut cpu_counts = vec![0.0f32; sim.topo.segments.len()];
    let (mut rebuilt, mut made, mut releases) = (0u64, 0u64, 0usize);
    let (mut worst_q, mut worst_f, mut differing) = (0.0f32, 0.0f32, 0usize);
    for n in 0..steps {
        sim.step().unwrap();
        force.fill([0.0; 4]);
        let st = cpu.step(&sim.topo, &sim.pos, &mut force).unwrap();
        q.write_buffer(shared.get("pos").unwrap(), 0, bytes(&sim.pos));
        q.write_buffer(shared.get("force").unwrap(), 0, bytes(&zero));
        let c = g.step(dev, q, &pipelines, &shared, n as u64).unwrap();
        let f = shared
            .read(dev, q, "force", (sim.pos.len() * 16) as u64)
            .unwrap();
        let gf: &[[f32; 4]] = bytemuck::cast_slice(&f);
        // The quadrature points both paths built the step on: the GPU's (kernel
        // `quadrature_points`, which may fuse) and the twin's. `dx` bounds how far apart a pair's
        // `x = y_i − y_j` starts on the two paths (0 on lavapipe, where they are bitwise equal).
        let gq = g.read::<[f32; 4]>(dev, q, "qpts", nq).unwrap();
        yarnsim::contact::quadrature_points(
            &qparams,
            &sim.topo.segments,
            &sim.pos,
            &quad_weights,
            &quad_arc,
            &mut cq,
        );
        let dq = gq
            .iter()
            .zip(&cq)
            .flat_map(|(a, b)| (0..3).map(move |c| (a[c] - b[c]).abs() as f64))
            .fold(0.0f64, f64::max);
        let dx = 2.0 * 3f64.sqrt() * dq;
        worst_dx = worst_dx.max(dx);
        let sets = cpu.sets();
        if dx > 0.0
            && (c.sizes.rebuilds as u64 != st.rebuilds || c.sizes.num_sets as usize != sets.len())
        {
            // A GPU whose quadrature points differ from the twin's (dx > 0: it fuses) may take a
            // decision that sits on its threshold the other way: one set rebuilt on one path and
            // not on the other (its rebuilt box then by a set). The states part there, so the
            // step-by-step comparison ends; the bound is the whole-run parity test's (1 set, 2
            // rebuilds). Each decision's margin against its threshold is checked where the inputs
            // are shared, in the kernels' own tests (tests/gpu_acl.rs). On lavapipe (dx = 0)
            // the counts must agree at every step.
            let (ds, dr) = (
                (c.sizes.num_sets as i64 - sets.len() as i64).abs(),
                (c.sizes.rebuilds as i64 - st.rebuilds as i64).abs(),
            );
            assert!(
                ds <= 1 && dr <= 2,
                "step {n}: sets / rebuilds gpu {} / {} vs cpu {} / {}",
                c.sizes.num_sets,
                c.sizes.rebuilds,
                sets.len(),
                st.rebuilds
            );
            eprintln!(
                "{test}: step {n}: a borderline decision went the other way on this GPU (rebuilds gpu {} cpu {}); compared {n} steps",
                c.sizes.rebuilds, st.rebuilds
            );
            parted = Some(n);
            break;
        }
        if c.sizes.num_sets as usize != sets.len() {
            eprintln!("step {n}: cpu {st:?}\ngpu sizes {:?}\nmerge {:?}\npools {:?}\nacl {:?}\nsched touching {:?} errors {}", c.sizes, c.merge, c.pools, c.acl, c.sched.touching, c.sched.errors);
        }
        assert_eq!(c.sizes.num_sets as usize, sets.len(), "step {n}: live sets");
        assert_eq!(c.sizes.rebuilds as u64, st.rebuilds, "step {n}: rebuilds");
        let gs = g
            .read::<yarnsim::acl::ContactSet>(dev, q, "sets", sets.len())
            .unwrap();
        // A touching pair's gradient `2κw f'(s) x` moves with x by at most its Hessian's norm,
        // `2κw (|f'| + 2s f'') ≤ 40 κw r² / s²` for s ≥ s_lo (f' = 1/(4r²) − 4r²/s², f'' = 8r²/s³,
        // s < 4r²), s_lo = (ε − dx)² (ε the set's smallest pair distance): so per touching pair
        // `H dx` with H = 40 κw r² / (ε − dx)⁴, κw the largest pair weight of the model.
        let kw_max = cpu
            .pools()
            .watch
            .iter()
            .fold(0.0f64, |m, w| m.max(w.kw.abs() as f64));
        let r64 = r as f64;
        let pair_h = |s: &yarnsim::acl::ContactSet| {
            let lo = (s.eps as f64 - dx).max(r64 * 1e-3);
            40.0 * kw_max * r64 * r64 / lo.powi(4)
        };
        // ContactSet words: eps 8, guards 13–14, f_ref 15, the quaternion 16–19 (compared
        // below), the centre 20–23; the rest are integers. Positions move with dx too.
        let pos_tol = 64.0 * close::U * close::coord_scale(&sim.pos) + dx;
        let strip = |v: &[yarnsim::acl::ContactSet]| -> Vec<yarnsim::acl::ContactSet> {
            v.iter()
                .map(|s| yarnsim::acl::ContactSet {
                    quat: [0.0; 4],
                    ..*s
                })
                .collect()
        };
        close::assert_records_close(
            &format!("step {n}: sets"),
            &strip(&gs),
            &strip(sets),
            &close::words(&[(8, 1), (13, 3), (20, 4)]),
            |k, w| {
                if w == 15 {
                    128.0 * close::U * sets[k].f_ref.abs() as f64
                        + sets[k].touching as f64 * pair_h(&sets[k]) * dx
                } else {
                    pos_tol
                }
            },
        );
        for (k, (a, b)) in gs.iter().zip(sets).enumerate() {
            let dq = (0..4)
                .map(|c| (a.quat[c] - b.quat[c]).abs())
                .fold(0.0f32, f32::max);
            worst_q = worst_q.max(dq);
            assert!(
                dq <= QUAT_TOL,
                "step {n}: set {k}: quaternion gpu {:?} cpu {:?}",
                a.quat,
                b.quat
            );
        }
        let gsp = g
            .read::<yarnsim::acl::StictionSpring>(dev, q, "springs", 4 * sets.len())
            .unwrap();
        // StictionSpring: the rest offset (words 4–7) is a position difference.
        close::assert_records_close(
            &format!("step {n}: stiction springs"),
            &gsp,
            cpu.all_springs(),
            &[4, 5, 6, 7],
            |_, _| pos_tol,
        );
        let fmax = force
            .iter()
            .map(|f| f[0].abs().max(f[1].abs()).max(f[2].abs()))
            .fold(0.0f32, f32::max);
        // Where the quadrature points differ (dx > 0), each set's model moves with them: its f0
        // rows by `touching · H dx` (see above; a row takes each pair's gradient with a weight of
        // at most 1), and its K̄ by the relative change of f'' and f' over Δs ≤ 2|x| dx + dx²,
        // ≤ 3Δs/s ≤ 7 dx/(ε − dx) with the dx² terms, applied to the deviation term, at most the
        // point's force plus the set's f0 row (≤ f_ref). Summed over the sets naming the point.
        let mut cond = vec![0.0f64; sim.pos.len()];
        if dx > 0.0 {
            let cp = &cpu.pools().cp;
            for s in sets {
                let lo = (s.eps as f64 - dx).max(r64 * 1e-3);
                let row = s.touching as f64 * pair_h(s) * dx;
                let rel = 7.0 * dx / lo;
                for &c in &cp[s.cp_off as usize..(s.cp_off + s.n_cp) as usize] {
                    let f = force[c as usize];
                    let fm = (0..3).fold(0.0f64, |m, k| m.max(f[k].abs() as f64));
                    cond[c as usize] += row + rel * (fm + s.f_ref as f64);
                }
            }
        }
        for (i, (a, b)) in gf.iter().zip(&force).enumerate() {
            let d = (0..3).map(|c| (a[c] - b[c]).abs()).fold(0.0f32, f32::max);
            if d > 0.0 {
                differing += 1;
            }
            let tol = (force_tol.max(ROUND_TOL) * fmax) as f64 + cond[i];
            worst_f = worst_f.max(d / fmax.max(f32::MIN_POSITIVE));
            assert!(
                d as f64 <= tol,
                "step {n}: force at point {i}: gpu {a:?} cpu {b:?} (|f|max {fmax:e}, tolerance {tol:e}, dx {dx:e})"
            );
        }
        // The rebuilds per segment (`segment_rebuilds`), summed since the start on both paths.
        cpu.add_step_rebuilds(&sim.topo, &mut cpu_counts);
        let gc = g
            .read::<u32>(dev, q, "rebuild_counts", cpu_counts.len())
            .unwrap();
        let gc: Vec<f32> = gc.iter().map(|&c| c as f32).collect();
        assert_eq!(gc, cpu_counts, "step {n}: rebuilds per segment");
        // The boxes the step's sets released, which the next step's scheduler reads: this step's
        // alone, in the same order (a list the step start does not empty keeps the earlier
        // steps' too, and their entries are released again).
        assert_eq!(
            c.sizes.released.count as usize,
            cpu.released().len(),
            "step {n}: released boxes"
        );
        let gr = g
            .read::<yarnsim::layout::Release>(dev, q, "released", cpu.released().len())
            .unwrap();
        assert!(gr == cpu.released(), "step {n}: released boxes differ");
        releases += cpu.released().len();
        rebuilt += st.rebuilds;
        made += st.new_pairs.min(1);
    }
    eprintln!(
        "{test}: {steps} steps, {} sets at the end, {rebuilt} rebuilds, {releases} boxes released, {made} steps with new pairs, {} reruns ({} pool bytes poisoned); quaternions within {worst_q:e}, forces within {worst_f:e} of the largest ({differing} point-steps differ); quadrature points apart by up to dx = {worst_dx:e}; compared to the end: {}; caps {:?}",
        cpu.sets().len(),
        g.reruns,
        g.poisoned_bytes(),
        parted.map_or("yes".to_string(), |n| format!("no, parted at step {n}")),
        g.caps
    );
    assert!(
        rebuilt > 0 && cpu.sets().len() > 100 && releases > 0,
        "the run exercised no contact (or released no box)"
    );
    if caps.merge.indexed == 0 {
        // Every round's first merge pass searched its dirty list: none raised MERGE_DIRTY_LIMIT
        // (a list read from the wrong buffer or count would miss a moved set and raise it).
        assert_eq!(g.caps.merge.indexed, 0, "a step fell back to the set index");
    }
}

#[test]
fn gpu_acl_step_matches_cpu_path() {
    run(
        "gpu_acl_step_matches_cpu_path",
        &[],
        30,
        AclCaps::for_segments(1174),
        FORCE_TOL,
    );
}

#[test]
fn gpu_acl_step_tau_zero_matches_cpu_path() {
    run(
        "gpu_acl_step_tau_zero_matches_cpu_path",
        &["contact.tolerance=0"],
        20,
        AclCaps::for_segments(1174),
        0.0,
    );
}

/// The first merge pass after each rebuild round searching the round's dirty list instead of the
/// set index (`MergeCaps::indexed` = 0, what the GPU step records after a quiet stretch): the same
/// step by step.
#[test]
fn gpu_acl_step_without_the_set_index_matches_cpu_path() {
    let mut caps = AclCaps::for_segments(1174);
    caps.merge.indexed = 0;
    run(
        "gpu_acl_step_without_the_set_index_matches_cpu_path",
        &[],
        30,
        caps,
        FORCE_TOL,
    );
}

#[test]
fn gpu_acl_step_grows_from_tiny_capacities() {
    let caps = AclCaps {
        rounds: 1,
        merge: yarnsim::acl::merge_gpu::MergeCaps {
            rounds: 1,
            passes: 1,
            ..AclCaps::all(16).merge
        },
        ..AclCaps::all(16)
    };
    run(
        "gpu_acl_step_grows_from_tiny_capacities",
        &["contact.tolerance=0"],
        8,
        caps,
        0.0,
    );
}

/// `AclCaps::binding_bytes`, the table that keeps the first capacities within the device's
/// binding limit and refuses a growth past it, is the builders' own sizes: for capacities all
/// different (so no buffer matches another capacity by chance), each entry equals the largest
/// buffer its capacity sizes in a built step.
#[test]
fn binding_table_is_the_built_buffers() {
    let Some(gpu) = gpu_or_skip("binding_table_is_the_built_buffers") else {
        return;
    };
    let over = ["contact.model=acl"];
    let sim = scene_sim("swatch", &over, 0);
    let params = scene_contact("swatch", &over);
    let mut host = AclContact::new(sim.step_params().radius, &params).unwrap();
    let mut caps = AclCaps::all(64);
    let distinct = [
        &mut caps.sched.entries,
        &mut caps.sched.grid,
        &mut caps.sched.cand,
        &mut caps.sched.fresh,
        &mut caps.sched.touching,
        &mut caps.sched.lookup_words,
        &mut caps.sched.released,
        &mut caps.merge.sets,
        &mut caps.merge.edges,
        &mut caps.merge.index,
        &mut caps.points,
        &mut caps.blocks,
        &mut caps.watch,
        &mut caps.terms,
        &mut caps.records,
    ];
    for (k, c) in distinct.into_iter().enumerate() {
        *c = 1_000 + 97 * k as u32;
    }
    caps.merge.touching = caps.sched.touching;
    let (_, _, g) = acl_gpu(
        &gpu,
        &mut host,
        &sim.topo,
        &sim.pos,
        params.quadrature,
        caps,
    );
    let buffers: &[(&str, &[&str])] = &[
        ("sched.entries", &["entries_a", "entries_b"]),
        ("sched.grid", &["sched_grid_in", "sched_grid"]),
        ("sched.cand", &["sched_cand_in", "sched_cand"]),
        ("sched.fresh", &["fresh"]),
        ("sched.touching", &["touching"]),
        ("sched.lookup_words", &["set_lookup"]),
        ("sched.released", &["released"]),
        ("merge.sets", &["sets", "springs", "plans"]),
        ("merge.watch", &["plan_watch", "plan_watch_loc"]),
        ("merge.touching", &["touching"]),
        ("merge.edges", &["edges"]),
        ("merge.index", &["set_bin_sort_in", "set_bin_sort"]),
        ("points", &["f0_pool", "dbar_pool", "dev_pool", "fout_pool"]),
        ("blocks", &["k_pool"]),
        ("watch", &["watch_pool", "watch_loc_pool"]),
        ("terms", &["rebuild_terms"]),
        ("records", &["point_records"]),
    ];
    let table = g.caps.binding_bytes();
    // The release slots size no buffer (a thread count).
    let (release, sized): (Vec<_>, Vec<_>) =
        table.into_iter().partition(|(c, _)| *c == "sched.release");
    assert_eq!(release, [("sched.release", 0)]);
    // The paged pools are one page each here (src/acl/pages.rs).
    assert_eq!(g.block_pages().lens, [caps.blocks]);
    assert_eq!(g.term_pages().lens, [caps.terms]);
    assert_eq!(g.scratch_pages().lens, [caps.merge.sets]);
    fixture::assert_largest_buffers(&sized, buffers, |n| g.buffer(n));
    // The buffers of the scene's own size (`gpu_step::acl_needs` checks them against the limit).
    let fixed = yarnsim::sched::gpu::fixed_binding_bytes(
        sim.topo.segments.len() as u64,
        sim.pos.len() as u64,
        params.quadrature as u64,
        params.max_bin as u64,
    );
    let fixed_buffers: &[(&str, &[&str])] = &[
        ("snaps", &["snaps", "saved_snaps"]),
        ("windows", &["windows"]),
        ("qpts", &["qpts"]),
        ("cells", &["cells", "prev_cells"]),
        ("motion", &["motion", "saved_motion"]),
    ];
    fixture::assert_largest_buffers(&fixed, fixed_buffers, |n| g.buffer(n));
}
