//! Parity of ACL's table and pool compactions (src/acl/sets.rs, src/acl/rebuild.rs) and of the
//! rebuild's compensated point-pair term (shaders/shared/acl_pair.wgsl) with their CPU twins.
//!
//! Fixture: the default swatch falling under ACL (`contact.model = "acl"`), with an `AclContact`
//! stepped alongside the CPU simulation for 40 steps, so its set table, springs and model pools
//! (with the garbage of 40 steps of rebuilds) are real. The compactions move records: their outputs
//! must be bitwise identical.
//!
//! `set_rebuild_runs` and `set_rebuild_args` (the run of dirty indices, and the indirect grid, of
//! `set_rebuild`'s dispatch per pair of pages) are integer kernels: their outputs must equal the
//! twins' exactly, on plans laid out as `pool_alloc` lays them out.
//!
//! The pair term is checked on inputs built to cancel: pairs at distance `2r(1 − δ)`,
//! `δ = 10⁻⁷ … 10⁻²`, at coordinates of a few cm. Tolerances (ε = 2⁻²⁴, f32's unit roundoff):
//! - GPU vs twin, per output: the depth `t` comes from error-free transformations (TwoSum as
//!   made opaque to the compiler, TwoProduct by Dekker's product with the split on the bits on the
//!   GPU, by Veltkamp's split on the CPU: the same exact error),
//!   so it differs only where a compiler fuses the plain products of the `l` terms (below an ulp of
//!   `t`); the gradient, energy and Hessian then take at most 8 further roundings each, any of which
//!   a fused multiply-add may skip. So each gradient component and the energy must agree within
//!   16ε relative to the gradient's largest component (the energy: to itself), and each Hessian entry
//!   within 16ε of the Hessian's largest entry (diagonal and outer-product terms can cancel in one
//!   entry, so an entry's own size is no scale).
//! - GPU vs an f64 oracle (`point_pair::<f64>` on the same f32 inputs), which catches a compiler
//!   that "simplifies" TwoSum away: the compensated gradient is within 64ε of the oracle's size; the
//!   test also checks that plain f32 arithmetic (`point_pair::<f32>`) misses that bound on these
//!   inputs, so the bound can fail.

#[path = "support/close.rs"]
mod close;
#[path = "support/dirty_rebuild.rs"]
mod dirty_rebuild;
#[path = "support/fixture.rs"]
mod fixture;
#[path = "support/rng.rs"]
mod rng;

use close::{assert_records_close, coord_scale, words, U};
use dirty_rebuild::{dirty_rebuild, DirtyRebuild};
use fixture::{bytes, scene_sim};
use yarnsim::acl::pages::{PoolPage, PoolPages, RebuildRun, MAX_SET_BLOCKS};
use yarnsim::acl::rebuild::{
    model_sizes, pool_compact_blocks, pool_compact_headers, pool_compact_points, pool_compact_size,
    pool_compact_vectors, pool_compact_watch, pool_dest_lens, pool_dest_offset, Pools,
    RebuildParams, WatchLoc, WatchPair,
};
use yarnsim::acl::sets::{live_groups, set_compact};
use yarnsim::acl::{AclContact, ContactSet, StictionSpring, SET_DIRTY, SET_LIVE, SET_MOVED};
use yarnsim::contact::{pair_compensated_test, point_pair};
use yarnsim::gpu::testing::gpu_or_skip;
use yarnsim::layout::{AclSizes, Capacity, MergeCounters};
use yarnsim::math::V3;
use yarnsim::pipelines::run_kernel;

const EPS: f32 = 1.0 / (1u32 << 24) as f32;

/// The swatch and an `AclContact` stepped alongside it for `steps` steps.
fn acl_after(steps: usize) -> AclContact {
    let sets = ["contact.model=acl"];
    let mut sim = scene_sim("swatch", &sets, 0);
    let params = fixture::scene_contact("swatch", &sets);
    let r = sim.step_params().radius;
    let mut acl = AclContact::new(r, &params).unwrap();
    let mut force = vec![[0.0f32; 4]; sim.pos.len()];
    for _ in 0..steps {
        sim.step().unwrap();
        acl.step(&sim.topo, &sim.pos, &mut force).unwrap();
    }
    acl
}

fn cast<T: bytemuck::Pod>(v: &[u8]) -> Vec<T> {
    bytemuck::cast_slice(v).to_vec()
}

/// `set_compact` on the swatch's table with every 3rd set marked dead, its slots from the live
/// sets per 256 slots (`live_groups`, what the kernel `set_point_count` writes: tests/gpu_acl.rs).
#[test]
fn set_compact_matches_twin() {
    let Some(gpu) = gpu_or_skip("set_compact_matches_twin") else {
        return;
    };
    let acl = acl_after(40);
    let mut sets = acl.sets().to_vec();
    let springs = acl.all_springs().to_vec();
    let n = sets.len();
    assert!(n > 50, "{n} sets");
    for s in sets.iter_mut().step_by(3) {
        s.flags &= !SET_LIVE;
    }
    let p = RebuildParams {
        num_sets: n as u32,
        ..Default::default()
    };
    let mut groups = vec![7u32; n.div_ceil(256)];
    live_groups(p.num_sets, &sets, &mut groups);
    // Each 256 slots' live sets (the dead are every 3rd from 0).
    for (g, &c) in groups.iter().enumerate() {
        let want = (256 * g..(256 * (g + 1)).min(n))
            .filter(|k| k % 3 != 0)
            .count();
        assert_eq!(c as usize, want, "group {g}");
    }
    let live = n - n.div_ceil(3);
    assert!(groups.len() > 1, "{n} sets: one group");
    // The sum starts from a value left there, as the kernel's atomics add to it.
    let sizes_in = AclSizes {
        touching: 5,
        ..Default::default()
    };
    // The merge chain's counters as a step's last merge left them: a table count (what the
    // step's sets needed), no overflow, and its last pass without pairs unless a case says so.
    let merge_in = MergeCounters {
        sets: Capacity {
            count: 9_999,
            capacity: 20_000,
            overflow: 0,
            _pad: 0,
        },
        ..Default::default()
    };
    // Twin and kernel on `sets`: the twin's outputs, having checked the kernel's against them.
    let compact = |sets: &[ContactSet], merge_in: MergeCounters| {
        let mut sets_out = vec![ContactSet::default(); live];
        let mut springs_out = vec![StictionSpring::default(); 4 * live];
        let mut sizes = sizes_in;
        let mut merge = merge_in;
        set_compact(
            &p,
            sets,
            &springs,
            &groups,
            &mut sets_out,
            &mut springs_out,
            &mut sizes,
            &mut merge,
        );
        let out = run_kernel(
            &gpu,
            "set_compact",
            &[
                ("rebuild", bytes(&[p])),
                ("sets", bytes(sets)),
                ("springs", bytes(&springs)),
                ("scan_groups", bytes(&groups)),
                ("sets_out", bytes(&vec![ContactSet::default(); live])),
                (
                    "springs_out",
                    bytes(&vec![StictionSpring::default(); 4 * live]),
                ),
                ("acl_sizes", bytes(&[sizes_in])),
                ("merge_counters", bytes(&[merge_in])),
            ],
            // Over a grid past the table by several workgroups, as the step's (the set
            // capacity's): those return at once.
            n as u32 + 1_000,
        )
        .unwrap();
        assert_eq!(cast::<ContactSet>(&out["sets_out"]), sets_out);
        assert_eq!(cast::<StictionSpring>(&out["springs_out"]), springs_out);
        assert_eq!(cast::<AclSizes>(&out["acl_sizes"]), vec![sizes]);
        assert_eq!(cast::<MergeCounters>(&out["merge_counters"]), vec![merge]);
        (sets_out, springs_out, sizes, merge)
    };
    // A dead set's dirty flag does not matter; a live one's asks for more rebuild rounds.
    sets[0].flags |= SET_DIRTY;
    let (sets_out, springs_out, sizes, merge) = compact(&sets, merge_in);
    assert_eq!(sizes.errors, 0, "a dead dirty set flagged");
    // The table length after compaction, in both counter blocks.
    assert_eq!(
        (sizes.num_sets, merge.sets.count),
        (live as u32, live as u32)
    );
    let mut one_dirty = sets.clone();
    one_dirty[1].flags |= SET_DIRTY; // (live: the dead are every 3rd from 0)
    let (_, _, flagged, _) = compact(&one_dirty, merge_in);
    assert_eq!(
        flagged.errors,
        yarnsim::layout::ACL_SIZES_MORE_ROUNDS,
        "a live dirty set not flagged"
    );
    // The last merge's last search still found pairs: the step asks for more passes, and for
    // more rounds, which the roots they would have been merged into need.
    let mut merging = merge_in;
    merging.edges.count = 3;
    let (_, _, more, _) = compact(&sets, merging);
    assert_eq!(
        more.errors,
        yarnsim::layout::ACL_SIZES_MORE_PASSES | yarnsim::layout::ACL_SIZES_MORE_ROUNDS,
        "a last search that still found pairs not flagged"
    );
    // After a table overflow the merge count keeps what the step needed (for the regrowth).
    let mut overflowed = merge_in;
    overflowed.sets.overflow = 1;
    let (_, _, sizes_o, merge_o) = compact(&sets, overflowed);
    assert_eq!(sizes_o.num_sets, live as u32);
    assert_eq!(merge_o.sets.count, 9_999, "an overflowed count overwritten");
    // The touching pairs of the live sets only, over more than one workgroup.
    let want = kept_touching(&sets);
    assert!(want > 0 && n > 256, "{want} touching pairs, {n} sets");
    assert_eq!(sizes.touching, 5 + want);
    // The twin keeps the live sets in order with their springs.
    let kept: Vec<usize> = (0..n).filter(|k| k % 3 != 0).collect();
    for (d, &k) in kept.iter().enumerate() {
        assert_eq!(sets_out[d].bx, sets[k].bx);
        assert_eq!(springs_out[4 * d..4 * d + 4], springs[4 * k..4 * k + 4]);
    }
    // Moved sets (the step's last merge invocation ends at its last search, before merge_hull
    // would clear the flag) come out unmoved, their other flags kept.
    let mut moved = sets.clone();
    for s in moved.iter_mut().step_by(2) {
        s.flags |= SET_MOVED;
    }
    let (moved_out, _, _, _) = compact(&moved, merge_in);
    assert!(
        kept.iter().any(|&k| moved[k].flags & SET_MOVED != 0),
        "no live set moved"
    );
    for (d, &k) in kept.iter().enumerate() {
        assert_eq!(moved_out[d].flags, moved[k].flags & !SET_MOVED, "set {k}");
        assert_eq!(moved_out[d].flags, sets_out[d].flags, "set {k}");
    }
}

fn kept_touching(sets: &[ContactSet]) -> u32 {
    sets.iter()
        .filter(|s| s.flags & SET_LIVE != 0)
        .map(|s| s.touching)
        .sum()
}

/// `pool_compact_size` → exclusive scan → `pool_compact_points` / `_blocks` / `_watch` →
/// `pool_compact_headers` on the swatch's pools, keeping every other set (so the pools hold the
/// garbage of the rebuilds and of the dropped sets).
#[test]
fn pool_compact_matches_twin() {
    let Some(gpu) = gpu_or_skip("pool_compact_matches_twin") else {
        return;
    };
    let acl = acl_after(40);
    let sets: Vec<ContactSet> = acl.sets().iter().step_by(2).copied().collect();
    let pools: &Pools = acl.pools();
    let ns = sets.len();
    let zero = sets
        .iter()
        .filter(|s| s.flags & yarnsim::acl::SET_ZERO != 0)
        .count();
    let p = RebuildParams {
        num_sets: ns as u32,
        ..Default::default()
    };
    let mut dest = vec![0u32; 3 * (ns + 1)];
    pool_compact_size(&p, &sets, &mut dest);
    let out = run_kernel(
        &gpu,
        "pool_compact_size",
        &[
            ("rebuild", bytes(&[p])),
            ("sets", bytes(&sets)),
            ("pool_dest", bytes(&vec![7u32; 3 * (ns + 1)])),
        ],
        ns as u32 + 1,
    )
    .unwrap();
    assert_eq!(cast::<u32>(&out["pool_dest"]), dest);
    yarnsim::scan::exclusive_scan(&mut dest, &mut Vec::new());
    let [np, nk, nw] = pool_dest_lens(&dest, ns);
    assert!(np < pools.cp.len() && nk < pools.k.len() && nw < pools.watch.len());
    assert!(np > 1000 && nk > 5000 && nw > 500, "{np} {nk} {nw}");
    let mut next = Pools::default();
    next.resize([np, nk, nw]);
    let common: Vec<(&str, Vec<u8>)> = vec![
        ("rebuild", bytes(&[p]).to_vec()),
        ("sets", bytes(&sets).to_vec()),
        ("pool_dest", bytes(&dest).to_vec()),
    ];
    let run = |name: &str, extra: Vec<(&'static str, Vec<u8>)>, threads: usize| {
        let all: Vec<(&str, Vec<u8>)> = common.iter().cloned().chain(extra).collect();
        let refs: Vec<(&str, &[u8])> = all.iter().map(|(n, v)| (*n, v.as_slice())).collect();
        run_kernel(&gpu, name, &refs, threads as u32).unwrap()
    };
    pool_compact_points(
        &p,
        &sets,
        &dest,
        &pools.cp,
        &pools.m,
        &mut next.cp,
        &mut next.m,
    );
    let out = run(
        "pool_compact_points",
        vec![
            ("cp_pool", bytes(&pools.cp).to_vec()),
            ("m_pool", bytes(&pools.m).to_vec()),
            ("cp_next", vec![0xab; 4 * np]),
            ("m_next", vec![0xab; 4 * np]),
        ],
        np,
    );
    assert_eq!(cast::<u32>(&out["cp_next"]), next.cp);
    assert_eq!(cast::<f32>(&out["m_next"]), next.m);
    pool_compact_vectors(
        &p,
        &sets,
        &dest,
        &pools.f0,
        &pools.dbar,
        &mut next.f0,
        &mut next.dbar,
    );
    let out = run(
        "pool_compact_vectors",
        vec![
            ("f0_pool", bytes(&pools.f0).to_vec()),
            ("dbar_pool", bytes(&pools.dbar).to_vec()),
            ("f0_next", vec![0xab; 16 * np]),
            ("dbar_next", vec![0xab; 16 * np]),
        ],
        np,
    );
    assert_eq!(cast::<[f32; 4]>(&out["f0_next"]), next.f0);
    assert_eq!(cast::<[f32; 4]>(&out["dbar_next"]), next.dbar);
    let whole = PoolPage::whole(nk);
    pool_compact_blocks(&p, &sets, &dest, &pools.k, &mut next.k, &whole);
    let out = run(
        "pool_compact_blocks",
        vec![
            ("k_pool", bytes(&pools.k).to_vec()),
            ("k_next", vec![0xab; 24 * nk]),
            ("block_page", bytes(&[whole]).to_vec()),
        ],
        nk,
    );
    assert_eq!(cast::<[f32; 6]>(&out["k_next"]), next.k);
    // Over pages of one stride (src/acl/pages.rs): a dispatch per pair of a new page and an old
    // one; each new page is its twin's page by page, and flattened by the sets' new ranges the
    // pages are the one-page compaction's pool.
    let stride = nk as u32 / 3 + 1;
    let old_pages = PoolPages::with_stride(stride, MAX_SET_BLOCKS, pools.k.len() as u32);
    let new_pages = PoolPages::with_stride(stride, MAX_SET_BLOCKS, nk as u32);
    assert_eq!(new_pages.count(), 3);
    let old_images = old_pages.split(bytes(&pools.k), 24);
    let mut got = Vec::new();
    for q in 0..new_pages.count() {
        let mut page = vec![0xabu8; 24 * new_pages.lens[q] as usize];
        let mut twin: Vec<[f32; 6]> = cast(&page);
        for (from, image) in old_images.iter().enumerate() {
            let u = new_pages.page(q, from);
            let out = run(
                "pool_compact_blocks",
                vec![
                    ("k_pool", image.clone()),
                    ("k_next", page),
                    ("block_page", bytes(&[u]).to_vec()),
                ],
                new_pages.lens[q] as usize,
            );
            page = out["k_next"].clone();
            pool_compact_blocks(&p, &sets, &dest, &cast(image), &mut twin, &u);
        }
        assert!(page == bytes(&twin), "page {q} differs from its twin's");
        got.push(page[..new_pages.used(q, nk as u32) as usize * 24].to_vec());
    }
    let ranges = (0..ns).map(|k| {
        (
            pool_dest_offset(&dest, ns, 1, k),
            model_sizes(&sets[k])[1] as u32,
        )
    });
    assert_eq!(
        cast::<[f32; 6]>(&new_pages.flatten(&got, 24, nk as u32, ranges)),
        next.k
    );
    let whole = PoolPage::whole(nw);
    pool_compact_watch(
        &p,
        &sets,
        &dest,
        &pools.watch,
        &pools.watch_loc,
        &mut next.watch,
        &mut next.watch_loc,
        &whole,
    );
    let out = run(
        "pool_compact_watch",
        vec![
            ("watch_pool", bytes(&pools.watch).to_vec()),
            ("watch_loc_pool", bytes(&pools.watch_loc).to_vec()),
            ("watch_next", vec![0xab; 16 * nw]),
            ("watch_loc_next", vec![0xab; 16 * nw]),
            ("watch_pool_page", bytes(&[whole]).to_vec()),
        ],
        nw,
    );
    assert_eq!(cast::<WatchPair>(&out["watch_next"]), next.watch);
    assert_eq!(cast::<WatchLoc>(&out["watch_loc_next"]), next.watch_loc);
    // The same over pages of one stride, as the blocks above (room for a set's MAX_WATCH pairs).
    let room = yarnsim::acl::MAX_WATCH as u32;
    let stride = nw as u32 / 3 + 1;
    let old_pages = PoolPages::with_stride(stride, room, pools.watch.len() as u32);
    let new_pages = PoolPages::with_stride(stride, room, nw as u32);
    assert_eq!(new_pages.count(), 3);
    let old_images = [
        old_pages.split(bytes(&pools.watch), 16),
        old_pages.split(bytes(&pools.watch_loc), 16),
    ];
    let mut got = [Vec::new(), Vec::new()];
    for q in 0..new_pages.count() {
        let mut page = [0, 1].map(|_| vec![0xabu8; 16 * new_pages.lens[q] as usize]);
        let mut twin: (Vec<WatchPair>, Vec<WatchLoc>) = (cast(&page[0]), cast(&page[1]));
        for (from, (w, wl)) in old_images[0].iter().zip(&old_images[1]).enumerate() {
            let u = new_pages.page(q, from);
            let out = run(
                "pool_compact_watch",
                vec![
                    ("watch_pool", w.clone()),
                    ("watch_loc_pool", wl.clone()),
                    ("watch_next", page[0].clone()),
                    ("watch_loc_next", page[1].clone()),
                    ("watch_pool_page", bytes(&[u]).to_vec()),
                ],
                new_pages.lens[q] as usize,
            );
            page = [out["watch_next"].clone(), out["watch_loc_next"].clone()];
            pool_compact_watch(
                &p,
                &sets,
                &dest,
                &cast(w),
                &cast(wl),
                &mut twin.0,
                &mut twin.1,
                &u,
            );
        }
        assert!(
            page[0] == bytes(&twin.0) && page[1] == bytes(&twin.1),
            "watch page {q} differs from its twin's"
        );
        for k in 0..2 {
            got[k].push(page[k][..new_pages.used(q, nw as u32) as usize * 16].to_vec());
        }
    }
    let ranges = || {
        (0..ns).map(|k| {
            (
                pool_dest_offset(&dest, ns, 2, k),
                model_sizes(&sets[k])[2] as u32,
            )
        })
    };
    assert_eq!(
        cast::<WatchPair>(&new_pages.flatten(&got[0], 16, nw as u32, ranges())),
        next.watch
    );
    assert_eq!(
        cast::<WatchLoc>(&new_pages.flatten(&got[1], 16, nw as u32, ranges())),
        next.watch_loc
    );
    let mut headers = sets.clone();
    pool_compact_headers(&p, &dest, &mut headers);
    let out = run_kernel(
        &gpu,
        "pool_compact_headers",
        &[
            ("rebuild", bytes(&[p])),
            ("pool_dest", bytes(&dest)),
            ("sets", bytes(&sets)),
        ],
        ns as u32,
    )
    .unwrap();
    assert_eq!(cast::<ContactSet>(&out["sets"]), headers);
    // The twins moved every model intact: each set's ranges at its new offsets equal its old ones.
    for (old, new) in sets.iter().zip(&headers) {
        let (o, d, n) = (old.cp_off as usize, new.cp_off as usize, old.n_cp as usize);
        assert_eq!(next.cp[d..d + n], pools.cp[o..o + n]);
        assert_eq!(next.f0[d..d + n], pools.f0[o..o + n]);
        if old.flags & yarnsim::acl::SET_ZERO == 0 {
            let nb = n * (n + 1) / 2;
            let (ko, kd) = (old.k_off as usize, new.k_off as usize);
            assert_eq!(next.k[kd..kd + nb], pools.k[ko..ko + nb]);
        }
        let (wo, wd, nwt) = (old.w_off as usize, new.w_off as usize, old.n_watch as usize);
        assert_eq!(next.watch_loc[wd..wd + nwt], pools.watch_loc[wo..wo + nwt]);
    }
    assert!(zero < ns, "{zero} of {ns} sets give no force");
}

/// Pairs at distance `2r(1 − δ)` along assorted directions, at coordinates of a few cm.
fn cancelling_pairs(r: f32) -> Vec<[f32; 4]> {
    let mut v = Vec::new();
    let mut seed = 0x2545_f491u32;
    let mut rnd = || {
        seed ^= seed << 13;
        seed ^= seed >> 17;
        seed ^= seed << 5;
        seed as f32 / u32::MAX as f32
    };
    for e in 0..6i32 {
        for _ in 0..40 {
            let delta = 10f32.powi(-7 + e) * (1.0 + rnd());
            let dir = V3::new(rnd() - 0.5, rnd() - 0.5, rnd() - 0.5);
            let dir = dir / dir.norm();
            let yi = V3::new(4.0 * rnd() - 2.0, 4.0 * rnd() - 2.0, 2.0 * rnd());
            let yj = yi - dir * (2.0 * r * (1.0 - delta));
            let kw = 1e3 * (0.5 + rnd());
            v.push(yi.to4(kw));
            v.push(yj.to4(r));
        }
    }
    v
}

/// The compensated pair term on cancelling inputs: GPU vs twin within 16ε of the output's scale,
/// and both within 64ε of the f64 oracle, which plain f32 misses (see the module doc).
#[test]
fn compensated_pair_term_matches_twin_on_cancelling_inputs() {
    let Some(gpu) = gpu_or_skip("compensated_pair_term_matches_twin_on_cancelling_inputs") else {
        return;
    };
    let r = 0.04f32;
    let input = cancelling_pairs(r);
    let np = input.len() / 2;
    let mut cpu = vec![[0.0f32; 4]; 4 * np];
    pair_compensated_test(&input, &mut cpu);
    let out = run_kernel(
        &gpu,
        "pair_compensated_test",
        &[
            ("pair_in", bytes(&input)),
            ("pair_out", bytes(&vec![[9.0f32; 4]; 4 * np])),
        ],
        np as u32,
    )
    .unwrap();
    let g: Vec<[f32; 4]> = cast(&out["pair_out"]);
    let (mut plain_misses, mut touching) = (0, 0);
    for p in 0..np {
        let (c, gp) = (&cpu[4 * p..4 * p + 4], &g[4 * p..4 * p + 4]);
        assert_eq!(c[1][3], gp[1][3], "pair {p}: touching differs");
        let (a, b) = (input[2 * p], input[2 * p + 1]);
        let oracle = point_pair::<f64>(
            V3::new(a[0] as f64, a[1] as f64, a[2] as f64),
            V3::new(b[0] as f64, b[1] as f64, b[2] as f64),
            a[3] as f64,
            r as f64,
        );
        let Some(oracle) = oracle else {
            assert_eq!(c[1][3], 0.0, "pair {p}: touching in f32 only");
            continue;
        };
        assert_eq!(c[1][3], 1.0, "pair {p}: touching in f64 only");
        touching += 1;
        let gs = (0..3).map(|k| c[0][k].abs()).fold(0.0f32, f32::max);
        let hs = (1..4)
            .flat_map(|col| (0..3).map(move |k| (col, k)))
            .map(|(col, k)| c[col][k].abs())
            .fold(0.0f32, f32::max);
        for k in 0..3 {
            assert!(
                (gp[0][k] - c[0][k]).abs() <= 16.0 * EPS * gs,
                "pair {p}: grad[{k}] gpu {:e} cpu {:e}",
                gp[0][k],
                c[0][k]
            );
            for col in 1..4 {
                assert!(
                    (gp[col][k] - c[col][k]).abs() <= 16.0 * EPS * hs,
                    "pair {p}: hess[{k}][{col}] gpu {:e} cpu {:e}",
                    gp[col][k],
                    c[col][k]
                );
            }
        }
        assert!(
            (gp[0][3] - c[0][3]).abs() <= 16.0 * EPS * c[0][3].abs(),
            "pair {p}: energy gpu {:e} cpu {:e}",
            gp[0][3],
            c[0][3]
        );
        // Against the oracle: the compensated gradient (GPU) is accurate, plain f32 often is not.
        let os = oracle.grad_i.norm();
        let plain = point_pair::<f32>(V3::from4(a), V3::from4(b), a[3], r);
        let mut plain_off = plain.is_none();
        for (k, &g) in gp[0][..3].iter().enumerate() {
            let o = oracle.grad_i.get(k);
            assert!(
                (g as f64 - o).abs() <= 64.0 * EPS as f64 * os,
                "pair {p}: gpu grad[{k}] {:e} vs f64 {o:e}",
                g
            );
            if let Some(pl) = &plain {
                plain_off |= (pl.grad_i.get(k) as f64 - o).abs() > 64.0 * EPS as f64 * os;
            }
        }
        plain_misses += plain_off as usize;
    }
    assert!(touching > np / 2, "{touching} of {np} pairs touch");
    assert!(
        plain_misses > np / 4,
        "plain f32 misses the bound on only {plain_misses} of {np} pairs: the inputs do not cancel"
    );
}

/// `set_rebuild_size` on the swatch: the sets of an `AclContact` after 40 steps, all marked dirty,
/// rebuilt at the positions of the next step (every set re-measured, as with τ = 0). Plans, watched
/// pairs and their local indices must be identical: the kernel measures the same pairs by the same
/// arithmetic (quadrature points, d², √, |d − 2r|), takes exact minima, maxima and sums, and picks
/// the same keys. ε, the guards and the gaps are results of `sqrt` and `κw` of two products: lavapipe
/// rounds them as the twin does (bitwise there), a GPU that fuses multiply-adds (NVIDIA) does not.
/// Their tolerance: a quadrature point is a 4-term weighted sum of control points (7 roundings of at
/// most `U P`, `P` the largest coordinate, the weights summing to about 1), a pair distance the norm
/// of a difference of two (≤ 2·7 + 4 more), `|d − 2r|` one more: 64 `U P` covers it 3 times over.
/// `κw` is two products: 8 `U |κw|`.
#[test]
fn set_rebuild_size_matches_twin() {
    use yarnsim::acl::rebuild::{set_rebuild_size, RebuildPlan};
    use yarnsim::acl::MAX_WATCH;
    let Some(gpu) = gpu_or_skip("set_rebuild_size_matches_twin") else {
        return;
    };
    let fx = dirty_rebuild();
    let nd = fx.dirty.len();
    assert!(nd > 50 && fx.plans.iter().any(|p| p.n_watch as usize == MAX_WATCH));
    check_rebuild_size(&gpu, &fx, &fx.sets, (&fx.plans, &fx.watch, &fx.watch_loc));
    // The same sets cut to boxes of at most 5 × 5 positions: fewer members than MAX_WATCH + 1, so
    // the selection runs out of members and its last rounds pick nothing (on the swatch as it is,
    // every set has a full watch list).
    let small: Vec<ContactSet> = fx
        .sets
        .iter()
        .map(|s| {
            let mut s = *s;
            s.bx[1] = s.bx[1].min(s.bx[0] + 4);
            s.bx[3] = s.bx[3].min(s.bx[2] + 4);
            s
        })
        .collect();
    let mut plans = vec![RebuildPlan::default(); nd];
    let mut watch = vec![WatchPair::default(); nd * MAX_WATCH];
    let mut watch_loc = vec![WatchLoc::default(); nd * MAX_WATCH];
    set_rebuild_size(
        &fx.p,
        &fx.sim.pos,
        fx.data.tables(),
        &small,
        &fx.dirty,
        &mut plans,
        &mut watch,
        &mut watch_loc,
        &PoolPage::whole(nd),
        &fx.scratch,
    );
    let partial = plans
        .iter()
        .filter(|p| p.n_watch > 0 && (p.n_watch as usize) < MAX_WATCH)
        .count();
    assert!(partial > 10, "{partial} sets with a partial watch list");
    check_rebuild_size(&gpu, &fx, &small, (&plans, &watch, &watch_loc));
}

/// `set_rebuild_size` on the GPU for the sets `sets` (all dirty) of the fixture `fx`, against the
/// twin's `plans`, watched pairs and their local indices for them.
fn check_rebuild_size(
    gpu: &yarnsim::gpu::Gpu,
    fx: &DirtyRebuild,
    sets: &[ContactSet],
    (plans, watch, watch_loc): (
        &[yarnsim::acl::rebuild::RebuildPlan],
        &[WatchPair],
        &[WatchLoc],
    ),
) {
    use yarnsim::acl::rebuild::RebuildPlan;
    use yarnsim::acl::MAX_WATCH;
    let DirtyRebuild {
        sim,
        dirty,
        seg_contact,
        p,
        qpts,
        ..
    } = fx;
    let p = *p;
    let topo = &sim.topo;
    let nd = dirty.len();
    // The kernel over page `page` of the watched-pair scratch (its slots only), from `plans`.
    let run = |page: PoolPage, plans: &[RebuildPlan]| {
        let slots = page.len as usize * MAX_WATCH;
        run_kernel(
            gpu,
            "set_rebuild_size",
            &[
                ("rebuild", bytes(&[p])),
                ("qpts", bytes(qpts)),
                ("segments", bytes(&topo.segments)),
                ("seg_contact", bytes(seg_contact)),
                ("sets", bytes(sets)),
                ("dirty", bytes(dirty)),
                ("plans", bytes(plans)),
                ("plan_watch", bytes(&vec![WatchPair::default(); slots])),
                ("plan_watch_loc", bytes(&vec![WatchLoc::default(); slots])),
                ("scratch_page", bytes(&[page])),
            ],
            (nd * 64) as u32,
        )
        .unwrap()
    };
    let out = run(PoolPage::whole(nd), &vec![RebuildPlan::default(); nd]);
    // The scratch in pages of a third of the dirty sets (src/acl/pages.rs), dispatched in turn:
    // the plans, and the pages laid end to end, are the one page's bit for bit.
    let pages = PoolPages::with_stride(nd.div_ceil(3) as u32, 0, nd as u32);
    assert_eq!(pages.count(), 3);
    let mut paged = (vec![RebuildPlan::default(); nd], Vec::new(), Vec::new());
    for q in 0..pages.count() {
        let o = run(pages.page(q, q), &paged.0);
        paged.0 = cast(&o["plans"]);
        paged.1.extend_from_slice(&o["plan_watch"]);
        paged.2.extend_from_slice(&o["plan_watch_loc"]);
    }
    assert!(
        bytes(&paged.0) == out["plans"]
            && paged.1 == out["plan_watch"]
            && paged.2 == out["plan_watch_loc"],
        "set_rebuild_size over 3 pages of the watched-pair scratch differs from one page"
    );
    let g_plans: Vec<RebuildPlan> = cast(&out["plans"]);
    let g_watch: Vec<WatchPair> = cast(&out["plan_watch"]);
    let g_loc: Vec<WatchLoc> = cast(&out["plan_watch_loc"]);
    let (zero, deleted) = (
        plans.iter().filter(|p| p.flags & 1 != 0).count(),
        plans.iter().filter(|p| p.flags & 2 != 0).count(),
    );
    println!(
        "{nd} dirty sets: {zero} zero-force, {deleted} deleted, largest box {} pairs, {} watched pairs",
        sets.iter()
            .map(|s| (s.bx[1] - s.bx[0] + 1) * (s.bx[3] - s.bx[2] + 1))
            .max()
            .unwrap(),
        plans.iter().map(|p| p.n_watch).sum::<u32>()
    );
    assert!(plans.iter().all(|p| p.flags & 4 == 0), "a non-finite pair");
    let pos_tol = 64.0 * U * coord_scale(&sim.pos);
    // RebuildPlan: eps (word 8), guard_near and guard_far (12, 13) are floats.
    let (worst, differ) = assert_records_close(
        "plans",
        &g_plans,
        plans,
        &words(&[(8, 1), (12, 2)]),
        |_, _| pos_tol,
    );
    eprintln!("plans: {differ} float words differ, worst {worst:.3} of the tolerance");
    // Watched pairs: a set keeps the MAX_WATCH member pairs of smallest |gap|, sorted by it. Where
    // two gaps are within rounding of each other (a GPU that fuses moves them by up to `pos_tol`),
    // the order may swap, and at the cut the kept pair may be the other one (measured on an H200:
    // gaps 0.03662172 / 0.03662169 of two neighbouring pairs). So per set, in the canonical order
    // (i, j): the pairs kept by both agree (points exactly; kw within 8 U |kw|, the gap within
    // `pos_tol`), and a pair kept by one path only has its |gap| within 2 `pos_tol` of the set's
    // cut (the largest kept |gap|). On lavapipe the lists are identical.
    let mut at_cut = 0;
    for (t, plan) in plans.iter().enumerate() {
        let n = plan.n_watch as usize;
        let w = t * MAX_WATCH..t * MAX_WATCH + n;
        let list = |pairs: &[WatchPair], locs: &[WatchLoc]| {
            let mut v: Vec<(WatchPair, WatchLoc)> = pairs[w.clone()]
                .iter()
                .copied()
                .zip(locs[w.clone()].iter().copied())
                .collect();
            v.sort_by_key(|(p, _)| (p.i, p.j));
            v
        };
        let (gl, cl) = (list(&g_watch, &g_loc), list(watch, watch_loc));
        let cut = cl
            .iter()
            .fold(0.0f64, |m, (p, _)| m.max(p.gap.abs() as f64));
        let only = |a: &[(WatchPair, WatchLoc)], b: &[(WatchPair, WatchLoc)]| -> Vec<WatchPair> {
            a.iter()
                .filter(|(p, _)| !b.iter().any(|(q, _)| (q.i, q.j) == (p.i, p.j)))
                .map(|(p, _)| *p)
                .collect()
        };
        for p in only(&gl, &cl).iter().chain(&only(&cl, &gl)) {
            assert!(
                (p.gap.abs() as f64 - cut).abs() <= 2.0 * pos_tol,
                "set {t}: watched pair {p:?} kept by one path only, away from the cut {cut:e}"
            );
            at_cut += 1;
        }
        for (gp, gloc) in &gl {
            if let Some((cp, cloc)) = cl.iter().find(|(q, _)| (q.i, q.j) == (gp.i, gp.j)) {
                assert_eq!(gloc, cloc, "set {t}: points of watched pair {gp:?}");
                assert!(
                    (gp.kw - cp.kw).abs() as f64 <= 8.0 * U * cp.kw.abs() as f64
                        && (gp.gap - cp.gap).abs() as f64 <= pos_tol,
                    "set {t}: watched pair gpu {gp:?} cpu {cp:?}"
                );
            }
        }
        let rest = t * MAX_WATCH + n..(t + 1) * MAX_WATCH;
        assert_eq!(
            g_watch[rest.clone()],
            watch[rest.clone()],
            "set {t}: unused slots"
        );
        assert_eq!(
            g_loc[rest.clone()],
            watch_loc[rest],
            "set {t}: unused slots"
        );
    }
    eprintln!("watched pairs: {at_cut} kept by one path only, at the cut");
}

/// The rebuild's allocation and write pass on the swatch, as in `set_rebuild_size_matches_twin`
/// (the sets of an `AclContact` after 40 steps, all dirty, rebuilt at the next step's positions):
/// `pool_alloc_size` → `pool_alloc` → `set_rebuild_points` → `set_rebuild` →
/// `set_rebuild_watch` → `set_rebuild_springs` → `set_rebuild_headers`, each kernel on its
/// twin's inputs, appending to the `AclContact`'s own pools (so the offsets start past live data).
///
/// Discrete outputs (sizes, offsets, counters, control-point lists, watched pairs, springs' pairs
/// and flags, the term list's pairs and local indices, header fields but f_ref and the centre)
/// must be identical. Floats: every kernel adds the same f32 terms in the twin's order (`K̄` and
/// `f0` per entry over the touching pairs in box order, each pair's slots in order; `d̄`, the
/// centre and `f_ref` over points or pairs in order; `M` over raw slots in order), and the pair
/// terms come from the compensated term whose GPU-vs-twin agreement is 16ε of its scale
/// (`compensated_pair_term_matches_twin_on_cancelling_inputs`). lavapipe fuses no multiply-add
/// and rounds `/` and `sqrt` correctly, so there every float agrees bitwise; a GPU that fuses
/// (NVIDIA) moves them by a few roundings, so floats are compared within: 64 `U P` for positions
/// and offsets (`d̄`, the centre, ε and the guards, the springs' rest offsets: see
/// `set_rebuild_size_matches_twin`); `(m + 16) · 2U · S` for an entry of `K̄`, `f0`, `M` or the force
/// summing at most `m` terms (the most touching pairs of a set) of scale at most `S` (the pool's
/// largest entry); 16 `U` of each pair term's own largest component for the terms.
/// Then the CPU path itself (`AclContact::rebuild_all`, the same rebuild through the stage
/// driver) must give the same headers, springs and pools as the kernels.
#[test]
fn set_rebuild_write_matches_twin_and_cpu_path() {
    use yarnsim::acl::rebuild::{
        pool_alloc, pool_alloc_size, set_rebuild, set_rebuild_headers, set_rebuild_points,
        set_rebuild_springs, set_rebuild_watch, PoolAlloc, RebuildPlan, RebuildTerm,
    };
    use yarnsim::acl::SET_DIRTY;
    use yarnsim::layout::AclUniform;
    let Some(gpu) = gpu_or_skip("set_rebuild_write_matches_twin_and_cpu_path") else {
        return;
    };
    let DirtyRebuild {
        sim,
        mut acl,
        mut sets,
        dirty,
        seg_contact,
        data,
        p,
        qpts,
        mut plans,
        watch,
        watch_loc,
        scratch,
    } = dirty_rebuild();
    let topo = &sim.topo;
    let nd = dirty.len();
    let b = p.b;
    let mut acl_u = AclUniform {
        quadrature: b,
        ..Default::default()
    };
    acl_u.weights[..b as usize].copy_from_slice(&data.table.weights);
    let tables = data.tables();
    assert!(plans.iter().all(|p| p.flags & 4 == 0), "a non-finite pair");
    // pool_alloc_size → pool_alloc (the releases are checked in tests/gpu_acl_release.rs;
    // here they go to a list of room enough).
    let sizes0 = yarnsim::layout::AclSizes {
        released: yarnsim::layout::Capacity {
            capacity: nd as u32,
            ..Default::default()
        },
        ..Default::default()
    };
    let ng = yarnsim::acl::rebuild::alloc_groups_len(nd);
    let mut groups = vec![yarnsim::acl::rebuild::AllocGroup::default(); ng];
    pool_alloc_size(&p, &sets, &dirty, &plans, &mut groups, &sizes0);
    let out = run_kernel(
        &gpu,
        "pool_alloc_size",
        &[
            ("rebuild", bytes(&[p])),
            ("sets", bytes(&sets)),
            ("dirty", bytes(&dirty)),
            ("plans", bytes(&plans)),
            ("alloc_groups", bytes(&vec![[7u32; 8]; ng])),
            ("acl_sizes", bytes(&[sizes0])),
        ],
        nd as u32 + 1,
    )
    .unwrap();
    assert_eq!(
        cast::<yarnsim::acl::rebuild::AllocGroup>(&out["alloc_groups"]),
        groups
    );
    let mut pools = Pools::default();
    {
        let a = acl.pools();
        pools.cp = a.cp.clone();
        pools.f0 = a.f0.clone();
        pools.dbar = a.dbar.clone();
        pools.m = a.m.clone();
        pools.k = a.k.clone();
        pools.watch = a.watch.clone();
        pools.watch_loc = a.watch_loc.clone();
    }
    let [np0, nk0, nw0] = pools.lens();
    let counters0 = PoolAlloc {
        base: [np0 as u32, nk0 as u32, nw0 as u32, 0],
        cap: [u32::MAX, u32::MAX, u32::MAX, 100],
        first_too_large: u32::MAX,
        ..Default::default()
    };
    let mut counters = counters0;
    let plans_in = plans.clone();
    let released0 = vec![yarnsim::sched::Release::default(); nd];
    let (mut released, mut sizes) = (released0.clone(), sizes0);
    pool_alloc(
        &p,
        &sets,
        &dirty,
        &groups,
        &mut plans,
        &mut counters,
        &mut released,
        &mut sizes,
    );
    let out = run_kernel(
        &gpu,
        "pool_alloc",
        &[
            ("rebuild", bytes(&[p])),
            ("sets", bytes(&sets)),
            ("dirty", bytes(&dirty)),
            ("alloc_groups", bytes(&groups)),
            ("plans", bytes(&plans_in)),
            ("pool_counters", bytes(&[counters0])),
            ("released", bytes(&released0)),
            ("acl_sizes", bytes(&[sizes0])),
        ],
        nd as u32 + 1,
    )
    .unwrap();
    assert_eq!(cast::<RebuildPlan>(&out["plans"]), plans);
    assert_eq!(cast::<PoolAlloc>(&out["pool_counters"]), vec![counters]);
    assert_eq!(cast::<yarnsim::sched::Release>(&out["released"]), released);
    assert_eq!(
        cast::<yarnsim::layout::AclSizes>(&out["acl_sizes"]),
        vec![sizes]
    );
    let len = counters.len.map(|l| l as usize);
    println!(
        "{nd} dirty sets: pools grow by {:?}, {} term slots, errors {:#x}, largest n_cp {}, largest work {}",
        [len[0] - np0, len[1] - nk0, len[2] - nw0],
        len[3],
        counters.errors,
        plans.iter().map(|p| p.n_cp).max().unwrap(),
        plans.iter().map(yarnsim::acl::rebuild::rebuild_work).max().unwrap()
    );
    // The term pool's capacity (100) is set below its length: only its bit is raised (the GPU
    // step would grow it and rerun; the kernels below get buffers of the full length).
    assert!(len[3] > 100);
    assert_eq!(counters.errors, 8);
    pools.resize([len[0], len[1], len[2]]);
    let gpu_pools_in = (pools.cp.clone(), pools.dbar.clone(), pools.m.clone());
    // set_rebuild_points.
    set_rebuild_points(
        &p,
        &sim.pos,
        tables,
        &plans,
        &mut pools.cp,
        &mut pools.dbar,
        &mut pools.m,
        &scratch,
    );
    let out = run_kernel(
        &gpu,
        "set_rebuild_points",
        &[
            ("rebuild", bytes(&[p])),
            ("pos", bytes(&sim.pos)),
            ("segments", bytes(&topo.segments)),
            ("plans", bytes(&plans)),
            ("cp_pool", bytes(&gpu_pools_in.0)),
            ("dbar_pool", bytes(&gpu_pools_in.1)),
            ("m_pool", bytes(&gpu_pools_in.2)),
        ],
        (nd * 64) as u32,
    )
    .unwrap();
    assert_eq!(cast::<u32>(&out["cp_pool"]), pools.cp, "cp_pool");
    let pos_tol = 64.0 * U * coord_scale(&sim.pos);
    let m_terms = plans.iter().map(|p| p.touching).max().unwrap() as f64;
    let sum_tol = |pool: &[f32]| {
        (m_terms + 16.0) * 2.0 * U * pool.iter().fold(0.0f64, |m, &x| m.max(x.abs() as f64))
    };
    assert_records_close(
        "dbar_pool",
        &cast::<[f32; 4]>(&out["dbar_pool"]),
        &pools.dbar,
        &[0, 1, 2, 3],
        |_, _| pos_tol,
    );
    let m_tol = sum_tol(&pools.m);
    assert_records_close(
        "m_pool",
        &cast::<f32>(&out["m_pool"]),
        &pools.m,
        &[0],
        |_, _| m_tol,
    );
    // set_rebuild.
    let mut terms = vec![RebuildTerm::default(); len[3]];
    let (k_in, f0_in) = (pools.k.clone(), pools.f0.clone());
    set_rebuild(
        &p,
        &sim.pos,
        tables,
        &plans,
        &mut terms,
        &mut pools.k,
        &mut pools.f0,
        &[PoolPage::whole(k_in.len()), PoolPage::whole(len[3])],
        &RebuildRun::ALL,
        &scratch,
    );
    let out = run_kernel(
        &gpu,
        "set_rebuild",
        &[
            ("rebuild", bytes(&[p])),
            ("acl", bytes(&[acl_u])),
            ("qpts", bytes(&qpts)),
            ("segments", bytes(&topo.segments)),
            ("seg_contact", bytes(&seg_contact)),
            ("plans", bytes(&plans)),
            (
                "rebuild_terms",
                bytes(&vec![RebuildTerm::default(); len[3]]),
            ),
            ("k_pool", bytes(&k_in)),
            ("f0_pool", bytes(&f0_in)),
            (
                "rebuild_pages",
                bytes(&[PoolPage::whole(k_in.len()), PoolPage::whole(len[3])]),
            ),
            ("rebuild_run", bytes(&[RebuildRun::ALL])),
        ],
        (nd * 256) as u32,
    )
    .unwrap();
    let g_terms: Vec<RebuildTerm> = cast(&out["rebuild_terms"]);
    let listed = terms
        .iter()
        .filter(|t| t.i != u32::MAX && t.grad != [0.0; 4])
        .count();
    assert!(listed > 500, "{listed} touching pairs listed");
    // RebuildTerm: grad (words 4..8) and hess (8..14) are floats, each within 16 U of its own
    // vector's largest component.
    assert_records_close(
        "rebuild_terms",
        &g_terms,
        &terms,
        &words(&[(4, 10)]),
        |k, w| {
            let t = &terms[k];
            let scale = if w < 8 { &t.grad[..] } else { &t.hess[..] }
                .iter()
                .fold(0.0f64, |m, &x| m.max(x.abs() as f64));
            16.0 * U * scale
        },
    );
    let k_tol = sum_tol(bytemuck::cast_slice(&pools.k));
    let (worst, differ) = assert_records_close(
        "k_pool",
        &cast::<[f32; 6]>(&out["k_pool"]),
        &pools.k,
        &[0, 1, 2, 3, 4, 5],
        |_, _| k_tol,
    );
    eprintln!("k_pool: {differ} floats differ, worst {worst:.3} of the tolerance");
    let f0_tol = sum_tol(bytemuck::cast_slice(&pools.f0));
    assert_records_close(
        "f0_pool",
        &cast::<[f32; 4]>(&out["f0_pool"]),
        &pools.f0,
        &[0, 1, 2, 3],
        |_, _| f0_tol,
    );
    // set_rebuild_watch.
    let mut fout = vec![[0.0f32; 4]; len[0]];
    let (w_in, wl_in) = (pools.watch.clone(), pools.watch_loc.clone());
    set_rebuild_watch(
        &p,
        &plans,
        &watch,
        &watch_loc,
        &pools.f0,
        &mut pools.watch,
        &mut pools.watch_loc,
        &mut fout,
        &[PoolPage::whole(nd), PoolPage::whole(w_in.len())],
        &RebuildRun::ALL,
    );
    let out = run_kernel(
        &gpu,
        "set_rebuild_watch",
        &[
            ("rebuild", bytes(&[p])),
            ("plans", bytes(&plans)),
            ("plan_watch", bytes(&watch)),
            ("plan_watch_loc", bytes(&watch_loc)),
            ("f0_pool", bytes(&pools.f0)),
            ("watch_pool", bytes(&w_in)),
            ("watch_loc_pool", bytes(&wl_in)),
            ("fout_pool", bytes(&vec![[0.0f32; 4]; len[0]])),
            (
                "watch_pages",
                bytes(&[PoolPage::whole(nd), PoolPage::whole(w_in.len())]),
            ),
            ("watch_run", bytes(&[RebuildRun::ALL])),
        ],
        (nd * 64) as u32,
    )
    .unwrap();
    assert_records_close(
        "watch_pool",
        &cast::<WatchPair>(&out["watch_pool"]),
        &pools.watch,
        &[2, 3],
        |k, w| {
            if w == 2 {
                8.0 * U * pools.watch[k].kw.abs() as f64
            } else {
                pos_tol
            }
        },
    );
    assert_eq!(cast::<WatchLoc>(&out["watch_loc_pool"]), pools.watch_loc);
    let fout_tol = sum_tol(bytemuck::cast_slice(&fout));
    assert_records_close(
        "fout_pool",
        &cast::<[f32; 4]>(&out["fout_pool"]),
        &fout,
        &[0, 1, 2, 3],
        |_, _| fout_tol,
    );
    // set_rebuild_springs, then set_rebuild_headers.
    let mut springs = acl.all_springs().to_vec();
    let springs_in = springs.clone();
    set_rebuild_springs(&p, &sim.pos, tables, &dirty, &plans, &sets, &mut springs);
    let out = run_kernel(
        &gpu,
        "set_rebuild_springs",
        &[
            ("rebuild", bytes(&[p])),
            ("qpts", bytes(&qpts)),
            ("segments", bytes(&topo.segments)),
            ("seg_contact", bytes(&seg_contact)),
            ("dirty", bytes(&dirty)),
            ("plans", bytes(&plans)),
            ("sets", bytes(&sets)),
            ("springs", bytes(&springs_in)),
        ],
        nd as u32,
    )
    .unwrap();
    // StictionSpring: rest (words 4..8), a rotated offset of two quadrature points.
    assert_records_close(
        "springs",
        &cast::<StictionSpring>(&out["springs"]),
        &springs,
        &words(&[(4, 4)]),
        |_, _| pos_tol,
    );
    let sets_in = sets.clone();
    let whole = PoolPage::whole(terms.len());
    set_rebuild_headers(
        &p, &sim.pos, &dirty, &plans, &pools.cp, &terms, &mut sets, &whole,
    );
    let out = run_kernel(
        &gpu,
        "set_rebuild_headers",
        &[
            ("rebuild", bytes(&[p])),
            ("pos", bytes(&sim.pos)),
            ("dirty", bytes(&dirty)),
            ("plans", bytes(&plans)),
            ("cp_pool", bytes(&pools.cp)),
            ("rebuild_terms", bytes(&terms)),
            ("sets", bytes(&sets_in)),
            ("term_page", bytes(&[whole])),
        ],
        nd as u32,
    )
    .unwrap();
    // ContactSet: eps (word 8), guards (13, 14) and the centre (20..24) are positions; f_ref (15)
    // a force; the quaternion (16..20) is the identity on both.
    assert_records_close(
        "set headers",
        &cast::<ContactSet>(&out["sets"]),
        &sets,
        &words(&[(8, 1), (13, 3), (20, 4)]),
        |_, w| if w == 15 { f0_tol } else { pos_tol },
    );
    // The twins did rebuild: live headers point into the new ranges, clean, with forces.
    let live = sets.iter().filter(|s| s.flags & SET_LIVE != 0).count();
    assert!(live > 50);
    assert!(sets
        .iter()
        .filter(|s| s.flags & SET_LIVE != 0)
        .all(|s| s.cp_off as usize >= np0 && s.flags & SET_DIRTY == 0));
    assert!(sets.iter().any(|s| s.f_ref > 0.0));
    // The CPU path: the same rebuild through AclContact's own driver.
    acl.rebuild_all(topo, &sim.pos).unwrap();
    assert_eq!(acl.sets(), &sets[..], "headers of the CPU path");
    assert_eq!(acl.all_springs(), &springs[..], "springs of the CPU path");
    let a = acl.pools();
    assert_eq!(a.cp, pools.cp);
    assert_eq!(a.f0, pools.f0);
    assert_eq!(a.dbar, pools.dbar);
    assert_eq!(a.m, pools.m);
    assert_eq!(a.k, pools.k);
    assert_eq!(a.watch, pools.watch);
    assert_eq!(a.watch_loc, pools.watch_loc);
    assert_eq!(&acl.step_pools().1[np0..len[0]], &fout[np0..]);
}

/// `set_rebuild_runs` then `set_rebuild_args` against their twins, exactly, on 150,000 plans laid
/// out as `pool_alloc` lays them out (blocks, terms and watched pairs appended in dirty order) over
/// 7 blocks pages and 5 terms pages (`set_rebuild`'s pairs) and 4 scratch pages by dirty index and 4
/// watch pools pages (`set_rebuild_watch`'s), with plans without watched pairs, zero-force plans (pages 0 and 0, wherever they are), deleted and
/// pointless plans (offsets left as they were: garbage), and plans past the last page (a pool that
/// overflowed). Every plan `set_rebuild` builds in a pair lies in that pair's run, the runs
/// together span fewer than twice the plans (the zero-force plans spread pair (0, 0)'s), a run
/// longer than a grid row gets a 2-D grid, and the runs' words are left 0 for the next round.
#[test]
fn set_rebuild_runs_and_args_match_twins() {
    use yarnsim::acl::pages::{PagePairs, RebuildRun, RUN_SLOT_BYTES};
    use yarnsim::acl::rebuild::{set_rebuild_args, set_rebuild_runs, RebuildPlan};
    let Some(gpu) = gpu_or_skip("set_rebuild_runs_and_args_match_twins") else {
        return;
    };
    const N: usize = 150_000;
    let pairs = PagePairs {
        block_stride: 950_000,
        term_stride: 500_000,
        block_pages: 7,
        term_pages: 5,
        scratch_stride: 40_000,
        watch_stride: 300_000,
        scratch_pages: 4,
        watch_pages: 4,
    };
    let mut rng = rng::Rng(0x5eed_0f2b_1d00);
    let (mut k, mut m, mut w) = (0u32, 0u32, 0u32);
    let mut plans = vec![RebuildPlan::default(); N];
    for p in plans.iter_mut() {
        p.n_cp = 9 + (rng.next_u64() % 4) as u32;
        p.touching = 1 + (rng.next_u64() % 30) as u32;
        p.k_off = k;
        p.term_off = m;
        // (A third of the plans without watched pairs: their page is 0.)
        p.n_watch = (rng.next_u64() % 48).saturating_sub(16) as u32;
        p.w_off = w;
        match rng.next_u64() % 20 {
            0 => {
                p.flags = yarnsim::acl::rebuild::PLAN_ZERO;
                p.k_off = 0;
            }
            1 => {
                p.flags = yarnsim::acl::rebuild::PLAN_DELETE;
                p.k_off = rng.next_u64() as u32;
                p.term_off = rng.next_u64() as u32;
            }
            2 => {
                p.n_cp = 0;
                p.k_off = rng.next_u64() as u32;
            }
            _ => {
                k += p.n_cp * (p.n_cp + 1) / 2;
                m += p.touching;
                w += p.n_watch;
            }
        }
    }
    // (Past the last blocks page: the pool overflowed.)
    assert!(k > pairs.block_stride * pairs.block_pages, "{k} blocks");
    let rebuild = RebuildParams {
        num_dirty: N as u32,
        ..Default::default()
    };
    let mut runs = vec![0u32; 2 * pairs.count() as usize];
    set_rebuild_runs(&rebuild, &pairs, &plans, &mut runs);
    let out = run_kernel(
        &gpu,
        "set_rebuild_runs",
        &[
            ("rebuild", bytes(&[rebuild])),
            ("page_pairs", bytes(&[pairs])),
            ("plans", bytes(&plans)),
            ("rebuild_runs", bytes(&vec![0u32; runs.len()])),
        ],
        N as u32,
    )
    .unwrap();
    assert_eq!(cast::<u32>(&out["rebuild_runs"]), runs, "rebuild_runs");
    let slot = (RUN_SLOT_BYTES / 4) as usize;
    let mut args = vec![0u32; pairs.count() as usize * slot];
    let runs_in = runs.clone();
    set_rebuild_args(&pairs, &mut runs, &mut args);
    let out = run_kernel(
        &gpu,
        "set_rebuild_args",
        &[
            ("page_pairs", bytes(&[pairs])),
            ("rebuild_runs", bytes(&runs_in)),
            ("rebuild_args", bytes(&vec![0u32; args.len()])),
        ],
        pairs.count(),
    )
    .unwrap();
    assert_eq!(cast::<u32>(&out["rebuild_args"]), args, "rebuild_args");
    assert_eq!(
        cast::<u32>(&out["rebuild_runs"]),
        runs,
        "rebuild_runs after"
    );
    assert!(runs.iter().all(|&w| w == 0));
    let run = |p: usize| -> RebuildRun {
        bytemuck::pod_read_unaligned(bytes(&args[p * slot..p * slot + 8]))
    };
    // Every built plan within its pairs' runs; what the runs span.
    let mut built = 0;
    for (t, p) in plans.iter().enumerate() {
        if p.flags & yarnsim::acl::rebuild::PLAN_DELETE != 0 || p.n_cp == 0 {
            continue;
        }
        // set_rebuild_watch's pair: the scratch page by dirty index, the watch page by w_off.
        let (s, wp) = (
            t as u32 / pairs.scratch_stride,
            if p.n_watch > 0 {
                p.w_off / pairs.watch_stride
            } else {
                0
            },
        );
        if wp < pairs.watch_pages {
            let r = run((pairs.rebuild_pairs() + s * pairs.watch_pages + wp) as usize);
            assert!(
                (r.first..r.end).contains(&(t as u32)),
                "plan {t} outside its watch run {r:?}"
            );
        }
        let (b, m) = if p.flags & yarnsim::acl::rebuild::PLAN_ZERO != 0 {
            (0, 0)
        } else {
            (p.k_off / pairs.block_stride, p.term_off / pairs.term_stride)
        };
        if b >= pairs.block_pages || m >= pairs.term_pages {
            continue;
        }
        built += 1;
        let r = run((b * pairs.term_pages + m) as usize);
        assert!(
            (r.first..r.end).contains(&(t as u32)),
            "plan {t} outside its run {r:?}"
        );
    }
    let spans: Vec<RebuildRun> = (0..pairs.count() as usize).map(run).collect();
    let span = |rs: &[RebuildRun]| -> u64 { rs.iter().map(|r| (r.end - r.first) as u64).sum() };
    let rebuild_pairs = pairs.rebuild_pairs() as usize;
    let (spanned, watch_spanned) = (span(&spans[..rebuild_pairs]), span(&spans[rebuild_pairs..]));
    let cells = |r: &RebuildRun| r.groups_x as u64 * r.groups_y as u64 * r.groups_z as u64;
    assert!(spans
        .iter()
        .all(|r| cells(r) >= (r.end - r.first) as u64 && r.groups_x <= 65_535));
    assert!(
        spans.iter().any(|r| r.groups_y > 1),
        "no run past a grid row: {spans:?}"
    );
    assert!(
        built > N / 2 && spanned < 2 * N as u64 && watch_spanned < 2 * N as u64,
        "{built} plans built, runs spanning {spanned} and {watch_spanned} (a grid of every plan per pair: {} and {})",
        N as u64 * pairs.rebuild_pairs() as u64,
        N as u64 * pairs.watch_pairs() as u64
    );
    // (The watch pools overflowed too.)
    assert!(
        w > pairs.watch_stride * pairs.watch_pages,
        "{w} watched pairs"
    );
    eprintln!(
        "{built} plans built in {} + {} pairs of pages; the runs span {spanned} and {watch_spanned} dirty indices",
        pairs.rebuild_pairs(),
        pairs.watch_pairs()
    );
}
