//! The quotient round's per-table work: the constraints composed over
//! the quotient domain, the composition split into parts, and, for a
//! trace that fails its constraints, the first failing constraint and row.

use super::commit::{Committed, Held, Piece};
use super::rounds::{AuxRound, MainRound, Prover};
use super::{Conduct, ProveError};
use backend_api::{Backend, BackendError, ComposeInputs, Coset, Ctx, Ext, NextRows};

impl<B: Backend> Prover<'_, B> {
    /// Table `t`'s quotient domain: the LDE coset's every 2^skip-th point
    /// ([`crate::protocol::TableShape::log_quotient`]), and skip.
    pub(super) fn quotient_domain(&self, t: usize) -> (Coset, u32) {
        let shape = &self.shapes[t];
        (Coset::new(shape.log_quotient(), shape.shift), shape.log_lde - shape.log_quotient())
    }

    /// Table `t`'s constraints composed over its quotient domain: on a
    /// kept LDE every 2^skip-th row in place, else piece by piece (the
    /// LDE's pieces that lie in the quotient domain). A piece smaller than
    /// a coset of the trace domain gets its next rows (the piece B rows on)
    /// as matrices of their own; each is the next piece's rows, so it is
    /// carried over, not rebuilt.
    pub(super) fn compose(
        &self,
        ctx: &Ctx,
        t: usize,
        main: &MainRound<B>,
        fixed: Option<&Held<B>>,
        aux: &AuxRound<B>,
        alpha: Ext,
    ) -> Result<B::Matrix, BackendError> {
        let s = self.spiller();
        let (qdomain, skip) = self.quotient_domain(t);
        let log_qb = qdomain.log_size - self.shapes[t].log_n;
        // The LDE's pieces; the quotient domain's piece j is the LDE's
        // piece j << skip.
        let log_pieces = self.log_pieces(t);
        let successors = log_pieces > self.options.log_blowup;
        let rows = |j: usize| -> Result<Rows<'_, B>, BackendError> {
            let j = j << skip;
            Ok(Rows {
                fixed: fixed.map(|f| f.piece(s.as_ref(), ctx, j, log_pieces)).transpose()?,
                main: main.commits[t].piece(s.as_ref(), ctx, j, log_pieces)?,
                aux: aux.commits[t].as_ref().map(|a| a.piece(s.as_ref(), ctx, j, log_pieces)).transpose()?,
            })
        };
        let (log_qpieces, qblowup) = (log_pieces.saturating_sub(skip), 1usize << log_qb);
        let log_stride = if log_pieces == 0 { skip } else { 0 };
        let mut carried: Option<(usize, Rows<'_, B>)> = None;
        self.by_pieces(ctx, (qdomain, log_qb), log_qpieces, |j, _, domain| {
            let here = match carried.take() {
                Some((k, r)) if k == j => r,
                _ => rows(j)?,
            };
            let next = successors.then(|| rows(j + qblowup)).transpose()?;
            let q = self.backend.compose(
                ctx,
                &ComposeInputs {
                    constraints: self.tables[t].constraints(),
                    fixed: here.fixed.as_ref().map(Piece::get),
                    main: here.main.get(),
                    aux: here.aux.as_ref().map(Piece::get),
                    log_trace_height: self.shapes[t].log_n,
                    domain,
                    challenges: &aux.challenges,
                    publics: self.publics,
                    aux_values: &aux.values[t],
                    alpha,
                    next: next.as_ref().map(Rows::get),
                    log_stride,
                },
            )?;
            carried = next.map(|n| (j + qblowup, n));
            Ok(q)
        })
    }

    /// The quotient's parts, on the LDE coset. A composition that is not
    /// of low degree means a trace that fails its constraints: the error
    /// names the first failing constraint and row (a forger keeps the
    /// low-degree part). On exactly parts * n points every composition
    /// interpolates; the out-of-domain round catches those.
    pub(super) fn split(
        &self,
        ctx: &Ctx,
        t: usize,
        q: &B::Matrix,
        main: &Committed<B>,
        num_challenges: usize,
    ) -> Result<B::Matrix, ProveError> {
        let (b, shape, (domain, _)) = (self.backend, &self.shapes[t], self.quotient_domain(t));
        match b.split_quotient(ctx, q, domain, shape.log_n, shape.parts, shape.log_lde) {
            Err(BackendError::ConstraintsNotSatisfied { .. }) if self.conduct == Conduct::Forge => {
                let low = super::low_degree_part(b, ctx, q, domain, shape.parts << shape.log_n)?;
                Ok(b.split_quotient(ctx, &low, domain, shape.log_n, shape.parts, shape.log_lde)?)
            }
            Err(e) => Err(self.locate(ctx, t, e, main, num_challenges)),
            Ok(parts) => Ok(parts),
        }
    }

    /// `e` as the prover reports it: when it says table `t`'s trace fails
    /// its constraints, the first failing constraint and row (on the trace
    /// rebuilt from its commitment `main`).
    pub(super) fn locate(
        &self,
        ctx: &Ctx,
        t: usize,
        e: BackendError,
        main: &Committed<B>,
        num_challenges: usize,
    ) -> ProveError {
        let shape = &self.shapes[t];
        let lde = (self.lde_domain(t), shape.log_lde - shape.log_n);
        match main.trace(self.spiller().as_ref(), self.backend, ctx, lde) {
            Ok(trace) => crate::debug::locate(e, self.backend, self.tables[t], &trace, self.publics, num_challenges),
            Err(read) => read.into(),
        }
    }
}

/// A piece of each matrix composition reads.
struct Rows<'a, B: Backend> {
    fixed: Option<Piece<'a, B>>,
    main: Piece<'a, B>,
    aux: Option<Piece<'a, B>>,
}

impl<B: Backend> Rows<'_, B> {
    fn get(&self) -> NextRows<&B::Matrix> {
        NextRows {
            fixed: self.fixed.as_ref().map(Piece::get),
            main: self.main.get(),
            aux: self.aux.as_ref().map(Piece::get),
        }
    }
}
