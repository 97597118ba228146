//! End-to-end: the example AIRs prove and verify with both hashes at
//! blowups 2, 4 and 8; proofs are reproducible; bad statements are refused.

use backend_api::{HashKind, F};
use backend_cpu::CpuBackend;
use stark::examples::{Cubic, Fibonacci, Permutation, TwoTables};
use stark::{prove, verify, Acceptance, Machine, Proof, ProofOptions, SingleTable, VerifyError};

fn options(log_blowup: u32, hash: HashKind) -> ProofOptions {
    ProofOptions { log_blowup, num_queries: 20, grinding_bits: 4, hash, log_fri_arity: 2, log_final_poly_len: 2 }
}

fn roundtrip<M: Machine>(m: &M, traces: Vec<backend_api::ColMatrix>, publics: &[F], o: &ProofOptions) -> Proof {
    let proof = prove(&CpuBackend::new(), m, traces, publics, o).expect("prove");
    let decoded = Proof::from_bytes(&proof.to_bytes()).expect("decode");
    assert_eq!(decoded, proof);
    verify(m, publics, &decoded, &Acceptance::Options(*o)).expect("verify");
    proof
}

#[test]
fn every_example_proves_with_both_hashes_and_blowups_2_4_8() {
    for hash in HashKind::ALL {
        for log_blowup in 1..=3 {
            let o = options(log_blowup, hash);
            let fib = SingleTable(Fibonacci::default());
            let (t, p) = Fibonacci::trace(6, F::ONE, F::ONE);
            roundtrip(&fib, vec![t], &p, &o);

            let cubic = SingleTable(Cubic::new(8));
            let (t, p) = cubic.0.trace(5, 7);
            roundtrip(&cubic, vec![t], &p, &o);

            roundtrip(&Permutation::default(), vec![Permutation::trace(5, 3)], &[], &o);

            roundtrip(&TwoTables::default(), TwoTables::traces(6, 11), &[], &o);
        }
    }
}

#[test]
fn tiny_and_mixed_heights_prove() {
    let o = options(1, HashKind::Blake3);
    let fib = SingleTable(Fibonacci::default());
    for log_n in 0..=3 {
        let (t, p) = Fibonacci::trace(log_n, F::new(2), F::new(3));
        roundtrip(&fib, vec![t], &p, &o);
    }
    // Sender 2^3 rows, receiver 2^1: FRI rolls the small table in late.
    roundtrip(&TwoTables::default(), TwoTables::traces(3, 5), &[], &options(2, HashKind::Keccak256));
    // Folding arity 16 and 2 over the same statement.
    for log_fri_arity in [1, 4] {
        let o = ProofOptions { log_fri_arity, ..options(2, HashKind::Blake3) };
        roundtrip(&TwoTables::default(), TwoTables::traces(8, 5), &[], &o);
    }
}

#[test]
fn proofs_are_reproducible_across_thread_counts() {
    let o = options(2, HashKind::Blake3);
    let m = TwoTables::default();
    let prove_bytes = || prove(&CpuBackend::new(), &m, TwoTables::traces(7, 9), &[], &o).unwrap().to_bytes();
    let a = prove_bytes();
    let b = prove_bytes();
    assert_eq!(a, b);
    let pool = rayon::ThreadPoolBuilder::new().num_threads(1).build().unwrap();
    let c = pool.install(prove_bytes);
    assert_eq!(a, c);
}

#[test]
fn a_wrong_public_input_is_rejected() {
    let o = options(2, HashKind::Blake3);
    let fib = SingleTable(Fibonacci::default());
    let (t, p) = Fibonacci::trace(5, F::ONE, F::ONE);
    let proof = roundtrip(&fib, vec![t], &p, &o);
    let mut wrong = p.clone();
    wrong[2] += F::ONE;
    assert!(verify(&fib, &wrong, &proof, &Acceptance::Options(o)).is_err());
}

#[test]
fn an_invalid_trace_is_refused_by_the_prover() {
    let o = options(2, HashKind::Blake3);
    let fib = SingleTable(Fibonacci::default());
    let (mut t, p) = Fibonacci::trace(5, F::ONE, F::ONE);
    t.set(7, 1, F::new(12345));
    let err = prove(&CpuBackend::new(), &fib, vec![t], &p, &o).unwrap_err();
    assert!(err.to_string().contains("does not satisfy"), "{err}");
}

#[test]
fn an_unbalanced_bus_is_refused() {
    let o = options(2, HashKind::Blake3);
    let m = TwoTables::default();
    let mut traces = TwoTables::traces(5, 1);
    let v = traces[1].get(0, 1);
    traces[1].set(0, 1, v + F::ONE);
    let err = prove(&CpuBackend::new(), &m, traces, &[], &o).unwrap_err();
    assert!(err.to_string().contains("does not balance"), "{err}");
}

#[test]
fn acceptance_policy_is_enforced() {
    let o = options(1, HashKind::Blake3);
    let fib = SingleTable(Fibonacci::default());
    let (t, p) = Fibonacci::trace(4, F::ONE, F::ONE);
    let proof = roundtrip(&fib, vec![t], &p, &o);
    assert!(matches!(verify(&fib, &p, &proof, &Acceptance::MinSecurity(100)), Err(VerifyError::Options(_))));
    let other = ProofOptions { num_queries: 21, ..o };
    assert!(matches!(verify(&fib, &p, &proof, &Acceptance::Options(other)), Err(VerifyError::Options(_))));
}

#[test]
fn default_options_prove_and_meet_100_bits() {
    let o = ProofOptions::default();
    let cubic = SingleTable(Cubic::new(4));
    let (t, p) = cubic.0.trace(6, 1);
    let proof = prove(&CpuBackend::new(), &cubic, vec![t], &p, &o).unwrap();
    verify(&cubic, &p, &proof, &Acceptance::MinSecurity(100)).unwrap();
}
