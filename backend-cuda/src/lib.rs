//! The CUDA Kiln backend: a [`CudaBackend`] implementing the `Backend`
//! trait family of `backend-api` on cudarc, with run-time loading (no CUDA
//! needed to build; a missing driver or NVRTC is a clean
//! `BackendError::Unavailable`).
//!
//! This crate owns the host side of the GPU path: device discovery
//! ([`probe`]), the context and its stream, device memory from the
//! stream-ordered pool, pinned staging for large transfers, NVRTC
//! compilation of the kernels in `kernels-cuda` for the device's own
//! compute capability (cached on disk, see [`nvrtc`]), constraint
//! composition and LogUp kernels generated from the IR, and every stage's
//! launches.
//!
//! Tuning knobs, read when a backend is made (defaults measured fastest on
//! the H200, docs/gpu/RESULTS.md): `KILN_CUDA_NTT_TILE_LOG` (10..=13),
//! `KILN_CUDA_NTT_THREADS` (256), `KILN_CUDA_NTT_RADIX=2`,
//! `KILN_CUDA_NTT_LANES=0`, `KILN_CUDA_LDE_SKIP=0`,
//! `KILN_CUDA_COMPOSE=interpret`.
//!
//! All work of one backend runs in order on one stream, so a buffer is
//! only ever read on the stream that produced it; data stay on the device
//! between stages and reach the host only through `download` and the
//! operations whose results the protocol needs there.

mod compose;
mod device;
mod ntt;
pub mod nvrtc;

pub use backend_api::fault::FaultInjector;
use backend_api::gate;
pub use device::{check_libraries, probe, DeviceInfo};

/// Memory left out of the default budget of the memory gate
/// (`backend_api::gate`): the driver's own needs, kernel images, the pinned
/// staging, fragmentation of the pool.
pub const SAFETY_MARGIN_BYTES: u64 = 2 << 30;

/// The composition kernel's CUDA source for a constraint system (what
/// `compose` compiles; exposed so CI can compile it without a GPU).
pub fn compose_source(cs: &backend_api::ConstraintSystem) -> String {
    compose::generate(cs)
}

/// The generated LogUp kernel's CUDA source for a table's interactions.
pub fn logup_source(logup: &backend_api::LogUp) -> String {
    compose::generate_logup(logup)
}

use backend_api::fault::FaultSite;
use backend_api::memory::{matrix_bytes, stage_bytes, TableDims};
use backend_api::{
    validate, BackendBase, BackendError, ColMatrix, ComposeInputs, ComposeOps, Coset, Ctx, DeepOps, DeepPoint,
    DeviceMatrix, DeviceTree, Digest, Ext, FriOps, HashKind, LogUpInputs, LogUpOps, MerkleOps, NttOps, Result,
    RowOpening, Stage, F,
};
use device::{DevBuf, Device};
use ntt::{Load, TwiddleCache};
use std::sync::Arc;

/// A column-major matrix in device memory (canonical u64 values).
/// `reshape` views share the allocation.
#[derive(Clone)]
pub struct CudaMatrix {
    buf: Arc<DevBuf>,
    height: usize,
    width: usize,
}

impl DeviceMatrix for CudaMatrix {
    fn height(&self) -> usize {
        self.height
    }
    fn width(&self) -> usize {
        self.width
    }
}

impl CudaMatrix {
    fn ptr(&self) -> u64 {
        self.buf.ptr
    }
}

/// A Merkle tree in device memory: every level's digests (4 u64 each),
/// leaves first; the root is also kept on the host.
pub struct CudaTree {
    digests: Arc<DevBuf>,
    root: Digest,
    leaves: usize,
    hash: HashKind,
}

impl DeviceTree for CudaTree {
    fn root(&self) -> Digest {
        self.root
    }
    fn leaves(&self) -> usize {
        self.leaves
    }
    fn hash(&self) -> HashKind {
        self.hash
    }
}

/// Memory limits of a [`CudaBackend`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CudaConfig {
    /// The byte budget of the device's memory gate (process-wide, per
    /// ordinal; the last one given wins). Default: free memory when the
    /// first backend of the ordinal is made, minus [`SAFETY_MARGIN_BYTES`].
    pub memory_budget_bytes: Option<u64>,
    /// Allocate from a stream-ordered pool of our own capped at this many
    /// bytes (allocations past the cap are refused by the driver, a real
    /// device decline); default: the device's default pool, uncapped.
    pub pool_limit_bytes: Option<u64>,
    /// How composition runs (`KILN_CUDA_COMPOSE=interpret` selects the
    /// interpreter when this is left at the default).
    pub compose: ComposeKernel,
}

/// The composition kernel: generated per constraint system and compiled by
/// NVRTC (the default: faster on every AIR measured, see the `compose`
/// module), or one fixed kernel
/// interpreting an instruction list (no compilation per AIR; systems that
/// need more value slots than it has fall back to the generated kernel).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum ComposeKernel {
    #[default]
    Generated,
    Interpreted,
}

/// The CUDA backend on one device.
pub struct CudaBackend {
    dev: Arc<Device>,
    tw: TwiddleCache,
    /// LDE strategy: skip the zero-padded levels (first pass tiles of
    /// 2^min(log_blowup, 3) elements; the default, 1.2-1.4x faster at
    /// 2^20 x 64 on the H200, docs/gpu/logs/ntt-tuning.log) or run them in
    /// shared memory (whole contiguous tiles, `KILN_CUDA_LDE_SKIP=0`).
    skip_zero_levels: bool,
    compose: ComposeKernel,
}

/// Per-stage GPU time, measured with CUDA events.
pub struct Timed<T> {
    pub value: T,
    pub ms: f32,
}

impl CudaBackend {
    /// Opens device `ordinal` and compiles (or loads from the cache) every
    /// kernel. `Unavailable` when there is no driver, no NVRTC or no such
    /// device.
    pub fn new(ordinal: usize) -> Result<CudaBackend> {
        CudaBackend::with_config(ordinal, CudaConfig::default())
    }

    /// [`CudaBackend::new`] with memory limits.
    pub fn with_config(ordinal: usize, config: CudaConfig) -> Result<CudaBackend> {
        let skip_zero_levels = std::env::var("KILN_CUDA_LDE_SKIP").map_or(true, |v| v != "0");
        let compose = match config.compose {
            ComposeKernel::Generated if std::env::var("KILN_CUDA_COMPOSE").is_ok_and(|v| v == "interpret") => {
                ComposeKernel::Interpreted
            }
            c => c,
        };
        let with_interpreter = compose == ComposeKernel::Interpreted;
        let dev = Device::new(ordinal, config.pool_limit_bytes, config.memory_budget_bytes, with_interpreter)?;
        Ok(CudaBackend { dev, tw: TwiddleCache::new(), skip_zero_levels, compose })
    }

    /// Compiles and loads, in parallel, the kernels generated for these
    /// tables (composition, LogUp), so a prove that follows compiles
    /// nothing. A statement of the same AIR with other public values needs
    /// the same kernels. Optional: a kernel not prepared is compiled at
    /// its first use.
    pub fn prepare(&self, tables: &[(&backend_api::ConstraintSystem, Option<&backend_api::LogUp>)]) -> Result<()> {
        let mut kernels = vec![];
        for (cs, logup) in tables {
            if self.compose == ComposeKernel::Generated {
                kernels.push(("compose", compose::generate(cs), compose::KERNEL));
            }
            if let Some(l) = logup {
                kernels.push(("logup-generated", compose::generate_logup(l), compose::LOGUP_KERNEL));
            }
        }
        self.dev.prepare(&kernels)
    }

    /// Takes now what the first prove would otherwise wait for: the pinned
    /// staging buffers, and `reserve_bytes` of device memory held by the
    /// pool for the allocations to come.
    pub fn warm_up(&self, reserve_bytes: u64) -> Result<()> {
        self.dev.warm_up(reserve_bytes)
    }

    pub fn device(&self) -> &DeviceInfo {
        &self.dev.info
    }

    /// The decline sites of this backend (armed by tests under the
    /// `fault-injection` feature).
    pub fn faults(&self) -> &FaultInjector {
        &self.dev.faults
    }

    /// The memory gate's budget for this device, and the bytes it has
    /// admitted now.
    pub fn memory_gate(&self) -> (u64, u64) {
        (self.dev.gate.budget(), self.dev.gate.in_use())
    }

    /// How many requests of this device's memory gate (all backends of the
    /// process) had to wait for other work to release memory.
    pub fn memory_gate_waits(&self) -> u64 {
        self.dev.gate.waits()
    }

    /// Admits `bytes` of `stage`'s work through the memory gate (the
    /// `Admission` decline site).
    fn admit_bytes(&self, stage: Stage, ctx: &Ctx, bytes: u64) -> Result<gate::Permit> {
        self.dev.check(FaultSite::Admission, stage, ctx, bytes)?;
        self.dev.gate.admit(bytes).map_err(|r| {
            self.dev.decline(
                stage,
                ctx,
                bytes,
                format!("memory gate: budget {} bytes, {} admitted to other work", r.budget, r.used),
            )
        })
    }

    /// Admits the bytes the memory model gives `stage` for a table shape.
    fn admit(&self, stage: Stage, ctx: &Ctx, d: TableDims) -> Result<gate::Permit> {
        self.admit_bytes(stage, ctx, stage_bytes(stage, &d))
    }

    /// Waits for all queued work.
    pub fn synchronize(&self) -> Result<()> {
        self.dev.sync(Stage::Download, &Ctx::table("-"))
    }

    /// Runs `f` and returns its value with the GPU time between two events
    /// recorded around it on the backend's stream.
    pub fn time<T>(&self, f: impl FnOnce(&Self) -> Result<T>) -> Result<Timed<T>> {
        let ctx = Ctx::table("timing");
        let err = |e: cudarc::driver::DriverError| self.dev.err(Stage::Download, &ctx, e);
        let flags = Some(cudarc::driver::sys::CUevent_flags::CU_EVENT_DEFAULT);
        let start = self.dev.ctx.new_event(flags).map_err(err)?;
        let end = self.dev.ctx.new_event(flags).map_err(err)?;
        start.record(&self.dev.stream).map_err(err)?;
        let value = f(self)?;
        end.record(&self.dev.stream).map_err(err)?;
        end.synchronize().map_err(err)?;
        let ms = start.elapsed_ms(&end).map_err(err)?;
        Ok(Timed { value, ms })
    }

    fn twiddles(&self, stage: Stage, ctx: &Ctx, log: u32) -> Result<Arc<ntt::Twiddles>> {
        self.tw.get(&self.dev, stage, ctx, log)
    }

    fn matrix(&self, buf: DevBuf, height: usize, width: usize) -> CudaMatrix {
        CudaMatrix { buf: Arc::new(buf), height, width }
    }

    fn upload_u64(&self, stage: Stage, ctx: &Ctx, v: &[u64]) -> Result<DevBuf> {
        let b = self.dev.alloc(stage, ctx, v.len())?;
        if !v.is_empty() {
            self.dev.htod(stage, ctx, v, b.ptr)?;
        }
        Ok(b)
    }

    fn download_u64(&self, stage: Stage, ctx: &Ctx, ptr: u64, len: usize) -> Result<Vec<u64>> {
        let mut v = vec![0u64; len];
        if len > 0 {
            self.dev.dtoh(stage, ctx, ptr, &mut v)?;
        }
        Ok(v)
    }

    /// A table shape with `width` main columns.
    fn dims(log_n: u32, log_blowup: u32, width: usize) -> TableDims {
        TableDims { log_n, log_blowup, fixed_width: 0, main_width: width as u64, aux_width: 0, parts: 0 }
    }

    fn grid(n: u64, threads: u32) -> (u32, u32, u32) {
        (n.div_ceil(threads as u64).max(1) as u32, 1, 1)
    }
}

fn ext_u64(e: Ext) -> [u64; 3] {
    [e.0[0].value(), e.0[1].value(), e.0[2].value()]
}

fn ext_of(v: &[u64]) -> Ext {
    Ext::new(F::new(v[0]), F::new(v[1]), F::new(v[2]))
}

fn digest_bytes(d: &[u64]) -> Digest {
    let mut out = [0u8; 32];
    for (k, w) in d.iter().take(4).enumerate() {
        out[8 * k..8 * k + 8].copy_from_slice(&w.to_le_bytes());
    }
    out
}

/// Offset (in digests) of each level of a tree with `leaves` leaves.
fn level_offsets(leaves: usize) -> Vec<usize> {
    let mut v = vec![0];
    let mut n = leaves;
    let mut off = 0;
    while n > 1 {
        off += n;
        n /= 2;
        v.push(off);
    }
    v
}

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
    fn transform(&self, ctx: &Ctx, m: &CudaMatrix, inverse: bool) -> Result<CudaMatrix> {
        let stage = if inverse { Stage::InverseNtt } else { Stage::Ntt };
        let log_n = validate::ntt(stage, m)?;
        let _permit = self.admit(stage, ctx, Self::dims(log_n, 0, m.width))?;
        let tw = self.twiddles(stage, ctx, log_n)?;
        let (h, w) = (m.height, m.width);
        let out = self.dev.alloc(stage, ctx, h * w)?;
        ntt::natural(&self.dev, stage, ctx, &tw, inverse, log_n, w, m.ptr(), h as u64, out.ptr, h as u64)?;
        Ok(self.matrix(out, h, w))
    }
}

impl NttOps for CudaBackend {
    fn ntt(&self, ctx: &Ctx, coeffs: &CudaMatrix) -> Result<CudaMatrix> {
        self.transform(ctx, coeffs, false)
    }

    fn intt(&self, ctx: &Ctx, evals: &CudaMatrix) -> Result<CudaMatrix> {
        self.transform(ctx, evals, true)
    }

    fn coset_lde(&self, ctx: &Ctx, evals: &CudaMatrix, log_blowup: u32, shift: F) -> Result<CudaMatrix> {
        let stage = Stage::CosetLde;
        let log_n = validate::coset_lde(evals, log_blowup, shift)?;
        let _permit = self.admit(stage, ctx, Self::dims(log_n, log_blowup, evals.width))?;
        let log_big = log_n + log_blowup;
        let tw = self.twiddles(stage, ctx, log_big)?;
        let (n, w) = (evals.height, evals.width);
        let big = n << log_blowup;
        let dev = &self.dev;
        // Inverse transform to bit-reversed coefficients (unscaled).
        let tmp;
        let coeffs = if log_n > 0 {
            tmp = dev.alloc(stage, ctx, n * w)?;
            ntt::run(
                dev,
                stage,
                ctx,
                &tw,
                true,
                true,
                log_n,
                0,
                log_n,
                w,
                Load::plain(evals.ptr(), n as u64),
                tmp.ptr,
                n as u64,
                F::ONE,
            )?;
            tmp.ptr
        } else {
            evals.ptr()
        };
        // Coefficient k is multiplied by shift^k / n: two small tables.
        let lo_bits = log_n.div_ceil(2);
        let n_inv = F::new(n as u64).inverse().expect("non-zero");
        let step = shift.pow(1u64 << lo_bits);
        let lo: Vec<u64> =
            backend_api::ext::powers(shift, 1 << lo_bits).into_iter().map(|p| (p * n_inv).value()).collect();
        let hi: Vec<u64> =
            backend_api::ext::powers(step, 1 << (log_n - lo_bits)).into_iter().map(|p| p.value()).collect();
        let lo_b = self.upload_u64(stage, ctx, &lo)?;
        let hi_b = self.upload_u64(stage, ctx, &hi)?;
        let out = dev.alloc(stage, ctx, big * w)?;
        let load = Load {
            ptr: coeffs,
            stride: n as u64,
            mode: if self.skip_zero_levels { 2 } else { 4 },
            log_src_n: log_n,
            log_blowup,
            twist_lo: lo_b.ptr,
            twist_hi: hi_b.ptr,
            twist_lo_bits: lo_bits,
            scale: F::ONE,
        };
        let from = if self.skip_zero_levels { log_blowup } else { 0 };
        ntt::run(dev, stage, ctx, &tw, false, false, log_big, from, log_big, w, load, out.ptr, big as u64, F::ONE)?;
        Ok(self.matrix(out, big, w))
    }
}

impl MerkleOps for CudaBackend {
    fn commit(&self, ctx: &Ctx, m: &CudaMatrix, hash: HashKind) -> Result<CudaTree> {
        let stage = Stage::MerkleCommit;
        validate::commit(m)?;
        let _permit = self.admit(stage, ctx, Self::dims(m.height.trailing_zeros(), 0, m.width))?;
        let n = m.height;
        let dev = &self.dev;
        let digests = dev.alloc(stage, ctx, (2 * n - 1) * 4)?;
        let (leaf_k, node_k) = match hash {
            HashKind::Blake3 => ("blake3_leaves", "blake3_nodes"),
            HashKind::Keccak256 => ("keccak_leaves", "keccak_nodes"),
        };
        let threads = 128;
        dev.launch(
            stage,
            ctx,
            dev.func(leaf_k),
            Self::grid(n as u64, threads),
            threads,
            0,
            &[m.ptr(), n as u64, m.width as u64, digests.ptr],
        )?;
        let offs = level_offsets(n);
        let mut count = n / 2;
        for l in 1..offs.len() {
            let src = digests.at(4 * offs[l - 1]);
            let dst = digests.at(4 * offs[l]);
            dev.launch(
                stage,
                ctx,
                dev.func(node_k),
                Self::grid(count as u64, threads),
                threads,
                0,
                &[src, dst, count as u64],
            )?;
            count /= 2;
        }
        let root = self.download_u64(stage, ctx, digests.at(4 * (2 * n - 2)), 4)?;
        Ok(CudaTree { digests: Arc::new(digests), root: digest_bytes(&root), leaves: n, hash })
    }

    fn open(&self, ctx: &Ctx, m: &CudaMatrix, tree: &CudaTree, rows: &[usize]) -> Result<Vec<RowOpening>> {
        let stage = Stage::MerkleOpen;
        validate::open(m, tree, rows)?;
        if rows.is_empty() {
            return Ok(vec![]);
        }
        let (h, w) = (m.height, m.width);
        let offs = level_offsets(tree.leaves);
        let depth = offs.len() - 1;
        let mut vidx = Vec::with_capacity(rows.len() * w);
        let mut pidx = Vec::with_capacity(rows.len() * depth * 4);
        for &r in rows {
            vidx.extend((0..w).map(|c| (c * h + r) as u64));
            for (l, off) in offs.iter().take(depth).enumerate() {
                let sib = (r >> l) ^ 1;
                pidx.extend((0..4).map(|k| (4 * (off + sib) + k) as u64));
            }
        }
        let values = self.gather(stage, ctx, m.ptr(), &vidx)?;
        let path = self.gather(stage, ctx, tree.digests.ptr, &pidx)?;
        Ok(rows
            .iter()
            .enumerate()
            .map(|(k, _)| RowOpening {
                values: values[k * w..(k + 1) * w].iter().map(|&v| F::new(v)).collect(),
                path: (0..depth).map(|l| digest_bytes(&path[(k * depth + l) * 4..])).collect(),
            })
            .collect())
    }
}

impl CudaBackend {
    fn gather(&self, stage: Stage, ctx: &Ctx, src: u64, idx: &[u64]) -> Result<Vec<u64>> {
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

impl ComposeOps for CudaBackend {
    fn compose(&self, ctx: &Ctx, inputs: &ComposeInputs<CudaMatrix>) -> Result<CudaMatrix> {
        let stage = Stage::Compose;
        validate::compose(inputs)?;
        let cs = inputs.constraints;
        let log_big = inputs.domain.log_size;
        let log_n = inputs.log_trace_height;
        let log_blowup = log_big - log_n;
        let d = TableDims {
            fixed_width: inputs.fixed.map_or(0, |m| m.width as u64),
            aux_width: inputs.aux.map_or(0, |m| m.width as u64).div_ceil(3),
            ..Self::dims(log_n, log_blowup, inputs.main.width)
        };
        let _permit = self.admit(stage, ctx, d)?;
        let big = inputs.domain.size();
        let tw = self.twiddles(stage, ctx, log_big)?;
        let program = match self.compose {
            ComposeKernel::Interpreted => compose::interpreter_program(cs),
            ComposeKernel::Generated => None,
        };
        // Constants: challenges, auxiliary values, publics, alpha^k and the
        // values of the nodes that read no column.
        let cl = compose::const_layout(cs, true);
        let mut cst = vec![0u64; cl.len.max(1)];
        for (k, c) in inputs.challenges.iter().enumerate() {
            cst[cl.challenges + 3 * k..cl.challenges + 3 * k + 3].copy_from_slice(&ext_u64(*c));
        }
        for (k, c) in inputs.aux_values.iter().enumerate() {
            cst[cl.aux_values + 3 * k..cl.aux_values + 3 * k + 3].copy_from_slice(&ext_u64(*c));
        }
        for (k, p) in inputs.publics.iter().enumerate() {
            cst[cl.publics + k] = p.value();
        }
        let mut a = Ext::ONE;
        for k in 0..cs.constraints.len() {
            cst[cl.alphas + 3 * k..cl.alphas + 3 * k + 3].copy_from_slice(&ext_u64(a));
            a *= inputs.alpha;
        }
        for (o, v) in compose::hoisted_values(cs, &cl, inputs.challenges, inputs.publics, inputs.aux_values) {
            cst[o..o + 3].copy_from_slice(&ext_u64(v));
        }
        // 1 / (x^n - 1) takes 2^log_blowup values on the coset: x^n = s^n w_B^j.
        let shift = inputs.domain.shift;
        let sn = shift.pow(1u64 << log_n);
        let wb = F::two_adic_root(log_blowup);
        let zinv: Vec<u64> =
            (0..1u64 << log_blowup).map(|j| (sn * wb.pow(j) - F::ONE).inverse().unwrap_or(F::ZERO).value()).collect();
        let g_inv = F::two_adic_root(log_n).inverse().expect("non-zero");
        let cst_b = self.upload_u64(stage, ctx, &cst)?;
        let zinv_b = self.upload_u64(stage, ctx, &zinv)?;
        let out = self.dev.alloc(stage, ctx, big * 3)?;
        let threads = 128;
        // Both kernels take these; the interpreter its instruction list
        // before them and the domain set after.
        let shared = [
            inputs.main.ptr(),
            inputs.aux.map_or(0, |m| m.ptr()),
            inputs.fixed.map_or(0, |m| m.ptr()),
            cst_b.ptr,
            zinv_b.ptr,
            tw.fwd.ptr,
            out.ptr,
            log_big as u64,
            log_blowup as u64,
            shift.value(),
            tw.log as u64,
            g_inv.value(),
        ];
        let (f, args, _prog_b) = match program {
            Some((prog, domains)) => {
                let prog_b = self.upload_u64(stage, ctx, &prog)?;
                let mut args = vec![prog_b.ptr, prog.len() as u64 / 2];
                args.extend(shared);
                args.push(domains);
                (self.dev.func("compose_interp").clone(), args, Some(prog_b))
            }
            None => {
                let f = self.dev.generated(stage, ctx, "compose", &compose::generate(cs), compose::KERNEL)?;
                (f, shared.to_vec(), None)
            }
        };
        self.dev.launch(stage, ctx, &f, Self::grid(big as u64, threads), threads, 0, &args)?;
        Ok(self.matrix(out, big, 3))
    }

    fn split_quotient(
        &self,
        ctx: &Ctx,
        quotient: &CudaMatrix,
        domain: Coset,
        log_trace_height: u32,
        parts: usize,
    ) -> Result<CudaMatrix> {
        let stage = Stage::QuotientSplit;
        validate::split_quotient(quotient, domain, log_trace_height, parts)?;
        let d =
            TableDims { parts: parts as u64, ..Self::dims(log_trace_height, domain.log_size - log_trace_height, 0) };
        let _permit = self.admit(stage, ctx, d)?;
        let dev = &self.dev;
        let log_big = domain.log_size;
        let big = domain.size();
        let n = 1usize << log_trace_height;
        let tw = self.twiddles(stage, ctx, log_big)?;
        let coeffs = dev.alloc(stage, ctx, big * 3)?;
        ntt::natural(dev, stage, ctx, &tw, true, log_big, 3, quotient.ptr(), big as u64, coeffs.ptr, big as u64)?;
        let bound = parts * n;
        if bound < big {
            let flag = dev.zeros(stage, ctx, 1)?;
            let span = (big - bound) as u64 * 3;
            let threads = 256;
            dev.launch(
                stage,
                ctx,
                dev.func("any_nonzero_tail"),
                Self::grid(span, threads),
                threads,
                0,
                &[coeffs.ptr, big as u64, big as u64, bound as u64, 3, flag.ptr],
            )?;
            let f = self.download_u64(stage, ctx, flag.ptr, 1)?;
            if f[0] != 0 {
                return Err(BackendError::ConstraintsNotSatisfied { table: ctx.table.to_string(), bound });
            }
        }
        let out = dev.alloc(stage, ctx, big * 3 * parts)?;
        let shift_inv = domain.shift.inverse().ok_or_else(|| BackendError::invalid(stage, "coset shift is zero"))?;
        let log_blowup = log_big - log_trace_height;
        for j in 0..parts {
            let load = Load {
                ptr: coeffs.at(j * n),
                stride: big as u64,
                mode: if self.skip_zero_levels { 3 } else { 5 },
                log_src_n: log_trace_height,
                log_blowup,
                twist_lo: 0,
                twist_hi: 0,
                twist_lo_bits: 0,
                scale: shift_inv.pow((j * n) as u64),
            };
            let from = if self.skip_zero_levels { log_blowup } else { 0 };
            ntt::run(
                dev,
                stage,
                ctx,
                &tw,
                false,
                false,
                log_big,
                from,
                log_big,
                3,
                load,
                out.at(3 * j * big),
                big as u64,
                F::ONE,
            )?;
        }
        Ok(self.matrix(out, big, 3 * parts))
    }
}

impl DeepOps for CudaBackend {
    fn evaluate_at(&self, ctx: &Ctx, m: &CudaMatrix, domain: Coset, points: &[Ext]) -> Result<Vec<Vec<Ext>>> {
        let stage = Stage::OutOfDomain;
        validate::evaluate_at(m, domain)?;
        let dev = &self.dev;
        let (big, w) = (domain.size(), m.width);
        if points.is_empty() {
            return Ok(vec![]);
        }
        if w == 0 {
            return Ok(vec![vec![]; points.len()]);
        }
        let _permit = self.admit(stage, ctx, Self::dims(domain.log_size, 0, w))?;
        let tw = self.twiddles(stage, ctx, domain.log_size)?;
        let weights = dev.alloc(stage, ctx, big * 3)?;
        let slices = big.div_ceil(4096).clamp(1, 64);
        let partial = dev.alloc(stage, ctx, w * slices * 3)?;
        let s = domain.shift;
        let sn = s.pow(big as u64);
        let mut out = Vec::with_capacity(points.len());
        for &z in points {
            if let Some(i) = domain.index_of(z) {
                // A point of the domain: the column values themselves.
                let idx: Vec<u64> = (0..w).map(|c| (c * big + i) as u64).collect();
                let v = self.gather(stage, ctx, m.ptr(), &idx)?;
                out.push(v.into_iter().map(|x| Ext::from_base(F::new(x))).collect());
                continue;
            }
            let zc = ext_u64(z);
            dev.launch(
                stage,
                ctx,
                dev.func("bary_weights"),
                Self::grid(big as u64, 128),
                128,
                0,
                &[weights.ptr, domain.log_size as u64, zc[0], zc[1], zc[2], s.value(), tw.fwd.ptr, tw.log as u64],
            )?;
            for c0 in (0..w).step_by(65535) {
                let nc = (w - c0).min(65535);
                dev.launch(
                    stage,
                    ctx,
                    dev.func("bary_partial"),
                    (slices as u32, nc as u32, 1),
                    256,
                    0,
                    &[m.buf.at(c0 * big), weights.ptr, big as u64, partial.at(c0 * slices * 3)],
                )?;
            }
            let p = self.download_u64(stage, ctx, partial.ptr, w * slices * 3)?;
            // (z^N - s^N) / (N s^N)
            let num = z.pow(big as u64) - Ext::from_base(sn);
            let den = (F::new(big as u64) * sn).inverse().ok_or_else(|| BackendError::invalid(stage, "zero shift"))?;
            let pref = num.mul_base(den);
            let row: Vec<Ext> = (0..w)
                .map(|c| {
                    let mut acc = Ext::ZERO;
                    for k in 0..slices {
                        acc += ext_of(&p[(c * slices + k) * 3..]);
                    }
                    pref * acc
                })
                .collect();
            out.push(row);
        }
        Ok(out)
    }

    fn deep_quotient(&self, ctx: &Ctx, domain: Coset, points: &[DeepPoint<CudaMatrix>]) -> Result<CudaMatrix> {
        let stage = Stage::Deep;
        validate::deep(domain, points)?;
        let width = points.iter().map(|p| p.columns.iter().map(|c| c.matrix.width).sum::<usize>()).max().unwrap_or(0);
        let _permit = self.admit(stage, ctx, Self::dims(domain.log_size, 0, width))?;
        let dev = &self.dev;
        let big = domain.size();
        let tw = self.twiddles(stage, ctx, domain.log_size)?;
        let d = dev.alloc(stage, ctx, big * 3)?;
        let acc = dev.alloc(stage, ctx, big * 3)?;
        let threads = 128;
        for (pi, p) in points.iter().enumerate() {
            let mut v = Ext::ZERO;
            let mut first = true;
            for cols in &p.columns {
                for (c, val) in cols.coeffs.iter().zip(&cols.values) {
                    v += *c * *val;
                }
                if cols.matrix.width == 0 {
                    continue;
                }
                let coeffs: Vec<u64> = cols.coeffs.iter().flat_map(|c| ext_u64(*c)).collect();
                let cb = self.upload_u64(stage, ctx, &coeffs)?;
                dev.launch(
                    stage,
                    ctx,
                    dev.func("lincomb"),
                    Self::grid(big as u64, threads),
                    threads,
                    0,
                    &[acc.ptr, cols.matrix.ptr(), cb.ptr, cols.matrix.width as u64, big as u64, (!first) as u64],
                )?;
                first = false;
            }
            if first {
                // SAFETY: acc holds big*3 elements.
                unsafe { cudarc::driver::result::memset_d8_async(acc.ptr, 0, 8 * big * 3, dev.stream.cu_stream()) }
                    .map_err(|e| dev.err(stage, ctx, e))?;
            }
            let z = ext_u64(p.point);
            let vv = ext_u64(v);
            dev.launch(
                stage,
                ctx,
                dev.func("deep_accum"),
                Self::grid(big as u64, threads),
                threads,
                0,
                &[
                    d.ptr,
                    acc.ptr,
                    domain.log_size as u64,
                    z[0],
                    z[1],
                    z[2],
                    vv[0],
                    vv[1],
                    vv[2],
                    domain.shift.value(),
                    tw.fwd.ptr,
                    tw.log as u64,
                    (pi > 0) as u64,
                ],
            )?;
        }
        Ok(self.matrix(d, big, 3))
    }
}

impl FriOps for CudaBackend {
    fn fri_fold(
        &self,
        ctx: &Ctx,
        layer: &CudaMatrix,
        domain: Coset,
        log_arity: u32,
        beta: Ext,
        roll_in: Option<(&CudaMatrix, Ext)>,
    ) -> Result<CudaMatrix> {
        let stage = Stage::FriFold;
        validate::fri_fold(layer, domain, log_arity, roll_in.map(|r| r.0))?;
        let _permit = self.admit(stage, ctx, Self::dims(domain.log_size, 0, 0))?;
        let dev = &self.dev;
        let m = domain.size() >> log_arity;
        let tw = self.twiddles(stage, ctx, domain.log_size)?;
        let out = dev.alloc(stage, ctx, m * 3)?;
        let shift_inv = domain.shift.inverse().ok_or_else(|| BackendError::invalid(stage, "coset shift is zero"))?;
        let a_inv = F::new(1u64 << log_arity).inverse().expect("non-zero");
        let b = ext_u64(beta);
        let (rp, s) = match roll_in {
            Some((g, s)) => (g.ptr(), ext_u64(s)),
            None => (0, [0; 3]),
        };
        let threads = 128;
        dev.launch(
            stage,
            ctx,
            dev.func("fri_fold"),
            Self::grid(m as u64, threads),
            threads,
            0,
            &[
                layer.ptr(),
                out.ptr,
                domain.log_size as u64,
                log_arity as u64,
                b[0],
                b[1],
                b[2],
                shift_inv.value(),
                tw.inv.ptr,
                tw.log as u64,
                a_inv.value(),
                rp,
                s[0],
                s[1],
                s[2],
            ],
        )?;
        Ok(self.matrix(out, m, 3))
    }

    fn grind(&self, ctx: &Ctx, hash: HashKind, seed: &Digest, bits: u32) -> Result<u64> {
        let stage = Stage::Grind;
        validate::grind(bits)?;
        if bits == 0 {
            return Ok(0);
        }
        let _permit = self.admit(stage, ctx, Self::dims(0, 0, 0))?;
        let dev = &self.dev;
        let s: Vec<u64> = seed.chunks(8).map(|c| u64::from_le_bytes(c.try_into().expect("8 bytes"))).collect();
        let best = self.upload_u64(stage, ctx, &[u64::MAX])?;
        let kernel = match hash {
            HashKind::Blake3 => "grind_blake3",
            HashKind::Keccak256 => "grind_keccak",
        };
        let batch: u64 = 1 << 26;
        let threads = 256;
        let mut start = 0u64;
        loop {
            dev.launch(
                stage,
                ctx,
                dev.func(kernel),
                Self::grid(batch, threads),
                threads,
                0,
                &[s[0], s[1], s[2], s[3], start, batch, bits as u64, best.ptr],
            )?;
            let b = self.download_u64(stage, ctx, best.ptr, 1)?;
            if b[0] != u64::MAX {
                return Ok(b[0]);
            }
            start = start.checked_add(batch).ok_or_else(|| dev.err(stage, ctx, "nonce space exhausted"))?;
        }
    }
}
