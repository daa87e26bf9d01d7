//! Stage `grid_build` of the scheduler: one `(cell, segment)` item per grid cell of every segment's
//! cell box (`cells`), counting-sorted by a hash of the cell into buckets (count → prefix sum →
//! write), so that [`SchedGrid::segments_in`] lists the segments of a cell. Within a bucket the items
//! keep segment order, so the grid is a deterministic function of the cell boxes.

use super::{CellBox, GridItem};

/// The scheduler's hashed grid: items sorted by bucket, and each bucket's start.
#[derive(Debug, Default)]
pub struct SchedGrid {
    items: Vec<GridItem>,
    sorted: Vec<GridItem>,
    bucket_start: Vec<u32>,
    mask: usize,
}

#[inline]
fn hash_cell(c: [i32; 3], mask: usize) -> usize {
    let h = (c[0] as u32 as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15)
        ^ (c[1] as u32 as u64).wrapping_mul(0xC2B2_AE3D_27D4_EB4F)
        ^ (c[2] as u32 as u64).wrapping_mul(0x1656_67B1_9E37_79F9);
    ((h ^ (h >> 29)) >> 16) as usize & mask
}

impl SchedGrid {
    /// The segments with an item in cell `c`, in segment order.
    pub fn segments_in(&self, c: [i32; 3]) -> impl Iterator<Item = u32> + '_ {
        let (b0, b1) = if self.bucket_start.is_empty() {
            (0, 0)
        } else {
            let h = hash_cell(c, self.mask);
            (self.bucket_start[h], self.bucket_start[h + 1])
        };
        self.sorted[b0 as usize..b1 as usize]
            .iter()
            .filter(move |it| it.cell == c)
            .map(|it| it.seg)
    }

    /// Forgets the grid (it is rebuilt before it is next read).
    pub fn clear(&mut self) {
        self.items.clear();
        self.sorted.clear();
        self.bucket_start.clear();
        self.mask = 0;
    }
}

/// Stage `grid_build`: the grid of the cell boxes `cells` (invalid boxes have no items).
pub fn grid_build(cells: &[CellBox], grid: &mut SchedGrid) {
    grid.items.clear();
    for (s, cb) in cells.iter().enumerate() {
        if !cb.valid() {
            continue;
        }
        for z in cb.lo[2]..=cb.hi[2] {
            for y in cb.lo[1]..=cb.hi[1] {
                for x in cb.lo[0]..=cb.hi[0] {
                    grid.items.push(GridItem {
                        cell: [x, y, z],
                        seg: s as u32,
                    });
                }
            }
        }
    }
    let nb = (2 * grid.items.len()).next_power_of_two().max(64);
    grid.mask = nb - 1;
    grid.bucket_start.clear();
    grid.bucket_start.resize(nb + 1, 0);
    for it in &grid.items {
        grid.bucket_start[hash_cell(it.cell, grid.mask) + 1] += 1;
    }
    for i in 0..nb {
        grid.bucket_start[i + 1] += grid.bucket_start[i];
    }
    grid.sorted.clear();
    grid.sorted.resize(grid.items.len(), GridItem::default());
    // Stable scatter: items keep segment order within a bucket. `bucket_start[h]` walks to the start
    // of bucket `h + 1` and is shifted back afterwards.
    for it in &grid.items {
        let h = hash_cell(it.cell, grid.mask);
        let slot = grid.bucket_start[h] as usize;
        grid.sorted[slot] = *it;
        grid.bucket_start[h] += 1;
    }
    for i in (1..=nb).rev() {
        grid.bucket_start[i] = grid.bucket_start[i - 1];
    }
    grid.bucket_start[0] = 0;
}
