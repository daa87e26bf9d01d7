//! The dirty-rebuild fixture of the ACL rebuild tests (tests/gpu_acl_rebuild.rs,
//! tests/gpu_acl_release.rs): the default swatch's contact sets after 40 steps of a real run, all
//! marked dirty and measured by `set_rebuild_size` at the next step's positions, with what the
//! rebuild kernels read. Needs the including test to declare `mod fixture` (support/fixture.rs).
#![allow(dead_code)]

use super::fixture::{self, scene_sim};
use yarnsim::acl::rebuild::{RebuildParams, WatchLoc, WatchPair};
use yarnsim::acl::{AclContact, ContactSet};

/// What a rebuild reads besides the sets and positions: the exclusion rule, the segments' control
/// points and weights, the quadrature table.
pub struct TablesData {
    pub excl: yarnsim::contact::Exclusion,
    pub seg_cp: Vec<[u32; 4]>,
    pub seg_w: Vec<f32>,
    pub table: yarnsim::spline::QuadratureTable,
}

impl TablesData {
    pub fn tables(&self) -> yarnsim::acl::rebuild::RebuildTables<'_> {
        yarnsim::acl::rebuild::RebuildTables {
            seg_cp: &self.seg_cp,
            seg_w: &self.seg_w,
            weights: &self.table.weights,
            excl: &self.excl,
        }
    }
}

/// The fixture of the `set_rebuild_*` tests: the swatch with an `AclContact` stepped alongside it
/// for 40 steps, then one more simulation step; every set marked dirty, to be rebuilt at the new
/// positions (every set re-measured, as with τ = 0). With what the kernels read (quadrature points
/// of the kernel `quadrature_points`' twin, `seg_contact`, the `rebuild` uniform) and the twin
/// `set_rebuild_size`'s plans and watched pairs.
pub struct DirtyRebuild {
    pub sim: yarnsim::sim::Sim,
    pub acl: AclContact,
    pub sets: Vec<ContactSet>,
    pub dirty: Vec<u32>,
    pub seg_contact: Vec<yarnsim::layout::SegmentContact>,
    pub data: TablesData,
    pub p: RebuildParams,
    pub qpts: Vec<[f32; 4]>,
    pub plans: Vec<yarnsim::acl::rebuild::RebuildPlan>,
    pub watch: Vec<WatchPair>,
    pub watch_loc: Vec<WatchLoc>,
    pub scratch: yarnsim::acl::ThreadScratch<yarnsim::acl::rebuild::RebuildScratch>,
}

pub fn dirty_rebuild() -> DirtyRebuild {
    use yarnsim::acl::rebuild::{set_rebuild_size, RebuildPlan};
    use yarnsim::acl::{MAX_WATCH, SET_DIRTY};
    let sets_cfg = ["contact.model=acl"];
    let mut sim = scene_sim("swatch", &sets_cfg, 0);
    let params = fixture::scene_contact("swatch", &sets_cfg);
    let r = sim.step_params().radius;
    let mut acl = AclContact::new(r, &params).unwrap();
    let mut force = vec![[0.0f32; 4]; sim.pos.len()];
    for _ in 0..40 {
        sim.step().unwrap();
        acl.step(&sim.topo, &sim.pos, &mut force).unwrap();
    }
    sim.step().unwrap();
    let topo = &sim.topo;
    let b = params.quadrature;
    let mut sets = acl.sets().to_vec();
    for s in sets.iter_mut() {
        s.flags |= SET_DIRTY;
    }
    let dirty: Vec<u32> = (0..sets.len() as u32).collect();
    let nd = dirty.len();
    let excl = yarnsim::contact::Exclusion::new(topo, &params);
    let seg_cp: Vec<[u32; 4]> = topo.segments.iter().map(|s| s.cp).collect();
    let seg_w: Vec<f32> = topo
        .segments
        .iter()
        .map(|s| topo.edges[s.edge as usize].rest_length / b as f32)
        .collect();
    let seg_contact = (0..topo.segments.len())
        .map(|s| yarnsim::layout::SegmentContact {
            weight: seg_w[s],
            loop_len: excl.loop_len(s as u32),
            _pad: [0; 2],
        })
        .collect();
    let data = TablesData {
        excl,
        seg_cp,
        seg_w,
        table: yarnsim::spline::QuadratureTable::new(b),
    };
    let p = RebuildParams {
        b,
        nq: topo.segments.len() as u32 * b,
        r,
        padding: params.padding,
        delete_distance: params.delete_distance,
        stiffness: params.stiffness,
        stiction_stiffness: params.stiction_stiffness,
        step: acl.step_count() as u32,
        num_sets: sets.len() as u32,
        num_dirty: nd as u32,
        exclusion_arc: params.exclusion_arc,
        _pad: 0,
    };
    // The quadrature points as the kernel reads them (kernel quadrature_points' twin).
    let mut qpts = vec![[0.0f32; 4]; p.nq as usize];
    yarnsim::contact::quadrature_points(
        &yarnsim::layout::Params {
            quadrature: b,
            num_segments: topo.segments.len() as u32,
            ..bytemuck::Zeroable::zeroed()
        },
        &topo.segments,
        &sim.pos,
        &data.table.weights,
        data.excl.quad_arc(),
        &mut qpts,
    );
    let mut plans = vec![RebuildPlan::default(); nd];
    let mut watch = vec![WatchPair::default(); nd * MAX_WATCH];
    let mut watch_loc = vec![WatchLoc::default(); nd * MAX_WATCH];
    let mut scratch = yarnsim::acl::ThreadScratch::default();
    scratch.ensure();
    set_rebuild_size(
        &p,
        &sim.pos,
        data.tables(),
        &sets,
        &dirty,
        &mut plans,
        &mut watch,
        &mut watch_loc,
        &yarnsim::acl::pages::PoolPage::whole(nd),
        &scratch,
    );
    DirtyRebuild {
        sim,
        acl,
        sets,
        dirty,
        seg_contact,
        data,
        p,
        qpts,
        plans,
        watch,
        watch_loc,
        scratch,
    }
}
