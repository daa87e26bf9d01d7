// acl: constants and helpers of the ACL kernels (src/acl/): the set flags, the model's pool sizes
// and the compactions' offsets. Needs layout.

const SET_LIVE: u32 = 1u;
const SET_DIRTY: u32 = 2u;
const SET_ZERO: u32 = 4u;
const SET_MOVED: u32 = 8u;

// Blocks of the upper triangle of n × n (acl::model::tri_len).
fn tri_len(n: u32) -> u32 {
    return n * (n + 1u) / 2u;
}

// acl::rebuild::model_sizes: the pool space of a set's model, (points, blocks, watched pairs).
fn model_sizes(s: ContactSet) -> vec3<u32> {
    var nk = 0u;
    if (s.flags & SET_ZERO) == 0u {
        nk = tri_len(s.n_cp);
    }
    return vec3<u32>(s.n_cp, nk, s.n_watch);
}

