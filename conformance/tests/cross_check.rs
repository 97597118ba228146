//! `CrossCheck<A, B>`: two copies of the reference agree on every stage and
//! give the reference's proofs; a backend that alters one element of one
//! stage's output is caught, and the mismatch names that stage, table,
//! column and row.

mod common;

use backend_api::{BackendError, ColMatrix, Stage, F};
use backend_cpu::{CpuBackend, CrossCheck};
use common::Corrupting;
use stark::examples::{Cubic, Fibonacci, Permutation, TwoTables};
use stark::{prove, Machine, ProofOptions, ProveError, SingleTable};

fn options() -> ProofOptions {
    ProofOptions {
        log_blowup: 2,
        num_queries: 8,
        grinding_bits: 2,
        log_fri_arity: 2,
        log_final_poly_len: 1,
        ..Default::default()
    }
}

fn same_bytes<M: Machine>(m: &M, traces: Vec<ColMatrix>, publics: &[F]) {
    let cc = CrossCheck::new(CpuBackend::new(), CpuBackend::new());
    let got = prove(&cc, m, traces.clone(), publics, &options()).expect("cross-checked prove");
    let want = prove(&CpuBackend::new(), m, traces, publics, &options()).expect("prove");
    assert!(got.to_bytes() == want.to_bytes());
}

#[test]
fn the_reference_cross_checked_with_itself_gives_the_reference_proofs() {
    let (t, p) = Fibonacci::trace(5, F::ONE, F::ONE);
    same_bytes(&SingleTable(Fibonacci::default()), vec![t], &p);
    let cubic = SingleTable(Cubic::new(6));
    let (t, p) = cubic.0.trace(5, 9);
    same_bytes(&cubic, vec![t], &p);
    same_bytes(&Permutation::default(), vec![Permutation::trace(5, 2)], &[]);
    same_bytes(&TwoTables::default(), TwoTables::traces(6, 4), &[]);
}

#[test]
fn one_corrupted_element_is_caught_and_named() {
    // TwoTables at 2^5: sender 32 rows, receiver 8; blowup 4.
    let cases: [(Stage, &str, usize, usize); 5] = [
        (Stage::CosetLde, "receiver", 1, 7),
        // Composition runs on the quotient domain: 32 or 64 of the 128 LDE rows.
        (Stage::Compose, "sender", 2, 20),
        (Stage::QuotientSplit, "receiver", 0, 31),
        (Stage::Deep, "sender", 1, 5),
        (Stage::FriFold, "fri", 2, 3),
    ];
    for (stage, table, column, row) in cases {
        let right = Corrupting::new(stage, Some(table), column, row);
        let cc = CrossCheck::new(CpuBackend::new(), right);
        match prove(&cc, &TwoTables::default(), TwoTables::traces(5, 3), &[], &options()) {
            Err(ProveError::Backend(BackendError::Mismatch { stage: s, table: t, column: c, row: r, left, right })) => {
                assert_eq!((s, t.as_str(), c, r), (stage, table, column, row), "{stage} on {table}");
                let (l, rr): (u64, u64) = (left.parse().unwrap(), right.parse().unwrap());
                assert_eq!(F::new(l) + F::ONE, F::new(rr), "the reported values are the element and its change");
            }
            other => panic!("{stage} on {table}: expected a mismatch, got {:?}", other.map(|_| ())),
        }
    }
}
