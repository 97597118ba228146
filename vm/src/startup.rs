//! The backend a prove runs on, made ready while the program executes.
//!
//! With a GPU backend in the build, the device is opened (for CUDA also
//! the statement's generated kernels compiled or read from the kernel
//! cache, the pinned staging taken, and a small rehearsal prove run) on
//! another thread: for `--backend cuda` or `wgpu` started before
//! execution, so start-up hides behind execution and trace generation; for `--backend auto` once the run's
//! size is known, and only for runs of at least [`AUTO_GPU_MIN_CYCLES`]
//! cycles (a start-up thread slows a short CPU prove and its exit). Then
//! auto takes a usable CUDA device, else a wgpu adapter on a real GPU (a
//! CPU implementation of Vulkan such as lavapipe is slower than the CPU
//! backend), else the CPU, and says why.

use crate::BackendChoice;
use backend_api::F;
use std::time::Duration;
#[cfg(any(feature = "cuda", feature = "wgpu"))]
use std::time::Instant;
use vm::Program;
#[cfg(any(feature = "cuda", feature = "wgpu"))]
use vm::VmMachine;

/// The smallest run (in cycles) `--backend auto` proves on a GPU: one
/// past 2^18, where the trace's padded height doubles and with it the CPU
/// prove. Below it the CPU finishes first: opening a device (~0.3 s) is
/// not hidden by a short run, and small tables leave the GPU idle. On the
/// H200 host (16 cores, 46118b8) the whole `kiln prove` of the chain
/// program took 0.425 s on the CPU and 0.442 s on CUDA at 2^18 cycles,
/// 0.822 s and 0.466 s at 300,000 (docs/gpu/RESULTS.md, section 23).
pub const AUTO_GPU_MIN_CYCLES: u64 = (1 << 18) + 1;

/// The smallest run `auto` proves on a device `kiln serve` holds: any.
/// The local crossover is the device's start, which a held device has
/// paid; every VM statement has a 2^16-row range table, and the default
/// program (6,006 cycles) took 0.076-0.110 s served on CUDA against
/// 0.228-0.294 s served on the CPU (an H100 host, RESULTS section 36).
pub const SERVED_GPU_MIN_CYCLES: u64 = 0;

/// [`AUTO_GPU_MIN_CYCLES`] (for a device `held` open,
/// [`SERVED_GPU_MIN_CYCLES`]), or the crossover measured on this machine
/// (`KILN_AUTO_GPU_MIN_CYCLES`).
fn auto_gpu_min_cycles(held: bool) -> u64 {
    let default = if held { SERVED_GPU_MIN_CYCLES } else { AUTO_GPU_MIN_CYCLES };
    std::env::var("KILN_AUTO_GPU_MIN_CYCLES").ok().and_then(|v| v.parse().ok()).unwrap_or(default)
}

/// The backend a prove runs on. A device is shared (`Arc<B>` is a
/// backend): `kiln serve` keeps one open across proves.
#[derive(Clone)]
pub enum Chosen {
    /// With why `auto` chose it.
    Cpu(Option<String>),
    #[cfg(feature = "cuda")]
    Cuda(std::sync::Arc<backend_cuda::CudaBackend>),
    #[cfg(feature = "wgpu")]
    Wgpu(std::sync::Arc<backend_wgpu::WgpuBackend>),
}

impl Chosen {
    /// How the report names it: `cpu (why auto chose it)`, `cuda (device)`,
    /// `wgpu (adapter, API)`.
    pub fn label(&self) -> String {
        match self {
            Chosen::Cpu(why) => why.as_ref().map_or("cpu".to_string(), |w| format!("cpu ({w})")),
            #[cfg(feature = "cuda")]
            Chosen::Cuda(dev) => format!("cuda ({})", dev.device().name),
            #[cfg(feature = "wgpu")]
            Chosen::Wgpu(dev) => format!("wgpu ({}, {})", dev.adapter().name, dev.adapter().api),
        }
    }
}

/// How the CLI opens CUDA: the configuration (`KILN_CUDA_*`, the flags)
/// and the devices (`--devices`; a single prove takes the first), or the
/// defaults and device 0.
#[derive(Clone, Debug, Default)]
pub struct GpuSettings {
    #[cfg(feature = "cuda")]
    pub cuda: Option<(backend_cuda::CudaConfig, backend_cuda::DeviceSpec)>,
    /// The statement's options, for the rehearsal prove.
    #[cfg(feature = "cuda")]
    pub options: stark::ProofOptions,
    /// `--devices` was given: with `auto`, a named device that cannot
    /// open is an error, not a reason to prove on the CPU.
    #[cfg(any(feature = "cuda", feature = "wgpu"))]
    pub devices_named: bool,
}

/// Where the device's start-up time went, on its own thread.
#[derive(Clone, Copy, Debug, Default)]
pub struct DeviceStart {
    /// Opening the device: driver, context, stream, pool, static kernels
    /// (and, for CUDA, the wait for `precompile`).
    pub open: Duration,
    /// Of `open`: the driver's libraries, cuInit and the primary context.
    pub context: Duration,
    /// Of `open`: the static kernels.
    pub kernels: Duration,
    /// Beside `open`: the statement's generated kernels compiled into the
    /// disk cache (or read from it).
    pub precompile: Duration,
    /// Compiling (or loading) the statement's generated kernels.
    pub prepare: Duration,
    /// Pinned staging buffers.
    pub warm_up: Duration,
    /// A small prove that takes the driver's first-use costs (CUDA).
    pub rehearsal: Duration,
}

#[cfg(any(feature = "cuda", feature = "wgpu"))]
type GpuThread = std::thread::JoinHandle<Result<(Chosen, DeviceStart), String>>;

/// A backend being made ready.
pub struct Starting {
    choice: BackendChoice,
    /// The statement's program and inputs, to start a device for `auto`.
    #[cfg_attr(not(any(feature = "cuda", feature = "wgpu")), allow(dead_code))]
    program: Program,
    #[cfg_attr(not(any(feature = "cuda", feature = "wgpu")), allow(dead_code))]
    inputs: Vec<F>,
    #[cfg_attr(not(any(feature = "cuda", feature = "wgpu")), allow(dead_code))]
    settings: GpuSettings,
    #[cfg(any(feature = "cuda", feature = "wgpu"))]
    gpu: Option<GpuThread>,
}

#[cfg(not(feature = "cuda"))]
const NO_CUDA_BUILD: &str = "the cuda backend is not in this build (rebuild with --features cuda)";
#[cfg(not(feature = "wgpu"))]
const NO_WGPU_BUILD: &str = "the wgpu backend is not in this build (rebuild with --features wgpu)";

impl Starting {
    /// Starts the device for `program` (its inputs give the statement's
    /// shape; outputs do not change its kernels). Choices this build
    /// cannot serve fail here, before any work.
    pub fn begin(
        choice: BackendChoice,
        program: &Program,
        inputs: &[F],
        settings: GpuSettings,
    ) -> Result<Starting, String> {
        match choice {
            #[cfg(not(feature = "cuda"))]
            BackendChoice::Cuda => return Err(NO_CUDA_BUILD.into()),
            #[cfg(not(feature = "wgpu"))]
            BackendChoice::Wgpu => return Err(NO_WGPU_BUILD.into()),
            _ => {}
        }
        let named = matches!(choice, BackendChoice::Cuda | BackendChoice::Wgpu);
        #[cfg(any(feature = "cuda", feature = "wgpu"))]
        let gpu = named.then(|| start_gpu(choice, VmMachine::new(program, inputs, &[]), settings.clone()));
        #[cfg(not(any(feature = "cuda", feature = "wgpu")))]
        let _ = named;
        Ok(Starting {
            choice,
            program: program.clone(),
            inputs: inputs.to_vec(),
            settings,
            #[cfg(any(feature = "cuda", feature = "wgpu"))]
            gpu,
        })
    }

    /// The backend for a run of `cycles` cycles; waits for the device if it
    /// is chosen and not ready yet. Also returns the device's start-up
    /// breakdown and how long this call waited for it.
    pub fn choose(self, cycles: u64) -> Result<(Chosen, Option<DeviceStart>, Duration), String> {
        let cpu = |why: Option<String>| Ok((Chosen::Cpu(why), None, Duration::ZERO));
        match self.choice {
            BackendChoice::Cpu => cpu(None),
            BackendChoice::Auto if !cfg!(any(feature = "cuda", feature = "wgpu")) => {
                cpu(Some("auto: this build has no GPU backend (rebuild with --features cuda or wgpu)".into()))
            }
            BackendChoice::Auto if cycles < auto_gpu_min_cycles(false) => {
                let min = auto_gpu_min_cycles(false);
                cpu(Some(format!("auto: {cycles} cycles, below the {min} where a GPU is faster")))
            }
            _ => self.join_gpu(),
        }
    }

    #[cfg(any(feature = "cuda", feature = "wgpu"))]
    fn join_gpu(self) -> Result<(Chosen, Option<DeviceStart>, Duration), String> {
        let t0 = Instant::now();
        let choice = self.choice;
        let (program, inputs) = (&self.program, &self.inputs);
        let (settings, named) = (self.settings.clone(), self.settings.devices_named);
        let thread = self.gpu.unwrap_or_else(|| start_gpu(choice, VmMachine::new(program, inputs, &[]), settings));
        let ready = thread.join().unwrap_or_else(|_| Err("the device start-up thread panicked".into()));
        match ready {
            Ok((chosen, start)) => Ok((chosen, Some(start), t0.elapsed())),
            Err(e) if choice == BackendChoice::Auto && !named => {
                Ok((Chosen::Cpu(Some(format!("auto: no usable GPU: {e}"))), None, t0.elapsed()))
            }
            Err(e) => Err(e),
        }
    }

    #[cfg(not(any(feature = "cuda", feature = "wgpu")))]
    fn join_gpu(self) -> Result<(Chosen, Option<DeviceStart>, Duration), String> {
        Err(format!("no GPU backend in this build for {:?}", self.choice))
    }
}

/// A backend `kiln serve` opened once, for every prove it is sent.
pub struct Served {
    pub chosen: Chosen,
    /// One prove at a time: the device's peak and timeline are each
    /// prove's own (with several in flight they are not reported).
    pub alone: bool,
}

impl Served {
    /// Opens the backend `choice` names as [`Starting::choose`] would for
    /// a run long enough for a GPU (`auto`: a GPU if one opens, else the
    /// CPU).
    pub fn open(choice: BackendChoice, settings: GpuSettings, alone: bool) -> Result<Served, String> {
        let program = vm::assemble(vm::examples::DEFAULT).map_err(|e| e.to_string())?;
        let starting = Starting::begin(choice, &program, &[F::new(10)], settings)?;
        let (chosen, _, _) = starting.choose(u64::MAX)?;
        Ok(Served { chosen, alone })
    }

    /// What a prove of `cycles` cycles asking for `choice` runs on: the
    /// served device, or the CPU where `--backend cpu` asks for it (or
    /// `auto` finds the run shorter than `KILN_AUTO_GPU_MIN_CYCLES`, when
    /// that is set: by default a held device takes every run).
    /// A GPU the server does not hold is an error, not a substitute.
    pub fn choose(&self, choice: BackendChoice, cycles: u64) -> Result<Chosen, String> {
        let min = auto_gpu_min_cycles(true);
        let served_gpu = !matches!(self.chosen, Chosen::Cpu(_));
        match choice {
            BackendChoice::Cpu => Ok(Chosen::Cpu(None)),
            BackendChoice::Auto if served_gpu && cycles < min => {
                Ok(Chosen::Cpu(Some(format!("auto: {cycles} cycles, below the {min} where a GPU is faster"))))
            }
            BackendChoice::Auto => Ok(self.chosen.clone()),
            #[cfg(feature = "cuda")]
            BackendChoice::Cuda if matches!(self.chosen, Chosen::Cuda(_)) => Ok(self.chosen.clone()),
            #[cfg(feature = "wgpu")]
            BackendChoice::Wgpu if matches!(self.chosen, Chosen::Wgpu(_)) => Ok(self.chosen.clone()),
            BackendChoice::Cuda | BackendChoice::Wgpu => {
                Err(format!("--backend {}: the server does not hold that backend", choice_name(choice)))
            }
        }
    }
}

/// The memory a CPU prove may take: what the system has available
/// (counting reclaimable caches as free), and within the process's cgroup
/// its limit less the memory its processes hold; `None` where neither is
/// known.
pub fn host_memory_available() -> Option<u64> {
    let mut sys = sysinfo::System::new();
    sys.refresh_memory();
    let system = Some(sys.available_memory()).filter(|&b| b > 0);
    // Within a cgroup, its page cache is reclaimable: its anonymous memory
    // (`rss`) is what the limit leaves no room beside.
    let cgroup = sys.cgroup_limits().map(|c| c.total_memory.saturating_sub(c.rss));
    match (system, cgroup) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    }
}

fn choice_name(choice: BackendChoice) -> &'static str {
    match choice {
        BackendChoice::Auto => "auto",
        BackendChoice::Cpu => "cpu",
        BackendChoice::Cuda => "cuda",
        BackendChoice::Wgpu => "wgpu",
    }
}

/// Opens the device `choice` names (for `auto`: CUDA, then a wgpu adapter
/// on a real GPU) on a thread of its own.
#[cfg(any(feature = "cuda", feature = "wgpu"))]
fn start_gpu(choice: BackendChoice, machine: VmMachine, settings: GpuSettings) -> GpuThread {
    std::thread::spawn(move || {
        let mut why = vec![];
        if matches!(choice, BackendChoice::Cuda | BackendChoice::Auto) {
            #[cfg(feature = "cuda")]
            match open_cuda(&machine, &settings) {
                Ok(ready) => return Ok(ready),
                Err(e) if choice == BackendChoice::Cuda || settings.devices_named => {
                    return Err(format!("the cuda backend cannot run here: {e}"))
                }
                Err(e) => why.push(format!("cuda: {e}")),
            }
        }
        if matches!(choice, BackendChoice::Wgpu | BackendChoice::Auto) {
            #[cfg(feature = "wgpu")]
            match open_wgpu(choice == BackendChoice::Auto) {
                Ok(ready) => return Ok(ready),
                Err(e) if choice == BackendChoice::Wgpu => {
                    return Err(format!("the wgpu backend cannot run here: {e}"))
                }
                Err(e) => why.push(format!("wgpu: {e}")),
            }
        }
        let _ = (&machine, &settings);
        Err(why.join("; "))
    })
}

/// The first device `settings` names (default 0), with `machine`'s kernels
/// prepared and the staging taken.
#[cfg(feature = "cuda")]
fn open_cuda(machine: &VmMachine, settings: &GpuSettings) -> Result<(Chosen, DeviceStart), String> {
    let t0 = Instant::now();
    let devices = backend_cuda::probe().map_err(|e| e.to_string())?;
    let (config, ordinal) = match &settings.cuda {
        Some((config, spec)) => (*config, spec.resolve(devices.len()).map_err(|e| e.to_string())?[0]),
        None => (backend_cuda::CudaConfig::default(), 0),
    };
    let probed = t0.elapsed();
    let tables = stark::Machine::tables(machine);
    let kernels: Vec<_> = tables.iter().map(|t| (t.constraints(), t.logup())).collect();
    // The statement's kernels compile into the disk cache while the driver
    // starts and the static kernels compile (an empty cache: seconds);
    // `prepare` below then loads them.
    let cc = devices.get(ordinal).map(|d| d.compute_capability);
    let (b, precompile) = std::thread::scope(|s| {
        let kernels = &kernels;
        let pre = cc.map(|cc| {
            s.spawn(move || {
                let t = Instant::now();
                // A compile error surfaces again, with the device's context, in `prepare`.
                let _ = backend_cuda::CudaBackend::precompile(kernels, cc, &config);
                t.elapsed()
            })
        });
        let b = backend_cuda::CudaBackend::with_config(ordinal, config).map_err(|e| e.to_string());
        (b, pre.and_then(|p| p.join().ok()).unwrap_or_default())
    });
    let (b, precompile) = (b?, precompile);
    let opened = b.open_times();
    let mut start = DeviceStart {
        open: t0.elapsed(),
        context: probed + opened.context,
        kernels: opened.kernels,
        precompile,
        ..DeviceStart::default()
    };
    let t1 = Instant::now();
    b.prepare(&kernels).map_err(|e| e.to_string())?;
    start.prepare = t1.elapsed();
    // Pinning the staging buffers and the rehearsal (which copies only
    // small matrices, straight from pageable memory) run side by side.
    let (staged, rehearsed) = std::thread::scope(|s| {
        let staging = s.spawn(|| {
            let t = Instant::now();
            b.warm_up(0).map(|()| t.elapsed()).map_err(|e| e.to_string())
        });
        let t = Instant::now();
        let rehearsed = (rehearse(&b, &settings.options), t.elapsed());
        let staged = staging.join().unwrap_or_else(|_| Err("the staging thread panicked".into()));
        (staged, rehearsed)
    });
    start.warm_up = staged?;
    if let Err(e) = rehearsed.0 {
        eprintln!("kiln: the device's rehearsal prove failed ({e}); proving goes on");
    }
    start.rehearsal = rehearsed.1;
    Ok((Chosen::Cuda(std::sync::Arc::new(b)), start))
}

/// Proves a small run of the embedded default program with the
/// statement's options and drops the proof. A process's first use of the
/// kernels and transfer paths costs the driver more than later uses: on
/// the H200 the 2^20-cycle program's first prove took about 170 ms after
/// start-up and about 95 ms after a 15 ms rehearsal (docs/gpu/RESULTS.md,
/// section 11). The VM's kernels depend on its AIR, not on the program,
/// so the rehearsal runs the statement's kernels.
#[cfg_attr(not(feature = "cuda"), allow(dead_code))]
fn rehearse<B: backend_api::Backend>(b: &B, options: &stark::ProofOptions) -> Result<(), String> {
    let program = vm::assemble(vm::examples::DEFAULT).map_err(|e| e.to_string())?;
    let record = vm::ExecOptions { record: true, ..Default::default() };
    let ex = vm::execute(&program, &[F::new(10)], &record).map_err(|e| e.to_string())?;
    let machine = vm::VmMachine::new(&program, &ex.inputs, &ex.outputs);
    let traces = vm::trace::generate(&program, &ex).map_err(|e| e.to_string())?;
    stark::prove(b, &machine, traces, machine.publics(), options).map(drop).map_err(|e| e.to_string())
}

/// The default wgpu adapter, or for `auto` the first on a real GPU.
#[cfg(feature = "wgpu")]
fn open_wgpu(gpu_only: bool) -> Result<(Chosen, DeviceStart), String> {
    let t0 = Instant::now();
    let b = if gpu_only {
        let a = backend_wgpu::probe().into_iter().find(|a| a.kind != "cpu").ok_or("no adapter on a GPU")?;
        let config = backend_wgpu::WgpuConfig { adapter: Some(a.index), ..Default::default() };
        backend_wgpu::WgpuBackend::with_config(config)
    } else {
        backend_wgpu::WgpuBackend::new()
    };
    let b = b.map_err(|e| e.to_string())?;
    Ok((Chosen::Wgpu(std::sync::Arc::new(b)), DeviceStart { open: t0.elapsed(), ..Default::default() }))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The rehearsal proves under every hash and blowup a statement may
    /// ask for (a failure only prints a warning in the CLI, so it is
    /// pinned here on the CPU backend).
    #[test]
    fn the_rehearsal_proves_under_the_statements_options() {
        for hash in backend_api::HashKind::ALL {
            for log_blowup in [1, 4] {
                let options = stark::ProofOptions { hash, log_blowup, ..stark::ProofOptions::default() };
                rehearse(&backend_cpu::CpuBackend::new(), &options).unwrap();
            }
        }
    }
}
