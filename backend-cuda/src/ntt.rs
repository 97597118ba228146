//! NTT pass planning and execution (see kernels-cuda's ntt.cu), and the
//! twiddle tables every transform reads.

use crate::ntt_warp::{self, Strided, WarpTwiddles};
use crate::stream::{column_runs, DevBuf, Scope};
use backend_api::{BackendError, F};
use std::sync::{Arc, Mutex};

/// Tables of w^k and w^-k, k < 2^(log-1), for the 2^log-th root w, and
/// the warp NTT's where it is on and log covers it.
pub(crate) struct Twiddles {
    pub(crate) log: u32,
    pub(crate) fwd: Arc<DevBuf>,
    pub(crate) inv: Arc<DevBuf>,
    pub(crate) warp: Option<WarpTwiddles>,
}

pub(crate) struct TwiddleCache(Mutex<Option<Arc<Twiddles>>>);

impl TwiddleCache {
    pub(crate) fn new() -> TwiddleCache {
        TwiddleCache(Mutex::new(None))
    }

    fn current(&self) -> Option<Arc<Twiddles>> {
        self.0.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }

    /// Tables valid for every domain of size up to 2^log, made on the
    /// scope's stream when the cached ones are too small. The lock is not
    /// held while they are made (the upload may run other rayon work on
    /// this thread, which may want them too); two threads may both make
    /// them, and the larger is kept.
    pub(crate) fn get(&self, scope: &mut Scope, log: u32) -> Result<Arc<Twiddles>, BackendError> {
        if let Some(t) = self.current().filter(|t| t.log >= log) {
            return Ok(t);
        }
        let log = log.max(12);
        let half = 1usize << (log - 1);
        let w = F::two_adic_root(log);
        let wi = w.inverse().expect("roots of unity are non-zero");
        let mut fwd = Vec::with_capacity(half);
        let mut inv = Vec::with_capacity(half);
        let (mut a, mut b) = (F::ONE, F::ONE);
        for _ in 0..half {
            fwd.push(a.value());
            inv.push(b.value());
            a *= w;
            b *= wi;
        }
        // Kept by the backend across proofs: owned by no proof's claim.
        let (fwd, inv) = (scope.upload_shared(&fwd)?, scope.upload_shared(&inv)?);
        let warp_log = kernels_cuda::NTT_WARP_LOG_N;
        let warp =
            if scope.dev.ntt_warp && log >= warp_log { Some(WarpTwiddles::new(scope, &fwd, log)?) } else { None };
        let t = Arc::new(Twiddles { log, fwd, inv, warp });
        // Other proofs' streams take the tables from the cache without
        // waiting on this scope (its end event does not exist yet), and a
        // small upload is still in flight on return: publish them only once
        // they have landed. (Without this a concurrent proof could read
        // half-copied twiddles: seen as a segment whose main root differed
        // between two computations, four proofs in flight on one H200.)
        scope.sync()?;
        let mut g = self.0.lock().unwrap_or_else(|p| p.into_inner());
        match g.as_ref() {
            Some(old) if old.log >= t.log => Ok(old.clone()),
            _ => {
                *g = Some(t.clone());
                Ok(t)
            }
        }
    }
}

/// How the first pass reads its input.
#[derive(Clone, Copy)]
pub(crate) struct Load {
    pub ptr: u64,
    pub stride: u64,
    /// 0 plain, 1 bit-reversed gather, 2 expand bit-reversed coefficients,
    /// 3 expand natural-order coefficients, 4 and 5 the same zero-padded.
    pub mode: u64,
    pub log_src_n: u32,
    pub log_blowup: u32,
    pub twist_lo: u64,
    pub twist_hi: u64,
    pub twist_lo_bits: u32,
    pub scale: F,
}

impl Load {
    pub(crate) fn plain(ptr: u64, stride: u64) -> Load {
        Load {
            ptr,
            stride,
            mode: 0,
            log_src_n: 0,
            log_blowup: 0,
            twist_lo: 0,
            twist_hi: 0,
            twist_lo_bits: 0,
            scale: F::ONE,
        }
    }
    pub(crate) fn bitrev(ptr: u64, stride: u64) -> Load {
        Load { mode: 1, ..Load::plain(ptr, stride) }
    }
}

/// Splits levels [from, to) into passes (l0, k, c): k levels from bit l0,
/// tiles of 2^c consecutive indices, 2^(k+c) elements in shared memory.
/// With `lanes_first` (a bit-reversed gather from level 0) a transform
/// that needs several passes gets 2^3 high lanes in its first pass too
/// (see `lanes_high` in ntt.cu).
pub(crate) fn plan(from: u32, to: u32, tile_log: u32, lanes_first: bool) -> Vec<(u32, u32, u32)> {
    let mut v = Vec::new();
    let mut l0 = from;
    while l0 < to {
        let lanes = lanes_first && l0 == from && to - from > tile_log;
        let c = if lanes { 3 } else { l0.min(3) };
        let kmax = tile_log - c;
        let rem = to - l0;
        let passes = rem.div_ceil(kmax);
        let k = rem.div_ceil(passes);
        let c = if lanes { c.min(to - k) } else { c };
        v.push((l0, k, c));
        l0 += k;
    }
    if v.is_empty() {
        // A transform-only pass (no butterflies) when the load must still run.
        v.push((from, 0, 0));
    }
    v
}

/// The buffers a transform touches besides the twiddles: what its first
/// pass loads (the source, twist tables) and its destination.
pub(crate) struct Touches<'b>(pub &'b [&'b Arc<DevBuf>]);

/// Runs butterfly levels [from, to) of a size-2^log_n transform on `cols`
/// columns, reading the first pass through `load` and writing `dst`
/// (stride dst_stride) in place afterwards. DIT levels run upwards, DIF
/// levels downwards. The last pass multiplies by `store_scale`.
#[allow(clippy::too_many_arguments)]
pub(crate) fn run(
    scope: &mut Scope,
    touches: Touches,
    tw: &Twiddles,
    inverse_roots: bool,
    dif: bool,
    log_n: u32,
    from: u32,
    to: u32,
    cols: usize,
    load: Load,
    dst: u64,
    dst_stride: u64,
    store_scale: F,
) -> Result<(), BackendError> {
    if cols == 0 {
        return Ok(());
    }
    let dev = scope.dev.clone();
    let table_buf = if inverse_roots { &tw.inv } else { &tw.fwd };
    let mut bufs: Vec<&Arc<DevBuf>> = touches.0.to_vec();
    bufs.push(table_buf);
    let lanes_first = dev.ntt_lanes && load.mode == 1 && from == 0 && !dif;
    let lanes_high = lanes_first && to - from > dev.ntt_tile_log;
    let mut passes = plan(from, to, dev.ntt_tile_log, lanes_first);
    if dif {
        passes.reverse();
    }
    let table = if inverse_roots { tw.inv.ptr } else { tw.fwd.ptr };
    let f = dev.func("ntt_pass");
    let last = passes.len() - 1;
    for (idx, &(l0, k, c)) in passes.iter().enumerate() {
        let e_log = k + c;
        let threads = ((1u32 << e_log) / 2).clamp(1, dev.ntt_threads);
        let blocks = 1u64 << (log_n - e_log);
        let ld = if idx == 0 { load } else { Load::plain(dst, dst_stride) };
        let scale = if idx == last { store_scale } else { F::ONE };
        for (c0, nc) in column_runs(0..cols) {
            let args = [
                ld.ptr + 8 * c0 as u64 * ld.stride,
                dst + 8 * c0 as u64 * dst_stride,
                ld.stride,
                dst_stride,
                log_n as u64,
                l0 as u64,
                k as u64,
                c as u64,
                dif as u64,
                table,
                tw.log as u64,
                ld.mode,
                ld.log_src_n as u64,
                ld.log_blowup as u64,
                ld.twist_lo,
                ld.twist_hi,
                ld.twist_lo_bits as u64,
                ld.scale.value(),
                scale.value(),
                dev.ntt_radix as u64,
                (lanes_high && idx == 0) as u64,
            ];
            if blocks > u32::MAX as u64 / 2 {
                return Err(dev.err(scope.stage, scope.ctx, "transform too large"));
            }
            scope.launch(f, (blocks as u32, nc, 1), threads, 8 << e_log, &args, &bufs)?;
        }
    }
    Ok(())
}

/// Natural-order forward or inverse NTT of `cols` columns of height
/// 2^log_n, from `src` (element 0, stride src_stride) into `dst`.
#[allow(clippy::too_many_arguments)]
pub(crate) fn natural(
    scope: &mut Scope,
    tw: &Twiddles,
    inverse: bool,
    log_n: u32,
    cols: usize,
    src: &Arc<DevBuf>,
    src_stride: u64,
    dst: &Arc<DevBuf>,
    dst_stride: u64,
) -> Result<(), BackendError> {
    let scale = if inverse { F::new(1u64 << log_n).inverse().expect("non-zero") } else { F::ONE };
    if scope.dev.ntt_warp && log_n == kernels_cuda::NTT_WARP_LOG_N && src.ptr != dst.ptr {
        return ntt_warp::natural(
            scope,
            tw,
            inverse,
            &(0..cols),
            Strided::new(src, src_stride),
            Strided::new(dst, dst_stride),
        );
    }
    let (src_ptr, dst_ptr) = (src.ptr, dst.ptr);
    run(
        scope,
        Touches(&[src, dst]),
        tw,
        inverse,
        false,
        log_n,
        0,
        log_n,
        cols,
        Load::bitrev(src_ptr, src_stride),
        dst_ptr,
        dst_stride,
        scale,
    )
}
