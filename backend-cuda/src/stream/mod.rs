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
//!
//! This module holds the shared types and the core of [`Scope`]: ordering
//! a call after the writers of its buffers, and launches. Its submodules
//! own allocation, uploads, downloads, root copies, staging and events.

mod alloc;
mod download;
mod events;
mod roots;
mod staging;
mod upload;

pub(crate) use roots::{PendingRoot, RootSlots};
pub(crate) use staging::StagingPool;

use crate::device::Device;
use crate::race::{Detector, EventClock, Label, Race, StreamId};
use crate::timeline::{self, Timeline};
use backend_api::fault::FaultSite;
use backend_api::{BackendError, Ctx, Lane, Stage};
use cudarc::driver::sys::{self, CUdeviceptr};
use cudarc::driver::{CudaEvent, CudaFunction, CudaStream, DriverError, LaunchConfig, PushKernelArg};
use std::sync::{Arc, Mutex, MutexGuard};

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
}

/// Columns [range) in runs of at most 65,535, the grid's y limit a launch
/// (one column a grid row): (first column, columns) each.
pub(crate) fn column_runs(range: std::ops::Range<usize>) -> impl Iterator<Item = (usize, u32)> {
    let end = range.end;
    range.step_by(65535).map(move |c0| (c0, (end - c0).min(65535) as u32))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn column_runs_cover_the_range_in_grid_sized_runs() {
        assert_eq!(column_runs(0..3).collect::<Vec<_>>(), [(0, 3)]);
        assert_eq!(column_runs(5..70_000).collect::<Vec<_>>(), [(5, 65535), (65540, 4460)]);
        assert_eq!(column_runs(4..4).count(), 0);
    }

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
}
