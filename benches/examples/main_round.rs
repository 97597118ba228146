//! The main round's parts on the CUDA backend, each alone and together,
//! for a random 2^LOG x WIDTH trace: the upload, the coset LDE of a trace
//! already on the device, the two overlapped (`upload_coset_lde`), the
//! Merkle commitment of the LDE, and the whole round: overlapped upload
//! and LDE, then the commitment; and as one `upload_commit`, the extension
//! committed once complete and with its leaves hashed under the upload
//! (`CudaConfig::leaves_under_upload`, a second backend on the device). Wall time until the last result is read
//! back, median and best of REPEATS after a warm-up. What the round costs
//! beyond the slowest of its parts is what overlapping them leaves on the
//! table. Then the cost of pinning the trace's buffer
//! (`BackendBase::pin`), and the upload, the overlap and the round again
//! from the pinned trace.
//!
//! cargo run --release -p benches --features cuda --example main_round -- [LOG] [WIDTH] [LOG_BLOWUP] [blake3|keccak] [REPEATS]

use backend_api::{BackendBase, Ctx, DeviceTree, HashKind, MerkleOps, NttOps, GENERATOR};
use backend_cuda::CudaBackend;
use benches::{ms, random_matrix};
use std::process::ExitCode;
use std::time::{Duration, Instant};

/// One measured part: its wall time.
type Part<'a> = dyn Fn() -> Result<Duration, String> + 'a;

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
    let (log_n, width, log_blowup) = (num(0, "20")? as u32, num(1, "64")?, num(2, "2")? as u32);
    let hash: HashKind = arg(3, "blake3").parse()?;
    let repeats = num(4, "9")?.max(1);
    if !(4..=24).contains(&log_n) || width == 0 || log_blowup > 4 {
        return Err("LOG 4..=24, WIDTH >= 1, LOG_BLOWUP <= 4".into());
    }
    let config = backend_cuda::CudaConfig::from_env().map_err(|e| e.to_string())?;
    let b = CudaBackend::with_config(0, config).map_err(|e| format!("no usable CUDA device: {e}"))?;
    let orders = [false, true].map(|under| {
        let config = backend_cuda::CudaConfig { leaves_under_upload: under, ..config };
        CudaBackend::with_config(0, config).map_err(|e| format!("a second backend: {e}"))
    });
    let [after, under] = orders;
    let (after, under) = (after?, under?);
    let ctx = Ctx::table("main_round");
    let host = random_matrix(log_n, width, 11);
    let e = |e: backend_api::BackendError| e.to_string();
    let on_device = b.upload(&ctx, &host).map_err(e)?;
    let lde = b.coset_lde(&ctx, &on_device, log_blowup, GENERATOR).map_err(e)?;
    let root = b.commit(&ctx, &lde, hash).map_err(e)?.root();
    // A row read back waits for the work that made the matrix.
    let settled = |m: &backend_cuda::CudaMatrix| b.rows(&ctx, m, &[0]).map(drop).map_err(e);
    let timed = |f: &dyn Fn() -> Result<(), String>| -> Result<Duration, String> {
        let t0 = Instant::now();
        f().map(|()| t0.elapsed())
    };
    let round = |b: &CudaBackend| -> Result<(), String> {
        match b.upload_commit(&ctx, &host, log_blowup, GENERATOR, hash).map_err(e)?.2.root() == root {
            true => Ok(()),
            false => Err("upload_commit's root differs from the parts'".into()),
        }
    };
    let parts: [(&str, Box<Part>); 7] = [
        ("upload", Box::new(|| timed(&|| settled(&b.upload(&ctx, &host).map_err(e)?)))),
        (
            "coset LDE of the uploaded trace",
            Box::new(|| timed(&|| settled(&b.coset_lde(&ctx, &on_device, log_blowup, GENERATOR).map_err(e)?))),
        ),
        (
            "upload and LDE overlapped",
            Box::new(|| timed(&|| settled(&b.upload_coset_lde(&ctx, &host, log_blowup, GENERATOR).map_err(e)?.1))),
        ),
        ("commit of the LDE", Box::new(|| timed(&|| b.commit(&ctx, &lde, hash).map(|t| _ = t.root()).map_err(e)))),
        (
            "the round (upload, LDE, commit)",
            Box::new(|| {
                timed(&|| {
                    let (_, l) = b.upload_coset_lde(&ctx, &host, log_blowup, GENERATOR).map_err(e)?;
                    match b.commit(&ctx, &l, hash).map_err(e)?.root() == root {
                        true => Ok(()),
                        false => Err("the round's root differs from the parts'".into()),
                    }
                })
            }),
        ),
        ("upload_commit, committed after", Box::new(|| timed(&|| round(&after)))),
        ("upload_commit, leaves under upload", Box::new(|| timed(&|| round(&under)))),
    ];
    let mib = (host.height() * width * 8) >> 20;
    println!("2^{log_n} x {width} ({mib} MiB), blowup 2^{log_blowup}, {hash:?}, {repeats} repeats after a warm-up");
    for (name, f) in &parts {
        report(name, repeats, f)?;
    }
    // Pinning a fresh buffer (a copy of the trace) and releasing it.
    report("pin and unpin the trace's buffer", repeats, &|| {
        let copy = backend_api::ColMatrix::new(width, host.height(), host.data().to_vec());
        let t0 = Instant::now();
        drop(b.pin(&ctx, &copy).map_err(e)?);
        Ok(t0.elapsed())
    })?;
    let _pinned = b.pin(&ctx, &host).map_err(e)?;
    println!("with the trace pinned in place:");
    for (name, f) in
        parts.iter().filter(|(name, _)| *name != "coset LDE of the uploaded trace" && *name != "commit of the LDE")
    {
        report(name, repeats, f)?;
    }
    Ok(())
}

/// Runs `f` once to warm up, then `repeats` times; prints the median and
/// the best of the times `f` returns.
fn report(name: &str, repeats: usize, f: &Part) -> Result<(), String> {
    let mut times = Vec::with_capacity(repeats);
    for i in 0..=repeats {
        let t = f()?;
        if i > 0 {
            times.push(ms(t));
        }
    }
    times.sort_by(f64::total_cmp);
    println!("  {name:<34} median {:7.2} ms, best {:7.2} ms", times[times.len() / 2], times[0]);
    Ok(())
}
