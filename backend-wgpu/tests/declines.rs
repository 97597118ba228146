//! Device declines of the wgpu backend and their recovery through
//! `Resilient<WgpuBackend>`: real declines (a buffer past the adapter's
//! binding limit), every fault site of `FaultSite::all()` armed once,
//! sticky with recompute and sticky strict, and matrices split across many
//! buffers. Proofs must equal the CPU backend's byte for byte whichever
//! path ran. Without an adapter these tests print a note and pass.

use backend_api::fault::{FaultMode, FaultSite};
use backend_api::{BackendBase, BackendError, ColMatrix, Ctx, HashKind, NttOps, Stage, F};
use backend_cpu::{CpuBackend, OnDecline, RecoveryPolicy, Resilient};
use backend_wgpu::{WgpuBackend, WgpuConfig};
use stark::examples::{Cubic, TwoTables};
use stark::{prove, Machine, ProofOptions, ProveError, SingleTable};

fn backend(config: WgpuConfig) -> Option<WgpuBackend> {
    match WgpuBackend::with_config(config) {
        Ok(b) => Some(b),
        Err(e) => {
            assert!(!std::env::var("KILN_REQUIRE_WGPU").is_ok_and(|v| v == "1"), "no wgpu adapter: {e}");
            eprintln!("SKIPPED: no wgpu adapter ({e})");
            None
        }
    }
}

fn options() -> ProofOptions {
    ProofOptions {
        log_blowup: 1,
        num_queries: 12,
        grinding_bits: 3,
        hash: HashKind::Blake3,
        log_fri_arity: 2,
        log_final_poly_len: 2,
    }
}

fn policy(on_decline: OnDecline) -> RecoveryPolicy {
    RecoveryPolicy { retry: true, on_decline }
}

fn cpu_proof(m: &dyn Machine, traces: &[ColMatrix], publics: &[F]) -> Vec<u8> {
    prove(&CpuBackend::new(), m, traces.to_vec(), publics, &options()).expect("cpu prove").to_bytes()
}

/// A real decline: with a 6 KiB binding limit a 2^9-row trace fits (4 KiB
/// a column) but its LDE column (8 KiB) does not; the LDE is recomputed on
/// the CPU, or refused typed.
#[test]
fn a_column_past_the_binding_limit_is_declined_and_recovered() {
    let cubic = SingleTable(Cubic::new(4));
    let (t, p) = cubic.0.trace(9, 5);
    let config = WgpuConfig { max_binding_bytes: Some(6 << 10), ..Default::default() };
    let Some(dev) = backend(config) else { return };
    let want = cpu_proof(&cubic, std::slice::from_ref(&t), &p);
    let r = Resilient::new(dev, policy(OnDecline::Recompute));
    let got = prove(&r, &cubic, vec![t.clone()], &p, &options()).expect("recovered prove").to_bytes();
    let report = r.report();
    assert!(got == want, "proof differs from the CPU proof");
    assert!(report.get(Stage::CosetLde).recomputed > 0, "{report}");

    let Some(dev) = backend(config) else { return };
    let r = Resilient::new(dev, policy(OnDecline::Strict));
    match prove(&r, &cubic, vec![t], &p, &options()) {
        Err(ProveError::Backend(BackendError::DeviceDecline { stage, table, requested_bytes, reason, .. })) => {
            assert_eq!((stage, table.as_str()), (Stage::CosetLde, "cubic"), "{reason}");
            assert!(requested_bytes > 6 << 10, "{requested_bytes}");
        }
        other => panic!("expected a CosetLde decline, got {:?}", other.map(|_| ())),
    }
}

/// Every matrix split across buffers of a few columns: no decline, the
/// CPU's bytes.
#[test]
fn matrices_split_across_buffers_give_the_reference_bytes() {
    let config = WgpuConfig { max_binding_bytes: Some(24 << 10), ..Default::default() };
    let Some(dev) = backend(config) else { return };
    let cubic = SingleTable(Cubic::new(24));
    let (t, p) = cubic.0.trace(8, 9);
    let two = TwoTables::traces(7, 3);
    for (m, traces, publics) in [(&cubic as &dyn Machine, vec![t], p), (&TwoTables::default(), two, vec![])] {
        let want = cpu_proof(m, &traces, &publics);
        let r = Resilient::new(WgpuBackend::with_config(config).unwrap(), policy(OnDecline::Strict));
        let got = prove(&r, m, traces, &publics, &options()).expect("split prove").to_bytes();
        assert!(got == want, "proof differs from the CPU proof");
        assert!(r.report().is_clean(), "{}", r.report());
    }
    // A 2^8 x 24 trace is 48 KiB: two buffers of 12 columns.
    let ctx = Ctx::table("split");
    let m = ColMatrix::new(24, 256, (0..24 * 256).map(|i| F::new(i * 7919 + 1)).collect());
    let d = dev.upload(&ctx, &m).unwrap();
    assert_eq!(dev.download(&ctx, &d).unwrap(), m);
    let back = dev.download(&ctx, &dev.intt(&ctx, &dev.ntt(&ctx, &d).unwrap()).unwrap()).unwrap();
    assert_eq!(back, m);
}

fn two_tables() -> (TwoTables, Vec<ColMatrix>) {
    (TwoTables::default(), TwoTables::traces(5, 11))
}

/// Calls the op of a site the prover does not reach (the transforms).
fn direct(site: FaultSite) {
    let Some(dev) = backend(WgpuConfig::default()) else { return };
    let ctx = Ctx::table("direct");
    let m = dev.upload(&ctx, &ColMatrix::new(2, 64, (1..=128).map(F::new).collect())).expect("upload");
    let _g = dev.faults().arm(site, FaultMode::Sticky);
    let r = match site.stage(Stage::Ntt) {
        Stage::InverseNtt => dev.intt(&ctx, &m),
        _ => dev.ntt(&ctx, &m),
    };
    match r {
        Err(BackendError::DeviceDecline { stage, table, .. }) => {
            assert_eq!((stage, table.as_str()), (site.stage(Stage::Ntt), "direct"), "{site}");
        }
        other => panic!("{site}: expected a decline, got {:?}", other.map(|_| ())),
    }
}

#[test]
fn every_site_recovers_or_declines_typed() {
    if backend(WgpuConfig::default()).is_none() {
        return;
    }
    let (m, traces) = two_tables();
    let want = cpu_proof(&m, &traces, &[]);
    let tables: Vec<String> = m.tables().iter().map(|t| t.name().to_string()).collect();
    let make = |p: RecoveryPolicy| Resilient::new(backend(WgpuConfig::default()).unwrap(), p);
    for site in FaultSite::all() {
        // Once: the retry after the drain succeeds.
        let r = make(RecoveryPolicy::default());
        let g = r.device().faults().arm(site, FaultMode::Once);
        let got = prove(&r, &m, traces.clone(), &[], &options()).unwrap_or_else(|e| panic!("{site} once: {e}"));
        assert!(got.to_bytes() == want, "{site} once: proof differs");
        if g.fired() > 0 {
            let t = r.report().total();
            assert_eq!((t.retried, t.recomputed), (1, 0), "{site} once: {}", r.report());
        }
        drop(g);

        // Sticky with recompute: the stage runs on the CPU.
        let r = make(policy(OnDecline::Recompute));
        let g = r.device().faults().arm(site, FaultMode::Sticky);
        let got = prove(&r, &m, traces.clone(), &[], &options()).unwrap_or_else(|e| panic!("{site} sticky: {e}"));
        assert!(got.to_bytes() == want, "{site} sticky recompute: proof differs");
        let fired = g.fired();
        drop(g);
        if fired == 0 {
            // Only the transforms are out of the prover's reach.
            assert!(
                matches!(
                    site,
                    FaultSite::Alloc(Stage::Ntt | Stage::InverseNtt)
                        | FaultSite::Launch(Stage::Ntt | Stage::InverseNtt)
                ),
                "{site}: not reached by the prover"
            );
            direct(site);
            continue;
        }
        // A prove's first device call is the main trace's upload with its
        // extension: the gate's first refusal is that LDE's.
        let stage = site.stage(Stage::CosetLde);
        assert!(r.report().get(stage).recomputed > 0, "{site}: {stage} not recomputed: {}", r.report());

        // Sticky strict: the typed decline naming the stage and a table.
        let r = make(policy(OnDecline::Strict));
        let _g = r.device().faults().arm(site, FaultMode::Sticky);
        match prove(&r, &m, traces.clone(), &[], &options()) {
            Err(ProveError::Backend(BackendError::DeviceDecline { stage: st, table, .. })) => {
                assert_eq!(st, stage, "{site}");
                assert!(tables.contains(&table) || table == "fri", "{site}: table {table}");
            }
            other => panic!("{site} strict: expected a decline, got {:?}", other.map(|_| ())),
        }
    }
}
