//! The plain transforms: forward and inverse NTTs, in place or not, and folding coefficients.

use super::{segments, Load, Run};
use crate::{words, WgpuBackend, WgpuMatrix};
use backend_api::{validate, Ctx, Result, Stage, F};

const BITREV: &str = include_str!("../shaders/bitrev.wgsl");
const FOLD_COEFFS: &str = include_str!("../shaders/fold_coeffs.wgsl");

impl WgpuBackend {
    pub(crate) fn transform(&self, ctx: &Ctx, m: &WgpuMatrix, inverse: bool) -> Result<WgpuMatrix> {
        let stage = if inverse { Stage::InverseNtt } else { Stage::Ntt };
        let log_n = validate::ntt(stage, m)?;
        let _permit = self.admit(stage, ctx, Self::dims(log_n, 0, m.width))?;
        let tw = self.twiddles(stage, ctx, log_n)?;
        let out = self.alloc_matrix(stage, ctx, m.height, m.width)?;
        let n = m.height as u64;
        let scale = inverse.then(|| F::new(n).inverse()).flatten();
        let mut job = self.dev.job(stage, ctx);
        for ((src, _, cols), (dst, _, _)) in m.pieces().zip(out.pieces()) {
            let r = Run {
                log_n,
                cols,
                load: Load::Gather { src, base: 0, stride: n },
                dst,
                dst_base: 0,
                inverse_roots: inverse,
                store_scale: scale,
            };
            self.record(&mut job, stage, ctx, &tw, &r)?;
        }
        job.submit()?;
        Ok(out)
    }

    /// `NttOps::intt_in_place`: each column permuted to bit-reversed order
    /// in place, then the inverse passes over it. Nothing is allocated but
    /// twiddles; a submission that fails after recording loses the values,
    /// so its decline becomes a `Device` error.
    pub(crate) fn transform_in_place(&self, ctx: &Ctx, m: &WgpuMatrix) -> Result<WgpuMatrix> {
        let stage = Stage::InverseNtt;
        let log_n = validate::ntt(stage, m)?;
        let tw = self.twiddles(stage, ctx, log_n)?;
        let k = self.dev.kernel(stage, ctx, "bitrev", &crate::shader::kernel(self.dev.int64, BITREV, 1), &[true])?;
        let n = m.height as u64;
        let scale = F::new(n).inverse();
        let mut job = self.dev.job(stage, ctx);
        for (buf, _, cols) in m.pieces() {
            let groups = crate::device::groups_for(n * cols as u64);
            job.dispatch(&k, &[buf], &[0, log_n, cols as u32, 0], groups)?;
            let r = Run {
                log_n,
                cols,
                load: Load::InPlace,
                dst: buf,
                dst_base: 0,
                inverse_roots: true,
                store_scale: scale,
            };
            self.record(&mut job, stage, ctx, &tw, &r)?;
        }
        job.submit().map_err(|e| e.input_lost(stage, ctx.table))?;
        Ok(m.clone())
    }

    /// `NttOps::fold_coeffs`: each column's polynomial modulo X^m - c.
    pub(crate) fn fold_columns(&self, ctx: &Ctx, coeffs: &WgpuMatrix, log_fold: u32, c: F) -> Result<WgpuMatrix> {
        let stage = Stage::CosetLde;
        validate::fold_coeffs(coeffs, log_fold)?;
        let (n, w) = (coeffs.height, coeffs.width);
        let (log_n, m) = (n.trailing_zeros(), n >> log_fold);
        let _permit = self.admit(stage, ctx, Self::dims(log_n, 0, w))?;
        let out = self.alloc_matrix(stage, ctx, m, w)?;
        let k = self.dev.kernel(
            stage,
            ctx,
            "fold_coeffs",
            &crate::shader::kernel(self.dev.int64, FOLD_COEFFS, 1),
            &[false, true],
        )?;
        let mut job = self.dev.job(stage, ctx);
        for (first, cols) in segments(&[coeffs, &out], 0, coeffs.width) {
            let ((src, src_base), (dst, dst_base)) = (coeffs.locate(first), out.locate(first));
            let mut pc = vec![src_base as u32, dst_base as u32, log_n, log_n - log_fold, cols as u32, 0];
            pc.extend(words(c.value()));
            job.dispatch(&k, &[src, dst], &pc, crate::device::groups_for((m * cols) as u64))?;
        }
        job.submit()?;
        Ok(out)
    }
}
