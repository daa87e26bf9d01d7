// coalesce_springs: after contact_coalesce, the 4 stiction springs of every new set (set slots
// coalesce_base .. min(sets.count, sets.capacity)) cleared, inactive: a new set has none until its
// first rebuild, and the buffer's slots may still hold a compacted-away set's springs.
// CPU twin: acl::coalesce::coalesce_springs. One thread per spring slot (4 per set slot). No loops.

#import layout

@group(0) @binding(0) var<storage, read_write> springs: array<StictionSpring>;
@group(0) @binding(1) var<storage, read_write> merge_counters: MergeCounters;

@compute @workgroup_size(256)
fn coalesce_springs(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
    @builtin(local_invocation_index) lid: u32,
) {
    let e = thread_index(wid, nwg, lid, 256u);
    let n = min(atomicLoad(&merge_counters.sets.count), merge_counters.sets.capacity);
    if e < 4u * merge_counters.coalesce_base || e >= 4u * n {
        return;
    }
    var z: StictionSpring;
    springs[e] = z;
}
