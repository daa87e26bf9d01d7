// merge_hull: with the final labels (half merge_round.round % 2 of `labels`, round = the rounds
// recorded), every live set x clears its moved flag and, when its label r ≠ x, adds its box to
// r's hull accumulator (atomicMax on hull codes: the component's hull in any order; a non-empty
// accumulator marks r as the root of a component of several sets). Thread 0 raises more_rounds
// when the last recorded round still changed a label, and empties the moved list (`moved` = 0)
// for merge_apply, after this pass's search has read the last pass's; with merge_round.clear_edges
// (a pass the chain follows with moved_overlap_write, which appends at edges.count) it clears
// edges.count, read by the label rounds before and by nothing after.
// CPU twin: acl::coalesce::merge_hull.
// One thread per set slot. No loops.

#import layout
#import merge

@group(0) @binding(0) var<uniform> acl_merge: MergeUniform;
@group(0) @binding(1) var<uniform> merge_round: MergeRound;
@group(0) @binding(2) var<storage, read> labels: array<u32>;
@group(0) @binding(3) var<storage, read_write> sets: array<ContactSet>;
@group(0) @binding(4) var<storage, read_write> set_hull: array<atomic<u32>>;
@group(0) @binding(5) var<storage, read_write> merge_counters: MergeCounters;

@compute @workgroup_size(256)
fn merge_hull(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
    @builtin(local_invocation_index) lid: u32,
) {
    let x = thread_index(wid, nwg, lid, 256u);
    let cap = merge_counters.sets.capacity;
    if x == 0u {
        if atomicLoad(&merge_counters.label_rounds) >= merge_round.round {
            atomicStore(&merge_counters.more_rounds, 1u);
        }
        atomicStore(&merge_counters.moved, 0u);
        if merge_round.clear_edges != 0u {
            atomicStore(&merge_counters.edges.count, 0u);
        }
    }
    if x >= min(atomicLoad(&merge_counters.sets.count), cap) {
        return;
    }
    let s = sets[x];
    if (s.flags & SET_LIVE) == 0u {
        return;
    }
    if (s.flags & SET_MOVED) != 0u {
        sets[x].flags = s.flags & ~SET_MOVED;
    }
    let r = labels[(merge_round.round % 2u) * cap + x];
    if r != x {
        let code = hull_code(s.bx);
        atomicMax(&set_hull[4u * r], code.x);
        atomicMax(&set_hull[4u * r + 1u], code.y);
        atomicMax(&set_hull[4u * r + 2u], code.z);
        atomicMax(&set_hull[4u * r + 3u], code.w);
    }
}
