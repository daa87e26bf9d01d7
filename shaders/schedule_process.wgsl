// schedule_process: per schedule entry, the due test (flagged due, bin ≤ sched.bins_due, or a
// monitored segment), and for a due entry the examination: the bound lowered by the relative movement
// of its segments since the bound was set (windows of its bin); when it falls below 1e-4 r, the
// processing: distances of its quadrature pairs not owned by a contact set (set_lookup) nor excluded
// (entries of mixed class: the same-yarn rule on the points' arc positions), counting the touching
// ones (d² < 4r²) into the entry's flags and the new bound the smallest gap over the others; then the
// next bin, with the bound converted to the window's start when binned off-phase. A non-due entry's
// touching count is cleared. Counts: examined, processed, lookup_overflow, touching.count.
// CPU twin: sched::schedule_process (with sched::ProcessBuffers). One thread per entry; the
// workgroup reads the monitored count once and adds its examined entries to the count once.
// Loop bound: 32 + MAX_LOOKUP × 121 (owned_bits) + 11 + 121 (pairs): fixed.

#import layout
#import vec
#import penalty
#import sched
#import sched_bits
#import sched_lookup

@group(0) @binding(0) var<storage, read> sched: SchedUniform;
@group(0) @binding(1) var<storage, read> qpts: array<vec4<f32>>;
@group(0) @binding(2) var<storage, read> seg_contact: array<SegmentContact>;
@group(0) @binding(3) var<storage, read> windows: array<Interval>;
@group(0) @binding(4) var<storage, read> motion: array<SegmentMotion>;
@group(0) @binding(5) var<storage, read> set_lookup: array<u32>;
@group(0) @binding(6) var<storage, read_write> entries: array<SchedEntry>;
@group(0) @binding(7) var<storage, read_write> sched_counters: SchedCounters;

fn window(l: u32, s: u32) -> Interval {
    return windows[l * sched.num_segments + s];
}

// The workgroup's copy of sched_counters.monitored, and its count of examined entries.
var<workgroup> wg_monitored: u32;
var<workgroup> wg_examined: atomic<u32>;

@compute @workgroup_size(256)
fn schedule_process(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
    @builtin(local_invocation_index) lid: u32,
) {
    // One read of the monitored count per workgroup, one addition to the examined count: a thread
    // each made them hundreds of thousands of atomic operations on one address per step (the
    // relaxed scarf at rest: 348,651 entries, some 23,000 examined).
    if lid == 0u {
        wg_monitored = atomicLoad(&sched_counters.monitored);
        atomicStore(&wg_examined, 0u);
    }
    workgroupBarrier();
    let any_mon = wg_monitored > 0u;
    let e = thread_index(wid, nwg, lid, 256u);
    if e < sched.num_entries && process_entry(e, any_mon) {
        atomicAdd(&wg_examined, 1u);
    }
    workgroupBarrier();
    if lid == 0u {
        let examined = atomicLoad(&wg_examined);
        if examined != 0u {
            atomicAdd(&sched_counters.examined, examined);
        }
    }
}

// Entry e: the due test, the examination and the processing; true when it was due (examined).
fn process_entry(e: u32, any_mon: bool) -> bool {
    var en = entries[e];
    let a = en.seg_a;
    let b = en.seg_b;
    let due = (en.bin_flags & ENTRY_DUE) != 0u || (en.bin_flags & ENTRY_BIN) <= sched.bins_due
        || (any_mon && (motion[a].mon | motion[b].mon) != 0u);
    if !due {
        if (en.bin_flags & ENTRY_TOUCH) != 0u {
            en.bin_flags = en.bin_flags & ~ENTRY_TOUCH;
            entries[e] = en;
        }
        return false;
    }
    let r = sched.radius;
    var d = en.d;
    if d < SCHED_FAR && (sched.switches & SCHED_NO_MOVEMENT_UPDATE) == 0u {
        let l = en.bin_flags & ENTRY_BIN;
        d = d - rel_norm(window(l, a), window(l, b));
    }
    var count = 0u;
    if d < 1e-4 * r {
        let q = sched.quadrature;
        let owned = owned_bits(a, b, q);
        if owned.overflow {
            atomicAdd(&sched_counters.lookup_overflow, 1u);
        }
        let four_r2 = 4.0 * r * r;
        let mixed = (en.bin_flags & ENTRY_MIXED) != 0u;
        let loop_len = seg_contact[a].loop_len;
        var min_d2 = 0.0;
        var found = false;
        for (var ka = 0u; ka < q; ka = ka + 1u) {
            for (var kb = 0u; kb < q; kb = kb + 1u) {
                let d2 = entry_pair_d2(a, b, ka, kb, owned.bits, mixed, loop_len);
                if d2 < 0.0 {
                    continue;
                }
                if d2 < four_r2 {
                    count = count + 1u;
                } else if d2 <= SCHED_FAR && (!found || d2 < min_d2) {
                    min_d2 = d2;
                    found = true;
                }
            }
        }
        if found {
            d = sqrt(min_d2) - 2.0 * r;
        } else {
            d = SCHED_FAR;
        }
        atomicAdd(&sched_counters.processed, 1u);
        if count > 0u {
            atomicAdd(&sched_counters.touching.count, count);
        }
    }
    let m = rel_norm(motion[a].mv1, motion[b].mv1);
    let acc = rel_norm(motion[a].mv2_ref, motion[b].mv2_ref) + sched.omega;
    let l = sched_bin(d, m, acc, sched.max_bin);
    var dw = d;
    if d < SCHED_FAR && l > sched.bins_due && (sched.switches & SCHED_NO_WINDOW_CORRECTION) == 0u {
        dw = d - rel_norm(window(l, a), window(l, b));
    }
    en.d = dw;
    en.bin_flags = (en.bin_flags & ENTRY_MIXED) | l | (count << ENTRY_TOUCH_SHIFT);
    entries[e] = en;
    return true;
}
