//! End to end: prove and verify examples on the CPU backend, and reject
//! proofs presented for another statement.

use backend_api::{HashKind, F};
use backend_cpu::CpuBackend;
use stark::verifier::Acceptance;
use stark::ProofOptions;
use vm::{assemble, examples, execute, trace, ExecOptions, VmMachine};

fn felts(v: &[u64]) -> Vec<F> {
    v.iter().map(|&x| F::new(x)).collect()
}

fn options(hash: HashKind) -> ProofOptions {
    ProofOptions { log_blowup: 1, num_queries: 16, grinding_bits: 0, hash, ..ProofOptions::default() }
}

#[test]
fn examples_prove_and_verify_with_both_hashes() {
    for (name, src, inputs) in examples::ALL {
        for hash in HashKind::ALL {
            let p = assemble(src).unwrap();
            let ex = execute(&p, &felts(inputs), &ExecOptions { record: true, ..Default::default() }).unwrap();
            let machine = VmMachine::new(&p, &ex.inputs, &ex.outputs);
            let traces = trace::generate(&p, &ex).unwrap();
            let opts = options(hash);
            let proof = stark::prove(&CpuBackend::new(), &machine, traces, machine.publics(), &opts)
                .unwrap_or_else(|e| panic!("{name} {hash}: {e}"));
            let proof = stark::Proof::from_bytes(&proof.to_bytes()).unwrap();
            stark::verify(&machine, machine.publics(), &proof, &Acceptance::Options(opts))
                .unwrap_or_else(|e| panic!("{name} {hash}: {e}"));
        }
    }
}

fn prove_fib(n: u64) -> (VmMachine, stark::Proof, ProofOptions) {
    let p = assemble(examples::FIBONACCI).unwrap();
    let ex = execute(&p, &felts(&[n]), &ExecOptions { record: true, ..Default::default() }).unwrap();
    let machine = VmMachine::new(&p, &ex.inputs, &ex.outputs);
    let traces = trace::generate(&p, &ex).unwrap();
    let opts = options(HashKind::Blake3);
    let proof = stark::prove(&CpuBackend::new(), &machine, traces, machine.publics(), &opts).unwrap();
    (machine, proof, opts)
}

#[test]
fn proofs_do_not_transfer_to_other_statements() {
    let (machine, proof, opts) = prove_fib(10);
    let acc = Acceptance::Options(opts);
    stark::verify(&machine, machine.publics(), &proof, &acc).unwrap();
    let p = machine.program.clone();

    // A wrong output claim.
    let wrong_out = VmMachine::new(&p, machine.inputs(), &felts(&[56]));
    assert!(stark::verify(&wrong_out, wrong_out.publics(), &proof, &acc).is_err());
    // A tampered public input.
    let wrong_in = VmMachine::new(&p, &felts(&[11]), machine.outputs());
    assert!(stark::verify(&wrong_in, wrong_in.publics(), &proof, &acc).is_err());
    // Program A's proof presented as program B's (same inputs and outputs).
    let b = assemble(&examples::FIBONACCI.replace("li    r2, 0", "li    r2, 0\n nop")).unwrap();
    let as_b = VmMachine::new(&b, machine.inputs(), machine.outputs());
    assert!(stark::verify(&as_b, as_b.publics(), &proof, &acc).is_err());
    // B's machine with A's public values is refused before any checking.
    assert!(VmMachine::from_publics(&b, machine.publics()).is_err());
}

#[test]
fn proof_files_round_trip_and_reject_tampering() {
    use vm::bundle::ProofBundle;
    let (machine, proof, opts) = prove_fib(7);
    let bundle = ProofBundle { program: machine.program.clone(), publics: machine.publics().to_vec(), proof };
    let bytes = bundle.to_bytes();
    let back = ProofBundle::from_bytes(&bytes).unwrap();
    assert_eq!(back.program.instructions, machine.program.instructions);
    let verify = |b: &ProofBundle| {
        let m = VmMachine::from_publics(&b.program, &b.publics).map_err(|e| e.to_string())?;
        stark::verify(&m, &b.publics, &b.proof, &Acceptance::Options(opts)).map_err(|e| e.to_string())
    };
    verify(&back).unwrap();
    // The last public value is the output: flip it.
    let mut t = ProofBundle::from_bytes(&bytes).unwrap();
    *t.publics.last_mut().unwrap() += F::ONE;
    assert!(verify(&t).is_err());
    // Truncations and garbage are typed errors, never panics.
    for cut in [0, 5, 8, 20, 100, bytes.len() / 2, bytes.len() - 1] {
        assert!(ProofBundle::from_bytes(&bytes[..cut]).is_err());
    }
}

/// The 2^20-cycle example at full size with both hashes. Slow in a debug
/// build: `cargo test -p vm --release -- --ignored`.
#[test]
#[ignore]
fn chain_at_two_to_the_twenty_cycles() {
    let p = assemble(examples::CHAIN).unwrap();
    let ex = execute(&p, &felts(&[262_142, 3]), &ExecOptions { record: true, ..Default::default() }).unwrap();
    assert_eq!(ex.cycles, 1 << 20);
    for hash in HashKind::ALL {
        let machine = VmMachine::new(&p, &ex.inputs, &ex.outputs);
        let traces = trace::generate(&p, &ex).unwrap();
        let opts = ProofOptions { hash, ..ProofOptions::default() };
        let proof = stark::prove(&CpuBackend::new(), &machine, traces, machine.publics(), &opts).unwrap();
        stark::verify(&machine, machine.publics(), &proof, &Acceptance::MinSecurity(100)).unwrap();
    }
}
