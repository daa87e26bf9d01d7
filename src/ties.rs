//! Ties: pairs of control points held within their starting distance of each other, as a sewn seam
//! holds two layers of cloth (a `sack` piece's bottom, [`crate::knit`]; a scene's `[[seam]]`, which
//! [`seam_ties`] finds). Both paths: the GPU kernel `shaders/tie_projection.wgsl` is the twin of
//! [`tie_projection`], one dispatch per colour of [`color_ties`].
//!
//! Buffers: the tie pairs `ties` and their lengths `tie_length` (the starting distances), the yarn's
//! `inv_mass`, `pos` and `vel`.
//!
//! Stage `tie_projection` runs after `glue_projection` and before `length_projection` (seed
//! Figure 4 with one more constraint): like them it works on the positions predicted by the
//! velocities, `x = q + h v`. A tie is one-sided (a thread can go slack, not push): when
//! `|x_b − x_a|` exceeds its length the two velocities change by mass-weighted amounts along the
//! line between them so the predicted distance is the length again. The momentum of the pair is
//! kept. The ties are coloured ([`color_ties`]: no two ties of one colour share a point) and
//! stored colour by colour; they are visited in that order (Gauss–Seidel), so a point in two ties
//! sees the first one's change. Within a colour the ties are independent, so the GPU kernel
//! `tie_projection`, one dispatch per colour with one thread per tie, computes exactly what the
//! twin does. The length projection that follows may stretch a tie again by what one step moves: a
//! tie under load stretches by at most that, never cumulatively.
//!
//! Kernel `tie_projection` (shaders/tie_projection.wgsl): bindings `params`, `color_range` (this
//! colour's first tie and count), `ties`, `tie_length`, `inv_mass`, `pos`, `vel`.

use crate::math::V3;

/// Why ties could not be set up.
#[derive(Debug, thiserror::Error, PartialEq)]
pub enum TieError {
    #[error("tie {tie} joins control point {point}, but the scene has {count}")]
    OutOfRange {
        tie: usize,
        point: u32,
        count: usize,
    },
    #[error("tie {tie} joins control point {point} to itself")]
    SamePoint { tie: usize, point: u32 },
    #[error("tie {tie}: its two control points are already in ties of all {max} colours")]
    TooManyColors { tie: usize, max: usize },
}

/// Most colours [`color_ties`] makes (a point may be in ties of at most this many colours).
pub const MAX_TIE_COLORS: usize = 32;

/// Ties stored colour by colour ([`color_ties`]).
pub struct ColoredTies {
    /// The ties, colour by colour (in input order within a colour).
    pub ties: Vec<[u32; 2]>,
    /// `order[k]` is the input index of tie `k`.
    pub order: Vec<usize>,
    /// The first tie of each colour, and one more entry, the count.
    pub color_start: Vec<u32>,
}

/// Colours the ties so that no two ties of one colour share a point (greedy, in tie order: each
/// tie takes the smallest colour its two points are not in yet) and returns them colour by colour.
pub fn color_ties(ties: &[[u32; 2]]) -> Result<ColoredTies, TieError> {
    let mut used: std::collections::HashMap<u32, u32> = Default::default();
    let mut color = Vec::with_capacity(ties.len());
    for (k, &[a, b]) in ties.iter().enumerate() {
        let mask = used.get(&a).copied().unwrap_or(0) | used.get(&b).copied().unwrap_or(0);
        let c = (!mask).trailing_zeros() as usize;
        if c >= MAX_TIE_COLORS {
            return Err(TieError::TooManyColors {
                tie: k,
                max: MAX_TIE_COLORS,
            });
        }
        *used.entry(a).or_default() |= 1 << c;
        *used.entry(b).or_default() |= 1 << c;
        color.push(c);
    }
    let colors = color.iter().map(|&c| c + 1).max().unwrap_or(0);
    let mut order: Vec<usize> = (0..ties.len()).collect();
    order.sort_by_key(|&k| color[k]);
    let mut start = vec![0u32; colors + 1];
    for &c in &color {
        start[c + 1] += 1;
    }
    for c in 0..colors {
        start[c + 1] += start[c];
    }
    Ok(ColoredTies {
        ties: order.iter().map(|&k| ties[k]).collect(),
        order,
        color_start: start,
    })
}

/// Checks `ties` against `n` control points and returns their lengths at positions `pos`.
pub fn tie_lengths(ties: &[[u32; 2]], pos: &[[f32; 4]]) -> Result<Vec<f32>, TieError> {
    ties.iter()
        .enumerate()
        .map(|(k, &[a, b])| {
            for p in [a, b] {
                if p as usize >= pos.len() {
                    return Err(TieError::OutOfRange {
                        tie: k,
                        point: p,
                        count: pos.len(),
                    });
                }
            }
            if a == b {
                return Err(TieError::SamePoint { tie: k, point: a });
            }
            Ok((V3::<f32>::from4(pos[b as usize]) - V3::<f32>::from4(pos[a as usize])).norm())
        })
        .collect()
}

/// The ties of a seam: each point of `a` (indices `first_a..`) with a point of `b` (indices
/// `first_b..`) closer than `distance` is tied to its nearest one (the lowest index among equals).
/// A uniform grid of cell `distance` over `b` finds them: the cost is linear in the points.
pub fn seam_ties(
    a: &[[f32; 3]],
    first_a: u32,
    b: &[[f32; 3]],
    first_b: u32,
    distance: f32,
) -> Vec<[u32; 2]> {
    let cell = distance as f64;
    let key = |p: &[f32; 3]| p.map(|v| (v as f64 / cell).floor() as i64);
    let mut grid: std::collections::HashMap<[i64; 3], Vec<u32>> = Default::default();
    for (j, p) in b.iter().enumerate() {
        grid.entry(key(p)).or_default().push(j as u32);
    }
    let mut ties = Vec::new();
    for (i, p) in a.iter().enumerate() {
        let k = key(p);
        let mut best: Option<(f32, u32)> = None;
        for dx in -1..=1 {
            for dy in -1..=1 {
                for dz in -1..=1 {
                    let Some(cands) = grid.get(&[k[0] + dx, k[1] + dy, k[2] + dz]) else {
                        continue;
                    };
                    for &j in cands {
                        let q = &b[j as usize];
                        let d = V3::<f32>::new(q[0] - p[0], q[1] - p[1], q[2] - p[2]).norm();
                        if d < distance && best.is_none_or(|(bd, bj)| (d, j) < (bd, bj)) {
                            best = Some((d, j));
                        }
                    }
                }
            }
        }
        if let Some((_, j)) = best {
            ties.push([first_a + i as u32, first_b + j]);
        }
    }
    ties
}

/// Stage `tie_projection` (see the module documentation).
pub fn tie_projection(
    h: f32,
    ties: &[[u32; 2]],
    tie_length: &[f32],
    inv_mass: &[f32],
    pos: &[[f32; 4]],
    vel: &mut [[f32; 4]],
) {
    for (&[a, b], &len) in ties.iter().zip(tie_length) {
        let (a, b) = (a as usize, b as usize);
        let (wa, wb) = (inv_mass[a], inv_mass[b]);
        if wa + wb == 0.0 {
            continue;
        }
        let xa = V3::<f32>::from4(pos[a]) + V3::<f32>::from4(vel[a]) * h;
        let xb = V3::<f32>::from4(pos[b]) + V3::<f32>::from4(vel[b]) * h;
        let d = xb - xa;
        let l = d.norm();
        if l <= len {
            continue;
        }
        let n = d / l;
        let dv = n * ((l - len) / ((wa + wb) * h));
        let va = V3::<f32>::from4(vel[a]) + dv * wa;
        let vb = V3::<f32>::from4(vel[b]) - dv * wb;
        vel[a] = va.to4(vel[a][3]);
        vel[b] = vb.to4(vel[b][3]);
    }
}
