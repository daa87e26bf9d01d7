//! The contact sets' forces onto the control points, gathered per control point, never scattered,
//! so the sums come out the same for any number of threads (DESIGN §7).
//!
//! After the evaluation, rebuilds and springs every live set `k` holds its force on each of its
//! control points in its range of `fout_pool` (`cp_off + t` for the set's `t`-th point, whose global
//! index is `cp_pool[cp_off + t]`). A *record* is such a `(set, local point)`, written as the pair
//! `(k, at)` of its set and pool index `at = cp_off + t`. The *point table* lists each control
//! point's records: `point_records[point_start[p]..][..point_count[p]]`. Then `set_gather`: each
//! control point `p` adds `fout_pool` at its records to `force[p]`, one by one in set order (by
//! `(k, at)`), so points are independent, run in parallel, and sum in a fixed order.
//!
//! The table is built on the CPU by [`set_point_table`], a counting sort of the live sets'
//! `cp_pool` entries in parallel runs of sets, which lists each point's records in set order. On
//! the GPU by a count with integer atomics, a scan over the points and a write, with no sort (4
//! dispatches in all, the gather's included; a radix sort by point took 9 to 15):
//! 1. `set_point_count` (a thread per set): each live set's record `(k, at)` of point `p` takes
//!    the rank `point_rank[at]` = `point_count[p]`++ (atomics: the ranks of a point's records are
//!    some order of `0..n`, not necessarily the sets' order) and adds 1 to `point_start[p]`;
//! 2. an exclusive scan of `point_start` over `num_points + 1` words ([`crate::scan`]): each point's
//!    first slot and, last, the total (on the GPU, up to [`crate::scan::SCAN_INTO_MAX`] words, one
//!    `scan_into` dispatch that writes the scan of `point_count`, which holds the same counts, into
//!    `point_start`; past it, `point_start` scanned in place);
//! 3. `set_point_write` (16 lanes per set): record `(k, at)` of point `p` into slot
//!    `point_start[p] + point_rank[at]`;
//! 4. `set_gather` (a thread per point): the records in `(k, at)` order by selection (a point has a
//!    handful: one per set it belongs to, at most [`MAX_POINT_RECORDS`]), then `point_start[p]` and
//!    `point_count[p]` cleared for the next step's count.
//!
//! The two tables hold the same records per point, and the gathered forces are the same sums in the
//! same order (tests/gpu_acl.rs).

use super::sets::{ContactSet, SET_LIVE};
use super::SyncPtr;
use crate::layout::{
    AclCounters, AclUniform, ACL_ERROR_GATHER_FULL, ACL_ERROR_NOT_FINITE, ACL_ERROR_RECORDS_FULL,
};
use crate::math::V3;
use rayon::prelude::*;

/// Control points per task of the parallel gather.
const GATHER_TASK: usize = 1024;

/// Most records one control point gathers (the GPU gather's selection, shaders/shared/acl.wgsl
/// `ACL_MAX_POINT_RECORDS`: n (n + 1) loop iterations, well inside lavapipe's 65,535): more raises
/// [`ACL_ERROR_GATHER_FULL`] and only that many are added. A point has one record per set it
/// belongs to, and sets whose boxes overlap are merged: measured on the CPU path, the generated
/// scarf, sack, sweater and afghan in their first steps without relaxation (their most overlapped
/// state) have at most 7 to 9, the default swatch 6 (tests/gpu_acl.rs prints the fixture's).
pub const MAX_POINT_RECORDS: u32 = 128;

/// The error of a step in which a control point had more than [`MAX_POINT_RECORDS`] records
/// (`ACL_ERROR_GATHER_FULL`), on either path.
pub fn gather_full_message() -> String {
    format!(
        "a control point belongs to more than {MAX_POINT_RECORDS} contact sets (the gather's \
         limit); the cloth is more tangled than any measured knit (at most 9)"
    )
}

/// Stage `set_point_table` of the CPU step: `point_start` (`num_points + 1` entries: each point's
/// first record, then the total), `point_count` (`num_points`) and `point_records` (`(set, pool
/// index)` pairs by point, each point's in set order; see the module doc) for the live sets of
/// `sets`. The sets are cut into `chunks` runs (any number: the table does not depend on it),
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
    point_count: &mut Vec<u32>,
    point_records: &mut Vec<[u32; 2]>,
) {
    let chunks = chunks.clamp(1, sets.len().max(1));
    let first = |c: usize| c * sets.len() / chunks;
    let run = |c: usize| &sets[first(c)..first(c + 1)];
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
    point_count.clear();
    point_count.resize(num_points, 0);
    let mut at = 0u32;
    for p in 0..num_points {
        point_start[p] = at;
        for c in 0..chunks {
            let n = hist[c * num_points + p];
            hist[c * num_points + p] = at;
            at += n;
        }
        point_count[p] = at - point_start[p];
    }
    point_start[num_points] = at;
    point_records.clear();
    point_records.resize(at as usize, [0, 0]);
    let out = SyncPtr::new(point_records);
    hist.par_chunks_mut(num_points)
        .enumerate()
        .for_each(|(c, fill)| {
            for (i, s) in run(c).iter().enumerate() {
                if s.flags & SET_LIVE == 0 {
                    continue;
                }
                let k = (first(c) + i) as u32;
                let (o, cps) = points(s);
                for (t, &p) in cps.iter().enumerate() {
                    let f = &mut fill[p as usize];
                    // SAFETY: run c alone writes its records, at the offsets its own row of `hist`
                    // hands out, which are disjoint from every other run's (prefix sum above).
                    unsafe { out.write(*f as usize, [k, (o + t) as u32]) };
                    *f += 1;
                }
            }
        });
}

/// The records kernel and twin look at: a live set's first [`crate::acl::evaluate::MAX_SET_POINTS`]
/// points (a larger set fails the step in `set_evaluate`), as `(pool index, point)`.
fn set_records<'a>(s: &'a ContactSet, cp_pool: &'a [u32]) -> impl Iterator<Item = (u32, u32)> + 'a {
    let live = s.flags & SET_LIVE != 0;
    let n = if live {
        s.n_cp.min(super::evaluate::MAX_SET_POINTS)
    } else {
        0
    };
    (s.cp_off..s.cp_off + n).map(move |at| (at, cp_pool[at as usize]))
}

/// Kernel `set_point_count`: for each record of a live set `k < num_sets` (pool index `at`, point
/// `p = cp_pool[at]`), `point_rank[at]` = `point_count[p]`, then `point_count[p] += 1` and
/// `point_start[p] += 1` (the scan's input). The twin takes the sets in order, so its ranks are the
/// set order; the kernel's atomics give each point's records some order of the same ranks.
/// Also the live sets of each 256 slots into `scan_groups` ([`super::sets::live_groups`]: the
/// kernel's workgroups write them, for `set_compact`; the CPU path passes none).
pub fn set_point_count(
    acl: &AclUniform,
    sets: &[ContactSet],
    cp_pool: &[u32],
    point_start: &mut [u32],
    point_count: &mut [u32],
    point_rank: &mut [u32],
    scan_groups: &mut [u32],
) {
    super::sets::live_groups(acl.num_sets, sets, scan_groups);
    for s in &sets[..acl.num_sets as usize] {
        for (at, p) in set_records(s, cp_pool) {
            point_rank[at as usize] = point_count[p as usize];
            point_count[p as usize] += 1;
            point_start[p as usize] += 1;
        }
    }
}

/// Kernel `set_point_write`: after [`set_point_count`] and the exclusive scan of `point_start`,
/// each record `(k, at)` of a live set `k < num_sets` (point `p = cp_pool[at]`) into slot
/// `point_start[p] + point_rank[at]` of `point_records` (none past `record_capacity`). Records the
/// total, `point_start[num_points]`, in `acl_counters.records`, and [`ACL_ERROR_RECORDS_FULL`] when
/// it exceeds the capacity; and the first control point of set `acl_counters.first_bad_set` (the
/// lowest whose rotation was not finite, if any) in `acl_counters.first_bad_point`.
pub fn set_point_write(
    acl: &AclUniform,
    sets: &[ContactSet],
    cp_pool: &[u32],
    point_start: &[u32],
    point_rank: &[u32],
    point_records: &mut [[u32; 2]],
    acl_counters: &mut AclCounters,
) {
    let total = point_start[acl.num_points as usize];
    acl_counters.records = total;
    if total > acl.record_capacity {
        acl_counters.errors |= ACL_ERROR_RECORDS_FULL;
    }
    // The first control point of the lowest set whose rotation was not finite: the point the
    // CPU step names ([`super::evaluate::set_evaluate_and_force`]).
    let bad = sets[..acl.num_sets as usize].get(acl_counters.first_bad_set as usize);
    if let Some(s) = bad.filter(|s| s.n_cp > 0) {
        acl_counters.first_bad_point = cp_pool[s.cp_off as usize];
    }
    for (k, s) in sets[..acl.num_sets as usize].iter().enumerate() {
        for (at, p) in set_records(s, cp_pool) {
            let slot = point_start[p as usize] + point_rank[at as usize];
            if slot < acl.record_capacity {
                point_records[slot as usize] = [k as u32, at];
            }
        }
    }
}

/// Kernel `set_gather` (and the CPU step's): `force[p] += fout_pool[at]` (xyz; w untouched) for the
/// records `(k, at)` of every control point `p < num_points`
/// (`point_records[point_start[p]..][..point_count[p]]`, any order), added in `(k, at)` order, as
/// the kernel's selection does; then `point_start[p]` and `point_count[p]` (and
/// `point_start[num_points]`) are cleared. A non-finite term raises [`ACL_ERROR_NOT_FINITE`] with the
/// smallest such point in `first_bad_point` (unless `first_bad_set` names a set, whose point
/// [`set_point_write`] put there); a point with more than [`MAX_POINT_RECORDS`] records
/// raises [`ACL_ERROR_GATHER_FULL`] and only that many are looked at (the first in the table).
pub fn set_gather(
    acl: &AclUniform,
    point_start: &mut [u32],
    point_count: &mut [u32],
    point_records: &[[u32; 2]],
    fout_pool: &[[f32; 4]],
    acl_counters: &mut AclCounters,
    force: &mut [[f32; 4]],
) {
    let np = acl.num_points as usize;
    let cap = acl.record_capacity;
    let (errors, bad) = force[..np]
        .par_iter_mut()
        .zip(&point_start[..np])
        .zip(&point_count[..np])
        .enumerate()
        .with_min_len(GATHER_TASK)
        .map(|(p, ((f, &a), &n))| {
            let mut errors = 0;
            if n > MAX_POINT_RECORDS {
                errors |= ACL_ERROR_GATHER_FULL;
            }
            // Past the table's capacity nothing was written (the GPU step reruns larger).
            let n = n.min(MAX_POINT_RECORDS).min(cap - a.min(cap));
            let recs = &point_records[a as usize..(a + n) as usize];
            let mut ok = true;
            let mut add = |r: &[u32; 2]| {
                let v = fout_pool[r[1] as usize];
                ok &= V3::<f32>::from4(v).is_finite();
                f[0] += v[0];
                f[1] += v[1];
                f[2] += v[2];
            };
            // The CPU step's table is in order already; a kernel's table is sorted first (the
            // same order as the kernel's selection: records are distinct pairs).
            if recs.is_sorted() {
                recs.iter().for_each(&mut add);
            } else {
                let mut sorted = recs.to_vec();
                sorted.sort_unstable();
                sorted.iter().for_each(&mut add);
            }
            if !ok {
                errors |= ACL_ERROR_NOT_FINITE;
            }
            (errors, if ok { u32::MAX } else { p as u32 })
        })
        .reduce(|| (0, u32::MAX), |a, b| (a.0 | b.0, a.1.min(b.1)));
    point_start[..=np].fill(0);
    point_count[..np].fill(0);
    acl_counters.errors |= errors;
    // (A set's non-finite rotation named its point already, in `set_point_write`.)
    if acl_counters.first_bad_set == u32::MAX {
        acl_counters.first_bad_point = acl_counters.first_bad_point.min(bad);
    }
}
