//! Storage buffers: idle ones from the pool (cleared with the next submission when reused), else new ones.

use super::{Device, DeviceBuffer};
use backend_api::fault::FaultSite;
use backend_api::{BackendError, Ctx, Stage};

impl Device {
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

    /// [`Device::alloc`]; a reused buffer is cleared only when `zeroed`
    /// (the caller overwrites every byte otherwise).
    pub(super) fn alloc_for(
        &self,
        stage: Stage,
        ctx: &Ctx,
        bytes: u64,
        zeroed: bool,
    ) -> Result<DeviceBuffer, BackendError> {
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
}
