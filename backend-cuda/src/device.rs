//! The device side: context, stream, stream-ordered pool, pinned staging,
//! kernel loading and launches.

use crate::gate::{Claim, Gate};
use crate::nvrtc::{self, Target};
use crate::{ComposeKernel, CudaConfig};
use backend_api::fault::{FaultInjector, FaultSite};
use backend_api::{BackendError, Ctx, Lane, Stage};
use cudarc::driver::sys::{self, CUdeviceptr};
use cudarc::driver::{
    result, CudaContext, CudaEvent, CudaFunction, CudaStream, DriverError, LaunchConfig, PinnedHostSlice, PushKernelArg,
};
use cudarc::nvrtc::Ptx;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// What `probe` reports about one device.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DeviceInfo {
    pub ordinal: usize,
    pub name: String,
    /// (major, minor).
    pub compute_capability: (u32, u32),
    pub total_memory: usize,
    pub multiprocessors: u32,
}

/// Fails with `Unavailable` unless both the driver and NVRTC libraries can
/// be loaded. Checked before any other CUDA call: cudarc panics when a
/// library is missing.
pub fn check_libraries() -> Result<(), BackendError> {
    // SAFETY: only tries to open the library.
    if !unsafe { sys::is_culib_present() } {
        return Err(BackendError::Unavailable("the CUDA driver library (libcuda) was not found".into()));
    }
    if !nvrtc::nvrtc_present() {
        return Err(BackendError::Unavailable("the NVRTC library (libnvrtc) was not found".into()));
    }
    Ok(())
}

fn unavailable(what: &str, e: DriverError) -> BackendError {
    BackendError::Unavailable(format!("{what}: {e}"))
}

/// Lists the CUDA devices. `Unavailable` when there is no driver.
pub fn probe() -> Result<Vec<DeviceInfo>, BackendError> {
    // SAFETY: only tries to open the library.
    if !unsafe { sys::is_culib_present() } {
        return Err(BackendError::Unavailable("the CUDA driver library (libcuda) was not found".into()));
    }
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
    Ok(DeviceInfo { ordinal, name, compute_capability: (major, minor), total_memory, multiprocessors: sms })
}

/// A buffer of u64 in device memory, from the stream-ordered pool; freed
/// in stream order on drop (safe for any later work on the same stream).
/// A buffer made on a lane of a proof holds the proof's claim on the
/// memory gate until it is freed.
pub(crate) struct DevBuf {
    pub(crate) ptr: CUdeviceptr,
    bytes: u64,
    owner: Option<Arc<Claim>>,
    dev: Arc<Device>,
}

impl DevBuf {
    pub(crate) fn at(&self, offset_elems: usize) -> u64 {
        self.ptr + 8 * offset_elems as u64
    }
}

impl Drop for DevBuf {
    fn drop(&mut self) {
        let _ = self.dev.ctx.bind_to_thread();
        // SAFETY: allocated with malloc_async on this stream, freed once.
        unsafe {
            let _ = result::free_async(self.ptr, self.dev.stream.cu_stream());
        }
        if let Some(claim) = &self.owner {
            claim.own(-(self.bytes as i64));
        }
    }
}

/// log2 of the largest NTT tile (elements held in shared memory by a block).
pub(crate) const NTT_TILE_LOG_MAX: u32 = 13;
const STAGING_ELEMS: usize = 8 << 20; // 64 MiB per staging buffer

/// Copies through the pinned buffer with every host thread: one thread's
/// memcpy (~5 GB/s) would otherwise bound the transfer, not the bus.
fn parallel_copy(dst: &mut [u64], src: &[u64]) {
    use rayon::prelude::*;
    const PIECE: usize = 1 << 16;
    dst.par_chunks_mut(PIECE).zip(src.par_chunks(PIECE)).for_each(|(d, s)| d.copy_from_slice(s));
}
const SMALL_COPY: usize = 1 << 16;

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
    pub(crate) stream: Arc<CudaStream>,
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
    /// Two pinned buffers: uploads fill one while the other is in flight.
    staging: Mutex<Vec<PinnedHostSlice<u64>>>,
    generated: Mutex<HashMap<String, CudaFunction>>,
    /// The claim of each reserved lane (see `CudaBackend::reserve`).
    claims: Mutex<HashMap<Lane, Arc<Claim>>>,
    pub(crate) admission_timeout: Duration,
}

impl Device {
    /// Opens the device and compiles (or loads from the disk cache) its
    /// kernels, the interpreter's only when the configuration selects it.
    pub(crate) fn new(ordinal: usize, config: &CudaConfig) -> Result<Arc<Device>, BackendError> {
        let with_interpreter = config.compose == ComposeKernel::Interpreted;
        check_libraries()?;
        let ctx = CudaContext::new(ordinal).map_err(|e| unavailable(&format!("CUDA device {ordinal}"), e))?;
        let info = device_info(ordinal).map_err(|e| unavailable("device query", e))?;
        let stream = ctx.new_stream().map_err(|e| unavailable("stream creation", e))?;
        // Keep freed blocks in the stream-ordered pool instead of returning
        // them to the driver at every synchronization (drain trims it).
        let (pool, own_pool) = match config.pool_limit_bytes {
            None => {
                // SAFETY: the device handle comes from the live context.
                let p = unsafe { result::device::get_default_mem_pool(ctx.cu_device()) }
                    .map_err(|e| unavailable("default memory pool", e))?;
                (p, false)
            }
            Some(limit) => {
                // SAFETY: zeroed props are the documented defaults; the
                // fields set below describe pinned device memory.
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
        let free_now = ctx.mem_get_info().map(|(f, _)| f as u64).unwrap_or(0);
        let gate = Gate::new(Gate::default_budget(config.memory_budget_bytes, free_now));
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
        // Largest NTT tile: up to 2^13 elements (64 KiB of shared memory)
        // where the device allows it.
        let wanted = config.ntt.tile_log.clamp(10, NTT_TILE_LOG_MAX);
        let mut ntt_tile_log = wanted.min(12);
        if let Some(f) = functions.get("ntt_pass") {
            // SAFETY: a live function handle.
            let ok = unsafe {
                result::function::set_function_attribute(
                    f.cu_function(),
                    sys::CUfunction_attribute::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                    8 << NTT_TILE_LOG_MAX,
                )
            };
            if ok.is_ok() {
                ntt_tile_log = wanted;
            }
        }
        Ok(Arc::new(Device {
            ctx,
            pool: Pool(pool),
            own_pool,
            faults: FaultInjector::new(),
            gate,
            stream,
            info,
            functions,
            ntt_tile_log,
            ntt_radix: if config.ntt.radix == 2 { 2 } else { 4 },
            ntt_lanes: config.ntt.lanes,
            ntt_threads: config.ntt.threads.clamp(64, 1024).next_power_of_two(),
            staging: Mutex::new(Vec::new()),
            generated: Mutex::new(HashMap::new()),
            claims: Mutex::new(HashMap::new()),
            admission_timeout: config.admission_timeout.unwrap_or(Duration::from_secs(600)),
        }))
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

    /// Allocates `len` u64 from the stream-ordered pool; an out-of-memory
    /// refusal (or a capped pool's) is a typed device decline.
    pub(crate) fn alloc(self: &Arc<Self>, stage: Stage, ctx: &Ctx, len: usize) -> Result<DevBuf, BackendError> {
        let bytes = 8 * len.max(1);
        self.check(FaultSite::Alloc(stage), stage, ctx, bytes as u64)?;
        self.bind(stage, ctx)?;
        let mut ptr: CUdeviceptr = 0;
        // SAFETY: the stream and the pool are live; memory is initialised
        // by the caller.
        let r = unsafe { sys::cuMemAllocFromPoolAsync(&mut ptr, bytes, self.pool.0, self.stream.cu_stream()) };
        match r.result() {
            Ok(()) => {
                let owner = self.claim_of(ctx.lane);
                if let Some(c) = &owner {
                    c.own(bytes as i64);
                }
                Ok(DevBuf { ptr, bytes: bytes as u64, owner, dev: self.clone() })
            }
            Err(e) if e.0 == sys::cudaError_enum::CUDA_ERROR_OUT_OF_MEMORY => {
                Err(self.decline(stage, ctx, bytes as u64, e.to_string()))
            }
            Err(e) => Err(self.err(stage, ctx, e)),
        }
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

    /// Settles the device after a decline: waits for queued work and
    /// returns the pool's cached memory to the driver.
    pub(crate) fn drain(&self) -> Result<(), BackendError> {
        let ctx = Ctx::table("-");
        self.bind(Stage::Download, &ctx)?;
        self.sync(Stage::Download, &ctx)?;
        // SAFETY: a live pool; nothing is in flight after the sync.
        unsafe { result::mem_pool::trim_to(self.pool.0, 0) }.map_err(|e| self.err(Stage::Download, &ctx, e))
    }

    pub(crate) fn zeros(self: &Arc<Self>, stage: Stage, ctx: &Ctx, len: usize) -> Result<DevBuf, BackendError> {
        let b = self.alloc(stage, ctx, len)?;
        // SAFETY: b is a live allocation of at least 8*len bytes.
        unsafe { result::memset_d8_async(b.ptr, 0, 8 * len, self.stream.cu_stream()) }
            .map_err(|e| self.err(stage, ctx, e))?;
        Ok(b)
    }

    /// Copies host values to `dst` (elements from offset 0); large copies go
    /// through a pinned staging buffer.
    pub(crate) fn htod(&self, stage: Stage, ctx: &Ctx, src: &[u64], dst: CUdeviceptr) -> Result<(), BackendError> {
        self.check(FaultSite::TransferToDevice, stage, ctx, 8 * src.len() as u64)?;
        self.bind(stage, ctx)?;
        let s = self.stream.cu_stream();
        if src.len() <= SMALL_COPY {
            // SAFETY: dst holds src.len() elements; a pageable copy is
            // complete (staged) when the call returns.
            unsafe { result::memcpy_htod_async(dst, src, s) }.map_err(|e| self.err(stage, ctx, e))?;
            return self.sync(stage, ctx);
        }
        let mut guard = self.staging.lock().map_err(|_| self.err(stage, ctx, "staging lock poisoned"))?;
        self.ensure_staging(&mut guard, 2, stage, ctx)?;
        // Double buffering: the host fills one buffer while the copy engine
        // drains the other; a buffer is refilled only after the event
        // recorded behind its last copy has completed.
        let mut in_flight: [Option<CudaEvent>; 2] = [None, None];
        for (i, chunk) in src.chunks(STAGING_ELEMS).enumerate() {
            let slot = i % 2;
            if let Some(ev) = in_flight[slot].take() {
                ev.synchronize().map_err(|e| self.err(stage, ctx, e))?;
            }
            let host = guard[slot].as_mut_slice().map_err(|e| self.err(stage, ctx, e))?;
            parallel_copy(&mut host[..chunk.len()], chunk);
            let d = dst + (8 * i * STAGING_ELEMS) as u64;
            // SAFETY: this buffer is not written again until the event
            // recorded right after this copy has completed.
            unsafe { result::memcpy_htod_async(d, &host[..chunk.len()], s) }.map_err(|e| self.err(stage, ctx, e))?;
            let ev = self.ctx.new_event(None).map_err(|e| self.err(stage, ctx, e))?;
            ev.record(&self.stream).map_err(|e| self.err(stage, ctx, e))?;
            in_flight[slot] = Some(ev);
        }
        self.sync(stage, ctx)
    }

    /// Copies `dst.len()` elements from device memory to the host.
    pub(crate) fn dtoh(&self, stage: Stage, ctx: &Ctx, src: CUdeviceptr, dst: &mut [u64]) -> Result<(), BackendError> {
        self.check(FaultSite::TransferToHost, stage, ctx, 8 * dst.len() as u64)?;
        self.bind(stage, ctx)?;
        let s = self.stream.cu_stream();
        if dst.len() <= SMALL_COPY {
            // SAFETY: src holds dst.len() elements; synchronized below.
            unsafe { result::memcpy_dtoh_async(dst, src, s) }.map_err(|e| self.err(stage, ctx, e))?;
            return self.sync(stage, ctx);
        }
        let mut guard = self.staging.lock().map_err(|_| self.err(stage, ctx, "staging lock poisoned"))?;
        self.ensure_staging(&mut guard, 1, stage, ctx)?;
        let pinned = &mut guard[0];
        for (i, chunk) in dst.chunks_mut(STAGING_ELEMS).enumerate() {
            let host = pinned.as_mut_slice().map_err(|e| self.err(stage, ctx, e))?;
            let d = src + (8 * i * STAGING_ELEMS) as u64;
            let n = chunk.len();
            // SAFETY: as above; synchronized before the host reads it.
            unsafe { result::memcpy_dtoh_async(&mut host[..n], d, s) }.map_err(|e| self.err(stage, ctx, e))?;
            self.sync(stage, ctx)?;
            parallel_copy(chunk, &host[..n]);
        }
        Ok(())
    }

    /// Makes sure `count` pinned staging buffers exist.
    fn ensure_staging(
        &self,
        bufs: &mut Vec<PinnedHostSlice<u64>>,
        count: usize,
        stage: Stage,
        ctx: &Ctx,
    ) -> Result<(), BackendError> {
        while bufs.len() < count {
            // SAFETY: plain page-locked memory (not write-combined: it is
            // read back on downloads); initialised before use.
            let p = unsafe { self.ctx.alloc_pinned_with_flags::<u64>(STAGING_ELEMS, 0) }.map_err(|e| {
                if e.0 == sys::cudaError_enum::CUDA_ERROR_OUT_OF_MEMORY {
                    self.decline(stage, ctx, 8 * STAGING_ELEMS as u64, format!("pinned staging: {e}"))
                } else {
                    self.err(stage, ctx, e)
                }
            })?;
            bufs.push(p);
        }
        Ok(())
    }

    pub(crate) fn sync(&self, stage: Stage, ctx: &Ctx) -> Result<(), BackendError> {
        self.stream.synchronize().map_err(|e| self.err(stage, ctx, e))
    }

    /// Launches `f` with u64 arguments (pointers and scalars alike).
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn launch(
        &self,
        stage: Stage,
        ctx: &Ctx,
        f: &CudaFunction,
        grid: (u32, u32, u32),
        block: u32,
        smem: u32,
        args: &[u64],
    ) -> Result<(), BackendError> {
        self.check(FaultSite::Launch(stage), stage, ctx, 0)?;
        let cfg = LaunchConfig { grid_dim: grid, block_dim: (block, 1, 1), shared_mem_bytes: smem };
        let mut b = self.stream.launch_builder(f);
        for a in args {
            b.arg(a);
        }
        // SAFETY: every kernel takes exactly these u64 parameters (see
        // kernels-cuda); pointers are live allocations on this stream.
        unsafe { b.launch(cfg) }.map(|_| ()).map_err(|e| {
            if e.0 == sys::cudaError_enum::CUDA_ERROR_OUT_OF_MEMORY
                || e.0 == sys::cudaError_enum::CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES
            {
                self.decline(stage, ctx, smem as u64, format!("launch refused: {e}"))
            } else {
                self.err(stage, ctx, format!("launch failed: {e}"))
            }
        })
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

    /// What the first prove would otherwise pay for: the pinned staging
    /// buffers, and `reserve_bytes` of the memory pool taken and given
    /// back (the pool keeps freed blocks).
    pub(crate) fn warm_up(self: &Arc<Self>, reserve_bytes: u64) -> Result<(), BackendError> {
        let (stage, ctx) = (Stage::Upload, Ctx::table("warm-up"));
        let mut guard = self.staging.lock().map_err(|_| self.err(stage, &ctx, "staging lock poisoned"))?;
        self.ensure_staging(&mut guard, 2, stage, &ctx)?;
        drop(guard);
        if reserve_bytes > 0 {
            drop(self.alloc(stage, &ctx, (reserve_bytes / 8) as usize)?);
            self.sync(stage, &ctx)?;
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

/// Compiles each `(name, source)` for `target` on its own thread (NVRTC is
/// thread-safe across programs): a cold start pays for the slowest
/// module, not the sum. Results in the order given.
fn compile_parallel(sources: &[(&str, String)], target: Target) -> Vec<Result<Vec<u8>, String>> {
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
            let _ = self.stream.synchronize();
            // SAFETY: every buffer of this pool holds an Arc<Device>, so none
            // is left; the pool is destroyed once.
            unsafe {
                let _ = result::mem_pool::destroy(self.pool.0);
            }
        }
    }
}
