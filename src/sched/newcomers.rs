//! Stage `newcomer_schedule` of the scheduler: the segment pairs that meet in a grid cell new to one of
//! them this step and have no schedule entry yet, as new entries.
//!
//! Reads the cell boxes of this step and the last (`cells`, `prev_cells`), the grid of this step, the
//! entry table (sorted by `(seg_a, seg_b)`) and the exclusion rule; writes the new entries, sorted and
//! unique, into `fresh` (each due now with an unknown bound), through the candidate keys `cand`
//! (`seg_a << 32 | seg_b`, written per segment, then sorted and deduplicated: a pair met in several
//! new cells, or new to both segments, is one entry). The table is then merged with `fresh`
//! ([`super::entries::entries_merge`]), which keeps the invariant *every non-excluded segment pair
//! sharing a cell has exactly one entry* together with the drop of pairs that stopped sharing one.

use super::grid::SchedGrid;
use super::{CellBox, PairClass, PairRules, SchedEntry, ENTRY_DUE, ENTRY_MIXED};

/// Stage `newcomer_schedule`; returns the number of (segment, cell) newcomers.
#[allow(clippy::too_many_arguments)]
pub fn newcomer_schedule(
    cells: &[CellBox],
    prev_cells: &[CellBox],
    grid: &SchedGrid,
    entries: &[SchedEntry],
    rules: &dyn PairRules,
    cand: &mut Vec<u64>,
    fresh: &mut Vec<SchedEntry>,
) -> u64 {
    cand.clear();
    fresh.clear();
    let mut newcomers = 0u64;
    for (s, (cb, pb)) in cells.iter().zip(prev_cells).enumerate() {
        if cb.valid() && cb.within(pb) {
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
                    for t in grid.segments_in(c) {
                        if t as usize == s {
                            continue;
                        }
                        let (a, b) = (t.min(s as u32), t.max(s as u32));
                        cand.push(((a as u64) << 32) | b as u64);
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
        fresh.push(SchedEntry {
            seg_a: a,
            seg_b: b,
            d: -1.0,
            bin_flags: ENTRY_DUE
                | if class == PairClass::Mixed {
                    ENTRY_MIXED
                } else {
                    0
                },
        });
    }
    newcomers
}

/// The index of the entry of segments `a < b` in the sorted table, if any.
#[inline]
pub fn find_entry(entries: &[SchedEntry], a: u32, b: u32) -> Option<usize> {
    let key = ((a as u64) << 32) | b as u64;
    entries.binary_search_by_key(&key, |e| e.key()).ok()
}
