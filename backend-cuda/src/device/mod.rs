//! The device: its context, chosen by ordinal; its stream-ordered pool;
//! kernel loading; the memory gate and the claims of reserved lanes;
//! decline and fault sites. Streams, buffers and transfers are in
//! `stream`.
//!
//! This module finds devices and opens one; its submodules own the pool and
//! the memory accounting, kernel loading, and how operations fail.

mod errors;
mod kernels;
mod memory;

pub(crate) use kernels::compile_parallel;
use kernels::{load_kernels, tile_log, warp_ntt_ready};
use memory::open_pool;

use crate::nvrtc;
use crate::stream::{RootSlots, StagingPool, Streams};
use crate::timeline::Timeline;
use crate::{ComposeKernel, CudaConfig};
use backend_api::fault::FaultInjector;
use backend_api::gate::{Claim, Gate};
use backend_api::{BackendError, Lane};
use cudarc::driver::sys;
use cudarc::driver::{result, CudaContext, CudaFunction, DriverError};
use std::collections::HashMap;
use std::sync::atomic::AtomicU64;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// What `probe` reports about one device.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DeviceInfo {
    pub ordinal: usize,
    pub name: String,
    /// (major, minor).
    pub compute_capability: (u32, u32),
    pub total_memory: usize,
    pub multiprocessors: u32,
    /// The driver's UUID of the device ("GPU-..."): which physical card an
    /// ordinal named, whatever `CUDA_VISIBLE_DEVICES` said.
    pub uuid: String,
}

/// Fails with `Unavailable` unless both the driver and NVRTC libraries can
/// be loaded. Checked before any other CUDA call: cudarc panics when a
/// library is missing.
pub fn check_libraries() -> Result<(), BackendError> {
    check_libcuda()?;
    check_nvrtc(nvrtc::nvrtc_present())
}

fn check_libcuda() -> Result<(), BackendError> {
    // SAFETY: only tries to open the library.
    if !unsafe { sys::is_culib_present() } {
        return Err(BackendError::Unavailable("the CUDA driver library (libcuda) was not found".into()));
    }
    Ok(())
}

fn check_nvrtc(present: bool) -> Result<(), BackendError> {
    if !present {
        return Err(BackendError::Unavailable("the NVRTC library (libnvrtc) was not found".into()));
    }
    Ok(())
}

fn unavailable(what: &str, e: DriverError) -> BackendError {
    BackendError::Unavailable(format!("{what}: {e}"))
}

/// Lists the CUDA devices. `Unavailable` when there is no driver.
pub fn probe() -> Result<Vec<DeviceInfo>, BackendError> {
    check_libcuda()?;
    result::init().map_err(|e| unavailable("cuInit", e))?;
    let count = result::device::get_count().map_err(|e| unavailable("cuDeviceGetCount", e))?;
    let mut out = Vec::new();
    for ordinal in 0..count.max(0) as usize {
        out.push(device_info(ordinal).map_err(|e| unavailable("device query", e))?);
    }
    Ok(out)
}

fn device_info(ordinal: usize) -> Result<DeviceInfo, DriverError> {
    let dev = result::device::get(ordinal as i32)?;
    let attr = |a| unsafe { result::device::get_attribute(dev, a) };
    use sys::CUdevice_attribute::*;
    let major = attr(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR)? as u32;
    let minor = attr(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR)? as u32;
    let sms = attr(CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT)? as u32;
    let name = result::device::get_name(dev)?;
    let total_memory = unsafe { result::device::total_mem(dev)? };
    let uuid = uuid_text(&result::device::get_uuid(dev)?.bytes);
    Ok(DeviceInfo { ordinal, name, compute_capability: (major, minor), total_memory, multiprocessors: sms, uuid })
}

/// "GPU-" and the 16 bytes as 8-4-4-4-12 hex digits, as nvidia-smi prints.
fn uuid_text(b: &[std::ffi::c_char; 16]) -> String {
    let h: String = b.iter().map(|&c| format!("{:02x}", c as u8)).collect();
    format!("GPU-{}-{}-{}-{}-{}", &h[0..8], &h[8..12], &h[12..16], &h[16..20], &h[20..32])
}

/// A memory pool handle.
struct Pool(sys::CUmemoryPool);

// SAFETY: a pool handle is a driver object usable from any thread of the
// process; the driver serialises operations on it.
unsafe impl Send for Pool {}
unsafe impl Sync for Pool {}

/// The shared device state.
pub(crate) struct Device {
    pub(crate) ctx: Arc<CudaContext>,
    /// The stream-ordered pool every buffer comes from: the device's
    /// default pool, or a pool of our own capped at `pool_limit_bytes`.
    pool: Pool,
    own_pool: bool,
    pub(crate) faults: FaultInjector,
    pub(crate) gate: Arc<Gate>,
    pub(crate) streams: Streams,
    pub(crate) staging: StagingPool,
    pub(crate) roots: RootSlots,
    pub(crate) info: DeviceInfo,
    pub(crate) functions: HashMap<&'static str, CudaFunction>,
    pub(crate) ntt_tile_log: u32,
    /// Butterfly levels per shared-memory round trip, as a radix: 4 (two
    /// levels in registers) or 2.
    pub(crate) ntt_radix: u32,
    /// Coalesced first pass of natural-order transforms.
    pub(crate) ntt_lanes: bool,
    /// Most threads of an NTT block (64..=1024; 256 measured fastest on
    /// the H200, docs/gpu/logs/ntt-tuning.log).
    pub(crate) ntt_threads: u32,
    /// Natural-order 2^20-point transforms and coset LDEs of 2^20 rows
    /// through kernels-cuda's `ntt_warp` and `ntt_warp_lde`
    /// (`NttTuning::warp`, where their kernels loaded).
    pub(crate) ntt_warp: bool,
    generated: Mutex<HashMap<String, CudaFunction>>,
    /// The claim of each reserved lane (see `CudaBackend::reserve`).
    claims: Mutex<HashMap<Lane, Arc<Claim>>>,
    pub(crate) admission_timeout: Duration,
    /// Why the device can no longer be trusted (a failed event record or
    /// root read): every later operation fails with it.
    poisoned: Mutex<Option<String>>,
    next_buffer: AtomicU64,
    /// Bytes of live buffers, and the most at once (what the stages asked
    /// the pool for, beside its own high-water mark).
    live: AtomicU64,
    peak_live: AtomicU64,
    pub(crate) opened: OpenTimes,
    /// Every operation's device time (`CudaConfig::timeline`).
    pub(crate) timeline: Option<Timeline>,
}

/// Where opening a device went (`CudaBackend::open_times`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct OpenTimes {
    /// Loading the libraries, the primary context, and cuInit unless an
    /// earlier call (`probe`) made it.
    pub context: Duration,
    /// The static kernels, from the disk cache or compiled.
    pub kernels: Duration,
    /// All of it, streams, pool and pinned root slots included.
    pub total: Duration,
}

impl Device {
    /// Opens device `ordinal` (by the driver's ordinal only; the
    /// environment is never consulted here) and compiles (or loads from the
    /// disk cache) its kernels, the interpreter's only when the
    /// configuration selects it.
    pub(crate) fn new(ordinal: usize, config: &CudaConfig) -> Result<Arc<Device>, BackendError> {
        let t0 = Instant::now();
        check_libcuda()?;
        // libnvrtc loads (5-150 ms) while the driver initialises (cuInit
        // and the primary context, ~0.2 s): neither waits for the other.
        let (nvrtc, ctx) = std::thread::scope(|s| {
            let nvrtc = s.spawn(nvrtc::nvrtc_present);
            let ctx = CudaContext::new(ordinal);
            (nvrtc.join().unwrap_or(false), ctx)
        });
        check_nvrtc(nvrtc)?;
        let ctx = ctx.map_err(|e| unavailable(&format!("CUDA device {ordinal}"), e))?;
        let context = t0.elapsed();
        let info = device_info(ordinal).map_err(|e| unavailable("device query", e))?;
        // The lanes' streams, then the copy stream (see `Streams`).
        let streams = (0..config.streams.clamp(1, 64) + 1)
            .map(|_| ctx.new_stream())
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| unavailable("stream creation", e))?;
        let (pool, own_pool) = open_pool(&ctx, ordinal, config.pool_limit_bytes)?;
        let free_now = ctx.mem_get_info().map(|(f, _)| f as u64).unwrap_or(0);
        let gate = Gate::new(Gate::default_budget(config.memory_budget_bytes, free_now));
        let t1 = Instant::now();
        let functions = load_kernels(&ctx, &info, config.compose == ComposeKernel::Interpreted, config.ntt.warp)?;
        let kernels = t1.elapsed();
        let ntt_tile_log = tile_log(&functions, config.ntt.tile_log);
        let ntt_warp = config.ntt.warp && warp_ntt_ready(&functions);
        let roots = RootSlots::new(&ctx).map_err(|e| unavailable("pinned root slots", e))?;
        let opened = OpenTimes { context, kernels, total: t0.elapsed() };
        Ok(Arc::new(Device {
            ctx,
            pool: Pool(pool),
            own_pool,
            faults: FaultInjector::new(),
            gate,
            streams: Streams::new(streams, config.debug_races),
            staging: StagingPool::new(config.staging_sets),
            roots,
            info,
            functions,
            ntt_tile_log,
            ntt_radix: if config.ntt.radix == 2 { 2 } else { 4 },
            ntt_lanes: config.ntt.lanes,
            ntt_threads: config.ntt.threads.clamp(64, 1024).next_power_of_two(),
            ntt_warp,
            generated: Mutex::new(HashMap::new()),
            claims: Mutex::new(HashMap::new()),
            admission_timeout: config.admission_timeout.unwrap_or(Duration::from_secs(600)),
            poisoned: Mutex::new(None),
            next_buffer: AtomicU64::new(1),
            live: AtomicU64::new(0),
            peak_live: AtomicU64::new(0),
            opened,
            timeline: config.timeline.then(Timeline::default),
        }))
    }
}
