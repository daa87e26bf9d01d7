// set_dirty_write: the dirty list, after set_dirty_count (no scan in between), and the start of the
// rebuild round from its length. Thread k ≤ rebuild.num_sets finds its slot, the dirty sets before
// set k, from the group sums set_dirty_count wrote into scan_groups and a workgroup scan of
// dirty_dest (group_prefix); when set k is dirty (dirty_dest[k] = 1), dirty[slot] = k, so the
// list is in set order. Thread num_sets, whose slot is the list's length nd: acl_sizes.num_dirty =
// nd; the verdict on the last merge invocation (last_merge_verdict), then
// merge_counters.edges.count = 0 (dirty_overlap_write, the round's first merge pass without the set
// index, appends its pairs from there); the pools' lengths become the allocation's base; nd
// counted into acl_sizes.rebuilds, and a round with dirty sets into acl_sizes.rounds_used; nd into
// rebuild.num_dirty, which the round's kernels read (a uniform there; storage here, so no copy ends
// the compute pass); and the grids of the round's kernels over the nd dirty sets
// (plan_counted_grids into plan_out: no count_plan dispatch).
// `dirty` holds at most num_sets entries (no capacity to check). No other thread reads what the
// last one writes. CPU twin: acl::sets::set_dirty_write. One thread per set slot, plus one (the set
// capacity's grid); a workgroup wholly past num_sets + 1 returns before the prefix, whose loads grow
// with the workgroup's index.
// Loop bounds: 22 (the group sums before a workgroup: at most 2²⁷ / 96 set slots fit a binding,
// 5,462 groups), 8 + 8 (group_prefix); plan_counted_grids is unrolled.

#import layout
#import acl
#import acl_step_counts
#import counted_plan
#import workgroup_sum
#import workgroup_scan
#import group_prefix

@group(0) @binding(0) var<uniform> plan_spec: CountPlan;
@group(0) @binding(1) var<storage, read_write> rebuild: RebuildParams;
@group(0) @binding(2) var<storage, read> dirty_dest: array<u32>;
@group(0) @binding(3) var<storage, read> scan_groups: array<u32>;
@group(0) @binding(4) var<storage, read_write> dirty: array<u32>;
@group(0) @binding(5) var<storage, read_write> acl_sizes: AclSizes;
@group(0) @binding(6) var<storage, read_write> merge_counters: MergeCounters;
@group(0) @binding(7) var<storage, read_write> pool_counters: PoolAlloc;
@group(0) @binding(8) var<storage, read_write> plan_out: array<u32>;

// The table's sets, read once by the workgroup.
var<workgroup> wg_sets: u32;

@compute @workgroup_size(256)
fn set_dirty_write(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
    @builtin(local_invocation_index) lid: u32,
) {
    if lid == 0u {
        wg_sets = rebuild.num_sets;
    }
    // (One value for the whole workgroup: rebuild is read-write storage here, so its loads are not
    // uniform, and the return must keep the barriers below in uniform control flow.)
    let n = workgroupUniformLoad(&wg_sets);
    let g = wid.y * nwg.x + wid.x;
    if g * 256u > n {
        return;
    }
    let k = thread_index(wid, nwg, lid, 256u);
    var v = 0u;
    if k < n {
        v = dirty_dest[k];
    }
    // Every thread of the workgroup reaches the prefix (it has barriers).
    let slot = group_prefix(g, lid, v);
    if v != 0u {
        dirty[slot] = k;
    } else if k == n {
        let nd = slot;
        acl_sizes.num_dirty = nd;
        last_merge_verdict();
        atomicStore(&merge_counters.edges.count, 0u);
        pool_counters.base = pool_counters.len;
        acl_sizes.rebuilds = acl_sizes.rebuilds + nd;
        if nd != 0u {
            acl_sizes.rounds_used = acl_sizes.rounds_used + 1u;
        }
        rebuild.num_dirty = nd;
        plan_counted_grids(nd);
    }
}
