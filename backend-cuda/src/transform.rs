//! `NttOps`: forward and inverse NTTs and the coset LDE (pass planning
//! and launches in `ntt`).

use crate::ntt::{self, Load, Touches};
use crate::{CudaBackend, CudaMatrix};
use backend_api::{validate, Ctx, NttOps, Result, Stage, F};

impl CudaBackend {
    fn transform(&self, ctx: &Ctx, m: &CudaMatrix, inverse: bool) -> Result<CudaMatrix> {
        let stage = if inverse { Stage::InverseNtt } else { Stage::Ntt };
        let log_n = validate::ntt(stage, m)?;
        let _permit = self.admit(stage, ctx, Self::dims(log_n, 0, m.width))?;
        let mut s = self.scope(stage, ctx)?;
        let tw = self.twiddles(&mut s, log_n)?;
        let (h, w) = (m.height, m.width);
        let out = s.alloc(h * w)?;
        ntt::natural(&mut s, &tw, inverse, log_n, w, &m.buf, h as u64, &out, h as u64)?;
        Ok(Self::matrix(out, h, w))
    }
}

impl NttOps for CudaBackend {
    fn ntt(&self, ctx: &Ctx, coeffs: &CudaMatrix) -> Result<CudaMatrix> {
        self.transform(ctx, coeffs, false)
    }

    fn intt(&self, ctx: &Ctx, evals: &CudaMatrix) -> Result<CudaMatrix> {
        self.transform(ctx, evals, true)
    }

    fn coset_lde(&self, ctx: &Ctx, evals: &CudaMatrix, log_blowup: u32, shift: F) -> Result<CudaMatrix> {
        let stage = Stage::CosetLde;
        let log_n = validate::coset_lde(evals, log_blowup, shift)?;
        let _permit = self.admit(stage, ctx, Self::dims(log_n, log_blowup, evals.width))?;
        let mut s = self.scope(stage, ctx)?;
        let log_big = log_n + log_blowup;
        let tw = self.twiddles(&mut s, log_big)?;
        let (n, w) = (evals.height, evals.width);
        let big = n << log_blowup;
        // Inverse transform to bit-reversed coefficients (unscaled).
        let coeffs = if log_n > 0 {
            let tmp = s.alloc(n * w)?;
            let (src, dst) = (evals.buf.ptr, tmp.ptr);
            let load = Load::plain(src, n as u64);
            let touches = Touches(&[&evals.buf, &tmp]);
            ntt::run(&mut s, touches, &tw, true, true, log_n, 0, log_n, w, load, dst, n as u64, F::ONE)?;
            tmp
        } else {
            evals.buf.clone()
        };
        // Coefficient k is multiplied by shift^k / n: two small tables.
        let lo_bits = log_n.div_ceil(2);
        let n_inv = F::new(n as u64).inverse().expect("non-zero");
        let step = shift.pow(1u64 << lo_bits);
        let lo: Vec<u64> =
            backend_api::ext::powers(shift, 1 << lo_bits).into_iter().map(|p| (p * n_inv).value()).collect();
        let hi: Vec<u64> =
            backend_api::ext::powers(step, 1 << (log_n - lo_bits)).into_iter().map(|p| p.value()).collect();
        let lo_b = s.upload(&lo)?;
        let hi_b = s.upload(&hi)?;
        let out = s.alloc(big * w)?;
        let load = Load {
            ptr: coeffs.ptr,
            stride: n as u64,
            mode: if self.skip_zero_levels { 2 } else { 4 },
            log_src_n: log_n,
            log_blowup,
            twist_lo: lo_b.ptr,
            twist_hi: hi_b.ptr,
            twist_lo_bits: lo_bits,
            scale: F::ONE,
        };
        let from = if self.skip_zero_levels { log_blowup } else { 0 };
        let touches = Touches(&[&coeffs, &lo_b, &hi_b, &out]);
        ntt::run(&mut s, touches, &tw, false, false, log_big, from, log_big, w, load, out.ptr, big as u64, F::ONE)?;
        Ok(Self::matrix(out, big, w))
    }
}
