//! Device declines and their recovery through `Resilient<CudaBackend>`:
//! every decline site of `FaultSite::all()` armed once, sticky with
//! recompute and sticky strict (under the `fault-injection` feature), and
//! a real decline from a capped stream-ordered pool. Proofs must equal the
//! CPU backend's byte for byte whichever path ran. Without a CUDA device
//! these tests print that they were skipped and pass.

use backend_api::{BackendError, ColMatrix, HashKind, Stage, F};
use backend_cpu::{CpuBackend, OnDecline, RecoveryPolicy, Resilient};
use backend_cuda::{CudaBackend, CudaConfig};
use stark::examples::{Cubic, TwoTables};
use stark::{prove, Machine, ProofOptions, ProveError, SingleTable};

fn backend(config: CudaConfig) -> Option<CudaBackend> {
    match CudaBackend::with_config(0, config) {
        Ok(b) => Some(b),
        Err(e) => {
            println!("SKIPPED: no CUDA device ({e})");
            None
        }
    }
}

fn options() -> ProofOptions {
    ProofOptions {
        log_blowup: 1,
        num_queries: 20,
        grinding_bits: 4,
        hash: HashKind::Blake3,
        log_fri_arity: 2,
        log_final_poly_len: 2,
    }
}

fn policy(on_decline: OnDecline) -> RecoveryPolicy {
    RecoveryPolicy { retry: true, on_decline }
}

/// A statement: a machine, its traces and publics.
#[cfg_attr(not(feature = "fault-injection"), allow(dead_code))]
struct Statement {
    name: &'static str,
    machine: Box<dyn Machine>,
    traces: Vec<ColMatrix>,
    publics: Vec<F>,
}

#[cfg_attr(not(feature = "fault-injection"), allow(dead_code))]
fn statements() -> Vec<Statement> {
    let cubic = SingleTable(Cubic::new(8));
    let (t, p) = cubic.0.trace(6, 7);
    vec![
        Statement {
            name: "two-tables",
            machine: Box::new(TwoTables::default()),
            traces: TwoTables::traces(6, 11),
            publics: vec![],
        },
        Statement { name: "cubic", machine: Box::new(cubic), traces: vec![t], publics: p },
    ]
}

#[cfg_attr(not(feature = "fault-injection"), allow(dead_code))]
fn cpu_proof(s: &Statement, o: &ProofOptions) -> Vec<u8> {
    prove(&CpuBackend::new(), s.machine.as_ref(), s.traces.clone(), &s.publics, o).expect("cpu prove").to_bytes()
}

/// A real decline, no fault injected: a pool capped below the LDE of a
/// 2^18 x 64 trace refuses the allocation.
#[test]
fn a_capped_pool_declines_for_real_and_recovery_keeps_the_proof() {
    let log_n = 18;
    let cubic = SingleTable(Cubic::new(64));
    let (t, p) = cubic.0.trace(log_n, 3);
    let o = options();
    // Trace 128 MiB; the LDE needs 128 MiB of coefficients and 256 MiB out.
    let config = CudaConfig { pool_limit_bytes: Some(300 << 20), ..CudaConfig::default() };
    let Some(dev) = backend(config) else { return };
    let want = prove(&CpuBackend::new(), &cubic, vec![t.clone()], &p, &o).expect("cpu prove").to_bytes();

    let r = Resilient::new(dev, policy(OnDecline::Recompute));
    let got = prove(&r, &cubic, vec![t.clone()], &p, &o).expect("prove with recompute").to_bytes();
    let report = r.report();
    println!("capped pool, recompute: {report}");
    assert_eq!(got, want, "proof differs from the CPU proof");
    assert!(report.get(Stage::CosetLde).recomputed > 0, "{report}");

    let Some(dev) = backend(config) else { return };
    let r = Resilient::new(dev, policy(OnDecline::Strict));
    match prove(&r, &cubic, vec![t], &p, &o) {
        Err(ProveError::Backend(BackendError::DeviceDecline { stage, table, requested_bytes, free_bytes, reason })) => {
            println!(
                "capped pool, strict: {stage} table {table}: {requested_bytes} requested, {free_bytes} free ({reason})"
            );
            assert_eq!(stage, Stage::CosetLde);
            assert_eq!(table, "cubic");
            assert!(requested_bytes > 0 && free_bytes > 0);
        }
        other => panic!("expected a CosetLde decline, got {:?}", other.map(|_| ())),
    }
}

#[cfg(feature = "fault-injection")]
mod injected {
    use super::*;
    use backend_api::fault::{FaultMode, FaultSite};
    use backend_api::{BackendBase, Ctx, NttOps};

    /// The stage a decline at `site` is reported under in a prove (the
    /// gate first refuses the proof's reservation, counted under upload).
    fn expected_stage(site: FaultSite) -> Stage {
        site.stage(Stage::Upload)
    }

    fn tables(s: &Statement) -> Vec<String> {
        s.machine.tables().iter().map(|a| a.name().to_string()).collect()
    }

    /// Calls the op of a site the prover does not reach (the transforms)
    /// directly and checks its decline.
    fn direct(site: FaultSite) {
        let Some(dev) = backend(CudaConfig::default()) else { return };
        let ctx = Ctx::table("direct");
        let m = dev.upload(&ctx, &ColMatrix::new(2, 64, (1..=128).map(F::new).collect())).expect("upload");
        let _g = dev.faults().arm(site, FaultMode::Sticky);
        let r = match site.stage(Stage::Ntt) {
            Stage::InverseNtt => dev.intt(&ctx, &m),
            _ => dev.ntt(&ctx, &m),
        };
        match r {
            Err(BackendError::DeviceDecline { stage, table, .. }) => {
                assert_eq!(stage, site.stage(Stage::Ntt), "{site}");
                assert_eq!(table, "direct");
            }
            other => panic!("{site}: expected a decline, got {:?}", other.map(|_| ())),
        }
    }

    #[test]
    fn every_site_recovers_or_declines_typed() {
        if backend(CudaConfig::default()).is_none() {
            return;
        }
        let o = options();
        for s in statements() {
            let want = cpu_proof(&s, &o);
            // No fault: the device proof equals the CPU proof.
            let r = Resilient::new(backend(CudaConfig::default()).unwrap(), RecoveryPolicy::default());
            let got = prove(&r, s.machine.as_ref(), s.traces.clone(), &s.publics, &o).expect("clean prove");
            assert_eq!(got.to_bytes(), want, "{}: clean device proof differs", s.name);
            assert!(r.report().is_clean(), "{}: {}", s.name, r.report());
            for site in FaultSite::all() {
                // Once: the retry after the drain succeeds.
                let r = Resilient::new(backend(CudaConfig::default()).unwrap(), RecoveryPolicy::default());
                let g = r.device().faults().arm(site, FaultMode::Once);
                let got = prove(&r, s.machine.as_ref(), s.traces.clone(), &s.publics, &o)
                    .unwrap_or_else(|e| panic!("{} {site} once: {e}", s.name));
                assert_eq!(got.to_bytes(), want, "{} {site} once: proof differs", s.name);
                let reached = g.fired() > 0;
                drop(g);
                if reached {
                    assert_eq!(r.report().total().recomputed, 0, "{} {site} once: {}", s.name, r.report());
                    assert!(r.report().total().retried > 0, "{} {site} once: {}", s.name, r.report());
                }

                // Sticky with recompute: the stage runs on the CPU.
                let r = Resilient::new(backend(CudaConfig::default()).unwrap(), policy(OnDecline::Recompute));
                let g = r.device().faults().arm(site, FaultMode::Sticky);
                let got = prove(&r, s.machine.as_ref(), s.traces.clone(), &s.publics, &o)
                    .unwrap_or_else(|e| panic!("{} {site} sticky recompute: {e}", s.name));
                assert_eq!(got.to_bytes(), want, "{} {site} sticky recompute: proof differs", s.name);
                let fired = g.fired();
                drop(g);
                let report = r.report();
                println!("{} {site}: fired {fired}; {report}", s.name);
                if fired == 0 {
                    let has_logup = s.machine.tables().iter().any(|t| t.logup().is_some());
                    if !has_logup && site.stage(Stage::Upload) == Stage::LogUp {
                        // No table has a bus: nothing to build.
                        continue;
                    }
                    // The prover never reaches this site: call its op directly.
                    assert!(
                        matches!(
                            site,
                            FaultSite::Alloc(Stage::Ntt | Stage::InverseNtt)
                                | FaultSite::Launch(Stage::Ntt | Stage::InverseNtt)
                        ),
                        "{} {site}: not reached by the prover",
                        s.name
                    );
                    direct(site);
                    continue;
                }
                let stage = expected_stage(site);
                assert!(report.get(stage).recomputed > 0, "{} {site}: {stage} not recomputed: {report}", s.name);

                // Sticky strict: the typed decline naming the stage and a table.
                let r = Resilient::new(backend(CudaConfig::default()).unwrap(), policy(OnDecline::Strict));
                let _g = r.device().faults().arm(site, FaultMode::Sticky);
                match prove(&r, s.machine.as_ref(), s.traces.clone(), &s.publics, &o) {
                    Err(ProveError::Backend(BackendError::DeviceDecline {
                        stage: st,
                        table,
                        free_bytes,
                        reason,
                        ..
                    })) => {
                        assert_eq!(st, stage, "{} {site}: {reason}", s.name);
                        // A table, FRI, or (a declined reservation) the
                        // proof's tables joined by "+".
                        let known = |t: &str| tables(&s).iter().any(|n| n == t) || t == "fri";
                        assert!(
                            known(&table) || table.split('+').all(known),
                            "{} {site}: table {table} is not one of {:?}",
                            s.name,
                            tables(&s)
                        );
                        assert!(free_bytes > 0, "{} {site}: free bytes are real", s.name);
                    }
                    other => panic!("{} {site} strict: expected a decline, got {:?}", s.name, other.map(|_| ())),
                }
            }
        }
    }

    #[test]
    fn drain_trims_and_the_gate_refuses_past_its_budget() {
        let Some(dev) = backend(CudaConfig::default()) else { return };
        dev.drain().expect("drain");
        assert!(dev.gate_stats().budget > 0);
        // An admission refusal is a typed decline of the stage asking.
        let ctx = Ctx::table("huge");
        let _g = dev.faults().arm(FaultSite::Admission, FaultMode::Once);
        match dev.upload(&ctx, &ColMatrix::new(1, 4, vec![F::ONE; 4])) {
            Err(BackendError::DeviceDecline { stage: Stage::Upload, table, .. }) => assert_eq!(table, "huge"),
            other => panic!("expected an admission decline, got {:?}", other.map(|_| ())),
        }
        dev.upload(&ctx, &ColMatrix::new(1, 4, vec![F::ONE; 4])).expect("once: the next upload passes");
    }

    /// A refused pin is a typed upload decline, and the matrix is left as
    /// it was: it uploads (through staging), and pins once the fault is
    /// spent.
    #[test]
    fn a_refused_pin_declines_typed_and_the_matrix_still_uploads() {
        let Some(dev) = backend(CudaConfig::default()) else { return };
        let m = ColMatrix::new(3, 1 << 16, (1..=3 << 16).map(F::new).collect());
        let g = dev.faults().arm(FaultSite::TransferToDevice, FaultMode::Once);
        match dev.pin(&Ctx::table("pin"), &m) {
            Err(BackendError::DeviceDecline { stage: Stage::Upload, table, requested_bytes, .. }) => {
                assert_eq!((table.as_str(), requested_bytes), ("pin", 8 * (3 << 16)));
            }
            other => panic!("expected a pin decline, got {:?}", other.map(|p| p.bytes())),
        }
        drop(g);
        let ctx = Ctx::table("after");
        assert_eq!(dev.download(&ctx, &dev.upload(&ctx, &m).expect("upload")).expect("download"), m);
        assert_eq!(dev.pin(&ctx, &m).expect("pinned once the fault is spent").bytes(), 8 * (3 << 16));
    }
}
