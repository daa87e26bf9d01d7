//! A deterministic sort of [`KeyValue`] records (64-bit key `key_hi:key_lo`, u32 value) on the GPU:
//! an LSD radix sort with 8-bit digits, stable, so the output is one fixed function of the input,
//! bitwise the same every run and on both paths. With the CPU twins of its two kernels.
//!
//! One pass per digit (`shift = 0, 8, …`), each three steps over blocks of 256 records, one
//! workgroup each:
//! 1. `sort_histogram`: per block, the count of every digit, into `sort_hist[d · num_blocks + w]`
//!    (digit-major), and, when the histogram's scan has two levels or more, each count added to
//!    its scan block's sum (the scan's level 1, by integer atomics), so that the scan starts one
//!    level up ([`ScanPlan::fused`]: a dispatch fewer per pass; `sort_scatter` zeroes those sums
//!    again for the next pass);
//! 2. the exclusive prefix sum of `sort_hist` ([`crate::scan`]): now `sort_hist[d · num_blocks + w]`
//!    is where block `w`'s first record of digit `d` goes;
//! 3. `sort_scatter`: each record goes to that slot plus its rank among its block's records of the
//!    same digit before it. In the kernel each thread counts the equal digits before its record in
//!    workgroup memory (no atomics whose order could vary); the twin counts them in order.
//!
//! Passes ping-pong between the data buffer and a scratch buffer of the same size; the number of
//! passes is rounded up to an even one, so the result always ends where the data started. A sort
//! *into* another buffer ([`GpuSort::counted_into`], [`SortPlan::odd`]) rounds up to an odd number
//! instead and ping-pongs between its input and its output, so that 24-bit keys take 3 passes, not
//! 4. Digits above the key's significant bits are zero everywhere, so a smaller `key_bits` (fewer
//! passes) sorts the same when the keys fit it.
//!
//! Variable-size inputs are sorted at their capacity with the unused tail set to a sentinel key
//! larger than every real key (e.g. all ones), which the stable sort keeps at the end.

use crate::layout::{CountPlan, KeyValue, SortPass, COUNT_PLAN_SORT};
use crate::pipelines::{Buffers, PipelineError, Pipelines, Threads};
use crate::scan::{self, CountSource, CountedPlan, GpuScan, ScanPlan, SLOT_RECORD_WORDS};

/// Records per block (the workgroup size of both kernels) and digit values per pass.
pub const BLOCK: u32 = 256;

/// The 64-bit key of a record.
#[inline]
pub fn key(kv: &KeyValue) -> u64 {
    (kv.key_hi as u64) << 32 | kv.key_lo as u64
}

/// The record of 64-bit key `key` and value `value` (its [`key`] is `key`).
#[inline]
pub fn record(key: u64, value: u32) -> KeyValue {
    KeyValue {
        key_lo: key as u32,
        key_hi: (key >> 32) as u32,
        value,
        _pad: 0,
    }
}

/// The 8-bit digit of `kv`'s key at bit `shift` (shaders/shared/radix.wgsl `sort_digit`).
#[inline]
pub fn digit(kv: &KeyValue, shift: u32) -> u32 {
    if shift < 32 {
        (kv.key_lo >> shift) & 255
    } else {
        (kv.key_hi >> (shift - 32)) & 255
    }
}

/// The passes of a sort of `n` records on the low `key_bits` bits of their keys (no heap: the CPU
/// path makes one per sort, inside the step).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SortPlan {
    passes: [SortPass; 8],
    num_passes: usize,
    /// `256 · num_blocks`: the length of `sort_hist`.
    pub hist_len: u32,
    /// The scan of `sort_hist`.
    pub scan: ScanPlan,
}

impl SortPlan {
    pub fn new(n: u32, key_bits: u32) -> SortPlan {
        assert!(key_bits <= 64, "keys have 64 bits");
        let num_blocks = n.div_ceil(BLOCK);
        let num_passes = key_bits.div_ceil(8).next_multiple_of(2).max(2) as usize;
        let hist_len = BLOCK * num_blocks;
        let mut passes = [SortPass::default(); 8];
        for (p, pass) in passes.iter_mut().enumerate().take(num_passes) {
            *pass = SortPass {
                n,
                shift: 8 * p as u32,
                num_blocks,
                _pad: 0,
            };
        }
        SortPlan {
            passes,
            num_passes,
            hist_len,
            scan: ScanPlan::new(hist_len).fused(),
        }
    }

    /// The passes of a sort of `n` records on the low `key_bits` bits of their keys into another
    /// buffer: `⌈key_bits / 8⌉` rounded up to an odd number, so that the ping-pong between the
    /// input and the output ends in the output. (Like [`SortPlan::new`]'s even rounding, an extra
    /// pass sorts on the next 8 bits, which must then be zero in every live key.)
    pub fn odd(n: u32, key_bits: u32) -> SortPlan {
        let mut plan = SortPlan::new(n, key_bits);
        let want = (key_bits.div_ceil(8) | 1) as usize;
        assert!(want <= plan.passes.len(), "keys have 64 bits");
        for p in plan.num_passes..want {
            plan.passes[p] = SortPass {
                shift: 8 * p as u32,
                ..plan.passes[0]
            };
        }
        plan.num_passes = want;
        plan
    }

    /// One per digit pass, in order (an even number of them; odd for [`SortPlan::odd`]).
    pub fn passes(&self) -> &[SortPass] {
        &self.passes[..self.num_passes]
    }
}

/// Whether the scan of a pass's `sort_hist` (`256 · num_blocks` elements) has levels above 0,
/// whose level 1 `sort_histogram` fills and `sort_scatter` zeroes ([`ScanPlan::fused`]).
#[inline]
fn hist_has_partials(p: &SortPass) -> bool {
    BLOCK * p.num_blocks > scan::BLOCK
}

/// Kernel `sort_histogram`: `sort_hist[d · num_blocks + w]` = the number of records of block `w` of
/// `sort_in[..n]` whose digit at `shift` is `d`; and when that histogram's scan has two levels or
/// more, each count added (wrapping) to `scan_partials[(d · num_blocks + w) / 2048]`, the scan's
/// level 1, which [`sort_scatter`] left zero (the kernel: integer atomics, whose sum does not depend
/// on their order).
pub fn sort_histogram(
    sort_pass: &SortPass,
    sort_in: &[KeyValue],
    sort_hist: &mut [u32],
    scan_partials: &mut [u32],
) {
    let p = *sort_pass;
    let nb = p.num_blocks as usize;
    sort_hist[..BLOCK as usize * nb].fill(0);
    for (i, kv) in sort_in[..p.n as usize].iter().enumerate() {
        let w = i / BLOCK as usize;
        sort_hist[digit(kv, p.shift) as usize * nb + w] += 1;
    }
    if hist_has_partials(&p) {
        for (e, &c) in sort_hist[..BLOCK as usize * nb].iter().enumerate() {
            let slot = &mut scan_partials[e / scan::BLOCK as usize];
            *slot = slot.wrapping_add(c);
        }
    }
}

/// Kernel `sort_scatter`: record `i` of block `w` with digit `d` goes to
/// `sort_out[sort_hist[d · num_blocks + w] + r]`, `r` its rank among the records of block `w` with
/// digit `d` before it (`sort_hist` scanned); and the scan's level 1 that [`sort_histogram`]
/// filled, `scan_partials[..⌈256 · num_blocks / 2048⌉]`, zeroed for the next pass.
pub fn sort_scatter(
    sort_pass: &SortPass,
    sort_in: &[KeyValue],
    sort_hist: &[u32],
    sort_out: &mut [KeyValue],
    scan_partials: &mut [u32],
) {
    let p = *sort_pass;
    let nb = p.num_blocks as usize;
    let mut rank = [0u32; 256];
    for (w, block) in sort_in[..p.n as usize].chunks(BLOCK as usize).enumerate() {
        rank.fill(0);
        for kv in block {
            let d = digit(kv, p.shift) as usize;
            sort_out[(sort_hist[d * nb + w] + rank[d]) as usize] = *kv;
            rank[d] += 1;
        }
    }
    if hist_has_partials(&p) {
        scan_partials[..(BLOCK * p.num_blocks).div_ceil(scan::BLOCK) as usize].fill(0);
    }
}

/// Records from which [`radix_sort`] runs each pass by chunks in parallel ([`radix_sort_chunks`]).
pub const PARALLEL_SORT_MIN: usize = 1 << 16;

/// Records per chunk of [`radix_sort_chunks`] (its histograms are 256 counts a chunk).
const SORT_CHUNK: usize = 1 << 14;

/// The CPU path of a sort: the passes of [`SortPlan::new`]`(data.len(), key_bits)` through the
/// twins, with `scratch`, `hist` and `partials` as the scratch buffers (resized; they allocate only
/// when they grow). Sorts `data` in place. From [`PARALLEL_SORT_MIN`] records, with more than one
/// thread, the same passes run by chunks in parallel ([`radix_sort_chunks`]), to the same result:
/// each pass is a stable counting sort by its digit, whatever the blocks it counts in.
///
/// A pass whose digit is the same in every key is the identity (the scatter is stable), so the CPU
/// path skips it, which gives bitwise the GPU's result at a fraction of the cost: packed cell keys
/// and point indices leave most digits constant.
pub fn radix_sort(
    data: &mut [KeyValue],
    key_bits: u32,
    scratch: &mut Vec<KeyValue>,
    hist: &mut Vec<u32>,
    partials: &mut Vec<u32>,
) {
    if data.len() >= PARALLEL_SORT_MIN && rayon::current_num_threads() > 1 {
        radix_sort_chunks(data, key_bits, scratch, hist);
    } else {
        radix_sort_blocks(data, key_bits, scratch, hist, partials);
    }
}

/// Bits in which some key of `data` differs from the first's; in parallel from
/// [`PARALLEL_SORT_MIN`] records (below, a job for rayon's pool costs more than the loop: the
/// tiny scenes' steps sort a few hundred records several times each).
fn varying_bits(data: &[KeyValue]) -> u64 {
    use rayon::prelude::*;
    let Some(first) = data.first() else {
        return 0;
    };
    let k0 = key(first);
    if data.len() < PARALLEL_SORT_MIN {
        return data.iter().fold(0u64, |acc, kv| acc | (key(kv) ^ k0));
    }
    data.par_iter()
        .with_min_len(SORT_CHUNK)
        .fold(|| 0u64, |acc, kv| acc | (key(kv) ^ k0))
        .reduce(|| 0, |a, b| a | b)
}

/// [`radix_sort`]'s passes by chunks of [`SORT_CHUNK`] records in parallel: each chunk counts its
/// digits, an exclusive sum over (digit, chunk) places each chunk's first record of each digit,
/// and each chunk scatters its records there in order (so the pass is stable). The CPU path of
/// the garments' large sorts (the grid's entries, the gather's slots), which the twins' one
/// thread held up on a many-core host.
pub fn radix_sort_chunks(
    data: &mut [KeyValue],
    key_bits: u32,
    scratch: &mut Vec<KeyValue>,
    counts: &mut Vec<u32>,
) {
    use rayon::prelude::*;
    let n = data.len();
    let plan = SortPlan::new(n as u32, key_bits);
    let varying = varying_bits(data);
    scan::resize_with_headroom(scratch, n, KeyValue::default());
    let chunks = n.div_ceil(SORT_CHUNK);
    let d = BLOCK as usize;
    scan::resize_with_headroom(counts, chunks * d, 0);
    let counts = &mut counts[..chunks * d];
    let mut in_scratch = false;
    for p in plan.passes() {
        let shift = p.shift;
        if varying >> shift & 255 == 0 {
            continue;
        }
        let (src, dst): (&[KeyValue], &mut [KeyValue]) = if in_scratch {
            (&scratch[..n], &mut *data)
        } else {
            (&*data, &mut scratch[..n])
        };
        counts
            .par_chunks_mut(d)
            .zip(src.par_chunks(SORT_CHUNK))
            .for_each(|(h, run)| {
                h.fill(0);
                for kv in run {
                    h[digit(kv, shift) as usize] += 1;
                }
            });
        let mut sum = 0u32;
        for digit in 0..d {
            for c in 0..chunks {
                let at = &mut counts[c * d + digit];
                (*at, sum) = (sum, sum + *at);
            }
        }
        let out = crate::acl::SyncPtr::new(dst);
        counts
            .par_chunks_mut(d)
            .zip(src.par_chunks(SORT_CHUNK))
            .for_each(|(at, run)| {
                for kv in run {
                    let slot = &mut at[digit(kv, shift) as usize];
                    // SAFETY: the exclusive sum hands every (digit, chunk) its own range of
                    // `dst`, as many slots as the chunk has records of the digit: each slot is
                    // written by one record of one chunk (`write` checks the bounds).
                    unsafe { out.write(*slot as usize, *kv) };
                    *slot += 1;
                }
            });
        in_scratch = !in_scratch;
    }
    if in_scratch {
        data.copy_from_slice(&scratch[..n]);
    }
}

/// [`radix_sort`] through the kernels' twins, one thread.
pub fn radix_sort_blocks(
    data: &mut [KeyValue],
    key_bits: u32,
    scratch: &mut Vec<KeyValue>,
    hist: &mut Vec<u32>,
    partials: &mut Vec<u32>,
) {
    let plan = SortPlan::new(data.len() as u32, key_bits);
    if data.is_empty() {
        return;
    }
    let varying = varying_bits(data);
    scan::resize_with_headroom(scratch, data.len(), KeyValue::default());
    scan::resize_with_headroom(hist, plan.hist_len as usize, 0);
    // Level 1 of the histogram's scan, which sort_histogram fills and sort_scatter zeroes, starts
    // from zeros (the GPU sort's partials are its own; this scratch may come from other scans).
    scan::resize_with_headroom(partials, plan.scan.partials_len as usize, 0);
    partials.fill(0);
    let mut in_scratch = false;
    for p in plan.passes() {
        if varying >> p.shift & 255 == 0 {
            continue;
        }
        let (src, dst): (&mut [KeyValue], &mut [KeyValue]) = if in_scratch {
            (scratch, data)
        } else {
            (data, scratch)
        };
        sort_histogram(p, src, hist, partials);
        scan::run_plan(&plan.scan, hist, partials);
        sort_scatter(p, src, hist, dst, partials);
        in_scratch = !in_scratch;
    }
    if in_scratch {
        data.copy_from_slice(&scratch[..data.len()]);
    }
}

/// A sort of one GPU buffer, ready to record: the pass uniforms, `sort_hist` with its scan, the
/// scratch buffer and one bind group per dispatch. Made once per buffer and size.
///
/// Whether [`GpuSort::counted_fewest`] sorts `key_bits`-bit keys from its input into its output
/// (an odd number of 8-bit passes, `⌈key_bits / 8⌉`) rather than in place in its output (even):
/// the producer of the records then writes the input.
pub fn fewest_passes_into(key_bits: u32) -> bool {
    key_bits.div_ceil(8).max(1) % 2 == 1
}

/// The buffer a sort's passes ping-pong with: its output (an odd number of passes), a scratch
/// buffer given to it (even), or one of its own (even).
#[derive(Clone, Copy)]
enum Partner<'a> {
    Own,
    Output(&'a wgpu::Buffer),
    Scratch(&'a wgpu::Buffer),
}

/// A *counted* sort ([`GpuSort::counted`]) is made for a capacity but sorts only the live length
/// the GPU reads from a [`CountSource`] (its first dispatch, `count_plan`, sizes the passes, the
/// histogram's scan and their indirect grids). The records after that length are not touched, so
/// the result is the full sort's when they are already where it would put them: the writers of
/// the sorted buffers fill the slots past their count with the sentinel key (all ones), which the
/// stable sort keeps last, in order.
pub struct GpuSort {
    plan: SortPlan,
    _uniforms: Vec<wgpu::Buffer>,
    _hist: wgpu::Buffer,
    _scratch: wgpu::Buffer,
    scan: GpuScan,
    counted: Option<CountedPlan>,
    /// Per pass: the bind groups of `sort_histogram` and `sort_scatter`, and their threads.
    groups: Vec<(wgpu::BindGroup, wgpu::BindGroup, Threads)>,
}

/// Where a sort's length comes from: fixed at its capacity, read by a `count_plan` dispatch, or
/// planned inline by the count's producer.
enum Count<'a> {
    Fixed,
    Read(&'a CountSource),
    Inline,
}

impl GpuSort {
    /// The sort of the first `n` records of `data` on the low `key_bits` bits of their keys.
    pub fn new(
        device: &wgpu::Device,
        pipelines: &Pipelines,
        data: &wgpu::Buffer,
        n: u32,
        key_bits: u32,
    ) -> Result<GpuSort, PipelineError> {
        Self::make(
            device,
            pipelines,
            data,
            Partner::Own,
            n,
            key_bits,
            Count::Fixed,
        )
    }

    /// The sort of the first `min(count, cap)` records of `data` (the count read on the GPU from
    /// `src`, whose `add` must be 0) on the low `key_bits` bits of their keys (see [`GpuSort`]).
    pub fn counted(
        device: &wgpu::Device,
        pipelines: &Pipelines,
        data: &wgpu::Buffer,
        cap: u32,
        key_bits: u32,
        src: &CountSource,
    ) -> Result<GpuSort, PipelineError> {
        Self::make(
            device,
            pipelines,
            data,
            Partner::Own,
            cap,
            key_bits,
            Count::Read(src),
        )
    }

    /// Like [`GpuSort::counted`], but the sorted live records land in `output` (of `input`'s size)
    /// and `input` is left clobbered: an odd number of passes ([`SortPlan::odd`]) that ping-pong
    /// between the two, with no scratch buffer of its own. For keys of 17–24 bits that is one pass
    /// fewer than a sort in place. Unlike an in-place sort, the slots of `output` past the live
    /// count are left as they were, not filled with the input's tail: its readers must stop at the
    /// count.
    pub fn counted_into(
        device: &wgpu::Device,
        pipelines: &Pipelines,
        input: &wgpu::Buffer,
        output: &wgpu::Buffer,
        cap: u32,
        key_bits: u32,
        src: &CountSource,
    ) -> Result<GpuSort, PipelineError> {
        Self::make(
            device,
            pipelines,
            input,
            Partner::Output(output),
            cap,
            key_bits,
            Count::Read(src),
        )
    }

    /// The counted sort of up to `cap` records of two buffers of the same size in the fewest
    /// passes: when `⌈key_bits / 8⌉` is odd, from `input` into `output` ([`GpuSort::counted_into`]);
    /// when it is even, in place in `output` with `input` as its scratch buffer. Either way the
    /// sorted live records end in `output`, whose readers must stop at the count (the slots past it
    /// hold whatever they held), and the producer writes the buffer this returns with the sort:
    /// `input` or `output` ([`fewest_passes_into`]).
    #[allow(clippy::too_many_arguments)]
    pub fn counted_fewest(
        device: &wgpu::Device,
        pipelines: &Pipelines,
        input: &wgpu::Buffer,
        output: &wgpu::Buffer,
        cap: u32,
        key_bits: u32,
        src: &CountSource,
    ) -> Result<(GpuSort, wgpu::Buffer), PipelineError> {
        // Odd: from the input into the output. Even: in place in the output, the input its
        // scratch.
        let (data, partner) = if fewest_passes_into(key_bits) {
            (input, Partner::Output(output))
        } else {
            (output, Partner::Scratch(input))
        };
        let sort = Self::make(
            device,
            pipelines,
            data,
            partner,
            cap,
            key_bits,
            Count::Read(src),
        )?;
        Ok((sort, data.clone()))
    }

    /// Like [`GpuSort::counted_into`], but planned by the kernel that produces the count, from the
    /// thread that has it final (`plan_counted` of `shaders/shared/counted_plan.wgsl`, twin
    /// [`scan::plan_counted`]), not by a `count_plan` dispatch: that kernel binds the plan as
    /// `plan_spec` and `plan_out` ([`GpuSort::plan_bindings`]). One dependent dispatch fewer.
    pub fn counted_into_inline(
        device: &wgpu::Device,
        pipelines: &Pipelines,
        input: &wgpu::Buffer,
        output: &wgpu::Buffer,
        cap: u32,
        key_bits: u32,
    ) -> Result<GpuSort, PipelineError> {
        Self::make(
            device,
            pipelines,
            input,
            Partner::Output(output),
            cap,
            key_bits,
            Count::Inline,
        )
    }

    /// The buffers a kernel that writes an inline plan ([`GpuSort::counted_into_inline`]) binds:
    /// `plan_spec` (its [`CountPlan`], uniform) and `plan_out` (the plan, read-write storage).
    pub fn plan_bindings(&self) -> Option<[(&'static str, &wgpu::Buffer); 2]> {
        self.counted
            .as_ref()
            .filter(|c| !c.has_dispatch())
            .map(|c| c.plan_bindings())
    }

    fn make(
        device: &wgpu::Device,
        pipelines: &Pipelines,
        data: &wgpu::Buffer,
        partner: Partner<'_>,
        n: u32,
        key_bits: u32,
        count: Count<'_>,
    ) -> Result<GpuSort, PipelineError> {
        use wgpu::util::DeviceExt;
        let plan = match partner {
            Partner::Output(_) => SortPlan::odd(n, key_bits),
            _ => SortPlan::new(n, key_bits),
        };
        let storage = |label: &str, bytes: u64| {
            device.create_buffer(&wgpu::BufferDescriptor {
                label: Some(label),
                size: bytes.max(16),
                usage: wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_SRC,
                mapped_at_creation: false,
            })
        };
        let hist = storage("sort_hist", plan.hist_len as u64 * 4);
        // The partner buffer of the ping-pong: the output, a scratch buffer given, or our own.
        let scratch = match partner {
            Partner::Output(b) | Partner::Scratch(b) => b.clone(),
            Partner::Own => storage("sort_scratch", n as u64 * 16),
        };
        let counted = match count {
            Count::Fixed => None,
            Count::Read(_) | Count::Inline => {
                // (An inline plan has no count to read: its producer passes the count.)
                let src = match count {
                    Count::Read(src) => Some(src),
                    _ => None,
                };
                let mut slots: Vec<[u32; SLOT_RECORD_WORDS]> =
                    plan.passes().iter().map(scan::slot_record).collect();
                slots.extend(plan.scan.levels().iter().map(scan::slot_record));
                let spec = CountPlan {
                    src_word: src.map_or(0, |s| s.word),
                    add: src.map_or(0, |s| s.add),
                    cap: n,
                    kind: COUNT_PLAN_SORT,
                    num_passes: plan.passes().len() as u32,
                    num_levels: plan.scan.levels().len() as u32,
                    ..Default::default()
                };
                let args = 1 + spec.num_levels;
                Some(CountedPlan::new(
                    device, pipelines, &slots, spec, args, src,
                )?)
            }
        };
        let uniforms: Vec<wgpu::Buffer> = match counted {
            Some(_) => Vec::new(),
            None => plan
                .passes()
                .iter()
                .map(|p| {
                    device.create_buffer_init(&wgpu::util::BufferInitDescriptor {
                        label: Some("sort_pass"),
                        contents: bytemuck::bytes_of(p),
                        usage: wgpu::BufferUsages::UNIFORM,
                    })
                })
                .collect(),
        };
        // The histogram's scan; its level 1 is filled by sort_histogram and zeroed by sort_scatter.
        let scan = match &counted {
            Some(c) => GpuScan::for_sort(
                device,
                pipelines,
                &hist,
                plan.scan,
                c,
                plan.passes().len() as u32,
                1,
            )?,
            None => GpuScan::with_plan(device, pipelines, &hist, plan.scan)?,
        };
        let none = Buffers::default();
        let mut groups = Vec::new();
        let partials = scan.partials();
        for (k, p) in plan.passes().iter().enumerate() {
            let (src, dst) = if k % 2 == 0 {
                (data, &scratch)
            } else {
                (&scratch, data)
            };
            let (pass_binding, threads) = match &counted {
                Some(c) => (c.slot(k as u32), c.threads(0)),
                None => (
                    uniforms[k].as_entire_buffer_binding(),
                    Threads::Fixed(p.num_blocks * BLOCK),
                ),
            };
            let h = pipelines.bind_group_ranges(
                device,
                "sort_histogram",
                &none,
                &[
                    ("sort_pass", pass_binding.clone()),
                    ("sort_in", src.as_entire_buffer_binding()),
                    ("sort_hist", hist.as_entire_buffer_binding()),
                    ("scan_partials", partials.as_entire_buffer_binding()),
                ],
            )?;
            let s = pipelines.bind_group_ranges(
                device,
                "sort_scatter",
                &none,
                &[
                    ("sort_pass", pass_binding),
                    ("sort_in", src.as_entire_buffer_binding()),
                    ("sort_hist", hist.as_entire_buffer_binding()),
                    ("sort_out", dst.as_entire_buffer_binding()),
                    ("scan_partials", partials.as_entire_buffer_binding()),
                ],
            )?;
            groups.push((h, s, threads));
        }
        Ok(GpuSort {
            plan,
            _uniforms: uniforms,
            _hist: hist,
            _scratch: scratch,
            scan,
            counted,
            groups,
        })
    }

    pub fn plan(&self) -> &SortPlan {
        &self.plan
    }

    /// The dispatches in order: kernel, bind group, threads (for a step that records its own list);
    /// a counted sort's `count_plan` first, unless its count's producer writes the plan
    /// ([`GpuSort::counted_into_inline`]).
    pub fn dispatches(&self) -> Vec<(&'static str, &wgpu::BindGroup, Threads)> {
        let mut out = Vec::new();
        if let Some(c) = self.counted.as_ref().filter(|c| c.has_dispatch()) {
            out.push(("count_plan", c.plan_bind_group(), Threads::Fixed(1)));
        }
        for (h, s, threads) in &self.groups {
            out.push(("sort_histogram", h, threads.clone()));
            out.extend(self.scan.dispatches());
            out.push(("sort_scatter", s, threads.clone()));
        }
        out
    }

    /// Records every pass into `pass`: `sort_histogram`, the scan of `sort_hist`, `sort_scatter`.
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

#[cfg(test)]
mod tests {
    use super::*;

    /// A xorshift sequence from `seed`.
    fn xorshift(mut x: u64) -> impl FnMut() -> u64 {
        move || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        }
    }

    /// `n` records with keys from `key`, each valued its index (stability shows in the values).
    fn records(n: usize, mut key: impl FnMut() -> u64) -> Vec<KeyValue> {
        (0..n).map(|i| record(key(), i as u32)).collect()
    }

    #[test]
    fn twins_sort_stably() {
        let mut next = xorshift(12345);
        for n in [0usize, 1, 255, 256, 300, 5000] {
            let data = records(n, || next() % 97 * 0x0123_4567_89AB);
            let mut want = data.clone();
            want.sort_by_key(key);
            let mut got = data.clone();
            let (mut s, mut h, mut p) = (Vec::new(), Vec::new(), Vec::new());
            radix_sort(&mut got, 64, &mut s, &mut h, &mut p);
            assert_eq!(got, want, "n {n}");
        }
    }

    /// The chunked passes give the twins' result: for keys that fit `key_bits` a stable sort,
    /// and for keys that pass it the same partial order (the same passes, rounded up alike), over
    /// several chunks and a short last one, with many equal keys (stability shows in the values).
    #[test]
    fn chunked_passes_sort_as_the_twins_do() {
        let mut next = xorshift(777);
        for (n, bits, mask) in [
            (3 * SORT_CHUNK + 123, 64, u64::MAX),
            (2 * SORT_CHUNK, 24, (1 << 24) - 1),
            (5 * SORT_CHUNK + 1, 24, (1 << 40) - 1),
            (SORT_CHUNK / 2, 16, 0xff0f),
            (4 * SORT_CHUNK + 7, 32, 0x3f),
        ] {
            let data = records(n, || next() & mask);
            let mut want = data.clone();
            let (mut s, mut h, mut p) = (Vec::new(), Vec::new(), Vec::new());
            radix_sort_blocks(&mut want, bits, &mut s, &mut h, &mut p);
            let mut got = data.clone();
            // Dirty scratch from an earlier, larger sort.
            radix_sort_chunks(&mut got, bits, &mut s, &mut h);
            assert_eq!(got, want, "n {n}, {bits}-bit sort, mask {mask:x}");
            if mask.checked_shr(bits).unwrap_or(0) == 0 {
                let mut stable = data.clone();
                stable.sort_by_key(key);
                assert_eq!(got, stable, "n {n}: a stable sort");
            }
        }
    }
}
