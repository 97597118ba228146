//! Writes to the device: small ones queued, large ones through a few reused mapped staging buffers.

use super::{Device, DeviceBuffer, STAGED_WRITE_MIN, STAGING_MIN, UPLOAD_STAGING_MAX, WRITE_PIECE};
use backend_api::fault::FaultSite;
use backend_api::host::parallel_copy;
use backend_api::{BackendError, Ctx, Stage};
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};

impl Device {
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
}

/// Upload staging buffers: idle ones mapped for writing, and those whose
/// copy was submitted, with that submission and whether they are mapped
/// again (set by wgpu's callback: `Some(false)` if mapping failed).
#[derive(Default)]
pub(super) struct UploadStaging(Mutex<StagingState>);

#[derive(Default)]
pub(super) struct StagingState {
    pub(super) idle: Vec<wgpu::Buffer>,
    pub(super) busy: std::collections::VecDeque<(wgpu::Buffer, wgpu::SubmissionIndex, MapDone)>,
}

/// Set by a mapping's callback: whether it succeeded.
type MapDone = Arc<Mutex<Option<bool>>>;

impl UploadStaging {
    pub(super) fn state(&self) -> std::sync::MutexGuard<'_, StagingState> {
        self.0.lock().unwrap_or_else(|p| p.into_inner())
    }
}
