// entries_keep: keep[e] = 1 when schedule entry e stays in the table (neither segment left a cell,
// or their cell boxes still meet), else 0; keep[num_entries] = 0 (the scan's trailing element, which
// becomes the number kept). CPU twin: sched::entries_keep. One thread per entry, plus one. No loops.

#import layout
#import sched

@group(0) @binding(0) var<storage, read> sched: SchedUniform;
@group(0) @binding(1) var<storage, read> cells: array<CellBox>;
@group(0) @binding(2) var<storage, read> motion: array<SegmentMotion>;
@group(0) @binding(3) var<storage, read> entries: array<SchedEntry>;
@group(0) @binding(4) var<storage, read_write> keep: array<u32>;

@compute @workgroup_size(256)
fn entries_keep(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
    @builtin(local_invocation_index) lid: u32,
) {
    let e = thread_index(wid, nwg, lid, 256u);
    let n = sched.num_entries;
    if e > n {
        return;
    }
    if e == n {
        keep[e] = 0u;
        return;
    }
    let a = entries[e].seg_a;
    let b = entries[e].seg_b;
    let stays = (motion[a].left == 0u && motion[b].left == 0u) || box_intersects(cells[a], cells[b]);
    keep[e] = select(0u, 1u, stays);
}
