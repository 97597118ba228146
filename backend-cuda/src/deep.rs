//! `DeepOps`: out-of-domain values by barycentric evaluation and DEEP
//! quotients.

use crate::{ext_of, ext_u64, CudaBackend, CudaMatrix};
use backend_api::{validate, BackendError, Coset, Ctx, DeepOps, DeepPoint, Ext, Result, Stage, F};

impl DeepOps for CudaBackend {
    fn evaluate_at(&self, ctx: &Ctx, m: &CudaMatrix, domain: Coset, points: &[Ext]) -> Result<Vec<Vec<Ext>>> {
        let stage = Stage::OutOfDomain;
        validate::evaluate_at(m, domain)?;
        let dev = &self.dev;
        let (big, w) = (domain.size(), m.width);
        if points.is_empty() {
            return Ok(vec![]);
        }
        if w == 0 {
            return Ok(vec![vec![]; points.len()]);
        }
        let _permit = self.admit(stage, ctx, Self::dims(domain.log_size, 0, w))?;
        let tw = self.twiddles(stage, ctx, domain.log_size)?;
        let weights = dev.alloc(stage, ctx, big * 3)?;
        let slices = big.div_ceil(4096).clamp(1, 64);
        let partial = dev.alloc(stage, ctx, w * slices * 3)?;
        let s = domain.shift;
        let sn = s.pow(big as u64);
        let mut out = Vec::with_capacity(points.len());
        for &z in points {
            if let Some(i) = domain.index_of(z) {
                // A point of the domain: the column values themselves.
                let idx: Vec<u64> = (0..w).map(|c| (c * big + i) as u64).collect();
                let v = self.gather(stage, ctx, m.ptr(), &idx)?;
                out.push(v.into_iter().map(|x| Ext::from_base(F::new(x))).collect());
                continue;
            }
            let zc = ext_u64(z);
            dev.launch(
                stage,
                ctx,
                dev.func("bary_weights"),
                Self::grid(big as u64, 128),
                128,
                0,
                &[weights.ptr, domain.log_size as u64, zc[0], zc[1], zc[2], s.value(), tw.fwd.ptr, tw.log as u64],
            )?;
            for c0 in (0..w).step_by(65535) {
                let nc = (w - c0).min(65535);
                dev.launch(
                    stage,
                    ctx,
                    dev.func("bary_partial"),
                    (slices as u32, nc as u32, 1),
                    256,
                    0,
                    &[m.buf.at(c0 * big), weights.ptr, big as u64, partial.at(c0 * slices * 3)],
                )?;
            }
            let p = self.download_u64(stage, ctx, partial.ptr, w * slices * 3)?;
            // (z^N - s^N) / (N s^N)
            let num = z.pow(big as u64) - Ext::from_base(sn);
            let den = (F::new(big as u64) * sn).inverse().ok_or_else(|| BackendError::invalid(stage, "zero shift"))?;
            let pref = num.mul_base(den);
            let row: Vec<Ext> = (0..w)
                .map(|c| {
                    let mut acc = Ext::ZERO;
                    for k in 0..slices {
                        acc += ext_of(&p[(c * slices + k) * 3..]);
                    }
                    pref * acc
                })
                .collect();
            out.push(row);
        }
        Ok(out)
    }

    fn deep_quotient(&self, ctx: &Ctx, domain: Coset, points: &[DeepPoint<CudaMatrix>]) -> Result<CudaMatrix> {
        let stage = Stage::Deep;
        validate::deep(domain, points)?;
        let width = points.iter().map(|p| p.columns.iter().map(|c| c.matrix.width).sum::<usize>()).max().unwrap_or(0);
        let _permit = self.admit(stage, ctx, Self::dims(domain.log_size, 0, width))?;
        let dev = &self.dev;
        let big = domain.size();
        let tw = self.twiddles(stage, ctx, domain.log_size)?;
        let d = dev.alloc(stage, ctx, big * 3)?;
        let acc = dev.alloc(stage, ctx, big * 3)?;
        let threads = 128;
        for (pi, p) in points.iter().enumerate() {
            let mut v = Ext::ZERO;
            let mut first = true;
            for cols in &p.columns {
                for (c, val) in cols.coeffs.iter().zip(&cols.values) {
                    v += *c * *val;
                }
                if cols.matrix.width == 0 {
                    continue;
                }
                let coeffs: Vec<u64> = cols.coeffs.iter().flat_map(|c| ext_u64(*c)).collect();
                let cb = self.upload_u64(stage, ctx, &coeffs)?;
                dev.launch(
                    stage,
                    ctx,
                    dev.func("lincomb"),
                    Self::grid(big as u64, threads),
                    threads,
                    0,
                    &[acc.ptr, cols.matrix.ptr(), cb.ptr, cols.matrix.width as u64, big as u64, (!first) as u64],
                )?;
                first = false;
            }
            if first {
                // SAFETY: acc holds big*3 elements.
                unsafe { cudarc::driver::result::memset_d8_async(acc.ptr, 0, 8 * big * 3, dev.stream.cu_stream()) }
                    .map_err(|e| dev.err(stage, ctx, e))?;
            }
            let z = ext_u64(p.point);
            let vv = ext_u64(v);
            dev.launch(
                stage,
                ctx,
                dev.func("deep_accum"),
                Self::grid(big as u64, threads),
                threads,
                0,
                &[
                    d.ptr,
                    acc.ptr,
                    domain.log_size as u64,
                    z[0],
                    z[1],
                    z[2],
                    vv[0],
                    vv[1],
                    vv[2],
                    domain.shift.value(),
                    tw.fwd.ptr,
                    tw.log as u64,
                    (pi > 0) as u64,
                ],
            )?;
        }
        Ok(self.matrix(d, big, 3))
    }
}
