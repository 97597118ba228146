//! `DeepOps`: out-of-domain values by barycentric evaluation and DEEP
//! quotients.

use crate::{ext_of, ext_u64, CudaBackend, CudaMatrix};
use backend_api::memory::matrix_bytes;
use backend_api::{validate, BackendError, Coset, Ctx, DeepOps, DeepPoint, Ext, Result, Stage, F};

/// Rows of barycentric weights a thread makes (`BARY_ROWS` in fri.cu).
const BARY_ROWS: usize = 8;
/// Rows of DEEP quotients a thread makes (`DEEP_ROWS` in fri.cu).
const DEEP_ROWS: usize = 8;

impl DeepOps for CudaBackend {
    fn evaluate_at(&self, ctx: &Ctx, m: &CudaMatrix, domain: Coset, points: &[Ext]) -> Result<Vec<Vec<Ext>>> {
        let stage = Stage::OutOfDomain;
        validate::evaluate_at(m, domain)?;
        let dev = self.dev.clone();
        let (big, w) = (domain.size(), m.width);
        if points.is_empty() {
            return Ok(vec![]);
        }
        if w == 0 {
            return Ok(vec![vec![]; points.len()]);
        }
        let _permit = self.admit(stage, ctx, Self::dims(domain.log_size, 0, w))?;
        let mut sc = self.scope(stage, ctx)?;
        let tw = self.twiddles(&mut sc, domain.log_size)?;
        let weights = sc.alloc(big * 3)?;
        let slices = big.div_ceil(4096).clamp(1, 64);
        let partial = sc.alloc(w * slices * 3)?;
        let s = domain.shift;
        let sn = s.pow(big as u64);
        let mut out = Vec::with_capacity(points.len());
        for &z in points {
            if let Some(i) = domain.index_of(z) {
                // A point of the domain: the column values themselves.
                let idx: Vec<u64> = (0..w).map(|c| (c * big + i) as u64).collect();
                let v = Self::gather(&mut sc, &m.buf, &idx)?;
                out.push(v.into_iter().map(|x| Ext::from_base(F::new(x))).collect());
                continue;
            }
            let zc = ext_u64(z);
            let args = [weights.ptr, domain.log_size as u64, zc[0], zc[1], zc[2], s.value(), tw.fwd.ptr, tw.log as u64];
            let grid = Self::grid(big.div_ceil(BARY_ROWS) as u64, 128);
            sc.launch(dev.func("bary_weights"), grid, 128, 0, &args, &[&weights, &tw.fwd])?;
            for c0 in (0..w).step_by(65535) {
                let nc = (w - c0).min(65535);
                let args = [m.buf.at(c0 * big), weights.ptr, big as u64, partial.at(c0 * slices * 3)];
                let bufs = [&m.buf, &weights, &partial];
                sc.launch(dev.func("bary_partial"), (slices as u32, nc as u32, 1), 256, 0, &args, &bufs)?;
            }
            let p = Self::download_u64(&mut sc, &partial, 0, w * slices * 3)?;
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
        let mut s = self.scope(stage, ctx)?;
        let dev = self.dev.clone();
        let big = domain.size();
        let tw = self.twiddles(&mut s, domain.log_size)?;
        let d = s.alloc(big * 3)?;
        let acc = s.alloc(big * 3)?;
        let threads = 128;
        let grid = Self::grid(big as u64, threads);
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
                let cb = s.upload(&coeffs)?;
                let m = &cols.matrix.buf;
                let args = [acc.ptr, m.ptr, cb.ptr, cols.matrix.width as u64, big as u64, (!first) as u64];
                s.launch(dev.func("lincomb"), grid, threads, 0, &args, &[&acc, m, &cb])?;
                first = false;
            }
            if first {
                s.memset_zero(&acc, 0, big * 3)?;
            }
            let (z, vv) = (ext_u64(p.point), ext_u64(v));
            let (log, shift) = (domain.log_size as u64, domain.shift.value());
            let args = [
                d.ptr,
                acc.ptr,
                log,
                z[0],
                z[1],
                z[2],
                vv[0],
                vv[1],
                vv[2],
                shift,
                tw.fwd.ptr,
                tw.log as u64,
                (pi > 0) as u64,
            ];
            let rows_grid = Self::grid(big.div_ceil(DEEP_ROWS) as u64, threads);
            s.launch(dev.func("deep_accum"), rows_grid, threads, 0, &args, &[&d, &acc, &tw.fwd])?;
        }
        Ok(Self::matrix(d, big, 3))
    }

    fn combine_columns(&self, ctx: &Ctx, m: &CudaMatrix, weights: &[Ext]) -> Result<CudaMatrix> {
        let stage = Stage::Deep;
        validate::combine_columns(m, weights)?;
        let (n, w) = (m.height, m.width);
        let out_bytes = matrix_bytes(n as u64, 3);
        let _permit = self.admit_with(stage, ctx, 0, matrix_bytes(n as u64, w as u64) + out_bytes)?;
        let mut s = self.scope(stage, ctx)?;
        let dev = self.dev.clone();
        let out = s.alloc(n * 3)?;
        let coeffs: Vec<u64> = weights.iter().flat_map(|c| ext_u64(*c)).collect();
        let cb = s.upload(&coeffs)?;
        let args = [out.ptr, m.buf.ptr, cb.ptr, w as u64, n as u64, 0];
        s.launch(dev.func("lincomb"), Self::grid(n as u64, 128), 128, 0, &args, &[&out, &m.buf, &cb])?;
        Ok(Self::matrix(out, n, 3))
    }
}
