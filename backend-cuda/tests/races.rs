//! The race detector on the device (`CudaConfig::debug_races`): a proof
//! whose tables run on their own streams is race-free, and a free that
//! skips waiting for another stream's read (armed at the
//! `UnorderedFree` fault site, the mistake of seed 000) is caught, named
//! (buffer, stage, table) and fails the next operation. Without a CUDA
//! device the tests print that they were skipped and pass.

use backend_api::{BackendBase, ColMatrix, Ctx, HashKind, Lane, NttOps, F, GENERATOR};
use backend_cpu::{CpuBackend, RecoveryPolicy, Resilient};
use backend_cuda::{CudaBackend, CudaConfig};
use stark::examples::{Cubic, TwoTables};
use stark::{prove, ProofOptions, SingleTable};

fn checked() -> Option<CudaBackend> {
    let config = CudaConfig { debug_races: true, ..CudaConfig::default() };
    match CudaBackend::with_config(0, config) {
        Ok(d) => Some(d),
        Err(e) => {
            println!("SKIPPED: no CUDA device ({e})");
            None
        }
    }
}

fn matrix() -> ColMatrix {
    ColMatrix::new(2, 64, (1..=128u64).map(|i| F::new(i * 7 + 3)).collect())
}

/// Two lanes on two different streams.
const T1: Ctx<'static> = Ctx::on("t1", Lane(1));
const T2: Ctx<'static> = Ctx::on("t2", Lane(2));

#[test]
fn proofs_on_many_streams_are_race_free() {
    let Some(dev) = checked() else { return };
    let o = ProofOptions {
        log_blowup: 1,
        num_queries: 16,
        grinding_bits: 2,
        hash: HashKind::Keccak256,
        ..Default::default()
    };
    let r = Resilient::new(dev, RecoveryPolicy::default());
    let cubic = SingleTable(Cubic::new(16));
    let (t, p) = cubic.0.trace(10, 5);
    for _ in 0..3 {
        let want = prove(&CpuBackend::new(), &TwoTables::default(), TwoTables::traces(10, 4), &[], &o).unwrap();
        let got = prove(&r, &TwoTables::default(), TwoTables::traces(10, 4), &[], &o).unwrap();
        assert_eq!(got.to_bytes(), want.to_bytes());
        let want = prove(&CpuBackend::new(), &cubic, vec![t.clone()], &p, &o).unwrap();
        let got = prove(&r, &cubic, vec![t.clone()], &p, &o).unwrap();
        assert_eq!(got.to_bytes(), want.to_bytes());
    }
    let races = r.device().races();
    assert!(races.is_empty(), "{}", races[0]);
}

#[test]
fn a_free_that_waits_for_the_other_streams_read_is_no_race() {
    let Some(dev) = checked() else { return };
    let a = dev.upload(&T1, &matrix()).unwrap();
    let lde = dev.coset_lde(&T2, &a, 1, GENERATOR).unwrap();
    drop(a);
    assert!(dev.races().is_empty(), "{}", dev.races()[0]);
    let want = CpuBackend::new();
    let w = want.coset_lde(&T2, &want.upload(&T1, &matrix()).unwrap(), 1, GENERATOR).unwrap();
    assert_eq!(dev.download(&T2, &lde).unwrap(), want.download(&T2, &w).unwrap());
}

#[cfg(feature = "fault-injection")]
#[test]
fn an_injected_unordered_free_is_caught_and_named() {
    use backend_api::fault::{FaultMode, FaultSite};
    use backend_api::{BackendError, Stage};
    use backend_cuda::race::{Label, RaceKind};
    let Some(dev) = checked() else { return };
    // Made on t1's stream, read by the LDE on t2's: its free must wait.
    let a = dev.upload(&T1, &matrix()).unwrap();
    let lde = dev.coset_lde(&T2, &a, 1, GENERATOR).unwrap();
    let g = dev.faults().arm(FaultSite::UnorderedFree, FaultMode::Once);
    drop(a);
    assert_eq!(g.fired(), 1, "the free did not reach the armed site");
    let races = dev.races();
    assert_eq!(races.len(), 1, "{races:?}");
    let r = &races[0];
    println!("caught: {r}");
    assert_eq!(r.kind, RaceKind::Free);
    assert_eq!(r.made_by, Label { stage: Stage::Upload, table: "t1".into() });
    assert_eq!(r.unordered.by, Label { stage: Stage::CosetLde, table: "t2".into() });
    assert_ne!(r.at.stream, r.unordered.stream);
    // The race is an error of the next operation, naming it.
    match dev.download(&T2, &lde) {
        Err(BackendError::Device { message, .. }) => {
            assert!(message.contains(&format!("buffer #{}", r.buffer)), "{message}");
            assert!(message.contains("upload of table t1") && message.contains("coset-lde of table t2"), "{message}");
        }
        other => panic!("expected the race as an error, got {:?}", other.map(|_| ())),
    }
}
