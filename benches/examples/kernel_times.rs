//! Times the CPU backend's heavy kernels once each (best of `REPS` runs) on
//! a random matrix, for quick before/after comparisons of one kernel.
//!
//! cargo run --release -p benches --example kernel_times -- [LOG_ROWS] [COLUMNS] [LOG_BLOWUP] [REPS] [LEAVES: 0|1]

use backend_api::{BackendBase, ComposeOps, Coset, Ctx, DeepOps, Ext, HashKind, MerkleOps, NttOps, F, GENERATOR};
use backend_cpu::CpuBackend;
use benches::{ms, random_matrix};
use std::time::Instant;

fn best<T>(reps: usize, mut f: impl FnMut() -> T) -> f64 {
    (0..reps)
        .map(|_| {
            let t = Instant::now();
            std::hint::black_box(f());
            ms(t.elapsed())
        })
        .fold(f64::INFINITY, f64::min)
}

fn main() {
    let args: Vec<usize> = std::env::args().skip(1).map(|a| a.parse().expect("a number")).collect();
    let arg = |i: usize, d: usize| args.get(i).copied().unwrap_or(d);
    let (log_n, width, log_blowup, reps) = (arg(0, 16) as u32, arg(1, 64), arg(2, 2) as u32, arg(3, 3));
    let b = CpuBackend::new();
    let ctx = Ctx::table("bench");
    let m = b.upload(&ctx, &random_matrix(log_n, width, 1)).unwrap();
    // Warm the twiddle tables.
    let lde = b.coset_lde(&ctx, &m, log_blowup, GENERATOR).unwrap();
    println!("2^{log_n} x {width}, blowup 2^{log_blowup}, threads {}", rayon::current_num_threads());
    println!("ntt         {:9.2} ms", best(reps, || b.ntt(&ctx, &m).unwrap()));
    println!("intt        {:9.2} ms", best(reps, || b.intt(&ctx, &m).unwrap()));
    println!("coset_lde   {:9.2} ms", best(reps, || b.coset_lde(&ctx, &m, log_blowup, GENERATOR).unwrap()));
    for hash in HashKind::ALL {
        println!("merkle {:7}{:9.2} ms", hash.name(), best(reps, || b.commit(&ctx, &lde, hash).unwrap()));
    }
    // A quotient of degree below height * 2^log_blowup / 4 on the LDE
    // domain, split into 4 parts (three columns: one extension element).
    let log_big = log_n + log_blowup;
    if log_big >= 4 {
        let low = b.upload(&ctx, &random_matrix(log_big - 2, 3, 2)).unwrap();
        let q = b.coset_lde(&ctx, &low, 2, GENERATOR).unwrap();
        let dom = Coset::new(log_big, GENERATOR);
        let t = best(reps, || b.split_quotient(&ctx, &q, dom, log_big - 4, 4, dom.log_size).unwrap());
        println!("split_quot  {t:9.2} ms");
    }
    let domain = Coset::new(log_n + log_blowup, GENERATOR);
    let pts = [Ext::new(F::new(3), F::new(5), F::new(7)), Ext::new(F::new(11), F::new(13), F::new(17))];
    println!("evaluate_at {:9.2} ms", best(reps, || b.evaluate_at(&ctx, &lde, domain, 0, &pts).unwrap()));
    // The leaf hashes alone, on rows already laid out row-major (slow at
    // large sizes: only when asked for with a fifth argument, 1).
    if arg(4, 0) == 0 {
        return;
    }
    let rows: Vec<F> = (0..1usize << (log_n + log_blowup))
        .flat_map(|r| (0..width).map(move |c| F::new((r * width + c) as u64)))
        .collect();
    for hash in HashKind::ALL {
        let t =
            best(reps, || rows.chunks(width).map(|r| backend_api::hash::hash_leaf(hash, r)[0]).fold(0u8, |a, b| a ^ b));
        println!("leaves {:7}{:9.2} ms (1 thread, no transpose)", hash.name(), t);
    }
}
