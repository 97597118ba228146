//! The device side: adapter discovery, the device and its queue, buffers
//! (allocated inside an out-of-memory error scope), kernels (WGSL compiled
//! once per source), dispatches recorded into one command encoder per
//! operation, and read-back. Every wgpu error becomes a typed
//! `BackendError`; nothing panics on a device failure.

use backend_api::fault::{FaultInjector, FaultSite};
use backend_api::gate::Gate;
use backend_api::host::{parallel_copy, try_zeroed};
use backend_api::{BackendError, Ctx, Stage};
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

/// What `probe` reports about one adapter.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AdapterInfo {
    /// Position in `probe`'s list (the order `WgpuConfig::adapter` uses).
    pub index: usize,
    pub name: String,
    /// "vulkan", "metal", "dx12".
    pub api: String,
    /// "discrete gpu", "integrated gpu", "cpu", ...
    pub kind: String,
    pub driver: String,
    /// Largest storage-buffer binding, in bytes.
    pub max_binding_bytes: u64,
    /// Largest buffer, in bytes.
    pub max_buffer_bytes: u64,
    /// Workgroup (shared) memory, in bytes.
    pub workgroup_bytes: u32,
    pub storage_buffers_per_stage: u32,
    pub push_constant_bytes: u32,
    /// Whether the adapter has 64-bit integers in shaders.
    pub int64: bool,
}

fn instance() -> wgpu::Instance {
    wgpu::Instance::new(&wgpu::InstanceDescriptor {
        backends: wgpu::Backends::VULKAN | wgpu::Backends::METAL | wgpu::Backends::DX12,
        // No validation layers unless asked for (WGPU_VALIDATION=1): debug
        // builds would otherwise look for them on every start.
        flags: wgpu::InstanceFlags::empty().with_env(),
        ..Default::default()
    })
}

/// Adapters in the order backends are made from: GPUs first, then CPU
/// implementations such as lavapipe, each group in enumeration order.
fn adapters(inst: &wgpu::Instance) -> Vec<wgpu::Adapter> {
    let mut all = inst.enumerate_adapters(wgpu::Backends::all());
    all.sort_by_key(|a| matches!(a.get_info().device_type, wgpu::DeviceType::Cpu | wgpu::DeviceType::Other));
    all
}

fn info_of(index: usize, a: &wgpu::Adapter) -> AdapterInfo {
    let i = a.get_info();
    let l = a.limits();
    AdapterInfo {
        index,
        name: i.name,
        api: format!("{:?}", i.backend).to_lowercase(),
        kind: match i.device_type {
            wgpu::DeviceType::DiscreteGpu => "discrete gpu",
            wgpu::DeviceType::IntegratedGpu => "integrated gpu",
            wgpu::DeviceType::VirtualGpu => "virtual gpu",
            wgpu::DeviceType::Cpu => "cpu",
            wgpu::DeviceType::Other => "other",
        }
        .into(),
        driver: format!("{} {}", i.driver, i.driver_info).trim().to_string(),
        max_binding_bytes: l.max_storage_buffer_binding_size as u64,
        max_buffer_bytes: l.max_buffer_size,
        workgroup_bytes: l.max_compute_workgroup_storage_size,
        storage_buffers_per_stage: l.max_storage_buffers_per_shader_stage,
        push_constant_bytes: l.max_push_constant_size,
        int64: a.features().contains(wgpu::Features::SHADER_INT64),
    }
}

/// Lists the adapters wgpu finds (Vulkan, Metal, DX12). An empty list when
/// there is no GPU and no Vulkan loader; never a panic.
pub fn probe() -> Vec<AdapterInfo> {
    let inst = instance();
    adapters(&inst).iter().enumerate().map(|(i, a)| info_of(i, a)).collect()
}

/// Threads per workgroup of every kernel.
pub(crate) const WG: u32 = 256;
/// Push-constant bytes every kernel may use (the least Vulkan guarantees).
pub(crate) const PC_BYTES: u32 = 128;
/// Bytes of an upload staged and sent at a time: the device copies one
/// piece while the host fills the next.
const WRITE_PIECE: usize = 64 << 20;
/// Bytes of a read-back staged at a time: the device copies one piece
/// while the host copies out the one before.
const READ_PIECE: u64 = 64 << 20;
/// Smallest read-back staging buffer: small reads share one size.
const STAGING_MIN: u64 = 64 << 10;
/// Most bytes of idle read-back staging kept for reuse (two pieces for
/// each of two reading threads).
const STAGING_IDLE_MAX: u64 = 4 * READ_PIECE;
/// Most upload staging buffers (64 MiB pieces: two in flight while the
/// host fills a third).
const UPLOAD_STAGING_MAX: usize = 4;
/// Smallest write staged through the upload pool; smaller ones go
/// through wgpu's own staging (suballocated, cheap for small sizes).
const STAGED_WRITE_MIN: usize = 1 << 20;
/// Most bytes of idle device buffers kept for reuse on a GPU (a quarter
/// of the memory budget where one is set): the 2^20-cycle prove's
/// buffers fit, so its rounds allocate nothing. An allocation the device
/// refuses empties the pool first.
const BUFFERS_IDLE_MAX: u64 = 16 << 30;
/// The same on a CPU adapter (lavapipe), whose buffers are host memory.
const BUFFERS_IDLE_MAX_CPU: u64 = 4 << 30;

/// Buffers no longer used, kept for reuse: a new buffer costs the driver
/// an allocation that grows with its size (about 2.2 ms per 64 MiB on the
/// H200, more than the transforms that fill it), and the prover asks for
/// the same sizes round after round. Oldest first; at most `cap` bytes.
///
/// A buffer dropped while a job that may use it is still being recorded
/// waits until every job open at its drop has been submitted (or
/// abandoned): work recorded but not submitted is not yet in the queue's
/// order, and the buffer's next user could otherwise overwrite it first.
pub(crate) struct BufferPool {
    state: Mutex<PoolState>,
    cap: u64,
}

#[derive(Default)]
struct PoolState {
    idle: std::collections::VecDeque<wgpu::Buffer>,
    /// Dropped buffers with the first job id not yet open at their drop.
    waiting: Vec<(u64, wgpu::Buffer)>,
    /// Jobs being recorded.
    open: std::collections::BTreeSet<u64>,
    next_job: u64,
}

impl BufferPool {
    fn new(cap: u64) -> BufferPool {
        BufferPool { state: Mutex::new(PoolState::default()), cap }
    }

    fn state(&self) -> std::sync::MutexGuard<'_, PoolState> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The smallest idle buffer whose size `fits`, the newest of equals.
    fn take(&self, fits: impl Fn(u64) -> bool) -> Option<wgpu::Buffer> {
        let mut st = self.state();
        let (i, _) = st.idle.iter().enumerate().rev().filter(|(_, b)| fits(b.size())).min_by_key(|(_, b)| b.size())?;
        st.idle.remove(i)
    }

    /// Keeps `buf` (once no job open now can still record a use of it).
    fn give(&self, buf: wgpu::Buffer) {
        if buf.size() > self.cap {
            return;
        }
        let mut st = self.state();
        if st.open.is_empty() {
            self.keep(&mut st, buf);
        } else {
            let tag = st.next_job;
            st.waiting.push((tag, buf));
        }
    }

    /// Adds `buf` to the idle buffers, freeing the oldest past the cap.
    fn keep(&self, st: &mut PoolState, buf: wgpu::Buffer) {
        let mut held: u64 = st.idle.iter().map(|b| b.size()).sum::<u64>() + buf.size();
        while held > self.cap {
            held -= st.idle.pop_front().map_or(0, |b| b.size());
        }
        st.idle.push_back(buf);
    }

    /// A job starts recording: its id.
    fn open(&self) -> u64 {
        let mut st = self.state();
        let id = st.next_job;
        st.next_job += 1;
        st.open.insert(id);
        id
    }

    /// Job `id` was submitted or abandoned: buffers that no open job
    /// predates become idle.
    fn close(&self, id: u64) {
        let mut st = self.state();
        st.open.remove(&id);
        let oldest = st.open.first().copied().unwrap_or(u64::MAX);
        let (ready, waiting): (Vec<_>, Vec<_>) =
            std::mem::take(&mut st.waiting).into_iter().partition(|(t, _)| *t <= oldest);
        st.waiting = waiting;
        for (_, b) in ready {
            self.keep(&mut st, b);
        }
    }

    /// Frees every idle buffer; whether there were any.
    pub(crate) fn release(&self) -> bool {
        let mut st = self.state();
        let any = !st.idle.is_empty();
        st.idle.clear();
        any
    }

    #[cfg(test)]
    fn idle_sizes(&self) -> Vec<u64> {
        self.state().idle.iter().map(|b| b.size()).collect()
    }
}

/// Marks a job open in the buffer pool while it records; closes it when
/// dropped, which `Job::submit` does after submitting.
struct JobTicket {
    pool: Arc<BufferPool>,
    id: u64,
}

impl Drop for JobTicket {
    fn drop(&mut self) {
        self.pool.close(self.id);
    }
}

/// A device buffer that goes back to its pool when dropped.
pub(crate) struct DeviceBuffer {
    buf: Option<wgpu::Buffer>,
    pool: Arc<BufferPool>,
}

impl std::ops::Deref for DeviceBuffer {
    type Target = wgpu::Buffer;
    fn deref(&self) -> &wgpu::Buffer {
        self.buf.as_ref().expect("a live buffer")
    }
}

impl Drop for DeviceBuffer {
    fn drop(&mut self) {
        // Work already submitted that uses it runs first: the queue is in
        // order, so its next user's writes come after.
        if let Some(b) = self.buf.take() {
            self.pool.give(b);
        }
    }
}

/// The device state shared by every backend made with the same settings
/// in a process: the wgpu device, its queue and the compiled kernels, so a
/// new backend costs no device start and no shader compilation.
pub(crate) struct Core {
    device: wgpu::Device,
    queue: wgpu::Queue,
    pub(crate) info: AdapterInfo,
    /// Largest buffer we bind or allocate, in bytes (the adapter's limits,
    /// or a smaller test override).
    pub(crate) max_binding: u64,
    pub(crate) storage_per_stage: u32,
    /// log2 of the elements an NTT workgroup holds in workgroup memory.
    pub(crate) tile_log: u32,
    pub(crate) int64: bool,
    pub(crate) gate: Arc<Gate>,
    lost: Arc<AtomicBool>,
    /// wgpu's error scopes are one stack per device, shared by every
    /// thread: a push and its pop must not interleave with another
    /// thread's, or one operation would read another's error.
    scopes: Mutex<()>,
    kernels: Mutex<HashMap<String, Arc<Kernel>>>,
    /// Placeholders for bindings a kernel variant does not use: one for
    /// read-only bindings, one for writable ones (a buffer may not be both
    /// in one dispatch).
    pub(crate) dummy: wgpu::Buffer,
    pub(crate) dummy_w: wgpu::Buffer,
    /// Idle storage buffers, reused by `alloc`.
    pub(crate) buffers: Arc<BufferPool>,
    /// Idle read-back buffers (mappable host memory), reused: a fresh
    /// one costs the driver an allocation of pinned host memory, which
    /// took longer than the copy for small reads.
    staging: BufferPool,
    /// Upload staging: a new large mappable buffer pins host memory,
    /// which costs more than the copy (the read-backs' reason, for
    /// uploads).
    upload_staging: UploadStaging,
    /// Clears of reused buffers, sent with the next submission (before
    /// its work) rather than each in a submission of its own.
    clears: Mutex<Option<wgpu::CommandEncoder>>,
    /// Device time per kernel, when asked for (`KILN_WGPU_PROFILE=1`).
    pub(crate) profiler: Option<crate::profile::Profiler>,
}

/// One backend's view of a [`Core`]: the shared device and this backend's
/// own decline sites.
pub(crate) struct Device {
    core: Arc<Core>,
    pub(crate) faults: FaultInjector,
}

impl std::ops::Deref for Device {
    type Target = Core;
    fn deref(&self) -> &Core {
        &self.core
    }
}

/// A compiled kernel: its pipeline and binding layout, and its name in
/// profiles.
pub(crate) struct Kernel {
    pipeline: wgpu::ComputePipeline,
    layout: wgpu::BindGroupLayout,
    bindings: usize,
    label: &'static str,
}

/// What `Device::new` needs from the backend's configuration.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) struct Settings {
    pub adapter: usize,
    pub max_binding_bytes: Option<u64>,
    pub memory_budget_bytes: Option<u64>,
    pub int64: bool,
    /// At most 2^tile_log elements in an NTT workgroup's tile.
    pub tile_log: Option<u32>,
}

fn unavailable(e: impl std::fmt::Display) -> BackendError {
    BackendError::Unavailable(e.to_string())
}

impl Device {
    /// A backend's device: the process's core for these settings (made on
    /// first use, or again after a device loss), with fresh fault sites.
    pub(crate) fn new(s: &Settings) -> Result<Device, BackendError> {
        static CORES: OnceLock<Mutex<HashMap<Settings, Arc<Core>>>> = OnceLock::new();
        let mut cores = CORES.get_or_init(Default::default).lock().unwrap_or_else(|p| p.into_inner());
        let core = match cores.get(s) {
            Some(c) if !c.lost.load(Ordering::Acquire) => c.clone(),
            _ => {
                let c = Arc::new(Core::new(s)?);
                cores.insert(*s, c.clone());
                c
            }
        };
        Ok(Device { core, faults: FaultInjector::new() })
    }
}

impl Core {
    fn new(s: &Settings) -> Result<Core, BackendError> {
        let inst = instance();
        let list = adapters(&inst);
        if list.is_empty() {
            return Err(unavailable("no wgpu adapter (no GPU driver, or no Vulkan loader, Metal or DX12)"));
        }
        let adapter = list
            .get(s.adapter)
            .ok_or_else(|| unavailable(format!("no wgpu adapter {} ({} found)", s.adapter, list.len())))?;
        let info = info_of(s.adapter, adapter);
        let features = adapter.features();
        if !features.contains(wgpu::Features::PUSH_CONSTANTS) || info.push_constant_bytes < PC_BYTES {
            return Err(unavailable(format!("adapter {} has no {PC_BYTES}-byte push constants", info.name)));
        }
        let int64 = s.int64 && features.contains(wgpu::Features::SHADER_INT64);
        let mut required_features = wgpu::Features::PUSH_CONSTANTS;
        if int64 {
            required_features |= wgpu::Features::SHADER_INT64;
        }
        if crate::profile::wanted() {
            required_features |= features & wgpu::Features::TIMESTAMP_QUERY;
        }
        let limits = adapter.limits();
        let (device, queue) = pollster::block_on(adapter.request_device(&wgpu::DeviceDescriptor {
            label: Some("kiln"),
            required_features,
            required_limits: limits.clone(),
            memory_hints: wgpu::MemoryHints::Performance,
            trace: wgpu::Trace::Off,
        }))
        .map_err(|e| unavailable(format!("device request on {}: {e}", info.name)))?;
        // Errors outside a scope are logged, never a panic; every operation
        // runs inside scopes that turn its errors into typed results.
        device.on_uncaptured_error(Box::new(|e| log::error!("wgpu: {e}")));
        let lost = Arc::new(AtomicBool::new(false));
        let flag = lost.clone();
        device.set_device_lost_callback(move |reason, msg| {
            flag.store(true, Ordering::Release);
            log::warn!("wgpu device lost ({reason:?}): {msg}");
        });
        let adapter_max = (limits.max_storage_buffer_binding_size as u64).min(limits.max_buffer_size);
        let max_binding = s.max_binding_bytes.map_or(adapter_max, |m| m.clamp(256, adapter_max)) & !7;
        // 8 bytes an element; at most 2^11 elements (8 KiB vs the 16 KiB
        // WebGPU guarantees), fewer where the adapter has less.
        let tile_log = (limits.max_compute_workgroup_storage_size / 8).max(2).ilog2().min(11);
        let tile_log = s.tile_log.map_or(tile_log, |t| t.clamp(4, tile_log));
        // One gate per device (a device is shared per adapter and settings);
        // wgpu cannot tell free memory, so no budget means none.
        let gate = Gate::new(s.memory_budget_bytes.unwrap_or(u64::MAX));
        let placeholder = || {
            device.create_buffer(&wgpu::BufferDescriptor {
                label: Some("placeholder"),
                size: 16,
                usage: wgpu::BufferUsages::STORAGE,
                mapped_at_creation: false,
            })
        };
        let (dummy, dummy_w) = (placeholder(), placeholder());
        let profiler = crate::profile::Profiler::new(required_features, &queue);
        let idle_max = if info.kind == "cpu" { BUFFERS_IDLE_MAX_CPU } else { BUFFERS_IDLE_MAX };
        Ok(Core {
            device,
            queue,
            storage_per_stage: limits.max_storage_buffers_per_shader_stage,
            info,
            max_binding,
            tile_log,
            int64,
            gate,
            lost,
            scopes: Mutex::new(()),
            kernels: Mutex::new(HashMap::new()),
            dummy,
            dummy_w,
            buffers: Arc::new(BufferPool::new(s.memory_budget_bytes.map_or(idle_max, |b| b / 4))),
            staging: BufferPool::new(STAGING_IDLE_MAX),
            upload_staging: UploadStaging::default(),
            clears: Mutex::new(None),
            profiler,
        })
    }
}

impl Device {
    pub(crate) fn err(&self, stage: Stage, ctx: &Ctx, e: impl std::fmt::Display) -> BackendError {
        BackendError::Device { stage, table: ctx.table.to_string(), message: e.to_string() }
    }

    /// The decline the device gives for `stage`. wgpu cannot say how much
    /// memory is free: the gate's remaining budget stands in for it when a
    /// budget is set, else 0 (unknown).
    pub(crate) fn decline(&self, stage: Stage, ctx: &Ctx, requested: u64, reason: impl Into<String>) -> BackendError {
        let gate = self.gate.stats();
        let free = if gate.budget == u64::MAX { 0 } else { gate.budget.saturating_sub(gate.held) };
        BackendError::DeviceDecline {
            stage,
            table: ctx.table.to_string(),
            requested_bytes: requested,
            free_bytes: free,
            reason: reason.into(),
        }
    }

    /// Declines when a fault is armed at `site`, or when the device is lost.
    pub(crate) fn check(&self, site: FaultSite, stage: Stage, ctx: &Ctx, requested: u64) -> Result<(), BackendError> {
        if self.faults.should_fail(site) {
            return Err(self.decline(site.stage(stage), ctx, requested, format!("injected fault at {site}")));
        }
        if self.lost.load(Ordering::Acquire) {
            return Err(self.decline(stage, ctx, requested, "the wgpu device was lost"));
        }
        Ok(())
    }

    /// A zeroed storage buffer of `bytes` (rounded up to 8, at least 16),
    /// an idle one of that size when the pool has it. Past the adapter's
    /// buffer limit, or refused for lack of memory once the pool is
    /// emptied: a decline.
    pub(crate) fn alloc(&self, stage: Stage, ctx: &Ctx, bytes: u64) -> Result<DeviceBuffer, BackendError> {
        self.alloc_for(stage, ctx, bytes, true)
    }

    /// [`Device::alloc`] for a caller that writes every byte before any
    /// read: a reused buffer is not cleared.
    pub(crate) fn alloc_uninit(&self, stage: Stage, ctx: &Ctx, bytes: u64) -> Result<DeviceBuffer, BackendError> {
        self.alloc_for(stage, ctx, bytes, false)
    }

    /// Submits `work` after the clears recorded since the last submission
    /// (every submission goes through here). The clears are taken and
    /// submitted under one lock: another thread's work on a buffer just
    /// cleared must not reach the queue between the two.
    fn submit(&self, work: impl IntoIterator<Item = wgpu::CommandBuffer>) -> wgpu::SubmissionIndex {
        let mut clears = self.clears.lock().unwrap_or_else(|p| p.into_inner());
        let first = clears.take().map(|e| e.finish());
        self.queue.submit(first.into_iter().chain(work))
    }

    /// Submits the pending clears, if any.
    fn flush_clears(&self) {
        let mut clears = self.clears.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(e) = clears.take() {
            self.queue.submit([e.finish()]);
        }
    }

    /// [`Device::alloc`]; a reused buffer is cleared only when `zeroed`
    /// (the caller overwrites every byte otherwise).
    fn alloc_for(&self, stage: Stage, ctx: &Ctx, bytes: u64, zeroed: bool) -> Result<DeviceBuffer, BackendError> {
        let size = bytes.max(16).next_multiple_of(8);
        self.check(FaultSite::Alloc(stage), stage, ctx, size)?;
        if size > self.max_binding {
            return Err(self.decline(
                stage,
                ctx,
                size,
                format!("buffer of {size} bytes exceeds the adapter's {} byte binding limit", self.max_binding),
            ));
        }
        let buf = match self.buffers.take(|s| s == size) {
            Some(b) if zeroed => {
                // As zeroed as a new one (wgpu zeroes those before first
                // use), by the time the next submission runs.
                let mut clears = self.clears.lock().unwrap_or_else(|p| p.into_inner());
                let enc = clears.get_or_insert_with(|| {
                    self.device.create_command_encoder(&wgpu::CommandEncoderDescriptor { label: Some("clears") })
                });
                enc.clear_buffer(&b, 0, None);
                b
            }
            Some(b) => b,
            None => match self.create_storage(stage, ctx, size) {
                Err(BackendError::DeviceDecline { .. }) if self.buffers.release() => {
                    // Idle buffers held the memory: free them, then try again.
                    self.device.poll(wgpu::PollType::Wait).map_err(|e| self.err(stage, ctx, e))?;
                    self.create_storage(stage, ctx, size)?
                }
                other => other?,
            },
        };
        Ok(DeviceBuffer { buf: Some(buf), pool: self.buffers.clone() })
    }

    /// A new storage buffer, inside out-of-memory and validation scopes.
    fn create_storage(&self, stage: Stage, ctx: &Ctx, size: u64) -> Result<wgpu::Buffer, BackendError> {
        let scopes = self.scopes.lock().unwrap_or_else(|p| p.into_inner());
        self.device.push_error_scope(wgpu::ErrorFilter::OutOfMemory);
        self.device.push_error_scope(wgpu::ErrorFilter::Validation);
        let buf = self.device.create_buffer(&wgpu::BufferDescriptor {
            label: None,
            size,
            usage: wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_SRC | wgpu::BufferUsages::COPY_DST,
            mapped_at_creation: false,
        });
        let validation = pollster::block_on(self.device.pop_error_scope());
        let oom = pollster::block_on(self.device.pop_error_scope());
        drop(scopes);
        if let Some(e) = oom {
            return Err(self.decline(stage, ctx, size, format!("out of device memory: {e}")));
        }
        if let Some(e) = validation {
            return Err(self.err(stage, ctx, e));
        }
        Ok(buf)
    }

    /// A buffer holding `data` (u64 words, little-endian).
    pub(crate) fn upload(&self, stage: Stage, ctx: &Ctx, data: &[u64]) -> Result<DeviceBuffer, BackendError> {
        let bytes = 8 * data.len() as u64;
        // A buffer that `data` fills needs no clearing first.
        let buf = self.alloc_for(stage, ctx, bytes, bytes < 16)?;
        self.write(stage, ctx, &buf, 0, data)?;
        Ok(buf)
    }

    /// Writes `data` into `buf` at byte `offset` (queued before the next
    /// submission, so in order with every later dispatch).
    pub(crate) fn write(
        &self,
        stage: Stage,
        ctx: &Ctx,
        buf: &wgpu::Buffer,
        offset: u64,
        data: &[u64],
    ) -> Result<(), BackendError> {
        self.check(FaultSite::TransferToDevice, stage, ctx, 8 * data.len() as u64)?;
        let bytes: &[u8] = bytemuck::cast_slice(data);
        if bytes.len() < STAGED_WRITE_MIN {
            // Queued writes run before the next submission's work: pending
            // clears go first, or one could land on this data.
            self.flush_clears();
            self.queue.write_buffer(buf, offset, bytes);
            return Ok(());
        }
        for (k, piece) in bytes.chunks(WRITE_PIECE).enumerate() {
            let (at, len) = (offset + (k * WRITE_PIECE) as u64, piece.len() as u64);
            let staging = self.take_upload_staging(stage, ctx, len)?;
            {
                let mut view = staging.slice(..len).get_mapped_range_mut();
                parallel_copy(&mut view, piece, <[u8]>::copy_from_slice);
            }
            staging.unmap();
            let mut enc = self.device.create_command_encoder(&wgpu::CommandEncoderDescriptor { label: None });
            enc.copy_buffer_to_buffer(&staging, 0, buf, at, len);
            // Sent now, so the device copies this piece while the next
            // fills; mapped again once the copy has run.
            let index = self.submit([enc.finish()]);
            let done = Arc::new(Mutex::new(None));
            let d2 = done.clone();
            staging.slice(..).map_async(wgpu::MapMode::Write, move |r| {
                *d2.lock().unwrap_or_else(|p| p.into_inner()) = Some(r.is_ok());
            });
            self.upload_staging.state().busy.push_back((staging, index, done));
        }
        Ok(())
    }

    /// A mapped upload staging buffer of at least `bytes`: an idle one,
    /// else a new one while fewer than `UPLOAD_STAGING_MAX` exist, else
    /// the oldest in use once its copy has run (a lost device, or a copy
    /// that never ends, is a decline). Sizes are powers of two.
    fn take_upload_staging(&self, stage: Stage, ctx: &Ctx, bytes: u64) -> Result<wgpu::Buffer, BackendError> {
        let size = bytes.next_power_of_two().max(STAGING_MIN);
        let _ = self.device.poll(wgpu::PollType::Poll);
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
        loop {
            let mut st = self.upload_staging.state();
            // Copies that have run hand their buffers back, mapped.
            while let Some(mapped) = st.busy.front().and_then(|b| *b.2.lock().unwrap_or_else(|p| p.into_inner())) {
                let (buf, _, _) = st.busy.pop_front().expect("a front entry");
                if mapped {
                    st.idle.push(buf);
                }
            }
            if let Some(i) = st.idle.iter().position(|b| b.size() >= size) {
                return Ok(st.idle.swap_remove(i));
            }
            if st.idle.len() + st.busy.len() < UPLOAD_STAGING_MAX {
                drop(st);
                return Ok(self.device.create_buffer(&wgpu::BufferDescriptor {
                    label: Some("upload"),
                    size,
                    usage: wgpu::BufferUsages::MAP_WRITE | wgpu::BufferUsages::COPY_SRC,
                    mapped_at_creation: true,
                }));
            }
            // Full: an idle buffer too small goes; else wait for the oldest copy.
            if !st.idle.is_empty() {
                st.idle.remove(0);
                continue;
            }
            let index = st.busy.front().map(|b| b.1.clone());
            drop(st);
            if let Some(index) = index {
                self.device
                    .poll(wgpu::PollType::WaitForSubmissionIndex(index))
                    .map_err(|e| self.decline(stage, ctx, bytes, format!("device poll: {e}")))?;
            }
            if self.lost.load(Ordering::Acquire) {
                return Err(self.decline(stage, ctx, bytes, "the wgpu device was lost"));
            }
            if std::time::Instant::now() > deadline {
                return Err(self.err(stage, ctx, "upload staging never mapped again"));
            }
            std::thread::yield_now();
        }
    }

    /// A kernel from WGSL source, compiled once per source text. `writable`
    /// gives, per binding, whether the kernel writes it.
    pub(crate) fn kernel(
        &self,
        stage: Stage,
        ctx: &Ctx,
        label: &'static str,
        source: &str,
        writable: &[bool],
    ) -> Result<Arc<Kernel>, BackendError> {
        let mut ks = self.kernels(stage, ctx, label, &[source], writable)?;
        ks.pop().ok_or_else(|| self.err(stage, ctx, "no kernel compiled"))
    }

    /// [`Device::kernel`] for several sources (one binding layout), those
    /// not compiled yet compiled side by side: the driver compiles a
    /// pipeline on the calling thread, and the parts of a table's
    /// composition are its slowest kernels to compile.
    pub(crate) fn kernels(
        &self,
        stage: Stage,
        ctx: &Ctx,
        label: &'static str,
        sources: &[&str],
        writable: &[bool],
    ) -> Result<Vec<Arc<Kernel>>, BackendError> {
        let mut cache = self.kernels.lock().map_err(|_| self.err(stage, ctx, "kernel cache lock poisoned"))?;
        let mut seen = std::collections::HashSet::new();
        let missing: Vec<&str> =
            sources.iter().copied().filter(|s| !cache.contains_key(*s) && seen.insert(*s)).collect();
        if !missing.is_empty() {
            // One scope for the batch: scopes are the device's, not a
            // thread's, so no other thread's work may run inside it.
            let scopes = self.scopes.lock().unwrap_or_else(|p| p.into_inner());
            self.device.push_error_scope(wgpu::ErrorFilter::Validation);
            let built: Vec<Kernel> = match missing[..] {
                [one] => vec![self.build_kernel(label, one, writable)],
                _ => std::thread::scope(|scope| {
                    let handles: Vec<_> = missing
                        .iter()
                        .map(|src| scope.spawn(move || self.build_kernel(label, src, writable)))
                        .collect();
                    handles.into_iter().map(|h| h.join()).collect::<Result<_, _>>()
                })
                .map_err(|_| self.err(stage, ctx, "a kernel-compiling thread panicked"))?,
            };
            let error = pollster::block_on(self.device.pop_error_scope());
            drop(scopes);
            if let Some(e) = error {
                return Err(self.err(stage, ctx, format!("kernel does not compile: {e}")));
            }
            for (src, k) in missing.iter().zip(built) {
                cache.insert(src.to_string(), Arc::new(k));
            }
        }
        sources
            .iter()
            .map(|s| cache.get(*s).cloned().ok_or_else(|| self.err(stage, ctx, "kernel missing from the cache")))
            .collect()
    }

    /// The shader module, binding layout and pipeline of one kernel
    /// (errors go to the caller's error scope).
    fn build_kernel(&self, label: &'static str, source: &str, writable: &[bool]) -> Kernel {
        let module = self.device.create_shader_module(wgpu::ShaderModuleDescriptor {
            label: None,
            source: wgpu::ShaderSource::Wgsl(source.into()),
        });
        let entries: Vec<wgpu::BindGroupLayoutEntry> = writable
            .iter()
            .enumerate()
            .map(|(i, &w)| wgpu::BindGroupLayoutEntry {
                binding: i as u32,
                visibility: wgpu::ShaderStages::COMPUTE,
                ty: wgpu::BindingType::Buffer {
                    ty: wgpu::BufferBindingType::Storage { read_only: !w },
                    has_dynamic_offset: false,
                    min_binding_size: None,
                },
                count: None,
            })
            .collect();
        let layout =
            self.device.create_bind_group_layout(&wgpu::BindGroupLayoutDescriptor { label: None, entries: &entries });
        let pl = self.device.create_pipeline_layout(&wgpu::PipelineLayoutDescriptor {
            label: None,
            bind_group_layouts: &[&layout],
            push_constant_ranges: &[wgpu::PushConstantRange {
                stages: wgpu::ShaderStages::COMPUTE,
                range: 0..PC_BYTES,
            }],
        });
        let pipeline = self.device.create_compute_pipeline(&wgpu::ComputePipelineDescriptor {
            label: None,
            layout: Some(&pl),
            module: &module,
            entry_point: Some("main"),
            compilation_options: Default::default(),
            cache: None,
        });
        Kernel { pipeline, layout, bindings: writable.len(), label }
    }

    /// Starts recording the work of one operation.
    pub(crate) fn job<'a>(&'a self, stage: Stage, ctx: &'a Ctx<'a>) -> Job<'a> {
        let encoder = self.device.create_command_encoder(&wgpu::CommandEncoderDescriptor { label: None });
        let ticket = JobTicket { pool: self.buffers.clone(), id: self.buffers.open() };
        let stamps = self.profiler.as_ref().map(|p| p.stamps(&self.device));
        Job { dev: self, stage, ctx, encoder, _ticket: ticket, stamps }
    }

    /// Waits for all submitted work.
    pub(crate) fn wait(&self, stage: Stage, ctx: &Ctx) -> Result<(), BackendError> {
        // Queued writes (uploads) go with the next submission: an empty
        // one sends them, so the wait covers them too.
        self.submit([]);
        self.device.poll(wgpu::PollType::Wait).map_err(|e| self.decline(stage, ctx, 0, format!("device poll: {e}")))?;
        if self.lost.load(Ordering::Acquire) {
            return Err(self.decline(stage, ctx, 0, "the wgpu device was lost"));
        }
        Ok(())
    }

    /// Copies `len` u64 words from each (buffer, word offset) to the host,
    /// concatenated.
    pub(crate) fn read(
        &self,
        stage: Stage,
        ctx: &Ctx,
        parts: &[(&wgpu::Buffer, u64, u64)],
    ) -> Result<Vec<u64>, BackendError> {
        let total: u64 = parts.iter().map(|p| p.2).sum();
        let mut out = try_zeroed(total as usize).map_err(|e| e.at(stage, ctx))?;
        self.read_into(stage, ctx, parts, &mut out)?;
        Ok(out)
    }

    /// [`Device::read`] into `out`, which holds exactly the parts' words.
    /// Reads go in pieces of at most `READ_PIECE` bytes, two in flight:
    /// the device fills one staging buffer while the host empties the
    /// other.
    pub(crate) fn read_into(
        &self,
        stage: Stage,
        ctx: &Ctx,
        parts: &[(&wgpu::Buffer, u64, u64)],
        out: &mut [u64],
    ) -> Result<(), BackendError> {
        let total: u64 = parts.iter().map(|p| p.2).sum();
        if total != out.len() as u64 {
            return Err(self.err(stage, ctx, format!("{total} words to read into {} places", out.len())));
        }
        self.check(FaultSite::TransferToHost, stage, ctx, 8 * total)?;
        let cap = (READ_PIECE.min(self.max_binding) / 8).max(1);
        let mut in_flight = std::collections::VecDeque::with_capacity(2);
        let mut written = 0usize;
        for piece in split_words(parts, cap) {
            if in_flight.len() == 2 {
                written +=
                    self.finish_read(stage, ctx, in_flight.pop_front().expect("two in flight"), &mut out[written..])?;
            }
            in_flight.push_back(self.start_read(&piece));
        }
        while let Some(read) = in_flight.pop_front() {
            written += self.finish_read(stage, ctx, read, &mut out[written..])?;
        }
        Ok(())
    }

    /// Copies `piece` into a staging buffer and asks for its mapping.
    fn start_read(&self, piece: &[(&wgpu::Buffer, u64, u64)]) -> PendingRead {
        let words: u64 = piece.iter().map(|p| p.2).sum();
        let staging = self.take_staging(8 * words);
        let mut enc = self.device.create_command_encoder(&wgpu::CommandEncoderDescriptor { label: None });
        let mut at = 0u64;
        for &(b, off, len) in piece {
            enc.copy_buffer_to_buffer(b, 8 * off, &staging, 8 * at, 8 * len);
            at += len;
        }
        let index = self.submit([enc.finish()]);
        let done = Arc::new(Mutex::new(None));
        let d2 = done.clone();
        staging.slice(..8 * words).map_async(wgpu::MapMode::Read, move |r| {
            *d2.lock().unwrap_or_else(|p| p.into_inner()) = Some(r);
        });
        PendingRead { staging, words, index, done }
    }

    /// Waits for a read's mapping, copies it to the front of `out` and
    /// returns the staging buffer to the pool; the words copied.
    fn finish_read(&self, stage: Stage, ctx: &Ctx, read: PendingRead, out: &mut [u64]) -> Result<usize, BackendError> {
        // Another thread's poll may be the one that runs the callback, a
        // moment after our own poll returns: wait for it (bounded).
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
        let result = loop {
            self.device
                .poll(wgpu::PollType::WaitForSubmissionIndex(read.index.clone()))
                .map_err(|e| self.decline(stage, ctx, 0, format!("device poll: {e}")))?;
            if self.lost.load(Ordering::Acquire) {
                return Err(self.decline(stage, ctx, 0, "the wgpu device was lost"));
            }
            if let Some(r) = read.done.lock().unwrap_or_else(|p| p.into_inner()).take() {
                break r;
            }
            if std::time::Instant::now() > deadline {
                return Err(self.err(stage, ctx, "read-back mapping never completed"));
            }
            std::thread::yield_now();
        };
        let bytes = 8 * read.words;
        if let Err(e) = result {
            return Err(self.decline(stage, ctx, bytes, format!("read-back mapping: {e}")));
        }
        let n = read.words as usize;
        {
            let mapped = read.staging.slice(..bytes).get_mapped_range();
            parallel_copy(&mut out[..n], bytemuck::cast_slice(&mapped), <[u64]>::copy_from_slice);
        }
        read.staging.unmap();
        self.staging.give(read.staging);
        Ok(n)
    }

    /// An idle staging buffer of at least `bytes`, or a new one (sizes
    /// are powers of two from `STAGING_MIN`, so buffers are reused
    /// across reads of nearby sizes).
    fn take_staging(&self, bytes: u64) -> wgpu::Buffer {
        self.staging.take(|s| s >= bytes).unwrap_or_else(|| {
            self.device.create_buffer(&wgpu::BufferDescriptor {
                label: Some("read-back"),
                size: bytes.next_power_of_two().max(STAGING_MIN),
                usage: wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
                mapped_at_creation: false,
            })
        })
    }
}

/// Upload staging buffers: idle ones mapped for writing, and those whose
/// copy was submitted, with that submission and whether they are mapped
/// again (set by wgpu's callback: `Some(false)` if mapping failed).
#[derive(Default)]
struct UploadStaging(Mutex<StagingState>);

#[derive(Default)]
struct StagingState {
    idle: Vec<wgpu::Buffer>,
    busy: std::collections::VecDeque<(wgpu::Buffer, wgpu::SubmissionIndex, MapDone)>,
}

/// Set by a mapping's callback: whether it succeeded.
type MapDone = Arc<Mutex<Option<bool>>>;

impl UploadStaging {
    fn state(&self) -> std::sync::MutexGuard<'_, StagingState> {
        self.0.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// A read-back copied into `staging` by submission `index`, waiting for
/// its mapping (`done`, set by wgpu's callback).
struct PendingRead {
    staging: wgpu::Buffer,
    words: u64,
    index: wgpu::SubmissionIndex,
    done: Arc<Mutex<Option<Result<(), wgpu::BufferAsyncError>>>>,
}

/// `parts` (buffer, word offset, words) cut into pieces of at most `cap`
/// words, in order.
fn split_words<'a>(parts: &[(&'a wgpu::Buffer, u64, u64)], cap: u64) -> Vec<Vec<(&'a wgpu::Buffer, u64, u64)>> {
    let mut pieces = Vec::new();
    let (mut piece, mut held) = (Vec::new(), 0u64);
    for &(b, off, len) in parts {
        let mut done = 0u64;
        while done < len {
            let take = (len - done).min(cap - held);
            piece.push((b, off + done, take));
            held += take;
            done += take;
            if held == cap {
                pieces.push(std::mem::take(&mut piece));
                held = 0;
            }
        }
    }
    if !piece.is_empty() {
        pieces.push(piece);
    }
    pieces
}

/// The recorded work of one operation; `submit` sends it to the queue
/// inside validation and out-of-memory scopes.
pub(crate) struct Job<'a> {
    dev: &'a Device,
    stage: Stage,
    ctx: &'a Ctx<'a>,
    encoder: wgpu::CommandEncoder,
    _ticket: JobTicket,
    stamps: Option<crate::profile::Stamps>,
}

impl Job<'_> {
    /// Records one dispatch of `k` over `groups` workgroups with the given
    /// buffers (in binding order) and push constants (at most 32 words).
    pub(crate) fn dispatch(
        &mut self,
        k: &Kernel,
        buffers: &[&wgpu::Buffer],
        pc: &[u32],
        groups: (u32, u32, u32),
    ) -> Result<(), BackendError> {
        self.dev.check(FaultSite::Launch(self.stage), self.stage, self.ctx, 0)?;
        if buffers.len() != k.bindings || pc.len() * 4 > PC_BYTES as usize {
            return Err(self.dev.err(self.stage, self.ctx, "kernel called with the wrong arguments"));
        }
        if groups.0 == 0 || groups.1 == 0 || groups.2 == 0 {
            return Ok(());
        }
        let entries: Vec<wgpu::BindGroupEntry> = buffers
            .iter()
            .enumerate()
            .map(|(i, b)| wgpu::BindGroupEntry { binding: i as u32, resource: b.as_entire_binding() })
            .collect();
        let bg = self.dev.device.create_bind_group(&wgpu::BindGroupDescriptor {
            label: None,
            layout: &k.layout,
            entries: &entries,
        });
        let mut words = [0u32; (PC_BYTES / 4) as usize];
        words[..pc.len()].copy_from_slice(pc);
        let timestamp_writes =
            self.stamps.as_mut().filter(|st| st.labels.len() < crate::profile::MAX_PASSES as usize).map(|st| {
                let at = 2 * st.labels.len() as u32;
                st.labels.push(k.label);
                wgpu::ComputePassTimestampWrites {
                    query_set: &st.set,
                    beginning_of_pass_write_index: Some(at),
                    end_of_pass_write_index: Some(at + 1),
                }
            });
        let mut pass = self.encoder.begin_compute_pass(&wgpu::ComputePassDescriptor { label: None, timestamp_writes });
        pass.set_pipeline(&k.pipeline);
        pass.set_bind_group(0, &bg, &[]);
        pass.set_push_constants(0, bytemuck::cast_slice(&words));
        pass.dispatch_workgroups(groups.0, groups.1, groups.2);
        Ok(())
    }

    /// Records zeroing `words` u64 of `buf` from word `off`.
    pub(crate) fn clear(&mut self, buf: &wgpu::Buffer, off: u64, words: u64) {
        if words > 0 {
            self.encoder.clear_buffer(buf, 8 * off, Some(8 * words));
        }
    }

    /// Submits the recorded work (it runs in order after everything
    /// submitted before). Does not wait.
    pub(crate) fn submit(mut self) -> Result<(), BackendError> {
        let dev = self.dev;
        let times = self.stamps.take().filter(|st| !st.labels.is_empty()).map(|st| {
            let n = 2 * st.labels.len() as u64;
            let resolved = dev.device.create_buffer(&wgpu::BufferDescriptor {
                label: Some("profile"),
                size: 8 * n,
                usage: wgpu::BufferUsages::QUERY_RESOLVE | wgpu::BufferUsages::COPY_SRC,
                mapped_at_creation: false,
            });
            self.encoder.resolve_query_set(&st.set, 0..n as u32, &resolved, 0);
            (st.labels, resolved, n)
        });
        let scopes = dev.scopes.lock().unwrap_or_else(|p| p.into_inner());
        dev.device.push_error_scope(wgpu::ErrorFilter::OutOfMemory);
        dev.device.push_error_scope(wgpu::ErrorFilter::Validation);
        dev.submit([self.encoder.finish()]);
        let validation = pollster::block_on(dev.device.pop_error_scope());
        let oom = pollster::block_on(dev.device.pop_error_scope());
        drop(scopes);
        if let Some(e) = oom {
            return Err(dev.decline(self.stage, self.ctx, 0, format!("out of device memory: {e}")));
        }
        if let Some(e) = validation {
            return Err(dev.err(self.stage, self.ctx, e));
        }
        if let (Some((labels, resolved, n)), Some(p)) = (times, &dev.profiler) {
            p.add(self.stage, &labels, &dev.read(self.stage, self.ctx, &[(&resolved, 0, n)])?);
        }
        Ok(())
    }
}

/// Workgroup counts for `n` threads of `WG`, as (x, y) within the 65535
/// per-dimension limit; kernels recover the index as
/// `(id.y * 65535 + id.x) * WG + local`.
pub(crate) fn groups_for(n: u64) -> (u32, u32, u32) {
    let g = n.div_ceil(WG as u64).max(1);
    if g <= 65535 {
        (g as u32, 1, 1)
    } else {
        (65535, g.div_ceil(65535) as u32, 1)
    }
}

/// The default adapter's device for a test, or `None` (a skip, with a
/// note) where there is none, unless `KILN_REQUIRE_WGPU=1` asks for one.
#[cfg(test)]
pub(crate) fn test_device(int64: bool) -> Option<Device> {
    test_device_with(Settings { adapter: 0, max_binding_bytes: None, memory_budget_bytes: None, int64, tile_log: None })
}

/// [`test_device`] on a core (and pools) no other test shares: the tile
/// size `tile_log`, one per test, sets its settings apart.
#[cfg(test)]
fn own_device(tile_log: u32) -> Option<Device> {
    test_device_with(Settings {
        adapter: 0,
        max_binding_bytes: None,
        memory_budget_bytes: None,
        int64: false,
        tile_log: Some(tile_log),
    })
}

/// [`test_device`] with the given settings.
#[cfg(test)]
pub(crate) fn test_device_with(settings: Settings) -> Option<Device> {
    match Device::new(&settings) {
        Ok(d) => Some(d),
        Err(e) => {
            assert!(!std::env::var("KILN_REQUIRE_WGPU").is_ok_and(|v| v == "1"), "no wgpu adapter: {e}");
            eprintln!("no wgpu adapter: skipped ({e})");
            None
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A kernel storing `v` at every word of its output.
    fn store(v: u32) -> String {
        format!(
            "struct Pc {{ n: u32 }}\nvar<push_constant> pc: Pc;\n\
             @group(0) @binding(0) var<storage, read_write> out: array<u32>;\n\
             @compute @workgroup_size(64)\n\
             fn main(@builtin(global_invocation_id) id: vec3<u32>) {{\n    if (id.x < pc.n) {{ out[id.x] = {v}u; }}\n}}\n"
        )
    }

    #[test]
    fn reads_span_buffers_and_pieces_and_reuse_their_staging() {
        // 256-byte bindings: read-backs go in pieces of 32 words, cut
        // inside parts and across buffers, several in flight.
        let settings = Settings {
            adapter: 0,
            max_binding_bytes: Some(256),
            memory_budget_bytes: None,
            int64: false,
            tile_log: None,
        };
        let Some(dev) = test_device_with(settings) else { return };
        let ctx = Ctx::table("read");
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        let mut words = |n: usize| -> Vec<u64> {
            (0..n)
                .map(|_| {
                    x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
                    x ^ (x >> 29)
                })
                .collect()
        };
        let data = [words(32), words(32), words(20)];
        let bufs: Vec<DeviceBuffer> = data.iter().map(|d| dev.upload(Stage::Download, &ctx, d).unwrap()).collect();
        let parts: [(&wgpu::Buffer, u64, u64); 4] =
            [(&bufs[0], 3, 29), (&bufs[1], 0, 32), (&bufs[2], 5, 15), (&bufs[0], 0, 1)];
        let want: Vec<u64> = parts
            .iter()
            .flat_map(|&(b, off, len)| {
                let i = bufs.iter().position(|x| **x == *b).unwrap();
                data[i][off as usize..(off + len) as usize].to_vec()
            })
            .collect();
        for _ in 0..2 {
            assert_eq!(dev.read(Stage::Download, &ctx, &parts).unwrap(), want);
            assert_eq!(dev.read(Stage::Download, &ctx, &[(&bufs[2], 19, 1)]).unwrap(), vec![data[2][19]]);
        }
        let idle = dev.staging.idle_sizes();
        assert!(!idle.is_empty() && idle.len() <= 3, "staging buffers are kept and reused, not one per read");
        let mut short = vec![0u64; 3];
        assert!(
            dev.read_into(Stage::Download, &ctx, &parts, &mut short).is_err(),
            "a wrong-sized destination is an error"
        );
    }

    #[test]
    fn a_freed_buffer_is_reused_zeroed_and_the_pool_keeps_its_cap() {
        let Some(dev) = own_device(7) else { return };
        let ctx = Ctx::table("pool");
        let data: Vec<u64> = (1..=100).map(|i| i * 0x0101_0101_0101).collect();
        let first = dev.upload(Stage::Ntt, &ctx, &data).unwrap();
        let id = (*first).clone();
        drop(first);
        assert_eq!(dev.buffers.idle_sizes(), vec![800]);
        let again = dev.alloc(Stage::Ntt, &ctx, 800).unwrap();
        assert!(*again == id, "the freed buffer of that size is reused");
        assert!(dev.read(Stage::Ntt, &ctx, &[(&again, 0, 100)]).unwrap().iter().all(|&w| w == 0));
        let other = dev.alloc(Stage::Ntt, &ctx, 808).unwrap();
        assert!(*other != id, "another size is a new buffer");
        // Dropped while a job records, a buffer waits for that job.
        let job = dev.job(Stage::Ntt, &ctx);
        drop(dev.alloc(Stage::Ntt, &ctx, 96).unwrap());
        assert!(dev.buffers.idle_sizes().is_empty(), "a job open at the drop may still record a use");
        job.submit().unwrap();
        assert_eq!(dev.buffers.idle_sizes(), vec![96]);
        // Past the cap the oldest idle buffers go.
        let pool = Arc::new(BufferPool::new(2000));
        for b in [again, other] {
            pool.give(b.buf.clone().unwrap());
        }
        pool.give(dev.alloc(Stage::Ntt, &ctx, 1000).unwrap().buf.clone().unwrap());
        assert_eq!(pool.idle_sizes(), vec![808, 1000]);
        assert!(pool.release() && pool.idle_sizes().is_empty());
    }

    #[test]
    fn large_writes_go_through_reused_staging() {
        let Some(dev) = own_device(5) else { return };
        let ctx = Ctx::table("write");
        let n = 3 * STAGED_WRITE_MIN / 16;
        for round in 0..3u64 {
            let data: Vec<u64> = (0..n as u64).map(|i| (i ^ round).wrapping_mul(0x9e37_79b9_7f4a_7c15)).collect();
            let buf = dev.upload(Stage::Upload, &ctx, &data).unwrap();
            assert_eq!(dev.read(Stage::Upload, &ctx, &[(&buf, 0, n as u64)]).unwrap(), data, "round {round}");
        }
        // Each write found the last one's staging mapped again.
        dev.device.poll(wgpu::PollType::Wait).unwrap();
        let st = dev.upload_staging.state();
        assert_eq!(st.idle.len() + st.busy.len(), 1, "upload staging is kept and reused");
    }

    #[test]
    fn a_reused_buffer_is_cleared_before_work_any_thread_submits_later() {
        // Threads allocate zeroed buffers of one size (so they come back
        // from the pool, cleared with a later submission), fill them and
        // read them back, while each also submits and uploads: a clear may
        // never reach the queue after the work that filled its buffer.
        let Some(dev) = own_device(6) else { return };
        let ctx = Ctx::table("clears");
        let ks: Vec<Arc<Kernel>> =
            (1..=4u32).map(|v| dev.kernel(Stage::Compose, &ctx, "test", &store(v), &[true]).unwrap()).collect();
        std::thread::scope(|s| {
            for (t, k) in ks.iter().enumerate() {
                let (dev, ctx) = (&dev, &ctx);
                s.spawn(move || {
                    for round in 0..200 {
                        let buf = dev.alloc(Stage::Compose, ctx, 4 * 256).unwrap();
                        let mut job = dev.job(Stage::Compose, ctx);
                        job.dispatch(k, &[&buf], &[256], (4, 1, 1)).unwrap();
                        job.submit().unwrap();
                        drop(dev.upload(Stage::Compose, ctx, &[round; 4]).unwrap());
                        let words = dev.read(Stage::Compose, ctx, &[(&buf, 0, 128)]).unwrap();
                        let v = t as u64 + 1;
                        assert!(words.iter().all(|&w| w == v | v << 32), "thread {t} round {round}: {words:?}");
                    }
                });
            }
        });
    }

    #[test]
    fn a_batch_compiles_each_source_once_and_a_bad_one_is_a_typed_error() {
        let Some(dev) = test_device(false) else { return };
        let ctx = Ctx::table("batch");
        let (a, b) = (store(7), store(9));
        // A source twice in one batch is compiled once; each kernel runs as its own.
        let ks = dev.kernels(Stage::Compose, &ctx, "test", &[&a, &b, &a], &[true]).unwrap();
        assert!(Arc::ptr_eq(&ks[0], &ks[2]) && !Arc::ptr_eq(&ks[0], &ks[1]));
        let again = dev.kernel(Stage::Compose, &ctx, "test", &b, &[true]).unwrap();
        assert!(Arc::ptr_eq(&again, &ks[1]), "a compiled kernel comes from the cache");
        for (k, want) in [(&ks[0], 7u64), (&ks[1], 9)] {
            let out = dev.alloc(Stage::Compose, &ctx, 8 * 64).unwrap();
            let mut job = dev.job(Stage::Compose, &ctx);
            job.dispatch(k, &[&out], &[128], (2, 1, 1)).unwrap();
            job.submit().unwrap();
            let words = dev.read(Stage::Compose, &ctx, &[(&out, 0, 64)]).unwrap();
            assert!(words.iter().all(|&w| w == want | (want << 32)), "kernel storing {want}");
        }
        // A batch with a source that does not compile fails as a whole,
        // typed, also when it compiles on a thread of its own.
        let (good, bad) = (store(11), a.replace("out[id.x] = 7u;", "out[id.x] = undefined_name;"));
        match dev.kernels(Stage::Compose, &ctx, "test", &[&good, &bad], &[true]) {
            Err(BackendError::Device { stage: Stage::Compose, message, .. }) => {
                assert!(message.contains("does not compile"), "{message}")
            }
            other => panic!("expected a typed compile error, got {:?}", other.map(|v| v.len())),
        }
    }
}
