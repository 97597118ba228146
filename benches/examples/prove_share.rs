//! Issue 12's throughput measurements, each in one process:
//!
//! - `busy [N] [JOBS]`: the single-proof time (five warm proves, one at a
//!   time), then N back-to-back proves on device 0 one at a time and N
//!   with JOBS in flight, each run's unix time window printed for an
//!   external `nvidia-smi` sampler (docs/gpu/share-h200.sh).
//! - `scale [N] [JOBS]`: N proves on device 0, then on devices 0 and 1,
//!   alternating A B B A, with the throughput of each run and their ratio;
//!   every proof must equal the first one-device proof byte for byte.
//!
//! The program defaults to the 2^20-cycle chain (vm/examples/chain.kasm,
//! inputs 262142,3); the CUDA backends run inside `Resilient`, as `kiln
//! prove` runs them.
//!
//! cargo run --release -p benches --features cuda --example prove_share -- busy 10 2 [PROGRAM] [INPUTS]

use backend_cpu::{RecoveryPolicy, Resilient};
use backend_cuda::{CudaBackend, CudaConfig, DeviceSpec};
use benches::ms;
use stark::batch::{prove_spread, BatchConfig, BatchOrder, Statement};
use stark::ProofOptions;
use std::process::ExitCode;
use std::time::{Instant, SystemTime, UNIX_EPOCH};
use vm::{asm, execute, trace, ExecOptions, VmMachine};

type Dev = Resilient<CudaBackend>;

fn unix() -> f64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0.0, |d| d.as_secs_f64())
}

fn open(spec: &str) -> Result<Vec<Dev>, String> {
    let config = CudaConfig::from_env().map_err(|e| e.to_string())?;
    let spec = DeviceSpec::parse(spec).map_err(|e| e.to_string())?;
    let devs = backend_cuda::open_devices(&spec, &config).map_err(|e| format!("no usable CUDA device: {e}"))?;
    Ok(devs.into_iter().map(|d| Resilient::new(d, RecoveryPolicy::default())).collect())
}

/// Proves `n` copies of the statement on `devs`, JOBS at a time each;
/// checks every proof against `want` and returns proofs per second.
fn run(devs: &[&Dev], s: &Statement, n: usize, jobs: usize, want: &[u8], label: &str) -> Result<f64, String> {
    let batch = vec![s.clone(); n];
    let (t0, start) = (unix(), Instant::now());
    let config = BatchConfig { per_backend: jobs, order: BatchOrder::AsGiven };
    let report = prove_spread(devs, &batch, &ProofOptions::default(), config);
    let t1 = unix();
    for (k, p) in report.proofs.iter().enumerate() {
        let got = p.result.as_ref().map_err(|e| format!("{label} proof {k}: {e}"))?.to_bytes();
        if got != want {
            return Err(format!("{label} proof {k} (device {}) differs from the one-device bytes", p.backend));
        }
    }
    let per = report.per_backend(devs.len());
    println!(
        "{label}: {n} proves, {jobs} in flight per device, {:.1} ms wall, {:.2} proofs/s, per device {per:?}, all identical",
        ms(start.elapsed()),
        report.throughput()
    );
    println!("{label} window (unix): {t0:.3} {t1:.3}");
    Ok(report.throughput())
}

fn busy(s: &Statement, n: usize, jobs: usize) -> Result<(), String> {
    let devs = open("0")?;
    let d = &devs[0];
    let o = ProofOptions::default();
    let want = stark::prove(d, s.machine, s.traces.clone(), &s.publics, &o).map_err(|e| e.to_string())?.to_bytes();
    let mut single = vec![];
    for _ in 0..5 {
        let t = Instant::now();
        let p = stark::prove(d, s.machine, s.traces.clone(), &s.publics, &o).map_err(|e| e.to_string())?;
        single.push(ms(t.elapsed()));
        if p.to_bytes() != want {
            return Err("a warm proof differs from the first".into());
        }
    }
    single.sort_by(|a, b| a.total_cmp(b));
    println!("single proof (warm, one at a time): {single:?} ms, median {:.1} ms", single[2]);
    run(&[d], s, n, 1, &want, "one at a time")?;
    run(&[d], s, n, jobs, &want, "concurrent")?;
    let g = d.device().gate_stats();
    println!(
        "gate: {} proofs, {} waited, peak held {} MiB of {} MiB",
        g.claims,
        g.claim_waits,
        g.peak_held >> 20,
        g.budget >> 20
    );
    Ok(())
}

fn scale(s: &Statement, n: usize, jobs: usize) -> Result<(), String> {
    let devs = open("0,1")?;
    let want = stark::prove(&devs[0], s.machine, s.traces.clone(), &s.publics, &ProofOptions::default())
        .map_err(|e| e.to_string())?
        .to_bytes();
    let one: Vec<&Dev> = vec![&devs[0]];
    let two: Vec<&Dev> = devs.iter().collect();
    // Warm the second device (kernels, pool, staging) before timing.
    run(&two, s, 2 * jobs, jobs, &want, "warm-up")?;
    let (mut a, mut b) = (vec![], vec![]);
    for side in ["1 GPU", "2 GPUs", "2 GPUs", "1 GPU"] {
        if side == "1 GPU" {
            a.push(run(&one, s, n, jobs, &want, side)?);
        } else {
            b.push(run(&two, s, n, jobs, &want, side)?);
        }
    }
    let mean = |v: &[f64]| v.iter().sum::<f64>() / v.len() as f64;
    println!("throughput 2 GPUs / 1 GPU (A B B A): {:.2}x", mean(&b) / mean(&a));
    Ok(())
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let result = (|| -> Result<(), String> {
        // The device first: without one, fail before any CPU work.
        open("0")?;
        let mode = args.first().map_or("busy", String::as_str);
        let n: usize = args.get(1).map_or(Ok(10), |v| v.parse()).map_err(|e| format!("N: {e}"))?;
        let jobs: usize = args.get(2).map_or(Ok(2), |v| v.parse()).map_err(|e| format!("JOBS: {e}"))?;
        let path = args.get(3).cloned().unwrap_or_else(|| "vm/examples/chain.kasm".into());
        let inputs = args.get(4).cloned().unwrap_or_else(|| "262142,3".into());
        let src = std::fs::read(&path).map_err(|e| format!("{path}: {e}"))?;
        let program = asm::assemble_bytes(&src).map_err(|e| format!("{path}: {e}"))?;
        let inputs: Vec<_> = inputs
            .split(',')
            .map(|v| v.trim().parse::<u64>().map(backend_api::F::new).map_err(|e| format!("input {v}: {e}")))
            .collect::<Result<_, _>>()?;
        let ex = execute(&program, &inputs, &ExecOptions { record: true, ..Default::default() })
            .map_err(|e| e.to_string())?;
        let machine = VmMachine::new(&program, &ex.inputs, &ex.outputs);
        let traces = trace::generate(&program, &ex).map_err(|e| e.to_string())?;
        let s = Statement { machine: &machine, traces, publics: machine.publics().to_vec() };
        println!("{path} ({} cycles), {} host threads", ex.cycles, rayon::current_num_threads());
        match mode {
            "busy" => busy(&s, n, jobs),
            "scale" => scale(&s, n, jobs),
            other => Err(format!("unknown mode `{other}` (busy or scale)")),
        }
    })();
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}
