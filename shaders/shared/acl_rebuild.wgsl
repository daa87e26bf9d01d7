// acl_rebuild: what the kernels of ACL's rebuild share (acl::rebuild): the plan flags, the box
// and work bounds, and the plan tests. Needs layout and acl.

const MAX_WATCH: u32 = 32u;
const MAX_BOX_PAIRS: u32 = 65536u;
const MAX_BOX_CPS: u32 = 512u;
const PLAN_ZERO: u32 = 1u;
const PLAN_DELETE: u32 = 2u;
const PLAN_ERROR: u32 = 4u;
const PLAN_TOO_LARGE: u32 = 8u;
const NONE: u32 = 0xffffffffu;
// acl::rebuild::REBUILD_WG and MAX_REBUILD_WORK (see kernel set_rebuild).
const REBUILD_WG: u32 = 256u;
const MAX_REBUILD_WORK: u32 = 16384u;

// acl::rebuild::rebuild_work: a plan's work in kernel set_rebuild.
fn rebuild_work(n: u32, touching: u32) -> u32 {
    return ((tri_len(n) + REBUILD_WG - 1u) / REBUILD_WG) * touching;
}

// Whether the write kernels build a plan (acl::rebuild::plan_built).
fn plan_built(p: RebuildPlan) -> bool {
    return (p.flags & PLAN_DELETE) == 0u && p.n_cp > 0u;
}
