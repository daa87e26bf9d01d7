//! Parity of ACL's coalescing, set index and merge kernels (src/acl/coalesce.rs,
//! src/acl/merge_gpu.rs) with their CPU twins, on states of a real scene: the default swatch under
//! ACL, an `AclContact` run alongside it, taken at its first step (every contact is new: 7,560
//! pairs, 661 runs, 121 sets merged) and later (the settled table of step 24 with new pairs beside
//! its sets: see `later_step`).
//! Every output is discrete (boxes, flags, labels, hull codes, offsets, counters, the new sets'
//! cleared springs): all must be identical. A synthetic chain of overlapping sets checks the label-round budget and its flag.

#[path = "support/fixture.rs"]
mod fixture;

use fixture::{bytes, scene_sim};
use yarnsim::acl::coalesce::{
    coalesce_box, coalesce_heads, coalesce_overlap_write, coalesce_pairs, contact_coalesce,
    dirty_overlap_write, hull_code, merge_apply, merge_hull, merge_label, merge_uniform,
    moved_overlap_write, set_bin_count, set_bin_index, set_bin_write, set_merge, set_overlap_count,
    set_overlap_write, MergeScratch,
};
use yarnsim::acl::merge_gpu::{table_with_capacity, MergeCaps, MergeGpu, MergeVerdict, KERNELS};
use yarnsim::acl::rebuild::RebuildParams;
use yarnsim::acl::{AclContact, ContactSet, SetIndex, StictionSpring, SET_LIVE, SET_MOVED};
use yarnsim::gpu::testing::gpu_or_skip;
use yarnsim::gpu::Gpu;
use yarnsim::layout::{
    Capacity, KeyValue, MergeCounters, MergeRound, MergeUniform, SchedCounters, DIRTY_OVERLAP_MAX,
    MERGE_DIRTY_LIMIT,
};
use yarnsim::pipelines::{run_kernel, Buffers, Pipelines};
use yarnsim::scan::exclusive_scan;
use yarnsim::sort::radix_sort;

/// The inputs of one step's coalescing and merge: the table between steps and the step's
/// touching pairs.
struct Fixture {
    sets: Vec<ContactSet>,
    touching: Vec<[u32; 2]>,
    nq: u32,
    alpha: u32,
}

/// The swatch under ACL with an `AclContact` run beside it for `steps` steps: its set table then,
/// and the touching pairs its scheduler found at the last step.
fn acl_after(steps: usize) -> (Vec<ContactSet>, Vec<[u32; 2]>, u32, u32) {
    let over = ["contact.model=acl"];
    let mut sim = scene_sim("swatch", &over, 0);
    let params = fixture::scene_contact("swatch", &over);
    let r = sim.step_params().radius;
    let mut acl = AclContact::new(r, &params).unwrap();
    let mut force = vec![[0.0f32; 4]; sim.pos.len()];
    for _ in 0..steps {
        sim.step().unwrap();
        acl.step(&sim.topo, &sim.pos, &mut force).unwrap();
    }
    let nq = sim.topo.segments.len() as u32 * params.quadrature;
    (
        acl.sets().to_vec(),
        acl.scheduler().touching().to_vec(),
        nq,
        params.padding,
    )
}

/// The first step: no sets yet, and every contact of the swatch is new (the scheduler's pairs).
fn first_step() -> Fixture {
    let (_, touching, nq, alpha) = acl_after(1);
    Fixture {
        sets: Vec::new(),
        touching,
        nq,
        alpha,
    }
}

/// A later state: the settled table after 24 steps (540 sets; the swatch's scheduler finds no new
/// pair after its first step, so a real later step has nothing to coalesce) with the first step's
/// pairs coalesced on top: every new run lies in or beside a settled set, so the merge passes
/// join new (moved) sets with settled ones.
fn later_step() -> Fixture {
    let (sets, later, _, _) = acl_after(24);
    assert!(later.is_empty());
    Fixture {
        sets,
        ..first_step()
    }
}

/// The scheduler's counters as coalescing reads them: `touching` pairs of `capacity`.
fn sched_counters(touching: usize, capacity: usize) -> SchedCounters {
    SchedCounters {
        touching: Capacity {
            count: touching as u32,
            capacity: capacity as u32,
            ..Default::default()
        },
        ..Default::default()
    }
}

fn counters(n_sets: usize, set_cap: usize, touching: usize) -> MergeCounters {
    MergeCounters {
        sets: Capacity {
            count: n_sets as u32,
            capacity: set_cap as u32,
            ..Default::default()
        },
        touching: Capacity {
            count: touching as u32,
            capacity: touching as u32,
            ..Default::default()
        },
        ..Default::default()
    }
}

/// Springs `from..to` as a table of that many slots holds them before coalescing: the existing
/// sets' (below `4 · sets`) and, beyond, what the buffer's slots still hold from sets an earlier
/// compaction removed. Every one active and distinct, so a spring left uncleared, or cleared that
/// should have stayed, shows.
fn springs_before(sets: usize, from: usize, to: usize) -> Vec<StictionSpring> {
    (from..to)
        .map(|e| StictionSpring {
            i: e as u32,
            j: e as u32 + 7,
            flags: yarnsim::acl::SPRING_ACTIVE,
            _pad: if e < 4 * sets { 0 } else { 0xdead },
            rest: [e as f32, -(e as f32), 0.5, 0.0],
        })
        .collect()
}

fn cast<T: bytemuck::Pod>(v: &[u8]) -> Vec<T> {
    // (An empty read's buffer may have no alignment to cast from.)
    if v.is_empty() {
        return Vec::new();
    }
    bytemuck::cast_slice(v).to_vec()
}

fn counters_of(out: &std::collections::BTreeMap<String, Vec<u8>>) -> MergeCounters {
    bytemuck::pod_read_unaligned(&out["merge_counters"])
}

/// The CPU path on a fixture: `coalesce_pairs` then `set_merge`; the table, the index, the
/// merge count and the springs (the existing sets' from [`springs_before`]).
fn cpu_path(f: &Fixture) -> (Vec<ContactSet>, SetIndex, u64, Vec<StictionSpring>) {
    let mut sets = f.sets.clone();
    let n0 = sets.len();
    let mut springs = springs_before(n0, 0, 4 * n0);
    let mut sc = MergeScratch::default();
    coalesce_pairs(&f.touching, f.alpha, f.nq, &mut sets, &mut springs, &mut sc);
    assert_eq!(springs.len(), 4 * sets.len());
    // The existing sets keep their springs; the new ones have 4 inactive springs each.
    assert_eq!(springs[..4 * n0], springs_before(n0, 0, 4 * n0)[..]);
    assert!(springs[4 * n0..]
        .iter()
        .all(|s| *s == StictionSpring::default()));
    let mut index = SetIndex::default();
    let (merged, _) = set_merge(&mut sets, &mut index, f.nq, &mut sc).unwrap();
    (sets, index, merged, springs)
}

/// Every kernel of one step against its twin, pass by pass, each kernel run on the twin's input
/// (so a difference is pinned to one kernel). Returns the number of sets merged in the first pass.
fn kernels_match_twins(gpu: &Gpu, f: &Fixture, label: &str) -> u32 {
    let u = merge_uniform(f.nq, f.alpha);
    let n0 = f.sets.len();
    let t = f.touching.len();
    assert!(t > 0, "{label}: no touching pairs");
    // Spare slots beyond what the runs can take, so the kernels' bounds are exercised.
    let cap = n0 + t + 37;
    let mut sets = table_with_capacity(&f.sets, cap);
    let mut hull = vec![[7u32; 4]; cap];
    let mut c = counters(n0, cap, t);
    let ub = bytes(std::slice::from_ref(&u));

    // coalesce_heads, which takes the touching count from the scheduler's counters and moves it
    // into the merge chain's (whatever that word held before).
    // Over a grid past the pairs by several workgroups, as the step's (the touching capacity's,
    // grown past the count): those return at once, and leave their words as they were.
    let sched = sched_counters(t, t);
    c.touching.count = 9_999;
    c.touching.capacity = t as u32 + 1_000;
    let mut runs = vec![9u32; t + 1_001];
    let (c_in, hull_in) = (c, hull.clone());
    let mut groups = vec![9u32; (t + 1_001).div_ceil(256)];
    coalesce_heads(
        &u,
        &f.touching,
        &mut runs,
        &mut hull,
        &mut c,
        &mut groups,
        &sched,
    );
    assert_eq!(
        c.touching.count as usize, t,
        "{label}: the touching count moved"
    );
    let out = run_kernel(
        gpu,
        "coalesce_heads",
        &[
            ("acl_merge", ub),
            ("touching", bytes(&f.touching)),
            ("run_offsets", bytes(&vec![9u32; t + 1_001])),
            ("set_hull", bytes(&hull_in)),
            ("merge_counters", bytes(&[c_in])),
            ("scan_groups", bytes(&vec![9u32; groups.len()])),
            ("sched_counters", bytes(&[sched])),
        ],
        t as u32 + 1_001,
    )
    .unwrap();
    assert_eq!(cast::<u32>(&out["run_offsets"]), runs, "{label}: run heads");
    assert!(runs[t..].iter().all(|&v| v == 9), "{label}: heads past T");
    let live = t.div_ceil(256);
    let gpu_groups = cast::<u32>(&out["scan_groups"]);
    check_groups(
        &groups[..live],
        &runs[..t],
        &gpu_groups[..live],
        &format!("{label}: coalesce_heads"),
    );
    assert!(
        groups.len() - live > 2 && groups[live..] == gpu_groups[live..],
        "{label}: coalesce_heads' groups past T"
    );
    assert!(groups[live..].iter().all(|&v| v == 9));
    let runs = runs[..t].to_vec();
    assert_eq!(
        cast::<[u32; 4]>(&out["set_hull"]),
        hull,
        "{label}: cleared hulls"
    );
    assert_eq!(counters_of(&out), c, "{label}: coalesce_heads counters");
    let heads: u32 = runs.iter().sum();

    // contact_coalesce: each pair's run from the head flags and coalesce_heads' group sums (no
    // scan between); over a grid past the count by several workgroups (the same capacity).
    let (sets_in, hull_in, c_in) = (sets.clone(), hull.clone(), c);
    contact_coalesce(
        &u,
        &f.touching,
        &runs,
        &groups,
        &mut sets,
        &mut hull,
        &mut c,
    );
    let out = run_kernel(
        gpu,
        "contact_coalesce",
        &[
            ("acl_merge", ub),
            ("touching", bytes(&f.touching)),
            ("run_offsets", bytes(&runs)),
            ("scan_groups", bytes(&groups)),
            ("sets", bytes(&sets_in)),
            ("set_hull", bytes(&hull_in)),
            ("merge_counters", bytes(&[c_in])),
        ],
        t as u32 + 1_000,
    )
    .unwrap();
    assert_eq!(cast::<ContactSet>(&out["sets"]), sets, "{label}: new sets");
    assert_eq!(
        cast::<[u32; 4]>(&out["set_hull"]),
        hull,
        "{label}: run hulls"
    );
    assert_eq!(counters_of(&out), c, "{label}: contact_coalesce counters");
    assert_eq!(c.sets.count as usize, n0 + heads as usize);
    // By definition, from a plain exclusive scan of the flags: the head of run r writes slot
    // n0 + r with its own padded box, and the sets before n0 stay.
    let mut first = runs.clone();
    first.push(0);
    exclusive_scan(&mut first, &mut Vec::new());
    assert_eq!(first[t], heads);
    assert!(t > 256, "{label}: {t} pairs, one group of the prefix");
    for (k, &[i, j]) in f.touching.iter().enumerate() {
        if runs[k] == 1 {
            let bx = yarnsim::acl::padded_box(i, i, j, j, f.alpha, f.nq);
            assert_eq!(
                sets[n0 + first[k] as usize].bx,
                bx,
                "{label}: run of pair {k}"
            );
        }
    }
    assert_eq!(sets[..n0], f.sets[..], "{label}: the sets before");

    // coalesce_box, on a springs buffer of the table's capacity (stale springs beyond the
    // existing sets').
    let mut springs = springs_before(n0, 0, 4 * cap);
    let (sets_in, c_in, springs_in) = (sets.clone(), c, springs.clone());
    coalesce_box(&u, &hull, &mut sets, &mut c, &mut springs);
    let out = run_kernel(
        gpu,
        "coalesce_box",
        &[
            ("acl_merge", ub),
            ("set_hull", bytes(&hull)),
            ("sets", bytes(&sets_in)),
            ("merge_counters", bytes(&[c_in])),
            ("springs", bytes(&springs_in)),
        ],
        cap as u32,
    )
    .unwrap();
    assert_eq!(cast::<ContactSet>(&out["sets"]), sets, "{label}: run boxes");
    assert_eq!(
        cast::<StictionSpring>(&out["springs"]),
        springs,
        "{label}: new sets' springs"
    );
    assert_eq!(counters_of(&out), c, "{label}: coalesce_box counters");
    let used = 4 * c.sets.count as usize;
    assert!(used > 4 * n0, "{label}: no new set");
    // Cleared exactly the new sets' slots: the stale springs past them stay.
    assert_eq!(springs[used..], springs_in[used..]);
    // The twins' coalescing is the CPU path's.
    {
        let mut cpu = f.sets.clone();
        let mut cpu_springs = springs_before(n0, 0, 4 * n0);
        coalesce_pairs(
            &f.touching,
            f.alpha,
            f.nq,
            &mut cpu,
            &mut cpu_springs,
            &mut MergeScratch::default(),
        );
        assert_eq!(
            &sets[..c.sets.count as usize],
            &cpu[..],
            "{label}: coalesce_pairs"
        );
        assert_eq!(
            springs[..used],
            cpu_springs[..],
            "{label}: coalesce_pairs springs"
        );
    }

    // The set index: set_bin_count → scan → set_bin_write → stable sort → set_bin_index.
    let mut bins = vec![0u32; cap + 1];
    let c_in = MergeCounters {
        label_rounds: 5,
        moved: 3,
        ..c
    };
    c = c_in;
    let mut groups = vec![9u32; (cap + 1).div_ceil(256)];
    set_bin_count(&u, &sets, &mut bins, &mut c, &mut groups);
    let out = run_kernel(
        gpu,
        "set_bin_count",
        &[
            ("acl_merge", ub),
            ("sets", bytes(&sets)),
            ("bin_offsets", bytes(&vec![9u32; cap + 1])),
            ("merge_counters", bytes(&[c_in])),
            ("scan_groups", bytes(&vec![9u32; groups.len()])),
        ],
        cap as u32 + 1,
    )
    .unwrap();
    assert_eq!(
        cast::<u32>(&out["bin_offsets"]),
        bins,
        "{label}: bin counts"
    );
    check_groups(
        &groups,
        &bins,
        &cast::<u32>(&out["scan_groups"]),
        &format!("{label}: set_bin_count"),
    );
    assert_eq!(counters_of(&out), c, "{label}: set_bin_count counters");
    exclusive_scan(&mut bins, &mut Vec::new());
    let items = bins[cap] as usize;
    let icap = items + 100;
    c.index.capacity = icap as u32;
    let mut sort = vec![KeyValue::default(); icap];
    let c_in = c;
    set_bin_write(&u, &sets, &bins, &mut sort, &mut c);
    let out = run_kernel(
        gpu,
        "set_bin_write",
        &[
            ("acl_merge", ub),
            ("sets", bytes(&sets)),
            ("bin_offsets", bytes(&bins)),
            ("set_bin_sort", bytes(&vec![KeyValue::default(); icap])),
            ("merge_counters", bytes(&[c_in])),
        ],
        cap as u32,
    )
    .unwrap();
    assert_eq!(
        cast::<KeyValue>(&out["set_bin_sort"]),
        sort,
        "{label}: bin items"
    );
    assert_eq!(counters_of(&out), c, "{label}: set_bin_write counters");
    // The live items only (the slots past them are not written).
    radix_sort(
        &mut sort[..items],
        32 - u.num_bins.leading_zeros(),
        &mut Vec::new(),
        &mut Vec::new(),
        &mut Vec::new(),
    );
    let nb = u.num_bins as usize;
    let mut start = vec![0u32; nb + 1];
    let mut list = vec![0u32; icap];
    let c_in = c;
    set_bin_index(&u, &sort, &mut start, &mut list, &mut c);
    let out = run_kernel(
        gpu,
        "set_bin_index",
        &[
            ("acl_merge", ub),
            ("set_bin_sort", bytes(&sort)),
            ("set_bin_start", bytes(&vec![9u32; nb + 1])),
            ("set_bin_items", bytes(&vec![0u32; icap])),
            ("merge_counters", bytes(&[c_in])),
        ],
        (nb as u32 + 1).max(icap as u32),
    )
    .unwrap();
    assert_eq!(
        cast::<u32>(&out["set_bin_start"]),
        start,
        "{label}: bin starts"
    );
    assert_eq!(
        cast::<u32>(&out["set_bin_items"]),
        list,
        "{label}: bin lists"
    );
    // The chain builds SetIndex::build's index.
    let mut index = SetIndex::default();
    index.build(&sets[..c.sets.count as usize], f.nq);
    assert_eq!(
        index.start(),
        &start[..],
        "{label}: index starts vs SetIndex::build"
    );
    assert_eq!(
        index.items(),
        &list[..items],
        "{label}: index items vs SetIndex::build"
    );

    // set_overlap_count → scan → set_overlap_write.
    let mut eoff = vec![0u32; cap + 1];
    let c_in = c;
    let mut groups = vec![9u32; (cap + 1).div_ceil(256)];
    set_overlap_count(&u, &sets, &start, &list, &mut eoff, &mut c, &mut groups);
    let out = run_kernel(
        gpu,
        "set_overlap_count",
        &[
            ("acl_merge", ub),
            ("sets", bytes(&sets)),
            ("set_bin_start", bytes(&start)),
            ("set_bin_items", bytes(&list)),
            ("edge_offsets", bytes(&vec![9u32; cap + 1])),
            ("merge_counters", bytes(&[c_in])),
            ("scan_groups", bytes(&vec![9u32; groups.len()])),
        ],
        cap as u32 + 1,
    )
    .unwrap();
    assert_eq!(
        cast::<u32>(&out["edge_offsets"]),
        eoff,
        "{label}: edge counts"
    );
    check_groups(
        &groups,
        &eoff,
        &cast::<u32>(&out["scan_groups"]),
        &format!("{label}: set_overlap_count"),
    );
    assert_eq!(counters_of(&out), c, "{label}: set_overlap_count counters");
    assert_eq!(c.errors, 0);
    exclusive_scan(&mut eoff, &mut Vec::new());
    let ne = eoff[cap] as usize;
    assert!(ne > 0, "{label}: no overlapping sets to merge");
    c.edges.capacity = ne as u32;
    let mut edges = vec![[0u32; 2]; ne];
    let mut labels = vec![u32::MAX; 2 * cap];
    let (labels_in, hull_in, c_in) = (labels.clone(), hull.clone(), c);
    set_overlap_write(
        &u,
        &sets,
        &start,
        &list,
        &eoff,
        &mut edges,
        &mut labels,
        &mut hull,
        &mut c,
    );
    let out = run_kernel(
        gpu,
        "set_overlap_write",
        &[
            ("acl_merge", ub),
            ("sets", bytes(&sets)),
            ("set_bin_start", bytes(&start)),
            ("set_bin_items", bytes(&list)),
            ("edge_offsets", bytes(&eoff)),
            ("edges", bytes(&vec![[9u32; 2]; ne])),
            ("labels", bytes(&labels_in)),
            ("set_hull", bytes(&hull_in)),
            ("merge_counters", bytes(&[c_in])),
        ],
        cap as u32,
    )
    .unwrap();
    assert_eq!(cast::<[u32; 2]>(&out["edges"]), edges, "{label}: edges");
    assert_eq!(
        cast::<u32>(&out["labels"]),
        labels,
        "{label}: initial labels"
    );
    assert_eq!(
        cast::<[u32; 4]>(&out["set_hull"]),
        hull,
        "{label}: cleared hulls"
    );
    assert_eq!(counters_of(&out), c, "{label}: set_overlap_write counters");

    // merge_label, round by round, until a round changes nothing.
    let mut rounds = 0u32;
    loop {
        let mr = MergeRound {
            round: rounds,
            ..Default::default()
        };
        let (labels_in, c_in) = (labels.clone(), c);
        merge_label(&u, &mr, &edges, &mut labels, &mut c);
        let out = run_kernel(
            gpu,
            "merge_label",
            &[
                ("acl_merge", ub),
                ("merge_round", bytes(&[mr])),
                ("edges", bytes(&edges)),
                ("labels", bytes(&labels_in)),
                ("merge_counters", bytes(&[c_in])),
            ],
            (cap + ne) as u32,
        )
        .unwrap();
        assert_eq!(
            cast::<u32>(&out["labels"]),
            labels,
            "{label}: round {rounds}"
        );
        assert_eq!(counters_of(&out), c, "{label}: round {rounds} counters");
        rounds += 1;
        if c.label_rounds < rounds {
            break;
        }
        assert!(rounds < 64, "{label}: labels do not converge");
    }
    assert!(rounds >= 2, "{label}: {rounds} rounds");

    // merge_hull (as before a moved-list search: it clears the pass's pair count, and empties the
    // moved list an earlier pass left), merge_apply.
    let mr = MergeRound {
        round: rounds,
        ..Default::default()
    };
    let mr_clear = MergeRound {
        clear_edges: 1,
        ..mr
    };
    let pairs = c.edges.count;
    c.moved = 3;
    let (sets_in, hull_in, c_in) = (sets.clone(), hull.clone(), c);
    merge_hull(&u, &mr_clear, &labels, &mut sets, &mut hull, &mut c);
    assert_eq!(
        (c.moved, c.edges.count),
        (0, 0),
        "{label}: merge_hull's clears"
    );
    let mut c_kept = c_in;
    merge_hull(
        &u,
        &mr,
        &labels,
        &mut sets_in.clone(),
        &mut hull_in.clone(),
        &mut c_kept,
    );
    assert_eq!(
        c_kept.edges.count, pairs,
        "{label}: pair count kept without clear_edges"
    );
    let out = run_kernel(
        gpu,
        "merge_hull",
        &[
            ("acl_merge", ub),
            ("merge_round", bytes(&[mr_clear])),
            ("labels", bytes(&labels)),
            ("sets", bytes(&sets_in)),
            ("set_hull", bytes(&hull_in)),
            ("merge_counters", bytes(&[c_in])),
        ],
        cap as u32,
    )
    .unwrap();
    assert_eq!(
        cast::<ContactSet>(&out["sets"]),
        sets,
        "{label}: moved flags cleared"
    );
    assert_eq!(
        cast::<[u32; 4]>(&out["set_hull"]),
        hull,
        "{label}: component hulls"
    );
    assert_eq!(counters_of(&out), c, "{label}: merge_hull counters");
    assert_eq!(c.more_rounds, 0);
    let (sets_in, c_in) = (sets.clone(), c);
    let mut moved = vec![u32::MAX; cap];
    merge_apply(&u, &mr, &labels, &hull, &mut sets, &mut c, &mut moved);
    let out = run_kernel(
        gpu,
        "merge_apply",
        &[
            ("acl_merge", ub),
            ("merge_round", bytes(&[mr])),
            ("labels", bytes(&labels)),
            ("set_hull", bytes(&hull)),
            ("sets", bytes(&sets_in)),
            ("merge_counters", bytes(&[c_in])),
            ("moved_sets", bytes(&vec![u32::MAX; cap])),
        ],
        cap as u32,
    )
    .unwrap();
    assert_eq!(
        cast::<ContactSet>(&out["sets"]),
        sets,
        "{label}: merged table"
    );
    assert_eq!(counters_of(&out), c, "{label}: merge_apply counters");
    assert!(c.merged > 0, "{label}: nothing merged");
    // The moved list: the same roots (the kernel's order varies), exactly the moved sets.
    let nm = c.moved as usize;
    let mut gpu_moved = cast::<u32>(&out["moved_sets"]);
    assert!(
        gpu_moved[nm..].iter().all(|&k| k == u32::MAX),
        "{label}: listed past the count"
    );
    gpu_moved.truncate(nm);
    gpu_moved.sort_unstable();
    assert_eq!(gpu_moved, moved[..nm], "{label}: moved list (sorted)");
    let is_moved = |s: &ContactSet| s.flags & (SET_LIVE | SET_MOVED) == SET_LIVE | SET_MOVED;
    let listed: Vec<u32> = (0..cap as u32)
        .filter(|&k| is_moved(&sets[k as usize]))
        .collect();
    assert_eq!(moved[..nm], listed[..], "{label}: the moved sets");
    // The next pass searching that list lists the index pass's pairs.
    if nm > 0 {
        let table = &sets[..c.sets.count as usize];
        let room = 4 * table.len();
        let list = List::Moved(&moved[..nm]);
        let (mut e, cm) = list_pass_matches_twins(gpu, table, list, cap, room, label);
        assert_eq!(
            (cm.errors, cm.edges.overflow),
            (0, 0),
            "{label}: moved pass"
        );
        e.sort_unstable();
        assert_eq!(
            e,
            index_pass_pairs(&u, table, cap),
            "{label}: moved pass pairs"
        );
        println!("{label}: the moved pass lists {} pairs", e.len());
    }
    println!(
        "{label}: {n0} sets + {heads} new from {t} pairs; index {items} items; {ne} edges; \
         {rounds} label rounds; {} merged, {} moved",
        c.merged, c.moved
    );
    c.merged
}

/// The first step: every contact of the swatch is new.
/// A grouped scan's producer: the twin's group sums (one per 256 of the words it wrote) are those
/// words' sums, and the GPU's `scan_groups` are the twin's.
fn check_groups(twin: &[u32], written: &[u32], gpu: &[u32], label: &str) {
    let sums: Vec<u32> = written
        .chunks(256)
        .map(|c| c.iter().fold(0u32, |a, &v| a.wrapping_add(v)))
        .collect();
    assert_eq!(twin, &sums[..], "{label}: twin group sums");
    assert_eq!(gpu, twin, "{label}: GPU group sums");
}

#[test]
fn first_step_kernels_match_twins() {
    let Some(gpu) = gpu_or_skip("first_step_kernels_match_twins") else {
        return;
    };
    let f = first_step();
    let merged = kernels_match_twins(&gpu, &f, "step 0");
    assert!(merged > 10, "only {merged} merges at the first step");
}

/// A later state: a settled table plus new pairs beside its sets (see `later_step`).
#[test]
fn later_step_kernels_match_twins() {
    let Some(gpu) = gpu_or_skip("later_step_kernels_match_twins") else {
        return;
    };
    let f = later_step();
    assert!(!f.sets.is_empty());
    kernels_match_twins(&gpu, &f, "step 24");
}

/// The whole chain recorded by `MergeGpu` (one submission) on a table and touching pairs: the
/// table, its springs, the counters, and the index as read back.
struct GpuOut {
    sets: Vec<ContactSet>,
    springs: Vec<StictionSpring>,
    counters: MergeCounters,
    start: Vec<u32>,
    items: Vec<u32>,
}

fn run_chain(
    gpu: &Gpu,
    u: &MergeUniform,
    sets: &[ContactSet],
    touching: &[[u32; 2]],
    caps: MergeCaps,
) -> (MergeGpu, GpuOut) {
    run_chain_of(gpu, u, sets, touching, None, caps)
}

/// [`run_chain`] with coalescing (`dirty` `None`), or the passes alone after a rebuild round whose
/// dirty list is `dirty` (`MergeGpu::new_passes`).
fn run_chain_of(
    gpu: &Gpu,
    u: &MergeUniform,
    sets: &[ContactSet],
    touching: &[[u32; 2]],
    dirty: Option<&[u32]>,
    caps: MergeCaps,
) -> (MergeGpu, GpuOut) {
    let pipelines = Pipelines::only(&gpu.device, KERNELS).unwrap();
    let mut buffers = Buffers::default();
    let (d, q) = (&gpu.device, &gpu.queue);
    let mut tb = touching.to_vec();
    tb.resize(caps.touching as usize, [0; 2]);
    buffers.upload(d, q, "touching", bytes(&tb), false);
    let table = table_with_capacity(sets, caps.sets as usize);
    buffers.upload(d, q, "sets", bytes(&table), false);
    let springs = springs_before(sets.len(), 0, 4 * caps.sets as usize);
    buffers.upload(d, q, "springs", bytes(&springs), false);
    buffers.upload(
        d,
        q,
        "merge_counters",
        bytes(&[MergeCounters::default()]),
        false,
    );
    // Coalescing's touching count is the scheduler's (the merge chain's own word starts at 0).
    let sched = sched_counters(touching.len(), caps.touching as usize);
    buffers.upload(d, q, "sched_counters", bytes(&[sched]), false);
    let chain = match dirty {
        None => MergeGpu::new(d, q, &pipelines, &mut buffers, u, caps).unwrap(),
        Some(list) => {
            buffers.upload(d, q, "dirty", bytes(list), false);
            let rp = round_uniform(list.len());
            buffers.upload(d, q, "rebuild", bytes(&[rp]), true);
            MergeGpu::new_passes(d, q, &pipelines, &mut buffers, u, caps).unwrap()
        }
    };
    let mut c = counters(sets.len(), 0, 0);
    chain.set_capacities(&mut c);
    q.write_buffer(buffers.get("merge_counters").unwrap(), 0, bytes(&[c]));
    let mut enc = d.create_command_encoder(&Default::default());
    {
        let mut pass = enc.begin_compute_pass(&Default::default());
        chain.record(&pipelines, &mut pass).unwrap();
    }
    q.submit([enc.finish()]);
    let read = |name: &str, len: usize| buffers.read(d, q, name, len as u64).unwrap();
    let counters: MergeCounters =
        bytemuck::pod_read_unaligned(&read("merge_counters", size_of::<MergeCounters>()));
    let n = counters.sets.count.min(caps.sets) as usize;
    let sets_out: Vec<ContactSet> = cast(&read("sets", n * size_of::<ContactSet>()));
    let springs_out: Vec<StictionSpring> =
        cast(&read("springs", 4 * n * size_of::<StictionSpring>()));
    let nb = u.num_bins as usize + 1;
    let start: Vec<u32> = cast(&read("set_bin_start", nb * 4));
    let items = counters.index.count.min(caps.index) as usize;
    let items: Vec<u32> = cast(&read("set_bin_items", items * 4));
    (
        chain,
        GpuOut {
            sets: sets_out,
            springs: springs_out,
            counters,
            start,
            items,
        },
    )
}

/// Runs the chain, rebuilding as the verdict asks, until it is done; returns the result and the
/// number of runs.
fn run_until_done(
    gpu: &Gpu,
    u: &MergeUniform,
    sets: &[ContactSet],
    touching: &[[u32; 2]],
    mut caps: MergeCaps,
) -> (GpuOut, MergeCaps, usize) {
    for run in 1..=12 {
        let (chain, out) = run_chain(gpu, u, sets, touching, caps);
        match chain.verdict(&out.counters) {
            MergeVerdict::Done => return (out, chain.caps, run),
            MergeVerdict::Rerun(c) => caps = c,
            MergeVerdict::ScanLimit => panic!("scan limit"),
        }
    }
    panic!("no verdict Done after 12 runs");
}

/// The chained GPU result (coalescing and every merge pass in one submission) equals the CPU
/// path's `coalesce_pairs` + `set_merge`: the table slot for slot, the springs of its slots (the
/// new sets' cleared by `coalesce_box` over the stale ones of the buffer), the merge count,
/// and the index of the final sets. Starts from small capacities and budgets, so the reruns the verdict asks for
/// (grown capacities, more rounds, more passes) are exercised too.
#[test]
fn chained_gpu_merge_equals_cpu_path() {
    let Some(gpu) = gpu_or_skip("chained_gpu_merge_equals_cpu_path") else {
        return;
    };
    for step in [0usize, 24] {
        let f = if step == 0 {
            first_step()
        } else {
            later_step()
        };
        let (cpu, index, merged, cpu_springs) = cpu_path(&f);
        let u = merge_uniform(f.nq, f.alpha);
        let caps = MergeCaps {
            sets: f.sets.len() as u32 + 8,
            touching: f.touching.len() as u32 + 5,
            edges: 16,
            index: 16,
            rounds: 1,
            passes: 1,
            indexed: 1,
        };
        let (out, caps, runs) = run_until_done(&gpu, &u, &f.sets, &f.touching, caps);
        assert_eq!(out.sets.len(), cpu.len(), "step {step}: table length");
        for (k, (g, c)) in out.sets.iter().zip(&cpu).enumerate() {
            assert_eq!(g, c, "step {step}: set {k}");
        }
        assert_eq!(out.springs, cpu_springs, "step {step}: springs");
        assert_eq!(out.counters.merged as u64, merged, "step {step}: merged");
        assert_eq!(out.start, index.start(), "step {step}: index starts");
        assert_eq!(out.items, index.items(), "step {step}: index items");
        assert!(cpu.iter().all(|s| s.flags & SET_MOVED == 0));
        println!(
            "step {step}: {} slots, {} live, {merged} merged; done after {runs} runs with {caps:?}",
            cpu.len(),
            cpu.iter().filter(|s| s.flags & SET_LIVE != 0).count()
        );
        if step == 0 {
            assert!(runs > 2, "the reruns were not exercised ({runs} runs)");
        }
    }
}

/// A chain of `n` overlapping sets (set at chain position p overlaps positions p ± 1 only), in
/// the slot order `order` (slot k holds position order[k]), all moved.
fn chain_sets(order: &[usize], nq: u32) -> Vec<ContactSet> {
    order
        .iter()
        .map(|&p| {
            let u0 = 4 * p as u32;
            ContactSet {
                bx: [u0, u0 + 4, u0 + 1000, u0 + 1004],
                flags: SET_LIVE | SET_MOVED,
                ..Default::default()
            }
        })
        .inspect(|s| assert!(s.bx[3] < nq))
        .collect()
}

/// The label rounds one merge pass needs on `sets` (the twins, run until a round changes nothing).
fn rounds_needed(sets: &[ContactSet], nq: u32) -> u32 {
    let u = merge_uniform(nq, 0);
    let n = sets.len();
    let mut index = SetIndex::default();
    index.build(sets, nq);
    let mut c = counters(n, n, 0);
    let mut eoff = vec![0u32; n + 1];
    let mut labels = vec![0u32; 2 * n];
    let mut hull = vec![[0u32; 4]; n];
    set_overlap_count(
        &u,
        sets,
        index.start(),
        index.items(),
        &mut eoff,
        &mut c,
        &mut [],
    );
    exclusive_scan(&mut eoff, &mut Vec::new());
    let mut edges = vec![[0u32; 2]; eoff[n] as usize];
    c.edges.capacity = eoff[n];
    set_overlap_write(
        &u,
        sets,
        index.start(),
        index.items(),
        &eoff,
        &mut edges,
        &mut labels,
        &mut hull,
        &mut c,
    );
    assert_eq!(
        edges.len(),
        n - 1,
        "a chain of {n} sets has {} pairs",
        n - 1
    );
    let mut r = 0;
    loop {
        let mr = MergeRound {
            round: r,
            ..Default::default()
        };
        merge_label(&u, &mr, &edges, &mut labels, &mut c);
        r += 1;
        if c.label_rounds < r {
            return r;
        }
    }
}

/// A long chain whose labels need many rounds: with fewer rounds recorded than the twins need, the
/// GPU raises `more_rounds` (and the twins, run with the same budget, agree); the verdict asks for
/// more rounds, and the rerun equals the CPU path (the whole chain merged into its smallest slot,
/// with the chain's hull).
#[test]
fn long_chain_raises_more_rounds_until_enough() {
    let Some(gpu) = gpu_or_skip("long_chain_raises_more_rounds_until_enough") else {
        return;
    };
    let n = 3000usize;
    let nq = 4 * n as u32 + 1100;
    // Slot order: a fixed shuffle of the chain positions (a sorted chain converges by doubling in
    // about log2(n) rounds; a shuffled one takes longer).
    let mut order: Vec<usize> = (0..n).collect();
    let mut x = 0x9E37_79B9u64;
    for i in (1..n).rev() {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        order.swap(i, (x % (i as u64 + 1)) as usize);
    }
    let sets = chain_sets(&order, nq);
    let need = rounds_needed(&sets, nq);
    let sorted_need = rounds_needed(&chain_sets(&(0..n).collect::<Vec<_>>(), nq), nq);
    println!("chain of {n}: {need} label rounds shuffled, {sorted_need} sorted");
    assert!(
        need >= 8,
        "only {need} rounds: the chain does not test the budget"
    );
    let u = merge_uniform(nq, 0);
    let caps = MergeCaps {
        sets: n as u32,
        touching: 1,
        edges: n as u32,
        index: 2 * n as u32,
        rounds: need - 1,
        passes: 2,
        indexed: 1,
    };
    // Too few rounds: flagged on the GPU, and by the twins with the same budget.
    let (chain, out) = run_chain(&gpu, &u, &sets, &[], caps);
    assert_eq!(out.counters.more_rounds, 1, "too few rounds not flagged");
    assert_eq!(
        chain.verdict(&out.counters),
        MergeVerdict::Rerun(MergeCaps {
            rounds: 2 * (need - 1),
            ..caps
        })
    );
    {
        let mut c = counters(n, n, 0);
        let mut index = SetIndex::default();
        let mut tw = sets.clone();
        index.build(&tw, nq);
        let mut eoff = vec![0u32; n + 1];
        let mut labels = vec![0u32; 2 * n];
        let mut hull = vec![[0u32; 4]; n];
        set_overlap_count(
            &u,
            &tw,
            index.start(),
            index.items(),
            &mut eoff,
            &mut c,
            &mut [],
        );
        exclusive_scan(&mut eoff, &mut Vec::new());
        let mut edges = vec![[0u32; 2]; n - 1];
        c.edges.capacity = n as u32 - 1;
        set_overlap_write(
            &u,
            &tw,
            index.start(),
            index.items(),
            &eoff,
            &mut edges,
            &mut labels,
            &mut hull,
            &mut c,
        );
        for r in 0..need - 1 {
            let mr = MergeRound {
                round: r,
                ..Default::default()
            };
            merge_label(&u, &mr, &edges, &mut labels, &mut c);
        }
        let mr = MergeRound {
            round: need - 1,
            ..Default::default()
        };
        merge_hull(&u, &mr, &labels, &mut tw, &mut hull, &mut c);
        assert_eq!(c.more_rounds, 1, "the twins do not flag too few rounds");
    }
    // Exactly enough rounds: no flag, and the CPU path's result.
    let (chain, out) = run_chain(
        &gpu,
        &u,
        &sets,
        &[],
        MergeCaps {
            rounds: need,
            ..caps
        },
    );
    assert_eq!(out.counters.more_rounds, 0);
    assert_eq!(chain.verdict(&out.counters), MergeVerdict::Done);
    let mut cpu = sets.clone();
    let mut index = SetIndex::default();
    let (merged, _) = set_merge(&mut cpu, &mut index, nq, &mut MergeScratch::default()).unwrap();
    assert_eq!(merged as usize, n - 1);
    assert_eq!(out.sets, cpu);
    // The smallest slot of the component holds the chain's hull.
    let root = 0;
    assert_eq!(cpu[root].bx, [0, 4 * n as u32, 1000, 4 * n as u32 + 1000]);
    assert_eq!(hull_code(&hull_code(&cpu[root].bx)), cpu[root].bx);
    assert_eq!(out.start, index.start());
    assert_eq!(out.items, index.items());
}

/// Overflows are flagged, not silent: a set table too small for the new sets, and an edge list
/// too small for one pass's pairs, each raise their flag and the verdict grows that capacity.
#[test]
fn overflows_are_flagged_and_grown() {
    let Some(gpu) = gpu_or_skip("overflows_are_flagged_and_grown") else {
        return;
    };
    let f = first_step();
    let u = merge_uniform(f.nq, f.alpha);
    let big = MergeCaps {
        sets: f.touching.len() as u32,
        touching: f.touching.len() as u32,
        edges: 1 << 16,
        index: 1 << 16,
        rounds: 16,
        passes: 8,
        indexed: 1,
    };
    let small_sets = MergeCaps { sets: 10, ..big };
    let (chain, out) = run_chain(&gpu, &u, &f.sets, &f.touching, small_sets);
    assert_eq!(out.counters.sets.overflow, 1);
    match chain.verdict(&out.counters) {
        MergeVerdict::Rerun(c) => assert!(c.sets > out.counters.sets.count),
        v => panic!("{v:?}"),
    }
    let small_edges = MergeCaps { edges: 3, ..big };
    let (chain, out) = run_chain(&gpu, &u, &f.sets, &f.touching, small_edges);
    assert_eq!(out.counters.edges.overflow, 1);
    match chain.verdict(&out.counters) {
        MergeVerdict::Rerun(c) => assert!(c.edges >= out.counters.edges.count),
        v => panic!("{v:?}"),
    }
}

/// A set whose overlap search would pass the loop bound (more than `scan_limit` sets share its
/// bin) is an error on both paths, never a silently shortened search: `set_merge` stops with
/// `MergeError::ScanLimit`, and `set_overlap_count` raises `MERGE_SCAN_LIMIT` as its twin does
/// (listing nothing for that set), which the verdict reports.
#[test]
fn scan_limit_is_an_error_on_both_paths() {
    use yarnsim::acl::coalesce::{MergeError, MERGE_SCAN_LIMIT_ITEMS};
    use yarnsim::layout::MERGE_SCAN_LIMIT;
    let Some(gpu) = gpu_or_skip("scan_limit_is_an_error_on_both_paths") else {
        return;
    };
    let n = MERGE_SCAN_LIMIT_ITEMS as usize + 10;
    let nq = n as u32 + 100;
    // Settled, pairwise disjoint sets all in bin 0, and one moved set among them.
    let mut sets: Vec<ContactSet> = (0..n as u32)
        .map(|k| ContactSet {
            bx: [0, 7, 8 + k, 8 + k],
            flags: SET_LIVE,
            ..Default::default()
        })
        .collect();
    sets.push(ContactSet {
        bx: [0, 2, 8, 12],
        flags: SET_LIVE | SET_MOVED,
        ..Default::default()
    });
    let m = sets.len();
    let err = set_merge(
        &mut sets.clone(),
        &mut SetIndex::default(),
        nq,
        &mut MergeScratch::default(),
    )
    .unwrap_err();
    assert_eq!(
        err,
        MergeError::ScanLimit {
            set: n as u32,
            limit: MERGE_SCAN_LIMIT_ITEMS
        }
    );
    let u = merge_uniform(nq, 0);
    let mut index = SetIndex::default();
    index.build(&sets, nq);
    let c0 = counters(m, m, 0);
    let mut c = c0;
    let mut eoff = vec![7u32; m + 1];
    set_overlap_count(
        &u,
        &sets,
        index.start(),
        index.items(),
        &mut eoff,
        &mut c,
        &mut [],
    );
    assert_eq!(c.errors, MERGE_SCAN_LIMIT);
    assert!(eoff.iter().all(|&e| e == 0));
    let out = run_kernel(
        &gpu,
        "set_overlap_count",
        &[
            ("acl_merge", bytes(&[u])),
            ("sets", bytes(&sets)),
            ("set_bin_start", bytes(index.start())),
            ("set_bin_items", bytes(index.items())),
            ("edge_offsets", bytes(&vec![7u32; m + 1])),
            ("merge_counters", bytes(&[c0])),
            ("scan_groups", bytes(&vec![7u32; (m + 1).div_ceil(256)])),
        ],
        m as u32 + 1,
    )
    .unwrap();
    assert_eq!(counters_of(&out), c);
    assert_eq!(cast::<u32>(&out["edge_offsets"]), eoff);
}

// ---------------------------------------------------------------------------------------------
// The first merge pass after a rebuild round, searching the round's dirty list (MergeCaps::indexed
// = 0) instead of the set index.

/// A rebuild round's outcome on the settled table of step 24 (540 sets, no two overlapping):
/// every 3rd live set is on the dirty list; every other one of those grew (moved) to take in the
/// box of the next slot's set and, every 4th, the old box of the moved set listed two before it
/// (so there are pairs of a moved and a settled set, and of two moved sets); the 2nd listed set
/// was deleted by its rebuild (an empty slot). Returns the table, the list, nq, α.
fn after_round() -> (Vec<ContactSet>, Vec<u32>, u32, u32) {
    let (mut sets, _, nq, alpha) = acl_after(24);
    for s in sets.iter_mut() {
        s.flags &= !SET_MOVED;
    }
    let old = sets.clone();
    let dirty: Vec<u32> = (0..sets.len() as u32)
        .filter(|&k| sets[k as usize].flags & SET_LIVE != 0)
        .step_by(3)
        .collect();
    let hull = |a: [u32; 4], b: [u32; 4]| {
        [
            a[0].min(b[0]),
            a[1].max(b[1]),
            a[2].min(b[2]),
            a[3].max(b[3]),
        ]
    };
    for (t, &k) in dirty.iter().enumerate() {
        let k = k as usize;
        if t == 1 {
            sets[k] = ContactSet::default();
        } else if t % 2 == 0 && k + 1 < sets.len() {
            let mut bx = hull(old[k].bx, old[k + 1].bx);
            if t % 4 == 2 {
                bx = hull(bx, old[dirty[t - 2] as usize].bx);
            }
            sets[k].bx = bx;
            sets[k].flags |= SET_MOVED;
        }
    }
    (sets, dirty, nq, alpha)
}

/// The `rebuild` uniform of a round with `nd` dirty sets (only its count is read here).
fn round_uniform(nd: usize) -> RebuildParams {
    RebuildParams {
        num_dirty: nd as u32,
        ..Default::default()
    }
}

/// The index pass's pairs on a table (the twins `SetIndex::build`, `set_overlap_count`, scan,
/// `set_overlap_write`), sorted.
fn index_pass_pairs(u: &MergeUniform, sets: &[ContactSet], cap: usize) -> Vec<[u32; 2]> {
    let mut index = SetIndex::default();
    index.build(sets, u.nq);
    let table = table_with_capacity(sets, cap);
    let mut c = counters(sets.len(), cap, 0);
    let mut eoff = vec![0u32; cap + 1];
    set_overlap_count(
        u,
        &table,
        index.start(),
        index.items(),
        &mut eoff,
        &mut c,
        &mut [],
    );
    assert_eq!(c.errors, 0);
    exclusive_scan(&mut eoff, &mut Vec::new());
    let ne = eoff[cap] as usize;
    c.edges.capacity = ne as u32;
    let mut edges = vec![[0u32; 2]; ne];
    let (mut labels, mut hull) = (vec![0u32; 2 * cap], vec![[0u32; 4]; cap]);
    set_overlap_write(
        u,
        &table,
        index.start(),
        index.items(),
        &eoff,
        &mut edges,
        &mut labels,
        &mut hull,
        &mut c,
    );
    edges.sort_unstable();
    edges
}

/// Which short list a pass without the set index searches.
#[derive(Clone, Copy)]
enum List<'a> {
    /// `dirty_overlap_write`: a rebuild round's dirty list.
    Dirty(&'a [u32]),
    /// `coalesce_overlap_write`: the sets coalescing made, from slot `coalesce_base` on.
    Coalesced { base: u32 },
    /// `moved_overlap_write`: the roots the pass before grew (`moved_sets[..moved]`).
    Moved(&'a [u32]),
}

/// The list search's twin on `table` with counters `c` (whose capacities and counts are set).
fn list_twin(
    list: List,
    table: &[ContactSet],
    edges: &mut [[u32; 2]],
    labels: &mut [u32],
    hull: &mut [[u32; 4]],
    c: &mut MergeCounters,
) {
    match list {
        List::Dirty(dirty) => {
            let rp = round_uniform(dirty.len());
            dirty_overlap_write(&rp, table, dirty, edges, labels, hull, c)
        }
        List::Coalesced { base } => {
            c.coalesce_base = base;
            coalesce_overlap_write(table, edges, labels, hull, c)
        }
        List::Moved(moved) => {
            c.moved = moved.len() as u32;
            moved_overlap_write(table, moved, edges, labels, hull, c)
        }
    }
}

/// A list search (`dirty_overlap_write` or `coalesce_overlap_write`) on the GPU and its twin, on
/// `sets` in a table of `cap` slots, with room for `room` pairs: labels, hulls and counters (the
/// pairs found, overflow, errors) identical, and the pairs written the same list once sorted (the
/// kernel appends in whatever order its threads take the slots). Returns the twin's pairs (in its
/// order) and counters.
fn list_pass_matches_twins(
    gpu: &Gpu,
    sets: &[ContactSet],
    list: List,
    cap: usize,
    room: usize,
    label: &str,
) -> (Vec<[u32; 2]>, MergeCounters) {
    let table = table_with_capacity(sets, cap);
    let mut c = counters(sets.len(), cap, 0);
    c.edges.capacity = room as u32;
    match list {
        List::Coalesced { base } => c.coalesce_base = base,
        List::Moved(moved) => c.moved = moved.len() as u32,
        List::Dirty(_) => c.moved = 3,
    }
    // What an earlier pass of the step leaves: the pass starts its own.
    c.label_rounds = 5;
    let mut edges = vec![[u32::MAX; 2]; room.max(1)];
    let mut labels = vec![u32::MAX; 2 * cap];
    let mut hull = vec![[7u32; 4]; cap];
    let (edges_in, labels_in, hull_in, c_in) = (edges.clone(), labels.clone(), hull.clone(), c);
    list_twin(list, &table, &mut edges, &mut labels, &mut hull, &mut c);
    let c_in = [c_in];
    let common = [
        ("sets", bytes(&table)),
        ("edges", bytes(&edges_in)),
        ("labels", bytes(&labels_in)),
        ("set_hull", bytes(&hull_in)),
        ("merge_counters", bytes(&c_in)),
    ];
    let out = match list {
        List::Dirty(dirty) => {
            let rp = [round_uniform(dirty.len())];
            let mut inputs = vec![("rebuild", bytes(&rp)), ("dirty", bytes(dirty))];
            inputs.extend(common);
            run_kernel(gpu, "dirty_overlap_write", &inputs, cap as u32)
        }
        List::Coalesced { .. } => run_kernel(gpu, "coalesce_overlap_write", &common, cap as u32),
        List::Moved(moved) => {
            let mut inputs = vec![("moved_sets", bytes(moved))];
            inputs.extend(common);
            run_kernel(gpu, "moved_overlap_write", &inputs, cap as u32)
        }
    }
    .unwrap();
    assert_eq!(counters_of(&out), c, "{label}: counters");
    assert_eq!(
        c.label_rounds, 0,
        "{label}: the pass's label rounds not started"
    );
    assert_eq!(
        c.moved, c_in[0].moved,
        "{label}: the moved list's length changed"
    );
    assert_eq!(cast::<u32>(&out["labels"]), labels, "{label}: labels");
    assert_eq!(cast::<[u32; 4]>(&out["set_hull"]), hull, "{label}: hulls");
    let written = (c.edges.count as usize).min(room);
    let mut gpu_edges: Vec<[u32; 2]> = cast::<[u32; 2]>(&out["edges"]);
    assert!(
        gpu_edges[written..].iter().all(|e| *e == [u32::MAX; 2]),
        "{label}: written past the pairs"
    );
    gpu_edges.truncate(written);
    gpu_edges.sort_unstable();
    if c.edges.overflow == 0 {
        let mut twin = edges[..written].to_vec();
        twin.sort_unstable();
        assert_eq!(gpu_edges, twin, "{label}: pairs (sorted)");
    } else {
        // Which pairs got the slots depends on the threads' order: distinct pairs, all found.
        let mut all = vec![[0u32; 2]; c.edges.count as usize];
        let mut call = MergeCounters {
            edges: Capacity {
                capacity: c.edges.count,
                ..Default::default()
            },
            ..counters(sets.len(), cap, 0)
        };
        let (mut l, mut h) = (labels.clone(), hull.clone());
        list_twin(list, &table, &mut all, &mut l, &mut h, &mut call);
        all.sort_unstable();
        gpu_edges.dedup();
        assert_eq!(gpu_edges.len(), written, "{label}: a pair written twice");
        assert!(
            gpu_edges.iter().all(|e| all.binary_search(e).is_ok()),
            "{label}: a pair the search does not find"
        );
    }
    edges.truncate(written);
    (edges, c)
}

/// [`list_pass_matches_twins`] on a rebuild round's dirty list.
fn dirty_pass_matches_twins(
    gpu: &Gpu,
    sets: &[ContactSet],
    dirty: &[u32],
    cap: usize,
    room: usize,
    label: &str,
) -> (Vec<[u32; 2]>, MergeCounters) {
    list_pass_matches_twins(gpu, sets, List::Dirty(dirty), cap, room, label)
}

/// The dirty-list search lists exactly the index pass's pairs after a round (both kinds: a moved
/// set with a settled one, two moved sets once), kernels and twins identical; a moved set missing
/// from the list, or a list longer than DIRTY_OVERLAP_MAX, raises MERGE_DIRTY_LIMIT and lists
/// nothing on both.
#[test]
fn dirty_overlap_kernels_match_twins_and_the_index_pass() {
    let Some(gpu) = gpu_or_skip("dirty_overlap_kernels_match_twins_and_the_index_pass") else {
        return;
    };
    let (sets, dirty, nq, alpha) = after_round();
    let u = merge_uniform(nq, alpha);
    let cap = sets.len() + 17;
    let (mut edges, c) = dirty_pass_matches_twins(&gpu, &sets, &dirty, cap, 400, "round");
    assert_eq!((c.errors, c.edges.overflow), (0, 0));
    let moved = |k: u32| sets[k as usize].flags & SET_MOVED != 0;
    let both = edges.iter().filter(|e| moved(e[0]) && moved(e[1])).count();
    let one = edges.len() - both;
    println!(
        "{} sets, {} dirty, {} pairs ({both} of two moved sets)",
        sets.len(),
        dirty.len(),
        edges.len()
    );
    assert!(
        both > 0 && one > 0,
        "{both} pairs of two moved sets, {one} of one"
    );
    assert!(
        edges.iter().all(|e| moved(e[0])),
        "a pair's first set is moved"
    );
    assert!(edges.iter().all(|e| !moved(e[1]) || e[0] < e[1]));
    edges.sort_unstable();
    assert_eq!(
        edges,
        index_pass_pairs(&u, &sets, cap),
        "the index pass's pairs"
    );

    // Room for fewer pairs than found: overflow, and the count says how many were found.
    let (_, c) = dirty_pass_matches_twins(&gpu, &sets, &dirty, cap, 40, "overflow");
    assert_eq!(c.edges.overflow, 1);
    assert_eq!(c.edges.count as usize, edges.len());
    // A moved set missing from the list: flagged, nothing listed for it.
    let missing = *dirty.iter().find(|&&k| moved(k)).unwrap();
    let short: Vec<u32> = dirty.iter().copied().filter(|&k| k != missing).collect();
    let (_, c) = dirty_pass_matches_twins(&gpu, &sets, &short, cap, 400, "missing");
    assert_eq!(c.errors, MERGE_DIRTY_LIMIT, "a moved set off the list");
    // A list longer than the search's bound.
    let long: Vec<u32> = (0..DIRTY_OVERLAP_MAX + 1).map(|k| k % 500).collect();
    let (e, c) = dirty_pass_matches_twins(&gpu, &sets, &long, cap, 400, "long");
    assert_eq!(c.errors, MERGE_DIRTY_LIMIT, "a list over the bound");
    assert!(e.is_empty());
}

/// The merge passes after a round (`MergeGpu::new_passes`, run until the verdict is done) end in
/// the CPU path's table whether the first pass searches the dirty list or the index; with a moved
/// set missing from the list the verdict asks for the index, and the rerun gives the same table.
#[test]
fn passes_without_the_index_equal_the_cpu_merge() {
    let Some(gpu) = gpu_or_skip("passes_without_the_index_equal_the_cpu_merge") else {
        return;
    };
    let (sets, dirty, nq, alpha) = after_round();
    let u = merge_uniform(nq, alpha);
    let mut cpu = sets.clone();
    let (merged, _) = set_merge(
        &mut cpu,
        &mut SetIndex::default(),
        nq,
        &mut MergeScratch::default(),
    )
    .unwrap();
    assert!(merged > 0);
    let missing = *dirty
        .iter()
        .find(|&&k| sets[k as usize].flags & SET_MOVED != 0)
        .unwrap();
    let short: Vec<u32> = dirty.iter().copied().filter(|&k| k != missing).collect();
    for (list, indexed, label) in [
        (&dirty, 0, "dirty list"),
        (&dirty, 1, "index"),
        (&short, 0, "moved set off the list"),
    ] {
        let mut caps = MergeCaps {
            sets: sets.len() as u32 + 8,
            touching: 16,
            edges: 16,
            index: 16,
            rounds: 1,
            passes: 1,
            indexed,
        };
        let mut runs = Vec::new();
        let out = loop {
            assert!(runs.len() < 12, "{label}: no verdict Done after 12 runs");
            let (chain, out) = run_chain_of(&gpu, &u, &sets, &[], Some(list), caps);
            runs.push(chain.caps);
            match chain.verdict(&out.counters) {
                MergeVerdict::Done => break out,
                MergeVerdict::Rerun(c) => caps = c,
                MergeVerdict::ScanLimit => panic!("{label}: scan limit"),
            }
        };
        assert_eq!(out.sets, cpu, "{label}: the table");
        assert_eq!(out.counters.errors, 0);
        let first = runs[0];
        println!("{label}: {} runs, {runs:?}", runs.len());
        if label == "moved set off the list" {
            assert_eq!(first.indexed, 0);
            assert!(
                runs.iter().skip(1).any(|c| c.indexed == 1),
                "{label}: no rerun with the index"
            );
        } else {
            assert!(
                runs.iter().all(|c| c.indexed == indexed),
                "{label}: {runs:?}"
            );
        }
    }
}

// The first merge pass after coalescing, searching the sets coalescing made (MergeCaps::indexed
// = 0) instead of the set index.

/// A fixture's table after coalescing (the CPU path's `coalesce_pairs`) and the first new slot.
fn coalesced(f: &Fixture) -> (Vec<ContactSet>, u32) {
    let mut sets = f.sets.clone();
    let mut springs = springs_before(sets.len(), 0, 4 * sets.len());
    let mut sc = MergeScratch::default();
    coalesce_pairs(&f.touching, f.alpha, f.nq, &mut sets, &mut springs, &mut sc);
    (sets, f.sets.len() as u32)
}

/// The search of the new sets lists exactly the index pass's pairs after coalescing, kernel and
/// twin identical: at the first step (every set new: pairs of two new sets) and on the settled
/// table with new sets beside its sets (pairs of a new and a settled set too); a moved set older
/// than the new ones, or more new sets than DIRTY_OVERLAP_MAX, raises MERGE_DIRTY_LIMIT and lists
/// nothing, on both.
#[test]
fn coalesce_overlap_kernels_match_twins_and_the_index_pass() {
    let Some(gpu) = gpu_or_skip("coalesce_overlap_kernels_match_twins_and_the_index_pass") else {
        return;
    };
    for (f, label) in [(first_step(), "first step"), (later_step(), "later step")] {
        let (sets, base) = coalesced(&f);
        let u = merge_uniform(f.nq, f.alpha);
        let cap = sets.len() + 17;
        let list = List::Coalesced { base };
        let room = 4 * sets.len();
        let (mut edges, c) = list_pass_matches_twins(&gpu, &sets, list, cap, room, label);
        assert_eq!((c.errors, c.edges.overflow), (0, 0), "{label}");
        let new = |k: u32| k >= base;
        let both = edges.iter().filter(|e| new(e[0]) && new(e[1])).count();
        let one = edges.len() - both;
        println!(
            "{label}: {} sets, {} new, {} pairs ({both} of two new sets)",
            sets.len(),
            sets.len() as u32 - base,
            edges.len()
        );
        assert!(both > 0, "{label}: no pair of two new sets");
        if base > 0 {
            assert!(one > 0, "{label}: no pair of a new and a settled set");
        }
        assert!(
            edges.iter().all(|e| new(e[0])),
            "{label}: a pair's first set is new"
        );
        assert!(edges.iter().all(|e| !new(e[1]) || e[0] < e[1]), "{label}");
        edges.sort_unstable();
        assert_eq!(
            edges,
            index_pass_pairs(&u, &sets, cap),
            "{label}: the index pass's pairs"
        );
        // Room for fewer pairs than found: overflow, and the count says how many were found.
        let (_, c) = list_pass_matches_twins(&gpu, &sets, list, cap, 40, label);
        assert_eq!(c.edges.overflow, 1, "{label}");
        assert_eq!(c.edges.count as usize, edges.len(), "{label}");
    }
    let (mut sets, base) = coalesced(&later_step());
    let cap = sets.len() + 17;
    // More new sets than the search's bound (every set counted as new).
    let all_new = List::Coalesced { base: 0 };
    assert!(sets.len() > DIRTY_OVERLAP_MAX as usize);
    let (e, c) = list_pass_matches_twins(&gpu, &sets, all_new, cap, 400, "too many");
    assert_eq!(c.errors, MERGE_DIRTY_LIMIT, "more new sets than the bound");
    assert!(e.is_empty());
    // A settled set marked moved: the search would miss its pairs.
    let old = sets[..base as usize]
        .iter()
        .position(|s| s.flags & SET_LIVE != 0)
        .unwrap();
    sets[old].flags |= SET_MOVED;
    let list = List::Coalesced { base };
    let (_, c) = list_pass_matches_twins(&gpu, &sets, list, cap, 4 * cap, "moved settled set");
    assert_eq!(
        c.errors, MERGE_DIRTY_LIMIT,
        "a moved set older than the new ones"
    );
}

/// The chain with coalescing whose first pass searches the new sets (`MergeGpu::new` with
/// `indexed` = 0, run until the verdict is done) ends in the CPU path's table, springs and merge
/// count, and records fewer dispatches than the chain with the index, in its first pass and in
/// the second (the moved roots' search); at the first step of the swatch and on the settled table
/// with new pairs.
#[test]
fn coalescing_without_the_index_equals_the_cpu_path() {
    let Some(gpu) = gpu_or_skip("coalescing_without_the_index_equals_the_cpu_path") else {
        return;
    };
    for (f, label) in [(first_step(), "first step"), (later_step(), "later step")] {
        let (cpu, _, merged, cpu_springs) = cpu_path(&f);
        let u = merge_uniform(f.nq, f.alpha);
        let caps = |indexed| MergeCaps {
            sets: f.sets.len() as u32 + f.touching.len() as u32,
            touching: f.touching.len() as u32 + 5,
            edges: f.touching.len() as u32,
            index: 4 * (f.sets.len() + f.touching.len()) as u32,
            rounds: 8,
            passes: 1,
            indexed,
        };
        // Dispatches recorded by (indexed, passes).
        let mut dispatches = std::collections::BTreeMap::new();
        for indexed in [0u32, 1] {
            let mut c = caps(indexed);
            let mut runs = Vec::new();
            let out = loop {
                assert!(runs.len() < 12, "{label}: no verdict Done after 12 runs");
                let (chain, out) = run_chain_of(&gpu, &u, &f.sets, &f.touching, None, c);
                dispatches.insert((indexed, c.passes), chain.dispatches().len());
                runs.push(chain.caps);
                match chain.verdict(&out.counters) {
                    MergeVerdict::Done => break out,
                    MergeVerdict::Rerun(next) => c = next,
                    MergeVerdict::ScanLimit => panic!("{label}: scan limit"),
                }
            };
            println!("{label}, indexed {indexed}: {} runs, {runs:?}", runs.len());
            assert_eq!(out.counters.errors, 0, "{label}");
            assert!(
                runs.iter().all(|r| r.indexed == indexed),
                "{label}: fell back to the index: {runs:?}"
            );
            assert_eq!(out.sets, cpu, "{label}, indexed {indexed}: the table");
            assert_eq!(
                out.springs, cpu_springs,
                "{label}, indexed {indexed}: springs"
            );
            assert_eq!(
                out.counters.merged as u64, merged,
                "{label}, indexed {indexed}: merged"
            );
        }
        assert!(merged > 0, "{label}: nothing merged");
        // Each pass without the index saves the same: its search is one dispatch, the new sets'
        // in the first pass, the moved roots' in the second.
        let saved = |passes| dispatches[&(1, passes)] - dispatches[&(0, passes)];
        println!("{label}: dispatches by (indexed, passes) {dispatches:?}");
        assert!(saved(1) > 0, "{label}: {dispatches:?}");
        assert_eq!(saved(2), 2 * saved(1), "{label}: {dispatches:?}");
    }
}

/// The rest of a merge pass by the twins, after its search listed `edges` (counted in `c`): label
/// rounds until converged, `merge_hull` (clearing the pair count, as before a moved-list search),
/// `merge_apply`; returns the moved list it wrote.
fn finish_pass_twins(
    u: &MergeUniform,
    sets: &mut [ContactSet],
    edges: &[[u32; 2]],
    labels: &mut [u32],
    hull: &mut [[u32; 4]],
    c: &mut MergeCounters,
) -> Vec<u32> {
    let mut round = 0;
    loop {
        let mr = MergeRound {
            round,
            ..Default::default()
        };
        merge_label(u, &mr, edges, labels, c);
        round += 1;
        if c.label_rounds < round {
            break;
        }
    }
    let mr = MergeRound {
        round,
        clear_edges: 1,
        ..Default::default()
    };
    merge_hull(u, &mr, labels, sets, hull, c);
    let mut moved = vec![0u32; sets.len()];
    merge_apply(u, &mr, labels, hull, sets, c, &mut moved);
    moved.truncate(c.moved as usize);
    moved
}

/// The passes after the first searching the roots the pass before grew (`moved_overlap_write`)
/// list exactly the index pass's pairs, pass after pass, kernel and twin identical, until the
/// merge ends in the CPU path's table: after a rebuild round (`after_round`, whose merges cascade
/// over several passes) and after coalescing on the settled table; a list longer than
/// DIRTY_OVERLAP_MAX raises MERGE_DIRTY_LIMIT and lists nothing.
#[test]
fn moved_overlap_kernels_match_twins_and_the_index_pass() {
    let Some(gpu) = gpu_or_skip("moved_overlap_kernels_match_twins_and_the_index_pass") else {
        return;
    };
    let (round_sets, dirty, nq, alpha) = after_round();
    let (coalesced_sets, base) = coalesced(&later_step());
    let u = merge_uniform(nq, alpha);
    let mut moved_pairs = 0;
    for (sets0, first, label) in [
        (round_sets, List::Dirty(&dirty), "after a round"),
        (coalesced_sets, List::Coalesced { base }, "after coalescing"),
    ] {
        let mut cpu = sets0.clone();
        set_merge(
            &mut cpu,
            &mut SetIndex::default(),
            nq,
            &mut MergeScratch::default(),
        )
        .unwrap();
        let n = sets0.len();
        let cap = n + 17;
        let mut sets = table_with_capacity(&sets0, cap);
        let mut c = counters(n, cap, 0);
        c.edges.capacity = (4 * cap) as u32;
        let mut edges = vec![[0u32; 2]; 4 * cap];
        let (mut labels, mut hull) = (vec![0u32; 2 * cap], vec![[0u32; 4]; cap]);
        list_twin(first, &sets, &mut edges, &mut labels, &mut hull, &mut c);
        assert_eq!(c.errors, 0, "{label}");
        let mut pass = 1;
        loop {
            let ne = c.edges.count as usize;
            let moved =
                finish_pass_twins(&u, &mut sets, &edges[..ne], &mut labels, &mut hull, &mut c);
            if moved.is_empty() {
                break;
            }
            pass += 1;
            let table = &sets[..n];
            let list = List::Moved(&moved);
            let (e, cm) = list_pass_matches_twins(
                &gpu,
                table,
                list,
                cap,
                4 * cap,
                &format!("{label}, pass {pass}"),
            );
            assert_eq!(
                (cm.errors, cm.edges.overflow),
                (0, 0),
                "{label}, pass {pass}"
            );
            let mut sorted = e.clone();
            sorted.sort_unstable();
            assert_eq!(
                sorted,
                index_pass_pairs(&u, table, cap),
                "{label}, pass {pass}: pairs"
            );
            println!(
                "{label}, pass {pass}: {} moved roots, {} pairs",
                moved.len(),
                e.len()
            );
            moved_pairs += e.len();
            // The pass by the twins, on from the pairs it listed.
            c.edges.count = 0;
            moved_overlap_write(table, &moved, &mut edges, &mut labels, &mut hull, &mut c);
            assert!(pass < 16, "{label}: the merge does not end");
        }
        assert_eq!(&sets[..n], &cpu[..], "{label}: the CPU path's table");
    }
    assert!(moved_pairs > 0, "no pass after the first found a pair");
    // A moved list longer than the search's bound.
    let (sets, _, _, _) = after_round();
    let long: Vec<u32> = (0..DIRTY_OVERLAP_MAX + 1).map(|k| k % 500).collect();
    let cap = sets.len() + 17;
    let (e, c) = list_pass_matches_twins(&gpu, &sets, List::Moved(&long), cap, 400, "long");
    assert_eq!(c.errors, MERGE_DIRTY_LIMIT, "a list over the bound");
    assert!(e.is_empty());
}
