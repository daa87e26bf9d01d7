//! CPU side of the render geometry: one tube instance per spline segment, and triangle meshes for the
//! obstacles.
//!
//! Tubes: `shaders/render_tubes.wgsl` draws each segment as `SAMPLES` rings of `SIDES` vertices placed
//! on the Catmull-Rom curve itself (evaluated in the vertex shader from the segment's four control
//! points), so the tube is smooth along the spline. The ring orientation is a discrete parallel
//! transport: the frame normal is projected onto the plane normal to the tangent at every ring sample.
//! The CPU runs the same chain along each yarn to hand every segment the normal its first ring starts
//! with, so consecutive segments share their joining ring and the tube has no cracks; a closed yarn's
//! leftover rotation (holonomy) is spread evenly over its segments as a ring-angle offset.

use super::RenderError;
use crate::scene::Obstacle;
use crate::spline;
use crate::state::Topology;
use bytemuck::{Pod, Zeroable};
use glam::Vec3;

/// Rings per segment minus one: the curve is sampled at `t = j / SAMPLES`, `j = 0..=SAMPLES`.
pub const SAMPLES: u32 = 6;
/// Vertices around a ring.
pub const SIDES: u32 = 8;
/// Vertices the tube shader generates per instance: the rings, two cap centres, two cap rims.
pub const VERTICES_PER_TUBE: u32 = (SAMPLES + 1) * SIDES + 2 + 2 * SIDES;

/// Instance flag: draw a cap at `t = 0` (start of an open yarn).
pub const CAP_START: u32 = 1;
/// Instance flag: draw a cap at `t = 1` (end of an open yarn).
pub const CAP_END: u32 = 2;

/// One segment as the tube shader reads it (per-instance vertex attributes).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Pod, Zeroable)]
pub struct TubeInstance {
    /// The control points `q_{i−1..i+2}`.
    pub q: [[f32; 3]; 4],
    /// Frame normal of the first ring, perpendicular to the tangent at `t = 0`.
    pub n0: [f32; 3],
    /// RGBA8 colour (sRGB), red in the lowest byte.
    pub color: u32,
    /// Ring-angle offset in radians at `t = 0` and `t = 1` (non-zero only on closed yarns).
    pub twist: [f32; 2],
    /// `CAP_START` | `CAP_END`.
    pub flags: u32,
}
const _: () = assert!(std::mem::size_of::<TubeInstance>() == 76);

/// One obstacle-mesh vertex.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Pod, Zeroable)]
pub struct MeshVertex {
    pub pos: [f32; 3],
    pub normal: [f32; 3],
    /// RGBA8 colour (sRGB), red in the lowest byte.
    pub color: u32,
}
const _: () = assert!(std::mem::size_of::<MeshVertex>() == 28);

/// Packs an sRGB colour into the instance/vertex colour word.
pub fn pack_rgba(c: [u8; 3]) -> u32 {
    u32::from_le_bytes([c[0], c[1], c[2], 255])
}

/// A unit vector perpendicular to unit `t`: `t`'s least aligned axis with its `t` part removed.
/// The shader's `any_perp` is the same rule.
pub fn any_perp(t: Vec3) -> Vec3 {
    let a = t.abs();
    let axis = if a.x <= a.y && a.x <= a.z {
        Vec3::X
    } else if a.y <= a.z {
        Vec3::Y
    } else {
        Vec3::Z
    };
    (axis - t * t.dot(axis)).normalize()
}

/// `n` with its component along unit `t` removed, normalized (or `any_perp(t)` when nothing is left).
/// The shader's `project_perp` is the same formula.
pub fn project_perp(n: Vec3, t: Vec3) -> Vec3 {
    let v = n - t * n.dot(t);
    let l = v.length();
    if l > 1e-6 {
        v / l
    } else {
        any_perp(t)
    }
}

/// Unit tangent of the segment at `t`, falling back to the chord `q2 − q1` where the derivative
/// vanishes (the shader's `tube_tangent`).
pub fn tangent(q: &[Vec3; 4], t: f32) -> Vec3 {
    let b = spline::basis_deriv::<f32>(t);
    let d = q[0] * b[0] + q[1] * b[1] + q[2] * b[2] + q[3] * b[3];
    let l = d.length();
    if l > 1e-12 {
        return d / l;
    }
    let c = q[2] - q[1];
    if c.length() > 1e-12 {
        c.normalize()
    } else {
        Vec3::X
    }
}

fn seg_points(pos: &[[f32; 4]], cp: [u32; 4]) -> [Vec3; 4] {
    cp.map(|i| {
        let p = pos[i as usize];
        Vec3::new(p[0], p[1], p[2])
    })
}

/// One tube instance per segment, in segment order, with per-segment colours `colors`.
pub fn tube_instances(
    topo: &Topology,
    pos: &[[f32; 4]],
    colors: &[u32],
    out: &mut Vec<TubeInstance>,
) {
    out.clear();
    out.resize(topo.segments.len(), TubeInstance::default());
    for y in &topo.yarns {
        let first = y.first_segment as usize;
        let n_seg = y.num_segments as usize;
        if n_seg == 0 {
            continue;
        }
        let q0 = seg_points(pos, topo.segments[first].cp);
        let start_normal = any_perp(tangent(&q0, 0.0));
        let mut n = start_normal;
        for k in 0..n_seg {
            let si = first + k;
            let seg = &topo.segments[si];
            let q = seg_points(pos, seg.cp);
            n = project_perp(n, tangent(&q, 0.0));
            let inst = &mut out[si];
            inst.q = q.map(|v| v.to_array());
            inst.n0 = n.to_array();
            inst.color = colors[si];
            inst.flags = 0;
            // The same chain of projections the shader applies ring by ring.
            for j in 1..=SAMPLES {
                n = project_perp(n, tangent(&q, j as f32 / SAMPLES as f32));
            }
        }
        if y.closed != 0 {
            // After the loop the transported normal `n` is perpendicular to the first tangent again,
            // rotated from where it started by φ; spread φ over the segments.
            let t0 = tangent(&q0, 0.0);
            let phi = n.cross(start_normal).dot(t0).atan2(n.dot(start_normal));
            for k in 0..n_seg {
                out[first + k].twist = [
                    phi * k as f32 / n_seg as f32,
                    phi * (k + 1) as f32 / n_seg as f32,
                ];
            }
        } else {
            out[first].flags |= CAP_START;
            out[first + n_seg - 1].flags |= CAP_END;
        }
    }
}

/// Triangle-list indices of one tube instance (shared by all instances).
pub fn tube_indices() -> Vec<u16> {
    let k = SIDES;
    let mut idx = Vec::new();
    for j in 0..SAMPLES {
        for s in 0..k {
            let a = j * k + s;
            let b = j * k + (s + 1) % k;
            let c = (j + 1) * k + s;
            let d = (j + 1) * k + (s + 1) % k;
            idx.extend_from_slice(&[a, b, c, b, d, c]);
        }
    }
    let base = (SAMPLES + 1) * k;
    let (c0, c1) = (base, base + 1);
    let rim0 = base + 2;
    let rim1 = base + 2 + k;
    for s in 0..k {
        let s1 = (s + 1) % k;
        idx.extend_from_slice(&[c0, rim0 + s1, rim0 + s]);
        idx.extend_from_slice(&[c1, rim1 + s, rim1 + s1]);
    }
    idx.into_iter().map(|i| i as u16).collect()
}

/// Colour of planes (two tones of a checkerboard) and of solid obstacles.
pub const PLANE_COLORS: [[u8; 3]; 2] = [[190, 190, 196], [160, 160, 168]];
pub const SOLID_COLOR: [u8; 3] = [205, 200, 190];

fn finite3(p: [f32; 3]) -> bool {
    p.iter().all(|v| v.is_finite())
}

/// Triangles for every obstacle. A plane becomes a checkered square centred under the cloth's centre,
/// 3× the cloth's bounding radius across (planes are infinite; this is the part worth seeing).
pub fn obstacle_mesh(
    obstacles: &[Obstacle],
    cloth_center: Vec3,
    cloth_radius: f32,
    out: &mut Vec<MeshVertex>,
) -> Result<(), RenderError> {
    out.clear();
    for (i, o) in obstacles.iter().enumerate() {
        let bad = |m: &str| Err(RenderError::InvalidInput(format!("obstacle {i}: {m}")));
        match o {
            Obstacle::Plane { point, normal, .. } => {
                if !finite3(*point) || !finite3(*normal) {
                    return bad("plane point or normal is not finite");
                }
                let n = Vec3::from_array(*normal);
                if n.length() < 1e-12 {
                    return bad("plane normal is zero");
                }
                let n = n.normalize();
                let p = Vec3::from_array(*point);
                let c = cloth_center - n * (cloth_center - p).dot(n);
                let half = (1.5 * cloth_radius).max(1.0);
                plane(c, n, half, out);
            }
            Obstacle::Sphere { center, radius, .. } => {
                if !finite3(*center) || !radius.is_finite() || *radius <= 0.0 {
                    return bad("sphere needs a finite centre and a positive radius");
                }
                let c = Vec3::from_array(*center);
                capsule(c, c, *radius, out);
            }
            Obstacle::Capsule { a, b, radius, .. } => {
                if !finite3(*a) || !finite3(*b) || !radius.is_finite() || *radius <= 0.0 {
                    return bad("capsule needs finite ends and a positive radius");
                }
                capsule(Vec3::from_array(*a), Vec3::from_array(*b), *radius, out);
            }
        }
    }
    Ok(())
}

fn plane(c: Vec3, n: Vec3, half: f32, out: &mut Vec<MeshVertex>) {
    const TILES: i32 = 10;
    let u = any_perp(n);
    let v = n.cross(u);
    let step = 2.0 * half / TILES as f32;
    for a in 0..TILES {
        for b in 0..TILES {
            let color = pack_rgba(PLANE_COLORS[((a + b) % 2) as usize]);
            let o = c + u * (-half + a as f32 * step) + v * (-half + b as f32 * step);
            let corners = [o, o + u * step, o + u * step + v * step, o + v * step];
            for k in [0, 1, 2, 0, 2, 3] {
                out.push(MeshVertex {
                    pos: corners[k].to_array(),
                    normal: n.to_array(),
                    color,
                });
            }
        }
    }
}

/// A capsule from `a` to `b` (a sphere when they coincide) as latitude rows joined by quads: the
/// lower hemisphere about `a`, then the upper about `b`; the two equator rows bound the cylinder.
fn capsule(a: Vec3, b: Vec3, r: f32, out: &mut Vec<MeshVertex>) {
    const HALF_STACKS: usize = 8;
    const SLICES: usize = 32;
    let axis_v = b - a;
    let axis = if axis_v.length() > 1e-9 {
        axis_v.normalize()
    } else {
        Vec3::Y
    };
    let e1 = any_perp(axis);
    let e2 = axis.cross(e1);
    let color = pack_rgba(SOLID_COLOR);
    let mut rows: Vec<(f32, Vec3)> = Vec::with_capacity(2 * HALF_STACKS + 2);
    for k in 0..=HALF_STACKS {
        let phi = -std::f32::consts::FRAC_PI_2 * (1.0 - k as f32 / HALF_STACKS as f32);
        rows.push((phi, a));
    }
    for k in 0..=HALF_STACKS {
        let phi = std::f32::consts::FRAC_PI_2 * k as f32 / HALF_STACKS as f32;
        rows.push((phi, b));
    }
    let vert = |row: (f32, Vec3), s: usize| {
        let th = s as f32 / SLICES as f32 * std::f32::consts::TAU;
        let (sp, cp) = row.0.sin_cos();
        let nrm = (e1 * th.cos() + e2 * th.sin()) * cp + axis * sp;
        MeshVertex {
            pos: (row.1 + nrm * r).to_array(),
            normal: nrm.to_array(),
            color,
        }
    };
    for w in rows.windows(2) {
        for s in 0..SLICES {
            let s1 = (s + 1) % SLICES;
            let (p00, p01, p10, p11) =
                (vert(w[0], s), vert(w[0], s1), vert(w[1], s), vert(w[1], s1));
            out.extend_from_slice(&[p00, p01, p11, p00, p11, p10]);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::state::Curve;

    /// The ring-0 radial direction of an instance's ring `j` as the shader computes it.
    fn ring_radial(inst: &TubeInstance, j: u32) -> Vec3 {
        let q = inst.q.map(Vec3::from_array);
        let mut n = Vec3::from_array(inst.n0);
        for i in 1..=j {
            n = project_perp(n, tangent(&q, i as f32 / SAMPLES as f32));
        }
        let t = j as f32 / SAMPLES as f32;
        let tg = tangent(&q, t);
        let angle = inst.twist[0] + (inst.twist[1] - inst.twist[0]) * t;
        n * angle.cos() + tg.cross(n) * angle.sin()
    }

    fn instances(curves: &[Curve]) -> (Topology, Vec<TubeInstance>) {
        let (topo, pos) = Topology::from_curves(curves).unwrap();
        let colors = vec![0u32; topo.segments.len()];
        let mut out = Vec::new();
        tube_instances(&topo, &pos, &colors, &mut out);
        (topo, out)
    }

    #[test]
    fn neighbouring_segments_share_their_joining_ring() {
        // A trefoil-like closed knot (non-planar, so parallel transport leaves a twist) and an open helix.
        let knot = Curve {
            points: (0..24)
                .map(|i| {
                    let a = i as f32 / 24.0 * std::f32::consts::TAU;
                    [
                        a.sin() + 2.0 * (2.0 * a).sin(),
                        a.cos() - 2.0 * (2.0 * a).cos(),
                        -(3.0 * a).sin(),
                    ]
                })
                .collect(),
            closed: true,
        };
        let helix = Curve {
            points: (0..15)
                .map(|i| {
                    let a = i as f32 * 0.9;
                    [a.cos(), a.sin(), 0.3 * i as f32]
                })
                .collect(),
            closed: false,
        };
        let (topo, inst) = instances(&[knot, helix]);
        let mut some_twist = false;
        for y in &topo.yarns {
            let first = y.first_segment as usize;
            let n = y.num_segments as usize;
            let pairs = if y.closed != 0 { n } else { n - 1 };
            for k in 0..pairs {
                let a = &inst[first + k];
                let b = &inst[first + (k + 1) % n];
                let end = ring_radial(a, SAMPLES);
                let start = ring_radial(b, 0);
                assert!(
                    (end - start).length() < 1e-4,
                    "yarn {:?} segment {k}: ring mismatch {end} vs {start}",
                    y
                );
            }
            if y.closed != 0 {
                some_twist |= inst[first + n - 1].twist[1].abs() > 1e-3;
            }
            // Every frame normal is a unit vector perpendicular to its tangent.
            for s in &inst[first..first + n] {
                let q = s.q.map(Vec3::from_array);
                let n0 = Vec3::from_array(s.n0);
                assert!((n0.length() - 1.0).abs() < 1e-5);
                assert!(n0.dot(tangent(&q, 0.0)).abs() < 1e-5);
            }
        }
        assert!(some_twist, "the knot should need a twist correction");
        // Caps only at the ends of the open yarn.
        let caps: Vec<(usize, u32)> = inst
            .iter()
            .enumerate()
            .filter(|(_, s)| s.flags != 0)
            .map(|(i, s)| (i, s.flags))
            .collect();
        let h = &topo.yarns[1];
        let last = (h.first_segment + h.num_segments - 1) as usize;
        assert_eq!(
            caps,
            vec![(h.first_segment as usize, CAP_START), (last, CAP_END)]
        );
    }

    #[test]
    fn tube_indices_stay_inside_the_instance() {
        let idx = tube_indices();
        assert_eq!(idx.len() as u32, SAMPLES * SIDES * 6 + 2 * SIDES * 3);
        assert!(idx.iter().all(|&i| (i as u32) < VERTICES_PER_TUBE));
    }

    #[test]
    fn obstacles_validated_and_meshed() {
        let good = [
            Obstacle::Plane {
                point: [0.0; 3],
                normal: [0.0, 2.0, 0.0],
                friction: 0.0,
            },
            Obstacle::Capsule {
                a: [0.0; 3],
                b: [1.0, 0.0, 0.0],
                radius: 0.5,
                friction: 0.0,
                keyframes: vec![],
            },
        ];
        let mut out = Vec::new();
        obstacle_mesh(&good, Vec3::new(0.0, 3.0, 0.0), 2.0, &mut out).unwrap();
        // The plane square lies in y = 0 under the cloth; the capsule within its radius of the axis.
        let plane_verts = 10 * 10 * 6;
        assert!(out[..plane_verts].iter().all(|v| v.pos[1].abs() < 1e-6));
        for v in &out[plane_verts..] {
            let p = Vec3::from_array(v.pos);
            let on_axis = Vec3::new(p.x.clamp(0.0, 1.0), 0.0, 0.0);
            assert!(((p - on_axis).length() - 0.5).abs() < 1e-4, "{p}");
        }
        let bad = [Obstacle::Sphere {
            center: [0.0; 3],
            radius: -1.0,
            friction: 0.0,
            keyframes: vec![],
        }];
        assert!(obstacle_mesh(&bad, Vec3::ZERO, 1.0, &mut out).is_err());
    }
}
