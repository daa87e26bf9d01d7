//! Parity of kernel `acl_counts` (shaders/acl_counts.wgsl) with its CPU twin
//! (`yarnsim::acl::counts::acl_counts`) at every phase of the GPU ACL step, on counter blocks filled
//! with arbitrary small values (so a field the kernel forgets to reset, copies wrongly or counts
//! wrongly shows as a difference), and the phase-specific cases: a rebuild round with and without
//! dirty sets (`rounds_used`), a merge whose last pass did or did not still merge, a compaction
//! with and without a table overflow. Every output is an integer: kernel and twin must be
//! identical. Skips loudly without an adapter, fails under `CI=true`.

use yarnsim::acl::counts::{
    acl_counts, PHASE_COMPACTED, PHASE_MERGED, PHASE_ROUND, PHASE_SCHEDULED, PHASE_STEP,
};
use yarnsim::acl::rebuild::{PoolAlloc, RebuildParams};
use yarnsim::gpu::testing::gpu_or_skip;
use yarnsim::layout::{AclCounters, AclPhase, AclSizes, MergeCounters, SchedCounters};
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
    let cases: [Case; 8] = [
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
            ],
            1,
        )
        .unwrap();
        let before = x.sizes;
        acl_counts(
            &p,
            &x.rebuild,
            &x.set_dest,
            &mut x.sched,
            &mut x.sizes,
            &mut x.merge,
            &mut x.pool,
            &mut x.acl,
        );
        let want: [(&str, &[u8]); 5] = [
            ("sched_counters", b(&x.sched)),
            ("acl_sizes", b(&x.sizes)),
            ("merge_counters", b(&x.merge)),
            ("pool_counters", b(&x.pool)),
            ("acl_counters", b(&x.acl)),
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
    }
}
