// contact_gather: force[p] += the slot forces of every record naming control point p, in
// (candidate, slot) order: p finds its run in the sorted slots in use of gather_slots (the first
// counters.gather_slots) by binary search and sums along it (a gather, so no float atomics and
// bitwise the same every run). A run longer than MAX_GATHER raises ERROR_GATHER_FULL. CPU twin:
// contact::contact_gather. One thread per control point.
// Loop bound: the binary search (≤ 33 steps over n = counters.gather_slots ≤ 8 × capacity
// slots), then MAX_GATHER = 4096 slots of the point.

#import layout

const MAX_GATHER: u32 = 4096u;

@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read> gather_slots: array<KeyValue>;
@group(0) @binding(2) var<storage, read> contact_records: array<ContactRecord>;
@group(0) @binding(3) var<storage, read_write> counters: Counters;
@group(0) @binding(4) var<storage, read_write> force: array<vec4<f32>>;

@compute @workgroup_size(256)
fn contact_gather(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
    @builtin(local_invocation_index) lid: u32,
) {
    let p = thread_index(wid, nwg, lid, 256u);
    if p >= params.num_points {
        return;
    }
    let n = counters.gather_slots;
    // First slot with key >= p.
    var lo = 0u;
    var hi = n;
    for (var step = 0u; step < 33u && lo < hi; step = step + 1u) {
        let mid = lo + (hi - lo) / 2u;
        if gather_slots[mid].key_lo < p {
            lo = mid + 1u;
        } else {
            hi = mid;
        }
    }
    let f0 = force[p];
    var acc = f0.xyz;
    var t = lo;
    for (var k = 0u; t < n; k = k + 1u) {
        let s = gather_slots[t];
        if s.key_lo != p {
            break;
        }
        if k == MAX_GATHER {
            atomicOr(&counters.errors, ERROR_GATHER_FULL);
            break;
        }
        acc = acc + contact_records[s.value / 8u].force[s.value % 8u].xyz;
        t = t + 1u;
    }
    force[p] = vec4<f32>(acc, f0.w);
}
