//! The hashed uniform grid over spline segments and the candidate segment pairs it yields (DESIGN
//! §5.1), as GPU kernels and their CPU twins: the one grid construction of the project.
//!
//! Stages, each a kernel of the same name (shaders/NAME.wgsl), in dispatch order:
//! 1. [`aabb_raster`] (one thread per segment, plus one): the segment's exact AABB (the roots of
//!    `y'`, `spline::segment_aabb` in f32) padded by `r·`[`PAD_FACTOR`], its box of grid cells, and
//!    its cell count into `grid_offsets[s]` (`grid_offsets[num_segments] = 0`);
//! 2. exclusive prefix sum of `grid_offsets` (`num_segments + 1` elements; [`crate::scan`]): the
//!    first entry of every segment, and the total at the end;
//! 3. [`grid_write`] (one thread per entry slot of the capacity): entry `i` finds its segment by
//!    binary search in `grid_offsets` and writes `(cell key, segment)`; entries are in segment
//!    order, cells of a segment x-fastest; slots past the total get the [`SENTINEL`] key. The count
//!    goes to `Counters::grid_entries` (overflow when it exceeds the capacity);
//! 4. radix sort of the entries by the low word of the cell key ([`pack_key`], [`GRID_KEY_BITS`]),
//!    stable, so each cell's entries stay in segment order; on the GPU from `grid_entries_in`
//!    into `grid_entries`, 3 passes, its live entries only (the slots past them keep what they
//!    held: the next stages stop at the count);
//! 5. [`candidate_count`] (one thread per entry slot, plus one): live entry `i` counts the pairs it forms
//!    with the entries after it in the same cell — padded boxes overlapping, and this cell being
//!    the lowest cell both boxes cover (the per-axis maximum of their lower cells), so a pair met
//!    in several cells is emitted from exactly one;
//! 6. exclusive prefix sum of `cand_offsets` (capacity + 1 elements);
//! 7. [`candidate_write`] (one thread per entry slot): the same pairs, as `[min, max]` segment
//!    indices, at their offsets; count and overflow in `Counters::candidate_pairs`.
//!
//! So the candidates are every segment pair with overlapping padded boxes, each once, in (cell key,
//! entry) order: a deterministic function of the positions.
//!
//! Cell keys pack the cell coordinates relative to the grid origin (`params.grid_origin_*`, cell
//! width `params.grid_cell`, `params.grid_inv_cell = 1/grid_cell` computed on the host so that both
//! paths multiply by the same number) as 18 bits per axis, offset by 2¹⁷ ([`pack_key`]). A segment
//! beyond ±2¹⁷ cells or over more than [`MAX_CELLS_PER_SEGMENT`] cells
//! is left out with `ERROR_GRID_RANGE`; a non-finite box raises `ERROR_NAN_POSITION` with the
//! lowest non-finite control point in `first_bad_point`.
//!
//! The twins compute in f32 in the kernels' order of operations. On an implementation that neither
//! fuses multiply-adds nor rounds division and square root differently from IEEE (lavapipe; the
//! CPU), both paths select the same cells and pairs bit for bit (tests/gpu_exact.rs).

use crate::layout::{
    Counters, KeyValue, Params, Segment, SegmentBox, ERROR_GRID_CELL_FULL, ERROR_GRID_RANGE,
    ERROR_NAN_POSITION,
};
use crate::math::V3;
use crate::spline::segment_aabb;
use rayon::prelude::*;

/// The AABB padding is `r` times this (1 + 2⁻¹³, exactly representable, so both paths use the same
/// f32): the hair above 1 keeps a pair at exactly `2r` after rounding a candidate.
pub const PAD_FACTOR: f32 = 1.0 + 1.0 / 8192.0;
/// Cells per axis on either side of the grid origin that a key can name (18 bits per axis: at a
/// cell of 0.25 cm, 327 m either side).
pub const GRID_HALF_RANGE: i32 = 1 << 17;
/// A segment covering more cells than this is left out (`ERROR_GRID_RANGE`): the cloth exploded or
/// `contact.grid_cell` is far smaller than the segments.
pub const MAX_CELLS_PER_SEGMENT: u32 = 1 << 16;
/// Entries of one cell an entry is compared with at most (`ERROR_GRID_CELL_FULL` beyond): the loop
/// bound of `candidate_count` / `candidate_write`.
pub const MAX_CELL_RUN: u32 = 4096;
/// The key of unused entry slots: above every real key (which has bit 63 clear).
pub const SENTINEL: u32 = u32::MAX;

/// Sets the grid's origin and `grid_inv_cell` (from `grid_cell`) in `params`.
pub fn set_grid_frame(params: &mut Params, origin: [f32; 3]) {
    params.grid_origin_x = origin[0];
    params.grid_origin_y = origin[1];
    params.grid_origin_z = origin[2];
    params.grid_inv_cell = 1.0 / params.grid_cell;
}

/// The grid origin for positions `pos`: their centroid (summed in f64, rounded to f32), or `None`
/// when it is not finite.
pub fn grid_origin(pos: &[[f32; 4]]) -> Option<[f32; 3]> {
    let mut c = [0f64; 3];
    for p in pos {
        for a in 0..3 {
            c[a] += p[a] as f64;
        }
    }
    let n = pos.len().max(1) as f64;
    let o = c.map(|v| (v / n) as f32);
    o.iter().all(|v| v.is_finite()).then_some(o)
}

/// The packed key `(lo, hi)` of cell `c` (coordinates within ±2¹⁷, offset to 18 unsigned bits
/// `x, y, z`): `lo` holds the low 8 bits of each of `x, y, z` (24 bits), `hi` the rest (10 bits
/// each; below 2³⁰, so never the sentinel). The entries are sorted by `lo` alone — a 24-bit key,
/// 3 radix passes into another buffer ([`crate::sort::GpuSort::counted_into`]) where the whole
/// 54 bits would take 7 — so cells 256 apart along an axis share a run of equal `lo`; the pair
/// scans skip the entries of such a run whose `hi` differs.
#[inline]
pub fn pack_key(c: [i32; 3]) -> (u32, u32) {
    let f = |v: i32| ((v + GRID_HALF_RANGE) as u32) & 0x3_FFFF;
    let (x, y, z) = (f(c[0]), f(c[1]), f(c[2]));
    (
        (x & 0xFF) | (y & 0xFF) << 8 | (z & 0xFF) << 16,
        x >> 8 | (y >> 8) << 10 | (z >> 8) << 20,
    )
}

/// Bits of the key the grid entries are sorted by: `lo` of [`pack_key`].
pub const GRID_KEY_BITS: u32 = 24;

/// The cell coordinate of `x` along an axis, as the float `floor((x − origin)·inv_cell)`.
#[inline]
fn cell_coord(x: f32, origin: f32, inv_cell: f32) -> f32 {
    ((x - origin) * inv_cell).floor()
}

#[inline]
fn origin_of(params: &Params) -> [f32; 3] {
    [
        params.grid_origin_x,
        params.grid_origin_y,
        params.grid_origin_z,
    ]
}

/// Kernel `aabb_raster`: per segment its padded exact AABB and cell box into `seg_box`, its cell
/// count into `grid_offsets[s]`; `grid_offsets[num_segments] = 0`.
/// Also the group sums of the words it writes into `scan_groups` ([`crate::scan::write_groups`]:
/// the scan is grouped; the CPU path passes none).
pub fn aabb_raster(
    params: &Params,
    segments: &[Segment],
    pos: &[[f32; 4]],
    seg_box: &mut [SegmentBox],
    grid_offsets: &mut [u32],
    counters: &mut Counters,
    scan_groups: &mut [u32],
) {
    let n = params.num_segments as usize;
    let flags: (u32, u32) = seg_box[..n]
        .par_iter_mut()
        .zip(grid_offsets[..n].par_iter_mut())
        .zip(segments[..n].par_iter())
        .with_min_len(1024)
        .map(|((b, count), seg)| {
            let (bx, err, bad) = segment_box(params, seg, pos);
            *b = bx;
            *count = bx.cell_lo[3] as u32;
            (err, bad)
        })
        .reduce(|| (0, u32::MAX), |a, b| (a.0 | b.0, a.1.min(b.1)));
    grid_offsets[n] = 0;
    counters.errors |= flags.0;
    counters.first_bad_point = counters.first_bad_point.min(flags.1);
    crate::scan::write_groups(&grid_offsets[..=n], scan_groups);
}

/// One segment of [`aabb_raster`]: its box, the error bits it raises and its bad point.
fn segment_box(params: &Params, seg: &Segment, pos: &[[f32; 4]]) -> (SegmentBox, u32, u32) {
    let q = seg.cp.map(|i| V3::<f32>::from4(pos[i as usize]));
    let (lo, hi) = segment_aabb(&q);
    let pad = params.radius * PAD_FACTOR;
    let lo = lo - V3::splat(pad);
    let hi = hi + V3::splat(pad);
    let mut b = SegmentBox {
        lo: lo.to4(0.0),
        hi: hi.to4(0.0),
        ..SegmentBox::default()
    };
    if !(lo.is_finite() && hi.is_finite()) {
        let bad = seg
            .cp
            .iter()
            .copied()
            .find(|&i| !V3::<f32>::from4(pos[i as usize]).is_finite())
            .unwrap_or(seg.cp[1]);
        return (b, ERROR_NAN_POSITION, bad);
    }
    let o = origin_of(params);
    let inv = params.grid_inv_cell;
    let lim = GRID_HALF_RANGE as f32;
    let c0 = [0, 1, 2].map(|a| cell_coord(lo.get(a), o[a], inv));
    let c1 = [0, 1, 2].map(|a| cell_coord(hi.get(a), o[a], inv));
    if !(0..3).all(|a| c0[a] >= -lim && c1[a] < lim) {
        return (b, ERROR_GRID_RANGE, u32::MAX);
    }
    let (i0, i1) = (c0.map(|c| c as i32), c1.map(|c| c as i32));
    let ext = [0, 1, 2].map(|a| (i1[a] - i0[a] + 1) as u32);
    // Integer division is exact on both paths, and no product here can overflow.
    let m = MAX_CELLS_PER_SEGMENT;
    if ext[0] > m || ext[1] > m / ext[0] || ext[2] > m / (ext[0] * ext[1]) {
        return (b, ERROR_GRID_RANGE, u32::MAX);
    }
    let count = ext[0] * ext[1] * ext[2];
    b.cell_lo = [i0[0], i0[1], i0[2], count as i32];
    b.cell_hi = [i1[0], i1[1], i1[2], 0];
    (b, 0, u32::MAX)
}

/// The segment holding entry `i`: the largest `s ≤ n` with `grid_offsets[s] ≤ i` (binary search,
/// as the kernels do it).
#[inline]
pub fn upper_segment(offsets: &[u32], n: u32, i: u32) -> u32 {
    let (mut lo, mut hi) = (0u32, n);
    while hi - lo > 1 {
        let mid = (lo + hi) / 2;
        if offsets[mid as usize] <= i {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    lo
}

/// The sentinel record of unused slots.
pub const SENTINEL_ENTRY: KeyValue = KeyValue {
    key_lo: SENTINEL,
    key_hi: SENTINEL,
    value: SENTINEL,
    _pad: 0,
};

/// Kernel `grid_write`: entry slot `i` of the capacity (`counters.grid_entries.capacity`) gets the
/// `(cell key, segment)` of entry `i` (segment order, cells x-fastest), or [`SENTINEL_ENTRY`] past
/// the total `grid_offsets[num_segments]`, which is recorded with its overflow flag.
pub fn grid_write(
    params: &Params,
    seg_box: &[SegmentBox],
    grid_offsets: &[u32],
    grid_entries: &mut [KeyValue],
    counters: &mut Counters,
) {
    let n = params.num_segments;
    let total = grid_offsets[n as usize];
    let cap = counters.grid_entries.capacity;
    counters.grid_entries.count = total;
    if total > cap {
        counters.grid_entries.overflow = 1;
    }
    // Entry i of the kernel is entry i − grid_offsets[s] of the segment s holding it; walking the
    // segments' ranges in order writes the same slots without the search.
    let cap = cap as usize;
    for (s, b) in seg_box[..n as usize].iter().enumerate() {
        let start = grid_offsets[s] as usize;
        if start >= cap {
            break;
        }
        let end = (grid_offsets[s + 1] as usize).min(cap);
        for (j, e) in grid_entries[start..end].iter_mut().enumerate() {
            *e = entry_of(b, s as u32, j as u32);
        }
    }
    if (total as usize) < cap {
        grid_entries[total as usize..cap].fill(SENTINEL_ENTRY);
    }
}

/// Entry `j` (x-fastest) of segment `s` with box `b`.
#[inline]
fn entry_of(b: &SegmentBox, s: u32, j: u32) -> KeyValue {
    let ex = (b.cell_hi[0] - b.cell_lo[0] + 1) as u32;
    let ey = (b.cell_hi[1] - b.cell_lo[1] + 1) as u32;
    let c = [
        b.cell_lo[0] + (j % ex) as i32,
        b.cell_lo[1] + (j / ex % ey) as i32,
        b.cell_lo[2] + (j / (ex * ey)) as i32,
    ];
    let (key_lo, key_hi) = pack_key(c);
    KeyValue {
        key_lo,
        key_hi,
        value: s,
        _pad: 0,
    }
}

/// Whether entries `ea` (first) and `eb` (after it, same cell) make a candidate emitted here:
/// overlapping padded boxes, and this cell is the lowest both cover.
#[inline]
fn pair_here(ea: &KeyValue, eb: &KeyValue, seg_box: &[SegmentBox]) -> bool {
    let (ba, bb) = (&seg_box[ea.value as usize], &seg_box[eb.value as usize]);
    let overlap = (0..3).all(|x| ba.lo[x] <= bb.hi[x] && bb.lo[x] <= ba.hi[x]);
    if !overlap {
        return false;
    }
    let corner = [0, 1, 2].map(|x| ba.cell_lo[x].max(bb.cell_lo[x]));
    pack_key(corner) == (ea.key_lo, ea.key_hi)
}

/// The pairs entry `i` forms with the entries after it in its cell, in order, calling `f` with the
/// other entry; returns false when the cell's run was cut at [`MAX_CELL_RUN`].
#[inline]
fn for_each_pair_of_entry(
    entries: &[KeyValue],
    i: usize,
    seg_box: &[SegmentBox],
    mut f: impl FnMut(&KeyValue),
) -> bool {
    let e = &entries[i];
    if e.key_hi == SENTINEL {
        return true;
    }
    let mut j = i + 1;
    let mut steps = 0;
    while j < entries.len() {
        let o = &entries[j];
        // The run of equal `lo` (sorted by it alone) ends at another `lo` or at the sentinels.
        if o.key_lo != e.key_lo || o.key_hi == SENTINEL {
            return true;
        }
        if steps == MAX_CELL_RUN {
            return false;
        }
        // Entries of the run from another cell (same `lo`, other `hi`) are skipped.
        if o.key_hi == e.key_hi && pair_here(e, o, seg_box) {
            f(o);
        }
        steps += 1;
        j += 1;
    }
    true
}

/// The live entries of the sorted grid: the first `min(count, capacity)` (the GPU's sort leaves
/// the slots past them as they were).
fn live_entries(counters: &Counters) -> usize {
    counters
        .grid_entries
        .count
        .min(counters.grid_entries.capacity) as usize
}

/// Kernel `candidate_count`: `cand_offsets[i]` = the pairs entry `i` of the sorted live entries
/// emits (0 for the slots past them, up to `counters.grid_entries.capacity`);
/// `cand_offsets[capacity] = 0`.
/// Also the group sums of the words it writes into `scan_groups` ([`crate::scan::write_groups`]:
/// the scan is grouped; the CPU path passes none).
pub fn candidate_count(
    params: &Params,
    grid_entries: &[KeyValue],
    seg_box: &[SegmentBox],
    cand_offsets: &mut [u32],
    counters: &mut Counters,
    scan_groups: &mut [u32],
) {
    let _ = params;
    let cap = counters.grid_entries.capacity as usize;
    let n = live_entries(counters);
    let entries = &grid_entries[..n];
    cand_offsets[n..cap].fill(0);
    let full = cand_offsets[..n]
        .par_iter_mut()
        .with_min_len(1024)
        .enumerate()
        .map(|(i, c)| {
            let mut n = 0;
            let ok = for_each_pair_of_entry(entries, i, seg_box, |_| n += 1);
            *c = n;
            !ok
        })
        .reduce(|| false, |a, b| a || b);
    cand_offsets[cap] = 0;
    if full {
        counters.errors |= ERROR_GRID_CELL_FULL;
    }
    crate::scan::write_groups(&cand_offsets[..=cap], scan_groups);
}

/// Kernel `candidate_write`: the pairs of [`candidate_count`] as `[min, max]` segment indices at
/// `cand_offsets[i]` onwards (scanned), those within `counters.candidate_pairs.capacity`; the total
/// `cand_offsets[capacity]` and its overflow flag into `counters.candidate_pairs`.
pub fn candidate_write(
    params: &Params,
    grid_entries: &[KeyValue],
    seg_box: &[SegmentBox],
    cand_offsets: &[u32],
    candidates: &mut [[u32; 2]],
    counters: &mut Counters,
) {
    let _ = params;
    let cap = counters.grid_entries.capacity as usize;
    let cap_c = counters.candidate_pairs.capacity as usize;
    let total = cand_offsets[cap];
    counters.candidate_pairs.count = total;
    if total as usize > cap_c {
        counters.candidate_pairs.overflow = 1;
    }
    let n = live_entries(counters);
    let entries = &grid_entries[..n];
    let out = &mut candidates[..cap_c.min(total as usize)];
    write_range(entries, 0..n, seg_box, cand_offsets, out, 0);
}

/// The candidates of entries `range` into `out`, which holds slots `base ..` of the list: entry
/// `i` writes from slot `cand_offsets[i]` on (those below the capacity). Halves the range, and
/// with it the output at the first slot of the upper half, for rayon until it is small.
fn write_range(
    entries: &[KeyValue],
    range: std::ops::Range<usize>,
    seg_box: &[SegmentBox],
    cand_offsets: &[u32],
    out: &mut [[u32; 2]],
    base: usize,
) {
    if range.len() > 2048 {
        let mid = range.start + range.len() / 2;
        let split = (cand_offsets[mid] as usize - base).min(out.len());
        let (lo, hi) = out.split_at_mut(split);
        rayon::join(
            || write_range(entries, range.start..mid, seg_box, cand_offsets, lo, base),
            || {
                write_range(
                    entries,
                    mid..range.end,
                    seg_box,
                    cand_offsets,
                    hi,
                    base + split,
                )
            },
        );
        return;
    }
    for i in range {
        let mut k = cand_offsets[i] as usize - base;
        let a = entries[i].value;
        for_each_pair_of_entry(entries, i, seg_box, |o| {
            if k < out.len() {
                out[k] = [a.min(o.value), a.max(o.value)];
            }
            k += 1;
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_pack_uniquely_and_spread_neighbours_over_lo() {
        let h = GRID_HALF_RANGE;
        assert_eq!(pack_key([-h; 3]), (0, 0));
        let (lo, hi) = pack_key([h - 1; 3]);
        assert_eq!((lo, hi), ((1 << GRID_KEY_BITS) - 1, (1 << 30) - 1));
        assert!(hi < SENTINEL);
        // Distinct cells, distinct keys: a block around the origin, and cells 256 apart (same lo,
        // other hi).
        let mut seen = std::collections::HashSet::new();
        for x in -40..40 {
            for y in -40..40 {
                for z in [-5, 0, 7] {
                    let (lo, hi) = pack_key([x, y, z]);
                    assert!(seen.insert((lo, hi)), "{x} {y} {z}");
                    // Neighbours within 256 cells differ in lo.
                    assert_ne!(lo, pack_key([x + 1, y, z]).0);
                    assert_ne!(lo, pack_key([x, y + 1, z]).0);
                    assert_ne!(lo, pack_key([x, y, z + 1]).0);
                }
            }
        }
        for d in [[256, 0, 0], [0, 256, 0], [0, 0, 256]] {
            let (a, b) = (
                pack_key([3, -4, 5]),
                pack_key([3 + d[0], -4 + d[1], 5 + d[2]]),
            );
            assert_eq!(a.0, b.0, "{d:?}");
            assert_ne!(a.1, b.1, "{d:?}");
        }
    }

    /// Two cells with the same `lo` interleave in the sorted entries; each entry pairs only with
    /// the later entries of its own cell.
    #[test]
    fn runs_of_equal_lo_pair_only_within_a_cell() {
        let boxed = |c: [i32; 3]| SegmentBox {
            lo: [0.0, 0.0, 0.0, 0.0],
            hi: [1.0, 1.0, 1.0, 0.0],
            cell_lo: [c[0], c[1], c[2], 0],
            cell_hi: [c[0], c[1], c[2], 0],
        };
        let (a, b) = ([1, 2, 3], [1 + 2048, 2, 3]);
        let seg_box = vec![boxed(a), boxed(b), boxed(a), boxed(b)];
        let entry = |s: u32, c: [i32; 3]| {
            let (key_lo, key_hi) = pack_key(c);
            KeyValue {
                key_lo,
                key_hi,
                value: s,
                _pad: 0,
            }
        };
        // Sorted by lo alone, in segment order: cells a, b, a, b.
        let mut entries = vec![entry(0, a), entry(1, b), entry(2, a), entry(3, b)];
        entries.push(KeyValue {
            key_lo: SENTINEL,
            key_hi: SENTINEL,
            value: SENTINEL,
            _pad: 0,
        });
        let pairs = |i: usize| {
            let mut v = Vec::new();
            assert!(for_each_pair_of_entry(&entries, i, &seg_box, |o| v.push(o.value)));
            v
        };
        assert_eq!(pairs(0), vec![2]);
        assert_eq!(pairs(1), vec![3]);
        assert!(pairs(2).is_empty() && pairs(3).is_empty());
    }

    #[test]
    fn upper_segment_skips_empty_segments() {
        let off = [0u32, 2, 2, 5, 5, 6];
        let n = 5;
        let want = [0, 0, 2, 2, 2, 4];
        for (i, &w) in want.iter().enumerate() {
            assert_eq!(upper_segment(&off, n, i as u32), w, "entry {i}");
        }
    }
}
