//! Bad shapes give `InvalidInput` (never a panic).

mod common;

use backend_api::{
    BackendBase, BackendError, ComposeOps, Coset, DeepColumns, DeepOps, DeepPoint, Ext, FriOps, HashKind, MerkleOps,
    NttOps, Stage, F, GENERATOR,
};
use backend_cpu::{CpuBackend, CpuMatrix};
use common::*;

fn invalid<T: std::fmt::Debug>(r: Result<T, BackendError>, stage: Stage) {
    match r {
        Err(BackendError::InvalidInput { stage: s, .. }) => assert_eq!(s, stage),
        other => panic!("expected invalid input at {stage}, got {other:?}"),
    }
}

#[test]
fn transforms_reject_bad_heights_and_parameters() {
    let b = CpuBackend::new();
    let m3 = rand_matrix(&mut rng(1), 2, 3);
    let m8 = rand_matrix(&mut rng(1), 2, 8);
    invalid(b.ntt(&CTX, &m3), Stage::Ntt);
    invalid(b.intt(&CTX, &m3), Stage::InverseNtt);
    invalid(b.ntt(&CTX, &CpuMatrix::new(0, 0, vec![]).unwrap()), Stage::Ntt);
    invalid(b.coset_lde(&CTX, &m3, 1, GENERATOR), Stage::CosetLde);
    invalid(b.coset_lde(&CTX, &m8, 5, GENERATOR), Stage::CosetLde);
    invalid(b.coset_lde(&CTX, &m8, 1, F::ZERO), Stage::CosetLde);
    invalid(b.reshape(&CTX, &m8, 3), Stage::MerkleCommit);
    invalid(b.reshape(&CTX, &m8, 16), Stage::MerkleCommit);
    assert!(CpuMatrix::new(2, 3, vec![F::ONE; 5]).is_err());
}

#[test]
fn merkle_rejects_bad_shapes() {
    let b = CpuBackend::new();
    let m8 = rand_matrix(&mut rng(1), 2, 8);
    let m4 = rand_matrix(&mut rng(1), 2, 4);
    invalid(b.commit(&CTX, &CpuMatrix::new(0, 8, vec![]).unwrap(), HashKind::Blake3), Stage::MerkleCommit);
    invalid(b.commit(&CTX, &rand_matrix(&mut rng(1), 2, 6), HashKind::Blake3), Stage::MerkleCommit);
    let tree = b.commit(&CTX, &m8, HashKind::Keccak256).unwrap();
    invalid(b.open(&CTX, &m8, &tree, &[8]), Stage::MerkleOpen);
    invalid(b.open(&CTX, &m4, &tree, &[0]), Stage::MerkleOpen);
}

#[test]
fn quotient_and_deep_reject_bad_shapes() {
    let b = CpuBackend::new();
    let d16 = Coset::new(4, GENERATOR);
    let q = rand_matrix(&mut rng(1), 3, 16);
    invalid(b.split_quotient(&CTX, &rand_matrix(&mut rng(1), 2, 16), d16, 2, 2, d16.log_size), Stage::QuotientSplit);
    invalid(
        b.split_quotient(&CTX, &q, Coset::new(5, GENERATOR), 2, 2, Coset::new(5, GENERATOR).log_size),
        Stage::QuotientSplit,
    );
    invalid(b.split_quotient(&CTX, &q, d16, 2, 5, d16.log_size), Stage::QuotientSplit);
    invalid(b.split_quotient(&CTX, &q, d16, 2, 0, d16.log_size), Stage::QuotientSplit);
    // Parts go out to at least the quotient's own domain, within the field.
    invalid(b.split_quotient(&CTX, &q, d16, 2, 2, 3), Stage::QuotientSplit);
    invalid(b.split_quotient(&CTX, &q, d16, 2, 2, 33), Stage::QuotientSplit);
    invalid(b.split_quotient(&CTX, &q, d16, 5, 1, d16.log_size), Stage::QuotientSplit);
    invalid(b.split_quotient(&CTX, &q, d16, 1, usize::MAX / 2 + 1, d16.log_size), Stage::QuotientSplit);
    // Public-field domains that would overflow or divide by zero.
    let huge = Coset { log_size: 64, shift: GENERATOR };
    invalid(b.split_quotient(&CTX, &q, huge, 2, 2, huge.log_size), Stage::QuotientSplit);
    invalid(b.evaluate_at(&CTX, &q, huge, 0, &[Ext::ONE]), Stage::OutOfDomain);
    invalid(b.evaluate_at(&CTX, &q, Coset { log_size: 4, shift: F::ZERO }, 0, &[Ext::ONE]), Stage::OutOfDomain);
    invalid(b.evaluate_at(&CTX, &q, Coset::new(3, GENERATOR), 0, &[Ext::ONE]), Stage::OutOfDomain);

    let z = rand_ext(&mut rng(2));
    let cols = |coeffs: usize, values: usize| DeepColumns {
        matrix: &q,
        coeffs: vec![Ext::ONE; coeffs],
        values: vec![Ext::ONE; values],
    };
    invalid(b.deep_quotient(&CTX, d16, &[]), Stage::Deep);
    invalid(b.deep_quotient(&CTX, d16, &[DeepPoint { point: z, columns: vec![cols(2, 3)] }]), Stage::Deep);
    invalid(b.deep_quotient(&CTX, d16, &[DeepPoint { point: z, columns: vec![cols(3, 4)] }]), Stage::Deep);
    invalid(
        b.deep_quotient(&CTX, Coset::new(3, GENERATOR), &[DeepPoint { point: z, columns: vec![cols(3, 3)] }]),
        Stage::Deep,
    );
    // An opening point on the domain would divide by zero.
    let on = Ext::from_base(d16.point(5));
    invalid(b.deep_quotient(&CTX, d16, &[DeepPoint { point: on, columns: vec![cols(3, 3)] }]), Stage::Deep);
    assert!(b.deep_quotient(&CTX, d16, &[DeepPoint { point: z, columns: vec![cols(3, 3)] }]).is_ok());
}

#[test]
fn fri_and_grind_reject_bad_shapes() {
    let b = CpuBackend::new();
    let d16 = Coset::new(4, GENERATOR);
    let layer = rand_matrix(&mut rng(1), 3, 16);
    let beta = Ext::ONE;
    invalid(b.fri_fold(&CTX, &rand_matrix(&mut rng(1), 2, 16), d16, 1, beta, None), Stage::FriFold);
    invalid(b.fri_fold(&CTX, &layer, Coset::new(3, GENERATOR), 1, beta, None), Stage::FriFold);
    invalid(b.fri_fold(&CTX, &layer, d16, 0, beta, None), Stage::FriFold);
    invalid(b.fri_fold(&CTX, &layer, d16, 5, beta, None), Stage::FriFold);
    let roll = rand_matrix(&mut rng(1), 3, 4);
    invalid(b.fri_fold(&CTX, &layer, d16, 1, beta, Some((&roll, beta))), Stage::FriFold);
    invalid(b.fri_fold(&CTX, &layer, Coset { log_size: 4, shift: F::ZERO }, 1, beta, None), Stage::FriFold);
    invalid(b.fri_fold(&CTX, &layer, Coset { log_size: 99, shift: GENERATOR }, 1, beta, None), Stage::FriFold);
    invalid(b.grind(&CTX, HashKind::Blake3, &[0; 32], 33), Stage::Grind);
}
