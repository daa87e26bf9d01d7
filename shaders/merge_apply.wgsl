// merge_apply: every live set x whose label is not x is merged away (the slot is cleared; merged
// and the pool garbage of its model are counted); a root (non-empty hull accumulator) takes the
// hull of its own box and the accumulator as its box, becomes dirty, and moved when the box grew
// (another merge pass is needed), listed in moved_sets at a slot taken with atomicAdd on `moved`
// (0 since merge_hull; the list's order varies, and the next pass's moved_overlap_write depends
// on none). A root is one slot, so the list holds at most sets.capacity entries.
// CPU twin: acl::coalesce::merge_apply. One thread per set slot. No loops.

#import layout
#import merge

@group(0) @binding(0) var<uniform> acl_merge: MergeUniform;
@group(0) @binding(1) var<uniform> merge_round: MergeRound;
@group(0) @binding(2) var<storage, read> labels: array<u32>;
@group(0) @binding(3) var<storage, read> set_hull: array<vec4<u32>>;
@group(0) @binding(4) var<storage, read_write> sets: array<ContactSet>;
@group(0) @binding(5) var<storage, read_write> merge_counters: MergeCounters;
@group(0) @binding(6) var<storage, read_write> moved_sets: array<u32>;

@compute @workgroup_size(256)
fn merge_apply(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
    @builtin(local_invocation_index) lid: u32,
) {
    let x = thread_index(wid, nwg, lid, 256u);
    let cap = merge_counters.sets.capacity;
    if x >= min(atomicLoad(&merge_counters.sets.count), cap) {
        return;
    }
    var s = sets[x];
    if (s.flags & SET_LIVE) == 0u {
        return;
    }
    if labels[(merge_round.round % 2u) * cap + x] != x {
        let n = s.n_cp;
        atomicAdd(&merge_counters.merged, 1u);
        atomicAdd(&merge_counters.garbage_cp, n);
        if (s.flags & SET_ZERO) == 0u {
            atomicAdd(&merge_counters.garbage_k, n * (n + 1u) / 2u);
        }
        atomicAdd(&merge_counters.garbage_w, s.n_watch);
        var empty: ContactSet;
        sets[x] = empty;
        return;
    }
    let code = set_hull[x];
    if code.x == 0u {
        return;
    }
    let h = box_hull(s.bx, hull_code(code));
    if any(h != s.bx) {
        s.bx = h;
        s.flags = s.flags | SET_MOVED;
        let slot = atomicAdd(&merge_counters.moved, 1u);
        if slot < arrayLength(&moved_sets) {
            moved_sets[slot] = x;
        }
    }
    s.flags = s.flags | SET_DIRTY;
    sets[x] = s;
}
