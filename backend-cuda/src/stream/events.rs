//! Host waits, and the event an operation records behind its work on the buffers it used.

use super::{Event, Scope};
use crate::device::Device;
use crate::race::EventClock;
use backend_api::{BackendError, Ctx, Stage};
use std::sync::Arc;

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

impl Scope<'_> {
    /// Waits on the host for everything queued on this stream.
    pub(crate) fn sync(&mut self) -> Result<(), BackendError> {
        let before = self.dev.streams.detector().map(|mut d| d.record(self.stream));
        self.stream().synchronize().map_err(|e| self.err(e))?;
        if let (Some(mut d), Some(c)) = (self.dev.streams.detector(), before) {
            d.host_wait(&c);
        }
        Ok(())
    }

    /// Records the event behind the work queued so far and registers it on
    /// every buffer used or made: later uses on other streams wait for it,
    /// and frees wait for it before the memory goes back to the pool.
    pub(super) fn finish_event(&mut self) -> Result<Arc<Event>, BackendError> {
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
