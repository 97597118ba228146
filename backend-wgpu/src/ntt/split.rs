//! The quotient split: the quotient's coefficients, checked for degree, cut into parts and each extended.

use super::{Load, Run};
use crate::{invalid, WgpuBackend, WgpuMatrix};
use backend_api::{validate, BackendError, Coset, Ctx, Result, Stage, F};

const TAIL: &str = include_str!("../shaders/tail.wgsl");

impl WgpuBackend {
    /// Records setting `flag` when any of rows [bound, n) of the three
    /// columns of `m` is non-zero.
    #[allow(clippy::too_many_arguments)]
    fn any_nonzero(
        &self,
        job: &mut crate::device::Job,
        stage: Stage,
        ctx: &Ctx,
        m: &wgpu::Buffer,
        n: usize,
        bound: usize,
        flag: &wgpu::Buffer,
    ) -> Result<()> {
        let k = self.dev.kernel(stage, ctx, "tail", &crate::shader::kernel(self.dev.int64, TAIL, 1), &[false, true])?;
        let span = 3 * (n - bound) as u64;
        job.dispatch(&k, &[m, flag], &[n as u32, bound as u32], crate::device::groups_for(span))
    }

    pub(crate) fn split(
        &self,
        ctx: &Ctx,
        quotient: &WgpuMatrix,
        domain: Coset,
        log_trace_height: u32,
        parts: usize,
        log_out: u32,
    ) -> Result<WgpuMatrix> {
        let stage = Stage::QuotientSplit;
        validate::split_quotient(quotient, domain, log_trace_height, parts, log_out)?;
        let log_big = domain.log_size;
        let d = backend_api::memory::TableDims {
            parts: parts as u64,
            ..Self::dims(log_trace_height, log_out - log_trace_height, 0)
        };
        let _permit = self.admit(stage, ctx, d)?;
        let big = domain.size();
        let n = 1usize << log_trace_height;
        let tw = self.twiddles(stage, ctx, log_out)?;
        let qbuf = quotient.single(&self.dev, stage, ctx)?;
        let coeffs = self.alloc_matrix(stage, ctx, big, 3)?;
        let cbuf = coeffs.single(&self.dev, stage, ctx)?;
        let big_inv = F::new(big as u64).inverse().ok_or_else(|| invalid(stage, "empty domain"))?;
        let mut job = self.dev.job(stage, ctx);
        let r = Run {
            log_n: log_big,
            cols: 3,
            load: Load::Gather { src: qbuf, base: 0, stride: big as u64 },
            dst: cbuf,
            dst_base: 0,
            inverse_roots: true,
            store_scale: Some(big_inv),
        };
        self.record(&mut job, stage, ctx, &tw, &r)?;
        let bound = parts * n;
        if bound < big {
            let flag = self.dev.alloc(stage, ctx, 8)?;
            job.clear(&flag, 0, 2);
            self.any_nonzero(&mut job, stage, ctx, cbuf, big, bound, &flag)?;
            job.submit()?;
            let f = self.dev.read(stage, ctx, &[(&flag, 0, 1)])?;
            if f[0] != 0 {
                return Err(BackendError::ConstraintsNotSatisfied { table: ctx.table.to_string(), bound });
            }
            job = self.dev.job(stage, ctx);
        }
        let out = self.alloc_matrix(stage, ctx, 1 << log_out, 3 * parts)?;
        let s_inv = domain.shift.inverse().ok_or_else(|| invalid(stage, "coset shift is zero"))?;
        for j in 0..parts {
            for coord in 0..3 {
                let (dst, dst_base) = out.locate(3 * j + coord);
                let r = Run {
                    log_n: log_out,
                    cols: 1,
                    load: Load::Expand {
                        src: cbuf,
                        base: (coord * big + j * n) as u64,
                        stride: big as u64,
                        log_src: log_trace_height,
                        scale: s_inv.pow((j * n) as u64),
                        twist: None,
                    },
                    dst,
                    dst_base,
                    inverse_roots: false,
                    store_scale: None,
                };
                self.record(&mut job, stage, ctx, &tw, &r)?;
            }
        }
        job.submit()?;
        Ok(out)
    }
}
