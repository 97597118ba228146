//! The reference Kiln backend: plain Rust and rayon on the host.
//!
//! It owns the definition of correct bytes for every stage of the
//! `backend_api::Backend` contract (NTTs, coset LDE, Merkle commitments and
//! openings, LogUp auxiliary traces, constraint composition, quotient
//! splitting, out-of-domain
//! evaluation, DEEP quotients, FRI folding and grinding): other backends are
//! tested against it byte for byte. It is also the production fallback, so
//! every stage is parallel and works in cache-sized chunks.
//!
//! Beside the reference it owns the two generic wrappers built on it, each
//! one hook over `backend_api::Op`: [`Resilient`] (device-decline recovery
//! for any backend: drain, retry, recompute here) and [`CrossCheck`] (two
//! backends in lockstep, naming the first differing stage, table, column
//! and row).
//!
//! Large host buffers are allocated fallibly: running out of host memory
//! is `BackendError::HostAlloc` naming the stage, table and bytes.
//!
//! Matrices are column-major host buffers shared through an `Arc`, so
//! `reshape` is a free reinterpretation. Every operation validates its
//! inputs through `backend_api::validate` (plus domain checks the shared
//! validators cannot make without panicking) and never panics on bad input.

#[cfg(target_arch = "x86_64")]
mod blake3x16;
mod compose;
pub mod cross_check;
mod deep;
mod fri;
#[cfg(target_arch = "x86_64")]
mod keccakx8;
mod logup;
mod merkle;
mod ntt;
pub mod resilient;
mod simd;

use backend_api::{
    validate, BackendBase, BackendError, ColMatrix, ComposeInputs, ComposeOps, Coset, Ctx, DeepOps, DeepPoint,
    DeviceMatrix, Digest, Ext, FriOps, HashKind, LogUpInputs, LogUpOps, MerkleOps, NttOps, Result, RowOpening, Stage,
    F,
};
use rayon::prelude::*;
use std::sync::Arc;

pub use cross_check::CrossCheck;
pub use merkle::CpuTree;
pub use resilient::{OnDecline, RecoveryPolicy, RecoveryReport, Resilient};

pub use backend_api::host::{try_zeroed, AllocFailed};

/// [`try_zeroed`] for code whose signature has no error to return (the
/// composition kernel): a failure unwinds with the [`AllocFailed`] as
/// payload (`resume_unwind` runs no panic hook, so nothing is printed),
/// and [`catch_alloc`] at the op boundary turns it into the typed error.
pub(crate) fn zeroed(len: usize) -> Vec<F> {
    try_zeroed(len).unwrap_or_else(|e| std::panic::resume_unwind(Box::new(e)))
}

/// Runs `f`, turning an unwound [`AllocFailed`] into `HostAlloc`; any
/// other panic continues.
fn catch_alloc<T>(stage: Stage, ctx: &Ctx, f: impl FnOnce() -> Result<T>) -> Result<T> {
    match std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)) {
        Ok(r) => r,
        Err(payload) => match payload.downcast::<AllocFailed>() {
            Ok(e) => Err(e.at(stage, ctx)),
            Err(other) => std::panic::resume_unwind(other),
        },
    }
}

/// A column-major matrix in host memory: column j is
/// `data[j * height..(j + 1) * height]`. Clones share the buffer.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CpuMatrix {
    width: usize,
    height: usize,
    data: Arc<Vec<F>>,
}

impl CpuMatrix {
    /// `data` holds `width` columns of `height` elements each.
    pub fn new(width: usize, height: usize, data: Vec<F>) -> Result<CpuMatrix> {
        if width.checked_mul(height) != Some(data.len()) {
            return Err(BackendError::invalid(
                Stage::Upload,
                format!("{} elements do not form a {height}x{width} matrix", data.len()),
            ));
        }
        Ok(CpuMatrix { width, height, data: Arc::new(data) })
    }

    /// Shares the host matrix's buffer: no copy.
    pub fn from_host(m: &ColMatrix) -> CpuMatrix {
        CpuMatrix { width: m.width(), height: m.height(), data: m.shared_data().clone() }
    }

    /// Shares the buffer with the host matrix: no copy.
    pub fn to_host(&self) -> ColMatrix {
        ColMatrix::from_shared(self.width, self.height, self.data.clone())
    }

    pub fn data(&self) -> &[F] {
        &self.data
    }

    pub fn column(&self, j: usize) -> &[F] {
        &self.data[j * self.height..(j + 1) * self.height]
    }

    pub fn get(&self, row: usize, col: usize) -> F {
        self.data[col * self.height + row]
    }

    pub fn row(&self, row: usize) -> Vec<F> {
        (0..self.width).map(|c| self.get(row, c)).collect()
    }

    /// The extension element of flattened columns 3k..3k+3 at `row`.
    pub fn get_ext(&self, row: usize, k: usize) -> Ext {
        Ext([self.get(row, 3 * k), self.get(row, 3 * k + 1), self.get(row, 3 * k + 2)])
    }

    fn from_data(width: usize, height: usize, data: Vec<F>) -> CpuMatrix {
        debug_assert_eq!(data.len(), width * height);
        CpuMatrix { width, height, data: Arc::new(data) }
    }
}

impl DeviceMatrix for CpuMatrix {
    fn height(&self) -> usize {
        self.height
    }
    fn width(&self) -> usize {
        self.width
    }
}

/// The reference backend. Holds only caches (twiddle tables), so one
/// instance may be shared by every thread and every proof.
#[derive(Default)]
pub struct CpuBackend {
    twiddles: ntt::Twiddles,
}

impl CpuBackend {
    pub fn new() -> CpuBackend {
        CpuBackend::default()
    }
}

impl BackendBase for CpuBackend {
    type Matrix = CpuMatrix;
    type Tree = CpuTree;

    fn name(&self) -> &str {
        "cpu"
    }

    fn upload(&self, _ctx: &Ctx, m: &ColMatrix) -> Result<CpuMatrix> {
        Ok(CpuMatrix::from_host(m))
    }

    fn download(&self, _ctx: &Ctx, m: &CpuMatrix) -> Result<ColMatrix> {
        Ok(m.to_host())
    }

    fn reshape(&self, _ctx: &Ctx, m: &CpuMatrix, height: usize) -> Result<CpuMatrix> {
        validate::reshape(m, height)?;
        Ok(CpuMatrix { width: m.width * (m.height / height), height, data: m.data.clone() })
    }
}

impl NttOps for CpuBackend {
    fn ntt(&self, ctx: &Ctx, coeffs: &CpuMatrix) -> Result<CpuMatrix> {
        validate::ntt(Stage::Ntt, coeffs)?;
        let tw = self.twiddles.get(false);
        let mut data = try_zeroed(coeffs.data.len()).map_err(|e| e.at(Stage::Ntt, ctx))?;
        let n = coeffs.height;
        data.par_chunks_mut(n).zip(coeffs.data.par_chunks(n)).for_each(|(dst, src)| ntt::ntt_column(dst, src, &tw));
        Ok(CpuMatrix::from_data(coeffs.width, coeffs.height, data))
    }

    fn intt(&self, ctx: &Ctx, evals: &CpuMatrix) -> Result<CpuMatrix> {
        validate::ntt(Stage::InverseNtt, evals)?;
        let tw = self.twiddles.get(true);
        let mut data = try_zeroed(evals.data.len()).map_err(|e| e.at(Stage::InverseNtt, ctx))?;
        let n = evals.height;
        data.par_chunks_mut(n).zip(evals.data.par_chunks(n)).for_each(|(dst, src)| ntt::intt_column(dst, src, &tw));
        Ok(CpuMatrix::from_data(evals.width, evals.height, data))
    }

    fn coset_lde(&self, ctx: &Ctx, evals: &CpuMatrix, log_blowup: u32, shift: F) -> Result<CpuMatrix> {
        let log_n = validate::coset_lde(evals, log_blowup, shift)?;
        let n = evals.height;
        let big = n << log_blowup;
        let tw_inv = self.twiddles.get(true);
        let tw_fwd = self.twiddles.get(false);
        let scale = ntt::bitrev_powers(shift, ntt::inv_pow2(log_n), n);
        let mut out = try_zeroed(big * evals.width).map_err(|e| e.at(Stage::CosetLde, ctx))?;
        out.par_chunks_mut(big.max(1))
            .zip(evals.data.par_chunks(n))
            .for_each(|(dst, src)| ntt::lde_column(dst, src, &scale, &tw_inv, &tw_fwd));
        Ok(CpuMatrix::from_data(evals.width, big, out))
    }

    fn coset_ntt(&self, ctx: &Ctx, coeffs: &CpuMatrix, log_blowup: u32, shift: F) -> Result<CpuMatrix> {
        validate::coset_lde(coeffs, log_blowup, shift)?;
        let n = coeffs.height;
        let big = n << log_blowup;
        let tw_fwd = self.twiddles.get(false);
        let scale = (shift != F::ONE).then(|| ntt::bitrev_powers(shift, F::ONE, n));
        let mut out = try_zeroed(big * coeffs.width).map_err(|e| e.at(Stage::CosetLde, ctx))?;
        out.par_chunks_mut(big.max(1))
            .zip(coeffs.data.par_chunks(n))
            .for_each(|(dst, src)| ntt::coset_column(dst, src, scale.as_deref(), &tw_fwd));
        Ok(CpuMatrix::from_data(coeffs.width, big, out))
    }

    fn fold_coeffs(&self, ctx: &Ctx, coeffs: &CpuMatrix, log_fold: u32, c: F) -> Result<CpuMatrix> {
        validate::fold_coeffs(coeffs, log_fold)?;
        let (n, m) = (coeffs.height, coeffs.height >> log_fold);
        let mut out = try_zeroed(m * coeffs.width).map_err(|e| e.at(Stage::CosetLde, ctx))?;
        out.par_chunks_mut(m.max(1)).zip(coeffs.data.par_chunks(n)).for_each(|(dst, src)| {
            // Horner in c over the 2^log_fold slices, last slice first.
            let mut slices = src.chunks(m).rev();
            dst.copy_from_slice(slices.next().expect("n >= m > 0"));
            for slice in slices {
                dst.iter_mut().zip(slice).for_each(|(d, &x)| *d = *d * c + x);
            }
        });
        Ok(CpuMatrix::from_data(coeffs.width, m, out))
    }

    fn coset_rows(&self, ctx: &Ctx, coeffs: &CpuMatrix, shift: F, positions: &[usize]) -> Result<Vec<Vec<F>>> {
        validate::coset_rows(coeffs, shift, positions)?;
        let n = coeffs.height;
        let Some(log_c) = ntt::coset_rows_split(n.trailing_zeros(), positions.len()) else {
            return self.rows(ctx, &self.coset_ntt(ctx, coeffs, 0, shift)?, positions);
        };
        let columns: Vec<Vec<F>> = (0..coeffs.width)
            .into_par_iter()
            .map_init(
                || vec![F::ZERO; n],
                |scratch, c| ntt::coset_rows_column(coeffs.column(c), shift, positions, log_c, scratch),
            )
            .collect();
        Ok((0..positions.len()).map(|i| columns.iter().map(|col| col[i]).collect()).collect())
    }
}

impl MerkleOps for CpuBackend {
    fn commit(&self, ctx: &Ctx, m: &CpuMatrix, hash: HashKind) -> Result<CpuTree> {
        validate::commit(m)?;
        merkle::commit(m, hash).map_err(|e| e.at(Stage::MerkleCommit, ctx))
    }

    fn open(&self, _ctx: &Ctx, m: &CpuMatrix, tree: &CpuTree, rows: &[usize]) -> Result<Vec<RowOpening>> {
        validate::open(m, tree, rows)?;
        Ok(merkle::open(m, tree, rows))
    }

    fn leaf_digests(&self, ctx: &Ctx, m: &CpuMatrix, hash: HashKind) -> Result<Vec<Digest>> {
        validate::leaf_digests(m)?;
        merkle::leaves(m, hash).map_err(|e| e.at(Stage::MerkleCommit, ctx))
    }

    fn rows(&self, _ctx: &Ctx, m: &CpuMatrix, rows: &[usize]) -> Result<Vec<Vec<F>>> {
        validate::rows(m, rows)?;
        Ok(rows.iter().map(|&r| m.row(r)).collect())
    }
}

impl LogUpOps for CpuBackend {
    fn logup_aux(&self, ctx: &Ctx, inputs: &LogUpInputs<CpuMatrix>) -> Result<(CpuMatrix, Ext)> {
        validate::logup_aux(inputs)?;
        logup::logup_aux(inputs).map_err(|e| e.at(Stage::LogUp, ctx))
    }
}

impl ComposeOps for CpuBackend {
    fn compose(&self, ctx: &Ctx, inputs: &ComposeInputs<CpuMatrix>) -> Result<CpuMatrix> {
        validate::compose(inputs)?;
        catch_alloc(Stage::Compose, ctx, || compose::compose(inputs))
    }

    fn split_quotient(
        &self,
        ctx: &Ctx,
        quotient: &CpuMatrix,
        domain: Coset,
        log_trace_height: u32,
        parts: usize,
        log_out: u32,
    ) -> Result<CpuMatrix> {
        validate::split_quotient(quotient, domain, log_trace_height, parts, log_out)?;
        let (big, n, out_rows) = (domain.size(), 1usize << log_trace_height, 1usize << log_out);
        let (log_b, b) = (domain.log_size - log_trace_height, big / n);
        let failed = |e: AllocFailed| e.at(Stage::QuotientSplit, ctx);
        // DIF with the inverse table on the evaluations (out of place):
        // coefficient k of q, times N shift^k, at position
        // bitrev(k). For k = j n + m that is bitrev(m) b + bitrev_b(j), so
        // part j is every b-th value from bitrev_b(j), already in the
        // bit-reversed order its LDE takes: no permutation pass, and the
        // 1/N shift^-k and the part's own shift^m leave one constant a part.
        let mut raw: Vec<F> = try_zeroed(quotient.data.len()).map_err(failed)?;
        let tw_inv = self.twiddles.get(true);
        raw.par_chunks_mut(big)
            .zip(quotient.data.par_chunks(big))
            .for_each(|(c, src)| ntt::dif(c, Some(src), &tw_inv, big >= ntt::PAR_MIN));
        let lane = |j: usize| ntt::bitrev(j, log_b);
        let past_bound: Vec<bool> = (0..b).map(|r| lane(r) >= parts).collect();
        // With as many parts as b every coefficient belongs to one: no scan.
        let too_high = parts < b
            && raw.par_chunks(b).any(|row| row.iter().zip(&past_bound).any(|(v, &past)| past && !v.is_zero()));
        if too_high {
            return Err(BackendError::ConstraintsNotSatisfied { table: ctx.table.into(), bound: parts * n });
        }
        let s_inv_n = domain.shift.inverse().unwrap_or(F::ONE).pow(n as u64);
        let factor = |j: usize| ntt::inv_pow2(domain.log_size) * s_inv_n.pow(j as u64);
        let tw_fwd = self.twiddles.get(false);
        let mut out = try_zeroed(out_rows * 3 * parts).map_err(failed)?;
        out.par_chunks_mut(out_rows).enumerate().for_each(|(col, dst)| {
            let (part, coord) = (col / 3, col % 3);
            let src = raw[coord * big + lane(part)..(coord + 1) * big].iter().step_by(b);
            let k = factor(part);
            dst[..n].iter_mut().zip(src).for_each(|(d, &v)| *d = v * k);
            ntt::bitrev_coeffs_to_evals(dst, n, None, &tw_fwd);
        });
        Ok(CpuMatrix::from_data(3 * parts, out_rows, out))
    }
}

impl DeepOps for CpuBackend {
    fn evaluate_at(
        &self,
        _ctx: &Ctx,
        m: &CpuMatrix,
        domain: Coset,
        log_stride: u32,
        points: &[Ext],
    ) -> Result<Vec<Vec<Ext>>> {
        validate::evaluate_at(m, domain, log_stride)?;
        Ok(deep::evaluate_at(m, &domain, log_stride, points))
    }

    fn evaluate_coeffs(&self, _ctx: &Ctx, coeffs: &CpuMatrix, points: &[Ext]) -> Result<Vec<Vec<Ext>>> {
        validate::evaluate_coeffs(coeffs)?;
        Ok(deep::evaluate_coeffs(coeffs, points))
    }

    fn deep_quotient(&self, ctx: &Ctx, domain: Coset, points: &[DeepPoint<CpuMatrix>]) -> Result<CpuMatrix> {
        validate::deep(domain, points)?;
        deep::deep_quotient(&domain, points).map_err(|e| e.at(Stage::Deep, ctx))
    }

    fn combine_columns(&self, ctx: &Ctx, m: &CpuMatrix, weights: &[Ext]) -> Result<CpuMatrix> {
        validate::combine_columns(m, weights)?;
        deep::combine_columns(m, weights).map_err(|e| e.at(Stage::Deep, ctx))
    }
}

impl FriOps for CpuBackend {
    fn fri_fold(
        &self,
        ctx: &Ctx,
        layer: &CpuMatrix,
        domain: Coset,
        log_arity: u32,
        beta: Ext,
        roll_in: Option<(&CpuMatrix, Ext)>,
    ) -> Result<CpuMatrix> {
        validate::fri_fold(layer, domain, log_arity, roll_in.map(|r| r.0))?;
        fri::fold(layer, &domain, log_arity, beta, roll_in).map_err(|e| e.at(Stage::FriFold, ctx))
    }

    fn grind(&self, _ctx: &Ctx, hash: HashKind, seed: &Digest, bits: u32) -> Result<u64> {
        validate::grind(bits)?;
        fri::grind(hash, seed, bits)
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn zeroed_buffers_are_zero_and_writable_at_every_size() {
        // Below and above the huge-page advice threshold (4 MiB), with
        // lengths that end inside a page.
        for len in [0usize, 1, 511, 1 << 19, (1 << 19) + 3, 1 << 21] {
            let mut v: Vec<backend_api::F> = super::try_zeroed(len).unwrap();
            assert_eq!(v.len(), len);
            assert!(v.iter().all(|x| x.is_zero()));
            if let Some(last) = v.last_mut() {
                *last = backend_api::F::ONE;
            }
            v.push(backend_api::F::ONE);
            assert_eq!(v.iter().filter(|x| !x.is_zero()).count(), if len == 0 { 1 } else { 2 });
        }
    }

    #[test]
    fn an_allocation_past_memory_is_a_typed_error() {
        use backend_api::{BackendError, Ctx, Stage, F};
        // No machine has 2^61 bytes: the allocator refuses without touching memory.
        let e = super::try_zeroed::<F>(1 << 58).unwrap_err();
        assert_eq!(
            e.at(Stage::CosetLde, &Ctx::table("cpu")),
            BackendError::HostAlloc { stage: Stage::CosetLde, table: "cpu".into(), requested_bytes: 1 << 61 }
        );
        // The unwinding form is caught at the op boundary, not as a panic.
        let r: backend_api::Result<()> = super::catch_alloc(Stage::Compose, &Ctx::table("t"), || {
            let _ = super::zeroed(1 << 58);
            Ok(())
        });
        assert!(
            matches!(r, Err(BackendError::HostAlloc { stage: Stage::Compose, requested_bytes, .. }) if requested_bytes == 1 << 61)
        );
    }
}
