// segment_rebuilds: for --color updates, every live set k < acl_sizes.num_sets (the compacted table)
// rebuilt at this step (rebuilt_step == rebuild.step) adds 1 to rebuild_counts of each segment of its
// box's u range, and of each segment of its v range outside the u range (acl/outputs.rs; CPU twin
// acl::outputs::segment_rebuilds). Integer atomics: the sums are order-free.
// One thread per set slot. Loop bound per thread: 2 × 1,024 segments (a box spans at most as many
// segments per range as it has control points, at most acl::evaluate::MAX_SET_POINTS = 1,024 on the
// GPU; longer ranges are cut there).

#import layout
#import acl

@group(0) @binding(0) var<uniform> rebuild: RebuildParams;
@group(0) @binding(1) var<storage, read> sets: array<ContactSet>;
@group(0) @binding(2) var<storage, read_write> acl_sizes: AclSizes;
@group(0) @binding(3) var<storage, read_write> rebuild_counts: array<atomic<u32>>;

const SEGMENT_REBUILDS_MAX_SPAN: u32 = 1024u;

@compute @workgroup_size(256)
fn segment_rebuilds(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
    @builtin(local_invocation_index) lid: u32,
) {
    let k = thread_index(wid, nwg, lid, 256u);
    if k >= acl_sizes.num_sets || k >= arrayLength(&sets) {
        return;
    }
    let s = sets[k];
    if (s.flags & SET_LIVE) == 0u || s.rebuilt_step != rebuild.step {
        return;
    }
    let b = rebuild.b;
    let nseg = arrayLength(&rebuild_counts);
    let u0 = s.bx.x / b;
    let u1 = min(s.bx.y / b, u0 + SEGMENT_REBUILDS_MAX_SPAN - 1u);
    let v0 = s.bx.z / b;
    let v1 = min(s.bx.w / b, v0 + SEGMENT_REBUILDS_MAX_SPAN - 1u);
    for (var seg = u0; seg <= u1; seg = seg + 1u) {
        if seg < nseg {
            atomicAdd(&rebuild_counts[seg], 1u);
        }
    }
    for (var seg = v0; seg <= v1; seg = seg + 1u) {
        if seg < nseg && (seg < u0 || seg > u1) {
            atomicAdd(&rebuild_counts[seg], 1u);
        }
    }
}
