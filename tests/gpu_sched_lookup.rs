//! The contact sets' lookup for the scheduler (`set_lookup`, src/sched/lookup.rs) built on the GPU
//! (`set_lookup_clear` → `set_lookup_count` → scan → `set_lookup_write` → `set_lookup_sort`,
//! recorded by `sched::LookupGpu`) against its CPU twins, against `set_lookup_pack`, and against an
//! oracle written here (list every (sa, sb, set) triple, sort, pack), on the real set table of the
//! default swatch under ACL after 24 steps, on synthetic tables at the bounds, on an empty table, and
//! with a capacity too small.
//!
//! Every output is discrete (words of the lookup, offsets, counts, flags): all must be identical,
//! except the scratch items of `set_lookup_write`, which land in any order within their bucket on the
//! GPU (compared per bucket as sorted lists; the sort after them must then give identical words).

#[path = "support/fixture.rs"]
mod fixture;

use fixture::{bytes, scene_sim};
use yarnsim::acl::merge_gpu::table_with_capacity;
use yarnsim::acl::{AclContact, ContactSet, SET_LIVE};
use yarnsim::gpu::testing::gpu_or_skip;
use yarnsim::gpu::Gpu;
use yarnsim::layout::{
    AclSizes, Capacity, LookupUniform, ACL_SIZES_LOOKUP_BUCKET, ACL_SIZES_LOOKUP_SET,
};
use yarnsim::pipelines::{run_kernel, Buffers, Pipelines};
use yarnsim::scan::exclusive_scan;
use yarnsim::sched::lookup_gpu::KERNELS;
use yarnsim::sched::{
    owned_bits, set_lookup_build, set_lookup_clear, set_lookup_count, set_lookup_pack,
    set_lookup_sort, set_lookup_write, LookupCaps, LookupGpu, LookupScratch, MAX_LOOKUP_BUCKET,
    MAX_LOOKUP_SET,
};

/// A set table with its segment count and `b`.
struct Table {
    sets: Vec<ContactSet>,
    nseg: u32,
    b: u32,
}

impl Table {
    fn uniform(&self) -> LookupUniform {
        LookupUniform {
            num_sets: self.sets.len() as u32,
            num_segments: self.nseg,
            quadrature: self.b,
            _pad: 0,
        }
    }
}

/// The swatch under ACL with an `AclContact` run beside it for 24 steps: its set table between
/// steps (every slot live).
fn swatch_table() -> Table {
    let over = ["contact.model=acl"];
    let mut sim = scene_sim("swatch", &over, 0);
    let params = fixture::scene_contact("swatch", &over);
    let r = sim.step_params().radius;
    let mut acl = AclContact::new(r, &params).unwrap();
    let mut force = vec![[0.0f32; 4]; sim.pos.len()];
    for _ in 0..24 {
        sim.step().unwrap();
        acl.step(&sim.topo, &sim.pos, &mut force).unwrap();
        assert_eq!(acl.last_stats().lookup_errors, 0);
    }
    let sets = acl.sets().to_vec();
    assert!(sets.len() > 100, "{} sets", sets.len());
    assert!(sets.iter().all(|s| s.flags & SET_LIVE != 0));
    Table {
        sets,
        nseg: sim.topo.segments.len() as u32,
        b: params.quadrature,
    }
}

fn live(bx: [u32; 4]) -> ContactSet {
    ContactSet {
        bx,
        flags: SET_LIVE,
        ..Default::default()
    }
}

/// Small boxes scattered over `nseg` segments of `b` points, overlapping at will (the lookup does not
/// need disjoint sets), some reaching the last segment or beyond it, some on the diagonal.
fn scattered(nseg: u32, b: u32, n: usize, seed: u64) -> Table {
    let nq = nseg * b;
    let mut x = seed;
    let mut next = |m: u32| {
        x = x
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        ((x >> 33) % m as u64) as u32
    };
    let sets = (0..n)
        .map(|_| {
            let u0 = next(nq);
            let u1 = (u0 + next(3 * b)).min(nq + b);
            let v0 = u0 + next(4 * b);
            let v1 = v0 + next(3 * b);
            live([u0, u1, v0, v1])
        })
        .collect();
    Table { sets, nseg, b }
}

/// The lookup by its definition: every (sa, sb, set) of the live sets' boxes (within the bounds),
/// sorted, then packed; an oversized bucket as zeros.
fn oracle(t: &Table) -> Vec<u32> {
    let (b, nseg) = (t.b, t.nseg);
    if nseg == 0 {
        return vec![0, 0, 0];
    }
    let mut items = Vec::new();
    for (k, s) in t.sets.iter().enumerate() {
        if s.flags & SET_LIVE == 0 {
            continue;
        }
        let mut mine = Vec::new();
        let sa_max = (s.bx[1] / b).min(nseg - 1);
        let sb_max = (s.bx[3] / b).min(nseg - 1);
        for sa in s.bx[0] / b..=sa_max {
            for sb in (s.bx[2] / b).max(sa + 1)..=sb_max {
                mine.push((sa, sb, k as u32));
            }
        }
        let spans = sa_max >= s.bx[0] / b && sa_max - s.bx[0] / b >= MAX_LOOKUP_SET;
        if mine.len() <= MAX_LOOKUP_SET as usize && !spans {
            items.extend(mine);
        }
    }
    items.sort();
    let mut out = vec![nseg, items.len() as u32];
    for sa in 0..=nseg {
        out.push(items.partition_point(|it| it.0 < sa) as u32);
    }
    for sa in 0..nseg {
        let bucket: Vec<_> = items.iter().filter(|it| it.0 == sa).collect();
        for it in &bucket {
            if bucket.len() > MAX_LOOKUP_BUCKET as usize {
                out.extend([0, 0]);
            } else {
                out.extend([it.1, it.2]);
            }
        }
    }
    for s in &t.sets {
        out.extend_from_slice(&s.bx);
    }
    out
}

/// The CPU path: the twins through `set_lookup_build`.
fn cpu(t: &Table) -> (Vec<u32>, AclSizes) {
    let mut out = Vec::new();
    let sizes = set_lookup_build(
        &t.uniform(),
        &t.sets,
        &mut LookupScratch::default(),
        &mut out,
    );
    (out, sizes)
}

fn cast<T: bytemuck::Pod>(v: &[u8]) -> Vec<T> {
    bytemuck::cast_slice(v).to_vec()
}

fn sizes_with(capacity: u32) -> AclSizes {
    AclSizes {
        lookup: Capacity {
            capacity,
            ..Default::default()
        },
        // Another stage's bit: kept, never cleared.
        errors: 64,
        ..Default::default()
    }
}

/// A sentinel in every word the chain must not write.
const UNTOUCHED: u32 = 0xdead_beef;

/// The chain on the GPU over `t` in a table of `slots` slots (padding not live), for `caps`: the
/// whole `set_lookup` buffer, the sizes, and the caps to rerun with (`LookupGpu::grown`).
fn run_chain(
    gpu: &Gpu,
    t: &Table,
    slots: usize,
    caps: LookupCaps,
) -> (Vec<u32>, AclSizes, Option<LookupCaps>) {
    let (words, sizes, grown, _) = run_chain_counts(gpu, t, slots, caps);
    (words, sizes, grown)
}

/// [`run_chain`], and the buffer the chain counted into (`LookupGpu::counts_buffer`).
fn run_chain_counts(
    gpu: &Gpu,
    t: &Table,
    slots: usize,
    caps: LookupCaps,
) -> (Vec<u32>, AclSizes, Option<LookupCaps>, &'static str) {
    let pipelines = Pipelines::only(&gpu.device, KERNELS).unwrap();
    let (d, q) = (&gpu.device, &gpu.queue);
    let mut buffers = Buffers::default();
    let table = table_with_capacity(&t.sets, slots);
    buffers.upload(d, q, "sets", bytes(&table), false);
    buffers.upload(d, q, "acl_sizes", bytes(&[AclSizes::default()]), false);
    let chain = LookupGpu::new(d, q, &pipelines, &mut buffers, t.b, caps).unwrap();
    let mut sizes = sizes_with(0);
    chain.set_capacities(&mut sizes);
    q.write_buffer(buffers.get("acl_sizes").unwrap(), 0, bytes(&[sizes]));
    chain.write_num_sets(q, &buffers, t.sets.len() as u32);
    let out = buffers.get("set_lookup").unwrap();
    let len = out.size();
    q.write_buffer(out, 0, bytes(&vec![UNTOUCHED; len as usize / 4]));
    let mut enc = d.create_command_encoder(&Default::default());
    {
        let mut pass = enc.begin_compute_pass(&Default::default());
        chain.record(&pipelines, &mut pass).unwrap();
    }
    q.submit([enc.finish()]);
    let words: Vec<u32> = cast(&buffers.read(d, q, "set_lookup", len).unwrap());
    let sizes: AclSizes = bytemuck::pod_read_unaligned(
        &buffers
            .read(d, q, "acl_sizes", size_of::<AclSizes>() as u64)
            .unwrap(),
    );
    let grown = chain.grown(&sizes);
    (words, sizes, grown, chain.counts_buffer())
}

/// Caps with room for `t` exactly, over a table of `slots` slots.
fn exact_caps(t: &Table, slots: usize, words: usize) -> LookupCaps {
    LookupCaps {
        sets: slots as u32,
        segments: t.nseg,
        words: words as u32,
    }
}

/// The chain with room to spare equals the CPU path (and the oracle), and leaves the words past the
/// lookup alone.
fn chain_matches(gpu: &Gpu, t: &Table, label: &str) -> AclSizes {
    let (want, want_sizes) = cpu(t);
    assert_eq!(want, oracle(t), "{label}: twins vs oracle");
    let slots = t.sets.len() + 37;
    let caps = exact_caps(t, slots, want.len() + 101);
    let (got, sizes, grown, counts) = run_chain_counts(gpu, t, slots, caps);
    // The counts scanned into lookup_offsets in one dispatch up to SCAN_INTO_MAX elements, in
    // place past it.
    let direct = t.nseg < yarnsim::scan::SCAN_INTO_MAX;
    assert_eq!(
        counts,
        if direct {
            "lookup_counts"
        } else {
            "lookup_offsets"
        },
        "{label}: the buffer counted into"
    );
    assert_eq!(grown, None);
    assert_eq!(&got[..want.len()], &want[..], "{label}: GPU lookup");
    assert!(
        got[want.len()..].iter().all(|&w| w == UNTOUCHED),
        "{label}: words past the lookup were written"
    );
    assert_eq!(sizes.lookup.count, want.len() as u32, "{label}: count");
    assert_eq!(sizes.lookup.capacity, caps.words);
    assert_eq!(sizes.lookup.overflow, 0, "{label}: overflow");
    assert_eq!(sizes.errors, want_sizes.errors | 64, "{label}: error bits");
    sizes
}

/// Each kernel against its twin on the twin's input (a difference is pinned to one kernel).
fn kernels_match_twins(gpu: &Gpu, t: &Table, label: &str) {
    let u = t.uniform();
    let ub = bytes(std::slice::from_ref(&u));
    let ns = t.nseg as usize;
    let n = t.sets.len();
    let slots = n + 5;
    let table = table_with_capacity(&t.sets, slots);
    let dispatch_sets = slots as u32;

    // set_lookup_clear
    let mut offsets = vec![9u32; ns + 1];
    set_lookup_clear(&u, &mut offsets);
    let out = run_kernel(
        gpu,
        "set_lookup_clear",
        &[
            ("acl_lookup", ub),
            ("lookup_offsets", bytes(&vec![9u32; ns + 1])),
        ],
        ns as u32 + 1,
    )
    .unwrap();
    assert_eq!(
        cast::<u32>(&out["lookup_offsets"]),
        offsets,
        "{label}: clear"
    );
    assert!(offsets.iter().all(|&o| o == 0));

    // set_lookup_count
    let mut sizes = sizes_with(0);
    let sizes_in = sizes;
    set_lookup_count(&u, &table, &mut offsets, &mut sizes);
    let out = run_kernel(
        gpu,
        "set_lookup_count",
        &[
            ("acl_lookup", ub),
            ("sets", bytes(&table)),
            ("lookup_offsets", bytes(&vec![0u32; ns + 1])),
            ("acl_sizes", bytes(&[sizes_in])),
        ],
        dispatch_sets,
    )
    .unwrap();
    assert_eq!(
        cast::<u32>(&out["lookup_offsets"]),
        offsets,
        "{label}: count"
    );
    assert_eq!(
        bytemuck::pod_read_unaligned::<AclSizes>(&out["acl_sizes"]),
        sizes,
        "{label}: count sizes"
    );
    exclusive_scan(&mut offsets, &mut Vec::new());
    let ni = offsets[ns] as usize;
    let words = yarnsim::sched::lookup_words(t.nseg, ni as u32, n as u32) as usize;

    // set_lookup_write, with a capacity of exactly the lookup (items scratch: the same words).
    let mut sizes = sizes_with(words as u32);
    let sizes_in = sizes;
    let offsets_in = offsets.clone();
    let mut items = vec![UNTOUCHED; words];
    set_lookup_write(&u, &table, &mut offsets, &mut items, &mut sizes);
    let out = run_kernel(
        gpu,
        "set_lookup_write",
        &[
            ("acl_lookup", ub),
            ("sets", bytes(&table)),
            ("lookup_offsets", bytes(&offsets_in)),
            ("lookup_items", bytes(&vec![UNTOUCHED; words])),
            ("acl_sizes", bytes(&[sizes_in])),
        ],
        dispatch_sets,
    )
    .unwrap();
    assert_eq!(
        cast::<u32>(&out["lookup_offsets"]),
        offsets,
        "{label}: bucket ends"
    );
    assert_eq!(
        bytemuck::pod_read_unaligned::<AclSizes>(&out["acl_sizes"]),
        sizes,
        "{label}: write sizes"
    );
    let gpu_items: Vec<u32> = cast(&out["lookup_items"]);
    assert_eq!(
        gpu_items[2 * ni..],
        items[2 * ni..],
        "{label}: past the items"
    );
    let bucket = |v: &[u32], sa: usize| {
        let start = if sa > 0 { offsets[sa - 1] } else { 0 } as usize;
        let mut b: Vec<[u32; 2]> = (start..offsets[sa] as usize)
            .map(|i| [v[2 * i], v[2 * i + 1]])
            .collect();
        b.sort();
        b
    };
    for sa in 0..ns {
        assert_eq!(
            bucket(&gpu_items, sa),
            bucket(&items, sa),
            "{label}: items of bucket {sa}"
        );
    }

    // set_lookup_sort, on the twin's items and on the GPU's (another arrival order): the same
    // words, capacity exactly the lookup.
    let mut sizes = sizes_with(words as u32);
    let sizes_in = sizes;
    let mut lookup = vec![UNTOUCHED; words + 3];
    set_lookup_sort(&u, &table, &offsets, &items, &mut lookup, &mut sizes);
    assert_eq!(
        lookup[..words],
        cpu(t).0[..],
        "{label}: sort twin vs CPU path"
    );
    for (which, its) in [("twin", &items), ("GPU", &gpu_items)] {
        let out = run_kernel(
            gpu,
            "set_lookup_sort",
            &[
                ("acl_lookup", ub),
                ("sets", bytes(&table)),
                ("lookup_offsets", bytes(&offsets)),
                ("lookup_items", bytes(its)),
                ("set_lookup", bytes(&vec![UNTOUCHED; words + 3])),
                ("acl_sizes", bytes(&[sizes_in])),
            ],
            (ns as u32 + 1).max(dispatch_sets).max(words as u32 / 2),
        )
        .unwrap();
        assert_eq!(
            cast::<u32>(&out["set_lookup"]),
            lookup,
            "{label}: sort of the {which}'s items"
        );
        assert_eq!(
            bytemuck::pod_read_unaligned::<AclSizes>(&out["acl_sizes"]),
            sizes,
            "{label}: sort sizes"
        );
    }
}

/// The twins equal the oracle and `set_lookup_pack` on the swatch's table and on scattered boxes;
/// the lookup answers `owned_bits` as the boxes do. Needs no GPU.
#[test]
fn twins_match_the_oracle() {
    let t = swatch_table();
    let (words, sizes) = cpu(&t);
    assert_eq!(words, oracle(&t), "swatch");
    assert_eq!(sizes.errors, 0);
    assert_eq!(sizes.lookup.count as usize, words.len());
    let mut packed = Vec::new();
    let errors = set_lookup_pack(t.sets.iter().map(|s| s.bx), t.b, t.nseg, &mut packed);
    assert_eq!((packed, errors), (words.clone(), 0), "set_lookup_pack");
    let ns = t.nseg as usize;
    let biggest = (0..ns)
        .map(|sa| words[3 + sa] - words[2 + sa])
        .max()
        .unwrap();
    eprintln!(
        "swatch: {} sets, {} segments, {} items, largest bucket {biggest}, {} words",
        t.sets.len(),
        t.nseg,
        words[1],
        words.len()
    );
    // The lookup is not trivial: several sets share segments.
    assert!(words[1] as usize > t.sets.len(), "{} items", words[1]);
    for seed in 0..6 {
        let s = scattered(40 + seed as u32, 11, 300, seed);
        assert_eq!(cpu(&s).0, oracle(&s), "scattered {seed}");
    }
    // Every segment pair's ownership equals the union of the boxes (spot check of the format).
    let apart = t.sets.iter().filter(|s| s.bx[0] / t.b < s.bx[3] / t.b);
    for s in apart.take(20) {
        let (sa, sb) = (s.bx[0] / t.b, s.bx[3] / t.b);
        let (bits, overflow) = owned_bits(&words, sa, sb, t.b);
        assert!(!overflow);
        assert!(bits.iter().any(|&w| w != 0), "set {:?} owns nothing", s.bx);
    }
}

/// Scattered boxes over 5,000 segments of one point, with sets at and beyond the bounds.
fn bounds_table() -> Table {
    let (nseg, b) = (5000, 1);
    let mut t = scattered(nseg, b, 200, 7);
    // 199·200/2 = 19,900 pairs: beyond MAX_LOOKUP_SET.
    t.sets.push(live([0, 199, 0, 199]));
    // Segment 300 meets 4,000 + 200 segments: beyond MAX_LOOKUP_BUCKET.
    t.sets.push(live([300, 300, 301, 4300]));
    t.sets.push(live([300, 300, 4301, 4500]));
    // A set at the limit: exactly MAX_LOOKUP_SET pairs (128 × 128 segments).
    t.sets.push(live([1000, 1127, 2000, 2127]));
    // Not live (a slot freed during a step): lists nothing, keeps its box.
    t.sets.push(ContactSet {
        bx: [10, 12, 14, 16],
        ..Default::default()
    });
    t
}

/// A set listing more than MAX_LOOKUP_SET pairs lists none (ACL_SIZES_LOOKUP_SET), a segment with
/// more than MAX_LOOKUP_BUCKET items has its bucket zeroed (ACL_SIZES_LOOKUP_BUCKET); the rest of the
/// lookup is intact. Needs no GPU.
#[test]
fn sets_and_buckets_beyond_the_bounds_are_flagged() {
    let t = bounds_table();
    let (words, sizes) = cpu(&t);
    assert_eq!(words, oracle(&t));
    assert_eq!(
        sizes.errors,
        ACL_SIZES_LOOKUP_SET | ACL_SIZES_LOOKUP_BUCKET,
        "error bits"
    );
    // Segment 300's pairs are unowned now, the set at the limit's are owned.
    let (bits, _) = owned_bits(&words, 300, 302, 1);
    assert_eq!(bits, [0; 4]);
    let (bits, _) = owned_bits(&words, 1000, 2000, 1);
    assert_eq!(bits, [1, 0, 0, 0]);
}

/// No sets: the lookup of no sets over the segments (every bucket empty), and `[0, 0, 0]` over no
/// segments. Needs no GPU.
#[test]
fn no_sets_give_empty_buckets() {
    let t = Table {
        sets: Vec::new(),
        nseg: 7,
        b: 11,
    };
    let (words, sizes) = cpu(&t);
    let mut want = vec![7, 0];
    want.extend([0; 8]);
    assert_eq!(words, want);
    assert_eq!(sizes.lookup.count, 10);
    let none = Table {
        sets: vec![live([0, 3, 5, 9])],
        nseg: 0,
        b: 11,
    };
    assert_eq!(cpu(&none).0, yarnsim::sched::NO_SETS);
}

#[test]
fn swatch_kernels_match_twins() {
    let Some(gpu) = gpu_or_skip("swatch_kernels_match_twins") else {
        return;
    };
    kernels_match_twins(&gpu, &swatch_table(), "swatch");
}

#[test]
fn bounds_kernels_match_twins() {
    let Some(gpu) = gpu_or_skip("bounds_kernels_match_twins") else {
        return;
    };
    kernels_match_twins(&gpu, &bounds_table(), "bounds");
}

/// The recorded chain on the swatch's table (spare slots not live, spare words) equals the CPU
/// path, and so do synthetic tables at the bounds and scattered boxes over more segments than one
/// scan block, and than `scan_into` scans (the lookup's counts then scanned in place).
#[test]
fn chain_matches_the_cpu_path() {
    let Some(gpu) = gpu_or_skip("chain_matches_the_cpu_path") else {
        return;
    };
    let s = chain_matches(&gpu, &swatch_table(), "swatch");
    assert_eq!(s.errors, 64);
    let s = chain_matches(&gpu, &bounds_table(), "bounds");
    assert_eq!(
        s.errors,
        64 | ACL_SIZES_LOOKUP_SET | ACL_SIZES_LOOKUP_BUCKET
    );
    chain_matches(&gpu, &scattered(700, 11, 3000, 3), "scattered");
    // Over 70,000 segments: the counts scanned in place (two dispatches).
    chain_matches(
        &gpu,
        &scattered(70_000, 2, 3000, 5),
        "scattered over 70,000 segments",
    );
}

/// A capacity too small: the count is the words needed, overflow is set, the lookup of no sets is
/// written and nothing past the capacity; the capacity `grown` gives then suffices.
#[test]
fn tiny_capacity_overflows_and_writes_nothing_past_it() {
    let Some(gpu) = gpu_or_skip("tiny_capacity_overflows_and_writes_nothing_past_it") else {
        return;
    };
    let t = swatch_table();
    let (want, _) = cpu(&t);
    let slots = t.sets.len();
    for cap in [2usize, 10, want.len() - 1] {
        let caps = exact_caps(&t, slots, cap);
        let (got, sizes, grown) = run_chain(&gpu, &t, slots, caps);
        assert_eq!(sizes.lookup.count as usize, want.len(), "cap {cap}: count");
        assert_eq!(sizes.lookup.overflow, 1, "cap {cap}: overflow");
        let head = cap.min(3);
        assert!(got[..head].iter().all(|&w| w == 0), "cap {cap}: head");
        assert!(
            got[head..].iter().all(|&w| w == UNTOUCHED),
            "cap {cap}: written past the lookup of no sets"
        );
        // The twin agrees word for word.
        let mut lookup = vec![UNTOUCHED; got.len()];
        let mut tw = sizes_with(cap as u32);
        let mut offsets = vec![0u32; t.nseg as usize + 1];
        let u = t.uniform();
        set_lookup_clear(&u, &mut offsets);
        set_lookup_count(&u, &t.sets, &mut offsets, &mut tw);
        exclusive_scan(&mut offsets, &mut Vec::new());
        let mut items = vec![UNTOUCHED; cap];
        set_lookup_write(&u, &t.sets, &mut offsets, &mut items, &mut tw);
        assert!(
            items.iter().all(|&w| w == UNTOUCHED),
            "cap {cap}: twin items"
        );
        set_lookup_sort(&u, &t.sets, &offsets, &items, &mut lookup, &mut tw);
        assert_eq!(lookup, got, "cap {cap}: twin");
        assert_eq!(tw.lookup, sizes.lookup, "cap {cap}: twin sizes");
        // Rerun with the grown capacity.
        let grown = grown.expect("an overflow asks for a rerun");
        assert!(grown.words >= sizes.lookup.count);
        let (again, s2, _) = run_chain(&gpu, &t, slots, grown);
        assert_eq!(s2.lookup.overflow, 0);
        assert_eq!(&again[..want.len()], &want[..], "cap {cap}: rerun");
    }
}

/// No sets: the lookup of no sets over the segments, on the GPU as on the CPU.
#[test]
fn empty_table_gives_the_lookup_of_no_sets() {
    let Some(gpu) = gpu_or_skip("empty_table_gives_the_lookup_of_no_sets") else {
        return;
    };
    let t = Table {
        sets: Vec::new(),
        nseg: 300,
        b: 11,
    };
    let (want, _) = cpu(&t);
    assert_eq!(want.len(), 3 + 300);
    assert!(want[1..].iter().all(|&w| w == 0));
    let (got, sizes, _) = run_chain(&gpu, &t, 16, exact_caps(&t, 16, want.len()));
    assert_eq!(&got[..want.len()], &want[..]);
    assert_eq!(sizes.lookup.count as usize, want.len());
    assert_eq!(sizes.lookup.overflow, 0);
}
