// The plan of a counted scan, sort or grid written from its live count (src/scan.rs; CPU twin
// scan::plan_counted): by `count_plan` (plan_counted), or, for a plan of grids, inline by the
// kernel that produces the count, from the one thread that has it final (plan_counted_grids; one
// dispatch fewer: set_dirty_write). The importing kernel declares `plan_spec` (uniform CountPlan)
// and `plan_out` (read_write storage, array<u32>: the plan buffer) and calls one of them from one
// thread. From n = min(count, cap - add) + add plan_counted writes into plan_out the `n` of every
// scan level (slot k at word 64 k, a ScanPass), or for a sort the `n` and `num_blocks` of every
// digit pass (a SortPass per slot) and then the levels of the scan of its 256 · num_blocks
// histogram words; and the indirect dispatch arguments from word args_word on (a sort's block
// grid, then one grid per scan level), each a 2-D grid of at most 65,535 workgroups per row as
// shaders::dispatch_grid makes them. The other fields of the slots (levels, offsets, shifts) are
// the capacity's, uploaded once. A grid plan (COUNT_PLAN_GRID) writes only its one grid, of
// ceil(n · threads_per_item / workgroup_size) workgroups; a plan of several grids over one count
// (COUNT_PLAN_GRIDS, n = min(count, cap)) writes grid k from the GridSpec in its slot k (add,
// threads_per_item, workgroup_size: ceil((n + add) · threads_per_item / workgroup_size)
// workgroups) into argument triple k.
// Loop bound: num_passes ≤ 8 plus num_levels ≤ 4 iterations (plan_counted's scans and sorts);
// COUNT_PLAN_MAX_GRIDS = 4 grids, unrolled (plan_counted_grids, which plan_counted calls for a plan
// of grids: no loop in the wide kernels that plan inline).

fn plan_write_grid(word: u32, groups: u32) {
    let g = grid_of_groups(groups);
    plan_out[word] = g.x;
    plan_out[word + 1u] = g.y;
    plan_out[word + 2u] = g.z;
}

fn plan_counted(count: u32) {
    let p = plan_spec;
    let n = min(count, p.cap - p.add) + p.add;
    if p.kind == COUNT_PLAN_GRID {
        plan_write_grid(p.args_word, (n * p.threads_per_item + p.workgroup_size - 1u) / p.workgroup_size);
        return;
    }
    if p.kind == COUNT_PLAN_GRIDS {
        plan_counted_grids(count);
        return;
    }
    var m = n;
    var slot = 0u;
    var arg = p.args_word;
    if p.kind == COUNT_PLAN_SORT {
        let blocks = (n + 255u) / 256u;
        for (var k = 0u; k < p.num_passes; k = k + 1u) {
            plan_out[64u * k] = n;
            plan_out[64u * k + 2u] = blocks;
        }
        plan_write_grid(arg, blocks);
        arg = arg + 3u;
        slot = p.num_passes;
        m = 256u * blocks;
    }
    for (var k = 0u; k < p.num_levels; k = k + 1u) {
        plan_out[64u * (slot + k)] = m;
        let g = (m + SCAN_BLOCK - 1u) / SCAN_BLOCK;
        plan_write_grid(arg + 3u * k, g);
        m = g;
    }
}

// Grid k of a COUNT_PLAN_GRIDS plan over n items, when the plan has it.
fn plan_grid_k(k: u32, n: u32) {
    if k < plan_spec.num_levels {
        let items = n + plan_out[64u * k];
        let per = plan_out[64u * k + 1u];
        let wg = plan_out[64u * k + 2u];
        plan_write_grid(plan_spec.args_word + 3u * k, (items * per + wg - 1u) / wg);
    }
}

// The grids of a COUNT_PLAN_GRIDS plan (add = 0: n = min(count, cap)), at most
// COUNT_PLAN_MAX_GRIDS = 4, unrolled.
fn plan_counted_grids(count: u32) {
    let n = min(count, plan_spec.cap);
    plan_grid_k(0u, n);
    plan_grid_k(1u, n);
    plan_grid_k(2u, n);
    plan_grid_k(3u, n);
}
