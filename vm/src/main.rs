//! `kiln`: run, prove and verify programs of the Kiln VM.
//!
//! Every failure is one line on stderr and a non-zero exit; output files
//! are checked before any work and written through a temporary file
//! beside the target (see `outfile`), so a failed command leaves no
//! partial file and never replaces a source, a device or another output.

mod outfile;
mod readout;
mod startup;

use backend_api::{Backend, HashKind, F};
use backend_cpu::{CpuBackend, CrossCheck, OnDecline, RecoveryPolicy, RecoveryReport, Resilient};
use clap::error::{ContextKind, ContextValue, ErrorKind};
use clap::{Args, Parser, Subcommand, ValueEnum};
use indicatif::{ProgressBar, ProgressStyle};
use outfile::OutFile;
use readout::DeviceReadout;
use serde_json::{json, Value};
use stark::verifier::Acceptance;
use stark::{ProofOptions, ProveObserver, Security, StageTiming};
use startup::{Chosen, DeviceStart, Served, Starting};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::{Duration, Instant};
use vm::bundle::{AnyBundle, Expected, ProofBundle, Rejection};
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
    /// One step of a segmented prove, for a distributed driver (see `kiln prove --segment-cycles`)
    #[command(subcommand)]
    Segment(segcmd::SegmentCmd),
    /// Keep a backend open and prove what `kiln prove --server SOCKET` sends
    Serve(serve::ServeArgs),
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

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
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
enum ResidencyChoice {
    Auto,
    Keep,
    Spill,
    Recompute,
}

#[derive(Clone, Copy, PartialEq, Eq, ValueEnum)]
enum HashChoice {
    Blake3,
    Keccak,
}

/// Spilled pieces when no device budget sizes them (`--residency spill` on the CPU).
const SPILL_PIECE_BYTES: u64 = 1 << 30;

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
    /// auto: a usable GPU of this build (CUDA, then wgpu on a GPU), else the CPU
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
    /// Where the low-degree extensions live: keep them on the device; recompute them (keep the traces' coefficients, and where they fit the traces until the LogUp round reads them and the auxiliary LDEs, and rebuild each coset of an LDE whenever a stage reads it, in pieces when a whole coset does not fit --vram-budget); or spill them to host memory and stream them back in pieces. auto keeps them while the proof's device set fits the device's budget (--vram-budget), else recomputes the largest tables, else spills them. Proof bytes are the same
    #[arg(long, value_enum, default_value_t = ResidencyChoice::Auto)]
    residency: ResidencyChoice,
    /// Host memory a proof on the cpu backend may hold: auto residency keeps the LDEs while the memory model's set fits it, else recomputes them (the model is the devices', which overstates the CPU's peak). Bytes, or with a K, M, G or T suffix (default: the memory available, within the process's cgroup, when the proof starts)
    #[arg(long, value_name = "BYTES", value_parser = share::parse_bytes)]
    memory_budget: Option<u64>,
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
    /// Prove through the `kiln serve` listening on this socket, which holds its device open (default: $KILN_SERVER, when set)
    #[arg(long, value_name = "SOCKET")]
    server: Option<PathBuf>,
    /// Also print every prover stage of every table, the device's start-up, and on CUDA its own time by stage
    #[arg(long)]
    timings: bool,
    /// Prove the run as segments of this many cycles (a power of two, as a number or 2^k), one proof file
    #[arg(long, value_parser = segcmd::parse_cycles, value_name = "N")]
    segment_cycles: Option<u64>,
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

/// Prints a line to stdout, or, in a prove `kiln serve` runs, to the
/// client's answer ([`serve::say`]).
macro_rules! say {
    ($($t:tt)*) => {{
        $crate::serve::say(format_args!($($t)*));
    }};
}

// After `say!`, which they use.
mod segcmd;
mod serve;
mod share;

fn main() -> ExitCode {
    // The whole command's wall time counts from here.
    let start = Instant::now();
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
    // wgpu's own start-up notes (missing optional Vulkan extensions) stay
    // below the default level.
    env_logger::Builder::from_env(env_logger::Env::default().default_filter_or("warn,wgpu_hal=error,wgpu_core=error"))
        .format(|buf, record| writeln!(buf, "kiln: {}", record.args()))
        .init();
    // A bug below must still end in one line and no partial output: the
    // hook stays quiet and the unwinding drops any temporary file.
    std::panic::set_hook(Box::new(|_| {}));
    if let Cmd::Prove(a) = &cli.cmd {
        if let Some(socket) = serve::server_for(a) {
            return serve::client(&socket);
        }
    }
    let result = std::panic::catch_unwind(|| match cli.cmd {
        Cmd::Prove(a) => cmd_prove(a, start),
        Cmd::Verify(a) => cmd_verify(a),
        Cmd::Run(a) => cmd_run(a),
        Cmd::Devices { json } => cmd_devices(json),
        Cmd::Segment(c) => segcmd::cmd_segment(c),
        Cmd::Serve(a) => serve::cmd_serve(a),
    });
    match result {
        Ok(Ok(())) => ExitCode::SUCCESS,
        Ok(Err(msg)) => {
            eprintln!("error: {msg}");
            ExitCode::FAILURE
        }
        Err(p) => {
            eprintln!("error: internal error: {}", panic_text(&p).lines().next().unwrap_or(""));
            ExitCode::from(101)
        }
    }
}

/// A panic's message.
fn panic_text(p: &Box<dyn std::any::Any + Send>) -> String {
    p.downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| p.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "unknown".into())
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

impl ProveArgs {
    /// Every path the arguments name, taken relative to `cwd` (a served
    /// prove runs in the server's directory, for the client's).
    fn resolve_paths(&mut self, cwd: &Path) {
        let at = |p: &mut PathBuf| *p = cwd.join(&*p);
        self.program.iter_mut().for_each(at);
        at(&mut self.out);
        self.trace_out.iter_mut().for_each(at);
        self.share.more.iter_mut().for_each(at);
        self.share.out_dir.iter_mut().for_each(at);
    }
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

/// Proof options from the flags.
fn options_of(hash: HashChoice, blowup: u64, queries: usize, grinding: u32) -> CliResult<ProofOptions> {
    let hash = match hash {
        HashChoice::Blake3 => HashKind::Blake3,
        HashChoice::Keccak => HashKind::Keccak256,
    };
    let opts = ProofOptions { num_queries: queries, grinding_bits: grinding, hash, ..default_options() }
        .with_blowup(blowup)
        .map_err(|e| format!("invalid options: {e}"))?;
    opts.validate().map_err(|e| format!("invalid options: {e}"))?;
    Ok(opts)
}

fn proof_options(a: &ProveArgs) -> CliResult<ProofOptions> {
    options_of(a.hash, a.blowup, a.queries, a.grinding)
}

/// Where a prove's backend comes from.
enum Device<'s> {
    /// Opened by this process, on its own thread.
    Starting(Box<Starting>),
    /// Held by `kiln serve`.
    Served(&'s Served),
}

fn cmd_prove(a: ProveArgs, start: Instant) -> CliResult<()> {
    cmd_prove_with(a, start, None)
}

/// `kiln prove`, on the backend `kiln serve` holds when `served`, else
/// on one this process opens.
fn cmd_prove_with(a: ProveArgs, start: Instant, served: Option<&Served>) -> CliResult<()> {
    if served.is_some() {
        if a.segment_cycles.is_some() || share::is_batch(&a) {
            return Err("kiln serve proves one program at a time: segments and batches (--segment-cycles, several programs, --repeat, several --devices, --out-dir, --debug-races) run without --server".into());
        }
        if a.share.devices.is_some() || a.share.vram_budget.is_some() {
            return Err("--devices and --vram-budget are the server's: give them to `kiln serve`".into());
        }
    }
    if a.memory_budget.is_some() && (a.segment_cycles.is_some() || share::is_batch(&a)) {
        return Err("--memory-budget sizes a single prove's residency: not a batch's or segments'".into());
    }
    if a.memory_budget.is_some() && a.residency != ResidencyChoice::Auto {
        return Err("--memory-budget decides what --residency auto does: a named residency ignores it".into());
    }
    if let Some(cycles) = a.segment_cycles {
        return segcmd::cmd_prove_segmented(&a, cycles);
    }
    if let Some(done) = share::dispatch(&a) {
        return done;
    }
    let opts = proof_options(&a)?;
    let (name, program) = load_program(a.program.as_deref())?;
    let mut inputs = parse_inputs(&a.prog.inputs)?;
    if a.program.is_none() && a.prog.inputs.is_empty() {
        inputs = examples::DEFAULT_INPUTS.iter().map(|&v| F::new(v)).collect();
    }
    let (out_tmp, trace_tmp) = prove_outputs(&a)?;
    // The device starts now, on its own thread, behind execution and
    // tracing (a served one is open already).
    let device = match served {
        Some(served) => Device::Served(served),
        None => Device::Starting(Box::new(Starting::begin(a.backend, &program, &inputs, gpu_settings(&a)?)?)),
    };
    let mut run = Run::execute(&a, &opts, name, program, &inputs, start)?;
    let (chosen, alone) = match device {
        Device::Served(served) => (served.choose(a.backend, run.ex.cycles)?, served.alone),
        Device::Starting(starting) => {
            let (chosen, device, waited) = starting.choose(run.ex.cycles)?;
            if device.is_some() || !waited.is_zero() {
                run.spans.add("device wait", waited);
            }
            run.device = device;
            (chosen, true)
        }
    };
    run.prove_chosen(chosen, alone, out_tmp, trace_tmp)
}

/// How `--backend cuda` or `auto` opens CUDA: `--devices`, `--vram-budget`,
/// `--debug-races`, `--timings` and the `KILN_CUDA_*` tuning variables (the backend
/// itself reads no environment).
fn gpu_settings(a: &ProveArgs) -> CliResult<startup::GpuSettings> {
    #[cfg(feature = "cuda")]
    let settings = {
        let mut config = share::cuda_config(&a.share)?;
        // `--timings` reads the device's own time too: two events an operation.
        config.timeline |= a.timings;
        let (cuda, devices_named) = (Some((config, share::device_spec(&a.share)?)), a.share.devices.is_some());
        startup::GpuSettings { cuda, options: proof_options(a)?, devices_named }
    };
    #[cfg(not(feature = "cuda"))]
    let settings = {
        let _ = a;
        startup::GpuSettings::default()
    };
    Ok(settings)
}

#[cfg_attr(not(any(feature = "cuda", feature = "wgpu")), allow(dead_code))]
fn recovery_policy(choice: DeclineChoice) -> RecoveryPolicy {
    let on_decline = match choice {
        DeclineChoice::Recompute => OnDecline::Recompute,
        DeclineChoice::Strict => OnDecline::Strict,
    };
    RecoveryPolicy { retry: true, on_decline }
}

/// The command's host-side stages, each a span of the wall time since the
/// process started: together they account for all of it.
struct Spans {
    start: Instant,
    /// (stage, start since the process started, duration).
    list: Vec<(&'static str, Duration, Duration)>,
}

impl Spans {
    /// Ends `stage`, which began at `t0`.
    fn end(&mut self, stage: &'static str, t0: Instant) {
        self.list.push((stage, t0 - self.start, t0.elapsed()));
    }

    /// A stage of known length that ended now.
    fn add(&mut self, stage: &'static str, d: Duration) {
        let now = self.start.elapsed();
        self.list.push((stage, now.saturating_sub(d), d));
    }

    /// What no span covers, of the wall time so far.
    fn unaccounted(&self) -> Duration {
        self.start.elapsed().saturating_sub(self.list.iter().map(|s| s.2).sum())
    }
}

/// A program's run, from execution to the written proof.
struct Run<'a> {
    a: &'a ProveArgs,
    opts: &'a ProofOptions,
    name: String,
    program: Program,
    ex: vm::Execution,
    machine: VmMachine,
    traces: Vec<backend_api::ColMatrix>,
    bar: ProgressBar,
    spans: Spans,
    device: Option<DeviceStart>,
    /// The device's memory budget, when proving on one that has a gate.
    budget: Option<u64>,
    /// The host's, when proving on the CPU backend (`--memory-budget`).
    host_budget: Option<u64>,
}

impl<'a> Run<'a> {
    /// Executes the program and builds its traces.
    fn execute(
        a: &'a ProveArgs,
        opts: &'a ProofOptions,
        name: String,
        program: Program,
        inputs: &[F],
        start: Instant,
    ) -> CliResult<Run<'a>> {
        let mut spans = Spans { start, list: vec![] };
        spans.end("start-up", start);
        let bar = if a.json || serve::capturing() { ProgressBar::hidden() } else { ProgressBar::new_spinner() };
        bar.set_style(ProgressStyle::with_template("{spinner} {elapsed} {msg}").expect("static template"));
        bar.enable_steady_tick(Duration::from_millis(120));
        bar.set_message("executing");
        let t0 = Instant::now();
        let record = ExecOptions { max_cycles: a.prog.max_cycles, record: true, ..Default::default() };
        let ex = execute(&program, inputs, &record).map_err(|e| format!("execution failed: {e}"))?;
        spans.end("execute", t0);
        bar.set_message("generating traces");
        let t0 = Instant::now();
        let machine = VmMachine::new(&program, &ex.inputs, &ex.outputs);
        let traces = trace::generate(&program, &ex).map_err(|e| format!("trace generation failed: {e}"))?;
        // The traces hold all the prover needs of the run's record.
        let ex = vm::Execution { steps: vec![], memory: vec![], ..ex };
        spans.end("trace", t0);
        Ok(Run {
            a,
            opts,
            name,
            program,
            ex,
            machine,
            traces,
            bar,
            spans,
            device: None,
            budget: None,
            host_budget: None,
        })
    }

    /// Proves and verifies on `backend`, writes the outputs and reports.
    fn prove<B: Backend>(
        mut self,
        backend: &B,
        backend_name: &str,
        recovery: Option<&dyn Fn() -> RecoveryReport>,
        readout: Option<&dyn Fn() -> DeviceReadout>,
        out_tmp: OutFile,
        trace_tmp: Option<OutFile>,
    ) -> CliResult<()> {
        let heights: Vec<(String, u32)> = stark::Machine::tables(&self.machine)
            .iter()
            .zip(&self.traces)
            .map(|(t, m)| (t.name().to_string(), m.height().trailing_zeros()))
            .collect();
        let t0 = Instant::now();
        let prove_start = t0 - self.spans.start;
        let progress = Progress(self.bar.clone());
        let residency = self.residency()?;
        let traces = std::mem::take(&mut self.traces);
        let (m, opts) = (&self.machine, self.opts);
        let settings = stark::ProveSettings { residency, observer: Some(&progress) };
        let (proof, stats) = stark::prove_with_settings(backend, m, traces, m.publics(), opts, &settings)
            .map_err(|e| format!("proving failed: {e}"))?;
        self.spans.end("prove", t0);
        let recovered = recovery.map(|r| r());
        let device = readout.map(|r| r()).unwrap_or_default();

        self.bar.set_message("verifying");
        let t0 = Instant::now();
        stark::verify(m, m.publics(), &proof, &Acceptance::Options(*opts))
            .map_err(|e| format!("the proof did not verify: {e}"))?;
        self.spans.end("verify", t0);

        let t0 = Instant::now();
        let bundle = ProofBundle { program: self.program.clone(), publics: m.publics().to_vec(), proof };
        let bytes = bundle.to_bytes();
        if let Some(tmp) = trace_tmp {
            tmp.write(chrome_trace(&self.spans, &stats, prove_start).to_string().as_bytes())?;
        }
        out_tmp.write(&bytes)?;
        self.spans.end("write", t0);
        self.bar.finish_and_clear();
        let report = Report { run: &self, heights, backend_name, stats, recovered, device, proof_bytes: bytes.len() };
        if self.a.json {
            report.json();
        } else {
            report.text();
        }
        Ok(())
    }

    /// Where the proof keeps its LDEs (`--residency`): auto keeps them
    /// unless the device set exceeds the device's budget. On the CPU
    /// backend auto keeps them or recomputes every table, by the host's
    /// budget: spilling would move them to host memory, where they already
    /// are, and recomputing in pieces raised the CPU's peak (1.68 GB
    /// against 1.55 GB whole for 2^20 cycles).
    fn residency(&self) -> CliResult<stark::Residency> {
        let m = &self.machine;
        let set = stark::device_set(m, &self.traces, m.publics(), self.opts).map_err(|e| format!("{e}"))?;
        Ok(match (self.a.residency, self.budget, self.host_budget) {
            (ResidencyChoice::Auto, None, Some(host)) => match stark::Residency::auto(&set, host) {
                stark::Residency::Keep => stark::Residency::Keep,
                _ => stark::Residency::RECOMPUTE_ALL,
            },
            (ResidencyChoice::Keep, ..) | (ResidencyChoice::Auto, None, _) => stark::Residency::Keep,
            (ResidencyChoice::Auto, Some(budget), _) => stark::Residency::auto(&set, budget),
            (ResidencyChoice::Spill, Some(budget), _) => stark::Residency::spill_all_within(&set, budget),
            (ResidencyChoice::Spill, None, _) => stark::Residency::spill_all(SPILL_PIECE_BYTES),
            (ResidencyChoice::Recompute, Some(budget), _) => stark::Residency::recompute_all_within(&set, budget),
            (ResidencyChoice::Recompute, None, _) => stark::Residency::RECOMPUTE_ALL,
        })
    }

    /// Proves on the backend chosen for the run; `alone` when no other
    /// prove shares the device (its peak and timeline are then this
    /// prove's, and reported).
    #[cfg_attr(not(feature = "cuda"), allow(unused_variables))]
    fn prove_chosen(self, chosen: Chosen, alone: bool, out_tmp: OutFile, trace_tmp: Option<OutFile>) -> CliResult<()> {
        let label = chosen.label();
        match chosen {
            Chosen::Cpu(_) => {
                let mut run = self;
                // Only auto decides by the host's memory; a named residency reads none.
                if run.a.residency == ResidencyChoice::Auto {
                    run.host_budget = run.a.memory_budget.or_else(startup::host_memory_available);
                }
                if run.a.cross_check {
                    let b = CrossCheck::new(CpuBackend::new(), CpuBackend::new());
                    run.prove(&b, &format!("{label}, cross-checked"), None, None, out_tmp, trace_tmp)
                } else {
                    run.prove(&CpuBackend::new(), &label, None, None, out_tmp, trace_tmp)
                }
            }
            #[cfg(feature = "cuda")]
            Chosen::Cuda(dev) => {
                let mut run = self;
                run.budget = Some(dev.gate_stats().budget);
                type Readout = fn(&std::sync::Arc<backend_cuda::CudaBackend>) -> DeviceReadout;
                let readout: Readout = match alone {
                    true => |d| DeviceReadout {
                        peak: d.pool_usage(false).ok().map(|u| u.1),
                        timeline: d.timeline().ok().flatten().map(Into::into),
                    },
                    false => |_| DeviceReadout::default(),
                };
                if alone {
                    // The peak and the timeline count the prove, not what ran before it.
                    let _ = dev.pool_usage(true);
                    let _ = dev.timeline();
                }
                run.prove_on_device(dev, readout, &label, out_tmp, trace_tmp)
            }
            #[cfg(feature = "wgpu")]
            Chosen::Wgpu(dev) => self.prove_on_device(dev, |_| DeviceReadout::default(), &label, out_tmp, trace_tmp),
        }
    }

    /// Proves on a device backend inside `Resilient` (decline recovery),
    /// cross-checked against the CPU when asked; `readout` reads the
    /// device's account of the prove (peak memory, timeline) after it.
    #[cfg_attr(not(any(feature = "cuda", feature = "wgpu")), allow(dead_code))]
    fn prove_on_device<B: Backend>(
        self,
        dev: B,
        readout: fn(&B) -> DeviceReadout,
        label: &str,
        out_tmp: OutFile,
        trace_tmp: Option<OutFile>,
    ) -> CliResult<()> {
        let resilient = Resilient::new(dev, recovery_policy(self.a.on_decline));
        if self.a.cross_check {
            let b = CrossCheck::new(CpuBackend::new(), resilient);
            let report = || b.right().report();
            let device = || readout(b.right().device());
            self.prove(&b, &format!("{label}, cross-checked"), Some(&report), Some(&device), out_tmp, trace_tmp)
        } else {
            let report = || resilient.report();
            let device = || readout(resilient.device());
            self.prove(&resilient, label, Some(&report), Some(&device), out_tmp, trace_tmp)
        }
    }
}

/// The host spans and the prover's stages as a chrome://tracing file.
fn chrome_trace(spans: &Spans, stats: &stark::ProveStats, prove_start: Duration) -> Value {
    let mut events: Vec<Value> = spans
        .list
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
    json!({ "traceEvents": events })
}

/// What `kiln prove` prints about a finished run.
struct Report<'r, 'a> {
    run: &'r Run<'a>,
    heights: Vec<(String, u32)>,
    backend_name: &'r str,
    stats: stark::ProveStats,
    recovered: Option<RecoveryReport>,
    device: DeviceReadout,
    proof_bytes: usize,
}

impl Report<'_, '_> {
    fn security(&self) -> Security {
        let log_max_lde = self.heights.iter().map(|h| h.1).max().unwrap_or(0) + self.run.opts.log_blowup;
        self.run.opts.security(log_max_lde)
    }

    /// The residency chosen per table, the bytes it moved and the device's peak.
    fn memory_line(&self) -> String {
        let gib = |b: u64| b as f64 / (1u64 << 30) as f64;
        // Pieces and budgets can be a few MiB.
        let size = |b: u64| match b < 1 << 30 {
            true => format!("{:.1} MiB", b as f64 / (1u64 << 20) as f64),
            false => format!("{:.2} GiB", gib(b)),
        };
        let r = self.stats.residency;
        let which = |how: &str| {
            let not_kept: Vec<&str> =
                self.heights.iter().enumerate().filter(|(t, _)| r.in_pieces(*t)).map(|(_, h)| h.0.as_str()).collect();
            if not_kept.len() == self.heights.len() {
                format!("of every table {how}")
            } else {
                format!("of {} {how}, the rest kept", not_kept.join(", "))
            }
        };
        let moved = gib(self.stats.spilled_bytes);
        let mut line = match r {
            stark::Residency::Keep => "memory    LDEs kept".to_string(),
            stark::Residency::Recompute { log_split, keep_traces, keep_aux, .. } => {
                let split =
                    if log_split > 0 { format!(", each coset in {} pieces", 1u32 << log_split) } else { String::new() };
                let split = if keep_traces { format!("{split}, traces kept until LogUp") } else { split };
                let split = if keep_aux { format!("{split}, auxiliary LDEs kept") } else { split };
                // Recomputing moves nothing unless a stage reads a trace on the host.
                let moved = if moved > 0.0 {
                    format!(" ({moved:.2} GiB moved between host and device)")
                } else {
                    String::new()
                };
                format!("memory    LDEs {}{split}{moved}", which("recomputed"))
            }
            stark::Residency::Spill { chunk_bytes, .. } => {
                let (which, piece) = (which("spilled"), size(chunk_bytes));
                format!("memory    LDEs {which} (pieces of {piece}; {moved:.2} GiB moved between host and device)")
            }
        };
        if let Some(p) = self.device.peak {
            line += &format!(", device peak {:.2} GiB", gib(p));
        }
        if let Some(b) = self.run.host_budget {
            line += &format!(", memory budget {}", size(b));
        }
        line
    }

    /// Why default verification would refuse this proof, if it would.
    fn weak(&self) -> Option<String> {
        let security = self.security().bits;
        (security < stark::options::DEFAULT_MIN_SECURITY_BITS).then(|| {
            format!(
                "{security} conjectured bits is below the {} that `kiln verify` accepts by default: verify with --min-security {security}",
                stark::options::DEFAULT_MIN_SECURITY_BITS
            )
        })
    }

    fn json(&self) {
        let (run, opts) = (self.run, self.run.opts);
        let ms = |d: &Duration| json!(d.as_secs_f64() * 1e3);
        let spans: serde_json::Map<String, Value> =
            run.spans.list.iter().map(|(s, _, d)| (s.to_string(), ms(d))).collect();
        let rounds: serde_json::Map<String, Value> =
            self.stats.rounds.iter().map(|(s, d)| (s.to_string(), ms(d))).collect();
        let stages: serde_json::Map<String, Value> =
            self.stats.per_stage().iter().map(|(s, d)| (s.to_string(), ms(d))).collect();
        let Security { bits, provable, .. } = self.security();
        let v = json!({
            "program": run.name,
            "hash": hex(&run.program.hash()),
            "instructions": run.program.len(),
            "inputs": nums(&run.ex.inputs),
            "outputs": nums(&run.ex.outputs),
            "cycles": run.ex.cycles,
            "tables": self.heights.iter().map(|(n, h)| json!({"name": n, "log_height": h})).collect::<Vec<_>>(),
            "backend": self.backend_name,
            "options": {"blowup": opts.blowup(), "queries": opts.num_queries, "grinding_bits": opts.grinding_bits,
                        "hash": opts.hash.name()},
            "security_bits": bits,
            "provable_security_bits": provable,
            "default_verify_accepts": self.weak().is_none(),
            "recovery": self.recovered.as_ref().map(|r| r.stages.iter().filter(|(_, c)| c.declines > 0).map(|(s, c)| {
                json!({"stage": s.name(), "declines": c.declines, "retried": c.retried, "recomputed": c.recomputed})
            }).collect::<Vec<_>>()),
            "residency": self.stats.residency.name(),
            "spilled_tables": self.heights.iter().enumerate().filter(|(t, _)| self.stats.residency.spills(*t)).map(|(_, h)| h.0.clone()).collect::<Vec<_>>(),
            "recomputed_tables": self.heights.iter().enumerate().filter(|(t, _)| self.stats.residency.recomputes(*t)).map(|(_, h)| h.0.clone()).collect::<Vec<_>>(),
            "spilled_bytes": self.stats.spilled_bytes,
            "memory_budget_bytes": self.run.host_budget,
            "device_peak_bytes": self.device.peak,
            "device_timeline": self.device.timeline.as_ref().map(|t| t.json()),
            "timings_ms": spans,
            "unaccounted_ms": ms(&run.spans.unaccounted()),
            "prover_rounds_ms": rounds,
            "prover_stages_ms": stages,
            "device_start_ms": run.device.map(|d| json!({"open": ms(&d.open), "context": ms(&d.context),
                "kernels": ms(&d.kernels), "precompile": ms(&d.precompile), "prepare": ms(&d.prepare), "warm_up": ms(&d.warm_up),
                "rehearsal": ms(&d.rehearsal)})),
            "proof_file": run.a.out.display().to_string(),
            "proof_bytes": self.proof_bytes,
            "verified": true,
            "total_ms": ms(&run.spans.start.elapsed()),
        });
        say!("{v}");
    }

    fn text(&self) {
        let (run, opts) = (self.run, self.run.opts);
        let tables: Vec<String> = self.heights.iter().map(|(n, h)| format!("{n} 2^{h}")).collect();
        let Security { bits, provable, .. } = self.security();
        say!("program   {} ({} instructions, hash {})", run.name, run.program.len(), hex(&run.program.hash()));
        say!("inputs    {}", list(&run.ex.inputs));
        say!("outputs   {}", list(&run.ex.outputs));
        say!("cycles    {}", run.ex.cycles);
        say!("tables    {}", tables.join(", "));
        say!(
            "options   {} backend, blowup {}, {} queries, {} grinding bits, {} ({bits}-bit conjectured, {provable} provable)",
            self.backend_name,
            opts.blowup(),
            opts.num_queries,
            opts.grinding_bits,
            opts.hash
        );
        let joined = |v: &mut dyn Iterator<Item = (&str, Duration)>| {
            v.map(|(s, d)| format!("{s} {d:.2?}")).collect::<Vec<_>>().join(", ")
        };
        let total = run.spans.start.elapsed();
        let unaccounted = run.spans.unaccounted();
        let share = 100.0 * unaccounted.as_secs_f64() / total.as_secs_f64().max(1e-9);
        say!(
            "stages    {}; unaccounted {unaccounted:.2?} ({share:.1}%)",
            joined(&mut run.spans.list.iter().map(|(s, _, d)| (*s, *d)))
        );
        say!("rounds    {}", joined(&mut self.stats.rounds.iter().map(|(s, d)| (*s, *d))));
        say!("prover    {}", joined(&mut self.stats.per_stage().into_iter()));
        if run.a.timings {
            self.details();
        }
        if let Some(r) = &self.recovered {
            say!("recovery  {r}");
        }
        say!("{}", self.memory_line());
        if let Some(w) = &self.weak() {
            say!("warning   {w}");
        }
        say!("proof     {} ({} bytes), verified", run.a.out.display(), self.proof_bytes);
        say!("total     {total:.2?}");
    }

    /// `--timings`: every stage of every table, the device's start-up and
    /// its timeline.
    fn details(&self) {
        if let Some(d) = &self.run.device {
            say!(
                "device    opened {:.2?} (driver and context {:.2?}, static kernels {:.2?}; beside them the statement's kernels compiled {:.2?}), generated kernels loaded {:.2?}, then side by side staging {:.2?} and rehearsal {:.2?} (on its own threads, behind execution and tracing)",
                d.open,
                d.context,
                d.kernels,
                d.precompile,
                d.prepare,
                d.warm_up,
                d.rehearsal
            );
        }
        for t in &self.stats.timings {
            say!("  {:>9.2?} +{:<9.2?} {:<16} {}", t.start, t.duration, t.stage, t.table);
        }
        for line in self.device.timeline.iter().flat_map(|t| t.lines()) {
            say!("{line}");
        }
    }
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
    let bundle = AnyBundle::from_bytes(&bytes).map_err(|e| format!("{}: {e}", a.file.display()))?;
    let v = bundle.verify(&expected, &Acceptance::MinSecurity(a.min_security)).map_err(|e| match e {
        Rejection::Statement(e) => format!("{}: {e}", a.file.display()),
        e => e.to_string(),
    })?;
    let elapsed = t0.elapsed();
    let hash = hex(&v.statement.program_hash);
    let segments = match &bundle {
        AnyBundle::Whole(_) => 1,
        AnyBundle::Segmented(b) => b.segments.len(),
    };
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
            "instructions": bundle.program().len(),
            "segments": segments,
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
        let in_segments = if segments > 1 { format!(", {segments} segments") } else { String::new() };
        say!("verified  program {hash} ({} instructions{in_segments})", bundle.program().len());
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

/// The wgpu adapters (with the limits that decide buffer splitting), or
/// why there are none.
fn wgpu_rows() -> Vec<(&'static str, bool, String)> {
    #[cfg(feature = "wgpu")]
    {
        let adapters = backend_wgpu::probe();
        if adapters.is_empty() {
            return vec![("wgpu", false, "compiled in; no adapter (no GPU driver or Vulkan loader)".to_string())];
        }
        adapters
            .into_iter()
            .map(|a| {
                let detail = format!(
                    "adapter {}: {} ({}, {}, {}); max binding {} MiB, max buffer {} MiB, workgroup memory {} KiB, {} storage buffers/stage, int64 {}",
                    a.index,
                    a.name,
                    a.api,
                    a.kind,
                    a.driver,
                    a.max_binding_bytes >> 20,
                    a.max_buffer_bytes >> 20,
                    a.workgroup_bytes >> 10,
                    a.storage_buffers_per_stage,
                    if a.int64 { "yes" } else { "no" },
                );
                ("wgpu", true, detail)
            })
            .collect()
    }
    #[cfg(not(feature = "wgpu"))]
    vec![("wgpu", false, "not in this build (rebuild with --features wgpu)".to_string())]
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
    rows.extend(wgpu_rows());
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
