//! The seed's Figure 2 ("contact zoo"): the `S × S` matrix of quadrature-point pairs, touching pairs in
//! red, contact-set boxes outlined in black. CPU only.
//!
//! Index `u` runs along x (left to right) and `v` along y (top to bottom). The picture is `size × size`
//! pixels; quadrature index `i` covers pixels `⌊i·size/S⌋ .. ⌊(i+1)·size/S⌋` (at least one), so large
//! `S` is downsampled (a pixel is red when any pair in it touches) and small `S` is blown up. The main
//! diagonal is drawn light grey for orientation. Boxes are drawn first and pairs on top, so a box too
//! small to show its inside still shows its red.

use super::RenderError;
use image::{Rgb, RgbImage};

const WHITE: Rgb<u8> = Rgb([255, 255, 255]);
const DIAGONAL: Rgb<u8> = Rgb([215, 215, 215]);
const RED: Rgb<u8> = Rgb([220, 20, 20]);
const BLACK: Rgb<u8> = Rgb([0, 0, 0]);

/// Figure 2 for `num_quadrature_points` (= `S`), `touching` pairs `(u, v)` and contact-set `boxes`
/// `[u_min, u_max, v_min, v_max]` (inclusive), as a `size × size` image.
pub fn contact_matrix(
    num_quadrature_points: usize,
    touching: &[(u32, u32)],
    boxes: &[[u32; 4]],
    size: u32,
) -> Result<RgbImage, RenderError> {
    let s = num_quadrature_points as u64;
    if s == 0 || size == 0 {
        return Err(RenderError::InvalidInput(format!(
            "contact matrix of {s} quadrature points at {size} pixels: both must be positive"
        )));
    }
    let n = size as u64;
    // Pixel span [first, last] of quadrature index i.
    let span = |i: u64| -> (u32, u32) {
        let a = i * n / s;
        let b = ((i + 1) * n / s).max(a + 1);
        (a as u32, (b - 1).min(n - 1) as u32)
    };
    let mut img = RgbImage::from_pixel(size, size, WHITE);
    for i in 0..size {
        img.put_pixel(i, i, DIAGONAL);
    }
    for (k, b) in boxes.iter().enumerate() {
        let [u0, u1, v0, v1] = *b;
        if u0 > u1 || v0 > v1 || u1 as u64 >= s || v1 as u64 >= s {
            return Err(RenderError::InvalidInput(format!(
                "contact set {k}: box {b:?} is empty or outside 0..{s}"
            )));
        }
        let (x0, x1) = (span(u0 as u64).0, span(u1 as u64).1);
        let (y0, y1) = (span(v0 as u64).0, span(v1 as u64).1);
        for x in x0..=x1 {
            img.put_pixel(x, y0, BLACK);
            img.put_pixel(x, y1, BLACK);
        }
        for y in y0..=y1 {
            img.put_pixel(x0, y, BLACK);
            img.put_pixel(x1, y, BLACK);
        }
    }
    for (k, &(u, v)) in touching.iter().enumerate() {
        if u as u64 >= s || v as u64 >= s {
            return Err(RenderError::InvalidInput(format!(
                "touching pair {k}: ({u}, {v}) is outside 0..{s}"
            )));
        }
        let (x0, x1) = span(u as u64);
        let (y0, y1) = span(v as u64);
        for y in y0..=y1 {
            for x in x0..=x1 {
                img.put_pixel(x, y, RED);
            }
        }
    }
    Ok(img)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pairs_red_boxes_black_at_full_resolution() {
        // S = size: one pixel per quadrature point.
        let img = contact_matrix(20, &[(3, 12), (4, 13)], &[[1, 6, 10, 15]], 20).unwrap();
        assert_eq!(*img.get_pixel(3, 12), RED);
        assert_eq!(*img.get_pixel(4, 13), RED);
        // Box outline on all four sides, inside white.
        for x in 1..=6 {
            assert_eq!(*img.get_pixel(x, 10), BLACK);
            assert_eq!(*img.get_pixel(x, 15), BLACK);
        }
        for y in 10..=15 {
            assert_eq!(*img.get_pixel(1, y), BLACK);
            assert_eq!(*img.get_pixel(6, y), BLACK);
        }
        assert_eq!(*img.get_pixel(5, 11), WHITE);
        assert_eq!(*img.get_pixel(12, 3), WHITE);
        assert_eq!(*img.get_pixel(7, 7), DIAGONAL);
    }

    #[test]
    fn downsampled_and_upsampled() {
        // S = 1000 into 100 pixels: index i lands in pixel i/10.
        let img = contact_matrix(1000, &[(505, 999)], &[], 100).unwrap();
        assert_eq!(*img.get_pixel(50, 99), RED);
        let reds = img.pixels().filter(|p| **p == RED).count();
        assert_eq!(reds, 1);
        // S = 10 into 40 pixels: each index is a 4×4 block.
        let img = contact_matrix(10, &[(2, 7)], &[], 40).unwrap();
        let reds = img.pixels().filter(|p| **p == RED).count();
        assert_eq!(reds, 16);
        assert_eq!(*img.get_pixel(8, 28), RED);
        assert_eq!(*img.get_pixel(11, 31), RED);
    }

    #[test]
    fn out_of_range_is_an_error() {
        assert!(contact_matrix(10, &[(2, 10)], &[], 10).is_err());
        assert!(contact_matrix(10, &[], &[[3, 2, 0, 1]], 10).is_err());
        assert!(contact_matrix(0, &[], &[], 10).is_err());
    }
}
