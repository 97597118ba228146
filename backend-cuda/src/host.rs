//! Host matrices pinned in place
//! ([`BackendBase::pin`](backend_api::BackendBase::pin)) and the registry
//! uploads consult: an upload whose source lies in a pinned
//! range goes from it straight to the copy engine, without the staging
//! copy that otherwise costs the host's memory bandwidth (on some hosts
//! more than the copy engine's time).
//!
//! Pinning costs about what one staged upload does, so it pays where one
//! buffer is uploaded again and again (a prover reusing its trace buffer,
//! a benchmark). The registration is portable: every context of the
//! process copies from it.

use backend_api::{BackendError, ColMatrix, F};
use cudarc::driver::{sys, CudaContext};
use std::sync::{Arc, Mutex};

/// One registered range and what keeps it valid: the buffer it lies in
/// (so the memory outlives the registration) and a context to unregister
/// it under. Uploads hold an entry while their copies run, so a pin
/// dropped meanwhile unregisters only after the last of them.
pub(crate) struct Pinned {
    start: usize,
    bytes: usize,
    ctx: Arc<CudaContext>,
    _data: Arc<Vec<F>>,
}

impl Drop for Pinned {
    fn drop(&mut self) {
        // Nothing to report to: a failed unregistration leaves the pages
        // locked (and held from the system) until the process ends.
        if self.ctx.bind_to_thread().is_ok() {
            // SAFETY: `start` was registered by `pin` and no copy from it
            // is in flight (those hold this entry).
            let _ = unsafe { sys::cuMemHostUnregister(self.start as *mut std::ffi::c_void) };
        }
    }
}

/// Every pinned range of the process, once per pin.
static REGISTRY: Mutex<Vec<Arc<Pinned>>> = Mutex::new(Vec::new());

fn registry() -> std::sync::MutexGuard<'static, Vec<Arc<Pinned>>> {
    REGISTRY.lock().unwrap_or_else(|p| p.into_inner())
}

/// The pinned range holding all of `src`, held until dropped.
pub(crate) fn covering(src: &[u64]) -> Option<Arc<Pinned>> {
    let (start, end) = (src.as_ptr() as usize, src.as_ptr() as usize + 8 * src.len());
    registry().iter().find(|p| p.start <= start && end <= p.start + p.bytes).cloned()
}

/// A matrix's buffer, page-locked until this is dropped. Clones of the
/// matrix share the buffer, so they upload from pinned memory too; a
/// matrix written after pinning is copied first (copy on write) and is
/// no longer pinned.
pub struct PinnedHost {
    entry: Option<Arc<Pinned>>,
}

impl PinnedHost {
    /// Bytes held page-locked.
    pub fn bytes(&self) -> usize {
        self.entry.as_ref().map_or(0, |p| p.bytes)
    }
}

impl Drop for PinnedHost {
    fn drop(&mut self) {
        if let Some(mine) = self.entry.take() {
            let mut r = registry();
            if let Some(k) = r.iter().position(|p| Arc::ptr_eq(p, &mine)) {
                r.swap_remove(k);
            }
        }
    }
}

/// Page-locks `m`'s buffer. A buffer already pinned (by another clone)
/// shares that registration. The driver's refusal (a locked-memory limit,
/// a range overlapping another registration) is a decline of the upload
/// stage: the matrix still uploads, through staging.
pub(crate) fn pin(
    ctx: &Arc<CudaContext>,
    m: &ColMatrix,
    decline: impl Fn(String) -> BackendError,
) -> Result<PinnedHost, BackendError> {
    let data = m.shared_data();
    let (start, bytes) = (data.as_ptr() as usize, 8 * data.len());
    if bytes == 0 {
        return Ok(PinnedHost { entry: None });
    }
    let mut r = registry();
    let entry = match r.iter().find(|p| p.start == start && p.bytes == bytes) {
        Some(p) => p.clone(),
        None => {
            ctx.bind_to_thread().map_err(|e| decline(e.to_string()))?;
            let flags = sys::CU_MEMHOSTREGISTER_PORTABLE;
            // SAFETY: the range is the live buffer `data`, which the entry
            // keeps alive until it unregisters the range. The driver only
            // reads it (as the source of copies).
            unsafe { sys::cuMemHostRegister_v2(start as *mut std::ffi::c_void, bytes, flags) }
                .result()
                .map_err(|e| decline(format!("pinning {bytes} bytes of host memory: {e}")))?;
            Arc::new(Pinned { start, bytes, ctx: ctx.clone(), _data: data.clone() })
        }
    };
    r.push(entry.clone());
    Ok(PinnedHost { entry: Some(entry) })
}
