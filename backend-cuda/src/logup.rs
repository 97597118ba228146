//! `LogUpOps`: the auxiliary trace from the generated LogUp kernel and a
//! prefix sum of its running-sum column.

use crate::stream::{DevBuf, Scope};
use crate::{compose, ext_of, ext_u64, CudaBackend, CudaMatrix};
use backend_api::memory::TableDims;
use backend_api::{validate, Ctx, Ext, LogUpInputs, LogUpOps, Result, Stage, F};
use std::sync::Arc;

impl LogUpOps for CudaBackend {
    fn logup_aux(&self, ctx: &Ctx, inputs: &LogUpInputs<CudaMatrix>) -> Result<(CudaMatrix, Ext)> {
        let stage = Stage::LogUp;
        validate::logup_aux(inputs)?;
        let logup = inputs.logup;
        let n = inputs.main.height;
        let k = logup.interactions();
        let d = TableDims {
            fixed_width: inputs.fixed.map_or(0, |m| m.width as u64),
            aux_width: logup.aux_width() as u64,
            ..Self::dims(n.trailing_zeros(), 0, inputs.main.width)
        };
        let _permit = self.admit(stage, ctx, d)?;
        let mut s = self.scope(stage, ctx)?;
        let source = compose::generate_logup(logup);
        let f = self.dev.generated(stage, ctx, "logup-generated", &source, compose::LOGUP_KERNEL)?;
        // Constants: z - tag per interaction, then alpha^1..alpha^max_arity.
        let mut cst: Vec<u64> = logup.tags.iter().flat_map(|&t| ext_u64(inputs.z - F::new(t))).collect();
        debug_assert_eq!(cst.len(), compose::logup_alpha_offset(logup));
        let mut pow = inputs.alpha;
        for _ in 0..logup.max_arity() {
            cst.extend(ext_u64(pow));
            pow *= inputs.alpha;
        }
        let cst_b = s.upload(&cst)?;
        let width = 3 * logup.aux_width();
        let out = s.alloc(width * n)?;
        let threads = 128;
        let (main, fixed) = (&inputs.main.buf, inputs.fixed.map(|m| &m.buf));
        let args = [main.ptr, fixed.map_or(0, |b| b.ptr), cst_b.ptr, out.ptr, n.trailing_zeros() as u64];
        let mut bufs = vec![main, &cst_b, &out];
        bufs.extend(fixed);
        s.launch(&f, Self::grid(n as u64, threads), threads, 0, &args, &bufs)?;
        let sum_col = 3 * k * n;
        Self::ext_scan(&mut s, &out, sum_col, n)?;
        // The last row of the running sum's three coordinates.
        let last: Vec<u64> = (1..=3).map(|c| (sum_col + c * n - 1) as u64).collect();
        let sum = Self::gather(&mut s, &out, &last)?;
        Ok((Self::matrix(out, n, width), ext_of(&sum)))
    }
}

impl CudaBackend {
    /// In-place inclusive prefix sum of the extension column at element
    /// `col` of `buf` (three base columns of `n`): blocks scan their rows,
    /// the block totals are scanned the same way, and added back.
    fn ext_scan(s: &mut Scope, buf: &Arc<DevBuf>, col: usize, n: usize) -> Result<()> {
        let blocks = n.div_ceil(kernels_cuda::SCAN_ROWS_PER_BLOCK);
        let sums = s.alloc(3 * blocks)?;
        let (n64, b64, at) = (n as u64, blocks as u64, buf.at(col));
        let dev = s.dev.clone();
        let args = [at, n64, n64, sums.ptr, b64];
        s.launch(
            dev.func("ext_scan_blocks"),
            (blocks as u32, 1, 1),
            kernels_cuda::SCAN_THREADS,
            0,
            &args,
            &[buf, &sums],
        )?;
        if blocks > 1 {
            Self::ext_scan(s, &sums, 0, blocks)?;
            s.launch(dev.func("ext_add_block_offsets"), Self::grid(n64, 256), 256, 0, &args, &[buf, &sums])?;
        }
        Ok(())
    }
}
