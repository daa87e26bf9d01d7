//! Checkpoints: the whole state of a run (CPU or GPU) in one file, from which the run continues bit
//! for bit (`yarnsim run --checkpoint-every N`, `yarnsim run --resume DIR`).
//!
//! # What is saved
//!
//! Everything a later step reads that an earlier step wrote, as the exact bits:
//! - the simulation ([`Sim::export_state`]): the origin of its frame ([`Sim::origin`]), positions
//!   and velocities (relative to it), the rod's edge frames (reference
//!   directors, tangents, material angles θ) and bending rest state (rest curvature moved by
//!   plasticity, rest twist, accumulated reference twist ψ), the obstacles as placed, time, step and
//!   frame counts (the damping phase of the next step is `steps mod phases`), and the pass-through
//!   check's last crossings;
//! - the contact model's state ([`crate::sim::ContactForce::export_state`]): nothing for `none`; the
//!   grid origin for `exact` (everything else it computes afresh each step); for `acl` every contact
//!   set header, stiction spring and free slot, the model pools (with their garbage, so compaction
//!   happens at the same steps), and the scheduler's entries, free slots, per-segment adjacency,
//!   bins, released entries, reference changes of movement, last cell boxes, the position history
//!   and the bins' position snapshots;
//! - for a GPU run, the contact state its step keeps on the device, in sections `gpu.*`
//!   ([`crate::gpu_step::GpuSim::export_contact_state`]: the exact path's grid origin; ACL's sets,
//!   pools, scheduler table and history, last counters, capacities and step count), which the
//!   resumed run's step takes up ([`crate::gpu_step::GpuSim::import_contact_state`]);
//! - the resolved scene (the file with its `--set` overrides applied) and the directory its relative
//!   paths resolve against, plus the caller's options (for the CLI: what the run writes where).
//!
//! Derived tables (topology, masses, exclusion tables, quadrature weights, the ACL set index) are
//! rebuilt from the scene by the same code, which gives the same bits; a fingerprint of the rebuilt
//! cloth (masses, glue targets, bending elements, damping blocks, step parameters) must match the
//! saved one, so a BCC file changed since the checkpoint is an error, not a silently different run.
//! Per-step scratch (forces, grids, caches keyed by the step number) is not saved.
//!
//! # Format (version [`FORMAT_VERSION`])
//!
//! Little-endian throughout:
//!
//! ```text
//! magic "YSIMCKPT" | format version u32 | crate version length u32 | crate version (UTF-8)
//! body length u64 | checksum u64 of all the above | body | checksum u64 of the body
//! body = sections, each: name length u32 | name (UTF-8) | encoding u8 | item size u32
//!                        | data length u64 | stored length u64 | stored data
//! ```
//!
//! Section data are `Pod` slices (f32 as their bits); point arrays whose w are all +0 drop them
//! (12 bytes a point). Each section is stored raw or, when smaller, *packed*: the bytes of each
//! position within an item gathered into planes, then run-length coded (PackBits), which shrinks
//! small integers, flags, padding and float exponents (the state of an ACL run to about half) and
//! is exact by construction. The section `meta.json` holds a [`CheckpointMeta`]. A file of
//! another format or crate version is refused naming both versions (bitwise continuation needs the
//! same code); a short file, a checksum mismatch or a malformed section is an error, never a panic.
//! The header has a checksum of its own (from format 4 on, in this place), so a header damaged on
//! disk is said to be damaged, not taken for another version or for a file cut short.
//!
//! Writes go through [`crate::output::write_atomic`] (temporary file, `fsync`, rename), so a run
//! killed while writing a checkpoint leaves the previous complete one under the final name.

use std::borrow::Cow;
use std::ops::Range;
use std::path::{Path, PathBuf};

use bytemuck::Pod;
use serde::{Deserialize, Serialize};

use crate::scene::Scene;
use crate::sim::Sim;

/// The checkpoint file's name in the run's `--out` directory.
pub const FILE_NAME: &str = "checkpoint.bin";

/// The file's first bytes.
pub const MAGIC: &[u8; 8] = b"YSIMCKPT";

/// The layout version of the file; bumped whenever what is saved or how changes.
pub const FORMAT_VERSION: u32 = 4;

/// The version of this build (`CARGO_PKG_VERSION`): a checkpoint resumes only with the same one.
pub const CRATE_VERSION: &str = env!("CARGO_PKG_VERSION");

/// Why a checkpoint cannot be written, read or restored.
#[derive(Debug, thiserror::Error)]
pub enum CheckpointError {
    #[error("cannot read checkpoint {}: {source}", path.display())]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("cannot write the checkpoint")]
    Write(#[from] crate::output::OutputError),
    #[error(
        "{origin}: not a yarnsim checkpoint (it does not start with {:?})",
        String::from_utf8_lossy(MAGIC)
    )]
    NotACheckpoint { origin: String },
    #[error("{origin}: written by yarnsim {file_crate} (checkpoint format {file_format}), but this is yarnsim {CRATE_VERSION} (checkpoint format {FORMAT_VERSION}); a checkpoint resumes only with the version that wrote it")]
    Version {
        origin: String,
        file_crate: String,
        file_format: u32,
    },
    #[error("{origin}: truncated: {expected} bytes expected, the file has {actual} (an interrupted copy?)")]
    Truncated {
        origin: String,
        expected: u64,
        actual: u64,
    },
    #[error("{origin}: corrupt: {message}")]
    Corrupt { origin: String, message: String },
    #[error("checkpoint section {section}: {message}")]
    Section { section: String, message: String },
    #[error("the checkpoint does not fit this simulation: {what} is {checkpoint} in the checkpoint but {sim} here")]
    Mismatch {
        what: &'static str,
        checkpoint: String,
        sim: String,
    },
    #[error("{0}")]
    Unsupported(String),
    #[error("the scene of the checkpoint: {0}")]
    Scene(String),
    #[error("rebuilding the simulation of the checkpoint")]
    Build(#[source] Box<dyn std::error::Error + Send + Sync>),
}

impl CheckpointError {
    fn section(name: &str, message: impl Into<String>) -> Self {
        CheckpointError::Section {
            section: name.to_string(),
            message: message.into(),
        }
    }

    /// A consistency error in section `name` (an index out of range, a length that does not match).
    pub fn bad(name: &str, message: impl Into<String>) -> Self {
        Self::section(name, message)
    }
}

/// A 64-bit checksum (not cryptographic): detects truncation, bit flips and swapped blocks.
#[derive(Clone, Copy, Debug)]
pub struct Checksum(u64);

impl Default for Checksum {
    fn default() -> Self {
        Checksum(0x243F_6A88_85A3_08D3)
    }
}

impl Checksum {
    const K: u64 = 0x9E37_79B9_7F4A_7C15;

    /// Mixes `data` (and its length) in.
    pub fn update(&mut self, data: &[u8]) {
        let mut h = self.0 ^ (data.len() as u64).wrapping_mul(Self::K);
        let mut chunks = data.chunks_exact(8);
        for c in &mut chunks {
            let w = u64::from_le_bytes([c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7]]);
            h = (h.rotate_left(23) ^ w).wrapping_mul(Self::K);
        }
        let mut tail = [0u8; 8];
        let rest = chunks.remainder();
        tail[..rest.len()].copy_from_slice(rest);
        h = (h.rotate_left(23) ^ u64::from_le_bytes(tail)).wrapping_mul(Self::K);
        self.0 = h;
    }

    pub fn finish(&self) -> u64 {
        let mut h = self.0;
        h ^= h >> 33;
        h = h.wrapping_mul(0xFF51_AFD7_ED55_8CCD);
        h ^= h >> 33;
        h = h.wrapping_mul(0xC4CE_B9FE_1A85_EC53);
        h ^ (h >> 33)
    }

    /// [`Checksum::update`] with the bytes of a `Pod` slice.
    pub fn update_pod<T: Pod>(&mut self, v: &[T]) {
        self.update(bytemuck::cast_slice(v));
    }
}

/// Section encoding: the bytes as they are.
const RAW: u8 = 0;
/// Section encoding: the bytes of each item position together (byte `j` of every item, then byte
/// `j + 1`, …), then run-length coded ([`pack`]). Small integers, flags, padding and the exponents
/// of similar floats turn into long runs.
const PACKED: u8 = 1;

/// Transposes `data` (items of `size` bytes) into byte planes.
fn shuffle(data: &[u8], size: usize) -> Vec<u8> {
    if size <= 1 || !data.len().is_multiple_of(size) {
        return data.to_vec();
    }
    let n = data.len() / size;
    let mut out = vec![0u8; data.len()];
    for (i, item) in data.chunks_exact(size).enumerate() {
        for (j, &b) in item.iter().enumerate() {
            out[j * n + i] = b;
        }
    }
    out
}

/// The inverse of [`shuffle`].
fn unshuffle(planes: &[u8], size: usize) -> Vec<u8> {
    if size <= 1 || !planes.len().is_multiple_of(size) {
        return planes.to_vec();
    }
    let n = planes.len() / size;
    let mut out = vec![0u8; planes.len()];
    for (i, item) in out.chunks_exact_mut(size).enumerate() {
        for (j, b) in item.iter_mut().enumerate() {
            *b = planes[j * n + i];
        }
    }
    out
}

/// Run-length code (PackBits): control byte `c < 128`: `c + 1` literal bytes follow; `c ≥ 128`: the
/// next byte repeated `c − 125` times (3 to 130).
fn pack(src: &[u8], out: &mut Vec<u8>) {
    let n = src.len();
    let flush = |out: &mut Vec<u8>, lit: &[u8]| {
        for chunk in lit.chunks(128) {
            out.push((chunk.len() - 1) as u8);
            out.extend_from_slice(chunk);
        }
    };
    let (mut i, mut lit) = (0, 0);
    while i < n {
        let b = src[i];
        let mut j = i + 1;
        while j < n && src[j] == b && j - i < 130 {
            j += 1;
        }
        if j - i >= 3 {
            flush(out, &src[lit..i]);
            out.push((128 + (j - i - 3)) as u8);
            out.push(b);
            i = j;
            lit = j;
        } else {
            i += 1;
        }
    }
    flush(out, &src[lit..n]);
}

/// The inverse of [`pack`], expecting `len` bytes; `None` when `src` is not such a code.
fn unpack(src: &[u8], len: usize) -> Option<Vec<u8>> {
    let mut out = Vec::with_capacity(len);
    let mut at = 0;
    while at < src.len() {
        let c = src[at] as usize;
        at += 1;
        if c < 128 {
            let lit = src.get(at..at + c + 1)?;
            out.extend_from_slice(lit);
            at += c + 1;
        } else {
            let b = *src.get(at)?;
            at += 1;
            out.resize(out.len() + c - 125, b);
        }
        if out.len() > len {
            return None;
        }
    }
    (out.len() == len).then_some(out)
}

/// Collects named sections of state (the body of a checkpoint).
///
/// A section is `name length u32 | name | encoding u8 | item size u32 | length u64 | stored length
/// u64 | stored bytes`, where the encoding is raw or packed (byte planes of the items, run-length
/// coded), whichever is smaller.
#[derive(Debug, Default)]
pub struct StateWriter {
    body: Vec<u8>,
    names: Vec<String>,
}

impl StateWriter {
    pub fn new() -> Self {
        Self::default()
    }

    /// Section `name` holding `data`, items of `size` bytes. Each name once.
    fn put_section(&mut self, name: &str, data: &[u8], size: usize) {
        debug_assert!(
            !self.names.iter().any(|n| n == name),
            "section {name} written twice"
        );
        self.names.push(name.to_string());
        let mut packed = Vec::new();
        if data.len() >= 64 {
            packed.reserve(data.len() / 2);
            pack(&shuffle(data, size), &mut packed);
        }
        let (encoding, stored) = if !packed.is_empty() && packed.len() < data.len() {
            (PACKED, &packed[..])
        } else {
            (RAW, data)
        };
        self.body
            .extend_from_slice(&(name.len() as u32).to_le_bytes());
        self.body.extend_from_slice(name.as_bytes());
        self.body.push(encoding);
        self.body.extend_from_slice(&(size as u32).to_le_bytes());
        self.body
            .extend_from_slice(&(data.len() as u64).to_le_bytes());
        self.body
            .extend_from_slice(&(stored.len() as u64).to_le_bytes());
        self.body.extend_from_slice(stored);
    }

    /// Section `name` holding `data`. Each name once.
    pub fn put_bytes(&mut self, name: &str, data: &[u8]) {
        self.put_section(name, data, 1);
    }

    /// Section `name` holding the bytes of a `Pod` slice.
    pub fn put<T: Pod>(&mut self, name: &str, v: &[T]) {
        self.put_section(name, bytemuck::cast_slice(v), std::mem::size_of::<T>());
    }

    /// Section `name` holding one `Pod` value.
    pub fn put_value<T: Pod>(&mut self, name: &str, v: &T) {
        self.put_section(name, bytemuck::bytes_of(v), std::mem::size_of::<T>());
    }

    /// Section `name` holding points `[x, y, z, w]`: 12 bytes a point when every w is +0 (as the
    /// simulation's positions and velocities have), else 16 (the item size says which).
    /// [`StateReader::get_points`] gives back the same bits either way.
    pub fn put_points(&mut self, name: &str, v: &[[f32; 4]]) {
        if v.iter().all(|p| p[3].to_bits() == 0) {
            let xyz: Vec<[f32; 3]> = v.iter().map(|p| [p[0], p[1], p[2]]).collect();
            self.put_section(name, bytemuck::cast_slice(&xyz), 12);
        } else {
            self.put_section(name, bytemuck::cast_slice(v), 16);
        }
    }

    /// Section `name` holding a UTF-8 string.
    pub fn put_str(&mut self, name: &str, s: &str) {
        self.put_bytes(name, s.as_bytes());
    }

    /// Appends the sections of `other` (a second writer's, such as a GPU step's contact state).
    pub fn append(&mut self, other: &StateWriter) {
        debug_assert!(
            !other.names.iter().any(|n| self.names.contains(n)),
            "a section written twice"
        );
        self.body.extend_from_slice(&other.body);
        self.names.extend(other.names.iter().cloned());
    }

    /// The sections so far, encoded.
    pub fn body(&self) -> &[u8] {
        &self.body
    }
}

/// One section of a [`StateReader`].
#[derive(Debug)]
struct Section {
    name: String,
    encoding: u8,
    size: usize,
    len: usize,
    stored: Range<usize>,
}

/// Reads the sections of a checkpoint body; every getter checks what it reads.
#[derive(Debug)]
pub struct StateReader {
    body: Vec<u8>,
    sections: Vec<Section>,
}

impl StateReader {
    /// Indexes the sections of `body` (as [`StateWriter::body`] made it). `origin` names the file in
    /// errors.
    pub fn new(body: Vec<u8>, origin: &str) -> Result<Self, CheckpointError> {
        let corrupt = |message: String| CheckpointError::Corrupt {
            origin: origin.to_string(),
            message,
        };
        let mut sections: Vec<Section> = Vec::new();
        let mut at = 0usize;
        let n = body.len();
        let take = |at: usize, len: usize| -> Result<Range<usize>, CheckpointError> {
            match at.checked_add(len) {
                Some(end) if end <= n => Ok(at..end),
                _ => Err(corrupt(format!(
                    "section table runs past the end of the body at byte {at}"
                ))),
            }
        };
        let word = |r: Range<usize>| -> u64 {
            let mut w = [0u8; 8];
            w[..r.len()].copy_from_slice(&body[r]);
            u64::from_le_bytes(w)
        };
        while at < n {
            let r = take(at, 4)?;
            let name_len = word(r.clone()) as usize;
            let r = take(r.end, name_len)?;
            let name = std::str::from_utf8(&body[r.clone()])
                .map_err(|_| corrupt(format!("section name at byte {} is not UTF-8", r.start)))?
                .to_string();
            let r = take(r.end, 1)?;
            let encoding = body[r.start];
            let r = take(r.end, 4)?;
            let size = word(r.clone()) as usize;
            let r = take(r.end, 8)?;
            let len = word(r.clone());
            let r = take(r.end, 8)?;
            let stored_len = word(r.clone());
            let stored = take(r.end, usize::try_from(stored_len).unwrap_or(usize::MAX))?;
            at = stored.end;
            // A packed byte expands to at most 65 (2 bytes give up to 130).
            let plausible = match encoding {
                RAW => len == stored_len,
                PACKED => len <= stored_len.saturating_mul(65),
                _ => false,
            };
            if !plausible || size == 0 {
                return Err(corrupt(format!(
                    "section {name}: encoding {encoding}, item size {size}, {len} bytes stored in {stored_len}"
                )));
            }
            if sections.iter().any(|s| s.name == name) {
                return Err(corrupt(format!("section {name} appears twice")));
            }
            sections.push(Section {
                name,
                encoding,
                size,
                len: len as usize,
                stored,
            });
        }
        Ok(StateReader { body, sections })
    }

    fn section(&self, name: &str) -> Result<&Section, CheckpointError> {
        self.sections
            .iter()
            .find(|s| s.name == name)
            .ok_or_else(|| CheckpointError::section(name, "missing"))
    }

    /// Whether section `name` exists.
    pub fn has(&self, name: &str) -> bool {
        self.sections.iter().any(|s| s.name == name)
    }

    /// The bytes of section `name` (decoded).
    pub fn bytes(&self, name: &str) -> Result<Cow<'_, [u8]>, CheckpointError> {
        let s = self.section(name)?;
        let stored = &self.body[s.stored.clone()];
        match s.encoding {
            PACKED => unpack(stored, s.len)
                .map(|planes| Cow::Owned(unshuffle(&planes, s.size)))
                .ok_or_else(|| CheckpointError::section(name, "damaged run-length code")),
            _ => Ok(Cow::Borrowed(stored)),
        }
    }

    /// Section `name` as a `Pod` vector (copied, so alignment never matters).
    pub fn get<T: Pod>(&self, name: &str) -> Result<Vec<T>, CheckpointError> {
        let b = self.bytes(name)?;
        let size = std::mem::size_of::<T>();
        if size == 0 || b.len() % size != 0 {
            return Err(CheckpointError::section(
                name,
                format!(
                    "{} bytes is not a whole number of {size}-byte items",
                    b.len()
                ),
            ));
        }
        let mut v = vec![T::zeroed(); b.len() / size];
        bytemuck::cast_slice_mut::<T, u8>(&mut v).copy_from_slice(&b);
        Ok(v)
    }

    /// [`Self::get`] of exactly `len` items.
    pub fn get_len<T: Pod>(&self, name: &str, len: usize) -> Result<Vec<T>, CheckpointError> {
        let v = self.get::<T>(name)?;
        if v.len() != len {
            return Err(CheckpointError::section(
                name,
                format!("{} items, {len} expected", v.len()),
            ));
        }
        Ok(v)
    }

    /// Section `name` as one `Pod` value.
    pub fn get_value<T: Pod>(&self, name: &str) -> Result<T, CheckpointError> {
        Ok(self.get_len::<T>(name, 1)?[0])
    }

    /// Section `name` as a string.
    pub fn get_str(&self, name: &str) -> Result<String, CheckpointError> {
        String::from_utf8(self.bytes(name)?.into_owned())
            .map_err(|_| CheckpointError::section(name, "not UTF-8"))
    }

    /// Points written by [`StateWriter::put_points`].
    pub fn get_points(&self, name: &str) -> Result<Vec<[f32; 4]>, CheckpointError> {
        let size = self.section(name)?.size;
        let b = self.bytes(name)?;
        if !(size == 12 || size == 16) || b.len() % size != 0 {
            return Err(CheckpointError::section(
                name,
                format!("{} bytes of {size}-byte points", b.len()),
            ));
        }
        let mut v = vec![[0.0f32; 4]; b.len() / size];
        if size == 16 {
            bytemuck::cast_slice_mut::<[f32; 4], u8>(&mut v).copy_from_slice(&b);
        } else {
            for (p, c) in v.iter_mut().zip(b.chunks_exact(12)) {
                bytemuck::cast_slice_mut::<f32, u8>(&mut p[..3]).copy_from_slice(c);
            }
        }
        Ok(v)
    }

    /// [`Self::get_points`] of exactly `len` points.
    pub fn get_points_len(&self, name: &str, len: usize) -> Result<Vec<[f32; 4]>, CheckpointError> {
        let v = self.get_points(name)?;
        if v.len() != len {
            return Err(CheckpointError::section(
                name,
                format!("{} points, {len} expected", v.len()),
            ));
        }
        Ok(v)
    }

    /// Checks that the contact model tag (section `contact.model`) is `model`.
    pub fn expect_model(&self, model: &str) -> Result<(), CheckpointError> {
        let got = self.get_str("contact.model")?;
        if got != model {
            return Err(CheckpointError::Mismatch {
                what: "the contact model",
                checkpoint: got,
                sim: model.to_string(),
            });
        }
        Ok(())
    }
}

/// What a checkpoint records besides the simulation state (section `meta.json`).
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct CheckpointMeta {
    /// The crate version that wrote it (also in the fixed header).
    pub crate_version: String,
    /// The resolved scene (overrides applied), as TOML (which keeps every f32 and f64 exactly,
    /// infinities included).
    pub scene_toml: String,
    /// The directory the scene's relative paths (BCC sources) resolve against.
    pub scene_dir: PathBuf,
    /// Frames, steps and time of the saved state (informational; the state holds them too).
    pub frames: u32,
    pub steps: u64,
    pub time: f64,
    /// The contact model (`none`, `exact`, `acl`).
    pub contact_model: String,
    /// The writer's options (the CLI's: what the run writes where); opaque here.
    pub options: serde_json::Value,
}

/// Encodes the checkpoint of `sim`, built from `scene` (relative paths in it resolved against
/// `scene_dir`), with the caller's `options`.
pub fn encode(
    sim: &Sim,
    scene: &Scene,
    scene_dir: &Path,
    options: serde_json::Value,
) -> Result<Vec<u8>, CheckpointError> {
    encode_with(sim, scene, scene_dir, options, &StateWriter::new())
}

/// [`encode`] with the sections of `extra` after the simulation's: the state a GPU run keeps on
/// the device ([`crate::gpu_step::GpuSim::export_contact_state`]).
pub fn encode_with(
    sim: &Sim,
    scene: &Scene,
    scene_dir: &Path,
    options: serde_json::Value,
    extra: &StateWriter,
) -> Result<Vec<u8>, CheckpointError> {
    if cfg!(target_endian = "big") {
        return Err(CheckpointError::Unsupported(
            "checkpoints are little-endian; this machine is big-endian".into(),
        ));
    }
    let scene_toml = toml::to_string(scene)
        .map_err(|e| CheckpointError::Scene(format!("cannot be written as TOML: {e}")))?;
    match toml::from_str::<Scene>(&scene_toml) {
        Ok(back) if back == *scene => {}
        Ok(_) => {
            return Err(CheckpointError::Scene(
                "does not read back equal from TOML".into(),
            ))
        }
        Err(e) => {
            return Err(CheckpointError::Scene(format!(
                "does not read back from TOML: {e}"
            )))
        }
    }
    let meta = CheckpointMeta {
        crate_version: CRATE_VERSION.to_string(),
        scene_toml,
        scene_dir: scene_dir.to_path_buf(),
        frames: sim.frames,
        steps: sim.steps,
        time: sim.time,
        contact_model: format!("{:?}", scene.contact.model).to_lowercase(),
        options,
    };
    let mut w = StateWriter::new();
    let meta_json = serde_json::to_vec(&meta)
        .map_err(|e| CheckpointError::Scene(format!("cannot record the metadata: {e}")))?;
    w.put_bytes("meta.json", &meta_json);
    sim.export_state(&mut w)?;
    w.append(extra);
    let body = w.body();
    let mut out = Vec::with_capacity(body.len() + 64);
    out.extend_from_slice(MAGIC);
    out.extend_from_slice(&FORMAT_VERSION.to_le_bytes());
    out.extend_from_slice(&(CRATE_VERSION.len() as u32).to_le_bytes());
    out.extend_from_slice(CRATE_VERSION.as_bytes());
    out.extend_from_slice(&(body.len() as u64).to_le_bytes());
    let mut h = Checksum::default();
    h.update(&out);
    out.extend_from_slice(&h.finish().to_le_bytes());
    out.extend_from_slice(body);
    let mut c = Checksum::default();
    c.update(body);
    out.extend_from_slice(&c.finish().to_le_bytes());
    Ok(out)
}

/// Writes the checkpoint of `sim` to `path` atomically (see [`encode`] and the module doc): until
/// the new file is complete and flushed, `path` keeps the previous checkpoint.
pub fn write(
    path: &Path,
    sim: &Sim,
    scene: &Scene,
    scene_dir: &Path,
    options: serde_json::Value,
) -> Result<(), CheckpointError> {
    write_with(path, sim, scene, scene_dir, options, &StateWriter::new())
}

/// [`write`] with the sections of `extra` ([`encode_with`]).
pub fn write_with(
    path: &Path,
    sim: &Sim,
    scene: &Scene,
    scene_dir: &Path,
    options: serde_json::Value,
    extra: &StateWriter,
) -> Result<(), CheckpointError> {
    let bytes = encode_with(sim, scene, scene_dir, options, extra)?;
    crate::output::write_bytes_atomic(path, &bytes)?;
    Ok(())
}

/// The most characters of a checkpoint's version string an error shows.
const SHOWN_VERSION_CHARS: usize = 32;

/// A checkpoint's version string as an error shows it: escaped (`\0`, `\u{1b}`), for a damaged
/// header's length field takes up to 256 bytes of whatever follows (NULs and terminal escapes
/// printed raw), and cut after [`SHOWN_VERSION_CHARS`] characters.
fn shown_version(version: &[u8]) -> String {
    let text = String::from_utf8_lossy(version);
    let mut shown: String = text
        .chars()
        .take(SHOWN_VERSION_CHARS)
        .flat_map(char::escape_debug)
        .collect();
    if text.chars().count() > SHOWN_VERSION_CHARS {
        shown.push('…');
    }
    shown
}

/// A checkpoint read back: its metadata, scene and state.
#[derive(Debug)]
pub struct Checkpoint {
    pub meta: CheckpointMeta,
    /// The resolved scene the run was built from.
    pub scene: Scene,
    state: StateReader,
}

impl Checkpoint {
    /// Reads and checks the checkpoint at `path`.
    pub fn read(path: &Path) -> Result<Checkpoint, CheckpointError> {
        let bytes = std::fs::read(path).map_err(|source| CheckpointError::Io {
            path: path.to_path_buf(),
            source,
        })?;
        Checkpoint::decode(bytes, &path.display().to_string())
    }

    /// Checks and indexes the bytes of a checkpoint; `origin` names it in errors.
    pub fn decode(bytes: Vec<u8>, origin: &str) -> Result<Checkpoint, CheckpointError> {
        let o = || origin.to_string();
        let actual = bytes.len() as u64;
        if bytes.len() < MAGIC.len() && MAGIC.starts_with(&bytes) {
            // Empty, or cut inside the magic.
            return Err(CheckpointError::Truncated {
                origin: o(),
                expected: 16,
                actual,
            });
        }
        if !bytes.starts_with(MAGIC) {
            return Err(CheckpointError::NotACheckpoint { origin: o() });
        }
        let truncated = |expected: u64| CheckpointError::Truncated {
            origin: o(),
            expected,
            actual,
        };
        let u32_at = |at: usize| -> Option<u32> {
            Some(u32::from_le_bytes(bytes.get(at..at + 4)?.try_into().ok()?))
        };
        let u64_at = |at: usize| -> Option<u64> {
            Some(u64::from_le_bytes(bytes.get(at..at + 8)?.try_into().ok()?))
        };
        let format = u32_at(8).ok_or_else(|| truncated(16))?;
        let vlen = u32_at(12).ok_or_else(|| truncated(16))? as usize;
        if vlen > 256 {
            return Err(CheckpointError::Corrupt {
                origin: o(),
                message: format!("version string of {vlen} bytes"),
            });
        }
        let vend = 16 + vlen;
        let version = bytes
            .get(16..vend)
            .ok_or_else(|| truncated(vend as u64 + 16))?;
        let file_crate = shown_version(version);
        // The header's own checksum, where every format from 4 on has it: right after the body
        // length. It tells a header damaged on disk (which would read as another version, or a
        // body of 10^19 bytes) from a file of another version, and is checked before the body
        // length is believed.
        let header_end = vend + 8;
        let header_sum_ok = u64_at(header_end).is_some_and(|stored| {
            let mut h = Checksum::default();
            h.update(&bytes[..header_end]);
            h.finish() == stored
        });
        if format != FORMAT_VERSION || version != CRATE_VERSION.as_bytes() {
            // Formats 1 to 3 had no header checksum; a later one with a checksum that does not
            // match is this format's header damaged, as likely as another version.
            if !header_sum_ok && !(1..=3).contains(&format) {
                return Err(CheckpointError::Corrupt {
                    origin: o(),
                    message: format!(
                        "its header is damaged (its checksum does not match): it reads as written by yarnsim {file_crate} (checkpoint format {format})"
                    ),
                });
            }
            return Err(CheckpointError::Version {
                origin: o(),
                file_crate,
                file_format: format,
            });
        }
        let body_len = u64_at(vend).ok_or_else(|| truncated(header_end as u64 + 16))?;
        if u64_at(header_end).is_none() {
            return Err(truncated(header_end as u64 + 16));
        }
        if !header_sum_ok {
            return Err(CheckpointError::Corrupt {
                origin: o(),
                message: "its header is damaged (its checksum does not match; the body length it gives is not to be believed)".into(),
            });
        }
        let body_start = header_end + 8;
        let expected = (body_start as u64)
            .checked_add(body_len)
            .and_then(|x| x.checked_add(8))
            .ok_or_else(|| CheckpointError::Corrupt {
                origin: o(),
                message: format!("body length {body_len}"),
            })?;
        if actual < expected {
            return Err(truncated(expected));
        }
        if actual > expected {
            return Err(CheckpointError::Corrupt {
                origin: o(),
                message: format!(
                    "{} bytes after the end of the checkpoint",
                    actual - expected
                ),
            });
        }
        let body_end = body_start + body_len as usize;
        let stored = u64_at(body_end).ok_or_else(|| truncated(expected))?;
        let mut c = Checksum::default();
        c.update(&bytes[body_start..body_end]);
        if c.finish() != stored {
            return Err(CheckpointError::Corrupt {
                origin: o(),
                message: "checksum mismatch (the file was changed or damaged)".into(),
            });
        }
        let mut bytes = bytes;
        bytes.truncate(body_end);
        bytes.drain(..body_start);
        let state = StateReader::new(bytes, origin)?;
        let meta: CheckpointMeta = serde_json::from_slice(&state.bytes("meta.json")?)
            .map_err(|e| CheckpointError::section("meta.json", e.to_string()))?;
        let scene = Scene::from_toml_str(&meta.scene_toml, &format!("{origin} (scene)"))
            .map_err(|e| CheckpointError::Scene(e.to_string()))?;
        Ok(Checkpoint { meta, scene, state })
    }

    /// The saved state's sections.
    pub fn state(&self) -> &StateReader {
        &self.state
    }

    /// Frames completed at the checkpoint.
    pub fn frames(&self) -> u32 {
        self.meta.frames
    }

    /// Restores the saved state into `sim`, which must be built from [`Self::scene`] (as
    /// [`Self::build_sim`] does). On error `sim` must be discarded.
    pub fn restore(&self, sim: &mut Sim) -> Result<(), CheckpointError> {
        sim.import_state(&self.state)
    }

    /// The simulation of the checkpoint: the cloth built from the saved scene (relative paths
    /// against the saved scene directory), its pins and contact model, then the saved state.
    pub fn build_sim(&self) -> Result<Sim, CheckpointError> {
        let build = crate::scene::build_curves(&self.scene, &self.meta.scene_dir)
            .map_err(|e| CheckpointError::Build(Box::new(e)))?;
        let pins = crate::scene::pinned_points(&self.scene, &build)
            .map_err(|e| CheckpointError::Build(Box::new(e)))?;
        let mut sim = Sim::from_build(&self.scene, &build, &pins)
            .map_err(|e| CheckpointError::Build(Box::new(e)))?;
        self.restore(&mut sim)?;
        Ok(sim)
    }
}

/// Checks `value < bound` for an index read from section `name`.
pub fn check_index(
    name: &str,
    what: &str,
    value: usize,
    bound: usize,
) -> Result<(), CheckpointError> {
    if value < bound {
        Ok(())
    } else {
        Err(CheckpointError::bad(
            name,
            format!("{what} {value} out of range (< {bound})"),
        ))
    }
}

/// Checks that section data `len` equals `expected`.
pub fn check_len(name: &str, len: usize, expected: usize) -> Result<(), CheckpointError> {
    if len == expected {
        Ok(())
    } else {
        Err(CheckpointError::bad(
            name,
            format!("{len} items, {expected} expected"),
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sections_round_trip() {
        let mut w = StateWriter::new();
        w.put("a", &[1u32, 2, 3]);
        w.put_value("b", &-0.0f64);
        w.put_points(
            "p",
            &[[1.0, 2.0, 3.0, 0.0], [-0.0, f32::MIN_POSITIVE, 5.0, 0.0]],
        );
        w.put_points("q", &[[1.0, 2.0, 3.0, -0.0]]);
        let r = StateReader::new(w.body().to_vec(), "t").unwrap();
        assert_eq!(r.get::<u32>("a").unwrap(), vec![1, 2, 3]);
        assert_eq!(
            r.get_value::<f64>("b").unwrap().to_bits(),
            (-0.0f64).to_bits()
        );
        let p = r.get_points("p").unwrap();
        assert_eq!(p[1][0].to_bits(), (-0.0f32).to_bits());
        assert_eq!(p[1][1], f32::MIN_POSITIVE);
        assert_eq!(
            r.get_points("q").unwrap()[0][3].to_bits(),
            (-0.0f32).to_bits()
        );
        assert!(r.get::<u64>("a").is_err());
        assert!(r.get::<u32>("missing").is_err());
        // Every truncation of the body is an error, never a panic.
        for n in 0..w.body().len() {
            let _ = StateReader::new(w.body()[..n].to_vec(), "t");
        }
    }

    #[test]
    fn packing_round_trips() {
        let mut rng = 0x9E37_79B9_7F4A_7C15u64;
        let mut next = || {
            rng ^= rng << 13;
            rng ^= rng >> 7;
            rng ^= rng << 17;
            rng
        };
        for len in [0usize, 1, 2, 3, 4, 64, 127, 128, 129, 130, 131, 1000, 5000] {
            for kind in 0..4 {
                let data: Vec<u8> = (0..len)
                    .map(|i| match kind {
                        0 => 0,
                        1 => next() as u8,
                        2 => (i / 7) as u8,
                        _ => {
                            if next() % 5 == 0 {
                                next() as u8
                            } else {
                                3
                            }
                        }
                    })
                    .collect();
                for size in [1, 4, 12, 48] {
                    let mut packed = Vec::new();
                    pack(&shuffle(&data, size), &mut packed);
                    let back = unshuffle(&unpack(&packed, len).unwrap(), size);
                    assert_eq!(back, data, "len {len} kind {kind} size {size}");
                    assert!(unpack(&packed, len + 1).is_none());
                }
            }
        }
        // Damaged codes are refused.
        assert!(unpack(&[5, 1, 2], 6).is_none());
        assert!(unpack(&[200], 75).is_none());
    }

    #[test]
    fn checksum_sees_a_flipped_bit() {
        let data: Vec<u8> = (0..1000u32).map(|x| (x * 7) as u8).collect();
        let mut a = Checksum::default();
        a.update(&data);
        let mut d = data.clone();
        d[517] ^= 4;
        let mut b = Checksum::default();
        b.update(&d);
        assert_ne!(a.finish(), b.finish());
    }
}
