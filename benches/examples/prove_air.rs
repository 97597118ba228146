//! Proves the degree-3 cubic AIR at a given size and reports the time per
//! stage, the proof size and the security level. For peak memory, run it
//! under `/usr/bin/time -v`.
//!
//! cargo run --release -p benches --example prove_air -- [LOG_ROWS] [COLUMNS] [BLOWUP] [blake3|keccak]

use backend_api::HashKind;
use backend_cpu::CpuBackend;
use benches::ms;
use stark::examples::Cubic;
use stark::{prove_with_stats, verify, Acceptance, ProofOptions, SingleTable};
use std::process::ExitCode;
use std::time::Instant;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let arg = |i: usize, default: &str| args.get(i).cloned().unwrap_or_else(|| default.to_string());
    let parsed = (|| -> Result<(u32, usize, u64, HashKind), String> {
        let log_n = arg(0, "16").parse().map_err(|e| format!("LOG_ROWS: {e}"))?;
        let width = arg(1, "64").parse().map_err(|e| format!("COLUMNS: {e}"))?;
        let blowup = arg(2, "4").parse().map_err(|e| format!("BLOWUP: {e}"))?;
        let hash = arg(3, "blake3").parse()?;
        if width < 2 || log_n > 24 {
            return Err("need 2+ columns and at most 2^24 rows".into());
        }
        Ok((log_n, width, blowup, hash))
    })();
    let (log_n, width, blowup, hash) = match parsed {
        Ok(v) => v,
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::FAILURE;
        }
    };
    let options = match ProofOptions::default().with_blowup(blowup) {
        Ok(o) => ProofOptions { hash, ..o },
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::FAILURE;
        }
    };
    let air = SingleTable(Cubic::new(width));
    let t0 = Instant::now();
    let (trace, publics) = air.0.trace(log_n, 1);
    let trace_time = t0.elapsed();
    let backend = CpuBackend::new();
    let (proof, stats) = match prove_with_stats(&backend, &air, vec![trace], &publics, &options, None) {
        Ok(v) => v,
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::FAILURE;
        }
    };
    let t1 = Instant::now();
    let verified = verify(&air, &publics, &proof, &Acceptance::Options(options));
    let verify_time = t1.elapsed();
    let security = options.security(log_n + options.log_blowup);
    println!(
        "cubic AIR 2^{log_n} x {width}, blowup {blowup}, {hash}, {} queries, {} grinding bits: {} conjectured bits",
        options.num_queries, options.grinding_bits, security.bits
    );
    println!("threads: {}", rayon_threads());
    println!("trace generation: {} ms", ms(trace_time));
    for (stage, d) in stats.per_stage() {
        println!("  {stage:<16} {:>10} ms", ms(d));
    }
    println!("prove: {} ms", ms(stats.total));
    println!("proof size: {} bytes", proof.to_bytes().len());
    println!("verify: {} ms ({})", ms(verify_time), if verified.is_ok() { "ok" } else { "FAILED" });
    if verified.is_ok() {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}

/// The worker threads the prover actually uses (RAYON_NUM_THREADS, else
/// the available parallelism).
fn rayon_threads() -> usize {
    rayon::current_num_threads()
}
