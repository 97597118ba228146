//! `ComposeOps`: constraint composition (the generated or the interpreted
//! kernel, see `compose`) and the split of the quotient into parts.

use crate::ntt::{self, Load};
use crate::{compose, ext_u64, ComposeKernel, CudaBackend, CudaMatrix};
use backend_api::memory::TableDims;
use backend_api::{validate, BackendError, ComposeInputs, ComposeOps, Coset, Ctx, Ext, Result, Stage, F};

impl ComposeOps for CudaBackend {
    fn compose(&self, ctx: &Ctx, inputs: &ComposeInputs<CudaMatrix>) -> Result<CudaMatrix> {
        let stage = Stage::Compose;
        validate::compose(inputs)?;
        let cs = inputs.constraints;
        let log_big = inputs.domain.log_size;
        let log_n = inputs.log_trace_height;
        let log_blowup = log_big - log_n;
        let d = TableDims {
            fixed_width: inputs.fixed.map_or(0, |m| m.width as u64),
            aux_width: inputs.aux.map_or(0, |m| m.width as u64).div_ceil(3),
            ..Self::dims(log_n, log_blowup, inputs.main.width)
        };
        let _permit = self.admit(stage, ctx, d)?;
        let big = inputs.domain.size();
        let tw = self.twiddles(stage, ctx, log_big)?;
        let program = match self.compose {
            ComposeKernel::Interpreted => compose::interpreter_program(cs),
            ComposeKernel::Generated => None,
        };
        // Constants: challenges, auxiliary values, publics, alpha^k and the
        // values of the nodes that read no column.
        let cl = compose::const_layout(cs, true);
        let mut cst = vec![0u64; cl.len.max(1)];
        for (k, c) in inputs.challenges.iter().enumerate() {
            cst[cl.challenges + 3 * k..cl.challenges + 3 * k + 3].copy_from_slice(&ext_u64(*c));
        }
        for (k, c) in inputs.aux_values.iter().enumerate() {
            cst[cl.aux_values + 3 * k..cl.aux_values + 3 * k + 3].copy_from_slice(&ext_u64(*c));
        }
        for (k, p) in inputs.publics.iter().enumerate() {
            cst[cl.publics + k] = p.value();
        }
        let mut a = Ext::ONE;
        for k in 0..cs.constraints.len() {
            cst[cl.alphas + 3 * k..cl.alphas + 3 * k + 3].copy_from_slice(&ext_u64(a));
            a *= inputs.alpha;
        }
        for (o, v) in compose::hoisted_values(cs, &cl, inputs.challenges, inputs.publics, inputs.aux_values) {
            cst[o..o + 3].copy_from_slice(&ext_u64(v));
        }
        // 1 / (x^n - 1) takes 2^log_blowup values on the coset: x^n = s^n w_B^j.
        let shift = inputs.domain.shift;
        let sn = shift.pow(1u64 << log_n);
        let wb = F::two_adic_root(log_blowup);
        let zinv: Vec<u64> =
            (0..1u64 << log_blowup).map(|j| (sn * wb.pow(j) - F::ONE).inverse().unwrap_or(F::ZERO).value()).collect();
        let g_inv = F::two_adic_root(log_n).inverse().expect("non-zero");
        let cst_b = self.upload_u64(stage, ctx, &cst)?;
        let zinv_b = self.upload_u64(stage, ctx, &zinv)?;
        let out = self.dev.alloc(stage, ctx, big * 3)?;
        let threads = 128;
        // Both kernels take these; the interpreter its instruction list
        // before them and the domain set after.
        let shared = [
            inputs.main.ptr(),
            inputs.aux.map_or(0, |m| m.ptr()),
            inputs.fixed.map_or(0, |m| m.ptr()),
            cst_b.ptr,
            zinv_b.ptr,
            tw.fwd.ptr,
            out.ptr,
            log_big as u64,
            log_blowup as u64,
            shift.value(),
            tw.log as u64,
            g_inv.value(),
        ];
        let (f, args, _prog_b) = match program {
            Some((prog, domains)) => {
                let prog_b = self.upload_u64(stage, ctx, &prog)?;
                let mut args = vec![prog_b.ptr, prog.len() as u64 / 2];
                args.extend(shared);
                args.push(domains);
                (self.dev.func("compose_interp").clone(), args, Some(prog_b))
            }
            None => {
                let f = self.dev.generated(stage, ctx, "compose", &compose::generate(cs), compose::KERNEL)?;
                (f, shared.to_vec(), None)
            }
        };
        self.dev.launch(stage, ctx, &f, Self::grid(big as u64, threads), threads, 0, &args)?;
        Ok(self.matrix(out, big, 3))
    }

    fn split_quotient(
        &self,
        ctx: &Ctx,
        quotient: &CudaMatrix,
        domain: Coset,
        log_trace_height: u32,
        parts: usize,
    ) -> Result<CudaMatrix> {
        let stage = Stage::QuotientSplit;
        validate::split_quotient(quotient, domain, log_trace_height, parts)?;
        let d =
            TableDims { parts: parts as u64, ..Self::dims(log_trace_height, domain.log_size - log_trace_height, 0) };
        let _permit = self.admit(stage, ctx, d)?;
        let dev = &self.dev;
        let log_big = domain.log_size;
        let big = domain.size();
        let n = 1usize << log_trace_height;
        let tw = self.twiddles(stage, ctx, log_big)?;
        let coeffs = dev.alloc(stage, ctx, big * 3)?;
        ntt::natural(dev, stage, ctx, &tw, true, log_big, 3, quotient.ptr(), big as u64, coeffs.ptr, big as u64)?;
        let bound = parts * n;
        if bound < big {
            let flag = dev.zeros(stage, ctx, 1)?;
            let span = (big - bound) as u64 * 3;
            let threads = 256;
            dev.launch(
                stage,
                ctx,
                dev.func("any_nonzero_tail"),
                Self::grid(span, threads),
                threads,
                0,
                &[coeffs.ptr, big as u64, big as u64, bound as u64, 3, flag.ptr],
            )?;
            let f = self.download_u64(stage, ctx, flag.ptr, 1)?;
            if f[0] != 0 {
                return Err(BackendError::ConstraintsNotSatisfied { table: ctx.table.to_string(), bound });
            }
        }
        let out = dev.alloc(stage, ctx, big * 3 * parts)?;
        let shift_inv = domain.shift.inverse().ok_or_else(|| BackendError::invalid(stage, "coset shift is zero"))?;
        let log_blowup = log_big - log_trace_height;
        for j in 0..parts {
            let load = Load {
                ptr: coeffs.at(j * n),
                stride: big as u64,
                mode: if self.skip_zero_levels { 3 } else { 5 },
                log_src_n: log_trace_height,
                log_blowup,
                twist_lo: 0,
                twist_hi: 0,
                twist_lo_bits: 0,
                scale: shift_inv.pow((j * n) as u64),
            };
            let from = if self.skip_zero_levels { log_blowup } else { 0 };
            ntt::run(
                dev,
                stage,
                ctx,
                &tw,
                false,
                false,
                log_big,
                from,
                log_big,
                3,
                load,
                out.at(3 * j * big),
                big as u64,
                F::ONE,
            )?;
        }
        Ok(self.matrix(out, big, 3 * parts))
    }
}
