// coalesce_box: the last pass of contact_coalesce: every new set (slots coalesce_base ..
// min(sets.count, sets.capacity)) takes its run's hull from the accumulator as its box, and its 4
// stiction springs are cleared (inactive: a new set has none until its first rebuild, and the
// buffer's slots may still hold a compacted-away set's springs). CPU twin:
// acl::coalesce::coalesce_box. One thread per set slot. Loop bound: 4 (the springs).

#import layout
#import merge

@group(0) @binding(0) var<uniform> acl_merge: MergeUniform;
@group(0) @binding(1) var<storage, read> set_hull: array<vec4<u32>>;
@group(0) @binding(2) var<storage, read_write> sets: array<ContactSet>;
@group(0) @binding(3) var<storage, read_write> merge_counters: MergeCounters;
@group(0) @binding(4) var<storage, read_write> springs: array<StictionSpring>;

@compute @workgroup_size(256)
fn coalesce_box(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
    @builtin(local_invocation_index) lid: u32,
) {
    let s = thread_index(wid, nwg, lid, 256u);
    let n = min(atomicLoad(&merge_counters.sets.count), merge_counters.sets.capacity);
    if s < merge_counters.coalesce_base || s >= n {
        return;
    }
    sets[s].bx = hull_code(set_hull[s]);
    var z: StictionSpring;
    for (var e = 0u; e < 4u; e = e + 1u) {
        springs[4u * s + e] = z;
    }
}
