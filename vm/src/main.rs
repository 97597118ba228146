//! `kiln`: run, prove and verify programs of the Kiln VM.
//!
//! Every failure is one line on stderr and a non-zero exit; output files
//! are checked before any work and written through a temporary file
//! beside the target (see `outfile`), so a failed command leaves no
//! partial file and never replaces a source, a device or another output.

mod outfile;

use backend_api::{Backend, HashKind, F};
#[cfg(feature = "cuda")]
use backend_cpu::Resilient;
use backend_cpu::{CpuBackend, CrossCheck, OnDecline, RecoveryPolicy, RecoveryReport};
use clap::error::{ContextKind, ContextValue, ErrorKind};
use clap::{Args, Parser, Subcommand, ValueEnum};
use indicatif::{ProgressBar, ProgressStyle};
use outfile::OutFile;
use serde_json::{json, Value};
use stark::verifier::Acceptance;
use stark::{ProofOptions, ProveObserver, Security, StageTiming};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::{Duration, Instant};
use vm::bundle::{Expected, ProofBundle, Rejection};
use vm::exec::DEFAULT_MAX_CYCLES;
use vm::{asm, examples, execute, trace, ExecOptions, Program, VmMachine};

#[derive(Parser)]
#[command(name = "kiln", version, about = "Run, prove and verify programs of the Kiln VM")]
struct Cli {
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Subcommand)]
enum Cmd {
    /// Execute a program, prove the run, verify the proof, write the proof file
    Prove(ProveArgs),
    /// Verify a proof file written by `kiln prove`
    Verify(VerifyArgs),
    /// Execute a program only: print its outputs and cycle count
    Run(RunArgs),
    /// List the proving backends in this build and the devices they see
    Devices {
        #[arg(long)]
        json: bool,
    },
}

#[derive(Args)]
struct ProgramArgs {
    /// Public inputs, read in order by `read` (repeat the flag or separate with commas)
    #[arg(long = "input", value_name = "VALUE", value_delimiter = ',', allow_hyphen_values = true)]
    inputs: Vec<String>,
    /// Stop with an error after this many cycles
    #[arg(long, default_value_t = DEFAULT_MAX_CYCLES)]
    max_cycles: u64,
}

#[derive(Clone, Copy, PartialEq, Eq, ValueEnum)]
enum BackendChoice {
    Auto,
    Cpu,
    Cuda,
    Wgpu,
}

#[derive(Clone, Copy, PartialEq, Eq, ValueEnum)]
enum DeclineChoice {
    Recompute,
    Strict,
}

#[derive(Clone, Copy, PartialEq, Eq, ValueEnum)]
enum HashChoice {
    Blake3,
    Keccak,
}

fn default_options() -> ProofOptions {
    ProofOptions::default()
}

#[derive(Args)]
struct ProveArgs {
    /// The assembly file; without it, the embedded default program (fibonacci, input 1000 unless --input is given)
    program: Option<PathBuf>,
    #[command(flatten)]
    prog: ProgramArgs,
    #[command(flatten)]
    share: share::ShareArgs,
    /// auto: the GPU when this build has one and a device is usable, else the CPU
    #[arg(long, value_enum, default_value_t = BackendChoice::Auto)]
    backend: BackendChoice,
    /// Run the CPU reference beside the backend and stop at the first stage, table, column and row that differ
    #[arg(long)]
    cross_check: bool,
    /// When the device declines a stage twice (after draining and retrying): recompute it on the CPU, or fail
    #[arg(long, value_enum, default_value_t = DeclineChoice::Recompute)]
    on_decline: DeclineChoice,
    /// Reed-Solomon blowup: 2, 4, 8 or 16
    #[arg(long, default_value_t = default_options().blowup())]
    blowup: u64,
    /// FRI queries
    #[arg(long, default_value_t = default_options().num_queries)]
    queries: usize,
    /// Proof-of-work bits
    #[arg(long, default_value_t = default_options().grinding_bits)]
    grinding: u32,
    #[arg(long, value_enum, default_value_t = HashChoice::Blake3)]
    hash: HashChoice,
    /// Where to write the proof file
    #[arg(long, default_value = "kiln.proof")]
    out: PathBuf,
    /// Print one JSON object instead of text
    #[arg(long)]
    json: bool,
    /// Write per-stage timings as a chrome://tracing file
    #[arg(long, value_name = "FILE")]
    trace_out: Option<PathBuf>,
}

#[derive(Args)]
struct VerifyArgs {
    /// The proof file written by `kiln prove`
    file: PathBuf,
    /// The assembly file the proof must be for: its hash must be the proof's (then the inputs are checked too)
    #[arg(long, value_name = "FILE.kasm")]
    program: Option<PathBuf>,
    /// The inputs the run must have read, in order (repeat or separate with commas); with --program and no --input, none
    #[arg(long = "input", value_name = "VALUE", value_delimiter = ',', allow_hyphen_values = true)]
    inputs: Vec<String>,
    /// The outputs the run must have written, in order (repeat or separate with commas)
    #[arg(long = "output", value_name = "VALUE", value_delimiter = ',', allow_hyphen_values = true)]
    outputs: Vec<String>,
    /// Refuse proofs whose options give less conjectured security than this many bits
    #[arg(long, default_value_t = stark::options::DEFAULT_MIN_SECURITY_BITS)]
    min_security: u32,
    /// Print the verified statement (program hash, inputs, outputs), options and security as one JSON object
    #[arg(long)]
    json: bool,
}

#[derive(Args)]
struct RunArgs {
    program: PathBuf,
    #[command(flatten)]
    prog: ProgramArgs,
    #[arg(long)]
    json: bool,
}

type CliResult<T> = Result<T, String>;

/// Prints a line to stdout; a closed pipe (`kiln verify f | head -1`) is
/// not an error of the command.
macro_rules! say {
    ($($t:tt)*) => {{
        let _ = writeln!(std::io::stdout(), $($t)*);
    }};
}

// After `say!`, which it uses.
mod share;

fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(c) => c,
        Err(e) if matches!(e.kind(), ErrorKind::DisplayHelp | ErrorKind::DisplayVersion) => {
            let _ = e.print();
            return ExitCode::SUCCESS;
        }
        Err(e) if e.kind() == ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand => {
            let _ = e.print();
            return ExitCode::from(2);
        }
        Err(e) => {
            eprintln!("error: {}", one_line_clap_error(&e));
            return ExitCode::from(2);
        }
    };
    // Warnings (device declines and their recovery) print one line each;
    // RUST_LOG raises or lowers the level.
    env_logger::Builder::from_env(env_logger::Env::default().default_filter_or("warn"))
        .format(|buf, record| writeln!(buf, "kiln: {}", record.args()))
        .init();
    // A bug below must still end in one line and no partial output: the
    // hook stays quiet and the unwinding drops any temporary file.
    std::panic::set_hook(Box::new(|_| {}));
    let result = std::panic::catch_unwind(|| match cli.cmd {
        Cmd::Prove(a) => cmd_prove(a),
        Cmd::Verify(a) => cmd_verify(a),
        Cmd::Run(a) => cmd_run(a),
        Cmd::Devices { json } => cmd_devices(json),
    });
    match result {
        Ok(Ok(())) => ExitCode::SUCCESS,
        Ok(Err(msg)) => {
            eprintln!("error: {msg}");
            ExitCode::FAILURE
        }
        Err(p) => {
            let msg = p
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| p.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "unknown".into());
            eprintln!("error: internal error: {}", msg.lines().next().unwrap_or(""));
            ExitCode::from(101)
        }
    }
}

fn one_line_clap_error(e: &clap::Error) -> String {
    let text = e.to_string();
    let first = text.lines().next().unwrap_or("invalid arguments").trim_start_matches("error: ").to_string();
    match e.get(ContextKind::ValidValue) {
        Some(ContextValue::Strings(v)) if !v.is_empty() => format!("{first} (expected one of: {})", v.join(", ")),
        _ => format!("{first} (see --help)"),
    }
}

fn load_program(path: Option<&Path>) -> CliResult<(String, Program)> {
    match path {
        None => Ok((
            "<default: fibonacci>".into(),
            asm::assemble(examples::DEFAULT).expect("the default program assembles"),
        )),
        Some(p) => {
            let bytes = std::fs::read(p).map_err(|e| format!("cannot read `{}`: {e}", p.display()))?;
            let prog = asm::assemble_bytes(&bytes).map_err(|e| format!("{}: {e}", p.display()))?;
            Ok((p.display().to_string(), prog))
        }
    }
}

fn parse_inputs(raw: &[String]) -> CliResult<Vec<F>> {
    parse_values("--input", raw)
}

fn parse_values(flag: &str, raw: &[String]) -> CliResult<Vec<F>> {
    raw.iter()
        .map(|s| {
            asm::parse_value(s)
                .ok_or_else(|| format!("bad {flag} value `{s}`: expected a field element (decimal, 0x hex, or -n)"))
        })
        .collect()
}

use vm::bundle::hex;

fn nums(v: &[F]) -> Vec<u64> {
    v.iter().map(|x| x.value()).collect()
}

fn list(v: &[F]) -> String {
    let shown: Vec<String> = v.iter().take(16).map(|x| x.to_string()).collect();
    let more = if v.len() > 16 { format!(", ... ({} in all)", v.len()) } else { String::new() };
    format!("[{}{more}]", shown.join(", "))
}

/// The proof and trace files of a prove, checked against each other and
/// the program before any work.
fn prove_outputs(a: &ProveArgs) -> CliResult<(OutFile, Option<OutFile>)> {
    let out = OutFile::create(&a.out)?;
    if let Some(program) = a.program.as_deref().filter(|p| out.is_file(p)) {
        return Err(format!(
            "--out `{}` is the program file `{}`: refusing to replace the source with the proof",
            a.out.display(),
            program.display()
        ));
    }
    let trace = a.trace_out.as_deref().map(OutFile::create).transpose()?;
    if let Some(t) = &trace {
        if t.same_destination(&out) {
            return Err(format!(
                "--out `{}` and --trace-out `{}` are the same file: the proof would overwrite the trace",
                a.out.display(),
                t.shown().display()
            ));
        }
        if let Some(program) = a.program.as_deref().filter(|p| t.is_file(p)) {
            return Err(format!("--trace-out `{}` is the program file `{}`", t.shown().display(), program.display()));
        }
    }
    Ok((out, trace))
}

fn cmd_run(a: RunArgs) -> CliResult<()> {
    let (name, program) = load_program(Some(&a.program))?;
    let inputs = parse_inputs(&a.prog.inputs)?;
    let t0 = Instant::now();
    let ex = execute(&program, &inputs, &ExecOptions { max_cycles: a.prog.max_cycles, ..Default::default() })
        .map_err(|e| format!("execution failed: {e}"))?;
    let elapsed = t0.elapsed();
    if a.json {
        let v = json!({
            "program": name,
            "hash": hex(&program.hash()),
            "cycles": ex.cycles,
            "inputs": nums(&ex.inputs),
            "outputs": nums(&ex.outputs),
            "time_ms": elapsed.as_secs_f64() * 1e3,
        });
        say!("{v}");
    } else {
        say!("outputs  {}", list(&ex.outputs));
        say!("cycles   {}", ex.cycles);
        say!("time     {elapsed:.2?}");
    }
    Ok(())
}

/// Shows prover progress on a terminal (hidden otherwise, and with --json).
struct Progress(ProgressBar);

impl ProveObserver for Progress {
    fn stage_done(&self, t: &StageTiming) {
        self.0.set_message(format!("proving: {} ({})", t.stage, t.table));
        self.0.inc(1);
    }
}

fn cmd_prove(a: ProveArgs) -> CliResult<()> {
    if let Some(done) = share::dispatch(&a) {
        return done;
    }
    let opts = ProofOptions {
        num_queries: a.queries,
        grinding_bits: a.grinding,
        hash: match a.hash {
            HashChoice::Blake3 => HashKind::Blake3,
            HashChoice::Keccak => HashKind::Keccak256,
        },
        ..default_options()
    }
    .with_blowup(a.blowup)
    .map_err(|e| format!("invalid options: {e}"))?;
    opts.validate().map_err(|e| format!("invalid options: {e}"))?;
    let chosen = choose_backend(a.backend, &a.share)?;
    let (name, program) = load_program(a.program.as_deref())?;
    let mut inputs = parse_inputs(&a.prog.inputs)?;
    if a.program.is_none() && a.prog.inputs.is_empty() {
        inputs = examples::DEFAULT_INPUTS.iter().map(|&v| F::new(v)).collect();
    }
    let (out_tmp, trace_tmp) = prove_outputs(&a)?;
    let job = Job { a: &a, opts: &opts, name: &name, program: &program, inputs: &inputs };
    match chosen {
        Chosen::Cpu(why) => {
            let label = why.map_or("cpu".to_string(), |w| format!("cpu ({w})"));
            if a.cross_check {
                let b = CrossCheck::new(CpuBackend::new(), CpuBackend::new());
                job.run(&b, &format!("{label}, cross-checked"), None, out_tmp, trace_tmp)
            } else {
                job.run(&CpuBackend::new(), &label, None, out_tmp, trace_tmp)
            }
        }
        #[cfg(feature = "cuda")]
        Chosen::Cuda(dev) => {
            let label = format!("cuda ({})", dev.device().name);
            let resilient = Resilient::new(dev, recovery_policy(a.on_decline));
            if a.cross_check {
                let b = CrossCheck::new(CpuBackend::new(), resilient);
                let report = || b.right().report();
                job.run(&b, &format!("{label}, cross-checked"), Some(&report), out_tmp, trace_tmp)
            } else {
                let report = || resilient.report();
                job.run(&resilient, &label, Some(&report), out_tmp, trace_tmp)
            }
        }
    }
}

#[cfg_attr(not(feature = "cuda"), allow(dead_code))]
fn recovery_policy(choice: DeclineChoice) -> RecoveryPolicy {
    let on_decline = match choice {
        DeclineChoice::Recompute => OnDecline::Recompute,
        DeclineChoice::Strict => OnDecline::Strict,
    };
    RecoveryPolicy { retry: true, on_decline }
}

/// The backend a prove runs on.
enum Chosen {
    /// With why `auto` fell back to it.
    Cpu(Option<String>),
    #[cfg(feature = "cuda")]
    Cuda(backend_cuda::CudaBackend),
}

#[cfg_attr(not(feature = "cuda"), allow(unused_variables))]
fn choose_backend(choice: BackendChoice, share: &share::ShareArgs) -> CliResult<Chosen> {
    match choice {
        BackendChoice::Cpu => Ok(Chosen::Cpu(None)),
        BackendChoice::Wgpu => Err("the wgpu backend is not available in this release (backends: cpu, cuda)".into()),
        #[cfg(feature = "cuda")]
        BackendChoice::Cuda => {
            open_cuda(share).map(Chosen::Cuda).map_err(|e| format!("the cuda backend cannot run here: {e}"))
        }
        #[cfg(not(feature = "cuda"))]
        BackendChoice::Cuda => Err("the cuda backend is not in this build (rebuild with --features cuda)".into()),
        // A usable GPU wins; otherwise the CPU, which is always there, and
        // the options line says why.
        #[cfg(feature = "cuda")]
        BackendChoice::Auto => Ok(open_cuda(share)
            .map(Chosen::Cuda)
            .unwrap_or_else(|e| Chosen::Cpu(Some(format!("auto: no usable CUDA device: {e}"))))),
        #[cfg(not(feature = "cuda"))]
        BackendChoice::Auto => {
            Ok(Chosen::Cpu(Some("auto: this build has no GPU backend (rebuild with --features cuda)".into())))
        }
    }
}

/// The CUDA backend on the first device of `--devices` (default 0), tuned
/// by the `KILN_CUDA_*` variables and the flags (the backend itself reads
/// no environment).
#[cfg(feature = "cuda")]
fn open_cuda(share: &share::ShareArgs) -> Result<backend_cuda::CudaBackend, backend_api::BackendError> {
    let unavailable = backend_api::BackendError::Unavailable;
    let config = share::cuda_config(share).map_err(unavailable)?;
    let spec = share::device_spec(share).map_err(unavailable)?;
    let ordinal = spec.resolve(backend_cuda::probe()?.len()).map_err(|e| unavailable(e.to_string()))?[0];
    backend_cuda::CudaBackend::with_config(ordinal, config)
}

/// One prove's inputs, shared by every backend choice.
struct Job<'a> {
    a: &'a ProveArgs,
    opts: &'a ProofOptions,
    name: &'a str,
    program: &'a Program,
    inputs: &'a [F],
}

impl Job<'_> {
    fn run<B: Backend>(
        &self,
        backend: &B,
        label: &str,
        recovery: Option<&dyn Fn() -> RecoveryReport>,
        out_tmp: OutFile,
        trace_tmp: Option<OutFile>,
    ) -> CliResult<()> {
        prove_with(
            backend,
            label,
            recovery,
            self.a,
            self.opts,
            self.name,
            self.program,
            self.inputs,
            out_tmp,
            trace_tmp,
        )
    }
}

#[allow(clippy::too_many_arguments)]
fn prove_with<B: Backend>(
    backend: &B,
    backend_name: &str,
    recovery: Option<&dyn Fn() -> RecoveryReport>,
    a: &ProveArgs,
    opts: &ProofOptions,
    name: &str,
    program: &Program,
    inputs: &[F],
    out_tmp: OutFile,
    trace_tmp: Option<OutFile>,
) -> CliResult<()> {
    let start = Instant::now();
    let bar = if a.json { ProgressBar::hidden() } else { ProgressBar::new_spinner() };
    bar.set_style(ProgressStyle::with_template("{spinner} {elapsed} {msg}").expect("static template"));
    bar.enable_steady_tick(Duration::from_millis(120));
    // (stage, start, duration) spans of the host-side stages.
    let mut spans: Vec<(&str, Duration, Duration)> = Vec::new();
    let mut span = |stage: &'static str, t0: Instant| spans.push((stage, t0 - start, t0.elapsed()));

    bar.set_message("executing");
    let t0 = Instant::now();
    let ex =
        execute(program, inputs, &ExecOptions { max_cycles: a.prog.max_cycles, record: true, ..Default::default() })
            .map_err(|e| format!("execution failed: {e}"))?;
    span("execute", t0);

    bar.set_message("generating traces");
    let t0 = Instant::now();
    let machine = VmMachine::new(program, &ex.inputs, &ex.outputs);
    let traces = trace::generate(program, &ex).map_err(|e| format!("trace generation failed: {e}"))?;
    let heights: Vec<(String, u32)> = stark::Machine::tables(&machine)
        .iter()
        .zip(&traces)
        .map(|(t, m)| (t.name().to_string(), m.height().trailing_zeros()))
        .collect();
    span("trace", t0);

    let t0 = Instant::now();
    let progress = Progress(bar.clone());
    let prove_start = t0 - start;
    let (proof, stats) = stark::prove_with_stats(backend, &machine, traces, machine.publics(), opts, Some(&progress))
        .map_err(|e| format!("proving failed: {e}"))?;
    span("prove", t0);
    let recovered = recovery.map(|r| r());

    bar.set_message("verifying");
    let t0 = Instant::now();
    stark::verify(&machine, machine.publics(), &proof, &Acceptance::Options(*opts))
        .map_err(|e| format!("the proof did not verify: {e}"))?;
    span("verify", t0);

    let log_max_lde = heights.iter().map(|h| h.1).max().unwrap_or(0) + opts.log_blowup;
    let Security { bits: security, provable, .. } = opts.security(log_max_lde);
    let bundle = ProofBundle { program: program.clone(), publics: machine.publics().to_vec(), proof };
    let bytes = bundle.to_bytes();
    if let Some(tmp) = trace_tmp {
        let mut events: Vec<Value> = spans
            .iter()
            .map(|(s, st, d)| {
                json!({"name": s, "cat": "host", "ph": "X", "ts": st.as_micros() as u64,
                "dur": d.as_micros() as u64, "pid": 1, "tid": 0})
            })
            .collect();
        events.extend(stats.timings.iter().map(|t| {
            json!({"name": t.stage, "cat": t.table, "ph": "X", "ts": (prove_start + t.start).as_micros() as u64,
                "dur": t.duration.as_micros() as u64, "pid": 1, "tid": 1, "args": {"table": t.table}})
        }));
        tmp.write(json!({ "traceEvents": events }).to_string().as_bytes())?;
    }
    out_tmp.write(&bytes)?;
    bar.finish_and_clear();

    let total = start.elapsed();
    let per_stage = stats.per_stage();
    let weak = (security < stark::options::DEFAULT_MIN_SECURITY_BITS).then(|| {
        format!(
            "{security} conjectured bits is below the {} that `kiln verify` accepts by default: verify with --min-security {security}",
            stark::options::DEFAULT_MIN_SECURITY_BITS
        )
    });
    if a.json {
        let mut timings = serde_json::Map::new();
        for (s, _, d) in &spans {
            timings.insert(s.to_string(), json!(d.as_secs_f64() * 1e3));
        }
        let prover: serde_json::Map<String, Value> =
            per_stage.iter().map(|(s, d)| (s.to_string(), json!(d.as_secs_f64() * 1e3))).collect();
        let v = json!({
            "program": name,
            "hash": hex(&program.hash()),
            "instructions": program.len(),
            "inputs": nums(&ex.inputs),
            "outputs": nums(&ex.outputs),
            "cycles": ex.cycles,
            "tables": heights.iter().map(|(n, h)| json!({"name": n, "log_height": h})).collect::<Vec<_>>(),
            "backend": backend_name,
            "options": {"blowup": opts.blowup(), "queries": opts.num_queries, "grinding_bits": opts.grinding_bits,
                        "hash": opts.hash.name()},
            "security_bits": security,
            "provable_security_bits": provable,
            "default_verify_accepts": weak.is_none(),
            "recovery": recovered.as_ref().map(|r| r.stages.iter().filter(|(_, c)| c.declines > 0).map(|(s, c)| {
                json!({"stage": s.name(), "declines": c.declines, "retried": c.retried, "recomputed": c.recomputed})
            }).collect::<Vec<_>>()),
            "timings_ms": timings,
            "prover_stages_ms": prover,
            "proof_file": a.out.display().to_string(),
            "proof_bytes": bytes.len(),
            "verified": true,
            "total_ms": total.as_secs_f64() * 1e3,
        });
        say!("{v}");
    } else {
        let tables: Vec<String> = heights.iter().map(|(n, h)| format!("{n} 2^{h}")).collect();
        say!("program   {name} ({} instructions, hash {})", program.len(), hex(&program.hash()));
        say!("inputs    {}", list(&ex.inputs));
        say!("outputs   {}", list(&ex.outputs));
        say!("cycles    {}", ex.cycles);
        say!("tables    {}", tables.join(", "));
        say!(
            "options   {backend_name} backend, blowup {}, {} queries, {} grinding bits, {} ({security}-bit conjectured, {provable} provable)",
            opts.blowup(),
            opts.num_queries,
            opts.grinding_bits,
            opts.hash
        );
        let host: Vec<String> = spans.iter().map(|(s, _, d)| format!("{s} {d:.2?}")).collect();
        say!("stages    {}", host.join(", "));
        let prover: Vec<String> = per_stage.iter().map(|(s, d)| format!("{s} {d:.2?}")).collect();
        say!("prover    {}", prover.join(", "));
        if let Some(r) = &recovered {
            say!("recovery  {r}");
        }
        if let Some(w) = &weak {
            say!("warning   {w}");
        }
        say!("proof     {} ({} bytes), verified", a.out.display(), bytes.len());
        say!("total     {total:.2?}");
    }
    Ok(())
}

/// The statement `kiln verify` was asked to check.
fn expected_statement(a: &VerifyArgs) -> CliResult<Expected> {
    let program = a.program.as_deref().map(|p| load_program(Some(p))).transpose()?;
    // A program runs on some inputs: naming the program pins them too
    // (none when no --input is given), as `kiln run FILE` reads none.
    let inputs = (program.is_some() || !a.inputs.is_empty()).then(|| parse_values("--input", &a.inputs)).transpose()?;
    let outputs = (!a.outputs.is_empty()).then(|| parse_values("--output", &a.outputs)).transpose()?;
    Ok(Expected { program_hash: program.map(|(_, p)| p.hash()), inputs, outputs })
}

fn cmd_verify(a: VerifyArgs) -> CliResult<()> {
    let t0 = Instant::now();
    let expected = expected_statement(&a)?;
    let bytes = std::fs::read(&a.file).map_err(|e| format!("cannot read `{}`: {e}", a.file.display()))?;
    let bundle = ProofBundle::from_bytes(&bytes).map_err(|e| format!("{}: {e}", a.file.display()))?;
    let v = bundle.verify(&expected, &Acceptance::MinSecurity(a.min_security)).map_err(|e| match e {
        Rejection::Statement(e) => format!("{}: {e}", a.file.display()),
        e => e.to_string(),
    })?;
    let elapsed = t0.elapsed();
    let hash = hex(&v.statement.program_hash);
    let checked = [
        ("program", expected.program_hash.is_some()),
        ("inputs", expected.inputs.is_some()),
        ("outputs", expected.outputs.is_some()),
    ];
    let o = &v.options;
    if a.json {
        let out = json!({
            "verified": true,
            "hash": hash,
            "instructions": bundle.program.len(),
            "inputs": nums(&v.statement.inputs),
            "outputs": nums(&v.statement.outputs),
            "checked": checked.iter().map(|(k, c)| (k.to_string(), json!(c))).collect::<serde_json::Map<_, _>>(),
            "log_heights": v.log_heights,
            "options": {"blowup": o.blowup(), "queries": o.num_queries, "grinding_bits": o.grinding_bits,
                        "hash": o.hash.name()},
            "security_bits": v.security.bits,
            "provable_security_bits": v.security.provable,
            "time_ms": elapsed.as_secs_f64() * 1e3,
        });
        say!("{out}");
    } else {
        let names: Vec<&str> = checked.iter().filter(|c| c.1).map(|c| c.0).collect();
        say!("verified  program {hash} ({} instructions)", bundle.program.len());
        say!("inputs    {}", list(&v.statement.inputs));
        say!("outputs   {}", list(&v.statement.outputs));
        if names.is_empty() {
            say!("statement not compared: a valid proof of the program above (--program, --input, --output check it)");
        } else {
            say!("statement {} as expected", names.join(", "));
        }
        let s = v.security;
        say!("security  {} bits conjectured, {} provable; checked in {elapsed:.2?}", s.bits, s.provable);
    }
    Ok(())
}

fn cmd_devices(json_out: bool) -> CliResult<()> {
    let threads = rayon::current_num_threads();
    let mut rows = vec![("cpu", true, format!("reference backend, {threads} threads"))];
    #[cfg(feature = "cuda")]
    match backend_cuda::probe() {
        Ok(devs) if !devs.is_empty() => {
            for d in devs {
                let (major, minor) = d.compute_capability;
                let detail = format!(
                    "device {}: {}, sm_{major}{minor}, {} SMs, {:.1} GiB",
                    d.ordinal,
                    d.name,
                    d.multiprocessors,
                    d.total_memory as f64 / (1u64 << 30) as f64
                );
                rows.push(("cuda", true, detail));
            }
        }
        Ok(_) => rows.push(("cuda", false, "compiled in; no CUDA device found".to_string())),
        Err(e) => rows.push(("cuda", false, format!("compiled in; {e}"))),
    }
    #[cfg(not(feature = "cuda"))]
    rows.push(("cuda", false, "not in this build (rebuild with --features cuda)".to_string()));
    rows.push(("wgpu", false, "not available in this release".to_string()));
    if json_out {
        let v: Vec<Value> = rows.iter().map(|(n, ok, d)| json!({"backend": n, "available": ok, "detail": d})).collect();
        say!("{}", json!({ "backends": v }));
    } else {
        for (n, ok, d) in rows {
            say!("{n:<5} {:<13} {d}", if ok { "available" } else { "unavailable" });
        }
    }
    Ok(())
}
