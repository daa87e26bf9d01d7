//! The simulation driver: owns the flat state arrays and runs the time step of DESIGN §6.
//!
//! (Skeleton: the contact interface below is fixed; `Sim` itself is filled in by the mechanics work.)

use crate::state::Topology;

/// Named per-step statistics a contact model reports (`("touching_pairs", 1234.0)`, ...). The driver
/// sums or averages them into the frame's JSON record under the same names.
#[derive(Clone, Debug, Default)]
pub struct ContactStats {
    pub values: Vec<(&'static str, f64)>,
}

impl ContactStats {
    pub fn set(&mut self, name: &'static str, value: f64) {
        if let Some(v) = self.values.iter_mut().find(|(n, _)| *n == name) {
            v.1 = value;
        } else {
            self.values.push((name, value));
        }
    }
}

/// A yarn–yarn contact force model (none, exact, ACL). Called once per step, after gravity and rod
/// forces are in `force`, with positions `pos` and velocities `vel` at the start of the step.
pub trait ContactForce: Send {
    /// Adds the contact force on every control point into `force` (xyz; w untouched).
    fn add_forces(
        &mut self,
        topo: &Topology,
        pos: &[[f32; 4]],
        vel: &[[f32; 4]],
        force: &mut [[f32; 4]],
        stats: &mut ContactStats,
    ) -> Result<(), ContactError>;
}

/// A contact model could not produce a force this step.
#[derive(Debug, thiserror::Error)]
pub enum ContactError {
    #[error("contact force is not finite at control point {point} (yarns passed through each other or the time step is too large)")]
    NotFinite { point: usize },
    #[error("{0}")]
    Other(String),
}
