//! The CUDA Kiln backend: a [`CudaBackend`] implementing the `Backend`
//! trait family of `backend-api` on cudarc, with run-time loading (no CUDA
//! needed to build; a missing driver or NVRTC is a clean
//! `BackendError::Unavailable`).
//!
//! This crate owns the host side of the GPU path: device discovery and
//! choice by ordinal ([`probe`], [`DeviceSpec`], [`open_devices`]), the
//! context and its pool of streams, device memory from the stream-ordered
//! pool, the memory gate, pinned staging for large transfers and host
//! matrices pinned in place
//! ([`BackendBase::pin`](backend_api::BackendBase::pin)), NVRTC
//! compilation of the kernels in `kernels-cuda` for the device's own compute capability
//! (cached on disk, see [`nvrtc`]), constraint composition and LogUp
//! kernels generated from the IR, and every stage's launches. Like
//! backend-cpu it has a module per sub-trait (`base`, `transform`,
//! `merkle`, `logup`, `quotient`, `deep`, `fri`); tuning
//! knobs are fields of [`CudaConfig`], which the caller gives (the
//! environment is read only by front ends, through
//! [`CudaConfig::from_env`]).
//!
//! Streams and memory (module `stream`): each lane (`backend_api::Lane`,
//! a table's stage chain) runs on one stream of a small pool; a buffer
//! used on another stream than its writer's waits for the writer's event,
//! and a free waits for every other stream that used the buffer (the
//! race detector, [`race`], checks this when asked). Each backend owns a
//! memory gate ([`GateStats`]) that admits a proof's device set before it
//! starts (`BackendBase::reserve`). Roots reach the host lazily. Data stay
//! on the device between stages and reach the host only through `download`
//! and the operations whose results the protocol needs there.

mod base;
mod compose;
mod config;
mod deep;
mod device;
mod fri;
mod host;
mod logup;
mod merkle;
mod ntt;
mod ntt_warp;
pub mod nvrtc;
mod quotient;
pub mod race;
mod select;
mod stream;
mod timeline;
mod transform;

pub use backend_api::fault::FaultInjector;
pub use backend_api::gate::{GateStats, SAFETY_MARGIN_BYTES};
pub use config::{ComposeKernel, ConfigError, CudaConfig, NttTuning};
pub use device::{check_libraries, probe, DeviceInfo, OpenTimes};
pub use select::{open_devices, DeviceSpec, SelectError};
pub use timeline::{StageTime, TimelineReport};

/// The composition kernels' CUDA sources for a constraint system, one per
/// part of its constraints (what `compose` compiles and runs in order;
/// exposed so CI can compile them without a GPU).
pub fn compose_sources(cs: &backend_api::ConstraintSystem) -> Vec<String> {
    compose::generate(cs)
}

/// The kernels generated for these tables: (module name, source, kernel).
fn generated_kernels(
    tables: &[(&backend_api::ConstraintSystem, Option<&backend_api::LogUp>)],
    compose: ComposeKernel,
) -> Vec<(&'static str, String, &'static str)> {
    let mut kernels = vec![];
    for (cs, logup) in tables {
        if compose == ComposeKernel::Generated {
            kernels.extend(compose::generate(cs).into_iter().map(|src| ("compose", src, compose::KERNEL)));
        }
        if let Some(l) = logup {
            kernels.push(("logup-generated", compose::generate_logup(l), compose::LOGUP_KERNEL));
        }
    }
    kernels
}

/// The generated LogUp kernel's CUDA source for a table's interactions.
pub fn logup_source(logup: &backend_api::LogUp) -> String {
    compose::generate_logup(logup)
}

use backend_api::fault::FaultSite;
use backend_api::memory::{stage_alloc, stage_bytes, TableDims};
use backend_api::{Ctx, DeviceMatrix, DeviceTree, Digest, Ext, HashKind, Result, Stage, F};
use device::Device;
use ntt::TwiddleCache;
use std::sync::{Arc, Mutex, OnceLock};
use stream::{DevBuf, PendingRoot, Scope};

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

/// A Merkle tree in device memory: every level's digests (4 u64 each),
/// leaves first. Its root is copied to a pinned slot behind the tree's
/// build and read when first asked for, so a commit does not wait for the
/// device and tables can run at once.
pub struct CudaTree {
    digests: Arc<DevBuf>,
    root: OnceLock<Digest>,
    pending: Mutex<Option<PendingRoot>>,
    leaves: usize,
    hash: HashKind,
}

impl CudaTree {
    /// Waits for the root's copy. The trait gives no way to fail here: a
    /// failed wait poisons the device, so the operations that follow (and
    /// there always are: the proof's queries) fail with the reason instead
    /// of a proof over a wrong root being returned.
    fn resolve(&self) -> Digest {
        let pending = self.pending.lock().unwrap_or_else(|p| p.into_inner()).take();
        let Some(p) = pending else { return Digest::default() };
        let dev = self.digests.device().clone();
        match p.wait() {
            Ok(words) => digest_bytes(&words),
            Err(e) => {
                dev.poison(format!("reading a Merkle root: {e}"));
                Digest::default()
            }
        }
    }
}

impl DeviceTree for CudaTree {
    fn root(&self) -> Digest {
        *self.root.get_or_init(|| self.resolve())
    }
    fn leaves(&self) -> usize {
        self.leaves
    }
    fn hash(&self) -> HashKind {
        self.hash
    }
}

/// The CUDA backend on one device.
pub struct CudaBackend {
    dev: Arc<Device>,
    tw: TwiddleCache,
    /// The warp LDE's twist table for the last coset (see `ntt_warp`).
    warp_twist: ntt_warp::TwistCache,
    /// Skip the zero-padded levels of the LDE (see [`NttTuning`]).
    skip_zero_levels: bool,
    /// Runs of an overlapped upload and LDE (see [`NttTuning`]).
    upload_runs: usize,
    /// Leaves hashed as an upload's runs are extended (see [`CudaConfig`]).
    leaves_under_upload: bool,
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

    /// [`CudaBackend::new`] with the given configuration.
    pub fn with_config(ordinal: usize, config: CudaConfig) -> Result<CudaBackend> {
        let dev = Device::new(ordinal, &config)?;
        let (skip_zero_levels, compose) = (config.ntt.lde_skip_zero_levels, config.compose);
        let upload_runs = config.ntt.upload_runs.max(1) as usize;
        let leaves_under_upload = config.leaves_under_upload;
        Ok(CudaBackend {
            dev,
            tw: TwiddleCache::new(),
            warp_twist: ntt_warp::TwistCache::new(),
            skip_zero_levels,
            upload_runs,
            leaves_under_upload,
            compose,
        })
    }

    /// Compiles and loads, in parallel, the kernels generated for these
    /// tables (composition, LogUp), so a prove that follows compiles
    /// nothing. A statement of the same AIR with other public values needs
    /// the same kernels. Optional: a kernel not prepared is compiled at
    /// its first use.
    pub fn prepare(&self, tables: &[(&backend_api::ConstraintSystem, Option<&backend_api::LogUp>)]) -> Result<()> {
        self.dev.prepare(&generated_kernels(tables, self.compose))
    }

    /// Compiles the kernels [`CudaBackend::prepare`] would, for a device of
    /// compute capability `(major, minor)`, into the disk kernel cache,
    /// with no device opened: started beside [`CudaBackend::with_config`]
    /// (driver start-up, the static kernels), it leaves `prepare` only the
    /// loading. Returns the first compilation error.
    pub fn precompile(
        tables: &[(&backend_api::ConstraintSystem, Option<&backend_api::LogUp>)],
        compute_capability: (u32, u32),
        config: &CudaConfig,
    ) -> std::result::Result<(), String> {
        let sources: Vec<(&str, String)> =
            generated_kernels(tables, config.compose).into_iter().map(|(name, src, _)| (name, src)).collect();
        let (ma, mi) = compute_capability;
        device::compile_parallel(&sources, nvrtc::Target::Cubin(ma, mi)).into_iter().try_for_each(|r| r.map(drop))
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

    /// Where opening the device went.
    pub fn open_times(&self) -> OpenTimes {
        self.dev.opened
    }

    /// The decline sites of this backend (armed by tests under the
    /// `fault-injection` feature).
    pub fn faults(&self) -> &FaultInjector {
        &self.dev.faults
    }

    /// The memory gate's counters: budget, bytes held, waits, peaks.
    pub fn gate_stats(&self) -> GateStats {
        self.dev.gate.stats()
    }

    /// Admits `bytes` of a loose `stage` through the memory gate (the
    /// `Admission` decline site).
    fn admit_bytes(&self, stage: Stage, ctx: &Ctx, bytes: u64) -> Result<backend_api::gate::Permit> {
        self.dev.check(FaultSite::Admission, stage, ctx, bytes)?;
        self.dev.gate.loose(bytes, backend_api::gate::LOOSE_WAIT).map_err(|r| {
            let reason =
                format!("memory gate: budget {} bytes, {} held by other work after {:.1?}", r.budget, r.held, r.waited);
            self.dev.decline(stage, ctx, bytes, reason)
        })
    }

    /// Admits one call of `stage` on operands `d` (see
    /// `backend_api::memory::stage_alloc` for each stage's convention): its
    /// scratch inside the claim of its lane's proof, or its whole bytes on
    /// the gate when the lane has no claim.
    fn admit(&self, stage: Stage, ctx: &Ctx, d: TableDims) -> Result<backend_api::gate::Admitted> {
        self.admit_with(stage, ctx, stage_alloc(stage, &d).scratch, stage_bytes(stage, &d))
    }

    /// [`CudaBackend::admit`] with the bytes given: `scratch` inside a
    /// claim, `loose` outside one.
    fn admit_with(&self, stage: Stage, ctx: &Ctx, scratch: u64, loose: u64) -> Result<backend_api::gate::Admitted> {
        match self.dev.claim_of(ctx.lane) {
            Some(claim) => {
                self.dev.check(FaultSite::Admission, stage, ctx, scratch)?;
                Ok(backend_api::gate::Admitted::Stage(claim.stage(scratch)))
            }
            None => self.admit_bytes(stage, ctx, loose).map(backend_api::gate::Admitted::Loose),
        }
    }

    /// Waits for all queued work on every stream.
    pub fn synchronize(&self) -> Result<()> {
        self.dev.sync_all(Stage::Download, &Ctx::table("-"))
    }

    /// Runs `f` and returns its value with the GPU time between two events
    /// recorded around it on stream 0, where work outside any lane runs.
    pub fn time<T>(&self, f: impl FnOnce(&Self) -> Result<T>) -> Result<Timed<T>> {
        let ctx = Ctx::table("timing");
        let err = |e: cudarc::driver::DriverError| self.dev.err(Stage::Download, &ctx, e);
        let flags = Some(cudarc::driver::sys::CUevent_flags::CU_EVENT_DEFAULT);
        let stream = self.dev.streams.get(0);
        let start = self.dev.ctx.new_event(flags).map_err(err)?;
        let end = self.dev.ctx.new_event(flags).map_err(err)?;
        start.record(stream).map_err(err)?;
        let value = f(self)?;
        end.record(stream).map_err(err)?;
        end.synchronize().map_err(err)?;
        let ms = start.elapsed_ms(&end).map_err(err)?;
        Ok(Timed { value, ms })
    }

    /// With `CudaConfig::timeline`: waits for the device, then sums every
    /// operation timed since the last call by stage (see
    /// [`TimelineReport`]) and starts afresh. `None` without it.
    pub fn timeline(&self) -> Result<Option<TimelineReport>> {
        let Some(t) = &self.dev.timeline else { return Ok(None) };
        self.synchronize()?;
        t.report().map(Some).map_err(|e| self.dev.err(Stage::Download, &Ctx::table("timeline"), e))
    }

    /// The races the detector found (`CudaConfig::debug_races`; empty
    /// otherwise). Any race also fails the operations that follow it.
    pub fn races(&self) -> Vec<race::Race> {
        self.dev.races()
    }

    /// Bytes of this backend's live device buffers, and the most at once
    /// since the last reset (what the stages asked for).
    pub fn live_bytes(&self, reset_peak: bool) -> (u64, u64) {
        self.dev.live_bytes(reset_peak)
    }

    /// The stream-ordered pool's bytes in use and its high-water mark, as
    /// the driver counts them; `reset_high` restarts the mark from the
    /// bytes in use. The pool may be shared with other backends of the
    /// same device in this process.
    pub fn pool_usage(&self, reset_high: bool) -> Result<(u64, u64)> {
        self.dev.pool_usage(reset_high)
    }

    /// Work of one stage on its lane's stream.
    fn scope<'a>(&'a self, stage: Stage, ctx: &'a Ctx<'a>) -> Result<Scope<'a>> {
        Scope::new(&self.dev, stage, ctx)
    }

    fn twiddles(&self, scope: &mut Scope, log: u32) -> Result<Arc<ntt::Twiddles>> {
        self.tw.get(scope, log)
    }

    fn matrix(buf: Arc<DevBuf>, height: usize, width: usize) -> CudaMatrix {
        CudaMatrix { buf, height, width }
    }

    fn download_u64(scope: &mut Scope, src: &Arc<DevBuf>, offset: usize, len: usize) -> Result<Vec<u64>> {
        let mut v = vec![0u64; len];
        scope.dtoh(src, offset, &mut v)?;
        Ok(v)
    }

    /// Operands of one matrix of `width` columns.
    fn dims(log_n: u32, log_blowup: u32, width: usize) -> TableDims {
        TableDims::matrix(log_n, log_blowup, width)
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
