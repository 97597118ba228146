//! Kernels: the static modules compiled (or read from the disk cache) at open, generated ones once per source.

use super::{unavailable, Device, DeviceInfo};
use crate::nvrtc::{self, Target};
use backend_api::{BackendError, Ctx, Stage};
use cudarc::driver::{result, sys, CudaContext, CudaFunction};
use cudarc::nvrtc::Ptx;
use std::collections::HashMap;
use std::sync::Arc;

impl Device {
    pub(crate) fn func(&self, name: &str) -> &CudaFunction {
        self.functions.get(name).expect("every listed kernel is loaded at start")
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

/// Every module of kernels-cuda compiled for the device (the interpreter's
/// and the warp NTT's only when wanted) and loaded.
pub(super) fn load_kernels(
    ctx: &Arc<CudaContext>,
    info: &DeviceInfo,
    with_interpreter: bool,
    with_warp_ntt: bool,
) -> Result<HashMap<&'static str, CudaFunction>, BackendError> {
    let target = Target::Cubin(info.compute_capability.0, info.compute_capability.1);
    let wanted = |m: &&kernels_cuda::Module| match m.name {
        "compose_interp" => with_interpreter,
        "ntt_warp" | "ntt_warp_lde" => with_warp_ntt,
        _ => true,
    };
    let modules: Vec<&kernels_cuda::Module> = kernels_cuda::MODULES.iter().filter(wanted).collect();
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

/// log2 of the largest NTT tile (elements held in shared memory by a block).
pub(crate) const NTT_TILE_LOG_MAX: u32 = 13;

/// The largest NTT tile: up to 2^13 elements (64 KiB of shared memory)
/// where the device allows it, else 2^12.
pub(super) fn tile_log(functions: &HashMap<&'static str, CudaFunction>, wanted: u32) -> u32 {
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

/// Whether the warp NTT's kernels are loaded and may use their tile of
/// shared memory (above the default 48 KiB).
pub(super) fn warp_ntt_ready(functions: &HashMap<&'static str, CudaFunction>) -> bool {
    let kernels = kernels_cuda::NTT_WARP.kernels.iter().chain(kernels_cuda::NTT_WARP_LDE.kernels);
    kernels.into_iter().all(|k| {
        functions.get(k).is_some_and(|f| {
            // SAFETY: a live function handle.
            unsafe {
                result::function::set_function_attribute(
                    f.cu_function(),
                    sys::CUfunction_attribute::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                    kernels_cuda::NTT_WARP_SHARED_BYTES as i32,
                )
            }
            .is_ok()
        })
    })
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
