//! Device memory for an operation: buffers from the stream-ordered pool, freed after every use.

use super::{DevBuf, Event, Order, Scope};
use backend_api::fault::FaultSite;
use backend_api::BackendError;
use cudarc::driver::result;
use cudarc::driver::sys::{self, CUdeviceptr};
use std::sync::{Arc, Mutex};

impl Drop for DevBuf {
    fn drop(&mut self) {
        let dev = &self.dev;
        let _ = dev.ctx.bind_to_thread();
        let home = dev.streams.get(self.home);
        let others: Vec<Arc<Event>> = {
            let o = self.order.get_mut().unwrap_or_else(|p| p.into_inner());
            o.uses.iter().flatten().chain(&o.ready).filter(|e| e.stream != self.home).cloned().collect()
        };
        // A test may arm the seed-000 mistake: free without waiting.
        let skip = !others.is_empty() && dev.faults.should_fail(FaultSite::UnorderedFree);
        let mut det = dev.streams.detector();
        if !skip {
            for e in &others {
                let _ = home.wait(&e.ev);
                if let (Some(d), Some(c)) = (det.as_mut(), &e.clock) {
                    d.wait(self.home, c);
                }
            }
        }
        if let Some(d) = det.as_mut() {
            d.free(self.id, self.home);
        }
        // SAFETY: allocated from the pool on this stream, freed once, after
        // every use on another stream (the waits above).
        unsafe {
            let _ = result::free_async(self.ptr, home.cu_stream());
        }
        drop(det);
        dev.note_live(-(self.bytes as i64));
        if let Some(claim) = &self.owner {
            claim.own(-(self.bytes as i64));
        }
    }
}

impl Scope<'_> {
    /// `len` u64 of device memory on this stream, owned by the claim of the
    /// lane's proof (if any); an out-of-memory refusal (or a capped pool's)
    /// is a typed device decline.
    pub(crate) fn alloc(&mut self, len: usize) -> Result<Arc<DevBuf>, BackendError> {
        self.alloc_for(len, true)
    }

    /// A buffer that outlives any proof (a cache of the backend's): owned
    /// by no claim, so it never keeps a proof's reservation held; it comes
    /// out of the gate's safety margin.
    pub(crate) fn upload_shared(&mut self, v: &[u64]) -> Result<Arc<DevBuf>, BackendError> {
        let b = self.alloc_for(v.len(), false)?;
        if !v.is_empty() {
            self.htod(v, &b)?;
        }
        Ok(b)
    }

    /// `len` u64 of device memory for a cache of the backend's, as
    /// `upload_shared` but filled by the caller's kernels.
    pub(crate) fn alloc_shared(&mut self, len: usize) -> Result<Arc<DevBuf>, BackendError> {
        self.alloc_for(len, false)
    }

    fn alloc_for(&mut self, len: usize, claimed: bool) -> Result<Arc<DevBuf>, BackendError> {
        let (stage, ctx) = (self.stage, self.ctx);
        let bytes = 8 * len.max(1);
        self.dev.check(FaultSite::Alloc(stage), stage, ctx, bytes as u64)?;
        let mut ptr: CUdeviceptr = 0;
        let mut det = self.dev.streams.detector();
        let cu = self.stream().cu_stream();
        // SAFETY: the stream and the pool are live; the memory is written by
        // the operation before it is read.
        let r = unsafe { sys::cuMemAllocFromPoolAsync(&mut ptr, bytes, self.dev.pool(), cu) };
        match r.result() {
            Ok(()) => {}
            Err(e) if e.0 == sys::cudaError_enum::CUDA_ERROR_OUT_OF_MEMORY => {
                return Err(self.dev.decline(stage, ctx, bytes as u64, e.to_string()))
            }
            Err(e) => return Err(self.err(e)),
        }
        let id = self.dev.next_buffer_id();
        if let Some(d) = det.as_mut() {
            d.op(self.stream);
            d.alloc(id, self.label());
            d.write(id, self.stream, self.label());
        }
        drop(det);
        let owner = if claimed { self.dev.claim_of(ctx.lane) } else { None };
        if let Some(c) = &owner {
            c.own(bytes as i64);
        }
        self.dev.note_live(bytes as i64);
        let uses = vec![None; self.dev.streams.len()];
        let b = Arc::new(DevBuf {
            ptr,
            id,
            bytes: bytes as u64,
            home: self.stream,
            order: Mutex::new(Order { ready: None, waited: 0, uses }),
            owner,
            dev: self.dev.clone(),
        });
        self.made.push(b.clone());
        self.used.push(b.clone());
        Ok(b)
    }

    pub(crate) fn zeros(&mut self, len: usize) -> Result<Arc<DevBuf>, BackendError> {
        let b = self.alloc(len)?;
        self.memset_zero(&b, 0, len)?;
        Ok(b)
    }

    /// Zeroes `len` elements of `b` from `offset`.
    pub(crate) fn memset_zero(&mut self, b: &Arc<DevBuf>, offset: usize, len: usize) -> Result<(), BackendError> {
        let ptr = b.at(offset);
        // SAFETY: the caller's range lies inside `b`.
        self.call_ok(&[b], |s| unsafe { result::memset_d8_async(ptr, 0, 8 * len, s.cu_stream()) })
    }
}
