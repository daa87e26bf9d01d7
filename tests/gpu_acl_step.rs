//! ACL's whole step on the GPU (`acl::gpu::AclGpu`) against the CPU path (`AclContact::step`), step
//! by step: the default swatch swings down on the CPU (from its 600th step, once it moves); an
//! `AclContact` and an `AclGpu`, both fresh, run alongside on the same positions. After every step
//! the contact force, the set table (every header field, pool offsets included: the GPU compacts its
//! pools between steps by the CPU's rule, so the layouts agree), the stiction springs and the counts
//! must be identical, except where the polar decomposition enters; and the rebuilds counted per
//! segment (`segment_rebuilds`, for `--color updates`) equal the CPU path's counts, summed.
//!
//! Every stage is a kernel whose twin the CPU path runs, and on lavapipe, where the tests run, every
//! kernel but `set_evaluate` rounds as its twin does (each kernel's own parity test states the
//! tolerance a GPU that fuses multiply-adds would need); `set_evaluate`'s polar iteration is within
//! its stated bound of the twin's, not bitwise. So with τ = 0 (every set rebuilt every step: no
//! rotated model is used) the whole step is bitwise, and with the default τ the warm-start
//! quaternions and the forces are within the bounds derived at [`QUAT_TOL`] and [`FORCE_TOL`] and
//! everything else is bitwise. A difference beyond that is a wiring error of the step (a count
//! copied to the wrong place, a stage out of order), which is what this test is for.
//!
//! Starting from capacities of 16 (and 1 rebuild round, 1 merge pass of 1 label round) must give the
//! identical result: every overflow or budget is flagged, the state restored and the step rerun.

#[path = "support/acl_gpu.rs"]
mod acl_gpu;
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
    let zero = vec![[0.0f32; 4]; sim.pos.len()];
    let mut force = vec![[0.0f32; 4]; sim.pos.len()];
    let mut cpu_counts = vec![0.0f32; sim.topo.segments.len()];
    let (mut rebuilt, mut made) = (0u64, 0u64);
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
        let sets = cpu.sets();
        if c.sizes.num_sets as usize != sets.len() {
            eprintln!("step {n}: cpu {st:?}\ngpu sizes {:?}\nmerge {:?}\npools {:?}\nacl {:?}\nsched touching {:?} errors {}", c.sizes, c.merge, c.pools, c.acl, c.sched.touching, c.sched.errors);
        }
        assert_eq!(c.sizes.num_sets as usize, sets.len(), "step {n}: live sets");
        assert_eq!(c.sizes.rebuilds as u64, st.rebuilds, "step {n}: rebuilds");
        let gs = g
            .read::<yarnsim::acl::ContactSet>(dev, q, "sets", sets.len())
            .unwrap();
        for (k, (a, b)) in gs.iter().zip(sets).enumerate() {
            // Everything but the warm-start quaternion is bitwise (see the module doc).
            let (mut a2, mut b2) = (*a, *b);
            a2.quat = [0.0; 4];
            b2.quat = [0.0; 4];
            assert_eq!(
                bytemuck::bytes_of(&a2),
                bytemuck::bytes_of(&b2),
                "step {n}: set {k}: gpu {a:?} cpu {b:?}"
            );
            let dq = (0..4)
                .map(|c| (a.quat[c] - b.quat[c]).abs())
                .fold(0.0f32, f32::max);
            worst_q = worst_q.max(dq);
            assert!(
                if force_tol == 0.0 {
                    dq == 0.0
                } else {
                    dq <= QUAT_TOL
                },
                "step {n}: set {k}: quaternion gpu {:?} cpu {:?}",
                a.quat,
                b.quat
            );
        }
        let gsp = g
            .read::<yarnsim::acl::StictionSpring>(dev, q, "springs", 4 * sets.len())
            .unwrap();
        assert_eq!(
            bytes(&gsp),
            bytes(cpu.all_springs()),
            "step {n}: stiction springs"
        );
        let fmax = force
            .iter()
            .map(|f| f[0].abs().max(f[1].abs()).max(f[2].abs()))
            .fold(0.0f32, f32::max);
        for (i, (a, b)) in gf.iter().zip(&force).enumerate() {
            let d = (0..3).map(|c| (a[c] - b[c]).abs()).fold(0.0f32, f32::max);
            if d > 0.0 {
                differing += 1;
            }
            worst_f = worst_f.max(d / fmax.max(f32::MIN_POSITIVE));
            assert!(
                d <= force_tol * fmax,
                "step {n}: force at point {i}: gpu {a:?} cpu {b:?} (|f|max {fmax:e})"
            );
        }
        // The rebuilds per segment (`segment_rebuilds`), summed since the start on both paths.
        cpu.add_step_rebuilds(&sim.topo, &mut cpu_counts);
        let gc = g
            .read::<u32>(dev, q, "rebuild_counts", cpu_counts.len())
            .unwrap();
        let gc: Vec<f32> = gc.iter().map(|&c| c as f32).collect();
        assert_eq!(gc, cpu_counts, "step {n}: rebuilds per segment");
        rebuilt += st.rebuilds;
        made += st.new_pairs.min(1);
    }
    eprintln!(
        "{test}: {steps} steps, {} sets at the end, {rebuilt} rebuilds, {made} steps with new pairs, {} reruns; quaternions within {worst_q:e}, forces within {worst_f:e} of the largest ({differing} point-steps differ); caps {:?}",
        cpu.sets().len(),
        g.reruns,
        g.caps
    );
    assert!(
        rebuilt > 0 && cpu.sets().len() > 100,
        "the run exercised no contact"
    );
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
fn gpu_acl_step_tau_zero_is_bitwise() {
    run(
        "gpu_acl_step_tau_zero_is_bitwise",
        &["contact.tolerance=0"],
        20,
        AclCaps::for_segments(1174),
        0.0,
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
