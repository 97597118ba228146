//! Traces bigger than the card: proves the degree-3 cubic AIR (2^LOG_ROWS
//! x COLUMNS, BLOWUP) on CUDA with every LDE kept on the device, and again
//! under a device budget of BUDGET_GIB with each residency of `modes=`
//! (`auto`, the default: `stark::Residency::auto`'s choice; `recompute`;
//! `spill`, pieces sized for the budget). A budgeted run's pool is capped
//! at the budget and declines are not recovered (strict), so a proof from
//! it stayed under the budget. With `cpu`, the CPU reference proves it
//! too. Prints time, device peak (the pool's high-water mark) and bytes
//! moved per run, and whether every proof has the same bytes; `reps=N`
//! proves N times on each device.
//!
//! cargo run --release -p benches --features cuda --example residency -- LOG_ROWS COLUMNS BLOWUP BUDGET_GIB [cpu] [modes=auto,recompute,spill] [reps=N]

use backend_api::{Backend, ColMatrix, F};
use backend_cpu::{CpuBackend, OnDecline, RecoveryPolicy, Resilient};
use backend_cuda::{CudaBackend, CudaConfig};
use stark::examples::Cubic;
use stark::{prove_with_settings, verify, Acceptance, ProofOptions, ProveSettings, Residency, SingleTable};
use std::process::ExitCode;
use std::time::Instant;

const GIB: f64 = (1u64 << 30) as f64;

struct Statement {
    air: SingleTable<Cubic>,
    trace: ColMatrix,
    publics: Vec<F>,
    options: ProofOptions,
}

/// Proves on `b` with `residency`; returns the proof's bytes, the seconds
/// and the bytes spilling moved, and prints the prover's rounds.
fn prove<B: Backend>(b: &B, s: &Statement, residency: Residency) -> Result<(Vec<u8>, f64, u64), String> {
    let settings = ProveSettings { residency, ..ProveSettings::default() };
    let t0 = Instant::now();
    let (proof, stats) = prove_with_settings(b, &s.air, vec![s.trace.clone()], &s.publics, &s.options, &settings)
        .map_err(|e| format!("{residency:?}: {e}"))?;
    let secs = t0.elapsed().as_secs_f64();
    verify(&s.air, &s.publics, &proof, &Acceptance::Options(s.options)).map_err(|e| format!("verify: {e}"))?;
    let rounds: Vec<String> = stats.rounds.iter().map(|(r, d)| format!("{r} {:.2} s", d.as_secs_f64())).collect();
    println!("  rounds: {}", rounds.join(", "));
    if stats.spilled_bytes > 0 {
        let t = stats.spill_times;
        let (up, down, host) = (t.upload.as_secs_f64(), t.download.as_secs_f64(), t.host.as_secs_f64());
        println!(
            "  moving: uploads {up:.2} s, downloads {down:.2} s (device waits included), host gathers {host:.2} s"
        );
    }
    Ok((proof.to_bytes(), secs, stats.spilled_bytes))
}

/// A fresh device (the pool starts empty), capped at `budget` when given,
/// with the AIR's composition kernel compiled before any timing.
fn device(budget: Option<u64>, air: &SingleTable<Cubic>) -> Result<Resilient<CudaBackend>, String> {
    let config = CudaConfig { memory_budget_bytes: budget, pool_limit_bytes: budget, ..CudaConfig::default() };
    let d = CudaBackend::with_config(0, config).map_err(|e| e.to_string())?;
    let t0 = Instant::now();
    d.prepare(&[(stark::Air::constraints(&air.0), None)]).map_err(|e| e.to_string())?;
    println!("  composition kernel compiled or loaded in {:.1} s (not in the times below)", t0.elapsed().as_secs_f64());
    Ok(Resilient::new(d, RecoveryPolicy { retry: true, on_decline: OnDecline::Strict }))
}

fn report(what: &str, secs: f64, peak: Option<u64>, moved: u64, same: bool) {
    let peak = peak.map_or("-".into(), |p| format!("{:.2} GiB", p as f64 / GIB));
    println!(
        "{what:<34} {secs:>8.2} s   device peak {peak:>10}   moved {:>7.2} GiB   bytes {}",
        moved as f64 / GIB,
        if same { "identical" } else { "DIFFER" }
    );
}

fn run(args: &[String]) -> Result<bool, String> {
    let num = |i: usize, what: &str| -> Result<u64, String> {
        args.get(i).ok_or(format!("missing {what}"))?.parse().map_err(|e| format!("{what}: {e}"))
    };
    let (log_n, width, blowup, budget_gib) =
        (num(0, "LOG_ROWS")?, num(1, "COLUMNS")?, num(2, "BLOWUP")?, num(3, "BUDGET_GIB")?);
    let with_cpu = args[4.min(args.len())..].iter().any(|a| a == "cpu");
    let modes: Vec<&str> =
        args.iter().find_map(|a| a.strip_prefix("modes=")).map_or(vec!["auto"], |m| m.split(',').collect());
    let reps: usize = match args.iter().find_map(|a| a.strip_prefix("reps=")) {
        Some(r) => r.parse().ok().filter(|&r| r > 0).ok_or(format!("reps={r}: need a positive count"))?,
        None => 1,
    };
    if width < 2 || log_n > 24 {
        return Err("need 2+ columns and at most 2^24 rows".into());
    }
    let options = ProofOptions::default().with_blowup(blowup).map_err(|e| e.to_string())?;
    let air = SingleTable(Cubic::new(width as usize));
    let t0 = Instant::now();
    let (trace, publics) = air.0.trace(log_n as u32, 1);
    let s = Statement { air, trace, publics, options };
    let trace_bytes = 8 * (s.trace.height() * s.trace.width()) as u64;
    let set =
        stark::device_set(&s.air, std::slice::from_ref(&s.trace), &s.publics, &options).map_err(|e| e.to_string())?;
    println!(
        "cubic AIR 2^{log_n} x {width}, blowup {blowup}: trace {:.2} GiB (built in {:.1} s), device set kept {:.2} GiB",
        trace_bytes as f64 / GIB,
        t0.elapsed().as_secs_f64(),
        set.bytes() as f64 / GIB
    );
    let mut all_same = true;
    let mut want: Option<Vec<u8>> = None;
    let mut check = |bytes: Vec<u8>| {
        let same = want.get_or_insert_with(|| bytes.clone()) == &bytes;
        all_same &= same;
        same
    };
    if with_cpu {
        let (bytes, secs, _) = prove(&CpuBackend::new(), &s, Residency::Keep)?;
        let same = check(bytes);
        report("cpu reference, kept", secs, None, 0, same);
    }
    let budget = budget_gib << 30;
    let mut runs = vec![("cuda, whole card, kept", None, Residency::Keep)];
    for mode in modes {
        let residency = match mode {
            "auto" => Residency::auto(&set, budget),
            "recompute" => Residency::recompute_all_within(&set, budget),
            "spill" => Residency::spill_all_within(&set, budget),
            other => return Err(format!("unknown mode {other} (auto, recompute, spill)")),
        };
        runs.push(("cuda, budget", Some(budget), residency));
    }
    for (what, cap, residency) in runs {
        let d = device(cap, &s.air)?;
        let what = match (cap, residency) {
            (Some(_), Residency::Spill { chunk_bytes, .. }) => {
                format!("{what} {budget_gib} GiB, spilled ({:.1} GiB pieces)", chunk_bytes as f64 / GIB)
            }
            (Some(_), Residency::Keep) => format!("{what} {budget_gib} GiB, kept"),
            (Some(_), Residency::Recompute { log_split, .. }) => {
                format!("{what} {budget_gib} GiB, recomputed ({} pieces a coset)", 1u32 << log_split)
            }
            (None, _) => what.to_string(),
        };
        // Repeats run on the same device, warm: its pool and kernels.
        for _ in 0..reps {
            let (bytes, secs, moved) = prove(&d, &s, residency)?;
            let peak = d.device().pool_usage(false).ok().map(|u| u.1);
            let same = check(bytes);
            report(&what, secs, peak, moved, same);
        }
        println!("  recovery: {}", d.report());
    }
    Ok(all_same)
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match run(&args) {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => {
            eprintln!("error: the proofs differ");
            ExitCode::FAILURE
        }
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}
