//! The scheduler's safety on the GPU, with the real contact sets of ACL's whole GPU step
//! (`acl::gpu::AclGpu`): after every step, a brute-force search over all quadrature pairs finds no
//! touching, non-excluded pair outside every live set's box, and the sets are pairwise disjoint.
//! The motions are prescribed (no dynamics, so a disabled rule cannot change what is checked):
//! - two woven patches, one stretched and jittered, the other falling onto it with random changes
//!   of velocity, pushing in and rising again (tests/acl_support, as the CPU path's
//!   tests/acl.rs checks it);
//! - a knit tube of closed courses (the wrap-around of closed yarns' segment indices) squashed flat
//!   and twisted.
//!
//! The check can fail: with the scheduler's movement update switched off it catches the missed
//! contacts on the patches.

#[path = "support/acl_gpu.rs"]
mod acl_gpu;
mod acl_support;
#[path = "support/fixture.rs"]
mod fixture;
#[path = "support/tube.rs"]
mod tube;

use acl_gpu::acl_gpu;
use acl_support::*;
use fixture::bytes;
use yarnsim::acl::gpu::AclCaps;
use yarnsim::acl::{boxes_overlap, AclContact, ContactSet, SET_LIVE};
use yarnsim::contact::Exclusion;
use yarnsim::gpu::testing::gpu_or_skip;
use yarnsim::gpu::Gpu;
use yarnsim::scene::ContactParams;
use yarnsim::sched::SafetyRuleSwitches;
use yarnsim::state::Topology;

const R: f32 = 0.125;

/// Runs ACL's GPU step on the positions `motion(step)` for `steps + 1` steps and checks the sets
/// after each; the first violation, if any.
fn gpu_safety(
    gpu: &Gpu,
    topo: &Topology,
    params: &ContactParams,
    disable: SafetyRuleSwitches,
    steps: usize,
    motion: &dyn Fn(usize, &mut Vec<[f32; 4]>),
) -> Result<(), String> {
    let (dev, q) = (&gpu.device, &gpu.queue);
    let mut pos = Vec::new();
    motion(0, &mut pos);
    let mut host = AclContact::with_sched_switches(R, params, disable).unwrap();
    let caps = AclCaps::for_segments(topo.segments.len() as u32);
    let (pipelines, shared, mut g) = acl_gpu(gpu, &mut host, topo, &pos, params.quadrature, caps);
    let excl = Exclusion::new(topo, params);
    let b = params.quadrature;
    let mut max_sets = 0;
    for step in 0..=steps {
        motion(step, &mut pos);
        q.write_buffer(shared.get("pos").unwrap(), 0, bytes(&pos));
        let c = g
            .step(dev, q, &pipelines, &shared, step as u64)
            .map_err(|e| format!("step {step}: {e}"))?;
        let sets = g
            .read::<ContactSet>(dev, q, "sets", c.sizes.num_sets as usize)
            .unwrap();
        max_sets = max_sets.max(sets.len());
        let boxes: Vec<[u32; 4]> = sets
            .iter()
            .filter(|s| s.flags & SET_LIVE != 0)
            .map(|s| s.bx)
            .collect();
        assert_eq!(
            boxes.len(),
            sets.len(),
            "step {step}: a dead set in the table"
        );
        for x in 0..boxes.len() {
            for y in x + 1..boxes.len() {
                if boxes_overlap(&boxes[x], &boxes[y]) {
                    return Err(format!(
                        "step {step}: sets {:?} and {:?} overlap",
                        boxes[x], boxes[y]
                    ));
                }
            }
        }
        for [i, j] in brute_force_touching(topo, &pos, b, R, &excl) {
            let inside = boxes
                .iter()
                .any(|bx| bx[0] <= i && i <= bx[1] && bx[2] <= j && j <= bx[3]);
            if !inside {
                return Err(format!(
                    "step {step}: touching pair ({i}, {j}) (segments {}, {}) is outside every contact set",
                    i / b,
                    j / b
                ));
            }
        }
    }
    assert!(max_sets > 10, "hardly any contact ({max_sets} sets)");
    Ok(())
}

/// The two patches' prescribed drop and stretch (tests/acl.rs `kinematic_safety` on the CPU).
fn patches(gpu: &Gpu, seed: u64, steps: usize, disable: SafetyRuleSwitches) -> Result<(), String> {
    let (topo, rest, n_a) = two_patches(4, R);
    let kin = Kinematic::new(&rest[..n_a], n_a, &rest, steps, seed, 0.004);
    let params = ContactParams {
        omega: 0.0006,
        ..ContactParams::default()
    };
    gpu_safety(gpu, &topo, &params, disable, steps, &|step, pos| {
        kin.positions(step, pos)
    })
}

#[test]
fn gpu_sets_cover_every_touching_pair_on_kinematic_drops() {
    let Some(gpu) = gpu_or_skip("gpu_sets_cover_every_touching_pair_on_kinematic_drops") else {
        return;
    };
    patches(&gpu, 11 * 7919, 120, SafetyRuleSwitches::default()).unwrap();
}

#[test]
fn gpu_safety_check_fails_without_the_movement_update() {
    let Some(gpu) = gpu_or_skip("gpu_safety_check_fails_without_the_movement_update") else {
        return;
    };
    let off = SafetyRuleSwitches {
        no_movement_update: true,
        ..Default::default()
    };
    let e = patches(&gpu, 11 * 7919, 120, off).expect_err("the missing rule went unnoticed");
    eprintln!("without the movement update: {e}");
}

/// An 8 × 3 tube of closed courses squashed to a third of its width along x and twisted by up to
/// 0.3 rad per cm of height, over 80 steps (about 0.01 cm per step at its widest).
#[test]
fn gpu_sets_cover_every_touching_pair_on_a_squashed_tube() {
    let Some(gpu) = gpu_or_skip("gpu_sets_cover_every_touching_pair_on_a_squashed_tube") else {
        return;
    };
    let curves = tube::tube(8, 3);
    let (topo, rest) = Topology::from_curves(&curves).unwrap();
    const STEPS: usize = 80;
    let params = ContactParams::default();
    let motion = |step: usize, pos: &mut Vec<[f32; 4]>| {
        let t = step as f32 / STEPS as f32;
        pos.clear();
        pos.extend(rest.iter().map(|p| {
            let (a, s) = (0.3 * t * p[1], 1.0 - 0.66 * t);
            let (x, z) = (p[0] * s, p[2]);
            [
                x * a.cos() - z * a.sin(),
                p[1],
                x * a.sin() + z * a.cos(),
                0.0,
            ]
        }));
    };
    gpu_safety(
        &gpu,
        &topo,
        &params,
        SafetyRuleSwitches::default(),
        STEPS,
        &motion,
    )
    .unwrap();
}
