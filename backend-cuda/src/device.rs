//! The device: its context, chosen by ordinal; its stream-ordered pool;
//! kernel loading; the memory gate and the claims of reserved lanes;
//! decline and fault sites. Streams, buffers and transfers are in
//! `stream`.

use crate::nvrtc::{self, Target};
use crate::race::Race;
use crate::stream::{RootSlots, StagingPool, Streams};
use crate::timeline::Timeline;
use crate::{ComposeKernel, CudaConfig};
use backend_api::fault::{FaultInjector, FaultSite};
use backend_api::gate::{Claim, Gate};
use backend_api::{BackendError, Ctx, Lane, Stage};
use cudarc::driver::sys;
use cudarc::driver::{result, CudaContext, CudaFunction, DriverError};
use cudarc::nvrtc::Ptx;
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
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

/// log2 of the largest NTT tile (elements held in shared memory by a block).
pub(crate) const NTT_TILE_LOG_MAX: u32 = 13;

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
        let functions = load_kernels(&ctx, &info, config.compose == ComposeKernel::Interpreted)?;
        let kernels = t1.elapsed();
        let ntt_tile_log = tile_log(&functions, config.ntt.tile_log);
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

    pub(crate) fn pool(&self) -> sys::CUmemoryPool {
        self.pool.0
    }

    pub(crate) fn next_buffer_id(&self) -> u64 {
        self.next_buffer.fetch_add(1, Ordering::Relaxed)
    }

    /// A buffer of `delta` bytes made (negative: freed).
    pub(crate) fn note_live(&self, delta: i64) {
        if delta >= 0 {
            let now = self.live.fetch_add(delta as u64, Ordering::AcqRel) + delta as u64;
            self.peak_live.fetch_max(now, Ordering::AcqRel);
        } else {
            self.live.fetch_sub(delta.unsigned_abs(), Ordering::AcqRel);
        }
    }

    /// (live, peak) bytes of buffers; `reset_peak` starts a new peak from now.
    pub(crate) fn live_bytes(&self, reset_peak: bool) -> (u64, u64) {
        let live = self.live.load(Ordering::Acquire);
        let peak = if reset_peak {
            self.peak_live.swap(live, Ordering::AcqRel)
        } else {
            self.peak_live.load(Ordering::Acquire)
        };
        (live, peak)
    }

    /// Marks the device untrustworthy: every later operation fails.
    pub(crate) fn poison(&self, why: String) {
        let mut p = self.poisoned.lock().unwrap_or_else(|p| p.into_inner());
        p.get_or_insert(why);
    }

    /// Fails when the device is poisoned, or (checking races) when a race
    /// was found: the error names the buffer, stage and table.
    pub(crate) fn healthy(&self, stage: Stage, ctx: &Ctx) -> Result<(), BackendError> {
        if let Some(why) = self.poisoned.lock().unwrap_or_else(|p| p.into_inner()).as_ref() {
            return Err(self.err(stage, ctx, format!("the device is unusable after an earlier failure: {why}")));
        }
        if let Some(r) = self.races().first() {
            return Err(self.err(stage, ctx, r));
        }
        Ok(())
    }

    pub(crate) fn races(&self) -> Vec<Race> {
        self.streams.races()
    }

    pub(crate) fn err(&self, stage: Stage, ctx: &Ctx, e: impl std::fmt::Display) -> BackendError {
        BackendError::Device { stage, table: ctx.table.to_string(), message: e.to_string() }
    }

    pub(crate) fn bind(&self, stage: Stage, ctx: &Ctx) -> Result<(), BackendError> {
        self.ctx.bind_to_thread().map_err(|e| self.err(stage, ctx, e))
    }

    pub(crate) fn func(&self, name: &str) -> &CudaFunction {
        self.functions.get(name).expect("every listed kernel is loaded at start")
    }

    /// Free device memory now (cuMemGetInfo); 0 when the query fails.
    pub(crate) fn free_bytes(&self) -> u64 {
        self.ctx.mem_get_info().map(|(f, _)| f as u64).unwrap_or(0)
    }

    /// The decline the device gives for `stage` (an injected fault gives
    /// exactly the same, with the real free memory).
    pub(crate) fn decline(&self, stage: Stage, ctx: &Ctx, requested: u64, reason: impl Into<String>) -> BackendError {
        BackendError::DeviceDecline {
            stage,
            table: ctx.table.to_string(),
            requested_bytes: requested,
            free_bytes: self.free_bytes(),
            reason: reason.into(),
        }
    }

    /// Declines when a fault is armed at `site`.
    pub(crate) fn check(&self, site: FaultSite, stage: Stage, ctx: &Ctx, requested: u64) -> Result<(), BackendError> {
        if self.faults.should_fail(site) {
            return Err(self.decline(site.stage(stage), ctx, requested, format!("injected fault at {site}")));
        }
        Ok(())
    }

    /// The claim `lane` works under, if its proof reserved one.
    pub(crate) fn claim_of(&self, lane: Lane) -> Option<Arc<Claim>> {
        if lane == Lane::NONE {
            return None;
        }
        self.claims.lock().unwrap_or_else(|p| p.into_inner()).get(&lane).cloned()
    }

    /// Work on `lanes` runs under `claim` until [`Device::release_lanes`].
    pub(crate) fn claim_lanes(&self, lanes: &[Lane], claim: &Arc<Claim>) {
        let mut map = self.claims.lock().unwrap_or_else(|p| p.into_inner());
        for &l in lanes.iter().filter(|&&l| l != Lane::NONE) {
            map.insert(l, claim.clone());
        }
    }

    pub(crate) fn release_lanes(&self, lanes: &[Lane]) {
        let mut map = self.claims.lock().unwrap_or_else(|p| p.into_inner());
        for l in lanes {
            map.remove(l);
        }
    }

    /// Settles the device after a decline: waits for queued work on every
    /// stream and returns the pool's cached memory to the driver.
    pub(crate) fn drain(&self) -> Result<(), BackendError> {
        let ctx = Ctx::table("-");
        self.sync_all(Stage::Download, &ctx)?;
        // SAFETY: a live pool; nothing is in flight after the sync.
        unsafe { result::mem_pool::trim_to(self.pool.0, 0) }.map_err(|e| self.err(Stage::Download, &ctx, e))
    }

    /// The pool's (in use, high-water) bytes as the driver counts them;
    /// `reset_high` restarts the high-water mark from the bytes in use.
    pub(crate) fn pool_usage(&self, reset_high: bool) -> Result<(u64, u64), BackendError> {
        let ctx = Ctx::table("-");
        let get = |attr| -> Result<u64, BackendError> {
            let mut v: u64 = 0;
            // SAFETY: a live pool; these attributes are u64.
            unsafe { result::mem_pool::get_attribute(self.pool.0, attr, &mut v as *mut u64 as *mut _) }
                .map_err(|e| self.err(Stage::Download, &ctx, e))?;
            Ok(v)
        };
        use sys::CUmemPool_attribute::*;
        let (used, high) = (get(CU_MEMPOOL_ATTR_USED_MEM_CURRENT)?, get(CU_MEMPOOL_ATTR_USED_MEM_HIGH)?);
        if reset_high {
            let mut zero: u64 = 0;
            // SAFETY: as above; setting the high-water mark to 0 resets it.
            unsafe {
                result::mem_pool::set_attribute(
                    self.pool.0,
                    CU_MEMPOOL_ATTR_USED_MEM_HIGH,
                    &mut zero as *mut u64 as *mut _,
                )
            }
            .map_err(|e| self.err(Stage::Download, &ctx, e))?;
        }
        Ok((used, high))
    }

    /// Compiles (in parallel, through the disk cache) and loads generated
    /// kernels ahead of their first use: `(name, source, kernel)` each.
    pub(crate) fn prepare(&self, kernels: &[(&str, String, &str)]) -> Result<(), BackendError> {
        let (stage, ctx) = (Stage::Compose, Ctx::table("prepare"));
        let todo: Vec<&(&str, String, &str)> = {
            let cache = self.generated.lock().map_err(|_| self.err(stage, &ctx, "kernel cache lock poisoned"))?;
            kernels.iter().filter(|(_, source, _)| !cache.contains_key(source)).collect()
        };
        let sources: Vec<(&str, String)> = todo.iter().map(|(name, source, _)| (*name, source.clone())).collect();
        let (ma, mi) = self.info.compute_capability;
        for ((_, source, kernel), image) in todo.into_iter().zip(compile_parallel(&sources, Target::Cubin(ma, mi))) {
            let image = image.map_err(|e| self.err(stage, &ctx, e))?;
            let module = self.ctx.load_module(Ptx::from_binary(image)).map_err(|e| self.err(stage, &ctx, e))?;
            let f = module.load_function(kernel).map_err(|e| self.err(stage, &ctx, e))?;
            let mut cache = self.generated.lock().map_err(|_| self.err(stage, &ctx, "kernel cache lock poisoned"))?;
            cache.insert(source.clone(), f);
        }
        Ok(())
    }

    /// What the first prove would otherwise pay for: a pinned staging set,
    /// and `reserve_bytes` of the memory pool taken and given back (the
    /// pool keeps freed blocks).
    pub(crate) fn warm_up(self: &Arc<Self>, reserve_bytes: u64) -> Result<(), BackendError> {
        let (stage, ctx) = (Stage::Upload, Ctx::table("warm-up"));
        self.staging.warm(self, stage, &ctx)?;
        if reserve_bytes > 0 {
            let mut scope = crate::stream::Scope::new(self, stage, &ctx)?;
            drop(scope.alloc((reserve_bytes / 8) as usize)?);
            scope.sync()?;
        }
        Ok(())
    }

    /// A generated kernel, compiled (through the disk cache) once per source.
    pub(crate) fn generated(
        &self,
        stage: Stage,
        ctx: &Ctx,
        name: &str,
        source: &str,
        kernel: &str,
    ) -> Result<CudaFunction, BackendError> {
        let mut cache = self.generated.lock().map_err(|_| self.err(stage, ctx, "kernel cache lock poisoned"))?;
        if let Some(f) = cache.get(source) {
            return Ok(f.clone());
        }
        let (ma, mi) = self.info.compute_capability;
        let c = nvrtc::compile(name, source, Target::Cubin(ma, mi)).map_err(|e| self.err(stage, ctx, e))?;
        let module = self.ctx.load_module(Ptx::from_binary(c.image)).map_err(|e| self.err(stage, ctx, e))?;
        let f = module.load_function(kernel).map_err(|e| self.err(stage, ctx, e))?;
        cache.insert(source.to_string(), f.clone());
        Ok(f)
    }
}

/// The stream-ordered pool every buffer comes from: the device's default
/// pool, or one of our own capped at `limit` bytes (allocations past the
/// cap are refused by the driver: a real decline for tests). Freed blocks
/// stay in the pool instead of going back to the driver at every
/// synchronisation (drain trims it).
fn open_pool(
    ctx: &Arc<CudaContext>,
    ordinal: usize,
    limit: Option<u64>,
) -> Result<(sys::CUmemoryPool, bool), BackendError> {
    let (pool, own) = match limit {
        None => {
            // SAFETY: the device handle comes from the live context.
            let p = unsafe { result::device::get_default_mem_pool(ctx.cu_device()) }
                .map_err(|e| unavailable("default memory pool", e))?;
            (p, false)
        }
        Some(limit) => {
            // SAFETY: zeroed props are the documented defaults; the fields
            // set below describe pinned device memory.
            let mut props: sys::CUmemPoolProps = unsafe { std::mem::zeroed() };
            props.allocType = sys::CUmemAllocationType::CU_MEM_ALLOCATION_TYPE_PINNED;
            props.handleTypes = sys::CUmemAllocationHandleType::CU_MEM_HANDLE_TYPE_NONE;
            props.location.type_ = sys::CUmemLocationType::CU_MEM_LOCATION_TYPE_DEVICE;
            props.location.id = ordinal as i32;
            props.maxSize = limit as usize;
            // SAFETY: props is a valid, initialised CUmemPoolProps.
            let p = unsafe { result::mem_pool::create(&props) }
                .map_err(|e| unavailable(&format!("memory pool of {limit} bytes"), e))?;
            (p, true)
        }
    };
    // SAFETY: a live pool; the attribute takes a u64.
    unsafe {
        let mut threshold: u64 = u64::MAX;
        let _ = result::mem_pool::set_attribute(
            pool,
            sys::CUmemPool_attribute::CU_MEMPOOL_ATTR_RELEASE_THRESHOLD,
            &mut threshold as *mut u64 as *mut _,
        );
    }
    Ok((pool, own))
}

/// Every module of kernels-cuda compiled for the device (the interpreter's
/// only when wanted) and loaded.
fn load_kernels(
    ctx: &Arc<CudaContext>,
    info: &DeviceInfo,
    with_interpreter: bool,
) -> Result<HashMap<&'static str, CudaFunction>, BackendError> {
    let target = Target::Cubin(info.compute_capability.0, info.compute_capability.1);
    let modules: Vec<&kernels_cuda::Module> =
        kernels_cuda::MODULES.iter().filter(|m| with_interpreter || m.name != "compose_interp").collect();
    let sources: Vec<(&str, String)> = modules.iter().map(|m| (m.name, m.source())).collect();
    let mut functions = HashMap::new();
    for (m, image) in modules.iter().zip(compile_parallel(&sources, target)) {
        let image = image.map_err(|e| BackendError::Unavailable(format!("kernel compilation: {e}")))?;
        let module = ctx
            .load_module(Ptx::from_binary(image))
            .map_err(|e| unavailable(&format!("loading module {}", m.name), e))?;
        for k in m.kernels {
            let f = module.load_function(k).map_err(|e| unavailable(&format!("kernel {k}"), e))?;
            functions.insert(*k, f);
        }
    }
    Ok(functions)
}

/// The largest NTT tile: up to 2^13 elements (64 KiB of shared memory)
/// where the device allows it, else 2^12.
fn tile_log(functions: &HashMap<&'static str, CudaFunction>, wanted: u32) -> u32 {
    let wanted = wanted.clamp(10, NTT_TILE_LOG_MAX);
    let Some(f) = functions.get("ntt_pass") else { return wanted.min(12) };
    // SAFETY: a live function handle.
    let ok = unsafe {
        result::function::set_function_attribute(
            f.cu_function(),
            sys::CUfunction_attribute::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
            8 << NTT_TILE_LOG_MAX,
        )
    };
    if ok.is_ok() {
        wanted
    } else {
        wanted.min(12)
    }
}

/// Compiles each `(name, source)` for `target` on its own thread (NVRTC is
/// thread-safe across programs): a cold start pays for the slowest
/// module, not the sum. Results in the order given.
pub(crate) fn compile_parallel(sources: &[(&str, String)], target: Target) -> Vec<Result<Vec<u8>, String>> {
    std::thread::scope(|scope| {
        let handles: Vec<_> = sources
            .iter()
            .map(|(name, source)| scope.spawn(move || nvrtc::compile(name, source, target).map(|c| c.image)))
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().unwrap_or_else(|_| Err("the compiling thread panicked".to_string())))
            .collect()
    })
}

impl Drop for Device {
    fn drop(&mut self) {
        if self.own_pool {
            let _ = self.ctx.bind_to_thread();
            let _ = self.ctx.synchronize();
            // SAFETY: every buffer of this pool holds an Arc<Device>, so none
            // is left; the pool is destroyed once.
            unsafe {
                let _ = result::mem_pool::destroy(self.pool.0);
            }
        }
    }
}
