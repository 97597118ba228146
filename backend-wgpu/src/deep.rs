//! Out-of-domain evaluation (barycentric, with partial sums reduced on the
//! device and finished on the host) and DEEP quotients.

use crate::device::{groups_for, Kernel};
use crate::fri::ext_words;
use crate::{ext_of, ext_u64, invalid, shader, words, WgpuBackend, WgpuMatrix};
use backend_api::{validate, Coset, Ctx, DeepPoint, Ext, Result, Stage, F};
use std::sync::Arc;

const DEEP: &str = include_str!("shaders/deep.wgsl");

/// Invocations of the modes that divide by x - z: `ROWS` (4) rows each
/// (shaders/deep.wgsl).
fn over_den(rows: usize) -> u64 {
    rows.div_ceil(4) as u64
}

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
    /// Mode 0: each target skipped (0), stored (1) or added to (2).
    to_d: u32,
    to_acc: u32,
    coeff_base2: u32,
    /// Mode 3: row i << log_stride of each column is point i.
    log_stride: u32,
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
        w.extend([self.m_base, self.to_d, self.to_acc, self.coeff_base2, self.log_stride, 0]);
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
            to_d: 0,
            to_acc: 0,
            coeff_base2: 0,
            log_stride: 0,
        }
    }
}

// Out-of-domain evaluation.
impl WgpuBackend {
    fn deep_kernel(&self, stage: Stage, ctx: &Ctx) -> Result<Arc<Kernel>> {
        let src = shader::kernel(self.dev.int64, DEEP, 1);
        self.dev.kernel(stage, ctx, "deep", &src, &[false, false, false, true, true])
    }

    pub(crate) fn out_of_domain(
        &self,
        ctx: &Ctx,
        m: &WgpuMatrix,
        (domain, log_stride): (Coset, u32),
        points: &[Ext],
    ) -> Result<Vec<Vec<Ext>>> {
        let stage = Stage::OutOfDomain;
        validate::evaluate_at(m, domain, log_stride)?;
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
        let weights = self.dev.alloc_uninit(stage, ctx, 24 * big as u64)?;
        let slices = big.div_ceil(4096).clamp(1, 64);
        let partial = self.dev.alloc_uninit(stage, ctx, 24 * (w * slices) as u64)?;
        let sn = domain.shift.pow(big as u64);
        let den = (F::new(big as u64) * sn).inverse().ok_or_else(|| invalid(stage, "coset shift is zero"))?;
        let (dummy, dummy_w) = (&self.dev.dummy, &self.dev.dummy_w);
        let mut out = Vec::with_capacity(points.len());
        for &z in points {
            if let Some(i) = domain.index_of(z) {
                // A point of the domain: the column values themselves.
                let parts: Vec<(&wgpu::Buffer, u64, u64)> =
                    (0..w).map(|c| m.locate(c)).map(|(b, off)| (b, off + (i << log_stride) as u64, 1)).collect();
                let v = self.dev.read(stage, ctx, &parts)?;
                out.push(v.into_iter().map(|x| Ext::from_base(F::new(x))).collect());
                continue;
            }
            let mut job = self.dev.job(stage, ctx);
            let pc = Pc { z, ..Pc::new(2, &domain, tw.log) };
            job.dispatch(&k, &[dummy, dummy, &tw.fwd, &weights, dummy_w], &pc.words(), groups_for(over_den(big)))?;
            for (buf, first, cols) in m.pieces() {
                for c0 in (0..cols).step_by(65535) {
                    let nc = (cols - c0).min(65535);
                    // Partials of column first + c0 + y land at row (first + c0 + y).
                    let pc = Pc {
                        slices: slices as u32,
                        m_base: ((c0 * big) << log_stride) as u32,
                        log_stride,
                        ..Pc::new(3, &domain, tw.log)
                    };
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
}

// DEEP quotients and column combinations.
impl WgpuBackend {
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
        let acc = self.dev.alloc_uninit(stage, ctx, 24 * big as u64)?;
        let mut job = self.dev.job(stage, ctx);
        let mut keep = Vec::new();
        // The first two points' combinations go to d and acc together (a
        // matrix opened at both is read once); d then becomes the first
        // point's quotient in place, and every other point adds its own.
        let mut lc = Lincomb { k: &k, m: &domain, tw_log: tw.log, d, acc: &acc, started: [false; 2] };
        let second = points.get(1).map_or(&[][..], |p| &p.columns[..]);
        let mut paired = vec![false; second.len()];
        for cols in &points[0].columns {
            let twin = second
                .iter()
                .enumerate()
                .position(|(j, c)| !paired[j] && c.matrix.same_as(cols.matrix) && c.coeffs.len() == cols.coeffs.len());
            if let Some(j) = twin {
                paired[j] = true;
            }
            let both = twin.map(|j| &second[j].coeffs[..]);
            keep.push(self.lincomb(&mut job, ctx, &mut lc, cols.matrix, Some(&cols.coeffs), both)?);
        }
        for (cols, _) in second.iter().zip(&paired).filter(|(_, &p)| !p) {
            keep.push(self.lincomb(&mut job, ctx, &mut lc, cols.matrix, None, Some(&cols.coeffs))?);
        }
        for (pi, p) in points.iter().enumerate() {
            if pi >= 2 {
                lc.started[1] = false;
                for cols in &p.columns {
                    keep.push(self.lincomb(&mut job, ctx, &mut lc, cols.matrix, None, Some(&cols.coeffs))?);
                }
            }
            // A point with no columns combines to zero.
            let target = usize::from(pi > 0);
            if !lc.started[target] {
                job.clear(if pi == 0 { d } else { &acc }, 0, 3 * big as u64);
                lc.started[target] = true;
            }
            let v: Ext = p.columns.iter().flat_map(|c| c.coeffs.iter().zip(&c.values).map(|(c, v)| *c * *v)).sum();
            let mode = if pi == 0 { 5 } else { 1 };
            let pc = Pc { z: p.point, v, accumulate: pi > 0, ..Pc::new(mode, &domain, tw.log) };
            job.dispatch(
                &k,
                &[&self.dev.dummy, &self.dev.dummy, &tw.fwd, &acc, d],
                &pc.words(),
                groups_for(over_den(big)),
            )?;
        }
        job.submit()?;
        Ok(out)
    }

    /// Records the combination of `m`'s columns with `to_d` coefficients
    /// into d and `to_acc` ones into acc (each stored the first time,
    /// added after), reading `m` once. Returns the coefficients' buffer,
    /// to keep until the job is submitted.
    fn lincomb(
        &self,
        job: &mut crate::device::Job,
        ctx: &Ctx,
        lc: &mut Lincomb,
        m: &WgpuMatrix,
        to_d: Option<&[Ext]>,
        to_acc: Option<&[Ext]>,
    ) -> Result<Option<crate::device::DeviceBuffer>> {
        if m.width == 0 || (to_d.is_none() && to_acc.is_none()) {
            return Ok(None);
        }
        let w = m.width;
        let coeffs: Vec<u64> =
            [to_d, to_acc].into_iter().flatten().flat_map(|cs| cs.iter().flat_map(|c| ext_u64(*c))).collect();
        let cb = self.upload_u64(Stage::Deep, ctx, &coeffs)?;
        let mode = |on: bool, started: bool| {
            if !on {
                0
            } else if started {
                2
            } else {
                1
            }
        };
        for (buf, c0, nc) in m.pieces() {
            let pc = Pc {
                cols: nc as u32,
                coeff_base: c0 as u32,
                coeff_base2: (c0 + if to_d.is_some() { w } else { 0 }) as u32,
                to_d: mode(to_d.is_some(), lc.started[0]),
                to_acc: mode(to_acc.is_some(), lc.started[1]),
                ..Pc::new(0, lc.m, lc.tw_log)
            };
            job.dispatch(
                lc.k,
                &[buf, &cb, &self.dev.dummy, lc.acc, lc.d],
                &pc.words(),
                groups_for(lc.m.size() as u64),
            )?;
            lc.started[0] |= to_d.is_some();
            lc.started[1] |= to_acc.is_some();
        }
        Ok(Some(cb))
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
            let to_acc = if first { 1 } else { 2 };
            let pc = Pc { n: n as u32, to_acc, cols: nc as u32, coeff_base2: c0 as u32, ..base };
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

/// What `WgpuBackend::lincomb` writes into: d and acc over the domain, and
/// whether each has been written yet.
struct Lincomb<'a> {
    k: &'a Kernel,
    m: &'a Coset,
    tw_log: u32,
    d: &'a wgpu::Buffer,
    acc: &'a wgpu::Buffer,
    started: [bool; 2],
}
