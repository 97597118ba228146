//! The device timeline (`CudaConfig::timeline`): two timing events around
//! every operation's work on its stream, and the host time the operation
//! took to queue it. An operation's span runs from when its stream reaches
//! it to when the work it queued there is done (its waits for copies on
//! the copy stream included). [`crate::CudaBackend::timeline`] sums the
//! spans by stage and says how much of the time from the first span's
//! start to the last one's end some span covers: in the rest no operation
//! was pending on the device, and the time went to the host (queueing
//! launches, staging transfers, waiting for a root or a value the
//! transcript needs).

use backend_api::Stage;
use cudarc::driver::sys::CUevent_flags;
use cudarc::driver::{CudaContext, CudaEvent, CudaStream};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// One operation's events, and when its host work began.
pub(crate) struct Open {
    start: CudaEvent,
    began: Instant,
}

struct Span {
    stage: Stage,
    start: CudaEvent,
    end: CudaEvent,
    host: Duration,
}

#[derive(Default)]
pub(crate) struct Timeline {
    spans: Mutex<Vec<Span>>,
}

/// One stage's share of a timeline.
#[derive(Clone, Debug, PartialEq)]
pub struct StageTime {
    pub stage: Stage,
    /// Operations (each one scope of work on one stream).
    pub ops: usize,
    /// Host time the operations took to queue their work and return.
    pub host_ms: f64,
    /// Device time between each operation's two events, summed.
    pub device_ms: f64,
}

/// The operations recorded since the last report.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct TimelineReport {
    /// By stage, in the order each stage first appeared.
    pub stages: Vec<StageTime>,
    /// From the first operation's start event to the last one's end event.
    pub window_ms: f64,
    /// The part of the window some operation's events cover (on any stream).
    pub busy_ms: f64,
}

impl Timeline {
    /// Starts timing an operation on `stream`; `None` when the event cannot
    /// be made (the timeline is a diagnostic: the operation goes on).
    pub(crate) fn begin(ctx: &Arc<CudaContext>, stream: &CudaStream) -> Option<Open> {
        let start = ctx.new_event(Some(CUevent_flags::CU_EVENT_DEFAULT)).ok()?;
        start.record(stream).ok()?;
        Some(Open { start, began: Instant::now() })
    }

    /// Ends the operation `open` began, behind the work it queued.
    pub(crate) fn end(&self, ctx: &Arc<CudaContext>, stream: &CudaStream, stage: Stage, open: Open) {
        let host = open.began.elapsed();
        let Ok(end) = ctx.new_event(Some(CUevent_flags::CU_EVENT_DEFAULT)) else { return };
        if end.record(stream).is_ok() {
            let span = Span { stage, start: open.start, end, host };
            self.spans.lock().unwrap_or_else(|p| p.into_inner()).push(span);
        }
    }

    /// The report of every operation since the last one (their work must
    /// be complete), clearing them.
    pub(crate) fn report(&self) -> Result<TimelineReport, cudarc::driver::DriverError> {
        let spans = std::mem::take(&mut *self.spans.lock().unwrap_or_else(|p| p.into_inner()));
        let Some(first) = spans.first() else { return Ok(TimelineReport::default()) };
        let mut at = Vec::with_capacity(spans.len());
        for s in &spans {
            let from = f64::from(first.start.elapsed_ms(&s.start)?);
            at.push((from, from + f64::from(s.start.elapsed_ms(&s.end)?)));
        }
        let mut report = TimelineReport::default();
        for (s, (from, to)) in spans.iter().zip(&at) {
            let i = match report.stages.iter().position(|t| t.stage == s.stage) {
                Some(i) => i,
                None => {
                    report.stages.push(StageTime { stage: s.stage, ops: 0, host_ms: 0.0, device_ms: 0.0 });
                    report.stages.len() - 1
                }
            };
            let t = &mut report.stages[i];
            t.ops += 1;
            t.host_ms += s.host.as_secs_f64() * 1e3;
            t.device_ms += to - from;
        }
        (report.window_ms, report.busy_ms) = window_and_busy(&mut at);
        Ok(report)
    }
}

/// The extent of `intervals` and the length of their union.
fn window_and_busy(intervals: &mut [(f64, f64)]) -> (f64, f64) {
    intervals.sort_by(|a, b| a.0.total_cmp(&b.0));
    let (Some(first), Some(last)) = (intervals.first(), intervals.iter().map(|i| i.1).reduce(f64::max)) else {
        return (0.0, 0.0);
    };
    let (mut busy, mut open) = (0.0, *first);
    for &(from, to) in &intervals[1..] {
        if from > open.1 {
            busy += open.1 - open.0;
            open = (from, to);
        } else {
            open.1 = open.1.max(to);
        }
    }
    busy += open.1 - open.0;
    (last - first.0, busy)
}

#[cfg(test)]
mod tests {
    use super::window_and_busy;

    #[test]
    fn busy_time_is_the_union_of_the_intervals() {
        let mut v = vec![(5.0, 7.0), (0.0, 2.0), (1.0, 3.0), (6.0, 6.5), (10.0, 11.0)];
        assert_eq!(window_and_busy(&mut v), (11.0, 3.0 + 2.0 + 1.0));
        assert_eq!(window_and_busy(&mut []), (0.0, 0.0));
        assert_eq!(window_and_busy(&mut [(2.0, 4.0)]), (2.0, 2.0));
    }
}
