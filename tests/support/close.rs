//! Comparing a GPU kernel's records with its CPU twin's on any GPU: integer words exactly, float
//! words within a tolerance the caller derives.
//!
//! lavapipe rounds every operation as the twin does, so there the floats agree bitwise; NVIDIA's
//! compilers (and WGSL allows it) fuse `a·b + c` into one rounding, which moves a result by up to
//! `U (|a·b| + |c|)` per fused operation (`U = 2⁻²⁴`, f32's unit roundoff). A bound stated as
//! "k U times the scale of the operands" covers both.
#![allow(dead_code)]

/// f32's unit roundoff.
pub const U: f64 = 1.0 / (1u64 << 24) as f64;

/// The largest |coordinate| of `pos` (the scale of every position-derived quantity).
pub fn coord_scale(pos: &[[f32; 4]]) -> f64 {
    pos.iter()
        .flat_map(|p| p[..3].iter())
        .fold(0.0f64, |m, &x| m.max(x.abs() as f64))
}

/// Compares records `g` (GPU) and `c` (twin) word by word: the words whose indices (within a
/// record) are in `floats` within `tol(record, word)` (a NaN never passes), every other word
/// exactly. Returns the worst `|g − c| / tol` and the number of float words that differ.
pub fn assert_records_close<T: bytemuck::Pod + std::fmt::Debug>(
    what: &str,
    g: &[T],
    c: &[T],
    floats: &[usize],
    tol: impl Fn(usize, usize) -> f64,
) -> (f64, usize) {
    assert_eq!(g.len(), c.len(), "{what}: lengths");
    let words = std::mem::size_of::<T>() / 4;
    let (mut worst, mut differ) = (0.0f64, 0usize);
    for (k, (a, b)) in g.iter().zip(c).enumerate() {
        let wa: &[u32] = bytemuck::cast_slice(std::slice::from_ref(a));
        let wb: &[u32] = bytemuck::cast_slice(std::slice::from_ref(b));
        for w in 0..words {
            if wa[w] == wb[w] {
                continue;
            }
            assert!(
                floats.contains(&w),
                "{what}: record {k} word {w} (not a float) differs:\n gpu {a:?}\n cpu {b:?}"
            );
            let (x, y) = (f32::from_bits(wa[w]) as f64, f32::from_bits(wb[w]) as f64);
            let t = tol(k, w);
            let d = (x - y).abs();
            assert!(
                d <= t,
                "{what}: record {k} word {w}: gpu {x:e} cpu {y:e} (difference {d:e} > tolerance {t:e}):\n gpu {a:?}\n cpu {b:?}"
            );
            differ += 1;
            worst = worst.max(if t > 0.0 { d / t } else { f64::INFINITY });
        }
    }
    (worst, differ)
}

/// The word indices `first..first + n` (a float field or array of a record).
pub fn words(fields: &[(usize, usize)]) -> Vec<usize> {
    fields.iter().flat_map(|&(a, n)| a..a + n).collect()
}
