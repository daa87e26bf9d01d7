//! A generated knit tube of closed courses, and the same tube with one leg pushed through the course
//! below: the model of the linking-certificate tests (tests/links.rs, tests/cli.rs).
#![allow(dead_code)]

use yarnsim::knit;
use yarnsim::scene::{Pattern, YarnMaterial};
use yarnsim::state::Curve;

/// A stockinette tube, `wales` around × `courses` closed courses, at the default yarn radius.
pub fn tube(wales: u32, courses: u32) -> Vec<Curve> {
    let r = YarnMaterial::default().radius;
    knit::generate(Pattern::Tube, wales, courses, r)
        .unwrap()
        .curves
}

/// `curves` (a tube from [`tube`]) with the left leg L of loop (`wale`, `course`) pushed inward by
/// 4.13 r, from 1.13 r outside the fabric's mid-surface to 3 r inside: behind the head top of the
/// loop below (1.72 r inside), so that the leg passes behind that head instead of in front of it
/// (knit.rs, loop geometry). One crossing of course `course` over course `course − 1` changes, so
/// their linking number changes from 0 to ±1; the leg stays clear of every other part of yarn.
pub fn push_leg_through(curves: &[Curve], wale: u32, course: u32) -> Vec<Curve> {
    let r = YarnMaterial::default().radius;
    let mut out = curves.to_vec();
    // Each loop of a tube course is 8 control points from its sinker; L is the third.
    let p = &mut out[course as usize].points[(8 * wale + 2) as usize];
    let rho = (p[0] * p[0] + p[2] * p[2]).sqrt();
    let s = (rho - 4.13 * r) / rho;
    p[0] *= s;
    p[2] *= s;
    out
}
