// layout: the records every kernel binds, field for field the structs of src/layout.rs (checked by
// tests/layout.rs against naga's reflection of this file), plus the indexing helper of the 2-D
// dispatch grid (src/shaders.rs `dispatch_grid`).

struct Yarn {
    first_point: u32,
    num_points: u32,
    closed: u32,
    first_segment: u32,
    num_segments: u32,
    first_edge: u32,
    num_edges: u32,
    _pad: u32,
};

struct Segment {
    cp: array<u32, 4>,
    yarn: u32,
    edge: u32,
    index_in_yarn: u32,
    _pad: u32,
};

struct Edge {
    a: u32,
    b: u32,
    yarn: u32,
    rest_length: f32,
};

struct Bend {
    v: array<u32, 3>,
    e: array<u32, 2>,
    rest_len: array<f32, 2>,
    _pad: u32,
};

struct BendRest {
    kappa: array<array<f32, 2>, 2>,
    twist: f32,
    ref_twist: f32,
    kappa_start: f32, // |ω̄| at the start: plasticity bounds |ω̄| by max(p_max, kappa_start)
    _pad: f32,
};

struct EdgeFrame {
    u: vec4<f32>, // xyz: reference director; w: material angle θ
    t: vec4<f32>, // xyz: unit tangent it was last transported to
};

// Uniform (theta_sweep): one colour's slice of edge_order. Scalars only, so the uniform
// address space's 16-byte array stride never applies.
struct ColorRange {
    first: u32,
    count: u32,
    _pad0: u32,
    _pad1: u32,
};

struct ObstacleShape {
    kind: u32,
    friction: f32,
    radius: f32,
    _pad: u32,
    a: vec4<f32>,
    b: vec4<f32>,
    vel: vec4<f32>,
    vel_b: vec4<f32>,
};

struct BallState {
    center: vec4<f32>,
    vel: vec4<f32>,
    omega: vec4<f32>,
    mass: f32,
    friction: f32,
    restitution: f32,
    _pad: u32,
};

struct BallHit {
    point: u32,
    ball: u32,
    impulse: array<f32, 3>,
    arm: array<f32, 3>,
};

struct Params {
    h: f32,
    radius: f32,
    gravity_x: f32,
    gravity_y: f32,
    gravity_z: f32,
    bending: f32,
    twisting: f32,
    plastic_radius: f32,
    plastic_max: f32,
    damping_const: f32,
    damping_prop: f32,
    length_tolerance: f32,
    length_max_iterations: u32,
    frame_sweeps: u32,
    num_points: u32,
    num_edges: u32,
    num_bends: u32,
    num_segments: u32,
    num_yarns: u32,
    num_glue: u32,
    num_obstacles: u32,
    first_block: u32,
    num_blocks: u32,
    step: u32,
    k_contact: f32,
    quadrature: u32,
    grid_cell: f32,
    exclusion_arc: f32,
    grid_origin_x: f32,
    grid_origin_y: f32,
    grid_origin_z: f32,
    grid_inv_cell: f32,
    air_factor: f32,
    num_balls: u32,
    balls_held: u32,
    ball_hit_capacity: u32,
};

const ERROR_NAN_FORCE: u32 = 1u;
const ERROR_NAN_VELOCITY: u32 = 2u;
const ERROR_LENGTH_NOT_CONVERGED: u32 = 4u;
const ERROR_NAN_POSITION: u32 = 8u;
const ERROR_GRID_RANGE: u32 = 16u;
const ERROR_GRID_CELL_FULL: u32 = 32u;
const ERROR_CONTACT_NOT_FINITE: u32 = 64u;
const ERROR_GATHER_FULL: u32 = 128u;
const ERROR_NAN_BALL: u32 = 256u;

struct Capacity {
    count: atomic<u32>,
    capacity: u32,
    overflow: atomic<u32>,
    _pad: u32,
};

struct Counters {
    errors: atomic<u32>,
    first_bad_point: atomic<u32>,
    length_iterations: atomic<u32>,
    length_error_bits: atomic<u32>,
    grid_entries: Capacity,
    candidate_pairs: Capacity,
    touching_pairs: Capacity,
    touching_records: Capacity,
    ball_hits: Capacity,
    first_bad_ball: atomic<u32>,
    gather_slots: u32,
    first_unconverged_edge: atomic<u32>,
    _pad2: u32,
};

// Uniform (scan_reduce, scan_add): one level of the multi-level exclusive prefix sum.
struct ScanPass {
    n: u32,
    level: u32,
    offset: u32,
    next_offset: u32,
    next_unscanned: u32,
    next_per_block: u32,
    _pad1: u32,
    _pad2: u32,
};

// Uniform (sort_histogram, sort_scatter): one 8-bit digit pass of the radix sort.
struct SortPass {
    n: u32,
    shift: u32,
    num_blocks: u32,
    _pad: u32,
};

struct CountPlan {
    src_word: u32,
    add: u32,
    cap: u32,
    kind: u32,
    num_passes: u32,
    num_levels: u32,
    args_word: u32,
    threads_per_item: u32,
    workgroup_size: u32,
    _pad0: u32,
    _pad1: u32,
    _pad2: u32,
};

const COUNT_PLAN_SCAN: u32 = 0u;
const COUNT_PLAN_SORT: u32 = 1u;
const COUNT_PLAN_GRID: u32 = 2u;
const COUNT_PLAN_GRIDS: u32 = 3u;
const COUNT_PLAN_MAX_GRIDS: u32 = 4u;

// Refinements of the damping stage's rigid spin towards I ω = L (shared/damping.wgsl).
const RIGID_REFINEMENTS: u32 = 2u;

// Elements per thread of the scan kernels, and per scan block (one workgroup of 256 threads).
const SCAN_PER_THREAD: u32 = 8u;
const SCAN_BLOCK: u32 = 2048u;

struct KeyValue {
    key_lo: u32,
    key_hi: u32,
    value: u32,
    _pad: u32,
};

struct SegmentBox {
    lo: vec4<f32>,
    hi: vec4<f32>,
    cell_lo: vec4<i32>, // w: number of cells (0: left out)
    cell_hi: vec4<i32>,
};

// The scheduler's records (src/layout.rs; stages in src/sched/).
struct Interval {
    lo: vec4<f32>,
    hi: vec4<f32>,
};

struct CellBox {
    lo: vec4<i32>, // w: 1 when valid
    hi: vec4<i32>,
};

// A schedule entry (sched::SchedEntry): bin in bits 0–7, ENTRY_MIXED / ENTRY_DUE flags, the
// touching count of this step in bits 16–23.
struct SchedEntry {
    seg_a: u32,
    seg_b: u32,
    d: f32,
    bin_flags: u32,
};

// A contact set's box before and after a change (sched::Release): the pairs of `before` outside
// `after` are back in empty space.
struct Release {
    before: vec4<u32>,
    after: vec4<u32>,
};

// `sched` (uniform, or read-only storage where a table length comes from the GPU step): the
// scheduler's constants of one step.
struct SchedUniform {
    num_segments: u32,
    num_points: u32,
    num_entries: u32,
    quadrature: u32,
    radius: f32,
    cell: f32,
    inv_cell: f32,
    omega: f32,
    anchor: vec4<i32>,
    step: u32,
    bins_due: u32,
    max_bin: u32,
    switches: u32,
    exclusion_arc: f32,
    num_released: u32,
    num_fresh: u32,
    _pad2: u32, // (a uniform's arrays need a 16-byte stride: padding as a scalar)
};

const SCHED_NO_MOVEMENT_UPDATE: u32 = 1u;
const SCHED_NO_WINDOW_CORRECTION: u32 = 2u;
const SCHED_NO_MONITORING: u32 = 4u;

struct SchedCounters {
    errors: atomic<u32>,
    first_bad_point: atomic<u32>,
    first_bad_segment: atomic<u32>,
    examined: atomic<u32>,
    processed: atomic<u32>,
    monitored: atomic<u32>,
    left: atomic<u32>,
    lookup_overflow: atomic<u32>,
    touching: Capacity,
    grid: Capacity,
    cand: Capacity,
    fresh: Capacity,
    entries: Capacity,
    release: Capacity,
    newcomers: atomic<u32>,
    entered: atomic<u32>,
    _pad: array<u32, 2>,
};

// Uniform (sched_sizes): which size point of the step.
struct SchedPhase {
    phase: u32,
    _pad0: u32,
    _pad1: u32,
    _pad2: u32,
};

struct SegmentMotion {
    mv1: Interval,
    mv2_ref: Interval,
    mon: u32,
    left: u32,
    _pad: array<u32, 2>,
};

struct SegmentContact {
    weight: f32,
    loop_len: f32,
    _pad: array<u32, 2>,
};

struct ContactRecord {
    force: array<vec4<f32>, 8>,
    energy: f32,
    touching: u32,
    _pad: array<u32, 2>,
};

// One input of the polar_test tool kernel: F by columns (xyz; w unused, 0) and the warm-start
// quaternion [x, y, z, w].
struct PolarInput {
    f: array<vec4<f32>, 3>,
    warm: vec4<f32>,
};

// One output of polar_test: R as a quaternion and by columns, S = sym(Rᵀ F) by columns (w = 0), the
// iteration count, the error flag (POLAR_NOT_FINITE of polar.wgsl) and the first non-finite entry
// (3 col + row, or 0xffffffff).
struct PolarOutput {
    quat: vec4<f32>,
    r: array<vec4<f32>, 3>,
    s: array<vec4<f32>, 3>,
    iterations: u32,
    error: u32,
    bad_entry: u32,
    _pad: u32,
};

// Uniform `acl_merge`: the constants of the set-merge kernels.
struct MergeUniform {
    nq: u32,
    alpha: u32,
    num_bins: u32,
    scan_limit: u32,
};

// Uniform `merge_round`: the merge_label round of a dispatch (reads label half round % 2), or for
// merge_hull / merge_apply the rounds recorded.
struct MergeRound {
    round: u32,
    clear_edges: u32, // merge_hull: clear edges.count (the next pass is moved_overlap_write)
    _pad1: u32,
    _pad2: u32,
};

const MERGE_SCAN_LIMIT: u32 = 1u;
// layout::MERGE_DIRTY_LIMIT, DIRTY_OVERLAP_MAX (the dirty-list overlap search, dirty_overlap.wgsl).
const MERGE_DIRTY_LIMIT: u32 = 2u;
const DIRTY_OVERLAP_MAX: u32 = 1024u;
// layout::NEWCOMER_LIST_MAX: the most segments the listed newcomer search takes (segment_monitor's
// list, newcomer_list_write's loop).
const NEWCOMER_LIST_MAX: u32 = 256u;
// layout::NEWCOMER_LIST_CANDIDATES: the most candidates newcomer_list_compact takes (its
// workgroup's keys).
const NEWCOMER_LIST_CANDIDATES: u32 = 1024u;

struct MergeCounters {
    sets: Capacity,
    edges: Capacity,
    index: Capacity,
    touching: Capacity,
    coalesce_base: u32,
    label_rounds: atomic<u32>,
    more_rounds: atomic<u32>,
    moved: atomic<u32>,
    merged: atomic<u32>,
    garbage_cp: atomic<u32>,
    garbage_k: atomic<u32>,
    garbage_w: atomic<u32>,
    errors: atomic<u32>,
    _pad: array<u32, 3>,
};

struct AclSizes {
    released: Capacity,
    lookup: Capacity,
    num_sets: u32,
    num_dirty: u32,
    garbage_cp: atomic<u32>,
    garbage_k: atomic<u32>,
    garbage_w: atomic<u32>,
    errors: atomic<u32>,
    rebuilds: u32,
    rounds_used: u32,
    touching: atomic<u32>,
};

// Uniform (acl_counts): which point of the GPU ACL step.
struct AclPhase {
    phase: u32,
    _pad0: u32,
    _pad1: u32,
    _pad2: u32,
};

// layout::ACL_SIZES_LOOKUP_SET, ACL_SIZES_LOOKUP_BUCKET, ACL_SIZES_MORE_ROUNDS.
const ACL_SIZES_LOOKUP_SET: u32 = 1u;
const ACL_SIZES_LOOKUP_BUCKET: u32 = 2u;
const ACL_SIZES_MORE_ROUNDS: u32 = 8u;

struct LookupUniform {
    num_sets: u32,
    num_segments: u32,
    quadrature: u32,
    _pad: u32,
};

// The grid of `groups` workgroups that shaders::dispatch_grid makes: at most 65,535 a row, rows
// as many as needed (the indirect arguments a kernel writes for a counted grid).
fn grid_of_groups(groups: u32) -> vec3<u32> {
    if groups > 65535u {
        return vec3<u32>(65535u, (groups + 65534u) / 65535u, 1u);
    }
    return vec3<u32>(groups, 1u, 1u);
}

// The global thread index of a 1-D kernel dispatched on the 2-D grid of `dispatch_grid`.
fn thread_index(wid: vec3<u32>, nwg: vec3<u32>, lid: u32, wg: u32) -> u32 {
    return (wid.y * nwg.x + wid.x) * wg + lid;
}

// True when no component of v is NaN or infinite (WGSL has no isnan: a finite float is one whose
// magnitude is at most the largest finite f32, which NaN fails too).
fn finite3(v: vec3<f32>) -> bool {
    let a = abs(v);
    return a.x <= 3.4028235e38 && a.y <= 3.4028235e38 && a.z <= 3.4028235e38;
}

// ACL (src/acl/, constants in src/layout.rs and shaders/shared/acl.wgsl). Uniform `acl`: the
// constants of the per-step force stages; weights[k] are the 4 basis weights of quadrature
// parameter k < quadrature.
struct AclUniform {
    quadrature: u32,
    num_sets: u32,
    num_points: u32,
    flags: u32,
    radius: f32,
    tolerance: f32,
    stiction_stiffness: f32,
    stiction_break_energy: f32,
    record_capacity: u32,
    _pad0: u32, // (scalars: a uniform's arrays need a 16-byte stride)
    _pad1: u32,
    _pad2: u32,
    weights: array<vec4<f32>, 32>,
};

struct AclCounters {
    errors: atomic<u32>,
    first_bad_set: atomic<u32>,
    first_bad_point: atomic<u32>,
    records: atomic<u32>,
};

// acl::ContactSet: box [u0, u1, v0, v1], pool offsets, flags (SET_* of acl.wgsl), ε, rebuild data,
// the watched pairs' range and guards, the warm-start quaternion [x, y, z, w], the reference centre.
struct ContactSet {
    bx: vec4<u32>,
    cp_off: u32,
    n_cp: u32,
    k_off: u32,
    flags: u32,
    eps: f32,
    touching: u32,
    rebuilt_step: u32,
    w_off: u32,
    n_watch: u32,
    guard_near: f32,
    guard_far: f32,
    f_ref: f32,
    quat: vec4<f32>,
    centre: vec4<f32>,
};

// A stiction spring between quadrature points i < j (acl::StictionSpring); rest: offset in the set's
// reference frame (w unused).
struct StictionSpring {
    i: u32,
    j: u32,
    flags: u32,
    _pad: u32,
    rest: vec4<f32>,
};

// A watched member pair (acl::WatchPair): weight κw and d − 2r at the rebuild.
struct WatchPair {
    i: u32,
    j: u32,
    kw: f32,
    gap: f32,
};

// A symmetric 3×3 block of k_pool: [xx, yy, zz, xy, xz, yz].
struct SymBlock {
    k: array<f32, 6>,
};

// The set-local indices of a watched pair's 4 + 4 control points (acl::WatchLoc): slot c in bits
// 16 (c % 2) .. of loc[c / 2].
struct WatchLoc {
    loc: vec4<u32>,
};

// What set_rebuild_size found for one dirty set and where pool_alloc put its model
// (acl::rebuild::RebuildPlan).
struct RebuildPlan {
    new_bx: vec4<u32>,
    touch_bx: vec4<u32>,
    eps: f32,
    touching: u32,
    n_cp: u32,
    n_watch: u32,
    guard_near: f32,
    guard_far: f32,
    flags: u32,
    error_point: u32,
    cp_off: u32,
    k_off: u32,
    w_off: u32,
    term_off: u32,
};

// Uniforms `block_page` and `term_page` of the kernels that bind a page of the K̄ blocks pool or of
// the rebuild's pair terms (acl::pages::PoolPage): the page bound (k_pool in set_force and
// set_rebuild, k_next in pool_compact_blocks, rebuild_terms in set_rebuild and
// set_rebuild_headers), the old pool's page bound as k_pool when compacting, the flat entries per
// page (0xffffffff: one page), and the entries the page bound holds. A range lives in page
// off / stride, at off − page · stride.
struct PoolPage {
    page: u32,
    source: u32,
    stride: u32,
    len: u32,
};

// Uniform `page_pairs` of set_rebuild_runs and set_rebuild_args (acl::pages::PagePairs): the
// strides and page counts of the K̄ blocks pool and of the rebuild's pair terms (set_rebuild's
// pairs), and of the watched-pair scratch and the watch pools (set_rebuild_watch's).
struct PagePairs {
    block_stride: u32,
    term_stride: u32,
    block_pages: u32,
    term_pages: u32,
    scratch_stride: u32,
    watch_stride: u32,
    scratch_pages: u32,
    watch_pages: u32,
};

// Binding `rebuild_run` of set_rebuild (acl::pages::RebuildRun): the indirect grid of one pair of
// pages' dispatch, and the run of dirty indices [first, end) it covers (all of them: first 0, end
// 0xffffffff). A slot of RUN_SLOT_BYTES = 256 bytes of buffer rebuild_args per pair.
struct RebuildRun {
    groups_x: u32,
    groups_y: u32,
    groups_z: u32,
    first: u32,
    end: u32,
    _pad0: u32,
    _pad1: u32,
    _pad2: u32,
};

// Uniform `rebuild` of the ACL rebuild and compaction kernels (acl::rebuild::RebuildParams).
struct RebuildParams {
    b: u32,
    nq: u32,
    r: f32,
    padding: u32,
    delete_distance: f32,
    stiffness: f32,
    stiction_stiffness: f32,
    step: u32,
    num_sets: u32,
    num_dirty: u32,
    exclusion_arc: f32,
    _pad: u32,
};

// A touching pair's point terms in kernel set_rebuild's list (acl::rebuild::RebuildTerm): the
// set-local indices of its 4 + 4 control points (WatchLoc's packing), ∂E/∂y_i (w 0), ∂²E/∂y_i²
// as [xx, yy, zz, xy, xz, yz], the quadrature points (i = 0xffffffff: end of a short list).
struct RebuildTerm {
    loc: vec4<u32>,
    grad: vec4<f32>,
    hess: array<f32, 6>,
    i: u32,
    j: u32,
};

// One group's sums in the pool allocation (acl::rebuild::AllocGroup): the sizes in the four pools
// and the releases of 256 dirty sets, and the release list's length before the round.
struct AllocGroup {
    sizes: vec4<u32>,
    releases: u32,
    released_base: u32,
    _pad0: u32,
    _pad1: u32,
};

// The `pool_counters` block of the pool allocation (acl::rebuild::PoolAlloc): lengths before and
// after, capacities of the point, block, watch and term pools; errors (bit k: pool k full; 16: a
// set beyond MAX_REBUILD_WORK) and the first such dirty slot.
struct PoolAlloc {
    base: vec4<u32>,
    len: vec4<u32>,
    cap: vec4<u32>,
    errors: atomic<u32>,
    first_too_large: atomic<u32>,
    _pad0: u32,
    _pad1: u32,
};
