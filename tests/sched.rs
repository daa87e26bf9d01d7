//! The space-time scheduler (src/sched.rs) on its own: bins and bounds, and its safety on randomized
//! prescribed drops and stretches, with a stand-in for the contact sets that owns exactly the touching
//! pairs the scheduler reports and releases them once they separate beyond 2.1 r.

mod acl_support;

use acl_support::*;
use std::collections::BTreeSet;
use yarnsim::math::V3;
use yarnsim::sched::*;
use yarnsim::spline;
use yarnsim::state::Topology;

const R: f32 = 0.125;
const B: u32 = 11;

fn params(disable: SafetyRuleSwitches, omega: f32) -> SchedParams {
    SchedParams {
        exclusion_arc: 0.0,
        quadrature: B,
        radius: R,
        cell: 0.6,
        max_bin: 8,
        omega,
        disable,
    }
}

/// Owns single quadrature pairs (1×1 boxes): the smallest possible contact sets.
struct PairOwner {
    owned: BTreeSet<(u32, u32)>,
    lookup: Vec<u32>,
}
impl PairOwner {
    /// The owned pairs packed as the scheduler looks sets up.
    fn pack(&mut self, nq: u32) -> &[u32] {
        let boxes = self.owned.iter().map(|&(i, j)| [i, i, j, j]);
        set_lookup_pack(boxes, B, nq / B, &mut self.lookup);
        &self.lookup
    }
}

fn quad_point(topo: &Topology, pos: &[[f32; 4]], i: u32) -> V3<f32> {
    let seg = &topo.segments[(i / B) as usize];
    let q = seg.cp.map(|c| V3::<f32>::from4(pos[c as usize]));
    spline::eval(&q, spline::quad_param(i % B, B))
}

/// Runs a randomized drop-and-stretch; returns the first safety violation, if any, and the totals of
/// (examined, processed, tracked) summed over the steps.
fn run_safety(
    seed: u64,
    steps: usize,
    speed: f32,
    omega: f32,
    disable: SafetyRuleSwitches,
) -> (Result<(), String>, [u64; 3]) {
    let (topo, rest, n_a) = two_patches(4, R);
    let kin = Kinematic::new(&rest[..n_a], n_a, &rest, steps, seed, speed);
    let rules = IndexExclusion::new(&topo, 7);
    let mut sched = Scheduler::new(params(disable, omega)).unwrap();
    let mut owner = PairOwner {
        owned: BTreeSet::new(),
        lookup: Vec::new(),
    };
    let nq = topo.segments.len() as u32 * B;
    let mut pos = Vec::new();
    let mut totals = [0u64; 3];
    let mut released = Vec::new();
    for step in 0..=steps {
        kin.positions(step, &mut pos);
        sched
            .detect(&topo.segments, &pos, &rules, owner.pack(nq), &released)
            .unwrap();
        released.clear();
        let st = sched.stats();
        totals[0] += st.examined;
        totals[1] += st.processed;
        totals[2] += st.tracked;
        // The stand-in contact sets: take the reported pairs, release separated ones.
        let found: Vec<[u32; 2]> = sched.touching().to_vec();
        for [i, j] in found {
            assert!(
                owner.owned.insert((i, j)),
                "pair ({i}, {j}) reported although owned"
            );
        }
        let gone: Vec<(u32, u32)> = owner
            .owned
            .iter()
            .copied()
            .filter(|&(i, j)| {
                (quad_point(&topo, &pos, i) - quad_point(&topo, &pos, j)).norm() > 2.1 * R
            })
            .collect();
        // Safety: every touching pair is owned (before releasing, which only drops separated pairs).
        for [i, j] in brute_force_touching(&topo, &pos, B, R, &rules) {
            if !owner.owned.contains(&(i, j)) {
                return (
                    Err(format!(
                        "step {step}: touching pair ({i}, {j}) (segments {} and {}) is neither owned nor reported",
                        i / B,
                        j / B
                    )),
                    totals,
                );
            }
        }
        for (i, j) in gone {
            owner.owned.remove(&(i, j));
            released.push(Release {
                before: [i, i, j, j],
                after: EMPTY_BOX,
            });
        }
    }
    (Ok(()), totals)
}

#[test]
fn safe_on_randomized_drops_and_stretches() {
    for seed in 1..=3u64 {
        let (res, totals) = run_safety(
            seed * 7919,
            300,
            0.004,
            0.0006,
            SafetyRuleSwitches::default(),
        );
        res.unwrap();
        // The scheduler must skip work: far fewer processings than examinations.
        assert!(
            totals[1] < totals[0],
            "seed {seed}: processed {} ≥ examined {}",
            totals[1],
            totals[0]
        );
        println!(
            "seed {seed}: per step examined {:.0}, processed {:.0}, tracked {:.0}",
            totals[0] as f64 / 301.0,
            totals[1] as f64 / 301.0,
            totals[2] as f64 / 301.0
        );
    }
}

#[test]
fn safe_with_a_small_omega_where_monitoring_carries_the_bins() {
    // With ω = 1e-6 cm/step² the bins trust the measured change of movement; the random jerks of the
    // drop must then be caught by monitoring.
    for seed in 1..=2u64 {
        run_safety(
            seed * 104_729,
            300,
            0.004,
            1e-6,
            SafetyRuleSwitches::default(),
        )
        .0
        .unwrap();
    }
}

/// The safety check can fail: without the movement update of the bounds, contacts are missed.
#[test]
fn safety_check_fails_without_the_movement_update() {
    let off = SafetyRuleSwitches {
        no_movement_update: true,
        ..Default::default()
    };
    let (res, _) = run_safety(7919, 300, 0.004, 0.0006, off);
    let err = res.expect_err("the brute-force check should catch the missing rule");
    println!("without the movement update: {err}");
}

/// The safety check can fail: without monitoring, a sudden change of movement outruns the bins.
#[test]
fn safety_check_fails_without_monitoring() {
    let off = SafetyRuleSwitches {
        no_monitoring: true,
        ..Default::default()
    };
    let mut failures = 0;
    for seed in 1..=3u64 {
        if let (Err(e), _) = run_safety(seed * 104_729, 300, 0.004, 1e-6, off) {
            println!("without monitoring: {e}");
            failures += 1;
        }
    }
    assert!(failures > 0, "disabling monitoring went unnoticed");
}

#[test]
fn bins_follow_the_quadratic() {
    // At rest (m = 0), with only ω: k* = sqrt(2d/ω) for large d.
    let k = earliest_contact_steps(0.3, 0.0, 0.0006);
    assert!((k - (2.0f32 * 0.3 / 0.0006).sqrt()).abs() / k < 0.05, "{k}");
    // It is the root of −d + m k + (k² + k)/2 A.
    for &(d, m, a) in &[
        (0.1f32, 0.01f32, 0.0006f32),
        (0.5, 0.0, 0.001),
        (0.02, 0.003, 0.0),
    ] {
        let k = earliest_contact_steps(d, m, a);
        let res = -d + m * k + 0.5 * (k * k + k) * a;
        assert!(res.abs() < 1e-5, "residual {res} for d={d} m={m} A={a}");
    }
    assert_eq!(earliest_contact_steps(-0.1, 0.0, 0.1), 0.0);
    assert_eq!(bin_for(0.5, 8), 0);
    assert_eq!(bin_for(1.9, 8), 0);
    assert_eq!(bin_for(2.0, 8), 1);
    assert_eq!(bin_for(31.9, 8), 4);
    assert_eq!(bin_for(1e9, 8), 8);
    assert_eq!(bin_for(f32::INFINITY, 8), 8);
    // Always examined no later than the earliest contact.
    for i in 0..1000 {
        let k = 1.0 + i as f32 * 0.37;
        assert!((1u64 << bin_for(k, 20)) as f32 <= k);
    }
}

#[test]
fn movement_bounds_contain_the_field() {
    let mut rng = Rng(2024);
    for _ in 0..2000 {
        let d = [0; 4].map(|_| rng.range(-1.0, 1.0) as f32);
        let (lo, hi) = basis_field_bounds(d);
        let q = d.map(|x| yarnsim::math::V3::new(x, 0.0, 0.0));
        let (elo, ehi) = spline::segment_aabb(&q);
        // Contains the exact extremes, and is at most 2/27 of the handle differences wider.
        assert!(
            lo <= elo.x + 1e-6 && hi >= ehi.x - 1e-6,
            "{d:?}: [{lo}, {hi}] vs [{}, {}]",
            elo.x,
            ehi.x
        );
        let spread = d
            .iter()
            .fold(0.0f32, |m, x| m.max((x - d[1]).abs()).max((x - d[2]).abs()));
        assert!(hi - ehi.x <= 2.0 * 2.0 / 27.0 * spread + 1e-6);
        assert!(elo.x - lo <= 2.0 * 2.0 / 27.0 * spread + 1e-6);
        for i in 0..=100 {
            let y = spline::eval(&q, i as f32 / 100.0).x;
            assert!(lo - 1e-6 <= y && y <= hi + 1e-6);
        }
    }
}

#[test]
fn box_bits_mark_the_pairs_of_the_box() {
    // Segments 2 and 5 (b = 11): box covering quadrature 25..=27 × 57..=60.
    let bits = box_bits([25, 27, 57, 60], 2, 5, B);
    let mut count = 0;
    for ka in 0..B {
        for kb in 0..B {
            let bit = ka * B + kb;
            let set = bits[(bit / 32) as usize] & (1 << (bit % 32)) != 0;
            let inside = (25..=27).contains(&(22 + ka)) && (57..=60).contains(&(55 + kb));
            assert_eq!(set, inside);
            count += set as u32;
        }
    }
    assert_eq!(count, 12);
}

/// Invariants after every step: each non-excluded segment pair whose cell boxes meet has exactly one
/// entry, and every live entry's segments still share a cell.
#[test]
fn entries_cover_every_pair_sharing_a_cell() {
    let (topo, rest, n_a) = two_patches(3, R);
    let kin = Kinematic::new(&rest[..n_a], n_a, &rest, 150, 31337, 0.006);
    let rules = IndexExclusion::new(&topo, 7);
    let mut sched = Scheduler::new(params(Default::default(), 0.0006)).unwrap();
    let mut pos = Vec::new();
    let nseg = topo.segments.len();
    for step in 0..=150 {
        kin.positions(step, &mut pos);
        sched
            .detect(&topo.segments, &pos, &rules, NO_SETS, &[])
            .unwrap();
        let cells = sched.cell_boxes();
        let mut seen = std::collections::HashSet::new();
        for e in sched.entries() {
            assert!(e.seg_a < e.seg_b);
            assert!(seen.insert((e.seg_a, e.seg_b)), "duplicate entry");
            assert!(cells[e.seg_a as usize].intersects(&cells[e.seg_b as usize]));
        }
        for a in 0..nseg {
            for b in a + 1..nseg {
                if rules.segment_class(a as u32, b as u32) == PairClass::All {
                    continue;
                }
                if cells[a].intersects(&cells[b]) {
                    assert!(
                        seen.contains(&(a as u32, b as u32)),
                        "step {step}: pair ({a}, {b}) shares a cell but has no entry"
                    );
                }
            }
        }
        assert_eq!(sched.stats().tracked as usize, seen.len());
    }
}

#[test]
fn bad_parameters_are_errors() {
    let mut p = params(Default::default(), 0.0006);
    p.quadrature = 12;
    assert_eq!(Scheduler::new(p).err(), Some(SchedError::Quadrature(12)));
    let mut p = params(Default::default(), 0.0006);
    p.cell = 0.0;
    assert!(Scheduler::new(p).is_err());
    let mut p = params(Default::default(), 0.0006);
    p.omega = f32::NAN;
    assert!(Scheduler::new(p).is_err());
    // Non-finite positions are reported with the point.
    let (topo, rest, _) = two_patches(2, R);
    let mut pos: Vec<[f32; 4]> = rest.iter().map(|p| [p[0], p[1], p[2], 0.0]).collect();
    pos[5][1] = f32::NAN;
    let rules = IndexExclusion::new(&topo, 7);
    let mut s = Scheduler::new(params(Default::default(), 0.0006)).unwrap();
    assert_eq!(
        s.detect(&topo.segments, &pos, &rules, NO_SETS, &[]).err(),
        Some(SchedError::NotFinite { point: 5 })
    );
}

/// The grid's cell hash has `SCHED_HASH_BITS` bits on both paths (the WGSL constant is the Rust
/// one), and the sort's `SCHED_GRID_KEY_BITS` key bits put the sentinel after every hash: the
/// radix sort looks at those bits only.
#[test]
fn cell_hash_fits_the_grid_sort_key() {
    use yarnsim::sched::grid::{
        cell_hash, SCHED_GRID_KEY_BITS, SCHED_GRID_SENTINEL, SCHED_HASH_BITS,
    };
    let want = format!("const SCHED_HASH_BITS: u32 = {SCHED_HASH_BITS}u;");
    let src = yarnsim::shaders::expanded_text("sched_grid_write").unwrap();
    assert!(
        src.contains(&want),
        "shaders/shared/sched.wgsl must declare `{want}`"
    );
    let mask = (1u64 << SCHED_GRID_KEY_BITS) - 1;
    let sentinel = SCHED_GRID_SENTINEL.key_lo as u64 & mask;
    let mut seen = BTreeSet::new();
    for x in -40..40 {
        for y in [-3_000_000, -7, 0, 1, 12, 1 << 20] {
            for z in -20..20 {
                let h = cell_hash([x, y, z]);
                assert!((h as u64) < (1u64 << SCHED_HASH_BITS), "{h:#x}");
                assert!((h as u64 & mask) < sentinel);
                seen.insert(h);
            }
        }
    }
    // 19,200 cells: a hash of 2²³ values leaves few collisions (about 0.1% expected).
    assert!(seen.len() > 19_100, "{} distinct hashes", seen.len());
}
