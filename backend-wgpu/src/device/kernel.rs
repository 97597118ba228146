//! Kernels: WGSL compiled once per source into a compute pipeline, a batch of sources side by side.

use super::{Device, PC_BYTES};
use backend_api::{BackendError, Ctx, Stage};
use std::sync::Arc;

/// A compiled kernel: its pipeline and binding layout, and its name in
/// profiles.
pub(crate) struct Kernel {
    pub(super) pipeline: wgpu::ComputePipeline,
    pub(super) layout: wgpu::BindGroupLayout,
    pub(super) bindings: usize,
    pub(super) label: &'static str,
}

impl Device {
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
}
