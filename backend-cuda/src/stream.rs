//! Streams and device memory: the stream pool and the lanes mapped onto
//! it, device buffers from the stream-ordered pool with the events that
//! order them across streams, the per-operation [`Scope`] every stage
//! enqueues its work through, pinned staging for large transfers, and the
//! pinned slots roots are copied into.
//!
//! The rules (DESIGN.md, "GPU correctness rules"):
//! - Each lane (a table's stage chain) runs on one stream of a small pool;
//!   an operation runs on its lane's stream.
//! - A buffer used on a stream other than the one that last wrote it is
//!   used only after that stream waits for the event recorded behind the
//!   write.
//! - Each use records, per stream, the event behind the operation that
//!   used it; a free (on the stream the buffer was made on) first waits
//!   for every such event of another stream, so the pool never hands the
//!   memory on while a reader may still run.
//! - Every copy is issued on its operation's stream, never on the legacy
//!   stream: the streams are non-blocking, so nothing orders them with it.
//!
//! With `CudaConfig::debug_races` every call that orders or uses a buffer
//! is mirrored in a [`Detector`] (while the call is issued, so its view is
//! exact), and a free or reuse it finds unordered makes the next operation
//! fail, naming the buffer, the stage and the table.

use crate::device::Device;
use crate::host;
use crate::race::{Detector, EventClock, Label, Race, StreamId};
use crate::timeline::{self, Timeline};
use backend_api::fault::FaultSite;
use backend_api::host::parallel_copy;
use backend_api::{BackendError, Ctx, Lane, Stage};
use cudarc::driver::sys::{self, CUdeviceptr};
use cudarc::driver::{
    result, CudaEvent, CudaFunction, CudaStream, DriverError, LaunchConfig, PinnedHostSlice, PushKernelArg,
};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

/// 16 MiB per staging buffer: double-buffered, that keeps the copy
/// engine busy, and pinning a set costs a process's start-up a quarter of
/// what 64 MiB buffers did (pinning is paid per byte).
const STAGING_ELEMS: usize = 2 << 20;
/// Copies up to this many elements go straight from pageable memory.
const SMALL_COPY: usize = 1 << 16;
/// Roots in flight at once (then a commit reads its root at once).
const ROOT_SLOTS: usize = 4096;

/// The stream a lane runs on, out of `streams`: work outside any lane on
/// stream 0, lanes spread over the others (consecutive lanes, the tables
/// of one proof, on different streams).
pub(crate) fn stream_for(lane: Lane, streams: usize) -> StreamId {
    if lane == Lane::NONE || streams <= 1 {
        0
    } else {
        1 + (lane.0 % (streams as u64 - 1)) as usize
    }
}

/// An event recorded on a stream, with its clock in the race detector.
pub(crate) struct Event {
    ev: CudaEvent,
    stream: StreamId,
    clock: Option<EventClock>,
}

/// The pool of streams of one device and the race detector. The last
/// stream is no lane's: overlapped uploads copy on it while their
/// operation's own stream computes on what already landed.
pub(crate) struct Streams {
    list: Vec<Arc<CudaStream>>,
    /// Held while an event is recorded on a stream and registered on the
    /// buffers it covers, so a stream's latest registered event is its
    /// latest recorded one.
    record: Vec<Mutex<()>>,
    races: Option<Mutex<Detector>>,
}

impl Streams {
    /// `list`: the lanes' streams, then the copy stream (at least two).
    pub(crate) fn new(list: Vec<Arc<CudaStream>>, debug_races: bool) -> Streams {
        assert!(list.len() >= 2, "the lanes' streams and the copy stream");
        let n = list.len();
        Streams {
            record: (0..n).map(|_| Mutex::new(())).collect(),
            races: debug_races.then(|| Mutex::new(Detector::new(n))),
            list,
        }
    }

    pub(crate) fn len(&self) -> usize {
        self.list.len()
    }

    /// How many streams lanes run on.
    fn lanes(&self) -> usize {
        self.list.len() - 1
    }

    /// The copy stream.
    fn copy(&self) -> StreamId {
        self.list.len() - 1
    }

    pub(crate) fn get(&self, s: StreamId) -> &Arc<CudaStream> {
        &self.list[s.min(self.list.len() - 1)]
    }

    /// The detector, locked for the duration of one CUDA call and its
    /// bookkeeping; `None` unless races are being checked.
    fn detector(&self) -> Option<MutexGuard<'_, Detector>> {
        self.races.as_ref().map(|m| m.lock().unwrap_or_else(|p| p.into_inner()))
    }

    /// The races found so far (none when not checking).
    pub(crate) fn races(&self) -> Vec<Race> {
        self.detector().map(|d| d.races().to_vec()).unwrap_or_default()
    }
}

/// How a buffer is ordered: the event behind its last write, the streams
/// that already waited for it, and per stream the event behind its latest
/// use there.
struct Order {
    ready: Option<Arc<Event>>,
    waited: u64,
    uses: Vec<Option<Arc<Event>>>,
}

/// A buffer of u64 in device memory, from the stream-ordered pool, made
/// and freed on its home stream. A buffer made on a lane of a proof holds
/// the proof's claim on the memory gate until it is freed.
pub(crate) struct DevBuf {
    pub(crate) ptr: CUdeviceptr,
    id: u64,
    bytes: u64,
    home: StreamId,
    order: Mutex<Order>,
    owner: Option<Arc<backend_api::gate::Claim>>,
    dev: Arc<Device>,
}

impl DevBuf {
    pub(crate) fn at(&self, offset_elems: usize) -> u64 {
        self.ptr + 8 * offset_elems as u64
    }

    pub(crate) fn device(&self) -> &Arc<Device> {
        &self.dev
    }

    fn order(&self) -> MutexGuard<'_, Order> {
        self.order.lock().unwrap_or_else(|p| p.into_inner())
    }
}

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

/// `d.copy_from_slice(s)` with non-temporal stores, for uploads into
/// pinned memory: the destination's lines are not read into the cache
/// first (a plain copy's stores read them: three bytes of memory traffic
/// per byte copied, not two), and only the copy engine reads them. On the
/// H200's host, 2^20 x 64 uploads went from 38-40 to 44-45 GB/s (median);
/// downloads, whose destination the caller reads next, keep the plain copy
/// (with streamed stores they were 5-10 % slower).
#[cfg(target_arch = "x86_64")]
fn stream_copy(d: &mut [u64], s: &[u64]) {
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
fn stream_copy(d: &mut [u64], s: &[u64]) {
    d.copy_from_slice(s);
}

/// Two pinned buffers: uploads fill one while the other is in flight.
pub(crate) struct Staging([PinnedHostSlice<u64>; 2]);

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

    fn take(&self, dev: &Device, stage: Stage, ctx: &Ctx) -> Result<Option<Staging>, BackendError> {
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

    fn put(&self, s: Staging) {
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

impl Device {
    /// Waits on the host for `event`.
    pub(crate) fn host_wait(&self, event: &Event) -> Result<(), BackendError> {
        let ctx = Ctx::table("-");
        self.bind(Stage::Download, &ctx)?;
        event.ev.synchronize().map_err(|e| self.err(Stage::Download, &ctx, e))?;
        if let (Some(mut d), Some(c)) = (self.streams.detector(), &event.clock) {
            d.host_wait(c);
        }
        Ok(())
    }

    /// Waits on the host for every stream.
    pub(crate) fn sync_all(&self, stage: Stage, ctx: &Ctx) -> Result<(), BackendError> {
        self.bind(stage, ctx)?;
        let before = self.streams.detector().map(|mut d| (0..self.streams.len()).map(|s| d.record(s)).collect());
        self.ctx.synchronize().map_err(|e| self.err(stage, ctx, e))?;
        if let (Some(mut d), Some(clocks)) = (self.streams.detector(), before) {
            let clocks: Vec<EventClock> = clocks;
            clocks.iter().for_each(|c| d.host_wait(c));
        }
        Ok(())
    }
}

/// One operation's work on its lane's stream: every launch, copy and
/// buffer goes through it, so it can order the buffers it uses after
/// their writers and, when it ends, register the event behind its work on
/// them (see the module doc).
pub(crate) struct Scope<'a> {
    pub(crate) dev: &'a Arc<Device>,
    pub(crate) stage: Stage,
    pub(crate) ctx: &'a Ctx<'a>,
    stream: StreamId,
    used: Vec<Arc<DevBuf>>,
    made: Vec<Arc<DevBuf>>,
    done: Option<Arc<Event>>,
    /// The start of this operation on the device timeline, when kept.
    timing: Option<timeline::Open>,
}

impl<'a> Scope<'a> {
    /// Starts `stage` for `ctx` on its lane's stream. Fails when the device
    /// is broken or the race detector has found a race.
    pub(crate) fn new(dev: &'a Arc<Device>, stage: Stage, ctx: &'a Ctx<'a>) -> Result<Scope<'a>, BackendError> {
        dev.healthy(stage, ctx)?;
        dev.bind(stage, ctx)?;
        let stream = stream_for(ctx.lane, dev.streams.lanes());
        let timing = dev.timeline.as_ref().and_then(|_| Timeline::begin(&dev.ctx, dev.streams.get(stream)));
        Ok(Scope { dev, stage, ctx, stream, used: vec![], made: vec![], done: None, timing })
    }

    pub(crate) fn stream(&self) -> &Arc<CudaStream> {
        self.dev.streams.get(self.stream)
    }

    fn label(&self) -> Label {
        Label { stage: self.stage, table: self.ctx.table.to_string() }
    }

    fn err(&self, e: impl std::fmt::Display) -> BackendError {
        self.dev.err(self.stage, self.ctx, e)
    }

    /// Orders this stream after `b`'s last write and remembers the use; in
    /// the detector, a read at the call now being issued.
    fn use_buf(&mut self, b: &Arc<DevBuf>, det: &mut Option<MutexGuard<'_, Detector>>) -> Result<(), BackendError> {
        {
            let mut o = b.order();
            let bit = 1u64 << (self.stream % 64);
            if let Some(ready) = o.ready.clone() {
                if ready.stream != self.stream && o.waited & bit == 0 {
                    self.stream().wait(&ready.ev).map_err(|e| self.err(e))?;
                    if let (Some(d), Some(c)) = (det.as_mut(), &ready.clock) {
                        d.wait(self.stream, c);
                    }
                    o.waited |= bit;
                }
            }
        }
        if let Some(d) = det.as_mut() {
            d.read(b.id, self.stream, self.label());
        }
        if !self.used.iter().any(|u| u.id == b.id) {
            self.used.push(b.clone());
        }
        Ok(())
    }

    /// One CUDA call on this stream that uses `bufs`, after ordering them,
    /// with the detector locked around it in debug mode. The outer error
    /// is the ordering's, the inner the call's.
    fn call<T>(
        &mut self,
        bufs: &[&Arc<DevBuf>],
        f: impl FnOnce(&CudaStream) -> Result<T, DriverError>,
    ) -> Result<Result<T, DriverError>, BackendError> {
        // The current context is per thread, and a rayon wait inside this
        // operation (a parallel copy) may have run another device's work on
        // this thread: a raw call would then reach that device's context
        // with this one's stream (CUDA_ERROR_INVALID_VALUE on two GPUs).
        self.dev.bind(self.stage, self.ctx)?;
        let streams = &self.dev.streams;
        let mut det = streams.detector();
        if let Some(d) = det.as_mut() {
            d.op(self.stream);
        }
        for b in bufs {
            self.use_buf(b, &mut det)?;
        }
        Ok(f(streams.get(self.stream)))
    }

    /// [`Scope::call`] with the call's error typed for this stage.
    fn call_ok(
        &mut self,
        bufs: &[&Arc<DevBuf>],
        f: impl FnOnce(&CudaStream) -> Result<(), DriverError>,
    ) -> Result<(), BackendError> {
        self.call(bufs, f)?.map_err(|e| self.err(e))
    }

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

    /// Launches `f` with u64 arguments (pointers and scalars alike); `bufs`
    /// are the buffers it reads or writes.
    pub(crate) fn launch(
        &mut self,
        f: &CudaFunction,
        grid: (u32, u32, u32),
        block: u32,
        smem: u32,
        args: &[u64],
        bufs: &[&Arc<DevBuf>],
    ) -> Result<(), BackendError> {
        let (stage, ctx, dev) = (self.stage, self.ctx, self.dev);
        dev.check(FaultSite::Launch(stage), stage, ctx, 0)?;
        let cfg = LaunchConfig { grid_dim: grid, block_dim: (block, 1, 1), shared_mem_bytes: smem };
        let launched = self.call(bufs, |s| {
            let mut b = s.launch_builder(f);
            for a in args {
                b.arg(a);
            }
            // SAFETY: every kernel takes exactly these u64 parameters (see
            // kernels-cuda); its pointers lie in `bufs`, ordered above.
            unsafe { b.launch(cfg) }.map(|_| ())
        })?;
        launched.map_err(|e| {
            if e.0 == sys::cudaError_enum::CUDA_ERROR_OUT_OF_MEMORY
                || e.0 == sys::cudaError_enum::CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES
            {
                dev.decline(stage, ctx, smem as u64, format!("launch refused: {e}"))
            } else {
                dev.err(stage, ctx, format!("launch failed: {e}"))
            }
        })
    }

    /// Waits on the host for everything queued on this stream.
    pub(crate) fn sync(&mut self) -> Result<(), BackendError> {
        let before = self.dev.streams.detector().map(|mut d| d.record(self.stream));
        self.stream().synchronize().map_err(|e| self.err(e))?;
        if let (Some(mut d), Some(c)) = (self.dev.streams.detector(), before) {
            d.host_wait(&c);
        }
        Ok(())
    }

    /// A new buffer holding `v`.
    pub(crate) fn upload(&mut self, v: &[u64]) -> Result<Arc<DevBuf>, BackendError> {
        let b = self.alloc(v.len())?;
        if !v.is_empty() {
            self.htod(v, &b)?;
        }
        Ok(b)
    }

    /// Copies host values into `dst` (made on this stream, from element
    /// 0), complete on return: [`Scope::htod_overlapped`] with one run and
    /// nothing to overlap.
    pub(crate) fn htod(&mut self, src: &[u64], dst: &Arc<DevBuf>) -> Result<(), BackendError> {
        self.htod_overlapped(src, dst, src.len(), |_, _, _| Ok(()))
    }

    /// A copy from pageable memory on this stream: the driver stages the
    /// source before the call returns (so `src` may be reused at once), and
    /// the stream's later work sees the data.
    fn htod_pageable(&mut self, src: &[u64], dst: &Arc<DevBuf>) -> Result<(), BackendError> {
        let to = dst.ptr;
        // SAFETY: dst holds src.len() elements.
        self.call_ok(&[dst], |s| unsafe { result::memcpy_htod_async(to, src, s.cu_stream()) })
    }

    /// Copies host values into `dst` (made on this stream, from element
    /// 0), calling `on_group` with each run of `group` elements (the last
    /// may be shorter): its first element and length, once this stream is
    /// ordered after its copy. Large copies run on the copy stream, so
    /// what `on_group` queues computes while later runs are still in
    /// transfer: straight from `src` when it is pinned (`host`), else
    /// through pinned staging, double-buffered. Small ones go straight from
    /// pageable memory on this stream (the driver stages them before the
    /// call returns), and so does any when every staging set is in use
    /// (never the synchronous copy: it runs on the legacy stream, which our
    /// streams do not wait for). The copies are complete on return; the
    /// work `on_group` queued is not.
    pub(crate) fn htod_overlapped(
        &mut self,
        src: &[u64],
        dst: &Arc<DevBuf>,
        group: usize,
        mut on_group: impl FnMut(&mut Self, usize, usize) -> Result<(), BackendError>,
    ) -> Result<(), BackendError> {
        let (stage, ctx) = (self.stage, self.ctx);
        self.dev.check(FaultSite::TransferToDevice, stage, ctx, 8 * src.len() as u64)?;
        let group = group.clamp(1, src.len().max(1));
        let mut in_flight: [Option<CudaEvent>; 2] = [None, None];
        if let Some(pinned) = (src.len() > SMALL_COPY).then(|| host::covering(src)).flatten() {
            let r = self.htod_runs(src, dst, group, &mut on_group, None, &mut in_flight);
            // The range stays registered until its copies have landed (all
            // the copy stream's, after a failure part-way: a copy may have
            // been queued without its event).
            let landed = match &r {
                Ok(()) => in_flight.iter().flatten().try_for_each(|ev| ev.synchronize().map_err(|e| self.err(e))),
                Err(_) => self.dev.streams.get(self.dev.streams.copy()).synchronize().map_err(|e| self.err(e)),
            };
            drop(pinned);
            return r.and(landed);
        }
        let staging = match src.len() > SMALL_COPY {
            true => self.dev.staging.take(self.dev, stage, ctx)?,
            false => None,
        };
        let Some(mut staging) = staging else {
            if !src.is_empty() {
                self.htod_pageable(src, dst)?;
            }
            let mut runs = (0..src.len()).step_by(group);
            return runs.try_for_each(|first| on_group(self, first, group.min(src.len() - first)));
        };
        let r = self.htod_runs(src, dst, group, &mut on_group, Some(&mut staging), &mut in_flight);
        // The staging set is free once its last copies have landed.
        let landed = in_flight.iter().flatten().try_for_each(|ev| ev.synchronize().map_err(|e| self.err(e)));
        self.dev.staging.put(staging);
        r.and(landed)
    }

    /// The runs' copies on the copy stream, from `staging` (a piece at a
    /// time into each buffer in turn, once the copy out of it before has
    /// landed) or, without it, from `src` itself, pinned.
    fn htod_runs(
        &mut self,
        src: &[u64],
        dst: &Arc<DevBuf>,
        group: usize,
        on_group: &mut impl FnMut(&mut Self, usize, usize) -> Result<(), BackendError>,
        mut staging: Option<&mut Staging>,
        in_flight: &mut [Option<CudaEvent>; 2],
    ) -> Result<(), BackendError> {
        let streams = &self.dev.streams;
        let copy_id = streams.copy();
        let copy = streams.get(copy_id).clone();
        // The copy stream writes `dst` only after this stream made it.
        self.dev.bind(self.stage, self.ctx)?;
        let made = self.stream().record_event(None).map_err(|e| self.err(e))?;
        copy.wait(&made).map_err(|e| self.err(e))?;
        if let Some(d) = streams.detector().as_mut() {
            let c = d.record(self.stream);
            d.wait(copy_id, &c);
        }
        let piece = if staging.is_some() { group.min(STAGING_ELEMS) } else { group };
        let mut slot = 0;
        for (g, run) in src.chunks(group).enumerate() {
            for (j, part) in run.chunks(piece).enumerate() {
                let host = match staging.as_deref_mut() {
                    Some(staging) => {
                        if let Some(ev) = in_flight[slot].take() {
                            ev.synchronize().map_err(|e| self.err(e))?;
                        }
                        let host = staging.0[slot].as_mut_slice().map_err(|e| self.err(e))?;
                        parallel_copy(&mut host[..part.len()], part, stream_copy);
                        &host[..part.len()]
                    }
                    None => part,
                };
                let to = dst.at(g * group + j * piece);
                // The parallel copy may have run another device's work on
                // this thread (see `call`).
                self.dev.bind(self.stage, self.ctx)?;
                let mut det = streams.detector();
                if let Some(d) = det.as_mut() {
                    d.op(copy_id);
                    // The detector tracks whole buffers. The copies write
                    // disjoint runs, and this stream reads each run only
                    // after it landed: one write at the first copy stands
                    // for them all (a later run's copy is no reuse of the
                    // runs already read).
                    if g == 0 && j == 0 {
                        d.write(dst.id, copy_id, self.label());
                    }
                }
                // SAFETY: dst holds the range; the source (a staging
                // buffer, or pinned memory the caller keeps) is not written
                // before the event recorded behind the copy.
                unsafe { result::memcpy_htod_async(to, host, copy.cu_stream()) }.map_err(|e| self.err(e))?;
                let ev = copy.record_event(None).map_err(|e| self.err(e))?;
                if j == run.len().div_ceil(piece) - 1 {
                    // The copy stream runs in order: the run's last copy
                    // covers the run.
                    self.stream().wait(&ev).map_err(|e| self.err(e))?;
                    if let Some(d) = det.as_mut() {
                        let c = d.record(copy_id);
                        d.wait(self.stream, &c);
                    }
                }
                drop(det);
                in_flight[slot] = Some(ev);
                slot ^= 1;
            }
            on_group(self, g * group, run.len())?;
        }
        Ok(())
    }

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

    /// Records the event behind the work queued so far and registers it on
    /// every buffer used or made: later uses on other streams wait for it,
    /// and frees wait for it before the memory goes back to the pool.
    fn finish_event(&mut self) -> Result<Arc<Event>, BackendError> {
        if let Some(e) = &self.done {
            if self.used.is_empty() {
                return Ok(e.clone());
            }
        }
        let streams = &self.dev.streams;
        let _order = streams.record[self.stream].lock().unwrap_or_else(|p| p.into_inner());
        let mut det = streams.detector();
        let ev = self.stream().record_event(None).map_err(|e| self.err(e))?;
        let clock = det.as_mut().map(|d| d.record(self.stream));
        let event = Arc::new(Event { ev, stream: self.stream, clock });
        for b in &self.made {
            let mut o = b.order();
            o.ready = Some(event.clone());
            o.waited = 1u64 << (self.stream % 64);
        }
        for b in self.used.iter().filter(|b| b.home != self.stream) {
            b.order().uses[self.stream] = Some(event.clone());
        }
        drop(det);
        self.made.clear();
        self.used.clear();
        self.done = Some(event.clone());
        Ok(event)
    }
}

impl Drop for Scope<'_> {
    fn drop(&mut self) {
        if !self.used.is_empty() || !self.made.is_empty() {
            // On failure the device is past ordering anything: the error
            // that got us here is returned, and the next op sees the device
            // poisoned.
            if let Err(e) = self.finish_event() {
                self.dev.poison(format!("recording the end of {} for table {}: {e}", self.stage, self.ctx.table));
            }
        }
        if let (Some(t), Some(open)) = (&self.dev.timeline, self.timing.take()) {
            t.end(&self.dev.ctx, self.stream(), self.stage, open);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lanes_spread_over_the_streams_and_no_lane_is_stream_0() {
        assert_eq!(stream_for(Lane::NONE, 8), 0);
        assert_eq!(stream_for(Lane(5), 1), 0);
        let tables: Vec<StreamId> = (100..104).map(|l| stream_for(Lane(l), 8)).collect();
        let mut distinct = tables.clone();
        distinct.dedup();
        assert_eq!(distinct.len(), 4, "consecutive lanes share a stream: {tables:?}");
        assert!((1..10_000).map(|l| stream_for(Lane(l), 8)).all(|s| (1..8).contains(&s)));
    }

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
