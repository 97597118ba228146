//! The device side: adapter discovery, the device and its queue, buffers
//! (allocated inside an out-of-memory error scope), kernels (WGSL compiled
//! once per source), dispatches recorded into one command encoder per
//! operation, and read-back. Every wgpu error becomes a typed
//! `BackendError`; nothing panics on a device failure.
//!
//! This module finds adapters and makes the device; its submodules own
//! allocation, uploads, read-backs, kernels and submission.

mod alloc;
mod kernel;
mod pool;
mod readback;
mod submit;
#[cfg(test)]
mod tests;
mod upload;

pub(crate) use kernel::Kernel;
use pool::BufferPool;
pub(crate) use pool::DeviceBuffer;
pub(crate) use submit::{groups_for, Job};
use upload::UploadStaging;

use backend_api::fault::{FaultInjector, FaultSite};
use backend_api::gate::Gate;
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
