//! What the contact models show besides their force (`ContactForce::add_step_rebuilds`,
//! `ContactForce::contact_pairs`, `Sim::segment_values`): per-segment rebuild counts and contact
//! density for the renderer's colour modes, and touching pairs with contact-set boxes for the seed's
//! Figure 2. On the 4 × 4-loop swatch of `scenes/tiny.toml`, which starts in contact.

use std::path::Path;

use yarnsim::acl::{boxes_overlap, AclContact};
use yarnsim::scene::{self, ContactModel, Scene};
use yarnsim::sim::{ContactForce, ContactStats, SegmentValue, Sim};
use yarnsim::state::Topology;

fn tiny(model: ContactModel) -> (Scene, scene::ClothBuild, Vec<u32>) {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("scenes/tiny.toml");
    let mut scene = Scene::load(&path).unwrap();
    scene.contact.model = model;
    let build = scene::build_curves(&scene, path.parent().unwrap()).unwrap();
    let pins = scene::pinned_points(&scene, &build).unwrap();
    (scene, build, pins)
}

fn sim(model: ContactModel) -> Sim {
    let (scene, build, pins) = tiny(model);
    Sim::from_build(&scene, &build, &pins).unwrap()
}

/// Segments of the quadrature pairs, each pair counted on both of its segments.
fn per_segment(pairs: &[[u32; 2]], b: u32, n: usize) -> Vec<f32> {
    let mut v = vec![0.0; n];
    for &[i, j] in pairs {
        v[(i / b) as usize] += 1.0;
        v[(j / b) as usize] += 1.0;
    }
    v
}

#[test]
fn exact_rebuilds_count_the_steps_each_segment_touched() {
    let mut sim = sim(ContactModel::Exact);
    let b = sim.num_quadrature_points() as u32 / sim.topo.segments.len() as u32;
    let n = sim.topo.segments.len();
    sim.record_rebuilds(true);
    let mut v = Vec::new();
    assert!(sim.segment_values(SegmentValue::Rebuilds, &mut v).unwrap());
    assert!(v.iter().all(|&x| x == 0.0), "nothing rebuilt before a step");
    // Step by hand: the step's forces use the touching pairs at the positions it starts from.
    let (mut touching, mut boxes) = (Vec::new(), Vec::new());
    let mut want = vec![0.0f32; n];
    let steps = 40;
    for _ in 0..steps {
        assert!(sim.contact_pairs(&mut touching, &mut boxes).unwrap());
        assert!(boxes.is_empty(), "the exact model has no contact sets");
        for (w, c) in want.iter_mut().zip(per_segment(&touching, b, n)) {
            if c > 0.0 {
                *w += 1.0;
            }
        }
        sim.step().unwrap();
    }
    assert!(sim.segment_values(SegmentValue::Rebuilds, &mut v).unwrap());
    assert_eq!(v, want);
    assert!(
        v.iter().filter(|&&x| x == steps as f32).count() > n / 4,
        "a knit at rest is in contact almost everywhere, every step"
    );
    // A frame starts the count again.
    sim.frame().unwrap();
    assert!(sim.segment_values(SegmentValue::Rebuilds, &mut v).unwrap());
    let spf = sim.params.steps_per_frame as f32;
    assert!(v.iter().all(|&x| x <= spf));
    assert!(v.contains(&spf));
}

#[test]
fn contacts_are_touching_pairs_per_segment() {
    for model in [ContactModel::Exact, ContactModel::Acl] {
        let mut sim = sim(model);
        sim.frame().unwrap();
        let n = sim.topo.segments.len();
        let b = sim.num_quadrature_points() as u32 / n as u32;
        let (mut touching, mut boxes) = (Vec::new(), Vec::new());
        assert!(sim.contact_pairs(&mut touching, &mut boxes).unwrap());
        assert!(!touching.is_empty(), "{model:?}: the swatch is in contact");
        assert!(touching.iter().all(|&[i, j]| i < j));
        let mut v = Vec::new();
        assert!(sim.segment_values(SegmentValue::Contacts, &mut v).unwrap());
        assert_eq!(v, per_segment(&touching, b, n), "{model:?}");
        assert_eq!(
            v.iter().sum::<f32>(),
            2.0 * touching.len() as f32,
            "{model:?}"
        );
    }
    // Both models see the same touching pairs at the same positions.
    let mut a = sim(ContactModel::Acl);
    let mut e = sim(ContactModel::Exact);
    let (mut ta, mut te, mut bx) = (Vec::new(), Vec::new(), Vec::new());
    a.contact_pairs(&mut ta, &mut bx).unwrap();
    e.contact_pairs(&mut te, &mut bx).unwrap();
    assert_eq!(ta, te);
    // ACL keeps the search it made at its first call (and that search's grid origin); at the
    // states the cloth moves on to, it still sees what a fresh exact search sees.
    let (scene, _, _) = tiny(ContactModel::Exact);
    for _ in 0..2 {
        a.frame().unwrap();
        a.contact_pairs(&mut ta, &mut bx).unwrap();
        let mut fresh = yarnsim::sim::contact_model(&scene).unwrap();
        fresh
            .contact_pairs(&a.topo, &a.pos, &mut te, &mut bx)
            .unwrap();
        assert!(!ta.is_empty());
        assert_eq!(ta, te);
    }
}

#[test]
fn no_contact_model_has_no_values() {
    let mut sim = sim(ContactModel::None);
    sim.record_rebuilds(true);
    sim.step().unwrap();
    let mut v = Vec::new();
    assert!(!sim.segment_values(SegmentValue::Rebuilds, &mut v).unwrap());
    assert!(!sim.segment_values(SegmentValue::Contacts, &mut v).unwrap());
    let (mut t, mut b) = (Vec::new(), Vec::new());
    assert!(!sim.contact_pairs(&mut t, &mut b).unwrap());
    // Rebuilds need recording switched on.
    let mut sim = self::sim(ContactModel::Acl);
    sim.step().unwrap();
    assert!(!sim.segment_values(SegmentValue::Rebuilds, &mut v).unwrap());
}

/// ACL driven directly: the first step builds a set for every contact, so exactly the segments in
/// some box count a rebuild; a second step at the same positions rebuilds nothing.
#[test]
fn acl_counts_rebuilds_of_the_segments_in_rebuilt_boxes() {
    let (scene, build, _) = tiny(ContactModel::Acl);
    let (topo, pos) = Topology::from_curves(&build.curves).unwrap();
    let n = topo.segments.len();
    let b = scene.contact.quadrature;
    let mut acl = AclContact::new(scene.yarn.radius, &scene.contact).unwrap();
    let mut counts = vec![0.0f32; n];
    assert!(acl.add_step_rebuilds(&topo, &mut counts));
    assert!(counts.iter().all(|&c| c == 0.0), "nothing before a step");

    let mut force = vec![[0.0f32; 4]; pos.len()];
    let vel = vec![[0.0f32; 4]; pos.len()];
    let mut stats = ContactStats::default();
    acl.add_forces(&topo, &pos, &vel, &mut force, &mut stats)
        .unwrap();
    assert!(acl.add_step_rebuilds(&topo, &mut counts));
    let (mut touching, mut boxes) = (Vec::new(), Vec::new());
    assert!(acl
        .contact_pairs(&topo, &pos, &mut touching, &mut boxes)
        .unwrap());
    assert!(!boxes.is_empty());
    let mut in_box = vec![false; n];
    for bx in &boxes {
        for s in (bx[0] / b..=bx[1] / b).chain(bx[2] / b..=bx[3] / b) {
            in_box[s as usize] = true;
        }
    }
    for s in 0..n {
        assert_eq!(counts[s] > 0.0, in_box[s], "segment {s}: {}", counts[s]);
    }
    // A segment in several rebuilt sets counts each of them.
    let sets_per_segment = |s: u32| {
        boxes
            .iter()
            .filter(|bx| {
                (bx[0] / b..=bx[1] / b).contains(&s) || (bx[2] / b..=bx[3] / b).contains(&s)
            })
            .count() as f32
    };
    for (s, &c) in counts.iter().enumerate() {
        assert_eq!(c, sets_per_segment(s as u32), "segment {s}");
    }
    // Boxes are disjoint and every touching pair lies in one (positions unchanged since the step).
    for (k, a) in boxes.iter().enumerate() {
        for c in &boxes[k + 1..] {
            assert!(!boxes_overlap(a, c), "{a:?} {c:?}");
        }
    }
    for &[i, j] in &touching {
        assert_eq!(
            boxes
                .iter()
                .filter(|bx| bx[0] <= i && i <= bx[1] && bx[2] <= j && j <= bx[3])
                .count(),
            1,
            "pair ({i}, {j})"
        );
    }

    counts.fill(0.0);
    acl.add_forces(&topo, &pos, &vel, &mut force, &mut stats)
        .unwrap();
    assert!(acl.add_step_rebuilds(&topo, &mut counts));
    assert!(
        counts.iter().all(|&c| c == 0.0),
        "nothing moved, nothing is rebuilt"
    );
}
