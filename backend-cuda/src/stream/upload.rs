//! Host to device: small copies from pageable memory, large ones on the copy stream, overlapped with the work on each run.

use super::staging::{stream_copy, Staging, SMALL_COPY, STAGING_ELEMS};
use super::{DevBuf, Scope};
use crate::host;
use backend_api::fault::FaultSite;
use backend_api::host::parallel_copy;
use backend_api::BackendError;
use cudarc::driver::{result, CudaEvent};
use std::sync::Arc;

impl Scope<'_> {
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
}
