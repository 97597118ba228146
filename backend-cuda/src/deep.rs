//! `DeepOps`: out-of-domain values by barycentric evaluation and DEEP
//! quotients.

use crate::stream::{column_runs, DevBuf, Scope};
use crate::{ext_of, ext_u64, CudaBackend, CudaMatrix};
use backend_api::memory::{matrix_bytes, OOD_POINTS};
use backend_api::{validate, BackendError, Coset, Ctx, DeepColumns, DeepOps, DeepPoint, Ext, Result, Stage, F};
use std::sync::Arc;

/// Rows of barycentric weights a thread makes (`BARY_ROWS` in fri.cu).
const BARY_ROWS: usize = 8;
/// Rows of DEEP quotients a thread makes (`DEEP_ROWS` in fri.cu).
const DEEP_ROWS: usize = 8;

impl DeepOps for CudaBackend {
    fn evaluate_coeffs(&self, ctx: &Ctx, coeffs: &CudaMatrix, points: &[Ext]) -> Result<Vec<Vec<Ext>>> {
        // The transform is a few microseconds of the device's time; the
        // barycentric pass then reads each value once for both points.
        validate::evaluate_coeffs(coeffs)?;
        let evals = backend_api::NttOps::ntt(self, ctx, coeffs)?;
        let domain = Coset::subgroup(backend_api::DeviceMatrix::height(coeffs).trailing_zeros());
        self.evaluate_at(ctx, &evals, domain, 0, points)
    }

    fn evaluate_at(
        &self,
        ctx: &Ctx,
        m: &CudaMatrix,
        domain: Coset,
        log_stride: u32,
        points: &[Ext],
    ) -> Result<Vec<Vec<Ext>>> {
        let stage = Stage::OutOfDomain;
        validate::evaluate_at(m, domain, log_stride)?;
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
        let pass = OOD_POINTS as usize;
        let weights = sc.alloc(big * 3 * pass)?;
        let slices = big.div_ceil(4096).clamp(1, 64);
        let partial = sc.alloc(w * slices * 3 * pass)?;
        let s = domain.shift;
        let sn = s.pow(big as u64);
        // (z^N - s^N) / (N s^N)
        let den = (F::new(big as u64) * sn).inverse().ok_or_else(|| BackendError::invalid(stage, "zero shift"))?;
        let mut out: Vec<Vec<Ext>> = vec![vec![]; points.len()];
        let mut off = vec![];
        for (p, &z) in points.iter().enumerate() {
            match domain.index_of(z) {
                // A point of the domain: the column values themselves.
                Some(i) => {
                    let idx: Vec<u64> = (0..w).map(|c| ((c * big + i) << log_stride) as u64).collect();
                    let v = Self::gather(&mut sc, &m.buf, &idx)?;
                    out[p] = v.into_iter().map(|x| Ext::from_base(F::new(x))).collect();
                }
                None => off.push((p, z)),
            }
        }
        // OOD_POINTS points a pass: each value is read once for all of them.
        for batch in off.chunks(pass) {
            let np = batch.len();
            for (k, &(_, z)) in batch.iter().enumerate() {
                let zc = ext_u64(z);
                let wk = weights.at(k * 3 * big);
                let args = [wk, domain.log_size as u64, zc[0], zc[1], zc[2], s.value(), tw.fwd.ptr, tw.log as u64];
                let grid = Self::grid(big.div_ceil(BARY_ROWS) as u64, 128);
                sc.launch(dev.func("bary_weights"), grid, 128, 0, &args, &[&weights, &tw.fwd])?;
            }
            for (c0, nc) in column_runs(0..w) {
                let args = [
                    m.buf.at((c0 * big) << log_stride),
                    weights.ptr,
                    big as u64,
                    log_stride as u64,
                    np as u64,
                    partial.at(c0 * slices * 3 * np),
                ];
                let bufs = [&m.buf, &weights, &partial];
                sc.launch(dev.func("bary_partial"), (nc, slices as u32, 1), 256, 0, &args, &bufs)?;
            }
            let part = Self::download_u64(&mut sc, &partial, 0, w * slices * 3 * np)?;
            for (k, &(p, z)) in batch.iter().enumerate() {
                let pref = (z.pow(big as u64) - Ext::from_base(sn)).mul_base(den);
                out[p] = (0..w)
                    .map(|c| {
                        let sum: Ext = (0..slices).map(|j| ext_of(&part[((c * slices + j) * np + k) * 3..])).sum();
                        pref * sum
                    })
                    .collect();
            }
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
        // The first two points' combinations go to d and acc together (a
        // matrix opened at both is read once); d is then made the first
        // point's quotient in place, and every other point adds its own.
        let d = s.alloc(big * 3)?;
        let acc = s.alloc(big * 3)?;
        Self::combine_columns_at(&mut s, &points[0], points.get(1), (&d, &acc), big)?;
        for (pi, p) in points.iter().enumerate() {
            if pi >= 2 {
                Self::combine_columns_at(&mut s, p, None, (&acc, &acc), big)?;
            }
            let src = if pi == 0 { &d } else { &acc };
            let v: Ext =
                p.columns.iter().flat_map(|cols| cols.coeffs.iter().zip(&cols.values).map(|(c, v)| *c * *v)).sum();
            let (z, vv) = (ext_u64(p.point), ext_u64(v));
            let (log, shift) = (domain.log_size as u64, domain.shift.value());
            let args = [
                d.ptr,
                src.ptr,
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
            let (threads, grid) = (128, Self::grid(big.div_ceil(DEEP_ROWS) as u64, 128));
            let bufs: &[&Arc<DevBuf>] = if pi == 0 { &[&d, &tw.fwd] } else { &[&d, &acc, &tw.fwd] };
            s.launch(dev.func("deep_accum"), grid, threads, 0, &args, bufs)?;
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

impl CudaBackend {
    /// sum_c coeff_c * column_c over the columns of point `a` into `out.0`
    /// and of point `b` into `out.1` (3 columns of `big` rows each). A
    /// matrix opened at both (a table's rows and next rows) is read once
    /// for both (one `lincomb` with two coefficient sets).
    fn combine_columns_at(
        s: &mut Scope,
        a: &DeepPoint<CudaMatrix>,
        b: Option<&DeepPoint<CudaMatrix>>,
        out: (&Arc<DevBuf>, &Arc<DevBuf>),
        big: usize,
    ) -> Result<()> {
        let dev = s.dev.clone();
        let accs = [out.0, out.1];
        let mut filled = [false; 2];
        let mut todo: Vec<(usize, &DeepColumns<CudaMatrix>)> = [Some(a), b]
            .into_iter()
            .enumerate()
            .flat_map(|(pi, p)| p.into_iter().flat_map(|p| &p.columns).map(move |c| (pi, c)))
            .filter(|(_, c)| c.matrix.width > 0)
            .collect();
        let coeffs = |c: &DeepColumns<CudaMatrix>| c.coeffs.iter().flat_map(|k| ext_u64(*k)).collect::<Vec<_>>();
        let (threads, grid, n) = (128, Self::grid(big as u64, 128), big as u64);
        while !todo.is_empty() {
            let (pa, ca) = todo.remove(0);
            let (m, w) = (&ca.matrix.buf, ca.matrix.width as u64);
            let ka = s.upload(&coeffs(ca))?;
            let shared = todo.iter().position(|(pb, cb)| *pb != pa && Arc::ptr_eq(m, &cb.matrix.buf));
            if let Some(i) = shared {
                let (pb, cb) = todo.remove(i);
                let kb = s.upload(&coeffs(cb))?;
                let args =
                    [accs[pa].ptr, accs[pb].ptr, m.ptr, ka.ptr, kb.ptr, w, n, filled[pa] as u64, filled[pb] as u64];
                s.launch(dev.func("lincomb_pair"), grid, threads, 0, &args, &[accs[pa], accs[pb], m, &ka, &kb])?;
                filled[pb] = true;
            } else {
                let args = [accs[pa].ptr, m.ptr, ka.ptr, w, n, filled[pa] as u64];
                s.launch(dev.func("lincomb"), grid, threads, 0, &args, &[accs[pa], m, &ka])?;
            }
            filled[pa] = true;
        }
        let points = if b.is_some() { 2 } else { 1 };
        for (acc, _) in accs.iter().zip(filled).take(points).filter(|(_, f)| !*f) {
            s.memset_zero(acc, 0, big * 3)?;
        }
        Ok(())
    }
}
