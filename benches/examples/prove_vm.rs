//! Proves a VM program on the CPU backend and, in a `--features cuda` or
//! `--features wgpu` build, on the GPU backends, in one process, warm,
//! alternating A B B A so each ratio is measured side by side: CPU against
//! CUDA, and CUDA against wgpu (CPU against wgpu without CUDA). Device
//! backends run inside `Resilient`, as `kiln prove` runs them.
//!
//! cargo run --release -p benches --features cuda,wgpu --example prove_vm -- [PROGRAM] [INPUTS] [REPEATS]
//! (defaults: vm/examples/chain.kasm, 262142,3 (2^20 cycles), 2)

use backend_api::{Backend, F};
use backend_cpu::CpuBackend;
use benches::ms;
use stark::{prove_with_stats, ProofOptions, ProveStats};
use std::process::ExitCode;
use std::time::Instant;
use vm::{asm, execute, trace, ExecOptions, VmMachine};

fn prove_once<B: Backend>(
    b: &B,
    machine: &VmMachine,
    traces: &[backend_api::ColMatrix],
    o: &ProofOptions,
) -> Result<(Vec<u8>, ProveStats), String> {
    let (proof, stats) =
        prove_with_stats(b, machine, traces.to_vec(), machine.publics(), o, None).map_err(|e| e.to_string())?;
    Ok((proof.to_bytes(), stats))
}

fn report(name: &str, s: &ProveStats) {
    let stages: Vec<String> = s.per_stage().iter().map(|(k, d)| format!("{k} {:.1}", ms(*d))).collect();
    println!("{name:<5} prove {:>9.1} ms   [{}]", ms(s.total), stages.join(", "));
    // Stage times add up over tables that run at once; the rounds are wall time.
    let rounds: Vec<String> = s.rounds.iter().map(|(k, d)| format!("{k} {:.1}", ms(*d))).collect();
    println!("{:<5} rounds [{}]", "", rounds.join(", "));
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

fn run() -> Result<(), String> {
    // The devices first: without one, fail before spending the CPU half.
    #[cfg(any(feature = "cuda", feature = "wgpu"))]
    use backend_cpu::{RecoveryPolicy, Resilient};
    #[cfg(feature = "cuda")]
    let cuda = Resilient::new(
        backend_cuda::CudaConfig::from_env().map_err(|e| e.to_string()).and_then(|c| {
            backend_cuda::CudaBackend::with_config(0, c).map_err(|e| format!("no usable CUDA device: {e}"))
        })?,
        RecoveryPolicy::default(),
    );
    #[cfg(feature = "wgpu")]
    let wgpu = Resilient::new(
        backend_wgpu::WgpuBackend::new().map_err(|e| format!("no usable wgpu adapter: {e}"))?,
        RecoveryPolicy::default(),
    );
    let args: Vec<String> = std::env::args().skip(1).collect();
    let path = args.first().cloned().unwrap_or_else(|| "vm/examples/chain.kasm".into());
    let inputs = args.get(1).cloned().unwrap_or_else(|| "262142,3".into());
    let repeats: usize = args.get(2).map_or(Ok(2), |s| s.parse()).map_err(|e| format!("REPEATS: {e}"))?;
    let src = std::fs::read(&path).map_err(|e| format!("{path}: {e}"))?;
    let program = asm::assemble_bytes(&src).map_err(|e| format!("{path}: {e}"))?;
    let inputs: Vec<F> = inputs
        .split(',')
        .map(|v| v.trim().parse::<u64>().map(F::new).map_err(|e| format!("input {v}: {e}")))
        .collect::<Result<_, _>>()?;
    let ex =
        execute(&program, &inputs, &ExecOptions { record: true, ..Default::default() }).map_err(|e| e.to_string())?;
    let machine = VmMachine::new(&program, &ex.inputs, &ex.outputs);
    let t0 = Instant::now();
    let traces = trace::generate(&program, &ex).map_err(|e| e.to_string())?;
    println!(
        "{path}: {} cycles, traces in {:.1} ms, {} threads",
        ex.cycles,
        ms(t0.elapsed()),
        rayon::current_num_threads()
    );
    let o = ProofOptions::default();
    let cpu = CpuBackend::new();
    let (cpu_bytes, _) = prove_once(&cpu, &machine, &traces, &o)?;
    #[cfg(any(feature = "cuda", feature = "wgpu"))]
    {
        #[cfg(feature = "cuda")]
        {
            same_proof("cuda", &cuda, &machine, &traces, &o, &cpu_bytes)?;
            abba(("cpu", &cpu), ("cuda", &cuda), &machine, &traces, &o, repeats)?;
            if let Ok(n) = std::env::var("KILN_LOOP_CUDA").map(|v| v.parse::<usize>().unwrap_or(0)) {
                loop_proves(&cuda, &machine, &traces, &o, n)?;
            }
        }
        #[cfg(feature = "wgpu")]
        {
            same_proof("wgpu", &wgpu, &machine, &traces, &o, &cpu_bytes)?;
            // The warm-up's device time is not the proves'.
            let _ = wgpu.device().take_profile();
            #[cfg(feature = "cuda")]
            abba(("cuda", &cuda), ("wgpu", &wgpu), &machine, &traces, &o, repeats)?;
            #[cfg(not(feature = "cuda"))]
            abba(("cpu", &cpu), ("wgpu", &wgpu), &machine, &traces, &o, repeats)?;
            if let Some(table) = wgpu.device().take_profile() {
                println!("wgpu device time over the {} proves above (KILN_WGPU_PROFILE=1):\n{table}", 2 * repeats);
            }
        }
    }
    #[cfg(not(any(feature = "cuda", feature = "wgpu")))]
    {
        for _ in 0..repeats {
            let (b, s) = prove_once(&cpu, &machine, &traces, &o)?;
            assert_eq!(b, cpu_bytes, "CPU proofs are reproducible");
            report("cpu", &s);
        }
    }
    Ok(())
}

/// Warm-up prove on a device backend (kernel caches, pools, twiddle
/// tables), checked against the CPU proof.
#[cfg(any(feature = "cuda", feature = "wgpu"))]
fn same_proof<B: Backend>(
    name: &str,
    b: &B,
    machine: &VmMachine,
    traces: &[backend_api::ColMatrix],
    o: &ProofOptions,
    cpu_bytes: &[u8],
) -> Result<(), String> {
    let (bytes, _) = prove_once(b, machine, traces, o)?;
    if bytes != cpu_bytes {
        return Err(format!("{name} and CPU proofs differ"));
    }
    println!("{name} proof identical to the CPU's ({} bytes)", bytes.len());
    Ok(())
}

/// Proves alternately on A and B (A B B A, `repeats` times) and prints the
/// ratio of their total prove times.
#[cfg(any(feature = "cuda", feature = "wgpu"))]
fn abba<A: Backend, B: Backend>(
    (an, a): (&str, &A),
    (bn, b): (&str, &B),
    machine: &VmMachine,
    traces: &[backend_api::ColMatrix],
    o: &ProofOptions,
    repeats: usize,
) -> Result<(), String> {
    let (mut a_sum, mut b_sum) = (0.0, 0.0);
    for _ in 0..repeats {
        for first in [true, false, false, true] {
            let stats = if first { prove_once(a, machine, traces, o)?.1 } else { prove_once(b, machine, traces, o)?.1 };
            report(if first { an } else { bn }, &stats);
            *(if first { &mut a_sum } else { &mut b_sum }) += stats.total.as_secs_f64();
        }
    }
    println!("ratio {an}/{bn} (A B B A x {repeats}): {:.2}x", a_sum / b_sum);
    Ok(())
}

/// Back-to-back proves for an external GPU-busy sampler.
#[cfg(feature = "cuda")]
fn loop_proves<B: Backend>(
    b: &B,
    machine: &VmMachine,
    traces: &[backend_api::ColMatrix],
    o: &ProofOptions,
    n: usize,
) -> Result<(), String> {
    let unix = || std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0.0, |d| d.as_secs_f64());
    let (t, start_unix) = (Instant::now(), unix());
    let mut prove_s = 0.0;
    for _ in 0..n {
        prove_s += prove_once(b, machine, traces, o)?.1.total.as_secs_f64();
    }
    println!("loop: {n} CUDA proves, {:.2} s wall, {:.2} s inside prove", t.elapsed().as_secs_f64(), prove_s);
    println!("loop window (unix): {start_unix:.3} {:.3}", unix());
    Ok(())
}
