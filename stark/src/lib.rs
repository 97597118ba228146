//! The STARK prover and verifier, generic over `B: Backend`.
//!
//! Owns the AIR and machine traits, the Fiat-Shamir transcript, proof
//! options and their security level, the proof format, the prover (every
//! heavy stage through the backend) and the verifier (host only, no
//! backend), the tools that test soundness for any machine ([`attack`]:
//! the malicious-witness harness and the proof fuzzer), batches of
//! proofs on one or several backends ([`batch`]), and statements proven as
//! segments whose buses balance together ([`segments`]). A proof runs each
//! table's stages on a lane of its own and reserves its device set first
//! (`BackendBase::reserve`), so tables and proofs share a device; the
//! transcript absorbs results in table order whatever finished first.

pub mod air;
pub mod attack;
pub mod batch;
pub mod debug;
pub mod examples;
pub mod options;
pub mod poly;
pub mod proof;
pub mod protocol;
pub mod prover;
pub mod segments;
pub mod transcript;
pub mod verifier;

pub use air::{check_aux_layout, host_aux, Air, Machine, SingleTable};
pub use options::{OptionsError, ProofOptions, Security};
pub use proof::{DecodeError, Proof};
pub use protocol::Challenges;
pub use prover::{
    device_set, prove, prove_with_settings, prove_with_stats, ProveError, ProveObserver, ProveSettings, ProveStats,
    Residency, SpillTimes, StageTiming, Tables,
};
pub use verifier::{verify, verify_with, Acceptance, VerifyError};
