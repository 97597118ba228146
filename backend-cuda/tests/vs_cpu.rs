//! Every operation of the CUDA backend against the reference CPU backend,
//! byte for byte, on random non-zero inputs. Without a CUDA device these
//! tests print that they were skipped and pass (CI has no GPU).
//! `KILN_CUDA_TEST_MAX_LOG` caps the largest height (default 20).

use backend_api::ir::ConstraintSystem;
use backend_api::{
    BackendBase, BackendError, ColMatrix, ComposeInputs, ComposeOps, ConstraintBuilder, Coset, Ctx, DeepColumns,
    DeepOps, DeepPoint, DeviceTree, Expr, Ext, FriOps, HashKind, Layout, MerkleOps, NttOps, F, GENERATOR,
};
use backend_cpu::CpuBackend;
use backend_cuda::CudaBackend;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use std::sync::OnceLock;

fn gpu() -> Option<&'static CudaBackend> {
    static GPU: OnceLock<Option<CudaBackend>> = OnceLock::new();
    let g = GPU.get_or_init(|| match CudaBackend::new(0) {
        Ok(b) => {
            println!("CUDA device: {:?}", b.device());
            Some(b)
        }
        Err(e) => {
            println!("SKIPPED: no CUDA device ({e})");
            None
        }
    });
    if g.is_none() {
        println!("SKIPPED: no CUDA device");
    }
    g.as_ref()
}

fn max_log() -> u32 {
    std::env::var("KILN_CUDA_TEST_MAX_LOG").ok().and_then(|v| v.parse().ok()).unwrap_or(20)
}

fn rng(seed: u64) -> ChaCha8Rng {
    ChaCha8Rng::seed_from_u64(seed)
}

fn nz(r: &mut ChaCha8Rng) -> F {
    loop {
        let v = F::new(r.gen());
        if !v.is_zero() {
            return v;
        }
    }
}

fn ext(r: &mut ChaCha8Rng) -> Ext {
    Ext::new(nz(r), nz(r), nz(r))
}

fn random_matrix(r: &mut ChaCha8Rng, w: usize, h: usize) -> ColMatrix {
    ColMatrix::new(w, h, (0..w * h).map(|_| nz(r)).collect())
}

/// The reference caches twiddle tables per backend; a size-1 transform
/// followed by a size-2 one on the same instance currently reuses a table
/// without the size-2 layer (reported to backend-cpu), so transform tests
/// take a fresh instance per case.
fn fresh_cpu() -> CpuBackend {
    CpuBackend::new()
}

fn ctx() -> Ctx<'static> {
    Ctx::table("test")
}

fn first_diff(a: &ColMatrix, b: &ColMatrix) -> String {
    if a.width() != b.width() || a.height() != b.height() {
        return format!("shape {}x{} vs {}x{}", a.height(), a.width(), b.height(), b.width());
    }
    for c in 0..a.width() {
        for r in 0..a.height() {
            if a.get(r, c) != b.get(r, c) {
                return format!("column {c} row {r}: {} vs {}", a.get(r, c), b.get(r, c));
            }
        }
    }
    "equal".into()
}

macro_rules! same {
    ($gpu:expr, $cpu:expr, $what:expr) => {{
        let g = $gpu;
        let c = $cpu;
        assert!(g == c, "{}: GPU and CPU differ: {}", $what, first_diff(&g, &c));
    }};
}

fn shapes() -> Vec<(u32, usize)> {
    let mut v = vec![(0, 1), (1, 3), (2, 2), (3, 5), (5, 1), (8, 7), (10, 4), (11, 3), (12, 2), (13, 9), (14, 1)];
    for (l, w) in [(16, 8), (18, 3), (20, 16), (22, 2)] {
        if l <= max_log() {
            v.push((l, w));
        }
    }
    v
}

#[test]
fn ntt_and_intt_match() {
    let Some(gpu) = gpu() else { return };
    let mut r = rng(1);
    for (log, w) in shapes() {
        // A fresh reference per case: see `fresh_cpu`.
        let cpu = fresh_cpu();
        let m = random_matrix(&mut r, w, 1 << log);
        let (g, c) = (gpu.upload(&ctx(), &m).unwrap(), cpu.upload(&ctx(), &m).unwrap());
        let gn = gpu.download(&ctx(), &gpu.ntt(&ctx(), &g).unwrap()).unwrap();
        let cn = cpu.download(&ctx(), &cpu.ntt(&ctx(), &c).unwrap()).unwrap();
        same!(gn, cn, format!("ntt 2^{log} x {w}"));
        let gi = gpu.download(&ctx(), &gpu.intt(&ctx(), &g).unwrap()).unwrap();
        let ci = cpu.download(&ctx(), &cpu.intt(&ctx(), &c).unwrap()).unwrap();
        same!(gi, ci, format!("intt 2^{log} x {w}"));
    }
}

/// Another backend on the device, with the warp NTT on or off.
fn with_warp_ntt(on: bool) -> CudaBackend {
    let mut config = backend_cuda::CudaConfig::default();
    config.ntt.warp = on;
    CudaBackend::with_config(0, config).expect("a second backend on the device")
}

/// Both paths of 2^20-point natural-order transforms, the warp-register
/// NTT (`NttTuning::warp`, on by default) and the shared-memory passes,
/// both ways against the reference at widths of one column, an odd few,
/// and more than a block of columns; and a 2^19 transform, which always
/// takes the shared-memory passes.
#[test]
fn warp_ntt_matches_the_reference() {
    if gpu().is_none() || max_log() < 20 {
        return;
    }
    for warp_on in [true, false] {
        let gpu = with_warp_ntt(warp_on);
        let mut r = rng(15);
        for (log, w) in [(20, 1), (20, 3), (20, 11), (19, 2)] {
            let cpu = fresh_cpu();
            let m = random_matrix(&mut r, w, 1 << log);
            let what = |op: &str| format!("{op} 2^{log} x {w}, warp path {warp_on}");
            let (g, c) = (gpu.upload(&ctx(), &m).unwrap(), cpu.upload(&ctx(), &m).unwrap());
            let gn = gpu.download(&ctx(), &gpu.ntt(&ctx(), &g).unwrap()).unwrap();
            same!(gn, cpu.download(&ctx(), &cpu.ntt(&ctx(), &c).unwrap()).unwrap(), what("ntt"));
            let gi = gpu.download(&ctx(), &gpu.intt(&ctx(), &g).unwrap()).unwrap();
            same!(gi, cpu.download(&ctx(), &cpu.intt(&ctx(), &c).unwrap()).unwrap(), what("intt"));
            // The source is kept.
            same!(gpu.download(&ctx(), &g).unwrap(), m.clone(), what("the transforms' input"));
        }
    }
}

/// Coset LDEs of 2^20 rows on the warp NTT (`NttTuning::warp`: 2^b
/// twisted 2^20-point transforms) and on the shared-memory passes, against
/// the reference: every blowup the warp path takes (1 to 8) and 16, which
/// it leaves to the passes, odd widths, the generator and random shifts, a
/// coset asked for again (its twist table kept) and with its shift or its
/// blowup changed; and the overlapped upload's LDE.
#[test]
fn warp_lde_matches_the_reference() {
    if gpu().is_none() || max_log() < 20 {
        return;
    }
    for warp_on in [true, false] {
        let gpu = with_warp_ntt(warp_on);
        let mut r = rng(16);
        let (s2, s3) = (nz(&mut r), nz(&mut r));
        // The twist table is kept per (shift, blowup): asked again, then
        // with one of the two changed; and 2^4, past the warp path.
        let cases = [
            (0, 3, nz(&mut r)),
            (1, 1, GENERATOR),
            (1, 11, GENERATOR),
            (2, 3, s2),
            (3, 2, s2),
            (3, 1, s3),
            (2, 5, s2),
            (2, 2, s3),
            (4, 1, s3),
        ];
        for (log_blowup, w, shift) in cases {
            let cpu = fresh_cpu();
            let m = random_matrix(&mut r, w, 1 << 20);
            let what = format!("lde 2^20 x {w} blowup 2^{log_blowup}, warp path {warp_on}");
            let g = gpu.coset_lde(&ctx(), &gpu.upload(&ctx(), &m).unwrap(), log_blowup, shift).unwrap();
            let c = cpu.coset_lde(&ctx(), &cpu.upload(&ctx(), &m).unwrap(), log_blowup, shift).unwrap();
            let c = cpu.download(&ctx(), &c).unwrap();
            same!(gpu.download(&ctx(), &g).unwrap(), c.clone(), what.clone());
            if log_blowup == 2 {
                let (trace, lde) = gpu.upload_coset_lde(&ctx(), &m, log_blowup, shift).unwrap();
                same!(gpu.download(&ctx(), &trace).unwrap(), m, format!("uploaded, {what}"));
                same!(gpu.download(&ctx(), &lde).unwrap(), c, format!("upload_coset_lde, {what}"));
            }
        }
    }
}

#[test]
fn coset_lde_matches() {
    let Some(gpu) = gpu() else { return };
    let mut r = rng(2);
    for (log, w) in shapes() {
        for log_blowup in 1..=4u32 {
            let cpu = fresh_cpu();
            if log + log_blowup > max_log() + 2 {
                continue;
            }
            let m = random_matrix(&mut r, w, 1 << log);
            let shift = if log_blowup == 2 { nz(&mut r) } else { GENERATOR };
            let g = gpu.coset_lde(&ctx(), &gpu.upload(&ctx(), &m).unwrap(), log_blowup, shift).unwrap();
            let c = cpu.coset_lde(&ctx(), &cpu.upload(&ctx(), &m).unwrap(), log_blowup, shift).unwrap();
            same!(
                gpu.download(&ctx(), &g).unwrap(),
                cpu.download(&ctx(), &c).unwrap(),
                format!("lde 2^{log} x {w} blowup 2^{log_blowup}")
            );
        }
    }
}

/// The overlapped upload and LDE: runs of columns of one staging buffer
/// or less, a run of several buffers (a column of 2^24 rows), widths
/// that leave a short last run (copied at once, 2^9 x 37 and 2^10 x 53,
/// or staged, 2^20 x 53), and the smallest shapes.
#[test]
fn upload_coset_lde_matches() {
    let Some(gpu) = gpu() else { return };
    let mut r = rng(12);
    let big = [(16, 8), (17, 5), (20, 53), (24, 1)].into_iter().filter(|&(l, _)| l <= max_log().max(24));
    for (log, w) in [(0, 1), (5, 3), (9, 37), (10, 53), (13, 9)].into_iter().chain(big) {
        let log_blowup = 1 + (log % 3);
        let cpu = fresh_cpu();
        let m = random_matrix(&mut r, w, 1 << log);
        let shift = nz(&mut r);
        let (trace, lde) = gpu.upload_coset_lde(&ctx(), &m, log_blowup, shift).unwrap();
        let c = cpu.coset_lde(&ctx(), &cpu.upload(&ctx(), &m).unwrap(), log_blowup, shift).unwrap();
        let what = format!("2^{log} x {w} blowup 2^{log_blowup}");
        same!(gpu.download(&ctx(), &trace).unwrap(), m, format!("uploaded {what}"));
        same!(gpu.download(&ctx(), &lde).unwrap(), cpu.download(&ctx(), &c).unwrap(), format!("extended {what}"));
    }
}

/// `upload_commit` in both orders (the extension committed once complete,
/// and its leaves hashed run by run under the upload): the trace, the
/// extension and the root against the reference's, at the prover's shape
/// (2^20 x 64 at blowup 4), at widths that end a leaf inside, at and past
/// a hash block, past a BLAKE3 chunk, and with one run.
#[test]
fn upload_commit_matches_in_both_orders() {
    let Some(gpu) = gpu() else { return };
    let config = backend_cuda::CudaConfig { leaves_under_upload: true, ..backend_cuda::CudaConfig::default() };
    let under = CudaBackend::with_config(0, config).expect("a second backend on the device");
    let mut r = rng(14);
    let big = [(20, 64), (18, 130)].into_iter().filter(|&(l, _)| l <= max_log());
    for (log, w) in [(0, 1), (9, 37), (12, 17), (13, 35), (14, 8), (16, 129)].into_iter().chain(big) {
        let log_blowup = 2;
        let cpu = fresh_cpu();
        let m = random_matrix(&mut r, w, 1 << log);
        let shift = nz(&mut r);
        let c = cpu.coset_lde(&ctx(), &cpu.upload(&ctx(), &m).unwrap(), log_blowup, shift).unwrap();
        let want = cpu.download(&ctx(), &c).unwrap();
        for hash in HashKind::ALL {
            let root = cpu.commit(&ctx(), &c, hash).unwrap().root();
            for (order, b) in [("committed after", gpu), ("leaves under the upload", &under)] {
                let what = format!("2^{log} x {w} blowup 2^{log_blowup} {hash}, {order}");
                let (trace, lde, tree) = b.upload_commit(&ctx(), &m, log_blowup, shift, hash).unwrap();
                same!(b.download(&ctx(), &trace).unwrap(), m.clone(), format!("uploaded {what}"));
                same!(b.download(&ctx(), &lde).unwrap(), want.clone(), format!("extended {what}"));
                assert_eq!(tree.root(), root, "root of {what}");
                assert_eq!(tree.leaves(), 1 << (log + log_blowup), "leaves of {what}");
            }
        }
    }
}

/// Uploads from a pinned trace go straight to the copy engine: the same
/// shapes as above give the same trace and LDE, a clone shares the pin,
/// a clone written after pinning (copied on write) uploads its own
/// values, and the matrix uploads as before once its pin is dropped.
#[test]
fn pinned_uploads_match() {
    let Some(gpu) = gpu() else { return };
    let mut r = rng(13);
    let big = [(16, 8), (20, 53), (24, 1)].into_iter().filter(|&(l, _)| l <= max_log().max(24));
    for (log, w) in [(0, 1), (9, 37), (13, 9)].into_iter().chain(big) {
        let log_blowup = 1 + (log % 3);
        let cpu = fresh_cpu();
        let m = random_matrix(&mut r, w, 1 << log);
        let shift = nz(&mut r);
        let pin = gpu.pin(&ctx(), &m).unwrap();
        assert_eq!(pin.bytes(), ((8 * w) << log) as u64);
        let twice = gpu.pin(&ctx(), &m.clone()).unwrap();
        let c = cpu.coset_lde(&ctx(), &cpu.upload(&ctx(), &m).unwrap(), log_blowup, shift).unwrap();
        let want = cpu.download(&ctx(), &c).unwrap();
        let what = format!("2^{log} x {w} blowup 2^{log_blowup}");
        let (trace, lde) = gpu.upload_coset_lde(&ctx(), &m.clone(), log_blowup, shift).unwrap();
        same!(gpu.download(&ctx(), &trace).unwrap(), m.clone(), format!("uploaded pinned {what}"));
        same!(gpu.download(&ctx(), &lde).unwrap(), want.clone(), format!("extended pinned {what}"));
        drop(twice);
        let mut written = m.clone();
        written.data_mut()[0] = nz(&mut r);
        same!(
            gpu.download(&ctx(), &gpu.upload(&ctx(), &written).unwrap()).unwrap(),
            written,
            format!("written {what}")
        );
        same!(gpu.download(&ctx(), &gpu.upload(&ctx(), &m).unwrap()).unwrap(), m.clone(), format!("pinned {what}"));
        drop(pin);
        let (_, lde) = gpu.upload_coset_lde(&ctx(), &m, log_blowup, shift).unwrap();
        same!(gpu.download(&ctx(), &lde).unwrap(), want, format!("extended {what} after its pin"));
    }
}

#[test]
fn merkle_commit_and_open_match() {
    let Some(gpu) = gpu() else { return };
    let cpu = CpuBackend::new();
    let mut r = rng(3);
    let mut cases = vec![(0u32, 1usize), (1, 1), (3, 17), (4, 16), (5, 128), (6, 129), (4, 256), (3, 300), (2, 1000)];
    cases.extend([(10, 7), (12, 34), (16, 8)]);
    if max_log() >= 20 {
        cases.push((20, 4));
    }
    for (log, w) in cases {
        let m = random_matrix(&mut r, w, 1 << log);
        let (gm, cm) = (gpu.upload(&ctx(), &m).unwrap(), cpu.upload(&ctx(), &m).unwrap());
        for hash in HashKind::ALL {
            let gt = gpu.commit(&ctx(), &gm, hash).unwrap();
            let ct = cpu.commit(&ctx(), &cm, hash).unwrap();
            assert_eq!(gt.root(), ct.root(), "{hash} root of 2^{log} x {w}");
            let rows: Vec<usize> = (0..5).map(|_| r.gen_range(0..1usize << log)).collect();
            let go = gpu.open(&ctx(), &gm, &gt, &rows).unwrap();
            let co = cpu.open(&ctx(), &cm, &ct, &rows).unwrap();
            assert_eq!(go, co, "{hash} openings of 2^{log} x {w}");
        }
    }
}

#[test]
fn fri_fold_matches() {
    let Some(gpu) = gpu() else { return };
    let cpu = CpuBackend::new();
    let mut r = rng(4);
    for log in [1u32, 2, 4, 9, 13, 16, max_log().min(20)] {
        for log_arity in 1..=4u32 {
            if log_arity > log {
                continue;
            }
            let domain = Coset::new(log, nz(&mut r));
            let layer = random_matrix(&mut r, 3, 1 << log);
            let roll = random_matrix(&mut r, 3, 1 << (log - log_arity));
            let beta = ext(&mut r);
            let s = ext(&mut r);
            let (gl, cl) = (gpu.upload(&ctx(), &layer).unwrap(), cpu.upload(&ctx(), &layer).unwrap());
            let (gr, cr) = (gpu.upload(&ctx(), &roll).unwrap(), cpu.upload(&ctx(), &roll).unwrap());
            for with_roll in [false, true] {
                let g = gpu.fri_fold(&ctx(), &gl, domain, log_arity, beta, with_roll.then_some((&gr, s))).unwrap();
                let c = cpu.fri_fold(&ctx(), &cl, domain, log_arity, beta, with_roll.then_some((&cr, s))).unwrap();
                same!(
                    gpu.download(&ctx(), &g).unwrap(),
                    cpu.download(&ctx(), &c).unwrap(),
                    format!("fold 2^{log} by 2^{log_arity} roll {with_roll}")
                );
            }
        }
    }
}

#[test]
fn deep_and_evaluate_at_match() {
    let Some(gpu) = gpu() else { return };
    let cpu = CpuBackend::new();
    let mut r = rng(5);
    for (log, w) in [(0u32, 2usize), (1, 1), (4, 3), (10, 12), (14, 5), (max_log().min(20), 6)] {
        let domain = Coset::new(log, GENERATOR);
        let a = random_matrix(&mut r, w, 1 << log);
        let b = random_matrix(&mut r, 3, 1 << log);
        let (ga, ca) = (gpu.upload(&ctx(), &a).unwrap(), cpu.upload(&ctx(), &a).unwrap());
        let (gb, cb) = (gpu.upload(&ctx(), &b).unwrap(), cpu.upload(&ctx(), &b).unwrap());
        let z = [ext(&mut r), ext(&mut r), Ext::from_base(domain.point(1 % (1 << log)))];
        assert_eq!(
            gpu.evaluate_at(&ctx(), &ga, domain, 0, &z).unwrap(),
            cpu.evaluate_at(&ctx(), &ca, domain, 0, &z).unwrap(),
            "evaluate_at 2^{log} x {w}"
        );
        let coeffs = |r: &mut ChaCha8Rng, n| (0..n).map(|_| ext(r)).collect::<Vec<_>>();
        let (ka, kb, va, vb) = (coeffs(&mut r, w), coeffs(&mut r, 3), coeffs(&mut r, w), coeffs(&mut r, 3));
        let (k2, v2) = (coeffs(&mut r, w), coeffs(&mut r, w));
        macro_rules! pts {
            ($ma:expr, $mb:expr) => {{
                let (ma, mb) = ($ma, $mb);
                vec![
                    DeepPoint {
                        point: z[0],
                        columns: vec![
                            DeepColumns { matrix: ma, coeffs: ka.clone(), values: va.clone() },
                            DeepColumns { matrix: mb, coeffs: kb.clone(), values: vb.clone() },
                        ],
                    },
                    DeepPoint {
                        point: z[1],
                        columns: vec![DeepColumns { matrix: ma, coeffs: k2.clone(), values: v2.clone() }],
                    },
                ]
            }};
        }
        let g = gpu.deep_quotient(&ctx(), domain, &pts!(&ga, &gb)).unwrap();
        let c = cpu.deep_quotient(&ctx(), domain, &pts!(&ca, &cb)).unwrap();
        same!(gpu.download(&ctx(), &g).unwrap(), cpu.download(&ctx(), &c).unwrap(), format!("deep 2^{log} x {w}"));
        let gbad = vec![DeepPoint { point: z[2], columns: vec![] }];
        let cbad = vec![DeepPoint { point: z[2], columns: vec![] }];
        assert_eq!(gpu.deep_quotient(&ctx(), domain, &gbad).err(), cpu.deep_quotient(&ctx(), domain, &cbad).err());
    }
}

#[test]
fn grind_matches() {
    let Some(gpu) = gpu() else { return };
    let cpu = CpuBackend::new();
    let mut r = rng(6);
    for hash in HashKind::ALL {
        for bits in [0u32, 1, 4, 8, 12, 16] {
            let seed: [u8; 32] = r.gen();
            let g = gpu.grind(&ctx(), hash, &seed, bits).unwrap();
            let c = cpu.grind(&ctx(), hash, &seed, bits).unwrap();
            assert_eq!(g, c, "{hash} {bits} bits");
        }
    }
    let seed: [u8; 32] = r.gen();
    for hash in HashKind::ALL {
        let t = std::time::Instant::now();
        let n = gpu.grind(&ctx(), hash, &seed, 24).unwrap();
        assert!(backend_api::hash::pow_ok(hash, &seed, n, 24));
        println!("grind {hash} 24 bits: nonce {n} in {:?}", t.elapsed());
    }
}

fn sample_system() -> ConstraintSystem {
    let layout =
        Layout { fixed_width: 1, main_width: 3, aux_width: 2, num_challenges: 2, num_public: 2, num_aux_values: 1 };
    let mut b = ConstraintBuilder::new(layout);
    let a = Expr::main(0, 0);
    b.when_transition(Expr::main(0, 1) - &a * &a * Expr::fixed(0, 0) - Expr::main(1, 0));
    b.when_transition(Expr::main(1, 1) - Expr::main(2, 0) * Expr::fixed(0, 1));
    b.when_first_row(Expr::main(1, 0) - Expr::public(0));
    b.when_last_row(Expr::aux(1, 0) - Expr::aux_value(0));
    b.always((Expr::aux(0, 1) - Expr::aux(0, 0)) * (Expr::challenge(0) - Expr::main(2, 0)) - Expr::challenge(1));
    b.always(-Expr::main(2, 0) * Expr::from_u64(7) + Expr::public(1));
    b.build().expect("valid constraints")
}

#[test]
fn compose_and_split_match() {
    let Some(gpu) = gpu() else { return };
    let mut r = rng(7);
    let cs = sample_system();
    for (log_n, log_blowup) in [(0u32, 1u32), (1, 2), (3, 1), (6, 2), (10, 3), (12, 2), (max_log().min(20) - 2, 2)] {
        let cpu = fresh_cpu();
        let big = 1usize << (log_n + log_blowup);
        let domain = Coset::new(log_n + log_blowup, GENERATOR);
        let main = random_matrix(&mut r, 3, big);
        let fixed = random_matrix(&mut r, 1, big);
        let aux = random_matrix(&mut r, 6, big);
        let challenges = vec![ext(&mut r), ext(&mut r)];
        let publics = vec![nz(&mut r), nz(&mut r)];
        let aux_values = vec![ext(&mut r)];
        let alpha = ext(&mut r);
        macro_rules! inputs {
            ($b:expr) => {{
                let (m, f, a) = (
                    $b.upload(&ctx(), &main).unwrap(),
                    $b.upload(&ctx(), &fixed).unwrap(),
                    $b.upload(&ctx(), &aux).unwrap(),
                );
                let i = ComposeInputs {
                    constraints: &cs,
                    fixed: Some(&f),
                    main: &m,
                    aux: Some(&a),
                    log_trace_height: log_n,
                    domain,
                    challenges: &challenges,
                    publics: &publics,
                    aux_values: &aux_values,
                    alpha,
                    next: None,
                    log_stride: 0,
                };
                $b.download(&ctx(), &$b.compose(&ctx(), &i).unwrap()).unwrap()
            }};
        }
        same!(inputs!(gpu), inputs!(cpu), format!("compose 2^{log_n} blowup 2^{log_blowup}"));
        // Split: a quotient of degree < parts*n passes, random values fail.
        for parts in [1usize, 2] {
            let log_parts = parts.trailing_zeros();
            if log_parts >= log_blowup {
                continue;
            }
            let low = random_matrix(&mut r, 3, parts << log_n);
            let c2 = fresh_cpu();
            let q = c2
                .download(
                    &ctx(),
                    &c2.coset_lde(&ctx(), &c2.upload(&ctx(), &low).unwrap(), log_blowup - log_parts, GENERATOR)
                        .unwrap(),
                )
                .unwrap();
            let cpu = fresh_cpu();
            let g = gpu
                .split_quotient(&ctx(), &gpu.upload(&ctx(), &q).unwrap(), domain, log_n, parts, domain.log_size)
                .unwrap();
            let c = cpu
                .split_quotient(&ctx(), &cpu.upload(&ctx(), &q).unwrap(), domain, log_n, parts, domain.log_size)
                .unwrap();
            same!(
                gpu.download(&ctx(), &g).unwrap(),
                cpu.download(&ctx(), &c).unwrap(),
                format!("split 2^{log_n} parts {parts}")
            );
            let noise = random_matrix(&mut r, 3, big);
            let ge = gpu
                .split_quotient(&ctx(), &gpu.upload(&ctx(), &noise).unwrap(), domain, log_n, parts, domain.log_size)
                .err();
            let ce = cpu
                .split_quotient(&ctx(), &cpu.upload(&ctx(), &noise).unwrap(), domain, log_n, parts, domain.log_size)
                .err();
            assert_eq!(ge, ce, "split error 2^{log_n} parts {parts}");
            assert!(matches!(ge, Some(BackendError::ConstraintsNotSatisfied { .. })));
        }
    }
}

/// The quotient's split at 2^20 rows a part, on the warp path (the parts'
/// coefficients unshifted, then each part a warp LDE) and on the
/// shared-memory passes: from a quotient domain of 2n or 4n points onto
/// LDEs at blowups 2 to 8, the generator's coset (whose twist table the
/// trace's LDE keeps) and another.
#[test]
fn warp_split_matches_the_reference() {
    if gpu().is_none() || max_log() < 20 {
        return;
    }
    for warp_on in [true, false] {
        let gpu = with_warp_ntt(warp_on);
        let mut r = rng(17);
        let other = nz(&mut r);
        for (log_q, parts, log_blowup, shift) in
            [(21, 2usize, 2, GENERATOR), (21, 2, 1, GENERATOR), (22, 4, 3, GENERATOR), (21, 2, 2, other)]
        {
            let log_parts = parts.trailing_zeros();
            let low = random_matrix(&mut r, 3, parts << 20);
            let c2 = fresh_cpu();
            let q = c2.coset_lde(&ctx(), &c2.upload(&ctx(), &low).unwrap(), log_q - 20 - log_parts, shift).unwrap();
            let q = c2.download(&ctx(), &q).unwrap();
            let domain = Coset::new(log_q, shift);
            let (cpu, log_out) = (fresh_cpu(), 20 + log_blowup);
            let g = gpu.split_quotient(&ctx(), &gpu.upload(&ctx(), &q).unwrap(), domain, 20, parts, log_out).unwrap();
            let c = cpu.split_quotient(&ctx(), &cpu.upload(&ctx(), &q).unwrap(), domain, 20, parts, log_out).unwrap();
            same!(
                gpu.download(&ctx(), &g).unwrap(),
                cpu.download(&ctx(), &c).unwrap(),
                format!("split from 2^{log_q}, {parts} parts, blowup 2^{log_blowup}, warp path {warp_on}")
            );
        }
    }
}

#[test]
fn reshape_shares_and_validates() {
    let Some(gpu) = gpu() else { return };
    let cpu = CpuBackend::new();
    let mut r = rng(8);
    let m = random_matrix(&mut r, 3, 64);
    let g = gpu.reshape(&ctx(), &gpu.upload(&ctx(), &m).unwrap(), 16).unwrap();
    let c = cpu.reshape(&ctx(), &cpu.upload(&ctx(), &m).unwrap(), 16).unwrap();
    same!(gpu.download(&ctx(), &g).unwrap(), cpu.download(&ctx(), &c).unwrap(), "reshape");
    assert_eq!(
        gpu.reshape(&ctx(), &gpu.upload(&ctx(), &m).unwrap(), 48).err(),
        cpu.reshape(&ctx(), &cpu.upload(&ctx(), &m).unwrap(), 48).err()
    );
}

#[test]
fn no_driver_is_a_clean_unavailable() {
    // Where there is no libcuda this must be a typed error, never a panic.
    if unsafe_no_driver() {
        match CudaBackend::new(0) {
            Err(BackendError::Unavailable(msg)) => println!("unavailable as expected: {msg}"),
            Err(e) => panic!("expected Unavailable, got {e}"),
            Ok(_) => panic!("a backend without a driver"),
        }
        assert!(matches!(backend_cuda::probe(), Err(BackendError::Unavailable(_))));
    } else {
        println!("driver present: probe lists {:?}", backend_cuda::probe());
    }
}

fn unsafe_no_driver() -> bool {
    backend_cuda::check_libraries().is_err() && backend_cuda::probe().is_err()
}
