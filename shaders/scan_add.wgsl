// scan_add: the down-sweep of the exclusive prefix sum (src/scan.rs; CPU twin scan::scan_add):
// each workgroup replaces its block of 256 elements of level `scan_pass.level` (level 0:
// scan_data, k ≥ 1: scan_partials at scan_pass.offset) by their exclusive prefix sum plus the
// block's offset, scan_partials[next_offset + block] (already scanned; 0 for a one-block level).
// One thread per element; loop bound: 8 doubling steps of the workgroup scan (fixed).

#import layout

@group(0) @binding(0) var<uniform> scan_pass: ScanPass;
@group(0) @binding(1) var<storage, read_write> scan_data: array<u32>;
@group(0) @binding(2) var<storage, read_write> scan_partials: array<u32>;

var<workgroup> part: array<u32, 256>;

@compute @workgroup_size(256)
fn scan_add(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
    @builtin(local_invocation_index) lid: u32,
) {
    let i = thread_index(wid, nwg, lid, 256u);
    let block = wid.y * nwg.x + wid.x;
    let inside = i < scan_pass.n;
    var v = 0u;
    if inside {
        if scan_pass.level == 0u {
            v = scan_data[i];
        } else {
            v = scan_partials[scan_pass.offset + i];
        }
    }
    // Inclusive Hillis–Steele scan of the block in workgroup memory.
    part[lid] = v;
    workgroupBarrier();
    for (var off = 1u; off < 256u; off = off << 1u) {
        var t = 0u;
        if lid >= off {
            t = part[lid - off];
        }
        workgroupBarrier();
        part[lid] = part[lid] + t;
        workgroupBarrier();
    }
    if !inside {
        return;
    }
    var base = 0u;
    if scan_pass.n > 256u {
        base = scan_partials[scan_pass.next_offset + block];
    }
    let r = base + part[lid] - v;
    if scan_pass.level == 0u {
        scan_data[i] = r;
    } else {
        scan_partials[scan_pass.offset + i] = r;
    }
}
