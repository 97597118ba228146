//! The race detector's bookkeeping (`CudaConfig::debug_races`, `kiln prove
//! --debug-races`): pure Rust over stream and event ids, fed by the stream
//! layer with every operation, event record, event wait, host
//! synchronisation, buffer read, in-place write and free it issues.
//!
//! Each stream keeps a vector clock: the position of every stream's work it
//! is ordered after (its own operations in order; another stream's up to
//! an event it waited on, and transitively what that stream was ordered
//! after; anything the host had seen complete when the work was queued).
//! Each buffer records the streams that read it (latest read per stream)
//! and its last write. A free, or an in-place write (a reuse of the
//! buffer), that is not ordered after every one of them on other streams
//! is a race: the report names the buffer (the stage and table that made
//! it), the access it is not ordered after, and where the free or write
//! ran. That is the cross-stream use seed 000 describes: a buffer recycled
//! by the pool while another stream still read it.

use backend_api::Stage;
use std::collections::HashMap;
use std::fmt;

/// A stream of the device's pool, by index.
pub type StreamId = usize;

/// Who touched a buffer: a stage of a table.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Label {
    pub stage: Stage,
    pub table: String,
}

impl fmt::Display for Label {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} of table {}", self.stage, self.table)
    }
}

/// One access: where in which stream's order, and by whom.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Access {
    pub stream: StreamId,
    pub pos: u64,
    pub by: Label,
}

/// What a race did to the buffer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RaceKind {
    /// Freed (the pool may hand the memory to anyone).
    Free,
    /// Written in place (the buffer reused).
    Reuse,
}

/// A free or reuse not ordered after an earlier access on another stream.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Race {
    pub buffer: u64,
    /// The stage and table that made the buffer.
    pub made_by: Label,
    pub kind: RaceKind,
    /// Where the free or the write was queued, and by whom (a free: the
    /// buffer's maker).
    pub at: Access,
    /// The access it is not ordered after.
    pub unordered: Access,
}

impl fmt::Display for Race {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "race on buffer #{} (made by {}): ", self.buffer, self.made_by)?;
        match self.kind {
            RaceKind::Free => write!(f, "freed on stream {}", self.at.stream)?,
            RaceKind::Reuse => write!(f, "overwritten by {} on stream {}", self.at.by, self.at.stream)?,
        }
        write!(f, " without waiting for its use by {} on stream {}", self.unordered.by, self.unordered.stream)
    }
}

/// An event as recorded: its stream's clock at that point.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EventClock(Vec<u64>);

#[derive(Debug)]
struct Buf {
    made_by: Label,
    /// Latest read per stream.
    reads: HashMap<StreamId, Access>,
    last_write: Option<Access>,
}

/// The happens-before bookkeeping of one device.
#[derive(Debug)]
pub struct Detector {
    /// clocks[s][t]: the last position of stream t that stream s's next
    /// work is ordered after; clocks[s][s] counts s's own operations.
    clocks: Vec<Vec<u64>>,
    /// Positions the host has seen complete.
    host: Vec<u64>,
    bufs: HashMap<u64, Buf>,
    races: Vec<Race>,
}

fn merge(into: &mut [u64], from: &[u64]) {
    for (a, b) in into.iter_mut().zip(from) {
        *a = (*a).max(*b);
    }
}

impl Detector {
    pub fn new(streams: usize) -> Detector {
        let n = streams.max(1);
        Detector { clocks: vec![vec![0; n]; n], host: vec![0; n], bufs: HashMap::new(), races: vec![] }
    }

    fn stream(&self, s: StreamId) -> StreamId {
        s.min(self.clocks.len() - 1)
    }

    /// Starts an operation on `s`; its accesses happen at the position
    /// returned. Work queued now is ordered after all the host has seen
    /// complete.
    pub fn op(&mut self, s: StreamId) -> u64 {
        let s = self.stream(s);
        let host = self.host.clone();
        let c = &mut self.clocks[s];
        merge(c, &host);
        c[s] += 1;
        c[s]
    }

    /// An event recorded on `s` after the work queued so far.
    pub fn record(&mut self, s: StreamId) -> EventClock {
        EventClock(self.clocks[self.stream(s)].clone())
    }

    /// `s` waits for `event`: its later work is ordered after the event's.
    pub fn wait(&mut self, s: StreamId, event: &EventClock) {
        let s = self.stream(s);
        merge(&mut self.clocks[s], &event.0);
    }

    /// The host waited for everything queued on `s` so far.
    pub fn host_sync(&mut self, s: StreamId) {
        let c = self.clocks[self.stream(s)].clone();
        merge(&mut self.host, &c);
    }

    /// The host waited for `event`.
    pub fn host_wait(&mut self, event: &EventClock) {
        merge(&mut self.host, &event.0);
    }

    /// The host waited for every stream (a device synchronisation).
    pub fn host_sync_all(&mut self) {
        for s in 0..self.clocks.len() {
            self.host_sync(s);
        }
    }

    /// A new buffer `id`, made by `by`.
    pub fn alloc(&mut self, id: u64, by: Label) {
        self.bufs.insert(id, Buf { made_by: by, reads: HashMap::new(), last_write: None });
    }

    fn access(&self, s: StreamId, by: Label) -> Access {
        let s = self.stream(s);
        Access { stream: s, pos: self.clocks[s][s], by }
    }

    fn ordered(&self, a: &Access, s: StreamId) -> bool {
        a.stream == s || self.clocks[s][a.stream] >= a.pos || self.host[a.stream] >= a.pos
    }

    fn check(&mut self, id: u64, kind: RaceKind, at: Access) {
        let Some(b) = self.bufs.get(&id) else { return };
        let mut earlier: Vec<&Access> = b.reads.values().chain(&b.last_write).collect();
        earlier.sort_by_key(|a| (a.stream, a.pos));
        let unordered = earlier.into_iter().find(|a| !self.ordered(a, at.stream)).cloned();
        if let Some(unordered) = unordered {
            let made_by = b.made_by.clone();
            self.races.push(Race { buffer: id, made_by, kind, at, unordered });
        }
    }

    /// `by`, running on `s`, reads buffer `id`.
    pub fn read(&mut self, id: u64, s: StreamId, by: Label) {
        let a = self.access(s, by);
        if let Some(b) = self.bufs.get_mut(&id) {
            b.reads.insert(a.stream, a);
        }
    }

    /// `by`, running on `s`, writes buffer `id` (its producer, or an
    /// in-place update): ordered after every earlier read and write, else
    /// a reuse race.
    pub fn write(&mut self, id: u64, s: StreamId, by: Label) {
        let a = self.access(s, by);
        self.check(id, RaceKind::Reuse, a.clone());
        if let Some(b) = self.bufs.get_mut(&id) {
            b.reads.clear();
            b.last_write = Some(a);
        }
    }

    /// Buffer `id` is freed on `s`: ordered after every access, else a
    /// free race. The buffer is forgotten.
    pub fn free(&mut self, id: u64, s: StreamId) {
        let Some(made_by) = self.bufs.get(&id).map(|b| b.made_by.clone()) else { return };
        let s = self.stream(s);
        let at = Access { stream: s, pos: self.clocks[s][s] + 1, by: made_by };
        self.check(id, RaceKind::Free, at);
        self.bufs.remove(&id);
    }

    /// The races found so far.
    pub fn races(&self) -> &[Race] {
        &self.races
    }

    /// Buffers alive in the bookkeeping.
    pub fn live(&self) -> usize {
        self.bufs.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn by(stage: Stage, table: &str) -> Label {
        Label { stage, table: table.into() }
    }

    /// Buffer 1, made by the LDE of table `cpu` on stream 0, read by DEEP
    /// on stream 1.
    fn made_and_read_elsewhere() -> Detector {
        let mut d = Detector::new(3);
        d.op(0);
        d.alloc(1, by(Stage::CosetLde, "cpu"));
        d.write(1, 0, by(Stage::CosetLde, "cpu"));
        let made = d.record(0);
        d.wait(1, &made);
        d.op(1);
        d.read(1, 1, by(Stage::Deep, "cpu+memory"));
        d
    }

    #[test]
    fn a_free_not_ordered_after_a_read_on_another_stream_is_named() {
        // Seed 000: freed on its own stream while stream 1 may still read it.
        let mut d = made_and_read_elsewhere();
        d.free(1, 0);
        let r = &d.races()[0];
        assert_eq!((r.buffer, r.kind, r.at.stream, r.unordered.stream), (1, RaceKind::Free, 0, 1));
        assert_eq!(r.made_by, by(Stage::CosetLde, "cpu"));
        assert_eq!(r.unordered.by, by(Stage::Deep, "cpu+memory"));
        let text = r.to_string();
        assert!(text.contains("buffer #1") && text.contains("coset-lde of table cpu"), "{text}");
        assert!(text.contains("deep of table cpu+memory on stream 1"), "{text}");
        assert_eq!(d.live(), 0);
    }

    #[test]
    fn waiting_on_the_readers_event_orders_the_free() {
        let mut d = made_and_read_elsewhere();
        let read = d.record(1);
        d.wait(0, &read);
        d.free(1, 0);
        assert!(d.races().is_empty(), "{:?}", d.races());
    }

    #[test]
    fn a_host_synchronisation_orders_the_free() {
        let mut d = made_and_read_elsewhere();
        d.host_sync(1);
        d.free(1, 0);
        assert!(d.races().is_empty());
    }

    #[test]
    fn ordering_is_transitive_through_a_third_stream() {
        let mut d = made_and_read_elsewhere();
        let e1 = d.record(1);
        d.wait(2, &e1);
        d.op(2);
        let e2 = d.record(2);
        d.wait(0, &e2);
        d.free(1, 0);
        assert!(d.races().is_empty());
    }

    #[test]
    fn an_event_recorded_before_the_read_does_not_order_it() {
        let mut d = Detector::new(2);
        d.op(0);
        d.alloc(7, by(Stage::Upload, "t"));
        d.write(7, 0, by(Stage::Upload, "t"));
        let made = d.record(0);
        d.wait(1, &made);
        let too_early = d.record(1);
        d.op(1);
        d.read(7, 1, by(Stage::Compose, "t"));
        d.wait(0, &too_early);
        d.free(7, 0);
        assert_eq!(d.races().len(), 1);
    }

    #[test]
    fn an_unordered_in_place_write_is_a_reuse_race() {
        let mut d = made_and_read_elsewhere();
        d.op(0);
        d.write(1, 0, by(Stage::LogUp, "cpu"));
        assert_eq!(d.races()[0].kind, RaceKind::Reuse);
        assert_eq!(d.races()[0].at.by, by(Stage::LogUp, "cpu"));
        // After the write, only accesses since it count: a wait for the
        // write orders a free on another stream.
        let w = d.record(0);
        d.wait(2, &w);
        d.free(1, 2);
        assert_eq!(d.races().len(), 1);
    }

    #[test]
    fn reads_on_the_freeing_stream_are_ordered_by_the_stream() {
        let mut d = Detector::new(2);
        d.op(1);
        d.alloc(3, by(Stage::Ntt, "t"));
        d.write(3, 1, by(Stage::Ntt, "t"));
        d.op(1);
        d.read(3, 1, by(Stage::Ntt, "t"));
        d.free(3, 1);
        assert!(d.races().is_empty());
    }
}
