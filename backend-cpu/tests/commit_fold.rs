//! Merkle commitments, FRI folding, DEEP quotients and grinding against
//! their definitions.

mod common;

use backend_api::hash::{hash_leaf, hash_node, merkle_root_from_path, pow_ok};
use backend_api::{
    BackendBase, Coset, DeepColumns, DeepOps, DeepPoint, DeviceMatrix, DeviceTree, Ext, FriOps, HashKind, MerkleOps, F,
    GENERATOR,
};
use backend_cpu::CpuBackend;
use common::*;
use proptest::prelude::*;
use rand::Rng;

fn width() -> impl Strategy<Value = usize> {
    prop::sample::select(vec![1usize, 3, 7])
}

fn hash_kind() -> impl Strategy<Value = HashKind> {
    prop::sample::select(HashKind::ALL.to_vec())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(24))]

    #[test]
    fn merkle_openings_verify_and_tampering_fails(
        seed: u64, log_h in 0u32..=8, w in width(), kind in hash_kind()
    ) {
        let b = CpuBackend::new();
        let mut r = rng(seed);
        let h = 1usize << log_h;
        let m = rand_matrix(&mut r, w, h);
        let tree = b.commit(&CTX, &m, kind).unwrap();
        prop_assert_eq!(tree.leaves(), h);
        // The root recomputed level by level from the definition.
        let mut level: Vec<_> = (0..h).map(|i| hash_leaf(kind, &m.row(i))).collect();
        while level.len() > 1 {
            level = level.chunks(2).map(|p| hash_node(kind, &p[0], &p[1])).collect();
        }
        prop_assert_eq!(tree.root(), level[0]);

        let rows: Vec<usize> = (0..5).map(|_| r.gen_range(0..h)).collect();
        let openings = b.open(&CTX, &m, &tree, &rows).unwrap();
        for (&row, o) in rows.iter().zip(&openings) {
            prop_assert_eq!(&o.values, &m.row(row));
            prop_assert_eq!(o.path.len(), log_h as usize);
            let leaf = hash_leaf(kind, &o.values);
            prop_assert_eq!(merkle_root_from_path(kind, leaf, row, &o.path), tree.root());

            let mut bad_values = o.values.clone();
            let c = r.gen_range(0..w);
            bad_values[c] += F::ONE;
            prop_assert_ne!(merkle_root_from_path(kind, hash_leaf(kind, &bad_values), row, &o.path), tree.root());
            if !o.path.is_empty() {
                let mut bad_path = o.path.clone();
                let l = r.gen_range(0..bad_path.len());
                bad_path[l][r.gen_range(0..32)] ^= 1 << r.gen_range(0..8);
                prop_assert_ne!(merkle_root_from_path(kind, leaf, row, &bad_path), tree.root());
            }
        }
    }

    /// fold(f) = sum_r beta^r f_r on the a-th power coset, where
    /// f(x) = sum_r x^r f_r(x^a), computed from f's coefficients.
    #[test]
    fn fri_fold_matches_coefficient_definition(
        seed: u64, log_arity in 1u32..=3, extra in 0u32..=4, with_roll in any::<bool>()
    ) {
        let b = CpuBackend::new();
        let mut r = rng(seed);
        let a = 1usize << log_arity;
        let log_n = log_arity + extra;
        let big = 1usize << log_n;
        let domain = Coset::new(log_n, GENERATOR * rand_f(&mut r));
        let coeffs = rand_ext_poly(&mut r, big);
        let layer = ext_poly_on(&coeffs, &domain);
        let beta = rand_ext(&mut r);
        let m = big / a;
        let roll = rand_matrix(&mut r, 3, m);
        let s = rand_ext(&mut r);
        let folded = b
            .fri_fold(&CTX, &layer, domain, log_arity, beta, with_roll.then_some((&roll, s)))
            .unwrap();
        prop_assert_eq!((folded.height(), folded.width()), (m, 3));

        let c = ext_coeffs(&coeffs);
        let parts: Vec<Vec<Ext>> = (0..a).map(|q| c.iter().skip(q).step_by(a).copied().collect()).collect();
        let folded_domain = Coset::new(log_n - log_arity, domain.shift.pow(a as u64));
        for i in 0..m {
            let y = Ext::from_base(folded_domain.point(i));
            prop_assert_eq!(y.0[0], domain.point(i).pow(a as u64));
            let mut want = parts.iter().rev().fold(Ext::ZERO, |acc, p| acc * beta + horner_ee(p, y));
            if with_roll {
                want += s * roll.get_ext(i, 0);
            }
            prop_assert_eq!(folded.get_ext(i, 0), want);
        }
        // Arity 2 also by its textbook formula.
        if log_arity == 1 {
            let inv2 = F::TWO.inverse().unwrap();
            for i in 0..m {
                let (v0, v1) = (layer.get_ext(i, 0), layer.get_ext(i + m, 0));
                let x_inv = domain.point(i).inverse().unwrap();
                let mut want = (v0 + v1).mul_base(inv2) + beta * (v0 - v1).mul_base(inv2 * x_inv);
                if with_roll {
                    want += s * roll.get_ext(i, 0);
                }
                prop_assert_eq!(folded.get_ext(i, 0), want);
            }
        }
    }

    #[test]
    fn deep_quotient_matches_definition(seed: u64, log_n in 0u32..=7, w in width(), two_points in any::<bool>()) {
        let b = CpuBackend::new();
        let mut r = rng(seed);
        let n = 1usize << log_n;
        let domain = Coset::new(log_n, GENERATOR);
        let m1 = rand_matrix(&mut r, w, n);
        let m2 = rand_matrix(&mut r, 3, n);
        let npoints = if two_points { 2 } else { 1 };
        let mut points = Vec::new();
        for p in 0..npoints {
            let mut columns = vec![DeepColumns {
                matrix: &m1,
                coeffs: (0..w).map(|_| rand_ext(&mut r)).collect(),
                values: (0..w).map(|_| rand_ext(&mut r)).collect(),
            }];
            if p == 0 {
                columns.push(DeepColumns {
                    matrix: &m2,
                    coeffs: (0..3).map(|_| rand_ext(&mut r)).collect(),
                    values: (0..3).map(|_| rand_ext(&mut r)).collect(),
                });
            }
            points.push(DeepPoint { point: rand_ext(&mut r), columns });
        }
        let d = b.deep_quotient(&CTX, domain, &points).unwrap();
        prop_assert_eq!((d.height(), d.width()), (n, 3));
        for (i, x) in domain.points().into_iter().enumerate() {
            let mut want = Ext::ZERO;
            for p in &points {
                let mut num = Ext::ZERO;
                for dc in &p.columns {
                    for c in 0..dc.matrix.width() {
                        num += dc.coeffs[c] * (Ext::from_base(dc.matrix.get(i, c)) - dc.values[c]);
                    }
                }
                want += num * (Ext::from_base(x) - p.point).inverse().unwrap();
            }
            prop_assert_eq!(d.get_ext(i, 0), want);
        }
    }

    #[test]
    fn grind_returns_the_smallest_nonce(seed: [u8; 32], bits in 0u32..=8, kind in hash_kind()) {
        let b = CpuBackend::new();
        let got = b.grind(&CTX, kind, &seed, bits).unwrap();
        let want = (0u64..).find(|&n| pow_ok(kind, &seed, n, bits)).unwrap();
        prop_assert_eq!(got, want);
        let one = rayon::ThreadPoolBuilder::new().num_threads(1).build().unwrap();
        prop_assert_eq!(one.install(|| b.grind(&CTX, kind, &seed, bits)).unwrap(), got);
    }
}

#[test]
fn height_one_tree_is_its_leaf() {
    let b = CpuBackend::new();
    let m = matrix(vec![vec![F::new(3)], vec![F::new(4)]]);
    for kind in HashKind::ALL {
        let tree = b.commit(&CTX, &m, kind).unwrap();
        assert_eq!(tree.root(), hash_leaf(kind, &[F::new(3), F::new(4)]));
        let o = b.open(&CTX, &m, &tree, &[0]).unwrap();
        assert!(o[0].path.is_empty());
    }
}

/// Grinding at a difficulty whose answer spans several parallel rounds.
#[test]
fn grind_is_deterministic_across_thread_counts() {
    let b = CpuBackend::new();
    let seed = [7u8; 32];
    let bits = 16;
    let got = b.grind(&CTX, HashKind::Blake3, &seed, bits).unwrap();
    assert!(pow_ok(HashKind::Blake3, &seed, got, bits));
    assert!((0..got).all(|n| !pow_ok(HashKind::Blake3, &seed, n, bits)));
    let one = rayon::ThreadPoolBuilder::new().num_threads(1).build().unwrap();
    assert_eq!(one.install(|| b.grind(&CTX, HashKind::Blake3, &seed, bits)).unwrap(), got);
    let three = rayon::ThreadPoolBuilder::new().num_threads(3).build().unwrap();
    assert_eq!(three.install(|| b.grind(&CTX, HashKind::Blake3, &seed, bits)).unwrap(), got);
}

/// Reshape is a view: column c*a + j holds rows [j*N/a, (j+1)*N/a) of column c.
#[test]
fn reshape_views_the_same_buffer() {
    let b = CpuBackend::new();
    let m = rand_matrix(&mut rng(1), 3, 16);
    let v = b.reshape(&CTX, &m, 4).unwrap();
    assert_eq!((v.height(), v.width()), (4, 12));
    for c in 0..3 {
        for j in 0..4 {
            assert_eq!(v.column(c * 4 + j), &m.column(c)[j * 4..(j + 1) * 4]);
        }
    }
    assert_eq!(b.download(&CTX, &v).unwrap().data(), m.data());
}

/// Widths and heights around the vector paths' limits (BLAKE3: one chunk
/// per row, 16 rows a group; Keccak: 17-word blocks, 8 rows a group; 256
/// rows a task, hashed up to the first kept level): every layer of the
/// tree against the definition.
#[test]
fn merkle_layers_match_the_definition_at_the_vector_path_limits() {
    let b = CpuBackend::new();
    let mut r = rng(7);
    for (w, h) in [
        (1, 16),
        (8, 32),
        (9, 64),
        (51, 512),
        (64, 1024),
        (128, 256),
        (129, 64),
        (2, 8),
        (16, 8),
        (17, 16),
        (34, 8),
        (300, 32),
        (3, 4),
        (64, 4096),
        (300, 2048),
    ] {
        let m = rand_matrix(&mut r, w, h);
        for kind in HashKind::ALL {
            let tree = b.commit(&CTX, &m, kind).unwrap();
            let mut level: Vec<_> = (0..h).map(|i| hash_leaf(kind, &m.row(i))).collect();
            let mut depth = 0;
            // The lowest levels are not kept (openings rehash their rows):
            // at most four, and never the root.
            let first = tree.first_kept();
            assert_eq!(first, 4.min(h.trailing_zeros() as usize), "{kind} {w} x {h}");
            loop {
                if depth >= first {
                    assert_eq!(tree.layer(depth).unwrap(), &level[..], "{kind} {w} x {h}, level {depth}");
                } else {
                    assert!(tree.layer(depth).is_none());
                }
                if level.len() == 1 {
                    break;
                }
                level = level.chunks(2).map(|p| hash_node(kind, &p[0], &p[1])).collect();
                depth += 1;
            }
        }
    }
}
