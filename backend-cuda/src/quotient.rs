//! `ComposeOps`: constraint composition (the generated or the interpreted
//! kernel, see `compose`) and the split of the quotient into parts.

use crate::ntt::{self, Load, Touches, Twiddles};
use crate::ntt_warp::{self, Strided};
use crate::stream::{DevBuf, Scope};
use crate::transform::Twist;
use crate::{compose, ext_u64, ComposeKernel, CudaBackend, CudaMatrix};
use backend_api::memory::TableDims;
use backend_api::{validate, BackendError, ComposeInputs, ComposeOps, Coset, Ctx, Ext, Result, Stage, F};
use std::sync::Arc;

/// The constant buffer of composition: challenges, auxiliary values,
/// publics, alpha^k and the values of the nodes that read no column.
fn constants(inputs: &ComposeInputs<CudaMatrix>) -> Vec<u64> {
    let cs = inputs.constraints;
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
    cst
}

/// 1 / (x^n - 1) on the coset takes 2^log_blowup values: x^n = s^n w_B^j.
fn vanishing_inverses(shift: F, log_n: u32, log_blowup: u32) -> Vec<u64> {
    let sn = shift.pow(1u64 << log_n);
    let wb = F::two_adic_root(log_blowup);
    (0..1u64 << log_blowup).map(|j| (sn * wb.pow(j) - F::ONE).inverse().unwrap_or(F::ZERO).value()).collect()
}

impl ComposeOps for CudaBackend {
    fn compose(&self, ctx: &Ctx, inputs: &ComposeInputs<CudaMatrix>) -> Result<CudaMatrix> {
        let stage = Stage::Compose;
        validate::compose(inputs)?;
        let cs = inputs.constraints;
        let log_big = inputs.domain.log_size;
        let log_n = inputs.log_trace_height;
        // A piece given its next rows is no larger than the trace: one
        // value of 1 / (x^n - 1), and its own rows.
        let log_blowup = log_big.saturating_sub(log_n);
        let d = TableDims {
            fixed_width: inputs.fixed.map_or(0, |m| m.width as u64),
            aux_width: inputs.aux.map_or(0, |m| m.width as u64).div_ceil(3),
            ..Self::dims(log_big - log_blowup, log_blowup, inputs.main.width)
        };
        let _permit = self.admit(stage, ctx, d)?;
        let mut s = self.scope(stage, ctx)?;
        let big = inputs.domain.size();
        let tw = self.twiddles(&mut s, log_big)?;
        let program = match self.compose {
            ComposeKernel::Interpreted => compose::interpreter_program(cs),
            ComposeKernel::Generated => None,
        };
        let shift = inputs.domain.shift;
        let g_inv = F::two_adic_root(log_n).inverse().expect("non-zero");
        let cst_b = s.upload(&constants(inputs))?;
        let zinv_b = s.upload(&vanishing_inverses(shift, log_n, log_blowup))?;
        let out = s.alloc(big * 3)?;
        let threads = 128;
        let (main, aux, fixed) = (&inputs.main.buf, inputs.aux.map(|m| &m.buf), inputs.fixed.map(|m| &m.buf));
        // Rows past offset 0: the same matrices B rows on, or a piece's
        // next rows at the same row.
        let (next, nb) = match inputs.next {
            Some(n) => ((&n.main.buf, n.aux.map(|m| &m.buf), n.fixed.map(|m| &m.buf)), 0),
            None => ((main, aux, fixed), 1u64 << log_blowup),
        };
        let ptr = |b: Option<&Arc<DevBuf>>| b.map_or(0, |b| b.ptr);
        // Both kernels take these; the interpreter its instruction list
        // before them and the domain set after.
        let shared = [
            main.ptr,
            ptr(aux),
            ptr(fixed),
            next.0.ptr,
            ptr(next.1),
            ptr(next.2),
            cst_b.ptr,
            zinv_b.ptr,
            tw.fwd.ptr,
            out.ptr,
            log_big as u64,
            log_blowup as u64,
            nb,
            shift.value(),
            tw.log as u64,
            g_inv.value(),
            inputs.log_stride as u64,
        ];
        let mut bufs = vec![main, next.0, &cst_b, &zinv_b, &tw.fwd, &out];
        bufs.extend(aux.into_iter().chain(fixed).chain(next.1).chain(next.2));
        let prog_b;
        let kernels = match program {
            Some((prog, domains)) => {
                prog_b = s.upload(&prog)?;
                bufs.push(&prog_b);
                let mut args = vec![prog_b.ptr, prog.len() as u64 / 2];
                args.extend(shared);
                args.push(domains);
                vec![(self.dev.func("compose_interp").clone(), args)]
            }
            // The parts in order on one stream: the first stores, the rest add.
            None => compose::generate(cs)
                .iter()
                .map(|src| Ok((self.dev.generated(stage, ctx, "compose", src, compose::KERNEL)?, shared.to_vec())))
                .collect::<Result<Vec<_>>>()?,
        };
        for (f, args) in &kernels {
            s.launch(f, Self::grid(big as u64, threads), threads, 0, args, &bufs)?;
        }
        Ok(Self::matrix(out, big, 3))
    }

    fn split_quotient(
        &self,
        ctx: &Ctx,
        quotient: &CudaMatrix,
        domain: Coset,
        log_trace_height: u32,
        parts: usize,
        log_out: u32,
    ) -> Result<CudaMatrix> {
        let stage = Stage::QuotientSplit;
        validate::split_quotient(quotient, domain, log_trace_height, parts, log_out)?;
        let d = TableDims { parts: parts as u64, ..Self::dims(log_trace_height, log_out - log_trace_height, 0) };
        let _permit = self.admit(stage, ctx, d)?;
        let mut s = self.scope(stage, ctx)?;
        let log_big = domain.log_size;
        let (big, out_rows) = (domain.size(), 1usize << log_out);
        let n = 1usize << log_trace_height;
        let tw = self.twiddles(&mut s, log_out)?;
        let coeffs = s.alloc(big * 3)?;
        ntt::natural(&mut s, &tw, true, log_big, 3, &quotient.buf, big as u64, &coeffs, big as u64)?;
        let bound = parts * n;
        if bound < big && Self::any_nonzero_tail(&mut s, &coeffs, big, bound)? {
            return Err(BackendError::ConstraintsNotSatisfied { table: ctx.table.to_string(), bound });
        }
        let out = s.alloc(out_rows * 3 * parts)?;
        let shift_inv = domain.shift.inverse().ok_or_else(|| BackendError::invalid(stage, "coset shift is zero"))?;
        let log_blowup = log_out - log_trace_height;
        if Self::warp_extends(&tw, log_trace_height, log_blowup) {
            self.extend_parts(&mut s, &tw, (&coeffs, &out), (domain, shift_inv), log_trace_height, parts, log_blowup)?;
            return Ok(Self::matrix(out, out_rows, 3 * parts));
        }
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
            let (dst, touches) = (out.at(3 * j * out_rows), Touches(&[&coeffs, &out]));
            let rows = out_rows as u64;
            ntt::run(&mut s, touches, &tw, false, false, log_out, from, log_out, 3, load, dst, rows, F::ONE)?;
        }
        Ok(Self::matrix(out, out_rows, 3 * parts))
    }
}

impl CudaBackend {
    /// The parts' LDEs on the warp path. The transform of the quotient's
    /// values on its coset s H gives c_k s^k for its coefficients c_k;
    /// times s^-k they are its own, and each run of n of them (a part)
    /// extends onto the coset s of the trace's LDE, whose twist table the
    /// warp path keeps.
    #[allow(clippy::too_many_arguments)]
    fn extend_parts(
        &self,
        s: &mut Scope,
        tw: &Twiddles,
        (coeffs, out): (&Arc<DevBuf>, &Arc<DevBuf>),
        (domain, shift_inv): (Coset, F),
        log_n: u32,
        parts: usize,
        log_blowup: u32,
    ) -> Result<()> {
        let (n, big) = (1usize << log_n, domain.size() as u64);
        let unshift = Twist::new(s, domain.log_size, shift_inv, F::ONE)?;
        let rows = (parts * n) as u64;
        let args = [coeffs.ptr, big, rows, unshift.lo.ptr, unshift.hi.ptr, unshift.lo_bits as u64];
        let grid = (rows.div_ceil(256) as u32, 3, 1);
        s.launch(s.dev.func("mul_twist"), grid, 256, 0, &args, &[coeffs, &unshift.lo, &unshift.hi])?;
        let twist = self.warp_twist.get(s, domain.shift, log_blowup)?;
        let out_rows = (n << log_blowup) as u64;
        for j in 0..parts {
            let part = Strided::new(coeffs, big).offset((j * n) as u64);
            let lde = Strided::new(out, out_rows).offset(3 * j as u64 * out_rows);
            ntt_warp::extend(s, tw, &twist, log_blowup, &(0..3), part, lde)?;
        }
        Ok(())
    }

    /// Whether any of the 3 coefficient columns (height `big`) of `coeffs`
    /// is non-zero at or past `bound`.
    fn any_nonzero_tail(s: &mut Scope, coeffs: &Arc<DevBuf>, big: usize, bound: usize) -> Result<bool> {
        let flag = s.zeros(1)?;
        let span = (big - bound) as u64 * 3;
        let threads = 256;
        let dev = s.dev.clone();
        let args = [coeffs.ptr, big as u64, big as u64, bound as u64, 3, flag.ptr];
        s.launch(dev.func("any_nonzero_tail"), Self::grid(span, threads), threads, 0, &args, &[coeffs, &flag])?;
        Ok(Self::download_u64(s, &flag, 0, 1)?[0] != 0)
    }
}
