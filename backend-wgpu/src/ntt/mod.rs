//! NTTs, the coset LDE and the quotient split: radix-2 DIT passes over
//! workgroup tiles (shaders/ntt.wgsl), per column, one dispatch per
//! buffer of the matrix.
//!
//! The LDE is an inverse transform to natural-order coefficients (1/n
//! folded into its last store), then a forward transform of the larger
//! size whose first pass reads each coefficient, multiplied by shift^k,
//! straight into the position it reaches after the zero-padded levels, so
//! those levels are skipped. The coset NTT is that second transform alone.
//!
//! This module plans and records the passes; its submodules are the
//! entry points: plain transforms, the LDE and coset NTT, the split.

mod lde;
mod split;
mod transform;

use crate::device::{Device, DeviceBuffer};
use crate::{words, WgpuBackend, WgpuMatrix};
use backend_api::{Ctx, Result, Stage, F};
use std::sync::{Arc, Mutex};

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

    pub(crate) fn twiddles(&self, stage: Stage, ctx: &Ctx, log: u32) -> Result<Arc<Twiddles>> {
        self.tw.get(&self.dev, stage, ctx, log)
    }
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
