//! Parity of kernel `acl_counts` (shaders/acl_counts.wgsl) with its CPU twin
//! (`yarnsim::acl::counts::acl_counts`) at every phase of the GPU ACL step, on counter blocks filled
//! with arbitrary small values (so a field the kernel forgets to reset, copies wrongly or counts
//! wrongly shows as a difference), and the phase-specific cases: the evaluation's grids planned
//! after the scheduler and after coalescing (over a table within and over its capacity), and
//! coalescing, which writes the table length into the `acl` and `rebuild` uniforms. (The counts
//! that other kernels move, at a rebuild round's start and after compaction, are tested with
//! those kernels: tests/gpu_acl_release.rs, tests/gpu_acl_rebuild.rs.) Every output is an integer: kernel and twin must be
//! identical. Skips loudly without an adapter, fails under `CI=true`.

use yarnsim::acl::counts::{acl_counts, PHASE_COALESCED, PHASE_SCHEDULED, PHASE_STEP};
use yarnsim::acl::rebuild::{PoolAlloc, RebuildParams};
use yarnsim::gpu::testing::gpu_or_skip;
use yarnsim::layout::{
    AclCounters, AclPhase, AclSizes, AclUniform, CountPlan, GridSpec, MergeCounters, SchedCounters,
    ACL_SIZES_MORE_PASSES, COUNT_PLAN_GRIDS,
};
use yarnsim::pipelines::run_kernel;
use yarnsim::scan::PLAN_SLOT_WORDS;

/// A `Pod` value whose 32-bit words are small pseudo-random numbers (below 2²⁰: sums stay far
/// from wrapping).
fn filled<T: bytemuck::Pod>(seed: &mut u32) -> T {
    let mut v: T = bytemuck::Zeroable::zeroed();
    for w in bytemuck::cast_slice_mut::<T, u32>(std::slice::from_mut(&mut v)) {
        *seed = seed.wrapping_mul(1_664_525).wrapping_add(1_013_904_223);
        *w = *seed >> 12;
    }
    v
}

struct Blocks {
    rebuild: RebuildParams,
    sched: SchedCounters,
    sizes: AclSizes,
    merge: MergeCounters,
    pool: PoolAlloc,
    acl: AclCounters,
    uniform: AclUniform,
}

fn blocks(seed: u32) -> Blocks {
    let mut s = seed;
    let mut rebuild: RebuildParams = filled(&mut s);
    rebuild.num_sets = 5;
    Blocks {
        rebuild,
        sched: filled(&mut s),
        sizes: filled(&mut s),
        merge: filled(&mut s),
        pool: filled(&mut s),
        acl: filled(&mut s),
        uniform: filled(&mut s),
    }
}

/// The evaluation's two grids over at most `cap` sets, laid out as `scan::CountedGrid::inline`
/// lays them out (a 64-word slot per grid with its `GridSpec`: a thread per set in workgroups of
/// 256, 64 threads per set in workgroups of 64; then the indirect arguments, stale until planned).
fn eval_plan(cap: u32) -> (CountPlan, Vec<u32>) {
    let grids = [
        GridSpec {
            add: 0,
            threads_per_item: 1,
            workgroup_size: 256,
            _pad: 0,
        },
        GridSpec {
            add: 0,
            threads_per_item: 64,
            workgroup_size: 64,
            _pad: 0,
        },
    ];
    let slot = PLAN_SLOT_WORDS as usize;
    let spec = CountPlan {
        cap,
        kind: COUNT_PLAN_GRIDS,
        num_levels: grids.len() as u32,
        args_word: (slot * grids.len()) as u32,
        ..Default::default()
    };
    let mut words = vec![0x0bad_0bad_u32; slot * grids.len() + 8];
    for (k, g) in grids.iter().enumerate() {
        words[slot * k..slot * k + 4].copy_from_slice(bytemuck::cast_slice(&[*g]));
    }
    (spec, words)
}

#[test]
fn acl_counts_kernel_matches_its_twin_at_every_phase() {
    let Some(gpu) = gpu_or_skip("acl_counts_kernel_matches_its_twin_at_every_phase") else {
        return;
    };
    fn b<T: bytemuck::Pod>(v: &T) -> &[u8] {
        bytemuck::bytes_of(v)
    }
    type Case = (u32, &'static str, fn(&mut Blocks));
    let cases: [Case; 5] = [
        (PHASE_STEP, "step", |_| {}),
        (PHASE_SCHEDULED, "scheduled", |_| {}),
        (PHASE_SCHEDULED, "scheduled, table over capacity", |x| {
            x.merge.sets.count = 5_000_000
        }),
        (PHASE_COALESCED, "coalesced", |_| {}),
        // The verdict on coalescing's last pass is the first round's (set_dirty_write), not this
        // phase's: a pass that still merged changes nothing here.
        (PHASE_COALESCED, "coalesced, still merging", |x| {
            x.merge.edges.count = 3
        }),
    ];
    const CAP: u32 = 1 << 20;
    for (k, (phase, what, set)) in cases.into_iter().enumerate() {
        let mut x = blocks(17 + k as u32);
        set(&mut x);
        let p = AclPhase {
            phase,
            ..Default::default()
        };
        let (spec, plan_in) = eval_plan(CAP);
        let out = run_kernel(
            &gpu,
            "acl_counts",
            &[
                ("acl_phase", b(&p)),
                ("plan_spec", b(&spec)),
                ("rebuild", b(&x.rebuild)),
                ("sched_counters", b(&x.sched)),
                ("acl_sizes", b(&x.sizes)),
                ("merge_counters", b(&x.merge)),
                ("pool_counters", b(&x.pool)),
                ("acl_counters", b(&x.acl)),
                ("acl", b(&x.uniform)),
                ("plan_out", bytemuck::cast_slice(&plan_in)),
            ],
            1,
        )
        .unwrap();
        let (before, rebuild_before, uniform_before) = (x.sizes, x.rebuild, x.uniform);
        let mut plan = plan_in.clone();
        acl_counts(
            &p,
            &spec,
            &mut x.rebuild,
            &mut x.sched,
            &mut x.sizes,
            &mut x.merge,
            &mut x.pool,
            &mut x.acl,
            &mut x.uniform,
            &mut plan,
        );
        let want: [(&str, &[u8]); 8] = [
            ("rebuild", b(&x.rebuild)),
            ("sched_counters", b(&x.sched)),
            ("acl_sizes", b(&x.sizes)),
            ("merge_counters", b(&x.merge)),
            ("pool_counters", b(&x.pool)),
            ("acl_counters", b(&x.acl)),
            ("acl", b(&x.uniform)),
            ("plan_out", bytemuck::cast_slice(&plan)),
        ];
        for (name, bytes) in want {
            assert_eq!(out[name], bytes, "{what}: {name} differs");
        }
        // The twin itself, where the phase decides something.
        if what == "step" {
            assert_eq!(x.sizes.rounds_used, 0);
            assert_eq!(x.merge.sets.count, before.num_sets);
        }
        // The evaluation's grids: planned by the scheduled and coalesced phases only, over the
        // table (at most the capacity), by their definition.
        if phase == PHASE_STEP {
            assert_eq!(plan, plan_in, "{what}: grids planned");
        } else {
            let n = x.merge.sets.count.min(CAP);
            let at = spec.args_word as usize;
            assert_eq!(
                plan[at..at + 3],
                [n.div_ceil(256), 1, 1],
                "{what}: set_evaluate"
            );
            let g = (64 * n).div_ceil(64);
            let want = if g > 65_535 {
                [65_535, g.div_ceil(65_535), 1]
            } else {
                [g, 1, 1]
            };
            assert_eq!(plan[at + 3..at + 6], want, "{what}: set_force");
            assert_eq!(plan[..at], plan_in[..at], "{what}: the grids' specs");
        }
        // The uniforms' counts: written by the coalesced phase only.
        assert_eq!(x.rebuild.num_dirty, rebuild_before.num_dirty, "{what}");
        if phase == PHASE_COALESCED {
            assert_eq!(x.rebuild.num_sets, x.merge.sets.count, "{what}");
            assert_eq!(x.uniform.num_sets, x.merge.sets.count, "{what}");
            assert_ne!(
                rebuild_before.num_sets, x.merge.sets.count,
                "{what}: the case proves it"
            );
            assert_ne!(
                uniform_before.num_sets, x.merge.sets.count,
                "{what}: the case proves it"
            );
            assert_eq!(
                x.sizes.errors & ACL_SIZES_MORE_PASSES,
                before.errors & ACL_SIZES_MORE_PASSES,
                "{what}: a verdict taken here"
            );
        } else {
            assert_eq!(x.rebuild.num_sets, rebuild_before.num_sets, "{what}");
            assert_eq!(x.uniform, uniform_before, "{what}");
        }
    }
}
