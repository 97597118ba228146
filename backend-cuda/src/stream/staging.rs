//! Pinned staging for large transfers: double-buffered sets, taken by one transfer at a time.

use crate::device::Device;
use backend_api::{BackendError, Ctx, Stage};
use cudarc::driver::{sys, PinnedHostSlice};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;

/// 16 MiB per staging buffer: double-buffered, that keeps the copy
/// engine busy, and pinning a set costs a process's start-up a quarter of
/// what 64 MiB buffers did (pinning is paid per byte).
pub(super) const STAGING_ELEMS: usize = 2 << 20;

/// Copies up to this many elements go straight from pageable memory.
pub(super) const SMALL_COPY: usize = 1 << 16;

/// `d.copy_from_slice(s)` with non-temporal stores, for uploads into
/// pinned memory: the destination's lines are not read into the cache
/// first (a plain copy's stores read them: three bytes of memory traffic
/// per byte copied, not two), and only the copy engine reads them. On the
/// H200's host, 2^20 x 64 uploads went from 38-40 to 44-45 GB/s (median);
/// downloads, whose destination the caller reads next, keep the plain copy
/// (with streamed stores they were 5-10 % slower).
#[cfg(target_arch = "x86_64")]
pub(super) fn stream_copy(d: &mut [u64], s: &[u64]) {
    use std::arch::x86_64::{__m128i, _mm_loadu_si128, _mm_sfence, _mm_stream_si128};
    assert_eq!(d.len(), s.len());
    // One element first when d is not 16-byte aligned (u64s are 8-aligned).
    let head = d.as_ptr().align_offset(16).min(d.len());
    d[..head].copy_from_slice(&s[..head]);
    let pairs = (d.len() - head) / 2;
    let (dp, sp) = (d[head..].as_mut_ptr() as *mut __m128i, s[head..].as_ptr() as *const __m128i);
    for k in 0..pairs {
        // SAFETY: SSE2 is part of x86_64; k < pairs keeps both 16-byte
        // accesses inside the slices, and dp is 16-byte aligned.
        unsafe { _mm_stream_si128(dp.add(k), _mm_loadu_si128(sp.add(k))) };
    }
    let tail = head + 2 * pairs;
    d[tail..].copy_from_slice(&s[tail..]);
    // SAFETY: SSE2. Orders the streamed stores before whatever this thread
    // does next (the copy engine reads them once every piece is done).
    unsafe { _mm_sfence() };
}

#[cfg(not(target_arch = "x86_64"))]
pub(super) fn stream_copy(d: &mut [u64], s: &[u64]) {
    d.copy_from_slice(s);
}

/// Two pinned buffers: uploads fill one while the other is in flight.
pub(crate) struct Staging(pub(super) [PinnedHostSlice<u64>; 2]);

/// Pinned staging sets, taken by one transfer at a time. When every set
/// is taken and no more may be made, a transfer copies from pageable
/// memory instead of waiting (a waiting transfer could hold up the one
/// that would return a set).
pub(crate) struct StagingPool {
    free: Mutex<Vec<Staging>>,
    made: AtomicU64,
    max: u64,
}

impl StagingPool {
    pub(crate) fn new(max: usize) -> StagingPool {
        StagingPool { free: Mutex::new(Vec::new()), made: AtomicU64::new(0), max: max.max(1) as u64 }
    }

    pub(super) fn take(&self, dev: &Device, stage: Stage, ctx: &Ctx) -> Result<Option<Staging>, BackendError> {
        if let Some(s) = self.free.lock().unwrap_or_else(|p| p.into_inner()).pop() {
            return Ok(Some(s));
        }
        if self.made.fetch_update(Ordering::AcqRel, Ordering::Acquire, |m| (m < self.max).then_some(m + 1)).is_err() {
            return Ok(None);
        }
        let pinned = || {
            // SAFETY: plain page-locked memory (not write-combined: it is
            // read back on downloads); written before it is read.
            unsafe { dev.ctx.alloc_pinned_with_flags::<u64>(STAGING_ELEMS, 0) }.map_err(|e| {
                if e.0 == sys::cudaError_enum::CUDA_ERROR_OUT_OF_MEMORY {
                    dev.decline(stage, ctx, 8 * STAGING_ELEMS as u64, format!("pinned staging: {e}"))
                } else {
                    dev.err(stage, ctx, e)
                }
            })
        };
        match (pinned(), pinned()) {
            (Ok(a), Ok(b)) => Ok(Some(Staging([a, b]))),
            (Err(e), _) | (_, Err(e)) => {
                self.made.fetch_sub(1, Ordering::AcqRel);
                Err(e)
            }
        }
    }

    pub(super) fn put(&self, s: Staging) {
        self.free.lock().unwrap_or_else(|p| p.into_inner()).push(s);
    }

    /// Makes one set now, if none was made yet.
    pub(crate) fn warm(&self, dev: &Device, stage: Stage, ctx: &Ctx) -> Result<(), BackendError> {
        if self.made.load(Ordering::Acquire) == 0 {
            if let Some(s) = self.take(dev, stage, ctx)? {
                self.put(s);
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use backend_api::host::parallel_copy;

    #[test]
    fn streamed_copies_match_at_every_alignment_and_length() {
        let src: Vec<u64> = (0..3000u64).map(|i| i.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ 0xA5A5).collect();
        for start in 0..3 {
            for len in [0, 1, 2, 3, 17, 1000, 2997 - start] {
                let mut dst = vec![0u64; len + 3];
                stream_copy(&mut dst[start..start + len], &src[start..start + len]);
                assert_eq!(&dst[start..start + len], &src[start..start + len], "start {start} len {len}");
                assert!(dst[..start].iter().chain(&dst[start + len..]).all(|&v| v == 0), "wrote outside");
            }
        }
        let mut big = vec![0u64; 1 << 18];
        parallel_copy(&mut big, &(0..1u64 << 18).collect::<Vec<_>>(), stream_copy);
        assert!(big.iter().enumerate().all(|(i, &v)| v == i as u64));
    }
}
