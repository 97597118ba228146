//! The device-memory model against the device: every operation of a proof
//! of each VM example (and of the 2^LOG x 64 degree-3 synthetic AIR) runs
//! alone, between two synchronisations, and its peak is measured as the
//! stream-ordered pool's high-water mark over the bytes in use before it,
//! plus its inputs. The model's `stage_bytes` for the operation's operands
//! (`Op::dims`, as the CUDA gate admits it) is printed beside it, per
//! table and stage (the worst call), with the bytes the stages asked for
//! (the pool rounds small allocations up to its granularity, which
//! dominates tiny tables: such rows are marked `granularity` when the
//! model matches what was asked for).
//!
//! cargo run --release -p benches --features cuda --example model_check -- [LOG] [--small]
//! (LOG defaults to 20; --small skips the 2^20-cycle program)

use backend_api::memory::{matrix_bytes, stage_bytes, tree_bytes};
use backend_api::{ColMatrix, Ctx, DeviceMatrix, DeviceTree, Op, Out, Result, Stage, Wrapper, F};
use backend_cuda::{CudaBackend, CudaConfig};
use stark::{Machine, ProofOptions};
use std::collections::BTreeMap;
use std::process::ExitCode;
use std::sync::Mutex;
use vm::{asm, execute, trace, ExecOptions, VmMachine};

/// The worst call of one (table, stage).
#[derive(Default, Clone, Copy)]
struct Row {
    calls: u64,
    model: u64,
    pool: u64,
    asked: u64,
    worst: f64,
}

/// Runs every op alone and measures it.
struct Measured {
    inner: CudaBackend,
    rows: Mutex<BTreeMap<(String, Stage), Row>>,
}

/// The bytes of the distinct matrices `op` reads: DEEP names the same LDE
/// at each of its points, and counting it twice doubled its row.
fn inputs(op: &Op<'_, &backend_cuda::CudaMatrix, &backend_cuda::CudaTree>) -> u64 {
    let mut seen = std::collections::HashSet::new();
    let m: u64 = op
        .matrices()
        .into_iter()
        .filter(|m| seen.insert(std::ptr::from_ref::<backend_cuda::CudaMatrix>(*m)))
        .map(|m| matrix_bytes(m.height() as u64, m.width() as u64))
        .sum();
    match op {
        Op::Open { tree, .. } => m + tree_bytes(tree.leaves() as u64),
        _ => m,
    }
}

impl Measured {
    fn measure(
        &self,
        ctx: &Ctx,
        op: Op<'_, &backend_cuda::CudaMatrix, &backend_cuda::CudaTree>,
    ) -> Result<Out<backend_cuda::CudaMatrix, backend_cuda::CudaTree>> {
        let (stage, dims, input) = (op.stage(), op.dims(), inputs(&op));
        // A reshape is a view: it allocates nothing, though it belongs to
        // the commit's stage, whose model counts the tree it builds.
        let view = matches!(op, Op::Reshape { .. });
        self.inner.synchronize()?;
        let (used, _) = self.inner.pool_usage(true)?;
        let (live, _) = self.inner.live_bytes(true);
        let out = op.dispatch(&self.inner, ctx)?;
        self.inner.synchronize()?;
        let (_, high) = self.inner.pool_usage(false)?;
        let (_, peak) = self.inner.live_bytes(false);
        let (pool, asked) = (high.saturating_sub(used) + input, peak.saturating_sub(live) + input);
        let model = if view { input } else { stage_bytes(stage, &dims) };
        let ratio = model as f64 / pool.max(1) as f64;
        // KILN_MODEL_TRACE=TABLE/STAGE prints every call of that row.
        if std::env::var("KILN_MODEL_TRACE").is_ok_and(|t| t == format!("{}/{}", ctx.table, stage.name())) {
            let (n, w) = (dims.log_n, dims.main_width);
            println!(
                "  call: 2^{n} x {w}, model {:.3} MiB, pool {:.3} MiB, asked {:.3} MiB",
                mib(model),
                mib(pool),
                mib(asked)
            );
        }
        let mut rows = self.rows.lock().unwrap();
        let r = rows.entry((ctx.table.to_string(), stage)).or_default();
        r.calls += 1;
        if r.calls == 1 || (ratio - 1.0).abs() > (r.worst - 1.0).abs() {
            *r = Row { calls: r.calls, model, pool, asked, worst: ratio };
        }
        Ok(out)
    }
}

impl Wrapper for Measured {
    type Inner = CudaBackend;
    fn inner(&self) -> &CudaBackend {
        &self.inner
    }
    fn call(
        &self,
        ctx: &Ctx,
        op: Op<'_, &backend_cuda::CudaMatrix, &backend_cuda::CudaTree>,
    ) -> Result<Out<backend_cuda::CudaMatrix, backend_cuda::CudaTree>> {
        self.measure(ctx, op)
    }
}

fn mib(b: u64) -> f64 {
    b as f64 / (1u64 << 20) as f64
}

/// Proves once to warm up (kernels, twiddles), then measured.
fn check(b: &Measured, name: &str, machine: &dyn Machine, traces: Vec<ColMatrix>, publics: &[F]) -> Result<(), String> {
    let o = ProofOptions::default();
    // One thread: operations run one at a time, never nested in another's
    // parallel copy.
    let pool = rayon::ThreadPoolBuilder::new().num_threads(1).build().map_err(|e| e.to_string())?;
    pool.install(|| stark::prove(b, machine, traces.clone(), publics, &o)).map_err(|e| e.to_string())?;
    b.rows.lock().unwrap().clear();
    pool.install(|| stark::prove(b, machine, traces, publics, &o)).map_err(|e| e.to_string())?;
    let rows = std::mem::take(&mut *b.rows.lock().unwrap());
    let (mut ok, mut granular, mut off) = (0, 0, 0);
    for ((table, stage), r) in rows {
        let near = |x: u64| (r.model as f64 - x as f64).abs() <= 0.10 * x.max(1) as f64;
        let note = if near(r.pool) {
            ok += 1;
            "ok"
        } else if near(r.asked) {
            granular += 1;
            "granularity"
        } else {
            off += 1;
            "MODEL"
        };
        println!(
            "{name:<22} {table:<24} {:<15} {:>5} {:>11.3} {:>11.3} {:>11.3} {:>7.3}  {note}",
            stage.name(),
            r.calls,
            mib(r.model),
            mib(r.pool),
            mib(r.asked),
            r.worst
        );
    }
    println!("{name}: {ok} stages within 10% of the pool's high-water mark, {granular} within 10% of the bytes asked for (pool granularity), {off} off");
    Ok(())
}

fn vm_program(path: &str, inputs: &str) -> Result<(VmMachine, Vec<ColMatrix>), String> {
    let src = std::fs::read(path).map_err(|e| format!("{path}: {e}"))?;
    let program = asm::assemble_bytes(&src).map_err(|e| format!("{path}: {e}"))?;
    let inputs: Vec<F> = inputs
        .split(',')
        .map(|v| v.trim().parse::<u64>().map(F::new))
        .collect::<Result<_, _>>()
        .map_err(|e| e.to_string())?;
    let ex =
        execute(&program, &inputs, &ExecOptions { record: true, ..Default::default() }).map_err(|e| e.to_string())?;
    let traces = trace::generate(&program, &ex).map_err(|e| e.to_string())?;
    Ok((VmMachine::new(&program, &ex.inputs, &ex.outputs), traces))
}

fn run() -> Result<(), String> {
    let config = CudaConfig::from_env().map_err(|e| e.to_string())?;
    let dev = CudaBackend::with_config(0, config).map_err(|e| format!("no usable CUDA device: {e}"))?;
    let args: Vec<String> = std::env::args().skip(1).collect();
    let log: u32 =
        args.iter().find(|a| !a.starts_with("--")).map_or(Ok(20), |s| s.parse()).map_err(|e| format!("LOG: {e}"))?;
    let small = args.iter().any(|a| a == "--small");
    let b = Measured { inner: dev, rows: Mutex::new(BTreeMap::new()) };
    println!(
        "{:<22} {:<24} {:<15} {:>5} {:>11} {:>11} {:>11} {:>7}",
        "proof", "table", "stage", "calls", "model MiB", "pool MiB", "asked MiB", "m/pool"
    );
    let mut programs =
        vec![("fibonacci.kasm", "100"), ("factorial.kasm", "20"), ("matmul.kasm", "6"), ("chain.kasm", "1000,3")];
    if !small {
        programs.push(("chain.kasm", "262142,3"));
    }
    for (file, inputs) in programs {
        let (machine, traces) = vm_program(&format!("vm/examples/{file}"), inputs)?;
        check(&b, &format!("{file} {inputs}"), &machine, traces, machine.publics())?;
    }
    let cubic = stark::SingleTable(stark::examples::Cubic::new(64));
    let (t, p) = cubic.0.trace(log, 1);
    check(&b, &format!("cubic64 2^{log}"), &cubic, vec![t], &p)?;
    Ok(())
}

fn main() -> ExitCode {
    match run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}
