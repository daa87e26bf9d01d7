//! The contact sets as the scheduler sees them: which quadrature pairs of a segment pair they own, a
//! lookup each examined entry makes (DESIGN §5.3) instead of state the sets push into the entries.
//!
//! The sets' boxes are packed into one `u32` buffer, `set_lookup`, binned by their first axis in bins
//! of [`LOOKUP_BIN`] quadrature indices (a set is listed in every bin its `[u0, u1]` meets):
//!
//! | words | content |
//! |---|---|
//! | `[0]` | number of bins `nb` |
//! | `[1]` | number of sets `ns` |
//! | `[2 .. 3 + nb]` | `nb + 1` bin starts (offsets into the items) |
//! | `[3 + nb ..][.. items]` | the sets of each bin, in set order |
//! | then `4 · ns` words | the box `[u0, u1, v0, v1]` of each set |
//!
//! [`set_lookup_pack`] writes it (count → prefix sum → write); [`owned_bits`] reads it.

use super::box_bits;

/// Width of the lookup's bins along the first axis, in quadrature indices.
pub const LOOKUP_BIN: u32 = 8;
/// Sets one lookup examines at most (the loop bound of the kernels' lookup): beyond, the lookup
/// reports an overflow and the entry's pairs are all treated as unowned, which is safe (owned pairs
/// that touch are reported again and merged back into their set).
pub const MAX_LOOKUP: u32 = 256;
/// The lookup of no sets at all.
pub const NO_SETS: &[u32] = &[0, 0, 0];

/// Packs the boxes `boxes` (in set order) over `nq` quadrature indices into `out`.
pub fn set_lookup_pack(boxes: impl Iterator<Item = [u32; 4]> + Clone, nq: u32, out: &mut Vec<u32>) {
    let nb = (nq / LOOKUP_BIN + 1) as usize;
    out.clear();
    out.resize(3 + nb, 0);
    out[0] = nb as u32;
    let mut ns = 0u32;
    let bins =
        |bx: &[u32; 4]| (bx[0] / LOOKUP_BIN) as usize..=((bx[1] / LOOKUP_BIN) as usize).min(nb - 1);
    for bx in boxes.clone() {
        ns += 1;
        for bin in bins(&bx) {
            out[3 + bin] += 1;
        }
    }
    out[1] = ns;
    // Bin k's count sits at word 3 + k, one past its start: an inclusive prefix sum makes word
    // 2 + k the start of bin k, and word 2 + nb the number of items.
    for k in 1..=nb {
        out[2 + k] += out[1 + k];
    }
    let sum = out[2 + nb];
    let items = 3 + nb;
    out.resize(items + sum as usize + 4 * ns as usize, 0);
    // Written in set order, each bin's start walking to the next bin's start (no scratch buffer:
    // the starts are shifted back afterwards).
    let boxes_base = items + sum as usize;
    for (k, bx) in boxes.enumerate() {
        for bin in bins(&bx) {
            let at = out[2 + bin] as usize;
            out[items + at] = k as u32;
            out[2 + bin] += 1;
        }
        out[boxes_base + 4 * k..boxes_base + 4 * k + 4].copy_from_slice(&bx);
    }
    for bin in (1..nb).rev() {
        out[2 + bin] = out[1 + bin];
    }
    out[2] = 0;
}

/// Bitmap (bit `ka·b + kb`) of the pairs `(seg_a·b + ka, seg_b·b + kb)` that the sets of
/// `set_lookup` own, and whether the lookup overflowed ([`MAX_LOOKUP`]: then the bitmap is empty).
pub fn owned_bits(set_lookup: &[u32], seg_a: u32, seg_b: u32, b: u32) -> ([u32; 4], bool) {
    let mut bits = [0u32; 4];
    let nb = set_lookup[0];
    if nb == 0 {
        return (bits, false);
    }
    let items = 3 + nb as usize;
    let nitems = set_lookup[2 + nb as usize] as usize;
    let boxes_base = items + nitems;
    let (i0, i1) = (seg_a * b, seg_a * b + b - 1);
    let mut seen = 0u32;
    for bin in i0 / LOOKUP_BIN..=(i1 / LOOKUP_BIN).min(nb - 1) {
        let (s0, s1) = (set_lookup[2 + bin as usize], set_lookup[3 + bin as usize]);
        for it in s0..s1 {
            seen += 1;
            if seen > MAX_LOOKUP {
                return ([0; 4], true);
            }
            let k = set_lookup[items + it as usize] as usize;
            let bx = [
                set_lookup[boxes_base + 4 * k],
                set_lookup[boxes_base + 4 * k + 1],
                set_lookup[boxes_base + 4 * k + 2],
                set_lookup[boxes_base + 4 * k + 3],
            ];
            let bb = box_bits(bx, seg_a, seg_b, b);
            for w in 0..4 {
                bits[w] |= bb[w];
            }
        }
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
        set_lookup_pack(boxes.iter().copied(), nq, &mut packed);
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
        // More sets in one bin than a lookup may examine: an overflow, never a partial bitmap.
        let many: Vec<[u32; 4]> = (0..MAX_LOOKUP + 1).map(|k| [0, 0, 1 + k, 1 + k]).collect();
        set_lookup_pack(many.iter().copied(), 4 * MAX_LOOKUP, &mut packed);
        assert_eq!(owned_bits(&packed, 0, 1, 4), ([0; 4], true));
    }
}
