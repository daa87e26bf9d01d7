//! The contact sets as the scheduler sees them: which quadrature pairs of a segment pair they own, a
//! lookup each examined entry makes (DESIGN §5.3) instead of state the sets push into the entries.
//!
//! The sets' boxes are packed into one `u32` buffer, `set_lookup`, listed under every segment pair
//! `(sa, sb)`, `sa < sb`, that their box meets (bucketed by `sa`, sorted by `sb` then set within a
//! bucket):
//!
//! | words | content |
//! |---|---|
//! | `[0]` | number of segments `nseg` |
//! | `[1]` | number of items `ni` |
//! | `[2 .. 3 + nseg]` | `nseg + 1` bucket starts (item numbers) |
//! | `[3 + nseg ..][.. 2 ni]` | the items `(sb, set)`, two words each |
//! | then 4 words per set | the box `[u0, u1, v0, v1]` of each set |
//!
//! It is built from the set table `sets` (the live sets at its head, `acl_lookup.num_sets` of them;
//! a set's number is its slot) by four stages, the CPU twins of the `set_lookup_*` kernels
//! (`sched::lookup_gpu::LookupGpu` records them on the GPU):
//!
//! 1. [`set_lookup_clear`]: `lookup_offsets[0 ..= nseg] = 0`;
//! 2. [`set_lookup_count`]: each set adds its items per segment `sa` to `lookup_offsets[sa]`;
//! 3. an exclusive scan of `lookup_offsets` (`nseg + 1` elements; [`crate::scan`]): bucket starts,
//!    and the item count last;
//! 4. [`set_lookup_write`]: each set lists its items `(sb, set)` in the scratch `lookup_items`, at a
//!    cursor per bucket (the starts become the ends);
//! 5. [`set_lookup_sort`]: the header, the boxes, and each item at its rank in its bucket by
//!    `(sb, set)`.
//!
//! The kernels' outputs equal the twins' word for word (items arrive in any order within a bucket
//! on the GPU, but the keys are unique, so ranking them gives one result). [`set_lookup_build`] runs
//! the twins for the CPU path; [`set_lookup_pack`] packs a list of boxes through it.
//!
//! *Bounds.* A set lists at most [`MAX_LOOKUP_SET`] items (and spans at most that many segments
//! `sa`), a bucket is ranked only up to [`MAX_LOOKUP_BUCKET`] items: beyond, the set lists nothing
//! ([`ACL_SIZES_LOOKUP_SET`]) or the bucket is written as zeros ([`ACL_SIZES_LOOKUP_BUCKET`]). Either
//! way the lookup stays well-formed and owns fewer pairs, which is safe (the scheduler reports the
//! touching ones again and they merge back into their set); the error bit says it happened. When the
//! lookup does not fit its capacity (`acl_sizes.lookup`), the lookup of no sets `[0, 0, 0]` is
//! written instead and `overflow` set: the host grows the buffers and reruns.
//!
//! [`owned_bits`] finds the items of `(seg_a, seg_b)` by binary search in `seg_a`'s bucket. Sets are
//! disjoint, so at most `b²` of them meet one segment pair: the scan is bounded by that, and by
//! [`MAX_LOOKUP`] as a guard.

use super::box_bits;
use crate::acl::sets::{ContactSet, SET_LIVE};
use crate::layout::{AclSizes, LookupUniform, ACL_SIZES_LOOKUP_BUCKET, ACL_SIZES_LOOKUP_SET};
use crate::scan::{exclusive_scan, resize_with_headroom};

/// Items of one segment pair a lookup scans at most (the kernels' loop bound; disjoint sets give at
/// most `b² ≤ 121`). Beyond, the lookup reports an overflow and treats the pairs as unowned, which is
/// safe (touching owned pairs are reported again and merge back into their set).
pub const MAX_LOOKUP: u32 = 256;
/// The lookup of no sets at all.
pub const NO_SETS: &[u32] = &[0, 0, 0];

/// Items (segment pairs) of one set the lookup lists at most, and segments `sa` its box may span:
/// the loop bound of `set_lookup_count` and `set_lookup_write` (2 · 16,384 iterations, under
/// lavapipe's 65,535). A box of 128 × 128 segments fits; a set that large exceeds
/// `acl::evaluate::MAX_SET_POINTS` long before.
pub const MAX_LOOKUP_SET: u32 = 16_384;
/// Items of one bucket (segment `sa`) `set_lookup_sort` ranks at most (its loop bound).
pub const MAX_LOOKUP_BUCKET: u32 = 4096;
/// [`lookup_set_items`] of a set beyond [`MAX_LOOKUP_SET`].
const LOOKUP_TOO_BIG: u32 = u32::MAX;

/// The segments `sa0 ..= sa1` (first axis) and `sb0 ..= sb1` (second axis) a box meets.
#[derive(Clone, Copy, Debug)]
struct LookupRanges {
    sa0: u32,
    sa1: u32,
    sb0: u32,
    sb1: u32,
}

/// The segment ranges of box `bx`, for `b` points per segment and `nseg > 0` segments: the pairs
/// `(sa, sb)`, `sa < sb`, it meets have `sa` in the first, `sb` in the second from `sa + 1`.
#[inline]
fn lookup_ranges(bx: &[u32; 4], b: u32, nseg: u32) -> LookupRanges {
    let last = nseg - 1;
    LookupRanges {
        sa0: bx[0] / b,
        sa1: (bx[1] / b).min(last),
        sb0: bx[2] / b,
        sb1: (bx[3] / b).min(last),
    }
}

/// The items `(sa, sb)`, `sa < sb`, of the ranges, or [`LOOKUP_TOO_BIG`] beyond
/// [`MAX_LOOKUP_SET`] items or segments `sa`.
#[inline]
fn lookup_set_items(r: &LookupRanges) -> u32 {
    if r.sa1 < r.sa0 {
        return 0;
    }
    if r.sa1 - r.sa0 >= MAX_LOOKUP_SET {
        return LOOKUP_TOO_BIG;
    }
    let mut total = 0u32;
    for sa in r.sa0..=r.sa1 {
        let lo = r.sb0.max(sa + 1);
        if lo <= r.sb1 {
            let n = r.sb1 - lo + 1;
            if n > MAX_LOOKUP_SET - total {
                return LOOKUP_TOO_BIG;
            }
            total += n;
        }
    }
    total
}

/// Words of the lookup of `ni` items and `nsets` boxes over `nseg` segments (3, the lookup of no
/// sets, when `nseg = 0`), saturating at `u32::MAX`.
pub fn lookup_words(nseg: u32, ni: u32, nsets: u32) -> u32 {
    if nseg == 0 {
        return 3;
    }
    (3 + nseg)
        .saturating_add(ni.saturating_mul(2))
        .saturating_add(nsets.saturating_mul(4))
}

/// The live slots the stages look at: `num_sets`, within the table.
#[inline]
fn table_len(acl_lookup: &LookupUniform, sets: &[ContactSet]) -> usize {
    (acl_lookup.num_sets as usize).min(sets.len())
}

/// Kernel `set_lookup_clear`: `lookup_offsets[x] = 0` for `x ≤ num_segments`.
pub fn set_lookup_clear(acl_lookup: &LookupUniform, lookup_offsets: &mut [u32]) {
    let n = (acl_lookup.num_segments as usize + 1).min(lookup_offsets.len());
    lookup_offsets[..n].fill(0);
}

/// Kernel `set_lookup_count`: each live set adds its items per segment `sa` to
/// `lookup_offsets[sa]`; a set beyond [`MAX_LOOKUP_SET`] adds none and raises
/// [`ACL_SIZES_LOOKUP_SET`].
pub fn set_lookup_count(
    acl_lookup: &LookupUniform,
    sets: &[ContactSet],
    lookup_offsets: &mut [u32],
    acl_sizes: &mut AclSizes,
) {
    let nseg = acl_lookup.num_segments;
    if nseg == 0 {
        return;
    }
    for set in &sets[..table_len(acl_lookup, sets)] {
        if set.flags & SET_LIVE == 0 {
            continue;
        }
        let r = lookup_ranges(&set.bx, acl_lookup.quadrature, nseg);
        if lookup_set_items(&r) == LOOKUP_TOO_BIG {
            acl_sizes.errors |= ACL_SIZES_LOOKUP_SET;
            continue;
        }
        for sa in r.sa0..=r.sa1 {
            let lo = r.sb0.max(sa + 1);
            if lo <= r.sb1 {
                let c = &mut lookup_offsets[sa as usize];
                *c = c.wrapping_add(r.sb1 - lo + 1);
            }
        }
    }
}

/// Kernel `set_lookup_write`: each live set lists its items `(sb, set)` in `lookup_items` at the
/// cursor `lookup_offsets[sa]` of their bucket (the scanned starts, advanced to the ends), in set
/// order here (any order on the GPU). Nothing when the lookup would not fit
/// `acl_sizes.lookup.capacity` or the items `lookup_items`.
pub fn set_lookup_write(
    acl_lookup: &LookupUniform,
    sets: &[ContactSet],
    lookup_offsets: &mut [u32],
    lookup_items: &mut [u32],
    acl_sizes: &mut AclSizes,
) {
    let nseg = acl_lookup.num_segments;
    let n = table_len(acl_lookup, sets);
    if nseg == 0 || n == 0 {
        return;
    }
    let ni = lookup_offsets[nseg as usize];
    let words = lookup_words(nseg, ni, n as u32);
    let len = lookup_items.len();
    if words > acl_sizes.lookup.capacity || ni as usize > len / 2 {
        return;
    }
    for (k, set) in sets[..n].iter().enumerate() {
        if set.flags & SET_LIVE == 0 {
            continue;
        }
        let r = lookup_ranges(&set.bx, acl_lookup.quadrature, nseg);
        if lookup_set_items(&r) == LOOKUP_TOO_BIG {
            acl_sizes.errors |= ACL_SIZES_LOOKUP_SET;
            continue;
        }
        for sa in r.sa0..=r.sa1 {
            let lo = r.sb0.max(sa + 1);
            if lo > r.sb1 {
                continue;
            }
            let at = lookup_offsets[sa as usize] as usize;
            lookup_offsets[sa as usize] += r.sb1 - lo + 1;
            for sb in lo..=r.sb1 {
                let p = 2 * (at + (sb - lo) as usize);
                if p + 1 < len {
                    lookup_items[p] = sb;
                    lookup_items[p + 1] = k as u32;
                }
            }
        }
    }
}

/// Kernel `set_lookup_sort`: the word count and overflow flag into `acl_sizes.lookup`; on overflow
/// `[0, 0, 0]` (within the capacity) and nothing else; else the header, the bucket starts, the
/// boxes, and each bucket's items sorted by `(sb, set)` (a bucket beyond [`MAX_LOOKUP_BUCKET`]:
/// zeros, and [`ACL_SIZES_LOOKUP_BUCKET`]). The kernel ranks each item in its bucket; the twin
/// sorts the bucket (the same result: the keys are unique), by insertion, as items come in set
/// order and mostly in order already.
pub fn set_lookup_sort(
    acl_lookup: &LookupUniform,
    sets: &[ContactSet],
    lookup_offsets: &[u32],
    lookup_items: &[u32],
    set_lookup: &mut [u32],
    acl_sizes: &mut AclSizes,
) {
    let nseg = acl_lookup.num_segments;
    let (ni, nbox) = if nseg > 0 {
        (lookup_offsets[nseg as usize], table_len(acl_lookup, sets))
    } else {
        (0, 0)
    };
    let words = lookup_words(nseg, ni, nbox as u32);
    let cap = (acl_sizes.lookup.capacity as usize).min(set_lookup.len());
    let over = words as usize > cap || ni as usize > lookup_items.len() / 2;
    acl_sizes.lookup.count = words;
    acl_sizes.lookup.overflow = over as u32;
    if over {
        set_lookup[..cap.min(3)].fill(0);
        return;
    }
    let ns = nseg as usize;
    let ni = ni as usize;
    set_lookup[0] = nseg;
    set_lookup[1] = ni as u32;
    set_lookup[2] = 0;
    set_lookup[3..3 + ns].copy_from_slice(&lookup_offsets[..ns]);
    let items = 3 + ns;
    for sa in 0..ns {
        let start = if sa > 0 {
            lookup_offsets[sa - 1] as usize
        } else {
            0
        };
        let end = lookup_offsets[sa] as usize;
        let out = &mut set_lookup[items + 2 * start..items + 2 * end];
        if end - start > MAX_LOOKUP_BUCKET as usize {
            acl_sizes.errors |= ACL_SIZES_LOOKUP_BUCKET;
            out.fill(0);
            continue;
        }
        out.copy_from_slice(&lookup_items[2 * start..2 * end]);
        for x in 1..end - start {
            let key = (out[2 * x], out[2 * x + 1]);
            let mut y = x;
            while y > 0 && (out[2 * (y - 1)], out[2 * (y - 1) + 1]) > key {
                out[2 * y] = out[2 * (y - 1)];
                out[2 * y + 1] = out[2 * (y - 1) + 1];
                y -= 1;
            }
            out[2 * y] = key.0;
            out[2 * y + 1] = key.1;
        }
    }
    let boxes = items + 2 * ni;
    for (k, set) in sets[..nbox].iter().enumerate() {
        set_lookup[boxes + 4 * k..boxes + 4 * k + 4].copy_from_slice(&set.bx);
    }
}

/// The CPU path's scratch of [`set_lookup_build`] (kept between steps so they allocate nothing once
/// warmed up).
#[derive(Clone, Debug, Default)]
pub struct LookupScratch {
    offsets: Vec<u32>,
    items: Vec<u32>,
    partials: Vec<u32>,
}

/// The lookup of the sets of `sets` (see `acl_lookup`) into `out`, through the twins in the kernels'
/// order, with buffers sized so that nothing overflows. Returns the sizes the stages wrote
/// (`lookup` with `count = capacity = out.len()`; `errors`: `ACL_SIZES_LOOKUP_*`).
pub fn set_lookup_build(
    acl_lookup: &LookupUniform,
    sets: &[ContactSet],
    scratch: &mut LookupScratch,
    out: &mut Vec<u32>,
) -> AclSizes {
    let mut sizes = AclSizes::default();
    let nseg = acl_lookup.num_segments as usize;
    let offsets = &mut scratch.offsets;
    resize_with_headroom(offsets, nseg + 1, 0);
    set_lookup_clear(acl_lookup, offsets);
    set_lookup_count(acl_lookup, sets, offsets, &mut sizes);
    exclusive_scan(offsets, &mut scratch.partials);
    let (ni, nbox) = if nseg > 0 {
        (offsets[nseg], table_len(acl_lookup, sets) as u32)
    } else {
        (0, 0)
    };
    let words = lookup_words(nseg as u32, ni, nbox);
    resize_with_headroom(&mut scratch.items, 2 * ni as usize, 0);
    out.clear();
    resize_with_headroom(out, words as usize, 0);
    sizes.lookup.capacity = words;
    set_lookup_write(acl_lookup, sets, offsets, &mut scratch.items, &mut sizes);
    set_lookup_sort(acl_lookup, sets, offsets, &scratch.items, out, &mut sizes);
    sizes
}

/// Packs the boxes `boxes` (in set order) of sets over `nseg` segments of `b` quadrature points into
/// `out`: [`set_lookup_build`] on a table of live sets with these boxes. Returns the `ACL_SIZES_LOOKUP_*`
/// bits raised (0 within the bounds).
pub fn set_lookup_pack(
    boxes: impl Iterator<Item = [u32; 4]>,
    b: u32,
    nseg: u32,
    out: &mut Vec<u32>,
) -> u32 {
    let sets: Vec<ContactSet> = boxes
        .map(|bx| ContactSet {
            bx,
            flags: SET_LIVE,
            ..Default::default()
        })
        .collect();
    let u = LookupUniform {
        num_sets: sets.len() as u32,
        num_segments: nseg,
        quadrature: b,
        _pad: 0,
    };
    set_lookup_build(&u, &sets, &mut LookupScratch::default(), out).errors
}

/// Bitmap (bit `ka·b + kb`) of the pairs `(seg_a·b + ka, seg_b·b + kb)` that the sets of
/// `set_lookup` own, and whether the lookup overflowed ([`MAX_LOOKUP`]: then the bitmap is empty).
pub fn owned_bits(set_lookup: &[u32], seg_a: u32, seg_b: u32, b: u32) -> ([u32; 4], bool) {
    let mut bits = [0u32; 4];
    let nseg = set_lookup[0];
    if seg_a >= nseg {
        return (bits, false);
    }
    let ns = nseg as usize;
    let items = 3 + ns;
    let ni = set_lookup[1] as usize;
    let boxes_base = items + 2 * ni;
    let (mut lo, mut hi) = (
        set_lookup[2 + seg_a as usize] as usize,
        set_lookup[3 + seg_a as usize] as usize,
    );
    // Lower bound of seg_b among the bucket's sorted sb (at most 32 halvings).
    while lo < hi {
        let mid = (lo + hi) / 2;
        if set_lookup[items + 2 * mid] < seg_b {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    let end = set_lookup[3 + seg_a as usize] as usize;
    let mut seen = 0u32;
    let mut at = lo;
    while at < end && set_lookup[items + 2 * at] == seg_b {
        seen += 1;
        if seen > MAX_LOOKUP {
            return ([0; 4], true);
        }
        let k = set_lookup[items + 2 * at + 1] as usize;
        let o = boxes_base + 4 * k;
        let bx = [
            set_lookup[o],
            set_lookup[o + 1],
            set_lookup[o + 2],
            set_lookup[o + 3],
        ];
        let bb = box_bits(bx, seg_a, seg_b, b);
        for w in 0..4 {
            bits[w] |= bb[w];
        }
        at += 1;
    }
    (bits, false)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The packed lookup gives the bitmap of the boxes themselves, whatever bins they span.
    #[test]
    fn owned_bits_are_the_union_of_the_boxes() {
        let b = 11;
        let nq = 40 * b;
        let boxes = [
            [25, 27, 57, 60],
            [20, 40, 100, 130],
            [60, 62, 61, 70],
            [0, 3, 5, 9],
        ];
        let mut packed = Vec::new();
        set_lookup_pack(boxes.iter().copied(), b, nq / b, &mut packed);
        for sa in 0..12 {
            for sb in sa + 1..14 {
                let mut expect = [0u32; 4];
                for bx in &boxes {
                    let bb = box_bits(*bx, sa, sb, b);
                    for w in 0..4 {
                        expect[w] |= bb[w];
                    }
                }
                assert_eq!(owned_bits(&packed, sa, sb, b), (expect, false), "{sa} {sb}");
            }
        }
        assert_eq!(owned_bits(NO_SETS, 2, 5, b), ([0; 4], false));
        // More sets on one segment pair than a lookup may scan (only overlapping sets can do that):
        // an overflow, never a partial bitmap.
        let many: Vec<[u32; 4]> = (0..MAX_LOOKUP + 1).map(|_| [0, 0, 4, 4]).collect();
        set_lookup_pack(many.iter().copied(), 4, 2, &mut packed);
        assert_eq!(owned_bits(&packed, 0, 1, 4), ([0; 4], true));
        // 121 single-pair sets on one segment pair (the most disjoint sets can give): no overflow.
        let singles: Vec<[u32; 4]> = (0..11)
            .flat_map(|i| (0..11).map(move |j| [i, i, 11 + j, 11 + j]))
            .collect();
        set_lookup_pack(singles.iter().copied(), 11, 3, &mut packed);
        assert_eq!(
            owned_bits(&packed, 0, 1, 11),
            ([u32::MAX, u32::MAX, u32::MAX, (1 << 25) - 1], false)
        );
    }
}
