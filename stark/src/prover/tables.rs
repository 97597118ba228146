//! How a round's per-table work runs: every table at once on its lane,
//! each kept on the backend, spilled to the host ([`super::spill`]) or
//! recomputed ([`super::recompute`]), and the stages that read a whole LDE
//! piece by piece when it is not kept.

use super::commit::{Committed, Held};
use super::recompute::Recipe;
use super::rounds::Prover;
use super::spill::Spiller;
use super::ProveError;
use backend_api::{Backend, BackendBase, BackendError, Coset, Ctx};
use rayon::prelude::*;
use std::sync::Arc;

impl<B: Backend> Prover<'_, B> {
    /// Runs `f` for every table, all at once (heaviest first, each on its
    /// lane), and returns the results in table order (the first error in
    /// table order, if any).
    pub(super) fn per_table<T: Send>(
        &self,
        f: impl Fn(usize, &Ctx) -> Result<T, ProveError> + Sync,
    ) -> Result<Vec<T>, ProveError> {
        self.per_table_taking((0..self.shapes.len()).map(|_| ()).collect(), |t, ctx, ()| f(t, ctx))
    }

    /// [`Self::per_table`], handing each table its item of `items`.
    pub(super) fn per_table_taking<I: Send, T: Send>(
        &self,
        items: Vec<I>,
        f: impl Fn(usize, &Ctx, I) -> Result<T, ProveError> + Sync,
    ) -> Result<Vec<T>, ProveError> {
        let mut items: Vec<Option<I>> = items.into_iter().map(Some).collect();
        let ordered: Vec<(usize, I)> =
            self.order.iter().map(|&t| (t, items[t].take().expect("one item per table"))).collect();
        let mut results: Vec<(usize, Result<T, ProveError>)> = ordered
            .into_par_iter()
            .map(|(t, item)| (t, f(t, &Ctx::on(&self.shapes[t].name, self.lanes.tables[t]), item)))
            .collect();
        results.sort_by_key(|(t, _)| *t);
        results.into_iter().map(|(_, r)| r).collect()
    }

    pub(super) fn lde_domain(&self, t: usize) -> Coset {
        Coset::new(self.shapes[t].log_lde, self.shapes[t].shift)
    }

    /// Table `t`'s spiller, when it is spilled.
    pub(super) fn spiller_for(&self, t: usize) -> Option<Spiller<'_, B>> {
        self.spiller().filter(|_| self.residency.spills(t))
    }

    pub(super) fn spiller(&self) -> Option<Spiller<'_, B>> {
        self.spill.as_ref().map(|s| Spiller {
            backend: self.backend,
            chunk_bytes: s.chunk_bytes,
            moved: &s.moved,
            clock: &s.clock,
        })
    }

    /// Extends and commits a trace made on the backend: spilled to the
    /// host when table `t` is, else as `hold` says. A recomputed LDE's
    /// coefficients stand in for the trace too (written over it) unless
    /// the trace is kept: a later round reads it whole. Returns the trace
    /// as later rounds read it, and the commitment.
    pub(super) fn extend(
        &self,
        ctx: &Ctx,
        t: usize,
        dev: B::Matrix,
        hold: Hold,
    ) -> Result<(Held<B>, Committed<B>), BackendError> {
        let (b, o, shift) = (self.backend, self.options, self.shapes[t].shift);
        if let Some(s) = self.spiller_for(t) {
            let lde = Committed::extend_spilled(&s, ctx, &s.down(ctx, &dev)?, o.log_blowup, shift, o.hash)?;
            return Ok((Held::Kept(Arc::new(dev)), lde));
        }
        match hold {
            Hold::Recomputed { keep_trace: true } => {
                let recipe = Recipe::of(b, ctx, &dev, o.log_blowup, shift, self.log_split(t))?;
                Ok((Held::Kept(Arc::new(dev)), Committed::recomputed(b, ctx, recipe, o.hash)?))
            }
            Hold::Recomputed { keep_trace: false } => {
                let recipe = Recipe::of_owned(b, ctx, dev, o.log_blowup, shift, self.log_split(t))?;
                Ok((Held::Recomputed(recipe.trace()), Committed::recomputed(b, ctx, recipe, o.hash)?))
            }
            Hold::Kept => {
                let lde = Committed::extend(b, ctx, &dev, o.log_blowup, shift, o.hash)?;
                Ok((Held::Kept(Arc::new(dev)), lde))
            }
        }
    }

    /// Table `t`'s fixed columns, if it has any, uploaded and extended,
    /// the LDE held as the table's main one is.
    pub(super) fn fixed_lde(&self, ctx: &Ctx, t: usize) -> Result<Option<FixedLde<B>>, BackendError> {
        let (b, o, shape) = (self.backend, self.options, &self.shapes[t]);
        let Some(f) = self.tables[t].fixed_trace() else { return Ok(None) };
        self.clock.time("fixed lde", &shape.name, || {
            let dev = Arc::new(b.upload(ctx, f)?);
            let lde = match self.spiller_for(t) {
                Some(s) => Held::Spilled(s.extend(ctx, f, o.log_blowup, shape.shift)?),
                None if self.residency.recomputes(t) => {
                    Held::Recomputed(Recipe::of(b, ctx, &dev, o.log_blowup, shape.shift, self.log_split(t))?)
                }
                None => Held::Kept(Arc::new(b.coset_lde(ctx, &dev, o.log_blowup, shape.shift)?)),
            };
            Ok(Some((dev, lde)))
        })
    }

    /// How table `t`'s main LDE is held when it is not spilled.
    pub(super) fn main_hold(&self, t: usize) -> Hold {
        match self.residency.recomputes(t) {
            true => Hold::Recomputed { keep_trace: self.residency.keeps_traces(t) },
            false => Hold::Kept,
        }
    }

    /// How table `t`'s auxiliary LDE is held when it is not spilled: a
    /// recomputed table may keep it ([`super::Residency::keeps_aux`]).
    pub(super) fn aux_hold(&self, t: usize) -> Hold {
        match self.residency.recomputes(t) && !self.residency.keeps_aux(t) {
            true => Hold::Recomputed { keep_trace: false },
            false => Hold::Kept,
        }
    }

    /// Commits table `t`'s matrix on its evaluation domain: kept (the
    /// stages that read it by pieces take them with `stride_rows`) or
    /// spilled.
    pub(super) fn commit_rows(&self, ctx: &Ctx, t: usize, m: B::Matrix) -> Result<Committed<B>, BackendError> {
        let hash = self.options.hash;
        match self.spiller_for(t) {
            Some(s) => Committed::rows_spilled(&s, ctx, vec![s.down(ctx, &m)?], hash),
            None => Committed::rows(self.backend, ctx, m, hash),
        }
    }

    /// How many pieces (2^log_split) table `t`'s cosets are rebuilt in
    /// ([`super::Residency::table_split`]).
    pub(super) fn log_split(&self, t: usize) -> u32 {
        let shape = &self.shapes[t];
        self.residency.table_split(t, shape.log_n, shape.offsets.iter().copied().max().unwrap_or(0))
    }

    /// The pieces (2^log_pieces) the stages read table `t`'s LDEs in: the
    /// whole when kept, else the cosets of the trace domain, each split.
    pub(super) fn log_pieces(&self, t: usize) -> u32 {
        match self.residency.in_pieces(t) {
            true => self.options.log_blowup + self.log_split(t),
            false => 0,
        }
    }

    /// The pieces DEEP reads table `t` in: a recomputed table is read as
    /// its columns' combinations, 3 columns each, so whole unless its
    /// cosets are split; else as the other stages read it.
    pub(super) fn deep_log_pieces(&self, t: usize) -> u32 {
        match self.residency.recomputes(t) && self.log_split(t) == 0 {
            true => 0,
            false => self.log_pieces(t),
        }
    }

    /// Runs `f` on each of the 2^log_pieces pieces of `domain` (2^log_b
    /// times the trace's size) and returns its outputs as one matrix on
    /// `domain` (`interleave`). With `log_pieces` 0 the piece is the whole
    /// domain; else piece j is s * g^j * <g^(2^log_pieces)> (rows j, j +
    /// 2^log_pieces, ... of the domain), and the outputs interleave back.
    /// Pieces run coset by coset of the trace domain (j, j + B, j + 2B,
    /// ..., B = 2^log_b): each is the one before it a row on.
    pub(super) fn by_pieces(
        &self,
        ctx: &Ctx,
        (domain, log_b): (Coset, u32),
        log_pieces: u32,
        mut f: impl FnMut(usize, u32, Coset) -> Result<B::Matrix, BackendError>,
    ) -> Result<B::Matrix, BackendError> {
        if log_pieces == 0 {
            return f(0, 0, domain);
        }
        let g = domain.generator();
        let count = 1usize << log_pieces;
        let step = 1usize << log_b.min(log_pieces);
        let mut outs = (0..count).map(|_| None).collect::<Vec<_>>();
        for j in (0..step).flat_map(|c| (c..count).step_by(step)) {
            let piece = Coset::new(domain.log_size - log_pieces, domain.shift * g.pow(j as u64));
            outs[j] = Some(f(j, log_pieces, piece)?);
        }
        let outs: Vec<&B::Matrix> = outs.iter().map(|o| o.as_ref().expect("every piece ran")).collect();
        self.backend.interleave(ctx, &outs)
    }
}

/// A table's fixed columns on the backend and their LDE.
pub(super) type FixedLde<B> = (Arc<<B as BackendBase>::Matrix>, Held<B>);

/// How [`Prover::extend`] holds a committed LDE that is not spilled.
#[derive(Clone, Copy)]
pub(super) enum Hold {
    /// On the backend.
    Kept,
    /// Rebuilt from its trace's coefficients when read; `keep_trace`: the
    /// trace stays beside them.
    Recomputed { keep_trace: bool },
}
