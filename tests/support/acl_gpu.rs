//! The set-up of ACL's whole GPU step (`acl::gpu::AclGpu`) for the tests that drive it step by step:
//! the pipelines, the buffers it reads from its caller (`params`, `segments`, `pos`, the static
//! tables, `force`) and the driver itself.
#![allow(dead_code)]

use yarnsim::acl::gpu::{all_kernels, AclCaps, AclGpu};
use yarnsim::acl::AclContact;
use yarnsim::gpu::Gpu;
use yarnsim::layout::Params;
use yarnsim::pipelines::{Buffers, Pipelines};
use yarnsim::state::Topology;

/// `AclGpu` for `host`'s parameters on `topo` at positions `pos` (b = `quadrature`), with
/// capacities `caps`; `force` starts at zero.
pub fn acl_gpu(
    gpu: &Gpu,
    host: &mut AclContact,
    topo: &Topology,
    pos: &[[f32; 4]],
    quadrature: u32,
    caps: AclCaps,
) -> (Pipelines, Buffers, AclGpu) {
    let (dev, q) = (&gpu.device, &gpu.queue);
    let (quad_weights, quad_arc, seg_contact) = host.gpu_tables(topo);
    let pipelines = gpu.pipelines(&all_kernels()).unwrap();
    let p = Params {
        num_segments: topo.segments.len() as u32,
        num_points: pos.len() as u32,
        quadrature,
        ..Default::default()
    };
    let mut shared = Buffers::default();
    shared.upload(dev, q, "params", bytemuck::bytes_of(&p), true);
    shared.upload(
        dev,
        q,
        "segments",
        bytemuck::cast_slice(&topo.segments),
        false,
    );
    shared.upload(dev, q, "pos", bytemuck::cast_slice(pos), false);
    shared.upload(
        dev,
        q,
        "quad_weights",
        bytemuck::cast_slice(&quad_weights),
        false,
    );
    shared.upload(dev, q, "quad_arc", bytemuck::cast_slice(&quad_arc), false);
    shared.upload(
        dev,
        q,
        "seg_contact",
        bytemuck::cast_slice(&seg_contact),
        false,
    );
    let zero = vec![[0.0f32; 4]; pos.len()];
    shared.upload(dev, q, "force", bytemuck::cast_slice(&zero), false);
    let g = AclGpu::new(dev, q, &pipelines, &shared, host, topo, pos, caps).unwrap();
    (pipelines, shared, g)
}
