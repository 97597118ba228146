//! Kiln's half of the sppark peer bench (benches/sppark/run.sh runs both):
//! `prep` writes random inputs for benches/sppark/ntt_peer.cu and times
//! Kiln's CUDA NTT and coset LDEs on them (pass A); `check` times them
//! again (the closing A of A B B A), compares Kiln's outputs with the
//! samples sppark wrote, and prints both sides with ours / sppark.
//! CUDA events, median of 15 after a warm-up, data on the device; each
//! op's line also gives its fastest and slowest call, and how long the
//! host took until a call returned (the events span that too).
//!
//! ntt_io prep DIR [LOG_N] [WIDTH]      (defaults 20, 64)
//! ntt_io check DIR

use backend_api::{BackendBase, ColMatrix, Ctx, NttOps, F, GENERATOR};
use backend_cuda::CudaBackend;
use benches::random_matrix;
use std::collections::BTreeMap;
use std::path::Path;
use std::process::ExitCode;

/// The operations: key (as in the times files) and the blowup (0: NTT).
const OPS: [(&str, u32); 4] = [("ntt", 0), ("lde2", 1), ("lde4", 2), ("lde8", 3)];
const REPS: usize = 15;
const SAMPLES: u64 = 1 << 20;

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
    // The device first: without one, fail before any CPU work.
    let config = backend_cuda::CudaConfig::from_env().map_err(|e| e.to_string())?;
    let gpu = CudaBackend::with_config(0, config).map_err(|e| format!("no usable CUDA device: {e}"))?;
    let args: Vec<String> = std::env::args().skip(1).collect();
    let num = |i: usize, d: usize| args.get(i).map_or(Ok(d), |a| a.parse().map_err(|e| format!("{a}: {e}")));
    match (args.first().map(String::as_str), args.get(1)) {
        (Some("prep"), Some(dir)) => {
            let (log_n, width) = (num(2, 20)? as u32, num(3, 64)?);
            if !(4..=24).contains(&log_n) || width == 0 {
                return Err("LOG_N 4..=24, WIDTH >= 1".into());
            }
            let input = random_matrix(log_n, width, 7);
            write_input(Path::new(dir), &input)?;
            time_pass(&gpu, &input, Path::new(dir), 1).map(drop)
        }
        (Some("check"), Some(dir)) => check(&gpu, Path::new(dir)),
        _ => Err("usage: ntt_io prep DIR [LOG_N] [WIDTH] | ntt_io check DIR".into()),
    }
}

fn write_input(dir: &Path, m: &ColMatrix) -> Result<(), String> {
    let mut bytes = Vec::with_capacity(16 + 8 * m.data().len());
    bytes.extend((m.height().trailing_zeros() as u64).to_le_bytes());
    bytes.extend((m.width() as u64).to_le_bytes());
    bytes.extend(m.data().iter().flat_map(|v| v.value().to_le_bytes()));
    std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    std::fs::write(dir.join("input.bin"), bytes).map_err(|e| format!("input.bin: {e}"))
}

fn read_input(dir: &Path) -> Result<ColMatrix, String> {
    let bytes = std::fs::read(dir.join("input.bin")).map_err(|e| format!("input.bin: {e}"))?;
    let words: Vec<u64> = bytes.chunks_exact(8).map(|c| u64::from_le_bytes(c.try_into().unwrap())).collect();
    let (log_n, width) = (words[0] as u32, words[1] as usize);
    let data: Vec<F> = words[2..].iter().map(|v| F::new(*v)).collect();
    if data.len() != width << log_n {
        return Err("input.bin: wrong length".into());
    }
    Ok(ColMatrix::new(width, 1 << log_n, data))
}

/// The element at position k * 0x9E3779B97F4A7C15 mod len of the
/// column-major data, k < SAMPLES: the same positions ntt_peer.cu writes.
fn sample(m: &ColMatrix) -> Vec<u64> {
    let d = m.data();
    (0..SAMPLES).map(|k| d[(k.wrapping_mul(0x9E37_79B9_7F4A_7C15) % d.len() as u64) as usize].value()).collect()
}

fn apply(
    gpu: &CudaBackend,
    ctx: &Ctx,
    m: &<CudaBackend as BackendBase>::Matrix,
    lb: u32,
) -> backend_api::Result<<CudaBackend as BackendBase>::Matrix> {
    if lb == 0 {
        gpu.ntt(ctx, m)
    } else {
        gpu.coset_lde(ctx, m, lb, GENERATOR)
    }
}

/// Median of REPS event-timed runs of each op; writes kiln_times_PASS.txt.
fn time_pass(gpu: &CudaBackend, input: &ColMatrix, dir: &Path, pass: u32) -> Result<BTreeMap<String, f64>, String> {
    let ctx = Ctx::table("ntt_io");
    let e = |e: backend_api::BackendError| e.to_string();
    let m = gpu.upload(&ctx, input).map_err(e)?;
    let mut out = BTreeMap::new();
    let mut text = String::new();
    for (key, lb) in OPS {
        gpu.time(|g| apply(g, &ctx, &m, lb)).map_err(e)?;
        // Each call's device time, and the host's time until it returned
        // (its set-up and launches; the events span both).
        let mut host = Vec::with_capacity(REPS);
        let mut v: Vec<f64> = (0..REPS)
            .map(|_| {
                let t0 = std::time::Instant::now();
                let timed = gpu.time(|g| {
                    let r = apply(g, &ctx, &m, lb);
                    host.push(t0.elapsed().as_secs_f64() * 1e3);
                    r
                });
                timed.map(|t| f64::from(t.ms))
            })
            .collect::<Result<_, _>>()
            .map_err(e)?;
        v.sort_by(f64::total_cmp);
        host.sort_by(f64::total_cmp);
        let ms = v[REPS / 2];
        println!(
            "kiln   {key:<10} {ms:8.3} ms  (fastest {:.3}, slowest {:.3}; host until the call returned {:.3}, slowest {:.3})",
            v[0],
            v[REPS - 1],
            host[REPS / 2],
            host[REPS - 1]
        );
        text += &format!("{key} {ms}\n");
        out.insert(key.to_string(), ms);
    }
    std::fs::write(dir.join(format!("kiln_times_{pass}.txt")), text).map_err(|e| e.to_string())?;
    Ok(out)
}

fn read_times(path: &Path) -> Result<BTreeMap<String, f64>, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
    text.lines()
        .map(|l| {
            let (k, v) = l.split_once(' ').ok_or_else(|| format!("{}: bad line {l}", path.display()))?;
            Ok((k.to_string(), v.parse::<f64>().map_err(|e| format!("{}: {e}", path.display()))?))
        })
        .collect()
}

fn check(gpu: &CudaBackend, dir: &Path) -> Result<(), String> {
    let input = read_input(dir)?;
    let (log_n, width) = (input.height().trailing_zeros(), input.width());
    time_pass(gpu, &input, dir, 2)?;
    let ctx = Ctx::table("ntt_io");
    let e = |e: backend_api::BackendError| e.to_string();
    let m = gpu.upload(&ctx, &input).map_err(e)?;
    let mut agree = BTreeMap::new();
    for (key, lb) in OPS {
        let ours = sample(&gpu.download(&ctx, &apply(gpu, &ctx, &m, lb).map_err(e)?).map_err(e)?);
        let path = dir.join(format!("sppark_{key}.samples"));
        let bytes = std::fs::read(&path).map_err(|e| format!("{}: {e}", path.display()))?;
        let theirs: Vec<u64> = bytes.chunks_exact(8).map(|c| u64::from_le_bytes(c.try_into().unwrap())).collect();
        agree.insert(key, ours == theirs);
    }
    let (k1, k2) = (read_times(&dir.join("kiln_times_1.txt"))?, read_times(&dir.join("kiln_times_2.txt"))?);
    let (s1, s2) = (read_times(&dir.join("sppark_times_1.txt"))?, read_times(&dir.join("sppark_times_2.txt"))?);
    let both = |a: &BTreeMap<String, f64>, b: &BTreeMap<String, f64>, k: &str| -> Result<f64, String> {
        Ok((a.get(k).ok_or(format!("no time for {k}"))? + b.get(k).ok_or(format!("no time for {k}"))?) / 2.0)
    };
    println!(
        "\n{width} columns of 2^{log_n}, data on the device, CUDA events, median of {REPS}, passes A B B A averaged"
    );
    println!("| work | Kiln (ms) | sppark 1 stream (ms) | sppark 3 streams (ms) | ours / best sppark | outputs |");
    println!("|---|---:|---:|---:|---:|---|");
    for (key, lb) in OPS {
        let ours = both(&k1, &k2, key)?;
        let (one, three) = (both(&s1, &s2, &format!("{key}_1"))?, both(&s1, &s2, &format!("{key}_3"))?);
        let what = if lb == 0 {
            format!("forward NTT {width} x 2^{log_n}")
        } else {
            format!("iNTT + coset LDE 2^{log_n} x {width}, blowup {}", 1 << lb)
        };
        let ok = if agree[key] { "equal (2^20 samples)" } else { "DIFFER" };
        println!("| {what} | {ours:.3} | {one:.3} | {three:.3} | {:.2} | {ok} |", ours / one.min(three));
    }
    if agree.values().all(|a| *a) {
        Ok(())
    } else {
        Err("Kiln and sppark outputs differ".into())
    }
}
