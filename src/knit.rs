//! Knit generators: Catmull-Rom control points of stockinette, garter, 1×1 rib and tubes.
//!
//! Output: [`Knit`], whose curves follow the `state.rs` convention (open yarns carry a tangent handle
//! at each end), with the (wale, course) of the loop each control point belongs to and the loop
//! count. Frame: a flat swatch lies in the xy-plane, wales along +x, courses along +y (the first
//! course at the bottom), the knit face towards +z, its grid of loops centred on the origin (course c
//! starts at y = (c − courses/2)·H, so the loops' extent is off centre by 1.5 r). A tube has its axis
//! on y, centred the same way along it, with the knit face outward. Lengths are in the unit of `radius` (cm).
//!
//! ## Loop geometry
//!
//! Every loop has 8 control points, in yarn order for a course running towards +x (relative to the
//! loop's centre `x_i = i·W`, the course's base `y_c = c·H`; all values in units of r, [`SHAPE`]):
//!
//! | point | role | x | y | z (knit stitch) |
//! |---|---|---|---|---|
//! | S  | sinker, between this loop and the previous one | −W/2 | ys | −zs |
//! | X  | passes *behind* the leg of the loop below, inside that loop | −xn | yn | −zn |
//! | L  | leg, passes *in front of* the head of the loop below | −xl | yl | +zl |
//! | Hs | head side, in front of the upper loop's X | −xh | yh | +zh |
//! | T  | head top, behind the upper loop's legs | 0 | yt | −zt |
//! | Hs', L', X' | mirror images | + | | |
//!
//! So the yarn of course c comes from behind the loop of course c − 1 (S, X), passes through it and
//! crosses in front of its head (L): the loop is pulled through the loop below, from back to front.
//! The head of course c − 1 thereby wraps around the legs of course c (in front of X, behind L).
//! Consecutive courses overlap by about 40% of a loop's height (H = 6 r, yt − ys = 10.3 r). A purl stitch is the mirror image in z
//! (pulled through from front to back); where the loop above is a purl stitch the head bends the
//! other way (the signs of zh and zt follow the stitch above), and a sinker between a knit and a purl
//! loop sits at z = 0.
//!
//! Patterns: stockinette (all knit), garter (knit and purl courses alternate), 1×1 rib (knit and purl
//! wales alternate), tube (stockinette knit in the round).
//!
//! The numbers in [`SHAPE`] were found by a numerical search over the point positions that maximized
//! the smallest distance between non-neighbouring parts of yarn (below) for all four patterns, with
//! a small penalty on thickness, at a wale pitch W = 8.4 r and a course pitch H = 6 r. At r = 0.125 cm
//! a loop is then 1.05 cm wide (4.2 yarn diameters, as real stockinette) and 0.75 cm high; the
//! fabric is about 5.4 r thick.
//!
//! ## Clearance
//!
//! Two parts of one yarn are *neighbours along the yarn* when their arc length separation (measured
//! on the Catmull-Rom curve; the shorter way round a closed yarn) is at most [`NEIGHBOUR_ARC`] r.
//! All other pairs of points of the yarns (same yarn farther apart, or different yarns) are at least
//! 1.6 r apart (measured with 24 samples per segment: 1.78 r for garter, 1.80 r for stockinette and
//! rib, 1.83–1.92 r for tubes, more with fewer wales). The closest pairs are the two legs of
//! one loop where they cross the head below, about 21 r apart along the yarn, so the same minimum
//! holds for any exclusion from 3 r to 16 r: the contact parameter `contact.exclusion_arc` (1 cm =
//! 8 r by default) may be anything in that range without the rest state touching itself.
//!
//! ## Yarns
//!
//! A flat swatch is ONE continuous open yarn that runs course by course, turning at the edges (one
//! extra point outside the edge loop, half a course up), as a hand-knitted piece: with one yarn per
//! course the course ends would be free and the edge loops could slip out of each other. The yarn
//! therefore has 8 points per loop plus a closing sinker and a turn point per course and two tangent
//! handles (a 36 × 90 scarf: 26,101 points, 26,098 segments; the seed's scarf has 26,240 segments).
//! A tube has one CLOSED yarn per course of exactly 8 points per loop (a real tube knitted in the
//! round is one helix; closed courses keep the structure periodic and give the contact work closed
//! curves whose linking it can check).
//!
//! `point_loop` assigns each sinker S to the loop on its +x side (the last sinker of a course, the
//! turn point and the handles to the nearest edge loop).

use crate::math::V3;
use crate::scene::Pattern;
use crate::spline;
use crate::state::Curve;

/// Fewest wales a tube may have (its circumference must leave room for the loops' depth).
pub const MIN_TUBE_WALES: u32 = 8;
/// Most loops one generated piece, and all the generated pieces of a scene together, may have.
pub const MAX_LOOPS: u32 = 4_000_000;

/// A generated piece of knit.
#[derive(Clone, Debug)]
pub struct Knit {
    pub curves: Vec<Curve>,
    /// Per curve, per control point: the (wale, course) of the loop the point belongs to.
    pub point_loop: Vec<Vec<[u32; 2]>>,
    /// Number of knit loops.
    pub loops: u32,
    /// Pairs of control points tied together (indices into the curves' points concatenated): a
    /// sack's bottom seam ([`Pattern::Sack`]); empty otherwise.
    pub ties: Vec<[u32; 2]>,
}

/// Why a generator could not make the requested piece.
#[derive(Debug, thiserror::Error, PartialEq)]
pub enum KnitError {
    #[error("yarn radius must be a finite number > 0, got {0}")]
    Radius(f32),
    #[error("{pattern:?} needs at least {min} wales and 1 course, got {wales} × {courses}")]
    TooSmall {
        pattern: Pattern,
        wales: u32,
        courses: u32,
        min: u32,
    },
    #[error("{wales} × {courses} loops is more than the {max} a generator makes")]
    TooLarge { wales: u32, courses: u32, max: u32 },
    #[error("section: {0}")]
    Section(String),
}

/// The loop shape, in units of the yarn radius r; the table in the module doc gives each field's
/// meaning (`wale` = W, `course` = H, `turn` = how far the edge turn lies outside the last sinker).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Shape {
    pub wale: f64,
    pub course: f64,
    pub ys: f64,
    pub yn: f64,
    pub yl: f64,
    pub yh: f64,
    pub yt: f64,
    pub xn: f64,
    pub xl: f64,
    pub xh: f64,
    pub zs: f64,
    pub zn: f64,
    pub zl: f64,
    pub zh: f64,
    pub zt: f64,
    pub turn: f64,
}

/// The loop shape [`generate`] uses.
pub const SHAPE: Shape = Shape {
    wale: 8.4,
    course: 6.0,
    ys: -3.67,
    yn: -2.23,
    yl: -0.46,
    yh: 4.68,
    yt: 6.6,
    xn: 2.21,
    xl: 0.92,
    xh: 3.26,
    zs: 1.51,
    zn: 1.72,
    zl: 1.13,
    zh: 0.47,
    zt: 1.72,
    turn: 1.49,
};

/// Parts of one yarn closer than this many r in arc length are neighbours along the yarn.
pub const NEIGHBOUR_ARC: f64 = 3.0;

/// +1 for a knit loop (pulled through from back to front), −1 for purl.
fn stitch_sign(pattern: Pattern, wale: u32, course: u32) -> f64 {
    match pattern {
        Pattern::Stockinette | Pattern::Tube | Pattern::Sack => 1.0,
        Pattern::Garter => {
            if course.is_multiple_of(2) {
                1.0
            } else {
                -1.0
            }
        }
        Pattern::Rib => {
            if wale.is_multiple_of(2) {
                1.0
            } else {
                -1.0
            }
        }
    }
}

/// The cross-section of a tube that is not round: a rounded rectangle (the body of a garment), of
/// outer depth `depth` along z and corner radius `corner`, both of its centre line, in cm. Its width
/// along x follows from the perimeter the wales give.
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Section {
    pub depth: f32,
    pub corner: f32,
}

/// Smallest corner radius of a [`Section`], in r: as the sack's bottom ([`SACK_BOTTOM_RADIUS`]),
/// the loops' inner side stays clear of the corner's centre.
pub const MIN_CORNER: f64 = SACK_BOTTOM_RADIUS;

/// Checks a tube's section against its wales and the radius and returns it in r: (corner radius,
/// half length of the side flats); `None` for a round tube.
pub fn section_in_r(
    pattern: Pattern,
    wales: u32,
    radius: f32,
    sh: &Shape,
    section: Option<Section>,
) -> Result<Option<(f64, f64)>, KnitError> {
    Ok(match section {
        None => None,
        Some(sec) => {
            if pattern != Pattern::Tube {
                return Err(KnitError::Section(format!(
                    "only a tube takes a section, not {pattern:?}"
                )));
            }
            let r = radius as f64;
            let (depth, corner) = (sec.depth as f64 / r, sec.corner as f64 / r);
            let perimeter = wales as f64 * sh.wale;
            if !corner.is_finite() {
                return Err(KnitError::Section(format!(
                    "corner {} cm is not a finite number",
                    sec.corner
                )));
            }
            if corner < MIN_CORNER {
                return Err(KnitError::Section(format!(
                    "corner {} cm is less than {MIN_CORNER} r = {} cm",
                    sec.corner,
                    MIN_CORNER * r
                )));
            }
            if !depth.is_finite() {
                return Err(KnitError::Section(format!(
                    "depth {} cm is not a finite number",
                    sec.depth
                )));
            }
            if depth < 2.0 * corner {
                return Err(KnitError::Section(format!(
                    "depth {} cm is less than twice the corner {} cm",
                    sec.depth, sec.corner
                )));
            }
            let side = 0.5 * depth - corner;
            if perimeter < 2.0 * std::f64::consts::PI * corner + 4.0 * side {
                return Err(KnitError::Section(format!(
                    "{wales} wales make a perimeter of {:.3} cm, less than the {:.3} cm of a \
                     section {} cm deep with corners of {} cm: no room for the front and back",
                    perimeter * r,
                    (2.0 * std::f64::consts::PI * corner + 4.0 * side) * r,
                    sec.depth,
                    sec.corner
                )));
            }
            Some((corner, side))
        }
    })
}

/// Generates `wales × courses` loops of `pattern` for yarn radius `radius` (cm).
pub fn generate(
    pattern: Pattern,
    wales: u32,
    courses: u32,
    radius: f32,
) -> Result<Knit, KnitError> {
    generate_shape(pattern, wales, courses, radius, &SHAPE, None)
}

/// [`generate`] of a tube with the cross-section `section` (a round tube without one).
pub fn generate_section(
    pattern: Pattern,
    wales: u32,
    courses: u32,
    radius: f32,
    section: Option<Section>,
) -> Result<Knit, KnitError> {
    generate_shape(pattern, wales, courses, radius, &SHAPE, section)
}

/// [`generate_section`] with an explicit loop shape (for tuning and tests).
pub fn generate_shape(
    pattern: Pattern,
    wales: u32,
    courses: u32,
    radius: f32,
    sh: &Shape,
    section: Option<Section>,
) -> Result<Knit, KnitError> {
    if !(radius.is_finite() && radius > 0.0) {
        return Err(KnitError::Radius(radius));
    }
    // The section in r: (corner radius, half length of the side flats).
    let section_r = section_in_r(pattern, wales, radius, sh, section)?;
    let min = if pattern.is_round() {
        MIN_TUBE_WALES
    } else {
        1
    };
    if wales < min || courses < 1 {
        return Err(KnitError::TooSmall {
            pattern,
            wales,
            courses,
            min,
        });
    }
    if wales as u64 * courses as u64 > MAX_LOOPS as u64 {
        return Err(KnitError::TooLarge {
            wales,
            courses,
            max: MAX_LOOPS,
        });
    }
    let s = |i: u32, c: u32| stitch_sign(pattern, i, c);
    // The loop above decides which way the head bends; the top course bends as if the same stitch
    // followed.
    let s_up = |i: u32, c: u32| {
        if c + 1 < courses {
            s(i, c + 1)
        } else {
            s(i, c)
        }
    };

    // One course as (points, loop of each point), running left to right in flat coordinates (r units).
    let course_points =
        |c: u32, out: &mut Vec<[f64; 3]>, owner: &mut Vec<[u32; 2]>, closed: bool| {
            let y0 = c as f64 * sh.course;
            for i in 0..wales {
                let x0 = i as f64 * sh.wale;
                let si = s(i, c);
                let left = if i > 0 {
                    s(i - 1, c)
                } else if closed {
                    s(wales - 1, c)
                } else {
                    si
                };
                let su = s_up(i, c);
                let pts = [
                    [x0 - 0.5 * sh.wale, y0 + sh.ys, -0.5 * (left + si) * sh.zs],
                    [x0 - sh.xn, y0 + sh.yn, -si * sh.zn],
                    [x0 - sh.xl, y0 + sh.yl, si * sh.zl],
                    [x0 - sh.xh, y0 + sh.yh, su * sh.zh],
                    [x0, y0 + sh.yt, -su * sh.zt],
                    [x0 + sh.xh, y0 + sh.yh, su * sh.zh],
                    [x0 + sh.xl, y0 + sh.yl, si * sh.zl],
                    [x0 + sh.xn, y0 + sh.yn, -si * sh.zn],
                ];
                for p in pts {
                    out.push(p);
                    owner.push([i, c]);
                }
            }
            if !closed {
                let i = wales - 1;
                out.push([(wales as f64 - 0.5) * sh.wale, y0 + sh.ys, -s(i, c) * sh.zs]);
                owner.push([i, c]);
            }
        };

    let r = radius as f64;
    let mut curves = Vec::new();
    let mut point_loop = Vec::new();
    let width = wales as f64 * sh.wale;
    let height = courses as f64 * sh.course;
    let mut ties = Vec::new();
    if pattern.is_round() {
        // Each course is a closed ring around the y axis; the flat +z (knit face) points outward.
        // Flat x is the arc length along the ring's centre line (perimeter `width`), flat z the
        // depth along its outward normal: a round tube's ring is a circle of radius r0; a sack's
        // is a stadium of the same perimeter whose end radius shrinks linearly from r0 at the top
        // to SACK_BOTTOM_RADIUS at the bottom (the offset rings keep their perimeter too).
        let r0 = width / (2.0 * std::f64::consts::PI);
        let sack = pattern == Pattern::Sack;
        let ring = |p: &[f64; 3]| -> [f64; 3] {
            let s = (p[0] + 0.5 * sh.wale).rem_euclid(width);
            let rho = if sack {
                let t = (p[1] / height).clamp(0.0, 1.0);
                let bottom = SACK_BOTTOM_RADIUS.min(r0);
                bottom + (r0 - bottom) * t
            } else {
                r0
            };
            let (c, n) = match section_r {
                Some((corner, side)) => rounded_rect(s, corner, side, width),
                None => stadium(s, rho, width),
            };
            [
                c[0] + n[0] * p[2],
                (p[1] - 0.5 * height),
                c[1] + n[1] * p[2],
            ]
        };
        for c in 0..courses {
            let mut pts = Vec::new();
            let mut owner = Vec::new();
            course_points(c, &mut pts, &mut owner, true);
            if sack && c == 0 {
                ties = sack_ties(&pts, width, SACK_BOTTOM_RADIUS.min(r0), sh.wale);
            }
            let pts: Vec<[f32; 3]> = pts
                .iter()
                .map(|p| ring(p).map(|v| (v * r) as f32))
                .collect();
            curves.push(Curve {
                points: pts,
                closed: true,
            });
            point_loop.push(owner);
        }
    } else {
        let mut pts: Vec<[f64; 3]> = Vec::new();
        let mut owner = Vec::new();
        for c in 0..courses {
            let start = pts.len();
            course_points(c, &mut pts, &mut owner, false);
            if c % 2 == 1 {
                // Odd courses run right to left: the same points, visited in reverse order (the loop
                // shape is symmetric in x).
                pts[start..].reverse();
                owner[start..].reverse();
            }
            if c + 1 < courses {
                // The turn at the edge: one point outside the edge loops, halfway up.
                let last = pts[pts.len() - 1];
                let side = if c % 2 == 0 { 1.0 } else { -1.0 };
                pts.push([last[0] + side * sh.turn, last[1] + 0.5 * sh.course, last[2]]);
                owner.push(*owner.last().unwrap());
            }
        }
        let n = pts.len();
        let first = [
            2.0 * pts[0][0] - pts[1][0],
            2.0 * pts[0][1] - pts[1][1],
            2.0 * pts[0][2] - pts[1][2],
        ];
        let last = [
            2.0 * pts[n - 1][0] - pts[n - 2][0],
            2.0 * pts[n - 1][1] - pts[n - 2][1],
            2.0 * pts[n - 1][2] - pts[n - 2][2],
        ];
        pts.insert(0, first);
        owner.insert(0, owner[0]);
        pts.push(last);
        owner.push(*owner.last().unwrap());
        let cx = 0.5 * (width - sh.wale);
        let cy = 0.5 * height;
        curves.push(Curve {
            points: pts
                .iter()
                .map(|p| [(p[0] - cx) * r, (p[1] - cy) * r, p[2] * r].map(|v| v as f32))
                .collect(),
            closed: false,
        });
        point_loop.push(owner);
    }
    Ok(Knit {
        curves,
        point_loop,
        loops: wales * courses,
        ties,
    })
}

/// The end radius of a sack's bottom course, in r: the stadium's two flat sides are then 2 × 5 r
/// apart at their centre lines, and the loops' inner side (depth up to 1.72 r) stays clear of the
/// ends' centres.
pub const SACK_BOTTOM_RADIUS: f64 = 5.0;

/// The point at arc length `s` (from the front centre, towards +x) along a stadium of perimeter
/// `perimeter` with end radius `rho` (flats along x at z = ±rho), as (x, z), and its outward
/// normal. With `rho` = perimeter / 2π it is the circle `(rho sin θ, rho cos θ)`, θ = s / rho.
fn stadium(s: f64, rho: f64, perimeter: f64) -> ([f64; 2], [f64; 2]) {
    rounded_rect(s, rho, 0.0, perimeter)
}

/// The point at arc length `s` (from the front centre, towards +x) along a rounded rectangle of
/// perimeter `perimeter` with corner radius `rho` and side flats (along z) of half length `side`,
/// as (x, z), and its outward normal. The front and back flats (along x, at z = ±(side + rho)) take
/// what the perimeter leaves; `side = 0` is a stadium.
fn rounded_rect(s: f64, rho: f64, side: f64, perimeter: f64) -> ([f64; 2], [f64; 2]) {
    use std::f64::consts::PI;
    let half = (0.25 * (perimeter - 2.0 * PI * rho - 4.0 * side)).max(0.0);
    let quarter = 0.5 * PI * rho;
    // Corner k (0..4) turns the normal from angle kπ/2 to (k+1)π/2 about its centre; the flats
    // between the corners run along x (front, back) and z (sides).
    let centres = [[half, side], [half, -side], [-half, -side], [-half, side]];
    let corner = |k: usize, u: f64| {
        let th = 0.5 * PI * k as f64 + u / rho;
        let n = [th.sin(), th.cos()];
        let c = centres[k];
        ([c[0] + rho * n[0], c[1] + rho * n[1]], n)
    };
    let mut s = s;
    if s < half {
        return ([s, side + rho], [0.0, 1.0]);
    }
    s -= half;
    if s < quarter {
        return corner(0, s);
    }
    s -= quarter;
    if s < 2.0 * side {
        return ([half + rho, side - s], [1.0, 0.0]);
    }
    s -= 2.0 * side;
    if s < quarter {
        return corner(1, s);
    }
    s -= quarter;
    if s < 2.0 * half {
        return ([half - s, -side - rho], [0.0, -1.0]);
    }
    s -= 2.0 * half;
    if s < quarter {
        return corner(2, s);
    }
    s -= quarter;
    if s < 2.0 * side {
        return ([-half - rho, -side + s], [-1.0, 0.0]);
    }
    s -= 2.0 * side;
    if s < quarter {
        return corner(3, s);
    }
    s -= quarter;
    ([-half + s, side + rho], [0.0, 1.0])
}

/// The ties that close a sack's bottom course (flat coordinates `pts`, in r): each of its points
/// on the front flat, at least a loop away from the ends, tied to the nearest point of the back
/// flat at the mirror position.
fn sack_ties(pts: &[[f64; 3]], perimeter: f64, rho: f64, wale: f64) -> Vec<[u32; 2]> {
    use std::f64::consts::PI;
    let half = (0.5 * (perimeter - 2.0 * PI * rho)).max(0.0) * 0.5;
    let arc = |p: &[f64; 3]| (p[0] + 0.5 * wale).rem_euclid(perimeter);
    // Position along the flats: x on the front (s from the front centre), the same x on the back.
    let front_x = |s: f64| {
        if s < half {
            Some(s)
        } else if s > perimeter - half {
            Some(s - perimeter)
        } else {
            None
        }
    };
    let back_x = |s: f64| {
        let b = s - half - PI * rho;
        (0.0..=2.0 * half).contains(&b).then_some(half - b)
    };
    let back: Vec<(u32, f64)> = pts
        .iter()
        .enumerate()
        .filter_map(|(i, p)| back_x(arc(p)).map(|x| (i as u32, x)))
        .collect();
    let mut ties = Vec::new();
    for (i, p) in pts.iter().enumerate() {
        let Some(x) = front_x(arc(p)) else { continue };
        if x.abs() > half - wale {
            continue;
        }
        let near = back
            .iter()
            .min_by(|a, b| (a.1 - x).abs().total_cmp(&(b.1 - x).abs()));
        if let Some(&(j, _)) = near {
            ties.push([i as u32, j]);
        }
    }
    ties
}

/// Dense samples of curves: position, yarn and arc length from the yarn's start.
pub struct Samples {
    pub pos: Vec<V3<f64>>,
    pub yarn: Vec<u32>,
    pub arc: Vec<f64>,
    /// Total arc length of each yarn.
    pub length: Vec<f64>,
    pub closed: Vec<bool>,
}

impl Samples {
    /// Whether samples `i` and `j` lie on the same yarn at most `exclusion_arc` apart in arc length
    /// (the shorter way round on a closed yarn): such pairs touch by construction, so separation
    /// checks skip them.
    pub fn neighbours_along_yarn(&self, i: usize, j: usize, exclusion_arc: f64) -> bool {
        if self.yarn[i] != self.yarn[j] {
            return false;
        }
        let y = self.yarn[i] as usize;
        let mut d = (self.arc[i] - self.arc[j]).abs();
        if self.closed[y] {
            d = d.min(self.length[y] - d);
        }
        d <= exclusion_arc
    }
}

/// Samples every segment of every curve at `per_segment` parameters `t = k / per_segment`.
pub fn sample_curves(curves: &[Curve], per_segment: u32) -> Samples {
    let mut s = Samples {
        pos: Vec::new(),
        yarn: Vec::new(),
        arc: Vec::new(),
        length: Vec::new(),
        closed: Vec::new(),
    };
    for (yi, c) in curves.iter().enumerate() {
        let n = c.points.len();
        let q = |i: usize| V3::<f64>::from3(c.points[i % n]);
        let segs: Vec<usize> = if c.closed {
            (0..n).collect()
        } else {
            (1..n.saturating_sub(2)).collect()
        };
        let mut arc = 0.0;
        let mut prev: Option<V3<f64>> = None;
        let first_pos = s.pos.len();
        for &i in &segs {
            let cp = [q(i + n - 1), q(i), q(i + 1), q(i + 2)];
            for k in 0..per_segment {
                let p = spline::eval(&cp, k as f64 / per_segment as f64);
                if let Some(pp) = prev {
                    arc += (p - pp).norm();
                }
                prev = Some(p);
                s.pos.push(p);
                s.yarn.push(yi as u32);
                s.arc.push(arc);
            }
        }
        // Close the arc-length bookkeeping: the end of the last segment.
        let end = if c.closed {
            s.pos.get(first_pos).copied()
        } else if n >= 4 {
            Some(q(n - 2))
        } else {
            None
        };
        if let (Some(e), Some(pp)) = (end, prev) {
            arc += (e - pp).norm();
        }
        s.length.push(arc);
        s.closed.push(c.closed);
    }
    s
}

/// Among pairs of samples of one yarn closer than `cutoff` in space and at least `from_arc` apart
/// along it (the shorter way round on a closed yarn), the one nearest along the yarn: its arc
/// separation, distance and sample indices; `None` when there is no such pair. With `cutoff` the
/// contact distance 2r and `from_arc` = πr (closer along the yarn, a yarn bent as tightly as it can
/// bend touches itself), these are the yarn's contacts with itself, and the first is the one a
/// same-yarn exclusion arc ([`crate::contact`]) hides first as it grows.
pub fn nearest_self_contact(
    s: &Samples,
    from_arc: f64,
    cutoff: f64,
) -> Option<(f64, f64, usize, usize)> {
    let mut best: Option<(f64, f64, usize, usize)> = None;
    close_pairs(s, cutoff, |i, j| {
        let y = s.yarn[i] as usize;
        if s.yarn[j] as usize != y {
            return;
        }
        let mut arc = (s.arc[i] - s.arc[j]).abs();
        if s.closed[y] {
            arc = arc.min(s.length[y] - arc);
        }
        if arc < from_arc || best.is_some_and(|b| b.0 <= arc) {
            return;
        }
        let d = (s.pos[j] - s.pos[i]).norm();
        if d < cutoff {
            best = Some((arc, d, i, j));
        }
    });
    best
}

/// Calls `f(i, j)` for every pair of samples `i < j` in neighbouring cells of a grid of `cell`
/// wide cells (every pair closer than `cell`, and some farther), `i` ascending, then the cells in
/// a fixed order.
fn close_pairs(s: &Samples, cell: f64, mut f: impl FnMut(usize, usize)) {
    use std::collections::HashMap;
    let key = |p: V3<f64>| {
        [
            (p.x / cell).floor() as i64,
            (p.y / cell).floor() as i64,
            (p.z / cell).floor() as i64,
        ]
    };
    let mut grid: HashMap<[i64; 3], Vec<usize>> = HashMap::new();
    for (i, p) in s.pos.iter().enumerate() {
        grid.entry(key(*p)).or_default().push(i);
    }
    for (i, p) in s.pos.iter().enumerate() {
        let k = key(*p);
        for dx in -1..=1 {
            for dy in -1..=1 {
                for dz in -1..=1 {
                    let Some(list) = grid.get(&[k[0] + dx, k[1] + dy, k[2] + dz]) else {
                        continue;
                    };
                    for &j in list.iter().filter(|&&j| j > i) {
                        f(i, j);
                    }
                }
            }
        }
    }
}

/// Smallest distance between samples of the curves that are not neighbours along the yarn: samples
/// on different yarns, or on the same yarn more than `exclusion_arc` apart in arc length (the shorter
/// way round for closed yarns). Pairs farther than `cutoff` are not examined; if none is closer the
/// result is `cutoff`. Returns the distance and the two sample indices.
pub fn min_separation(s: &Samples, exclusion_arc: f64, cutoff: f64) -> (f64, usize, usize) {
    let mut best = (cutoff, usize::MAX, usize::MAX);
    close_pairs(s, cutoff, |i, j| {
        if s.neighbours_along_yarn(i, j, exclusion_arc) {
            return;
        }
        let d = (s.pos[j] - s.pos[i]).norm();
        if d < best.0 {
            best = (d, i, j);
        }
    });
    best
}
