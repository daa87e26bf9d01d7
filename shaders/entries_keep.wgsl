// entries_keep: keep[e] = 1 when schedule entry e stays in the table (neither segment left a cell,
// or their cell boxes still meet), else 0; keep[num_entries] = 0 (the scan's trailing element, which
// becomes the number kept). CPU twin: sched::entries_keep.
// Each workgroup also writes the sum of its threads' counts into scan_groups
// (shared/scan_groups.wgsl): the scan is grouped, its block sums written here.
// One thread per entry slot, plus one (the entry capacity's grid); a workgroup wholly past the
// trailing element returns at once and writes no group sum (entries_compact's workgroups there
// return too). Loop bound: write_scan_group's 8 halving steps.

#import layout
#import sched
#import scan_groups

@group(0) @binding(0) var<storage, read> sched: SchedUniform;
@group(0) @binding(1) var<storage, read> cells: array<CellBox>;
@group(0) @binding(2) var<storage, read> motion: array<SegmentMotion>;
@group(0) @binding(3) var<storage, read> entries: array<SchedEntry>;
@group(0) @binding(4) var<storage, read_write> keep: array<u32>;
@group(0) @binding(5) var<storage, read_write> scan_groups: array<u32>;

@compute @workgroup_size(256)
fn entries_keep(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
    @builtin(local_invocation_index) lid: u32,
) {
    let n = sched.num_entries;
    // (Uniform: sched is read-only storage.)
    if (wid.y * nwg.x + wid.x) * 256u > n {
        return;
    }
    let e = thread_index(wid, nwg, lid, 256u);
    var v = 0u;
    if e < n {
        let a = entries[e].seg_a;
        let b = entries[e].seg_b;
        let stays = (motion[a].left == 0u && motion[b].left == 0u) || box_intersects(cells[a], cells[b]);
        v = select(0u, 1u, stays);
        keep[e] = v;
    } else if e == n {
        keep[e] = 0u;
    }
    write_scan_group(wid, nwg, lid, v);
}
