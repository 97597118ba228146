//! `LogUpOps`: the auxiliary trace from the generated LogUp kernel and a
//! prefix sum of its running-sum column.

use crate::{compose, ext_of, ext_u64, CudaBackend, CudaMatrix};
use backend_api::memory::TableDims;
use backend_api::{validate, Ctx, Ext, LogUpInputs, LogUpOps, Result, Stage, F};

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
        let f = self.dev.generated(
            stage,
            ctx,
            "logup-generated",
            &compose::generate_logup(logup),
            compose::LOGUP_KERNEL,
        )?;
        // Constants: z - tag per interaction, then alpha^1..alpha^max_arity.
        let mut cst: Vec<u64> = logup.tags.iter().flat_map(|&t| ext_u64(inputs.z - F::new(t))).collect();
        debug_assert_eq!(cst.len(), compose::logup_alpha_offset(logup));
        let mut pow = inputs.alpha;
        for _ in 0..logup.max_arity() {
            cst.extend(ext_u64(pow));
            pow *= inputs.alpha;
        }
        let cst_b = self.upload_u64(stage, ctx, &cst)?;
        let width = 3 * logup.aux_width();
        let out = self.dev.alloc(stage, ctx, width * n)?;
        let threads = 128;
        self.dev.launch(
            stage,
            ctx,
            &f,
            Self::grid(n as u64, threads),
            threads,
            0,
            &[inputs.main.ptr(), inputs.fixed.map_or(0, |m| m.ptr()), cst_b.ptr, out.ptr, n.trailing_zeros() as u64],
        )?;
        let sum_col = out.at(3 * k * n);
        self.ext_scan(stage, ctx, sum_col, n)?;
        let last = [sum_col + 8 * (n as u64 - 1), sum_col + 8 * (2 * n as u64 - 1), sum_col + 8 * (3 * n as u64 - 1)];
        let mut sum = [0u64; 3];
        for (s, p) in sum.iter_mut().zip(last) {
            *s = self.download_u64(stage, ctx, p, 1)?[0];
        }
        Ok((self.matrix(out, n, width), ext_of(&sum)))
    }
}

impl CudaBackend {
    /// In-place inclusive prefix sum of the extension column at `col`
    /// (three base columns of `n`): blocks scan their rows, the block
    /// totals are scanned the same way, and added back.
    fn ext_scan(&self, stage: Stage, ctx: &Ctx, col: u64, n: usize) -> Result<()> {
        let blocks = n.div_ceil(kernels_cuda::SCAN_ROWS_PER_BLOCK);
        let sums = self.dev.alloc(stage, ctx, 3 * blocks)?;
        let (n64, b64) = (n as u64, blocks as u64);
        let scan = self.dev.func("ext_scan_blocks");
        self.dev.launch(
            stage,
            ctx,
            scan,
            (blocks as u32, 1, 1),
            kernels_cuda::SCAN_THREADS,
            0,
            &[col, n64, n64, sums.ptr, b64],
        )?;
        if blocks > 1 {
            self.ext_scan(stage, ctx, sums.ptr, blocks)?;
            let add = self.dev.func("ext_add_block_offsets");
            self.dev.launch(stage, ctx, add, Self::grid(n64, 256), 256, 0, &[col, n64, n64, sums.ptr, b64])?;
        }
        Ok(())
    }
}
