//! `BackendBase`: transfers, reshape views, drain, and the gather the
//! openings and out-of-domain values read through.

use crate::{CudaBackend, CudaMatrix, CudaTree};
use backend_api::memory::{matrix_bytes, stage_bytes};
use backend_api::{validate, BackendBase, ColMatrix, Ctx, Result, Stage, F};

impl BackendBase for CudaBackend {
    type Matrix = CudaMatrix;
    type Tree = CudaTree;

    fn name(&self) -> &str {
        "cuda"
    }

    fn upload(&self, ctx: &Ctx, m: &ColMatrix) -> Result<CudaMatrix> {
        let (h, w) = (m.height(), m.width());
        let bytes = if h.is_power_of_two() {
            stage_bytes(Stage::Upload, &Self::dims(h.trailing_zeros(), 0, w))
        } else {
            matrix_bytes(h as u64, w as u64)
        };
        let _permit = self.admit_bytes(Stage::Upload, ctx, bytes)?;
        let data: &[u64] = bytemuck::cast_slice(m.data());
        let b = self.upload_u64(Stage::Upload, ctx, data)?;
        Ok(self.matrix(b, m.height(), m.width()))
    }

    fn download(&self, ctx: &Ctx, m: &CudaMatrix) -> Result<ColMatrix> {
        let len = m.height * m.width;
        let v = self.download_u64(Stage::Download, ctx, m.ptr(), len)?;
        let data: Vec<F> = v.into_iter().map(F::new).collect();
        Ok(ColMatrix::new(m.width, m.height, data))
    }

    fn reshape(&self, _ctx: &Ctx, m: &CudaMatrix, height: usize) -> Result<CudaMatrix> {
        validate::reshape(m, height)?;
        Ok(CudaMatrix { buf: m.buf.clone(), height, width: m.width * (m.height / height) })
    }

    /// Synchronizes the stream and trims the stream-ordered pool to zero.
    fn drain(&self) -> Result<()> {
        self.dev.drain()
    }
}

impl CudaBackend {
    pub(crate) fn gather(&self, stage: Stage, ctx: &Ctx, src: u64, idx: &[u64]) -> Result<Vec<u64>> {
        if idx.is_empty() {
            return Ok(vec![]);
        }
        let ib = self.upload_u64(stage, ctx, idx)?;
        let out = self.dev.alloc(stage, ctx, idx.len())?;
        let threads = 256;
        self.dev.launch(
            stage,
            ctx,
            self.dev.func("gather_u64"),
            Self::grid(idx.len() as u64, threads),
            threads,
            0,
            &[src, ib.ptr, out.ptr, idx.len() as u64],
        )?;
        self.download_u64(stage, ctx, out.ptr, idx.len())
    }
}
