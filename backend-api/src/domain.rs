//! Evaluation domains: multiplicative cosets `shift * <w>` of two-adic
//! subgroups, enumerated in natural order (point i is shift * w^i).

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
