//! NTT, LDE, quotient splitting and out-of-domain evaluation against naive
//! polynomial arithmetic.

mod common;

use backend_api::{BackendError, ComposeOps, Coset, DeepOps, DeviceMatrix, Ext, NttOps, F, GENERATOR};
use backend_cpu::{CpuBackend, CpuMatrix};
use common::*;
use proptest::prelude::*;

fn width() -> impl Strategy<Value = usize> {
    prop::sample::select(vec![1usize, 3, 7])
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(24))]

    #[test]
    fn ntt_is_the_dft(seed: u64, log_n in 0u32..=7, w in width()) {
        let b = CpuBackend::new();
        let mut r = rng(seed);
        let n = 1 << log_n;
        let m = rand_matrix(&mut r, w, n);
        let e = b.ntt(&CTX, &m).unwrap();
        for c in 0..w {
            prop_assert_eq!(e.column(c).to_vec(), naive_dft(m.column(c)));
        }
    }

    #[test]
    fn intt_inverts_ntt(seed: u64, log_n in 0u32..=12, w in width()) {
        let b = CpuBackend::new();
        let m = rand_matrix(&mut rng(seed), w, 1 << log_n);
        let e = b.ntt(&CTX, &m).unwrap();
        prop_assert_eq!(&b.intt(&CTX, &e).unwrap(), &m);
        prop_assert_eq!(&b.ntt(&CTX, &b.intt(&CTX, &m).unwrap()).unwrap(), &m);
    }

    #[test]
    fn lde_evaluates_the_interpolant(seed: u64, log_n in 0u32..=6, log_blowup in 1u32..=4, w in width()) {
        let b = CpuBackend::new();
        let mut r = rng(seed);
        let n = 1usize << log_n;
        let shift = rand_f(&mut r);
        let coeffs: Vec<Vec<F>> = (0..w).map(|_| rand_col(&mut r, n)).collect();
        let evals = matrix(coeffs.iter().map(|c| naive_dft(c)).collect());
        let lde = b.coset_lde(&CTX, &evals, log_blowup, shift).unwrap();
        let big = Coset::new(log_n + log_blowup, shift);
        prop_assert_eq!(lde.height(), big.size());
        for (c, co) in coeffs.iter().enumerate() {
            prop_assert_eq!(lde.column(c).to_vec(), eval_on(co, &big));
        }
    }

    /// Larger sizes (the chunked and parallel NTT paths): check random rows.
    #[test]
    fn large_lde_matches_at_sampled_rows(seed: u64, log_n in 10u32..=12, log_blowup in 1u32..=3) {
        let b = CpuBackend::new();
        let mut r = rng(seed);
        let n = 1usize << log_n;
        let coeffs: Vec<Vec<F>> = (0..3).map(|_| rand_col(&mut r, n)).collect();
        let evals = b.ntt(&CTX, &matrix(coeffs.clone())).unwrap();
        let lde = b.coset_lde(&CTX, &evals, log_blowup, GENERATOR).unwrap();
        let big = Coset::new(log_n + log_blowup, GENERATOR);
        for _ in 0..8 {
            let i = rand::Rng::gen_range(&mut r, 0..big.size());
            for (c, co) in coeffs.iter().enumerate() {
                prop_assert_eq!(lde.get(i, c), horner(co, big.point(i)));
            }
        }
    }

    /// Queried rows of a coset, past and below the size where only the
    /// asked rows are evaluated: the coset's own rows.
    #[test]
    fn coset_rows_are_the_cosets_rows(seed: u64, log_n in 0u32..=13, k in 1usize..=40, w in width()) {
        let b = CpuBackend::new();
        let mut r = rng(seed);
        let n = 1usize << log_n;
        let coeffs = rand_matrix(&mut r, w, n);
        let shift = rand_f(&mut r);
        // Runs of neighbours as queries read them, the ends of the coset and repeats.
        let mut positions: Vec<usize> = (0..k).map(|i| (rand_f(&mut r).value() as usize + i / 4) % n).collect();
        positions.extend([0, n - 1, n / 2, positions[0]]);
        let coset = b.coset_ntt(&CTX, &coeffs, 0, shift).unwrap();
        let want: Vec<Vec<F>> = positions.iter().map(|&p| (0..w).map(|c| coset.column(c)[p]).collect()).collect();
        prop_assert_eq!(b.coset_rows(&CTX, &coeffs, shift, &positions).unwrap(), want);
    }

    #[test]
    fn evaluate_at_is_horner(seed: u64, log_n in 0u32..=7, w in width()) {
        let b = CpuBackend::new();
        let mut r = rng(seed);
        let n = 1usize << log_n;
        let domain = Coset::new(log_n, rand_f(&mut r));
        let coeffs: Vec<Vec<F>> = (0..w).map(|_| rand_col(&mut r, n)).collect();
        let m = matrix(coeffs.iter().map(|c| eval_on(c, &domain)).collect());
        let on_domain = rand::Rng::gen_range(&mut r, 0..n);
        let points = [rand_ext(&mut r), Ext::from_base(domain.point(on_domain)), Ext::from_base(rand_f(&mut r))];
        let got = b.evaluate_at(&CTX, &m, domain, 0, &points).unwrap();
        prop_assert_eq!(got.len(), points.len());
        for (p, &z) in points.iter().enumerate() {
            for (c, co) in coeffs.iter().enumerate() {
                prop_assert_eq!(got[p][c], horner_ext(co, z));
            }
        }
    }

    /// Below, at and past the rows taken at once; a point of the
    /// extension, one on H_n and one of the base field.
    #[test]
    fn evaluate_coeffs_is_horner(seed: u64, log_n in 0u32..=12, w in width()) {
        let b = CpuBackend::new();
        let mut r = rng(seed);
        let n = 1usize << log_n;
        let coeffs: Vec<Vec<F>> = (0..w).map(|_| rand_col(&mut r, n)).collect();
        let on_h = Coset::subgroup(log_n).point(rand::Rng::gen_range(&mut r, 0..n));
        let points = [rand_ext(&mut r), Ext::from_base(on_h), Ext::from_base(rand_f(&mut r))];
        let got = b.evaluate_coeffs(&CTX, &matrix(coeffs.clone()), &points).unwrap();
        prop_assert_eq!(got.len(), points.len());
        for (p, &z) in points.iter().enumerate() {
            for (c, co) in coeffs.iter().enumerate() {
                prop_assert_eq!(got[p][c], horner_ext(co, z));
            }
        }
    }

    #[test]
    fn split_quotient_recombines(
        seed: u64,
        log_n in 0u32..=5,
        log_blowup in 1u32..=3,
        parts_log in 0u32..=3,
        log_extend in 0u32..=3,
    ) {
        let parts_log = parts_log.min(log_blowup);
        let parts = 1usize << parts_log;
        let b = CpuBackend::new();
        let mut r = rng(seed);
        let n = 1usize << log_n;
        let domain = Coset::new(log_n + log_blowup, GENERATOR * rand_f(&mut r));
        // The parts go out to a coset up to 8 times larger (at most 2^4 n).
        let out = Coset::new((domain.log_size + log_extend).min(log_n + 4), domain.shift);
        let coeffs = rand_ext_poly(&mut r, parts * n);
        let q = ext_poly_on(&coeffs, &domain);
        let split = b.split_quotient(&CTX, &q, domain, log_n, parts, out.log_size).unwrap();
        prop_assert_eq!((split.height(), split.width()), (out.size(), 3 * parts));
        let q = ext_poly_on(&coeffs, &out);
        for (i, x) in out.points().into_iter().enumerate() {
            // Each part is the expected coefficient slice...
            for j in 0..parts {
                for (c, co) in coeffs.iter().enumerate() {
                    prop_assert_eq!(split.get(i, 3 * j + c), horner(&co[j * n..(j + 1) * n], x));
                }
            }
            // ...and sum_j x^(jn) part_j(x) gives q back.
            let xn = x.pow(n as u64);
            let sum = (0..parts).rev().fold(Ext::ZERO, |acc, j| acc.mul_base(xn) + split.get_ext(i, j));
            prop_assert_eq!(sum, q.get_ext(i, 0));
        }
    }

    #[test]
    fn split_quotient_rejects_high_degree(seed: u64, log_n in 0u32..=4, log_blowup in 1u32..=3, coord in 0usize..3) {
        let b = CpuBackend::new();
        let mut r = rng(seed);
        let n = 1usize << log_n;
        let parts = (1usize << log_blowup) - 1;
        prop_assume!(parts >= 1);
        let domain = Coset::new(log_n + log_blowup, GENERATOR);
        let mut coeffs = rand_ext_poly(&mut r, parts * n + 1);
        // Only one coordinate carries the excess coefficient.
        for (c, col) in coeffs.iter_mut().enumerate() {
            if c != coord {
                col[parts * n] = F::ZERO;
            }
        }
        let q = ext_poly_on(&coeffs, &domain);
        let err = b.split_quotient(&CTX, &q, domain, log_n, parts, domain.log_size).unwrap_err();
        prop_assert_eq!(err, BackendError::ConstraintsNotSatisfied { table: "test".into(), bound: parts * n });
    }
}

#[test]
fn height_one_transforms_are_identities() {
    let b = CpuBackend::new();
    let m = matrix(vec![vec![F::new(5)], vec![F::new(9)], vec![F::new(11)]]);
    assert_eq!(b.ntt(&CTX, &m).unwrap(), m);
    assert_eq!(b.intt(&CTX, &m).unwrap(), m);
    // A constant's LDE is constant.
    let lde = b.coset_lde(&CTX, &m, 2, GENERATOR).unwrap();
    assert_eq!(lde.column(1), &[F::new(9); 4]);
}

/// A single column large enough for the threaded paths inside one NTT and
/// for more than one fused batch of large-stride layers.
#[test]
fn long_single_column_roundtrip() {
    let b = CpuBackend::new();
    let m: CpuMatrix = rand_matrix(&mut rng(7), 1, 1 << 19);
    let e = b.ntt(&CTX, &m).unwrap();
    let w = F::two_adic_root(19);
    for i in [0usize, 1, 12345, 65535, (1 << 19) - 1] {
        assert_eq!(e.get(i, 0), horner(m.column(0), w.pow(i as u64)));
    }
    assert_eq!(b.intt(&CTX, &e).unwrap(), m);
}

/// Quotient splitting into few, short parts on a large domain: the LDE of
/// each part skips more layers than fit in one cache chunk.
#[test]
fn split_quotient_with_large_blowup() {
    use backend_api::DeviceMatrix;
    let b = CpuBackend::new();
    for (log_n, log_big, parts) in [(1u32, 14u32, 2usize), (0, 13, 1), (3, 14, 4), (2, 15, 8)] {
        let mut r = rng(log_big as u64);
        let n = 1usize << log_n;
        let domain = Coset::new(log_big, GENERATOR);
        let coeffs = rand_ext_poly(&mut r, parts * n);
        let q = ext_poly_on(&coeffs, &domain);
        let split = b.split_quotient(&CTX, &q, domain, log_n, parts, domain.log_size).unwrap();
        assert_eq!(split.width(), 3 * parts);
        for i in (0..domain.size()).step_by(997).chain([domain.size() - 1]) {
            let x = domain.point(i);
            for j in 0..parts {
                for (c, co) in coeffs.iter().enumerate() {
                    assert_eq!(split.get(i, 3 * j + c), horner(&co[j * n..(j + 1) * n], x), "row {i} part {j}");
                }
            }
        }
    }
}

/// One backend reused across sizes, smallest first: the twiddle cache must
/// serve every later size correctly (a size-1 table once claimed size 2).
#[test]
fn one_backend_serves_every_size_in_any_order() {
    let b = CpuBackend::new();
    let mut r = rng(7);
    for log_n in (0u32..=9).chain((0..=9).rev()) {
        let m = rand_matrix(&mut r, 2, 1 << log_n);
        let e = b.ntt(&CTX, &m).unwrap();
        for c in 0..2 {
            assert_eq!(e.column(c).to_vec(), naive_dft(m.column(c)), "size 2^{log_n}");
        }
        assert_eq!(b.intt(&CTX, &e).unwrap(), m);
    }
}

/// Columns long enough for the fused large-stride passes (layers with
/// half-blocks of 4096 and more, up to five per pass, in both the DIF and
/// the DIT kernels): NTT at sampled rows against Horner, the inverse NTT
/// back to the coefficients, and the LDE at sampled rows.
#[test]
fn fused_large_stride_layers_match_the_definition() {
    let b = CpuBackend::new();
    let mut r = rng(99);
    for (log_n, log_blowup) in [(13u32, 1u32), (15, 2), (18, 1), (14, 4)] {
        let n = 1usize << log_n;
        let coeffs: Vec<Vec<F>> = (0..2).map(|_| rand_col(&mut r, n)).collect();
        let evals = b.ntt(&CTX, &matrix(coeffs.clone())).unwrap();
        let h = Coset::new(log_n, F::ONE);
        for _ in 0..6 {
            let i = rand::Rng::gen_range(&mut r, 0..n);
            for (c, co) in coeffs.iter().enumerate() {
                assert_eq!(evals.get(i, c), horner(co, h.point(i)), "ntt 2^{log_n} row {i}");
            }
        }
        let back = b.intt(&CTX, &evals).unwrap();
        assert_eq!(back, matrix(coeffs.clone()), "intt 2^{log_n}");
        let lde = b.coset_lde(&CTX, &evals, log_blowup, GENERATOR).unwrap();
        let big = Coset::new(log_n + log_blowup, GENERATOR);
        for _ in 0..6 {
            let i = rand::Rng::gen_range(&mut r, 0..big.size());
            for (c, co) in coeffs.iter().enumerate() {
                assert_eq!(lde.get(i, c), horner(co, big.point(i)), "lde 2^{log_n} x 2^{log_blowup} row {i}");
            }
        }
    }
}
