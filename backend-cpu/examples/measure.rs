//! Quick timing of the reference backend's heaviest stages (not a test).
//!
//! `cargo run --release -p backend-cpu --example measure [log_n] [width] [log_blowup]`
//! (defaults: 2^16 rows, 64 columns, blowup 4). Prints the median of 5 runs.

use backend_api::{BackendBase, ColMatrix, Ctx, HashKind, MerkleOps, NttOps, F, GENERATOR};
use backend_cpu::CpuBackend;
use std::time::{Duration, Instant};

fn median<T>(runs: usize, mut f: impl FnMut() -> T) -> (Duration, T) {
    let mut times = Vec::with_capacity(runs);
    let mut last = None;
    for _ in 0..runs {
        let t = Instant::now();
        let v = f();
        times.push(t.elapsed());
        last = Some(v);
    }
    times.sort();
    (times[runs / 2], last.expect("at least one run"))
}

fn main() {
    let args: Vec<u32> = std::env::args().skip(1).map(|a| a.parse().expect("numeric argument")).collect();
    let log_n = args.first().copied().unwrap_or(16);
    let width = args.get(1).copied().unwrap_or(64) as usize;
    let log_blowup = args.get(2).copied().unwrap_or(2);
    let n = 1usize << log_n;
    let ctx = Ctx::table("measure");
    let b = CpuBackend::new();
    // Random non-zero values from a fixed-seed xorshift.
    let mut s = 0x9e37_79b9_7f4a_7c15u64;
    let data: Vec<F> = (0..n * width)
        .map(|_| {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            F::new(s | 1)
        })
        .collect();
    let m = b.upload(&ctx, &ColMatrix::new(width, n, data)).expect("upload");
    println!("cpu backend, {} rayon threads, 2^{log_n} x {width}, blowup 2^{log_blowup}", rayon::current_num_threads());
    let (t, lde) = median(5, || b.coset_lde(&ctx, &m, log_blowup, GENERATOR).expect("lde"));
    println!("coset_lde           {:>9.2} ms", t.as_secs_f64() * 1e3);
    let (t, _) = median(5, || b.ntt(&ctx, &m).expect("ntt"));
    println!("ntt (trace size)    {:>9.2} ms", t.as_secs_f64() * 1e3);
    let (t, _) = median(5, || b.ntt(&ctx, &lde).expect("ntt"));
    println!("ntt (LDE size)      {:>9.2} ms", t.as_secs_f64() * 1e3);
    for kind in HashKind::ALL {
        let (t, tree) = median(5, || b.commit(&ctx, &lde, kind).expect("commit"));
        println!("commit ({kind:<6})     {:>9.2} ms", t.as_secs_f64() * 1e3);
        let rows: Vec<usize> = (0..100).map(|i| (i * 7919) % (n << log_blowup)).collect();
        let (t, _) = median(5, || b.open(&ctx, &lde, &tree, &rows).expect("open"));
        println!("open 100 ({kind:<6})   {:>9.2} ms", t.as_secs_f64() * 1e3);
    }
}
