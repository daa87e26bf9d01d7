//! Knit generators: Catmull-Rom control points of stockinette, garter, 1×1 rib and tubes.
//!
//! (Loop geometry in progress; `generate` returns an error until it lands.)

use crate::scene::Pattern;
use crate::state::Curve;

/// Fewest wales a tube may have (its circumference must leave room for the loops' depth).
pub const MIN_TUBE_WALES: u32 = 8;
/// Most loops one generated piece may have.
pub const MAX_LOOPS: u32 = 20_000_000;

/// A generated piece of knit.
#[derive(Clone, Debug)]
pub struct Knit {
    pub curves: Vec<Curve>,
    /// Per curve, per control point: the (wale, course) of the loop the point belongs to.
    pub point_loop: Vec<Vec<[u32; 2]>>,
    /// Number of knit loops.
    pub loops: u32,
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
    #[error("the knit generator is not written yet")]
    NotYet,
}

/// Generates `wales × courses` loops of `pattern` for yarn radius `radius` (cm).
pub fn generate(
    pattern: Pattern,
    wales: u32,
    courses: u32,
    radius: f32,
) -> Result<Knit, KnitError> {
    let _ = (pattern, wales, courses, radius);
    Err(KnitError::NotYet)
}
