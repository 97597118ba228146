//! End-to-end prove time of the cubic AIR on the CPU backend.

use backend_cpu::CpuBackend;
use criterion::{criterion_group, criterion_main, Criterion};
use stark::examples::Cubic;
use stark::{prove, ProofOptions, SingleTable};

fn prove_cubic(c: &mut Criterion) {
    let mut g = c.benchmark_group("prove");
    g.sample_size(10);
    for (log_n, width) in [(12u32, 16usize), (14, 64)] {
        let air = SingleTable(Cubic::new(width));
        let (trace, publics) = air.0.trace(log_n, 1);
        let options = ProofOptions::default();
        let backend = CpuBackend::new();
        g.bench_function(format!("cubic 2^{log_n}x{width} blowup 4"), |b| {
            b.iter(|| prove(&backend, &air, vec![trace.clone()], &publics, &options).expect("prove"))
        });
    }
    g.finish();
}

criterion_group!(benches, prove_cubic);
criterion_main!(benches);
