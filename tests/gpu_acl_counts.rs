//! Parity of kernel `acl_counts` (shaders/acl_counts.wgsl) with its CPU twin
//! (`yarnsim::acl::counts::acl_counts`) at every phase of the GPU ACL step, on counter blocks filled
//! with arbitrary small values (so a field the kernel forgets to reset, copies wrongly or counts
//! wrongly shows as a difference), and the phase-specific cases: a rebuild round with and without
//! dirty sets (`rounds_used`, `rebuild.num_dirty`), a merge whose last pass did or did not still
//! merge, with and without coalescing (which writes the table length into the `acl` and `rebuild`
//! uniforms), a compaction with and without a table overflow. Every output is an integer: kernel and twin must be
//! identical. Skips loudly without an adapter, fails under `CI=true`.

use yarnsim::acl::counts::{
    acl_counts, PHASE_COALESCED, PHASE_COMPACTED, PHASE_MERGED, PHASE_ROUND, PHASE_SCHEDULED,
    PHASE_STEP,
};
use yarnsim::acl::rebuild::{PoolAlloc, RebuildParams};
use yarnsim::gpu::testing::gpu_or_skip;
use yarnsim::layout::{
    AclCounters, AclPhase, AclSizes, AclUniform, MergeCounters, SchedCounters,
    ACL_SIZES_MORE_PASSES,
};
use yarnsim::pipelines::run_kernel;

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
    set_dest: Vec<u32>,
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
        set_dest: (0..8).map(|k| 3 * k + seed).collect(),
        sched: filled(&mut s),
        sizes: filled(&mut s),
        merge: filled(&mut s),
        pool: filled(&mut s),
        acl: filled(&mut s),
        uniform: filled(&mut s),
    }
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
    let cases: [Case; 10] = [
        (PHASE_STEP, "step", |_| {}),
        (PHASE_SCHEDULED, "scheduled", |_| {}),
        (PHASE_ROUND, "round with dirty sets", |x| {
            x.sizes.num_dirty = 7
        }),
        (PHASE_ROUND, "round without dirty sets", |x| {
            x.sizes.num_dirty = 0
        }),
        (PHASE_MERGED, "merge still merging", |x| {
            x.merge.edges.count = 2
        }),
        (PHASE_MERGED, "merge done", |x| x.merge.edges.count = 0),
        (PHASE_COALESCED, "coalescing still merging", |x| {
            x.merge.edges.count = 3
        }),
        (PHASE_COALESCED, "coalescing done", |x| {
            x.merge.edges.count = 0
        }),
        (PHASE_COMPACTED, "compacted", |x| x.merge.sets.overflow = 0),
        (PHASE_COMPACTED, "compacted after an overflow", |x| {
            x.merge.sets.overflow = 1
        }),
    ];
    for (k, (phase, what, set)) in cases.into_iter().enumerate() {
        let mut x = blocks(17 + k as u32);
        set(&mut x);
        let p = AclPhase {
            phase,
            ..Default::default()
        };
        let out = run_kernel(
            &gpu,
            "acl_counts",
            &[
                ("acl_phase", b(&p)),
                ("rebuild", b(&x.rebuild)),
                ("set_dest", bytemuck::cast_slice(&x.set_dest)),
                ("sched_counters", b(&x.sched)),
                ("acl_sizes", b(&x.sizes)),
                ("merge_counters", b(&x.merge)),
                ("pool_counters", b(&x.pool)),
                ("acl_counters", b(&x.acl)),
                ("acl", b(&x.uniform)),
            ],
            1,
        )
        .unwrap();
        let (before, rebuild_before, uniform_before) = (x.sizes, x.rebuild, x.uniform);
        acl_counts(
            &p,
            &mut x.rebuild,
            &x.set_dest,
            &mut x.sched,
            &mut x.sizes,
            &mut x.merge,
            &mut x.pool,
            &mut x.acl,
            &mut x.uniform,
        );
        let want: [(&str, &[u8]); 7] = [
            ("rebuild", b(&x.rebuild)),
            ("sched_counters", b(&x.sched)),
            ("acl_sizes", b(&x.sizes)),
            ("merge_counters", b(&x.merge)),
            ("pool_counters", b(&x.pool)),
            ("acl_counters", b(&x.acl)),
            ("acl", b(&x.uniform)),
        ];
        for (name, bytes) in want {
            assert_eq!(out[name], bytes, "{what}: {name} differs");
        }
        // The twin itself, where the phase decides something.
        match what {
            "round with dirty sets" => assert_eq!(x.sizes.rounds_used, before.rounds_used + 1),
            "round without dirty sets" => assert_eq!(x.sizes.rounds_used, before.rounds_used),
            "step" => assert_eq!(x.sizes.rounds_used, 0),
            _ => {}
        }
        // The uniforms' counts: written by the round and coalesced phases only.
        if phase == PHASE_ROUND {
            assert_eq!(x.rebuild.num_dirty, before.num_dirty, "{what}");
        } else {
            assert_eq!(x.rebuild.num_dirty, rebuild_before.num_dirty, "{what}");
        }
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
        } else {
            assert_eq!(x.rebuild.num_sets, rebuild_before.num_sets, "{what}");
            assert_eq!(x.uniform, uniform_before, "{what}");
        }
        if what.ends_with("still merging") {
            assert_ne!(x.sizes.errors & ACL_SIZES_MORE_PASSES, 0, "{what}");
        }
    }
}
