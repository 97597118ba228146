//! `NttOps`: forward and inverse NTTs, the coset LDE and the coset NTT (pass planning
//! and launches in `ntt`).

use crate::ntt::{self, Load, Touches, Twiddles};
use crate::ntt_warp::{self, Strided};
use crate::stream::{column_runs, DevBuf, Scope};
use crate::{CudaBackend, CudaMatrix};
use backend_api::memory::matrix_bytes;
use backend_api::{validate, ColMatrix, Ctx, NttOps, Result, Stage, F};
use std::sync::Arc;

impl CudaBackend {
    fn transform(&self, ctx: &Ctx, m: &CudaMatrix, inverse: bool) -> Result<CudaMatrix> {
        let stage = if inverse { Stage::InverseNtt } else { Stage::Ntt };
        let log_n = validate::ntt(stage, m)?;
        let _permit = self.admit(stage, ctx, Self::dims(log_n, 0, m.width))?;
        let mut s = self.scope(stage, ctx)?;
        let tw = self.twiddles(&mut s, log_n)?;
        let (h, w) = (m.height, m.width);
        let out = s.alloc(h * w)?;
        ntt::natural(&mut s, &tw, inverse, log_n, w, &m.buf, h as u64, &out, h as u64)?;
        Ok(Self::matrix(out, h, w))
    }
}

impl NttOps for CudaBackend {
    fn ntt(&self, ctx: &Ctx, coeffs: &CudaMatrix) -> Result<CudaMatrix> {
        self.transform(ctx, coeffs, false)
    }

    fn intt(&self, ctx: &Ctx, evals: &CudaMatrix) -> Result<CudaMatrix> {
        self.transform(ctx, evals, true)
    }

    /// In place: the values are permuted to bit-reversed order, then the
    /// inverse transform's passes run over them (as `intt`'s do, from a
    /// bit-reversed load). Only the twiddle tables are allocated, before
    /// the first write; a failure after it loses the values, so it is a
    /// `Device` error, not a decline.
    fn intt_in_place(&self, ctx: &Ctx, evals: &CudaMatrix) -> Result<CudaMatrix> {
        let stage = Stage::InverseNtt;
        let log_n = validate::ntt(stage, evals)?;
        let (n, w) = (evals.height, evals.width);
        let _permit = self.admit_with(stage, ctx, 0, matrix_bytes(n as u64, w as u64))?;
        let mut s = self.scope(stage, ctx)?;
        let tw = self.twiddles(&mut s, log_n)?;
        let buf = &evals.buf;
        let permute = s.dev.func("bitrev_permute");
        for (c0, nc) in column_runs(0..w) {
            let args = [buf.at(c0 * n), log_n as u64, nc as u64];
            let grid = (Self::grid(n as u64, 256).0, nc, 1);
            let launched = s.launch(permute, grid, 256, 0, &args, &[buf]);
            // The first launch declines before it writes; later ones do not.
            launched.map_err(|e| if c0 == 0 { e } else { e.input_lost(stage, ctx.table) })?;
        }
        let scale = F::new(n as u64).inverse().expect("non-zero");
        let (load, touches) = (Load::plain(buf.ptr, n as u64), Touches(&[buf]));
        ntt::run(&mut s, touches, &tw, true, false, log_n, 0, log_n, w, load, buf.ptr, n as u64, scale)
            .map_err(|e| e.input_lost(stage, ctx.table))?;
        Ok(Self::matrix(buf.clone(), n, w))
    }

    fn coset_lde(&self, ctx: &Ctx, evals: &CudaMatrix, log_blowup: u32, shift: F) -> Result<CudaMatrix> {
        let stage = Stage::CosetLde;
        let log_n = validate::coset_lde(evals, log_blowup, shift)?;
        let _permit = self.admit(stage, ctx, Self::dims(log_n, log_blowup, evals.width))?;
        let mut s = self.scope(stage, ctx)?;
        let log_big = log_n + log_blowup;
        let tw = self.twiddles(&mut s, log_big)?;
        let (n, w) = (evals.height, evals.width);
        // The output before the scratch, as in `upload_extend`.
        let out = s.alloc((n << log_blowup) * w)?;
        let lde = self.lde(&mut s, &tw, log_n, log_blowup, w, shift)?;
        self.lde_columns(&mut s, &tw, &lde, &evals.buf, &out, 0, w)?;
        Ok(Self::matrix(out, n << log_blowup, w))
    }

    /// The upload and the LDE overlapped: columns are extended in runs as
    /// they land, while later runs are in transfer.
    fn upload_coset_lde(
        &self,
        ctx: &Ctx,
        evals: &ColMatrix,
        log_blowup: u32,
        shift: F,
    ) -> Result<(CudaMatrix, CudaMatrix)> {
        let stage = Stage::CosetLde;
        let log_n = validate::coset_lde(evals, log_blowup, shift)?;
        let _permit = self.admit(stage, ctx, Self::dims(log_n, log_blowup, evals.width()))?;
        let mut s = self.scope(stage, ctx)?;
        self.upload_extend(&mut s, evals, log_blowup, shift, |_, _, _| Ok(()))
    }

    fn coset_ntt(&self, ctx: &Ctx, coeffs: &CudaMatrix, log_blowup: u32, shift: F) -> Result<CudaMatrix> {
        let stage = Stage::CosetLde;
        let log_n = validate::coset_lde(coeffs, log_blowup, shift)?;
        // Its output and the twist tables: no inverse transform's scratch.
        let w = coeffs.width as u64;
        let twists = 8 * ((1u64 << log_n.div_ceil(2)) + (1u64 << (log_n / 2)));
        let loose = matrix_bytes(1 << log_n, w) + matrix_bytes(1 << (log_n + log_blowup), w) + twists;
        let _permit = self.admit_with(stage, ctx, twists, loose)?;
        let mut s = self.scope(stage, ctx)?;
        let tw = self.twiddles(&mut s, log_n + log_blowup)?;
        let mode = if self.skip_zero_levels { 3 } else { 5 };
        let (n, w) = (coeffs.height, coeffs.width);
        // The output before the tables, as in `upload_extend`.
        let out = s.alloc((n << log_blowup) * w)?;
        let twist = Twist::new(&mut s, log_n, shift, F::ONE)?;
        self.expand(&mut s, &tw, &twist, &coeffs.buf, &out, (log_n, log_blowup, 0, w), mode)?;
        Ok(Self::matrix(out, n << log_blowup, w))
    }

    fn coset_rows(&self, ctx: &Ctx, coeffs: &CudaMatrix, shift: F, positions: &[usize]) -> Result<Vec<Vec<F>>> {
        // The whole coset is a few microseconds of the device's time.
        validate::coset_rows(coeffs, shift, positions)?;
        backend_api::MerkleOps::rows(self, ctx, &self.coset_ntt(ctx, coeffs, 0, shift)?, positions)
    }

    fn fold_coeffs(&self, ctx: &Ctx, coeffs: &CudaMatrix, log_fold: u32, c: F) -> Result<CudaMatrix> {
        let stage = Stage::CosetLde;
        validate::fold_coeffs(coeffs, log_fold)?;
        let (n, w) = (coeffs.height, coeffs.width);
        let (log_n, m) = (n.trailing_zeros(), n >> log_fold);
        let out_bytes = matrix_bytes(m as u64, w as u64);
        let _permit = self.admit_with(stage, ctx, 0, matrix_bytes(n as u64, w as u64) + out_bytes)?;
        let mut s = self.scope(stage, ctx)?;
        let out = s.alloc(m * w)?;
        let dev = s.dev.clone();
        let args = [coeffs.buf.ptr, out.ptr, log_n as u64, (log_n - log_fold) as u64, w as u64, c.value()];
        let threads = 256;
        s.launch(
            dev.func("fold_coeffs"),
            Self::grid((m * w) as u64, threads),
            threads,
            0,
            &args,
            &[&coeffs.buf, &out],
        )?;
        Ok(Self::matrix(out, m, w))
    }
}

/// Most elements of one overlapped upload's run (64 MiB).
const OVERLAP_RUN_ELEMS: usize = 8 << 20;

/// The factors an LDE's first forward pass multiplies coefficient k by,
/// `factor * shift^k`, as two small tables (low and high bits of k).
pub(crate) struct Twist {
    pub(crate) lo: Arc<DevBuf>,
    pub(crate) hi: Arc<DevBuf>,
    pub(crate) lo_bits: u32,
}

impl Twist {
    pub(crate) fn new(s: &mut Scope, log_n: u32, shift: F, factor: F) -> Result<Twist> {
        let lo_bits = log_n.div_ceil(2);
        let step = shift.pow(1u64 << lo_bits);
        let lo: Vec<u64> =
            backend_api::ext::powers(shift, 1 << lo_bits).into_iter().map(|p| (p * factor).value()).collect();
        let hi: Vec<u64> =
            backend_api::ext::powers(step, 1 << (log_n - lo_bits)).into_iter().map(|p| p.value()).collect();
        Ok(Twist { lo: s.upload(&lo)?, hi: s.upload(&hi)?, lo_bits })
    }
}

/// What a coset LDE of `width` columns works with besides its input and
/// output: the inverse transform's coefficients and the twist tables.
struct Lde {
    log_n: u32,
    log_blowup: u32,
    work: LdeWork,
}

/// The shared-memory passes' scratch and twist tables, or the warp path's
/// (`ntt_warp::lde`), where it takes the LDE.
enum LdeWork {
    Passes { coeffs: Option<Arc<DevBuf>>, twist: Twist },
    Warp { coeffs: Arc<DevBuf>, twist: Arc<DevBuf> },
}

impl CudaBackend {
    /// An LDE's scratch and tables: at 2^20 rows and blowups up to 8 with
    /// the warp NTT on, the warp path's.
    fn lde(&self, s: &mut Scope, tw: &Twiddles, log_n: u32, log_blowup: u32, width: usize, shift: F) -> Result<Lde> {
        let work = if Self::warp_extends(tw, log_n, log_blowup) {
            LdeWork::Warp { coeffs: s.alloc(width << log_n)?, twist: self.warp_twist.get(s, shift, log_blowup)? }
        } else {
            let coeffs = if log_n > 0 { Some(s.alloc(width << log_n)?) } else { None };
            // Coefficient k is multiplied by shift^k / n.
            let n_inv = F::new(1u64 << log_n).inverse().expect("non-zero");
            LdeWork::Passes { coeffs, twist: Twist::new(s, log_n, shift, n_inv)? }
        };
        Ok(Lde { log_n, log_blowup, work })
    }

    /// Whether the warp path (`ntt_warp::extend`) takes an LDE of 2^log_n
    /// rows at blowup 2^log_blowup, with twiddles `tw`.
    pub(crate) fn warp_extends(tw: &Twiddles, log_n: u32, log_blowup: u32) -> bool {
        tw.warp.is_some() && log_n == kernels_cuda::NTT_WARP_LOG_N && log_blowup <= ntt_warp::MAX_LOG_BLOWUP
    }

    /// Uploads `evals` and extends it on `s`, a run of columns at a time as
    /// each lands; `after_run(s, lde, columns)` once the extension of the
    /// first `columns` columns is queued. Returns the upload and its LDE.
    pub(crate) fn upload_extend(
        &self,
        s: &mut Scope,
        evals: &ColMatrix,
        log_blowup: u32,
        shift: F,
        mut after_run: impl FnMut(&mut Scope, &Arc<DevBuf>, usize) -> Result<()>,
    ) -> Result<(CudaMatrix, CudaMatrix)> {
        let (n, w) = (evals.height(), evals.width());
        let log_n = n.trailing_zeros();
        let tw = self.twiddles(s, log_n + log_blowup)?;
        // The output first: asked for after the scratch, its allocation
        // often waited 0.5-6 ms on the host for the pool to map memory,
        // likely because the scratch had taken a previous output's block.
        let out = s.alloc((n << log_blowup) * w)?;
        let trace = s.alloc(n * w)?;
        let lde = self.lde(s, &tw, log_n, log_blowup, w, shift)?;
        // About `upload_runs` runs, each at most 64 MiB.
        let run_columns = ((n * w / self.upload_runs).min(OVERLAP_RUN_ELEMS) / n).max(1);
        let data: &[u64] = bytemuck::cast_slice(evals.data());
        s.htod_overlapped(data, &trace, run_columns * n, |s, first, len| {
            self.lde_columns(s, &tw, &lde, &trace, &out, first / n, len / n)?;
            after_run(s, &out, (first + len) / n)
        })?;
        Ok((Self::matrix(trace, n, w), Self::matrix(out, n << log_blowup, w)))
    }

    /// Columns [c0, c0 + cols) of `evals` extended into the same columns
    /// of `out`: on the warp path as `ntt_warp::lde` says, else the inverse
    /// transform to bit-reversed coefficients (unscaled), then the forward
    /// one.
    #[allow(clippy::too_many_arguments)]
    fn lde_columns(
        &self,
        s: &mut Scope,
        tw: &Twiddles,
        lde: &Lde,
        evals: &Arc<DevBuf>,
        out: &Arc<DevBuf>,
        c0: usize,
        cols: usize,
    ) -> Result<()> {
        let n = 1usize << lde.log_n;
        let (coeffs, twist) = match &lde.work {
            LdeWork::Warp { coeffs, twist } => {
                let big = (n << lde.log_blowup) as u64;
                let bufs = (Strided::new(evals, n as u64), Strided::new(coeffs, n as u64), Strided::new(out, big));
                return ntt_warp::lde(s, tw, twist, lde.log_blowup, &(c0..c0 + cols), bufs);
            }
            LdeWork::Passes { coeffs, twist } => (coeffs, twist),
        };
        let coeffs = match coeffs {
            Some(tmp) => {
                let load = Load::plain(evals.at(c0 * n), n as u64);
                let touches = Touches(&[evals, tmp]);
                let dst = tmp.at(c0 * n);
                ntt::run(s, touches, tw, true, true, lde.log_n, 0, lde.log_n, cols, load, dst, n as u64, F::ONE)?;
                tmp
            }
            None => evals,
        };
        let mode = if self.skip_zero_levels { 2 } else { 4 };
        self.expand(s, tw, twist, coeffs, out, (lde.log_n, lde.log_blowup, c0, cols), mode)
    }

    /// The forward transform of an LDE's first pass reading n coefficients
    /// per column (`mode`: bit-reversed or natural order, see `ntt::Load`)
    /// of columns [c0, c0 + cols), each multiplied by its twist, into the
    /// same columns of `out`.
    #[allow(clippy::too_many_arguments)]
    fn expand(
        &self,
        s: &mut Scope,
        tw: &Twiddles,
        twist: &Twist,
        coeffs: &Arc<DevBuf>,
        out: &Arc<DevBuf>,
        (log_n, log_blowup, c0, cols): (u32, u32, usize, usize),
        mode: u64,
    ) -> Result<()> {
        let (n, log_big) = (1usize << log_n, log_n + log_blowup);
        let big = n << log_blowup;
        let load = Load {
            ptr: coeffs.at(c0 * n),
            stride: n as u64,
            mode,
            log_src_n: log_n,
            log_blowup,
            twist_lo: twist.lo.ptr,
            twist_hi: twist.hi.ptr,
            twist_lo_bits: twist.lo_bits,
            scale: F::ONE,
        };
        let from = if self.skip_zero_levels { log_blowup } else { 0 };
        let touches = Touches(&[coeffs, &twist.lo, &twist.hi, out]);
        ntt::run(s, touches, tw, false, false, log_big, from, log_big, cols, load, out.at(c0 * big), big as u64, F::ONE)
    }
}
