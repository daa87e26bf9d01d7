//! New contact sets from the scheduler's touching pairs (`contact_coalesce`) and the merging of
//! overlapping sets (`set_merge`), as data-parallel passes whose result does not depend on how
//! many threads run them. Every pass is a GPU kernel (`shaders/NAME.wgsl`) and the function of the
//! same name here is its CPU twin, taking the kernel's bindings in binding order; the CPU path runs
//! the twins ([`coalesce_pairs`], [`set_merge`]) and `merge_gpu::MergeGpu` records the kernels.
//!
//! *Coalescing.* Reads the scheduler's touching pairs, in its order (the pairs of one schedule entry
//! are consecutive). Each pair `(i, j)` gives the box `[i ± α] × [j ± α]`; a pair whose box does not
//! overlap the previous pair's box starts a run (`coalesce_heads`: run heads, numbered by a prefix
//! sum), and each run becomes one new set (`contact_coalesce`: the head writes the header, every
//! pair adds its box to the run's hull accumulator; `coalesce_box`: the hull becomes the box and
//! its 4 springs are cleared). The new sets are appended to the table in run order, live, dirty
//! and moved.
//!
//! *Hull accumulators* (`set_hull`) hold a box as its *hull code* `[!u0, u1, !v0, v1]` ([`hull_code`]),
//! so the hull of several boxes is a component-wise max, an integer `atomicMax` on the GPU (the same
//! result in any order), and the all-zero code is the empty hull.
//!
//! *Merging* is a connected-components pass over the overlap graph of the live sets, repeated until
//! no two sets overlap (a merged set's hull can overlap further sets):
//! 1. the bin index of the live sets ([`SetIndex::build`]; on the GPU `set_bin_count` → scan →
//!    `set_bin_write` → stable sort by bin → `set_bin_index`, the same index).
//! 2. `set_overlap_count` → scan → `set_overlap_write`: sets without [`SET_MOVED`] are pairwise
//!    disjoint, so every overlapping pair has a moved set; each moved set looks through the bins its
//!    box meets for the live sets it overlaps, and lists each pair once, in the order of the moved
//!    sets. No pair: done. The write pass also starts the pass's labels and hull accumulators.
//!    After a rebuild round every moved set is on the round's dirty list, after coalescing every
//!    moved set is new, and after a pass every moved set is a root it grew (`merge_apply` lists
//!    them), so the GPU's passes may skip the index: `dirty_overlap_write`,
//!    `coalesce_overlap_write` and `moved_overlap_write` have each live set test that short list
//!    and append its pairs (the same pairs, in another order; the CPU path keeps the index).
//! 3. `merge_label`: Jacobi rounds of min-label propagation over those pairs (with hooking and
//!    pointer jumping) until a round changes nothing; a set's label is then the smallest set index
//!    of its component.
//!    The CPU runs rounds until then; the GPU records a fixed number and raises
//!    `MergeCounters::more_rounds` when the last one still changed a label.
//! 4. `merge_hull`: clears the moved flags; each component's hull, a max-reduction of hull codes
//!    into its root (the smallest index).
//! 5. `merge_apply`: the root keeps its slot and takes the hull as its box (dirty, and moved when
//!    the box grew); the other sets of the component are cleared (no longer live) and leave the
//!    table at the step's compaction ([`super::sets::set_compact`]). No pair is released: the hull
//!    holds every merged box.
//!
//! The labels are a function of the graph alone (the smallest index of each component), and the
//! hull of a component does not depend on the order of the reduction, so the result is the same
//! for any order of the passes' elements.

use super::rebuild::{model_sizes, PoolGarbage, RebuildParams};
use super::sets::{
    box_hull, boxes_overlap, padded_box, ContactSet, SetIndex, MERGE_BIN, SET_DIRTY, SET_LIVE,
    SET_MOVED,
};
use super::stiction::StictionSpring;
use super::SyncPtr;
use crate::layout::{
    Capacity, KeyValue, MergeCounters, MergeRound, MergeUniform, SchedCounters, DIRTY_OVERLAP_MAX,
    MERGE_DIRTY_LIMIT, MERGE_SCAN_LIMIT,
};
use crate::polar::quat_identity;
use crate::scan::{resize_with_headroom, GROUP};
use rayon::prelude::*;
use std::sync::atomic::{AtomicBool, Ordering};

/// Set slots per task of the parallel overlap passes.
const OVERLAP_TASK: usize = 64;

/// Most loop iterations (index items plus bins) one overlap search may take: the bound of the
/// search loop of `shaders/shared/merge_overlap.wgsl`, under lavapipe's 65,535 loop iterations
/// per invocation.
pub const MERGE_SCAN_LIMIT_ITEMS: u32 = 60_000;

/// "No set": the value of the set index's padding items.
pub const NO_SET: u32 = u32::MAX;

/// Why the set merge cannot go on.
#[derive(Debug, thiserror::Error, PartialEq)]
pub enum MergeError {
    #[error(
        "contact-set merge: set {set}'s overlap search meets more than {limit} index items \
         (too many contact sets share its bins)"
    )]
    ScanLimit { set: u32, limit: u32 },
}

/// The hull code of a box, `[!u0, u1, !v0, v1]` (its own inverse): the hull of boxes is the
/// component-wise max of their codes, and `[0; 4]` is the empty hull.
#[inline]
pub fn hull_code(bx: &[u32; 4]) -> [u32; 4] {
    [!bx[0], bx[1], !bx[2], bx[3]]
}

/// Adds box code `code` into the accumulator `acc` (the twin of four `atomicMax`).
#[inline]
fn hull_add(acc: &mut [u32; 4], code: &[u32; 4]) {
    for w in 0..4 {
        acc[w] = acc[w].max(code[w]);
    }
}

/// The uniform of the merge passes for `nq` quadrature points and padding `alpha`.
pub fn merge_uniform(nq: u32, alpha: u32) -> MergeUniform {
    MergeUniform {
        nq,
        alpha,
        num_bins: nq / MERGE_BIN + 1,
        scan_limit: MERGE_SCAN_LIMIT_ITEMS,
    }
}

#[inline]
fn capacity(count: usize, cap: usize) -> Capacity {
    Capacity {
        count: count as u32,
        capacity: cap as u32,
        ..Default::default()
    }
}

/// Slots of the set table in use.
#[inline]
fn used_sets(c: &MergeCounters) -> usize {
    c.sets.count.min(c.sets.capacity) as usize
}

/// Kernel `coalesce_heads`: with `T` the scheduler's touching pairs (`sched_counters`' count, at
/// most its capacity and `merge_counters.touching.capacity`), `run_offsets[t]` = 1 when touching
/// pair `t < T` starts a run, else 0 (the words past `T` are left as they were); clears the hull
/// accumulators of the slots the runs may take; `coalesce_base` = `sets.count`; the scheduler's
/// touching count into `merge_counters` ([`super::counts::scheduled_counts`], which the later
/// passes read); the group sums of `run_offsets[..T]` into `scan_groups`
/// ([`crate::scan::write_groups`]), from which `contact_coalesce` numbers the runs: one word per
/// 256 pairs, and word 0 when there are none (the kernel's first workgroup always runs; those
/// wholly past the pairs return at once, and their words are left as they were).
pub fn coalesce_heads(
    acl_merge: &MergeUniform,
    touching: &[[u32; 2]],
    run_offsets: &mut [u32],
    set_hull: &mut [[u32; 4]],
    merge_counters: &mut MergeCounters,
    scan_groups: &mut [u32],
    sched_counters: &SchedCounters,
) {
    let c = merge_counters;
    let tcap = c.touching.capacity as usize;
    let scheduled = sched_counters
        .touching
        .count
        .min(sched_counters.touching.capacity);
    let n = (scheduled as usize).min(tcap);
    let base = c.sets.count as usize;
    c.coalesce_base = base as u32;
    super::counts::scheduled_counts(sched_counters, c);
    let (alpha, nq) = (acl_merge.alpha, acl_merge.nq);
    let mut prev = [0u32; 4];
    for t in 0..n {
        let [i, j] = touching[t];
        let bx = padded_box(i, i, j, j, alpha, nq);
        run_offsets[t] = (t == 0 || !boxes_overlap(&prev, &bx)) as u32;
        prev = bx;
        if base + t < c.sets.capacity as usize {
            set_hull[base + t] = [0; 4];
        }
    }
    let live = n.div_ceil(crate::scan::GROUP as usize).max(1);
    scan_groups[0] = 0;
    crate::scan::write_groups(&run_offsets[..n], &mut scan_groups[..live]);
}

/// Kernel `contact_coalesce`: pair `t` of run `r` (the run heads `run_offsets[..=t]` less one,
/// from `coalesce_heads`' group sums `scan_groups` and the flags: [`crate::scan::group_prefix_walk`],
/// the kernel's `group_prefix`) adds its box to the accumulator of slot `coalesce_base + r`, and a
/// run's first pair writes the new set's header there; `sets.count` = `coalesce_base` + runs
/// (overflow past the capacity).
pub fn contact_coalesce(
    acl_merge: &MergeUniform,
    touching: &[[u32; 2]],
    run_offsets: &[u32],
    scan_groups: &[u32],
    sets: &mut [ContactSet],
    set_hull: &mut [[u32; 4]],
    merge_counters: &mut MergeCounters,
) {
    let c = merge_counters;
    let n = (c.touching.count.min(c.touching.capacity)) as usize;
    if n == 0 {
        return;
    }
    let base = c.coalesce_base as usize;
    let cap = c.sets.capacity as usize;
    let runs = crate::scan::group_prefix_walk(
        run_offsets[..n].iter().copied(),
        scan_groups,
        |t, head, before| {
            let slot = base + (before + head) as usize - 1;
            if slot >= cap {
                return;
            }
            let [i, j] = touching[t];
            let bx = padded_box(i, i, j, j, acl_merge.alpha, acl_merge.nq);
            if head != 0 {
                sets[slot] = ContactSet {
                    bx,
                    flags: SET_LIVE | SET_DIRTY | SET_MOVED,
                    quat: quat_identity(),
                    ..Default::default()
                };
            }
            hull_add(&mut set_hull[slot], &hull_code(&bx));
        },
    );
    let total = base + runs as usize;
    c.sets.count = total as u32;
    if total > cap {
        c.sets.overflow = 1;
    }
}

/// Kernel `coalesce_box`: the new sets (slots `coalesce_base ..` the used slots) take their run's
/// hull as their box, and their 4 springs are cleared (inactive). A new set has no springs until
/// its first rebuild makes them; on the GPU its slots in `springs` may still hold those of a set
/// the last compaction removed.
pub fn coalesce_box(
    _acl_merge: &MergeUniform,
    set_hull: &[[u32; 4]],
    sets: &mut [ContactSet],
    merge_counters: &mut MergeCounters,
    springs: &mut [StictionSpring],
) {
    let c = merge_counters;
    for s in c.coalesce_base as usize..used_sets(c) {
        sets[s].bx = hull_code(&set_hull[s]);
        springs[4 * s..4 * s + 4].fill(StictionSpring::default());
    }
}

/// Scratch of the coalescing and merge passes, kept between steps.
#[derive(Debug, Default)]
pub struct MergeScratch {
    /// `coalesce_heads`' run flags.
    run_offsets: Vec<u32>,
    /// Their sums per 256 (`coalesce_heads`' group sums, which `contact_coalesce` reads).
    run_groups: Vec<u32>,
    /// Per set slot, its number of overlapping pairs, then their exclusive prefix sum.
    edge_off: Vec<u32>,
    /// Overlapping pairs `[moved set, other set]`.
    edges: Vec<[u32; 2]>,
    /// Two halves of one label per set slot (`merge_label` reads one, writes the other).
    labels: Vec<u32>,
    /// Hull accumulators (hull codes), one per set slot.
    hull: Vec<[u32; 4]>,
    /// The overlap searches the last [`set_merge`] ran (each pass's, the last one finding no
    /// pair; 0 when no set had moved): the merge passes a GPU merge invocation needs to end.
    pub searches: u32,
}

/// Stage `contact_coalesce` on the CPU path: `coalesce_heads` → `contact_coalesce` →
/// `coalesce_box` over the touching pairs, appending one new set per run to
/// `sets` (in run order) and 4 inactive springs each to `springs`. Returns the number of sets
/// made.
pub fn coalesce_pairs(
    touching: &[[u32; 2]],
    alpha: u32,
    nq: u32,
    sets: &mut Vec<ContactSet>,
    springs: &mut Vec<StictionSpring>,
    sc: &mut MergeScratch,
) -> usize {
    let n0 = sets.len();
    let t = touching.len();
    if t == 0 {
        return 0;
    }
    let u = merge_uniform(nq, alpha);
    // Room for one run per pair (the most there can be).
    let mut c = MergeCounters {
        sets: capacity(n0, n0 + t),
        touching: capacity(0, t),
        ..Default::default()
    };
    let sched = SchedCounters {
        touching: capacity(t, t),
        ..Default::default()
    };
    resize_with_headroom(sets, n0 + t, ContactSet::default());
    resize_with_headroom(&mut sc.hull, n0 + t, [0; 4]);
    resize_with_headroom(&mut sc.run_offsets, t + 1, 0);
    resize_with_headroom(&mut sc.run_groups, (t + 1).div_ceil(GROUP as usize), 0);
    coalesce_heads(
        &u,
        touching,
        &mut sc.run_offsets,
        &mut sc.hull,
        &mut c,
        &mut sc.run_groups,
        &sched,
    );
    contact_coalesce(
        &u,
        touching,
        &sc.run_offsets,
        &sc.run_groups,
        sets,
        &mut sc.hull,
        &mut c,
    );
    let n = c.sets.count as usize;
    // The springs buffer grows to the table (its fill is what coalesce_box writes: the GPU
    // buffer has whatever its slots last held there instead).
    springs.resize(4 * n, StictionSpring::default());
    coalesce_box(&u, &sc.hull, sets, &mut c, springs);
    sets.truncate(n);
    n - n0
}

/// Kernel `set_bin_count`: `bin_offsets[x]` = the bins live set `x` meets (0 for the other slots,
/// up to and including `sets.capacity`); starts a merge pass (`label_rounds`, `moved` = 0); the
/// group sums of `bin_offsets[..=capacity]` into `scan_groups` ([`crate::scan::write_groups`]).
pub fn set_bin_count(
    _acl_merge: &MergeUniform,
    sets: &[ContactSet],
    bin_offsets: &mut [u32],
    merge_counters: &mut MergeCounters,
    scan_groups: &mut [u32],
) {
    let c = merge_counters;
    c.label_rounds = 0;
    c.moved = 0;
    let n = used_sets(c);
    for x in 0..=c.sets.capacity as usize {
        bin_offsets[x] = match sets.get(x) {
            Some(s) if x < n && s.flags & SET_LIVE != 0 => {
                s.bx[1] / MERGE_BIN - s.bx[0] / MERGE_BIN + 1
            }
            _ => 0,
        };
    }
    crate::scan::write_groups(&bin_offsets[..=c.sets.capacity as usize], scan_groups);
}

/// Kernel `set_bin_write`: live set `x` writes its items `(bin, x)` from `bin_offsets[x]`
/// (scanned), in bin order; the slots past the item count are left as they were (the sort and
/// [`set_bin_index`] stop at the count). Items past the capacity raise `index.overflow`.
pub fn set_bin_write(
    _acl_merge: &MergeUniform,
    sets: &[ContactSet],
    bin_offsets: &[u32],
    set_bin_sort: &mut [KeyValue],
    merge_counters: &mut MergeCounters,
) {
    let c = merge_counters;
    let icap = c.index.capacity as usize;
    let total = bin_offsets[c.sets.capacity as usize] as usize;
    c.index.count = total as u32;
    for x in 0..used_sets(c) {
        let s = &sets[x];
        if s.flags & SET_LIVE == 0 {
            continue;
        }
        let first = bin_offsets[x] as usize;
        for (slot, b) in (first..).zip(s.bx[0] / MERGE_BIN..=s.bx[1] / MERGE_BIN) {
            if slot < icap {
                set_bin_sort[slot] = KeyValue {
                    key_lo: b,
                    key_hi: 0,
                    value: x as u32,
                    _pad: 0,
                };
            } else {
                c.index.overflow = 1;
            }
        }
    }
}

/// Kernel `set_bin_index`: from the items sorted by bin, `set_bin_start[b]` (`b ≤ num_bins`) = the
/// first item of bin `b` or later, and `set_bin_items[t]` = item `t`'s set.
pub fn set_bin_index(
    acl_merge: &MergeUniform,
    set_bin_sort: &[KeyValue],
    set_bin_start: &mut [u32],
    set_bin_items: &mut [u32],
    merge_counters: &mut MergeCounters,
) {
    let c = merge_counters;
    let total = c.index.count.min(c.index.capacity) as usize;
    let sorted = &set_bin_sort[..total];
    for (item, kv) in set_bin_items.iter_mut().zip(sorted) {
        *item = kv.value;
    }
    for b in 0..=acl_merge.num_bins {
        set_bin_start[b as usize] = sorted.partition_point(|kv| kv.key_lo < b) as u32;
    }
}

/// The loop iterations of the overlap search of box `bx` (the index items of its bins plus the
/// bins: `overlap_cost` of shaders/shared/merge_overlap.wgsl), checked against the scan limit.
#[inline]
fn search_len(bx: &[u32; 4], start: &[u32]) -> u32 {
    let (b0, b1) = (bx[0] / MERGE_BIN, bx[1] / MERGE_BIN);
    start[b1 as usize + 1] - start[b0 as usize] + b1 - b0 + 1
}

/// Calls `f(m)` for every live set `m ≠ k` that overlaps set `k`, once each, unless `m` is moved
/// and `m < k` (that pair is listed from `m`). A pair of sets shares one or more bins; it is taken
/// in the first of them. The index is `set_bin_start` / `set_bin_items` (see [`SetIndex`]). The
/// kernels' `overlap_next` (shaders/shared/merge_overlap.wgsl) walks the same items in the same
/// order.
#[inline]
fn for_each_overlap(
    sets: &[ContactSet],
    start: &[u32],
    items: &[u32],
    k: u32,
    mut f: impl FnMut(u32),
) {
    let bx = sets[k as usize].bx;
    for bin in bx[0] / MERGE_BIN..=bx[1] / MERGE_BIN {
        let list = &items[start[bin as usize] as usize..start[bin as usize + 1] as usize];
        for &m in list {
            if m == k {
                continue;
            }
            let o = &sets[m as usize];
            if (o.bx[0] / MERGE_BIN).max(bx[0] / MERGE_BIN) != bin {
                continue;
            }
            if o.flags & SET_MOVED != 0 && m < k {
                continue;
            }
            if boxes_overlap(&bx, &o.bx) {
                f(m);
            }
        }
    }
}

#[inline]
fn is_moved(s: &ContactSet) -> bool {
    s.flags & (SET_LIVE | SET_MOVED) == SET_LIVE | SET_MOVED
}

/// Kernel `set_overlap_count`: `edge_offsets[x]` = the overlapping pairs listed from live moved
/// set `x` (0 for the other slots up to and including `sets.capacity`). A search of more than
/// `scan_limit` iterations (index items plus bins) lists nothing and raises [`MERGE_SCAN_LIMIT`].
/// The group sums of `edge_offsets[..=capacity]` go into `scan_groups`
/// ([`crate::scan::write_groups`]: the scan is grouped; the CPU path passes none).
pub fn set_overlap_count(
    acl_merge: &MergeUniform,
    sets: &[ContactSet],
    set_bin_start: &[u32],
    set_bin_items: &[u32],
    edge_offsets: &mut [u32],
    merge_counters: &mut MergeCounters,
    scan_groups: &mut [u32],
) {
    let c = merge_counters;
    let cap = c.sets.capacity as usize;
    let n = used_sets(c);
    edge_offsets[n..=cap].fill(0);
    let limit = acl_merge.scan_limit;
    let over = AtomicBool::new(false);
    edge_offsets[..n]
        .par_iter_mut()
        .enumerate()
        .with_min_len(OVERLAP_TASK)
        .for_each(|(x, out)| {
            let mut count = 0;
            if is_moved(&sets[x]) {
                if search_len(&sets[x].bx, set_bin_start) > limit {
                    over.store(true, Ordering::Relaxed);
                } else {
                    for_each_overlap(sets, set_bin_start, set_bin_items, x as u32, |_| count += 1);
                }
            }
            *out = count;
        });
    if over.into_inner() {
        c.errors |= MERGE_SCAN_LIMIT;
    }
    crate::scan::write_groups(&edge_offsets[..=cap], scan_groups);
}

/// The merge state of a pass's used slots `..n` (of a table of `cap` slots): label `x` in both
/// halves of `labels`, an empty hull accumulator.
fn start_merge_state(n: usize, cap: usize, labels: &mut [u32], set_hull: &mut [[u32; 4]]) {
    for x in 0..n {
        labels[x] = x as u32;
        labels[cap + x] = x as u32;
    }
    set_hull[..n].fill([0; 4]);
}

/// Kernel `set_overlap_write`: live moved set `x` writes its pairs `[x, m]` at
/// `edges[edge_offsets[x]..]` (`edge_offsets` scanned), in index order; slots past
/// `edges.capacity` raise `edges.overflow`. `edges.count` = the total. Also starts the merge state
/// of every used slot: its label `x` in both halves of `labels`, an empty hull accumulator.
#[allow(clippy::too_many_arguments)]
pub fn set_overlap_write(
    acl_merge: &MergeUniform,
    sets: &[ContactSet],
    set_bin_start: &[u32],
    set_bin_items: &[u32],
    edge_offsets: &[u32],
    edges: &mut [[u32; 2]],
    labels: &mut [u32],
    set_hull: &mut [[u32; 4]],
    merge_counters: &mut MergeCounters,
) {
    let c = merge_counters;
    let cap = c.sets.capacity as usize;
    c.edges.count = edge_offsets[cap];
    let n = used_sets(c);
    start_merge_state(n, cap, labels, set_hull);
    let ecap = (c.edges.capacity as usize).min(edges.len());
    let limit = acl_merge.scan_limit;
    let over = AtomicBool::new(false);
    let out = SyncPtr::new(&mut edges[..ecap]);
    edge_offsets[..n]
        .par_iter()
        .enumerate()
        .with_min_len(OVERLAP_TASK)
        .for_each(|(x, &o)| {
            if !is_moved(&sets[x]) || search_len(&sets[x].bx, set_bin_start) > limit {
                return;
            }
            let mut at = o as usize;
            for_each_overlap(sets, set_bin_start, set_bin_items, x as u32, |m| {
                if at < ecap {
                    // SAFETY: set x alone writes `edges[edge_offsets[x]..]` up to the next set's
                    // offset, and the write pass finds the same pairs as the count pass.
                    unsafe { out.write(at, [x as u32, m]) };
                } else {
                    over.store(true, Ordering::Relaxed);
                }
                at += 1;
            });
        });
    if over.into_inner() {
        c.edges.overflow = 1;
    }
}

/// Calls `f(k)` for every set `k` of `list` (in its order) that is live, moved, not `m`, overlaps
/// live set `m` (box `s`), and, when `m` is moved too, has the smaller slot (each pair once, as
/// [`for_each_overlap`] lists it: from the smaller of two moved sets)
/// (`shaders/shared/list_overlap.wgsl`'s `list_overlap_pair`).
#[inline]
fn for_each_listed_overlap(
    sets: &[ContactSet],
    list: impl IntoIterator<Item = u32>,
    m: u32,
    mut f: impl FnMut(u32),
) {
    let s = &sets[m as usize];
    let moved = is_moved(s);
    for k in list {
        if k == m || (moved && k > m) {
            continue;
        }
        let o = &sets[k as usize];
        if is_moved(o) && boxes_overlap(&o.bx, &s.bx) {
            f(k);
        }
    }
}

/// The write pass of a search without the set index (`dirty_overlap_write`,
/// `coalesce_overlap_write`, `moved_overlap_write`): starts the pass's `label_rounds` (0, as
/// [`set_bin_count`] starts an index pass; `moved`, the last pass's moved list, [`merge_hull`]
/// empties) and the merge state of every used slot, as [`set_overlap_write`] does; then every
/// used live slot `m`, in slot order, appends the pairs `[k, m]` of `list` that
/// [`for_each_listed_overlap`] finds at `edges[edges.count..]`, counting them into `edges.count`
/// (slots past `edges.capacity` raise `edges.overflow`). `searchable(m)` says whether the list may
/// be searched for `m` (not longer than [`DIRTY_OVERLAP_MAX`], and holding `m` if it is moved:
/// else the search would miss pairs of it); when it says no, nothing is listed for `m` and
/// [`MERGE_DIRTY_LIMIT`] is raised. The kernels take their slots with `atomicAdd`, so their order
/// varies; nothing downstream depends on it (the labels are minima, the hulls maxima).
fn list_overlap_write(
    sets: &[ContactSet],
    list: &[u32],
    searchable: impl Fn(u32) -> bool,
    edges: &mut [[u32; 2]],
    labels: &mut [u32],
    set_hull: &mut [[u32; 4]],
    merge_counters: &mut MergeCounters,
) {
    let c = merge_counters;
    c.label_rounds = 0;
    let cap = c.sets.capacity as usize;
    let n = used_sets(c);
    start_merge_state(n, cap, labels, set_hull);
    let ecap = (c.edges.capacity as usize).min(edges.len());
    let mut at = c.edges.count as usize;
    for m in 0..n as u32 {
        if sets[m as usize].flags & SET_LIVE == 0 {
            continue;
        }
        if !searchable(m) {
            c.errors |= MERGE_DIRTY_LIMIT;
            continue;
        }
        for_each_listed_overlap(sets, list.iter().copied(), m, |k| {
            if at < ecap {
                edges[at] = [k, m];
            } else {
                c.edges.overflow = 1;
            }
            at += 1;
        });
    }
    c.edges.count = at as u32;
}

/// Kernel `dirty_overlap_write`, the overlap list of the first merge pass after a rebuild round
/// without the set index, in one pass ([`list_overlap_write`]): every live set `m` appends its
/// pairs `[k, m]` (`k` a moved set of the round's dirty list `dirty[..rebuild.num_dirty]`, in slot
/// order; `shaders/shared/dirty_overlap.wgsl` walks the same list); `edges.count` is 0 at the
/// round's start (`set_dirty_write`). The same pairs as [`set_overlap_count`] /
/// [`set_overlap_write`] list after that round (every live moved set is then on the list), each
/// named from its other set. A list longer than [`DIRTY_OVERLAP_MAX`], or a moved set missing
/// from it, raises [`MERGE_DIRTY_LIMIT`].
pub fn dirty_overlap_write(
    rebuild: &RebuildParams,
    sets: &[ContactSet],
    dirty: &[u32],
    edges: &mut [[u32; 2]],
    labels: &mut [u32],
    set_hull: &mut [[u32; 4]],
    merge_counters: &mut MergeCounters,
) {
    let nd = rebuild.num_dirty;
    let list = &dirty[..(nd as usize).min(dirty.len())];
    let searchable = |m: u32| {
        nd <= DIRTY_OVERLAP_MAX && (!is_moved(&sets[m as usize]) || list.binary_search(&m).is_ok())
    };
    list_overlap_write(
        sets,
        list,
        searchable,
        edges,
        labels,
        set_hull,
        merge_counters,
    );
}

/// Kernel `coalesce_overlap_write`, the overlap list of the first merge pass after coalescing
/// without the set index, in one pass ([`list_overlap_write`]): every live set `m` appends its
/// pairs `[k, m]` (`k` a set coalescing made, slots `coalesce_base..sets.count`: after coalescing
/// every moved set is new, since the table before it was a completed step's, no set moved, none
/// overlapping); `edges.count` is 0 at the step's start (`acl_counts`). The same pairs as
/// [`set_overlap_count`] / [`set_overlap_write`] list after coalescing, each named from its other
/// set. More new sets than [`DIRTY_OVERLAP_MAX`], or a moved set older than them, raise
/// [`MERGE_DIRTY_LIMIT`].
pub fn coalesce_overlap_write(
    sets: &[ContactSet],
    edges: &mut [[u32; 2]],
    labels: &mut [u32],
    set_hull: &mut [[u32; 4]],
    merge_counters: &mut MergeCounters,
) {
    let n = used_sets(merge_counters) as u32;
    let base = merge_counters.coalesce_base.min(n);
    let list: Vec<u32> = (base..n).collect();
    let searchable =
        |m: u32| n - base <= DIRTY_OVERLAP_MAX && (!is_moved(&sets[m as usize]) || m >= base);
    list_overlap_write(
        sets,
        &list,
        searchable,
        edges,
        labels,
        set_hull,
        merge_counters,
    );
}

/// Kernel `moved_overlap_write`, the overlap list of a merge pass after the first without the set
/// index, in one pass ([`list_overlap_write`]): every live set `m` appends its pairs `[k, m]` (`k`
/// a root the pass before grew, `moved_sets[..moved]`, [`merge_apply`]); `edges.count` is 0 after
/// that pass (its [`merge_hull`] with `clear_edges`). [`merge_hull`] cleared every moved flag and
/// [`merge_apply`] set it on exactly the roots it listed, so the list holds every moved set and
/// this lists the same pairs as [`set_overlap_count`] / [`set_overlap_write`]. A list longer than
/// [`DIRTY_OVERLAP_MAX`] raises [`MERGE_DIRTY_LIMIT`].
pub fn moved_overlap_write(
    sets: &[ContactSet],
    moved_sets: &[u32],
    edges: &mut [[u32; 2]],
    labels: &mut [u32],
    set_hull: &mut [[u32; 4]],
    merge_counters: &mut MergeCounters,
) {
    let len = merge_counters.moved;
    let list = &moved_sets[..(len as usize).min(moved_sets.len())];
    let searchable = |_| len <= DIRTY_OVERLAP_MAX;
    list_overlap_write(
        sets,
        list,
        searchable,
        edges,
        labels,
        set_hull,
        merge_counters,
    );
}

/// Kernel `merge_label`, Jacobi round `merge_round.round` of min-label propagation: with `L` the
/// label half `round % 2` and `N` the other, `N[x] = min(N[x], L[x], L[L[x]])` for every used slot
/// (pointer jumping), then for every pair `(a, b)` with `L[a] ≠ L[b]`, `m = min(L[a], L[b])` into
/// `N[a]`, `N[b]` and `N[max(L[a], L[b])]` (hooking: the sets whose labels point at the larger
/// label follow at the next jump, which keeps the rounds near log2 of a component's extent where
/// plain propagation needs about its diameter). Every label stays a set of the same component and
/// only decreases, so the fixed point is each component's smallest slot whatever the rounds.
/// `N` holds the round before's labels, never below `L`'s, so it ends as the round's result. A round that lowers a label sets `label_rounds = round + 1`; a round after one that
/// changed nothing does nothing (both halves hold the fixed point).
pub fn merge_label(
    _acl_merge: &MergeUniform,
    merge_round: &MergeRound,
    edges: &[[u32; 2]],
    labels: &mut [u32],
    merge_counters: &mut MergeCounters,
) {
    let c = merge_counters;
    let r = merge_round.round;
    if r > 0 && c.label_rounds < r {
        return;
    }
    let cap = c.sets.capacity as usize;
    let n = used_sets(c);
    let (lo, hi) = labels[..2 * cap].split_at_mut(cap);
    let (src, dst) = if r.is_multiple_of(2) {
        (lo, hi)
    } else {
        (hi, lo)
    };
    let mut changed = false;
    for x in 0..n {
        let l = src[x];
        let m = l.min(src[l as usize]);
        dst[x] = dst[x].min(m);
        changed |= m < l;
    }
    let ne = c.edges.count.min(c.edges.capacity) as usize;
    for &[a, b] in &edges[..ne] {
        let (la, lb) = (src[a as usize], src[b as usize]);
        if la != lb {
            let lo = la.min(lb);
            for y in [a, b, la.max(lb)] {
                dst[y as usize] = dst[y as usize].min(lo);
            }
            changed = true;
        }
    }
    if changed {
        c.label_rounds = c.label_rounds.max(r + 1);
    }
}

/// Kernel `merge_hull`: with the labels of half `merge_round.round % 2`, every live set clears
/// [`SET_MOVED`] and, when its label `r` is not itself, adds its box to `r`'s hull accumulator.
/// Raises `more_rounds` when the last recorded round still changed a label.
pub fn merge_hull(
    _acl_merge: &MergeUniform,
    merge_round: &MergeRound,
    labels: &[u32],
    sets: &mut [ContactSet],
    set_hull: &mut [[u32; 4]],
    merge_counters: &mut MergeCounters,
) {
    let c = merge_counters;
    if c.label_rounds >= merge_round.round {
        c.more_rounds = 1;
    }
    c.moved = 0;
    if merge_round.clear_edges != 0 {
        c.edges.count = 0;
    }
    let cap = c.sets.capacity as usize;
    let half = &labels[(merge_round.round as usize % 2) * cap..];
    for x in 0..used_sets(c) {
        let s = &mut sets[x];
        if s.flags & SET_LIVE == 0 {
            continue;
        }
        s.flags &= !SET_MOVED;
        let r = half[x] as usize;
        if r != x {
            hull_add(&mut set_hull[r], &hull_code(&s.bx));
        }
    }
}

/// Kernel `merge_apply`: live sets whose label is not themselves are cleared (counted in `merged`,
/// their models' pool entries in `garbage_*`); a root (non-empty hull accumulator) takes the hull
/// of its box and the accumulator as its box, is dirty, and moved when the box grew, listed in
/// `moved_sets[moved]` (`moved` counts them; 0 since [`merge_hull`]). The kernel takes the list's
/// slots with `atomicAdd`, so its order varies; here the roots are listed in slot order.
pub fn merge_apply(
    _acl_merge: &MergeUniform,
    merge_round: &MergeRound,
    labels: &[u32],
    set_hull: &[[u32; 4]],
    sets: &mut [ContactSet],
    merge_counters: &mut MergeCounters,
    moved_sets: &mut [u32],
) {
    let c = merge_counters;
    let cap = c.sets.capacity as usize;
    let half = &labels[(merge_round.round as usize % 2) * cap..];
    for x in 0..used_sets(c) {
        let s = &mut sets[x];
        if s.flags & SET_LIVE == 0 {
            continue;
        }
        if half[x] as usize != x {
            let [n, nk, nw] = model_sizes(s);
            c.merged += 1;
            c.garbage_cp += n as u32;
            c.garbage_k += nk as u32;
            c.garbage_w += nw as u32;
            *s = ContactSet::default();
        } else if set_hull[x][0] != 0 {
            let h = box_hull(&s.bx, &hull_code(&set_hull[x]));
            if h != s.bx {
                s.bx = h;
                s.flags |= SET_MOVED;
                if let Some(slot) = moved_sets.get_mut(c.moved as usize) {
                    *slot = x as u32;
                }
                c.moved += 1;
            }
            s.flags |= SET_DIRTY;
        }
    }
}

/// Stage `set_merge`: merges overlapping live sets until no two overlap (see the module doc).
/// Expects every set whose box is new or changed since the last call to carry [`SET_MOVED`];
/// clears it. Leaves `index` built over the final live sets. Returns the number of sets merged
/// away and the pool space their models held.
pub fn set_merge(
    sets: &mut [ContactSet],
    index: &mut SetIndex,
    nq: u32,
    sc: &mut MergeScratch,
) -> Result<(u64, PoolGarbage), MergeError> {
    let mut merged = 0;
    let mut garbage = PoolGarbage::default();
    let u = merge_uniform(nq, 0);
    let n = sets.len();
    sc.searches = 0;
    loop {
        index.build(sets, nq);
        if !sets.iter().any(is_moved) {
            return Ok((merged, garbage));
        }
        sc.searches += 1;
        let mut c = MergeCounters {
            sets: capacity(n, n),
            ..Default::default()
        };
        resize_with_headroom(&mut sc.edge_off, n + 1, 0);
        resize_with_headroom(&mut sc.labels, 2 * n, 0);
        resize_with_headroom(&mut sc.hull, n, [0; 4]);
        set_overlap_count(
            &u,
            sets,
            index.start(),
            index.items(),
            &mut sc.edge_off,
            &mut c,
            &mut [],
        );
        if c.errors & MERGE_SCAN_LIMIT != 0 {
            let set = (0..n)
                .find(|&x| {
                    is_moved(&sets[x]) && search_len(&sets[x].bx, index.start()) > u.scan_limit
                })
                .unwrap_or(0) as u32;
            return Err(MergeError::ScanLimit {
                set,
                limit: u.scan_limit,
            });
        }
        // The exclusive scan (`scan_reduce`/`scan_add` on the GPU), as one sequential sweep.
        let mut total = 0u32;
        for c in &mut sc.edge_off[..n + 1] {
            (*c, total) = (total, total + *c);
        }
        let total = total as usize;
        if total == 0 {
            // No pair: the labels stay the identity, so the rest of the pass would only clear
            // the moved flags (merge_hull) and change nothing else. The GPU records the whole
            // pass; the CPU path skips to its result.
            for s in sets.iter_mut().filter(|s| s.flags & SET_LIVE != 0) {
                s.flags &= !SET_MOVED;
            }
            return Ok((merged, garbage));
        }
        resize_with_headroom(&mut sc.edges, total, [0; 2]);
        c.edges.capacity = total as u32;
        set_overlap_write(
            &u,
            sets,
            index.start(),
            index.items(),
            &sc.edge_off,
            &mut sc.edges,
            &mut sc.labels,
            &mut sc.hull,
            &mut c,
        );
        // Rounds until one changes nothing (at least one).
        let mut rounds = 0;
        loop {
            let mr = MergeRound {
                round: rounds,
                ..Default::default()
            };
            merge_label(&u, &mr, &sc.edges, &mut sc.labels, &mut c);
            rounds += 1;
            if c.label_rounds < rounds {
                break;
            }
        }
        let mr = MergeRound {
            round: rounds,
            ..Default::default()
        };
        merge_hull(&u, &mr, &sc.labels, sets, &mut sc.hull, &mut c);
        // (The CPU path searches the index in every pass: no moved list.)
        merge_apply(&u, &mr, &sc.labels, &sc.hull, sets, &mut c, &mut []);
        merged += c.merged as u64;
        garbage.add([
            c.garbage_cp as usize,
            c.garbage_k as usize,
            c.garbage_w as usize,
        ]);
        if c.merged == 0 && c.moved == 0 {
            // Nothing merged and no box changed: the index is that of the final sets.
            return Ok((merged, garbage));
        }
    }
}
