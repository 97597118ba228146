//! The structure-aware verifier fuzzer: real proofs of the example AIRs
//! (one table; a bus over two heights, with a FRI roll-in; auxiliary
//! columns, with and without a cross-table check) mutated field by field, re-encoded, and verified. Every mutant
//! must be rejected with a typed error; none may panic.
//!
//! `KILN_FUZZ_CASES` sets the number of cases (default 3000);
//! `KILN_FUZZ_SEED` the first seed.

use backend_api::F;
use backend_cpu::CpuBackend;
use stark::attack::proof::{mutate, Rng};
use stark::examples::{Fibonacci, Permutation, TwoTables};
use stark::{prove, verify, Acceptance, Machine, Proof, ProofOptions, SingleTable};
use std::panic::{catch_unwind, AssertUnwindSafe};

fn env(name: &str, default: u64) -> u64 {
    std::env::var(name).ok().and_then(|v| v.parse().ok()).unwrap_or(default)
}

struct Case {
    machine: Box<dyn Machine>,
    publics: Vec<F>,
    proof: Proof,
}

fn cases(options: &ProofOptions) -> Vec<Case> {
    let cpu = CpuBackend::new();
    let mut out = vec![];
    let mut add = |machine: Box<dyn Machine>, traces, publics: Vec<F>| {
        let proof = prove(&cpu, &*machine, traces, &publics, options).unwrap();
        out.push(Case { machine, publics, proof });
    };
    let (t, p) = Fibonacci::trace(5, F::ONE, F::ONE);
    add(Box::new(SingleTable(Fibonacci::default())), vec![t], p);
    add(Box::<TwoTables>::default(), TwoTables::traces(6, 3), vec![]);
    add(Box::<Permutation>::default(), vec![Permutation::trace(5, 1)], vec![]);
    // A bus without a cross-table check: nothing but the shape checks
    // guards the auxiliary values before the constraints read them.
    add(Box::new(SingleTable(Permutation::default())), vec![Permutation::trace(4, 2)], vec![]);
    out
}

#[test]
fn no_structured_mutation_panics_the_verifier() {
    let options = ProofOptions { num_queries: 8, grinding_bits: 2, ..ProofOptions::default() };
    let cases = cases(&options);
    let acceptance = Acceptance::Options(options);
    for c in &cases {
        verify(&*c.machine, &c.publics, &c.proof, &acceptance).expect("the unmutated proofs verify");
    }
    let (count, first) = (env("KILN_FUZZ_CASES", 3000), env("KILN_FUZZ_SEED", 1));
    let (mut panics, mut accepted, mut undecodable) = (vec![], vec![], 0u64);
    for seed in first..first + count {
        let mut rng = Rng(seed);
        let c = &cases[rng.below(cases.len())];
        let mut proof = c.proof.clone();
        let what = mutate(&mut rng, &mut proof);
        // Through the bytes, as a verifier receives it.
        let Ok(decoded) = Proof::from_bytes(&proof.to_bytes()) else {
            undecodable += 1;
            continue;
        };
        assert_eq!(decoded, proof, "seed {seed}: the encoding round-trips");
        match catch_unwind(AssertUnwindSafe(|| verify(&*c.machine, &c.publics, &decoded, &acceptance))) {
            Err(_) => panics.push((seed, what)),
            Ok(Ok(())) if decoded != c.proof => accepted.push((seed, what)),
            Ok(_) => {}
        }
    }
    println!(
        "{count} structured mutants from seed {first}: {} panics, {} accepted, {undecodable} undecodable",
        panics.len(),
        accepted.len()
    );
    assert!(panics.is_empty(), "the verifier panicked on: {panics:?}");
    assert!(accepted.is_empty(), "mutants were accepted: {accepted:?}");
}
