// set_rebuild: the linear model of each dirty set (acl::rebuild::set_rebuild, CPU twin; see the
// module doc), after pool_alloc and set_rebuild_points. One workgroup of REBUILD_WG = 256 threads
// per dirty set t < rebuild.num_dirty (plan t; a deleted plan, one without points, or one beyond
// MAX_REBUILD_WORK — pool_alloc flags it — is left alone; a zero-force plan gets f0 = 0):
// 1. the set-local index of each raw control point of the new box (workgroup memory);
// 2. the touching pairs of the touching hull plan.touch_bx (members with d² < 4r² that touch by
//    the compensated depth, acl_pair), listed in box order with their point terms at
//    rebuild_terms[plan.term_off ..]: each thread counts the touching pairs of its contiguous
//    chunk of the hull, a workgroup scan of the counts gives each chunk its place, each thread
//    writes its chunk's terms (a short list ends with i = NONE);
// 3. after a storage barrier, one thread per point p sums f0_p = −Σ c_s ∇E and one thread per
//    block (p, q) of the upper triangle sums K̄_pq = −Σ c_s c_t H over the list in order, each
//    pair's matching slots s, then t, ascending: the order in which the twin's
//    model::accumulate_pair adds into each entry, so the sums are the twin's (bitwise where the
//    compiler fuses no multiply-add).
// The K̄ blocks pool and the pair terms may be in pages (src/acl/pages.rs): the kernel is
// dispatched once per pair of a blocks page and a terms page (uniform rebuild_pages), over the run
// of dirty indices set_rebuild_runs found for the pair (rebuild_run: workgroup k takes plan
// first + k, up to end; unpaged, the round's grid and the run of all), and a workgroup builds its
// plan only in the dispatch of the plan's two pages (a zero-force plan's are both page 0); it
// writes nothing past either page's length (a pool that overflowed: pool_alloc flags it and the
// step reruns with more room).
// Bounds (n = plan.n_cp ≤ MAX_BOX_CPS, the hull ≤ MAX_BOX_PAIRS pairs, W = rebuild_work ≤
// MAX_REBUILD_WORK = 16,384 so the list has at most W entries): loop bound per thread 2 × 512
// (first occurrences) + 2 × 512 (local indices) + 2 × 256 (two passes over a chunk) + 8 (scan) +
// W (points) + W + 514 × 10 (blocks and their row search) = 39,556 < 65,535.

#import layout
#import vec
#import penalty
#import acl
#import acl_pair
#import acl_rebuild
#import acl_rebuild_box
#import acl_rebuild_pairs
#import pool_page

@group(0) @binding(0) var<uniform> rebuild: RebuildParams;
@group(0) @binding(1) var<uniform> acl: AclUniform;
@group(0) @binding(2) var<storage, read> qpts: array<vec4<f32>>;
@group(0) @binding(3) var<storage, read> segments: array<Segment>;
@group(0) @binding(4) var<storage, read> seg_contact: array<SegmentContact>;
@group(0) @binding(5) var<storage, read> plans: array<RebuildPlan>;
@group(0) @binding(6) var<storage, read_write> rebuild_terms: array<RebuildTerm>;
@group(0) @binding(7) var<storage, read_write> k_pool: array<SymBlock>;
@group(0) @binding(8) var<storage, read_write> f0_pool: array<vec4<f32>>;
// The blocks page bound, then the terms page. (One binding: lavapipe, Mesa 22.3.6, ends the
// process with "stack smashing detected" running a kernel with four uniform bindings, though it
// offers 15.)
@group(0) @binding(9) var<uniform> rebuild_pages: array<PoolPage, 2>;
@group(0) @binding(10) var<storage, read> rebuild_run: RebuildRun;

var<workgroup> raw: array<u32, MAX_BOX_CPS>;
var<workgroup> is_first: array<u32, MAX_BOX_CPS>;
var<workgroup> locs: array<u32, MAX_BOX_CPS>;
var<workgroup> counts: array<u32, REBUILD_WG>;
var<workgroup> w_total: u32;

// Whether hull pair e (row-major in tb, nv columns) touches: a member with d² < 4r², and touching
// by the compensated depth; its terms into *pp.
fn touching_pair(tb: vec4<u32>, nv: u32, e: u32, pp: ptr<function, PairTerms>) -> bool {
    let i = tb.x + e / nv;
    let j = tb.z + e % nv;
    let r = rebuild.r;
    let d2 = member_d2(i, j);
    if d2 < 0.0 || !(d2 < 4.0 * r * r) {
        return false;
    }
    let b = rebuild.b;
    let kw = rebuild.stiffness * seg_contact[i / b].weight * seg_contact[j / b].weight;
    // rebuild._pad is 0: the run-time zero the compensated term needs.
    *pp = point_pair_compensated(qpts[i].xyz, qpts[j].xyz, kw, r, rebuild._pad);
    return (*pp).touching;
}

// The slot (0–3; 4: none) of the 4 packed in words w0, w1 whose set-local index is p (written
// out, so that it adds no loop iterations).
fn half_match(w0: u32, w1: u32, p: u32) -> u32 {
    if (w0 & 0xffffu) == p {
        return 0u;
    }
    if (w0 >> 16u) == p {
        return 1u;
    }
    if (w1 & 0xffffu) == p {
        return 2u;
    }
    if (w1 >> 16u) == p {
        return 3u;
    }
    return 4u;
}

// The slots of a term's 8 whose set-local index is p: x among slots 0–3, y among slots 4–7 less
// 4 (4: none). Within a half the 4 points are distinct, so each half matches at most once.
fn slot_match(loc: vec4<u32>, p: u32) -> vec2<u32> {
    return vec2<u32>(half_match(loc.x, loc.y, p), half_match(loc.z, loc.w, p));
}

// k += s H (model::sym_add_scaled).
fn add_scaled(k: ptr<function, array<f32, 6>>, h: array<f32, 6>, s: f32) {
    (*k)[0] = (*k)[0] + s * h[0];
    (*k)[1] = (*k)[1] + s * h[1];
    (*k)[2] = (*k)[2] + s * h[2];
    (*k)[3] = (*k)[3] + s * h[3];
    (*k)[4] = (*k)[4] + s * h[4];
    (*k)[5] = (*k)[5] + s * h[5];
}

// The row p of block m of the upper triangle of n × n (tri_index(n, p, q) = m): the last row
// whose first block is ≤ m (10 halvings cover n ≤ MAX_BOX_CPS).
fn tri_row(n: u32, m: u32) -> u32 {
    var lo = 0u;
    var hi = n;
    for (var it = 0u; it < 10u && hi - lo > 1u; it = it + 1u) {
        let mid = lo + (hi - lo) / 2u;
        if tri_index(n, mid, mid) <= m {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    return lo;
}

@compute @workgroup_size(256)
fn set_rebuild(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
    @builtin(local_invocation_index) lid: u32,
) {
    let t = rebuild_run.first + wid.y * nwg.x + wid.x;
    if t >= rebuild.num_dirty || t >= rebuild_run.end {
        return;
    }
    let plan = plans[t];
    let n = plan.n_cp;
    let block_page = rebuild_pages[0];
    let term_page = rebuild_pages[1];
    if !plan_built(plan) || !page_holds(block_page, plan.k_off) {
        return;
    }
    let o = plan.cp_off;
    if (plan.flags & PLAN_ZERO) != 0u {
        if term_page.page != 0u {
            return;
        }
        for (var p = lid; p < n; p = p + REBUILD_WG) {
            f0_pool[o + p] = vec4<f32>(0.0);
        }
        return;
    }
    if rebuild_work(n, plan.touching) > MAX_REBUILD_WORK || !page_holds(term_page, plan.term_off) {
        return;
    }
    // The plan's terms in the terms page bound (its list and end mark within plan.touching).
    let tl = plan.term_off - page_base(term_page);
    if tl + plan.touching > term_page.len {
        return;
    }
    let b = rebuild.b;
    let nb = plan.new_bx;
    // 1. Local indices of the raw points (nraw ≤ MAX_BOX_CPS: set_rebuild_size gave the plan
    // points only then).
    let nraw = box_raw_points(nb, lid, REBUILD_WG);
    for (var e = lid; e < nraw; e = e + REBUILD_WG) {
        locs[e] = local_index(raw[e], nraw);
    }
    // 2. The touching pairs, in box order.
    let tb = plan.touch_bx;
    let nv = tb.w - tb.z + 1u;
    let np = (tb.y - tb.x + 1u) * nv;
    let chunk = (np + REBUILD_WG - 1u) / REBUILD_WG;
    let e0 = min(lid * chunk, np);
    let e1 = min(e0 + chunk, np);
    var pp: PairTerms;
    var cnt = 0u;
    for (var e = e0; e < e1; e = e + 1u) {
        if touching_pair(tb, nv, e, &pp) {
            cnt = cnt + 1u;
        }
    }
    counts[lid] = cnt;
    workgroupBarrier();
    for (var d = 1u; d < REBUILD_WG; d = d * 2u) {
        var v = counts[lid];
        if lid >= d {
            v = v + counts[lid - d];
        }
        workgroupBarrier();
        counts[lid] = v;
        workgroupBarrier();
    }
    if lid == REBUILD_WG - 1u {
        w_total = counts[lid];
    }
    let nt = min(workgroupUniformLoad(&w_total), plan.touching);
    var slot = counts[lid] - cnt;
    let nsu = nb.y / b - nb.x / b + 1u;
    for (var e = e0; e < e1; e = e + 1u) {
        if !touching_pair(tb, nv, e, &pp) || slot >= nt {
            continue;
        }
        let i = tb.x + e / nv;
        let j = tb.z + e % nv;
        let ra = 4u * (i / b - nb.x / b);
        let rb = 4u * (nsu + j / b - nb.z / b);
        var term: RebuildTerm;
        term.loc = vec4<u32>(
            locs[ra] | (locs[ra + 1u] << 16u),
            locs[ra + 2u] | (locs[ra + 3u] << 16u),
            locs[rb] | (locs[rb + 1u] << 16u),
            locs[rb + 2u] | (locs[rb + 3u] << 16u),
        );
        term.grad = vec4<f32>(pp.grad_i, 0.0);
        let h = pp.hess_ii;
        term.hess = array<f32, 6>(h[0][0], h[1][1], h[2][2], h[1][0], h[2][0], h[2][1]);
        term.i = i;
        term.j = j;
        rebuild_terms[tl + slot] = term;
        slot = slot + 1u;
    }
    if lid == 0u && nt < plan.touching {
        var end: RebuildTerm;
        end.i = NONE;
        end.j = NONE;
        rebuild_terms[tl + nt] = end;
    }
    storageBarrier();
    workgroupBarrier();
    // 3. Per point, then per block, over the list in order.
    for (var p = lid; p < n; p = p + REBUILD_WG) {
        var f = vec3<f32>(0.0);
        for (var e = 0u; e < nt; e = e + 1u) {
            let term = rebuild_terms[tl + e];
            let m = slot_match(term.loc, p);
            let g = term.grad.xyz;
            if m.x < 4u {
                f = f - g * acl.weights[term.i % b][m.x];
            }
            if m.y < 4u {
                f = f - g * -acl.weights[term.j % b][m.y];
            }
        }
        f0_pool[o + p] = vec4<f32>(f, 0.0);
    }
    let kb = plan.k_off - page_base(block_page);
    let nblk = select(0u, tri_len(n), kb + tri_len(n) <= block_page.len);
    for (var m = lid; m < nblk; m = m + REBUILD_WG) {
        let p = tri_row(n, m);
        let q = p + (m - tri_index(n, p, p));
        var k = array<f32, 6>(0.0, 0.0, 0.0, 0.0, 0.0, 0.0);
        for (var e = 0u; e < nt; e = e + 1u) {
            let term = rebuild_terms[tl + e];
            let mp = slot_match(term.loc, p);
            let mq = slot_match(term.loc, q);
            if (mp.x == 4u && mp.y == 4u) || (mq.x == 4u && mq.y == 4u) {
                continue;
            }
            let wa = acl.weights[term.i % b];
            let wb = -acl.weights[term.j % b];
            let h = term.hess;
            // Slot pairs (s, t) in order: s = the i-side match, then the j-side one; t likewise.
            if mp.x < 4u {
                let cs = wa[mp.x];
                if mq.x < 4u {
                    add_scaled(&k, h, -(cs * wa[mq.x]));
                }
                if mq.y < 4u {
                    add_scaled(&k, h, -(cs * wb[mq.y]));
                }
            }
            if mp.y < 4u {
                let cs = wb[mp.y];
                if mq.x < 4u {
                    add_scaled(&k, h, -(cs * wa[mq.x]));
                }
                if mq.y < 4u {
                    add_scaled(&k, h, -(cs * wb[mq.y]));
                }
            }
        }
        k_pool[kb + m].k = k;
    }
}
