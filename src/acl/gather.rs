//! The contact sets' forces onto the control points, gathered per control point, never scattered,
//! so the sums come out the same for any number of threads (DESIGN §7).
//!
//! After the evaluation, rebuilds and springs every live set `k` holds its force on each of its
//! control points in its range of `fout_pool` (`cp_off + t` for the set's `t`-th point, whose global
//! index is `cp_pool[cp_off + t]`). A *record* is such a `(set, local point)`, named by its pool
//! index `cp_off + t`. The *point table* lists the records by point, then by set:
//! `point_records[point_start[p]..point_start[p + 1]]` are the pool indices of point `p`'s
//! records in set order. Then `set_gather`: each control point `p` adds `fout_pool` at its records,
//! one by one in that order, to `force[p]` (points are independent and run in parallel).
//!
//! The table is built on the CPU by [`set_point_table`], a counting sort of the live sets' `cp_pool`
//! entries in parallel runs of sets. On the GPU by count → scan → write over the sets and a stable
//! sort by point, as the exact path orders its records ([`crate::contact::contact_slots`]):
//! 1. `set_point_count`: `set_offsets[k]` = the live set `k`'s number of points (0 otherwise);
//! 2. an exclusive scan of `set_offsets` ([`crate::scan`]): each set's first record, and the total;
//! 3. `set_point_write`: record slot `r` gets key = its point, value = its pool index (the records
//!    listed set by set), sentinels (key `num_points`) past the total;
//! 4. the stable radix sort of those slots by key ([`crate::sort`]): by point, then set;
//! 5. `set_point_start`: `point_start[p]` = the first sorted slot of key `≥ p` (binary search), and
//!    `point_records[i]` = the `i`-th sorted slot's value.
//!
//! The two tables are the same (tests/gpu_acl.rs).

use super::sets::{ContactSet, SET_LIVE};
use super::SyncPtr;
use crate::contact::grid::upper_segment;
use crate::layout::{
    AclCounters, AclUniform, KeyValue, ACL_ERROR_GATHER_FULL, ACL_ERROR_NOT_FINITE,
    ACL_ERROR_RECORDS_FULL,
};
use crate::math::V3;
use rayon::prelude::*;

/// Control points per task of the parallel gather.
const GATHER_TASK: usize = 1024;

/// Most records one control point gathers (the GPU gather's loop bound, shaders/shared/acl.wgsl
/// `ACL_MAX_POINT_RECORDS`): more raises [`ACL_ERROR_GATHER_FULL`] and the rest are not added. A
/// point has one record per set it belongs to: a handful in a knit.
pub const MAX_POINT_RECORDS: u32 = 16384;

/// Stage `set_point_table` of the CPU step: `point_start` (`num_points + 1` entries) and
/// `point_records` (pool indices, sorted by point, then set; see the module doc) for the live sets
/// of `sets`. The sets are cut into `chunks` runs (any number: the table does not depend on it),
/// counted and written in parallel: each run counts its records per point into its row of `hist`
/// (`chunks × num_points`), the rows are turned into write offsets point by point, run by run (so
/// a point's records from earlier sets come first), and each run writes its records in set order.
/// The buffers keep their capacity.
#[allow(clippy::too_many_arguments)]
pub fn set_point_table(
    sets: &[ContactSet],
    cp_pool: &[u32],
    num_points: usize,
    chunks: usize,
    hist: &mut Vec<u32>,
    point_start: &mut Vec<u32>,
    point_records: &mut Vec<u32>,
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
    point_start.clear();
    point_start.resize(num_points + 1, 0);
    let mut at = 0u32;
    for p in 0..num_points {
        point_start[p] = at;
        for c in 0..chunks {
            let n = hist[c * num_points + p];
            hist[c * num_points + p] = at;
            at += n;
        }
    }
    point_start[num_points] = at;
    point_records.clear();
    point_records.resize(at as usize, 0);
    let out = SyncPtr::new(point_records);
    hist.par_chunks_mut(num_points)
        .enumerate()
        .for_each(|(c, fill)| {
            for s in run(c).iter().filter(|s| s.flags & SET_LIVE != 0) {
                let (o, cps) = points(s);
                for (t, &p) in cps.iter().enumerate() {
                    let f = &mut fill[p as usize];
                    // SAFETY: run c alone writes its records, at the offsets its own row of `hist`
                    // hands out, which are disjoint from every other run's (prefix sum above).
                    unsafe { out.write(*f as usize, (o + t) as u32) };
                    *f += 1;
                }
            }
        });
}

/// Kernel `set_point_count`: `set_offsets[k]` = the number of points of set `k` when live, else 0,
/// for `k < num_sets`; `set_offsets[num_sets]` = 0 (the scan's input; it becomes the total).
/// Also the group sums of the `n + 1` words into `scan_groups` ([`crate::scan::write_groups`]:
/// the scan is grouped; the CPU path passes none).
pub fn set_point_count(
    acl: &AclUniform,
    sets: &[ContactSet],
    set_offsets: &mut [u32],
    scan_groups: &mut [u32],
) {
    let n = acl.num_sets as usize;
    for (k, o) in set_offsets[..=n].iter_mut().enumerate() {
        *o = match sets.get(k) {
            Some(s) if k < n && s.flags & SET_LIVE != 0 => s.n_cp,
            _ => 0,
        };
    }
    crate::scan::write_groups(&set_offsets[..=n], scan_groups);
}

/// The sentinel slot past the records: key `num_points`, larger than every point.
pub fn sentinel_slot(num_points: u32) -> KeyValue {
    KeyValue {
        key_lo: num_points,
        key_hi: 0,
        value: u32::MAX,
        _pad: 0,
    }
}

/// Kernel `set_point_write`: slot `r < record_capacity` of `point_slots` gets the `r`-th record of
/// the sets listed in order (`set_offsets` scanned: set `k`'s records start at `set_offsets[k]`,
/// the total at `set_offsets[num_sets]`): key = its control point, value = its pool index; slots
/// past the total get [`sentinel_slot`]. Records the total in `acl_counters.records`, and
/// [`ACL_ERROR_RECORDS_FULL`] when it exceeds the capacity.
pub fn set_point_write(
    acl: &AclUniform,
    sets: &[ContactSet],
    cp_pool: &[u32],
    set_offsets: &[u32],
    point_slots: &mut [KeyValue],
    acl_counters: &mut AclCounters,
) {
    let n = acl.num_sets;
    let total = set_offsets[n as usize];
    acl_counters.records = total;
    if total > acl.record_capacity {
        acl_counters.errors |= ACL_ERROR_RECORDS_FULL;
    }
    point_slots[..acl.record_capacity as usize]
        .par_iter_mut()
        .with_min_len(GATHER_TASK)
        .enumerate()
        .for_each(|(r, slot)| {
            let r = r as u32;
            *slot = if r < total {
                let k = upper_segment(set_offsets, n, r);
                let at = sets[k as usize].cp_off + (r - set_offsets[k as usize]);
                KeyValue {
                    key_lo: cp_pool[at as usize],
                    key_hi: 0,
                    value: at,
                    _pad: 0,
                }
            } else {
                sentinel_slot(acl.num_points)
            };
        });
}

/// Kernel `set_point_start`: over the first `n = min(acl_counters.records, record_capacity)` slots
/// of the sorted `point_slots` (the records; the slots past them are nobody's): for
/// `p ≤ num_points`, `point_start[p]` = the first of them whose key is at least `p` (so
/// `point_start[num_points]` = `n`); for `i < n`, `point_records[i]` = slot `i`'s value.
pub fn set_point_start(
    acl: &AclUniform,
    point_slots: &[KeyValue],
    point_start: &mut [u32],
    point_records: &mut [u32],
    acl_counters: &AclCounters,
) {
    let n = acl_counters.records.min(acl.record_capacity) as usize;
    let slots = &point_slots[..n];
    point_start[..=acl.num_points as usize]
        .par_iter_mut()
        .with_min_len(GATHER_TASK)
        .enumerate()
        .for_each(|(p, s)| *s = slots.partition_point(|kv| kv.key_lo < p as u32) as u32);
    for (r, kv) in point_records[..n].iter_mut().zip(slots) {
        *r = kv.value;
    }
}

/// Kernel `set_gather` (and the CPU step's): `force[p] += fout_pool[r]` (xyz; w untouched) for the
/// records `r` of every control point `p < num_points`, in table order. A non-finite term raises
/// [`ACL_ERROR_NOT_FINITE`] with the smallest such point in `first_bad_point`; a point with more than
/// [`MAX_POINT_RECORDS`] records adds only that many and raises [`ACL_ERROR_GATHER_FULL`].
pub fn set_gather(
    acl: &AclUniform,
    point_start: &[u32],
    point_records: &[u32],
    fout_pool: &[[f32; 4]],
    acl_counters: &mut AclCounters,
    force: &mut [[f32; 4]],
) {
    let (errors, bad) = force[..acl.num_points as usize]
        .par_iter_mut()
        .enumerate()
        .with_min_len(GATHER_TASK)
        .map(|(p, f)| {
            let (a, b) = (point_start[p], point_start[p + 1]);
            let mut errors = 0;
            let end = if b - a > MAX_POINT_RECORDS {
                errors |= ACL_ERROR_GATHER_FULL;
                a + MAX_POINT_RECORDS
            } else {
                b
            };
            let mut ok = true;
            for &r in &point_records[a as usize..end as usize] {
                let v = fout_pool[r as usize];
                ok &= V3::<f32>::from4(v).is_finite();
                f[0] += v[0];
                f[1] += v[1];
                f[2] += v[2];
            }
            if !ok {
                errors |= ACL_ERROR_NOT_FINITE;
            }
            (errors, if ok { u32::MAX } else { p as u32 })
        })
        .reduce(|| (0, u32::MAX), |a, b| (a.0 | b.0, a.1.min(b.1)));
    acl_counters.errors |= errors;
    acl_counters.first_bad_point = acl_counters.first_bad_point.min(bad);
}
