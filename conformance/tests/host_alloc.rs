//! Host memory exhaustion under `Resilient`: returned at once, typed,
//! neither retried nor recomputed (a recompute would need more host memory).

use backend_api::{BackendError, Ctx, Op, Out, Result, Stage, Wrapper, F};
use backend_cpu::{CpuBackend, CpuMatrix, CpuTree, OnDecline, RecoveryPolicy, Resilient};
use stark::examples::TwoTables;
use stark::ProveError;

/// A device whose host staging runs out of memory at the LDE; it records
/// the tables whose LDE it was asked for.
#[derive(Default)]
struct OutOfHostMemory {
    cpu: CpuBackend,
    ldes: std::sync::Mutex<Vec<String>>,
}

impl Wrapper for OutOfHostMemory {
    type Inner = CpuBackend;
    fn inner(&self) -> &CpuBackend {
        &self.cpu
    }
    fn call(&self, ctx: &Ctx, op: Op<'_, &CpuMatrix, &CpuTree>) -> Result<Out<CpuMatrix, CpuTree>> {
        if op.stage() == Stage::CosetLde {
            self.ldes.lock().unwrap().push(ctx.table.to_string());
            return Err(BackendError::host_alloc::<F>(Stage::CosetLde, ctx.table, 1 << 30));
        }
        op.dispatch(&self.cpu, ctx)
    }
}

#[test]
fn resilient_returns_host_exhaustion_at_once() {
    let options = stark::ProofOptions { log_blowup: 2, num_queries: 8, grinding_bits: 0, ..Default::default() };
    for on_decline in [OnDecline::Recompute, OnDecline::Strict] {
        let b = Resilient::new(OutOfHostMemory::default(), RecoveryPolicy { retry: true, on_decline });
        let err = stark::prove(&b, &TwoTables::default(), TwoTables::traces(5, 3), &[], &options).unwrap_err();
        match err {
            ProveError::Backend(BackendError::HostAlloc { stage, table, requested_bytes }) => {
                // The first table in table order (a round's tables run at once).
                assert_eq!((stage, table.as_str(), requested_bytes), (Stage::CosetLde, "sender", 8 << 30));
            }
            other => panic!("{other}"),
        }
        assert!(b.report().is_clean(), "counted as a decline: {}", b.report());
        let mut asked = b.device().ldes.lock().unwrap().clone();
        asked.sort();
        let before = asked.len();
        asked.dedup();
        assert_eq!(asked.len(), before, "an LDE was retried: {asked:?}");
    }
}
