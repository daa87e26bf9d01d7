// set_rebuild_size: pass 1 of ACL's rebuild (acl::rebuild::set_rebuild_size, CPU twin; see its
// module doc). One workgroup of 64 threads per dirty set t < rebuild.num_dirty (set dirty[t]):
// 1. every member pair (i < j of the set's box, not excluded) measured, the threads striding over the
//    box in row-major order; workgroup atomics give the smallest d² (ε), the touching count, the
//    touching hull and the first non-finite pair in box order (all order-free: min, max, sum);
// 2. the set's fate (error, deleted, zero-force), its new box (hull ± α) and n_cp, the number of
//    distinct control points of the new box's segments (a first-occurrence count in workgroup memory);
// 3. the watched pairs: MAX_WATCH + 1 rounds, each picking the smallest key (|d − 2r|, box index)
//    above the last one among the members in the new box (a two-word workgroup minimum: the box index
//    orders pairs as (i, j) does); the first MAX_WATCH fill plan_watch[t·MAX_WATCH + slot] and
//    plan_watch_loc, the next one gives guard_far. A thread scans its share of the box again only
//    when its own candidate was picked, and a round has two barriers (it scanned every round, with
//    four: on lavapipe this kernel was half of a tiny swatch's ACL step).
// The watched-pair scratch may be in pages by dirty index (src/acl/pages.rs, uniform scratch_page: a
// page holds scratch_page.stride dirty sets, MAX_WATCH slots each): the kernel is dispatched once per
// page, and a workgroup acts only for a dirty set of its page (its plan included), at slot
// (t − page_base) · MAX_WATCH of the page. Why: the first round rebuilds every set, and 512 bytes of
// scratch a set slot passed a binding (277 MB for the afghan).
// Reads the quadrature points qpts (kernel quadrature_points: xyz the point, computed as
// RebuildTables::quad_point does; w its arc position). Writes plans[t] (offsets 0: pool_alloc gives
// them).
// Bounds: a box of at most MAX_BOX_PAIRS = 65,536 (i, j) positions and MAX_BOX_CPS = 512 raw control
// points (4 per segment of its two ranges); a larger set gets PLAN_TOO_LARGE, its old box and
// nothing else (pool_alloc raises POOL_BOX_TOO_LARGE, and the GPU step stops naming the limit: the
// set has no model and would stay dirty in every round). Loop bound per thread: 1,024 (measure) + 33 × 1,024
// (selection: at most a scan per round, when the thread's candidate is picked every time) + 8 × 512
// (distinct count) + 8 × 512 (local indices) = 43,008 < 65,535.

#import layout
#import vec
#import penalty
#import acl
#import acl_rebuild
#import acl_rebuild_box
#import acl_rebuild_pairs
#import pool_page

const RB_WG: u32 = 64u;
const INF_BITS: u32 = 0x7f800000u;

@group(0) @binding(0) var<uniform> rebuild: RebuildParams;
@group(0) @binding(1) var<storage, read> qpts: array<vec4<f32>>;
@group(0) @binding(2) var<storage, read> segments: array<Segment>;
@group(0) @binding(3) var<storage, read> seg_contact: array<SegmentContact>;
@group(0) @binding(4) var<storage, read> sets: array<ContactSet>;
@group(0) @binding(5) var<storage, read> dirty: array<u32>;
@group(0) @binding(6) var<storage, read_write> plans: array<RebuildPlan>;
@group(0) @binding(7) var<storage, read_write> plan_watch: array<WatchPair>;
@group(0) @binding(8) var<storage, read_write> plan_watch_loc: array<WatchLoc>;
@group(0) @binding(9) var<uniform> scratch_page: PoolPage;

var<workgroup> w_box: vec4<u32>;
var<workgroup> w_min: atomic<u32>;
var<workgroup> w_touching: atomic<u32>;
var<workgroup> w_i0: atomic<u32>;
var<workgroup> w_i1: atomic<u32>;
var<workgroup> w_j0: atomic<u32>;
var<workgroup> w_j1: atomic<u32>;
var<workgroup> w_bad: atomic<u32>;
var<workgroup> w_distinct: atomic<u32>;
// The selection's two-word minimum, in three slots used in turn (round k uses slot k mod 3, and
// thread 0 clears the next round's slot while this one is taken): every thread reads its round's
// slot after the round's last barrier, and nobody writes that slot again until two rounds later.
var<workgroup> w_key_hi: array<atomic<u32>, 3>;
var<workgroup> w_key_lo: array<atomic<u32>, 3>;
// Atomics copied out by thread 0, so every thread reads them as uniform values.
var<workgroup> w_stats: array<u32, 8>;
var<workgroup> sel: array<vec2<u32>, 33>;
var<workgroup> raw: array<u32, MAX_BOX_CPS>;
var<workgroup> is_first: array<u32, MAX_BOX_CPS>;


// sets::padded_box.
fn padded_box(i0: u32, i1: u32, j0: u32, j1: u32, alpha: u32, nq: u32) -> vec4<u32> {
    var bx = vec4<u32>(
        select(0u, i0 - alpha, i0 >= alpha),
        min(i1 + alpha, nq - 1u),
        select(0u, j0 - alpha, j0 >= alpha),
        min(j1 + alpha, nq - 1u),
    );
    bx.z = max(bx.z, bx.x + 1u);
    bx.y = min(bx.y, bx.w - 1u);
    return bx;
}

fn write_plan(t: u32, p: RebuildPlan) {
    plans[t] = p;
}

@compute @workgroup_size(64)
fn set_rebuild_size(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
    @builtin(local_invocation_index) lid: u32,
) {
    let t = wid.y * nwg.x + wid.x;
    // (Workgroup-uniform: every thread returns, or none.)
    if t >= rebuild.num_dirty || !page_holds(scratch_page, t) {
        return;
    }
    // The set's first slot in the page of watched pairs.
    let slot0 = (t - page_base(scratch_page)) * MAX_WATCH;
    let b = rebuild.b;
    let r = rebuild.r;
    let four_r2 = 4.0 * r * r;
    // +∞ as a run-time value (a constant one would be folded, and naga rejects infinite constants).
    var inf_bits = INF_BITS;
    let inf = bitcast<f32>(inf_bits);
    if lid == 0u {
        w_box = sets[dirty[t]].bx;
        atomicStore(&w_min, INF_BITS);
        atomicStore(&w_touching, 0u);
        atomicStore(&w_i0, NONE);
        atomicStore(&w_i1, 0u);
        atomicStore(&w_j0, NONE);
        atomicStore(&w_j1, 0u);
        atomicStore(&w_bad, NONE);
        atomicStore(&w_distinct, 0u);
    }
    let bx = workgroupUniformLoad(&w_box);
    let nu = bx.y - bx.x + 1u;
    let nv = bx.w - bx.z + 1u;
    var plan: RebuildPlan;
    if nu > MAX_BOX_PAIRS || nv > MAX_BOX_PAIRS || nu * nv > MAX_BOX_PAIRS {
        if lid == 0u {
            plan.flags = PLAN_TOO_LARGE;
            plan.new_bx = bx;
            write_plan(t, plan);
        }
        return;
    }
    let np = nu * nv;
    // 1. Measure.
    for (var e = lid; e < np; e = e + RB_WG) {
        let i = bx.x + e / nv;
        let j = bx.z + e % nv;
        let d2 = member_d2(i, j);
        if d2 < 0.0 {
            continue;
        }
        if !(d2 <= 3.4028235e38) {
            atomicMin(&w_bad, e);
            continue;
        }
        atomicMin(&w_min, bitcast<u32>(d2));
        if d2 < four_r2 {
            atomicAdd(&w_touching, 1u);
            atomicMin(&w_i0, i);
            atomicMax(&w_i1, i);
            atomicMin(&w_j0, j);
            atomicMax(&w_j1, j);
        }
    }
    workgroupBarrier();
    if lid == 0u {
        w_stats[0] = atomicLoad(&w_min);
        w_stats[1] = atomicLoad(&w_touching);
        w_stats[2] = atomicLoad(&w_i0);
        w_stats[3] = atomicLoad(&w_i1);
        w_stats[4] = atomicLoad(&w_j0);
        w_stats[5] = atomicLoad(&w_j1);
        w_stats[6] = atomicLoad(&w_bad);
    }
    let st = workgroupUniformLoad(&w_stats);
    if st[6] != NONE {
        if lid == 0u {
            plan.flags = PLAN_ERROR;
            plan.error_point = segments[(bx.x + st[6] / nv) / b].cp[1];
            write_plan(t, plan);
        }
        return;
    }
    plan.eps = sqrt(bitcast<f32>(st[0]));
    plan.touching = st[1];
    let zero = st[1] == 0u;
    if zero && !(plan.eps <= rebuild.delete_distance * r) {
        if lid == 0u {
            plan.flags = PLAN_DELETE | PLAN_ZERO;
            write_plan(t, plan);
        }
        return;
    }
    var nb = bx;
    if !zero {
        nb = padded_box(st[2], st[3], st[4], st[5], rebuild.padding, rebuild.nq);
    }
    plan.new_bx = nb;
    plan.touch_bx = vec4<u32>(st[2], st[3], st[4], st[5]);
    plan.flags = select(0u, PLAN_ZERO, zero);
    // 2. The new box's control points.
    let nraw = raw_count(nb);
    if nraw > MAX_BOX_CPS {
        if lid == 0u {
            var big: RebuildPlan;
            big.flags = PLAN_TOO_LARGE;
            big.new_bx = bx;
            write_plan(t, big);
        }
        return;
    }
    for (var e = lid; e < nraw; e = e + RB_WG) {
        raw[e] = raw_cp(nb, e);
    }
    workgroupBarrier();
    for (var e = lid; e < nraw; e = e + RB_WG) {
        let f = raw_is_first(e);
        is_first[e] = f;
        atomicAdd(&w_distinct, f);
    }
    if lid == 0u {
        atomicStore(&w_key_hi[0], NONE);
        atomicStore(&w_key_lo[0], NONE);
    }
    workgroupBarrier();
    plan.n_cp = atomicLoad(&w_distinct);
    // 3. Watched pairs: MAX_WATCH + 1 rounds of the smallest key above the last. Each thread keeps
    //    the smallest of its own keys above the last pick (`best`); after a round only the thread
    //    whose key was picked looks for its next one (keys are unique, so every other thread's
    //    `best` is still its smallest above the new pick). Two barriers a round.
    var prev = vec2<u32>(0u, 0u);
    var have_prev = false;
    var best = vec2<u32>(NONE, NONE);
    var stale = true;
    for (var rnd = 0u; rnd <= MAX_WATCH; rnd = rnd + 1u) {
        let slot = rnd % 3u;
        if stale {
            best = vec2<u32>(NONE, NONE);
            for (var e = lid; e < np; e = e + RB_WG) {
                let i = bx.x + e / nv;
                let j = bx.z + e % nv;
                if i < nb.x || i > nb.y || j < nb.z || j > nb.w {
                    continue;
                }
                let d2 = member_d2(i, j);
                if d2 < 0.0 {
                    continue;
                }
                let key = vec2<u32>(bitcast<u32>(abs(sqrt(d2) - 2.0 * r)), e);
                let above = !have_prev || key.x > prev.x || (key.x == prev.x && key.y > prev.y);
                let below = key.x < best.x || (key.x == best.x && key.y < best.y);
                if above && below {
                    best = key;
                }
            }
            stale = false;
        }
        atomicMin(&w_key_hi[slot], best.x);
        workgroupBarrier();
        let hi = atomicLoad(&w_key_hi[slot]);
        if best.x == hi {
            atomicMin(&w_key_lo[slot], best.y);
        }
        if lid == 0u {
            // The next round's slot: last read two rounds ago, before this round's first barrier.
            let next = (rnd + 1u) % 3u;
            atomicStore(&w_key_hi[next], NONE);
            atomicStore(&w_key_lo[next], NONE);
        }
        workgroupBarrier();
        let k = vec2<u32>(hi, atomicLoad(&w_key_lo[slot]));
        if lid == 0u {
            sel[rnd] = k;
        }
        // (No pick left: every best is NONE and stays so.)
        stale = k.y != NONE && best.x == k.x && best.y == k.y;
        prev = k;
        have_prev = true;
    }
    // sel is read below by other threads than the one that wrote it.
    workgroupBarrier();
    var nw = 0u;
    for (var s = 0u; s < MAX_WATCH; s = s + 1u) {
        if sel[s].y != NONE {
            nw = nw + 1u;
        }
    }
    plan.n_watch = nw;
    plan.guard_near = inf;
    if nw > 0u {
        plan.guard_near = bitcast<f32>(sel[0].x);
    }
    let grew = nb.x < bx.x || nb.y > bx.y || nb.z < bx.z || nb.w > bx.w;
    if grew {
        plan.guard_far = 0.0;
    } else if sel[MAX_WATCH].y != NONE {
        plan.guard_far = bitcast<f32>(sel[MAX_WATCH].x);
    } else {
        plan.guard_far = inf;
    }
    if lid < nw {
        let e = sel[lid].y;
        let i = bx.x + e / nv;
        let j = bx.z + e % nv;
        let sa = i / b;
        let sb = j / b;
        let d = sqrt(member_d2(i, j));
        var w: WatchPair;
        w.i = i;
        w.j = j;
        w.kw = rebuild.stiffness * seg_contact[sa].weight * seg_contact[sb].weight;
        w.gap = d - 2.0 * r;
        plan_watch[slot0 + lid] = w;
        var loc: WatchLoc;
        for (var c = 0u; c < 8u; c = c + 1u) {
            var cp: u32;
            if c < 4u {
                cp = segments[sa].cp[c];
            } else {
                cp = segments[sb].cp[c - 4u];
            }
            let l = local_index(cp, nraw);
            loc.loc[c / 2u] = loc.loc[c / 2u] | (l << (16u * (c % 2u)));
        }
        plan_watch_loc[slot0 + lid] = loc;
    }
    if lid == 0u {
        write_plan(t, plan);
    }
}
