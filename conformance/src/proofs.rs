//! Whole-proof byte equality: the stark example AIRs and the VM example
//! programs, proven with the backend under test and with the reference,
//! must encode to the same bytes (and the backend's proof must verify).

use crate::ops::Checker;
use backend_api::{Backend, ColMatrix, HashKind, F};
use stark::examples::{Cubic, Fibonacci, Permutation, TwoTables};
use stark::{Acceptance, Machine, ProofOptions, ProveSettings, Residency, SingleTable};

fn options(log_blowup: u32, hash: HashKind) -> ProofOptions {
    // Arity follows the blowup so every folding arity is exercised.
    ProofOptions {
        log_blowup,
        num_queries: 12,
        grinding_bits: 4,
        hash,
        log_fri_arity: log_blowup,
        log_final_poly_len: 2,
    }
}

/// Proves with both backends and compares the encoded proofs.
pub(crate) fn same_proof<B: Backend, M: Machine + ?Sized>(
    b: &B,
    machine: &M,
    traces: &[ColMatrix],
    publics: &[F],
    o: &ProofOptions,
) -> Result<(), String> {
    same_proof_kept_as(b, Residency::Keep, machine, traces, publics, o)
}

/// [`same_proof`], the backend under test keeping its LDEs as `residency`
/// says (the reference keeps them: the bytes must not depend on it).
pub(crate) fn same_proof_kept_as<B: Backend, M: Machine + ?Sized>(
    b: &B,
    residency: Residency,
    machine: &M,
    traces: &[ColMatrix],
    publics: &[F],
    o: &ProofOptions,
) -> Result<(), String> {
    let cpu = backend_cpu::CpuBackend::new();
    let want = stark::prove(&cpu, machine, traces.to_vec(), publics, o)
        .map_err(|e| format!("the reference failed to prove: {e}"))?;
    let settings = ProveSettings { residency, ..ProveSettings::default() };
    let (got, _) = stark::prove_with_settings(b, machine, traces.to_vec(), publics, o, &settings)
        .map_err(|e| format!("prove: {e}"))?;
    let (gb, wb) = (got.to_bytes(), want.to_bytes());
    if gb != wb {
        let at = gb.iter().zip(&wb).position(|(x, y)| x != y).unwrap_or(gb.len().min(wb.len()));
        return Err(format!("proof bytes differ from byte {at} ({} vs {} bytes)", gb.len(), wb.len()));
    }
    stark::verify(machine, publics, &got, &Acceptance::Options(*o)).map_err(|e| format!("verify: {e}"))
}

pub(crate) fn stark_examples<B: Backend>(c: &mut Checker<B>) {
    for hash in HashKind::ALL {
        for lb in 1..=4u32 {
            let o = options(lb, hash);
            let op = |name: &str| format!("prove {name} {hash}");
            let blowup = format!("x{}", 1 << lb);
            c.case(op("fibonacci"), "2^6", blowup.clone(), |c, _| {
                let (t, p) = Fibonacci::trace(6, F::ONE, F::ONE);
                same_proof(c.b, &SingleTable(Fibonacci::default()), &[t], &p, &o)
            });
            c.case(op("cubic8"), "2^5", blowup.clone(), |c, r| {
                let air = SingleTable(Cubic::new(8));
                let (t, p) = air.0.trace(5, rand::Rng::gen(r));
                same_proof(c.b, &air, &[t], &p, &o)
            });
            c.case(op("permutation"), "2^5", blowup.clone(), |c, r| {
                same_proof(c.b, &Permutation::default(), &[Permutation::trace(5, rand::Rng::gen(r))], &[], &o)
            });
            c.case(op("two-tables"), "2^6+2^4", blowup.clone(), |c, r| {
                same_proof(c.b, &TwoTables::default(), &TwoTables::traces(6, rand::Rng::gen(r)), &[], &o)
            });
        }
    }
    // Edge heights: one row, and tables whose FRI roll-in happens late.
    let o = options(1, HashKind::Blake3);
    c.case("prove fibonacci blake3", "2^0", "x2", |c, _| {
        let (t, p) = Fibonacci::trace(0, F::new(2), F::new(3));
        same_proof(c.b, &SingleTable(Fibonacci::default()), &[t], &p, &o)
    });
    c.case("prove two-tables keccak", "2^3+2^1", "x4", |c, r| {
        let o = options(2, HashKind::Keccak256);
        same_proof(c.b, &TwoTables::default(), &TwoTables::traces(3, rand::Rng::gen(r)), &[], &o)
    });
    // Spilled to host memory in pieces of 4 KiB (many column blocks,
    // subtrees and one coset at a time), and recomputed from the traces a
    // coset at a time or in quarters of one (composition given its next
    // rows): the kept proof's bytes.
    let split = Residency::Recompute { tables: stark::Tables::ALL, log_split: 2, keep_traces: false, keep_aux: false };
    let others = [
        ("spilled", Residency::spill_all(4096)),
        ("recomputed", Residency::RECOMPUTE_ALL),
        ("recomputed in quarters", split),
    ];
    for (lb, hash) in [(1, HashKind::Blake3), (3, HashKind::Keccak256)] {
        let o = options(lb, hash);
        for (how, residency) in others {
            c.case(format!("prove {how} two-tables {hash}"), "2^6+2^4", format!("x{}", 1 << lb), |c, r| {
                let traces = TwoTables::traces(6, rand::Rng::gen(r));
                same_proof_kept_as(c.b, residency, &TwoTables::default(), &traces, &[], &o)
            });
            c.case(format!("prove {how} cubic8 {hash}"), "2^7", format!("x{}", 1 << lb), |c, r| {
                let air = SingleTable(Cubic::new(8));
                let (t, p) = air.0.trace(7, rand::Rng::gen(r));
                same_proof_kept_as(c.b, residency, &air, &[t], &p, &o)
            });
        }
    }
    // One larger, wide statement.
    let log = c.cfg.max_log.saturating_sub(2).clamp(2, 16);
    c.case("prove cubic16 blake3", format!("2^{log}"), "x2", |c, r| {
        let air = SingleTable(Cubic::new(16));
        let (t, p) = air.0.trace(log, rand::Rng::gen(r));
        same_proof(c.b, &air, &[t], &p, &options(1, HashKind::Blake3))
    });
}

pub(crate) fn vm_examples<B: Backend>(c: &mut Checker<B>) {
    for (k, (name, src, inputs)) in vm::examples::ALL.iter().enumerate() {
        for hash in HashKind::ALL {
            // The first example also spilled and recomputed (its tables
            // have fixed columns).
            let first = k == 0 && hash == HashKind::Blake3;
            let split =
                Residency::Recompute { tables: stark::Tables::ALL, log_split: 1, keep_traces: false, keep_aux: false };
            let others = [Residency::spill_all(1 << 16), Residency::RECOMPUTE_ALL, split].into_iter().filter(|_| first);
            for residency in std::iter::once(Residency::Keep).chain(others) {
                let label = match residency {
                    Residency::Keep => String::new(),
                    Residency::Recompute { log_split: 1, .. } => " recompute in halves".to_string(),
                    other => format!(" {}", other.name()),
                };
                c.case(format!("prove vm {name} {hash}{label}"), "-", "x2", |c, _| {
                    let program = vm::assemble(src).map_err(|e| format!("assemble: {e}"))?;
                    let inputs: Vec<F> = inputs.iter().map(|&v| F::new(v)).collect();
                    let ex = vm::execute(&program, &inputs, &vm::ExecOptions { record: true, ..Default::default() })
                        .map_err(|e| format!("execute: {e}"))?;
                    let machine = vm::VmMachine::new(&program, &ex.inputs, &ex.outputs);
                    let traces = vm::trace::generate(&program, &ex).map_err(|e| format!("trace: {e}"))?;
                    let o = ProofOptions {
                        log_blowup: 1,
                        num_queries: 16,
                        grinding_bits: 2,
                        hash,
                        ..ProofOptions::default()
                    };
                    same_proof_kept_as(c.b, residency, &machine, &traces, machine.publics(), &o)
                });
            }
        }
    }
}
