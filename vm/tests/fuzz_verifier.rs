//! The structure-aware fuzzer on VM proof files: a real proof's numbers,
//! lengths and nested vectors, its public values (the input and output
//! counts among them) and its program mutated, re-encoded and checked the
//! way `kiln verify` checks a file. Nothing may panic or be accepted.
//!
//! `KILN_FUZZ_CASES` sets the number of cases (default 1000);
//! `KILN_FUZZ_SEED` the first seed.

use backend_api::F;
use backend_cpu::CpuBackend;
use stark::attack::proof::{mutate, Rng};
use stark::{Acceptance, ProofOptions};
use std::panic::{catch_unwind, AssertUnwindSafe};
use vm::bundle::ProofBundle;
use vm::{assemble, examples, execute, trace, ExecOptions, VmMachine};

fn env(name: &str, default: u64) -> u64 {
    std::env::var(name).ok().and_then(|v| v.parse().ok()).unwrap_or(default)
}

fn bundle() -> ProofBundle {
    let program = assemble(examples::FACTORIAL).unwrap();
    let ex = execute(&program, &[F::new(5)], &ExecOptions { record: true, ..Default::default() }).unwrap();
    let machine = VmMachine::new(&program, &ex.inputs, &ex.outputs);
    let traces = trace::generate(&program, &ex).unwrap();
    let publics = machine.publics().to_vec();
    let proof = stark::prove(&CpuBackend::new(), &machine, traces, &publics, &ProofOptions::default()).unwrap();
    ProofBundle { program, publics, proof }
}

/// What `kiln verify` does with a file's bytes.
fn check(bytes: &[u8]) -> Result<(), String> {
    let b = ProofBundle::from_bytes(bytes).map_err(|e| e.to_string())?;
    let machine = VmMachine::from_publics(&b.program, &b.publics).map_err(|e| e.to_string())?;
    stark::verify(&machine, &b.publics, &b.proof, &Acceptance::MinSecurity(100)).map_err(|e| e.to_string())
}

/// One mutation of the statement: the counts, a value, the length, or an
/// instruction of the program.
fn mutate_statement(rng: &mut Rng, b: &mut ProofBundle) -> String {
    let n = b.publics.len();
    match rng.below(5) {
        0 => {
            let i = 4 + rng.below(2);
            b.publics[i] = F::new([0, 1, rng.next_u64() % 64, u64::MAX, b.publics[i].value() + 1][rng.below(5)]);
            format!("public count {i} = {}", b.publics[i])
        }
        1 => {
            let i = rng.below(n);
            b.publics[i] += F::ONE;
            format!("public value {i} + 1")
        }
        2 => {
            b.publics.truncate(rng.below(n));
            format!("publics truncated to {}", b.publics.len())
        }
        3 => {
            b.publics.push(F::new(rng.next_u64()));
            "a public value appended".into()
        }
        _ => {
            let i = rng.below(b.program.len());
            let ins = &mut b.program.instructions[i];
            ins.tgt = rng.next_u64() as u32;
            ins.imm += F::ONE;
            "an instruction's target and immediate changed".into()
        }
    }
}

#[test]
fn no_mutated_proof_file_panics_or_verifies() {
    let original = bundle();
    check(&original.to_bytes()).expect("the unmutated file verifies");
    let (count, first) = (env("KILN_FUZZ_CASES", 1000), env("KILN_FUZZ_SEED", 1));
    let (mut panics, mut accepted) = (vec![], vec![]);
    for seed in first..first + count {
        let mut rng = Rng(seed);
        let mut b = ProofBundle {
            program: original.program.clone(),
            publics: original.publics.clone(),
            proof: original.proof.clone(),
        };
        let what =
            if rng.below(4) == 0 { vec![mutate_statement(&mut rng, &mut b)] } else { mutate(&mut rng, &mut b.proof) };
        let bytes = b.to_bytes();
        match catch_unwind(AssertUnwindSafe(|| check(&bytes))) {
            Err(_) => panics.push((seed, what)),
            Ok(Ok(())) if bytes != original.to_bytes() => accepted.push((seed, what)),
            Ok(_) => {}
        }
    }
    println!("{count} mutated proof files from seed {first}: {} panics, {} accepted", panics.len(), accepted.len());
    assert!(panics.is_empty(), "the verifier panicked on: {panics:?}");
    assert!(accepted.is_empty(), "mutants were accepted: {accepted:?}");
}
