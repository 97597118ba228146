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

    /// Security in bits for proofs whose largest LDE has 2^log_max_lde
    /// rows: the conjectured level (`bits`, what `kiln` prints and what
    /// acceptance by minimum security compares) and the provable one; see
    /// docs/SOUNDNESS.md for both derivations.
    pub fn security(&self, log_max_lde: u32) -> Security {
        let ProofOptions { log_blowup, num_queries, grinding_bits, hash: _, log_fri_arity, log_final_poly_len: _ } =
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
        let provable = provable_fri_bits(log_blowup, num_queries, grinding_bits, log_fri_arity, log_max_lde);
        Security { fri, field, hash, bits: fri.min(field).min(hash), provable: provable.min(field).min(hash) }
    }
}

/// Bits of E = F_p^3 (p^3 ~ 2^191.99).
const LOG_EXT_FIELD: f64 = 191.99;
/// Columns a DEEP quotient may batch, for the provable batching error.
const LOG_MAX_BATCHED: f64 = 10.0;

/// FRI's provable security in the Johnson-bound regime: proximity
/// 1 - sqrt(rho) - eta with eta = sqrt(rho)/100. A query passes a word that
/// far from the code with probability at most sqrt(rho) + eta; the
/// commit-phase and batching errors are the proximity-gaps bound for
/// folding with powers of one challenge (Ben-Sasson, Carmon, Haboeck,
/// Kopparty, Saraf 2025, Thm 4.2). The least of the three, in whole bits.
fn provable_fri_bits(log_blowup: u32, queries: usize, grinding: u32, log_arity: u32, log_lde: u32) -> u32 {
    let rate = 0.5f64.powi(log_blowup as i32);
    let sqrt_rate = rate.sqrt();
    let eta = sqrt_rate / 100.0;
    let proximity = 1.0 - sqrt_rate - eta;
    let query = queries as f64 * -(sqrt_rate + eta).log2() + grinding as f64;
    let m = ((sqrt_rate / eta).ceil().max(3.0)) + 0.5;
    let n = 2f64.powi(log_lde as i32);
    let gap = ((2.0 * m.powi(5) + 3.0 * m * proximity * rate) * n / (3.0 * rate * sqrt_rate) + m / sqrt_rate).log2();
    let commit = LOG_EXT_FIELD - gap - ((1u64 << log_arity) as f64 - 1.0).log2();
    let batching = LOG_EXT_FIELD - gap - LOG_MAX_BATCHED;
    query.min(commit).min(batching).floor().max(0.0) as u32
}

/// The parts of the security calculation.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Security {
    /// FRI under the ethSTARK conjecture: queries * log2(blowup) + grinding.
    pub fri: u32,
    pub field: u32,
    pub hash: u32,
    /// The conjectured level: the minimum of the three.
    pub bits: u32,
    /// The provable level (Johnson-bound regime), never above `bits`.
    pub provable: u32,
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
    fn provable_security_of_the_defaults() {
        // 44 queries at 0.986 bits each (-log2(0.505)), plus 16 of grinding;
        // the commit phase and batching stay above 110 bits up to 2^32 rows.
        let o = ProofOptions::default();
        for log_lde in [10, 22, 32] {
            let s = o.security(log_lde);
            assert_eq!(s.provable, 59, "2^{log_lde} rows");
            assert!(s.provable < s.bits);
        }
        assert!(provable_fri_bits(2, 0, 0, 2, 32) == 0);
        assert!(provable_fri_bits(2, 512, 0, 2, 32) > 110);
        assert!(provable_fri_bits(2, 512, 0, 2, 32) < 140);
        // More queries, a higher blowup or more grinding never lower it.
        let more = |o: ProofOptions| o.security(22).provable;
        assert!(more(ProofOptions { num_queries: 60, ..o }) > more(o));
        assert!(more(ProofOptions { log_blowup: 3, ..o }) > more(o));
        assert!(more(ProofOptions { grinding_bits: 20, ..o }) > more(o));
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
