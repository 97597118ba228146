//! Segmented proving in the CLI (not part of the library):
//! `kiln prove --segment-cycles N` runs both phases in-process (on one
//! backend, or spread over `--devices`), and `kiln segment
//! plan|commit|prove|join` runs one step each, for a distributed driver
//! (`ray/kiln_ray.py`). Every step re-executes the program: a step is a
//! pure function of its arguments and files, so retries and placement
//! never change a byte.

use crate::{load_program, parse_inputs, BackendChoice, CliResult, HashChoice, ProveArgs};
use backend_api::{Backend, Ext, F};
use backend_cpu::CpuBackend;
use clap::{Args, Subcommand};
use serde_json::json;
use stark::segments::MainCommitment;
use stark::verifier::Acceptance;
use stark::ProofOptions;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::Instant;
use vm::bundle::{hex, Expected, SegmentedBundle};
use vm::exec::DEFAULT_MAX_CYCLES;
use vm::segment::Segmented;
use vm::{execute, ExecOptions, Execution, Program};

use crate::outfile::OutFile;

/// `1048576` or `2^20`.
pub fn parse_cycles(s: &str) -> Result<u64, String> {
    let t = s.trim();
    let v = match t.split_once('^') {
        Some(("2", e)) => e.parse::<u32>().ok().filter(|&e| e < 64).map(|e| 1u64 << e),
        Some(_) => None,
        None => t.parse::<u64>().ok(),
    };
    v.ok_or_else(|| format!("`{s}` is not a cycle count (a number or 2^k)"))
}

#[derive(Subcommand)]
pub enum SegmentCmd {
    /// Execute and print the number of segments as JSON
    Plan(SegmentArgs),
    /// Phase 1 of one segment: commit its main traces, write the commitment file
    Commit(StepArgs),
    /// Phase 2 of one segment: prove it with the challenges of all commitments in --commits DIR (commit-<k>.bin)
    Prove(ProveStepArgs),
    /// Check the segment proofs in --segments DIR (segment-<k>.proof) and write the one proof file
    Join(JoinArgs),
}

/// What every step needs to rebuild the run and its segments.
#[derive(Args)]
pub struct SegmentArgs {
    /// The assembly file
    pub program: PathBuf,
    /// Public inputs (repeat the flag or separate with commas)
    #[arg(long = "input", value_name = "VALUE", value_delimiter = ',', allow_hyphen_values = true)]
    pub inputs: Vec<String>,
    /// Cycles per segment: a power of two, as a number or 2^k
    #[arg(long, value_parser = parse_cycles)]
    pub segment_cycles: u64,
    #[arg(long, default_value_t = DEFAULT_MAX_CYCLES)]
    pub max_cycles: u64,
    #[arg(long, value_enum, default_value_t = HashChoice::Blake3)]
    pub hash: HashChoice,
    #[arg(long, default_value_t = ProofOptions::default().blowup())]
    pub blowup: u64,
    #[arg(long, default_value_t = ProofOptions::default().num_queries)]
    pub queries: usize,
    #[arg(long, default_value_t = ProofOptions::default().grinding_bits)]
    pub grinding: u32,
    /// Print JSON
    #[arg(long)]
    pub json: bool,
}

#[derive(Args)]
pub struct StepArgs {
    #[command(flatten)]
    pub run: SegmentArgs,
    /// The segment, from 0
    #[arg(long)]
    pub index: usize,
    /// cpu, or cuda (the first visible device); auto picks cuda when usable
    #[arg(long, value_enum, default_value_t = BackendChoice::Cpu)]
    pub backend: BackendChoice,
    #[arg(long)]
    pub out: PathBuf,
}

#[derive(Args)]
pub struct ProveStepArgs {
    #[command(flatten)]
    pub step: StepArgs,
    /// The directory of every segment's commitment file, commit-<k>.bin
    #[arg(long, value_name = "DIR")]
    pub commits: PathBuf,
}

#[derive(Args)]
pub struct JoinArgs {
    #[command(flatten)]
    pub run: SegmentArgs,
    /// The directory of every segment's proof, segment-<k>.proof
    #[arg(long, value_name = "DIR")]
    pub segments: PathBuf,
    #[arg(long)]
    pub out: PathBuf,
}

/// The recorded run a step works on.
struct RunRecord {
    program: Program,
    ex: Execution,
    options: ProofOptions,
}

fn record(a: &SegmentArgs) -> CliResult<RunRecord> {
    let (_, program) = load_program(Some(&a.program))?;
    let inputs = parse_inputs(&a.inputs)?;
    RunRecord::execute(program, &inputs, a.max_cycles, crate::options_of(a.hash, a.blowup, a.queries, a.grinding)?)
}

impl RunRecord {
    /// Runs `program` with its record kept for the traces.
    fn execute(program: Program, inputs: &[F], max_cycles: u64, options: ProofOptions) -> CliResult<RunRecord> {
        let ex = execute(&program, inputs, &ExecOptions { max_cycles, record: true, ..Default::default() })
            .map_err(|e| format!("execution failed: {e}"))?;
        Ok(RunRecord { program, ex, options })
    }
}

fn segmented<'a>(r: &'a RunRecord, cycles: u64) -> CliResult<Segmented<'a>> {
    Segmented::new(&r.program, &r.ex, cycles).map_err(|e| e.to_string())
}

pub fn cmd_segment(cmd: SegmentCmd) -> CliResult<()> {
    match cmd {
        SegmentCmd::Plan(a) => {
            let r = record(&a)?;
            let s = segmented(&r, a.segment_cycles)?;
            let v = json!({"segments": s.count(), "cycles": r.ex.cycles, "segment_cycles": a.segment_cycles});
            say!("{v}");
            Ok(())
        }
        SegmentCmd::Commit(a) => {
            let out = OutFile::create(&a.out)?;
            let r = record(&a.run)?;
            let s = segmented(&r, a.run.segment_cycles)?;
            let machine = s.machine(a.index).map_err(|e| e.to_string())?;
            let (c, _) = on_backends(a.backend, None, &machine, &Commit { s: &s, k: a.index, options: &r.options })?;
            out.write(&c.to_bytes())
        }
        SegmentCmd::Prove(a) => {
            let out = OutFile::create(&a.step.out)?;
            let r = record(&a.step.run)?;
            let s = segmented(&r, a.step.run.segment_cycles)?;
            let commitments = (0..s.count())
                .map(|k| {
                    let path = a.commits.join(format!("commit-{k}.bin"));
                    MainCommitment::from_bytes(&read(&path)?).map_err(|e| format!("{}: {e}", path.display()))
                })
                .collect::<CliResult<Vec<_>>>()?;
            let k = a.step.index;
            let expected = commitments.get(k).ok_or_else(|| format!("segment {k} does not exist"))?;
            let shared = s.challenges(&r.options, &commitments).map_err(|e| e.to_string())?;
            let job = ProveOne { s: &s, k, options: &r.options, shared: &shared, expected };
            let machine = s.machine(k).map_err(|e| e.to_string())?;
            let (proof, _) = on_backends(a.step.backend, None, &machine, &job)?;
            let publics = machine.publics().to_vec();
            out.write(&SegmentedBundle { program: r.program.clone(), segments: vec![(publics, proof)] }.to_bytes())
        }
        SegmentCmd::Join(a) => {
            let out = OutFile::create(&a.out)?;
            let r = record(&a.run)?;
            let s = segmented(&r, a.run.segment_cycles)?;
            let mut segments = Vec::with_capacity(s.count());
            for k in 0..s.count() {
                let path = a.segments.join(format!("segment-{k}.proof"));
                let one = SegmentedBundle::from_bytes(&read(&path)?).map_err(|e| format!("{}: {e}", path.display()))?;
                match <[_; 1]>::try_from(one.segments) {
                    Ok([seg]) => segments.push(seg),
                    Err(_) => return Err(format!("{}: not one segment's proof", path.display())),
                }
            }
            let bundle = SegmentedBundle { program: r.program.clone(), segments };
            bundle.verify(&expected_of(&r), &Acceptance::Options(r.options)).map_err(|e| e.to_string())?;
            out.write(&bundle.to_bytes())
        }
    }
}

/// `kiln prove --segment-cycles N`: both phases here, segments spread over
/// the backends, then the file verified and written.
pub fn cmd_prove_segmented(a: &ProveArgs, cycles: u64) -> CliResult<()> {
    let t0 = Instant::now();
    let out = OutFile::create(&a.out)?;
    let (name, program) = load_program(a.program.as_deref())?;
    let mut inputs = parse_inputs(&a.prog.inputs)?;
    if a.program.is_none() && a.prog.inputs.is_empty() {
        inputs = vm::examples::DEFAULT_INPUTS.iter().map(|&v| F::new(v)).collect();
    }
    let r = RunRecord::execute(program, &inputs, a.prog.max_cycles, crate::proof_options(a)?)?;
    let s = segmented(&r, cycles)?;
    let t_prove = Instant::now();
    let local = Local { s: &s, options: &r.options, jobs: a.share.jobs as usize };
    let first = s.machine(0).map_err(|e| e.to_string())?;
    let ((proofs, phases), backend) = on_backends(a.backend, a.share.devices.as_deref(), &first, &local)?;
    let prove_time = t_prove.elapsed();
    let segments = (0..s.count())
        .map(|k| s.machine(k).map(|m| m.publics().to_vec()))
        .zip(proofs)
        .map(|(p, proof)| p.map(|p| (p, proof)))
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| e.to_string())?;
    let bundle = SegmentedBundle { program: r.program.clone(), segments };
    let t_verify = Instant::now();
    let v = bundle.verify(&expected_of(&r), &Acceptance::Options(r.options)).map_err(|e| e.to_string())?;
    let verify_time = t_verify.elapsed();
    let bytes = bundle.to_bytes();
    out.write(&bytes)?;
    let per_s = s.count() as f64 / prove_time.as_secs_f64();
    if a.json {
        let v = json!({
            "program": name, "hash": hex(&r.program.hash()), "backend": backend,
            "cycles": r.ex.cycles, "segments": s.count(), "segment_cycles": cycles,
            "outputs": r.ex.outputs.iter().map(|x| x.value()).collect::<Vec<_>>(),
            "prove_ms": prove_time.as_secs_f64() * 1e3, "segments_per_s": per_s,
            "verify_ms": verify_time.as_secs_f64() * 1e3,
            "verify_ms_per_segment": verify_time.as_secs_f64() * 1e3 / s.count() as f64,
            "phases_ms": {"commit": ms(phases.commit), "challenges": ms(phases.challenges), "prove": ms(phases.prove)},
            "device_start_ms": ms(prove_time.saturating_sub(phases.commit + phases.challenges + phases.prove)),
            "trace_ms_summed_over_threads": ms(s.trace_time()),
            "prove_rounds_ms_summed_over_segments": s.round_times().iter().map(|(n, d)| (n.to_string(), json!(ms(*d)))).collect::<serde_json::Map<_, _>>(), "jobs": a.share.jobs,
            "proof_bytes": bytes.len(), "security_bits": v.security.bits, "total_ms": t0.elapsed().as_secs_f64() * 1e3,
            "out": a.out.display().to_string(),
        });
        say!("{v}");
    } else {
        say!("program   {name} ({} instructions), {} cycles", r.program.len(), r.ex.cycles);
        say!("segments  {} of {cycles} cycles on {backend}", s.count());
        say!("outputs   {:?}", r.ex.outputs.iter().map(|x| x.value()).collect::<Vec<_>>());
        say!("proved    in {prove_time:.2?} ({per_s:.2} segments/s): commit {:.2?}, challenges {:.2?}, prove {:.2?}; traces took {:.2?} summed over threads", phases.commit, phases.challenges, phases.prove, s.trace_time());
        say!("verified  in {verify_time:.2?} ({:.2?} per segment)", verify_time / s.count() as u32);
        say!("wrote     {} ({} bytes)", a.out.display(), bytes.len());
    }
    Ok(())
}

/// Work that runs on a list of backends of one kind.
trait OnBackends<T> {
    fn run<B: Backend + Sync>(&self, backends: &[B]) -> CliResult<T>;
}

/// Runs `job` on the chosen backend: the CPU, or CUDA devices (`--devices`,
/// default 0; each wrapped to recover declines). Returns its label too.
/// The CUDA devices are opened, and each given the kernels of `machine`'s
/// tables (every segment has the same) and its staging, all at once, before
/// any segment runs: otherwise the first segment on each device pays for
/// them inside a phase.
fn on_backends<T>(
    choice: BackendChoice,
    devices: Option<&str>,
    machine: &vm::VmMachine,
    job: &impl OnBackends<T>,
) -> CliResult<(T, String)> {
    #[cfg(feature = "cuda")]
    if matches!(choice, BackendChoice::Cuda | BackendChoice::Auto) {
        let spec = backend_cuda::DeviceSpec::parse(devices.unwrap_or("0")).map_err(|e| format!("--devices: {e}"))?;
        let config = backend_cuda::CudaConfig::from_env().map_err(|e| e.to_string())?;
        match backend_cuda::open_devices(&spec, &config) {
            Ok(devs) => {
                let tables = stark::Machine::tables(machine);
                let kernels: Vec<_> = tables.iter().map(|t| (t.constraints(), t.logup())).collect();
                std::thread::scope(|scope| {
                    let started: Vec<_> =
                        devs.iter().map(|d| scope.spawn(|| d.prepare(&kernels).and_then(|()| d.warm_up(0)))).collect();
                    started.into_iter().try_for_each(|h| h.join().expect("device start-up thread"))
                })
                .map_err(|e| e.to_string())?;
                let label = format!("cuda: {} device(s), first {}", devs.len(), devs[0].device().name);
                let policy = crate::recovery_policy(crate::DeclineChoice::Recompute);
                let wrapped: Vec<_> = devs.into_iter().map(|d| backend_cpu::Resilient::new(d, policy)).collect();
                return Ok((job.run(&wrapped)?, label));
            }
            Err(e) if choice == BackendChoice::Cuda => return Err(format!("the cuda backend cannot run here: {e}")),
            Err(_) => {}
        }
    }
    match choice {
        BackendChoice::Cpu | BackendChoice::Auto => {
            let _ = (devices, machine);
            Ok((job.run(&[CpuBackend::new()])?, "cpu".into()))
        }
        other => Err(format!("--backend {other:?} cannot run segments in this build (cpu or cuda)").to_lowercase()),
    }
}

struct Commit<'a> {
    s: &'a Segmented<'a>,
    k: usize,
    options: &'a ProofOptions,
}

impl OnBackends<MainCommitment> for Commit<'_> {
    fn run<B: Backend + Sync>(&self, backends: &[B]) -> CliResult<MainCommitment> {
        self.s.commit(&backends[0], self.k, self.options).map_err(|e| e.to_string())
    }
}

struct ProveOne<'a> {
    s: &'a Segmented<'a>,
    k: usize,
    options: &'a ProofOptions,
    shared: &'a [Ext],
    expected: &'a MainCommitment,
}

impl OnBackends<stark::Proof> for ProveOne<'_> {
    fn run<B: Backend + Sync>(&self, backends: &[B]) -> CliResult<stark::Proof> {
        self.s.prove(&backends[0], self.k, self.options, self.shared, self.expected).map_err(|e| e.to_string())
    }
}

/// Both phases of every segment, the segments of each phase taken in turn
/// by `jobs` threads per backend (so one segment's host work, its traces,
/// overlaps another's device work); results land in segment order.
struct Local<'a> {
    s: &'a Segmented<'a>,
    options: &'a ProofOptions,
    jobs: usize,
}

/// `f(backend, k)` for every segment k, spread over `jobs` threads per
/// backend.
fn spread<B: Backend + Sync, T: Send>(
    backends: &[B],
    jobs: usize,
    count: usize,
    f: impl Fn(&B, usize) -> CliResult<T> + Sync,
) -> CliResult<Vec<T>> {
    let next = AtomicUsize::new(0);
    let results: Mutex<Vec<Option<CliResult<T>>>> = Mutex::new((0..count).map(|_| None).collect());
    std::thread::scope(|scope| {
        for b in backends.iter().flat_map(|b| std::iter::repeat_n(b, jobs.max(1))) {
            scope.spawn(|| loop {
                let k = next.fetch_add(1, Ordering::Relaxed);
                if k >= count {
                    break;
                }
                let r = f(b, k);
                results.lock().expect("results lock")[k] = Some(r);
            });
        }
    });
    results.into_inner().expect("results lock").into_iter().map(|r| r.expect("every segment ran")).collect()
}

/// Wall time of the local path's phases.
struct Phases {
    commit: std::time::Duration,
    challenges: std::time::Duration,
    prove: std::time::Duration,
}

impl OnBackends<(Vec<stark::Proof>, Phases)> for Local<'_> {
    fn run<B: Backend + Sync>(&self, backends: &[B]) -> CliResult<(Vec<stark::Proof>, Phases)> {
        let (s, o) = (self.s, self.options);
        let t0 = Instant::now();
        let commitments =
            spread(backends, self.jobs, s.count(), |b, k| s.commit(b, k, o).map_err(|e| format!("segment {k}: {e}")))?;
        let t1 = Instant::now();
        let shared = s.challenges(o, &commitments).map_err(|e| e.to_string())?;
        let t2 = Instant::now();
        let proofs = spread(backends, self.jobs, s.count(), |b, k| {
            s.prove(b, k, o, &shared, &commitments[k]).map_err(|e| format!("segment {k}: {e}"))
        })?;
        Ok((proofs, Phases { commit: t1 - t0, challenges: t2 - t1, prove: t2.elapsed() }))
    }
}

fn ms(d: std::time::Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

fn read(path: &Path) -> CliResult<Vec<u8>> {
    std::fs::read(path).map_err(|e| format!("cannot read `{}`: {e}", path.display()))
}

fn expected_of(r: &RunRecord) -> Expected {
    Expected {
        program_hash: Some(r.program.hash()),
        inputs: Some(r.ex.inputs.clone()),
        outputs: Some(r.ex.outputs.clone()),
    }
}
