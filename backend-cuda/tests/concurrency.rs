//! Concurrent proves on one `CudaBackend`: threads share its stream, pool,
//! staging buffers, kernel caches and memory gate, and every proof must
//! still equal the CPU backend's byte for byte, with the gate's budget
//! ample or below what the LDE of one table needs (every such LDE
//! declines and `Resilient` recomputes it). Its own test binary, because
//! the gate's budget is process-wide. Without a CUDA device these tests
//! print that they were skipped and pass.

use backend_api::Stage;
use backend_api::{ColMatrix, HashKind, F};
use backend_cpu::{CpuBackend, OnDecline, RecoveryPolicy, RecoveryReport, Resilient};
use backend_cuda::{CudaBackend, CudaConfig};
use stark::examples::{Cubic, TwoTables};
use stark::{prove, Machine, ProofOptions, SingleTable};

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

struct Statement {
    machine: Box<dyn Machine + Send + Sync>,
    traces: Vec<ColMatrix>,
    publics: Vec<F>,
}

/// Eight statements of different shapes: buses over two tables and a
/// 64-column degree-3 AIR.
fn statements(log_n: u32) -> Vec<Statement> {
    (0..8u64)
        .map(|k| {
            if k % 2 == 0 {
                Statement {
                    machine: Box::new(TwoTables::default()),
                    traces: TwoTables::traces(log_n, k),
                    publics: vec![],
                }
            } else {
                let cubic = SingleTable(Cubic::new(64));
                let (t, p) = cubic.0.trace(log_n, k);
                Statement { machine: Box::new(cubic), traces: vec![t], publics: p }
            }
        })
        .collect()
}

/// Proves every statement `rounds` times from `threads` threads at once
/// through one backend and checks each proof against the CPU's. Returns
/// the recovery report and the gate's waits.
fn prove_concurrently(config: CudaConfig, log_n: u32, threads: usize, rounds: usize) -> Option<(RecoveryReport, u64)> {
    let dev = match CudaBackend::with_config(0, config) {
        Ok(d) => d,
        Err(e) => {
            println!("SKIPPED: no CUDA device ({e})");
            return None;
        }
    };
    let o = options();
    let all = statements(log_n);
    let want: Vec<Vec<u8>> = all
        .iter()
        .map(|s| prove(&CpuBackend::new(), s.machine.as_ref(), s.traces.clone(), &s.publics, &o).unwrap().to_bytes())
        .collect();
    let r = Resilient::new(dev, RecoveryPolicy { retry: true, on_decline: OnDecline::Recompute });
    std::thread::scope(|scope| {
        for t in 0..threads {
            let (r, all, want, o) = (&r, &all, &want, &o);
            scope.spawn(move || {
                for round in 0..rounds {
                    for (k, s) in all.iter().enumerate().filter(|(k, _)| k % threads == t) {
                        let got = prove(r, s.machine.as_ref(), s.traces.clone(), &s.publics, o)
                            .unwrap_or_else(|e| panic!("thread {t} round {round} statement {k}: {e}"))
                            .to_bytes();
                        assert_eq!(got, want[k], "thread {t} round {round} statement {k}: proof differs");
                    }
                }
            });
        }
    });
    let waits = r.device().gate_stats().loose_waits;
    Some((r.report(), waits))
}

/// One test, so the two budgets (process-wide) apply one after the other.
#[test]
fn concurrent_proves_equal_the_cpu_proofs_with_an_ample_and_a_tight_budget() {
    let ample = CudaConfig { memory_budget_bytes: Some(16 << 30), ..CudaConfig::default() };
    let Some((report, waits)) = prove_concurrently(ample, 12, 4, 3) else { return };
    println!("16 GiB budget: {report}; gate waits so far {waits}");
    assert!(report.is_clean(), "{report}");
    // Cubic(64) at 2^14 rows: its LDE stage admits 40 MiB, more than the
    // whole 32 MiB budget, so the gate refuses it at once every time.
    let tight = CudaConfig { memory_budget_bytes: Some(32 << 20), ..CudaConfig::default() };
    let Some((report, waits)) = prove_concurrently(tight, 14, 4, 2) else { return };
    println!("32 MiB budget: {report}; gate waits so far {waits}");
    assert!(report.get(Stage::CosetLde).recomputed > 0, "the LDE was never refused: {report}");
}
