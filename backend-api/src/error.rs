//! Typed errors. Every backend operation returns `Result<_, BackendError>`;
//! no device error panics and nothing falls back silently.

use serde::{Deserialize, Serialize};
use std::fmt;
use thiserror::Error;

/// The heavy stages of the prover, as named in errors, counters and logs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub enum Stage {
    Upload,
    Download,
    Ntt,
    InverseNtt,
    CosetLde,
    MerkleCommit,
    MerkleOpen,
    LogUp,
    Compose,
    QuotientSplit,
    OutOfDomain,
    Deep,
    FriFold,
    Grind,
}

impl Stage {
    pub const ALL: [Stage; 14] = [
        Stage::Upload,
        Stage::Download,
        Stage::Ntt,
        Stage::InverseNtt,
        Stage::CosetLde,
        Stage::MerkleCommit,
        Stage::MerkleOpen,
        Stage::LogUp,
        Stage::Compose,
        Stage::QuotientSplit,
        Stage::OutOfDomain,
        Stage::Deep,
        Stage::FriFold,
        Stage::Grind,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Stage::Upload => "upload",
            Stage::Download => "download",
            Stage::Ntt => "ntt",
            Stage::InverseNtt => "intt",
            Stage::CosetLde => "coset-lde",
            Stage::MerkleCommit => "merkle-commit",
            Stage::MerkleOpen => "merkle-open",
            Stage::LogUp => "logup-aux",
            Stage::Compose => "compose",
            Stage::QuotientSplit => "quotient-split",
            Stage::OutOfDomain => "out-of-domain",
            Stage::Deep => "deep",
            Stage::FriFold => "fri-fold",
            Stage::Grind => "grind",
        }
    }
}

impl fmt::Display for Stage {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Everything a backend operation can fail with.
#[derive(Clone, Debug, Error, PartialEq, Eq)]
pub enum BackendError {
    /// The caller passed inputs of the wrong shape (sizes, widths, counts).
    /// Every backend validates through the same functions in
    /// [`crate::validate`], so the same bad call gives the same error.
    #[error("{stage}: invalid input: {detail}")]
    InvalidInput { stage: Stage, detail: String },

    /// The quotient has degree past its bound: the trace of `table` does
    /// not satisfy its constraints.
    #[error("table {table}: the trace does not satisfy its constraints (quotient degree exceeds {bound})")]
    ConstraintsNotSatisfied { table: String, bound: usize },

    /// The device refused work: an allocation, memory admission, a launch
    /// or a transfer.
    #[error(
        "device declined {stage} for table {table}: {requested_bytes} bytes requested, {free_bytes} free ({reason})"
    )]
    DeviceDecline { stage: Stage, table: String, requested_bytes: u64, free_bytes: u64, reason: String },

    /// Host memory ran out: an allocation of the backend's host buffers
    /// failed. Not a decline: recomputing on the host would need more host
    /// memory, so recovery returns it at once (see `backend_cpu::Resilient`).
    #[error(
        "host memory exhausted in {stage} for table {table}: {requested_bytes} bytes could not be allocated \
         (the proof needs more memory than this process may use)"
    )]
    HostAlloc { stage: Stage, table: String, requested_bytes: u64 },

    /// Any other device failure (bad kernel, driver error).
    #[error("device error in {stage} for table {table}: {message}")]
    Device { stage: Stage, table: String, message: String },

    /// The backend cannot run here (no driver, no device, not compiled in).
    #[error("backend unavailable: {0}")]
    Unavailable(String),

    /// A lockstep cross-check found two backends disagreeing.
    #[error("cross-check: {stage} on table {table} differs at column {column}, row {row}: {left} vs {right}")]
    Mismatch { stage: Stage, table: String, column: usize, row: usize, left: String, right: String },
}

impl BackendError {
    pub fn invalid(stage: Stage, detail: impl Into<String>) -> BackendError {
        BackendError::InvalidInput { stage, detail: detail.into() }
    }

    /// A failed host allocation of `len` elements of `T` in `stage`.
    pub fn host_alloc<T>(stage: Stage, table: &str, len: usize) -> BackendError {
        let requested_bytes = (len as u64).saturating_mul(std::mem::size_of::<T>() as u64);
        BackendError::HostAlloc { stage, table: table.to_string(), requested_bytes }
    }

    /// This failure, met by an operation that writes over its input after
    /// that input is partly overwritten: a decline there is a `Device`
    /// error, since nothing may recompute from the lost values.
    pub fn input_lost(self, stage: Stage, table: &str) -> BackendError {
        match self {
            BackendError::DeviceDecline { .. } => BackendError::Device {
                stage,
                table: table.to_string(),
                message: format!("an in-place transform was interrupted and its input is lost: {self}"),
            },
            e => e,
        }
    }

    /// Whether this is a device decline, which recovery may absorb.
    pub fn is_decline(&self) -> bool {
        matches!(self, BackendError::DeviceDecline { .. })
    }
}

pub type Result<T, E = BackendError> = std::result::Result<T, E>;
