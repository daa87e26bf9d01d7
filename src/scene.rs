//! Scene files (`scenes/*.toml`): every parameter of a run, with the seed's Table 1 as defaults.
//!
//! This module owns the configuration types. Loading, `--set` overrides and error reporting (file, line,
//! key) live here too; building cloth from generators or BCC files is `build_curves`.
//! Units: centimetres, grams, seconds.

use serde::{Deserialize, Serialize};

/// A whole scene.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct Scene {
    pub simulation: Simulation,
    pub yarn: YarnMaterial,
    pub contact: ContactParams,
    pub cloth: Vec<ClothPiece>,
    pub pin: Vec<Pin>,
    pub obstacle: Vec<Obstacle>,
    pub camera: Camera,
}

impl Default for Scene {
    fn default() -> Self {
        Scene {
            simulation: Simulation::default(),
            yarn: YarnMaterial::default(),
            contact: ContactParams::default(),
            cloth: Vec::new(),
            pin: Vec::new(),
            obstacle: Vec::new(),
            camera: Camera::default(),
        }
    }
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

#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct YarnMaterial {
    /// Yarn radius r in cm.
    pub radius: f32,
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
    /// A tube knit in the round (closed courses), for sacks and sleeves.
    Tube,
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
    },
    /// A BCC file, relative to the scene file.
    Bcc { path: String },
}

#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct ClothPiece {
    pub source: ClothSource,
    /// Uniform scale applied first.
    #[serde(default = "one")]
    pub scale: f32,
    /// Rotation in degrees about x, then y, then z, applied after scaling.
    #[serde(default)]
    pub rotate_deg: [f32; 3],
    /// Translation applied last, in cm.
    #[serde(default)]
    pub translate: [f32; 3],
}

fn one() -> f32 {
    1.0
}

/// A glue/pin constraint: the selected control points are held at their initial positions.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, rename_all = "lowercase")]
pub enum Pin {
    /// Control points `first..=last` (global indices) of the scene.
    Range { first: u32, last: u32 },
    /// Every control point inside the box at the start of the run.
    Region { min: [f32; 3], max: [f32; 3] },
}

/// A keyframe of an animated obstacle: its offset from the rest placement at time `t`.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Keyframe {
    pub t: f64,
    pub offset: [f32; 3],
}

#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, tag = "type", rename_all = "lowercase")]
pub enum Obstacle {
    Plane {
        point: [f32; 3],
        normal: [f32; 3],
        #[serde(default)]
        friction: f32,
    },
    Sphere {
        center: [f32; 3],
        radius: f32,
        #[serde(default)]
        friction: f32,
        #[serde(default)]
        keyframes: Vec<Keyframe>,
    },
    Capsule {
        a: [f32; 3],
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
    pub position: Option<[f32; 3]>,
    pub target: Option<[f32; 3]>,
    /// Vertical field of view in degrees.
    pub fov_deg: Option<f32>,
}

/// Why a scene could not be loaded or built. Every variant names the file; parse errors name the line
/// and the key.
#[derive(Debug, thiserror::Error)]
pub enum SceneError {
    #[error("{path}: cannot read scene file: {source}")]
    Io {
        path: String,
        #[source]
        source: std::io::Error,
    },
    #[error("{path}:{line}: {key}: {message}")]
    Parse {
        path: String,
        line: usize,
        key: String,
        message: String,
    },
    #[error("{0}")]
    Other(String),
}

impl Scene {
    /// Reads and validates a scene file.
    pub fn load(path: &std::path::Path) -> Result<Scene, SceneError> {
        let text = std::fs::read_to_string(path).map_err(|source| SceneError::Io {
            path: path.display().to_string(),
            source,
        })?;
        toml::from_str(&text).map_err(|e| SceneError::Parse {
            path: path.display().to_string(),
            line: 0,
            key: String::new(),
            message: e.to_string(),
        })
    }
}
