//! Out-of-domain evaluation (barycentric, with partial sums reduced on the
//! device and finished on the host) and DEEP quotients.

use crate::device::{groups_for, Kernel};
use crate::fri::ext_words;
use crate::{ext_of, ext_u64, invalid, shader, words, WgpuBackend, WgpuMatrix};
use backend_api::{validate, Coset, Ctx, DeepPoint, Ext, Result, Stage, F};
use std::sync::Arc;

const DEEP: &str = include_str!("shaders/deep.wgsl");

/// The kernel's push constants (see shaders/deep.wgsl).
struct Pc {
    mode: u32,
    n: u32,
    log_n: u32,
    tw_log: u32,
    accumulate: bool,
    cols: u32,
    coeff_base: u32,
    slices: u32,
    z: Ext,
    v: Ext,
    shift: F,
    m_base: u32,
}

impl Pc {
    fn words(&self) -> Vec<u32> {
        let mut w = vec![
            self.mode,
            self.n,
            self.log_n,
            self.tw_log,
            self.accumulate as u32,
            self.cols,
            self.coeff_base,
            self.slices,
        ];
        w.extend(ext_words(self.z));
        w.extend(ext_words(self.v));
        w.extend(words(self.shift.value()));
        w.push(self.m_base);
        w
    }

    fn new(mode: u32, domain: &Coset, tw_log: u32) -> Pc {
        Pc {
            mode,
            n: domain.size() as u32,
            log_n: domain.log_size,
            tw_log,
            accumulate: false,
            cols: 0,
            coeff_base: 0,
            slices: 1,
            z: Ext::ZERO,
            v: Ext::ZERO,
            shift: domain.shift,
            m_base: 0,
        }
    }
}

impl WgpuBackend {
    fn deep_kernel(&self, stage: Stage, ctx: &Ctx) -> Result<Arc<Kernel>> {
        let src = shader::kernel(self.dev.int64, DEEP, 1);
        self.dev.kernel(stage, ctx, &src, &[false, false, false, true, true])
    }

    pub(crate) fn out_of_domain(
        &self,
        ctx: &Ctx,
        m: &WgpuMatrix,
        domain: Coset,
        points: &[Ext],
    ) -> Result<Vec<Vec<Ext>>> {
        let stage = Stage::OutOfDomain;
        validate::evaluate_at(m, domain)?;
        let (big, w) = (domain.size(), m.width);
        if points.is_empty() {
            return Ok(vec![]);
        }
        if w == 0 {
            return Ok(vec![vec![]; points.len()]);
        }
        let _permit = self.admit(stage, ctx, Self::dims(domain.log_size, 0, w))?;
        let tw = self.twiddles(stage, ctx, domain.log_size)?;
        let k = self.deep_kernel(stage, ctx)?;
        let weights = self.dev.alloc(stage, ctx, 24 * big as u64)?;
        let slices = big.div_ceil(4096).clamp(1, 64);
        let partial = self.dev.alloc(stage, ctx, 24 * (w * slices) as u64)?;
        let sn = domain.shift.pow(big as u64);
        let den = (F::new(big as u64) * sn).inverse().ok_or_else(|| invalid(stage, "coset shift is zero"))?;
        let (dummy, dummy_w) = (&self.dev.dummy, &self.dev.dummy_w);
        let mut out = Vec::with_capacity(points.len());
        for &z in points {
            if let Some(i) = domain.index_of(z) {
                // A point of the domain: the column values themselves.
                let parts: Vec<(&wgpu::Buffer, u64, u64)> =
                    (0..w).map(|c| m.locate(c)).map(|(b, off)| (b, off + i as u64, 1)).collect();
                let v = self.dev.read(stage, ctx, &parts)?;
                out.push(v.into_iter().map(|x| Ext::from_base(F::new(x))).collect());
                continue;
            }
            let mut job = self.dev.job(stage, ctx);
            let pc = Pc { z, ..Pc::new(2, &domain, tw.log) };
            job.dispatch(&k, &[dummy, dummy, &tw.fwd, &weights, dummy_w], &pc.words(), groups_for(big as u64))?;
            for (buf, first, cols) in m.pieces() {
                for c0 in (0..cols).step_by(65535) {
                    let nc = (cols - c0).min(65535);
                    // Partials of column first + c0 + y land at row (first + c0 + y).
                    let pc = Pc { slices: slices as u32, m_base: (c0 * big) as u32, ..Pc::new(3, &domain, tw.log) };
                    job.dispatch(
                        &k,
                        &[buf, dummy, &tw.fwd, &weights, &partial],
                        &pc.words(),
                        (slices as u32, nc as u32, 1),
                    )?;
                    job.submit()?;
                    job = self.dev.job(stage, ctx);
                    // Each batch reuses the partial buffer from its start:
                    // read it before the next batch overwrites it.
                    let p = self.dev.read(stage, ctx, &[(&partial, 0, (3 * nc * slices) as u64)])?;
                    self.finish_partials(&p, nc, slices, z, big, sn, den, &mut out, first + c0 == 0);
                }
            }
            job.submit()?;
        }
        Ok(out)
    }

    /// Sums the partials of `nc` columns and scales them by
    /// (z^N - s^N) / (N s^N); appends to the last row of `out` (a new row
    /// when `new_row`).
    #[allow(clippy::too_many_arguments)]
    fn finish_partials(
        &self,
        p: &[u64],
        nc: usize,
        slices: usize,
        z: Ext,
        big: usize,
        sn: F,
        den: F,
        out: &mut Vec<Vec<Ext>>,
        new_row: bool,
    ) {
        let pref = (z.pow(big as u64) - Ext::from_base(sn)).mul_base(den);
        if new_row {
            out.push(Vec::new());
        }
        let row = out.last_mut().expect("a row was pushed");
        for c in 0..nc {
            let mut acc = Ext::ZERO;
            for s in 0..slices {
                acc += ext_of(&p[3 * (c * slices + s)..]);
            }
            row.push(pref * acc);
        }
    }

    pub(crate) fn deep(&self, ctx: &Ctx, domain: Coset, points: &[DeepPoint<WgpuMatrix>]) -> Result<WgpuMatrix> {
        let stage = Stage::Deep;
        validate::deep(domain, points)?;
        let width = points.iter().map(|p| p.columns.iter().map(|c| c.matrix.width).sum::<usize>()).max().unwrap_or(0);
        let _permit = self.admit(stage, ctx, Self::dims(domain.log_size, 0, width))?;
        let big = domain.size();
        let tw = self.twiddles(stage, ctx, domain.log_size)?;
        let k = self.deep_kernel(stage, ctx)?;
        let out = self.alloc_matrix(stage, ctx, big, 3)?;
        let d = out.single(&self.dev, stage, ctx)?;
        let acc = self.dev.alloc(stage, ctx, 24 * big as u64)?;
        let mut job = self.dev.job(stage, ctx);
        let mut keep = Vec::new();
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
                for (buf, c0, nc) in cols.matrix.pieces() {
                    let pc = Pc {
                        accumulate: !first,
                        cols: nc as u32,
                        coeff_base: c0 as u32,
                        ..Pc::new(0, &domain, tw.log)
                    };
                    job.dispatch(
                        &k,
                        &[buf, &cb, &tw.fwd, &acc, &self.dev.dummy_w],
                        &pc.words(),
                        groups_for(big as u64),
                    )?;
                    first = false;
                }
                keep.push(cb);
            }
            if first {
                job.clear(&acc, 0, 3 * big as u64);
            }
            let pc = Pc { z: p.point, v, accumulate: pi > 0, ..Pc::new(1, &domain, tw.log) };
            job.dispatch(
                &k,
                &[&self.dev.dummy, &self.dev.dummy, &tw.fwd, &acc, d],
                &pc.words(),
                groups_for(big as u64),
            )?;
        }
        job.submit()?;
        Ok(out)
    }

    /// `DeepOps::combine_columns`: the lincomb mode into a fresh
    /// extension column, one dispatch per buffer of columns.
    pub(crate) fn combine(&self, ctx: &Ctx, m: &WgpuMatrix, weights: &[Ext]) -> Result<WgpuMatrix> {
        let stage = Stage::Deep;
        validate::combine_columns(m, weights)?;
        let n = m.height;
        let _permit = self.admit(stage, ctx, Self::dims(n.max(1).trailing_zeros(), 0, m.width))?;
        let k = self.deep_kernel(stage, ctx)?;
        let out = self.alloc_matrix(stage, ctx, n, 3)?;
        let acc = out.single(&self.dev, stage, ctx)?;
        let coeffs: Vec<u64> = weights.iter().flat_map(|c| ext_u64(*c)).collect();
        let cb = self.upload_u64(stage, ctx, &coeffs)?;
        let mut job = self.dev.job(stage, ctx);
        let mut first = true;
        for (buf, c0, nc) in m.pieces() {
            let base = Pc::new(0, &Coset::new(0, F::ONE), 0);
            let pc = Pc { n: n as u32, accumulate: !first, cols: nc as u32, coeff_base: c0 as u32, ..base };
            job.dispatch(&k, &[buf, &cb, &self.dev.dummy, acc, &self.dev.dummy_w], &pc.words(), groups_for(n as u64))?;
            first = false;
        }
        if first {
            job.clear(acc, 0, 3 * n as u64);
        }
        job.submit()?;
        Ok(out)
    }
}
