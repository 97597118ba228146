//! Decline recovery at every fault site: `Resilient<Flaky<CpuBackend>>`
//! proves `TwoTables` (auxiliary columns, two tables of different heights)
//! while one site is armed.
//!
//! (a) a one-shot fault is absorbed by drain and retry: the proof is
//!     byte-identical to the clean one and the report shows one retry;
//! (b) a sticky fault with `OnDecline::Recompute` moves the stage's
//!     recompute counter and the proof is still byte-identical;
//! (c) a sticky fault with `OnDecline::Strict` returns the typed
//!     `DeviceDecline` naming the stage and a real table, without a panic.
//!
//! The prover never calls `ntt` or `intt`, so their sites are exercised by
//! direct operation calls through the same wrapper instead; the test checks
//! that every other site is in fact reached by the prove.
#![cfg(feature = "fault-injection")]

use backend_api::fault::{FaultMode, FaultSite};
use backend_api::{BackendBase, BackendError, ColMatrix, Ctx, NttOps, Stage, F};
use backend_cpu::{CpuBackend, OnDecline, RecoveryPolicy, RecoveryReport, Resilient};
use conformance::flaky::Flaky;
use stark::examples::TwoTables;
use stark::{ProofOptions, ProveError};

type Flaked = Resilient<Flaky<CpuBackend>>;

/// Sites `prove` never reaches: no stage of the protocol is a plain NTT.
const DIRECT_ONLY: [FaultSite; 4] = [
    FaultSite::Alloc(Stage::Ntt),
    FaultSite::Launch(Stage::Ntt),
    FaultSite::Alloc(Stage::InverseNtt),
    FaultSite::Launch(Stage::InverseNtt),
];

fn options() -> ProofOptions {
    ProofOptions {
        log_blowup: 2,
        num_queries: 8,
        grinding_bits: 2,
        log_fri_arity: 2,
        log_final_poly_len: 1,
        ..Default::default()
    }
}

fn prove(b: &Flaked) -> Result<Vec<u8>, ProveError> {
    stark::prove(b, &TwoTables::default(), TwoTables::traces(5, 3), &[], &options()).map(|p| p.to_bytes())
}

fn clean() -> Vec<u8> {
    stark::prove(&CpuBackend::new(), &TwoTables::default(), TwoTables::traces(5, 3), &[], &options())
        .expect("clean prove")
        .to_bytes()
}

fn flaked(on_decline: OnDecline) -> Flaked {
    Resilient::new(Flaky::new(CpuBackend::new()), RecoveryPolicy { retry: true, on_decline })
}

/// The stages a decline at `site` can be reported and counted under
/// (see the table in `conformance::flaky`).
fn stages_of(site: FaultSite) -> Vec<Stage> {
    match site {
        FaultSite::Alloc(s) | FaultSite::Launch(s) => vec![s],
        // A trace's upload overlapped with its extension is counted under
        // the coset LDE.
        FaultSite::TransferToDevice => vec![Stage::Upload, Stage::CosetLde],
        FaultSite::TransferToHost => vec![Stage::Download, Stage::MerkleOpen, Stage::OutOfDomain, Stage::Grind],
        FaultSite::Admission => {
            Stage::ALL.iter().copied().filter(|s| !matches!(s, Stage::Upload | Stage::Download)).collect()
        }
        // A hazard, not a decline: never armed here (not in `all()`).
        FaultSite::UnorderedFree => vec![],
    }
}

/// The stages whose counters moved.
fn moved(r: &RecoveryReport) -> Vec<Stage> {
    r.stages.iter().filter(|(_, c)| c.declines + c.retried + c.recomputed > 0).map(|(s, _)| *s).collect()
}

/// Table names the prover passes: the machine's tables, "+"-joined groups
/// of them (DEEP per LDE height), and "fri" (folding, grinding, the final
/// layer).
fn real_table(t: &str) -> bool {
    t == "fri" || t.split('+').all(|p| p == "sender" || p == "receiver")
}

fn prover_sites() -> impl Iterator<Item = FaultSite> {
    FaultSite::all().into_iter().filter(|s| !DIRECT_ONLY.contains(s))
}

#[test]
fn every_site_is_covered() {
    assert_eq!(prover_sites().count() + DIRECT_ONLY.len(), FaultSite::all().len());
    // Every compute stage but the NTTs is reached by the prove.
    for site in prover_sites() {
        let b = flaked(OnDecline::Recompute);
        let g = b.device().arm(site, FaultMode::Sticky);
        prove(&b).unwrap_or_else(|e| panic!("{site}: {e}"));
        assert!(g.fired() > 0, "{site}: prove never reached the site");
    }
}

#[test]
fn a_one_shot_fault_is_absorbed_by_drain_and_retry() {
    let want = clean();
    for site in prover_sites() {
        // Strict: only the retry can absorb it.
        let b = flaked(OnDecline::Strict);
        let g = b.device().arm(site, FaultMode::Once);
        let got = prove(&b).unwrap_or_else(|e| panic!("{site}: {e}"));
        assert_eq!(g.fired(), 1, "{site}");
        assert!(got == want, "{site}: proof differs from the clean proof");
        let r = b.report();
        let t = r.total();
        assert_eq!((t.declines, t.retried, t.recomputed), (1, 1, 0), "{site}: {r}");
        let stages = moved(&r);
        assert!(stages.len() == 1 && stages_of(site).contains(&stages[0]), "{site}: counted under {stages:?}");
    }
}

#[test]
fn a_sticky_fault_is_recomputed_on_the_reference_with_the_same_bytes() {
    let want = clean();
    for site in prover_sites() {
        let b = flaked(OnDecline::Recompute);
        let g = b.device().arm(site, FaultMode::Sticky);
        let got = prove(&b).unwrap_or_else(|e| panic!("{site}: {e}"));
        assert!(g.fired() > 0, "{site}");
        assert!(got == want, "{site}: proof differs from the clean proof");
        let r = b.report();
        let recomputed: Vec<Stage> = stages_of(site).into_iter().filter(|&s| r.get(s).recomputed > 0).collect();
        assert!(!recomputed.is_empty(), "{site}: no recompute counted: {r}");
        assert_eq!(r.total().retried, 0, "{site}: a sticky fault cannot be retried away: {r}");
    }
}

#[test]
fn a_sticky_fault_under_the_strict_policy_is_a_typed_error() {
    for site in prover_sites() {
        let b = flaked(OnDecline::Strict);
        let _g = b.device().arm(site, FaultMode::Sticky);
        match prove(&b) {
            Err(ProveError::Backend(BackendError::DeviceDecline { stage, table, requested_bytes, .. })) => {
                assert!(stages_of(site).contains(&stage), "{site}: declined as {stage}");
                if let FaultSite::Alloc(s) | FaultSite::Launch(s) = site {
                    assert_eq!(stage, s, "{site}");
                }
                assert!(real_table(&table), "{site}: table '{table}'");
                assert!(requested_bytes > 0, "{site}");
                // Two declines of the stage (first try and retry) per table
                // that reached it (the tables of a round run at once), no
                // recompute.
                let c = b.report().get(stage);
                assert!(c.declines >= 2 && c.declines.is_multiple_of(2), "{site}: {} declines", c.declines);
                assert_eq!(c.recomputed, 0, "{site}");
            }
            other => panic!("{site}: expected a DeviceDecline, got {:?}", other.map(|_| ())),
        }
    }
}

/// The NTT sites, through direct calls: the same three scenarios.
#[test]
fn ntt_sites_through_direct_calls() {
    let ctx = Ctx::table("direct");
    let m = ColMatrix::new(3, 64, (1..=192).map(F::new).collect());
    let cpu = CpuBackend::new();
    let run = |b: &Flaked, stage: Stage| -> Result<ColMatrix, BackendError> {
        let d = b.upload(&ctx, &m)?;
        let out = if stage == Stage::Ntt { b.ntt(&ctx, &d)? } else { b.intt(&ctx, &d)? };
        b.download(&ctx, &out)
    };
    for site in DIRECT_ONLY {
        let stage = stages_of(site)[0];
        let d = cpu.upload(&ctx, &m).unwrap();
        let want = if stage == Stage::Ntt { cpu.ntt(&ctx, &d) } else { cpu.intt(&ctx, &d) }.unwrap().to_host();

        let b = flaked(OnDecline::Strict);
        let g = b.device().arm(site, FaultMode::Once);
        assert_eq!(run(&b, stage).unwrap(), want, "{site}");
        assert_eq!((g.fired(), b.report().get(stage).retried), (1, 1), "{site}");

        let b = flaked(OnDecline::Recompute);
        let _g = b.device().arm(site, FaultMode::Sticky);
        assert_eq!(run(&b, stage).unwrap(), want, "{site}");
        assert_eq!(b.report().get(stage).recomputed, 1, "{site}");

        let b = flaked(OnDecline::Strict);
        let _g = b.device().arm(site, FaultMode::Sticky);
        match run(&b, stage) {
            Err(BackendError::DeviceDecline { stage: s, table, .. }) => {
                assert_eq!((s, table.as_str()), (stage, "direct"), "{site}")
            }
            other => panic!("{site}: expected a DeviceDecline, got {other:?}"),
        }
    }
}

#[test]
fn a_disarmed_wrapper_is_transparent() {
    let b = flaked(OnDecline::Strict);
    {
        let _g = b.device().arm(FaultSite::Launch(Stage::Compose), FaultMode::AfterCalls(1_000_000));
    }
    assert!(prove(&b).unwrap() == clean());
    assert!(b.report().is_clean(), "{}", b.report());
}

/// Concurrent proves through one backend while its device declines: every
/// proof, recovered or not, is the clean proof, and the recomputes are
/// counted across all of them.
#[test]
fn concurrent_proves_under_sticky_declines_stay_byte_identical() {
    let want = clean();
    let b = flaked(OnDecline::Recompute);
    let _guard = b.device().faults().arm(FaultSite::Launch(Stage::Compose), FaultMode::Sticky);
    let proofs: Vec<Vec<u8>> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..4).map(|_| s.spawn(|| prove(&b).expect("recovered prove"))).collect();
        handles.into_iter().map(|h| h.join().expect("no panic")).collect()
    });
    assert!(proofs.iter().all(|p| *p == want));
    // Two tables per prove, each recomputed once.
    assert_eq!(b.report().get(Stage::Compose).recomputed, 8);
}

/// A decline in the middle of a spill or a recompute (past the first few
/// calls of each site, while LDEs are moved in pieces or rebuilt coset by
/// coset or in quarters of a coset) is recovered like any other: once by retry, sticky by
/// recomputing the stage on the host, and the proof keeps the clean bytes.
#[test]
fn a_decline_in_the_middle_of_a_spill_or_a_recompute_is_recovered_with_the_same_bytes() {
    use stark::{ProveSettings, Residency};
    let want = clean();
    let split = Residency::Recompute { tables: stark::Tables::ALL, log_split: 2, keep_traces: false, keep_aux: false };
    for residency in [Residency::spill_all(512), Residency::RECOMPUTE_ALL, split] {
        let settings = ProveSettings { residency, ..ProveSettings::default() };
        let prove_in_pieces = |b: &Flaked| {
            stark::prove_with_settings(b, &TwoTables::default(), TwoTables::traces(5, 3), &[], &options(), &settings)
                .map(|(p, stats)| (p.to_bytes(), stats.spilled_bytes))
        };
        let how = format!("{residency:?}");
        for site in prover_sites() {
            for (mode, policy) in
                [(FaultMode::AfterCalls(3), OnDecline::Strict), (FaultMode::Sticky, OnDecline::Recompute)]
            {
                let b = flaked(policy);
                let g = b.device().arm(site, mode);
                let (got, moved) = prove_in_pieces(&b).unwrap_or_else(|e| panic!("{how} {site} {mode:?}: {e}"));
                match residency {
                    Residency::Recompute { .. } => {
                        assert_eq!(moved, 0, "{how} {site}: rebuilt pieces went to the host")
                    }
                    _ => assert!(moved > 0, "{how} {site}: nothing was read in pieces"),
                }
                assert!(got == want, "{how} {site} {mode:?}: the proof differs from the clean proof");
                if mode == FaultMode::Sticky {
                    assert!(g.fired() > 0, "{how} {site}: the prove never reached the site");
                }
                let r = b.report();
                assert_eq!(r.total().declines > 0, g.fired() > 0, "{how} {site} {mode:?}: {r}");
            }
        }
    }
}
