//! GPU time per stage and kernel, from timestamp queries, for whoever
//! tunes this backend (`KILN_WGPU_PROFILE=1`, on adapters with
//! `TIMESTAMP_QUERY`). Every dispatch is already a compute pass of its
//! own; profiling gives each pass a start and an end timestamp, and a job
//! reads its times back when it is submitted, so a profiled run waits on
//! the device after every job: its wall time is not the backend's, its
//! per-kernel device times are.

use backend_api::Stage;
use std::collections::BTreeMap;
use std::sync::Mutex;

/// Timestamped passes a job can hold (two queries each, within wgpu's
/// 4096 a query set); later passes of a longer job go untimed.
pub(crate) const MAX_PASSES: u32 = 2048;

/// Whether this process profiles (`KILN_WGPU_PROFILE=1`).
pub(crate) fn wanted() -> bool {
    std::env::var("KILN_WGPU_PROFILE").is_ok_and(|v| v.trim() == "1")
}

#[derive(Default, Clone, Copy)]
struct Row {
    passes: u64,
    ns: f64,
}

pub(crate) struct Profiler {
    /// Nanoseconds a timestamp tick.
    period_ns: f64,
    totals: Mutex<BTreeMap<(String, &'static str), Row>>,
}

/// One job's timestamp queries and the kernel of each pass.
pub(crate) struct Stamps {
    pub set: wgpu::QuerySet,
    pub labels: Vec<&'static str>,
}

impl Profiler {
    /// A profiler when the device was made with `TIMESTAMP_QUERY`, which
    /// it asks for only when [`wanted`].
    pub(crate) fn new(features: wgpu::Features, queue: &wgpu::Queue) -> Option<Profiler> {
        features
            .contains(wgpu::Features::TIMESTAMP_QUERY)
            .then(|| Profiler { period_ns: queue.get_timestamp_period() as f64, totals: Mutex::default() })
    }

    /// Empty stamps for a new job.
    pub(crate) fn stamps(&self, device: &wgpu::Device) -> Stamps {
        let set = device.create_query_set(&wgpu::QuerySetDescriptor {
            label: Some("profile"),
            ty: wgpu::QueryType::Timestamp,
            count: 2 * MAX_PASSES,
        });
        Stamps { set, labels: Vec::new() }
    }

    /// Adds a job's pass times (`ticks`: start and end per pass).
    pub(crate) fn add(&self, stage: Stage, labels: &[&'static str], ticks: &[u64]) {
        let mut t = self.totals.lock().unwrap_or_else(|p| p.into_inner());
        for (label, pair) in labels.iter().zip(ticks.chunks_exact(2)) {
            let row = t.entry((stage.to_string(), label)).or_default();
            row.passes += 1;
            row.ns += pair[1].saturating_sub(pair[0]) as f64 * self.period_ns;
        }
    }

    /// The totals so far as a table (largest first), and a fresh start.
    pub(crate) fn take(&self) -> String {
        let rows = std::mem::take(&mut *self.totals.lock().unwrap_or_else(|p| p.into_inner()));
        let all: f64 = rows.values().map(|r| r.ns).sum();
        let mut v: Vec<_> = rows.into_iter().collect();
        v.sort_by(|a, b| b.1.ns.total_cmp(&a.1.ns));
        let mut s =
            format!("{:<16} {:<14} {:>8} {:>11} {:>10}\n", "stage", "kernel", "passes", "device ms", "us a pass");
        for ((stage, label), r) in v {
            let ms = r.ns / 1e6;
            s +=
                &format!("{stage:<16} {label:<14} {:>8} {ms:>11.3} {:>10.2}\n", r.passes, r.ns / 1e3 / r.passes as f64);
        }
        s += &format!("{:<16} {:<14} {:>8} {:>11.3}\n", "all", "", "", all / 1e6);
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn passes_add_up_per_stage_and_kernel_largest_first() {
        let p = Profiler { period_ns: 2.0, totals: Mutex::default() };
        p.add(Stage::Ntt, &["ntt", "ntt"], &[10, 510, 1000, 1500]);
        p.add(Stage::MerkleCommit, &["leaves"], &[0, 100, 7, 9]);
        let t = p.take();
        let rows: Vec<&str> = t.lines().collect();
        // Two ntt passes of 500 ticks at 2 ns: 2 us; one leaves pass: 0.2 us
        // (a pass without its label is not counted).
        assert!(rows[1].starts_with("ntt") && rows[1].contains(" 2 ") && rows[1].contains("0.002"), "{t}");
        assert!(rows[2].contains("leaves") && rows[2].contains(" 1 ") && rows[2].contains("0.000"), "{t}");
        assert!(rows[3].starts_with("all") && rows[3].contains("0.002"), "{t}");
        assert_eq!(p.take().lines().count(), 2, "take starts afresh");
    }
}
