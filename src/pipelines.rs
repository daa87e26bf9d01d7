//! The compute pipelines of the kernel table ([`crate::shaders::KERNELS`]) and the named GPU buffers
//! they bind.
//!
//! Each kernel's bind group layout is built explicitly from its binding list (uniform / read-only
//! storage / read-write storage, in order), never inferred from the shader, so the table is the
//! contract. Each kernel's pipeline is compiled once per device: a [`crate::gpu::Gpu`] keeps a
//! [`PipelineCache`], and [`crate::gpu::Gpu::pipelines`] gives the pipelines a GPU step needs from
//! it ([`Pipelines::only`] compiles afresh). Bind groups are made from a [`Buffers`] set, where the
//! buffer bound to a binding is the one of the same name.
//!
//! [`run_kernel`] dispatches one kernel on buffers uploaded from byte slices and reads back every
//! buffer it may write; the parity tests compare that with the kernel's CPU twin.

use crate::gpu::Gpu;
use crate::shaders::{self, Access, Kernel, ShaderError};
use std::collections::BTreeMap;
use std::sync::Mutex;

/// Why a pipeline could not be built or run.
#[derive(Debug, thiserror::Error)]
pub enum PipelineError {
    #[error(transparent)]
    Shader(#[from] ShaderError),
    #[error("kernel {kernel}: no buffer named {binding} to bind")]
    MissingBuffer {
        kernel: &'static str,
        binding: &'static str,
    },
    #[error("kernel {kernel}: {message}")]
    Gpu {
        kernel: &'static str,
        message: String,
    },
    #[error("reading buffer {name} back: {message}")]
    Readback { name: String, message: String },
}

/// One kernel's layout and pipeline (wgpu's handles: a clone shares them).
#[derive(Clone)]
struct Entry {
    kernel: &'static Kernel,
    layout: wgpu::BindGroupLayout,
    pipeline: wgpu::ComputePipeline,
}

/// How many threads a recorded dispatch runs.
#[derive(Clone, Debug)]
pub enum Threads {
    /// A fixed count, known when the dispatch is recorded (a capacity, a table length).
    Fixed(u32),
    /// A workgroup grid the GPU wrote into `buffer` at byte `offset` (three `u32`, the arguments
    /// of an indirect dispatch) earlier in the same step: the live count of a counted scan or sort
    /// ([`crate::scan::count_plan`]), so its work follows the count instead of the capacity.
    Indirect { buffer: wgpu::Buffer, offset: u64 },
}

impl From<u32> for Threads {
    fn from(n: u32) -> Threads {
        Threads::Fixed(n)
    }
}

/// The workgroup grid of a dispatch: fixed, or read by the GPU from a buffer.
#[derive(Clone, Debug)]
pub enum Grid {
    Groups([u32; 3]),
    Indirect { buffer: wgpu::Buffer, offset: u64 },
}

impl Threads {
    /// The grid of this many threads of a kernel with `workgroup_size` threads per workgroup.
    pub fn grid(&self, workgroup_size: u32) -> Grid {
        match self {
            Threads::Fixed(n) => Grid::Groups(shaders::dispatch_grid(*n, workgroup_size)),
            Threads::Indirect { buffer, offset } => Grid::Indirect {
                buffer: buffer.clone(),
                offset: *offset,
            },
        }
    }
}

/// One recorded dispatch: kernel, bind group, threads.
pub type Dispatch = (&'static str, wgpu::BindGroup, Threads);

/// The pipelines of some or all kernels of the table, made once per device.
pub struct Pipelines {
    entries: Vec<Entry>,
}

fn layout_entry(i: usize, access: Access) -> wgpu::BindGroupLayoutEntry {
    let ty = match access {
        Access::Uniform => wgpu::BufferBindingType::Uniform,
        Access::Read => wgpu::BufferBindingType::Storage { read_only: true },
        Access::ReadWrite => wgpu::BufferBindingType::Storage { read_only: false },
    };
    wgpu::BindGroupLayoutEntry {
        binding: i as u32,
        visibility: wgpu::ShaderStages::COMPUTE,
        ty: wgpu::BindingType::Buffer {
            ty,
            has_dynamic_offset: false,
            min_binding_size: None,
        },
        count: None,
    }
}

impl Pipelines {
    /// Every kernel of the table.
    pub fn new(device: &wgpu::Device) -> Result<Pipelines, PipelineError> {
        let names: Vec<&str> = shaders::KERNELS.iter().map(|k| k.name).collect();
        Self::only(device, &names)
    }

    /// The kernels named in `names`, each compiled now.
    pub fn only(device: &wgpu::Device, names: &[&str]) -> Result<Pipelines, PipelineError> {
        let entries = names
            .iter()
            .map(|&name| Entry::compile(device, name))
            .collect::<Result<_, _>>()?;
        Ok(Pipelines { entries })
    }

    fn entry(&self, name: &str) -> Result<&Entry, PipelineError> {
        self.entries
            .iter()
            .find(|e| e.kernel.name == name)
            .ok_or_else(|| ShaderError::UnknownKernel(name.into()).into())
    }

    /// The bind group of kernel `name` over `buffers` (each binding gets the buffer of its name).
    pub fn bind_group(
        &self,
        device: &wgpu::Device,
        name: &str,
        buffers: &Buffers,
    ) -> Result<wgpu::BindGroup, PipelineError> {
        self.bind_group_with(device, name, buffers, &[])
    }

    /// Like [`Pipelines::bind_group`], with some bindings given other buffers: for a kernel
    /// dispatched several times per step with a small per-dispatch uniform (a colour, a level), one
    /// bind group per variant.
    pub fn bind_group_with(
        &self,
        device: &wgpu::Device,
        name: &str,
        buffers: &Buffers,
        overrides: &[(&str, &wgpu::Buffer)],
    ) -> Result<wgpu::BindGroup, PipelineError> {
        let ranges: Vec<(&str, wgpu::BufferBinding<'_>)> = overrides
            .iter()
            .map(|(n, b)| (*n, b.as_entire_buffer_binding()))
            .collect();
        self.bind_group_ranges(device, name, buffers, &ranges)
    }

    /// Like [`Pipelines::bind_group_with`], the overrides given as buffer ranges (a counted scan's
    /// or sort's per-level uniforms are 256-byte slots of one plan buffer the GPU writes).
    pub fn bind_group_ranges(
        &self,
        device: &wgpu::Device,
        name: &str,
        buffers: &Buffers,
        overrides: &[(&str, wgpu::BufferBinding<'_>)],
    ) -> Result<wgpu::BindGroup, PipelineError> {
        let e = self.entry(name)?;
        let mut entries = Vec::with_capacity(e.kernel.bindings.len());
        for (i, b) in e.kernel.bindings.iter().enumerate() {
            let binding = match overrides.iter().find(|(n, _)| *n == b.name) {
                Some((_, r)) => r.clone(),
                None => buffers
                    .get(b.name)
                    .ok_or(PipelineError::MissingBuffer {
                        kernel: e.kernel.name,
                        binding: b.name,
                    })?
                    .as_entire_buffer_binding(),
            };
            entries.push(wgpu::BindGroupEntry {
                binding: i as u32,
                resource: wgpu::BindingResource::Buffer(binding),
            });
        }
        Ok(device.create_bind_group(&wgpu::BindGroupDescriptor {
            label: Some(e.kernel.name),
            layout: &e.layout,
            entries: &entries,
        }))
    }

    /// Records every dispatch of `list`, in order (a recorded chain of stages: the exact path's,
    /// the scheduler's, the set merge's).
    pub fn dispatch_all(
        &self,
        pass: &mut wgpu::ComputePass<'_>,
        list: &[Dispatch],
    ) -> Result<(), PipelineError> {
        for (name, bg, threads) in list {
            self.dispatch(pass, name, bg, threads.clone())?;
        }
        Ok(())
    }

    /// Records kernel `name` over `threads` threads (a 2-D grid beyond 65,535 workgroups).
    pub fn dispatch(
        &self,
        pass: &mut wgpu::ComputePass<'_>,
        name: &str,
        bind_group: &wgpu::BindGroup,
        threads: impl Into<Threads>,
    ) -> Result<(), PipelineError> {
        let e = self.entry(name)?;
        let grid = threads.into().grid(e.kernel.workgroup_size);
        self.dispatch_grid(pass, name, bind_group, &grid)
    }

    /// Records kernel `name` over `grid` (an indirect one is read by the GPU when it runs).
    pub fn dispatch_grid(
        &self,
        pass: &mut wgpu::ComputePass<'_>,
        name: &str,
        bind_group: &wgpu::BindGroup,
        grid: &Grid,
    ) -> Result<(), PipelineError> {
        match grid {
            Grid::Groups(groups) => self.dispatch_groups(pass, name, bind_group, *groups),
            Grid::Indirect { buffer, offset } => {
                let e = self.entry(name)?;
                pass.set_pipeline(&e.pipeline);
                pass.set_bind_group(0, bind_group, &[]);
                pass.dispatch_workgroups_indirect(buffer, *offset);
                Ok(())
            }
        }
    }

    /// Records kernel `name` over the workgroup grid `groups` (for kernels that work per
    /// workgroup, e.g. one workgroup per damping block).
    pub fn dispatch_groups(
        &self,
        pass: &mut wgpu::ComputePass<'_>,
        name: &str,
        bind_group: &wgpu::BindGroup,
        groups: [u32; 3],
    ) -> Result<(), PipelineError> {
        let e = self.entry(name)?;
        if groups.contains(&0) {
            return Ok(());
        }
        pass.set_pipeline(&e.pipeline);
        pass.set_bind_group(0, bind_group, &[]);
        pass.dispatch_workgroups(groups[0], groups[1], groups[2]);
        Ok(())
    }
}

impl Entry {
    /// Compiles kernel `name`'s pipeline on `device`, with its layout from the binding list.
    fn compile(device: &wgpu::Device, name: &str) -> Result<Entry, PipelineError> {
        let kernel = shaders::kernel(name)?;
        let source = shaders::expanded_text(kernel.name)?;
        let scope = device.push_error_scope(wgpu::ErrorFilter::Validation);
        let module = device.create_shader_module(wgpu::ShaderModuleDescriptor {
            label: Some(kernel.name),
            source: wgpu::ShaderSource::Wgsl(source.into()),
        });
        let layout_entries: Vec<_> = kernel
            .bindings
            .iter()
            .enumerate()
            .map(|(i, b)| layout_entry(i, b.access))
            .collect();
        let layout = device.create_bind_group_layout(&wgpu::BindGroupLayoutDescriptor {
            label: Some(kernel.name),
            entries: &layout_entries,
        });
        let pl = device.create_pipeline_layout(&wgpu::PipelineLayoutDescriptor {
            label: Some(kernel.name),
            bind_group_layouts: &[Some(&layout)],
            immediate_size: 0,
        });
        let pipeline = device.create_compute_pipeline(&wgpu::ComputePipelineDescriptor {
            label: Some(kernel.name),
            layout: Some(&pl),
            module: &module,
            entry_point: Some(kernel.name),
            compilation_options: Default::default(),
            cache: None,
        });
        if let Some(e) = pollster::block_on(scope.pop()) {
            return Err(PipelineError::Gpu {
                kernel: kernel.name,
                message: e.to_string(),
            });
        }
        Ok(Entry {
            kernel,
            layout,
            pipeline,
        })
    }
}

/// The pipelines compiled on one device, by kernel name, for [`PipelineCache::pipelines`].
///
/// Why: a GPU step compiles every kernel of its contact model (ACL's step: some hundred), which on
/// lavapipe took 0.65 s of the 0.66 s that `GpuSim::new` of the tiny swatch took (2026-12-06),
/// and a run makes several GPU steps on one device (the relaxation one per radius stage, a resume
/// another), as does a test process (hundreds). A pipeline depends only on its kernel's text and
/// binding list, both fixed at build time, so every later step on the device takes the same one.
#[derive(Default)]
pub struct PipelineCache {
    entries: Mutex<BTreeMap<&'static str, Entry>>,
    compiled: std::sync::atomic::AtomicUsize,
}

impl PipelineCache {
    /// The kernels named in `names`, those not yet compiled on `device` compiled now and kept.
    /// Every call must pass the same device (the cache belongs to it).
    pub fn pipelines(
        &self,
        device: &wgpu::Device,
        names: &[&str],
    ) -> Result<Pipelines, PipelineError> {
        let mut entries = Vec::with_capacity(names.len());
        for &name in names {
            // (Compiled outside the lock: a failed compile leaves nothing behind, and another
            // thread wanting the same kernel at once at worst compiles it twice.)
            let cached = self.lock().get(name).cloned();
            let entry = match cached {
                Some(e) => e,
                None => {
                    let e = Entry::compile(device, name)?;
                    self.compiled
                        .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    self.lock().entry(e.kernel.name).or_insert(e).clone()
                }
            };
            entries.push(entry);
        }
        Ok(Pipelines { entries })
    }

    /// How many pipelines this cache has compiled.
    pub fn compiled(&self) -> usize {
        self.compiled.load(std::sync::atomic::Ordering::Relaxed)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, BTreeMap<&'static str, Entry>> {
        // (A panic while the map was held leaves whole entries in it, or none: it stays usable.)
        self.entries.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// Named GPU buffers: the buffer a kernel binding of the same name gets. A clone names the same
/// buffers (handles); a buffer made in the clone replaces its name there only.
#[derive(Clone, Default)]
pub struct Buffers {
    map: BTreeMap<String, wgpu::Buffer>,
}

/// wgpu rejects empty bindings, and a runtime-sized array must hold at least one element of its
/// record: an empty array is bound as this many zero bytes, more than the largest record of the
/// layout contract (checked in tests/layout.rs).
pub const MIN_BUFFER: u64 = 1024;

impl Buffers {
    pub fn get(&self, name: &str) -> Option<&wgpu::Buffer> {
        self.map.get(name)
    }

    /// Every name, in order.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.map.keys().map(String::as_str)
    }

    /// Forgets buffer `name` (dropped when nothing else holds it).
    pub fn remove(&mut self, name: &str) {
        self.map.remove(name);
    }

    /// Names an existing buffer `name` (a buffer another driver owns, bound here too).
    pub fn insert(&mut self, name: &str, buffer: wgpu::Buffer) {
        self.map.insert(name.to_string(), buffer);
    }

    /// Creates (or replaces) buffer `name` of `bytes` zero bytes (padded like [`Buffers::upload`]).
    /// Nothing is written from the host: WebGPU gives every new buffer zeroed contents, which
    /// wgpu fills on the GPU before the buffer's first use. (Uploading a host vector of zeros
    /// instead cost the ACL path's rebuild with new capacities hundreds of milliseconds on the
    /// scarf: hundreds of MiB copied on the host and sent to the device.)
    pub fn zeroed(
        &mut self,
        device: &wgpu::Device,
        name: &str,
        bytes: usize,
        uniform: bool,
    ) -> &wgpu::Buffer {
        let buf = device.create_buffer(&wgpu::BufferDescriptor {
            label: Some(name),
            size: (bytes as u64).next_multiple_of(4).max(MIN_BUFFER),
            usage: Self::usage(uniform),
            mapped_at_creation: false,
        });
        self.map.insert(name.to_string(), buf);
        &self.map[name]
    }

    /// A uniform can be a storage binding too: a kernel that computes a count other kernels read
    /// as a uniform writes it in place (`acl_counts` into `rebuild` and `acl`), where a copy would
    /// end the compute pass.
    fn usage(uniform: bool) -> wgpu::BufferUsages {
        if uniform {
            wgpu::BufferUsages::UNIFORM | wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_DST
        } else {
            wgpu::BufferUsages::STORAGE
                | wgpu::BufferUsages::COPY_DST
                | wgpu::BufferUsages::COPY_SRC
        }
    }

    /// Creates (or replaces) buffer `name` holding `bytes`, padded to 4 bytes and at least 16 bytes.
    pub fn upload(
        &mut self,
        device: &wgpu::Device,
        queue: &wgpu::Queue,
        name: &str,
        bytes: &[u8],
        uniform: bool,
    ) -> &wgpu::Buffer {
        let size = (bytes.len() as u64).next_multiple_of(4).max(MIN_BUFFER);
        let buf = device.create_buffer(&wgpu::BufferDescriptor {
            label: Some(name),
            size,
            usage: Self::usage(uniform),
            mapped_at_creation: false,
        });
        if !bytes.is_empty() {
            let mut padded = bytes.to_vec();
            padded.resize(bytes.len().next_multiple_of(4), 0);
            queue.write_buffer(&buf, 0, &padded);
        }
        self.map.insert(name.to_string(), buf);
        &self.map[name]
    }

    /// Copies the first `bytes` bytes of buffer `name` back to the host (blocking).
    pub fn read(
        &self,
        device: &wgpu::Device,
        queue: &wgpu::Queue,
        name: &str,
        bytes: u64,
    ) -> Result<Vec<u8>, PipelineError> {
        let err = |message: String| PipelineError::Readback {
            name: name.into(),
            message,
        };
        let src = self.get(name).ok_or_else(|| err("no such buffer".into()))?;
        read_buffer(device, queue, src, bytes).map_err(err)
    }
}

/// The first `bytes` bytes of `src` (which must be that long, rounded up to 4 bytes), through a
/// staging buffer: waits for the GPU.
pub fn read_buffer(
    device: &wgpu::Device,
    queue: &wgpu::Queue,
    src: &wgpu::Buffer,
    bytes: u64,
) -> Result<Vec<u8>, String> {
    let size = bytes.next_multiple_of(4).max(4);
    let staging = device.create_buffer(&wgpu::BufferDescriptor {
        label: Some("readback"),
        size,
        usage: wgpu::BufferUsages::COPY_DST | wgpu::BufferUsages::MAP_READ,
        mapped_at_creation: false,
    });
    let mut enc = device.create_command_encoder(&wgpu::CommandEncoderDescriptor {
        label: Some("readback"),
    });
    enc.copy_buffer_to_buffer(src, 0, &staging, 0, size);
    queue.submit([enc.finish()]);
    read_mapped(device, &staging, bytes as usize)
}

/// Maps `staging` (already the target of a submitted copy) and returns its first `bytes` bytes.
pub fn read_mapped(
    device: &wgpu::Device,
    staging: &wgpu::Buffer,
    bytes: usize,
) -> Result<Vec<u8>, String> {
    let slice = staging.slice(..);
    let (tx, rx) = std::sync::mpsc::channel();
    slice.map_async(wgpu::MapMode::Read, move |r| {
        let _ = tx.send(r);
    });
    device
        .poll(wgpu::PollType::wait_indefinitely())
        .map_err(|e| format!("waiting for the GPU: {e}"))?;
    rx.recv()
        .map_err(|_| "the buffer was never mapped".to_string())?
        .map_err(|e| format!("mapping: {e}"))?;
    let out = {
        let data = slice
            .get_mapped_range()
            .map_err(|e| format!("reading the mapped range: {e}"))?;
        data[..bytes].to_vec()
    };
    staging.unmap();
    Ok(out)
}

/// Runs kernel `name` once over `threads` threads on buffers made from `inputs` (binding name →
/// bytes; every binding of the kernel must be given) and returns the contents of every binding it
/// may write (read-write storage), by name, at the sizes given. For parity tests and benches.
pub fn run_kernel(
    gpu: &Gpu,
    name: &str,
    inputs: &[(&str, &[u8])],
    threads: u32,
) -> Result<BTreeMap<String, Vec<u8>>, PipelineError> {
    let pipelines = gpu.pipelines(&[name])?;
    let kernel = shaders::kernel(name)?;
    let mut buffers = Buffers::default();
    for b in kernel.bindings {
        let bytes = inputs
            .iter()
            .find(|(n, _)| *n == b.name)
            .map(|(_, v)| *v)
            .ok_or(PipelineError::MissingBuffer {
                kernel: kernel.name,
                binding: b.name,
            })?;
        buffers.upload(
            &gpu.device,
            &gpu.queue,
            b.name,
            bytes,
            b.access == Access::Uniform,
        );
    }
    let bg = pipelines.bind_group(&gpu.device, name, &buffers)?;
    let scope = gpu.device.push_error_scope(wgpu::ErrorFilter::Validation);
    let mut enc = gpu
        .device
        .create_command_encoder(&wgpu::CommandEncoderDescriptor { label: Some(name) });
    {
        let mut pass = enc.begin_compute_pass(&wgpu::ComputePassDescriptor {
            label: Some(name),
            timestamp_writes: None,
        });
        pipelines.dispatch(&mut pass, name, &bg, threads)?;
    }
    gpu.queue.submit([enc.finish()]);
    if let Some(e) = pollster::block_on(scope.pop()) {
        return Err(PipelineError::Gpu {
            kernel: kernel.name,
            message: e.to_string(),
        });
    }
    let mut out = BTreeMap::new();
    for b in kernel.bindings {
        if b.access == Access::ReadWrite {
            let len = inputs.iter().find(|(n, _)| *n == b.name).unwrap().1.len();
            let data = buffers.read(&gpu.device, &gpu.queue, b.name, len as u64)?;
            out.insert(b.name.to_string(), data);
        }
    }
    Ok(out)
}

/// CPU twin of the `loop_probe` kernel: an invocation that is not cut short counts to `probe[0]`.
pub fn loop_probe(probe: &mut [u32]) {
    probe[1] = probe[0];
}

/// The number of loop iterations after which the adapter silently ends a shader invocation, if
/// it does below `tries` (e.g. 65,535 on Mesa lavapipe 22.3.6), found by running `loop_probe`.
pub fn measure_loop_cap(gpu: &Gpu, tries: u32) -> Result<Option<u32>, PipelineError> {
    let probe = [tries, 0u32];
    let out = run_kernel(
        gpu,
        "loop_probe",
        &[("probe", bytemuck::cast_slice(&probe))],
        1,
    )?;
    let reached = bytemuck::pod_read_unaligned::<[u32; 2]>(&out["probe"])[1];
    Ok((reached < tries).then_some(reached))
}
