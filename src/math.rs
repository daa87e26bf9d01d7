//! Small generic vector algebra shared by every CPU stage.
//!
//! The time step runs in f32 on both paths (so a CPU twin computes what its WGSL kernel computes), while
//! tests evaluate the *same* generic code in f64 as a finite-difference oracle. Everything physical is
//! therefore written once over [`Real`] and the [`V3`] / [`M3`] types below.

use std::ops::{Add, AddAssign, Div, Mul, MulAssign, Neg, Sub, SubAssign};

/// The float types the stages are generic over: `f32` (product) and `f64` (test oracle).
pub trait Real:
    Copy
    + PartialOrd
    + Default
    + std::fmt::Debug
    + Send
    + Sync
    + Add<Output = Self>
    + Sub<Output = Self>
    + Mul<Output = Self>
    + Div<Output = Self>
    + Neg<Output = Self>
    + AddAssign
    + SubAssign
    + MulAssign
    + 'static
{
    fn from_f64(x: f64) -> Self;
    fn to_f64(self) -> f64;
    fn sqrt(self) -> Self;
    fn abs(self) -> Self;
    fn sin(self) -> Self;
    fn cos(self) -> Self;
    fn atan2(self, x: Self) -> Self;
    fn acos(self) -> Self;
    fn is_finite(self) -> bool;
    fn max(self, o: Self) -> Self;
    fn min(self, o: Self) -> Self;
    fn zero() -> Self {
        Self::from_f64(0.0)
    }
    fn one() -> Self {
        Self::from_f64(1.0)
    }
    /// Machine epsilon of the type.
    fn eps() -> Self;
}

macro_rules! impl_real {
    ($t:ty) => {
        impl Real for $t {
            #[inline]
            fn from_f64(x: f64) -> Self {
                x as $t
            }
            #[inline]
            fn to_f64(self) -> f64 {
                self as f64
            }
            #[inline]
            fn sqrt(self) -> Self {
                <$t>::sqrt(self)
            }
            #[inline]
            fn abs(self) -> Self {
                <$t>::abs(self)
            }
            #[inline]
            fn sin(self) -> Self {
                <$t>::sin(self)
            }
            #[inline]
            fn cos(self) -> Self {
                <$t>::cos(self)
            }
            #[inline]
            fn atan2(self, x: Self) -> Self {
                <$t>::atan2(self, x)
            }
            #[inline]
            fn acos(self) -> Self {
                <$t>::acos(self.clamp(-1.0, 1.0))
            }
            #[inline]
            fn is_finite(self) -> bool {
                <$t>::is_finite(self)
            }
            #[inline]
            fn max(self, o: Self) -> Self {
                <$t>::max(self, o)
            }
            #[inline]
            fn min(self, o: Self) -> Self {
                <$t>::min(self, o)
            }
            #[inline]
            fn eps() -> Self {
                <$t>::EPSILON
            }
        }
    };
}
impl_real!(f32);
impl_real!(f64);

/// A 3-vector over [`Real`].
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct V3<T> {
    pub x: T,
    pub y: T,
    pub z: T,
}

impl<T: Real> V3<T> {
    #[inline]
    pub fn new(x: T, y: T, z: T) -> Self {
        V3 { x, y, z }
    }
    #[inline]
    pub fn zero() -> Self {
        V3::new(T::zero(), T::zero(), T::zero())
    }
    #[inline]
    pub fn splat(v: T) -> Self {
        V3::new(v, v, v)
    }
    /// From the xyz of a stored `[f32; 4]` (the layout of every point buffer).
    #[inline]
    pub fn from4(p: [f32; 4]) -> Self {
        V3::new(
            T::from_f64(p[0] as f64),
            T::from_f64(p[1] as f64),
            T::from_f64(p[2] as f64),
        )
    }
    #[inline]
    pub fn from3(p: [f32; 3]) -> Self {
        V3::new(
            T::from_f64(p[0] as f64),
            T::from_f64(p[1] as f64),
            T::from_f64(p[2] as f64),
        )
    }
    /// To a stored `[f32; 4]` with the given w.
    #[inline]
    pub fn to4(self, w: f32) -> [f32; 4] {
        [
            self.x.to_f64() as f32,
            self.y.to_f64() as f32,
            self.z.to_f64() as f32,
            w,
        ]
    }
    #[inline]
    pub fn to3(self) -> [f32; 3] {
        [
            self.x.to_f64() as f32,
            self.y.to_f64() as f32,
            self.z.to_f64() as f32,
        ]
    }
    #[inline]
    pub fn cast<U: Real>(self) -> V3<U> {
        V3::new(
            U::from_f64(self.x.to_f64()),
            U::from_f64(self.y.to_f64()),
            U::from_f64(self.z.to_f64()),
        )
    }
    #[inline]
    pub fn get(self, i: usize) -> T {
        match i {
            0 => self.x,
            1 => self.y,
            _ => self.z,
        }
    }
    #[inline]
    pub fn set(&mut self, i: usize, v: T) {
        match i {
            0 => self.x = v,
            1 => self.y = v,
            _ => self.z = v,
        }
    }
    #[inline]
    pub fn dot(self, o: Self) -> T {
        self.x * o.x + self.y * o.y + self.z * o.z
    }
    #[inline]
    pub fn cross(self, o: Self) -> Self {
        V3::new(
            self.y * o.z - self.z * o.y,
            self.z * o.x - self.x * o.z,
            self.x * o.y - self.y * o.x,
        )
    }
    #[inline]
    pub fn norm2(self) -> T {
        self.dot(self)
    }
    #[inline]
    pub fn norm(self) -> T {
        self.norm2().sqrt()
    }
    /// Unit vector; the zero vector stays zero rather than becoming NaN.
    #[inline]
    pub fn normalized(self) -> Self {
        let n = self.norm();
        if n > T::zero() {
            self / n
        } else {
            self
        }
    }
    #[inline]
    pub fn outer(self, o: Self) -> M3<T> {
        M3 {
            c: [self * o.x, self * o.y, self * o.z],
        }
    }
    #[inline]
    pub fn min_el(self, o: Self) -> Self {
        V3::new(self.x.min(o.x), self.y.min(o.y), self.z.min(o.z))
    }
    #[inline]
    pub fn max_el(self, o: Self) -> Self {
        V3::new(self.x.max(o.x), self.y.max(o.y), self.z.max(o.z))
    }
    #[inline]
    pub fn is_finite(self) -> bool {
        self.x.is_finite() && self.y.is_finite() && self.z.is_finite()
    }
}

impl<T: Real> Add for V3<T> {
    type Output = Self;
    #[inline]
    fn add(self, o: Self) -> Self {
        V3::new(self.x + o.x, self.y + o.y, self.z + o.z)
    }
}
impl<T: Real> Sub for V3<T> {
    type Output = Self;
    #[inline]
    fn sub(self, o: Self) -> Self {
        V3::new(self.x - o.x, self.y - o.y, self.z - o.z)
    }
}
impl<T: Real> Neg for V3<T> {
    type Output = Self;
    #[inline]
    fn neg(self) -> Self {
        V3::new(-self.x, -self.y, -self.z)
    }
}
impl<T: Real> Mul<T> for V3<T> {
    type Output = Self;
    #[inline]
    fn mul(self, s: T) -> Self {
        V3::new(self.x * s, self.y * s, self.z * s)
    }
}
impl Mul<V3<f32>> for f32 {
    type Output = V3<f32>;
    #[inline]
    fn mul(self, v: V3<f32>) -> V3<f32> {
        v * self
    }
}
impl Mul<V3<f64>> for f64 {
    type Output = V3<f64>;
    #[inline]
    fn mul(self, v: V3<f64>) -> V3<f64> {
        v * self
    }
}
impl<T: Real> Div<T> for V3<T> {
    type Output = Self;
    #[inline]
    fn div(self, s: T) -> Self {
        V3::new(self.x / s, self.y / s, self.z / s)
    }
}
impl<T: Real> AddAssign for V3<T> {
    #[inline]
    fn add_assign(&mut self, o: Self) {
        *self = *self + o;
    }
}
impl<T: Real> SubAssign for V3<T> {
    #[inline]
    fn sub_assign(&mut self, o: Self) {
        *self = *self - o;
    }
}
impl<T: Real> MulAssign<T> for V3<T> {
    #[inline]
    fn mul_assign(&mut self, s: T) {
        *self = *self * s;
    }
}

/// A 3×3 matrix stored by columns.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct M3<T> {
    pub c: [V3<T>; 3],
}

impl<T: Real> M3<T> {
    #[inline]
    pub fn zero() -> Self {
        M3 { c: [V3::zero(); 3] }
    }
    #[inline]
    pub fn identity() -> Self {
        Self::diag(T::one())
    }
    #[inline]
    pub fn diag(s: T) -> Self {
        let (o, z) = (s, T::zero());
        M3 {
            c: [V3::new(o, z, z), V3::new(z, o, z), V3::new(z, z, o)],
        }
    }
    #[inline]
    pub fn from_cols(a: V3<T>, b: V3<T>, c: V3<T>) -> Self {
        M3 { c: [a, b, c] }
    }
    /// Entry at row `r`, column `c`.
    #[inline]
    pub fn at(&self, r: usize, c: usize) -> T {
        self.c[c].get(r)
    }
    #[inline]
    pub fn set(&mut self, r: usize, c: usize, v: T) {
        self.c[c].set(r, v);
    }
    #[inline]
    pub fn row(&self, r: usize) -> V3<T> {
        V3::new(self.c[0].get(r), self.c[1].get(r), self.c[2].get(r))
    }
    #[inline]
    pub fn transpose(&self) -> Self {
        M3 {
            c: [self.row(0), self.row(1), self.row(2)],
        }
    }
    #[inline]
    pub fn mul_v(&self, v: V3<T>) -> V3<T> {
        self.c[0] * v.x + self.c[1] * v.y + self.c[2] * v.z
    }
    #[inline]
    pub fn mul_m(&self, o: &Self) -> Self {
        M3 {
            c: [self.mul_v(o.c[0]), self.mul_v(o.c[1]), self.mul_v(o.c[2])],
        }
    }
    #[inline]
    pub fn scale(&self, s: T) -> Self {
        M3 {
            c: [self.c[0] * s, self.c[1] * s, self.c[2] * s],
        }
    }
    #[inline]
    pub fn add_m(&self, o: &Self) -> Self {
        M3 {
            c: [self.c[0] + o.c[0], self.c[1] + o.c[1], self.c[2] + o.c[2]],
        }
    }
    #[inline]
    pub fn sub_m(&self, o: &Self) -> Self {
        M3 {
            c: [self.c[0] - o.c[0], self.c[1] - o.c[1], self.c[2] - o.c[2]],
        }
    }
    #[inline]
    pub fn det(&self) -> T {
        self.c[0].dot(self.c[1].cross(self.c[2]))
    }
    #[inline]
    pub fn trace(&self) -> T {
        self.at(0, 0) + self.at(1, 1) + self.at(2, 2)
    }
    /// Frobenius norm.
    #[inline]
    pub fn norm(&self) -> T {
        (self.c[0].norm2() + self.c[1].norm2() + self.c[2].norm2()).sqrt()
    }
    /// The matrix of `v ×`, so that `skew(a) b = a × b`.
    #[inline]
    pub fn skew(v: V3<T>) -> Self {
        let z = T::zero();
        M3::from_cols(
            V3::new(z, v.z, -v.y),
            V3::new(-v.z, z, v.x),
            V3::new(v.y, -v.x, z),
        )
    }
    #[inline]
    pub fn cast<U: Real>(&self) -> M3<U> {
        M3 {
            c: [self.c[0].cast(), self.c[1].cast(), self.c[2].cast()],
        }
    }
    #[inline]
    pub fn is_finite(&self) -> bool {
        self.c.iter().all(|c| c.is_finite())
    }
}

pub type V3f = V3<f32>;
pub type V3d = V3<f64>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cross_and_skew_agree() {
        let a = V3d::new(1.0, -2.0, 0.5);
        let b = V3d::new(0.3, 4.0, -1.0);
        let c1 = a.cross(b);
        let c2 = M3::skew(a).mul_v(b);
        assert!((c1 - c2).norm() < 1e-15);
        assert!((a.dot(c1)).abs() < 1e-14);
    }

    #[test]
    fn outer_and_transpose() {
        let a = V3d::new(1.0, 2.0, 3.0);
        let b = V3d::new(4.0, 5.0, 6.0);
        let m = a.outer(b);
        assert_eq!(m.at(1, 2), 2.0 * 6.0);
        assert_eq!(m.transpose().at(2, 1), 2.0 * 6.0);
        assert!((m.mul_v(b) - a * b.norm2()).norm() < 1e-12);
    }
}
