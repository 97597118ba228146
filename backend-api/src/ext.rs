//! The cubic extension E = `F[X] / (X^3 - 2)`.
//!
//! X^3 - 2 is irreducible over Goldilocks: a cubic is reducible only if it
//! has a root, and a root would make 2 a cube. Since 3 divides p - 1, 2 is
//! a cube exactly when 2^((p-1)/3) = 1, and 2^((p-1)/3) != 1 (2 has order
//! 192 = 2^6 * 3, which does not divide (p-1)/3). The test
//! `modulus_is_irreducible` checks this.
//!
//! |E| = p^3, about 2^192: challenges drawn from it make the algebraic
//! soundness errors of LogUp, DEEP and FRI negligible.

use crate::field::{Field, F};
use serde::{Deserialize, Serialize};
use std::fmt;
use std::ops::{Add, AddAssign, Mul, MulAssign, Neg, Sub, SubAssign};

/// The non-residue W with X^3 = W.
pub const W: F = F::TWO;

/// An element a0 + a1*X + a2*X^2 of the cubic extension.
#[derive(Clone, Copy, Default, PartialEq, Eq, Hash, bytemuck::Pod, bytemuck::Zeroable, Serialize, Deserialize)]
#[repr(C)]
pub struct Ext(pub [F; 3]);

impl Ext {
    pub const ZERO: Ext = Ext([F::ZERO; 3]);
    pub const ONE: Ext = Ext([F::ONE, F::ZERO, F::ZERO]);

    #[inline]
    pub const fn new(a0: F, a1: F, a2: F) -> Ext {
        Ext([a0, a1, a2])
    }

    #[inline]
    pub const fn from_base(a: F) -> Ext {
        Ext([a, F::ZERO, F::ZERO])
    }

    #[inline]
    pub fn coords(self) -> [F; 3] {
        self.0
    }

    #[inline]
    pub fn is_zero(self) -> bool {
        self.0.iter().all(|c| c.is_zero())
    }

    #[inline]
    pub fn mul_base(self, b: F) -> Ext {
        Ext([self.0[0] * b, self.0[1] * b, self.0[2] * b])
    }

    #[inline]
    pub fn add_base(self, b: F) -> Ext {
        Ext([self.0[0] + b, self.0[1], self.0[2]])
    }

    #[inline]
    pub fn square(self) -> Ext {
        self * self
    }

    pub fn pow(self, mut e: u64) -> Ext {
        let mut base = self;
        let mut acc = Ext::ONE;
        while e > 0 {
            if e & 1 == 1 {
                acc *= base;
            }
            base = base.square();
            e >>= 1;
        }
        acc
    }

    /// The adjugate and the norm: a * adj(a) = N(a), which lies in the
    /// base field.
    fn adjugate_norm(self) -> (Ext, F) {
        let [a0, a1, a2] = self.0;
        let t0 = a0.square() - W * a1 * a2;
        let t1 = W * a2.square() - a0 * a1;
        let t2 = a1.square() - a0 * a2;
        (Ext([t0, t1, t2]), a0 * t0 + W * (a2 * t1 + a1 * t2))
    }

    /// Inverse through the norm: adj(a) / N(a).
    pub fn inverse(self) -> Option<Ext> {
        let (adj, norm) = self.adjugate_norm();
        Some(adj.mul_base(norm.inverse()?))
    }

    /// The characteristic polynomial c(t) = t^3 - e1 t^2 + e2 t - e3 of
    /// multiplication by self, as [e1, e2, e3]: e1 the trace (3 a0), e2
    /// three times adj(self)'s first coordinate, e3 the norm. Since c(self)
    /// = 0, a - self divides c(a) for a base element a: 1 / (self - a) =
    /// -(a^2 + a (self - e1) + self^2 - e1 self + e2) / c(a), so sums of
    /// such terms need only base-field inverses.
    pub fn char_poly(self) -> [F; 3] {
        let three = F::new(3);
        let (adj, norm) = self.adjugate_norm();
        [three * self.0[0], three * adj.0[0], norm]
    }

    /// The 24 canonical little-endian bytes, as hashed into transcripts.
    pub fn to_le_bytes(self) -> [u8; 24] {
        let mut out = [0u8; 24];
        for (i, c) in self.0.iter().enumerate() {
            out[i * 8..i * 8 + 8].copy_from_slice(&c.to_le_bytes());
        }
        out
    }
}

impl From<F> for Ext {
    fn from(a: F) -> Ext {
        Ext::from_base(a)
    }
}

impl Add for Ext {
    type Output = Ext;
    #[inline(always)]
    fn add(self, r: Ext) -> Ext {
        Ext([self.0[0] + r.0[0], self.0[1] + r.0[1], self.0[2] + r.0[2]])
    }
}

impl Sub for Ext {
    type Output = Ext;
    #[inline(always)]
    fn sub(self, r: Ext) -> Ext {
        Ext([self.0[0] - r.0[0], self.0[1] - r.0[1], self.0[2] - r.0[2]])
    }
}

impl Mul for Ext {
    type Output = Ext;
    #[inline(always)]
    fn mul(self, r: Ext) -> Ext {
        let [a0, a1, a2] = self.0;
        let [b0, b1, b2] = r.0;
        let c0 = a0 * b0 + W * (a1 * b2 + a2 * b1);
        let c1 = a0 * b1 + a1 * b0 + W * (a2 * b2);
        let c2 = a0 * b2 + a1 * b1 + a2 * b0;
        Ext([c0, c1, c2])
    }
}

impl Mul<F> for Ext {
    type Output = Ext;
    #[inline(always)]
    fn mul(self, r: F) -> Ext {
        self.mul_base(r)
    }
}

impl Add<F> for Ext {
    type Output = Ext;
    #[inline(always)]
    fn add(self, r: F) -> Ext {
        self.add_base(r)
    }
}

impl Sub<F> for Ext {
    type Output = Ext;
    #[inline(always)]
    fn sub(self, r: F) -> Ext {
        Ext([self.0[0] - r, self.0[1], self.0[2]])
    }
}

impl Neg for Ext {
    type Output = Ext;
    #[inline]
    fn neg(self) -> Ext {
        Ext([-self.0[0], -self.0[1], -self.0[2]])
    }
}

impl AddAssign for Ext {
    #[inline]
    fn add_assign(&mut self, r: Ext) {
        *self = *self + r;
    }
}
impl SubAssign for Ext {
    #[inline]
    fn sub_assign(&mut self, r: Ext) {
        *self = *self - r;
    }
}
impl MulAssign for Ext {
    #[inline]
    fn mul_assign(&mut self, r: Ext) {
        *self = *self * r;
    }
}

impl std::iter::Sum for Ext {
    fn sum<I: Iterator<Item = Ext>>(iter: I) -> Ext {
        iter.fold(Ext::ZERO, |a, b| a + b)
    }
}

impl fmt::Debug for Ext {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "({}, {}, {})", self.0[0], self.0[1], self.0[2])
    }
}

impl Field for Ext {
    const ZERO: Ext = Ext::ZERO;
    const ONE: Ext = Ext::ONE;
    fn is_zero(self) -> bool {
        Ext::is_zero(self)
    }
    fn inverse(self) -> Option<Ext> {
        Ext::inverse(self)
    }
}

/// Powers 1, x, x^2, ... (n of them).
pub fn powers<T: Field>(x: T, n: usize) -> Vec<T> {
    let mut out = Vec::with_capacity(n);
    let mut acc = T::ONE;
    for _ in 0..n {
        out.push(acc);
        acc *= x;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::field::P;

    fn e(a: u64, b: u64, c: u64) -> Ext {
        Ext::new(F::new(a), F::new(b), F::new(c))
    }

    #[test]
    fn modulus_is_irreducible() {
        // A cubic is reducible only if it has a root; X^3 - W has a root iff
        // W is a cube, and since 3 | p - 1, W is a cube iff W^((p-1)/3) = 1.
        assert_eq!((P - 1) % 3, 0);
        assert_ne!(W.pow((P - 1) / 3), F::ONE);
        // Consequence checked directly: no element of F cubes to W among a
        // few thousand candidates around small values and -small values.
        for v in 0..4096u64 {
            for c in [F::new(v), -F::new(v)] {
                assert_ne!(c * c * c, W);
            }
        }
    }

    #[test]
    fn char_poly_vanishes_and_inverts() {
        let samples = [e(3, 4, 5), e(P - 1, 7, P - 9), e(0, 0, 1), e(12, 0, 0), e(1 << 40, 99, 1 << 63)];
        for z in samples {
            let c = z.char_poly();
            let at = |t: Ext| ((t - c[0]) * t + c[1]) * t - c[2];
            assert_eq!(at(z), Ext::ZERO, "{z:?} is a root of its characteristic polynomial");
            for a in [F::new(5), F::new(P - 2), F::new(1 << 33), F::ONE] {
                let ca = ((a - c[0]) * a + c[1]) * a - c[2];
                let inv = -((z * z - z * c[0] + c[1]) + (z - c[0]) * a + a * a) * ca.inverse().unwrap();
                assert_eq!(inv * (z - a), Ext::ONE, "1 / ({z:?} - {a:?})");
            }
        }
    }

    #[test]
    fn inverse_roundtrip() {
        let samples = [e(1, 0, 0), e(0, 1, 0), e(3, 4, 5), e(P - 1, 7, P - 9), e(0, 0, 1)];
        for a in samples {
            assert_eq!(a * a.inverse().unwrap(), Ext::ONE);
        }
        assert!(Ext::ZERO.inverse().is_none());
    }

    #[test]
    fn multiplication_is_associative_and_distributive() {
        let (a, b, c) = (e(11, 22, 33), e(P - 5, 6, 1 << 40), e(9, 0, P - 1));
        assert_eq!((a * b) * c, a * (b * c));
        assert_eq!(a * (b + c), a * b + a * c);
        assert_eq!(a.pow(3), a * a * a);
    }
}
