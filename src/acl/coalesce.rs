//! Stages `contact_coalesce` (new sets around the scheduler's touching pairs) and `set_merge`
//! (merging overlapping sets until no two overlap).

use super::sets::{box_hull, boxes_overlap, padded_box};
use super::{AclContact, SET_DIRTY, SET_LIVE};

impl AclContact {
    /// Stage `contact_coalesce`: new sets around the scheduler's touching pairs (boxes `± α`;
    /// consecutive overlapping boxes are merged on the way, the rest is left to `set_merge`).
    pub(crate) fn contact_coalesce(&mut self) -> u64 {
        let alpha = self.params.padding;
        let nq = self.nq;
        let pairs = std::mem::take(&mut self.scratch.pairs);
        let mut pairs = pairs;
        pairs.clear();
        pairs.extend_from_slice(self.sched.touching());
        let n = pairs.len() as u64;
        let mut cur: Option<[u32; 4]> = None;
        for &[i, j] in &pairs {
            let bx = padded_box(i, i, j, j, alpha, nq);
            match cur {
                Some(c) if boxes_overlap(&c, &bx) => cur = Some(box_hull(&c, &bx)),
                Some(c) => {
                    self.new_set(c);
                    cur = Some(bx);
                }
                None => cur = Some(bx),
            }
        }
        if let Some(c) = cur {
            self.new_set(c);
        }
        self.scratch.pairs = pairs;
        n
    }

    fn uf_find(&mut self, mut x: u32) -> u32 {
        while self.uf[x as usize] != x {
            let p = self.uf[x as usize];
            self.uf[x as usize] = self.uf[p as usize];
            x = p;
        }
        x
    }

    /// Stage `set_merge`: merges overlapping sets (through bins of 8 along the first axis), repeating
    /// until no two sets overlap (a hull may overlap further sets: cascading merges). Merged sets are
    /// dirty. Leaves the bin index up to date. Returns the number of sets merged away.
    pub(crate) fn set_merge(&mut self) -> u64 {
        let mut merged = 0;
        loop {
            self.index.build(&self.sets, self.nq);
            self.uf.clear();
            self.uf.extend(0..self.sets.len() as u32);
            let mut any = false;
            let nbins = self.index.start.len().saturating_sub(1);
            for bin in 0..nbins {
                let (s0, s1) = (
                    self.index.start[bin] as usize,
                    self.index.start[bin + 1] as usize,
                );
                for x in s0..s1 {
                    for y in x + 1..s1 {
                        let (a, b) = (self.index.items[x], self.index.items[y]);
                        if !boxes_overlap(&self.sets[a as usize].bx, &self.sets[b as usize].bx) {
                            continue;
                        }
                        let (ra, rb) = (self.uf_find(a), self.uf_find(b));
                        if ra != rb {
                            // The smaller index survives (deterministic).
                            let (lo, hi) = (ra.min(rb), ra.max(rb));
                            self.uf[hi as usize] = lo;
                            any = true;
                        }
                    }
                }
            }
            if !any {
                return merged;
            }
            // Hull of each component, gathered into its root (the smallest index).
            let n = self.sets.len();
            self.hulls.clear();
            self.hulls.extend(self.sets.iter().map(|s| s.bx));
            self.multi.clear();
            self.multi.resize(n, false);
            for k in 0..n {
                if self.sets[k].flags & SET_LIVE == 0 {
                    continue;
                }
                let root = self.uf_find(k as u32) as usize;
                if root != k {
                    self.hulls[root] = box_hull(&self.hulls[root], &self.sets[k].bx);
                    self.multi[root] = true;
                }
            }
            for k in 0..n {
                if self.sets[k].flags & SET_LIVE == 0 {
                    continue;
                }
                let root = self.uf_find(k as u32) as usize;
                if !self.multi[root] {
                    continue;
                }
                // The hull holds the set's box: no pair is released.
                let hull = self.hulls[root];
                if root != k {
                    self.delete_set(k);
                    merged += 1;
                } else {
                    let s = &mut self.sets[k];
                    s.bx = hull;
                    s.flags |= SET_DIRTY;
                }
            }
        }
    }
}
