//! One coset LDE of a random 2^LOG x WIDTH matrix, timed alone in its own
//! process, REPEATS times: Kiln's CPU backend (`kiln`) or Plonky3's
//! `Radix2DitParallel` (`plonky3`, its row-major copy of the same input).
//! Small enough to profile (`perf record`) and to alternate builds, where
//! `vs_plonky3` runs both peers and checks values in one process.
//!
//! RUSTFLAGS="-C target-cpu=x86-64-v4" cargo run --release -p benches --example cpu_lde -- [LOG] [LOG_BLOWUP] [REPEATS] [kiln|plonky3]

use backend_api::{BackendBase, Ctx, NttOps, GENERATOR};
use backend_cpu::CpuBackend;
use benches::{ms, random_matrix};
use p3_dft::{Radix2DitParallel, TwoAdicSubgroupDft};
use p3_goldilocks::Goldilocks;
use p3_matrix::dense::RowMajorMatrix;
use std::process::ExitCode;
use std::time::Instant;

const WIDTH: usize = 64;

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
    let args: Vec<String> = std::env::args().skip(1).collect();
    let arg = |i: usize, d: &str| args.get(i).cloned().unwrap_or_else(|| d.to_string());
    let num = |i: usize, d: &str| arg(i, d).parse::<usize>().map_err(|e| format!("argument {}: {e}", i + 1));
    let (log_n, log_blowup, repeats) = (num(0, "20")? as u32, num(1, "1")? as u32, num(2, "3")?.max(1));
    let who = arg(3, "kiln");
    if !(4..=22).contains(&log_n) || log_blowup > 4 {
        return Err("LOG must be 4..=22 and LOG_BLOWUP at most 4".into());
    }
    let input = random_matrix(log_n, WIDTH, 5);
    let what = format!("{who} coset LDE 2^{log_n} x {WIDTH}, blowup {}", 1 << log_blowup);
    match who.as_str() {
        "kiln" => {
            let (b, ctx) = (CpuBackend::new(), Ctx::table("cpu_lde"));
            let m = b.upload(&ctx, &input).map_err(|e| e.to_string())?;
            for _ in 0..repeats {
                let t = Instant::now();
                let out = b.coset_lde(&ctx, &m, log_blowup, GENERATOR).map_err(|e| e.to_string())?;
                println!("{what}: {} ms", ms(t.elapsed()));
                drop(out);
            }
        }
        "plonky3" => {
            // The same values, row-major, as Plonky3 stores a matrix.
            let values = (0..WIDTH << log_n).map(|i| Goldilocks::new(input.get(i / WIDTH, i % WIDTH).value()));
            let (m, dft) = (RowMajorMatrix::new(values.collect(), WIDTH), Radix2DitParallel::<Goldilocks>::default());
            for _ in 0..repeats {
                // The copy it consumes is made before the clock starts.
                let owned = m.clone();
                let t = Instant::now();
                let out = dft.coset_lde_batch(owned, log_blowup as usize, Goldilocks::new(GENERATOR.value()));
                println!("{what}: {} ms", ms(t.elapsed()));
                drop(out);
            }
        }
        other => return Err(format!("unknown peer {other:?}: kiln or plonky3")),
    }
    Ok(())
}
