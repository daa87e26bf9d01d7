//! `cargo bench --bench dispatch`: what one compute dispatch costs on this adapter, apart from its
//! work. The GPU step is bound by its dispatches (the relaxed scarf's ACL step is some 200 of them,
//! most with little work), so what a dispatch costs, and what makes it cost, decides how the step's
//! stages are best cut and joined: whether an empty indirect dispatch (a stage with nothing to do
//! at rest) is nearly free or costs as much as a small one, whether the cost is wgpu's barrier
//! between dependent dispatches, and what a compute pass adds.
//!
//! Each variant records `n` dispatches of one tiny kernel (`bump`: each thread adds 1 to its word
//! of a storage buffer) into one command buffer, submits it and waits; the time per dispatch is
//! the slope between `n = 256` and `n = 2048` (the submission's and the wait's fixed costs cancel),
//! from the fastest of `YARNSIM_BENCH_REPS` (default 7) runs of each. Variants:
//! * `chained`: one workgroup, every dispatch on the same buffer (a read-write hazard, so wgpu puts
//!   a barrier between each two): the GPU step's common case;
//! * `independent`: one workgroup, each dispatch on a buffer of its own (no hazard, no barrier);
//! * `indirect_empty`: `chained` through `dispatch_workgroups_indirect` with (0, 1, 1) workgroups,
//!   a counted stage with nothing to do;
//! * `indirect_one`: the same with (1, 1, 1);
//! * `wide`: `chained` with 128 workgroups of 256 threads (a per-point kernel of a 32k-point cloth);
//! * `pass_each`: `chained` with every dispatch in a compute pass of its own.
//!
//! On lavapipe the numbers say little about a GPU (it runs dispatches on the CPU); on hardware they
//! are the costs the README's "Known limits" weigh the step's dispatch count with.

use std::time::Instant;

use yarnsim::gpu::Gpu;

const SHADER: &str = r#"
@group(0) @binding(0) var<storage, read_write> data: array<u32>;

@compute @workgroup_size(256)
fn bump(@builtin(global_invocation_id) g: vec3<u32>) {
    if g.x < arrayLength(&data) {
        data[g.x] = data[g.x] + 1u;
    }
}
"#;

const SMALL: u32 = 256;
const LARGE: u32 = 2048;
/// Threads of `wide`: 128 workgroups of 256.
const WIDE: u64 = 128 * 256;

#[derive(Clone, Copy, PartialEq)]
enum Variant {
    Chained,
    Independent,
    IndirectEmpty,
    IndirectOne,
    Wide,
    PassEach,
}

impl Variant {
    const ALL: [Variant; 6] = [
        Variant::Chained,
        Variant::Independent,
        Variant::IndirectEmpty,
        Variant::IndirectOne,
        Variant::Wide,
        Variant::PassEach,
    ];

    fn name(self) -> &'static str {
        match self {
            Variant::Chained => "chained",
            Variant::Independent => "independent",
            Variant::IndirectEmpty => "indirect_empty",
            Variant::IndirectOne => "indirect_one",
            Variant::Wide => "wide",
            Variant::PassEach => "pass_each",
        }
    }
}

struct Setup {
    pipeline: wgpu::ComputePipeline,
    /// One bind group per dispatch for `independent` (each its own buffer); the first is the
    /// shared buffer of the other variants.
    groups: Vec<wgpu::BindGroup>,
    wide: wgpu::BindGroup,
    indirect_empty: wgpu::Buffer,
    indirect_one: wgpu::Buffer,
}

fn setup(g: &Gpu) -> Setup {
    let device = &g.device;
    let module = device.create_shader_module(wgpu::ShaderModuleDescriptor {
        label: Some("dispatch_bump"),
        source: wgpu::ShaderSource::Wgsl(SHADER.into()),
    });
    let layout = device.create_bind_group_layout(&wgpu::BindGroupLayoutDescriptor {
        label: Some("dispatch_bump"),
        entries: &[wgpu::BindGroupLayoutEntry {
            binding: 0,
            visibility: wgpu::ShaderStages::COMPUTE,
            ty: wgpu::BindingType::Buffer {
                ty: wgpu::BufferBindingType::Storage { read_only: false },
                has_dynamic_offset: false,
                min_binding_size: None,
            },
            count: None,
        }],
    });
    let pl = device.create_pipeline_layout(&wgpu::PipelineLayoutDescriptor {
        label: Some("dispatch_bump"),
        bind_group_layouts: &[Some(&layout)],
        immediate_size: 0,
    });
    let pipeline = device.create_compute_pipeline(&wgpu::ComputePipelineDescriptor {
        label: Some("dispatch_bump"),
        layout: Some(&pl),
        module: &module,
        entry_point: Some("bump"),
        compilation_options: Default::default(),
        cache: None,
    });
    let group = |words: u64| {
        let buf = device.create_buffer(&wgpu::BufferDescriptor {
            label: Some("dispatch_data"),
            size: words * 4,
            usage: wgpu::BufferUsages::STORAGE,
            mapped_at_creation: false,
        });
        device.create_bind_group(&wgpu::BindGroupDescriptor {
            label: Some("dispatch_bump"),
            layout: &layout,
            entries: &[wgpu::BindGroupEntry {
                binding: 0,
                resource: buf.as_entire_binding(),
            }],
        })
    };
    let groups = (0..LARGE).map(|_| group(256)).collect();
    let wide = group(WIDE);
    let indirect = |x: u32| {
        let buf = device.create_buffer(&wgpu::BufferDescriptor {
            label: Some("dispatch_indirect"),
            size: 12,
            usage: wgpu::BufferUsages::INDIRECT | wgpu::BufferUsages::COPY_DST,
            mapped_at_creation: false,
        });
        g.queue
            .write_buffer(&buf, 0, bytemuck::cast_slice(&[x, 1u32, 1]));
        buf
    };
    Setup {
        pipeline,
        groups,
        wide,
        indirect_empty: indirect(0),
        indirect_one: indirect(1),
    }
}

/// Seconds from recording `n` dispatches of `v` to the GPU's finishing them.
fn run(g: &Gpu, s: &Setup, v: Variant, n: u32) -> f64 {
    let t = Instant::now();
    let mut enc = g
        .device
        .create_command_encoder(&wgpu::CommandEncoderDescriptor {
            label: Some("dispatch_bench"),
        });
    let dispatch = |pass: &mut wgpu::ComputePass<'_>, i: u32| {
        pass.set_pipeline(&s.pipeline);
        match v {
            Variant::Independent => pass.set_bind_group(0, &s.groups[i as usize], &[]),
            Variant::Wide => pass.set_bind_group(0, &s.wide, &[]),
            _ => pass.set_bind_group(0, &s.groups[0], &[]),
        }
        match v {
            Variant::IndirectEmpty => pass.dispatch_workgroups_indirect(&s.indirect_empty, 0),
            Variant::IndirectOne => pass.dispatch_workgroups_indirect(&s.indirect_one, 0),
            Variant::Wide => pass.dispatch_workgroups((WIDE / 256) as u32, 1, 1),
            _ => pass.dispatch_workgroups(1, 1, 1),
        }
    };
    if v == Variant::PassEach {
        for i in 0..n {
            let mut pass = enc.begin_compute_pass(&wgpu::ComputePassDescriptor::default());
            dispatch(&mut pass, i);
        }
    } else {
        let mut pass = enc.begin_compute_pass(&wgpu::ComputePassDescriptor::default());
        for i in 0..n {
            dispatch(&mut pass, i);
        }
    }
    g.queue.submit([enc.finish()]);
    g.device
        .poll(wgpu::PollType::wait_indefinitely())
        .expect("the device was lost");
    t.elapsed().as_secs_f64()
}

fn main() {
    if std::env::args().any(|a| a == "--list") {
        return;
    }
    let g = match Gpu::new() {
        Ok(g) => g,
        Err(e) => {
            println!("dispatch bench skipped: no GPU adapter ({e})");
            return;
        }
    };
    let reps: usize = std::env::var("YARNSIM_BENCH_REPS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(7)
        .max(1);
    println!("adapter: {}", g.summary());
    let s = setup(&g);
    println!(
        "{:<16} {:>12} {:>12} {:>14}",
        "variant", "256 (ms)", "2048 (ms)", "µs / dispatch"
    );
    for v in Variant::ALL {
        // A first run of each size compiles and warms everything up; then the fastest of `reps`.
        let best = |n: u32| {
            run(&g, &s, v, n);
            (0..reps)
                .map(|_| run(&g, &s, v, n))
                .fold(f64::INFINITY, f64::min)
        };
        let (a, b) = (best(SMALL), best(LARGE));
        println!(
            "{:<16} {:>12.3} {:>12.3} {:>14.2}",
            v.name(),
            a * 1e3,
            b * 1e3,
            (b - a) / f64::from(LARGE - SMALL) * 1e6
        );
    }
}
