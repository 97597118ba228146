//! What a device backend reports after `kiln prove`: its memory pool's
//! high-water mark and, under `--timings` on CUDA, the device's own time
//! by stage (CUDA events around every operation), which says whether a
//! stage's wall went to kernels or to the host.

use serde_json::{json, Value};

/// A device's account of one prove.
#[derive(Default)]
pub struct DeviceReadout {
    /// The device pool's high-water mark over the prove.
    pub peak: Option<u64>,
    pub timeline: Option<DeviceTimeline>,
}

/// The device's time over one prove, by stage in the order each first ran.
pub struct DeviceTimeline {
    /// From the first operation's start on the device to the last one's end.
    pub window_ms: f64,
    /// The part of the window in which some operation was on the device.
    pub busy_ms: f64,
    pub stages: Vec<StageTime>,
}

pub struct StageTime {
    pub stage: String,
    pub ops: usize,
    /// Host time the operations took to queue their work.
    pub host_ms: f64,
    /// Device time of the operations, summed (streams overlap).
    pub device_ms: f64,
}

#[cfg(feature = "cuda")]
impl From<backend_cuda::TimelineReport> for DeviceTimeline {
    fn from(t: backend_cuda::TimelineReport) -> DeviceTimeline {
        let stages = t
            .stages
            .iter()
            .map(|s| StageTime { stage: s.stage.to_string(), ops: s.ops, host_ms: s.host_ms, device_ms: s.device_ms })
            .collect();
        DeviceTimeline { window_ms: t.window_ms, busy_ms: t.busy_ms, stages }
    }
}

impl DeviceTimeline {
    /// `--timings`'s lines: the window and the device's busy share, then
    /// each stage.
    pub fn lines(&self) -> Vec<String> {
        let share = if self.window_ms > 0.0 { 100.0 * self.busy_ms / self.window_ms } else { 0.0 };
        let mut lines = vec![format!(
            "device    timeline: operations span {:.2} ms on the device, busy {:.2} ms of it ({share:.0}%); the rest is host work between them",
            self.window_ms, self.busy_ms
        )];
        lines.extend(self.stages.iter().map(|s| {
            format!("  {:<18} {:>5} ops, host {:>9.3} ms, device {:>9.3} ms", s.stage, s.ops, s.host_ms, s.device_ms)
        }));
        lines
    }

    pub fn json(&self) -> Value {
        let stages: Vec<Value> = self
            .stages
            .iter()
            .map(|s| json!({"stage": s.stage, "ops": s.ops, "host_ms": s.host_ms, "device_ms": s.device_ms}))
            .collect();
        json!({"window_ms": self.window_ms, "busy_ms": self.busy_ms, "stages": stages})
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_timeline_prints_its_busy_share_and_every_stage() {
        let t = DeviceTimeline {
            window_ms: 20.0,
            busy_ms: 15.0,
            stages: vec![
                StageTime { stage: "coset LDE".into(), ops: 4, host_ms: 0.25, device_ms: 12.5 },
                StageTime { stage: "merkle commit".into(), ops: 2, host_ms: 0.125, device_ms: 2.5 },
            ],
        };
        let lines = t.lines();
        assert_eq!(lines.len(), 3);
        assert!(lines[0].contains("span 20.00 ms") && lines[0].contains("busy 15.00 ms of it (75%)"), "{}", lines[0]);
        assert!(lines[2].contains("merkle commit") && lines[2].contains("2.500 ms"), "{}", lines[2]);
        let j = t.json();
        assert_eq!(j["stages"][0]["ops"], 4);
        assert_eq!(j["busy_ms"], 15.0);
        let empty = DeviceTimeline { window_ms: 0.0, busy_ms: 0.0, stages: vec![] };
        assert!(empty.lines()[0].contains("(0%)"));
    }
}
