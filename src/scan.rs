//! Exclusive prefix sum of `u32` over `n` elements, as reduce-then-scan over several dispatches
//! (DESIGN §7: no kernel spin-waits or loops over `n`), with the CPU twins of its two kernels.
//!
//! The elements are split into blocks of [`BLOCK`] = 2,048, one workgroup of 256 threads each
//! (8 elements per thread). A scan of `n` elements has levels `n₀ = n, n₁ = ⌈n₀/2048⌉, …` up to
//! the first level of at most 2,048 elements (two levels reach 2²² elements, three 2³²):
//!
//! 1. `scan_reduce` on levels `0 .. top`: each workgroup sums its block of level `k` into one
//!    element of level `k + 1`;
//! 2. `scan_add` on levels `top − 1, …, 1, 0` (on level 0 alone when it is the top): each
//!    workgroup scans its block exclusively in workgroup memory and adds its block's offset: the
//!    already-scanned element of level `k + 1`, or, on level `top − 1`, the sum of the top level's
//!    elements before its block ([`ScanPass::next_unscanned`]: the top has at most 2,048, so the
//!    workgroup adds them in a fixed number of steps and the top needs no scan of its own).
//!
//! A scan is `2 · levels − 2` dispatches (1 for one level; one fewer when the data's producer sums
//! level 0's blocks itself: by integer atomics into level 1, [`ScanPlan::fused`], or as the sums
//! of its 256-thread workgroups, [`ScanPlan::grouped`], which makes a two-level scan one
//! `scan_add`), and every dispatch of the step costs a
//! barrier on the GPU and host time in wgpu whatever its size, so the block is as large as 256
//! threads handle well: with 256-element blocks the scans of the scarf's ACL step took 136 of its
//! 330 dispatches; with 2,048-element blocks and the top level left unscanned, a scan of up to
//! 2,048² elements is 2 dispatches.
//!
//! Level 0 is the `scan_data` buffer, scanned in place; levels 1 and up live in one scratch
//! buffer, `scan_partials`, at the offsets of [`ScanPlan`]. Each dispatch gets its level through
//! the `scan_pass` uniform ([`ScanPass`]): one small uniform buffer per level, bound in turn.
//!
//! Sums wrap modulo 2³² on both paths. u32 addition is associative, so the twins give bitwise the
//! kernels' result whatever order they add in. A caller that needs the total scans `n + 1`
//! elements with a trailing 0: the last element of the result is the total.

use crate::layout::{
    CountPlan, GridSpec, ScanPass, COUNT_PLAN_GRID, COUNT_PLAN_GRIDS, COUNT_PLAN_MAX_GRIDS,
    COUNT_PLAN_SCAN, COUNT_PLAN_SORT, SCAN_BLOCK, SCAN_PER_THREAD,
};
use crate::pipelines::{Buffers, PipelineError, Pipelines, Threads};
use std::mem::size_of;

/// Elements per block (one workgroup of both kernels).
pub const BLOCK: u32 = SCAN_BLOCK;

/// Elements per group sum of a [`ScanPlan::grouped`] scan: one producer workgroup's threads.
pub const GROUP: u32 = 256;

/// Most levels a scan has: three reach 2048³ > 2³² elements; the fourth slot stays for the plan
/// records' layout.
pub const MAX_LEVELS: usize = 4;

/// The levels of the scan of `n` elements and the dispatches that compute it (no heap: the CPU
/// path makes one per scan, inside the step).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ScanPlan {
    levels: [ScanPass; MAX_LEVELS],
    num_levels: usize,
    /// Elements of `scan_partials` the levels above 0 need.
    pub partials_len: u32,
    /// Whether the producer of the data sums its blocks into level 1 itself ([`ScanPlan::fused`]),
    /// so that the scan has no `scan_reduce` of level 0.
    fused: bool,
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
                next_unscanned: (k + 2 == num_levels) as u32,
                ..Default::default()
            };
        }
        ScanPlan {
            levels,
            num_levels,
            partials_len: acc,
            fused: false,
        }
    }

    /// This plan for data whose producer has already added every block's sum of level 0 into
    /// level 1 (`scan_partials[w]` for block `w`, starting from zeros: the radix sort's
    /// `sort_histogram`, whose `sort_scatter` zeroes them again after the scan): the same levels
    /// without the dispatch of `scan_reduce` on level 0, one dispatch fewer when there are two
    /// levels or more.
    pub fn fused(self) -> ScanPlan {
        ScanPlan {
            fused: true,
            ..self
        }
    }

    /// The plan for `n` elements whose producer kernel, besides writing them, wrote the sum of
    /// each of its workgroups' 256 elements (`scan_groups[g]` for elements `256 g .. 256 g + 256`,
    /// in the scan's `scan_partials` buffer: `shaders/shared/scan_groups.wgsl`, twin
    /// [`write_groups`]). With two levels those group sums stand for level 1: the scan is its one
    /// `scan_add` of level 0, each block summing the groups before it
    /// ([`ScanPass::next_per_block`] = 8), where [`ScanPlan::new`] has a `scan_reduce` first.
    /// With one level or three the dispatches are [`ScanPlan::new`]'s (a `scan_reduce` of level 0
    /// overwrites the group sums). `partials_len` has room for the group sums either way.
    pub fn grouped(n: u32) -> ScanPlan {
        let mut p = ScanPlan::new(n);
        if p.num_levels == 2 {
            p.levels[0].next_per_block = BLOCK / GROUP;
            p.fused = true;
        }
        p.partials_len = p.partials_len.max(n.div_ceil(GROUP));
        p
    }

    /// `levels()[k]` describes level `k`; the last one has at most [`BLOCK`] elements.
    pub fn levels(&self) -> &[ScanPass] {
        &self.levels[..self.num_levels]
    }

    /// The dispatches, in order: `scan_reduce` up the levels (from level 1 when [`ScanPlan::fused`]),
    /// then `scan_add` down them, the top level excepted when there are several (the level below it
    /// sums the top's block sums itself: [`ScanPass::next_unscanned`]).
    pub fn dispatches(&self) -> impl Iterator<Item = ScanDispatch> + '_ {
        let top = self.num_levels - 1;
        let empty = self.levels[0].n == 0;
        let threads = |k: usize| self.levels[k].n.div_ceil(SCAN_PER_THREAD);
        let first_up = self.fused as usize;
        let up = (first_up.min(top)..top).map(move |k| ScanDispatch {
            kernel: "scan_reduce",
            level: k,
            threads: threads(k),
        });
        let down = (0..top.max(1)).rev().map(move |k| ScanDispatch {
            kernel: "scan_add",
            level: k,
            threads: threads(k),
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
/// (up to) [`BLOCK`] elements into `scan_partials[next_offset + w]`.
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
/// plus the block's offset, 0 when the level is one block, else from the next level up: its
/// scanned element `scan_partials[next_offset + w]`, or when that level is left unscanned
/// (`next_unscanned`) the sum of its elements before `w · next_per_block`.
pub fn scan_add(scan_pass: &ScanPass, scan_data: &mut [u32], scan_partials: &mut [u32]) {
    let p = *scan_pass;
    let blocks = p.n.div_ceil(BLOCK);
    for w in 0..blocks {
        let next = p.next_offset as usize;
        let per = p.next_per_block.max(1) as usize;
        let mut acc = if p.n <= BLOCK {
            0
        } else if p.next_unscanned != 0 {
            scan_partials[next..next + w as usize * per]
                .iter()
                .fold(0u32, |a, &v| a.wrapping_add(v))
        } else {
            scan_partials[next + w as usize]
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

/// Elements a [`GpuScan::into`] scans in one dispatch (`scan_into`) at most: each workgroup sums
/// every element before its block itself, which at 2¹⁶ is at most 63,488 words (some 0.25 MiB) for
/// the last block's workgroup, about what a dependent dispatch costs on hardware (unmeasured: the
/// bound is a guess from an H100's per-SM bandwidth, not a timing).
pub const SCAN_INTO_MAX: u32 = 1 << 16;

/// Kernel `scan_into` (`shaders/scan_into.wgsl`): the exclusive prefix sum of `scan_data[..n]`
/// (`n = scan_pass.n`) written into `scan_out[..n]`, out of place. The same values as
/// [`exclusive_scan`] of those elements; sums wrap modulo 2³².
pub fn scan_into(scan_pass: &ScanPass, scan_data: &[u32], scan_out: &mut [u32]) {
    let n = scan_pass.n as usize;
    let mut acc = 0u32;
    for (o, &v) in scan_out[..n].iter_mut().zip(&scan_data[..n]) {
        *o = acc;
        acc = acc.wrapping_add(v);
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

/// The CPU twin of `shaders/shared/scan_groups.wgsl`, which a producer kernel of a
/// [`ScanPlan::grouped`] scan runs: `scan_groups[g]` = the wrapping sum of `data[256 g .. 256 g +
/// 256]` (`data`: the elements the producer wrote), for the groups that fit in `scan_groups` (the
/// kernel skips a write past its binding's end; the CPU path, whose scans run in order, passes
/// an empty slice).
pub fn write_groups(data: &[u32], scan_groups: &mut [u32]) {
    for (g, chunk) in scan_groups.iter_mut().zip(data.chunks(GROUP as usize)) {
        *g = chunk.iter().fold(0u32, |a, &v| a.wrapping_add(v));
    }
}

/// The exclusive prefix sums a consumer kernel takes from a producer's group sums instead of a scan
/// (`shaders/shared/group_prefix.wgsl`): for each `values[k]`, in order, `f(k, values[k], prefix)`
/// where the prefix is the sum of the groups of [`GROUP`] values before `k`'s, from `scan_groups`
/// ([`write_groups`]), plus the values of `k`'s group before it. Returns the sum of the groups
/// before the last value's and of its group up to it, included: the total, when `scan_groups` holds
/// the values' group sums.
pub fn group_prefix_walk(
    values: impl IntoIterator<Item = u32>,
    scan_groups: &[u32],
    mut f: impl FnMut(usize, u32, u32),
) -> u32 {
    let g = GROUP as usize;
    let (mut base, mut local) = (0u32, 0u32);
    for (k, v) in values.into_iter().enumerate() {
        if k > 0 && k % g == 0 {
            base = base.wrapping_add(scan_groups[k / g - 1]);
            local = 0;
        }
        f(k, v, base.wrapping_add(local));
        local = local.wrapping_add(v);
    }
    base.wrapping_add(local)
}

/// Words per slot of a plan buffer: 256 bytes, the alignment wgpu guarantees for uniform offsets.
pub const PLAN_SLOT_WORDS: u32 = 64;

/// Words of the record at the start of each slot (a [`ScanPass`], or a [`crate::layout::SortPass`]
/// and zeros), and the size of the slot's uniform binding.
pub const SLOT_RECORD_WORDS: usize = size_of::<ScanPass>() / 4;
const _: () = assert!(size_of::<crate::layout::SortPass>() <= size_of::<ScanPass>());

/// `r`'s words at the start of a slot record, the rest zero (a [`crate::layout::SortPass`] or a
/// [`GridSpec`] is shorter than a [`ScanPass`]).
pub fn slot_record<T: bytemuck::Pod>(r: &T) -> [u32; SLOT_RECORD_WORDS] {
    let words: &[u32] = bytemuck::cast_slice(bytemuck::bytes_of(r));
    let mut s = [0u32; SLOT_RECORD_WORDS];
    s[..words.len()].copy_from_slice(words);
    s
}

/// Kernel `count_plan`: the live length `n = min(count, cap − add) + add` (`count =
/// plan_src[src_word]`) written into the slots and indirect arguments of a counted scan's or
/// sort's plan buffer `plan_out` (see [`CountPlan`]; [`plan_counted`]).
pub fn count_plan(plan_spec: &CountPlan, plan_src: &[u32], plan_out: &mut [u32]) {
    plan_counted(plan_spec, plan_src[plan_spec.src_word as usize], plan_out);
}

/// The plan of a counted scan, sort or grid from its live count (`shaders/shared/counted_plan.wgsl`):
/// what [`count_plan`] writes, and what a kernel that produces the count writes itself when it
/// plans inline ([`CountedGrid::inline`]).
pub fn plan_counted(plan_spec: &CountPlan, count: u32, plan_out: &mut [u32]) {
    let p = *plan_spec;
    let n = count.min(p.cap - p.add) + p.add;
    fn write_grid(plan_out: &mut [u32], word: u32, groups: u32) {
        let g = crate::shaders::dispatch_grid(groups, 1);
        plan_out[word as usize..word as usize + 3].copy_from_slice(&g);
    }
    if p.kind == COUNT_PLAN_GRID {
        let groups = (n * p.threads_per_item).div_ceil(p.workgroup_size);
        write_grid(plan_out, p.args_word, groups);
        return;
    }
    if p.kind == COUNT_PLAN_GRIDS {
        for k in 0..p.num_levels.min(COUNT_PLAN_MAX_GRIDS) {
            let at = (PLAN_SLOT_WORDS * k) as usize;
            let g: GridSpec = bytemuck::pod_read_unaligned(bytemuck::cast_slice(
                &plan_out[at..at + size_of::<GridSpec>() / 4],
            ));
            let items = n + g.add;
            let groups = (items * g.threads_per_item).div_ceil(g.workgroup_size);
            write_grid(plan_out, p.args_word + 3 * k, groups);
        }
        return;
    }
    let (mut m, mut slot, mut arg) = (n, 0, p.args_word);
    if p.kind == COUNT_PLAN_SORT {
        let blocks = n.div_ceil(crate::sort::BLOCK);
        for k in 0..p.num_passes {
            plan_out[(PLAN_SLOT_WORDS * k) as usize] = n;
            plan_out[(PLAN_SLOT_WORDS * k + 2) as usize] = blocks;
        }
        write_grid(plan_out, arg, blocks);
        arg += 3;
        slot = p.num_passes;
        m = crate::sort::BLOCK * blocks;
    }
    for k in 0..p.num_levels {
        plan_out[(PLAN_SLOT_WORDS * (slot + k)) as usize] = m;
        let g = m.div_ceil(BLOCK);
        write_grid(plan_out, arg + 3 * k, g);
        m = g;
    }
}

/// Where a counted scan or sort finds its length on the GPU: word `word` of `buffer` (a count a
/// kernel earlier in the step wrote), plus `add` (a scan of offsets has one trailing element).
/// The length is capped at the capacity the scan or sort was made for.
#[derive(Clone, Debug)]
pub struct CountSource {
    pub buffer: wgpu::Buffer,
    pub word: u32,
    pub add: u32,
}

/// The plan buffer of a counted scan or sort: the capacity's slots (16-byte pass or level records,
/// one per 256-byte slot) and indirect arguments, and the `count_plan` dispatch that rewrites
/// their lengths from the live count each step (none for a plan that the count's producer writes
/// inline: [`CountedGrid::inline`]).
pub(crate) struct CountedPlan {
    pub buffer: wgpu::Buffer,
    spec_buffer: wgpu::Buffer,
    bind_group: Option<wgpu::BindGroup>,
    pub spec: CountPlan,
}

impl CountedPlan {
    /// `slots`: the records at the capacity; `spec.args_word` is set here (after the slots).
    pub(crate) fn new(
        device: &wgpu::Device,
        pipelines: &Pipelines,
        slots: &[[u32; SLOT_RECORD_WORDS]],
        mut spec: CountPlan,
        args: u32,
        src: Option<&CountSource>,
    ) -> Result<CountedPlan, PipelineError> {
        use wgpu::util::DeviceExt;
        // `count_plan` computes min(count, cap − add) + add.
        assert!(
            spec.add <= spec.cap,
            "a counted length below its own addend"
        );
        spec.args_word = PLAN_SLOT_WORDS * slots.len() as u32;
        let mut words = vec![0u32; (spec.args_word + 3 * args).next_multiple_of(4) as usize];
        for (k, s) in slots.iter().enumerate() {
            let at = PLAN_SLOT_WORDS as usize * k;
            words[at..at + SLOT_RECORD_WORDS].copy_from_slice(s);
        }
        // The arguments at the capacity, so the buffer is a valid plan before its first update.
        let mut at_cap = vec![0u32; spec.src_word as usize + 1];
        at_cap[spec.src_word as usize] = spec.cap - spec.add;
        count_plan(&spec, &at_cap, &mut words);
        let buffer = device.create_buffer_init(&wgpu::util::BufferInitDescriptor {
            label: Some("count_plan"),
            contents: bytemuck::cast_slice(&words),
            usage: wgpu::BufferUsages::UNIFORM
                | wgpu::BufferUsages::STORAGE
                | wgpu::BufferUsages::INDIRECT
                | wgpu::BufferUsages::COPY_SRC,
        });
        let spec_buf = device.create_buffer_init(&wgpu::util::BufferInitDescriptor {
            label: Some("plan_spec"),
            contents: bytemuck::bytes_of(&spec),
            usage: wgpu::BufferUsages::UNIFORM,
        });
        let bind_group = match src {
            Some(src) => Some(pipelines.bind_group_with(
                device,
                "count_plan",
                &Buffers::default(),
                &[
                    ("plan_spec", &spec_buf),
                    ("plan_src", &src.buffer),
                    ("plan_out", &buffer),
                ],
            )?),
            None => None,
        };
        Ok(CountedPlan {
            buffer,
            spec_buffer: spec_buf,
            bind_group,
            spec,
        })
    }

    /// The uniform binding of slot `k`.
    pub(crate) fn slot(&self, k: u32) -> wgpu::BufferBinding<'_> {
        wgpu::BufferBinding {
            buffer: &self.buffer,
            offset: 4 * (PLAN_SLOT_WORDS * k) as u64,
            size: std::num::NonZeroU64::new(4 * SLOT_RECORD_WORDS as u64),
        }
    }

    /// Whether the plan has a `count_plan` dispatch (not one its count's producer writes inline).
    pub(crate) fn has_dispatch(&self) -> bool {
        self.bind_group.is_some()
    }

    /// The buffers a kernel that writes the plan inline binds: `plan_spec` and `plan_out`.
    pub(crate) fn plan_bindings(&self) -> [(&'static str, &wgpu::Buffer); 2] {
        [("plan_spec", &self.spec_buffer), ("plan_out", &self.buffer)]
    }

    /// The bind group of the plan's `count_plan` dispatch.
    pub(crate) fn plan_bind_group(&self) -> &wgpu::BindGroup {
        self.bind_group
            .as_ref()
            .expect("a plan written inline has no count_plan dispatch")
    }

    /// The threads of a dispatch over indirect-argument triple `k`.
    pub(crate) fn threads(&self, k: u32) -> Threads {
        Threads::Indirect {
            buffer: self.buffer.clone(),
            offset: 4 * (self.spec.args_word + 3 * k) as u64,
        }
    }
}

/// One kernel's workgroup grid over a counted number of items (e.g. one workgroup per dirty set),
/// written each step by its `count_plan` dispatch, which must come after the count is final and
/// before the kernels that use the grid ([`CountedGrid::threads`]; several may share it).
pub struct CountedGrid {
    plan: CountedPlan,
}

impl CountedGrid {
    /// The grid of `⌈n · threads_per_item / workgroup_size⌉` workgroups, `n = min(count, cap −
    /// src.add) + src.add`.
    pub fn new(
        device: &wgpu::Device,
        pipelines: &Pipelines,
        src: &CountSource,
        cap: u32,
        threads_per_item: u32,
        workgroup_size: u32,
    ) -> Result<CountedGrid, PipelineError> {
        let spec = CountPlan {
            src_word: src.word,
            add: src.add,
            cap,
            kind: COUNT_PLAN_GRID,
            threads_per_item,
            workgroup_size,
            ..Default::default()
        };
        Ok(CountedGrid {
            plan: CountedPlan::new(device, pipelines, &[], spec, 1, Some(src))?,
        })
    }

    /// Several kernels' grids over one count, sized by one `count_plan` dispatch: grid `k` over
    /// `min(count, cap) + grids[k].add` items ([`CountedGrid::threads_of`]). `src.add` must be 0.
    pub fn shared(
        device: &wgpu::Device,
        pipelines: &Pipelines,
        src: &CountSource,
        cap: u32,
        grids: &[GridSpec],
    ) -> Result<CountedGrid, PipelineError> {
        assert_eq!(src.add, 0, "each grid of a shared plan has its own addend");
        CountedGrid::grids(device, pipelines, Some(src), cap, grids)
    }

    /// Several kernels' grids over one count, as [`CountedGrid::shared`], planned not by a
    /// `count_plan` dispatch but by the kernel that produces the count, from the thread that has it
    /// final (`plan_counted_grids` of `shaders/shared/counted_plan.wgsl`, twin [`plan_counted`]): the
    /// kernel binds the plan as `plan_spec` and `plan_out` ([`CountedGrid::plan_bindings`]). One
    /// dependent dispatch fewer per use.
    pub fn inline(
        device: &wgpu::Device,
        pipelines: &Pipelines,
        cap: u32,
        grids: &[GridSpec],
    ) -> Result<CountedGrid, PipelineError> {
        CountedGrid::grids(device, pipelines, None, cap, grids)
    }

    /// A plan of `grids` over one count (`src`: its `count_plan` dispatch's count; none when the
    /// count's producer plans inline).
    fn grids(
        device: &wgpu::Device,
        pipelines: &Pipelines,
        src: Option<&CountSource>,
        cap: u32,
        grids: &[GridSpec],
    ) -> Result<CountedGrid, PipelineError> {
        assert!(
            !grids.is_empty() && grids.len() as u32 <= COUNT_PLAN_MAX_GRIDS,
            "a shared plan has 1 to {COUNT_PLAN_MAX_GRIDS} grids"
        );
        let spec = CountPlan {
            src_word: src.map_or(0, |s| s.word),
            cap,
            kind: COUNT_PLAN_GRIDS,
            num_levels: grids.len() as u32,
            ..Default::default()
        };
        let slots: Vec<[u32; SLOT_RECORD_WORDS]> = grids.iter().map(slot_record).collect();
        let args = grids.len() as u32;
        Ok(CountedGrid {
            plan: CountedPlan::new(device, pipelines, &slots, spec, args, src)?,
        })
    }

    /// The buffers a kernel that writes this plan inline binds: `plan_spec` (its [`CountPlan`],
    /// uniform) and `plan_out` (the plan, read-write storage).
    pub fn plan_bindings(&self) -> [(&'static str, &wgpu::Buffer); 2] {
        self.plan.plan_bindings()
    }

    /// The `count_plan` dispatch that sizes the grid (all of a shared plan's grids).
    pub fn plan_dispatch(&self) -> (&'static str, &wgpu::BindGroup, Threads) {
        ("count_plan", self.plan.plan_bind_group(), Threads::Fixed(1))
    }

    /// The threads of a dispatch over the grid (the first of a shared plan's).
    pub fn threads(&self) -> Threads {
        self.plan.threads(0)
    }

    /// The threads of a dispatch over grid `k` of a shared plan.
    pub fn threads_of(&self, k: u32) -> Threads {
        assert!(k < self.plan.spec.num_levels.max(1), "grid {k} of a plan");
        self.plan.threads(k)
    }
}

/// A scan of one GPU buffer, ready to record: the uniforms of its levels, its `scan_partials`, and
/// one bind group per dispatch. Made once per buffer and size; [`GpuScan::record`] adds its
/// dispatches to a compute pass (each dispatch reads what the one before wrote; wgpu orders
/// dispatches of one pass, so no barriers are needed between them).
///
/// A *counted* scan ([`GpuScan::counted`]) is made for a capacity but scans only the live length
/// the GPU finds in a [`CountSource`]: its first dispatch, `count_plan`, writes that length into
/// the level uniforms and the indirect arguments of the others. Its result over that prefix is the
/// full scan's (an exclusive sum at index `i` depends on the elements before `i` alone); the
/// elements after it are left as they were, so its readers must stop at the live length.
pub struct GpuScan {
    plan: ScanPlan,
    /// Kept alive for the bind groups.
    _uniforms: Vec<wgpu::Buffer>,
    _partials: wgpu::Buffer,
    counted: Option<CountedPlan>,
    groups: Vec<(ScanDispatch, wgpu::BindGroup, Threads)>,
}

impl GpuScan {
    /// The scan of the first `n` u32 of `data` (bound as `scan_data`).
    pub fn new(
        device: &wgpu::Device,
        pipelines: &Pipelines,
        data: &wgpu::Buffer,
        n: u32,
    ) -> Result<GpuScan, PipelineError> {
        Self::with_plan(device, pipelines, data, ScanPlan::new(n))
    }

    /// The scan of `data` (bound as `scan_data`) that `plan` describes (a radix sort's histogram
    /// scan, [`ScanPlan::fused`]).
    pub(crate) fn with_plan(
        device: &wgpu::Device,
        pipelines: &Pipelines,
        data: &wgpu::Buffer,
        plan: ScanPlan,
    ) -> Result<GpuScan, PipelineError> {
        use wgpu::util::DeviceExt;
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
        let partials = partials_buffer(device, &plan);
        let mut groups = Vec::new();
        for d in plan.dispatches() {
            let bg = level_bind_group(
                device,
                pipelines,
                d.kernel,
                uniforms[d.level].as_entire_buffer_binding(),
                data,
                &partials,
            )?;
            groups.push((d, bg, Threads::Fixed(d.threads)));
        }
        Ok(GpuScan {
            plan,
            _uniforms: uniforms,
            _partials: partials,
            counted: None,
            groups,
        })
    }

    /// The scan of the first `n` u32 of `data` written into `out` (out of place) in one `scan_into`
    /// dispatch, when `n` ≤ [`SCAN_INTO_MAX`]; `None` for a larger `n` (the caller then scans in
    /// place, [`GpuScan::new`], in two dispatches or more). `data` is left as it was.
    pub fn into(
        device: &wgpu::Device,
        pipelines: &Pipelines,
        data: &wgpu::Buffer,
        out: &wgpu::Buffer,
        n: u32,
    ) -> Result<Option<GpuScan>, PipelineError> {
        use wgpu::util::DeviceExt;
        if n == 0 || n > SCAN_INTO_MAX {
            return Ok(None);
        }
        let plan = ScanPlan::new(n);
        let pass = ScanPass {
            n,
            ..Default::default()
        };
        let uniform = device.create_buffer_init(&wgpu::util::BufferInitDescriptor {
            label: Some("scan_pass"),
            contents: bytemuck::bytes_of(&pass),
            usage: wgpu::BufferUsages::UNIFORM,
        });
        let bg = pipelines.bind_group_ranges(
            device,
            "scan_into",
            &Buffers::default(),
            &[
                ("scan_pass", uniform.as_entire_buffer_binding()),
                ("scan_data", data.as_entire_buffer_binding()),
                ("scan_out", out.as_entire_buffer_binding()),
            ],
        )?;
        let d = ScanDispatch {
            kernel: "scan_into",
            level: 0,
            threads: n.div_ceil(BLOCK) * crate::shaders::WG,
        };
        Ok(Some(GpuScan {
            _partials: partials_buffer(device, &ScanPlan::new(0)),
            plan,
            _uniforms: vec![uniform],
            counted: None,
            groups: vec![(d, bg, Threads::Fixed(d.threads))],
        }))
    }

    /// [`GpuScan::new`] for data whose producer writes its group sums into [`GpuScan::groups`]
    /// ([`ScanPlan::grouped`]).
    pub fn grouped(
        device: &wgpu::Device,
        pipelines: &Pipelines,
        data: &wgpu::Buffer,
        n: u32,
    ) -> Result<GpuScan, PipelineError> {
        Self::with_plan(device, pipelines, data, ScanPlan::grouped(n))
    }

    /// The scan of the first `min(count, cap − src.add) + src.add` u32 of `data`, the count read on
    /// the GPU from `src` when the scan runs (see [`GpuScan`]).
    pub fn counted(
        device: &wgpu::Device,
        pipelines: &Pipelines,
        data: &wgpu::Buffer,
        cap: u32,
        src: &CountSource,
    ) -> Result<GpuScan, PipelineError> {
        Self::counted_plan(device, pipelines, data, ScanPlan::new(cap), src)
    }

    /// [`GpuScan::counted`] with the levels of `plan`, made for the capacity
    /// ([`ScanPlan::grouped`] for data whose producer writes its group sums into
    /// [`GpuScan::groups`]).
    pub fn counted_plan(
        device: &wgpu::Device,
        pipelines: &Pipelines,
        data: &wgpu::Buffer,
        plan: ScanPlan,
        src: &CountSource,
    ) -> Result<GpuScan, PipelineError> {
        let cap = plan.levels()[0].n;
        let slots: Vec<[u32; SLOT_RECORD_WORDS]> = plan.levels().iter().map(slot_record).collect();
        let spec = CountPlan {
            src_word: src.word,
            add: src.add,
            cap,
            kind: COUNT_PLAN_SCAN,
            num_levels: slots.len() as u32,
            ..Default::default()
        };
        let counted = CountedPlan::new(
            device,
            pipelines,
            &slots,
            spec,
            slots.len() as u32,
            Some(src),
        )?;
        let partials = partials_buffer(device, &plan);
        let groups = Self::in_plan(device, pipelines, &plan, data, &partials, &counted, 0, 0)?;
        Ok(GpuScan {
            plan,
            _uniforms: Vec::new(),
            _partials: partials,
            counted: Some(counted),
            groups,
        })
    }

    /// The dispatches of `plan`'s scan of `data` with their level uniforms in slots `slot0 ..` of
    /// `counted` and their grids in its argument triples `arg0 ..` (a counted sort's histogram
    /// scan, which its own `count_plan` sizes).
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn in_plan(
        device: &wgpu::Device,
        pipelines: &Pipelines,
        plan: &ScanPlan,
        data: &wgpu::Buffer,
        partials: &wgpu::Buffer,
        counted: &CountedPlan,
        slot0: u32,
        arg0: u32,
    ) -> Result<Vec<(ScanDispatch, wgpu::BindGroup, Threads)>, PipelineError> {
        let mut groups = Vec::new();
        for d in plan.dispatches() {
            let level = d.level as u32;
            let bg = level_bind_group(
                device,
                pipelines,
                d.kernel,
                counted.slot(slot0 + level),
                data,
                partials,
            )?;
            groups.push((d, bg, counted.threads(arg0 + level)));
        }
        Ok(groups)
    }

    /// A counted sort's histogram scan: its dispatches in `counted`'s slots (see
    /// [`GpuScan::in_plan`]).
    pub(crate) fn for_sort(
        device: &wgpu::Device,
        pipelines: &Pipelines,
        data: &wgpu::Buffer,
        plan: ScanPlan,
        counted: &CountedPlan,
        slot0: u32,
        arg0: u32,
    ) -> Result<GpuScan, PipelineError> {
        let partials = partials_buffer(device, &plan);
        let groups = Self::in_plan(
            device, pipelines, &plan, data, &partials, counted, slot0, arg0,
        )?;
        Ok(GpuScan {
            plan,
            _uniforms: Vec::new(),
            _partials: partials,
            counted: None,
            groups,
        })
    }

    pub fn plan(&self) -> &ScanPlan {
        &self.plan
    }

    /// The levels above 0 (`scan_partials`).
    pub(crate) fn partials(&self) -> &wgpu::Buffer {
        &self._partials
    }

    /// Where the producer of a [`ScanPlan::grouped`] scan writes its group sums (its
    /// `scan_groups` binding): the scan's `scan_partials`.
    pub fn groups(&self) -> &wgpu::Buffer {
        &self._partials
    }

    /// The dispatch of `kernel`, the producer of this grouped scan's data, over `threads`: its
    /// bindings from `buffers`, with [`GpuScan::groups`] as its `scan_groups`.
    pub fn producer(
        &self,
        device: &wgpu::Device,
        pipelines: &Pipelines,
        kernel: &'static str,
        buffers: &Buffers,
        threads: u32,
    ) -> Result<(&'static str, wgpu::BindGroup, Threads), PipelineError> {
        let bg = pipelines.bind_group_with(
            device,
            kernel,
            buffers,
            &[("scan_groups", self.groups())],
        )?;
        Ok((kernel, bg, threads.into()))
    }

    /// The dispatches in order: kernel, bind group, threads (for a step that records its own list);
    /// a counted scan's `count_plan` first.
    pub fn dispatches(
        &self,
    ) -> impl Iterator<Item = (&'static str, &wgpu::BindGroup, Threads)> + '_ {
        let plan = self
            .counted
            .iter()
            .map(|c| ("count_plan", c.plan_bind_group(), Threads::Fixed(1)));
        plan.chain(
            self.groups
                .iter()
                .map(|(d, bg, t)| (d.kernel, bg, t.clone())),
        )
    }

    /// Records the scan's dispatches into `pass`.
    pub fn record(
        &self,
        pipelines: &Pipelines,
        pass: &mut wgpu::ComputePass<'_>,
    ) -> Result<(), PipelineError> {
        for (kernel, bg, threads) in self.dispatches() {
            pipelines.dispatch(pass, kernel, bg, threads)?;
        }
        Ok(())
    }
}

fn partials_buffer(device: &wgpu::Device, plan: &ScanPlan) -> wgpu::Buffer {
    device.create_buffer(&wgpu::BufferDescriptor {
        label: Some("scan_partials"),
        size: (plan.partials_len as u64 * 4).max(16),
        // COPY_DST: tests write a grouped scan's group sums themselves.
        usage: wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_DST,
        mapped_at_creation: false,
    })
}

fn level_bind_group(
    device: &wgpu::Device,
    pipelines: &Pipelines,
    kernel: &str,
    level: wgpu::BufferBinding<'_>,
    data: &wgpu::Buffer,
    partials: &wgpu::Buffer,
) -> Result<wgpu::BindGroup, PipelineError> {
    pipelines.bind_group_ranges(
        device,
        kernel,
        &Buffers::default(),
        &[
            ("scan_pass", level),
            ("scan_data", data.as_entire_buffer_binding()),
            ("scan_partials", partials.as_entire_buffer_binding()),
        ],
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plan_levels() {
        let p = ScanPlan::new(2048);
        assert_eq!(p.levels().len(), 1);
        assert_eq!(p.partials_len, 0);
        assert_eq!(p.dispatches().map(|d| d.threads).collect::<Vec<_>>(), [256]);
        // 9,000,000 → 4,395 → 3.
        let p = ScanPlan::new(9_000_000);
        let l = p.levels();
        assert_eq!(
            l.iter().map(|l| l.n).collect::<Vec<_>>(),
            [9_000_000, 4_395, 3]
        );
        assert_eq!(l[0].next_offset, 0);
        assert_eq!(l[1].offset, 0);
        assert_eq!(l[1].next_offset, 4_395);
        assert_eq!(l[2].offset, 4_395);
        assert_eq!(p.partials_len, 4_398);
        let names: Vec<_> = p
            .dispatches()
            .map(|d| (d.kernel, d.level, d.threads))
            .collect();
        // Eight elements per thread; the top level is not scanned: level 1 sums its elements
        // before each block.
        assert_eq!(
            names,
            [
                ("scan_reduce", 0, 1_125_000),
                ("scan_reduce", 1, 550),
                ("scan_add", 1, 550),
                ("scan_add", 0, 1_125_000)
            ]
        );
        assert_eq!(
            l.iter().map(|l| l.next_unscanned).collect::<Vec<_>>(),
            [0, 1, 0]
        );
        let two = ScanPlan::new(5000);
        assert_eq!(
            two.dispatches().map(|d| d.kernel).collect::<Vec<_>>(),
            ["scan_reduce", "scan_add"]
        );
        assert_eq!(two.levels()[0].next_unscanned, 1);
        assert_eq!(ScanPlan::new(2049).levels().len(), 2);
        assert_eq!(ScanPlan::new(2048 * 2048).levels().len(), 2);
        assert_eq!(ScanPlan::new(2048 * 2048 + 1).levels().len(), 3);
        assert_eq!(ScanPlan::new(0).dispatches().count(), 0);
        assert_eq!(ScanPlan::new(u32::MAX).levels().len(), 3);
    }

    #[test]
    fn twins_scan() {
        for n in [0usize, 1, 255, 2047, 2048, 2049, 5000, 65_537, 4_200_001] {
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
