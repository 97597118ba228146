//! The commitment layer: a committed matrix owns what its commitment needs
//! later (its low-degree extension, its Merkle tree, how a queried row is
//! recovered), kept on the backend, spilled to host memory
//! ([`super::spill`]) or rebuilt from its trace ([`super::recompute`]).
//! Every way, the root and the openings are the same bytes.

use super::recompute::{Recipe, Recomputed};
use super::spill::{self, Spiller};
use backend_api::hash::hash_node;
use backend_api::{
    Backend, BackendError, ColMatrix, Coset, Ctx, DeviceTree, Digest, Ext, HashKind, Result, RowOpening, Stage, F,
};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

/// A matrix on `B` committed row by row.
pub struct Committed<B: Backend> {
    store: Store<B>,
}

enum Store<B: Backend> {
    Kept { lde: B::Matrix, tree: B::Tree },
    Spilled(Spilled<B>),
    Recomputed(Recomputed<B>),
}

/// A spilled commitment: the matrix on the host, one subtree per block of
/// `block_rows` rows on the backend, and the levels above the blocks'
/// roots (the last is the root alone).
struct Spilled<B: Backend> {
    /// Blocks of columns.
    lde: Vec<ColMatrix>,
    block_rows: usize,
    subtrees: Vec<B::Tree>,
    top: Vec<Vec<Digest>>,
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
        Ok(Committed::kept(lde, tree))
    }

    /// A kept matrix and the tree the backend built of it.
    pub fn kept(lde: B::Matrix, tree: B::Tree) -> Committed<B> {
        Committed { store: Store::Kept { lde, tree } }
    }

    /// [`Committed::extend`] spilled: `evals` on the host, extended in
    /// column blocks and committed in row blocks.
    pub(crate) fn extend_spilled(
        s: &Spiller<B>,
        ctx: &Ctx,
        evals: &ColMatrix,
        log_blowup: u32,
        shift: F,
        hash: HashKind,
    ) -> Result<Committed<B>> {
        let lde = s.extend(ctx, evals, log_blowup, shift)?;
        Committed::rows_spilled(s, ctx, lde, hash)
    }

    /// Commits a host matrix block by block of rows: each block's subtree
    /// on the backend, the levels above them on the host.
    pub(crate) fn rows_spilled(s: &Spiller<B>, ctx: &Ctx, lde: Vec<ColMatrix>, hash: HashKind) -> Result<Committed<B>> {
        let height = lde.first().map_or(0, ColMatrix::height);
        let block_rows = s.block_rows(height, lde.iter().map(ColMatrix::width).sum());
        let mut subtrees = Vec::with_capacity(height / block_rows);
        for r0 in (0..height).step_by(block_rows) {
            let block = s.up(ctx, &s.host(|| spill::row_block(ctx, &lde, r0, r0 + block_rows))?)?;
            subtrees.push(s.backend.commit(ctx, &block, hash)?);
        }
        let mut top = vec![subtrees.iter().map(DeviceTree::root).collect::<Vec<Digest>>()];
        while let Some(level) = top.last().filter(|l| l.len() > 1) {
            let up = level.chunks(2).map(|p| hash_node(hash, &p[0], &p[1])).collect();
            top.push(up);
        }
        Ok(Committed { store: Store::Spilled(Spilled { lde, block_rows, subtrees, top }) })
    }

    /// Commits the LDE `recipe` describes without keeping it: its cosets
    /// are rebuilt from the trace whenever they are read.
    pub(crate) fn recomputed(b: &B, ctx: &Ctx, recipe: Recipe<B>, hash: HashKind) -> Result<Committed<B>> {
        Ok(Committed { store: Store::Recomputed(Recomputed::commit(b, ctx, recipe, hash)?) })
    }

    pub fn root(&self) -> Digest {
        match &self.store {
            Store::Kept { tree, .. } => tree.root(),
            Store::Spilled(s) => s.top.last().and_then(|l| l.first()).copied().unwrap_or_default(),
            Store::Recomputed(r) => r.root(),
        }
    }

    /// The columns' polynomials at `points`, off `domain` (the matrix's).
    /// Their degree is below the height over 2^log_rate, so every
    /// 2^log_rate-th row (the coset shift * <w^(2^log_rate)>) determines
    /// them exactly: only those rows are read, in place when kept, uploaded
    /// when spilled.
    pub(crate) fn evaluate_at(
        &self,
        s: Option<&Spiller<B>>,
        backend: &B,
        ctx: &Ctx,
        (domain, log_rate): (Coset, u32),
        points: &[Ext],
    ) -> Result<Vec<Vec<Ext>>> {
        let rows = Coset::new(domain.log_size - log_rate, domain.shift);
        match &self.store {
            Store::Recomputed(r) => r.recipe.evaluate_at(backend, ctx, points),
            Store::Kept { lde, .. } => backend.evaluate_at(ctx, lde, rows, log_rate, points),
            Store::Spilled(_) => backend.evaluate_at(ctx, self.piece(s, ctx, 0, log_rate)?.get(), rows, 0, points),
        }
    }

    /// The trace this commitment extends by 2^log_rate onto `domain`,
    /// rebuilt: every 2^log_rate-th row holds the trace's polynomial on the
    /// coset shift * H_n, which `coset_lde` of blowup 1 by the inverse
    /// shift takes back to H_n (a recomputed one's comes from its recipe).
    /// For the prover's report on a trace that fails its constraints: the
    /// traces are not kept past the LogUp round.
    pub(crate) fn trace(
        &self,
        s: Option<&Spiller<B>>,
        backend: &B,
        ctx: &Ctx,
        (domain, log_rate): (Coset, u32),
    ) -> Result<B::Matrix> {
        let back = domain.shift.inverse().ok_or_else(|| BackendError::invalid(Stage::CosetLde, "zero shift"))?;
        match &self.store {
            Store::Recomputed(r) => r.recipe.trace().piece(backend, ctx, 0, 0),
            Store::Kept { lde, .. } if log_rate > 0 => {
                backend.coset_lde(ctx, &backend.stride_rows(ctx, lde, 0, log_rate)?, 0, back)
            }
            _ => backend.coset_lde(ctx, self.piece(s, ctx, 0, log_rate)?.get(), 0, back),
        }
    }

    /// How a recomputed commitment's LDE is rebuilt.
    pub(crate) fn recipe(&self) -> Option<&Recipe<B>> {
        match &self.store {
            Store::Recomputed(r) => Some(&r.recipe),
            Store::Kept { .. } | Store::Spilled(_) => None,
        }
    }

    /// The committed matrix on the backend; `None` when it is spilled or
    /// recomputed (the stages that read it take it by [`Committed::piece`]).
    pub fn matrix(&self) -> Option<&B::Matrix> {
        match &self.store {
            Store::Kept { lde, .. } => Some(lde),
            Store::Spilled(_) | Store::Recomputed(_) => None,
        }
    }

    /// Rows `rows` with their authentication paths.
    pub fn open(&self, backend: &B, ctx: &Ctx, rows: &[usize]) -> Result<Vec<RowOpening>> {
        self.open_counting(backend, ctx, rows, &AtomicU64::new(0))
    }

    /// [`Committed::open`], adding the bytes a spilled matrix uploads to `moved`.
    pub(crate) fn open_counting(
        &self,
        backend: &B,
        ctx: &Ctx,
        rows: &[usize],
        moved: &AtomicU64,
    ) -> Result<Vec<RowOpening>> {
        match &self.store {
            Store::Kept { lde, tree, .. } => backend.open(ctx, lde, tree, rows),
            Store::Spilled(s) => s.open(backend, ctx, rows, moved),
            Store::Recomputed(r) => r.open(backend, ctx, rows),
        }
    }

    /// The committed matrix's piece `j` of 2^log_pieces: the whole matrix
    /// on the backend when kept (one piece), else its rows on coset `j` of
    /// the trace domain, uploaded or rebuilt.
    pub(crate) fn piece(&self, s: Option<&Spiller<B>>, ctx: &Ctx, j: usize, log_pieces: u32) -> Result<Piece<'_, B>> {
        match &self.store {
            Store::Kept { lde, .. } => Piece::kept(lde, s, ctx, j, log_pieces),
            Store::Spilled(sp) => Piece::spilled(s, ctx, &sp.lde, j, log_pieces),
            Store::Recomputed(r) => Piece::rebuilt(&r.recipe, s, ctx, j, log_pieces),
        }
    }
}

/// A matrix that is not committed (a trace, fixed columns' LDE), kept on
/// the backend (shared with a recomputed commitment's recipe), spilled to
/// the host, or rebuilt from its trace; read whole or coset by coset.
pub(crate) enum Held<B: Backend> {
    Kept(Arc<B::Matrix>),
    /// Blocks of columns.
    Spilled(Vec<ColMatrix>),
    Recomputed(Recipe<B>),
}

impl<B: Backend> Held<B> {
    pub fn piece(&self, s: Option<&Spiller<B>>, ctx: &Ctx, j: usize, log_pieces: u32) -> Result<Piece<'_, B>> {
        match self {
            Held::Kept(m) => Piece::kept(m.as_ref(), s, ctx, j, log_pieces),
            Held::Spilled(host) => Piece::spilled(s, ctx, host, j, log_pieces),
            Held::Recomputed(r) => Piece::rebuilt(r, s, ctx, j, log_pieces),
        }
    }
}

/// One piece of a matrix on the backend: the kept matrix itself, or an
/// upload of spilled rows or a rebuilt coset (freed when dropped).
pub(crate) enum Piece<'a, B: Backend> {
    Kept(&'a B::Matrix),
    Owned(B::Matrix),
}

impl<'a, B: Backend> Piece<'a, B> {
    /// A kept matrix whole, or (read by pieces beside tables that are not
    /// kept) its rows on piece `j`, taken on the backend.
    fn kept(m: &'a B::Matrix, s: Option<&Spiller<B>>, ctx: &Ctx, j: usize, log_pieces: u32) -> Result<Piece<'a, B>> {
        if log_pieces == 0 {
            return Ok(Piece::Kept(m));
        }
        let Some(s) = s else { return Err(unspilled(Stage::Deep)) };
        Ok(Piece::Owned(s.backend.stride_rows(ctx, m, j, log_pieces)?))
    }

    fn spilled(
        s: Option<&Spiller<B>>,
        ctx: &Ctx,
        host: &[ColMatrix],
        j: usize,
        log_pieces: u32,
    ) -> Result<Piece<'a, B>> {
        let Some(s) = s else { return Err(unspilled(Stage::Upload)) };
        Ok(Piece::Owned(s.up(ctx, &s.host(|| spill::coset_rows(ctx, host, j, log_pieces))?)?))
    }

    /// Piece `j` of a recomputed LDE, rebuilt on the spiller's backend.
    fn rebuilt(r: &Recipe<B>, s: Option<&Spiller<B>>, ctx: &Ctx, j: usize, log_pieces: u32) -> Result<Piece<'a, B>> {
        let Some(s) = s else { return Err(unspilled(Stage::CosetLde)) };
        Ok(Piece::Owned(r.piece(s.backend, ctx, j, log_pieces)?))
    }

    pub fn get(&self) -> &B::Matrix {
        match self {
            Piece::Kept(m) => m,
            Piece::Owned(m) => m,
        }
    }
}

impl<B: Backend> Spilled<B> {
    /// Each block with a queried row goes back to the backend once, to be
    /// opened against its subtree; the path continues through the levels
    /// above the blocks.
    fn open(&self, backend: &B, ctx: &Ctx, rows: &[usize], moved: &AtomicU64) -> Result<Vec<RowOpening>> {
        let height = self.lde.first().map_or(0, ColMatrix::height);
        if let Some(&r) = rows.iter().find(|&&r| r >= height) {
            let why = format!("row {r} is out of range for {height} rows");
            return Err(BackendError::invalid(Stage::MerkleOpen, why));
        }
        let mut out: Vec<Option<RowOpening>> = vec![None; rows.len()];
        for (b, subtree) in self.subtrees.iter().enumerate() {
            let r0 = b * self.block_rows;
            let here: Vec<usize> = (0..rows.len()).filter(|&q| rows[q] / self.block_rows == b).collect();
            if here.is_empty() {
                continue;
            }
            let block = spill::row_block(ctx, &self.lde, r0, r0 + self.block_rows)?;
            moved.fetch_add(spill::bytes(&block), Ordering::Relaxed);
            let block = backend.upload(ctx, &block)?;
            let local: Vec<usize> = here.iter().map(|&q| rows[q] - r0).collect();
            for (q, mut opening) in here.into_iter().zip(backend.open(ctx, &block, subtree, &local)?) {
                opening.path.extend(self.top_path(b));
                out[q] = Some(opening);
            }
        }
        Ok(out.into_iter().flatten().collect())
    }

    /// Siblings of block `b`'s root up to the root.
    fn top_path(&self, mut b: usize) -> Vec<Digest> {
        let mut path = vec![];
        for level in self.top.iter().take(self.top.len() - 1) {
            path.push(level[b ^ 1]);
            b /= 2;
        }
        path
    }
}

/// A spilled or recomputed matrix reached by a prover that keeps its
/// matrices (a bug).
fn unspilled(stage: Stage) -> BackendError {
    BackendError::invalid(stage, "a matrix not kept read by a prover that keeps its matrices")
}
