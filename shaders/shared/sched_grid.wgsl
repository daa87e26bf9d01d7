// sched_grid: lookups in the scheduler's sorted grid (src/sched/grid.rs) and the exclusion class of
// a candidate pair (src/sched/newcomers.rs). The grid helpers need the importing kernel to bind
// `sched_grid: array<KeyValue>` and `sched_counters: SchedCounters`; `pair_class` needs `sched`,
// `segments`, `quad_arc` and `seg_contact` and the penalty import. Import layout and sched first.

// The grid items the kernels read: the first min(count, capacity) slots.
fn grid_items() -> u32 {
    return min(atomicLoad(&sched_counters.grid.count), sched_counters.grid.capacity);
}

// The first of the n sorted items whose hash is not below h (slice::partition_point).
// Loop bound: 32 halvings.
fn grid_run_start(h: u32, n: u32) -> u32 {
    var lo = 0u;
    var hi = n;
    for (var it = 0u; it < 32u && lo < hi; it = it + 1u) {
        let mid = (lo + hi) / 2u;
        if sched_grid[mid].key_lo < h {
            lo = mid + 1u;
        } else {
            hi = mid;
        }
    }
    return lo;
}
