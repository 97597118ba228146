//! Device to host: small copies straight from the stream, large ones double-buffered through pinned staging.

use super::staging::{Staging, SMALL_COPY, STAGING_ELEMS};
use super::{DevBuf, Scope};
use backend_api::fault::FaultSite;
use backend_api::host::parallel_copy;
use backend_api::BackendError;
use cudarc::driver::{result, CudaEvent};
use std::sync::Arc;

impl Scope<'_> {
    /// Copies `dst.len()` elements of `src` from element `offset` to the
    /// host, complete on return.
    pub(crate) fn dtoh(&mut self, src: &Arc<DevBuf>, offset: usize, dst: &mut [u64]) -> Result<(), BackendError> {
        let (stage, ctx) = (self.stage, self.ctx);
        self.dev.check(FaultSite::TransferToHost, stage, ctx, 8 * dst.len() as u64)?;
        if dst.is_empty() {
            return Ok(());
        }
        let from = src.at(offset);
        if dst.len() <= SMALL_COPY {
            // SAFETY: src holds the range; synchronized before the host reads.
            self.call_ok(&[src], |s| unsafe { result::memcpy_dtoh_async(dst, from, s.cu_stream()) })?;
            return self.sync();
        }
        let Some(mut staging) = self.dev.staging.take(self.dev, stage, ctx)? else {
            // Every staging set is in use: a pageable copy on this stream,
            // as for small copies (not on the legacy stream).
            // SAFETY: src holds the range; synchronized before the host reads.
            self.call_ok(&[src], |s| unsafe { result::memcpy_dtoh_async(dst, from, s.cu_stream()) })?;
            return self.sync();
        };
        let r = self.dtoh_staged(from, src, dst, &mut staging);
        self.dev.staging.put(staging);
        r
    }

    /// Through both buffers of the staging set: the copy engine fills
    /// one while the host drains the other.
    fn dtoh_staged(
        &mut self,
        from: u64,
        src: &Arc<DevBuf>,
        dst: &mut [u64],
        staging: &mut Staging,
    ) -> Result<(), BackendError> {
        let [a, b] = &mut staging.0;
        let slots = [a.as_mut_ptr().map_err(|e| self.err(e))?, b.as_mut_ptr().map_err(|e| self.err(e))?];
        let len = dst.len();
        let issue = |s: &mut Self, i: usize| -> Result<CudaEvent, BackendError> {
            let n = STAGING_ELEMS.min(len - i * STAGING_ELEMS);
            // SAFETY: each slot holds STAGING_ELEMS; slot i % 2 is written
            // only once the host has copied out its previous chunk, and read
            // only after the event recorded behind this copy.
            let host = unsafe { std::slice::from_raw_parts_mut(slots[i % 2], n) };
            let d = from + (8 * i * STAGING_ELEMS) as u64;
            s.call_ok(&[src], |st| unsafe { result::memcpy_dtoh_async(host, d, st.cu_stream()) })?;
            s.stream().record_event(None).map_err(|e| s.err(e))
        };
        let mut next = Some(issue(self, 0)?);
        let mut drained = Ok(());
        for (i, chunk) in dst.chunks_mut(STAGING_ELEMS).enumerate() {
            let Some(landed) = next.take() else { break };
            if (i + 1) * STAGING_ELEMS < len {
                match issue(self, i + 1) {
                    Ok(ev) => next = Some(ev),
                    Err(e) => drained = Err(e),
                }
            }
            if let Err(e) = landed.synchronize() {
                drained = Err(self.err(e));
            }
            if drained.is_err() {
                break;
            }
            // SAFETY: the copy into this slot has landed (the event above).
            let host = unsafe { std::slice::from_raw_parts(slots[i % 2], chunk.len()) };
            parallel_copy(chunk, host, <[u64]>::copy_from_slice);
        }
        // The set goes back to the pool only with no copy into it in flight.
        if let Some(ev) = next {
            let _ = ev.synchronize();
        }
        drained.and_then(|()| self.sync())
    }
}
