//! NTTs, the coset LDE and the quotient split: radix-2 DIT passes over
//! workgroup tiles (shaders/ntt.wgsl), per column, one dispatch per
//! buffer of the matrix.
//!
//! The LDE is an inverse transform to natural-order coefficients (1/n
//! folded into its last store), then a forward transform of the larger
//! size whose first pass reads each coefficient, multiplied by shift^k,
//! straight into the position it reaches after the zero-padded levels, so
//! those levels are skipped. The coset NTT is that second transform alone.

use crate::device::{Device, DeviceBuffer, Job};
use crate::{invalid, words, WgpuBackend, WgpuMatrix};
use backend_api::{validate, BackendError, ColMatrix, Coset, Ctx, Result, Stage, F};
use std::sync::{Arc, Mutex};

const TAIL: &str = include_str!("shaders/tail.wgsl");
const BITREV: &str = include_str!("shaders/bitrev.wgsl");
const FOLD_COEFFS: &str = include_str!("shaders/fold_coeffs.wgsl");

/// Tables of w^k and w^-k, k < 2^(log-1), for the 2^log-th root w; and,
/// where twice their size fits a binding, the same roots by NTT level
/// (level L's 2^L roots of order 2^(L+1) at words [2^L, 2^(L+1))), so a
/// level's butterflies read consecutive words, not words 2^(log-L-1)
/// apart.
pub(crate) struct Twiddles {
    pub log: u32,
    pub fwd: DeviceBuffer,
    pub inv: DeviceBuffer,
    pub by_level: Option<(DeviceBuffer, DeviceBuffer)>,
}

#[derive(Default)]
pub(crate) struct TwiddleCache(Mutex<Option<Arc<Twiddles>>>);

impl TwiddleCache {
    /// Tables valid for every domain of size up to 2^log.
    pub(crate) fn get(&self, dev: &Device, stage: Stage, ctx: &Ctx, log: u32) -> Result<Arc<Twiddles>> {
        let mut g = self.0.lock().map_err(|_| dev.err(stage, ctx, "twiddle lock poisoned"))?;
        if let Some(t) = g.as_ref().filter(|t| t.log >= log) {
            return Ok(t.clone());
        }
        let log = log.max(12);
        let half = 1usize << (log - 1);
        let w = F::two_adic_root(log);
        let wi = w.inverse().ok_or_else(|| dev.err(stage, ctx, "root of unity is zero"))?;
        let (mut fwd, mut inv) = (Vec::with_capacity(half), Vec::with_capacity(half));
        let (mut a, mut b) = (F::ONE, F::ONE);
        for _ in 0..half {
            fwd.push(a.value());
            inv.push(b.value());
            a *= w;
            b *= wi;
        }
        let by_level = |flat: &[u64]| -> Vec<u64> {
            let mut v = vec![0u64; 1 << log];
            for l in 0..log {
                for j in 0..1usize << l {
                    v[(1 << l) + j] = flat[j << (log - l - 1)];
                }
            }
            v
        };
        let levels = if 8u64 << log <= dev.max_binding {
            Some((dev.upload(stage, ctx, &by_level(&fwd))?, dev.upload(stage, ctx, &by_level(&inv))?))
        } else {
            None
        };
        let t = Arc::new(Twiddles {
            log,
            by_level: levels,
            fwd: dev.upload(stage, ctx, &fwd)?,
            inv: dev.upload(stage, ctx, &inv)?,
        });
        *g = Some(t.clone());
        Ok(t)
    }
}

/// Splits levels [from, to) into passes (l0, k, c): k levels from l0, in
/// tiles of 2^c consecutive indices (c <= l0, at most 3), 2^(k+c) <=
/// 2^tile_log elements a workgroup. With `lanes_first` (a gather from
/// level 0) a transform that needs several passes gets 2^3 high lanes in
/// its first pass (`lanes_high` in ntt.wgsl). A transform with no level
/// still gets one pass (its load and store).
pub(crate) fn plan(from: u32, to: u32, tile_log: u32, lanes_first: bool) -> Vec<(u32, u32, u32)> {
    let mut v = Vec::new();
    let mut l0 = from;
    while l0 < to {
        let lanes = lanes_first && l0 == 0 && to > tile_log;
        let c = if lanes { 3 } else { l0.min(3) };
        let kmax = tile_log - c;
        let rem = to - l0;
        let k = rem.div_ceil(rem.div_ceil(kmax));
        let c = if lanes { c.min(to - k) } else { c };
        v.push((l0, k, c));
        l0 += k;
    }
    if v.is_empty() {
        v.push((from, 0, from.min(3)));
    }
    v
}

/// How a transform's first pass reads its input.
#[derive(Clone, Copy)]
pub(crate) enum Load<'a> {
    /// Bit-reversed gather of a whole column (every level runs).
    Gather { src: &'a wgpu::Buffer, base: u64, stride: u64 },
    /// The destination itself, already in bit-reversed order.
    InPlace,
    /// Coefficients of a 2^log_src polynomial, times `scale` (and shift^k
    /// from `twist` tables with `lo_bits` low bits); the levels below
    /// log_n - log_src are skipped.
    Expand {
        src: &'a wgpu::Buffer,
        base: u64,
        stride: u64,
        log_src: u32,
        scale: F,
        twist: Option<(&'a wgpu::Buffer, u32)>,
    },
}

/// One column range of a transform: `cols` columns of height 2^log_n at
/// word `dst_base` (stride 2^log_n) of `dst`.
pub(crate) struct Run<'a> {
    pub log_n: u32,
    pub cols: usize,
    pub load: Load<'a>,
    pub dst: &'a wgpu::Buffer,
    pub dst_base: u64,
    pub inverse_roots: bool,
    pub store_scale: Option<F>,
}

impl WgpuBackend {
    fn ntt_kernel(&self, stage: Stage, ctx: &Ctx) -> Result<Arc<crate::device::Kernel>> {
        let src = crate::shader::kernel(self.dev.int64, crate::shader::NTT, 1 << self.dev.tile_log);
        self.dev.kernel(stage, ctx, "ntt", &src, &[false, true, false, false])
    }

    /// Records every pass of `r` into `job`.
    pub(crate) fn record(
        &self,
        job: &mut crate::device::Job,
        stage: Stage,
        ctx: &Ctx,
        tw: &Twiddles,
        r: &Run,
    ) -> Result<()> {
        if r.cols == 0 {
            return Ok(());
        }
        let k = self.ntt_kernel(stage, ctx)?;
        let from = match r.load {
            Load::Gather { .. } | Load::InPlace => 0,
            Load::Expand { log_src, .. } => r.log_n - log_src,
        };
        let gather = matches!(r.load, Load::Gather { .. });
        let passes = plan(from, r.log_n, self.dev.tile_log, gather);
        let table = match (&tw.by_level, r.inverse_roots) {
            (Some(l), true) => &l.1,
            (Some(l), false) => &l.0,
            (None, true) => &tw.inv,
            (None, false) => &tw.fwd,
        };
        let n = 1u64 << r.log_n;
        let dummy = &self.dev.dummy;
        for (idx, &(l0, kk, c)) in passes.iter().enumerate() {
            let last = idx + 1 == passes.len();
            let (mode, src, src_base, src_h, log_src, scale, twist) = match (idx, r.load) {
                (0, Load::Gather { src, base, stride }) => (1, src, base, stride, 0, F::ONE, None),
                (0, Load::Expand { src, base, stride, log_src, scale, twist }) => {
                    (2, src, base, stride, log_src, scale, twist)
                }
                _ => (0, dummy, 0, 0, 0, F::ONE, None),
            };
            let sc = r.store_scale.filter(|_| last);
            let mut pc = vec![
                r.log_n,
                l0,
                kk,
                c,
                mode,
                log_src,
                src_h as u32,
                n as u32,
                src_base as u32,
                r.dst_base as u32,
                tw.log,
                sc.is_some() as u32,
            ];
            pc.extend(words(sc.unwrap_or(F::ONE).value()));
            pc.extend(words(scale.value()));
            pc.extend([twist.is_some() as u32, twist.map_or(0, |t| t.1)]);
            // High lanes where the plan gave a gather's first pass lanes.
            pc.push((gather && idx == 0 && c > l0) as u32);
            pc.push(tw.by_level.is_some() as u32);
            let groups = (n >> (kk + c)) as u32;
            let tw_buf = twist.map_or(dummy, |t| t.0);
            // At most 65535 columns a dispatch (workgroups y); the bases
            // move to each batch's first column.
            for c0 in (0..r.cols).step_by(65535) {
                let nc = (r.cols - c0).min(65535);
                let mut p = pc.clone();
                p[8] = (src_base + if mode == 0 { 0 } else { c0 as u64 * src_h }) as u32;
                p[9] = (r.dst_base + c0 as u64 * n) as u32;
                job.dispatch(&k, &[src, r.dst, table, tw_buf], &p, (groups, nc as u32, 1))?;
            }
        }
        Ok(())
    }

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

    pub(crate) fn twiddles(&self, stage: Stage, ctx: &Ctx, log: u32) -> Result<Arc<Twiddles>> {
        self.tw.get(&self.dev, stage, ctx, log)
    }

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

    /// shift^k for k < 2^log_n as two tables (k's low and high bits), with
    /// the number of low bits.
    fn twist_tables(&self, stage: Stage, ctx: &Ctx, shift: F, log_n: u32) -> Result<(DeviceBuffer, u32)> {
        let lo_bits = log_n.div_ceil(2);
        let lo = backend_api::ext::powers(shift, 1 << lo_bits);
        let hi = backend_api::ext::powers(shift.pow(1u64 << lo_bits), 1 << (log_n - lo_bits));
        let v: Vec<u64> = lo.iter().chain(&hi).map(|p| p.value()).collect();
        Ok((self.dev.upload(stage, ctx, &v)?, lo_bits))
    }

    pub(crate) fn lde(&self, ctx: &Ctx, evals: &WgpuMatrix, log_blowup: u32, shift: F) -> Result<WgpuMatrix> {
        let stage = Stage::CosetLde;
        let log_n = validate::coset_lde(evals, log_blowup, shift)?;
        let _permit = self.admit(stage, ctx, Self::dims(log_n, log_blowup, evals.width))?;
        let mut lde = self.lde_plan(ctx, evals.height, evals.width, log_blowup, shift)?;
        let mut job = self.dev.job(stage, ctx);
        self.record_lde(&mut job, ctx, &mut lde, evals, 0, evals.width)?;
        job.submit()?;
        Ok(lde.out)
    }

    /// `NttOps::upload_coset_lde`: the trace goes up in runs of columns
    /// (at most `OVERLAP_RUN` bytes, a buffer each), each run's extension
    /// submitted with its transfer, so the host stages the next run while
    /// the device extends this one.
    pub(crate) fn upload_lde(
        &self,
        ctx: &Ctx,
        evals: &ColMatrix,
        log_blowup: u32,
        shift: F,
    ) -> Result<(WgpuMatrix, WgpuMatrix)> {
        let stage = Stage::CosetLde;
        let log_n = validate::coset_lde(evals, log_blowup, shift)?;
        let (n, w) = (evals.height(), evals.width());
        let _permit = self.admit(stage, ctx, Self::dims(log_n, log_blowup, w))?;
        let fit = self.columns_per_buffer(stage, ctx, n, w)?;
        let run = (OVERLAP_RUN / (8 * n)).clamp(1, fit);
        // Whole extension columns in a buffer, as everywhere.
        let run = if run >= 3 { run - run % 3 } else { run };
        let trace = self.alloc_matrix_in(stage, ctx, n, w, run, false)?;
        let mut lde = self.lde_plan(ctx, n, w, log_blowup, shift)?;
        let data: &[u64] = bytemuck::cast_slice(evals.data());
        for (buf, first, cols) in trace.pieces() {
            self.dev.write(Stage::Upload, ctx, buf, 0, &data[first * n..(first + cols) * n])?;
            let mut job = self.dev.job(stage, ctx);
            self.record_lde(&mut job, ctx, &mut lde, &trace, first, cols)?;
            job.submit()?;
        }
        Ok((trace, lde.out))
    }

    /// `NttOps::coset_ntt`: natural-order coefficients to a coset's
    /// evaluations.
    pub(crate) fn coset_evals(&self, ctx: &Ctx, coeffs: &WgpuMatrix, log_blowup: u32, shift: F) -> Result<WgpuMatrix> {
        let stage = Stage::CosetLde;
        let log_n = validate::coset_lde(coeffs, log_blowup, shift)?;
        let _permit = self.admit(stage, ctx, Self::dims(log_n, log_blowup, coeffs.width))?;
        let tw = self.twiddles(stage, ctx, log_n + log_blowup)?;
        let mut job = self.dev.job(stage, ctx);
        let out = self.expand(&mut job, ctx, &tw, coeffs, log_blowup, shift)?;
        job.submit()?;
        Ok(out)
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

    /// Records the transform of natural-order coefficients (coefficient k
    /// times shift^k, zero-padded by 2^log_blowup) to evaluations.
    fn expand(
        &self,
        job: &mut Job,
        ctx: &Ctx,
        tw: &Twiddles,
        coeffs: &WgpuMatrix,
        log_blowup: u32,
        shift: F,
    ) -> Result<WgpuMatrix> {
        let stage = Stage::CosetLde;
        let (n, w) = (coeffs.height, coeffs.width);
        let log_n = n.trailing_zeros();
        let out = self.alloc_matrix(stage, ctx, n << log_blowup, w)?;
        let twist = self.twist_tables(stage, ctx, shift, log_n)?;
        for (first, cols) in segments(&[coeffs, &out], 0, w) {
            self.record_expand(job, ctx, tw, &twist, coeffs, &out, first, cols)?;
        }
        Ok(out)
    }

    /// Records `expand` of columns [first, first + cols), which lie in one
    /// buffer of `coeffs` and one of `out`.
    #[allow(clippy::too_many_arguments)]
    fn record_expand(
        &self,
        job: &mut Job,
        ctx: &Ctx,
        tw: &Twiddles,
        twist: &(DeviceBuffer, u32),
        coeffs: &WgpuMatrix,
        out: &WgpuMatrix,
        first: usize,
        cols: usize,
    ) -> Result<()> {
        let n = coeffs.height;
        let log_n = n.trailing_zeros();
        let (src, base) = coeffs.locate(first);
        let (dst, dst_base) = out.locate(first);
        let twist = Some((&*twist.0, twist.1));
        let r = Run {
            log_n: out.height.trailing_zeros(),
            cols,
            load: Load::Expand { src, base, stride: n as u64, log_src: log_n, scale: F::ONE, twist },
            dst,
            dst_base,
            inverse_roots: false,
            store_scale: None,
        };
        self.record(job, Stage::CosetLde, ctx, tw, &r)
    }

    /// What a coset LDE of a `n` x `w` matrix writes and reads besides
    /// its input: the coefficients, the output, the tables.
    fn lde_plan(&self, ctx: &Ctx, n: usize, w: usize, log_blowup: u32, shift: F) -> Result<LdePlan> {
        let stage = Stage::CosetLde;
        let log_n = n.trailing_zeros();
        Ok(LdePlan {
            tw: self.twiddles(stage, ctx, log_n + log_blowup)?,
            coeffs: self.alloc_matrix(stage, ctx, n, w)?,
            out: self.alloc_matrix(stage, ctx, n << log_blowup, w)?,
            twist: self.twist_tables(stage, ctx, shift, log_n)?,
            n_inv: F::new(n as u64).inverse().ok_or_else(|| invalid(stage, "empty trace"))?,
        })
    }

    /// Records the LDE of columns [first, first + cols) of `evals`:
    /// inverse transforms into the coefficients, then their expansion.
    fn record_lde(
        &self,
        job: &mut Job,
        ctx: &Ctx,
        p: &mut LdePlan,
        evals: &WgpuMatrix,
        first: usize,
        cols: usize,
    ) -> Result<()> {
        let stage = Stage::CosetLde;
        let n = evals.height;
        for (c, k) in segments(&[evals, &p.coeffs, &p.out], first, cols) {
            let ((src, base), (dst, dst_base)) = (evals.locate(c), p.coeffs.locate(c));
            let r = Run {
                log_n: n.trailing_zeros(),
                cols: k,
                load: Load::Gather { src, base, stride: n as u64 },
                dst,
                dst_base,
                inverse_roots: true,
                store_scale: Some(p.n_inv),
            };
            self.record(job, stage, ctx, &p.tw, &r)?;
            self.record_expand(job, ctx, &p.tw, &p.twist, &p.coeffs, &p.out, c, k)?;
        }
        Ok(())
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

/// Most bytes of one run of `upload_lde` (the size of an upload's piece).
const OVERLAP_RUN: usize = 64 << 20;

/// An LDE's coefficients, output and tables (`WgpuBackend::lde_plan`).
struct LdePlan {
    tw: Arc<Twiddles>,
    coeffs: WgpuMatrix,
    out: WgpuMatrix,
    twist: (DeviceBuffer, u32),
    n_inv: F,
}

/// Maximal runs (first column, count) of columns [first, first + count)
/// that lie in one buffer of each matrix in `ms`.
pub(crate) fn segments(ms: &[&WgpuMatrix], first: usize, count: usize) -> Vec<(usize, usize)> {
    let mut out = Vec::new();
    let (mut c, end) = (first, first + count);
    while c < end {
        let next = ms.iter().map(|m| (c / m.cpb + 1) * m.cpb).fold(end, usize::min);
        out.push((c, next - c));
        c = next;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::plan;

    #[test]
    fn plans_cover_every_level_once_within_the_tile() {
        for tile in [9u32, 11] {
            for from in 0..6u32 {
                for to in from..=24 {
                    for lanes in [false, true] {
                        let p = plan(from, to, tile, lanes);
                        let mut l = from;
                        for (i, &(l0, k, c)) in p.iter().enumerate() {
                            assert_eq!(l0, l);
                            // High lanes: only a gather's first pass of several,
                            // above its levels.
                            let high = lanes && i == 0 && from == 0 && p.len() > 1;
                            assert!(if high { c + k <= to } else { c <= l0 } && k + c <= tile, "{p:?}");
                            l += k;
                        }
                        assert_eq!(l, to.max(from), "{from}..{to}: {p:?}");
                        assert!(!p.is_empty());
                    }
                }
            }
        }
    }
}
