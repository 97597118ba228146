//! Roots on their way to the host: pinned slots copied into behind each tree's build.

use super::{DevBuf, Event, Scope};
use crate::device::Device;
use backend_api::fault::FaultSite;
use backend_api::BackendError;
use cudarc::driver::{result, PinnedHostSlice};
use std::sync::{Arc, Mutex};

/// Roots in flight at once (then a commit reads its root at once).
const ROOT_SLOTS: usize = 4096;

/// Pinned slots roots are copied into behind their tree's build, read
/// when the transcript asks for the root.
pub(crate) struct RootSlots {
    base: *mut u64,
    _mem: PinnedHostSlice<u64>,
    free: Mutex<Vec<usize>>,
}

// SAFETY: `base` points into `_mem`, owned here; each slot is written by
// one copy and read by one reader after the copy's event completed.
unsafe impl Send for RootSlots {}
unsafe impl Sync for RootSlots {}

impl RootSlots {
    pub(crate) fn new(ctx: &Arc<cudarc::driver::CudaContext>) -> Result<RootSlots, cudarc::driver::DriverError> {
        // SAFETY: written by device copies before it is read.
        let mut mem = unsafe { ctx.alloc_pinned_with_flags::<u64>(4 * ROOT_SLOTS, 0) }?;
        let base = mem.as_mut_ptr()?;
        Ok(RootSlots { base, _mem: mem, free: Mutex::new((0..ROOT_SLOTS).rev().collect()) })
    }

    fn take(&self) -> Option<usize> {
        self.free.lock().unwrap_or_else(|p| p.into_inner()).pop()
    }

    fn put(&self, slot: usize) {
        self.free.lock().unwrap_or_else(|p| p.into_inner()).push(slot);
    }

    fn read(&self, slot: usize) -> [u64; 4] {
        let mut out = [0u64; 4];
        // SAFETY: the slot holds 4 u64 and its copy has completed.
        unsafe { std::ptr::copy_nonoverlapping(self.base.add(4 * slot), out.as_mut_ptr(), 4) };
        out
    }
}

/// A root on its way to the host: its slot and the event behind the copy.
pub(crate) struct PendingRoot {
    dev: Arc<Device>,
    slot: Option<usize>,
    event: Arc<Event>,
}

impl PendingRoot {
    /// Waits for the copy and reads the root's four words.
    pub(crate) fn wait(mut self) -> Result<[u64; 4], BackendError> {
        let slot = self.slot.take().expect("a pending root has its slot until read");
        let done = self.dev.host_wait(&self.event);
        let words = self.dev.roots.read(slot);
        self.dev.roots.put(slot);
        done.map(|()| words)
    }
}

impl Drop for PendingRoot {
    fn drop(&mut self) {
        if let Some(slot) = self.slot.take() {
            // Never read: the slot is free once its copy has landed.
            if self.dev.host_wait(&self.event).is_ok() {
                self.dev.roots.put(slot);
            }
        }
    }
}

impl Scope<'_> {
    /// Copies the four words at element `offset` of `src` (a root) into a
    /// pinned slot behind the work queued so far; `None` when every slot is
    /// in flight (then the caller reads it at once).
    pub(crate) fn root_copy(&mut self, src: &Arc<DevBuf>, offset: usize) -> Result<Option<PendingRoot>, BackendError> {
        self.dev.check(FaultSite::TransferToHost, self.stage, self.ctx, 32)?;
        let Some(slot) = self.dev.roots.take() else { return Ok(None) };
        let from = src.at(offset);
        // SAFETY: the slot's 4 words are ours until returned; read after the
        // event recorded behind this copy.
        let host = unsafe { std::slice::from_raw_parts_mut(self.dev.roots.base.add(4 * slot), 4) };
        let copied = self.call_ok(&[src], |s| unsafe { result::memcpy_dtoh_async(host, from, s.cu_stream()) });
        if let Err(e) = copied {
            self.dev.roots.put(slot);
            return Err(e);
        }
        let event = self.finish_event()?;
        Ok(Some(PendingRoot { dev: self.dev.clone(), slot: Some(slot), event }))
    }
}
