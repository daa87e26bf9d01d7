// set_compact: every live set k < rebuild.num_sets and its 4 stiction springs written to slot
// set_dest[k] (the scanned set_compact_count) of sets_out / springs_out, its moved flag cleared
// (the step's last merge invocation ends at its last overlap search, before merge_hull would clear
// it: acl::merge_gpu::MergeGpu::dispatches_to_last_search), and the live sets'
// touching pairs added to acl_sizes.touching (a workgroup's sum, then one integer atomic per
// workgroup: an integer sum, so the total does not depend on the order); a live set still dirty
// (the step's rebuild rounds were too few: it reruns with more) raises ACL_SIZES_MORE_ROUNDS in
// acl_sizes.errors. Thread 0 also ends the step's counts, from the scan's total and before anything
// else reads them (acl_step_counts): the verdict on the last round's merge invocation
// (last_round_merge_verdict), and the live sets' number set_dest[num_sets] as the table length
// (compacted_counts). CPU twin: acl::sets::set_compact. One thread per set; loop bounds: 4
// (springs), 8 (workgroup_sum).

#import layout
#import acl
#import workgroup_sum
#import acl_step_counts

@group(0) @binding(0) var<uniform> rebuild: RebuildParams;
@group(0) @binding(1) var<storage, read> sets: array<ContactSet>;
@group(0) @binding(2) var<storage, read> springs: array<StictionSpring>;
@group(0) @binding(3) var<storage, read> set_dest: array<u32>;
@group(0) @binding(4) var<storage, read_write> sets_out: array<ContactSet>;
@group(0) @binding(5) var<storage, read_write> springs_out: array<StictionSpring>;
@group(0) @binding(6) var<storage, read_write> acl_sizes: AclSizes;
@group(0) @binding(7) var<storage, read_write> merge_counters: MergeCounters;

@compute @workgroup_size(256)
fn set_compact(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
    @builtin(local_invocation_index) lid: u32,
) {
    let k = thread_index(wid, nwg, lid, 256u);
    var touching = 0u;
    if k == 0u {
        last_round_merge_verdict();
        compacted_counts(set_dest[rebuild.num_sets]);
    }
    if k < rebuild.num_sets {
        let s = sets[k];
        if (s.flags & SET_LIVE) != 0u {
            touching = s.touching;
            if (s.flags & SET_DIRTY) != 0u {
                atomicOr(&acl_sizes.errors, ACL_SIZES_MORE_ROUNDS);
            }
            let d = set_dest[k];
            var out = s;
            out.flags = s.flags & ~SET_MOVED;
            sets_out[d] = out;
            for (var m = 0u; m < 4u; m = m + 1u) {
                springs_out[4u * d + m] = springs[4u * k + m];
            }
        }
    }
    // Every thread of the workgroup reaches the sum (it has barriers).
    let total = workgroup_sum(lid, touching);
    if lid == 0u && total != 0u {
        atomicAdd(&acl_sizes.touching, total);
    }
}
