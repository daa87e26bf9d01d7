//! Stage `segment_monitor` of the scheduler, one task per segment: the cell box each segment keeps
//! (`cells`, with hysteresis: last step's box `prev_cells` while this step's box padded by `r` is
//! within it, else that box with the margin `aabb_raster_movement` noted, [`CellBox::kept`] and
//! [`super::CELL_MARGIN`]); then from this step's movement intervals (`mv1`, `mv2`) and the cell
//! boxes kept, each segment's [`SegmentMotion`]
//! record (`motion`), which the examination reads: the movement `mv1`, the reference change of
//! movement `mv2_ref` (reset to `mv2` when `mv2` left it by more than `ω/2`: the segment is then
//! *monitored* and all its entries are examined now), the monitored flag and whether the segment
//! left a cell (its entries may have to be dropped). Counts go to `sched_counters.monitored` and
//! `.left`, and the segments that entered a cell (their box not within last step's: the grid and
//! the newcomers have work) to `.entered`, each also listed in `movers` (the first
//! [`NEWCOMER_LIST_MAX`], for the listed newcomer search,
//! [`super::newcomers::newcomer_list_write`]; here in segment order, on the GPU in the order its
//! threads count them). At the first step the reference is `mv2` itself.

use super::{CellBox, Interval};
use crate::layout::{
    SchedCounters, SchedUniform, SegmentMotion, NEWCOMER_LIST_MAX, SCHED_NO_MONITORING,
};
use rayon::prelude::*;

/// Stage `segment_monitor` (kernel `shaders/segment_monitor.wgsl`).
#[allow(clippy::too_many_arguments)]
pub fn segment_monitor(
    sched: &SchedUniform,
    mv1: &[Interval],
    mv2: &[Interval],
    cells: &mut [CellBox],
    prev_cells: &[CellBox],
    motion: &mut [SegmentMotion],
    counters: &mut SchedCounters,
    movers: &mut [u32],
) {
    let n = sched.num_segments as usize;
    let half_omega = 0.5 * sched.omega;
    // (Only step 0 examines every bin.)
    let first = sched.bins_due == u32::MAX;
    let monitoring = sched.switches & SCHED_NO_MONITORING == 0;
    let (monitored, left, entered) = motion[..n]
        .par_iter_mut()
        .zip(cells[..n].par_iter_mut())
        .with_min_len(1024)
        .enumerate()
        .map(|(s, (m, c))| {
            *c = c.kept(&prev_cells[s]);
            let mut mon = 0;
            if first {
                m.mv2_ref = mv2[s];
            } else if monitoring && mv2[s].drift_from(&m.mv2_ref) > half_omega {
                m.mv2_ref = mv2[s];
                mon = 1;
            }
            m.mv1 = mv1[s];
            m.mon = mon;
            m.left = !prev_cells[s].within(c) as u32;
            (mon, m.left, !c.within(&prev_cells[s]) as u32)
        })
        .reduce(|| (0, 0, 0), |a, b| (a.0 + b.0, a.1 + b.1, a.2 + b.2));
    counters.monitored += monitored;
    counters.left += left;
    if entered > 0 {
        let entering = (0..n).filter(|&s| !cells[s].within(&prev_cells[s]));
        // (The CPU run, which needs no list, passes an empty one.)
        for (slot, s) in (counters.entered..NEWCOMER_LIST_MAX).zip(entering) {
            if let Some(m) = movers.get_mut(slot as usize) {
                *m = s as u32;
            }
        }
    }
    counters.entered += entered;
}
