//! The generic GPU building blocks of src/scan.rs and src/sort.rs: the exclusive prefix sum
//! (`scan_reduce`, `scan_add`) and the radix sort (`sort_histogram`, `sort_scatter`).
//!
//! Their twins against plain Rust (a running sum; std's stable sort) on random inputs of several
//! sizes, including more than 65,536 elements (three scan levels; more workgroups than the
//! 65,535 iterations after which lavapipe ends an invocation, so any per-thread loop over n would
//! show) and sizes that are not multiples of 256; then the kernels against the twins. Everything
//! here is integer, so every comparison is exact; the sort is also run twice on the GPU to check
//! it is bitwise reproducible.

use yarnsim::gpu::testing::gpu_or_skip;
use yarnsim::gpu::Gpu;
use yarnsim::layout::KeyValue;
use yarnsim::pipelines::{Buffers, Pipelines};
use yarnsim::scan::{self, GpuScan, ScanPlan};
use yarnsim::sort::{self, GpuSort};

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
            KeyValue {
                key_lo: k as u32,
                key_hi: (k >> 32) as u32,
                value: i as u32,
                _pad: 0,
            }
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
    for &n in SIZES {
        let data = counts(&mut rng, n);
        let mut got = data.clone();
        let mut partials = Vec::new();
        scan::exclusive_scan(&mut got, &mut partials);
        assert_eq!(got, plain_exclusive(&data), "n = {n}");
    }
    let plan = ScanPlan::new(200_003);
    assert_eq!(plan.levels().len(), 3, "three levels above 65,536");
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

fn storage(gpu: &Gpu, bufs: &mut Buffers, name: &str, bytes: &[u8]) {
    bufs.upload(&gpu.device, &gpu.queue, name, bytes, false);
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
    for &n in SIZES {
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
    ] {
        let mut data = records(&mut rng, n, distinct);
        if bits < 64 {
            for r in &mut data {
                r.key_hi = 0;
            }
        }
        let mut want = data.clone();
        let (mut s, mut h, mut p) = (Vec::new(), Vec::new(), Vec::new());
        sort::radix_sort(&mut want, bits, &mut s, &mut h, &mut p);
        let mut first: Option<Vec<u8>> = None;
        for run in 0..2 {
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
            submit(&gpu, |pass| sorter.record(&pipelines, pass).unwrap());
            let out = bufs
                .read(&gpu.device, &gpu.queue, "data", 16 * n as u64)
                .unwrap();
            let got: &[KeyValue] = bytemuck::cast_slice(&out);
            assert_eq!(got, &want[..], "n = {n}, {bits}-bit keys, run {run}");
            if let Some(f) = &first {
                assert_eq!(f, &out, "run {run} differs from run 0");
            }
            first = Some(out);
        }
    }
}
