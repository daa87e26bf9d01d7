//! ACL's pools that may pass a binding, in pages, each a buffer of its own: the `K̄` blocks pool
//! (`k_pool`), the watch pools (`watch_pool`, `watch_loc_pool`) and the rebuild round's pair
//! terms (`rebuild_terms`) of the GPU step, and the round's watched-pair scratch (`plan_watch`,
//! `plan_watch_loc`). The layout, and what the host does with it (carrying a pool into a larger
//! one, and its checkpoint image).
//!
//! Why: a set of `n` control points keeps `n(n+1)/2` blocks, and a garment's pool at its target
//! radius is larger than a binding may be (332 MB for the afghan, 203 MB for the sack, against the
//! 128 MiB of wgpu's default `max_storage_buffer_binding_size`, lavapipe's too); the sack's first
//! rounds, which build every set, list 170 MB of pair terms.
//!
//! The layout (blocks; terms alike). The pool's offsets (`ContactSet::k_off`, from `pool_alloc`'s
//! prefix sums and the compaction's) stay those of one flat pool; a set lives whole in the page of
//! its first block, `page = k_off / stride`, at `k_off − page · stride`. Page `p` therefore holds
//! the flat range `[p · stride, p · stride + stride + room)`: a set that starts near the end of
//! its stride runs on into its page's last `room` blocks, which the next page holds too (as
//! unused room: that range's blocks belong to the set that starts before it). So offsets are
//! allocated as before, with no sequential packing, and a kernel needs one page at a time: the
//! kernels that touch a pool (`set_force`, `set_rebuild`, `pool_compact_blocks`;
//! `set_rebuild_headers` for the terms; `set_evaluate`, `set_rebuild_watch`, `pool_compact_watch`
//! for the watch pools, where a set without watched pairs belongs to page 0) are dispatched once
//! per page with a [`PoolPage`] uniform, and a thread acts only for the ranges of its page. A pool
//! that fits one binding is one page with an infinite stride, as before (one dispatch).
//! `set_rebuild`, dispatched once per pair of a blocks page and a terms page, and
//! `set_rebuild_watch`, once per pair of a scratch page and a watch pools page, take in each only
//! the run of dirty indices whose plans the pair holds ([`RebuildRun`], found by
//! `set_rebuild_runs`: [`crate::acl::rebuild::set_rebuild_runs`]), not a workgroup per dirty set.
//!
//! The watched-pair scratch is paged by dirty index (a page holds `stride` dirty sets,
//! `MAX_WATCH` slots each, and no room): `set_rebuild_size` and `set_rebuild_watch` are
//! dispatched once per page, a workgroup acting only for a set of its page. The first round of a
//! run rebuilds every set, and its scratch is 512 bytes a set slot in each buffer (277 MB for the
//! afghan).
//!
//! The room: every set the GPU builds has at most [`MAX_BOX_CPS`] control points
//! (`set_rebuild_size` gives a larger one `PLAN_TOO_LARGE` and no model), hence at most
//! [`MAX_SET_BLOCKS`] blocks; a set keeps at most `MAX_WATCH` (32) watched pairs; a plan lists
//! at most `MAX_REBUILD_WORK` terms (a larger one stops the step). The afghan's watch pools at
//! its first relaxation radius count 14.4 million pairs (230 MB each) on lavapipe.

use bytemuck::{Pod, Zeroable};

/// The most raw control points of a rebuilt set's box on the GPU (`MAX_BOX_CPS` of
/// shaders/shared/acl_rebuild.wgsl).
pub const MAX_BOX_CPS: u32 = 512;

/// The most (i, j) quadrature positions of a rebuilt set's box on the GPU (`MAX_BOX_PAIRS` of
/// shaders/shared/acl_rebuild.wgsl): a set whose box spans more gets no model there, and the GPU
/// step stops naming the limit (`acl::rebuild::POOL_BOX_TOO_LARGE`). The CPU path has no such
/// bound.
pub const MAX_BOX_PAIRS: u32 = 65536;

/// The most `K̄` blocks a set built on the GPU keeps: `n(n+1)/2` for `n = MAX_BOX_CPS`.
pub const MAX_SET_BLOCKS: u32 = MAX_BOX_CPS * (MAX_BOX_CPS + 1) / 2;

/// Uniform `page_pairs` of `set_rebuild_runs` and `set_rebuild_args`
/// ([`crate::acl::rebuild::set_rebuild_runs`]): the strides and page counts of the blocks pool
/// and of the rebuild's pair terms, whose pairs of pages `set_rebuild` is dispatched over, and of
/// the watched-pair scratch (by dirty index) and the watch pools, `set_rebuild_watch`'s.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Pod, Zeroable)]
pub struct PagePairs {
    pub block_stride: u32,
    pub term_stride: u32,
    pub block_pages: u32,
    pub term_pages: u32,
    pub scratch_stride: u32,
    pub watch_stride: u32,
    pub scratch_pages: u32,
    pub watch_pages: u32,
}
const _: () = assert!(std::mem::size_of::<PagePairs>() == 32);

impl PagePairs {
    /// `set_rebuild`'s pairs (a blocks page and a terms page): the first runs.
    pub fn rebuild_pairs(&self) -> u32 {
        self.block_pages * self.term_pages
    }

    /// `set_rebuild_watch`'s pairs (a scratch page and a watch pools page): the runs after
    /// [`PagePairs::rebuild_pairs`].
    pub fn watch_pairs(&self) -> u32 {
        self.scratch_pages * self.watch_pages
    }

    /// How many runs there are.
    pub fn count(&self) -> u32 {
        self.rebuild_pairs() + self.watch_pairs()
    }
}

/// Binding `rebuild_run` of `set_rebuild`: the indirect grid of one pair of pages' dispatch
/// (`groups_*`, as [`crate::shaders::dispatch_grid`] makes them) and the run of dirty indices
/// `[first, end)` its workgroups take, in order; [`RebuildRun::ALL`] where the pools are one page
/// each (the dispatch then takes the round's grid over every dirty set). Buffer `rebuild_args`
/// holds one per pair, [`RUN_SLOT_BYTES`] apart (a storage binding's offset must be a multiple of
/// `min_storage_buffer_offset_alignment`, at most 256).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Pod, Zeroable)]
pub struct RebuildRun {
    pub groups_x: u32,
    pub groups_y: u32,
    pub groups_z: u32,
    pub first: u32,
    pub end: u32,
    pub _pad0: u32,
    pub _pad1: u32,
    pub _pad2: u32,
}
const _: () = assert!(std::mem::size_of::<RebuildRun>() == 32);

impl RebuildRun {
    /// Every dirty index (the pools in one page each).
    pub const ALL: RebuildRun = RebuildRun {
        groups_x: 0,
        groups_y: 0,
        groups_z: 0,
        first: 0,
        end: u32::MAX,
        _pad0: 0,
        _pad1: 0,
        _pad2: 0,
    };
}

/// The bytes between two pairs' [`RebuildRun`]s in buffer `rebuild_args`.
pub const RUN_SLOT_BYTES: u64 = 256;

/// Which page of the blocks pool a dispatch binds: the kernels' uniform `block_page`.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Pod, Zeroable)]
pub struct PoolPage {
    /// The page bound as `k_pool` (`set_force`, `set_rebuild`) or as `k_next`
    /// (`pool_compact_blocks`).
    pub page: u32,
    /// `pool_compact_blocks`: the page of the old pool bound as `k_pool` (the others: `page`).
    pub source: u32,
    /// Blocks of the flat pool per page (`u32::MAX`: one page holds the pool).
    pub stride: u32,
    /// Blocks the page bound as `k_pool` (or `k_next`) holds: a write past it is skipped.
    pub len: u32,
}
const _: () = assert!(std::mem::size_of::<PoolPage>() == 16);

impl PoolPage {
    /// The one page of a pool of `len` blocks that is not paged (the CPU path's).
    pub fn whole(len: usize) -> PoolPage {
        PoolPage {
            page: 0,
            source: 0,
            stride: u32::MAX,
            len: len.min(u32::MAX as usize) as u32,
        }
    }

    /// Whether the set whose blocks start at `k_off` lives in page `self.page`.
    pub fn holds(&self, k_off: u32) -> bool {
        k_off / self.stride == self.page
    }

    /// Whether the range of `n` entries from `off` lives in page `self.page`: an empty one (a set
    /// without watched pairs, whose offset may be the pool's end, past every page) in page 0.
    pub fn holds_range(&self, off: u32, n: u32) -> bool {
        if n == 0 {
            self.page == 0
        } else {
            self.holds(off)
        }
    }

    /// Whether it lives in page `self.source` (the compaction's old pool).
    pub fn source_holds(&self, k_off: u32) -> bool {
        k_off / self.stride == self.source
    }

    /// The flat offset of page `self.page`'s first block.
    pub fn base(&self) -> u32 {
        self.page.wrapping_mul(self.stride)
    }

    /// The flat offset of page `self.source`'s first block.
    pub fn source_base(&self) -> u32 {
        self.source.wrapping_mul(self.stride)
    }
}

/// What a pool's pages may hold on a device: at most `most` entries a page (what a binding holds),
/// `room` of them past its stride (the largest range a pool holds).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PageLimits {
    pub most: u32,
    pub room: u32,
}

/// What a page of each of ACL's paged buffers holds on a device: the `K̄` blocks pool, the
/// rebuild round's pair terms, its watched-pair scratch (`plan_watch`, `plan_watch_loc`), whose
/// entries are dirty sets of [`WATCH_SLOT_BYTES`] each, with no room (every set has its own
/// slots), and the watch pools.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AclPageLimits {
    pub blocks: PageLimits,
    pub terms: PageLimits,
    pub scratch: PageLimits,
    /// The watch pools (`watch_pool`, `watch_loc_pool`; 16 bytes an entry), with room for a
    /// set's `MAX_WATCH` watched pairs.
    pub watch: PageLimits,
}

/// The bytes of a dirty set's slots in the rebuild's watched-pair scratch, in each of
/// `plan_watch` and `plan_watch_loc` (`MAX_WATCH` pairs of 16 bytes).
pub const WATCH_SLOT_BYTES: u64 = (super::MAX_WATCH * 16) as u64;
const _: () = assert!(std::mem::size_of::<super::rebuild::WatchPair>() == 16);
const _: () = assert!(std::mem::size_of::<super::rebuild::WatchLoc>() == 16);

/// One copy of blocks between two pools' pages: `blocks` blocks from page `from.0` at `from.1` to
/// page `to.0` at `to.1`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PageCopy {
    pub from: (usize, u64),
    pub to: (usize, u64),
    pub blocks: u64,
}

/// The pages of a blocks pool of some capacity.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PoolPages {
    /// Blocks of the flat pool per page (`u32::MAX`: one page).
    pub stride: u32,
    /// Blocks a page holds past its stride, for the set that starts at its end:
    /// [`MAX_SET_BLOCKS`] (tests make it smaller: a set larger than the room would find no room
    /// for its blocks, so its forces, and a run's positions, would differ from one page's).
    pub room: u32,
    /// Blocks each page holds.
    pub lens: Vec<u32>,
}

/// Why a pool cannot be paged: a page must hold a stride and the largest set.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error(
    "a pool of {cap} entries needs pages, and a page of at most {most} cannot hold its largest \
     range ({room}) and more"
)]
pub struct PagesError {
    pub cap: u32,
    pub most: u32,
    pub room: u32,
}

impl PoolPages {
    /// One page of `cap` blocks.
    pub fn flat(cap: u32) -> PoolPages {
        PoolPages {
            stride: u32::MAX,
            room: 0,
            lens: vec![cap],
        }
    }

    /// The pages of a pool of `cap` entries where a binding holds at most `limits.most`: one page
    /// when it fits, else pages of stride `most − room`, `room` the largest range of the pool
    /// ([`MAX_SET_BLOCKS`] for the blocks).
    pub fn new(cap: u32, limits: PageLimits) -> Result<PoolPages, PagesError> {
        let PageLimits { most, room } = limits;
        if cap <= most {
            return Ok(PoolPages::flat(cap));
        }
        if most <= room {
            return Err(PagesError { cap, most, room });
        }
        Ok(PoolPages::with_stride(most - room, room, cap))
    }

    /// The pages of stride `stride` of a pool of `cap` blocks (one page for `u32::MAX`). A page
    /// holds its stride and the `room` the largest set starting at its end runs into, but
    /// nothing past the capacity (the allocation flags a set that would pass it, and builds
    /// nothing).
    pub fn with_stride(stride: u32, room: u32, cap: u32) -> PoolPages {
        if stride == u32::MAX {
            return PoolPages::flat(cap);
        }
        let count = cap.div_ceil(stride).max(1);
        let lens = (0..count)
            .map(|p| {
                let base = p as u64 * stride as u64;
                (stride as u64 + room as u64).min(cap as u64 - base.min(cap as u64)) as u32
            })
            .collect();
        PoolPages { stride, room, lens }
    }

    /// How many pages.
    pub fn count(&self) -> usize {
        self.lens.len()
    }

    /// Whether the pool is one page.
    pub fn is_flat(&self) -> bool {
        self.stride == u32::MAX
    }

    /// The flat offset of page `p`'s first block.
    pub fn base(&self, p: usize) -> u64 {
        if self.is_flat() {
            0
        } else {
            p as u64 * self.stride as u64
        }
    }

    /// The uniform of the dispatch that binds page `p` (and, compacting, old page `source`).
    pub fn page(&self, p: usize, source: usize) -> PoolPage {
        PoolPage {
            page: p as u32,
            source: source as u32,
            stride: self.stride,
            len: self.lens[p],
        }
    }

    /// The page the set whose blocks start at `k_off` lives in.
    pub fn page_of(&self, k_off: u32) -> usize {
        (k_off / self.stride) as usize
    }

    /// Blocks of page `p` that a pool's first `len` flat blocks may use (its flat range clipped).
    pub fn used(&self, p: usize, len: u32) -> u64 {
        (len as u64)
            .saturating_sub(self.base(p))
            .min(self.lens[p] as u64)
    }

    /// The copies that carry the first `len` blocks of a pool laid out as `old` into `self` (a
    /// growth: `self` holds at least as many blocks), or `None` where `old` is paged with another
    /// stride (a growth keeps the device's stride, so that does not happen). From one page, each
    /// new page takes its flat range (the blocks past its stride that belong to the next page's
    /// first set are unused room there); from pages of the same stride, each page its own.
    pub fn carry_from(&self, old: &PoolPages, len: u32) -> Option<Vec<PageCopy>> {
        let mut copies = Vec::new();
        if old.is_flat() {
            let have = (len as u64).min(old.lens[0] as u64);
            for p in 0..self.count() {
                let base = self.base(p);
                let blocks = have.saturating_sub(base).min(self.lens[p] as u64);
                if blocks > 0 {
                    copies.push(PageCopy {
                        from: (0, base),
                        to: (p, 0),
                        blocks,
                    });
                }
            }
        } else if old.stride == self.stride {
            for p in 0..old.count().min(self.count()) {
                let blocks = old.used(p, len).min(self.lens[p] as u64);
                if blocks > 0 {
                    copies.push(PageCopy {
                        from: (p, 0),
                        to: (p, 0),
                        blocks,
                    });
                }
            }
        } else {
            return None;
        }
        Some(copies)
    }

    /// The flat image of a pool's first `len` blocks of `elem` bytes from its pages' images
    /// (`pages[p]`: the first [`PoolPages::used`] blocks of page `p`) and the ranges
    /// `(k_off, blocks)` of the sets that live in it: each page gives its stride, and the set
    /// that runs past its page's stride gives the blocks it keeps in its own page's room (the
    /// next page holds nothing there). Entries no set uses are the pages' (unused) contents.
    pub fn flatten(
        &self,
        pages: &[Vec<u8>],
        elem: usize,
        len: u32,
        sets: impl IntoIterator<Item = (u32, u32)>,
    ) -> Vec<u8> {
        let len64 = len as u64;
        let mut flat = vec![0u8; len as usize * elem];
        for (p, bytes) in pages.iter().enumerate().take(self.count()) {
            let base = self.base(p);
            let own = if self.is_flat() {
                len64
            } else {
                (base + self.stride as u64).min(len64)
            };
            let n = (own.saturating_sub(base) as usize).min(bytes.len() / elem);
            if n == 0 {
                continue;
            }
            let at = base as usize * elem;
            flat[at..at + n * elem].copy_from_slice(&bytes[..n * elem]);
        }
        if self.is_flat() {
            return flat;
        }
        for (k_off, blocks) in sets {
            let end = k_off as u64 + blocks as u64;
            if blocks == 0 || end > len64 {
                continue;
            }
            let p = self.page_of(k_off);
            let next = self.base(p) + self.stride as u64;
            if end <= next || p >= pages.len() {
                continue;
            }
            let (from, to) = (
                (next - self.base(p)) as usize,
                (end - self.base(p)) as usize,
            );
            if to * elem > pages[p].len() {
                continue;
            }
            flat[next as usize * elem..end as usize * elem]
                .copy_from_slice(&pages[p][from * elem..to * elem]);
        }
        flat
    }

    /// Each page's image from a flat image of a pool's first blocks (`flat`, `elem` bytes a
    /// block): page `p` takes the flat range it holds, as [`PoolPages::carry_from`] does from
    /// one page.
    pub fn split(&self, flat: &[u8], elem: usize) -> Vec<Vec<u8>> {
        let len = (flat.len() / elem) as u32;
        (0..self.count())
            .map(|p| {
                let n = self.used(p, len) as usize;
                if n == 0 {
                    return Vec::new();
                }
                let base = self.base(p) as usize;
                flat[base * elem..(base + n) * elem].to_vec()
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Sets laid out as the allocation does (a prefix sum, with dead ranges between), each block
    /// a distinct word: (k_off, blocks, first word).
    fn layout(seed: u64, sets: usize) -> (Vec<(u32, u32)>, u32) {
        let mut s = seed;
        let mut next = || {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            s
        };
        let mut at = 0u32;
        let mut v = Vec::new();
        for _ in 0..sets {
            let n = (next() % 40) as u32;
            let blocks = n * (n + 1) / 2;
            if next() % 4 == 0 {
                at += blocks; // garbage
            } else {
                v.push((at, blocks));
                at += blocks;
            }
        }
        (v, at)
    }

    /// The pages a GPU would hold for `sets`: each set in the page of its first block.
    fn paged(pages: &PoolPages, sets: &[(u32, u32)]) -> Vec<Vec<u8>> {
        let mut out: Vec<Vec<u32>> = pages.lens.iter().map(|&n| vec![0; n as usize]).collect();
        for &(k, n) in sets {
            let p = pages.page_of(k);
            let at = (k as u64 - pages.base(p)) as usize;
            for b in 0..n as usize {
                out[p][at + b] = k + b as u32 + 1;
            }
        }
        out.iter()
            .map(|v| bytemuck::cast_slice(v).to_vec())
            .collect()
    }

    fn block_of(flat: &[u8], i: u32) -> u32 {
        bytemuck::cast_slice::<u8, u32>(flat)[i as usize]
    }

    #[test]
    fn a_pool_within_a_binding_is_one_page_and_a_larger_one_pages_by_the_largest_set() {
        let room = MAX_SET_BLOCKS;
        assert_eq!(
            PoolPages::new(1000, PageLimits { most: 1000, room }).unwrap(),
            PoolPages::flat(1000)
        );
        let p = PoolPages::new(
            1000,
            PageLimits {
                most: 250,
                room: 150,
            },
        )
        .unwrap();
        assert_eq!(p.stride, 100);
        assert_eq!(p.count(), 10);
        assert!(p.lens.iter().all(|&n| n <= 250));
        // The stride and the room, but nothing past the capacity.
        assert_eq!(p.lens[0], 250);
        assert_eq!(p.lens[8], 200);
        assert_eq!(p.lens[9], 100);
        let page = p.page(3, 1);
        assert!(page.holds(350) && !page.holds(299) && !page.holds(400));
        assert!(page.source_holds(150) && page.base() == 300 && page.source_base() == 100);
        // An empty range (a set without watched pairs) is page 0's wherever its offset points.
        assert!(page.holds_range(350, 1) && !page.holds_range(350, 0));
        assert!(p.page(0, 0).holds_range(350, 0) && p.page(0, 0).holds_range(1000, 0));
        let most = MAX_SET_BLOCKS + 100_000;
        let p = PoolPages::new(10 * MAX_SET_BLOCKS, PageLimits { most, room }).unwrap();
        assert_eq!((p.stride, p.room), (100_000, MAX_SET_BLOCKS));
        assert_eq!(
            PoolPages::new(
                MAX_SET_BLOCKS + 1,
                PageLimits {
                    most: MAX_SET_BLOCKS,
                    room
                }
            ),
            Err(PagesError {
                cap: MAX_SET_BLOCKS + 1,
                most: MAX_SET_BLOCKS,
                room
            })
        );
        let whole = PoolPage::whole(10);
        assert!(whole.holds(0) && whole.holds(u32::MAX - 1) && whole.base() == 0);
        assert_eq!(MAX_SET_BLOCKS, 131_328);
    }

    /// Every set's blocks survive flatten, split and carrying (from one page and between pages
    /// of one stride), on layouts whose sets run past their strides.
    #[test]
    fn a_paged_pool_keeps_every_sets_blocks_through_its_images_and_growths() {
        for seed in 1..40u64 {
            let (sets, len) = layout(seed, 200);
            let stride = 50 + (seed as u32 * 37) % 300;
            // A room of 820 blocks (sets of < 40 points) instead of MAX_SET_BLOCKS, so that the
            // test stays small.
            let paged_room = |cap: u32| PoolPages::with_stride(stride, 820, cap);
            let pages = paged_room(len + 17);
            assert!(pages.count() > 2, "seed {seed}: {} pages", pages.count());
            let images = paged(&pages, &sets);
            let used: Vec<Vec<u8>> = images
                .iter()
                .enumerate()
                .map(|(p, v)| v[..pages.used(p, len) as usize * 4].to_vec())
                .collect();
            let flat = pages.flatten(&used, 4, len, sets.iter().copied());
            for &(k, n) in &sets {
                for b in 0..n {
                    assert_eq!(block_of(&flat, k + b), k + b + 1, "seed {seed}: set at {k}");
                }
            }
            // Some set runs past its stride (else the test shows nothing).
            assert!(sets.iter().any(|&(k, n)| {
                let p = pages.page_of(k);
                (k + n) as u64 > pages.base(p) + stride as u64
            }));
            // Without the sets, a spilled set's blocks are the next page's (wrong) ones.
            let bare = pages.flatten(&used, 4, len, []);
            assert_ne!(bare, flat, "seed {seed}");
            // The flat image split into pages and flattened again.
            let split = pages.split(&flat, 4);
            assert_eq!(pages.flatten(&split, 4, len, sets.iter().copied()), flat);
            // A growth from one page into these pages, and into more pages of the stride.
            let one = PoolPages::flat(len + 5);
            for (from, from_images) in [(one.clone(), vec![flat.clone()]), (pages.clone(), images)]
            {
                let to = paged_room(len * 2);
                let copies = to.carry_from(&from, len).unwrap();
                let mut out: Vec<Vec<u8>> =
                    to.lens.iter().map(|&n| vec![0u8; n as usize * 4]).collect();
                for c in copies {
                    let src = &from_images[c.from.0][c.from.1 as usize * 4..];
                    let n = c.blocks as usize * 4;
                    out[c.to.0][c.to.1 as usize * 4..c.to.1 as usize * 4 + n]
                        .copy_from_slice(&src[..n]);
                }
                let used: Vec<Vec<u8>> = out
                    .iter()
                    .enumerate()
                    .map(|(p, v)| v[..to.used(p, len) as usize * 4].to_vec())
                    .collect();
                assert_eq!(to.flatten(&used, 4, len, sets.iter().copied()), flat);
            }
            assert_eq!(
                PoolPages::with_stride(stride + 1, 820, len).carry_from(&pages, len),
                None
            );
        }
    }
}
