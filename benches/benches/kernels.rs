//! Per-kernel benches of the CPU backend on random inputs larger than the
//! L2 cache.

use backend_api::{BackendBase, Coset, Ctx, Ext, FriOps, HashKind, MerkleOps, NttOps, F};
use backend_cpu::CpuBackend;
use benches::random_matrix;
use criterion::{criterion_group, criterion_main, Criterion, Throughput};

fn kernels(c: &mut Criterion) {
    let b = CpuBackend::new();
    let ctx = Ctx::table("bench");
    let mut g = c.benchmark_group("cpu");
    g.sample_size(10);
    let (log_n, width) = (16u32, 64usize);
    let m = b.upload(&ctx, &random_matrix(log_n, width, 1)).unwrap();
    let bytes = (8usize << log_n) * width;
    g.throughput(Throughput::Bytes(bytes as u64));
    g.bench_function("ntt 2^16 x 64", |bn| bn.iter(|| b.ntt(&ctx, &m).unwrap()));
    g.bench_function("coset lde 2^16 x 64 blowup 4", |bn| {
        bn.iter(|| b.coset_lde(&ctx, &m, 2, backend_api::GENERATOR).unwrap())
    });
    let lde = b.coset_lde(&ctx, &m, 2, backend_api::GENERATOR).unwrap();
    g.throughput(Throughput::Bytes((bytes * 4) as u64));
    for hash in HashKind::ALL {
        g.bench_function(format!("merkle {hash} 2^18 x 64"), |bn| bn.iter(|| b.commit(&ctx, &lde, hash).unwrap()));
    }
    let layer = b.upload(&ctx, &random_matrix(20, 3, 2)).unwrap();
    let beta = Ext::new(F::new(3), F::new(5), F::new(7));
    g.throughput(Throughput::Bytes(24 << 20));
    g.bench_function("fri fold 2^20 by 4", |bn| {
        bn.iter(|| b.fri_fold(&ctx, &layer, Coset::new(20, backend_api::GENERATOR), 2, beta, None).unwrap())
    });
    g.finish();
}

criterion_group!(benches, kernels);
criterion_main!(benches);
