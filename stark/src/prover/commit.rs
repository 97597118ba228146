//! The commitment layer: a committed matrix owns what its commitment needs
//! later (its low-degree extension, its Merkle tree, how a queried row is
//! recovered). Residency modes (keep the LDE, recompute it from the trace,
//! spill it to host memory) are choices this object will make; today it
//! keeps the LDE on the backend.

use backend_api::{Backend, Ctx, DeviceTree, Digest, HashKind, Result, RowOpening, F};

/// A matrix on `B` committed row by row.
pub struct Committed<B: Backend> {
    lde: B::Matrix,
    tree: B::Tree,
}

impl<B: Backend> Committed<B> {
    /// Extends `evals` (on the trace domain) to the coset of 2^log_blowup
    /// times its height shifted by `shift`, and commits the extension.
    pub fn extend(
        backend: &B,
        ctx: &Ctx,
        evals: &B::Matrix,
        log_blowup: u32,
        shift: F,
        hash: HashKind,
    ) -> Result<Committed<B>> {
        let lde = backend.coset_lde(ctx, evals, log_blowup, shift)?;
        Committed::rows(backend, ctx, lde, hash)
    }

    /// Commits a matrix already on its evaluation domain.
    pub fn rows(backend: &B, ctx: &Ctx, lde: B::Matrix, hash: HashKind) -> Result<Committed<B>> {
        let tree = backend.commit(ctx, &lde, hash)?;
        Ok(Committed { lde, tree })
    }

    pub fn root(&self) -> Digest {
        self.tree.root()
    }

    /// The committed matrix, for the stages that read all of it.
    pub fn matrix(&self) -> &B::Matrix {
        &self.lde
    }

    /// Rows `rows` with their authentication paths.
    pub fn open(&self, backend: &B, ctx: &Ctx, rows: &[usize]) -> Result<Vec<RowOpening>> {
        backend.open(ctx, &self.lde, &self.tree, rows)
    }
}
