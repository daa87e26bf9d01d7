//! The contact sets' forces onto the control points, gathered per control point, never scattered,
//! so the sums come out the same for any number of threads (DESIGN §7).
//!
//! After the evaluation, rebuilds and springs every live set `k` holds its force on each of its
//! control points in its range of `fout_pool` (`cp_off + t` for the set's `t`-th point, whose global
//! index is `cp_pool[cp_off + t]`). Two stages:
//! - `set_point_table` builds the point → record table, records ordered by point, then by set: a
//!   counting sort of the live sets' `cp_pool` entries (count per point, exclusive prefix sum into
//!   `start`, write in set order). A record is the pool index `cp_off + t`, which names the set and
//!   the local index at once.
//! - `set_gather`: each control point `p` adds the records `start[p]..start[p + 1]` to `force[p]`,
//!   one by one in that order (points are independent and run in parallel).
//!
//! On the GPU the same order comes from a stable sort by point of the records listed set by set (a
//! count → prefix sum → write over the sets), as the exact path orders its records
//! ([`crate::contact::contact_slots`]).

use super::sets::{ContactSet, SET_LIVE};
use crate::contact::ContactError;
use crate::math::V3;
use rayon::prelude::*;

/// Control points per task of the parallel gather.
const GATHER_TASK: usize = 1024;

/// Stage `set_point_table`: `start` (`num_points + 1` entries) and `records` (see the module doc)
/// for the live sets of `sets`. The buffers keep their capacity.
pub fn set_point_table(
    sets: &[ContactSet],
    cp_pool: &[u32],
    num_points: usize,
    start: &mut Vec<u32>,
    records: &mut Vec<u32>,
) {
    start.clear();
    start.resize(num_points + 1, 0);
    let live = || sets.iter().filter(|s| s.flags & SET_LIVE != 0);
    for s in live() {
        for &p in &cp_pool[s.cp_off as usize..(s.cp_off + s.n_cp) as usize] {
            start[p as usize + 1] += 1;
        }
    }
    for p in 0..num_points {
        start[p + 1] += start[p];
    }
    records.clear();
    records.resize(start[num_points] as usize, 0);
    // Write in set order; `start[p]` serves as point p's fill pointer and is shifted back after.
    for s in live() {
        let o = s.cp_off as usize;
        for (t, &p) in cp_pool[o..o + s.n_cp as usize].iter().enumerate() {
            let f = &mut start[p as usize];
            records[*f as usize] = (o + t) as u32;
            *f += 1;
        }
    }
    for p in (1..=num_points).rev() {
        start[p] = start[p - 1];
    }
    start[0] = 0;
}

/// Stage `set_gather`: `force[p] += fout_pool[r]` for the records `r` of every control point `p`,
/// in table order (xyz; w untouched). A non-finite term is an error naming the smallest such point.
pub fn set_gather(
    start: &[u32],
    records: &[u32],
    fout_pool: &[V3<f32>],
    force: &mut [[f32; 4]],
) -> Result<(), ContactError> {
    let bad = force
        .par_iter_mut()
        .enumerate()
        .with_min_len(GATHER_TASK)
        .filter_map(|(p, f)| {
            let mut ok = true;
            for &r in &records[start[p] as usize..start[p + 1] as usize] {
                let v = fout_pool[r as usize];
                ok &= v.is_finite();
                f[0] += v.x;
                f[1] += v.y;
                f[2] += v.z;
            }
            (!ok).then_some(p)
        })
        .min();
    match bad {
        Some(point) => Err(ContactError::NotFinite { point }),
        None => Ok(()),
    }
}
