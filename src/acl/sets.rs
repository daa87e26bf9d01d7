//! The set table: contact-set headers ([`ContactSet`]) and their boxes, slot management (new sets
//! reuse free slots), and the bin index the merge stage and the scheduler look sets up by.

use super::{model, AclContact, StictionSpring};
use crate::polar::quat_identity;
use crate::sched::{box_bits, Ownership};
use bytemuck::{Pod, Zeroable};

/// Width (in quadrature indices along the first axis) of the bins used to find overlapping sets.
pub const MERGE_BIN: u32 = 8;

/// Set flag: the slot holds a set.
pub const SET_LIVE: u32 = 1;
/// Set flag: the model must be (re)built before use (new, merged, or invalidated).
pub const SET_DIRTY: u32 = 2;
/// Set flag: no touching pair at the last rebuild — the set gives no force.
pub const SET_ZERO: u32 = 4;

/// A contact set's header.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Pod, Zeroable)]
pub struct ContactSet {
    /// `[u0, u1, v0, v1]`, inclusive quadrature indices.
    pub bx: [u32; 4],
    /// Offset of the set's control points in the point pools, and their number.
    pub cp_off: u32,
    pub n_cp: u32,
    /// Offset of the set's blocks in `k_pool` (`n(n+1)/2` of them unless the set is `SET_ZERO`).
    pub k_off: u32,
    pub flags: u32,
    /// ε: the smallest member-pair distance at the last rebuild.
    pub eps: f32,
    /// Touching pairs at the last rebuild.
    pub touching: u32,
    /// Step of the last rebuild.
    pub rebuilt_step: u32,
    /// Watched pairs (the member pairs closest to the contact distance `2r`): offset in `watch_pool`.
    pub w_off: u32,
    pub n_watch: u32,
    /// Smallest `|d − 2r|` over the watched pairs, and over the other member pairs, at the rebuild.
    pub guard_near: f32,
    pub guard_far: f32,
    /// Sum of the touching pairs' force magnitudes at the rebuild (the scale of the crossing budget).
    pub f_ref: f32,
    /// Rotation from the reference frame to the current one, `[x, y, z, w]` (polar warm start).
    pub quat: [f32; 4],
    /// Reference centre of mass `c̄` (w unused).
    pub centre: [f32; 4],
}
const _: () = assert!(std::mem::size_of::<ContactSet>() == 96);

/// True when boxes `a` and `b` share a member pair `(i, j)`, `i < j`.
#[inline]
pub fn boxes_overlap(a: &[u32; 4], b: &[u32; 4]) -> bool {
    let (u0, u1) = (a[0].max(b[0]), a[1].min(b[1]));
    let (v0, v1) = (a[2].max(b[2]), a[3].min(b[3]));
    u0 <= u1 && v0 <= v1 && u0 < v1
}

/// Smallest box holding both.
#[inline]
pub fn box_hull(a: &[u32; 4], b: &[u32; 4]) -> [u32; 4] {
    [
        a[0].min(b[0]),
        a[1].max(b[1]),
        a[2].min(b[2]),
        a[3].max(b[3]),
    ]
}

/// `[i − α, i + α] × [j − α, j + α]` clamped to `S = [0, nq)`, trimmed of rows and columns without
/// members.
#[inline]
pub fn padded_box(i0: u32, i1: u32, j0: u32, j1: u32, alpha: u32, nq: u32) -> [u32; 4] {
    let mut bx = [
        i0.saturating_sub(alpha),
        (i1 + alpha).min(nq - 1),
        j0.saturating_sub(alpha),
        (j1 + alpha).min(nq - 1),
    ];
    bx[2] = bx[2].max(bx[0] + 1);
    bx[1] = bx[1].min(bx[3] - 1);
    bx
}

/// Whether member pair `(i, j)` of the box is a pair at all.
#[inline]
pub(crate) fn in_box(bx: &[u32; 4], i: u32, j: u32) -> bool {
    i < j && bx[0] <= i && i <= bx[1] && bx[2] <= j && j <= bx[3]
}

/// The sets binned by the first axis (bins of [`MERGE_BIN`]), CSR: for merging, and for the
/// scheduler's ownership queries.
#[derive(Debug, Default)]
pub(crate) struct SetIndex {
    pub(crate) start: Vec<u32>,
    pub(crate) items: Vec<u32>,
    fill: Vec<u32>,
}

impl SetIndex {
    pub(crate) fn build(&mut self, sets: &[ContactSet], nq: u32) {
        let nbins = (nq / MERGE_BIN + 1) as usize;
        self.start.clear();
        self.start.resize(nbins + 1, 0);
        for s in sets.iter().filter(|s| s.flags & SET_LIVE != 0) {
            for bin in s.bx[0] / MERGE_BIN..=s.bx[1] / MERGE_BIN {
                self.start[bin as usize + 1] += 1;
            }
        }
        for i in 0..nbins {
            self.start[i + 1] += self.start[i];
        }
        self.items.clear();
        self.items.resize(self.start[nbins] as usize, 0);
        self.fill.clear();
        self.fill.extend_from_slice(&self.start[..nbins]);
        for (k, s) in sets.iter().enumerate() {
            if s.flags & SET_LIVE == 0 {
                continue;
            }
            for bin in s.bx[0] / MERGE_BIN..=s.bx[1] / MERGE_BIN {
                let f = &mut self.fill[bin as usize];
                self.items[*f as usize] = k as u32;
                *f += 1;
            }
        }
    }

    pub(crate) fn bin(&self, bin: usize) -> &[u32] {
        if bin + 1 >= self.start.len() {
            return &[];
        }
        &self.items[self.start[bin] as usize..self.start[bin + 1] as usize]
    }
}

/// The scheduler's view of the sets (which pairs they own).
pub(crate) struct SetView<'a> {
    pub(crate) sets: &'a [ContactSet],
    pub(crate) index: &'a SetIndex,
    pub(crate) b: u32,
}

impl Ownership for SetView<'_> {
    fn owned_bits(&self, seg_a: u32, seg_b: u32) -> [u32; 4] {
        let mut bits = [0u32; 4];
        let (i0, i1) = (seg_a * self.b, seg_a * self.b + self.b - 1);
        for bin in i0 / MERGE_BIN..=i1 / MERGE_BIN {
            for &k in self.index.bin(bin as usize) {
                let bb = box_bits(self.sets[k as usize].bx, seg_a, seg_b, self.b);
                for w in 0..4 {
                    bits[w] |= bb[w];
                }
            }
        }
        bits
    }
}

impl AclContact {
    pub(crate) fn new_set(&mut self, bx: [u32; 4]) -> u32 {
        let set = ContactSet {
            bx,
            flags: SET_LIVE | SET_DIRTY,
            quat: quat_identity(),
            ..Default::default()
        };
        let k = match self.set_free.pop() {
            Some(k) => {
                self.sets[k as usize] = set;
                k
            }
            None => {
                self.sets.push(set);
                self.springs
                    .extend_from_slice(&[StictionSpring::default(); 4]);
                (self.sets.len() - 1) as u32
            }
        };
        for s in &mut self.springs[4 * k as usize..4 * k as usize + 4] {
            *s = StictionSpring::default();
        }
        k
    }

    pub(crate) fn free_model(&mut self, k: usize) {
        let s = &mut self.sets[k];
        self.garbage_cp += s.n_cp as usize;
        if s.flags & SET_ZERO == 0 {
            self.garbage_k += model::tri_len(s.n_cp as usize);
        }
        self.garbage_w += s.n_watch as usize;
        s.n_watch = 0;
        s.w_off = 0;
        s.n_cp = 0;
        s.k_off = 0;
        s.cp_off = 0;
    }

    pub(crate) fn delete_set(&mut self, k: usize) {
        self.free_model(k);
        let s = &mut self.sets[k];
        s.flags = 0;
        for sp in &mut self.springs[4 * k..4 * k + 4] {
            *sp = StictionSpring::default();
        }
        self.set_free.push(k as u32);
    }
}
