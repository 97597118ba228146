//! Device memory: the stream-ordered pool, the bytes of live buffers, and the claims of reserved lanes.

use super::{unavailable, Device};
use backend_api::gate::Claim;
use backend_api::{BackendError, Ctx, Lane, Stage};
use cudarc::driver::{result, sys, CudaContext};
use std::sync::atomic::Ordering;
use std::sync::Arc;

impl Device {
    pub(crate) fn pool(&self) -> sys::CUmemoryPool {
        self.pool.0
    }

    pub(crate) fn next_buffer_id(&self) -> u64 {
        self.next_buffer.fetch_add(1, Ordering::Relaxed)
    }

    /// A buffer of `delta` bytes made (negative: freed).
    pub(crate) fn note_live(&self, delta: i64) {
        if delta >= 0 {
            let now = self.live.fetch_add(delta as u64, Ordering::AcqRel) + delta as u64;
            self.peak_live.fetch_max(now, Ordering::AcqRel);
        } else {
            self.live.fetch_sub(delta.unsigned_abs(), Ordering::AcqRel);
        }
    }

    /// (live, peak) bytes of buffers; `reset_peak` starts a new peak from now.
    pub(crate) fn live_bytes(&self, reset_peak: bool) -> (u64, u64) {
        let live = self.live.load(Ordering::Acquire);
        let peak = if reset_peak {
            self.peak_live.swap(live, Ordering::AcqRel)
        } else {
            self.peak_live.load(Ordering::Acquire)
        };
        (live, peak)
    }

    /// Free device memory now (cuMemGetInfo); 0 when the query fails.
    pub(crate) fn free_bytes(&self) -> u64 {
        self.ctx.mem_get_info().map(|(f, _)| f as u64).unwrap_or(0)
    }

    /// The claim `lane` works under, if its proof reserved one.
    pub(crate) fn claim_of(&self, lane: Lane) -> Option<Arc<Claim>> {
        if lane == Lane::NONE {
            return None;
        }
        self.claims.lock().unwrap_or_else(|p| p.into_inner()).get(&lane).cloned()
    }

    /// Work on `lanes` runs under `claim` until [`Device::release_lanes`].
    pub(crate) fn claim_lanes(&self, lanes: &[Lane], claim: &Arc<Claim>) {
        let mut map = self.claims.lock().unwrap_or_else(|p| p.into_inner());
        for &l in lanes.iter().filter(|&&l| l != Lane::NONE) {
            map.insert(l, claim.clone());
        }
    }

    pub(crate) fn release_lanes(&self, lanes: &[Lane]) {
        let mut map = self.claims.lock().unwrap_or_else(|p| p.into_inner());
        for l in lanes {
            map.remove(l);
        }
    }

    /// Settles the device after a decline: waits for queued work on every
    /// stream and returns the pool's cached memory to the driver.
    pub(crate) fn drain(&self) -> Result<(), BackendError> {
        let ctx = Ctx::table("-");
        self.sync_all(Stage::Download, &ctx)?;
        // SAFETY: a live pool; nothing is in flight after the sync.
        unsafe { result::mem_pool::trim_to(self.pool.0, 0) }.map_err(|e| self.err(Stage::Download, &ctx, e))
    }

    /// The pool's (in use, high-water) bytes as the driver counts them;
    /// `reset_high` restarts the high-water mark from the bytes in use.
    pub(crate) fn pool_usage(&self, reset_high: bool) -> Result<(u64, u64), BackendError> {
        let ctx = Ctx::table("-");
        let get = |attr| -> Result<u64, BackendError> {
            let mut v: u64 = 0;
            // SAFETY: a live pool; these attributes are u64.
            unsafe { result::mem_pool::get_attribute(self.pool.0, attr, &mut v as *mut u64 as *mut _) }
                .map_err(|e| self.err(Stage::Download, &ctx, e))?;
            Ok(v)
        };
        use sys::CUmemPool_attribute::*;
        let (used, high) = (get(CU_MEMPOOL_ATTR_USED_MEM_CURRENT)?, get(CU_MEMPOOL_ATTR_USED_MEM_HIGH)?);
        if reset_high {
            let mut zero: u64 = 0;
            // SAFETY: as above; setting the high-water mark to 0 resets it.
            unsafe {
                result::mem_pool::set_attribute(
                    self.pool.0,
                    CU_MEMPOOL_ATTR_USED_MEM_HIGH,
                    &mut zero as *mut u64 as *mut _,
                )
            }
            .map_err(|e| self.err(Stage::Download, &ctx, e))?;
        }
        Ok((used, high))
    }

    /// What the first prove would otherwise pay for: a pinned staging set,
    /// and `reserve_bytes` of the memory pool taken and given back (the
    /// pool keeps freed blocks).
    pub(crate) fn warm_up(self: &Arc<Self>, reserve_bytes: u64) -> Result<(), BackendError> {
        let (stage, ctx) = (Stage::Upload, Ctx::table("warm-up"));
        self.staging.warm(self, stage, &ctx)?;
        if reserve_bytes > 0 {
            let mut scope = crate::stream::Scope::new(self, stage, &ctx)?;
            drop(scope.alloc((reserve_bytes / 8) as usize)?);
            scope.sync()?;
        }
        Ok(())
    }
}

/// The stream-ordered pool every buffer comes from: the device's default
/// pool, or one of our own capped at `limit` bytes (allocations past the
/// cap are refused by the driver: a real decline for tests). Freed blocks
/// stay in the pool instead of going back to the driver at every
/// synchronisation (drain trims it).
pub(super) fn open_pool(
    ctx: &Arc<CudaContext>,
    ordinal: usize,
    limit: Option<u64>,
) -> Result<(sys::CUmemoryPool, bool), BackendError> {
    let (pool, own) = match limit {
        None => {
            // SAFETY: the device handle comes from the live context.
            let p = unsafe { result::device::get_default_mem_pool(ctx.cu_device()) }
                .map_err(|e| unavailable("default memory pool", e))?;
            (p, false)
        }
        Some(limit) => {
            // SAFETY: zeroed props are the documented defaults; the fields
            // set below describe pinned device memory.
            let mut props: sys::CUmemPoolProps = unsafe { std::mem::zeroed() };
            props.allocType = sys::CUmemAllocationType::CU_MEM_ALLOCATION_TYPE_PINNED;
            props.handleTypes = sys::CUmemAllocationHandleType::CU_MEM_HANDLE_TYPE_NONE;
            props.location.type_ = sys::CUmemLocationType::CU_MEM_LOCATION_TYPE_DEVICE;
            props.location.id = ordinal as i32;
            props.maxSize = limit as usize;
            // SAFETY: props is a valid, initialised CUmemPoolProps.
            let p = unsafe { result::mem_pool::create(&props) }
                .map_err(|e| unavailable(&format!("memory pool of {limit} bytes"), e))?;
            (p, true)
        }
    };
    // SAFETY: a live pool; the attribute takes a u64.
    unsafe {
        let mut threshold: u64 = u64::MAX;
        let _ = result::mem_pool::set_attribute(
            pool,
            sys::CUmemPool_attribute::CU_MEMPOOL_ATTR_RELEASE_THRESHOLD,
            &mut threshold as *mut u64 as *mut _,
        );
    }
    Ok((pool, own))
}

impl Drop for Device {
    fn drop(&mut self) {
        if self.own_pool {
            let _ = self.ctx.bind_to_thread();
            let _ = self.ctx.synchronize();
            // SAFETY: every buffer of this pool holds an Arc<Device>, so none
            // is left; the pool is destroyed once.
            unsafe {
                let _ = result::mem_pool::destroy(self.pool.0);
            }
        }
    }
}
