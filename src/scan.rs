//! Exclusive prefix sum of `u32` over `n` elements, as reduce-then-scan over several dispatches
//! (DESIGN §7: no kernel spin-waits or loops over `n`), with the CPU twins of its two kernels.
//!
//! The elements are split into blocks of [`BLOCK`] = 256, one workgroup each. A scan of `n`
//! elements has levels `n₀ = n, n₁ = ⌈n₀/256⌉, …` up to the first level of at most 256 elements
//! (three levels reach 2²⁴ elements, four 2³²):
//!
//! 1. `scan_reduce` on levels `0 .. top`: each workgroup sums its block of level `k` into one
//!    element of level `k + 1` (a tree reduction in workgroup memory);
//! 2. `scan_add` on levels `top, …, 1, 0`: each workgroup scans its block exclusively in workgroup
//!    memory and adds its block's offset, the already-scanned element of level `k + 1` (none at the
//!    top, which is one block).
//!
//! Level 0 is the `scan_data` buffer, scanned in place; levels 1 and up live in one scratch
//! buffer, `scan_partials`, at the offsets of [`ScanPlan`]. Each dispatch gets its level through
//! the `scan_pass` uniform ([`ScanPass`]): one small uniform buffer per level, bound in turn.
//!
//! Sums wrap modulo 2³² on both paths. u32 addition is associative, so the twins give bitwise the
//! kernels' result whatever order they add in. A caller that needs the total scans `n + 1`
//! elements with a trailing 0: the last element of the result is the total.

use crate::layout::ScanPass;
use crate::pipelines::{Buffers, PipelineError, Pipelines};

/// Elements per block (the workgroup size of both kernels).
pub const BLOCK: u32 = 256;

/// Most levels a scan has: four reach 256⁴ = 2³² elements.
pub const MAX_LEVELS: usize = 4;

/// The levels of the scan of `n` elements and the dispatches that compute it (no heap: the CPU
/// path makes one per scan, inside the step).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ScanPlan {
    levels: [ScanPass; MAX_LEVELS],
    num_levels: usize,
    /// Elements of `scan_partials` the levels above 0 need.
    pub partials_len: u32,
}

/// One dispatch of a scan: the kernel, its level, and its thread count.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ScanDispatch {
    pub kernel: &'static str,
    /// Index into [`ScanPlan::levels`] (the uniform to bind).
    pub level: usize,
    pub threads: u32,
}

impl ScanPlan {
    /// The plan for `n` elements (`n = 0`: no dispatches).
    pub fn new(n: u32) -> ScanPlan {
        let mut sizes = [0u32; MAX_LEVELS];
        sizes[0] = n;
        let mut num_levels = 1;
        while sizes[num_levels - 1] > BLOCK {
            sizes[num_levels] = sizes[num_levels - 1].div_ceil(BLOCK);
            num_levels += 1;
        }
        // Level k ≥ 1 sits after levels 1 .. k − 1 in scan_partials.
        let mut offsets = [0u32; MAX_LEVELS + 1];
        let mut acc = 0u32;
        for k in 1..num_levels {
            offsets[k] = acc;
            acc += sizes[k];
        }
        let mut levels = [ScanPass::default(); MAX_LEVELS];
        for k in 0..num_levels {
            levels[k] = ScanPass {
                n: sizes[k],
                level: k as u32,
                offset: offsets[k],
                next_offset: if k + 1 < num_levels {
                    offsets[k + 1]
                } else {
                    0
                },
            };
        }
        ScanPlan {
            levels,
            num_levels,
            partials_len: acc,
        }
    }

    /// `levels()[k]` describes level `k`; the last one has at most 256 elements.
    pub fn levels(&self) -> &[ScanPass] {
        &self.levels[..self.num_levels]
    }

    /// The dispatches, in order: `scan_reduce` up the levels, then `scan_add` down them.
    pub fn dispatches(&self) -> impl Iterator<Item = ScanDispatch> + '_ {
        let top = self.num_levels - 1;
        let empty = self.levels[0].n == 0;
        let up = (0..top).map(|k| ScanDispatch {
            kernel: "scan_reduce",
            level: k,
            threads: self.levels[k].n,
        });
        let down = (0..=top).rev().map(|k| ScanDispatch {
            kernel: "scan_add",
            level: k,
            threads: self.levels[k].n,
        });
        up.chain(down).filter(move |_| !empty)
    }
}

#[inline]
fn level_value(p: &ScanPass, data: &[u32], partials: &[u32], i: u32) -> u32 {
    if p.level == 0 {
        data[i as usize]
    } else {
        partials[(p.offset + i) as usize]
    }
}

/// Kernel `scan_reduce`: for every block `w` of level `scan_pass.level`, the wrapping sum of its
/// (up to) 256 elements into `scan_partials[next_offset + w]`.
pub fn scan_reduce(scan_pass: &ScanPass, scan_data: &[u32], scan_partials: &mut [u32]) {
    let p = *scan_pass;
    let blocks = p.n.div_ceil(BLOCK);
    for w in 0..blocks {
        let end = (w * BLOCK + BLOCK).min(p.n);
        let mut s = 0u32;
        for i in w * BLOCK..end {
            s = s.wrapping_add(level_value(&p, scan_data, scan_partials, i));
        }
        scan_partials[(p.next_offset + w) as usize] = s;
    }
}

/// Kernel `scan_add`: every block of level `scan_pass.level` replaced by its exclusive prefix sum
/// plus the block's offset (`scan_partials[next_offset + w]` when the level has more than one
/// block, else 0).
pub fn scan_add(scan_pass: &ScanPass, scan_data: &mut [u32], scan_partials: &mut [u32]) {
    let p = *scan_pass;
    let blocks = p.n.div_ceil(BLOCK);
    for w in 0..blocks {
        let mut acc = if p.n > BLOCK {
            scan_partials[(p.next_offset + w) as usize]
        } else {
            0
        };
        let end = (w * BLOCK + BLOCK).min(p.n);
        for i in w * BLOCK..end {
            let slot = if p.level == 0 {
                &mut scan_data[i as usize]
            } else {
                &mut scan_partials[(p.offset + i) as usize]
            };
            let v = *slot;
            *slot = acc;
            acc = acc.wrapping_add(v);
        }
    }
}

/// `v.resize(n, fill)`, reserving half again when it must grow, so the step's buffers, which follow
/// counts that drift from step to step, stop allocating once warmed up.
pub fn resize_with_headroom<T: Clone>(v: &mut Vec<T>, n: usize, fill: T) {
    if n > v.capacity() {
        v.reserve_exact(n + n / 2 - v.len());
    }
    v.resize(n, fill);
}

/// The CPU path of a scan: the dispatches of [`ScanPlan::new`]`(data.len())` run through the twins,
/// with `partials` as `scan_partials` (resized; allocates only when it grows).
pub fn exclusive_scan(data: &mut [u32], partials: &mut Vec<u32>) {
    let plan = ScanPlan::new(data.len() as u32);
    run_plan(&plan, data, partials);
}

/// Runs the dispatches of `plan` (made for `data.len()` elements) through the twins.
pub fn run_plan(plan: &ScanPlan, data: &mut [u32], partials: &mut Vec<u32>) {
    debug_assert_eq!(plan.levels()[0].n as usize, data.len());
    resize_with_headroom(partials, plan.partials_len as usize, 0);
    for d in plan.dispatches() {
        let p = &plan.levels()[d.level];
        match d.kernel {
            "scan_reduce" => scan_reduce(p, data, partials),
            _ => scan_add(p, data, partials),
        }
    }
}

/// A scan of one GPU buffer, ready to record: the uniforms of its levels, its `scan_partials`, and
/// one bind group per dispatch. Made once per buffer and size; [`GpuScan::record`] adds its
/// dispatches to a compute pass (each dispatch reads what the one before wrote; wgpu orders
/// dispatches of one pass, so no barriers are needed between them).
pub struct GpuScan {
    plan: ScanPlan,
    /// Kept alive for the bind groups.
    _uniforms: Vec<wgpu::Buffer>,
    _partials: wgpu::Buffer,
    groups: Vec<(ScanDispatch, wgpu::BindGroup)>,
}

impl GpuScan {
    /// The scan of the first `n` u32 of `data` (bound as `scan_data`).
    pub fn new(
        device: &wgpu::Device,
        pipelines: &Pipelines,
        data: &wgpu::Buffer,
        n: u32,
    ) -> Result<GpuScan, PipelineError> {
        use wgpu::util::DeviceExt;
        let plan = ScanPlan::new(n);
        let uniforms: Vec<wgpu::Buffer> = plan
            .levels()
            .iter()
            .map(|l| {
                device.create_buffer_init(&wgpu::util::BufferInitDescriptor {
                    label: Some("scan_pass"),
                    contents: bytemuck::bytes_of(l),
                    usage: wgpu::BufferUsages::UNIFORM,
                })
            })
            .collect();
        let partials = device.create_buffer(&wgpu::BufferDescriptor {
            label: Some("scan_partials"),
            size: (plan.partials_len as u64 * 4).max(16),
            usage: wgpu::BufferUsages::STORAGE,
            mapped_at_creation: false,
        });
        let none = Buffers::default();
        let mut groups = Vec::new();
        for d in plan.dispatches() {
            let bg = pipelines.bind_group_with(
                device,
                d.kernel,
                &none,
                &[
                    ("scan_pass", &uniforms[d.level]),
                    ("scan_data", data),
                    ("scan_partials", &partials),
                ],
            )?;
            groups.push((d, bg));
        }
        Ok(GpuScan {
            plan,
            _uniforms: uniforms,
            _partials: partials,
            groups,
        })
    }

    pub fn plan(&self) -> &ScanPlan {
        &self.plan
    }

    /// The dispatches in order: kernel, bind group, threads (for a step that records its own list).
    pub fn dispatches(&self) -> impl Iterator<Item = (&'static str, &wgpu::BindGroup, u32)> + '_ {
        self.groups.iter().map(|(d, bg)| (d.kernel, bg, d.threads))
    }

    /// Records the scan's dispatches into `pass`.
    pub fn record(
        &self,
        pipelines: &Pipelines,
        pass: &mut wgpu::ComputePass<'_>,
    ) -> Result<(), PipelineError> {
        for (d, bg) in &self.groups {
            pipelines.dispatch(pass, d.kernel, bg, d.threads)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plan_levels() {
        let p = ScanPlan::new(256);
        assert_eq!(p.levels().len(), 1);
        assert_eq!(p.partials_len, 0);
        let p = ScanPlan::new(70_000);
        // 70,000 → 274 → 2.
        let l = p.levels();
        assert_eq!(l.iter().map(|l| l.n).collect::<Vec<_>>(), [70_000, 274, 2]);
        assert_eq!(l[0].next_offset, 0);
        assert_eq!(l[1].offset, 0);
        assert_eq!(l[1].next_offset, 274);
        assert_eq!(l[2].offset, 274);
        assert_eq!(p.partials_len, 276);
        let names: Vec<_> = p.dispatches().map(|d| (d.kernel, d.level)).collect();
        assert_eq!(
            names,
            [
                ("scan_reduce", 0),
                ("scan_reduce", 1),
                ("scan_add", 2),
                ("scan_add", 1),
                ("scan_add", 0)
            ]
        );
        assert_eq!(ScanPlan::new(0).dispatches().count(), 0);
        assert_eq!(ScanPlan::new(u32::MAX).levels().len(), MAX_LEVELS);
    }

    #[test]
    fn twins_scan() {
        for n in [0usize, 1, 255, 256, 257, 1000, 65_537, 70_001] {
            let data: Vec<u32> = (0..n as u32)
                .map(|i| i.wrapping_mul(2_654_435_761) >> 20)
                .collect();
            let mut got = data.clone();
            let mut partials = Vec::new();
            exclusive_scan(&mut got, &mut partials);
            let mut acc = 0u32;
            for (i, &v) in data.iter().enumerate() {
                assert_eq!(got[i], acc, "n {n} element {i}");
                acc = acc.wrapping_add(v);
            }
        }
    }
}
