// length_top: stage length_projection, projection length_level.x + 1 (only while
// counters.length_iterations equals it): the partitioned tridiagonal solver from the level at rows
// length_level.y .. length_level.y + length_level.z of length_sys (at most LENGTH_TOP_ROWS rows,
// length::TOP_ROWS) to the top and back, in one workgroup: what length_reduce does on that level and
// each one after it until one row is left, then length_back on them in reverse, one dispatch
// instead of 2 per level. Each level is done SOLVER_BLOCKS blocks at a time (reduce_chunk,
// back_chunk: the work of one workgroup of those kernels, so the rows get the same operations in
// the same order), a storage barrier between levels so the next one sees this workgroup's rows. The
// levels the workgroup walks are small (one or two chunks each), where a dispatch per level cost a
// barrier on the whole GPU for one or two workgroups' work (CPU twin: length::length_top).
// Dispatched as one workgroup. Loop bound: TOP_LEVELS = 2 levels up and 2 down (1,024 → 32 → 1
// rows), 2 chunks and 1, each chunk 9 + 60 (reduce_chunk) or 8 + 61 + 8 (back_chunk) iterations:
// under 450 in all.

#import layout
#import length

@group(0) @binding(0) var<uniform> length_level: vec4<u32>;
@group(0) @binding(1) var<storage, read_write> length_sys: array<vec4<f32>>;
@group(0) @binding(2) var<storage, read_write> counters: Counters;

// The most levels solved from a level of at most LENGTH_TOP_ROWS = 32 BLOCK rows: that level, and
// the one of at most BLOCK rows after it (whose next has one row).
const TOP_LEVELS: u32 = 2u;

@compute @workgroup_size(64)
fn length_top(@builtin(local_invocation_index) lid: u32) {
    if !projection_wanted(lid) {
        return;
    }
    // The solved levels: offsets and sizes, from length_level's up to the last before one row.
    var offs: array<u32, TOP_LEVELS>;
    var sizes: array<u32, TOP_LEVELS>;
    var count = 0u;
    var off = length_level.y;
    var n = length_level.z;
    for (var l = 0u; l < TOP_LEVELS; l++) {
        offs[l] = off;
        sizes[l] = n;
        count = l + 1u;
        let nb = (n + BLOCK - 1u) / BLOCK;
        if nb == 1u {
            break;
        }
        off = off + n;
        n = nb;
    }
    for (var l = 0u; l < count; l++) {
        let nb = (sizes[l] + BLOCK - 1u) / BLOCK;
        for (var j0 = 0u; j0 < nb; j0 = j0 + SOLVER_BLOCKS) {
            reduce_chunk(offs[l], sizes[l], j0, lid);
            workgroupBarrier();
        }
        storageBarrier();
    }
    for (var k = count; k > 0u; k--) {
        let l = k - 1u;
        let nb = (sizes[l] + BLOCK - 1u) / BLOCK;
        for (var j0 = 0u; j0 < nb; j0 = j0 + SOLVER_BLOCKS) {
            back_chunk(offs[l], sizes[l], j0, lid);
            workgroupBarrier();
        }
        storageBarrier();
    }
}
