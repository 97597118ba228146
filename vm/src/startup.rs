//! The backend a prove runs on, made ready while the program executes.
//!
//! With a GPU in the build, the device is opened, the statement's
//! generated kernels compiled (or read from the kernel cache) and the
//! pinned staging taken on another thread, started before execution, so
//! start-up hides behind execution and trace generation. `--backend auto`
//! chooses once the run's size is known: the GPU for statements of at
//! least [`AUTO_GPU_MIN_CYCLES`] cycles when a device is usable, else the
//! CPU, and says why.

use crate::BackendChoice;
use backend_api::F;
#[cfg(feature = "cuda")]
use backend_cuda::CudaBackend;
use std::time::Duration;
#[cfg(feature = "cuda")]
use std::time::Instant;
use vm::Program;
#[cfg(feature = "cuda")]
use vm::VmMachine;

/// The smallest run (in cycles) `--backend auto` proves on the GPU. Below
/// it the CPU finishes first: opening a device (~0.2 s) is not hidden by a
/// short run, and small tables leave the GPU idle. Measured on the H200
/// host, CPU against CUDA over runs of 2^10 to 2^20 cycles
/// (docs/gpu/RESULTS.md, "auto crossover").
pub const AUTO_GPU_MIN_CYCLES: u64 = 1 << 16;

/// The backend a prove runs on.
pub enum Chosen {
    /// With why `auto` chose it.
    Cpu(Option<String>),
    #[cfg(feature = "cuda")]
    Cuda(CudaBackend),
}

/// Where the device's start-up time went, on its own thread.
#[derive(Clone, Copy, Debug, Default)]
pub struct DeviceStart {
    /// Opening the device: driver, context, stream, pool, static kernels.
    pub open: Duration,
    /// Compiling (or loading) the statement's generated kernels.
    pub prepare: Duration,
    /// Pinned staging buffers.
    pub warm_up: Duration,
}

#[cfg(feature = "cuda")]
type GpuThread = std::thread::JoinHandle<Result<(CudaBackend, DeviceStart), String>>;

/// A backend being made ready.
pub struct Starting {
    choice: BackendChoice,
    #[cfg(feature = "cuda")]
    gpu: Option<GpuThread>,
}

const WGPU_UNAVAILABLE: &str = "the wgpu backend is not available in this release (backends: cpu, cuda)";
#[cfg(not(feature = "cuda"))]
const NO_CUDA_BUILD: &str = "the cuda backend is not in this build (rebuild with --features cuda)";

impl Starting {
    /// Starts the device for `program` (its inputs give the statement's
    /// shape; outputs do not change its kernels). Choices this build
    /// cannot serve fail here, before any work.
    pub fn begin(choice: BackendChoice, program: &Program, inputs: &[F]) -> Result<Starting, String> {
        match choice {
            BackendChoice::Wgpu => return Err(WGPU_UNAVAILABLE.into()),
            #[cfg(not(feature = "cuda"))]
            BackendChoice::Cuda => return Err(NO_CUDA_BUILD.into()),
            _ => {}
        }
        #[cfg(feature = "cuda")]
        let gpu = (choice != BackendChoice::Cpu).then(|| start_gpu(VmMachine::new(program, inputs, &[])));
        #[cfg(not(feature = "cuda"))]
        let _ = (program, inputs);
        Ok(Starting {
            choice,
            #[cfg(feature = "cuda")]
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
            BackendChoice::Wgpu => Err(WGPU_UNAVAILABLE.into()),
            BackendChoice::Auto if !cfg!(feature = "cuda") => {
                cpu(Some("auto: this build has no GPU backend (rebuild with --features cuda)".into()))
            }
            BackendChoice::Auto if cycles < AUTO_GPU_MIN_CYCLES => {
                cpu(Some(format!("auto: {cycles} cycles, below the {AUTO_GPU_MIN_CYCLES} where the GPU is faster")))
            }
            BackendChoice::Cuda | BackendChoice::Auto => self.join_gpu(),
        }
    }

    #[cfg(feature = "cuda")]
    fn join_gpu(self) -> Result<(Chosen, Option<DeviceStart>, Duration), String> {
        let t0 = Instant::now();
        let Some(thread) = self.gpu else { return Err("the device was not started".into()) };
        let ready = thread.join().unwrap_or_else(|_| Err("the device start-up thread panicked".into()));
        match ready {
            Ok((b, start)) => Ok((Chosen::Cuda(b), Some(start), t0.elapsed())),
            Err(e) if self.choice == BackendChoice::Auto => {
                Ok((Chosen::Cpu(Some(format!("auto: no usable CUDA device: {e}"))), None, t0.elapsed()))
            }
            Err(e) => Err(format!("the cuda backend cannot run here: {e}")),
        }
    }

    #[cfg(not(feature = "cuda"))]
    fn join_gpu(self) -> Result<(Chosen, Option<DeviceStart>, Duration), String> {
        Err(NO_CUDA_BUILD.into())
    }
}

/// Opens device 0 and prepares `machine`'s kernels on a thread of its own.
#[cfg(feature = "cuda")]
fn start_gpu(machine: VmMachine) -> GpuThread {
    std::thread::spawn(move || {
        let t0 = Instant::now();
        let b = CudaBackend::new(0).map_err(|e| e.to_string())?;
        let open = t0.elapsed();
        let t1 = Instant::now();
        let tables = stark::Machine::tables(&machine);
        let kernels: Vec<_> = tables.iter().map(|t| (t.constraints(), t.logup())).collect();
        b.prepare(&kernels).map_err(|e| e.to_string())?;
        let prepare = t1.elapsed();
        let t2 = Instant::now();
        b.warm_up(0).map_err(|e| e.to_string())?;
        Ok((b, DeviceStart { open, prepare, warm_up: t2.elapsed() }))
    })
}
