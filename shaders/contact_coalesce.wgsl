// contact_coalesce: one new contact set per run of touching pairs (run_offsets: the exclusive scan
// of coalesce_heads). Thread t < T (T as in coalesce_heads) belongs to run
// r = run_offsets[t + 1] − 1, slot coalesce_base + r: a run's first pair writes the new set's
// header (live, dirty, moved, identity rotation; its own box, for now), and every pair adds its
// padded box to the slot's hull accumulator (atomicMax on hull codes: the hull, in any order).
// The last pair sets sets.count = coalesce_base + runs; a slot at or beyond sets.capacity is not
// written and raises sets.overflow. CPU twin: acl::coalesce::contact_coalesce.
// One thread per touching pair. No loops.

#import layout
#import merge

@group(0) @binding(0) var<uniform> acl_merge: MergeUniform;
@group(0) @binding(1) var<storage, read> touching: array<vec2<u32>>;
@group(0) @binding(2) var<storage, read> run_offsets: array<u32>;
@group(0) @binding(3) var<storage, read_write> sets: array<ContactSet>;
@group(0) @binding(4) var<storage, read_write> set_hull: array<atomic<u32>>;
@group(0) @binding(5) var<storage, read_write> merge_counters: MergeCounters;

@compute @workgroup_size(256)
fn contact_coalesce(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
    @builtin(local_invocation_index) lid: u32,
) {
    let t = thread_index(wid, nwg, lid, 256u);
    let tcap = merge_counters.touching.capacity;
    let n = min(atomicLoad(&merge_counters.touching.count), tcap);
    if t >= n {
        return;
    }
    let base = merge_counters.coalesce_base;
    let cap = merge_counters.sets.capacity;
    if t == n - 1u {
        let total = base + run_offsets[n];
        atomicStore(&merge_counters.sets.count, total);
        if total > cap {
            atomicStore(&merge_counters.sets.overflow, 1u);
        }
    }
    let r = run_offsets[t + 1u] - 1u;
    let slot = base + r;
    if slot >= cap {
        return;
    }
    let p = touching[t];
    let bx = padded_box(p.x, p.y, acl_merge.alpha, acl_merge.nq);
    if run_offsets[t + 1u] != run_offsets[t] {
        var s: ContactSet;
        s.bx = bx;
        s.flags = SET_LIVE | SET_DIRTY | SET_MOVED;
        s.quat = vec4<f32>(0.0, 0.0, 0.0, 1.0);
        sets[slot] = s;
    }
    let code = hull_code(bx);
    atomicMax(&set_hull[4u * slot], code.x);
    atomicMax(&set_hull[4u * slot + 1u], code.y);
    atomicMax(&set_hull[4u * slot + 2u], code.z);
    atomicMax(&set_hull[4u * slot + 3u], code.w);
}
