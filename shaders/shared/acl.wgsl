// acl: constants and helpers of the ACL kernels (src/acl/: set flags of sets.rs, the spring flag of
// stiction.rs, the limits of evaluate.rs and gather.rs, the error bits of src/layout.rs, the model's
// pool sizes), in the Rust order of operations. Plain functions: no bindings here.

#import layout
#import vec

// acl::SET_LIVE, SET_DIRTY, SET_ZERO, SET_MOVED, SET_NOT_FINITE.
const SET_LIVE: u32 = 1u;
const SET_DIRTY: u32 = 2u;
const SET_ZERO: u32 = 4u;
const SET_MOVED: u32 = 8u;
const SET_NOT_FINITE: u32 = 16u;
// acl::SPRING_ACTIVE.
const SPRING_ACTIVE: u32 = 1u;
// layout::ACL_EXTRA_INVALIDATION (AclUniform.flags).
const ACL_EXTRA_INVALIDATION: u32 = 1u;
// layout::ACL_ERROR_* (AclCounters.errors).
const ACL_ERROR_SET_TOO_BIG: u32 = 1u;
const ACL_ERROR_NOT_FINITE: u32 = 2u;
const ACL_ERROR_RECORDS_FULL: u32 = 4u;
const ACL_ERROR_GATHER_FULL: u32 = 8u;
// layout::ACL_SIZES_MORE_PASSES (AclSizes.errors).
const ACL_SIZES_MORE_PASSES: u32 = 4u;
// acl::counts::PHASE_* (AclPhase.phase).
const ACL_PHASE_STEP: u32 = 0u;
const ACL_PHASE_SCHEDULED: u32 = 1u;
const ACL_PHASE_COALESCED: u32 = 2u;
// acl::evaluate::MAX_SET_POINTS and acl::gather::MAX_POINT_RECORDS.
const ACL_MAX_SET_POINTS: u32 = 1008u;
// acl::evaluate::SET_LANES: the threads of one set in set_evaluate, set_force and set_point_write.
const ACL_SET_LANES: u32 = 16u;
const ACL_MAX_POINT_RECORDS: u32 = 128u;
// acl::BASIS_ABS_SUM_MAX.
const BASIS_ABS_SUM_MAX: f32 = 1.25;

// ContactSet::is_clean: live and its model usable.
fn set_is_clean(flags: u32) -> bool {
    return (flags & (SET_LIVE | SET_DIRTY)) == SET_LIVE;
}

// model::sym_mul: K v for a symmetric block [xx, yy, zz, xy, xz, yz].
fn sym_mul(b: SymBlock, v: vec3<f32>) -> vec3<f32> {
    return vec3<f32>(
        b.k[0] * v.x + b.k[3] * v.y + b.k[4] * v.z,
        b.k[3] * v.x + b.k[1] * v.y + b.k[5] * v.z,
        b.k[4] * v.x + b.k[5] * v.y + b.k[2] * v.z,
    );
}

// model::tri_index: block (p, q), p ≤ q, of the row-major upper triangle of n × n blocks.
fn tri_index(n: u32, p: u32, q: u32) -> u32 {
    return p * (2u * n - p + 1u) / 2u + (q - p);
}

// WatchLoc::slot: slot c < 8 of a packed WatchLoc.
fn watch_loc_slot(l: WatchLoc, c: u32) -> u32 {
    return (l.loc[c / 2u] >> (16u * (c % 2u))) & 0xffffu;
}

// The penalty's df/ds at squared distance s (contact::penalty's second value; 0 from 4r² on).
fn penalty_df(s: f32, r: f32) -> f32 {
    let four_r2 = 4.0 * r * r;
    if s >= four_r2 {
        return 0.0;
    }
    let inv = 1.0 / s;
    return -four_r2 * inv * inv + 1.0 / four_r2;
}

// Blocks of the upper triangle of n × n (acl::model::tri_len).
fn tri_len(n: u32) -> u32 {
    return n * (n + 1u) / 2u;
}

// The records of set s the point table lists (acl::gather::set_records): a live set's first
// ACL_MAX_SET_POINTS points (a larger set fails the step in set_evaluate), none of a dead one.
fn set_record_count(s: ContactSet) -> u32 {
    return select(0u, min(s.n_cp, ACL_MAX_SET_POINTS), (s.flags & SET_LIVE) != 0u);
}

// acl::rebuild::model_sizes: the pool space of a set's model, (points, blocks, watched pairs).
fn model_sizes(s: ContactSet) -> vec3<u32> {
    var nk = 0u;
    if (s.flags & SET_ZERO) == 0u {
        nk = tri_len(s.n_cp);
    }
    return vec3<u32>(s.n_cp, nk, s.n_watch);
}

