//! The AIR against honest and dishonest traces, through the direct
//! constraint checker.

use backend_api::F;
use vm::exec::Deviation;
use vm::{assemble, check::check, examples, execute, trace, ExecOptions, Execution, Program, VmMachine};

fn felts(v: &[u64]) -> Vec<F> {
    v.iter().map(|&x| F::new(x)).collect()
}

fn run(src: &str, inputs: &[u64], deviation: Option<Deviation>) -> (Program, Execution) {
    let p = assemble(src).unwrap();
    let ex = execute(&p, &felts(inputs), &ExecOptions { record: true, deviation, ..Default::default() }).unwrap();
    (p, ex)
}

fn check_run(p: &Program, ex: &Execution, outputs: &[F]) -> Result<(), String> {
    let machine = VmMachine::new(p, &ex.inputs, outputs);
    let traces = trace::generate(p, ex).unwrap();
    check(&machine, &traces, machine.publics(), 7)
}

#[test]
fn every_example_satisfies_every_constraint() {
    for (name, src, inputs) in examples::ALL {
        let (p, ex) = run(src, inputs, None);
        check_run(&p, &ex, &ex.outputs).unwrap_or_else(|e| panic!("{name}: {e}"));
        // The prover crate's own checker agrees.
        let machine = VmMachine::new(&p, &ex.inputs, &ex.outputs);
        let traces = trace::generate(&p, &ex).unwrap();
        stark::debug::check_constraints(&backend_cpu::CpuBackend::new(), &machine, &traces, machine.publics(), 3)
            .unwrap_or_else(|e| panic!("{name}: {e}"));
    }
}

#[test]
fn example_outputs_are_right() {
    let out = |src, inputs: &[u64]| run(src, inputs, None).1.outputs;
    assert_eq!(out(examples::FIBONACCI, &[10]), felts(&[55]));
    assert_eq!(out(examples::FACTORIAL, &[5]), felts(&[120]));
    // A = [[1,2],[2,3]], B = [[1,1],[1,2]]: C = [[3,5],[5,8]].
    assert_eq!(out(examples::MATMUL, &[2]), felts(&[3, 5, 5, 8]));
    let (_, ex) = run(examples::CHAIN, &[5, 3], None);
    assert_eq!(ex.cycles, 4 * 5 + 8);
    assert_eq!(&ex.outputs[1..], &felts(&[5, 1])[..]);
}

#[test]
fn constraint_degrees_fit_blowup_two() {
    let p = assemble(examples::FIBONACCI).unwrap();
    let m = VmMachine::new(&p, &felts(&[1]), &felts(&[1]));
    for t in stark::Machine::tables(&m) {
        let cs = t.constraints();
        let deg = cs.node_degrees();
        for c in &cs.constraints {
            let d = deg[c.node as usize];
            match c.domain {
                backend_api::ConstraintDomain::FirstRow | backend_api::ConstraintDomain::LastRow => assert!(d <= 2),
                _ => assert!(d <= 3, "{}: degree {d}", t.name()),
            }
        }
    }
}

#[test]
fn a_wrong_output_claim_is_rejected() {
    let (p, ex) = run(examples::FIBONACCI, &[10], None);
    let err = check_run(&p, &ex, &felts(&[56])).unwrap_err();
    assert!(err.contains("balance"), "{err}");
    // Claiming fewer outputs than written fails as well.
    assert!(check_run(&p, &ex, &[]).is_err());
}

#[test]
fn a_tampered_input_is_rejected() {
    let (p, ex) = run(examples::FIBONACCI, &[10], None);
    let machine = VmMachine::new(&p, &felts(&[11]), &ex.outputs);
    let traces = trace::generate(&p, &ex).unwrap();
    assert!(check(&machine, &traces, machine.publics(), 7).is_err());
}

#[test]
fn a_memory_inconsistency_is_rejected() {
    for nth_load in [0, 3] {
        let (p, ex) = run(examples::FACTORIAL, &[5], Some(Deviation::LoadPlusOne { nth_load }));
        let err = check_run(&p, &ex, &ex.outputs).unwrap_err();
        assert!(err.contains("table memory"), "{err}");
    }
}

#[test]
fn program_a_cannot_pass_as_program_b() {
    let (a, ex) = run(examples::FIBONACCI, &[10], None);
    // B differs from A in one immediate.
    let b = assemble(&examples::FIBONACCI.replace("li    r3, 1", "li    r3, 2")).unwrap();
    assert_ne!(a.hash(), b.hash());
    let traces = trace::generate(&a, &ex).unwrap();
    let machine_b = VmMachine::new(&b, &ex.inputs, &ex.outputs);
    assert!(check(&machine_b, &traces, machine_b.publics(), 7).is_err());
    // A's public values presented with program B are refused outright.
    let machine_a = VmMachine::new(&a, &ex.inputs, &ex.outputs);
    assert!(VmMachine::from_publics(&b, machine_a.publics()).is_err());
    assert!(VmMachine::from_publics(&a, machine_a.publics()).is_ok());
}
