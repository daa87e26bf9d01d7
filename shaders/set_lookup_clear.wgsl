// set_lookup_clear: the start of the contact sets' lookup (sched::lookup; the chain is clear →
// set_lookup_count → exclusive scan of lookup_offsets → set_lookup_write → set_lookup_sort):
// lookup_offsets[x] = 0 for x ≤ num_segments, the per-segment item counts set_lookup_count adds to.
// CPU twin: sched::lookup::set_lookup_clear. One thread per segment, plus one. No loops.

#import layout

@group(0) @binding(0) var<uniform> acl_lookup: LookupUniform;
@group(0) @binding(1) var<storage, read_write> lookup_offsets: array<u32>;

@compute @workgroup_size(256)
fn set_lookup_clear(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
    @builtin(local_invocation_index) lid: u32,
) {
    let x = thread_index(wid, nwg, lid, 256u);
    if x <= acl_lookup.num_segments && x < arrayLength(&lookup_offsets) {
        lookup_offsets[x] = 0u;
    }
}
