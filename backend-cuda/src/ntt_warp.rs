//! Transforms of 2^20 points on kernels-cuda's `ntt_warp` (1024-point
//! transforms held in a warp's registers, two passes through a shared
//! tile): natural-order `ntt` and `intt`, and coset LDEs of 2^20 rows at
//! blowups up to 8 as 2^b twisted 2^20-point transforms. Their tables.

use crate::ntt::Twiddles;
use crate::stream::{column_runs, DevBuf, Scope};
use backend_api::{BackendError, F};
use std::ops::Range;
use std::sync::{Arc, Mutex};

type Result<T> = std::result::Result<T, BackendError>;

/// log2 of the transforms, and the largest log2 blowup of an LDE: a block
/// of `ntt_warp_lde_a` holds all 2^b cosets of at least one n1.
const LOG_N: u32 = kernels_cuda::NTT_WARP_LOG_N;
pub(crate) const MAX_LOG_BLOWUP: u32 = kernels_cuda::NTT_WARP_WARPS.trailing_zeros();

/// The twiddles of `ntt_warp` (2^20 = 1024 x 1024 points, w = w_(2^20)),
/// laid out for its reads: `inner` holds w_1024^e, e < 1024, then the same
/// times 2^-20 (pass B's, for the inverse), small enough to stay in L1;
/// `outer` holds w^(n1 k2) at 1024 n1 + k2, so a warp's reads are
/// coalesced, 8 MiB that stay in L2 across columns.
pub(crate) struct WarpTwiddles {
    inner: Arc<DevBuf>,
    outer: Arc<DevBuf>,
}

impl WarpTwiddles {
    /// `inner` from the host (2048 words), `outer` worked out on the device
    /// from `fwd`, the table of w_(2^log)^k, k < 2^(log - 1).
    pub(crate) fn new(scope: &mut Scope, fwd: &Arc<DevBuf>, log: u32) -> Result<WarpTwiddles> {
        let w_1024 = (10..log).fold(F::two_adic_root(log), |r, _| r * r);
        let powers: Vec<F> = std::iter::successors(Some(F::ONE), |&r| Some(r * w_1024)).take(1024).collect();
        let inv_n = F::new(1u64 << LOG_N).inverse().expect("non-zero");
        let inner: Vec<u64> =
            powers.iter().map(|r| r.value()).chain(powers.iter().map(|&r| (r * inv_n).value())).collect();
        let inner = scope.upload_shared(&inner)?;
        let outer = scope.alloc_shared(1 << LOG_N)?;
        let f = scope.dev.func("ntt_warp_outer");
        let args = [outer.ptr, fwd.ptr, log as u64];
        scope.launch(f, ((1 << LOG_N) / 256, 1, 1), 256, 0, &args, &[&outer, fwd])?;
        Ok(WarpTwiddles { inner, outer })
    }
}

/// An LDE's twist table for the last coset asked for (`shift`, 2^b):
/// twist[j 2^20 + 1024 n1 + n2] = a_j^(n1 + 1024 n2), a_j = shift
/// w_(2^(20+b))^j, 2^(20+b) words made on the device (`ntt_warp_twist`).
/// Kept across calls as the twiddles are, out of no proof's claim: a
/// prover's LDEs all use one coset.
pub(crate) struct TwistCache(Mutex<Option<Twist>>);

struct Twist {
    shift: u64,
    log_blowup: u32,
    table: Arc<DevBuf>,
}

impl TwistCache {
    pub(crate) fn new() -> TwistCache {
        TwistCache(Mutex::new(None))
    }

    pub(crate) fn get(&self, scope: &mut Scope, shift: F, log_blowup: u32) -> Result<Arc<DevBuf>> {
        let hit = |t: &Option<Twist>| {
            t.as_ref().filter(|t| t.shift == shift.value() && t.log_blowup == log_blowup).map(|t| t.table.clone())
        };
        if let Some(table) = hit(&self.0.lock().unwrap_or_else(|p| p.into_inner())) {
            return Ok(table);
        }
        // lo[1024 j + n1] = a_j^n1, hi[1024 j + n2] = a_j^(1024 n2).
        let w = F::two_adic_root(LOG_N + log_blowup);
        let (mut lo, mut hi) = (Vec::new(), Vec::new());
        for j in 0..1u64 << log_blowup {
            let a = shift * w.pow(j);
            lo.extend(backend_api::ext::powers(a, 1024).into_iter().map(|p| p.value()));
            hi.extend(backend_api::ext::powers(a.pow(1024), 1024).into_iter().map(|p| p.value()));
        }
        // Like the table, out of no proof's claim (freed with the scope).
        let (lo, hi) = (scope.upload_shared(&lo)?, scope.upload_shared(&hi)?);
        let table = scope.alloc_shared(1 << (LOG_N + log_blowup))?;
        let f = scope.dev.func("ntt_warp_twist");
        let args = [table.ptr, lo.ptr, hi.ptr];
        scope.launch(f, ((1 << (LOG_N + log_blowup)) / 256, 1, 1), 256, 0, &args, &[&table, &lo, &hi])?;
        // Published only once made, as the twiddles are (another proof's
        // stream takes it without waiting on this scope).
        scope.sync()?;
        *self.0.lock().unwrap_or_else(|p| p.into_inner()) =
            Some(Twist { shift: shift.value(), log_blowup, table: table.clone() });
        Ok(table)
    }
}

/// A matrix's buffer, its column stride in elements, and the element its
/// first column starts at.
#[derive(Clone, Copy)]
pub(crate) struct Strided<'b> {
    buf: &'b Arc<DevBuf>,
    stride: u64,
    first: u64,
}

impl<'b> Strided<'b> {
    pub(crate) fn new(buf: &'b Arc<DevBuf>, stride: u64) -> Strided<'b> {
        Strided { buf, stride, first: 0 }
    }

    /// The same columns from `elems` further into the buffer: a later
    /// row, or (a multiple of the stride) a later column.
    pub(crate) fn offset(self, elems: u64) -> Strided<'b> {
        Strided { first: self.first + elems, ..self }
    }

    /// The address of column `c`.
    fn at(&self, c: usize) -> u64 {
        self.buf.ptr + 8 * (self.first + c as u64 * self.stride)
    }
}

fn tables<'t>(scope: &Scope, tw: &'t Twiddles) -> Result<&'t WarpTwiddles> {
    tw.warp.as_ref().ok_or_else(|| scope.dev.err(scope.stage, scope.ctx, "the warp NTT's twiddles were not made"))
}

const THREADS: u32 = 32 * kernels_cuda::NTT_WARP_WARPS;
const SMEM: u32 = kernels_cuda::NTT_WARP_SHARED_BYTES;

/// Pass A: the source's column sets (reversed for the inverse, which is
/// the forward transform of x[-n]) into rows of `dst`, times w^(n1 k2).
fn pass_a(
    scope: &mut Scope,
    t: &WarpTwiddles,
    reverse: bool,
    cols: &Range<usize>,
    from: Strided,
    to: Strided,
) -> Result<()> {
    let f = scope.dev.func("ntt_warp_a");
    let blocks = 1024 / kernels_cuda::NTT_WARP_WARPS;
    for (c0, nc) in column_runs(cols.clone()) {
        let args = [from.at(c0), from.stride, to.at(c0), to.stride, t.outer.ptr, t.inner.ptr, reverse as u64];
        scope.launch(f, (blocks, nc, 1), THREADS, SMEM, &args, &[from.buf, to.buf, &t.outer, &t.inner])?;
    }
    Ok(())
}

/// Pass B in place over rows of 2^row_log words; `scaled`: the inverse's
/// 2^-20 on its inner twiddles.
fn pass_b(
    scope: &mut Scope,
    t: &WarpTwiddles,
    scaled: bool,
    row_log: u32,
    cols: &Range<usize>,
    data: Strided,
) -> Result<()> {
    let f = scope.dev.func("ntt_warp_b");
    let inner = t.inner.ptr + if scaled { 8 * 1024 } else { 0 };
    let blocks = (1u32 << row_log) / kernels_cuda::NTT_WARP_WARPS;
    for (c0, nc) in column_runs(cols.clone()) {
        let args = [data.at(c0), data.stride, inner, row_log as u64];
        scope.launch(f, (blocks, nc, 1), THREADS, SMEM, &args, &[data.buf, &t.inner])?;
    }
    Ok(())
}

/// Natural-order forward or inverse transforms of 2^20 points, columns
/// `cols` of `src` into the same of `dst` (distinct buffers); the source
/// is kept.
pub(crate) fn natural(
    scope: &mut Scope,
    tw: &Twiddles,
    inverse: bool,
    cols: &Range<usize>,
    src: Strided,
    dst: Strided,
) -> Result<()> {
    let t = tables(scope, tw)?;
    pass_a(scope, t, inverse, cols, src, dst)?;
    pass_b(scope, t, inverse, 10, cols, dst)
}

/// The coset LDE of columns `cols` of 2^20 evaluations at blowup 2^b
/// (b <= MAX_LOG_BLOWUP) into `out` (2^(20+b) a column), through their
/// coefficients in `coeffs`: the inverse transform, then `extend`.
pub(crate) fn lde(
    scope: &mut Scope,
    tw: &Twiddles,
    twist: &Arc<DevBuf>,
    log_blowup: u32,
    cols: &Range<usize>,
    (evals, coeffs, out): (Strided, Strided, Strided),
) -> Result<()> {
    natural(scope, tw, true, cols, evals, coeffs)?;
    extend(scope, tw, twist, log_blowup, cols, coeffs, out)
}

/// The coset LDE of columns `cols` of 2^20 natural-order coefficients at
/// blowup 2^b (b <= MAX_LOG_BLOWUP) into `out` (2^(20+b) a column): one
/// pass A over every coset j of the coefficients times `twist`
/// (TwistCache), its rows interleaved in `out`, then pass B in place over
/// rows of 2^(10+b) words.
pub(crate) fn extend(
    scope: &mut Scope,
    tw: &Twiddles,
    twist: &Arc<DevBuf>,
    log_blowup: u32,
    cols: &Range<usize>,
    coeffs: Strided,
    out: Strided,
) -> Result<()> {
    if log_blowup > MAX_LOG_BLOWUP {
        let msg = format!("the warp LDE takes blowups up to 2^{MAX_LOG_BLOWUP}, not 2^{log_blowup}");
        return Err(scope.dev.err(scope.stage, scope.ctx, msg));
    }
    let t = tables(scope, tw)?;
    let f = scope.dev.func("ntt_warp_lde_a");
    let blocks = (1024u32 << log_blowup) / kernels_cuda::NTT_WARP_WARPS;
    for (c0, nc) in column_runs(cols.clone()) {
        let args = [
            coeffs.at(c0),
            coeffs.stride,
            out.at(c0),
            out.stride,
            t.outer.ptr,
            t.inner.ptr,
            twist.ptr,
            log_blowup as u64,
        ];
        let bufs = [coeffs.buf, out.buf, &t.outer, &t.inner, twist];
        scope.launch(f, (blocks, nc, 1), THREADS, SMEM, &args, &bufs)?;
    }
    pass_b(scope, t, false, 10 + log_blowup, cols, out)
}
