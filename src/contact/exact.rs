//! The exact reference contact path: every step, all quadrature pairs closer than `2r` found through
//! the hashed uniform grid over spline segments ([`super::grid`]), and their full penalty force
//! applied, by the CPU twins of the GPU kernels, in the kernels' order (see the module doc of
//! [`super`]).
//!
//! The kernels of this file, after the grid's:
//! - [`quadrature_points`]: the `b` points of every segment (w: the point's arc position along its
//!   yarn, for the exclusion rule);
//! - [`exact_contact_forces`]: per candidate segment pair, its touching, non-excluded quadrature
//!   pairs ([`for_each_touching_pair`]); a touching candidate writes its [`ContactRecord`] (forces on
//!   its 8 control-point slots, energy, touching count, which also goes to
//!   `Counters::touching_pairs`) and a 1 into `touch_offsets`;
//! - exclusive scan of `touch_offsets`: the touching candidates numbered, their total in
//!   `Counters::touching_records`;
//! - [`contact_slots`] + radix sort by key: the point → record table, 8 [`KeyValue`]s per touching
//!   record (key: the slot's control point; value: `8·candidate + slot`), sorted stably so each
//!   point's slots are in candidate order;
//! - [`contact_gather`]: every control point adds the slot forces naming it, in that order (no float
//!   atomics; the same sum on both paths and every run).
//!
//! Two skips keep the force loop cheap and change no decision: a candidate whose whole `b × b`
//! block the exclusion rule excludes ([`super::block_excluded`], exact), and points outside the
//! other segment's box of quadrature points grown by `2r ·` [`PREFILTER`].
//!
//! [`ExactContact`] owns every buffer (grown, never shrunk, so a warmed-up step does not allocate)
//! and sizes each variable-size output exactly from the scanned total before writing it, so on the
//! CPU no capacity ever overflows. The GPU driver ([`super::exact_gpu`]) takes the same tables.

use super::grid::{self, aabb_raster, candidate_count, candidate_write, grid_write};
use super::Exclusion;
use super::{ContactError, ContactForce, ContactStats};
use crate::layout::{
    ContactRecord, Counters, KeyValue, Params, SegmentBox, SegmentContact,
    ERROR_CONTACT_NOT_FINITE, ERROR_GATHER_FULL, ERROR_GRID_CELL_FULL, ERROR_GRID_RANGE,
    ERROR_NAN_POSITION,
};
use crate::math::V3;
use crate::scan::{self, resize_with_headroom};
use crate::scene::ContactParams;
use crate::sort;
use crate::spline::QuadratureTable;
use crate::state::{Segment, Topology};
use rayon::prelude::*;

/// A control point named by more touching force slots than this is an error
/// (`ERROR_GATHER_FULL`): the loop bound of `contact_gather`.
pub const MAX_GATHER: u32 = 4096;

/// Kernel `quadrature_points`: `qpts[s·b + k] = Σ_m quad_weights[k][m] pos[cp[m]]`, with
/// w = `quad_arc[s·b + k]` (the point's arc position, for the exclusion rule).
pub fn quadrature_points(
    params: &Params,
    segments: &[Segment],
    pos: &[[f32; 4]],
    quad_weights: &[[f32; 4]],
    quad_arc: &[f32],
    qpts: &mut [[f32; 4]],
) {
    let b = params.quadrature as usize;
    let n = params.num_segments as usize;
    qpts[..n * b]
        .par_chunks_mut(b)
        .with_min_len(256)
        .zip(quad_arc[..n * b].par_chunks(b))
        .zip(segments[..n].par_iter())
        .for_each(|((out, arc), seg)| {
            let q = seg.cp.map(|i| V3::<f32>::from4(pos[i as usize]));
            for ((o, w), &a) in out.iter_mut().zip(quad_weights).zip(arc) {
                let y = q[0] * w[0] + q[1] * w[1] + q[2] * w[2] + q[3] * w[3];
                *o = y.to4(a);
            }
        });
}

/// A point of one segment outside the box of the other's quadrature points grown by
/// `2r · PREFILTER` touches none of them (1 + 2⁻¹⁰, exact in f32): the margin dwarfs the rounding
/// of coordinates below ~2000 cm, so the skip never drops a pair closer than `2r`. Both paths skip
/// alike (shaders/shared/penalty.wgsl).
pub const PREFILTER: f32 = 1.0 + 1.0 / 1024.0;

/// Calls `f(ka, kb, x = y_a − y_b, s = |x|²)` for every touching, non-excluded quadrature pair of
/// candidate `[sa, sb]`, in the order of `exact_contact_forces` (which is this loop): whole blocks
/// the exclusion rule excludes are skipped, and points of `sa` outside `sb`'s grown box.
#[inline]
pub fn for_each_touching_pair(
    params: &Params,
    segments: &[Segment],
    pair: [u32; 2],
    qpts: &[[f32; 4]],
    seg_contact: &[SegmentContact],
    mut f: impl FnMut(u32, u32, V3<f32>, f32),
) {
    let [sa, sb] = pair;
    let b = params.quadrature;
    let r = params.radius;
    let four_r2 = 4.0 * r * r;
    let same_yarn = segments[sa as usize].yarn == segments[sb as usize].yarn;
    let loop_len = seg_contact[sa as usize].loop_len;
    let arc = params.exclusion_arc;
    let qa = &qpts[(sa * b) as usize..((sa + 1) * b) as usize];
    let qb = &qpts[(sb * b) as usize..((sb + 1) * b) as usize];
    let last = (b - 1) as usize;
    if same_yarn
        && super::block_excluded(qa[0][3], qa[last][3], qb[0][3], qb[last][3], loop_len, arc)
    {
        return;
    }
    let mut lo = V3::<f32>::from4(qb[0]);
    let mut hi = lo;
    for y in &qb[1..] {
        let y = V3::from4(*y);
        lo = lo.min_el(y);
        hi = hi.max_el(y);
    }
    let margin = 2.0 * r * PREFILTER;
    let (lo, hi) = (lo - V3::splat(margin), hi + V3::splat(margin));
    for (ka, pa) in qa.iter().enumerate() {
        let yi = V3::<f32>::from4(*pa);
        if yi.x < lo.x || yi.y < lo.y || yi.z < lo.z || yi.x > hi.x || yi.y > hi.y || yi.z > hi.z {
            continue;
        }
        for (kb, pb) in qb.iter().enumerate() {
            let x = yi - V3::from4(*pb);
            let s = x.x * x.x + x.y * x.y + x.z * x.z;
            if s >= four_r2 {
                continue;
            }
            if same_yarn && super::arc_excluded(pa[3], pb[3], loop_len, arc) {
                continue;
            }
            f(ka as u32, kb as u32, x, s);
        }
    }
}

/// One candidate of [`exact_contact_forces`]: its record, and the lowest point of a non-finite slot.
#[inline]
fn candidate_record(
    params: &Params,
    segments: &[Segment],
    pair: [u32; 2],
    qpts: &[[f32; 4]],
    quad_weights: &[[f32; 4]],
    seg_contact: &[SegmentContact],
) -> (ContactRecord, u32) {
    let [sa, sb] = pair;
    let r = params.radius;
    let kw = params.k_contact * seg_contact[sa as usize].weight * seg_contact[sb as usize].weight;
    let mut force = [V3::<f32>::zero(); 8];
    let mut energy = 0.0f32;
    let mut touching = 0u32;
    for_each_touching_pair(params, segments, pair, qpts, seg_contact, |ka, kb, x, s| {
        let (f, df, _) = super::penalty(s, r);
        energy += kw * f;
        touching += 1;
        let g = x * (2.0 * kw * df);
        let (wa, wb) = (&quad_weights[ka as usize], &quad_weights[kb as usize]);
        for m in 0..4 {
            force[m] -= g * wa[m];
            force[4 + m] += g * wb[m];
        }
    });
    let mut rec = ContactRecord {
        energy,
        touching,
        ..ContactRecord::default()
    };
    let mut bad = u32::MAX;
    for m in 0..8 {
        rec.force[m] = force[m].to4(0.0);
        if !force[m].is_finite() {
            let seg = &segments[pair[m / 4] as usize];
            bad = bad.min(seg.cp[m % 4]);
        }
    }
    (rec, bad)
}

/// Kernel `exact_contact_forces`: for every candidate `c < min(count, capacity)` of
/// `counters.candidate_pairs`, the touching, non-excluded quadrature pairs of
/// `for_each_touching_pair` add their force `−∂E/∂y_i` spread through the basis weights,
/// `κw = k_contact · weight_a · weight_b`. A touching candidate writes its [`ContactRecord`] (others
/// leave theirs alone) and adds its pairs to `counters.touching_pairs.count`;
/// `touch_offsets[c]` = 1 when it touches, else 0, for every `c ≤ capacity`. A non-finite slot
/// force raises `ERROR_CONTACT_NOT_FINITE` with the lowest such point in `first_bad_point`.
#[allow(clippy::too_many_arguments)]
pub fn exact_contact_forces(
    params: &Params,
    segments: &[Segment],
    candidates: &[[u32; 2]],
    qpts: &[[f32; 4]],
    quad_weights: &[[f32; 4]],
    seg_contact: &[SegmentContact],
    contact_records: &mut [ContactRecord],
    touch_offsets: &mut [u32],
    counters: &mut Counters,
) {
    let cap_c = counters.candidate_pairs.capacity as usize;
    let count = (counters.candidate_pairs.count as usize).min(cap_c);
    let (touching, bad) = contact_records[..count]
        .par_iter_mut()
        .with_min_len(64)
        .zip(touch_offsets[..count].par_iter_mut())
        .zip(candidates[..count].par_iter())
        .map(|((rec, flag), &pair)| {
            let (r, bad) =
                candidate_record(params, segments, pair, qpts, quad_weights, seg_contact);
            *flag = (r.touching > 0) as u32;
            if r.touching > 0 {
                *rec = r;
            }
            (r.touching, bad)
        })
        .reduce(|| (0, u32::MAX), |a, b| (a.0 + b.0, a.1.min(b.1)));
    touch_offsets[count..=cap_c].fill(0);
    counters.touching_pairs.count += touching;
    if bad != u32::MAX {
        counters.errors |= ERROR_CONTACT_NOT_FINITE;
        counters.first_bad_point = counters.first_bad_point.min(bad);
    }
}

/// Kernel `contact_slots`: slot `j = 8r + m` of the gather table, for each of the first
/// `min(records, touching_records.capacity)` touching candidates, gets key = the control point of
/// slot `m` of the `r`-th touching candidate `c` (from the scanned `touch_offsets`), value `8c + m`;
/// the slots past them are not written (the sort and `contact_gather` stop at the count). Records
/// the number of touching records and its overflow flag in `counters.touching_records`, and the
/// slots in use (`8 · min(records, capacity)`, the sort's length on the GPU) in
/// `counters.gather_slots`.
pub fn contact_slots(
    segments: &[Segment],
    candidates: &[[u32; 2]],
    touch_offsets: &[u32],
    counters: &mut Counters,
    gather_slots: &mut [KeyValue],
) {
    let cap_c = counters.candidate_pairs.capacity;
    let cap_t = counters.touching_records.capacity;
    let total = touch_offsets[cap_c as usize];
    counters.touching_records.count = total;
    counters.gather_slots = 8 * total.min(cap_t);
    if total > cap_t {
        counters.touching_records.overflow = 1;
    }
    gather_slots[..8 * total.min(cap_t) as usize]
        .par_chunks_mut(8)
        .with_min_len(512)
        .enumerate()
        .for_each(|(r, out)| {
            let r = r as u32;
            let c = grid::upper_segment(touch_offsets, cap_c, r);
            let pair = candidates[c as usize];
            for (m, kv) in out.iter_mut().enumerate() {
                *kv = KeyValue {
                    key_lo: segments[pair[m / 4] as usize].cp[m % 4],
                    key_hi: 0,
                    value: 8 * c + m as u32,
                    _pad: 0,
                };
            }
        });
}

/// Kernel `contact_gather`: `force[p]` (xyz) += the slot forces of the records naming point `p`,
/// in the order of the sorted `gather_slots`' slots in use (`counters.gather_slots`; candidate,
/// then slot); more than [`MAX_GATHER`]
/// raises `ERROR_GATHER_FULL` and the rest are not added.
pub fn contact_gather(
    params: &Params,
    gather_slots: &[KeyValue],
    contact_records: &[ContactRecord],
    counters: &mut Counters,
    force: &mut [[f32; 4]],
) {
    let n = counters.gather_slots as usize;
    let slots = &gather_slots[..n];
    let full = force[..params.num_points as usize]
        .par_iter_mut()
        .with_min_len(1024)
        .enumerate()
        .map(|(p, f)| {
            let p = p as u32;
            let start = slots.partition_point(|s| s.key_lo < p);
            let mut acc = V3::<f32>::from4(*f);
            let mut full = false;
            for (k, s) in slots[start..].iter().enumerate() {
                if s.key_lo != p {
                    break;
                }
                if k as u32 == MAX_GATHER {
                    full = true;
                    break;
                }
                let rec = &contact_records[(s.value / 8) as usize];
                acc += V3::from4(rec.force[(s.value % 8) as usize]);
            }
            *f = acc.to4(f[3]);
            full
        })
        .reduce(|| false, |a, b| a || b);
    if full {
        counters.errors |= ERROR_GATHER_FULL;
    }
}

/// The bit length of `n`: the key bits of a sort whose largest key is `n`.
pub fn key_bits(n: u32) -> u32 {
    32 - n.leading_zeros()
}

/// The exact contact model (`contact.model = "exact"`): the full penalty force of every touching
/// quadrature pair, every step. Owns all scratch buffers, so a warmed-up step does not allocate.
///
/// The grid origin is the centroid of the positions of the first [`Self::detect`] on a topology,
/// then kept (a fixed origin keeps the cell keys, and so the summation order, a function of the
/// positions alone; keys reach 2¹⁷ cells either side, hundreds of metres at any sensible cell width).
#[derive(Debug)]
pub struct ExactContact {
    params: ContactParams,
    table: QuadratureTable,
    /// Topology the per-segment tables below were built for: (segments, yarns, edges).
    topo_sig: (usize, usize, usize),
    excl: Exclusion,
    /// The kernels' `params` (the contact fields, counts and grid frame).
    kp: Params,
    origin: Option<[f32; 3]>,
    seg_contact: Vec<SegmentContact>,
    seg_box: Vec<SegmentBox>,
    seg_lo: Vec<[f32; 4]>,
    seg_hi: Vec<[f32; 4]>,
    grid_offsets: Vec<u32>,
    entries: Vec<KeyValue>,
    cand_offsets: Vec<u32>,
    candidates: Vec<[u32; 2]>,
    qpts: Vec<[f32; 4]>,
    records: Vec<ContactRecord>,
    touch_offsets: Vec<u32>,
    /// The topology's segments (the touching-pair walk needs their yarns).
    topo_segments: Vec<Segment>,
    slots: Vec<KeyValue>,
    sort_scratch: Vec<KeyValue>,
    sort_hist: Vec<u32>,
    scan_partials: Vec<u32>,
    counters: Counters,
    last_energy: f64,
    last_touching: u64,
    /// Whether `records` belong to the current `candidates` (set by the forces, cleared by detect).
    records_valid: bool,
    /// Per-segment flags of [`ContactForce::add_step_rebuilds`] (sized with the segment tables).
    seg_touched: Vec<bool>,
}

impl ExactContact {
    /// Exact contact for yarns of radius `radius` with the scene's contact parameters.
    pub fn new(radius: f32, params: &ContactParams) -> Result<Self, ContactError> {
        let b = params.quadrature;
        if !(1..=64).contains(&b) {
            return Err(ContactError::Other(format!(
                "contact.quadrature = {b}: must be between 1 and 64"
            )));
        }
        if !(radius > 0.0 && radius.is_finite()) {
            return Err(ContactError::Other(format!(
                "yarn.radius = {radius}: must be positive"
            )));
        }
        if !(params.grid_cell > 0.0 && params.grid_cell.is_finite()) {
            return Err(ContactError::Other(format!(
                "contact.grid_cell = {}: must be positive",
                params.grid_cell
            )));
        }
        if !(params.stiffness >= 0.0 && params.stiffness.is_finite()) {
            return Err(ContactError::Other(format!(
                "contact.stiffness = {}: must be non-negative",
                params.stiffness
            )));
        }
        if !(params.exclusion_arc >= 0.0 && params.exclusion_arc.is_finite()) {
            return Err(ContactError::Other(format!(
                "contact.exclusion_arc = {}: must be a non-negative length (cm)",
                params.exclusion_arc
            )));
        }
        let kp = Params {
            radius,
            k_contact: params.stiffness,
            quadrature: b,
            grid_cell: params.grid_cell,
            exclusion_arc: params.exclusion_arc,
            ..Params::default()
        };
        Ok(ExactContact {
            params: params.clone(),
            table: QuadratureTable::new(b),
            topo_sig: (usize::MAX, 0, 0),
            excl: Exclusion::default(),
            kp,
            origin: None,
            seg_contact: Vec::new(),
            seg_box: Vec::new(),
            seg_lo: Vec::new(),
            seg_hi: Vec::new(),
            grid_offsets: Vec::new(),
            entries: Vec::new(),
            cand_offsets: Vec::new(),
            candidates: Vec::new(),
            qpts: Vec::new(),
            records: Vec::new(),
            touch_offsets: Vec::new(),
            topo_segments: Vec::new(),
            slots: Vec::new(),
            sort_scratch: Vec::new(),
            sort_hist: Vec::new(),
            scan_partials: Vec::new(),
            counters: Counters::default(),
            last_energy: 0.0,
            last_touching: 0,
            records_valid: false,
            seg_touched: Vec::new(),
        })
    }

    fn prepare(&mut self, topo: &Topology, num_points: usize) {
        self.kp.num_points = num_points as u32;
        let sig = (topo.segments.len(), topo.yarns.len(), topo.edges.len());
        if sig == self.topo_sig {
            return;
        }
        self.topo_sig = sig;
        self.origin = None;
        self.excl = Exclusion::new(topo, &self.params);
        self.topo_segments = topo.segments.clone();
        let b = self.table.b as f32;
        self.seg_contact = topo
            .segments
            .iter()
            .enumerate()
            .map(|(s, seg)| SegmentContact {
                weight: topo.edges[seg.edge as usize].rest_length / b,
                loop_len: self.excl.loop_len(s as u32),
                _pad: [0; 2],
            })
            .collect();
        let n = topo.segments.len();
        self.kp.num_segments = n as u32;
        self.seg_box.resize(n, SegmentBox::default());
        self.seg_lo.resize(n, [0.0; 4]);
        self.seg_hi.resize(n, [0.0; 4]);
        self.grid_offsets.resize(n + 1, 0);
        self.qpts.resize(n * self.table.b as usize, [0.0; 4]);
        self.seg_touched.resize(n, false);
    }

    /// The error of the bits raised so far this step, if any.
    fn check(&self) -> Result<(), ContactError> {
        check_counters(&self.counters, self.params.grid_cell)
    }

    /// Runs the grid and candidate stages and `quadrature_points` for positions `pos`.
    pub fn detect(&mut self, topo: &Topology, pos: &[[f32; 4]]) -> Result<(), ContactError> {
        self.prepare(topo, pos.len());
        if self.origin.is_none() {
            let o = grid::grid_origin(pos).ok_or_else(|| ContactError::NotFinite {
                point: pos
                    .iter()
                    .position(|p| !p[..3].iter().all(|v| v.is_finite()))
                    .unwrap_or(0),
            })?;
            self.origin = Some(o);
            grid::set_grid_frame(&mut self.kp, o);
        }
        let kp = self.kp;
        let n = topo.segments.len();
        self.records_valid = false;
        self.counters = Counters::fresh();
        aabb_raster(
            &kp,
            &topo.segments,
            pos,
            &mut self.seg_box,
            &mut self.grid_offsets,
            &mut self.counters,
            &mut [],
        );
        self.check()?;
        scan::exclusive_scan(&mut self.grid_offsets, &mut self.scan_partials);
        let total = self.grid_offsets[n];
        self.counters.grid_entries.capacity = total;
        resize_with_headroom(&mut self.entries, total as usize, KeyValue::default());
        grid_write(
            &kp,
            &self.seg_box,
            &self.grid_offsets,
            &mut self.entries,
            &mut self.counters,
        );
        sort::radix_sort(
            &mut self.entries,
            super::grid::GRID_KEY_BITS,
            &mut self.sort_scratch,
            &mut self.sort_hist,
            &mut self.scan_partials,
        );
        resize_with_headroom(&mut self.cand_offsets, total as usize + 1, 0);
        candidate_count(
            &kp,
            &self.entries,
            &self.seg_box,
            &mut self.cand_offsets,
            &mut self.counters,
            &mut [],
        );
        self.check()?;
        scan::exclusive_scan(&mut self.cand_offsets, &mut self.scan_partials);
        let total_c = self.cand_offsets[total as usize];
        self.counters.candidate_pairs.capacity = total_c;
        resize_with_headroom(&mut self.candidates, total_c as usize, [0; 2]);
        candidate_write(
            &kp,
            &self.entries,
            &self.seg_box,
            &self.cand_offsets,
            &mut self.candidates,
            &mut self.counters,
        );
        quadrature_points(
            &kp,
            &topo.segments,
            pos,
            &self.table.weights,
            self.excl.quad_arc(),
            &mut self.qpts,
        );
        for (b, (lo, hi)) in self
            .seg_box
            .iter()
            .zip(self.seg_lo.iter_mut().zip(self.seg_hi.iter_mut()))
        {
            *lo = b.lo;
            *hi = b.hi;
        }
        Ok(())
    }

    /// `exact_contact_forces`, `contact_slots`, the sort and `contact_gather` after a
    /// [`Self::detect`]: adds the contact force into `force`; returns (touching pairs, energy).
    fn forces(
        &mut self,
        topo: &Topology,
        force: &mut [[f32; 4]],
    ) -> Result<(u64, f64), ContactError> {
        let kp = self.kp;
        let cap_c = self.counters.candidate_pairs.capacity as usize;
        resize_with_headroom(&mut self.records, cap_c, ContactRecord::default());
        resize_with_headroom(&mut self.touch_offsets, cap_c + 1, 0);
        exact_contact_forces(
            &kp,
            &topo.segments,
            &self.candidates,
            &self.qpts,
            &self.table.weights,
            &self.seg_contact,
            &mut self.records,
            &mut self.touch_offsets,
            &mut self.counters,
        );
        self.check()?;
        scan::exclusive_scan(&mut self.touch_offsets, &mut self.scan_partials);
        let cap_t = self.touch_offsets[cap_c];
        self.counters.touching_records.capacity = cap_t;
        resize_with_headroom(&mut self.slots, 8 * cap_t as usize, KeyValue::default());
        contact_slots(
            &topo.segments,
            &self.candidates,
            &self.touch_offsets,
            &mut self.counters,
            &mut self.slots,
        );
        sort::radix_sort(
            &mut self.slots,
            key_bits(kp.num_points),
            &mut self.sort_scratch,
            &mut self.sort_hist,
            &mut self.scan_partials,
        );
        contact_gather(&kp, &self.slots, &self.records, &mut self.counters, force);
        self.check()?;
        self.records_valid = true;
        let energy = self.touching_records().map(|(_, r)| r.energy as f64).sum();
        Ok((self.counters.touching_pairs.count as u64, energy))
    }

    /// The candidates with a touching pair and their records, after the last step's forces.
    fn touching_records(&self) -> impl Iterator<Item = (&[u32; 2], &ContactRecord)> + '_ {
        let n = self.candidates.len();
        (0..n)
            .filter(|&c| self.touch_offsets[c + 1] > self.touch_offsets[c])
            .map(|c| (&self.candidates[c], &self.records[c]))
    }

    /// Calls `f(sa, ka, sb, kb)` for every touching, non-excluded quadrature pair among the candidates
    /// of the last [`Self::detect`], in candidate order (the decisions of `exact_contact_forces`).
    fn for_each_touching(&self, f: impl FnMut(u32, u32, u32, u32)) {
        self.for_each_touching_of(&self.candidates, f);
    }

    /// [`Self::for_each_touching`] over `candidates`, a run of the last detection's.
    fn for_each_touching_of(&self, candidates: &[[u32; 2]], mut f: impl FnMut(u32, u32, u32, u32)) {
        for &pair in candidates {
            for_each_touching_pair(
                &self.kp,
                &self.topo_segments,
                pair,
                &self.qpts,
                &self.seg_contact,
                |ka, kb, _, _| f(pair[0], ka, pair[1], kb),
            );
        }
    }

    /// The kernels' `params` of the last [`Self::detect`] (contact fields, counts, grid frame).
    pub fn kernel_params(&self) -> &Params {
        &self.kp
    }

    /// The grid origin in use (`None` before the first [`Self::detect`] on this topology).
    pub fn grid_origin(&self) -> Option<[f32; 3]> {
        self.origin
    }

    /// The counters of the last step's stages.
    pub fn counters(&self) -> &Counters {
        &self.counters
    }

    /// The quadrature basis weights (`quad_weights`, b entries).
    pub fn quad_weights(&self) -> &[[f32; 4]] {
        &self.table.weights
    }

    /// The same-yarn exclusion tables (`quad_arc` comes from here).
    pub fn exclusion(&self) -> &Exclusion {
        &self.excl
    }

    /// Per segment weight and loop length (`seg_contact`).
    pub fn segment_contact(&self) -> &[SegmentContact] {
        &self.seg_contact
    }

    /// The padded boxes and cell boxes of the last [`Self::detect`] (`seg_box`).
    pub fn segment_grid_boxes(&self) -> &[SegmentBox] {
        &self.seg_box
    }

    /// The scanned `grid_offsets` of the last [`Self::detect`] (`num_segments + 1`).
    pub fn grid_offsets(&self) -> &[u32] {
        &self.grid_offsets
    }

    /// The grid entries of the last [`Self::detect`], sorted by cell key.
    pub fn grid_entries(&self) -> &[KeyValue] {
        &self.entries
    }

    /// The contact records of the last step (one per candidate; valid where the candidate touches,
    /// see [`Self::touch_offsets`]).
    pub fn records(&self) -> &[ContactRecord] {
        &self.records
    }

    /// The scanned touch flags of the last step: candidate `c` touches when
    /// `touch_offsets[c + 1] > touch_offsets[c]`.
    pub fn touch_offsets(&self) -> &[u32] {
        &self.touch_offsets
    }

    /// The sorted point → slot table of the last step.
    pub fn slots(&self) -> &[KeyValue] {
        &self.slots
    }

    /// Candidate segment pairs found by the last [`Self::detect`] (`a < b`, in cell-key order).
    pub fn candidates(&self) -> &[[u32; 2]] {
        &self.candidates
    }

    /// Padded segment boxes `(lo, hi)` of the last [`Self::detect`].
    pub fn segment_boxes(&self) -> (&[[f32; 4]], &[[f32; 4]]) {
        (&self.seg_lo, &self.seg_hi)
    }

    /// Quadrature points (`seg * b + k`) of the last [`Self::detect`].
    pub fn quadrature_positions(&self) -> &[[f32; 4]] {
        &self.qpts
    }

    /// Contact energy of the last [`ContactForce::add_forces`] call.
    pub fn last_energy(&self) -> f64 {
        self.last_energy
    }

    /// Touching (non-excluded) quadrature pairs of the last [`ContactForce::add_forces`] call.
    pub fn last_touching(&self) -> u64 {
        self.last_touching
    }

    /// Frees the buffers of the grid search that are sized by the cloth's contacts (grid entries,
    /// candidates and their offsets, the sort's scratch), keeping those sized by the topology; the
    /// next [`Self::detect`] makes them again.
    pub(crate) fn release_search_buffers(&mut self) {
        self.records_valid = false;
        self.entries = Vec::new();
        self.sort_scratch = Vec::new();
        self.cand_offsets = Vec::new();
        self.candidates = Vec::new();
    }

    /// All touching, non-excluded quadrature pairs `(i, j)`, `i < j` in the global index
    /// `seg * b + k`, found through the grid (for tests and diagnostics; allocates into `out`).
    pub fn touching_quadrature_pairs(
        &mut self,
        topo: &Topology,
        pos: &[[f32; 4]],
        out: &mut Vec<[u32; 2]>,
    ) -> Result<(), ContactError> {
        self.detect(topo, pos)?;
        out.clear();
        let b = self.table.b;
        // The candidates' pairs in parallel, runs of candidates in order (the pass-through check
        // calls this once a frame for every touching pair of the cloth, while the GPU step
        // waits); the sort makes the list canonical (equal pairs are equal values).
        let runs: Vec<Vec<[u32; 2]>> = self
            .candidates
            .par_chunks(1024)
            .map(|run| {
                let mut pairs = Vec::new();
                self.for_each_touching_of(run, |sa, ka, sb, kb| {
                    let (i, j) = (sa * b + ka, sb * b + kb);
                    pairs.push([i.min(j), i.max(j)]);
                });
                pairs
            })
            .collect();
        out.reserve(runs.iter().map(Vec::len).sum());
        for run in runs {
            out.extend_from_slice(&run);
        }
        // (By one 64-bit key: the same order as the pairs', compared faster.)
        out.par_sort_unstable_by_key(|&[i, j]| ((i as u64) << 32) | j as u64);
        Ok(())
    }
}

impl ContactForce for ExactContact {
    fn add_forces(
        &mut self,
        topo: &Topology,
        pos: &[[f32; 4]],
        _vel: &[[f32; 4]],
        force: &mut [[f32; 4]],
        stats: &mut ContactStats,
    ) -> Result<(), ContactError> {
        let t0 = std::time::Instant::now();
        self.detect(topo, pos)?;
        let (touching, energy) = self.forces(topo, force)?;
        self.last_energy = energy;
        self.last_touching = touching;
        stats.set("touching_pairs", touching as f64);
        stats.set("candidate_segment_pairs", self.candidates.len() as f64);
        stats.set("contact_ms", t0.elapsed().as_secs_f64() * 1e3);
        Ok(())
    }

    /// The exact model keeps no contact models: every touching pair's force is computed afresh every
    /// step, which is a rebuild of everything in contact. So each segment with a touching pair in the
    /// last step counts one rebuild, and over a frame a segment counts the steps it was in contact
    /// (under `--color updates` everything that touched for 13 or more steps is pure red). The
    /// segments are those of the last step's touching records (or, when a detection ran since, the
    /// touching pairs of its candidates, re-tested).
    fn add_step_rebuilds(&mut self, topo: &Topology, counts: &mut [f32]) -> bool {
        if self.seg_touched.len() != topo.segments.len() {
            // No step has run on this topology yet: nothing was computed.
            return true;
        }
        let mut touched = std::mem::take(&mut self.seg_touched);
        touched.fill(false);
        if self.records_valid {
            for (c, _) in self.touching_records() {
                touched[c[0] as usize] = true;
                touched[c[1] as usize] = true;
            }
        } else {
            self.for_each_touching(|sa, _, sb, _| {
                touched[sa as usize] = true;
                touched[sb as usize] = true;
            });
        }
        for (c, &t) in counts.iter_mut().zip(&touched) {
            if t {
                *c += 1.0;
            }
        }
        self.seg_touched = touched;
        true
    }

    /// Touching pairs at `pos` (through [`Self::touching_quadrature_pairs`]); the exact model has no
    /// contact sets, so `boxes` stays empty.
    fn contact_pairs(
        &mut self,
        topo: &Topology,
        pos: &[[f32; 4]],
        touching: &mut Vec<[u32; 2]>,
        boxes: &mut Vec<[u32; 4]>,
    ) -> Result<bool, ContactError> {
        boxes.clear();
        self.touching_quadrature_pairs(topo, pos, touching)?;
        Ok(true)
    }

    /// The exact model computes everything afresh each step except the grid origin, fixed at its
    /// first detection on a topology (the cell keys, hence the candidate order and every sum in
    /// the gather, depend on it).
    fn export_state(
        &self,
        out: &mut crate::checkpoint::StateWriter,
    ) -> Result<(), crate::checkpoint::CheckpointError> {
        out.put_str("contact.model", "exact");
        let origin: Vec<[f32; 3]> = self.origin.into_iter().collect();
        out.put("exact.origin", &origin);
        Ok(())
    }

    fn import_state(
        &mut self,
        topo: &Topology,
        num_points: usize,
        inp: &crate::checkpoint::StateReader,
    ) -> Result<(), crate::checkpoint::CheckpointError> {
        inp.expect_model("exact")?;
        let origin = inp.get::<[f32; 3]>("exact.origin")?;
        if origin.len() > 1 {
            return Err(crate::checkpoint::CheckpointError::bad(
                "exact.origin",
                format!("{} origins", origin.len()),
            ));
        }
        // The per-topology tables as the first detection would make them, then the saved origin.
        self.prepare(topo, num_points);
        self.origin = origin.first().copied();
        if let Some(o) = self.origin {
            grid::set_grid_frame(&mut self.kp, o);
        }
        Ok(())
    }
}

/// The error that the exact path's bits in `c` stand for, if any (the same messages on the CPU and
/// the GPU path); `cell` is `contact.grid_cell`.
pub fn check_counters(c: &Counters, cell: f32) -> Result<(), ContactError> {
    if c.errors & (ERROR_NAN_POSITION | ERROR_CONTACT_NOT_FINITE) != 0 {
        return Err(ContactError::NotFinite {
            point: c.first_bad_point as usize,
        });
    }
    if c.errors & ERROR_GRID_RANGE != 0 {
        return Err(ContactError::Other(format!(
            "a segment lies beyond the contact grid's range of {} cells from its origin or covers \
             more than {} cells (contact.grid_cell = {cell} cm too small, or the cloth exploded)",
            grid::GRID_HALF_RANGE,
            grid::MAX_CELLS_PER_SEGMENT
        )));
    }
    if c.errors & ERROR_GRID_CELL_FULL != 0 {
        return Err(ContactError::Other(format!(
            "a contact grid cell holds more than {} segments (contact.grid_cell = {cell} cm too \
             large, or the cloth collapsed onto itself)",
            grid::MAX_CELL_RUN
        )));
    }
    if c.errors & ERROR_GATHER_FULL != 0 {
        return Err(ContactError::Other(format!(
            "a control point is in more than {MAX_GATHER} touching contact slots (the cloth \
             collapsed onto itself)"
        )));
    }
    Ok(())
}
