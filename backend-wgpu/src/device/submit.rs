//! Submission: jobs recording one operation's dispatches, sent after the pending clears inside error scopes.

use super::pool::JobTicket;
use super::{Device, Kernel, PC_BYTES, WG};
use backend_api::fault::FaultSite;
use backend_api::{BackendError, Ctx, Stage};
use std::sync::atomic::Ordering;

impl Device {
    /// Submits `work` after the clears recorded since the last submission
    /// (every submission goes through here). The clears are taken and
    /// submitted under one lock: another thread's work on a buffer just
    /// cleared must not reach the queue between the two.
    pub(super) fn submit(&self, work: impl IntoIterator<Item = wgpu::CommandBuffer>) -> wgpu::SubmissionIndex {
        let mut clears = self.clears.lock().unwrap_or_else(|p| p.into_inner());
        let first = clears.take().map(|e| e.finish());
        self.queue.submit(first.into_iter().chain(work))
    }

    /// Submits the pending clears, if any.
    pub(super) fn flush_clears(&self) {
        let mut clears = self.clears.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(e) = clears.take() {
            self.queue.submit([e.finish()]);
        }
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
