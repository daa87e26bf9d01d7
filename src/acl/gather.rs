//! The contact sets' forces onto the control points, gathered per control point, never scattered,
//! so the sums come out the same for any number of threads (DESIGN §7).
//!
//! After the evaluation, rebuilds and springs every live set `k` holds its force on each of its
//! control points in its range of `fout_pool` (`cp_off + t` for the set's `t`-th point, whose global
//! index is `cp_pool[cp_off + t]`). Two stages:
//! - `set_point_table` sorts these records by point, then by set: a counting sort of the live
//!   sets' `cp_pool` entries (count per point, exclusive prefix sum into `start`, write in set
//!   order; runs of sets in parallel). The table holds each record's force itself (the record of
//!   set `k`, local point `t` is `fout_pool[cp_off + t]`), so the gather reads it in order.
//! - `set_gather`: each control point `p` adds its records `start[p]..start[p + 1]` to `force[p]`,
//!   one by one in that order (points are independent and run in parallel).
//!
//! On the GPU the same order comes from a stable sort by point of the records listed set by set (a
//! count → prefix sum → write over the sets), as the exact path orders its records
//! ([`crate::contact::contact_slots`]).

use super::sets::{ContactSet, SET_LIVE};
use super::SyncPtr;
use crate::contact::ContactError;
use crate::math::V3;
use rayon::prelude::*;

/// Control points per task of the parallel gather.
const GATHER_TASK: usize = 1024;

/// Stage `set_point_table`: `start` (`num_points + 1` entries) and `records` (the sets' forces on
/// their points from `fout_pool`, sorted by point, then set; see the module doc) for the live sets
/// of `sets`. The sets are cut into `chunks` runs (any number: the table does not
/// depend on it), counted and written in parallel: each run counts its records per point into its
/// row of `hist` (`chunks × num_points`), the rows are turned into write offsets point by point,
/// run by run (so a point's records from earlier sets come first), and each run writes its records
/// in set order. The buffers keep their capacity.
#[allow(clippy::too_many_arguments)]
pub fn set_point_table(
    sets: &[ContactSet],
    cp_pool: &[u32],
    fout_pool: &[V3<f32>],
    num_points: usize,
    chunks: usize,
    hist: &mut Vec<u32>,
    start: &mut Vec<u32>,
    records: &mut Vec<V3<f32>>,
) {
    let chunks = chunks.clamp(1, sets.len().max(1));
    let run = |c: usize| &sets[c * sets.len() / chunks..(c + 1) * sets.len() / chunks];
    let points = |s: &ContactSet| {
        let o = s.cp_off as usize;
        (o, &cp_pool[o..o + s.n_cp as usize])
    };
    hist.clear();
    hist.resize(chunks * num_points, 0);
    hist.par_chunks_mut(num_points)
        .enumerate()
        .for_each(|(c, h)| {
            for s in run(c).iter().filter(|s| s.flags & SET_LIVE != 0) {
                for &p in points(s).1 {
                    h[p as usize] += 1;
                }
            }
        });
    start.clear();
    start.resize(num_points + 1, 0);
    let mut at = 0u32;
    for p in 0..num_points {
        start[p] = at;
        for c in 0..chunks {
            let n = hist[c * num_points + p];
            hist[c * num_points + p] = at;
            at += n;
        }
    }
    start[num_points] = at;
    records.clear();
    records.resize(at as usize, V3::zero());
    let out = SyncPtr::new(records);
    hist.par_chunks_mut(num_points)
        .enumerate()
        .for_each(|(c, fill)| {
            for s in run(c).iter().filter(|s| s.flags & SET_LIVE != 0) {
                let (o, cps) = points(s);
                for (t, &p) in cps.iter().enumerate() {
                    let f = &mut fill[p as usize];
                    // SAFETY: run c alone writes its records, at the offsets its own row of `hist`
                    // hands out, which are disjoint from every other run's (prefix sum above).
                    unsafe { out.write(*f as usize, fout_pool[o + t]) };
                    *f += 1;
                }
            }
        });
}

/// Stage `set_gather`: `force[p] += r` for the records `r` of every control point `p`, in table
/// order (xyz; w untouched). A non-finite term is an error naming the smallest such point.
pub fn set_gather(
    start: &[u32],
    records: &[V3<f32>],
    force: &mut [[f32; 4]],
) -> Result<(), ContactError> {
    let bad = force
        .par_iter_mut()
        .enumerate()
        .with_min_len(GATHER_TASK)
        .filter_map(|(p, f)| {
            let mut ok = true;
            for &v in &records[start[p] as usize..start[p + 1] as usize] {
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
