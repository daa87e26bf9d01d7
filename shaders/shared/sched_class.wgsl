// sched_class: the same-yarn exclusion rule's class of a segment pair (sched::pair_class, the
// decision of Exclusion::segment_exclusion) from the exclusion tables the exact path uploads. Needs
// the importing kernel to bind `sched: SchedUniform`, `segments: array<Segment>`,
// `quad_arc: array<f32>` and `seg_contact: array<SegmentContact>`, and to import layout and penalty.

const PAIR_CLEAR: u32 = 0u;
const PAIR_ALL: u32 = 1u;
const PAIR_MIXED: u32 = 2u;

// Different yarns: clear; one yarn: the classes of the four corner pairs of quadrature points
// decide (all near the same way: every pair excluded; none near: clear; else mixed).
fn pair_class(a: u32, b: u32) -> u32 {
    if segments[a].yarn != segments[b].yarn {
        return PAIR_CLEAR;
    }
    if a == b {
        return PAIR_MIXED;
    }
    let q = sched.quadrature;
    let loop_len = seg_contact[a].loop_len;
    let arc = sched.exclusion_arc;
    let c0 = exclusion_class(quad_arc[a * q], quad_arc[b * q], loop_len, arc);
    let c1 = exclusion_class(quad_arc[a * q], quad_arc[b * q + q - 1u], loop_len, arc);
    let c2 = exclusion_class(quad_arc[a * q + q - 1u], quad_arc[b * q], loop_len, arc);
    let c3 = exclusion_class(quad_arc[a * q + q - 1u], quad_arc[b * q + q - 1u], loop_len, arc);
    if c0 == c1 && c0 == c2 && c0 == c3 {
        if c0 == 1u {
            return PAIR_CLEAR;
        }
        return PAIR_ALL;
    }
    return PAIR_MIXED;
}
