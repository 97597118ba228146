//! The contract between a STARK prover and the devices that run its heavy
//! stages: the Goldilocks field and its cubic extension, host matrices,
//! evaluation domains, the hashes proofs commit with, the constraint IR and
//! LogUp interactions and their analysis for code generation, the
//! `Backend` trait family, each backend operation described once as a value
//! ([`op::Op`]) so a wrapper is one hook ([`wrap`]), shared shape
//! validation and typed errors, the lanes that let a device backend run
//! tables at once ([`Lane`]), the device-memory model a proof reserves its
//! bytes by ([`memory`]) and the per-device memory gate ([`gate`]).
//!
//! No I/O and no GPU code live here: backends depend on this crate, and the
//! prover depends on nothing else.

pub mod analysis;
pub mod backend;
pub mod domain;
pub mod error;
pub mod ext;
pub mod fault;
pub mod field;
pub mod gate;
pub mod hash;
pub mod host;
pub mod ir;
pub mod logup;
pub mod matrix;
pub mod memory;
pub mod op;
pub mod validate;
pub mod wrap;

pub use backend::{
    Backend, BackendBase, ComposeInputs, ComposeOps, Ctx, DeepColumns, DeepOps, DeepPoint, DeviceMatrix, DeviceTree,
    FriOps, Lane, LogUpInputs, LogUpOps, MerkleOps, NextRows, NttOps, RowOpening,
};
pub use domain::Coset;
pub use error::{BackendError, Result, Stage};
pub use ext::Ext;
pub use field::{batch_inverse, Field, F, GENERATOR};
pub use hash::{Digest, HashKind};
pub use host::HostPin;
pub use ir::{ConstraintBuilder, ConstraintDomain, ConstraintSystem, Expr, Layout, Leaf, Node};
pub use logup::{Interaction, LogUp};
pub use matrix::ColMatrix;
pub use memory::{DeviceSet, Reservation, TableDims};
pub use op::{Op, Out};
pub use wrap::{OpHook, Wrapper};
