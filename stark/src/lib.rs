//! The STARK prover and verifier, generic over `B: Backend`.
//!
//! Owns the AIR and machine traits, the Fiat-Shamir transcript, proof
//! options and their security level, the proof format, the prover (every
//! heavy stage through the backend) and the verifier (host only).

pub mod air;

pub use air::{Air, AuxTrace, Machine, SingleTable};
