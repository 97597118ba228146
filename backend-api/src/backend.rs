//! The `Backend` trait family: the prover's heavy stages, one sub-trait per
//! concern. Device data are associated types, so they stay on the device
//! between stages; host copies happen only through `download` and the few
//! operations whose results the protocol needs on the host (roots,
//! openings, out-of-domain values, the grinding nonce).
//!
//! All matrices are column-major base-field matrices. Extension-valued data
//! (auxiliary columns, quotients, DEEP and FRI layers) are flattened three
//! base columns per extension column, see [`crate::matrix`].

use crate::domain::Coset;
use crate::error::Result;
use crate::ext::Ext;
use crate::field::F;
use crate::hash::{Digest, HashKind};
use crate::host::HostPin;
use crate::ir::ConstraintSystem;
use crate::logup::LogUp;
use crate::matrix::ColMatrix;
use crate::memory::{DeviceSet, Reservation};
use serde::{Deserialize, Serialize};
use std::sync::atomic::{AtomicU64, Ordering};

/// Names the work an operation belongs to, for errors, counters and
/// cross-check reports, and the lane it runs on.
#[derive(Clone, Copy, Debug)]
pub struct Ctx<'a> {
    pub table: &'a str,
    pub lane: Lane,
}

impl<'a> Ctx<'a> {
    /// Work of `table` outside any lane.
    pub const fn table(table: &'a str) -> Ctx<'a> {
        Ctx { table, lane: Lane::NONE }
    }

    /// Work of `table` on `lane`.
    pub const fn on(table: &'a str, lane: Lane) -> Ctx<'a> {
        Ctx { table, lane }
    }
}

/// A chain of work whose operations run in order: the stages of one table
/// of one proof. Operations on different lanes may run at once; a device
/// backend maps lanes onto its streams and orders a lane's reads of
/// another lane's data itself. [`Lane::NONE`] is work outside any chain.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Lane(pub u64);

impl Lane {
    pub const NONE: Lane = Lane(0);

    /// A lane no other caller in this process holds.
    pub fn fresh() -> Lane {
        static NEXT: AtomicU64 = AtomicU64::new(1);
        Lane(NEXT.fetch_add(1, Ordering::Relaxed))
    }
}

/// A matrix held by a backend.
pub trait DeviceMatrix: Send + Sync {
    fn height(&self) -> usize;
    fn width(&self) -> usize;
}

/// A host matrix has the same shape checks as a backend's (an upload's
/// argument is validated like the matrix it becomes).
impl DeviceMatrix for ColMatrix {
    fn height(&self) -> usize {
        ColMatrix::height(self)
    }
    fn width(&self) -> usize {
        ColMatrix::width(self)
    }
}

/// A Merkle tree held by a backend.
pub trait DeviceTree: Send + Sync {
    /// The root on the host. A device backend may still be computing it
    /// when the tree is returned; this waits for it.
    fn root(&self) -> Digest;
    /// Number of leaves (a power of two).
    fn leaves(&self) -> usize;
    fn hash(&self) -> HashKind;
}

/// One opened Merkle leaf: the row's values and the authentication path.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct RowOpening {
    pub values: Vec<F>,
    pub path: Vec<Digest>,
}

/// The inputs of constraint composition for one table.
pub struct ComposeInputs<'a, M> {
    pub constraints: &'a ConstraintSystem,
    /// Fixed columns on the LDE coset; `None` when the AIR has none.
    pub fixed: Option<&'a M>,
    /// Main trace on the LDE coset (height n << log_blowup).
    pub main: &'a M,
    /// Auxiliary trace on the same coset, flattened (3 base columns per
    /// extension column); `None` when the AIR has no auxiliary columns.
    pub aux: Option<&'a M>,
    pub log_trace_height: u32,
    /// The LDE coset the matrices are evaluated on.
    pub domain: Coset,
    pub challenges: &'a [Ext],
    pub publics: &'a [F],
    pub aux_values: &'a [Ext],
    /// Constraint k is weighted by alpha^k.
    pub alpha: Ext,
    /// The next rows, given apart: `None` when the matrices hold the whole
    /// LDE coset (a row's successor is B rows on, cyclically). `Some` when
    /// `domain` is a piece of a coset of the trace's size, so that a row's
    /// successor lies in another piece: row i of these matrices holds the
    /// trace polynomials at `domain.point(i) * w_n` (w_n generates the
    /// trace domain). Constraints then read offsets 0 and 1 only.
    pub next: Option<NextRows<&'a M>>,
    /// The matrices (and next rows) hold 2^log_stride rows per point of
    /// `domain`: point i is row i << log_stride. A quotient domain read off
    /// a larger LDE in place; 0 when they hold `domain` exactly.
    pub log_stride: u32,
}

/// The trace's next rows on a piece of a coset (see [`ComposeInputs::next`]).
#[derive(Clone, Copy, Debug)]
pub struct NextRows<M> {
    pub fixed: Option<M>,
    pub main: M,
    pub aux: Option<M>,
}

impl<M> NextRows<M> {
    pub fn as_ref(&self) -> NextRows<&M> {
        NextRows { fixed: self.fixed.as_ref(), main: &self.main, aux: self.aux.as_ref() }
    }

    pub fn map<N>(self, mut f: impl FnMut(M) -> N) -> NextRows<N> {
        NextRows { fixed: self.fixed.map(&mut f), main: f(self.main), aux: self.aux.map(&mut f) }
    }

    pub fn try_map<N, E>(
        self,
        mut f: impl FnMut(M) -> std::result::Result<N, E>,
    ) -> std::result::Result<NextRows<N>, E> {
        Ok(NextRows {
            fixed: self.fixed.map(&mut f).transpose()?,
            main: f(self.main)?,
            aux: self.aux.map(&mut f).transpose()?,
        })
    }

    /// The matrices, fixed first.
    pub fn matrices(&self) -> impl Iterator<Item = &M> {
        self.fixed.iter().chain([&self.main]).chain(&self.aux)
    }
}

impl<'a, M> ComposeInputs<'a, M> {
    /// The same inputs over other matrices: a wrapping backend passes its
    /// inner backend's matrices on with this.
    pub fn map<'b, N>(&self, f: impl Fn(&'a M) -> &'b N) -> ComposeInputs<'b, N>
    where
        'a: 'b,
    {
        ComposeInputs {
            constraints: self.constraints,
            fixed: self.fixed.map(&f),
            main: f(self.main),
            aux: self.aux.map(&f),
            log_trace_height: self.log_trace_height,
            domain: self.domain,
            challenges: self.challenges,
            publics: self.publics,
            aux_values: self.aux_values,
            alpha: self.alpha,
            next: self.next.map(|n| n.map(&f)),
            log_stride: self.log_stride,
        }
    }
}

/// The columns of one committed matrix opened at one DEEP point.
pub struct DeepColumns<'a, M> {
    pub matrix: &'a M,
    /// One coefficient per base column of `matrix`.
    pub coeffs: Vec<Ext>,
    /// The claimed value of each base column's polynomial at the point.
    pub values: Vec<Ext>,
}

/// All columns opened at one point z.
pub struct DeepPoint<'a, M> {
    pub point: Ext,
    pub columns: Vec<DeepColumns<'a, M>>,
}

impl<'a, M> DeepPoint<'a, M> {
    /// The same point over other matrices (see [`ComposeInputs::map`]).
    pub fn map<'b, N>(&self, f: impl Fn(&'a M) -> &'b N) -> DeepPoint<'b, N>
    where
        'a: 'b,
    {
        DeepPoint {
            point: self.point,
            columns: self
                .columns
                .iter()
                .map(|c| DeepColumns { matrix: f(c.matrix), coeffs: c.coeffs.clone(), values: c.values.clone() })
                .collect(),
        }
    }
}

/// Naming, transfers and buffer views.
pub trait BackendBase: Send + Sync {
    type Matrix: DeviceMatrix;
    type Tree: DeviceTree;

    /// A short name: "cpu", "cuda", ...
    fn name(&self) -> &str;

    fn upload(&self, ctx: &Ctx, m: &ColMatrix) -> Result<Self::Matrix>;
    fn download(&self, ctx: &Ctx, m: &Self::Matrix) -> Result<ColMatrix>;

    /// The same column-major buffer seen with `height` rows: an (N x w)
    /// matrix becomes (N/a x a*w), column c*a + j holding rows
    /// [j*N/a, (j+1)*N/a) of column c. FRI layer leaves are rows of it.
    fn reshape(&self, ctx: &Ctx, m: &Self::Matrix, height: usize) -> Result<Self::Matrix>;

    /// Rows `first`, `first + 2^log_stride`, ... of `m` (a power-of-two
    /// height), wrapping past the last row: row k of the result is row
    /// (first + k * 2^log_stride) mod height. A piece of an LDE's coset,
    /// or (first past the last piece) its next rows. By default through
    /// the host.
    fn stride_rows(&self, ctx: &Ctx, m: &Self::Matrix, first: usize, log_stride: u32) -> Result<Self::Matrix> {
        crate::validate::stride_rows(m, log_stride)?;
        self.upload(ctx, &self.download(ctx, m)?.stride_rows(first, log_stride))
    }

    /// The inverse of `stride_rows` over every offset: row j + P*k of the
    /// result is row k of `pieces[j]` (P pieces of one shape, P a power of
    /// two). By default through the host.
    fn interleave(&self, ctx: &Ctx, pieces: &[&Self::Matrix]) -> Result<Self::Matrix> {
        crate::validate::interleave(pieces)?;
        let host = pieces.iter().map(|p| self.download(ctx, p)).collect::<Result<Vec<_>>>()?;
        self.upload(ctx, &ColMatrix::interleave(&host))
    }

    /// Settles the device after a decline so a retry can succeed: waits for
    /// in-flight work and returns cached memory. Host backends have nothing
    /// to drain.
    fn drain(&self) -> Result<()> {
        Ok(())
    }

    /// Holds device memory for one proof until the reservation is dropped
    /// (`ctx` names the proof's tables in a decline): `set` gives its
    /// tables' shapes (the memory model's resident and
    /// transient bytes), `lanes` the lanes its work runs on (device buffers
    /// made on them are charged to the reservation, and keep it held until
    /// they are freed). A backend with a memory gate waits here for room,
    /// heaviest request first; a request larger than its whole budget waits
    /// for the device to be idle and runs alone. Host backends hold nothing.
    fn reserve(&self, ctx: &Ctx, lanes: &[Lane], set: &DeviceSet) -> Result<Reservation> {
        let _ = (ctx, lanes, set);
        Ok(Reservation::none())
    }

    /// Page-locks `m`'s host buffer until the returned pin is dropped, so
    /// that uploads of `m` and of its clones (which share the buffer) go
    /// straight to the copy engine. For a buffer uploaded more than once
    /// (a trace reused across proofs, a benchmark): pinning costs about one
    /// upload. A refusal is a typed decline and changes nothing: `m` still
    /// uploads. Host backends, and devices that gain nothing, pin nothing.
    fn pin(&self, ctx: &Ctx, m: &ColMatrix) -> Result<HostPin> {
        let _ = (ctx, m);
        Ok(HostPin::none())
    }
}

/// Number-theoretic transforms over two-adic subgroups (natural order).
pub trait NttOps: BackendBase {
    /// Coefficients to evaluations on the subgroup of size `height`, per column.
    fn ntt(&self, ctx: &Ctx, coeffs: &Self::Matrix) -> Result<Self::Matrix>;
    /// Evaluations on the subgroup to coefficients, per column.
    fn intt(&self, ctx: &Ctx, evals: &Self::Matrix) -> Result<Self::Matrix>;
    /// `intt` of a matrix whose values the caller gives up: the backend
    /// may write the coefficients over them and return a matrix sharing
    /// its memory (one matrix on the device at the peak, not two). Read
    /// afterwards, `evals` holds either. A backend that transforms in
    /// place declines only before its first write; a failure after it is
    /// a `Device` error, never a decline to recover from with lost
    /// values. By default, `intt`.
    fn intt_in_place(&self, ctx: &Ctx, evals: &Self::Matrix) -> Result<Self::Matrix> {
        self.intt(ctx, evals)
    }
    /// Evaluations on the subgroup of size n to evaluations on
    /// `shift * H_(n << log_blowup)`.
    fn coset_lde(&self, ctx: &Ctx, evals: &Self::Matrix, log_blowup: u32, shift: F) -> Result<Self::Matrix>;
    /// `upload` of host evaluations and `coset_lde` of them in one call:
    /// the matrix uploaded and its extension. A device backend may overlap
    /// the transfer with the transform (extending blocks of columns as
    /// they land). By default, one after the other.
    fn upload_coset_lde(
        &self,
        ctx: &Ctx,
        evals: &ColMatrix,
        log_blowup: u32,
        shift: F,
    ) -> Result<(Self::Matrix, Self::Matrix)> {
        crate::validate::coset_lde(evals, log_blowup, shift)?;
        let m = self.upload(ctx, evals)?;
        let lde = self.coset_lde(ctx, &m, log_blowup, shift)?;
        Ok((m, lde))
    }
    /// Coefficients (natural order, n per column) to evaluations on
    /// `shift * H_(n << log_blowup)`: the second half of `coset_lde`, for
    /// a caller that keeps the coefficients and evaluates them many times.
    fn coset_ntt(&self, ctx: &Ctx, coeffs: &Self::Matrix, log_blowup: u32, shift: F) -> Result<Self::Matrix>;
    /// Coefficients (natural order, n per column) to the remainder of each
    /// column's polynomial modulo `X^m - c`, m = n >> log_fold: row k is
    /// sum over r of `coeffs[k + r*m] * c^r`. On a coset `s * H_m` with
    /// `s^m = c` the remainder takes the polynomial's values, so
    /// `coset_ntt` of it (blowup 1, shift s) evaluates the polynomial on a
    /// coset smaller than its degree: a piece of a coset, built alone.
    fn fold_coeffs(&self, ctx: &Ctx, coeffs: &Self::Matrix, log_fold: u32, c: F) -> Result<Self::Matrix>;
    /// Rows `positions` of `coset_ntt(coeffs, 0, shift)`, as `rows` reads
    /// them: each column's polynomial at shift * w^p (w generates H_n) for
    /// each p. The queried rows of an LDE that is rebuilt, not kept; a
    /// backend may evaluate them without building the whole coset.
    fn coset_rows(&self, ctx: &Ctx, coeffs: &Self::Matrix, shift: F, positions: &[usize]) -> Result<Vec<Vec<F>>>;
}

/// Merkle trees whose leaves are matrix rows (on top of the transforms:
/// `upload_commit` extends a host matrix and commits the extension).
pub trait MerkleOps: NttOps {
    fn commit(&self, ctx: &Ctx, m: &Self::Matrix, hash: HashKind) -> Result<Self::Tree>;
    /// `upload_coset_lde` and the `commit` of the extension in one call:
    /// the matrix uploaded, its extension and the extension's tree. A
    /// device backend may hash the leaves while later columns are still in
    /// transfer (a row's leaf absorbs its columns in order, a block of
    /// them at a time). By default, one after the other.
    fn upload_commit(
        &self,
        ctx: &Ctx,
        evals: &ColMatrix,
        log_blowup: u32,
        shift: F,
        hash: HashKind,
    ) -> Result<(Self::Matrix, Self::Matrix, Self::Tree)> {
        crate::validate::upload_commit(evals, log_blowup, shift)?;
        let (m, lde) = self.upload_coset_lde(ctx, evals, log_blowup, shift)?;
        let tree = self.commit(ctx, &lde, hash)?;
        Ok((m, lde, tree))
    }
    /// Opens `rows` of `m` (committed as `tree`), in the order given.
    fn open(&self, ctx: &Ctx, m: &Self::Matrix, tree: &Self::Tree, rows: &[usize]) -> Result<Vec<RowOpening>>;
    /// The leaf digest of every row of `m`, on the host: the first level
    /// `commit` would build. A prover that makes a matrix a piece at a
    /// time (the cosets of a recomputed LDE) builds its tree from them.
    fn leaf_digests(&self, ctx: &Ctx, m: &Self::Matrix, hash: HashKind) -> Result<Vec<Digest>>;
    /// The values of `rows` of `m`, in the order given: an opening's
    /// values without its path.
    fn rows(&self, ctx: &Ctx, m: &Self::Matrix, rows: &[usize]) -> Result<Vec<Vec<F>>>;
}

/// Constraint composition.
pub trait ComposeOps: BackendBase {
    /// Sum over constraints k of alpha^k * C_k(x) / Z_k(x) at every point
    /// of the LDE coset, as one flattened extension column (N x 3).
    fn compose(&self, ctx: &Ctx, inputs: &ComposeInputs<Self::Matrix>) -> Result<Self::Matrix>;

    /// Splits the quotient (N x 3, on `domain`) into `parts` polynomials
    /// of degree < n = 2^log_trace_height: part j holds coefficients
    /// [j*n, (j+1)*n). Returns their evaluations on the coset of
    /// `domain`'s shift with 2^log_out >= N points (the LDE the parts are
    /// committed on), flattened (2^log_out x 3*parts). Fails with
    /// `ConstraintsNotSatisfied` when a coefficient at or past parts*n is
    /// non-zero (N > parts*n; at N = parts*n every N values interpolate).
    fn split_quotient(
        &self,
        ctx: &Ctx,
        quotient: &Self::Matrix,
        domain: Coset,
        log_trace_height: u32,
        parts: usize,
        log_out: u32,
    ) -> Result<Self::Matrix>;
}

/// Out-of-domain evaluation and DEEP quotients.
pub trait DeepOps: BackendBase {
    /// The polynomial of each column of `m` (evaluated on `domain`) at each
    /// point: `result[p][c]`. `m` holds 2^log_stride rows per point of the
    /// domain: point i is row i << log_stride (a committed LDE read on the
    /// coset of the trace's size that determines its polynomials, in place).
    fn evaluate_at(
        &self,
        ctx: &Ctx,
        m: &Self::Matrix,
        domain: Coset,
        log_stride: u32,
        points: &[Ext],
    ) -> Result<Vec<Vec<Ext>>>;

    /// The polynomial whose natural-order coefficients are each column of
    /// `coeffs` at each point: `result[p][c]`, as `evaluate_at` of the
    /// column's `ntt` on H_n gives it. A recomputed table's values at z,
    /// with no trace rebuilt; a backend may transform and call
    /// `evaluate_at`.
    fn evaluate_coeffs(&self, ctx: &Ctx, coeffs: &Self::Matrix, points: &[Ext]) -> Result<Vec<Vec<Ext>>>;

    /// sum over points p of (sum_c coeff_c * (f_c(x) - value_c)) / (x - z_p)
    /// at every x of `domain`, as one flattened extension column (N x 3).
    fn deep_quotient(&self, ctx: &Ctx, domain: Coset, points: &[DeepPoint<Self::Matrix>]) -> Result<Self::Matrix>;

    /// sum_c weights_c * m_c at every row, as one flattened extension
    /// column (height x 3). It commutes with every base-linear map of the
    /// columns, so a caller holding coefficients combines them first and
    /// transforms 3 columns, not all of them (a DEEP quotient of
    /// recomputed columns).
    fn combine_columns(&self, ctx: &Ctx, m: &Self::Matrix, weights: &[Ext]) -> Result<Self::Matrix>;
}

/// FRI folding and proof-of-work grinding.
pub trait FriOps: BackendBase {
    /// Folds an extension column on `domain` (N x 3) by 2^log_arity with
    /// challenge beta: f'(x^a) = sum_r beta^r f_r(x^a) where
    /// f(x) = sum_r x^r f_r(x^a). When `roll_in` is (g, s), adds s * g(y)
    /// to the folded value at each point y (g is N/a x 3).
    fn fri_fold(
        &self,
        ctx: &Ctx,
        layer: &Self::Matrix,
        domain: Coset,
        log_arity: u32,
        beta: Ext,
        roll_in: Option<(&Self::Matrix, Ext)>,
    ) -> Result<Self::Matrix>;

    /// The smallest nonce whose proof of work over `seed` has `bits`
    /// leading zeros (see [`crate::hash::pow_ok`]).
    fn grind(&self, ctx: &Ctx, hash: HashKind, seed: &Digest, bits: u32) -> Result<u64>;
}

/// The inputs of a LogUp auxiliary-trace build for one table.
pub struct LogUpInputs<'a, M> {
    pub logup: &'a LogUp,
    /// Main trace on the trace domain (n rows).
    pub main: &'a M,
    /// Fixed columns on the trace domain; `None` when the table has none.
    pub fixed: Option<&'a M>,
    pub z: Ext,
    pub alpha: Ext,
}

impl<'a, M> LogUpInputs<'a, M> {
    /// The same inputs over other matrices (see [`ComposeInputs::map`]).
    pub fn map<'b, N>(&self, f: impl Fn(&'a M) -> &'b N) -> LogUpInputs<'b, N>
    where
        'a: 'b,
    {
        LogUpInputs { logup: self.logup, main: f(self.main), fixed: self.fixed.map(&f), z: self.z, alpha: self.alpha }
    }
}

/// LogUp auxiliary traces, built where the main trace lives.
pub trait LogUpOps: BackendBase {
    /// The auxiliary trace [`LogUp`] defines over `main` and `fixed`,
    /// flattened (3 base columns per extension column, n rows), and its
    /// final sum.
    fn logup_aux(&self, ctx: &Ctx, inputs: &LogUpInputs<Self::Matrix>) -> Result<(Self::Matrix, Ext)>;
}

/// Everything the prover needs from a backend.
pub trait Backend: NttOps + MerkleOps + ComposeOps + DeepOps + FriOps + LogUpOps {}

impl<T: NttOps + MerkleOps + ComposeOps + DeepOps + FriOps + LogUpOps> Backend for T {}
