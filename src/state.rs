//! The simulation's flat arrays: yarn topology, control points and velocities.
//!
//! Every array here is a slice of `#[repr(C)]` bytemuck `Pod` structs made only of 4-byte scalars, so
//! the GPU path uploads them unchanged. Points are `[f32; 4]` (xyz and a w that is documented where it
//! is used) because WGSL `vec3<f32>` has 16-byte alignment.
//!
//! Conventions (DESIGN §2, BCC `C0`): an open yarn of `n ≥ 4` control points runs from point 1 to point
//! `n − 2`; points 0 and `n − 1` are tangent handles. Its segments are `i = 1..=n−3`, segment `i` using
//! `q_{i−1..i+2}`. A closed yarn of `n ≥ 3` points has `n` segments, indices taken modulo `n`. Polyline
//! edges join consecutive control points (handles included); a closed yarn also has the closing edge.

pub use crate::layout::{Edge, Segment, Yarn};

/// A yarn as it comes from a generator or a BCC file: Catmull-Rom control points.
#[derive(Clone, Debug, PartialEq)]
pub struct Curve {
    pub points: Vec<[f32; 3]>,
    pub closed: bool,
}

/// Yarns, segments and edges of a scene.
#[derive(Clone, Debug, Default)]
pub struct Topology {
    pub yarns: Vec<Yarn>,
    pub segments: Vec<Segment>,
    pub edges: Vec<Edge>,
}

/// Why a set of curves cannot become a simulation.
#[derive(Debug, thiserror::Error, PartialEq)]
pub enum TopologyError {
    #[error(
        "yarn {yarn} has {points} control points; an open yarn needs at least 4 and a closed one 3"
    )]
    TooFewPoints { yarn: usize, points: usize },
    #[error("yarn {yarn}, control point {point} is not finite")]
    NotFinite { yarn: usize, point: usize },
    #[error("yarn {yarn}: control points {point} and {next} coincide, so the edge between them has no direction")]
    ZeroEdge {
        yarn: usize,
        point: usize,
        next: usize,
    },
    #[error("the scene has {0} control points, more than the u32 indices allow")]
    TooLarge(usize),
}

impl Topology {
    /// Lays out the curves one after another; the returned positions are `[x, y, z, 0]`.
    pub fn from_curves(curves: &[Curve]) -> Result<(Topology, Vec<[f32; 4]>), TopologyError> {
        let total: usize = curves.iter().map(|c| c.points.len()).sum();
        if total >= u32::MAX as usize / 2 {
            return Err(TopologyError::TooLarge(total));
        }
        let mut topo = Topology::default();
        let mut pos = Vec::with_capacity(total);
        for (yi, c) in curves.iter().enumerate() {
            let n = c.points.len();
            let min = if c.closed { 3 } else { 4 };
            if n < min {
                return Err(TopologyError::TooFewPoints {
                    yarn: yi,
                    points: n,
                });
            }
            for (pi, p) in c.points.iter().enumerate() {
                if !p.iter().all(|v| v.is_finite()) {
                    return Err(TopologyError::NotFinite {
                        yarn: yi,
                        point: pi,
                    });
                }
            }
            let first_point = pos.len() as u32;
            let first_edge = topo.edges.len() as u32;
            let first_segment = topo.segments.len() as u32;
            pos.extend(c.points.iter().map(|p| [p[0], p[1], p[2], 0.0]));
            let num_edges = if c.closed { n } else { n - 1 };
            for e in 0..num_edges {
                let a = e;
                let b = (e + 1) % n;
                let pa = c.points[a];
                let pb = c.points[b];
                let len =
                    ((pa[0] - pb[0]).powi(2) + (pa[1] - pb[1]).powi(2) + (pa[2] - pb[2]).powi(2))
                        .sqrt();
                if len <= 0.0 {
                    return Err(TopologyError::ZeroEdge {
                        yarn: yi,
                        point: a,
                        next: b,
                    });
                }
                topo.edges.push(Edge {
                    a: first_point + a as u32,
                    b: first_point + b as u32,
                    yarn: yi as u32,
                    rest_length: len,
                });
            }
            let segs: Vec<usize> = if c.closed {
                (0..n).collect()
            } else {
                (1..=n - 3).collect()
            };
            for (k, &i) in segs.iter().enumerate() {
                let idx = |j: isize| -> u32 {
                    let m = (i as isize + j).rem_euclid(n as isize) as u32;
                    first_point + m
                };
                topo.segments.push(Segment {
                    cp: [idx(-1), idx(0), idx(1), idx(2)],
                    yarn: yi as u32,
                    edge: first_edge + i as u32,
                    index_in_yarn: k as u32,
                    _pad: 0,
                });
            }
            topo.yarns.push(Yarn {
                first_point,
                num_points: n as u32,
                closed: c.closed as u32,
                first_segment,
                num_segments: segs.len() as u32,
                first_edge,
                num_edges: num_edges as u32,
                _pad: 0,
            });
        }
        Ok((topo, pos))
    }

    pub fn num_points(&self) -> usize {
        self.yarns.iter().map(|y| y.num_points as usize).sum()
    }

    /// Number of quadrature points for `b` per segment (the size of `S`).
    pub fn num_quadrature_points(&self, b: u32) -> usize {
        self.segments.len() * b as usize
    }

    /// The curves back out of flat positions (for export), in the same convention they came in.
    pub fn curves(&self, pos: &[[f32; 4]]) -> Vec<Curve> {
        self.yarns
            .iter()
            .map(|y| Curve {
                points: pos[y.first_point as usize..(y.first_point + y.num_points) as usize]
                    .iter()
                    .map(|p| [p[0], p[1], p[2]])
                    .collect(),
                closed: y.closed != 0,
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn line(n: usize, closed: bool) -> Curve {
        Curve {
            points: (0..n)
                .map(|i| [i as f32, (i * i) as f32 * 0.1, 0.0])
                .collect(),
            closed,
        }
    }

    #[test]
    fn open_and_closed_layout() {
        let (t, pos) = Topology::from_curves(&[line(6, false), line(5, true)]).unwrap();
        assert_eq!(pos.len(), 11);
        assert_eq!(t.yarns[0].num_segments, 3);
        assert_eq!(t.yarns[0].num_edges, 5);
        assert_eq!(t.segments[0].cp, [0, 1, 2, 3]);
        assert_eq!(t.segments[0].edge, 1);
        assert_eq!(t.yarns[1].num_segments, 5);
        assert_eq!(t.yarns[1].num_edges, 5);
        assert_eq!(t.segments[3].cp, [10, 6, 7, 8]);
        assert_eq!(t.segments[3].edge, 5);
        assert_eq!(t.curves(&pos)[1], line(5, true));
    }

    #[test]
    fn bad_curves_are_errors() {
        assert_eq!(
            Topology::from_curves(&[line(3, false)]).unwrap_err(),
            TopologyError::TooFewPoints { yarn: 0, points: 3 }
        );
        let mut c = line(5, false);
        c.points[2][1] = f32::NAN;
        assert_eq!(
            Topology::from_curves(&[c]).unwrap_err(),
            TopologyError::NotFinite { yarn: 0, point: 2 }
        );
    }
}
