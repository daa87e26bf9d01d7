//! Camera maths for frame capture, written once and used both by the renderer and by tests that
//! project points to check the image.
//!
//! Conventions are WebGPU's: right-handed world, view space looking down −z, clip-space depth in
//! [0, 1], NDC y up; pixel (0, 0) is the top-left corner of the image and pixel `(i, j)` covers
//! `[i, i+1) × [j, j+1)`.

use super::RenderError;
use glam::{Mat4, Vec3, Vec4};

/// Vertical field of view used when the scene names none.
pub const DEFAULT_FOV_DEG: f32 = 35.0;

/// A resolved camera: where it is, what it looks at, and its frustum.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct CameraView {
    pub eye: Vec3,
    pub target: Vec3,
    pub up: Vec3,
    pub fov_y_deg: f32,
    /// Width / height of the image.
    pub aspect: f32,
    pub near: f32,
    pub far: f32,
}

/// An axis-aligned box bounding some geometry (empty when `min > max`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Bounds {
    pub min: Vec3,
    pub max: Vec3,
}

impl Bounds {
    pub fn empty() -> Self {
        Bounds {
            min: Vec3::splat(f32::INFINITY),
            max: Vec3::splat(f32::NEG_INFINITY),
        }
    }
    pub fn is_empty(&self) -> bool {
        self.min.x > self.max.x
    }
    pub fn add_point(&mut self, p: Vec3) {
        self.min = self.min.min(p);
        self.max = self.max.max(p);
    }
    pub fn center(&self) -> Vec3 {
        (self.min + self.max) * 0.5
    }
    /// Radius of the sphere about [`Self::center`] that holds the box.
    pub fn radius(&self) -> f32 {
        (self.max - self.min).length() * 0.5
    }
}

/// The direction (from the target towards the eye) of the automatic camera: along the cloth's thinnest
/// extent, so a swatch is seen face-on, tilted up and to the side so depth shows.
fn default_direction(cloth: &Bounds) -> Vec3 {
    let ext = cloth.max - cloth.min;
    let thin = if ext.x <= ext.y && ext.x <= ext.z {
        0
    } else if ext.y <= ext.z {
        1
    } else {
        2
    };
    let mut d = Vec3::new(0.25, 0.35, 0.3);
    d[thin] = 1.0;
    d.normalize()
}

/// Smallest distance from `target` along unit `dir` at which all eight corners of `b` lie inside the
/// view (half-angle tangents `tan_y`, `tan_x`), plus 5% margin: a corner at lateral offsets `(x, y)`
/// and `z` closer to the eye than the target fits when `|x| ≤ tan_x (d − z)` and `|y| ≤ tan_y (d − z)`.
fn fit_distance(b: &Bounds, target: Vec3, dir: Vec3, tan_y: f32, tan_x: f32) -> f32 {
    let up = if dir.y.abs() > 0.99 {
        Vec3::NEG_Z
    } else {
        Vec3::Y
    };
    let right = (-dir).cross(up).normalize();
    let up = right.cross(-dir);
    let mut d = 0.0f32;
    for k in 0..8 {
        let p = Vec3::new(
            if k & 1 == 0 { b.min.x } else { b.max.x },
            if k & 2 == 0 { b.min.y } else { b.max.y },
            if k & 4 == 0 { b.min.z } else { b.max.z },
        ) - target;
        let z = p.dot(dir);
        d = d
            .max(z + p.dot(right).abs() / tan_x)
            .max(z + p.dot(up).abs() / tan_y);
    }
    // Never put the eye inside the box.
    let inside = (b.max - b.min).length() * 0.5 + (b.center() - target).length();
    d.max(inside * 1.01) * 1.05
}

/// How far from the origin a camera's position and target may lie (cm): 100 km, where an f32
/// still resolves 1 cm (beyond it the view matrix cannot tell a yarn's width from nothing, and
/// squared distances overflow not much further out).
pub const MAX_REACH: f64 = 1e7;

/// Whether a camera at `eye` looking at `target` has no direction to look in: the two within a
/// millionth of the eye's distance from the origin (plus 1e-6 cm) of each other, where the f32
/// view matrix cannot tell them apart. In f64, as the scene's check uses it too.
pub fn coincide(eye: [f32; 3], target: [f32; 3]) -> bool {
    let len = |v: [f64; 3]| v.iter().map(|x| x * x).sum::<f64>().sqrt();
    let e = eye.map(f64::from);
    let d = [0, 1, 2].map(|k| target[k] as f64 - e[k]);
    len(d) <= 1e-6 * (1.0 + len(e))
}

impl CameraView {
    /// Resolves the scene camera: missing fields frame `cloth`; the depth range covers `all` (cloth and
    /// obstacles), so nothing drawn is clipped by the near or far plane.
    pub fn resolve(
        cam: &crate::scene::Camera,
        cloth: &Bounds,
        all: &Bounds,
        width: u32,
        height: u32,
    ) -> Result<CameraView, RenderError> {
        let bad = |m: String| Err(RenderError::InvalidInput(format!("camera: {m}")));
        if let Some(f) = cam.fov_deg {
            if !(f.is_finite() && f > 0.0 && f < 180.0) {
                return bad(format!("fov_deg = {f} must lie in (0, 180)"));
            }
        }
        for (name, v) in [("position", cam.position), ("target", cam.target)] {
            if let Some(p) = v {
                if !p.iter().all(|x| x.is_finite()) {
                    return bad(format!("{name} {p:?} is not finite"));
                }
                // (In f64: the f32 length of a point at 1e30 overflows to infinity, and such a
                // camera was said to coincide with its target.)
                let reach = p.iter().map(|&x| (x as f64).powi(2)).sum::<f64>().sqrt();
                if reach > MAX_REACH {
                    return bad(format!(
                        "{name} {p:?} lies {reach:.3e} cm from the origin; a camera is drawn in f32 and must stay within {MAX_REACH:e} cm of it"
                    ));
                }
            }
        }
        let aspect = width as f32 / height as f32;
        let fov_y_deg = cam.fov_deg.unwrap_or(DEFAULT_FOV_DEG);
        let half_y = (fov_y_deg.to_radians() * 0.5).tan();
        // The narrower of the two half-angles decides the distance that fits a sphere in view.
        let half_min = half_y.min(half_y * aspect).atan();
        let c = if cloth.is_empty() {
            Vec3::ZERO
        } else {
            cloth.center()
        };
        let target = cam.target.map(Vec3::from_array).unwrap_or(c);
        let eye = match cam.position {
            Some(p) => Vec3::from_array(p),
            None => {
                let dir = default_direction(cloth);
                if cloth.is_empty() {
                    // Nothing to frame: a unit sphere about the target.
                    target + dir * (1.0 / half_min.sin())
                } else {
                    target + dir * fit_distance(cloth, target, dir, half_y, half_y * aspect)
                }
            }
        };
        // A camera placed by the cloth is checked as one given is: the cloth far away (a state at
        // 1e8 cm) was said to make the camera coincide with its target.
        for (name, p) in [("position", eye), ("target", target)] {
            let reach = p
                .to_array()
                .iter()
                .map(|&x| (x as f64).powi(2))
                .sum::<f64>()
                .sqrt();
            if reach.is_nan() || reach > MAX_REACH {
                let cloth_reach = if cloth.is_empty() {
                    0.0
                } else {
                    (cloth.center().as_dvec3().length()) + cloth.radius() as f64
                };
                // A narrow field of view the scene gives, not the cloth, puts a camera that
                // frames the cloth that far: name it, not a position the scene never gave.
                if let (None, Some(f), "position") = (cam.position, cam.fov_deg, name) {
                    let f = if f < 1e-3 {
                        format!("{f:e}")
                    } else {
                        format!("{f}")
                    };
                    return bad(format!(
                        "camera.fov_deg = {f} is too narrow: the position that frames the cloth in it lies {reach:.3e} cm from the origin (the cloth reaches {cloth_reach:.3e} cm from it), and a camera is drawn in f32 and must stay within {MAX_REACH:e} cm of the origin; widen camera.fov_deg or give camera.position"
                    ));
                }
                return bad(format!(
                    "the {name} {p} that frames the cloth lies {reach:.3e} cm from the origin (the cloth reaches {cloth_reach:.3e} cm from it); a camera is drawn in f32 and must stay within {MAX_REACH:e} cm of the origin"
                ));
            }
        }
        if coincide(eye.to_array(), target.to_array()) {
            return bad(format!("position {eye} and target {target} coincide"));
        }
        let fwd = (target - eye).normalize();
        // +y is up (gravity is −y); when looking straight along y, use −z so the image stays upright.
        let up = if fwd.y.abs() > 0.99 {
            Vec3::NEG_Z
        } else {
            Vec3::Y
        };
        let scene = if all.is_empty() { *cloth } else { *all };
        let (near, far) = if scene.is_empty() {
            (0.01, 100.0)
        } else {
            let d = (scene.center() - eye).length();
            let rad = scene.radius();
            let far = (d + rad) * 1.01 + 1e-3;
            let near = ((d - rad) * 0.99).max(far * 1e-4);
            // Never past the cloth: a solid far away (a sphere 2e5 cm off) made the depth range
            // so deep that its floor, 1e-4 of it, put the near plane behind the cloth, and the
            // image showed no yarn. The cloth's own nearest distance bounds it (f32 depth keeps
            // a fine enough resolution over the cloth at 1e-7 of the range).
            let near = if cloth.is_empty() {
                near
            } else {
                let dc = (cloth.center() - eye).length();
                let rc = cloth.radius();
                let cloth_near = if dc > rc { (dc - rc) * 0.99 } else { rc * 1e-3 };
                near.min(cloth_near).max(far * 1e-7)
            };
            (near, far)
        };
        Ok(CameraView {
            eye,
            target,
            up,
            fov_y_deg,
            aspect,
            near,
            far,
        })
    }

    /// World → view: right-handed, the eye at the origin looking down −z.
    pub fn view(&self) -> Mat4 {
        let f = (self.target - self.eye).normalize();
        let s = f.cross(self.up).normalize();
        let u = s.cross(f);
        Mat4::from_cols(
            Vec4::new(s.x, u.x, -f.x, 0.0),
            Vec4::new(s.y, u.y, -f.y, 0.0),
            Vec4::new(s.z, u.z, -f.z, 0.0),
            Vec4::new(-s.dot(self.eye), -u.dot(self.eye), f.dot(self.eye), 1.0),
        )
    }

    /// View → clip: perspective with depth 0 at `near` and 1 at `far`.
    pub fn projection(&self) -> Mat4 {
        let h = 1.0 / (self.fov_y_deg.to_radians() * 0.5).tan();
        let w = h / self.aspect;
        let r = self.far / (self.near - self.far);
        Mat4::from_cols(
            Vec4::new(w, 0.0, 0.0, 0.0),
            Vec4::new(0.0, h, 0.0, 0.0),
            Vec4::new(0.0, 0.0, r, -1.0),
            Vec4::new(0.0, 0.0, r * self.near, 0.0),
        )
    }

    /// World → clip, the matrix the shaders use.
    pub fn view_proj(&self) -> Mat4 {
        self.projection() * self.view()
    }

    /// Pixel coordinates `(x, y)` of world point `p` in a `width × height` image, or `None` when the
    /// point is not drawn for its depth: behind the eye, nearer than the near plane or past the
    /// far one.
    pub fn project(&self, p: [f32; 3], width: u32, height: u32) -> Option<[f32; 2]> {
        let c = self.view_proj() * Vec4::new(p[0], p[1], p[2], 1.0);
        // c.w is the point's depth along the view axis.
        if c.w <= 0.0 || c.w < self.near || c.w > self.far {
            return None;
        }
        let (x, y) = (c.x / c.w, c.y / c.w);
        Some([
            (x * 0.5 + 0.5) * width as f32,
            (0.5 - y * 0.5) * height as f32,
        ])
    }

    /// How many pixels a length of one world unit at `p`, perpendicular to the view axis, covers in an
    /// image `height` pixels tall (the projected size of a yarn radius is `r` times this).
    pub fn pixels_per_unit(&self, p: [f32; 3], height: u32) -> Option<f32> {
        let depth = -(self.view() * Vec4::new(p[0], p[1], p[2], 1.0)).z;
        if depth <= 0.0 {
            return None;
        }
        let half_y = (self.fov_y_deg.to_radians() * 0.5).tan();
        Some(height as f32 * 0.5 / (half_y * depth))
    }

    /// Unit vectors (right, up, back) of the camera in world space: the lights are placed with them.
    pub fn basis(&self) -> (Vec3, Vec3, Vec3) {
        let f = (self.target - self.eye).normalize();
        let s = f.cross(self.up).normalize();
        (s, s.cross(f), -f)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scene::Camera;

    fn bounds(min: [f32; 3], max: [f32; 3]) -> Bounds {
        Bounds {
            min: Vec3::from_array(min),
            max: Vec3::from_array(max),
        }
    }

    fn corners(b: &Bounds) -> Vec<[f32; 3]> {
        (0..8)
            .map(|k| {
                [
                    if k & 1 == 0 { b.min.x } else { b.max.x },
                    if k & 2 == 0 { b.min.y } else { b.max.y },
                    if k & 4 == 0 { b.min.z } else { b.max.z },
                ]
            })
            .collect()
    }

    #[test]
    fn target_projects_to_image_centre_and_depth_spans_near_far() {
        let cam = Camera {
            position: Some([1.0, 2.0, 7.0]),
            target: Some([0.5, -0.5, 0.0]),
            fov_deg: Some(30.0),
        };
        let b = bounds([-1.0; 3], [1.0; 3]);
        let v = CameraView::resolve(&cam, &b, &b, 300, 200).unwrap();
        let p = v.project([0.5, -0.5, 0.0], 300, 200).unwrap();
        assert!(
            (p[0] - 150.0).abs() < 1e-3 && (p[1] - 100.0).abs() < 1e-3,
            "{p:?}"
        );
        let fwd = (v.target - v.eye).normalize();
        for (d, want) in [(v.near, 0.0), (v.far, 1.0)] {
            let q = v.eye + fwd * d;
            let c = v.view_proj() * q.extend(1.0);
            assert!(
                (c.z / c.w - want).abs() < 1e-4,
                "depth at {d}: {}",
                c.z / c.w
            );
        }
        // A point above the target appears above the centre (image y grows downwards).
        let up = v.project([0.5, 0.5, 0.0], 300, 200).unwrap();
        assert!(up[1] < 100.0);
        // Behind the eye: no projection.
        assert!(v.project([1.0, 2.0, 9.0], 300, 200).is_none());
    }

    /// A cloth too far from the origin for an f32 camera is refused as a camera given there is,
    /// naming the reach (it was said to make the camera coincide with its target).
    #[test]
    fn a_cloth_past_the_reach_names_it() {
        for at in [1e8f32, 1e30] {
            let cloth = bounds([at, 0.0, -1.0], [at + 2.0, 0.5, 1.0]);
            let err = CameraView::resolve(&Camera::default(), &cloth, &cloth, 320, 240)
                .unwrap_err()
                .to_string();
            assert!(err.contains("that frames the cloth lies"), "{at}: {err}");
            assert!(!err.contains("coincide"), "{at}: {err}");
        }
    }

    /// A solid far from the cloth deepens the depth range, but the near plane stays before the
    /// cloth: a sphere 2e5 cm away had put it behind the cloth (the image showed no yarn).
    #[test]
    fn a_far_solid_leaves_the_cloth_in_the_depth_range() {
        let cloth = bounds([-1.0, 0.0, -1.0], [1.0, 0.5, 1.0]);
        for far_x in [1e3f32, 2e5, 1e6] {
            let all = bounds([-1.0, 0.0, -1.0], [far_x, 0.5, 1.0]);
            let v = CameraView::resolve(&Camera::default(), &cloth, &all, 320, 240).unwrap();
            for c in corners(&cloth) {
                assert!(
                    v.project(c, 320, 240).is_some(),
                    "solid at x = {far_x}: cloth corner {c:?} is not drawn (near {}, far {})",
                    v.near,
                    v.far
                );
            }
            assert!(v.far > far_x, "solid at x = {far_x}: far {}", v.far);
        }
    }

    #[test]
    fn pixels_per_unit_matches_projection() {
        let cam = Camera {
            position: Some([0.0, 0.0, 10.0]),
            target: Some([0.0; 3]),
            fov_deg: Some(40.0),
        };
        let b = bounds([-1.0; 3], [1.0; 3]);
        let v = CameraView::resolve(&cam, &b, &b, 200, 100).unwrap();
        let (right, up, _) = v.basis();
        let p = [0.3, -0.2, 1.0];
        let a = v.project(p, 200, 100).unwrap();
        let d = 1e-2;
        for dir in [right, up] {
            let q = Vec3::from_array(p) + dir * d;
            let bq = v.project(q.to_array(), 200, 100).unwrap();
            let moved = ((bq[0] - a[0]).powi(2) + (bq[1] - a[1]).powi(2)).sqrt() / d;
            let ppu = v.pixels_per_unit(p, 100).unwrap();
            assert!((moved - ppu).abs() < 0.01 * ppu, "{moved} vs {ppu}");
        }
    }

    #[test]
    fn default_camera_frames_the_cloth() {
        // A swatch lying flat, one hanging, and a long thin one, at various aspect ratios.
        let cases = [
            (bounds([-3.0, -0.2, -2.0], [3.0, 0.2, 2.0]), 640, 480),
            (bounds([10.0, 0.0, -0.3], [14.0, 6.0, 0.3]), 320, 480),
            (bounds([-8.0, 1.0, 1.0], [8.0, 1.5, 1.5]), 400, 400),
        ];
        for (b, w, h) in cases {
            let v = CameraView::resolve(&Camera::default(), &b, &b, w, h).unwrap();
            let (mut lo, mut hi) = ([f32::MAX; 2], [f32::MIN; 2]);
            for c in corners(&b) {
                let p = v.project(c, w, h).expect("corner in front of the camera");
                for k in 0..2 {
                    lo[k] = lo[k].min(p[k]);
                    hi[k] = hi[k].max(p[k]);
                }
            }
            assert!(lo[0] >= 0.0 && lo[1] >= 0.0, "{b:?}: {lo:?}");
            assert!(hi[0] <= w as f32 && hi[1] <= h as f32, "{b:?}: {hi:?}");
            // Tight: the box fills most of the limiting dimension.
            let fill = ((hi[0] - lo[0]) / w as f32).max((hi[1] - lo[1]) / h as f32);
            assert!(fill > 0.8, "{b:?} fills only {fill}");
            // The thinnest extent faces the camera.
            let ext = b.max - b.min;
            let thin = ext.min_position();
            let dir = (v.eye - v.target).normalize();
            assert_eq!(dir.abs().max_position(), thin, "{b:?}: {dir}");
        }
    }

    #[test]
    fn bad_cameras_are_errors() {
        let b = bounds([-1.0; 3], [1.0; 3]);
        let same = Camera {
            position: Some([1.0, 1.0, 1.0]),
            target: Some([1.0, 1.0, 1.0]),
            fov_deg: None,
        };
        assert!(CameraView::resolve(&same, &b, &b, 10, 10).is_err());
        let fov = Camera {
            fov_deg: Some(0.0),
            ..Camera::default()
        };
        assert!(CameraView::resolve(&fov, &b, &b, 10, 10).is_err());
        let nan = Camera {
            position: Some([f32::NAN, 0.0, 0.0]),
            ..Camera::default()
        };
        assert!(CameraView::resolve(&nan, &b, &b, 10, 10).is_err());
        // Far out, said to be far out (it was said to coincide with its target: the f32 length
        // of its distance overflowed).
        for far in [[1e30, 1e30, 1e30], [0.0, 2e7, 0.0]] {
            let cam = Camera {
                position: Some(far),
                target: Some([0.0; 3]),
                fov_deg: None,
            };
            let err = CameraView::resolve(&cam, &b, &b, 10, 10)
                .unwrap_err()
                .to_string();
            assert!(
                err.contains("from the origin") && err.contains("position"),
                "{err}"
            );
        }
        let near = Camera {
            position: Some([0.0, 5e6, 0.0]),
            target: Some([0.0; 3]),
            fov_deg: None,
        };
        assert!(CameraView::resolve(&near, &b, &b, 10, 10).is_ok());
    }
}
