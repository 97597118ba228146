//! Evaluation domains: multiplicative cosets `shift * <w>` of two-adic
//! subgroups, enumerated in natural order (point i is shift * w^i).

use crate::ext::Ext;
use crate::field::{F, TWO_ADICITY};
use serde::{Deserialize, Serialize};

/// The coset `shift * H` where `H` is the subgroup of order `2^log_size`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Coset {
    pub log_size: u32,
    pub shift: F,
}

impl Coset {
    pub fn new(log_size: u32, shift: F) -> Coset {
        assert!(log_size <= TWO_ADICITY, "domain of size 2^{log_size} is too large");
        Coset { log_size, shift }
    }

    /// The subgroup itself (shift 1).
    pub fn subgroup(log_size: u32) -> Coset {
        Coset::new(log_size, F::ONE)
    }

    pub fn size(&self) -> usize {
        1usize << self.log_size
    }

    /// The generator w of the subgroup.
    pub fn generator(&self) -> F {
        F::two_adic_root(self.log_size)
    }

    pub fn point(&self, i: usize) -> F {
        self.shift * self.generator().pow(i as u64)
    }

    /// The index of `z` in the coset, if `z` is one of its points. Cheap
    /// unless `z` lies on the coset (then a walk over the points).
    pub fn index_of(&self, z: Ext) -> Option<usize> {
        let [z0, z1, z2] = z.0;
        if !z1.is_zero() || !z2.is_zero() {
            return None;
        }
        let y = z0 * self.shift.inverse()?;
        if y.pow(self.size() as u64) != F::ONE {
            return None;
        }
        let w = self.generator();
        let mut acc = F::ONE;
        for i in 0..self.size() {
            if acc == y {
                return Some(i);
            }
            acc *= w;
        }
        None
    }

    /// All points in natural order.
    pub fn points(&self) -> Vec<F> {
        let w = self.generator();
        let mut out = Vec::with_capacity(self.size());
        let mut x = self.shift;
        for _ in 0..self.size() {
            out.push(x);
            x *= w;
        }
        out
    }
}
