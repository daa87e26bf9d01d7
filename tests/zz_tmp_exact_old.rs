#![allow(dead_code, unused_imports)]
// The exact reference contact path: every step, all quadrature pairs closer than `2r` found through a
// hashed uniform grid over spline segments, and their full penalty force applied.
//
// Buffers (all preallocated in [`ExactContact`], grown only when the scene grows):
// - `seg_lo`, `seg_hi`: per segment, its exact AABB padded by `r` (plus a hair, so that rounding cannot
//   lose a pair at exactly `2r`), relative to nothing: world coordinates.
// - `entries` / `sorted`: one [`CellEntry`] per (segment, grid cell it overlaps), then counting-sorted by
//   hash bucket (`bucket_start`).
// - `seg_cell`: per segment, the grid cell of its padded box's lower corner.
// - `candidates`: segment pairs `[a, b]`, `a < b`, sharing a cell, each exactly once, in bucket order.
// - `qpts`: the `b` quadrature points of every segment (`seg * b + k`).
// - `cand_out`: per candidate of the current chunk, the force on its 8 control-point slots.

use yarnsim::contact::{Exclusion, SegmentExclusion};
use yarnsim::math::V3;
use yarnsim::scene::ContactParams;
use yarnsim::sim::{ContactError, ContactForce, ContactStats};
use yarnsim::spline::{segment_aabb, QuadratureTable};
use yarnsim::state::{Segment, Topology};
use rayon::prelude::*;

/// One segment's presence in one grid cell.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, bytemuck::Pod, bytemuck::Zeroable)]
pub struct CellEntry {
    /// Packed cell coordinates relative to the grid origin (21 bits per axis).
    pub key_lo: u32,
    pub key_hi: u32,
    pub segment: u32,
    pub _pad: u32,
}
const _: () = assert!(std::mem::size_of::<CellEntry>() == 16);

impl CellEntry {
    #[inline]
    fn key(&self) -> u64 {
        (self.key_hi as u64) << 32 | self.key_lo as u64
    }
}

/// Cells per axis on either side of the grid origin that a packed key can name.
const GRID_HALF_RANGE: i64 = 1 << 20;
/// A single segment may cover at most this many cells (a guard against absurd scenes / exploded state).
const MAX_CELLS_PER_SEGMENT: i64 = 1 << 16;
/// Candidates evaluated per parallel chunk before their forces are scattered.
const CHUNK: usize = 4096;

#[inline]
fn cell_coord(x: f32, origin: f32, inv_cell: f32) -> i64 {
    ((x - origin) * inv_cell).floor() as i64
}

#[inline]
fn pack_key(c: [i64; 3]) -> u64 {
    let f = |v: i64| (v + GRID_HALF_RANGE) as u64 & 0x1F_FFFF;
    f(c[0]) | f(c[1]) << 21 | f(c[2]) << 42
}

#[inline]
fn bucket_of(key: u64, mask: usize) -> usize {
    // Fibonacci hashing; the high bits are the well-mixed ones.
    (key.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 32) as usize & mask
}

/// Stage `aabb_raster`: the AABB of every segment (exact, from the roots of `y'`), padded by `pad`, into
/// `seg_lo`/`seg_hi`, the grid cell of its lower corner into `seg_cell`, and one [`CellEntry`] per grid cell (width `cell`, origin `origin`) it overlaps,
/// appended to `entries` in segment order.
#[allow(clippy::too_many_arguments)]
pub fn aabb_raster(
    segments: &[Segment],
    pos: &[[f32; 4]],
    pad: f32,
    cell: f32,
    origin: [f32; 3],
    seg_lo: &mut [[f32; 4]],
    seg_hi: &mut [[f32; 4]],
    seg_cell: &mut [[i32; 4]],
    entries: &mut Vec<CellEntry>,
) -> Result<(), ContactError> {
    entries.clear();
    let inv = 1.0 / cell;
    for (s, seg) in segments.iter().enumerate() {
        let q = seg.cp.map(|i| V3::<f32>::from4(pos[i as usize]));
        let (lo, hi) = segment_aabb(&q);
        let lo = lo - V3::splat(pad);
        let hi = hi + V3::splat(pad);
        if !(lo.is_finite() && hi.is_finite()) {
            let bad = seg
                .cp
                .iter()
                .copied()
                .find(|&i| !V3::<f32>::from4(pos[i as usize]).is_finite())
                .unwrap_or(seg.cp[1]);
            return Err(ContactError::NotFinite {
                point: bad as usize,
            });
        }
        seg_lo[s] = lo.to4(0.0);
        seg_hi[s] = hi.to4(0.0);
        let mut c0 = [0i64; 3];
        let mut c1 = [0i64; 3];
        let mut count = 1i64;
        for a in 0..3 {
            c0[a] = cell_coord(lo.get(a), origin[a], inv);
            c1[a] = cell_coord(hi.get(a), origin[a], inv);
            if c0[a] < -GRID_HALF_RANGE || c1[a] >= GRID_HALF_RANGE {
                return Err(ContactError::Other(format!(
                    "segment {s} lies {} grid cells from the cloth's centre, beyond the contact grid's \
                     range of {GRID_HALF_RANGE} (contact.grid_cell = {cell} cm too small, or the cloth exploded)",
                    c0[a].abs().max(c1[a].abs())
                )));
            }
            count *= c1[a] - c0[a] + 1;
        }
        seg_cell[s] = [c0[0] as i32, c0[1] as i32, c0[2] as i32, 0];
        if count > MAX_CELLS_PER_SEGMENT {
            return Err(ContactError::Other(format!(
                "segment {s} covers {count} grid cells (more than {MAX_CELLS_PER_SEGMENT}): contact.grid_cell = \
                 {cell} cm is far smaller than the segments, or the cloth exploded"
            )));
        }
        for z in c0[2]..=c1[2] {
            for y in c0[1]..=c1[1] {
                for x in c0[0]..=c1[0] {
                    let key = pack_key([x, y, z]);
                    entries.push(CellEntry {
                        key_lo: key as u32,
                        key_hi: (key >> 32) as u32,
                        segment: s as u32,
                        _pad: 0,
                    });
                }
            }
        }
    }
    Ok(())
}

/// Counting sort of `entries` by hash bucket into `sorted`; `bucket_start` gets `nb + 1` offsets.
/// Entries of one bucket keep their (segment) order.
fn bucket_sort(
    entries: &[CellEntry],
    sorted: &mut Vec<CellEntry>,
    bucket_start: &mut Vec<u32>,
) -> usize {
    let nb = (2 * entries.len()).next_power_of_two().max(16);
    let mask = nb - 1;
    bucket_start.clear();
    bucket_start.resize(nb + 1, 0);
    for e in entries {
        bucket_start[bucket_of(e.key(), mask) + 1] += 1;
    }
    for i in 0..nb {
        bucket_start[i + 1] += bucket_start[i];
    }
    sorted.clear();
    sorted.resize(entries.len(), CellEntry::default());
    // Scatter with a running cursor per bucket; reuse the counts array shifted by one.
    for e in entries {
        let b = bucket_of(e.key(), mask);
        let slot = bucket_start[b] as usize;
        sorted[slot] = *e;
        bucket_start[b] += 1;
    }
    // bucket_start[b] now holds the end of bucket b = start of b + 1; shift back.
    for i in (1..=nb).rev() {
        bucket_start[i] = bucket_start[i - 1];
    }
    bucket_start[0] = 0;
    nb
}

/// Stage `candidate_pairs`: every pair of segments whose padded AABBs overlap, found through the cells
/// they share, written to `out` as `[a, b]` with `a < b`, each pair once, in bucket order (deterministic;
/// sort for a canonical order).
///
/// A pair overlapping in several cells is emitted only from the cell holding the minimum corner of the
/// two boxes' intersection (both boxes rasterized that cell), which needs no deduplication pass. Since
/// `floor` is monotone, that cell is the per-axis maximum of the two boxes' lower cells (`seg_cell`).
pub fn candidate_pairs(
    sorted: &[CellEntry],
    bucket_start: &[u32],
    seg_lo: &[[f32; 4]],
    seg_hi: &[[f32; 4]],
    seg_cell: &[[i32; 4]],
    out: &mut Vec<[u32; 2]>,
) {
    out.clear();
    for w in bucket_start.windows(2) {
        let bucket = &sorted[w[0] as usize..w[1] as usize];
        for (i, ea) in bucket.iter().enumerate() {
            let key = ea.key();
            let a = ea.segment as usize;
            let (la, ha, ca) = (seg_lo[a], seg_hi[a], seg_cell[a]);
            for eb in &bucket[i + 1..] {
                if eb.key() != key {
                    continue;
                }
                let b = eb.segment as usize;
                let (lb, hb) = (seg_lo[b], seg_hi[b]);
                let overlap = (0..3).all(|x| la[x] <= hb[x] && lb[x] <= ha[x]);
                if !overlap {
                    continue;
                }
                let cb = seg_cell[b];
                let corner = [0, 1, 2].map(|x| ca[x].max(cb[x]) as i64);
                if pack_key(corner) != key {
                    continue;
                }
                let (s, t) = (ea.segment.min(eb.segment), ea.segment.max(eb.segment));
                out.push([s, t]);
            }
        }
    }
}

/// Stage `quadrature_points`: `out[seg * b + k] = Σ_m weights[k][m] pos[cp[m]]`.
pub fn quadrature_points(
    segments: &[Segment],
    pos: &[[f32; 4]],
    weights: &[[f32; 4]],
    out: &mut [[f32; 4]],
) {
    let b = weights.len();
    for (s, seg) in segments.iter().enumerate() {
        let q = seg.cp.map(|i| V3::<f32>::from4(pos[i as usize]));
        for (k, w) in weights.iter().enumerate() {
            let y = q[0] * w[0] + q[1] * w[1] + q[2] * w[2] + q[3] * w[3];
            out[s * b + k] = y.to4(0.0);
        }
    }
}

/// The contact of one candidate segment pair: the force on its 8 control-point slots
/// (`cp` of segment a, then of segment b).
#[derive(Clone, Copy, Debug, Default)]
pub struct CandidateForce {
    pub force: [V3<f32>; 8],
    pub energy: f32,
    pub touching: u32,
}

/// Evaluates all quadrature pairs of candidate `[sa, sb]` (see [`exact_contact_forces`]).
#[allow(clippy::too_many_arguments)]
#[inline]
fn candidate_force(
    sa: u32,
    sb: u32,
    qpts: &[[f32; 4]],
    weights: &[[f32; 4]],
    seg_w: &[f32],
    stiffness: f32,
    r: f32,
    excl: &Exclusion,
) -> CandidateForce {
    let b = weights.len();
    let mode = excl.segment_exclusion(sa, sb);
    let mut out = CandidateForce::default();
    if mode == SegmentExclusion::All {
        return out;
    }
    let kw = stiffness * seg_w[sa as usize] * seg_w[sb as usize];
    let four_r2 = 4.0 * r * r;
    let ya = &qpts[sa as usize * b..(sa as usize + 1) * b];
    let yb = &qpts[sb as usize * b..(sb as usize + 1) * b];
    // Bounds of b's quadrature points grown by 2r: a point of a outside them meets none of b's.
    let (mut lo, mut hi) = (V3::splat(f32::INFINITY), V3::splat(f32::NEG_INFINITY));
    for p in yb {
        let y = V3::<f32>::from4(*p);
        lo = lo.min_el(y);
        hi = hi.max_el(y);
    }
    let (lo, hi) = (lo - V3::splat(2.0 * r), hi + V3::splat(2.0 * r));
    for (ka, pa) in ya.iter().enumerate() {
        let yi = V3::<f32>::from4(*pa);
        if yi.x < lo.x || yi.y < lo.y || yi.z < lo.z || yi.x > hi.x || yi.y > hi.y || yi.z > hi.z {
            continue;
        }
        for (kb, pb) in yb.iter().enumerate() {
            let yj = V3::<f32>::from4(*pb);
            let x = yi - yj;
            if x.norm2() >= four_r2 {
                continue;
            }
            if mode == SegmentExclusion::Mixed && excl.excluded(sa, ka as u32, sb, kb as u32) {
                continue;
            }
            if let Some((e, g)) = yarnsim::contact::point_pair_grad(yi, yj, kw, r) {
                out.energy += e;
                out.touching += 1;
                // Force = −gradient: −c_k g on each slot, c = (w_a, −w_b).
                let (wa, wb) = (&weights[ka], &weights[kb]);
                for m in 0..4 {
                    out.force[m] -= g * wa[m];
                    out.force[4 + m] += g * wb[m];
                }
            }
        }
    }
    out
}

/// Stage `exact_contact_forces`: evaluates every candidate pair's quadrature pairs closer than `2r`
/// (excluded same-yarn pairs skipped) and adds the forces into `force` (xyz), scattering in candidate
/// order. Returns `(touching pairs, energy)`.
#[allow(clippy::too_many_arguments)]
pub fn exact_contact_forces(
    segments: &[Segment],
    candidates: &[[u32; 2]],
    qpts: &[[f32; 4]],
    weights: &[[f32; 4]],
    seg_w: &[f32],
    stiffness: f32,
    r: f32,
    excl: &Exclusion,
    cand_out: &mut Vec<CandidateForce>,
    force: &mut [[f32; 4]],
) -> Result<(u64, f64), ContactError> {
    let mut touching = 0u64;
    let mut energy = 0f64;
    cand_out.resize(CHUNK.min(candidates.len()), CandidateForce::default());
    for chunk in candidates.chunks(CHUNK) {
        let outs = &mut cand_out[..chunk.len()];
        outs.par_iter_mut()
            .zip(chunk.par_iter())
            .for_each(|(o, c)| {
                *o = candidate_force(c[0], c[1], qpts, weights, seg_w, stiffness, r, excl);
            });
        for (o, c) in outs.iter().zip(chunk) {
            if o.touching == 0 {
                continue;
            }
            touching += o.touching as u64;
            energy += o.energy as f64;
            let (a, b) = (&segments[c[0] as usize], &segments[c[1] as usize]);
            for m in 0..8 {
                let p = if m < 4 { a.cp[m] } else { b.cp[m - 4] } as usize;
                let f = o.force[m];
                if !f.is_finite() {
                    return Err(ContactError::NotFinite { point: p });
                }
                force[p][0] += f.x;
                force[p][1] += f.y;
                force[p][2] += f.z;
            }
        }
    }
    Ok((touching, energy))
}

/// The exact contact model (`contact.model = "exact"`): the full penalty force of every touching
/// quadrature pair, every step. Owns all scratch buffers, so a warmed-up step does not allocate.
#[derive(Debug)]
pub struct ExactContact {
    r: f32,
    stiffness: f32,
    cell: f32,
    params: ContactParams,
    table: QuadratureTable,
    /// Topology the per-segment tables below were built for: (segments, yarns, edges).
    topo_sig: (usize, usize, usize),
    excl: Exclusion,
    seg_w: Vec<f32>,
    seg_lo: Vec<[f32; 4]>,
    seg_hi: Vec<[f32; 4]>,
    seg_cell: Vec<[i32; 4]>,
    entries: Vec<CellEntry>,
    sorted: Vec<CellEntry>,
    bucket_start: Vec<u32>,
    candidates: Vec<[u32; 2]>,
    qpts: Vec<[f32; 4]>,
    cand_out: Vec<CandidateForce>,
    last_energy: f64,
    last_touching: u64,
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
        Ok(ExactContact {
            r: radius,
            stiffness: params.stiffness,
            cell: params.grid_cell,
            params: params.clone(),
            table: QuadratureTable::new(b),
            topo_sig: (usize::MAX, 0, 0),
            excl: Exclusion::default(),
            seg_w: Vec::new(),
            seg_lo: Vec::new(),
            seg_hi: Vec::new(),
            seg_cell: Vec::new(),
            entries: Vec::new(),
            sorted: Vec::new(),
            bucket_start: Vec::new(),
            candidates: Vec::new(),
            qpts: Vec::new(),
            cand_out: Vec::new(),
            last_energy: 0.0,
            last_touching: 0,
            seg_touched: Vec::new(),
        })
    }

    fn prepare(&mut self, topo: &Topology) {
        let sig = (topo.segments.len(), topo.yarns.len(), topo.edges.len());
        if sig == self.topo_sig {
            return;
        }
        self.topo_sig = sig;
        self.excl = Exclusion::new(topo, &self.params);
        let b = self.table.b as f32;
        self.seg_w = topo
            .segments
            .iter()
            .map(|s| topo.edges[s.edge as usize].rest_length / b)
            .collect();
        let n = topo.segments.len();
        self.seg_lo.resize(n, [0.0; 4]);
        self.seg_hi.resize(n, [0.0; 4]);
        self.seg_cell.resize(n, [0; 4]);
        self.qpts.resize(n * self.table.b as usize, [0.0; 4]);
        self.seg_touched.resize(n, false);
    }

    /// Calls `f(sa, ka, sb, kb)` for every touching, non-excluded quadrature pair among the candidates
    /// of the last [`Self::detect`], in candidate order.
    fn for_each_touching(&self, mut f: impl FnMut(u32, u32, u32, u32)) {
        let b = self.table.b;
        let four_r2 = 4.0 * self.r * self.r;
        for &[sa, sb] in &self.candidates {
            if self.excl.segment_exclusion(sa, sb) == SegmentExclusion::All {
                continue;
            }
            for ka in 0..b {
                let yi = V3::<f32>::from4(self.qpts[(sa * b + ka) as usize]);
                for kb in 0..b {
                    let yj = V3::<f32>::from4(self.qpts[(sb * b + kb) as usize]);
                    if (yi - yj).norm2() < four_r2 && !self.excl.excluded(sa, ka, sb, kb) {
                        f(sa, ka, sb, kb);
                    }
                }
            }
        }
    }

    /// Runs `aabb_raster`, `candidate_pairs` and `quadrature_points` for positions `pos`.
    pub fn detect(&mut self, topo: &Topology, pos: &[[f32; 4]]) -> Result<(), ContactError> {
        self.prepare(topo);
        // Grid origin: the control points' centroid (DESIGN §5.1), so keys stay small.
        let mut c = [0f64; 3];
        for p in pos {
            for a in 0..3 {
                c[a] += p[a] as f64;
            }
        }
        let n = pos.len().max(1) as f64;
        let origin = c.map(|v| (v / n) as f32);
        if !origin.iter().all(|v| v.is_finite()) {
            let bad = pos
                .iter()
                .position(|p| !p[..3].iter().all(|v| v.is_finite()))
                .unwrap_or(0);
            return Err(ContactError::NotFinite { point: bad });
        }
        // Pad by r and a relative hair, so a pair at exactly 2r after f32 rounding is still a candidate.
        let pad = self.r * (1.0 + 1e-4);
        aabb_raster(
            &topo.segments,
            pos,
            pad,
            self.cell,
            origin,
            &mut self.seg_lo,
            &mut self.seg_hi,
            &mut self.seg_cell,
            &mut self.entries,
        )?;
        bucket_sort(&self.entries, &mut self.sorted, &mut self.bucket_start);
        candidate_pairs(
            &self.sorted,
            &self.bucket_start,
            &self.seg_lo,
            &self.seg_hi,
            &self.seg_cell,
            &mut self.candidates,
        );
        quadrature_points(&topo.segments, pos, &self.table.weights, &mut self.qpts);
        Ok(())
    }

    /// Candidate segment pairs found by the last [`Self::detect`] (`a < b`, in bucket order).
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
        self.for_each_touching(|sa, ka, sb, kb| {
            let (i, j) = (sa * b + ka, sb * b + kb);
            out.push([i.min(j), i.max(j)]);
        });
        out.sort_unstable();
        Ok(())
    }
}

impl ExactContact {
    pub fn add_forces(
        &mut self,
        topo: &Topology,
        pos: &[[f32; 4]],
        _vel: &[[f32; 4]],
        force: &mut [[f32; 4]],
        stats: &mut ContactStats,
    ) -> Result<(), ContactError> {
        let t0 = std::time::Instant::now();
        self.detect(topo, pos)?;
        let (touching, energy) = exact_contact_forces(
            &topo.segments,
            &self.candidates,
            &self.qpts,
            &self.table.weights,
            &self.seg_w,
            self.stiffness,
            self.r,
            &self.excl,
            &mut self.cand_out,
            force,
        )?;
        self.last_energy = energy;
        self.last_touching = touching;
        stats.set("touching_pairs", touching as f64);
        stats.set("candidate_segment_pairs", self.candidates.len() as f64);
        stats.set("contact_ms", t0.elapsed().as_secs_f64() * 1e3);
        Ok(())
    }

}

#[test]
fn zz_timing() {
    use yarnsim::scene::{ContactModel, ContactParams, Pattern, YarnMaterial};
    let params = ContactParams { model: ContactModel::Exact, ..ContactParams::default() };
    let r = YarnMaterial::default().radius;
    for n in [60u32, 100] {
        let k = yarnsim::knit::generate(Pattern::Stockinette, n, n, r).unwrap();
        let (topo, pos) = Topology::from_curves(&k.curves).unwrap();
        let mut old = ExactContact::new(r, &params).unwrap();
        let mut new = yarnsim::contact::ExactContact::new(r, &params).unwrap();
        let mut f1 = vec![[0.0f32; 4]; pos.len()];
        let mut f2 = f1.clone();
        let mut st = ContactStats::default();
        use yarnsim::sim::ContactForce;
        for _ in 0..2 { old.add_forces(&topo, &pos, &pos, &mut f1, &mut st).unwrap(); new.add_forces(&topo, &pos, &pos, &mut f2, &mut st).unwrap(); }
        let t = std::time::Instant::now();
        for _ in 0..5 { old.add_forces(&topo, &pos, &pos, &mut f1, &mut st).unwrap(); }
        let a = t.elapsed().as_secs_f64() / 5.0 * 1e3;
        let t = std::time::Instant::now();
        for _ in 0..5 { new.add_forces(&topo, &pos, &pos, &mut f2, &mut st).unwrap(); }
        let b = t.elapsed().as_secs_f64() / 5.0 * 1e3;
        eprintln!("{n}x{n}: {} segs, old {a:.1} ms, new {b:.1} ms, entries {} cands {}", topo.segments.len(), new.counters().grid_entries.count, new.candidates().len());
    }
}
