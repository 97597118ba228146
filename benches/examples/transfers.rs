//! Host-to-device and device-to-host rates of the CUDA backend: `upload`
//! and `download` of random matrices of 2^LOG rows x 64 columns, each the
//! best and the median of REPEATS after a warm-up, every download checked
//! against what was uploaded.
//!
//! cargo run --release -p benches --features cuda --example transfers -- [LOGS] [REPEATS]
//! (LOGS comma-separated, default 16,20; REPEATS default 9)

use backend_api::{BackendBase, Ctx};
use backend_cuda::CudaBackend;
use benches::random_matrix;
use std::process::ExitCode;
use std::time::Instant;

fn rates(b: &CudaBackend, log_n: u32, repeats: usize) -> Result<(), String> {
    let ctx = Ctx::table("transfers");
    let host = random_matrix(log_n, 64, u64::from(log_n));
    let bytes = (host.height() * host.width() * 8) as f64;
    let e = |e: backend_api::BackendError| e.to_string();
    let (mut up, mut down) = (Vec::new(), Vec::new());
    for i in 0..=repeats {
        let t0 = Instant::now();
        let m = b.upload(&ctx, &host).map_err(e)?;
        let t1 = Instant::now();
        let back = b.download(&ctx, &m).map_err(e)?;
        let t2 = Instant::now();
        if back.data() != host.data() {
            return Err(format!("2^{log_n} x 64: the download differs from the upload"));
        }
        if i > 0 {
            up.push(bytes / (t1 - t0).as_secs_f64() / 1e9);
            down.push(bytes / (t2 - t1).as_secs_f64() / 1e9);
        }
    }
    for (name, mut v) in [("upload", up), ("download", down)] {
        v.sort_by(f64::total_cmp);
        let (best, median) = (v[v.len() - 1], v[v.len() / 2]);
        println!(
            "{name:<8} 2^{log_n} x 64 ({:>4} MiB): best {best:6.2} GB/s, median {median:6.2} GB/s",
            bytes as u64 >> 20
        );
    }
    Ok(())
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let logs: Vec<u32> =
        args.first().map_or("16,20", String::as_str).split(',').filter_map(|s| s.parse().ok()).collect();
    let repeats = args.get(1).and_then(|s| s.parse().ok()).unwrap_or(9usize).max(1);
    let run = || -> Result<(), String> {
        let b = CudaBackend::new(0).map_err(|e| e.to_string())?;
        logs.iter().try_for_each(|&l| rates(&b, l, repeats))
    };
    match run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}
