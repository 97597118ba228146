//! Recomputed residency: a committed LDE is not kept anywhere. Its trace
//! stays on the backend, and each coset of the LDE is rebuilt from it
//! (`coset_lde` of blowup 1 with the coset's shift) whenever a stage
//! reads it: once to commit, once for composition, once for DEEP, and
//! for the queried rows. A recomputed table's quotient parts have no
//! trace to rebuild them from: they are held as their cosets instead.
//!
//! The bytes do not change. Rows j, j + B, j + 2B, ... of an LDE of
//! blowup B are its values on coset j of the trace domain, so
//! - the tree is built on the host from the cosets' leaf digests,
//!   interleaved back into row order;
//! - composition and DEEP already run coset by coset when a table is not
//!   kept ([`super::tables`]);
//! - an opening takes the row's values from its coset and the path from
//!   the host tree;
//! - a polynomial of degree below the trace's height is evaluated off the
//!   domain from one coset (interpolation on it is exact).

use super::commit::Piece;
use backend_api::hash::hash_node;
use backend_api::{
    Backend, BackendError, Coset, Ctx, DeviceMatrix, Digest, Ext, HashKind, Result, RowOpening, Stage, F,
};
use rayon::prelude::*;
use std::sync::Arc;

/// How to rebuild an LDE: the trace (on the trace domain, on the
/// backend) and the LDE's blowup and shift.
pub(crate) struct Recipe<B: Backend> {
    pub trace: Arc<B::Matrix>,
    pub log_blowup: u32,
    pub shift: F,
}

impl<B: Backend> Recipe<B> {
    /// Piece `j` of 2^log_pieces of the LDE: rows j, j + 2^log_pieces, ...,
    /// which are its values on the coset shift * g^j * <g^(2^log_pieces)>
    /// (g generates the LDE domain). With `log_pieces` 0, the whole LDE.
    pub fn piece(&self, b: &B, ctx: &Ctx, j: usize, log_pieces: u32) -> Result<B::Matrix> {
        if log_pieces > self.log_blowup {
            let why = format!("piece of 2^{log_pieces} asked of an LDE of blowup 2^{}", self.log_blowup);
            return Err(BackendError::invalid(Stage::CosetLde, why));
        }
        let log_n = self.trace.height().trailing_zeros();
        let g = Coset::new(log_n + self.log_blowup, self.shift).generator();
        b.coset_lde(ctx, &self.trace, self.log_blowup - log_pieces, self.shift * g.pow(j as u64))
    }
}

/// Where a matrix committed by its cosets gets them.
pub(crate) enum Cosets<B: Backend> {
    /// Rebuilt from the trace at every read.
    Rebuilt(Recipe<B>),
    /// Held on the backend, one matrix per coset.
    Held(Vec<B::Matrix>),
}

/// A matrix committed coset by coset: its cosets (2^log_cosets of them,
/// coset j holding rows j, j + 2^log_cosets, ...) and the tree's levels
/// on the host (leaves first, the root alone last).
pub(crate) struct ByCosets<B: Backend> {
    cosets: Cosets<B>,
    log_cosets: u32,
    levels: Vec<Vec<Digest>>,
}

impl<B: Backend> ByCosets<B> {
    /// Commits the matrix coset by coset: a rebuilt coset is on the
    /// backend only while it is hashed.
    pub fn commit(b: &B, ctx: &Ctx, cosets: Cosets<B>, log_cosets: u32, hash: HashKind) -> Result<ByCosets<B>> {
        let mut digests = Vec::with_capacity(1 << log_cosets);
        let mut by = ByCosets { cosets, log_cosets, levels: vec![] };
        for j in 0..1usize << log_cosets {
            digests.push(b.leaf_digests(ctx, by.piece(b, ctx, j, log_cosets)?.get(), hash)?);
        }
        by.levels = levels(interleave(&digests), hash);
        Ok(by)
    }

    pub fn root(&self) -> Digest {
        self.levels.last().and_then(|l| l.first()).copied().unwrap_or_default()
    }

    /// Piece `j` of 2^log_pieces (see [`Recipe::piece`]); held cosets come
    /// only as themselves.
    pub fn piece(&self, b: &B, ctx: &Ctx, j: usize, log_pieces: u32) -> Result<Piece<'_, B>> {
        match &self.cosets {
            Cosets::Rebuilt(r) => Ok(Piece::Owned(r.piece(b, ctx, j, log_pieces)?)),
            Cosets::Held(held) if log_pieces == self.log_cosets => Ok(Piece::Kept(&held[j])),
            Cosets::Held(_) => {
                let why = format!("piece of 2^{log_pieces} asked of a matrix held as 2^{} cosets", self.log_cosets);
                Err(BackendError::invalid(Stage::Deep, why))
            }
        }
    }

    /// The columns' polynomials at `points`, off `domain` (the whole
    /// matrix's): from the trace, or from coset 0, on which polynomials of
    /// the trace's degree are interpolated exactly.
    pub fn evaluate_at(&self, b: &B, ctx: &Ctx, domain: Coset, points: &[Ext]) -> Result<Vec<Vec<Ext>>> {
        match &self.cosets {
            Cosets::Rebuilt(r) => {
                let trace_domain = Coset::subgroup(r.trace.height().trailing_zeros());
                b.evaluate_at(ctx, &r.trace, trace_domain, points)
            }
            Cosets::Held(held) => {
                let coset = Coset::new(domain.log_size - self.log_cosets, domain.shift);
                b.evaluate_at(ctx, &held[0], coset, points)
            }
        }
    }

    /// Each coset with a queried row is read once (rebuilt or held); the
    /// rows' values come from it, their paths from the host tree.
    pub fn open(&self, b: &B, ctx: &Ctx, rows: &[usize]) -> Result<Vec<RowOpening>> {
        let height = self.levels.first().map_or(0, Vec::len);
        if let Some(&r) = rows.iter().find(|&&r| r >= height) {
            let why = format!("row {r} is out of range for {height} rows");
            return Err(BackendError::invalid(Stage::MerkleOpen, why));
        }
        let mask = (1usize << self.log_cosets) - 1;
        let mut out: Vec<Option<RowOpening>> = vec![None; rows.len()];
        for j in 0..1usize << self.log_cosets {
            let here: Vec<usize> = (0..rows.len()).filter(|&q| rows[q] & mask == j).collect();
            if here.is_empty() {
                continue;
            }
            let coset = self.piece(b, ctx, j, self.log_cosets)?;
            let positions: Vec<usize> = here.iter().map(|&q| rows[q] >> self.log_cosets).collect();
            for (q, values) in here.into_iter().zip(b.rows(ctx, coset.get(), &positions)?) {
                out[q] = Some(RowOpening { values, path: self.path(rows[q]) });
            }
        }
        Ok(out.into_iter().flatten().collect())
    }

    /// The siblings of row `r`'s nodes, leaves first.
    fn path(&self, mut r: usize) -> Vec<Digest> {
        let mut path = Vec::with_capacity(self.levels.len() - 1);
        for level in &self.levels[..self.levels.len() - 1] {
            path.push(level[r ^ 1]);
            r /= 2;
        }
        path
    }
}

/// Leaf k of coset j is row j + B * k of the matrix (B cosets).
fn interleave(cosets: &[Vec<Digest>]) -> Vec<Digest> {
    let count = cosets.len();
    let n = cosets.first().map_or(0, Vec::len);
    let mut leaves = vec![Digest::default(); n * count];
    leaves.par_chunks_mut(count.max(1)).enumerate().for_each(|(k, row)| {
        for (j, d) in row.iter_mut().enumerate() {
            *d = cosets[j][k];
        }
    });
    leaves
}

/// The leaf level and every level above it, up to the root.
fn levels(leaves: Vec<Digest>, hash: HashKind) -> Vec<Vec<Digest>> {
    let mut levels = vec![leaves];
    while let Some(prev) = levels.last().filter(|l| l.len() > 1) {
        let next = prev.par_chunks(2).with_min_len(256).map(|p| hash_node(hash, &p[0], &p[1])).collect();
        levels.push(next);
    }
    levels
}

#[cfg(test)]
mod tests {
    use super::*;
    use backend_api::hash::hash_leaf;

    #[test]
    fn interleaved_cosets_are_the_rows_in_order() {
        let d = |x: u8| [x; 32];
        let cosets =
            vec![vec![d(0), d(4), d(8)], vec![d(1), d(5), d(9)], vec![d(2), d(6), d(10)], vec![d(3), d(7), d(11)]];
        assert_eq!(interleave(&cosets), (0..12).map(d).collect::<Vec<_>>());
    }

    #[test]
    fn levels_end_in_the_root_of_the_leaves() {
        let leaves: Vec<Digest> = (0..8u64).map(|i| hash_leaf(HashKind::Blake3, &[F::new(i)])).collect();
        let l = levels(leaves.clone(), HashKind::Blake3);
        assert_eq!(l.len(), 4);
        let n = |a: &Digest, b: &Digest| hash_node(HashKind::Blake3, a, b);
        let left = n(&n(&leaves[0], &leaves[1]), &n(&leaves[2], &leaves[3]));
        let right = n(&n(&leaves[4], &leaves[5]), &n(&leaves[6], &leaves[7]));
        assert_eq!(l[3], vec![n(&left, &right)]);
    }
}
