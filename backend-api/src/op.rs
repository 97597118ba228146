//! Every backend operation described once, as a value: [`Op`] names the
//! operation and holds its arguments, knows its [`Stage`], the device bytes
//! it touches and its validation, and [`Op::dispatch`] runs it on any
//! backend. [`Out`] is its result.
//!
//! Matrices and trees are held as *handles* `M` and `T`: `&B::Matrix` when
//! an op is passed on as it is, a wrapper's own handle type when it keeps
//! ops (a recomputation recipe), `&Inner::Matrix` after [`Op::try_map`]
//! has projected a wrapper's matrices onto an inner backend's. Small
//! arguments are `Cow`s, borrowed from the caller and owned only when an
//! op must outlive the call ([`Op::into_owned`]).
//!
//! Wrappers built on this (see [`crate::wrap`]) are one hook over `Op`
//! instead of a copy of the six traits.

use crate::backend::{
    Backend, ComposeInputs, Ctx, DeepColumns, DeepPoint, DeviceMatrix, DeviceTree, LogUpInputs, NextRows, RowOpening,
};
use crate::domain::Coset;
use crate::error::{BackendError, Result, Stage};
use crate::ext::Ext;
use crate::field::F;
use crate::hash::{Digest, HashKind};
use crate::ir::ConstraintSystem;
use crate::logup::LogUp;
use crate::matrix::ColMatrix;
use crate::memory::{matrix_bytes, tree_bytes, TableDims};
use crate::validate;
use std::borrow::{Borrow, Cow};

/// One operation of the `Backend` family with its arguments.
pub enum Op<'a, M, T> {
    Upload(Cow<'a, ColMatrix>),
    Download(M),
    Reshape { m: M, height: usize },
    Ntt(M),
    Intt(M),
    InttInPlace(M),
    CosetLde { m: M, log_blowup: u32, shift: F },
    UploadCosetLde { m: Cow<'a, ColMatrix>, log_blowup: u32, shift: F },
    UploadCommit { m: Cow<'a, ColMatrix>, log_blowup: u32, shift: F, hash: HashKind },
    CosetNtt { m: M, log_blowup: u32, shift: F },
    FoldCoeffs { m: M, log_fold: u32, c: F },
    CosetRows { m: M, shift: F, positions: Cow<'a, [usize]> },
    StrideRows { m: M, first: usize, log_stride: u32 },
    Interleave { pieces: Vec<M> },
    Commit { m: M, hash: HashKind },
    Open { m: M, tree: T, rows: Cow<'a, [usize]> },
    LeafDigests { m: M, hash: HashKind },
    Rows { m: M, rows: Cow<'a, [usize]> },
    LogUpAux { logup: Cow<'a, LogUp>, main: M, fixed: Option<M>, z: Ext, alpha: Ext },
    Compose(Box<ComposeOp<'a, M>>),
    SplitQuotient { q: M, domain: Coset, log_trace_height: u32, parts: usize, log_out: u32 },
    EvaluateAt { m: M, domain: Coset, log_stride: u32, points: Cow<'a, [Ext]> },
    EvaluateCoeffs { m: M, points: Cow<'a, [Ext]> },
    DeepQuotient { domain: Coset, points: Vec<DeepOpPoint<'a, M>> },
    CombineColumns { m: M, weights: Cow<'a, [Ext]> },
    FriFold { layer: M, domain: Coset, log_arity: u32, beta: Ext, roll_in: Option<(M, Ext)> },
    Grind { hash: HashKind, seed: Digest, bits: u32 },
}

/// The arguments of `compose` (see [`ComposeInputs`]).
pub struct ComposeOp<'a, M> {
    pub constraints: Cow<'a, ConstraintSystem>,
    pub fixed: Option<M>,
    pub main: M,
    pub aux: Option<M>,
    pub log_trace_height: u32,
    pub domain: Coset,
    pub challenges: Cow<'a, [Ext]>,
    pub publics: Cow<'a, [F]>,
    pub aux_values: Cow<'a, [Ext]>,
    pub alpha: Ext,
    pub next: Option<NextRows<M>>,
    pub log_stride: u32,
}

/// One DEEP point (see [`DeepPoint`]).
pub struct DeepOpPoint<'a, M> {
    pub point: Ext,
    pub columns: Vec<DeepOpColumns<'a, M>>,
}

/// One matrix's columns at a DEEP point (see [`DeepColumns`]).
pub struct DeepOpColumns<'a, M> {
    pub matrix: M,
    pub coeffs: Cow<'a, [Ext]>,
    pub values: Cow<'a, [Ext]>,
}

/// The result of an [`Op`]: which variant follows from the op.
pub enum Out<M, T> {
    /// upload, reshape, ntt, intt, intt_in_place, coset_lde, compose, split_quotient,
    /// deep_quotient, combine_columns, fri_fold.
    Matrix(M),
    /// download.
    Host(ColMatrix),
    /// commit.
    Tree(T),
    /// open.
    Openings(Vec<RowOpening>),
    /// leaf_digests.
    Digests(Vec<Digest>),
    /// rows.
    Rows(Vec<Vec<F>>),
    /// logup_aux: the auxiliary trace and its final sum.
    LogUp(M, Ext),
    /// upload_coset_lde: the matrix uploaded and its extension.
    Extended(M, M),
    /// upload_commit: the matrix uploaded, its extension and its tree.
    Committed(M, M, T),
    /// evaluate_at.
    Values(Vec<Vec<Ext>>),
    /// grind.
    Nonce(u64),
}

/// A handle passed on by reference is still a matrix (for validation and
/// byte counts over `Op<&M, &T>`).
impl<M: DeviceMatrix + ?Sized> DeviceMatrix for &M {
    fn height(&self) -> usize {
        (**self).height()
    }
    fn width(&self) -> usize {
        (**self).width()
    }
}

impl<T: DeviceTree + ?Sized> DeviceTree for &T {
    fn root(&self) -> Digest {
        (**self).root()
    }
    fn leaves(&self) -> usize {
        (**self).leaves()
    }
    fn hash(&self) -> HashKind {
        (**self).hash()
    }
}

fn own<X: ToOwned + ?Sized>(c: Cow<'_, X>) -> Cow<'static, X> {
    Cow::Owned(c.into_owned())
}

impl<'a, M> ComposeOp<'a, M> {
    /// The op of a `compose` call.
    pub fn from_inputs(i: &ComposeInputs<'a, M>) -> ComposeOp<'a, &'a M> {
        ComposeOp {
            constraints: Cow::Borrowed(i.constraints),
            fixed: i.fixed,
            main: i.main,
            aux: i.aux,
            log_trace_height: i.log_trace_height,
            domain: i.domain,
            challenges: Cow::Borrowed(i.challenges),
            publics: Cow::Borrowed(i.publics),
            aux_values: Cow::Borrowed(i.aux_values),
            alpha: i.alpha,
            next: i.next,
            log_stride: i.log_stride,
        }
    }

    /// The `compose` arguments over the matrices the handles refer to.
    pub fn inputs<X>(&self) -> ComposeInputs<'_, X>
    where
        M: Borrow<X>,
    {
        ComposeInputs {
            constraints: &self.constraints,
            fixed: self.fixed.as_ref().map(Borrow::borrow),
            main: self.main.borrow(),
            aux: self.aux.as_ref().map(Borrow::borrow),
            log_trace_height: self.log_trace_height,
            domain: self.domain,
            challenges: &self.challenges,
            publics: &self.publics,
            aux_values: &self.aux_values,
            alpha: self.alpha,
            next: self.next.as_ref().map(|n| n.as_ref().map(Borrow::borrow)),
            log_stride: self.log_stride,
        }
    }
}

impl<'a, M> DeepOpPoint<'a, M> {
    /// The ops of a `deep_quotient` call's points.
    pub fn from_points(points: &'a [DeepPoint<'a, M>]) -> Vec<DeepOpPoint<'a, &'a M>> {
        points
            .iter()
            .map(|p| DeepOpPoint {
                point: p.point,
                columns: p
                    .columns
                    .iter()
                    .map(|c| DeepOpColumns {
                        matrix: c.matrix,
                        coeffs: Cow::Borrowed(&c.coeffs),
                        values: Cow::Borrowed(&c.values),
                    })
                    .collect(),
            })
            .collect()
    }

    /// The point over the matrices the handles refer to.
    pub fn point<X>(&self) -> DeepPoint<'_, X>
    where
        M: Borrow<X>,
    {
        DeepPoint {
            point: self.point,
            columns: self
                .columns
                .iter()
                .map(|c| DeepColumns {
                    matrix: c.matrix.borrow(),
                    coeffs: c.coeffs.to_vec(),
                    values: c.values.to_vec(),
                })
                .collect(),
        }
    }
}

impl<'a, M, T> Op<'a, M, T> {
    /// The stage the op is counted, logged and reported under. A reshape
    /// is the first step of committing a FRI layer.
    pub fn stage(&self) -> Stage {
        match self {
            Op::Upload(_) => Stage::Upload,
            Op::Download(_) => Stage::Download,
            Op::Reshape { .. } | Op::Commit { .. } | Op::LeafDigests { .. } => Stage::MerkleCommit,
            Op::Ntt(_) => Stage::Ntt,
            Op::Intt(_) | Op::InttInPlace(_) => Stage::InverseNtt,
            Op::CosetLde { .. }
            | Op::UploadCosetLde { .. }
            | Op::UploadCommit { .. }
            | Op::CosetNtt { .. }
            | Op::FoldCoeffs { .. }
            | Op::CosetRows { .. }
            | Op::StrideRows { .. }
            | Op::Interleave { .. } => Stage::CosetLde,
            Op::Open { .. } | Op::Rows { .. } => Stage::MerkleOpen,
            Op::LogUpAux { .. } => Stage::LogUp,
            Op::Compose(_) => Stage::Compose,
            Op::SplitQuotient { .. } => Stage::QuotientSplit,
            Op::EvaluateAt { .. } | Op::EvaluateCoeffs { .. } => Stage::OutOfDomain,
            Op::DeepQuotient { .. } | Op::CombineColumns { .. } => Stage::Deep,
            Op::FriFold { .. } => Stage::FriFold,
            Op::Grind { .. } => Stage::Grind,
        }
    }

    /// The trait method the op stands for.
    pub fn name(&self) -> &'static str {
        match self {
            Op::Upload(_) => "upload",
            Op::Download(_) => "download",
            Op::Reshape { .. } => "reshape",
            Op::Ntt(_) => "ntt",
            Op::Intt(_) => "intt",
            Op::InttInPlace(_) => "intt_in_place",
            Op::CosetLde { .. } => "coset_lde",
            Op::UploadCosetLde { .. } => "upload_coset_lde",
            Op::UploadCommit { .. } => "upload_commit",
            Op::CosetNtt { .. } => "coset_ntt",
            Op::FoldCoeffs { .. } => "fold_coeffs",
            Op::CosetRows { .. } => "coset_rows",
            Op::StrideRows { .. } => "stride_rows",
            Op::Interleave { .. } => "interleave",
            Op::Commit { .. } => "commit",
            Op::Open { .. } => "open",
            Op::LeafDigests { .. } => "leaf_digests",
            Op::Rows { .. } => "rows",
            Op::LogUpAux { .. } => "logup_aux",
            Op::Compose(_) => "compose",
            Op::SplitQuotient { .. } => "split_quotient",
            Op::EvaluateAt { .. } => "evaluate_at",
            Op::EvaluateCoeffs { .. } => "evaluate_coeffs",
            Op::DeepQuotient { .. } => "deep_quotient",
            Op::CombineColumns { .. } => "combine_columns",
            Op::FriFold { .. } => "fri_fold",
            Op::Grind { .. } => "grind",
        }
    }

    /// Every input matrix, in argument order.
    pub fn matrices(&self) -> Vec<&M> {
        match self {
            Op::Upload(_) | Op::UploadCosetLde { .. } | Op::UploadCommit { .. } | Op::Grind { .. } => vec![],
            Op::Download(m) | Op::Ntt(m) | Op::Intt(m) | Op::InttInPlace(m) => vec![m],
            Op::Reshape { m, .. }
            | Op::CosetLde { m, .. }
            | Op::CosetNtt { m, .. }
            | Op::FoldCoeffs { m, .. }
            | Op::CosetRows { m, .. }
            | Op::StrideRows { m, .. }
            | Op::Commit { m, .. }
            | Op::Open { m, .. }
            | Op::LeafDigests { m, .. }
            | Op::Rows { m, .. }
            | Op::EvaluateAt { m, .. }
            | Op::EvaluateCoeffs { m, .. }
            | Op::CombineColumns { m, .. } => vec![m],
            Op::SplitQuotient { q, .. } => vec![q],
            Op::Interleave { pieces } => pieces.iter().collect(),
            Op::LogUpAux { main, fixed, .. } => std::iter::once(main).chain(fixed).collect(),
            Op::Compose(c) => c
                .fixed
                .iter()
                .chain([&c.main])
                .chain(&c.aux)
                .chain(c.next.iter().flat_map(NextRows::matrices))
                .collect(),
            Op::DeepQuotient { points, .. } => {
                points.iter().flat_map(|p| p.columns.iter().map(|c| &c.matrix)).collect()
            }
            Op::FriFold { layer, roll_in, .. } => {
                std::iter::once(layer).chain(roll_in.iter().map(|(g, _)| g)).collect()
            }
        }
    }
}

/// Moving an op between backends' handles, and keeping it.
impl<'a, M, T> Op<'a, M, T> {
    /// The same op over other handles: `fm` maps each matrix, `ft` each
    /// tree; the first error stops the mapping. Small arguments are
    /// borrowed from `self`.
    pub fn try_map<'b, N, U, E>(
        &'b self,
        mut fm: impl FnMut(&'b M) -> std::result::Result<N, E>,
        mut ft: impl FnMut(&'b T) -> std::result::Result<U, E>,
    ) -> std::result::Result<Op<'b, N, U>, E> {
        Ok(match self {
            Op::Upload(m) => Op::Upload(Cow::Borrowed(&**m)),
            Op::Download(m) => Op::Download(fm(m)?),
            Op::Reshape { m, height } => Op::Reshape { m: fm(m)?, height: *height },
            Op::Ntt(m) => Op::Ntt(fm(m)?),
            Op::Intt(m) => Op::Intt(fm(m)?),
            Op::InttInPlace(m) => Op::InttInPlace(fm(m)?),
            Op::CosetLde { m, log_blowup, shift } => Op::CosetLde { m: fm(m)?, log_blowup: *log_blowup, shift: *shift },
            Op::CosetNtt { m, log_blowup, shift } => Op::CosetNtt { m: fm(m)?, log_blowup: *log_blowup, shift: *shift },
            Op::UploadCosetLde { m, log_blowup, shift } => {
                Op::UploadCosetLde { m: Cow::Borrowed(&**m), log_blowup: *log_blowup, shift: *shift }
            }
            Op::UploadCommit { m, log_blowup, shift, hash } => {
                Op::UploadCommit { m: Cow::Borrowed(&**m), log_blowup: *log_blowup, shift: *shift, hash: *hash }
            }
            Op::FoldCoeffs { m, log_fold, c } => Op::FoldCoeffs { m: fm(m)?, log_fold: *log_fold, c: *c },
            Op::CosetRows { m, shift, positions } => {
                Op::CosetRows { m: fm(m)?, shift: *shift, positions: Cow::Borrowed(&**positions) }
            }
            Op::StrideRows { m, first, log_stride } => {
                Op::StrideRows { m: fm(m)?, first: *first, log_stride: *log_stride }
            }
            Op::Interleave { pieces } => {
                Op::Interleave { pieces: pieces.iter().map(&mut fm).collect::<std::result::Result<_, E>>()? }
            }
            Op::Commit { m, hash } => Op::Commit { m: fm(m)?, hash: *hash },
            Op::Open { m, tree, rows } => Op::Open { m: fm(m)?, tree: ft(tree)?, rows: Cow::Borrowed(&**rows) },
            Op::LeafDigests { m, hash } => Op::LeafDigests { m: fm(m)?, hash: *hash },
            Op::Rows { m, rows } => Op::Rows { m: fm(m)?, rows: Cow::Borrowed(&**rows) },
            Op::LogUpAux { logup, main, fixed, z, alpha } => Op::LogUpAux {
                logup: Cow::Borrowed(&**logup),
                main: fm(main)?,
                fixed: fixed.as_ref().map(&mut fm).transpose()?,
                z: *z,
                alpha: *alpha,
            },
            Op::Compose(c) => Op::Compose(Box::new(ComposeOp {
                constraints: Cow::Borrowed(&*c.constraints),
                fixed: c.fixed.as_ref().map(&mut fm).transpose()?,
                main: fm(&c.main)?,
                aux: c.aux.as_ref().map(&mut fm).transpose()?,
                log_trace_height: c.log_trace_height,
                domain: c.domain,
                challenges: Cow::Borrowed(&*c.challenges),
                publics: Cow::Borrowed(&*c.publics),
                aux_values: Cow::Borrowed(&*c.aux_values),
                alpha: c.alpha,
                next: c.next.as_ref().map(|n| n.as_ref().try_map(&mut fm)).transpose()?,
                log_stride: c.log_stride,
            })),
            Op::SplitQuotient { q, domain, log_trace_height, parts, log_out } => Op::SplitQuotient {
                q: fm(q)?,
                domain: *domain,
                log_trace_height: *log_trace_height,
                parts: *parts,
                log_out: *log_out,
            },
            Op::EvaluateAt { m, domain, log_stride, points } => {
                Op::EvaluateAt { m: fm(m)?, domain: *domain, log_stride: *log_stride, points: Cow::Borrowed(&**points) }
            }
            Op::EvaluateCoeffs { m, points } => Op::EvaluateCoeffs { m: fm(m)?, points: Cow::Borrowed(&**points) },
            Op::DeepQuotient { domain, points } => Op::DeepQuotient {
                domain: *domain,
                points: points
                    .iter()
                    .map(|p| {
                        let columns = p.columns.iter().map(|c| {
                            Ok(DeepOpColumns {
                                matrix: fm(&c.matrix)?,
                                coeffs: Cow::Borrowed(&*c.coeffs),
                                values: Cow::Borrowed(&*c.values),
                            })
                        });
                        Ok(DeepOpPoint { point: p.point, columns: columns.collect::<std::result::Result<_, E>>()? })
                    })
                    .collect::<std::result::Result<_, E>>()?,
            },
            Op::CombineColumns { m, weights } => Op::CombineColumns { m: fm(m)?, weights: Cow::Borrowed(&**weights) },
            Op::FriFold { layer, domain, log_arity, beta, roll_in } => Op::FriFold {
                layer: fm(layer)?,
                domain: *domain,
                log_arity: *log_arity,
                beta: *beta,
                roll_in: roll_in.as_ref().map(|(g, s)| fm(g).map(|g| (g, *s))).transpose()?,
            },
            Op::Grind { hash, seed, bits } => Op::Grind { hash: *hash, seed: *seed, bits: *bits },
        })
    }

    /// [`Op::try_map`] with mappings that cannot fail.
    pub fn map<'b, N, U>(&'b self, mut fm: impl FnMut(&'b M) -> N, mut ft: impl FnMut(&'b T) -> U) -> Op<'b, N, U> {
        let done: std::result::Result<_, std::convert::Infallible> = self.try_map(|m| Ok(fm(m)), |t| Ok(ft(t)));
        match done {
            Ok(op) => op,
            Err(never) => match never {},
        }
    }

    /// The op with every small argument owned, to keep beyond the call.
    pub fn into_owned(self) -> Op<'static, M, T> {
        match self {
            Op::Upload(m) => Op::Upload(own(m)),
            Op::Download(m) => Op::Download(m),
            Op::Reshape { m, height } => Op::Reshape { m, height },
            Op::Ntt(m) => Op::Ntt(m),
            Op::Intt(m) => Op::Intt(m),
            Op::InttInPlace(m) => Op::InttInPlace(m),
            Op::CosetLde { m, log_blowup, shift } => Op::CosetLde { m, log_blowup, shift },
            Op::CosetNtt { m, log_blowup, shift } => Op::CosetNtt { m, log_blowup, shift },
            Op::UploadCosetLde { m, log_blowup, shift } => Op::UploadCosetLde { m: own(m), log_blowup, shift },
            Op::UploadCommit { m, log_blowup, shift, hash } => Op::UploadCommit { m: own(m), log_blowup, shift, hash },
            Op::FoldCoeffs { m, log_fold, c } => Op::FoldCoeffs { m, log_fold, c },
            Op::CosetRows { m, shift, positions } => Op::CosetRows { m, shift, positions: own(positions) },
            Op::StrideRows { m, first, log_stride } => Op::StrideRows { m, first, log_stride },
            Op::Interleave { pieces } => Op::Interleave { pieces },
            Op::Commit { m, hash } => Op::Commit { m, hash },
            Op::Open { m, tree, rows } => Op::Open { m, tree, rows: own(rows) },
            Op::LeafDigests { m, hash } => Op::LeafDigests { m, hash },
            Op::Rows { m, rows } => Op::Rows { m, rows: own(rows) },
            Op::LogUpAux { logup, main, fixed, z, alpha } => Op::LogUpAux { logup: own(logup), main, fixed, z, alpha },
            Op::Compose(c) => {
                let c = *c;
                Op::Compose(Box::new(ComposeOp {
                    constraints: own(c.constraints),
                    fixed: c.fixed,
                    main: c.main,
                    aux: c.aux,
                    log_trace_height: c.log_trace_height,
                    domain: c.domain,
                    challenges: own(c.challenges),
                    publics: own(c.publics),
                    aux_values: own(c.aux_values),
                    alpha: c.alpha,
                    next: c.next,
                    log_stride: c.log_stride,
                }))
            }
            Op::SplitQuotient { q, domain, log_trace_height, parts, log_out } => {
                Op::SplitQuotient { q, domain, log_trace_height, parts, log_out }
            }
            Op::EvaluateAt { m, domain, log_stride, points } => {
                Op::EvaluateAt { m, domain, log_stride, points: own(points) }
            }
            Op::EvaluateCoeffs { m, points } => Op::EvaluateCoeffs { m, points: own(points) },
            Op::DeepQuotient { domain, points } => Op::DeepQuotient {
                domain,
                points: points
                    .into_iter()
                    .map(|p| DeepOpPoint {
                        point: p.point,
                        columns: p
                            .columns
                            .into_iter()
                            .map(|c| DeepOpColumns { matrix: c.matrix, coeffs: own(c.coeffs), values: own(c.values) })
                            .collect(),
                    })
                    .collect(),
            },
            Op::CombineColumns { m, weights } => Op::CombineColumns { m, weights: own(weights) },
            Op::FriFold { layer, domain, log_arity, beta, roll_in } => {
                Op::FriFold { layer, domain, log_arity, beta, roll_in }
            }
            Op::Grind { hash, seed, bits } => Op::Grind { hash, seed, bits },
        }
    }
}

impl<M, T> Op<'_, M, T> {
    /// Runs the op on `b`, whose matrices and trees the handles refer to.
    pub fn dispatch<B>(&self, b: &B, ctx: &Ctx) -> Result<Out<B::Matrix, B::Tree>>
    where
        B: Backend,
        M: Borrow<B::Matrix>,
        T: Borrow<B::Tree>,
    {
        Ok(match self {
            Op::Upload(m) => Out::Matrix(b.upload(ctx, m)?),
            Op::Download(m) => Out::Host(b.download(ctx, m.borrow())?),
            Op::Reshape { m, height } => Out::Matrix(b.reshape(ctx, m.borrow(), *height)?),
            Op::Ntt(m) => Out::Matrix(b.ntt(ctx, m.borrow())?),
            Op::Intt(m) => Out::Matrix(b.intt(ctx, m.borrow())?),
            Op::InttInPlace(m) => Out::Matrix(b.intt_in_place(ctx, m.borrow())?),
            Op::CosetLde { m, log_blowup, shift } => Out::Matrix(b.coset_lde(ctx, m.borrow(), *log_blowup, *shift)?),
            Op::CosetNtt { m, log_blowup, shift } => Out::Matrix(b.coset_ntt(ctx, m.borrow(), *log_blowup, *shift)?),
            Op::UploadCosetLde { m, log_blowup, shift } => {
                let (m, lde) = b.upload_coset_lde(ctx, m, *log_blowup, *shift)?;
                Out::Extended(m, lde)
            }
            Op::UploadCommit { m, log_blowup, shift, hash } => {
                let (m, lde, tree) = b.upload_commit(ctx, m, *log_blowup, *shift, *hash)?;
                Out::Committed(m, lde, tree)
            }
            Op::FoldCoeffs { m, log_fold, c } => Out::Matrix(b.fold_coeffs(ctx, m.borrow(), *log_fold, *c)?),
            Op::CosetRows { m, shift, positions } => Out::Rows(b.coset_rows(ctx, m.borrow(), *shift, positions)?),
            Op::StrideRows { m, first, log_stride } => {
                Out::Matrix(b.stride_rows(ctx, m.borrow(), *first, *log_stride)?)
            }
            Op::Interleave { pieces } => {
                Out::Matrix(b.interleave(ctx, &pieces.iter().map(Borrow::borrow).collect::<Vec<_>>())?)
            }
            Op::Commit { m, hash } => Out::Tree(b.commit(ctx, m.borrow(), *hash)?),
            Op::Open { m, tree, rows } => Out::Openings(b.open(ctx, m.borrow(), tree.borrow(), rows)?),
            Op::LeafDigests { m, hash } => Out::Digests(b.leaf_digests(ctx, m.borrow(), *hash)?),
            Op::Rows { m, rows } => Out::Rows(b.rows(ctx, m.borrow(), rows)?),
            Op::LogUpAux { logup, main, fixed, z, alpha } => {
                let fixed = fixed.as_ref().map(Borrow::borrow);
                let inputs = LogUpInputs { logup, main: main.borrow(), fixed, z: *z, alpha: *alpha };
                let (m, sum) = b.logup_aux(ctx, &inputs)?;
                Out::LogUp(m, sum)
            }
            Op::Compose(c) => Out::Matrix(b.compose(ctx, &c.inputs())?),
            Op::SplitQuotient { q, domain, log_trace_height, parts, log_out } => {
                Out::Matrix(b.split_quotient(ctx, q.borrow(), *domain, *log_trace_height, *parts, *log_out)?)
            }
            Op::EvaluateAt { m, domain, log_stride, points } => {
                Out::Values(b.evaluate_at(ctx, m.borrow(), *domain, *log_stride, points)?)
            }
            Op::EvaluateCoeffs { m, points } => Out::Values(b.evaluate_coeffs(ctx, m.borrow(), points)?),
            Op::DeepQuotient { domain, points } => {
                let points: Vec<DeepPoint<B::Matrix>> = points.iter().map(DeepOpPoint::point).collect();
                Out::Matrix(b.deep_quotient(ctx, *domain, &points)?)
            }
            Op::CombineColumns { m, weights } => Out::Matrix(b.combine_columns(ctx, m.borrow(), weights)?),
            Op::FriFold { layer, domain, log_arity, beta, roll_in } => {
                let roll_in = roll_in.as_ref().map(|(g, s)| (g.borrow(), *s));
                Out::Matrix(b.fri_fold(ctx, layer.borrow(), *domain, *log_arity, *beta, roll_in)?)
            }
            Op::Grind { hash, seed, bits } => Out::Nonce(b.grind(ctx, *hash, seed, *bits)?),
        })
    }
}

impl<M: DeviceMatrix, T: DeviceTree> Op<'_, M, T> {
    /// The shared shape checks of [`crate::validate`] for this op (none
    /// for transfers).
    pub fn validate(&self) -> Result<()> {
        match self {
            Op::Upload(_) | Op::Download(_) => Ok(()),
            Op::Reshape { m, height } => validate::reshape(m, *height),
            Op::Ntt(m) => validate::ntt(Stage::Ntt, m).map(drop),
            Op::Intt(m) | Op::InttInPlace(m) => validate::ntt(Stage::InverseNtt, m).map(drop),
            Op::CosetLde { m, log_blowup, shift } | Op::CosetNtt { m, log_blowup, shift } => {
                validate::coset_lde(m, *log_blowup, *shift).map(drop)
            }
            Op::UploadCosetLde { m, log_blowup, shift } => validate::coset_lde(&**m, *log_blowup, *shift).map(drop),
            Op::UploadCommit { m, log_blowup, shift, .. } => {
                validate::upload_commit(&**m, *log_blowup, *shift).map(drop)
            }
            Op::FoldCoeffs { m, log_fold, .. } => validate::fold_coeffs(m, *log_fold),
            Op::CosetRows { m, shift, positions } => validate::coset_rows(m, *shift, positions),
            Op::StrideRows { m, log_stride, .. } => validate::stride_rows(m, *log_stride),
            Op::Interleave { pieces } => validate::interleave(&pieces.iter().collect::<Vec<_>>()),
            Op::Commit { m, .. } => validate::commit(m).map(drop),
            Op::Open { m, tree, rows } => validate::open(m, tree, rows),
            Op::LeafDigests { m, .. } => validate::leaf_digests(m),
            Op::Rows { m, rows } => validate::rows(m, rows),
            Op::LogUpAux { logup, main, fixed, z, alpha } => {
                validate::logup_aux(&LogUpInputs { logup, main, fixed: fixed.as_ref(), z: *z, alpha: *alpha })
            }
            Op::Compose(c) => validate::compose(&c.inputs::<M>()),
            Op::SplitQuotient { q, domain, log_trace_height, parts, log_out } => {
                validate::split_quotient(q, *domain, *log_trace_height, *parts, *log_out)
            }
            Op::EvaluateAt { m, domain, log_stride, .. } => validate::evaluate_at(m, *domain, *log_stride),
            Op::EvaluateCoeffs { m, .. } => validate::evaluate_coeffs(m),
            Op::DeepQuotient { domain, points } => {
                validate::deep(*domain, &points.iter().map(DeepOpPoint::point::<M>).collect::<Vec<_>>())
            }
            Op::CombineColumns { m, weights } => validate::combine_columns(m, weights),
            Op::FriFold { layer, domain, log_arity, roll_in, .. } => {
                validate::fri_fold(layer, *domain, *log_arity, roll_in.as_ref().map(|(g, _)| g))
            }
            Op::Grind { bits, .. } => validate::grind(*bits),
        }
    }

    /// The device bytes the op works on (inputs, outputs and scratch, from
    /// [`crate::memory`]): what a memory gate or a decline reports.
    pub fn bytes(&self) -> u64 {
        let of = |m: &M| matrix_bytes(m.height() as u64, m.width() as u64);
        let inputs: u64 = self.matrices().into_iter().map(of).sum();
        let ext_column = |rows: usize| matrix_bytes(rows as u64, 3);
        match self {
            Op::Upload(m) => matrix_bytes(m.height() as u64, m.width() as u64),
            Op::Download(_) | Op::Reshape { .. } | Op::FriFold { .. } => inputs,
            Op::Ntt(_) | Op::Intt(_) | Op::InttInPlace(_) => 2 * inputs,
            Op::CosetLde { m, log_blowup, .. } | Op::CosetNtt { m, log_blowup, .. } => {
                inputs + 2 * matrix_bytes((m.height() as u64) << (*log_blowup).min(16), m.width() as u64)
            }
            Op::UploadCosetLde { m, log_blowup, .. } => {
                let (h, w) = (m.height() as u64, m.width() as u64);
                matrix_bytes(h, w) + 2 * matrix_bytes(h << (*log_blowup).min(16), w)
            }
            Op::UploadCommit { m, log_blowup, .. } => {
                let (h, w) = (m.height() as u64, m.width() as u64);
                let big = h << (*log_blowup).min(16);
                matrix_bytes(h, w) + 2 * matrix_bytes(big, w) + tree_bytes(big)
            }
            Op::FoldCoeffs { m, log_fold, .. } => {
                inputs + matrix_bytes((m.height() >> (*log_fold).min(63)) as u64, m.width() as u64)
            }
            Op::StrideRows { m, log_stride, .. } => {
                inputs + matrix_bytes((m.height() >> (*log_stride).min(63)) as u64, m.width() as u64)
            }
            Op::Interleave { .. } => 2 * inputs,
            Op::Commit { m, .. } | Op::Open { m, .. } => inputs + tree_bytes(m.height() as u64),
            Op::LeafDigests { m, .. } => inputs + 32 * m.height() as u64,
            Op::Rows { m, rows } => inputs + (rows.len() * m.width() * 8) as u64,
            Op::CosetRows { .. } => 3 * inputs,
            Op::LogUpAux { logup, main, .. } => {
                inputs + matrix_bytes(main.height() as u64, 3 * logup.aux_width() as u64)
            }
            Op::Compose(c) => inputs + 2 * ext_column(c.main.height()),
            Op::SplitQuotient { parts, log_out, .. } => {
                2 * inputs + matrix_bytes(1u64.checked_shl(*log_out).unwrap_or(u64::MAX), 3 * *parts as u64)
            }
            Op::EvaluateAt { domain, .. } => inputs + ext_column(domain.size()),
            // A backend may evaluate the columns once transformed.
            Op::EvaluateCoeffs { m, .. } => 2 * inputs + ext_column(m.height()),
            Op::DeepQuotient { domain, .. } => {
                inputs + 2 * matrix_bytes(1u64.checked_shl(domain.log_size).unwrap_or(u64::MAX), 3)
            }
            Op::CombineColumns { m, .. } => inputs + ext_column(m.height()),
            Op::Grind { .. } => crate::memory::stage_bytes(Stage::Grind, &crate::memory::TableDims::default()),
        }
    }

    /// The op's operands in the memory model's per-operation terms (see
    /// [`crate::memory::stage_alloc`]): what a memory gate admits it with
    /// and what a check of the model against a device measures it by.
    pub fn dims(&self) -> TableDims {
        let log = |rows: usize| rows.max(1).trailing_zeros();
        let one = |m: &M, log_blowup: u32| TableDims::matrix(log(m.height()), log_blowup, m.width());
        match self {
            Op::Upload(m) => TableDims::matrix(log(m.height()), 0, m.width()),
            Op::Download(m)
            | Op::Reshape { m, .. }
            | Op::Ntt(m)
            | Op::Intt(m)
            | Op::InttInPlace(m)
            | Op::FoldCoeffs { m, .. }
            | Op::CosetRows { m, .. }
            | Op::StrideRows { m, .. } => one(m, 0),
            Op::Interleave { pieces } => {
                let rows = pieces.first().map_or(0, |p| p.height()) * pieces.len();
                TableDims::matrix(log(rows), 0, pieces.first().map_or(0, |p| p.width()))
            }
            Op::CosetLde { m, log_blowup, .. } | Op::CosetNtt { m, log_blowup, .. } => one(m, *log_blowup),
            Op::UploadCosetLde { m, log_blowup, .. } | Op::UploadCommit { m, log_blowup, .. } => {
                TableDims::matrix(log(m.height()), *log_blowup, m.width())
            }
            Op::Commit { m, .. } | Op::Open { m, .. } | Op::LeafDigests { m, .. } | Op::Rows { m, .. } => one(m, 0),
            Op::EvaluateAt { m, domain, .. } => TableDims::matrix(domain.log_size, 0, m.width()),
            Op::EvaluateCoeffs { m, .. } => one(m, 0),
            Op::CombineColumns { m, .. } => one(m, 0),
            Op::LogUpAux { logup, main, fixed, .. } => TableDims {
                fixed_width: fixed.as_ref().map_or(0, |f| f.width() as u64),
                aux_width: logup.aux_width() as u64,
                ..one(main, 0)
            },
            Op::Compose(c) => {
                // A piece given its next rows is a coset of its own size.
                let log_n = if c.next.is_some() { c.domain.log_size } else { c.log_trace_height };
                TableDims {
                    fixed_width: c.fixed.as_ref().map_or(0, |f| f.width() as u64),
                    aux_width: c.aux.as_ref().map_or(0, |a| a.width() as u64).div_ceil(3),
                    ..TableDims::matrix(log_n, c.domain.log_size.saturating_sub(log_n), c.main.width())
                }
            }
            Op::SplitQuotient { log_trace_height, parts, log_out, .. } => TableDims {
                parts: *parts as u64,
                ..TableDims::matrix(*log_trace_height, log_out.saturating_sub(*log_trace_height), 0)
            },
            Op::DeepQuotient { domain, points } => {
                let width = points.iter().map(|p| p.columns.iter().map(|c| c.matrix.width()).sum::<usize>()).max();
                TableDims::matrix(domain.log_size, 0, width.unwrap_or(0))
            }
            Op::FriFold { domain, log_arity, roll_in, .. } => TableDims::matrix(
                domain.log_size.saturating_sub(*log_arity),
                *log_arity,
                3 + 3 * usize::from(roll_in.is_some()),
            ),
            Op::Grind { .. } => TableDims::default(),
        }
    }

    /// For an op whose result comes back to the host (download, open,
    /// leaf_digests, rows, evaluate_at, grind): its bytes.
    pub fn result_bytes(&self) -> Option<u64> {
        match self {
            Op::Download(m) => Some(matrix_bytes(m.height() as u64, m.width() as u64)),
            Op::Open { m, rows, .. } => Some((rows.len() * (m.width() * 8 + 32 * 32)) as u64),
            Op::LeafDigests { m, .. } => Some(32 * m.height() as u64),
            Op::Rows { m, rows } | Op::CosetRows { m, positions: rows, .. } => {
                Some((rows.len() * m.width() * 8) as u64)
            }
            Op::EvaluateAt { m, points, .. } | Op::EvaluateCoeffs { m, points } => {
                Some((points.len() * m.width() * 24) as u64)
            }
            Op::Grind { .. } => Some(8),
            _ => None,
        }
    }
}

impl<M, T> Out<M, T> {
    /// The variant's name, for errors.
    pub fn kind(&self) -> &'static str {
        match self {
            Out::Matrix(_) => "a matrix",
            Out::Host(_) => "a host matrix",
            Out::Tree(_) => "a tree",
            Out::Openings(_) => "openings",
            Out::Digests(_) => "leaf digests",
            Out::Rows(_) => "rows",
            Out::LogUp(..) => "an auxiliary trace",
            Out::Extended(..) => "a matrix and its extension",
            Out::Committed(..) => "a matrix, its extension and its tree",
            Out::Values(_) => "values",
            Out::Nonce(_) => "a nonce",
        }
    }

    /// The same result over other handles.
    pub fn map<N, U>(self, mut fm: impl FnMut(M) -> N, ft: impl FnOnce(T) -> U) -> Out<N, U> {
        let done: std::result::Result<_, std::convert::Infallible> = self.try_map(|m| Ok(fm(m)), |t| Ok(ft(t)));
        match done {
            Ok(out) => out,
            Err(never) => match never {},
        }
    }

    /// [`Out::map`] with mappings that may fail.
    pub fn try_map<N, U, E>(
        self,
        mut fm: impl FnMut(M) -> std::result::Result<N, E>,
        ft: impl FnOnce(T) -> std::result::Result<U, E>,
    ) -> std::result::Result<Out<N, U>, E> {
        Ok(match self {
            Out::Matrix(m) => Out::Matrix(fm(m)?),
            Out::Host(h) => Out::Host(h),
            Out::Tree(t) => Out::Tree(ft(t)?),
            Out::Openings(o) => Out::Openings(o),
            Out::Digests(d) => Out::Digests(d),
            Out::Rows(r) => Out::Rows(r),
            Out::LogUp(m, s) => Out::LogUp(fm(m)?, s),
            Out::Extended(m, lde) => Out::Extended(fm(m)?, fm(lde)?),
            Out::Committed(m, lde, t) => Out::Committed(fm(m)?, fm(lde)?, ft(t)?),
            Out::Values(v) => Out::Values(v),
            Out::Nonce(n) => Out::Nonce(n),
        })
    }

    /// A hook returned the wrong kind of result for its op: a bug in the
    /// hook, reported as a typed error rather than a panic.
    pub fn wrong(&self, stage: Stage, ctx: &Ctx, want: &str) -> BackendError {
        BackendError::Device {
            stage,
            table: ctx.table.to_string(),
            message: format!("the backend's hook returned {} where {want} was expected", self.kind()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::memory::{stage_alloc, stage_bytes};

    struct S(usize, usize);
    impl DeviceMatrix for S {
        fn height(&self) -> usize {
            self.0
        }
        fn width(&self) -> usize {
            self.1
        }
    }
    struct T;
    impl DeviceTree for T {
        fn root(&self) -> Digest {
            Digest::default()
        }
        fn leaves(&self) -> usize {
            1
        }
        fn hash(&self) -> HashKind {
            HashKind::Blake3
        }
    }

    #[test]
    fn dims_follow_the_memory_models_conventions() {
        let (layer, g) = (S(1 << 12, 3), S(1 << 10, 3));
        let fold: Op<&S, &T> = Op::FriFold {
            layer: &layer,
            domain: Coset::new(12, F::ONE),
            log_arity: 2,
            beta: Ext::ZERO,
            roll_in: Some((&g, Ext::ZERO)),
        };
        assert_eq!(fold.dims(), TableDims::matrix(10, 2, 6));
        let fold_bytes = matrix_bytes(1 << 12, 3) + 2 * matrix_bytes(1 << 10, 3);
        assert_eq!(stage_bytes(fold.stage(), &fold.dims()), fold_bytes);
        let trace = S(1 << 8, 5);
        let lde: Op<&S, &T> = Op::CosetLde { m: &trace, log_blowup: 2, shift: F::ONE };
        assert_eq!(stage_alloc(lde.stage(), &lde.dims()).output, matrix_bytes(1 << 10, 5));
        let q = S(1 << 10, 3);
        let split: Op<&S, &T> =
            Op::SplitQuotient { q: &q, domain: Coset::new(10, F::ONE), log_trace_height: 8, parts: 2, log_out: 10 };
        assert_eq!(split.dims(), TableDims { parts: 2, ..TableDims::matrix(8, 2, 0) });
        assert_eq!(stage_alloc(split.stage(), &split.dims()).output, matrix_bytes(1 << 10, 6));
    }
}
