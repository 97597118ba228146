//! The Goldilocks prime field, p = 2^64 - 2^32 + 1.
//!
//! Elements are always held in canonical form (`0 <= v < p`), so the bytes
//! of an element are the same wherever it is hashed, compared or serialized,
//! and every backend can compare buffers with `==`.

use serde::{Deserialize, Serialize};
use std::fmt;
use std::ops::{Add, AddAssign, Mul, MulAssign, Neg, Sub, SubAssign};

/// The field modulus.
pub const P: u64 = 0xFFFF_FFFF_0000_0001;
/// 2^64 - p = 2^32 - 1: the correction added when a sum wraps past 2^64.
const EPSILON: u64 = 0xFFFF_FFFF;
/// p - 1 = 2^32 * 3 * 5 * 17 * 257 * 65537.
pub const TWO_ADICITY: u32 = 32;
/// A generator of the whole multiplicative group; also the coset shift of
/// every low-degree extension (it lies in no two-adic subgroup).
pub const GENERATOR: F = F(7);
/// 7^((p-1)/2^32): a primitive 2^32-th root of unity.
const TWO_ADIC_ROOT: u64 = 1_753_635_133_440_165_772;

/// A Goldilocks field element in canonical form.
#[derive(Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord, Hash, bytemuck::Pod, bytemuck::Zeroable, Serialize)]
#[repr(transparent)]
pub struct F(u64);

impl<'de> Deserialize<'de> for F {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let v = u64::deserialize(d)?;
        F::from_canonical(v).ok_or_else(|| serde::de::Error::custom("field element is not canonical"))
    }
}

impl F {
    pub const ZERO: F = F(0);
    pub const ONE: F = F(1);
    pub const TWO: F = F(2);
    pub const NEG_ONE: F = F(P - 1);

    /// Reduces any u64 into the field.
    #[inline]
    pub const fn new(v: u64) -> F {
        F(if v >= P { v - P } else { v })
    }

    /// Accepts only canonical values: for decoding untrusted bytes.
    #[inline]
    pub const fn from_canonical(v: u64) -> Option<F> {
        if v < P {
            Some(F(v))
        } else {
            None
        }
    }

    /// The canonical integer value.
    #[inline]
    pub const fn value(self) -> u64 {
        self.0
    }

    #[inline]
    pub const fn to_le_bytes(self) -> [u8; 8] {
        self.0.to_le_bytes()
    }

    #[inline]
    pub fn is_zero(self) -> bool {
        self.0 == 0
    }

    #[inline]
    pub fn square(self) -> F {
        self * self
    }

    #[inline]
    pub fn double(self) -> F {
        self + self
    }

    pub fn pow(self, mut e: u64) -> F {
        let mut base = self;
        let mut acc = F::ONE;
        while e > 0 {
            if e & 1 == 1 {
                acc *= base;
            }
            base = base.square();
            e >>= 1;
        }
        acc
    }

    /// Multiplicative inverse; `None` for zero.
    pub fn inverse(self) -> Option<F> {
        if self.is_zero() {
            None
        } else {
            Some(self.pow(P - 2))
        }
    }

    /// A primitive 2^log_n-th root of unity (log_n <= 32).
    pub fn two_adic_root(log_n: u32) -> F {
        assert!(log_n <= TWO_ADICITY, "no 2^{log_n}-th root of unity in Goldilocks");
        F(TWO_ADIC_ROOT).pow(1u64 << (TWO_ADICITY - log_n))
    }

    /// Reduces a 128-bit product into the field (canonical result).
    #[inline(always)]
    pub fn reduce128(x: u128) -> F {
        let lo = x as u64;
        let hi = (x >> 64) as u64;
        let hi_hi = hi >> 32;
        let hi_lo = hi & EPSILON;
        // 2^96 = -1 and 2^64 = EPSILON (mod p).
        let (mut t0, borrow) = lo.overflowing_sub(hi_hi);
        if borrow {
            t0 = t0.wrapping_sub(EPSILON);
        }
        let t1 = hi_lo * EPSILON;
        let (mut r, carry) = t0.overflowing_add(t1);
        if carry {
            r = r.wrapping_add(EPSILON);
        }
        F::new(r)
    }
}

impl Add for F {
    type Output = F;
    #[inline(always)]
    fn add(self, rhs: F) -> F {
        let (s, carry) = self.0.overflowing_add(rhs.0);
        let s = if carry { s.wrapping_add(EPSILON) } else { s };
        F::new(s)
    }
}

impl Sub for F {
    type Output = F;
    #[inline(always)]
    fn sub(self, rhs: F) -> F {
        let (d, borrow) = self.0.overflowing_sub(rhs.0);
        F(if borrow { d.wrapping_sub(EPSILON) } else { d })
    }
}

impl Mul for F {
    type Output = F;
    #[inline(always)]
    fn mul(self, rhs: F) -> F {
        F::reduce128(self.0 as u128 * rhs.0 as u128)
    }
}

impl Neg for F {
    type Output = F;
    #[inline]
    fn neg(self) -> F {
        if self.0 == 0 {
            self
        } else {
            F(P - self.0)
        }
    }
}

impl AddAssign for F {
    #[inline]
    fn add_assign(&mut self, rhs: F) {
        *self = *self + rhs;
    }
}
impl SubAssign for F {
    #[inline]
    fn sub_assign(&mut self, rhs: F) {
        *self = *self - rhs;
    }
}
impl MulAssign for F {
    #[inline]
    fn mul_assign(&mut self, rhs: F) {
        *self = *self * rhs;
    }
}

impl std::iter::Sum for F {
    fn sum<I: Iterator<Item = F>>(iter: I) -> F {
        iter.fold(F::ZERO, |a, b| a + b)
    }
}

impl std::iter::Product for F {
    fn product<I: Iterator<Item = F>>(iter: I) -> F {
        iter.fold(F::ONE, |a, b| a * b)
    }
}

impl From<u32> for F {
    fn from(v: u32) -> F {
        F(v as u64)
    }
}

impl fmt::Debug for F {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)
    }
}

impl fmt::Display for F {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)
    }
}

/// Inverts every element with one field inversion (Montgomery's trick).
/// Zeros are left as zero, so callers never branch per element.
pub fn batch_inverse<T: Field>(values: &[T]) -> Vec<T> {
    let mut prefix = Vec::with_capacity(values.len());
    let mut acc = T::ONE;
    for &v in values {
        prefix.push(acc);
        if !v.is_zero() {
            acc *= v;
        }
    }
    let mut inv = acc.inverse().expect("product of non-zero elements is non-zero");
    let mut out = vec![T::ZERO; values.len()];
    for i in (0..values.len()).rev() {
        let v = values[i];
        if !v.is_zero() {
            out[i] = prefix[i] * inv;
            inv *= v;
        }
    }
    out
}

/// What the base field and its extension share, so generic code (batch
/// inversion, polynomial evaluation) is written once.
pub trait Field:
    Copy
    + Send
    + Sync
    + PartialEq
    + fmt::Debug
    + Add<Output = Self>
    + Sub<Output = Self>
    + Mul<Output = Self>
    + Neg<Output = Self>
    + AddAssign
    + SubAssign
    + MulAssign
    + 'static
{
    const ZERO: Self;
    const ONE: Self;
    fn is_zero(self) -> bool;
    fn inverse(self) -> Option<Self>;
}

impl Field for F {
    const ZERO: F = F::ZERO;
    const ONE: F = F::ONE;
    fn is_zero(self) -> bool {
        self.0 == 0
    }
    fn inverse(self) -> Option<F> {
        F::inverse(self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn naive_mul(a: u64, b: u64) -> u64 {
        ((a as u128 * b as u128) % P as u128) as u64
    }

    #[test]
    fn arithmetic_matches_u128_reference() {
        let samples = [0, 1, 2, EPSILON, P - 1, P - 2, 1 << 63, (1 << 32) + 5, 0x1234_5678_9abc_def0];
        for &a in &samples {
            for &b in &samples {
                let (fa, fb) = (F::new(a), F::new(b));
                let (a, b) = (fa.value(), fb.value());
                assert_eq!((fa * fb).value(), naive_mul(a, b));
                assert_eq!((fa + fb).value(), ((a as u128 + b as u128) % P as u128) as u64);
                assert_eq!((fa - fb).value(), ((a as u128 + P as u128 - b as u128) % P as u128) as u64);
            }
        }
    }

    #[test]
    fn roots_of_unity_have_exact_order() {
        for log_n in [1u32, 2, 5, 16, 32] {
            let w = F::two_adic_root(log_n);
            assert_eq!(w.pow(1 << log_n), F::ONE);
            assert_ne!(w.pow(1 << (log_n - 1)), F::ONE);
        }
        // 7 generates the whole group: it is not a square and not a cube, etc.
        for q in [2u64, 3, 5, 17, 257, 65537] {
            assert_ne!(GENERATOR.pow((P - 1) / q), F::ONE);
        }
    }

    #[test]
    fn inverse_and_batch_inverse() {
        let vals: Vec<F> = (0..50u64).map(|i| F::new(i.wrapping_mul(0x9e37_79b9_7f4a_7c15))).collect();
        let inv = batch_inverse(&vals);
        for (v, i) in vals.iter().zip(&inv) {
            if v.is_zero() {
                assert!(i.is_zero());
            } else {
                assert_eq!(*v * *i, F::ONE);
            }
        }
        assert!(F::ZERO.inverse().is_none());
    }

    #[test]
    fn non_canonical_values_are_rejected_on_decode() {
        assert!(F::from_canonical(P).is_none());
        assert!(F::from_canonical(u64::MAX).is_none());
        assert_eq!(F::from_canonical(P - 1), Some(F::NEG_ONE));
    }
}
