// exact_contact_forces: per candidate segment pair c = [sa, sb], every quadrature pair (ka, kb)
// closer than 2r and not excluded (same yarn and arc_excluded on the arc positions in qpts.w)
// adds its penalty force −∂E/∂y through the Catmull-Rom weights onto the 8 control-point slots (cp
// of sa, then of sb), κw = k_contact · weight_a · weight_b. A touching candidate writes its record
// (slot forces, energy, touching count; others leave theirs alone) and adds its count to
// counters.touching_pairs.count; touch_offsets[c] = 1 if it touches, else 0 (also for
// count <= c <= capacity, so the scan of capacity + 1 elements numbers the touching records).
// Skipped without changing any decision: a block of pairs the exclusion rule excludes as a whole
// (block_excluded), and points of sa outside the box of sb's points grown by 2r·PREFILTER.
// A non-finite slot force raises ERROR_CONTACT_NOT_FINITE with its point in first_bad_point.
// CPU twin: contact::exact_contact_forces.
// One thread per slot of counters.candidate_pairs.capacity, plus one; the workgroup reads the
// candidate count once and adds its touching pairs to the count once (every thread made an atomic
// operation on one address before: hundreds of thousands a step on a large scene).
// Loop bound: b points for the box, then b × b quadrature pairs (b = params.quadrature ≤ 64, so
// ≤ 4160), then 8 slots.

#import layout
#import penalty

@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read> segments: array<Segment>;
@group(0) @binding(2) var<storage, read> candidates: array<vec2<u32>>;
@group(0) @binding(3) var<storage, read> qpts: array<vec4<f32>>;
@group(0) @binding(4) var<storage, read> quad_weights: array<vec4<f32>>;
@group(0) @binding(5) var<storage, read> seg_contact: array<SegmentContact>;
@group(0) @binding(6) var<storage, read_write> contact_records: array<ContactRecord>;
@group(0) @binding(7) var<storage, read_write> touch_offsets: array<u32>;
@group(0) @binding(8) var<storage, read_write> counters: Counters;

// The workgroup's copy of the candidate count, and the sum of its candidates' touching pairs.
var<workgroup> wg_count: u32;
var<workgroup> wg_touching: atomic<u32>;

@compute @workgroup_size(256)
fn exact_contact_forces(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
    @builtin(local_invocation_index) lid: u32,
) {
    if lid == 0u {
        wg_count = atomicLoad(&counters.candidate_pairs.count);
        atomicStore(&wg_touching, 0u);
    }
    workgroupBarrier();
    let c = thread_index(wid, nwg, lid, 256u);
    let cap_c = counters.candidate_pairs.capacity;
    if c <= cap_c {
        let touching = candidate_forces(c, min(wg_count, cap_c));
        if touching != 0u {
            atomicAdd(&wg_touching, touching);
        }
    }
    workgroupBarrier();
    if lid == 0u {
        let touching = atomicLoad(&wg_touching);
        if touching != 0u {
            atomicAdd(&counters.touching_pairs.count, touching);
        }
    }
}

// Candidate slot c ≤ capacity of `count` live ones: its record and touch_offsets[c]; the number of
// its touching pairs.
fn candidate_forces(c: u32, count: u32) -> u32 {
    if c >= count {
        touch_offsets[c] = 0u;
        return 0u;
    }
    let pair = candidates[c];
    let sa = pair.x;
    let sb = pair.y;
    let b = params.quadrature;
    let r = params.radius;
    let four_r2 = 4.0 * r * r;
    let kw = params.k_contact * seg_contact[sa].weight * seg_contact[sb].weight;
    let same_yarn = segments[sa].yarn == segments[sb].yarn;
    let loop_len = seg_contact[sa].loop_len;
    let arc = params.exclusion_arc;
    if same_yarn && block_excluded(qpts[sa * b].w, qpts[sa * b + b - 1u].w, qpts[sb * b].w,
        qpts[sb * b + b - 1u].w, loop_len, arc) {
        touch_offsets[c] = 0u;
        return 0u;
    }
    var lo = qpts[sb * b].xyz;
    var hi = lo;
    for (var kb = 1u; kb < b; kb = kb + 1u) {
        let y = qpts[sb * b + kb].xyz;
        lo = min(lo, y);
        hi = max(hi, y);
    }
    let margin = 2.0 * r * PREFILTER;
    lo = lo - vec3<f32>(margin);
    hi = hi + vec3<f32>(margin);
    var force: array<vec3<f32>, 8>;
    for (var m = 0u; m < 8u; m = m + 1u) {
        force[m] = vec3<f32>(0.0);
    }
    var energy = 0.0;
    var touching = 0u;
    for (var ka = 0u; ka < b; ka = ka + 1u) {
        let qa = qpts[sa * b + ka];
        let yi = qa.xyz;
        if any(yi < lo) || any(yi > hi) {
            continue;
        }
        for (var kb = 0u; kb < b; kb = kb + 1u) {
            let qb = qpts[sb * b + kb];
            let x = yi - qb.xyz;
            let s = x.x * x.x + x.y * x.y + x.z * x.z;
            if s >= four_r2 {
                continue;
            }
            if same_yarn && arc_excluded(qa.w, qb.w, loop_len, arc) {
                continue;
            }
            let p = penalty_f_df(s, four_r2);
            energy = energy + kw * p.x;
            touching = touching + 1u;
            let g = x * (2.0 * kw * p.y);
            let wa = quad_weights[ka];
            let wb = quad_weights[kb];
            for (var m = 0u; m < 4u; m = m + 1u) {
                force[m] = force[m] - g * wa[m];
                force[4u + m] = force[4u + m] + g * wb[m];
            }
        }
    }
    if touching == 0u {
        touch_offsets[c] = 0u;
        return 0u;
    }
    var rec: ContactRecord;
    for (var m = 0u; m < 8u; m = m + 1u) {
        rec.force[m] = vec4<f32>(force[m], 0.0);
        if !finite3(force[m]) {
            var p: u32;
            if m < 4u {
                p = segments[sa].cp[m];
            } else {
                p = segments[sb].cp[m - 4u];
            }
            atomicOr(&counters.errors, ERROR_CONTACT_NOT_FINITE);
            atomicMin(&counters.first_bad_point, p);
        }
    }
    rec.energy = energy;
    rec.touching = touching;
    rec._pad = array<u32, 2>(0u, 0u);
    contact_records[c] = rec;
    touch_offsets[c] = 1u;
    return touching;
}
