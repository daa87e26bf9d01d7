//! A walking figure: a mannequin made of capsules whose joints follow a walk cycle (`[[figure]]`).
//!
//! [`Figure::parts`] gives the 14 capsules of one figure (ends and radius, in cm) at a time `t`,
//! analytically, so a walk runs for as long as the simulation does; the CPU step turns them into
//! [`crate::layout::ObstacleShape`] capsules each step, with the velocities of both ends over the step
//! (kinematic obstacles: they move the cloth, nothing moves them), and the GPU step reads the same
//! shapes. Frame: the figure stands on `position` (the point between its feet), up is +y, it faces and
//! walks towards +z, turned about the vertical by `heading_deg`. Every length is a fraction of
//! `height` except the torso (`chest`) and the shoulder joints (`shoulders`), which a garment may
//! need to fit.
//!
//! The walk: the thighs swing about the hips by ±`leg_swing_deg` (left and right in opposition) and
//! the knees bend during each leg's swing forward; the arms swing about the shoulders, opposite to
//! the leg of their side, by ±`arm_swing_deg`; the figure moves forward at the speed at which a
//! straight planted leg would carry it (`2 · stride / period`, stride = 2 · leg · sin(swing)) unless
//! `speed` is given. Before `start` it stands still, arms going from `arms_start_deg` to `arms_deg`
//! (measured out from hanging straight down); the swing then grows to its amplitude over half a
//! period. Each part is rigid in the figure's motion, but the step moves a capsule's two ends with
//! their own velocities, so a swinging limb drags the cloth next to it at the speed of its axis.

use serde::{Deserialize, Serialize};

/// One `[[figure]]` of a scene.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct Figure {
    /// Standing height (cm).
    pub height: f32,
    /// The ground point between the feet at t = 0 (cm).
    #[serde(deserialize_with = "crate::scene::exact_len::array")]
    pub position: [f32; 3],
    /// Turn about +y of the walking direction, from +z (degrees).
    pub heading_deg: f32,
    /// Torso width and depth (cm); default 0.27 and 0.16 × height.
    #[serde(deserialize_with = "crate::scene::exact_len::option_array")]
    pub chest: Option<[f32; 2]>,
    /// Distance between the shoulder joints (cm); default 0.30 × height.
    pub shoulders: Option<f32>,
    /// Gait cycle: two steps (s).
    pub period: f32,
    /// When the walk starts (s); the arms take this long to reach `arms_deg`.
    pub start: f32,
    /// Forward speed (cm/s); default: the planted-leg speed.
    pub speed: Option<f32>,
    /// Amplitude of the thighs' swing (degrees).
    pub leg_swing_deg: f32,
    /// Largest knee bend, during a leg's swing forward (degrees).
    pub knee_bend_deg: f32,
    /// Amplitude of the arms' swing (degrees).
    pub arm_swing_deg: f32,
    /// The arms' angle out from hanging straight down while walking (degrees; 90 = held sideways).
    pub arms_deg: f32,
    /// The arms' angle at t = 0 (degrees); default `arms_deg`.
    pub arms_start_deg: Option<f32>,
    /// Elbow bend (degrees).
    pub elbow_deg: f32,
    /// Friction of the figure's surface against yarn.
    pub friction: f32,
}

impl Default for Figure {
    fn default() -> Self {
        Figure {
            height: 180.0,
            position: [0.0; 3],
            heading_deg: 0.0,
            chest: None,
            shoulders: None,
            period: 1.2,
            start: 0.5,
            speed: None,
            leg_swing_deg: 20.0,
            knee_bend_deg: 40.0,
            arm_swing_deg: 15.0,
            arms_deg: 10.0,
            arms_start_deg: None,
            elbow_deg: 15.0,
            friction: 0.3,
        }
    }
}

/// One capsule of a figure at a time: its two ends and radius (cm); `a == b` is a sphere.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Part {
    pub a: [f32; 3],
    pub b: [f32; 3],
    pub radius: f32,
}

/// Number of parts of a figure.
pub const PARTS: usize = 14;

/// The parts in the order [`Figure::parts`] returns them.
pub const PART_NAMES: [&str; PARTS] = [
    "head",
    "neck",
    "shoulders",
    "torso_left",
    "torso_right",
    "hips",
    "upper_arm_left",
    "upper_arm_right",
    "forearm_left",
    "forearm_right",
    "thigh_left",
    "thigh_right",
    "shin_left",
    "shin_right",
];

type V = [f64; 3];

fn add(a: V, b: V) -> V {
    [a[0] + b[0], a[1] + b[1], a[2] + b[2]]
}

fn scale(a: V, s: f64) -> V {
    [a[0] * s, a[1] * s, a[2] * s]
}

/// The parts as they are built, in the figure's own frame: (a, b, radius).
#[derive(Default)]
struct Parts {
    list: [(V, V, f64); PARTS],
    len: usize,
}

impl Parts {
    fn push(&mut self, p: (V, V, f64)) {
        self.list[self.len] = p;
        self.len += 1;
    }
}

impl Figure {
    /// Torso width and depth (cm).
    pub fn chest(&self) -> [f64; 2] {
        let h = self.height as f64;
        self.chest
            .map(|c| [c[0] as f64, c[1] as f64])
            .unwrap_or([0.27 * h, 0.16 * h])
    }

    /// Distance between the shoulder joints (cm).
    pub fn shoulders(&self) -> f64 {
        self.shoulders
            .map(|s| s as f64)
            .unwrap_or(0.30 * self.height as f64)
    }

    /// Hip joint to knee, knee to ground (cm).
    fn legs(&self) -> (f64, f64) {
        let h = self.height as f64;
        (0.245 * h, 0.255 * h)
    }

    /// Forward speed while walking (cm/s).
    pub fn walk_speed(&self) -> f64 {
        if let Some(s) = self.speed {
            return s as f64;
        }
        let (thigh, shin) = self.legs();
        let stride = 2.0 * (thigh + shin) * (self.leg_swing_deg as f64).to_radians().sin();
        2.0 * stride / self.period as f64
    }

    /// The checks a scene makes: `Err((field, message))` names the field.
    pub fn check(&self) -> Result<(), (&'static str, String)> {
        let pos = |k: &'static str, v: f32| {
            if v.is_finite() && v > 0.0 {
                Ok(())
            } else {
                Err((k, format!("must be a finite number > 0, got {v}")))
            }
        };
        let fin = |k: &'static str, v: f32| {
            if v.is_finite() {
                Ok(())
            } else {
                Err((k, format!("must be finite, got {v}")))
            }
        };
        pos("height", self.height)?;
        pos("period", self.period)?;
        if !(self.start.is_finite() && self.start >= 0.0) {
            return Err((
                "start",
                format!("must be a finite time ≥ 0 s, got {}", self.start),
            ));
        }
        for v in self.position {
            fin("position", v)?;
        }
        fin("heading_deg", self.heading_deg)?;
        if let Some(c) = self.chest {
            pos("chest", c[0])?;
            pos("chest", c[1])?;
            if c[1] > c[0] {
                return Err((
                    "chest",
                    format!("the depth {} may not exceed the width {}", c[1], c[0]),
                ));
            }
        }
        if let Some(s) = self.shoulders {
            pos("shoulders", s)?;
        }
        if let Some(s) = self.speed {
            if !(s.is_finite() && s >= 0.0) {
                return Err(("speed", format!("must be a finite speed ≥ 0 cm/s, got {s}")));
            }
        }
        let angle = |k: &'static str, v: f32, max: f32| {
            if v.is_finite() && (0.0..=max).contains(&v) {
                Ok(())
            } else {
                Err((
                    k,
                    format!("must be an angle in [0, {max}] degrees, got {v}"),
                ))
            }
        };
        angle("leg_swing_deg", self.leg_swing_deg, 60.0)?;
        angle("knee_bend_deg", self.knee_bend_deg, 120.0)?;
        angle("arm_swing_deg", self.arm_swing_deg, 60.0)?;
        angle("arms_deg", self.arms_deg, 120.0)?;
        if let Some(a) = self.arms_start_deg {
            angle("arms_start_deg", a, 120.0)?;
        }
        angle("elbow_deg", self.elbow_deg, 150.0)?;
        if !(self.friction.is_finite() && self.friction >= 0.0) {
            return Err(("friction", format!("must be ≥ 0, got {}", self.friction)));
        }
        Ok(())
    }

    /// The figure's capsules at time `t` (s), in the order of [`PART_NAMES`]. Allocates nothing (the
    /// CPU step calls it every step).
    pub fn parts(&self, t: f64) -> [Part; PARTS] {
        self.parts_about(t, [0.0; 3])
    }

    /// [`Figure::parts`] relative to `origin`: each end minus `origin`, taken in f64 before it is
    /// rounded to f32, so a figure far from the world origin moves as smoothly in a simulation's
    /// local frame ([`crate::sim::Sim::origin`]) as one at the origin does (its ends rounded to
    /// f32 at 200 cm would move in steps of 1.5e-5 cm, which over a step of 62 µs is 0.25 cm/s).
    pub fn parts_about(&self, t: f64, origin: [f32; 3]) -> [Part; PARTS] {
        use std::f64::consts::PI;
        let h = self.height as f64;
        let [width, depth] = self.chest();
        let period = self.period as f64;
        let start = self.start as f64;
        // Swing amplitude: 0 before `start`, grows linearly to 1 over half a period.
        let ramp_len = 0.5 * period;
        let ramp = ((t - start) / ramp_len).clamp(0.0, 1.0);
        // Forward distance: the integral of speed × ramp.
        let walked = if t <= start {
            0.0
        } else if t <= start + ramp_len {
            0.5 * (t - start) * (t - start) / ramp_len
        } else {
            0.5 * ramp_len + (t - start - ramp_len)
        } * self.walk_speed();
        let phase = 2.0 * PI * ((t - start).max(0.0) / period);
        let arms_start = self.arms_start_deg.unwrap_or(self.arms_deg) as f64;
        let lower = if start > 0.0 {
            let s = (t / start).clamp(0.0, 1.0);
            s * s * (3.0 - 2.0 * s)
        } else {
            1.0
        };
        let abduction = (arms_start + (self.arms_deg as f64 - arms_start) * lower).to_radians();

        let (thigh, shin) = self.legs();
        let hip_y = thigh + shin;
        let shoulder_y = 0.815 * h;
        let torso_r = 0.5 * depth;
        let torso_x = (0.5 * width - torso_r).max(0.0);
        let mut parts = Parts::default();
        let head = [0.0, 0.925 * h, 0.0];
        parts.push((head, head, 0.062 * h));
        parts.push(([0.0, 0.80 * h, 0.0], [0.0, 0.87 * h, 0.0], 0.03 * h));
        let bar_r = (0.045 * h).min(torso_r);
        let bar_x = (0.5 * width - bar_r).max(0.0);
        parts.push(([-bar_x, 0.80 * h, 0.0], [bar_x, 0.80 * h, 0.0], bar_r));
        // The torso's top is level with the shoulder bar's.
        let torso_top = (0.80 * h + bar_r - torso_r).max(hip_y + 0.03 * h);
        let torso_bottom = hip_y + 0.03 * h;
        parts.push((
            [torso_x, torso_bottom, 0.0],
            [torso_x, torso_top, 0.0],
            torso_r,
        ));
        parts.push((
            [-torso_x, torso_bottom, 0.0],
            [-torso_x, torso_top, 0.0],
            torso_r,
        ));
        let hip_r = (0.065 * h).min(torso_r);
        let hip_x = (0.5 * width - hip_r).max(0.0).min(0.08 * h);
        parts.push((
            [-hip_x, hip_y + 0.02 * h, 0.0],
            [hip_x, hip_y + 0.02 * h, 0.0],
            hip_r,
        ));

        // Left is +x (the figure faces +z); a side's arm swings opposite to its leg.
        let swing = |amp: f32, side: f64| ramp * (amp as f64).to_radians() * side * phase.sin();
        let (upper, fore) = (0.185 * h, 0.24 * h);
        let elbow = (self.elbow_deg as f64).to_radians();
        let mut arms = [[[0.0; 3]; 3]; 2];
        for (k, side) in [1.0, -1.0].into_iter().enumerate() {
            let shoulder = [side * 0.5 * self.shoulders(), shoulder_y, 0.0];
            // Out from hanging by the abduction, then swung forward (+z) about the lateral axis.
            let psi = -swing(self.arm_swing_deg, side);
            let dir = |bend: f64| -> V {
                let (sb, cb) = abduction.sin_cos();
                let down = [side * sb, -cb, 0.0];
                let ang = psi + bend;
                let (s, c) = ang.sin_cos();
                [down[0], down[1] * c, -down[1] * s]
            };
            let elbow_p = add(shoulder, scale(dir(0.0), upper));
            let hand = add(elbow_p, scale(dir(elbow), fore));
            arms[k] = [shoulder, elbow_p, hand];
        }
        for arm in &arms {
            parts.push((arm[0], arm[1], 0.032 * h));
        }
        for arm in &arms {
            parts.push((arm[1], arm[2], 0.027 * h));
        }
        // The thighs stay inside the torso's width (a garment fitted to it fits them too).
        let hip_joint_x = (0.5 * width - 0.065 * h).clamp(0.055 * h, 0.085 * h);
        let mut legs = [[[0.0; 3]; 3]; 2];
        for (k, side) in [1.0, -1.0].into_iter().enumerate() {
            let hip = [side * hip_joint_x, hip_y, 0.0];
            let theta = swing(self.leg_swing_deg, side);
            // The knee bends while the thigh moves forward (d theta / dt > 0).
            let bend =
                ramp * (self.knee_bend_deg as f64).to_radians() * (side * phase.cos()).max(0.0);
            let knee = add(hip, [0.0, -thigh * theta.cos(), thigh * theta.sin()]);
            let ankle = add(
                knee,
                [
                    0.0,
                    -shin * (theta - bend).cos(),
                    shin * (theta - bend).sin(),
                ],
            );
            legs[k] = [hip, knee, ankle];
        }
        for leg in &legs {
            parts.push((leg[0], leg[1], 0.055 * h));
        }
        for leg in &legs {
            parts.push((leg[1], leg[2], 0.04 * h));
        }

        let (sh, ch) = (self.heading_deg as f64).to_radians().sin_cos();
        let p0: V = std::array::from_fn(|k| self.position[k] as f64 - origin[k] as f64);
        let place = |p: V| -> [f32; 3] {
            let z = p[2] + walked;
            [
                (p0[0] + ch * p[0] + sh * z) as f32,
                (p0[1] + p[1]) as f32,
                (p0[2] - sh * p[0] + ch * z) as f32,
            ]
        };
        assert_eq!(parts.len, PARTS);
        parts.list.map(|(a, b, r)| Part {
            a: place(a),
            b: place(b),
            radius: r as f32,
        })
    }
}
