//! Proof options and the security level they give.

use backend_api::validate::{MAX_GRIND_BITS, MAX_LOG_ARITY, MAX_LOG_BLOWUP};
use backend_api::HashKind;
use serde::{Deserialize, Serialize};
use thiserror::Error;

/// Everything that shapes a proof besides the statement.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProofOptions {
    /// log2 of the Reed-Solomon blowup (1..=4: blowup 2, 4, 8, 16).
    pub log_blowup: u32,
    pub num_queries: usize,
    /// Proof-of-work bits ground before the queries are drawn.
    pub grinding_bits: u32,
    pub hash: HashKind,
    /// log2 of the FRI folding factor (1..=4).
    pub log_fri_arity: u32,
    /// log2 of the number of coefficients of the final FRI polynomial.
    pub log_final_poly_len: u32,
}

/// The smallest conjectured security the default options must reach.
pub const DEFAULT_MIN_SECURITY_BITS: u32 = 100;
/// Queries above this add nothing but size; also bounds decoding work.
pub const MAX_QUERIES: usize = 512;
pub const MAX_LOG_FINAL_POLY_LEN: u32 = 10;

impl Default for ProofOptions {
    /// Blowup 4, 44 queries, 16 grinding bits: 44 * 2 + 16 = 104
    /// conjectured bits.
    fn default() -> ProofOptions {
        ProofOptions {
            log_blowup: 2,
            num_queries: 44,
            grinding_bits: 16,
            hash: HashKind::Blake3,
            log_fri_arity: 2,
            log_final_poly_len: 3,
        }
    }
}

#[derive(Clone, Debug, PartialEq, Eq, Error)]
pub enum OptionsError {
    #[error("blowup {0} is not one of 2, 4, 8, 16")]
    Blowup(u64),
    #[error("{0} queries: expected 1 to {MAX_QUERIES}")]
    Queries(usize),
    #[error("{0} grinding bits: expected at most {MAX_GRIND_BITS}")]
    Grinding(u32),
    #[error("FRI folding factor 2^{0}: expected 2, 4, 8 or 16")]
    Arity(u32),
    #[error("final polynomial of 2^{0} coefficients: expected at most 2^{MAX_LOG_FINAL_POLY_LEN}")]
    FinalPoly(u32),
}

impl ProofOptions {
    pub fn with_blowup(mut self, blowup: u64) -> Result<ProofOptions, OptionsError> {
        if !blowup.is_power_of_two() || !(2..=16).contains(&blowup) {
            return Err(OptionsError::Blowup(blowup));
        }
        self.log_blowup = blowup.trailing_zeros();
        Ok(self)
    }

    pub fn blowup(&self) -> u64 {
        1 << self.log_blowup
    }

    pub fn validate(&self) -> Result<(), OptionsError> {
        if self.log_blowup == 0 || self.log_blowup > MAX_LOG_BLOWUP {
            return Err(OptionsError::Blowup(1u64.checked_shl(self.log_blowup).unwrap_or(0)));
        }
        if self.num_queries == 0 || self.num_queries > MAX_QUERIES {
            return Err(OptionsError::Queries(self.num_queries));
        }
        if self.grinding_bits > MAX_GRIND_BITS {
            return Err(OptionsError::Grinding(self.grinding_bits));
        }
        if self.log_fri_arity == 0 || self.log_fri_arity > MAX_LOG_ARITY {
            return Err(OptionsError::Arity(self.log_fri_arity));
        }
        if self.log_final_poly_len > MAX_LOG_FINAL_POLY_LEN {
            return Err(OptionsError::FinalPoly(self.log_final_poly_len));
        }
        Ok(())
    }

    /// Conjectured security in bits for proofs whose largest LDE has
    /// 2^log_max_lde rows; see docs/SOUNDNESS.md for the derivation.
    pub fn security(&self, log_max_lde: u32) -> Security {
        let ProofOptions { log_blowup, num_queries, grinding_bits, hash: _, log_fri_arity: _, log_final_poly_len: _ } =
            *self;
        // Each FRI query passes a far-from-code word with probability at most
        // rho = 1/blowup (the conjecture of the ethSTARK analysis); grinding
        // makes each attempt cost 2^grinding_bits hashes.
        let fri = num_queries as u32 * log_blowup + grinding_bits;
        // Algebraic errors (DEEP, LogUp, batching) are bounded by degree over
        // |E| ~ 2^192; allow 2^log_max_lde degree and 2^8 for term counts.
        let field = 191u32.saturating_sub(log_max_lde + 8);
        // 256-bit digests: 128-bit collision resistance.
        let hash = 128;
        Security { fri, field, hash, bits: fri.min(field).min(hash) }
    }
}

/// The parts of the security calculation.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Security {
    pub fri: u32,
    pub field: u32,
    pub hash: u32,
    /// The minimum of the three.
    pub bits: u32,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_options_reach_100_bits() {
        let o = ProofOptions::default();
        o.validate().unwrap();
        assert!(o.security(24).bits >= DEFAULT_MIN_SECURITY_BITS);
        assert_eq!(o.security(24).fri, 104);
    }

    #[test]
    fn invalid_options_are_typed_errors() {
        assert_eq!(ProofOptions::default().with_blowup(3), Err(OptionsError::Blowup(3)));
        assert_eq!(ProofOptions::default().with_blowup(32), Err(OptionsError::Blowup(32)));
        let o = ProofOptions { num_queries: 0, ..ProofOptions::default() };
        assert_eq!(o.validate(), Err(OptionsError::Queries(0)));
        let o = ProofOptions { log_fri_arity: 5, ..ProofOptions::default() };
        assert_eq!(o.validate(), Err(OptionsError::Arity(5)));
    }
}
