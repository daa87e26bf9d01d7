//! The schedule entry table and the stages that rewrite it. Entries form one table sorted by
//! `(seg_a, seg_b)`, without gaps: no free list, no per-segment adjacency. A step changes it only by
//! - `entries_drop`: compaction that keeps the entries whose segments still share a cell (an
//!   order-preserving filter: count → prefix sum → write on the GPU);
//! - `entries_merge`: merging in the sorted new entries of `newcomer_schedule` (each element's place
//!   is its rank in the other list: a data-parallel merge);
//! - `entries_release`: the entries holding pairs that a contact set gave back are flagged due, with
//!   their bound cleared (found by binary search; setting a flag is order-independent).
//!
//! Whether an entry is examined at a step is then a computed test ([`entry_due`]), not a queue.

use super::newcomers::find_entry;
use super::{box_bits, CellBox, Release, SchedEntry, ENTRY_BIN, ENTRY_DUE};
use crate::layout::{SchedUniform, SegmentMotion};

/// Stage `entries_drop`: removes (in order) the entries whose segments no longer share a cell. Only
/// segments that left a cell (`motion[s].left`) can lose one; returns the number dropped.
pub fn entries_drop(
    cells: &[CellBox],
    motion: &[SegmentMotion],
    entries: &mut Vec<SchedEntry>,
) -> u64 {
    let before = entries.len();
    entries.retain(|e| {
        let (a, b) = (e.seg_a as usize, e.seg_b as usize);
        (motion[a].left == 0 && motion[b].left == 0) || cells[a].intersects(&cells[b])
    });
    (before - entries.len()) as u64
}

/// Stage `entries_merge`: merges the sorted `fresh` entries (none of whose keys is in the table) into
/// the sorted table, in place from the back (no allocation once the table has the capacity).
pub fn entries_merge(entries: &mut Vec<SchedEntry>, fresh: &[SchedEntry]) {
    if fresh.is_empty() {
        return;
    }
    let n_old = entries.len();
    entries.resize(n_old + fresh.len(), SchedEntry::default());
    let (mut i, mut j, mut k) = (n_old, fresh.len(), n_old + fresh.len());
    while j > 0 {
        k -= 1;
        if i > 0 && entries[i - 1].key() > fresh[j - 1].key() {
            entries[k] = entries[i - 1];
            i -= 1;
        } else {
            entries[k] = fresh[j - 1];
            j -= 1;
        }
    }
}

/// Stage `entries_release`: flags due, with a cleared bound, every entry holding a pair that a
/// contact set released (in `old`, not in `new`): its bound ignored those pairs. `b`: quadrature
/// points per segment, `nseg`: segments (boxes are clamped to them: the list may come from a file).
pub fn entries_release(released: &[Release], b: u32, nseg: usize, entries: &mut [SchedEntry]) {
    let Some(last) = (nseg as u32).checked_sub(1) else {
        return;
    };
    for rel in released {
        let (old, new) = (rel.before, rel.after);
        if old[0] > old[1] || old[2] > old[3] {
            continue;
        }
        for sa in old[0] / b..=(old[1] / b).min(last) {
            for sb in (old[2] / b).max(sa + 1)..=(old[3] / b).min(last) {
                let ob = box_bits(old, sa, sb, b);
                let nb = box_bits(new, sa, sb, b);
                if (0..4).all(|w| ob[w] & !nb[w] == 0) {
                    continue;
                }
                if let Some(e) = find_entry(entries, sa, sb) {
                    let en = &mut entries[e];
                    en.d = -1.0;
                    en.bin_flags |= ENTRY_DUE;
                }
            }
        }
    }
}

/// Whether entry `e` is examined at step `n`: flagged due, in a bin examined now
/// (`n ≡ 0 (mod 2^λ)`, i.e. `λ ≤ tz` with `tz` = [`bins_due`]`(n)`), or one of its segments monitored
/// (`motion[s].mon`, read only when `any_mon`).
#[inline]
pub fn entry_due(e: &SchedEntry, tz: u32, motion: &[SegmentMotion], any_mon: bool) -> bool {
    e.bin_flags & ENTRY_DUE != 0
        || (e.bin_flags & ENTRY_BIN) <= tz
        || (any_mon && (motion[e.seg_a as usize].mon | motion[e.seg_b as usize].mon) != 0)
}

/// The largest bin examined at step `n`: `n mod 2^λ = 0` exactly for `λ ≤` the number of trailing
/// zeros of `n` (every bin at `n = 0`).
#[inline]
pub fn bins_due(n: u64) -> u32 {
    if n == 0 {
        u32::MAX
    } else {
        n.trailing_zeros()
    }
}

/// Stage `entries_keep` (kernel `shaders/entries_keep.wgsl`), the first half of `entries_drop` as a
/// kernel: `keep[e] = 1` when entry `e` stays (neither segment left a cell, or their cell boxes still
/// meet), else 0, and `keep[n] = 0`; an exclusive scan of `keep` gives each kept entry its slot and,
/// last, the number kept.
/// Also the group sums of the `n + 1` words into `scan_groups` ([`crate::scan::write_groups`]:
/// the scan is grouped; the CPU path passes none); the words of groups wholly past them are left as
/// they were (the kernel's workgroups there return at once).
pub fn entries_keep(
    sched: &SchedUniform,
    cells: &[CellBox],
    motion: &[SegmentMotion],
    entries: &[SchedEntry],
    keep: &mut [u32],
    scan_groups: &mut [u32],
) {
    let n = sched.num_entries as usize;
    for (k, e) in keep[..n].iter_mut().zip(&entries[..n]) {
        let (a, b) = (e.seg_a as usize, e.seg_b as usize);
        *k =
            ((motion[a].left == 0 && motion[b].left == 0) || cells[a].intersects(&cells[b])) as u32;
    }
    keep[n] = 0;
    crate::scan::write_groups(&keep[..=n], scan_groups);
}

/// Stage `entries_compact` (kernel `shaders/entries_compact.wgsl`), the second half: every kept entry
/// (`keep[e]` = 1) is copied to its slot of `entries_out`, the kept entries before it, found from the
/// group sums [`entries_keep`] wrote into `scan_groups` and the flags of its group before it
/// ([`crate::scan::group_prefix_walk`]: the flags need no scan). The same table as
/// [`entries_drop`]'s order-preserving filter. The thread of the flags' trailing element writes
/// `sched_p1`, the record of the kept table: `sched` (the step's `sched_p0`) with `num_entries` =
/// the kept entries (no `sched_sizes` dispatch of its own).
pub fn entries_compact(
    sched: &SchedUniform,
    entries: &[SchedEntry],
    keep: &[u32],
    scan_groups: &[u32],
    entries_out: &mut [SchedEntry],
    sched_p1: &mut SchedUniform,
) {
    let n = sched.num_entries as usize;
    let kept =
        crate::scan::group_prefix_walk(keep[..=n].iter().copied(), scan_groups, |e, v, at| {
            if v != 0 {
                entries_out[at as usize] = entries[e];
            }
        });
    *sched_p1 = SchedUniform {
        num_entries: kept,
        ..*sched
    };
}

/// The segment pairs of a released box as a rectangle `(sa0, sb0, width, rows)` of segment indices
/// (clamped to `nseg`): slot `k` of the rectangle is `(sa0 + k / width, sb0 + k % width)`, and only
/// slots with `sa < sb` are pairs. Empty (0 rows) for an empty box.
#[inline]
pub fn release_rect(bx: &[u32; 4], b: u32, nseg: u32) -> (u32, u32, u32, u32) {
    if bx[0] > bx[1] || bx[2] > bx[3] || nseg == 0 {
        return (0, 0, 0, 0);
    }
    let last = nseg - 1;
    let (sa0, sa1) = (bx[0] / b, (bx[1] / b).min(last));
    let (sb0, sb1) = (bx[2] / b, (bx[3] / b).min(last));
    if sa0 > sa1 || sb0 > sb1 {
        return (0, 0, 0, 0);
    }
    (sa0, sb0, sb1 - sb0 + 1, sa1 - sa0 + 1)
}

/// The segment-pair slots of a released box `bx`: its rectangle's ([`release_rect`]) width × rows.
#[inline]
pub fn release_slots(bx: &[u32; 4], b: u32, nseg: u32) -> u32 {
    let (_, _, w, rows) = release_rect(bx, b, nseg);
    w * rows
}

/// Stage `release_count` (kernel `shaders/release_count.wgsl`), the first half of `entries_release`
/// as kernels: `release_offsets[r]` = the slots of released box `r`'s rectangle of segment pairs
/// ([`release_rect`]), `release_offsets[num_released] = 0`; an exclusive scan gives each release its
/// first slot and the total.
/// Also the group sums of the `n + 1` words into `scan_groups` ([`crate::scan::write_groups`]:
/// the scan is grouped; the CPU path passes none); the words of groups wholly past them are left as
/// they were (the kernel's workgroups there return at once).
pub fn release_count(
    sched: &SchedUniform,
    released: &[Release],
    release_offsets: &mut [u32],
    scan_groups: &mut [u32],
) {
    let n = sched.num_released as usize;
    for (o, rel) in release_offsets[..n].iter_mut().zip(released) {
        *o = release_slots(&rel.before, sched.quadrature, sched.num_segments);
    }
    release_offsets[n] = 0;
    crate::scan::write_groups(&release_offsets[..=n], scan_groups);
}

/// Stage `release_mark` (kernel `shaders/release_mark.wgsl`), the second half: slot `t` (below the
/// total) finds its release by binary search in the scanned `release_offsets`, its segment pair in
/// the release's rectangle; a pair `sa < sb` that lost owned pairs (in `before`, not in `after`) flags
/// its entry (binary search in the table) due with a cleared bound. Several slots may flag one entry:
/// they write the same values. Flags exactly the entries [`entries_release`] flags.
pub fn release_mark(
    sched: &SchedUniform,
    released: &[Release],
    release_offsets: &[u32],
    entries: &mut [SchedEntry],
) {
    let nr = sched.num_released as usize;
    let total = release_offsets[nr];
    let b = sched.quadrature;
    let n = sched.num_entries as usize;
    for t in 0..total {
        // The last release whose first slot is at or before t (zero-slot releases share a start).
        let r = release_offsets[..nr].partition_point(|&o| o <= t) - 1;
        let rel = &released[r];
        let (sa0, sb0, w, _) = release_rect(&rel.before, b, sched.num_segments);
        let k = t - release_offsets[r];
        let (sa, sb) = (sa0 + k / w, sb0 + k % w);
        if sa >= sb {
            continue;
        }
        let ob = box_bits(rel.before, sa, sb, b);
        let nb = box_bits(rel.after, sa, sb, b);
        if (0..4).all(|x| ob[x] & !nb[x] == 0) {
            continue;
        }
        if let Some(e) = find_entry(&entries[..n], sa, sb) {
            entries[e].d = -1.0;
            entries[e].bin_flags |= ENTRY_DUE;
        }
    }
}

/// Stage `entries_merge_rank` (kernel `shaders/entries_merge_rank.wgsl`): [`entries_merge`] as a
/// data-parallel merge. The table's entry `i` goes to slot `i` plus the number of `fresh` entries with
/// a smaller key, fresh entry `j` to slot `j` plus the number of table entries with a smaller key,
/// each found by binary search (the two sorted lists share no key). `entries_out` holds
/// `num_entries + num_fresh` entries.
pub fn entries_merge_rank(
    sched: &SchedUniform,
    entries: &[SchedEntry],
    fresh: &[SchedEntry],
    entries_out: &mut [SchedEntry],
) {
    let (n, m) = (sched.num_entries as usize, sched.num_fresh as usize);
    let (old, new) = (&entries[..n], &fresh[..m]);
    for (i, e) in old.iter().enumerate() {
        entries_out[i + new.partition_point(|f| f.key() < e.key())] = *e;
    }
    for (j, f) in new.iter().enumerate() {
        entries_out[j + old.partition_point(|e| e.key() < f.key())] = *f;
    }
}
