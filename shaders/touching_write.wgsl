// touching_write: every entry with a touching count writes its touching quadrature pairs [i, j] (the
// pairs schedule_process counted: not owned by a set (set_lookup), not excluded, d² < 4r², in
// (ka, kb) order) from its first slot in `touching`, the touching counts of the entries before it:
// from the group sums touching_count wrote into scan_groups and a workgroup scan of the counts
// (group_prefix; no scan dispatch between the two), so all pairs are in table order. A slot at or
// beyond sched_counters.touching.capacity is not written and raises the overflow flag.
// CPU twin: sched::touching_write (with sched::ProcessBuffers). One thread per entry slot (the
// entry capacity's grid); a workgroup wholly past the live entries returns before the prefix, whose
// loads grow with the workgroup's index.
// Loop bounds: 32 + MAX_LOOKUP × 121 (owned_bits) + 121 (pairs): fixed; 128 group-sum loads (a
// binding holds at most 2²⁷ / 16 = 2²³ entries, 32,768 groups), 8 + 8 (group_prefix).

#import layout
#import vec
#import penalty
#import sched
#import sched_bits
#import sched_lookup
#import workgroup_sum
#import workgroup_scan
#import group_prefix

@group(0) @binding(0) var<storage, read> sched: SchedUniform;
@group(0) @binding(1) var<storage, read> qpts: array<vec4<f32>>;
@group(0) @binding(2) var<storage, read> seg_contact: array<SegmentContact>;
@group(0) @binding(3) var<storage, read> set_lookup: array<u32>;
@group(0) @binding(4) var<storage, read> entries: array<SchedEntry>;
@group(0) @binding(5) var<storage, read> scan_groups: array<u32>;
@group(0) @binding(6) var<storage, read_write> touching: array<vec2<u32>>;
@group(0) @binding(7) var<storage, read_write> sched_counters: SchedCounters;

@compute @workgroup_size(256)
fn touching_write(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
    @builtin(local_invocation_index) lid: u32,
) {
    // (Uniform: sched is read-only storage.)
    if (wid.y * nwg.x + wid.x) * 256u >= sched.num_entries {
        return;
    }
    let e = thread_index(wid, nwg, lid, 256u);
    var en: SchedEntry;
    var count = 0u;
    if e < sched.num_entries {
        en = entries[e];
        count = entry_touching(en);
    }
    // Every thread of the workgroup reaches the prefix (it has barriers).
    var slot = group_prefix(wid.y * nwg.x + wid.x, lid, count);
    if count == 0u {
        return;
    }
    let a = en.seg_a;
    let b = en.seg_b;
    let q = sched.quadrature;
    let owned = owned_bits(a, b, q);
    let r = sched.radius;
    let four_r2 = 4.0 * r * r;
    let mixed = (en.bin_flags & ENTRY_MIXED) != 0u;
    let loop_len = seg_contact[a].loop_len;
    let cap = sched_counters.touching.capacity;
    var overflow = false;
    for (var ka = 0u; ka < q; ka = ka + 1u) {
        for (var kb = 0u; kb < q; kb = kb + 1u) {
            let d2 = entry_pair_d2(a, b, ka, kb, owned.bits, mixed, loop_len);
            if d2 >= 0.0 && d2 < four_r2 {
                if slot < cap {
                    touching[slot] = vec2<u32>(a * q + ka, b * q + kb);
                } else {
                    overflow = true;
                }
                slot = slot + 1u;
            }
        }
    }
    if overflow {
        atomicStore(&sched_counters.touching.overflow, 1u);
    }
}
