//! New contact sets from the scheduler's touching pairs (`contact_coalesce`) and the merging of
//! overlapping sets (`set_merge`), as data-parallel passes whose result does not depend on how
//! many threads run them.
//!
//! *Coalescing.* Reads the scheduler's touching pairs, in its order (the pairs of one schedule entry
//! are consecutive). Each pair `(i, j)` gives the box `[i ± α] × [j ± α]`; a pair whose box does not
//! overlap the previous pair's box starts a run (run heads, numbered by a prefix sum), and each run
//! becomes one new set whose box is the hull of its pairs' boxes (a min/max reduction per run). The
//! new sets are appended to the table, live, dirty and moved.
//!
//! *Merging* is a connected-components pass over the overlap graph of the live sets, repeated until
//! no two sets overlap (a merged set's hull can overlap further sets):
//! 1. `set_bin` ([`SetIndex::build`]): the bin index of the live sets.
//! 2. `set_overlap`: sets without [`SET_MOVED`] are pairwise disjoint, so every overlapping pair
//!    has a moved set; each moved set looks through the bins its box meets for the live sets it
//!    overlaps, and lists each pair once (count → prefix sum → write, in the order of the moved
//!    sets). No pair: done.
//! 3. `merge_label`: min-label propagation over those pairs (Jacobi steps with pointer jumping)
//!    until a step changes nothing; a set's label is then the smallest set index of its component.
//! 4. `merge_hull`: each component's hull, a min/max reduction into its root (the smallest index).
//! 5. `merge_apply`: the root keeps its slot and takes the hull as its box (dirty, and moved when
//!    the box grew); the other sets of the component lose [`SET_LIVE`] and leave the table at the
//!    step's compaction ([`super::sets::set_compact`]). No pair is released: the hull holds every
//!    merged box.
//!
//! The labels are a function of the graph alone (the smallest index of each component), and the
//! hull of a component does not depend on the order of the reduction, so the result is the same
//! for any order of the passes' elements: on the GPU the scatters of steps 3 and 4 are `atomicMin`
//! / `atomicMax`.

use super::rebuild::{model_sizes, PoolGarbage};
use super::sets::{
    box_bins, box_hull, boxes_overlap, padded_box, ContactSet, SetIndex, MERGE_BIN, SET_DIRTY,
    SET_LIVE, SET_MOVED,
};
use super::stiction::StictionSpring;
use super::SyncPtr;
use crate::polar::quat_identity;
use rayon::prelude::*;

/// Moved sets per task of the parallel `set_overlap` passes.
const OVERLAP_TASK: usize = 64;

/// Stage `contact_coalesce`: appends to `sets` one new set per run of consecutive overlapping
/// pair boxes of `touching` (see the module doc), and 4 inactive springs each to `springs`.
/// Returns the number of sets made.
pub fn contact_coalesce(
    touching: &[[u32; 2]],
    alpha: u32,
    nq: u32,
    sets: &mut Vec<ContactSet>,
    springs: &mut Vec<StictionSpring>,
) -> usize {
    let n0 = sets.len();
    let mut prev = [1u32, 0, 1, 0];
    for (t, &[i, j]) in touching.iter().enumerate() {
        let bx = padded_box(i, i, j, j, alpha, nq);
        // Run head: the first pair, or a box that does not overlap the previous pair's box.
        if t == 0 || !boxes_overlap(&prev, &bx) {
            sets.push(ContactSet {
                bx,
                flags: SET_LIVE | SET_DIRTY | SET_MOVED,
                quat: quat_identity(),
                ..Default::default()
            });
            springs.extend_from_slice(&[StictionSpring::default(); 4]);
        } else {
            let s = sets.last_mut().expect("a run has a head");
            s.bx = box_hull(&s.bx, &bx);
        }
        prev = bx;
    }
    sets.len() - n0
}

/// Scratch of `set_merge`, kept between steps.
#[derive(Debug, Default)]
pub struct MergeScratch {
    /// The moved live sets, in set order.
    moved: Vec<u32>,
    /// Per moved set, its number of overlapping pairs, then their exclusive prefix sum.
    edge_off: Vec<u32>,
    /// Overlapping pairs `[moved set, other set]`.
    edges: Vec<[u32; 2]>,
    label: Vec<u32>,
    label_next: Vec<u32>,
    hull: Vec<[u32; 4]>,
    /// Per set: 1 when it is the root of a component of more than one set.
    root: Vec<u32>,
}

/// Calls `f(m)` for every live set `m ≠ k` that overlaps set `k`, once each, unless `m` is moved
/// and `m < k` (that pair is listed from `m`). A pair of sets shares one or more bins; it is taken
/// in the first of them.
#[inline]
fn for_each_overlap(sets: &[ContactSet], index: &SetIndex, k: u32, mut f: impl FnMut(u32)) {
    let bx = sets[k as usize].bx;
    for bin in box_bins(&bx) {
        for &m in index.bin(bin as usize) {
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

/// Stage `set_overlap`, count pass: `count[t]` = the overlapping pairs listed from moved set
/// `moved[t]`.
pub fn set_overlap_count(sets: &[ContactSet], index: &SetIndex, moved: &[u32], count: &mut [u32]) {
    count
        .par_iter_mut()
        .zip(moved.par_iter())
        .with_min_len(OVERLAP_TASK)
        .for_each(|(c, &k)| {
            let mut n = 0;
            for_each_overlap(sets, index, k, |_| n += 1);
            *c = n;
        });
}

/// Stage `set_overlap`, write pass: moved set `moved[t]` writes its pairs `[moved[t], m]` at
/// `edges[off[t]..]` (`off`: the exclusive prefix sum of the count pass), in bin order.
pub fn set_overlap_write(
    sets: &[ContactSet],
    index: &SetIndex,
    moved: &[u32],
    off: &[u32],
    edges: &mut [[u32; 2]],
) {
    let out = SyncPtr::new(edges);
    moved
        .par_iter()
        .zip(off.par_iter())
        .with_min_len(OVERLAP_TASK)
        .for_each(|(&k, &o)| {
            let mut at = o as usize;
            for_each_overlap(sets, index, k, |m| {
                // SAFETY: moved set t alone writes `edges[off[t]..off[t] + count[t]]`, and the
                // write pass finds the same pairs as the count pass.
                unsafe { out.write(at, [k, m]) };
                at += 1;
            });
        });
}

/// Stage `merge_label`, one Jacobi step of min-label propagation: `next[x] = min(label[x],
/// label[label[x]])` for every set (pointer jumping), then for every pair `(a, b)`: `next[a] =
/// min(next[a], label[b])` and `next[b] = min(next[b], label[a])`. Returns whether a label changed.
/// Labels only decrease and always name a set of the same component, so the fixed point is the
/// smallest index of each component.
pub fn merge_label(edges: &[[u32; 2]], label: &[u32], next: &mut [u32]) -> bool {
    for x in 0..label.len() {
        next[x] = label[x].min(label[label[x] as usize]);
    }
    for &[a, b] in edges {
        let (a, b) = (a as usize, b as usize);
        next[a] = next[a].min(label[b]);
        next[b] = next[b].min(label[a]);
    }
    next != label
}

/// Stage `merge_hull`: for every live set `x` of a component of several sets, its box into the
/// hull of the component's root `label[x]` (`hull` starts as each set's own box), and `root[r] = 1`
/// for those roots.
pub fn merge_hull(sets: &[ContactSet], label: &[u32], hull: &mut [[u32; 4]], root: &mut [u32]) {
    for (x, s) in sets.iter().enumerate() {
        let r = label[x] as usize;
        if s.flags & SET_LIVE == 0 || r == x {
            continue;
        }
        hull[r] = box_hull(&hull[r], &s.bx);
        root[r] = 1;
    }
}

/// Stage `merge_apply`: roots take their component's hull (dirty; moved if the box grew), the other
/// sets of a component are no longer live. Returns how many sets were merged away and the pool
/// space their models held.
pub fn merge_apply(
    label: &[u32],
    hull: &[[u32; 4]],
    root: &[u32],
    sets: &mut [ContactSet],
) -> (u64, PoolGarbage) {
    let mut merged = 0;
    let mut garbage = PoolGarbage::default();
    for (x, s) in sets.iter_mut().enumerate() {
        if s.flags & SET_LIVE == 0 {
            continue;
        }
        if label[x] as usize != x {
            garbage.add(model_sizes(s));
            *s = ContactSet::default();
            merged += 1;
        } else if root[x] != 0 {
            if hull[x] != s.bx {
                s.bx = hull[x];
                s.flags |= SET_MOVED;
            }
            s.flags |= SET_DIRTY;
        }
    }
    (merged, garbage)
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
) -> (u64, PoolGarbage) {
    let mut merged = 0;
    let mut garbage = PoolGarbage::default();
    loop {
        index.build(sets, nq);
        sc.moved.clear();
        sc.moved.extend(
            (0..sets.len() as u32).filter(|&k| {
                sets[k as usize].flags & (SET_LIVE | SET_MOVED) == SET_LIVE | SET_MOVED
            }),
        );
        if sc.moved.is_empty() {
            return (merged, garbage);
        }
        sc.edge_off.clear();
        sc.edge_off.resize(sc.moved.len(), 0);
        set_overlap_count(sets, index, &sc.moved, &mut sc.edge_off);
        let mut total = 0u32;
        for c in sc.edge_off.iter_mut() {
            let n = *c;
            *c = total;
            total += n;
        }
        if total > 0 {
            sc.edges.clear();
            sc.edges.resize(total as usize, [0; 2]);
            set_overlap_write(sets, index, &sc.moved, &sc.edge_off, &mut sc.edges);
        }
        for &k in &sc.moved {
            sets[k as usize].flags &= !SET_MOVED;
        }
        if total == 0 {
            return (merged, garbage);
        }
        let n = sets.len();
        sc.label.clear();
        sc.label.extend(0..n as u32);
        sc.label_next.clear();
        sc.label_next.resize(n, 0);
        while merge_label(&sc.edges, &sc.label, &mut sc.label_next) {
            std::mem::swap(&mut sc.label, &mut sc.label_next);
        }
        sc.hull.clear();
        sc.hull.extend(sets.iter().map(|s| s.bx));
        sc.root.clear();
        sc.root.resize(n, 0);
        merge_hull(sets, &sc.label, &mut sc.hull, &mut sc.root);
        let (m, g) = merge_apply(&sc.label, &sc.hull, &sc.root, sets);
        merged += m;
        garbage.add_all(&g);
    }
}
