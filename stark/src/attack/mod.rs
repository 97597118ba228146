//! Soundness testing for any machine: what a cheating prover would try.
//!
//! - [`witness`]: the malicious-witness harness. From a valid witness it
//!   changes one cell of every column at the first, a middle, the last real
//!   and a padding row, runs semantic attacks the AIR's author supplies,
//!   and for each checks that the constraints or buses fail and that a
//!   proof of it, forged with [`forge`], is rejected by the verifier.
//! - [`proof`]: a structure-aware proof fuzzer that mutates a decoded
//!   proof's numbers, lengths and nested vectors; the verifier must reject
//!   every mutant with a typed error, never a panic.
//!
//! A new AIR gets both in a few lines (see `stark/tests/soundness.rs`).

pub mod proof;
pub mod witness;

use crate::air::Machine;
use crate::options::ProofOptions;
use crate::proof::Proof;
use crate::prover::{prove_as, Challenges, Conduct, ProveError};
use backend_api::{Backend, ColMatrix, F};

/// Proves `traces` as a cheating prover would: where the honest prover
/// refuses (buses that do not balance, a composition that is not of low
/// degree), it commits to what it has and keeps the low-degree part. The
/// verifier must reject whatever this returns for a false statement.
pub fn forge<B: Backend, M: Machine + ?Sized>(
    backend: &B,
    machine: &M,
    traces: Vec<ColMatrix>,
    publics: &[F],
    options: &ProofOptions,
) -> Result<Proof, ProveError> {
    forge_with(backend, machine, traces, publics, options, Challenges::Own)
}

/// [`forge`], with the LogUp challenges from `challenges` (a segment of a
/// set that shares them, [`crate::segments`]).
pub fn forge_with<B: Backend, M: Machine + ?Sized>(
    backend: &B,
    machine: &M,
    traces: Vec<ColMatrix>,
    publics: &[F],
    options: &ProofOptions,
    challenges: Challenges,
) -> Result<Proof, ProveError> {
    let settings = crate::prover::ProveSettings::default();
    prove_as(Conduct::Forge, backend, machine, traces, publics, options, challenges, &settings).map(|(p, _)| p)
}
