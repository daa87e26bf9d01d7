// set_rebuild_args: set_rebuild's grid for each pair of a blocks page and a terms page, and
// set_rebuild_watch's for each pair of a scratch page and a watch pools page after them
// (acl::rebuild::set_rebuild_args, CPU twin), after set_rebuild_runs. Thread p < the pairs
// (page_pairs.block_pages · page_pairs.term_pages + page_pairs.scratch_pages ·
// page_pairs.watch_pages): from the pair's two words of rebuild_runs
// (word 0: the run's end, word 1: !first; both 0: no plan), its RebuildRun at word
// p · RUN_SLOT_WORDS of rebuild_args: the indirect grid of one workgroup per dirty index of the run
// (a 2-D grid of at most 65,535 workgroups a row, as shaders::dispatch_grid makes it) and the run
// [first, end) that set_rebuild's workgroups take in order. Then both words back to 0, for the
// next round's set_rebuild_runs.
// 64-thread workgroups over the pairs. No loops.

#import layout

// pages::RUN_SLOT_BYTES / 4.
const RUN_SLOT_WORDS: u32 = 64u;

@group(0) @binding(0) var<uniform> page_pairs: PagePairs;
@group(0) @binding(1) var<storage, read_write> rebuild_runs: array<u32>;
@group(0) @binding(2) var<storage, read_write> rebuild_args: array<u32>;

@compute @workgroup_size(64)
fn set_rebuild_args(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
    @builtin(local_invocation_index) lid: u32,
) {
    let p = thread_index(wid, nwg, lid, 64u);
    let pairs = page_pairs.block_pages * page_pairs.term_pages
        + page_pairs.scratch_pages * page_pairs.watch_pages;
    if p >= pairs {
        return;
    }
    let end = rebuild_runs[2u * p];
    var first = 0u;
    if end > 0u {
        first = ~rebuild_runs[2u * p + 1u];
    }
    let g = grid_of_groups(end - first);
    let w = p * RUN_SLOT_WORDS;
    rebuild_args[w] = g.x;
    rebuild_args[w + 1u] = g.y;
    rebuild_args[w + 2u] = g.z;
    rebuild_args[w + 3u] = first;
    rebuild_args[w + 4u] = end;
    rebuild_runs[2u * p] = 0u;
    rebuild_runs[2u * p + 1u] = 0u;
}
