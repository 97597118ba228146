//! The portable Kiln backend: a [`WgpuBackend`] implementing the `Backend`
//! trait family of `backend-api` with wgpu compute shaders (WGSL) on
//! Vulkan, Metal or DX12, giving the reference bytes of `backend-cpu`.
//!
//! This crate owns the host side of that path: adapter discovery
//! ([`probe`]), the device and its queue, buffers that stay on the device
//! between stages, the WGSL kernels (Goldilocks on 32-bit limbs: WGSL has
//! no 64-bit multiply-high), the LogUp and composition kernels generated
//! per constraint system from `backend_api::analysis`, and every stage's
//! dispatches. No GPU, or no Vulkan loader, is a clean
//! `BackendError::Unavailable`.
//!
//! A matrix is a list of buffers, each holding whole columns, so a matrix
//! larger than the adapter's largest binding is split rather than refused;
//! only a single column (or extension column) past that limit is declined.
//! Device errors become typed results: out of memory (through error
//! scopes), a lost device and buffer limits are `DeviceDecline`s that
//! `backend_cpu::Resilient` recovers, at the same fault sites as the CUDA
//! backend (`backend_api::fault`).
//!
//! Knobs, read when a backend is made: `KILN_WGPU_ADAPTER` (index in
//! [`probe`]'s list), `KILN_WGPU_INT64=1` (64-bit products where the
//! adapter has `SHADER_INT64`), `KILN_WGPU_MAX_BINDING` (bytes; a smaller
//! binding limit, to exercise splitting), `KILN_WGPU_TILE_LOG` (a smaller
//! NTT tile, 2^4 to 2^11 elements, to exercise multi-pass transforms at
//! small sizes), `KILN_WGPU_PROFILE=1` (device time per stage and kernel
//! from timestamp queries, [`WgpuBackend::take_profile`]).

mod base;
mod compose;
mod deep;
mod device;
#[cfg(test)]
mod field_tests;
mod fri;
mod logup;
mod merkle;
mod ntt;
mod profile;
mod shader;

pub use backend_api::fault::FaultInjector;
use device::DeviceBuffer;
pub use device::{probe, AdapterInfo};

use backend_api::fault::FaultSite;
use backend_api::gate::Permit;
use backend_api::memory::{stage_bytes, TableDims};
use backend_api::{
    BackendError, ColMatrix, ComposeInputs, ComposeOps, Coset, Ctx, DeepOps, DeepPoint, DeviceMatrix, DeviceTree,
    Digest, Ext, FriOps, HashKind, LogUpInputs, LogUpOps, MerkleOps, NttOps, Result, RowOpening, Stage, F,
};
use device::Device;
use std::sync::Arc;

/// A column-major matrix in device memory (canonical u64 values), as a
/// list of buffers of `cpb` whole columns each (the last may hold fewer).
/// `reshape` views share the buffers.
#[derive(Clone)]
pub struct WgpuMatrix {
    bufs: Arc<Vec<DeviceBuffer>>,
    height: usize,
    width: usize,
    /// Columns per buffer.
    cpb: usize,
}

impl DeviceMatrix for WgpuMatrix {
    fn height(&self) -> usize {
        self.height
    }
    fn width(&self) -> usize {
        self.width
    }
}

impl WgpuMatrix {
    /// The buffer holding column `c`, and the column's word offset in it.
    fn locate(&self, c: usize) -> (&wgpu::Buffer, u64) {
        let b = c / self.cpb;
        (&self.bufs[b], ((c - b * self.cpb) * self.height) as u64)
    }

    /// (buffer, first column, columns) for every buffer.
    fn pieces(&self) -> impl Iterator<Item = (&wgpu::Buffer, usize, usize)> {
        self.buffers().enumerate().map(|(b, buf)| {
            let first = b * self.cpb;
            (buf, first, self.cpb.min(self.width - first))
        })
    }

    /// Whether `other` is this matrix (the same buffers and shape).
    fn same_as(&self, other: &WgpuMatrix) -> bool {
        Arc::ptr_eq(&self.bufs, &other.bufs)
            && (self.height, self.width, self.cpb) == (other.height, other.width, other.cpb)
    }

    /// The matrix's buffers, in column order.
    fn buffers(&self) -> impl Iterator<Item = &wgpu::Buffer> {
        self.bufs.iter().map(|b| &**b)
    }

    /// The single buffer of a matrix that must not be split (an extension
    /// column, a FRI layer).
    fn single(&self, dev: &Device, stage: Stage, ctx: &Ctx) -> Result<&wgpu::Buffer> {
        match self.bufs.len() {
            1 => Ok(&self.bufs[0]),
            _ => Err(dev.decline(
                stage,
                ctx,
                (8 * self.height * self.width) as u64,
                format!("a {}x{} matrix exceeds the adapter's binding limit", self.height, self.width),
            )),
        }
    }
}

/// A Merkle tree in device memory (4 u64 a digest): a buffer per level
/// from the leaves up while a level has more than 256 nodes, then the
/// levels above, up to the root, one after another in `top`; the root is
/// also kept on the host.
pub struct WgpuTree {
    levels: Vec<DeviceBuffer>,
    top: Option<DeviceBuffer>,
    root: Digest,
    leaves: usize,
    hash: HashKind,
}

impl WgpuTree {
    /// The buffer holding level `l` (0: the leaves) and its first word.
    fn level(&self, l: usize) -> (&wgpu::Buffer, u64) {
        match &self.top {
            Some(top) if l >= self.levels.len() => {
                let below: usize = (self.levels.len()..l).map(|j| self.leaves >> j).sum();
                (top, 4 * below as u64)
            }
            _ => (&self.levels[l], 0),
        }
    }
}

impl DeviceTree for WgpuTree {
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

/// How a [`WgpuBackend`] is made.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct WgpuConfig {
    /// Index in [`probe`]'s list (default: `KILN_WGPU_ADAPTER`, else 0, the
    /// first GPU, else a CPU implementation such as lavapipe).
    pub adapter: Option<usize>,
    /// Bind and allocate at most this many bytes per buffer (default: the
    /// adapter's limits, or `KILN_WGPU_MAX_BINDING`): small values make
    /// every matrix split across buffers.
    pub max_binding_bytes: Option<u64>,
    /// The byte budget of the device's memory gate (default: unlimited;
    /// wgpu cannot query free memory).
    pub memory_budget_bytes: Option<u64>,
    /// Field arithmetic on 64-bit shader integers where the adapter has
    /// them (default: yes, unless `KILN_WGPU_INT64=0`); else, and on
    /// adapters without them, on 32-bit limbs. The proofs are the same.
    pub int64: Option<bool>,
    /// At most 2^tile_log elements (4 to 11) in an NTT workgroup's tile
    /// (default: `KILN_WGPU_TILE_LOG`, else what the adapter's workgroup
    /// memory holds, at most 2^11).
    pub tile_log: Option<u32>,
}

/// The wgpu backend on one adapter.
pub struct WgpuBackend {
    dev: Device,
    tw: ntt::TwiddleCache,
    name: String,
}

fn env_parse<T: std::str::FromStr>(key: &str) -> Option<T> {
    std::env::var(key).ok().and_then(|v| v.trim().parse().ok())
}

impl WgpuBackend {
    /// Opens the default adapter. `Unavailable` when there is none.
    pub fn new() -> Result<WgpuBackend> {
        WgpuBackend::with_config(WgpuConfig::default())
    }

    pub fn with_config(config: WgpuConfig) -> Result<WgpuBackend> {
        let settings = device::Settings {
            adapter: config.adapter.or_else(|| env_parse("KILN_WGPU_ADAPTER")).unwrap_or(0),
            max_binding_bytes: config.max_binding_bytes.or_else(|| env_parse("KILN_WGPU_MAX_BINDING")),
            memory_budget_bytes: config.memory_budget_bytes,
            int64: config.int64.unwrap_or_else(|| std::env::var("KILN_WGPU_INT64").map_or(true, |v| v.trim() != "0")),
            tile_log: config.tile_log.or_else(|| env_parse("KILN_WGPU_TILE_LOG")),
        };
        let dev = Device::new(&settings)?;
        Ok(WgpuBackend { dev, tw: ntt::TwiddleCache::default(), name: "wgpu".into() })
    }

    pub fn adapter(&self) -> &AdapterInfo {
        &self.dev.info
    }

    /// Whether the field arithmetic runs on 64-bit shader integers.
    pub fn uses_int64(&self) -> bool {
        self.dev.int64
    }

    /// The binding limit this backend splits matrices at, in bytes.
    pub fn max_binding_bytes(&self) -> u64 {
        self.dev.max_binding
    }

    /// The decline sites of this backend (armed by tests under the
    /// `fault-injection` feature).
    pub fn faults(&self) -> &FaultInjector {
        &self.dev.faults
    }

    /// The memory gate's budget for this device, and the bytes admitted now.
    pub fn memory_gate(&self) -> (u64, u64) {
        let gate = self.dev.gate.stats();
        (gate.budget, gate.held)
    }

    /// Device time per stage and kernel since the last call, as a table,
    /// when this process profiles (`KILN_WGPU_PROFILE=1` on an adapter
    /// with timestamp queries); else `None`.
    pub fn take_profile(&self) -> Option<String> {
        self.dev.profiler.as_ref().map(|p| p.take())
    }

    /// Waits for all submitted work.
    pub fn synchronize(&self) -> Result<()> {
        self.dev.wait(Stage::Download, &Ctx::table("-"))
    }
}

// Admission and matrix allocation, shared by every stage.
impl WgpuBackend {
    /// Admits `bytes` of `stage`'s work through the memory gate (the
    /// `Admission` decline site).
    fn admit_bytes(&self, stage: Stage, ctx: &Ctx, bytes: u64) -> Result<Permit> {
        self.dev.check(FaultSite::Admission, stage, ctx, bytes)?;
        self.dev.gate.loose(bytes, backend_api::gate::LOOSE_WAIT).map_err(|r| {
            self.dev.decline(
                stage,
                ctx,
                bytes,
                format!("memory gate: budget {} bytes, {} admitted to other work", r.budget, r.held),
            )
        })
    }

    fn admit(&self, stage: Stage, ctx: &Ctx, d: TableDims) -> Result<Permit> {
        self.admit_bytes(stage, ctx, stage_bytes(stage, &d))
    }

    /// A table shape with `width` main columns.
    fn dims(log_n: u32, log_blowup: u32, width: usize) -> TableDims {
        TableDims {
            log_n,
            log_blowup,
            fixed_width: 0,
            main_width: width as u64,
            aux_width: 0,
            parts: 0,
            spill_piece: None,
            recompute: false,
            recompute_split: 0,
            recompute_keeps_traces: false,
            recompute_keeps_aux: false,
        }
    }

    /// Columns per buffer for a `height` x `width` matrix: as many as fit
    /// the binding limit, a multiple of 3 when at least 3 (so extension
    /// columns are never split).
    fn columns_per_buffer(&self, stage: Stage, ctx: &Ctx, height: usize, width: usize) -> Result<usize> {
        let col_bytes = 8 * height.max(1) as u64;
        let fit = (self.dev.max_binding / col_bytes) as usize;
        if fit == 0 {
            return Err(self.dev.decline(
                stage,
                ctx,
                col_bytes,
                format!("a column of {height} rows exceeds the adapter's {} byte binding limit", self.dev.max_binding),
            ));
        }
        let fit = if fit >= 3 { fit - fit % 3 } else { fit };
        Ok(fit.min(width.max(1)))
    }

    /// An uninitialised `height` x `width` matrix on the device, for an
    /// output its operation writes in full.
    fn alloc_matrix(&self, stage: Stage, ctx: &Ctx, height: usize, width: usize) -> Result<WgpuMatrix> {
        let cpb = self.columns_per_buffer(stage, ctx, height, width)?;
        self.alloc_matrix_in(stage, ctx, height, width, cpb, false)
    }

    /// A `height` x `width` matrix in buffers of `cpb` columns, zeroed
    /// when asked.
    fn alloc_matrix_in(
        &self,
        stage: Stage,
        ctx: &Ctx,
        height: usize,
        width: usize,
        cpb: usize,
        zeroed: bool,
    ) -> Result<WgpuMatrix> {
        let mut bufs = Vec::with_capacity(width.div_ceil(cpb));
        for first in (0..width).step_by(cpb) {
            let bytes = (8 * cpb.min(width - first) * height) as u64;
            bufs.push(if zeroed {
                self.dev.alloc(stage, ctx, bytes)?
            } else {
                self.dev.alloc_uninit(stage, ctx, bytes)?
            });
        }
        Ok(WgpuMatrix { bufs: Arc::new(bufs), height, width, cpb })
    }

    /// Uploads u64 words as a small constant buffer.
    fn upload_u64(&self, stage: Stage, ctx: &Ctx, v: &[u64]) -> Result<DeviceBuffer> {
        self.dev.upload(stage, ctx, v)
    }
}

fn ext_u64(e: Ext) -> [u64; 3] {
    [e.0[0].value(), e.0[1].value(), e.0[2].value()]
}

fn ext_of(v: &[u64]) -> Ext {
    Ext::new(F::new(v[0]), F::new(v[1]), F::new(v[2]))
}

/// A u64 as two push-constant words (low first).
fn words(v: u64) -> [u32; 2] {
    [v as u32, (v >> 32) as u32]
}

impl NttOps for WgpuBackend {
    fn ntt(&self, ctx: &Ctx, coeffs: &WgpuMatrix) -> Result<WgpuMatrix> {
        self.transform(ctx, coeffs, false)
    }

    fn intt(&self, ctx: &Ctx, evals: &WgpuMatrix) -> Result<WgpuMatrix> {
        self.transform(ctx, evals, true)
    }

    fn intt_in_place(&self, ctx: &Ctx, evals: &WgpuMatrix) -> Result<WgpuMatrix> {
        self.transform_in_place(ctx, evals)
    }

    fn coset_lde(&self, ctx: &Ctx, evals: &WgpuMatrix, log_blowup: u32, shift: F) -> Result<WgpuMatrix> {
        self.lde(ctx, evals, log_blowup, shift)
    }

    fn upload_coset_lde(
        &self,
        ctx: &Ctx,
        evals: &ColMatrix,
        log_blowup: u32,
        shift: F,
    ) -> Result<(WgpuMatrix, WgpuMatrix)> {
        self.upload_lde(ctx, evals, log_blowup, shift)
    }

    fn coset_ntt(&self, ctx: &Ctx, coeffs: &WgpuMatrix, log_blowup: u32, shift: F) -> Result<WgpuMatrix> {
        self.coset_evals(ctx, coeffs, log_blowup, shift)
    }

    fn fold_coeffs(&self, ctx: &Ctx, coeffs: &WgpuMatrix, log_fold: u32, c: F) -> Result<WgpuMatrix> {
        self.fold_columns(ctx, coeffs, log_fold, c)
    }

    fn coset_rows(&self, ctx: &Ctx, coeffs: &WgpuMatrix, shift: F, positions: &[usize]) -> Result<Vec<Vec<F>>> {
        backend_api::validate::coset_rows(coeffs, shift, positions)?;
        self.merkle_rows(ctx, &self.coset_evals(ctx, coeffs, 0, shift)?, positions)
    }
}

impl MerkleOps for WgpuBackend {
    fn commit(&self, ctx: &Ctx, m: &WgpuMatrix, hash: HashKind) -> Result<WgpuTree> {
        self.merkle_commit(ctx, m, hash)
    }

    fn open(&self, ctx: &Ctx, m: &WgpuMatrix, tree: &WgpuTree, rows: &[usize]) -> Result<Vec<RowOpening>> {
        self.merkle_open(ctx, m, tree, rows)
    }

    fn leaf_digests(&self, ctx: &Ctx, m: &WgpuMatrix, hash: HashKind) -> Result<Vec<Digest>> {
        self.merkle_leaf_digests(ctx, m, hash)
    }

    fn rows(&self, ctx: &Ctx, m: &WgpuMatrix, rows: &[usize]) -> Result<Vec<Vec<F>>> {
        self.merkle_rows(ctx, m, rows)
    }
}

impl LogUpOps for WgpuBackend {
    fn logup_aux(&self, ctx: &Ctx, inputs: &LogUpInputs<WgpuMatrix>) -> Result<(WgpuMatrix, Ext)> {
        self.logup(ctx, inputs)
    }
}

impl ComposeOps for WgpuBackend {
    fn compose(&self, ctx: &Ctx, inputs: &ComposeInputs<WgpuMatrix>) -> Result<WgpuMatrix> {
        self.compose_quotient(ctx, inputs)
    }

    fn split_quotient(
        &self,
        ctx: &Ctx,
        quotient: &WgpuMatrix,
        domain: Coset,
        log_trace_height: u32,
        parts: usize,
        log_out: u32,
    ) -> Result<WgpuMatrix> {
        self.split(ctx, quotient, domain, log_trace_height, parts, log_out)
    }
}

impl DeepOps for WgpuBackend {
    fn evaluate_at(
        &self,
        ctx: &Ctx,
        m: &WgpuMatrix,
        domain: Coset,
        log_stride: u32,
        points: &[Ext],
    ) -> Result<Vec<Vec<Ext>>> {
        self.out_of_domain(ctx, m, (domain, log_stride), points)
    }

    fn evaluate_coeffs(&self, ctx: &Ctx, coeffs: &WgpuMatrix, points: &[Ext]) -> Result<Vec<Vec<Ext>>> {
        backend_api::validate::evaluate_coeffs(coeffs)?;
        let evals = NttOps::ntt(self, ctx, coeffs)?;
        let domain = Coset::subgroup(backend_api::DeviceMatrix::height(coeffs).trailing_zeros());
        self.out_of_domain(ctx, &evals, (domain, 0), points)
    }

    fn deep_quotient(&self, ctx: &Ctx, domain: Coset, points: &[DeepPoint<WgpuMatrix>]) -> Result<WgpuMatrix> {
        self.deep(ctx, domain, points)
    }

    fn combine_columns(&self, ctx: &Ctx, m: &WgpuMatrix, weights: &[Ext]) -> Result<WgpuMatrix> {
        self.combine(ctx, m, weights)
    }
}

impl FriOps for WgpuBackend {
    fn fri_fold(
        &self,
        ctx: &Ctx,
        layer: &WgpuMatrix,
        domain: Coset,
        log_arity: u32,
        beta: Ext,
        roll_in: Option<(&WgpuMatrix, Ext)>,
    ) -> Result<WgpuMatrix> {
        self.fold(ctx, layer, domain, log_arity, beta, roll_in)
    }

    fn grind(&self, ctx: &Ctx, hash: HashKind, seed: &Digest, bits: u32) -> Result<u64> {
        self.pow(ctx, hash, seed, bits)
    }
}

/// Errors a backend op may give for input that passed validation but that
/// the arithmetic cannot use (kept out of panics).
fn invalid(stage: Stage, detail: &str) -> BackendError {
    BackendError::invalid(stage, detail)
}
