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
        let (old, new) = (rel.old, rel.new);
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
pub fn entries_keep(
    sched: &SchedUniform,
    cells: &[CellBox],
    motion: &[SegmentMotion],
    entries: &[SchedEntry],
    keep: &mut [u32],
) {
    let n = sched.num_entries as usize;
    for (k, e) in keep[..n].iter_mut().zip(&entries[..n]) {
        let (a, b) = (e.seg_a as usize, e.seg_b as usize);
        *k =
            ((motion[a].left == 0 && motion[b].left == 0) || cells[a].intersects(&cells[b])) as u32;
    }
    keep[n] = 0;
}

/// Stage `entries_compact` (kernel `shaders/entries_compact.wgsl`), the second half: every kept entry
/// (`keep_offsets[e + 1] > keep_offsets[e]` after the scan) is copied to slot `keep_offsets[e]` of
/// `entries_out`. The same table as [`entries_drop`]'s order-preserving filter.
pub fn entries_compact(
    sched: &SchedUniform,
    entries: &[SchedEntry],
    keep_offsets: &[u32],
    entries_out: &mut [SchedEntry],
) {
    let n = sched.num_entries as usize;
    for e in 0..n {
        if keep_offsets[e + 1] > keep_offsets[e] {
            entries_out[keep_offsets[e] as usize] = entries[e];
        }
    }
}
