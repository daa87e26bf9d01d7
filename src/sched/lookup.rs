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
//! [`set_lookup_pack`] writes it (count → prefix sum → write, then a sort of each small bucket);
//! [`owned_bits`] finds the items of `(seg_a, seg_b)` by binary search in `seg_a`'s bucket. Sets are
//! disjoint, so at most `b²` of them meet one segment pair: the scan is bounded by that, and by
//! [`MAX_LOOKUP`] as a guard.

use super::box_bits;

/// Items of one segment pair a lookup scans at most (the kernels' loop bound; disjoint sets give at
/// most `b² ≤ 121`). Beyond, the lookup reports an overflow and treats the pairs as unowned, which is
/// safe (touching owned pairs are reported again and merge back into their set).
pub const MAX_LOOKUP: u32 = 256;
/// The lookup of no sets at all.
pub const NO_SETS: &[u32] = &[0, 0, 0];

/// The segment pairs `(sa, sb)`, `sa < sb`, that box `bx` meets, for `b` points per segment and
/// `nseg` segments: `sa` over the first range, `sb` over the second from `sa + 1`.
#[inline]
fn segment_ranges(bx: &[u32; 4], b: u32, nseg: u32) -> (std::ops::RangeInclusive<u32>, u32, u32) {
    let last = nseg.saturating_sub(1);
    (
        (bx[0] / b)..=(bx[1] / b).min(last),
        bx[2] / b,
        (bx[3] / b).min(last),
    )
}

/// Packs the boxes `boxes` (in set order) of sets over `nseg` segments of `b` quadrature points into
/// `out`.
pub fn set_lookup_pack(
    boxes: impl Iterator<Item = [u32; 4]> + Clone,
    b: u32,
    nseg: u32,
    out: &mut Vec<u32>,
) {
    let ns = nseg as usize;
    out.clear();
    out.resize(3 + ns, 0);
    out[0] = nseg;
    if nseg == 0 {
        return;
    }
    let mut nsets = 0usize;
    for bx in boxes.clone() {
        nsets += 1;
        let (sa_range, sb0, sb1) = segment_ranges(&bx, b, nseg);
        for sa in sa_range {
            let lo = sb0.max(sa + 1);
            if lo <= sb1 {
                out[3 + sa as usize] += sb1 - lo + 1;
            }
        }
    }
    // Bucket sa's count sits at word 3 + sa, one past its start: an inclusive prefix sum makes word
    // 2 + sa the start of bucket sa, and word 2 + nseg the number of items.
    for k in 1..=ns {
        out[2 + k] += out[1 + k];
    }
    let ni = out[2 + ns] as usize;
    out[1] = ni as u32;
    let items = 3 + ns;
    out.resize(items + 2 * ni + 4 * nsets, 0);
    // Written in set order, each bucket's start walking to the next bucket's start, then shifted back.
    let boxes_base = items + 2 * ni;
    for (k, bx) in boxes.enumerate() {
        let (sa_range, sb0, sb1) = segment_ranges(&bx, b, nseg);
        for sa in sa_range {
            for sb in sb0.max(sa + 1)..=sb1 {
                let at = out[2 + sa as usize] as usize;
                out[items + 2 * at] = sb;
                out[items + 2 * at + 1] = k as u32;
                out[2 + sa as usize] += 1;
            }
        }
        out[boxes_base + 4 * k..boxes_base + 4 * k + 4].copy_from_slice(&bx);
    }
    for sa in (1..ns).rev() {
        out[2 + sa] = out[1 + sa];
    }
    out[2] = 0;
    // Each bucket by (sb, set): insertion sort (buckets hold a few items; sets were written in
    // order, so equal sb stay in set order).
    for sa in 0..ns {
        let (s0, s1) = (out[2 + sa] as usize, out[3 + sa] as usize);
        for x in s0 + 1..s1 {
            let key = (out[items + 2 * x], out[items + 2 * x + 1]);
            let mut y = x;
            while y > s0 && (out[items + 2 * (y - 1)], out[items + 2 * (y - 1) + 1]) > key {
                out[items + 2 * y] = out[items + 2 * (y - 1)];
                out[items + 2 * y + 1] = out[items + 2 * (y - 1) + 1];
                y -= 1;
            }
            out[items + 2 * y] = key.0;
            out[items + 2 * y + 1] = key.1;
        }
    }
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
