//! Stage `newcomer_schedule` of the scheduler: the segment pairs that meet in a grid cell new to one of
//! them this step and have no schedule entry yet, as new entries.
//!
//! Reads the cell boxes of this step and the last (`cells`, `prev_cells`), the grid of this step
//! ([`super::grid`]), the entry table (sorted by `(seg_a, seg_b)`) and the exclusion rule; writes the
//! new entries, sorted and unique, into `fresh` (each due now with an unknown bound), through
//! candidate keys (a pair met in several new cells, or new to both segments, is one entry). The
//! table is then merged with `fresh` ([`super::entries::entries_merge`]), which keeps the invariant
//! *every non-excluded segment pair sharing a cell has exactly one entry* together with the drop of
//! pairs that stopped sharing one.
//!
//! As kernels (each a twin here), over the sorted grid items:
//! 1. [`newcomer_count`] (one thread per grid slot, plus one): an item `(s, c)` whose cell is not in
//!    `prev_cells[s]` is a newcomer; it counts the other segments `t` of its cell (its hash run,
//!    found by binary search, filtered by cell) for which it is the pair's one writer
//!    ([`newcomer_emits`]) into `newcomer_offsets`, their sums per 256 items into `scan_groups`
//!    and the total into `sched_counters.cand.count`;
//! 2. (no scan: [`newcomer_write`] takes each item's first slot from those group sums and a
//!    workgroup scan, [`crate::scan::group_prefix_walk`]);
//! 3. [`newcomer_write`]: the same pairs as candidate keys ([`cand_key`]: `a << k | b`, `a < b`,
//!    `k` the bits of a segment index) into `sched_cand` (slots past the total left as they were);
//! 4. radix sort of the live candidates on `2k` key bits (on the GPU in the fewest passes, from
//!    `sched_cand_in` into `sched_cand` when ⌈2k / 8⌉ is odd);
//! 5. [`newcomer_keep`] (one thread per candidate slot, plus one): 1 for the first of equal keys
//!    whose pair is not excluded outright ([`pair_class`], from the exclusion tables `segments`,
//!    `quad_arc`, `seg_contact`, as the kernels of the exact path decide) and has no entry (binary
//!    search in `entries`), their sums per 256 candidates into `scan_groups` and the total into
//!    `sched_counters.fresh.count`;
//! 6. (no scan: [`newcomer_compact`] takes each kept candidate's slot from those group sums and a
//!    workgroup scan);
//! 7. [`newcomer_compact`]: the kept candidates as entries (`ENTRY_DUE`, `ENTRY_MIXED` for pairs of
//!    mixed class) into `fresh`, in key order: sorted and unique.
//!
//! **The listed search** replaces steps 1–3 on a step on which at most
//! [`NEWCOMER_LIST_MAX`] segments entered a cell (the GPU step's `newcomers` budget 1; at rest a few
//! do, and the grid then costs its count, scan, write, sort and search for them):
//! [`newcomer_list_write`] tests every segment's box against those of the segments
//! `segment_monitor` listed, and appends each pair that shares a cell new to the listed one, which
//! are the pairs the grid finds, and [`newcomer_list_compact`] does steps 4–7 in one workgroup for
//! up to [`NEWCOMER_LIST_CANDIDATES`] of them (two dispatches in all, where the grid's search is
//! some 30–36). Unlike the grid it has no longest cell run
//! (`ERROR_GRID_CELL_FULL`), so a cloth crushed into a few cells that the grid and the CPU run
//! stop on goes on there.
//!
//! **One candidate a pair.** A pair of boxes that share several cells new to one of them, or a
//! cell new to both, would be met once per such cell and side. Only the item at the pair's first
//! such cell ([`first_new_shared`]: x fastest, then y, then z, as [`super::box_cell`] numbers
//! a box's cells) writes it, and of a cell new to both only the lower segment's. Each thread
//! decides that from the two segments' boxes of this step and the last, so the list holds each
//! pair once (the sort after it still puts them in key order, and `newcomer_keep` still keeps the
//! first of equal keys, which the listed search below still needs). On a step of the swatch
//! (tests/gpu_sched.rs) that is 5.0 times fewer candidates with every cell new, and 2.8 times
//! fewer with a third of the boxes moved by a cell; the first capacities give them two fifths of
//! the room ([`crate::acl::gpu::AclCaps::for_segments`]).
//!
//! The CPU run ([`newcomer_schedule`]) visits only the segments whose box is not within last step's
//! (most steps none) and looks their new cells up in the same grid; its `fresh` equals the
//! kernels' (tests/gpu_sched.rs).

use super::grid::{cell_hash, for_each_in_cell, item_cell, SchedGrid};
use super::{CellBox, PairClass, PairRules, SchedEntry, SchedError, ENTRY_DUE, ENTRY_MIXED};
use crate::contact::exclusion_class;
use crate::layout::{
    KeyValue, SchedCounters, SchedUniform, SegmentContact, ERROR_GRID_CELL_FULL,
    NEWCOMER_LIST_CANDIDATES, NEWCOMER_LIST_MAX,
};
use crate::state::Segment;

/// Stage `newcomer_schedule` (the CPU run); returns the number of (segment, cell) newcomers, or
/// [`SchedError::CellFull`] when a cell's hash run is longer than the kernels scan.
#[allow(clippy::too_many_arguments)]
pub fn newcomer_schedule(
    cells: &[CellBox],
    prev_cells: &[CellBox],
    grid: &SchedGrid,
    entries: &[SchedEntry],
    rules: &dyn PairRules,
    cand: &mut Vec<u64>,
    fresh: &mut Vec<SchedEntry>,
) -> Result<u64, SchedError> {
    cand.clear();
    fresh.clear();
    let mut newcomers = 0u64;
    for (s, (cb, pb)) in cells.iter().zip(prev_cells).enumerate() {
        if !cb.valid() || cb.within(pb) {
            // No cell of `cb` is new (most segments, most steps).
            continue;
        }
        for z in cb.lo[2]..=cb.hi[2] {
            for y in cb.lo[1]..=cb.hi[1] {
                for x in cb.lo[0]..=cb.hi[0] {
                    let c = [x, y, z];
                    if pb.contains(c) {
                        continue;
                    }
                    newcomers += 1;
                    let s = s as u32;
                    let ok = grid.segments_in(cells, c, s, |t| {
                        if newcomer_emits(cells, prev_cells, s, t, c) {
                            let (a, b) = (t.min(s), t.max(s));
                            cand.push(((a as u64) << 32) | b as u64);
                        }
                    });
                    if !ok {
                        return Err(SchedError::CellFull { seg: s as usize });
                    }
                }
            }
        }
    }
    cand.sort_unstable();
    cand.dedup();
    for &key in cand.iter() {
        let (a, b) = ((key >> 32) as u32, key as u32);
        let class = rules.segment_class(a, b);
        if class == PairClass::All || find_entry(entries, a, b).is_some() {
            continue;
        }
        fresh.push(new_entry(a, b, class));
    }
    Ok(newcomers)
}

/// The first cell (x fastest, then y, then z) that the valid boxes `cs` and `ct` (two segments'
/// of this step, which share a cell) share and that is not in both `ps` and `pt` (theirs of the
/// last step), i.e. new to one of them; `None` when every shared cell is in both. The shared
/// cells are the box `I = cs ∩ ct`, those in both old boxes the box `P = ps ∩ pt` (empty when one
/// is invalid or they do not meet); walking `I` in order from its first cell, the first cell
/// outside `P` is that first cell, or (when `P` holds it, and so every cell before the walk
/// leaves `P`) the cell just past `P` in the first axis, x then y then z, on which `P` ends
/// inside `I`. (shaders/shared/sched.wgsl `first_new_shared`.)
#[inline]
pub fn first_new_shared(
    cs: &CellBox,
    ps: &CellBox,
    ct: &CellBox,
    pt: &CellBox,
) -> Option<[i32; 3]> {
    let lo: [i32; 3] = std::array::from_fn(|a| cs.lo[a].max(ct.lo[a]));
    let hi: [i32; 3] = std::array::from_fn(|a| cs.hi[a].min(ct.hi[a]));
    if !(ps.valid() && pt.valid()) {
        return Some(lo);
    }
    let plo: [i32; 3] = std::array::from_fn(|a| ps.lo[a].max(pt.lo[a]));
    let phi: [i32; 3] = std::array::from_fn(|a| ps.hi[a].min(pt.hi[a]));
    if !(0..3).all(|a| plo[a] <= lo[a] && lo[a] <= phi[a]) {
        return Some(lo);
    }
    if phi[0] < hi[0] {
        Some([phi[0] + 1, lo[1], lo[2]])
    } else if phi[1] < hi[1] {
        Some([lo[0], phi[1] + 1, lo[2]])
    } else if phi[2] < hi[2] {
        Some([lo[0], lo[1], phi[2] + 1])
    } else {
        None
    }
}

/// Whether the grid item of segment `s` at cell `c` (a cell new to `s`, which segment `t`'s box
/// holds too) writes the candidate pair `(s, t)`: `c` is the pair's [`first_new_shared`] cell,
/// and `s` the one segment it is new to or the lower of the two. So every pair that shares a cell
/// new to one of them is written once. (shaders/shared/sched.wgsl `newcomer_emits`.)
#[inline]
pub fn newcomer_emits(
    cells: &[CellBox],
    prev_cells: &[CellBox],
    s: u32,
    t: u32,
    c: [i32; 3],
) -> bool {
    let (cs, ps) = (&cells[s as usize], &prev_cells[s as usize]);
    let (ct, pt) = (&cells[t as usize], &prev_cells[t as usize]);
    first_new_shared(cs, ps, ct, pt) == Some(c) && (s < t || pt.contains(c))
}

#[inline]
fn new_entry(a: u32, b: u32, class: PairClass) -> SchedEntry {
    SchedEntry {
        seg_a: a,
        seg_b: b,
        d: -1.0,
        bin_flags: ENTRY_DUE
            | if class == PairClass::Mixed {
                ENTRY_MIXED
            } else {
                0
            },
    }
}

/// The index of the entry of segments `a < b` in the sorted table, if any.
#[inline]
pub fn find_entry(entries: &[SchedEntry], a: u32, b: u32) -> Option<usize> {
    let key = ((a as u64) << 32) | b as u64;
    entries.binary_search_by_key(&key, |e| e.key()).ok()
}

/// Bits of a segment index in a candidate key: enough for `num_segments − 1` (at least 1).
#[inline]
pub fn cand_key_bits(num_segments: u32) -> u32 {
    32 - (num_segments.max(2) - 1).leading_zeros()
}

/// The candidate key of segments `a < b`: `a << k | b` (`k` = [`cand_key_bits`]), as a sort record.
#[inline]
pub fn cand_key(a: u32, b: u32, k: u32) -> KeyValue {
    crate::sort::record(((a as u64) << k) | b as u64, 0)
}

/// The segments `(a, b)` of a candidate key.
#[inline]
pub fn cand_pair(kv: &KeyValue, k: u32) -> (u32, u32) {
    let key = ((kv.key_hi as u64) << 32) | kv.key_lo as u64;
    ((key >> k) as u32, (key & ((1u64 << k) - 1)) as u32)
}

/// The exclusion rule's class of segments `a ≠ b` from the kernels' tables (shaders/shared/
/// sched.wgsl `pair_class`): different yarns are clear; on one yarn, the classes of the four corner
/// pairs of quadrature points (`quad_arc`, loop length from `seg_contact`) decide, exactly as
/// `Exclusion::segment_exclusion` does (all near: every pair excluded; none: clear; else mixed).
#[inline]
pub fn pair_class(
    sched: &SchedUniform,
    segments: &[Segment],
    quad_arc: &[f32],
    seg_contact: &[SegmentContact],
    a: u32,
    b: u32,
) -> PairClass {
    if segments[a as usize].yarn != segments[b as usize].yarn {
        return PairClass::Clear;
    }
    if a == b {
        return PairClass::Mixed;
    }
    let q = sched.quadrature;
    let loop_len = seg_contact[a as usize].loop_len;
    let class = |ka: u32, kb: u32| {
        exclusion_class(
            quad_arc[(a * q + ka) as usize],
            quad_arc[(b * q + kb) as usize],
            loop_len,
            sched.exclusion_arc,
        )
    };
    let c = [
        class(0, 0),
        class(0, q - 1),
        class(q - 1, 0),
        class(q - 1, q - 1),
    ];
    if c.iter().all(|&x| x == c[0]) {
        if c[0] == 1 {
            PairClass::Clear
        } else {
            PairClass::All
        }
    } else {
        PairClass::Mixed
    }
}

/// The grid items the kernels read: the first `min(count, capacity)` slots.
#[inline]
fn grid_items<'a>(sched_grid: &'a [KeyValue], c: &SchedCounters) -> &'a [KeyValue] {
    &sched_grid[..c.grid.count.min(c.grid.capacity) as usize]
}

/// The other segments of a newcomer item's cell whose pair it writes ([`newcomer_emits`]), to `f`;
/// `None` when the item's cell is not new to its segment, else whether the run was scanned in
/// full.
#[inline]
fn newcomer_pairs(
    items: &[KeyValue],
    cells: &[CellBox],
    prev_cells: &[CellBox],
    kv: &KeyValue,
    mut f: impl FnMut(u32),
) -> Option<bool> {
    let s = kv.value;
    let c = item_cell(cells, kv);
    if prev_cells[s as usize].contains(c) {
        return None;
    }
    Some(for_each_in_cell(items, cells, cell_hash(c), c, s, |t| {
        if newcomer_emits(cells, prev_cells, s, t, c) {
            f(t)
        }
    }))
}

/// Stage `newcomer_count` (kernel `shaders/newcomer_count.wgsl`): `newcomer_offsets[i]` = for grid
/// item `i` whose cell is new to its segment, the number of other segments in that cell whose pair
/// it writes ([`newcomer_emits`]), else 0; the slots past the items are left as they were
/// ([`newcomer_write`] reads none). Newcomer items are counted into `sched_counters.newcomers`; a
/// hash run longer than [`super::grid::SCHED_MAX_CELL_RUN`] raises `ERROR_GRID_CELL_FULL` and
/// lowers `first_bad_segment` to the item's segment.
/// Also the group sums of the items' words into `scan_groups` ([`crate::scan::write_groups`], from
/// which [`newcomer_write`] places each item's pairs; the words of groups wholly past the items are
/// left as they were: the kernel's workgroups there return at once), and their total added to
/// `sched_counters.cand.count` (0 at the step's start): the candidates' count.
pub fn newcomer_count(
    sched: &SchedUniform,
    cells: &[CellBox],
    prev_cells: &[CellBox],
    sched_grid: &[KeyValue],
    newcomer_offsets: &mut [u32],
    sched_counters: &mut SchedCounters,
    scan_groups: &mut [u32],
) {
    let _ = sched;
    let items = grid_items(sched_grid, sched_counters);
    let n = items.len();
    // The lowest segment whose lookup met a hash run past the bound.
    let mut full = u32::MAX;
    for (o, kv) in newcomer_offsets[..n].iter_mut().zip(items) {
        let mut c = 0;
        if let Some(ok) = newcomer_pairs(items, cells, prev_cells, kv, |_| c += 1) {
            sched_counters.newcomers += 1;
            if !ok {
                full = full.min(kv.value);
            }
        }
        *o = c;
    }
    if full != u32::MAX {
        sched_counters.errors |= ERROR_GRID_CELL_FULL;
        sched_counters.first_bad_segment = sched_counters.first_bad_segment.min(full);
    }
    let live = &mut scan_groups[..n.div_ceil(crate::scan::GROUP as usize)];
    crate::scan::write_groups(&newcomer_offsets[..n], live);
    let total = live.iter().fold(0u32, |a, &g| a.wrapping_add(g));
    sched_counters.cand.count = sched_counters.cand.count.wrapping_add(total);
}

/// Stage `newcomer_write` (kernel `shaders/newcomer_write.wgsl`): the pairs of [`newcomer_count`]
/// (its items with a nonzero count, `newcomer_offsets`) as candidate keys, each item's from its
/// first slot on (the counts of the items before it, from `newcomer_count`'s group sums
/// `scan_groups`: [`crate::scan::group_prefix_walk`], the kernel's `group_prefix`), those within
/// `sched_counters.cand.capacity`; the slots past the total are left as they were (the counted
/// sort and its readers stop at the total). The total, which `newcomer_count` added into
/// `sched_counters.cand.count`, raises its overflow flag past the capacity, and gives the grid over
/// the candidates that `plan_spec` describes (`newcomer_keep`'s and `newcomer_compact`'s) into
/// `plan_out` ([`crate::scan::plan_counted`]).
#[allow(clippy::too_many_arguments)]
pub fn newcomer_write(
    sched: &SchedUniform,
    cells: &[CellBox],
    prev_cells: &[CellBox],
    sched_grid: &[KeyValue],
    newcomer_offsets: &[u32],
    scan_groups: &[u32],
    sched_cand: &mut [KeyValue],
    sched_counters: &mut SchedCounters,
    plan_spec: &crate::layout::CountPlan,
    plan_out: &mut [u32],
) {
    let k = cand_key_bits(sched.num_segments);
    let ccap = sched_counters.cand.capacity as usize;
    let items = grid_items(sched_grid, sched_counters);
    let total = sched_counters.cand.count;
    if total as usize > ccap {
        sched_counters.cand.overflow = 1;
    }
    crate::scan::plan_counted(plan_spec, total, plan_out);
    crate::scan::group_prefix_walk(
        newcomer_offsets[..items.len()].iter().copied(),
        scan_groups,
        |i, count, first| {
            // (A nonzero count marks a newcomer with partners.)
            if count == 0 {
                return;
            }
            let mut slot = first as usize;
            let kv = &items[i];
            let s = kv.value;
            let c = item_cell(cells, kv);
            for_each_in_cell(items, cells, kv.key_lo, c, s, |t| {
                if !newcomer_emits(cells, prev_cells, s, t, c) {
                    return;
                }
                if slot < ccap {
                    sched_cand[slot] = cand_key(t.min(s), t.max(s), k);
                }
                slot += 1;
            });
        },
    );
}

/// Stage `newcomer_list_write` (kernel `shaders/newcomer_list_write.wgsl`), the listed search: when
/// at most [`NEWCOMER_LIST_MAX`] segments entered a cell (`sched_counters.entered`, the first
/// `entered` of `movers`, as `segment_monitor` lists them), every pair of a listed segment `m` and
/// another segment `t` whose (kept) boxes share a cell that is not in `prev_cells[m]` as a
/// candidate key ([`cand_key`]), appended from slot `sched_counters.cand.count` on (those below
/// its capacity; past it the overflow flag): segment by segment, each against the list in order
/// (the kernel appends in the order its threads come, and the sort after both makes them equal).
/// With more segments listed, nothing.
pub fn newcomer_list_write(
    sched: &SchedUniform,
    cells: &[CellBox],
    prev_cells: &[CellBox],
    movers: &[u32],
    sched_cand: &mut [KeyValue],
    sched_counters: &mut SchedCounters,
) {
    let n = sched_counters.entered;
    if n > NEWCOMER_LIST_MAX {
        return;
    }
    let k = cand_key_bits(sched.num_segments);
    let ccap = sched_counters.cand.capacity;
    for (t, ct) in cells[..sched.num_segments as usize].iter().enumerate() {
        let t = t as u32;
        if !ct.valid() {
            continue;
        }
        for &m in &movers[..n as usize] {
            let cm = &cells[m as usize];
            if m == t || !cm.intersects(ct) {
                continue;
            }
            let mut shared = *cm;
            for a in 0..3 {
                shared.lo[a] = cm.lo[a].max(ct.lo[a]);
                shared.hi[a] = cm.hi[a].min(ct.hi[a]);
            }
            shared.hi[3] = 0;
            if shared.within(&prev_cells[m as usize]) {
                continue;
            }
            let slot = sched_counters.cand.count;
            sched_counters.cand.count += 1;
            if slot < ccap {
                sched_cand[slot as usize] = cand_key(m.min(t), m.max(t), k);
            } else {
                sched_counters.cand.overflow = 1;
            }
        }
    }
}

/// Stage `newcomer_list_compact` (kernel `shaders/newcomer_list_compact.wgsl`), the listed search's
/// end in place of steps 4–7: the first `sched_counters.cand.count` candidates of `sched_cand`
/// sorted, and each first of its key whose pair is not excluded outright ([`pair_class`]) and has
/// no entry in `entries` (the first `sched.num_entries`) written in key order as a new entry into
/// `fresh` (those below `sched_counters.fresh.capacity`), the total and its overflow flag into
/// `sched_counters.fresh`: what the sort, [`newcomer_keep`], its scan and [`newcomer_compact`] make
/// of them. With more candidates than [`NEWCOMER_LIST_CANDIDATES`] or their capacity, no entry.
#[allow(clippy::too_many_arguments)]
pub fn newcomer_list_compact(
    sched: &SchedUniform,
    segments: &[Segment],
    quad_arc: &[f32],
    seg_contact: &[SegmentContact],
    entries: &[SchedEntry],
    sched_cand: &[KeyValue],
    fresh: &mut [SchedEntry],
    sched_counters: &mut SchedCounters,
) {
    let n = sched_counters.cand.count;
    if n > NEWCOMER_LIST_CANDIDATES.min(sched_counters.cand.capacity) {
        sched_counters.fresh.count = 0;
        return;
    }
    let k = cand_key_bits(sched.num_segments);
    let key = |kv: &KeyValue| ((kv.key_hi as u64) << 32) | kv.key_lo as u64;
    let mut keys: Vec<KeyValue> = sched_cand[..n as usize].to_vec();
    keys.sort_unstable_by_key(key);
    keys.dedup_by_key(|kv| key(kv));
    let table = &entries[..sched.num_entries as usize];
    let fcap = sched_counters.fresh.capacity;
    let mut total = 0u32;
    for kv in &keys {
        let (a, b) = cand_pair(kv, k);
        let class = pair_class(sched, segments, quad_arc, seg_contact, a, b);
        if class == PairClass::All || find_entry(table, a, b).is_some() {
            continue;
        }
        if total < fcap {
            fresh[total as usize] = new_entry(a, b, class);
        }
        total += 1;
    }
    sched_counters.fresh.count = total;
    if total > fcap {
        sched_counters.fresh.overflow = 1;
    }
}

/// Stage `newcomer_keep` (kernel `shaders/newcomer_keep.wgsl`): `fresh_offsets[i]` = 1 for sorted
/// candidate `i` (below min(count, capacity) of `sched_counters.cand`) that is the first of its
/// key, whose pair is not excluded outright ([`pair_class`]) and has no entry in the first
/// `sched.num_entries` of `entries`, else 0 (`fresh_offsets[capacity]` = 0). Also the flags'
/// group sums into `scan_groups` ([`crate::scan::write_groups`], from which [`newcomer_compact`]
/// places the kept candidates), and their total added to `sched_counters.fresh.count` (0 at the
/// step's start): the new entries' count.
#[allow(clippy::too_many_arguments)]
pub fn newcomer_keep(
    sched: &SchedUniform,
    segments: &[Segment],
    quad_arc: &[f32],
    seg_contact: &[SegmentContact],
    entries: &[SchedEntry],
    sched_cand: &[KeyValue],
    fresh_offsets: &mut [u32],
    scan_groups: &mut [u32],
    sched_counters: &mut SchedCounters,
) {
    let k = cand_key_bits(sched.num_segments);
    let ccap = sched_counters.cand.capacity as usize;
    let n = (sched_counters.cand.count as usize).min(ccap);
    let table = &entries[..sched.num_entries as usize];
    for i in 0..ccap {
        fresh_offsets[i] = (i < n && (i == 0 || sched_cand[i - 1] != sched_cand[i]) && {
            let (a, b) = cand_pair(&sched_cand[i], k);
            pair_class(sched, segments, quad_arc, seg_contact, a, b) != PairClass::All
                && find_entry(table, a, b).is_none()
        }) as u32;
    }
    fresh_offsets[ccap] = 0;
    crate::scan::write_groups(&fresh_offsets[..=ccap], scan_groups);
    let total = scan_groups.iter().fold(0u32, |a, &g| a.wrapping_add(g));
    sched_counters.fresh.count = sched_counters.fresh.count.wrapping_add(total);
}

/// Stage `newcomer_compact` (kernel `shaders/newcomer_compact.wgsl`): every kept candidate
/// (`fresh_offsets[i]` = 1 for `i` below the live candidates) becomes a new entry, due, with an
/// unknown bound and `ENTRY_MIXED` for a pair of mixed class, at its slot of `fresh`: the kept
/// candidates before it, from [`newcomer_keep`]'s group sums `scan_groups`
/// ([`crate::scan::group_prefix_walk`], the kernel's `group_prefix`), within
/// `sched_counters.fresh.capacity`. The total, which `newcomer_keep` added into
/// `sched_counters.fresh.count`, raises its overflow flag past the capacity.
#[allow(clippy::too_many_arguments)]
pub fn newcomer_compact(
    sched: &SchedUniform,
    segments: &[Segment],
    quad_arc: &[f32],
    seg_contact: &[SegmentContact],
    sched_cand: &[KeyValue],
    fresh_offsets: &[u32],
    scan_groups: &[u32],
    fresh: &mut [SchedEntry],
    sched_counters: &mut SchedCounters,
) {
    let k = cand_key_bits(sched.num_segments);
    let ccap = sched_counters.cand.capacity as usize;
    let fcap = sched_counters.fresh.capacity;
    if sched_counters.fresh.count > fcap {
        sched_counters.fresh.overflow = 1;
    }
    let n = (sched_counters.cand.count as usize).min(ccap);
    crate::scan::group_prefix_walk(
        fresh_offsets[..n].iter().copied(),
        scan_groups,
        |i, keep, slot| {
            if keep != 0 && slot < fcap {
                let (a, b) = cand_pair(&sched_cand[i], k);
                let class = pair_class(sched, segments, quad_arc, seg_contact, a, b);
                fresh[slot as usize] = new_entry(a, b, class);
            }
        },
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cand_keys_round_trip_and_order() {
        for n in [3u32, 1000, 65_536, 65_537, 1 << 31, u32::MAX] {
            let k = cand_key_bits(n);
            assert!(((n - 1) as u64) < (1u64 << k));
            let pairs = [(0, 1), (0, n - 1), (n / 2, n - 1), (n - 2, n - 1)];
            let mut last = None;
            for (a, b) in pairs {
                let kv = cand_key(a, b, k);
                assert_eq!(cand_pair(&kv, k), (a, b));
                let key = crate::sort::key(&kv);
                assert!(key < crate::sort::key(&crate::sched::SCHED_GRID_SENTINEL));
                if let Some(l) = last {
                    assert!(key >= l);
                }
                last = Some(key);
            }
        }
        assert_eq!(cand_key_bits(2), 1);
        assert_eq!(cand_key_bits(1000), 10);
    }

    /// `first_new_shared` against walking the shared cells in `box_cell`'s order, on every
    /// combination of small boxes drawn by a fixed generator (some invalid, some not meeting):
    /// each branch (the first cell, past `P` in x, in y, in z, none) is taken.
    #[test]
    fn first_new_shared_is_the_first_cell_of_the_walk() {
        let mut state = 0x2545_f491_4f6c_dd1du64;
        let mut next = |n: i32| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            (state % n as u64) as i32
        };
        // A box of this step; the last step's: the same grown or shrunk by up to a cell on each
        // side (a segment moves little), one in 8 invalid.
        let mut draw = || {
            let mut b = CellBox::default();
            let mut p = CellBox::default();
            for a in 0..3 {
                b.lo[a] = next(4) - 2;
                b.hi[a] = b.lo[a] + next(3);
                p.lo[a] = b.lo[a] + next(3) - 1;
                p.hi[a] = (b.hi[a] + next(3) - 1).max(p.lo[a]);
            }
            b.lo[3] = 1;
            p.lo[3] = (next(8) != 0) as i32;
            (b, p)
        };
        let mut branches = [0u32; 5];
        for _ in 0..100_000 {
            let ((cs, ps), (ct, pt)) = (draw(), draw());
            if !cs.intersects(&ct) {
                continue;
            }
            let mut shared = cs;
            for a in 0..3 {
                shared.lo[a] = cs.lo[a].max(ct.lo[a]);
                shared.hi[a] = cs.hi[a].min(ct.hi[a]);
            }
            let walk = (0..super::super::box_cell_count(&shared))
                .map(|j| super::super::box_cell(&shared, j))
                .find(|&c| !(ps.contains(c) && pt.contains(c)));
            let got = first_new_shared(&cs, &ps, &ct, &pt);
            assert_eq!(got, walk, "{cs:?} {ps:?} {ct:?} {pt:?}");
            let lo = [shared.lo[0], shared.lo[1], shared.lo[2]];
            branches[match got {
                None => 4,
                Some(c) if c == lo => 0,
                Some(c) if c[0] != lo[0] => 1,
                Some(c) if c[1] != lo[1] => 2,
                Some(_) => 3,
            }] += 1;
        }
        assert!(branches.iter().all(|&n| n > 100), "{branches:?}");
    }
}
