//! The generic GPU building blocks of src/scan.rs and src/sort.rs: the exclusive prefix sum
//! (`scan_reduce`, `scan_add`) and the radix sort (`sort_histogram`, `sort_scatter`).
//!
//! Their twins against plain Rust (a running sum; std's stable sort) on random inputs of several
//! sizes, including more than 65,536 elements (more workgroups than the 65,535 iterations after
//! which lavapipe ends an invocation, so any per-thread loop over n would show), sizes that are
//! not multiples of the blocks (256 records, 2,048 scan elements) and, for the scan, more than
//! 2,048² elements (three levels); then the kernels against the twins. Everything
//! here is integer, so every comparison is exact; the sort is also run twice on the GPU to check
//! it is bitwise reproducible. Then the counted scan and sort, which a `count_plan` dispatch sizes
//! on the GPU from a live count (indirect grids): its twin against plans made for that count, the
//! kernel against its twin, and the counted blocks against plain Rust on the live prefix.

use yarnsim::gpu::testing::gpu_or_skip;
use yarnsim::gpu::Gpu;
use yarnsim::layout::{
    CountPlan, GridSpec, KeyValue, ScanPass, SortPass, COUNT_PLAN_GRID, COUNT_PLAN_GRIDS,
    COUNT_PLAN_SCAN, COUNT_PLAN_SORT,
};
use yarnsim::pipelines::{Buffers, Pipelines};
use yarnsim::scan::{self, CountSource, GpuScan, ScanPlan};
use yarnsim::sort::{self, GpuSort, SortPlan};

/// xorshift64*: a small deterministic generator.
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
}

const SIZES: &[usize] = &[1, 7, 256, 257, 1000, 65_536, 65_537, 70_001, 200_003];
/// The scans' sizes: around one and two levels' worth of 2,048-element blocks too.
const SCAN_SIZES: &[usize] = &[
    1, 7, 256, 257, 1000, 2047, 2048, 2049, 65_537, 200_003, 4_194_304, 4_194_305,
];

fn counts(rng: &mut Rng, n: usize) -> Vec<u32> {
    // Small counts mostly (what the contact stages scan), some large, so sums wrap at times.
    (0..n)
        .map(|_| match rng.next() % 100 {
            0 => (rng.next() >> 33) as u32,
            _ => (rng.next() % 9) as u32,
        })
        .collect()
}

fn records(rng: &mut Rng, n: usize, distinct: u64) -> Vec<KeyValue> {
    (0..n)
        .map(|i| {
            // Few distinct keys, spread over all 64 bits, so stability is exercised.
            let k = (rng.next() % distinct).wrapping_mul(0x9E37_79B9_7F4A_7C15);
            sort::record(k, i as u32)
        })
        .collect()
}

fn plain_exclusive(v: &[u32]) -> Vec<u32> {
    let mut acc = 0u32;
    v.iter()
        .map(|&x| {
            let r = acc;
            acc = acc.wrapping_add(x);
            r
        })
        .collect()
}

#[test]
fn scan_twins_match_a_running_sum() {
    let mut rng = Rng(7);
    for &n in SCAN_SIZES {
        let data = counts(&mut rng, n);
        let mut got = data.clone();
        let mut partials = Vec::new();
        scan::exclusive_scan(&mut got, &mut partials);
        assert_eq!(got, plain_exclusive(&data), "n = {n}");
    }
    let plan = ScanPlan::new(4_194_305);
    assert_eq!(plan.levels().len(), 3, "three levels above 2,048²");
    assert_eq!(ScanPlan::new(4_194_304).levels().len(), 2);
}

#[test]
fn sort_twins_match_a_stable_sort() {
    let mut rng = Rng(11);
    for &n in SIZES {
        for (bits, distinct) in [(64, 1000u64), (64, 3), (16, 40_000)] {
            let mut data = records(&mut rng, n, distinct);
            if bits < 64 {
                for r in &mut data {
                    r.key_lo &= (1 << bits) - 1;
                    r.key_hi = 0;
                }
            }
            let mut want = data.clone();
            want.sort_by_key(sort::key);
            let (mut s, mut h, mut p) = (Vec::new(), Vec::new(), Vec::new());
            sort::radix_sort(&mut data, bits, &mut s, &mut h, &mut p);
            assert_eq!(data, want, "n = {n}, {bits}-bit keys");
        }
    }
}

/// The kernels of counted scans and sorts.
fn counted_pipelines(gpu: &Gpu) -> Pipelines {
    Pipelines::only(
        &gpu.device,
        &[
            "count_plan",
            "scan_reduce",
            "scan_add",
            "sort_histogram",
            "sort_scatter",
        ],
    )
    .unwrap()
}

fn storage(gpu: &Gpu, bufs: &mut Buffers, name: &str, bytes: &[u8]) {
    bufs.upload(&gpu.device, &gpu.queue, name, bytes, false);
}

/// A buffer "count" in `bufs` holding `count`, read as a counted scan's or sort's live length
/// (plus `add`).
fn count_source(gpu: &Gpu, bufs: &mut Buffers, count: u32, add: u32) -> CountSource {
    storage(gpu, bufs, "count", bytemuck::cast_slice(&[count, 0, 0, 0]));
    CountSource {
        buffer: bufs.get("count").unwrap().clone(),
        word: 0,
        add,
    }
}

fn submit(gpu: &Gpu, record: impl FnOnce(&mut wgpu::ComputePass<'_>)) {
    let scope = gpu.device.push_error_scope(wgpu::ErrorFilter::Validation);
    let mut enc = gpu
        .device
        .create_command_encoder(&wgpu::CommandEncoderDescriptor { label: None });
    {
        let mut pass = enc.begin_compute_pass(&wgpu::ComputePassDescriptor {
            label: None,
            timestamp_writes: None,
        });
        record(&mut pass);
    }
    gpu.queue.submit([enc.finish()]);
    if let Some(e) = pollster::block_on(scope.pop()) {
        panic!("{e}");
    }
}

#[test]
fn gpu_scan_matches_twin() {
    let Some(gpu) = gpu_or_skip("gpu_scan_matches_twin") else {
        return;
    };
    let pipelines = Pipelines::only(&gpu.device, &["scan_reduce", "scan_add"]).unwrap();
    let mut rng = Rng(3);
    for &n in SCAN_SIZES {
        let data = counts(&mut rng, n);
        let mut bufs = Buffers::default();
        storage(&gpu, &mut bufs, "data", bytemuck::cast_slice(&data));
        let scan =
            GpuScan::new(&gpu.device, &pipelines, bufs.get("data").unwrap(), n as u32).unwrap();
        submit(&gpu, |pass| scan.record(&pipelines, pass).unwrap());
        let out = bufs
            .read(&gpu.device, &gpu.queue, "data", 4 * n as u64)
            .unwrap();
        let got: &[u32] = bytemuck::cast_slice(&out);
        let mut want = data.clone();
        let mut partials = Vec::new();
        scan::exclusive_scan(&mut want, &mut partials);
        assert_eq!(got, &want[..], "n = {n}");
    }
}

/// `scan_into` (`GpuScan::into`: the scan of `data` written into `out`, one dispatch) against the
/// twin and `exclusive_scan`, up to `SCAN_INTO_MAX` elements (32 blocks: the last workgroup adds
/// 63,488 elements before its own) with sums that wrap: the result identical, `data` untouched,
/// and `out` untouched past `n`. Past `SCAN_INTO_MAX`, and for none, there is no such scan.
#[test]
fn scan_into_matches_twin() {
    let Some(gpu) = gpu_or_skip("scan_into_matches_twin") else {
        return;
    };
    let pipelines = Pipelines::only(&gpu.device, &["scan_into"]).unwrap();
    let mut rng = Rng(17);
    let max = scan::SCAN_INTO_MAX as usize;
    for n in [1usize, 7, 256, 2047, 2048, 2049, 6_001, max - 1, max] {
        let data = counts(&mut rng, n);
        let mut bufs = Buffers::default();
        storage(&gpu, &mut bufs, "data", bytemuck::cast_slice(&data));
        // Two words more than the scan writes, which must keep their junk.
        storage(
            &gpu,
            &mut bufs,
            "out",
            bytemuck::cast_slice(&vec![0xdead_beefu32; n + 2]),
        );
        let sc = GpuScan::into(
            &gpu.device,
            &pipelines,
            bufs.get("data").unwrap(),
            bufs.get("out").unwrap(),
            n as u32,
        )
        .unwrap()
        .expect("within SCAN_INTO_MAX");
        assert_eq!(sc.dispatches().count(), 1, "n = {n}");
        submit(&gpu, |pass| sc.record(&pipelines, pass).unwrap());
        let read = |name: &str, len: usize| -> Vec<u32> {
            let b = bufs
                .read(&gpu.device, &gpu.queue, name, 4 * len as u64)
                .unwrap();
            bytemuck::cast_slice(&b).to_vec()
        };
        let got = read("out", n + 2);
        let mut want = data.clone();
        scan::exclusive_scan(&mut want, &mut Vec::new());
        let mut twin = vec![0xdead_beefu32; n + 2];
        let pass = yarnsim::layout::ScanPass {
            n: n as u32,
            ..Default::default()
        };
        scan::scan_into(&pass, &data, &mut twin);
        assert_eq!(&twin[..n], &want[..], "twin, n = {n}");
        if let Some(k) = (0..n + 2).find(|&k| got[k] != twin[k]) {
            panic!("n = {n}: out[{k}] GPU {} twin {}", got[k], twin[k]);
        }
        assert_eq!(read("data", n), data, "n = {n}: data changed");
    }
    let mut bufs = Buffers::default();
    storage(&gpu, &mut bufs, "data", &[0u8; 16]);
    for n in [0, scan::SCAN_INTO_MAX + 1] {
        let none = GpuScan::into(
            &gpu.device,
            &pipelines,
            bufs.get("data").unwrap(),
            bufs.get("data").unwrap(),
            n,
        )
        .unwrap();
        assert!(none.is_none(), "n = {n}");
    }
}

/// Group sums as a grouped scan's producer writes them (`scan::write_groups`) over the first `n`
/// words of `data`, in a buffer of the plan's `partials_len` whose other words hold junk that the
/// scan must not read.
fn groups_of(data: &[u32], n: usize, plan: &ScanPlan) -> Vec<u32> {
    let mut groups = vec![0xdead_beef; plan.partials_len as usize];
    let k = n.div_ceil(256).min(groups.len());
    scan::write_groups(&data[..n], &mut groups[..k]);
    groups
}

/// Runs grouped scan `sc` of buffer "data" (holding `data`) after writing the group sums of its
/// first `n` words as the producer would, and reads back `len` words.
fn run_grouped(
    gpu: &Gpu,
    pipelines: &Pipelines,
    sc: &GpuScan,
    bufs: &Buffers,
    data: &[u32],
    n: usize,
    len: usize,
) -> Vec<u32> {
    let groups = groups_of(data, n, sc.plan());
    gpu.queue
        .write_buffer(sc.groups(), 0, bytemuck::cast_slice(&groups));
    submit(gpu, |pass| sc.record(pipelines, pass).unwrap());
    let out = bufs
        .read(&gpu.device, &gpu.queue, "data", 4 * len as u64)
        .unwrap();
    bytemuck::cast_slice(&out).to_vec()
}

/// A grouped scan (its producer wrote the sums of its 256-element groups into the scan's partials)
/// is the exclusive scan, on the twin and on the GPU: one dispatch for two levels (each block sums
/// the groups before it), [`ScanPlan::new`]'s dispatches for one level or three. Counted, it scans
/// the live prefix, reading only the groups of it.
#[test]
fn gpu_grouped_scan_matches_twin() {
    let mut rng = Rng(23);
    assert_eq!(ScanPlan::grouped(2049).dispatches().count(), 1);
    assert_eq!(ScanPlan::grouped(4_194_304).dispatches().count(), 1);
    assert_eq!(
        ScanPlan::grouped(4_194_305).dispatches().count(),
        ScanPlan::new(4_194_305).dispatches().count()
    );
    assert_eq!(ScanPlan::grouped(2048).dispatches().count(), 1);
    // The twin.
    for &n in SCAN_SIZES {
        let data = counts(&mut rng, n);
        let plan = ScanPlan::grouped(n as u32);
        let mut partials = groups_of(&data, n, &plan);
        let mut got = data.clone();
        scan::run_plan(&plan, &mut got, &mut partials);
        assert_eq!(got, plain_exclusive(&data), "twin, n = {n}");
    }
    let Some(gpu) = gpu_or_skip("gpu_grouped_scan_matches_twin") else {
        return;
    };
    let pipelines = counted_pipelines(&gpu);
    for &n in SCAN_SIZES {
        let data = counts(&mut rng, n);
        let mut bufs = Buffers::default();
        storage(&gpu, &mut bufs, "data", bytemuck::cast_slice(&data));
        let sc =
            GpuScan::grouped(&gpu.device, &pipelines, bufs.get("data").unwrap(), n as u32).unwrap();
        let got = run_grouped(&gpu, &pipelines, &sc, &bufs, &data, n, n);
        assert_eq!(got, plain_exclusive(&data), "GPU, n = {n}");
    }
    let cap = 70_001u32;
    for count in [0u32, 1, 2047, 2048, 9_000, 70_000, 1 << 30] {
        let mut bufs = Buffers::default();
        let src = count_source(&gpu, &mut bufs, count, 1);
        let data = counts(&mut rng, cap as usize);
        storage(&gpu, &mut bufs, "data", bytemuck::cast_slice(&data));
        let sc = GpuScan::counted_plan(
            &gpu.device,
            &pipelines,
            bufs.get("data").unwrap(),
            ScanPlan::grouped(cap),
            &src,
        )
        .unwrap();
        let n = (count.min(cap - 1) + 1) as usize;
        let got = run_grouped(&gpu, &pipelines, &sc, &bufs, &data, n, cap as usize);
        let mut want = data.clone();
        want[..n].copy_from_slice(&plain_exclusive(&data[..n]));
        assert_eq!(got, want, "counted, count {count}");
    }
}

/// Uncounted sorts against the twin, each sorted twice by the same sort (its histogram scan's level
/// 1, which `sort_histogram` fills and `sort_scatter` zeroes, must be zero again for the second):
/// histogram scans of one level (n ≤ 2,048), two (5,000, 70,001) and three (4,194,560 records:
/// 16,385 blocks, a histogram of more than 2,048² counts).
#[test]
fn gpu_sort_matches_twin_and_repeats_bitwise() {
    let Some(gpu) = gpu_or_skip("gpu_sort_matches_twin_and_repeats_bitwise") else {
        return;
    };
    let pipelines = Pipelines::only(
        &gpu.device,
        &["scan_reduce", "scan_add", "sort_histogram", "sort_scatter"],
    )
    .unwrap();
    let mut rng = Rng(5);
    for (n, bits, distinct) in [
        (1usize, 64, 10u64),
        (257, 64, 10),
        (5000, 32, 100_000),
        (70_001, 64, 5000),
        (2048 * 2048 + 256, 8, 200),
    ] {
        let mut data = records(&mut rng, n, distinct);
        if bits < 64 {
            for r in &mut data {
                r.key_hi = 0;
                if bits < 32 {
                    r.key_lo &= (1 << bits) - 1;
                }
            }
        }
        let mut want = data.clone();
        let (mut s, mut h, mut p) = (Vec::new(), Vec::new(), Vec::new());
        sort::radix_sort(&mut want, bits, &mut s, &mut h, &mut p);
        let mut check = want.clone();
        check.sort_by_key(sort::key);
        assert_eq!(want, check, "the twin, n = {n}");
        let levels = sort::SortPlan::new(n as u32, bits).scan.levels().len();
        assert_eq!(
            levels,
            1 + (n > 2048 / 256 * 256) as usize + (n > 2048 * 2048) as usize
        );
        let mut bufs = Buffers::default();
        storage(&gpu, &mut bufs, "data", bytemuck::cast_slice(&data));
        let sorter = GpuSort::new(
            &gpu.device,
            &pipelines,
            bufs.get("data").unwrap(),
            n as u32,
            bits,
        )
        .unwrap();
        for run in 0..2 {
            if run > 0 {
                gpu.queue
                    .write_buffer(bufs.get("data").unwrap(), 0, bytemuck::cast_slice(&data));
            }
            submit(&gpu, |pass| sorter.record(&pipelines, pass).unwrap());
            let out = bufs
                .read(&gpu.device, &gpu.queue, "data", 16 * n as u64)
                .unwrap();
            let got: &[KeyValue] = bytemuck::cast_slice(&out);
            assert!(
                got == &want[..],
                "n = {n} ({levels} scan levels), {bits}-bit keys, run {run}: differs from the twin"
            );
        }
    }
}

// --- Counted scans and sorts: sized on the GPU by a live count (`count_plan`, indirect grids). ---

/// The plan words of a scan or sort at capacity `cap`, as `CountedPlan` uploads them.
fn plan_words(kind: u32, cap: u32, bits: u32, add: u32) -> (CountPlan, Vec<u32>) {
    let (slots, passes, levels): (Vec<[u32; W]>, u32, u32) = if kind == COUNT_PLAN_SORT {
        let p = SortPlan::new(cap, bits);
        let mut s: Vec<[u32; W]> = p.passes().iter().map(scan::slot_record).collect();
        s.extend(p.scan.levels().iter().map(scan::slot_record));
        (s, p.passes().len() as u32, p.scan.levels().len() as u32)
    } else {
        let p = ScanPlan::new(cap);
        let s: Vec<[u32; W]> = p.levels().iter().map(scan::slot_record).collect();
        let n = s.len() as u32;
        (s, 0, n)
    };
    let spec = CountPlan {
        src_word: 1,
        add,
        cap,
        kind,
        num_passes: passes,
        num_levels: levels,
        args_word: scan::PLAN_SLOT_WORDS * slots.len() as u32,
        ..Default::default()
    };
    let args = levels + u32::from(kind == COUNT_PLAN_SORT);
    let mut words = vec![0u32; (spec.args_word + 3 * args) as usize];
    for (k, s) in slots.iter().enumerate() {
        let at = scan::PLAN_SLOT_WORDS as usize * k;
        words[at..at + W].copy_from_slice(s);
    }
    (spec, words)
}

/// Words of a plan slot's record.
const W: usize = scan::SLOT_RECORD_WORDS;

/// The twin of `count_plan` gives every level and pass the length a plan made for the live count
/// has (levels a smaller plan lacks get the 0 or 1 elements above its top), and the grids of
/// those lengths.
#[test]
fn count_plan_twin_sizes_levels_and_passes_by_the_count() {
    let slot = |w: &[u32], k: u32| -> [u32; W] {
        let at = (scan::PLAN_SLOT_WORDS * k) as usize;
        w[at..at + W].try_into().unwrap()
    };
    for cap in [300u32, 70_001, 20_000_000] {
        for count in [0u32, 1, 255, 256, 257, 69_999, 70_001, 5_000_000, u32::MAX] {
            // A scan of offsets (count + 1 elements).
            let (spec, mut w) = plan_words(COUNT_PLAN_SCAN, cap, 0, 1);
            scan::count_plan(&spec, &[7, count], &mut w);
            let n = count.min(cap - 1) + 1;
            let small = ScanPlan::new(n);
            let mut m = n;
            for k in 0..spec.num_levels {
                let got: ScanPass = bytemuck::cast(slot(&w, k));
                let full = ScanPlan::new(cap).levels()[k as usize];
                assert_eq!(got.n, m, "cap {cap} count {count} level {k}");
                if let Some(l) = small.levels().get(k as usize) {
                    assert_eq!(got.n, l.n);
                }
                assert_eq!(
                    (got.level, got.offset, got.next_offset, got.next_unscanned),
                    (
                        full.level,
                        full.offset,
                        full.next_offset,
                        full.next_unscanned
                    )
                );
                let g = &w[(spec.args_word + 3 * k) as usize..][..3];
                assert_eq!(g, yarnsim::shaders::dispatch_grid(m, scan::BLOCK));
                m = m.div_ceil(scan::BLOCK);
            }
            // A 48-bit sort.
            let (spec, mut w) = plan_words(COUNT_PLAN_SORT, cap, 48, 0);
            scan::count_plan(&spec, &[7, count], &mut w);
            let n = count.min(cap);
            let small = SortPlan::new(n, 48);
            for k in 0..spec.num_passes {
                let got: SortPass =
                    bytemuck::cast::<[u32; 4], _>(slot(&w, k)[..4].try_into().unwrap());
                assert_eq!(
                    got,
                    small.passes()[k as usize],
                    "cap {cap} count {count} pass {k}"
                );
            }
            let g = &w[spec.args_word as usize..][..3];
            assert_eq!(g, yarnsim::shaders::dispatch_grid(n.div_ceil(256), 1));
            let mut m = small.hist_len;
            for k in 0..spec.num_levels {
                let got: ScanPass = bytemuck::cast(slot(&w, spec.num_passes + k));
                assert_eq!(got.n, m, "cap {cap} count {count} hist level {k}");
                m = m.div_ceil(scan::BLOCK);
            }
        }
    }
}

#[test]
fn gpu_count_plan_matches_twin() {
    let Some(gpu) = gpu_or_skip("gpu_count_plan_matches_twin") else {
        return;
    };
    for (kind, cap, bits, add) in [
        (COUNT_PLAN_SCAN, 70_001u32, 0, 1),
        (COUNT_PLAN_SORT, 20_000_000, 64, 0),
    ] {
        for count in [0u32, 300, 69_000, 19_999_999, u32::MAX] {
            let (spec, words) = plan_words(kind, cap, bits, add);
            let src = [3u32, count];
            let mut want = words.clone();
            scan::count_plan(&spec, &src, &mut want);
            let out = yarnsim::pipelines::run_kernel(
                &gpu,
                "count_plan",
                &[
                    ("plan_spec", bytemuck::bytes_of(&spec)),
                    ("plan_src", bytemuck::cast_slice(&src)),
                    ("plan_out", bytemuck::cast_slice(&words)),
                ],
                1,
            )
            .unwrap();
            let got: &[u32] = bytemuck::cast_slice(&out["plan_out"]);
            assert_eq!(got, &want[..], "kind {kind} count {count}");
        }
    }
    // A grid of 64-thread workgroups, 3 threads per item, over count + 1 items of at most 500,000.
    let spec = CountPlan {
        src_word: 0,
        add: 1,
        cap: 500_000,
        kind: COUNT_PLAN_GRID,
        threads_per_item: 3,
        workgroup_size: 64,
        ..Default::default()
    };
    for count in [0u32, 20, 30_000, 499_999, u32::MAX] {
        let mut want = vec![0u32; 4];
        scan::count_plan(&spec, &[count], &mut want);
        let n = count.min(499_999) + 1;
        assert_eq!(&want[..3], yarnsim::shaders::dispatch_grid(3 * n, 64));
        let out = yarnsim::pipelines::run_kernel(
            &gpu,
            "count_plan",
            &[
                ("plan_spec", bytemuck::bytes_of(&spec)),
                ("plan_src", bytemuck::cast_slice(&[count])),
                ("plan_out", bytemuck::cast_slice(&[0u32; 4])),
            ],
            1,
        )
        .unwrap();
        let got: &[u32] = bytemuck::cast_slice(&out["plan_out"]);
        assert_eq!(got, &want[..], "grid, count {count}");
    }
    // Three grids over one count of at most 70,000 (CountedGrid::shared): a workgroup per item;
    // 3 threads per item in workgroups of 64; a thread per item plus one in workgroups of 256.
    let grids = [
        GridSpec {
            add: 0,
            threads_per_item: 1,
            workgroup_size: 1,
            _pad: 0,
        },
        GridSpec {
            add: 0,
            threads_per_item: 3,
            workgroup_size: 64,
            _pad: 0,
        },
        GridSpec {
            add: 1,
            threads_per_item: 1,
            workgroup_size: 256,
            _pad: 0,
        },
    ];
    let slots = grids.len() as u32;
    let spec = CountPlan {
        src_word: 0,
        cap: 70_000,
        kind: COUNT_PLAN_GRIDS,
        num_levels: slots,
        args_word: scan::PLAN_SLOT_WORDS * slots,
        ..Default::default()
    };
    for count in [0u32, 1, 255, 69_999, 70_000, 70_001, u32::MAX] {
        let mut words = vec![0u32; (spec.args_word + 3 * slots) as usize];
        for (k, g) in grids.iter().enumerate() {
            let at = scan::PLAN_SLOT_WORDS as usize * k;
            words[at..at + W].copy_from_slice(&scan::slot_record(g));
        }
        let mut want = words.clone();
        scan::count_plan(&spec, &[count], &mut want);
        let n = count.min(70_000);
        for (k, g) in grids.iter().enumerate() {
            let args = &want[(spec.args_word + 3 * k as u32) as usize..][..3];
            let threads = (n + g.add) * g.threads_per_item;
            assert_eq!(
                args,
                yarnsim::shaders::dispatch_grid(threads, g.workgroup_size),
                "grids, count {count}, grid {k}"
            );
        }
        // The specs are left as they were.
        assert_eq!(want[..4], words[..4]);
        let out = yarnsim::pipelines::run_kernel(
            &gpu,
            "count_plan",
            &[
                ("plan_spec", bytemuck::bytes_of(&spec)),
                ("plan_src", bytemuck::cast_slice(&[count])),
                ("plan_out", bytemuck::cast_slice(&words)),
            ],
            1,
        )
        .unwrap();
        let got: &[u32] = bytemuck::cast_slice(&out["plan_out"]);
        assert_eq!(got, &want[..], "grids, count {count}");
    }
}

/// Runs a counted scan of buffer `data` (made for `cap` elements, sized by `src`) and reads it back.
fn counted_scan(
    gpu: &Gpu,
    pipelines: &Pipelines,
    bufs: &Buffers,
    src: &CountSource,
    cap: u32,
) -> Vec<u32> {
    let sc = GpuScan::counted(&gpu.device, pipelines, bufs.get("data").unwrap(), cap, src).unwrap();
    submit(gpu, |pass| sc.record(pipelines, pass).unwrap());
    let out = bufs
        .read(&gpu.device, &gpu.queue, "data", 4 * cap as u64)
        .unwrap();
    bytemuck::cast_slice(&out).to_vec()
}

/// A counted scan over a capacity scans the live prefix (count + 1 elements) exactly and leaves the
/// rest; a counted sort of a buffer whose tail past the count holds the sentinel gives the sort of
/// the whole buffer. Counts above the capacity clamp to it.
#[test]
fn gpu_counted_scan_and_sort_follow_the_live_count() {
    let Some(gpu) = gpu_or_skip("gpu_counted_scan_and_sort_follow_the_live_count") else {
        return;
    };
    let pipelines = counted_pipelines(&gpu);
    let mut rng = Rng(17);
    let cap = 70_001u32;
    for count in [0u32, 1, 255, 256, 9_000, 65_536, 70_000, 70_001, 1 << 30] {
        let mut bufs = Buffers::default();
        storage(
            &gpu,
            &mut bufs,
            "count",
            bytemuck::cast_slice(&[0u32, 0, count, 0]),
        );
        let src = CountSource {
            buffer: bufs.get("count").unwrap().clone(),
            word: 2,
            add: 1,
        };
        // Scan of offsets: count + 1 elements (capped).
        let data = counts(&mut rng, cap as usize);
        storage(&gpu, &mut bufs, "data", bytemuck::cast_slice(&data));
        let got = counted_scan(&gpu, &pipelines, &bufs, &src, cap);
        let got = &got[..];
        let n = (count.min(cap - 1) + 1) as usize;
        let mut want = data.clone();
        scan::exclusive_scan(&mut want[..n], &mut Vec::new());
        assert_eq!(got, &want[..], "scan, count {count}");
        // Sort of `count` records (capped) with the sentinel after them.
        let n = count.min(cap) as usize;
        let mut recs = records(&mut rng, cap as usize, 3000);
        for r in &mut recs[n..] {
            *r = KeyValue {
                key_lo: u32::MAX,
                key_hi: u32::MAX,
                value: u32::MAX,
                _pad: 0,
            };
        }
        storage(&gpu, &mut bufs, "recs", bytemuck::cast_slice(&recs));
        let src = CountSource { add: 0, ..src };
        let so = GpuSort::counted(
            &gpu.device,
            &pipelines,
            bufs.get("recs").unwrap(),
            cap,
            64,
            &src,
        )
        .unwrap();
        submit(&gpu, |pass| so.record(&pipelines, pass).unwrap());
        let out = bufs
            .read(&gpu.device, &gpu.queue, "recs", 16 * cap as u64)
            .unwrap();
        let got: &[KeyValue] = bytemuck::cast_slice(&out);
        let mut want = recs.clone();
        want.sort_by_key(sort::key);
        assert_eq!(got, &want[..], "sort, count {count}");
    }
}

/// A counted sort *into* another buffer (`GpuSort::counted_into`) takes an odd number of passes,
/// ⌈bits / 8⌉ or one more, ending in the output: the live records stably sorted by the low
/// 8 · passes bits of their keys (the bits above are carried, not sorted); the output past them is
/// left as it was.
#[test]
fn gpu_counted_sort_into_another_buffer_takes_odd_passes() {
    let Some(gpu) = gpu_or_skip("gpu_counted_sort_into_another_buffer_takes_odd_passes") else {
        return;
    };
    let pipelines = counted_pipelines(&gpu);
    let mut rng = Rng(29);
    let cap = 9_001u32;
    for (bits, passes) in [(8u32, 1usize), (16, 3), (20, 3), (24, 3), (32, 5)] {
        for count in [0u32, 1, 300, 9_001] {
            let mut bufs = Buffers::default();
            let src = count_source(&gpu, &mut bufs, count, 0);
            // Keys below 2^(bits − 1), so the sentinel's low bits (all ones) sort after them.
            let mask = (1u64 << (bits - 1)) as u32 - 1;
            let mut recs = records(&mut rng, cap as usize, 5000);
            for (i, r) in recs.iter_mut().enumerate() {
                if i < count as usize {
                    r.key_lo &= mask;
                } else {
                    *r = KeyValue {
                        key_lo: u32::MAX,
                        key_hi: u32::MAX,
                        value: u32::MAX,
                        _pad: 0,
                    };
                }
            }
            storage(&gpu, &mut bufs, "in", bytemuck::cast_slice(&recs));
            let before: Vec<KeyValue> = (0..cap)
                .map(|i| KeyValue {
                    key_lo: 7,
                    key_hi: i,
                    value: 3,
                    _pad: 0,
                })
                .collect();
            storage(&gpu, &mut bufs, "out", bytemuck::cast_slice(&before));
            let so = GpuSort::counted_into(
                &gpu.device,
                &pipelines,
                bufs.get("in").unwrap(),
                bufs.get("out").unwrap(),
                cap,
                bits,
                &src,
            )
            .unwrap();
            assert_eq!(so.plan().passes().len(), passes, "{bits} bits");
            submit(&gpu, |pass| so.record(&pipelines, pass).unwrap());
            let out = bufs
                .read(&gpu.device, &gpu.queue, "out", 16 * cap as u64)
                .unwrap();
            let got: &[KeyValue] = bytemuck::cast_slice(&out);
            let n = count.min(cap) as usize;
            let mut want = recs[..n].to_vec();
            // The passes sort the low 8 · passes bits (for 32 bits: 40, the low byte of key_hi too).
            let low = (1u128 << (8 * passes)) - 1;
            want.sort_by_key(|r| sort::key(r) as u128 & low);
            want.extend_from_slice(&before[n..]);
            assert!(got == &want[..], "{bits} bits, count {count}");
        }
    }
}

/// `GpuSort::counted_fewest` between two buffers: ⌈bits / 8⌉ passes, from the input into the
/// output when that is odd (the producer writes the input) and in place in the output when it is
/// even (the producer writes the output, and the input is the scratch); either way the live
/// records end sorted in the output, stably by the key's low 8 · passes bits.
#[test]
fn gpu_counted_sort_in_the_fewest_passes() {
    let Some(gpu) = gpu_or_skip("gpu_counted_sort_in_the_fewest_passes") else {
        return;
    };
    let pipelines = counted_pipelines(&gpu);
    let mut rng = Rng(31);
    let cap = 5_003u32;
    for (bits, passes) in [(8u32, 1usize), (15, 2), (19, 3), (32, 4), (38, 5)] {
        assert_eq!(
            sort::fewest_passes_into(bits),
            passes % 2 == 1,
            "{bits} bits"
        );
        for count in [0u32, 1, 777, 5_003] {
            let mut bufs = Buffers::default();
            let src = count_source(&gpu, &mut bufs, count, 0);
            let zeros = vec![0u8; 16 * cap as usize];
            storage(&gpu, &mut bufs, "in", &zeros);
            storage(&gpu, &mut bufs, "out", &zeros);
            let (so, written) = GpuSort::counted_fewest(
                &gpu.device,
                &pipelines,
                bufs.get("in").unwrap(),
                bufs.get("out").unwrap(),
                cap,
                bits,
                &src,
            )
            .unwrap();
            assert_eq!(so.plan().passes().len(), passes, "{bits} bits");
            let into = sort::fewest_passes_into(bits);
            let want_written = if into { "in" } else { "out" };
            assert!(
                &written == bufs.get(want_written).unwrap(),
                "{bits} bits: the producer should write {want_written}"
            );
            // Keys of `bits` bits (above 32, key_hi's low bits), written where the producer would.
            let mut recs = records(&mut rng, cap as usize, 5000);
            for r in recs.iter_mut() {
                if bits < 32 {
                    r.key_lo &= (1u32 << bits) - 1;
                    r.key_hi = 0;
                } else {
                    r.key_hi &= (1u32 << (bits - 32)) - 1;
                }
            }
            gpu.queue
                .write_buffer(&written, 0, bytemuck::cast_slice(&recs));
            submit(&gpu, |pass| so.record(&pipelines, pass).unwrap());
            let out = bufs
                .read(&gpu.device, &gpu.queue, "out", 16 * cap as u64)
                .unwrap();
            let got: &[KeyValue] = bytemuck::cast_slice(&out);
            let n = count.min(cap) as usize;
            let mut want = recs[..n].to_vec();
            want.sort_by_key(sort::key);
            assert!(got[..n] == want[..], "{bits} bits, count {count}");
        }
    }
}

/// A counted scan made for three levels (more than 2,048² elements) whose live count needs one,
/// two or three of them: the levels above the live top hold 0 or 1 elements and must add nothing.
#[test]
fn gpu_counted_scan_of_three_levels_follows_the_live_count() {
    let Some(gpu) = gpu_or_skip("gpu_counted_scan_of_three_levels_follows_the_live_count") else {
        return;
    };
    let pipelines =
        Pipelines::only(&gpu.device, &["count_plan", "scan_reduce", "scan_add"]).unwrap();
    let mut rng = Rng(23);
    let cap = 4_194_305u32;
    assert_eq!(ScanPlan::new(cap).levels().len(), 3);
    let data = counts(&mut rng, cap as usize);
    for count in [0u32, 2047, 2048, 5_000, 4_194_303, 4_194_304, 1 << 30] {
        let mut bufs = Buffers::default();
        storage(&gpu, &mut bufs, "data", bytemuck::cast_slice(&data));
        let src = count_source(&gpu, &mut bufs, count, 1);
        let got = counted_scan(&gpu, &pipelines, &bufs, &src, cap);
        let got = &got[..];
        let n = (count.min(cap - 1) + 1) as usize;
        let mut want = data.clone();
        want[..n].copy_from_slice(&plain_exclusive(&data[..n]));
        assert!(got == &want[..], "scan of 3 levels, count {count}");
    }
}
