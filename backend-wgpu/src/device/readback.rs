//! Reads from the device, in pieces through reused mappable staging buffers, two pieces in flight.

use super::{Device, READ_PIECE, STAGING_MIN};
use backend_api::fault::FaultSite;
use backend_api::host::{parallel_copy, try_zeroed};
use backend_api::{BackendError, Ctx, Stage};
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};

impl Device {
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
