//! Many proofs sharing one device (issue 12): eight statements proven at
//! once through one `Resilient<CudaBackend>`, the race detector on, under a
//! memory budget below the sum of their resident sets, for
//! `KILN_SHARE_ROUNDS` rounds (default 3; the acceptance run uses 50).
//! Every proof must equal the CPU backend's bytes, nothing may deadlock
//! and the detector must stay silent; the gate must have made proofs wait
//! instead of over-committing. Then one round with the CPU reference
//! cross-checking every stage, and one under a budget smaller than any
//! proof (each runs alone). Gate waits and peak device memory are printed.
//! Without a CUDA device the tests print that they were skipped and pass.

use backend_api::{ColMatrix, HashKind, F};
use backend_cpu::{CpuBackend, CrossCheck, RecoveryPolicy, Resilient};
use backend_cuda::{CudaBackend, CudaConfig, GateStats};
use stark::batch::{prove_batch, BatchConfig, BatchOrder, Statement};
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

fn device(budget: u64) -> Option<CudaBackend> {
    let config = CudaConfig {
        memory_budget_bytes: Some(budget),
        debug_races: true,
        ..CudaConfig::from_env().expect("KILN_CUDA_* variables")
    };
    match CudaBackend::with_config(0, config) {
        Ok(d) => Some(d),
        Err(e) => {
            println!("SKIPPED: no CUDA device ({e})");
            None
        }
    }
}

/// Eight statements of different shapes: buses over two tables and a
/// 64-column degree-3 AIR, at two heights.
struct Statements {
    machines: Vec<Box<dyn Machine>>,
    traces: Vec<(Vec<ColMatrix>, Vec<F>)>,
}

impl Statements {
    fn new(log_n: u32) -> Statements {
        let (mut machines, mut traces): (Vec<Box<dyn Machine>>, _) = (vec![], vec![]);
        for k in 0..8u64 {
            let log = log_n - (k as u32 % 3);
            if k % 2 == 0 {
                machines.push(Box::new(TwoTables::default()));
                traces.push((TwoTables::traces(log, k), vec![]));
            } else {
                let cubic = SingleTable(Cubic::new(64));
                let (t, p) = cubic.0.trace(log, k);
                machines.push(Box::new(cubic));
                traces.push((vec![t], p));
            }
        }
        Statements { machines, traces }
    }

    fn batch(&self) -> Vec<Statement<'_>> {
        self.machines
            .iter()
            .zip(&self.traces)
            .map(|(m, (t, p))| Statement { machine: m.as_ref(), traces: t.clone(), publics: p.clone() })
            .collect()
    }

    fn cpu_proofs(&self, o: &ProofOptions) -> Vec<Vec<u8>> {
        self.batch()
            .iter()
            .map(|s| prove(&CpuBackend::new(), s.machine, s.traces.clone(), &s.publics, o).unwrap().to_bytes())
            .collect()
    }

    /// (sum of resident sets, largest device set) of the batch.
    fn sizes(&self, o: &ProofOptions) -> (u64, u64) {
        let sets: Vec<_> =
            self.batch().iter().map(|s| stark::device_set(s.machine, &s.traces, &s.publics, o).unwrap()).collect();
        (sets.iter().map(|d| d.resident()).sum(), sets.iter().map(|d| d.bytes()).max().unwrap_or(0))
    }
}

fn report(what: &str, g: &GateStats, pool_high: u64) {
    println!(
        "{what}: budget {} MiB; {} proofs admitted, {} waited, {} ran alone; peak held {} MiB, peak owned by \
         proofs {} MiB, pool high-water {} MiB; {} model overruns",
        g.budget >> 20,
        g.claims,
        g.claim_waits,
        g.alone,
        g.peak_held >> 20,
        g.peak_owned >> 20,
        pool_high >> 20,
        g.overruns + g.stage_overruns
    );
}

/// Proves the batch `rounds` times, 8 at once, and checks every proof.
fn rounds<B: backend_api::Backend>(b: &B, s: &Statements, want: &[Vec<u8>], o: &ProofOptions, rounds: usize) {
    let config = BatchConfig { per_backend: 8, order: BatchOrder::HeaviestFirst };
    for round in 0..rounds {
        let report = prove_batch(b, &s.batch(), o, config);
        for (k, p) in report.proofs.iter().enumerate() {
            let got = p.result.as_ref().unwrap_or_else(|e| panic!("round {round} statement {k}: {e}"));
            assert!(got.to_bytes() == want[k], "round {round} statement {k}: proof differs from the CPU's");
        }
    }
}

#[test]
fn eight_proofs_at_once_under_a_tight_budget_equal_the_cpu_bytes() {
    let o = options();
    let s = Statements::new(14);
    let (resident, largest) = s.sizes(&o);
    // Half the resident sets, but room for the largest proof.
    let budget = (resident / 2).max(largest);
    assert!(budget < resident, "the budget must be below the sum of the resident sets");
    let Some(dev) = device(budget) else { return };
    let n: usize = std::env::var("KILN_SHARE_ROUNDS").ok().and_then(|v| v.parse().ok()).unwrap_or(3);
    let want = s.cpu_proofs(&o);
    let r = Resilient::new(dev, RecoveryPolicy::default());
    let _ = r.device().pool_usage(true);
    rounds(&r, &s, &want, &o, n);
    let races = r.device().races();
    assert!(races.is_empty(), "the race detector found: {}", races[0]);
    let g = r.device().gate_stats();
    let pool_high = r.device().pool_usage(false).map_or(0, |u| u.1);
    report(&format!("{n} rounds of 8 proofs at once"), &g, pool_high);
    assert!(r.report().is_clean(), "declines under the gate: {}", r.report());
    assert_eq!(g.claims, 8 * n as u64);
    assert!(g.claim_waits > 0, "a budget below the resident sets never made a proof wait");
    assert!(g.peak_held <= g.budget, "the gate over-committed: {g:?}");
    assert_eq!(g.held, 0, "memory still held after the proofs");
}

#[test]
fn the_same_under_the_cross_check() {
    let o = options();
    let s = Statements::new(12);
    let (resident, largest) = s.sizes(&o);
    let Some(dev) = device((resident / 2).max(largest)) else { return };
    let want = s.cpu_proofs(&o);
    let b = CrossCheck::new(CpuBackend::new(), Resilient::new(dev, RecoveryPolicy::default()));
    rounds(&b, &s, &want, &o, 1);
    let races = b.right().device().races();
    assert!(races.is_empty(), "the race detector found: {}", races[0]);
    report("cross-checked round", &b.right().device().gate_stats(), 0);
}

#[test]
fn proofs_larger_than_the_budget_run_alone() {
    let o = options();
    let s = Statements::new(12);
    let Some(dev) = device(1 << 20) else { return };
    let want = s.cpu_proofs(&o);
    let r = Resilient::new(dev, RecoveryPolicy::default());
    rounds(&r, &s, &want, &o, 1);
    let g = r.device().gate_stats();
    report("a 1 MiB budget", &g, 0);
    assert_eq!(g.alone, 8, "every proof is larger than the budget");
    assert!(r.report().is_clean(), "{}", r.report());
}

/// `count` matrices of pseudo-random canonical values, of `shape(k)`
/// (log height, width) each.
fn matrices(count: u64, seed: u64, shape: impl Fn(u64) -> (u32, usize)) -> Vec<ColMatrix> {
    (0..count)
        .map(|k| {
            let (log, width) = shape(k);
            let data = (0..width << log).map(|i| F::new(seed.wrapping_mul(i as u64 + 131 * k + 1) >> 1)).collect();
            ColMatrix::new(width, 1 << log, data)
        })
        .collect()
}

/// Uploads and extends every input at once (a thread and a lane each,
/// lanes from `lane0`) on `dev`, and checks each LDE against `want`.
fn ldes_at_once_equal(dev: &CudaBackend, inputs: &[ColMatrix], want: &[ColMatrix], log_blowup: u32, lane0: u64) {
    use backend_api::{BackendBase, Ctx, NttOps, GENERATOR};
    std::thread::scope(|s| {
        for (k, (m, w)) in inputs.iter().zip(want).enumerate() {
            s.spawn(move || {
                let ctx = Ctx::on("at-once", backend_api::Lane(lane0 + k as u64));
                let lde = dev.coset_lde(&ctx, &dev.upload(&ctx, m).unwrap(), log_blowup, GENERATOR).unwrap();
                assert_eq!(&dev.download(&ctx, &lde).unwrap(), w, "matrix {k}: the LDE differs from the CPU's");
            });
        }
    });
}

fn cpu_ldes(inputs: &[ColMatrix], log_blowup: u32) -> Vec<ColMatrix> {
    use backend_api::{BackendBase, Ctx, NttOps, GENERATOR};
    let (cpu, ctx) = (CpuBackend::new(), Ctx::table("reference"));
    let lde =
        |m| cpu.download(&ctx, &cpu.coset_lde(&ctx, &cpu.upload(&ctx, m).unwrap(), log_blowup, GENERATOR).unwrap());
    inputs.iter().map(|m| lde(m).unwrap()).collect()
}

fn share_rounds() -> usize {
    std::env::var("KILN_SHARE_ROUNDS").ok().and_then(|v| v.parse().ok()).unwrap_or(3)
}

/// A fresh backend's first transforms, started on many threads at once
/// without the race detector (whose locks serialize them): the twiddle
/// tables they share are made by one of them while the others wait for
/// nothing, so they must be complete before anyone else can take them.
/// Each output must equal the CPU's; repeated on `KILN_SHARE_ROUNDS` x 4
/// fresh backends.
#[test]
fn a_fresh_devices_first_transforms_at_once_equal_the_cpu() {
    let inputs = matrices(8, 0x9E37_79B9_7F4A_7C15, |k| (4 + 2 * (k as u32 % 4), 1 + k as usize));
    let want = cpu_ldes(&inputs, 2);
    for _ in 0..4 * share_rounds() {
        let config = CudaConfig { debug_races: false, ..CudaConfig::from_env().expect("KILN_CUDA_* variables") };
        let Ok(dev) = CudaBackend::with_config(0, config) else {
            println!("SKIPPED: no CUDA device");
            return;
        };
        ldes_at_once_equal(&dev, &inputs, &want, 2, 100);
    }
}

/// Uploads larger than a small copy, more at once than there are pinned
/// staging sets: those left without one copy from pageable memory. That
/// copy must be ordered on the upload's stream (the synchronous copy runs
/// on the legacy stream, which ours do not wait for, and returns before
/// its last bytes land: seen as a small table's quotient not of low degree
/// when four proofs started at once). Each LDE must equal the CPU's.
#[test]
fn uploads_past_the_staging_sets_land_before_their_stream_reads_them() {
    let inputs = matrices(12, 0xD1B5_4A32_D192_ED03, |k| (15 + k as u32 % 3, 3 + k as usize % 5));
    let want = cpu_ldes(&inputs, 1);
    let config = CudaConfig { debug_races: false, staging_sets: 1, ..CudaConfig::default() };
    let Ok(dev) = CudaBackend::with_config(0, config) else {
        println!("SKIPPED: no CUDA device");
        return;
    };
    for _ in 0..2 * share_rounds() {
        ldes_at_once_equal(&dev, &inputs, &want, 1, 200);
    }
}
