//! Backends defined by one hook over [`Op`], for wrappers: recovery,
//! cross-checking, fault injection, a user's counting or logging layer.
//!
//! - [`Wrapper`]: same matrices and trees as the inner backend. Its hook
//!   [`Wrapper::call`] forwards by default; override it to act around
//!   some or all operations (`op.stage()`, `op.bytes()`, `op.name()` say
//!   what the op is, `op.dispatch(inner, ctx)` runs it).
//! - [`OpHook`]: data types of its own (a pair of backends' matrices, a
//!   matrix with its recomputation recipe); [`OpHook::run`] maps the op's
//!   handles onto the inner backends' with [`Op::try_map`] and wraps the
//!   [`Out`].
//!
//! Either way the type is a full [`Backend`] through the blanket impls
//! below: each trait method builds its `Op`, runs the hook and unpacks the
//! `Out`. A hook that returns the wrong kind of `Out` gets a typed
//! `BackendError::Device`, not a panic.

use crate::backend::{
    Backend, BackendBase, ComposeInputs, ComposeOps, Ctx, DeepOps, DeepPoint, DeviceMatrix, DeviceTree, FriOps, Lane,
    LogUpInputs, LogUpOps, MerkleOps, NttOps, RowOpening,
};
use crate::domain::Coset;
use crate::error::Result;
use crate::ext::Ext;
use crate::field::F;
use crate::hash::{Digest, HashKind};
use crate::host::HostPin;
use crate::matrix::ColMatrix;
use crate::memory::{DeviceSet, Reservation};
use crate::op::{ComposeOp, DeepOpPoint, Op, Out};
use std::borrow::Cow;

/// A backend whose every operation goes through [`OpHook::run`].
pub trait OpHook: Send + Sync {
    type Matrix: DeviceMatrix;
    type Tree: DeviceTree;

    fn name(&self) -> &str;

    /// Runs one operation; its handles are this backend's own.
    fn run(&self, ctx: &Ctx, op: Op<'_, &Self::Matrix, &Self::Tree>) -> Result<Out<Self::Matrix, Self::Tree>>;

    /// See [`BackendBase::drain`]; a wrapper drains what it wraps.
    fn drain(&self) -> Result<()>;

    /// See [`BackendBase::reserve`]; a wrapper reserves on the device
    /// backends it wraps.
    fn reserve(&self, ctx: &Ctx, lanes: &[Lane], set: &DeviceSet) -> Result<Reservation>;

    /// See [`BackendBase::pin`]; a wrapper pins on the device backends it
    /// wraps.
    fn pin(&self, ctx: &Ctx, m: &ColMatrix) -> Result<HostPin>;
}

/// A backend that wraps another and keeps its data types: one hook,
/// [`Wrapper::call`], which forwards unless overridden.
pub trait Wrapper: Send + Sync {
    type Inner: Backend;

    fn inner(&self) -> &Self::Inner;

    fn name(&self) -> &str {
        self.inner().name()
    }

    /// Every operation passes here. The default runs it on the inner backend.
    fn call(&self, ctx: &Ctx, op: Op<'_, &Matrix<Self>, &Tree<Self>>) -> Result<Out<Matrix<Self>, Tree<Self>>> {
        op.dispatch(self.inner(), ctx)
    }

    fn drain(&self) -> Result<()> {
        self.inner().drain()
    }

    fn reserve(&self, ctx: &Ctx, lanes: &[Lane], set: &DeviceSet) -> Result<Reservation> {
        self.inner().reserve(ctx, lanes, set)
    }

    fn pin(&self, ctx: &Ctx, m: &ColMatrix) -> Result<HostPin> {
        self.inner().pin(ctx, m)
    }
}

/// A backend shared by reference count is a backend: every operation
/// runs on the one behind it. A process that keeps a device open across
/// proves (`kiln serve`) hands each prove its own wrappers over one
/// device this way.
impl<B: Backend> Wrapper for std::sync::Arc<B> {
    type Inner = B;
    fn inner(&self) -> &B {
        self
    }
}

/// The inner backend's matrix type of a [`Wrapper`].
pub type Matrix<W> = <<W as Wrapper>::Inner as BackendBase>::Matrix;
/// The inner backend's tree type of a [`Wrapper`].
pub type Tree<W> = <<W as Wrapper>::Inner as BackendBase>::Tree;

impl<W: Wrapper> OpHook for W {
    type Matrix = Matrix<W>;
    type Tree = Tree<W>;

    fn name(&self) -> &str {
        Wrapper::name(self)
    }
    fn run(&self, ctx: &Ctx, op: Op<'_, &Matrix<W>, &Tree<W>>) -> Result<Out<Matrix<W>, Tree<W>>> {
        self.call(ctx, op)
    }
    fn drain(&self) -> Result<()> {
        Wrapper::drain(self)
    }
    fn reserve(&self, ctx: &Ctx, lanes: &[Lane], set: &DeviceSet) -> Result<Reservation> {
        Wrapper::reserve(self, ctx, lanes, set)
    }
    fn pin(&self, ctx: &Ctx, m: &ColMatrix) -> Result<HostPin> {
        Wrapper::pin(self, ctx, m)
    }
}

/// Runs `op` and unpacks a matrix result.
fn matrix<H: OpHook + ?Sized>(h: &H, ctx: &Ctx, op: Op<'_, &H::Matrix, &H::Tree>) -> Result<H::Matrix> {
    let stage = op.stage();
    match h.run(ctx, op)? {
        Out::Matrix(m) => Ok(m),
        other => Err(other.wrong(stage, ctx, "a matrix")),
    }
}

impl<H: OpHook> BackendBase for H {
    type Matrix = H::Matrix;
    type Tree = H::Tree;

    fn name(&self) -> &str {
        OpHook::name(self)
    }
    fn upload(&self, ctx: &Ctx, m: &ColMatrix) -> Result<H::Matrix> {
        matrix(self, ctx, Op::Upload(Cow::Borrowed(m)))
    }
    fn download(&self, ctx: &Ctx, m: &H::Matrix) -> Result<ColMatrix> {
        let op = Op::Download(m);
        let stage = op.stage();
        match self.run(ctx, op)? {
            Out::Host(h) => Ok(h),
            other => Err(other.wrong(stage, ctx, "a host matrix")),
        }
    }
    fn reshape(&self, ctx: &Ctx, m: &H::Matrix, height: usize) -> Result<H::Matrix> {
        matrix(self, ctx, Op::Reshape { m, height })
    }
    fn stride_rows(&self, ctx: &Ctx, m: &H::Matrix, first: usize, log_stride: u32) -> Result<H::Matrix> {
        matrix(self, ctx, Op::StrideRows { m, first, log_stride })
    }
    fn interleave(&self, ctx: &Ctx, pieces: &[&H::Matrix]) -> Result<H::Matrix> {
        matrix(self, ctx, Op::Interleave { pieces: pieces.to_vec() })
    }
    fn drain(&self) -> Result<()> {
        OpHook::drain(self)
    }
    fn reserve(&self, ctx: &Ctx, lanes: &[Lane], set: &DeviceSet) -> Result<Reservation> {
        OpHook::reserve(self, ctx, lanes, set)
    }
    fn pin(&self, ctx: &Ctx, m: &ColMatrix) -> Result<HostPin> {
        OpHook::pin(self, ctx, m)
    }
}

impl<H: OpHook> NttOps for H {
    fn ntt(&self, ctx: &Ctx, m: &H::Matrix) -> Result<H::Matrix> {
        matrix(self, ctx, Op::Ntt(m))
    }
    fn intt(&self, ctx: &Ctx, m: &H::Matrix) -> Result<H::Matrix> {
        matrix(self, ctx, Op::Intt(m))
    }
    fn intt_in_place(&self, ctx: &Ctx, m: &H::Matrix) -> Result<H::Matrix> {
        matrix(self, ctx, Op::InttInPlace(m))
    }
    fn coset_lde(&self, ctx: &Ctx, m: &H::Matrix, log_blowup: u32, shift: F) -> Result<H::Matrix> {
        matrix(self, ctx, Op::CosetLde { m, log_blowup, shift })
    }
    fn upload_coset_lde(
        &self,
        ctx: &Ctx,
        evals: &ColMatrix,
        log_blowup: u32,
        shift: F,
    ) -> Result<(H::Matrix, H::Matrix)> {
        let op = Op::UploadCosetLde { m: Cow::Borrowed(evals), log_blowup, shift };
        let stage = op.stage();
        match self.run(ctx, op)? {
            Out::Extended(m, lde) => Ok((m, lde)),
            other => Err(other.wrong(stage, ctx, "a matrix and its extension")),
        }
    }
    fn coset_ntt(&self, ctx: &Ctx, m: &H::Matrix, log_blowup: u32, shift: F) -> Result<H::Matrix> {
        matrix(self, ctx, Op::CosetNtt { m, log_blowup, shift })
    }
    fn fold_coeffs(&self, ctx: &Ctx, m: &H::Matrix, log_fold: u32, c: F) -> Result<H::Matrix> {
        matrix(self, ctx, Op::FoldCoeffs { m, log_fold, c })
    }
    fn coset_rows(&self, ctx: &Ctx, m: &H::Matrix, shift: F, positions: &[usize]) -> Result<Vec<Vec<F>>> {
        let op = Op::CosetRows { m, shift, positions: Cow::Borrowed(positions) };
        let stage = op.stage();
        match self.run(ctx, op)? {
            Out::Rows(r) => Ok(r),
            other => Err(other.wrong(stage, ctx, "rows")),
        }
    }
}

impl<H: OpHook> MerkleOps for H {
    fn upload_commit(
        &self,
        ctx: &Ctx,
        evals: &ColMatrix,
        log_blowup: u32,
        shift: F,
        hash: HashKind,
    ) -> Result<(H::Matrix, H::Matrix, H::Tree)> {
        let op = Op::UploadCommit { m: Cow::Borrowed(evals), log_blowup, shift, hash };
        let stage = op.stage();
        match self.run(ctx, op)? {
            Out::Committed(m, lde, tree) => Ok((m, lde, tree)),
            other => Err(other.wrong(stage, ctx, "a matrix, its extension and its tree")),
        }
    }
    fn commit(&self, ctx: &Ctx, m: &H::Matrix, hash: HashKind) -> Result<H::Tree> {
        let op = Op::Commit { m, hash };
        let stage = op.stage();
        match self.run(ctx, op)? {
            Out::Tree(t) => Ok(t),
            other => Err(other.wrong(stage, ctx, "a tree")),
        }
    }
    fn open(&self, ctx: &Ctx, m: &H::Matrix, tree: &H::Tree, rows: &[usize]) -> Result<Vec<RowOpening>> {
        let op = Op::Open { m, tree, rows: Cow::Borrowed(rows) };
        let stage = op.stage();
        match self.run(ctx, op)? {
            Out::Openings(o) => Ok(o),
            other => Err(other.wrong(stage, ctx, "openings")),
        }
    }
    fn leaf_digests(&self, ctx: &Ctx, m: &H::Matrix, hash: HashKind) -> Result<Vec<Digest>> {
        let op = Op::LeafDigests { m, hash };
        let stage = op.stage();
        match self.run(ctx, op)? {
            Out::Digests(d) => Ok(d),
            other => Err(other.wrong(stage, ctx, "leaf digests")),
        }
    }
    fn rows(&self, ctx: &Ctx, m: &H::Matrix, rows: &[usize]) -> Result<Vec<Vec<F>>> {
        let op = Op::Rows { m, rows: Cow::Borrowed(rows) };
        let stage = op.stage();
        match self.run(ctx, op)? {
            Out::Rows(r) => Ok(r),
            other => Err(other.wrong(stage, ctx, "rows")),
        }
    }
}

impl<H: OpHook> LogUpOps for H {
    fn logup_aux(&self, ctx: &Ctx, i: &LogUpInputs<H::Matrix>) -> Result<(H::Matrix, Ext)> {
        let op = Op::LogUpAux { logup: Cow::Borrowed(i.logup), main: i.main, fixed: i.fixed, z: i.z, alpha: i.alpha };
        let stage = op.stage();
        match self.run(ctx, op)? {
            Out::LogUp(m, sum) => Ok((m, sum)),
            other => Err(other.wrong(stage, ctx, "an auxiliary trace")),
        }
    }
}

impl<H: OpHook> ComposeOps for H {
    fn compose(&self, ctx: &Ctx, i: &ComposeInputs<H::Matrix>) -> Result<H::Matrix> {
        matrix(self, ctx, Op::Compose(Box::new(ComposeOp::from_inputs(i))))
    }
    fn split_quotient(
        &self,
        ctx: &Ctx,
        q: &H::Matrix,
        domain: Coset,
        log_trace_height: u32,
        parts: usize,
        log_out: u32,
    ) -> Result<H::Matrix> {
        matrix(self, ctx, Op::SplitQuotient { q, domain, log_trace_height, parts, log_out })
    }
}

impl<H: OpHook> DeepOps for H {
    fn evaluate_at(
        &self,
        ctx: &Ctx,
        m: &H::Matrix,
        domain: Coset,
        log_stride: u32,
        points: &[Ext],
    ) -> Result<Vec<Vec<Ext>>> {
        let op = Op::EvaluateAt { m, domain, log_stride, points: Cow::Borrowed(points) };
        let stage = op.stage();
        match self.run(ctx, op)? {
            Out::Values(v) => Ok(v),
            other => Err(other.wrong(stage, ctx, "values")),
        }
    }
    fn evaluate_coeffs(&self, ctx: &Ctx, coeffs: &H::Matrix, points: &[Ext]) -> Result<Vec<Vec<Ext>>> {
        let op = Op::EvaluateCoeffs { m: coeffs, points: Cow::Borrowed(points) };
        let stage = op.stage();
        match self.run(ctx, op)? {
            Out::Values(v) => Ok(v),
            other => Err(other.wrong(stage, ctx, "values")),
        }
    }
    fn deep_quotient(&self, ctx: &Ctx, domain: Coset, points: &[DeepPoint<H::Matrix>]) -> Result<H::Matrix> {
        matrix(self, ctx, Op::DeepQuotient { domain, points: DeepOpPoint::from_points(points) })
    }
    fn combine_columns(&self, ctx: &Ctx, m: &H::Matrix, weights: &[Ext]) -> Result<H::Matrix> {
        matrix(self, ctx, Op::CombineColumns { m, weights: Cow::Borrowed(weights) })
    }
}

impl<H: OpHook> FriOps for H {
    fn fri_fold(
        &self,
        ctx: &Ctx,
        layer: &H::Matrix,
        domain: Coset,
        log_arity: u32,
        beta: Ext,
        roll_in: Option<(&H::Matrix, Ext)>,
    ) -> Result<H::Matrix> {
        matrix(self, ctx, Op::FriFold { layer, domain, log_arity, beta, roll_in })
    }
    fn grind(&self, ctx: &Ctx, hash: HashKind, seed: &Digest, bits: u32) -> Result<u64> {
        let op = Op::Grind { hash, seed: *seed, bits };
        let stage = op.stage();
        match self.run(ctx, op)? {
            Out::Nonce(n) => Ok(n),
            other => Err(other.wrong(stage, ctx, "a nonce")),
        }
    }
}
