// release_mark: slot t (below the total, release_offsets[num_released] after the scan) finds its
// release by binary search in release_offsets and its segment pair (sa, sb) in the release's
// rectangle; a pair sa < sb that lost owned quadrature pairs (in `before`, not in `after`) flags its
// schedule entry (binary search in the sorted table) due, with its bound cleared. Slots flagging one
// entry write identical values. CPU twin: sched::release_mark. One thread per slot (dispatched for
// an upper bound of the total; the tail returns).
// Loop bound: 32 halvings (release search) + 32 (entry search) + b² (box_bits, twice): fixed.

#import layout
#import sched
#import sched_bits

@group(0) @binding(0) var<storage, read> sched: SchedUniform;
@group(0) @binding(1) var<storage, read> released: array<Release>;
@group(0) @binding(2) var<storage, read> release_offsets: array<u32>;
@group(0) @binding(3) var<storage, read_write> entries: array<SchedEntry>;

@compute @workgroup_size(256)
fn release_mark(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
    @builtin(local_invocation_index) lid: u32,
) {
    let t = thread_index(wid, nwg, lid, 256u);
    let nr = sched.num_released;
    if t >= release_offsets[nr] {
        return;
    }
    // The last release whose first slot is at or before t.
    var lo = 0u;
    var hi = nr;
    for (var it = 0u; it < 32u && lo < hi; it = it + 1u) {
        let mid = (lo + hi) / 2u;
        if release_offsets[mid] <= t {
            lo = mid + 1u;
        } else {
            hi = mid;
        }
    }
    let r = lo - 1u;
    let rel = released[r];
    let b = sched.quadrature;
    let rect = release_rect(rel.before, b, sched.num_segments);
    let k = t - release_offsets[r];
    let sa = rect.x + k / rect.z;
    let sb = rect.y + k % rect.z;
    if sa >= sb {
        return;
    }
    let lost = box_bits(rel.before, sa, sb, b) & ~box_bits(rel.after, sa, sb, b);
    if all(lost == vec4<u32>(0u)) {
        return;
    }
    // The entry (sa, sb) in the table sorted by (seg_a, seg_b).
    var elo = 0u;
    var ehi = sched.num_entries;
    for (var it = 0u; it < 32u && elo < ehi; it = it + 1u) {
        let mid = (elo + ehi) / 2u;
        let m = entries[mid];
        if m.seg_a < sa || (m.seg_a == sa && m.seg_b < sb) {
            elo = mid + 1u;
        } else {
            ehi = mid;
        }
    }
    if elo < sched.num_entries && entries[elo].seg_a == sa && entries[elo].seg_b == sb {
        entries[elo].d = -1.0;
        entries[elo].bin_flags = entries[elo].bin_flags | ENTRY_DUE;
    }
}
