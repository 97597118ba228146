//! Cold NVRTC compile time of every kernel a VM proof needs, one at a time
//! (no disk cache), to machine code for the device at hand: the static
//! modules and each table's generated composition and LogUp kernels. What
//! an empty kernel cache costs `kiln prove`, kernel by kernel (the CLI
//! compiles them in parallel, so the slowest one bounds it). NVRTC caches
//! machine code under `CUDA_CACHE_PATH` too: point it at an empty folder.
//!
//! cargo build --release -p benches --features cuda --example kernel_compile
//! kernel_compile [NVRTC_OPTION ...]   (extra options, e.g. --ptxas-options=-O1)

use backend_cuda::nvrtc::{self, Target};
use std::process::ExitCode;
use std::time::Instant;

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
    // Without a device (NVRTC alone), machine code for the H200's sm_90.
    let device = backend_cuda::probe().ok().and_then(|d| d.into_iter().next());
    let (name, (ma, mi)) = device.map_or(("no device".into(), (9, 0)), |d| (d.name, d.compute_capability));
    let program = vm::assemble(vm::examples::CHAIN).map_err(|e| e.to_string())?;
    let machine = vm::VmMachine::new(&program, &[], &[]);
    let mut sources: Vec<(String, String)> =
        kernels_cuda::MODULES.iter().map(|m| (format!("static {}", m.name), m.source())).collect();
    for t in stark::Machine::tables(&machine) {
        for (p, src) in backend_cuda::compose_sources(t.constraints()).into_iter().enumerate() {
            sources.push((format!("compose {} {p}", t.name()), src));
        }
        if let Some(l) = t.logup() {
            sources.push((format!("logup {}", t.name()), backend_cuda::logup_source(l)));
        }
    }
    let extra: Vec<String> = std::env::args().skip(1).collect();
    let extra: Vec<&str> = extra.iter().map(String::as_str).collect();
    println!("{name} (sm_{ma}{mi}), NVRTC {:?}, extra options {extra:?}", nvrtc::version()?);
    println!("{:<24} {:>8} {:>10} {:>10}", "kernel", "lines", "cubin KiB", "compile");
    for (kernel, src) in &sources {
        let t = Instant::now();
        let c = nvrtc::compile_with(kernel, src, Target::Cubin(ma, mi), &extra)?;
        let ms = t.elapsed().as_secs_f64() * 1e3;
        println!("{kernel:<24} {:>8} {:>10.1} {ms:>8.1} ms", src.lines().count(), c.image.len() as f64 / 1024.0);
    }
    Ok(())
}
