//! Recomputed residency: a committed LDE is not kept anywhere. Its
//! trace's coefficients stay on the backend (in place of the trace, which
//! is rebuilt from them when a stage reads it), and each coset of the LDE
//! is rebuilt from them (`coset_ntt` of blowup 1 with the coset's shift:
//! one transform, where rebuilding from the trace takes two) whenever a
//! stage reads it: once to commit, once for composition and for the
//! queried rows. DEEP reads only a random combination of the columns at
//! each point, so it rebuilds that combination instead (`combine_columns`
//! of the coefficients: 3 columns to transform, not all of them). A
//! recomputed table's quotient parts have no trace to rebuild them from:
//! they stay kept, and the stages that read them by pieces take those
//! with `stride_rows` ([`super::commit`]). A trace is made into its
//! coefficients in place (`intt_in_place`), so they are never on the
//! device together; except a main trace kept until the LogUp round reads
//! it (`keep_traces`, where the memory model has room): that round then
//! rebuilds nothing. With `keep_aux` the auxiliary columns' LDE is kept
//! (they are a fraction of the main columns' width): only the main one is
//! recomputed, and the stages read the kept one as any kept matrix.
//!
//! Under a budget with no room for a whole coset beside the coefficients,
//! each coset is rebuilt in 2^log_split pieces: piece j of 2^L is the LDE's
//! rows j, j + 2^L, ..., a coset smaller than the trace, evaluated from
//! the coefficients folded to its size (`fold_coeffs`). Composition on a
//! piece is given the piece B rows on as its next rows.
//!
//! The bytes do not change. Rows j, j + B, j + 2B, ... of an LDE of
//! blowup B are its values on coset j of the trace domain, so
//! - the tree is built on the host from the cosets' leaf digests,
//!   interleaved back into row order, and kept from level 4 up (whole
//!   when the cosets are split);
//! - composition and DEEP already run coset by coset when a table is not
//!   kept, their outputs put back in row order by `interleave`
//!   ([`super::tables`]);
//! - an opening takes its row and the 15 others under the same kept
//!   digest from the rebuilt cosets, rehashes them for the path's lowest
//!   four siblings, and takes the rest from the host tree;
//! - out of the domain, the LDE's polynomial is the trace's.

use backend_api::hash::{hash_leaf, hash_node, subtree_path};
use backend_api::host::{try_zeroed, AllocFailed};
use backend_api::{
    Backend, BackendError, Coset, Ctx, DeviceMatrix, Digest, Ext, HashKind, Result, RowOpening, Stage, F,
};
use rayon::prelude::*;
use std::sync::Arc;

/// How to rebuild an LDE: the trace's coefficients (natural order, on the
/// backend), the LDE's blowup and shift, and how many pieces (2^log_split)
/// each coset of the trace domain is rebuilt in when the device has no
/// room for a whole one beside the coefficients.
pub(crate) struct Recipe<B: Backend> {
    pub coeffs: Arc<B::Matrix>,
    pub log_blowup: u32,
    pub shift: F,
    pub log_split: u32,
}

impl<B: Backend> Recipe<B> {
    /// The recipe of the LDE of `trace`: its coefficients, made once.
    pub fn of(b: &B, ctx: &Ctx, trace: &B::Matrix, log_blowup: u32, shift: F, log_split: u32) -> Result<Recipe<B>> {
        Ok(Recipe { coeffs: Arc::new(b.intt(ctx, trace)?), log_blowup, shift, log_split })
    }

    /// [`Recipe::of`] a trace the caller gives up: its coefficients are
    /// written over it where the backend can (`intt_in_place`), so the
    /// trace and its coefficients are never on the device together.
    pub fn of_owned(
        b: &B,
        ctx: &Ctx,
        trace: B::Matrix,
        log_blowup: u32,
        shift: F,
        log_split: u32,
    ) -> Result<Recipe<B>> {
        Ok(Recipe { coeffs: Arc::new(b.intt_in_place(ctx, &trace)?), log_blowup, shift, log_split })
    }

    /// The trace itself (blowup 1 on the subgroup), from the same
    /// coefficients.
    pub fn trace(&self) -> Recipe<B> {
        Recipe { coeffs: self.coeffs.clone(), log_blowup: 0, shift: F::ONE, log_split: self.log_split }
    }

    /// The pieces the stages read the LDE in: every coset, split.
    pub fn log_pieces(&self) -> u32 {
        self.log_blowup + self.log_split
    }

    /// Piece `j` of 2^log_pieces of the LDE: rows j, j + 2^log_pieces, ...,
    /// which are its values on the coset shift * g^j * <g^(2^log_pieces)>
    /// (g generates the LDE domain). With `log_pieces` 0, the whole LDE; a
    /// `j` past the last piece is piece j - 2^log_pieces one row on (the
    /// next rows of a piece). A piece smaller than the trace is evaluated
    /// from the coefficients folded to its size.
    pub fn piece(&self, b: &B, ctx: &Ctx, j: usize, log_pieces: u32) -> Result<B::Matrix> {
        let log_n = self.coeffs.height().trailing_zeros();
        if log_pieces > self.log_blowup + log_n {
            let why = format!("piece of 2^{log_pieces} asked of an LDE of 2^{} rows", self.log_blowup + log_n);
            return Err(BackendError::invalid(Stage::CosetLde, why));
        }
        let shift = self.piece_shift(j);
        match log_pieces.checked_sub(self.log_blowup) {
            None => b.coset_ntt(ctx, &self.coeffs, self.log_blowup - log_pieces, shift),
            Some(0) => b.coset_ntt(ctx, &self.coeffs, 0, shift),
            Some(log_fold) => {
                let folded = b.fold_coeffs(ctx, &self.coeffs, log_fold, shift.pow(1u64 << (log_n - log_fold)))?;
                b.coset_ntt(ctx, &folded, 0, shift)
            }
        }
    }

    /// The shift of piece j's coset: shift * g^j (g generates the LDE
    /// domain).
    fn piece_shift(&self, j: usize) -> F {
        let log_lde = self.coeffs.height().trailing_zeros() + self.log_blowup;
        self.shift * Coset::new(log_lde, self.shift).generator().pow(j as u64)
    }

    /// Rows `positions` of piece `j` of 2^log_pieces: of a whole coset,
    /// evaluated alone (`coset_rows`), else read from the piece rebuilt.
    pub fn piece_rows(&self, b: &B, ctx: &Ctx, j: usize, log_pieces: u32, positions: &[usize]) -> Result<Vec<Vec<F>>> {
        match log_pieces == self.log_blowup {
            true => b.coset_rows(ctx, &self.coeffs, self.piece_shift(j), positions),
            false => b.rows(ctx, &self.piece(b, ctx, j, log_pieces)?, positions),
        }
    }

    /// The recipe of sum_c weights_c * column_c (3 base columns): the
    /// coefficients combined, so rebuilding a piece of it transforms 3
    /// columns, not every column (exact arithmetic: the same values as
    /// combining the rebuilt columns).
    pub fn combined(&self, b: &B, ctx: &Ctx, weights: &[Ext]) -> Result<Recipe<B>> {
        let coeffs = Arc::new(b.combine_columns(ctx, &self.coeffs, weights)?);
        Ok(Recipe { coeffs, log_blowup: self.log_blowup, shift: self.shift, log_split: 0 })
    }

    /// The LDE's polynomials at `points` off its domain: from the
    /// coefficients (`evaluate_coeffs`), or, split, barycentric over the
    /// trace rebuilt piece by piece (a backend may rebuild the whole trace
    /// to evaluate coefficients). The value is the polynomial's either
    /// way: exact arithmetic.
    pub fn evaluate_at(&self, b: &B, ctx: &Ctx, points: &[Ext]) -> Result<Vec<Vec<Ext>>> {
        let log_n = self.coeffs.height().trailing_zeros();
        let log_split = self.log_split.min(log_n);
        if log_split == 0 || points.iter().any(|z| z.pow(1u64 << (log_n - log_split)).0[1..] == [F::ZERO; 2]) {
            return b.evaluate_coeffs(ctx, &self.coeffs, points);
        }
        let trace = self.trace();
        // Barycentric over the trace domain H_n, summed piece by piece:
        // p(z) = (z^n - 1)/n * sum_i S_i, where piece i is the coset
        // s_i * H_m (s_i = w_n^i, m = n / 2^log_split) and its evaluation
        // E_i = (z^m - s_i^m)/(m s_i^m) * S_i.
        let (n, m) = (1u64 << log_n, 1u64 << (log_n - log_split));
        let w = F::two_adic_root(log_n);
        let mut sums: Vec<Vec<Ext>> = vec![vec![Ext::ZERO; self.coeffs.width()]; points.len()];
        for i in 0..1usize << log_split {
            let s_i = w.pow(i as u64);
            let piece = trace.piece(b, ctx, i, log_split)?;
            let evals = b.evaluate_at(ctx, &piece, Coset::new(log_n - log_split, s_i), 0, points)?;
            let s_m = s_i.pow(m);
            for ((sum, e), z) in sums.iter_mut().zip(evals).zip(points) {
                let inv = (z.pow(m) - Ext::from_base(s_m)).inverse().expect("z^m is not in the base field");
                let factor = inv.mul_base(F::new(m) * s_m);
                sum.iter_mut().zip(e).for_each(|(acc, e)| *acc += e * factor);
            }
        }
        let n_inv = F::new(n).inverse().expect("n is not zero");
        for (sum, z) in sums.iter_mut().zip(points) {
            let scale = (z.pow(n) - Ext::ONE).mul_base(n_inv);
            sum.iter_mut().for_each(|v| *v *= scale);
        }
        Ok(sums)
    }
}

/// The lowest tree level a recomputed commitment keeps when its pieces
/// are whole cosets: an opening rehashes the 2^FIRST_KEPT rows around its
/// row from the cosets it rebuilds anyway (the levels below hold 15/16 of
/// the digests). A split recipe keeps every level: a row's group would
/// span up to 2^FIRST_KEPT pieces, each rebuilt from all the coefficients.
const FIRST_KEPT: usize = 4;

/// A commitment whose LDE is rebuilt from its recipe: the tree's levels
/// from `first` up on the host (the root alone last).
pub(crate) struct Recomputed<B: Backend> {
    pub recipe: Recipe<B>,
    hash: HashKind,
    height: usize,
    first: usize,
    levels: Vec<Vec<Digest>>,
}

impl<B: Backend> Recomputed<B> {
    /// Commits the LDE of `recipe` piece by piece: only one piece is on
    /// the backend at a time.
    pub fn commit(b: &B, ctx: &Ctx, recipe: Recipe<B>, hash: HashKind) -> Result<Recomputed<B>> {
        let log_cosets = recipe.log_pieces();
        let mut digests = Vec::with_capacity(1 << log_cosets);
        for j in 0..1usize << log_cosets {
            digests.push(b.leaf_digests(ctx, &recipe.piece(b, ctx, j, log_cosets)?, hash)?);
        }
        let leaves = interleave(ctx, &digests)?;
        drop(digests);
        let height = leaves.len();
        let mut levels = levels(leaves, hash).map_err(|e| e.at(Stage::MerkleCommit, ctx))?;
        let first = if recipe.log_split == 0 { FIRST_KEPT.min(levels.len() - 1) } else { 0 };
        let levels = levels.split_off(first);
        Ok(Recomputed { recipe, hash, height, first, levels })
    }

    pub fn root(&self) -> Digest {
        self.levels.last().and_then(|l| l.first()).copied().unwrap_or_default()
    }

    /// The rows of each queried row's group (the 2^first rows under one
    /// kept digest) are evaluated piece by piece, each piece's at once
    /// (alone when it is a whole coset, else from the piece rebuilt); the
    /// group's rows are rehashed up to the kept levels, which give the
    /// rest of the path.
    pub fn open(&self, b: &B, ctx: &Ctx, rows: &[usize]) -> Result<Vec<RowOpening>> {
        let height = self.height;
        if let Some(&r) = rows.iter().find(|&&r| r >= height) {
            let why = format!("row {r} is out of range for {height} rows");
            return Err(BackendError::invalid(Stage::MerkleOpen, why));
        }
        let group = 1usize << self.first;
        let mut wanted: Vec<usize> = rows.iter().flat_map(|&r| (r & !(group - 1))..(r | (group - 1)) + 1).collect();
        wanted.sort_unstable();
        wanted.dedup();
        let log_cosets = self.recipe.log_pieces();
        let mask = (1usize << log_cosets) - 1;
        let mut values: Vec<Option<Vec<F>>> = vec![None; wanted.len()];
        for j in 0..1usize << log_cosets {
            let here: Vec<usize> = (0..wanted.len()).filter(|&w| wanted[w] & mask == j).collect();
            if here.is_empty() {
                continue;
            }
            let positions: Vec<usize> = here.iter().map(|&w| wanted[w] >> log_cosets).collect();
            let read = self.recipe.piece_rows(b, ctx, j, log_cosets, &positions)?;
            if read.len() != here.len() {
                let why = format!("{} rows asked of a rebuilt piece, {} returned", here.len(), read.len());
                return Err(BackendError::invalid(Stage::MerkleOpen, why));
            }
            for (w, v) in here.into_iter().zip(read) {
                values[w] = Some(v);
            }
        }
        // Every wanted row lies in one piece, which was rebuilt and read.
        let values: Vec<Vec<F>> = values.into_iter().flatten().collect();
        let row = |r: usize| -> &[F] { &values[wanted.binary_search(&r).expect("a group row is wanted")] };
        Ok(rows.iter().map(|&r| RowOpening { values: row(r).to_vec(), path: self.path(r, row) }).collect())
    }

    /// The siblings of row `r`'s nodes, leaves first: those below the
    /// first kept level from its group's rows (`row`), rehashed.
    fn path<'a>(&self, r: usize, row: impl Fn(usize) -> &'a [F]) -> Vec<Digest> {
        let base = r & !((1usize << self.first) - 1);
        let leaves = (base..base + (1 << self.first)).map(|i| hash_leaf(self.hash, row(i))).collect();
        let mut path = subtree_path(self.hash, leaves, r - base);
        for (l, digests) in self.levels[..self.levels.len() - 1].iter().enumerate() {
            path.push(digests[(r >> (self.first + l)) ^ 1]);
        }
        path
    }
}

/// Leaf k of coset j is row j + B * k of the matrix (B cosets).
fn interleave(ctx: &Ctx, cosets: &[Vec<Digest>]) -> Result<Vec<Digest>> {
    let count = cosets.len();
    let n = cosets.first().map_or(0, Vec::len);
    let mut leaves: Vec<Digest> = try_zeroed(n * count).map_err(|e| e.at(Stage::MerkleCommit, ctx))?;
    leaves.par_chunks_mut(count.max(1)).enumerate().with_min_len(1 << 12).for_each(|(k, row)| {
        for (j, d) in row.iter_mut().enumerate() {
            *d = cosets[j][k];
        }
    });
    Ok(leaves)
}

/// The leaf level and every level above it, up to the root (levels of
/// GiBs: huge pages, filled in parallel).
fn levels(leaves: Vec<Digest>, hash: HashKind) -> std::result::Result<Vec<Vec<Digest>>, AllocFailed> {
    let mut levels = vec![leaves];
    while let Some(prev) = levels.last().filter(|l| l.len() > 1) {
        let mut next: Vec<Digest> = try_zeroed(prev.len() / 2)?;
        next.par_iter_mut()
            .zip(prev.par_chunks(2))
            .with_min_len(256)
            .for_each(|(d, p)| *d = hash_node(hash, &p[0], &p[1]));
        levels.push(next);
    }
    Ok(levels)
}

#[cfg(test)]
mod tests {
    use super::*;
    use backend_api::hash::hash_leaf;
    use backend_api::{BackendBase, ColMatrix, DeepOps, NttOps, GENERATOR};
    use backend_cpu::CpuBackend;

    #[test]
    fn pieces_are_the_rows_of_the_whole_lde_they_name() {
        let (b, ctx) = (CpuBackend::new(), Ctx::table("t"));
        for log_n in 0..5u32 {
            let (n, w) = (1usize << log_n, 3);
            let trace = ColMatrix::new(w, n, (0..n * w).map(|i| F::new(0x9E37_79B9 * (i as u64 + 5))).collect());
            let trace = Arc::new(b.upload(&ctx, &trace).unwrap());
            for log_blowup in 1..=3u32 {
                let whole = b.download(&ctx, &b.coset_lde(&ctx, &trace, log_blowup, GENERATOR).unwrap()).unwrap();
                let recipe = Recipe::of(&b, &ctx, &trace, log_blowup, GENERATOR, 0).unwrap();
                let rebuilt = b.download(&ctx, &recipe.trace().piece(&b, &ctx, 0, 0).unwrap()).unwrap();
                assert_eq!(rebuilt, b.download(&ctx, &trace).unwrap());
                // Up to single rows; one piece past the last wraps a row on.
                for log_pieces in 0..=log_blowup + log_n {
                    for j in 0..=1usize << log_pieces {
                        let piece = b.download(&ctx, &recipe.piece(&b, &ctx, j, log_pieces).unwrap()).unwrap();
                        assert_eq!(piece.height(), whole.height() >> log_pieces);
                        for k in 0..piece.height() {
                            for c in 0..w {
                                let want = whole.get((j + (k << log_pieces)) % whole.height(), c);
                                assert_eq!(piece.get(k, c), want, "{log_n} {log_blowup} {log_pieces} {j}");
                            }
                        }
                    }
                }
                assert!(recipe.piece(&b, &ctx, 0, log_blowup + log_n + 1).is_err());
            }
        }
    }

    #[test]
    fn a_split_recipe_evaluates_off_the_domain_as_a_whole_one() {
        let (b, ctx) = (CpuBackend::new(), Ctx::table("t"));
        let (log_n, w) = (6u32, 4);
        let n = 1usize << log_n;
        let trace = ColMatrix::new(w, n, (0..n * w).map(|i| F::new(0x2545_F491 * (i as u64 + 3))).collect());
        let trace = b.upload(&ctx, &trace).unwrap();
        let points = [Ext([F::new(7), F::new(11), F::new(13)]), Ext([F::new(3), F::ZERO, F::new(5)])];
        let whole = Recipe::of(&b, &ctx, &trace, 2, GENERATOR, 0).unwrap().evaluate_at(&b, &ctx, &points).unwrap();
        assert_eq!(whole, b.evaluate_at(&ctx, &trace, Coset::subgroup(log_n), 0, &points).unwrap());
        for log_split in 1..=log_n + 1 {
            let split = Recipe::of(&b, &ctx, &trace, 2, GENERATOR, log_split).unwrap();
            assert_eq!(split.evaluate_at(&b, &ctx, &points).unwrap(), whole, "split 2^{log_split}");
        }
    }

    #[test]
    fn interleaved_cosets_are_the_rows_in_order() {
        let d = |x: u8| [x; 32];
        let cosets =
            vec![vec![d(0), d(4), d(8)], vec![d(1), d(5), d(9)], vec![d(2), d(6), d(10)], vec![d(3), d(7), d(11)]];
        assert_eq!(interleave(&Ctx::table("t"), &cosets).unwrap(), (0..12).map(d).collect::<Vec<_>>());
    }

    #[test]
    fn levels_end_in_the_root_of_the_leaves() {
        let leaves: Vec<Digest> = (0..8u64).map(|i| hash_leaf(HashKind::Blake3, &[F::new(i)])).collect();
        let l = levels(leaves.clone(), HashKind::Blake3).unwrap();
        assert_eq!(l.len(), 4);
        let n = |a: &Digest, b: &Digest| hash_node(HashKind::Blake3, a, b);
        let left = n(&n(&leaves[0], &leaves[1]), &n(&leaves[2], &leaves[3]));
        let right = n(&n(&leaves[4], &leaves[5]), &n(&leaves[6], &leaves[7]));
        assert_eq!(l[3], vec![n(&left, &right)]);
    }
}
