//! Fixtures for the GPU parity tests: a real scene, stepped on the CPU path for a while, so kernels
//! are compared on states with motion, bending, contact and pinned points (not zeros or noise).
#![allow(dead_code)]

use std::path::Path;
use yarnsim::scene::{self, Scene};
use yarnsim::sim::Sim;

/// `scenes/NAME.toml` with the `--set` style overrides `sets`, built and stepped `steps` times on
/// the CPU path.
pub fn scene_sim(name: &str, sets: &[&str], steps: usize) -> Sim {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("scenes");
    let path = dir.join(format!("{name}.toml"));
    let mut sc = Scene::load(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    for s in sets {
        sc.apply_set(s).unwrap_or_else(|e| panic!("--set {s}: {e}"));
    }
    let build = scene::build_curves(&sc, &dir).unwrap();
    let pins = scene::pinned_points(&sc, &build).unwrap();
    let mut sim = Sim::from_build(&sc, &build, &pins).unwrap();
    for _ in 0..steps {
        sim.step().unwrap();
    }
    sim
}

/// The contact parameters of `scenes/NAME.toml` with the overrides `sets`.
pub fn scene_contact(name: &str, sets: &[&str]) -> yarnsim::scene::ContactParams {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join(format!("scenes/{name}.toml"));
    let mut sc = Scene::load(&path).unwrap();
    for s in sets {
        sc.apply_set(s).unwrap();
    }
    sc.contact
}

/// The bytes of a Pod slice.
pub fn bytes<T: bytemuck::Pod>(v: &[T]) -> &[u8] {
    bytemuck::cast_slice(v)
}

/// The largest component-wise difference of two point arrays, relative to `scale`, and where.
pub fn max_rel_diff(a: &[[f32; 4]], b: &[[f32; 4]], scale: f32) -> (f32, usize) {
    assert_eq!(a.len(), b.len());
    let mut worst = (0.0f32, 0);
    for (i, (x, y)) in a.iter().zip(b).enumerate() {
        for k in 0..3 {
            let d = (x[k] - y[k]).abs() / scale;
            // A NaN difference counts as the worst.
            if d.is_nan() || d > worst.0 {
                worst = (d, i);
            }
        }
    }
    worst
}

/// A fresh directory for a test's files: `yarnsim-TEST-PID-TAG` in the system's temporary folder.
pub fn temp_dir(test: &str, tag: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("yarnsim-{test}-{}-{tag}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// Writes `scene_text` as `dir/scene.toml`, loads it and builds its simulation (no pins).
pub fn sim_of(dir: &Path, scene_text: &str) -> (Scene, Sim) {
    let path = dir.join("scene.toml");
    std::fs::write(&path, scene_text).unwrap();
    let scene = Scene::load(&path).unwrap();
    let build = scene::build_curves(&scene, dir).unwrap();
    let sim = Sim::from_build(&scene, &build, &[]).unwrap();
    (scene, sim)
}

/// A binding table's check (`AclCaps::binding_bytes`, `exact_gpu::binding_bytes`): each size's
/// entry of `table` is the largest of the buffers `rows` lists for it, as `buffer` finds them in a
/// build.
pub fn assert_largest_buffers<'a>(
    table: &[(&'static str, u64)],
    rows: &[(&str, &[&str])],
    buffer: impl Fn(&str) -> Option<&'a wgpu::Buffer>,
) {
    for &(capacity, bytes) in table {
        let (_, names) = rows
            .iter()
            .find(|(c, _)| *c == capacity)
            .unwrap_or_else(|| panic!("{capacity}: no buffers listed"));
        let largest = names
            .iter()
            .map(|n| {
                buffer(n)
                    .unwrap_or_else(|| panic!("{capacity}: no buffer {n}"))
                    .size()
            })
            .max()
            .unwrap();
        assert_eq!(largest, bytes, "{capacity}: largest of {names:?}");
    }
}
