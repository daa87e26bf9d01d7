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
//! - `BS` uniform cubic B-splines are evaluated at their knots: the B-spline passes through
//!   `(p(i−1) + 4 p(i) + p(i+1)) / 6`, which become interpolating Catmull-Rom control points. A closed
//!   B-spline of n points gives n knots. An open one of n ≥ 4 points gives the n − 2 interior knots
//!   `i = 1..=n−2`, plus handles chosen so that the Catmull-Rom end tangents equal the B-spline's end
//!   tangents `(p(i+1) − p(i−1)) / 2`.
//! - A closed curve whose last point repeats its first (bitwise) has the repeat removed.
//!
//! Export writes `C0` with the points exactly as given, so export → import returns the same bits.

use crate::state::Curve;
use std::path::Path;

/// Size of the fixed header.
pub const HEADER_BYTES: usize = 64;

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
    let bytes = std::fs::read(path).map_err(|source| BccError::Io {
        path: path.display().to_string(),
        source,
    })?;
    read_bytes(&bytes).map_err(|e| BccError::InFile {
        path: path.display().to_string(),
        error: Box::new(e),
    })
}

/// Parses a BCC buffer into Catmull-Rom curves (see the module doc for the conversions).
pub fn read_bytes(bytes: &[u8]) -> Result<Vec<Curve>, BccError> {
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
        curves.push(convert(ci, kind, pts, closed)?);
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
    Ok(curves)
}

fn bits(p: [f32; 3]) -> [u32; 3] {
    p.map(f32::to_bits)
}

/// Turns one file curve into Catmull-Rom control points in our convention.
fn convert(ci: usize, kind: CurveType, p: Vec<[f32; 3]>, closed: bool) -> Result<Curve, BccError> {
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
        (CurveType::BSpline, true) => (0..n)
            .map(|i| knot_point(p[(i + n - 1) % n], p[i], p[(i + 1) % n]))
            .collect(),
        (CurveType::BSpline, false) => {
            if n < 4 {
                return Err(too_short("open BS", 4));
            }
            let mut q = Vec::with_capacity(n);
            q.push([0.0; 3]);
            q.extend((1..n - 1).map(|i| knot_point(p[i - 1], p[i], p[i + 1])));
            q.push([0.0; 3]);
            // Catmull-Rom tangent at q1 is (q2 − q0)/2; the B-spline's at knot 1 is (p2 − p0)/2.
            q[0] = sub(q[2], sub(p[2], p[0]));
            q[n - 1] = add(q[n - 3], sub(p[n - 1], p[n - 3]), 1.0);
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
    Ok(Curve { points, closed })
}

/// Point of a uniform cubic B-spline at the knot of control point `b`.
fn knot_point(a: [f32; 3], b: [f32; 3], c: [f32; 3]) -> [f32; 3] {
    std::array::from_fn(|k| (a[k] + 4.0 * b[k] + c[k]) / 6.0)
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
