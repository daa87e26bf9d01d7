//! Parity of kernel `acl_counts` (shaders/acl_counts.wgsl) with its CPU twin
//! (`yarnsim::acl::counts::acl_counts`) at every phase of the GPU ACL step, on counter blocks filled
//! with arbitrary small values (so a field the kernel forgets to reset, copies wrongly or counts
//! wrongly shows as a difference), and the phase-specific cases: coalescing, which writes the
//! table length into the `acl` and `rebuild` uniforms, with and without its last pass still
//! merging (the verdict is not this kernel's any more). (The counts
//! that other kernels move, at a rebuild round's start and after compaction, are tested with
//! those kernels: tests/gpu_acl_release.rs, tests/gpu_acl_rebuild.rs.) The kernels that make a
//! phase in one dispatch with other work (`acl_step_start`, `acl_scheduled_plan`,
//! `acl_coalesced_plan`) are each bit for bit the kernels they replace, dispatched one after the
//! other on the same GPU. Every output is an integer: kernel and twin must be identical. Skips
//! loudly without an adapter, fails under `CI=true`.

use yarnsim::acl::counts::{acl_counts, PHASE_COALESCED, PHASE_SCHEDULED, PHASE_STEP};
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

/// Kernel `acl_counts` at `phase` on the GPU over the blocks `x`: every block it binds, as it left
/// them.
fn gpu_acl_counts(
    gpu: &yarnsim::gpu::Gpu,
    phase: u32,
    x: &Blocks,
) -> std::collections::BTreeMap<String, Vec<u8>> {
    fn b<T: bytemuck::Pod>(v: &T) -> &[u8] {
        bytemuck::bytes_of(v)
    }
    let p = AclPhase {
        phase,
        ..Default::default()
    };
    run_kernel(
        gpu,
        "acl_counts",
        &[
            ("acl_phase", b(&p)),
            ("rebuild", b(&x.rebuild)),
            ("sched_counters", b(&x.sched)),
            ("acl_sizes", b(&x.sizes)),
            ("merge_counters", b(&x.merge)),
            ("pool_counters", b(&x.pool)),
            ("acl_counters", b(&x.acl)),
            ("acl", b(&x.uniform)),
        ],
        1,
    )
    .unwrap()
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
    let cases: [Case; 4] = [
        (PHASE_STEP, "step", |_| {}),
        (PHASE_SCHEDULED, "scheduled", |_| {}),
        (PHASE_COALESCED, "coalesced", |_| {}),
        // The verdict on coalescing's last pass is the first round's (set_dirty_write), not this
        // phase's: a pass that still merged changes nothing here.
        (PHASE_COALESCED, "coalesced, still merging", |x| {
            x.merge.edges.count = 3
        }),
    ];
    for (k, (phase, what, set)) in cases.into_iter().enumerate() {
        let mut x = blocks(17 + k as u32);
        set(&mut x);
        let p = AclPhase {
            phase,
            ..Default::default()
        };
        let out = gpu_acl_counts(&gpu, phase, &x);
        let (before, rebuild_before, uniform_before) = (x.sizes, x.rebuild, x.uniform);
        acl_counts(
            &p,
            &mut x.rebuild,
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
        if what == "step" {
            assert_eq!(x.sizes.rounds_used, 0);
            assert_eq!(x.merge.sets.count, before.num_sets);
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

/// `acl_step_start`, the GPU ACL step's first dispatch, leaves every block bit for bit as
/// `acl_counts` (step phase), `sched_sizes` (start) and `set_lookup_clear` dispatched on the same GPU
/// one after the other, and as its twin: on filled blocks (every field that must be reset or kept
/// shows), with lookup counts of 1,000 segments (4 workgroups, the last partly past the
/// segments: the tail past `num_segments + 1` stays as it was).
#[test]
fn acl_step_start_is_the_three_kernels_bit_for_bit() {
    let Some(gpu) = gpu_or_skip("acl_step_start_is_the_three_kernels_bit_for_bit") else {
        return;
    };
    use yarnsim::layout::{LookupUniform, SchedPhase, SchedUniform};
    fn b<T: bytemuck::Pod>(v: &T) -> &[u8] {
        bytemuck::bytes_of(v)
    }
    let mut x = blocks(41);
    // Padding words hold zeros (the scheduler's twin writes them as zeros, the kernel leaves them).
    for c in [
        &mut x.sched.touching,
        &mut x.sched.grid,
        &mut x.sched.cand,
        &mut x.sched.fresh,
        &mut x.sched.entries,
        &mut x.sched.release,
    ] {
        c._pad = 0;
    }
    x.sched._pad = [0; 2];
    let mut seed = 99u32;
    let step: SchedUniform = filled(&mut seed);
    let (p0, p1, p2): (SchedUniform, SchedUniform, SchedUniform) =
        (filled(&mut seed), filled(&mut seed), filled(&mut seed));
    let mut state: [u32; 4] = filled(&mut seed);
    let release_offsets: [u32; 8] = filled(&mut seed);
    let lookup = LookupUniform {
        num_sets: 7,
        num_segments: 1000,
        quadrature: 11,
        _pad: 0,
    };
    let offsets: Vec<u32> = (0..1100u32).map(|i| 3 + i * 7).collect();
    let fused = run_kernel(
        &gpu,
        "acl_step_start",
        &[
            ("sched_step", b(&step)),
            ("acl_lookup", b(&lookup)),
            ("acl_sizes", b(&x.sizes)),
            ("merge_counters", b(&x.merge)),
            ("pool_counters", b(&x.pool)),
            ("acl_counters", b(&x.acl)),
            ("sched_counters", b(&x.sched)),
            ("sched_state", bytemuck::cast_slice(&state)),
            ("sched_p0", b(&p0)),
            ("lookup_offsets", bytemuck::cast_slice(&offsets)),
        ],
        lookup.num_segments + 1,
    )
    .unwrap();
    let counts = gpu_acl_counts(&gpu, PHASE_STEP, &x);
    let sizes = run_kernel(
        &gpu,
        "sched_sizes",
        &[
            ("sched_phase", b(&SchedPhase::default())),
            ("sched_step", b(&step)),
            ("release_offsets", bytemuck::cast_slice(&release_offsets)),
            ("sched_counters", &counts["sched_counters"]),
            ("sched_state", bytemuck::cast_slice(&state)),
            ("sched_p0", b(&p0)),
            ("sched_p1", b(&p1)),
            ("sched_p2", b(&p2)),
        ],
        1,
    )
    .unwrap();
    let clear = run_kernel(
        &gpu,
        "set_lookup_clear",
        &[
            ("acl_lookup", b(&lookup)),
            ("lookup_offsets", bytemuck::cast_slice(&offsets)),
        ],
        lookup.num_segments + 1,
    )
    .unwrap();
    for (name, want) in [
        ("acl_sizes", &counts["acl_sizes"]),
        ("merge_counters", &counts["merge_counters"]),
        ("pool_counters", &counts["pool_counters"]),
        ("acl_counters", &counts["acl_counters"]),
        ("sched_counters", &sizes["sched_counters"]),
        ("sched_state", &sizes["sched_state"]),
        ("sched_p0", &sizes["sched_p0"]),
        ("lookup_offsets", &clear["lookup_offsets"]),
    ] {
        assert_eq!(&fused[name], want, "{name}");
    }
    let mut lo = offsets.clone();
    let mut p0t = p0;
    yarnsim::acl::counts::acl_step_start(
        &step,
        &lookup,
        &mut x.sizes,
        &mut x.merge,
        &mut x.pool,
        &mut x.acl,
        &mut x.sched,
        &mut state,
        &mut p0t,
        &mut lo,
    );
    for (name, want) in [
        ("acl_sizes", b(&x.sizes)),
        ("merge_counters", b(&x.merge)),
        ("pool_counters", b(&x.pool)),
        ("acl_counters", b(&x.acl)),
        ("sched_counters", b(&x.sched)),
        ("sched_p0", b(&p0t)),
        ("lookup_offsets", bytemuck::cast_slice(&lo)),
    ] {
        assert_eq!(&fused[name][..], want, "the twin's {name}");
    }
    assert!(lo[..=1000].iter().all(|&v| v == 0));
    assert_eq!(lo[1001], offsets[1001], "past num_segments + 1 untouched");
    assert_eq!(p0t.num_entries, state[0]);
}

/// The evaluation's plan as the step has it: two grids over `merge_counters.sets.count` (lanes
/// per set, workgroups), the plan's capacity, and its buffer with the grids' slot records and
/// the argument words set to 7.
struct EvalPlan {
    grids: [yarnsim::layout::GridSpec; 2],
    spec: yarnsim::layout::CountPlan,
    words: Vec<u32>,
}

fn eval_plan() -> EvalPlan {
    use std::mem::offset_of;
    use yarnsim::layout::{Capacity, CountPlan, GridSpec, COUNT_PLAN_GRIDS};
    use yarnsim::scan::{slot_record, PLAN_SLOT_WORDS};
    let grids = [
        GridSpec {
            add: 0,
            threads_per_item: 4,
            workgroup_size: 64,
            _pad: 0,
        },
        GridSpec {
            add: 0,
            threads_per_item: 8,
            workgroup_size: 256,
            _pad: 0,
        },
    ];
    let spec = CountPlan {
        src_word: ((offset_of!(MergeCounters, sets) + offset_of!(Capacity, count)) / 4) as u32,
        cap: 40_000_000,
        kind: COUNT_PLAN_GRIDS,
        num_levels: grids.len() as u32,
        args_word: PLAN_SLOT_WORDS * grids.len() as u32,
        ..Default::default()
    };
    let mut words = vec![7u32; (spec.args_word + 3 * grids.len() as u32 + 5) as usize];
    for (k, g) in grids.iter().enumerate() {
        let at = (PLAN_SLOT_WORDS as usize) * k;
        words[at..at + slot_record(g).len()].copy_from_slice(&slot_record(g));
    }
    EvalPlan { grids, spec, words }
}

/// The table lengths the plan tests run: none, the relaxed scarf's, past the plan's capacity, and
/// past 65,535 workgroups (a 2-D grid).
fn plan_cases(cap: u32) -> [u32; 4] {
    [0, 19_886, cap + 3, 3_000_000]
}

impl EvalPlan {
    /// `count_plan` on the GPU over `merge_counters` (as a kernel before it left them): the plan.
    fn count_plan(&self, gpu: &yarnsim::gpu::Gpu, merge_counters: &[u8]) -> Vec<u8> {
        let mut out = run_kernel(
            gpu,
            "count_plan",
            &[
                ("plan_spec", bytemuck::bytes_of(&self.spec)),
                ("plan_src", merge_counters),
                ("plan_out", bytemuck::cast_slice(&self.words)),
            ],
            1,
        )
        .unwrap();
        out.remove("plan_out").unwrap()
    }

    /// The plan a twin wrote (`out`, from `words`) is each grid over the capped table of `sets`,
    /// and nothing past the grids' arguments.
    fn check(&self, out: &[u32], sets: u32, what: &str) {
        for (g, spec_g) in self.grids.iter().enumerate() {
            let at = (self.spec.args_word + 3 * g as u32) as usize;
            let threads = sets.min(self.spec.cap) * spec_g.threads_per_item;
            assert_eq!(
                out[at..at + 3],
                yarnsim::shaders::dispatch_grid(threads, spec_g.workgroup_size),
                "{what}: grid {g}"
            );
        }
        assert!(out[out.len() - 5..].iter().all(|&w| w == 7), "{what}");
    }
}

/// `acl_scheduled_plan` (a step without coalescing: `acl_counts`' scheduled phase and the
/// evaluation's `count_plan` in one dispatch) leaves every block and the plan bit for bit as
/// `acl_counts` (scheduled) then `count_plan` over `merge_counters.sets.count` dispatched on the same
/// GPU one after the other, and as its twin: on filled blocks, at each of [`plan_cases`], and the
/// scheduler's touching pairs past their capacity once.
#[test]
fn acl_scheduled_plan_is_the_two_kernels_bit_for_bit() {
    let Some(gpu) = gpu_or_skip("acl_scheduled_plan_is_the_two_kernels_bit_for_bit") else {
        return;
    };
    fn b<T: bytemuck::Pod>(v: &T) -> &[u8] {
        bytemuck::bytes_of(v)
    }
    let plan = eval_plan();
    let (spec, words) = (&plan.spec, &plan.words);
    let [none, scarf, past, wide] = plan_cases(spec.cap);
    let cases = [
        (none, false),
        (scarf, false),
        (scarf, true),
        (past, false),
        (wide, false),
    ];
    for (k, (sets, over)) in cases.into_iter().enumerate() {
        let mut x = blocks(71 + k as u32);
        x.merge.sets.count = sets;
        x.sched.touching.capacity = 500;
        x.sched.touching.count = if over { 700 } else { 300 };
        let what = format!("{sets} sets, touching {}", x.sched.touching.count);
        let fused = run_kernel(
            &gpu,
            "acl_scheduled_plan",
            &[
                ("plan_spec", b(spec)),
                ("sched_counters", b(&x.sched)),
                ("merge_counters", b(&x.merge)),
                ("plan_out", bytemuck::cast_slice(words)),
            ],
            1,
        )
        .unwrap();
        let counts = gpu_acl_counts(&gpu, PHASE_SCHEDULED, &x);
        let planned = plan.count_plan(&gpu, &counts["merge_counters"]);
        for (name, want) in [
            ("sched_counters", &counts["sched_counters"]),
            ("merge_counters", &counts["merge_counters"]),
            ("plan_out", &planned),
        ] {
            assert_eq!(&fused[name], want, "{what}: {name}");
        }
        // The scheduled phase leaves the step's own counts as they were (the released list is
        // the step start's to empty).
        assert_eq!(counts["acl_sizes"], b(&x.sizes), "{what}: acl_sizes");
        let mut out = words.clone();
        yarnsim::acl::counts::acl_scheduled_plan(spec, &mut x.sched, &mut x.merge, &mut out);
        for (name, want) in [
            ("sched_counters", b(&x.sched)),
            ("merge_counters", b(&x.merge)),
            ("plan_out", bytemuck::cast_slice(&out)),
        ] {
            assert_eq!(&fused[name][..], want, "{what}: the twin's {name}");
        }
        // The twin itself: the count moved, and each grid over the (capped) table.
        assert_eq!(
            x.merge.touching.count,
            if over { 500 } else { 300 },
            "{what}"
        );
        plan.check(&out, sets, &what);
    }
}

/// `acl_coalesced_plan` (a step with coalescing: `acl_counts`' coalesced phase and the
/// evaluation's `count_plan` in one dispatch) leaves every block and the plan bit for bit as
/// `acl_counts` (coalesced) then `count_plan` over `merge_counters.sets.count` dispatched on the
/// same GPU one after the other, and as its twin: on filled blocks, at each of [`plan_cases`].
#[test]
fn acl_coalesced_plan_is_the_two_kernels_bit_for_bit() {
    let Some(gpu) = gpu_or_skip("acl_coalesced_plan_is_the_two_kernels_bit_for_bit") else {
        return;
    };
    fn b<T: bytemuck::Pod>(v: &T) -> &[u8] {
        bytemuck::bytes_of(v)
    }
    let plan = eval_plan();
    let (spec, words) = (&plan.spec, &plan.words);
    for (k, sets) in plan_cases(spec.cap).into_iter().enumerate() {
        let mut x = blocks(131 + k as u32);
        x.merge.sets.count = sets;
        let what = format!("{sets} sets");
        let fused = run_kernel(
            &gpu,
            "acl_coalesced_plan",
            &[
                ("plan_spec", b(spec)),
                ("rebuild", b(&x.rebuild)),
                ("merge_counters", b(&x.merge)),
                ("acl", b(&x.uniform)),
                ("plan_out", bytemuck::cast_slice(words)),
            ],
            1,
        )
        .unwrap();
        let counts = gpu_acl_counts(&gpu, PHASE_COALESCED, &x);
        let planned = plan.count_plan(&gpu, &counts["merge_counters"]);
        for (name, want) in [
            ("rebuild", &counts["rebuild"]),
            ("merge_counters", &counts["merge_counters"]),
            ("acl", &counts["acl"]),
            ("plan_out", &planned),
        ] {
            assert_eq!(&fused[name], want, "{what}: {name}");
        }
        let mut out = words.clone();
        yarnsim::acl::counts::acl_coalesced_plan(
            spec,
            &mut x.rebuild,
            &mut x.merge,
            &mut x.uniform,
            &mut out,
        );
        for (name, want) in [
            ("rebuild", b(&x.rebuild)),
            ("merge_counters", b(&x.merge)),
            ("acl", b(&x.uniform)),
            ("plan_out", bytemuck::cast_slice(&out)),
        ] {
            assert_eq!(&fused[name][..], want, "{what}: the twin's {name}");
        }
        // The twin itself: the table length in both uniforms, and each grid over the (capped)
        // table.
        assert_eq!(
            (x.uniform.num_sets, x.rebuild.num_sets),
            (sets, sets),
            "{what}"
        );
        plan.check(&out, sets, &what);
    }
}
