//! Composition on the CUDA backend: the NVRTC-generated kernel against the
//! interpreter kernel, side by side on the same inputs, for the VM's tables
//! and the stark examples; plus each system's cold NVRTC compile time (what
//! the generated kernel costs once per AIR and machine before the disk
//! cache has it; NVRTC also caches under `CUDA_CACHE_PATH`, so point that
//! at an empty folder). Both outputs must be equal.
//!
//! cargo build --release -p benches --features cuda --example compose_kernels
//! compose_kernels [LOG_TRACE_ROWS (20)] [LOG_BLOWUP (2)]

use backend_api::{BackendBase, ColMatrix, ComposeInputs, ComposeOps, ConstraintSystem, Coset, Ctx, Ext, F, GENERATOR};
use backend_cuda::nvrtc::{self, Target};
use backend_cuda::{ComposeKernel, CudaBackend, CudaConfig};
use benches::random_matrix;
use stark::examples::{Cubic, Fibonacci, Lcg, Permutation};
use stark::Machine;
use std::time::Instant;

fn ext(seed: u64) -> Ext {
    let mut r = Lcg(seed);
    Ext::new(r.next_felt(), r.next_felt(), r.next_felt())
}

fn median(gpu: &CudaBackend, mut f: impl FnMut(&CudaBackend) -> backend_api::Result<()>) -> backend_api::Result<f64> {
    gpu.time(&mut f)?;
    let mut v: Vec<f64> = (0..7).map(|_| gpu.time(&mut f).map(|t| t.ms as f64)).collect::<Result<_, _>>()?;
    v.sort_by(|a, b| a.partial_cmp(b).expect("finite"));
    Ok(v[v.len() / 2])
}

fn main() -> std::process::ExitCode {
    match run() {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            std::process::ExitCode::FAILURE
        }
    }
}

fn run() -> Result<(), String> {
    let args: Vec<u32> =
        std::env::args().skip(1).map(|a| a.parse().map_err(|_| format!("bad number {a}"))).collect::<Result<_, _>>()?;
    let log_n = args.first().copied().unwrap_or(20);
    let log_blowup = args.get(1).copied().unwrap_or(2);
    let generated = CudaBackend::new(0).map_err(|e| format!("no usable CUDA device: {e}"))?;
    let config = CudaConfig { compose: ComposeKernel::Interpreted, ..CudaConfig::default() };
    let interpreted = CudaBackend::with_config(0, config).map_err(|e| e.to_string())?;
    let program = vm::assemble(vm::examples::ALL[0].1).map_err(|e| e.to_string())?;
    let machine = vm::VmMachine::new(&program, &[], &[]);
    let mut systems: Vec<(String, ConstraintSystem)> =
        machine.tables().iter().map(|t| (format!("vm {}", t.name()), t.constraints().clone())).collect();
    systems.push(("cubic64".into(), stark::Air::constraints(&Cubic::new(64)).clone()));
    systems.push(("fibonacci".into(), stark::Air::constraints(&Fibonacci::default()).clone()));
    systems.push(("permutation".into(), stark::Air::constraints(&Permutation::default()).clone()));
    let (ma, mi) = generated.device().compute_capability;
    println!("LDE of 2^{log_n} rows at blowup {}, {}", 1 << log_blowup, generated.device().name);
    println!(
        "{:<14} {:>6} {:>6} {:>6} {:>6} {:>11} {:>13} {:>8} {:>14}",
        "system", "nodes", "cons", "width", "parts", "generated", "interpreted", "ratio", "nvrtc cold"
    );
    let ctx = Ctx::table("compose");
    let log_big = log_n + log_blowup;
    for (k, (name, cs)) in systems.iter().enumerate() {
        let l = cs.layout;
        let seed = 100 * k as u64;
        // First, before the backend compiles the same sources (NVRTC would
        // then find them under CUDA_CACHE_PATH). The parts compile in
        // parallel, as `prepare` compiles them.
        let parts = backend_cuda::compose_sources(cs);
        let t = Instant::now();
        std::thread::scope(|s| {
            let jobs: Vec<_> = parts
                .iter()
                .map(|src| s.spawn(move || nvrtc::compile_uncached("compose", src, Target::Cubin(ma, mi))))
                .collect();
            jobs.into_iter().try_for_each(|j| j.join().map_err(|_| "compile thread panicked".to_string())?.map(drop))
        })?;
        let cold = t.elapsed().as_secs_f64() * 1e3;
        let main = random_matrix(log_big, l.main_width, seed + 1);
        let aux = (l.aux_width > 0).then(|| random_matrix(log_big, 3 * l.aux_width, seed + 2));
        let fixed = (l.fixed_width > 0).then(|| random_matrix(log_big, l.fixed_width, seed + 3));
        let challenges: Vec<Ext> = (0..l.num_challenges as u64).map(|i| ext(seed + 10 + i)).collect();
        let mut rng = Lcg(seed + 20);
        let publics: Vec<F> = (0..l.num_public).map(|_| rng.next_felt()).collect();
        let aux_values: Vec<Ext> = (0..l.num_aux_values as u64).map(|i| ext(seed + 30 + i)).collect();
        let mut times = Vec::new();
        let mut outs = Vec::new();
        for gpu in [&generated, &interpreted] {
            let up = |m: &ColMatrix| gpu.upload(&ctx, m).map_err(|e| e.to_string());
            let (gm, ga, gf) = (up(&main)?, aux.as_ref().map(up).transpose()?, fixed.as_ref().map(up).transpose()?);
            let inputs = ComposeInputs {
                constraints: cs,
                fixed: gf.as_ref(),
                main: &gm,
                aux: ga.as_ref(),
                log_trace_height: log_n,
                domain: Coset::new(log_n + log_blowup, GENERATOR),
                challenges: &challenges,
                publics: &publics,
                aux_values: &aux_values,
                alpha: ext(seed + 40),
                next: None,
                log_stride: 0,
            };
            times.push(median(gpu, |g| g.compose(&ctx, &inputs).map(drop)).map_err(|e| e.to_string())?);
            let q = gpu.compose(&ctx, &inputs).map_err(|e| e.to_string())?;
            outs.push(gpu.download(&ctx, &q).map_err(|e| e.to_string())?);
        }
        if outs[0] != outs[1] {
            return Err(format!("{name}: the interpreter's quotient differs from the generated kernel's"));
        }
        println!(
            "{name:<14} {:>6} {:>6} {:>6} {:>6} {:>8.3} ms {:>10.3} ms {:>7.2}x {:>11.1} ms",
            cs.nodes.len(),
            cs.constraints.len(),
            l.fixed_width + l.main_width + 3 * l.aux_width,
            parts.len(),
            times[0],
            times[1],
            times[1] / times[0],
            cold
        );
    }
    Ok(())
}
