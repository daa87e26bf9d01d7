//! The `yarnsim` command line: `run` simulates a scene headless (optionally writing BCC/OBJ frames,
//! capturing PNG frames coloured per yarn, by contact-model rebuilds or by contact density, and the
//! seed's Figure 2 contact matrix of chosen frames), `info` reports adapters and scene size, `render`
//! draws a saved BCC state, `links` prints the linking certificate of the closed loops of a BCC file
//! or a scene, or compares it with a saved one.
//!
//! Errors print their whole chain (`error: …` then `  caused by: …`) and exit with status 1; clap's
//! usage errors exit with status 2. Nothing here panics on bad input.

use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Instant;

use anyhow::{bail, Context, Result};
use clap::{Parser, Subcommand, ValueEnum};
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

use yarnsim::checkpoint::{self, StateWriter};
use yarnsim::gpu::Gpu;
use yarnsim::gpu_step::{GpuSim, GpuStepError};
use yarnsim::render::{render_bcc_command, Capture, ColorMode, RenderInput};
use yarnsim::scene::{self, ContactModel, Scene};
use yarnsim::sim::{FrameStats, SegmentValue, Sim};
use yarnsim::state::Topology;

#[derive(Parser)]
#[command(
    name = "yarnsim",
    version,
    about = "Yarn-level simulation of knitted cloth with adaptive contact linearization"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Simulate a scene headless.
    Run(RunArgs),
    /// List the GPU adapters and, given a scene, its size.
    Info(InfoArgs),
    /// Render a saved state (BCC) to a PNG without simulating (needs a GPU adapter).
    Render(RenderArgs),
    /// Print the linking certificate of the closed loops in a BCC file or a scene's cloth.
    Links(LinksArgs),
    /// Measure the seed's Table 2: each scene from one start state with exact contact and with ACL
    /// at each tolerance; contacts, models updated per step, contact and step times, speed-ups,
    /// peak memory, as Markdown (and JSON with --json).
    Table(TableArgs),
}

#[derive(clap::Args)]
struct TableArgs {
    /// Scenes (TOML), each relaxed here. Default (without --from): the seed's garments in scenes/
    /// (scarf, sack, afghan, sweater).
    scenes: Vec<PathBuf>,
    /// Also measure a saved run, from its checkpoint at a frame: DIR is the --out directory of a
    /// `yarnsim run --checkpoint-every N` (its scene and overrides, no relaxation here; e.g. a
    /// garment relaxed on another machine or over several sessions). Repeatable.
    #[arg(long = "from", value_name = "DIR")]
    from: Vec<PathBuf>,
    /// Timed steps per variant.
    #[arg(long, default_value_t = 100)]
    steps: u32,
    /// Untimed steps per variant before the timed ones (a fresh ACL builds every contact set at
    /// its first step).
    #[arg(long, default_value_t = 10)]
    warmup: u32,
    /// Frames of the scene (its own contact model) before the start state is taken, so contacts
    /// are established.
    #[arg(long, default_value_t = 0)]
    start_frame: u32,
    /// ACL tolerance τ (repeatable; one row each).
    #[arg(long = "tolerance", default_values_t = [0.04f32])]
    tolerances: Vec<f32>,
    /// Where the steps run: the relaxation, the start frames and the variants (gpu: all on the GPU step).
    #[arg(long, value_enum, default_value = "cpu")]
    backend: Backend,
    /// The GPU adapter of --backend gpu (the first whose name contains this text).
    #[arg(long)]
    adapter: Option<String>,
    /// Also write the table as JSON to this file.
    #[arg(long, value_name = "FILE")]
    json: Option<PathBuf>,
    /// Override a scene field in every scene, e.g. --set relax.time=0 (repeatable).
    #[arg(long = "set", value_name = "KEY=VALUE")]
    sets: Vec<String>,
    /// No progress bar.
    #[arg(short, long)]
    quiet: bool,
}

#[derive(clap::Args)]
struct LinksArgs {
    /// BCC file, or a scene (.toml) whose cloth (generated or loaded, then placed) is certified.
    file: PathBuf,
    /// Compare with this saved certificate instead of printing: list the loop pairs whose linking
    /// number changed, one `i,j,OLD,NEW` line each; exit status 3 when anything changed.
    #[arg(long, value_name = "CERT")]
    compare: Option<PathBuf>,
    /// Sum the Gauss integral over every segment pair instead of counting crossings (the same
    /// certificate, quadratic in the loop length: the reference the fast method is tested against).
    #[arg(long)]
    direct: bool,
}

/// Exit status of `links --compare` when the certificates differ (1 is an error, 2 a usage error).
const EXIT_CHANGED: u8 = 3;

#[derive(Clone, Copy, Default, PartialEq, Eq, ValueEnum, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
enum Backend {
    #[default]
    Cpu,
    Gpu,
}

/// How captured frames colour the yarn (`--color`).
#[derive(Clone, Copy, PartialEq, Eq, ValueEnum, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
enum ColorArg {
    /// One colour per yarn.
    Yarn,
    /// Contact-model rebuilds during the frame in red over the yarn colour (seed Figures 1 and 8).
    Updates,
    /// Touching quadrature pairs per segment on a blue-yellow-red ramp.
    Contacts,
}

impl ColorArg {
    fn mode(self) -> ColorMode {
        match self {
            ColorArg::Yarn => ColorMode::Yarn,
            ColorArg::Updates => ColorMode::Updates,
            ColorArg::Contacts => ColorMode::Contacts,
        }
    }
}

#[derive(clap::Args)]
struct RunArgs {
    /// Scene file (TOML); not with --resume, which takes the checkpoint's.
    #[arg(required_unless_present = "resume", conflicts_with = "resume")]
    scene: Option<PathBuf>,
    /// Number of frames to simulate (default: the scene's simulation.frames).
    #[arg(long)]
    frames: Option<u32>,
    /// Write every frame's state as BCC into this directory (frame_0000.bcc is the initial state).
    #[arg(long)]
    out: Option<PathBuf>,
    /// With --out, also write every frame as OBJ polylines (frame_NNNN.obj beside frame_NNNN.bcc).
    #[arg(long, requires = "out")]
    obj: bool,
    /// Where the time step runs (default: cpu). With --resume: the run's own, unless given; another
    /// goes on there from the checkpoint, its contact model built afresh (not bit for bit).
    #[arg(long, value_enum)]
    backend: Option<Backend>,
    /// The GPU adapter to use (the first whose name contains this text, ignoring case; see
    /// `yarnsim info` for the names). Default: the preferred adapter.
    #[arg(long, value_name = "NAME")]
    adapter: Option<String>,
    /// Override a scene field, e.g. --set contact.model=none (repeatable).
    #[arg(long = "set", value_name = "KEY=VALUE")]
    set: Vec<String>,
    /// Write one JSON record per frame to this file.
    #[arg(long, value_name = "FILE.jsonl")]
    stats: Option<PathBuf>,
    /// Print nothing but errors and warnings (no progress bar, no per-frame lines, no summary).
    #[arg(long, short)]
    quiet: bool,
    /// Render frames to DIR/frame_NNNN.png (frame 0 is the initial state; needs a GPU adapter).
    #[arg(long, value_name = "DIR")]
    capture: Option<PathBuf>,
    /// Capture every N-th frame.
    #[arg(long, value_name = "N", default_value_t = 1, requires = "capture")]
    capture_every: u32,
    /// Width of captured frames in pixels.
    #[arg(long, default_value_t = 640, requires = "capture")]
    width: u32,
    /// Height of captured frames in pixels.
    #[arg(long, default_value_t = 480, requires = "capture")]
    height: u32,
    /// Colour of captured yarn: per yarn, contact-model rebuilds of the frame in red, or contact
    /// density (the last two need contact.model = exact or acl).
    #[arg(long, value_enum, default_value = "yarn", requires = "capture")]
    color: ColorArg,
    /// Write the seed's Figure 2 (touching quadrature pairs in red, contact-set boxes outlined) of
    /// frame FRAME as contact_matrix_FRAME.png (4 digits) into the capture directory, else the --out
    /// directory; SIZE pixels square (default: S clamped to 256..1024). Repeatable.
    #[arg(long, value_name = "FRAME[:SIZE]")]
    contact_matrix: Vec<String>,
    /// Let --out and --capture write into directories that hold frames (`frame_NNNN.*`) of another
    /// run: their frame files, contact matrices, manifest.json and checkpoint are removed first;
    /// and let --stats replace a file that is not a stats file.
    #[arg(long)]
    overwrite: bool,
    /// Write the whole simulation state to OUT/checkpoint.bin at frame 0 (after the relaxation, and during it), every N frames and after the last
    /// one (atomically: the previous checkpoint stays until the new one is complete), so that
    /// --resume can continue the run bit for bit (with --backend gpu too: the GPU's contact state is
    /// saved with it).
    #[arg(long, value_name = "N")]
    checkpoint_every: Option<u32>,
    /// Continue the run whose --out directory DIR holds a checkpoint, with its scene, overrides and
    /// outputs, until it has --frames frames in all (default: the frames it was started for).
    /// Frames, stats and manifest continue where the checkpoint was taken. Only --frames,
    /// --checkpoint-every, --quiet, --adapter and --backend (to go on on the other backend) may be
    /// given with it.
    #[arg(long, value_name = "DIR", conflicts_with_all = [
        "out", "set", "overwrite", "obj", "stats", "capture", "capture_every",
        "width", "height", "color", "contact_matrix",
    ])]
    resume: Option<PathBuf>,
}

impl RunArgs {
    /// Where the time step runs.
    fn backend(&self) -> Backend {
        self.backend.unwrap_or_default()
    }
}

/// What a checkpoint records of the run's options (`--resume` restores them): the scene and its
/// overrides, the frames asked for, and what is written where.
#[derive(serde::Serialize, serde::Deserialize)]
struct SavedRun {
    /// The scene file as given (for messages and the manifest; the scene itself is in the
    /// checkpoint).
    scene_path: PathBuf,
    set: Vec<String>,
    frames: u32,
    obj: bool,
    stats: Option<SavedPath>,
    checkpoint_every: u32,
    capture: Option<SavedPath>,
    capture_every: u32,
    width: u32,
    height: u32,
    color: ColorArg,
    contact_matrix: Vec<String>,
    adapter: Option<String>,
    /// The backend the run steps on (checkpoints written before GPU checkpoints existed: cpu).
    #[serde(default)]
    backend: Backend,
    /// Set in a checkpoint taken during the relaxation before t = 0: where it stands.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    relaxing: Option<yarnsim::relax::RelaxPoint>,
}

/// After a GPU run failed with `e` where the CPU path could go on (its contacts past the adapter's
/// binding limit, say: [`gpu_cannot_go_on`]): where it wrote a checkpoint, how to go on from it on
/// the CPU; without one, that the CPU path runs the scene.
fn resume_hint(a: &RunArgs, e: &anyhow::Error) {
    if a.backend() != Backend::Gpu || !gpu_cannot_go_on(e) {
        return;
    }
    match &a.out {
        // (Over the bar: the frames' bar is still on the terminal.)
        Some(dir) if dir.join(checkpoint::FILE_NAME).exists() => say_over_bar(&format!(
            "note: the run's last checkpoint is in {0}; `yarnsim run --resume {0} --backend cpu` goes on from there on the CPU",
            dir.display()
        )),
        // (Too many balls for the GPU step: its message says so already.)
        _ if gpu_error(e, |g| matches!(g, GpuStepError::TooManyBalls { .. })) => {}
        _ => say_over_bar(
            "note: this stops the GPU step, not the CPU path: the same command with `--backend cpu` runs the scene (a GPU run with `--checkpoint-every N` that stops so can go on from its last checkpoint on the CPU)"
        ),
    }
}

/// Where a resumed run starts ([`SavedRun::apply`]).
struct ResumePoint {
    /// Where the relaxation stood, when the checkpoint was taken during it.
    relaxing: Option<yarnsim::relax::RelaxPoint>,
    /// The run's own backend, where the command line moves it to the other.
    switched: Option<Backend>,
}

/// A path of a run's output: relative to the --out directory when inside it (so the directory may
/// move), else absolute.
#[derive(serde::Serialize, serde::Deserialize)]
struct SavedPath {
    path: PathBuf,
    in_out: bool,
}

impl SavedPath {
    fn new(p: &Path, out: &Path) -> SavedPath {
        // One of the process's descriptors (`/dev/fd/1`, `/proc/self/fd/1`, `/dev/stdout`) is
        // kept as given: canonicalised, its directory became `/proc/PID/fd` of the run that saved
        // it, no descriptor of the resumed run (whose resume failed, or wrote over another
        // process's file).
        if yarnsim::output::is_own_descriptor(p) {
            return SavedPath {
                path: p.to_path_buf(),
                in_out: false,
            };
        }
        let canon = |p: &Path| {
            std::fs::canonicalize(p)
                .or_else(|_| std::path::absolute(p))
                .unwrap_or_else(|_| p.to_path_buf())
        };
        // The file itself may not exist yet: its directory does.
        let full = match (p.parent(), p.file_name()) {
            (Some(d), Some(name)) if !p.is_dir() => canon(if d.as_os_str().is_empty() {
                Path::new(".")
            } else {
                d
            })
            .join(name),
            _ => canon(p),
        };
        match full.strip_prefix(canon(out)) {
            Ok(rel) => SavedPath {
                path: rel.to_path_buf(),
                in_out: true,
            },
            Err(_) => SavedPath {
                path: full,
                in_out: false,
            },
        }
    }

    fn resolve(&self, out: &Path) -> PathBuf {
        if self.in_out {
            out.join(&self.path)
        } else {
            self.path.clone()
        }
    }
}

impl SavedRun {
    fn new(a: &RunArgs, scene_path: &Path, frames: u32, every: u32, out: &Path) -> SavedRun {
        SavedRun {
            scene_path: scene_path.to_path_buf(),
            set: a.set.clone(),
            frames,
            obj: a.obj,
            stats: a.stats.as_deref().map(|p| SavedPath::new(p, out)),
            checkpoint_every: every,
            capture: a.capture.as_deref().map(|p| SavedPath::new(p, out)),
            capture_every: a.capture_every,
            width: a.width,
            height: a.height,
            color: a.color,
            contact_matrix: a.contact_matrix.clone(),
            adapter: a.adapter.clone(),
            backend: a.backend(),
            relaxing: None,
        }
    }

    /// Fills `a` (a `--resume DIR` command line) with the saved options; what the command line
    /// gives (--frames, --checkpoint-every, --adapter, --backend) wins. Returns where the
    /// relaxation stood when the checkpoint was taken during it, and the run's own backend where
    /// the command line gives another.
    fn apply(self, a: &mut RunArgs, dir: &Path) -> ResumePoint {
        a.scene = Some(self.scene_path);
        a.set = self.set;
        a.frames = a.frames.or(Some(self.frames));
        a.out = Some(dir.to_path_buf());
        a.obj = self.obj;
        a.stats = self.stats.map(|p| p.resolve(dir));
        // (0: the run wrote its checkpoint only where a signal stopped it.)
        a.checkpoint_every = a
            .checkpoint_every
            .or(Some(self.checkpoint_every).filter(|&n| n > 0));
        a.capture = self.capture.map(|p| p.resolve(dir));
        a.capture_every = self.capture_every;
        a.width = self.width;
        a.height = self.height;
        a.color = self.color;
        a.contact_matrix = self.contact_matrix;
        let switched = a
            .backend
            .filter(|b| *b != self.backend)
            .map(|_| self.backend);
        a.backend = Some(a.backend.unwrap_or(self.backend));
        // (The saved adapter only where the run still uses one.)
        let uses_gpu = a.backend() == Backend::Gpu || a.capture.is_some();
        a.adapter = a.adapter.take().or(self.adapter.filter(|_| uses_gpu));
        a.overwrite = false;
        ResumePoint {
            relaxing: self.relaxing,
            switched,
        }
    }
}

/// One `--contact-matrix FRAME[:SIZE]` request.
struct MatrixRequest {
    frame: u32,
    size: Option<u32>,
}

fn parse_matrix_request(s: &str) -> Result<MatrixRequest> {
    let (f, size) = match s.split_once(':') {
        Some((f, z)) => (f, Some(z)),
        None => (s, None),
    };
    let frame = f
        .trim()
        .parse::<u32>()
        .with_context(|| format!("--contact-matrix {s}: frame {f:?} is not a frame number"))?;
    let size = match size {
        Some(z) => {
            let z = z
                .trim()
                .parse::<u32>()
                .with_context(|| format!("--contact-matrix {s}: size {z:?} is not a number"))?;
            if !(1..=16384).contains(&z) {
                bail!("--contact-matrix {s}: size must be between 1 and 16384 pixels");
            }
            Some(z)
        }
        None => None,
    };
    Ok(MatrixRequest { frame, size })
}

#[derive(clap::Args)]
struct RenderArgs {
    /// Saved state (BCC).
    state: PathBuf,
    /// PNG to write.
    #[arg(long)]
    out: PathBuf,
    /// Scene whose yarn radius, obstacles and camera to use.
    #[arg(long)]
    scene: Option<PathBuf>,
    #[arg(long, default_value_t = 640)]
    width: u32,
    #[arg(long, default_value_t = 480)]
    height: u32,
}

#[derive(clap::Args)]
struct InfoArgs {
    /// Scene file (TOML) to report the size of.
    scene: Option<PathBuf>,
    /// Print one JSON object.
    #[arg(long)]
    json: bool,
    /// Override a scene field (repeatable).
    #[arg(long = "set", value_name = "KEY=VALUE")]
    set: Vec<String>,
}

fn main() -> ExitCode {
    // Rust starts with SIGPIPE ignored, so once a reader closes the pipe (`yarnsim info | head -1`,
    // `yarnsim run … | head -3`) every print fails, and `println!` panicked with a backtrace. The
    // default action ends the process quietly, as other command-line tools end; what a run wrote
    // stays (its frames, its checkpoint, and the manifest, rewritten after every frame).
    #[cfg(unix)]
    // SAFETY: done first, before any other thread exists, with the default action (no handler).
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
    // Ctrl-C, SIGTERM and SIGHUP are handled on a thread of their own (a run with --out stops where it
    // can write a checkpoint; every command removes its temporary files): installed while the
    // process has one thread, so that every later thread leaves the signals to it.
    if let Err(e) = yarnsim::interrupt::install() {
        eprintln!("warning: {e}; Ctrl-C ends the process at once");
    }
    let cli = Cli::parse();
    // The Vulkan loader complains on stderr when XDG_RUNTIME_DIR is unset; give it a private
    // per-user directory (kept for later runs). Done first, while the process has one thread.
    yarnsim::gpu::ensure_runtime_dir();
    let result = match cli.command {
        // The run executes on a worker of its own thread pool, so each parallel stage of the step
        // starts on the calling worker instead of waking the pool from outside and waiting for it
        // (measured: ~7% of the wall time of a step of the 2,000-loop ACL benchmark).
        Command::Run(a) => match rayon::ThreadPoolBuilder::new().build() {
            Ok(pool) => pool.install(|| run(a)),
            Err(e) => Err(anyhow::anyhow!("cannot start the worker threads: {e}")),
        },
        Command::Info(a) => info(a),
        Command::Table(a) => match rayon::ThreadPoolBuilder::new().build() {
            Ok(pool) => pool.install(|| table(a)),
            Err(e) => Err(anyhow::anyhow!("cannot start the worker threads: {e}")),
        },
        Command::Render(a) => render(a),
        Command::Links(a) => match links(a) {
            Ok(code) => return code,
            Err(e) => Err(e),
        },
    };
    let stopped = match &result {
        Ok(()) => false,
        Err(e) => e.is::<Stopped>(),
    };
    if let Err(e) = &result {
        if !stopped {
            clear_shown_bar();
            say_line(&error_report(e));
        }
    }
    // A command asked to stop by a signal ends by it, once it has stopped (as the signal's
    // default action would end it: a shell loop over runs stops at Ctrl-C).
    if let Some(sig) = yarnsim::interrupt::requested() {
        yarnsim::interrupt::end_by_signal(sig);
    }
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(_) => ExitCode::FAILURE,
    }
}

/// A run that stopped on a signal where it could be saved (`yarnsim run` with `--out`), having
/// said so: `main` then ends the process by that signal.
#[derive(Debug, thiserror::Error)]
#[error("stopped by a signal")]
struct Stopped;

/// An error and its causes as the CLI prints them: a cause whose words the line above already
/// holds is left out (a library error that names its source in its own message and also chains
/// it printed the same words two or three times: `cloth.0: a.bcc: No such file …`, `a.bcc: No
/// such file …`, `No such file …`).
fn error_report(e: &anyhow::Error) -> String {
    let mut last = e.to_string();
    let mut report = format!("error: {last}");
    for cause in e.chain().skip(1) {
        let words = cause.to_string();
        if !last.contains(&words) {
            report.push_str(&format!("\n  caused by: {words}"));
        }
        last = words;
    }
    // A step that failed for want of a smaller time step may have failed for a stiffness set far
    // from its default (in range, so the scene was taken): name those too.
    if let Some(values) = FAR_FROM_DEFAULTS.get().filter(|v| !v.is_empty()) {
        if report.contains("simulation.dt") {
            report.push_str(&format!(
                "\nnote: the scene sets {} (each stiffening the forces {STIFF_FACTOR}× or more beyond the defaults': a heavier pull, a lighter yarn, a stiffer one): the time step may be too long for {}",
                values.join(", "),
                if values.len() > 1 { "these" } else { "that" }
            ));
        }
    }
    report
}

/// [`Scene::far_from_defaults`] of the scene `yarnsim run` runs, for [`error_report`].
static FAR_FROM_DEFAULTS: std::sync::OnceLock<Vec<String>> = std::sync::OnceLock::new();

/// How far from its default a stiffness is named by [`error_report`].
const STIFF_FACTOR: f64 = 100.0;

/// A loaded scene with its overrides applied, and the cloth built from it.
struct Loaded {
    /// The scene, `yarn.radius = "auto"` resolved to the fitted radius.
    scene: Scene,
    build: scene::ClothBuild,
    pins: Vec<u32>,
    /// The radius fit, when `yarn.radius = "auto"`.
    fit: Option<yarnsim::import::RadiusFit>,
}

fn load(path: &Path, sets: &[String]) -> Result<Loaded> {
    let mut scene = Scene::load(path)?;
    scene.apply_sets(sets)?;
    let dir = path.parent().unwrap_or(Path::new("."));
    // The file and the line of the table an error is about (`tiny.toml:7` for `pin.0`): these
    // errors are raised after the file is read, and know the key but not the line.
    let located = |what: &str, e: scene::SceneError| {
        // (Only a regular file is read again: a named pipe's second open waits for a writer that
        // never comes, and a stream's second read is not the scene.)
        let line = e.table_key().and_then(|key| {
            std::fs::metadata(path).ok().filter(|m| m.is_file())?;
            let text = std::fs::read_to_string(path).ok()?;
            scene::line_of_key(&text, &key)
        });
        let at = match line {
            Some(line) => format!("{}:{line}", path.display()),
            None => path.display().to_string(),
        };
        anyhow::Error::new(e).context(format!("{what} of {at}"))
    };
    let build = scene::build_curves(&scene, dir).map_err(|e| located("building the cloth", e))?;
    let fit = scene::resolve_radius(&mut scene, &build)
        .with_context(|| format!("fitting the yarn radius of {}", path.display()))?;
    let pins = scene::pinned_points(&scene, &build)
        .map_err(|e| located("selecting the pinned points", e))?;
    Ok(Loaded {
        scene,
        build,
        pins,
        fit,
    })
}

/// Says on stderr how each BCC piece of B-splines was converted (its points multiply; the report
/// warns of curves beyond the tolerance). With `quiet`, only a piece with such a warning.
fn warn_imports(build: &scene::ClothBuild, quiet: bool) {
    for imp in &build.imports {
        let over = imp
            .report
            .bspline
            .as_ref()
            .is_some_and(|b| b.curves_over_tolerance > 0);
        if imp.report.bspline.is_some() && (over || !quiet) {
            eprintln!(
                "cloth.{}: {}: {}",
                imp.piece,
                imp.path.display(),
                imp.report
            );
        }
    }
}

/// One line about a radius fit: the radius, what it came from, and the overlap it leaves.
fn fit_line(fit: &yarnsim::import::RadiusFit) -> String {
    use yarnsim::import::FIT_PERCENTILE;
    format!(
        "{:.4} cm: half the {}% quantile, {:.4} cm, of the distances from a quadrature point to another \
         strand (nearest {:.4} cm, median {:.4} cm, over {} quadrature points)",
        fit.radius,
        FIT_PERCENTILE * 100.0,
        2.0 * fit.radius,
        fit.quantile(0.0),
        fit.quantile(0.5),
        fit.points
    )
}

/// The time step of a run: the CPU reference path or the GPU path (which keeps a host `Sim` whose
/// positions it refreshes every frame, so the writers below serve both).
enum Runner {
    Cpu(Box<Sim>),
    Gpu(Box<GpuSim>),
}

impl Runner {
    fn sim(&self) -> &Sim {
        match self {
            Runner::Cpu(s) => s,
            Runner::Gpu(g) => &g.sim,
        }
    }

    fn sim_mut(&mut self) -> &mut Sim {
        match self {
            Runner::Cpu(s) => s,
            Runner::Gpu(g) => &mut g.sim,
        }
    }

    /// The touching pairs and contact-set boxes of the current state (on the GPU path, the sets'
    /// boxes come from the GPU's table).
    fn contact_pairs(
        &mut self,
        touching: &mut Vec<[u32; 2]>,
        boxes: &mut Vec<[u32; 4]>,
    ) -> Result<bool> {
        Ok(match self {
            Runner::Cpu(s) => s.contact_pairs(touching, boxes)?,
            Runner::Gpu(g) => g.contact_pairs(touching, boxes)?,
        })
    }

    /// Brings the host's `Sim` up to date for a checkpoint, and returns the checkpoint's sections
    /// besides the `Sim`'s. On the GPU: the state the step changes, a fresh contact model on the
    /// host in place of the one the GPU took its start from (the GPU's model is what goes on), and
    /// the GPU's contact state as sections ([`GpuSim::export_contact_state`]), from which a
    /// resumed run goes on bit for bit. On the CPU: none.
    fn sync_for_checkpoint(&mut self, scene: &Scene) -> Result<StateWriter> {
        Ok(match self {
            Runner::Gpu(g) => {
                g.sync_host()?;
                let r = g.sim.params.radius;
                g.sim.set_radius(r, yarnsim::sim::contact_model(scene)?);
                g.export_contact_state()?
            }
            Runner::Cpu(_) => StateWriter::new(),
        })
    }

    /// [`GpuSim::set_run_ahead`] on the GPU path (the CPU path has nothing to run ahead).
    fn set_run_ahead(&mut self, on: bool) {
        if let Runner::Gpu(g) = self {
            g.set_run_ahead(on);
        }
    }

    /// Steps of the next frame the GPU ran ahead ([`GpuSim::steps_ahead`]; 0 on the CPU path).
    fn steps_ahead(&self) -> usize {
        match self {
            Runner::Gpu(g) => g.steps_ahead(),
            Runner::Cpu(_) => 0,
        }
    }

    fn frame(&mut self, on_step: &mut dyn FnMut()) -> Result<FrameStats> {
        Ok(match self {
            Runner::Cpu(s) => s.frame_with(on_step)?,
            Runner::Gpu(g) => g.frame_with(on_step)?.0,
        })
    }
}

/// Opens the adapter `--adapter` names, or the preferred one; with a smaller storage binding
/// limit where `YARNSIM_GPU_BINDING_LIMIT` (bytes) asks for one (how a scene fares on a GPU that
/// offers less, such as wgpu's default 128 MiB, on one that offers more).
fn open_gpu(adapter: &Option<String>) -> Result<Gpu> {
    let gpu = match adapter {
        Some(name) => Gpu::with_adapter_name(name),
        None => Gpu::new(),
    }?;
    match binding_limit_asked()? {
        Some(bytes) => Ok(gpu.with_binding_limit(bytes)?),
        None => Ok(gpu),
    }
}

/// The storage binding limit `YARNSIM_GPU_BINDING_LIMIT` asks for (bytes), if it is set; an
/// error naming it when it is no such limit.
fn binding_limit_asked() -> Result<Option<u64>> {
    const VAR: &str = "YARNSIM_GPU_BINDING_LIMIT";
    match std::env::var(VAR) {
        Ok(v) => {
            let bytes: u64 = v
                .trim()
                .parse()
                .ok()
                .filter(|&b| b >= 1024)
                .with_context(|| {
                    format!(
                        "{VAR}={v:?}: not a storage binding limit in bytes (a whole number ≥ 1024)"
                    )
                })?;
            Ok(Some(bytes))
        }
        Err(_) => Ok(None),
    }
}

/// Whether `e` says the GPU step cannot go on where the CPU path could: a size past what the
/// adapter binds, a limit of the adapter or of the kernels, the device itself (not the physics,
/// which the CPU path would meet too).
fn gpu_cannot_go_on(e: &anyhow::Error) -> bool {
    use GpuStepError as E;
    gpu_error(e, |g| {
        matches!(
            g,
            E::Binding { .. }
                | E::Limit { .. }
                | E::TooManyBalls { .. }
                | E::Device { .. }
                | E::KernelLimit { .. }
        )
    })
}

/// Whether a GPU step's error in `e`'s chain (also inside a relaxation's) is one `what` picks.
fn gpu_error(e: &anyhow::Error, what: impl Fn(&GpuStepError) -> bool) -> bool {
    e.chain().any(|c| {
        c.downcast_ref::<GpuStepError>().is_some_and(&what)
            || matches!(c.downcast_ref::<yarnsim::relax::RelaxError>(), Some(yarnsim::relax::RelaxError::Gpu(g)) if what(g))
    })
}

fn run(mut a: RunArgs) -> Result<()> {
    // `--resume DIR`: the checkpoint's scene and options, then the same run as any other.
    let (resumed, relaxing, switched) = match a.resume.take() {
        Some(dir) => {
            let (ck, p) = open_resume(&mut a, &dir)?;
            (Some(ck), p.relaxing, p.switched)
        }
        None => (None, None, None),
    };
    // A resumed run on the other backend goes on from the checkpoint's state with its contact
    // model built afresh (the paths keep their models' state in different forms).
    if let (Some(from), false) = (switched, a.quiet) {
        let name = |b: Backend| match b {
            Backend::Cpu => "cpu",
            Backend::Gpu => "gpu",
        };
        eprintln!(
            "note: the run was stepped with --backend {}; it goes on with --backend {} from its checkpoint, its contact model built afresh there (near the run it continues, not bit for bit)",
            name(from),
            name(a.backend())
        );
    }
    // A run resumed from a checkpoint taken during its relaxation goes on with the relaxation and
    // then starts its frames as a fresh run does; one resumed at a frame goes on from there.
    let frames_resumed = resumed.is_some() && relaxing.is_none();
    let scene_path = a
        .scene
        .clone()
        .context("no scene file given (the scene, or --resume DIR)")?;
    if a.adapter.is_some() && a.backend() == Backend::Cpu && a.capture.is_none() {
        bail!("--adapter picks the GPU of --backend gpu or --capture; this run uses neither");
    }
    // The scene (with its overrides) and the cloth: from the file, or from the checkpoint, whose
    // simulation is built below.
    let (scene, scene_dir, cloth) = match &resumed {
        Some(ck) => (ck.scene.clone(), ck.meta.scene_dir.clone(), None),
        None => {
            let Loaded {
                scene,
                build,
                pins,
                fit,
            } = load(&scene_path, &a.set)?;
            if let (Some(fit), false) = (&fit, a.quiet) {
                eprintln!("yarn.radius = \"auto\": fitted r = {}", fit_line(fit));
            }
            warn_imports(&build, a.quiet);
            let dir = scene_path.parent().unwrap_or(Path::new("."));
            let dir = std::fs::canonicalize(if dir.as_os_str().is_empty() {
                Path::new(".")
            } else {
                dir
            })
            .unwrap_or_else(|_| dir.to_path_buf());
            (scene, dir, Some((build, pins)))
        }
    };
    // For the error report of a step that fails (a run has one scene; a table several, so none).
    let _ = FAR_FROM_DEFAULTS.set(scene.far_from_defaults(STIFF_FACTOR));
    let first_frame = resumed.as_ref().map_or(0, |ck| ck.frames());
    let frames = a.frames.unwrap_or(scene.simulation.frames);
    if frames > 10_000_000 {
        bail!("--frames {frames}: at most 10000000, as simulation.frames");
    }
    LogLines::asked()?;
    if frames < first_frame {
        bail!(
            "--frames {frames}: the checkpoint is at frame {first_frame}; a resumed run can only go on from there"
        );
    }
    if let Some(n) = a.checkpoint_every {
        if n == 0 {
            bail!("--checkpoint-every must be at least 1 frame");
        }
        if a.out.is_none() {
            bail!("--checkpoint-every writes the checkpoint into the --out directory; give --out");
        }
    }
    let color = a.color.mode();
    if color != ColorMode::Yarn && scene.contact.model == ContactModel::None {
        bail!("--color {color} needs a contact model; the scene has contact.model = none (set contact.model=exact or acl)");
    }
    let mut matrices = a
        .contact_matrix
        .iter()
        .map(|s| parse_matrix_request(s))
        .collect::<Result<Vec<_>>>()?;
    let matrix_dir = match (&matrices[..], &a.capture, &a.out) {
        ([], _, _) => None,
        (_, Some(d), _) | (_, None, Some(d)) => Some(d.clone()),
        (_, None, None) => {
            bail!("--contact-matrix writes into the --capture or --out directory; give one of them")
        }
    };
    if !matrices.is_empty() && scene.contact.model == ContactModel::None {
        bail!("--contact-matrix needs a contact model; the scene has contact.model = none (set contact.model=exact or acl)");
    }
    // A resumed run asked to end sooner (--frames) leaves out the matrices of the run it resumes
    // that lie past its new end, saying so: the user gave no --contact-matrix to refuse.
    if resumed.is_some() {
        let (kept, past): (Vec<_>, Vec<_>) = matrices.into_iter().partition(|m| m.frame <= frames);
        if !past.is_empty() && !a.quiet {
            let list: Vec<String> = past.iter().map(|m| m.frame.to_string()).collect();
            eprintln!(
                "warning: --frames {frames}: the contact matrices the run asked for at frame{} {} lie past its end and are not written",
                if past.len() == 1 { "" } else { "s" },
                list.join(", ")
            );
        }
        matrices = kept;
    }
    if let Some(m) = matrices.iter().find(|m| m.frame > frames) {
        bail!(
            "--contact-matrix {}: the run has frames 0 to {frames}",
            m.frame
        );
    }
    // Everything about the output paths is checked before anything is created or removed, so a
    // rejected run leaves no directory or file behind.
    check_output_dirs(&a, resumed.is_some())?;
    // Whether a checkpoint can record the run's options (its paths must be UTF-8), asked here:
    // below, the directories, the manifest and an emptied stats file came first. (The record
    // itself is made once the --out directory exists, its paths relative to it.)
    if let (Some(dir), Some(every)) = (&a.out, a.checkpoint_every) {
        serde_json::to_value(SavedRun::new(&a, &scene_path, frames, every, dir)).map_err(|e| {
            anyhow::Error::new(e)
                .context("--checkpoint-every: the run's options cannot be recorded in a checkpoint")
        })?;
    }
    let sim = match (&resumed, cloth) {
        (Some(ck), _) => ck.build_sim().with_context(|| {
            format!(
                "restoring the simulation of {} from its checkpoint",
                scene_path.display()
            )
        })?,
        (None, Some((build, pins))) => {
            let sim = Sim::from_build(&scene, &build, &pins)
                .and_then(|sim| sim.check_start(&build).map(|()| sim))
                .map_err(|e| {
                    let source = e.build_yarn().and_then(|y| build.yarn_source(y));
                    let e = anyhow::Error::new(e);
                    match source {
                        Some(source) => e.context(source),
                        None => e,
                    }
                })
                .with_context(|| {
                    format!("setting up the simulation of {}", scene_path.display())
                })?;
            for w in start_warnings(&scene, &sim) {
                eprintln!("warning: {w}");
            }
            sim
        }
        (None, None) => unreachable!("the cloth is built unless resuming"),
    };
    // One device for the relaxation, the step and the capture.
    let gpu = if a.backend() == Backend::Gpu || a.capture.is_some() {
        let what = if a.backend() == Backend::Gpu {
            "--backend gpu"
        } else {
            "--capture"
        };
        Some(open_gpu(&a.adapter).with_context(|| format!("{what} needs a GPU adapter"))?)
    } else {
        None
    };
    if let (Some(gpu), false) = (&gpu, a.quiet) {
        // (A capture alone renders a few frames; the note is about the GPU step.)
        let note = gpu.summary().slow_adapter_note();
        if let (Some(note), Backend::Gpu) = (note, a.backend()) {
            eprintln!("{note}");
        }
        report_slow_reruns(gpu);
    }
    // The capture's renderer before any directory: a size the adapter refuses leaves nothing.
    let mut capture = match (&a.capture, &gpu) {
        (Some(dir), Some(gpu)) => {
            let c = Capture::new(gpu, dir, a.width, a.height, a.capture_every, color)
                .with_context(|| {
                    format!("--capture {}: cannot set up the capture", dir.display())
                })?;
            // The camera on the cloth as it starts, so that one that cannot frame it fails here,
            // not after the relaxation (hours for a garment) at frame 0; the relaxation moves the
            // cloth by far less than what takes a camera past its reach.
            let mut obstacles = scene.obstacles_at(sim.time);
            obstacles.extend(yarnsim::balls::as_obstacles(&sim.world_balls()));
            c.check_view(&RenderInput {
                topo: &sim.topo,
                pos: &sim.world_pos(),
                radius: scene.yarn.radius,
                obstacles: &obstacles,
                camera: &scene.camera,
                color: ColorMode::Yarn,
                segment_values: None,
            })
            .with_context(|| format!("--capture {}: the scene's [camera]", dir.display()))?;
            Some((c, Vec::new()))
        }
        _ => None,
    };
    // The directories before the relaxation, which writes its checkpoints there.
    if let Some(dir) = &a.out {
        std::fs::create_dir_all(dir)
            .with_context(|| format!("cannot create output directory {}", dir.display()))?;
    }
    // Held to the end of the run: no other run writes here meanwhile (taken before anything in
    // them is removed or written).
    // (One lock per directory: a second `flock` of a directory this run holds, through another
    // handle, would be refused.)
    let mut locked: Vec<PathBuf> = Vec::new();
    let mut _locks = Vec::new();
    for dir in a.out.iter().chain(&a.capture) {
        let same = std::fs::canonicalize(dir).unwrap_or_else(|_| dir.clone());
        if !locked.contains(&same) {
            _locks.push(yarnsim::output::lock_dir(dir)?);
            locked.push(same);
        }
    }
    if a.overwrite {
        for dir in a.out.iter().chain(&a.capture) {
            remove_old_outputs(dir)?;
        }
    }
    // (A run resumed in its relaxation continues the manifest of the run it resumes as one
    // resumed at a frame does: it was a fresh manifest, the original command line and start time
    // lost, and no `resumed` entry.)
    let resumed_from = match (&resumed, &relaxing) {
        (None, _) => None,
        (Some(_), Some(r)) => Some(ResumedFrom::Relaxation { steps: r.steps }),
        (Some(_), None) => Some(ResumedFrom::Frame(first_frame)),
    };
    if resumed_from.is_some() {
        remove_stale_temps(&a)?;
        // The files of frames past the run's new end (a run that went further than this one
        // goes, with a smaller --frames, or a killed one's) are removed as the resumed run
        // starts: it never writes them, and left, they stayed for good beside its frames, looking
        // like part of it (of another trajectory after --backend switched). Those between the
        // checkpoint and the end are replaced one by one as the run rewrites them, not removed
        // first: a resume that fails early (a GPU that cannot take the scene) keeps the frames a
        // killed run had written, which only its own backend remakes bit for bit; the manifest's
        // `frames_written` says up to where the files are the run's.
        for dir in a.out.iter().chain(&a.capture) {
            remove_frames_past(dir, frames)?;
        }
    }
    // The manifest and the stats file before the relaxation (hours for a garment on the CPU
    // path), so that a run that fails or is stopped there says what it was.
    let mut manifest =
        RunManifest::start(&a, &scene_path, &scene, gpu.as_ref(), frames, resumed_from)?;
    let mut stats_out = match &a.stats {
        Some(p) if frames_resumed => Some(StatsFile::resume(p, first_frame)?),
        Some(p) => Some(StatsFile::create(p)?),
        None => None,
    };
    // What a checkpoint records of this run, for --resume: every --checkpoint-every frames, and
    // where a signal stops a run with --out (`every` 0: only there).
    let checkpointing = match &a.out {
        Some(dir) => {
            let every = a.checkpoint_every.unwrap_or(0);
            match serde_json::to_value(SavedRun::new(&a, &scene_path, frames, every, dir)) {
                Ok(saved) => Some(Checkpointing {
                    every,
                    dir: dir.clone(),
                    saved,
                }),
                Err(e) if every > 0 => {
                    return Err(anyhow::Error::new(e).context(
                        "--checkpoint-every: the run's options cannot be recorded in a checkpoint",
                    ))
                }
                // (No checkpoint was asked for: the run goes on, and a signal ends it at once.)
                Err(e) => {
                    eprintln!("note: Ctrl-C will end this run at once, not save it: its options cannot be recorded in a checkpoint ({e})");
                    None
                }
            }
        }
        None => None,
    };
    // The frame the run computes next, for a signal's notice (0: its relaxation, or frame 0).
    RUN_FRAME.store(
        if frames_resumed { first_frame + 1 } else { 0 },
        std::sync::atomic::Ordering::SeqCst,
    );
    // From here a signal stops the run where it can be saved (into --out), not at once.
    if let Some(c) = &checkpointing {
        let (dir, quiet) = (c.dir.clone(), a.quiet);
        yarnsim::interrupt::set_graceful(Some(Box::new(move |sig| {
            if quiet {
                return;
            }
            let save = format!("writes a checkpoint into {}", dir.display());
            let at = match RUN_FRAME.load(std::sync::atomic::Ordering::SeqCst) {
                0 => format!("where its relaxation before t = 0 can be saved next (its next step once the radius is grown; before that, where its next radius stage begins), or before its first frame, and {save}"),
                k if k >= frames => format!("once its last frame, {k}, is written"),
                k => format!("at the end of frame {k} and {save}"),
            };
            // (A repeated SIGHUP does not stop it at once: a hang-up sends more than one.)
            let again = if yarnsim::interrupt::signal_name(sig) == "SIGHUP" {
                "Ctrl-C or SIGTERM"
            } else {
                "interrupt again"
            };
            let line = format!(
                "{}: the run stops {at} ({again} to stop at once, losing the steps since its last checkpoint)",
                yarnsim::interrupt::signal_name(sig)
            );
            say_over_bar(&line);
        })));
    }
    // What the relaxation's GPU step learned (its capacities and budgets), where the frames' step
    // starts.
    let (mut sim, learned) = if !frames_resumed {
        let on_gpu = gpu.as_ref().filter(|_| a.backend() == Backend::Gpu);
        if let Some(r) = &relaxing {
            if !a.quiet {
                eprintln!(
                    "resuming the relaxation before t = 0 from its checkpoint after {} steps",
                    r.steps
                );
            }
        }
        // The relaxation checkpoints where a resume reproduces it bit for bit (where a radius
        // stage begins, and every --checkpoint-every frames' worth of steps once the radius is
        // grown), on either path.
        let saves = checkpointing.as_ref().map(|c| RelaxSaves {
            every: c.every as u64 * sim.params.steps_per_frame as u64,
            dir: &c.dir,
            saved: &c.saved,
            scene_dir: &scene_dir,
        });
        // (The GPU's contact state, where the checkpoint's run was stepped there.)
        let state = resumed
            .as_ref()
            .map(|ck| ck.state())
            .filter(|_| switched.is_none());
        let relaxing = relaxing.map(|r| (r, state));
        let relaxed = relax_sim(sim, &scene, &scene_path, a.quiet, on_gpu, relaxing, saves)
            .inspect_err(|e| resume_hint(&a, e));
        if relaxed.as_ref().is_err_and(|e| e.is::<Stopped>()) {
            manifest.stopped()?;
        }
        relaxed?
    } else {
        (sim, None)
    };
    if color == ColorMode::Updates {
        sim.record_rebuilds(true);
    }
    // The frame of the checkpoint this run wrote in --out (one it resumed from holds its
    // previous options: a stop writes its own).
    let mut saved_at: Option<u32> = None;
    let mut runner = match (&gpu, a.backend()) {
        (Some(g), Backend::Gpu) => {
            let mut gs = GpuSim::new(g, sim, &scene.contact)
                .with_context(|| format!("setting up the GPU step of {}", scene_path.display()))
                .inspect_err(|e| resume_hint(&a, e))?;
            // A resumed run's contact model goes on from the GPU's state in the checkpoint (one
            // that was stepped on the CPU builds it afresh).
            if let (Some(ck), true, None) = (&resumed, frames_resumed, switched) {
                gs.import_contact_state(ck.state())
                    .with_context(|| {
                        format!(
                            "restoring the GPU step's contact state from the checkpoint of {}",
                            scene_path.display()
                        )
                    })
                    .inspect_err(|e| resume_hint(&a, e))?;
            }
            if let Some(l) = &learned {
                gs.start_from(l)
                    .with_context(|| {
                        format!(
                            "starting the GPU step of {} from its relaxation's capacities",
                            scene_path.display()
                        )
                    })
                    .inspect_err(|e| resume_hint(&a, e))?;
            }
            if !a.quiet {
                eprintln!("GPU step on {}", g.summary());
            }
            Runner::Gpu(Box::new(gs))
        }
        _ => Runner::Cpu(Box::new(sim)),
    };
    if !frames_resumed {
        if let Some(dir) = &a.out {
            write_frame(dir, 0, runner.sim(), a.obj)?;
        }
        if let Some((c, values)) = capture.as_mut() {
            capture_frame(c, 0, runner.sim_mut(), &scene, values)?;
        }
        if let Some(dir) = &matrix_dir {
            write_matrices(dir, 0, &matrices, &mut runner, a.quiet)?;
        }
        // Frame 0 is the relaxed state, which can take hours at garment scale: a run stopped
        // during its first frames resumes from it instead of relaxing again.
        if let Some(c) = checkpointing.as_ref().filter(|c| c.every > 0) {
            c.write(&mut runner, &scene, &scene_dir)?;
            saved_at = Some(0);
        }
    }
    manifest.frame_written(first_frame)?;

    let quiet = a.quiet;
    let say = |line: String| {
        if !quiet {
            eprintln!("{line}");
        }
    };
    if frames_resumed {
        say(format!(
            "resuming from the checkpoint at frame {first_frame} (t = {:.4} s, step {})",
            runner.sim().time,
            runner.sim().steps
        ));
    }
    say(format!(
        "{}: {} yarns, {} control points, {} pinned; h = {:.3e} s, {} steps per frame, contact {:?}",
        scene_path.display(),
        runner.sim().topo.yarns.len(),
        runner.sim().pos.len(),
        runner.sim().glue_points.len(),
        runner.sim().params.h,
        runner.sim().params.steps_per_frame,
        scene.contact.model
    ));
    let p = &runner.sim().params;
    if let Some(h) = p.dt_adjusted() {
        say(format!(
            "note: simulation.dt = {:e} s is not a whole fraction of a frame (1/fps = {:e} s); using dt = {h:e} s, {} steps per frame",
            p.dt_requested,
            1.0 / p.fps,
            p.steps_per_frame
        ));
    }
    // The bar advances by steps, so a long frame shows progress, steps/s and a real ETA.
    let steps_per_frame = runner.sim().params.steps_per_frame as u64;
    let bar = ProgressBar::with_draw_target(
        Some((frames - first_frame) as u64 * steps_per_frame),
        if std::io::stderr().is_terminal() && !quiet {
            ProgressDrawTarget::stderr()
        } else {
            ProgressDrawTarget::hidden()
        },
    );
    bar.set_style(
        ProgressStyle::with_template(
            "{bar:40} frame {msg}  {pos}/{len} steps  {per_sec}  {elapsed} (eta {eta})",
        )
        .unwrap_or_else(|_| ProgressStyle::default_bar()),
    );
    let start = Instant::now();
    let steps_before = runner.sim().steps;
    let mut log = LogLines::new(quiet);
    let mut warned_stretch = false;
    show_bar(Some(&bar));
    // The frame whose line standard output failed to take, and why (see below, after the line).
    let mut stdout_failed: Option<(u32, std::io::Error)> = None;
    for k in first_frame + 1..=frames {
        // Asked to stop (a signal; only with --out): here, after frame k − 1 and its files, with
        // a checkpoint of it; on the GPU path, once no steps of the next frame have run ahead (a
        // frame that was running ahead when the signal came runs its next frame first).
        if let (Some(sig), Some(c)) = (yarnsim::interrupt::requested(), &checkpointing) {
            if runner.steps_ahead() == 0 {
                bar.finish_and_clear();
                show_bar(None);
                if saved_at != Some(k - 1) {
                    c.write(&mut runner, &scene, &scene_dir)?;
                }
                manifest.stopped()?;
                yarnsim::interrupt::wait_notice();
                say_line(&format!(
                    "stopped by {} after frame {} of {frames}: the checkpoint in {2} holds it; `yarnsim run --resume {2}` goes on",
                    yarnsim::interrupt::signal_name(sig),
                    k - 1,
                    c.dir.display()
                ));
                return Err(Stopped.into());
            }
            if !quiet {
                say_over_bar(&format!(
                    "the GPU had begun frame {k} while frame {} ended: the run stops at its end",
                    k - 1
                ));
            }
        }
        RUN_FRAME.store(k, std::sync::atomic::Ordering::SeqCst);
        bar.set_message(format!("{k}/{frames}"));
        // The GPU runs the next frame's first steps while this frame's pass-through check runs
        // on the host, unless something reads its state after this frame (a checkpoint, a
        // contact matrix, a stop a signal asked for) or there is no next frame.
        let checkpoint_after = checkpointing.as_ref().is_some_and(|c| c.due(k, frames));
        let matrix_after = matrices.iter().any(|m| m.frame == k);
        let stopping = yarnsim::interrupt::requested().is_some() || stdout_failed.is_some();
        runner.set_run_ahead(k < frames && !checkpoint_after && !matrix_after && !stopping);
        let st = runner
            .frame(&mut || {
                bar.inc(1);
                log.tick(|| {
                    let done = bar.position();
                    format!(
                        "frame {k}/{frames}: step {done} of {}, {:.1} steps/s",
                        bar.length().unwrap_or(0),
                        done as f64 / start.elapsed().as_secs_f64().max(1e-9)
                    )
                });
            })
            .with_context(|| format!("frame {k} of {}", scene_path.display()))
            .inspect_err(|e| resume_hint(&a, e))?;
        // A yarn stretched far past what the length projection reached was stretched again by
        // what follows it in the step (damping, contact: velocity changes times a long step):
        // past STRETCH_FAILS the frame is no state of an inextensible yarn, and is not written.
        let h = runner.sim().params.h;
        if st.max_length_error >= STRETCH_FAILS {
            bail!(
                "frame {k} of {}: the yarn is stretched by {:.1}% (the largest relative edge-length error of the frame's state; the length projection reached {:.1e}): the steps after the projection stretch it again, so the time step is too long for this scene: try a smaller simulation.dt (now {h:e} s)",
                scene_path.display(),
                100.0 * st.max_length_error,
                st.projection_error
            );
        }
        if let Some((b, ball)) = runner
            .sim()
            .world_balls()
            .iter()
            .enumerate()
            .find(|(_, b)| !b.center.iter().all(|x| x.is_finite()))
        {
            bail!(
                "frame {k} of {}: ball.{b}'s position is not finite (its velocity {:?} cm/s): try a smaller simulation.dt, or check ball.{b}.velocity",
                scene_path.display(),
                &ball.vel[..3]
            );
        }
        if st.max_length_error >= STRETCH_WARNS && !warned_stretch {
            warned_stretch = true;
            say_over_bar(&format!(
                "warning: frame {k}: the yarn is stretched by {:.1}% (the largest relative edge-length error; the length projection reached {:.1e}): a smaller simulation.dt (now {h:e} s) keeps it nearer inextensible",
                100.0 * st.max_length_error,
                st.projection_error
            ));
        }
        if let Some(dir) = &a.out {
            write_frame(dir, k, runner.sim(), a.obj)?;
        }
        if let Some((c, values)) = capture.as_mut() {
            capture_frame(c, k, runner.sim_mut(), &scene, values)?;
        }
        if let Some(dir) = &matrix_dir {
            bar.suspend(|| write_matrices(dir, k, &matrices, &mut runner, quiet))?;
        }
        // After the frame's files, as the manifest's count: a record is of a frame written (one
        // whose files failed to be written had its record). With the bar cleared around it: on
        // the bar's terminal (`--stats /dev/stderr`) a record written after the bar began on the
        // bar's line, and the bar's next redraw erased the record's last row.
        if let Some(s) = stats_out.as_mut() {
            bar.suspend(|| s.record(&st))?;
        }
        manifest.frame_written(k)?;
        // After the frame's files: a checkpoint at frame k means frames 0..=k are written.
        if let Some(c) = checkpointing.as_ref().filter(|c| c.due(k, frames)) {
            bar.suspend(|| c.write(&mut runner, &scene, &scene_dir))?;
            saved_at = Some(k);
        }
        if !quiet && stdout_failed.is_none() {
            // (A full disk or device behind standard output is an error, not a panic.)
            let written = bar.suspend(|| {
                let mut out = std::io::stdout().lock();
                writeln!(out, "{}", summary_line(&st, frames)).and_then(|()| out.flush())
            });
            stdout_failed = written.err().map(|e| (k, e));
        }
        // Frame k and its files are written: a run whose standard output failed is saved there
        // before it fails, so that it can go on (a terminal that hung up, whose SIGHUP may come
        // after the write failed; a full disk behind a redirected standard output). Where the GPU
        // had run steps of the next frame ahead, its state is not frame k's and cannot be saved
        // (its download is refused): that frame is run and written first, without its line, as a
        // signal's stop does.
        if let Some((at, e)) =
            stdout_failed.take_if(|_| checkpointing.is_none() || runner.steps_ahead() == 0)
        {
            if let Some(c) = &checkpointing {
                if saved_at != Some(k) {
                    c.write(&mut runner, &scene, &scene_dir)?;
                }
                say_over_bar(&format!(
                    "note: the checkpoint in {0} holds frame {k}; `yarnsim run --resume {0}` goes on",
                    c.dir.display()
                ));
            }
            return Err(anyhow::Error::new(e)
                .context(format!("frame {at}: writing its line to standard output")));
        }
    }
    bar.finish_and_clear();
    show_bar(None);
    // (From here a signal ends the process at once: there is nothing left to save.)
    yarnsim::interrupt::set_graceful(None);
    manifest.finish()?;
    let wall = start.elapsed().as_secs_f64();
    let steps_run = runner.sim().steps - steps_before;
    say(format!(
        "{} frames, {steps_run} steps in {wall:.2} s ({:.0} steps/s)",
        frames - first_frame,
        steps_run as f64 / wall.max(1e-9)
    ));
    // The renderer and the GPU step before the device they use, and all before the process exits.
    drop(capture);
    drop(runner);
    drop(gpu);
    Ok(())
}

/// What a user should know of a cloth as it starts, which the simulation takes nonetheless: f32
/// coordinates coarse beside the yarn radius where the cloth lies far from the scene's origin,
/// and contacts of a yarn with itself that `contact.exclusion_arc` hides.
fn start_warnings(scene: &Scene, sim: &Sim) -> Vec<String> {
    let mut warnings = Vec::new();
    let (far, _) = yarnsim::sim::largest_coordinate(&sim.world_pos());
    let spacing = yarnsim::sim::f32_spacing(far);
    if spacing >= 0.01 * scene.yarn.radius {
        warnings.push(format!(
            "the cloth reaches {far:e} cm from the scene's origin, where f32 coordinates (the scene's, and a BCC file's) are {spacing:e} cm apart, {:.3} of the yarn radius: its shape is rounded to that as it starts (the simulation then runs about a local origin, at full precision)",
            spacing / scene.yarn.radius
        ));
    }
    if scene.contact.model != ContactModel::None {
        if let Some(hidden) = sim.hidden_self_contact() {
            warnings.push(hidden.to_string());
        }
    }
    warnings
}

/// A frame whose yarn is stretched this much (relative edge-length error) fails the run: no state
/// of an inextensible yarn (a normal run's frames stay below 1e-3, one starting in deep overlap,
/// as `sweater_small.toml` without its relaxation, near 3e-3).
const STRETCH_FAILS: f64 = 0.2;

/// A frame whose yarn is stretched this much is said to be (once a run).
const STRETCH_WARNS: f64 = 0.02;

/// The frame a run is computing (0: it has not begun its frames), for what a signal's notice says.
static RUN_FRAME: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);

/// Where a run writes its checkpoints (`--out`), how often (`--checkpoint-every`), and what they
/// record of its options.
struct Checkpointing {
    /// Frames between checkpoints; 0: only where a signal stops the run.
    every: u32,
    dir: PathBuf,
    saved: serde_json::Value,
}

impl Checkpointing {
    /// Whether the schedule writes a checkpoint after frame `k` of `frames`.
    fn due(&self, k: u32, frames: u32) -> bool {
        self.every > 0 && (k.is_multiple_of(self.every) || k == frames)
    }

    /// Writes the checkpoint of `runner`'s state (on the GPU path, brought to the host first).
    fn write(&self, runner: &mut Runner, scene: &Scene, scene_dir: &Path) -> Result<()> {
        let gpu_state = runner.sync_for_checkpoint(scene)?;
        write_checkpoint(
            &self.dir,
            runner.sim(),
            &gpu_state,
            scene,
            scene_dir,
            &self.saved,
        )
    }
}

/// Where and how often the relaxation writes its checkpoints (`run --checkpoint-every`; `every`
/// 0: only where a signal stops it).
struct RelaxSaves<'a> {
    /// Steps between checkpoints once the radius is grown.
    every: u64,
    dir: &'a Path,
    saved: &'a serde_json::Value,
    scene_dir: &'a Path,
}

/// The progress bar on the terminal now (the relaxation's or the frames'), which a line printed
/// between its redraws must suspend; `None` in a log, where the bars are hidden.
static SHOWN_BAR: std::sync::Mutex<Option<ProgressBar>> = std::sync::Mutex::new(None);

/// Prints `line` on stderr, suspending the bar on the terminal (if any) around it.
fn say_over_bar(line: &str) {
    match SHOWN_BAR.lock().unwrap_or_else(|e| e.into_inner()).as_ref() {
        Some(bar) => bar.suspend(|| say_line(line)),
        None => say_line(line),
    }
}

/// Prints `line` on stderr, come what may: where stderr is gone (its terminal hung up, SIGHUP on
/// its way) `eprintln!` panics, and a run stopping on that signal, its checkpoint written, ended
/// by the panic (status 101) instead of by the signal.
fn say_line(line: &str) {
    let _ = writeln!(std::io::stderr().lock(), "{line}");
}

/// Clears the bar on the terminal, if any, for good: what is printed next (an error ending the
/// command) is on a line of its own, not after the bar's text.
fn clear_shown_bar() {
    if let Some(bar) = SHOWN_BAR.lock().unwrap_or_else(|e| e.into_inner()).take() {
        bar.finish_and_clear();
    }
}

/// Makes `bar` the one [`SHOWN_BAR`] names (`None`: none).
fn show_bar(bar: Option<&ProgressBar>) {
    *SHOWN_BAR.lock().unwrap_or_else(|e| e.into_inner()) = bar.cloned();
}

/// A GPU step reruns a batch when a capacity or a budget fell short; a garment's first steps are
/// chains of such reruns, each minutes long on lavapipe, where nothing else would be printed for
/// the whole chain. So a rerun whose failed attempt took at least [`RERUN_NOTICE_SECS`] (or the
/// log's `YARNSIM_PROGRESS_SECS`, when shorter) prints a line saying what grew and what it cost.
fn report_slow_reruns(gpu: &Gpu) {
    let every = LogLines::interval().min(std::time::Duration::from_secs_f64(RERUN_NOTICE_SECS));
    gpu.on_rerun(move |n| {
        if n.attempt < every {
            return;
        }
        let steps = match n.steps {
            1 => format!("step {}", n.first_step),
            k => format!("steps {}–{}", n.first_step, n.first_step + k as u64 - 1),
        };
        let again = if n.again < n.steps {
            format!(" up to step {}", n.first_step + n.again as u64 - 1)
        } else {
            String::new()
        };
        let line = format!(
            "rerun: {steps} ran for {} and run again{again}: {}",
            duration_words(n.attempt),
            n.why
        );
        say_over_bar(&line);
    });
}

/// The least time a batch's failed attempt takes for [`report_slow_reruns`] to print it.
const RERUN_NOTICE_SECS: f64 = 10.0;

/// `d` as "0.25 s", "42 s" or "6 min 12 s".
fn duration_words(d: std::time::Duration) -> String {
    let s = d.as_secs_f64();
    if s < 10.0 {
        format!("{s:.2} s")
    } else if s < 60.0 {
        format!("{s:.0} s")
    } else {
        format!("{} min {} s", (s / 60.0).floor(), (s % 60.0).floor())
    }
}

/// Progress lines for a log: where stderr is not a terminal (a batch job, `nohup`, CI) the bars
/// are hidden, and a garment's relaxation or frame can take an hour, so a line every
/// `YARNSIM_PROGRESS_SECS` seconds (default 60; 0: every step) says the run is alive and how far
/// it is. Nothing with `--quiet` or on a terminal.
struct LogLines {
    on: bool,
    every: std::time::Duration,
    last: Instant,
}

impl LogLines {
    fn new(quiet: bool) -> LogLines {
        LogLines {
            on: !quiet && !std::io::stderr().is_terminal(),
            every: Self::interval(),
            last: Instant::now(),
        }
    }

    /// `YARNSIM_PROGRESS_SECS` (default 60 s; a value [`LogLines::asked`] refuses, which a run
    /// checks first, gives the default).
    fn interval() -> std::time::Duration {
        Self::asked()
            .ok()
            .flatten()
            .unwrap_or(std::time::Duration::from_secs(60))
    }

    /// The interval `YARNSIM_PROGRESS_SECS` asks for, if it is set; a value that is not a number
    /// of seconds is an error (it was taken silently for the default, 60 s: a log asked for a line
    /// every `5s` had none for a minute).
    fn asked() -> Result<Option<std::time::Duration>> {
        const VAR: &str = "YARNSIM_PROGRESS_SECS";
        // (Set but empty, as `export YARNSIM_PROGRESS_SECS=` leaves it: unset, not an error
        // that would stop every run.)
        let Some(v) = std::env::var_os(VAR).filter(|v| !v.is_empty()) else {
            return Ok(None);
        };
        let secs = v
            .to_str()
            .and_then(|t| t.trim().parse::<f64>().ok())
            .filter(|s| s.is_finite() && *s >= 0.0 && *s < 1e9)
            .with_context(|| {
                format!(
                    "{VAR}={v:?}: not an interval in seconds between progress lines (seconds, 0 or more and below 1e9: 0.5, 60)"
                )
            })?;
        Ok(Some(std::time::Duration::from_secs_f64(secs)))
    }

    /// Prints `line()` when the interval has passed since the last line (or the start).
    fn tick(&mut self, line: impl FnOnce() -> String) {
        if self.on && self.last.elapsed() >= self.every {
            eprintln!("{}", line());
            self.last = Instant::now();
        }
    }
}

/// The relaxation before t = 0 (`[relax]`), on the GPU step when `gpu` is given, with a progress
/// bar and a line on how it went; on the CPU path from a checkpoint of it (`from`) and writing
/// checkpoints (`saves`).
fn relax_sim(
    mut sim: Sim,
    scene: &Scene,
    scene_path: &Path,
    quiet: bool,
    gpu: Option<&Gpu>,
    from: Option<(yarnsim::relax::RelaxPoint, Option<&checkpoint::StateReader>)>,
    saves: Option<RelaxSaves<'_>>,
) -> Result<(Sim, Option<yarnsim::gpu_step::Learned>)> {
    if scene.relax.time <= 0.0 {
        return Ok((sim, None));
    }
    let bar = ProgressBar::with_draw_target(
        None,
        if std::io::stderr().is_terminal() && !quiet {
            ProgressDrawTarget::stderr()
        } else {
            ProgressDrawTarget::hidden()
        },
    );
    bar.set_style(
        ProgressStyle::with_template("{bar:40} relaxing {msg}  {pos}/{len} steps  {elapsed}")
            .unwrap_or_else(|_| ProgressStyle::default_bar()),
    );
    show_bar(Some(&bar));
    let mut log = LogLines::new(quiet);
    let mut on_step = |p: &yarnsim::relax::RelaxProgress| {
        if p.step == 1 {
            bar.set_length(p.max_steps);
        }
        bar.set_position(p.step);
        let msg = if p.max_speed.is_nan() {
            format!("radius {:.4} cm", p.radius)
        } else {
            format!("fastest point {:.3} cm/s", p.max_speed)
        };
        log.tick(|| {
            format!(
                "relaxing {}: step {} of at most {}, {msg}, {:.0} s",
                scene_path.display(),
                p.step,
                p.max_steps,
                bar.elapsed().as_secs_f64()
            )
        });
        bar.set_message(msg);
    };
    let context = || format!("relaxing {} before t = 0", scene_path.display());
    // Where it saves; where it can save (--out), also where a signal stops it.
    let schedule = yarnsim::relax::Saves {
        every: saves.as_ref().map_or(0, |s| s.every),
        stop: saves.as_ref().map(|_| yarnsim::interrupt::stop_flag()),
    };
    // The checkpoint of the state the relaxation hands over (with a GPU run's contact state).
    let mut save = |sim: &Sim, point: yarnsim::relax::RelaxPoint, gpu_state: &StateWriter| {
        let Some(s) = &saves else {
            return Ok(());
        };
        let mut saved = s.saved.clone();
        saved["relaxing"] = serde_json::to_value(point)?;
        bar.suspend(|| write_checkpoint(s.dir, sim, gpu_state, scene, s.scene_dir, &saved))
            .map_err(|e| e.into())
    };
    let relaxed = match gpu {
        Some(g) => yarnsim::relax::relax_gpu_resumable(
            sim,
            scene,
            g,
            from,
            schedule,
            &mut on_step,
            &mut save,
        ),
        None => yarnsim::relax::relax_resumable(
            &mut sim,
            scene,
            from.map(|f| f.0),
            schedule,
            &mut on_step,
            &mut |sim, point| save(sim, point, &StateWriter::new()),
        )
        .map(|report| (sim, report)),
    };
    bar.finish_and_clear();
    show_bar(None);
    let (sim, report) = match relaxed {
        Ok(done) => done,
        Err(yarnsim::relax::RelaxError::Stopped { steps }) => {
            let sig = yarnsim::interrupt::requested().unwrap_or(0);
            yarnsim::interrupt::wait_notice();
            let dir = saves.as_ref().map_or(Path::new("."), |s| s.dir);
            say_line(&format!(
                "stopped by {} in the relaxation before t = 0, after {steps} of its steps: the checkpoint in {1} holds it; `yarnsim run --resume {1}` goes on",
                yarnsim::interrupt::signal_name(sig),
                dir.display()
            ));
            return Err(Stopped.into());
        }
        Err(e) => return Err(anyhow::Error::new(e).context(context())),
    };
    if report.settled {
        if !quiet {
            eprintln!(
                "relaxed in {} steps ({:.4} s): radius {:.4} → {:.4} cm, fastest point {:.3} cm/s (relax.speed = {:?})",
                report.steps, report.time, report.start_radius, report.radius, report.max_speed, scene.relax.speed
            );
        }
    } else {
        eprintln!(
            "warning: the relaxation did not come to rest in relax.time = {} s ({} steps, radius {:.4} → {:.4} cm): the fastest point still moves at {:.3} cm/s (relax.speed = {:?}), so frame 0 is not at rest; raise relax.time or relax.speed",
            scene.relax.time, report.steps, report.start_radius, report.radius, report.max_speed, scene.relax.speed
        );
    }
    Ok((sim, report.gpu))
}

/// `yarnsim table`: measures each scene ([`yarnsim::table`]) and prints the Markdown table.
fn table(a: TableArgs) -> Result<()> {
    if a.adapter.is_some() && a.backend == Backend::Cpu {
        bail!("--adapter picks the GPU of --backend gpu; this table runs on the CPU");
    }
    if a.steps == 0 {
        bail!("--steps must be at least 1");
    }
    if let Some(t) = a.tolerances.iter().find(|t| !(t.is_finite() && **t >= 0.0)) {
        bail!("--tolerance {t}: must be a finite number ≥ 0 (an f32: at most 3.4e38)");
    }
    if let Some((_, t)) = a
        .tolerances
        .iter()
        .enumerate()
        .find(|(i, t)| a.tolerances[..*i].contains(t))
    {
        bail!("--tolerance {t}: given twice (each tolerance is one row, measured once)");
    }
    if !a.sets.is_empty() && !a.from.is_empty() {
        bail!("--set changes the SCENES given; a --from run keeps its own scene and overrides (give them when the run starts)");
    }
    // The JSON's path before the measuring (hours on the default garments), not after it.
    if let Some(p) = &a.json {
        if p.is_dir() {
            bail!("--json {}: is a directory", p.display());
        }
        yarnsim::output::probe_writable(p)
            .with_context(|| format!("--json {}: cannot write there", p.display()))?;
    }
    // The saved runs, read before anything is measured so that a bad one fails at once.
    let mut saved = Vec::new();
    for dir in &a.from {
        let path = dir.join(checkpoint::FILE_NAME);
        let ck = checkpoint::Checkpoint::read(&path)
            .with_context(|| format!("--from {}: cannot use its checkpoint", dir.display()))?;
        if ck.meta.options.get("relaxing").is_some() {
            bail!(
                "--from {}: the run was stopped during its relaxation before t = 0; finish it first (yarnsim run --resume {})",
                dir.display(),
                dir.display()
            );
        }
        let build = yarnsim::scene::build_curves(&ck.scene, &ck.meta.scene_dir)
            .with_context(|| format!("--from {}: building its cloth", dir.display()))?;
        let pins = yarnsim::scene::pinned_points(&ck.scene, &build)
            .with_context(|| format!("--from {}: its pins", dir.display()))?;
        saved.push((dir.clone(), ck, build, pins));
    }
    let scenes = if a.scenes.is_empty() && !a.from.is_empty() {
        Vec::new()
    } else if a.scenes.is_empty() {
        ["scarf", "sack", "afghan", "sweater"]
            .iter()
            .map(|n| PathBuf::from(format!("scenes/{n}.toml")))
            .collect()
    } else {
        a.scenes.clone()
    };
    // Every scene read and built before any is measured (each may take hours), so a bad last one
    // fails at once, not after the others' work.
    let loaded = scenes
        .iter()
        .map(|path| load(path, &a.sets))
        .collect::<Result<Vec<_>>>()?;
    // What `run` warns of a cloth as it starts, before hours of measuring it. (A cloth the
    // simulation refuses is left to the measuring, which says why.)
    for (path, l) in scenes.iter().zip(&loaded) {
        if let Ok(sim) = Sim::from_build(&l.scene, &l.build, &l.pins) {
            for w in start_warnings(&l.scene, &sim) {
                eprintln!("warning: {}: {w}", path.display());
            }
        }
    }
    // The JSON never replaces what the table reads, nor a file of a --from run (its frames, its
    // manifest: they were replaced, and the run's resume lost the manifest's record).
    if let Some(p) = &a.json {
        let inputs = scenes
            .iter()
            .cloned()
            .chain(a.from.iter().map(|d| d.join(checkpoint::FILE_NAME)));
        for input in inputs {
            if same_file(p, &input) {
                bail!(
                    "--json {}: that is {}, which the table reads",
                    p.display(),
                    input.display()
                );
            }
        }
        let real = p
            .is_symlink()
            .then(|| std::fs::canonicalize(p).ok())
            .flatten();
        let target = real.as_deref().unwrap_or(p);
        let parent = match target.parent() {
            Some(d) if !d.as_os_str().is_empty() => d,
            _ => Path::new("."),
        };
        let name = target.file_name().and_then(|n| n.to_str()).unwrap_or("");
        let records =
            target.metadata().is_ok_and(|m| m.is_file() && m.len() > 0) && is_stats_file(target);
        if let Some(dir) = a
            .from
            .iter()
            .find(|d| same_dir(parent, d) && (is_run_file(name) || records))
        {
            bail!(
                "--json {}: that is a file of the run in {} (--from), which the table would replace; name the JSON otherwise",
                p.display(),
                dir.display()
            );
        }
    }
    let opts = yarnsim::table::TableOptions {
        steps: a.steps,
        warmup: a.warmup,
        start_frames: a.start_frame,
        tolerances: a.tolerances.clone(),
    };
    let machine = machine_name();
    let threads = rayon::current_num_threads();
    let gpu = match a.backend {
        Backend::Gpu => {
            Some(open_gpu(&a.adapter).context("yarnsim table --backend gpu needs a GPU adapter")?)
        }
        Backend::Cpu => None,
    };
    let backend = if gpu.is_some() { "gpu" } else { "cpu" };
    let adapter = gpu.as_ref().map(|g| g.summary());
    if let Some(note) = adapter.as_ref().and_then(|s| s.slow_adapter_note()) {
        eprintln!("{note}");
    }
    if !a.quiet {
        match &adapter {
            Some(s) => eprintln!("machine: {machine}, {threads} threads; backend gpu: {s}"),
            None => eprintln!("machine: {machine}, {threads} threads; backend cpu"),
        }
    }
    let mut tables = Vec::new();
    let measure = |what: &str,
                   name: String,
                   scene: &yarnsim::scene::Scene,
                   build: &yarnsim::scene::ClothBuild,
                   pins: &[u32],
                   start: yarnsim::table::Start<'_>|
     -> Result<yarnsim::table::SceneTable> {
        let bar = ProgressBar::with_draw_target(
            None,
            if std::io::stderr().is_terminal() && !a.quiet {
                ProgressDrawTarget::stderr()
            } else {
                ProgressDrawTarget::hidden()
            },
        );
        bar.set_style(
            ProgressStyle::with_template(
                "{bar:40} {msg}  {pos}/{len} steps  {elapsed} (eta {eta})",
            )
            .unwrap_or_else(|_| ProgressStyle::default_bar()),
        );
        bar.set_message(what.to_string());
        let t = yarnsim::table::measure_scene(
            &name,
            scene,
            build,
            pins,
            &opts,
            gpu.as_ref(),
            start,
            &mut |stage, done, total| {
                let doing = match stage {
                    yarnsim::table::Stage::Relaxing => "relaxing",
                    yarnsim::table::Stage::Measuring => "measuring",
                };
                bar.set_message(format!("{what} {doing}"));
                bar.set_length(total);
                bar.set_position(done);
            },
        )
        .with_context(|| format!("measuring {what}"))?;
        bar.finish_and_clear();
        if let Some(r) = t.relax.as_ref().filter(|r| !r.settled) {
            eprintln!(
                "warning: {what}: the relaxation did not come to rest in relax.time = {} s (fastest point {:.3} cm/s, relax.speed = {:?}); the start state is not at rest",
                scene.relax.time,
                r.max_speed,
                scene.relax.speed
            );
        }
        Ok(t)
    };
    // The JSON (when asked) after every scene, `"complete": false` until the last: a table of
    // garments takes hours, and one stopped or failed keeps the rows it finished.
    let write_json = |tables: &[yarnsim::table::SceneTable], complete: bool| -> Result<()> {
        let Some(p) = &a.json else { return Ok(()) };
        let doc = serde_json::json!({
            "machine": machine,
            "threads": threads,
            "backend": backend,
            "adapter": adapter.as_ref().map(|s| s.name.clone()),
            "adapter_info": adapter.as_ref().map(|s| s.to_string()),
            "steps": a.steps,
            "warmup": a.warmup,
            "start_frame": a.start_frame,
            "complete": complete,
            "scenes": tables,
        });
        yarnsim::output::write_bytes_atomic(
            p,
            (serde_json::to_string_pretty(&doc)? + "\n").as_bytes(),
        )
        .with_context(|| format!("cannot write {}", p.display()))
    };
    // A table stopped by a signal prints the rows it finished as it ends (its JSON has them).
    let leave_rows = |tables: &[yarnsim::table::SceneTable]| {
        let rows = yarnsim::table::markdown(tables);
        let on_bar = std::io::stderr().is_terminal() && !a.quiet;
        yarnsim::interrupt::set_last_words(Some(Box::new(move || {
            // (Failed prints are let be: the process ends anyway.)
            if on_bar {
                let _ = writeln!(std::io::stderr());
            }
            let _ = write!(std::io::stdout().lock(), "{rows}");
            let _ = writeln!(
                std::io::stderr(),
                "stopped by a signal: the rows above are the scenes the table finished"
            );
        })));
    };
    let mut measure_all = || -> Result<()> {
        for (path, l) in scenes.iter().zip(&loaded) {
            let name = path.file_stem().map_or_else(
                || path.display().to_string(),
                |s| s.to_string_lossy().into(),
            );
            let what = path.display().to_string();
            tables.push(measure(
                &what,
                name,
                &l.scene,
                &l.build,
                &l.pins,
                yarnsim::table::Start::Relax,
            )?);
            // (The rows to print first: a signal that comes once the JSON has them prints them.)
            leave_rows(&tables);
            write_json(&tables, false)?;
        }
        for (dir, ck, build, pins) in &saved {
            let stem = ck
                .meta
                .options
                .get("scene_path")
                .and_then(|p| p.as_str())
                .and_then(|p| Path::new(p).file_stem())
                .map_or_else(|| "scene".to_string(), |s| s.to_string_lossy().into());
            // The state measured: the checkpoint's frame, then the --start-frame frames run on
            // from it (the row had named the checkpoint's frame alone).
            let label = format!("{}, frame {}", dir.display(), ck.frames() + a.start_frame);
            let what = format!("--from {}", dir.display());
            tables.push(measure(
                &what,
                format!("{stem} ({label})"),
                &ck.scene,
                build,
                pins,
                yarnsim::table::Start::Checkpoint {
                    checkpoint: ck,
                    label,
                },
            )?);
            // (The rows to print first: a signal that comes once the JSON has them prints them.)
            leave_rows(&tables);
            write_json(&tables, false)?;
        }
        Ok(())
    };
    let measured = measure_all();
    yarnsim::interrupt::set_last_words(None);
    if let Err(e) = measured {
        // What was measured before the error is printed still.
        if !tables.is_empty() {
            print!("{}", yarnsim::table::markdown(&tables));
        }
        return Err(e);
    }
    print!("{}", yarnsim::table::markdown(&tables));
    write_json(&tables, true)
}

/// The CPU's model name (Linux `/proc/cpuinfo`), or the architecture.
fn machine_name() -> String {
    std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("model name"))
                .and_then(|l| l.split(':').nth(1))
                .map(|m| m.trim().to_string())
        })
        .unwrap_or_else(|| std::env::consts::ARCH.to_string())
}

/// Writes frame `k` as `DIR/frame_NNNN.bcc`, with `obj` also as `DIR/frame_NNNN.obj`, and for a
/// scene with free balls their state as `DIR/frame_NNNN_balls.csv`.
fn write_frame(dir: &Path, k: u32, sim: &Sim, obj: bool) -> Result<()> {
    let path = dir.join(format!("frame_{k:04}.bcc"));
    let curves = sim.curves();
    yarnsim::bcc::write(&path, &curves).with_context(|| format!("writing {}", path.display()))?;
    if !sim.balls.is_empty() {
        let path = dir.join(format!("frame_{k:04}_balls.csv"));
        yarnsim::output::write_atomic(&path, |w| {
            writeln!(w, "x,y,z,radius,vx,vy,vz,wx,wy,wz")?;
            for b in &sim.world_balls() {
                let (c, v, o) = (b.center, b.vel, b.omega);
                writeln!(
                    w,
                    "{},{},{},{},{},{},{},{},{},{}",
                    c[0], c[1], c[2], c[3], v[0], v[1], v[2], o[0], o[1], o[2]
                )?;
            }
            Ok(())
        })
        .with_context(|| format!("writing {}", path.display()))?;
    }
    if obj {
        yarnsim::export::write_obj_frame(dir, k, &curves)
            .with_context(|| format!("writing the OBJ of frame {k}"))?;
    }
    Ok(())
}

/// Writes the checkpoint of `sim`, and the sections of `extra` (a GPU run's contact state), into
/// `dir` (atomically: the previous one stays until the new one is complete).
fn write_checkpoint(
    dir: &Path,
    sim: &Sim,
    extra: &StateWriter,
    scene: &Scene,
    scene_dir: &Path,
    saved: &serde_json::Value,
) -> Result<()> {
    let path = dir.join(checkpoint::FILE_NAME);
    checkpoint::write_with(&path, sim, scene, scene_dir, saved.clone(), extra).with_context(|| {
        format!(
            "writing checkpoint {} at frame {}",
            path.display(),
            sim.frames
        )
    })
}

/// `--resume DIR`: reads DIR's checkpoint and fills `a` with the options it records; and where the
/// run starts ([`ResumePoint`]: where its relaxation stood, whether it moves to the other backend).
fn open_resume(a: &mut RunArgs, dir: &Path) -> Result<(checkpoint::Checkpoint, ResumePoint)> {
    let path = dir.join(checkpoint::FILE_NAME);
    if !dir.is_dir() {
        bail!("--resume {}: not a directory", dir.display());
    }
    if !path.exists() {
        bail!(
            "--resume {}: no checkpoint ({}) there; a run writes one with --out DIR --checkpoint-every N, and where Ctrl-C, SIGTERM or SIGHUP stops a run with --out",
            dir.display(),
            checkpoint::FILE_NAME
        );
    }
    let ck = checkpoint::Checkpoint::read(&path)
        .with_context(|| format!("--resume {}: cannot use the checkpoint", dir.display()))?;
    let saved: SavedRun = serde_json::from_value(ck.meta.options.clone()).with_context(|| {
        format!(
            "--resume {}: the checkpoint's run options are not readable",
            path.display()
        )
    })?;
    check_checkpoint_is_the_runs(dir, &ck, &saved)?;
    let point = saved.apply(a, dir);
    Ok((ck, point))
}

/// Refuses the checkpoint in `dir` when its scene is not the one the directory's manifest records:
/// a checkpoint of another run (copied there, or a manifest copied beside it), whose frames would
/// go on beside frames of the manifest's run.
///
/// The checkpoint decides what the resumed run simulates; the manifest only records what made the
/// frames already in the directory, so it cannot decide instead. But making it follow the
/// checkpoint would hide that the frames up to the checkpoint's are the other run's. A run's scene
/// never changes over its checkpoints and resumptions (a resume takes no scene or --set), so the
/// scenes of one run always agree. The comparison is of the resolved scenes (the manifest's read
/// back as a scene), so the same file with other overrides, or changed between the runs, is
/// another scene too. A directory without a manifest, or whose manifest records no scene or one
/// this build cannot read, has nothing to compare.
fn check_checkpoint_is_the_runs(
    dir: &Path,
    ck: &checkpoint::Checkpoint,
    saved: &SavedRun,
) -> Result<()> {
    let path = dir.join(MANIFEST);
    let Some(manifest) = std::fs::read(&path)
        .ok()
        .and_then(|t| serde_json::from_slice::<serde_json::Value>(&t).ok())
    else {
        return Ok(());
    };
    let Some(recorded) = manifest.get("scene") else {
        return Ok(());
    };
    // Compared as scenes, not as JSON: a field a later build of the same version added (with its
    // default) is in the checkpoint's scene as read now but not in the manifest's text, and such
    // a legitimate resume was refused. A manifest scene this build cannot read is not compared.
    // (A field the scene leaves unset is `null` in the JSON, absent in TOML: read as absent.)
    fn without_nulls(v: &serde_json::Value) -> serde_json::Value {
        match v {
            serde_json::Value::Object(m) => m
                .iter()
                .filter(|(_, x)| !x.is_null())
                .map(|(k, x)| (k.clone(), without_nulls(x)))
                .collect(),
            serde_json::Value::Array(a) => a.iter().map(without_nulls).collect(),
            x => x.clone(),
        }
    }
    let Ok(recorded) = serde_json::from_value::<Scene>(without_nulls(recorded)) else {
        return Ok(());
    };
    if recorded == ck.scene {
        return Ok(());
    }
    let with_sets = |scene: String, sets: Vec<String>| {
        if sets.is_empty() {
            scene
        } else {
            format!("{scene} with --set {}", sets.join(" --set "))
        }
    };
    let checkpoint_run = with_sets(saved.scene_path.display().to_string(), saved.set.clone());
    let manifest_run = with_sets(
        manifest
            .get("scene_path")
            .and_then(|p| p.as_str())
            .unwrap_or("an unnamed scene")
            .to_string(),
        manifest
            .get("overrides")
            .and_then(|o| serde_json::from_value::<Vec<String>>(o.clone()).ok())
            .unwrap_or_default(),
    );
    let same_words = if checkpoint_run == manifest_run {
        " (the same file and overrides, but not the same scene: the file was edited between the two runs)"
    } else {
        ""
    };
    bail!(
        "--resume {}: the checkpoint is of another run than the frames there: it holds the scene of {checkpoint_run}, the manifest {} records {manifest_run}{same_words}; resuming would write the checkpoint's frames beside the other run's. Resume the checkpoint in the directory of its own run, or put the run's own checkpoint back (if the checkpoint is this run's, removing {} lets it resume)",
        dir.display(),
        path.display(),
        path.display()
    );
}

/// Removes from a resumed run's `--out` and `--capture` directories the temporary files of its
/// writes that never finished (a killed run's): of its frame files, contact matrices, manifest and
/// checkpoint, and of its `--stats` file where that is in one of them. Called with the
/// directories locked by this run, so no other run is writing there; and this one has written
/// nothing yet. (A `--stats` file elsewhere is in a directory no run locks: its temporary files
/// are left alone, for they may be another process's writes in progress.)
fn remove_stale_temps(a: &RunArgs) -> Result<()> {
    for dir in a.out.iter().chain(&a.capture) {
        let stats = a
            .stats
            .as_deref()
            .filter(|p| {
                let parent = p.parent().filter(|d| !d.as_os_str().is_empty());
                same_dir(parent.unwrap_or(Path::new(".")), dir)
            })
            .and_then(|p| p.file_name())
            .and_then(|n| n.to_str());
        let stale = old_outputs(dir, |name| {
            yarnsim::output::temp_target(name).is_some_and(|t| is_run_file(t) || Some(t) == stats)
        })?;
        for path in stale {
            std::fs::remove_file(&path)
                .with_context(|| format!("cannot remove {}", path.display()))?;
        }
    }
    Ok(())
}

/// Removes from `dir` the files of frames after frame `k`: frame files ([`is_frame_file`]) and
/// contact matrices (`contact_matrix_NNNN.png`).
fn remove_frames_past(dir: &Path, k: u32) -> Result<()> {
    let past = |name: &str| {
        // (Digits past u64 are a frame no run reaches: past any.)
        let frame = |digits: &str| digits.parse::<u64>().unwrap_or(u64::MAX);
        let of = if is_frame_file(name) {
            name.strip_prefix("frame_").map(|rest| {
                let n = rest.bytes().take_while(u8::is_ascii_digit).count();
                frame(&rest[..n])
            })
        } else {
            name.strip_prefix("contact_matrix_")
                .and_then(|rest| rest.strip_suffix(".png"))
                .filter(|d| !d.is_empty() && d.bytes().all(|b| b.is_ascii_digit()))
                .map(frame)
        };
        of.is_some_and(|f| f > u64::from(k))
    };
    for path in old_outputs(dir, past)? {
        std::fs::remove_file(&path).with_context(|| {
            format!(
                "cannot remove {}, a frame past the run's end",
                path.display()
            )
        })?;
    }
    Ok(())
}

/// Checks the output paths of a run before anything is created or removed: `--out` and
/// `--capture` must be directories (or not exist yet) that hold no frames ([`is_frame_file`]) of another
/// run unless `--overwrite` is given, and `--stats` must name a file in an existing directory (or in
/// the `--out` / `--capture` directory about to be created). A resumed run (`resuming`) continues
/// the frames in its directories.
fn check_output_dirs(a: &RunArgs, resuming: bool) -> Result<()> {
    for (flag, dir) in [("--out", &a.out), ("--capture", &a.capture)] {
        let Some(dir) = dir else { continue };
        if dir.exists() && !dir.is_dir() {
            bail!("{flag} {}: exists and is not a directory", dir.display());
        }
        if !a.overwrite && !resuming {
            if !old_outputs(dir, is_frame_file)?.is_empty() {
                bail!(
                    "{} already holds frames of another run; use --overwrite to replace them",
                    dir.display()
                );
            }
            if !old_outputs(dir, |name| name == checkpoint::FILE_NAME)?.is_empty() {
                bail!(
                    "{} already holds the checkpoint of another run (continue it with --resume {}); use --overwrite to replace it",
                    dir.display(),
                    dir.display()
                );
            }
        }
    }
    // A stream (`/dev/stdout`, a pipe, a device) takes the records as they come, whatever the
    // descriptor behind it is open on: nothing there is replaced or read back.
    if let Some(given) = a.stats.as_ref().filter(|p| yarnsim::output::is_stream(p)) {
        yarnsim::output::probe_writable(given)
            .with_context(|| format!("--stats {}: cannot write there", given.display()))?;
    } else if let Some(given) = &a.stats {
        // A link is judged by the file it names, which is what a write through it replaces.
        let real = given
            .is_symlink()
            .then(|| std::fs::canonicalize(given).ok())
            .flatten();
        let p = real.as_ref().unwrap_or(given);
        if p.is_dir() {
            bail!("--stats {}: is a directory", p.display());
        }
        let parent = match p.parent() {
            Some(d) if !d.as_os_str().is_empty() => d,
            _ => Path::new("."),
        };
        let made_by_run = a.out.iter().chain(&a.capture).any(|d| same_dir(d, parent));
        if !parent.is_dir() && !made_by_run {
            bail!(
                "--stats {}: the directory {} does not exist",
                p.display(),
                parent.display()
            );
        }
        // Never one of the run's own files, nor the scene: the stats would replace it (or it them).
        let name = p.file_name().and_then(|n| n.to_str()).unwrap_or("");
        if let Some(scene) = &a.scene {
            if same_file(p, scene) {
                bail!("--stats {}: that is the scene file", p.display());
            }
        }
        for (flag, dir) in [("--out", &a.out), ("--capture", &a.capture)] {
            let Some(dir) = dir else { continue };
            if same_dir(parent, dir) && is_run_file(name) {
                bail!(
                    "--stats {}: the run writes its own {name} into its {flag} directory; name the stats file otherwise",
                    p.display()
                );
            }
        }
        // An existing file that is no stats file is the user's: replaced only when asked (a
        // resumed run keeps a stats file's records, so it must be one).
        let may_replace = a.overwrite && !resuming;
        if p.is_file() && !may_replace && !is_stats_file(p) {
            bail!(
                "--stats {}: exists and is not a stats file (its first line is no frame record); {}",
                p.display(),
                if resuming {
                    "a resumed run goes on with the records of the run it continues"
                } else {
                    "use --overwrite to replace it"
                }
            );
        }
        if parent.is_dir() {
            yarnsim::output::probe_writable(p)
                .with_context(|| format!("--stats {}: cannot write there", p.display()))?;
        }
    }
    Ok(())
}

/// The files (anything but directories) in `dir` whose names `keep` accepts, sorted; none when
/// `dir` does not exist.
fn old_outputs(dir: &Path, keep: impl Fn(&str) -> bool) -> Result<Vec<PathBuf>> {
    let entries = match std::fs::read_dir(dir) {
        Ok(e) => e,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(e).with_context(|| format!("cannot list {}", dir.display())),
    };
    let mut found = Vec::new();
    for entry in entries {
        let entry = entry.with_context(|| format!("cannot list {}", dir.display()))?;
        let name = entry.file_name();
        let Some(name) = name.to_str() else { continue };
        if keep(name) && !entry.file_type().is_ok_and(|t| t.is_dir()) {
            found.push(entry.path());
        }
    }
    found.sort();
    Ok(found)
}

/// Whether two paths name one file: the same file where both exist (links followed), else the
/// same name in the same directory.
fn same_file(a: &Path, b: &Path) -> bool {
    if let (Ok(x), Ok(y)) = (std::fs::canonicalize(a), std::fs::canonicalize(b)) {
        return x == y;
    }
    a.file_name() == b.file_name()
        && same_dir(
            a.parent()
                .filter(|d| !d.as_os_str().is_empty())
                .unwrap_or(Path::new(".")),
            b.parent()
                .filter(|d| !d.as_os_str().is_empty())
                .unwrap_or(Path::new(".")),
        )
}

/// Whether two paths name one directory: the same directory where both exist, else the same path
/// once `.` components are dropped (`./out` and `out`, before the run makes it).
fn same_dir(a: &Path, b: &Path) -> bool {
    match (std::fs::canonicalize(a), std::fs::canonicalize(b)) {
        (Ok(x), Ok(y)) => x == y,
        _ => {
            fn plain(p: &Path) -> Vec<std::path::Component<'_>> {
                p.components()
                    .filter(|c| !matches!(c, std::path::Component::CurDir))
                    .collect()
            }
            plain(a) == plain(b)
        }
    }
}

/// A frame file a run writes: `frame_NNNN.bcc`, `.obj`, `.png`, `frame_NNNN_balls.csv` (four
/// digits or more). Other `frame_*` names are the user's (`frame_notes.txt`).
fn is_frame_file(name: &str) -> bool {
    let Some(rest) = name.strip_prefix("frame_") else {
        return false;
    };
    let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
    digits >= 4
        && matches!(rest.as_bytes().get(digits), Some(b'.' | b'_'))
        && [".bcc", ".obj", ".png", ".csv"]
            .iter()
            .any(|ext| rest.ends_with(ext))
}

/// A file a run writes into its output directories: its frames, contact matrices
/// (`contact_matrix_*.png`), `manifest.json` and checkpoint.
fn is_run_file(name: &str) -> bool {
    is_frame_file(name)
        || (name.starts_with("contact_matrix_") && name.ends_with(".png"))
        || name == MANIFEST
        || name == checkpoint::FILE_NAME
}

/// Whether `path` holds `--stats` records: empty, or its first line a JSON object with a frame.
fn is_stats_file(path: &Path) -> bool {
    use std::io::{BufRead, Read};
    let Ok(file) = std::fs::File::open(path) else {
        return false;
    };
    let mut line = Vec::new();
    // (A record is under 1 KB; the first 64 KiB hold the first line of any stats file.)
    if std::io::BufReader::new(file.take(1 << 16))
        .read_until(b'\n', &mut line)
        .is_err()
    {
        return false;
    }
    line.is_empty()
        || serde_json::from_slice::<serde_json::Value>(&line)
            .is_ok_and(|v| v.get("frame").is_some_and(serde_json::Value::is_u64))
}

/// `--overwrite`: removes what another run left in `dir`: its frame files ([`is_frame_file`]),
/// contact matrices (`contact_matrix_*.png`), `manifest.json`, its checkpoint, and temporary files
/// of interrupted writes of those.
fn remove_old_outputs(dir: &Path) -> Result<()> {
    let old = old_outputs(dir, |name| {
        is_run_file(name) || yarnsim::output::temp_target(name).is_some_and(is_run_file)
    })?;
    for path in old {
        std::fs::remove_file(&path)
            .with_context(|| format!("--overwrite: cannot remove {}", path.display()))?;
    }
    Ok(())
}

/// The `--stats` file: one JSON record per frame.
///
/// Scheme: the file is only ever replaced whole and atomically (`yarnsim::output`): at the start
/// (empty), then after every frame with all its records so far, which are kept in memory. So its
/// name always holds complete records only (never a partial line, not even after a crash or on a
/// full disk), and each record is on disk under the final name as soon as its frame is done, as the
/// flushed-per-record file of earlier versions was: a run that fails or is killed loses no completed
/// record, and the file can be watched during a run. Appending to a temporary file renamed at the
/// end would write less, but a killed run would leave its records under a hidden temporary name.
/// The price is rewriting the file every frame; a record is under 1 KB, so even a 1,000-frame run
/// writes only a few hundred MB in all, little next to the cost of its frames.
struct StatsFile {
    path: PathBuf,
    text: Vec<u8>,
}

impl StatsFile {
    fn create(path: &Path) -> Result<StatsFile> {
        yarnsim::output::write_bytes_atomic(path, b"")
            .with_context(|| format!("cannot create stats file {}", path.display()))?;
        Ok(StatsFile {
            path: path.to_path_buf(),
            text: Vec::new(),
        })
    }

    /// The stats file of a run resumed at frame `k`: its records of frames 1 to `k` are kept (later
    /// ones, of frames the resumed run writes again, and partial lines are dropped).
    fn resume(path: &Path, k: u32) -> Result<StatsFile> {
        // A stream is not read back (reading the stdout it writes would wait for ever): the
        // resumed run's records follow on it.
        if yarnsim::output::is_stream(path) {
            return Ok(StatsFile {
                path: path.to_path_buf(),
                text: Vec::new(),
            });
        }
        let old = match std::fs::read(path) {
            Ok(t) => t,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Vec::new(),
            Err(e) => {
                return Err(e).with_context(|| format!("cannot read stats file {}", path.display()))
            }
        };
        let mut text = Vec::new();
        for line in old.split_inclusive(|&b| b == b'\n') {
            let frame = serde_json::from_slice::<serde_json::Value>(line)
                .ok()
                .and_then(|v| v.get("frame")?.as_u64());
            if line.ends_with(b"\n") && frame.is_some_and(|f| f <= k as u64) {
                text.extend_from_slice(line);
            }
        }
        yarnsim::output::write_bytes_atomic(path, &text)
            .with_context(|| format!("cannot write stats file {}", path.display()))?;
        Ok(StatsFile {
            path: path.to_path_buf(),
            text,
        })
    }

    fn record(&mut self, st: &FrameStats) -> Result<()> {
        let mut line = serde_json::to_vec(st)?;
        line.push(b'\n');
        self.text.extend_from_slice(&line);
        // A stream (`--stats /dev/stdout`, a pipe) takes each record once, as it comes.
        let all = if yarnsim::output::is_stream(&self.path) {
            &line
        } else {
            &self.text
        };
        yarnsim::output::write_bytes_atomic(&self.path, all)
            .with_context(|| format!("writing stats file {}", self.path.display()))
    }
}

/// The name of the run manifest in the `--out` and `--capture` directories.
const MANIFEST: &str = "manifest.json";

/// `manifest.json` in each output directory of a run (`--out`, and `--capture` when it is another
/// directory): what made the frames there. Written atomically at the start, and again at the end
/// (or, when the run fails, when it stops) with the number of frames written.
struct RunManifest {
    dirs: Vec<PathBuf>,
    fields: serde_json::Map<String, serde_json::Value>,
    frames_written: u32,
    finished: bool,
}

/// Where a resumed run goes on from ([`RunManifest::start`]).
#[derive(Clone, Copy)]
enum ResumedFrom {
    /// The checkpoint at frame `k`: frames 0 to `k` are on disk.
    Frame(u32),
    /// A checkpoint taken during the relaxation before t = 0, after `steps` of its steps: no frame
    /// of the run is written yet.
    Relaxation { steps: u64 },
}

impl RunManifest {
    /// The manifest of a run; for a resumed run (`resumed`), the manifest of the run it continues
    /// (from the first directory), with the frames now requested and the resumption appended to
    /// `resumed`.
    fn start(
        a: &RunArgs,
        scene_path: &Path,
        scene: &Scene,
        gpu: Option<&Gpu>,
        frames: u32,
        resumed: Option<ResumedFrom>,
    ) -> Result<RunManifest> {
        let mut dirs: Vec<PathBuf> = Vec::new();
        let mut seen = Vec::new();
        for d in a.out.iter().chain(&a.capture) {
            let canon = std::fs::canonicalize(d).unwrap_or_else(|_| d.clone());
            if !seen.contains(&canon) {
                seen.push(canon);
                dirs.push(d.clone());
            }
        }
        let start = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs());
        let summary = gpu.map(|g| g.summary());
        let serde_json::Value::Object(fields) = serde_json::json!({
            "yarnsim_version": env!("CARGO_PKG_VERSION"),
            "command_line": std::env::args_os()
                .map(|s| s.to_string_lossy().into_owned())
                .collect::<Vec<_>>(),
            "start_time_unix": start,
            "scene_path": scene_path.display().to_string(),
            "overrides": a.set,
            "scene": serde_json::to_value(scene).context("recording the scene in the manifest")?,
            "backend": match a.backend() {
                Backend::Cpu => "cpu",
                Backend::Gpu => "gpu",
            },
            "adapter": summary.as_ref().map(|s| s.name.clone()),
            "adapter_info": summary.as_ref().map(|s| s.to_string()),
            "frames_requested": frames,
            "checkpoint_every": a.checkpoint_every,
        }) else {
            unreachable!("json! of an object literal is an object")
        };
        let fields = match resumed {
            None => fields,
            Some(from) => {
                let old = dirs
                    .first()
                    .and_then(|d| std::fs::read(d.join(MANIFEST)).ok())
                    .and_then(|t| serde_json::from_slice::<serde_json::Value>(&t).ok());
                let mut merged = match old {
                    Some(serde_json::Value::Object(m)) => m,
                    _ => fields.clone(),
                };
                merged.insert("frames_requested".into(), frames.into());
                // (This run is not stopped: the resumption's entry below says where it went on.)
                merged.remove("stopped_by");
                merged.insert("checkpoint_every".into(), a.checkpoint_every.into());
                let mut entry = serde_json::json!({
                    "from_frame": match from {
                        ResumedFrom::Frame(k) => Some(k),
                        ResumedFrom::Relaxation { .. } => None,
                    },
                    "backend": fields.get("backend"),
                    "adapter": fields.get("adapter"),
                    "command_line": fields.get("command_line"),
                    "start_time_unix": start,
                    "yarnsim_version": env!("CARGO_PKG_VERSION"),
                });
                if let ResumedFrom::Relaxation { steps } = from {
                    entry["from_relaxation_step"] = steps.into();
                }
                match merged.get_mut("resumed") {
                    Some(serde_json::Value::Array(list)) => list.push(entry),
                    _ => {
                        merged.insert("resumed".into(), serde_json::Value::Array(vec![entry]));
                    }
                }
                merged
            }
        };
        let m = RunManifest {
            dirs,
            fields,
            // (A run resumed at a frame has the frames up to its checkpoint's on disk already.)
            frames_written: match resumed {
                Some(ResumedFrom::Frame(k)) => k + 1,
                Some(ResumedFrom::Relaxation { .. }) | None => 0,
            },
            finished: false,
        };
        m.write()?;
        Ok(m)
    }

    /// Frame `k` and all before it are written: recorded on disk at once, so that a run killed
    /// later (a signal, a closed pipe) leaves a manifest that counts its frames.
    fn frame_written(&mut self, k: u32) -> Result<()> {
        self.frames_written = k + 1;
        self.write()
    }

    /// The run stopped on a signal, where it wrote a checkpoint (`"stopped_by"`: the signal's
    /// name; a resumed run that finishes sets `finished`).
    fn stopped(&mut self) -> Result<()> {
        let sig = yarnsim::interrupt::requested().unwrap_or(0);
        self.fields.insert(
            "stopped_by".into(),
            yarnsim::interrupt::signal_name(sig).into(),
        );
        self.write()
    }

    fn write(&self) -> Result<()> {
        let mut fields = self.fields.clone();
        fields.insert("frames_written".into(), self.frames_written.into());
        fields.insert("finished".into(), self.finished.into());
        let mut text = serde_json::to_vec_pretty(&serde_json::Value::Object(fields))?;
        text.push(b'\n');
        for dir in &self.dirs {
            let path = dir.join(MANIFEST);
            yarnsim::output::write_bytes_atomic(&path, &text)
                .with_context(|| format!("writing the run manifest {}", path.display()))?;
        }
        Ok(())
    }

    /// The run is complete: records it.
    fn finish(mut self) -> Result<()> {
        self.finished = true;
        self.write()
    }
}

impl Drop for RunManifest {
    /// A run that stops early still records how many frames it wrote (`finished` stays false).
    fn drop(&mut self) {
        if !self.finished {
            let _ = self.write();
        }
    }
}

/// Renders frame `k` when the capture wants it, with the obstacles where they are now and, for the
/// contact colour modes, the simulation's per-segment values (`values` is reused scratch).
fn capture_frame(
    c: &mut Capture,
    k: u32,
    sim: &mut Sim,
    scene: &Scene,
    values: &mut Vec<f32>,
) -> Result<()> {
    if !c.wants(k) {
        return Ok(());
    }
    let kind = match c.color {
        ColorMode::Yarn => None,
        ColorMode::Updates => Some(SegmentValue::Rebuilds),
        ColorMode::Contacts => Some(SegmentValue::Contacts),
    };
    if let Some(kind) = kind {
        let have = sim
            .segment_values(kind, values)
            .with_context(|| format!("per-segment values of frame {k}"))?;
        if !have {
            bail!(
                "--color {}: the contact model gives no per-segment values",
                c.color
            );
        }
    }
    let mut obstacles = scene.obstacles_at(sim.time);
    obstacles.extend(yarnsim::balls::as_obstacles(&sim.world_balls()));
    let (_, seen) = c
        .frame(
            k,
            &RenderInput {
                topo: &sim.topo,
                pos: &sim.world_pos(),
                radius: scene.yarn.radius,
                obstacles: &obstacles,
                camera: &scene.camera,
                color: c.color,
                segment_values: kind.map(|_| &values[..]),
            },
        )
        .with_context(|| format!("capturing frame {k}"))?;
    if let Some(why) = seen.and_then(|s| blank_image(s, "the scene's [camera]")) {
        say_over_bar(&format!("warning: --capture: frame {k}: {why}"));
    }
    Ok(())
}

/// Why an image shows no yarn, given what its `camera` saw ([`yarnsim::render::ViewCount`]);
/// `None` when it shows some.
fn blank_image(seen: yarnsim::render::ViewCount, camera: &str) -> Option<String> {
    if !seen.blank() {
        return None;
    }
    if seen.points == 0 {
        return Some(
            "there is no yarn to draw: the image shows the background and obstacles only".into(),
        );
    }
    Some(format!(
        "none of the yarn's {} control points is in view of {camera}: the image shows no yarn (a [camera] position or target left out frames the cloth)",
        seen.points
    ))
}

/// Writes the contact matrices requested for frame `k` (seed Figure 2) into `dir`.
fn write_matrices(
    dir: &Path,
    k: u32,
    requests: &[MatrixRequest],
    runner: &mut Runner,
    quiet: bool,
) -> Result<()> {
    for m in requests.iter().filter(|m| m.frame == k) {
        let (mut touching, mut boxes) = (Vec::new(), Vec::new());
        if !runner
            .contact_pairs(&mut touching, &mut boxes)
            .with_context(|| format!("contact pairs of frame {k}"))?
        {
            bail!("--contact-matrix: the contact model reports no contact pairs");
        }
        let s = runner.sim().num_quadrature_points();
        let size = m.size.unwrap_or_else(|| (s as u32).clamp(256, 1024));
        let pairs: Vec<(u32, u32)> = touching.iter().map(|&[i, j]| (i, j)).collect();
        let img = yarnsim::render::contact_matrix(s, &pairs, &boxes, size)
            .with_context(|| format!("contact matrix of frame {k}"))?;
        let path = dir.join(format!("contact_matrix_{k:04}.png"));
        yarnsim::render::save_png(&img, &path)
            .with_context(|| format!("writing {}", path.display()))?;
        if quiet {
            continue;
        }
        eprintln!(
            "wrote {} (S = {s}, {} touching pairs, {} contact sets)",
            path.display(),
            touching.len(),
            boxes.len()
        );
    }
    Ok(())
}

fn render(a: RenderArgs) -> Result<()> {
    // The image never replaces what it is drawn from: the state, its balls, the scene.
    let balls = yarnsim::render::balls_path(&a.state);
    for input in std::iter::once(&a.state).chain(&balls).chain(&a.scene) {
        if same_file(&a.out, input) {
            bail!(
                "--out {}: that is {}, which the image is drawn from",
                a.out.display(),
                input.display()
            );
        }
    }
    // Where the image goes, before it is drawn (it failed only after the drawing).
    if a.out.is_dir() {
        bail!("--out {}: is a directory", a.out.display());
    }
    yarnsim::output::probe_writable(&a.out)
        .with_context(|| format!("--out {}: cannot write there", a.out.display()))?;
    let png = a
        .out
        .extension()
        .is_some_and(|e| e.eq_ignore_ascii_case("png"));
    if !png && !yarnsim::output::is_stream(&a.out) {
        eprintln!(
            "warning: --out {}: the image is written as PNG whatever the name says",
            a.out.display()
        );
    }
    let scene = match &a.scene {
        // `yarn.radius = "auto"` is fitted to the scene's own cloth, as a run would.
        Some(p) => Some(match Scene::load(p)? {
            s if s.yarn.radius_auto => load(p, &[])?.scene,
            s => s,
        }),
        None => None,
    };
    let seen = render_bcc_command(
        &a.state,
        scene.as_ref(),
        &a.out,
        a.width,
        a.height,
        ColorMode::Yarn,
    )
    .with_context(|| format!("rendering {}", a.state.display()))?;
    eprintln!("wrote {}", a.out.display());
    let camera = match &a.scene {
        Some(p) => format!("the [camera] of {}", p.display()),
        None => "the default camera".into(),
    };
    if let Some(why) = blank_image(seen, &camera) {
        eprintln!("warning: {}: {why}", a.state.display());
    }
    Ok(())
}

fn links(a: LinksArgs) -> Result<ExitCode> {
    use yarnsim::links::{certificate_with, Certificate, Method};
    let file = &a.file;
    let curves = if file
        .extension()
        .is_some_and(|e| e.eq_ignore_ascii_case("toml"))
    {
        let scene = Scene::load(file)?;
        let dir = file.parent().unwrap_or(Path::new("."));
        scene::build_curves(&scene, dir)
            .with_context(|| format!("building the cloth of {}", file.display()))?
            .curves
    } else {
        let (curves, report) = yarnsim::bcc::read_with_report(file)?;
        // A B-spline file is certified as its B-splines to the conversion's tolerance: say so.
        if report.bspline.is_some() {
            eprintln!("{}: {report}", file.display());
        }
        curves
    };
    let method = if a.direct {
        Method::Direct
    } else {
        Method::Crossings
    };
    let cert = certificate_with(&curves, method)
        .with_context(|| format!("linking certificate of {}", file.display()))?;
    let Some(saved) = &a.compare else {
        print!("{cert}");
        return Ok(ExitCode::SUCCESS);
    };
    // (Far beyond a certificate: a line per linked pair of loops.)
    const MAX_CERTIFICATE_BYTES: u64 = 256 << 20;
    let old = yarnsim::input::read_at_most(saved, MAX_CERTIFICATE_BYTES, "a certificate")
        .map_err(anyhow::Error::from)
        .and_then(|b| Ok(String::from_utf8(b)?))
        .and_then(|t| Ok(Certificate::parse(&t)?))
        .with_context(|| format!("reading the certificate {}", saved.display()))?;
    let changes = old.changes_to(&cert);
    for c in &changes {
        println!("{c}");
    }
    if old.loops != cert.loops {
        eprintln!(
            "closed loops: {} in {}, {} in {}",
            old.loops,
            saved.display(),
            cert.loops,
            file.display()
        );
    }
    if changes.is_empty() && old.loops == cert.loops {
        let plural =
            |n: usize, one: &str, many: &str| format!("{n} {}", if n == 1 { one } else { many });
        eprintln!(
            "certificate unchanged: {}, {}",
            plural(cert.loops as usize, "closed loop", "closed loops"),
            plural(cert.links.len(), "linked pair", "linked pairs")
        );
        Ok(ExitCode::SUCCESS)
    } else {
        eprintln!(
            "{}",
            match changes.len() {
                1 => "1 loop pair changed its linking number".to_string(),
                n => format!("{n} loop pairs changed their linking number"),
            }
        );
        Ok(ExitCode::from(EXIT_CHANGED))
    }
}

/// The per-frame line a person reads: time, cost, energy, speed, length error and, with contact,
/// how much of it there is; everything else is in `--stats`.
fn summary_line(s: &FrameStats, frames: u32) -> String {
    let mut line = format!(
        "frame {:>4}/{frames}  t = {:.4} s  {} steps  {:.0} ms  KE = {:.3e}  v_max = {:.3e} cm/s  length err = {:.1e}",
        s.frame, s.sim_time, s.steps, s.wall_ms, s.kinetic_energy, s.max_speed, s.max_length_error
    );
    for key in ["touching_pairs", "contact_sets", "rebuild_fraction"] {
        if let Some((k, v)) = s.contact.iter().find(|(k, _)| *k == key) {
            line.push_str(&format!("  {k} = {v:.4}"));
        }
    }
    line
}

fn info(a: InfoArgs) -> Result<()> {
    if a.scene.is_none() && !a.set.is_empty() {
        bail!("--set changes a SCENE's fields; give the scene (yarnsim info SCENE --set ...)");
    }
    // The adapters' binding limits as a run would open them (`YARNSIM_GPU_BINDING_LIMIT`), so
    // that info previews how a scene fares on a GPU that offers less.
    let asked = binding_limit_asked()?;
    let with_limits = yarnsim::gpu::list_adapters_with_limits().map(|list| {
        list.into_iter()
            .map(|(name, mut limits)| {
                if let Some(b) = asked {
                    limits.max_storage_buffer_binding_size =
                        limits.max_storage_buffer_binding_size.min(b);
                }
                (name, limits)
            })
            .collect::<Vec<_>>()
    });
    let adapters = with_limits
        .as_ref()
        .map(|l| l.iter().map(|(s, _)| s.clone()).collect::<Vec<_>>())
        .map_err(|e| anyhow::anyhow!("{e}"));
    let size = match &a.scene {
        Some(p) => Some(scene_size(p, &a.set)?),
        None => None,
    };
    // What the GPU step of the scene needs of each adapter.
    // With it, its contact buffers: exact contact's first ones, and ACL's first capacities that
    // the run lowers to the adapter's binding size (estimates; a step that needs more stops).
    type Rows = Vec<(&'static str, u64)>;
    let needs: Vec<(String, Vec<yarnsim::gpu_step::Need>, Rows, Rows)> = match (&size, &with_limits)
    {
        (Some(s), Ok(list)) => list
            .iter()
            .map(|(ad, limits)| {
                let mut ns = yarnsim::gpu_step::needs(&s.counts, limits);
                let nseg = s.segments as u32;
                if let (Some([e, c, t]), Some(counts)) = (s.exact_capacities, s.exact_counts) {
                    let quad = s.quadrature_points as u32;
                    // As `GpuSim` makes them on this adapter: the room within its binding size
                    // where the counts fit (where they do not, the rows show by how much).
                    let limit = limits.max_storage_buffer_binding_size;
                    let caps = yarnsim::contact::exact_gpu::first_capacities_within(counts, limit)
                        .unwrap_or((e, c, t));
                    ns.extend(yarnsim::gpu_step::exact_needs(nseg, quad, caps, limits));
                }
                let (lowered, paged) = match s.model {
                    ContactModel::Acl => {
                        let (q, bins) = (s.quadrature, s.max_bin);
                        ns.extend(yarnsim::gpu_step::acl_needs(&s.counts, q, bins, limits));
                        (
                            yarnsim::gpu_step::acl_lowered(nseg, limits),
                            yarnsim::gpu_step::acl_paged(nseg, limits),
                        )
                    }
                    _ => (Vec::new(), Vec::new()),
                };
                (ad.name.clone(), ns, lowered, paged)
            })
            .collect(),
        _ => Vec::new(),
    };
    if a.json {
        let mut obj = serde_json::Map::new();
        let list = match &adapters {
            Ok(list) => list
                .iter()
                .map(|ad| {
                    serde_json::json!({
                        "name": ad.name,
                        "backend": ad.backend,
                        "device_type": ad.device_type,
                        "driver": ad.driver,
                        "driver_info": ad.driver_info,
                    })
                })
                .collect(),
            Err(_) => Vec::new(),
        };
        obj.insert("adapters".into(), serde_json::Value::Array(list));
        if let Err(e) = &adapters {
            obj.insert("adapter_error".into(), e.to_string().into());
        }
        if let Some(s) = &size {
            if let serde_json::Value::Object(m) = serde_json::to_value(s)? {
                obj.extend(m);
            }
        }
        if !needs.is_empty() {
            let list: Vec<_> = needs
                .iter()
                .map(|(name, ns, lowered, paged)| {
                    serde_json::json!({
                        "adapter": name,
                        "fits": ns.iter().all(|n| n.ok()),
                        // As the text's verdict: "fits", "fits only if the contacts stay within
                        // the limit" (ACL capacities lowered to the binding size), "does not fit".
                        "verdict": match (ns.iter().all(|n| n.ok()), lowered.is_empty()) {
                            (false, _) => "does_not_fit",
                            (true, true) => "fits",
                            (true, false) => "fits_if_contacts_stay_within_the_limit",
                        },
                        "limits": ns.iter().map(|n| serde_json::json!({
                            "limit": n.limit_name,
                            "what": n.what,
                            "needed": n.needed,
                            "offered": n.offered,
                        })).collect::<Vec<_>>(),
                        "acl_lowered": lowered.iter().map(|(c, b)| serde_json::json!({
                            "capacity": c,
                            "bytes": b,
                        })).collect::<Vec<_>>(),
                        "acl_paged": paged.iter().map(|(c, b)| serde_json::json!({
                            "capacity": c,
                            "bytes": b,
                        })).collect::<Vec<_>>(),
                    })
                })
                .collect();
            obj.insert("gpu_needs".into(), serde_json::Value::Array(list));
        }
        println!("{}", serde_json::Value::Object(obj));
        return Ok(());
    }
    match &adapters {
        Ok(list) if list.is_empty() => println!("GPU adapters: none found"),
        Ok(list) => {
            println!("GPU adapters:");
            for ad in list {
                println!(
                    "  {} ({}, {}, driver {} {})",
                    ad.name, ad.backend, ad.device_type, ad.driver, ad.driver_info
                );
                if let Some(note) = ad.slow_adapter_note() {
                    println!("    {note}");
                }
            }
        }
        Err(e) => println!("GPU adapters: none ({e})"),
    }
    if let Some(s) = size {
        println!("scene {}:", s.scene);
        println!("  yarns             {}", s.yarns);
        println!("  control points    {}", s.control_points);
        println!("  segments          {}", s.segments);
        println!("  quadrature points {}", s.quadrature_points);
        println!("  loops             {}", s.loops);
        println!("  pinned points     {}", s.pinned_points);
        if s.balls > 0 {
            println!(
                "  free balls        {} ({:.1} g in all)",
                s.balls, s.ball_mass
            );
        }
        if s.ties > 0 {
            println!(
                "  ties              {} (a sack's bottom, [[seam]]s)",
                s.ties
            );
        }
        if s.figures > 0 {
            println!(
                "  walking figures   {} ({} capsules, after the {} other obstacles)",
                s.figures,
                s.figures * yarnsim::figure::PART_NAMES.len(),
                s.obstacles
            );
        }
        println!("  steps per frame   {}", s.steps_per_frame);
        if let Some(im) = &s.import {
            print_import(im);
        }
    }
    for (name, ns, lowered, paged) in &needs {
        let verdict = match (ns.iter().all(|n| n.ok()), lowered.is_empty()) {
            (false, _) => "does NOT fit",
            (true, true) => "fits",
            (true, false) => "fits only if the contacts stay within the limit (see below)",
        };
        println!("GPU step on {name}: {verdict}");
        for n in ns {
            println!(
                "  {:<54} needs {:>12}  offers {:>12}  ({}){}",
                n.what,
                n.needed,
                n.offered,
                n.limit_name,
                if n.ok() { "" } else { "  <- too small" }
            );
        }
        if !lowered.is_empty() {
            println!(
                "  ACL's first capacities are estimates from the segment count; these pass the \
                 adapter's max_storage_buffer_binding_size and are lowered to it (a step that \
                 needs more stops with an error):"
            );
            for (capacity, bytes) in lowered {
                println!("  {capacity:<54} estimate {bytes:>12} bytes");
            }
        }
        if !paged.is_empty() {
            println!(
                "  these of ACL's first capacities pass it too and go into pages that each fit \
                 (bounded by the adapter's memory only):"
            );
            for (capacity, bytes) in paged {
                println!("  {capacity:<54} estimate {bytes:>12} bytes");
            }
        }
    }
    Ok(())
}

fn print_import(im: &ImportInfo) {
    println!("  import (BCC pieces):");
    for p in &im.pieces {
        println!("    cloth.{} {}: {}", p.piece, p.path, p.summary);
    }
    let auto = if im.radius_auto {
        " (\"auto\": the fit)"
    } else {
        ""
    };
    match (&im.fit, &im.fit_error) {
        (Some(fit), _) => {
            println!(
                "    import.fit_radius {:.4} cm: half the {}% quantile, {:.4} cm, of the distances \
                 from a quadrature point to another strand (nearest {:.4} cm, median {}); \
                 {:.1}% of quadrature points start closer than 2r at it",
                fit.fit_radius,
                fit.fit_percentile * 100.0,
                fit.fit_distance,
                fit.nearest_min,
                match fit.nearest_median {
                    Some(d) => format!("{d:.4} cm"),
                    None => format!("beyond {:.4} cm, as far as the fit looked", fit.search_radius),
                },
                100.0 * fit.overlap_at_fit
            );
            println!(
                "    yarn.radius       {:.4} cm{auto}: {:.1}% of quadrature points start closer \
                 than 2r to another strand",
                im.yarn_radius,
                100.0 * fit.overlap_at_radius
            );
        }
        (None, error) => {
            println!(
                "    import.fit_radius none: {}",
                error.as_deref().unwrap_or("no fit")
            );
            println!("    yarn.radius       {:.4} cm{auto}", im.yarn_radius);
        }
    }
    println!(
        "    sharp rest bends  {} of {} bending elements start beyond yarn.plastic_max (largest \
         rest curvature {:.3}); they keep their imported shape as rest shape",
        im.bends_beyond_plastic_max, im.bends, im.largest_rest_curvature
    );
    println!(
        "    extent            {:.3} × {:.3} × {:.3} cm",
        im.extent[0], im.extent[1], im.extent[2]
    );
}

#[derive(serde::Serialize)]
struct SceneSize {
    scene: String,
    yarns: usize,
    control_points: usize,
    segments: usize,
    edges: usize,
    quadrature_points: usize,
    loops: u32,
    pinned_points: usize,
    /// Free rigid balls and their total mass (g).
    balls: usize,
    ball_mass: f64,
    /// Tied pairs of control points (a sack's bottom, `[[seam]]`s).
    ties: usize,
    /// Walking figures, and the other obstacles.
    figures: usize,
    obstacles: usize,
    steps_per_frame: u64,
    #[serde(skip)]
    counts: yarnsim::gpu_step::SceneCounts,
    #[serde(skip)]
    model: ContactModel,
    /// Quadrature points a segment, and the scheduler's bins (ACL's buffers of the scene's size).
    #[serde(skip)]
    quadrature: u32,
    #[serde(skip)]
    max_bin: u32,
    /// With exact contact: the GPU path's first capacities (grid entries, candidate pairs,
    /// touching records) from one detection of the initial state at the scene's radius, as
    /// `GpuSim` makes them.
    #[serde(skip_serializing_if = "Option::is_none")]
    exact_capacities: Option<[u32; 3]>,
    /// The counts they come from (the run grows only as far as an adapter binds).
    #[serde(skip)]
    exact_counts: Option<(u32, u32, u32)>,
    /// For scenes with BCC pieces: what importing them did and the radius their spacing fits.
    #[serde(skip_serializing_if = "Option::is_none")]
    import: Option<ImportInfo>,
}

/// `yarnsim info` about the BCC pieces of a scene (JSON key `import`).
#[derive(serde::Serialize)]
struct ImportInfo {
    pieces: Vec<PieceInfo>,
    /// The radius fit and the distances it comes from; absent (with `fit_error`) where the cloth
    /// has no spacing to fit (one yarn alone), which a run with a numeric radius does not need.
    #[serde(flatten)]
    fit: Option<FitInfo>,
    /// Why there is no fit.
    #[serde(skip_serializing_if = "Option::is_none")]
    fit_error: Option<String>,
    /// The scene's yarn radius (cm; the fit when `"auto"`).
    yarn_radius: f64,
    radius_auto: bool,
    /// Bending elements whose rest curvature is beyond `yarn.plastic_max` (they keep it: the bound
    /// acts on plastic flow only), and the largest rest curvature.
    bends_beyond_plastic_max: usize,
    bends: usize,
    largest_rest_curvature: f32,
    /// Size of the placed cloth's bounding box (cm).
    extent: [f64; 3],
}

/// `import.fit_radius` and the nearest-strand distances behind it (JSON: flat in `import`).
#[derive(serde::Serialize)]
struct FitInfo {
    /// The radius the cloth's own spacing fits (cm), `import.fit_radius`.
    fit_radius: f64,
    /// Nearest distances from a quadrature point to another strand (cm): the percentile the fit
    /// uses, the minimum and the median.
    fit_percentile: f64,
    fit_distance: f64,
    nearest_min: f64,
    /// Absent where fewer than half the points found another strand within `search_radius`
    /// (their distances are unknown, beyond it).
    #[serde(skip_serializing_if = "Option::is_none")]
    nearest_median: Option<f64>,
    /// How far the fit looked for another strand (cm).
    search_radius: f64,
    /// Fraction of quadrature points closer than 2r to another strand at the fitted radius.
    overlap_at_fit: f64,
    /// The same fraction at the scene's yarn radius.
    overlap_at_radius: f64,
}

#[derive(serde::Serialize)]
struct PieceInfo {
    piece: usize,
    path: String,
    curve_type: String,
    file_points: usize,
    points: usize,
    /// `BS` files: subdivision levels and the bound on the distance to the file's curves (file
    /// units, and relative to the control spacing).
    #[serde(skip_serializing_if = "Option::is_none")]
    bspline_levels: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    bspline_deviation: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    bspline_relative_deviation: Option<f64>,
    summary: String,
}

/// What `yarnsim info` says about the BCC pieces of a loaded scene (none: `None`).
fn import_info(
    scene: &Scene,
    build: &scene::ClothBuild,
    topo: &Topology,
    pos: &[[f32; 4]],
    fit: Option<yarnsim::import::RadiusFit>,
    radius_auto: bool,
) -> Result<Option<ImportInfo>> {
    if build.imports.is_empty() {
        return Ok(None);
    }
    // (A numeric radius needs no fit: a cloth without one, such as a single yarn, still runs.)
    let fit = match fit {
        Some(f) => Ok(f),
        None => yarnsim::import::fit_radius(&build.curves, scene.contact.quadrature),
    };
    let rod = yarnsim::rod::RodState::new(topo, pos).context("the rest state of the cloth")?;
    let sharp = yarnsim::rod::bends_beyond(&rod, scene.yarn.plastic_max);
    let mut lo = [f64::INFINITY; 3];
    let mut hi = [f64::NEG_INFINITY; 3];
    for p in pos {
        for k in 0..3 {
            lo[k] = lo[k].min(p[k] as f64);
            hi[k] = hi[k].max(p[k] as f64);
        }
    }
    let pct = yarnsim::import::FIT_PERCENTILE;
    let r = scene.yarn.radius as f64;
    Ok(Some(ImportInfo {
        pieces: build
            .imports
            .iter()
            .map(|imp| PieceInfo {
                piece: imp.piece,
                path: imp.path.display().to_string(),
                curve_type: imp.report.curve_type.clone(),
                file_points: imp.report.file_points,
                points: imp.report.points,
                bspline_levels: imp.report.bspline.as_ref().map(|b| b.max_levels),
                bspline_deviation: imp.report.bspline.as_ref().map(|b| b.max_deviation),
                bspline_relative_deviation: imp
                    .report
                    .bspline
                    .as_ref()
                    .map(|b| b.max_relative_deviation),
                summary: imp.report.to_string(),
            })
            .collect(),
        fit_error: fit.as_ref().err().map(|e| e.to_string()),
        fit: fit.ok().map(|fit| FitInfo {
            fit_radius: fit.radius,
            fit_percentile: pct,
            fit_distance: fit.quantile(pct),
            nearest_min: fit.quantile(0.0),
            nearest_median: Some(fit.quantile(0.5)).filter(|d| d.is_finite()),
            search_radius: fit.search_radius,
            overlap_at_fit: fit.fraction_closer_than_2r(fit.radius),
            overlap_at_radius: fit.fraction_closer_than_2r(r),
        }),
        yarn_radius: r,
        radius_auto,
        bends_beyond_plastic_max: sharp.count,
        bends: rod.bends.len(),
        largest_rest_curvature: sharp.largest,
        extent: std::array::from_fn(|k| if hi[k] >= lo[k] { hi[k] - lo[k] } else { 0.0 }),
    }))
}

fn scene_size(path: &Path, sets: &[String]) -> Result<SceneSize> {
    let Loaded {
        scene,
        build,
        pins,
        fit,
    } = load(path, sets)?;
    // What `yarnsim run` checks before it starts (a cloth inside a solid, two pieces in one
    // place, a solid or cloth beyond f32's reach): info said such a scene fits.
    Sim::from_build(&scene, &build, &pins)
        .and_then(|sim| sim.check_start(&build))
        .with_context(|| {
            format!(
                "{}: yarnsim run would refuse this scene as it starts",
                path.display()
            )
        })?;
    let (topo, pos) = Topology::from_curves(&build.curves)
        .with_context(|| format!("laying out the yarns of {}", path.display()))?;
    // A fit comes back exactly when the radius was "auto".
    let radius_auto = fit.is_some();
    let import = import_info(&scene, &build, &topo, &pos, fit, radius_auto)
        .with_context(|| format!("the imported cloth of {}", path.display()))?;
    // The exact path sizes its first buffers from the counts of one detection on the CPU (the
    // run's first step is at the relaxation's smaller radius, so it finds no more than this).
    let mut exact_counts = None;
    let exact_capacities = match scene.contact.model {
        ContactModel::Exact => {
            let mut host = yarnsim::contact::ExactContact::new(scene.yarn.radius, &scene.contact)
                .with_context(|| format!("the contact of {}", path.display()))?;
            host.detect(&topo, &pos)
                .with_context(|| format!("the initial contacts of {}", path.display()))?;
            let n = host.counters();
            exact_counts = Some(yarnsim::contact::exact_gpu::first_counts(n));
            let (e, c, t) = yarnsim::contact::exact_gpu::first_capacities(n);
            Some([e, c, t])
        }
        _ => None,
    };
    Ok(SceneSize {
        scene: path.display().to_string(),
        yarns: topo.yarns.len(),
        control_points: topo.num_points(),
        segments: topo.segments.len(),
        edges: topo.edges.len(),
        quadrature_points: topo.num_quadrature_points(scene.contact.quadrature),
        loops: build.loops,
        pinned_points: pins.len(),
        balls: scene.ball.len(),
        // Folded from +0: the `Sum` of no f64 is −0, which the JSON showed as `-0.0`.
        ball_mass: scene.ball.iter().fold(0.0, |m, b| m + b.mass() as f64),
        ties: build.ties.len(),
        figures: scene.figure.len(),
        obstacles: scene.obstacle.len(),
        steps_per_frame: (1.0 / (scene.simulation.fps * scene.simulation.dt)).round() as u64,
        // Bending elements and damping-block entries are bounded by these (a bend per interior
        // point, every point in a block of each of the two damping phases).
        counts: yarnsim::gpu_step::SceneCounts {
            points: topo.num_points() as u64,
            edges: topo.edges.len() as u64,
            bends: topo.num_points() as u64,
            segments: topo.segments.len() as u64,
            block_points: 2 * topo.num_points() as u64,
            balls: scene.ball.len() as u64,
            obstacles: (scene.obstacle.len() + yarnsim::figure::PARTS * scene.figure.len()) as u64,
        },
        model: scene.contact.model,
        quadrature: scene.contact.quadrature,
        max_bin: scene.contact.max_bin,
        exact_capacities,
        exact_counts,
        import,
    })
}
