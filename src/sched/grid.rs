//! Stage `grid_build` of the scheduler: one `(cell, segment)` item per grid cell of every segment's
//! cell box (`cells`), sorted by a [`SCHED_HASH_BITS`]-bit hash of the cell, stably, so that the items of one cell
//! form a run of equal hashes (shared with the few cells whose hash collides) in segment order, found
//! by binary search ([`SchedGrid::segments_in`]). The grid is a deterministic function of the cell
//! boxes, the same on both paths.
//!
//! An item is a [`KeyValue`]: `key_lo` the cell's hash ([`cell_hash`]), `key_hi` the cell's index
//! `j` within its segment's box (x-fastest, [`box_cell`]; the cell is recomputed from the box, so
//! items stay 16 bytes), `value` the segment. The sort runs on the low 32 bits of the key only, so
//! `key_hi` is carried along and the order is by hash, then by generation order `(segment, j)`.
//!
//! As kernels (the GPU path; the CPU run builds the same sorted list directly, [`grid_build`]):
//! 1. [`sched_grid_count`] (one thread per segment, plus one): each segment's cell count into
//!    `sched_grid_offsets[s]`, and `sched_grid_offsets[num_segments] = 0`;
//! 2. exclusive scan of `sched_grid_offsets` ([`crate::scan`]);
//! 3. [`sched_grid_write`] (one thread per slot of `sched_counters.grid.capacity`): slot `i` finds its
//!    segment by binary search and writes its item; slots past the total get
//!    [`SCHED_GRID_SENTINEL`] (key above every hash, so the stable sort keeps them last);
//!    count and overflow into `sched_counters.grid`;
//! 4. radix sort of `sched_grid` (capacity records, [`SCHED_GRID_KEY_BITS`] = 24 key bits: 3 passes
//!    of 8 bits; [`crate::sort`]).

use super::CellBox;
use crate::contact::grid::upper_segment;
use crate::layout::{KeyValue, SchedCounters, SchedUniform};

/// Items of one hash run a lookup scans at most (`ERROR_GRID_CELL_FULL` beyond): the loop bound of
/// `newcomer_count` / `newcomer_write`, well below lavapipe's 65,535 iterations per invocation.
pub const SCHED_MAX_CELL_RUN: u32 = 4096;

/// The record of unused grid and candidate slots: its key is above every real key.
pub const SCHED_GRID_SENTINEL: KeyValue = KeyValue {
    key_lo: u32::MAX,
    key_hi: u32::MAX,
    value: u32::MAX,
    _pad: 0,
};

/// Bits of [`cell_hash`] (`SCHED_HASH_BITS` in shaders/shared/sched.wgsl). Cells whose hashes
/// collide share a run of the sorted grid, which a lookup scans past (it compares the cells), so
/// fewer bits cost longer runs where there are many cells: 2²³ hashes leave about 1% of the relaxed
/// scarf's ~10⁵ cells sharing a run, and a garment of 10⁶ cells about 12%. In exchange the sort
/// takes 3 radix passes of 8 bits instead of the 4 a 31-bit hash needed.
pub const SCHED_HASH_BITS: u32 = 23;

/// Key bits the grid's items are sorted by: one above the hash, so that the sentinel's low bits
/// (all ones) sort after every hash.
pub const SCHED_GRID_KEY_BITS: u32 = SCHED_HASH_BITS + 1;

/// The [`SCHED_HASH_BITS`]-bit hash of a cell (shaders/shared/sched.wgsl `cell_hash`): the
/// coordinates folded in one at a time, each followed by an odd multiply and an xor-shift (all
/// bijections of u32, so cells differing in one coordinate never collide before the low bits are
/// dropped); u32 arithmetic wraps alike on both paths.
#[inline]
pub fn cell_hash(c: [i32; 3]) -> u32 {
    let mut h = (c[0] as u32).wrapping_mul(0x9E37_79B1);
    h ^= h >> 15;
    h = h.wrapping_add(c[1] as u32).wrapping_mul(0x85EB_CA77);
    h ^= h >> 13;
    h = h.wrapping_add(c[2] as u32).wrapping_mul(0xC2B2_AE3D);
    h ^= h >> 16;
    h >> (32 - SCHED_HASH_BITS)
}

/// The number of cells of a box (0 for an invalid one; at most `MAX_CELLS_PER_SEGMENT` for a box
/// that `aabb_raster_movement` made).
#[inline]
pub fn box_cell_count(cb: &CellBox) -> u32 {
    if !cb.valid() {
        return 0;
    }
    (0..3).fold(1u32, |n, a| n * (cb.hi[a] - cb.lo[a] + 1) as u32)
}

/// Cell `j` of box `cb`, x-fastest.
#[inline]
pub fn box_cell(cb: &CellBox, j: u32) -> [i32; 3] {
    let ex = (cb.hi[0] - cb.lo[0] + 1) as u32;
    let ey = (cb.hi[1] - cb.lo[1] + 1) as u32;
    [
        cb.lo[0] + (j % ex) as i32,
        cb.lo[1] + (j / ex % ey) as i32,
        cb.lo[2] + (j / (ex * ey)) as i32,
    ]
}

/// The cell of grid item `kv`.
#[inline]
pub fn item_cell(cells: &[CellBox], kv: &KeyValue) -> [i32; 3] {
    box_cell(&cells[kv.value as usize], kv.key_hi)
}

/// The items of cell `c` (hash `h`) among the sorted `items`, other than segment `skip`: calls `f`
/// with each one's segment, in order. Scans at most [`SCHED_MAX_CELL_RUN`] items of the hash run
/// and returns false when the run is longer (the kernels' loop bound).
#[inline]
pub fn for_each_in_cell(
    items: &[KeyValue],
    cells: &[CellBox],
    h: u32,
    c: [i32; 3],
    skip: u32,
    mut f: impl FnMut(u32),
) -> bool {
    let lo = items.partition_point(|kv| kv.key_lo < h);
    let end = items.len().min(lo + SCHED_MAX_CELL_RUN as usize);
    for kv in &items[lo..end] {
        if kv.key_lo != h {
            return true;
        }
        if kv.value != skip && item_cell(cells, kv) == c {
            f(kv.value);
        }
    }
    end == items.len() || items[end].key_lo != h
}

/// The scheduler's grid: the sorted items (and scratch for building them).
#[derive(Debug, Default)]
pub struct SchedGrid {
    items: Vec<KeyValue>,
    scratch: Vec<KeyValue>,
    bucket_start: Vec<u32>,
}

impl SchedGrid {
    /// The items, sorted by cell hash (stably: then by segment and cell index).
    pub fn items(&self) -> &[KeyValue] {
        &self.items
    }

    /// The segments with an item in cell `c` other than `skip`, in segment order, to `f`; false
    /// when the cell's hash run is longer than [`SCHED_MAX_CELL_RUN`] (then only its first items
    /// were seen).
    pub fn segments_in(
        &self,
        cells: &[CellBox],
        c: [i32; 3],
        skip: u32,
        f: impl FnMut(u32),
    ) -> bool {
        for_each_in_cell(&self.items, cells, cell_hash(c), c, skip, f)
    }

    /// Forgets the grid (it is rebuilt before it is next read).
    pub fn clear(&mut self) {
        self.items.clear();
        self.scratch.clear();
        self.bucket_start.clear();
    }
}

/// Stage `grid_build` (the CPU run): the sorted items of the cell boxes `cells` (invalid boxes have
/// none) — the list that `sched_grid_count`, the scan, `sched_grid_write` and the sort give on the
/// GPU. Linear time: a stable counting sort on the hash's top bits (about two items per bucket),
/// then an insertion sort, which only reorders within buckets.
pub fn grid_build(cells: &[CellBox], grid: &mut SchedGrid) {
    let raw = &mut grid.scratch;
    raw.clear();
    for (s, cb) in cells.iter().enumerate() {
        if !cb.valid() {
            continue;
        }
        let mut j = 0u32;
        for z in cb.lo[2]..=cb.hi[2] {
            for y in cb.lo[1]..=cb.hi[1] {
                for x in cb.lo[0]..=cb.hi[0] {
                    raw.push(KeyValue {
                        key_lo: cell_hash([x, y, z]),
                        key_hi: j,
                        value: s as u32,
                        _pad: 0,
                    });
                    j += 1;
                }
            }
        }
    }
    let nb = (2 * raw.len()).next_power_of_two().max(64);
    let bits = nb.trailing_zeros().min(SCHED_HASH_BITS);
    let shift = SCHED_HASH_BITS - bits;
    let starts = &mut grid.bucket_start;
    starts.clear();
    starts.resize(nb + 1, 0);
    for it in raw.iter() {
        starts[(it.key_lo >> shift) as usize + 1] += 1;
    }
    for i in 0..nb {
        starts[i + 1] += starts[i];
    }
    grid.items.clear();
    grid.items.resize(raw.len(), KeyValue::default());
    for it in raw.iter() {
        let b = (it.key_lo >> shift) as usize;
        grid.items[starts[b] as usize] = *it;
        starts[b] += 1;
    }
    // Stable insertion sort by the full hash (moves past strictly greater keys only).
    let items = &mut grid.items;
    for i in 1..items.len() {
        let x = items[i];
        let mut k = i;
        while k > 0 && items[k - 1].key_lo > x.key_lo {
            items[k] = items[k - 1];
            k -= 1;
        }
        items[k] = x;
    }
}

/// Stage `sched_grid_count` (kernel `shaders/sched_grid_count.wgsl`): `sched_grid_offsets[s]` = the
/// cell count of segment `s`'s box, and `sched_grid_offsets[num_segments] = 0`; an exclusive scan
/// gives each segment its first item and, last, the total.
/// Also the group sums of the `n + 1` words into `scan_groups` ([`crate::scan::write_groups`]:
/// the scan is grouped; the CPU path passes none).
pub fn sched_grid_count(
    sched: &SchedUniform,
    cells: &[CellBox],
    sched_grid_offsets: &mut [u32],
    scan_groups: &mut [u32],
) {
    let n = sched.num_segments as usize;
    for (o, cb) in sched_grid_offsets[..n].iter_mut().zip(&cells[..n]) {
        *o = box_cell_count(cb);
    }
    sched_grid_offsets[n] = 0;
    crate::scan::write_groups(&sched_grid_offsets[..=n], scan_groups);
}

/// Stage `sched_grid_write` (kernel `shaders/sched_grid_write.wgsl`): slot `i` of the capacity
/// (`sched_counters.grid.capacity`) gets item `i` (segment order, a segment's cells x-fastest) or,
/// past the total `sched_grid_offsets[num_segments]`, [`SCHED_GRID_SENTINEL`]; the total goes to
/// `sched_counters.grid.count`, with the overflow flag when it exceeds the capacity, and the plan
/// of the items' counted sort that `plan_spec` describes into `plan_out`
/// ([`crate::scan::plan_counted`]; `GpuSort::counted_into_inline`).
#[allow(clippy::too_many_arguments)]
pub fn sched_grid_write(
    sched: &SchedUniform,
    cells: &[CellBox],
    sched_grid_offsets: &[u32],
    sched_grid: &mut [KeyValue],
    sched_counters: &mut SchedCounters,
    plan_spec: &crate::layout::CountPlan,
    plan_out: &mut [u32],
) {
    let n = sched.num_segments;
    let total = sched_grid_offsets[n as usize];
    let cap = sched_counters.grid.capacity;
    sched_counters.grid.count = total;
    if total > cap {
        sched_counters.grid.overflow = 1;
    }
    crate::scan::plan_counted(plan_spec, total, plan_out);
    for i in 0..cap {
        sched_grid[i as usize] = if i < total {
            let s = upper_segment(sched_grid_offsets, n, i);
            let j = i - sched_grid_offsets[s as usize];
            KeyValue {
                key_lo: cell_hash(box_cell(&cells[s as usize], j)),
                key_hi: j,
                value: s,
                _pad: 0,
            }
        } else {
            SCHED_GRID_SENTINEL
        };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hash_has_its_bits_and_spreads() {
        let mut seen = std::collections::HashSet::new();
        for x in -20..20 {
            for y in -20..20 {
                for z in -5..5 {
                    let h = cell_hash([x, y, z]);
                    assert!(h < 1 << SCHED_HASH_BITS);
                    seen.insert(h);
                }
            }
        }
        // Collisions are allowed (lookups filter by cell) but must be rare: about n²/2²⁴ of them
        // (16,000 cells: 15 expected).
        assert!(seen.len() >= 40 * 40 * 10 - 60, "{} distinct", seen.len());
    }

    /// The CPU run's build equals the kernels' twins (count, scan, write, radix sort).
    #[test]
    fn build_equals_twins() {
        let mut cells = Vec::new();
        for s in 0..500i32 {
            let lo = [s % 17 - 8, (s * 7) % 13 - 6, s % 3];
            let ext = [1 + s % 3, 1 + (s / 3) % 2, 1 + (s / 7) % 2];
            let mut cb = CellBox {
                lo: [lo[0], lo[1], lo[2], 1],
                hi: [
                    lo[0] + ext[0] - 1,
                    lo[1] + ext[1] - 1,
                    lo[2] + ext[2] - 1,
                    0,
                ],
            };
            if s % 41 == 0 {
                cb = CellBox::default();
            }
            cells.push(cb);
        }
        let mut grid = SchedGrid::default();
        grid_build(&cells, &mut grid);
        let u = SchedUniform {
            num_segments: cells.len() as u32,
            ..Default::default()
        };
        let mut off = vec![0u32; cells.len() + 1];
        // The grouped scan, as on the GPU: the count writes the group sums it reads.
        let plan = crate::scan::ScanPlan::grouped(off.len() as u32);
        let mut partials = vec![0u32; plan.partials_len as usize];
        sched_grid_count(&u, &cells, &mut off, &mut partials);
        crate::scan::run_plan(&plan, &mut off, &mut partials);
        let total = off[cells.len()] as usize;
        let cap = total + 37;
        let mut counters = SchedCounters::default();
        counters.grid.capacity = cap as u32;
        let mut items = vec![KeyValue::default(); cap];
        // (No plan: a default spec plans nothing.)
        let no_plan = crate::layout::CountPlan::default();
        sched_grid_write(
            &u,
            &cells,
            &off,
            &mut items,
            &mut counters,
            &no_plan,
            &mut [],
        );
        let (mut s, mut h, mut p) = (Vec::new(), Vec::new(), Vec::new());
        crate::sort::radix_sort(&mut items, 32, &mut s, &mut h, &mut p);
        assert_eq!(counters.grid.count as usize, total);
        assert_eq!(grid.items(), &items[..total]);
        assert!(items[total..].iter().all(|kv| *kv == SCHED_GRID_SENTINEL));
        // Every lookup finds exactly the segments whose box holds the cell.
        for c in [[0, 0, 0], [-3, 2, 1], [5, -4, 2]] {
            let mut got = Vec::new();
            assert!(grid.segments_in(&cells, c, u32::MAX, |t| got.push(t)));
            let want: Vec<u32> = (0..cells.len() as u32)
                .filter(|&t| cells[t as usize].contains(c))
                .collect();
            assert_eq!(got, want, "{c:?}");
        }
    }
}
