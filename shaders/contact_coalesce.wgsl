// contact_coalesce: one new contact set per run of touching pairs, after coalesce_heads (no scan in
// between). Thread t < T (T as in coalesce_heads) finds its run r, the run heads up to and including
// pair t less one, from the group sums coalesce_heads wrote into scan_groups and a workgroup scan
// of the head flags in run_offsets (group_prefix); its slot is coalesce_base + r. A run's first
// pair (run_offsets[t] = 1) writes the new set's header (live, dirty, moved, identity rotation;
// its own box, for now), and every pair adds its padded box to the slot's hull accumulator
// (atomicMax on hull codes: the hull, in any order). The last pair sets sets.count =
// coalesce_base + runs; a slot at or beyond sets.capacity is not written and raises
// sets.overflow. CPU twin: acl::coalesce::contact_coalesce.
// One thread per touching slot; a workgroup wholly past the live count returns before the prefix,
// whose loads grow with the workgroup's index: over a grown capacity that passed every workgroup
// (the afghan's, 2²⁴ slots: 65,536 workgroups, some 2·10⁹ loads a dispatch) it was 11.6 s of a
// 36 s step on lavapipe, whatever the count. Loop bounds: 512 group-sum loads (at most 2²⁷ / 8
// touching slots fit a binding, 65,536 groups: a 2-D grid of 2 rows, whose workgroups past the
// end return at once and have indices below 2 × 65,535), 8 + 8 (group_prefix).

#import layout
#import merge
#import workgroup_sum
#import workgroup_scan
#import group_prefix

@group(0) @binding(0) var<uniform> acl_merge: MergeUniform;
@group(0) @binding(1) var<storage, read> touching: array<vec2<u32>>;
@group(0) @binding(2) var<storage, read> run_offsets: array<u32>;
@group(0) @binding(3) var<storage, read> scan_groups: array<u32>;
@group(0) @binding(4) var<storage, read_write> sets: array<ContactSet>;
@group(0) @binding(5) var<storage, read_write> set_hull: array<atomic<u32>>;
@group(0) @binding(6) var<storage, read_write> merge_counters: MergeCounters;

// The live touching count, read once by the workgroup.
var<workgroup> wg_live: u32;

@compute @workgroup_size(256)
fn contact_coalesce(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
    @builtin(local_invocation_index) lid: u32,
) {
    let t = thread_index(wid, nwg, lid, 256u);
    if lid == 0u {
        wg_live = min(atomicLoad(&merge_counters.touching.count), merge_counters.touching.capacity);
    }
    // (One value for the whole workgroup, so that its return keeps the barriers below in uniform
    // control flow.)
    let n = workgroupUniformLoad(&wg_live);
    if (wid.y * nwg.x + wid.x) * 256u >= n {
        return;
    }
    var head = 0u;
    if t < n {
        head = run_offsets[t];
    }
    // Every thread of the workgroup reaches the prefix (it has barriers).
    let runs = group_prefix(wid.y * nwg.x + wid.x, lid, head) + head;
    if t >= n {
        return;
    }
    let base = merge_counters.coalesce_base;
    let cap = merge_counters.sets.capacity;
    if t == n - 1u {
        let total = base + runs;
        atomicStore(&merge_counters.sets.count, total);
        if total > cap {
            atomicStore(&merge_counters.sets.overflow, 1u);
        }
    }
    let slot = base + runs - 1u;
    if slot >= cap {
        return;
    }
    let p = touching[t];
    let bx = padded_box(p.x, p.y, acl_merge.alpha, acl_merge.nq);
    if head != 0u {
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
