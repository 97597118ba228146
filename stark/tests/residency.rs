//! Spilled residency gives the kept proof's bytes: every example, both
//! hashes, blowups 2 to 8, with pieces from a few columns or rows (many
//! blocks, subtrees and cosets) to the whole matrix.

use backend_api::{ColMatrix, HashKind, F};
use backend_cpu::CpuBackend;
use stark::examples::{Cubic, Fibonacci, Permutation, TwoTables};
use stark::{prove_with_settings, verify, Acceptance, Machine, ProofOptions, ProveSettings, Residency, SingleTable};

fn options(log_blowup: u32, hash: HashKind) -> ProofOptions {
    ProofOptions { log_blowup, num_queries: 20, grinding_bits: 4, hash, log_fri_arity: 2, log_final_poly_len: 2 }
}

fn same_bytes<M: Machine>(m: &M, traces: Vec<ColMatrix>, publics: &[F], o: &ProofOptions) {
    let b = CpuBackend::new();
    let prove = |residency| {
        let settings = ProveSettings { residency, ..ProveSettings::default() };
        prove_with_settings(&b, m, traces.clone(), publics, o, &settings).expect("prove")
    };
    let (kept, stats) = prove(Residency::Keep);
    assert_eq!(stats.spilled_bytes, 0);
    verify(m, publics, &kept, &Acceptance::Options(*o)).expect("verify");
    for chunk_bytes in [1, 200, 4096, 1 << 30] {
        let (spilled, stats) = prove(Residency::Spill { chunk_bytes });
        assert_eq!(stats.residency, Residency::Spill { chunk_bytes });
        assert!(stats.spilled_bytes > 0, "a spilled proof moves its LDEs");
        assert!(spilled.to_bytes() == kept.to_bytes(), "spilled in pieces of {chunk_bytes} bytes: the bytes differ");
    }
}

#[test]
fn every_example_spilled_equals_kept() {
    for hash in HashKind::ALL {
        for log_blowup in 1..=3 {
            let o = options(log_blowup, hash);
            let fib = SingleTable(Fibonacci::default());
            let (t, p) = Fibonacci::trace(6, F::ONE, F::ONE);
            same_bytes(&fib, vec![t], &p, &o);
            let cubic = SingleTable(Cubic::new(7));
            let (t, p) = cubic.0.trace(5, 7);
            same_bytes(&cubic, vec![t], &p, &o);
            same_bytes(&Permutation::default(), vec![Permutation::trace(5, 3)], &[], &o);
            // Mixed heights: two DEEP groups, the small one rolled in late.
            same_bytes(&TwoTables::default(), TwoTables::traces(6, 11), &[], &o);
        }
    }
}

#[test]
fn tiny_tables_spill_too() {
    let fib = SingleTable(Fibonacci::default());
    for log_n in 0..=2 {
        let (t, p) = Fibonacci::trace(log_n, F::new(2), F::new(3));
        same_bytes(&fib, vec![t], &p, &options(1, HashKind::Blake3));
    }
}
