// penalty: the yarn–yarn penalty of one quadrature pair and the same-yarn exclusion rule
// (src/contact.rs `penalty`, `point_pair_grad`, `arc_excluded`, `block_excluded`), in f32 in the
// Rust order of operations.

// A point of segment a outside the box of segment b's points grown by 2r · PREFILTER touches
// none of them (1 + 2^-10, exact in f32; the margin dwarfs the rounding of coordinates below
// ~2000 cm, so the skip never drops a pair closer than 2r).
const PREFILTER: f32 = 1.0009765625;

// f and df/ds of the penalty at squared distance s < four_r2 = 4r²:
// f = 4r²/s + s/(4r²) − 2, df/ds = −4r²/s² + 1/(4r²).
fn penalty_f_df(s: f32, four_r2: f32) -> vec2<f32> {
    let inv = 1.0 / s;
    let f = four_r2 * inv + s / four_r2 - 2.0;
    let df = -four_r2 * inv * inv + 1.0 / four_r2;
    return vec2<f32>(f, df);
}

// The same-yarn exclusion rule on f32 arc positions pa, pb of two quadrature points of one yarn
// (`contact::arc_excluded`): closer than `arc` along the yarn, the shorter way round when the yarn
// is a closed loop of rest length loop_len (0: open). Subtraction, abs, min and compare are exact
// IEEE operations, so both paths decide alike.
fn arc_excluded(pa: f32, pb: f32, loop_len: f32, arc: f32) -> bool {
    var d = abs(pa - pb);
    if loop_len > 0.0 {
        d = min(d, loop_len - d);
    }
    return d < arc;
}

// The class of a pair under the exclusion rule (`contact::exclusion_class`): 0 near along the
// yarn, 2 near the other way round a closed loop, 1 not excluded.
fn exclusion_class(pa: f32, pb: f32, loop_len: f32, arc: f32) -> u32 {
    var d = abs(pa - pb);
    if d < arc {
        return 0u;
    }
    if loop_len > 0.0 {
        d = min(d, loop_len - d);
        if d < arc {
            return 2u;
        }
    }
    return 1u;
}

// Whether every quadrature pair of two different segments of one yarn is excluded, from the arc
// positions of their first and last points (`contact::block_excluded`; exact: positions are
// monotone along the yarn, see `Exclusion::segment_exclusion`).
fn block_excluded(a0: f32, a1: f32, b0: f32, b1: f32, loop_len: f32, arc: f32) -> bool {
    let c0 = exclusion_class(a0, b0, loop_len, arc);
    let c1 = exclusion_class(a0, b1, loop_len, arc);
    let c2 = exclusion_class(a1, b0, loop_len, arc);
    let c3 = exclusion_class(a1, b1, loop_len, arc);
    return c0 != 1u && c0 == c1 && c0 == c2 && c0 == c3;
}
