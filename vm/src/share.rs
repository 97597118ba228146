//! `kiln prove` over many proofs and devices (not part of the library):
//! several programs, `--repeat N`, `--jobs` proofs in flight per device,
//! `--devices 0,1|all`, `--vram-budget`, `--debug-races`. A batch proves
//! every statement through `stark::batch`, verifies each proof, checks that
//! repeats of one program gave the same bytes, and prints each proof's
//! device and time, the throughput, each device's memory gate (waits, peak
//! held) and the race detector's verdict.

use crate::{load_program, parse_inputs, proof_options, CliResult, ProveArgs};
use backend_api::F;
use backend_cpu::{CpuBackend, CrossCheck};
use clap::Args;
use serde_json::{json, Value};
use stark::batch::{prove_spread, BatchConfig, BatchOrder, BatchReport, Statement};
use stark::verifier::Acceptance;
use stark::ProofOptions;
use std::path::PathBuf;
use std::time::Instant;
use vm::bundle::{hex, ProofBundle};
use vm::{examples, execute, trace, ExecOptions, Program, VmMachine};

/// The batch and device flags of `kiln prove`.
#[derive(Args, Clone, Debug, Default)]
pub struct ShareArgs {
    /// More programs to prove, with the same inputs (all of them run as one batch)
    #[arg(value_name = "MORE")]
    pub more: Vec<PathBuf>,
    /// Prove each program this many times, as one batch, and print the throughput
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u64).range(1..=100_000))]
    pub repeat: u64,
    /// Proofs in flight at once on each device in a batch (segments, with --segment-cycles)
    #[arg(long, default_value_t = 2, value_parser = clap::value_parser!(u64).range(1..=64))]
    pub jobs: u64,
    /// CUDA devices to prove on, by ordinal: 0,1 or all (several devices run as one batch); named, a device that cannot open is an error, even with --backend auto
    #[arg(long, value_name = "LIST")]
    pub devices: Option<String>,
    /// Device memory proofs may hold at once, per device: bytes, or with a K, M, G or T suffix (default: free memory at start less 2 GiB)
    #[arg(long, value_name = "BYTES", value_parser = parse_bytes)]
    pub vram_budget: Option<u64>,
    /// Check that every free and reuse of device memory waits for every stream that used it; a race fails the prove, naming buffer, stage and table (slower)
    #[arg(long)]
    pub debug_races: bool,
    /// In a batch, write each proof file into this directory (NNN-PROGRAM.proof)
    #[arg(long, value_name = "DIR")]
    pub out_dir: Option<PathBuf>,
}

/// `1073741824`, `512M`, `8G`, `1.5G` (powers of 1024).
pub fn parse_bytes(s: &str) -> Result<u64, String> {
    let t = s.trim();
    let (num, unit) = match t.char_indices().find(|(_, c)| c.is_ascii_alphabetic()) {
        Some((i, _)) => (&t[..i], t[i..].to_ascii_uppercase()),
        None => (t, String::new()),
    };
    let shift = match unit.trim_end_matches("IB").trim_end_matches('B') {
        "" => 0,
        "K" => 10,
        "M" => 20,
        "G" => 30,
        "T" => 40,
        _ => return Err(format!("`{s}`: expected bytes, or a number with K, M, G or T")),
    };
    let v: f64 = num.trim().parse().map_err(|_| format!("`{s}`: expected bytes, or a number with K, M, G or T"))?;
    let bytes = v * (1u64 << shift) as f64;
    if !(1.0..=u64::MAX as f64).contains(&bytes) {
        return Err(format!("`{s}`: out of range"));
    }
    Ok(bytes as u64)
}

/// Runs `kiln prove` as a batch when asked for one (several programs,
/// repeats, several devices, races checked, or an output directory);
/// otherwise checks that the device flags fit the backend and returns
/// `None`, for the single prove.
pub fn dispatch(a: &ProveArgs) -> Option<CliResult<()>> {
    if is_batch(a) {
        return Some(cmd_prove_batch(a));
    }
    device_flags_fit(a).err().map(Err)
}

/// Whether `kiln prove` is a batch (see [`dispatch`]).
pub fn is_batch(a: &ProveArgs) -> bool {
    let s = &a.share;
    let several = s.devices.as_deref().is_some_and(|d| d.trim().eq_ignore_ascii_case("all") || d.contains(','));
    !s.more.is_empty() || s.repeat > 1 || several || s.debug_races || s.out_dir.is_some()
}

/// `--devices` and `--vram-budget` name CUDA devices: refused with the cpu
/// backend (with `auto` they apply when a device is used, and a named
/// device that cannot open fails the run).
fn device_flags_fit(a: &ProveArgs) -> CliResult<()> {
    if matches!(a.backend, crate::BackendChoice::Cpu) {
        if a.share.devices.is_some() {
            return Err("--devices selects CUDA devices; the cpu backend has none".into());
        }
        if a.share.vram_budget.is_some() {
            return Err("--vram-budget limits CUDA device memory; the cpu backend has none".into());
        }
    }
    if !matches!(a.backend, crate::BackendChoice::Cpu | crate::BackendChoice::Auto) && a.memory_budget.is_some() {
        return Err("--memory-budget sizes the cpu backend's memory; a GPU's is --vram-budget".into());
    }
    Ok(())
}

/// The CUDA configuration of a run: the `KILN_CUDA_*` tuning variables,
/// then the flags.
#[cfg(feature = "cuda")]
pub fn cuda_config(s: &ShareArgs) -> CliResult<backend_cuda::CudaConfig> {
    let mut c = backend_cuda::CudaConfig::from_env().map_err(|e| e.to_string())?;
    c.memory_budget_bytes = s.vram_budget.or(c.memory_budget_bytes);
    c.debug_races |= s.debug_races;
    Ok(c)
}

/// The device list of a run (`--devices`, default device 0).
#[cfg(feature = "cuda")]
pub fn device_spec(s: &ShareArgs) -> CliResult<backend_cuda::DeviceSpec> {
    backend_cuda::DeviceSpec::parse(s.devices.as_deref().unwrap_or("0")).map_err(|e| format!("--devices: {e}"))
}

/// One program of a batch, executed and traced.
struct Job {
    name: String,
    program: Program,
    machine: VmMachine,
    traces: Vec<backend_api::ColMatrix>,
}

fn jobs(a: &ProveArgs) -> CliResult<Vec<Job>> {
    let mut inputs = parse_inputs(&a.prog.inputs)?;
    if a.program.is_none() && a.prog.inputs.is_empty() {
        inputs = examples::DEFAULT_INPUTS.iter().map(|&v| F::new(v)).collect();
    }
    let paths: Vec<Option<&std::path::Path>> =
        std::iter::once(a.program.as_deref()).chain(a.share.more.iter().map(|p| Some(p.as_path()))).collect();
    let mut out = vec![];
    for path in paths {
        let (name, program) = load_program(path)?;
        let opts = ExecOptions { max_cycles: a.prog.max_cycles, record: true, ..Default::default() };
        let ex = execute(&program, &inputs, &opts).map_err(|e| format!("{name}: execution failed: {e}"))?;
        let traces = trace::generate(&program, &ex).map_err(|e| format!("{name}: trace generation failed: {e}"))?;
        let machine = VmMachine::new(&program, &ex.inputs, &ex.outputs);
        out.push(Job { name, program, machine, traces });
    }
    Ok(out)
}

/// `kiln prove` as a batch (see the module doc).
pub fn cmd_prove_batch(a: &ProveArgs) -> CliResult<()> {
    let opts = proof_options(a)?;
    if let Some(d) = &a.share.out_dir {
        if !d.is_dir() {
            return Err(format!("--out-dir `{}` is not a directory", d.display()));
        }
    }
    let jobs = jobs(a)?;
    let statements: Vec<(usize, Statement)> = (0..a.share.repeat)
        .flat_map(|_| jobs.iter().enumerate())
        .map(|(j, job)| {
            let s = Statement {
                machine: &job.machine,
                traces: job.traces.clone(),
                publics: job.machine.publics().to_vec(),
            };
            (j, s)
        })
        .collect();
    let config = BatchConfig { per_backend: a.share.jobs as usize, order: BatchOrder::HeaviestFirst };
    run_on_backends(a, &jobs, &statements, &opts, config)
}

fn run_on_backends(
    a: &ProveArgs,
    jobs: &[Job],
    statements: &[(usize, Statement)],
    opts: &ProofOptions,
    config: BatchConfig,
) -> CliResult<()> {
    let batch: Vec<Statement> = statements.iter().map(|(_, s)| s.clone()).collect();
    let which: Vec<usize> = statements.iter().map(|(j, _)| *j).collect();
    let cpu_only = matches!(a.backend, crate::BackendChoice::Cpu);
    #[cfg(feature = "cuda")]
    if !cpu_only {
        match cuda_backends(a) {
            Ok(devs) => return cuda_batch(a, jobs, &which, &batch, opts, config, devs),
            Err(e) if matches!(a.backend, crate::BackendChoice::Cuda) || a.share.devices.is_some() => {
                return Err(format!("the cuda backend cannot run here: {e}"))
            }
            Err(_) => {}
        }
    }
    device_flags_fit(a)?;
    let label = match (cpu_only, cfg!(feature = "cuda")) {
        (true, _) => "cpu",
        (false, true) => "cpu (auto: no usable CUDA device)",
        (false, false) => "cpu (auto: this build has no GPU backend)",
    };
    if a.cross_check {
        let b = CrossCheck::new(CpuBackend::new(), CpuBackend::new());
        finish(
            a,
            jobs,
            &which,
            &batch,
            opts,
            &format!("{label}, cross-checked"),
            &prove_spread(&[&b], &batch, opts, config),
            vec![],
        )
    } else {
        let b = CpuBackend::new();
        finish(a, jobs, &which, &batch, opts, label, &prove_spread(&[&b], &batch, opts, config), vec![])
    }
}

#[cfg(feature = "cuda")]
fn cuda_backends(a: &ProveArgs) -> Result<Vec<backend_cuda::CudaBackend>, String> {
    let config = cuda_config(&a.share)?;
    backend_cuda::open_devices(&device_spec(&a.share)?, &config).map_err(|e| e.to_string())
}

/// The batch on CUDA devices, each in `Resilient` (and cross-checked
/// against the CPU when asked); device lines report the gates and races.
#[cfg(feature = "cuda")]
#[allow(clippy::too_many_arguments)]
fn cuda_batch(
    a: &ProveArgs,
    jobs: &[Job],
    which: &[usize],
    batch: &[Statement],
    opts: &ProofOptions,
    config: BatchConfig,
    devs: Vec<backend_cuda::CudaBackend>,
) -> CliResult<()> {
    use backend_cpu::Resilient;
    let names: Vec<String> = devs.iter().map(|d| format!("{} ({})", d.device().ordinal, d.device().name)).collect();
    let label = format!("cuda: device {}", names.join(", "));
    let policy = crate::recovery_policy(a.on_decline);
    let wrapped: Vec<Resilient<backend_cuda::CudaBackend>> =
        devs.into_iter().map(|d| Resilient::new(d, policy)).collect();
    if a.cross_check {
        let checked: Vec<_> = wrapped.into_iter().map(|r| CrossCheck::new(CpuBackend::new(), r)).collect();
        let report = prove_spread(&checked.iter().collect::<Vec<_>>(), batch, opts, config);
        let devices = checked.iter().map(|c| device_json(a, c.right())).collect();
        finish(a, jobs, which, batch, opts, &format!("{label}, cross-checked"), &report, devices)
    } else {
        let report = prove_spread(&wrapped.iter().collect::<Vec<_>>(), batch, opts, config);
        let devices = wrapped.iter().map(|r| device_json(a, r)).collect();
        finish(a, jobs, which, batch, opts, &label, &report, devices)
    }
}

/// One device's gate, pool and race report.
#[cfg(feature = "cuda")]
fn device_json(a: &ProveArgs, r: &backend_cpu::Resilient<backend_cuda::CudaBackend>) -> Value {
    let d = r.device();
    let g = d.gate_stats();
    let pool_high = d.pool_usage(false).map_or(0, |u| u.1);
    let races: Vec<String> = d.races().iter().map(|r| r.to_string()).collect();
    json!({
        "ordinal": d.device().ordinal, "uuid": d.device().uuid, "budget_bytes": g.budget, "proofs_admitted": g.claims,
        "gate_waits": g.claim_waits, "ran_alone": g.alone, "peak_held_bytes": g.peak_held,
        "peak_owned_bytes": g.peak_owned, "pool_high_water_bytes": pool_high,
        "model_overruns": g.overruns + g.stage_overruns, "races_checked": a.share.debug_races, "races": races,
        "recovery": r.report().to_string(),
    })
}

/// Verifies, compares repeats, writes files, prints.
#[allow(clippy::too_many_arguments)]
fn finish(
    a: &ProveArgs,
    jobs: &[Job],
    which: &[usize],
    batch: &[Statement],
    opts: &ProofOptions,
    label: &str,
    report: &BatchReport,
    devices: Vec<Value>,
) -> CliResult<()> {
    let t0 = Instant::now();
    let mut first: Vec<Option<Vec<u8>>> = vec![None; jobs.len()];
    let mut rows = vec![];
    for (k, p) in report.proofs.iter().enumerate() {
        let job = &jobs[which[k]];
        let proof = p.result.as_ref().map_err(|e| format!("{} (proof {k}): proving failed: {e}", job.name))?;
        stark::verify(&job.machine, &batch[k].publics, proof, &Acceptance::Options(*opts))
            .map_err(|e| format!("{} (proof {k}): the proof did not verify: {e}", job.name))?;
        let bytes = proof.to_bytes();
        match &first[which[k]] {
            Some(b) if *b != bytes => {
                return Err(format!("{}: proof {k} differs from the program's first proof", job.name))
            }
            Some(_) => {}
            None => first[which[k]] = Some(bytes.clone()),
        }
        if let Some(dir) = &a.share.out_dir {
            let stem = job
                .name
                .rsplit('/')
                .next()
                .unwrap_or("program")
                .trim_end_matches(".kasm")
                .replace(['<', '>', ':', ' '], "");
            let bundle =
                ProofBundle { program: job.program.clone(), publics: batch[k].publics.clone(), proof: proof.clone() };
            crate::outfile::OutFile::create(&dir.join(format!("{k:03}-{stem}.proof")))?.write(&bundle.to_bytes())?;
        }
        rows.push(
            json!({"proof": k, "program": job.name, "hash": hex(blake3::hash(&bytes).as_bytes()), "device": p.backend,
            "start_ms": p.started.as_secs_f64() * 1e3, "ms": p.elapsed.as_secs_f64() * 1e3}),
        );
    }
    let races: usize = devices.iter().map(|d| d["races"].as_array().map_or(0, |r| r.len())).sum();
    let v = json!({
        "backend": label, "proofs": rows, "count": report.proofs.len(), "jobs_per_device": a.share.jobs,
        "wall_ms": report.wall.as_secs_f64() * 1e3, "proofs_per_second": report.throughput(),
        "per_device": report.per_backend(devices.len().max(1)), "devices": devices,
        "verified": true, "repeats_identical": true, "verify_ms": t0.elapsed().as_secs_f64() * 1e3,
    });
    if a.json {
        say!("{v}");
    } else {
        print_text(&v);
    }
    if races > 0 {
        return Err(format!("the race detector found {races} race(s): {}", v["devices"][0]["races"][0]));
    }
    Ok(())
}

fn print_text(v: &Value) {
    say!("backend   {}", v["backend"].as_str().unwrap_or(""));
    for p in v["proofs"].as_array().into_iter().flatten() {
        say!(
            "proof {:>3} {:<28} device {} at {:>8.1} ms, {:>8.1} ms, proof hash {}",
            p["proof"],
            p["program"].as_str().unwrap_or(""),
            p["device"],
            p["start_ms"].as_f64().unwrap_or(0.0),
            p["ms"].as_f64().unwrap_or(0.0),
            &p["hash"].as_str().unwrap_or("")[..16]
        );
    }
    for d in v["devices"].as_array().into_iter().flatten() {
        let mib = |k: &str| d[k].as_u64().unwrap_or(0) >> 20;
        let races = match (d["races_checked"].as_bool(), d["races"].as_array().map_or(0, Vec::len)) {
            (Some(true), 0) => "races checked: none".to_string(),
            (Some(true), n) => format!("races checked: {n} FOUND"),
            _ => "races not checked".to_string(),
        };
        say!(
            "device {}  budget {} MiB, {} proofs admitted, {} waited, {} alone; peak held {} MiB, pool high-water {} MiB; {}; {}",
            d["ordinal"],
            mib("budget_bytes"),
            d["proofs_admitted"],
            d["gate_waits"],
            d["ran_alone"],
            mib("peak_held_bytes"),
            mib("pool_high_water_bytes"),
            races,
            d["recovery"].as_str().unwrap_or("")
        );
    }
    say!(
        "batch     {} proofs in {:.1} ms ({} in flight per device): {:.2} proofs/s; all verified, repeats identical",
        v["count"],
        v["wall_ms"].as_f64().unwrap_or(0.0),
        v["jobs_per_device"],
        v["proofs_per_second"].as_f64().unwrap_or(0.0)
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn byte_sizes_parse_with_binary_suffixes() {
        assert_eq!(parse_bytes("1024"), Ok(1024));
        assert_eq!(parse_bytes("8G"), Ok(8 << 30));
        assert_eq!(parse_bytes("512mib"), Ok(512 << 20));
        assert_eq!(parse_bytes("1.5K"), Ok(1536));
        assert_eq!(parse_bytes(" 2 GB "), Ok(2 << 30));
        for bad in ["", "G", "12Q", "-1G", "0", "1e30T"] {
            assert!(parse_bytes(bad).is_err(), "{bad}");
        }
    }
}
