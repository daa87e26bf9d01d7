//! Geometry export for other tools: Wavefront OBJ polylines, one file per frame.
//!
//! What is written: the **control points** of every yarn, exactly the polyline the rod mechanics uses
//! (`state::Curve`), as `v x y z` lines, and one `l` element per yarn listing its points in order. An
//! open yarn's first and last vertex are its Catmull-Rom tangent handles (the drawn curve runs from the
//! second to the second-to-last point); a closed yarn's `l` element closes by repeating its first vertex
//! index. Coordinates are written with Rust's shortest round-trip formatting of `f32`, so
//! [`parse_obj`] gives back bit-identical curves: open/closed is read from whether the element repeats
//! its first index at the end.

use crate::state::Curve;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

/// Why an OBJ file could not be written or read.
#[derive(Debug, thiserror::Error)]
pub enum ExportError {
    #[error("{path}: {source}")]
    Io {
        path: String,
        #[source]
        source: std::io::Error,
    },
    #[error("OBJ line {line}: {message}")]
    Parse { line: usize, message: String },
    #[error(transparent)]
    Output(#[from] crate::output::OutputError),
}

/// The OBJ text for `curves` (see the module doc for the layout).
pub fn obj_string(curves: &[Curve]) -> String {
    let total: usize = curves.iter().map(|c| c.points.len()).sum();
    let mut s = String::with_capacity(total * 32 + curves.len() * 64 + 256);
    s.push_str("# yarnsim OBJ export: Catmull-Rom control points as polylines.\n");
    s.push_str("# Open yarns: first and last vertex of each l element are tangent handles.\n");
    s.push_str("# Closed yarns: the l element repeats its first vertex at the end.\n");
    let mut first = 1usize; // OBJ indices are 1-based
    for (yi, c) in curves.iter().enumerate() {
        let kind = if c.closed { "closed" } else { "open" };
        let _ = writeln!(s, "o yarn_{yi}");
        let _ = writeln!(s, "# yarn {yi} {kind} {} control points", c.points.len());
        for p in &c.points {
            let _ = writeln!(s, "v {} {} {}", p[0], p[1], p[2]);
        }
        s.push('l');
        for i in 0..c.points.len() {
            let _ = write!(s, " {}", first + i);
        }
        if c.closed && !c.points.is_empty() {
            let _ = write!(s, " {first}");
        }
        s.push('\n');
        first += c.points.len();
    }
    s
}

/// Writes [`obj_string`] to `path`, atomically (see [`crate::output`]): a failed write leaves no
/// partial file under `path`.
pub fn write_obj(path: &Path, curves: &[Curve]) -> Result<(), ExportError> {
    crate::output::write_bytes_atomic(path, obj_string(curves).as_bytes())?;
    Ok(())
}

/// Writes frame `frame` as `dir/frame_NNNN.obj` (the same numbering as captured PNGs and BCC frames)
/// and returns the path.
pub fn write_obj_frame(dir: &Path, frame: u32, curves: &[Curve]) -> Result<PathBuf, ExportError> {
    std::fs::create_dir_all(dir).map_err(|source| ExportError::Io {
        path: dir.display().to_string(),
        source,
    })?;
    let path = dir.join(format!("frame_{frame:04}.obj"));
    write_obj(&path, curves)?;
    Ok(path)
}

/// Reads curves back from OBJ text: every `l` element becomes a curve, closed when its last index
/// repeats its first. `v` lines give positions (a fourth `w` value is ignored); negative indices count
/// back from the latest vertex as the OBJ format allows. Other statements (`o`, `g`, comments, ...) are
/// skipped; faces are rejected because they are not curves.
pub fn parse_obj(text: &str) -> Result<Vec<Curve>, ExportError> {
    let mut verts: Vec<[f32; 3]> = Vec::new();
    let mut curves = Vec::new();
    for (ln, raw) in text.lines().enumerate() {
        let line = ln + 1;
        let err = |message: String| ExportError::Parse { line, message };
        let content = raw.split('#').next().unwrap_or("").trim();
        let mut tok = content.split_whitespace();
        let Some(kw) = tok.next() else { continue };
        match kw {
            "v" => {
                let mut p = [0f32; 3];
                for (k, slot) in p.iter_mut().enumerate() {
                    let t = tok
                        .next()
                        .ok_or_else(|| err(format!("vertex has {k} coordinates, needs 3")))?;
                    let v: f32 = t
                        .parse()
                        .map_err(|_| err(format!("vertex coordinate {t:?} is not a number")))?;
                    if !v.is_finite() {
                        return Err(err(format!("vertex coordinate {t:?} is not finite")));
                    }
                    *slot = v;
                }
                verts.push(p);
            }
            "l" => {
                let mut idx = Vec::new();
                for t in tok {
                    // `l` entries may be `v` or `v/vt`; only the vertex index matters.
                    let vs = t.split('/').next().unwrap_or("");
                    let i: i64 = vs
                        .parse()
                        .map_err(|_| err(format!("line index {t:?} is not an integer")))?;
                    let n = verts.len() as i64;
                    let abs = if i > 0 { i - 1 } else { n + i };
                    if i == 0 || abs < 0 || abs >= n {
                        return Err(err(format!(
                            "line index {i} refers to no vertex ({n} defined so far)"
                        )));
                    }
                    idx.push(abs as usize);
                }
                let closed = idx.len() >= 2 && idx.first() == idx.last();
                if closed {
                    idx.pop();
                }
                if idx.len() < 2 {
                    return Err(err("a line element needs at least 2 vertices".into()));
                }
                curves.push(Curve {
                    points: idx.iter().map(|&i| verts[i]).collect(),
                    closed,
                });
            }
            "f" => return Err(err("faces are not curves".into())),
            _ => {}
        }
    }
    Ok(curves)
}

/// Reads an OBJ file written by [`write_obj`] (or any OBJ made of polylines).
pub fn read_obj(path: &Path) -> Result<Vec<Curve>, ExportError> {
    let text = std::fs::read_to_string(path).map_err(|source| ExportError::Io {
        path: path.display().to_string(),
        source,
    })?;
    parse_obj(&text)
}
