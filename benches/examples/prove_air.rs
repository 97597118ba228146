//! Proves the degree-3 cubic AIR at a given size and reports the time per
//! stage, the proof size and the security level. With REPEATS > 1 the
//! statement is proved that many times on one backend (the first prove
//! warms it up) and the per-stage times are those of the fastest prove.
//! For peak memory, run it under `/usr/bin/time -v`. The CUDA backend
//! takes its tuning from the `KILN_CUDA_*` variables; with `pinned` it
//! proves from a trace pinned in place (`BackendBase::pin`, paid once
//! before the proves), so the upload skips the staging copy. With
//! `KILN_CUDA_TIMELINE=1` one more prove follows, its device time by stage.
//!
//! cargo run --release -p benches [--features cuda] --example prove_air -- [LOG_ROWS] [COLUMNS] [BLOWUP] [blake3|keccak] [cpu|cuda] [REPEATS] [pageable|pinned]

use backend_api::{Backend, ColMatrix, HashKind, F};
use backend_cpu::CpuBackend;
use benches::ms;
use stark::examples::Cubic;
use stark::{prove_with_stats, verify, Acceptance, ProofOptions, ProveStats, SingleTable};
use std::process::ExitCode;
use std::time::Instant;

struct Args {
    log_n: u32,
    width: usize,
    blowup: u64,
    hash: HashKind,
    backend: String,
    repeats: usize,
    pinned: bool,
}

fn parse(args: &[String]) -> Result<Args, String> {
    let arg = |i: usize, default: &str| args.get(i).cloned().unwrap_or_else(|| default.to_string());
    let log_n = arg(0, "16").parse().map_err(|e| format!("LOG_ROWS: {e}"))?;
    let width = arg(1, "64").parse().map_err(|e| format!("COLUMNS: {e}"))?;
    let blowup = arg(2, "4").parse().map_err(|e| format!("BLOWUP: {e}"))?;
    let hash = arg(3, "blake3").parse()?;
    let backend = arg(4, "cpu");
    let repeats = arg(5, "1").parse().map_err(|e| format!("REPEATS: {e}"))?;
    let pinned = match arg(6, "pageable").as_str() {
        "pageable" => false,
        "pinned" => true,
        other => return Err(format!("{other}: expected pageable or pinned")),
    };
    if width < 2 || log_n > 24 || repeats == 0 {
        return Err("need 2+ columns, at most 2^24 rows and 1+ repeats".into());
    }
    if pinned && backend != "cuda" {
        return Err("a pinned trace needs the cuda backend".into());
    }
    Ok(Args { log_n, width, blowup, hash, backend, repeats, pinned })
}

/// Proves `repeats` times; the fastest prove's stats, every prove's time
/// and the last proof's bytes.
fn prove_on<B: Backend>(
    b: &B,
    air: &SingleTable<Cubic>,
    trace: &ColMatrix,
    publics: &[F],
    options: &ProofOptions,
    repeats: usize,
) -> Result<(ProveStats, Vec<f64>, stark::Proof), String> {
    let mut best: Option<ProveStats> = None;
    let (mut totals, mut last) = (Vec::new(), None);
    for _ in 0..repeats {
        let (proof, stats) =
            prove_with_stats(b, air, vec![trace.clone()], publics, options, None).map_err(|e| e.to_string())?;
        totals.push(ms(stats.total));
        if best.as_ref().is_none_or(|s| stats.total < s.total) {
            best = Some(stats);
        }
        last = Some(proof);
    }
    Ok((best.expect("repeats >= 1"), totals, last.expect("repeats >= 1")))
}

fn run(a: &Args) -> Result<bool, String> {
    let options =
        ProofOptions { hash: a.hash, ..ProofOptions::default().with_blowup(a.blowup).map_err(|e| e.to_string())? };
    let air = SingleTable(Cubic::new(a.width));
    let t0 = Instant::now();
    let (trace, publics) = air.0.trace(a.log_n, 1);
    let trace_time = t0.elapsed();
    let (stats, totals, proof) = match a.backend.as_str() {
        "cpu" => prove_on(&CpuBackend::new(), &air, &trace, &publics, &options, a.repeats)?,
        #[cfg(feature = "cuda")]
        "cuda" => {
            let config = backend_cuda::CudaConfig::from_env().map_err(|e| e.to_string())?;
            let d = backend_cuda::CudaBackend::with_config(0, config).map_err(|e| e.to_string())?;
            // The proves' clones of the trace share its pinned buffer.
            let ctx = backend_api::Ctx::table("trace");
            let pin = || backend_api::BackendBase::pin(&d, &ctx, &trace);
            let _pinned = a.pinned.then(pin).transpose().map_err(|e| e.to_string())?;
            let proved = prove_on(&d, &air, &trace, &publics, &options, a.repeats)?;
            if config.timeline {
                // One more prove on its own timeline.
                d.timeline().map_err(|e| e.to_string())?;
                let (stats, _, _) = prove_on(&d, &air, &trace, &publics, &options, 1)?;
                let report = d.timeline().map_err(|e| e.to_string())?.unwrap_or_default();
                print_timeline(&report, ms(stats.total));
            }
            proved
        }
        other => return Err(format!("backend {other}: expected cpu, or cuda in a --features cuda build")),
    };
    let t1 = Instant::now();
    let verified = verify(&air, &publics, &proof, &Acceptance::Options(options));
    let verify_time = t1.elapsed();
    let security = options.security(a.log_n + options.log_blowup);
    println!(
        "cubic AIR 2^{} x {}, blowup {}, {}, {} queries, {} grinding bits: {} conjectured bits",
        a.log_n, a.width, a.blowup, a.hash, options.num_queries, options.grinding_bits, security.bits
    );
    let source = if a.pinned { ", trace pinned" } else { "" };
    println!("backend: {}{source}; host threads: {}", a.backend, rayon::current_num_threads());
    println!("trace generation: {} ms", ms(trace_time));
    for (stage, d) in stats.per_stage() {
        println!("  {stage:<16} {:>10} ms", ms(d));
    }
    let rounds: Vec<String> = stats.rounds.iter().map(|(r, d)| format!("{r} {}", ms(*d))).collect();
    let in_rounds: std::time::Duration = stats.rounds.iter().map(|(_, d)| *d).sum();
    println!("rounds: {}; set-up {} ms", rounds.join(", "), ms(stats.total.saturating_sub(in_rounds)));
    let all: Vec<String> = totals.iter().map(|t| t.to_string()).collect();
    println!("prove: {} ms (every prove: {} ms)", ms(stats.total), all.join(", "));
    println!("proof size: {} bytes", proof.to_bytes().len());
    println!("verify: {} ms ({})", ms(verify_time), if verified.is_ok() { "ok" } else { "FAILED" });
    Ok(verified.is_ok())
}

/// The device timeline of one prove (`KILN_CUDA_TIMELINE=1`).
#[cfg(feature = "cuda")]
fn print_timeline(t: &backend_cuda::TimelineReport, prove_ms: f64) {
    println!(
        "device timeline of one more prove ({prove_ms} ms): operations span {:.2} ms, the device busy {:.2} ms of it",
        t.window_ms, t.busy_ms
    );
    for s in &t.stages {
        let stage = s.stage.to_string();
        println!("  {stage:<18} {:>4} ops, host {:>8.3} ms, device {:>8.3} ms", s.ops, s.host_ms, s.device_ms);
    }
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match parse(&args).and_then(|a| run(&a)) {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::FAILURE,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}
