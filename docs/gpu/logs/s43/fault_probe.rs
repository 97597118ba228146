// The first-touch probe behind RESULTS 43: a `try_zeroed` GiB faulted
// in (one write a 4 KiB page), then touched again. Run as a benches
// example (copy to benches/examples/fault_probe.rs):
// RUSTFLAGS="-C target-cpu=x86-64-v4" CARGO_TARGET_DIR=target/v4 cargo build --release -p benches --example fault_probe
// RAYON_NUM_THREADS=1 target/v4/release/examples/fault_probe 1
use backend_api::host::try_zeroed;
use backend_api::F;
use rayon::prelude::*;
use std::time::Instant;
fn main() {
    let gb: usize = std::env::args().nth(1).map(|s| s.parse().unwrap()).unwrap_or(1);
    for _ in 0..4 {
        let t = Instant::now();
        let mut v: Vec<F> = try_zeroed(gb << 27).unwrap();
        let t1 = t.elapsed();
        v.par_chunks_mut(512).for_each(|c| c[0] = F::ONE);
        let t2 = t.elapsed();
        let t3 = Instant::now();
        v.par_chunks_mut(512).for_each(|c| c[1] = F::ONE);
        println!("{gb} GiB: alloc {:?}, first touch {:?}, second touch {:?}", t1, t2 - t1, t3.elapsed());
        drop(v);
    }
}
// Output on the development machine (2 cores, Intel Xeon, AVX-512; a VM):
// RAYON_NUM_THREADS=1:
// 1 GiB: alloc 16.535µs, first touch 3.746113472s, second touch 6.254202ms
// 1 GiB: alloc 31.766µs, first touch 146.96739ms, second touch 4.773266ms
// 1 GiB: alloc 28.516µs, first touch 137.624665ms, second touch 4.901454ms
// 1 GiB: alloc 37.787µs, first touch 125.321144ms, second touch 4.831052ms
// RAYON_NUM_THREADS=2:
// 1 GiB: alloc 18.917µs, first touch 87.360549ms, second touch 2.859014ms
// 1 GiB: alloc 34.795µs, first touch 68.855681ms, second touch 2.62188ms
// 1 GiB: alloc 28.407µs, first touch 74.899874ms, second touch 2.780998ms
// 1 GiB: alloc 23.142µs, first touch 85.946248ms, second touch 2.981002ms
// KILN_CPU_NO_HUGEPAGES=1 RAYON_NUM_THREADS=2:
// 1 GiB: alloc 6.839µs, first touch 218.389487ms, second touch 3.00388ms
// 1 GiB: alloc 29.997µs, first touch 227.925124ms, second touch 3.646786ms
// 1 GiB: alloc 27.717µs, first touch 222.499911ms, second touch 3.627431ms
// 1 GiB: alloc 31.76µs, first touch 557.846701ms, second touch 35.788283ms
