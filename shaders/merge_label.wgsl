// merge_label: one Jacobi round of min-label propagation over the overlap pairs, labels read from
// half merge_round.round % 2 of `labels` (L) and written to the other (N, which holds the labels of
// the round before, never below L's): N[x] = min(L[x], L[L[x]]) (pointer jumping) for every set
// slot x, and for every pair (a, b) with L[a] ≠ L[b], the smaller label m into N[a], N[b] and
// N[max(L[a], L[b])] (hooking) (atomicMin: the same minimum in any order). A round that lowers a label raises label_rounds to round + 1; a round
// after one that changed nothing returns at once (both halves then hold the fixed point). Labels
// only decrease and name a set of the same component, so the fixed point is each component's
// smallest slot. The host records a fixed number of rounds R; when the last one still changed a
// label, merge_hull raises more_rounds and the host reruns with more (the round count is not
// bounded by log2(sets) in general). CPU twin: acl::coalesce::merge_label.
// One thread per set slot, then one per edge slot. No loops.

#import layout

@group(0) @binding(0) var<uniform> acl_merge: MergeUniform;
@group(0) @binding(1) var<uniform> merge_round: MergeRound;
@group(0) @binding(2) var<storage, read> edges: array<vec2<u32>>;
@group(0) @binding(3) var<storage, read_write> labels: array<atomic<u32>>;
@group(0) @binding(4) var<storage, read_write> merge_counters: MergeCounters;

@compute @workgroup_size(256)
fn merge_label(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
    @builtin(local_invocation_index) lid: u32,
) {
    let t = thread_index(wid, nwg, lid, 256u);
    let r = merge_round.round;
    if r > 0u && atomicLoad(&merge_counters.label_rounds) < r {
        return;
    }
    let cap = merge_counters.sets.capacity;
    let src = (r % 2u) * cap;
    let dst = cap - src;
    var changed = false;
    if t < cap {
        if t >= min(atomicLoad(&merge_counters.sets.count), cap) {
            return;
        }
        let l = atomicLoad(&labels[src + t]);
        let c = min(l, atomicLoad(&labels[src + l]));
        atomicMin(&labels[dst + t], c);
        changed = c < l;
    } else {
        let e = t - cap;
        if e >= min(atomicLoad(&merge_counters.edges.count), merge_counters.edges.capacity) {
            return;
        }
        let p = edges[e];
        let la = atomicLoad(&labels[src + p.x]);
        let lb = atomicLoad(&labels[src + p.y]);
        if la != lb {
            // Both ends take the smaller label, and so does the set the larger label names
            // (hooking: the sets that point to it follow at the next jump).
            let lo = min(la, lb);
            atomicMin(&labels[dst + p.x], lo);
            atomicMin(&labels[dst + p.y], lo);
            atomicMin(&labels[dst + max(la, lb)], lo);
            changed = true;
        }
    }
    if changed {
        atomicMax(&merge_counters.label_rounds, r + 1u);
    }
}
