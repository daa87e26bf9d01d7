// contact_slots: the gather table before sorting. Slot j = 8r + m of the table, for each of the
// first min(records, counters.touching_records.capacity) touching candidates, belongs to the r-th
// touching candidate c — found by binary search of the scanned touch_offsets (the largest c with
// touch_offsets[c] <= r) — and names the control point of its slot m (cp of segment a for m < 4,
// of b after) as its key, with value 8c + m; the slots past them are not written (the sort and
// contact_gather stop at the count). Thread 0 records the number of touching records
// touch_offsets[candidate capacity] and its overflow flag in counters.touching_records, and the
// slots in use, 8 · min(records, capacity), in counters.gather_slots (the sort's length). Sorted
// stably by key, the table lists every point's slots in (candidate, slot) order.
// CPU twin: contact::contact_slots. One thread per slot of 8 × counters.touching_records.capacity.
// Loop bound: the binary search, ceil(log2(candidate capacity + 1)) ≤ 32 steps.

#import layout

@group(0) @binding(0) var<storage, read> segments: array<Segment>;
@group(0) @binding(1) var<storage, read> candidates: array<vec2<u32>>;
@group(0) @binding(2) var<storage, read> touch_offsets: array<u32>;
@group(0) @binding(3) var<storage, read_write> counters: Counters;
@group(0) @binding(4) var<storage, read_write> gather_slots: array<KeyValue>;

@compute @workgroup_size(256)
fn contact_slots(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
    @builtin(local_invocation_index) lid: u32,
) {
    let j = thread_index(wid, nwg, lid, 256u);
    let cap_c = counters.candidate_pairs.capacity;
    let cap_t = counters.touching_records.capacity;
    let total = touch_offsets[cap_c];
    if j == 0u {
        atomicStore(&counters.touching_records.count, total);
        counters.gather_slots = 8u * min(total, cap_t);
        if total > cap_t {
            atomicStore(&counters.touching_records.overflow, 1u);
        }
    }
    if j >= 8u * min(total, cap_t) {
        return;
    }
    let r = j / 8u;
    let m = j % 8u;
    var lo = 0u;
    var hi = cap_c;
    for (var step = 0u; step < 32u && hi - lo > 1u; step = step + 1u) {
        let mid = (lo + hi) / 2u;
        if touch_offsets[mid] <= r {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    let pair = candidates[lo];
    var key: u32;
    if m < 4u {
        key = segments[pair.x].cp[m];
    } else {
        key = segments[pair.y].cp[m - 4u];
    }
    gather_slots[j] = KeyValue(key, 0u, 8u * lo + m, 0u);
}
