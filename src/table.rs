//! `yarnsim table`: the seed's Table 2 measured here. For one scene: the same start state run with
//! exact contact and with ACL at each tolerance, each timed over the same number of steps.
//!
//! The start state is the scene's relaxed state ([`crate::relax`]), or a saved run's state at a
//! frame (its checkpoint: [`Start::Checkpoint`], for garments whose relaxation takes hours), after
//! `start_frames` frames of the scene as given (so contacts are established, as in the seed, which
//! averages over a running simulation); it is saved once ([`Sim::export_state`]) and restored into
//! every variant, whose contact model then starts afresh. Each variant runs `warmup` untimed steps
//! (a fresh ACL builds every contact set at its first step, which a running simulation does not) and
//! then `steps` timed ones ([`Sim::measure_steps`]). Peak memory is the process's peak resident set over the variant
//! (`VmHWM`, reset before it where the kernel allows: Linux `clear_refs`), so it includes the
//! scene's own arrays.
//!
//! Given a GPU, each variant runs on the GPU step ([`GpuSim`]) from the same start state: its
//! warm-up and its timed steps are one frame each, so the whole-step time includes one frame's end
//! (positions downloaded, the pass-through check), and the contact time is the contact kernels'
//! timestamp time per step (0 where the adapter has no timestamp queries).

use crate::checkpoint::{CheckpointError, StateReader, StateWriter};
use crate::gpu::Gpu;
use crate::gpu_step::{GpuSim, GpuStepError};
use crate::scene::{ClothBuild, ContactModel, Scene};
use crate::sim::{contact_model, FrameStats, Sim, SimError};
use serde::Serialize;

/// Why a table row could not be measured.
#[derive(Debug, thiserror::Error)]
pub enum TableError {
    #[error(transparent)]
    Sim(#[from] SimError),
    #[error("saving or restoring the start state: {0}")]
    State(#[from] CheckpointError),
    #[error(transparent)]
    Gpu(#[from] GpuStepError),
    #[error(transparent)]
    Relax(crate::relax::RelaxError),
}

impl From<crate::relax::RelaxError> for TableError {
    fn from(e: crate::relax::RelaxError) -> TableError {
        match e {
            crate::relax::RelaxError::Sim(e) => TableError::Sim(e),
            crate::relax::RelaxError::Gpu(e) => TableError::Gpu(e),
            e => TableError::Relax(e),
        }
    }
}

/// What to measure.
#[derive(Clone, Debug)]
pub struct TableOptions {
    /// Timed steps per variant.
    pub steps: u32,
    /// Untimed steps per variant before them.
    pub warmup: u32,
    /// Frames of the scene (with its own contact model) before the start state is taken.
    pub start_frames: u32,
    /// ACL tolerances τ, one variant each.
    pub tolerances: Vec<f32>,
}

/// One variant's measurements: per-step means over the timed steps.
#[derive(Clone, Debug, Default, Serialize, PartialEq)]
pub struct Variant {
    /// `"exact"` or `"acl"`.
    pub model: String,
    /// τ (ACL only), as given (the f32 the model uses, printed shortest).
    pub tolerance: Option<f64>,
    /// Touching quadrature pairs (ACL: of the linearized models, as at their rebuilds).
    pub contacts: f64,
    /// Fraction of contact sets rebuilt per step (ACL only).
    pub updates: Option<f64>,
    /// Contact sets (ACL only).
    pub contact_sets: Option<f64>,
    /// Contact time per step (ms): the contact model's phase of the step.
    pub contact_ms: f64,
    /// Whole step (ms): wall time of the timed steps over their number.
    pub step_ms: f64,
    /// Peak resident memory over the variant (bytes), when the system reports it.
    pub peak_bytes: Option<u64>,
}

/// One scene's rows: its exact variant and its ACL variants.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct SceneTable {
    pub scene: String,
    pub loops: u32,
    pub segments: usize,
    pub control_points: usize,
    pub steps: u32,
    /// How the relaxation before the start state went (`settled` false: `relax.time` ran out);
    /// none when the start state came from a saved run's checkpoint (`start`).
    pub relax: Option<crate::relax::RelaxReport>,
    /// Where the start state came from: `"relaxed here"`, or the saved run's checkpoint (its
    /// directory and frame).
    pub start: String,
    pub exact: Variant,
    pub acl: Vec<Variant>,
}

/// What [`measure_scene`] is doing: relaxing the scene (its steps taken and the most it may take)
/// or running the start frames and the variants (steps done and the total).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stage {
    Relaxing,
    Measuring,
}

/// Progress: the stage, its steps done and its total.
pub type Progress<'a> = &'a mut dyn FnMut(Stage, u64, u64);

/// Total steps [`measure_scene`] runs for `opts` on a scene of `steps_per_frame` steps per frame,
/// relaxation excluded.
pub fn total_steps(opts: &TableOptions, steps_per_frame: u32) -> u64 {
    let variants = 1 + opts.tolerances.len() as u64;
    opts.start_frames as u64 * steps_per_frame as u64
        + variants * (opts.warmup as u64 + opts.steps as u64)
}

/// Where [`measure_scene`] takes its start state from before the start frames.
pub enum Start<'a> {
    /// The scene as built, relaxed here.
    Relax,
    /// A saved run's checkpoint at a frame (`yarnsim run --checkpoint-every`, e.g. of a relaxation
    /// that took hours), named by `label`; the scene must be the checkpoint's.
    Checkpoint {
        checkpoint: &'a crate::checkpoint::Checkpoint,
        label: String,
    },
}

/// Measures one scene (`scene` with its cloth `build` and `pins`; `name` labels the rows): its
/// relaxation (or a saved run's state, `start`), start frames and variants on the CPU path or,
/// given `gpu`, on the GPU step.
#[allow(clippy::too_many_arguments)]
pub fn measure_scene(
    name: &str,
    scene: &Scene,
    build: &ClothBuild,
    pins: &[u32],
    opts: &TableOptions,
    gpu: Option<&Gpu>,
    start: Start<'_>,
    progress: Progress<'_>,
) -> Result<SceneTable, TableError> {
    let mut base = Sim::from_build(scene, build, pins)?;
    let total = total_steps(opts, base.params.steps_per_frame);
    let mut relaxing =
        |p: &crate::relax::RelaxProgress| progress(Stage::Relaxing, p.step, p.max_steps);
    let (base, relax, start) = match (start, gpu) {
        (Start::Checkpoint { checkpoint, label }, _) => {
            checkpoint.restore(&mut base)?;
            (base, None, label)
        }
        (Start::Relax, None) => {
            base.check_start(build)?;
            let relax = crate::relax::relax(&mut base, scene, &mut relaxing)?;
            (base, Some(relax), "relaxed here".to_string())
        }
        (Start::Relax, Some(g)) => {
            base.check_start(build)?;
            let (base, relax) = crate::relax::relax_gpu(base, scene, g, &mut relaxing)?;
            (base, Some(relax), "relaxed here".to_string())
        }
    };
    let mut done = 0u64;
    let mut tick = || {
        done += 1;
        progress(Stage::Measuring, done, total);
    };
    // On the GPU, what the start frames' step learned (its length budget, its batch length) is
    // where each measured variant starts, so that they measure the step the run settles to.
    let mut learned = None;
    let base = match gpu {
        None => {
            let mut base = base;
            for _ in 0..opts.start_frames {
                base.frame_with(&mut tick)?;
            }
            base
        }
        Some(g) => {
            let mut gs = GpuSim::new(g, base, &scene.contact)?;
            if let Some(l) = relax.as_ref().and_then(|r| r.gpu.as_ref()) {
                gs.start_from(l)?;
            }
            for _ in 0..opts.start_frames {
                gs.frame_with(&mut tick)?;
            }
            learned = (opts.start_frames > 0).then(|| gs.tuning());
            gs.into_sim()?
        }
    };
    let mut saved = StateWriter::new();
    base.export_state(&mut saved)?;
    let body = saved.body().to_vec();
    let segments = base.topo.segments.len();
    let control_points = base.pos.len();
    drop(base);

    let mut run = |model: ContactModel, tolerance: Option<f32>| -> Result<Variant, TableError> {
        reset_peak_memory();
        let mut sim = Sim::from_build(scene, build, pins)?;
        sim.import_state(&StateReader::new(body.clone(), "the start state")?)?;
        let mut sc = scene.clone();
        sc.contact.model = model;
        if let Some(t) = tolerance {
            sc.contact.tolerance = t;
        }
        sim.set_radius(sc.yarn.radius, contact_model(&sc)?);
        let mut tick = || {
            done += 1;
            progress(Stage::Measuring, done, total);
        };
        let (st, contact_ms) = match gpu {
            None => {
                sim.measure_steps(opts.warmup, &mut tick)?;
                let st = sim.measure_steps(opts.steps, &mut tick)?;
                let contact = st
                    .phase_ms
                    .iter()
                    .find(|(n, _)| *n == "phase_contact_ms")
                    .map_or(0.0, |&(_, v)| v / st.steps.max(1) as f64);
                (st, contact)
            }
            Some(g) => {
                let mut gs = GpuSim::new(g, sim, &sc.contact)?;
                if let Some(t) = learned {
                    gs.set_tuning(t)?;
                }
                if opts.warmup > 0 {
                    gs.sim.params.steps_per_frame = opts.warmup;
                    gs.frame_with(&mut tick)?;
                }
                gs.sim.params.steps_per_frame = opts.steps;
                let (st, _) = gs.frame_with(&mut tick)?;
                let contact = st
                    .extra
                    .iter()
                    .find(|(n, _)| n == "gpu_contact_ms")
                    .map_or(0.0, |x| x.1);
                (st, contact)
            }
        };
        Ok(variant(&st, model, tolerance, contact_ms, peak_memory()))
    };
    let exact = run(ContactModel::Exact, None)?;
    let acl = opts
        .tolerances
        .iter()
        .map(|&t| run(ContactModel::Acl, Some(t)))
        .collect::<Result<Vec<_>, _>>()?;
    Ok(SceneTable {
        scene: name.to_string(),
        loops: build.loops,
        segments,
        control_points,
        steps: opts.steps,
        relax,
        start,
        exact,
        acl,
    })
}

/// A variant's row from the stats of its timed steps and its contact time per step.
fn variant(
    st: &FrameStats,
    model: ContactModel,
    tolerance: Option<f32>,
    contact_ms: f64,
    peak: Option<u64>,
) -> Variant {
    let value = |k: &str| st.contact.iter().find(|(n, _)| *n == k).map(|&(_, v)| v);
    let per = st.steps.max(1) as f64;
    let acl = model == ContactModel::Acl;
    Variant {
        model: if acl { "acl" } else { "exact" }.into(),
        tolerance: tolerance.map(|t| t.to_string().parse().unwrap_or(t as f64)),
        contacts: value("touching_pairs").unwrap_or(0.0),
        updates: if acl { value("rebuild_fraction") } else { None },
        contact_sets: if acl { value("contact_sets") } else { None },
        contact_ms,
        step_ms: st.wall_ms / per,
        peak_bytes: peak,
    }
}

/// Resets the process's peak resident set (Linux: `clear_refs` 5), so that the next
/// [`peak_memory`] is the peak from now on; elsewhere the peak stays the process's.
fn reset_peak_memory() {
    let _ = std::fs::write("/proc/self/clear_refs", "5");
}

/// The process's peak resident set in bytes (Linux `VmHWM`), if the system reports it.
pub fn peak_memory() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    let kb: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb * 1024)
}

/// Speed-up `old / new` as printed: the ratio of the two times as rounded for printing
/// ([`fmt_ms`]), so that a reader who divides the printed times gets the printed speed-up.
pub fn speedup(old_ms: f64, new_ms: f64) -> f64 {
    let (a, b) = (round_ms(old_ms), round_ms(new_ms));
    if b > 0.0 {
        a / b
    } else {
        f64::INFINITY
    }
}

/// A time rounded as [`fmt_ms`] prints it (3 significant digits).
pub fn round_ms(ms: f64) -> f64 {
    if ms <= 0.0 || !ms.is_finite() {
        return ms;
    }
    let digits = 2 - ms.log10().floor() as i32;
    let scale = 10f64.powi(digits);
    (ms * scale).round() / scale
}

/// A time in ms with 3 significant digits.
pub fn fmt_ms(ms: f64) -> String {
    let r = round_ms(ms);
    if r <= 0.0 || !r.is_finite() {
        return format!("{r}");
    }
    let digits = (2 - r.log10().floor() as i32).max(0) as usize;
    format!("{r:.digits$}")
}

/// A tolerance as a reader writes it: `1e30`, not Rust's 31 digits of `f64`'s `Display` (which
/// never uses an exponent); plain decimals between 1e-4 and 1e6.
fn fmt_tolerance(t: f64) -> String {
    if t == 0.0 || (1e-4..1e6).contains(&t.abs()) {
        format!("{t}")
    } else {
        format!("{t:e}")
    }
}

/// The table as Markdown: one row per ACL tolerance (the exact columns repeated), the seed's
/// Table 2 columns and peak memory.
pub fn markdown(tables: &[SceneTable]) -> String {
    let mut s = String::new();
    s.push_str(
        "| scene | loops | segments | tolerance | contacts | updates/step | contact exact (ms) | contact ACL (ms) | speed-up | step exact (ms) | step ACL (ms) | speed-up | peak memory exact / ACL (MiB) |\n",
    );
    s.push_str("|---|---|---|---|---|---|---|---|---|---|---|---|---|\n");
    let mib = |b: Option<u64>| b.map_or("?".into(), |b| format!("{:.0}", b as f64 / 1048576.0));
    for t in tables {
        for a in &t.acl {
            s.push_str(&format!(
                "| {} | {} | {} | {} | {:.0} | {:.3}% | {} | {} | {:.2}x | {} | {} | {:.2}x | {} / {} |\n",
                t.scene,
                t.loops,
                t.segments,
                a.tolerance.map_or("?".into(), fmt_tolerance),
                a.contacts,
                100.0 * a.updates.unwrap_or(f64::NAN),
                fmt_ms(t.exact.contact_ms),
                fmt_ms(a.contact_ms),
                speedup(t.exact.contact_ms, a.contact_ms),
                fmt_ms(t.exact.step_ms),
                fmt_ms(a.step_ms),
                speedup(t.exact.step_ms, a.step_ms),
                mib(t.exact.peak_bytes),
                mib(a.peak_bytes),
            ));
        }
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rounding_keeps_three_significant_digits() {
        assert_eq!(fmt_ms(254.04), "254");
        assert_eq!(fmt_ms(41.66), "41.7");
        assert_eq!(fmt_ms(0.012345), "0.0123");
        assert_eq!(fmt_ms(3063.0), "3060");
        assert_eq!(speedup(254.04, 41.66), 254.0 / 41.7);
    }

    #[test]
    fn tolerances_print_as_written() {
        // (The table's tolerances are f32 values carried as their shortest decimal, as
        // `variant` does.)
        let carried = |t: f32| fmt_tolerance(t.to_string().parse().unwrap());
        assert_eq!(carried(1e30), "1e30");
        assert_eq!(carried(1e-7), "1e-7");
        assert_eq!(carried(0.01), "0.01");
        assert_eq!(carried(0.0), "0");
        assert_eq!(carried(250.5), "250.5");
    }
}
