//! The coset LDE and the coset NTT: coefficients expanded onto a larger coset, times shift^k.

use super::{segments, Load, Run, Twiddles};
use crate::device::{DeviceBuffer, Job};
use crate::{invalid, WgpuBackend, WgpuMatrix};
use backend_api::{validate, ColMatrix, Ctx, Result, Stage, F};
use std::sync::Arc;

impl WgpuBackend {
    /// shift^k for k < 2^log_n as two tables (k's low and high bits), with
    /// the number of low bits.
    fn twist_tables(&self, stage: Stage, ctx: &Ctx, shift: F, log_n: u32) -> Result<(DeviceBuffer, u32)> {
        let lo_bits = log_n.div_ceil(2);
        let lo = backend_api::ext::powers(shift, 1 << lo_bits);
        let hi = backend_api::ext::powers(shift.pow(1u64 << lo_bits), 1 << (log_n - lo_bits));
        let v: Vec<u64> = lo.iter().chain(&hi).map(|p| p.value()).collect();
        Ok((self.dev.upload(stage, ctx, &v)?, lo_bits))
    }

    pub(crate) fn lde(&self, ctx: &Ctx, evals: &WgpuMatrix, log_blowup: u32, shift: F) -> Result<WgpuMatrix> {
        let stage = Stage::CosetLde;
        let log_n = validate::coset_lde(evals, log_blowup, shift)?;
        let _permit = self.admit(stage, ctx, Self::dims(log_n, log_blowup, evals.width))?;
        let mut lde = self.lde_plan(ctx, evals.height, evals.width, log_blowup, shift)?;
        let mut job = self.dev.job(stage, ctx);
        self.record_lde(&mut job, ctx, &mut lde, evals, 0, evals.width)?;
        job.submit()?;
        Ok(lde.out)
    }

    /// `NttOps::upload_coset_lde`: the trace goes up in runs of columns
    /// (at most `OVERLAP_RUN` bytes, a buffer each), each run's extension
    /// submitted with its transfer, so the host stages the next run while
    /// the device extends this one.
    pub(crate) fn upload_lde(
        &self,
        ctx: &Ctx,
        evals: &ColMatrix,
        log_blowup: u32,
        shift: F,
    ) -> Result<(WgpuMatrix, WgpuMatrix)> {
        let stage = Stage::CosetLde;
        let log_n = validate::coset_lde(evals, log_blowup, shift)?;
        let (n, w) = (evals.height(), evals.width());
        let _permit = self.admit(stage, ctx, Self::dims(log_n, log_blowup, w))?;
        let fit = self.columns_per_buffer(stage, ctx, n, w)?;
        let run = (OVERLAP_RUN / (8 * n)).clamp(1, fit);
        // Whole extension columns in a buffer, as everywhere.
        let run = if run >= 3 { run - run % 3 } else { run };
        let trace = self.alloc_matrix_in(stage, ctx, n, w, run, false)?;
        let mut lde = self.lde_plan(ctx, n, w, log_blowup, shift)?;
        let data: &[u64] = bytemuck::cast_slice(evals.data());
        for (buf, first, cols) in trace.pieces() {
            self.dev.write(Stage::Upload, ctx, buf, 0, &data[first * n..(first + cols) * n])?;
            let mut job = self.dev.job(stage, ctx);
            self.record_lde(&mut job, ctx, &mut lde, &trace, first, cols)?;
            job.submit()?;
        }
        Ok((trace, lde.out))
    }

    /// `NttOps::coset_ntt`: natural-order coefficients to a coset's
    /// evaluations.
    pub(crate) fn coset_evals(&self, ctx: &Ctx, coeffs: &WgpuMatrix, log_blowup: u32, shift: F) -> Result<WgpuMatrix> {
        let stage = Stage::CosetLde;
        let log_n = validate::coset_lde(coeffs, log_blowup, shift)?;
        let _permit = self.admit(stage, ctx, Self::dims(log_n, log_blowup, coeffs.width))?;
        let tw = self.twiddles(stage, ctx, log_n + log_blowup)?;
        let mut job = self.dev.job(stage, ctx);
        let out = self.expand(&mut job, ctx, &tw, coeffs, log_blowup, shift)?;
        job.submit()?;
        Ok(out)
    }

    /// Records the transform of natural-order coefficients (coefficient k
    /// times shift^k, zero-padded by 2^log_blowup) to evaluations.
    fn expand(
        &self,
        job: &mut Job,
        ctx: &Ctx,
        tw: &Twiddles,
        coeffs: &WgpuMatrix,
        log_blowup: u32,
        shift: F,
    ) -> Result<WgpuMatrix> {
        let stage = Stage::CosetLde;
        let (n, w) = (coeffs.height, coeffs.width);
        let log_n = n.trailing_zeros();
        let out = self.alloc_matrix(stage, ctx, n << log_blowup, w)?;
        let twist = self.twist_tables(stage, ctx, shift, log_n)?;
        for (first, cols) in segments(&[coeffs, &out], 0, w) {
            self.record_expand(job, ctx, tw, &twist, coeffs, &out, first, cols)?;
        }
        Ok(out)
    }

    /// Records `expand` of columns [first, first + cols), which lie in one
    /// buffer of `coeffs` and one of `out`.
    #[allow(clippy::too_many_arguments)]
    fn record_expand(
        &self,
        job: &mut Job,
        ctx: &Ctx,
        tw: &Twiddles,
        twist: &(DeviceBuffer, u32),
        coeffs: &WgpuMatrix,
        out: &WgpuMatrix,
        first: usize,
        cols: usize,
    ) -> Result<()> {
        let n = coeffs.height;
        let log_n = n.trailing_zeros();
        let (src, base) = coeffs.locate(first);
        let (dst, dst_base) = out.locate(first);
        let twist = Some((&*twist.0, twist.1));
        let r = Run {
            log_n: out.height.trailing_zeros(),
            cols,
            load: Load::Expand { src, base, stride: n as u64, log_src: log_n, scale: F::ONE, twist },
            dst,
            dst_base,
            inverse_roots: false,
            store_scale: None,
        };
        self.record(job, Stage::CosetLde, ctx, tw, &r)
    }

    /// What a coset LDE of a `n` x `w` matrix writes and reads besides
    /// its input: the coefficients, the output, the tables.
    fn lde_plan(&self, ctx: &Ctx, n: usize, w: usize, log_blowup: u32, shift: F) -> Result<LdePlan> {
        let stage = Stage::CosetLde;
        let log_n = n.trailing_zeros();
        Ok(LdePlan {
            tw: self.twiddles(stage, ctx, log_n + log_blowup)?,
            coeffs: self.alloc_matrix(stage, ctx, n, w)?,
            out: self.alloc_matrix(stage, ctx, n << log_blowup, w)?,
            twist: self.twist_tables(stage, ctx, shift, log_n)?,
            n_inv: F::new(n as u64).inverse().ok_or_else(|| invalid(stage, "empty trace"))?,
        })
    }

    /// Records the LDE of columns [first, first + cols) of `evals`:
    /// inverse transforms into the coefficients, then their expansion.
    fn record_lde(
        &self,
        job: &mut Job,
        ctx: &Ctx,
        p: &mut LdePlan,
        evals: &WgpuMatrix,
        first: usize,
        cols: usize,
    ) -> Result<()> {
        let stage = Stage::CosetLde;
        let n = evals.height;
        for (c, k) in segments(&[evals, &p.coeffs, &p.out], first, cols) {
            let ((src, base), (dst, dst_base)) = (evals.locate(c), p.coeffs.locate(c));
            let r = Run {
                log_n: n.trailing_zeros(),
                cols: k,
                load: Load::Gather { src, base, stride: n as u64 },
                dst,
                dst_base,
                inverse_roots: true,
                store_scale: Some(p.n_inv),
            };
            self.record(job, stage, ctx, &p.tw, &r)?;
            self.record_expand(job, ctx, &p.tw, &p.twist, &p.coeffs, &p.out, c, k)?;
        }
        Ok(())
    }
}

/// Most bytes of one run of `upload_lde` (the size of an upload's piece).
const OVERLAP_RUN: usize = 64 << 20;

/// An LDE's coefficients, output and tables (`WgpuBackend::lde_plan`).
struct LdePlan {
    tw: Arc<Twiddles>,
    coeffs: WgpuMatrix,
    out: WgpuMatrix,
    twist: (DeviceBuffer, u32),
    n_inv: F,
}
