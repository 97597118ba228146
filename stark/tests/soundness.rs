//! The malicious-witness harness over every example AIR: every column at
//! its first, a middle and its last row, plus wrong public values. Zero
//! attacks may be accepted.

use backend_api::{ColMatrix, F};
use backend_cpu::CpuBackend;
use stark::attack::witness::{single_cell_attacks, Attack, Harness, Report};
use stark::examples::{Cubic, Fibonacci, Permutation, TwoTables};
use stark::{Machine, ProofOptions, SingleTable};
use std::sync::Arc;

/// Single-cell attacks on a witness without padding, plus `publics`
/// changed one value at a time.
fn attacks<'a>(machine: Arc<dyn Machine + Send + 'a>, traces: Vec<ColMatrix>, publics: Vec<F>) -> Vec<Attack<'a>> {
    let real: Vec<usize> = traces.iter().map(ColMatrix::height).collect();
    let mut all = single_cell_attacks(machine.clone(), &publics, &traces, &real);
    for i in 0..publics.len() {
        let mut wrong = publics.clone();
        wrong[i] += F::ONE;
        let name = format!("public value {i} claimed as {}", wrong[i]);
        all.push(Attack { name, machine: machine.clone(), publics: wrong, traces: traces.clone() });
    }
    all
}

fn run(name: &str, attacks: Vec<Attack>) -> Report {
    let backend = CpuBackend::new();
    let options = ProofOptions { num_queries: 20, grinding_bits: 4, ..ProofOptions::default() };
    let report = Harness { backend: &backend, options, seed: 5 }.run(attacks);
    let table = report.table();
    println!("{table}");
    let dir = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("soundness");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join(format!("{name}.txt")), table).unwrap();
    report
}

#[test]
fn no_attack_on_an_example_air_is_accepted() {
    let (fib_trace, fib_publics) = Fibonacci::trace(5, F::new(2), F::new(3));
    let cubic = Cubic::new(6);
    let (cubic_trace, cubic_publics) = cubic.trace(4, 9);
    let cases: Vec<(&str, Vec<Attack>)> = vec![
        ("stark-fibonacci", attacks(Arc::new(SingleTable(Fibonacci::default())), vec![fib_trace], fib_publics)),
        ("stark-cubic", attacks(Arc::new(SingleTable(cubic)), vec![cubic_trace], cubic_publics)),
        ("stark-permutation", attacks(Arc::new(Permutation::default()), vec![Permutation::trace(4, 3)], vec![])),
        ("stark-two-tables", attacks(Arc::new(TwoTables::default()), TwoTables::traces(5, 11), vec![])),
    ];
    for (name, attacks) in cases {
        let count = attacks.len();
        let report = run(name, attacks);
        assert_eq!(report.outcomes.len(), count);
        report.assert_none_accepted();
    }
}
