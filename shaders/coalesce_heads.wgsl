// coalesce_heads: the first pass of contact_coalesce. With T the scheduler's touching pairs (its
// sched_counters.touching count, at most that capacity and merge_counters.touching.capacity):
// thread t < T writes run_offsets[t] = 1 when touching pair t starts a run (t = 0, or its padded
// box does not overlap pair t − 1's), else 0, and clears the hull accumulator of slot
// sets.count + t (runs get the slots from sets.count on, at most T of them); run_offsets past T
// are left as they were (contact_coalesce reads none). Thread 0 records sets.count as
// coalesce_base for the next passes, and moves the scheduler's touching count into
// merge_counters.touching.count, where the later passes read it (acl_counts' scheduled phase,
// shared/acl_scheduled.wgsl; a dispatch of its own before 2026-12-06): no thread of this kernel
// reads that word. CPU twin: acl::coalesce::coalesce_heads.
// Each workgroup also writes the sum of its threads' flags into scan_groups
// (shared/scan_groups.wgsl), from which contact_coalesce numbers each pair's run itself
// (group_prefix: no scan dispatch between the two).
// One thread per touching slot, plus one (the touching capacity's grid); a workgroup wholly past
// the T pairs, but the first (whose thread 0 moves the counts), returns at once and writes no group
// sum (contact_coalesce's workgroups there return too): over a grown capacity, 65,536 workgroups
// of 8 barriers each cost 0.87 s a step on lavapipe, whatever T. Loop bound: write_scan_group's 8
// halving steps.

#import layout
#import merge
#import scan_groups
#import acl_scheduled

@group(0) @binding(0) var<uniform> acl_merge: MergeUniform;
@group(0) @binding(1) var<storage, read> touching: array<vec2<u32>>;
@group(0) @binding(2) var<storage, read_write> run_offsets: array<u32>;
@group(0) @binding(3) var<storage, read_write> set_hull: array<vec4<u32>>;
@group(0) @binding(4) var<storage, read_write> merge_counters: MergeCounters;
@group(0) @binding(5) var<storage, read_write> scan_groups: array<u32>;
@group(0) @binding(6) var<storage, read_write> sched_counters: SchedCounters;

// The pairs T, read once by the workgroup.
var<workgroup> wg_pairs: u32;

// Pair t's head flag (of n pairs), written to run_offsets[t] (nothing past the pairs).
fn heads_one(t: u32, n: u32) -> u32 {
    let base = atomicLoad(&merge_counters.sets.count);
    if t == 0u {
        merge_counters.coalesce_base = base;
        acl_scheduled_counts();
    }
    if t >= n {
        return 0u;
    }
    let p = touching[t];
    var head = 1u;
    if t > 0u {
        let q = touching[t - 1u];
        let bx = padded_box(p.x, p.y, acl_merge.alpha, acl_merge.nq);
        let prev = padded_box(q.x, q.y, acl_merge.alpha, acl_merge.nq);
        head = select(1u, 0u, boxes_overlap(prev, bx));
    }
    run_offsets[t] = head;
    let slot = base + t;
    if slot < merge_counters.sets.capacity {
        set_hull[slot] = vec4<u32>(0u);
    }
    return head;
}

@compute @workgroup_size(256)
fn coalesce_heads(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
    @builtin(local_invocation_index) lid: u32,
) {
    if lid == 0u {
        let scheduled = min(atomicLoad(&sched_counters.touching.count), sched_counters.touching.capacity);
        wg_pairs = min(scheduled, merge_counters.touching.capacity);
    }
    // (One value for the whole workgroup, so that its return keeps the barriers below in uniform
    // control flow.)
    let n = workgroupUniformLoad(&wg_pairs);
    let g = wid.y * nwg.x + wid.x;
    if g > 0u && g * 256u >= n {
        return;
    }
    let v = heads_one(thread_index(wid, nwg, lid, 256u), n);
    write_scan_group(wid, nwg, lid, v);
}
