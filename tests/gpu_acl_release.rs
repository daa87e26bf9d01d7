//! Parity of the rebuild round's dirty list (`set_dirty_count` → scan → `set_dirty_write`,
//! src/acl/sets.rs) and of its releases and garbage (`pool_alloc_size` → `pool_alloc`,
//! src/acl/rebuild.rs, which also allocate the pools: tests/gpu_acl_rebuild.rs) with their CPU twins, and of the twins with what the
//! CPU path computed before these stages had kernels (a filter over the sets; a loop over the dirty
//! list appending releases and summing the old models' sizes), written out here as the oracle.
//!
//! Fixture: `support/dirty_rebuild.rs`, the default swatch's contact sets after 40 steps of a real
//! run, every set dirty and measured by `set_rebuild_size` at the next step's positions (so the
//! plans hold real resizes and deletions). Every output is discrete (indices, counts, boxes, sums
//! of integers): GPU and twin must be identical. The twins and the oracle are checked whether or not
//! an adapter opens; the GPU parts skip loudly without one and fail under `CI=true`.

#[path = "support/dirty_rebuild.rs"]
mod dirty_rebuild;
#[path = "support/fixture.rs"]
mod fixture;

use dirty_rebuild::{dirty_rebuild, DirtyRebuild};
use fixture::bytes;
use yarnsim::acl::rebuild::{
    alloc_groups_len, model_sizes, plan_sizes, pool_alloc, pool_alloc_size, pool_alloc_stage,
    AllocGroup, PoolAlloc, PoolGarbage, RebuildParams, RebuildPlan, ALLOC_GROUP, PLAN_DELETE,
    PLAN_ZERO,
};
use yarnsim::acl::sets::{set_dirty_count, set_dirty_stage, set_dirty_write};
use yarnsim::acl::{ContactSet, SET_DIRTY, SET_LIVE};
use yarnsim::gpu::testing::gpu_or_skip;
use yarnsim::gpu::Gpu;
use yarnsim::layout::{
    AclSizes, Capacity, CountPlan, GridSpec, MergeCounters, ACL_SIZES_MORE_PASSES, COUNT_PLAN_GRIDS,
};
use yarnsim::pipelines::run_kernel;
use yarnsim::scan::{exclusive_scan, PLAN_SLOT_WORDS};
use yarnsim::sched::{Release, EMPTY_BOX};

fn cast<T: bytemuck::Pod>(v: &[u8]) -> Vec<T> {
    bytemuck::cast_slice(v).to_vec()
}

fn sizes_of(out: &std::collections::BTreeMap<String, Vec<u8>>) -> AclSizes {
    bytemuck::pod_read_unaligned(&out["acl_sizes"])
}

/// An `acl_sizes` block as a step leaves it between stages: every field set, so a stage that
/// writes a field it should leave alone shows.
fn sizes_before(released: u32, capacity: u32) -> AclSizes {
    AclSizes {
        released: Capacity {
            count: released,
            capacity,
            overflow: 0,
            _pad: 0,
        },
        lookup: Capacity {
            count: 11,
            capacity: 12,
            overflow: 0,
            _pad: 0,
        },
        num_sets: 13,
        num_dirty: 14,
        garbage_cp: 100,
        garbage_k: 200,
        garbage_w: 300,
        errors: 0,
        rebuilds: 15,
        rounds_used: 0,
        touching: 16,
    }
}

// ---------------------------------------------------------------------------------------------
// The dirty list.

/// The plan of a rebuild round's three grids over at most `cap` dirty sets, as
/// `scan::CountedGrid::inline` lays it out: one 64-word slot per grid with its `GridSpec` (a
/// workgroup per set; a thread per set in workgroups of 256; a thread per set plus one in
/// workgroups of 256), then the indirect arguments, which hold a stale value to be overwritten.
fn round_plan(cap: u32) -> (CountPlan, Vec<u32>) {
    let grids = [
        GridSpec {
            add: 0,
            threads_per_item: 1,
            workgroup_size: 1,
            _pad: 0,
        },
        GridSpec {
            add: 0,
            threads_per_item: 1,
            workgroup_size: 256,
            _pad: 0,
        },
        GridSpec {
            add: 1,
            threads_per_item: 1,
            workgroup_size: 256,
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
    let mut words = vec![0x0bad_0bad_u32; slot * grids.len() + 12];
    for (k, g) in grids.iter().enumerate() {
        words[slot * k..slot * k + 4].copy_from_slice(bytemuck::cast_slice(&[*g]));
    }
    (spec, words)
}

/// The dirty list before it had kernels (the CPU path's filter).
fn dirty_oracle(sets: &[ContactSet]) -> Vec<u32> {
    (0..sets.len() as u32)
        .filter(|&k| sets[k as usize].is_dirty())
        .collect()
}

/// `set_dirty_count` → `set_dirty_write` (each slot from the group sums: no scan) through the
/// twins, checked against the oracle (and the exclusive scan of the counts) and the CPU path's
/// stage, then on the GPU (each kernel on the twin's input). `dirty_dest` and
/// `dirty` are given a tail past what the kernels may write, filled with a sentinel that must stay.
fn check_dirty_list(gpu: Option<&Gpu>, sets: &[ContactSet], label: &str) -> usize {
    let ns = sets.len();
    let p = RebuildParams {
        num_sets: ns as u32,
        ..Default::default()
    };
    // A tail of several workgroups, as the step's grid (the set capacity's) passes the table: the
    // workgroups wholly past it return at once.
    const TAIL: usize = 1_000;
    const SENTINEL: u32 = 0xabad_cafe;
    let mut dest = vec![SENTINEL; ns + 1 + TAIL];
    // The group sums of the ns + 1 words written, and one more slot that must stay.
    let num_groups = (ns + 1).div_ceil(256);
    let mut groups = vec![SENTINEL; num_groups + 1];
    set_dirty_count(&p, sets, &mut dest, &mut groups);
    assert!(dest[ns + 1..].iter().all(|&v| v == SENTINEL));
    for (g, chunk) in dest[..ns + 1].chunks(256).enumerate() {
        assert_eq!(groups[g], chunk.iter().sum::<u32>(), "{label}: group {g}");
    }
    assert_eq!(groups[num_groups], SENTINEL);
    let counts = dest.clone();
    exclusive_scan(&mut dest[..ns + 1], &mut Vec::new());
    let oracle = dirty_oracle(sets);
    let nd = dest[ns] as usize;
    assert_eq!(nd, oracle.len(), "{label}: dirty count");
    let mut dirty = vec![SENTINEL; ns + TAIL];
    let mut sizes = sizes_before(3, 40);
    // The round's start in the last thread: the last merge's pairs (none, or some: its last pass
    // still merged), the pools' lengths, and three grids of the shapes the GPU step plans.
    let merge_in = MergeCounters {
        edges: Capacity {
            count: if label == "mixed" { 6 } else { 0 },
            capacity: 64,
            overflow: 0,
            _pad: 0,
        },
        ..Default::default()
    };
    let pool_in = PoolAlloc {
        base: [1, 2, 3, 4],
        len: [50, 60, 70, 80],
        cap: [100, 200, 300, 400],
        ..Default::default()
    };
    let (spec, plan_in) = round_plan(ns as u32);
    let (mut rb, mut merge, mut pool, mut plan) = (p, merge_in, pool_in, plan_in.clone());
    // set_dirty_write takes the counts unscanned, each slot from the group sums.
    set_dirty_write(
        &spec,
        &mut rb,
        &counts,
        &groups[..num_groups],
        &mut dirty,
        &mut sizes,
        &mut merge,
        &mut pool,
        &mut plan,
    );
    assert_eq!(dirty[..nd], oracle[..], "{label}: dirty list");
    assert!(dirty[nd..].iter().all(|&v| v == SENTINEL));
    let more = if merge_in.edges.count != 0 {
        ACL_SIZES_MORE_PASSES
    } else {
        0
    };
    assert_eq!(
        sizes,
        AclSizes {
            num_dirty: nd as u32,
            rebuilds: sizes_before(3, 40).rebuilds + nd as u32,
            rounds_used: (nd > 0) as u32,
            errors: more,
            ..sizes_before(3, 40)
        },
        "{label}: acl_sizes"
    );
    assert_eq!(rb.num_dirty, nd as u32, "{label}: rebuild.num_dirty");
    assert_eq!((merge.edges.count, merge.edges.capacity), (0, 64));
    assert_eq!(pool.base, pool_in.len, "{label}: the allocation's base");
    // The grids, by their definition: a workgroup per dirty set, a thread per dirty set, a
    // thread per dirty set plus one.
    let n = nd as u32;
    let want = [n, n.div_ceil(256), (n + 1).div_ceil(256)];
    for (k, w) in want.iter().enumerate() {
        let at = spec.args_word as usize + 3 * k;
        assert_eq!(plan[at..at + 3], [*w, 1, 1], "{label}: grid {k}");
    }
    assert_eq!(
        plan[..spec.args_word as usize],
        plan_in[..spec.args_word as usize]
    );
    // The CPU path's stage (with used scratch buffers) gives the same list.
    let (mut d, mut part, mut list) = (vec![9; 3], vec![9; 7], vec![9; 2 * ns + 1]);
    assert_eq!(set_dirty_stage(sets, &mut d, &mut part, &mut list), nd);
    assert_eq!(list, oracle, "{label}: set_dirty_stage");

    let Some(gpu) = gpu else {
        return nd;
    };
    let grid_groups = (ns + 1 + TAIL).div_ceil(256);
    let out = run_kernel(
        gpu,
        "set_dirty_count",
        &[
            ("rebuild", bytes(&[p])),
            ("sets", bytes(sets)),
            ("dirty_dest", bytes(&vec![SENTINEL; ns + 1 + TAIL])),
            ("scan_groups", bytes(&vec![SENTINEL; grid_groups])),
        ],
        // Threads past num_sets + 1 must do nothing.
        (ns + 1 + TAIL) as u32,
    )
    .unwrap();
    assert_eq!(
        cast::<u32>(&out["dirty_dest"]),
        counts,
        "{label}: GPU counts"
    );
    // The groups of the words written, as the twin's; those past them as they were.
    let gpu_groups = cast::<u32>(&out["scan_groups"]);
    assert_eq!(
        gpu_groups[..num_groups],
        groups[..num_groups],
        "{label}: GPU group sums"
    );
    assert!(
        grid_groups - num_groups > 2 && gpu_groups[num_groups..].iter().all(|&v| v == SENTINEL),
        "{label}: GPU group sums past the table"
    );
    let out = run_kernel(
        gpu,
        "set_dirty_write",
        &[
            ("plan_spec", bytes(&[spec])),
            ("rebuild", bytes(&[p])),
            ("dirty_dest", bytes(&counts)),
            ("scan_groups", bytes(&groups[..num_groups])),
            ("dirty", bytes(&vec![SENTINEL; ns + TAIL])),
            ("acl_sizes", bytes(&[sizes_before(3, 40)])),
            ("merge_counters", bytes(&[merge_in])),
            ("pool_counters", bytes(&[pool_in])),
            ("plan_out", bytes(&plan_in)),
        ],
        (ns + 1 + TAIL) as u32,
    )
    .unwrap();
    assert_eq!(cast::<u32>(&out["dirty"]), dirty, "{label}: GPU dirty list");
    assert_eq!(sizes_of(&out), sizes, "{label}: GPU acl_sizes");
    assert_eq!(cast::<RebuildParams>(&out["rebuild"]), vec![rb]);
    assert_eq!(cast::<MergeCounters>(&out["merge_counters"]), vec![merge]);
    assert_eq!(cast::<PoolAlloc>(&out["pool_counters"]), vec![pool]);
    assert_eq!(cast::<u32>(&out["plan_out"]), plan, "{label}: GPU grids");
    nd
}

/// The dirty list of the swatch's real table: the sets a rebuild resizes or deletes (from the
/// fixture's plans) and every 5th set marked dirty, every 7th not live (some of those dirty: they
/// must not be listed). Also the table with no dirty set, and with every set dirty.
#[test]
fn set_dirty_matches_twin() {
    let f = dirty_rebuild();
    let mut sets = f.acl.sets().to_vec();
    assert_eq!(sets.len(), f.plans.len());
    for (k, (s, plan)) in sets.iter_mut().zip(&f.plans).enumerate() {
        s.flags &= !SET_DIRTY;
        if plan.flags & PLAN_DELETE != 0 || plan.new_bx != s.bx || k % 5 == 0 {
            s.flags |= SET_DIRTY;
        }
        if k % 7 == 3 {
            s.flags &= !SET_LIVE;
        }
    }
    let clean: Vec<ContactSet> = f
        .acl
        .sets()
        .iter()
        .map(|s| ContactSet {
            flags: s.flags & !SET_DIRTY,
            ..*s
        })
        .collect();
    let gpu = gpu_or_skip("set_dirty_matches_twin");
    let gpu = gpu.as_deref();
    let nd = check_dirty_list(gpu, &sets, "mixed");
    let ns = sets.len();
    assert!(nd > ns / 5 && nd < ns, "{nd} of {ns} sets dirty");
    assert_eq!(check_dirty_list(gpu, &clean, "none dirty"), 0);
    assert_eq!(check_dirty_list(gpu, &f.sets, "all dirty"), ns);
    assert_eq!(check_dirty_list(gpu, &[], "empty table"), 0);
    // Over several workgroups (the slots of the later ones start from the earlier ones' sums).
    let tiled: Vec<ContactSet> = sets.iter().cycle().take(700.max(3 * ns)).copied().collect();
    let want = tiled.iter().filter(|s| s.is_dirty()).count();
    assert!(want > 256, "{want} dirty sets: one workgroup's worth");
    assert_eq!(check_dirty_list(gpu, &tiled, "tiled"), want);
}

// ---------------------------------------------------------------------------------------------
// The releases and garbage.

/// What the CPU path computed before the releases had kernels: for each dirty set in list order,
/// its old model's sizes into the garbage and, when it is deleted or its box changes, a release
/// appended to `released`.
fn release_oracle(
    sets: &[ContactSet],
    dirty: &[u32],
    plans: &[RebuildPlan],
    released: &mut Vec<Release>,
) -> [u32; 3] {
    let mut g = [0u32; 3];
    for (plan, &k) in plans.iter().zip(dirty) {
        let s = &sets[k as usize];
        for (a, b) in g.iter_mut().zip(model_sizes(s)) {
            *a += b as u32;
        }
        if plan.flags & PLAN_DELETE != 0 {
            released.push(Release {
                before: s.bx,
                after: EMPTY_BOX,
            });
        } else if plan.new_bx != s.bx {
            released.push(Release {
                before: s.bx,
                after: plan.new_bx,
            });
        }
    }
    g
}

/// Releases an earlier rebuild round of the step left in the list (distinct, recognisable).
fn earlier_releases(n: usize) -> Vec<Release> {
    (0..n as u32)
        .map(|e| Release {
            before: [e, e + 1, e + 2, e + 3],
            after: [7, 7, e, e],
        })
        .collect()
}

/// One round of the twins and kernels: `pool_alloc_size` → `pool_alloc` with `base` releases
/// already in a list of `capacity` (the buffer `capacity + TAIL` long, the tail a sentinel no
/// kernel may write). Returns the twins' `released` buffer and `acl_sizes`, after checking the
/// group sums against their definition (each 256 dirty sets' sizes and releases, the base), the
/// plans' ranges against a running sum of the sizes in list order, and that the GPU gives the same
/// (each kernel on the twin's input).
fn release_round(
    gpu: Option<&Gpu>,
    f: &DirtyRebuild,
    nd: usize,
    base: usize,
    capacity: usize,
    label: &str,
) -> (Vec<Release>, AclSizes) {
    const TAIL: usize = 3;
    const SENTINEL: u32 = 0x5eed_5eed;
    let p = RebuildParams {
        num_dirty: nd as u32,
        ..f.p
    };
    let sentinel = Release {
        before: [SENTINEL; 4],
        after: [SENTINEL; 4],
    };
    let mut released = earlier_releases(base.min(capacity));
    released.resize(capacity + TAIL, sentinel);
    let released_in = released.clone();
    let sizes_in = sizes_before(base as u32, capacity as u32);
    let ng = alloc_groups_len(nd);
    let stale: AllocGroup = bytemuck::cast([SENTINEL; 8]);
    let mut groups = vec![stale; ng + TAIL];
    pool_alloc_size(&p, &f.sets, &f.dirty, &f.plans, &mut groups, &sizes_in);
    assert!(
        groups[ng..].iter().all(|g| *g == stale),
        "{label}: past the groups"
    );
    // The groups by their definition.
    for (g, got) in groups[..ng].iter().enumerate() {
        let ts = (g * ALLOC_GROUP).min(nd)..((g + 1) * ALLOC_GROUP).min(nd);
        let mut want = AllocGroup {
            released_base: base as u32,
            ..Default::default()
        };
        for t in ts {
            let (plan, s) = (&f.plans[t], &f.sets[f.dirty[t] as usize]);
            for (a, b) in want.sizes.iter_mut().zip(plan_sizes(plan)) {
                *a += b;
            }
            want.releases += (plan.flags & PLAN_DELETE != 0 || plan.new_bx != s.bx) as u32;
        }
        assert_eq!(*got, want, "{label}: group {g}");
    }
    let mut sizes = sizes_in;
    let counters0 = PoolAlloc {
        base: [1000, 2000, 3000, 0],
        cap: [u32::MAX; 4],
        first_too_large: u32::MAX,
        ..Default::default()
    };
    let (mut plans, mut counters) = (f.plans.clone(), counters0);
    pool_alloc(
        &p,
        &f.sets,
        &f.dirty,
        &groups,
        &mut plans,
        &mut counters,
        &mut released,
        &mut sizes,
    );
    assert!(
        released[capacity..].iter().all(|r| *r == sentinel),
        "{label}: written past the capacity"
    );
    // The ranges: the sizes of the dirty sets before, in list order, after the pools' bases.
    let mut at = counters0.base;
    for (t, (got, plan)) in plans[..nd].iter().zip(&f.plans).enumerate() {
        if plan.flags & PLAN_DELETE == 0 {
            let k_off = if plan.flags & PLAN_ZERO != 0 {
                0
            } else {
                at[1]
            };
            assert_eq!(
                [got.cp_off, got.k_off, got.w_off, got.term_off],
                [at[0], k_off, at[2], at[3]],
                "{label}: plan {t}'s ranges"
            );
        }
        for (a, b) in at.iter_mut().zip(plan_sizes(plan)) {
            *a += b;
        }
    }
    assert_eq!(counters.len, at, "{label}: the pools' lengths");
    if let Some(gpu) = gpu {
        let out = run_kernel(
            gpu,
            "pool_alloc_size",
            &[
                ("rebuild", bytes(&[p])),
                ("sets", bytes(&f.sets)),
                ("dirty", bytes(&f.dirty)),
                ("plans", bytes(&f.plans)),
                ("alloc_groups", bytes(&vec![stale; ng + TAIL])),
                ("acl_sizes", bytes(&[sizes_in])),
            ],
            (nd + 1 + TAIL) as u32,
        )
        .unwrap();
        assert_eq!(
            cast::<AllocGroup>(&out["alloc_groups"]),
            groups,
            "{label}: GPU group sums"
        );
        assert_eq!(sizes_of(&out), sizes_in, "{label}: GPU count's acl_sizes");
        let out = run_kernel(
            gpu,
            "pool_alloc",
            &[
                ("rebuild", bytes(&[p])),
                ("sets", bytes(&f.sets)),
                ("dirty", bytes(&f.dirty)),
                ("alloc_groups", bytes(&groups)),
                ("plans", bytes(&f.plans)),
                ("pool_counters", bytes(&[counters0])),
                ("released", bytes(&released_in)),
                ("acl_sizes", bytes(&[sizes_in])),
            ],
            (nd + 1 + TAIL) as u32,
        )
        .unwrap();
        assert_eq!(
            cast::<Release>(&out["released"]),
            released,
            "{label}: GPU releases"
        );
        assert_eq!(sizes_of(&out), sizes, "{label}: GPU acl_sizes");
        assert_eq!(
            cast::<RebuildPlan>(&out["plans"]),
            plans,
            "{label}: GPU plans"
        );
        assert_eq!(
            cast::<PoolAlloc>(&out["pool_counters"]),
            vec![counters],
            "{label}: GPU counters"
        );
    }
    (released, sizes)
}

/// The CPU path's stage over all of `f`'s dirty sets, after `base` releases of an earlier round
/// (pools from 0, `groups` as its scratch): the release list, the allocation and the garbage.
fn cpu_stage(
    f: &DirtyRebuild,
    base: usize,
    groups: &mut Vec<AllocGroup>,
) -> (Vec<Release>, PoolAlloc, PoolGarbage) {
    let mut list = earlier_releases(base);
    let mut plans = f.plans.clone();
    let p = RebuildParams {
        num_dirty: f.dirty.len() as u32,
        ..f.p
    };
    let (alloc, garbage) =
        pool_alloc_stage(&p, &f.sets, &f.dirty, &mut plans, [0; 4], groups, &mut list);
    (list, alloc, garbage)
}

/// The releases and garbage of the swatch's dirty sets (every set rebuilt at the next step's
/// positions), appended after 5 releases of an earlier round: GPU = twins = the oracle and the CPU
/// path's `pool_alloc_stage`. Then a second round on the first half of the list, appending to the
/// first round's list (the count is the base), as the step's rebuild rounds do.
#[test]
fn pool_release_matches_twin() {
    let f = dirty_rebuild();
    let nd = f.dirty.len();
    let base = 5;
    let mut oracle = earlier_releases(base);
    let g = release_oracle(&f.sets, &f.dirty, &f.plans, &mut oracle);
    let total = oracle.len();
    let deleted = f
        .plans
        .iter()
        .filter(|p| p.flags & PLAN_DELETE != 0)
        .count();
    assert!(
        total - base > 20 && deleted > 0 && total - base < nd,
        "{} releases ({deleted} deletions) of {nd} dirty sets",
        total - base
    );
    let gpu = gpu_or_skip("pool_release_matches_twin");
    let gpu = gpu.as_deref();
    let capacity = total + 17;
    let (released, sizes) = release_round(gpu, &f, nd, base, capacity, "round 1");
    assert_eq!(released[..total], oracle[..], "releases");
    assert_eq!(
        sizes,
        AclSizes {
            released: Capacity {
                count: total as u32,
                capacity: capacity as u32,
                ..Default::default()
            },
            garbage_cp: 100 + g[0],
            garbage_k: 200 + g[1],
            garbage_w: 300 + g[2],
            ..sizes_before(0, 0)
        }
    );
    assert!(g.iter().all(|&x| x > 0), "garbage {g:?}");
    // The CPU path's stage appends the same releases and returns the same garbage.
    let mut groups = vec![AllocGroup::default(); 1];
    let (list, _, garbage) = cpu_stage(&f, base, &mut groups);
    assert_eq!(list, oracle, "pool_alloc_stage's releases");
    assert_eq!(
        [garbage.cp, garbage.k, garbage.w],
        g.map(|x| x as usize),
        "pool_alloc_stage's garbage"
    );
    // A second round (the first half of the dirty sets) appends after the first round's count.
    let half = nd / 2;
    let mut oracle2 = earlier_releases(total);
    let g2 = release_oracle(&f.sets, &f.dirty[..half], &f.plans[..half], &mut oracle2);
    let (released2, sizes2) = release_round(gpu, &f, half, total, oracle2.len(), "round 2");
    assert_eq!(released2[total..oracle2.len()], oracle2[total..]);
    assert_eq!(sizes2.released.count as usize, oracle2.len());
    assert_eq!(sizes2.released.overflow, 0);
    assert_eq!(sizes2.garbage_cp, 100 + g2[0]);
}

/// A list too small for the round's releases: the overflow flag is raised, the count is the
/// length the list needs (so the host can grow it), the releases below the capacity are written
/// and nothing past it. Also a list already full before the round.
#[test]
fn pool_release_overflow_is_flagged() {
    let f = dirty_rebuild();
    let nd = f.dirty.len();
    let base = 2;
    let mut oracle = earlier_releases(base);
    release_oracle(&f.sets, &f.dirty, &f.plans, &mut oracle);
    let gpu = gpu_or_skip("pool_release_overflow_is_flagged");
    let gpu = gpu.as_deref();
    for (capacity, label) in [(base + 3, "3 free slots"), (base, "full")] {
        let (released, sizes) = release_round(gpu, &f, nd, base, capacity, label);
        assert_eq!(sizes.released.overflow, 1, "{label}");
        assert_eq!(sizes.released.count as usize, oracle.len(), "{label}");
        assert_eq!(sizes.released.capacity as usize, capacity, "{label}");
        assert_eq!(released[..capacity], oracle[..capacity], "{label}");
    }
}

/// No dirty set: nothing released, no garbage, the count stays the base (and the one group of
/// `alloc_groups` holds no size and no release, only the base).
#[test]
fn pool_release_of_no_dirty_set() {
    let f = dirty_rebuild();
    let gpu = gpu_or_skip("pool_release_of_no_dirty_set");
    let gpu = gpu.as_deref();
    let (released, sizes) = release_round(gpu, &f, 0, 4, 10, "no dirty set");
    assert_eq!(sizes, sizes_before(4, 10));
    assert_eq!(released[..4], earlier_releases(4)[..]);
    let mut groups = vec![bytemuck::cast::<[u32; 8], AllocGroup>([7; 8]); alloc_groups_len(0)];
    let p = RebuildParams {
        num_dirty: 0,
        ..f.p
    };
    pool_alloc_size(&p, &f.sets, &[], &[], &mut groups, &sizes_before(4, 10));
    assert_eq!(
        groups,
        [AllocGroup {
            released_base: 4,
            ..Default::default()
        }]
    );
}

/// More dirty sets than one workgroup holds: the swatch's dirty sets tiled past 3 groups of 256
/// (each copy a set of its own in a longer table), so that the later groups' offsets and release
/// slots start from the earlier groups' sums. GPU = twins = the oracle, and the CPU path's stage.
#[test]
fn pool_release_over_several_groups() {
    let mut t = dirty_rebuild();
    let (sets, dirty, plans) = (t.sets.clone(), t.dirty.clone(), t.plans.clone());
    let copies = (3 * ALLOC_GROUP + 50).div_ceil(dirty.len());
    t.sets = (0..copies).flat_map(|_| sets.iter().copied()).collect();
    let ns = sets.len();
    t.dirty = (0..copies)
        .flat_map(|c| dirty.iter().map(move |&k| k + (c * ns) as u32))
        .collect();
    t.plans = (0..copies).flat_map(|_| plans.iter().copied()).collect();
    let nd = t.dirty.len();
    assert!(alloc_groups_len(nd) >= 4, "{nd} dirty sets");
    let base = 9;
    let mut oracle = earlier_releases(base);
    let g = release_oracle(&t.sets, &t.dirty, &t.plans, &mut oracle);
    let gpu = gpu_or_skip("pool_release_over_several_groups");
    let gpu = gpu.as_deref();
    let capacity = oracle.len() + 5;
    let (released, sizes) = release_round(gpu, &t, nd, base, capacity, "tiled");
    assert_eq!(released[..oracle.len()], oracle[..], "releases");
    assert_eq!(sizes.released.count as usize, oracle.len());
    assert_eq!(sizes.garbage_cp, 100 + g[0]);
    assert_eq!(sizes.garbage_w, 300 + g[2]);
    let (list, alloc, garbage) = cpu_stage(&t, base, &mut Vec::new());
    assert_eq!(list, oracle, "pool_alloc_stage's releases");
    assert_eq!([garbage.cp, garbage.k, garbage.w], g.map(|x| x as usize));
    let total: [u32; 4] = t.plans.iter().fold([0; 4], |a, p| {
        let s = plan_sizes(p);
        std::array::from_fn(|k| a[k] + s[k])
    });
    assert_eq!(alloc.len, total, "pool_alloc_stage's lengths");
}
