//! Scene files (`scenes/*.toml`): every parameter of a run, with the seed's Table 1 as defaults.
//!
//! This module owns the configuration types. Loading, `--set` overrides and error reporting (file, line,
//! key) live here too; building cloth from generators or BCC files is `build_curves`.
//! Units: centimetres, grams, seconds. `scenes/README.md` documents every key.
//!
//! - [`Scene::load`] parses the text twice: once into a span-carrying TOML tree (`toml::de::DeTable`)
//!   and once into [`Scene`] with serde. A serde error's byte span is mapped back to the innermost key
//!   of the tree that contains it, which gives the dotted key (`cloth.1.source.generator.wales`) and
//!   its line; range and consistency checks ([`Scene::validate`]) name a dotted key whose line is
//!   looked up in the same tree.
//! - [`Scene::apply_set`] writes the scene out as a TOML value, sets one key in it, and reads it back
//!   through the same checks.
//! - [`build_curves`] turns the cloth pieces into [`Curve`]s with their damping blocks and loop count
//!   ([`ClothBuild`]); [`pinned_points`] resolves the pins against that build.

use crate::state::Curve;
use serde::{Deserialize, Serialize};
use std::path::Path;

/// Fixed-length arrays of a scene file (points, vectors, index pairs), read so that an array with
/// more entries than the field has is an error as one with fewer is: serde reads a `[T; N]` by
/// taking N entries, and the TOML reader lets the rest pass unread (`gravity = [0, -981, 0, 1]`
/// ran as if the 1 were not there).
pub(crate) mod exact_len {
    use serde::de::{Deserialize, Deserializer, Error};

    /// An array of exactly `N` entries.
    pub fn array<'de, D, T, const N: usize>(d: D) -> Result<[T; N], D::Error>
    where
        D: Deserializer<'de>,
        T: Deserialize<'de>,
    {
        let v: Vec<T> = Vec::deserialize(d)?;
        let n = v.len();
        v.try_into()
            .map_err(|_| D::Error::invalid_length(n, &format!("an array of {N} entries").as_str()))
    }

    /// An optional array of exactly `N` entries (the field's absence is `None`: use with
    /// `#[serde(default)]`).
    pub fn option_array<'de, D, T, const N: usize>(d: D) -> Result<Option<[T; N]>, D::Error>
    where
        D: Deserializer<'de>,
        T: Deserialize<'de>,
    {
        array(d).map(Some)
    }
}

/// A whole scene.
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct Scene {
    pub simulation: Simulation,
    pub yarn: YarnMaterial,
    pub contact: ContactParams,
    pub cloth: Vec<ClothPiece>,
    pub pin: Vec<Pin>,
    pub obstacle: Vec<Obstacle>,
    /// Free rigid balls ([`crate::balls`]).
    pub ball: Vec<Ball>,
    /// Walking figures made of capsules ([`crate::figure`]); obstacles after `obstacle`.
    pub figure: Vec<crate::figure::Figure>,
    /// Seams joining cloth pieces with ties ([`crate::ties`]).
    pub seam: Vec<Seam>,
    pub camera: Camera,
    pub damping: Damping,
    pub relax: Relax,
}

/// A seam: every control point of cloth piece `pieces[0]` within `distance` of a control point of
/// piece `pieces[1]` is tied to the nearest one ([`crate::ties`]), as a sleeve is sewn to a body.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Seam {
    #[serde(deserialize_with = "exact_len::array")]
    pub pieces: [usize; 2],
    /// Largest starting distance of a tie (cm).
    pub distance: f32,
}

/// A free rigid ball ([`crate::balls`]): a solid sphere that falls, spins, bounces off the
/// obstacles and the other balls, and pushes the yarn as the yarn pushes it.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct Ball {
    /// Centre at t = 0 (cm).
    #[serde(deserialize_with = "exact_len::array")]
    pub center: [f32; 3],
    /// Radius (cm).
    pub radius: f32,
    /// Density (g/cm³), giving the mass `4/3 π R³ ρ` unless `mass` is set.
    pub density: f32,
    /// Mass (g); overrides `density`.
    pub mass: Option<f32>,
    /// Velocity at t = 0 (cm/s).
    #[serde(deserialize_with = "exact_len::array")]
    pub velocity: [f32; 3],
    /// Coulomb friction against yarn, balls and obstacles (with a ball or an obstacle, the
    /// geometric mean of the two coefficients).
    pub friction: f32,
    /// Coefficient of restitution against balls and obstacles (the larger of the two counts).
    pub restitution: f32,
}

impl Default for Ball {
    fn default() -> Self {
        Ball {
            center: [0.0; 3],
            radius: 1.0,
            density: 0.05,
            mass: None,
            velocity: [0.0; 3],
            friction: 0.3,
            restitution: 0.5,
        }
    }
}

impl Ball {
    /// The mass in grams: `mass`, or the sphere's volume times `density`.
    pub fn mass(&self) -> f32 {
        self.mass.unwrap_or_else(|| {
            let r = self.radius as f64;
            (4.0 / 3.0 * std::f64::consts::PI * r * r * r * self.density as f64) as f32
        })
    }
}

/// The relaxation before t = 0 ([`crate::relax`]): damped steps with gravity off, obstacles held at
/// their t = 0 places and the yarn radius grown to its target, until the cloth is at rest. Frame 0 is
/// the relaxed state.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct Relax {
    /// Longest simulated time (s) the relaxation may take; 0 turns it off.
    pub time: f64,
    /// It ends once the radius has reached its target and the fastest control point is slower
    /// than this (cm/s).
    pub speed: f32,
    /// Air drag c (1/s) during the relaxation, instead of `damping.air`.
    pub drag: f32,
    /// The radius the relaxation starts from, as a fraction of `yarn.radius` (0 < f ≤ 1), or
    /// `"auto"`: the largest at which no two strands overlap, at least [`crate::relax::MIN_START`].
    pub start_radius: RadiusSpec,
    /// How fast the radius grows from its start to `yarn.radius`: this fraction of `yarn.radius`
    /// per second (1/s), but always within the first half of `time`.
    pub grow_rate: f64,
}

impl Default for Relax {
    fn default() -> Self {
        Relax {
            time: 0.5,
            speed: 0.1,
            drag: 50.0,
            start_radius: RadiusSpec::Auto,
            grow_rate: 5.0,
        }
    }
}

/// Damping beyond the seed's non-rigid damping (which is in `yarn`).
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct Damping {
    /// Air drag c (1/s): every control point feels `−c m v`, so the whole cloth's motion decays as
    /// `e^{−c t}`, rigid motion included (the seed's non-rigid damping leaves rigid motion alone, so a
    /// hanging swatch swings about its pins for seconds). 0 (the default) keeps the seed's behaviour.
    pub air: f32,
}

#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct Simulation {
    /// Time step h in seconds (seed: 1/24000 – 1/16200).
    pub dt: f64,
    /// Frames to simulate.
    pub frames: u32,
    /// Frames per second of output.
    pub fps: f64,
    /// Gravity in cm/s².
    #[serde(deserialize_with = "exact_len::array")]
    pub gravity: [f32; 3],
}

impl Default for Simulation {
    fn default() -> Self {
        Simulation {
            dt: 1.0 / 16200.0,
            frames: 30,
            fps: 30.0,
            gravity: [0.0, -981.0, 0.0],
        }
    }
}

/// The yarn material. In a scene file `radius` is a number (cm) or `"auto"` ([`RadiusSpec`]).
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(from = "YarnToml", into = "YarnToml")]
pub struct YarnMaterial {
    /// Yarn radius r in cm. With `radius_auto` not yet resolved it holds the default and means
    /// nothing.
    pub radius: f32,
    /// `yarn.radius = "auto"`: the radius is fitted to the BCC pieces' own spacing
    /// ([`resolve_radius`], [`crate::import::fit_radius`]), which sets `radius` and clears this.
    /// A simulation refuses a scene whose radius is still `"auto"`.
    pub radius_auto: bool,
    /// Mass per unit length in g/cm.
    pub linear_density: f32,
    /// Bending stiffness EI in g·cm³/s².
    pub bending_stiffness: f32,
    /// Twisting stiffness GJ in g·cm³/s².
    pub twisting_stiffness: f32,
    /// Plasticity radius p_plastic (rest curvature may trail the current one by this much).
    pub plastic_radius: f32,
    /// Largest rest curvature p_max the plasticity may reach.
    pub plastic_max: f32,
    /// Non-rigid damping μ_const (constant part).
    pub damping_const: f32,
    /// Non-rigid damping μ_prop (proportional part), 1/s.
    pub damping_prop: f32,
    /// Knit loops per side of a non-rigid damping block (seed: 4×4 loops).
    pub damping_block_loops: u32,
}

impl Default for YarnMaterial {
    fn default() -> Self {
        YarnMaterial {
            radius: 0.125,
            radius_auto: false,
            linear_density: 0.003,
            bending_stiffness: 10.0,
            twisting_stiffness: 10.0,
            plastic_radius: 0.01,
            plastic_max: 2.5,
            damping_const: 500.0,
            damping_prop: 1500.0,
            damping_block_loops: 4,
        }
    }
}

/// A radius as a scene file writes it: a number or the word `"auto"` (`yarn.radius`: centimetres;
/// `relax.start_radius`: a fraction of `yarn.radius`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum RadiusSpec {
    Value(f32),
    Auto,
}

impl Serialize for RadiusSpec {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            RadiusSpec::Value(r) => s.serialize_f32(*r),
            RadiusSpec::Auto => s.serialize_str("auto"),
        }
    }
}

impl<'de> Deserialize<'de> for RadiusSpec {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl serde::de::Visitor<'_> for V {
            type Value = RadiusSpec;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a number or \"auto\"")
            }
            fn visit_f64<E: serde::de::Error>(self, v: f64) -> Result<RadiusSpec, E> {
                Ok(RadiusSpec::Value(v as f32))
            }
            fn visit_i64<E: serde::de::Error>(self, v: i64) -> Result<RadiusSpec, E> {
                Ok(RadiusSpec::Value(v as f32))
            }
            fn visit_u64<E: serde::de::Error>(self, v: u64) -> Result<RadiusSpec, E> {
                Ok(RadiusSpec::Value(v as f32))
            }
            fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<RadiusSpec, E> {
                if v == "auto" {
                    Ok(RadiusSpec::Auto)
                } else {
                    Err(E::invalid_value(serde::de::Unexpected::Str(v), &self))
                }
            }
        }
        d.deserialize_any(V)
    }
}

/// [`YarnMaterial`] as a scene file writes it (`radius` may be `"auto"`).
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
struct YarnToml {
    radius: RadiusSpec,
    linear_density: f32,
    bending_stiffness: f32,
    twisting_stiffness: f32,
    plastic_radius: f32,
    plastic_max: f32,
    damping_const: f32,
    damping_prop: f32,
    damping_block_loops: u32,
}

impl Default for YarnToml {
    fn default() -> Self {
        YarnMaterial::default().into()
    }
}

impl From<YarnMaterial> for YarnToml {
    fn from(y: YarnMaterial) -> Self {
        YarnToml {
            radius: if y.radius_auto {
                RadiusSpec::Auto
            } else {
                RadiusSpec::Value(y.radius)
            },
            linear_density: y.linear_density,
            bending_stiffness: y.bending_stiffness,
            twisting_stiffness: y.twisting_stiffness,
            plastic_radius: y.plastic_radius,
            plastic_max: y.plastic_max,
            damping_const: y.damping_const,
            damping_prop: y.damping_prop,
            damping_block_loops: y.damping_block_loops,
        }
    }
}

impl From<YarnToml> for YarnMaterial {
    fn from(y: YarnToml) -> Self {
        let (radius, radius_auto) = match y.radius {
            RadiusSpec::Value(r) => (r, false),
            RadiusSpec::Auto => (YarnMaterial::default().radius, true),
        };
        YarnMaterial {
            radius,
            radius_auto,
            linear_density: y.linear_density,
            bending_stiffness: y.bending_stiffness,
            twisting_stiffness: y.twisting_stiffness,
            plastic_radius: y.plastic_radius,
            plastic_max: y.plastic_max,
            damping_const: y.damping_const,
            damping_prop: y.damping_prop,
            damping_block_loops: y.damping_block_loops,
        }
    }
}

/// The range of `yarn.radius` (cm), fitted or given.
pub const RADIUS_RANGE: (f64, f64) = (1e-4, 10.0);

/// Which yarn–yarn contact force a run uses.
#[derive(Clone, Copy, Debug, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum ContactModel {
    /// No yarn–yarn contact.
    None,
    /// The full penalty force at every step (the reference).
    Exact,
    /// Adaptive contact linearization.
    Acl,
}

#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct ContactParams {
    pub model: ContactModel,
    /// k_contact.
    pub stiffness: f32,
    /// τ, the ACL approximation tolerance (0 = exact every step).
    pub tolerance: f32,
    /// b, quadrature points per spline segment.
    pub quadrature: u32,
    /// α, contact-set padding in quadrature points.
    pub padding: u32,
    /// γ, grid cell width in cm.
    pub grid_cell: f32,
    /// λ_max, number of schedule bins − 1.
    pub max_bin: u32,
    /// ω, bound on change of movement in cm/step².
    pub omega: f32,
    /// Arc length (cm) along one yarn within which quadrature pairs do not interact.
    pub exclusion_arc: f32,
    /// A contact set whose closest pair is farther than this many r is deleted.
    pub delete_distance: f32,
    /// Stiction spring stiffness (0 disables stiction).
    pub stiction_stiffness: f32,
    /// Stiction spring energy above which it breaks and is re-made.
    pub stiction_break_energy: f32,
    /// ACL: besides the seed's invalidation metric (eq. 6), also rebuild a contact set when its
    /// quadrature pairs start or stop touching with an estimated force error above τ of the set's
    /// force, or when its linear model's force has changed by more than 2√τ of the force at the
    /// rebuild (src/acl.rs). Off: eq. 6 alone.
    pub extra_invalidation: bool,
}

impl Default for ContactParams {
    fn default() -> Self {
        ContactParams {
            model: ContactModel::Acl,
            stiffness: 3500.0,
            tolerance: 0.04,
            quadrature: 11,
            padding: 3,
            grid_cell: 0.6,
            max_bin: 8,
            omega: 0.0006,
            exclusion_arc: 1.0,
            delete_distance: 2.1,
            stiction_stiffness: 0.0,
            stiction_break_energy: 1e-6,
            extra_invalidation: true,
        }
    }
}

/// Knit patterns the generator makes.
#[derive(Clone, Copy, Debug, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum Pattern {
    Stockinette,
    Garter,
    Rib,
    /// A tube knit in the round (closed courses), for sleeves and bodies.
    Tube,
    /// A tube whose bottom is flattened and tied shut: a sack ([`crate::knit`]).
    Sack,
}

impl Pattern {
    /// Knit in the round: one closed yarn per course (`tube` and `sack`).
    pub fn is_round(self) -> bool {
        matches!(self, Pattern::Tube | Pattern::Sack)
    }
}

/// Where a cloth piece's yarns come from.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, rename_all = "lowercase")]
pub enum ClothSource {
    /// A generated swatch or tube of `wales × courses` loops.
    Generator {
        pattern: Pattern,
        wales: u32,
        courses: u32,
        /// A tube's cross-section when it is not round ([`crate::knit::Section`]).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        section: Option<crate::knit::Section>,
    },
    /// A BCC file, relative to the scene file, in `units` (centimetres unless given).
    Bcc {
        path: String,
        #[serde(default)]
        units: Units,
        /// Tolerance of a `BS` file's conversion, relative to each curve's control spacing
        /// (`crate::bcc::ReadOptions`).
        #[serde(default = "bspline_tolerance")]
        bspline_tolerance: f64,
    },
}

/// The length unit of a BCC file's coordinates; they are converted to centimetres at load (before
/// the piece's `scale`).
#[derive(Clone, Copy, Debug, Default, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum Units {
    #[default]
    Cm,
    Mm,
    M,
    /// Inches (2.54 cm).
    In,
}

impl Units {
    /// Centimetres per unit.
    pub fn to_cm(self) -> f64 {
        match self {
            Units::Cm => 1.0,
            Units::Mm => 0.1,
            Units::M => 100.0,
            Units::In => 2.54,
        }
    }
}

#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct ClothPiece {
    pub source: ClothSource,
    /// Uniform scale applied first.
    #[serde(default = "one")]
    pub scale: f32,
    /// Rotation in degrees about x, then y, then z, applied after scaling.
    #[serde(default, deserialize_with = "exact_len::array")]
    pub rotate_deg: [f32; 3],
    /// Translation applied last, in cm.
    #[serde(default, deserialize_with = "exact_len::array")]
    pub translate: [f32; 3],
}

fn one() -> f32 {
    1.0
}

fn bspline_tolerance() -> f64 {
    crate::bcc::BSPLINE_TOLERANCE
}

/// A glue/pin constraint: the selected control points are held at their initial positions.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, rename_all = "lowercase")]
pub enum Pin {
    /// Control points `first..=last` (global indices) of the scene.
    Range { first: u32, last: u32 },
    /// Every control point inside the box at the start of the run.
    Region {
        #[serde(deserialize_with = "exact_len::array")]
        min: [f32; 3],
        #[serde(deserialize_with = "exact_len::array")]
        max: [f32; 3],
    },
}

/// A keyframe of an animated obstacle: its offset from the rest placement at time `t`.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Keyframe {
    pub t: f64,
    #[serde(deserialize_with = "exact_len::array")]
    pub offset: [f32; 3],
    /// A capsule's second end `b`: its own offset, so the capsule can turn (default `offset`).
    #[serde(
        default,
        deserialize_with = "exact_len::option_array",
        skip_serializing_if = "Option::is_none"
    )]
    pub offset_b: Option<[f32; 3]>,
}

#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, tag = "type", rename_all = "lowercase")]
pub enum Obstacle {
    Plane {
        #[serde(deserialize_with = "exact_len::array")]
        point: [f32; 3],
        #[serde(deserialize_with = "exact_len::array")]
        normal: [f32; 3],
        #[serde(default)]
        friction: f32,
    },
    Sphere {
        #[serde(deserialize_with = "exact_len::array")]
        center: [f32; 3],
        radius: f32,
        #[serde(default)]
        friction: f32,
        #[serde(default)]
        keyframes: Vec<Keyframe>,
    },
    Capsule {
        #[serde(deserialize_with = "exact_len::array")]
        a: [f32; 3],
        #[serde(deserialize_with = "exact_len::array")]
        b: [f32; 3],
        radius: f32,
        #[serde(default)]
        friction: f32,
        #[serde(default)]
        keyframes: Vec<Keyframe>,
    },
}

/// The camera used by frame capture; `None` fields are chosen automatically to frame the cloth.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Default)]
#[serde(deny_unknown_fields, default)]
pub struct Camera {
    #[serde(default, deserialize_with = "exact_len::option_array")]
    pub position: Option<[f32; 3]>,
    #[serde(default, deserialize_with = "exact_len::option_array")]
    pub target: Option<[f32; 3]>,
    /// Vertical field of view in degrees.
    pub fov_deg: Option<f32>,
}

/// Most bytes a scene file may hold: far beyond any scene (the sack, the largest here, is 8 KB; a
/// thousand balls take some 200 KB), so that a path naming something else is refused before it
/// fills memory.
pub const MAX_SCENE_BYTES: u64 = 64 << 20;

/// Why a scene could not be loaded, overridden or built. Errors about the file name it, the line and
/// the dotted key (`cloth.0.scale`, array entries counted from 0); `--set` errors name the assignment.
#[derive(Debug, thiserror::Error)]
pub enum SceneError {
    #[error("{path}: cannot read scene file: {source}")]
    Io {
        path: String,
        #[source]
        source: std::io::Error,
    },
    #[error("{path}:{line}: {}TOML syntax error: {message}", key_prefix(.key))]
    Syntax {
        path: String,
        line: usize,
        /// The key the error sits in or follows, when there is one.
        key: String,
        message: String,
    },
    #[error("{path}:{line}: {key}: unknown key ({message})")]
    UnknownKey {
        path: String,
        line: usize,
        key: String,
        message: String,
    },
    /// A value of the wrong type, out of its range, or inconsistent with another.
    #[error("{path}:{line}: {key}: {message}")]
    Invalid {
        path: String,
        line: usize,
        key: String,
        message: String,
    },
    #[error("--set {assignment}: {key}: {message}")]
    Set {
        assignment: String,
        key: String,
        message: String,
    },
    #[error("cloth.{piece}: {source}")]
    Bcc {
        piece: usize,
        #[source]
        source: crate::bcc::BccError,
    },
    #[error("cloth.{piece}: {source}")]
    Knit {
        piece: usize,
        #[source]
        source: crate::knit::KnitError,
    },
    #[error("cloth.{piece}: {message}")]
    Cloth { piece: usize, message: String },
    #[error("seam.{seam}: {message}")]
    Seam { seam: usize, message: String },
    /// `yarn.radius = "auto"` could not be fitted.
    #[error("yarn.radius = \"auto\": {0}")]
    Fit(#[source] crate::import::FitError),
    /// The fitted radius breaks a rule of the scene (the key it breaks, and why).
    #[error("yarn.radius = \"auto\" fitted r = {radius} cm, but then {key}: {message}")]
    Fitted {
        radius: f32,
        key: String,
        message: String,
    },
    #[error("pin.{pin}: {message}")]
    Pin { pin: usize, message: String },
    #[error("{0}")]
    Other(String),
}

fn key_prefix(key: &str) -> String {
    if key.is_empty() {
        String::new()
    } else {
        format!("{key}: ")
    }
}

/// The line of the dotted key `key` (`cloth.1`, `seam.0`) in the scene text `text`, or of its
/// nearest ancestor there; `None` where the text does not parse. For errors raised after the
/// scene is read (building the cloth, its pins and seams), which know the key but not the line.
pub fn line_of_key(text: &str, key: &str) -> Option<usize> {
    let doc = toml::de::DeTable::parse(text).ok()?;
    Some(Nodes::new(doc.get_ref()).line_of_path(text, key))
}

impl SceneError {
    /// The scene table an error raised while building the cloth is about (`cloth.N`, `seam.N`,
    /// `pin.N`), to find its line with [`line_of_key`].
    pub fn table_key(&self) -> Option<String> {
        match self {
            SceneError::Bcc { piece, .. }
            | SceneError::Knit { piece, .. }
            | SceneError::Cloth { piece, .. } => Some(format!("cloth.{piece}")),
            SceneError::Seam { seam, .. } => Some(format!("seam.{seam}")),
            SceneError::Pin { pin, .. } => Some(format!("pin.{pin}")),
            _ => None,
        }
    }

    /// The dotted key the error is about, if it is about one.
    pub fn key(&self) -> Option<&str> {
        match self {
            SceneError::Syntax { key, .. }
            | SceneError::UnknownKey { key, .. }
            | SceneError::Invalid { key, .. }
            | SceneError::Set { key, .. } => Some(key),
            _ => None,
        }
    }

    /// The 1-based line the error is on, for errors about a file.
    pub fn line(&self) -> Option<usize> {
        match self {
            SceneError::Syntax { line, .. }
            | SceneError::UnknownKey { line, .. }
            | SceneError::Invalid { line, .. } => Some(*line),
            _ => None,
        }
    }
}

impl Scene {
    /// The obstacles at time `t` (s), each without keyframes: the scene's `obstacle`s moved by their
    /// keyframes, then every figure's parts as capsules (the order the step uses).
    pub fn obstacles_at(&self, t: f64) -> Vec<Obstacle> {
        let shift = |p: &mut [f32; 3], o: [f32; 3]| {
            for (a, b) in p.iter_mut().zip(o) {
                *a += b;
            }
        };
        let mut out: Vec<Obstacle> = self
            .obstacle
            .iter()
            .map(|o| {
                let mut o = o.clone();
                match &mut o {
                    Obstacle::Plane { .. } => {}
                    Obstacle::Sphere {
                        center, keyframes, ..
                    } => {
                        shift(center, crate::sim::keyframe_offset(keyframes, t));
                        keyframes.clear();
                    }
                    Obstacle::Capsule {
                        a, b, keyframes, ..
                    } => {
                        let (oa, ob) = crate::sim::keyframe_offsets(keyframes, t);
                        shift(a, oa);
                        shift(b, ob);
                        keyframes.clear();
                    }
                }
                o
            })
            .collect();
        for f in &self.figure {
            out.extend(f.parts(t).into_iter().map(|p| Obstacle::Capsule {
                a: p.a,
                b: p.b,
                radius: p.radius,
                friction: f.friction,
                keyframes: Vec::new(),
            }));
        }
        out
    }

    /// Reads, parses and validates a scene file. Relative BCC paths in it are resolved by
    /// [`build_curves`] against the directory given there (normally the file's own directory).
    pub fn load(path: &std::path::Path) -> Result<Scene, SceneError> {
        let io = |source| SceneError::Io {
            path: path.display().to_string(),
            source,
        };
        let bytes =
            crate::input::read_at_most(path, MAX_SCENE_BYTES, "a scene file").map_err(io)?;
        let text = String::from_utf8(bytes).map_err(|e| {
            let at = e.utf8_error().valid_up_to();
            let line = line_of_bytes(e.as_bytes(), at);
            io(std::io::Error::new(
                std::io::ErrorKind::InvalidData,
                format!("not UTF-8 text: line {line} ({})", e.utf8_error()),
            ))
        })?;
        Scene::from_toml_str(&text, &path.display().to_string())
    }

    /// Parses and validates scene text; `origin` names it in errors (usually the file path).
    pub fn from_toml_str(text: &str, origin: &str) -> Result<Scene, SceneError> {
        Scene::from_toml_str_checked(text, origin, true)
    }

    /// [`Scene::from_toml_str`], with the range and consistency rules ([`Scene::check`]) only when
    /// `check`.
    fn from_toml_str_checked(text: &str, origin: &str, check: bool) -> Result<Scene, SceneError> {
        let doc = match toml::de::DeTable::parse(text) {
            Ok(doc) => doc,
            Err(e) => {
                // Parse again with recovery to learn which key the error sits in.
                let (partial, _) = toml::de::DeTable::parse_recoverable(text);
                let nodes = Nodes::new(partial.get_ref());
                let span = e.span().unwrap_or(0..0);
                // An error in a table header (`[contact`) is about that table, not about the key
                // before it.
                let line_text = text[..span.start.min(text.len())]
                    .rsplit('\n')
                    .next()
                    .unwrap_or("")
                    .to_string()
                    + text[span.start.min(text.len())..]
                        .split('\n')
                        .next()
                        .unwrap_or("");
                let header = line_text.trim_start().strip_prefix('[').map(|h| {
                    h.trim_start_matches('[')
                        .split(']')
                        .next()
                        .unwrap_or("")
                        .trim()
                        .to_string()
                });
                let key = match header {
                    Some(h) => h,
                    None => nodes
                        .containing(&span)
                        .or_else(|| nodes.preceding(span.start))
                        .map(|n| n.path.clone())
                        .unwrap_or_default(),
                };
                return Err(SceneError::Syntax {
                    path: origin.to_string(),
                    line: line_of(text, span.start),
                    key,
                    message: e.message().trim().to_string(),
                });
            }
        };
        let nodes = Nodes::new(doc.get_ref());
        let scene: Scene = toml::from_str(text).map_err(|e| {
            let span = e.span().unwrap_or(0..0);
            let (key, line, message) = nodes.explain(text, &span, e.message().trim());
            // An obstacle is a tagged enum, whose errors carry the span of the whole array of
            // obstacles: the one at fault is found by reading each alone.
            let (key, line, message) =
                match obstacle_error(text).filter(|_| key.starts_with("obstacle")) {
                    Some((key, message)) => (key.clone(), nodes.line_of_path(text, &key), message),
                    None => (key, line, message),
                };
            let message = plain_types(&message);
            let message = match structure_hint(&key, &message) {
                Some(hint) => format!("{message} ({hint})"),
                None => message,
            };
            let unknown =
                message.starts_with("unknown field") || message.starts_with("unexpected keys");
            if unknown {
                SceneError::UnknownKey {
                    path: origin.to_string(),
                    line,
                    key,
                    message,
                }
            } else {
                SceneError::Invalid {
                    path: origin.to_string(),
                    line,
                    key,
                    message,
                }
            }
        })?;
        if let Err((key, message)) = if check { scene.check() } else { Ok(()) } {
            return Err(SceneError::Invalid {
                path: origin.to_string(),
                line: nodes.line_of_rule(text, &key, &message),
                key,
                message,
            });
        }
        Ok(scene)
    }

    /// The values that make a scene's forces stiffer than the defaults do by more than `factor`,
    /// as `key = value (default D)`: `contact.stiffness`, `yarn.bending_stiffness`,
    /// `yarn.twisting_stiffness` and gravity's magnitude above `factor` times their defaults, and
    /// `yarn.linear_density` below its default over `factor` (a lighter yarn is a stiffer one for
    /// the same forces). A step that fails for want of a smaller `simulation.dt` names these too:
    /// they are in range, and each may be what a step of that size cannot take.
    pub fn far_from_defaults(&self, factor: f64) -> Vec<String> {
        let d = Scene::default();
        let (dy, ds) = (&d.yarn, &d.simulation);
        let norm = |g: [f32; 3]| g.iter().map(|&x| (x as f64).powi(2)).sum::<f64>().sqrt();
        let mut out = Vec::new();
        let mut above = |key: &str, value: f64, default: f64, shown: String| {
            if value > factor * default {
                out.push(format!("{key} = {shown} (default {default})"));
            }
        };
        let c = &self.contact;
        above(
            "contact.stiffness",
            c.stiffness as f64,
            d.contact.stiffness as f64,
            shown(c.stiffness as f64),
        );
        let y = &self.yarn;
        let b = y.bending_stiffness;
        above(
            "yarn.bending_stiffness",
            b as f64,
            dy.bending_stiffness as f64,
            shown(b as f64),
        );
        let t = y.twisting_stiffness;
        above(
            "yarn.twisting_stiffness",
            t as f64,
            dy.twisting_stiffness as f64,
            shown(t as f64),
        );
        let g = self.simulation.gravity;
        above(
            "simulation.gravity",
            norm(g),
            norm(ds.gravity),
            format!("{g:?} (magnitude {:.4e})", norm(g)),
        );
        let rho = y.linear_density as f64;
        if rho * factor < dy.linear_density as f64 {
            out.push(format!(
                "yarn.linear_density = {} (default {})",
                shown(rho),
                dy.linear_density
            ));
        }
        out
    }

    /// Checks every value's range and the consistency between values (the same rules `load` applies);
    /// for scenes built in code. The error has no file, so it reports line 0 in `<scene>`.
    pub fn validate(&self) -> Result<(), SceneError> {
        self.check().map_err(|(key, message)| SceneError::Invalid {
            path: "<scene>".to_string(),
            line: 0,
            key,
            message,
        })
    }

    /// Applies a command-line override `key.path=value` (array entries by index: `cloth.0.scale=2`).
    ///
    /// The value is a TOML value (`0.1`, `[0, -981, 0]`, `"acl"`, `{ first = 0, last = 9 }`); a bare
    /// word that is not valid TOML (`acl`) is taken as a string. The scene is written out as TOML, the
    /// value set there, and the result read back with the same checks as a file, so an unknown key, a
    /// wrong type or an out-of-range value is an error naming the key, and `self` is left unchanged.
    pub fn apply_set(&mut self, assignment: &str) -> Result<(), SceneError> {
        self.apply_sets(&[assignment])
    }

    /// Applies several overrides ([`Scene::apply_set`]) as one: each is read as it comes (an
    /// unknown key or a wrong type is an error naming it), and the rules between values are checked
    /// once all are in, so overrides that only agree together are taken (moving a pin's region
    /// with `pin.0.region.min` and `pin.0.region.max`, which one at a time would leave a `min`
    /// above the other's `max`). A rule that fails then names the last override whose key has the
    /// most in common with the key it is about. On error `self` is left unchanged.
    pub fn apply_sets(&mut self, assignments: &[impl AsRef<str>]) -> Result<(), SceneError> {
        let mut scene = self.clone();
        for a in assignments {
            scene.set_one(a.as_ref())?;
        }
        if let Err((key, message)) = scene.check() {
            let shared = |a: &str| {
                let k = a.split_once('=').map_or(a, |(k, _)| k);
                k.split('.')
                    .map(str::trim)
                    .zip(key.split('.'))
                    .take_while(|(x, y)| x == y)
                    .count()
            };
            let blamed = assignments
                .iter()
                .map(|a| a.as_ref())
                .max_by_key(|a| shared(a))
                .unwrap_or("");
            return Err(SceneError::Set {
                assignment: blamed.to_string(),
                key,
                message,
            });
        }
        *self = scene;
        Ok(())
    }

    /// One override of [`Scene::apply_sets`], without the rules between values.
    fn set_one(&mut self, assignment: &str) -> Result<(), SceneError> {
        let set_err = |key: &str, message: String| SceneError::Set {
            assignment: assignment.to_string(),
            key: key.to_string(),
            message,
        };
        let (key, value) = assignment
            .split_once('=')
            .ok_or_else(|| set_err("", "expected key.path=value".to_string()))?;
        let key = key.trim();
        let value = value.trim();
        if key.is_empty() || key.split('.').any(|c| c.trim().is_empty()) {
            return Err(set_err(
                key,
                "the key path has an empty component".to_string(),
            ));
        }
        let value = parse_set_value(value).map_err(|m| set_err(key, m))?;
        let mut doc = toml::Value::try_from(&*self)
            .map_err(|e| set_err(key, format!("cannot serialize the scene: {e}")))?;
        set_path(&mut doc, key, value).map_err(|m| set_err(key, m))?;
        let text = toml::to_string(&doc)
            .map_err(|e| set_err(key, format!("cannot serialize the scene: {e}")))?;
        let scene = Scene::from_toml_str_checked(&text, "--set", false).map_err(|e| match e {
            SceneError::UnknownKey {
                key: k, message, ..
            } => set_err(&k, format!("unknown key ({message})")),
            SceneError::Invalid {
                key: k, message, ..
            }
            | SceneError::Syntax {
                key: k, message, ..
            } => set_err(&k, message),
            other => set_err(key, other.to_string()),
        })?;
        *self = scene;
        Ok(())
    }

    /// The range and consistency rules; the error is `(dotted key, message)`.
    fn check(&self) -> Result<(), (String, String)> {
        let s = &self.simulation;
        in_range("simulation.dt", s.dt, 1e-8, 1e-2)?;
        in_range("simulation.frames", s.frames as f64, 1.0, 1e7)?;
        // Up to one frame per step (the next rule); dt ≥ 1e-8 bounds fps by 1e8.
        in_range("simulation.fps", s.fps, 1e-3, 1e8)?;
        let steps_per_frame = (1.0 / (s.fps * s.dt)).round();
        if steps_per_frame >= u32::MAX as f64 {
            return Err((
                "simulation.fps".into(),
                format!(
                    "a frame (1/fps = {} s) is {steps_per_frame:e} steps of dt = {} s, more than the {} a frame may take",
                    1.0 / s.fps,
                    s.dt,
                    u32::MAX - 1
                ),
            ));
        }
        if 1.0 / s.fps < s.dt {
            return Err((
                "simulation.fps".into(),
                format!(
                    "a frame (1/fps = {} s) is shorter than one time step (dt = {} s)",
                    1.0 / s.fps,
                    s.dt
                ),
            ));
        }
        finite3("simulation.gravity", s.gravity)?;

        let y = &self.yarn;
        if y.radius_auto {
            // Fitted after the cloth is built (`resolve_radius`), which checks the fit the same way.
            if let Some(i) = self
                .cloth
                .iter()
                .position(|p| matches!(p.source, ClothSource::Generator { .. }))
            {
                return Err((
                    "yarn.radius".into(),
                    format!(
                        "\"auto\" fits the radius to BCC models, but cloth.{i} is generated, and \
                         a generator needs the radius to build its loops: give yarn.radius a \
                         number (cm)"
                    ),
                ));
            }
        } else {
            in_range(
                "yarn.radius",
                y.radius as f64,
                RADIUS_RANGE.0,
                RADIUS_RANGE.1,
            )?;
        }
        positive("yarn.linear_density", y.linear_density as f64)?;
        non_negative("yarn.bending_stiffness", y.bending_stiffness as f64)?;
        non_negative("yarn.twisting_stiffness", y.twisting_stiffness as f64)?;
        non_negative("yarn.plastic_radius", y.plastic_radius as f64)?;
        non_negative("yarn.plastic_max", y.plastic_max as f64)?;
        if y.plastic_max < y.plastic_radius {
            return Err((
                "yarn.plastic_max".into(),
                format!(
                    "must be at least yarn.plastic_radius ({}), got {}",
                    shown(y.plastic_radius as f64),
                    shown(y.plastic_max as f64)
                ),
            ));
        }
        non_negative("yarn.damping_const", y.damping_const as f64)?;
        non_negative("damping.air", self.damping.air as f64)?;
        let rx = &self.relax;
        in_range("relax.time", rx.time, 0.0, 1e4)?;
        positive("relax.speed", rx.speed as f64)?;
        non_negative("relax.drag", rx.drag as f64)?;
        positive("relax.grow_rate", rx.grow_rate)?;
        if let RadiusSpec::Value(f) = rx.start_radius {
            if !(f > 0.0 && f <= 1.0) {
                return Err((
                    "relax.start_radius".into(),
                    format!("must be a fraction of yarn.radius in (0, 1] or \"auto\", got {f}"),
                ));
            }
        }
        non_negative("yarn.damping_prop", y.damping_prop as f64)?;
        in_range(
            "yarn.damping_block_loops",
            y.damping_block_loops as f64,
            1.0,
            1e6,
        )?;

        let c = &self.contact;
        non_negative("contact.stiffness", c.stiffness as f64)?;
        non_negative("contact.tolerance", c.tolerance as f64)?;
        in_range("contact.quadrature", c.quadrature as f64, 1.0, 32.0)?;
        if c.model == ContactModel::Acl && c.quadrature > crate::sched::MAX_QUADRATURE {
            return Err((
                "contact.quadrature".into(),
                format!(
                    "must be at most {0} with contact.model = \"acl\" (its scheduler's bitmap holds {0} × {0} quadrature pairs a segment pair; \"exact\" takes up to 32), got {1}",
                    crate::sched::MAX_QUADRATURE,
                    c.quadrature
                ),
            ));
        }
        in_range("contact.padding", c.padding as f64, 0.0, 64.0)?;
        positive("contact.grid_cell", c.grid_cell as f64)?;
        // Far below the yarn's radius a segment's box spans more cells than a segment may cover
        // (`contact::grid::MAX_CELLS_PER_SEGMENT`), which failed at the first step (0.03 cm on
        // a 4 × 4 swatch at r = 0.125; 0.04 ran).
        if !self.yarn.radius_auto
            && c.model != ContactModel::None
            && (c.grid_cell as f64) < self.yarn.radius as f64 / 4.0
        {
            return Err((
                "contact.grid_cell".into(),
                format!(
                    "must be at least a quarter of yarn.radius ({} cm) with contact, got {}: finer, a segment's box spans more grid cells than the {} a segment may cover (the default is 0.6 cm)",
                    shown((self.yarn.radius / 4.0) as f64),
                    shown(c.grid_cell as f64),
                    crate::contact::grid::MAX_CELLS_PER_SEGMENT
                ),
            ));
        }
        in_range("contact.max_bin", c.max_bin as f64, 0.0, 24.0)?;
        non_negative("contact.omega", c.omega as f64)?;
        non_negative("contact.exclusion_arc", c.exclusion_arc as f64)?;
        in_range(
            "contact.delete_distance",
            c.delete_distance as f64,
            2.0,
            100.0,
        )?;
        non_negative("contact.stiction_stiffness", c.stiction_stiffness as f64)?;
        non_negative(
            "contact.stiction_break_energy",
            c.stiction_break_energy as f64,
        )?;
        // Values valid in type that the contact models are known to break on.
        if c.model != ContactModel::None {
            let model = match c.model {
                ContactModel::Exact => "exact",
                _ => "acl",
            };
            if c.stiffness == 0.0 {
                return Err((
                    "contact.stiffness".into(),
                    format!(
                        "must be > 0 with contact.model = \"{model}\", got 0: without a penalty \
                         force the yarns pass through each other and the knit comes apart (for a \
                         run without yarn contact, set contact.model = \"none\")"
                    ),
                ));
            }
            let least = std::f64::consts::PI * y.radius as f64;
            if !y.radius_auto && (c.exclusion_arc as f64) < least {
                return Err((
                    "contact.exclusion_arc".into(),
                    format!(
                        "must be at least π · yarn.radius = {least:.4} cm (yarn.radius = {} cm) \
                         with contact.model = \"{model}\", got {}: below that, a yarn bent as \
                         tightly as a tube of its radius can bend pushes on itself, which acts as a \
                         spurious bending stiffness that grows without bound at tighter bends \
                         (src/contact.rs, \"Same-yarn exclusion\"); the default is 1 cm, 8 r at \
                         r = 0.125 cm",
                        y.radius, c.exclusion_arc
                    ),
                ));
            }
        }

        if self.cloth.is_empty() {
            return Err((
                "cloth".into(),
                "the scene has no cloth piece (add a [[cloth]] table)".into(),
            ));
        }
        // Across pieces too: the bound keeps a scene within memory, and pieces each at it took
        // it several times over.
        let mut generated_loops = 0u64;
        for (i, p) in self.cloth.iter().enumerate() {
            let k = |f: &str| format!("cloth.{i}.{f}");
            match &p.source {
                ClothSource::Generator {
                    pattern,
                    wales,
                    courses,
                    section,
                } => {
                    if section.is_some() && !self.yarn.radius_auto {
                        crate::knit::section_in_r(
                            *pattern,
                            *wales,
                            self.yarn.radius,
                            &crate::knit::SHAPE,
                            *section,
                        )
                        .map_err(|e| (k("source.generator.section"), e.to_string()))?;
                    }
                    let min_wales = if pattern.is_round() {
                        crate::knit::MIN_TUBE_WALES
                    } else {
                        1
                    };
                    in_range(
                        &k("source.generator.wales"),
                        *wales as f64,
                        min_wales as f64,
                        1e5,
                    )?;
                    in_range(&k("source.generator.courses"), *courses as f64, 1.0, 1e5)?;
                    if (*wales as u64) * (*courses as u64) > crate::knit::MAX_LOOPS as u64 {
                        return Err((
                            k("source.generator"),
                            format!(
                                "{wales} × {courses} loops is more than the {} a generator makes",
                                crate::knit::MAX_LOOPS
                            ),
                        ));
                    }
                    generated_loops += *wales as u64 * *courses as u64;
                    if generated_loops > crate::knit::MAX_LOOPS as u64 {
                        return Err((
                            k("source.generator"),
                            format!(
                                "the generated pieces up to cloth.{i} make {generated_loops} loops \
                                 in all, more than the {} the generators of a scene make",
                                crate::knit::MAX_LOOPS
                            ),
                        ));
                    }
                }
                ClothSource::Bcc {
                    path,
                    bspline_tolerance,
                    ..
                } => {
                    if path.trim().is_empty() {
                        return Err((k("source.bcc.path"), "must not be empty".into()));
                    }
                    in_range(
                        &k("source.bcc.bspline_tolerance"),
                        *bspline_tolerance,
                        1e-6,
                        0.1,
                    )?;
                }
            }
            in_range(&k("scale"), p.scale as f64, 1e-6, 1e6)?;
            finite3(&k("rotate_deg"), p.rotate_deg)?;
            finite3(&k("translate"), p.translate)?;
        }

        for (i, p) in self.pin.iter().enumerate() {
            match p {
                Pin::Range { first, last } => {
                    if first > last {
                        return Err((
                            format!("pin.{i}.range.last"),
                            format!("must be at least first ({first}), got {last}"),
                        ));
                    }
                }
                Pin::Region { min, max } => {
                    finite3(&format!("pin.{i}.region.min"), *min)?;
                    finite3(&format!("pin.{i}.region.max"), *max)?;
                    if (0..3).any(|d| min[d] > max[d]) {
                        return Err((
                            format!("pin.{i}.region.max"),
                            format!(
                                "must be at least min ({min:?}) in every coordinate, got {max:?}"
                            ),
                        ));
                    }
                }
            }
        }

        for (i, o) in self.obstacle.iter().enumerate() {
            let k = |f: &str| format!("obstacle.{i}.{f}");
            let keyframes = match o {
                Obstacle::Plane {
                    point,
                    normal,
                    friction,
                } => {
                    finite3(&k("point"), *point)?;
                    finite3(&k("normal"), *normal)?;
                    // (Only its direction counts: any length but 0 is a normal.)
                    if normal.iter().all(|&v| v == 0.0) {
                        return Err((k("normal"), "must not be the zero vector".into()));
                    }
                    non_negative(&k("friction"), *friction as f64)?;
                    &[][..]
                }
                Obstacle::Sphere {
                    center,
                    radius,
                    friction,
                    keyframes,
                } => {
                    finite3(&k("center"), *center)?;
                    positive(&k("radius"), *radius as f64)?;
                    non_negative(&k("friction"), *friction as f64)?;
                    &keyframes[..]
                }
                Obstacle::Capsule {
                    a,
                    b,
                    radius,
                    friction,
                    keyframes,
                } => {
                    finite3(&k("a"), *a)?;
                    finite3(&k("b"), *b)?;
                    positive(&k("radius"), *radius as f64)?;
                    non_negative(&k("friction"), *friction as f64)?;
                    &keyframes[..]
                }
            };
            for (j, kf) in keyframes.iter().enumerate() {
                let kk = |f: &str| format!("obstacle.{i}.keyframes.{j}.{f}");
                if !kf.t.is_finite() || kf.t < 0.0 {
                    return Err((
                        kk("t"),
                        format!("must be a finite time ≥ 0 s, got {}", shown(kf.t)),
                    ));
                }
                if j > 0 && kf.t <= keyframes[j - 1].t {
                    return Err((
                        kk("t"),
                        format!(
                            "keyframe times must increase, but {} follows {}",
                            kf.t,
                            keyframes[j - 1].t
                        ),
                    ));
                }
                finite3(&kk("offset"), kf.offset)?;
                if let Some(ob) = kf.offset_b {
                    if !matches!(o, Obstacle::Capsule { .. }) {
                        return Err((
                            kk("offset_b"),
                            "moves a capsule's second end; a sphere has none".into(),
                        ));
                    }
                    finite3(&kk("offset_b"), ob)?;
                }
            }
        }

        for (i, f) in self.figure.iter().enumerate() {
            f.check()
                .map_err(|(field, message)| (format!("figure.{i}.{field}"), message))?;
        }

        for (i, m) in self.seam.iter().enumerate() {
            let k = |f: &str| format!("seam.{i}.{f}");
            for p in m.pieces {
                if p >= self.cloth.len() {
                    return Err((
                        k("pieces"),
                        format!(
                            "names cloth piece {p}, but the scene has {} (counted from 0)",
                            self.cloth.len()
                        ),
                    ));
                }
            }
            if m.pieces[0] == m.pieces[1] {
                return Err((k("pieces"), "a seam joins two different pieces".into()));
            }
            if !(m.distance.is_finite() && m.distance > 0.0) {
                return Err((
                    k("distance"),
                    format!(
                        "must be a finite distance > 0 cm, got {}",
                        shown(m.distance as f64)
                    ),
                ));
            }
        }

        for (i, b) in self.ball.iter().enumerate() {
            let k = |f: &str| format!("ball.{i}.{f}");
            finite3(&k("center"), b.center)?;
            positive(&k("radius"), b.radius as f64)?;
            finite3(&k("velocity"), b.velocity)?;
            non_negative(&k("friction"), b.friction as f64)?;
            match b.mass {
                Some(m) => positive(&k("mass"), m as f64)?,
                None => positive(&k("density"), b.density as f64)?,
            }
            let m = b.mass();
            if !(m.is_finite() && m > 0.0) {
                // (Without `mass`, the mass is the radius's and density's: name what was given.)
                return Err(match b.mass {
                    Some(_) => (
                        k("mass"),
                        format!("gives a mass of {m} g, which is not a positive f32"),
                    ),
                    None => (
                        k("radius"),
                        format!(
                            "{} cm with density {} g/cm³ gives a mass of {m} g, which is not a \
                             positive f32; give ball.{i}.mass, or another radius or density",
                            shown(b.radius as f64),
                            shown(b.density as f64)
                        ),
                    ),
                });
            }
            if !(0.0..=1.0).contains(&b.restitution) {
                return Err((
                    k("restitution"),
                    format!(
                        "must be between 0 and 1, got {}",
                        shown(b.restitution as f64)
                    ),
                ));
            }
            for (j, o) in self.ball[..i].iter().enumerate() {
                let d: f32 = (0..3)
                    .map(|a| (b.center[a] - o.center[a]).powi(2))
                    .sum::<f32>()
                    .sqrt();
                if d < b.radius + o.radius {
                    return Err((
                        k("center"),
                        format!(
                            "ball {i} overlaps ball {j} at the start: their centres are {d} cm \
                             apart, less than the sum of their radii ({} cm)",
                            b.radius + o.radius
                        ),
                    ));
                }
            }
        }

        // The renderer's rules (`render::camera`), here so that a bad camera is named with its
        // line when the scene loads, not after a relaxation of hours at the first capture.
        let cam = &self.camera;
        for (key, v) in [
            ("camera.position", cam.position),
            ("camera.target", cam.target),
        ] {
            if let Some(p) = v {
                finite3(key, p)?;
                let reach = p.iter().map(|&x| (x as f64).powi(2)).sum::<f64>().sqrt();
                if reach > crate::render::camera::MAX_REACH {
                    return Err((
                        key.into(),
                        format!(
                            "lies {reach:.3e} cm from the origin; a camera is drawn in f32 and must stay within {:e} cm of it",
                            crate::render::camera::MAX_REACH
                        ),
                    ));
                }
            }
        }
        if let (Some(p), Some(t)) = (cam.position, cam.target) {
            if crate::render::camera::coincide(p, t) {
                return Err((
                    "camera.target".into(),
                    format!("must differ from camera.position {p:?} (as f32 the two coincide)"),
                ));
            }
        }
        if let Some(f) = cam.fov_deg {
            if !(f > 0.0 && f < 180.0) {
                return Err((
                    "camera.fov_deg".into(),
                    format!("must be between 0 and 180 degrees (exclusive), got {f}"),
                ));
            }
        }
        Ok(())
    }
}

/// The cloth of a scene, ready for `Topology::from_curves`.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ClothBuild {
    /// Every yarn of every cloth piece, pieces in scene order.
    pub curves: Vec<Curve>,
    /// Per control point (global order: the curves concatenated), its non-rigid damping block in
    /// phase A. Blocks of different pieces are distinct; ids run from 0 without gaps.
    pub damping_block: Vec<u32>,
    /// The same for phase B: phase A shifted by half a block, so that the seams between phase-A
    /// blocks lie inside phase-B blocks. The step applies the two phases on alternate time steps
    /// (see [`build_curves`]). Blocks of different pieces are distinct; ids run from 0 without gaps.
    pub damping_block_shifted: Vec<u32>,
    /// Knit loops in the scene (for BCC pieces an estimate, see [`build_curves`]).
    pub loops: u32,
    /// What reading each BCC piece did (curve type, B-spline conversion), in scene order.
    pub imports: Vec<PieceImport>,
    /// Pairs of control points (global indices) tied together: the bottom seams of `sack` pieces,
    /// then the scene's `[[seam]]`s in order.
    pub ties: Vec<[u32; 2]>,
    /// Per piece, its first control point (global index); one more entry, the total.
    pub piece_first_point: Vec<u32>,
    /// Per `[[seam]]`, how many ties it made.
    pub seam_ties: Vec<usize>,
}

impl ClothBuild {
    /// Where yarn `yarn` (0-based over the scene, as the simulation numbers yarns) comes from, in
    /// words: `cloth.N`, and for a BCC piece the file, the curve in it and how its control points
    /// relate to the file's (errors about a yarn's points name them as the simulation holds them).
    pub fn yarn_source(&self, yarn: usize) -> Option<String> {
        let first_point: usize = self
            .curves
            .get(..yarn)?
            .iter()
            .map(|c| c.points.len())
            .sum();
        let piece = self
            .piece_first_point
            .iter()
            .rposition(|&p| p as usize <= first_point)?
            .min(self.piece_first_point.len().saturating_sub(2));
        match self.imports.iter().find(|i| i.piece == piece) {
            Some(im) => {
                let points = match (im.report.curve_type.as_str(), self.curves[yarn].closed) {
                    ("PL", false) => ": its control point k is the file's point k − 1 (an open PL curve gains an end handle at each end)",
                    ("BS", _) => ": its control points are the file's B-spline subdivided",
                    _ => ": its control points are the file's",
                };
                Some(format!(
                    "yarn {yarn} is curve {} of {} (cloth.{piece}){points}",
                    yarn - im.first_curve,
                    im.path.display()
                ))
            }
            None => Some(format!(
                "yarn {yarn} is of cloth.{piece}, a generated piece"
            )),
        }
    }
}

/// The import report of one BCC piece.
#[derive(Clone, Debug, PartialEq)]
pub struct PieceImport {
    /// Index of the piece in `cloth`.
    pub piece: usize,
    /// The file, resolved against the scene directory.
    pub path: std::path::PathBuf,
    pub report: crate::bcc::ImportReport,
    /// Its curves' first index in [`ClothBuild::curves`] and count.
    pub first_curve: usize,
    pub curves: usize,
}

/// The side of a knit loop in mean control-point spacings, for the damping blocks of a BCC piece
/// (which has no loop structure; see [`build_curves`]): the side of a square of one loop's area,
/// √(wale pitch × course pitch).
///
/// Why this value: a loop holds about 8 control points (our generator: 8.0–8.2; the seed's models
/// likewise), so its yarn is about 8 spacings long, and a knit loop is some 4.5 times shorter across
/// than its yarn: our generator's stockinette and garter, 12 × 12 to 50 × 40 loops, have
/// 8 spacings / √(wale pitch × course pitch) = 4.3–4.5 (wale pitch 1.06–1.09 cm, course pitch
/// 0.76–0.81 cm, spacing 0.50–0.51 cm at r = 0.125 cm). Until 2026-11-28 the estimate was the
/// yarn's length itself, 8 spacings, 4.4 times too wide: a 24 × 24 swatch's BCC blocks held 4.6
/// times the points of its generated ones (`tests/scene.rs`), and the relaxed scarf as a BCC file
/// had blocks of up to 3,172 control points, against at most 134 generated.
pub const BCC_LOOP_SPACINGS: f64 = 1.8;

/// The damping blocks of a generated piece of `wales` × `courses` loops (see [`build_curves`]): the
/// block of loop (w, c) in phase A, `(w / side, c / side)`, and in phase B, shifted by ⌊side / 2⌋
/// loops in wale and in course; numbered row by row from 0 within the piece.
#[derive(Clone, Copy, Debug)]
pub struct LoopBlocks {
    side: u32,
    shift: u32,
    blocks_x: u32,
    shifted_x: u32,
    /// Blocks of phase A, and of phase B.
    pub blocks: u32,
    pub shifted_blocks: u32,
}

impl LoopBlocks {
    pub fn new(wales: u32, courses: u32, side: u32) -> LoopBlocks {
        let side = side.max(1);
        let shift = side / 2;
        let blocks_x = wales.div_ceil(side);
        // Every loop (w, c) of the rectangle owns control points, so the shifted ids
        // ((w + shift) / side, (c + shift) / side) also cover their range without gaps.
        let shifted_x = (wales + shift).div_ceil(side);
        LoopBlocks {
            side,
            shift,
            blocks_x,
            shifted_x,
            blocks: blocks_x * courses.div_ceil(side),
            shifted_blocks: shifted_x * (courses + shift).div_ceil(side),
        }
    }

    /// Phase A's block of loop `[w, c]`.
    pub fn block(&self, [w, c]: [u32; 2]) -> u32 {
        w / self.side + self.blocks_x * (c / self.side)
    }

    /// Phase B's block of loop `[w, c]`.
    pub fn shifted(&self, [w, c]: [u32; 2]) -> u32 {
        let (s, h) = (self.side, self.shift);
        (w + h) / s + self.shifted_x * ((c + h) / s)
    }
}

/// Generates or loads every cloth piece and places it: scale (a BCC piece's `units` to centimetres,
/// then `scale`), then rotate (degrees about x, then y, then z), then translate. Relative BCC paths
/// are resolved against `scene_dir`.
///
/// Damping blocks (DESIGN §2, seed §3.3): a generated piece is cut into blocks of
/// `yarn.damping_block_loops` × `yarn.damping_block_loops` loops by (wale, course), using the loop the
/// generator assigns each control point to. A BCC file carries no loop structure, so its blocks are
/// the cells of a uniform grid over the placed control points, `damping_block_loops` loop sizes wide,
/// where a loop size is estimated from the mean control-point spacing ([`BCC_LOOP_SPACINGS`]). Our
/// generator and the seed's models have about 8 control points per loop, so a BCC piece counts as
/// `control points / 8` loops (rounded, at least 1); both are estimates.
///
/// Two phases. The seed applies "only one phase of nonrigid damping on each timestep, over blocks of
/// 4 × 4 knit loops": we read this as a sequence of block partitions of which each step damps one.
/// A single fixed partition never damps the blocks' rigid motions relative to each other, so cloth
/// deformation concentrates at the block seams and rings there undamped (measured on a hanging
/// 10 × 10 swatch: its corner loop still moved at 10 cm/s after 0.2 s). Phase B is phase A shifted
/// by half a block, ⌊side/2⌋ loops in wale and in course (for BCC pieces, half a grid cell along x,
/// y and z), so every seam of one phase lies inside a block of the other: two loops adjacent along a
/// wale or a course share a block on at least one of any two consecutive steps. (In the 3D grid of a
/// BCC piece, the few yarn edges that cross a seam plane of each phase at once, near the lines where
/// the two meet, are split in both.) With `damping_block_loops = 1` a generated piece cannot be
/// shifted by half a loop and its two phases coincide.
pub fn build_curves(scene: &Scene, scene_dir: &Path) -> Result<ClothBuild, SceneError> {
    let mut build = ClothBuild::default();
    let mut next_block = 0u32;
    let mut next_shifted = 0u32;
    let side = scene.yarn.damping_block_loops.max(1);
    for (pi, piece) in scene.cloth.iter().enumerate() {
        build
            .piece_first_point
            .push(build.curves.iter().map(|c| c.points.len() as u32).sum());
        let cloth_err = |message: String| SceneError::Cloth { piece: pi, message };
        let xf = Placement::new(piece);
        match &piece.source {
            ClothSource::Generator {
                pattern,
                wales,
                courses,
                section,
            } => {
                let k = crate::knit::generate_section(
                    *pattern,
                    *wales,
                    *courses,
                    scene.yarn.radius,
                    *section,
                )
                .map_err(|source| SceneError::Knit { piece: pi, source })?;
                let base: usize = build.curves.iter().map(|c| c.points.len()).sum();
                build
                    .ties
                    .extend(k.ties.iter().map(|t| t.map(|p| p + base as u32)));
                let lb = LoopBlocks::new(*wales, *courses, side);
                for (curve, owners) in k.curves.into_iter().zip(&k.point_loop) {
                    build
                        .damping_block
                        .extend(owners.iter().map(|&loop_| next_block + lb.block(loop_)));
                    build
                        .damping_block_shifted
                        .extend(owners.iter().map(|&loop_| next_shifted + lb.shifted(loop_)));
                    build.curves.push(xf.apply(curve));
                }
                next_block += lb.blocks;
                next_shifted += lb.shifted_blocks;
                build.loops += k.loops;
            }
            ClothSource::Bcc {
                path,
                bspline_tolerance,
                ..
            } => {
                let full = scene_dir.join(path);
                let options = crate::bcc::ReadOptions {
                    bspline_tolerance: *bspline_tolerance,
                };
                let (curves, report) = crate::bcc::read_with_options(&full, &options)
                    .map_err(|source| SceneError::Bcc { piece: pi, source })?;
                build.imports.push(PieceImport {
                    piece: pi,
                    path: full.clone(),
                    report,
                    first_curve: build.curves.len(),
                    curves: curves.len(),
                });
                let curves: Vec<Curve> = curves.into_iter().map(|c| xf.apply(c)).collect();
                // The file's points are finite (the reader checks); its units, `scale`, `rotate`
                // and `translate` can still take one past f32 (`units = "m"` on coordinates above
                // 3.4e36 m), which the spacing below would only call "not positive".
                for (ci, c) in curves.iter().enumerate() {
                    if let Some(k) = c
                        .points
                        .iter()
                        .position(|p| !p.iter().all(|x| x.is_finite()))
                    {
                        return Err(cloth_err(format!(
                            "{}: curve {ci}, control point {k} is {:?} once placed (the file's coordinates in cm, then scale, rotate and translate): past what an f32 holds",
                            full.display(),
                            c.points[k]
                        )));
                    }
                }
                let points: usize = curves.iter().map(|c| c.points.len()).sum();
                if points == 0 {
                    return Err(cloth_err(format!(
                        "{}: the file has no curves",
                        full.display()
                    )));
                }
                // Mean control-point spacing over every polyline edge of the piece.
                let (mut total, mut edges) = (0.0f64, 0usize);
                for c in &curves {
                    let n = c.points.len();
                    let m = if c.closed { n } else { n - 1 };
                    for e in 0..m {
                        let (a, b) = (c.points[e], c.points[(e + 1) % n]);
                        total += (0..3)
                            .map(|d| ((a[d] - b[d]) as f64).powi(2))
                            .sum::<f64>()
                            .sqrt();
                        edges += 1;
                    }
                }
                let spacing = total / edges.max(1) as f64;
                if !(spacing > 0.0 && spacing.is_finite()) {
                    return Err(cloth_err(format!(
                        "{}: the control points do not have a positive mean spacing",
                        full.display()
                    )));
                }
                let cell = side as f64 * BCC_LOOP_SPACINGS * spacing;
                // Phase A's grid starts at the piece's lowest corner, phase B's is offset by half a
                // cell along every axis. Anchored so, not at the origin, a flat piece thinner than
                // half a cell is cut through its thickness by neither phase's planes: with planes
                // through the origin, a swatch centred on z = 0 was cut into a front and a back
                // half by phase A, so that every yarn edge through its mid-plane near one of phase
                // B's planes was never damped (a 22 × 19 swatch: 319 of its 3,382 edges, with
                // cells of BCC_LOOP_SPACINGS).
                let mut low = [f64::INFINITY; 3];
                for p in curves.iter().flat_map(|c| &c.points) {
                    for d in 0..3 {
                        low[d] = low[d].min(p[d] as f64);
                    }
                }
                // Cells numbered in order of first appearance along the curves: deterministic.
                let mut ids: std::collections::HashMap<[i64; 3], u32> = Default::default();
                let mut shifted: std::collections::HashMap<[i64; 3], u32> = Default::default();
                for c in &curves {
                    for p in &c.points {
                        let at = |d: usize, offset: f64| {
                            ((p[d] as f64 - low[d] + offset) / cell).floor() as i64
                        };
                        let key = [at(0, 0.0), at(1, 0.0), at(2, 0.0)];
                        let n = ids.len() as u32;
                        let id = *ids.entry(key).or_insert(n);
                        build.damping_block.push(next_block + id);
                        let half = 0.5 * cell;
                        let key = [at(0, half), at(1, half), at(2, half)];
                        let n = shifted.len() as u32;
                        let id = *shifted.entry(key).or_insert(n);
                        build.damping_block_shifted.push(next_shifted + id);
                    }
                }
                next_block += ids.len() as u32;
                next_shifted += shifted.len() as u32;
                build.loops += ((points as f64 / 8.0).round() as u32).max(1);
                build.curves.extend(curves);
            }
        }
    }
    build
        .piece_first_point
        .push(build.curves.iter().map(|c| c.points.len() as u32).sum());
    let points: Vec<[f32; 3]> = build
        .curves
        .iter()
        .flat_map(|c| c.points.iter().copied())
        .collect();
    for (si, seam) in scene.seam.iter().enumerate() {
        let range = |p: usize| build.piece_first_point[p]..build.piece_first_point[p + 1];
        let (ra, rb) = (range(seam.pieces[0]), range(seam.pieces[1]));
        let ties = crate::ties::seam_ties(
            &points[ra.start as usize..ra.end as usize],
            ra.start,
            &points[rb.start as usize..rb.end as usize],
            rb.start,
            seam.distance,
        );
        if ties.is_empty() {
            return Err(SceneError::Seam {
                seam: si,
                message: format!(
                    "no control point of cloth.{} lies within {} cm of cloth.{}: nothing to sew",
                    seam.pieces[0], seam.distance, seam.pieces[1]
                ),
            });
        }
        build.seam_ties.push(ties.len());
        build.ties.extend(ties);
        // Each point of the first piece ties to its nearest in the second, so a seam that reaches
        // too far ties one point of the second to many: more than the ties' colours allow (the
        // step would refuse it, naming a tie but not the seam).
        let mut per_point: std::collections::HashMap<u32, usize> = Default::default();
        for t in &build.ties {
            for p in t {
                *per_point.entry(*p).or_default() += 1;
            }
        }
        let crowded = per_point
            .iter()
            .filter(|(_, &n)| n > crate::ties::MAX_TIE_COLORS)
            .min_by_key(|(&p, _)| p);
        if let Some((&point, &n)) = crowded {
            return Err(SceneError::Seam {
                seam: si,
                message: format!(
                    "control point {point} would be in {n} ties, more than the {} a point can hold: a \
                     seam ties each point of cloth.{} within its distance of cloth.{} to the \
                     nearest there, and {} cm reaches too far (about the gap between the pieces' \
                     edges is enough)",
                    crate::ties::MAX_TIE_COLORS,
                    seam.pieces[0],
                    seam.pieces[1],
                    shown(seam.distance as f64)
                ),
            });
        }
    }
    Ok(build)
}

/// Resolves `yarn.radius = "auto"`: fits the radius to the built cloth at the scene's quadrature
/// ([`crate::import::fit_radius`]), sets `yarn.radius` to it and clears `radius_auto`, then checks the
/// scene again (the fitted radius must be in range, and `contact.exclusion_arc` at least π r).
/// Returns the fit, or `None` when the radius was a number.
pub fn resolve_radius(
    scene: &mut Scene,
    build: &ClothBuild,
) -> Result<Option<crate::import::RadiusFit>, SceneError> {
    if !scene.yarn.radius_auto {
        return Ok(None);
    }
    let fit = crate::import::fit_radius(&build.curves, scene.contact.quadrature)
        .map_err(SceneError::Fit)?;
    let radius = fit.radius as f32;
    let mut fitted = scene.clone();
    fitted.yarn.radius = radius;
    fitted.yarn.radius_auto = false;
    fitted
        .check()
        .map_err(|(key, message)| SceneError::Fitted {
            radius,
            key,
            message,
        })?;
    *scene = fitted;
    Ok(Some(fit))
}

/// Scale, rotation and translation of a cloth piece, in f64.
struct Placement {
    scale: f64,
    rot: [[f64; 3]; 3],
    translate: [f64; 3],
}

impl Placement {
    /// The piece's placement; a BCC piece's `units` scale it to centimetres first.
    fn new(p: &ClothPiece) -> Placement {
        let units = match &p.source {
            ClothSource::Bcc { units, .. } => units.to_cm(),
            ClothSource::Generator { .. } => 1.0,
        };
        let [ax, ay, az] = p.rotate_deg.map(|d| (d as f64).to_radians());
        let rx = [
            [1.0, 0.0, 0.0],
            [0.0, ax.cos(), -ax.sin()],
            [0.0, ax.sin(), ax.cos()],
        ];
        let ry = [
            [ay.cos(), 0.0, ay.sin()],
            [0.0, 1.0, 0.0],
            [-ay.sin(), 0.0, ay.cos()],
        ];
        let rz = [
            [az.cos(), -az.sin(), 0.0],
            [az.sin(), az.cos(), 0.0],
            [0.0, 0.0, 1.0],
        ];
        let mul = |a: [[f64; 3]; 3], b: [[f64; 3]; 3]| -> [[f64; 3]; 3] {
            std::array::from_fn(|i| {
                std::array::from_fn(|j| (0..3).map(|k| a[i][k] * b[k][j]).sum())
            })
        };
        Placement {
            scale: p.scale as f64 * units,
            // x first, then y, then z: R = Rz · Ry · Rx.
            rot: mul(rz, mul(ry, rx)),
            translate: p.translate.map(|v| v as f64),
        }
    }

    fn apply(&self, mut c: Curve) -> Curve {
        for p in &mut c.points {
            let q = p.map(|v| v as f64 * self.scale);
            *p = std::array::from_fn(|i| {
                ((0..3).map(|k| self.rot[i][k] * q[k]).sum::<f64>() + self.translate[i]) as f32
            });
        }
        c
    }
}

/// Global control-point indices held by the scene's pins, sorted and without duplicates. A range
/// beyond the scene's control points, or a region that holds none, is an error naming the pin.
pub fn pinned_points(scene: &Scene, build: &ClothBuild) -> Result<Vec<u32>, SceneError> {
    let total: usize = build.curves.iter().map(|c| c.points.len()).sum();
    let mut out = Vec::new();
    for (i, pin) in scene.pin.iter().enumerate() {
        let err = |message: String| SceneError::Pin { pin: i, message };
        match *pin {
            Pin::Range { first, last } => {
                if first > last {
                    return Err(err(format!("range first {first} is after last {last}")));
                }
                if last as usize >= total {
                    return Err(err(format!(
                        "range {first}..={last} reaches past the scene's {total} control points (0..={})",
                        total.saturating_sub(1)
                    )));
                }
                out.extend(first..=last);
            }
            Pin::Region { min, max } => {
                let before = out.len();
                let points = build.curves.iter().flat_map(|c| c.points.iter());
                for (g, p) in points.enumerate() {
                    if (0..3).all(|d| p[d] >= min[d] && p[d] <= max[d]) {
                        out.push(g as u32);
                    }
                }
                if out.len() == before {
                    return Err(err(format!(
                        "region {min:?}..{max:?} holds none of the scene's control points"
                    )));
                }
            }
        }
    }
    out.sort_unstable();
    out.dedup();
    Ok(out)
}

type Bad = (String, String);

/// Whether `v` is within `[lo, hi]`, also as an `f32` field holds it: a bound written in the scene
/// (`yarn.radius = 1e-4`, the documented least) is read into an f32 that may round below it
/// (9.99999975e-5), and must still be in range.
fn in_range(key: &str, v: f64, lo: f64, hi: f64) -> Result<(), Bad> {
    let within = v >= lo && v <= hi;
    let as_f32 = (v as f32) as f64 == v && v as f32 >= lo as f32 && v as f32 <= hi as f32;
    if v.is_finite() && (within || as_f32) {
        Ok(())
    } else {
        Err((
            key.into(),
            format!(
                "must be in [{}, {}], got {}",
                shown(lo),
                shown(hi),
                shown(v)
            ),
        ))
    }
}

/// A number as an error message shows it: an f32 field's value as the f32 it is (`-0.1`, not
/// `-0.10000000149011612`), and in exponent form where it is very small or large (`1e-300`, not
/// three hundred digits).
fn shown(v: f64) -> String {
    // A whole number up to 2^53 that no f32 holds (an integer field's) in full: an integer field
    // past its range showed as 4.294967295e9. (An f32 field's value shows as its f32, 1e12.)
    let integer = v.fract() == 0.0 && (v as f32) as f64 != v;
    if integer && v.abs() < 9.007_199_254_740_992e15 && v.abs() >= 1e9 {
        return format!("{}", v as i64);
    }
    let small_or_large = v != 0.0 && v.is_finite() && !(1e-4..1e9).contains(&v.abs());
    match ((v as f32) as f64 == v, small_or_large) {
        (true, false) => format!("{}", v as f32),
        (true, true) => format!("{:e}", v as f32),
        (false, false) => format!("{v}"),
        (false, true) => format!("{v:e}"),
    }
}

fn positive(key: &str, v: f64) -> Result<(), Bad> {
    if v.is_finite() && v > 0.0 {
        Ok(())
    } else {
        Err((
            key.into(),
            format!("must be a finite number > 0, got {}", shown(v)),
        ))
    }
}

fn non_negative(key: &str, v: f64) -> Result<(), Bad> {
    if v.is_finite() && v >= 0.0 {
        Ok(())
    } else {
        Err((
            key.into(),
            format!("must be a finite number ≥ 0, got {}", shown(v)),
        ))
    }
}

fn finite3(key: &str, v: [f32; 3]) -> Result<(), Bad> {
    if v.iter().all(|x| x.is_finite()) {
        Ok(())
    } else {
        Err((key.into(), format!("must be finite, got {v:?}")))
    }
}

/// 1-based line of byte `offset` in `bytes`.
fn line_of_bytes(bytes: &[u8], offset: usize) -> usize {
    1 + bytes[..offset.min(bytes.len())]
        .iter()
        .filter(|&&b| b == b'\n')
        .count()
}

/// 1-based line of byte `offset` in `text`.
fn line_of(text: &str, offset: usize) -> usize {
    line_of_bytes(text.as_bytes(), offset)
}

/// A key or an array entry of the parsed document, with its dotted path and source spans.
struct Node {
    path: String,
    /// The key's own span (absent for array entries).
    key_span: Option<std::ops::Range<usize>>,
    value_span: std::ops::Range<usize>,
    /// How serde would describe the value in an "invalid type" message (`string "a"`), for leaves.
    unexpected: Option<String>,
}

/// Every key and array entry of a document, flattened, so error spans map back to dotted keys.
struct Nodes(Vec<Node>);

impl Nodes {
    fn new(doc: &toml::de::DeTable) -> Nodes {
        let mut nodes = Vec::new();
        Self::walk_table(doc, "", &mut nodes);
        Nodes(nodes)
    }

    fn join(prefix: &str, k: &str) -> String {
        if prefix.is_empty() {
            k.to_string()
        } else {
            format!("{prefix}.{k}")
        }
    }

    fn walk_table(t: &toml::de::DeTable, prefix: &str, out: &mut Vec<Node>) {
        for (k, v) in t.iter() {
            let path = Self::join(prefix, k.get_ref());
            out.push(Node {
                path: path.clone(),
                key_span: Some(k.span()),
                value_span: v.span(),
                unexpected: Self::describe(v.get_ref()),
            });
            Self::walk_value(v.get_ref(), &path, out);
        }
    }

    fn walk_value(v: &toml::de::DeValue, path: &str, out: &mut Vec<Node>) {
        match v {
            toml::de::DeValue::Table(t) => Self::walk_table(t, path, out),
            toml::de::DeValue::Array(a) => {
                for (i, item) in a.iter().enumerate() {
                    let p = format!("{path}.{i}");
                    out.push(Node {
                        path: p.clone(),
                        key_span: None,
                        value_span: item.span(),
                        unexpected: Self::describe(item.get_ref()),
                    });
                    Self::walk_value(item.get_ref(), &p, out);
                }
            }
            _ => {}
        }
    }

    /// serde's `Unexpected` rendering of a scalar, as it appears in "invalid type: ..." messages.
    fn describe(v: &toml::de::DeValue) -> Option<String> {
        use toml::de::DeValue;
        match v {
            DeValue::String(s) => Some(format!("string {:?}", s.as_ref())),
            DeValue::Integer(i) => i
                .as_str()
                .replace('_', "")
                .parse::<i64>()
                .ok()
                .map(|n| format!("integer `{n}`")),
            DeValue::Float(f) => Some(format!("floating point `{}`", f.as_str())),
            DeValue::Boolean(b) => Some(format!("boolean `{b}`")),
            _ => None,
        }
    }

    fn contains(outer: &std::ops::Range<usize>, inner: &std::ops::Range<usize>) -> bool {
        outer.start <= inner.start && inner.end <= outer.end
    }

    /// The innermost node whose key or value span contains `span`.
    fn containing(&self, span: &std::ops::Range<usize>) -> Option<&Node> {
        let mut best: Option<(&Node, usize)> = None;
        for n in &self.0 {
            for s in n.key_span.iter().chain(std::iter::once(&n.value_span)) {
                if Self::contains(s, span) {
                    let len = s.end - s.start;
                    // Ties go to the later (deeper) node: nodes are pushed parent first.
                    if best.is_none_or(|(_, l)| len <= l) {
                        best = Some((n, len));
                    }
                }
            }
        }
        best.map(|(n, _)| n)
    }

    /// The node whose key starts last at or before `offset`.
    fn preceding(&self, offset: usize) -> Option<&Node> {
        self.0
            .iter()
            .filter_map(|n| n.key_span.as_ref().map(|s| (n, s.start)))
            .filter(|&(_, s)| s <= offset)
            .max_by_key(|&(_, s)| s)
            .map(|(n, _)| n)
    }

    fn by_path(&self, path: &str) -> Option<&Node> {
        self.0.iter().find(|n| n.path == path)
    }

    /// The line of a broken rule about `key`: `key`'s where the file sets it, else that of the
    /// first other key the message names that the file sets (a default `contact.exclusion_arc`
    /// broken by `yarn.radius = 0.5` is that line's doing), else `key`'s table's
    /// ([`Nodes::line_of_path`]).
    fn line_of_rule(&self, text: &str, key: &str, message: &str) -> usize {
        if let Some(n) = self.by_path(key) {
            return Self::node_line(text, n);
        }
        let named = message
            .split(|c: char| !(c.is_ascii_alphanumeric() || c == '_' || c == '.'))
            .map(|w| w.trim_end_matches('.'))
            .filter(|w| w.contains('.') && *w != key);
        for w in named {
            if let Some(n) = self.by_path(w) {
                return Self::node_line(text, n);
            }
        }
        self.line_of_path(text, key)
    }

    fn node_line(text: &str, n: &Node) -> usize {
        line_of(
            text,
            n.key_span.as_ref().map_or(n.value_span.start, |s| s.start),
        )
    }

    /// Line of the key at `path`, or of its nearest ancestor present in the file (a default value has
    /// no line of its own), or 1.
    fn line_of_path(&self, text: &str, path: &str) -> usize {
        let mut p = path;
        loop {
            if let Some(n) = self.by_path(p) {
                return Self::node_line(text, n);
            }
            match p.rfind('.') {
                Some(i) => p = &p[..i],
                None => return 1,
            }
        }
    }

    /// The one node below `node` that `is` accepts, where exactly one does.
    fn only_inside(&self, node: &Node, is: impl Fn(&Node) -> bool) -> Option<&Node> {
        let prefix = format!("{}.", node.path);
        let mut inside = self
            .0
            .iter()
            .filter(|n| n.path.starts_with(&prefix) && is(n));
        match (inside.next(), inside.next()) {
            (Some(only), None) => Some(only),
            _ => None,
        }
    }

    /// Turns a deserialization error (span + message) into (dotted key, line, message).
    ///
    /// Internally tagged enums (`[[obstacle]]` with `type = ...`) are buffered by serde, so their errors
    /// carry the span of the whole table; the key is then recovered from the message (`unknown field
    /// `x``, `missing field `x``) or by finding the one value the "invalid type" message describes.
    fn explain(
        &self,
        text: &str,
        span: &std::ops::Range<usize>,
        message: &str,
    ) -> (String, usize, String) {
        let Some(node) = self.containing(span) else {
            return (
                String::new(),
                line_of(text, span.start),
                message.to_string(),
            );
        };
        let is_table_header = node.unexpected.is_none()
            && node
                .key_span
                .as_ref()
                .is_none_or(|k| !Self::contains(k, span));
        if is_table_header {
            let quoted = message.split('`').nth(1);
            if let Some(field) = quoted {
                let child = format!("{}.{}", node.path, field);
                if message.starts_with("unknown field") {
                    if let Some(c) = self.by_path(&child) {
                        return (child, Self::node_line(text, c), message.to_string());
                    }
                }
                if message.starts_with("missing field") {
                    return (child, Self::node_line(text, node), message.to_string());
                }
            }
            for prefix in ["invalid type: ", "invalid value: "] {
                if let Some(rest) = message.strip_prefix(prefix) {
                    let what = rest.split(", expected").next().unwrap_or("");
                    if let Some(only) =
                        self.only_inside(node, |n| n.unexpected.as_deref() == Some(what))
                    {
                        return (
                            only.path.clone(),
                            Self::node_line(text, only),
                            message.to_string(),
                        );
                    }
                }
            }
            // An array of the wrong length ([`exact_len`]): the one array inside with that many
            // entries.
            if let Some(n) = message
                .strip_prefix("invalid length ")
                .and_then(|rest| rest.split(',').next())
                .and_then(|n| n.parse::<usize>().ok())
            {
                let entries = |path: &str| {
                    let prefix = format!("{path}.");
                    self.0
                        .iter()
                        .filter(|c| {
                            c.path
                                .strip_prefix(&prefix)
                                .is_some_and(|i| i.parse::<usize>().is_ok())
                        })
                        .count()
                };
                if let Some(only) =
                    self.only_inside(node, |c| c.unexpected.is_none() && entries(&c.path) == n)
                {
                    return (
                        only.path.clone(),
                        Self::node_line(text, only),
                        message.to_string(),
                    );
                }
            }
        }
        (
            node.path.clone(),
            Self::node_line(text, node),
            message.to_string(),
        )
    }
}

/// serde's words for what a key wants, where they name a Rust type (`expected struct variant
/// ClothSource::Bcc`, `expected struct YarnToml`), in the scene file's terms: a table, with what it
/// holds where that helps.
fn plain_types(message: &str) -> String {
    let Some((head, wanted)) = message.split_once("expected struct ") else {
        return message.to_string();
    };
    let name = wanted.strip_prefix("variant ").unwrap_or(wanted);
    let table = match name {
        "ClothSource::Bcc" => "a table such as { path = \"FILE.bcc\" }",
        "ClothSource::Generator" => {
            "a table such as { pattern = \"stockinette\", wales = 10, courses = 10 }"
        }
        _ => "a table",
    };
    format!("{head}expected {table}")
}

/// The first obstacle of the scene's text that does not read on its own: the dotted key of what
/// is wrong in it (`obstacle.N.field`, `obstacle.N.keyframes.M…`) and serde's words. `None` when
/// every obstacle reads alone (or the text has none).
///
/// Why: serde buffers an internally tagged enum before it reads the variant, so an error inside an
/// obstacle carries the span of the whole `[[obstacle]]` array, which names the first obstacle
/// whichever is at fault. Read alone, in a document of its own, an obstacle's error is found within
/// it ([`Nodes::explain`]); a keyframe, a plain struct, is read alone too, to name its field.
fn obstacle_error(text: &str) -> Option<(String, String)> {
    let table: toml::Table = toml::from_str(text).ok()?;
    let obstacles = table.get("obstacle")?.as_array()?;
    let (n, obstacle) = obstacles
        .iter()
        .enumerate()
        .find(|(_, o)| Obstacle::deserialize((*o).clone()).is_err())?;
    let frames = obstacle.get("keyframes").and_then(|k| k.as_array());
    let keyframe = frames.into_iter().flatten().enumerate().find_map(|(m, f)| {
        let e = Keyframe::deserialize(f.clone()).err()?;
        let alone = toml::to_string(&f).ok()?;
        let e = toml::from_str::<Keyframe>(&alone).err().unwrap_or(e);
        let doc = toml::de::DeTable::parse(&alone).ok()?;
        let span = e.span().unwrap_or(0..0);
        let (key, _, message) =
            Nodes::new(doc.get_ref()).explain(&alone, &span, e.message().trim());
        // A missing field's span is the whole keyframe, which starts at its first key.
        let key = match message.strip_prefix("missing field `") {
            Some(rest) => rest.split('`').next().unwrap_or_default().to_string(),
            None => key,
        };
        let key = match key.as_str() {
            "" => format!("obstacle.{n}.keyframes.{m}"),
            k => format!("obstacle.{n}.keyframes.{m}.{k}"),
        };
        Some((key, message))
    });
    if keyframe.is_some() {
        return keyframe;
    }
    #[derive(Deserialize)]
    #[serde(deny_unknown_fields)]
    struct Alone {
        #[allow(dead_code)]
        obstacle: Vec<Obstacle>,
    }
    let mut doc = toml::Table::new();
    doc.insert(
        "obstacle".into(),
        toml::Value::Array(vec![obstacle.clone()]),
    );
    let alone = toml::to_string(&doc).ok()?;
    let e = toml::from_str::<Alone>(&alone).err()?;
    let parsed = toml::de::DeTable::parse(&alone).ok()?;
    let span = e.span().unwrap_or(0..0);
    let (key, _, message) = Nodes::new(parsed.get_ref()).explain(&alone, &span, e.message().trim());
    let inner = key
        .strip_prefix("obstacle.0")
        .filter(|k| k.is_empty() || k.starts_with('.'))?;
    if inner.is_empty() {
        // A value the message does not single out (`radius = [1]` beside `center = [0, 0, 0]`):
        // the field that gives the same words read with the type alone.
        let fields = obstacle.as_table()?;
        let culprit = fields.iter().filter(|(k, _)| *k != "type").find(|(k, v)| {
            let mut one = toml::Table::new();
            if let Some(tag) = fields.get("type") {
                one.insert("type".into(), tag.clone());
            }
            one.insert((*k).clone(), (*v).clone());
            Obstacle::deserialize(toml::Value::Table(one))
                .is_err_and(|e| e.message().trim() == message)
        });
        if let Some((k, _)) = culprit {
            return Some((format!("obstacle.{n}.{k}"), message));
        }
    }
    Some((format!("obstacle.{n}{inner}"), message))
}

/// The scene's arrays of tables (`[[cloth]]`, …); its other sections are single tables.
const TABLE_ARRAYS: [&str; 6] = ["cloth", "pin", "obstacle", "ball", "figure", "seam"];

/// What serde's words on a scene's structure mean in the scene's terms, for the common mistakes:
/// `[cloth]` for `[[cloth]]` and the reverse, a `[[pin]]` with both or neither of its forms, a
/// source named as a string. `None` for anything else.
fn structure_hint(key: &str, message: &str) -> Option<String> {
    let parts: Vec<&str> = key.split('.').collect();
    if message.starts_with("invalid type: map, expected a sequence") && TABLE_ARRAYS.contains(&key)
    {
        return Some(format!(
            "write [[{key}]], one per entry: [{key}] is a single table"
        ));
    }
    if let [top, index] = parts[..] {
        let sections = [
            "simulation",
            "yarn",
            "contact",
            "camera",
            "damping",
            "relax",
        ];
        if sections.contains(&top) && index.parse::<usize>().is_ok() {
            return Some(format!(
                "write [{top}]: it is a single table, not [[{top}]]"
            ));
        }
    }
    let forms = match parts[..] {
        ["pin", _] => "range = { first, last } or region = { min, max }",
        ["cloth", _, "source"] => "generator = { … } or bcc = { path = … }",
        ["obstacle", _] => "type = \"plane\", \"sphere\" or \"capsule\" with its fields",
        _ => "",
    };
    if message.starts_with("wanted exactly 1 element") && !forms.is_empty() {
        return Some(format!("give exactly one of {forms}"));
    }
    if message.contains("unit variant, expected a table") && !forms.is_empty() {
        return Some(format!("it takes a table: {forms}"));
    }
    None
}

/// Parses the value of a `--set` assignment as a TOML value (a bare word becomes a string).
fn parse_set_value(value: &str) -> Result<toml::Value, String> {
    let doc = format!("v = {value}");
    match doc.parse::<toml::Table>() {
        // More than `v`: the value went on past a line break into assignments or tables of its
        // own, which would be dropped without a word.
        Ok(t) if t.len() > 1 => Err(format!(
            "{value:?} is more than one TOML value (it goes on to another line)"
        )),
        Ok(mut t) => Ok(t.remove("v").expect("the key just written")),
        Err(e) => {
            let bare = !value.is_empty()
                && value
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
            let digits = value.strip_prefix(['-', '+']).unwrap_or(value);
            if !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit()) {
                Err(format!(
                    "{value} is too large for a TOML integer (64 bits; no key takes one so large)"
                ))
            } else if bare {
                Ok(toml::Value::String(value.to_string()))
            } else {
                Err(format!(
                    "{value:?} is not a TOML value: {}",
                    e.message().trim()
                ))
            }
        }
    }
}

/// Sets `key` (dotted, array entries by index) in the document; the parent of the last component
/// must exist, the last component may be new (deserialization rejects it if the scene has no such key).
fn set_path(doc: &mut toml::Value, key: &str, value: toml::Value) -> Result<(), String> {
    let parts: Vec<&str> = key.split('.').map(str::trim).collect();
    let (last, parents) = parts.split_last().expect("non-empty key");
    let mut here = doc;
    let mut walked = String::new();
    for p in parents.iter().chain(std::iter::once(last)) {
        let is_last = std::ptr::eq(p, last);
        here = match here {
            toml::Value::Table(t) => {
                if is_last {
                    t.insert(p.to_string(), value);
                    return Ok(());
                }
                t.get_mut(*p)
                    .ok_or_else(|| format!("unknown key `{}`", Nodes::join(&walked, p)))?
            }
            toml::Value::Array(a) => {
                let i: usize = p.parse().map_err(|_| {
                    format!("`{walked}` is a list; index it with a number, not `{p}`")
                })?;
                let n = a.len();
                let slot = a.get_mut(i).ok_or_else(|| {
                    format!("`{walked}` has {n} entries, so index {i} does not exist")
                })?;
                if is_last {
                    *slot = value;
                    return Ok(());
                }
                slot
            }
            _ => return Err(format!("`{walked}` is a value, not a table")),
        };
        walked = Nodes::join(&walked, p);
    }
    unreachable!("the loop returns at the last component")
}
