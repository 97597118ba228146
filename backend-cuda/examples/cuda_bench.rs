//! Per-stage GPU times (CUDA events, median of 7 after a warm-up), bytes
//! moved, the bandwidth floor (bytes / 4.3 TB/s) and the ratio to it, for a
//! 2^KILN_BENCH_LOG (default 20) x KILN_BENCH_COLS (default 64) trace.
//!
//! `cargo run --release -p backend-cuda --example cuda_bench`

use backend_api::{
    BackendBase, ColMatrix, ComposeInputs, ComposeOps, ConstraintBuilder, ConstraintSystem, Coset, Ctx, DeepColumns,
    DeepOps, DeepPoint, Expr, Ext, FriOps, HashKind, Layout, MerkleOps, NttOps, Result, F, GENERATOR,
};
use backend_cuda::{CudaBackend, CudaMatrix};

const BW: f64 = 4.3e12;

fn env(name: &str, default: usize) -> usize {
    std::env::var(name).ok().and_then(|v| v.parse().ok()).unwrap_or(default)
}

fn random(w: usize, h: usize, seed: u64) -> ColMatrix {
    let mut x = seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
    let data = (0..w * h)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            F::new(x | 1)
        })
        .collect();
    ColMatrix::new(w, h, data)
}

fn median<T>(gpu: &CudaBackend, mut f: impl FnMut(&CudaBackend) -> Result<T>) -> Result<f64> {
    gpu.time(&mut f)?;
    let mut v = Vec::new();
    for _ in 0..7 {
        v.push(gpu.time(&mut f)?.ms as f64);
    }
    v.sort_by(|a, b| a.partial_cmp(b).expect("finite"));
    Ok(v[v.len() / 2])
}

fn report(name: &str, ms: f64, bytes: f64) {
    let floor = bytes / BW * 1e3;
    println!(
        "{name:<44} {ms:>9.3} ms  {:>8.1} MB  {:>7.1} GB/s  floor {floor:>7.3} ms  ratio {:>5.2}",
        bytes / 1e6,
        bytes / ms / 1e6,
        ms / floor
    );
}

fn main() -> Result<()> {
    let Some(gpu) = open()? else { return Ok(()) };
    let ctx = Ctx::table("bench");
    let log = env("KILN_BENCH_LOG", 20) as u32;
    let w = env("KILN_BENCH_COLS", 64);
    let n = 1usize << log;
    println!("device: {:?}", gpu.device());
    println!("trace 2^{log} x {w}; floor = bytes / 4.3 TB/s");
    let m = transfers(&gpu, &ctx, w, n)?;
    let e = 8.0 * (n * w) as f64;
    transforms(&gpu, &ctx, &m, e)?;
    // KILN_BENCH_TRANSFORMS_ONLY=1: stop after the transforms (tuning runs).
    if std::env::var("KILN_BENCH_TRANSFORMS_ONLY").is_ok_and(|v| v == "1") {
        return Ok(());
    }
    merkle(&gpu, &ctx, &m, "trace", e, n)?;
    let lde = gpu.coset_lde(&ctx, &m, 1, GENERATOR)?;
    merkle(&gpu, &ctx, &lde, "LDE 2x", 2.0 * e, 2 * n)?;
    // Extension-field stages on the LDE domain.
    fri_folds(&gpu, &ctx, log)?;
    deep(&gpu, &ctx, &lde, log, w, e)?;
    compose(&gpu, &ctx, log, w)?;
    grind(&gpu, &ctx)
}

/// The device of ordinal 0 with the environment's configuration; `None`
/// (after saying so) when there is none, so the bench passes without a GPU.
fn open() -> Result<Option<CudaBackend>> {
    let config =
        backend_cuda::CudaConfig::from_env().map_err(|e| backend_api::BackendError::Unavailable(e.to_string()))?;
    match CudaBackend::with_config(0, config) {
        Ok(g) => Ok(Some(g)),
        Err(e) => {
            println!("no CUDA device: {e}");
            Ok(None)
        }
    }
}

/// Times one upload and one download of a random `w` x `n` trace; returns
/// the uploaded trace.
fn transfers(gpu: &CudaBackend, ctx: &Ctx, w: usize, n: usize) -> Result<CudaMatrix> {
    let host = random(w, n, 1);
    let t = std::time::Instant::now();
    let m = gpu.upload(ctx, &host)?;
    gpu.synchronize()?;
    let up = t.elapsed().as_secs_f64();
    println!(
        "upload {:.1} MB: {:.1} ms ({:.1} GB/s, pinned staging)",
        8.0 * (n * w) as f64 / 1e6,
        up * 1e3,
        8.0 * (n * w) as f64 / up / 1e9
    );
    let t = std::time::Instant::now();
    let back = gpu.download(ctx, &m)?;
    let down = t.elapsed().as_secs_f64();
    assert!(back == host);
    println!("download: {:.1} ms ({:.1} GB/s)", down * 1e3, 8.0 * (n * w) as f64 / down / 1e9);
    Ok(m)
}

/// NTT, inverse NTT and coset LDEs of `m` (`e` bytes).
fn transforms(gpu: &CudaBackend, ctx: &Ctx, m: &CudaMatrix, e: f64) -> Result<()> {
    report("ntt", median(gpu, |g| g.ntt(ctx, m))?, 2.0 * e);
    report("intt", median(gpu, |g| g.intt(ctx, m))?, 2.0 * e);
    for lb in [1u32, 2, 3] {
        let ms = median(gpu, |g| g.coset_lde(ctx, m, lb, GENERATOR))?;
        report(&format!("coset_lde blowup {}", 1 << lb), ms, e * (1.0 + (1u64 << lb) as f64));
    }
    Ok(())
}

/// A commitment to `m` (`leaf_bytes` of leaf data in `rows` rows) with
/// every hash.
fn merkle(gpu: &CudaBackend, ctx: &Ctx, m: &CudaMatrix, what: &str, leaf_bytes: f64, rows: usize) -> Result<()> {
    for hash in HashKind::ALL {
        let ms = median(gpu, |g| g.commit(ctx, m, hash))?;
        report(&format!("merkle {hash} ({what})"), ms, leaf_bytes + 64.0 * rows as f64);
        println!("    {hash}: {:.1} GB/s of leaf data", leaf_bytes / ms / 1e6);
    }
    Ok(())
}

/// FRI folds of a random extension-field layer on the LDE domain.
fn fri_folds(gpu: &CudaBackend, ctx: &Ctx, log: u32) -> Result<()> {
    let domain = Coset::new(log + 1, GENERATOR);
    let big = 2usize << log;
    let layer = gpu.upload(ctx, &random(3, big, 2))?;
    for la in [1u32, 2, 3, 4] {
        let ms = median(gpu, |g| g.fri_fold(ctx, &layer, domain, la, Ext::new(F::new(3), F::new(5), F::new(7)), None))?;
        report(
            &format!("fri_fold 2^{} by {}", log + 1, 1 << la),
            ms,
            24.0 * big as f64 * (1.0 + 1.0 / (1 << la) as f64),
        );
    }
    Ok(())
}

/// The DEEP quotient and evaluations of the `w`-column LDE at two points.
fn deep(gpu: &CudaBackend, ctx: &Ctx, lde: &CudaMatrix, log: u32, w: usize, e: f64) -> Result<()> {
    let domain = Coset::new(log + 1, GENERATOR);
    let big = 2usize << log;
    let z = [Ext::new(F::new(11), F::new(12), F::new(13)), Ext::new(F::new(21), F::new(22), F::new(23))];
    let coeffs: Vec<Ext> = (0..w).map(|i| Ext::new(F::new(i as u64 + 1), F::new(2), F::new(3))).collect();
    let ms = median(gpu, |g| {
        let pts: Vec<DeepPoint<_>> = z
            .iter()
            .map(|&p| DeepPoint {
                point: p,
                columns: vec![DeepColumns { matrix: lde, coeffs: coeffs.clone(), values: coeffs.clone() }],
            })
            .collect();
        g.deep_quotient(ctx, domain, &pts)
    })?;
    report(&format!("deep_quotient 2^{} x {w}, 2 points", log + 1), ms, 2.0 * 2.0 * e + 24.0 * big as f64);
    let ms = median(gpu, |g| g.evaluate_at(ctx, lde, domain, 0, &z))?;
    report(&format!("evaluate_at 2^{} x {w}, 2 points", log + 1), ms, 2.0 * 2.0 * e);
    Ok(())
}

/// A degree-3 AIR on `cw` columns: each column's next row is a cubic in
/// two of the current ones.
fn cubic_air(cw: usize) -> ConstraintSystem {
    let layout = Layout { main_width: cw, ..Layout::default() };
    let mut b = ConstraintBuilder::new(layout);
    for c in 0..cw {
        let x = Expr::main(c, 0);
        let y = Expr::main((c + 1) % cw, 0);
        b.when_transition(Expr::main(c, 1) - &x * &x * &y - Expr::from_u64(c as u64 + 1));
    }
    b.when_first_row(Expr::main(0, 0));
    b.build().expect("constraints")
}

/// Composition: a 64-column degree-3 AIR at blowup 4 (its first call
/// timed apart: it compiles or loads the kernels); then the quotient split.
fn compose(gpu: &CudaBackend, ctx: &Ctx, log: u32, w: usize) -> Result<()> {
    let cw = w.min(64);
    let cs = cubic_air(cw);
    let log_n = log - 1;
    let cmain = gpu.coset_lde(ctx, &gpu.upload(ctx, &random(cw, 1 << log_n, 3))?, 2, GENERATOR)?;
    let cdomain = Coset::new(log_n + 2, GENERATOR);
    let inputs = ComposeInputs {
        constraints: &cs,
        fixed: None,
        main: &cmain,
        aux: None,
        log_trace_height: log_n,
        domain: cdomain,
        challenges: &[],
        publics: &[],
        aux_values: &[],
        alpha: Ext::new(F::new(5), F::new(6), F::new(7)),
        next: None,
        log_stride: 0,
    };
    let t = std::time::Instant::now();
    gpu.compose(ctx, &inputs)?;
    gpu.synchronize()?;
    println!("compose first call (NVRTC compile or cache load + run): {:.1} ms", t.elapsed().as_secs_f64() * 1e3);
    let ms = median(gpu, |g| g.compose(ctx, &inputs))?;
    report(
        &format!("compose 2^{} x {cw}, {} constraints", log_n + 2, cs.constraints.len()),
        ms,
        8.0 * (cw << (log_n + 2)) as f64 + 24.0 * (4usize << log_n) as f64,
    );
    let q = gpu.coset_lde(ctx, &gpu.upload(ctx, &random(3, 2 << log_n, 4))?, 1, GENERATOR)?;
    let ms = median(gpu, |g| g.split_quotient(ctx, &q, cdomain, log_n, 2, cdomain.log_size))?;
    report(&format!("split_quotient 2^{} into 2", log_n + 2), ms, 24.0 * (4usize << log_n) as f64 * 4.0);
    Ok(())
}

/// Proof-of-work grinding to 24 bits with every hash.
fn grind(gpu: &CudaBackend, ctx: &Ctx) -> Result<()> {
    for hash in HashKind::ALL {
        let t = std::time::Instant::now();
        let nonce = gpu.grind(ctx, hash, &[7u8; 32], 24)?;
        let s = t.elapsed().as_secs_f64();
        println!("grind {hash} 24 bits: nonce {nonce} in {:.1} ms ({:.2} GH/s)", s * 1e3, nonce as f64 / s / 1e9);
    }
    Ok(())
}
