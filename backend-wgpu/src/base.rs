//! `BackendBase`: transfers, reshape views, drain, and the row gathers
//! (`stride_rows`, `interleave`) that pieces of an LDE and the
//! out-of-domain values read through, on the device rather than through
//! the host.

use crate::device::groups_for;
use crate::ntt::segments;
use crate::{WgpuBackend, WgpuMatrix, WgpuTree};
use backend_api::host::try_zeroed;
use backend_api::{validate, BackendBase, ColMatrix, Ctx, Result, Stage, F};

const ROWS: &str = include_str!("shaders/rows.wgsl");

/// One strided copy of every column of a matrix (`rows.wgsl`): 2^log_k
/// rows, source row `src.0 + k 2^src.1` (wrapping), destination row
/// `dst.0 + k 2^dst.1`.
struct RowCopy {
    log_k: u32,
    src: (u32, u32),
    dst: (u32, u32),
}

impl WgpuBackend {
    /// Records `c` from `from` into `to` (the same width), run by run of
    /// columns that share a buffer on both sides, and submits it.
    fn copy_rows(&self, ctx: &Ctx, from: &WgpuMatrix, to: &WgpuMatrix, c: RowCopy) -> Result<()> {
        let stage = Stage::CosetLde;
        let k = self.dev.kernel(stage, ctx, "rows", &crate::shader::kernel(self.dev.int64, ROWS, 1), &[false, true])?;
        let (log_src_h, log_dst_h) = (from.height.trailing_zeros(), to.height.trailing_zeros());
        let mut job = self.dev.job(stage, ctx);
        for (first, cols) in segments(&[from, to], 0, from.width) {
            let ((src, src_base), (dst, dst_base)) = (from.locate(first), to.locate(first));
            let pc = [
                src_base as u32,
                dst_base as u32,
                log_src_h,
                log_dst_h,
                c.log_k,
                cols as u32,
                c.src.0,
                c.src.1,
                c.dst.0,
                c.dst.1,
            ];
            job.dispatch(&k, &[src, dst], &pc, groups_for((cols as u64) << c.log_k))?;
        }
        job.submit()
    }
}

impl BackendBase for WgpuBackend {
    type Matrix = WgpuMatrix;
    type Tree = WgpuTree;

    fn name(&self) -> &str {
        &self.name
    }

    fn upload(&self, ctx: &Ctx, m: &ColMatrix) -> Result<WgpuMatrix> {
        let stage = Stage::Upload;
        let (h, w) = (m.height(), m.width());
        let _permit = self.admit_bytes(stage, ctx, (8 * h * w) as u64)?;
        let out = self.alloc_matrix(stage, ctx, h, w)?;
        let data: &[u64] = bytemuck::cast_slice(m.data());
        for (buf, first, cols) in out.pieces() {
            self.dev.write(stage, ctx, buf, 0, &data[first * h..(first + cols) * h])?;
        }
        Ok(out)
    }

    fn download(&self, ctx: &Ctx, m: &WgpuMatrix) -> Result<ColMatrix> {
        let stage = Stage::Download;
        let parts: Vec<(&wgpu::Buffer, u64, u64)> =
            m.pieces().map(|(b, _, cols)| (b, 0, (cols * m.height) as u64)).collect();
        // The device holds canonical values: F's own representation.
        let mut data: Vec<F> = try_zeroed(m.height * m.width).map_err(|e| e.at(stage, ctx))?;
        self.dev.read_into(stage, ctx, &parts, bytemuck::cast_slice_mut(&mut data))?;
        Ok(ColMatrix::new(m.width, m.height, data))
    }

    fn reshape(&self, _ctx: &Ctx, m: &WgpuMatrix, height: usize) -> Result<WgpuMatrix> {
        validate::reshape(m, height)?;
        let a = m.height / height;
        Ok(WgpuMatrix { bufs: m.bufs.clone(), height, width: m.width * a, cpb: m.cpb * a })
    }

    fn stride_rows(&self, ctx: &Ctx, m: &WgpuMatrix, first: usize, log_stride: u32) -> Result<WgpuMatrix> {
        let stage = Stage::CosetLde;
        validate::stride_rows(m, log_stride)?;
        let (n, w) = (m.height, m.width);
        let rows = n >> log_stride;
        let _permit = self.admit_bytes(stage, ctx, (8 * rows * w) as u64)?;
        let out = self.alloc_matrix(stage, ctx, rows, w)?;
        let from = (first & (n - 1)) as u32;
        self.copy_rows(ctx, m, &out, RowCopy { log_k: rows.trailing_zeros(), src: (from, log_stride), dst: (0, 0) })?;
        Ok(out)
    }

    fn interleave(&self, ctx: &Ctx, pieces: &[&WgpuMatrix]) -> Result<WgpuMatrix> {
        let stage = Stage::CosetLde;
        validate::interleave(pieces)?;
        let (rows, w) = (pieces[0].height, pieces[0].width);
        let _permit = self.admit_bytes(stage, ctx, (8 * rows * pieces.len() * w) as u64)?;
        let out = self.alloc_matrix(stage, ctx, rows * pieces.len(), w)?;
        let log_count = pieces.len().trailing_zeros();
        for (j, p) in pieces.iter().enumerate() {
            let c = RowCopy { log_k: rows.trailing_zeros(), src: (0, 0), dst: (j as u32, log_count) };
            self.copy_rows(ctx, p, &out, c)?;
        }
        Ok(out)
    }

    /// Frees the idle buffers kept for reuse and waits for the queue:
    /// wgpu returns freed memory once the work that used it has finished.
    fn drain(&self) -> Result<()> {
        self.dev.buffers.release();
        self.synchronize()
    }
}
