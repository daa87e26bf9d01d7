//! BCC (Cem Yuksel's binary curve collection) import and export.
//!
//! Reads a byte buffer (or a file) into [`Curve`]s of Catmull-Rom control points in the convention of
//! `state.rs` (open yarns carry a tangent handle at each end), and writes curves back as `C0`.
//!
//! Layout, all little-endian:
//!
//! | bytes | field |
//! |---|---|
//! | 0..3 | signature `BCC` |
//! | 3 | `0x44`: 4-byte integers and 4-byte floats |
//! | 4..6 | curve type: `C0` Catmull-Rom, `PL` polyline, `BS` uniform cubic B-spline |
//! | 6 | dimensions (only 3 is supported) |
//! | 7 | up axis (ignored on read; written as 1, our +y up) |
//! | 8..16 | u64 curve count |
//! | 16..24 | u64 total control-point count |
//! | 24..64 | free text (ignored; may be garbage) |
//!
//! Then, per curve, an `i32` point count (negative: a closed loop of `|count|` points) and the points
//! as `f32` triples.
//!
//! Conversions on read:
//! - `C0` open curves are taken as they are: points 0 and n−1 are tangent handles, as in our `Curve`.
//! - `PL` open polylines get tangent handles by reflecting the end points (`2 p0 − p1`,
//!   `2 p(n−1) − p(n−2)`); closed polylines are used as control points directly. The Catmull-Rom curve
//!   through the polyline's vertices is then the yarn (a smooth interpolant of the same points).
//! - `BS` uniform cubic B-splines are converted exactly up to a stated tolerance (see "B-spline
//!   conversion" below): the Catmull-Rom curve interpolates the knot points of the B-spline refined by
//!   `m` midpoint subdivisions, `m` chosen per curve as the least that brings the deviation under
//!   the tolerance ([`BSPLINE_TOLERANCE`] by default, [`ReadOptions`]) times the curve's mean
//!   control-polygon edge.
//! - A closed curve whose last point repeats its first (bitwise) has the repeat removed.
//!
//! Export writes `C0` with the points exactly as given, so export → import returns the same bits.
//!
//! # B-spline conversion
//!
//! A uniform cubic B-spline with control points `p_i` has on its segment `[i, i+1]` (local `t`)
//! `B(t) = Σ β_k(t) p_{i−1+k}`; at its knots `B(i) = (p_{i−1} + 4 p_i + p_{i+1})/6` and
//! `B'(i) = (p_{i+1} − p_{i−1})/2`, and its third derivative on the segment is the third difference
//! `Δ³p = −p_{i−1} + 3 p_i − 3 p_{i+1} + p_{i+2}`. A Catmull-Rom segment is the cubic Hermite
//! interpolant of its two knot values `q_i, q_{i+1}` and the tangents `(q_{i+1} − q_{i−1})/2`,
//! `(q_{i+2} − q_i)/2`. Hermite interpolation reproduces a cubic exactly, so a Catmull-Rom curve
//! through the knot points `q_i = B(i)` *would* be the B-spline if its tangents were the B-spline's;
//! they are not: the central difference of the knot values misses `B'(i)` by
//! `δ_i = (2(p_{i+1} − p_{i−1}) − (p_{i+2} − p_{i−2}))/12`, a fourth-order difference that is
//! `O(|Δ³p|)`. The segment then deviates from the B-spline by the Hermite tangent terms,
//! `d(t) = t(1−t)((1−t) δ_i − t δ_{i+1})`, at most `max|δ|/4` (about `|Δ³p|/24`): with the same
//! number of points the conversion cannot be exact (it moved published models by up to ~0.02 units,
//! enough to flip a near crossing, so `links` certified another topology than the file's).
//!
//! Refinement. One midpoint subdivision (Lane–Riesenfeld) replaces the control polygon by its vertex
//! points `(p_{i−1} + 6 p_i + p_{i+1})/8` and edge points `(p_i + p_{i+1})/2`: the *same* curve, with
//! the knots twice as dense (the old knot `i` is the new knot `2i`). In the new parameter the third
//! derivative is `1/8` of the old, so `δ`, and with it the deviation of the Catmull-Rom curve through
//! the refined knot points, shrinks by 8 per level: `m` levels cost `2^m` times the points and divide
//! the deviation by `8^m`. An open B-spline of `n` points spans knots `1 ..= n−2`; its refined polygon
//! `E_0, V_1, E_1, …, V_{n−2}, E_{n−2}` (`2n − 3` points) spans exactly the same curve. A closed one of
//! `n` points becomes `2n` points `V_0, E_0, V_1, …`.
//!
//! Conversion of the (refined) polygon: a closed curve's Catmull-Rom points are its `n` knot points;
//! an open curve's are its interior knots `i = 1 ..= n−2` plus tangent handles `q_0 = q_2 − (p_2 − p_0)`
//! and `q_{n−1} = q_{n−3} + (p_{n−1} − p_{n−3})`, so that the end tangents are the B-spline's exactly.
//!
//! Measured deviation. Each segment's deviation is itself a cubic, whose Bézier points are the
//! differences of the two curves' Bézier points (Catmull-Rom `q_1, q_1 + (q_2 − q_0)/6,
//! q_2 − (q_3 − q_1)/6, q_2`; B-spline `(p_0 + 4p_1 + p_2)/6, (2p_1 + p_2)/3, (p_1 + 2p_2)/3,
//! (p_1 + 4p_2 + p_3)/6`). The largest distance of a Bézier point from zero bounds the deviation over
//! the segment (convex hull property); splitting the cubic into 8 pieces by de Casteljau first makes
//! that bound tight to a few per cent (on the whole segment it can be 3.5 times the true maximum,
//! which would cost needless levels). It is computed with the Catmull-Rom points as stored (f32) against the
//! refined B-spline in f64 (whose own rounding, ~1e-16 relative, is far below anything here), so the
//! bound covers the f32 rounding too. The level `m` is the least, up to [`BSPLINE_MAX_LEVELS`], whose
//! bound is within `tolerance × h` of the file's curve (default [`BSPLINE_TOLERANCE`]), `h` the curve's mean control-polygon
//! edge in the file. The tolerance is relative because a file's units are unknown when it is read (the
//! scene's `scale`/`units` and the yarn radius come later, and `links` reads bare files); in yarn-level
//! models the control spacing `h` is about the yarn diameter (0.5–2 × 2r), so the bound is
//! ~1e-3 r: a thousandth of the clearance between touching yarns, far below what could move a
//! crossing, and below the contact model's resolution. A curve that cannot reach the tolerance (its
//! coordinates so large against its spacing that f32 rounding alone exceeds it) keeps its best level,
//! and [`ImportReport`] says so; `yarnsim info` and `links` print the report.

use crate::state::Curve;
use std::path::Path;

/// Size of the fixed header.
pub const HEADER_BYTES: usize = 64;

/// Largest deviation of a converted `BS` curve from the file's B-spline, relative to the curve's mean
/// control-polygon edge in the file (see "B-spline conversion" in the module doc for why relative):
/// the default of [`ReadOptions::bspline_tolerance`].
pub const BSPLINE_TOLERANCE: f64 = 1e-3;

/// Options of [`read_with_options`].
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ReadOptions {
    /// Tolerance of the `BS` conversion, relative to each curve's mean control-polygon edge
    /// (default [`BSPLINE_TOLERANCE`]). Each factor of 8 looser saves about one subdivision level,
    /// half the points.
    pub bspline_tolerance: f64,
}

impl Default for ReadOptions {
    fn default() -> Self {
        ReadOptions {
            bspline_tolerance: BSPLINE_TOLERANCE,
        }
    }
}

/// Most midpoint subdivisions of a `BS` curve (each doubles its points and divides the deviation by
/// about 8; a smooth curve needs 1 or 2, a control polygon with sharp corners 3).
pub const BSPLINE_MAX_LEVELS: u32 = 6;

/// What reading a file did to its curves, for reports (`yarnsim info`, `yarnsim links`).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ImportReport {
    /// The file's curve type: `"C0"`, `"PL"` or `"BS"`.
    pub curve_type: String,
    /// Control points in the file (after removing a repeated closing point).
    pub file_points: usize,
    /// Catmull-Rom control points the curves became.
    pub points: usize,
    /// For a `BS` file: how exactly its B-splines were converted.
    pub bspline: Option<BsplineReport>,
}

/// How a `BS` file's curves were converted (module doc, "B-spline conversion").
#[derive(Clone, Debug, Default, PartialEq)]
pub struct BsplineReport {
    /// Subdivision levels used: the smallest and largest over the curves.
    pub min_levels: u32,
    pub max_levels: u32,
    /// Largest bound on the distance between a converted curve and the file's B-spline, in file units.
    pub max_deviation: f64,
    /// The same relative to each curve's mean control-polygon edge (the tolerance is
    /// [`BSPLINE_TOLERANCE`] of it): the largest ratio over the curves.
    pub max_relative_deviation: f64,
    /// Curves whose bound is above the tolerance (f32 rounding of coordinates far larger than the
    /// spacing; see the module doc). 0 for every reasonable file.
    pub curves_over_tolerance: usize,
    /// The tolerance used, relative to the control spacing.
    pub tolerance: f64,
}

impl std::fmt::Display for ImportReport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} curves: {} control points in the file, {} Catmull-Rom points",
            self.curve_type, self.file_points, self.points
        )?;
        if let Some(b) = &self.bspline {
            write!(
                f,
                "; B-splines subdivided {}{} times, within {:.3e} units of the file's curves \
                 ({:.2e} of the control spacing, tolerance {:.0e})",
                if b.min_levels == b.max_levels {
                    String::new()
                } else {
                    format!("{}–", b.min_levels)
                },
                b.max_levels,
                b.max_deviation,
                b.max_relative_deviation,
                b.tolerance
            )?;
            if b.curves_over_tolerance > 0 {
                write!(
                    f,
                    "; WARNING: {} curves above the tolerance (coordinates too large for f32 \
                     against their spacing)",
                    b.curves_over_tolerance
                )?;
            }
        }
        Ok(())
    }
}

/// Why a BCC buffer could not be read or written. Every variant says what was wrong and where.
#[derive(Debug, thiserror::Error)]
pub enum BccError {
    #[error("{path}: {source}")]
    Io {
        path: String,
        #[source]
        source: std::io::Error,
    },
    #[error("{path}: {error}")]
    InFile {
        path: String,
        #[source]
        error: Box<BccError>,
    },
    #[error(
        "truncated BCC data: {what} needs bytes {start}..{end} but the data has only {len} bytes"
    )]
    Truncated {
        what: String,
        start: usize,
        end: usize,
        len: usize,
    },
    #[error("not a BCC file: the signature is {found:?}, expected \"BCC\" followed by byte 0x44")]
    Signature { found: Vec<u8> },
    #[error("unsupported BCC curve type {0:?} (supported: \"C0\", \"PL\", \"BS\")")]
    CurveType(String),
    #[error("unsupported BCC dimension count {0} (only 3 is supported)")]
    Dimensions(u8),
    #[error("BCC counts do not add up: {0}")]
    Counts(String),
    #[error("BCC curve {curve}, point {point} is not finite: {value:?}")]
    NotFinite {
        curve: usize,
        point: usize,
        value: [f32; 3],
    },
    #[error("BCC curve {curve} ({kind}) has {points} points; it needs at least {min}")]
    TooShort {
        curve: usize,
        kind: &'static str,
        points: usize,
        min: usize,
    },
    #[error("curve {curve} has {points} points, more than a BCC point count (i32) holds")]
    TooLong { curve: usize, points: usize },
    #[error("the B-spline tolerance must be a finite number > 0, got {0}")]
    Tolerance(f64),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum CurveType {
    CatmullRom,
    Polyline,
    BSpline,
}

/// A bounds-checked little-endian reader over the buffer.
struct Reader<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize, what: impl FnOnce() -> String) -> Result<&'a [u8], BccError> {
        let end = self.at.checked_add(n).filter(|&e| e <= self.bytes.len());
        match end {
            Some(end) => {
                let s = &self.bytes[self.at..end];
                self.at = end;
                Ok(s)
            }
            None => Err(BccError::Truncated {
                what: what(),
                start: self.at,
                end: self.at.saturating_add(n),
                len: self.bytes.len(),
            }),
        }
    }
}

/// Reads a BCC file; errors name the file.
pub fn read(path: &Path) -> Result<Vec<Curve>, BccError> {
    read_with_report(path).map(|(c, _)| c)
}

/// Reads a BCC file and says what the conversion did; errors name the file.
pub fn read_with_report(path: &Path) -> Result<(Vec<Curve>, ImportReport), BccError> {
    read_with_options(path, &ReadOptions::default())
}

/// [`read_with_report`] with options.
pub fn read_with_options(
    path: &Path,
    options: &ReadOptions,
) -> Result<(Vec<Curve>, ImportReport), BccError> {
    let (bytes, more) = read_file(path).map_err(|source| BccError::Io {
        path: path.display().to_string(),
        source,
    })?;
    let in_file = |e| BccError::InFile {
        path: path.display().to_string(),
        error: Box::new(e),
    };
    let (curves, report) = read_bytes_with_options(&bytes, options).map_err(in_file)?;
    if more {
        // (How many is not known: the stream was read no further.)
        return Err(in_file(BccError::Counts(format!(
            "more bytes follow the last of {} curves, past the {} bytes its header gives (a \
             stream, read no further)",
            curves.len(),
            bytes.len()
        ))));
    }
    Ok((curves, report))
}

/// The bytes of a BCC file, and whether more follow them unread. A regular file is read whole
/// (the parser names what is wrong with it, trailing bytes counted); anything else (a device, a
/// pipe) only as far as its header says the file goes, and one byte more to see that nothing
/// follows (that byte is not returned: the flag says it was there): `/dev/zero` was read until
/// memory ran out.
fn read_file(path: &Path) -> std::io::Result<(Vec<u8>, bool)> {
    use std::io::Read;
    let mut file = std::fs::File::open(path)?;
    let mut bytes = Vec::new();
    if file.metadata()?.is_file() {
        file.read_to_end(&mut bytes)?;
        return Ok((bytes, false));
    }
    (&mut file)
        .take(HEADER_BYTES as u64)
        .read_to_end(&mut bytes)?;
    // (A header that is not a BCC one stops here: the parser says why.)
    if bytes.len() == HEADER_BYTES && &bytes[0..3] == b"BCC" && bytes[3] == 0x44 {
        let count = |at: usize| u64::from_le_bytes(bytes[at..at + 8].try_into().unwrap());
        let body = 4u64
            .saturating_mul(count(8))
            .saturating_add(12u64.saturating_mul(count(16)));
        file.take(body.saturating_add(1)).read_to_end(&mut bytes)?;
        if bytes.len() as u64 == (HEADER_BYTES as u64).saturating_add(body).saturating_add(1) {
            bytes.pop();
            return Ok((bytes, true));
        }
    }
    Ok((bytes, false))
}

/// Parses a BCC buffer into Catmull-Rom curves (see the module doc for the conversions).
pub fn read_bytes(bytes: &[u8]) -> Result<Vec<Curve>, BccError> {
    read_bytes_with_report(bytes).map(|(c, _)| c)
}

/// [`read_bytes`], and what the conversion did.
pub fn read_bytes_with_report(bytes: &[u8]) -> Result<(Vec<Curve>, ImportReport), BccError> {
    read_bytes_with_options(bytes, &ReadOptions::default())
}

/// [`read_bytes_with_report`] with options.
pub fn read_bytes_with_options(
    bytes: &[u8],
    options: &ReadOptions,
) -> Result<(Vec<Curve>, ImportReport), BccError> {
    let tolerance = options.bspline_tolerance;
    if !(tolerance.is_finite() && tolerance > 0.0) {
        return Err(BccError::Tolerance(tolerance));
    }
    let mut r = Reader { bytes, at: 0 };
    let header = r.take(HEADER_BYTES, || "the 64-byte header".to_string())?;
    if &header[0..3] != b"BCC" || header[3] != 0x44 {
        return Err(BccError::Signature {
            found: header[0..4].to_vec(),
        });
    }
    let kind = match &header[4..6] {
        b"C0" => CurveType::CatmullRom,
        b"PL" => CurveType::Polyline,
        b"BS" => CurveType::BSpline,
        other => return Err(BccError::CurveType(String::from_utf8_lossy(other).into())),
    };
    if header[6] != 3 {
        return Err(BccError::Dimensions(header[6]));
    }
    let curve_count = u64::from_le_bytes(header[8..16].try_into().unwrap());
    let point_count = u64::from_le_bytes(header[16..24].try_into().unwrap());
    // The counts fix the body size from below; check it before allocating anything from them.
    let room = (bytes.len() - HEADER_BYTES) as u128;
    let need = 4 * curve_count as u128 + 12 * point_count as u128;
    if need > room {
        return Err(BccError::Truncated {
            what: format!("the {curve_count} curves of {point_count} points the header announces"),
            start: HEADER_BYTES,
            end: (HEADER_BYTES as u128 + need).min(usize::MAX as u128) as usize,
            len: bytes.len(),
        });
    }
    let mut curves = Vec::with_capacity(curve_count as usize);
    let mut report = ImportReport {
        curve_type: String::from_utf8_lossy(&header[4..6]).into_owned(),
        ..ImportReport::default()
    };
    let mut bs: Option<BsplineReport> = None;
    let mut seen_points: u64 = 0;
    for ci in 0..curve_count as usize {
        let raw = r.take(4, || format!("the point count of curve {ci}"))?;
        let count = i32::from_le_bytes(raw.try_into().unwrap());
        let closed = count < 0;
        let n = count.unsigned_abs() as usize;
        seen_points += n as u64;
        if seen_points > point_count {
            return Err(BccError::Counts(format!(
                "curves 0..={ci} hold {seen_points} points, more than the {point_count} the header announces"
            )));
        }
        let data = r.take(n * 12, || format!("the {n} points of curve {ci}"))?;
        let mut pts = Vec::with_capacity(n);
        for (pi, chunk) in data.chunks_exact(12).enumerate() {
            let p = [
                f32::from_le_bytes(chunk[0..4].try_into().unwrap()),
                f32::from_le_bytes(chunk[4..8].try_into().unwrap()),
                f32::from_le_bytes(chunk[8..12].try_into().unwrap()),
            ];
            if !p.iter().all(|v| v.is_finite()) {
                return Err(BccError::NotFinite {
                    curve: ci,
                    point: pi,
                    value: p,
                });
            }
            pts.push(p);
        }
        if closed && pts.len() >= 2 && bits(pts[0]) == bits(pts[pts.len() - 1]) {
            pts.pop();
        }
        report.file_points += pts.len();
        let (curve, fit) = convert(ci, kind, pts, closed, tolerance)?;
        report.points += curve.points.len();
        if let Some(fit) = fit {
            let b = bs.get_or_insert(BsplineReport {
                min_levels: u32::MAX,
                tolerance,
                ..BsplineReport::default()
            });
            b.min_levels = b.min_levels.min(fit.levels);
            b.max_levels = b.max_levels.max(fit.levels);
            b.max_deviation = b.max_deviation.max(fit.deviation);
            let rel = if fit.spacing > 0.0 {
                fit.deviation / fit.spacing
            } else {
                0.0
            };
            b.max_relative_deviation = b.max_relative_deviation.max(rel);
            b.curves_over_tolerance += (fit.deviation > tolerance * fit.spacing) as usize;
        }
        curves.push(curve);
    }
    if seen_points != point_count {
        return Err(BccError::Counts(format!(
            "the header announces {point_count} points but the curves hold {seen_points}"
        )));
    }
    if r.at != bytes.len() {
        return Err(BccError::Counts(format!(
            "{} trailing bytes after the last of {curve_count} curves",
            bytes.len() - r.at
        )));
    }
    report.bspline = bs;
    Ok((curves, report))
}

fn bits(p: [f32; 3]) -> [u32; 3] {
    p.map(f32::to_bits)
}

/// How one `BS` curve was converted.
#[derive(Clone, Copy, Debug)]
struct BsplineFit {
    levels: u32,
    /// Bound on the distance to the file's B-spline (file units).
    deviation: f64,
    /// Mean control-polygon edge of the file's curve.
    spacing: f64,
}

/// Turns one file curve into Catmull-Rom control points in our convention.
fn convert(
    ci: usize,
    kind: CurveType,
    p: Vec<[f32; 3]>,
    closed: bool,
    bspline_tolerance: f64,
) -> Result<(Curve, Option<BsplineFit>), BccError> {
    let n = p.len();
    let too_short = |kind: &'static str, min: usize| BccError::TooShort {
        curve: ci,
        kind,
        points: n,
        min,
    };
    let add =
        |a: [f32; 3], b: [f32; 3], s: f32| [a[0] + s * b[0], a[1] + s * b[1], a[2] + s * b[2]];
    let sub = |a: [f32; 3], b: [f32; 3]| [a[0] - b[0], a[1] - b[1], a[2] - b[2]];
    let mut fit = None;
    let points = match (kind, closed) {
        (_, true) if n < 3 => return Err(too_short("closed", 3)),
        (CurveType::CatmullRom, false) if n < 4 => return Err(too_short("open C0", 4)),
        (CurveType::CatmullRom, _) => p,
        (CurveType::Polyline, true) => p,
        (CurveType::Polyline, false) => {
            if n < 2 {
                return Err(too_short("open PL", 2));
            }
            let mut q = Vec::with_capacity(n + 2);
            q.push(add(p[0], sub(p[0], p[1]), 1.0));
            q.extend_from_slice(&p);
            q.push(add(p[n - 1], sub(p[n - 1], p[n - 2]), 1.0));
            q
        }
        (CurveType::BSpline, closed) => {
            if !closed && n < 4 {
                return Err(too_short("open BS", 4));
            }
            let (q, f) = bspline_to_catmull_rom(&p, closed, bspline_tolerance);
            fit = Some(f);
            q
        }
    };
    for (pi, v) in points.iter().enumerate() {
        if !v.iter().all(|x| x.is_finite()) {
            return Err(BccError::NotFinite {
                curve: ci,
                point: pi,
                value: *v,
            });
        }
    }
    Ok((Curve { points, closed }, fit))
}

type P64 = [f64; 3];

/// One midpoint subdivision of a uniform cubic B-spline's control polygon: the same curve with twice
/// as many knots (module doc, "Refinement").
fn subdivide(p: &[P64], closed: bool) -> Vec<P64> {
    let n = p.len();
    let edge = |a: P64, b: P64| -> P64 { std::array::from_fn(|k| 0.5 * (a[k] + b[k])) };
    let vert = |a: P64, b: P64, c: P64| -> P64 {
        std::array::from_fn(|k| (a[k] + 6.0 * b[k] + c[k]) * 0.125)
    };
    let mut out = Vec::with_capacity(2 * n);
    if closed {
        for i in 0..n {
            out.push(vert(p[(i + n - 1) % n], p[i], p[(i + 1) % n]));
            out.push(edge(p[i], p[(i + 1) % n]));
        }
    } else {
        out.push(edge(p[0], p[1]));
        for i in 1..n - 1 {
            out.push(vert(p[i - 1], p[i], p[i + 1]));
            out.push(edge(p[i], p[i + 1]));
        }
    }
    out
}

/// Catmull-Rom points interpolating the knots of the B-spline with control polygon `p`, with exact end
/// tangents for an open curve (module doc, "Conversion").
fn knot_catmull_rom(p: &[P64], closed: bool) -> Vec<[f32; 3]> {
    let n = p.len();
    let knot = |i: usize| -> P64 {
        let (a, b, c) = (p[(i + n - 1) % n], p[i], p[(i + 1) % n]);
        std::array::from_fn(|k| (a[k] + 4.0 * b[k] + c[k]) / 6.0)
    };
    let f = |v: P64| v.map(|x| x as f32);
    if closed {
        return (0..n).map(|i| f(knot(i))).collect();
    }
    let mut q = Vec::with_capacity(n);
    q.push([0.0; 3]);
    q.extend((1..n - 1).map(|i| f(knot(i))));
    q.push([0.0; 3]);
    // Catmull-Rom tangent at q1 is (q2 − q0)/2; the B-spline's at knot 1 is (p2 − p0)/2 (and so at the
    // other end). Computed in f64 from the stored (rounded) q so the tangent is as exact as f32 allows.
    let (q2, qe) = (q[2], q[n - 3]);
    q[0] = std::array::from_fn(|k| (q2[k] as f64 - (p[2][k] - p[0][k])) as f32);
    q[n - 1] = std::array::from_fn(|k| (qe[k] as f64 + (p[n - 1][k] - p[n - 3][k])) as f32);
    q
}

/// Bound on the distance between the Catmull-Rom curve `q` and the uniform B-spline `p` (the same
/// segment count, segment `s` of each using points `s−1 ..= s+2`): the largest Bézier coefficient of
/// their difference, segment by segment (module doc, "Measured deviation").
fn catmull_rom_deviation(q: &[[f32; 3]], p: &[P64], closed: bool) -> f64 {
    let n = q.len();
    let segs: Vec<usize> = if closed {
        (0..n).collect()
    } else {
        (1..n - 2).collect()
    };
    let mut worst = 0.0f64;
    for s in segs {
        let at = |i: isize| ((s as isize + i).rem_euclid(n as isize)) as usize;
        let qv: [P64; 4] = std::array::from_fn(|j| q[at(j as isize - 1)].map(|x| x as f64));
        let pv: [P64; 4] = std::array::from_fn(|j| p[at(j as isize - 1)]);
        // Bézier points of both segments, coordinate by coordinate.
        let cr = |k: usize| {
            [
                qv[1][k],
                qv[1][k] + (qv[2][k] - qv[0][k]) / 6.0,
                qv[2][k] - (qv[3][k] - qv[1][k]) / 6.0,
                qv[2][k],
            ]
        };
        let bs = |k: usize| {
            [
                (pv[0][k] + 4.0 * pv[1][k] + pv[2][k]) / 6.0,
                (2.0 * pv[1][k] + pv[2][k]) / 3.0,
                (pv[1][k] + 2.0 * pv[2][k]) / 3.0,
                (pv[1][k] + 4.0 * pv[2][k] + pv[3][k]) / 6.0,
            ]
        };
        let (c, b) = ([cr(0), cr(1), cr(2)], [bs(0), bs(1), bs(2)]);
        let d: [P64; 4] = std::array::from_fn(|i| std::array::from_fn(|k| c[k][i] - b[k][i]));
        worst = worst.max(bezier_bound(d, BOUND_SPLITS));
    }
    worst
}

/// De Casteljau halvings [`bezier_bound`] applies: the hull of each of the `2^3` pieces is within a
/// few per cent of the cubic's true maximum (the hull of the whole cubic can be 3.5 times it).
const BOUND_SPLITS: u32 = 3;

/// Upper bound on `max_t |d(t)|` for the cubic Bézier curve `d`: the largest control point norm over
/// the pieces of `splits` halvings (each piece lies in the convex hull of its control points).
fn bezier_bound(d: [P64; 4], splits: u32) -> f64 {
    if splits == 0 {
        return d
            .iter()
            .map(|v| v.iter().map(|x| x * x).sum::<f64>().sqrt())
            .fold(0.0, f64::max);
    }
    let mid = |a: P64, b: P64| -> P64 { std::array::from_fn(|k| 0.5 * (a[k] + b[k])) };
    let (a1, b1, c1) = (mid(d[0], d[1]), mid(d[1], d[2]), mid(d[2], d[3]));
    let (a2, b2) = (mid(a1, b1), mid(b1, c1));
    let m = mid(a2, b2);
    bezier_bound([d[0], a1, a2, m], splits - 1).max(bezier_bound([m, b2, c1, d[3]], splits - 1))
}

/// A `BS` curve as Catmull-Rom points within `tolerance` (relative to its mean control-polygon edge)
/// of it (module doc, "B-spline conversion"): the least subdivision level that reaches the tolerance,
/// or the best one found.
fn bspline_to_catmull_rom(
    p: &[[f32; 3]],
    closed: bool,
    tolerance: f64,
) -> (Vec<[f32; 3]>, BsplineFit) {
    let n = p.len();
    let mut poly: Vec<P64> = p.iter().map(|v| v.map(|x| x as f64)).collect();
    let edges = if closed { n } else { n - 1 };
    let spacing = (0..edges)
        .map(|e| {
            let (a, b) = (poly[e], poly[(e + 1) % n]);
            (0..3).map(|k| (a[k] - b[k]).powi(2)).sum::<f64>().sqrt()
        })
        .sum::<f64>()
        / edges as f64;
    let tol = tolerance * spacing;
    // f32 rounding of the Catmull-Rom points (half an ulp of the largest coordinate, a few times over
    // in the Bézier coefficients) bounds the deviation from below.
    let max_abs = poly
        .iter()
        .flat_map(|v| v.iter())
        .fold(0.0f64, |m, x| m.max(x.abs()));
    let floor = 4.0 * f32::EPSILON as f64 * max_abs;
    let mut best: Option<(Vec<[f32; 3]>, BsplineFit)> = None;
    for levels in 0..=BSPLINE_MAX_LEVELS {
        if levels > 0 {
            poly = subdivide(&poly, closed);
        }
        let q = knot_catmull_rom(&poly, closed);
        let deviation = catmull_rom_deviation(&q, &poly, closed);
        let fit = BsplineFit {
            levels,
            deviation,
            spacing,
        };
        if best.as_ref().is_none_or(|b| deviation < b.1.deviation) {
            best = Some((q, fit));
        }
        // Within tolerance, or down to what storing the points in f32 allows: more levels cannot
        // help. (The decrease is not 8-fold from the first level: the file's polygon may have
        // irregular third differences that one subdivision first smooths.)
        if deviation <= tol || deviation <= floor {
            break;
        }
    }
    best.expect("level 0 is always tried")
}

/// Encodes curves as a `C0` BCC buffer; open curves keep their tangent handles.
///
/// Panics only if a curve has more than `i32::MAX` points (use [`write()`] for an error instead).
pub fn write_bytes(curves: &[Curve]) -> Vec<u8> {
    try_write_bytes(curves).expect("curve too long for BCC")
}

fn try_write_bytes(curves: &[Curve]) -> Result<Vec<u8>, BccError> {
    let total: usize = curves.iter().map(|c| c.points.len()).sum();
    let mut out = Vec::with_capacity(HEADER_BYTES + 4 * curves.len() + 12 * total);
    out.extend_from_slice(b"BCC");
    out.push(0x44);
    out.extend_from_slice(b"C0");
    out.push(3);
    out.push(1);
    out.extend_from_slice(&(curves.len() as u64).to_le_bytes());
    out.extend_from_slice(&(total as u64).to_le_bytes());
    let mut info = [0u8; 40];
    let text = b"yarnsim Catmull-Rom, cm";
    info[..text.len()].copy_from_slice(text);
    out.extend_from_slice(&info);
    for (ci, c) in curves.iter().enumerate() {
        let n = i32::try_from(c.points.len()).map_err(|_| BccError::TooLong {
            curve: ci,
            points: c.points.len(),
        })?;
        let count = if c.closed { -n } else { n };
        out.extend_from_slice(&count.to_le_bytes());
        for p in &c.points {
            for v in p {
                out.extend_from_slice(&v.to_le_bytes());
            }
        }
    }
    Ok(out)
}

/// Writes curves to a `C0` BCC file, atomically (see [`crate::output`]): a failed write leaves no
/// partial file under `path`.
pub fn write(path: &Path, curves: &[Curve]) -> Result<(), BccError> {
    let bytes = try_write_bytes(curves)?;
    crate::output::write_bytes_atomic(path, &bytes).map_err(|e| BccError::Io {
        path: path.display().to_string(),
        source: e.into_io_error(),
    })
}
