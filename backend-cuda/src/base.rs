//! `BackendBase`: transfers, reshape views, drain, a proof's reservation
//! on the memory gate, and the gather the openings and out-of-domain
//! values read through.

use crate::device::Device;
use crate::stream::{DevBuf, Scope};
use crate::{CudaBackend, CudaMatrix, CudaTree};
use backend_api::fault::FaultSite;
use backend_api::gate::Claim;
use backend_api::memory::matrix_bytes;
use backend_api::{validate, BackendBase, ColMatrix, Ctx, DeviceSet, HostPin, Lane, Reservation, Result, Stage, F};
use std::sync::Arc;

impl BackendBase for CudaBackend {
    type Matrix = CudaMatrix;
    type Tree = CudaTree;

    fn name(&self) -> &str {
        "cuda"
    }

    fn upload(&self, ctx: &Ctx, m: &ColMatrix) -> Result<CudaMatrix> {
        let bytes = matrix_bytes(m.height() as u64, m.width() as u64);
        let _permit = self.admit_with(Stage::Upload, ctx, 0, bytes)?;
        let mut s = self.scope(Stage::Upload, ctx)?;
        let data: &[u64] = bytemuck::cast_slice(m.data());
        let b = s.upload(data)?;
        Ok(Self::matrix(b, m.height(), m.width()))
    }

    fn download(&self, ctx: &Ctx, m: &CudaMatrix) -> Result<ColMatrix> {
        let mut s = self.scope(Stage::Download, ctx)?;
        // The device holds canonical values: F's own representation.
        let mut data: Vec<F> =
            backend_api::host::try_zeroed(m.height * m.width).map_err(|e| e.at(Stage::Download, ctx))?;
        s.dtoh(&m.buf, 0, bytemuck::cast_slice_mut(&mut data))?;
        Ok(ColMatrix::new(m.width, m.height, data))
    }

    fn reshape(&self, _ctx: &Ctx, m: &CudaMatrix, height: usize) -> Result<CudaMatrix> {
        validate::reshape(m, height)?;
        Ok(CudaMatrix { buf: m.buf.clone(), height, width: m.width * (m.height / height) })
    }

    fn stride_rows(&self, ctx: &Ctx, m: &CudaMatrix, first: usize, log_stride: u32) -> Result<CudaMatrix> {
        let stage = Stage::CosetLde;
        validate::stride_rows(m, log_stride)?;
        let (n, w) = (m.height, m.width);
        let (log_n, rows) = (n.trailing_zeros(), n >> log_stride);
        let out_bytes = matrix_bytes(rows as u64, w as u64);
        let _permit = self.admit_with(stage, ctx, out_bytes, matrix_bytes(n as u64, w as u64) + out_bytes)?;
        let mut s = self.scope(stage, ctx)?;
        let out = s.alloc(rows * w)?;
        let dev = s.dev.clone();
        let args =
            [m.buf.ptr, out.ptr, log_n as u64, (log_n - log_stride) as u64, log_stride as u64, first as u64, w as u64];
        let grid = Self::grid((rows * w) as u64, 256);
        s.launch(dev.func("stride_rows"), grid, 256, 0, &args, &[&m.buf, &out])?;
        Ok(Self::matrix(out, rows, w))
    }

    fn interleave(&self, ctx: &Ctx, pieces: &[&CudaMatrix]) -> Result<CudaMatrix> {
        let stage = Stage::CosetLde;
        validate::interleave(pieces)?;
        let (rows, w) = (pieces[0].height, pieces[0].width);
        let out_bytes = matrix_bytes((rows * pieces.len()) as u64, w as u64);
        let _permit = self.admit_with(stage, ctx, out_bytes, 2 * out_bytes)?;
        let mut s = self.scope(stage, ctx)?;
        let out = s.alloc(rows * pieces.len() * w)?;
        let dev = s.dev.clone();
        let (log_m, log_count) = (rows.trailing_zeros() as u64, pieces.len().trailing_zeros() as u64);
        for (j, p) in pieces.iter().enumerate() {
            let args = [p.buf.ptr, out.ptr, log_m, log_count, j as u64, w as u64];
            let grid = Self::grid((rows * w) as u64, 256);
            s.launch(dev.func("interleave_piece"), grid, 256, 0, &args, &[&p.buf, &out])?;
        }
        Ok(Self::matrix(out, rows * pieces.len(), w))
    }

    /// Synchronizes the stream and trims the stream-ordered pool to zero.
    fn drain(&self) -> Result<()> {
        self.dev.drain()
    }

    /// Admits the proof's device set through this device's memory gate (the
    /// `Admission` decline site): heaviest first, alone when larger than
    /// the budget, declined after `CudaConfig::admission_timeout`.
    fn reserve(&self, ctx: &Ctx, lanes: &[Lane], set: &DeviceSet) -> Result<Reservation> {
        let (stage, bytes) = (Stage::Upload, set.bytes());
        self.dev.check(FaultSite::Admission, stage, ctx, bytes)?;
        let claim = self.dev.gate.claim(set.resident(), set.transient(), self.dev.admission_timeout).map_err(|r| {
            let reason = format!(
                "memory gate: a proof of {bytes} bytes was not admitted in {:.1?} (budget {}, {} held)",
                r.waited, r.budget, r.held
            );
            self.dev.decline(stage, ctx, bytes, reason)
        })?;
        self.dev.claim_lanes(lanes, &claim);
        Ok(Reservation::held(bytes, Box::new(Reserved { dev: self.dev.clone(), lanes: lanes.to_vec(), _claim: claim })))
    }

    /// Page-locks `m`'s buffer in place (`host::pin`): uploads of it skip
    /// the copy into pinned staging. A refusal (the host's locked-memory
    /// limit) is an `Upload` decline (the `TransferToDevice` site).
    fn pin(&self, ctx: &Ctx, m: &ColMatrix) -> Result<HostPin> {
        let bytes = 8 * m.data().len() as u64;
        self.dev.check(FaultSite::TransferToDevice, Stage::Upload, ctx, bytes)?;
        let pinned = crate::host::pin(&self.dev.ctx, m, |reason| self.dev.decline(Stage::Upload, ctx, bytes, reason))?;
        Ok(HostPin::held(pinned.bytes() as u64, Box::new(pinned)))
    }
}

/// A proof's claim while its reservation lives: its lanes map to it.
struct Reserved {
    dev: Arc<Device>,
    lanes: Vec<Lane>,
    _claim: Arc<Claim>,
}

impl Drop for Reserved {
    fn drop(&mut self) {
        self.dev.release_lanes(&self.lanes);
    }
}

impl CudaBackend {
    /// The elements of `src` at `idx`, on the host.
    pub(crate) fn gather(s: &mut Scope, src: &Arc<DevBuf>, idx: &[u64]) -> Result<Vec<u64>> {
        Ok(Self::gather_all(s, &[(src, idx)])?.remove(0))
    }

    /// The elements of each source at its indices, on the host: one
    /// upload of every index, a launch per source, one download (an
    /// opening's values and path cost one round trip, not two).
    pub(crate) fn gather_all(s: &mut Scope, parts: &[(&Arc<DevBuf>, &[u64])]) -> Result<Vec<Vec<u64>>> {
        let idx: Vec<u64> = parts.iter().flat_map(|(_, i)| i.iter().copied()).collect();
        if idx.is_empty() {
            return Ok(vec![vec![]; parts.len()]);
        }
        let ib = s.upload(&idx)?;
        let out = s.alloc(idx.len())?;
        let threads = 256;
        let dev = s.dev.clone();
        let mut at = 0u64;
        for (src, i) in parts.iter().filter(|(_, i)| !i.is_empty()) {
            let len = i.len() as u64;
            let args = [src.ptr, ib.ptr + 8 * at, out.ptr + 8 * at, len];
            s.launch(dev.func("gather_u64"), Self::grid(len, threads), threads, 0, &args, &[src, &ib, &out])?;
            at += len;
        }
        let mut all = Self::download_u64(s, &out, 0, idx.len())?.into_iter();
        Ok(parts.iter().map(|(_, i)| all.by_ref().take(i.len()).collect()).collect())
    }
}
