//! Offscreen frame capture: the cloth drawn with wgpu into a texture and read back as an RGBA image.
//!
//! Input: the flat topology and control points (`state::Topology`, `[f32; 4]` positions), the yarn
//! radius, the obstacles at their current placement, the scene camera, a colour mode and an optional
//! per-segment scalar. Output: an `image::RgbaImage` of the requested size. No window is involved, so
//! this runs on lavapipe as well as on hardware.
//!
//! Geometry (see `render/mesh.rs`): every spline segment is one instance of a tube of `SIDES` × `SAMPLES`
//! vertices generated in `shaders/render_tubes.wgsl` from the segment's four control points, so the tube
//! follows the Catmull-Rom curve; obstacles are CPU-built triangle meshes drawn by
//! `shaders/render_obstacles.wgsl` (a plane as a finite checkered square under the cloth). Both are
//! depth-tested and lit by two lights fixed to the camera; 4× MSAA where the adapter offers it.
//!
//! Colours ([`ColorMode`]): `Yarn` gives each yarn a colour from [`PALETTE`]; `Updates` paints segments
//! whose value (contact-set rebuilds during the frame) is positive red over the yarn colour, reaching
//! pure red at [`UPDATES_FULL_RED`] updates as in the seed's Figure 8; `Contacts` maps a per-segment
//! contact density onto a colour ramp normalized by the frame's largest value.
//!
//! The camera maths ([`CameraView`]) is written once and used by the tests to project points.
//! [`contact_matrix`] draws the seed's Figure 2 on the CPU; [`Capture`] writes numbered PNG frames.

pub mod camera;
mod contact_matrix;
mod mesh;

pub use camera::{Bounds, CameraView, DEFAULT_FOV_DEG};
pub use contact_matrix::contact_matrix;
pub use mesh::{
    MeshVertex, TubeInstance, PLANE_COLORS, SAMPLES, SIDES, SOLID_COLOR, VERTICES_PER_TUBE,
};

use crate::gpu::{Gpu, GpuError};
use crate::scene::{Camera, Obstacle, Scene};
use crate::state::{Topology, TopologyError};
use bytemuck::{Pod, Zeroable};
use glam::Vec3;
use std::path::{Path, PathBuf};

/// Why a frame could not be rendered or written.
#[derive(Debug, thiserror::Error)]
pub enum RenderError {
    #[error("render input: {0}")]
    InvalidInput(String),
    #[error("GPU error while rendering: {0}")]
    Gpu(String),
    #[error(transparent)]
    GpuInit(#[from] GpuError),
    #[error(transparent)]
    Shader(#[from] crate::shaders::ShaderError),
    #[error(transparent)]
    Topology(#[from] TopologyError),
    #[error(transparent)]
    Bcc(#[from] crate::bcc::BccError),
    #[error("{path}: cannot write image: {source}")]
    Image {
        path: String,
        #[source]
        source: image::ImageError,
    },
    #[error("{path}: {source}")]
    Io {
        path: String,
        #[source]
        source: std::io::Error,
    },
    #[error(transparent)]
    Output(#[from] crate::output::OutputError),
}

/// How yarn is coloured.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum ColorMode {
    /// One colour per yarn from [`PALETTE`].
    #[default]
    Yarn,
    /// Contact-set rebuilds during the frame (per-segment values) in red over the yarn colour.
    Updates,
    /// Per-segment contact density on a colour ramp.
    Contacts,
}

impl std::str::FromStr for ColorMode {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s.trim().to_ascii_lowercase().as_str() {
            "yarn" => Ok(ColorMode::Yarn),
            "updates" => Ok(ColorMode::Updates),
            "contacts" => Ok(ColorMode::Contacts),
            other => Err(format!(
                "unknown colour mode {other:?} (expected yarn, updates or contacts)"
            )),
        }
    }
}

impl std::fmt::Display for ColorMode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            ColorMode::Yarn => "yarn",
            ColorMode::Updates => "updates",
            ColorMode::Contacts => "contacts",
        })
    }
}

/// Yarn colours (sRGB), yarn `i` takes `PALETTE[i % len]`. No entry is red, which `Updates` reserves,
/// or grey, which the obstacles and background use.
pub const PALETTE: [[u8; 3]; 8] = [
    [51, 115, 204],  // blue
    [230, 140, 26],  // orange
    [64, 166, 77],   // green
    [153, 77, 179],  // purple
    [26, 166, 179],  // teal
    [217, 191, 38],  // yellow
    [140, 89, 51],   // brown
    [217, 102, 153], // pink
];

/// Background colour (sRGB); cleared exactly to this value.
pub const BACKGROUND: [u8; 3] = [236, 238, 242];
/// The red of `Updates`.
pub const UPDATE_RED: [u8; 3] = [230, 20, 20];
/// Number of rebuilds in one frame at which `Updates` reaches pure red (seed Figure 8: "pure red
/// corresponds to ≥ 13 updates over the 1/30 s frame").
pub const UPDATES_FULL_RED: f32 = 13.0;
/// `Contacts` colour of a segment with no contact.
pub const NO_CONTACT: [u8; 3] = [178, 184, 199];

/// Colour of yarn `yarn` in `Yarn` mode.
pub fn yarn_color(yarn: usize) -> [u8; 3] {
    PALETTE[yarn % PALETTE.len()]
}

fn mix(a: [u8; 3], b: [u8; 3], t: f32) -> [u8; 3] {
    let t = t.clamp(0.0, 1.0);
    [0, 1, 2].map(|k| (a[k] as f32 + (b[k] as f32 - a[k] as f32) * t).round() as u8)
}

/// The `Contacts` ramp at `t ∈ [0, 1]`: blue → yellow → red.
pub fn contact_ramp(t: f32) -> [u8; 3] {
    const BLUE: [u8; 3] = [38, 77, 217];
    const YELLOW: [u8; 3] = [242, 217, 26];
    const RED: [u8; 3] = [217, 26, 26];
    if t <= 0.5 {
        mix(BLUE, YELLOW, t * 2.0)
    } else {
        mix(YELLOW, RED, t * 2.0 - 1.0)
    }
}

/// The sRGB colour of every segment for `mode`. `Updates` and `Contacts` need one finite, non-negative
/// value per segment.
pub fn segment_colors(
    topo: &Topology,
    mode: ColorMode,
    values: Option<&[f32]>,
) -> Result<Vec<[u8; 3]>, RenderError> {
    let base = |s: usize| yarn_color(topo.segments[s].yarn as usize);
    let n = topo.segments.len();
    if mode == ColorMode::Yarn {
        return Ok((0..n).map(base).collect());
    }
    let v = values.ok_or_else(|| {
        RenderError::InvalidInput(format!("colour mode {mode} needs per-segment values"))
    })?;
    if v.len() != n {
        return Err(RenderError::InvalidInput(format!(
            "{} segment values for {n} segments",
            v.len()
        )));
    }
    if let Some(i) = v.iter().position(|x| !x.is_finite() || *x < 0.0) {
        return Err(RenderError::InvalidInput(format!(
            "segment value {i} is {}; values must be finite and non-negative",
            v[i]
        )));
    }
    Ok(match mode {
        ColorMode::Yarn => unreachable!(),
        ColorMode::Updates => (0..n)
            .map(|s| {
                if v[s] > 0.0 {
                    // Any update shows clearly; the shade deepens to pure red at UPDATES_FULL_RED.
                    mix(base(s), UPDATE_RED, 0.6 + 0.4 * (v[s] / UPDATES_FULL_RED))
                } else {
                    base(s)
                }
            })
            .collect(),
        ColorMode::Contacts => {
            let max = v.iter().cloned().fold(0.0f32, f32::max);
            (0..n)
                .map(|s| {
                    if v[s] > 0.0 {
                        contact_ramp(v[s] / max)
                    } else {
                        NO_CONTACT
                    }
                })
                .collect()
        }
    })
}

/// Everything one frame shows.
#[derive(Clone, Copy, Debug)]
pub struct RenderInput<'a> {
    pub topo: &'a Topology,
    /// Control points `[x, y, z, w]` (w unused), indexed as `topo` says.
    pub pos: &'a [[f32; 4]],
    /// Yarn radius r.
    pub radius: f32,
    /// Obstacles at their current placement (keyframes are not applied here).
    pub obstacles: &'a [Obstacle],
    pub camera: &'a Camera,
    pub color: ColorMode,
    /// One value per segment for `Updates` (rebuilds this frame) and `Contacts` (contact density).
    pub segment_values: Option<&'a [f32]>,
}

/// Uniforms of both render shaders (`struct Uniforms` in the WGSL).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, Pod, Zeroable)]
struct Uniforms {
    view_proj: [f32; 16],
    eye: [f32; 4],
    key_dir: [f32; 4],
    fill_dir: [f32; 4],
    /// radius, samples per segment, sides, unused.
    tube: [f32; 4],
}
const _: () = assert!(std::mem::size_of::<Uniforms>() == 128);

const COLOR_FORMAT: wgpu::TextureFormat = wgpu::TextureFormat::Rgba8Unorm;
const DEPTH_FORMAT: wgpu::TextureFormat = wgpu::TextureFormat::Depth32Float;

/// A growable GPU vertex buffer.
struct GrowBuffer {
    buf: Option<wgpu::Buffer>,
    label: &'static str,
}

impl GrowBuffer {
    fn ensure(&mut self, device: &wgpu::Device, bytes: u64) -> &wgpu::Buffer {
        let need = bytes.max(4);
        if self.buf.as_ref().is_none_or(|b| b.size() < need) {
            // Grow by half again so slowly growing scenes do not reallocate every frame.
            let size = (need + need / 2).next_multiple_of(4);
            self.buf = Some(device.create_buffer(&wgpu::BufferDescriptor {
                label: Some(self.label),
                size,
                usage: wgpu::BufferUsages::VERTEX | wgpu::BufferUsages::COPY_DST,
                mapped_at_creation: false,
            }));
        }
        self.buf.as_ref().expect("buffer was just created")
    }
}

/// The offscreen renderer: pipelines, render targets and readback buffer for one image size.
pub struct Renderer {
    device: wgpu::Device,
    queue: wgpu::Queue,
    width: u32,
    height: u32,
    sample_count: u32,
    tube_pipeline: wgpu::RenderPipeline,
    obstacle_pipeline: wgpu::RenderPipeline,
    uniform_buf: wgpu::Buffer,
    bind_group: wgpu::BindGroup,
    tube_index_buf: wgpu::Buffer,
    tube_index_count: u32,
    msaa_view: Option<wgpu::TextureView>,
    resolve_tex: wgpu::Texture,
    resolve_view: wgpu::TextureView,
    depth_view: wgpu::TextureView,
    readback: wgpu::Buffer,
    padded_row: u32,
    instances: GrowBuffer,
    obstacle_verts: GrowBuffer,
    // CPU scratch kept between frames so a capture run does not allocate per frame.
    scratch_instances: Vec<TubeInstance>,
    scratch_mesh: Vec<MeshVertex>,
}

impl Renderer {
    /// Creates pipelines and `width × height` targets on `gpu`.
    pub fn new(gpu: &Gpu, width: u32, height: u32) -> Result<Renderer, RenderError> {
        let device = gpu.device.clone();
        let limits = device.limits();
        let max = limits.max_texture_dimension_2d;
        if width == 0 || height == 0 || width > max || height > max {
            return Err(RenderError::InvalidInput(format!(
                "image size {width}×{height}: each side must be between 1 and {max} on this adapter"
            )));
        }
        let sample_count = {
            let color = gpu.adapter.get_texture_format_features(COLOR_FORMAT);
            let depth = gpu.adapter.get_texture_format_features(DEPTH_FORMAT);
            if color.flags.sample_count_supported(4) && depth.flags.sample_count_supported(4) {
                4
            } else {
                1
            }
        };
        // Out of memory too: a large image's targets (16,384² with 4× multisampling is 4 GiB)
        // are refused by the device, which with no scope to take it panics in wgpu's handler.
        let memory = device.push_error_scope(wgpu::ErrorFilter::OutOfMemory);
        let scope = device.push_error_scope(wgpu::ErrorFilter::Validation);

        let bgl = device.create_bind_group_layout(&wgpu::BindGroupLayoutDescriptor {
            label: Some("render uniforms"),
            entries: &[wgpu::BindGroupLayoutEntry {
                binding: 0,
                visibility: wgpu::ShaderStages::VERTEX | wgpu::ShaderStages::FRAGMENT,
                ty: wgpu::BindingType::Buffer {
                    ty: wgpu::BufferBindingType::Uniform,
                    has_dynamic_offset: false,
                    min_binding_size: wgpu::BufferSize::new(std::mem::size_of::<Uniforms>() as u64),
                },
                count: None,
            }],
        });
        let layout = device.create_pipeline_layout(&wgpu::PipelineLayoutDescriptor {
            label: Some("render"),
            bind_group_layouts: &[Some(&bgl)],
            immediate_size: 0,
        });
        let uniform_buf = device.create_buffer(&wgpu::BufferDescriptor {
            label: Some("render uniforms"),
            size: std::mem::size_of::<Uniforms>() as u64,
            usage: wgpu::BufferUsages::UNIFORM | wgpu::BufferUsages::COPY_DST,
            mapped_at_creation: false,
        });
        let bind_group = device.create_bind_group(&wgpu::BindGroupDescriptor {
            label: Some("render uniforms"),
            layout: &bgl,
            entries: &[wgpu::BindGroupEntry {
                binding: 0,
                resource: uniform_buf.as_entire_binding(),
            }],
        });

        let tube_module = device.create_shader_module(wgpu::ShaderModuleDescriptor {
            label: Some("render_tubes"),
            source: wgpu::ShaderSource::Wgsl(crate::shaders::expanded_text("render_tubes")?.into()),
        });
        let obstacle_module = device.create_shader_module(wgpu::ShaderModuleDescriptor {
            label: Some("render_obstacles"),
            source: wgpu::ShaderSource::Wgsl(
                crate::shaders::expanded_text("render_obstacles")?.into(),
            ),
        });
        let tube_attrs = wgpu::vertex_attr_array![
            0 => Float32x3, 1 => Float32x3, 2 => Float32x3, 3 => Float32x3,
            4 => Float32x3, 5 => Unorm8x4, 6 => Float32x2, 7 => Uint32
        ];
        let obstacle_attrs =
            wgpu::vertex_attr_array![0 => Float32x3, 1 => Float32x3, 2 => Unorm8x4];
        let make_pipeline = |label: &str,
                             module: &wgpu::ShaderModule,
                             vs: &str,
                             fs: &str,
                             buffer: wgpu::VertexBufferLayout<'_>| {
            device.create_render_pipeline(&wgpu::RenderPipelineDescriptor {
                label: Some(label),
                layout: Some(&layout),
                vertex: wgpu::VertexState {
                    module,
                    entry_point: Some(vs),
                    compilation_options: Default::default(),
                    buffers: &[Some(buffer)],
                },
                primitive: wgpu::PrimitiveState {
                    topology: wgpu::PrimitiveTopology::TriangleList,
                    // Windings are not consistent across caps, walls and meshes; the fragment shader
                    // lights whichever side faces the eye.
                    cull_mode: None,
                    ..Default::default()
                },
                depth_stencil: Some(wgpu::DepthStencilState {
                    format: DEPTH_FORMAT,
                    depth_write_enabled: Some(true),
                    depth_compare: Some(wgpu::CompareFunction::Less),
                    stencil: Default::default(),
                    bias: Default::default(),
                }),
                multisample: wgpu::MultisampleState {
                    count: sample_count,
                    mask: !0,
                    alpha_to_coverage_enabled: false,
                },
                fragment: Some(wgpu::FragmentState {
                    module,
                    entry_point: Some(fs),
                    compilation_options: Default::default(),
                    targets: &[Some(wgpu::ColorTargetState {
                        format: COLOR_FORMAT,
                        blend: None,
                        write_mask: wgpu::ColorWrites::ALL,
                    })],
                }),
                multiview_mask: None,
                cache: None,
            })
        };
        let tube_pipeline = make_pipeline(
            "render_tubes",
            &tube_module,
            "vs_tube",
            "fs_tube",
            wgpu::VertexBufferLayout {
                array_stride: std::mem::size_of::<TubeInstance>() as u64,
                step_mode: wgpu::VertexStepMode::Instance,
                attributes: &tube_attrs,
            },
        );
        let obstacle_pipeline = make_pipeline(
            "render_obstacles",
            &obstacle_module,
            "vs_obstacle",
            "fs_obstacle",
            wgpu::VertexBufferLayout {
                array_stride: std::mem::size_of::<MeshVertex>() as u64,
                step_mode: wgpu::VertexStepMode::Vertex,
                attributes: &obstacle_attrs,
            },
        );

        let indices = mesh::tube_indices();
        let tube_index_buf = device.create_buffer(&wgpu::BufferDescriptor {
            label: Some("tube indices"),
            size: (indices.len() * 2).next_multiple_of(4) as u64,
            usage: wgpu::BufferUsages::INDEX | wgpu::BufferUsages::COPY_DST,
            mapped_at_creation: false,
        });
        let mut index_bytes = bytemuck::cast_slice::<u16, u8>(&indices).to_vec();
        index_bytes.resize(index_bytes.len().next_multiple_of(4), 0);
        gpu.queue.write_buffer(&tube_index_buf, 0, &index_bytes);

        let size = wgpu::Extent3d {
            width,
            height,
            depth_or_array_layers: 1,
        };
        let target = |label: &str, format, samples, usage| {
            device.create_texture(&wgpu::TextureDescriptor {
                label: Some(label),
                size,
                mip_level_count: 1,
                sample_count: samples,
                dimension: wgpu::TextureDimension::D2,
                format,
                usage,
                view_formats: &[],
            })
        };
        let resolve_tex = target(
            "frame",
            COLOR_FORMAT,
            1,
            wgpu::TextureUsages::RENDER_ATTACHMENT | wgpu::TextureUsages::COPY_SRC,
        );
        let resolve_view = resolve_tex.create_view(&Default::default());
        let msaa_view = (sample_count > 1).then(|| {
            target(
                "frame msaa",
                COLOR_FORMAT,
                sample_count,
                wgpu::TextureUsages::RENDER_ATTACHMENT,
            )
            .create_view(&Default::default())
        });
        let depth_view = target(
            "frame depth",
            DEPTH_FORMAT,
            sample_count,
            wgpu::TextureUsages::RENDER_ATTACHMENT,
        )
        .create_view(&Default::default());
        // Texture-to-buffer copies need rows padded to COPY_BYTES_PER_ROW_ALIGNMENT (256) bytes.
        let padded_row = (width * 4).next_multiple_of(wgpu::COPY_BYTES_PER_ROW_ALIGNMENT);
        let readback = device.create_buffer(&wgpu::BufferDescriptor {
            label: Some("frame readback"),
            size: padded_row as u64 * height as u64,
            usage: wgpu::BufferUsages::COPY_DST | wgpu::BufferUsages::MAP_READ,
            mapped_at_creation: false,
        });
        let invalid = pollster::block_on(scope.pop());
        if let Some(e) = pollster::block_on(memory.pop()) {
            return Err(RenderError::Gpu(format!(
                "{e} (an image of {width}×{height}: try a smaller --width / --height)"
            )));
        }
        if let Some(e) = invalid {
            return Err(RenderError::Gpu(e.to_string()));
        }
        Ok(Renderer {
            device,
            queue: gpu.queue.clone(),
            width,
            height,
            sample_count,
            tube_pipeline,
            obstacle_pipeline,
            uniform_buf,
            bind_group,
            tube_index_buf,
            tube_index_count: indices.len() as u32,
            msaa_view,
            resolve_tex,
            resolve_view,
            depth_view,
            readback,
            padded_row,
            instances: GrowBuffer {
                buf: None,
                label: "tube instances",
            },
            obstacle_verts: GrowBuffer {
                buf: None,
                label: "obstacle vertices",
            },
            scratch_instances: Vec::new(),
            scratch_mesh: Vec::new(),
        })
    }

    pub fn width(&self) -> u32 {
        self.width
    }

    pub fn height(&self) -> u32 {
        self.height
    }

    /// MSAA samples per pixel in use (4, or 1 where the adapter lacks 4× for the formats).
    pub fn sample_count(&self) -> u32 {
        self.sample_count
    }

    /// Checks positions and radius; returns the cloth's bounds: the exact bounds of every drawn spline
    /// segment padded by r (so an open yarn's tangent handles, which are not drawn, do not count).
    fn cloth_bounds(input: &RenderInput) -> Result<Bounds, RenderError> {
        let need = input.topo.num_points();
        if input.pos.len() < need {
            return Err(RenderError::InvalidInput(format!(
                "{} positions for a topology of {need} control points",
                input.pos.len()
            )));
        }
        if !(input.radius.is_finite() && input.radius > 0.0) {
            return Err(RenderError::InvalidInput(format!(
                "yarn radius {} must be finite and positive",
                input.radius
            )));
        }
        let mut b = Bounds::empty();
        for (yi, y) in input.topo.yarns.iter().enumerate() {
            let first = y.first_point as usize;
            for (k, p) in input.pos[first..first + y.num_points as usize]
                .iter()
                .enumerate()
            {
                if !(p[0].is_finite() && p[1].is_finite() && p[2].is_finite()) {
                    return Err(RenderError::InvalidInput(format!(
                        "yarn {yi}, control point {k} (global {}) is not finite: {p:?}",
                        first + k
                    )));
                }
            }
        }
        for seg in &input.topo.segments {
            let q = seg
                .cp
                .map(|i| crate::math::V3::<f32>::from4(input.pos[i as usize]));
            let (lo, hi) = crate::spline::segment_aabb(&q);
            b.add_point(Vec3::from_array(lo.to3()) - Vec3::splat(input.radius));
            b.add_point(Vec3::from_array(hi.to3()) + Vec3::splat(input.radius));
        }
        Ok(b)
    }

    /// Builds the obstacle mesh into `out` and returns the camera for `input` (the one
    /// [`Self::render`] uses).
    fn prepare(
        &self,
        input: &RenderInput,
        mesh_out: &mut Vec<MeshVertex>,
    ) -> Result<CameraView, RenderError> {
        let cloth = Self::cloth_bounds(input)?;
        let (c, r) = if cloth.is_empty() {
            (Vec3::ZERO, 1.0)
        } else {
            (cloth.center(), cloth.radius())
        };
        mesh::obstacle_mesh(input.obstacles, c, r, mesh_out)?;
        let mut all = cloth;
        for v in mesh_out.iter() {
            all.add_point(Vec3::from_array(v.pos));
        }
        CameraView::resolve(input.camera, &cloth, &all, self.width, self.height)
    }

    /// The resolved camera for `input`: the same view and projection the image is drawn with.
    pub fn camera_view(&self, input: &RenderInput) -> Result<CameraView, RenderError> {
        let mut mesh = Vec::new();
        self.prepare(input, &mut mesh)
    }

    /// How many of `input`'s control points the camera sees (in front of it and within the
    /// image), and how many there are: a camera of the scene's that looks away from the cloth
    /// draws no yarn, which a caller can say instead of writing a blank image without a word.
    pub fn points_in_view(&self, input: &RenderInput) -> Result<ViewCount, RenderError> {
        let view = self.camera_view(input)?;
        let (w, h) = (self.width as f32, self.height as f32);
        let in_view = input
            .pos
            .iter()
            .filter(|p| {
                view.project([p[0], p[1], p[2]], self.width, self.height)
                    .is_some_and(|[x, y]| (0.0..=w).contains(&x) && (0.0..=h).contains(&y))
            })
            .count();
        Ok(ViewCount {
            in_view,
            points: input.pos.len(),
        })
    }

    /// Draws one frame and reads it back.
    pub fn render(&mut self, input: &RenderInput) -> Result<image::RgbaImage, RenderError> {
        let mut mesh_v = std::mem::take(&mut self.scratch_mesh);
        let mut inst = std::mem::take(&mut self.scratch_instances);
        let result = self.render_with(input, &mut mesh_v, &mut inst);
        self.scratch_mesh = mesh_v;
        self.scratch_instances = inst;
        result
    }

    fn render_with(
        &mut self,
        input: &RenderInput,
        mesh_v: &mut Vec<MeshVertex>,
        inst: &mut Vec<TubeInstance>,
    ) -> Result<image::RgbaImage, RenderError> {
        let view = self.prepare(input, mesh_v)?;
        let colors: Vec<u32> = segment_colors(input.topo, input.color, input.segment_values)?
            .into_iter()
            .map(mesh::pack_rgba)
            .collect();
        mesh::tube_instances(input.topo, input.pos, &colors, inst);

        let max_buf = self.device.limits().max_buffer_size;
        let inst_bytes = std::mem::size_of_val(inst.as_slice()) as u64;
        let mesh_bytes = std::mem::size_of_val(mesh_v.as_slice()) as u64;
        if inst_bytes.max(mesh_bytes) * 3 / 2 > max_buf {
            return Err(RenderError::InvalidInput(format!(
                "{} segments need {inst_bytes} bytes of instance data; this adapter's buffers hold at most {max_buf}",
                inst.len()
            )));
        }

        let (right, up, back) = view.basis();
        let key = (right * -0.45 + up * 0.65 + back * 0.6).normalize();
        let fill = (right * 0.6 + up * -0.15 + back * 0.55).normalize();
        let uniforms = Uniforms {
            view_proj: view.view_proj().to_cols_array(),
            eye: view.eye.extend(1.0).to_array(),
            key_dir: key.extend(0.0).to_array(),
            fill_dir: fill.extend(0.0).to_array(),
            tube: [input.radius, SAMPLES as f32, SIDES as f32, 0.0],
        };

        let memory = self.device.push_error_scope(wgpu::ErrorFilter::OutOfMemory);
        let scope = self.device.push_error_scope(wgpu::ErrorFilter::Validation);
        self.queue
            .write_buffer(&self.uniform_buf, 0, bytemuck::bytes_of(&uniforms));
        let inst_buf = self.instances.ensure(&self.device, inst_bytes).clone();
        if !inst.is_empty() {
            self.queue
                .write_buffer(&inst_buf, 0, bytemuck::cast_slice(inst.as_slice()));
        }
        let mesh_buf = self.obstacle_verts.ensure(&self.device, mesh_bytes).clone();
        if !mesh_v.is_empty() {
            self.queue
                .write_buffer(&mesh_buf, 0, bytemuck::cast_slice(mesh_v.as_slice()));
        }

        let mut encoder = self
            .device
            .create_command_encoder(&wgpu::CommandEncoderDescriptor {
                label: Some("render frame"),
            });
        {
            let (color_view, resolve) = match &self.msaa_view {
                Some(m) => (m, Some(&self.resolve_view)),
                None => (&self.resolve_view, None),
            };
            let bg = BACKGROUND.map(|c| c as f64 / 255.0);
            let mut pass = encoder.begin_render_pass(&wgpu::RenderPassDescriptor {
                label: Some("render frame"),
                color_attachments: &[Some(wgpu::RenderPassColorAttachment {
                    view: color_view,
                    depth_slice: None,
                    resolve_target: resolve,
                    ops: wgpu::Operations {
                        load: wgpu::LoadOp::Clear(wgpu::Color {
                            r: bg[0],
                            g: bg[1],
                            b: bg[2],
                            a: 1.0,
                        }),
                        store: if resolve.is_some() {
                            wgpu::StoreOp::Discard
                        } else {
                            wgpu::StoreOp::Store
                        },
                    },
                })],
                depth_stencil_attachment: Some(wgpu::RenderPassDepthStencilAttachment {
                    view: &self.depth_view,
                    depth_ops: Some(wgpu::Operations {
                        load: wgpu::LoadOp::Clear(1.0),
                        store: wgpu::StoreOp::Discard,
                    }),
                    stencil_ops: None,
                }),
                timestamp_writes: None,
                occlusion_query_set: None,
                multiview_mask: None,
            });
            pass.set_bind_group(0, &self.bind_group, &[]);
            if !mesh_v.is_empty() {
                pass.set_pipeline(&self.obstacle_pipeline);
                pass.set_vertex_buffer(0, mesh_buf.slice(..mesh_bytes));
                pass.draw(0..mesh_v.len() as u32, 0..1);
            }
            if !inst.is_empty() {
                pass.set_pipeline(&self.tube_pipeline);
                pass.set_vertex_buffer(0, inst_buf.slice(..inst_bytes));
                pass.set_index_buffer(self.tube_index_buf.slice(..), wgpu::IndexFormat::Uint16);
                pass.draw_indexed(0..self.tube_index_count, 0, 0..inst.len() as u32);
            }
        }
        encoder.copy_texture_to_buffer(
            wgpu::TexelCopyTextureInfo {
                texture: &self.resolve_tex,
                mip_level: 0,
                origin: wgpu::Origin3d::ZERO,
                aspect: wgpu::TextureAspect::All,
            },
            wgpu::TexelCopyBufferInfo {
                buffer: &self.readback,
                layout: wgpu::TexelCopyBufferLayout {
                    offset: 0,
                    bytes_per_row: Some(self.padded_row),
                    rows_per_image: Some(self.height),
                },
            },
            wgpu::Extent3d {
                width: self.width,
                height: self.height,
                depth_or_array_layers: 1,
            },
        );
        self.queue.submit([encoder.finish()]);
        let invalid = pollster::block_on(scope.pop());
        if let Some(e) = pollster::block_on(memory.pop()) {
            return Err(RenderError::Gpu(e.to_string()));
        }
        if let Some(e) = invalid {
            return Err(RenderError::Gpu(e.to_string()));
        }
        self.read_back()
    }

    /// Maps the readback buffer and strips the row padding.
    fn read_back(&self) -> Result<image::RgbaImage, RenderError> {
        let slice = self.readback.slice(..);
        let (tx, rx) = std::sync::mpsc::channel();
        slice.map_async(wgpu::MapMode::Read, move |r| {
            let _ = tx.send(r);
        });
        self.device
            .poll(wgpu::PollType::wait_indefinitely())
            .map_err(|e| RenderError::Gpu(format!("waiting for the frame: {e}")))?;
        rx.recv()
            .map_err(|_| RenderError::Gpu("frame readback was never mapped".into()))?
            .map_err(|e| RenderError::Gpu(format!("mapping the frame: {e}")))?;
        let row = self.width as usize * 4;
        let mut pixels = Vec::with_capacity(row * self.height as usize);
        {
            let data = slice
                .get_mapped_range()
                .map_err(|e| RenderError::Gpu(format!("reading the frame: {e}")))?;
            for y in 0..self.height as usize {
                let start = y * self.padded_row as usize;
                pixels.extend_from_slice(&data[start..start + row]);
            }
        }
        self.readback.unmap();
        image::RgbaImage::from_raw(self.width, self.height, pixels)
            .ok_or_else(|| RenderError::Gpu("frame has the wrong size".into()))
    }
}

/// Writes `img` (RGBA frames, RGB contact matrices) as a PNG at `path`, atomically (see
/// [`crate::output`]): a failed write leaves no partial file under `path`.
pub fn save_png<P>(
    img: &image::ImageBuffer<P, Vec<P::Subpixel>>,
    path: &Path,
) -> Result<(), RenderError>
where
    P: image::PixelWithColorType,
    [P::Subpixel]: image::EncodableLayout,
{
    // An encoder error that is not the writer's own I/O error is reported as an image error.
    let mut encode_error = None;
    let written = crate::output::write_atomic(path, |w| {
        match img.write_with_encoder(image::codecs::png::PngEncoder::new(w)) {
            Ok(()) => Ok(()),
            Err(image::ImageError::IoError(e)) => Err(e),
            Err(e) => {
                encode_error = Some(e);
                Err(std::io::Error::other("PNG encoding failed"))
            }
        }
    });
    match (written, encode_error) {
        (Ok(()), _) => Ok(()),
        (Err(_), Some(source)) => Err(RenderError::Image {
            path: path.display().to_string(),
            source,
        }),
        (Err(e), None) => Err(e.into()),
    }
}

/// Frame capture during a run: every `every`-th frame rendered to `dir/frame_NNNN.png`.
pub struct Capture {
    pub dir: PathBuf,
    pub width: u32,
    pub height: u32,
    pub every: u32,
    pub color: ColorMode,
    renderer: Renderer,
    /// Whether a frame was captured yet ([`Capture::frame`] counts the first one's points in view).
    captured: bool,
}

/// What a camera sees of the yarn ([`Renderer::points_in_view`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ViewCount {
    /// Control points in front of the camera and within the image.
    pub in_view: usize,
    /// Control points in all.
    pub points: usize,
}

impl ViewCount {
    /// Whether the image shows no yarn: there is none, or the camera sees none of it.
    pub fn blank(&self) -> bool {
        self.in_view == 0
    }
}

impl Capture {
    /// Creates `dir` and a renderer of the given size on `gpu`.
    pub fn new(
        gpu: &Gpu,
        dir: &Path,
        width: u32,
        height: u32,
        every: u32,
        color: ColorMode,
    ) -> Result<Capture, RenderError> {
        if every == 0 {
            return Err(RenderError::InvalidInput(
                "capture every 0 frames: must be at least 1".into(),
            ));
        }
        // The renderer first, so a size or device it refuses leaves no empty directory behind.
        let renderer = Renderer::new(gpu, width, height)?;
        std::fs::create_dir_all(dir).map_err(|source| RenderError::Io {
            path: dir.display().to_string(),
            source,
        })?;
        Ok(Capture {
            dir: dir.to_path_buf(),
            width,
            height,
            every,
            color,
            renderer,
            captured: false,
        })
    }

    /// Whether the capture's camera can frame `input` (the camera [`Self::frame`] resolves); a run
    /// asks at its start, so that a camera that cannot fails it there, not after the relaxation.
    pub fn check_view(&self, input: &RenderInput) -> Result<(), RenderError> {
        self.renderer.camera_view(input).map(|_| ())
    }

    /// Whether frame `frame_index` is one to capture.
    pub fn wants(&self, frame_index: u32) -> bool {
        frame_index.is_multiple_of(self.every)
    }

    /// The file frame `frame_index` is written to.
    pub fn path_for(&self, frame_index: u32) -> PathBuf {
        self.dir.join(format!("frame_{frame_index:04}.png"))
    }

    /// Renders and writes frame `frame_index` when [`Self::wants`] it (in the capture's colour mode,
    /// whatever `input.color` says); returns the path written, or `None` for a skipped frame, and
    /// for the first frame captured what its camera saw of the yarn ([`Renderer::points_in_view`]).
    pub fn frame(
        &mut self,
        frame_index: u32,
        input: &RenderInput,
    ) -> Result<(Option<PathBuf>, Option<ViewCount>), RenderError> {
        if !self.wants(frame_index) {
            return Ok((None, None));
        }
        let seen = match self.captured {
            false => Some(self.renderer.points_in_view(input)?),
            true => None,
        };
        let img = self.renderer.render(&RenderInput {
            color: self.color,
            ..*input
        })?;
        let path = self.path_for(frame_index);
        save_png(&img, &path)?;
        self.captured = true;
        Ok((Some(path), seen))
    }
}

/// `yarnsim render STATE.bcc`: draws a saved state without simulating and writes `out_png`.
///
/// The yarn radius, obstacles (at their rest placement: a saved state carries no time, so keyframes
/// are not applied, and figures stand as at t = 0) and camera come from `scene` when given, else from the defaults. Free balls come
/// from the file `yarnsim run --out` writes beside each frame of a scene with balls
/// (`frame_NNNN_balls.csv` beside `frame_NNNN.bcc`, [`frame_balls`]), when it is there. A BCC file
/// holds positions only, so only `ColorMode::Yarn` is possible. Returns what the camera saw of
/// the yarn ([`ViewCount`]), for the caller to say when the image shows none.
pub fn render_bcc_command(
    bcc_path: &Path,
    scene: Option<&Scene>,
    out_png: &Path,
    width: u32,
    height: u32,
    color: ColorMode,
) -> Result<ViewCount, RenderError> {
    if color != ColorMode::Yarn {
        return Err(RenderError::InvalidInput(format!(
            "colour mode {color} needs per-segment values from a simulation; a saved state has none (use yarn)"
        )));
    }
    let curves = crate::bcc::read(bcc_path)?;
    let (topo, pos) = Topology::from_curves(&curves)?;
    let default_scene;
    let scene = match scene {
        Some(s) => s,
        None => {
            default_scene = Scene::default();
            &default_scene
        }
    };
    let mut obstacles = scene.obstacles_at(0.0);
    obstacles.extend(frame_balls(bcc_path)?);
    let gpu = Gpu::new()?;
    let mut renderer = Renderer::new(&gpu, width, height)?;
    let input = RenderInput {
        topo: &topo,
        pos: &pos,
        radius: scene.yarn.radius,
        obstacles: &obstacles,
        camera: &scene.camera,
        color,
        segment_values: None,
    };
    let seen = renderer.points_in_view(&input)?;
    let img = renderer.render(&input)?;
    save_png(&img, out_png)?;
    Ok(seen)
}

/// The file of the free balls saved beside the frame `bcc_path`: `STEM_balls.csv` (none for a
/// path without a file name).
pub fn balls_path(bcc_path: &Path) -> Option<std::path::PathBuf> {
    let stem = bcc_path.file_stem()?;
    Some(bcc_path.with_file_name(format!("{}_balls.csv", stem.to_string_lossy())))
}

/// The free balls saved beside the frame `bcc_path` (`STEM_balls.csv`: a header line, or none, then
/// `x,y,z,radius,...` per ball), as spheres to draw; none when there is no such file. A line that
/// does not parse is an error naming the file and the line.
pub fn frame_balls(bcc_path: &Path) -> Result<Vec<crate::scene::Obstacle>, RenderError> {
    let Some(csv) = balls_path(bcc_path) else {
        return Ok(Vec::new());
    };
    let text = match std::fs::read_to_string(&csv) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(source) => {
            return Err(RenderError::Io {
                path: csv.display().to_string(),
                source,
            })
        }
    };
    let mut out = Vec::new();
    for (k, line) in text.lines().enumerate() {
        // The header a run writes (`x,y,z,radius,...`); a first line of numbers is a ball.
        if line.trim().is_empty() || (k == 0 && line.trim_start().starts_with('x')) {
            continue;
        }
        let v: Vec<f32> = line
            .split(',')
            .take(4)
            .map(|f| f.trim().parse::<f32>())
            .collect::<Result<_, _>>()
            .map_err(|e| RenderError::InvalidInput(format!("{}:{}: {e}", csv.display(), k + 1)))?;
        if v.len() < 4 || !v.iter().all(|x| x.is_finite()) || v[3] <= 0.0 {
            return Err(RenderError::InvalidInput(format!(
                "{}:{}: expected x,y,z,radius (finite, radius > 0), got {line:?}",
                csv.display(),
                k + 1
            )));
        }
        out.push(crate::scene::Obstacle::Sphere {
            center: [v[0], v[1], v[2]],
            radius: v[3],
            friction: 0.0,
            keyframes: Vec::new(),
        });
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::state::Curve;

    #[test]
    fn frame_balls_reads_the_csv_beside_a_frame() {
        let dir = std::env::temp_dir().join(format!("yarnsim-frame-balls-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let bcc = dir.join("frame_0003.bcc");
        assert!(frame_balls(&bcc).unwrap().is_empty(), "no file, no balls");
        let csv = dir.join("frame_0003_balls.csv");
        std::fs::write(&csv, "x,y,z,radius,vx\n1,2,3,0.5,9\n-1,0,0,2,0\n").unwrap();
        let balls = frame_balls(&bcc).unwrap();
        assert_eq!(balls.len(), 2);
        assert!(matches!(
            balls[0],
            crate::scene::Obstacle::Sphere {
                center: [1.0, 2.0, 3.0],
                radius: 0.5,
                ..
            }
        ));
        std::fs::write(&csv, "x,y,z,radius\n1,2,oops,1\n").unwrap();
        let err = frame_balls(&bcc).unwrap_err().to_string();
        assert!(err.contains("frame_0003_balls.csv:2"), "{err}");
        // Without the header line its first ball is a ball (it was skipped as the header).
        std::fs::write(&csv, "1,2,3,0.5\n-1,0,0,2\n").unwrap();
        assert_eq!(frame_balls(&bcc).unwrap().len(), 2);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    fn topo() -> Topology {
        let line = |y: f32| Curve {
            points: (0..6).map(|i| [i as f32, y, 0.0]).collect(),
            closed: false,
        };
        Topology::from_curves(&[line(0.0), line(1.0)]).unwrap().0
    }

    #[test]
    fn colour_modes() {
        let t = topo(); // 3 segments per yarn
        let yarn = segment_colors(&t, ColorMode::Yarn, None).unwrap();
        assert_eq!(
            yarn,
            vec![PALETTE[0], PALETTE[0], PALETTE[0], PALETTE[1], PALETTE[1], PALETTE[1]]
        );

        let v = [0.0, 1.0, 13.0, 0.0, 50.0, 0.0];
        let up = segment_colors(&t, ColorMode::Updates, Some(&v)).unwrap();
        assert_eq!(up[0], PALETTE[0]);
        assert_eq!(up[3], PALETTE[1]);
        assert_eq!(up[2], UPDATE_RED, "13 updates is pure red");
        assert_eq!(up[4], UPDATE_RED, "more than 13 stays pure red");
        assert!(up[1] != PALETTE[0] && up[1] != UPDATE_RED);
        assert!(
            up[1][0] > PALETTE[0][0],
            "one update already leans red: {:?}",
            up[1]
        );

        let c = segment_colors(&t, ColorMode::Contacts, Some(&v)).unwrap();
        assert_eq!(c[0], NO_CONTACT);
        assert_eq!(c[4], contact_ramp(1.0));
        assert_eq!(c[2], contact_ramp(13.0 / 50.0));

        assert!(segment_colors(&t, ColorMode::Updates, None).is_err());
        assert!(segment_colors(&t, ColorMode::Contacts, Some(&v[..5])).is_err());
        let nan = [0.0, f32::NAN, 0.0, 0.0, 0.0, 0.0];
        assert!(segment_colors(&t, ColorMode::Updates, Some(&nan)).is_err());
    }

    #[test]
    fn colour_mode_names() {
        for m in [ColorMode::Yarn, ColorMode::Updates, ColorMode::Contacts] {
            assert_eq!(m.to_string().parse::<ColorMode>().unwrap(), m);
        }
        assert!("red".parse::<ColorMode>().is_err());
    }
}
