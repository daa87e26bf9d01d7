//! The GPU context: one wgpu instance, adapter, device and queue, and the harness every GPU test uses.
//!
//! `Gpu::new` asks wgpu for an adapter (a hardware GPU when there is one, otherwise Mesa's lavapipe on
//! Vulkan), then opens a device with the adapter's own limits, so large scenes get what the hardware
//! offers (DESIGN §7), and with the few optional features later kernels may use when the adapter has
//! them. Nothing here owns simulation buffers; the stage modules create their own from `Gpu::device`.
//!
//! Backend selection: `YARNSIM_GPU_BACKEND` (a comma list of `vulkan`, `gl`, `metal`, `dx12`, or `none`
//! for no backend at all) overrides wgpu's own `WGPU_BACKEND`. `none` exists so tests can check the
//! behaviour without an adapter on a machine that has one. Without either variable, the primary
//! backends (Vulkan, Metal, DX12) are tried first and OpenGL only when none of them has an adapter.
//! The GL backend is never initialised otherwise: on Mesa, merely creating a wgpu instance with GL
//! loads libEGL and starts llvmpipe's threads, and libEGL's destructor then ran during `exit` while
//! those threads were still shutting down, which crashed 1–4 % of `run --capture` processes *after*
//! all their files were written (segfault or glibc heap-corruption abort in `_dl_fini`).
//!
//! [`testing`] holds the test harness: [`testing::gpu_or_skip`] serializes GPU tests within a process and
//! skips loudly (or fails under `CI=true`) when no adapter is available, or only the GL fallback's
//! software rendering (llvmpipe), on which the suite would take hours.

use std::fmt;

/// Environment variable naming the backends to try (overrides `WGPU_BACKEND`).
pub const BACKEND_ENV: &str = "YARNSIM_GPU_BACKEND";

/// Why no GPU context could be made.
#[derive(Clone, Debug, thiserror::Error)]
pub enum GpuError {
    #[error("no GPU adapter on backends [{backends}]: {reason}; install a Vulkan driver (e.g. Debian package mesa-vulkan-drivers for the lavapipe CPU adapter) or pick another backend with {BACKEND_ENV}")]
    NoAdapter { backends: String, reason: String },
    /// Adapters there are, but none whose name contains what `--adapter` asked for: the advice is
    /// to pick one of them, not to install a driver.
    #[error("no adapter named like {name:?} on backends [{backends}]; there are: {adapters} (`--adapter` takes a part of one of these names, in any case; `yarnsim info` lists them)")]
    NoAdapterNamed {
        name: String,
        backends: String,
        adapters: String,
    },
    #[error("{BACKEND_ENV}={value:?} names no backend (use a comma list of vulkan, gl, metal, dx12, or none)")]
    BadBackend { value: String },
    #[error("the adapter {adapter:?} refused to open a device: {reason}")]
    RequestDevice { adapter: String, reason: String },
    /// Only for the GPU tests ([`testing::gpu_or_skip`]): the one adapter found is OpenGL software
    /// rendering, which the primary backends fell back to.
    #[error("the only adapter is OpenGL software rendering, {adapter}, on which the GPU tests would take hours; install a Vulkan driver (e.g. Debian package mesa-vulkan-drivers for the lavapipe CPU adapter) or set {BACKEND_ENV}=gl to run them on it anyway")]
    SoftwareGl { adapter: String },
}

impl GpuError {
    /// The error without its leading "no GPU adapter", for messages that already say so.
    pub fn reason(&self) -> String {
        let s = self.to_string();
        match s.strip_prefix("no GPU adapter ") {
            Some(rest) => rest.to_string(),
            None => s,
        }
    }
}

/// What identifies an adapter in `yarnsim info` and in test output.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AdapterSummary {
    pub name: String,
    pub backend: String,
    pub device_type: String,
    pub driver: String,
    pub driver_info: String,
}

impl AdapterSummary {
    fn from_info(info: &wgpu::AdapterInfo) -> Self {
        AdapterSummary {
            name: info.name.clone(),
            backend: format!("{:?}", info.backend),
            device_type: format!("{:?}", info.device_type),
            driver: info.driver.clone(),
            driver_info: info.driver_info.clone(),
        }
    }

    /// OpenGL software rendering (Mesa's llvmpipe or softpipe through GL): what [`Gpu::new`] falls
    /// back to on a machine with Mesa's GL but no Vulkan driver. On it the GPU step compiles its
    /// kernels at their first dispatch, for minutes, and runs some 20 times slower than on
    /// lavapipe, Mesa's Vulkan CPU adapter (the tiny swatch's first ACL frame without relaxation,
    /// 2 cores: 246 s, 174 of them in its first step, against 3.2 s; `tests/gpu_scan.rs` 73 s
    /// against 7 s).
    pub fn is_software_gl(&self) -> bool {
        self.backend == format!("{:?}", wgpu::Backend::Gl)
            && self.device_type == format!("{:?}", wgpu::DeviceType::Cpu)
    }

    /// What a run on this adapter should say before it starts, if anything: on OpenGL software
    /// rendering ([`AdapterSummary::is_software_gl`]) that it will be slow, and what to install.
    pub fn slow_adapter_note(&self) -> Option<String> {
        self.is_software_gl().then(|| {
            format!(
                "note: {} is OpenGL software rendering: the first GPU step compiles every kernel, \
                 for minutes, and the steps run some 20 times slower than on lavapipe, Mesa's \
                 Vulkan CPU adapter (Debian package mesa-vulkan-drivers)",
                self.name
            )
        })
    }
}

impl fmt::Display for AdapterSummary {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} ({}, {}, driver {} {})",
            self.name, self.backend, self.device_type, self.driver, self.driver_info
        )
    }
}

/// One opened GPU: everything a stage needs to create buffers, pipelines and submit work.
///
/// Fields drop in declaration order: the queue and device go before the adapter and the instance
/// that made them.
pub struct Gpu {
    pub queue: wgpu::Queue,
    pub device: wgpu::Device,
    pub adapter: wgpu::Adapter,
    pub instance: wgpu::Instance,
    /// Where the GPU steps made on this device report their batch reruns (none until
    /// [`Gpu::on_rerun`]).
    reruns: RerunSink,
    /// The kernels' pipelines compiled on this device ([`Gpu::pipelines`]).
    pipelines: crate::pipelines::PipelineCache,
}

/// A receiver of [`crate::gpu_step::RerunNotice`]s, shared by the GPU steps made on one [`Gpu`]
/// (the relaxation's and the frames').
pub type RerunSink =
    std::sync::Arc<std::sync::Mutex<Option<Box<dyn FnMut(&crate::gpu_step::RerunNotice) + Send>>>>;

impl fmt::Debug for Gpu {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Gpu({})", self.summary())
    }
}

/// Points `XDG_RUNTIME_DIR` at a private directory when it is unset, which silences the Vulkan
/// loader's "XDG_RUNTIME_DIR is invalid or not set" complaint (common in containers and CI). Call it
/// while the process has one thread (it sets an environment variable).
///
/// The directory is `<temp>/yarnsim-xdg-<uid>`: one per user, created with mode 0700 and reused by
/// every later process, so runs and test processes leave no per-process folders behind. An existing
/// one is used only when it is a real directory (not a link) owned by this user with no group or
/// other permissions; otherwise the variable stays unset (the loader only complains). Returns the
/// directory it set, if any.
pub fn ensure_runtime_dir() -> Option<std::path::PathBuf> {
    if std::env::var_os("XDG_RUNTIME_DIR").is_some() {
        return None;
    }
    let dir = private_runtime_dir()?;
    std::env::set_var("XDG_RUNTIME_DIR", &dir);
    Some(dir)
}

#[cfg(unix)]
fn private_runtime_dir() -> Option<std::path::PathBuf> {
    use std::os::unix::fs::{DirBuilderExt, MetadataExt};
    let tmp = std::env::temp_dir();
    // This process's user: the owner of `/proc/self` on Linux, else of a file it creates.
    let uid = match std::fs::metadata("/proc/self") {
        Ok(m) => m.uid(),
        Err(_) => {
            let probe = tmp.join(format!("yarnsim-uid-{}", std::process::id()));
            let uid = std::fs::File::create(&probe).ok()?.metadata().ok()?.uid();
            let _ = std::fs::remove_file(&probe);
            uid
        }
    };
    let dir = tmp.join(format!("yarnsim-xdg-{uid}"));
    match std::fs::DirBuilder::new().mode(0o700).create(&dir) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
        Err(_) => return None,
    }
    // Made now or earlier (possibly by someone else): check before trusting it.
    let m = std::fs::symlink_metadata(&dir).ok()?;
    (m.is_dir() && m.uid() == uid && m.mode() & 0o077 == 0).then_some(dir)
}

#[cfg(not(unix))]
fn private_runtime_dir() -> Option<std::path::PathBuf> {
    let dir = std::env::temp_dir().join("yarnsim-xdg");
    std::fs::create_dir_all(&dir).ok()?;
    Some(dir)
}

/// Optional features a kernel may use when the adapter has them; everything else stays off so
/// behaviour does not depend on which extras a driver happens to expose.
fn wanted_features() -> wgpu::Features {
    wgpu::Features::TIMESTAMP_QUERY
        | wgpu::Features::TIMESTAMP_QUERY_INSIDE_ENCODERS
        | wgpu::Features::SUBGROUP
}

/// The backends to try: `YARNSIM_GPU_BACKEND`, else `WGPU_BACKEND`, else the primary ones (Vulkan,
/// Metal, DX12; see the module doc for why GL is not among them).
pub fn requested_backends() -> Result<wgpu::Backends, GpuError> {
    match std::env::var(BACKEND_ENV) {
        Ok(value) => {
            let v = value.trim().to_ascii_lowercase();
            if v == "none" {
                return Ok(wgpu::Backends::empty());
            }
            let b = wgpu::Backends::from_comma_list(&v);
            if b.is_empty() {
                Err(GpuError::BadBackend { value })
            } else {
                Ok(b)
            }
        }
        Err(_) => Ok(wgpu::Backends::PRIMARY.with_env()),
    }
}

/// Whether the user named the backends (then no fallback to GL is tried).
fn backends_named() -> bool {
    std::env::var_os(BACKEND_ENV).is_some() || std::env::var_os("WGPU_BACKEND").is_some()
}

/// `vulkan, gl` style names of a backend set ("none" when empty).
fn backend_list(b: wgpu::Backends) -> String {
    let names: Vec<&str> = [
        (wgpu::Backends::VULKAN, "vulkan"),
        (wgpu::Backends::GL, "gl"),
        (wgpu::Backends::METAL, "metal"),
        (wgpu::Backends::DX12, "dx12"),
        (wgpu::Backends::BROWSER_WEBGPU, "webgpu"),
        (wgpu::Backends::NOOP, "noop"),
    ]
    .iter()
    .filter(|(f, _)| b.contains(*f))
    .map(|(_, n)| *n)
    .collect();
    if names.is_empty() {
        "none".into()
    } else {
        names.join(", ")
    }
}

fn make_instance(backends: wgpu::Backends) -> wgpu::Instance {
    let mut desc = wgpu::InstanceDescriptor::new_without_display_handle_from_env();
    desc.backends = backends;
    // wgpu checks every indirect dispatch's arguments by default, in release builds too, with a
    // compute pass of its own before each one: on an H200 that made the counted scans and sorts
    // (`scan::count_plan`) slower than the capacity-sized dispatches they replace. Our only indirect
    // arguments are count_plan's grids, within the 65,535-per-dimension limit by construction (a
    // 2-D grid, tests/gpu_scan.rs), so the check is off, except on D3D12, where wgpu needs it for
    // `num_workgroups`, or when WGPU_VALIDATION_INDIRECT_CALL asks for it.
    let dx12 = cfg!(windows) && backends.contains(wgpu::Backends::DX12);
    if !dx12 && std::env::var_os("WGPU_VALIDATION_INDIRECT_CALL").is_none() {
        desc.flags
            .remove(wgpu::InstanceFlags::VALIDATION_INDIRECT_CALL);
    }
    wgpu::Instance::new(desc)
}

/// Every adapter the requested backends offer, or the GL fallback's (for `yarnsim info`; see
/// [`list_adapters_with_limits`]).
pub fn list_adapters() -> Result<Vec<AdapterSummary>, GpuError> {
    Ok(list_adapters_with_limits()?
        .into_iter()
        .map(|(s, _)| s)
        .collect())
}

/// Every adapter the requested backends offer, with the limits a device on it can have; with no
/// backend named and no adapter on the primary ones, the GL adapters [`Gpu::new`] falls back to.
pub fn list_adapters_with_limits() -> Result<Vec<(AdapterSummary, wgpu::Limits)>, GpuError> {
    let list = |backends: wgpu::Backends| {
        let instance = make_instance(backends);
        let adapters = pollster::block_on(instance.enumerate_adapters(backends));
        adapters
            .iter()
            .map(|a| (AdapterSummary::from_info(&a.get_info()), a.limits()))
            .collect::<Vec<_>>()
    };
    let backends = requested_backends()?;
    let found = list(backends);
    if found.is_empty() && !backends_named() && !backends.contains(wgpu::Backends::GL) {
        return Ok(list(wgpu::Backends::GL));
    }
    Ok(found)
}

/// The most records of `unit` bytes that one storage binding of `limit` bytes holds (at least 1):
/// how far a capacity whose buffer would pass a device's `max_storage_buffer_binding_size` grows.
pub fn binding_records(unit: u64, limit: u64) -> u32 {
    (limit / unit.max(1)).clamp(1, u32::MAX as u64) as u32
}

impl Gpu {
    /// Opens the preferred adapter of the requested backends (see the module doc): with no backend
    /// named, the primary backends first and GL only when they have no adapter.
    pub fn new() -> Result<Gpu, GpuError> {
        let backends = requested_backends()?;
        match Self::with_backends(backends) {
            Err(GpuError::NoAdapter { .. })
                if !backends_named() && !backends.contains(wgpu::Backends::GL) =>
            {
                Self::with_backends(wgpu::Backends::GL).map_err(|e| match e {
                    GpuError::NoAdapter { reason, .. } => GpuError::NoAdapter {
                        backends: backend_list(backends | wgpu::Backends::GL),
                        reason,
                    },
                    other => other,
                })
            }
            other => other,
        }
    }

    /// Opens the preferred adapter among `backends`; an empty set gives [`GpuError::NoAdapter`].
    pub fn with_backends(backends: wgpu::Backends) -> Result<Gpu, GpuError> {
        let instance = make_instance(backends);
        let backend_names = backend_list(backends);
        if backends.is_empty() {
            return Err(GpuError::NoAdapter {
                backends: backend_names,
                reason: format!("{BACKEND_ENV}=none disables every backend"),
            });
        }
        let adapter = pollster::block_on(instance.request_adapter(&wgpu::RequestAdapterOptions {
            power_preference: wgpu::PowerPreference::HighPerformance,
            force_fallback_adapter: false,
            compatible_surface: None,
            apply_limit_buckets: false,
        }))
        .map_err(|e| GpuError::NoAdapter {
            backends: backend_names,
            reason: e.to_string(),
        })?;
        Self::open(instance, adapter)
    }

    /// Opens the first adapter whose name contains `name` (ignoring case), among the requested
    /// backends (see the module doc; an OpenGL adapter needs `YARNSIM_GPU_BACKEND=gl`); the error
    /// lists the adapters there are.
    pub fn with_adapter_name(name: &str) -> Result<Gpu, GpuError> {
        let backends = requested_backends()?;
        let instance = make_instance(backends);
        let adapters = pollster::block_on(instance.enumerate_adapters(backends));
        let want = name.to_lowercase();
        let names: Vec<String> = adapters.iter().map(|a| a.get_info().name).collect();
        match adapters
            .into_iter()
            .find(|a| a.get_info().name.to_lowercase().contains(&want))
        {
            Some(adapter) => Self::open(instance, adapter),
            None if names.is_empty() => Err(GpuError::NoAdapter {
                backends: backend_list(backends),
                reason: format!("no adapter named like {name:?}: no adapters at all"),
            }),
            None => Err(GpuError::NoAdapterNamed {
                name: name.to_string(),
                backends: backend_list(backends),
                adapters: names.join("; "),
            }),
        }
    }

    /// Another device on this GPU's adapter that binds at most `bytes` per storage buffer (the
    /// adapter's limit where that is less): how a scene fares on a GPU with a smaller
    /// `max_storage_buffer_binding_size` (wgpu's default is 128 MiB), without one.
    pub fn with_binding_limit(&self, bytes: u64) -> Result<Gpu, GpuError> {
        let mut limits = self.adapter.limits();
        limits.max_storage_buffer_binding_size = limits.max_storage_buffer_binding_size.min(bytes);
        Self::open_with(self.instance.clone(), self.adapter.clone(), limits)
    }

    /// Opens a device on `adapter` with the adapter's own limits.
    fn open(instance: wgpu::Instance, adapter: wgpu::Adapter) -> Result<Gpu, GpuError> {
        // Ask for everything the adapter offers: big scenes need big storage bindings.
        let limits = adapter.limits();
        Self::open_with(instance, adapter, limits)
    }

    /// Opens a device on `adapter` with `limits`.
    fn open_with(
        instance: wgpu::Instance,
        adapter: wgpu::Adapter,
        limits: wgpu::Limits,
    ) -> Result<Gpu, GpuError> {
        let desc = wgpu::DeviceDescriptor {
            label: Some("yarnsim"),
            required_features: adapter.features() & wanted_features(),
            required_limits: limits,
            experimental_features: wgpu::ExperimentalFeatures::disabled(),
            memory_hints: wgpu::MemoryHints::Performance,
            trace: wgpu::Trace::Off,
        };
        let (device, queue) = pollster::block_on(adapter.request_device(&desc)).map_err(|e| {
            GpuError::RequestDevice {
                adapter: adapter.get_info().name,
                reason: e.to_string(),
            }
        })?;
        Ok(Gpu {
            instance,
            adapter,
            device,
            queue,
            reruns: RerunSink::default(),
            pipelines: Default::default(),
        })
    }

    /// The pipelines of the kernels named in `names`, each compiled once on this device and
    /// shared by every GPU step made on it ([`crate::pipelines::PipelineCache`]).
    pub fn pipelines(
        &self,
        names: &[&str],
    ) -> Result<crate::pipelines::Pipelines, crate::pipelines::PipelineError> {
        self.pipelines.pipelines(&self.device, names)
    }

    /// How many pipelines [`Gpu::pipelines`] has compiled on this device.
    pub fn pipelines_compiled(&self) -> usize {
        self.pipelines.compiled()
    }

    /// Makes `f` hear of every batch rerun of the GPU steps made on this device from now on
    /// ([`crate::gpu_step::GpuSim::new`]): a capacity grown, a budget raised, with the time the
    /// failed attempt took. The first steps of a garment are chains of them (minutes each on
    /// lavapipe), so a run says why a step takes long. Replaces an earlier receiver.
    pub fn on_rerun(&self, f: impl FnMut(&crate::gpu_step::RerunNotice) + Send + 'static) {
        *self.reruns.lock().unwrap_or_else(|e| e.into_inner()) = Some(Box::new(f));
    }

    /// Stops the reports [`Gpu::on_rerun`] asked for.
    pub fn no_rerun_reports(&self) {
        *self.reruns.lock().unwrap_or_else(|e| e.into_inner()) = None;
    }

    /// The receiver the GPU steps made on this device report their reruns to.
    pub fn rerun_sink(&self) -> RerunSink {
        self.reruns.clone()
    }

    /// Bytes of buffer memory the device holds now (every buffer made on it, after the destruction
    /// of dropped ones that a poll completes), where wgpu counts them (its `counters` feature, on
    /// Vulkan, Metal and DX12); `None` where it does not.
    pub fn buffer_memory(&self) -> Option<u64> {
        let _ = self.device.poll(wgpu::PollType::wait_indefinitely());
        let bytes = self.device.get_internal_counters().hal.buffer_memory.read();
        (bytes > 0).then_some(bytes as u64)
    }

    /// Name, backend and driver of the opened adapter.
    pub fn summary(&self) -> AdapterSummary {
        AdapterSummary::from_info(&self.adapter.get_info())
    }
}

/// The harness every GPU test uses.
///
/// ```no_run
/// let Some(gpu) = yarnsim::gpu::testing::gpu_or_skip("my_test") else { return };
/// // `gpu` derefs to `Gpu`; other GPU tests of this process wait until it is dropped.
/// let _queue = &gpu.queue;
/// ```
pub mod testing {
    use super::{AdapterSummary, Gpu, GpuError};
    use std::io::Write;
    use std::sync::{Mutex, MutexGuard, OnceLock};

    /// One GPU test at a time per process: lavapipe shares the few CPU cores, and timings or memory
    /// of concurrent devices would make failures hard to read.
    static GPU_TEST_LOCK: Mutex<()> = Mutex::new(());

    /// An opened GPU that holds the per-process GPU test lock until dropped.
    pub struct GpuTestGuard {
        // Declared before the lock so the device is released before the next test may start.
        gpu: Gpu,
        _lock: MutexGuard<'static, ()>,
    }

    impl std::ops::Deref for GpuTestGuard {
        type Target = Gpu;
        fn deref(&self) -> &Gpu {
            &self.gpu
        }
    }

    /// True when the environment says this is CI (`CI=true` or `CI=1`), where a missing GPU is a failure.
    pub fn is_ci() -> bool {
        std::env::var("CI")
            .map(|v| {
                let v = v.trim().to_ascii_lowercase();
                v == "true" || v == "1"
            })
            .unwrap_or(false)
    }

    /// [`super::ensure_runtime_dir`] once per process, under the GPU lock, so the loader does not
    /// complain in test output.
    fn ensure_runtime_dir() {
        static DONE: OnceLock<()> = OnceLock::new();
        DONE.get_or_init(|| {
            super::ensure_runtime_dir();
        });
    }

    /// Decides what a test does with the outcome of opening a GPU: run, skip loudly, or (under CI) fail.
    ///
    /// The skip line goes straight to the process's stderr, not through `eprintln!`, so the test
    /// runner's output capture cannot hide it.
    pub fn skip_or_fail(test_name: &str, opened: Result<Gpu, GpuError>, ci: bool) -> Option<Gpu> {
        match opened {
            Ok(gpu) => Some(gpu),
            Err(e) if ci => panic!("{test_name}: a GPU adapter is required under CI=true: {e}"),
            Err(e) => {
                let why = match &e {
                    GpuError::NoAdapter { .. } => format!("no GPU adapter ({})", e.reason()),
                    _ => e.to_string(),
                };
                let _ = writeln!(std::io::stderr(), "SKIPPED {test_name}: {why}");
                None
            }
        }
    }

    /// Whether the GPU tests run on `adapter`: not on OpenGL software rendering
    /// ([`AdapterSummary::is_software_gl`]) unless the user named the backends (`named`:
    /// `YARNSIM_GPU_BACKEND` or `WGPU_BACKEND` set), since on a machine with Mesa's GL and no
    /// Vulkan driver the suite would otherwise run there for hours, where the README promises a
    /// skip.
    pub fn test_adapter(adapter: &AdapterSummary, named: bool) -> Result<(), GpuError> {
        if adapter.is_software_gl() && !named {
            return Err(GpuError::SoftwareGl {
                adapter: adapter.to_string(),
            });
        }
        Ok(())
    }

    /// Opens a GPU for test `test_name`, holding the process-wide GPU test lock while it lives.
    ///
    /// Without an adapter it prints `SKIPPED <test>: no GPU adapter (<reason>)` to stderr and returns
    /// `None`, except under `CI=true`, where it panics so the missing GPU fails the run. The same
    /// (with its own reason) where the only adapter is OpenGL software rendering and no backend
    /// was named ([`test_adapter`]).
    pub fn gpu_or_skip(test_name: &str) -> Option<GpuTestGuard> {
        // A test that panicked while holding the lock must not fail every later GPU test.
        let lock = GPU_TEST_LOCK.lock().unwrap_or_else(|e| e.into_inner());
        ensure_runtime_dir();
        // The first test of the process that finds no adapter for the tests decides for the rest:
        // opening the GL fallback takes seconds, a few hundred times over in the suite.
        static UNUSABLE: OnceLock<GpuError> = OnceLock::new();
        let opened = match UNUSABLE.get() {
            Some(e) => Err(e.clone()),
            None => Gpu::new().and_then(|gpu| {
                test_adapter(&gpu.summary(), super::backends_named()).map(|()| gpu)
            }),
        };
        if let Err(e @ (GpuError::NoAdapter { .. } | GpuError::SoftwareGl { .. })) = &opened {
            let _ = UNUSABLE.set(e.clone());
        }
        let gpu = skip_or_fail(test_name, opened, is_ci())?;
        Some(GpuTestGuard { gpu, _lock: lock })
    }
}
