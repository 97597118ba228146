//! A DEEP codeword: for one LDE height, every table's main, auxiliary and
//! quotient columns summed into one quotient per point their constraints
//! read, piece by piece when a table's LDE is not kept.

use super::commit::{Committed, Piece};
use super::recompute::Recipe;
use super::rounds::{AuxRound, Prover};
use super::spill::Spiller;
use crate::proof::TableOod;
use crate::protocol::DeepCoeffs;
use backend_api::{Backend, BackendError, Coset, Ctx, DeepColumns, DeepPoint, Ext, F};

/// A table's main and auxiliary combinations, when they are recomputed.
type Combined<B> = (Option<Recipe<B>>, Option<Recipe<B>>);

/// What DEEP reads of one table on a piece.
struct TablePiece<'a, B: Backend> {
    main: Read<'a, B>,
    aux: Option<Read<'a, B>>,
    quotient: Piece<'a, B>,
}

impl<B: Backend> Prover<'_, B> {
    /// The DEEP codeword of the tables of `group` (one LDE height): a
    /// recomputed table's combinations are rebuilt once, then each piece
    /// of the domain sums every table's quotients at each offset read.
    pub(super) fn deep_codeword(
        &self,
        group: &[usize],
        z: Ext,
        (main, aux, parts): (&[Committed<B>], &AuxRound<B>, &[Committed<B>]),
        ood: &[TableOod],
        coeffs: &[DeepCoeffs],
    ) -> Result<B::Matrix, BackendError> {
        let label = group.iter().map(|&t| self.shapes[t].name.as_str()).collect::<Vec<_>>().join("+");
        let first = &self.shapes[group[0]];
        let ctx = Ctx::on(&label, self.lanes.deep(first.log_lde));
        let s = self.spiller();
        self.clock.time("deep", &label, || {
            let mut combined: Vec<Combined<B>> = Vec::with_capacity(group.len());
            for &t in group {
                let aux = aux.commits[t].as_ref();
                combined.push((
                    self.combine(&ctx, Some(&main[t]), &coeffs[t].main)?,
                    self.combine(&ctx, aux, &coeffs[t].aux)?,
                ));
            }
            let log_pieces = group.iter().map(|&t| self.deep_log_pieces(t)).max().unwrap_or(0);
            let lde = (Coset::new(first.log_lde, first.shift), self.options.log_blowup);
            self.by_pieces(&ctx, lde, log_pieces, |j, log_pieces, piece| {
                // Each table's main, auxiliary and quotient matrices on this piece.
                let mut pieces = Vec::with_capacity(group.len());
                for (&t, (cm, ca)) in group.iter().zip(&combined) {
                    let c = &coeffs[t];
                    let read = |m, recipe, weights: &[Vec<Ext>]| {
                        Read::of(self.backend, s.as_ref(), &ctx, m, recipe, weights, (j, log_pieces))
                    };
                    let a = aux.commits[t].as_ref().map(|a| read(a, ca.as_ref(), &c.aux)).transpose()?;
                    let q = parts[t].piece(s.as_ref(), &ctx, j, log_pieces)?;
                    pieces.push(TablePiece { main: read(&main[t], cm.as_ref(), &c.main)?, aux: a, quotient: q });
                }
                let points = self.deep_points(group, z, &pieces, ood, coeffs);
                self.backend.deep_quotient(&ctx, piece, &points)
            })
        })
    }

    /// A recomputed matrix's combination with the weights of its first
    /// offset, to rebuild piece by piece (none for a matrix not recomputed).
    fn combine(
        &self,
        ctx: &Ctx,
        c: Option<&Committed<B>>,
        weights: &[Vec<Ext>],
    ) -> Result<Option<Recipe<B>>, BackendError> {
        match (c.and_then(Committed::recipe), weights.first()) {
            (Some(r), Some(w)) => Ok(Some(r.combined(self.backend, ctx, w)?)),
            _ => Ok(None),
        }
    }

    /// The DEEP points of a piece: each offset the group's constraints
    /// read, with every table's columns read there (its quotient parts at
    /// offset 0).
    fn deep_points<'p>(
        &self,
        group: &[usize],
        z: Ext,
        pieces: &'p [TablePiece<'_, B>],
        ood: &[TableOod],
        coeffs: &[DeepCoeffs],
    ) -> Vec<DeepPoint<'p, B::Matrix>> {
        let mut offsets: Vec<usize> = group.iter().flat_map(|&t| self.shapes[t].offsets.clone()).collect();
        offsets.sort_unstable();
        offsets.dedup();
        let w = self.shapes[group[0]].trace_generator();
        offsets
            .iter()
            .map(|&o| {
                let mut columns = vec![];
                for (&t, p) in group.iter().zip(pieces) {
                    let (shape, c, od) = (&self.shapes[t], &coeffs[t], &ood[t]);
                    if let Some(pi) = shape.offsets.iter().position(|&x| x == o) {
                        columns.push(p.main.columns(pi, c.offset_scale[pi], &c.main, &od.main[pi]));
                        if let Some(a) = &p.aux {
                            columns.push(a.columns(pi, c.offset_scale[pi], &c.aux, &od.aux[pi]));
                        }
                    }
                    if o == 0 {
                        let (coeffs, values) = (c.quotient.clone(), od.quotient.clone());
                        columns.push(DeepColumns { matrix: p.quotient.get(), coeffs, values });
                    }
                }
                DeepPoint { point: z * w.pow(o as u64), columns }
            })
            .collect()
    }
}

/// What DEEP reads of a committed matrix on a piece: its columns, or
/// their combination with the weights of the table's first offset, which
/// serves every offset (`DeepCoeffs::offset_scale`). A table read at
/// several offsets is combined once, so DEEP reads each column once.
enum Read<'a, B: Backend> {
    Columns(Piece<'a, B>),
    Combined(B::Matrix),
}

impl<'a, B: Backend> Read<'a, B> {
    /// Piece `j` of 2^log_pieces of `c` (`weights`: its coefficients at
    /// each offset), combined when it is recomputed (from `recipe`, the
    /// combination's own) or read at more than one offset.
    fn of(
        b: &B,
        s: Option<&Spiller<B>>,
        ctx: &Ctx,
        c: &'a Committed<B>,
        recipe: Option<&Recipe<B>>,
        weights: &[Vec<Ext>],
        (j, log_pieces): (usize, u32),
    ) -> Result<Read<'a, B>, BackendError> {
        if let Some(r) = recipe {
            return Ok(Read::Combined(r.piece(b, ctx, j, log_pieces)?));
        }
        let piece = c.piece(s, ctx, j, log_pieces)?;
        match weights {
            [first, _, ..] => Ok(Read::Combined(b.combine_columns(ctx, piece.get(), first)?)),
            _ => Ok(Read::Columns(piece)),
        }
    }

    /// The DEEP columns at the table's offset `pi`, whose coefficients are
    /// `weights[pi]` = `scale` * `weights[0]` and out-of-domain values
    /// `values`. A combination g = g0 + u g1 + u^2 g2 (made with
    /// `weights[0]`) enters with weights scale * (1, u, u^2) and the value
    /// sum_c weights[0]_c values_c: the same sum, term for term, in exact
    /// arithmetic.
    fn columns(&self, pi: usize, scale: Ext, weights: &[Vec<Ext>], values: &[Ext]) -> DeepColumns<'_, B::Matrix> {
        match self {
            Read::Columns(p) => DeepColumns { matrix: p.get(), coeffs: weights[pi].clone(), values: values.to_vec() },
            Read::Combined(m) => {
                let value: Ext = weights[0].iter().zip(values).map(|(&k, &v)| k * v).sum();
                let u = |i: usize| Ext(std::array::from_fn(|k| if k == i { F::ONE } else { F::ZERO }));
                DeepColumns {
                    matrix: m,
                    coeffs: (0..3).map(|i| u(i) * scale).collect(),
                    values: vec![value, Ext::ZERO, Ext::ZERO],
                }
            }
        }
    }
}
