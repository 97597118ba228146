//! Every backend operation on random (non-zero) inputs larger than the L2
//! cache: a 2^16 x 64 trace, its 2^18-row blowup-4 LDE. The CPU backend
//! always; with `--features cuda` also the CUDA backend when a device is
//! present, each iteration ending on a synchronized device.

use backend_api::{Backend, ComposeInputs, Coset, Ctx, DeepColumns, DeepPoint, Ext, HashKind, LogUpInputs, GENERATOR};
use backend_cpu::CpuBackend;
use benches::random_matrix;
use criterion::{criterion_group, criterion_main, BenchmarkGroup, Criterion, Throughput};
use stark::examples::{Cubic, Lcg, Permutation};
use stark::{Air, Machine};

const LOG_N: u32 = 16;
const WIDTH: usize = 64;
const LOG_BLOWUP: u32 = 2;

fn ext(rng: &mut Lcg) -> Ext {
    Ext::new(rng.next_felt(), rng.next_felt(), rng.next_felt())
}

fn ops<B: Backend>(c: &mut Criterion, b: &B, sync: &dyn Fn()) {
    let ctx = Ctx::table("bench");
    let mut rng = Lcg(99);
    let mut g = c.benchmark_group(b.name().to_string());
    g.sample_size(10);
    // Throughput in bytes of input, except grinding: hashes expected.
    let bench = |g: &mut BenchmarkGroup<_>, name: &str, bytes: usize, f: &mut dyn FnMut()| {
        g.throughput(if name.starts_with("grind") {
            Throughput::Elements(bytes as u64)
        } else {
            Throughput::Bytes(bytes as u64)
        });
        g.bench_function(name, |bn| {
            bn.iter(|| {
                f();
                sync();
            })
        });
    };
    let host = random_matrix(LOG_N, WIDTH, 1);
    let bytes = (8usize << LOG_N) * WIDTH;
    let (log_big, lde_bytes) = (LOG_N + LOG_BLOWUP, bytes << LOG_BLOWUP);
    let dom = Coset::new(log_big, GENERATOR);
    let m = b.upload(&ctx, &host).unwrap();
    let lde = b.coset_lde(&ctx, &m, LOG_BLOWUP, GENERATOR).unwrap();
    sync();

    bench(&mut g, "upload 2^16 x 64", bytes, &mut || drop(b.upload(&ctx, &host).unwrap()));
    bench(&mut g, "download 2^16 x 64", bytes, &mut || drop(b.download(&ctx, &m).unwrap()));
    bench(&mut g, "ntt 2^16 x 64", bytes, &mut || drop(b.ntt(&ctx, &m).unwrap()));
    bench(&mut g, "intt 2^16 x 64", bytes, &mut || drop(b.intt(&ctx, &m).unwrap()));
    bench(&mut g, "coset lde 2^16 x 64 blowup 4", lde_bytes, &mut || {
        drop(b.coset_lde(&ctx, &m, LOG_BLOWUP, GENERATOR).unwrap())
    });
    // What a recomputed table rebuilds its pieces with (`m` stands in for
    // coefficients), and how pieces are taken and put back.
    bench(&mut g, "upload + intt_in_place 2^16 x 64", bytes, &mut || {
        drop(b.intt_in_place(&ctx, &b.upload(&ctx, &host).unwrap()).unwrap())
    });
    bench(&mut g, "coset ntt 2^16 x 64 blowup 4", lde_bytes, &mut || {
        drop(b.coset_ntt(&ctx, &m, LOG_BLOWUP, GENERATOR).unwrap())
    });
    let c = rng.next_felt();
    bench(&mut g, "fold_coeffs 2^16 x 64 by 8", bytes, &mut || drop(b.fold_coeffs(&ctx, &m, 3, c).unwrap()));
    let weights: Vec<Ext> = (0..WIDTH).map(|_| ext(&mut rng)).collect();
    bench(&mut g, "combine_columns 2^16 x 64", bytes, &mut || drop(b.combine_columns(&ctx, &m, &weights).unwrap()));
    bench(&mut g, "stride_rows 2^18 x 64, 1 of 8", lde_bytes >> 3, &mut || {
        drop(b.stride_rows(&ctx, &lde, 5, 3).unwrap())
    });
    let pieces: Vec<B::Matrix> = (0..8).map(|j| b.stride_rows(&ctx, &lde, j, 3).unwrap()).collect();
    let pieces: Vec<&B::Matrix> = pieces.iter().collect();
    bench(&mut g, "interleave 8 x 2^15 x 64", lde_bytes, &mut || drop(b.interleave(&ctx, &pieces).unwrap()));
    for hash in HashKind::ALL {
        bench(&mut g, &format!("merkle {hash} 2^18 x 64"), lde_bytes, &mut || {
            drop(b.commit(&ctx, &lde, hash).unwrap())
        });
    }
    let tree = b.commit(&ctx, &lde, HashKind::Blake3).unwrap();
    let queries: Vec<usize> = (0..44).map(|_| (rng.next_felt().value() as usize) % (1 << log_big)).collect();
    bench(&mut g, "open 44 rows of 2^18 x 64", 44 * WIDTH * 8, &mut || {
        drop(b.open(&ctx, &lde, &tree, &queries).unwrap())
    });
    bench(&mut g, "leaf digests blake3 2^18 x 64", lde_bytes, &mut || {
        drop(b.leaf_digests(&ctx, &lde, HashKind::Blake3).unwrap())
    });
    bench(&mut g, "rows 44 of 2^18 x 64", 44 * WIDTH * 8, &mut || drop(b.rows(&ctx, &lde, &queries).unwrap()));

    // The cubic AIR's constraints over the LDE: the composition of the
    // Plonky3 comparison.
    let cubic = Cubic::new(WIDTH);
    let publics = [rng.next_felt()];
    let alpha = ext(&mut rng);
    let inputs = ComposeInputs {
        constraints: Air::constraints(&cubic),
        fixed: None,
        main: &lde,
        aux: None,
        log_trace_height: LOG_N,
        domain: dom,
        challenges: &[],
        publics: &publics,
        aux_values: &[],
        alpha,
        next: None,
        log_stride: 0,
    };
    bench(&mut g, "compose cubic 2^18 x 64", lde_bytes, &mut || drop(b.compose(&ctx, &inputs).unwrap()));
    let q = b.compose(&ctx, &inputs).unwrap();
    // As many parts as the blowup fill the domain: every part is evaluated
    // and no coefficient is left over to fail the degree check.
    let parts = 1 << LOG_BLOWUP;
    bench(&mut g, "split_quotient 2^18 into 4", 24 << log_big, &mut || {
        drop(b.split_quotient(&ctx, &q, dom, LOG_N, parts, dom.log_size).unwrap())
    });

    let perm = Permutation::default();
    let logup = perm.tables()[0].logup().expect("the permutation table has a bus");
    let pm = b.upload(&ctx, &random_matrix(LOG_N + 2, logup.eval.layout.main_width, 2)).unwrap();
    let li = LogUpInputs { logup, main: &pm, fixed: None, z: ext(&mut rng), alpha: ext(&mut rng) };
    bench(&mut g, "logup aux permutation 2^18", 16 << (LOG_N + 2), &mut || drop(b.logup_aux(&ctx, &li).unwrap()));

    let pts = [ext(&mut rng), ext(&mut rng)];
    bench(&mut g, "evaluate_at 2 points, 2^18 x 64", lde_bytes, &mut || {
        drop(b.evaluate_at(&ctx, &lde, dom, 0, &pts).unwrap())
    });
    let point = |rng: &mut Lcg| DeepPoint {
        point: ext(rng),
        columns: vec![DeepColumns {
            matrix: &lde,
            coeffs: (0..WIDTH).map(|_| ext(rng)).collect(),
            values: (0..WIDTH).map(|_| ext(rng)).collect(),
        }],
    };
    let points = [point(&mut rng), point(&mut rng)];
    bench(&mut g, "deep quotient 2 points, 2^18 x 64", lde_bytes, &mut || {
        drop(b.deep_quotient(&ctx, dom, &points).unwrap())
    });
    let deep = b.deep_quotient(&ctx, dom, &points).unwrap();
    let beta = ext(&mut rng);
    bench(&mut g, "fri fold 2^18 by 4", 24 << log_big, &mut || {
        drop(b.fri_fold(&ctx, &deep, dom, 2, beta, None).unwrap())
    });
    // A fixed seed, so every iteration searches the same nonces.
    let seed: [u8; 32] = std::array::from_fn(|i| (rng.next_felt().value() >> (i % 8)) as u8);
    for hash in HashKind::ALL {
        bench(&mut g, &format!("grind 16 bits {hash}"), 1 << 16, &mut || {
            std::hint::black_box(b.grind(&ctx, hash, &seed, 16).unwrap());
        });
    }
    g.finish();
}

fn kernels(c: &mut Criterion) {
    ops(c, &CpuBackend::new(), &|| ());
    #[cfg(feature = "cuda")]
    match backend_cuda::CudaBackend::new(0) {
        Ok(cuda) => ops(c, &cuda, &|| cuda.synchronize().expect("cuda synchronize")),
        Err(e) => eprintln!("no CUDA benches: {e}"),
    }
}

criterion_group!(benches, kernels);
criterion_main!(benches);
