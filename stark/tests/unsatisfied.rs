//! A trace that does not satisfy its constraints: the prover's error names
//! the first failing constraint and row, not only the quotient's degree.

use backend_api::{ConstraintDomain, F};
use backend_cpu::CpuBackend;
use stark::debug::Violation;
use stark::examples::{Cubic, Fibonacci};
use stark::{prove, prove_with_settings, ProofOptions, ProveError, ProveSettings, Residency, SingleTable, Tables};

fn options() -> ProofOptions {
    ProofOptions { log_blowup: 2, num_queries: 8, grinding_bits: 0, ..Default::default() }
}

#[test]
fn a_bad_cell_is_named_by_constraint_and_row() {
    let (mut t, publics) = Fibonacci::trace(6, F::ONE, F::ONE);
    // b[37] is wrong: b[37] = a[36] + b[36] (constraint 1) fails at row 36.
    t.set(37, 1, t.get(37, 1) + F::ONE);
    let err = prove(&CpuBackend::new(), &SingleTable(Fibonacci::default()), vec![t], &publics, &options()).unwrap_err();
    let want = Violation { table: "fibonacci".into(), constraint: 1, domain: ConstraintDomain::Transition, row: 36 };
    match &err {
        ProveError::Unsatisfied(v) => assert_eq!(v, &want),
        other => panic!("{other}"),
    }
    assert_eq!(
        err.to_string(),
        "the trace does not satisfy its constraints: table fibonacci: constraint 1 (Transition) fails at row 36"
    );
}

#[test]
fn a_bad_cell_of_a_degree_3_air_is_named() {
    let air = Cubic::new(8);
    let (mut t, publics) = air.trace(5, 7);
    // x_3 at row 10 is wrong: x_3' = x_3^3 + x_4 + 3 (constraint 3) fails at row 9.
    t.set(10, 3, t.get(10, 3) + F::ONE);
    match prove(&CpuBackend::new(), &SingleTable(air), vec![t], &publics, &options()) {
        Err(ProveError::Unsatisfied(v)) => {
            assert_eq!((v.table.as_str(), v.constraint, v.row), ("cubic", 3, 9), "{v}");
        }
        other => panic!("{:?}", other.map(|_| ())),
    }
}

/// The traces are not kept past the LogUp round: the report's trace is
/// rebuilt from its commitment, kept, spilled or recomputed (in whole
/// cosets and in pieces), and names the same cell every way.
#[test]
fn a_bad_cell_is_named_whatever_the_residency() {
    let (mut t, publics) = Fibonacci::trace(6, F::ONE, F::ONE);
    t.set(37, 1, t.get(37, 1) + F::ONE);
    let want = Violation { table: "fibonacci".into(), constraint: 1, domain: ConstraintDomain::Transition, row: 36 };
    for residency in [
        Residency::Keep,
        Residency::spill_all(1 << 10),
        Residency::RECOMPUTE_ALL,
        Residency::Recompute { tables: Tables::ALL, log_split: 2, keep_traces: false, keep_aux: false },
    ] {
        let settings = ProveSettings { residency, observer: None };
        let air = SingleTable(Fibonacci::default());
        let got = prove_with_settings(&CpuBackend::new(), &air, vec![t.clone()], &publics, &options(), &settings);
        match got {
            Err(ProveError::Unsatisfied(v)) => assert_eq!(v, want, "{}", residency.name()),
            other => panic!("{}: {:?}", residency.name(), other.map(|_| ())),
        }
    }
}
